/*
 * snapshot.c - writing and loading one filter's snapshot file; the format is
 * described in snapshot.h.
 *
 * Writing runs on the snapshot thread while the event loop goes on setting
 * bits in the same array; loading runs at start-up, before any connection is
 * accepted, and must refuse anything it cannot prove whole and meant for the
 * filter the configuration describes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "bloom.h"
#include "fileio.h"
#include "keyslot.h"
#include "snapshot.h"

/*
 * The header's integers are encoded explicitly, but the bit array goes to
 * disk as the in-memory words, so a snapshot is only portable between
 * little-endian hosts; refuse to build anywhere else rather than write files
 * another build would misread.
 */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "snapshot.c writes the bit array as native words: little-endian only"
#endif
_Static_assert(sizeof(uint64_t) == 8 && sizeof(double) == 8,
    "the header stores 8-byte integers and IEEE-754 doubles");

#define WRITE_CHUNK	(1UL << 20)	/* private copy of the live array */
#define READ_CHUNK	(4UL << 20)	/* read, then hash while still cached */
/* The unit of a slot-major array left out: a small page, which is what
 * a write would fault in (a hole in the file, an untouched page in
 * memory). Both chunks are multiples of it. */
#define ZERO_RUN	4096UL
#define TRAILER_SIZE	8

/* header field offsets, see snapshot.h */
#define OFF_MAGIC	0
#define OFF_VERSION	8
#define OFF_LAYOUT	12
#define OFF_NBLOCKS	16
#define OFF_HASHES	24
#define OFF_HDRSIZE	28
#define OFF_SEED	32
#define OFF_CAPACITY	40
#define OFF_ERRRATE	48
#define OFF_COUNT	56
#define OFF_BITSSET	64
#define OFF_CREATED	72
/* version 2 */
#define OFF_NSLICES	16
#define OFF_GROWTH	20
#define OFF_EXPIRE	64
#define SLICE_ENTRY	64
#define SE_NBLOCKS	0
#define SE_HASHES	8
#define SE_FLAGS	12	/* version 3; reserved in version 2 */
#define SE_CAPACITY	16
#define SE_ERRRATE	24
#define SE_COUNT	32
#define SE_BITSSET	40
#define SE_START	48
#define SE_SEED		56	/* version 3; reserved in version 2 */
/* version 3: version 2 with merged slices, see snapshot.h */
#define VERSION_MERGED	3
#define SE_F_MERGED	0x1u
/* version 4 (cuckoo filters): header fields in version 2's reserved bytes */
#define OFF_JSEQ	80
#define OFF_JOFF	88
#define OFF_MAXKICKS	96
#define OFF_FORGOTTEN	104

uint64_t snapshot_fault_write_limit;
const char *snapshot_fault_hold;

/* The test hook's hold before a snapshot takes its name (ten minutes at
 * most): the saver's thread waits, the loop goes on. */
static void
fault_hold(void)
{
	for (int i = 0; snapshot_fault_hold != NULL &&
	    *snapshot_fault_hold != '\0' && i < 12000 &&
	    access(snapshot_fault_hold, F_OK) == 0; i++)
		usleep(50 * 1000);
}

static void
encode_header(unsigned char raw[SNAPSHOT_HEADER_SIZE],
    const struct snapshot_header *h)
{
	memset(raw, 0, SNAPSHOT_HEADER_SIZE);
	memcpy(raw + OFF_MAGIC, SNAPSHOT_MAGIC, 8);
	put_le32(raw + OFF_VERSION, h->version);
	put_le32(raw + OFF_LAYOUT, h->cuckoo ? (h->slot_major ?
	    CUCKOO_LAYOUT_SLOTS : CUCKOO_LAYOUT_PACKED4) :
	    h->slot_major ? BLOOM_LAYOUT_SLOTS512 : BLOOM_LAYOUT_SPLIT512);
	/* the journal position of the capture: every version but 1 */
	if (h->version != 1) {
		put_le64(raw + OFF_JSEQ, h->jseq);
		put_le64(raw + OFF_JOFF, h->joff);
	}
	if (h->cuckoo) {
		put_le32(raw + OFF_MAXKICKS, h->max_kicks);
		put_le64(raw + OFF_FORGOTTEN, h->forgotten);
	}
	put_le32(raw + OFF_NSLICES, h->nslices);
	put_le32(raw + OFF_GROWTH, h->growth);
	put_le32(raw + OFF_HDRSIZE, SNAPSHOT_HEADER_SIZE);
	put_le64(raw + OFF_SEED, h->seed);
	put_le64(raw + OFF_CAPACITY, h->capacity);
	put_le64(raw + OFF_ERRRATE, double_bits(h->error_rate));
	put_le64(raw + OFF_COUNT, h->count);
	put_le64(raw + OFF_EXPIRE, h->expire_ms);
	put_le64(raw + OFF_CREATED, h->created);
}

/* A slice's entry; flags and seed stay zero for the filter's own slices,
 * so a file of no merged slice is version 2 byte for byte. */
static void
encode_slice(unsigned char e[SLICE_ENTRY], const struct snapshot_slice *s)
{
	memset(e, 0, SLICE_ENTRY);
	if (s->cuckoo.table != NULL) {
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

/* The fields both versions share; the version's own are the caller's. */
static void
decode_header(const unsigned char raw[SNAPSHOT_HEADER_SIZE],
    struct snapshot_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = get_le32(raw + OFF_VERSION);
	h->layout = get_le32(raw + OFF_LAYOUT);
	h->seed = get_le64(raw + OFF_SEED);
	h->capacity = get_le64(raw + OFF_CAPACITY);
	h->error_rate = bits_double(get_le64(raw + OFF_ERRRATE));
	h->count = get_le64(raw + OFF_COUNT);
	h->created = get_le64(raw + OFF_CREATED);
	if (h->version == 1) {
		h->nslices = 1;
		h->nblocks = get_le64(raw + OFF_NBLOCKS);
		h->hashes = get_le32(raw + OFF_HASHES);
		h->bits_set = get_le64(raw + OFF_BITSSET);
	} else {
		h->nslices = get_le32(raw + OFF_NSLICES);
		h->growth = get_le32(raw + OFF_GROWTH);
		h->expire_ms = get_le64(raw + OFF_EXPIRE);
	}
	h->slot_major = h->version != SNAPSHOT_VERSION_CUCKOO ?
	    h->layout == BLOOM_LAYOUT_SLOTS512 :
	    h->layout == CUCKOO_LAYOUT_SLOTS;
	/* zero in a Bloom filter's file of a seend before them: none */
	if (h->version != 1) {
		h->jseq = get_le64(raw + OFF_JSEQ);
		h->joff = get_le64(raw + OFF_JOFF);
	}
	if (h->version == SNAPSHOT_VERSION_CUCKOO) {
		h->cuckoo = 1;
		h->max_kicks = get_le32(raw + OFF_MAXKICKS);
		h->forgotten = get_le64(raw + OFF_FORGOTTEN);
	}
}

uint64_t
snapshot_max_jseq(const char *dir)
{
	unsigned char	 raw[SNAPSHOT_HEADER_SIZE];
	struct snapshot_header h;
	struct dirent	*e;
	DIR		*d;
	uint64_t	 max = 0;
	size_t		 len, suffix = strlen(SNAPSHOT_SUFFIX);
	int		 fd;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		len = strlen(e->d_name);
		/* a filter's file, not a temporary one (".name.bloom.tmp") */
		if (e->d_name[0] == '.' || len <= suffix ||
		    strcmp(e->d_name + len - suffix, SNAPSHOT_SUFFIX) != 0)
			continue;
		if ((fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC)) ==
		    -1)
			continue;
		if (read(fd, raw, sizeof(raw)) == (ssize_t)sizeof(raw) &&
		    memcmp(raw + OFF_MAGIC, SNAPSHOT_MAGIC, 8) == 0) {
			decode_header(raw, &h);
			if (h.jseq > max)
				max = h.jseq;
		}
		close(fd);
	}
	closedir(d);
	return max;
}

int
snapshot_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n;

	n = snprintf(buf, len, "%s/%s%s", dir, name, SNAPSHOT_SUFFIX);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return 0;
}

/* ---- writing ---- */

/* 1 if the n bytes at p (a multiple of 8, 8-aligned) are all zero. */
static int
zero_run(const void *p, size_t n)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < n / sizeof(*w); i++)
		if (w[i] != 0)
			return 0;
	return 1;
}

/*
 * write(2) until done, through short writes and signals. *off counts the
 * bytes in the file so far, for the fault-injection limit: a write that
 * would pass it writes what fits and fails with ENOSPC, as a full disk does.
 */
static int
write_all(int fd, const void *buf, size_t len, uint64_t *off)
{
	const unsigned char	*p = buf;
	size_t			 want = len;
	ssize_t			 n;
	int			 full = 0;

	if (snapshot_fault_write_limit > 0 &&
	    *off + len > snapshot_fault_write_limit) {
		want = *off < snapshot_fault_write_limit ?
		    (size_t)(snapshot_fault_write_limit - *off) : 0;
		full = 1;
	}
	while (want > 0) {
		n = write(fd, p, want);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			/* no progress and no error: do not spin */
			errno = EIO;
			return -1;
		}
		p += n;
		want -= (size_t)n;
		*off += (uint64_t)n;
	}
	if (full) {
		errno = ENOSPC;
		return -1;
	}
	return 0;
}

/*
 * Moves the offset len bytes on without writing them: a hole, which reads
 * as zeros and takes no disk. *off counts them as write_all's bytes, so
 * the fault-injection limit still falls where it would have.
 */
static int
skip_all(int fd, size_t len, uint64_t *off)
{
	if (lseek(fd, (off_t)len, SEEK_CUR) == -1)
		return -1;
	*off += len;
	return 0;
}

/*
 * A slot-major chunk: its runs of small pages that are all zero are
 * skipped (skip_all), the others written. A node's filter holds bits only
 * in the slots it owns, so its file takes the disk of those alone.
 */
static int
write_sparse(int fd, const unsigned char *p, size_t n, uint64_t *off)
{
	size_t	at = 0, end, k;
	int	zero;

	while (at < n) {
		k = n - at < ZERO_RUN ? n - at : ZERO_RUN;
		zero = zero_run(p + at, k);
		for (end = at + k; end < n; end += k) {
			k = n - end < ZERO_RUN ? n - end : ZERO_RUN;
			if (zero_run(p + end, k) != zero)
				break;
		}
		if ((zero ? skip_all(fd, end - at, off) :
		    write_all(fd, p + at, end - at, off)) == -1)
			return -1;
		at = end;
	}
	return 0;
}

/*
 * Whether fd may be left with holes: a regular file, not appended to (a
 * seek would not move the writes), written at its end (a hole must read
 * as zero, not as what was there before). Anything else (a pipe, a
 * socket) gets every byte written.
 */
static int
holes_allowed(int fd)
{
	struct stat	sb;
	off_t		at;
	int		fl;

	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    (fl = fcntl(fd, F_GETFL)) == -1 || (fl & O_APPEND) != 0 ||
	    (at = lseek(fd, 0, SEEK_CUR)) == -1)
		return 0;
	return at >= sb.st_size;
}

/*
 * The array is copied out of the live filter one chunk at a time, and that
 * private copy is both hashed and written. The event loop keeps setting bits
 * while we read, so two reads of the same word could differ; hashing and
 * writing one copy means the trailer always matches the bytes on disk.
 *
 * What the copy holds: every word is read with a relaxed atomic load; the
 * event loop, the only writer, stores words with relaxed atomic stores
 * (bloom_add) or 32-byte AVX2 stores (bloom_add_avx2) that x86 does not
 * tear within an aligned 8-byte word, and a word it rewrites holds every
 * bit it held before either way. Bits only go from 0 to 1, so any bit set
 * before the write began is 1 in the copy: every key added before that
 * point is in the snapshot (the caller takes count and bits_set then).
 * Keys added during the write may be there in part or whole; a partial key
 * only costs a little false-positive rate, never a false negative for keys
 * the header counts.
 */
static int
write_array(int fd, const struct bloom *b, int sparse, XXH3_state_t *st,
    uint64_t *off)
{
	const uint64_t	*w = b->words;
	uint64_t	*buf;
	uint64_t	 total = b->nblocks * BLOOM_BLOCK_WORDS, done = 0;
	size_t		 n, i;
	int		 rc = 0;

	if ((buf = malloc(WRITE_CHUNK)) == NULL)
		return -1;
	while (done < total) {
		n = WRITE_CHUNK / sizeof(*buf);
		if (n > total - done)
			n = (size_t)(total - done);
		for (i = 0; i < n; i++)
			buf[i] = __atomic_load_n(&w[done + i], __ATOMIC_RELAXED);
		if (XXH3_64bits_update(st, buf, n * sizeof(*buf)) != XXH_OK) {
			errno = ENOMEM;
			rc = -1;
			break;
		}
		if ((sparse ? write_sparse(fd, (unsigned char *)buf,
		    n * sizeof(*buf), off) : write_all(fd, buf,
		    n * sizeof(*buf), off)) == -1) {
			rc = -1;
			break;
		}
		done += n;
	}
	free(buf);
	return rc;
}

/* A cuckoo slice's table: the job's own copy (filter_capture), which no
 * one changes while it is written. */
static int
write_table(int fd, const struct cuckoo *c, int sparse, XXH3_state_t *st,
    uint64_t *off)
{
	if (XXH3_64bits_update(st, c->table, cuckoo_table_bytes(c)) != XXH_OK) {
		errno = ENOMEM;
		return -1;
	}
	return sparse ? write_sparse(fd, c->table, cuckoo_table_bytes(c), off) :
	    write_all(fd, c->table, cuckoo_table_bytes(c), off);
}

/* Header, slice table, arrays and checksum trailer into fd; -1 with errno
 * set. A slot-major filter's zero pages are holes in a file that may have
 * them: the checksum covers them as the zeros they read as. */
static int
write_body(int fd, const struct snapshot_header *h,
    const struct snapshot_slice *sl)
{
	unsigned char	 raw[SNAPSHOT_HEADER_SIZE], trailer[TRAILER_SIZE];
	unsigned char	 entry[SLICE_ENTRY];
	XXH3_state_t	*st;
	uint64_t	 off = 0;
	int		 rc = -1, saved, sparse;

	sparse = h->slot_major && holes_allowed(fd);
	if ((st = XXH3_createState()) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	encode_header(raw, h);
	if (XXH3_64bits_reset(st) != XXH_OK ||
	    XXH3_64bits_update(st, raw, sizeof(raw)) != XXH_OK) {
		errno = ENOMEM;
		goto out;
	}
	if (write_all(fd, raw, sizeof(raw), &off) == -1)
		goto out;
	for (uint32_t i = 0; i < h->nslices; i++) {
		encode_slice(entry, &sl[i]);
		if (XXH3_64bits_update(st, entry, sizeof(entry)) != XXH_OK) {
			errno = ENOMEM;
			goto out;
		}
		if (write_all(fd, entry, sizeof(entry), &off) == -1)
			goto out;
	}
	for (uint32_t i = 0; i < h->nslices; i++)
		if ((sl[i].cuckoo.table != NULL ? write_table(fd, &sl[i].cuckoo,
		    sparse, st, &off) : write_array(fd, &sl[i].bloom, sparse, st,
		    &off)) == -1)
			goto out;
	put_le64(trailer, XXH3_64bits_digest(st));
	if (write_all(fd, trailer, sizeof(trailer), &off) == -1)
		goto out;
	rc = 0;
 out:
	saved = errno;
	XXH3_freeState(st);
	errno = saved;
	return rc;
}

/* The header for info and sl, checked: 0, or -1 with a message. */
static int
prepare_header(const char *name, const struct snapshot_info *info,
    const struct snapshot_slice *sl, struct snapshot_header *h, char *err,
    size_t errlen)
{
	if (info->nslices > SNAPSHOT_MAX_SLICES) {
		snprintf(err, errlen, "%s: %u slices, more than a snapshot "
		    "holds (%d)", name, info->nslices, SNAPSHOT_MAX_SLICES);
		return -1;
	}
	/* the loader refuses an own slice after a merged one: never write
	 * a file that would not load back over the one that does */
	for (uint32_t i = 1; i < info->nslices; i++)
		if (sl[i - 1].merged && !sl[i].merged) {
			snprintf(err, errlen, "%s: slice %u is the filter's own "
			    "after a merged slice (merged slices come last)",
			    name, i);
			return -1;
		}
	*h = *info;
	h->count = 0;
	/* version 2 unless a merged slice needs 3: earlier seends read 2 */
	h->version = h->cuckoo ? SNAPSHOT_VERSION_CUCKOO : SNAPSHOT_VERSION;
	for (uint32_t i = 0; i < h->nslices; i++) {
		h->count += sl[i].count;
		if ((sl[i].cuckoo.table != NULL) != h->cuckoo ||
		    (h->cuckoo && sl[i].merged)) {
			snprintf(err, errlen, "%s: slice %u is not of the "
			    "filter's type", name, i);
			return -1;
		}
		if (sl[i].merged)
			h->version = VERSION_MERGED;
		/* the loader refuses it (read_table): never written */
		if (h->slot_major && (h->cuckoo ? sl[i].cuckoo.nbuckets %
		    (2 * CUCKOO_RANGES) != 0 :
		    sl[i].bloom.nblocks % KEYSLOT_COUNT != 0)) {
			snprintf(err, errlen, "%s: slice %u: %llu blocks, not "
			    "a multiple of %d as a filter partitioned by slot "
			    "needs", name, i,
			    (unsigned long long)sl[i].bloom.nblocks,
			    KEYSLOT_COUNT);
			return -1;
		}
	}
	h->created = (uint64_t)time(NULL);
	return 0;
}

int
snapshot_write_slices_fd(int fd, const char *name,
    const struct snapshot_info *info, const struct snapshot_slice *sl,
    char *err, size_t errlen)
{
	struct snapshot_header h;

	if (prepare_header(name, info, sl, &h, err, errlen) == -1)
		return -1;
	if (write_body(fd, &h, sl) == -1) {
		snprintf(err, errlen, "write %s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

int
snapshot_write_slices(const char *dir, const char *name,
    const struct snapshot_info *info, const struct snapshot_slice *sl,
    char *err, size_t errlen)
{
	struct snapshot_header	 h;
	char			 tmp[PATH_MAX], final[PATH_MAX];
	int			 fd, n, saved;

	if (*name == '\0' || strchr(name, '/') != NULL) {
		snprintf(err, errlen, "bad filter name \"%s\"", name);
		return -1;
	}
	if (prepare_header(name, info, sl, &h, err, errlen) == -1)
		return -1;
	n = snprintf(tmp, sizeof(tmp), "%s/.%s%s.tmp", dir, name,
	    SNAPSHOT_SUFFIX);
	if (n < 0 || (size_t)n >= sizeof(tmp) ||
	    snapshot_path(final, sizeof(final), dir, name) == -1) {
		snprintf(err, errlen, "%s/%s%s: path too long", dir, name,
		    SNAPSHOT_SUFFIX);
		return -1;
	}

	fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0640);
	if (fd == -1) {
		snprintf(err, errlen, "open %s: %s", tmp, strerror(errno));
		return -1;
	}
	if (write_body(fd, &h, sl) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		snprintf(err, errlen, "write %s: %s", tmp, strerror(saved));
		return -1;
	}
	fault_hold();
	/* past the rename the new snapshot is in place and the old one
	 * gone: a failure of the directory's fsync can only be reported */
	return fileio_close_commit(fd, tmp, final, dir, err, errlen);
}

int
snapshot_write(const char *dir, const char *name, const struct bloom *b,
    uint64_t capacity, double error_rate, uint64_t count, uint64_t bits_set,
    char *err, size_t errlen)
{
	struct snapshot_header	h;
	struct snapshot_slice	s;

	memset(&h, 0, sizeof(h));
	memset(&s, 0, sizeof(s));
	h.nslices = 1;
	h.seed = b->seed;
	h.capacity = capacity;
	h.error_rate = error_rate;
	s.bloom = *b;
	s.capacity = capacity;
	s.error_rate = error_rate;
	s.start_ms = (int64_t)time(NULL) * 1000;
	s.count = count;
	s.bits_set = bits_set;
	return snapshot_write_slices(dir, name, &h, &s, err, errlen);
}

/* ---- loading ---- */

/* A file's header and slice table, checked and decoded. */
struct meta {
	struct snapshot_header	 h;
	struct snapshot_slice	*sl;		/* h.nslices, arrays not loaded */
	unsigned char		*prefix;	/* header and table, as on disk */
	size_t			 prefix_len;
};

static void
meta_free(struct meta *m)
{
	free(m->sl);
	free(m->prefix);
	m->sl = NULL;
	m->prefix = NULL;
}

static int
check_shape(const char *name, const char *what, uint32_t i, uint64_t nblocks,
    uint32_t hashes, char *err, size_t errlen)
{
	if (hashes != 4 && hashes != 8 && hashes != 16) {
		snprintf(err, errlen, "%s: %s%" PRIu32 ": bad hash count %"
		    PRIu32 " (must be 4, 8 or 16)", name, what, i, hashes);
		return -1;
	}
	if (nblocks == 0 || nblocks > BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES) {
		snprintf(err, errlen, "%s: %s%" PRIu32 ": bad block count %"
		    PRIu64 " (must be 1 to %llu)", name, what, i, nblocks,
		    BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES);
		return -1;
	}
	return 0;
}

/*
 * Version 3's fields of a slice entry: its flags (bit 0 merged, no other)
 * and the seed of a merged slice's keys, zero for an own slice; merged
 * slices come after every own one. Version 2 has neither (its reserved
 * fields are not read, as before version 3): every slice is the filter's
 * own.
 */
static int
read_merged(const char *name, const struct meta *m, uint32_t i,
    const unsigned char *e, struct snapshot_slice *s, char *err,
    size_t errlen)
{
	uint32_t flags;

	s->merged = 0;
	s->seed = 0;
	if (m->h.version != VERSION_MERGED)
		return 0;
	flags = get_le32(e + SE_FLAGS);
	s->seed = get_le64(e + SE_SEED);
	if ((flags & ~SE_F_MERGED) != 0) {
		snprintf(err, errlen, "%s: slice %" PRIu32 ": bad flags 0x%"
		    PRIx32 " (only bit 0, merged, is defined): file damaged",
		    name, i, flags);
		return -1;
	}
	s->merged = (flags & SE_F_MERGED) != 0;
	if (!s->merged && s->seed != 0) {
		snprintf(err, errlen, "%s: slice %" PRIu32 ": not merged but "
		    "with a seed (0x%016" PRIx64 "): file damaged", name, i,
		    s->seed);
		return -1;
	}
	if (!s->merged && i > 0 && m->sl[i - 1].merged) {
		snprintf(err, errlen, "%s: slice %" PRIu32 ": the filter's own "
		    "after merged slice %" PRIu32 " (merged slices come "
		    "last): file damaged", name, i, i - 1);
		return -1;
	}
	return 0;
}

/*
 * A version 4 slice entry: a cuckoo table's shape (cuckoo_init's range),
 * no flags, a count the table can hold (cuckoo_recount checks it once
 * the table is read), and the common fields' ranges.
 */
static int
read_cuckoo(const char *name, uint32_t i, const unsigned char *e,
    struct snapshot_slice *s, char *err, size_t errlen)
{
	uint64_t nb = get_le64(e + SE_NBLOCKS);
	uint32_t bits = get_le32(e + SE_HASHES);

	memset(&s->cuckoo, 0, sizeof(s->cuckoo));
	if (nb == 0 || nb > CUCKOO_MAX_BYTES || bits < CUCKOO_FP_MIN ||
	    bits > CUCKOO_FP_MAX || cuckoo_table_bytes_for(nb, bits) >
	    CUCKOO_MAX_BYTES) {
		snprintf(err, errlen, "%s: slice %" PRIu32 ": bad cuckoo "
		    "table of %" PRIu64 " buckets of %" PRIu32 "-bit "
		    "fingerprints", name, i, nb, bits);
		return -1;
	}
	s->cuckoo.nbuckets = nb;
	s->cuckoo.fpbits = bits;
	if (get_le32(e + SE_FLAGS) != 0 || get_le64(e + SE_SEED) != 0 ||
	    get_le64(e + SE_BITSSET) != 0 || s->capacity == 0 ||
	    s->count > nb * CUCKOO_SLOTS || s->start_ms < 0 ||
	    s->start_ms > SNAPSHOT_MAX_TIME_MS ||
	    !(s->error_rate > 0 && s->error_rate < 1)) {
		snprintf(err, errlen, "%s: slice %" PRIu32 ": bad flags, "
		    "capacity, error rate, count or start time", name, i);
		return -1;
	}
	return 0;
}

/* Version 2's (and 3's and 4's) slice table, read and checked; the prefix
 * grows by it. */
static int
read_table(int fd, const char *name, struct meta *m, char *err,
    size_t errlen)
{
	size_t		 len = (size_t)m->h.nslices * SLICE_ENTRY;
	unsigned char	*grown, *e;
	ssize_t		 n;
	int		 own = 0;

	if ((grown = realloc(m->prefix, SNAPSHOT_HEADER_SIZE + len)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	m->prefix = grown;
	m->prefix_len = SNAPSHOT_HEADER_SIZE + len;
	n = fileio_read_full(fd, m->prefix + SNAPSHOT_HEADER_SIZE, len,
	    SNAPSHOT_HEADER_SIZE);
	if (n == -1) {
		snprintf(err, errlen, "read %s: %s", name, strerror(errno));
		return -1;
	}
	if ((size_t)n != len) {
		snprintf(err, errlen, "%s: truncated while reading the slice "
		    "table", name);
		return -1;
	}
	for (uint32_t i = 0; i < m->h.nslices; i++) {
		struct snapshot_slice *s = &m->sl[i];

		e = m->prefix + SNAPSHOT_HEADER_SIZE + (size_t)i * SLICE_ENTRY;
		s->capacity = get_le64(e + SE_CAPACITY);
		s->error_rate = bits_double(get_le64(e + SE_ERRRATE));
		s->count = get_le64(e + SE_COUNT);
		s->bits_set = get_le64(e + SE_BITSSET);
		s->start_ms = (int64_t)get_le64(e + SE_START);
		if (m->h.cuckoo) {
			if (read_cuckoo(name, i, e, s, err, errlen) == -1)
				return -1;
			/* else a slot's buckets would not be its range */
			if (m->h.slot_major && s->cuckoo.nbuckets %
			    (2 * CUCKOO_RANGES) != 0) {
				snprintf(err, errlen, "%s: slice %" PRIu32 ": %"
				    PRIu64 " buckets, not an even number for "
				    "each of %u slots as a filter partitioned "
				    "by slot (layout %d) needs", name, i,
				    s->cuckoo.nbuckets, CUCKOO_RANGES,
				    CUCKOO_LAYOUT_SLOTS);
				return -1;
			}
			m->h.array_bytes += cuckoo_table_bytes_for(
			    s->cuckoo.nbuckets, s->cuckoo.fpbits);
			continue;
		}
		s->bloom.nblocks = get_le64(e + SE_NBLOCKS);
		s->bloom.hashes = get_le32(e + SE_HASHES);
		if (check_shape(name, "slice ", i, s->bloom.nblocks,
		    s->bloom.hashes, err, errlen) == -1)
			return -1;
		/* else a slot's blocks would not be the range the filter
		 * looks in: keys of one slot would be sought in another's */
		if (m->h.slot_major && s->bloom.nblocks % KEYSLOT_COUNT != 0) {
			snprintf(err, errlen, "%s: slice %" PRIu32 ": %" PRIu64
			    " blocks, not a multiple of %d as a filter "
			    "partitioned by slot (layout %d) needs", name, i,
			    s->bloom.nblocks, KEYSLOT_COUNT,
			    BLOOM_LAYOUT_SLOTS512);
			return -1;
		}
		if (read_merged(name, m, i, e, s, err, errlen) == -1)
			return -1;
		if (s->capacity == 0 || s->start_ms < 0 ||
		    s->start_ms > SNAPSHOT_MAX_TIME_MS ||
		    !(s->error_rate > 0 && s->error_rate < 1) ||
		    s->bits_set > s->bloom.nblocks * BLOOM_BLOCK_BITS) {
			snprintf(err, errlen, "%s: slice %" PRIu32 ": bad "
			    "capacity, error rate, start time or bit count",
			    name, i);
			return -1;
		}
		m->h.nblocks += s->bloom.nblocks;
		m->h.array_bytes += s->bloom.nblocks * BLOOM_BLOCK_BYTES;
		m->h.bits_set += s->bits_set;
		/* the newest own slice's; a merged one's if none is own */
		if (!s->merged || !own)
			m->h.hashes = s->bloom.hashes;
		own |= !s->merged;
	}
	return 0;
}

/*
 * The cheap checks, in the order that gives the most useful message: is it
 * ours at all, can this build read it, is its shape sane, and only then is
 * it the size that shape needs. The size check comes before anything is
 * allocated, so the header alone cannot make us map more than the file
 * holds.
 */
static int
read_meta(int fd, const char *name, struct meta *m, char *err, size_t errlen)
{
	struct snapshot_header	*h = &m->h;
	struct stat		 sb;
	uint64_t		 size, want;
	uint32_t		 hdrsize;
	ssize_t			 n;

	memset(m, 0, sizeof(*m));
	if (fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "stat %s: %s", name, strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", name);
		return -1;
	}
	size = (uint64_t)sb.st_size;
	if (size < SNAPSHOT_HEADER_SIZE) {
		snprintf(err, errlen, "%s: too small for a snapshot header: "
		    "%" PRIu64 " bytes, need %d", name, size,
		    SNAPSHOT_HEADER_SIZE);
		return -1;
	}
	if ((m->prefix = malloc(SNAPSHOT_HEADER_SIZE)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	m->prefix_len = SNAPSHOT_HEADER_SIZE;
	n = fileio_read_full(fd, m->prefix, SNAPSHOT_HEADER_SIZE, 0);
	if (n == -1) {
		snprintf(err, errlen, "read %s: %s", name, strerror(errno));
		goto fail;
	}
	if (n != SNAPSHOT_HEADER_SIZE) {
		snprintf(err, errlen, "%s: truncated while reading the header",
		    name);
		goto fail;
	}
	if (memcmp(m->prefix + OFF_MAGIC, SNAPSHOT_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not a seend snapshot (bad magic)",
		    name);
		goto fail;
	}
	decode_header(m->prefix, h);
	if (h->version < 1 || h->version > SNAPSHOT_VERSION_CUCKOO) {
		snprintf(err, errlen, "%s: unsupported snapshot version %" PRIu32
		    " (this seend reads versions 1 to %d)", name, h->version,
		    SNAPSHOT_VERSION_CUCKOO);
		goto fail;
	}
	if (h->cuckoo ? h->layout != CUCKOO_LAYOUT_PACKED4 && !h->slot_major :
	    (h->layout != BLOOM_LAYOUT_SPLIT512 && !h->slot_major)) {
		if (h->cuckoo)
			snprintf(err, errlen, "%s: unknown layout %" PRIu32
			    " for a cuckoo filter (this seend knows layouts "
			    "%d and %d)", name, h->layout, CUCKOO_LAYOUT_PACKED4,
			    CUCKOO_LAYOUT_SLOTS);
		else
			snprintf(err, errlen, "%s: unknown layout %" PRIu32
			    " for a bloom filter (this seend knows layouts %d "
			    "and %d)", name, h->layout, BLOOM_LAYOUT_SPLIT512,
			    BLOOM_LAYOUT_SLOTS512);
		goto fail;
	}
	/* seend 0.1.0's format never held a partitioned filter */
	if (h->slot_major && h->version == 1) {
		snprintf(err, errlen, "%s: layout %d in a version 1 file "
		    "(partitioned filters are written as version 2 or 3)",
		    name, BLOOM_LAYOUT_SLOTS512);
		goto fail;
	}
	hdrsize = get_le32(m->prefix + OFF_HDRSIZE);
	if (hdrsize != SNAPSHOT_HEADER_SIZE) {
		snprintf(err, errlen, "%s: bad header size %" PRIu32
		    " (expected %d)", name, hdrsize, SNAPSHOT_HEADER_SIZE);
		goto fail;
	}
	/* zero: a window that holds nothing */
	if (h->nslices > SNAPSHOT_MAX_SLICES) {
		snprintf(err, errlen, "%s: bad slice count %" PRIu32 " (must be "
		    "0 to %d)", name, h->nslices, SNAPSHOT_MAX_SLICES);
		goto fail;
	}
	if (h->version >= 2 &&
	    (h->growth > 1024 || h->expire_ms > SNAPSHOT_MAX_TIME_MS)) {
		snprintf(err, errlen, "%s: bad growth %" PRIu32 " or expire %"
		    PRIu64 " ms", name, h->growth, h->expire_ms);
		goto fail;
	}
	/* the table's size is known from the header: check it fits first */
	if (h->version >= 2 && size < SNAPSHOT_HEADER_SIZE +
	    (uint64_t)h->nslices * SLICE_ENTRY + TRAILER_SIZE) {
		snprintf(err, errlen, "%s: truncated: %" PRIu64 " bytes, too "
		    "small for %" PRIu32 " slices", name, size, h->nslices);
		goto fail;
	}
	if ((m->sl = calloc(h->nslices ? h->nslices : 1,
	    sizeof(*m->sl))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		goto fail;
	}
	if (h->version == 1) {
		if (check_shape(name, "filter", 0, h->nblocks, h->hashes, err,
		    errlen) == -1)
			goto fail;
		m->sl[0].bloom.nblocks = h->nblocks;
		m->sl[0].bloom.hashes = h->hashes;
		m->sl[0].capacity = h->capacity;
		m->sl[0].error_rate = h->error_rate;
		m->sl[0].count = h->count;
		m->sl[0].bits_set = h->bits_set;
		/* a creation time past any real clock is damage, but the
		 * file's checksum decides that; keep the arithmetic sane */
		m->sl[0].start_ms = h->created < SNAPSHOT_MAX_TIME_MS / 1000 ?
		    (int64_t)h->created * 1000 : SNAPSHOT_MAX_TIME_MS;
		h->array_bytes = h->nblocks * BLOOM_BLOCK_BYTES;
	} else if (read_table(fd, name, m, err, errlen) == -1)
		goto fail;
	/* cannot overflow: at most 4096 arrays of at most 1 TiB */
	want = m->prefix_len + h->array_bytes + TRAILER_SIZE;
	if (size != want) {
		snprintf(err, errlen, "%s: %s: %" PRIu64 " bytes, expected %"
		    PRIu64, name, size < want ? "truncated" : "too long",
		    size, want);
		goto fail;
	}
	return 0;
fail:
	meta_free(m);
	return -1;
}

/*
 * A slot-major array's chunk, read into scratch, into dst (fresh anonymous
 * memory: zero until written): only its small pages that hold a bit, so a
 * node's loaded filter costs the memory of the slots it had bits in, not
 * the whole array's.
 */
static void
copy_set_pages(unsigned char *dst, const unsigned char *src, size_t n)
{
	for (size_t off = 0; off < n; off += ZERO_RUN) {
		size_t k = n - off < ZERO_RUN ? n - off : ZERO_RUN;

		if (!zero_run(src + off, k))
			memcpy(dst + off, src + off, k);
	}
}

/*
 * Reads the arrays (into each slice's bloom when it has words, else through
 * a scratch buffer) and the trailer, hashing the prefix and each chunk right
 * after it is read, while the chunk is still in cache. Large reads straight
 * into the destination keep this at memory-copy speed: a 1 GiB filter from
 * the page cache is one copy and one hash pass. A slot-major filter's
 * arrays go through the scratch buffer too, and only their pages that are
 * not zero are copied on (copy_set_pages).
 */
static int
check_body(int fd, const char *name, const struct meta *m, char *err,
    size_t errlen)
{
	unsigned char	 trailer[TRAILER_SIZE];
	unsigned char	*scratch = NULL, *p;
	XXH3_state_t	*st;
	uint64_t	 pos = m->prefix_len, sum;
	size_t		 n;
	ssize_t		 got;
	int		 rc = -1;

	if ((st = XXH3_createState()) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	(void)XXH3_64bits_reset(st);
	(void)XXH3_64bits_update(st, m->prefix, m->prefix_len);
	for (uint32_t i = 0; i < m->h.nslices; i++) {
		const struct bloom	*b = &m->sl[i].bloom;
		const struct cuckoo	*c = &m->sl[i].cuckoo;
		unsigned char		*dst = m->h.cuckoo ? c->table :
					    (unsigned char *)b->words;
		uint64_t		 len = m->h.cuckoo ?
					    cuckoo_table_bytes_for(c->nbuckets,
					    c->fpbits) : bloom_bytes(b), off = 0;
		int			 sparse = m->h.slot_major &&
					    dst != NULL;

		if ((dst == NULL || sparse) && scratch == NULL &&
		    (scratch = malloc(READ_CHUNK)) == NULL) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out;
		}
		while (off < len) {
			n = READ_CHUNK;
			if (n > len - off)
				n = (size_t)(len - off);
			p = dst != NULL && !sparse ? dst + off : scratch;
			got = fileio_read_full(fd, p, n, pos);
			if (got == -1) {
				snprintf(err, errlen, "read %s: %s", name,
				    strerror(errno));
				goto out;
			}
			if ((size_t)got != n) {
				snprintf(err, errlen, "%s: truncated while "
				    "reading", name);
				goto out;
			}
			(void)XXH3_64bits_update(st, p, n);
			if (sparse)
				copy_set_pages(dst + off, p, n);
			off += n;
			pos += n;
		}
	}
	got = fileio_read_full(fd, trailer, sizeof(trailer), pos);
	if (got == -1) {
		snprintf(err, errlen, "read %s: %s", name, strerror(errno));
		goto out;
	}
	if (got != (ssize_t)sizeof(trailer)) {
		snprintf(err, errlen, "%s: truncated while reading", name);
		goto out;
	}
	sum = XXH3_64bits_digest(st);
	if (sum != get_le64(trailer)) {
		snprintf(err, errlen, "%s: checksum mismatch (file damaged)",
		    name);
		goto out;
	}
	rc = 0;
 out:
	free(scratch);
	XXH3_freeState(st);
	return rc;
}

/* The name of fd for messages: verify_fd is given no path. */
static void
fd_name(int fd, char *buf, size_t len)
{
	char	 link[64];
	ssize_t	 n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		snprintf(buf, len, "fd %d", fd);
	else
		buf[n] = '\0';
}

int
snapshot_verify_fd(int fd, struct snapshot_header *hdr, char *err,
    size_t errlen)
{
	struct meta	 m;
	char		 name[PATH_MAX];
	int		 rc;

	fd_name(fd, name, sizeof(name));
	if (read_meta(fd, name, &m, err, errlen) == -1)
		return -1;
	rc = check_body(fd, name, &m, err, errlen);
	if (rc == 0 && hdr != NULL)
		*hdr = m.h;
	meta_free(&m);
	return rc;
}

/*
 * The shortest %g form that reads back as the same double, so that two
 * error rates which differ are never printed alike ("0.01" vs "0.01").
 */
static void
fmt_double(char *buf, size_t len, double d)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/*
 * A snapshot only answers correctly for the settings it was made with; one
 * made for others would silently give another error rate, so it is refused
 * and the operator decides. A version 1 file is one array whose shape the
 * settings' plan must also give.
 */
static int
check_params(const char *name, const struct snapshot_header *h,
    uint64_t capacity, double error_rate, char *err, size_t errlen)
{
	char		 was[32], now[32];
	uint64_t	 nblocks;
	uint32_t	 hashes;

	fmt_double(was, sizeof(was), h->error_rate);
	fmt_double(now, sizeof(now), error_rate);
	if (h->version == 1 &&
	    bloom_plan(capacity, error_rate, &nblocks, &hashes) == -1) {
		snprintf(err, errlen, "%s: the config's capacity=%" PRIu64
		    " error_rate=%s cannot be planned", name, capacity, now);
		return -1;
	}
	if (h->capacity != capacity || h->error_rate != error_rate ||
	    (h->version == 1 &&
	    (h->nblocks != nblocks || h->hashes != hashes))) {
		snprintf(err, errlen, "%s: made for capacity=%" PRIu64
		    " error_rate=%s, the config says capacity=%" PRIu64
		    " error_rate=%s; restore those values or move the file "
		    "away", name, h->capacity, was, capacity, now);
		return -1;
	}
	return 0;
}

void
snapshot_slices_free(struct snapshot_slice *sl, uint32_t n)
{
	if (sl == NULL)
		return;
	for (uint32_t i = 0; i < n; i++) {
		if (sl[i].bloom.words != NULL)
			bloom_free(&sl[i].bloom);
		if (sl[i].cuckoo.table != NULL)
			cuckoo_free(&sl[i].cuckoo);
	}
	free(sl);
}

int
snapshot_load_slices_fd(int fd, const char *name, uint64_t capacity,
    double error_rate, struct snapshot_info *info,
    struct snapshot_slice **slices, char *err, size_t errlen)
{
	struct meta m;

	if (read_meta(fd, name, &m, err, errlen) == -1)
		return -1;
	if (check_params(name, &m.h, capacity, error_rate, err, errlen) == -1)
		goto fail;
	for (uint32_t i = 0; i < m.h.nslices; i++) {
		struct snapshot_slice	*s = &m.sl[i];
		uint64_t		 nb = s->bloom.nblocks;

		if (m.h.cuckoo) {
			uint64_t nbk = s->cuckoo.nbuckets;
			uint32_t bits = s->cuckoo.fpbits;

			if (cuckoo_init_ranges(&s->cuckoo, nbk, bits, m.h.seed,
			    m.h.slot_major ? CUCKOO_RANGES : 1) == -1) {
				snprintf(err, errlen, "%s: cannot allocate %"
				    PRIu64 " bytes for slice %" PRIu32 ": %s",
				    name, cuckoo_table_bytes_for(nbk, bits), i,
				    strerror(errno));
				goto fail;
			}
			continue;
		}
		/* a merged slice's keys were hashed with its own seed */
		if (bloom_init(&s->bloom, nb, s->bloom.hashes, s->merged ?
		    s->seed : m.h.seed) == -1) {
			snprintf(err, errlen, "%s: cannot allocate %" PRIu64
			    " bytes for slice %" PRIu32 ": %s", name,
			    nb * BLOOM_BLOCK_BYTES, i, strerror(errno));
			goto fail;
		}
		s->bloom.count = s->count;
		s->bloom.bits_set = s->bits_set;
	}
	if (check_body(fd, name, &m, err, errlen) == -1)
		goto fail;
	for (uint32_t i = 0; m.h.cuckoo && i < m.h.nslices; i++) {
		struct cuckoo *c = &m.sl[i].cuckoo;

		/* the table says how many it holds: the count must agree;
		 * a partitioned one's counts its node's slots' ranges alone
		 * (a rolled-back move may have left fingerprints in others,
		 * which a node's start frees: cluster_move_apply) */
		if ((c->count = cuckoo_recount(c)) != m.sl[i].count &&
		    !(m.h.slot_major && c->count > m.sl[i].count)) {
			snprintf(err, errlen, "%s: slice %" PRIu32 " holds %"
			    PRIu64 " fingerprints, its entry says %" PRIu64
			    ": file damaged", name, i, c->count,
			    m.sl[i].count);
			goto fail;
		}
		c->count = m.sl[i].count;
	}
	*info = m.h;
	*slices = m.sl;
	free(m.prefix);
	return 1;
fail:
	snapshot_slices_free(m.sl, m.h.nslices);
	free(m.prefix);
	return -1;
}

int
snapshot_load_slices(const char *path, uint64_t capacity, double error_rate,
    struct snapshot_info *info, struct snapshot_slice **slices, char *err,
    size_t errlen)
{
	int fd, rc;

	/* read only: loading must never change the file it judges */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	/* one pass front to back: let the kernel read ahead further */
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rc = snapshot_load_slices_fd(fd, path, capacity, error_rate, info,
	    slices, err, errlen);
	close(fd);
	return rc;
}

/* One slice into b: the tools' and tests' form. */
static int
load_one(int rc, const char *name, struct snapshot_info *info,
    struct snapshot_slice *sl, struct bloom *b, struct snapshot_header *hdr,
    char *err, size_t errlen)
{
	if (rc != 1)
		return rc;
	if (info->cuckoo) {
		snprintf(err, errlen, "%s: a cuckoo filter; this loader takes "
		    "a bloom filter of one slice", name);
		snapshot_slices_free(sl, info->nslices);
		return -1;
	}
	for (uint32_t i = 0; i < info->nslices; i++)
		if (sl[i].merged) {
			snprintf(err, errlen, "%s: slice %u is merged (from "
			    "another filter); this loader takes a filter of "
			    "one own slice", name, i);
			snapshot_slices_free(sl, info->nslices);
			return -1;
		}
	if (info->nslices != 1) {
		snprintf(err, errlen, "%s: %u slices, expected one", name,
		    info->nslices);
		snapshot_slices_free(sl, info->nslices);
		return -1;
	}
	*b = sl[0].bloom;
	free(sl);
	if (hdr != NULL)
		*hdr = *info;
	return 1;
}

int
snapshot_load_fd(int fd, const char *name, uint64_t capacity,
    double error_rate, struct bloom *b, struct snapshot_header *hdr,
    char *err, size_t errlen)
{
	struct snapshot_info	 info;
	struct snapshot_slice	*sl = NULL;
	int			 rc;

	rc = snapshot_load_slices_fd(fd, name, capacity, error_rate, &info,
	    &sl, err, errlen);
	return load_one(rc, name, &info, sl, b, hdr, err, errlen);
}

int
snapshot_load(const char *path, uint64_t capacity, double error_rate,
    struct bloom *b, struct snapshot_header *hdr, char *err, size_t errlen)
{
	struct snapshot_info	 info;
	struct snapshot_slice	*sl = NULL;
	int			 rc;

	rc = snapshot_load_slices(path, capacity, error_rate, &info, &sl, err,
	    errlen);
	return load_one(rc, path, &info, sl, b, hdr, err, errlen);
}
