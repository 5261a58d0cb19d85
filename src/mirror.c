/*
 * mirror.c - a replica applies its primary's image and stream; see
 * mirror.h.
 *
 * Why records are applied with the primary's seeds and times: a key's
 * hash means nothing without its filter's seed, so a replica's filters
 * carry the primary's seeds (the image sets them, a reset record moves
 * them); a record whose seed is not the filter's belongs to a filter the
 * replica no longer has in that form and is skipped, as replay does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_move.h"
#include "config.h"
#include "core.h"
#include "filter.h"
#include "journal.h"
#include "keyspace.h"
#include "log.h"
#include "mirror.h"
#include "persist.h"
#include "registry.h"

/* ---- the image ---- */

/* The config's say on a filter of the image: 0 it may take it, -1 with
 * why in err. */
static int
shape_agrees(const struct filter *mine, const struct filter_shape *theirs,
    char *err, size_t errlen)
{
	if (mine->runtime)
		return 0;
	if (mine->type == theirs->type && mine->capacity == theirs->capacity &&
	    mine->error_rate == theirs->error_rate)
		return 0;
	snprintf(err, errlen, "filter %s: type, capacity or error_rate differ "
	    "from the primary's (%s, capacity %llu, error_rate %g here; %s, "
	    "capacity %llu, error_rate %g there)", mine->name,
	    mine->type == FILTER_TYPE_CUCKOO ? "cuckoo" : "bloom",
	    (unsigned long long)mine->capacity, mine->error_rate,
	    theirs->type == FILTER_TYPE_CUCKOO ? "cuckoo" : "bloom",
	    (unsigned long long)theirs->capacity, theirs->error_rate);
	return -1;
}

static int
in_image(const struct mirror_image *img, size_t n, const struct filter *f)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(img[i].name, f->name) == 0)
			return 1;
	return 0;
}

int
mirror_load_image(struct core *core, const struct mirror_image *img,
    size_t n, char *err, size_t errlen)
{
	struct filter		**made;
	struct filter_shape	 shape;
	struct filter		*mine;
	size_t			 i;
	int			 rc = -1;

	if ((made = calloc(n ? n : 1, sizeof(*made))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* everything read and checked before anything changes */
	for (i = 0; i < n; i++) {
		err[0] = '\0';
		made[i] = filter_from_image(img[i].name, img[i].fd, &shape,
		    err, errlen);
		if (made[i] == NULL)
			goto out;
		mine = registry_find(core->reg, img[i].name,
		    strlen(img[i].name));
		if (mine != NULL && shape_agrees(mine, &shape, err, errlen))
			goto out;
	}
	/* runtime filters the primary does not have go */
	for (size_t j = 0; j < core->reg->nfilters; ) {
		struct filter *f = core->reg->filters[j];

		if (f->runtime && !in_image(img, n, f)) {
			keyspace_drop_filter(core, f, "by a full sync (the "
			    "primary has no such filter)");
			continue;
		}
		j++;
	}
	for (i = 0; i < n; i++) {
		mine = registry_find(core->reg, img[i].name,
		    strlen(img[i].name));
		if (mine != NULL) {
			filter_take(mine, made[i]);
			filter_unref(made[i]);
		} else if (registry_adopt(core->reg, core->cfg, made[i], err,
		    errlen) == -1) {
			log_warn("replication: filter %s not taken: %s",
			    img[i].name, err);
			filter_unref(made[i]);
			mine = NULL;
		} else {
			/* replay makes it again before its keys */
			persist_filter_created(core, made[i]);
			mine = made[i];
		}
		made[i] = NULL;
		if (mine != NULL)
			keyspace_set_deadline(core, mine, img[i].deadline_ms);
	}
	/* every filter owes a snapshot of what it holds now */
	core_snapshot_dirty(core, 1);
	rc = 0;
 out:
	for (i = 0; i < n; i++)
		if (made[i] != NULL)
			filter_unref(made[i]);
	free(made);
	return rc;
}

/* ---- the stream ---- */

/* New keys held back while their blocks are fetched (see apply_key). */
#define APPLY_AHEAD	16

struct pending {
	struct filter	*f;
	uint64_t	 hash;
	uint64_t	 time;
};

struct apply {
	struct core	*core;
	struct pending	 q[APPLY_AHEAD];
	unsigned	 first, n;
	/* the last record's filter: records come in runs of one filter */
	const char	*name;
	size_t		 namelen;
	uint64_t	 seed;
	struct filter	*f;
};

static void
apply_create(struct apply *a, const struct journal_key *k)
{
	struct core	*core = a->core;
	struct filter	*f;
	char		 err[400];

	a->name = NULL;
	if ((f = registry_find(core->reg, k->name, k->namelen)) != NULL) {
		if (f->runtime && f->seed != k->seed)
			keyspace_drop_filter(core, f, "by the primary's new "
			    "filter of that name");
		else
			return;
	}
	f = registry_create_type(core->reg, core->cfg, k->name, k->namelen,
	    k->shape.capacity, k->shape.error_rate, k->shape.growth,
	    k->shape.type ? FILTER_TYPE_CUCKOO : FILTER_TYPE_BLOOM, err,
	    sizeof(err));
	if (f == NULL) {
		log_warn("replication: filter %.*s not made: %s",
		    (int)k->namelen, k->name, err);
		return;
	}
	f->seed = k->seed;
	f->max_kicks = k->shape.max_kicks;
	filter_set_normalize(f, k->shape.normalize);
	persist_filter_created(core, f);
}

static void
apply_drop(struct apply *a, const struct journal_key *k)
{
	struct filter *f = registry_find(a->core->reg, k->name, k->namelen);

	a->name = NULL;
	if (f != NULL && f->runtime && f->seed == k->seed)
		keyspace_drop_filter(a->core, f, "by the primary");
}

static void
apply_reset(struct apply *a, const struct journal_key *k)
{
	struct filter	*f = registry_find(a->core->reg, k->name, k->namelen);
	char		 err[600];

	a->name = NULL;
	if (f == NULL || f->seed != k->seed)
		return;
	if (persist_filter_reset_to(a->core, f, k->new_seed, err,
	    sizeof(err)) == -1) {
		/* the journal refuses (always, in fault): in memory still */
		log_warn("replication: filter %s emptied, not journaled: %s",
		    f->name, err);
		filter_reset(f, k->new_seed);
	}
}

static void
apply_deadline(struct apply *a, const struct journal_key *k)
{
	struct filter *f = registry_find(a->core->reg, k->name, k->namelen);

	if (f != NULL && f->seed == k->seed)
		keyspace_set_deadline(a->core, f, k->deadline_ms);
}

/* A key the primary answered new: set, counted and journaled here. */
static void
apply_new(struct core *core, struct filter *f, uint64_t h, uint64_t time)
{
	if (filter_seen_at(f, h, (int64_t)time) != 0) {
		if (!filter_is_cuckoo(f))
			filter_count_new(f);
		return;
	}
	f->seen_new++;
	if (core->journal != NULL && journal_append(core->journal, f->name,
	    f->namelen, f->seed, h, time) == -1)
		persist_append_failed(core, f, h);
}

/* The oldest key held back, applied. */
static void
pop(struct apply *a)
{
	struct pending *p = &a->q[a->first];

	apply_new(a->core, p->f, p->hash, p->time);
	a->first = (a->first + 1) % APPLY_AHEAD;
	a->n--;
}

/* The keys held back, applied in order. */
static void
flush(struct apply *a)
{
	while (a->n > 0)
		pop(a);
}

/*
 * One key record: applied to its filter and journaled as a command's.
 * New keys of a Bloom filter go through a queue of APPLY_AHEAD: each is
 * prefetched as it comes and set once APPLY_AHEAD more have come, so the
 * memory misses overlap as on the primary's batched path (applied one by
 * one, a replica spent 60 % of its time waiting on them). Anything else
 * applies what is queued first: the order is the primary's.
 */
static void
apply_key(struct apply *a, const struct journal_key *k)
{
	struct core	*core = a->core;
	struct filter	*f;

	if (a->name == NULL || a->namelen != k->namelen ||
	    a->seed != k->seed || memcmp(a->name, k->name, k->namelen)) {
		a->f = registry_find(core->reg, k->name, k->namelen);
		a->name = k->name;
		a->namelen = k->namelen;
		a->seed = k->seed;
	}
	if ((f = a->f) == NULL || f->seed != k->seed) {
		core->repl.skipped++;
		return;
	}
	if (k->op == JOURNAL_OP_NEW && !filter_is_cuckoo(f)) {
		struct pending *p;

		if (a->n == APPLY_AHEAD)
			pop(a);
		filter_prefetch(f, k->hash);
		p = &a->q[(a->first + a->n) % APPLY_AHEAD];
		p->f = f;
		p->hash = k->hash;
		p->time = k->time;
		a->n++;
		core->repl.applied++;
		return;
	}
	flush(a);
	switch (k->op) {
	case JOURNAL_OP_FORGET:
		if (filter_forget(f, k->hash))
			persist_key_op(core, f, JOURNAL_OP_FORGET, k->hash);
		break;
	case JOURNAL_OP_COPY:
		if (filter_add_copy(f, k->hash) == 0)
			persist_key_op(core, f, JOURNAL_OP_COPY, k->hash);
		break;
	default:
		apply_new(core, f, k->hash, k->time);
		break;
	}
	core->repl.applied++;
}

static int
apply_record(void *arg, const struct journal_key *k, char *err,
    size_t errlen)
{
	struct apply *a = arg;

	(void)err;
	(void)errlen;
	if (k->repl)
		return 0;
	if (k->create || k->drop || k->reset || k->deadline)
		flush(a);	/* the keys before it, before it */
	if (k->create)
		apply_create(a, k);
	else if (k->drop)
		apply_drop(a, k);
	else if (k->reset)
		apply_reset(a, k);
	else if (k->deadline)
		apply_deadline(a, k);
	else
		apply_key(a, k);
	return 0;
}

int
mirror_apply(struct core *core, const unsigned char *p, size_t len,
    char *err, size_t errlen)
{
	struct apply	 a;
	int		 rc;

	memset(&a, 0, sizeof(a));
	a.core = core;
	if (len == 0)
		return 0;
	/* every key of a turn has that turn's clock */
	filter_clock_update();
	rc = journal_replay_mem(p, len, "the primary's stream", apply_record,
	    &a, err, errlen);
	flush(&a);
	return rc;
}

int
mirror_apply_slots(struct core *core, const unsigned char *p, size_t len,
    struct cluster_move_changed **changed, size_t *n, char *err,
    size_t errlen)
{
	if (cluster_move_import(core, p, len, CLUSTER_MOVE_SAVE |
	    CLUSTER_MOVE_STREAM, persist_filter_reset_to, changed, n, err,
	    errlen) == -1)
		return -1;
	/* as cmd_cluster_slotmerge (its records that follow set them
	 * again) */
	for (size_t i = 0; i < *n; i++)
		if ((*changed)[i].whole) {
			keyspace_set_deadline(core, (*changed)[i].f,
			    (*changed)[i].deadline_ms);
			persist_filter_created(core, (*changed)[i].f);
		}
	core->repl.applied++;
	return 0;
}
