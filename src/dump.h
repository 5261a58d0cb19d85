/*
 * dump.h - a filter as a sequence of chunks: what BF.SCANDUMP sends and
 * BF.LOADCHUNK takes back, seend's own versioned format (INTERFACE.md,
 * "Moving, copying and merging filters"; seend(8), DUMP FORMAT).
 *
 * A dump is one header chunk (index 0) and then the bits chunks (1..n-1):
 * every byte of every slice's bit array, slices oldest first, in order,
 * each chunk at most DUMP_CHUNK_MAX bytes with its header. Every chunk
 * carries its own position and checksum, so a loader refuses a damaged,
 * truncated, reordered, missing or foreign (another dump's) chunk as it
 * arrives, not at the end.
 *
 * Chunk layout (all integers little-endian):
 *
 *   off  size  field
 *     0     8  magic "SEENDDMP"
 *     8     4  format version (1)
 *    12     4  kind: 1 header, 2 bits
 *    16     8  dump id: random, non-zero, the same in every chunk of a dump
 *    24     4  chunk index: 0 the header chunk, then 1, 2, ...
 *    28     4  chunk count: of the whole dump, header chunk included
 *    32     8  offset: bits chunks: of their first byte in the slices'
 *              arrays laid end to end; header chunk: 0
 *    40     8  payload length (after this 64-byte header)
 *    48     8  XXH3-64 (seed 0) of bytes 0..47 of this header and then
 *              the payload
 *    56     8  reserved, zero
 *    64     -  payload
 *
 * Header chunk payload:
 *
 *     0     4  layout (BLOOM_LAYOUT_SPLIT512; BLOOM_LAYOUT_SLOTS512 and
 *              CUCKOO_LAYOUT_PACKED4: below)
 *     4     4  nslices (0 to SNAPSHOT_MAX_SLICES; 0: an empty window,
 *              whose dump is its header chunk alone)
 *     8     4  growth (0 = off)
 *    12     4  normalize (0 off, 1 standard)
 *    16     8  hash seed (one for every slice)
 *    24     8  capacity (the filter's, for new slices)
 *    32     8  error_rate (the filter's, IEEE-754 double)
 *    40     8  count of keys in all slices (at the dump's start)
 *    48     8  expire window in milliseconds (0 = never)
 *    56     8  creation time (Unix seconds) of the dump
 *    64     8  total bytes of the slices' arrays
 *    72     4  a cuckoo filter's MAXITERATIONS (layout 2; else zero)
 *    76     4  reserved, zero
 *    80     8  keys a cuckoo filter forgot (layout 2; else zero)
 *    88    40  reserved, zero
 *   128  64*n  one entry per slice, oldest first, as in a version 3
 *              snapshot (snapshot.h): +0 nblocks, +8 hashes (u32),
 *              +12 flags (u32: bit 0 merged, no other bit), +16 capacity,
 *              +24 error_rate (double), +32 count, +40 bits set, +48
 *              start of its period (Unix ms, signed), +56 seed of a
 *              merged slice's keys (zero for the filter's own slices)
 *
 * A cuckoo filter (CF.SCANDUMP) has layout CUCKOO_LAYOUT_PACKED4 (2) and
 * its slice entries are those of a version 4 snapshot: +0 nbuckets, +8
 * fingerprint bits (u32), +40 zero, no flags or seed; its "arrays" are
 * its tables (cuckoo.h), copied when the dump starts (a table changes
 * under a reader), and a loader recounts each table against its count.
 * A loader from before cuckoo filters refuses layout 2.
 *
 * A filter partitioned by slot (a cluster node's; bloom.h, filter.h) has
 * layout BLOOM_LAYOUT_SLOTS512 (3): the same fields, entries and arrays as
 * layout 1, but every slice's nblocks is a multiple of 16384
 * (KEYSLOT_COUNT; a loader refuses one that is not, and such an image is
 * not dumped) and its keys' hashes carry their slot. A loader copies only
 * the 4 KiB pages of its arrays that are not zero, so a node's load costs
 * the memory of the slots that had bits. A loader from before layout 3
 * refuses it.
 *
 * Merged slices (MERGE: from filters of other seeds or shapes, read-only,
 * their keys hashed with their own seed) come after the filter's own; a
 * loader refuses an own slice after a merged one, other flags, and a
 * seed on an own slice. The format version stays 1: a dump of no merged
 * slice is byte for byte what seend wrote before MERGE, and a loader
 * from before it refuses a merged slice's flag and seed as non-zero
 * reserved bytes.
 *
 * Bits chunks follow in order: chunk i starts where chunk i-1 ended, the
 * last ends at the total; every chunk but the last has the same payload
 * size. An image is what the slices held when the dump started: the
 * counts are taken then, and since a slice's bits only go from 0 to 1,
 * a chunk read later holds at least the bits of every key acknowledged
 * before the dump began (the same argument as a snapshot's, saver.c).
 */
#ifndef SEEND_DUMP_H
#define SEEND_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "bloom.h"
#include "snapshot.h"

#define DUMP_MAGIC		"SEENDDMP"
#define DUMP_VERSION		1
#define DUMP_KIND_HEADER	1
#define DUMP_KIND_BITS		2
#define DUMP_CHUNK_HEADER	64
/* A whole chunk, header included: the most BF.LOADCHUNK takes. */
#define DUMP_CHUNK_MAX		(16u << 20)
#define DUMP_HEADER_FIXED	128
#define DUMP_SLICE_ENTRY	64

/* What a dump says of its filter, and its slices. */
struct dump_image {
	uint64_t		 seed;
	uint64_t		 capacity;
	double			 error_rate;
	uint32_t		 growth;
	int			 normalize;
	uint64_t		 expire_ms;
	uint64_t		 count;		/* sum of the slices' counts */
	uint64_t		 created;
	uint32_t		 nslices;
	/* layout 3 (BLOOM_LAYOUT_SLOTS512): partitioned by slot; writing,
	 * set by the caller (every slice's nblocks a multiple of
	 * KEYSLOT_COUNT); loading, from the header chunk */
	int			 slot_major;
	/* a cuckoo filter's (layout 2): its slices' cuckoo tables */
	int			 cuckoo;
	uint32_t		 max_kicks;
	uint64_t		 forgotten;
	/* writing: bloom points at the live arrays (the caller holds
	 * them: slice_ref), count and bits_set taken at the start;
	 * loading: arrays allocated by dump_load_start */
	struct snapshot_slice	*slices;
};

/* ---- writing ---- */

/* Total bytes of the image's arrays. */
uint64_t	dump_bits_bytes(const struct dump_image *);
/* How many chunks the image makes, header chunk included, with bits
 * chunks of at most chunk_payload bytes each (0, or more than fits: the
 * largest that fits DUMP_CHUNK_MAX). 0 when the image cannot be dumped:
 * more than SNAPSHOT_MAX_SLICES, an own slice after a merged one, a
 * slot-major slice whose nblocks is not a multiple of KEYSLOT_COUNT, no
 * bytes in its slices, or UINT32_MAX chunks or more (tiny chunks of a
 * huge filter); an image of no slice is its header chunk alone (1). */
uint32_t	dump_chunk_count(const struct dump_image *, size_t chunk_payload);
/*
 * Writes chunk index (0 .. dump_chunk_count - 1) of the image into out,
 * which must hold DUMP_CHUNK_MAX bytes; returns its length, or 0 if index
 * is past the count, id is 0 or the image cannot be dumped. The bits
 * are read from the live arrays now. The header chunk's count is the sum
 * of the slices' (image->count is not read); its creation time is
 * image->created as the caller set it.
 */
/* The length of chunk index, header included (0: no such chunk), so that
 * a reply can announce it before dump_chunk writes it in place. */
size_t		dump_chunk_len(const struct dump_image *, size_t chunk_payload,
		    uint32_t index);
size_t		dump_chunk(const struct dump_image *, uint64_t id,
		    size_t chunk_payload, uint32_t index, unsigned char *out);

/* ---- loading ---- */

struct dump_load;

/*
 * Starts a load from the header chunk (index 0): checks it whole (magic,
 * version, kind, index, checksum, lengths, every field in range, the
 * slice table adding up to the total, merged slices last) and allocates
 * the slices' arrays (a merged slice's bloom with its own seed),
 * unless they need more than max_bytes (0: no bound; max_memory's room).
 * Returns the load, or NULL with a message in err ("bad dump chunk: ...",
 * or the size refused: see dump_refused_bad). A dump of no slice (an
 * empty window) is complete with its header chunk: see
 * dump_load_complete.
 */
struct dump_load *dump_load_start(const void *chunk, size_t len,
		    uint64_t max_bytes, char *err, size_t errlen);
/* What every message about a damaged, truncated, misplaced or foreign
 * chunk begins with; a refusal of a dump's size (max_memory, an
 * allocation) does not. */
#define DUMP_BAD_PREFIX		"bad dump chunk: "
/* 1 if err (from dump_load_start or dump_load_add) is about the chunk's
 * bytes, 0 if it refuses the dump's size. */
int		 dump_refused_bad(const char *err);
/*
 * A chunk on its own, before its place in a load is asked about: whole
 * (its length as its header says), of this format and version, its
 * checksum right, its reserved bytes zero. 0 with *kind (DUMP_KIND_*,
 * or another number a load refuses), or -1 with err ("bad dump chunk:
 * ..."). seen-cli checks a file's chunks with it before sending them.
 */
int		 dump_chunk_verify(const void *chunk, size_t len, uint32_t *kind,
		    char *err, size_t errlen);
/* 1 if len is the length the chunk's header says (a chunk's framing,
 * whatever else is wrong with it), 0 if not. */
int		 dump_chunk_framed(const void *chunk, size_t len);
/* 1 if the dump is a cuckoo filter's (layout 2). */
int		 dump_load_is_cuckoo(const struct dump_load *);
/* 1 once every chunk of the dump is in. */
int		 dump_load_complete(const struct dump_load *);
/*
 * Takes the next bits chunk: it must be of this dump (id), the next index
 * and offset, within the total, and its checksum right; its bytes are
 * copied into the arrays. Returns 1 when this was the last chunk, 0 when
 * more are due, -1 with a message in err (the load is then unusable: the
 * caller frees it).
 */
int		 dump_load_add(struct dump_load *, const void *chunk, size_t len,
		    char *err, size_t errlen);
/* The image being loaded (complete once dump_load_add returned 1); its
 * slices may be taken: set image->slices to NULL before dump_load_free
 * to keep them (the taker frees them with snapshot_slices_free). Each
 * slice's bloom.count is its count; bloom.bits_set counts the bits that
 * arrived (a dump read while keys were added holds more than its
 * table's bits set, which stays in the slice's bits_set). */
struct dump_image *dump_load_image(struct dump_load *);
void		 dump_load_free(struct dump_load *);

#endif
