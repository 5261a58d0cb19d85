/*
 * backlog.h - the replication stream a primary keeps for replicas that
 * come back: the last size bytes of one offset space, in a ring.
 *
 * Offsets count every byte of the stream since the replication id began
 * (the same count on the primary and on each replica: a replica keeps the
 * frames it applied in its own backlog, so a promoted replica serves the
 * others from the same offsets). A replica that asks for offset o can be
 * served from the backlog when first <= o <= end.
 */
#ifndef SEEND_BACKLOG_H
#define SEEND_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

struct backlog {
	unsigned char	*ring;
	size_t		 size;		/* of ring */
	uint64_t	 first;		/* offset of the oldest byte held */
	uint64_t	 end;		/* offset of the next byte */
};

/* An empty backlog of size bytes starting at offset start; -1 if out of
 * memory. */
int		 backlog_init(struct backlog *, size_t size, uint64_t start);
void		 backlog_free(struct backlog *);
/* A ring of size bytes holding the newest bytes held that fit (a
 * reload's repl_backlog_size); -1 if out of memory (unchanged). */
int		 backlog_resize(struct backlog *, size_t size);
/* Forgets everything; the stream goes on from start. */
void		 backlog_reset(struct backlog *, uint64_t start);
/* Appends len bytes (the oldest go when it is full). */
void		 backlog_append(struct backlog *, const void *p, size_t len);
/* Whether offset o can be served (first <= o <= end). */
int		 backlog_holds(const struct backlog *, uint64_t o);
/* The bytes from offset o (backlog_holds), at most max, contiguous in the
 * ring: *p and the count (0 at the end). */
size_t		 backlog_read(const struct backlog *, uint64_t o,
		    const unsigned char **p, size_t max);

#endif
