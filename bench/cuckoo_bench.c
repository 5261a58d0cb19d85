/*
 * cuckoo_bench.c - the cuckoo filter: nanoseconds per add, contains and
 * delete, its bits per key against the Bloom filter's, and the
 * false-positive rate measured at capacity.
 *
 *   cuckoo_bench [big_capacity [ops]]
 *
 * Keys are 64-bit hashes already computed (splitmix64), so the figures are
 * the table's alone (an XXH3-64 of a URL adds ~10 ns: see bloom_bench).
 *
 * Capacity 1e6 at 1 % and 0.1 % (a table of 1.3-1.8 MB, in the caches):
 * the whole capacity added (the last keys need kicks), then contains of
 * held and of fresh keys, then every key deleted. big_capacity (default
 * 1e8: 130-180 MB, far beyond the caches) is too big to fill in a short
 * run: ops keys (default 4M) are added to it after a warm-up that fills
 * it to 50 %, so that the times are a table's at half load, then
 * contains and deletes of those. Each phase runs once; the machine's
 * other load shows in the spread between runs, not hidden by a best-of.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "bloom.h"
#include "cuckoo.h"

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t *
gen(uint64_t n, uint64_t seed)
{
	uint64_t *h = malloc(n * sizeof(*h));

	if (h == NULL) {
		perror("malloc");
		exit(1);
	}
	for (uint64_t i = 0; i < n; i++)
		h[i] = splitmix64(&seed);
	return h;
}

static double
bloom_bpk(uint64_t capacity, double rate)
{
	uint64_t nb;
	uint32_t k;

	if (bloom_plan(capacity, rate, &nb, &k) != 0)
		return 0;
	return (double)nb * BLOOM_BLOCK_BITS / (double)capacity;
}

static void
sizes(void)
{
	static const double rates[] = { 0.01, 0.001 };

	printf("bits per key at capacity (table bytes * 8 / capacity):\n");
	for (size_t r = 0; r < 2; r++)
		for (uint64_t cap = 1000; cap <= 100000000ULL; cap *= 100) {
			uint64_t nb;
			uint32_t f;
			double ck, bl;

			if (cuckoo_plan(cap, rates[r], &nb, &f) != 0)
				continue;
			ck = (double)cuckoo_table_bytes_for(nb, f) * 8 /
			    (double)cap;
			bl = bloom_bpk(cap, rates[r]);
			printf("  rate %-6g capacity %-10" PRIu64 " cuckoo f=%-2u "
			    "load %.4f %7.3f  bloom %7.3f  ratio %.3f\n",
			    rates[r], cap, f,
			    (double)cap / ((double)nb * CUCKOO_SLOTS), ck, bl,
			    ck / bl);
		}
}

static void
report(const char *what, double t, uint64_t n, uint64_t ones)
{
	printf("  %-38s %7.1f ns/op  (%" PRIu64 " ops, %" PRIu64
	    " answered 1)\n", what, t * 1e9 / (double)n, n, ones);
	fflush(stdout);
}

/* Fills a capacity-sized table to capacity, then the lookups and
 * deletes; prints the measured false-positive rate at capacity. */
static int
small(uint64_t capacity, double rate)
{
	struct cuckoo c;
	uint64_t *h = gen(capacity, 1), *q = gen(capacity, 2), r = 0;
	double t;

	if (cuckoo_create(&c, capacity, rate, 7) != 0) {
		perror("cuckoo_create");
		return 1;
	}
	printf("capacity %" PRIu64 " at %g: f=%u, %" PRIu64 " buckets, "
	    "%.2f MB, %.3f bits/key (bloom %.3f)\n", capacity, rate,
	    c.fpbits, c.nbuckets, (double)cuckoo_table_bytes(&c) / 1e6,
	    (double)cuckoo_table_bytes(&c) * 8 / (double)capacity,
	    bloom_bpk(capacity, rate));
	t = now();
	for (uint64_t i = 0; i < capacity; i++)
		r += (uint64_t)(cuckoo_add(&c, h[i]) != 0);
	report("add, empty to capacity", now() - t, capacity, 0);
	if (r != 0)
		printf("  %" PRIu64 " adds refused!\n", r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < capacity; i++)
		r += (uint64_t)cuckoo_contains(&c, h[i]);
	report("contains, held keys", now() - t, capacity, r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < capacity; i++)
		r += (uint64_t)cuckoo_contains(&c, q[i]);
	report("contains, fresh keys", now() - t, capacity, r);
	printf("  measured fp at capacity %.6f (target %g, estimate %.6f)\n",
	    (double)r / (double)capacity, rate, cuckoo_fp_estimate(&c));
	r = 0;
	t = now();
	for (uint64_t i = 0; i < capacity; i++)
		r += (uint64_t)cuckoo_delete(&c, h[i]);
	report("delete, all keys", now() - t, capacity, r);
	cuckoo_free(&c);
	free(h);
	free(q);
	return 0;
}

/* The big table at half load: ops adds, contains and deletes. */
static int
big(uint64_t capacity, double rate, uint64_t ops)
{
	struct cuckoo c;
	uint64_t *h = gen(ops, 3), *q = gen(ops, 4), r = 0, s = 5, warm;
	double t;

	if (cuckoo_create(&c, capacity, rate, 7) != 0) {
		perror("cuckoo_create");
		return 1;
	}
	warm = capacity / 2;
	t = now();
	for (uint64_t i = 0; i < warm; i++)
		r += (uint64_t)(cuckoo_add(&c, splitmix64(&s)) != 0);
	printf("capacity %" PRIu64 " at %g: f=%u, %.0f MB, THP-backed %ld MiB;"
	    " warm-up to load %.3f: %.1f ns/add\n", capacity, rate, c.fpbits,
	    (double)cuckoo_table_bytes(&c) / 1e6, thp_mib(), cuckoo_load(&c),
	    (now() - t) * 1e9 / (double)warm);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < ops; i++)
		r += (uint64_t)(cuckoo_add(&c, h[i]) != 0);
	report("add, one by one", now() - t, ops, r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < ops; i++)
		r += (uint64_t)cuckoo_contains(&c, h[i]);
	report("contains, held keys", now() - t, ops, r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < ops; i++)
		r += (uint64_t)cuckoo_contains(&c, q[i]);
	report("contains, fresh keys", now() - t, ops, r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < ops; i += 32) {
		uint64_t n = ops - i < 32 ? ops - i : 32;

		for (uint64_t j = 0; j < n; j++)
			cuckoo_prefetch(&c, q[i + j]);
		for (uint64_t j = 0; j < n; j++)
			r += (uint64_t)cuckoo_contains(&c, q[i + j]);
	}
	report("contains, fresh, batch 32 + prefetch", now() - t, ops, r);
	r = 0;
	t = now();
	for (uint64_t i = 0; i < ops; i++)
		r += (uint64_t)cuckoo_delete(&c, h[i]);
	report("delete, the added keys", now() - t, ops, r);
	cuckoo_free(&c);
	free(h);
	free(q);
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t big_cap = 100000000ULL, ops = 4ULL << 20;

	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [big_capacity [ops]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		big_cap = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		ops = strtoull(argv[2], NULL, 0);
	if (big_cap < 2 || ops == 0 || ops > big_cap / 2) {
		fprintf(stderr, "%s: big_capacity >= 2, 0 < ops <= "
		    "big_capacity / 2\n", argv[0]);
		return 2;
	}
	printf("compiler: %s\n", __VERSION__);
	sizes();
	if (small(1000000, 0.01) || small(1000000, 0.001))
		return 1;
	if (big(big_cap, 0.01, ops))
		return 1;
	return 0;
}
