/*
 * core.c - the shared state's own work: the snapshot schedule and the
 * filters a reload retired; see core.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core.h"
#include "filter.h"
#include "log.h"
#include "registry.h"
#include "saver.h"

size_t
core_nfilters_all(const struct core *core)
{
	return core->reg->nfilters + core->nretired;
}

struct filter *
core_filter_at(const struct core *core, size_t i)
{
	return i < core->reg->nfilters ? core->reg->filters[i] :
	    core->retired[i - core->reg->nfilters];
}

void
core_snapshot_filter(struct core *core, struct filter *f, int all)
{
	/* a job already queued will pick up these bits next time; at
	 * shutdown (all) a fresh job is needed regardless */
	if (!filter_dirty(f) || (f->saving && !all))
		return;
	if (saver_submit(core->saver, f, core->cfg->data_dir, NULL) == -1)
		log_error("filter %s: cannot queue a snapshot: out of memory",
		    f->name);
}

void
core_snapshot_dirty(struct core *core, int all)
{
	for (size_t i = 0; i < core_nfilters_all(core); i++)
		core_snapshot_filter(core, core_filter_at(core, i), all);
}

/*
 * Each filter's periodic snapshot is due snapshot_interval after its own
 * last one (or after it was first seen here: a start counts as just after
 * a snapshot), checked by the 1 s tick: no timer that a reload re-arms,
 * so reloads never postpone one.
 */
static void
due_one(struct core *core, struct filter *f, time_t now)
{
	time_t base = f->snap_attempt > f->last_save ? f->snap_attempt :
	    f->last_save;

	if (f->snap_attempt == 0) {
		f->snap_attempt = now;
		return;
	}
	if (now - base < (time_t)core->cfg->snapshot_interval ||
	    !filter_dirty(f) || f->saving)
		return;
	f->snap_attempt = now;
	core_snapshot_filter(core, f, 0);
}

void
core_snapshot_due(struct core *core, time_t now)
{
	if (core->cfg->snapshot_interval == 0 || core->stopping)
		return;
	for (size_t i = 0; i < core_nfilters_all(core); i++)
		due_one(core, core_filter_at(core, i), now);
}

struct registry *
core_build_registry(struct core *core, const struct config *ncfg,
    struct filter *const *extra, size_t nextra, void (*say)(const char *),
    char *err, size_t errlen)
{
	struct registry	 known = { 0 }, *nreg;
	size_t		 n = core_nfilters_all(core);

	known.filters = calloc(n + nextra + 1, sizeof(*known.filters));
	if (known.filters == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		known.filters[known.nfilters++] = core_filter_at(core, i);
	/* the filters the reload's thread opened: nothing is read here */
	for (size_t i = 0; i < nextra; i++)
		known.filters[known.nfilters++] = extra[i];
	nreg = registry_build(ncfg, &known, say, err, errlen);
	free(known.filters);
	return nreg;
}

size_t
core_retire_removed(struct core *core, const struct registry *oreg,
    const struct registry *nreg)
{
	struct filter	**grown;
	size_t		  i = 0, first;

	while (i < core->nretired) {
		if (registry_contains(nreg, core->retired[i])) {
			log_info("filter %s is back", core->retired[i]->name);
			filter_unref(core->retired[i]);
			core->retired[i] = core->retired[--core->nretired];
		} else
			i++;
	}
	first = core->nretired;
	for (i = 0; i < oreg->nfilters; i++) {
		struct filter *f = oreg->filters[i];

		if (registry_contains(nreg, f))
			continue;
		log_info("filter %s removed; saving its last snapshot",
		    f->name);
		grown = realloc(core->retired,
		    (core->nretired + 1) * sizeof(*core->retired));
		if (grown == NULL) {
			/* not kept for a comeback, but its keys are still
			 * saved: the saver holds its own reference */
			log_error("filter %s: out of memory retiring it",
			    f->name);
			core_snapshot_filter(core, f, 1);
			continue;
		}
		core->retired = grown;
		filter_ref(f);
		core->retired[core->nretired++] = f;
	}
	return first;
}

void
core_release_retired(struct core *core)
{
	size_t i = 0;

	while (i < core->nretired) {
		struct filter *f = core->retired[i];

		if (f->saving || filter_dirty(f)) {
			i++;
			continue;
		}
		log_debug("filter %s: released", f->name);
		core->retired[i] = core->retired[--core->nretired];
		filter_unref(f);
	}
}

void
core_free(struct core *core)
{
	registry_free(core->reg);
	core->reg = NULL;
	for (size_t i = 0; i < core->nretired; i++)
		filter_unref(core->retired[i]);
	free(core->retired);
	core->retired = NULL;
	core->nretired = 0;
	config_free(core->cfg);
	core->cfg = NULL;
}
