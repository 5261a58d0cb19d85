/*
 * mem_probe.c - what one random cache-line access costs on this machine,
 * the cost that sets seend's speed on a big filter.
 *
 *   mem_probe                 (about 20 s; run it pinned: taskset -c 0)
 *
 * Two measurements on a 1 GiB anonymous mapping given to transparent huge
 * pages, as seend's filters are:
 *
 * 1. Dependent loads (each address comes from the previous load) over
 *    lines spread so that the DATA stays in cache while the PAGES touched
 *    grow: one line per 64 KiB over 32 MiB is 512 lines (32 KiB of data,
 *    L1) on 16 huge pages. If memory is really backed by 2 MiB pages, that
 *    fits the first-level TLB and costs a few ns a load; if a hypervisor
 *    backs the guest with 4 KiB pages, each line is its own TLB entry and
 *    the load costs a page walk. The last row is the real case: random
 *    lines anywhere in 1 GiB, a cache miss and a walk per load.
 *
 * 2. Independent read-modify-writes of 8 words of random lines (a Bloom
 *    test-and-set without the hashing), their prefetches issued B at a
 *    time: how many misses and walks the core overlaps.
 *
 * Nothing here is seend's code; it tells whether a machine's memory path
 * can give issue #5's "<= 15 ns per key on a 1 GiB filter".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_util.h"

#define SPACE	(1UL << 30)
#define LINE	64

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
next_rand(void)
{
	/* xorshift64: quality is not the point, speed and repeatability are */
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * A random cycle through n lines, line i at i * stride (plus a varying
 * offset inside the stride so lines do not all share a cache set); returns
 * ns per dependent load.
 */
static double
chase(char *mem, size_t stride, size_t n)
{
	size_t	*order = malloc(n * sizeof(*order));
	void	**p, **first;
	size_t	 steps = 20 * 1000 * 1000;
	double	 t;

	if (order == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(next_rand() % (i + 1)), tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
#define AT(k)	((void **)(void *)(mem + order[k] * stride + \
	    (order[k] * LINE) % stride))
	for (size_t i = 0; i < n; i++)
		*AT(i) = (void *)AT((i + 1) % n);
	first = AT(0);
#undef AT
	free(order);
	p = first;
	for (size_t i = 0; i < n; i++)	/* warm the caches and TLB */
		p = *p;
	t = now();
	for (size_t i = 0; i < steps; i++)
		p = *p;
	t = now() - t;
	if (p == NULL)		/* keeps the loop; never true */
		puts("");
	return t * 1e9 / (double)steps;
}

/* ns per 8-word read-modify-write of a random line, prefetched b at a
 * time; best of 3 passes. */
static double
rmw(uint64_t *words, size_t b)
{
	size_t		 n = 8 * 1000 * 1000, lines = SPACE / LINE;
	uint64_t	*idx = malloc(n * sizeof(*idx)), sink = 0;
	double		 best = 1e30;

	if (idx == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		idx[i] = (next_rand() % lines) * 8;
	for (int rep = 0; rep < 3; rep++) {
		double t = now();

		for (size_t i = 0; i + b <= n; i += b) {
			for (size_t j = 0; j < b; j++)
				__builtin_prefetch(words + idx[i + j], 1, 3);
			for (size_t j = 0; j < b; j++) {
				uint64_t *w = words + idx[i + j];

				for (int k = 0; k < 8; k++)
					w[k] |= 1ULL << ((i + j + (size_t)k) &
					    63);
			}
		}
		t = now() - t;
		if (t < best)
			best = t;
	}
	for (size_t i = 0; i < n; i += 4096)
		sink += words[idx[i]];
	free(idx);
	if (sink == 42)		/* keeps the stores; never true */
		puts("");
	return best * 1e9 / (double)n;
}

int
main(void)
{
	static const struct {
		size_t span, stride;
		const char *what;
	} rows[] = {
		{ 4UL << 20, 4096, "1024 lines, 64 KiB of data, 2 huge pages" },
		{ 32UL << 20, 65536, "512 lines, 32 KiB of data, 16 huge pages" },
		{ 32UL << 20, 4096, "8192 lines, 512 KiB of data, 16 huge pages" },
		{ SPACE, 262144, "4096 lines, 256 KiB of data, 512 huge pages" },
		{ SPACE, LINE, "random lines in 1 GiB (cache miss + walk)" },
	};
	static const size_t batches[] = { 1, 8, 32, 128 };
	char	*mem;

	mem = mmap(NULL, SPACE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mem_probe: mmap");
		return 1;
	}
	madvise(mem, SPACE, MADV_HUGEPAGE);
	memset(mem, 0, SPACE);
	printf("1 GiB mapping, THP-backed %ld MiB\n", thp_mib());
	puts("dependent loads (ns per load):");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t n = rows[i].stride == LINE ? SPACE / LINE :
		    rows[i].span / rows[i].stride;

		if (rows[i].stride == LINE)	/* 16M lines: use 4M of them */
			n /= 4;
		printf("  %-46s %7.1f\n", rows[i].what,
		    chase(mem, rows[i].stride == LINE ? 4 * LINE :
		    rows[i].stride, n));
	}
	puts("8-word read-modify-write of random lines in 1 GiB, prefetched "
	    "B at a time (ns per line):");
	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++)
		printf("  B = %-3zu %42s %7.1f\n", batches[i], "",
		    rmw((uint64_t *)(void *)mem, batches[i]));
	return 0;
}
