/*
 * cuckoo.h - a cuckoo filter: a set of keys that can also forget one.
 *
 * The table is nbuckets buckets of CUCKOO_SLOTS (4) fingerprints of f bits
 * (CUCKOO_FP_MIN..CUCKOO_FP_MAX), packed with no gaps: a bucket is 4f bits,
 * so the filter costs 4f bits per bucket, f / load bits per key. A key is
 * hashed once by the caller with XXH3-64 and the filter's seed (as for
 * bloom); from that hash h:
 *
 *   fp  = 1 + ((h mod 2^32) * (2^f - 1)) >> 32      in [1, 2^f - 1]
 *   i1  = (h * nbuckets) >> 64                       (multiply-shift)
 *   i2  = alt(i1, fp)
 *   alt(i, fp) = (H(fp) - i) mod nbuckets,  H(fp) = (mix(fp) * nbuckets) >> 64
 *
 * Ranges (CUCKOO_LAYOUT_SLOTS, a cluster's filter partitioned by slot):
 * the table is nranges (CUCKOO_RANGES) ranges of per = nbuckets / nranges
 * buckets each, and a key's hash carries its range in its top
 * CUCKOO_RANGE_BITS (filter_slot_hash). i1 = (h * nbuckets) >> 64 then
 * falls in the key's range (range r's hashes are [r 2^50, (r+1) 2^50)),
 * and both buckets stay there:
 *
 *   alt(i, fp) = base + (H(fp) - (i - base)) mod per,
 *   H(fp) = (mix(fp) * per) >> 64,  base = range * per
 *
 * the same involution within the range. So a range's keys are in its
 * buckets alone, as a slot-major Bloom filter's are in its blocks: a node
 * touches only its slots' ranges, and a range is copied, replaced and
 * freed alone when its slot moves. per is even, so that a range starts
 * on a byte (4f per bits). A plain table is one range (base 0, per
 * nbuckets): the formulas above.
 *
 * A key is held when fp is in bucket i1 or i2. Fingerprint 0 marks an
 * empty slot, so fingerprints take the 2^f - 1 other values, evenly. fp
 * comes from h's low 32 bits and i1 from its high bits, so the two are
 * (nearly) independent; H is a remix of fp (mix: murmur3's fmix64).
 *
 * The alternate bucket works for any nbuckets, not only powers of two
 * (where the usual i1 XOR H(fp) would do): with 0 <= i < n and
 * 0 <= H < n,
 *   alt(alt(i, fp), fp) = (H - ((H - i) mod n)) mod n
 *                       = (H - H + i) mod n = i mod n = i,
 * because (H - x mod n) mod n = (H - x) mod n. So alt is an involution
 * for every fp: a fingerprint found in one of its buckets always knows
 * the other without the key, which is what lets insertion move it. Two
 * keys with the same fp that share a bucket share both (the other is alt
 * of the shared one), so they are interchangeable copies: deleting one of
 * them leaves the other's copy, and no held key is ever lost. When
 * 2i = H (mod n), i1 == i2 and the key has one bucket (a chance of about
 * 1/n per key; correct, just fewer places).
 *
 * Layout (CUCKOO_LAYOUT_PACKED4, for snapshots and dumps): the table is a
 * little-endian bit string of cuckoo_table_bytes() = ceil(nbuckets * 4f / 8)
 * bytes; bit k is bit (k mod 8) of byte k / 8. Slot s of bucket i is the f
 * bits at bit (4i + s) * f, least significant bit first; bits past the
 * last bucket are 0. With the header fields (nbuckets, fpbits, seed,
 * count) that is the whole filter: cuckoo_init and a copy of the bytes
 * into table give it back, cuckoo_recount checks count.
 *
 * A bucket is read as one unaligned little-endian 64-bit word: for even f
 * a bucket starts on a byte (4f = 8 * (f/2)), for odd f at bit 0 or 4 of a
 * byte and 4f + 4 <= 64 for f <= 15, so 4f <= 64 (f <= 16) always fits.
 * The mapping has 8 spare bytes after the table for the last bucket's word.
 *
 * False positives: a query compares its fp with the up to 2 * 4 held in
 * its two buckets, each a match with chance 1 / (2^f - 1); at load a
 * (keys / slots) that is 1 - (1 - 1/(2^f - 1))^(8a), about 8a / 2^f.
 * cuckoo_plan picks f and nbuckets with the fewest bits that keep this at
 * capacity within error_rate * CUCKOO_SIZING_MARGIN and the load at most
 * CUCKOO_MAX_LOAD. Below 1.29e-4 even f = 16 needs a lower load than
 * that; plans down to CUCKOO_MIN_LOAD are taken (error_rate >= 6.8e-5),
 * lower rates refused: they would need f > 16, two words a bucket.
 *
 * Insertion (cuckoo_add): a free slot in i1, else in i2, else a random
 * walk of at most CUCKOO_MAX_KICKS moves: a slot of the current bucket is
 * picked by a PRNG seeded from h (so the table is a function of the keys
 * and their order: same keys, same bytes), its fingerprint swapped with
 * the one in hand, which then goes to its own alternate bucket. If the walk
 * ends without a free slot, its swaps are undone in reverse order: the
 * table is exactly as before and the add answers -1 (full). No stored
 * fingerprint is ever dropped, so there is no victim slot or stash.
 *
 * Concurrency: unlike a Bloom filter, an add moves fingerprints and a
 * delete clears them, so a reader on another thread could miss a key in
 * the middle of a walk: snapshots must not read the table while it
 * changes. They read a copy instead, made without stopping the owner
 * (cuckoo_cow_start): the copy is filled a chunk at a time by
 * cuckoo_cow_step, and until it is whole every change first copies the
 * chunks it is about to write, so the copy is the table as it was when
 * the copy started.
 *
 * No I/O and no libevent here.
 */
#ifndef SEEND_CUCKOO_H
#define SEEND_CUCKOO_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#define CUCKOO_SLOTS		4	/* fingerprints per bucket */
#define CUCKOO_FP_MIN		7	/* fewer bits leave too few alternate
					   buckets for a high load */
#define CUCKOO_FP_MAX		16	/* a bucket in one 64-bit word */
#define CUCKOO_MAX_LOAD		0.95	/* planned load at capacity */
#define CUCKOO_MIN_LOAD		0.5	/* ... and the least it may be */
#define CUCKOO_MAX_KICKS	500	/* moves per insertion at most */
/* As bloom's: the expected rate at capacity is planned below the target
 * so that a measured one stays at or below error_rate. */
#define CUCKOO_SIZING_MARGIN	0.9
#define CUCKOO_MAX_BYTES	(1ULL << 40)	/* 1 TiB */
/* The layout id for snapshots: how fp, i1, alt and the packing derive
 * from the hash (above). Changing any of it needs a new id. Not 1, the
 * Bloom filters' layout: a file's type and layout must agree. */
#define CUCKOO_LAYOUT_PACKED4	2
/* The same packing, the table in CUCKOO_RANGES ranges (above). */
#define CUCKOO_LAYOUT_SLOTS	4	/* 3 is BLOOM_LAYOUT_SLOTS512 */
#define CUCKOO_RANGE_BITS	14
#define CUCKOO_RANGES		(1U << CUCKOO_RANGE_BITS)

struct cuckoo {
	uint8_t		*table;		/* cuckoo_table_bytes + 8, mmap'd */
	uint64_t	 nbuckets;
	uint64_t	 per;		/* buckets of a range */
	uint64_t	 range_mask;	/* nranges - 1: 0 or CUCKOO_RANGES - 1 */
	uint32_t	 fpbits;	/* f */
	uint32_t	 bucket_bits;	/* 4f */
	uint64_t	 bucket_mask;	/* the low 4f bits */
	uint64_t	 lane_low;	/* bit 0 of each of the 4 slots */
	uint64_t	 lane_high;	/* bit f-1 of each slot */
	uint32_t	 fp_recip;	/* ceil(2^16 / f): a bit's slot */
	uint64_t	 seed;		/* XXH3 seed, kept in the snapshot */
	uint64_t	 count;		/* fingerprints held */
	size_t		 map_bytes;	/* the mapping, page-rounded */
	struct cuckoo_cow *cow;		/* a copy in progress, or NULL */
};

/*
 * Chooses nbuckets and f for capacity keys at error_rate (the fewest bits
 * meeting the rate at capacity at a load <= CUCKOO_MAX_LOAD). Returns 0, or
 * -1 if out of range: capacity 0, a rate not in (0, 1), a rate that needs
 * f > 16 (a load below CUCKOO_MIN_LOAD with f = 16: error_rate < 6.8e-5),
 * or a table over CUCKOO_MAX_BYTES.
 */
int	cuckoo_plan(uint64_t capacity, double error_rate, uint64_t *nbuckets,
	    uint32_t *fpbits);
/*
 * cuckoo_plan for a table of CUCKOO_RANGES ranges: each range is planned
 * for its share of capacity and the excess a range of the fullest slots
 * takes over it (keys fall in ranges as a Poisson draw: 4.5 sigma over
 * the mean, about 6 % at 1e8 keys, 3x at 1e5), per rounded up to even.
 */
int	cuckoo_plan_ranges(uint64_t capacity, double error_rate,
	    uint64_t *nbuckets, uint32_t *fpbits);
/* Expected false-positive rate of a table of this shape holding n keys. */
double	cuckoo_fp_rate(uint64_t nbuckets, uint32_t fpbits, double n);
/* The same for the keys the filter holds now. */
double	cuckoo_fp_estimate(const struct cuckoo *);
/* Bytes of the table (the serialised size) for this shape. */
uint64_t cuckoo_table_bytes_for(uint64_t nbuckets, uint32_t fpbits);
/* Allocates an empty table; returns 0, or -1 with errno set (EINVAL for a
 * shape out of range). */
int	cuckoo_init(struct cuckoo *, uint64_t nbuckets, uint32_t fpbits,
	    uint64_t seed);
/* The same of nranges ranges (1, or CUCKOO_RANGES with nbuckets a
 * multiple of 2 * CUCKOO_RANGES). */
int	cuckoo_init_ranges(struct cuckoo *, uint64_t nbuckets, uint32_t fpbits,
	    uint64_t seed, uint32_t nranges);
/* Whether the table is in ranges (CUCKOO_LAYOUT_SLOTS). */
static inline int
cuckoo_ranged(const struct cuckoo *c)
{
	return c->range_mask != 0;
}
/* The bytes of a range of a ranged table (whole: per is even). */
static inline uint64_t
cuckoo_range_bytes(const struct cuckoo *c)
{
	return c->per * c->bucket_bits / 8;
}
/* Fingerprints held in ranges first..first+n-1 of a ranged table. */
uint64_t cuckoo_range_count(const struct cuckoo *, uint64_t first,
	    uint64_t n);
/* Ranges first..first+n-1 emptied (their pages given back): the count
 * goes down by what they held. */
void	cuckoo_range_clear(struct cuckoo *, uint64_t first, uint64_t n);
/* Ranges first..first+n-1 replaced by src's bytes (cuckoo_range_bytes
 * each): the count follows. */
void	cuckoo_range_set(struct cuckoo *, uint64_t first, uint64_t n,
	    const unsigned char *src);
/* cuckoo_plan then cuckoo_init. */
int	cuckoo_create(struct cuckoo *, uint64_t capacity, double error_rate,
	    uint64_t seed);
void	cuckoo_free(struct cuckoo *);
/* Faults the table's pages in now (a new filter's, before its keys), as
 * bloom_populate: 0, or -1 (ENOMEM). */
int	cuckoo_populate(struct cuckoo *);
/*
 * Copy-on-write of c's table into dst, a table of the same shape
 * (cuckoo_init'd, empty): starts it (0; -1 if a copy of c is already in
 * progress, or out of memory), advances it by at least max_bytes (1 once
 * the copy is whole: c no longer copies on change), or finishes it at
 * once. cuckoo_cow_cancel stops it with dst unfinished (dst is going
 * away). dst's count is c's at the start.
 */
int	cuckoo_cow_start(struct cuckoo *c, struct cuckoo *dst);
int	cuckoo_cow_step(struct cuckoo *c, size_t max_bytes);
void	cuckoo_cow_finish(struct cuckoo *c);
void	cuckoo_cow_cancel(struct cuckoo *c);
/* c's table and count copied into dst, a new empty table of its shape
 * (its chunks that hold nothing are left unfaulted). */
void	cuckoo_copy_table(struct cuckoo *dst, const struct cuckoo *c);
/* 1 if c is being copied into dst. */
int	cuckoo_cow_is(const struct cuckoo *c, const struct cuckoo *dst);
/* The chunks holding bytes [off, off + 8) are copied before a change. */
void	cuckoo_cow_touch(struct cuckoo *c, uint64_t off);
/* The kick walk of cuckoo_add, when both buckets are full. */
int	cuckoo_add_slow(struct cuckoo *, uint64_t fp, uint64_t i1,
	    uint64_t i2, uint64_t h);
/* cuckoo_add's rest when bucket i1 is full: i2, else the kick walk
 * (out of line: the inlined adds keep only the common case). */
int	cuckoo_add_second(struct cuckoo *, uint64_t fp, uint64_t i1,
	    uint64_t i2, uint64_t h);
/* Counts the non-empty slots by reading the whole table (after loading a
 * table's bytes, and in tests). */
uint64_t cuckoo_recount(const struct cuckoo *);

static inline uint64_t
cuckoo_hash(const struct cuckoo *c, const void *key, size_t len)
{
	return XXH3_64bits_withSeed(key, len, c->seed);
}

static inline uint64_t
cuckoo_count(const struct cuckoo *c)
{
	return c->count;
}

static inline uint64_t
cuckoo_slots(const struct cuckoo *c)
{
	return c->nbuckets * CUCKOO_SLOTS;
}

static inline double
cuckoo_load(const struct cuckoo *c)
{
	return (double)c->count / (double)cuckoo_slots(c);
}

/* The table as serialised: CUCKOO_LAYOUT_PACKED4, above. */
static inline uint64_t
cuckoo_table_bytes(const struct cuckoo *c)
{
	return cuckoo_table_bytes_for(c->nbuckets, c->fpbits);
}

static inline const uint8_t *
cuckoo_table(const struct cuckoo *c)
{
	return c->table;
}

/* murmur3's fmix64. */
static inline uint64_t
cuckoo_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t
cuckoo_fp(const struct cuckoo *c, uint64_t h)
{
	return 1 + (((h & 0xffffffffULL) * ((1ULL << c->fpbits) - 1)) >> 32);
}

static inline uint64_t
cuckoo_index(const struct cuckoo *c, uint64_t h)
{
	return (uint64_t)(((unsigned __int128)h * c->nbuckets) >> 64);
}

/* The first bucket of the range of a key's hash h (0 in a plain table). */
static inline uint64_t
cuckoo_base(const struct cuckoo *c, uint64_t h)
{
	return ((h >> (64 - CUCKOO_RANGE_BITS)) & c->range_mask) * c->per;
}

/* The other bucket of fingerprint fp held in bucket i of the range
 * starting at base (an involution). */
static inline uint64_t
cuckoo_alt_in(const struct cuckoo *c, uint64_t base, uint64_t i, uint64_t fp)
{
	uint64_t H = (uint64_t)(((unsigned __int128)cuckoo_mix(fp) *
	    c->per) >> 64), l = i - base;

	return base + (H >= l ? H - l : H + c->per - l);
}

/* The same where only the bucket is known (its range by a division). */
static inline uint64_t
cuckoo_alt(const struct cuckoo *c, uint64_t i, uint64_t fp)
{
	return cuckoo_alt_in(c, c->range_mask ? i / c->per * c->per : 0, i,
	    fp);
}

/* Bucket i's 4f bits, slot s at bits [s*f, (s+1)*f). */
static inline uint64_t
cuckoo_bucket_get(const struct cuckoo *c, uint64_t i)
{
	uint64_t bit = i * c->bucket_bits, w;

	memcpy(&w, c->table + (bit >> 3), sizeof(w));
	return (le64toh(w) >> (bit & 7)) & c->bucket_mask;
}

static inline void
cuckoo_bucket_put(struct cuckoo *c, uint64_t i, uint64_t b)
{
	uint64_t bit = i * c->bucket_bits, w;
	unsigned sh = (unsigned)(bit & 7);

	if (__builtin_expect(c->cow != NULL, 0))
		cuckoo_cow_touch(c, bit >> 3);
	memcpy(&w, c->table + (bit >> 3), sizeof(w));
	w = le64toh(w);
	w = (w & ~(c->bucket_mask << sh)) | (b << sh);
	w = htole64(w);
	memcpy(c->table + (bit >> 3), &w, sizeof(w));
}

static inline uint64_t
cuckoo_slot_get(const struct cuckoo *c, uint64_t b, unsigned s)
{
	return (b >> (s * c->fpbits)) & ((1ULL << c->fpbits) - 1);
}

static inline uint64_t
cuckoo_slot_set(const struct cuckoo *c, uint64_t b, unsigned s, uint64_t fp)
{
	uint64_t m = ((1ULL << c->fpbits) - 1) << (s * c->fpbits);

	return (b & ~m) | (fp << (s * c->fpbits));
}

/* Fingerprint of slot s of bucket i (0: empty): for dumps and tests. */
static inline uint64_t
cuckoo_get(const struct cuckoo *c, uint64_t i, unsigned s)
{
	return cuckoo_slot_get(c, cuckoo_bucket_get(c, i), s);
}

/* Nonzero if some slot of bucket b holds fp: SWAR, a zero lane in
 * b XOR (fp in every lane) (the test for "any zero lane" is exact). */
static inline int
cuckoo_bucket_has(const struct cuckoo *c, uint64_t b, uint64_t fp)
{
	uint64_t x = b ^ (fp * c->lane_low);

	return ((x - c->lane_low) & ~x & c->lane_high) != 0;
}

/*
 * Bucket b's empty slots as flags, 0 when it is full: SWAR again, the
 * zero lanes; a borrow only runs upward, so the lowest flagged lane is a
 * true zero (higher flags may be false ones). Its flag is bit s*f + f-1.
 */
static inline uint64_t
cuckoo_bucket_empties(const struct cuckoo *c, uint64_t b)
{
	return (b - c->lane_low) & ~b & c->lane_high;
}

/* The first empty slot of bucket b, or -1: the lowest flag's bit / f, as
 * bit * ceil(2^16/f) >> 16 (exact: the error is under 64/2^16 < 1/f). */
static inline int
cuckoo_bucket_free(const struct cuckoo *c, uint64_t b)
{
	uint64_t m = cuckoo_bucket_empties(c, b);

	if (m == 0)
		return -1;
	return (int)(((uint32_t)__builtin_ctzll(m) * c->fp_recip) >> 16);
}

/*
 * Stores fp in bucket i's first empty slot, given the bucket's flags from
 * cuckoo_bucket_empties (not 0): the lowest flag is bit s*f + f-1 of that
 * slot, whose bits are all 0, so fp is OR-ed into the table's word at
 * bit s*f, without the slot's number or a mask (a new key's common case:
 * a dozen instructions fewer than cuckoo_slot_set and cuckoo_bucket_put).
 */
static inline void
cuckoo_bucket_fill(struct cuckoo *c, uint64_t i, uint64_t empties, uint64_t fp)
{
	uint64_t bit = i * c->bucket_bits, w;
	unsigned sh = (unsigned)(bit & 7) +
	    (unsigned)__builtin_ctzll(empties) + 1 - c->fpbits;

	if (__builtin_expect(c->cow != NULL, 0))
		cuckoo_cow_touch(c, bit >> 3);
	memcpy(&w, c->table + (bit >> 3), sizeof(w));
	w = htole64(le64toh(w) | fp << sh);
	memcpy(c->table + (bit >> 3), &w, sizeof(w));
}

/* The first slot of bucket b holding fp, or -1. */
static inline int
cuckoo_bucket_find(const struct cuckoo *c, uint64_t b, uint64_t fp)
{
	for (unsigned s = 0; s < CUCKOO_SLOTS; s++)
		if (cuckoo_slot_get(c, b, s) == fp)
			return (int)s;
	return -1;
}

/*
 * A key's place in one table: its fingerprint and both of its buckets.
 * Found once per key: a batch's prefetch pass keeps it for the answer pass
 * (cuckoo_prefetch_at, cuckoo_contains_at, cuckoo_test_add_at), where
 * finding it again cost two 128-bit multiplies and a mix per key.
 */
struct cuckoo_at {
	uint64_t	fp, i1, i2;
};

static inline __attribute__((always_inline)) void
cuckoo_locate(const struct cuckoo *c, uint64_t h, struct cuckoo_at *at)
{
	at->fp = cuckoo_fp(c, h);
	at->i1 = cuckoo_index(c, h);
	at->i2 = cuckoo_alt_in(c, cuckoo_base(c, h), at->i1, at->fp);
}

/*
 * Both buckets of the key: a lookup of a key not held reads both. A
 * bucket's word may straddle two cache lines (with 13-bit fingerprints
 * about one in nine does), so its last byte is asked for too. Always
 * inlined: as a function gcc 12 finds it only reads memory and drops the
 * call as dead code, prefetches and all.
 */
static inline __attribute__((always_inline)) void
cuckoo_prefetch_at(const struct cuckoo *c, const struct cuckoo_at *at)
{
	const uint8_t *b1 = c->table + ((at->i1 * c->bucket_bits) >> 3);
	const uint8_t *b2 = c->table + ((at->i2 * c->bucket_bits) >> 3);

	__builtin_prefetch(b1, 1, 3);
	__builtin_prefetch(b1 + 7, 1, 3);
	__builtin_prefetch(b2, 1, 3);
	__builtin_prefetch(b2 + 7, 1, 3);
}

static inline __attribute__((always_inline)) void
cuckoo_prefetch(const struct cuckoo *c, uint64_t h)
{
	struct cuckoo_at at;

	cuckoo_locate(c, h, &at);
	cuckoo_prefetch_at(c, &at);
}

/* 1 if the located key's fingerprint is in one of its buckets. */
static inline int
cuckoo_contains_at(const struct cuckoo *c, const struct cuckoo_at *at)
{
	return cuckoo_bucket_has(c, cuckoo_bucket_get(c, at->i1), at->fp) ||
	    cuckoo_bucket_has(c, cuckoo_bucket_get(c, at->i2), at->fp);
}

/* 1 if the key's fingerprint is in one of its buckets (held, or a false
 * positive), else 0. */
static inline int
cuckoo_contains(const struct cuckoo *c, uint64_t h)
{
	uint64_t fp = cuckoo_fp(c, h), i1 = cuckoo_index(c, h);

	if (cuckoo_bucket_has(c, cuckoo_bucket_get(c, i1), fp))
		return 1;
	return cuckoo_bucket_has(c, cuckoo_bucket_get(c,
	    cuckoo_alt_in(c, cuckoo_base(c, h), i1, fp)), fp);
}

/*
 * Stores one more copy of the key's fingerprint (a key already held gets
 * a second copy, as CF.ADD does). Returns 0, or -1 if there is no room:
 * the table and count are then exactly as before.
 */
static inline int
cuckoo_add(struct cuckoo *c, uint64_t h)
{
	uint64_t fp = cuckoo_fp(c, h), i1 = cuckoo_index(c, h), e;

	if ((e = cuckoo_bucket_empties(c, cuckoo_bucket_get(c, i1))) != 0) {
		cuckoo_bucket_fill(c, i1, e, fp);
		c->count++;
		return 0;
	}
	return cuckoo_add_second(c, fp, i1,
	    cuckoo_alt_in(c, cuckoo_base(c, h), i1, fp), h);
}

/*
 * SEEN in one table of a located key (h: the key's hash, for the kicks):
 * 1 if its fingerprint is in one of its buckets, else stores it and
 * answers 0; -1 if it was not held and there is no room (the table is
 * then as before). Both buckets are read once for the answer; the second
 * again, out of line, when the first is full.
 */
static inline __attribute__((always_inline)) int
cuckoo_test_add_at(struct cuckoo *c, const struct cuckoo_at *at, uint64_t h)
{
	uint64_t b1, e;

	b1 = cuckoo_bucket_get(c, at->i1);
	if (cuckoo_bucket_has(c, b1, at->fp))
		return 1;
	if (cuckoo_bucket_has(c, cuckoo_bucket_get(c, at->i2), at->fp))
		return 1;
	if ((e = cuckoo_bucket_empties(c, b1)) == 0)
		return cuckoo_add_second(c, at->fp, at->i1, at->i2, h);
	cuckoo_bucket_fill(c, at->i1, e, at->fp);
	c->count++;
	return 0;
}

/* cuckoo_test_add_at of a key not located yet. */
static inline int
cuckoo_test_add(struct cuckoo *c, uint64_t h)
{
	struct cuckoo_at at;

	cuckoo_locate(c, h, &at);
	return cuckoo_test_add_at(c, &at, h);
}

/*
 * Removes one copy of the key's fingerprint: 1 if one was held, else 0.
 * Only for keys that were added: a false positive removes another key's
 * copy.
 */
static inline int
cuckoo_delete(struct cuckoo *c, uint64_t h)
{
	uint64_t fp = cuckoo_fp(c, h), i = cuckoo_index(c, h), b;
	uint64_t base = cuckoo_base(c, h);
	int s;

	for (int k = 0; k < 2; k++) {
		b = cuckoo_bucket_get(c, i);
		if ((s = cuckoo_bucket_find(c, b, fp)) >= 0) {
			cuckoo_bucket_put(c, i,
			    cuckoo_slot_set(c, b, (unsigned)s, 0));
			c->count--;
			return 1;
		}
		i = cuckoo_alt_in(c, base, i, fp);
	}
	return 0;
}

#endif
