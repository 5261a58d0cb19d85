/*
 * snapshot.h - one file per filter in data_dir: <data_dir>/<name>.bloom
 *
 * File format, version 2 and 3 (all integers little-endian):
 *
 *   off  size  field
 *     0     8  magic "SEENDBF\n"
 *     8     4  format version (2)
 *    12     4  layout (BLOOM_LAYOUT_SPLIT512, or BLOOM_LAYOUT_SLOTS512:
 *              below)
 *    16     4  nslices (1 to SNAPSHOT_MAX_SLICES)
 *    20     4  growth (0 = off)
 *    24     4  reserved, zero
 *    28     4  header size (128)
 *    32     8  hash seed (one for every slice)
 *    40     8  capacity (declared, from the config)
 *    48     8  error_rate (declared, IEEE-754 double)
 *    56     8  count of keys in all slices
 *    64     8  expire window in milliseconds (0 = never)
 *    72     8  creation time (Unix seconds)
 *    80     8  journal segment when the filter was captured (0: none,
 *              a file of a seend before it), then
 *    88     8  byte offset in that segment: replay takes no record of
 *              the filter's name before it as changing the filter (its
 *              keys, resets, drops and creations are in the file)
 *    96    32  reserved, zero
 *   128  64*n  one entry per slice, oldest first:
 *                +0 nblocks, +8 hashes (u32), +12 flags (u32; version
 *                3: bit 0 merged, else zero), +16 capacity, +24
 *                error_rate (double), +32 count, +40 bits set, +48
 *                start of its period (Unix ms, signed), +56 seed of a
 *                merged slice's keys (version 3; else zero)
 *     ...   the slices' bit arrays, in the same order, nblocks * 64 each
 *     end   8  XXH3-64 (seed 0) of every byte before it
 *
 * Version 3 is version 2 with merged slices (MERGE): slices brought
 * from filters of other seeds or shapes, read-only, after the filter's
 * own slices, each with its flags and seed. A file without one is
 * written as version 2, which earlier seend versions read.
 *
 * Layout 3 (BLOOM_LAYOUT_SLOTS512) in a version 2 or 3 file is a filter
 * partitioned by slot (a cluster node's; bloom.h, filter.h): the same
 * fields and arrays, but every slice's nblocks is a multiple of 16384
 * (KEYSLOT_COUNT; a loader refuses one that is not) and its keys' hashes
 * carry their slot, so only the blocks of slots the node owned hold bits.
 * Writing one to a regular file leaves its arrays' all-zero 4 KiB runs as
 * holes (the checksum covers them as the zeros they read as), and loading
 * one copies only the pages that are not zero: disk and memory go with
 * the slots owned. A seend from before layout 3 refuses the file.
 *
 * Version 4 is a cuckoo filter (type = cuckoo): layout
 * CUCKOO_LAYOUT_PACKED4 (cuckoo.h), or CUCKOO_LAYOUT_SLOTS when partitioned
 * by slot (its tables in 16384 ranges, each slice's nbuckets a multiple of
 * 2 * 16384, zero runs written as holes as layout 3's), no merged slice, and
 *    80     8  journal segment when the filter was captured
 *    88     8  byte offset in that segment (replay applies only the
 *              records after it: see journal_position)
 *    96     4  MAXITERATIONS (CF.RESERVE; 0 = the default)
 *   100     4  reserved, zero
 *   104     8  keys forgotten so far (CF.INFO)
 *   112    16  reserved, zero
 * with each slice's entry holding +0 nbuckets, +8 fingerprint bits (u32,
 * 7 to 16), +12 flags (zero), +16 capacity, +24 error_rate, +32 count
 * (fingerprints held), +40 zero, +48 start (Unix ms), +56 zero; and each
 * array is the table, cuckoo_table_bytes_for(nbuckets, bits) bytes.
 *
 * Version 1 (written by seend 0.1.0) is one filter: at 16 nblocks (8),
 * 24 hashes (4), 64 bits set (8), the other fields as above, then its
 * array and the trailer. It loads as one slice.
 *
 * Writing: <data_dir>/.<name>.bloom.tmp is written, fsynced, renamed over
 * <name>.bloom, and data_dir is fsynced, so a crash at any instant leaves the
 * old file or the new one whole.
 *
 * No libevent here: the writer runs on the snapshot thread.
 */
#ifndef SEEND_SNAPSHOT_H
#define SEEND_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "bloom.h"
#include "cuckoo.h"

#define SNAPSHOT_MAGIC		"SEENDBF\n"
/* what a file without merged slices is written as (3 with them) */
#define SNAPSHOT_VERSION	2
#define SNAPSHOT_MAX_SLICES	4096
/* Slice start times are Unix milliseconds up to the year ~33000. */
#define SNAPSHOT_MAX_TIME_MS	1000000000000000LL
#define SNAPSHOT_HEADER_SIZE	128
#define SNAPSHOT_SUFFIX		".bloom"

#define SNAPSHOT_VERSION_CUCKOO	4

/* What a file says of its filter (the first slice's shape for tools). */
struct snapshot_header {
	uint32_t	 version;
	int		 cuckoo;	/* version 4: a cuckoo filter */
	/* the journal position of the capture (versions 2 to 4; 0 when
	 * none); version 4: MAXITERATIONS, keys forgotten */
	uint64_t	 jseq, joff;
	uint32_t	 max_kicks;
	uint64_t	 forgotten;
	uint64_t	 array_bytes;	/* of all slices, as in the file */
	uint32_t	 layout;
	/* layout BLOOM_LAYOUT_SLOTS512 or CUCKOO_LAYOUT_SLOTS: the filter is
	 * partitioned by slot (every slice's nblocks a multiple of
	 * KEYSLOT_COUNT, nbuckets of 2 * KEYSLOT_COUNT). Writing: set
	 * by the caller in the info given; loading: set from the file */
	int		 slot_major;
	uint32_t	 nslices;
	uint32_t	 growth;
	uint64_t	 expire_ms;
	uint64_t	 nblocks;	/* of all slices */
	uint32_t	 hashes;	/* of the newest slice */
	uint64_t	 seed;
	uint64_t	 capacity;
	double		 error_rate;
	uint64_t	 count;
	uint64_t	 bits_set;	/* of all slices */
	uint64_t	 created;
};
#define snapshot_info snapshot_header

/* One slice, written from (bloom's array is read) or loaded into. */
struct snapshot_slice {
	struct bloom	 bloom;
	/* a cuckoo filter's slice (version 4): writing, a copy the job owns
	 * (filter_capture); loading, the table read */
	struct cuckoo	 cuckoo;
	uint64_t	 capacity;
	double		 error_rate;
	int64_t		 start_ms;
	uint64_t	 count;		/* writing: taken at submission */
	uint64_t	 bits_set;
	/* a slice MERGE brought from another filter: read-only, and its
	 * keys hashed with its own seed (version 3, below) */
	int		 merged;
	uint64_t	 seed;		/* merged: its keys' seed; else 0 */
};

/*
 * The highest journal segment any snapshot file in dir names as where it
 * was captured (0: none): a journal numbered again from nothing starts
 * past it, so that no file's position lies after records written since.
 */
uint64_t snapshot_max_jseq(const char *dir);

/* "<dir>/<name>.bloom" into buf; returns 0, or -1 if it does not fit. */
int	snapshot_path(char *buf, size_t len, const char *dir, const char *name);

/*
 * Writes a filter of info->nslices slices (whose arrays the event loop may
 * be updating at the same time; see snapshot.c). info's seed, capacity,
 * error_rate, growth and expire_ms describe it; count is summed here.
 * Returns 0, or -1 with a message in err; on failure the previous snapshot
 * is untouched and the temporary file removed.
 */
int	snapshot_write_slices(const char *dir, const char *name,
	    const struct snapshot_info *info, const struct snapshot_slice *,
	    char *err, size_t errlen);

/* The same into an open file, at its offset, with no fsync: a full
 * sync's image (saver.c). 0, or -1 with a message. */
int	snapshot_write_slices_fd(int fd, const char *name,
	    const struct snapshot_info *info, const struct snapshot_slice *,
	    char *err, size_t errlen);

/*
 * One fixed slice (tools and tests): writes b (which the event loop may be updating at the same time; see
 * snapshot.c) as filter name with the given header fields. count and
 * bits_set are taken by the caller before the write begins. Returns 0, or -1
 * with a message in err; on failure the previous snapshot is untouched and
 * the temporary file removed.
 */
int	snapshot_write(const char *dir, const char *name, const struct bloom *b,
	    uint64_t capacity, double error_rate, uint64_t count,
	    uint64_t bits_set, char *err, size_t errlen);

/*
 * Reads and verifies the header of an open snapshot (size, magic, version,
 * layout, checksum) without loading it into a filter. Used by "seend
 * --inspect". Returns 0, or -1 with a message in err.
 */
int	snapshot_verify_fd(int fd, struct snapshot_header *hdr, char *err,
	    size_t errlen);

/*
 * Loads path after verifying it whole (size, magic, version, layout,
 * checksum) and that it was made for capacity and error_rate. Returns 1
 * with the slices in *slices (the caller frees them with
 * snapshot_slices_free), 0 if there is no file, -1 with a message naming
 * the file and the problem in err. The file is never modified.
 */
int	snapshot_load_slices(const char *path, uint64_t capacity,
	    double error_rate, struct snapshot_info *,
	    struct snapshot_slice **slices, char *err, size_t errlen);
int	snapshot_load_slices_fd(int fd, const char *name, uint64_t capacity,
	    double error_rate, struct snapshot_info *,
	    struct snapshot_slice **slices, char *err, size_t errlen);
void	snapshot_slices_free(struct snapshot_slice *, uint32_t n);

/*
 * One slice (tools and tests): loads path into a new filter *b after verifying it whole (size, magic,
 * version, layout, checksum) and that its shape matches what capacity and
 * error_rate plan now. Returns 1 if loaded, 0 if there is no file (b is
 * untouched), -1 with a message naming the file and the problem in err.
 * The file is never modified.
 */
int	snapshot_load(const char *path, uint64_t capacity, double error_rate,
	    struct bloom *b, struct snapshot_header *hdr, char *err,
	    size_t errlen);
/* The same from an open descriptor (fuzzing); name is used in messages. */
int	snapshot_load_fd(int fd, const char *name, uint64_t capacity,
	    double error_rate, struct bloom *b, struct snapshot_header *hdr,
	    char *err, size_t errlen);

/* Test hook: when > 0, snapshot_write fails with ENOSPC after this many
 * bytes (set from SEEND_FAULT_WRITE_LIMIT in main.c). */
extern uint64_t snapshot_fault_write_limit;
/* Test hook: while the file it names exists, a snapshot waits before it
 * takes its name (SEEND_FAULT_HOLD_SNAPSHOT in main.c): a test sees what
 * happens meanwhile. */
extern const char *snapshot_fault_hold;

#endif
