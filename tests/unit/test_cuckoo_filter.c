/*
 * test_cuckoo_filter.c - filters of type = cuckoo (filter.c), above the
 * tables test_cuckoo.c tests: a filter that grows by filter_seen into
 * slices of twice the capacity, forgets half its keys with no false
 * negative for the others, stores and forgets extra copies; a fixed one
 * that fills, refuses, and takes one more key after a forget; and
 * filter_capture's copies, which a snapshot job writes while the live
 * tables change, written and loaded back as a filter.
 *
 * Deterministic: fixed seeds (filter_reseed) and generated keys, so the
 * tables, and every count below, are the same on every run. Bounds on
 * false positives are the expected count plus 3 sigma.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "snapshot.h"
#include "tap.h"

#define SEED		0x5eedc0c0a0a0b0b0ULL
#define CAP		1000
#define RATE		0.01
/* a slice this big has 8 chunks or more of copy-on-write (64 KiB each) */
#define BIG_TABLE	((uint64_t)1 << 19)

static char	 err[512];
static char	 dir[] = "/tmp/test_cuckoo_filter.XXXXXX";

/* The hash of the i-th key of a family. */
static uint64_t
khash(const struct filter *f, const char *tag, uint64_t i)
{
	char	 k[128];
	int	 n;

	n = snprintf(k, sizeof(k), "https://example.org/%s/%" PRIu64, tag, i);
	return filter_hash(f, k, (size_t)n);
}

/* The expected number of false positives among n queries at rate p, plus
 * 3 standard deviations (and 1, for a p so small the rest rounds to 0). */
static uint64_t
fp_bound(uint64_t n, double p)
{
	double m = (double)n * p;

	return (uint64_t)ceil(m + 3.0 * sqrt(m * (1.0 - p)) + 1.0);
}

static struct filter *
make(const char *name, uint64_t cap, double rate, unsigned growth)
{
	struct filter_shape	 shape;
	struct filter		*f;

	memset(&shape, 0, sizeof(shape));
	shape.capacity = cap;
	shape.error_rate = rate;
	shape.growth = growth;
	shape.type = FILTER_TYPE_CUCKOO;
	if ((f = filter_create(name, &shape, err, sizeof(err))) == NULL) {
		fprintf(stderr, "filter_create: %s\n", err);
		exit(2);
	}
	/* a fixed seed: the same tables every run */
	if (filter_reseed(f, SEED) == -1) {
		fprintf(stderr, "filter_reseed refused\n");
		exit(2);
	}
	return f;
}

struct keys {
	uint64_t	*h;
	size_t		 n;
};

static void
keys_add(struct keys *k, uint64_t h)
{
	uint64_t *nv;

	if ((k->n & (k->n - 1)) == 0 || k->n == 0) {
		if ((nv = realloc(k->h, (k->n ? 2 * k->n : 1024) *
		    sizeof(*nv))) == NULL)
			exit(2);
		k->h = nv;
	}
	k->h[k->n++] = h;
}

/* A key of family tag that no slice holds (filter_check 0). */
static uint64_t
fresh_key(struct filter *f, const char *tag, uint64_t *i)
{
	uint64_t h;

	while (filter_check(f, h = khash(f, tag, (*i)++)))
		;
	return h;
}

/* ---- a growing filter ---- */

static struct filter	*grown;
static struct keys	 kept, forgotten;

static void
test_grow(void)
{
	struct filter	*f;
	struct keys	 rec = { 0 };
	const uint64_t	 n = 20000;
	uint64_t	 fps = 0, full = 0, missing = 0, nforgot = 0;
	uint64_t	 hits = 0, fresh_hits = 0, i;
	int		 shapes = 1, cuckoo = 1, ones = 1;
	double		 p;

	f = grown = make("grows", CAP, RATE, 2);
	ok(filter_is_cuckoo(f) && f->nslices == 1 && !f->simple &&
	    f->fast == NULL && f->head->cuckoo.table != NULL &&
	    f->head->bloom.words == NULL, "grow: a new cuckoo filter has one "
	    "cuckoo slice and no fast path");
	for (i = 0; i < n; i++) {
		uint64_t	 h = khash(f, "k", i);
		int		 rc = filter_seen(f, h);

		if (rc == 0)
			keys_add(&rec, h);
		else if (rc == 1)
			fps++;
		else
			full++;
	}
	diag("grow: %" PRIu64 " keys: %zu recorded, %" PRIu64 " false "
	    "positives, %zu slices", n, rec.n, fps, f->nslices);
	ok(full == 0 && f->nslices >= 4 && !f->full, "grow: %" PRIu64 " keys "
	    "by filter_seen grow it to %zu slices (>= 4), none refused", n,
	    f->nslices);
	for (size_t s = 0; s < f->nslices; s++) {
		const struct slice *sl = f->slices[s];

		cuckoo &= sl->cuckoo.table != NULL && sl->bloom.words == NULL;
		shapes &= sl->capacity == (uint64_t)CAP << s &&
		    (s == 0 || sl->error_rate < f->slices[s - 1]->error_rate) &&
		    (s + 1 == f->nslices || slice_count(sl) == sl->capacity);
	}
	ok(cuckoo, "grow: every slice is a cuckoo table");
	ok(shapes, "grow: each slice twice the last's capacity at a lower "
	    "rate; the older ones hold their capacity");
	ok(filter_count(f) == rec.n, "grow: filter_count (%" PRIu64 ") is the "
	    "keys recorded", filter_count(f));
	ok(fps <= fp_bound(n, RATE), "grow: %" PRIu64 " keys answered seen "
	    "before they were (at most %" PRIu64 " at error_rate %g)", fps,
	    fp_bound(n, RATE), RATE);
	for (size_t k = 0; k < rec.n; k++)
		missing += !filter_check(f, rec.h[k]);
	ok(missing == 0, "grow: all %zu recorded keys found (%" PRIu64
	    " missing)", rec.n, missing);

	/* forget every other one */
	for (size_t k = 0; k < rec.n; k++) {
		if (k % 2 == 0) {
			keys_add(&kept, rec.h[k]);
			continue;
		}
		ones &= filter_forget(f, rec.h[k]) == 1;
		keys_add(&forgotten, rec.h[k]);
		nforgot++;
	}
	ok(ones, "forget: filter_forget returns 1 for each of the %" PRIu64
	    " keys forgotten", nforgot);
	ok(f->forgotten == nforgot && filter_count(f) == rec.n - nforgot,
	    "forget: forgotten %" PRIu64 ", count %" PRIu64 " (%zu - %"
	    PRIu64 ")", f->forgotten, filter_count(f), rec.n, nforgot);
	missing = 0;
	for (size_t k = 0; k < kept.n; k++)
		missing += !filter_check(f, kept.h[k]);
	ok(missing == 0, "forget: every one of the %zu keys kept is still "
	    "found, no false negative (%" PRIu64 " missing)", kept.n, missing);
	p = filter_fp_estimate(f);
	for (size_t k = 0; k < forgotten.n; k++)
		hits += (uint64_t)filter_check(f, forgotten.h[k]);
	for (i = 0; i < 100000; i++)
		fresh_hits += (uint64_t)filter_check(f, khash(f, "never", i));
	diag("forget: estimated rate %.5f; forgotten keys found %" PRIu64
	    " of %zu, keys never added %" PRIu64 " of 100000", p, hits,
	    forgotten.n, fresh_hits);
	ok(hits <= fp_bound(forgotten.n, p), "forget: forgotten keys are not "
	    "found but as false positives (%" PRIu64 ", at most %" PRIu64 ")",
	    hits, fp_bound(forgotten.n, p));
	ok(fresh_hits <= fp_bound(100000, p), "forget: keys never added are "
	    "found at the estimated rate (%" PRIu64 ", at most %" PRIu64 ")",
	    fresh_hits, fp_bound(100000, p));
	free(rec.h);
}

/* CF.ADD and CF.COUNT: extra copies, each forgotten by one forget. */
static void
test_copies(void)
{
	struct filter	*f = grown;
	uint64_t	 i = 0, h, count, forgot, c;

	h = fresh_key(f, "copy", &i);
	count = filter_count(f);
	forgot = f->forgotten;
	ok(filter_copies(f, h) == 0, "copies: a key no slice holds has no "
	    "copy");
	ok(filter_add_copy(f, h) == 0 && filter_add_copy(f, h) == 0,
	    "copies: filter_add_copy twice");
	c = filter_copies(f, h);
	ok(c >= 2 && filter_check(f, h) == 1 && filter_count(f) == count + 2,
	    "copies: filter_copies %" PRIu64 " (>= 2), found, count + 2", c);
	ok(filter_forget(f, h) == 1 && filter_copies(f, h) == c - 1 &&
	    filter_check(f, h) == 1, "copies: one forget leaves one copy, "
	    "still found");
	ok(filter_forget(f, h) == 1 && filter_copies(f, h) == c - 2,
	    "copies: the second forget takes the other");
	ok(filter_check(f, h) == 0 && filter_forget(f, h) == 0,
	    "copies: then it is not found (no slice held its fingerprint "
	    "before), and a third forget finds nothing");
	ok(f->forgotten == forgot + 2 && filter_count(f) == count,
	    "copies: forgotten + 2, the count back to %" PRIu64, count);

	/* a key held: one more copy, one forget, still held */
	h = kept.h[kept.n / 3];
	c = filter_copies(f, h);
	ok(c >= 1 && filter_add_copy(f, h) == 0 && filter_copies(f, h) ==
	    c + 1, "copies: a recorded key gets one more copy (%" PRIu64
	    " then %" PRIu64 ")", c, c + 1);
	ok(filter_forget(f, h) == 1 && filter_copies(f, h) == c &&
	    filter_check(f, h) == 1, "copies: and after one forget it is "
	    "still found, with %" PRIu64, c);
}

/* ---- a fixed filter ---- */

static void
test_fixed(void)
{
	struct filter	*f;
	struct keys	 rec = { 0 }, refused = { 0 };
	uint64_t	 i, fps_after = 0, after = 0, missing = 0, again = 0;
	uint64_t	 rechecked = 0, h, cap;
	int		 after_full = 0, recorded_after = 0, rc;
	double		 p;

	f = make("fixed", 2000, RATE, 0);
	cap = f->head->capacity;
	for (i = 0; i < 10000; i++) {
		rc = filter_seen(f, h = khash(f, "fx", i));
		if (rc == FILTER_FULL) {
			after_full = 1;
			keys_add(&refused, h);
		} else if (rc == 0) {
			keys_add(&rec, h);
			recorded_after |= after_full;
		} else if (after_full)
			fps_after++;
		after += (uint64_t)after_full;
	}
	diag("fixed: capacity %" PRIu64 " (planned 2000), %zu recorded, %zu "
	    "refused, %" PRIu64 " false positives once full", cap, rec.n,
	    refused.n, fps_after);
	ok(f->full && filter_state(f) == FILTER_STATE_FULL &&
	    f->nslices == 1 && refused.n > 0, "fixed: growth = off fills "
	    "and answers FILTER_FULL (%zu keys refused), one slice", refused.n);
	ok(!recorded_after && rec.n == filter_count(f) &&
	    filter_count(f) == f->head->capacity && rec.n <= 2000,
	    "fixed: it holds its capacity (%zu) and records nothing once "
	    "full", rec.n);
	for (size_t k = 0; k < rec.n; k++)
		missing += !filter_check(f, rec.h[k]);
	ok(missing == 0, "fixed: every recorded key found (%" PRIu64
	    " missing)", missing);
	p = filter_fp_estimate(f);
	ok(fps_after <= fp_bound(after, p), "fixed: once full, new keys are "
	    "answered seen only as false positives (%" PRIu64 " of %" PRIu64
	    ", at most %" PRIu64 " at %.5f)", fps_after, after,
	    fp_bound(after, p), p);
	/* a full filter does not change: a key it refused stays unseen */
	for (size_t k = 0; k < refused.n; k++) {
		rechecked += (uint64_t)filter_check(f, refused.h[k]);
		again += filter_seen(f, refused.h[k]) != FILTER_FULL;
	}
	ok(rechecked == 0 && again == 0, "fixed: a refused key is never "
	    "answered seen after (%" PRIu64 " found, %" PRIu64 " not refused "
	    "again)", rechecked, again);

	/* a forget makes room for one key */
	rc = filter_forget(f, rec.h[0]);
	ok(rc == 1 && !f->full && filter_state(f) != FILTER_STATE_FULL &&
	    filter_count(f) == rec.n - 1, "fixed: a forget in the full "
	    "filter gives it room (state %s)",
	    filter_state_name(filter_state(f)));
	i = 0;
	h = fresh_key(f, "one-more", &i);
	ok(filter_seen(f, h) == 0 && filter_check(f, h) == 1 &&
	    filter_count(f) == rec.n, "fixed: one more key is recorded");
	h = fresh_key(f, "one-more", &i);
	ok(filter_seen(f, h) == FILTER_FULL && f->full &&
	    filter_check(f, h) == 0, "fixed: the next is refused: full again");
	filter_unref(f);
	free(rec.h);
	free(refused.h);
}

/* ---- filter_capture: the snapshot job's copies ---- */

static void
test_capture(void)
{
	struct filter		*f = grown, *back;
	struct filter_shape	 shape;
	struct snapshot_info	 info;
	struct snapshot_slice	*out, *ld = NULL;
	struct slice		**owners;
	unsigned char		**saved;
	char			 path[600];
	struct keys		 big = { 0 }, sample = { 0 };
	size_t			 n, nlive;
	uint64_t		 mem0, mem1, copies = 0, counts = 0, i = 0;
	uint64_t		 missing = 0, fgot, k, nadd = 0, ncopy = 0;
	int			 distinct = 1, same = 1, fields = 1, kept_ok = 1;
	int			 changed = 0, rc, nforget = 0;

	/* A copy is filled a chunk at a time (64 KiB, cuckoo.c's COW_CHUNK,
	 * whatever a step's budget), and the slices above fit in one: their
	 * copies are whole at the first step. New keys grow the filter to a
	 * slice of BIG_TABLE bytes, many chunks, and 3000 keys go into it, so
	 * that the adds, forgets and extra copies below land in chunks not
	 * yet copied while its copy is being made. */
	for (k = 0; cuckoo_table_bytes(&f->head->cuckoo) < BIG_TABLE; k++)
		if (filter_seen(f, khash(f, "bulk", k)) == 0 && k % 97 == 0)
			keys_add(&sample, khash(f, "bulk", k));
	for (uint64_t b = 0; b < 3000; b++, k++) {
		uint64_t h = khash(f, "bulk", k);

		if (filter_seen(f, h) == 0)
			keys_add(&big, h);
	}
	n = filter_nall(f);
	diag("capture: %" PRIu64 " more keys, %zu slices, the newest of %"
	    PRIu64 " bytes holding %zu of them", k, n,
	    cuckoo_table_bytes(&f->head->cuckoo), big.n);
	out = calloc(n, sizeof(*out));
	owners = calloc(n, sizeof(*owners));
	saved = calloc(n, sizeof(*saved));
	if (out == NULL || owners == NULL || saved == NULL)
		exit(2);
	mem0 = filter_memory_used;
	/* the copies are filled by copy-on-write: pending now */
	ok(filter_capture(f, out, owners) == 1, "capture: %zu slices, their "
	    "copies filled by copy-on-write", n);
	for (size_t s = 0; s < n; s++) {
		const struct slice	*live = filter_slice_at(f, s);
		uint64_t		 len = cuckoo_table_bytes(&live->cuckoo);

		/* the copy holds its source until it is whole */
		distinct &= owners[s] != NULL && owners[s] != live &&
		    owners[s]->cuckoo.table != live->cuckoo.table &&
		    out[s].cuckoo.table == owners[s]->cuckoo.table &&
		    live->refs == 2 && owners[s]->refs == 1 &&
		    owners[s]->cow_src == live;
		fields &= out[s].cuckoo.nbuckets == live->cuckoo.nbuckets &&
		    out[s].cuckoo.fpbits == live->cuckoo.fpbits &&
		    out[s].count == slice_count(live) &&
		    out[s].cuckoo.count == slice_count(live) &&
		    out[s].capacity == live->capacity &&
		    out[s].error_rate == live->error_rate &&
		    out[s].start_ms == live->start_ms && !out[s].merged &&
		    out[s].bloom.words == NULL;
		if ((saved[s] = malloc(len)) == NULL)
			exit(2);
		/* what the copy must hold once whole: the table now */
		memcpy(saved[s], live->cuckoo.table, len);
		copies += owners[s]->cuckoo.map_bytes;
		counts += out[s].count;
	}
	ok(distinct, "capture: each slice is a copy of its own, not the live "
	    "slice, which the copy holds while it is filled");
	ok(fields, "capture: shape, count, capacity, rate and start of each");
	mem1 = filter_memory_used;
	ok(mem1 == mem0 + copies, "capture: the copies count in "
	    "filter_memory_used (%" PRIu64 " bytes)", copies);
	fgot = f->forgotten;

	/* the live filter changes while the copies are filled a chunk at a
	 * time: rounds of a new key (a kick moves fingerprints), a forget in
	 * the big slice and an extra copy, then a step, until the copies are
	 * whole; then more of each, forgets in every slice. Every change
	 * while a copy is being made first copies the chunk it writes
	 * (cuckoo_cow_touch): without that, the copies below would hold
	 * these changes. */
	{
		const struct cuckoo	*bc = &f->head->cuckoo;
		int			 whole = 0, steps = 0;
		int			 during[3] = { 0, 0, 0 };

		while (!whole && nadd < big.n) {
			during[0] += bc->cow != NULL;
			(void)filter_seen(f, khash(f, "after", nadd++));
			during[1] += bc->cow != NULL;
			nforget += filter_forget(f, big.h[nadd - 1]) == 1;
			during[2] += bc->cow != NULL;
			(void)filter_add_copy(f, khash(f, "after", ncopy++));
			whole = filter_capture_step(owners, n, 4096);
			steps++;
		}
		diag("capture: %d steps taken while changing (%s); changes "
		    "while copying: %d adds, %d forgets, %d copies", steps,
		    whole ? "whole" : "not yet whole", during[0], during[1],
		    during[2]);
		ok(steps > 1 && during[0] > 1 && during[1] > 1 &&
		    during[2] > 1, "capture: the copy of a %" PRIu64 "-byte "
		    "slice is made across %d steps (> 1), adds, forgets and "
		    "extra copies landing in it meanwhile (%d, %d, %d)",
		    cuckoo_table_bytes(bc), steps, during[0], during[1],
		    during[2]);
		for (; nadd < 3000; nadd++) {
			(void)filter_seen(f, khash(f, "after", nadd));
			if (nadd % 100 == 0 && !whole)
				whole = filter_capture_step(owners, n, 4096);
		}
		for (size_t j = 0; j < kept.n; j += 7, nforget++)
			(void)filter_forget(f, kept.h[j]);
		for (size_t j = 0; j < sample.n; j++, nforget++)
			(void)filter_forget(f, sample.h[j]);
		for (; ncopy < 50; ncopy++)
			(void)filter_add_copy(f, khash(f, "after", ncopy));
		filter_capture_finish(owners, n);
		whole = 1;
		for (size_t s = 0; s < n; s++)
			whole &= owners[s]->cow_src == NULL &&
			    filter_slice_at(f, s)->refs == 1 &&
			    filter_slice_at(f, s)->cuckoo.cow == NULL;
		ok(whole, "capture: finished, each copy lets its source go");
	}
	nlive = f->nslices;
	for (size_t s = 0; s < n; s++)
		changed += memcmp(filter_slice_at(f, s)->cuckoo.table,
		    saved[s], cuckoo_table_bytes(&out[s].cuckoo)) != 0;
	ok(changed == (int)n, "capture: after %d forgets and %" PRIu64 " adds "
	    "every live table changed (%d of %zu; %zu slices now)", nforget,
	    nadd + ncopy, changed, n, nlive);
	same = 1;
	for (size_t s = 0; s < n; s++)
		same &= memcmp(out[s].cuckoo.table, saved[s],
		    cuckoo_table_bytes(&out[s].cuckoo)) == 0 &&
		    out[s].count == cuckoo_recount(&out[s].cuckoo);
	ok(same, "capture: the copies are the tables as they were at capture, "
	    "counts too");

	/* what a snapshot job does with them: written, then loaded back as
	 * a filter */
	memset(&info, 0, sizeof(info));
	info.nslices = (uint32_t)n;
	info.seed = f->seed;
	info.capacity = f->capacity;
	info.error_rate = f->error_rate;
	info.growth = f->growth;
	info.cuckoo = 1;
	info.jseq = 3;
	info.joff = 4096;
	info.forgotten = fgot;
	rc = snapshot_write_slices(dir, "grows", &info, out, err, sizeof(err));
	ok(rc == 0, "capture: written as a snapshot (%s)", rc == 0 ? "ok" :
	    err);
	snapshot_path(path, sizeof(path), dir, "grows");
	rc = snapshot_load_slices(path, CAP, RATE, &info, &ld, err,
	    sizeof(err));
	if (rc == 1) {
		same = info.nslices == n && info.count == counts;
		for (size_t s = 0; same && s < n; s++)
			same &= memcmp(ld[s].cuckoo.table, saved[s],
			    cuckoo_table_bytes(&ld[s].cuckoo)) == 0;
		snapshot_slices_free(ld, info.nslices);
	} else
		same = 0;
	ok(same, "capture: the file holds the tables as captured (%s)",
	    rc == 1 ? "ok" : err);
	mem1 = filter_memory_used;
	for (size_t s = 0; s < n; s++)
		slice_unref(owners[s]);
	ok(filter_memory_used == mem1 - copies, "capture: unreferenced, the "
	    "copies are released (%" PRIu64 " bytes)", copies);
	memset(&shape, 0, sizeof(shape));
	shape.capacity = CAP;
	shape.error_rate = RATE;
	shape.growth = 2;
	shape.type = FILTER_TYPE_CUCKOO;
	back = filter_open("grows", &shape, dir, err, sizeof(err));
	ok(back != NULL && filter_is_cuckoo(back) && back->nslices == n &&
	    filter_count(back) == counts && back->seed == f->seed &&
	    back->forgotten == fgot && back->loaded_jseq == 3 &&
	    back->loaded_joff == 4096, "capture: filter_open loads it: %zu "
	    "slices, %" PRIu64 " keys, seed, forgotten, journal position (%s)",
	    n, counts, back ? "ok" : err);
	if (back != NULL) {
		for (size_t j = 0; j < kept.n; j++)
			missing += !filter_check(back, kept.h[j]);
		for (size_t j = 0; j < big.n; j++)
			missing += !filter_check(back, big.h[j]);
		for (size_t j = 0; j < sample.n; j++)
			missing += !filter_check(back, sample.h[j]);
		kept_ok = missing == 0;
		ok(kept_ok, "capture: every key kept at capture is found in the "
		    "loaded filter, those forgotten since too (%" PRIu64
		    " missing)", missing);
		i = 0;
		{
			uint64_t h = fresh_key(back, "loaded", &i);

			ok(filter_seen(back, h) == 0 && filter_check(back, h) &&
			    filter_forget(back, h) == 1 &&
			    !filter_check(back, h), "capture: the loaded filter "
			    "records and forgets");
		}
		filter_unref(back);
	}
	shape.type = FILTER_TYPE_BLOOM;
	back = filter_open("grows", &shape, dir, err, sizeof(err));
	ok(back == NULL && strstr(err, "its snapshot is of a cuckoo filter, "
	    "the config says type = bloom") != NULL, "capture: a bloom "
	    "filter of that name refuses the file (%s)", err);
	if (back != NULL)
		filter_unref(back);
	for (size_t s = 0; s < n; s++)
		free(saved[s]);
	free(saved);
	free(owners);
	free(out);
	free(big.h);
	free(sample.h);
}

static void
cleanup(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	filter_clock_update();
	test_grow();
	test_copies();
	test_fixed();
	test_capture();
	filter_unref(grown);
	free(kept.h);
	free(forgotten.h);
	ok(filter_memory_used == 0, "every slice released: filter_memory_used "
	    "is 0 (%" PRIu64 ")", filter_memory_used);
	cleanup();
	return done_testing();
}
