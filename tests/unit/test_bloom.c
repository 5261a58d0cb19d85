/*
 * test_bloom.c - the split-block Bloom filter: sizing (bloom_plan,
 * bloom_fp_rate), the per-key operations, and the false-positive rate
 * measured on a million generated URLs against the target.
 *
 * Everything is deterministic (fixed seeds, generated keys), so a failure
 * reproduces. SEEND_TEST_SLOW=1 adds the cases that take tens of seconds.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bloom.h"
#include "tap.h"

#define NKEYS		1000000ULL
#define SEED_A		0x5eedf00dcafe0001ULL
#define SEED_B		0x5eedf00dcafe0002ULL

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t
mix(uint64_t x)
{
	return splitmix64(&x);
}

/*
 * The i-th URL. Four shapes, picked by a hash of i, with hosts, paths and
 * query strings that vary in length; every shape has a distinct host prefix
 * and carries i as a delimited decimal path component, so two different i
 * never give the same string and the inserted set [0, N) and the query set
 * [N, 2N) are disjoint by construction.
 */
static size_t
gen_url(uint64_t i, char *buf, size_t size)
{
	static const char *const words[] = { "news", "shop", "blog", "item",
	    "video", "search", "archive", "tag", "category", "user" };
	uint64_t h = mix(i);
	unsigned host = (unsigned)(i % 5000), dom = (unsigned)(i % 37);
	const char *w = words[(h >> 8) % 10];
	int n;

	switch (h & 3) {
	case 0:
		n = snprintf(buf, size,
		    "https://host%u.example%u.com/path/%llu/item?id=%016llx",
		    host, dom, (unsigned long long)i,
		    (unsigned long long)(h >> 4));
		break;
	case 1:
		n = snprintf(buf, size,
		    "http://www.site%u.org/%s/%llu/%s-%llx.html",
		    host, w, (unsigned long long)i, words[(h >> 16) % 10],
		    (unsigned long long)(h >> 40));
		break;
	case 2:
		n = snprintf(buf, size,
		    "https://cdn%u.static%u.net/img/%02x/%llu.jpg?w=%u&h=%u",
		    dom, host, (unsigned)(h >> 24) & 0xff,
		    (unsigned long long)i, 100 + (unsigned)(h >> 32) % 1900,
		    100 + (unsigned)(h >> 48) % 1900);
		break;
	default:
		n = snprintf(buf, size,
		    "https://shop%u.example%u.com/%s/p/%llu?ref=%llx"
		    "&utm_source=%s&page=%u",
		    host, dom, w, (unsigned long long)i,
		    (unsigned long long)(h >> 20), words[(h >> 12) % 10],
		    (unsigned)(h >> 56));
		break;
	}
	return (size_t)n;
}

static uint64_t
url_hash(const struct bloom *b, uint64_t i)
{
	char	 buf[256];
	size_t	 len = gen_url(i, buf, sizeof(buf));

	return bloom_hash(b, buf, len);
}

static void
test_plan_rejects(void)
{
	uint64_t nb = 12345;
	uint32_t k = 77;

	ok(bloom_plan(0, 0.01, &nb, &k) == -1, "bloom_plan rejects capacity 0");
	ok(bloom_plan(1000, 0.0, &nb, &k) == -1,
	    "bloom_plan rejects error_rate 0");
	ok(bloom_plan(1000, 1.0, &nb, &k) == -1,
	    "bloom_plan rejects error_rate 1");
	ok(bloom_plan(1000, 1.5, &nb, &k) == -1,
	    "bloom_plan rejects error_rate > 1");
	ok(bloom_plan(1000, -0.01, &nb, &k) == -1,
	    "bloom_plan rejects a negative error_rate");
	ok(bloom_plan(1000, NAN, &nb, &k) == -1,
	    "bloom_plan rejects error_rate NaN");
	ok(bloom_plan(1000, INFINITY, &nb, &k) == -1,
	    "bloom_plan rejects error_rate +inf");
	/* 1e6 keys at 1e-30: even k = 16 with one key per block gives
	 * (1/32)^16 ~ 9e-25, so the blocks must be mostly empty: ~1e12
	 * blocks, 64 TB. The size cap, reached quickly. */
	ok(bloom_plan(1000000, 1e-30, &nb, &k) == -1,
	    "bloom_plan rejects 1e6 keys at 1e-30 (needs > 1 TiB)");
	if (getenv("SEEND_TEST_SLOW") != NULL)
		/* ~16 s: bloom_fp_rate is summed over ~sqrt(capacity) Poisson
		 * terms for every candidate size, starting at one block. */
		ok(bloom_plan(1000000000000ULL, 1e-9, &nb, &k) == -1,
		    "bloom_plan rejects 1e12 keys at 1e-9 (needs > 1 TiB)");
	else
		ok(1, "bloom_plan rejects 1e12 keys at 1e-9 "
		    "# SKIP takes ~16 s; set SEEND_TEST_SLOW=1");
}

static void
test_plan_feasible(void)
{
	uint64_t nb = 0;
	uint32_t k = 0;
	int rc;

	rc = bloom_plan(1, 0.5, &nb, &k);
	ok(rc == 0 && nb == 1 && (k == 4 || k == 8 || k == 16),
	    "bloom_plan(1, 0.5) gives one block (nblocks=%llu k=%u)",
	    (unsigned long long)nb, k);
	nb = 0, k = 0;
	rc = bloom_plan(1000000000ULL, 1e-6, &nb, &k);
	ok(rc == 0 && nb > 0 &&
	    (k == 4 || k == 8 || k == 16) &&
	    nb * BLOOM_BLOCK_BYTES <= BLOOM_MAX_BYTES,
	    "bloom_plan(1e9, 1e-6) gives a shape (nblocks=%llu k=%u, "
	    "%.2f GiB, %.2f bits/key)", (unsigned long long)nb, k,
	    (double)nb * BLOOM_BLOCK_BYTES / (1 << 30),
	    (double)nb * BLOOM_BLOCK_BITS / 1e9);
}

/* For each (capacity, rate): the plan's expected rate at capacity is within
 * the sizing margin, one block fewer would not be (the plan is the
 * smallest for its k), and the rate grows with n. */
static void
test_fp_rate_grid(void)
{
	static const uint64_t caps[] = { 1, 2, 10, 1000, 100000, 1000000,
	    10000000, 100000000 };
	static const double rates[] = { 0.5, 0.1, 0.01, 0.001, 1e-4, 1e-6,
	    1e-9 };
	int bad_bound = 0, bad_tight = 0, bad_mono = 0, bad_plan = 0;

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			uint64_t nb, cap = caps[c], n = 0;
			uint32_t k;
			double goal = rates[r] * BLOOM_SIZING_MARGIN, fp, prev;

			if (bloom_plan(cap, rates[r], &nb, &k) != 0) {
				diag("bloom_plan(%llu, %g) failed",
				    (unsigned long long)cap, rates[r]);
				bad_plan++;
				continue;
			}
			fp = bloom_fp_rate(nb, k, cap);
			if (!(fp <= goal * (1 + 1e-12))) {
				diag("capacity %llu rate %g: nblocks %llu k %u "
				    "fp %.6g > %.6g", (unsigned long long)cap,
				    rates[r], (unsigned long long)nb, k, fp,
				    goal);
				bad_bound++;
			}
			if (nb > 1 && !(bloom_fp_rate(nb - 1, k, cap) > goal)) {
				diag("capacity %llu rate %g: nblocks %llu - 1 "
				    "would do", (unsigned long long)cap,
				    rates[r], (unsigned long long)nb);
				bad_tight++;
			}
			prev = bloom_fp_rate(nb, k, 0);
			if (prev != 0)
				bad_mono++;
			/* 40 steps to 2 x capacity, at least one key each */
			for (int s = 1; s <= 40; s++) {
				if (cap * (uint64_t)s / 20 > n)
					n = cap * (uint64_t)s / 20;
				else
					n++;
				fp = bloom_fp_rate(nb, k, n);
				if (!(fp > prev) && !(fp == 1 && prev == 1)) {
					diag("capacity %llu rate %g: fp(%llu) "
					    "= %.6g not above %.6g",
					    (unsigned long long)cap, rates[r],
					    (unsigned long long)n, fp, prev);
					bad_mono++;
				}
				prev = fp;
			}
		}
	}
	ok(bad_plan == 0, "bloom_plan succeeds over the capacity x rate grid");
	ok(bad_bound == 0,
	    "bloom_fp_rate(plan, capacity) <= error_rate * 0.9 over the grid");
	ok(bad_tight == 0,
	    "bloom_plan picks the fewest blocks for its k over the grid");
	ok(bad_mono == 0,
	    "bloom_fp_rate is 0 at n = 0 and increasing in n up to 2 x "
	    "capacity over the grid");
	ok(bloom_fp_rate(1000, 8, 100000) > bloom_fp_rate(2000, 8, 100000) &&
	    bloom_fp_rate(2000, 8, 100000) > bloom_fp_rate(4000, 8, 100000),
	    "bloom_fp_rate decreases as blocks are added");
}

static void
test_init_rejects(void)
{
	struct bloom b;

	errno = 0;
	ok(bloom_init(&b, 0, 8, 1) == -1 && errno == EINVAL,
	    "bloom_init rejects 0 blocks with EINVAL");
	errno = 0;
	ok(bloom_init(&b, 16, 7, 1) == -1 && errno == EINVAL,
	    "bloom_init rejects k = 7 with EINVAL");
	errno = 0;
	ok(bloom_init(&b, 16, 32, 1) == -1 && errno == EINVAL,
	    "bloom_init rejects k = 32 with EINVAL");
	errno = 0;
	ok(bloom_init(&b, BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES + 1, 8, 1) ==
	    -1 && errno == EINVAL, "bloom_init rejects more than 1 TiB");
	errno = 0;
	ok(bloom_create(&b, 0, 0.01, 1) == -1 && errno == EINVAL,
	    "bloom_create rejects capacity 0 with EINVAL");
	ok(bloom_create(&b, 100, 0.01, 1) == 0 && b.words != NULL &&
	    b.count == 0 && b.bits_set == 0 && bloom_popcount(&b) == 0 &&
	    ((uintptr_t)b.words & (BLOOM_BLOCK_BYTES - 1)) == 0,
	    "bloom_create gives an empty, 64-byte aligned filter");
	bloom_free(&b);
	ok(b.words == NULL && b.nblocks == 0, "bloom_free clears the struct");
	bloom_free(&b);
	ok(1, "bloom_free twice is harmless");
}

/* Every k: bloom_masks sets exactly one bit in each of the k segments. */
static void
test_masks(void)
{
	static const uint32_t ks[] = { 4, 8, 16 };

	for (size_t i = 0; i < 3; i++) {
		struct bloom b;
		uint64_t s = 42, mask[BLOOM_BLOCK_WORDS];
		uint32_t k = ks[i], segbits = BLOOM_BLOCK_BITS / k;
		int bad = 0;
		uint64_t hit[BLOOM_BLOCK_WORDS] = { 0 };

		if (bloom_init(&b, 1, k, 1) != 0) {
			ok(0, "bloom_init(1, %u)", k);
			continue;
		}
		for (int t = 0; t < 100000; t++) {
			bloom_masks(&b, splitmix64(&s), mask);
			for (uint32_t seg = 0; seg < k; seg++) {
				int n = 0;

				for (uint32_t j = 0; j < segbits; j++) {
					uint32_t pos = seg * segbits + j;

					n += (int)(mask[pos >> 6] >>
					    (pos & 63) & 1);
				}
				bad += n != 1;
			}
			for (int w = 0; w < BLOOM_BLOCK_WORDS; w++)
				hit[w] |= mask[w];
		}
		ok(bad == 0, "k=%u: each key sets exactly one bit per segment",
		    k);
		int all = 1;
		for (int w = 0; w < BLOOM_BLOCK_WORDS; w++)
			all &= hit[w] == ~0ULL;
		ok(all, "k=%u: 100000 keys reach every bit of the block", k);
		bloom_free(&b);
	}
}

/*
 * Every k: bits_set, which bloom_add counts without a popcount, is the
 * number of 1 bits, from empty to nearly full (where most keys find some
 * of their bits already set); and a key's second add changes nothing.
 */
static void
test_bits_set_every_k(void)
{
	static const uint32_t ks[] = { 4, 8, 16 };

	for (size_t i = 0; i < 3; i++) {
		struct bloom	 b;
		uint64_t	 s = 7, h, before;
		uint32_t	 k = ks[i];
		int		 good = 1;

		if (bloom_init(&b, 4, k, 1) != 0) {
			ok(0, "bloom_init(4, %u)", k);
			continue;
		}
		for (int t = 0; t < 3000; t++) {
			h = splitmix64(&s);
			bloom_add(&b, h);
			if (t % 100 == 0)
				good &= b.bits_set == bloom_popcount(&b);
			before = b.bits_set;
			good &= bloom_add(&b, h) == 1 && b.bits_set == before;
		}
		ok(good && b.bits_set == bloom_popcount(&b),
		    "k=%u: bits_set == popcount while 4 blocks fill (%llu of "
		    "2048 bits)", k, (unsigned long long)b.bits_set);
		bloom_free(&b);
	}
}

/* Block choice is uniform, for a block count that is not a power of 2. */
static void
test_block_uniform(void)
{
	struct bloom b;
	enum { NB = 1000, DRAWS = 1000000 };
	static uint32_t cnt[NB];
	uint64_t s = 7;
	double chi2 = 0, e = (double)DRAWS / NB;
	int range = 1;

	if (bloom_init(&b, NB, 8, 1) != 0) {
		ok(0, "bloom_init(%d, 8)", NB);
		return;
	}
	for (int i = 0; i < DRAWS; i++) {
		uint64_t off = (uint64_t)(bloom_block(&b, splitmix64(&s)) -
		    b.words) / BLOOM_BLOCK_WORDS;

		if (off >= NB)
			range = 0;
		else
			cnt[off]++;
	}
	for (int i = 0; i < NB; i++)
		chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
	ok(range, "bloom_block stays within nblocks");
	/* 999 degrees of freedom: mean 999, sd ~45 */
	ok(chi2 < 999 + 6 * 45, "bloom_block is uniform over 1000 blocks "
	    "(chi2 %.1f, 999 dof)", chi2);
	bloom_free(&b);
}

/* Insert 1M URLs, check them, query 1M others, for one target rate. */
static void
test_measured(double rate)
{
	struct bloom b;
	uint64_t *h, fp_insert = 0, fn = 0, readd = 0, pos = 0, count;
	double measured, expected, sd;

	if (bloom_create(&b, NKEYS, rate, SEED_A) != 0) {
		ok(0, "bloom_create(%llu, %g)", NKEYS, rate);
		return;
	}
	h = malloc(NKEYS * sizeof(*h));
	if (h == NULL) {
		ok(0, "malloc");
		bloom_free(&b);
		return;
	}
	for (uint64_t i = 0; i < NKEYS; i++) {
		h[i] = url_hash(&b, i);
		fp_insert += (uint64_t)bloom_add(&b, h[i]);
	}
	count = b.count;
	ok(count + fp_insert == NKEYS,
	    "target %g: first add answers 0 for each new key but false "
	    "positives (count %llu + fp-on-insert %llu == %llu)", rate,
	    (unsigned long long)count, (unsigned long long)fp_insert, NKEYS);
	for (uint64_t i = 0; i < NKEYS; i++)
		fn += (uint64_t)!bloom_check(&b, h[i]);
	ok(fn == 0, "target %g: no false negatives: bloom_check is 1 for all "
	    "%llu inserted keys (%llu missing)", rate, NKEYS,
	    (unsigned long long)fn);
	for (uint64_t i = 0; i < NKEYS; i++)
		readd += (uint64_t)bloom_add(&b, h[i]);
	ok(readd == NKEYS && b.count == count,
	    "target %g: a second bloom_add answers 1 for every inserted key "
	    "and leaves count alone", rate);
	ok(b.bits_set == bloom_popcount(&b),
	    "target %g: bits_set equals bloom_popcount", rate);
	for (uint64_t i = NKEYS; i < 2 * NKEYS; i++)
		pos += (uint64_t)bloom_check(&b, url_hash(&b, i));
	measured = (double)pos / (double)NKEYS;
	/* the false positives on insert are in the filter too: they just
	 * found their bits already set */
	expected = bloom_fp_rate(b.nblocks, b.hashes, NKEYS);
	sd = sqrt(expected * (1 - expected) / (double)NKEYS);
	diag("target %g: nblocks %llu, k %u, %.3f bits/key, %.2f MiB; "
	    "measured fp %.6f (%llu / %llu), expected %.6f, fp-on-insert %llu",
	    rate, (unsigned long long)b.nblocks, b.hashes,
	    (double)bloom_bytes(&b) * 8 / (double)NKEYS,
	    (double)bloom_bytes(&b) / (1 << 20), measured,
	    (unsigned long long)pos, NKEYS, expected,
	    (unsigned long long)fp_insert);
	ok(measured <= rate, "target %g: measured fp rate %.6f on %llu "
	    "fresh URLs is <= target", rate, measured, NKEYS);
	ok(fabs(measured - expected) <= 5 * sd + 1e-9,
	    "target %g: measured fp rate %.6f within 5 sd of bloom_fp_rate "
	    "%.6f", rate, measured, expected);
	free(h);
	bloom_free(&b);
}

static void
test_add_semantics(void)
{
	struct bloom b;
	const char *keys[] = { "https://a.example/", "https://b.example/x",
	    "https://a.example/", "", "https://b.example/x", "x" };
	int want[] = { 0, 0, 1, 0, 1, 0 };
	int good = 1;
	uint64_t count = 0;

	if (bloom_create(&b, 1000, 0.001, SEED_A) != 0) {
		ok(0, "bloom_create(1000, 0.001)");
		return;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		uint64_t h = bloom_hash(&b, keys[i], strlen(keys[i]));
		uint64_t before = b.bits_set;
		int r = bloom_add(&b, h);

		good &= r == want[i];
		count += r == 0;
		good &= b.count == count;
		good &= r == 1 ? b.bits_set == before :
		    b.bits_set > before && b.bits_set <= before + b.hashes;
	}
	ok(good, "bloom_add answers 1 only for repeated keys; count and "
	    "bits_set grow only on new keys");
	ok(b.count == 4 && b.bits_set == bloom_popcount(&b),
	    "count is the number of distinct keys, bits_set == popcount");
	for (int i = 0; i < 1000; i++) {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "k%d", i % 100);
		uint64_t before = b.count;
		int r = bloom_add(&b, bloom_hash(&b, buf, (size_t)n));

		good &= (b.count == before + (r == 0));
		good &= i < 100 || r == 1;
	}
	ok(good, "1000 adds of 100 keys: repeats answer 1, count grows only "
	    "on 0 answers");
	ok(b.bits_set == bloom_popcount(&b),
	    "bits_set equals bloom_popcount after repeats");
	bloom_free(&b);
}

static void
test_seeds(void)
{
	struct bloom a, b;
	const char *key = "https://host1.example1.com/path/1/item?id=1";
	int same_hash = 0, same_place = 0, differ = 0, same_bits;

	if (bloom_init(&a, 1 << 16, 8, SEED_A) != 0 ||
	    bloom_init(&b, 1 << 16, 8, SEED_B) != 0) {
		ok(0, "bloom_init");
		return;
	}
	ok(bloom_hash(&a, key, strlen(key)) != bloom_hash(&b, key, strlen(key)),
	    "the same key hashes differently under two seeds");
	for (uint64_t i = 0; i < 10000; i++) {
		uint64_t ha = url_hash(&a, i), hb = url_hash(&b, i);

		same_hash += ha == hb;
		same_place += bloom_block(&a, ha) - a.words ==
		    bloom_block(&b, hb) - b.words;
		(void)bloom_add(&a, ha);
		(void)bloom_add(&b, hb);
	}
	ok(same_hash == 0, "10000 keys: no hash is the same under both seeds");
	/* 1 in 65536 per key by chance */
	ok(same_place < 10, "10000 keys: %d land in the same block under both "
	    "seeds", same_place);
	ok(memcmp(a.words, b.words, bloom_bytes(&a)) != 0,
	    "the same keys under two seeds set different bits");
	for (uint64_t i = 10000; i < 20000; i++)
		differ += bloom_check(&a, url_hash(&a, i)) !=
		    bloom_check(&b, url_hash(&b, i));
	/* both hold 10000 keys in 65536 blocks: fp ~1e-14, so no answer
	 * on fresh keys should differ */
	ok(differ == 0, "two seeds, same keys: fresh keys answer alike "
	    "(%d differ)", differ);
	bloom_free(&b);
	/* and the same seed is reproducible */
	if (bloom_init(&b, 1 << 16, 8, SEED_A) != 0) {
		ok(0, "bloom_init");
		bloom_free(&a);
		return;
	}
	for (uint64_t i = 0; i < 10000; i++)
		(void)bloom_add(&b, url_hash(&b, i));
	same_bits = memcmp(a.words, b.words, bloom_bytes(&a)) == 0;
	ok(same_bits && a.count == b.count && a.bits_set == b.bits_set,
	    "the same keys under the same seed give the same filter");
	bloom_free(&a);
	bloom_free(&b);
}

static void
test_tiny(void)
{
	struct bloom b;
	uint64_t h, fn = 0, pos = 0;

	if (bloom_create(&b, 1, 0.01, SEED_A) != 0) {
		ok(0, "bloom_create(1, 0.01)");
		return;
	}
	ok(b.nblocks == 1, "capacity 1: one block (k=%u)", b.hashes);
	h = bloom_hash(&b, "only", 4);
	ok(bloom_check(&b, h) == 0, "capacity 1: empty filter answers 0");
	ok(bloom_add(&b, h) == 0 && b.count == 1, "capacity 1: first add 0");
	ok(bloom_check(&b, h) == 1 && bloom_add(&b, h) == 1 && b.count == 1,
	    "capacity 1: the key is then found, second add 1");
	ok(bloom_check(&b, bloom_hash(&b, "other", 5)) == 0,
	    "capacity 1: another key is not found");
	ok(b.bits_set == b.hashes && bloom_popcount(&b) == b.hashes,
	    "capacity 1: one key sets k bits");
	/* overfill it: no false negatives, bits bounded by the block */
	for (uint64_t i = 0; i < 10000; i++)
		(void)bloom_add(&b, url_hash(&b, i));
	for (uint64_t i = 0; i < 10000; i++)
		fn += (uint64_t)!bloom_check(&b, url_hash(&b, i));
	for (uint64_t i = 10000; i < 20000; i++)
		pos += (uint64_t)bloom_check(&b, url_hash(&b, i));
	ok(fn == 0 && bloom_check(&b, h) == 1,
	    "capacity 1 overfilled with 10000 keys: no false negatives");
	ok(b.bits_set == bloom_popcount(&b) && b.bits_set <= BLOOM_BLOCK_BITS,
	    "capacity 1 overfilled: bits_set %llu == popcount, <= 512",
	    (unsigned long long)b.bits_set);
	diag("capacity 1 overfilled: %llu keys counted, fp rate %.4f",
	    (unsigned long long)b.count, (double)pos / 10000);
	bloom_free(&b);
}

/* ---- a slot's range moved (bloom_or_range, bloom_clear_range) ---- */

/* n blocks of random words at p (any alignment), one word in four zero. */
static void
fill_blocks(unsigned char *p, uint64_t n, uint64_t s)
{
	for (uint64_t i = 0; i < n * BLOOM_BLOCK_WORDS; i++) {
		uint64_t v = splitmix64(&s);

		v = (v & 3) == 0 ? 0 : v & splitmix64(&s);
		memcpy(p + i * 8, &v, 8);
	}
}

static uint64_t
popcount_words(const uint64_t *w, uint64_t nwords)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < nwords; i++)
		n += (uint64_t)__builtin_popcountll(w[i]);
	return n;
}

/* Pages of [p, p + len) resident (p page aligned), -1: mincore failed. */
static long
resident_pages(const void *p, size_t len)
{
	size_t		 page = (size_t)sysconf(_SC_PAGESIZE);
	size_t		 n = (len + page - 1) / page;
	unsigned char	*vec = malloc(n);
	long		 r = 0;

	if (vec == NULL || mincore((void *)(uintptr_t)p, len, vec) == -1) {
		free(vec);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

/* A filter of nb blocks with 3000 keys in it (bits_set kept by bloom_add). */
static int
init_keys(struct bloom *b, uint64_t nb)
{
	uint64_t s = 11;

	if (bloom_init(b, nb, 8, SEED_A) != 0)
		return -1;
	for (int t = 0; t < 3000; t++)
		(void)bloom_add(b, splitmix64(&s));
	return 0;
}

/*
 * bloom_or_range: into an empty filter the range becomes src's blocks;
 * into a partly set one each word of the range is OR-ed, and bits_set
 * grows by the bits new only (== popcount); again, or from a src that is
 * not 8-byte aligned, the same; a src of zero words changes nothing and
 * faults in no page; the blocks outside the range are never touched.
 */
static void
test_or_range(void)
{
	enum { NB = 256, FIRST = 17, N = 40 };
	struct bloom	 b, c;
	unsigned char	*src = malloc(N * BLOOM_BLOCK_BYTES);
	unsigned char	*raw = malloc(N * BLOOM_BLOCK_BYTES + 8);
	unsigned char	*zero = calloc(N, BLOOM_BLOCK_BYTES);
	uint64_t	*before = malloc(NB * BLOOM_BLOCK_BYTES);
	uint64_t	*sw = malloc(N * BLOOM_BLOCK_BYTES);	/* src's words */
	uint64_t	 overlap = 0, bits0, srcbits;
	int		 good = 1, outside = 1;

	if (src == NULL || raw == NULL || zero == NULL || before == NULL ||
	    sw == NULL) {
		ok(0, "malloc");
		goto out;
	}
	fill_blocks(src, N, 1);
	memcpy(sw, src, N * BLOOM_BLOCK_BYTES);
	srcbits = popcount_words(sw, N * BLOOM_BLOCK_WORDS);

	/* an empty filter */
	if (bloom_init(&b, NB, 8, SEED_A) != 0) {
		ok(0, "bloom_init(%d, 8)", NB);
		goto out;
	}
	bloom_or_range(&b, FIRST, src, N);
	ok(memcmp(b.words + FIRST * BLOOM_BLOCK_WORDS, src,
	    N * BLOOM_BLOCK_BYTES) == 0 &&
	    popcount_words(b.words, FIRST * BLOOM_BLOCK_WORDS) == 0 &&
	    popcount_words(b.words + (FIRST + N) * BLOOM_BLOCK_WORDS,
	    (NB - FIRST - N) * BLOOM_BLOCK_WORDS) == 0,
	    "or_range into an empty filter: blocks %d..%d are src's, the "
	    "rest stays 0", FIRST, FIRST + N - 1);
	ok(b.bits_set == srcbits && bloom_popcount(&b) == srcbits,
	    "or_range into an empty filter: bits_set %llu == popcount == "
	    "src's %llu bits", (unsigned long long)b.bits_set,
	    (unsigned long long)srcbits);
	bloom_free(&b);

	/* a partly set filter */
	if (init_keys(&b, NB) != 0) {
		ok(0, "bloom_init(%d, 8)", NB);
		goto out;
	}
	memcpy(before, b.words, NB * BLOOM_BLOCK_BYTES);
	bits0 = b.bits_set;
	for (uint64_t i = 0; i < N * BLOOM_BLOCK_WORDS; i++)
		overlap += (uint64_t)__builtin_popcountll(
		    before[FIRST * BLOOM_BLOCK_WORDS + i] & sw[i]);
	bloom_or_range(&b, FIRST, src, N);
	for (uint64_t i = 0; i < NB * BLOOM_BLOCK_WORDS; i++) {
		int in = i >= FIRST * BLOOM_BLOCK_WORDS &&
		    i < (FIRST + N) * BLOOM_BLOCK_WORDS;
		uint64_t want = in ? before[i] |
		    sw[i - FIRST * BLOOM_BLOCK_WORDS] : before[i];

		good &= b.words[i] == want;
		outside &= in || b.words[i] == before[i];
	}
	ok(good && outside, "or_range into a partly set filter: each word "
	    "of the range OR-ed with src's, the words outside untouched");
	ok(overlap > 0 && b.bits_set == bloom_popcount(&b) &&
	    b.bits_set == bits0 + srcbits - overlap,
	    "or_range into a partly set filter: bits_set %llu == popcount, "
	    "only the bits new counted (%llu before, %llu in src, %llu of "
	    "them set already)", (unsigned long long)b.bits_set,
	    (unsigned long long)bits0, (unsigned long long)srcbits,
	    (unsigned long long)overlap);
	memcpy(before, b.words, NB * BLOOM_BLOCK_BYTES);
	bits0 = b.bits_set;
	bloom_or_range(&b, FIRST, src, N);
	ok(memcmp(before, b.words, NB * BLOOM_BLOCK_BYTES) == 0 &&
	    b.bits_set == bits0,
	    "or_range of the same range again changes nothing (bits_set "
	    "%llu)", (unsigned long long)b.bits_set);
	bloom_or_range(&b, 0, zero, N);
	bloom_or_range(&b, NB - N, zero, N);
	ok(memcmp(before, b.words, NB * BLOOM_BLOCK_BYTES) == 0 &&
	    b.bits_set == bits0,
	    "or_range of zero words into a partly set filter changes nothing");

	/* the same from a src at an odd address */
	for (size_t off = 1; off < 8; off += 2) {
		if (init_keys(&c, NB) != 0) {
			ok(0, "bloom_init(%d, 8)", NB);
			break;
		}
		memcpy(raw + off, src, N * BLOOM_BLOCK_BYTES);
		bloom_or_range(&c, FIRST, raw + off, N);
		ok(memcmp(c.words, before, NB * BLOOM_BLOCK_BYTES) == 0 &&
		    c.bits_set == bits0 && bloom_popcount(&c) == bits0,
		    "or_range from a src %zu bytes off 8-byte alignment: the "
		    "same words and bits_set", off);
		bloom_free(&c);
	}
	bloom_free(&b);

	/* zero words into a filter never touched: no page faulted in */
	{
		uint64_t	 bpp = (uint64_t)sysconf(_SC_PAGESIZE) /
			    BLOOM_BLOCK_BYTES;
		unsigned char	*z = calloc(4 * bpp, BLOOM_BLOCK_BYTES);
		long		 r0, r1;

		if (z == NULL || bloom_init(&b, 16 * bpp, 8, SEED_A) != 0) {
			ok(0, "bloom_init(%llu, 8)",
			    (unsigned long long)(16 * bpp));
			free(z);
			goto out;
		}
		r0 = resident_pages(b.words, b.map_bytes);
		bloom_or_range(&b, 4 * bpp, z, 4 * bpp);
		r1 = resident_pages(b.words, b.map_bytes);
		if (r0 != 0)
			ok(1, "# SKIP mincore: %ld pages of a new filter "
			    "resident (not a plain anonymous mapping here)",
			    r0);
		else
			ok(r1 == 0, "or_range of 4 pages of zero words "
			    "faults in no page (%ld resident)", r1);
		ok(b.bits_set == 0 && bloom_popcount(&b) == 0,
		    "or_range of zero words into an empty filter: still "
		    "empty, bits_set 0");
		bloom_free(&b);
		free(z);
	}
out:
	free(src);
	free(raw);
	free(zero);
	free(before);
	free(sw);
}

/*
 * bloom_clear_range over a filter whose every word holds bits: a range
 * of several pages that starts and ends inside a page (whole pages given
 * back, the edges zeroed), whole pages only, one smaller than a page, and
 * one smaller than a page across a page's end, the last block. Each time
 * the range reads 0, every word outside it is as it was, and bits_set ==
 * popcount; the pages given back take bits again.
 */
static void
test_clear_range(void)
{
	uint64_t	 page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t	 bpp = page / BLOOM_BLOCK_BYTES, nb = 16 * bpp, s = 3;
	struct bloom	 b;
	uint64_t	*want;
	const struct {
		uint64_t	 first, n;
		const char	*what;
	} cases[] = {
		{ bpp + bpp / 2 + 3, 5 * bpp, "5 pages from inside page 1 "
		  "to inside page 6" },
		{ 8 * bpp, 2 * bpp, "pages 8 and 9, whole" },
		{ 10 * bpp + 5, 7, "7 blocks inside page 10" },
		{ 13 * bpp - 3, 6, "6 blocks across the end of page 12" },
		{ 16 * bpp - 1, 1, "the last block" },
	};

	if (bloom_init(&b, nb, 8, SEED_A) != 0) {
		ok(0, "bloom_init(%llu, 8)", (unsigned long long)nb);
		return;
	}
	if ((want = malloc(nb * BLOOM_BLOCK_BYTES)) == NULL) {
		ok(0, "malloc");
		bloom_free(&b);
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t first = cases[i].first, n = cases[i].n;

		/* every word of the filter holds bits, each case anew */
		for (uint64_t j = 0; j < nb * BLOOM_BLOCK_WORDS; j++)
			b.words[j] = splitmix64(&s) | 1;
		b.bits_set = bloom_popcount(&b);
		memcpy(want, b.words, nb * BLOOM_BLOCK_BYTES);
		memset(want + first * BLOOM_BLOCK_WORDS, 0,
		    n * BLOOM_BLOCK_BYTES);
		bloom_clear_range(&b, first, n);
		ok(popcount_words(b.words + first * BLOOM_BLOCK_WORDS,
		    n * BLOOM_BLOCK_WORDS) == 0 && b.words[first *
		    BLOOM_BLOCK_WORDS] == 0 && b.words[(first + n) *
		    BLOOM_BLOCK_WORDS - 1] == 0,
		    "clear_range %s (blocks %llu..%llu): every word 0, the "
		    "edges too", cases[i].what, (unsigned long long)first,
		    (unsigned long long)(first + n - 1));
		ok(memcmp(b.words, want, nb * BLOOM_BLOCK_BYTES) == 0,
		    "clear_range %s: the words around it untouched",
		    cases[i].what);
		ok(b.bits_set == bloom_popcount(&b),
		    "clear_range %s: bits_set %llu == popcount",
		    cases[i].what, (unsigned long long)b.bits_set);
	}
	/* the first case's range cleared again (pages 2..5 given back to
	 * the kernel): bits OR-ed into them read back */
	bloom_clear_range(&b, bpp + bpp / 2 + 3, 5 * bpp);
	memset(want + (bpp + bpp / 2 + 3) * BLOOM_BLOCK_WORDS, 0,
	    5 * bpp * BLOOM_BLOCK_BYTES);
	{
		unsigned char	*src = malloc(3 * bpp * BLOOM_BLOCK_BYTES);
		uint64_t	 before = b.bits_set;

		if (src == NULL) {
			ok(0, "malloc");
		} else {
			fill_blocks(src, 3 * bpp, 5);
			bloom_or_range(&b, 2 * bpp, src, 3 * bpp);
			memcpy(want + 2 * bpp * BLOOM_BLOCK_WORDS, src,
			    3 * bpp * BLOOM_BLOCK_BYTES);
			ok(memcmp(b.words, want, nb * BLOOM_BLOCK_BYTES) == 0 &&
			    b.bits_set == bloom_popcount(&b) &&
			    b.bits_set > before,
			    "the pages cleared take bits again (or_range): "
			    "bits_set %llu == popcount",
			    (unsigned long long)b.bits_set);
		}
		free(src);
	}
	bloom_clear_range(&b, 0, nb);
	ok(b.bits_set == 0 && bloom_popcount(&b) == 0,
	    "clear_range of the whole filter: empty, bits_set 0");
	free(want);
	bloom_free(&b);
}

#ifdef BLOOM_AVX2
/*
 * Every k, where the CPU has AVX2: the batches' AVX2 block operations set
 * the same bits as the scalar ones (the layout of every file), answer the
 * same, and count the same bits_set and count, key after key: two filters
 * of 2048 blocks filled by each way to about half their bits (keys share
 * blocks, and a key in four is one asked before).
 */
__attribute__((target("avx2,popcnt"))) static void
test_avx2_same_k(uint32_t k);

static void
test_avx2_same(void)
{
	static const uint32_t ks[] = { 4, 8, 16 };

	if (!bloom_avx2) {
		for (size_t i = 0; i < 3; i++)
			ok(1, "# SKIP k=%u: no AVX2 here (or SEEND_NO_AVX2 is set)", ks[i]);
		return;
	}
	for (size_t i = 0; i < 3; i++)
		test_avx2_same_k(ks[i]);
}

__attribute__((target("avx2,popcnt"))) static void
test_avx2_same_k(uint32_t k)
{
	struct bloom	 a, v;
	uint64_t	 s = 7, m[BLOOM_BLOCK_WORDS], mv[BLOOM_BLOCK_WORDS];
	uint64_t	 last[64] = { 0 };
	__m256i		 r[2];
	int		 bad_mask = 0, bad_answer = 0, repeats = 0, r1;

	if (bloom_init(&a, 2048, k, 1) != 0 || bloom_init(&v, 2048, k, 1) != 0) {
		ok(0, "bloom_init(2048, %u)", k);
		return;
	}
	for (int t = 0; t < 60000; t++) {
		/* a key in four is one of the last 64 asked again: both
		 * ways' "nothing new" and "seen" answers are taken too */
		uint64_t h = t % 4 == 3 && t > 64 ? last[(t * 7) % 64] :
		    splitmix64(&s);

		last[t % 64] = h;

		bloom_masks(&a, h, m);
		bloom_masks_avx2(&v, h, r);
		_mm256_storeu_si256((__m256i *)mv, r[0]);
		_mm256_storeu_si256((__m256i *)(mv + 4), r[1]);
		bad_mask += memcmp(m, mv, sizeof(m)) != 0;
		if (t % 3 == 0) {
			r1 = bloom_check(&a, h);
			bad_answer += r1 != bloom_check_avx2(&v, h);
		} else {
			r1 = bloom_add(&a, h);
			bad_answer += r1 != bloom_add_avx2(&v, h);
		}
		repeats += r1;
	}
	ok(bad_mask == 0 && bad_answer == 0 && repeats > 5000 &&
	    memcmp(a.words, v.words, bloom_bytes(&a)) == 0 &&
	    a.bits_set == v.bits_set && a.count == v.count,
	    "k=%u: AVX2 and scalar agree on 60000 keys, %d answered seen "
	    "(%d masks, %d answers differ; bits_set %llu/%llu, count "
	    "%llu/%llu)", k, repeats, bad_mask, bad_answer, (unsigned long long)a.bits_set,
	    (unsigned long long)v.bits_set, (unsigned long long)a.count,
	    (unsigned long long)v.count);
	bloom_free(&a);
	bloom_free(&v);
}
#endif

int
main(void)
{
	test_plan_rejects();
	test_plan_feasible();
	test_fp_rate_grid();
	test_init_rejects();
	test_masks();
#ifdef BLOOM_AVX2
	test_avx2_same();
#endif
	test_bits_set_every_k();
	test_block_uniform();
	test_add_semantics();
	test_seeds();
	test_tiny();
	test_or_range();
	test_clear_range();
	test_measured(0.01);
	test_measured(0.001);
	return done_testing();
}
