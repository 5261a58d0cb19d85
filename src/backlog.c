/*
 * backlog.c - the replication backlog's ring; see backlog.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"

int
backlog_init(struct backlog *b, size_t size, uint64_t start)
{
	memset(b, 0, sizeof(*b));
	if (size < 4096)
		size = 4096;
	if ((b->ring = malloc(size)) == NULL)
		return -1;
	b->size = size;
	b->first = b->end = start;
	return 0;
}

void
backlog_free(struct backlog *b)
{
	free(b->ring);
	memset(b, 0, sizeof(*b));
}

void
backlog_reset(struct backlog *b, uint64_t start)
{
	b->first = b->end = start;
}

void
backlog_append(struct backlog *b, const void *p, size_t len)
{
	const unsigned char	*src = p;
	size_t			 at, n;

	if (len >= b->size) {
		/* only the last size bytes can be held */
		src += len - b->size;
		b->end += len - b->size;
		len = b->size;
	}
	while (len > 0) {
		at = (size_t)(b->end % b->size);
		n = b->size - at;
		if (n > len)
			n = len;
		memcpy(b->ring + at, src, n);
		src += n;
		len -= n;
		b->end += n;
	}
	if (b->end - b->first > b->size)
		b->first = b->end - b->size;
}

int
backlog_holds(const struct backlog *b, uint64_t o)
{
	return b->ring != NULL && o >= b->first && o <= b->end;
}

size_t
backlog_read(const struct backlog *b, uint64_t o, const unsigned char **p,
    size_t max)
{
	size_t at, n;

	if (!backlog_holds(b, o) || o == b->end)
		return 0;
	at = (size_t)(o % b->size);
	n = b->size - at;
	if (n > b->end - o)
		n = (size_t)(b->end - o);
	if (n > max)
		n = max;
	*p = b->ring + at;
	return n;
}

int
backlog_resize(struct backlog *b, size_t size)
{
	struct backlog		 nb;
	const unsigned char	*p;
	uint64_t		 o;
	size_t			 n;

	if (backlog_init(&nb, size, b->end) == -1)
		return -1;
	/* the newest bytes that fit */
	o = b->end - b->first > nb.size ? b->end - nb.size : b->first;
	nb.first = nb.end = o;
	while ((n = backlog_read(b, o, &p, SIZE_MAX)) > 0) {
		backlog_append(&nb, p, n);
		o += n;
	}
	backlog_free(b);
	*b = nb;
	return 0;
}
