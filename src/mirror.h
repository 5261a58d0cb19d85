/*
 * mirror.h - a replica applies what its primary sends: the image of every
 * filter (a full sync) and the stream of records after it (new keys,
 * forgets, copies, filters made, dropped and emptied), as commands would
 * have: journaled here, counted, snapshotted in turn; and the images of
 * slots moved to its primary's shard. It knows no socket:
 * replica.c reads the link and hands the bytes here.
 */
#ifndef SEEND_MIRROR_H
#define SEEND_MIRROR_H

#include <stddef.h>
#include <stdint.h>

struct core;

/* One filter of an image: its name and an open snapshot file. */
struct mirror_image {
	char		 name[65];
	int		 fd;
	int64_t		 deadline_ms;	/* EXPIRE's, Unix ms; 0: none */
};

/*
 * Replaces the filters with the image's n filters: a config-file filter
 * takes its image's keys when type, capacity and error_rate agree, else
 * nothing changes and -1 comes back with the filter named in err (the
 * link stays down); runtime filters the image lacks are dropped, the
 * others made or filled. Every filter then owes a snapshot. The fds stay
 * the caller's.
 */
int	mirror_load_image(struct core *, const struct mirror_image *, size_t n,
	    char *err, size_t errlen);
/*
 * Applies one frame's records (the journal's encoding, journal.h). 0, or
 * -1 with a message (damage: the link must be dropped).
 */
int	mirror_apply(struct core *, const unsigned char *p, size_t len,
	    char *err, size_t errlen);
/*
 * Takes an image of moved slots from the stream (primary.h) as the
 * primary's CLUSTER SLOTMERGE ... SAVE did: the ranges merged, a named
 * filter made whole with its deadline. *changed (the caller frees it)
 * lists the n filters that owe a snapshot before the offset past it is
 * durable. 0, or -1 with a message (what was taken so far stays: a full
 * sync must follow).
 */
struct cluster_move_changed;
int	mirror_apply_slots(struct core *, const unsigned char *p, size_t len,
	    struct cluster_move_changed **changed, size_t *n, char *err,
	    size_t errlen);

#endif
