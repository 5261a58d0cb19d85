/*
 * bloom.c - sizing and memory of the split-block Bloom filter; the per-key
 * operations are inline in bloom.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"

#ifdef BLOOM_AVX2
int	bloom_avx2;

/* Before main: the batches choose their block operations by it, and the
 * environment's SEEND_NO_AVX2 (set, not empty) keeps the scalar ones, for
 * tests that run both. */
__attribute__((constructor)) static void
bloom_cpu_init(void)
{
	const char *off = getenv("SEEND_NO_AVX2");

	__builtin_cpu_init();
	bloom_avx2 = __builtin_cpu_supports("avx2") &&
	    __builtin_cpu_supports("popcnt") && (off == NULL || *off == '\0');
}
#endif

#define HUGE_PAGE	(2UL << 20)
#define HUGE_PAGE_MIN	(4 * HUGE_PAGE)
#define SMALL_PAGE	4096UL

/*
 * Probability that a query's k bits are all set in a block that holds j
 * keys: each segment of s = 512/k bits has received j bits, one per key,
 * independently, so one query bit is set with 1 - (1 - 1/s)^j.
 */
static double
fp_in_block(uint32_t k, double j)
{
	double s = (double)(BLOOM_BLOCK_BITS / k);

	return pow(1.0 - pow(1.0 - 1.0 / s, j), (double)k);
}

/*
 * With n keys over nblocks blocks, a block's load is Poisson(n / nblocks);
 * the filter's rate is fp_in_block averaged over that load. Summing the
 * Poisson terms out to many standard deviations leaves an error far below
 * any rate a user can ask for.
 */
double
bloom_fp_rate(uint64_t nblocks, uint32_t hashes, uint64_t n)
{
	return bloom_fp_rate_keys(nblocks, hashes, (double)n);
}

double
bloom_fp_rate_keys(uint64_t nblocks, uint32_t hashes, double n)
{
	double lambda = n / (double)nblocks;
	double sum = 0, p, j, jmax, jmin;

	if (!(n > 0))
		return 0;
	/* A block this overloaded has (nearly) every bit set: the sum would be
	 * about 1 and cost millions of terms while sizing searches upward. */
	if (lambda > 40.0 * (double)(BLOOM_BLOCK_BITS / hashes))
		return fp_in_block(hashes, lambda);
	/* start at the mode (log-space, no underflow for big lambda) and walk
	 * out both ways */
	jmin = floor(lambda) - 12 * sqrt(lambda) - 20;
	if (jmin < 0)
		jmin = 0;
	jmax = ceil(lambda) + 12 * sqrt(lambda) + 20;
	for (j = jmin; j <= jmax; j++) {
		p = exp(j * log(lambda) - lambda - lgamma(j + 1));
		sum += p * fp_in_block(hashes, j);
	}
	return sum > 1 ? 1 : sum;
}

/*
 * The rate from the fill alone. A segment of s bits that has received j
 * keys has 1 - (1 - 1/s)^j of them set; over a Poisson(lambda) block load
 * that averages 1 - e^(-lambda/s). So the fill gives lambda, and lambda the
 * rate, through the same exact sum as sizing: keys that were false
 * positives set no bits and are not counted, which is what makes this
 * right where an estimate from a count of keys answered new is not.
 */
double
bloom_fp_from_fill(const struct bloom *b)
{
	return bloom_fp_from_fill_part(b, 1.0);
}

double
bloom_fp_from_fill_part(const struct bloom *b, double share)
{
	double blocks = (double)b->nblocks * share;
	double fill = (double)b->bits_set / (blocks * BLOOM_BLOCK_BITS);
	double s = (double)(BLOOM_BLOCK_BITS / b->hashes);
	uint64_t nb = (uint64_t)(blocks + 0.5);

	if (b->bits_set == 0 || nb == 0)
		return 0;
	if (fill >= 1.0)
		return 1.0;
	return bloom_fp_rate_keys(nb, b->hashes, -s * log1p(-fill) * blocks);
}

/* Smallest block count whose expected rate at capacity meets goal. */
static uint64_t
blocks_for(uint64_t capacity, uint32_t k, double goal)
{
	uint64_t lo = 1, hi = 1;

	while (bloom_fp_rate(hi, k, capacity) > goal) {
		lo = hi;
		if (hi > (BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES))
			return 0;
		hi *= 2;
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (bloom_fp_rate(mid, k, capacity) <= goal)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
}

int
bloom_plan(uint64_t capacity, double error_rate, uint64_t *nblocks,
    uint32_t *hashes)
{
	static const uint32_t choices[] = { 4, 8, 16 };
	uint64_t best = 0, n;
	uint32_t bestk = 0;

	if (capacity == 0 || !(error_rate > 0 && error_rate < 1))
		return -1;
	for (size_t i = 0; i < sizeof(choices) / sizeof(choices[0]); i++) {
		n = blocks_for(capacity, choices[i],
		    error_rate * BLOOM_SIZING_MARGIN);
		if (n != 0 && (best == 0 || n < best)) {
			best = n;
			bestk = choices[i];
		}
	}
	if (best == 0 || best > BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES)
		return -1;
	*nblocks = best;
	*hashes = bestk;
	return 0;
}

/*
 * Huge pages where they pay (a random probe over a big array misses the TLB
 * otherwise) and cost at most a quarter more; small filters take whole
 * small pages, so a filter of 1000 keys costs kilobytes, not 2 MiB.
 */
size_t
bloom_map_bytes(uint64_t nblocks)
{
	size_t bytes = (size_t)nblocks * BLOOM_BLOCK_BYTES;

	if (bytes >= HUGE_PAGE_MIN)
		return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	return (bytes + SMALL_PAGE - 1) & ~(SMALL_PAGE - 1);
}

int
bloom_init(struct bloom *b, uint64_t nblocks, uint32_t hashes, uint64_t seed)
{
	size_t	 len;
	void	*p;

	memset(b, 0, sizeof(*b));
	if (nblocks == 0 || nblocks > BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES ||
	    (hashes != 4 && hashes != 8 && hashes != 16)) {
		errno = EINVAL;
		return -1;
	}
	len = bloom_map_bytes(nblocks);
	/* Anonymous pages are zero and cost nothing until touched; a mapping
	 * is page aligned, which covers the 64-byte block alignment. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
#ifdef MADV_HUGEPAGE
	/* One TLB entry per 2 MiB instead of per 4 KiB: random probes over a
	 * large filter otherwise miss the TLB as well as the cache. */
	if (len >= HUGE_PAGE_MIN)
		(void)madvise(p, len, MADV_HUGEPAGE);
#endif
	b->words = p;
	b->map_bytes = len;
	b->nblocks = nblocks;
	b->hashes = hashes;
	b->seed = seed;
	return 0;
}

int
bloom_create(struct bloom *b, uint64_t capacity, double error_rate,
    uint64_t seed)
{
	uint64_t nblocks;
	uint32_t hashes;

	if (bloom_plan(capacity, error_rate, &nblocks, &hashes) == -1) {
		errno = EINVAL;
		return -1;
	}
	return bloom_init(b, nblocks, hashes, seed);
}

int
bloom_populate_range(void *mem, size_t len)
{
	size_t	 page = (size_t)sysconf(_SC_PAGESIZE);
	char	*p = mem;

#ifdef MADV_POPULATE_WRITE
	/* in 4 MiB steps (about 0.5 ms of zeroing each): each call holds
	 * the process's mmap lock, which the event loop's thread may wait
	 * for (a page fault, a malloc) while a reload populates a big
	 * filter on another; 64 MiB steps let PING take 10 ms */
	size_t step = (size_t)4 << 20, off = 0;

	for (; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;

		if (madvise(p + off, n, MADV_POPULATE_WRITE) == -1)
			break;
	}
	if (off >= len)
		return 0;
	if (errno != EINVAL)
		return -1;	/* ENOMEM: not enough memory for the filter */
#endif
	/* kernels before 5.14: a write per page faults it in (the pages are
	 * zero, so writing zero changes nothing) */
	for (size_t off = 0; off < len; off += page)
		__atomic_store_n(p + off, 0, __ATOMIC_RELAXED);
	return 0;
}

int
bloom_populate(struct bloom *b)
{
	return bloom_populate_range(b->words, b->map_bytes);
}

void
bloom_free(struct bloom *b)
{
	if (b->words != NULL)
		munmap(b->words, b->map_bytes);
	memset(b, 0, sizeof(*b));
}

uint64_t
bloom_random_seed(void)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = bloom_mix((uint64_t)ts.tv_nsec ^
		    ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid());
	}
	return seed;
}

uint64_t
bloom_popcount(const struct bloom *b)
{
	uint64_t n = 0, words = b->nblocks * BLOOM_BLOCK_WORDS;

	for (uint64_t i = 0; i < words; i++)
		n += (uint64_t)__builtin_popcountll(b->words[i]);
	return n;
}

void
bloom_or_range(struct bloom *b, uint64_t first, const void *src, uint64_t n)
{
	uint64_t	*w = b->words + first * BLOOM_BLOCK_WORDS;
	const unsigned char *p = src;
	uint64_t	 words = n * BLOOM_BLOCK_WORDS, add = 0;

	for (uint64_t i = 0; i < words; i++) {
		uint64_t v, old, nw;

		memcpy(&v, p + i * 8, 8);	/* src need not be aligned */
		if (v == 0)
			continue;
		old = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
		if ((nw = old | v) == old)
			continue;
		__atomic_store_n(&w[i], nw, __ATOMIC_RELAXED);
		add += (uint64_t)__builtin_popcountll(nw & ~old);
	}
	b->bits_set += add;
}

void
bloom_clear_range(struct bloom *b, uint64_t first, uint64_t n)
{
	uintptr_t	 page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uint64_t	*w = b->words + first * BLOOM_BLOCK_WORDS;
	uint64_t	 words = n * BLOOM_BLOCK_WORDS, gone = 0;
	uintptr_t	 a = (uintptr_t)w, e = (uintptr_t)(w + words);
	uintptr_t	 pa = (a + page - 1) & ~(page - 1), pe = e & ~(page - 1);

	for (uint64_t i = 0; i < words; i++)
		gone += (uint64_t)__builtin_popcountll(
		    __atomic_load_n(&w[i], __ATOMIC_RELAXED));
	if (pa < pe && madvise((void *)pa, pe - pa, MADV_DONTNEED) == 0) {
		/* the edges the pages leave */
		for (uint64_t *q = w; (uintptr_t)q < pa; q++)
			__atomic_store_n(q, 0, __ATOMIC_RELAXED);
		for (uint64_t *q = (uint64_t *)pe; (uintptr_t)q < e; q++)
			__atomic_store_n(q, 0, __ATOMIC_RELAXED);
	} else
		for (uint64_t i = 0; i < words; i++)
			__atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
	b->bits_set -= gone < b->bits_set ? gone : b->bits_set;
}

uint64_t
bloom_range_keys(const struct bloom *b, uint64_t first, uint64_t n)
{
	const uint64_t	*w = b->words + first * BLOOM_BLOCK_WORDS;
	uint64_t	 words = n * BLOOM_BLOCK_WORDS, set = 0;
	double		 m = (double)n * BLOOM_BLOCK_BITS, keys;

	for (uint64_t i = 0; i < words; i++)
		set += (uint64_t)__builtin_popcountll(
		    __atomic_load_n(&w[i], __ATOMIC_RELAXED));
	if (set == 0 || b->hashes == 0)
		return 0;
	if ((double)set >= m)
		return (uint64_t)(m / b->hashes);
	keys = -(m / b->hashes) * log1p(-(double)set / m);
	return (uint64_t)(keys + 0.5);
}
