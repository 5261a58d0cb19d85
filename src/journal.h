/*
 * journal.h - the append-only journal of keys answered new, beside the
 * snapshots: <data_dir>/journal.<16 hex digits>, one file per segment.
 *
 * Segment file (all integers little-endian):
 *
 *   off  size  field
 *     0     8  magic "SEENDJL\n"
 *     8     4  format version (4; 3, 2 and 1 are still read)
 *    12     4  header size (40)
 *    16     8  sequence number (the one in the file's name)
 *    24     8  creation time (Unix seconds)
 *    32     4  reserved, zero
 *    36     4  checksum: low 32 bits of XXH3-64 (seed 0) of bytes 0-35
 *    40     -  records, back to back
 *
 * Every record starts with a type byte and a length byte. Checksums are
 * the low 32 bits of XXH3-64 (seed 0) of the bytes they cover.
 *
 *   'N' (0x4E) name, 84 bytes: binds a name id to a filter
 *     0 1 type, 1 1 length (84), 2 2 name id (0-4095),
 *     4 1 name length (1-64), 5 3 reserved zero, 8 8 the filter's hash
 *     seed, 16 64 the name, zero padded, 80 4 checksum of bytes 0-79
 *   'B' (0x42) key batch, 24 + 8 * count bytes (version 2 only): keys
 *     answered new in one filter in one millisecond
 *     0 1 type, 1 1 header length (24), 2 2 name id,
 *     4 4 count (1-JOURNAL_BATCH_MAX), 8 8 Unix milliseconds,
 *     16 4 checksum of the count * 8 bytes of hashes,
 *     20 4 checksum of bytes 0-19, 24 8*count the keys' XXH3-64 hashes
 *     with their filter's seed
 *   'E' (0x45) reset, 100 bytes (version 3 only): the filter was
 *     emptied (DEL of a config-file filter, RESET) and took a new seed
 *     0 1 type, 1 1 length (100), 2 2 reserved zero,
 *     4 1 name length (1-64), 5 3 reserved zero, 8 8 the seed before,
 *     16 8 the new seed, 24 8 Unix milliseconds, 32 64 the name, zero
 *     padded, 96 4 checksum of bytes 0-95
 *   'f' (0x66) forget batch, as 'B' (version 4 only): keys a cuckoo
 *     filter forgot (FORGET, CF.DEL), in one filter in one millisecond
 *   'a' (0x61) copy batch, as 'B' (version 4 only): keys a cuckoo filter
 *     stored one more copy of whether it held them or not (CF.ADD,
 *     CF.INSERT); a 'B' key is stored only when it is not held
 *   'r' (0x72) runtime filter created, 128 bytes (version 4 only): a
 *     filter made by a command (BF.RESERVE, CF.RESERVE, a first BF.ADD or
 *     SADD), before its first key; replay creates it if no snapshot has
 *     it, so its keys are not skipped as those of an unknown filter
 *     0 1 type, 1 1 length (128), 2 2 reserved zero, 4 1 name length
 *     (1-64), 5 1 filter type (0 bloom, 1 cuckoo), 6 1 normalize (0, 1),
 *     7 1 reserved zero, 8 8 seed, 16 8 capacity, 24 8 error_rate
 *     (IEEE-754 double), 32 4 growth, 36 4 MAXITERATIONS (cuckoo; else
 *     zero), 40 8 Unix milliseconds, 48 64 the name, zero padded, 112 12
 *     reserved zero, 124 4 checksum of bytes 0-123; byte 7 is 1 for a
 *     filter made whole from an image (a dump loaded, a MERGE into a new
 *     name): it exists only if its snapshot does (replay makes no empty
 *     one), and it undoes an earlier 'x' of its name and seed (a dump of
 *     a deleted filter loaded again), which the snapshot then holds
 *   'x' (0x78) runtime filter dropped, 100 bytes (version 4 only): DEL,
 *     UNLINK or an EXPIRE deadline removed it; laid out as 'E' with bytes
 *     16-23 zero (no new seed)
 *   'u' (0x75) deadline, 100 bytes (version 4; the replication stream
 *     only): EXPIRE or PERSIST gave runtime filter name a deadline
 *     (Unix ms in bytes 16-23) or took it away (0 there); laid out as 'x'
 *   'o' (0x6F) replication offset, 64 bytes (version 4 only): on a
 *     replica, the primary's stream was applied up to here; replay hands
 *     the last one to the replica, which resumes from it (partial resync)
 *     0 1 type, 1 1 length (64), 2 2 reserved zero, 4 4 reserved zero,
 *     8 8 offset, 16 40 replication id (hex characters), 56 4 reserved
 *     zero, 60 4 checksum of bytes 0-59
 *   'T' (0x54) time, 16 bytes (version 1 only): the time of the keys
 *     that follow
 *     0 1 type, 1 1 length (16), 2 2 reserved zero,
 *     4 8 Unix milliseconds, 12 4 checksum of bytes 0-11
 *   'K' (0x4B) key, 16 bytes (version 1 only): one key answered new
 *     0 1 type, 1 1 length (16), 2 2 name id,
 *     4 8 the key's hash, 12 4 checksum of bytes 0-11
 *
 * A version 4 segment holds 'N', 'B', 'E', 'f', 'a', 'r' and 'x' records; a
 * version 3 one (seend before cuckoo filters; replayed, never written)
 * 'N', 'B' and 'E', a version 2 one
 * (seend 1.x before resets; replayed, never written) 'N' and 'B', a
 * version 1 segment (seend 0.x, replayed after an upgrade, never written)
 * 'N', 'T' and 'K'.
 *
 * Why version 4 for 'f' and 'a': a forget that an older seend skipped
 * would bring the key back, so it must refuse the segment, as for 'E'.
 *
 * Why a version for 'E': a reset that an older seend skipped would bring
 * back every key it forgot, so an older seend must not read a segment
 * that may hold one. It refuses a version it does not know with a message
 * that says so ("unsupported journal version 3") rather than calling the
 * first 'E' damage at some offset; and a version 2 segment that holds an
 * 'E' is damage here, since no seend wrote one.
 *
 * Why 'E' carries its name and both seeds rather than a name id: resets
 * are rare, and a record that says everything lets replay decide alone
 * whether the filter it finds is the one the reset emptied (it has the
 * seed before: empty it), one made after it (a snapshot taken since has
 * the new seed or a later one: leave it), or one with nothing yet (take
 * the new seed). The seed is the filter's epoch: keys journalled with
 * the seed before no longer apply, and nothing in a snapshot says when it
 * was taken but its seed.
 *
 * Name ids and the time are per segment: a segment says everything it
 * means, so any other segment may be removed without changing it. A 'B'
 * or 'K' record refers to the latest 'N' record with its id before it in
 * the same segment ('K' also to the latest 'T'); an id may be bound again
 * to another name (the writer keeps a bounded table of names).
 *
 * Why batches (version 2): a key used to cost a 16-byte record with its
 * own checksum, ~130 instructions and twice the bytes copied into the
 * page cache. Keys come in runs of one filter and one millisecond (a
 * pipelined loop turn), so one header and one checksum per run leave 8
 * bytes a key, stored by journal_append's inline fast path; the body's
 * checksum is computed once, when the batch is closed (journal_write, a
 * new filter or millisecond, a full batch). The header has its own
 * checksum so that a flipped bit in the count is damage, not a length
 * that runs past the end of the file and passes for a torn tail; the
 * count is bounded by JOURNAL_BATCH_MAX so a reader holds any batch in a
 * fixed buffer, and checked before the body is read.
 *
 * Why the seed: a hash means nothing without it, and a filter's seed is
 * drawn at random when it is created. A filter created after the last
 * start has no snapshot until its first one succeeds; replay must create
 * it with the seed its keys were hashed with. And a record whose seed is
 * not the filter's belongs to an earlier filter of the same name.
 *
 * Why these type codes and length bytes: the codes of one version differ
 * from each other in at least two bits ('B' and 'N' in two, 'E' from
 * both in three, 'N', 'T' and 'K' in two or more; 'R' would be one bit
 * from 'B'; 'f', 'a', 'r', 'x', 'o' and 'u' differ from 'B', 'N', 'E' and each
 * other in at least two) and the length byte must match the type, so one
 * flipped bit in a record's first two bytes is always an error rather
 * than a length that would run past the end of the file and pass for a
 * torn tail.
 *
 * Replay rules. A torn tail, in the last segment only, is dropped and
 * journal_open truncates it away; it is one of:
 *   - an incomplete record running to the end of the file whose type and
 *     length bytes (as far as present) are right; for a batch whose
 *     header is whole, that header passes its checksum and bounds (its
 *     keys were never acknowledged: replies wait for the write);
 *   - zero bytes from a record boundary to the end of the file;
 *   - a record that fails a checksum and whose bytes from a multiple of
 *     4096 (a file offset) inside it to the end of the file are all zero:
 *     the pages a file system had not written back before a power loss.
 *     Such keys were written but not fsynced, so only everysec could have
 *     acknowledged them, and everysec may lose that much on a power loss.
 * Any other failure is damage - a checksum that fails over bytes that are
 * not zero to the end, a count of 0 or over JOURNAL_BATCH_MAX, a record of
 * the other version, an incomplete record in a segment that is not the
 * last: replay stops, naming the file and the offset, and changes
 * nothing.
 *
 * Threads: journal_append, journal_write, journal_rotate,
 * journal_drop_upto and the accessors belong to one thread (the event
 * loop); journal_sync may be called from another thread at the same time
 * (see journal.c for the locking).
 */
#ifndef SEEND_JOURNAL_H
#define SEEND_JOURNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define JOURNAL_PREFIX		"journal."
#define JOURNAL_MAGIC		"SEENDJL\n"
#define JOURNAL_VERSION		4	/* written; 3, 2 and 1 are read too */
#define JOURNAL_VERSION_V3	3
#define JOURNAL_VERSION_V2	2
#define JOURNAL_VERSION_V1	1
#define JOURNAL_HEADER_SIZE	40
#define JOURNAL_NAME_MAX	64
#define JOURNAL_REC_NAME	0x4E	/* 'N' */
#define JOURNAL_REC_BATCH	0x42	/* 'B' */
#define JOURNAL_REC_RESET	0x45	/* 'E', version 3 */
#define JOURNAL_REC_FORGET	0x66	/* 'f', version 4 */
#define JOURNAL_REC_COPY	0x61	/* 'a', version 4 */
#define JOURNAL_REC_CREATE	0x72	/* 'r', version 4 */
#define JOURNAL_REC_DROP	0x78	/* 'x', version 4 */
#define JOURNAL_REC_OFFSET	0x6F	/* 'o', version 4 */
#define JOURNAL_REC_DEADLINE	0x75	/* 'u', version 4 */
#define JOURNAL_OFFSET_SIZE	64
#define JOURNAL_REPLID_LEN	40
#define JOURNAL_CREATE_SIZE	128
#define JOURNAL_DROP_SIZE	100
/* the longest fixed-size record */
#define JOURNAL_FIXED_MAX	JOURNAL_CREATE_SIZE
#define JOURNAL_REC_TIME	0x54	/* 'T', version 1 */
#define JOURNAL_REC_KEY		0x4B	/* 'K', version 1 */
#define JOURNAL_NAME_SIZE	84
#define JOURNAL_BATCH_HEAD	24	/* a batch's header; 8 bytes a key */
#define JOURNAL_BATCH_MAX	8192	/* keys in one batch: 64 KiB */
#define JOURNAL_TIME_SIZE	16
#define JOURNAL_KEY_SIZE	16
#define JOURNAL_RESET_SIZE	100
/* The most bytes one journal_append can add: a name record, a batch
 * header and a key. */
#define JOURNAL_APPEND_MAX	(JOURNAL_NAME_SIZE + JOURNAL_BATCH_HEAD + 8)
/* journal_open's buffer when bufmax is 0: 524288 keys in batches. */
#define JOURNAL_BUF_DEFAULT	(4UL << 20)
/* Name ids the writer uses (slots of its name cache); ids are 16 bits. */
#define JOURNAL_NAME_SLOTS	4096

struct journal;

/*
 * One key, or one reset, as replay finds it; name is not NUL-terminated.
 * A callback must look at reset: a reset is no key.
 */
struct journal_key {
	const char	*name;
	size_t		 namelen;
	uint64_t	 seed;		/* the filter's hash seed (a reset: the
					   seed before it) */
	uint64_t	 hash;		/* 0 for a reset */
	uint64_t	 time;		/* Unix milliseconds */
	uint64_t	 seq;		/* segment */
	uint64_t	 offset;	/* of the record in its segment */
	int		 reset;		/* an 'E' record: the filter was emptied */
	int		 op;		/* a key's: JOURNAL_OP_* */
	int		 create;	/* an 'r' record: shape says how */
	int		 drop;		/* an 'x' record */
	int		 deadline;	/* a 'u' record: */
	int64_t		 deadline_ms;	/* 0: none */
	struct journal_filter {
		int	 type;		/* 0 bloom, 1 cuckoo */
		int	 normalize;
		uint64_t capacity;
		double	 error_rate;
		uint32_t growth;
		uint32_t max_kicks;
		int	 image;		/* made from a dump or a merge */
	}		 shape;
	uint64_t	 new_seed;	/* a reset's: the seed from then on */
	int		 repl;		/* an 'o' record: */
	uint64_t	 repl_offset;
	char		 replid[JOURNAL_REPLID_LEN];
};

/* What a key record says was done with the key. */
#define JOURNAL_OP_NEW		0	/* 'B', 'K': answered new, recorded */
#define JOURNAL_OP_FORGET	1	/* 'f': forgotten */
#define JOURNAL_OP_COPY		2	/* 'a': one more copy stored */

/* Returns 0 to go on, -1 with a message in err to stop the replay. */
typedef int	(*journal_replay_cb)(void *arg, const struct journal_key *,
		    char *err, size_t errlen);

struct journal_replay_info {
	uint64_t	 segments;	/* segment files read */
	uint64_t	 keys;		/* key records replayed */
	uint64_t	 resets;	/* reset records replayed */
	uint64_t	 filters;	/* create and drop records replayed */
	uint64_t	 bytes;		/* in all segments, torn tail excluded */
	uint64_t	 last_seq;	/* highest sequence found, 0 if none */
	int		 torn;		/* a torn tail was found: */
	char		 torn_path[PATH_MAX];
	uint64_t	 torn_offset;	/* where the whole records end */
	uint64_t	 torn_bytes;	/* the bytes dropped */
};

/*
 * Visits every segment in dir in sequence order and calls cb (if not NULL)
 * for each key record. Returns 0 with *info filled in (a torn tail is
 * reported there, not as an error), or -1 with a message naming the file,
 * the offset and the way out in err. Never modifies anything.
 */
int	journal_replay(const char *dir, journal_replay_cb cb, void *arg,
	    struct journal_replay_info *info, char *err, size_t errlen);

/*
 * The same for one open segment (fuzzing, tests). seq is the sequence its
 * name says, or UINT64_MAX to take the header's; last says whether a torn
 * tail is allowed. Adds to *info, which the caller zeroes.
 */
int	journal_replay_fd(int fd, const char *path, uint64_t seq, int last,
	    journal_replay_cb cb, void *arg, struct journal_replay_info *info,
	    char *err, size_t errlen);

/*
 * Opens the journal in dir for appending, after a replay: info is what
 * journal_replay returned for the same dir (NULL: a replay without
 * callback is run here first). A torn tail in info is truncated away (and
 * an empty or header-less torn segment removed); then a new segment,
 * numbered one past the highest, is created, so appending never has to
 * rebuild an old segment's name ids. bufmax bounds the in-memory buffer of
 * records not yet written (0: JOURNAL_BUF_DEFAULT; at least
 * 4 * JOURNAL_APPEND_MAX). Returns NULL
 * with a message in err.
 */
struct journal	*journal_open(const char *dir,
		    const struct journal_replay_info *info, size_t bufmax,
		    char *err, size_t errlen);
/* Closes and frees; writes nothing (call journal_write and journal_sync
 * first). Stops the everysec thread if it runs. */
void		 journal_close(struct journal *);

/*
 * The open batch, as journal_append's inline fast path sees it: the first
 * member of struct journal, private to journal.c and the inline below.
 * pos == end when no batch is open or the open one is full.
 */
struct journal_batch {
	unsigned char	*pos;		/* where the next key's hash goes */
	unsigned char	*end;
	const char	*name;		/* the batch's filter, as passed */
	uint64_t	 seed;
	uint64_t	 time;
};

/* journal_append is journal_append_fast, then journal_append_slow when
 * the fast one returns 0 (a caller may call them apart, so that the slow
 * one's arguments are only computed when it runs). */
int		 journal_append_slow(struct journal *, const char *name,
		    size_t namelen, uint64_t seed, uint64_t hash,
		    uint64_t time);

/*
 * Adds one key to the buffer (a name record and a batch header first when
 * the segment needs them): no system call. seed is the filter's hash
 * seed, hash the key's hash with it, time when it was answered new (Unix
 * milliseconds). Returns 0, or -1 with errno EINVAL (namelen not 1-64) or
 * ENOBUFS (fewer than JOURNAL_APPEND_MAX bytes free in the buffer:
 * nothing was added).
 *
 * The common case - the same name pointer and seed as the key before, the
 * same millisecond, room in the open batch - stores 8 bytes and moves a
 * pointer. So a name pointer must not be passed again with the same seed
 * and other bytes while a batch is open (until the next journal_write):
 * a filter's name, which lives as long as the filter, is such a pointer.
 *
 * journal_append_fast is that common case alone: 1 if it stored the key,
 * 0 if it did nothing.
 */
static inline int
journal_append_fast(struct journal *j, const char *name, uint64_t seed,
    uint64_t hash, uint64_t time)
{
	struct journal_batch *b = (struct journal_batch *)(void *)j;

	if (__builtin_expect(b->name == name && b->seed == seed &&
	    b->time == time && b->pos != b->end, 1)) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		hash = __builtin_bswap64(hash);
#endif
		memcpy(b->pos, &hash, sizeof(hash));
		b->pos += sizeof(hash);
		return 1;
	}
	return 0;
}

static inline int
journal_append(struct journal *j, const char *name, size_t namelen,
    uint64_t seed, uint64_t hash, uint64_t time)
{
	if (journal_append_fast(j, name, seed, hash, time))
		return 0;
	return journal_append_slow(j, name, namelen, seed, hash, time);
}

/*
 * Appends a reset record: filter name was emptied at time (Unix
 * milliseconds) and its seed went from old_seed to new_seed. It closes the
 * open batch first, so it comes after every key appended before it and
 * before every key appended after. No system call. Returns 0, or -1 with
 * errno EINVAL (namelen not 1-64) or ENOBUFS (fewer than
 * JOURNAL_RESET_SIZE bytes free: nothing was added).
 */
int		 journal_append_reset(struct journal *, const char *name,
		    size_t namelen, uint64_t old_seed, uint64_t new_seed,
		    uint64_t time);
/*
 * Appends a key of a cuckoo filter's forget (op JOURNAL_OP_FORGET) or
 * copy (JOURNAL_OP_COPY) to a batch of that kind ('f' or 'a'), in order
 * with the keys before and after it; journal_append's arguments and
 * returns otherwise.
 */
int		 journal_append_op(struct journal *, int op, const char *name,
		    size_t namelen, uint64_t seed, uint64_t hash,
		    uint64_t time);
/*
 * Where the next record goes: the current segment's sequence in *seq and
 * the byte offset in it (the buffer counted). A key appended after this
 * call has a (seq, offset) in replay's journal_key at least this one, a
 * key appended before it a lesser one (the next key of an open batch
 * starts exactly here): a snapshot of
 * a cuckoo filter keeps this position so that replay applies only what
 * came after it (a forget is not idempotent).
 */
uint64_t	 journal_position(const struct journal *, uint64_t *seq);
/*
 * Appends an 'r' record: runtime filter name of seed and that shape was
 * created at time; or an 'x' record: it was dropped. In order with the
 * keys, as journal_append_reset. Returns 0, or -1 with errno EINVAL or
 * ENOBUFS (nothing was added).
 */
int		 journal_append_create(struct journal *, const char *name,
		    size_t namelen, uint64_t seed,
		    const struct journal_filter *, uint64_t time);
int		 journal_append_drop(struct journal *, const char *name,
		    size_t namelen, uint64_t seed, uint64_t time);
/* A 'u' record: filter name (of seed) expires at at_ms (0: never). */
int		 journal_append_deadline(struct journal *, const char *name,
		    size_t namelen, uint64_t seed, int64_t at_ms,
		    uint64_t time);
/* Appends an 'o' record (replid: JOURNAL_REPLID_LEN characters); 0, or
 * -1 with errno ENOBUFS. */
int		 journal_append_offset(struct journal *, const char *replid,
		    uint64_t offset);

/*
 * The replication stream is this encoding too, in memory: a journal with
 * no file, whose records of a loop turn journal_take hands over (a batch
 * open is closed first) and journal_clear then forgets, name ids and all,
 * so that each turn's records say everything they mean (a replica may
 * start reading at any turn). journal_write and the segment calls must not
 * be used on it. NULL with a message if out of memory.
 */
struct journal	*journal_open_mem(size_t bufmax, char *err, size_t errlen);
size_t		 journal_take(struct journal *, const unsigned char **p);
void		 journal_clear(struct journal *);
/*
 * Replays records held in memory (one turn of the replication stream, no
 * segment header, version 4 records), calling cb for each as
 * journal_replay does; what names the bytes in messages. An incomplete or
 * damaged record is an error. 0, or -1 with a message in err.
 */
int		 journal_replay_mem(const unsigned char *p, size_t len,
		    const char *what, journal_replay_cb cb, void *arg,
		    char *err, size_t errlen);

/*
 * Makes the buffer hold at least room more bytes without a write,
 * growing it past the size journal_open was given: for a caller that
 * must not write now (journal_max) and must not lose the key either.
 * Returns 0, or -1 (out of memory: nothing changed).
 */
int		 journal_reserve(struct journal *, size_t room);
/* Bytes in the live segments on disk, the buffer excluded. */
uint64_t	 journal_disk_bytes(const struct journal *);

/* Whether the next journal_append could fail with ENOBUFS; a caller that
 * must not acknowledge an unjournalled key asks before it sets the key. */
int		 journal_full(const struct journal *);
/* Bytes appended and not yet written. */
size_t		 journal_pending(const struct journal *);
/* Bytes free in the buffer: journal_append cannot fail with ENOBUFS
 * before room / JOURNAL_APPEND_MAX more calls. */
size_t		 journal_room(const struct journal *);

/*
 * Writes the buffer to the current segment. Returns 0 when all of it is
 * written, or -1 with a message (ENOSPC, EIO): the bytes not written stay
 * in the buffer, in order, and the next call goes on from there.
 */
int		 journal_write(struct journal *, char *err, size_t errlen);

/*
 * fdatasync(2)s the current segment: everything written before the call
 * is durable when it returns 0. Safe from another thread while the owner
 * appends, writes and rotates. After a failed fsync the kernel may have
 * dropped the data it could not write, so the segment stays in error (-1)
 * until it is dropped: only a snapshot can then make its keys safe.
 */
int		 journal_sync(struct journal *, char *err, size_t errlen);

/*
 * Writes what is buffered, fsyncs the current segment, starts the next and
 * sets *closed to the sequence of the one it closed. Returns -1 with a
 * message and changes nothing if the buffer cannot be written or the new
 * segment cannot be created.
 */
int		 journal_rotate(struct journal *, uint64_t *closed, char *err,
		    size_t errlen);
/* Removes every segment numbered <= seq except the current one, then
 * fsyncs the directory. */
int		 journal_drop_upto(struct journal *, uint64_t seq, char *err,
		    size_t errlen);

/* Bytes in all live segments plus the bytes buffered. */
uint64_t	 journal_bytes(const struct journal *);
/* The current segment's sequence number. */
uint64_t	 journal_seq(const struct journal *);
/* Live segments, the current one included. */
uint64_t	 journal_segments(const struct journal *);
/* When (Unix seconds) the last journal_sync that had something to sync
 * succeeded, or the journal was opened. */
int64_t		 journal_synced_at(const struct journal *);
/* Bytes written but not yet covered by a successful sync. */
uint64_t	 journal_unsynced(const struct journal *);
/*
 * "ok", or a description of the first fault still standing: a write that
 * failed, or a segment whose fsync failed and that has not been dropped.
 * Returns 0 when ok, -1 otherwise.
 */
int		 journal_status(struct journal *, char *buf, size_t len);

/*
 * The everysec mode's background thread: calls journal_sync every
 * interval_ms while something is unsynced. A failure is kept for
 * journal_status. Returns 0, or -1 with a message.
 */
int		 journal_everysec_start(struct journal *, unsigned interval_ms,
		    char *err, size_t errlen);
void		 journal_everysec_stop(struct journal *);

/* Test hook: when > 0, journal writes fail with ENOSPC once this many bytes
 * in all have been written by the process (headers included). */
extern uint64_t journal_fault_write_limit;

#endif
