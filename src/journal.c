/*
 * journal.c - framing, appending, syncing, rotating and replaying the
 * journal; the format is described in journal.h.
 *
 * Why segments rather than one file rewritten: a snapshot makes every
 * record before it redundant, and with segments that is an unlink, never a
 * copy. The caller rotates when it submits a round of snapshots and drops
 * the segments up to the one it closed once every snapshot of that round
 * has succeeded, so the journal holds about two snapshot intervals.
 *
 * Why XXH3-64 truncated to 32 bits as the checksum rather than CRC32C: the
 * project already links xxHash (inlined, as bloom.h does), it runs at one
 * to three bytes per instruction over a batch's body (SSE2, AVX2) without
 * a table or SSE4.2 path of our own, and damage that is not a single
 * flipped bit in the first two bytes (which the fixed lengths and type
 * codes catch for certain) passes with probability 2^-32.
 *
 * The open batch. journal_append's inline fast path (journal.h) stores a
 * hash at hot.pos while the name pointer, seed and millisecond are the
 * open batch's; everything else is journal_append_slow here, which closes
 * the batch (count and checksums written into its header) and opens the
 * next. While a batch is open, buf[len] is its header and hot.pos the end
 * of the bytes appended (cur_len); journal_write closes it first, so
 * [off, len) only ever holds whole records.
 *
 * Locking. One thread (the event loop) owns the buffer, the name cache,
 * the segment list and the descriptor's identity: it appends, writes and
 * rotates. journal_sync may run on another thread at the same time (the
 * everysec thread), and needs only the current descriptor and how many
 * bytes have been written:
 *   - sync_mtx is held around every fdatasync and around the moment
 *     journal_rotate switches descriptors, so a sync never uses a
 *     descriptor that has been closed (and whose number may be reused);
 *     write(2) itself needs no lock, since writes and fdatasync on one
 *     file may run concurrently;
 *   - written (bytes written to live segments) is stored by the owner with
 *     release order and loaded by the syncer with acquire order before it
 *     calls fdatasync: every byte it counts was written before the sync
 *     began, so "synced = that count" after a successful sync is true;
 *   - err_mtx guards the fsync error, so journal_status (owner thread)
 *     never waits behind an fsync in progress.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include "fileio.h"
#include "journal.h"

/* holds any record whole: the largest is a full batch */
#define READ_CHUNK	(128 * 1024)
#define SUM_SIZE	4
/* a file system writes back in pages of a power of two >= this */
#define PAGE_GRAIN	4096
#define NAME_PROBES	8	/* slots tried for a name's id */

uint64_t journal_fault_write_limit;

struct segment {
	uint64_t	 seq;
	uint64_t	 size;
};

struct name_slot {
	uint8_t		 len;		/* 0: unbound in this segment */
	char		 name[JOURNAL_NAME_MAX];
	uint64_t	 seed;
};

struct journal {
	struct journal_batch hot;	/* first: journal_append reads it */
	unsigned	 hot_type;	/* the open batch's record type */
	char		*dir;
	int		 fd;		/* current segment, O_APPEND */
	uint64_t	 seq;		/* current segment */
	uint64_t	 seg_size;	/* its bytes written */
	struct segment	*old;		/* older live segments, by seq */
	size_t		 nold, oldcap;
	uint64_t	 old_bytes;

	unsigned char	*buf;		/* [off, cur_len) not yet written */
	size_t		 cap, off, len;	/* len: the open batch's header */
	size_t		 base_cap;	/* cap as opened (journal_reserve grows) */

	/* the current segment's name ids and time, as appended so far */
	struct name_slot *slots;
	uint32_t	 last_slot;
	uint32_t	 used;		/* slots bound */
	/* which, so that a reset touches only those (the replication
	 * stream resets every loop turn, and uses one or two) */
	uint16_t	*bound;

	int		 write_failed;
	char		 write_err[PATH_MAX + 160];
	uint64_t	 fault_written;	/* for journal_fault_write_limit */

	uint64_t	 written;	/* atomic: bytes written, all segments */
	uint64_t	 synced;	/* atomic: of those, covered by a sync */
	pthread_mutex_t	 sync_mtx;
	pthread_mutex_t	 err_mtx;
	uint64_t	 broken_seq;	/* a segment whose fsync failed, or 0 */
	char		 sync_err[PATH_MAX + 160];

	pthread_t	 thread;	/* everysec */
	pthread_mutex_t	 thr_mtx;
	pthread_cond_t	 thr_cond;
	int		 thr_running, thr_stop;
	unsigned	 interval_ms;
	int64_t		 synced_at;	/* atomic: Unix seconds */
};

/* ---- encoding ---- */

static uint32_t
sum32(const unsigned char *p, size_t len)
{
	return (uint32_t)XXH3_64bits(p, len);
}

#ifdef HAVE_XXH3_DISPATCH
/* libxxhash's, picking AVX2 or AVX-512 at run time (xxh_x86dispatch.h
 * would clash with the inlined xxhash.h): the same hash as XXH3_64bits */
unsigned long long	XXH3_64bits_dispatch(const void *, size_t);
#endif

/*
 * The checksum of a batch's body: a few KiB per loop turn, where the
 * vector width pays (2.7 against 7 instructions a key with SSE2 only).
 */
static uint32_t
sum32_long(const unsigned char *p, size_t len)
{
#ifdef HAVE_XXH3_DISPATCH
	if (len > 240)
		return (uint32_t)XXH3_64bits_dispatch(p, len);
#endif
	return sum32(p, len);
}

/* The checksum goes into the last 4 bytes of a record of size len. */
static void
seal(unsigned char *p, size_t len)
{
	put_le32(p + len - SUM_SIZE, sum32(p, len - SUM_SIZE));
}

static void
encode_header(unsigned char raw[JOURNAL_HEADER_SIZE], uint64_t seq,
    uint64_t created)
{
	memset(raw, 0, JOURNAL_HEADER_SIZE);
	memcpy(raw, JOURNAL_MAGIC, 8);
	put_le32(raw + 8, JOURNAL_VERSION);
	put_le32(raw + 12, JOURNAL_HEADER_SIZE);
	put_le64(raw + 16, seq);
	put_le64(raw + 24, created);
	seal(raw, JOURNAL_HEADER_SIZE);
}

/*
 * The fixed size of a record type in a segment of version v (a batch's
 * header for a batch), 0 if v has no such type.
 */
static size_t
rec_size(uint32_t v, unsigned type)
{
	switch (type) {
	case JOURNAL_REC_NAME:
		return JOURNAL_NAME_SIZE;
	case JOURNAL_REC_BATCH:
		return v >= JOURNAL_VERSION_V2 ? JOURNAL_BATCH_HEAD : 0;
	case JOURNAL_REC_FORGET:
	case JOURNAL_REC_COPY:
		return v >= JOURNAL_VERSION ? JOURNAL_BATCH_HEAD : 0;
	case JOURNAL_REC_RESET:
		return v >= JOURNAL_VERSION_V3 ? JOURNAL_RESET_SIZE : 0;
	case JOURNAL_REC_CREATE:
		return v >= JOURNAL_VERSION ? JOURNAL_CREATE_SIZE : 0;
	case JOURNAL_REC_DROP:
	case JOURNAL_REC_DEADLINE:
		return v >= JOURNAL_VERSION ? JOURNAL_DROP_SIZE : 0;
	case JOURNAL_REC_OFFSET:
		return v >= JOURNAL_VERSION ? JOURNAL_OFFSET_SIZE : 0;
	case JOURNAL_REC_TIME:
		return v == JOURNAL_VERSION_V1 ? JOURNAL_TIME_SIZE : 0;
	case JOURNAL_REC_KEY:
		return v == JOURNAL_VERSION_V1 ? JOURNAL_KEY_SIZE : 0;
	}
	return 0;
}

static int
seg_path(char *buf, size_t len, const char *dir, uint64_t seq)
{
	int n;

	n = snprintf(buf, len, "%s/" JOURNAL_PREFIX "%016" PRIx64, dir, seq);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The sequence in a segment's file name, or 0 if the name is not one. */
static uint64_t
seg_name_seq(const char *name)
{
	const size_t	 plen = sizeof(JOURNAL_PREFIX) - 1;
	uint64_t	 seq = 0;
	const char	*p;

	if (strncmp(name, JOURNAL_PREFIX, plen) != 0 ||
	    strlen(name) != plen + 16)
		return 0;
	for (p = name + plen; *p != '\0'; p++) {
		if (*p >= '0' && *p <= '9')
			seq = seq << 4 | (uint64_t)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			seq = seq << 4 | (uint64_t)(*p - 'a' + 10);
		else
			return 0;
	}
	return seq;
}

static int
cmp_segment(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The segments in dir, sorted, with their sizes. Names that begin with
 * "journal." but are not a segment's (an operator's "journal.1.bad") are
 * left alone; so is sequence 0, which is never written.
 */
static int
list_segments(const char *dir, struct segment **out, size_t *nout, char *err,
    size_t errlen)
{
	struct segment	*v = NULL, *nv;
	struct dirent	*de;
	struct stat	 sb;
	size_t		 n = 0, cap = 0;
	uint64_t	 seq;
	DIR		*d;

	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "open directory %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if ((seq = seg_name_seq(de->d_name)) == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW)
		    == -1) {
			snprintf(err, errlen, "stat %s/%s: %s", dir,
			    de->d_name, strerror(errno));
			goto fail;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			v = nv;
		}
		v[n].seq = seq;
		v[n].size = (uint64_t)sb.st_size;
		n++;
	}
	if (errno != 0) {
		snprintf(err, errlen, "read directory %s: %s", dir,
		    strerror(errno));
		goto fail;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_segment);
	*out = v;
	*nout = n;
	return 0;
 fail:
	closedir(d);
	free(v);
	return -1;
}

/* ---- replay ---- */

/* A segment being read. */
struct reader {
	int		 fd;
	const char	*path;
	uint64_t	 seq;
	uint64_t	 size;		/* from fstat: never read past it */
	int		 last;
	uint32_t	 version;
	struct name_slot *names;	/* JOURNAL_NAME_SLOTS */
	int		 have_time;	/* version 1's 'T' */
	uint64_t	 time;
	uint64_t	 base;		/* file offset of buf[0] */
	size_t		 have, pos;	/* bytes in buf, the next record */
	unsigned char	 buf[READ_CHUNK];
	/* journal_replay_mem: the bytes, instead of fd, and the ids bound
	 * (its reader is kept: only those are cleared after each turn) */
	const unsigned char *mem;
	uint16_t	*bound;
	uint32_t	 nbound;
	char		*err;
	size_t		 errlen;
};

static int
damage(struct reader *r, uint64_t off, const char *what)
{
	if (off == 0)
		snprintf(r->err, r->errlen, "%s: %s; the file is left as it "
		    "is. To start without its keys, move it out of the data "
		    "directory", r->path, what);
	else
		snprintf(r->err, r->errlen, "%s: %s at byte offset %" PRIu64
		    "; the file is left as it is. To start without the keys "
		    "from there on: truncate -s %" PRIu64 " %s; or without "
		    "any of its keys: move it out of the data directory",
		    r->path, what, off, off, r->path);
	return -1;
}

static void
torn(struct reader *r, struct journal_replay_info *info, uint64_t off)
{
	info->torn = 1;
	snprintf(info->torn_path, sizeof(info->torn_path), "%s", r->path);
	info->torn_offset = off;
	info->torn_bytes = r->size - off;
}

/* Whether [off, size) of the file is all zero bytes. */
static int
zero_to_end(struct reader *r, uint64_t off)
{
	size_t	 n;
	ssize_t	 got;

	while (off < r->size) {
		n = sizeof(r->buf);
		if (n > r->size - off)
			n = (size_t)(r->size - off);
		if ((got = fileio_read_full(r->fd, r->buf, n, off)) != (ssize_t)n)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (r->buf[i] != 0)
				return 0;
		off += n;
	}
	return 1;
}

static int
read_header(struct reader *r, struct journal_replay_info *info)
{
	unsigned char	 raw[JOURNAL_HEADER_SIZE];
	uint32_t	 version;
	uint64_t	 seq;
	size_t		 have;
	char		 what[160];

	have = r->size < JOURNAL_HEADER_SIZE ? (size_t)r->size :
	    JOURNAL_HEADER_SIZE;
	errno = 0;
	if (fileio_read_full(r->fd, raw, have, 0) != (ssize_t)have) {
		snprintf(r->err, r->errlen, "read %s: %s", r->path,
		    errno ? strerror(errno) : "file shrank");
		return -1;
	}
	if (memcmp(raw, JOURNAL_MAGIC, have < 8 ? have : 8) != 0)
		return damage(r, 0, "not a seend journal segment (bad magic)");
	if (have < JOURNAL_HEADER_SIZE) {
		/* the process died as it created the segment */
		if (r->last) {
			torn(r, info, 0);
			return 1;
		}
		return damage(r, 0, "shorter than a segment header, and not "
		    "the last segment");
	}
	version = get_le32(raw + 8);
	if (version < JOURNAL_VERSION_V1 || version > JOURNAL_VERSION) {
		snprintf(what, sizeof(what), "unsupported journal version %"
		    PRIu32 " (this seend reads versions %d to %d)", version,
		    JOURNAL_VERSION_V1, JOURNAL_VERSION);
		return damage(r, 0, what);
	}
	r->version = version;
	if (get_le32(raw + 12) != JOURNAL_HEADER_SIZE ||
	    get_le32(raw + 32) != 0 ||
	    get_le32(raw + 36) != sum32(raw, JOURNAL_HEADER_SIZE - SUM_SIZE))
		return damage(r, 0, "the segment header fails its checks");
	seq = get_le64(raw + 16);
	if (r->seq == UINT64_MAX)
		r->seq = seq;
	else if (seq != r->seq) {
		snprintf(what, sizeof(what), "the header says sequence %"
		    PRIu64 " but the name says %" PRIu64, seq, r->seq);
		return damage(r, 0, what);
	}
	return 0;
}

/* 1 for the record types that are batches of keys. */
static int
is_batch(unsigned type)
{
	return type == JOURNAL_REC_BATCH || type == JOURNAL_REC_FORGET ||
	    type == JOURNAL_REC_COPY;
}

/* Hands one key to the callback. */
static int
give_key(struct reader *r, const struct name_slot *s, uint64_t hash,
    uint64_t time, uint64_t off, int op, journal_replay_cb cb, void *arg,
    struct journal_replay_info *info)
{
	struct journal_key	 k;
	char			 cberr[256];

	memset(&k, 0, sizeof(k));
	k.op = op;
	k.name = s->name;
	k.namelen = s->len;
	k.seed = s->seed;
	k.hash = hash;
	k.time = time;
	k.seq = r->seq;
	k.offset = off;
	info->keys++;
	if (cb != NULL && cb(arg, &k, cberr, sizeof(cberr)) == -1) {
		snprintf(r->err, r->errlen, "%s: key at byte offset %" PRIu64
		    ": %s", r->path, off, cberr);
		return -1;
	}
	return 0;
}

/* The name slot a key or batch record's id refers to, or NULL (damage). */
static const struct name_slot *
bound_name(struct reader *r, const unsigned char *p, uint64_t off)
{
	unsigned	 id = get_le16(p + 2);
	char		 what[200];

	if (id >= JOURNAL_NAME_SLOTS || r->names[id].len == 0) {
		snprintf(what, sizeof(what), "%s record with name id %u, "
		    "which no name record before it binds",
		    is_batch(p[0]) ? "batch" : "key", id);
		(void)damage(r, off, what);
		return NULL;
	}
	return &r->names[id];
}

static uint64_t
get_double_bits(const unsigned char *p)
{
	return get_le64(p);
}

static int
all_zero(const unsigned char *p, size_t n)
{
	while (n-- > 0)
		if (*p++ != 0)
			return 0;
	return 1;
}

/* A name of len bytes at p, zero padded to JOURNAL_NAME_MAX: 0, or -1. */
static int
padded_name(const unsigned char *p, unsigned len)
{
	if (len == 0 || len > JOURNAL_NAME_MAX)
		return -1;
	for (unsigned i = len; i < JOURNAL_NAME_MAX; i++)
		if (p[i] != 0)
			return -1;
	return 0;
}

/* A whole 'r' or 'x' record at off, its checksum verified. */
static int
take_filter(struct reader *r, const unsigned char *p, uint64_t off,
    journal_replay_cb cb, void *arg, struct journal_replay_info *info)
{
	struct journal_key	 k;
	char			 cberr[256];
	uint64_t		 bits;
	int			 create = p[0] == JOURNAL_REC_CREATE;

	memset(&k, 0, sizeof(k));
	k.op = JOURNAL_OP_NEW;
	k.seq = r->seq;
	k.offset = off;
	k.namelen = p[4];
	if (create) {
		k.create = 1;
		k.name = (const char *)p + 48;
		k.seed = get_le64(p + 8);
		k.shape.type = p[5];
		k.shape.normalize = p[6];
		k.shape.capacity = get_le64(p + 16);
		bits = get_double_bits(p + 24);
		memcpy(&k.shape.error_rate, &bits, sizeof(bits));
		k.shape.growth = get_le32(p + 32);
		k.shape.max_kicks = get_le32(p + 36);
		k.shape.image = p[7];
		k.time = get_le64(p + 40);
		if (p[2] || p[3] || p[7] > 1 || p[5] > 1 || p[6] > 1 ||
		    padded_name(p + 48, p[4]) == -1 ||
		    !all_zero(p + 112, 12) || k.shape.capacity == 0 ||
		    !(k.shape.error_rate > 0 && k.shape.error_rate < 1))
			return damage(r, off, "bad create record");
	} else {
		k.drop = p[0] == JOURNAL_REC_DROP;
		k.deadline = !k.drop;
		k.deadline_ms = (int64_t)get_le64(p + 16);
		k.name = (const char *)p + 32;
		k.seed = get_le64(p + 8);
		k.time = get_le64(p + 24);
		if (p[2] || p[3] || p[5] || p[6] || p[7] ||
		    padded_name(p + 32, p[4]) == -1 ||
		    (k.drop && get_le64(p + 16) != 0))
			return damage(r, off, "bad drop or deadline record");
	}
	info->filters++;
	if (cb != NULL && cb(arg, &k, cberr, sizeof(cberr)) == -1) {
		snprintf(r->err, r->errlen, "%s: %s at byte offset %" PRIu64
		    ": %s", r->path, create ? "create" : "drop", off, cberr);
		return -1;
	}
	return 0;
}

/* A whole reset record at off, its checksum verified. */
static int
take_reset(struct reader *r, const unsigned char *p, uint64_t off,
    journal_replay_cb cb, void *arg, struct journal_replay_info *info)
{
	struct journal_key	 k;
	char			 cberr[256];
	unsigned		 len = p[4];

	if (p[2] || p[3] || p[5] || p[6] || p[7] || len == 0 ||
	    len > JOURNAL_NAME_MAX)
		return damage(r, off, "bad reset record");
	for (unsigned i = len; i < JOURNAL_NAME_MAX; i++)
		if (p[32 + i] != 0)
			return damage(r, off, "bad reset record");
	memset(&k, 0, sizeof(k));
	k.op = JOURNAL_OP_NEW;
	k.name = (const char *)p + 32;
	k.namelen = len;
	k.seed = get_le64(p + 8);
	k.new_seed = get_le64(p + 16);
	k.time = get_le64(p + 24);
	k.seq = r->seq;
	k.offset = off;
	k.reset = 1;
	info->resets++;
	if (cb != NULL && cb(arg, &k, cberr, sizeof(cberr)) == -1) {
		snprintf(r->err, r->errlen, "%s: reset at byte offset %" PRIu64
		    ": %s", r->path, off, cberr);
		return -1;
	}
	return 0;
}

/* One whole record at file offset off, checksums verified. */
/* An 'o' record: a replica's replication id and offset (journal.h). */
static int
take_offset(struct reader *r, const unsigned char *p, uint64_t off,
    journal_replay_cb cb, void *arg)
{
	struct journal_key	 k;
	char			 cberr[256];

	if (p[2] || p[3] || get_le32(p + 4) || get_le32(p + 56))
		return damage(r, off, "bad offset record");
	for (size_t i = 0; i < JOURNAL_REPLID_LEN; i++)
		if (p[16 + i] > 0x7e)
			return damage(r, off, "bad offset record");
	memset(&k, 0, sizeof(k));
	k.repl = 1;
	k.repl_offset = get_le64(p + 8);
	memcpy(k.replid, p + 16, JOURNAL_REPLID_LEN);
	k.seq = r->seq;
	k.offset = off;
	if (cb != NULL && cb(arg, &k, cberr, sizeof(cberr)) == -1) {
		snprintf(r->err, r->errlen, "%s: record at byte offset %"
		    PRIu64 ": %s", r->path, off, cberr);
		return -1;
	}
	return 0;
}

static int
take_record(struct reader *r, const unsigned char *p, uint64_t off,
    journal_replay_cb cb, void *arg, struct journal_replay_info *info)
{
	const struct name_slot	*ns;
	struct name_slot	*s;
	unsigned		 id, len;
	uint64_t		 time;
	uint32_t		 count;
	int			 op;

	switch (p[0]) {
	case JOURNAL_REC_NAME:
		id = get_le16(p + 2);
		len = p[4];
		if (id >= JOURNAL_NAME_SLOTS || len == 0 ||
		    len > JOURNAL_NAME_MAX || p[5] || p[6] || p[7])
			return damage(r, off, "bad name record");
		for (unsigned i = len; i < JOURNAL_NAME_MAX; i++)
			if (p[16 + i] != 0)
				return damage(r, off, "bad name record");
		s = &r->names[id];
		if (s->len == 0 && r->bound != NULL)
			r->bound[r->nbound++] = (uint16_t)id;
		s->len = (uint8_t)len;
		s->seed = get_le64(p + 8);
		memcpy(s->name, p + 16, len);
		return 0;
	case JOURNAL_REC_RESET:
		return take_reset(r, p, off, cb, arg, info);
	case JOURNAL_REC_CREATE:
	case JOURNAL_REC_DROP:
	case JOURNAL_REC_DEADLINE:
		return take_filter(r, p, off, cb, arg, info);
	case JOURNAL_REC_OFFSET:
		return take_offset(r, p, off, cb, arg);
	case JOURNAL_REC_TIME:
		if (p[2] || p[3])
			return damage(r, off, "bad time record");
		r->time = get_le64(p + 4);
		r->have_time = 1;
		return 0;
	case JOURNAL_REC_BATCH:
	case JOURNAL_REC_FORGET:
	case JOURNAL_REC_COPY:
		if ((ns = bound_name(r, p, off)) == NULL)
			return -1;
		count = get_le32(p + 4);
		time = get_le64(p + 8);
		op = p[0] == JOURNAL_REC_FORGET ? JOURNAL_OP_FORGET :
		    p[0] == JOURNAL_REC_COPY ? JOURNAL_OP_COPY : JOURNAL_OP_NEW;
		for (size_t at = JOURNAL_BATCH_HEAD;
		    at < JOURNAL_BATCH_HEAD + (size_t)count * 8; at += 8)
			if (give_key(r, ns, get_le64(p + at), time, off + at,
			    op, cb, arg, info) == -1)
				return -1;
		return 0;
	}
	if ((ns = bound_name(r, p, off)) == NULL)
		return -1;
	if (!r->have_time)
		return damage(r, off, "key record before any time record");
	return give_key(r, ns, get_le64(p + 4), r->time, off, JOURNAL_OP_NEW,
	    cb, arg, info);
}

/*
 * Makes want bytes from the next record visible in buf (want <=
 * READ_CHUNK), or everything up to the end of the file.
 */
static int
fill(struct reader *r, size_t want)
{
	size_t	 n;
	ssize_t	 got;

	if (r->have - r->pos >= want || r->base + r->have >= r->size)
		return 0;
	memmove(r->buf, r->buf + r->pos, r->have - r->pos);
	r->base += r->pos;
	r->have -= r->pos;
	r->pos = 0;
	n = sizeof(r->buf) - r->have;
	if (n > r->size - (r->base + r->have))
		n = (size_t)(r->size - (r->base + r->have));
	if (r->mem != NULL) {
		memcpy(r->buf + r->have, r->mem + r->base + r->have, n);
		got = (ssize_t)n;
	} else
		got = fileio_read_full(r->fd, r->buf + r->have, n,
		    r->base + r->have);
	if (got != (ssize_t)n) {
		snprintf(r->err, r->errlen, "read %s: %s", r->path,
		    got == -1 ? strerror(errno) : "file shrank during replay");
		return -1;
	}
	r->have += n;
	return 0;
}

/*
 * A record of size bytes at off fails a checksum: a torn tail (returns 0:
 * replay ends there) if the bytes from a page boundary inside it to the
 * end of the last segment are zero - pages a power loss kept from being
 * written back - else damage (-1).
 */
static int
bad_sum(struct reader *r, struct journal_replay_info *info, uint64_t off,
    uint64_t size, const char *what)
{
	uint64_t page = (off + size - 1) / PAGE_GRAIN * PAGE_GRAIN;

	/* zero_to_end reuses buf: nothing of the view is needed after */
	if (r->last && page > off && zero_to_end(r, page)) {
		torn(r, info, off);
		return 0;
	}
	return damage(r, off, what);
}

/* An incomplete record at off, running to the end of the file: a torn
 * tail in the last segment (0: replay ends there), else damage (-1). */
static int
incomplete(struct reader *r, struct journal_replay_info *info, uint64_t off)
{
	if (r->last) {
		torn(r, info, off);
		return 0;
	}
	return damage(r, off, "incomplete record at the end of a segment "
	    "that is not the last");
}

static int
read_records(struct reader *r, journal_replay_cb cb, void *arg,
    struct journal_replay_info *info, uint64_t start)
{
	const unsigned char	*p;
	uint64_t		 off;
	size_t			 size, avail;
	uint32_t		 count;
	unsigned		 type;
	char			 what[120];

	r->base = start;
	r->have = r->pos = 0;
	for (;;) {
		/* the longest fixed-size record, unless at EOF */
		if (fill(r, JOURNAL_FIXED_MAX) == -1)
			return -1;
		if (r->pos == r->have)
			return 0;
		p = r->buf + r->pos;
		off = r->base + r->pos;
		avail = r->have - r->pos;
		type = p[0];
		size = rec_size(r->version, type);
		if (size == 0) {
			if (type == 0 && r->last && zero_to_end(r, off)) {
				torn(r, info, off);
				return 0;
			}
			snprintf(what, sizeof(what), "unknown record type "
			    "0x%02x in a version %" PRIu32 " segment", type,
			    r->version);
			return damage(r, off, what);
		}
		if (avail >= 2 && p[1] != size) {
			snprintf(what, sizeof(what), "record of type '%c' with "
			    "length %u (it is %zu bytes)", type, p[1], size);
			return damage(r, off, what);
		}
		if (avail < size)
			return incomplete(r, info, off);
		if (is_batch(type)) {
			if (get_le32(p + 20) != sum32(p, 20))
				return bad_sum(r, info, off, size, "batch "
				    "header fails its checksum");
			count = get_le32(p + 4);
			if (count == 0 || count > JOURNAL_BATCH_MAX) {
				snprintf(what, sizeof(what), "batch of %" PRIu32
				    " keys (1 to %d)", count,
				    JOURNAL_BATCH_MAX);
				return damage(r, off, what);
			}
			size += (size_t)count * 8;
			if (fill(r, size) == -1)
				return -1;
			p = r->buf + r->pos;
			if (r->have - r->pos < size)
				return incomplete(r, info, off);
			if (get_le32(p + 16) != sum32_long(p + JOURNAL_BATCH_HEAD,
			    size - JOURNAL_BATCH_HEAD))
				return bad_sum(r, info, off, size, "batch "
				    "fails its checksum");
		} else if (get_le32(p + size - SUM_SIZE) !=
		    sum32(p, size - SUM_SIZE))
			return bad_sum(r, info, off, size, "record fails its "
			    "checksum");
		if (take_record(r, p, off, cb, arg, info) == -1)
			return -1;
		r->pos += size;
	}
}

int
journal_replay_fd(int fd, const char *path, uint64_t seq, int last,
    journal_replay_cb cb, void *arg, struct journal_replay_info *info,
    char *err, size_t errlen)
{
	struct reader	*r;
	struct stat	 sb;
	int		 rc;

	if (fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file; move it out of "
		    "the data directory", path);
		return -1;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->names = calloc(JOURNAL_NAME_SLOTS, sizeof(*r->names)))
	    == NULL) {
		free(r);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	r->fd = fd;
	r->path = path;
	r->seq = seq;
	r->size = (uint64_t)sb.st_size;
	r->last = last;
	r->err = err;
	r->errlen = errlen;
	rc = read_header(r, info);
	if (rc == 0)
		rc = read_records(r, cb, arg, info, JOURNAL_HEADER_SIZE);
	if (rc != -1) {
		info->segments++;
		info->bytes += r->size - (info->torn &&
		    strcmp(info->torn_path, path) == 0 ? info->torn_bytes : 0);
		if (r->seq != UINT64_MAX && r->seq > info->last_seq)
			info->last_seq = r->seq;
		rc = 0;
	}
	free(r->names);
	free(r);
	return rc;
}

int
journal_replay_mem(const unsigned char *p, size_t len, const char *what,
    journal_replay_cb cb, void *arg, char *err, size_t errlen)
{
	/* one reader for the process (the loop's thread): a replica replays
	 * a turn of the stream at a time, and allocating and zeroing a name
	 * table each time cost more than the records */
	static struct reader		*r;
	struct journal_replay_info	 info;
	int				 rc;

	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL ||
		    (r->names = calloc(JOURNAL_NAME_SLOTS, sizeof(*r->names)))
		    == NULL ||
		    (r->bound = calloc(JOURNAL_NAME_SLOTS, sizeof(*r->bound)))
		    == NULL) {
			if (r != NULL)
				free(r->names);
			free(r);
			r = NULL;
			snprintf(err, errlen, "%s: out of memory", what);
			return -1;
		}
	}
	memset(&info, 0, sizeof(info));
	r->fd = -1;
	r->mem = p;
	r->path = what;
	r->seq = 0;
	r->size = len;
	r->last = 0;		/* an incomplete record is damage */
	r->version = JOURNAL_VERSION;
	r->have_time = 0;
	r->time = 0;
	r->err = err;
	r->errlen = errlen;
	rc = read_records(r, cb, arg, &info, 0);
	for (uint32_t i = 0; i < r->nbound; i++)
		r->names[r->bound[i]].len = 0;
	r->nbound = 0;
	return rc;
}

int
journal_replay(const char *dir, journal_replay_cb cb, void *arg,
    struct journal_replay_info *info, char *err, size_t errlen)
{
	struct segment	*segs;
	size_t		 nsegs;
	char		 path[PATH_MAX];
	int		 fd, rc = 0;

	memset(info, 0, sizeof(*info));
	if (list_segments(dir, &segs, &nsegs, err, errlen) == -1)
		return -1;
	for (size_t i = 0; i < nsegs && rc == 0; i++) {
		if (seg_path(path, sizeof(path), dir, segs[i].seq) == -1) {
			snprintf(err, errlen, "%s: path too long", dir);
			rc = -1;
			break;
		}
		/* read only: replay must never change what it judges */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
		if (fd == -1) {
			snprintf(err, errlen, "open %s: %s", path,
			    strerror(errno));
			rc = -1;
			break;
		}
		rc = journal_replay_fd(fd, path, segs[i].seq, i + 1 == nsegs,
		    cb, arg, info, err, errlen);
		close(fd);
	}
	free(segs);
	return rc;
}

/* ---- writing ---- */

/*
 * One write(2), through signals, cut short by the fault hook as a full
 * disk would cut it. Returns the bytes written (> 0) or -1.
 */
static ssize_t
write_some(struct journal *j, int fd, const void *p, size_t len)
{
	size_t	 want = len;
	ssize_t	 n;

	if (journal_fault_write_limit > 0) {
		if (j->fault_written >= journal_fault_write_limit) {
			errno = ENOSPC;
			return -1;
		}
		if (want > journal_fault_write_limit - j->fault_written)
			want = (size_t)(journal_fault_write_limit -
			    j->fault_written);
	}
	do
		n = write(fd, p, want);
	while (n == -1 && errno == EINTR);
	if (n == 0) {
		/* no progress and no error: do not spin */
		errno = EIO;
		return -1;
	}
	if (n > 0)
		j->fault_written += (uint64_t)n;
	return n;
}

/*
 * Creates segment seq with its header, durable (data, then the directory
 * entry) before it is used. Returns the descriptor, or -1 with a message;
 * a failed segment is removed.
 */
static int
seg_create(struct journal *j, uint64_t seq, char *err, size_t errlen)
{
	unsigned char	 raw[JOURNAL_HEADER_SIZE];
	char		 path[PATH_MAX];
	const char	*what;
	size_t		 done = 0;
	ssize_t		 n;
	int		 fd, saved;

	if (seg_path(path, sizeof(path), j->dir, seq) == -1) {
		snprintf(err, errlen, "%s: path too long", j->dir);
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
	    0640);
	if (fd == -1) {
		snprintf(err, errlen, "create %s: %s", path, strerror(errno));
		return -1;
	}
	encode_header(raw, seq, (uint64_t)time(NULL));
	what = "write";
	while (done < sizeof(raw)) {
		if ((n = write_some(j, fd, raw + done, sizeof(raw) - done))
		    == -1)
			goto fail;
		done += (size_t)n;
	}
	what = "fsync";
	if (fdatasync(fd) == -1)
		goto fail;
	what = "fsync the directory of";
	if (fileio_sync_dir(j->dir) == -1)
		goto fail;
	return fd;
 fail:
	saved = errno;
	close(fd);
	unlink(path);
	snprintf(err, errlen, "%s %s: %s", what, path, strerror(saved));
	return -1;
}

static void
reset_writer(struct journal *j)
{
	for (uint32_t i = 0; i < j->used; i++)
		j->slots[j->bound[i]].len = 0;
	j->last_slot = 0;
	j->used = 0;
}

/* Removes the torn tail replay found: truncated, or the file removed when
 * not even its header is whole. */
static int
drop_torn(const char *dir, const struct journal_replay_info *info, char *err,
    size_t errlen)
{
	struct stat	 sb;
	int		 fd, saved;

	fd = open(info->torn_path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 || fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "open %s: %s", info->torn_path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if ((uint64_t)sb.st_size != info->torn_offset + info->torn_bytes) {
		close(fd);
		snprintf(err, errlen, "%s changed since it was replayed",
		    info->torn_path);
		return -1;
	}
	if (info->torn_offset < JOURNAL_HEADER_SIZE) {
		close(fd);
		if (unlink(info->torn_path) == -1)
			goto fail_errno;
	} else {
		if (ftruncate(fd, (off_t)info->torn_offset) == -1 ||
		    fsync(fd) == -1) {
			saved = errno;
			close(fd);
			errno = saved;
			goto fail_errno;
		}
		close(fd);
	}
	if (fileio_sync_dir(dir) == -1)
		goto fail_errno;
	return 0;
 fail_errno:
	snprintf(err, errlen, "drop the torn tail of %s: %s", info->torn_path,
	    strerror(errno));
	return -1;
}

struct journal *
journal_open(const char *dir, const struct journal_replay_info *info,
    size_t bufmax, char *err, size_t errlen)
{
	struct journal_replay_info	 own;
	struct journal			*j;
	uint64_t			 next;

	if (info == NULL) {
		if (journal_replay(dir, NULL, NULL, &own, err, errlen) == -1)
			return NULL;
		info = &own;
	}
	if (bufmax == 0)
		bufmax = JOURNAL_BUF_DEFAULT;
	if (bufmax < 4 * JOURNAL_APPEND_MAX)
		bufmax = 4 * JOURNAL_APPEND_MAX;
	if (info->torn && drop_torn(dir, info, err, errlen) == -1)
		return NULL;
	if ((j = calloc(1, sizeof(*j))) != NULL)
		j->fd = -1;
	if (j == NULL || (j->dir = strdup(dir)) == NULL ||
	    (j->buf = malloc(bufmax)) == NULL ||
	    (j->bound = calloc(JOURNAL_NAME_SLOTS, sizeof(*j->bound))) == NULL ||
	    (j->slots = calloc(JOURNAL_NAME_SLOTS, sizeof(*j->slots)))
	    == NULL) {
		snprintf(err, errlen, "journal: out of memory");
		goto fail;
	}
	j->cap = j->base_cap = bufmax;
	pthread_mutex_init(&j->sync_mtx, NULL);
	pthread_mutex_init(&j->err_mtx, NULL);
	pthread_mutex_init(&j->thr_mtx, NULL);
	pthread_cond_init(&j->thr_cond, NULL);
	if (list_segments(dir, &j->old, &j->nold, err, errlen) == -1)
		goto fail;
	j->oldcap = j->nold;
	next = info->last_seq + 1;
	for (size_t i = 0; i < j->nold; i++) {
		j->old_bytes += j->old[i].size;
		if (j->old[i].seq >= next)
			next = j->old[i].seq + 1;
	}
	if (next == 0) {
		snprintf(err, errlen, "%s: journal sequence numbers exhausted",
		    dir);
		goto fail;
	}
	if ((j->fd = seg_create(j, next, err, errlen)) == -1)
		goto fail;
	j->seq = next;
	j->seg_size = JOURNAL_HEADER_SIZE;
	j->written = j->synced = JOURNAL_HEADER_SIZE;
	j->synced_at = (int64_t)time(NULL);
	return j;
 fail:
	journal_close(j);
	return NULL;
}

void
journal_close(struct journal *j)
{
	if (j == NULL)
		return;
	journal_everysec_stop(j);
	if (j->fd != -1)
		close(j->fd);
	if (j->slots != NULL) {
		pthread_mutex_destroy(&j->sync_mtx);
		pthread_mutex_destroy(&j->err_mtx);
		pthread_mutex_destroy(&j->thr_mtx);
		pthread_cond_destroy(&j->thr_cond);
	}
	free(j->old);
	free(j->slots);
	free(j->bound);
	free(j->buf);
	free(j->dir);
	free(j);
}

/* The end of the bytes appended: the open batch's end if one is open. */
static inline size_t
cur_len(const struct journal *j)
{
	return j->hot.pos != NULL ? (size_t)(j->hot.pos - j->buf) : j->len;
}

int
journal_full(const struct journal *j)
{
	return j->cap - (cur_len(j) - j->off) < JOURNAL_APPEND_MAX;
}

size_t
journal_pending(const struct journal *j)
{
	return cur_len(j) - j->off;
}

size_t
journal_room(const struct journal *j)
{
	return j->cap - (cur_len(j) - j->off);
}

/* Writes the open batch's count and checksums: it becomes a whole record. */
static void
close_batch(struct journal *j)
{
	unsigned char	*h, *body;
	size_t		 n;

	if (j->hot.pos == NULL)
		return;
	h = j->buf + j->len;
	body = h + JOURNAL_BATCH_HEAD;
	n = (size_t)(j->hot.pos - body);
	put_le32(h + 4, (uint32_t)(n / 8));
	put_le32(h + 16, sum32_long(body, n));
	put_le32(h + 20, sum32(h, 20));
	j->len += JOURNAL_BATCH_HEAD + n;
	j->hot.pos = j->hot.end = NULL;
	j->hot.name = NULL;
}

static inline int
slot_is(const struct name_slot *s, const char *name, size_t namelen,
    uint64_t seed)
{
	return s->len == namelen && s->seed == seed &&
	    memcmp(s->name, name, namelen) == 0;
}

/*
 * The name id of (name, seed) in the current segment: its slot if it is
 * bound (*bind = 0), else the slot to bind it in (*bind = 1). Linear
 * probing over a few slots from the name's hash, so that a few thousand
 * filters keep their ids for the whole segment; once the table is 3/4
 * full, or the probes find no free slot, the home slot is bound again to
 * this name (the one it held gets a new name record when next used).
 * Nothing is changed here: the caller binds once the records fit.
 */
static __attribute__((noinline)) uint32_t
find_slot(const struct journal *j, const char *name, size_t namelen,
    uint64_t seed, int *bind)
{
	uint32_t	 home, slot;

	home = (uint32_t)XXH3_64bits(name, namelen) & (JOURNAL_NAME_SLOTS - 1);
	*bind = 1;
	for (uint32_t i = 0; i < NAME_PROBES; i++) {
		slot = (home + i) & (JOURNAL_NAME_SLOTS - 1);
		if (j->slots[slot].len == 0)
			return j->used < JOURNAL_NAME_SLOTS / 4 * 3 ? slot :
			    home;
		if (slot_is(&j->slots[slot], name, namelen, seed)) {
			*bind = 0;
			return slot;
		}
	}
	return home;
}

/* The fast path (journal_append_fast) continues only 'B' batches: an
 * 'f' or 'a' batch leaves it no name to match. */
static inline void
store_hash(struct journal *j, const char *name, uint64_t hash, unsigned type)
{
	put_le64(j->hot.pos, hash);
	j->hot.pos += 8;
	j->hot.name = type == JOURNAL_REC_BATCH ? name : NULL;
}

/* Room for need more bytes at the end of the buffer: after a short write,
 * what is left moves to the front. 0, or -1 (ENOBUFS) if it cannot fit. */
static int
buffer_room(struct journal *j, size_t need)
{
	if (j->cap - j->len >= need)
		return 0;
	if (j->cap - (j->len - j->off) < need) {
		errno = ENOBUFS;
		return -1;
	}
	memmove(j->buf, j->buf + j->off, j->len - j->off);
	j->len -= j->off;
	j->off = 0;
	return 0;
}

/*
 * Everything journal_append's fast path does not take: a key of another
 * filter or millisecond than the open batch's, a full batch, no batch
 * open. The name cache costs a memcmp for the same filter as last time
 * (a name pointer that changed), a hash of the name for another.
 */
static int
append_kind(struct journal *j, unsigned type, const char *name,
    size_t namelen, uint64_t seed, uint64_t hash, uint64_t time)
{
	struct name_slot	*s;
	unsigned char		*p, *body;
	uint32_t		 slot;
	size_t			 need = JOURNAL_BATCH_HEAD + 8, keys;
	int			 need_name = 0;

	if (namelen == 0 || namelen > JOURNAL_NAME_MAX) {
		errno = EINVAL;
		return -1;
	}
	slot = j->last_slot;
	if (!slot_is(&j->slots[slot], name, namelen, seed) &&
	    (slot = find_slot(j, name, namelen, seed, &need_name),
	    need_name))
		need += JOURNAL_NAME_SIZE;
	/* the open batch's filter, passed by another pointer */
	if (!need_name && slot == j->last_slot && j->hot.pos != j->hot.end &&
	    j->hot.time == time && j->hot_type == type) {
		store_hash(j, name, hash, type);
		return 0;
	}
	close_batch(j);
	if (buffer_room(j, need) == -1)
		return -1;
	p = j->buf + j->len;
	s = &j->slots[slot];
	if (need_name) {
		memset(p, 0, JOURNAL_NAME_SIZE);
		p[0] = JOURNAL_REC_NAME;
		p[1] = JOURNAL_NAME_SIZE;
		put_le16(p + 2, (uint16_t)slot);
		p[4] = (unsigned char)namelen;
		put_le64(p + 8, seed);
		memcpy(p + 16, name, namelen);
		seal(p, JOURNAL_NAME_SIZE);
		p += JOURNAL_NAME_SIZE;
		j->len += JOURNAL_NAME_SIZE;
		if (s->len == 0)
			j->bound[j->used++] = (uint16_t)slot;
		s->len = (uint8_t)namelen;
		s->seed = seed;
		memcpy(s->name, name, namelen);
	}
	j->last_slot = slot;
	/* count and checksums: close_batch */
	memset(p, 0, JOURNAL_BATCH_HEAD);
	p[0] = (unsigned char)type;
	p[1] = JOURNAL_BATCH_HEAD;
	put_le16(p + 2, (uint16_t)slot);
	put_le64(p + 8, time);
	body = p + JOURNAL_BATCH_HEAD;
	keys = (j->cap - (size_t)(body - j->buf)) / 8;
	if (keys > JOURNAL_BATCH_MAX)
		keys = JOURNAL_BATCH_MAX;
	j->hot.pos = body;
	j->hot.end = body + keys * 8;
	j->hot.seed = seed;
	j->hot.time = time;
	j->hot_type = type;
	store_hash(j, name, hash, type);
	return 0;
}

int
journal_append_slow(struct journal *j, const char *name, size_t namelen,
    uint64_t seed, uint64_t hash, uint64_t time)
{
	return append_kind(j, JOURNAL_REC_BATCH, name, namelen, seed, hash,
	    time);
}

int
journal_append_op(struct journal *j, int op, const char *name,
    size_t namelen, uint64_t seed, uint64_t hash, uint64_t time)
{
	return append_kind(j, op == JOURNAL_OP_FORGET ? JOURNAL_REC_FORGET :
	    JOURNAL_REC_COPY, name, namelen, seed, hash, time);
}

uint64_t
journal_position(const struct journal *j, uint64_t *seq)
{
	*seq = j->seq;
	return j->seg_size + (cur_len(j) - j->off);
}

int
journal_append_reset(struct journal *j, const char *name, size_t namelen,
    uint64_t old_seed, uint64_t new_seed, uint64_t time)
{
	unsigned char *p;

	if (namelen == 0 || namelen > JOURNAL_NAME_MAX) {
		errno = EINVAL;
		return -1;
	}
	close_batch(j);
	if (buffer_room(j, JOURNAL_RESET_SIZE) == -1)
		return -1;
	p = j->buf + j->len;
	memset(p, 0, JOURNAL_RESET_SIZE);
	p[0] = JOURNAL_REC_RESET;
	p[1] = JOURNAL_RESET_SIZE;
	p[4] = (unsigned char)namelen;
	put_le64(p + 8, old_seed);
	put_le64(p + 16, new_seed);
	put_le64(p + 24, time);
	memcpy(p + 32, name, namelen);
	seal(p, JOURNAL_RESET_SIZE);
	j->len += JOURNAL_RESET_SIZE;
	return 0;
}

int
journal_append_create(struct journal *j, const char *name, size_t namelen,
    uint64_t seed, const struct journal_filter *sh, uint64_t time)
{
	unsigned char	*p;
	uint64_t	 bits;

	if (namelen == 0 || namelen > JOURNAL_NAME_MAX) {
		errno = EINVAL;
		return -1;
	}
	close_batch(j);
	if (buffer_room(j, JOURNAL_CREATE_SIZE) == -1)
		return -1;
	p = j->buf + j->len;
	memset(p, 0, JOURNAL_CREATE_SIZE);
	p[0] = JOURNAL_REC_CREATE;
	p[1] = JOURNAL_CREATE_SIZE;
	p[4] = (unsigned char)namelen;
	p[5] = (unsigned char)(sh->type != 0);
	p[6] = (unsigned char)(sh->normalize != 0);
	p[7] = (unsigned char)(sh->image != 0);
	put_le64(p + 8, seed);
	put_le64(p + 16, sh->capacity);
	memcpy(&bits, &sh->error_rate, sizeof(bits));
	put_le64(p + 24, bits);
	put_le32(p + 32, sh->growth);
	put_le32(p + 36, sh->max_kicks);
	put_le64(p + 40, time);
	memcpy(p + 48, name, namelen);
	seal(p, JOURNAL_CREATE_SIZE);
	j->len += JOURNAL_CREATE_SIZE;
	return 0;
}

int
journal_append_drop(struct journal *j, const char *name, size_t namelen,
    uint64_t seed, uint64_t time)
{
	unsigned char *p;

	if (namelen == 0 || namelen > JOURNAL_NAME_MAX) {
		errno = EINVAL;
		return -1;
	}
	close_batch(j);
	if (buffer_room(j, JOURNAL_DROP_SIZE) == -1)
		return -1;
	p = j->buf + j->len;
	memset(p, 0, JOURNAL_DROP_SIZE);
	p[0] = JOURNAL_REC_DROP;
	p[1] = JOURNAL_DROP_SIZE;
	p[4] = (unsigned char)namelen;
	put_le64(p + 8, seed);
	put_le64(p + 24, time);
	memcpy(p + 32, name, namelen);
	seal(p, JOURNAL_DROP_SIZE);
	j->len += JOURNAL_DROP_SIZE;
	return 0;
}

/*
 * The open batch's pointers point into buf: they move with it. The
 * batch's end is recomputed from the new size, so a grown buffer also
 * lets the open batch take more keys (never past JOURNAL_BATCH_MAX).
 */
int
journal_append_deadline(struct journal *j, const char *name, size_t namelen,
    uint64_t seed, int64_t at_ms, uint64_t time)
{
	unsigned char *p;

	if (journal_append_drop(j, name, namelen, seed, time) == -1)
		return -1;
	/* the same layout, with the deadline in bytes 16-23 */
	p = j->buf + j->len - JOURNAL_DROP_SIZE;
	p[0] = JOURNAL_REC_DEADLINE;
	put_le64(p + 16, (uint64_t)at_ms);
	seal(p, JOURNAL_DROP_SIZE);
	return 0;
}

int
journal_append_offset(struct journal *j, const char *replid, uint64_t offset)
{
	unsigned char *p;

	close_batch(j);
	if (buffer_room(j, JOURNAL_OFFSET_SIZE) == -1)
		return -1;
	p = j->buf + j->len;
	memset(p, 0, JOURNAL_OFFSET_SIZE);
	p[0] = JOURNAL_REC_OFFSET;
	p[1] = JOURNAL_OFFSET_SIZE;
	put_le64(p + 8, offset);
	memcpy(p + 16, replid, JOURNAL_REPLID_LEN);
	seal(p, JOURNAL_OFFSET_SIZE);
	j->len += JOURNAL_OFFSET_SIZE;
	return 0;
}

struct journal *
journal_open_mem(size_t bufmax, char *err, size_t errlen)
{
	struct journal *j;

	if (bufmax < 4 * JOURNAL_APPEND_MAX)
		bufmax = 4 * JOURNAL_APPEND_MAX;
	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->buf = malloc(bufmax)) == NULL ||
	    (j->bound = calloc(JOURNAL_NAME_SLOTS, sizeof(*j->bound))) == NULL ||
	    (j->slots = calloc(JOURNAL_NAME_SLOTS, sizeof(*j->slots)))
	    == NULL) {
		if (j != NULL) {
			free(j->buf);
			free(j->bound);
		}
		free(j);
		snprintf(err, errlen, "replication stream: out of memory");
		return NULL;
	}
	j->fd = -1;
	j->cap = j->base_cap = bufmax;
	pthread_mutex_init(&j->sync_mtx, NULL);
	pthread_mutex_init(&j->err_mtx, NULL);
	pthread_mutex_init(&j->thr_mtx, NULL);
	pthread_cond_init(&j->thr_cond, NULL);
	return j;
}

size_t
journal_take(struct journal *j, const unsigned char **p)
{
	close_batch(j);
	*p = j->buf + j->off;
	return j->len - j->off;
}

void
journal_clear(struct journal *j)
{
	close_batch(j);
	j->off = j->len = 0;
	reset_writer(j);
	if (j->cap > j->base_cap) {
		unsigned char *nb = realloc(j->buf, j->base_cap);

		if (nb != NULL) {
			j->buf = nb;
			j->cap = j->base_cap;
		}
	}
}

int
journal_reserve(struct journal *j, size_t room)
{
	unsigned char	*nb;
	size_t		 used = cur_len(j) - j->off, cap, pos = 0, keys;
	int		 open = j->hot.pos != NULL;

	if (j->cap - used >= room)
		return 0;
	if (open)
		pos = (size_t)(j->hot.pos - j->buf);
	/* whole records first, so the pending bytes start at 0 */
	if (j->off > 0) {
		memmove(j->buf, j->buf + j->off, cur_len(j) - j->off);
		j->len -= j->off;
		pos -= open ? j->off : 0;
		j->off = 0;
	}
	cap = j->cap;
	while (cap - used < room)
		cap *= 2;
	if ((nb = realloc(j->buf, cap)) == NULL) {
		if (open)
			j->hot.pos = j->buf + pos;
		return -1;
	}
	j->buf = nb;
	j->cap = cap;
	if (open) {
		unsigned char *body = nb + j->len + JOURNAL_BATCH_HEAD;

		j->hot.pos = nb + pos;
		keys = (cap - (size_t)(body - nb)) / 8;
		if (keys > JOURNAL_BATCH_MAX)
			keys = JOURNAL_BATCH_MAX;
		j->hot.end = body + keys * 8;
	}
	return 0;
}

int
journal_write(struct journal *j, char *err, size_t errlen)
{
	char	 path[PATH_MAX];
	ssize_t	 n;

	close_batch(j);
	while (j->off < j->len) {
		n = write_some(j, j->fd, j->buf + j->off, j->len - j->off);
		if (n == -1) {
			(void)seg_path(path, sizeof(path), j->dir, j->seq);
			snprintf(j->write_err, sizeof(j->write_err), "write "
			    "%s: %s (%zu bytes kept in memory)", path,
			    strerror(errno), j->len - j->off);
			j->write_failed = 1;
			snprintf(err, errlen, "%s", j->write_err);
			return -1;
		}
		j->off += (size_t)n;
		j->seg_size += (uint64_t)n;
		__atomic_store_n(&j->written, j->written + (uint64_t)n,
		    __ATOMIC_RELEASE);
	}
	j->off = j->len = 0;
	j->write_failed = 0;
	/* a buffer journal_reserve grew goes back once it is empty */
	if (j->cap > j->base_cap) {
		unsigned char *nb = realloc(j->buf, j->base_cap);

		if (nb != NULL) {
			j->buf = nb;
			j->cap = j->base_cap;
		}
	}
	return 0;
}

/* Records a failed fsync of segment seq; err_mtx must not be held. */
static void
mark_broken(struct journal *j, uint64_t seq, int errnum)
{
	char path[PATH_MAX];

	(void)seg_path(path, sizeof(path), j->dir, seq);
	pthread_mutex_lock(&j->err_mtx);
	if (seq > j->broken_seq)
		j->broken_seq = seq;
	snprintf(j->sync_err, sizeof(j->sync_err), "fsync %s: %s", path,
	    strerror(errnum));
	pthread_mutex_unlock(&j->err_mtx);
}

int
journal_sync(struct journal *j, char *err, size_t errlen)
{
	uint64_t	 target;
	int		 rc = 0, saved;

	pthread_mutex_lock(&j->sync_mtx);
	target = __atomic_load_n(&j->written, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&j->err_mtx);
	if (j->broken_seq == j->seq) {
		/* a later fsync may "succeed" over pages the kernel dropped */
		snprintf(err, errlen, "%s", j->sync_err);
		rc = -1;
	}
	pthread_mutex_unlock(&j->err_mtx);
	if (rc == 0 && target != __atomic_load_n(&j->synced,
	    __ATOMIC_ACQUIRE)) {
		if (fdatasync(j->fd) == 0) {
			__atomic_store_n(&j->synced, target, __ATOMIC_RELEASE);
			__atomic_store_n(&j->synced_at, (int64_t)time(NULL),
			    __ATOMIC_RELAXED);
		} else {
			saved = errno;
			mark_broken(j, j->seq, saved);
			pthread_mutex_lock(&j->err_mtx);
			snprintf(err, errlen, "%s", j->sync_err);
			pthread_mutex_unlock(&j->err_mtx);
			rc = -1;
		}
	}
	pthread_mutex_unlock(&j->sync_mtx);
	return rc;
}

static int
push_old(struct journal *j, uint64_t seq, uint64_t size)
{
	struct segment	*v;
	size_t		 cap;

	if (j->nold == j->oldcap) {
		cap = j->oldcap ? j->oldcap * 2 : 16;
		if ((v = realloc(j->old, cap * sizeof(*v))) == NULL)
			return -1;
		j->old = v;
		j->oldcap = cap;
	}
	j->old[j->nold].seq = seq;
	j->old[j->nold].size = size;
	j->nold++;
	j->old_bytes += size;
	return 0;
}

int
journal_rotate(struct journal *j, uint64_t *closed, char *err, size_t errlen)
{
	uint64_t	 next = j->seq + 1, prev = j->seq;
	int		 fd, oldfd, sync_rc, saved = 0;

	if (journal_write(j, err, errlen) == -1)
		return -1;
	if (next == 0) {
		snprintf(err, errlen, "journal sequence numbers exhausted");
		return -1;
	}
	/* room in the list first: past the switch nothing may fail */
	if (push_old(j, prev, 0) == -1) {
		snprintf(err, errlen, "journal: out of memory");
		return -1;
	}
	j->nold--;
	if ((fd = seg_create(j, next, err, errlen)) == -1)
		return -1;

	pthread_mutex_lock(&j->sync_mtx);
	oldfd = j->fd;
	sync_rc = fdatasync(oldfd);
	if (sync_rc == -1)
		saved = errno;
	j->fd = fd;
	j->seq = next;
	__atomic_store_n(&j->written, j->written + JOURNAL_HEADER_SIZE,
	    __ATOMIC_RELEASE);
	if (sync_rc == 0)
		__atomic_store_n(&j->synced, j->written, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&j->sync_mtx);
	/* the keys of a segment whose fsync failed wait for a snapshot:
	 * journal_status says so until the segment is dropped */
	if (sync_rc == -1)
		mark_broken(j, prev, saved);

	close(oldfd);
	(void)push_old(j, prev, j->seg_size);
	j->seg_size = JOURNAL_HEADER_SIZE;
	reset_writer(j);
	*closed = prev;
	return 0;
}

int
journal_drop_upto(struct journal *j, uint64_t seq, char *err, size_t errlen)
{
	char	 path[PATH_MAX];
	size_t	 i, keep = 0, removed = 0;
	int	 rc = 0;

	for (i = 0; i < j->nold; i++) {
		if (rc == 0 && j->old[i].seq <= seq) {
			if (seg_path(path, sizeof(path), j->dir,
			    j->old[i].seq) == 0 && (unlink(path) == 0 ||
			    errno == ENOENT)) {
				j->old_bytes -= j->old[i].size;
				removed++;
				continue;
			}
			snprintf(err, errlen, "remove %s: %s", path,
			    strerror(errno));
			rc = -1;
		}
		j->old[keep++] = j->old[i];
	}
	j->nold = keep;
	if (removed > 0 && fileio_sync_dir(j->dir) == -1 && rc == 0) {
		snprintf(err, errlen, "fsync directory %s: %s", j->dir,
		    strerror(errno));
		rc = -1;
	}
	pthread_mutex_lock(&j->err_mtx);
	if (j->broken_seq != 0 && j->broken_seq <= seq &&
	    j->broken_seq != j->seq && rc == 0)
		j->broken_seq = 0;
	pthread_mutex_unlock(&j->err_mtx);
	return rc;
}

uint64_t
journal_bytes(const struct journal *j)
{
	return j->old_bytes + j->seg_size + (cur_len(j) - j->off);
}

uint64_t
journal_disk_bytes(const struct journal *j)
{
	return j->old_bytes + j->seg_size;
}

uint64_t
journal_seq(const struct journal *j)
{
	return j->seq;
}

uint64_t
journal_segments(const struct journal *j)
{
	return (uint64_t)j->nold + 1;
}

int64_t
journal_synced_at(const struct journal *j)
{
	return __atomic_load_n(&j->synced_at, __ATOMIC_RELAXED);
}

uint64_t
journal_unsynced(const struct journal *j)
{
	return __atomic_load_n(&j->written, __ATOMIC_ACQUIRE) -
	    __atomic_load_n(&j->synced, __ATOMIC_ACQUIRE);
}

int
journal_status(struct journal *j, char *buf, size_t len)
{
	int rc = 0;

	if (j->write_failed) {
		snprintf(buf, len, "%s", j->write_err);
		return -1;
	}
	pthread_mutex_lock(&j->err_mtx);
	if (j->broken_seq != 0) {
		snprintf(buf, len, "%s", j->sync_err);
		rc = -1;
	} else
		snprintf(buf, len, "ok");
	pthread_mutex_unlock(&j->err_mtx);
	return rc;
}

/* ---- everysec ---- */

static void *
everysec(void *arg)
{
	struct journal	*j = arg;
	struct timespec	 ts;
	char		 err[256];

	pthread_mutex_lock(&j->thr_mtx);
	while (!j->thr_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += j->interval_ms / 1000;
		ts.tv_nsec += (long)(j->interval_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&j->thr_cond, &j->thr_mtx, &ts);
		if (j->thr_stop)
			break;
		pthread_mutex_unlock(&j->thr_mtx);
		/* a failure is kept in j for journal_status */
		if (journal_unsynced(j) > 0)
			(void)journal_sync(j, err, sizeof(err));
		pthread_mutex_lock(&j->thr_mtx);
	}
	pthread_mutex_unlock(&j->thr_mtx);
	return NULL;
}

int
journal_everysec_start(struct journal *j, unsigned interval_ms, char *err,
    size_t errlen)
{
	int e;

	if (j->thr_running)
		return 0;
	j->interval_ms = interval_ms ? interval_ms : 1000;
	j->thr_stop = 0;
	if ((e = pthread_create(&j->thread, NULL, everysec, j)) != 0) {
		snprintf(err, errlen, "cannot start the journal sync thread: "
		    "%s", strerror(e));
		return -1;
	}
	j->thr_running = 1;
	return 0;
}

void
journal_everysec_stop(struct journal *j)
{
	if (!j->thr_running)
		return;
	pthread_mutex_lock(&j->thr_mtx);
	j->thr_stop = 1;
	pthread_cond_signal(&j->thr_cond);
	pthread_mutex_unlock(&j->thr_mtx);
	pthread_join(j->thread, NULL);
	j->thr_running = 0;
}
