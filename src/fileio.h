/*
 * fileio.h - what the snapshot and journal files share: little-endian
 * fields, reads that survive short reads and signals, and making a
 * directory entry durable.
 */
#ifndef SEEND_FILEIO_H
#define SEEND_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

static inline void
put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void
put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t
get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t
get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A double's IEEE-754 bits, for put_le64, and back (file formats). */
static inline uint64_t
double_bits(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

static inline double
bits_double(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/*
 * pread(2) until len bytes or end of file, through short reads and signals.
 * Returns the bytes read, or -1. pread leaves the descriptor's offset alone,
 * so callers need not care where it was.
 */
ssize_t	fileio_read_full(int fd, void *buf, size_t len, uint64_t off);
/*
 * fsync(2) of directory dir: makes a create, rename, truncate or unlink in
 * it durable. Returns 0, or -1 with errno set.
 */
int	fileio_sync_dir(const char *dir);

/*
 * The last step of writing a file atomically: renames tmp (written and
 * fsynced) to final, then fsyncs dir so that the rename survives a crash.
 * Returns 0, or -1 with a message in err (tmp removed if the rename
 * failed; past it the new file is in place and a failure can only be
 * reported).
 */
int	fileio_commit(const char *tmp, const char *final, const char *dir,
	    char *err, size_t errlen);

/*
 * Reads dir/name whole, for the small text files seend keeps beside its
 * snapshots (the cluster's map and node ID, the filters' deadlines): a
 * regular file of at most max bytes. Returns 1 with *text (NUL-terminated,
 * the caller frees it) and *len, 0 if there is no such file, or -1 with
 * "<path>: why" in err.
 */
int	fileio_read_small(const char *dir, const char *name, size_t max,
	    char **text, size_t *len, char *err, size_t errlen);
/*
 * Replaces dir/name with len bytes at text, whole or not at all: written
 * to dir/.name.tmp, fsynced, then fileio_commit. Returns 0, or -1 with a
 * message in err.
 */
int	fileio_write_small(const char *dir, const char *name, const void *text,
	    size_t len, char *err, size_t errlen);

/*
 * The end of writing a file whole: fsync(2) and close(2) of fd, written
 * as tmp, then fileio_commit. On a failure tmp is removed and err says
 * which step failed ("fsync <tmp>: why"). fd is closed either way.
 */
int	fileio_close_commit(int fd, const char *tmp, const char *final,
	    const char *dir, char *err, size_t errlen);

/*
 * A file in dir with no name, read-write, gone when closed: O_TMPFILE, or
 * on a file system without it a named one removed at once. -1 with errno.
 */
int	fileio_tmpfile(const char *dir);

#endif
