/*
 * test_journal.c - the journal: round trip across segments, rotation and
 * dropping, a torn tail at every byte of the last record, one flipped bit
 * anywhere reported as damage with the file untouched, ENOSPC that keeps
 * the records, size accounting, empty and header-only segments, unknown
 * versions, the everysec thread; version 2's key batches (torn, damaged
 * header or body, count out of bounds, zero pages after a power loss,
 * split at JOURNAL_BATCH_MAX) and version 1 segments, which still replay;
 * version 3's reset records (in order among the keys, torn, damaged, not
 * in a version 2 segment) and a buffer grown by journal_reserve.
 *
 * With JOURNAL_CORPUS_DIR set in the environment it writes the seed corpus
 * for tests/fuzz/fuzz_journal.c there and exits:
 *   JOURNAL_CORPUS_DIR=tests/fuzz/corpus/journal ./tests/unit/test_journal
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "journal.h"
#include "tap.h"

#define T0	1700000000ULL

static char	 err[8192];

/* ---- files ---- */

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void
put_le32(unsigned char *p, uint32_t v)
{
	put_le(p, v, 4);
}

static uint32_t
get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* The checksum of [p, p + len) as the journal stores it at at. */
static void
put_sum(unsigned char *at, const unsigned char *p, size_t len)
{
	put_le32(at, (uint32_t)XXH3_64bits(p, len));
}

struct blob {
	unsigned char	*p;
	size_t		 len;
};

static int
slurp(const char *path, struct blob *b)
{
	struct stat	 sb;
	FILE		*f;

	b->p = NULL;
	b->len = 0;
	if (stat(path, &sb) == -1 || (f = fopen(path, "rb")) == NULL)
		return -1;
	b->len = (size_t)sb.st_size;
	if ((b->p = malloc(b->len + 1)) == NULL ||
	    fread(b->p, 1, b->len, f) != b->len) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static int
spit(const char *path, const void *p, size_t len)
{
	FILE	*f;
	int	 rc = 0;

	if ((f = fopen(path, "wb")) == NULL)
		return -1;
	if (len > 0 && fwrite(p, 1, len, f) != len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int
same_file(const char *path, const struct blob *want)
{
	struct blob	 got;
	int		 same;

	if (slurp(path, &got) == -1) {
		free(got.p);
		return 0;
	}
	same = got.len == want->len && memcmp(got.p, want->p, got.len) == 0;
	free(got.p);
	return same;
}

static uint64_t
file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : UINT64_MAX;
}

static void
seg(char *buf, size_t len, const char *dir, uint64_t seq)
{
	snprintf(buf, len, "%s/journal.%016" PRIx64, dir, seq);
}

static void
new_dir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/test_journal.XXXXXX");
	if (mkdtemp(buf) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
}

static void
rm_dir(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
}

/* ---- what replay finds ---- */

struct rec {
	char		 name[JOURNAL_NAME_MAX + 1];
	uint64_t	 seed;
	uint64_t	 hash;
	uint64_t	 time;
	int		 reset;
	uint64_t	 new_seed;
};

struct seen {
	struct rec	*v;
	size_t		 n, cap;
	size_t		 fail_at;	/* 1-based; 0 never */
};

static int
collect(void *arg, const struct journal_key *k, char *e, size_t elen)
{
	struct seen	*s = arg;
	struct rec	*nv;

	if (s->fail_at != 0 && s->n + 1 == s->fail_at) {
		snprintf(e, elen, "no filter named %.*s", (int)k->namelen,
		    k->name);
		return -1;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		if ((nv = realloc(s->v, s->cap * sizeof(*nv))) == NULL)
			exit(2);
		s->v = nv;
	}
	memcpy(s->v[s->n].name, k->name, k->namelen);
	s->v[s->n].name[k->namelen] = '\0';
	s->v[s->n].seed = k->seed;
	s->v[s->n].hash = k->hash;
	s->v[s->n].time = k->time;
	s->v[s->n].reset = k->reset;
	s->v[s->n].new_seed = k->new_seed;
	s->n++;
	return 0;
}

static void
seen_free(struct seen *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The i-th test record: names (and their seeds) from a set of nnames, a
 * new time every 7 records. */
static void
gen(struct rec *r, uint64_t i, unsigned nnames)
{
	unsigned name = (unsigned)(i * 2654435761u % nnames);

	snprintf(r->name, sizeof(r->name), "filter-%u", name);
	r->seed = 0x9e3779b97f4a7c15ULL * (name + 1);
	r->hash = XXH3_64bits(&i, sizeof(i));
	r->time = T0 + i / 7;
}

static int
append_gen(struct journal *j, uint64_t from, uint64_t to, unsigned nnames)
{
	struct rec r;

	for (uint64_t i = from; i < to; i++) {
		gen(&r, i, nnames);
		if (journal_append(j, r.name, strlen(r.name), r.seed, r.hash,
		    r.time) == -1)
			return -1;
	}
	return 0;
}

/* Whether s holds exactly the generated records [from, to). */
static int
matches(const struct seen *s, uint64_t from, uint64_t to, unsigned nnames)
{
	struct rec r;

	if (s->n != to - from)
		return 0;
	for (uint64_t i = from; i < to; i++) {
		gen(&r, i, nnames);
		if (s->v[i - from].reset ||
		    strcmp(r.name, s->v[i - from].name) != 0 ||
		    r.seed != s->v[i - from].seed ||
		    r.hash != s->v[i - from].hash ||
		    r.time != s->v[i - from].time)
			return 0;
	}
	return 1;
}

static struct journal *
open_j(const char *dir, size_t bufmax)
{
	struct journal *j;

	if ((j = journal_open(dir, NULL, bufmax, err, sizeof(err))) == NULL)
		diag("journal_open: %s", err);
	return j;
}

/* Segment 1 with keys [0, split), segment 2 with [split, end), names
 * filters each: the set-up of the tests of a segment that is not the last. */
static int
two_segments(const char *dir, uint64_t split, uint64_t end, unsigned names)
{
	struct journal	*j;
	uint64_t	 closed;

	if ((j = open_j(dir, 0)) == NULL)
		return -1;
	append_gen(j, 0, split, names);
	journal_rotate(j, &closed, err, sizeof(err));
	append_gen(j, split, end, names);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	return 0;
}

/* ---- tests ---- */

static void
test_round_trip(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64];
	uint64_t			 closed;
	int				 rc, ok_all = 1;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 1 << 20)) == NULL)
		return;
	ok(journal_seq(j) == 1, "a new journal starts at segment 1");
	/* 10000 names: more than the 4096 slots, so ids are rebound */
	for (uint64_t k = 0; k < 4; k++) {
		for (uint64_t i = k * 25000; i < (k + 1) * 25000; i += 1000) {
			ok_all &= append_gen(j, i, i + 1000, 10000) == 0;
			ok_all &= journal_write(j, err, sizeof(err)) == 0;
		}
		if (k < 3)
			ok_all &= journal_rotate(j, &closed, err,
			    sizeof(err)) == 0 && closed == k + 1;
	}
	ok(ok_all, "round trip: 100000 records appended and written, "
	    "rotated 3 times");
	ok(journal_sync(j, err, sizeof(err)) == 0 &&
	    journal_unsynced(j) == 0, "round trip: synced");
	journal_close(j);

	rc = journal_replay(dir, collect, &s, &info, err, sizeof(err));
	ok(rc == 0, "round trip: replay (%s)", rc == 0 ? "ok" : err);
	ok(info.segments == 4 && info.last_seq == 4 && !info.torn &&
	    info.keys == 100000, "round trip: 4 segments, 100000 keys, "
	    "no torn tail (%" PRIu64 " segments, %" PRIu64 " keys)",
	    info.segments, info.keys);
	ok(matches(&s, 0, 100000, 10000), "round trip: every record back, "
	    "in order, with its name, hash and time");
	seen_free(&s);

	/* reopening starts a new segment after the highest */
	j = open_j(dir, 0);
	ok(j != NULL && journal_seq(j) == 5, "reopen: appends go to segment "
	    "5");
	if (j != NULL) {
		ok(append_gen(j, 100000, 100010, 3) == 0 &&
		    journal_write(j, err, sizeof(err)) == 0, "reopen: append");
		journal_close(j);
	}
	rc = journal_replay(dir, collect, &s, &info, err, sizeof(err));
	ok(rc == 0 && s.n == 100010 && info.segments == 5,
	    "reopen: replay sees old and new records");
	seen_free(&s);
	rm_dir(dir);
}

static void
test_rotate_drop(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64], p1[128], p2[128], p3[128];
	uint64_t			 closed = 0, before;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	seg(p1, sizeof(p1), dir, 1);
	seg(p2, sizeof(p2), dir, 2);
	seg(p3, sizeof(p3), dir, 3);
	append_gen(j, 0, 100, 2);
	ok(journal_rotate(j, &closed, err, sizeof(err)) == 0 && closed == 1,
	    "rotate: closes segment 1 (%s)", err);
	ok(file_size(p1) == journal_bytes(j) - 40 &&
	    file_size(p2) == 40, "rotate: the buffer went to segment 1, "
	    "segment 2 holds a header");
	append_gen(j, 100, 200, 2);
	ok(journal_rotate(j, &closed, err, sizeof(err)) == 0 && closed == 2,
	    "rotate: closes segment 2");
	append_gen(j, 200, 300, 2);
	journal_write(j, err, sizeof(err));
	before = journal_bytes(j);
	ok(before == file_size(p1) + file_size(p2) + file_size(p3),
	    "size: journal_bytes is the sum of the segment files (%" PRIu64
	    ")", before);
	ok(journal_drop_upto(j, 1, err, sizeof(err)) == 0 &&
	    file_size(p1) == UINT64_MAX && file_size(p2) != UINT64_MAX,
	    "drop_upto 1 removes segment 1 only");
	ok(journal_bytes(j) == file_size(p2) + file_size(p3),
	    "size: dropping subtracts the segment's bytes");
	ok(journal_drop_upto(j, 99, err, sizeof(err)) == 0 &&
	    file_size(p2) == UINT64_MAX && file_size(p3) != UINT64_MAX,
	    "drop_upto never removes the current segment");
	ok(journal_bytes(j) == file_size(p3), "size: only the current "
	    "segment is left");
	append_gen(j, 300, 310, 2);
	ok(journal_bytes(j) == file_size(p3) + journal_pending(j) &&
	    journal_pending(j) > 0, "size: buffered bytes count too");
	journal_write(j, err, sizeof(err));
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    matches(&s, 200, 310, 2), "after dropping, replay gives only "
	    "the records of the live segment");
	seen_free(&s);
	rm_dir(dir);
}

/*
 * Writes records [0, n) into segment 1 and returns the offset where the
 * last record begins (a key record, or a name record when last_name).
 */
static uint64_t
one_segment(const char *dir, uint64_t n, int last_name)
{
	struct journal	*j;
	uint64_t	 start;

	if ((j = open_j(dir, 0)) == NULL)
		exit(2);
	append_gen(j, 0, n - 1, 3);
	journal_write(j, err, sizeof(err));
	start = journal_bytes(j);
	if (last_name)
		/* a new name and the same time: a name record, then a key */
		journal_append(j, "another", 7, 5, 42, T0 + (n - 2) / 7);
	else
		append_gen(j, n - 1, n, 3);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	return start;
}

static void
torn_at_every_byte(int last_name)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 whole, before;
	struct journal			*j;
	char				 dir[64], p1[128];
	uint64_t			 start, whole_end;
	/* records 49 and 50 share a time: the last one is a lone record */
	const size_t			 n = 51;
	int				 good = 1, dropped = 1, reopened = 1;
	int				 untouched = 1;

	new_dir(dir, sizeof(dir));
	start = one_segment(dir, n, last_name);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	for (size_t cut = (size_t)start + 1; cut < whole.len; cut++) {
		/* the name whole and no key: whole records, not a tear */
		if (last_name && cut == start + JOURNAL_NAME_SIZE)
			continue;
		spit(p1, whole.p, cut);
		/* only segment 1: later segments of a reopen are removed */
		for (uint64_t q = 2; q < 5; q++) {
			char pq[128];

			seg(pq, sizeof(pq), dir, q);
			unlink(pq);
		}
		slurp(p1, &before);
		/* a name record then its key: a cut in the key leaves the
		 * name whole, and the torn tail starts after it */
		whole_end = last_name && cut >= start + JOURNAL_NAME_SIZE ?
		    start + JOURNAL_NAME_SIZE : start;
		if (journal_replay(dir, collect, &s, &info, err,
		    sizeof(err)) == -1) {
			diag("cut at %zu: %s", cut, err);
			good = 0;
		} else if (!info.torn || info.torn_offset != whole_end ||
		    info.torn_bytes != cut - whole_end || s.n != n - 1) {
			if (dropped)
				diag("cut at %zu: torn %d at %" PRIu64 " (%"
				    PRIu64 " bytes), %zu keys", cut, info.torn,
				    info.torn_offset, info.torn_bytes, s.n);
			dropped = 0;
		}
		untouched &= same_file(p1, &before);
		free(before.p);
		seen_free(&s);
		/* open truncates, then replay sees whole records only */
		if ((j = journal_open(dir, NULL, 0, err, sizeof(err))) == NULL)
			reopened = 0;
		else {
			journal_close(j);
			if (file_size(p1) != whole_end || journal_replay(dir,
			    collect, &s, &info, err, sizeof(err)) == -1 ||
			    info.torn || s.n != n - 1)
				reopened = 0;
			seen_free(&s);
		}
	}
	ok(good, "torn %s record: replay succeeds at every cut",
	    last_name ? "name" : "key");
	ok(dropped, "torn %s record: every cut is reported torn where the "
	    "whole records end and the %zu keys before it replay",
	    last_name ? "name" : "key", n - 1);
	ok(untouched, "torn %s record: replay leaves the file as it is",
	    last_name ? "name" : "key");
	ok(reopened, "torn %s record: journal_open truncates the tail, "
	    "a second replay finds no torn tail", last_name ? "name" : "key");
	free(whole.p);
	rm_dir(dir);
}

static void
test_torn_tail(void)
{
	torn_at_every_byte(0);
	torn_at_every_byte(1);
}

static void
test_zero_tail(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 whole;
	char				 dir[64], p1[128];
	unsigned char			*p;
	uint64_t			 start;

	new_dir(dir, sizeof(dir));
	start = one_segment(dir, 20, 0);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	p = calloc(1, whole.len + 4096);
	memcpy(p, whole.p, whole.len);
	spit(p1, p, whole.len + 4096);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    info.torn && info.torn_offset == whole.len &&
	    info.torn_bytes == 4096 && s.n == 20, "zeros after the last "
	    "record of the last segment are a torn tail");
	seen_free(&s);
	p[whole.len + 100] = 1;
	spit(p1, p, whole.len + 4096);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1,
	    "zeros followed by anything else are damage");
	seen_free(&s);
	(void)start;
	free(p);
	free(whole.p);
	rm_dir(dir);
}

/* The start of the record holding byte off of a segment image. */
static uint64_t
record_start(const struct blob *b, uint64_t off)
{
	uint64_t at = 40, size;

	if (off < 40)
		return 0;
	while (at < b->len) {
		switch (b->p[at]) {
		case JOURNAL_REC_NAME: size = JOURNAL_NAME_SIZE; break;
		case JOURNAL_REC_BATCH:
			size = JOURNAL_BATCH_HEAD +
			    8 * (uint64_t)get_le32(b->p + at + 4);
			break;
		case JOURNAL_REC_TIME: size = JOURNAL_TIME_SIZE; break;
		default: size = JOURNAL_KEY_SIZE; break;
		}
		if (off < at + size)
			return at;
		at += size;
	}
	return UINT64_MAX;
}

static void
test_flipped_bit(void)
{
	struct journal_replay_info	 info;
	struct blob			 img[2], now;
	char				 dir[64], path[2][128], want[64];
	uint64_t			 start;
	int				 refused = 1, offset = 1, untouched = 1;
	int				 named = 1;
	unsigned			 tried = 0;

	new_dir(dir, sizeof(dir));
	if (two_segments(dir, 40, 80, 3) == -1)
		return;
	for (int k = 0; k < 2; k++) {
		seg(path[k], sizeof(path[k]), dir, (uint64_t)k + 1);
		slurp(path[k], &img[k]);
	}
	/* every bit of both segments, the last one included */
	for (int k = 0; k < 2; k++) {
		for (size_t bit = 0; bit < img[k].len * 8; bit++) {
			size_t off = bit / 8;

			img[k].p[off] ^= (unsigned char)(1u << (bit % 8));
			spit(path[k], img[k].p, img[k].len);
			tried++;
			err[0] = '\0';
			if (journal_replay(dir, NULL, NULL, &info, err,
			    sizeof(err)) != -1) {
				if (refused)
					diag("segment %d byte %zu: accepted",
					    k + 1, off);
				refused = 0;
			}
			start = record_start(&img[k], off);
			if (start == 0)
				snprintf(want, sizeof(want), "move it out");
			else
				snprintf(want, sizeof(want), "at byte offset %"
				    PRIu64 ";", start);
			if (strstr(err, want) == NULL) {
				if (offset)
					diag("segment %d byte %zu: want "
					    "\"%s\" in: %s", k + 1, off, want,
					    err);
				offset = 0;
			}
			named &= strstr(err, path[k]) != NULL;
			slurp(path[k], &now);
			untouched &= now.len == img[k].len &&
			    memcmp(now.p, img[k].p, now.len) == 0;
			free(now.p);
			img[k].p[off] ^= (unsigned char)(1u << (bit % 8));
			spit(path[k], img[k].p, img[k].len);
		}
	}
	ok(refused, "flipped bit: all %u single-bit flips are refused as "
	    "damage, none passes for a torn tail", tried);
	ok(offset, "flipped bit: the message gives the offset of the "
	    "damaged record (or says to move the file for its header)");
	ok(named, "flipped bit: the message names the file");
	ok(untouched, "flipped bit: replay changes nothing");
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == 0 &&
	    info.keys == 80, "flipped bit: restored files replay again");
	free(img[0].p);
	free(img[1].p);
	rm_dir(dir);
}

static void
test_way_out(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 img;
	char				 dir[64], p1[128], aside[160], cmd[512];
	const char			*t;
	uint64_t			 off;

	new_dir(dir, sizeof(dir));
	if (two_segments(dir, 40, 80, 3) == -1)
		return;
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &img);
	img.p[img.len / 2] ^= 0x10;
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    (t = strstr(err, "truncate -s ")) != NULL,
	    "damage in a middle segment: refused, with a truncate command");
	seen_free(&s);
	off = strtoull(strstr(err, "truncate -s ") + 12, NULL, 10);
	snprintf(cmd, sizeof(cmd), "truncate -s %" PRIu64 " %s", off, p1);
	ok(system(cmd) == 0 && journal_replay(dir, collect, &s, &info, err,
	    sizeof(err)) == 0 && s.n >= 40 && s.n < 80 && !info.torn,
	    "the truncate it suggests lets the journal replay (%zu keys)",
	    s.n);
	seen_free(&s);
	/* or move the damaged segment aside */
	spit(p1, img.p, img.len);
	snprintf(aside, sizeof(aside), "%s.bad", p1);
	ok(rename(p1, aside) == 0 && journal_replay(dir, collect, &s, &info,
	    err, sizeof(err)) == 0 && matches(&s, 40, 80, 3),
	    "a segment moved aside (renamed *.bad) is ignored; the others "
	    "replay");
	seen_free(&s);
	free(img.p);
	rm_dir(dir);
}

static void
test_enospc(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64], st[512];
	size_t				 pending;
	int				 rc;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	append_gen(j, 0, 10, 3);
	journal_write(j, err, sizeof(err));
	/* header and 10 records are written (a fresh journal: all its
	 * bytes are this one's); allow 100 bytes more */
	journal_fault_write_limit = journal_bytes(j) + 100;
	append_gen(j, 10, 60, 3);
	rc = journal_write(j, err, sizeof(err));
	ok(rc == -1 && strstr(err, "No space left") != NULL,
	    "ENOSPC: journal_write fails with the reason (%s)", err);
	pending = journal_pending(j);
	ok(pending > 0, "ENOSPC: the %zu unwritten bytes are kept", pending);
	ok(journal_status(j, st, sizeof(st)) == -1 && strstr(st, "No space")
	    != NULL, "ENOSPC: journal_status reports it (%s)", st);
	ok(journal_write(j, err, sizeof(err)) == -1 &&
	    journal_pending(j) == pending, "ENOSPC: a retry on a still full "
	    "disk fails and loses nothing");
	append_gen(j, 60, 70, 3);

	/* a crash now: replay drops the half record the disk took */
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    info.torn && s.n < 60 && matches(&s, 0, s.n, 3),
	    "ENOSPC: a crash during the fault leaves a torn tail and the "
	    "records before it (%zu)", s.n);
	seen_free(&s);

	journal_fault_write_limit = 0;
	ok(journal_write(j, err, sizeof(err)) == 0 && journal_pending(j) == 0,
	    "ENOSPC lifted: the next journal_write writes everything");
	ok(journal_sync(j, err, sizeof(err)) == 0 &&
	    journal_status(j, st, sizeof(st)) == 0 && strcmp(st, "ok") == 0,
	    "ENOSPC lifted: sync succeeds and the status is ok again");
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    !info.torn && matches(&s, 0, 70, 3), "ENOSPC lifted: all 70 "
	    "records replay, none lost, none doubled");
	seen_free(&s);

	/* a rotation cannot start while the old segment's bytes wait */
	if ((j = open_j(dir, 0)) == NULL)
		return;
	/* the limit counts this journal's bytes: its header, then 3 */
	journal_fault_write_limit = JOURNAL_HEADER_SIZE + 3;
	append_gen(j, 0, 5, 3);
	{
		uint64_t closed = 0, seq = journal_seq(j);

		ok(journal_rotate(j, &closed, err, sizeof(err)) == -1 &&
		    journal_seq(j) == seq && journal_pending(j) > 0,
		    "ENOSPC: rotate refuses and changes nothing (%s)", err);
		journal_fault_write_limit = 0;
		ok(journal_rotate(j, &closed, err, sizeof(err)) == 0 &&
		    closed == seq, "ENOSPC lifted: rotate succeeds");
	}
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    !info.torn && s.n == 75, "ENOSPC during rotate: every record "
	    "replays (%zu)", s.n);
	seen_free(&s);
	rm_dir(dir);
}

static void
test_buffer_bound(void)
{
	struct journal	*j;
	char		 dir[64];
	unsigned	 n = 0;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 1024)) == NULL)
		return;
	while (!journal_full(j) && n < 1000) {
		if (journal_append(j, "f", 1, 5, n, T0) == -1)
			break;
		n++;
	}
	ok(journal_full(j) && n < 1000, "buffer: full after %u records in "
	    "1024 bytes", n);
	errno = 0;
	ok(journal_append(j, "a-new-name", 10, 5, 1, T0 + 1) == -1 &&
	    errno == ENOBUFS, "buffer: a full buffer refuses with ENOBUFS");
	ok(journal_write(j, err, sizeof(err)) == 0 && !journal_full(j) &&
	    journal_append(j, "f", 1, 5, 1, T0) == 0, "buffer: room again "
	    "once written");
	errno = 0;
	ok(journal_append(j, "", 0, 5, 1, T0) == -1 && errno == EINVAL,
	    "append refuses an empty name");
	{
		char long_name[JOURNAL_NAME_MAX + 1];

		memset(long_name, 'x', sizeof(long_name));
		errno = 0;
		ok(journal_append(j, long_name, sizeof(long_name), 5, 1,
		    T0)
		    == -1 && errno == EINVAL, "append refuses a 65-byte name");
		ok(journal_append(j, long_name, JOURNAL_NAME_MAX, 5, 1, T0)
		    == 0,
		    "append takes a 64-byte name");
	}
	journal_close(j);
	rm_dir(dir);
}

static void
test_record_sizes(void)
{
	struct journal	*j;
	char		 dir[64];
	uint64_t	 b0;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	b0 = journal_bytes(j);
	journal_append(j, "f", 1, 5, 1, T0);
	ok(journal_bytes(j) - b0 == 84 + 24 + 8 && journal_bytes(j) - b0 ==
	    JOURNAL_APPEND_MAX, "size: the first key of a segment costs a "
	    "name record, a batch header and its hash (116 bytes)");
	b0 = journal_bytes(j);
	for (int i = 0; i < 100; i++)
		journal_append(j, "f", 1, 5, (uint64_t)i, T0);
	ok(journal_bytes(j) - b0 == 800, "size: later keys of the same "
	    "filter and millisecond cost 8 bytes each");
	{
		char other[2] = "f";

		b0 = journal_bytes(j);
		journal_append(j, other, 1, 5, 1000, T0);
		ok(journal_bytes(j) - b0 == 8, "size: the same name at "
		    "another address stays in the batch");
	}
	b0 = journal_bytes(j);
	journal_append(j, "f", 1, 5, 1001, T0 + 1);
	ok(journal_bytes(j) - b0 == 24 + 8, "size: a new millisecond "
	    "starts a batch (24 + 8 bytes)");
	ok(journal_write(j, err, sizeof(err)) == 0 && journal_pending(j) ==
	    0, "size: journal_write writes the open batch");
	b0 = journal_bytes(j);
	journal_append(j, "f", 1, 5, 1002, T0 + 1);
	ok(journal_bytes(j) - b0 == 24 + 8, "size: and the next key starts "
	    "another");
	journal_close(j);
	rm_dir(dir);
}

/* A filter removed and created again under the same name has a new seed:
 * its keys must replay with that seed, the earlier ones with theirs. */
static void
test_new_seed(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64];
	uint64_t			 b0;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	journal_append(j, "news", 4, 111, 1, T0);
	journal_append(j, "news", 4, 111, 2, T0);
	b0 = journal_bytes(j);
	journal_append(j, "news", 4, 222, 3, T0);
	ok(journal_bytes(j) - b0 == JOURNAL_NAME_SIZE + JOURNAL_BATCH_HEAD +
	    8, "a new seed for a known name binds the name again");
	journal_append(j, "news", 4, 111, 4, T0);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == 4 && s.v[0].seed == 111 && s.v[1].seed == 111 &&
	    s.v[2].seed == 222 && s.v[2].hash == 3 && s.v[3].seed == 111 &&
	    strcmp(s.v[2].name, "news") == 0, "each key replays with the "
	    "seed it was hashed with");
	seen_free(&s);
	rm_dir(dir);
}

static void
test_empty_segments(void)
{
	struct journal_replay_info	 info;
	struct journal			*j;
	struct blob			 hdr;
	char				 dir[64], p1[128], p2[128], p3[128];

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	journal_close(j);
	seg(p1, sizeof(p1), dir, 1);
	ok(file_size(p1) == 40 && journal_replay(dir, NULL, NULL, &info, err,
	    sizeof(err)) == 0 && info.keys == 0 && info.segments == 1 &&
	    !info.torn, "a header-only segment replays with no keys");
	slurp(p1, &hdr);

	/* an empty last segment: the process died creating it */
	seg(p2, sizeof(p2), dir, 2);
	spit(p2, "", 0);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == 0 &&
	    info.torn && info.torn_offset == 0 && info.torn_bytes == 0,
	    "an empty last segment is a torn tail");
	/* and one cut inside its header */
	spit(p2, hdr.p, 17);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == 0 &&
	    info.torn && info.torn_bytes == 17, "a last segment cut inside "
	    "its header is a torn tail");
	j = journal_open(dir, NULL, 0, err, sizeof(err));
	ok(j != NULL && file_size(p2) == UINT64_MAX && journal_seq(j) == 3,
	    "open removes it and starts segment 3");
	journal_close(j);

	/* an empty segment that is not the last is damage */
	spit(p2, "", 0);
	seg(p3, sizeof(p3), dir, 3);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, p2) != NULL, "an empty segment before the last is "
	    "damage (%s)", err);
	unlink(p2);
	free(hdr.p);
	rm_dir(dir);
}

static void
test_header_checks(void)
{
	struct journal_replay_info	 info;
	struct journal			*j;
	struct blob			 img;
	char				 dir[64], p1[128], p7[128];

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	append_gen(j, 0, 5, 1);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &img);

	put_le32(img.p + 8, JOURNAL_VERSION + 1);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "unsupported journal version 5") != NULL,
	    "an unknown version is refused (%s)", err);
	ok(journal_open(dir, NULL, 0, err, sizeof(err)) == NULL &&
	    file_size(p1) == img.len, "open refuses it too, the file kept");

	/* batches in a segment that says version 1 */
	put_le32(img.p + 8, 1);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "unknown record type 0x42 in a version 1 segment") !=
	    NULL && strstr(err, "at byte offset 124;") != NULL,
	    "a batch in a version 1 segment is damage (%s)", err);

	/* names and batches alone: a version 2 segment says the same */
	put_le32(img.p + 8, JOURNAL_VERSION_V2);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == 0 &&
	    info.keys == 5, "a version 2 segment (seend 1.x) replays (%s)",
	    err);
	put_le32(img.p + 8, JOURNAL_VERSION);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	seg(p7, sizeof(p7), dir, 7);
	ok(rename(p1, p7) == 0 && journal_replay(dir, NULL, NULL, &info, err,
	    sizeof(err)) == -1 && strstr(err, "sequence 1") != NULL,
	    "a segment whose name and header disagree is refused");
	rename(p7, p1);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == 0,
	    "the fixed header replays");

	memcpy(img.p, "SEENDBF\n", 8);
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "bad magic") != NULL, "a file that is not a journal "
	    "segment is refused");
	free(img.p);
	rm_dir(dir);
}

static void
test_callback_stops(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64];

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	append_gen(j, 0, 10, 1);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	s.fail_at = 4;
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    s.n == 3 && strstr(err, "no filter named filter-0") != NULL &&
	    strstr(err, "offset") != NULL, "a callback's error stops the "
	    "replay with its message and the record's offset (%s)", err);
	seen_free(&s);
	rm_dir(dir);
}

static void
test_everysec(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	struct timespec			 ts = { 0, 2000000 };
	char				 dir[64];
	uint64_t			 closed;
	int				 ok_all = 1, tries;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	ok(journal_everysec_start(j, 5, err, sizeof(err)) == 0,
	    "everysec: the sync thread starts");
	/* append, write and rotate while the thread syncs */
	for (uint64_t i = 0; i < 200; i++) {
		ok_all &= append_gen(j, i * 50, (i + 1) * 50, 5) == 0 &&
		    journal_write(j, err, sizeof(err)) == 0;
		if (i % 40 == 39)
			ok_all &= journal_rotate(j, &closed, err,
			    sizeof(err)) == 0;
		if (i % 10 == 0)
			nanosleep(&ts, NULL);
	}
	ok(ok_all, "everysec: appends, writes and rotations beside the "
	    "thread");
	for (tries = 0; tries < 2000 && journal_unsynced(j) > 0; tries++)
		nanosleep(&ts, NULL);
	ok(journal_unsynced(j) == 0, "everysec: the thread syncs what was "
	    "written");
	journal_everysec_stop(j);
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    matches(&s, 0, 10000, 5), "everysec: all 10000 records replay");
	seen_free(&s);
	rm_dir(dir);
}

/* ---- version 2: key batches ---- */

/*
 * Segment 1: the generated records [0, 20) of 3 names, then one batch of
 * nlast keys of "last" in one millisecond. Returns where that batch
 * begins (its name record comes before it).
 */
static uint64_t
batch_segment(const char *dir, unsigned nlast)
{
	struct journal	*j;
	uint64_t	 start;

	if ((j = open_j(dir, 0)) == NULL)
		exit(2);
	append_gen(j, 0, 20, 3);
	journal_append(j, "last", 4, 9, 0, T0 + 500);
	journal_write(j, err, sizeof(err));
	start = journal_bytes(j);
	for (unsigned i = 1; i <= nlast; i++)
		journal_append(j, "last", 4, 9, i, T0 + 501);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	return start;
}

static void
test_torn_batch(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 whole;
	char				 dir[64], p1[128];
	uint64_t			 start;
	int				 good = 1;

	new_dir(dir, sizeof(dir));
	start = batch_segment(dir, 5);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	ok(whole.len == start + JOURNAL_BATCH_HEAD + 5 * 8, "torn batch: "
	    "5 keys in one batch of %zu bytes", (size_t)(whole.len - start));
	for (size_t cut = (size_t)start + 1; cut < whole.len; cut++) {
		spit(p1, whole.p, cut);
		if (journal_replay(dir, collect, &s, &info, err,
		    sizeof(err)) == -1 || !info.torn ||
		    info.torn_offset != start || s.n != 21) {
			if (good)
				diag("cut at %zu: %s, torn %d at %" PRIu64
				    ", %zu keys", cut, err, info.torn,
				    info.torn_offset, s.n);
			good = 0;
		}
		seen_free(&s);
	}
	ok(good, "torn batch: a cut in the header or the body of the last "
	    "batch is a torn tail at its start, the keys before replay");

	/* a count whose header checksum passes but whose body runs past
	 * the end: what a tear looks like, so a tear */
	memcpy(whole.p + start + 4, "\x06\0\0\0", 4);
	put_sum(whole.p + start + 20, whole.p + start, 20);
	spit(p1, whole.p, whole.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    info.torn && info.torn_offset == start && s.n == 21,
	    "torn batch: a right header whose body runs past the end of the "
	    "last segment is a torn tail");
	seen_free(&s);
	free(whole.p);
	rm_dir(dir);
}

static void
test_damaged_batch(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 whole, img;
	char				 dir[64], p1[128], want[64];
	uint64_t			 start;

	new_dir(dir, sizeof(dir));
	start = batch_segment(dir, 5);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	snprintf(want, sizeof(want), "at byte offset %" PRIu64 ";", start);

	/* the count's bit flipped: the header checksum fails, even for
	 * the last record of the last segment */
	img.len = whole.len;
	img.p = malloc(whole.len);
	memcpy(img.p, whole.p, whole.len);
	img.p[start + 4] ^= 0x40;
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "batch header fails its checksum") != NULL &&
	    strstr(err, want) != NULL, "damaged batch header: a flipped "
	    "count in the last batch is damage, not a tear (%s)", err);
	seen_free(&s);

	/* out of bounds with a header checksum that passes */
	memcpy(img.p, whole.p, whole.len);
	put_le32(img.p + start + 4, JOURNAL_BATCH_MAX + 1);
	put_sum(img.p + start + 20, img.p + start, 20);
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "batch of 8193 keys (1 to 8192)") != NULL &&
	    strstr(err, want) != NULL, "count out of bounds: damage before "
	    "the body is read (%s)", err);
	seen_free(&s);
	put_le32(img.p + start + 4, 0);
	put_sum(img.p + start + 20, img.p + start, 20);
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "batch of 0 keys") != NULL, "an empty batch is "
	    "damage");
	seen_free(&s);

	/* the body: damage wherever it is, the last batch included */
	memcpy(img.p, whole.p, whole.len);
	img.p[whole.len - 3] ^= 0x01;
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "batch fails its checksum") != NULL &&
	    strstr(err, want) != NULL && s.n == 21, "damaged body: the last "
	    "batch of the last segment failing its checksum is damage, "
	    "reported at its start after the keys before it (%s)", err);
	seen_free(&s);
	/* its last hash zeroed (not from a page boundary): damage too */
	memset(img.p + whole.len - 8, 0, 8);
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1,
	    "a zeroed hash that does not start at a page boundary is damage");
	seen_free(&s);
	free(img.p);
	free(whole.p);
	rm_dir(dir);

	/* a batch of a segment that is not the last, cut short */
	new_dir(dir, sizeof(dir));
	if (two_segments(dir, 10, 20, 1) == -1)
		return;
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	spit(p1, whole.p, whole.len - 4);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "incomplete record at the end of a segment that is "
	    "not the last") != NULL, "a batch cut short in an earlier "
	    "segment is damage");
	seen_free(&s);
	free(whole.p);
	rm_dir(dir);
}

/*
 * After a power loss a file system may keep the new size of the last
 * segment and lose pages it had not written back: zero bytes from a page
 * boundary to the end, inside a record.
 */
static void
zero_pages(unsigned first, unsigned second, uint64_t want_start,
    const char *what)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	struct blob			 whole;
	char				 dir[64], p1[128];
	int				 rc;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	for (unsigned i = 0; i < first; i++)
		journal_append(j, "pages", 5, 3, i, T0);
	journal_write(j, err, sizeof(err));
	for (unsigned i = 0; i < second; i++)
		journal_append(j, "pages", 5, 3, first + i, T0 + 1);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &whole);
	memset(whole.p + 4096, 0, whole.len - 4096);
	spit(p1, whole.p, whole.len);
	rc = journal_replay(dir, collect, &s, &info, err, sizeof(err));
	ok(rc == 0 && info.torn && info.torn_offset == want_start &&
	    info.torn_bytes == whole.len - want_start && s.n == first,
	    "zero pages: zeros from offset 4096 to the end inside the last "
	    "batch's %s are a torn tail at its start (%s)", what,
	    rc == -1 ? err : "replayed");
	seen_free(&s);
	whole.p[whole.len - 1] = 1;
	spit(p1, whole.p, whole.len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "fails its checksum") != NULL, "zero pages: not "
	    "zero to the end, the same batch is damage");
	seen_free(&s);
	free(whole.p);
	rm_dir(dir);
}

static void
test_zero_pages(void)
{
	/* 40 + 84 + 24 + 8 * 493 = 4092: the second header spans 4096 */
	zero_pages(493, 2, 4092, "header");
	/* the second body spans 4096 */
	zero_pages(400, 200, 40 + 84 + 24 + 400 * 8, "body");
}

static void
test_batch_max(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64];
	const unsigned			 n = 2 * JOURNAL_BATCH_MAX + 5;
	uint64_t			 b0;
	int				 good = 1;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	b0 = journal_bytes(j);
	for (unsigned i = 0; i < n; i++)
		good &= journal_append(j, "big", 3, 1, i, T0) == 0;
	ok(good && journal_bytes(j) - b0 == JOURNAL_NAME_SIZE +
	    3 * JOURNAL_BATCH_HEAD + 8 * (uint64_t)n, "batch max: %u keys "
	    "of one filter and millisecond make 3 batches", n);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == n && s.v[n - 1].hash == n - 1 && s.v[0].time == T0 &&
	    strcmp(s.v[JOURNAL_BATCH_MAX].name, "big") == 0, "batch max: "
	    "all replay (%s)", err);
	seen_free(&s);
	rm_dir(dir);

	/* a small buffer ends batches early, never a key too many */
	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 4 * JOURNAL_APPEND_MAX)) == NULL)
		return;
	good = 1;
	for (unsigned i = 0; i < 1000; i++) {
		if (journal_full(j))
			good &= journal_write(j, err, sizeof(err)) == 0;
		good &= journal_append(j, "small", 5, 1, i, T0) == 0;
	}
	good &= journal_write(j, err, sizeof(err)) == 0;
	journal_close(j);
	ok(good && journal_replay(dir, collect, &s, &info, err,
	    sizeof(err)) == 0 && s.n == 1000 && s.v[999].hash == 999,
	    "a 464-byte buffer: 1000 keys in batches that fit it");
	seen_free(&s);
	rm_dir(dir);
}

/* ---- version 1 segments (seend 0.x), which must still replay ---- */

struct v1 {
	unsigned char	 p[8192];
	size_t		 len;
	int		 bound[3];
	uint64_t	 time;
};

static unsigned char *
v1_rec(struct v1 *v, unsigned type, size_t size)
{
	unsigned char *p = v->p + v->len;

	memset(p, 0, size);
	p[0] = (unsigned char)type;
	p[1] = (unsigned char)size;
	v->len += size;
	return p;
}

/* A version 1 segment holding the generated records [0, n) of 3 names. */
static void
v1_segment(struct v1 *v, uint64_t seq, uint64_t n)
{
	unsigned char	*p;
	struct rec	 r;
	unsigned	 id;

	memset(v, 0, sizeof(*v));
	memcpy(v->p, JOURNAL_MAGIC, 8);
	put_le32(v->p + 8, 1);
	put_le32(v->p + 12, JOURNAL_HEADER_SIZE);
	put_le(v->p + 16, seq, 8);
	put_le(v->p + 24, T0 / 1000, 8);
	put_sum(v->p + 36, v->p, 36);
	v->len = JOURNAL_HEADER_SIZE;
	for (uint64_t i = 0; i < n; i++) {
		gen(&r, i, 3);
		id = (unsigned)(strchr(r.name, '-')[1] - '0');
		if (!v->bound[id]) {
			p = v1_rec(v, JOURNAL_REC_NAME, JOURNAL_NAME_SIZE);
			put_le(p + 2, id, 2);
			p[4] = (unsigned char)strlen(r.name);
			put_le(p + 8, r.seed, 8);
			memcpy(p + 16, r.name, strlen(r.name));
			put_sum(p + 80, p, 80);
			v->bound[id] = 1;
		}
		if (i == 0 || r.time != v->time) {
			p = v1_rec(v, JOURNAL_REC_TIME, JOURNAL_TIME_SIZE);
			put_le(p + 4, r.time, 8);
			put_sum(p + 12, p, 12);
			v->time = r.time;
		}
		p = v1_rec(v, JOURNAL_REC_KEY, JOURNAL_KEY_SIZE);
		put_le(p + 2, id, 2);
		put_le(p + 4, r.hash, 8);
		put_sum(p + 12, p, 12);
	}
}

static void
test_version1(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	struct v1			*v;
	char				 dir[64], p1[128];
	uint64_t			 last_rec;

	if ((v = malloc(sizeof(*v))) == NULL)
		exit(2);
	new_dir(dir, sizeof(dir));
	seg(p1, sizeof(p1), dir, 1);
	v1_segment(v, 1, 50);
	spit(p1, v->p, v->len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    !info.torn && matches(&s, 0, 50, 3), "version 1: a segment of "
	    "seend 0.x replays (%s)", err);
	seen_free(&s);

	/* torn in its last 'K' record */
	last_rec = v->len - JOURNAL_KEY_SIZE;
	spit(p1, v->p, v->len - 5);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    info.torn && info.torn_offset == last_rec && s.n == 49,
	    "version 1: a torn 'K' record is a torn tail");
	seen_free(&s);
	spit(p1, v->p, v->len);

	/* upgraded in place: the next segment is version 2 */
	if ((j = open_j(dir, 0)) == NULL)
		return;
	append_gen(j, 50, 100, 3);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    info.segments == 2 && matches(&s, 0, 100, 3), "version 1 then "
	    "version 2: both replay, in order (%s)", err);
	seen_free(&s);

	/* a flipped bit in the old segment is damage as before */
	v->p[v->len - 10] ^= 2;
	spit(p1, v->p, v->len);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "record fails its checksum") != NULL,
	    "version 1: a damaged record is refused");
	seen_free(&s);
	free(v);
	rm_dir(dir);
}

/* ---- version 3: resets ---- */

/*
 * Segment 1 of dir: two keys of "news" with seed 111, the reset of
 * "news" from 111 to 222, a key of "news" with 222 and one of "sport";
 * *at is the reset record's offset.
 */
static int
reset_segment(const char *dir, uint64_t *at)
{
	struct journal	*j;

	if ((j = open_j(dir, 0)) == NULL)
		return -1;
	journal_append(j, "news", 4, 111, 1, T0);
	journal_append(j, "news", 4, 111, 2, T0);
	*at = journal_bytes(j);
	if (journal_append_reset(j, "news", 4, 111, 222, T0 + 5) == -1) {
		journal_close(j);
		return -1;
	}
	journal_append(j, "news", 4, 222, 3, T0 + 5);
	journal_append(j, "sport", 5, 333, 4, T0 + 6);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	return 0;
}

static void
test_reset_record(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64], big[JOURNAL_NAME_MAX + 2];
	uint64_t			 at, b0, before;
	int				 n;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	journal_append(j, "news", 4, 111, 1, T0);
	b0 = journal_bytes(j);
	ok(journal_append_reset(j, "news", 4, 111, 222, T0) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_RESET_SIZE, "reset: a record "
	    "of %d bytes, whatever batch is open", JOURNAL_RESET_SIZE);
	b0 = journal_bytes(j);
	journal_append(j, "news", 4, 222, 2, T0);
	ok(journal_bytes(j) - b0 == JOURNAL_APPEND_MAX, "reset: the next "
	    "key, of the new seed, binds the name again and opens a batch");
	memset(big, 'x', sizeof(big));
	ok(journal_append_reset(j, "", 0, 1, 2, T0) == -1 && errno == EINVAL &&
	    journal_append_reset(j, big, JOURNAL_NAME_MAX + 1, 1, 2, T0) ==
	    -1 && errno == EINVAL && journal_append_reset(j, big,
	    JOURNAL_NAME_MAX, 1, 2, T0) == 0, "reset: names of 1 to 64 bytes");
	journal_close(j);
	rm_dir(dir);

	new_dir(dir, sizeof(dir));
	if (reset_segment(dir, &at) == -1)
		return;
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == 5 && info.keys == 4 && info.resets == 1,
	    "reset: replay gives 4 keys and 1 reset (%s)", err);
	ok(s.n == 5 && !s.v[0].reset && s.v[0].hash == 1 && !s.v[1].reset &&
	    s.v[1].hash == 2 && s.v[2].reset && s.v[2].seed == 111 &&
	    s.v[2].new_seed == 222 && s.v[2].time == T0 + 5 &&
	    strcmp(s.v[2].name, "news") == 0 && !s.v[3].reset &&
	    s.v[3].seed == 222 && s.v[3].hash == 3 && !s.v[4].reset &&
	    strcmp(s.v[4].name, "sport") == 0, "reset: in order between the "
	    "keys before and after it, with both seeds and its time");
	seen_free(&s);
	rm_dir(dir);

	/* a full buffer refuses and adds nothing */
	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 4 * JOURNAL_APPEND_MAX)) == NULL)
		return;
	for (n = 0; n < 1000; n++)
		if (journal_append(j, "f", 1, 5, (uint64_t)n, T0) == -1)
			break;
	before = journal_pending(j);
	ok(journal_append_reset(j, "f", 1, 5, 6, T0) == -1 &&
	    errno == ENOBUFS && journal_pending(j) == before,
	    "reset: a full buffer refuses with ENOBUFS, nothing added");
	ok(journal_write(j, err, sizeof(err)) == 0 &&
	    journal_append_reset(j, "f", 1, 5, 6, T0) == 0 &&
	    journal_write(j, err, sizeof(err)) == 0, "reset: taken once "
	    "the buffer is written");
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == (size_t)n + 1 && s.v[n].reset && info.resets == 1,
	    "reset: after %d keys, last", n);
	seen_free(&s);
	rm_dir(dir);
}

static void
test_reset_damage(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct blob			 img;
	char				 dir[64], p1[128];
	uint64_t			 at;
	int				 refused = 1, torn_ok = 1, cuts = 0;

	new_dir(dir, sizeof(dir));
	if (reset_segment(dir, &at) == -1)
		return;
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &img);
	ok(img.p[at] == JOURNAL_REC_RESET && img.p[at + 1] ==
	    JOURNAL_RESET_SIZE, "reset: the record is where it was appended");

	/* every single-bit flip in it */
	for (size_t bit = 0; bit < JOURNAL_RESET_SIZE * 8; bit++) {
		size_t off = (size_t)at + bit / 8;

		img.p[off] ^= (unsigned char)(1u << (bit % 8));
		spit(p1, img.p, img.len);
		if (journal_replay(dir, NULL, NULL, &info, err, sizeof(err))
		    != -1 || strstr(err, "at byte offset") == NULL) {
			if (refused)
				diag("reset byte %zu: %s", off - at, err);
			refused = 0;
		}
		img.p[off] ^= (unsigned char)(1u << (bit % 8));
	}
	ok(refused, "reset: all %d single-bit flips in it are damage, "
	    "with the offset", JOURNAL_RESET_SIZE * 8);

	/* its name padding must be zero: a sealed record that says more */
	img.p[at + 32 + 10] = 'x';
	put_sum(img.p + at + JOURNAL_RESET_SIZE - 4, img.p + at,
	    JOURNAL_RESET_SIZE - 4);
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "bad reset record") != NULL, "reset: bytes after "
	    "its name are damage (%s)", err);
	img.p[at + 32 + 10] = 0;
	put_sum(img.p + at + JOURNAL_RESET_SIZE - 4, img.p + at,
	    JOURNAL_RESET_SIZE - 4);

	/* cut anywhere inside it at the end of the last segment: torn */
	for (size_t cut = 1; cut < JOURNAL_RESET_SIZE; cut++) {
		spit(p1, img.p, (size_t)at + cut);
		cuts++;
		if (journal_replay(dir, collect, &s, &info, err, sizeof(err))
		    != 0 || !info.torn || info.torn_offset != at ||
		    s.n != 2 || info.resets != 0)
			torn_ok = 0;
		seen_free(&s);
	}
	ok(torn_ok, "reset: each of %d cuts inside it is a torn tail at its "
	    "start, the 2 keys before it replay", cuts);

	/* a version 2 segment never held one */
	spit(p1, img.p, img.len);
	put_le32(img.p + 8, JOURNAL_VERSION_V2);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "unknown record type 0x45 in a version 2 segment") !=
	    NULL, "reset: in a version 2 segment it is damage (%s)", err);
	free(img.p);
	rm_dir(dir);
}

/* journal_reserve: a buffer that must not be written now grows, the open
 * batch with it, and goes back to its size once written. */
static void
test_reserve(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	char				 dir[64];
	size_t				 base = 4 * JOURNAL_APPEND_MAX;
	uint64_t			 n = 0;
	int				 all = 1;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, base)) == NULL)
		return;
	while (!journal_full(j))
		all &= append_gen(j, n, n + 1, 1) == 0, n++;
	ok(all && journal_room(j) < JOURNAL_APPEND_MAX, "reserve: the "
	    "buffer is full after %" PRIu64 " keys", n);
	ok(journal_reserve(j, 64 * 1024) == 0 && journal_room(j) >= 64 * 1024,
	    "reserve: it grows to take 64 KiB more");
	while (journal_room(j) >= JOURNAL_APPEND_MAX && n < 5000)
		all &= append_gen(j, n, n + 1, 1) == 0, n++;
	ok(all && n > 5000 / 2, "reserve: %" PRIu64 " keys without a write",
	    n);
	ok(journal_write(j, err, sizeof(err)) == 0 && journal_room(j) == base,
	    "reserve: written, the buffer is back to %zu bytes", base);
	all &= append_gen(j, n, n + 10, 1) == 0;
	n += 10;
	ok(all && journal_write(j, err, sizeof(err)) == 0, "reserve: keys "
	    "after it");
	journal_close(j);
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    matches(&s, 0, n, 1), "reserve: all %" PRIu64 " keys replay, in "
	    "order (%s)", n, err);
	seen_free(&s);
	rm_dir(dir);
}

/* ---- seeds for the fuzzer ---- */

/*
 * Version 3 seeds (v3-*, with a reset record). The v1-* seeds in the
 * corpus were written by seend 0.x's writer and the v2-* ones by seend
 * 1.x's, and are kept as they are: replay reads versions 1 and 2.
 */
static void
write_corpus(const char *out)
{
	struct journal	*j;
	struct blob	 b;
	char		 dir[64], p1[128], path[512];
	uint64_t	 start, reset_at;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		exit(2);
	append_gen(j, 0, 30, 4);
	journal_append(j, "a-much-longer-filter-name-for-the-name-record", 45,
	    3, 7, T0 + 99);
	journal_write(j, err, sizeof(err));
	start = journal_bytes(j);
	for (uint64_t i = 0; i < 40; i++)
		journal_append(j, "f", 1, 5, i, T0 + 100 + i / 20);
	journal_append_reset(j, "f", 1, 5, 6, T0 + 102);
	for (uint64_t i = 0; i < 5; i++)
		journal_append(j, "f", 1, 6, 100 + i, T0 + 103);
	reset_at = journal_bytes(j);
	journal_append_reset(j, "a-much-longer-filter-name-for-the-name-record",
	    45, 3, 4, T0 + 104);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &b);
	snprintf(path, sizeof(path), "%s/v3-valid", out);
	spit(path, b.p, b.len);
	/* cut inside the last record, a reset */
	snprintf(path, sizeof(path), "%s/v3-torn", out);
	spit(path, b.p, (size_t)reset_at + 37);
	snprintf(path, sizeof(path), "%s/v3-header-only", out);
	spit(path, b.p, 40);
	b.p[start + JOURNAL_NAME_SIZE + 30] ^= 4;
	b.p[reset_at + 20] ^= 1;
	snprintf(path, sizeof(path), "%s/v3-damaged", out);
	spit(path, b.p, b.len);
	free(b.p);
	rm_dir(dir);
}

int
main(void)
{
	const char *corpus = getenv("JOURNAL_CORPUS_DIR");

	if (corpus != NULL) {
		write_corpus(corpus);
		return 0;
	}
	test_round_trip();
	test_rotate_drop();
	test_torn_tail();
	test_zero_tail();
	test_flipped_bit();
	test_way_out();
	test_enospc();
	test_buffer_bound();
	test_record_sizes();
	test_new_seed();
	test_empty_segments();
	test_header_checks();
	test_callback_stops();
	test_everysec();
	test_torn_batch();
	test_damaged_batch();
	test_zero_pages();
	test_batch_max();
	test_version1();
	test_reset_record();
	test_reset_damage();
	test_reserve();
	return done_testing();
}
