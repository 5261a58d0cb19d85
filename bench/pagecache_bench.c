/*
 * pagecache_bench.c - what the kernel charges for putting journal bytes
 * in the page cache, per 8-byte key (the journal's record size), four
 * ways (issue 13: why everysec costs ~15 ns a key over off):
 *
 *   append-aligned    write(2) of CHUNK bytes, CHUNK a multiple of 4096
 *   append-unaligned  the same with CHUNK + 8: each write ends inside a
 *                     new page, which ext4 zeroes first
 *   overwrite         write(2) over a file zero-filled (and so cached)
 *                     beforehand; "prep" is that zero fill
 *   mmap              memcpy into a MAP_SHARED mapping populated with
 *                     MADV_POPULATE_WRITE beforehand; "prep" is that
 *
 *   pagecache_bench [DIR] [MIB] [CHUNK]    defaults: /var/tmp 256 8192
 *
 * Wall-clock nanoseconds of this process; run it on a quiet machine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum mode { APPEND_ALIGNED, APPEND_UNALIGNED, OVERWRITE, MMAP, NMODES };
static const char *const mode_names[NMODES] = {
	"append-aligned", "append-unaligned", "overwrite", "mmap",
};

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Zero-fills fd up to total bytes, then rewinds it. */
static int
zero_fill(int fd, size_t total)
{
	static char zeros[1 << 20];

	for (size_t off = 0; off < total; off += sizeof(zeros))
		if (write_all(fd, zeros, sizeof(zeros)) == -1)
			return -1;
	return lseek(fd, 0, SEEK_SET) == -1 ? -1 : 0;
}

/* One mode over a fresh file: ns per key in the loop, and in the prep. */
static int
run(const char *path, enum mode m, size_t total, size_t chunk,
    double *loop_ns, double *prep_ns)
{
	char	*buf, *map = NULL;
	double	 t0;
	size_t	 n;
	int	 fd;

	if (m == APPEND_UNALIGNED)
		chunk += 8;
	n = total / chunk;
	if ((buf = malloc(chunk)) == NULL)
		return -1;
	memset(buf, 7, chunk);
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) == -1) {
		free(buf);
		return -1;
	}
	t0 = now_ns();
	if (m == OVERWRITE && zero_fill(fd, total) == -1)
		goto fail;
	if (m == MMAP) {
		if (ftruncate(fd, (off_t)total) == -1 ||
		    (map = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0)) == MAP_FAILED)
			goto fail;
		/* before Linux 5.14: EINVAL; the loop then faults pages in */
		if (madvise(map, total, MADV_POPULATE_WRITE) == -1 &&
		    errno != EINVAL)
			goto fail;
	}
	*prep_ns = (now_ns() - t0) / ((double)total / 8);
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		if (m == MMAP)
			memcpy(map + i * chunk, buf, chunk);
		else if (write_all(fd, buf, chunk) == -1)
			goto fail;
	}
	*loop_ns = (now_ns() - t0) / ((double)(n * chunk) / 8);
	if (map != NULL)
		munmap(map, total);
	close(fd);
	unlink(path);
	free(buf);
	return 0;
fail:
	perror(path);
	if (map != NULL && map != MAP_FAILED)
		munmap(map, total);
	close(fd);
	unlink(path);
	free(buf);
	return -1;
}

int
main(int argc, char **argv)
{
	const char	*dir = argc > 1 ? argv[1] : "/var/tmp";
	long		 mib = argc > 2 ? atol(argv[2]) : 256;
	long		 ch = argc > 3 ? atol(argv[3]) : 8192;
	size_t		 total, chunk;
	char		 path[4096];
	double		 loop, prep;

	if (mib <= 0 || mib > (1L << 20) || ch <= 0) {
		fprintf(stderr, "usage: pagecache_bench [DIR] [MIB] [CHUNK]\n");
		return 2;
	}
	total = (size_t)mib << 20;
	chunk = (size_t)ch;
	if (chunk % 4096 != 0 || total < 2 * chunk) {
		fprintf(stderr, "pagecache_bench: CHUNK must be a multiple of "
		    "4096 and MIB at least two chunks\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/pagecache_bench.%ld", dir,
	    (long)getpid());
	printf("%s, %zu MiB, chunks of %zu bytes; ns per 8-byte key\n", dir,
	    total >> 20, chunk);
	for (int m = 0; m < NMODES; m++) {
		if (run(path, (enum mode)m, total, chunk, &loop, &prep) == -1)
			return 1;
		printf("%-17s %6.2f in the loop, %6.2f before it\n",
		    mode_names[m], loop, prep);
	}
	return 0;
}
