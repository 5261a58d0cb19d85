/*
 * buf.h - a growable byte buffer with a read offset: a connection's input
 * or unsent output. Appends grow it; consuming from the front only moves an
 * offset until the buffer is compacted, so a pipeline of many small replies
 * costs no memmove per reply.
 */
#ifndef SEEND_BUF_H
#define SEEND_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

struct buf {
	char	*data;
	size_t	 off;	/* first unconsumed byte */
	size_t	 len;	/* end of the data (data[off..len) is live) */
	size_t	 cap;
};

static inline size_t
buf_used(const struct buf *b)
{
	return b->len - b->off;
}

static inline char *
buf_head(const struct buf *b)
{
	return b->data + b->off;
}

/* Ensures room for n more bytes at the end; returns 0 or -1 (no memory). */
int	buf_reserve(struct buf *, size_t n);
/* Moves the live bytes to the front (cheap when few are left). */
void	buf_compact(struct buf *);
void	buf_consume(struct buf *, size_t n);
/* Frees the memory if the buffer is empty and bigger than keep bytes. */
void	buf_shrink(struct buf *, size_t keep);
void	buf_free(struct buf *);
int	buf_append(struct buf *, const void *, size_t);
int	buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

static inline int
buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

#endif
