/*
 * merge.c - MERGE's work on filters; see merge.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "filter.h"
#include "merge.h"

/* A slice of the destination the work ORs into: one it had, or one the
 * plan made (attached at the end). */
struct target {
	struct slice	*s;		/* held */
	uint64_t	 seed;		/* its keys' seed */
	int		 fresh;		/* made by the plan */
	int		 own;		/* fresh: one of dst's own slices */
	int		 used;		/* by the source being planned */
};

/* One source slice ORed into one target, a budget at a time. */
struct op {
	struct slice	*src;		/* held */
	size_t		 target;
	uint64_t	 count;		/* the source's, at the plan */
	uint64_t	 done;		/* bytes ORed so far */
};

struct merge {
	struct filter	*dst;		/* held */
	uint64_t	 dst_seed;	/* a reset changes it */
	struct target	*targets;
	size_t		 ntargets;
	struct op	*ops;
	size_t		 nops;
	size_t		 cur;		/* the op under way */
	uint64_t	 bytes;
};

static int
same_shape(const struct slice *a, const struct slice *b, int window)
{
	return a->bloom.nblocks == b->bloom.nblocks &&
	    a->bloom.hashes == b->bloom.hashes &&
	    (!window || a->start_ms == b->start_ms);
}

static int
add_target(struct merge *m, struct slice *s, uint64_t seed, int fresh,
    int own)
{
	struct target *grown;

	if ((grown = reallocarray(m->targets, m->ntargets + 1,
	    sizeof(*grown))) == NULL)
		return -1;
	m->targets = grown;
	if (!fresh)
		slice_ref(s);
	m->targets[m->ntargets++] = (struct target){ s, seed, fresh, own, 0 };
	return 0;
}

static int
add_op(struct merge *m, struct slice *src, size_t target)
{
	struct op *grown;

	if ((grown = reallocarray(m->ops, m->nops + 1, sizeof(*grown))) ==
	    NULL)
		return -1;
	m->ops = grown;
	slice_ref(src);
	m->ops[m->nops++] = (struct op){ src, target, src->bloom.count, 0 };
	m->bytes += bloom_bytes(&src->bloom);
	return 0;
}

/* The target src (of seed) ORs into: an unused one of its seed and
 * shape, else a new one (own: a fresh destination's own slice). */
static int
target_for(struct merge *m, const struct slice *src, uint64_t seed, int own,
    int window, size_t *out, char *err, size_t errlen)
{
	struct slice *s;

	for (size_t i = 0; i < m->ntargets && !own; i++) {
		struct target *t = &m->targets[i];

		if (!t->used && t->seed == seed && same_shape(t->s, src,
		    window)) {
			t->used = 1;
			*out = i;
			return 0;
		}
	}
	if ((s = slice_alloc(src->bloom.nblocks, src->bloom.hashes,
	    src->capacity, src->error_rate, src->start_ms)) == NULL) {
		snprintf(err, errlen, "cannot allocate %llu bytes (max_memory "
		    "or memory)", (unsigned long long)bloom_bytes(&src->bloom));
		return -1;
	}
	if (add_target(m, s, seed, 1, own) == -1) {
		slice_unref(s);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->targets[m->ntargets - 1].used = 1;
	*out = m->ntargets - 1;
	return 0;
}

/*
 * A slot-major filter's bits (BLOOM_LAYOUT_SLOTS512) sit in the blocks of
 * their key's slot, a layout 1 filter's anywhere: OR-ed or copied into
 * the other kind, they would answer for keys never added and miss the
 * ones that were. 0, or -1 with a message.
 */
static int
same_layout(const struct filter *dst, struct filter *const *srcs,
    size_t nsrcs, char *err, size_t errlen)
{
	for (size_t k = 0; k < nsrcs; k++)
		if (srcs[k]->slot_major != dst->slot_major) {
			const struct filter *sm = dst->slot_major ? dst :
			    srcs[k], *other = sm == dst ? srcs[k] : dst;

			snprintf(err, errlen, "filter %s is partitioned by "
			    "slot and %s is not: their bits are laid out "
			    "differently and cannot be merged", sm->name,
			    other->name);
			return -1;
		}
	return 0;
}

struct merge *
merge_plan(struct filter *dst, int fresh, struct filter *const *srcs,
    size_t nsrcs, char *err, size_t errlen)
{
	struct merge	*m;
	int		 window = dst->expire_ms > 0;
	size_t		 t;

	err[0] = '\0';
	if (same_layout(dst, srcs, nsrcs, err, errlen) == -1)
		return NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		goto oom;
	filter_ref(dst);
	m->dst = dst;
	m->dst_seed = dst->seed;
	/* the slices dst has, own and merged, may take ORs */
	for (size_t i = 0; i < filter_nall(dst); i++) {
		struct slice *s = filter_slice_at(dst, i);

		if (add_target(m, s, i < dst->nslices ? dst->seed : s->seed, 0,
		    0) == -1)
			goto oom;
	}
	for (size_t k = 0; k < nsrcs; k++) {
		const struct filter *src = srcs[k];

		/* a source ORs at most once into each target */
		for (size_t i = 0; i < m->ntargets; i++)
			m->targets[i].used = 0;
		for (size_t i = 0; i < filter_nall(src); i++) {
			struct slice	*s = filter_slice_at(src, i);
			int		 mine = i < src->nslices;
			uint64_t	 seed = mine ? src->seed : s->seed;

			if (target_for(m, s, seed, fresh && k == 0 && mine,
			    window, &t, err, errlen) == -1 ||
			    add_op(m, s, t) == -1) {
				if (err[0] == '\0')
					snprintf(err, errlen, "out of memory");
				merge_free(m);
				return NULL;
			}
		}
	}
	return m;
oom:
	snprintf(err, errlen, "out of memory");
	merge_free(m);
	return NULL;
}

/* ORs len bytes at off of src into dst, keeping dst's bits_set. */
static void
or_bytes(struct bloom *dst, const struct bloom *src, uint64_t off,
    uint64_t len)
{
	uint64_t	*d = dst->words + off / 8;
	const uint64_t	*s = src->words + off / 8;
	uint64_t	 added = 0;

	for (uint64_t i = 0; i < len / 8; i++) {
		uint64_t n = s[i] & ~d[i];

		/* no store where nothing is new: a fresh target's pages are
		 * only faulted in where the source has bits */
		if (n != 0) {
			added += (uint64_t)__builtin_popcountll(n);
			d[i] |= n;
		}
	}
	dst->bits_set += added;
}

size_t merge_fault_step_limit;

int
merge_step(struct merge *m, size_t budget)
{
	if (merge_fault_step_limit > 0 && budget > merge_fault_step_limit)
		budget = merge_fault_step_limit;
	while (m->cur < m->nops && budget > 0) {
		struct op	*op = &m->ops[m->cur];
		struct bloom	*d = &m->targets[op->target].s->bloom;
		uint64_t	 total = bloom_bytes(&op->src->bloom);
		uint64_t	 n = total - op->done;

		if (n > budget)
			n = budget & ~(uint64_t)(BLOOM_BLOCK_BYTES - 1);
		if (n == 0)
			n = BLOOM_BLOCK_BYTES;	/* progress, always */
		or_bytes(d, &op->src->bloom, op->done, n);
		op->done += n;
		budget = budget > n ? budget - n : 0;
		if (op->done == total)
			m->cur++;
	}
	return m->cur == m->nops;
}

int
merge_finish(struct merge *m, char *err, size_t errlen)
{
	struct filter *dst = m->dst;

	if (dst->seed != m->dst_seed) {
		snprintf(err, errlen, "filter %s was emptied during the merge",
		    dst->name);
		return -1;
	}
	for (size_t i = 0; i < m->nops; i++)
		m->targets[m->ops[i].target].s->bloom.count += m->ops[i].count;
	/* fresh own slices first, oldest first as their source had them */
	for (size_t i = 0; i < m->ntargets; i++) {
		struct target *t = &m->targets[i];

		if (!t->fresh || !t->own)
			continue;
		/* dst takes a reference of its own; ours goes in merge_free */
		slice_ref(t->s);
		if (filter_add_own(dst, t->s) == -1) {
			slice_unref(t->s);
			goto oom;
		}
		t->fresh = 0;
	}
	for (size_t i = 0; i < m->ntargets; i++) {
		struct target *t = &m->targets[i];

		if (!t->fresh)
			continue;
		slice_ref(t->s);
		if (filter_add_merged(dst, t->s, t->seed) == -1) {
			slice_unref(t->s);
			goto oom;
		}
		t->fresh = 0;
	}
	filter_counts_changed(dst);
	return 0;
oom:
	snprintf(err, errlen, "out of memory attaching the merged slices");
	filter_counts_changed(dst);
	return -1;
}

void
merge_free(struct merge *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nops; i++)
		slice_unref(m->ops[i].src);
	/* our reference on every target: one never attached goes with it */
	for (size_t i = 0; i < m->ntargets; i++)
		slice_unref(m->targets[i].s);
	free(m->ops);
	free(m->targets);
	if (m->dst != NULL)
		filter_unref(m->dst);
	free(m);
}

struct filter *
merge_dst(const struct merge *m)
{
	return m->dst;
}

uint64_t
merge_bytes(const struct merge *m)
{
	return m->bytes;
}
