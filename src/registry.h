/*
 * registry.h - the named filters and the rules that route keys to them.
 *
 * A registry is built whole from a struct config and never changed in place:
 * a reload builds a new one that takes over the filters whose names it keeps
 * (bits and all), creates the new ones (loading their snapshots), and lists
 * the ones it dropped so the caller can snapshot and release them. Filters
 * are reference counted because a snapshot job may still hold one after a
 * reload has dropped it.
 *
 * No libevent and no sockets here.
 */
#ifndef SEEND_REGISTRY_H
#define SEEND_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bloom.h"
#include "config.h"

struct filter {
	char		 name[CONFIG_NAME_MAX + 1];
	struct bloom	 bloom;
	uint64_t	 capacity;	/* the shape it was made with */
	double		 error_rate;
	int		 refs;
	/* snapshots: bits_set only grows, so "changed since the last
	 * snapshot" is bits_set != saved_bits; and a data_dir change makes
	 * every filter owe a snapshot in the new directory: dir_gen counts
	 * those changes, saved_gen is the one its last snapshot was for */
	uint64_t	 saved_bits;
	unsigned	 dir_gen;
	unsigned	 saved_gen;
	int		 saving;		/* jobs queued or running */
	time_t		 last_save;		/* 0 = never */
	double		 last_save_secs;
	int		 last_save_ok;		/* -1 none yet, 0 failed, 1 ok */
	char		 last_save_error[256];
	uint64_t	 saves_ok, saves_failed;
	time_t		 loaded_at;		/* when its snapshot was loaded, or 0 */
	/* traffic */
	uint64_t	 seen_new, seen_old, checks;
};

struct route_table;

struct registry {
	struct filter	**filters;	/* in config file order */
	size_t		  nfilters;
	struct filter	 *default_filter;	/* NULL if not configured */
	struct route_table *routes;	/* NULL when no filter has rules */
};

/*
 * Builds a registry for cfg. Filters named in old (may be NULL) are shared
 * (their reference taken), others are created and their snapshot in
 * cfg->data_dir loaded. A changed capacity or error_rate of a kept filter is
 * reported through warn (one message each, may be NULL) and the running
 * filter kept. Returns the registry, or NULL with a message in err; on
 * failure old is untouched.
 */
struct registry	*registry_build(const struct config *cfg,
		    const struct registry *old,
		    void (*warn)(const char *msg), char *err, size_t errlen);
/* Drops the registry's references; returns filters whose last reference
 * went with it through their freeing. */
void		 registry_free(struct registry *);

struct filter	*registry_find(const struct registry *, const char *name,
		    size_t len);
/* registry_route's work when some filter has hosts or prefixes. */
struct filter	*registry_route_rules(const struct registry *,
		    const char *key, size_t len);

/* The filter for a key: the first by config order whose hosts or prefixes
 * match, else the default filter (may be NULL). Inline because it runs for
 * every key, and with no rules it is two loads and no call. */
static inline struct filter *
registry_route(const struct registry *reg, const char *key, size_t len)
{
	if (reg->routes == NULL)
		return reg->default_filter;
	return registry_route_rules(reg, key, len);
}
/* 1 if f is in reg. */
int		 registry_contains(const struct registry *, const struct filter *);

void		 filter_ref(struct filter *);
void		 filter_unref(struct filter *);
/* 1 if bits were set since the last successful snapshot, or the snapshot
 * is not in the current data_dir. */
int		 filter_dirty(const struct filter *);

#endif
