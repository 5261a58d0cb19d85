/*
 * replica.h - a replica's link to its primary: connect, PSYNC, receive a
 * full sync's images or resume, then apply the stream (mirror.c) and
 * acknowledge it once journaled. The frames and images are primary.h's.
 *
 * Where it had got to survives a restart: after each turn's frames an
 * 'o' record (journal.h) with the replication id and offset goes into the
 * journal with the keys, so a replica killed -9 resumes from the last one
 * replay finds. After a full sync it writes an empty id first (a restart
 * then syncs fully) and its offset only once every filter's snapshot of
 * the image is written: the journal does not hold the image. The same
 * after an image of moved slots in the stream (primary.h), for the
 * filters it changed; and until those are written it acknowledges no
 * further than the image's start, so that a primary's WAIT, and seen-cli
 * before it gives the moved slots, count only replicas that hold them
 * durably (one promoted, then killed, would lose them). A full sync is
 * acknowledged once loaded, as ever: its snapshots are every filter's.
 */
#ifndef SEEND_REPLICA_H
#define SEEND_REPLICA_H

struct core;
struct event_base;
struct replica;

struct replica	*replica_new(struct core *, struct event_base *);
void		 replica_free(struct replica *);
#include <stdint.h>

/* At start: the journal says the filters hold replid's stream up to
 * offset (an id of zeros: nothing, a full sync follows). */
void		 replica_resume(struct replica *, const char *replid,
		    uint64_t offset);
/* (Re)connects to core->repl.host:port (the role is set). */
void		 replica_start(struct replica *);
/* Closes the link (promotion, shutdown). */
void		 replica_stop(struct replica *);
/* After the journal's write: the offset applied and journaled is
 * acknowledged to the primary. */
void		 replica_turn_end(struct replica *);
/* Once a second: reconnects, and makes the offset durable after a full
 * sync once its snapshots are written. */
void		 replica_tick(struct replica *);

#endif
