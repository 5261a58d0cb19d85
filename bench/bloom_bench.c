/*
 * bloom_bench.c - nanoseconds per key for the split-block Bloom filter on a
 * filter much larger than the caches (1 GiB by default), with URL-sized
 * keys already in memory: hashing alone, bloom_add one key at a time,
 * bloom_add in batches with bloom_prefetch running ahead, and bloom_check.
 *
 *   bloom_bench [log2_blocks [nkeys [warm_keys]]]
 *
 * log2_blocks: 2^n blocks of 64 bytes (default 24: 1 GiB); nkeys: URLs per
 * timed pass (default 4M, ~80 bytes each); warm_keys: keys added before
 * timing so that every page is mapped and the filter is about half as full
 * as a 0.1% plan allows (default 16 per block).
 *
 * Every timed add pass must see keys the filter does not hold yet, so each
 * pass sets a fresh b.seed: the same strings then hash to new places, as
 * new URLs would. (Only a benchmark may do that to a live filter.)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "bloom.h"

#define REPS	3

static struct bloom	 bf;
static char		*text;		/* the keys, packed */
static uint64_t		*off;		/* key i is text[off[i] .. off[i+1]) */
static uint64_t		 nkeys;
static uint64_t		 next_seed = 0x5eed000000000001ULL;

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The i-th URL: four shapes of 60-110 bytes, ~80 on average. */
static int
gen_url(uint64_t i, char *buf, size_t size)
{
	static const char *const w[] = { "news", "shop", "blog", "item",
	    "video", "search", "archive", "tag", "category", "user" };
	uint64_t s = i, h = splitmix64(&s);

	switch (h & 3) {
	case 0:
		return snprintf(buf, size,
		    "https://host%u.example%u.com/path/%" PRIu64
		    "/item?id=%016" PRIx64, (unsigned)(i % 5000),
		    (unsigned)(i % 37), i, h);
	case 1:
		return snprintf(buf, size,
		    "http://www.site%u.org/%s/2024/%02u/%" PRIu64
		    "/%s-%s-%" PRIx64 ".html", (unsigned)(h >> 8) % 5000,
		    w[(h >> 20) % 10], 1 + (unsigned)(h >> 24) % 12, i,
		    w[(h >> 28) % 10], w[(h >> 32) % 10], h >> 40);
	case 2:
		return snprintf(buf, size,
		    "https://cdn%u.static%u.net/img/%02x/%" PRIu64
		    ".jpg?w=%u&h=%u", (unsigned)(i % 37),
		    (unsigned)(h >> 8) % 5000, (unsigned)(h >> 24) & 0xff, i,
		    100 + (unsigned)(h >> 32) % 1900,
		    100 + (unsigned)(h >> 48) % 1900);
	default:
		return snprintf(buf, size,
		    "https://shop%u.example%u.com/%s/p/%" PRIu64 "?ref=%"
		    PRIx64 "&utm_source=%s", (unsigned)(h >> 8) % 5000,
		    (unsigned)(i % 37), w[(h >> 20) % 10], i, h >> 24,
		    w[(h >> 28) % 10]);
	}
}

static void
gen_keys(void)
{
	char		 buf[256];
	size_t		 cap = (size_t)nkeys * 96, used = 0;

	text = malloc(cap);
	off = malloc((size_t)(nkeys + 1) * sizeof(*off));
	if (text == NULL || off == NULL) {
		perror("malloc");
		exit(1);
	}
	for (uint64_t i = 0; i < nkeys; i++) {
		size_t len = (size_t)gen_url(i, buf, sizeof(buf));

		if (used + len > cap) {
			cap *= 2;
			if ((text = realloc(text, cap)) == NULL) {
				perror("realloc");
				exit(1);
			}
		}
		memcpy(text + used, buf, len);
		off[i] = used;
		used += len;
	}
	off[nkeys] = used;
}

static inline uint64_t
key_hash(uint64_t i)
{
	return bloom_hash(&bf, text + off[i], (size_t)(off[i + 1] - off[i]));
}

/* Each pass returns the number of 1 answers (or a hash digest), which is
 * printed so that nothing is optimised away. */
static uint64_t
pass_hash(size_t unused)
{
	uint64_t x = 0;

	(void)unused;
	for (uint64_t i = 0; i < nkeys; i++)
		x ^= key_hash(i);
	return x;
}

static uint64_t
pass_add(size_t unused)
{
	uint64_t ones = 0;

	(void)unused;
	for (uint64_t i = 0; i < nkeys; i++)
		ones += (uint64_t)bloom_add(&bf, key_hash(i));
	return ones;
}

/* Hash a batch, prefetch each key's block, then add in order. */
static uint64_t
pass_add_batch(size_t batch)
{
	uint64_t ones = 0, h[256];

	for (uint64_t base = 0; base < nkeys; base += batch) {
		size_t n = nkeys - base < batch ? (size_t)(nkeys - base) : batch;

		for (size_t j = 0; j < n; j++) {
			h[j] = key_hash(base + j);
			bloom_prefetch(&bf, h[j]);
		}
		for (size_t j = 0; j < n; j++)
			ones += (uint64_t)bloom_add(&bf, h[j]);
	}
	return ones;
}

/* As seend does it: hash the whole batch, then issue its prefetches back
 * to back, then add in order. */
static uint64_t
pass_add_grouped(size_t batch)
{
	uint64_t ones = 0, h[256];

	for (uint64_t base = 0; base < nkeys; base += batch) {
		size_t n = nkeys - base < batch ? (size_t)(nkeys - base) : batch;

		for (size_t j = 0; j < n; j++)
			h[j] = key_hash(base + j);
		for (size_t j = 0; j < n; j++)
			bloom_prefetch(&bf, h[j]);
		for (size_t j = 0; j < n; j++)
			ones += (uint64_t)bloom_add(&bf, h[j]);
	}
	return ones;
}

/* A sliding window: hash and prefetch key i + dist, add key i. */
static uint64_t
pass_add_window(size_t dist)
{
	uint64_t ones = 0, ring[256];
	size_t mask = 255;

	for (uint64_t i = 0; i < dist && i < nkeys; i++) {
		ring[i & mask] = key_hash(i);
		bloom_prefetch(&bf, ring[i & mask]);
	}
	for (uint64_t i = 0; i < nkeys; i++) {
		if (i + dist < nkeys) {
			uint64_t h = key_hash(i + dist);

			ring[(i + dist) & mask] = h;
			bloom_prefetch(&bf, h);
		}
		ones += (uint64_t)bloom_add(&bf, ring[i & mask]);
	}
	return ones;
}

static uint64_t
pass_check(size_t unused)
{
	uint64_t ones = 0;

	(void)unused;
	for (uint64_t i = 0; i < nkeys; i++)
		ones += (uint64_t)bloom_check(&bf, key_hash(i));
	return ones;
}

static uint64_t
pass_check_batch(size_t batch)
{
	uint64_t ones = 0, h[256];

	for (uint64_t base = 0; base < nkeys; base += batch) {
		size_t n = nkeys - base < batch ? (size_t)(nkeys - base) : batch;

		for (size_t j = 0; j < n; j++) {
			h[j] = key_hash(base + j);
			bloom_prefetch(&bf, h[j]);
		}
		for (size_t j = 0; j < n; j++)
			ones += (uint64_t)bloom_check(&bf, h[j]);
	}
	return ones;
}

enum seedmode { FRESH, REUSE };

/*
 * Runs a pass REPS times and prints the best and median wall-clock ns/key,
 * and the best CPU-time ns/key (which leaves out time the thread spent
 * descheduled, so it is the steadier figure on a shared machine). FRESH gives
 * every rep a new seed (new keys to the filter); REUSE runs every rep with
 * the seed of the previous FRESH rep, so the keys are all present.
 */
static void
run(const char *name, uint64_t (*pass)(size_t), size_t arg,
    enum seedmode mode, uint64_t reuse_seed)
{
	double	 t[REPS], tmp, cpu = 1e30;
	uint64_t r = 0;

	for (int rep = 0; rep < REPS; rep++) {
		double t0, c0;

		bf.seed = mode == FRESH ? next_seed++ : reuse_seed;
		c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
		t0 = now();
		r = pass(arg);
		t[rep] = now() - t0;
		c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
		if (c0 < cpu)
			cpu = c0;
	}
	for (int i = 0; i < REPS; i++)
		for (int j = i + 1; j < REPS; j++)
			if (t[j] < t[i])
				tmp = t[i], t[i] = t[j], t[j] = tmp;
	printf("%-40s %7.2f ns/key %6.2f M keys/s (median %6.2f, cpu "
	    "%6.2f) ones %.4f%%\n", name, t[0] * 1e9 / (double)nkeys,
	    (double)nkeys / t[0] / 1e6, t[REPS / 2] * 1e9 / (double)nkeys,
	    cpu * 1e9 / (double)nkeys,
	    pass == pass_hash ? 0.0 : 100.0 * (double)r / (double)nkeys);
	fflush(stdout);
}

static void
print_machine(int argc, char **argv)
{
	char	 line[512], model[256] = "unknown";
	FILE	*f = fopen("/proc/cpuinfo", "r");

	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			char *p;

			if (strncmp(line, "model name", 10) == 0 &&
			    (p = strchr(line, ':')) != NULL) {
				snprintf(model, sizeof(model), "%s", p + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	printf("machine: %s, %ld online CPUs\n", model,
	    sysconf(_SC_NPROCESSORS_ONLN));
	printf("command:");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\ncompiler: %s\n", __VERSION__);
	if ((f = fopen("/sys/kernel/mm/transparent_hugepage/enabled",
	    "r")) != NULL) {
		if (fgets(line, sizeof(line), f) != NULL)
			printf("THP: %s", line);
		fclose(f);
	}
}

int
main(int argc, char **argv)
{
	unsigned	 log2_blocks = 24;
	uint64_t	 warm, s = 1, ones = 0, seed;
	double		 t0, t;

	if (argc > 4 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [log2_blocks [nkeys [warm_keys]]]\n",
		    argv[0]);
		return 2;
	}
	nkeys = 4ULL << 20;
	if (argc > 1)
		log2_blocks = (unsigned)strtoul(argv[1], NULL, 0);
	if (argc > 2)
		nkeys = strtoull(argv[2], NULL, 0);
	if (log2_blocks < 1 || log2_blocks > 34 || nkeys == 0) {
		fprintf(stderr, "%s: log2_blocks 1..34, nkeys > 0\n", argv[0]);
		return 2;
	}
	warm = argc > 3 ? strtoull(argv[3], NULL, 0) :
	    (1ULL << log2_blocks) * 16;

	print_machine(argc, argv);
	if (bloom_init(&bf, 1ULL << log2_blocks, 8, 1) != 0) {
		perror("bloom_init");
		return 1;
	}
	printf("filter: %" PRIu64 " blocks, %.3f GiB, k=%u\n", bf.nblocks,
	    (double)bloom_bytes(&bf) / (1 << 30), bf.hashes);

	t0 = now();
	gen_keys();
	printf("keys: %" PRIu64 " URLs, %.1f bytes average, %.0f MiB, "
	    "generated in %.2f s\n", nkeys, (double)off[nkeys] / (double)nkeys,
	    (double)off[nkeys] / (1 << 20), now() - t0);

	/* Warm-up: random hashes (no strings), prefetched, so that every
	 * page is mapped and the filter is realistically full. */
	t0 = now();
	for (uint64_t i = 0; i < warm; i += 32) {
		uint64_t h[32];
		size_t n = warm - i < 32 ? (size_t)(warm - i) : 32;

		for (size_t j = 0; j < n; j++) {
			h[j] = splitmix64(&s);
			bloom_prefetch(&bf, h[j]);
		}
		for (size_t j = 0; j < n; j++)
			ones += (uint64_t)bloom_add(&bf, h[j]);
	}
	t = now() - t0;
	printf("warm-up: %" PRIu64 " keys in %.2f s (%.2f ns/key), "
	    "%.1f%% of bits set, expected fp %.4f%%, THP-backed %ld MiB\n",
	    warm, t, t * 1e9 / (double)(warm ? warm : 1),
	    100.0 * (double)bf.bits_set / ((double)bf.nblocks * 512),
	    100.0 * bloom_fp_rate(bf.nblocks, bf.hashes, warm), thp_mib());
	printf("timed passes: %" PRIu64 " keys each, best of %d; target "
	    "<= 15 ns/key\n", nkeys, REPS);

	run("hash only (XXH3-64)", pass_hash, 0, FRESH, 0);
	run("bloom_add, one by one", pass_add, 0, FRESH, 0);
	seed = next_seed - 1;
	run("bloom_add, batch 16 + prefetch", pass_add_batch, 16, FRESH, 0);
	run("bloom_add, batch 32 + prefetch", pass_add_batch, 32, FRESH, 0);
	run("bloom_add, batch 64 + prefetch", pass_add_batch, 64, FRESH, 0);
	run("bloom_add, batch 128 + prefetch", pass_add_batch, 128, FRESH, 0);
	run("bloom_add, batch 256 + prefetch", pass_add_batch, 256, FRESH, 0);
	run("bloom_add, window 16 + prefetch", pass_add_window, 16, FRESH, 0);
	run("bloom_add, batch 32, hash then prefetch", pass_add_grouped, 32,
	    FRESH, 0);
	run("bloom_add, batch 128, hash then prefetch", pass_add_grouped,
	    128, FRESH, 0);
	run("bloom_add, batch 256, hash then prefetch", pass_add_grouped,
	    256, FRESH, 0);
	run("bloom_add, repeated keys (all 1)", pass_add, 0, REUSE, seed);
	run("bloom_check, present keys", pass_check, 0, REUSE, seed);
	run("bloom_check, new keys", pass_check, 0, FRESH, 0);
	run("bloom_check, batch 32 + prefetch", pass_check_batch, 32, FRESH,
	    0);
	printf("after: %" PRIu64 " keys counted, %.1f%% of bits set\n",
	    bf.count, 100.0 * (double)bf.bits_set / ((double)bf.nblocks * 512));
	bloom_free(&bf);
	free(text);
	free(off);
	return 0;
}
