/*
 * cuckoo.c - sizing, memory and the kick walk of the cuckoo filter; the
 * lookups, deletes and the common adds are inline in cuckoo.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bloom.h"
#include "cuckoo.h"

static void	cow_end(struct cuckoo *);

/* Whether n bytes at p are all 0 (a range or chunk never written). */
static int
all_zero(const unsigned char *p, uint64_t n)
{
	uint64_t i = 0, w, acc = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		if ((acc |= w) != 0)
			return 0;
	}
	for (; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

#define HUGE_PAGE	(2UL << 20)
#define HUGE_PAGE_MIN	(4 * HUGE_PAGE)
#define SMALL_PAGE	4096UL
#define TAIL_BYTES	8	/* the last bucket is read as a 64-bit word */

/*
 * 1 - (1 - 1/(2^f - 1))^(2 * 4 * a) at load a = n / (4 * nbuckets): a
 * query meets 8a fingerprints on average, each equal to its own with
 * chance 1 / (2^f - 1). (A key whose two buckets are one meets half as
 * many: the formula is an upper bound there.)
 */
double
cuckoo_fp_rate(uint64_t nbuckets, uint32_t fpbits, double n)
{
	double load, p;

	if (!(n > 0) || nbuckets == 0)
		return 0;
	load = n / ((double)nbuckets * CUCKOO_SLOTS);
	if (load > 1)
		load = 1;
	p = 1.0 / (ldexp(1.0, (int)fpbits) - 1.0);
	return -expm1(2.0 * CUCKOO_SLOTS * load * log1p(-p));
}

double
cuckoo_fp_estimate(const struct cuckoo *c)
{
	return cuckoo_fp_rate(c->nbuckets, c->fpbits, (double)c->count);
}

uint64_t
cuckoo_table_bytes_for(uint64_t nbuckets, uint32_t fpbits)
{
	return (nbuckets * CUCKOO_SLOTS * fpbits + 7) / 8;
}

/*
 * For each f, the highest load (at most CUCKOO_MAX_LOAD) whose rate meets
 * the goal gives the fewest buckets for capacity; the plan is the f with
 * the fewest bits overall (a smaller f at a lower load can beat a larger
 * one at the full load: at 0.1 %, f = 13 at 92 % needs 14.1 bits a key,
 * f = 14 at 95 % needs 14.7).
 */
int
cuckoo_plan(uint64_t capacity, double error_rate, uint64_t *nbuckets,
    uint32_t *fpbits)
{
	uint64_t best_bits = 0, best_n = 0, n;
	uint32_t best_f = 0;
	double goal = error_rate * CUCKOO_SIZING_MARGIN, load, p;

	if (capacity == 0 || !(error_rate > 0 && error_rate < 1))
		return -1;
	for (uint32_t f = CUCKOO_FP_MIN; f <= CUCKOO_FP_MAX; f++) {
		p = 1.0 / (ldexp(1.0, (int)f) - 1.0);
		/* (1 - p)^(8 load) >= 1 - goal */
		load = log1p(-goal) / (2.0 * CUCKOO_SLOTS * log1p(-p));
		if (load > CUCKOO_MAX_LOAD)
			load = CUCKOO_MAX_LOAD;
		if (load < CUCKOO_MIN_LOAD)
			continue;	/* more bits pay less than a larger f */
		if ((double)capacity / (CUCKOO_SLOTS * load) > 1e15)
			continue;
		n = (uint64_t)ceil((double)capacity / (CUCKOO_SLOTS * load));
		if (n == 0)
			n = 1;
		/* the rounding of load may leave the rate a hair above */
		while (cuckoo_fp_rate(n, f, (double)capacity) > goal)
			n++;
		if (cuckoo_table_bytes_for(n, f) + TAIL_BYTES >
		    CUCKOO_MAX_BYTES)
			continue;
		if (best_n == 0 || n * f < best_bits) {
			best_bits = n * f;
			best_n = n;
			best_f = f;
		}
	}
	if (best_n == 0)
		return -1;
	*nbuckets = best_n;
	*fpbits = best_f;
	return 0;
}

int
cuckoo_plan_ranges(uint64_t capacity, double error_rate, uint64_t *nbuckets,
    uint32_t *fpbits)
{
	double	 mean, range;
	uint64_t n, per;

	if (capacity == 0)
		return -1;
	mean = (double)capacity / CUCKOO_RANGES;
	range = ceil(mean + 4.5 * sqrt(mean) + 1);
	if (range * CUCKOO_RANGES > 1e15 || cuckoo_plan((uint64_t)range *
	    CUCKOO_RANGES, error_rate, &n, fpbits) == -1)
		return -1;
	per = (n + CUCKOO_RANGES - 1) / CUCKOO_RANGES;
	per += per & 1;
	if (cuckoo_table_bytes_for(per * CUCKOO_RANGES, *fpbits) +
	    TAIL_BYTES > CUCKOO_MAX_BYTES)
		return -1;
	*nbuckets = per * CUCKOO_RANGES;
	return 0;
}

static size_t
map_bytes(uint64_t table_bytes)
{
	size_t bytes = (size_t)table_bytes + TAIL_BYTES;

	if (bytes >= HUGE_PAGE_MIN)
		return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	return (bytes + SMALL_PAGE - 1) & ~(SMALL_PAGE - 1);
}

int
cuckoo_init(struct cuckoo *c, uint64_t nbuckets, uint32_t fpbits,
    uint64_t seed)
{
	return cuckoo_init_ranges(c, nbuckets, fpbits, seed, 1);
}

int
cuckoo_init_ranges(struct cuckoo *c, uint64_t nbuckets, uint32_t fpbits,
    uint64_t seed, uint32_t nranges)
{
	size_t	 len;
	void	*p;

	memset(c, 0, sizeof(*c));
	if ((nranges != 1 && (nranges != CUCKOO_RANGES ||
	    nbuckets % (2 * CUCKOO_RANGES) != 0)) ||
	    nbuckets == 0 || fpbits < CUCKOO_FP_MIN ||
	    fpbits > CUCKOO_FP_MAX ||
	    nbuckets > CUCKOO_MAX_BYTES / CUCKOO_SLOTS ||
	    cuckoo_table_bytes_for(nbuckets, fpbits) + TAIL_BYTES >
	    CUCKOO_MAX_BYTES) {
		errno = EINVAL;
		return -1;
	}
	len = map_bytes(cuckoo_table_bytes_for(nbuckets, fpbits));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
#ifdef MADV_HUGEPAGE
	if (len >= HUGE_PAGE_MIN)
		(void)madvise(p, len, MADV_HUGEPAGE);
#endif
	c->table = p;
	c->map_bytes = len;
	c->nbuckets = nbuckets;
	c->per = nbuckets / nranges;
	c->range_mask = nranges - 1;
	c->fpbits = fpbits;
	c->bucket_bits = CUCKOO_SLOTS * fpbits;
	c->fp_recip = (65536 + fpbits - 1) / fpbits;
	c->bucket_mask = c->bucket_bits == 64 ? ~0ULL :
	    (1ULL << c->bucket_bits) - 1;
	for (unsigned s = 0; s < CUCKOO_SLOTS; s++)
		c->lane_low |= 1ULL << (s * fpbits);
	c->lane_high = c->lane_low << (fpbits - 1);
	c->seed = seed;
	return 0;
}

int
cuckoo_create(struct cuckoo *c, uint64_t capacity, double error_rate,
    uint64_t seed)
{
	uint64_t nbuckets;
	uint32_t fpbits;

	if (cuckoo_plan(capacity, error_rate, &nbuckets, &fpbits) == -1) {
		memset(c, 0, sizeof(*c));
		errno = EINVAL;
		return -1;
	}
	return cuckoo_init(c, nbuckets, fpbits, seed);
}

int
cuckoo_populate(struct cuckoo *c)
{
	return bloom_populate_range(c->table, c->map_bytes);
}

void
cuckoo_free(struct cuckoo *c)
{
	if (c->cow != NULL)
		cow_end(c);
	if (c->table != NULL)
		munmap(c->table, c->map_bytes);
	memset(c, 0, sizeof(*c));
}

int
cuckoo_add_second(struct cuckoo *c, uint64_t fp, uint64_t i1, uint64_t i2,
    uint64_t h)
{
	uint64_t e = cuckoo_bucket_empties(c, cuckoo_bucket_get(c, i2));

	if (e == 0)
		return cuckoo_add_slow(c, fp, i1, i2, h);
	cuckoo_bucket_fill(c, i2, e, fp);
	c->count++;
	return 0;
}

/*
 * Both buckets are full. A random walk: put fp in a random slot of the
 * current bucket, carry the fingerprint it held to that one's other
 * bucket, and so on until a bucket has room. Each move is recorded; if
 * none of CUCKOO_MAX_KICKS moves finds room, the moves are swapped back in
 * reverse order (each a swap, its own inverse), which leaves every slot as
 * it was and the original fp in hand, unstored.
 *
 * The PRNG is splitmix64 seeded from h: deterministic, and independent of
 * any add before this one.
 */
int
cuckoo_add_slow(struct cuckoo *c, uint64_t fp, uint64_t i1, uint64_t i2,
    uint64_t h)
{
	uint64_t	 path[CUCKOO_MAX_KICKS];
	uint8_t		 slot[CUCKOO_MAX_KICKS];
	uint64_t	 rng = h ^ 0x6a09e667f3bcc909ULL, r = 0, b, i, old;
	uint64_t	 base = cuckoo_base(c, h);
	unsigned	 bits = 0, s;
	int		 k, fs;

	for (k = 0; k < CUCKOO_MAX_KICKS; k++) {
		if (bits < 2) {
			/* splitmix64: 32 choices of 2 bits per draw */
			uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			r = z ^ (z >> 31);
			bits = 64;
		}
		if (k == 0) {
			i = (r & 1) ? i2 : i1;
			r >>= 1;
			bits--;
		} else
			i = cuckoo_alt_in(c, base, i, fp);
		b = cuckoo_bucket_get(c, i);
		if (k > 0 && (fs = cuckoo_bucket_free(c, b)) >= 0) {
			cuckoo_bucket_put(c, i,
			    cuckoo_slot_set(c, b, (unsigned)fs, fp));
			c->count++;
			return 0;
		}
		s = (unsigned)(r & 3);
		r >>= 2;
		bits -= 2;
		old = cuckoo_slot_get(c, b, s);
		cuckoo_bucket_put(c, i, cuckoo_slot_set(c, b, s, fp));
		path[k] = i;
		slot[k] = (uint8_t)s;
		fp = old;
	}
	/* the last kicked-out fp has nowhere to go: undo every move */
	while (k-- > 0) {
		b = cuckoo_bucket_get(c, path[k]);
		old = cuckoo_slot_get(c, b, slot[k]);
		cuckoo_bucket_put(c, path[k], cuckoo_slot_set(c, b, slot[k],
		    fp));
		fp = old;
	}
	return -1;
}

/* ---- copy-on-write ---- */

/* A chunk is copied whole, by the step or by the first change in it. */
#define COW_CHUNK	((uint64_t)64 << 10)

struct cuckoo_cow {
	uint8_t		*dst;
	uint64_t	 bytes;		/* of the table */
	uint64_t	 nchunks, left;	/* chunks in all, not yet copied */
	uint64_t	 next;		/* where the step looks first */
	uint64_t	*done;		/* a bit per chunk */
};

static void
cow_copy(struct cuckoo *c, uint64_t k)
{
	struct cuckoo_cow	*w = c->cow;
	uint64_t		 off = k * COW_CHUNK, n;

	if (w->done[k / 64] & (1ULL << (k % 64)))
		return;
	n = w->bytes - off < COW_CHUNK ? w->bytes - off : COW_CHUNK;
	/* dst is new and zero: a chunk never written (another node's
	 * slots' range) stays unfaulted there */
	if (!all_zero(c->table + off, n))
		memcpy(w->dst + off, c->table + off, (size_t)n);
	w->done[k / 64] |= 1ULL << (k % 64);
	w->left--;
}

static void
cow_end(struct cuckoo *c)
{
	free(c->cow->done);
	free(c->cow);
	c->cow = NULL;
}

int
cuckoo_cow_start(struct cuckoo *c, struct cuckoo *dst)
{
	struct cuckoo_cow *w;

	if (c->cow != NULL || dst->nbuckets != c->nbuckets ||
	    dst->fpbits != c->fpbits || (w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	w->dst = dst->table;
	w->bytes = cuckoo_table_bytes(c);
	w->nchunks = w->left = (w->bytes + COW_CHUNK - 1) / COW_CHUNK;
	if ((w->done = calloc((size_t)(w->nchunks + 63) / 64,
	    sizeof(*w->done))) == NULL) {
		free(w);
		return -1;
	}
	dst->count = c->count;
	c->cow = w;
	if (w->left == 0)
		cow_end(c);
	return 0;
}

void
cuckoo_copy_table(struct cuckoo *dst, const struct cuckoo *c)
{
	uint64_t bytes = cuckoo_table_bytes(c);

	for (uint64_t off = 0; off < bytes; off += COW_CHUNK) {
		uint64_t n = bytes - off < COW_CHUNK ? bytes - off : COW_CHUNK;

		if (!all_zero(c->table + off, n))
			memcpy(dst->table + off, c->table + off, (size_t)n);
	}
	dst->count = c->count;
}

int
cuckoo_cow_is(const struct cuckoo *c, const struct cuckoo *dst)
{
	return c->cow != NULL && c->cow->dst == dst->table;
}

void
cuckoo_cow_touch(struct cuckoo *c, uint64_t off)
{
	uint64_t last = off + 7 < c->cow->bytes ? off + 7 : c->cow->bytes - 1;

	cow_copy(c, off / COW_CHUNK);
	cow_copy(c, last / COW_CHUNK);
	if (c->cow->left == 0)
		cow_end(c);
}

int
cuckoo_cow_step(struct cuckoo *c, size_t max_bytes)
{
	struct cuckoo_cow	*w = c->cow;
	uint64_t		 budget = max_bytes;

	if (w == NULL)
		return 1;
	while (w->left > 0 && w->next < w->nchunks) {
		int copied = !(w->done[w->next / 64] &
		    (1ULL << (w->next % 64)));

		cow_copy(c, w->next++);
		if (copied && (budget = budget > COW_CHUNK ? budget -
		    COW_CHUNK : 0) == 0)
			break;
	}
	if (w->left > 0)
		return 0;
	cow_end(c);
	return 1;
}

void
cuckoo_cow_finish(struct cuckoo *c)
{
	while (!cuckoo_cow_step(c, SIZE_MAX))
		;
}

void
cuckoo_cow_cancel(struct cuckoo *c)
{
	if (c->cow != NULL)
		cow_end(c);
}

uint64_t
cuckoo_recount(const struct cuckoo *c)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < c->nbuckets; i++) {
		uint64_t b = cuckoo_bucket_get(c, i);

		for (unsigned s = 0; s < CUCKOO_SLOTS; s++)
			n += cuckoo_slot_get(c, b, s) != 0;
	}
	return n;
}

/* ---- ranges ---- */

/* A snapshot's copy takes bytes [off, off + len) before they change. */
static void
cow_range(struct cuckoo *c, uint64_t off, uint64_t len)
{
	for (uint64_t o = off; c->cow != NULL && o < off + len; o += COW_CHUNK)
		cuckoo_cow_touch(c, o);
	if (c->cow != NULL && len > 0)
		cuckoo_cow_touch(c, off + len - 1);
}

/* Bytes [off, off + len) zeroed: their whole pages given back to the
 * kernel (MADV_DONTNEED: anonymous pages read as zero again). */
static void
zero_bytes(struct cuckoo *c, uint64_t off, uint64_t len)
{
	uintptr_t	 page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t	 a = (uintptr_t)(c->table + off), e = a + len;
	uintptr_t	 pa = (a + page - 1) & ~(page - 1), pe = e & ~(page - 1);

	if (pa < pe && madvise((void *)pa, pe - pa, MADV_DONTNEED) == 0) {
		memset((void *)a, 0, pa - a);
		memset((void *)pe, 0, e - pe);
	} else
		memset((void *)a, 0, len);
}

uint64_t
cuckoo_range_count(const struct cuckoo *c, uint64_t first, uint64_t n)
{
	uint64_t k = 0;

	for (uint64_t i = first * c->per; i < (first + n) * c->per; i++) {
		uint64_t b = cuckoo_bucket_get(c, i);

		if (b == 0)
			continue;
		for (unsigned s = 0; s < CUCKOO_SLOTS; s++)
			k += cuckoo_slot_get(c, b, s) != 0;
	}
	return k;
}

void
cuckoo_range_clear(struct cuckoo *c, uint64_t first, uint64_t n)
{
	uint64_t held = cuckoo_range_count(c, first, n);
	uint64_t len = n * cuckoo_range_bytes(c), off = first *
		    cuckoo_range_bytes(c);

	cow_range(c, off, len);
	zero_bytes(c, off, len);
	c->count -= held < c->count ? held : c->count;
}

void
cuckoo_range_set(struct cuckoo *c, uint64_t first, uint64_t n,
    const unsigned char *src)
{
	uint64_t held = cuckoo_range_count(c, first, n);
	uint64_t rb = cuckoo_range_bytes(c);

	cow_range(c, first * rb, n * rb);
	/* a range empty on the source faults in no page here */
	for (uint64_t r = 0; r < n; r++)
		if (all_zero(src + r * rb, rb))
			zero_bytes(c, (first + r) * rb, rb);
		else
			memcpy(c->table + (first + r) * rb, src + r * rb,
			    (size_t)rb);
	c->count -= held < c->count ? held : c->count;
	c->count += cuckoo_range_count(c, first, n);
}
