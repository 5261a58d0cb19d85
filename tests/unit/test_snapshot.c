/*
 * test_snapshot.c - snapshot files: round trip, refusal of every kind of
 * damage without touching the file, failures that leave the old snapshot
 * alone, and a write racing the thread that sets bits; version 3's merged
 * slices and version 4's cuckoo tables (their bytes, the journal position,
 * damage to each field, a count the loader recounts).
 *
 * With SNAPSHOT_CORPUS_DIR set in the environment it also writes the seed
 * corpus for tests/fuzz/fuzz_snapshot.c there and exits:
 *   SNAPSHOT_CORPUS_DIR=tests/fuzz/corpus/snapshot ./tests/unit/test_snapshot
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "bloom.h"
#include "keyslot.h"
#include "snapshot.h"
#include "fixture.h"
#include "tap.h"

#define CAP	1000
#define RATE	0.01

static char	 dir[] = "/tmp/test_snapshot.XXXXXX";
static char	 err[512];

static int
exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static void
put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void
put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void
key(char *buf, size_t len, const char *prefix, uint64_t i)
{
	snprintf(buf, len, "https://example.com/%s/%llu", prefix,
	    (unsigned long long)i);
}

/* A small filter holding n keys "a/0".."a/n-1". */
static void
small_filter(struct bloom *b, uint64_t cap, double rate, uint64_t n)
{
	char k[96];

	if (bloom_create(b, cap, rate, 0x5eed5eed12345678ULL) == -1) {
		perror("bloom_create");
		exit(2);
	}
	for (uint64_t i = 0; i < n; i++) {
		key(k, sizeof(k), "a", i);
		bloom_add(b, bloom_hash(b, k, strlen(k)));
	}
}

static void
test_round_trip(void)
{
	struct bloom		 b, l;
	struct snapshot_header	 h;
	char			 path[512], tmp[512], k[96];
	uint64_t		 missing = 0;
	int			 rc, fd;

	small_filter(&b, 20000, RATE, 10000);
	rc = snapshot_write(dir, "rt", &b, 20000, RATE, b.count, b.bits_set,
	    err, sizeof(err));
	ok(rc == 0, "round trip: write (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "rt");
	snprintf(tmp, sizeof(tmp), "%s/.rt.bloom.tmp", dir);
	ok(exists(path), "round trip: %s exists", path);
	ok(!exists(tmp), "round trip: no tmp file left after success");

	memset(&h, 0, sizeof(h));
	rc = snapshot_load(path, 20000, RATE, &l, &h, err, sizeof(err));
	ok(rc == 1, "round trip: load returns 1 (%s)", rc == 1 ? "ok" : err);
	if (rc != 1)
		return;
	for (uint64_t i = 0; i < 10000; i++) {
		key(k, sizeof(k), "a", i);
		if (!bloom_check(&l, bloom_hash(&l, k, strlen(k))))
			missing++;
	}
	ok(missing == 0, "round trip: all 10000 keys present (%llu missing)",
	    (unsigned long long)missing);
	ok(l.count == b.count && l.bits_set == b.bits_set,
	    "round trip: count %llu and bits_set %llu preserved",
	    (unsigned long long)l.count, (unsigned long long)l.bits_set);
	ok(l.seed == b.seed && l.nblocks == b.nblocks &&
	    l.hashes == b.hashes, "round trip: seed and shape preserved");
	ok(memcmp(l.words, b.words, bloom_bytes(&b)) == 0,
	    "round trip: bit array identical");
	ok(bloom_popcount(&l) == b.bits_set, "round trip: popcount matches");
	ok(h.version == 2 && h.nslices == 1 && h.layout == BLOOM_LAYOUT_SPLIT512 &&
	    h.capacity == 20000 && h.error_rate == RATE &&
	    h.count == b.count && h.nblocks == b.nblocks && h.created > 0,
	    "round trip: header filled");

	/* verify_fd: the --inspect path, no filter */
	memset(&h, 0, sizeof(h));
	fd = open(path, O_RDONLY);
	rc = snapshot_verify_fd(fd, &h, err, sizeof(err));
	close(fd);
	ok(rc == 0 && h.count == b.count && h.nblocks == b.nblocks,
	    "verify_fd accepts a good snapshot (%s)", rc == 0 ? "ok" : err);

	/* a second write replaces the first */
	key(k, sizeof(k), "b", 0);
	bloom_add(&b, bloom_hash(&b, k, strlen(k)));
	rc = snapshot_write(dir, "rt", &b, 20000, RATE, b.count, b.bits_set,
	    err, sizeof(err));
	bloom_free(&l);
	rc = rc == 0 ? snapshot_load(path, 20000, RATE, &l, NULL, err,
	    sizeof(err)) : -1;
	ok(rc == 1 && l.count == b.count &&
	    bloom_check(&l, bloom_hash(&l, k, strlen(k))),
	    "rewrite replaces the old snapshot");
	if (rc == 1)
		bloom_free(&l);
	bloom_free(&b);
}

static void
test_missing(void)
{
	struct bloom	 b;
	char		 path[512];
	int		 rc;

	memset(&b, 0xa5, sizeof(b));
	snapshot_path(path, sizeof(path), dir, "nothere");
	rc = snapshot_load(path, CAP, RATE, &b, NULL, err, sizeof(err));
	ok(rc == 0, "missing file: load returns 0");
	ok(b.nblocks == 0xa5a5a5a5a5a5a5a5ULL, "missing file: filter untouched");
}

/*
 * Writes a good snapshot of a small filter to "dmg", applies mutate to its
 * bytes, loads it, and checks refusal with a message containing want and
 * naming the file, and that the file is byte for byte what we put there.
 */
static void
damage(const char *what, void (*mutate)(struct buf *), uint64_t cap,
    double rate, const char *want)
{
	struct bloom	 b, l;
	struct buf	 f;
	char		 path[512];
	int		 rc;

	small_filter(&b, CAP, RATE, 500);
	snapshot_path(path, sizeof(path), dir, "dmg");
	if (snapshot_write(dir, "dmg", &b, CAP, RATE, b.count, b.bits_set,
	    err, sizeof(err)) == -1 || slurp(path, &f) == -1) {
		ok(0, "%s: setup: %s", what, err);
		bloom_free(&b);
		return;
	}
	bloom_free(&b);
	if (mutate != NULL)
		mutate(&f);
	spit(path, f.p, f.len);
	err[0] = '\0';
	memset(&l, 0, sizeof(l));
	rc = snapshot_load(path, cap, rate, &l, NULL, err, sizeof(err));
	ok(rc == -1, "%s: refused", what);
	ok(strstr(err, want) != NULL && strstr(err, path) != NULL,
	    "%s: message \"%s\"", what, err);
	ok(same_file(path, &f), "%s: file left unchanged", what);
	ok(l.words == NULL, "%s: no filter left allocated", what);
	if (rc == 1)
		bloom_free(&l);
	free(f.p);
}

/* version 2: header, one 64-byte slice entry, then the array */
#define SLICE_ENTRY	64
#define ENTRY		SNAPSHOT_HEADER_SIZE
#define ARRAY		(SNAPSHOT_HEADER_SIZE + SLICE_ENTRY)
static void m_array(struct buf *f) { f->p[ARRAY + 7] ^= 0x10; }
static void m_header(struct buf *f) { f->p[60] ^= 0x01; }
static void m_reserved(struct buf *f) { f->p[100] ^= 0x80; }
static void m_trailer(struct buf *f) { f->p[f->len - 1] ^= 0x01; }
static void m_trunc1(struct buf *f) { f->len--; }
static void m_trunc10(struct buf *f) { f->len = 10; }
static void m_empty(struct buf *f) { f->len = 0; }
static void m_append(struct buf *f) { f->p[f->len++] = 0; }
static void m_magic(struct buf *f) { memcpy(f->p, "SEENDBX\n", 8); }
static void m_version(struct buf *f) { put_le32(f->p + 8, 5); }
static void m_layout(struct buf *f) { put_le32(f->p + 12, 7); }
static void m_hashes(struct buf *f) { put_le32(f->p + ENTRY + 8, 5); }
static void m_nblocks0(struct buf *f) { put_le64(f->p + ENTRY, 0); }
static void m_nblocksbig(struct buf *f) { put_le64(f->p + ENTRY, 1ULL << 40); }
static void m_nblocks1(struct buf *f) { put_le64(f->p + ENTRY, 20); }
static void m_nslices(struct buf *f) { put_le32(f->p + 16, 5000); }
static void m_nslices2(struct buf *f) { put_le32(f->p + 16, 2); }
static void m_slicecap0(struct buf *f) { put_le64(f->p + ENTRY + 16, 0); }
static void m_hdrsize(struct buf *f) { put_le32(f->p + 28, 64); }

static void
test_damage(void)
{
	damage("flipped array byte", m_array, CAP, RATE, "checksum mismatch");
	damage("flipped header byte (count)", m_header, CAP, RATE,
	    "checksum mismatch (file damaged)");
	damage("flipped reserved byte", m_reserved, CAP, RATE,
	    "checksum mismatch");
	damage("flipped trailer byte", m_trailer, CAP, RATE,
	    "checksum mismatch");
	damage("truncated by 1 byte", m_trunc1, CAP, RATE, "truncated: ");
	damage("truncated to 10 bytes", m_trunc10, CAP, RATE,
	    "too small for a snapshot header");
	damage("empty file", m_empty, CAP, RATE, "too small");
	damage("appended byte", m_append, CAP, RATE, "too long: ");
	damage("wrong magic", m_magic, CAP, RATE, "not a seend snapshot");
	damage("version 5", m_version, CAP, RATE,
	    "unsupported snapshot version 5 (this seend reads versions 1 "
	    "to 4)");
	damage("5000 slices", m_nslices, CAP, RATE, "bad slice count 5000");
	damage("2 slices announced, 1 written", m_nslices2, CAP, RATE,
	    "slice 1: bad");
	damage("slice capacity 0", m_slicecap0, CAP, RATE,
	    "slice 0: bad capacity");
	damage("unknown layout", m_layout, CAP, RATE, "unknown layout 7");
	damage("hashes 5", m_hashes, CAP, RATE, "bad hash count 5");
	damage("nblocks 0", m_nblocks0, CAP, RATE, "bad block count 0");
	damage("nblocks 2^40", m_nblocksbig, CAP, RATE, "bad block count");
	damage("nblocks off by one", m_nblocks1, CAP, RATE, "expected");
	damage("header size 64", m_hdrsize, CAP, RATE, "bad header size 64");
	damage("config capacity differs", NULL, 2000, RATE,
	    "made for capacity=1000 error_rate=0.01, the config says "
	    "capacity=2000 error_rate=0.01; restore those values or move "
	    "the file away");
	damage("config error_rate differs", NULL, CAP, 0.001,
	    "the config says capacity=1000 error_rate=0.001");
	damage("config error_rate differs in the 17th digit", NULL, CAP,
	    0.010000000000000002, "error_rate=0.010000000000000002");
}

static void
test_verify_fd_damage(void)
{
	struct bloom	 b;
	struct buf	 f;
	char		 path[512];
	int		 fd, rc;

	small_filter(&b, CAP, RATE, 10);
	snapshot_path(path, sizeof(path), dir, "vfd");
	snapshot_write(dir, "vfd", &b, CAP, RATE, b.count, b.bits_set, err,
	    sizeof(err));
	bloom_free(&b);
	slurp(path, &f);
	m_array(&f);
	spit(path, f.p, f.len);
	fd = open(path, O_RDONLY);
	rc = snapshot_verify_fd(fd, NULL, err, sizeof(err));
	close(fd);
	ok(rc == -1 && strstr(err, "checksum mismatch") &&
	    strstr(err, path) != NULL,
	    "verify_fd refuses a damaged array, naming the file (%s)", err);
	free(f.p);
}

/* Good snapshot "fault" on disk, then writes that fail part way. */
static void
fault_case(uint64_t limit, int expect_ok)
{
	struct bloom	 b, l;
	struct buf	 before;
	char		 path[512], tmp[512], k[96];
	int		 rc;

	snapshot_path(path, sizeof(path), dir, "fault");
	snprintf(tmp, sizeof(tmp), "%s/.fault.bloom.tmp", dir);
	small_filter(&b, CAP, RATE, 100);
	snapshot_write(dir, "fault", &b, CAP, RATE, b.count, b.bits_set, err,
	    sizeof(err));
	slurp(path, &before);

	key(k, sizeof(k), "new", limit);
	bloom_add(&b, bloom_hash(&b, k, strlen(k)));
	snapshot_fault_write_limit = limit;
	rc = snapshot_write(dir, "fault", &b, CAP, RATE, b.count, b.bits_set,
	    err, sizeof(err));
	snapshot_fault_write_limit = 0;
	if (expect_ok) {
		ok(rc == 0, "fault limit %llu = file size: write succeeds",
		    (unsigned long long)limit);
	} else {
		ok(rc == -1 && strstr(err, "No space left on device") &&
		    strstr(err, tmp) && strncmp(err, "write ", 6) == 0,
		    "fault limit %llu: write fails (%s)",
		    (unsigned long long)limit, err);
		ok(same_file(path, &before),
		    "fault limit %llu: old snapshot intact",
		    (unsigned long long)limit);
		rc = snapshot_load(path, CAP, RATE, &l, NULL, err, sizeof(err));
		ok(rc == 1 && l.count == b.count - 1,
		    "fault limit %llu: old snapshot loads", (unsigned long long)
		    limit);
		if (rc == 1)
			bloom_free(&l);
	}
	ok(!exists(tmp), "fault limit %llu: no tmp file remains",
	    (unsigned long long)limit);
	free(before.p);
	bloom_free(&b);
}

static void
test_faults(void)
{
	struct bloom	 b;
	uint64_t	 size;

	small_filter(&b, CAP, RATE, 0);
	size = SNAPSHOT_HEADER_SIZE + SLICE_ENTRY + bloom_bytes(&b) + 8;
	bloom_free(&b);
	ok(size > 1000, "fault tests: file (%llu bytes) is over 1000 bytes",
	    (unsigned long long)size);
	fault_case(1000, 0);	/* inside the array */
	fault_case(50, 0);	/* inside the header */
	fault_case(size - 1, 0);	/* the last byte of the trailer */
	fault_case(size, 1);
}

static void
test_bad_dirs(void)
{
	struct bloom	 b;
	char		 path[512], sub[600], tmp[512];
	int		 rc;

	small_filter(&b, CAP, RATE, 10);

	snprintf(sub, sizeof(sub), "%s/no/such/dir", dir);
	rc = snapshot_write(sub, "x", &b, CAP, RATE, 0, 0, err, sizeof(err));
	ok(rc == -1 && strstr(err, "No such file or directory") &&
	    strstr(err, sub), "non-existent directory: fails (%s)", err);

	/* open fails even as root: the tmp name is taken by a directory */
	snprintf(tmp, sizeof(tmp), "%s/.blocked.bloom.tmp", dir);
	mkdir(tmp, 0700);
	rc = snapshot_write(dir, "blocked", &b, CAP, RATE, 0, 0, err,
	    sizeof(err));
	snapshot_path(path, sizeof(path), dir, "blocked");
	ok(rc == -1 && strncmp(err, "open ", 5) == 0 && !exists(path),
	    "tmp name taken by a directory: open fails (%s)", err);
	rmdir(tmp);

	/* rename fails even as root: the final name is a non-empty dir */
	snapshot_path(path, sizeof(path), dir, "renfail");
	snprintf(tmp, sizeof(tmp), "%s/.renfail.bloom.tmp", dir);
	snprintf(sub, sizeof(sub), "%s/keep", path);
	mkdir(path, 0700);
	mkdir(sub, 0700);
	rc = snapshot_write(dir, "renfail", &b, CAP, RATE, 0, 0, err,
	    sizeof(err));
	ok(rc == -1 && strncmp(err, "rename ", 7) == 0 && !exists(tmp) &&
	    exists(sub), "rename fails: tmp removed, target untouched (%s)",
	    err);
	rmdir(sub);
	rmdir(path);

	rc = snapshot_write(dir, "a/b", &b, CAP, RATE, 0, 0, err, sizeof(err));
	ok(rc == -1, "a name with a slash is refused (%s)", err);

	if (geteuid() == 0) {
		/* root ignores directory permissions: the case would pass
		 * without exercising anything */
		ok(1, "read-only directory # SKIP running as root, chmod 0555 "
		    "does not stop root's writes");
	} else {
		snprintf(sub, sizeof(sub), "%s/ro", dir);
		mkdir(sub, 0755);
		chmod(sub, 0555);
		rc = snapshot_write(sub, "x", &b, CAP, RATE, 0, 0, err,
		    sizeof(err));
		ok(rc == -1 && strstr(err, "Permission denied"),
		    "read-only directory: fails (%s)", err);
		chmod(sub, 0755);
		rmdir(sub);
	}
	bloom_free(&b);
}

/* ---- a write racing the event loop ---- */

struct racer {
	struct bloom	*b;
	int		 stop;
	int		 running;
	uint64_t	 added;
};

static void *
race_adder(void *arg)
{
	struct racer	*r = arg;
	char		 k[96];
	uint64_t	 i = 0;

	__atomic_store_n(&r->running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		key(k, sizeof(k), "race", i++);
		bloom_add(r->b, bloom_hash(r->b, k, strlen(k)));
	}
	r->added = i;
	return NULL;
}

static void
test_race(void)
{
	const uint64_t	 cap = 50000000, before = 200000;
	struct bloom	 b, l;
	struct racer	 r;
	pthread_t	 t;
	uint64_t	 count, bits, missing = 0, seen_race = 0;
	char		 path[512], k[96];
	int		 rc;

	if (bloom_create(&b, cap, RATE, 42) == -1) {
		ok(0, "race: bloom_create");
		return;
	}
	diag("race: filter of %llu bytes", (unsigned long long)bloom_bytes(&b));
	/* touch every page so the write is not racing page faults only */
	memset(b.words, 0, bloom_bytes(&b));
	for (uint64_t i = 0; i < before; i++) {
		key(k, sizeof(k), "pre", i);
		bloom_add(&b, bloom_hash(&b, k, strlen(k)));
	}
	count = b.count;
	bits = b.bits_set;

	memset(&r, 0, sizeof(r));
	r.b = &b;
	if (pthread_create(&t, NULL, race_adder, &r) != 0) {
		ok(0, "race: pthread_create");
		bloom_free(&b);
		return;
	}
	while (!__atomic_load_n(&r.running, __ATOMIC_ACQUIRE))
		;
	rc = snapshot_write(dir, "race", &b, cap, RATE, count, bits, err,
	    sizeof(err));
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	diag("race: %llu keys added by the other thread during the write",
	    (unsigned long long)r.added);
	ok(rc == 0, "race: write succeeds (%s)", rc == 0 ? "ok" : err);
	ok(r.added > 0, "race: the writer thread really ran during the write");

	snapshot_path(path, sizeof(path), dir, "race");
	rc = snapshot_load(path, cap, RATE, &l, NULL, err, sizeof(err));
	ok(rc == 1, "race: snapshot loads and passes its checksum (%s)",
	    rc == 1 ? "ok" : err);
	if (rc == 1) {
		for (uint64_t i = 0; i < before; i++) {
			key(k, sizeof(k), "pre", i);
			if (!bloom_check(&l, bloom_hash(&l, k, strlen(k))))
				missing++;
		}
		ok(missing == 0, "race: all %llu keys added before the write "
		    "are present (%llu missing)", (unsigned long long)before,
		    (unsigned long long)missing);
		ok(l.count == count && l.bits_set == bits,
		    "race: header count/bits_set are the caller's");
		for (uint64_t i = 0; i < r.added; i++) {
			key(k, sizeof(k), "race", i);
			seen_race += (uint64_t)bloom_check(&l,
			    bloom_hash(&l, k, strlen(k)));
		}
		diag("race: %llu of the %llu racing keys made it in",
		    (unsigned long long)seen_race,
		    (unsigned long long)r.added);
		bloom_free(&l);
	}
	bloom_free(&b);
}

/* ---- fuzz seed corpus ---- */

static void
write_seed(const char *out, const char *file, uint64_t cap, double rate,
    uint64_t n, void (*mutate)(struct buf *))
{
	struct bloom	 b;
	struct buf	 f;
	char		 path[512], dst[1024];

	small_filter(&b, cap, rate, n);
	snapshot_path(path, sizeof(path), dir, "seed");
	if (snapshot_write(dir, "seed", &b, cap, rate, b.count, b.bits_set,
	    err, sizeof(err)) == -1 || slurp(path, &f) == -1) {
		fprintf(stderr, "seed %s: %s\n", file, err);
		exit(1);
	}
	bloom_free(&b);
	/* a fixed creation time, so regenerating gives the same files */
	put_le64(f.p + 72, 1700000000);
	/* the checksum covers the time: recompute it, then do the damage */
	put_le64(f.p + f.len - 8, XXH3_64bits(f.p, f.len - 8));
	if (mutate != NULL)
		mutate(&f);
	snprintf(dst, sizeof(dst), "%s/%s", out, file);
	if (spit(dst, f.p, f.len) == -1) {
		perror(dst);
		exit(1);
	}
	free(f.p);
}

/* Relabelled layout 3, sealed again: only its nblocks is wrong. */
static void
m_layout3(struct buf *f)
{
	put_le32(f->p + 12, BLOOM_LAYOUT_SLOTS512);
	put_le64(f->p + f->len - 8, XXH3_64bits(f->p, f->len - 8));
}

static void	write_corpus_merged(const char *);
static void	write_corpus_cuckoo(const char *);

static int
write_corpus(const char *out)
{
	write_seed(out, "valid-10", 10, 0.01, 10, NULL);
	write_seed(out, "valid-100", 100, 0.01, 60, NULL);
	write_seed(out, "valid-1000", 1000, 0.01, 1000, NULL);
	write_seed(out, "valid-300-0.1", 300, 0.1, 150, NULL);
	write_seed(out, "valid-200-0.0001", 200, 0.0001, 200, NULL);
	write_seed(out, "damaged-array", 100, 0.01, 60, m_array);
	write_seed(out, "damaged-trunc1", 100, 0.01, 60, m_trunc1);
	write_seed(out, "damaged-header-only", 10, 0.01, 10, m_trunc10);
	write_seed(out, "damaged-magic", 10, 0.01, 10, m_magic);
	write_seed(out, "damaged-version", 10, 0.01, 10, m_version);
	write_seed(out, "damaged-nblocks", 100, 0.01, 60, m_nblocks1);
	write_seed(out, "damaged-hashes", 100, 0.01, 60, m_hashes);
	write_corpus_merged(out);
	write_corpus_cuckoo(out);
	/* layout 3 (slot-major) of 2 blocks, checksum right: refused for its
	 * nblocks; a whole one is a MiB at least, too big a seed */
	write_seed(out, "damaged-layout3-nblocks", 100, 0.01, 60, m_layout3);
	return 0;
}

static void
cleanup(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/*
 * A version 1 file as seend 0.1.0 wrote it (header, array, trailer) loads
 * as one slice with every key, its counts, seed and shape.
 */
static void
test_version1(void)
{
	struct bloom		 b;
	struct snapshot_info	 info;
	struct snapshot_slice	*sl = NULL;
	unsigned char		 hdr[SNAPSHOT_HEADER_SIZE], tr[8];
	char			 path[512], k[96];
	uint64_t		 missing = 0, nblocks;
	uint32_t		 hashes;
	XXH3_state_t		*st = XXH3_createState();
	FILE			*fp;
	int			 rc;

	bloom_plan(CAP, RATE, &nblocks, &hashes);
	bloom_init(&b, nblocks, hashes, 0x1234);
	for (int i = 0; i < 700; i++) {
		key(k, sizeof(k), "v1", (uint64_t)i);
		bloom_add(&b, bloom_hash(&b, k, strlen(k)));
	}
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, SNAPSHOT_MAGIC, 8);
	put_le32(hdr + 8, 1);
	put_le32(hdr + 12, BLOOM_LAYOUT_SPLIT512);
	put_le64(hdr + 16, b.nblocks);
	put_le32(hdr + 24, b.hashes);
	put_le32(hdr + 28, SNAPSHOT_HEADER_SIZE);
	put_le64(hdr + 32, b.seed);
	put_le64(hdr + 40, CAP);
	{
		double d = RATE;
		uint64_t u;

		memcpy(&u, &d, 8);
		put_le64(hdr + 48, u);
	}
	put_le64(hdr + 56, b.count);
	put_le64(hdr + 64, b.bits_set);
	put_le64(hdr + 72, 1700000000);
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, hdr, sizeof(hdr));
	XXH3_64bits_update(st, b.words, bloom_bytes(&b));
	put_le64(tr, XXH3_64bits_digest(st));
	XXH3_freeState(st);
	snapshot_path(path, sizeof(path), dir, "v1");
	fp = fopen(path, "w");
	fwrite(hdr, 1, sizeof(hdr), fp);
	fwrite(b.words, 1, bloom_bytes(&b), fp);
	fwrite(tr, 1, sizeof(tr), fp);
	fclose(fp);

	rc = snapshot_load_slices(path, CAP, RATE, &info, &sl, err,
	    sizeof(err));
	ok(rc == 1, "version 1: loads (%s)", rc == 1 ? "ok" : err);
	if (rc != 1) {
		bloom_free(&b);
		return;
	}
	ok(info.version == 1 && info.nslices == 1 && info.seed == 0x1234 &&
	    info.count == b.count, "version 1: one slice, seed and count");
	ok(sl[0].bloom.nblocks == b.nblocks && sl[0].bloom.hashes == b.hashes &&
	    sl[0].capacity == CAP && sl[0].error_rate == RATE &&
	    sl[0].bloom.bits_set == b.bits_set &&
	    sl[0].start_ms == 1700000000LL * 1000,
	    "version 1: the slice's shape, counts and start");
	for (int i = 0; i < 700; i++) {
		key(k, sizeof(k), "v1", (uint64_t)i);
		if (!bloom_check(&sl[0].bloom, bloom_hash(&sl[0].bloom, k,
		    strlen(k))))
			missing++;
	}
	ok(missing == 0, "version 1: all 700 keys present (%llu missing)",
	    (unsigned long long)missing);
	snapshot_slices_free(sl, info.nslices);
	rc = snapshot_load_slices(path, 2 * CAP, RATE, &info, &sl, err,
	    sizeof(err));
	ok(rc == -1 && strstr(err, "made for capacity=1000") != NULL,
	    "version 1: other settings refused (%s)", err);
	bloom_free(&b);
}

/* Several slices of different shapes and starts survive a round trip. */
static void
test_slices(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl[3], *got = NULL;
	char			 path[512], k[96];
	uint64_t		 caps[3] = { 1000, 2000, 4000 }, missing = 0;
	double			 rates[3] = { 0.002, 0.0016, 0.00128 };
	int			 rc;

	memset(&info, 0, sizeof(info));
	memset(sl, 0, sizeof(sl));
	info.nslices = 3;
	info.seed = 99;
	info.capacity = CAP;
	info.error_rate = RATE;
	info.growth = 2;
	info.expire_ms = 86400000;
	for (int i = 0; i < 3; i++) {
		bloom_create(&sl[i].bloom, caps[i], rates[i], 99);
		for (int j = 0; j < 300; j++) {
			key(k, sizeof(k), i == 0 ? "s0" : i == 1 ? "s1" : "s2",
			    (uint64_t)j);
			bloom_add(&sl[i].bloom, bloom_hash(&sl[i].bloom, k,
			    strlen(k)));
		}
		sl[i].capacity = caps[i];
		sl[i].error_rate = rates[i];
		sl[i].start_ms = 1700000000000LL + i * 1000;
		sl[i].count = sl[i].bloom.count;
		sl[i].bits_set = sl[i].bloom.bits_set;
	}
	rc = snapshot_write_slices(dir, "multi", &info, sl, err, sizeof(err));
	ok(rc == 0, "slices: write (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "multi");
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1, "slices: load (%s)", rc == 1 ? "ok" : err);
	if (rc == 1) {
		ok(back.version == 2 && back.nslices == 3 && back.seed == 99 &&
		    back.growth == 2 && back.expire_ms == 86400000 &&
		    back.count == 900, "slices: header fields");
		for (int i = 0; i < 3; i++) {
			ok(got[i].capacity == caps[i] &&
			    got[i].error_rate == rates[i] &&
			    got[i].start_ms == sl[i].start_ms &&
			    got[i].bloom.nblocks == sl[i].bloom.nblocks &&
			    got[i].bloom.count == 300 &&
			    memcmp(got[i].bloom.words, sl[i].bloom.words,
			    bloom_bytes(&sl[i].bloom)) == 0,
			    "slices: slice %d whole", i);
			for (int j = 0; j < 300; j++) {
				key(k, sizeof(k), i == 0 ? "s0" : i == 1 ?
				    "s1" : "s2", (uint64_t)j);
				if (!bloom_check(&got[i].bloom, bloom_hash(
				    &got[i].bloom, k, strlen(k))))
					missing++;
			}
		}
		ok(missing == 0, "slices: every key in its slice");
		snapshot_slices_free(got, back.nslices);
	}
	/* a window that holds nothing: zero slices */
	info.nslices = 0;
	rc = snapshot_write_slices(dir, "none", &info, sl, err, sizeof(err));
	snapshot_path(path, sizeof(path), dir, "none");
	rc = rc == 0 ? snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err)) : -1;
	ok(rc == 1 && back.nslices == 0, "slices: zero slices round trip");
	if (rc == 1)
		snapshot_slices_free(got, 0);
	for (int i = 0; i < 3; i++)
		bloom_free(&sl[i].bloom);
}

/* ---- merged slices: version 3 ---- */

#define OWN_SEED	99ULL
#define NMERGED		4

static const char *const MTAG[NMERGED] = { "own0", "own1", "mrg2", "mrg3" };

static uint64_t
get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t
get_le32(const unsigned char *p)
{
	return (uint32_t)get_le64(p) & 0xffffffffu;
}

/* The file's checksum recomputed, so a damaged field is refused for
 * itself and not for the checksum. */
static void
reseal(struct buf *f)
{
	put_le64(f->p + f->len - 8, XXH3_64bits(f->p, f->len - 8));
}

/*
 * Two own slices (seed OWN_SEED) and, when merged, two merged slices of
 * other seeds, the second of another shape (7 blocks, 4 hashes); without
 * merged all four are the filter's own (same shapes, seed OWN_SEED).
 * Slice i holds 200 keys "MTAG[i]/j", fixed start times.
 */
static void
merged_set(struct snapshot_info *info, struct snapshot_slice sl[NMERGED],
    int merged)
{
	static const uint64_t mseeds[2] = { 0xa1a1a1a1a1a1a1a1ULL,
	    0x00000000000000b2ULL };
	char k[96];

	memset(info, 0, sizeof(*info));
	memset(sl, 0, NMERGED * sizeof(*sl));
	info->nslices = NMERGED;
	info->seed = OWN_SEED;
	info->capacity = CAP;
	info->error_rate = RATE;
	info->growth = 2;
	info->expire_ms = 3600000;
	for (int i = 0; i < NMERGED; i++) {
		struct snapshot_slice	*s = &sl[i];
		uint64_t		 seed = OWN_SEED;

		if (i >= 2 && merged) {
			s->merged = 1;
			s->seed = seed = mseeds[i - 2];
		}
		if ((i == 3 ? bloom_init(&s->bloom, 7, 4, seed) :
		    bloom_create(&s->bloom, CAP * (uint64_t)(i + 1), RATE,
		    seed)) == -1) {
			perror("bloom");
			exit(2);
		}
		for (int j = 0; j < 200; j++) {
			key(k, sizeof(k), MTAG[i], (uint64_t)j);
			bloom_add(&s->bloom, bloom_hash(&s->bloom, k,
			    strlen(k)));
		}
		s->capacity = i == 3 ? 50 : CAP * (uint64_t)(i + 1);
		s->error_rate = i == 3 ? 0.05 : RATE;
		s->start_ms = 1700000000000LL + i * 60000;
		s->count = s->bloom.count;
		s->bits_set = s->bloom.bits_set;
	}
}

static void
merged_free(struct snapshot_slice sl[NMERGED])
{
	for (int i = 0; i < NMERGED; i++)
		bloom_free(&sl[i].bloom);
}

/*
 * The version 2 file as the writer before version 3 made it, built here
 * from snapshot.h's layout: header, entries with zero reserved fields,
 * arrays, trailer. created is the written file's, the one field the
 * writer takes from the clock.
 */
static void
expect_v2(const struct snapshot_info *info, const struct snapshot_slice *sl,
    uint64_t created, struct buf *out)
{
	size_t		 at = SNAPSHOT_HEADER_SIZE;
	uint64_t	 count = 0, u;
	double		 d;

	out->len = SNAPSHOT_HEADER_SIZE + info->nslices * (size_t)SLICE_ENTRY +
	    8;
	for (uint32_t i = 0; i < info->nslices; i++)
		out->len += bloom_bytes(&sl[i].bloom);
	out->p = calloc(1, out->len);
	memcpy(out->p, SNAPSHOT_MAGIC, 8);
	put_le32(out->p + 8, 2);
	put_le32(out->p + 12, BLOOM_LAYOUT_SPLIT512);
	put_le32(out->p + 16, info->nslices);
	put_le32(out->p + 20, info->growth);
	put_le32(out->p + 28, SNAPSHOT_HEADER_SIZE);
	put_le64(out->p + 32, info->seed);
	put_le64(out->p + 40, info->capacity);
	d = info->error_rate;
	memcpy(&u, &d, 8);
	put_le64(out->p + 48, u);
	put_le64(out->p + 64, info->expire_ms);
	put_le64(out->p + 72, created);
	for (uint32_t i = 0; i < info->nslices; i++, at += SLICE_ENTRY) {
		unsigned char *e = out->p + at;

		put_le64(e, sl[i].bloom.nblocks);
		put_le32(e + 8, sl[i].bloom.hashes);
		put_le64(e + 16, sl[i].capacity);
		d = sl[i].error_rate;
		memcpy(&u, &d, 8);
		put_le64(e + 24, u);
		put_le64(e + 32, sl[i].count);
		put_le64(e + 40, sl[i].bits_set);
		put_le64(e + 48, (uint64_t)sl[i].start_ms);
		count += sl[i].count;
	}
	put_le64(out->p + 56, count);
	for (uint32_t i = 0; i < info->nslices; i++) {
		memcpy(out->p + at, sl[i].bloom.words, bloom_bytes(&sl[i].bloom));
		at += bloom_bytes(&sl[i].bloom);
	}
	reseal(out);
}

/* Every field of every loaded slice as written, and every key there. */
static void
check_loaded(const struct snapshot_slice *want,
    const struct snapshot_slice *got, uint32_t n, const char *what)
{
	uint32_t	 bad = 0, missing = 0;
	char		 k[96];

	for (uint32_t i = 0; i < n; i++) {
		const struct snapshot_slice *a = &want[i], *b = &got[i];

		if (b->merged != a->merged || b->seed != a->seed ||
		    b->bloom.seed != (a->merged ? a->seed : OWN_SEED) ||
		    b->bloom.nblocks != a->bloom.nblocks ||
		    b->bloom.hashes != a->bloom.hashes ||
		    b->capacity != a->capacity ||
		    b->error_rate != a->error_rate ||
		    b->start_ms != a->start_ms || b->count != a->count ||
		    b->bits_set != a->bits_set || b->bloom.count != a->count ||
		    b->bloom.bits_set != a->bits_set ||
		    memcmp(b->bloom.words, a->bloom.words,
		    bloom_bytes(&a->bloom)) != 0) {
			bad++;
			continue;
		}
		for (int j = 0; j < 200; j++) {
			key(k, sizeof(k), MTAG[i], (uint64_t)j);
			missing += !bloom_check(&b->bloom, bloom_hash(&b->bloom,
			    k, strlen(k)));
		}
	}
	ok(bad == 0, "%s: merged, seed, shape, counts, start, bits of every "
	    "slice round-trip (%u differ)", what, bad);
	ok(missing == 0, "%s: every key in its slice, hashed with its seed "
	    "(%u missing)", what, missing);
}

/* 2 own + 2 merged slices: version 3, every field back; the one-slice
 * loader refuses it. */
static void
test_merged_round_trip(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl[NMERGED], *got = NULL;
	struct bloom		 b;
	struct buf		 f;
	char			 path[512];
	int			 rc, fd, entries_ok = 1;

	merged_set(&info, sl, 1);
	rc = snapshot_write_slices(dir, "merged", &info, sl, err, sizeof(err));
	ok(rc == 0, "merged: write (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "merged");
	if (rc != 0 || slurp(path, &f) == -1) {
		merged_free(sl);
		return;
	}
	for (int i = 0; i < NMERGED; i++) {
		const unsigned char *e = f.p + ENTRY + i * SLICE_ENTRY;

		entries_ok &= get_le32(e + 12) == (i >= 2 ? 1u : 0u) &&
		    get_le64(e + 56) == sl[i].seed;
	}
	ok(get_le32(f.p + 8) == 3, "merged: the file is version 3 (%u)",
	    get_le32(f.p + 8));
	ok(entries_ok, "merged: entries' flags (+12) and seeds (+56) as "
	    "snapshot.h says");
	free(f.p);

	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1, "merged: load (%s)", rc == 1 ? "ok" : err);
	if (rc == 1) {
		ok(back.version == 3 && back.nslices == NMERGED &&
		    back.seed == OWN_SEED && back.growth == 2 &&
		    back.expire_ms == 3600000 && back.count == sl[0].count +
		    sl[1].count + sl[2].count + sl[3].count &&
		    back.hashes == sl[1].bloom.hashes,
		    "merged: header (version 3, 4 slices, count, newest own "
		    "slice's hashes)");
		check_loaded(sl, got, NMERGED, "merged");
		snapshot_slices_free(got, back.nslices);
	}

	fd = open(path, O_RDONLY);
	memset(&back, 0, sizeof(back));
	rc = snapshot_verify_fd(fd, &back, err, sizeof(err));
	close(fd);
	ok(rc == 0 && back.version == 3 && back.nslices == NMERGED,
	    "merged: verify_fd (--inspect) accepts version 3 (%s)",
	    rc == 0 ? "ok" : err);

	memset(&b, 0, sizeof(b));
	rc = snapshot_load(path, CAP, RATE, &b, NULL, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 2 is merged") != NULL &&
	    strstr(err, path) != NULL && b.words == NULL,
	    "merged: the one-slice loader refuses it (%s)", err);

	/* a window of no own slice left: one merged slice alone */
	info.nslices = 1;
	rc = snapshot_write_slices(dir, "monly", &info, &sl[2], err,
	    sizeof(err));
	snapshot_path(path, sizeof(path), dir, "monly");
	rc = rc == 0 ? snapshot_load_slices(path, CAP, RATE, &back, &got,
	    err, sizeof(err)) : -1;
	ok(rc == 1 && back.version == 3 && back.nslices == 1 &&
	    got[0].merged && got[0].seed == sl[2].seed &&
	    got[0].bloom.seed == sl[2].seed,
	    "merged: a filter of one merged slice and no own loads (%s)",
	    rc == 1 ? "ok" : err);
	if (rc == 1)
		snapshot_slices_free(got, back.nslices);
	rc = snapshot_load(path, CAP, RATE, &b, NULL, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 0 is merged") != NULL,
	    "merged: the one-slice loader refuses a lone merged slice (%s)",
	    err);
	merged_free(sl);
}

/* No merged slice: version 2, byte for byte what the writer made before
 * version 3, stray seeds on own slices not written. */
static void
test_merged_none_is_v2(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl[NMERGED], *got = NULL;
	struct buf		 f, want;
	char			 path[512];
	int			 rc, zero = 1;

	merged_set(&info, sl, 0);
	sl[1].seed = 0x1234;	/* not merged: must not reach the file */
	rc = snapshot_write_slices(dir, "own4", &info, sl, err, sizeof(err));
	snapshot_path(path, sizeof(path), dir, "own4");
	if (rc != 0 || slurp(path, &f) == -1) {
		ok(0, "no merged: write (%s)", err);
		merged_free(sl);
		return;
	}
	for (int i = 0; i < NMERGED; i++) {
		const unsigned char *e = f.p + ENTRY + i * SLICE_ENTRY;

		zero &= get_le32(e + 12) == 0 && get_le64(e + 56) == 0;
	}
	ok(get_le32(f.p + 8) == 2 && zero,
	    "no merged: version 2, every entry's reserved fields zero");
	expect_v2(&info, sl, get_le64(f.p + 72), &want);
	ok(f.len == want.len && memcmp(f.p, want.p, f.len) == 0,
	    "no merged: byte-identical to the version 2 layout (%zu bytes)",
	    f.len);
	sl[1].seed = 0;
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1 && back.version == 2, "no merged: loads as version 2 (%s)",
	    rc == 1 ? "ok" : err);
	if (rc == 1) {
		check_loaded(sl, got, NMERGED, "no merged");
		snapshot_slices_free(got, back.nslices);
	}
	free(want.p);
	free(f.p);
	merged_free(sl);
}

/* An own slice after a merged one is never written: the old file stays. */
static void
test_merged_write_order(void)
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NMERGED], keep;
	struct buf		 before;
	char			 path[512], tmp[512];
	int			 rc;

	merged_set(&info, sl, 1);
	snapshot_path(path, sizeof(path), dir, "order");
	snprintf(tmp, sizeof(tmp), "%s/.order.bloom.tmp", dir);
	if (snapshot_write_slices(dir, "order", &info, sl, err,
	    sizeof(err)) == -1 || slurp(path, &before) == -1) {
		ok(0, "write order: setup (%s)", err);
		merged_free(sl);
		return;
	}
	keep = sl[1], sl[1] = sl[2], sl[2] = keep;
	rc = snapshot_write_slices(dir, "order", &info, sl, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 2 is the filter's own after a "
	    "merged slice") != NULL, "write order: own after merged refused "
	    "(%s)", err);
	ok(same_file(path, &before) && !exists(tmp),
	    "write order: the old snapshot untouched, no tmp file");
	free(before.p);
	merged_free(sl);
}

/*
 * The 2 own + 2 merged file (or, own4, the 4 own one) with mutate applied
 * and the checksum recomputed: refused for the field with a message
 * containing want and the path, by the loader and by verify_fd, the file
 * untouched; want NULL: it loads, and check (if any) judges the slices.
 */
static void
damage3(const char *what, int own4, void (*mutate)(struct buf *),
    const char *want, void (*check)(const struct snapshot_info *,
    const struct snapshot_slice *, const char *))
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NMERGED], *got = NULL;
	struct buf		 f;
	char			 path[512], verr[512];
	int			 rc, vrc, fd;

	merged_set(&info, sl, !own4);
	snapshot_path(path, sizeof(path), dir, "dmg3");
	rc = snapshot_write_slices(dir, "dmg3", &info, sl, err, sizeof(err));
	merged_free(sl);
	if (rc == -1 || slurp(path, &f) == -1) {
		ok(0, "%s: setup: %s", what, err);
		return;
	}
	mutate(&f);
	reseal(&f);
	spit(path, f.p, f.len);
	err[0] = '\0';
	rc = snapshot_load_slices(path, CAP, RATE, &info, &got, err,
	    sizeof(err));
	fd = open(path, O_RDONLY);
	vrc = snapshot_verify_fd(fd, NULL, verr, sizeof(verr));
	close(fd);
	if (want == NULL) {
		ok(rc == 1 && vrc == 0, "%s: loads (%s)", what,
		    rc == 1 ? "ok" : err);
		if (rc == 1 && check != NULL)
			check(&info, got, what);
		if (rc == 1)
			snapshot_slices_free(got, info.nslices);
	} else {
		ok(rc == -1 && strstr(err, want) != NULL &&
		    strstr(err, path) != NULL && strstr(err, "checksum") ==
		    NULL, "%s: refused (%s)", what, err);
		ok(vrc == -1 && strstr(verr, want) != NULL,
		    "%s: verify_fd refuses it alike", what);
	}
	ok(same_file(path, &f), "%s: file left unchanged", what);
	free(f.p);
}

#define SE3(i, x)	(f->p + ENTRY + (i) * SLICE_ENTRY + (x))
static void m3_flags2(struct buf *f) { put_le32(SE3(0, 12), 2); }
static void m3_flags3(struct buf *f) { put_le32(SE3(2, 12), 3); }
static void m3_flagshi(struct buf *f) { put_le32(SE3(3, 12), 0x80000001u); }
static void m3_ownseed(struct buf *f) { put_le64(SE3(1, 56), 7); }
static void m3_ownlast(struct buf *f)
{
	put_le32(SE3(3, 12), 0);
	put_le64(SE3(3, 56), 0);
}
static void m3_mergedfirst(struct buf *f)
{
	put_le32(SE3(0, 12), 1);
	put_le64(SE3(0, 56), 5);
}
static void m3_version4(struct buf *f) { put_le32(f->p + 8, 4); }
static void m3_version0(struct buf *f) { put_le32(f->p + 8, 0); }
static void m3_as_v3(struct buf *f) { put_le32(f->p + 8, 3); }
static void m3_as_v2(struct buf *f) { put_le32(f->p + 8, 2); }
/* merged with seed 0: a seed like any other */
static void m3_mseed0(struct buf *f) { put_le64(SE3(2, 56), 0); }

static void
all_own(const struct snapshot_info *info, const struct snapshot_slice *sl,
    const char *what)
{
	int own = 1;

	for (uint32_t i = 0; i < info->nslices; i++)
		own &= !sl[i].merged && sl[i].seed == 0 &&
		    sl[i].bloom.seed == OWN_SEED;
	ok(own, "%s: every slice the filter's own, with its seed", what);
}

static void
mseed0(const struct snapshot_info *info, const struct snapshot_slice *sl,
    const char *what)
{
	ok(info->version == 3 && sl[2].merged && sl[2].seed == 0 &&
	    sl[2].bloom.seed == 0 && sl[3].merged,
	    "%s: slice 2 merged with seed 0", what);
}

/* Version 3 seeds: n slices of merged_set (from first), fixed creation
 * time, checksum recomputed, then mutate (not resealed: the fuzz target
 * reseals every input itself). */
static void
write_seed_merged(const char *out, const char *file, uint32_t first,
    uint32_t n, void (*mutate)(struct buf *))
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NMERGED];
	struct buf		 f;
	char			 path[512], dst[1024];

	merged_set(&info, sl, 1);
	info.nslices = n;
	snapshot_path(path, sizeof(path), dir, "seed3");
	if (snapshot_write_slices(dir, "seed3", &info, sl + first, err,
	    sizeof(err)) == -1 || slurp(path, &f) == -1) {
		fprintf(stderr, "seed %s: %s\n", file, err);
		exit(1);
	}
	merged_free(sl);
	put_le64(f.p + 72, 1700000000);
	reseal(&f);
	if (mutate != NULL)
		mutate(&f);
	snprintf(dst, sizeof(dst), "%s/%s", out, file);
	if (spit(dst, f.p, f.len) == -1) {
		perror(dst);
		exit(1);
	}
	free(f.p);
}

static void
write_corpus_merged(const char *out)
{
	write_seed_merged(out, "v3-2own-2merged", 0, NMERGED, NULL);
	write_seed_merged(out, "v3-merged-only", 2, 2, NULL);
	write_seed_merged(out, "damaged-v3-flags", 0, NMERGED, m3_flags3);
	write_seed_merged(out, "damaged-v3-own-last", 0, NMERGED, m3_ownlast);
	write_seed_merged(out, "damaged-v3-own-seed", 0, NMERGED, m3_ownseed);
}

static void
test_merged_damage(void)
{
	damage3("v3: flags 2 on an own slice", 0, m3_flags2,
	    "slice 0: bad flags 0x2 (only bit 0, merged, is defined): file "
	    "damaged", NULL);
	damage3("v3: flags 3 on a merged slice", 0, m3_flags3,
	    "slice 2: bad flags 0x3", NULL);
	damage3("v3: flags with the top bit", 0, m3_flagshi,
	    "slice 3: bad flags 0x80000001", NULL);
	damage3("v3: an own slice with a seed", 0, m3_ownseed,
	    "slice 1: not merged but with a seed (0x0000000000000007): file "
	    "damaged", NULL);
	damage3("v3: an own slice after a merged one", 0, m3_ownlast,
	    "slice 3: the filter's own after merged slice 2 (merged slices "
	    "come last): file damaged", NULL);
	damage3("v3: a merged slice before the own ones", 0, m3_mergedfirst,
	    "slice 1: the filter's own after merged slice 0", NULL);
	/* version 4 is a cuckoo filter's: its layout differs */
	damage3("v3 file relabelled version 4", 0, m3_version4,
	    "unknown layout 1 for a cuckoo filter", NULL);
	damage3("v3 file relabelled version 0", 0, m3_version0,
	    "unsupported snapshot version 0", NULL);
	damage3("v3: a merged slice of seed 0", 0, m3_mseed0, NULL, mseed0);
	damage3("v2 file relabelled version 3", 1, m3_as_v3, NULL, all_own);
	/* version 2 reads as before version 3: the reserved fields are not
	 * read, every slice is the filter's own */
	damage3("v3 file relabelled version 2", 0, m3_as_v2, NULL, all_own);
}

/* ---- cuckoo filters: version 4 ---- */

#define CF_SEED		0xc0ffee5eedc0ffeeULL
#define NCF		4
#define CF_JSEQ		0x0102030405060708ULL
#define CF_JOFF		123456789ULL
#define CF_KICKS	77u
#define CF_FORGOTTEN	4242ULL

/* Slice i: CF_NB[i] buckets of CF_BITS[i]-bit fingerprints (odd and even
 * widths, bucket counts that are not powers of two) holding CF_KEYS[i]
 * keys "cfI/J"; the last one empty. */
static const uint64_t CF_NB[NCF] = { 300, 611, 1000, 77 };
static const uint32_t CF_BITS[NCF] = { 7, 12, 16, 9 };
static const uint64_t CF_KEYS[NCF] = { 900, 2000, 3000, 0 };
static const double CF_RATES[NCF] = { 0.002, 0.0016, 0.00128, 0.001024 };

static void
cf_key(char *buf, size_t len, int slice, uint64_t j)
{
	char tag[8];

	snprintf(tag, sizeof(tag), "cf%d", slice);
	key(buf, len, tag, j);
}

/* A cuckoo filter's capture: NCF slices of cuckoo_init'd tables. */
static void
cuckoo_set(struct snapshot_info *info, struct snapshot_slice sl[NCF])
{
	char k[96];

	memset(info, 0, sizeof(*info));
	memset(sl, 0, NCF * sizeof(*sl));
	info->cuckoo = 1;
	info->nslices = NCF;
	info->seed = CF_SEED;
	info->capacity = CAP;
	info->error_rate = RATE;
	info->growth = 2;
	info->jseq = CF_JSEQ;
	info->joff = CF_JOFF;
	info->max_kicks = CF_KICKS;
	info->forgotten = CF_FORGOTTEN;
	for (int i = 0; i < NCF; i++) {
		struct cuckoo *c = &sl[i].cuckoo;

		if (cuckoo_init(c, CF_NB[i], CF_BITS[i], CF_SEED) == -1) {
			perror("cuckoo_init");
			exit(2);
		}
		for (uint64_t j = 0; j < CF_KEYS[i]; j++) {
			cf_key(k, sizeof(k), i, j);
			if (cuckoo_add(c, cuckoo_hash(c, k, strlen(k))) == -1) {
				fprintf(stderr, "cuckoo_add: slice %d full at "
				    "%llu\n", i, (unsigned long long)j);
				exit(2);
			}
		}
		sl[i].capacity = CAP << i;
		sl[i].error_rate = CF_RATES[i];
		sl[i].start_ms = 1700000000000LL + i * 1000;
		sl[i].count = c->count;
	}
}

static void
cuckoo_set_free(struct snapshot_slice *sl, int n)
{
	for (int i = 0; i < n; i++)
		cuckoo_free(&sl[i].cuckoo);
}

/* Bytes of the file cuckoo_set's slices [first, first + n) make. */
static uint64_t
cuckoo_file_size(const struct snapshot_slice *sl, int n)
{
	uint64_t size = SNAPSHOT_HEADER_SIZE + (uint64_t)n * SLICE_ENTRY + 8;

	for (int i = 0; i < n; i++)
		size += cuckoo_table_bytes(&sl[i].cuckoo);
	return size;
}

static uint64_t
dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* The file's fields as snapshot.h describes version 4. */
static void
check_v4_bytes(const struct buf *f, const struct snapshot_info *info,
    const struct snapshot_slice *sl)
{
	uint64_t	 at, count = 0;
	int		 entries = 1, tables = 1, reserved = 1;

	at = SNAPSHOT_HEADER_SIZE + (uint64_t)info->nslices * SLICE_ENTRY;
	for (uint32_t i = 0; i < info->nslices; i++) {
		const unsigned char *e = f->p + ENTRY + i * SLICE_ENTRY;
		uint64_t len = cuckoo_table_bytes(&sl[i].cuckoo);

		entries &= get_le64(e) == sl[i].cuckoo.nbuckets &&
		    get_le32(e + 8) == sl[i].cuckoo.fpbits &&
		    get_le32(e + 12) == 0 && get_le64(e + 16) ==
		    sl[i].capacity && get_le64(e + 24) ==
		    dbits(sl[i].error_rate) && get_le64(e + 32) ==
		    sl[i].count && get_le64(e + 40) == 0 &&
		    get_le64(e + 48) == (uint64_t)sl[i].start_ms &&
		    get_le64(e + 56) == 0;
		tables &= at + len <= f->len &&
		    memcmp(f->p + at, sl[i].cuckoo.table, len) == 0;
		at += len;
		count += sl[i].count;
	}
	for (int b = 0; b < 4; b++)
		reserved &= f->p[100 + b] == 0 && f->p[24 + b] == 0;
	for (int b = 112; b < SNAPSHOT_HEADER_SIZE; b++)
		reserved &= f->p[b] == 0;
	ok(memcmp(f->p, SNAPSHOT_MAGIC, 8) == 0 && get_le32(f->p + 8) == 4 &&
	    get_le32(f->p + 12) == CUCKOO_LAYOUT_PACKED4 &&
	    CUCKOO_LAYOUT_PACKED4 == 2 && get_le32(f->p + 16) ==
	    info->nslices && get_le32(f->p + 20) == info->growth &&
	    get_le32(f->p + 28) == SNAPSHOT_HEADER_SIZE &&
	    get_le64(f->p + 32) == info->seed && get_le64(f->p + 40) ==
	    info->capacity && get_le64(f->p + 48) == dbits(info->error_rate) &&
	    get_le64(f->p + 56) == count && get_le64(f->p + 64) == 0,
	    "v4 bytes: version 4, layout 2, slices, growth, seed, capacity, "
	    "rate and the slices' count in the header");
	ok(get_le64(f->p + 80) == info->jseq && get_le64(f->p + 88) ==
	    info->joff && get_le32(f->p + 96) == info->max_kicks &&
	    get_le64(f->p + 104) == info->forgotten && reserved,
	    "v4 bytes: jseq at 80, joff at 88, max_kicks at 96, forgotten at "
	    "104, the reserved bytes zero");
	ok(entries, "v4 bytes: each entry's nbuckets, fingerprint bits, zero "
	    "flags, capacity, rate, count, zero +40, start, zero +56");
	ok(tables && at + 8 == f->len, "v4 bytes: the tables, "
	    "cuckoo_table_bytes each, in order, then the trailer (%zu bytes)",
	    f->len);
	ok(get_le64(f->p + f->len - 8) == XXH3_64bits(f->p, f->len - 8),
	    "v4 bytes: the trailer is XXH3-64 of the rest");
}

/* Every field of every loaded cuckoo slice as written, and every key. */
static void
check_cuckoo_loaded(const struct snapshot_slice *want,
    const struct snapshot_slice *got, uint32_t n, int first,
    const char *what)
{
	uint32_t	 bad = 0;
	uint64_t	 missing = 0, keys = 0;
	char		 k[96];

	for (uint32_t i = 0; i < n; i++) {
		const struct snapshot_slice	*a = &want[i], *b = &got[i];
		const struct cuckoo		*c = &b->cuckoo;

		if (c->table == NULL || b->bloom.words != NULL || b->merged ||
		    b->seed != 0 || c->nbuckets != a->cuckoo.nbuckets ||
		    c->fpbits != a->cuckoo.fpbits || c->seed != CF_SEED ||
		    c->count != a->count || b->count != a->count ||
		    cuckoo_recount(c) != a->count ||
		    b->capacity != a->capacity ||
		    b->error_rate != a->error_rate ||
		    b->start_ms != a->start_ms ||
		    memcmp(c->table, a->cuckoo.table,
		    cuckoo_table_bytes(&a->cuckoo)) != 0) {
			bad++;
			continue;
		}
		for (uint64_t j = 0; j < CF_KEYS[first + i]; j++) {
			cf_key(k, sizeof(k), first + (int)i, j);
			missing += !cuckoo_contains(c, cuckoo_hash(c, k,
			    strlen(k)));
			keys++;
		}
	}
	ok(bad == 0, "%s: every slice's table bytes, shape, seed, count, "
	    "capacity, rate and start as written (%u differ)", what, bad);
	ok(missing == 0, "%s: all %llu keys found in their slices (%llu "
	    "missing)", what, (unsigned long long)keys,
	    (unsigned long long)missing);
}

/*
 * A cuckoo filter partitioned by slot (layout 4): keys of a few slots'
 * ranges written with the rest of the table as holes, loaded back in
 * ranges with every key; a table not cut in ranges is refused.
 */
static void
test_cuckoo_slots_round_trip(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl[1], *got = NULL;
	struct stat		 sb;
	struct buf		 f;
	char			 path[512], k[96];
	int			 rc, lost = 0;
	uint64_t		 h;

	memset(&info, 0, sizeof(info));
	memset(sl, 0, sizeof(sl));
	info.cuckoo = 1;
	info.slot_major = 1;
	info.nslices = 1;
	info.seed = CF_SEED;
	info.capacity = CAP;
	info.error_rate = RATE;
	if (cuckoo_init_ranges(&sl[0].cuckoo, 64 * CUCKOO_RANGES, 12, CF_SEED,
	    CUCKOO_RANGES) == -1) {
		perror("cuckoo_init_ranges");
		exit(2);
	}
	/* 600 keys of slots 100..105: their ranges alone hold them */
	for (int j = 0; j < 600; j++) {
		snprintf(k, sizeof(k), "https://slots.example/%d", j);
		h = XXH3_64bits_withSeed(k, strlen(k), CF_SEED);
		h = (uint64_t)(100 + j % 6) << (64 - CUCKOO_RANGE_BITS) |
		    (h & (UINT64_MAX >> CUCKOO_RANGE_BITS));
		if (cuckoo_add(&sl[0].cuckoo, h) == -1)
			lost++;
	}
	sl[0].capacity = CAP;
	sl[0].error_rate = RATE;
	sl[0].start_ms = 1700000000000LL;
	sl[0].count = sl[0].cuckoo.count;
	ok(lost == 0 && sl[0].count == 600, "layout 4: 600 keys in six "
	    "slots' ranges");
	rc = snapshot_write_slices(dir, "cfslots", &info, sl, err,
	    sizeof(err));
	ok(rc == 0, "layout 4: write (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "cfslots");
	if (rc != 0 || slurp(path, &f) == -1) {
		cuckoo_free(&sl[0].cuckoo);
		return;
	}
	ok(get_le32((unsigned char *)f.p + 12) == CUCKOO_LAYOUT_SLOTS &&
	    get_le32((unsigned char *)f.p + 8) == 4, "layout 4: version 4, "
	    "layout 4 in the header");
	ok(stat(path, &sb) == 0 && (uint64_t)sb.st_blocks * 512 <
	    cuckoo_table_bytes(&sl[0].cuckoo) / 4, "layout 4: the ranges "
	    "holding nothing are holes (%lld bytes on disk of a %llu-byte "
	    "table)", (long long)sb.st_blocks * 512,
	    (unsigned long long)cuckoo_table_bytes(&sl[0].cuckoo));
	memset(&back, 0, sizeof(back));
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1 && back.slot_major && back.layout == CUCKOO_LAYOUT_SLOTS,
	    "layout 4: loads partitioned (%s)", rc == 1 ? "ok" : err);
	if (rc == 1) {
		struct cuckoo *c = &got[0].cuckoo;

		lost = 0;
		for (int j = 0; j < 600; j++) {
			snprintf(k, sizeof(k), "https://slots.example/%d", j);
			h = XXH3_64bits_withSeed(k, strlen(k), CF_SEED);
			h = (uint64_t)(100 + j % 6) << (64 -
			    CUCKOO_RANGE_BITS) | (h & (UINT64_MAX >>
			    CUCKOO_RANGE_BITS));
			lost += !cuckoo_contains(c, h);
		}
		ok(cuckoo_ranged(c) && c->per == 64 && c->count == 600 &&
		    lost == 0 && cuckoo_range_count(c, 100, 6) == 600,
		    "layout 4: the table back in ranges, every key in its "
		    "slot's range");
		snapshot_slices_free(got, 1);
	}
	/* nbuckets 64 * 16384 + 2: not cut in ranges */
	put_le64((unsigned char *)f.p + 128, 64 * CUCKOO_RANGES + 2);
	reseal(&f);
	if (spit(path, f.p, f.len) == 0) {
		memset(&back, 0, sizeof(back));
		rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
		    sizeof(err));
		ok(rc == -1 && strstr(err, "not an even number for each of "
		    "16384 slots") != NULL, "layout 4: a table not cut in "
		    "ranges is refused: %s", err);
	}
	free(f.p);
	cuckoo_free(&sl[0].cuckoo);
}

static void
test_cuckoo_round_trip(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl[NCF], *got = NULL;
	struct buf		 f, f2;
	char			 path[512], path2[512];
	uint64_t		 count = 0, bytes = 0;
	int			 rc, fd;

	cuckoo_set(&info, sl);
	for (int i = 0; i < NCF; i++) {
		count += sl[i].count;
		bytes += cuckoo_table_bytes(&sl[i].cuckoo);
	}
	ok(sl[0].count == 900 && sl[1].count == 2000 && sl[2].count == 3000 &&
	    sl[3].count == 0, "v4: 4 tables of 7, 12, 16 and 9-bit "
	    "fingerprints hold 900, 2000, 3000 and 0 keys");
	rc = snapshot_write_slices(dir, "cf4", &info, sl, err, sizeof(err));
	ok(rc == 0, "v4: write (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "cf4");
	if (rc != 0 || slurp(path, &f) == -1) {
		cuckoo_set_free(sl, NCF);
		return;
	}
	ok(f.len == cuckoo_file_size(sl, NCF), "v4: %zu bytes: header, 4 "
	    "entries, the tables and the trailer", f.len);
	check_v4_bytes(&f, &info, sl);

	memset(&back, 0, sizeof(back));
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1, "v4: load (%s)", rc == 1 ? "ok" : err);
	if (rc == 1) {
		ok(back.version == 4 && back.cuckoo == 1 &&
		    back.layout == CUCKOO_LAYOUT_PACKED4 &&
		    back.nslices == NCF && back.seed == CF_SEED &&
		    back.growth == 2 && back.expire_ms == 0 &&
		    back.capacity == CAP && back.error_rate == RATE &&
		    back.count == count && back.array_bytes == bytes,
		    "v4: header back (version 4, cuckoo, layout 2, %u slices, "
		    "seed, growth, count %llu, %llu table bytes)", back.nslices,
		    (unsigned long long)back.count,
		    (unsigned long long)back.array_bytes);
		ok(back.jseq == CF_JSEQ && back.joff == CF_JOFF &&
		    back.max_kicks == CF_KICKS &&
		    back.forgotten == CF_FORGOTTEN, "v4: the journal position "
		    "(jseq, joff), max_kicks and forgotten back");
		check_cuckoo_loaded(sl, got, NCF, 0, "v4");

		/* the loaded slices written again: the same bytes */
		back.nslices = NCF;
		rc = snapshot_write_slices(dir, "cf4again", &back, got, err,
		    sizeof(err));
		snapshot_path(path2, sizeof(path2), dir, "cf4again");
		if (rc == 0 && slurp(path2, &f2) == 0) {
			memcpy(f2.p + 72, f.p + 72, 8);	/* creation time */
			reseal(&f2);
			ok(f2.len == f.len && memcmp(f2.p, f.p, f.len) == 0,
			    "v4: the loaded filter written again is the same "
			    "file, byte for byte");
			free(f2.p);
		} else
			ok(0, "v4: write the loaded slices (%s)", err);
		snapshot_slices_free(got, NCF);
	}

	fd = open(path, O_RDONLY);
	memset(&back, 0, sizeof(back));
	rc = snapshot_verify_fd(fd, &back, err, sizeof(err));
	close(fd);
	ok(rc == 0 && back.version == 4 && back.cuckoo && back.nslices == NCF &&
	    back.jseq == CF_JSEQ && back.joff == CF_JOFF &&
	    back.forgotten == CF_FORGOTTEN, "v4: verify_fd (--inspect) "
	    "accepts it, with the cuckoo fields (%s)", rc == 0 ? "ok" : err);

	rc = snapshot_load_slices(path, 2 * CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == -1 && strstr(err, "made for capacity=1000") != NULL,
	    "v4: other settings refused (%s)", err);

	/* one slice, from the middle of the set */
	info.nslices = 1;
	rc = snapshot_write_slices(dir, "cf1", &info, &sl[1], err, sizeof(err));
	snapshot_path(path2, sizeof(path2), dir, "cf1");
	rc = rc == 0 ? snapshot_load_slices(path2, CAP, RATE, &back, &got, err,
	    sizeof(err)) : -1;
	ok(rc == 1 && back.cuckoo && back.nslices == 1 &&
	    back.count == sl[1].count, "v4: a one-slice cuckoo filter round "
	    "trips (%s)", rc == 1 ? "ok" : err);
	if (rc == 1) {
		check_cuckoo_loaded(&sl[1], got, 1, 1, "v4 one slice");
		snapshot_slices_free(got, back.nslices);
	}

	/* no slice: still a cuckoo filter's file */
	info.nslices = 0;
	rc = snapshot_write_slices(dir, "cf0", &info, sl, err, sizeof(err));
	snapshot_path(path2, sizeof(path2), dir, "cf0");
	rc = rc == 0 ? snapshot_load_slices(path2, CAP, RATE, &back, &got, err,
	    sizeof(err)) : -1;
	ok(rc == 1 && back.version == 4 && back.cuckoo && back.nslices == 0 &&
	    back.count == 0 && back.jseq == CF_JSEQ && back.forgotten ==
	    CF_FORGOTTEN, "v4: zero slices round trip as a cuckoo filter "
	    "(%s)", rc == 1 ? "ok" : err);
	if (rc == 1)
		snapshot_slices_free(got, 0);
	free(f.p);
	cuckoo_set_free(sl, NCF);
}

/* A slice of another type, or a merged one, is never written into a
 * cuckoo filter's file (nor a cuckoo slice into a bloom filter's): the old
 * file stays. */
static void
test_cuckoo_write_refused(void)
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NCF], keep;
	struct buf		 before;
	char			 path[512], tmp[512];
	int			 rc;

	cuckoo_set(&info, sl);
	snapshot_path(path, sizeof(path), dir, "cfmix");
	snprintf(tmp, sizeof(tmp), "%s/.cfmix.bloom.tmp", dir);
	if (snapshot_write_slices(dir, "cfmix", &info, sl, err,
	    sizeof(err)) == -1 || slurp(path, &before) == -1) {
		ok(0, "v4 mix: setup (%s)", err);
		cuckoo_set_free(sl, NCF);
		return;
	}
	keep = sl[2];
	memset(&sl[2], 0, sizeof(sl[2]));
	if (bloom_create(&sl[2].bloom, CAP, RATE, CF_SEED) == -1) {
		perror("bloom_create");
		exit(2);
	}
	sl[2].capacity = CAP;
	sl[2].error_rate = RATE;
	rc = snapshot_write_slices(dir, "cfmix", &info, sl, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 2 is not of the filter's type") !=
	    NULL, "v4 mix: a bloom slice in a cuckoo filter is refused at "
	    "write (%s)", err);
	ok(same_file(path, &before) && !exists(tmp), "v4 mix: the old file "
	    "untouched, no tmp file");
	bloom_free(&sl[2].bloom);
	sl[2] = keep;

	info.cuckoo = 0;
	rc = snapshot_write_slices(dir, "cfmix", &info, sl, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 0 is not of the filter's type") !=
	    NULL && same_file(path, &before) && !exists(tmp),
	    "v4 mix: cuckoo slices in a bloom filter are refused too (%s)",
	    err);
	info.cuckoo = 1;

	sl[3].merged = 1;
	sl[3].seed = 5;
	rc = snapshot_write_slices(dir, "cfmix", &info, sl, err, sizeof(err));
	ok(rc == -1 && strstr(err, "slice 3 is not of the filter's type") !=
	    NULL && same_file(path, &before) && !exists(tmp),
	    "v4 mix: a merged slice in a cuckoo filter is refused (%s)", err);
	sl[3].merged = 0;
	sl[3].seed = 0;
	free(before.p);
	cuckoo_set_free(sl, NCF);
}

/*
 * cuckoo_set's file with mutate applied (and the checksum recomputed when
 * seal, so that the field is refused for itself): refused by the loader
 * with a message holding want and the path, by verify_fd too when
 * verify (it does not read the tables' slots), the file untouched.
 */
static void
damage4(const char *what, void (*mutate)(struct buf *), int seal,
    const char *want, int verify)
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NCF], *got = NULL;
	struct buf		 f;
	char			 path[512], verr[512];
	int			 rc, vrc, fd;

	cuckoo_set(&info, sl);
	snapshot_path(path, sizeof(path), dir, "dmg4");
	rc = snapshot_write_slices(dir, "dmg4", &info, sl, err, sizeof(err));
	cuckoo_set_free(sl, NCF);
	if (rc == -1 || slurp(path, &f) == -1) {
		ok(0, "%s: setup: %s", what, err);
		return;
	}
	mutate(&f);
	if (seal)
		reseal(&f);
	spit(path, f.p, f.len);
	err[0] = verr[0] = '\0';
	rc = snapshot_load_slices(path, CAP, RATE, &info, &got, err,
	    sizeof(err));
	fd = open(path, O_RDONLY);
	vrc = snapshot_verify_fd(fd, NULL, verr, sizeof(verr));
	close(fd);
	ok(rc == -1 && got == NULL && strstr(err, want) != NULL &&
	    strstr(err, path) != NULL && (!seal ||
	    strstr(err, "checksum") == NULL), "%s: refused (%s)", what, err);
	if (verify)
		ok(vrc == -1 && strstr(verr, want) != NULL,
		    "%s: verify_fd refuses it alike", what);
	else
		ok(vrc == 0, "%s: verify_fd, which reads no slot, passes it "
		    "(%s)", what, vrc == 0 ? "ok" : verr);
	ok(same_file(path, &f), "%s: file left unchanged", what);
	if (rc == 1)
		snapshot_slices_free(got, info.nslices);
	free(f.p);
}

/* the offset of slice i's table in cuckoo_set's file */
static size_t
table_at(int i)
{
	size_t at = SNAPSHOT_HEADER_SIZE + NCF * SLICE_ENTRY;

	for (int j = 0; j < i; j++)
		at += (size_t)cuckoo_table_bytes_for(CF_NB[j], CF_BITS[j]);
	return at;
}

#define SE4(i, x)	(f->p + ENTRY + (i) * SLICE_ENTRY + (x))
static void m4_fp6(struct buf *f) { put_le32(SE4(0, 8), 6); }
static void m4_fp17(struct buf *f) { put_le32(SE4(2, 8), 17); }
static void m4_fp0(struct buf *f) { put_le32(SE4(3, 8), 0); }
static void m4_nb0(struct buf *f) { put_le64(SE4(1, 0), 0); }
static void m4_nbbig(struct buf *f) { put_le64(SE4(0, 0), 1ULL << 40); }
static void m4_nb78(struct buf *f) { put_le64(SE4(3, 0), 78); }
static void m4_over(struct buf *f) { put_le64(SE4(1, 32), 611 * 4 + 1); }
static void m4_less(struct buf *f) { put_le64(SE4(0, 32), 899); }
static void m4_more(struct buf *f) { put_le64(SE4(3, 32), 1); }
static void m4_flags1(struct buf *f) { put_le32(SE4(0, 12), 1); }
static void m4_flagshi(struct buf *f) { put_le32(SE4(3, 12), 0x80000000u); }
static void m4_bits(struct buf *f) { put_le64(SE4(1, 40), 1); }
static void m4_seed(struct buf *f) { put_le64(SE4(2, 56), 5); }
static void m4_cap0(struct buf *f) { put_le64(SE4(0, 16), 0); }
static void m4_rate(struct buf *f) { put_le64(SE4(1, 24), dbits(1.5)); }
static void m4_start(struct buf *f) { put_le64(SE4(2, 48), UINT64_MAX); }
static void m4_layout1(struct buf *f) { put_le32(f->p + 12, 1); }
/* relabelled partitioned: its tables are not cut in slot ranges */
static void m4_layout4(struct buf *f) { put_le32(f->p + 12, 4); }
static void m4_as_v2(struct buf *f) { put_le32(f->p + 8, 2); }
static void m4_as_v3(struct buf *f) { put_le32(f->p + 8, 3); }
static void m4_v5(struct buf *f) { put_le32(f->p + 8, 5); }
static void m4_jseq(struct buf *f) { f->p[80] ^= 0x01; }
static void m4_forgotten(struct buf *f) { f->p[104] ^= 0x20; }
static void m4_table(struct buf *f) { f->p[table_at(1) + 100] ^= 0x04; }
static void m4_trailer(struct buf *f) { f->p[f->len - 1] ^= 0x80; }
static void m4_trunc1(struct buf *f) { f->len--; }
static void m4_trunc_table(struct buf *f) { f->len = table_at(2) + 10; }
static void m4_append(struct buf *f) { f->p[f->len++] = 0; }
/* a fingerprint of slice 0 cleared: the table holds one fewer than its
 * entry says */
static void
m4_slot0(struct buf *f)
{
	struct cuckoo c;

	if (cuckoo_init(&c, CF_NB[0], CF_BITS[0], CF_SEED) == -1)
		exit(2);
	memcpy(c.table, f->p + table_at(0), cuckoo_table_bytes(&c));
	for (uint64_t i = 0; i < c.nbuckets; i++)
		if (cuckoo_get(&c, i, 0) != 0) {
			cuckoo_bucket_put(&c, i, cuckoo_slot_set(&c,
			    cuckoo_bucket_get(&c, i), 0, 0));
			break;
		}
	memcpy(f->p + table_at(0), c.table, cuckoo_table_bytes(&c));
	cuckoo_free(&c);
}

static void
test_cuckoo_damage(void)
{
	damage4("v4: 6-bit fingerprints", m4_fp6, 1, "slice 0: bad cuckoo "
	    "table of 300 buckets of 6-bit fingerprints", 1);
	damage4("v4: 17-bit fingerprints", m4_fp17, 1, "slice 2: bad cuckoo "
	    "table of 1000 buckets of 17-bit fingerprints", 1);
	damage4("v4: 0-bit fingerprints", m4_fp0, 1, "slice 3: bad cuckoo "
	    "table of 77 buckets of 0-bit", 1);
	damage4("v4: 0 buckets", m4_nb0, 1, "slice 1: bad cuckoo table of 0 "
	    "buckets", 1);
	damage4("v4: 2^40 buckets", m4_nbbig, 1, "slice 0: bad cuckoo table "
	    "of 1099511627776 buckets", 1);
	damage4("v4: buckets off by one", m4_nb78, 1, "truncated: ", 1);
	damage4("v4: count over the slots", m4_over, 1, "slice 1: bad flags, "
	    "capacity, error rate, count or start time", 1);
	damage4("v4: count one less than the table holds", m4_less, 1,
	    "slice 0 holds 900 fingerprints, its entry says 899: file "
	    "damaged", 0);
	damage4("v4: count 1 for an empty table", m4_more, 1, "slice 3 holds "
	    "0 fingerprints, its entry says 1: file damaged", 0);
	damage4("v4: a fingerprint cleared in the table", m4_slot0, 1,
	    "slice 0 holds 899 fingerprints, its entry says 900: file "
	    "damaged", 0);
	damage4("v4: flags 1 (merged)", m4_flags1, 1, "slice 0: bad flags, "
	    "capacity, error rate, count or start time", 1);
	damage4("v4: flags with the top bit", m4_flagshi, 1, "slice 3: bad "
	    "flags", 1);
	damage4("v4: bits set nonzero", m4_bits, 1, "slice 1: bad flags", 1);
	damage4("v4: a seed in an entry", m4_seed, 1, "slice 2: bad flags", 1);
	damage4("v4: slice capacity 0", m4_cap0, 1, "slice 0: bad flags, "
	    "capacity", 1);
	damage4("v4: slice error rate 1.5", m4_rate, 1, "slice 1: bad flags, "
	    "capacity, error rate", 1);
	damage4("v4: slice start before 1970", m4_start, 1, "slice 2: bad "
	    "flags, capacity, error rate, count or start time", 1);
	damage4("v4: relabelled layout 4", m4_layout4, 1, "slice 0: 300 "
	    "buckets, not an even number for each of 16384 slots", 1);
	damage4("v4: layout 1 (bloom's)", m4_layout1, 1, "unknown layout 1 "
	    "for a cuckoo filter (this seend knows layouts 2 and 4)", 1);
	damage4("v4 file relabelled version 2", m4_as_v2, 1, "unknown layout 2 "
	    "for a bloom filter (this seend knows layouts 1 and 3)", 1);
	damage4("v4 file relabelled version 3", m4_as_v3, 1, "unknown layout 2 "
	    "for a bloom filter", 1);
	damage4("v4 file relabelled version 5", m4_v5, 1, "unsupported "
	    "snapshot version 5 (this seend reads versions 1 to 4)", 1);
	damage4("v4: truncated by 1 byte", m4_trunc1, 0, "truncated: ", 1);
	damage4("v4: truncated in a table", m4_trunc_table, 0, "truncated: ",
	    1);
	damage4("v4: appended byte", m4_append, 0, "too long: ", 1);
	damage4("v4: flipped jseq byte", m4_jseq, 0, "checksum mismatch "
	    "(file damaged)", 1);
	damage4("v4: flipped forgotten byte", m4_forgotten, 0, "checksum "
	    "mismatch", 1);
	damage4("v4: flipped table byte", m4_table, 0, "checksum mismatch", 1);
	damage4("v4: flipped trailer byte", m4_trailer, 0, "checksum mismatch",
	    1);
}

/* Version 4 seeds: n slices of cuckoo_set (from first), fixed creation
 * time, checksum recomputed, then mutate (not resealed: the fuzz target
 * reseals every input itself). */
static void
write_seed_cuckoo(const char *out, const char *file, int first, uint32_t n,
    void (*mutate)(struct buf *))
{
	struct snapshot_info	 info;
	struct snapshot_slice	 sl[NCF];
	struct buf		 f;
	char			 path[512], dst[1024];

	cuckoo_set(&info, sl);
	info.nslices = n;
	snapshot_path(path, sizeof(path), dir, "seed4");
	if (snapshot_write_slices(dir, "seed4", &info, sl + first, err,
	    sizeof(err)) == -1 || slurp(path, &f) == -1) {
		fprintf(stderr, "seed %s: %s\n", file, err);
		exit(1);
	}
	cuckoo_set_free(sl, NCF);
	put_le64(f.p + 72, 1700000000);
	reseal(&f);
	if (mutate != NULL)
		mutate(&f);
	snprintf(dst, sizeof(dst), "%s/%s", out, file);
	if (spit(dst, f.p, f.len) == -1) {
		perror(dst);
		exit(1);
	}
	free(f.p);
}

static void
write_corpus_cuckoo(const char *out)
{
	write_seed_cuckoo(out, "v4-4-slices", 0, NCF, NULL);
	write_seed_cuckoo(out, "v4-one-slice-7bit", 0, 1, NULL);
	write_seed_cuckoo(out, "v4-empty-slice", 3, 1, NULL);
	write_seed_cuckoo(out, "v4-no-slice", 0, 0, NULL);
	write_seed_cuckoo(out, "damaged-v4-fpbits", 0, NCF, m4_fp17);
	write_seed_cuckoo(out, "damaged-v4-count", 0, NCF, m4_less);
	write_seed_cuckoo(out, "damaged-v4-layout1", 0, NCF, m4_layout1);
	write_seed_cuckoo(out, "damaged-v4-layout4", 0, NCF, m4_layout4);
	write_seed_cuckoo(out, "damaged-v4-flags", 0, NCF, m4_flags1);
}

/* ---- layout 3: a filter partitioned by slot ---- */

#define SM_BLOCKS	((uint64_t)KEYSLOT_COUNT * 2)	/* 2 MiB: small pages */
#define SM_SLOTS	256	/* the slots with keys: 0 .. SM_SLOTS - 1 */
#define SM_KEYS		2000

/* A slot-major hash (filter_slot_hash's): the slot in the top bits. */
static uint64_t
sm_hash(const struct bloom *b, const char *k, unsigned slot)
{
	return (uint64_t)slot << (64 - KEYSLOT_BITS) |
	    (bloom_hash(b, k, strlen(k)) & (UINT64_MAX >> KEYSLOT_BITS));
}

/* One slot-major slice with SM_KEYS keys "sm/i" in slots 0..SM_SLOTS-1:
 * only the first SM_SLOTS * 2 blocks (32 KiB, 8 pages) can hold bits. */
static void
sm_set(struct snapshot_info *info, struct snapshot_slice *sl)
{
	char k[96];

	memset(info, 0, sizeof(*info));
	memset(sl, 0, sizeof(*sl));
	if (bloom_init(&sl->bloom, SM_BLOCKS, 8, 0x5107a1e5) == -1) {
		perror("bloom_init");
		exit(2);
	}
	for (int i = 0; i < SM_KEYS; i++) {
		key(k, sizeof(k), "sm", (uint64_t)i);
		bloom_add(&sl->bloom, sm_hash(&sl->bloom, k,
		    (unsigned)i % SM_SLOTS));
	}
	info->nslices = 1;
	info->seed = sl->bloom.seed;
	info->capacity = CAP;
	info->error_rate = RATE;
	info->slot_major = 1;
	sl->capacity = CAP;
	sl->error_rate = RATE;
	sl->start_ms = 1700000000000LL;
	sl->count = sl->bloom.count;
	sl->bits_set = sl->bloom.bits_set;
}

static uint64_t
sm_file_size(void)
{
	return SNAPSHOT_HEADER_SIZE + SLICE_ENTRY + SM_BLOCKS *
	    BLOOM_BLOCK_BYTES + 8;
}

/* Pages of p's len bytes that are resident (mincore), or -1. */
static long
resident_pages(const void *p, size_t len)
{
	size_t		 page = (size_t)sysconf(_SC_PAGESIZE);
	size_t		 n = (len + page - 1) / page;
	unsigned char	*vec = malloc(n);
	long		 in = 0;

	if (vec == NULL || mincore((void *)p, len, vec) == -1) {
		free(vec);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

/* Pages of the array that hold a bit. */
static long
set_pages(const struct bloom *b)
{
	size_t			 page = (size_t)sysconf(_SC_PAGESIZE);
	const unsigned char	*p = (const unsigned char *)b->words;
	long			 n = 0;

	for (size_t off = 0; off < bloom_bytes(b); off += page)
		for (size_t i = 0; i < page; i++)
			if (p[off + i] != 0) {
				n++;
				break;
			}
	return n;
}

static void
test_slot_major_round_trip(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl, *got = NULL;
	struct stat		 sb;
	char			 path[512], k[96];
	uint64_t		 missing = 0;
	long			 in, want;
	int			 rc, fd;

	sm_set(&info, &sl);
	want = set_pages(&sl.bloom);
	ok(want > 0 && want <= 9, "slot-major: the keys' bits are in %ld "
	    "pages of the array's 512", want);
	rc = snapshot_write_slices(dir, "sm", &info, &sl, err, sizeof(err));
	ok(rc == 0, "slot-major: written (%s)", rc == 0 ? "ok" : err);
	snapshot_path(path, sizeof(path), dir, "sm");
	if (stat(path, &sb) == -1)
		memset(&sb, 0, sizeof(sb));
	ok((uint64_t)sb.st_size == sm_file_size(),
	    "slot-major: the file's size is the format's (%lld)",
	    (long long)sb.st_size);
	/* 8 pages of bits, the header and the trailer's page: the rest of
	 * its 2 MiB is holes */
	ok((uint64_t)sb.st_blocks * 512 <= (uint64_t)sb.st_size / 16,
	    "slot-major: a sparse file (%lld bytes on disk of %lld)",
	    (long long)sb.st_blocks * 512, (long long)sb.st_size);

	memset(&back, 0, sizeof(back));
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1, "slot-major: loads (%s)", rc == 1 ? "ok" : err);
	if (rc != 1) {
		bloom_free(&sl.bloom);
		return;
	}
	/* before anything reads the array (a read maps the zero page) */
	in = resident_pages(got[0].bloom.words, bloom_bytes(&got[0].bloom));
	/* at most: a page may have left memory since (swap) */
	ok(in <= want, "slot-major: the loaded array has only its %ld pages "
	    "with bits resident (%ld)", want, in);
	ok(back.slot_major == 1 && back.layout == BLOOM_LAYOUT_SLOTS512 &&
	    back.version == 2 && back.nslices == 1 && back.count ==
	    sl.count && back.nblocks == SM_BLOCKS,
	    "slot-major: the header says layout 3, slot_major, its counts");
	ok(memcmp(got[0].bloom.words, sl.bloom.words,
	    bloom_bytes(&sl.bloom)) == 0 &&
	    got[0].bloom.bits_set == sl.bits_set,
	    "slot-major: the array is the one written");
	for (int i = 0; i < SM_KEYS; i++) {
		key(k, sizeof(k), "sm", (uint64_t)i);
		if (!bloom_check(&got[0].bloom, sm_hash(&got[0].bloom, k,
		    (unsigned)i % SM_SLOTS)))
			missing++;
	}
	ok(missing == 0, "slot-major: every key there (%llu missing)",
	    (unsigned long long)missing);
	snapshot_slices_free(got, back.nslices);

	memset(&back, 0, sizeof(back));
	fd = open(path, O_RDONLY);
	rc = snapshot_verify_fd(fd, &back, err, sizeof(err));
	close(fd);
	ok(rc == 0 && back.slot_major == 1, "slot-major: verify_fd says so "
	    "(%s)", rc == 0 ? "ok" : err);

	/* the same array as layout 1: written whole, loaded whole (and the
	 * residency check above sees pages that are there) */
	info.slot_major = 0;
	rc = snapshot_write_slices(dir, "sm1", &info, &sl, err, sizeof(err));
	snapshot_path(path, sizeof(path), dir, "sm1");
	if (stat(path, &sb) == -1)
		memset(&sb, 0, sizeof(sb));
	ok(rc == 0 && sb.st_size > 0 &&
	    (uint64_t)sb.st_blocks * 512 >= (uint64_t)sb.st_size - 4096,
	    "layout 1: every byte on disk (%lld of %lld)",
	    (long long)sb.st_blocks * 512, (long long)sb.st_size);
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	in = rc == 1 ? resident_pages(got[0].bloom.words,
	    bloom_bytes(&got[0].bloom)) : -1;
	ok(rc == 1 && back.slot_major == 0 && back.layout ==
	    BLOOM_LAYOUT_SPLIT512 && in >= 256,
	    "layout 1: loads, not slot-major, its array all resident (%ld)",
	    in);
	if (rc == 1)
		snapshot_slices_free(got, back.nslices);
	bloom_free(&sl.bloom);
}

/* Holes only where they read as zero: a file written over, a file
 * appended to, a pipe, get every byte. */
static void
test_slot_major_fds(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl, *got = NULL;
	struct stat		 sb;
	unsigned char		*junk;
	char			 path[512];
	uint64_t		 size = sm_file_size();
	int			 rc, fd;

	sm_set(&info, &sl);
	/* over a file of 0xff bytes, from its start */
	snprintf(path, sizeof(path), "%s/over.bloom", dir);
	junk = malloc(size);
	memset(junk, 0xff, size);
	spit(path, junk, size);
	free(junk);
	fd = open(path, O_RDWR);
	rc = snapshot_write_slices_fd(fd, "over", &info, &sl, err,
	    sizeof(err));
	close(fd);
	ok(rc == 0, "slot-major over a file: written (%s)", rc == 0 ? "ok" :
	    err);
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == 1 && back.slot_major == 1 && memcmp(got[0].bloom.words,
	    sl.bloom.words, bloom_bytes(&sl.bloom)) == 0,
	    "slot-major over a file: zero bytes written, not left (%s)",
	    rc == 1 ? "ok" : err);
	if (rc == 1)
		snapshot_slices_free(got, back.nslices);

	/* into a new file at its offset: holes, and the image loads */
	snprintf(path, sizeof(path), "%s/image.bloom", dir);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	rc = snapshot_write_slices_fd(fd, "image", &info, &sl, err,
	    sizeof(err));
	if (fstat(fd, &sb) == -1)
		memset(&sb, 0, sizeof(sb));
	ok(rc == 0 && (uint64_t)sb.st_size == size &&
	    lseek(fd, 0, SEEK_CUR) == (off_t)size &&
	    (uint64_t)sb.st_blocks * 512 <= size / 16,
	    "slot-major image (fd): sparse, its size and offset right (%s)",
	    rc == 0 ? "ok" : err);
	rc = snapshot_load_slices_fd(fd, "image", CAP, RATE, &back, &got,
	    err, sizeof(err));
	close(fd);
	ok(rc == 1 && back.slot_major == 1,
	    "slot-major image (fd): loads (%s)", rc == 1 ? "ok" : err);
	if (rc == 1)
		snapshot_slices_free(got, back.nslices);

	/* an O_APPEND file: a seek would not move the next write */
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
	rc = snapshot_write_slices_fd(fd, "image", &info, &sl, err,
	    sizeof(err));
	close(fd);
	rc = rc == 0 ? snapshot_load_slices(path, CAP, RATE, &back, &got,
	    err, sizeof(err)) : -1;
	ok(rc == 1, "slot-major, O_APPEND: written whole, loads (%s)",
	    rc == 1 ? "ok" : err);
	if (rc == 1)
		snapshot_slices_free(got, back.nslices);
	bloom_free(&sl.bloom);
}

/* A write that runs out of disk in a hole fails as one in bytes does. */
static void
test_slot_major_fault(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl, *got = NULL;
	struct buf		 before;
	char			 path[512], tmp[512];
	int			 rc;
	uint64_t		 limits[3] = { 1 << 20, sm_file_size() - 1,
				    sm_file_size() };

	sm_set(&info, &sl);
	snapshot_path(path, sizeof(path), dir, "smfault");
	snprintf(tmp, sizeof(tmp), "%s/.smfault.bloom.tmp", dir);
	snapshot_write_slices(dir, "smfault", &info, &sl, err, sizeof(err));
	slurp(path, &before);
	for (int i = 0; i < 3; i++) {
		snapshot_fault_write_limit = limits[i];
		sl.count++;
		rc = snapshot_write_slices(dir, "smfault", &info, &sl, err,
		    sizeof(err));
		snapshot_fault_write_limit = 0;
		if (i < 2)
			ok(rc == -1 && strstr(err, "No space left") != NULL &&
			    same_file(path, &before) && !exists(tmp),
			    "slot-major, fault limit %llu (a hole, the "
			    "trailer): fails, old file intact (%s)",
			    (unsigned long long)limits[i], err);
		else {
			rc = rc == 0 ? snapshot_load_slices(path, CAP, RATE,
			    &back, &got, err, sizeof(err)) : -1;
			ok(rc == 1 && back.count == sl.count,
			    "slot-major, fault limit = file size: written "
			    "(%s)", rc == 1 ? "ok" : err);
			if (rc == 1)
				snapshot_slices_free(got, back.nslices);
		}
	}
	free(before.p);
	bloom_free(&sl.bloom);
}

/* Every slice's nblocks a multiple of 16384: never written otherwise,
 * and a file that says otherwise is refused. */
static void
test_slot_major_refused(void)
{
	struct snapshot_info	 info, back;
	struct snapshot_slice	 sl, *got = NULL;
	struct buf		 f;
	char			 path[512];
	int			 rc;

	sm_set(&info, &sl);
	bloom_free(&sl.bloom);
	bloom_init(&sl.bloom, 1000, 8, info.seed);
	rc = snapshot_write_slices(dir, "smbad", &info, &sl, err,
	    sizeof(err));
	snapshot_path(path, sizeof(path), dir, "smbad");
	ok(rc == -1 && strstr(err, "not a multiple of 16384") != NULL &&
	    !exists(path), "slot-major of 1000 blocks: not written (%s)",
	    err);

	/* as layout 1, then its layout field said 3 */
	info.slot_major = 0;
	rc = snapshot_write_slices(dir, "smbad", &info, &sl, err,
	    sizeof(err));
	ok(rc == 0 && slurp(path, &f) == 0, "layout 1 of 1000 blocks: "
	    "written");
	put_le32(f.p + 12, BLOOM_LAYOUT_SLOTS512);
	reseal(&f);
	spit(path, f.p, f.len);
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == -1 && strstr(err, "slice 0: 1000 blocks, not a multiple of "
	    "16384") != NULL, "layout 3 of 1000 blocks: refused (%s)", err);
	/* layout 4: unknown */
	put_le32(f.p + 12, 4);
	reseal(&f);
	spit(path, f.p, f.len);
	rc = snapshot_load_slices(path, CAP, RATE, &back, &got, err,
	    sizeof(err));
	ok(rc == -1 && strstr(err, "unknown layout 4") != NULL,
	    "layout 4: refused (%s)", err);
	free(f.p);
	bloom_free(&sl.bloom);
}

int
main(void)
{
	const char *corpus = getenv("SNAPSHOT_CORPUS_DIR");

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	if (corpus != NULL) {
		write_corpus(corpus);
		cleanup();
		return 0;
	}
	test_round_trip();
	test_missing();
	test_damage();
	test_version1();
	test_slices();
	test_merged_round_trip();
	test_merged_none_is_v2();
	test_merged_write_order();
	test_merged_damage();
	test_cuckoo_round_trip();
	test_cuckoo_slots_round_trip();
	test_cuckoo_write_refused();
	test_cuckoo_damage();
	test_verify_fd_damage();
	test_faults();
	test_slot_major_round_trip();
	test_slot_major_fds();
	test_slot_major_fault();
	test_slot_major_refused();
	test_bad_dirs();
	test_race();
	cleanup();
	return done_testing();
}
