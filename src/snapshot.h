/*
 * snapshot.h - one file per filter in data_dir: <data_dir>/<name>.bloom
 *
 * File format (all integers little-endian):
 *
 *   off  size  field
 *     0     8  magic "SEENDBF\n"
 *     8     4  format version (1)
 *    12     4  layout (BLOOM_LAYOUT_SPLIT512)
 *    16     8  nblocks (bit array = nblocks * 64 bytes)
 *    24     4  hashes (k)
 *    28     4  header size (128)
 *    32     8  hash seed
 *    40     8  capacity (from the config that created it)
 *    48     8  error_rate (IEEE-754 double)
 *    56     8  count of keys
 *    64     8  bits set
 *    72     8  creation time (Unix seconds)
 *    80    48  reserved, zero
 *   128     n  the bit array, nblocks * 64 bytes
 *   128+n   8  XXH3-64 (seed 0) of every byte before it
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

#define SNAPSHOT_MAGIC		"SEENDBF\n"
#define SNAPSHOT_VERSION	1
#define SNAPSHOT_HEADER_SIZE	128
#define SNAPSHOT_SUFFIX		".bloom"

struct snapshot_header {
	uint32_t	 version;
	uint32_t	 layout;
	uint64_t	 nblocks;
	uint32_t	 hashes;
	uint64_t	 seed;
	uint64_t	 capacity;
	double		 error_rate;
	uint64_t	 count;
	uint64_t	 bits_set;
	uint64_t	 created;
};

/* "<dir>/<name>.bloom" into buf; returns 0, or -1 if it does not fit. */
int	snapshot_path(char *buf, size_t len, const char *dir, const char *name);

/*
 * Writes b (which the event loop may be updating at the same time; see
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
 * Loads path into a new filter *b after verifying it whole (size, magic,
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

#endif
