/*
 * buf.c - growable byte buffer; see buf.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"

int
buf_reserve(struct buf *b, size_t n)
{
	size_t	 ncap;
	char	*p;

	if (b->cap - b->len >= n)
		return 0;
	/* Reclaim consumed space first: it is usually enough. */
	if (b->off > 0) {
		buf_compact(b);
		if (b->cap - b->len >= n)
			return 0;
	}
	ncap = b->cap ? b->cap : 4096;
	while (ncap - b->len < n) {
		if (ncap > ((size_t)-1) / 2)
			return -1;
		ncap *= 2;
	}
	if ((p = realloc(b->data, ncap)) == NULL)
		return -1;
	b->data = p;
	b->cap = ncap;
	return 0;
}

void
buf_compact(struct buf *b)
{
	if (b->off == 0)
		return;
	if (b->len > b->off)
		memmove(b->data, b->data + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

void
buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

void
buf_shrink(struct buf *b, size_t keep)
{
	if (buf_used(b) == 0 && b->cap > keep)
		buf_free(b);
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (buf_reserve(b, 256) == -1)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= b->cap - b->len) {
		if (buf_reserve(b, (size_t)n + 1) == -1)
			return -1;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}
