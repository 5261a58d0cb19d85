/*
 * persist.c - the journal in the running server; see persist.h.
 *
 * Why segments are dropped rather than rewritten: a snapshot submitted
 * while segment S is current holds every key of its filter journalled in
 * the segments before S, so once every filter has such a snapshot
 * (f->journal_covered >= S) those segments say nothing the snapshots do
 * not, and unlinking a file costs nothing, where a rewrite would copy what
 * remains. The current segment is closed every snapshot_interval / 2
 * (at least 1 s) when it holds records, so the journal spans at most
 * about two intervals: the half-interval segments since the oldest
 * snapshot each filter is due to make.
 *
 * Group commit: the records of a loop turn are written (always: and
 * fdatasynced) once at its end, before any reply of the turn leaves; the
 * connections keep their replies until then (conn.c, "unreleased").
 *
 * Faults: a write or fsync that fails puts the journal in fault. With
 * always, keys that would be new are refused before they are set
 * (command.c asks persist_make_room), and the replies of a turn whose
 * records were not made durable are held; with everysec the server keeps
 * answering and the records wait in the buffer (then are counted lost to
 * the journal, protected by the next snapshot only). Once a write goes
 * through again, the journal moves to a new segment R and every dirty
 * filter is snapshotted; the fault ends (and held replies go) when every
 * filter is covered up to R: every key acknowledged during the fault is
 * in a snapshot.
 *
 * Resets (persist_filter_reset): emptying a filter is one more record in
 * the stream, in order with its keys, and the filter's new seed is its
 * new epoch. So nothing but the journal has to change on disk: the old
 * snapshot may stay until the next one replaces it, since replay empties
 * a filter whose seed is the reset's old one, and the segment holding
 * the reset is dropped only once a snapshot submitted after it (new seed)
 * has been written.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "buf.h"
#include "cluster_move.h"
#include "config.h"
#include "core.h"
#include "fileio.h"
#include "filter.h"
#include "journal.h"
#include "keyslot.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "saver.h"
#include "snapshot.h"

/* Skipped journal names reported by name at the end of a replay. */
#define SKIP_NAMES	16

struct persist {
	struct journal	*j;		/* open (also when off: old segments) */
	enum journal_mode mode;
	int		 fault;
	char		 reason[600];
	uint64_t	 recover_seq;	/* the round that ends the fault */
	time_t		 recover_at;	/* when it was last submitted */
	time_t		 logged;	/* the fault's last log line */
	uint64_t	 lost;		/* appends that did not fit */
	uint64_t	 early_seq;	/* journal_max's round, 0 none */
	time_t		 early_at;	/* when it was last submitted */
	uint64_t	 peak;		/* the most bytes on disk so far */
	uint64_t	 waits;		/* turns that waited for journal_max */
	time_t		 max_logged;	/* journal_max's last log line */
	time_t		 seg_start;	/* the current segment's */
	int		 seg_used;	/* it holds records */
	char		 status[640];
};

/* ---- replay ---- */

/*
 * A journal opened with no segment left (journal = off for a while)
 * numbers its segments from 1 again, but snapshot files written before
 * name later segments as where they were captured (before_snapshot):
 * the new journal starts past every one of them, those of filters loaded
 * now and the files of data_dir (a filter retired by a reload and added
 * back later is read from its file again).
 */
static void
numbered_past_files(const struct core *core, struct journal_replay_info *info)
{
	uint64_t on_disk = snapshot_max_jseq(core->cfg->data_dir);

	for (size_t i = 0; i < core->reg->nfilters; i++)
		if (core->reg->filters[i]->loaded_jseq > info->last_seq)
			info->last_seq = core->reg->filters[i]->loaded_jseq;
	if (on_disk > info->last_seq)
		info->last_seq = on_disk;
}

struct replay {
	struct core	*core;
	struct registry	*reg;
	const struct config *cfg;
	/* the last record's filter: records come in runs of one filter */
	char		 name[JOURNAL_NAME_MAX];
	size_t		 namelen;
	uint64_t	 seed;
	struct filter	*f;		/* NULL: not configured */
	int		 have;
	uint64_t	 applied, other_seed, unknown, expired;
	uint64_t	 given_away;	/* keys of slots not the shard's */
	uint64_t	 covered;	/* key records a snapshot holds */
	uint64_t	 created, dropped;	/* runtime filters */
	uint64_t	 revived;	/* dropped, then back with the seed */
	/* filters an 'x' record dropped: out at the replay's end, unless an
	 * 'r' record of the same seed brings them back first */
	struct filter	**gone;
	size_t		 ngone, gone_cap;
	/* dropped filters an 'r' of another seed took the name from: out of
	 * the registry, kept until the end, when an image's 'r' of their
	 * seed may bring one back (its snapshot came after all of these) */
	struct filter	**shelf;
	size_t		 nshelf, shelf_cap;
	uint64_t	 resets, resets_newer;
	char		 skipped[SKIP_NAMES][JOURNAL_NAME_MAX + 1];
	int		 nskipped;
};

static void
note_skipped(struct replay *r, const char *name, size_t len)
{
	for (int i = 0; i < r->nskipped; i++)
		if (strlen(r->skipped[i]) == len &&
		    memcmp(r->skipped[i], name, len) == 0)
			return;
	if (r->nskipped == SKIP_NAMES)
		return;
	memcpy(r->skipped[r->nskipped], name, len);
	r->skipped[r->nskipped++][len] = '\0';
}

/*
 * Whether record k comes before the capture of f's snapshot (its file
 * says where the journal was then; 0: a file of a seend before that):
 * what it did is in the file already, a reset, drop or creation of f's
 * name as a key. A key's offset is its own hash's, so a key that goes on
 * with a batch open at the capture is at or after it (test_journal's
 * position test).
 */
static int
before_snapshot(const struct filter *f, const struct journal_key *k)
{
	return f != NULL && f->loaded_at != 0 && f->loaded_jseq != 0 &&
	    (k->seq < f->loaded_jseq || (k->seq == f->loaded_jseq &&
	    k->offset < f->loaded_joff));
}

/*
 * A reset record: the filter was emptied and took new_seed. The seed is
 * the filter's epoch, so what replay holds for the filter says on which
 * side of the reset it is:
 *   - the seed before: the snapshot (or the keys replayed so far) is
 *     older than the reset: emptied now, as it was then;
 *   - nothing at all (no snapshot, no key): takes the new seed;
 *   - any other seed: a snapshot taken after this reset (the new seed, or
 *     a later reset's): it already holds what the reset left, and the
 *     keys of the old seed are skipped by the seed rule below.
 */
static void
replay_reset(struct replay *r, const struct journal_key *k)
{
	struct filter *f = registry_find(r->reg, k->name, k->namelen);

	r->have = 0;		/* the cached run's filter changes seed */
	if (f == NULL) {
		note_skipped(r, k->name, k->namelen);
		return;
	}
	if (before_snapshot(f, k)) {
		r->resets_newer++;	/* the file holds what it left */
		return;
	}
	if (f->seed == k->seed) {
		filter_reset(f, k->new_seed);
		r->resets++;
	} else if (filter_reseed(f, k->new_seed) == 0)
		r->resets++;
	else
		r->resets_newer++;
}

/*
 * A cuckoo filter's record after its snapshot's capture (the records
 * before it are skipped: a forget applied twice would take another key's
 * fingerprint with it).
 */
static void
replay_cuckoo(struct replay *r, struct filter *f, const struct journal_key *k)
{
	switch (k->op) {
	case JOURNAL_OP_FORGET:
		r->applied += (uint64_t)filter_forget(f, k->hash);
		break;
	case JOURNAL_OP_COPY:
		r->applied += filter_add_copy(f, k->hash) == 0;
		break;
	default:
		r->applied += filter_seen_at(f, k->hash, (int64_t)k->time) == 0;
		break;
	}
}

/* The snapshot file of name f, removed. */
static void
unlink_file(struct replay *r, const struct filter *f)
{
	char path[PATH_MAX];

	if (snapshot_path(path, sizeof(path), r->cfg->data_dir, f->name) == 0 &&
	    unlink(path) == -1 && errno != ENOENT)
		log_warn("journal: filter %s: cannot remove %s: %s", f->name,
		    path, strerror(errno));
}

/* The filter out of the registry, and its file removed. */
static void
drop_now(struct replay *r, struct filter *f)
{
	registry_remove(r->reg, f);
	f->deleted = 1;
	unlink_file(r, f);
	filter_unref(f);
	r->dropped++;
}

/* Dropped filter f leaves the registry for the shelf (its file stays
 * until the end); out of memory, it goes now. */
static void
shelve(struct replay *r, struct filter *f)
{
	struct filter **grown;

	if (r->nshelf == r->shelf_cap) {
		size_t cap = r->shelf_cap ? r->shelf_cap * 2 : 8;

		if ((grown = reallocarray(r->shelf, cap, sizeof(*grown))) ==
		    NULL) {
			drop_now(r, f);
			return;
		}
		r->shelf = grown;
		r->shelf_cap = cap;
	}
	registry_remove(r->reg, f);
	r->shelf[r->nshelf++] = f;
}

/* The shelved filter of k's name and seed back in the registry: 1, or 0
 * when there is none (or it cannot come back). */
static int
unshelve(struct replay *r, const struct journal_key *k)
{
	char err[200];

	for (size_t i = 0; i < r->nshelf; i++) {
		struct filter *f = r->shelf[i];

		if (f->seed != k->seed || f->namelen != k->namelen ||
		    memcmp(f->name, k->name, k->namelen) != 0)
			continue;
		if (registry_adopt(r->reg, r->cfg, f, err, sizeof(err)) == -1) {
			/* its file stays: the only copy of an acknowledged
			 * filter, for a start that can take it */
			log_warn("journal: filter %s not brought back: %s; its "
			    "file is left in data_dir", f->name, err);
			r->shelf[i] = r->shelf[--r->nshelf];
			filter_unref(f);
			return 0;
		}
		r->shelf[i] = r->shelf[--r->nshelf];
		return 1;
	}
	return 0;
}

/* Whether f waits to be dropped; if so it no longer does. */
static int
gone_take(struct replay *r, struct filter *f)
{
	for (size_t i = 0; i < r->ngone; i++)
		if (r->gone[i] == f) {
			r->gone[i] = r->gone[--r->ngone];
			return 1;
		}
	return 0;
}

/*
 * An 'r' record: a runtime filter made by a command. One that a snapshot
 * holds (or a config section names) is there already; else it is made
 * now with the record's seed and shape, so that the keys after it apply.
 */
static void
replay_create(struct replay *r, const struct journal_key *k)
{
	struct filter	*f;
	char		 err[400];

	r->have = 0;
	if ((f = registry_find(r->reg, k->name, k->namelen)) != NULL &&
	    before_snapshot(f, k))
		return;		/* its file, written after, holds it */
	if (f != NULL) {
		int was_gone = gone_take(r, f);

		/* there, or dropped and back with the same seed (a named
		 * filter that moved away and back, a dump loaded again):
		 * the snapshot, taken after, holds it */
		if (!was_gone || f->seed == k->seed) {
			r->revived += was_gone;
			return;
		}
		shelve(r, f);	/* an earlier filter of that name */
	}
	/* an image's filter is its snapshot: the one loaded at the start,
	 * if an 'r' of another seed shelved it (its snapshot came after);
	 * none, and it never was */
	if (k->shape.image) {
		r->revived += unshelve(r, k);
		return;
	}
	f = registry_create_type(r->reg, r->cfg, k->name, k->namelen,
	    k->shape.capacity, k->shape.error_rate, k->shape.growth,
	    k->shape.type ? FILTER_TYPE_CUCKOO : FILTER_TYPE_BLOOM, err,
	    sizeof(err));
	if (f == NULL) {
		log_warn("journal: runtime filter %.*s not made again: %s",
		    (int)k->namelen, k->name, err);
		return;
	}
	/* it holds nothing: its keys' seed is the record's (filter_reseed
	 * refuses a filter that owes its first snapshot) */
	f->seed = k->seed;
	f->max_kicks = k->shape.max_kicks;
	r->created++;
}

/*
 * An 'x' record: the runtime filter of that seed was dropped (DEL,
 * UNLINK, a deadline, its slot given away), with its file. It goes at
 * the replay's end (replay_finish), unless an 'r' record of the same
 * name and seed comes first: a named filter that moved to another node
 * and back keeps its seed, and its snapshot from the return holds it.
 */
static void
replay_drop(struct replay *r, const struct journal_key *k)
{
	struct filter	*f = registry_find(r->reg, k->name, k->namelen);
	struct filter	**grown;

	r->have = 0;
	/* dropped before its file was written: made again since */
	if (f == NULL || !f->runtime || f->seed != k->seed ||
	    before_snapshot(f, k))
		return;
	for (size_t i = 0; i < r->ngone; i++)
		if (r->gone[i] == f)
			return;
	if (r->ngone == r->gone_cap) {
		size_t cap = r->gone_cap ? r->gone_cap * 2 : 16;

		if ((grown = reallocarray(r->gone, cap, sizeof(*grown))) ==
		    NULL) {
			drop_now(r, f);	/* out of memory: as before */
			return;
		}
		r->gone = grown;
		r->gone_cap = cap;
	}
	r->gone[r->ngone++] = f;
}

/*
 * A filter dropped for good: its file goes unless the registry now holds
 * a filter of its name loaded from that file (an image's filter brought
 * back from the shelf).
 */
static void
drop_at_end(struct replay *r, struct filter *f)
{
	const struct filter *now = registry_find(r->reg, f->name, f->namelen);

	f->deleted = 1;
	if (now == NULL || now->loaded_at == 0)
		unlink_file(r, f);
	filter_unref(f);
	r->dropped++;
}

/* The drops no later record undid. */
static void
replay_finish(struct replay *r)
{
	/* out of the registry first, so that each file's fate is judged
	 * by what stays */
	for (size_t i = 0; i < r->ngone; i++)
		registry_remove(r->reg, r->gone[i]);
	while (r->ngone > 0)
		drop_at_end(r, r->gone[--r->ngone]);
	while (r->nshelf > 0)
		drop_at_end(r, r->shelf[--r->nshelf]);
	free(r->gone);
	free(r->shelf);
	r->gone = NULL;
	r->shelf = NULL;
}

/*
 * The seed rules: a filter with no snapshot and no key yet takes the seed
 * of its first journalled key (it was created since its last snapshot,
 * and journal records are its only trace); a record whose seed is not
 * the filter's belongs to an earlier filter of that name and is skipped.
 */
static int
replay_key(void *arg, const struct journal_key *k, char *err, size_t errlen)
{
	struct replay	*r = arg;
	struct filter	*f;

	(void)err;
	(void)errlen;
	if (k->repl) {
		/* a replica's place in its primary's stream (the last wins;
		 * an empty id: none, a full sync was under way) */
		memcpy(r->core->repl.kept_replid, k->replid,
		    JOURNAL_REPLID_LEN);
		r->core->repl.kept_replid[JOURNAL_REPLID_LEN] = '\0';
		r->core->repl.kept_offset = k->repl_offset;
		return 0;
	}
	if (k->reset) {
		replay_reset(r, k);
		return 0;
	}
	if (k->create) {
		replay_create(r, k);
		return 0;
	}
	if (k->deadline)
		return 0;	/* the stream's; deadlines have their file */
	if (k->drop) {
		replay_drop(r, k);
		return 0;
	}
	if (!r->have || r->namelen != k->namelen || r->seed != k->seed ||
	    memcmp(r->name, k->name, k->namelen) != 0) {
		memcpy(r->name, k->name, k->namelen);
		r->namelen = k->namelen;
		r->seed = k->seed;
		r->f = registry_find(r->reg, k->name, k->namelen);
		r->have = 1;
		if (r->f != NULL && r->f->seed != k->seed)
			(void)filter_reseed(r->f, k->seed);
	}
	if ((f = r->f) == NULL) {
		r->unknown++;
		note_skipped(r, k->name, k->namelen);
		return 0;
	}
	if (f->seed != k->seed) {
		r->other_seed++;
		return 0;
	}
	/* in its snapshot already; for a Bloom filter also a key of an
	 * earlier filter of that name and seed (deleted, then its dump
	 * loaded again) that the loaded one never held */
	if (before_snapshot(f, k)) {
		r->covered++;
		return 0;
	}
	/* a partitioned filter's key of a slot given away since (its hash
	 * carries the slot): the new owner has it, and here it would fill
	 * the part the map has made smaller (a forget or a copy too: the
	 * slot's range is another node's) */
	if (f->slot_major && !cluster_holds_slot(r->core->cluster,
	    (unsigned)(k->hash >> (64 - KEYSLOT_BITS)))) {
		r->given_away++;
		return 0;
	}
	if (filter_is_cuckoo(f)) {
		replay_cuckoo(r, f, k);
		return 0;
	}
	if (k->op != JOURNAL_OP_NEW) {
		r->other_seed++;	/* a cuckoo filter's, of another type now */
		return 0;
	}
	if (filter_seen_at(f, k->hash, (int64_t)k->time) == 0)
		r->applied++;
	else
		r->expired++;	/* already there, or its window passed */
	return 0;
}

static void
seg_file(char *buf, size_t len, const char *dir, uint64_t seq)
{
	snprintf(buf, len, "%s/" JOURNAL_PREFIX "%016llx", dir,
	    (unsigned long long)seq);
}

int
persist_open(struct core *core)
{
	struct persist			*p;
	struct journal_replay_info	 info;
	struct replay			*r;
	struct timespec			 t0, t1;
	char				 err[1024];
	const char			*dir = core->cfg->data_dir;

	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL) {
		free(p);
		log_error("journal: out of memory");
		return -1;
	}
	core->persist = p;
	p->mode = core->cfg->journal;
	r->core = core;
	r->reg = core->reg;
	r->cfg = core->cfg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* with journal = off too: a journal left by a run with it on holds
	 * acknowledged keys */
	if (journal_replay(dir, replay_key, r, &info, err, sizeof(err)) ==
	    -1) {
		log_error("%s", err);
		log_error("not starting: the journal is left as it is; see "
		    "seend(8), JOURNAL, for what to do");
		for (size_t i = 0; i < r->nshelf; i++)
			filter_unref(r->shelf[i]);
		free(r->shelf);
		free(r->gone);
		free(r);
		free(p);
		core->persist = NULL;
		return -1;
	}
	replay_finish(r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (info.torn)
		log_warn("journal %s: dropped a torn tail of %llu bytes at "
		    "offset %llu (the process died while writing it)",
		    info.torn_path, (unsigned long long)info.torn_bytes,
		    (unsigned long long)info.torn_offset);
	if (info.segments > 0)
		log_info("journal: replayed %llu keys (%llu changed the "
		    "filters) from %llu segment(s) in %.3f s",
		    (unsigned long long)info.keys,
		    (unsigned long long)r->applied,
		    (unsigned long long)info.segments,
		    (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (r->given_away > 0)
		log_info("journal: %llu keys of slots given away to other "
		    "nodes skipped", (unsigned long long)r->given_away);
	if (info.filters > 0)
		log_info("journal: %llu runtime filter(s) made again, %llu "
		    "dropped, %llu back after a drop", (unsigned long long)
		    r->created, (unsigned long long)r->dropped,
		    (unsigned long long)r->revived);
	if (r->covered > 0)
		log_info("journal: %llu key records skipped: their filters' "
		    "snapshots hold them", (unsigned long long)r->covered);
	if (info.resets > 0)
		log_info("journal: %llu filter reset(s) replayed, %llu "
		    "already in the snapshots", (unsigned long long)r->resets,
		    (unsigned long long)r->resets_newer);
	for (int i = 0; i < r->nskipped; i++)
		log_warn("journal: keys for filter '%s', which the "
		    "configuration no longer has: skipped", r->skipped[i]);
	if (r->unknown > 0)
		log_warn("journal: %llu keys of filters not configured "
		    "skipped", (unsigned long long)r->unknown);
	if (r->other_seed > 0)
		log_warn("journal: %llu keys of earlier filters of the same "
		    "names (another hash seed) skipped",
		    (unsigned long long)r->other_seed);
	free(r);
	if (p->mode == JOURNAL_OFF && info.segments == 0)
		return 0;
	numbered_past_files(core, &info);
	if ((p->j = journal_open(dir, &info, 0, err, sizeof(err))) == NULL) {
		log_error("%s", err);
		log_error("not starting: cannot open the journal "
		    "(journal = off starts without it)");
		free(p);
		core->persist = NULL;
		return -1;
	}
	p->seg_start = time(NULL);
	if (p->mode != JOURNAL_OFF)
		core->journal = p->j;
	return 0;
}

void
persist_start(struct core *core)
{
	struct persist	*p = core->persist;
	char		 err[512];

	if (p == NULL || p->j == NULL)
		return;
	saver_set_journal(core->saver, p->j);
	if (p->mode == JOURNAL_EVERYSEC &&
	    journal_everysec_start(p->j, 1000, err, sizeof(err)) == -1)
		log_error("journal: %s: syncing at each snapshot only", err);
}

/* ---- faults ---- */

static void
enter_fault(struct core *core, const char *why)
{
	struct persist	*p = core->persist;
	time_t		 now = time(NULL);

	if (!p->fault || now - p->logged >= 60) {
		log_error("journal: %s; %s", why, p->mode == JOURNAL_ALWAYS ?
		    "keys not yet seen are refused until a snapshot holds "
		    "the ones acknowledged" : "still answering: the keys "
		    "acknowledged meanwhile are safe once a snapshot holds "
		    "them");
		p->logged = now;
	}
	if (!p->fault)
		snprintf(p->reason, sizeof(p->reason), "%s", why);
	p->fault = 1;
	p->recover_seq = 0;
	core->journal_refuse = p->mode == JOURNAL_ALWAYS;
}

const char *
persist_reason(const struct core *core)
{
	return core->persist != NULL && core->persist->fault ?
	    core->persist->reason : "";
}

int
persist_has_journal(const struct core *core)
{
	return core->persist != NULL && core->persist->j != NULL;
}

const char *
persist_status(const struct core *core)
{
	struct persist *p = core->persist;

	if (p == NULL || p->mode == JOURNAL_OFF)
		return "off";
	if (!p->fault)
		return "ok";
	snprintf(p->status, sizeof(p->status), "error %s", p->reason);
	return p->status;
}

/*
 * Whether the buffer may be written now without the journal passing
 * journal_max (a rotation's new segment header counted in).
 */
static int
fits(const struct core *core)
{
	return journal_bytes(core->persist->j) + JOURNAL_HEADER_SIZE <=
	    core->cfg->journal_max;
}

/*
 * Room for need more bytes in the middle of a turn, where nothing may
 * wait: the buffer is written, unless that would pass journal_max; then
 * it grows instead, and the turn's end waits for the snapshots that make
 * room (wait_for_room). Returns 0 if there is room.
 */
static int
room_for(struct core *core, size_t need)
{
	struct persist	*p = core->persist;
	char		 err[600];

	if (journal_room(p->j) >= need)
		return 0;
	if (!fits(core) && journal_reserve(p->j, need) == 0)
		return 0;
	if (journal_write(p->j, err, sizeof(err)) == -1)
		enter_fault(core, err);
	return journal_room(p->j) >= need ? 0 : -1;
}

int
persist_make_room(struct core *core, size_t n)
{
	struct persist	*p = core->persist;

	if (core->journal_refuse)
		return -1;
	if (room_for(core, n * JOURNAL_APPEND_MAX) == 0)
		return 0;
	return p->mode == JOURNAL_ALWAYS ? -1 : 0;
}

/* One key's record of op that did not fit: written out to make room and
 * tried again, else counted lost to the journal (a fault). */
static void
append_retry(struct core *core, struct filter *f, int op, uint64_t h)
{
	struct persist	*p = core->persist;
	uint64_t	 now = (uint64_t)filter_now_ms;

	if (errno == ENOBUFS && room_for(core, JOURNAL_APPEND_MAX) == 0 &&
	    (op == JOURNAL_OP_NEW ? journal_append(p->j, f->name, f->namelen,
	    f->seed, h, now) : journal_append_op(p->j, op, f->name, f->namelen,
	    f->seed, h, now)) == 0)
		return;
	p->lost++;
	if (!p->fault)
		enter_fault(core, "the journal's buffer is full");
}

void
persist_append_failed(struct core *core, struct filter *f, uint64_t h)
{
	append_retry(core, f, JOURNAL_OP_NEW, h);
}

/* ---- the replication stream (core->stream) ---- */

/*
 * A record that did not fit in the stream's buffer: it grows (the turn's
 * records are taken at its end); out of memory, the replicas must resync
 * fully, since their stream now misses a record.
 */
static int
stream_grow(struct core *core, size_t need)
{
	if (journal_reserve(core->stream, need + (1u << 20)) == 0)
		return 0;
	core->repl.resync_why = "the stream lost a record (out of memory)";
	return -1;
}

void
persist_stream_key(struct core *core, struct filter *f, int op, uint64_t h)
{
	struct journal	*s = core->stream;
	uint64_t	 now = (uint64_t)filter_now_ms;

	for (int tries = 0; tries < 2; tries++) {
		if ((op == JOURNAL_OP_NEW ? journal_append(s, f->name,
		    f->namelen, f->seed, h, now) : journal_append_op(s, op,
		    f->name, f->namelen, f->seed, h, now)) == 0)
			return;
		if (errno != ENOBUFS || stream_grow(core, JOURNAL_APPEND_MAX))
			return;
	}
}

static void
stream_filter(struct core *core, struct filter *f, int create,
    const struct journal_filter *sh)
{
	for (int tries = 0; tries < 2; tries++) {
		if ((create ? journal_append_create(core->stream, f->name,
		    f->namelen, f->seed, sh, (uint64_t)filter_now_ms) :
		    journal_append_drop(core->stream, f->name, f->namelen,
		    f->seed, (uint64_t)filter_now_ms)) == 0)
			return;
		if (errno != ENOBUFS || stream_grow(core, JOURNAL_CREATE_SIZE))
			return;
	}
}

static void
stream_reset(struct core *core, struct filter *f, uint64_t old,
    uint64_t seed)
{
	for (int tries = 0; tries < 2; tries++) {
		if (journal_append_reset(core->stream, f->name, f->namelen,
		    old, seed, (uint64_t)filter_now_ms) == 0)
			return;
		if (errno != ENOBUFS || stream_grow(core, JOURNAL_RESET_SIZE))
			return;
	}
}

void
persist_stream_deadline(struct core *core, struct filter *f, int64_t at_ms)
{
	if (core->stream == NULL)
		return;
	for (int tries = 0; tries < 2; tries++) {
		if (journal_append_deadline(core->stream, f->name, f->namelen,
		    f->seed, at_ms, (uint64_t)filter_now_ms) == 0)
			return;
		if (errno != ENOBUFS || stream_grow(core, JOURNAL_DROP_SIZE))
			return;
	}
}

void
persist_stream_slots(struct core *core, const unsigned char *img, size_t len)
{
	struct core_slots	*q, **tail;
	const unsigned char	*body = NULL;
	size_t			 before;

	if (core->stream == NULL)
		return;
	/* the turn's records so far go before it (journal_take closes an
	 * open batch; the records after it name their filters again) */
	before = journal_take(core->stream, &body);
	if ((q = malloc(sizeof(*q) + before + len)) == NULL) {
		core->repl.resync_why = "moved slots arrived (CLUSTER "
		    "SLOTMERGE), and no memory to stream them";
		return;
	}
	q->next = NULL;
	q->refs = 1;
	q->before = before;
	q->len = len;
	if (before > 0)
		memcpy(q->data, body, before);
	memcpy(q->data + before, img, len);
	journal_clear(core->stream);
	for (tail = &core->repl.slots; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = q;
}

/* What append_filter records. */
enum made { DROPPED, CREATED, RESTORED };

/* An 'r' (create) or 'x' (drop) record of runtime filter f. */
static void
append_filter(struct core *core, struct filter *f, enum made what)
{
	int			 create = what != DROPPED;
	struct persist		*p = core->persist;
	struct journal_filter	 sh;
	char			 why[600];
	int			 rc;

	memset(&sh, 0, sizeof(sh));
	sh.type = filter_is_cuckoo(f);
	sh.normalize = f->normalize;
	sh.capacity = f->capacity;
	sh.error_rate = f->error_rate;
	sh.growth = f->growth;
	sh.max_kicks = f->max_kicks;
	sh.image = what == RESTORED;
	/* a restored filter reaches replicas by a full sync, not a record */
	if (core->stream != NULL && what != RESTORED)
		stream_filter(core, f, create, &sh);
	if (p == NULL || p->j == NULL)
		return;
	(void)room_for(core, JOURNAL_CREATE_SIZE);
	if (create) {
		rc = journal_append_create(p->j, f->name, f->namelen, f->seed,
		    &sh, (uint64_t)filter_now_ms);
	} else
		rc = journal_append_drop(p->j, f->name, f->namelen, f->seed,
		    (uint64_t)filter_now_ms);
	if (rc == -1) {
		p->lost++;
		if (!p->fault)
			enter_fault(core, "the journal's buffer is full");
		return;
	}
	/* journal = off with segments left: nothing waits for the turn */
	if (p->mode == JOURNAL_OFF && fits(core) &&
	    journal_write(p->j, why, sizeof(why)) == -1)
		log_warn("journal: %s", why);
}

void
persist_filter_created(struct core *core, struct filter *f)
{
	append_filter(core, f, CREATED);
}

void
persist_filter_restored(struct core *core, struct filter *f)
{
	append_filter(core, f, RESTORED);
}

void
persist_filter_dropped(struct core *core, struct filter *f)
{
	append_filter(core, f, DROPPED);
}

void
persist_key_op(struct core *core, struct filter *f, int op, uint64_t h)
{
	uint64_t	 now = (uint64_t)filter_now_ms;

	if (core->stream != NULL)
		persist_stream_key(core, f, op, h);
	if (core->journal == NULL)
		return;
	if (journal_append_op(core->journal, op, f->name, f->namelen, f->seed,
	    h, now) == -1)
		append_retry(core, f, op, h);
}

/* ---- emptying a filter ---- */

/*
 * journal = off and no segment left: the snapshot file goes, so that a
 * start creates the filter empty. A runtime filter is its snapshot (a
 * start finds it by its file), so it keeps one: the emptied filter's,
 * queued now.
 */
static int
reset_without_journal(struct core *core, struct filter *f, uint64_t seed,
    char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (!f->runtime) {
		if (snapshot_path(path, sizeof(path), core->cfg->data_dir,
		    f->name) == -1) {
			snprintf(err, errlen, "filter %s: data_dir path too "
			    "long", f->name);
			return -1;
		}
		if (unlink(path) == -1 && errno != ENOENT) {
			snprintf(err, errlen, "cannot remove %s: %s", path,
			    strerror(errno));
			return -1;
		}
		if (fileio_sync_dir(core->cfg->data_dir) == -1)
			log_warn("filter %s: fsync the directory %s: %s",
			    f->name, core->cfg->data_dir, strerror(errno));
	}
	filter_reset(f, seed);
	/* a job captured before the reset would write the old keys back:
	 * one still queued takes the empty filter instead (the saver
	 * coalesces), one being written is followed by this one. A
	 * partitioned filter's is queued at once too, so that its new seed
	 * is on disk soon: a start without its file (killed before) takes
	 * the map's seed, an empty part that seen-cli cluster reset and
	 * moved slots bring back to the others' */
	if ((f->runtime || f->saving || f->slot_major) &&
	    core->saver != NULL &&
	    saver_submit(core->saver, f, core->cfg->data_dir, NULL) == -1)
		log_error("filter %s: cannot queue a snapshot: out of memory",
		    f->name);
	return 0;
}

int
persist_filter_reset(struct core *core, struct filter *f, char *err,
    size_t errlen)
{
	uint64_t seed;

	/* the new seed is the filter's new epoch: it must differ; a
	 * partitioned filter's is the one after its seed, the same on every
	 * node that empties its part */
	if (f->slot_major)
		seed = filter_next_seed(f->seed);
	else
		do
			seed = filter_new_seed(0);
		while (seed == f->seed);
	return persist_filter_reset_to(core, f, seed, err, errlen);
}

int
persist_filter_reset_to(struct core *core, struct filter *f, uint64_t seed,
    char *err, size_t errlen)
{
	struct persist	*p = core->persist;
	uint64_t	 old = f->seed;
	char		 why[600];

	if (p == NULL || p->j == NULL) {
		if (reset_without_journal(core, f, seed, err, errlen) == -1)
			return -1;
		if (core->stream != NULL)
			stream_reset(core, f, old, seed);
		log_debug("filter %s emptied (journal off: its snapshot "
		    "removed)", f->name);
		return 0;
	}
	if (core->journal_refuse) {
		snprintf(err, errlen, "journal %s", p->reason);
		return -1;
	}
	if (room_for(core, JOURNAL_RESET_SIZE) == -1 &&
	    p->mode == JOURNAL_ALWAYS) {
		snprintf(err, errlen, "journal %s", p->fault ? p->reason :
		    "buffer full");
		return -1;
	}
	if (journal_append_reset(p->j, f->name, f->namelen, old, seed,
	    (uint64_t)filter_now_ms) == -1) {
		/* everysec (or off with segments left): the filter is
		 * dirty from now on; the snapshot that ends the fault
		 * holds it empty */
		p->lost++;
		if (!p->fault)
			enter_fault(core, "the journal's buffer is full");
	}
	if (core->stream != NULL)
		stream_reset(core, f, old, seed);
	filter_reset(f, seed);
	/* everysec and always: written (always: and fsynced) at the turn's
	 * end, before the reply leaves, as a key's record; a failure there
	 * holds the reply with always (the caller marks it journaled).
	 * journal = off with segments left: replies do not wait for the
	 * turn's end, so it is written now */
	if (p->mode == JOURNAL_OFF && fits(core) &&
	    journal_write(p->j, why, sizeof(why)) == -1)
		log_warn("journal: %s: the emptied filter is safe once its "
		    "next snapshot is written", why);
	log_debug("filter %s emptied (journaled: seed %016llx -> %016llx)",
	    f->name, (unsigned long long)old, (unsigned long long)seed);
	return 0;
}

/* ---- the turn ---- */

static uint64_t	min_covered(struct core *);
static int	rotate(struct core *, const char *);

static void
drop_covered(struct core *core, uint64_t covered)
{
	char err[600];

	if (covered > 1 && covered != UINT64_MAX &&
	    journal_drop_upto(core->persist->j, covered - 1, err,
	    sizeof(err)) == -1)
		log_warn("journal: %s", err);
}

/*
 * journal_max is a bound on the bytes of the live segments, held in three
 * steps:
 *   - past half of it, the journal moves to a new segment and every dirty
 *     filter is snapshotted at once (an "early round"); the other half is
 *     headroom for the keys that come while the snapshots are written, and
 *     the segments go as soon as the round covers them, not at the next
 *     tick. A round that ends with the new segment already past half
 *     starts the next at once.
 *   - if the keys come faster than the disk takes the snapshots, a turn
 *     whose records would pass journal_max waits, before it writes them,
 *     for the round in flight (wait_for_room): the loop stops as Redis's
 *     stops on an AOF write the disk does not take, replies come later,
 *     and nothing is refused or lost. In the middle of a turn, where
 *     nothing may wait, records that would pass it stay in memory
 *     (room_for) until then.
 *   - only when that cannot make room - a snapshot of the round failed,
 *     or one turn's records alone pass what the round leaves - are the
 *     records written anyway: an acknowledged key is worth more than the
 *     size. This is logged; with journal = always, failing snapshots put
 *     the journal in fault (new keys refused) at the next tick.
 */
static void
early_round(struct core *core)
{
	struct persist *p = core->persist;

	log_info("journal: %llu bytes, past half of journal_max (%llu): "
	    "snapshotting early", (unsigned long long)journal_bytes(p->j),
	    (unsigned long long)core->cfg->journal_max);
	if (rotate(core, "journal_max") == -1)
		return;
	p->early_seq = journal_seq(p->j);
	p->early_at = time(NULL);
	core_snapshot_dirty(core, 1);
}

/* After a successful write (nothing buffered): the round's progress, and
 * a new round past half of journal_max. */
static void
check_size(struct core *core)
{
	struct persist	*p = core->persist;
	uint64_t	 covered;

	if (journal_disk_bytes(p->j) > p->peak)
		p->peak = journal_disk_bytes(p->j);
	if (p->early_seq != 0) {
		covered = min_covered(core);
		drop_covered(core, covered);
		if (covered < p->early_seq)
			return;
		p->early_seq = 0;
	}
	if (p->fault || journal_bytes(p->j) <= core->cfg->journal_max / 2)
		return;
	early_round(core);
}

/*
 * The turn's records would pass journal_max: waits for the snapshots of
 * the round in flight (submitting one if none is: the segments before
 * the current one can go), then drops what they cover. saver_drain runs
 * the snapshots' completions here, at the turn's end, where no command is
 * running; a SAVE answered meanwhile joins this turn, whose records are
 * written after.
 */
static void
wait_for_room(struct core *core)
{
	struct persist	*p = core->persist;
	struct timespec	 t0, t1;
	uint64_t	 covered;
	time_t		 now = time(NULL);
	int		 waited = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2 && !fits(core) && !p->fault; i++) {
		if (p->early_seq == 0) {
			if (journal_segments(p->j) < 2)
				break;	/* only the current one: no round helps */
			p->early_seq = journal_seq(p->j);
			p->early_at = now;
			core_snapshot_dirty(core, 1);
		} else if (!saver_busy(core->saver) && now - p->early_at >= 5) {
			/* the round failed: try again, not in a loop */
			p->early_at = now;
			core_snapshot_dirty(core, 0);
		}
		if (saver_busy(core->saver) > 0) {
			saver_drain(core->saver);
			waited = 1;
		}
		covered = min_covered(core);
		drop_covered(core, covered);
		if (covered < p->early_seq)
			break;		/* a snapshot of the round failed */
		p->early_seq = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (waited)
		p->waits++;
	if (now - p->max_logged < 60)
		return;
	if (!fits(core)) {
		p->max_logged = now;
		log_warn("journal: %llu bytes would pass journal_max (%llu): "
		    "written anyway, since no snapshot can make room now%s",
		    (unsigned long long)journal_bytes(p->j),
		    (unsigned long long)core->cfg->journal_max,
		    p->fault ? " (the journal is in fault)" : "");
	} else if (waited) {
		p->max_logged = now;
		log_warn("journal: requests waited %.3f s for snapshots to "
		    "keep the journal within journal_max (%llu bytes): the "
		    "disk takes snapshots slower than keys come",
		    (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		    (unsigned long long)core->cfg->journal_max);
	}
}

int
persist_turn_end(struct core *core)
{
	struct persist	*p = core->persist;
	char		 err[600];
	int		 ok = 1;

	if (p == NULL)
		return 0;
	if (p->j != NULL && journal_pending(p->j) > 0) {
		p->seg_used = 1;
		if (!fits(core))
			wait_for_room(core);
		if (journal_write(p->j, err, sizeof(err)) == -1) {
			enter_fault(core, err);
			ok = 0;
		} else if (p->mode == JOURNAL_ALWAYS &&
		    journal_sync(p->j, err, sizeof(err)) == -1) {
			enter_fault(core, err);
			ok = 0;
		}
		if (ok)
			check_size(core);
	}
	/* always: a 0 whose record is not durable waits for the snapshot
	 * that ends the fault */
	return !ok && p->mode == JOURNAL_ALWAYS;
}

/* ---- once a second ---- */

/* The smallest journal_covered of every filter, live or retired. */
static uint64_t
min_covered(struct core *core)
{
	uint64_t seq = journal_seq(core->persist->j), m = UINT64_MAX;

	for (size_t i = 0; i < core_nfilters_all(core); i++) {
		struct filter *f = core_filter_at(core, i);

		/* a filter a snapshot holds whole needs no segment */
		if (!filter_dirty(f) && !f->saving)
			f->journal_covered = seq;
		if (f->journal_covered < m)
			m = f->journal_covered;
	}
	return m;
}

static int
rotate(struct core *core, const char *why)
{
	struct persist	*p = core->persist;
	uint64_t	 closed;
	char		 err[600];

	if (journal_rotate(p->j, &closed, err, sizeof(err)) == -1) {
		enter_fault(core, err);
		return -1;
	}
	log_debug("journal: segment %llu closed (%s)",
	    (unsigned long long)closed, why);
	if (journal_disk_bytes(p->j) > p->peak)
		p->peak = journal_disk_bytes(p->j);
	p->seg_start = time(NULL);
	p->seg_used = 0;
	return 0;
}

/* Returns 1 when the fault ends: the replies it held may go. */
static int
recover(struct core *core, uint64_t covered, time_t now)
{
	struct persist	*p = core->persist;
	char		 err[600];

	if (journal_pending(p->j) > 0 &&
	    journal_write(p->j, err, sizeof(err)) == -1) {
		if (now - p->logged >= 60) {
			log_error("journal: still failing: %s", err);
			p->logged = now;
		}
		return 0;
	}
	if (p->recover_seq == 0) {
		if (rotate(core, "recovering") == -1)
			return 0;
		p->fault = 1;	/* rotate may have re-entered it */
		p->recover_seq = journal_seq(p->j);
		p->recover_at = now;
		core_snapshot_dirty(core, 1);
		return 0;
	}
	if (covered >= p->recover_seq) {
		p->fault = 0;
		p->recover_seq = 0;
		core->journal_refuse = 0;
		log_info("journal: recovered: a snapshot holds every key "
		    "acknowledged during the fault (%llu lost to the journal "
		    "were in it)", (unsigned long long)p->lost);
		p->lost = 0;
		return 1;
	}
	/* a snapshot of the round failed: try again, not in a loop */
	if (now - p->recover_at >= 5) {
		p->recover_at = now;
		core_snapshot_dirty(core, 0);
	}
	return 0;
}

int
persist_tick(struct core *core)
{
	struct persist	*p = core->persist;
	time_t		 now = time(NULL);
	unsigned	 half = core->cfg->snapshot_interval / 2;
	uint64_t	 covered;
	char		 err[600];
	int		 recovered = 0;

	if (p == NULL || p->j == NULL)
		return 0;
	if (p->mode != JOURNAL_OFF && !p->fault &&
	    journal_status(p->j, err, sizeof(err)) == -1)
		enter_fault(core, err);
	covered = min_covered(core);
	if (p->fault)
		recovered = recover(core, covered, now);
	drop_covered(core, covered);
	if (p->fault || p->mode == JOURNAL_OFF)
		return recovered;
	if (p->seg_used && now - p->seg_start >= (half > 0 ? half : 1))
		(void)rotate(core, "half an interval");
	if (journal_bytes(p->j) <= core->cfg->journal_max ||
	    p->mode != JOURNAL_ALWAYS)
		return recovered;
	/* past journal_max, so the early round did not cover it: its
	 * snapshots fail (everysec keeps journalling: the keys come first,
	 * then the size) */
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (f->last_save_ok == 0 && !f->saving) {
			snprintf(err, sizeof(err), "journal_max reached and "
			    "snapshots failing: %s", f->last_save_error);
			enter_fault(core, err);
			return recovered;
		}
	}
	return recovered;
}

/* ---- reload and close ---- */

int
persist_reload(struct core *core, char *err, size_t errlen)
{
	struct persist		*p = core->persist;
	enum journal_mode	 want = core->cfg->journal;

	if (want == p->mode)
		return 0;
	if (p->j == NULL) {
		struct journal_replay_info info;

		/* off until now: nothing of ours is there; what an earlier
		 * run left was replayed at start */
		if (journal_replay(core->cfg->data_dir, NULL, NULL, &info, err,
		    errlen) == -1)
			return -1;
		numbered_past_files(core, &info);
		if ((p->j = journal_open(core->cfg->data_dir, &info, 0, err,
		    errlen)) == NULL)
			return -1;
		p->seg_start = time(NULL);
		saver_set_journal(core->saver, p->j);
	}
	if (p->mode == JOURNAL_EVERYSEC)
		journal_everysec_stop(p->j);
	if (want == JOURNAL_EVERYSEC &&
	    journal_everysec_start(p->j, 1000, err, errlen) == -1)
		return -1;
	log_info("journal: %s -> %s", p->mode == JOURNAL_OFF ? "off" :
	    p->mode == JOURNAL_ALWAYS ? "always" : "everysec",
	    want == JOURNAL_OFF ? "off" : want == JOURNAL_ALWAYS ? "always" :
	    "everysec");
	p->mode = want;
	/* off: what is journalled stays until snapshots cover it */
	core->journal = want == JOURNAL_OFF ? NULL : p->j;
	core->journal_refuse = p->fault && want == JOURNAL_ALWAYS;
	if (want == JOURNAL_OFF)
		core_snapshot_dirty(core, 0);
	return 0;
}

void
persist_close(struct core *core)
{
	struct persist	*p = core->persist;
	char		 err[600], path[4200];
	uint64_t	 seq;
	int		 all = 1;

	if (p == NULL)
		return;
	if (p->j == NULL)
		goto out;
	journal_everysec_stop(p->j);
	if (journal_write(p->j, err, sizeof(err)) == -1 ||
	    journal_sync(p->j, err, sizeof(err)) == -1)
		log_error("journal: at exit: %s", err);
	for (size_t i = 0; i < core_nfilters_all(core); i++) {
		struct filter *f = core_filter_at(core, i);

		if (filter_dirty(f))
			all = 0;
	}
	if (!all) {
		log_warn("journal: kept, it holds keys a snapshot lacks");
		goto out;
	}
	/* every key is in a snapshot: the journal can go, all but a new
	 * empty segment (journal = off: that one too) */
	if (journal_rotate(p->j, &seq, err, sizeof(err)) == -1)
		log_warn("journal: %s", err);
	seq = journal_seq(p->j);
	if (journal_drop_upto(p->j, seq - 1, err, sizeof(err)) == -1)
		log_warn("journal: %s", err);
	if (p->mode == JOURNAL_OFF) {
		seg_file(path, sizeof(path), core->cfg->data_dir, seq);
		journal_close(p->j);
		p->j = NULL;
		(void)unlink(path);
	}
out:
	if (p->j != NULL)
		journal_close(p->j);
	core->journal = NULL;
	free(p);
	core->persist = NULL;
}

void
persist_abort(struct core *core)
{
	if (core->persist == NULL)
		return;
	if (core->persist->j != NULL)
		journal_close(core->persist->j);
	free(core->persist);
	core->persist = NULL;
	core->journal = NULL;
}

/* ---- INFO and metrics ---- */

void
persist_info(const struct core *core, struct buf *out)
{
	const struct persist	*p = core->persist;
	uint64_t		 bytes, segs;
	double			 age;
	int			 ok;

	persist_figures(core, &bytes, &segs, &age, &ok);
	buf_printf(out,
	    "journal_mode %s\r\n"
	    "journal_status %s\r\n"
	    "journal_bytes %llu\r\n"
	    "journal_segments %llu\r\n"
	    "journal_sync_age_seconds %.0f\r\n"
	    "journal_lost %llu\r\n"
	    "journal_bytes_peak %llu\r\n"
	    "journal_max_waits %llu\r\n"
	    "filters_retired %zu\r\n",
	    p == NULL || p->mode == JOURNAL_OFF ? "off" :
	    p->mode == JOURNAL_ALWAYS ? "always" : "everysec",
	    persist_status(core), (unsigned long long)bytes,
	    (unsigned long long)segs, age,
	    (unsigned long long)(p ? p->lost : 0),
	    (unsigned long long)(p ? p->peak : 0),
	    (unsigned long long)(p ? p->waits : 0), core->nretired);
}

void
persist_figures(const struct core *core, uint64_t *bytes, uint64_t *segs,
    double *age, int *ok)
{
	const struct persist *p = core->persist;

	*bytes = *segs = 0;
	*age = 0;
	*ok = p == NULL || !p->fault;
	if (p == NULL || p->j == NULL)
		return;
	*bytes = journal_bytes(p->j);
	*segs = journal_segments(p->j);
	if (journal_unsynced(p->j) > 0)
		*age = (double)(time(NULL) - journal_synced_at(p->j));
}
