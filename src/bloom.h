/*
 * bloom.h - a split-block Bloom filter.
 *
 * The bit array is a sequence of 512-bit blocks, one cache line each. A key
 * is hashed once with XXH3-64 (seeded per filter); the hash picks one block,
 * and inside it the block is cut into k equal segments (k = 4, 8 or 16),
 * each of which gets exactly one bit. So a lookup costs one memory miss, and
 * because the k bits of a key never collide with each other the
 * false-positive rate has an exact closed form (bloom_fp_rate) that the
 * sizing uses.
 *
 * Concurrency: one thread (the event loop) sets bits; a snapshot thread may
 * read the array at the same time. Bits only ever go from 0 to 1, and every
 * word is stored with a relaxed atomic store, so a concurrent reader sees each
 * word either before or after an update, never torn; see snapshot.c.
 *
 * No I/O and no libevent here.
 */
#ifndef SEEND_BLOOM_H
#define SEEND_BLOOM_H

#include <stddef.h>
#include <stdint.h>
/* XXH3 compiled into the caller, not called through libxxhash's PLT: the
 * same algorithm and output (the header is the installed libxxhash's), a
 * few ns less per key on the hot path. */
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#define BLOOM_BLOCK_BITS	512
#define BLOOM_BLOCK_WORDS	8
#define BLOOM_BLOCK_BYTES	64
/* The layout id stored in snapshots: changing how bits are derived from the
 * hash needs a new id, or old snapshots would answer wrongly. */
#define BLOOM_LAYOUT_SPLIT512	1
/* The same blocks laid out slot by slot (a filter partitioned over a
 * cluster, filter.h): every slice's nblocks a multiple of KEYSLOT_COUNT and
 * the key's slot in the top KEYSLOT_BITS of its hash, so that the blocks of
 * slot s are [s * nblocks / 16384, (s + 1) * nblocks / 16384). Its keys'
 * hashes are not those of a layout 1 filter: the id keeps them apart. */
#define BLOOM_LAYOUT_SLOTS512	3
/* Sizing aims below the target so that a measured rate at capacity, which
 * scatters around the expectation, stays at or below error_rate. */
#define BLOOM_SIZING_MARGIN	0.9
#define BLOOM_MAX_BYTES		(1ULL << 40)	/* 1 TiB */

struct bloom {
	uint64_t	*words;		/* nblocks * 8, 64-byte aligned, mmap'd */
	uint64_t	 nblocks;
	uint32_t	 hashes;	/* k: segments per block, bits per key */
	uint64_t	 seed;		/* XXH3 seed, kept in the snapshot */
	uint64_t	 count;		/* keys added (answers of 0) */
	uint64_t	 bits_set;	/* bits that are 1 */
	size_t		 map_bytes;	/* the mapping: bytes rounded up to a
					   page, a huge page when large */
};

/*
 * Chooses nblocks and k for capacity keys at error_rate. Returns 0, or -1 if
 * the parameters are out of range or need more than BLOOM_MAX_BYTES.
 */
int	bloom_plan(uint64_t capacity, double error_rate, uint64_t *nblocks,
	    uint32_t *hashes);
/* Expected false-positive rate of a filter of this shape holding n keys. */
double	bloom_fp_rate(uint64_t nblocks, uint32_t hashes, uint64_t n);
double	bloom_fp_rate_keys(uint64_t nblocks, uint32_t hashes, double n);
/* The rate estimated from the bits set (exact for random keys). */
double	bloom_fp_from_fill(const struct bloom *);
/* The same for the share (0, 1] of its blocks that holds its bits (a
 * node's part of a filter partitioned by slot). */
double	bloom_fp_from_fill_part(const struct bloom *, double share);
/* The bytes bloom_init maps for an array of nblocks. */
size_t	bloom_map_bytes(uint64_t nblocks);
/* Allocates a zeroed filter; returns 0, or -1 with errno set. */
int	bloom_init(struct bloom *, uint64_t nblocks, uint32_t hashes,
	    uint64_t seed);
/* bloom_plan then bloom_init. */
int	bloom_create(struct bloom *, uint64_t capacity, double error_rate,
	    uint64_t seed);
void	bloom_free(struct bloom *);
/*
 * Faults in the whole array now (as huge pages where the kernel gives
 * them): a new filter's first keys would otherwise stall while the kernel
 * zeroes its pages, and a machine short of memory fails here, at start,
 * rather than under traffic. Returns 0, or -1 with errno set.
 */
int	bloom_populate(struct bloom *);
/* The same for any zero mapping (a cuckoo table's). */
int	bloom_populate_range(void *, size_t len);
/* A random seed from getrandom(2), for a new filter. */
uint64_t bloom_random_seed(void);
/* Counts the 1 bits by reading the whole array (tests and tools; seend
 * keeps bits_set up to date instead). */
uint64_t bloom_popcount(const struct bloom *);
/*
 * A slot's move between nodes (cluster_move.c): blocks [first, first + n)
 * OR-ed with src's n blocks (only words that gain a bit are written, each
 * with a relaxed atomic store, so a range that adds nothing faults in no
 * page), and the same blocks cleared: their whole pages given back to the
 * kernel (MADV_DONTNEED: anonymous pages read as zero again), the rest
 * zeroed. Both keep bits_set. The caller keeps the range inside the array.
 */
void	bloom_or_range(struct bloom *, uint64_t first, const void *src,
	    uint64_t n);
void	bloom_clear_range(struct bloom *, uint64_t first, uint64_t n);
/* The keys blocks [first, first + n) hold, estimated from their bits set
 * (-(m / k) ln(1 - X / m), m the range's bits, X those set): what a
 * moved slot's range adds to or takes from a slice's count. */
uint64_t bloom_range_keys(const struct bloom *, uint64_t first, uint64_t n);

static inline size_t
bloom_bytes(const struct bloom *b)
{
	return (size_t)b->nblocks * BLOOM_BLOCK_BYTES;
}

static inline uint64_t
bloom_hash(const struct bloom *b, const void *key, size_t len)
{
	return XXH3_64bits_withSeed(key, len, b->seed);
}

/* The block: a multiply-shift maps the hash onto [0, nblocks) without a
 * division and uses the hash's high bits. */
static inline uint64_t *
bloom_block(const struct bloom *b, uint64_t h)
{
	uint64_t i = (uint64_t)(((unsigned __int128)h * b->nblocks) >> 64);

	return b->words + i * BLOOM_BLOCK_WORDS;
}

static inline void
bloom_prefetch(const struct bloom *b, uint64_t h)
{
	__builtin_prefetch(bloom_block(b, h), 1, 3);
}

/* Fully unrolled word loops keep the masks and the block in registers
 * (GCC at -O2 leaves them as loops over arrays on the stack). */
#if defined(__GNUC__) && !defined(__clang__)
#define BLOOM_UNROLL	_Pragma("GCC unroll 8")
#elif defined(__clang__)
#define BLOOM_UNROLL	_Pragma("unroll 8")
#else
#define BLOOM_UNROLL
#endif

/* A 64-bit finaliser (murmur3 fmix64): the in-block bits come from a
 * remix of the hash so that they are independent of the block choice. */
static inline uint64_t
bloom_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * The k bits of hash h as one mask per word of the block: the same bits as
 * segment loop that defines the layout (segment i takes the next log2(512/k)
 * bits of bloom_mix(h), then of bloom_mix(h ^ golden) once too few are
 * left), but
 * each word is computed on its own, with no read-modify-write of mask[] at
 * a data-dependent index (a store-forwarding chain of ~4 cycles per bit).
 */
static inline __attribute__((always_inline)) void
bloom_masks(const struct bloom *b, uint64_t h, uint64_t mask[BLOOM_BLOCK_WORDS])
{
	uint64_t bits = bloom_mix(h), p;

	switch (b->hashes) {
	case 4:		/* 128-bit segments: segment i is words 2i, 2i+1 */
		BLOOM_UNROLL
		for (int i = 0; i < 4; i++) {
			p = (bits >> (7 * i)) & 127;
			mask[2 * i] = (uint64_t)(p < 64) << (p & 63);
			mask[2 * i + 1] = (uint64_t)(p >= 64) << (p & 63);
		}
		break;
	case 8:		/* 64-bit segments: segment i is word i */
		BLOOM_UNROLL
		for (int i = 0; i < 8; i++)
			mask[i] = 1ULL << ((bits >> (6 * i)) & 63);
		break;
	default: {	/* 32-bit segments: 2w and 2w+1 share word w; 12 from
			 * the first mix (60 bits), 4 from the second */
		uint64_t more = bloom_mix(h ^ 0x9e3779b97f4a7c15ULL);

		BLOOM_UNROLL
		for (int w = 0; w < 6; w++)
			mask[w] = 1ULL << ((bits >> (10 * w)) & 31) |
			    1ULL << (32 + ((bits >> (10 * w + 5)) & 31));
		BLOOM_UNROLL
		for (int w = 6; w < 8; w++)
			mask[w] = 1ULL << ((more >> (10 * (w - 6))) & 31) |
			    1ULL << (32 + ((more >> (10 * (w - 6) + 5)) & 31));
		break;
	}
	}
}

/* bloom_check with the key's masks already computed (bloom_masks): a
 * filter of several slices with the same k computes them once. */
static inline __attribute__((always_inline)) int
bloom_check_masks(const struct bloom *b, uint64_t h,
    const uint64_t mask[BLOOM_BLOCK_WORDS])
{
	const uint64_t	*blk = bloom_block(b, h);
	uint64_t	 missing = 0;

	BLOOM_UNROLL
	for (int w = 0; w < BLOOM_BLOCK_WORDS; w++)
		missing |= mask[w] & ~blk[w];
	return missing == 0;
}

/* 1 if every bit of the key is set (seen, or a false positive), else 0. */
static inline __attribute__((always_inline)) int
bloom_check(const struct bloom *b, uint64_t h)
{
	uint64_t mask[BLOOM_BLOCK_WORDS];

	bloom_masks(b, h, mask);
	return bloom_check_masks(b, h, mask);
}

/*
 * Test-and-set: sets the key's bits and returns what bloom_check would have
 * returned before; a repeated key stores nothing, so its line stays clean.
 * No branch on the loaded words but "anything new?" (a data-dependent
 * branch per word mispredicts while the line is in flight), and no
 * popcount (a libgcc call without -mpopcnt): with k = 4 or 8 a word holds
 * at most one of the key's bits, so the words that change count the new
 * bits; with k = 16 each 32-bit half holds one, so the halves that change
 * do.
 */
static inline __attribute__((always_inline)) int
bloom_add_masks(struct bloom *b, uint64_t h,
    const uint64_t mask[BLOOM_BLOCK_WORDS])
{
	uint64_t	*blk = bloom_block(b, h);
	uint64_t	 word[BLOOM_BLOCK_WORDS];
	uint64_t	 added = 0, fresh;

	if (b->hashes == 16) {
		BLOOM_UNROLL
		for (int w = 0; w < BLOOM_BLOCK_WORDS; w++) {
			fresh = mask[w] & ~blk[w];
			word[w] = blk[w] | mask[w];
			added += (uint64_t)((uint32_t)fresh != 0) +
			    (uint64_t)((fresh >> 32) != 0);
		}
	} else {
		BLOOM_UNROLL
		for (int w = 0; w < BLOOM_BLOCK_WORDS; w++) {
			word[w] = blk[w] | mask[w];
			added += (uint64_t)(word[w] != blk[w]);
		}
	}
	if (added == 0)
		return 1;
	BLOOM_UNROLL
	for (int w = 0; w < BLOOM_BLOCK_WORDS; w++)
		__atomic_store_n(&blk[w], word[w], __ATOMIC_RELAXED);
	b->bits_set += added;
	b->count++;
	return 0;
}

static inline __attribute__((always_inline)) int
bloom_add(struct bloom *b, uint64_t h)
{
	uint64_t mask[BLOOM_BLOCK_WORDS];

	bloom_masks(b, h, mask);
	return bloom_add_masks(b, h, mask);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/*
 * The same block operations with AVX2, where the CPU has it (bloom_avx2,
 * set at start): the sixteen 32-bit or eight 64-bit masks of the layout
 * above made by variable shifts in two 256-bit registers, tested and set
 * two instructions each. A request's scalar masks and word loops were its
 * largest cost (about 150 instructions of 430, bench/RESULTS.md); the
 * bits, and so every file, are the same (test_bloom compares both ways).
 * The batches call them through functions of that target (command.c).
 */
#define BLOOM_AVX2		1
#define BLOOM_AVX2_INLINE \
	static inline __attribute__((always_inline, target("avx2,popcnt")))

extern int	bloom_avx2;	/* 1: the CPU has AVX2 and POPCNT */

/* bloom_masks' words 0-3 in m[0], 4-7 in m[1]. */
BLOOM_AVX2_INLINE void
bloom_masks_avx2(const struct bloom *b, uint64_t h, __m256i m[2])
{
	const uint64_t	 bits = bloom_mix(h);
	const __m256i	 v = _mm256_set1_epi64x((long long)bits);
	const __m256i	 one = _mm256_set1_epi64x(1);

	switch (b->hashes) {
	case 4: {
		/* word 2i: 1 << p, word 2i+1: 1 << (p - 64); a count of 64
		 * or more (p - 64 wraps when p < 64) shifts to 0 */
		const __m256i	p127 = _mm256_set1_epi64x(127);
		const __m256i	hi = _mm256_set_epi64x(64, 0, 64, 0);
		__m256i		p;

		p = _mm256_and_si256(_mm256_srlv_epi64(v,
		    _mm256_set_epi64x(7, 7, 0, 0)), p127);
		m[0] = _mm256_sllv_epi64(one, _mm256_sub_epi64(p, hi));
		p = _mm256_and_si256(_mm256_srlv_epi64(v,
		    _mm256_set_epi64x(21, 21, 14, 14)), p127);
		m[1] = _mm256_sllv_epi64(one, _mm256_sub_epi64(p, hi));
		break;
	}
	case 8: {
		const __m256i	p63 = _mm256_set1_epi64x(63);

		m[0] = _mm256_sllv_epi64(one, _mm256_and_si256(
		    _mm256_srlv_epi64(v, _mm256_set_epi64x(18, 12, 6, 0)), p63));
		m[1] = _mm256_sllv_epi64(one, _mm256_and_si256(
		    _mm256_srlv_epi64(v, _mm256_set_epi64x(42, 36, 30, 24)),
		    p63));
		break;
	}
	default: {
		/* word w's halves take the 5-bit fields at 10w and 10w + 5
		 * (of bits for words 0-5, of more for 6 and 7): each 64-bit
		 * lane shifted to its field, its high half to the next */
		const uint64_t	 more = bloom_mix(h ^ 0x9e3779b97f4a7c15ULL);
		const __m256i	 v1 = _mm256_set_epi64x((long long)more,
				    (long long)more, (long long)bits,
				    (long long)bits);
		const __m256i	 p31 = _mm256_set1_epi32(31);
		const __m256i	 one32 = _mm256_set1_epi32(1);
		__m256i		 q;

		q = _mm256_srlv_epi64(v, _mm256_set_epi64x(30, 20, 10, 0));
		q = _mm256_blend_epi32(q, _mm256_slli_epi64(
		    _mm256_srli_epi64(q, 5), 32), 0xaa);
		m[0] = _mm256_sllv_epi32(one32, _mm256_and_si256(q, p31));
		q = _mm256_srlv_epi64(v1, _mm256_set_epi64x(10, 0, 50, 40));
		q = _mm256_blend_epi32(q, _mm256_slli_epi64(
		    _mm256_srli_epi64(q, 5), 32), 0xaa);
		m[1] = _mm256_sllv_epi32(one32, _mm256_and_si256(q, p31));
		break;
	}
	}
}

/* bloom_check, with AVX2. */
BLOOM_AVX2_INLINE int
bloom_check_avx2(const struct bloom *b, uint64_t h)
{
	const __m256i	*blk = (const __m256i *)bloom_block(b, h);
	__m256i		 m[2], missing;

	bloom_masks_avx2(b, h, m);
	missing = _mm256_or_si256(
	    _mm256_andnot_si256(_mm256_loadu_si256(blk), m[0]),
	    _mm256_andnot_si256(_mm256_loadu_si256(blk + 1), m[1]));
	return _mm256_testz_si256(missing, missing);
}

/* bloom_add, with AVX2: the new bits are counted by the 32-bit halves
 * (k = 16) or the words (k = 4, 8) they change, as there. The block is
 * stored as two 32-byte halves, not word by word with relaxed atomics:
 * the snapshot thread reads words (snapshot.c's write_array), which x86
 * does not tear, and a rewritten word keeps every bit it had. */
BLOOM_AVX2_INLINE int
bloom_add_avx2(struct bloom *b, uint64_t h)
{
	__m256i		*blk = (__m256i *)bloom_block(b, h);
	__m256i		 m[2], w0, w1, f0, f1;
	const __m256i	 zero = _mm256_setzero_si256();
	unsigned	 same;

	bloom_masks_avx2(b, h, m);
	w0 = _mm256_loadu_si256(blk);
	w1 = _mm256_loadu_si256(blk + 1);
	f0 = _mm256_andnot_si256(w0, m[0]);
	f1 = _mm256_andnot_si256(w1, m[1]);
	if (_mm256_testz_si256(_mm256_or_si256(f0, f1),
	    _mm256_or_si256(f0, f1)))
		return 1;
	if (b->hashes == 16)
		same = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
		    _mm256_cmpeq_epi32(f0, zero))) |
		    (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
		    _mm256_cmpeq_epi32(f1, zero))) << 8;
	else
		same = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(
		    _mm256_cmpeq_epi64(f0, zero))) |
		    (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(
		    _mm256_cmpeq_epi64(f1, zero))) << 4 | 0xff00;
	_mm256_storeu_si256(blk, _mm256_or_si256(w0, m[0]));
	_mm256_storeu_si256(blk + 1, _mm256_or_si256(w1, m[1]));
	b->bits_set += 16 - (uint64_t)__builtin_popcount(same);
	b->count++;
	return 0;
}
#endif

#endif
