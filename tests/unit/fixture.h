/*
 * fixture.h - files for unit tests that write a file, damage it and check
 * what is left of it (test_journal.c, test_snapshot.c):
 *
 *   slurp(path, &b)        the whole file into b.p (malloc'd), b.len bytes
 *   spit(path, p, len)     the file made to hold exactly [p, p + len)
 *   same_file(path, &b)    whether the file holds exactly b's bytes
 *
 * Each returns -1 (or 0 for same_file) on any failure, so that a test can
 * say what it expected instead of stopping.
 */
#ifndef SEEND_FIXTURE_H
#define SEEND_FIXTURE_H

#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	unsigned char	*p;
	size_t		 len;
};

static inline int
slurp(const char *path, struct buf *b)
{
	struct stat	 sb;
	FILE		*f;

	b->p = NULL;
	b->len = 0;
	if (stat(path, &sb) == -1 || (f = fopen(path, "rb")) == NULL)
		return -1;
	b->len = (size_t)sb.st_size;
	/* + 1: malloc(0) may answer NULL for an empty file */
	if ((b->p = malloc(b->len + 1)) == NULL ||
	    fread(b->p, 1, b->len, f) != b->len) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static inline int
spit(const char *path, const void *p, size_t len)
{
	FILE	*f;
	int	 rc = 0;

	if ((f = fopen(path, "wb")) == NULL)
		return -1;
	if (len > 0 && fwrite(p, 1, len, f) != len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static inline int
same_file(const char *path, const struct buf *want)
{
	struct buf	 got;
	int		 same;

	if (slurp(path, &got) == -1) {
		free(got.p);
		return 0;
	}
	same = got.len == want->len && memcmp(got.p, want->p, got.len) == 0;
	free(got.p);
	return same;
}

#endif
