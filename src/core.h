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

struct config;
struct registry;
struct saver;
struct filter;
struct journal;
struct persist;

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
	struct stats	 stats;
	/* shutting down: no new request is answered (the final snapshots
	 * are queued) and no periodic snapshot starts */
	int		 stopping;
};

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
