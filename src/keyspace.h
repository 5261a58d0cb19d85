/*
 * keyspace.h - what the server asks of cmd_keyspace.c (filter names as
 * Redis keys) outside a request: the runtime filters' deadlines at start
 * and at each sweep, and the one way a runtime filter is dropped.
 */
#ifndef SEEND_KEYSPACE_H
#define SEEND_KEYSPACE_H

#include <stdint.h>

struct core;
struct filter;
struct op;
struct result;
struct session;

/*
 * At start, after the runtime filters are loaded and before the journal
 * is replayed: reads <data_dir>/deadlines (deadline.h); a filter whose
 * deadline has passed is dropped now, a deadline of a name that is no
 * runtime filter is forgotten. Returns 0, or -1 after logging why (a
 * damaged file: it is left as it is).
 */
int	keyspace_load(struct core *);
/*
 * The periodic sweep (about once a second, now_ms the wall clock in
 * milliseconds): drops the runtime filters whose deadline has come,
 * forgets deadlines whose filter is gone or now in the config file, and
 * retries a deadline file that could not be written (or whose data_dir a
 * reload moved).
 */
void	keyspace_expire_due(struct core *, int64_t now_ms);
/*
 * Drops runtime filter f as DEL does: out of the registry, its snapshot
 * file removed (a snapshot in flight too), its deadline forgotten; why
 * goes into the log line ("by client 7 (127.0.0.1:5000)").
 */
void	keyspace_drop_filter(struct core *, struct filter *,
	    const char *why);

/*
 * Drops the named filters whose slot this node's shard gave away (marked
 * by cluster_move_apply: the new owner holds them now) as DEL does, its
 * 'x' record journalled and streamed (replicas drop them by it). The
 * same filter may come back one day under its seed: its 'r' record then
 * undoes the 'x' at a replay (persist.c).
 */
void	keyspace_drop_moved(struct core *);

/*
 * CLUSTER RESETPART <filter> <seed>: empties this node's part of
 * partitioned filter <filter> if it hashes with <seed> (16 hex digits),
 * taking the seed after it (filter_next_seed), as DEL does where the node
 * holds the whole filter: +OK. A part hashing with that next seed already
 * answers +OK and is left as it is (a reset of every node sent again).
 * seen-cli cluster reset sends it to every primary.
 */
void	keyspace_reset_part(struct session *, struct op *, struct result *);
/* CLUSTER PARTSEED <filter>: the seed this node's part of partitioned
 * filter <filter> hashes with, 16 hex digits (seen-cli cluster reset
 * reads every primary's before it sends RESETPART). */
void	keyspace_part_seed(struct session *, struct op *, struct result *);

/* A runtime filter's deadline (Unix ms), 0 if it has none. */
int64_t	keyspace_deadline(const struct filter *);
/* A replica takes its primary's deadline for f (0: none), kept in its
 * deadline file; its own sweep waits for the primary's drop. */
void	keyspace_set_deadline(struct core *, struct filter *, int64_t at_ms);

#endif
