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
