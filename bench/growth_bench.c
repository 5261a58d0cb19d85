/*
 * growth_bench - what growth costs: bits per key against the classic
 * optimum, and nanoseconds per key as a filter's slice count rises.
 *
 *   bench/growth_bench [MiB]      (default 512: the total of the arrays)
 *
 * Part 1 plans filters with the daemon's own sizing (filter_plan_for): a
 * fixed filter at capacity, and growth 2 at 1x, 10x, 100x and 1000x its
 * declared capacity, for error rates of 1 % and 0.1 %, beside the optimum
 * of a classic Bloom filter, -ln(p) / ln(2)^2 bits per key.
 *
 * Part 2 builds real filters of 1, 4 and 16 slices (growth 1: slices of
 * equal capacity, about the same total memory) and times filter_seen of
 * new keys and filter_check of present ones, batches of 64 prefetched in
 * every slice first, as the daemon's batch path does.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "filter.h"
#include "log.h"

#define BATCH	64

static void
plans(void)
{
	static const double rates[] = { 0.01, 0.001 };
	static const unsigned mults[] = { 1, 10, 100, 1000 };
	struct filter_plan p;

	printf("bits per key (capacity 10M; classic optimum -ln p / ln^2 2)\n");
	printf("%-8s %-10s %8s %8s %10s %12s %8s\n", "rate", "filter",
	    "keys", "slices", "bits/key", "vs optimum", "fp");
	for (size_t r = 0; r < 2; r++) {
		double opt = -log(rates[r]) / (M_LN2 * M_LN2);

		filter_plan_for(10000000, rates[r], 0, 0, 10000000, &p);
		printf("%-8g %-10s %7ux %8zu %10.2f %11.2fx %8.2g\n", rates[r],
		    "fixed", 1, p.slices, p.bits_per_key,
		    p.bits_per_key / opt, p.fp_rate);
		for (size_t m = 0; m < 4; m++) {
			filter_plan_for(10000000, rates[r], 2, 0,
			    10000000ULL * mults[m], &p);
			printf("%-8g %-10s %7ux %8zu %10.2f %11.2fx %8.2g\n",
			    rates[r], "growth 2", mults[m], p.slices,
			    p.bits_per_key, p.bits_per_key / opt, p.fp_rate);
		}
		filter_plan_for(10000000, rates[r], 2, 30LL * 86400 * 1000,
		    10000000, &p);
		printf("%-8g %-10s %7ux %8zu %10.2f %11.2fx %8.2g\n", rates[r],
		    "expire 30d", 1, p.slices, p.bits_per_key,
		    p.bits_per_key / opt, p.fp_rate);
		printf("%-8g %-10s %8s %8s %10.2f\n", rates[r], "optimum", "",
		    "", opt);
	}
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * ns per key of filter_seen (new keys) and filter_check (held keys) in a
 * filter of nslices equal slices, on hashes (the filter sees nothing
 * else: hashing an 80-byte URL adds ~8 ns, see bloom_bench). CPU time of
 * this thread, so other processes on the machine count less.
 */
static void
time_slices(size_t nslices, uint64_t mib, uint64_t batch)
{
	struct filter_shape	 shape;
	struct filter		*f;
	char			 err[256];
	uint64_t		 per, x = 42, *h, timed, hits = 0;
	double			 t0, t_seen, t_check;

	per = mib * 1024 * 1024 * 8 / 20 / nslices;
	memset(&shape, 0, sizeof(shape));
	shape.capacity = per;
	shape.error_rate = 0.001;
	shape.growth = 1;	/* equal slices, each tighter than the last */
	if ((f = filter_create("bench", &shape, err, sizeof(err))) == NULL) {
		fprintf(stderr, "growth_bench: %s\n", err);
		exit(1);
	}
	/* every slice but the newest filled to capacity, untimed */
	for (uint64_t i = 0; i < per * (nslices - 1); i++)
		filter_seen(f, splitmix64(&x));
	timed = per / 2 < 4000000 ? per / 2 : 4000000;
	if ((h = malloc(timed * sizeof(*h))) == NULL)
		exit(1);
	for (uint64_t i = 0; i < timed; i++)
		h[i] = splitmix64(&x);
	t0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t i = 0; i < timed; i += batch) {
		uint64_t m = timed - i < batch ? timed - i : batch;

		for (uint64_t j = 0; j < m; j++)
			filter_prefetch(f, h[i + j]);
		for (uint64_t j = 0; j < m; j++)
			filter_seen(f, h[i + j]);
	}
	t_seen = bench_clock(CLOCK_THREAD_CPUTIME_ID) - t0;
	t0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t i = 0; i < timed; i += batch) {
		uint64_t m = timed - i < batch ? timed - i : batch;

		for (uint64_t j = 0; j < m; j++)
			filter_prefetch(f, h[i + j]);
		for (uint64_t j = 0; j < m; j++)
			hits += (uint64_t)filter_check(f, h[i + j]);
	}
	t_check = bench_clock(CLOCK_THREAD_CPUTIME_ID) - t0;
	printf("%6zu %6" PRIu64 " %10.0f %12" PRIu64 " %14.1f %16.1f %8s\n",
	    f->nslices, batch, (double)filter_bytes(f) / (1 << 20), timed,
	    t_seen * 1e9 / (double)timed, t_check * 1e9 / (double)timed,
	    hits == timed ? "ok" : "MISSING");
	free(h);
	filter_unref(f);
}

int
main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 512;

	log_set_level(LOG_LEVEL_WARN);
	plans();
	printf("\nns per key (thread CPU), batches of %d prefetched in every "
	    "slice, %" PRIu64 " MiB in all\n", BATCH, mib);
	printf("%6s %6s %10s %12s %14s %16s %8s\n", "slices", "batch", "MiB",
	    "keys timed", "SEEN new ns", "CHECK held ns", "all held");
	for (size_t s = 1; s <= 16; s *= 4)
		for (uint64_t b = 64; b >= 4; b /= 4)
			time_slices(s, mib, b);
	return 0;
}
