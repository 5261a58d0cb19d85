/*
 * dump.c - a filter as chunks (BF.SCANDUMP) and back (BF.LOADCHUNK); the
 * format is described in dump.h.
 *
 * The writer runs while the event loop may still set bits in the arrays it
 * reads, so it reads them as snapshot.c does: one relaxed atomic load per
 * word, into the chunk that is then hashed, so a chunk's checksum always
 * matches the bytes it carries. The loader takes chunks from a client and
 * trusts nothing in them: every number is bounded before it sizes a copy or
 * an allocation, and a chunk is refused on arrival when it is damaged,
 * truncated, out of order or another dump's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dump.h"
#include "fileio.h"
#include "keyslot.h"
#include "snapshot.h"

/* The arrays travel as the in-memory words, as in a snapshot. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dump.c sends the bit arrays as native words: little-endian only"
#endif
_Static_assert(sizeof(double) == 8, "the header stores IEEE-754 doubles");

/* chunk header, see dump.h */
#define CH_MAGIC	0
#define CH_VERSION	8
#define CH_KIND		12
#define CH_ID		16
#define CH_INDEX	24
#define CH_COUNT	28
#define CH_OFFSET	32
#define CH_LENGTH	40
#define CH_SUM		48
#define CH_RESERVED	56
#define CH_SUMMED	48		/* header bytes under the checksum */
/* header chunk's payload */
#define HP_LAYOUT	0
#define HP_NSLICES	4
#define HP_GROWTH	8
#define HP_NORMALIZE	12
#define HP_SEED		16
#define HP_CAPACITY	24
#define HP_ERRRATE	32
#define HP_COUNT	40
#define HP_EXPIRE	48
#define HP_CREATED	56
#define HP_TOTAL	64
#define HP_MAXKICKS	72	/* cuckoo */
#define HP_FORGOTTEN	80	/* cuckoo */
#define HP_RESERVED	72
#define HP_RESERVED_CF	88
/* slice entry, as in snapshot.h (version 3) */
#define SE_NBLOCKS	0
#define SE_HASHES	8
#define SE_FLAGS	12
#define SE_CAPACITY	16
#define SE_ERRRATE	24
#define SE_COUNT	32
#define SE_BITSSET	40
#define SE_START	48
#define SE_SEED		56
#define SE_F_MERGED	0x1u

#define MAX_PAYLOAD	((size_t)DUMP_CHUNK_MAX - DUMP_CHUNK_HEADER)
#define MAX_NBLOCKS	(BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES)
/* the bounds snapshot.c keeps to for growth and creation times */
#define MAX_GROWTH	1024
#define MAX_CREATED	((uint64_t)SNAPSHOT_MAX_TIME_MS / 1000)
/* A slot-major array is copied in by small pages, those of zero bytes
 * left out: the page a write would fault in. */
#define ZERO_RUN	4096UL

static uint64_t
div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* What the checksum covers: header bytes 0..47, then the payload. */
static uint64_t
chunk_sum(const unsigned char *hdr, const unsigned char *payload, size_t len)
{
	XXH3_state_t st;

	XXH3_INITSTATE(&st);
	(void)XXH3_64bits_reset(&st);
	(void)XXH3_64bits_update(&st, hdr, CH_SUMMED);
	(void)XXH3_64bits_update(&st, payload, len);
	return XXH3_64bits_digest(&st);
}

/* A slice's array: a Bloom filter's bits or a cuckoo filter's table. */
static unsigned char *
slice_bytes(const struct snapshot_slice *s, uint64_t *len)
{
	if (s->cuckoo.nbuckets != 0) {
		*len = cuckoo_table_bytes_for(s->cuckoo.nbuckets,
		    s->cuckoo.fpbits);
		return s->cuckoo.table;
	}
	*len = bloom_bytes(&s->bloom);
	return (unsigned char *)s->bloom.words;
}

/* ---- writing ---- */

uint64_t
dump_bits_bytes(const struct dump_image *im)
{
	uint64_t total = 0, len;

	for (uint32_t i = 0; i < im->nslices; i++) {
		(void)slice_bytes(&im->slices[i], &len);
		total += len;
	}
	return total;
}

/* The bits chunks' payload: 0, or more than a chunk holds, is the most. */
static size_t
payload_size(size_t chunk_payload)
{
	return chunk_payload == 0 || chunk_payload > MAX_PAYLOAD ?
	    MAX_PAYLOAD : chunk_payload;
}

/* 0 for an image no loader would take, or one of too many chunks. */
uint32_t
dump_chunk_count(const struct dump_image *im, size_t chunk_payload)
{
	uint64_t total, n;

	if (im->nslices > SNAPSHOT_MAX_SLICES)
		return 0;
	/* merged slices come last: a loader refuses an own one after */
	for (uint32_t i = 1; i < im->nslices; i++)
		if (im->slices[i - 1].merged && !im->slices[i].merged)
			return 0;
	/* nor would it take a slot-major slice not cut in slots */
	for (uint32_t i = 0; im->slot_major && i < im->nslices; i++)
		if (im->cuckoo ? im->slices[i].cuckoo.nbuckets %
		    (2 * CUCKOO_RANGES) != 0 :
		    im->slices[i].bloom.nblocks % KEYSLOT_COUNT != 0)
			return 0;
	/* a window with no slice left (or none yet): the header alone */
	if (im->nslices == 0)
		return 1;
	if ((total = dump_bits_bytes(im)) == 0)
		return 0;
	n = div_up(total, payload_size(chunk_payload));
	return n >= UINT32_MAX ? 0 : (uint32_t)n + 1;
}

static void
put_chunk_header(unsigned char *out, uint32_t kind, uint64_t id,
    uint32_t index, uint32_t count, uint64_t offset, size_t len)
{
	memset(out, 0, DUMP_CHUNK_HEADER);
	memcpy(out + CH_MAGIC, DUMP_MAGIC, 8);
	put_le32(out + CH_VERSION, DUMP_VERSION);
	put_le32(out + CH_KIND, kind);
	put_le64(out + CH_ID, id);
	put_le32(out + CH_INDEX, index);
	put_le32(out + CH_COUNT, count);
	put_le64(out + CH_OFFSET, offset);
	put_le64(out + CH_LENGTH, len);
	put_le64(out + CH_SUM, chunk_sum(out, out + DUMP_CHUNK_HEADER, len));
}

/* Flags and seed stay zero for the filter's own slices: a dump of no
 * merged slice is what a loader before MERGE takes. */
static void
put_slice_entry(unsigned char *e, const struct snapshot_slice *s)
{
	memset(e, 0, DUMP_SLICE_ENTRY);
	if (s->cuckoo.nbuckets != 0) {
		put_le64(e + SE_NBLOCKS, s->cuckoo.nbuckets);
		put_le32(e + SE_HASHES, s->cuckoo.fpbits);
	} else {
		put_le64(e + SE_NBLOCKS, s->bloom.nblocks);
		put_le32(e + SE_HASHES, s->bloom.hashes);
	}
	if (s->merged) {
		put_le32(e + SE_FLAGS, SE_F_MERGED);
		put_le64(e + SE_SEED, s->seed);
	}
	put_le64(e + SE_CAPACITY, s->capacity);
	put_le64(e + SE_ERRRATE, double_bits(s->error_rate));
	put_le64(e + SE_COUNT, s->count);
	put_le64(e + SE_BITSSET, s->bits_set);
	put_le64(e + SE_START, (uint64_t)s->start_ms);
}

/* The header chunk's payload into p; returns its length. The count is
 * the slices' sum, so that the header always agrees with its table. */
static size_t
put_header_payload(unsigned char *p, const struct dump_image *im)
{
	uint64_t count = 0;

	memset(p, 0, DUMP_HEADER_FIXED);
	for (uint32_t i = 0; i < im->nslices; i++) {
		count += im->slices[i].count;
		put_slice_entry(p + DUMP_HEADER_FIXED +
		    (size_t)i * DUMP_SLICE_ENTRY, &im->slices[i]);
	}
	put_le32(p + HP_LAYOUT, im->cuckoo ? (im->slot_major ?
	    CUCKOO_LAYOUT_SLOTS : CUCKOO_LAYOUT_PACKED4) : im->slot_major ? BLOOM_LAYOUT_SLOTS512 : BLOOM_LAYOUT_SPLIT512);
	if (im->cuckoo) {
		put_le32(p + HP_MAXKICKS, im->max_kicks);
		put_le64(p + HP_FORGOTTEN, im->forgotten);
	}
	put_le32(p + HP_NSLICES, im->nslices);
	put_le32(p + HP_GROWTH, im->growth);
	put_le32(p + HP_NORMALIZE, (uint32_t)im->normalize);
	put_le64(p + HP_SEED, im->seed);
	put_le64(p + HP_CAPACITY, im->capacity);
	put_le64(p + HP_ERRRATE, double_bits(im->error_rate));
	put_le64(p + HP_COUNT, count);
	put_le64(p + HP_EXPIRE, im->expire_ms);
	put_le64(p + HP_CREATED, im->created);
	put_le64(p + HP_TOTAL, dump_bits_bytes(im));
	return DUMP_HEADER_FIXED + (size_t)im->nslices * DUMP_SLICE_ENTRY;
}

/*
 * n bytes of a live array from byte off: each word read whole with a
 * relaxed atomic load (the event loop writes whole words, see
 * snapshot.c's write_array), and only the words that hold the range, so
 * the last chunk never reads past the array.
 */
static void
read_live(const struct bloom *b, uint64_t off, unsigned char *dst, size_t n)
{
	uint64_t	word;
	size_t		at, k;

	while (n > 0) {
		word = __atomic_load_n(&b->words[off / 8], __ATOMIC_RELAXED);
		at = (size_t)(off % 8);
		k = 8 - at < n ? 8 - at : n;
		memcpy(dst, (const unsigned char *)&word + at, k);
		dst += k;
		off += k;
		n -= k;
	}
}

/* n bytes from offset off of the arrays laid end to end. */
static void
read_arrays(const struct dump_image *im, uint64_t off, unsigned char *dst,
    size_t n)
{
	uint32_t	i = 0;
	uint64_t	len;
	size_t		k;

	for (; n > 0; i++) {
		const unsigned char *table = slice_bytes(&im->slices[i], &len);

		if (off >= len) {
			off -= len;
			continue;
		}
		k = len - off < n ? (size_t)(len - off) : n;
		/* a cuckoo table is the dump's own copy: no one writes it */
		if (im->slices[i].cuckoo.nbuckets != 0)
			memcpy(dst, table + off, k);
		else
			read_live(&im->slices[i].bloom, off, dst, k);
		dst += k;
		n -= k;
		off = 0;
	}
}

size_t
dump_chunk(const struct dump_image *im, uint64_t id, size_t chunk_payload,
    uint32_t index, unsigned char *out)
{
	uint32_t	count = dump_chunk_count(im, chunk_payload);
	size_t		size = payload_size(chunk_payload), len;
	uint64_t	off, total;

	if (count == 0 || index >= count || id == 0)
		return 0;
	if (index == 0) {
		len = put_header_payload(out + DUMP_CHUNK_HEADER, im);
		put_chunk_header(out, DUMP_KIND_HEADER, id, 0, count, 0, len);
		return DUMP_CHUNK_HEADER + len;
	}
	total = dump_bits_bytes(im);
	off = (uint64_t)(index - 1) * size;
	len = total - off < size ? (size_t)(total - off) : size;
	read_arrays(im, off, out + DUMP_CHUNK_HEADER, len);
	put_chunk_header(out, DUMP_KIND_BITS, id, index, count, off, len);
	return DUMP_CHUNK_HEADER + len;
}

size_t
dump_chunk_len(const struct dump_image *im, size_t chunk_payload,
    uint32_t index)
{
	uint32_t	count = dump_chunk_count(im, chunk_payload);
	size_t		size = payload_size(chunk_payload);
	uint64_t	off, total;

	if (count == 0 || index >= count)
		return 0;
	if (index == 0)
		return DUMP_CHUNK_HEADER + DUMP_HEADER_FIXED +
		    (size_t)im->nslices * DUMP_SLICE_ENTRY;
	total = dump_bits_bytes(im);
	off = (uint64_t)(index - 1) * size;
	return DUMP_CHUNK_HEADER + (total - off < size ? (size_t)(total - off) :
	    size);
}

/* ---- loading ---- */

struct dump_load {
	struct dump_image	 image;
	uint64_t		 id;
	uint32_t		 nchunks;	/* the header's */
	uint32_t		 next;		/* index due */
	uint64_t		 total;		/* bytes of the arrays */
	uint64_t		 done;		/* bytes loaded: the offset due */
	size_t			 size;		/* bits chunks' payload, from 1 */
	int			 broken;	/* refused a chunk: unusable */
	/* a big load's pages are faulted in by a thread of their own, so
	 * the chunks' copies do not pay for it on the caller's loop */
	pthread_t		 populate;
	int			 populating;
	int			 stop;		/* atomic: the load is over */
};

/* One chunk's header, checked for what any chunk must be. */
struct chunk {
	uint32_t		 kind;
	uint64_t		 id;
	uint32_t		 index;
	uint32_t		 count;
	uint64_t		 offset;
	size_t			 len;		/* of the payload */
	const unsigned char	*payload;
};

static int refuse(char *, size_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Every message names the problem after one prefix; returns -1. */
static int
refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	n = snprintf(err, errlen, "%s", DUMP_BAD_PREFIX);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int
all_zero(const unsigned char *p, size_t n)
{
	while (n > 0)
		if (p[--n] != 0)
			return 0;
	return 1;
}

/*
 * Is it a chunk of this format and version, whole, undamaged? In the
 * order that gives the most useful message: ours at all, readable by
 * this build, all there, and only then the checksum. The reserved bytes
 * are outside the checksum, so they are checked on their own.
 */
static int
parse_chunk(const void *data, size_t len, struct chunk *c, char *err,
    size_t errlen)
{
	const unsigned char	*p = data;
	uint32_t		 version;
	uint64_t		 paylen;

	if (len == 0 || memcmp(p, DUMP_MAGIC, len < 8 ? len : 8) != 0)
		return refuse(err, errlen, "not a seend dump");
	if (len < DUMP_CHUNK_HEADER)
		return refuse(err, errlen, "truncated: %zu bytes, a chunk's "
		    "header alone is %d", len, DUMP_CHUNK_HEADER);
	version = get_le32(p + CH_VERSION);
	if (version != DUMP_VERSION)
		return refuse(err, errlen, "version %" PRIu32 " (this seend "
		    "reads %d)", version, DUMP_VERSION);
	c->kind = get_le32(p + CH_KIND);
	c->id = get_le64(p + CH_ID);
	c->index = get_le32(p + CH_INDEX);
	c->count = get_le32(p + CH_COUNT);
	c->offset = get_le64(p + CH_OFFSET);
	paylen = get_le64(p + CH_LENGTH);
	if (paylen > MAX_PAYLOAD)
		return refuse(err, errlen, "chunk %" PRIu32 " claims %" PRIu64
		    " payload bytes, more than a chunk holds (%zu)", c->index,
		    paylen, MAX_PAYLOAD);
	if (len - DUMP_CHUNK_HEADER < paylen)
		return refuse(err, errlen, "truncated: chunk %" PRIu32 " has "
		    "%zu of its %" PRIu64 " payload bytes", c->index,
		    len - DUMP_CHUNK_HEADER, paylen);
	if (len - DUMP_CHUNK_HEADER > paylen)
		return refuse(err, errlen, "chunk %" PRIu32 " has %zu bytes "
		    "past its payload", c->index,
		    len - DUMP_CHUNK_HEADER - (size_t)paylen);
	c->len = (size_t)paylen;
	c->payload = p + DUMP_CHUNK_HEADER;
	if (chunk_sum(p, c->payload, c->len) != get_le64(p + CH_SUM))
		return refuse(err, errlen, "checksum mismatch (chunk %" PRIu32
		    ")", c->index);
	if (!all_zero(p + CH_RESERVED, DUMP_CHUNK_HEADER - CH_RESERVED))
		return refuse(err, errlen, "chunk %" PRIu32 ": reserved bytes "
		    "not zero", c->index);
	return 0;
}

/*
 * Slice i's entry into s, checked as snapshot.c checks a version 3
 * slice's: flags 0 or merged, a seed only on a merged slice, and no own
 * slice after a merged one (prev: slice i-1, NULL for the first).
 */
/* A cuckoo filter's slice entry (layout 2). */
static int
parse_cuckoo_slice(const unsigned char *e, uint32_t i,
    struct snapshot_slice *s, char *err, size_t errlen)
{
	uint64_t nb = get_le64(e + SE_NBLOCKS);
	uint32_t bits = get_le32(e + SE_HASHES);

	s->capacity = get_le64(e + SE_CAPACITY);
	s->error_rate = bits_double(get_le64(e + SE_ERRRATE));
	s->count = get_le64(e + SE_COUNT);
	s->start_ms = (int64_t)get_le64(e + SE_START);
	if (nb == 0 || nb > CUCKOO_MAX_BYTES || bits < CUCKOO_FP_MIN ||
	    bits > CUCKOO_FP_MAX ||
	    cuckoo_table_bytes_for(nb, bits) > CUCKOO_MAX_BYTES)
		return refuse(err, errlen, "slice %" PRIu32 ": bad cuckoo "
		    "table of %" PRIu64 " buckets of %" PRIu32 "-bit "
		    "fingerprints", i, nb, bits);
	s->cuckoo.nbuckets = nb;
	s->cuckoo.fpbits = bits;
	if (get_le32(e + SE_FLAGS) != 0 || get_le64(e + SE_SEED) != 0 ||
	    get_le64(e + SE_BITSSET) != 0 || s->capacity == 0 ||
	    s->count > nb * CUCKOO_SLOTS ||
	    !(s->error_rate > 0 && s->error_rate < 1) ||
	    s->start_ms < 0 || s->start_ms > SNAPSHOT_MAX_TIME_MS)
		return refuse(err, errlen, "slice %" PRIu32 ": bad flags, "
		    "capacity, error rate, count or start time", i);
	return 0;
}

static int
parse_slice(const unsigned char *e, uint32_t i, struct snapshot_slice *s,
    const struct snapshot_slice *prev, char *err, size_t errlen)
{
	uint32_t flags = get_le32(e + SE_FLAGS);

	s->bloom.nblocks = get_le64(e + SE_NBLOCKS);
	s->bloom.hashes = get_le32(e + SE_HASHES);
	s->capacity = get_le64(e + SE_CAPACITY);
	s->error_rate = bits_double(get_le64(e + SE_ERRRATE));
	s->count = get_le64(e + SE_COUNT);
	s->bits_set = get_le64(e + SE_BITSSET);
	s->start_ms = (int64_t)get_le64(e + SE_START);
	if (s->bloom.nblocks == 0 || s->bloom.nblocks > MAX_NBLOCKS)
		return refuse(err, errlen, "slice %" PRIu32 ": bad block count "
		    "%" PRIu64 " (must be 1 to %llu)", i, s->bloom.nblocks,
		    MAX_NBLOCKS);
	if (s->bloom.hashes != 4 && s->bloom.hashes != 8 &&
	    s->bloom.hashes != 16)
		return refuse(err, errlen, "slice %" PRIu32 ": bad hash count %"
		    PRIu32 " (must be 4, 8 or 16)", i, s->bloom.hashes);
	if (s->capacity == 0 || !(s->error_rate > 0 && s->error_rate < 1) ||
	    s->start_ms < 0 || s->start_ms > SNAPSHOT_MAX_TIME_MS ||
	    s->bits_set > s->bloom.nblocks * BLOOM_BLOCK_BITS)
		return refuse(err, errlen, "slice %" PRIu32 ": bad capacity, "
		    "error rate, start time or bit count", i);
	if ((flags & ~SE_F_MERGED) != 0)
		return refuse(err, errlen, "slice %" PRIu32 ": bad flags 0x%"
		    PRIx32 " (only bit 0, merged, is defined)", i, flags);
	s->merged = (flags & SE_F_MERGED) != 0;
	s->seed = get_le64(e + SE_SEED);
	if (!s->merged && s->seed != 0)
		return refuse(err, errlen, "slice %" PRIu32 ": not merged but "
		    "with a seed (0x%016" PRIx64 ")", i, s->seed);
	if (!s->merged && prev != NULL && prev->merged)
		return refuse(err, errlen, "slice %" PRIu32 ": the filter's "
		    "own after merged slice %" PRIu32 " (merged slices come "
		    "last)", i, i - 1);
	return 0;
}

/* The fixed part of the header chunk's payload into the load. */
static int
parse_fixed(struct dump_load *l, const unsigned char *p, char *err,
    size_t errlen)
{
	struct dump_image	*im = &l->image;
	uint32_t		 layout = get_le32(p + HP_LAYOUT);
	uint32_t		 normalize = get_le32(p + HP_NORMALIZE);

	im->growth = get_le32(p + HP_GROWTH);
	im->seed = get_le64(p + HP_SEED);
	im->capacity = get_le64(p + HP_CAPACITY);
	im->error_rate = bits_double(get_le64(p + HP_ERRRATE));
	im->count = get_le64(p + HP_COUNT);
	im->expire_ms = get_le64(p + HP_EXPIRE);
	im->created = get_le64(p + HP_CREATED);
	l->total = get_le64(p + HP_TOTAL);
	if (layout != BLOOM_LAYOUT_SPLIT512 && layout != CUCKOO_LAYOUT_PACKED4 &&
	    layout != BLOOM_LAYOUT_SLOTS512 && layout != CUCKOO_LAYOUT_SLOTS)
		return refuse(err, errlen, "unknown layout %" PRIu32 " (this "
		    "seend knows layouts %d, %d, %d and %d)", layout,
		    BLOOM_LAYOUT_SPLIT512, CUCKOO_LAYOUT_PACKED4,
		    BLOOM_LAYOUT_SLOTS512, CUCKOO_LAYOUT_SLOTS);
	im->cuckoo = layout == CUCKOO_LAYOUT_PACKED4 ||
	    layout == CUCKOO_LAYOUT_SLOTS;
	im->slot_major = layout == BLOOM_LAYOUT_SLOTS512 ||
	    layout == CUCKOO_LAYOUT_SLOTS;
	if (im->cuckoo) {
		im->max_kicks = get_le32(p + HP_MAXKICKS);
		im->forgotten = get_le64(p + HP_FORGOTTEN);
		if (im->expire_ms != 0 || normalize > 1 ||
		    get_le32(p + HP_MAXKICKS + 4) != 0)
			return refuse(err, errlen, "a cuckoo filter with a "
			    "window or bad fields");
	}
	if (normalize > 1)
		return refuse(err, errlen, "bad normalize %" PRIu32, normalize);
	im->normalize = (int)normalize;
	if (im->growth > MAX_GROWTH || im->expire_ms > SNAPSHOT_MAX_TIME_MS ||
	    im->created > MAX_CREATED)
		return refuse(err, errlen, "bad growth %" PRIu32 ", expire %"
		    PRIu64 " ms or creation time %" PRIu64, im->growth,
		    im->expire_ms, im->created);
	if (im->capacity == 0 || !(im->error_rate > 0 && im->error_rate < 1))
		return refuse(err, errlen, "bad capacity %" PRIu64 " or error "
		    "rate", im->capacity);
	if (im->cuckoo ? !all_zero(p + HP_RESERVED_CF, DUMP_HEADER_FIXED -
	    HP_RESERVED_CF) : !all_zero(p + HP_RESERVED, DUMP_HEADER_FIXED -
	    HP_RESERVED))
		return refuse(err, errlen, "header: reserved bytes not zero");
	return 0;
}

/*
 * The slice table: every entry in range, and their sums what the header
 * says. Cannot overflow: at most 4096 arrays of at most 1 TiB, and the
 * counts are added with a check.
 */
static int
parse_table(struct dump_load *l, const unsigned char *p, char *err,
    size_t errlen)
{
	struct dump_image	*im = &l->image;
	uint64_t		 bytes = 0, count = 0, len;

	for (uint32_t i = 0; i < im->nslices; i++) {
		struct snapshot_slice *s = &im->slices[i];

		if ((im->cuckoo ? parse_cuckoo_slice(p + (size_t)i *
		    DUMP_SLICE_ENTRY, i, s, err, errlen) : parse_slice(p +
		    (size_t)i * DUMP_SLICE_ENTRY, i, s, i > 0 ?
		    &im->slices[i - 1] : NULL, err, errlen)) == -1)
			return -1;
		/* else a slot's blocks would not be the range the filter
		 * looks in: keys of one slot would be sought in another's */
		if (im->slot_major && im->cuckoo && s->cuckoo.nbuckets %
		    (2 * CUCKOO_RANGES) != 0)
			return refuse(err, errlen, "slice %" PRIu32 ": %" PRIu64
			    " buckets, not an even number for each of %u "
			    "slots as a filter partitioned by slot (layout %d) "
			    "needs", i, s->cuckoo.nbuckets, CUCKOO_RANGES,
			    CUCKOO_LAYOUT_SLOTS);
		if (im->slot_major && !im->cuckoo &&
		    s->bloom.nblocks % KEYSLOT_COUNT != 0)
			return refuse(err, errlen, "slice %" PRIu32 ": %" PRIu64
			    " blocks, not a multiple of %d as a filter "
			    "partitioned by slot (layout %d) needs", i,
			    s->bloom.nblocks, KEYSLOT_COUNT,
			    BLOOM_LAYOUT_SLOTS512);
		(void)slice_bytes(s, &len);
		bytes += len;
		if (__builtin_add_overflow(count, s->count, &count))
			return refuse(err, errlen, "the slices' counts "
			    "overflow");
	}
	if (bytes != l->total)
		return refuse(err, errlen, "the header says %" PRIu64 " bytes, "
		    "its slices hold %" PRIu64, l->total, bytes);
	if (count != im->count)
		return refuse(err, errlen, "the header counts %" PRIu64 " keys, "
		    "its slices %" PRIu64, im->count, count);
	return 0;
}

/*
 * Enough chunks, and not too many, for the total: every bits chunk holds
 * at least one byte and at most a chunk's worth.
 */
static int
check_count(const struct dump_load *l, char *err, size_t errlen)
{
	uint64_t bits = l->nchunks > 0 ? l->nchunks - 1 : 0;

	/* no slice: the header chunk alone */
	if (l->image.nslices == 0 && l->nchunks == 1 && l->total == 0)
		return 0;
	if (bits == 0 || bits > l->total ||
	    bits < div_up(l->total, MAX_PAYLOAD))
		return refuse(err, errlen, "a chunk count of %" PRIu32
		    " cannot carry %" PRIu64 " bytes", l->nchunks, l->total);
	return 0;
}

/* The arrays, allocated only once the header has proved their sizes;
 * each holds its count now (filter.c's adopt takes bloom.count). */
static int
alloc_arrays(struct dump_load *l, char *err, size_t errlen)
{
	struct dump_image *im = &l->image;

	for (uint32_t i = 0; i < im->nslices; i++) {
		struct snapshot_slice	*s = &im->slices[i];
		uint64_t		 nb = s->bloom.nblocks;

		if (im->cuckoo) {
			uint64_t nbk = s->cuckoo.nbuckets;
			uint32_t bits = s->cuckoo.fpbits;

			/* not damage but a refusal of its size: no "bad
			 * dump chunk" prefix */
			if (cuckoo_init_ranges(&s->cuckoo, nbk, bits,
			    im->seed, im->slot_major ? CUCKOO_RANGES : 1) ==
			    -1) {
				snprintf(err, errlen, "cannot allocate %"
				    PRIu64 " bytes for slice %" PRIu32,
				    cuckoo_table_bytes_for(nbk, bits), i);
				return -1;
			}
			continue;
		}
		/* a merged slice's keys were hashed with its own seed */
		if (bloom_init(&s->bloom, nb, s->bloom.hashes, s->merged ?
		    s->seed : im->seed) == -1) {
			snprintf(err, errlen, "cannot allocate %" PRIu64
			    " bytes for slice %" PRIu32, nb * BLOOM_BLOCK_BYTES,
			    i);
			return -1;
		}
		s->bloom.count = s->count;
	}
	return 0;
}

/* The header chunk's payload: its length is checked against the slice
 * count before the table is read or anything is allocated. */
static int
parse_header(struct dump_load *l, const struct chunk *c, uint64_t max_bytes,
    char *err, size_t errlen)
{
	uint32_t n;

	if (c->len < DUMP_HEADER_FIXED)
		return refuse(err, errlen, "header chunk of %zu payload bytes, "
		    "need at least %d", c->len, DUMP_HEADER_FIXED);
	n = get_le32(c->payload + HP_NSLICES);
	if (n > SNAPSHOT_MAX_SLICES)
		return refuse(err, errlen, "bad slice count %" PRIu32 " (must "
		    "be 0 to %d)", n, SNAPSHOT_MAX_SLICES);
	if (c->len != DUMP_HEADER_FIXED + (size_t)n * DUMP_SLICE_ENTRY)
		return refuse(err, errlen, "header chunk of %zu payload bytes "
		    "for %" PRIu32 " slices (should be %zu)", c->len, n,
		    DUMP_HEADER_FIXED + (size_t)n * DUMP_SLICE_ENTRY);
	if (parse_fixed(l, c->payload, err, errlen) == -1)
		return -1;
	if ((l->image.slices = calloc(n ? n : 1,
	    sizeof(*l->image.slices))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	l->image.nslices = n;
	if (parse_table(l, c->payload + DUMP_HEADER_FIXED, err, errlen) == -1 ||
	    check_count(l, err, errlen) == -1)
		return -1;
	/* not a damaged chunk but a refusal of its size: no "bad dump
	 * chunk" prefix */
	if (max_bytes > 0 && l->total > max_bytes) {
		snprintf(err, errlen, "the dump needs %" PRIu64 " bytes, more "
		    "than max_memory leaves (%" PRIu64 ")", l->total,
		    max_bytes);
		return -1;
	}
	return alloc_arrays(l, err, errlen);
}

/* What the first chunk must be besides whole: a header, index 0. */
static int
check_first(const struct chunk *c, char *err, size_t errlen)
{
	if (c->kind == DUMP_KIND_BITS)
		return refuse(err, errlen, "chunk %" PRIu32 " is a bits chunk; "
		    "a load starts with the header chunk (0)", c->index);
	if (c->kind != DUMP_KIND_HEADER)
		return refuse(err, errlen, "unknown kind %" PRIu32 " (chunk %"
		    PRIu32 ")", c->kind, c->index);
	if (c->index != 0 || c->offset != 0)
		return refuse(err, errlen, "a header chunk at index %" PRIu32
		    ", offset %" PRIu64 " (must be 0, 0)", c->index, c->offset);
	if (c->id == 0)
		return refuse(err, errlen, "dump id 0");
	return 0;
}

/* Below this, faulting the pages in as the chunks are copied is cheap. */
#define POPULATE_MIN	((uint64_t)16 << 20)
/* madvise steps: each holds the mmap lock the loop may need (bloom.c) */
#define POPULATE_STEP	((size_t)4 << 20)

static void *
populate_arrays(void *arg)
{
	struct dump_load *l = arg;

	for (uint32_t i = 0; i < l->image.nslices; i++) {
		const struct snapshot_slice *s = &l->image.slices[i];
		size_t	 map = s->cuckoo.table != NULL ? s->cuckoo.map_bytes :
			    s->bloom.map_bytes;
		char	*p = s->cuckoo.table != NULL ? (char *)s->cuckoo.table :
			    (char *)s->bloom.words;

		for (size_t off = 0; off < map; off += POPULATE_STEP) {
			size_t n = map - off < POPULATE_STEP ?
			    map - off : POPULATE_STEP;

			if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
				return NULL;
#ifdef MADV_POPULATE_WRITE
			/* leaves what a chunk already copied there as it is */
			if (madvise(p + off, n, MADV_POPULATE_WRITE) == -1)
				return NULL;
#else
			(void)p;
			(void)n;
			return NULL;
#endif
		}
	}
	return NULL;
}

/* Not a slot-major filter's: its pages are faulted in only where a
 * chunk brings bits (copy_in), which is a node's slots alone. */
static void
populate_start(struct dump_load *l)
{
	if (l->total >= POPULATE_MIN && !l->image.slot_major)
		l->populating = pthread_create(&l->populate, NULL,
		    populate_arrays, l) == 0;
}

/* Stops the thread (at its next step) and waits for it. */
static void
populate_end(struct dump_load *l)
{
	if (!l->populating)
		return;
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	pthread_join(l->populate, NULL);
	l->populating = 0;
}

struct dump_load *
dump_load_start(const void *data, size_t len, uint64_t max_bytes, char *err,
    size_t errlen)
{
	struct dump_load	*l;
	struct chunk		 c;

	if (parse_chunk(data, len, &c, err, errlen) == -1 ||
	    check_first(&c, err, errlen) == -1)
		return NULL;
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->id = c.id;
	l->nchunks = c.count;
	l->next = 1;
	if (parse_header(l, &c, max_bytes, err, errlen) == -1) {
		dump_load_free(l);
		return NULL;
	}
	populate_start(l);
	return l;
}

/*
 * A bits chunk must be the next one of this dump, where the last ended.
 * Chunk 1 sets the payload size, which with the total must make the
 * header's chunk count; every later chunk has that size, the last the
 * rest.
 */
static int
check_bits(struct dump_load *l, const struct chunk *c, char *err,
    size_t errlen)
{
	uint64_t want;

	if (c->id != l->id)
		return refuse(err, errlen, "from another dump");
	if (c->index != l->next)
		return refuse(err, errlen, "chunk %" PRIu32 " where chunk %"
		    PRIu32 " was due", c->index, l->next);
	if (c->kind != DUMP_KIND_BITS)
		return refuse(err, errlen, "chunk %" PRIu32 " is of kind %"
		    PRIu32 ", not bits", c->index, c->kind);
	if (c->count != l->nchunks)
		return refuse(err, errlen, "chunk %" PRIu32 " counts %" PRIu32
		    " chunks, the header %" PRIu32, c->index, c->count,
		    l->nchunks);
	if (c->offset != l->done)
		return refuse(err, errlen, "chunk %" PRIu32 " at offset %"
		    PRIu64 " where %" PRIu64 " was due", c->index, c->offset,
		    l->done);
	if (c->index == 1) {
		if (c->len == 0 ||
		    1 + div_up(l->total, c->len) != l->nchunks)
			return refuse(err, errlen, "chunks of %zu bytes (chunk "
			    "1's) do not make %" PRIu64 " bytes in the %" PRIu32
			    " chunks the header counts", c->len, l->total,
			    l->nchunks);
		l->size = c->len;
	}
	want = l->total - l->done < l->size ? l->total - l->done : l->size;
	if (c->len != want)
		return refuse(err, errlen, "chunk %" PRIu32 " holds %zu bytes "
		    "where %" PRIu64 " were due", c->index, c->len, want);
	return 0;
}

static uint64_t
popcount_bytes(const unsigned char *p, size_t n)
{
	uint64_t	bits = 0, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		bits += (uint64_t)__builtin_popcountll(w);
	}
	for (; n > 0; p++, n--)
		bits += (uint64_t)__builtin_popcount(*p);
	return bits;
}

/* 1 if the n bytes at p are all zero. */
static int
zero_bytes(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * A slot-major array's bytes at dst (zero until written, and each byte
 * written once): only the parts of its small pages that are not zero, so
 * that the pages of slots without bits are never faulted in.
 */
static void
copy_set_pages(unsigned char *dst, uint64_t off, const unsigned char *src,
    size_t n)
{
	size_t k;

	for (; n > 0; off += k, src += k, n -= k) {
		k = ZERO_RUN - (size_t)(off % ZERO_RUN);
		if (k > n)
			k = n;
		if (!zero_bytes(src, k))
			memcpy(dst + off, src, k);
	}
}

/*
 * n bytes at the offset due into the arrays, across slice boundaries.
 * Each bloom's bits_set counts the bits that arrive, so a loaded slice
 * holds the exact number: a dump read while keys were added can carry
 * more bits than its table's bits set, which were taken at its start.
 */
static void
copy_in(struct dump_load *l, const unsigned char *src, size_t n)
{
	uint64_t	off = l->done, len;
	size_t		k;

	for (uint32_t i = 0; n > 0; i++) {
		struct snapshot_slice	*s = &l->image.slices[i];
		unsigned char		*dst = slice_bytes(s, &len);

		if (off >= len) {
			off -= len;
			continue;
		}
		k = len - off < n ? (size_t)(len - off) : n;
		if (l->image.slot_major)
			copy_set_pages(dst, off, src, k);
		else
			memcpy(dst + off, src, k);
		if (!l->image.cuckoo)
			s->bloom.bits_set += popcount_bytes(src, k);
		src += k;
		n -= k;
		off = 0;
	}
}

/* A cuckoo dump is whole: each table holds the count its entry says
 * (the checksums only say each chunk arrived as sent). */
static int
recount(struct dump_load *l, char *err, size_t errlen)
{
	populate_end(l);
	for (uint32_t i = 0; i < l->image.nslices; i++) {
		struct snapshot_slice *s = &l->image.slices[i];

		/* a partitioned filter's part counts its node's slots'
		 * ranges alone (snapshot.c) */
		s->cuckoo.count = cuckoo_recount(&s->cuckoo);
		if (s->cuckoo.count != s->count && !(l->image.slot_major &&
		    s->cuckoo.count > s->count))
			return refuse(err, errlen, "slice %" PRIu32 " holds %"
			    PRIu64 " fingerprints, its entry says %" PRIu64, i,
			    s->cuckoo.count, s->count);
		s->cuckoo.count = s->count;
	}
	return 0;
}

int
dump_load_add(struct dump_load *l, const void *data, size_t len, char *err,
    size_t errlen)
{
	struct chunk c;

	if (l->broken)
		return refuse(err, errlen, "the load failed on an earlier "
		    "chunk");
	if (l->next == l->nchunks)
		return refuse(err, errlen, "the dump is complete: all %" PRIu32
		    " chunks are in", l->nchunks);
	if (parse_chunk(data, len, &c, err, errlen) == -1 ||
	    check_bits(l, &c, err, errlen) == -1) {
		l->broken = 1;
		return -1;
	}
	copy_in(l, c.payload, c.len);
	l->done += c.len;
	l->next++;
	if (l->next == l->nchunks && l->image.cuckoo &&
	    recount(l, err, errlen) == -1) {
		l->broken = 1;
		return -1;
	}
	return l->next == l->nchunks;
}

int
dump_chunk_verify(const void *data, size_t len, uint32_t *kind, char *err,
    size_t errlen)
{
	struct chunk c;

	if (parse_chunk(data, len, &c, err, errlen) == -1)
		return -1;
	*kind = c.kind;
	return 0;
}

int
dump_chunk_framed(const void *data, size_t len)
{
	return len >= DUMP_CHUNK_HEADER &&
	    get_le64((const unsigned char *)data + CH_LENGTH) ==
	    len - DUMP_CHUNK_HEADER;
}

int
dump_refused_bad(const char *err)
{
	return strncmp(err, DUMP_BAD_PREFIX, strlen(DUMP_BAD_PREFIX)) == 0;
}

int
dump_load_is_cuckoo(const struct dump_load *l)
{
	return l->image.cuckoo;
}

int
dump_load_complete(const struct dump_load *l)
{
	return !l->broken && l->next == l->nchunks;
}

struct dump_image *
dump_load_image(struct dump_load *l)
{
	populate_end(l);
	return &l->image;
}

void
dump_load_free(struct dump_load *l)
{
	if (l == NULL)
		return;
	populate_end(l);
	snapshot_slices_free(l->image.slices, l->image.nslices);
	free(l);
}
