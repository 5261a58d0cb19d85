/*
 * test_cuckoo.c - the cuckoo filter: sizing against the Bloom filter's
 * bits per key, the layout and the alternate bucket, adds, lookups and
 * deletes of a million URLs with false-positive rates measured against the
 * target, keys that share a fingerprint, a table filled until it refuses,
 * and determinism.
 *
 * Everything is deterministic (fixed seeds, generated keys), so a failure
 * reproduces.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bloom.h"
#include "cuckoo.h"
#include "tap.h"

#define NKEYS		1000000ULL
#define SEED_A		0x5eedf00dcafe0001ULL

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The i-th URL (as test_bloom's): distinct for distinct i. */
static size_t
gen_url(uint64_t i, char *buf, size_t size)
{
	static const char *const words[] = { "news", "shop", "blog", "item",
	    "video", "search", "archive", "tag", "category", "user" };
	uint64_t s = i, h = splitmix64(&s);
	int n;

	switch (h & 3) {
	case 0:
		n = snprintf(buf, size,
		    "https://host%u.example%u.com/path/%llu/item?id=%016llx",
		    (unsigned)(i % 5000), (unsigned)(i % 37),
		    (unsigned long long)i, (unsigned long long)(h >> 4));
		break;
	case 1:
		n = snprintf(buf, size, "http://www.site%u.org/%s/%llu/x.html",
		    (unsigned)(i % 5000), words[(h >> 8) % 10],
		    (unsigned long long)i);
		break;
	case 2:
		n = snprintf(buf, size,
		    "https://cdn%u.static.net/img/%llu.jpg?w=%u",
		    (unsigned)(i % 37), (unsigned long long)i,
		    100 + (unsigned)(h >> 32) % 1900);
		break;
	default:
		n = snprintf(buf, size, "https://shop%u.example.com/%s/p/%llu",
		    (unsigned)(i % 5000), words[(h >> 12) % 10],
		    (unsigned long long)i);
		break;
	}
	return (size_t)n;
}

static uint64_t
url_hash(const struct cuckoo *c, uint64_t i)
{
	char	 buf[256];
	size_t	 len = gen_url(i, buf, sizeof(buf));

	return cuckoo_hash(c, buf, len);
}

static double
bits_per_key(uint64_t nbuckets, uint32_t f, uint64_t capacity)
{
	return (double)nbuckets * CUCKOO_SLOTS * f / (double)capacity;
}

static void
test_plan_rejects(void)
{
	uint64_t nb = 123;
	uint32_t f = 45;
	int rc;

	ok(cuckoo_plan(0, 0.01, &nb, &f) == -1, "cuckoo_plan rejects "
	    "capacity 0");
	ok(cuckoo_plan(1000, 0.0, &nb, &f) == -1 &&
	    cuckoo_plan(1000, 1.0, &nb, &f) == -1 &&
	    cuckoo_plan(1000, -0.5, &nb, &f) == -1 &&
	    cuckoo_plan(1000, NAN, &nb, &f) == -1 &&
	    cuckoo_plan(1000, INFINITY, &nb, &f) == -1,
	    "cuckoo_plan rejects error rates 0, 1, < 0, NaN, inf");
	ok(cuckoo_plan(1000, 6.7e-5, &nb, &f) == -1 && nb == 123 && f == 45,
	    "cuckoo_plan refuses 6.7e-5 (needs f > 16) and leaves its "
	    "outputs");
	rc = cuckoo_plan(1000, 7e-5, &nb, &f);
	ok(rc == 0 && f == 16 && 1000.0 / ((double)nb * CUCKOO_SLOTS) >=
	    CUCKOO_MIN_LOAD, "cuckoo_plan takes 7e-5 with f = 16 at a lower "
	    "load (f %u, load %.3f)", f, 1000.0 / ((double)nb * CUCKOO_SLOTS));
	ok(cuckoo_plan(4000000000000ULL, 0.01, &nb, &f) == -1,
	    "cuckoo_plan refuses 4e12 keys at 1%% (over 1 TiB)");
}

/*
 * The memory goal: at capacity, no more bits per key than bloom_plan's
 * filter at 0.1 %, at most 5 % more at 1 %. Plans only, nothing mapped.
 */
static void
test_plan_vs_bloom(void)
{
	static const double rates[] = { 0.001, 0.01 };
	uint64_t cap, nb, bnb;
	uint32_t f, k;

	for (size_t r = 0; r < 2; r++) {
		for (cap = 1000; cap <= 100000000ULL; cap *= 10) {
			double ck, bl, fp, load, limit;

			if (cuckoo_plan(cap, rates[r], &nb, &f) != 0 ||
			    bloom_plan(cap, rates[r], &bnb, &k) != 0) {
				ok(0, "plans for %llu keys at %g",
				    (unsigned long long)cap, rates[r]);
				continue;
			}
			ck = bits_per_key(nb, f, cap);
			bl = (double)bnb * BLOOM_BLOCK_BITS / (double)cap;
			fp = cuckoo_fp_rate(nb, f, (double)cap);
			load = (double)cap / ((double)nb * CUCKOO_SLOTS);
			limit = rates[r] < 0.005 ? bl : 1.05 * bl;
			ok(ck <= limit && fp <= rates[r] * CUCKOO_SIZING_MARGIN &&
			    load <= CUCKOO_MAX_LOAD + 1e-12,
			    "%g at %llu keys: cuckoo f=%u load %.4f %.3f "
			    "bits/key (%.3f x bloom's %.3f), expected fp %.6f",
			    rates[r], (unsigned long long)cap, f, load, ck,
			    ck / bl, bl, fp);
		}
	}
}

static void
test_plan_grid(void)
{
	static const uint64_t caps[] = { 1, 2, 10, 1000, 123457, 1000000,
	    100000000 };
	static const double rates[] = { 0.5, 0.1, 0.03, 0.01, 0.001, 1e-4 };
	int bad = 0, tight = 0;

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			uint64_t nb;
			uint32_t f;
			double goal = rates[r] * CUCKOO_SIZING_MARGIN;

			if (cuckoo_plan(caps[c], rates[r], &nb, &f) != 0 ||
			    f < CUCKOO_FP_MIN || f > CUCKOO_FP_MAX ||
			    cuckoo_fp_rate(nb, f, (double)caps[c]) > goal ||
			    (double)caps[c] > CUCKOO_MAX_LOAD *
			    (double)nb * CUCKOO_SLOTS + 1e-9) {
				diag("plan(%llu, %g) bad",
				    (unsigned long long)caps[c], rates[r]);
				bad++;
				continue;
			}
			/* one bucket fewer breaks the rate or the load */
			if (nb > 1 && cuckoo_fp_rate(nb - 1, f,
			    (double)caps[c]) <= goal && (double)caps[c] <=
			    CUCKOO_MAX_LOAD * (double)(nb - 1) * CUCKOO_SLOTS) {
				diag("plan(%llu, %g): %llu buckets would do",
				    (unsigned long long)caps[c], rates[r],
				    (unsigned long long)nb - 1);
				tight++;
			}
		}
	ok(bad == 0, "cuckoo_plan over the capacity x rate grid: f in "
	    "[%d, %d], rate at capacity <= 0.9 x target, load <= %.2f",
	    CUCKOO_FP_MIN, CUCKOO_FP_MAX, CUCKOO_MAX_LOAD);
	ok(tight == 0, "cuckoo_plan takes the fewest buckets for its f");
	ok(cuckoo_fp_rate(1000, 10, 0) == 0 &&
	    cuckoo_fp_rate(1000, 10, 1000) < cuckoo_fp_rate(1000, 10, 2000) &&
	    cuckoo_fp_rate(1000, 10, 2000) > cuckoo_fp_rate(1000, 11, 2000),
	    "cuckoo_fp_rate: 0 empty, up with load, down with f");
}

static void
test_init(void)
{
	struct cuckoo c;
	int rc;

	errno = 0;
	ok(cuckoo_init(&c, 0, 10, 1) == -1 && errno == EINVAL,
	    "cuckoo_init rejects 0 buckets");
	errno = 0;
	ok(cuckoo_init(&c, 10, CUCKOO_FP_MIN - 1, 1) == -1 &&
	    errno == EINVAL && cuckoo_init(&c, 10, 17, 1) == -1 &&
	    errno == EINVAL, "cuckoo_init rejects f out of [%d, %d]",
	    CUCKOO_FP_MIN, CUCKOO_FP_MAX);
	errno = 0;
	ok(cuckoo_init(&c, 1ULL << 40, 16, 1) == -1 && errno == EINVAL,
	    "cuckoo_init rejects a table over 1 TiB");
	rc = cuckoo_create(&c, 1000, 0.01, 7);
	ok(rc == 0 && c.table != NULL &&
	    c.count == 0 && cuckoo_recount(&c) == 0 && c.seed == 7 &&
	    cuckoo_table_bytes(&c) == (c.nbuckets * 4 * c.fpbits + 7) / 8,
	    "cuckoo_create gives an empty table of ceil(4 f nbuckets / 8) "
	    "bytes (%llu buckets, f %u)", (unsigned long long)c.nbuckets,
	    c.fpbits);
	ok(cuckoo_load(&c) == 0 && cuckoo_fp_estimate(&c) == 0 &&
	    !cuckoo_contains(&c, 42) && cuckoo_delete(&c, 42) == 0 &&
	    c.count == 0, "an empty table holds nothing, deletes nothing");
	cuckoo_free(&c);
	ok(c.table == NULL && c.nbuckets == 0, "cuckoo_free clears the "
	    "struct");
	/* a table mapped since c's was freed, most likely where c's was: a
	 * second free of c must leave it (and c) alone */
	{
		static const struct cuckoo	 zero;
		struct cuckoo			 d;
		uint64_t			 held = 0;
		int				 mapped;

		rc = cuckoo_create(&d, 1000, 0.01, 7);
		for (uint64_t k = 1; rc == 0 && k <= 100; k++)
			rc = cuckoo_add(&d, k * 0x9e3779b97f4a7c15ULL);
		cuckoo_free(&c);
		/* unmapped, d's table would fault: msync says so first */
		mapped = rc == 0 && msync(d.table, d.map_bytes, MS_ASYNC) == 0;
		for (uint64_t k = 1; mapped && k <= 100; k++)
			held += (uint64_t)cuckoo_contains(&d,
			    k * 0x9e3779b97f4a7c15ULL);
		ok(mapped && memcmp(&c, &zero, sizeof(c)) == 0 &&
		    held == 100 && d.count == 100 && cuckoo_recount(&d) == 100,
		    "cuckoo_free twice is harmless: the struct stays cleared, "
		    "a table mapped in between keeps its %" PRIu64 " of 100 "
		    "keys (%s)", held, mapped ? "mapped" : "unmapped");
		if (mapped)
			cuckoo_free(&d);
	}
}

/* For every f and odd, even, prime and tiny bucket counts: fp is never 0
 * and covers its range, i1 and alt stay in range, alt is an involution. */
static void
test_index_alt(void)
{
	static const uint64_t ns[] = { 1, 2, 3, 7, 1000, 65537, 999983,
	    1ULL << 20, 26315790 };
	int bad_fp = 0, bad_idx = 0, bad_inv = 0, bad_cover = 0;
	uint64_t s = 99;

	for (uint32_t f = CUCKOO_FP_MIN; f <= CUCKOO_FP_MAX; f++) {
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			struct cuckoo c;
			uint64_t fmax = (1ULL << f) - 1, lo = fmax, hi = 0;

			/* the fields index and alt use; no table needed */
			memset(&c, 0, sizeof(c));
			c.nbuckets = c.per = ns[k];
			c.fpbits = f;
			for (int j = 0; j < 20000; j++) {
				uint64_t h = splitmix64(&s);
				uint64_t fp = cuckoo_fp(&c, h);
				uint64_t i1 = cuckoo_index(&c, h);
				uint64_t i2 = cuckoo_alt(&c, i1, fp);

				bad_fp += fp == 0 || fp > fmax;
				lo = fp < lo ? fp : lo;
				hi = fp > hi ? fp : hi;
				bad_idx += i1 >= ns[k] || i2 >= ns[k];
				bad_inv += cuckoo_alt(&c, i2, fp) != i1;
			}
			/* the extremes of h give the extremes of fp */
			bad_cover += cuckoo_fp(&c, 0) != 1 ||
			    cuckoo_fp(&c, 0xffffffffULL) != fmax;
			bad_cover += f <= 10 && (lo != 1 || hi != fmax);
			bad_idx += cuckoo_index(&c, ~0ULL) != ns[k] - 1;
		}
	}
	ok(bad_fp == 0, "fingerprints are in [1, 2^f - 1], never 0");
	ok(bad_cover == 0, "fingerprints reach 1 and 2^f - 1");
	ok(bad_idx == 0, "i1 and alt stay in [0, nbuckets)");
	ok(bad_inv == 0, "alt(alt(i, fp), fp) == i for f = %d..%d and odd, "
	    "even, prime bucket counts", CUCKOO_FP_MIN, CUCKOO_FP_MAX);
}

/* The documented layout, decoded bit by bit from the bytes. */
static uint64_t
decode_slot(const uint8_t *t, uint32_t f, uint64_t i, unsigned s)
{
	uint64_t bit = (i * CUCKOO_SLOTS + s) * f, v = 0;

	for (uint32_t j = 0; j < f; j++, bit++)
		v |= (uint64_t)((t[bit / 8] >> (bit % 8)) & 1) << j;
	return v;
}

static void
test_layout(void)
{
	int bad = 0, bad_pad = 0, bad_count = 0;

	for (uint32_t f = CUCKOO_FP_MIN; f <= CUCKOO_FP_MAX; f++) {
		struct cuckoo c;
		uint64_t s = f, n = 0;

		/* 37 buckets: odd, so odd f ends mid-byte */
		if (cuckoo_init(&c, 37, f, 3) != 0) {
			ok(0, "cuckoo_init(37, %u)", f);
			return;
		}
		for (int j = 0; j < 130; j++) {
			if (cuckoo_add(&c, splitmix64(&s)) == 0)
				n++;
			if (j % 5 == 4) {
				uint64_t t = f;

				for (int d = 0; d < j / 5; d++)
					splitmix64(&t);
				n -= (uint64_t)cuckoo_delete(&c, splitmix64(&t));
			}
		}
		for (uint64_t i = 0; i < c.nbuckets; i++)
			for (unsigned sl = 0; sl < CUCKOO_SLOTS; sl++)
				bad += cuckoo_get(&c, i, sl) !=
				    decode_slot(c.table, f, i, sl);
		if ((c.nbuckets * 4 * f) % 8 != 0)
			bad_pad += c.table[cuckoo_table_bytes(&c) - 1] >>
			    ((c.nbuckets * 4 * f) % 8) != 0;
		for (uint64_t b = cuckoo_table_bytes(&c); b < c.map_bytes; b++)
			bad_pad += c.table[b] != 0;
		bad_count += c.count != n || cuckoo_recount(&c) != n;
		cuckoo_free(&c);
	}
	ok(bad == 0, "slot s of bucket i is the f bits at (4i + s) f of the "
	    "little-endian bit string, for f = %d..%d", CUCKOO_FP_MIN,
	    CUCKOO_FP_MAX);
	ok(bad_pad == 0, "bits and bytes past the last bucket stay 0");
	ok(bad_count == 0, "count follows adds and deletes; cuckoo_recount "
	    "agrees");
}

/* The bucket of 4 slots at i, read slot by slot. */
static void
read_bucket(const struct cuckoo *c, uint64_t i, uint64_t out[CUCKOO_SLOTS])
{
	for (unsigned s = 0; s < CUCKOO_SLOTS; s++)
		out[s] = cuckoo_get(c, i, s);
}

/*
 * Where an add stores a new key's fingerprint: the first empty slot of its
 * first bucket, else of its second, and nothing else changes (the inlined
 * add ORs the fingerprint in at the lowest empty lane's flag, a shift that
 * is easy to get off by one lane or bit). Both adds are checked, the
 * batches' (cuckoo_test_add_at) and cuckoo_add, with deletes making holes
 * in the middle of buckets, for every f.
 */
static void
test_add_places(void)
{
	int bad = 0, checked = 0;

	for (uint32_t f = CUCKOO_FP_MIN; f <= CUCKOO_FP_MAX; f++) {
		struct cuckoo c;
		uint64_t s = 77 + f, t = 77 + f;

		if (cuckoo_init(&c, 37, f, 5) != 0) {
			ok(0, "cuckoo_init(37, %u)", f);
			return;
		}
		for (int j = 0; j < 140; j++) {
			uint64_t h = splitmix64(&s), b1[4], b2[4], a1[4], a2[4];
			struct cuckoo_at at;
			int r, target = -1, slot = -1;

			cuckoo_locate(&c, h, &at);
			read_bucket(&c, at.i1, b1);
			read_bucket(&c, at.i2, b2);
			for (unsigned k = 0; k < CUCKOO_SLOTS && slot < 0; k++)
				if (b1[k] == 0)
					target = 1, slot = (int)k;
			for (unsigned k = 0; k < CUCKOO_SLOTS && slot < 0; k++)
				if (b2[k] == 0)
					target = 2, slot = (int)k;
			r = j % 2 ? cuckoo_add(&c, h) :
			    cuckoo_test_add_at(&c, &at, h);
			read_bucket(&c, at.i1, a1);
			read_bucket(&c, at.i2, a2);
			if (slot >= 0 && r == 0 && at.i1 != at.i2) {
				uint64_t *want = target == 1 ? b1 : b2;

				want[slot] = at.fp;
				bad += memcmp(a1, b1, sizeof(a1)) != 0 ||
				    memcmp(a2, b2, sizeof(a2)) != 0;
				checked++;
			}
			if (j % 3 == 2)	/* a hole where an older key was */
				cuckoo_delete(&c, splitmix64(&t));
		}
		cuckoo_free(&c);
	}
	ok(bad == 0 && checked > 500, "an add stores the fingerprint in the "
	    "first empty slot of its first bucket, else its second, and "
	    "changes nothing else (%d of %d adds wrong)", bad, checked);
}

/* FP rate of NKEYS fresh URLs (ids from `from`) on. */
static double
measure_fp(const struct cuckoo *c, uint64_t from, uint64_t *pos)
{
	*pos = 0;
	for (uint64_t i = from; i < from + NKEYS; i++)
		*pos += (uint64_t)cuckoo_contains(c, url_hash(c, i));
	return (double)*pos / (double)NKEYS;
}

static double
three_sd(double p, uint64_t n)
{
	return 3 * sqrt(p * (1 - p) / (double)n);
}

/*
 * A million URLs into a filter planned for a million at rate: the false
 * positives of a million fresh URLs at 50 % and 100 %, then half the keys
 * deleted.
 */
static void
test_million(double rate)
{
	struct cuckoo c;
	uint64_t *h, fails = 0, fn = 0, pos, del = 0, left = 0;
	double fp50, fp100, fpdel, exp50, exp100, bl;
	uint64_t bnb;
	uint32_t k;

	if (cuckoo_create(&c, NKEYS, rate, SEED_A) != 0 ||
	    bloom_plan(NKEYS, rate, &bnb, &k) != 0) {
		ok(0, "cuckoo_create(%llu, %g)", NKEYS, rate);
		return;
	}
	bl = (double)bnb * BLOOM_BLOCK_BITS / (double)NKEYS;
	if ((h = malloc(NKEYS * sizeof(*h))) == NULL) {
		ok(0, "malloc");
		cuckoo_free(&c);
		return;
	}
	for (uint64_t i = 0; i < NKEYS; i++)
		h[i] = url_hash(&c, i);
	for (uint64_t i = 0; i < NKEYS / 2; i++)
		fails += (uint64_t)(cuckoo_add(&c, h[i]) != 0);
	fp50 = measure_fp(&c, 10 * NKEYS, &pos);
	exp50 = cuckoo_fp_estimate(&c);
	ok(fp50 <= rate + three_sd(rate, NKEYS) &&
	    fabs(fp50 - exp50) <= 5 * sqrt(exp50 / NKEYS),
	    "%g: fp at 50 %% of capacity %.6f (%llu of %llu fresh URLs) <= "
	    "target + 3 sd, within 5 sd of the estimate %.6f", rate, fp50,
	    (unsigned long long)pos, NKEYS, exp50);
	for (uint64_t i = NKEYS / 2; i < NKEYS; i++)
		fails += (uint64_t)(cuckoo_add(&c, h[i]) != 0);
	ok(fails == 0 && c.count == NKEYS && cuckoo_recount(&c) == NKEYS,
	    "%g: all %llu adds up to capacity succeed (load %.4f, f %u, "
	    "%llu buckets)", rate, NKEYS, cuckoo_load(&c), c.fpbits,
	    (unsigned long long)c.nbuckets);
	diag("%g: %.3f bits/key at capacity (table %llu bytes), bloom %.3f: "
	    "%.3f x", rate, (double)cuckoo_table_bytes(&c) * 8 / NKEYS,
	    (unsigned long long)cuckoo_table_bytes(&c), bl,
	    (double)cuckoo_table_bytes(&c) * 8 / NKEYS / bl);
	for (uint64_t i = 0; i < NKEYS; i++)
		fn += (uint64_t)!cuckoo_contains(&c, h[i]);
	ok(fn == 0, "%g: every added key answers 1 (%llu missing)", rate,
	    (unsigned long long)fn);
	fp100 = measure_fp(&c, 10 * NKEYS, &pos);
	exp100 = cuckoo_fp_estimate(&c);
	ok(fp100 <= rate + three_sd(rate, NKEYS) &&
	    fabs(fp100 - exp100) <= 5 * sqrt(exp100 / NKEYS),
	    "%g: fp at capacity %.6f (%llu of %llu) <= target + 3 sd, "
	    "within 5 sd of the estimate %.6f", rate, fp100,
	    (unsigned long long)pos, NKEYS, exp100);

	/* delete the odd half */
	for (uint64_t i = 1; i < NKEYS; i += 2)
		del += (uint64_t)cuckoo_delete(&c, h[i]);
	ok(del == NKEYS / 2 && c.count == NKEYS / 2 &&
	    cuckoo_recount(&c) == NKEYS / 2,
	    "%g: 500k deletes each remove a copy; count %llu", rate,
	    (unsigned long long)c.count);
	fn = 0;
	for (uint64_t i = 0; i < NKEYS; i += 2)
		fn += (uint64_t)!cuckoo_contains(&c, h[i]);
	ok(fn == 0, "%g: every kept key still answers 1 (%llu missing)",
	    rate, (unsigned long long)fn);
	for (uint64_t i = 1; i < NKEYS; i += 2)
		left += (uint64_t)cuckoo_contains(&c, h[i]);
	fpdel = (double)left / (NKEYS / 2);
	ok(fpdel <= rate + three_sd(rate, NKEYS / 2),
	    "%g: deleted keys answer 1 at %.6f (%llu of %llu, a keeper's "
	    "twin or a false positive) <= target + 3 sd (estimate %.6f)",
	    rate, fpdel, (unsigned long long)left, NKEYS / 2,
	    cuckoo_fp_estimate(&c));
	/* and they can be added back */
	fails = 0;
	for (uint64_t i = 1; i < NKEYS; i += 2)
		fails += (uint64_t)(cuckoo_add(&c, h[i]) != 0);
	fn = 0;
	for (uint64_t i = 0; i < NKEYS; i++)
		fn += (uint64_t)!cuckoo_contains(&c, h[i]);
	ok(fails == 0 && fn == 0 && c.count == NKEYS,
	    "%g: the deleted half added back: all %llu answer 1", rate,
	    NKEYS);
	free(h);
	cuckoo_free(&c);
}

/* A hash whose fingerprint is fp_of's and whose first bucket is bucket. */
static uint64_t
hash_for(const struct cuckoo *c, uint64_t fp_of, uint64_t bucket,
    uint64_t salt)
{
	/* the smallest h with index bucket, plus salt * 2^32 (within the
	 * bucket's 2^64 / n hashes), with fp_of's low 32 bits */
	uint64_t base = (uint64_t)((((unsigned __int128)bucket << 64) +
	    c->nbuckets - 1) / c->nbuckets);

	return ((base + ((salt + 1) << 32)) & ~0xffffffffULL) |
	    (fp_of & 0xffffffffULL);
}

/*
 * Keys sharing a fingerprint: distinct hashes with the same fp whose first
 * bucket is A's first or A's second; a copy of A itself; a key with
 * another fp in A's bucket. Deleting any of them keeps the others.
 */
static void
test_colliding(void)
{
	struct cuckoo c;
	uint64_t s = 1234, a, keys[6], fp, i1, i2;
	int good = 1, built = 1;

	if (cuckoo_init(&c, 1000, 10, 5) != 0) {
		ok(0, "cuckoo_init(1000, 10)");
		return;
	}
	/* a key whose two buckets differ */
	do {
		a = splitmix64(&s);
		fp = cuckoo_fp(&c, a);
		i1 = cuckoo_index(&c, a);
		i2 = cuckoo_alt(&c, i1, fp);
	} while (i1 == i2);
	keys[0] = a;
	keys[1] = hash_for(&c, a, i1, 1);	/* same fp, same i1 */
	keys[2] = hash_for(&c, a, i2, 2);	/* same fp, i1 is A's i2 */
	keys[3] = hash_for(&c, a, i2, 3);
	keys[4] = hash_for(&c, a ^ 0x80000000ULL, i1, 4);	/* another fp, A's bucket */
	keys[5] = hash_for(&c, a, (i1 + 1) % c.nbuckets, 5);
	for (int j = 1; j < 6; j++)
		built &= keys[j] != a;
	built &= cuckoo_fp(&c, keys[1]) == fp && cuckoo_fp(&c, keys[2]) == fp &&
	    cuckoo_fp(&c, keys[3]) == fp && cuckoo_fp(&c, keys[4]) != fp &&
	    cuckoo_fp(&c, keys[5]) == fp;
	built &= cuckoo_index(&c, keys[1]) == i1 &&
	    cuckoo_index(&c, keys[2]) == i2 &&
	    cuckoo_index(&c, keys[3]) == i2 &&
	    cuckoo_index(&c, keys[4]) == i1 &&
	    cuckoo_index(&c, keys[5]) == (i1 + 1) % c.nbuckets &&
	    (i1 + 1) % c.nbuckets != i2;
	ok(built, "constructed keys sharing A's fingerprint and buckets "
	    "(fp %llu, buckets %llu and %llu)", (unsigned long long)fp,
	    (unsigned long long)i1, (unsigned long long)i2);
	/* A twice, then the others: 7 copies of fp in A's two buckets */
	for (int j = 0; j < 6; j++)
		good &= cuckoo_add(&c, keys[j]) == 0;
	good &= cuckoo_add(&c, a) == 0;
	ok(good && c.count == 7, "A twice and five others added");
	good = cuckoo_delete(&c, a) == 1;
	for (int j = 0; j < 6; j++)
		good &= cuckoo_contains(&c, keys[j]);
	ok(good, "deleting one of A's two copies: A and every other key "
	    "still answer 1");
	good = cuckoo_delete(&c, keys[1]) == 1 && cuckoo_delete(&c, keys[2]) ==
	    1;
	good &= cuckoo_contains(&c, a) && cuckoo_contains(&c, keys[3]) &&
	    cuckoo_contains(&c, keys[4]) && cuckoo_contains(&c, keys[5]);
	ok(good, "deleting two keys with A's fp and buckets: A, the third "
	    "and the others still answer 1");
	good = cuckoo_delete(&c, keys[4]) == 1 && !cuckoo_contains(&c, keys[4]);
	good &= cuckoo_contains(&c, a) && cuckoo_contains(&c, keys[3]);
	ok(good, "deleting the key with another fp in A's bucket removes it "
	    "alone");
	good = cuckoo_delete(&c, a) == 1 && cuckoo_contains(&c, keys[3]) &&
	    cuckoo_delete(&c, keys[3]) == 1;
	/* now no copy of fp is left in A's buckets: all of them answer 0 */
	good &= !cuckoo_contains(&c, a) && !cuckoo_contains(&c, keys[1]) &&
	    !cuckoo_contains(&c, keys[2]) && cuckoo_delete(&c, a) == 0;
	good &= cuckoo_contains(&c, keys[5]) && c.count == 1;
	ok(good, "once the last copy in A's buckets is gone they answer 0, "
	    "delete answers 0; the same fp elsewhere stays");
	cuckoo_free(&c);

	/* Eight copies fill the two buckets; a ninth is refused and leaves
	 * the table as it was. */
	if (cuckoo_init(&c, 1000, 10, 5) != 0) {
		ok(0, "cuckoo_init(1000, 10)");
		return;
	}
	good = 1;
	for (int j = 0; j < 8; j++)
		good &= cuckoo_add(&c, a) == 0;
	{
		uint8_t *before = malloc(cuckoo_table_bytes(&c));

		if (before == NULL) {
			ok(0, "malloc");
			cuckoo_free(&c);
			return;
		}
		memcpy(before, c.table, cuckoo_table_bytes(&c));
		good &= cuckoo_add(&c, a) == -1 && c.count == 8 &&
		    memcmp(before, c.table, cuckoo_table_bytes(&c)) == 0;
		free(before);
	}
	for (int j = 0; j < 8; j++)
		good &= cuckoo_delete(&c, a) == 1;
	good &= cuckoo_delete(&c, a) == 0 && !cuckoo_contains(&c, a) &&
	    c.count == 0;
	ok(good, "a key added 8 times fills its 2 buckets, the 9th add is "
	    "-1 with the table unchanged, 8 deletes empty it");
	cuckoo_free(&c);
}

/*
 * A small table with f = 7: many keys share a fingerprint and buckets.
 * Random deletes of held keys never make a kept key answer 0.
 */
static void
test_collision_stress(void)
{
	enum { N = 3700 };	/* load 0.925 of 1000 buckets */
	struct cuckoo c;
	static uint64_t h[N];
	static uint8_t held[N];
	uint64_t s = 77, twins = 0;
	int lost = 0, fails = 0;

	if (cuckoo_init(&c, 1000, 7, 9) != 0) {
		ok(0, "cuckoo_init(1000, 7)");
		return;
	}
	for (int j = 0; j < N; j++) {
		h[j] = splitmix64(&s);
		held[j] = cuckoo_add(&c, h[j]) == 0;
		fails += !held[j];
	}
	for (int j = 0; j < N; j++)
		for (int m = j + 1; m < N; m++)
			if (cuckoo_fp(&c, h[j]) == cuckoo_fp(&c, h[m])) {
				uint64_t a = cuckoo_index(&c, h[j]);
				uint64_t b = cuckoo_index(&c, h[m]);

				twins += a == b || b == cuckoo_alt(&c, a,
				    cuckoo_fp(&c, h[j]));
			}
	for (int round = 0; round < 20; round++) {
		/* delete a random tenth of what is held, re-add some */
		for (int j = 0; j < N; j++) {
			uint64_t r = splitmix64(&s);

			if (held[j] && r % 10 == 0) {
				lost += cuckoo_delete(&c, h[j]) != 1;
				held[j] = 0;
			} else if (!held[j] && r % 3 == 0)
				held[j] = cuckoo_add(&c, h[j]) == 0;
		}
		for (int j = 0; j < N; j++)
			lost += held[j] && !cuckoo_contains(&c, h[j]);
	}
	ok(fails == 0 && twins > 0 && lost == 0 &&
	    c.count == cuckoo_recount(&c),
	    "f = 7, load 0.925: %llu pairs of keys share fp and buckets; 20 "
	    "rounds of deletes and re-adds never lose a held key",
	    (unsigned long long)twins);
	cuckoo_free(&c);
}

/*
 * Adds until the table refuses: each refused add leaves the bytes and
 * count as they were, and every key added before still answers 1.
 */
static void
test_full(void)
{
	struct cuckoo c;
	uint64_t s = 4242, *h, n = 0, refused = 0, changed = 0;
	uint64_t first_fail = 0, cap;
	uint8_t *before;
	int fn = 0;

	if (cuckoo_init(&c, 10007, 12, 11) != 0) {
		ok(0, "cuckoo_init(10007, 12)");
		return;
	}
	cap = cuckoo_slots(&c);
	h = malloc(cap * sizeof(*h));
	before = malloc(cuckoo_table_bytes(&c));
	if (h == NULL || before == NULL) {
		ok(0, "malloc");
		free(h);
		free(before);
		cuckoo_free(&c);
		return;
	}
	/* go on past the first refusal: until 200 refusals */
	while (refused < 200 && n < cap) {
		uint64_t k = splitmix64(&s), count = c.count;

		if (n >= 0.9 * (double)cap)	/* no refusal before */
			memcpy(before, c.table, cuckoo_table_bytes(&c));
		if (cuckoo_add(&c, k) == 0) {
			h[n++] = k;
			continue;
		}
		if (refused++ == 0)
			first_fail = n;
		if (n < 0.9 * (double)cap)
			changed++;
		changed += c.count != count ||
		    memcmp(before, c.table, cuckoo_table_bytes(&c)) != 0;
	}
	for (uint64_t i = 0; i < n; i++)
		fn += !cuckoo_contains(&c, h[i]);
	ok(refused == 200 && changed == 0,
	    "%llu refused adds (the first at load %.4f, the last at %.4f) "
	    "leave the table's bytes and count unchanged",
	    (unsigned long long)refused, (double)first_fail / (double)cap,
	    cuckoo_load(&c));
	ok(first_fail >= CUCKOO_MAX_LOAD * (double)cap,
	    "the first refusal comes above the planned load %.2f",
	    CUCKOO_MAX_LOAD);
	ok(fn == 0 && c.count == n && cuckoo_recount(&c) == n,
	    "all %llu keys added before answer 1; count == adds that "
	    "answered 0", (unsigned long long)n);
	free(h);
	free(before);
	cuckoo_free(&c);
}

/* Same keys, same order (with kicks, deletes and refusals): same bytes. */
static void
test_deterministic(void)
{
	struct cuckoo a, b;
	int same;

	if (cuckoo_create(&a, 50000, 0.01, 1) != 0 ||
	    cuckoo_create(&b, 50000, 0.01, 1) != 0) {
		ok(0, "cuckoo_create(50000, 0.01)");
		return;
	}
	for (int t = 0; t < 2; t++) {
		struct cuckoo *c = t ? &b : &a;
		uint64_t s = 31337;

		for (int j = 0; j < 56000; j++) {
			(void)cuckoo_add(c, splitmix64(&s));
			if (j % 7 == 6) {
				uint64_t d = 31337;

				for (int m = 0; m < j / 3; m++)
					splitmix64(&d);
				(void)cuckoo_delete(c, splitmix64(&d));
			}
		}
	}
	same = a.count == b.count &&
	    cuckoo_table_bytes(&a) == cuckoo_table_bytes(&b) &&
	    memcmp(a.table, b.table, cuckoo_table_bytes(&a)) == 0;
	ok(same && a.count > 45000, "two tables fed the same adds and "
	    "deletes (load %.3f) have the same bytes", cuckoo_load(&a));
	cuckoo_free(&a);
	cuckoo_free(&b);
}

/*
 * Copy-on-write (cuckoo_cow_*): a table of many 64 KiB chunks is copied
 * in small steps while keys are added (kicks) and deleted; whole, the
 * copy is byte for byte the table when the copy started, its count
 * too, and the table itself went on changing.
 */
static void
test_cow(void)
{
	struct cuckoo	 c, d, e;
	uint64_t	 s = 99, t, n = 0, len, steps = 0;
	unsigned char	*at_start;
	int		 whole = 0, changed;

	if (cuckoo_create(&c, 600000, 0.001, 5) == -1 ||
	    cuckoo_init(&d, c.nbuckets, c.fpbits, 5) == -1 ||
	    cuckoo_init(&e, c.nbuckets, c.fpbits, 5) == -1)
		exit(2);
	len = cuckoo_table_bytes(&c);
	for (uint64_t i = 0; i < 400000; i++)
		n += cuckoo_add(&c, splitmix64(&s)) == 0;
	if ((at_start = malloc(len)) == NULL)
		exit(2);
	memcpy(at_start, c.table, len);
	ok(len > 16 * 65536 && cuckoo_cow_start(&c, &d) == 0 && c.cow != NULL,
	    "cow: a copy of %" PRIu64 " bytes starts", len);
	ok(cuckoo_cow_start(&c, &e) == -1 && cuckoo_cow_is(&c, &d) &&
	    !cuckoo_cow_is(&c, &e), "cow: one copy of a table at a time");
	/* a step copies at least one chunk: three leave most to do */
	for (; steps < 3; steps++)
		whole |= cuckoo_cow_step(&c, 4096);
	ok(!whole && c.cow != NULL, "cow: not whole after %" PRIu64 " steps "
	    "of one chunk", steps);
	/* changes anywhere copy their chunks first; random ones soon
	 * touch every chunk, which ends the copy by itself */
	t = 5;
	for (uint64_t i = 0; i < 150000; i++) {
		(void)cuckoo_add(&c, splitmix64(&s));
		if (i % 3 == 0)
			(void)cuckoo_delete(&c, splitmix64(&t));
		if (i % 2000 == 0)
			(void)cuckoo_cow_step(&c, 4096);
	}
	cuckoo_cow_finish(&c);
	changed = memcmp(c.table, at_start, len) != 0;
	ok(c.cow == NULL && memcmp(d.table, at_start, len) == 0 &&
	    d.count == n && cuckoo_recount(&d) == n && changed, "cow: the copy "
	    "is the table as it was at the start (%" PRIu64 " fingerprints); "
	    "the table changed on", n);
	/* a copy cancelled half way leaves the table copying nothing */
	ok(cuckoo_cow_start(&c, &e) == 0 && cuckoo_cow_step(&c, 65536) == 0,
	    "cow: a second copy starts once the first is whole");
	cuckoo_cow_cancel(&c);
	(void)cuckoo_add(&c, splitmix64(&s));
	ok(c.cow == NULL, "cow: cancelled, changes copy nothing");
	free(at_start);
	cuckoo_free(&c);
	cuckoo_free(&d);
	cuckoo_free(&e);
}

/* A key of range r: h with r in its top CUCKOO_RANGE_BITS. */
static uint64_t
ranged(uint64_t h, unsigned r)
{
	return (uint64_t)r << (64 - CUCKOO_RANGE_BITS) |
	    (h & (UINT64_MAX >> CUCKOO_RANGE_BITS));
}

/*
 * A table in ranges: every key's two buckets and every fingerprint the
 * kicks move stay in the key's range; ranges are counted, cleared and
 * replaced alone; the plan leaves room for the fullest range.
 */
static void
test_ranges(void)
{
	struct cuckoo	 c, d;
	uint64_t	 nb, s = 7, per, held = 0, in3 = 0;
	uint32_t	 f;
	int		 bad_range = 0, bad_inv = 0, lost = 0, refused = 0;
	unsigned char	*copy;

	nb = 0;
	f = 0;
	ok(cuckoo_plan_ranges(1000000, 0.001, &nb, &f) == 0, "a ranged plan");
	ok(nb % (2 * CUCKOO_RANGES) == 0 && nb >= 1000000 / 0.95 / 4,
	    "%llu buckets, an even number a range",  (unsigned long long)nb);
	ok(cuckoo_init_ranges(&c, 3 * CUCKOO_RANGES, 12, 1, CUCKOO_RANGES) ==
	    -1 && errno == EINVAL, "an odd number of buckets a range is "
	    "refused");
	ok(cuckoo_init_ranges(&c, nb, f, SEED_A, CUCKOO_RANGES) == 0 &&
	    cuckoo_ranged(&c) && c.per == nb / CUCKOO_RANGES, "init in ranges");
	per = c.per;
	for (int j = 0; j < 20000; j++) {
		uint64_t h = ranged(splitmix64(&s), (unsigned)(j % 97) * 131);
		unsigned r = (unsigned)(h >> (64 - CUCKOO_RANGE_BITS));
		uint64_t fp = cuckoo_fp(&c, h), i1 = cuckoo_index(&c, h);
		uint64_t i2 = cuckoo_alt(&c, i1, fp);

		bad_range += i1 / per != r || i2 / per != r;
		bad_inv += cuckoo_alt(&c, i2, fp) != i1;
	}
	ok(bad_range == 0, "both buckets of a key are in its range");
	ok(bad_inv == 0, "alt is an involution within a range");
	/* the capacity the plan was made for, keys in random ranges (as
	 * slots fall), all held; range 3's keys are found by range 3 alone */
	s = 11;
	for (uint64_t j = 0; j < 1000000; j++) {
		uint64_t h = splitmix64(&s);

		if (cuckoo_add(&c, h) == -1)
			refused++;
		else
			held++;
		in3 += h >> (64 - CUCKOO_RANGE_BITS) == 3;
	}
	ok(refused == 0, "the planned capacity in random ranges is taken (%d "
	    "refused)", refused);
	s = 11;
	for (uint64_t j = 0; j < 1000000; j++)
		lost += !cuckoo_contains(&c, splitmix64(&s));
	ok(lost == 0, "every key is held");
	ok(cuckoo_range_count(&c, 0, CUCKOO_RANGES) == c.count &&
	    c.count == held, "the ranges' fingerprints are the count");
	ok(cuckoo_range_count(&c, 3, 1) == in3, "range 3 holds its %llu keys",
	    (unsigned long long)in3);
	/* range 3 copied out, cleared, then put back */
	copy = malloc(cuckoo_range_bytes(&c));
	memcpy(copy, cuckoo_table(&c) + 3 * cuckoo_range_bytes(&c),
	    cuckoo_range_bytes(&c));
	cuckoo_range_clear(&c, 3, 1);
	lost = 0;
	s = 11;
	for (uint64_t j = 0; j < 1000000; j++) {
		uint64_t h = splitmix64(&s);

		if (!cuckoo_contains(&c, h))
			lost += h >> (64 - CUCKOO_RANGE_BITS) == 3 ? 1 : 1000;
	}
	ok(c.count == held - in3 && cuckoo_range_count(&c, 3, 1) == 0 &&
	    lost == (int)in3, "range 3 cleared: its keys alone are gone");
	/* into another table of the shape: the range and its keys */
	ok(cuckoo_init_ranges(&d, nb, f, SEED_A, CUCKOO_RANGES) == 0,
	    "a second table");
	cuckoo_range_set(&d, 3, 1, copy);
	cuckoo_range_set(&c, 3, 1, copy);
	lost = 0;
	s = 11;
	for (uint64_t j = 0; j < 1000000; j++) {
		uint64_t h = splitmix64(&s);

		if (h >> (64 - CUCKOO_RANGE_BITS) == 3)
			lost += !cuckoo_contains(&d, h) + !cuckoo_contains(&c, h);
	}
	ok(lost == 0 && d.count == in3 && c.count == held, "range 3 set in "
	    "another table holds its keys; set back, the count is whole");
	/* replaced by an empty range: the count follows */
	memset(copy, 0, cuckoo_range_bytes(&c));
	cuckoo_range_set(&d, 3, 1, copy);
	ok(d.count == 0, "a range replaced by an empty one counts nothing");
	free(copy);
	cuckoo_free(&d);
	cuckoo_free(&c);
}

int
main(void)
{
	test_plan_rejects();
	test_plan_vs_bloom();
	test_plan_grid();
	test_init();
	test_index_alt();
	test_layout();
	test_add_places();
	test_colliding();
	test_collision_stress();
	test_full();
	test_deterministic();
	test_million(0.01);
	test_million(0.001);
	test_cow();
	test_ranges();
	return done_testing();
}
