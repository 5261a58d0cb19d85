/*
 * fileio.c - reads and directory syncs for the files seend keeps; see
 * fileio.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

ssize_t
fileio_read_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char	*p = buf;
	size_t		 got = 0;
	ssize_t		 n;

	while (got < len) {
		n = pread(fd, p + got, len - got, (off_t)(off + got));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int
fileio_sync_dir(const char *dir)
{
	int fd, saved;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if (fsync(fd) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

int
fileio_commit(const char *tmp, const char *final, const char *dir, char *err,
    size_t errlen)
{
	int saved;

	if (rename(tmp, final) == -1) {
		saved = errno;
		unlink(tmp);
		snprintf(err, errlen, "rename %s to %s: %s", tmp, final,
		    strerror(saved));
		return -1;
	}
	if (fileio_sync_dir(dir) == -1) {
		snprintf(err, errlen, "fsync directory %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
fileio_tmpfile(const char *dir)
{
	char	 path[PATH_MAX];
	int	 fd, n;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR &&
	    errno != EINVAL))
		return fd;
	n = snprintf(path, sizeof(path), "%s/.tmp.XXXXXX", dir);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkostemp(path, O_CLOEXEC)) != -1)
		(void)unlink(path);
	return fd;
}

int
fileio_read_small(const char *dir, const char *name, size_t max, char **text,
    size_t *len, char *err, size_t errlen)
{
	char		 path[PATH_MAX], *buf;
	struct stat	 st;
	ssize_t		 got;
	int		 fd;

	*text = NULL;
	*len = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir, name);
		return -1;
	}
	/* O_NONBLOCK: a FIFO put there does not hang the open; the check
	 * below refuses it */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		snprintf(err, errlen, "%s: %s", path, !S_ISREG(st.st_mode) ?
		    "not a regular file" : "too large");
		close(fd);
		return -1;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return -1;
	}
	/* one byte more than fstat said tells a file that grew apart */
	got = fileio_read_full(fd, buf, (size_t)st.st_size + 1, 0);
	close(fd);
	if (got != st.st_size) {
		snprintf(err, errlen, "%s: %s", path, got == -1 ?
		    strerror(errno) : "changed while it was read");
		free(buf);
		return -1;
	}
	buf[got] = '\0';
	*text = buf;
	*len = (size_t)got;
	return 1;
}

int
fileio_write_small(const char *dir, const char *name, const void *text,
    size_t len, char *err, size_t errlen)
{
	char		 tmp[PATH_MAX], final[PATH_MAX];
	const char	*p = text, *what = "open";
	ssize_t		 n;
	int		 fd = -1, saved;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >=
	    sizeof(tmp) || (size_t)snprintf(final, sizeof(final), "%s/%s",
	    dir, name) >= sizeof(final)) {
		snprintf(err, errlen, "%s/%s: path too long", dir, name);
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd == -1)
		goto fail;
	what = "write";
	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0) {
			errno = EIO;
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	return fileio_close_commit(fd, tmp, final, dir, err, errlen);
fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	snprintf(err, errlen, "%s %s: %s", what, tmp, strerror(saved));
	return -1;
}

int
fileio_close_commit(int fd, const char *tmp, const char *final,
    const char *dir, char *err, size_t errlen)
{
	const char	*what = "fsync";
	int		 saved;

	/* the data must be on disk before the name points at it */
	if (fsync(fd) == -1)
		goto fail;
	what = "close";
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	return fileio_commit(tmp, final, dir, err, errlen);
fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	snprintf(err, errlen, "%s %s: %s", what, tmp, strerror(saved));
	return -1;
}
