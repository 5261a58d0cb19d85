/*
 * core.h - what the handlers, the journal policy (persist.c) and the
 * server share: the config in force, the filters, the saver, the journal
 * stream, the counters, the filters a reload retired, and the snapshot
 * schedule.
 *
 * It sits below everything that serves requests (command, conn, server)
 * and above what it holds (registry, saver, config), so a handler or
 * persist.c reaches shared state by going down, never up to the server.
 * The server owns the core and the event loop; the core knows nothing of
 * sockets, connections or libevent.
 */
#ifndef SEEND_CORE_H
#define SEEND_CORE_H

#include <stddef.h>
#include <time.h>

#include "stats.h"

struct cluster;
struct config;
struct registry;
struct saver;
struct filter;
struct journal;
struct persist;
struct save_wait;
struct backlog;

/* A replica as the primary's INFO and ROLE show it (primary.c keeps it). */
struct core_replica {
	char		 ip[64];
	unsigned	 port;		/* its listening port (REPLCONF) */
	uint64_t	 ack;		/* the offset it has acknowledged */
	time_t		 ack_at;
	int		 online;	/* past its full sync */
	/* its cluster node ID (REPLCONF node-id), "" if it sent none */
	char		 node_id[41];
};

/* A WAIT: answered once nreplicas acknowledged target, or at deadline. */
struct core_wait {
	struct save_wait *w;
	uint64_t	 target;	/* UINT64_MAX: the end of this turn */
	long long	 want;
	uint64_t	 timeout_ms;	/* 0 = never */
	uint64_t	 deadline_ms;	/* monotonic, set with target; 0 never */
	struct core_wait *next;
};

/* A CLUSTER SLOTMERGE ... SAVE STREAM's image (cluster_move.h) on its
 * way into the stream, framed at the turn's end: the turn's records
 * before it (before bytes at data), then the image (len bytes after). */
struct core_slots {
	struct core_slots *next;
	unsigned	 refs;		/* the queue's, and each link's output */
	size_t		 before, len;
	unsigned char	 data[];
};

/*
 * Replication as the handlers see it and ask for it; primary.c and
 * replica.c (in the server's turn) do the work and fill the figures.
 */
struct core_repl {
	int		 replica;	/* a read-only replica of host:port */
	char		 host[256];
	unsigned	 port;
	/* REPLICAOF changed the role: the server acts on it this turn */
	int		 changed;
	int		 want_replica;
	char		 want_host[256];
	unsigned	 want_port;
	/* why every replica must resync fully (MERGE, a LOADCHUNK, a
	 * record the stream could not take), or NULL */
	const char	*resync_why;
	/* moved slots' images for the stream, oldest first (primary.c
	 * frames them; persist_stream_slots queues them) */
	struct core_slots *slots;
	/* the stream's offset past its last image of slots: a replica
	 * that cannot take one (an older seend) resyncs fully from
	 * before it */
	uint64_t	 slots_end;
	char		 replid[41];	/* this history's id */
	char		 replid2[41];	/* the one before a promotion, or "" */
	uint64_t	 second_offset;	/* replid2 holds up to here */
	uint64_t	 offset;	/* the stream's end (master_repl_offset) */
	/* the stream kept for partial resyncs (a replica keeps the frames
	 * it applied, so that it serves the same offsets once promoted) */
	struct backlog	*backlog;
	/* primary side */
	struct core_replica *replicas;
	size_t		 nreplicas;
	size_t		 online;	/* of those, past their full sync */
	struct core_wait *waits;
	uint64_t	 sync_full, sync_partial_ok, sync_partial_err;
	uint64_t	 backlog_first, backlog_size;
	/* replica side */
	int		 link_up;
	int		 syncing;	/* a full sync is being received */
	int		 state;		/* CORE_LINK_* */
	time_t		 last_io;
	time_t		 down_since;
	char		 link_error[300];	/* kept down on purpose: why */
	uint64_t	 applied;	/* stream records applied */
	uint64_t	 skipped;	/* of filters this replica lacks */
	/* the primary's cluster node ID (CLUSTER MYID in the handshake),
	 * "" if it has none (cluster mode off there) */
	char		 primary_id[41];
	unsigned	 priority;	/* replica_priority */
	/* from the journal at start: where this replica had got to */
	char		 kept_replid[41];
	uint64_t	 kept_offset;
};

#define CORE_LINK_CONNECT	0	/* waiting to connect */
#define CORE_LINK_CONNECTING	1
#define CORE_LINK_SYNC		2	/* handshake or full sync */
#define CORE_LINK_CONNECTED	3

struct core {
	struct config	*cfg;
	struct registry	*reg;
	struct saver	*saver;
	/* filters a reload removed, kept (with a reference) until their
	 * last snapshot is written; a reload that brings the name back
	 * takes the live filter from here instead of an older file */
	struct filter	**retired;
	size_t		 nretired;
	/* the journal stream (persist.c): appended to when not NULL */
	struct journal	*journal;
	/* new keys get "ERR journal <reason>" (always, in fault) */
	int		 journal_refuse;
	struct persist	*persist;
	/* the replication stream of this turn (primary.c takes it at the
	 * turn's end): appended to, like the journal, when not NULL */
	struct journal	*stream;
	struct core_repl repl;
	/* [cluster] enabled = on, as the server started (cluster.h); NULL
	 * off. A reload does not change it. */
	struct cluster	*cluster;
	struct stats	 stats;
	/* shutting down: no new request is answered (the final snapshots
	 * are queued) and no periodic snapshot starts */
	int		 stopping;
	/* SHUTDOWN asked for this turn (CORE_SHUTDOWN_*): the server stops
	 * at the turn's end, as on SIGTERM */
	int		 shutdown_asked;
};

#define CORE_SHUTDOWN_SAVE	1	/* snapshot every dirty filter */
#define CORE_SHUTDOWN_NOSAVE	2	/* no snapshot: the journal keeps them */

/* Filter i of the live ones then the retired ones, i < core_nfilters_all. */
size_t		 core_nfilters_all(const struct core *);
struct filter	*core_filter_at(const struct core *, size_t i);

/* Queues a snapshot of f if it is dirty; all: even if one is already
 * queued. */
void	core_snapshot_filter(struct core *, struct filter *f, int all);
/* Queues a snapshot of every dirty filter, live or retired (the periodic
 * schedule, SIGUSR1, the journal's rounds); all: even those with a
 * snapshot already queued (shutdown). */
void	core_snapshot_dirty(struct core *, int all);
/* Each filter's periodic snapshot: due snapshot_interval after its own
 * last one, checked once a second. */
void	core_snapshot_due(struct core *, time_t now);
/*
 * A reload's registry: registry_build over the running filters, the
 * retired ones and the extra ones a reload's thread opened, so a name
 * that comes back gets its live bits, not its last (older) snapshot.
 * say (may be NULL) is told what changed. NULL with a message in err.
 */
struct registry *core_build_registry(struct core *, const struct config *,
	    struct filter *const *extra, size_t nextra,
	    void (*say)(const char *), char *err, size_t errlen);
/*
 * Filters nreg dropped from oreg move to the retired list; retired
 * filters it took back leave it. Returns the index of the first filter
 * retired now (they are at the end of the list).
 */
size_t	core_retire_removed(struct core *, const struct registry *oreg,
	    const struct registry *nreg);
/* Releases retired filters whose last snapshot is written. */
void	core_release_retired(struct core *);
/* Frees the registry, the retired filters and the config. */
void	core_free(struct core *);

#endif
