/*
 * test_filter_window.c - a partitioned filter with a window taking the
 * slices of a moved slot's periods (filter_period_slice, filter.c; its
 * caller is cluster_move.c): slices matched by period and rank, added in
 * their period's place among the others (oldest first), planned as growth
 * plans them, found again rather than added twice; the oldest slice's
 * drop time and the head follow; a start off the period boundaries (a
 * window a reload changed) is placed by its start; a negative start, a
 * window of growth off asked for a second slice, and filters that are not
 * partitioned with a window are refused with a reason.
 *
 * Deterministic: the periods are taken from the clock once, and every
 * check is on slices' starts, ranks and shapes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "tap.h"

static char	 err[512];

static struct filter *
make(const char *name, unsigned growth, uint64_t expire, int slot_major)
{
	struct filter_shape	 shape;
	struct filter		*f;

	memset(&shape, 0, sizeof(shape));
	shape.capacity = 8000;
	shape.error_rate = 0.01;
	shape.growth = growth;
	shape.expire = expire;
	shape.type = FILTER_TYPE_BLOOM;
	shape.slot_major = slot_major;
	if ((f = filter_create(name, &shape, err, sizeof(err))) == NULL) {
		fprintf(stderr, "filter_create: %s\n", err);
		exit(2);
	}
	return f;
}

/* The index of b among f's slices, or -1. */
static int
index_of(const struct filter *f, const struct bloom *b)
{
	for (size_t i = 0; i < f->nslices; i++)
		if (&f->slices[i]->bloom == b)
			return (int)i;
	return -1;
}

static void
test_periods_in_place(void)
{
	struct filter	*f = make("recent", 2, 800, 1);
	int64_t		 p = filter_period_ms(f), cur;
	struct bloom	*b, *again;

	ok(p == 100000, "a window of 800 s: periods of 100 s (%lld ms)",
	    (long long)p);
	ok(f->nslices == 0, "a window's filter starts with no slice");
	filter_clock_update();
	cur = filter_now_ms - filter_now_ms % p;

	b = filter_period_slice(f, cur - 2 * p, 0, err, sizeof(err));
	ok(b != NULL && f->nslices == 1 && f->slices[0]->start_ms ==
	    cur - 2 * p && f->head == f->slices[0], "the first slice of a "
	    "period two back: added, the head");
	ok(f->drop_at_ms == cur - 2 * p + 9 * p, "it drops 9 periods after "
	    "its start");
	b = filter_period_slice(f, cur, 0, err, sizeof(err));
	ok(b != NULL && f->nslices == 2 && f->slices[1]->start_ms == cur &&
	    f->head == f->slices[1], "the current period's: appended, the "
	    "head");

	/* rank 1 of the period between, planned before it is taken: the
	 * plan changes nothing, and is what is then added */
	{
		uint64_t nb0, nb1;
		uint32_t k0, k1;

		ok(filter_period_plan(f, cur - p, 0, &nb0, &k0) == 0 &&
		    filter_period_plan(f, cur - p, 1, &nb1, &k1) == 0 &&
		    f->nslices == 2, "ranks 0 and 1 of a period it lacks are "
		    "planned, nothing added");
		b = filter_period_slice(f, cur - p, 1, err, sizeof(err));
		ok(b != NULL && b->nblocks == nb1 && b->hashes == k1 &&
		    f->slices[1]->bloom.nblocks == nb0 &&
		    f->slices[1]->bloom.hashes == k0, "and added as planned "
		    "(%llu blocks, k = %u for rank 1)",
		    (unsigned long long)nb1, k1);
		ok(filter_period_plan(f, cur, 0, &nb0, &k0) == 0 &&
		    nb0 == f->slices[3]->bloom.nblocks,
		    "an existing slice's plan is its shape");
	}
	/* rank 1 of the period between: its rank 0 first, both in place */
	b = filter_period_slice(f, cur - p, 1, err, sizeof(err));
	ok(b != NULL && f->nslices == 4, "rank 1 of the period between: "
	    "two slices added (%zu)", f->nslices);
	ok(f->slices[0]->start_ms == cur - 2 * p &&
	    f->slices[1]->start_ms == cur - p &&
	    f->slices[2]->start_ms == cur - p &&
	    f->slices[3]->start_ms == cur, "oldest first: the period's "
	    "slices between the older and the newer one");
	ok(index_of(f, b) == 2, "rank 1 is the period's second slice");
	ok(f->head == f->slices[3] && f->head->start_ms == cur,
	    "the head is still the current period's");
	ok(f->slices[2]->capacity == 2 * f->slices[1]->capacity &&
	    f->slices[2]->error_rate < f->slices[1]->error_rate,
	    "rank 1 planned as growth plans it: twice the capacity (%llu, "
	    "%llu), a tighter rate", (unsigned long long)
	    f->slices[1]->capacity, (unsigned long long)
	    f->slices[2]->capacity);
	ok(f->slices[1]->capacity == f->slices[0]->capacity &&
	    f->slices[1]->bloom.nblocks == f->slices[0]->bloom.nblocks,
	    "rank 0 of every period is the same shape");
	ok(f->slices[2]->bloom.nblocks % KEYSLOT_COUNT == 0,
	    "slices added are laid out by slot");

	again = filter_period_slice(f, cur - p, 1, err, sizeof(err));
	ok(again == b && f->nslices == 4, "asked again: the same slice, none "
	    "added");
	again = filter_period_slice(f, cur - 2 * p, 0, err, sizeof(err));
	ok(again == &f->slices[0]->bloom && f->nslices == 4, "and the oldest "
	    "period's");

	/* the period two back goes 9 periods after its start, the rest
	 * stay */
	filter_expire(f, cur - 2 * p + 9 * p);
	ok(f->nslices == 3 && f->slices[0]->start_ms == cur - p,
	    "expiry drops the oldest period's slice alone");
	ok(f->drop_at_ms == cur - p + 9 * p, "the next drop is the period "
	    "between's");

	/* a period of a window a reload changed: placed by its start */
	b = filter_period_slice(f, cur - p + p / 2, 0, err, sizeof(err));
	ok(b != NULL && f->nslices == 4 && index_of(f, b) == 2 &&
	    f->slices[2]->start_ms == cur - p + p / 2 &&
	    f->slices[3]->start_ms == cur, "a start off the period boundaries "
	    "(a window a reload changed): its own period, in its place");
	b = filter_period_slice(f, -p, 0, err, sizeof(err));
	ok(b == NULL && f->nslices == 4, "a negative start is refused, and "
	    "adds nothing: %s", err);
	ok(filter_part_slice(f, 0, err, sizeof(err)) == NULL && strstr(err, "taken by period") != NULL,
	    "taken by index, a window's slice is refused: %s", err);
	filter_unref(f);
}

static void
test_refusals(void)
{
	struct filter	*f = make("fixed", 0, 800, 1);
	int64_t		 p = filter_period_ms(f), cur;
	struct bloom	*b;

	filter_clock_update();
	cur = filter_now_ms - filter_now_ms % p;
	b = filter_period_slice(f, cur, 0, err, sizeof(err));
	ok(b != NULL, "growth off: a period's first slice is taken");
	{
		uint64_t nb;
		uint32_t k;

		ok(filter_period_plan(f, cur, 1, &nb, &k) == -1,
		    "growth off: a second slice of a period has no plan");
	}
	b = filter_period_slice(f, cur, 1, err, sizeof(err));
	ok(b == NULL && strstr(err, "growth = off") != NULL && f->nslices == 1,
	    "growth off: a second slice of the period is refused: %s", err);
	filter_unref(f);

	f = make("whole", 2, 800, 0);
	b = filter_period_slice(f, cur, 0, err, sizeof(err));
	ok(b == NULL && strstr(err, "not partitioned") != NULL,
	    "a window not partitioned by slot is refused: %s", err);
	filter_unref(f);

	f = make("nowindow", 2, 0, 1);
	ok(filter_period_ms(f) == 0, "no window: no period");
	b = filter_period_slice(f, cur, 0, err, sizeof(err));
	ok(b == NULL && strstr(err, "with a window") != NULL,
	    "a partitioned filter without a window is refused: %s", err);
	filter_unref(f);
}

int
main(void)
{
	test_periods_in_place();
	test_refusals();
	return done_testing();
}
