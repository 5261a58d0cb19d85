/*
 * test_journal.c - the journal: round trip across segments, rotation and
 * dropping, a torn tail at every byte of the last record, one flipped bit
 * anywhere reported as damage with the file untouched, ENOSPC that keeps
 * the records, size accounting, empty and header-only segments, unknown
 * versions, the everysec thread; version 2's key batches (torn, damaged
 * header or body, count out of bounds, zero pages after a power loss,
 * split at JOURNAL_BATCH_MAX) and version 1 segments, which still replay;
 * version 3's reset records (in order among the keys, torn, damaged, not
 * in a version 2 segment) and a buffer grown by journal_reserve; version
 * 4's forget ('f') and copy ('a') batches (in order among the 'B' keys of
 * their filter and millisecond, never continued by the fast path, torn,
 * damaged, not in a version 3 or 2 segment) and journal_position.
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
#include "fixture.h"
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
	int		 op;		/* JOURNAL_OP_* */
	uint64_t	 seq, offset;	/* where replay found it */
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
	s->v[s->n].op = k->op;
	s->v[s->n].seq = k->seq;
	s->v[s->n].offset = k->offset;
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
		    s->v[i - from].op != JOURNAL_OP_NEW ||
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
	struct buf			 whole, before;
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
	struct buf			 whole;
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
record_start(const struct buf *b, uint64_t off)
{
	uint64_t at = 40, size;

	if (off < 40)
		return 0;
	while (at < b->len) {
		switch (b->p[at]) {
		case JOURNAL_REC_NAME: size = JOURNAL_NAME_SIZE; break;
		case JOURNAL_REC_BATCH:
		case JOURNAL_REC_FORGET:
		case JOURNAL_REC_COPY:
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
	struct buf			 img[2], now;
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
	struct buf			 img;
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
	struct buf			 hdr;
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
	struct buf			 img;
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
	struct buf			 whole;
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
	struct buf			 whole, img;
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
	struct buf			 whole;
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
	struct buf			 img;
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

/* ---- version 4: forget ('f') and copy ('a') batches ---- */

#define CF_SEED		0xcf5eedcf5eedULL

/*
 * The types and offsets of the records of a version 2 to 4 segment image,
 * in order, up to max of them or the first it cannot size.
 */
static size_t
walk(const struct buf *b, unsigned char *types, uint64_t *offs, size_t max)
{
	uint64_t	 at = JOURNAL_HEADER_SIZE, size;
	size_t		 n = 0;

	while (at + JOURNAL_BATCH_HEAD <= b->len && n < max) {
		switch (b->p[at]) {
		case JOURNAL_REC_NAME:
			size = JOURNAL_NAME_SIZE;
			break;
		case JOURNAL_REC_RESET:
			size = JOURNAL_RESET_SIZE;
			break;
		case JOURNAL_REC_BATCH:
		case JOURNAL_REC_FORGET:
		case JOURNAL_REC_COPY:
			size = JOURNAL_BATCH_HEAD +
			    8 * (uint64_t)get_le32(b->p + at + 4);
			break;
		default:
			return n;
		}
		types[n] = b->p[at];
		offs[n++] = at;
		at += size;
	}
	return n;
}

static void
test_op_order(void)
{
	static const int		 want[10] = { JOURNAL_OP_NEW,
	    JOURNAL_OP_NEW, JOURNAL_OP_FORGET, JOURNAL_OP_FORGET,
	    JOURNAL_OP_NEW, JOURNAL_OP_COPY, JOURNAL_OP_COPY, JOURNAL_OP_NEW,
	    JOURNAL_OP_NEW, JOURNAL_OP_FORGET };
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	struct buf			 img;
	const char			*name = "cf";
	char				 dir[64], p1[128];
	unsigned char			 types[16];
	uint64_t			 offs[16], b0;
	size_t				 n;
	int				 order = 1;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	ok(journal_append(j, name, 2, CF_SEED, 1, T0) == 0 &&
	    journal_append_fast(j, name, CF_SEED, 2, T0) == 1,
	    "ops: a 'B' batch is open and the fast path continues it");
	b0 = journal_bytes(j);
	ok(journal_append_op(j, JOURNAL_OP_FORGET, name, 2, CF_SEED, 3, T0) ==
	    0 && journal_bytes(j) - b0 == JOURNAL_BATCH_HEAD + 8,
	    "ops: a forget of the same filter and millisecond opens an 'f' "
	    "batch (24 + 8 bytes, the name already bound)");
	ok(journal_append_fast(j, name, CF_SEED, 100, T0) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_BATCH_HEAD + 8,
	    "ops: the fast path never continues an 'f' batch: 0, nothing "
	    "stored");
	b0 = journal_bytes(j);
	ok(journal_append_op(j, JOURNAL_OP_FORGET, name, 2, CF_SEED, 4, T0) ==
	    0 && journal_bytes(j) - b0 == 8, "ops: the next forget continues "
	    "the 'f' batch (8 bytes)");
	b0 = journal_bytes(j);
	ok(journal_append(j, name, 2, CF_SEED, 5, T0) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_BATCH_HEAD + 8, "ops: a key "
	    "answered new after it opens a new 'B' batch");
	b0 = journal_bytes(j);
	ok(journal_append_op(j, JOURNAL_OP_COPY, name, 2, CF_SEED, 6, T0) ==
	    0 && journal_append_fast(j, name, CF_SEED, 101, T0) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_BATCH_HEAD + 8, "ops: a copy "
	    "opens an 'a' batch, which the fast path does not continue "
	    "either");
	b0 = journal_bytes(j);
	ok(journal_append_op(j, JOURNAL_OP_COPY, name, 2, CF_SEED, 7, T0) ==
	    0 && journal_bytes(j) - b0 == 8, "ops: the next copy continues "
	    "the 'a' batch");
	ok(journal_append(j, name, 2, CF_SEED, 8, T0) == 0 &&
	    journal_append_fast(j, name, CF_SEED, 9, T0) == 1,
	    "ops: the 'B' batch after them is the fast path's again");
	b0 = journal_bytes(j);
	ok(journal_append_op(j, JOURNAL_OP_FORGET, name, 2, CF_SEED, 10,
	    T0 + 1) == 0 && journal_bytes(j) - b0 == JOURNAL_BATCH_HEAD + 8,
	    "ops: a forget of another millisecond opens a batch");
	errno = 0;
	ok(journal_append_op(j, JOURNAL_OP_FORGET, "", 0, CF_SEED, 1, T0) ==
	    -1 && errno == EINVAL && journal_bytes(j) - b0 ==
	    JOURNAL_BATCH_HEAD + 8, "ops: an empty name is refused "
	    "(EINVAL), nothing added");
	err[0] = '\0';
	ok(journal_write(j, err, sizeof(err)) == 0, "ops: written%s%s",
	    err[0] ? ": " : "", err);
	journal_close(j);

	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &img);
	n = walk(&img, types, offs, 16);
	ok(get_le32(img.p + 8) == 4 && n == 7 &&
	    memcmp(types, "NBfBaBf", 7) == 0 && offs[6] + JOURNAL_BATCH_HEAD +
	    8 == img.len, "ops: a version 4 segment of records N B f B a B f "
	    "(%.*s)", (int)n, (const char *)types);
	err[0] = '\0';
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == 10 && info.keys == 10 && info.resets == 0 && !info.torn,
	    "ops: replay gives 10 keys (%s)", err[0] ? err : "ok");
	for (size_t i = 0; i < s.n && i < 10; i++)
		order &= s.v[i].hash == i + 1 && s.v[i].op == want[i] &&
		    !s.v[i].reset && strcmp(s.v[i].name, "cf") == 0 &&
		    s.v[i].seed == CF_SEED && s.v[i].time == T0 + (i == 9) &&
		    s.v[i].seq == 1 && (i == 0 ||
		    s.v[i].offset > s.v[i - 1].offset);
	ok(s.n == 10 && order, "ops: in the order appended, each with its op "
	    "(new new forget forget new copy copy new new forget), name, "
	    "seed and time");
	seen_free(&s);
	free(img.p);
	rm_dir(dir);
}

/*
 * Segment 1 of dir: keys 1 and 2 of "cf" answered new, two keys of op
 * (3, 4), key 5 new, two keys of the other op (6, 7), all in one
 * millisecond: records N B x B y with y last. *x_at and *y_at are where
 * the two op batches begin.
 */
static int
op_segment(const char *dir, int op, uint64_t *x_at, uint64_t *y_at)
{
	struct journal	*j;
	int		 other = op == JOURNAL_OP_FORGET ? JOURNAL_OP_COPY :
			    JOURNAL_OP_FORGET, rc = 0;

	if ((j = open_j(dir, 0)) == NULL)
		return -1;
	rc |= journal_append(j, "cf", 2, CF_SEED, 1, T0);
	rc |= journal_append(j, "cf", 2, CF_SEED, 2, T0);
	*x_at = journal_bytes(j);
	rc |= journal_append_op(j, op, "cf", 2, CF_SEED, 3, T0);
	rc |= journal_append_op(j, op, "cf", 2, CF_SEED, 4, T0);
	rc |= journal_append(j, "cf", 2, CF_SEED, 5, T0);
	*y_at = journal_bytes(j);
	rc |= journal_append_op(j, other, "cf", 2, CF_SEED, 6, T0);
	rc |= journal_append_op(j, other, "cf", 2, CF_SEED, 7, T0);
	rc |= journal_write(j, err, sizeof(err));
	journal_close(j);
	return rc == 0 ? 0 : -1;
}

/* A version 3 (or 2) segment never held an 'f' or an 'a': damage. */
static void
test_op_old_versions(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct buf			 img;
	char				 dir[64], p1[128], want[128];
	uint64_t			 x_at, y_at;

	for (int k = 0; k < 2; k++) {
		int	 op = k == 0 ? JOURNAL_OP_FORGET : JOURNAL_OP_COPY;
		int	 type = k == 0 ? JOURNAL_REC_FORGET : JOURNAL_REC_COPY;

		new_dir(dir, sizeof(dir));
		if (op_segment(dir, op, &x_at, &y_at) == -1) {
			ok(0, "old versions: setup (%s)", err);
			return;
		}
		seg(p1, sizeof(p1), dir, 1);
		slurp(p1, &img);
		ok(img.p[x_at] == type && get_le32(img.p + 8) == 4,
		    "'%c' in a version 4 segment at %" PRIu64, type, x_at);
		for (uint32_t v = JOURNAL_VERSION_V3; v >= JOURNAL_VERSION_V2;
		    v--) {
			put_le32(img.p + 8, v);
			put_sum(img.p + 36, img.p, 36);
			spit(p1, img.p, img.len);
			snprintf(want, sizeof(want), "unknown record type "
			    "0x%02x in a version %u segment", type, v);
			ok(journal_replay(dir, collect, &s, &info, err,
			    sizeof(err)) == -1 && strstr(err, want) != NULL &&
			    strstr(err, p1) != NULL && s.n == 2,
			    "'%c' in a version %u segment: damage after the 2 "
			    "keys before it (%s)", type, v, err);
			snprintf(want, sizeof(want), "at byte offset %" PRIu64
			    ";", x_at);
			ok(strstr(err, want) != NULL, "'%c' in a version %u "
			    "segment: the message gives its offset", type, v);
			seen_free(&s);
		}
		ok(journal_open(dir, NULL, 0, err, sizeof(err)) == NULL &&
		    same_file(p1, &img), "'%c' in a version 2 segment: "
		    "journal_open refuses it too, the file kept", type);
		free(img.p);
		rm_dir(dir);
	}
}

/*
 * Every single-bit flip in the two op batches (the one in the middle, the
 * one last in the last segment) is damage reported at the batch's start,
 * as for 'B'; a cut inside the last one is a torn tail at its start.
 */
static void
test_op_damage(void)
{
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct buf			 img;
	char				 dir[64], p1[128], want[64];
	uint64_t			 at[2];
	int				 refused, untouched, torn_ok, ops_ok;
	unsigned			 flips, cuts;

	for (int k = 0; k < 2; k++) {
		int op = k == 0 ? JOURNAL_OP_FORGET : JOURNAL_OP_COPY;
		int mid = op == JOURNAL_OP_FORGET ? 'f' : 'a';
		int last = op == JOURNAL_OP_FORGET ? 'a' : 'f';

		new_dir(dir, sizeof(dir));
		if (op_segment(dir, op, &at[0], &at[1]) == -1) {
			ok(0, "op damage: setup (%s)", err);
			return;
		}
		seg(p1, sizeof(p1), dir, 1);
		slurp(p1, &img);
		ok(img.len == at[1] + JOURNAL_BATCH_HEAD + 16 &&
		    img.p[at[0]] == mid && img.p[at[1]] == last,
		    "op damage: '%c' in the middle, '%c' last", mid, last);
		for (int r = 0; r < 2; r++) {
			refused = untouched = 1;
			flips = 0;
			snprintf(want, sizeof(want), "at byte offset %" PRIu64
			    ";", at[r]);
			for (size_t bit = 0; bit < (JOURNAL_BATCH_HEAD + 16) *
			    8; bit++) {
				size_t off = (size_t)at[r] + bit / 8;

				img.p[off] ^= (unsigned char)(1u << (bit % 8));
				spit(p1, img.p, img.len);
				flips++;
				err[0] = '\0';
				if (journal_replay(dir, NULL, NULL, &info, err,
				    sizeof(err)) != -1 ||
				    strstr(err, want) == NULL) {
					if (refused)
						diag("'%c' byte %zu bit %zu: %s",
						    r ? last : mid,
						    off - (size_t)at[r],
						    bit % 8, err);
					refused = 0;
				}
				untouched &= same_file(p1, &img);
				img.p[off] ^= (unsigned char)(1u << (bit % 8));
			}
			spit(p1, img.p, img.len);
			ok(refused, "op damage: all %u single-bit flips in the "
			    "'%c' batch (%s) are damage at its offset, none a "
			    "torn tail", flips, r ? last : mid,
			    r ? "last in the last segment" : "in the middle");
			ok(untouched, "op damage: replay changes nothing");
		}

		/* the middle batch's count: its header checksum fails */
		img.p[at[0] + 4] ^= 0x02;
		spit(p1, img.p, img.len);
		ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) ==
		    -1 && strstr(err, "batch header fails its checksum") !=
		    NULL, "op damage: a flipped count in '%c' fails the header "
		    "checksum (%s)", mid, err);
		img.p[at[0] + 4] ^= 0x02;
		/* a sealed count of 0 */
		put_le32(img.p + at[0] + 4, 0);
		put_sum(img.p + at[0] + 20, img.p + at[0], 20);
		spit(p1, img.p, img.len);
		ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) ==
		    -1 && strstr(err, "batch of 0 keys") != NULL,
		    "op damage: an empty '%c' batch is damage (%s)", mid, err);
		put_le32(img.p + at[0] + 4, 2);
		put_sum(img.p + at[0] + 20, img.p + at[0], 20);

		/* cut anywhere inside the last batch: a torn tail */
		torn_ok = ops_ok = 1;
		cuts = 0;
		for (size_t cut = (size_t)at[1] + 1; cut < img.len; cut++) {
			spit(p1, img.p, cut);
			cuts++;
			if (journal_replay(dir, collect, &s, &info, err,
			    sizeof(err)) != 0 || !info.torn ||
			    info.torn_offset != at[1] ||
			    info.torn_bytes != cut - at[1] || s.n != 5) {
				if (torn_ok)
					diag("cut at %zu: %s, torn %d at %"
					    PRIu64 ", %zu keys", cut, err,
					    info.torn, info.torn_offset, s.n);
				torn_ok = 0;
			} else
				ops_ok &= s.v[2].op == op && s.v[3].op == op &&
				    s.v[4].op == JOURNAL_OP_NEW &&
				    s.v[4].hash == 5;
			seen_free(&s);
		}
		ok(torn_ok && ops_ok, "op torn: each of %u cuts inside the "
		    "last '%c' batch is a torn tail at its start; the 5 keys "
		    "before it replay with their ops", cuts, last);
		spit(p1, img.p, img.len);
		err[0] = '\0';
		ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) ==
		    0 && s.n == 7 && !info.torn, "op damage: the restored "
		    "segment replays (%s)", err[0] ? err : "ok");
		seen_free(&s);
		free(img.p);
		rm_dir(dir);
	}
}

/* ---- journal_position ---- */

struct jpos {
	uint64_t	 seq, off;
	size_t		 before;	/* keys appended before it was taken */
};

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* (a, b) < (c, d), the order of journal positions. */
static int
pos_lt(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return a < c || (a == c && b < d);
}

/*
 * Where a snapshot of a cuckoo filter says it was captured: every key
 * appended before the call is below that position, every key appended
 * after it at or above it (persist.c skips offset < joff, so a key that
 * continues the open batch, whose hash goes exactly there, is applied),
 * across 'B', 'f' and 'a' batches, writes and rotations.
 */
static void
test_position(void)
{
	static const char *const names[2] = { "cf", "other-cf" };
	struct journal_replay_info	 info;
	struct seen			 s = { 0 };
	struct journal			*j;
	struct jpos			*pos;
	char				 dir[64], p[128];
	uint64_t			 x = 42, seq, off, r, t = T0, closed;
	uint64_t			 equal = 0, above = 0;
	size_t				 npos = 0, keys = 0, bad = 0;
	int				 good = 1, after_write = 1;
	int				 after_rotate = 1, monotonic = 1;
	const size_t			 steps = 4000;

	if ((pos = calloc(steps + 2, sizeof(*pos))) == NULL)
		exit(2);
	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 4096)) == NULL)
		return;
	off = journal_position(j, &seq);
	ok(seq == 1 && off == JOURNAL_HEADER_SIZE, "position: a new journal "
	    "is at (1, %d) (%" PRIu64 ", %" PRIu64 ")", JOURNAL_HEADER_SIZE,
	    seq, off);
	/* the open batch: the next key's hash goes at the position */
	good &= journal_append(j, "cf", 2, CF_SEED, 0, t) == 0;
	keys++;
	pos[npos].off = journal_position(j, &pos[npos].seq);
	pos[npos++].before = keys;
	good &= journal_append_fast(j, "cf", CF_SEED, 1, t) == 1;
	keys++;
	for (size_t i = 0; i < steps; i++) {
		const char	*name = names[(r = splitmix64(&x)) & 1];
		unsigned	 what = (unsigned)((r >> 8) % 100);
		uint64_t	 h = 0x1000 + keys;

		if ((r >> 32) % 40 == 0)
			t++;
		if (journal_full(j))
			good &= journal_write(j, err, sizeof(err)) == 0;
		if (what < 45) {
			good &= journal_append(j, name, strlen(name), CF_SEED,
			    h, t) == 0;
			keys++;
		} else if (what < 60) {
			good &= journal_append_op(j, JOURNAL_OP_FORGET, name,
			    strlen(name), CF_SEED, h, t) == 0;
			keys++;
		} else if (what < 70) {
			good &= journal_append_op(j, JOURNAL_OP_COPY, name,
			    strlen(name), CF_SEED, h, t) == 0;
			keys++;
		} else if (what < 76) {
			good &= journal_write(j, err, sizeof(err)) == 0;
			off = journal_position(j, &seq);
			seg(p, sizeof(p), dir, journal_seq(j));
			after_write &= seq == journal_seq(j) &&
			    off == file_size(p) && journal_pending(j) == 0;
			pos[npos].seq = seq;
			pos[npos].off = off;
			pos[npos++].before = keys;
		} else if (what < 78) {
			good &= journal_rotate(j, &closed, err,
			    sizeof(err)) == 0;
			off = journal_position(j, &seq);
			after_rotate &= seq == closed + 1 &&
			    off == JOURNAL_HEADER_SIZE;
			pos[npos].seq = seq;
			pos[npos].off = off;
			pos[npos++].before = keys;
		} else {
			pos[npos].off = journal_position(j, &pos[npos].seq);
			pos[npos++].before = keys;
		}
	}
	good &= journal_write(j, err, sizeof(err)) == 0;
	ok(good, "position: %zu keys of 'B', 'f' and 'a' batches appended "
	    "with writes and rotations, %zu positions taken", keys, npos);
	ok(after_write, "position: after journal_write, the current segment "
	    "and its size");
	ok(after_rotate, "position: after journal_rotate, the new segment "
	    "and its header's end");
	journal_close(j);

	err[0] = '\0';
	ok(journal_replay(dir, collect, &s, &info, err, sizeof(err)) == 0 &&
	    s.n == keys && !info.torn, "position: all %zu keys replay (%s)",
	    keys, err[0] ? err : "ok");
	if (s.n != keys)
		goto out;
	for (size_t i = 1; i < s.n; i++)
		monotonic &= pos_lt(s.v[i - 1].seq, s.v[i - 1].offset,
		    s.v[i].seq, s.v[i].offset);
	ok(monotonic, "position: replay's (seq, offset) grow with every key");
	ok(s.v[1].seq == pos[0].seq && s.v[1].offset == pos[0].off,
	    "position: taken with a batch open, it is where the next key of "
	    "that batch went (%" PRIu64 ")", pos[0].off);
	for (size_t i = 0; i < npos; i++) {
		const struct jpos	*q = &pos[i];
		size_t			 m = q->before;
		int			 ok_before, ok_after;

		ok_before = m == 0 || pos_lt(s.v[m - 1].seq,
		    s.v[m - 1].offset, q->seq, q->off);
		ok_after = m == s.n || !pos_lt(s.v[m].seq, s.v[m].offset,
		    q->seq, q->off);
		if (m < s.n && ok_after) {
			if (s.v[m].seq == q->seq && s.v[m].offset == q->off)
				equal++;
			else
				above++;
		}
		if (!ok_before || !ok_after) {
			if (bad++ == 0)
				diag("position %zu (%" PRIu64 ", %" PRIu64
				    ") after %zu keys: key before at (%"
				    PRIu64 ", %" PRIu64 "), after at (%"
				    PRIu64 ", %" PRIu64 ")", i, q->seq, q->off,
				    m, m ? s.v[m - 1].seq : 0,
				    m ? s.v[m - 1].offset : 0,
				    m < s.n ? s.v[m].seq : 0,
				    m < s.n ? s.v[m].offset : 0);
		}
	}
	ok(bad == 0, "position: each of %zu positions is above every key "
	    "appended before it and at most every key appended after it "
	    "(%zu wrong)", npos, bad);
	ok(equal > 0 && above > 0, "position: both cases met: the next key "
	    "exactly there, continuing a batch (%" PRIu64 "), and above, "
	    "opening a record (%" PRIu64 ")", equal, above);
 out:
	seen_free(&s);
	free(pos);
	rm_dir(dir);
}

/* ---- seeds for the fuzzer ---- */

/*
 * Version 4 seeds (v4-*: key batches, forget and copy batches, resets).
 * The v1-* seeds in the corpus were written by seend 0.x's writer, the
 * v2-* ones by seend 1.x's and the v3-* ones by the writer before cuckoo
 * filters, and are kept as they are: replay reads versions 1 to 3.
 */
static void
write_corpus(const char *out)
{
	struct journal	*j;
	struct buf	 b;
	char		 dir[64], p1[128], path[512];
	uint64_t	 start, forget_at, copy_at, last_at;

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
	forget_at = journal_bytes(j);
	for (uint64_t i = 0; i < 6; i++)
		journal_append_op(j, JOURNAL_OP_FORGET, "f", 1, 5, i * 3,
		    T0 + 101);
	journal_append(j, "f", 1, 5, 50, T0 + 101);
	copy_at = journal_bytes(j);
	for (uint64_t i = 0; i < 3; i++)
		journal_append_op(j, JOURNAL_OP_COPY, "f", 1, 5, 60 + i % 2,
		    T0 + 101);
	journal_append_reset(j, "f", 1, 5, 6, T0 + 102);
	for (uint64_t i = 0; i < 5; i++)
		journal_append(j, "f", 1, 6, 100 + i, T0 + 103);
	journal_append_op(j, JOURNAL_OP_FORGET, "f", 1, 6, 101, T0 + 103);
	journal_append_reset(j, "a-much-longer-filter-name-for-the-name-record",
	    45, 3, 4, T0 + 104);
	last_at = journal_bytes(j);
	for (uint64_t i = 0; i < 4; i++)
		journal_append_op(j, JOURNAL_OP_COPY, "other", 5, 8, 200 + i,
		    T0 + 105);
	journal_write(j, err, sizeof(err));
	journal_close(j);
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &b);
	snprintf(path, sizeof(path), "%s/v4-valid", out);
	spit(path, b.p, b.len);
	/* cut inside the last record, an 'a' batch after its name record */
	snprintf(path, sizeof(path), "%s/v4-torn", out);
	spit(path, b.p, (size_t)last_at + JOURNAL_NAME_SIZE + 30);
	snprintf(path, sizeof(path), "%s/v4-header-only", out);
	spit(path, b.p, 40);
	b.p[start + JOURNAL_NAME_SIZE + 30] ^= 4;
	b.p[forget_at + JOURNAL_BATCH_HEAD + 9] ^= 1;
	b.p[copy_at + 20] ^= 1;
	snprintf(path, sizeof(path), "%s/v4-damaged", out);
	spit(path, b.p, b.len);
	free(b.p);
	rm_dir(dir);
}

/* ---- version 4's 'r' (create) and 'x' (drop) records ---- */

struct frec {
	int		 kind;		/* 'B', 'f', 'r', 'x' */
	char		 name[JOURNAL_NAME_MAX + 1];
	uint64_t	 seed, hash, time;
	struct journal_filter shape;
};

struct fseen {
	struct frec	 v[16];
	size_t		 n;
};

static int
fcollect(void *arg, const struct journal_key *k, char *e, size_t elen)
{
	struct fseen	*s = arg;
	struct frec	*r;

	(void)e;
	(void)elen;
	if (s->n == sizeof(s->v) / sizeof(s->v[0]))
		return 0;
	r = &s->v[s->n++];
	memset(r, 0, sizeof(*r));
	r->kind = k->create ? 'r' : k->drop ? 'x' : k->reset ? 'E' :
	    k->op == JOURNAL_OP_FORGET ? 'f' : k->op == JOURNAL_OP_COPY ? 'a' :
	    'B';
	memcpy(r->name, k->name, k->namelen);
	r->seed = k->seed;
	r->hash = k->hash;
	r->time = k->time;
	r->shape = k->shape;
	return 0;
}

static void
test_filter_records(void)
{
	struct journal_replay_info	 info;
	struct journal_filter		 sh = { 1, 0, 5000, 0.001, 2, 20, 0 };
	struct fseen			 s;
	struct journal			*j;
	struct buf			 img;
	char				 dir[64], p1[PATH_MAX];
	uint64_t			 b0;

	new_dir(dir, sizeof(dir));
	if ((j = open_j(dir, 0)) == NULL)
		return;
	journal_append(j, "cf", 2, 7, 1, T0);
	b0 = journal_bytes(j);
	ok(journal_append_create(j, "rt", 2, 9, &sh, T0 + 1) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_CREATE_SIZE, "create: a record of "
	    "%d bytes", JOURNAL_CREATE_SIZE);
	journal_append(j, "rt", 2, 9, 2, T0 + 1);
	journal_append_op(j, JOURNAL_OP_FORGET, "rt", 2, 9, 2, T0 + 1);
	b0 = journal_bytes(j);
	ok(journal_append_drop(j, "rt", 2, 9, T0 + 2) == 0 &&
	    journal_bytes(j) - b0 == JOURNAL_DROP_SIZE, "drop: a record of %d "
	    "bytes", JOURNAL_DROP_SIZE);
	ok(journal_append_create(j, "", 0, 9, &sh, T0) == -1 &&
	    errno == EINVAL && journal_append_drop(j, "", 0, 9, T0) == -1 &&
	    errno == EINVAL, "create, drop: an empty name is refused");
	journal_append(j, "cf", 2, 7, 3, T0 + 2);
	ok(journal_write(j, err, sizeof(err)) == 0, "create, drop: written");
	journal_close(j);
	memset(&s, 0, sizeof(s));
	ok(journal_replay(dir, fcollect, &s, &info, err, sizeof(err)) == 0 &&
	    info.filters == 2 && info.keys == 4 && s.n == 6,
	    "create, drop: replay gives 4 keys and 2 filter records (%s)", err);
	ok(s.n == 6 && s.v[0].kind == 'B' && s.v[1].kind == 'r' &&
	    s.v[2].kind == 'B' && s.v[3].kind == 'f' && s.v[4].kind == 'x' &&
	    s.v[5].kind == 'B', "create, drop: in order among the keys");
	ok(s.n == 6 && strcmp(s.v[1].name, "rt") == 0 && s.v[1].seed == 9 &&
	    s.v[1].time == T0 + 1 && s.v[1].shape.type == 1 &&
	    s.v[1].shape.capacity == 5000 && s.v[1].shape.error_rate == 0.001 &&
	    s.v[1].shape.growth == 2 && s.v[1].shape.max_kicks == 20,
	    "create: name, seed, time and shape as appended");
	ok(s.n == 6 && strcmp(s.v[4].name, "rt") == 0 && s.v[4].seed == 9 &&
	    s.v[4].time == T0 + 2, "drop: name, seed and time as appended");

	/* a flipped bit in the create record (keys after it): damage */
	seg(p1, sizeof(p1), dir, 1);
	slurp(p1, &img);
	for (size_t off = JOURNAL_HEADER_SIZE; off < img.len; off++)
		if (img.p[off] == JOURNAL_REC_CREATE &&
		    img.p[off + 1] == JOURNAL_CREATE_SIZE) {
			img.p[off + 60] ^= 0x04;
			break;
		}
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "checksum") != NULL, "create: a flipped bit is "
	    "damage (%s)", err);
	/* a version 3 segment cannot hold one */
	put_le32(img.p + 8, JOURNAL_VERSION_V3);
	put_le32(img.p + 36, (uint32_t)XXH3_64bits(img.p, 36));
	spit(p1, img.p, img.len);
	ok(journal_replay(dir, NULL, NULL, &info, err, sizeof(err)) == -1 &&
	    strstr(err, "unknown record type 0x72") != NULL, "create: refused "
	    "in a version 3 segment (%s)", err);
	free(img.p);
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
	test_op_order();
	test_op_old_versions();
	test_op_damage();
	test_position();
	test_filter_records();
	return done_testing();
}
