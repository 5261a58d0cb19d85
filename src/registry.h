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

#include "config.h"
#include "filter.h"

struct route_table;
struct name_slot;

struct registry {
	/* config-file filters in file order, then runtime ones (created by
	 * BF.RESERVE, SADD... or loaded from a snapshot no section names) */
	struct filter	**filters;
	size_t		  nfilters;
	size_t		  slots;	/* allocated in filters[] */
	/* by name, open addressing: O(1) whatever the count */
	struct name_slot *names;
	size_t		  names_mask;
	struct filter	 *default_filter;	/* NULL if not configured */
	struct route_table *routes;	/* NULL when no filter has rules */
};

/*
 * Builds a registry for cfg. Filters named in old (may be NULL) are shared
 * (their reference taken), others are created and their snapshot in
 * cfg->data_dir loaded; kept filters keep their settings until
 * registry_apply_settings. warn is not called (kept for callers). Returns
 * the registry, or NULL with a message in err; on failure old is untouched.
 */
struct registry	*registry_build(const struct config *cfg,
		    const struct registry *old,
		    void (*warn)(const char *msg), char *err, size_t errlen);
/*
 * Gives every filter of reg (built from cfg) cfg's settings once a reload
 * is committed: every key stays, new slices follow the new settings (see
 * filter_reconfigure); say (may be NULL) is told what changed.
 */
void		 registry_apply_settings(struct registry *,
		    const struct config *, void (*say)(const char *));
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

/* 1 if name may be a runtime filter's: 1 to 64 bytes of letters, digits,
 * "_-.:", not starting with '.' (files stay inside data_dir). */
int		 registry_valid_name(const char *name, size_t len);
/* Adds a new empty runtime filter; NULL with a message in err (max_filters,
 * max_memory, a bad name or parameters). */
struct filter	*registry_create(struct registry *, const struct config *,
		    const char *name, size_t len, uint64_t capacity,
		    double error_rate, unsigned growth, char *err,
		    size_t errlen);
/* The same for a filter of that type (FILTER_TYPE_*: CF.RESERVE and
 * CF.ADD make cuckoo filters). */
struct filter	*registry_create_type(struct registry *, const struct config *,
		    const char *name, size_t len, uint64_t capacity,
		    double error_rate, unsigned growth, int type, char *err,
		    size_t errlen);
/* Adds f (made elsewhere: BF.LOADCHUNK) as a runtime filter; reg takes
 * its reference. -1 with a message (a bad name, the name taken,
 * max_filters): f is then the caller's still. */
int		 registry_adopt(struct registry *, const struct config *,
		    struct filter *, char *err, size_t errlen);
/* Takes a runtime filter out of reg (the caller drops its reference and
 * files). */
void		 registry_remove(struct registry *, struct filter *);
/*
 * At start: every snapshot in cfg->data_dir that no section names comes
 * back as a runtime filter with the parameters in its header. Files that
 * do not load are logged through warn and left alone.
 */
int		 registry_load_runtime(struct registry *, const struct config *,
		    void (*warn)(const char *msg), char *err, size_t errlen);


#endif
