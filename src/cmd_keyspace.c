/*
 * cmd_keyspace.c - filter names as Redis keys: DEL, UNLINK, TYPE, KEYS,
 * SCAN, the EXPIRE family, and the line protocol's RESET.
 *
 * Filter names are a keyspace of their own (INTERFACE.md, "Today's Redis
 * clients"): a runtime filter is a key that DEL drops and EXPIRE can give
 * a deadline; a config-file filter is a key that DEL and RESET empty and
 * that never expires (its section says it exists).
 *
 * Deadlines live in one table here, by filter name, and in
 * <data_dir>/deadlines (deadline.h), rewritten before the reply of every
 * command that changes one. They are dropped by the server's one-second
 * sweep (keyspace_expire_due) and, as Redis expires keys lazily, by the
 * commands of this file when they meet a filter past its deadline.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "config.h"
#include "cluster.h"
#include "cluster_move.h"
#include "deadline.h"
#include "filter.h"
#include "handler.h"
#include "keyslot.h"
#include "keyspace.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "core.h"
#include "snapshot.h"

/* The runtime filters' deadlines; one server per process. */
static struct deadlines	 deadlines;
/* deadline_earliest(&deadlines), so that a command pays nothing when no
 * deadline has come */
static int64_t		 earliest = INT64_MAX;
/* the file lags the table (a write failed): the sweep retries */
static int		 unsaved;
/* the data_dir the file was last read from or written to: a reload that
 * moves data_dir makes the sweep write it in the new one */
static char		*saved_dir;

/* ---- small helpers ---- */

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The Redis type a filter answers to TYPE and SCAN ... TYPE: RedisBloom's
 * names, so that tools that list a keyspace by type see what they expect.
 * A cuckoo filter (type = cuckoo, CF.RESERVE) answers "MBbloomCF".
 */
static const char *
type_name(const struct filter *f)
{
	return filter_is_cuckoo(f) ? "MBbloomCF" : "MBbloom--";
}

/* An argument in an error text as Redis writes one (addReplyErrorFormat):
 * up to a NUL byte, CR and LF as spaces; cut at outlen. */
static const char *
err_arg(const char *s, size_t len, char *out, size_t outlen)
{
	size_t n = strnlen(s, len);

	if (n > outlen - 1)
		n = outlen - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
	out[n] = '\0';
	return out;
}

/*
 * Redis's glob (util.c, stringmatchlen), case-sensitive as KEYS and SCAN
 * use it: '*' any run, '?' one byte, '[abc]' '[^a]' '[a-z]' one byte of a
 * class ('\' escapes in it; a range's ends may come in either order;
 * "[a-]" is the range 'a' to ']'; an unclosed class ends with the
 * pattern), '\x' the byte x, a '\' at the end itself. Every token but '*'
 * takes exactly one byte, so one backtracking point (the last '*') is
 * enough: O(pattern * string) at worst, and no recursion for a hostile
 * pattern to exhaust. Redis answers 0 for an empty string whatever the
 * pattern but the empty one; so does this (names are never empty).
 */

/* 1 if the token at pat[p] (not '*') takes byte ch; *next: after it. */
static int
glob_token(const char *pat, size_t plen, size_t p, char ch, size_t *next)
{
	size_t	 i;
	int	 not, match = 0;

	switch (pat[p]) {
	case '?':
		*next = p + 1;
		return 1;
	case '\\':
		if (plen - p >= 2)
			p++;
		*next = p + 1;
		return pat[p] == ch;
	case '[':
		i = p + 1;
		not = i < plen && pat[i] == '^';
		if (not)
			i++;
		for (;; i++) {
			if (i >= plen) {
				/* unclosed: the class ends with the pattern */
				i = plen - 1;
				break;
			}
			if (pat[i] == '\\' && plen - i >= 2) {
				i++;
				if (pat[i] == ch)
					match = 1;
			} else if (pat[i] == ']') {
				break;
			} else if (plen - i >= 3 && pat[i + 1] == '-') {
				/* Redis compares chars, signed here */
				int start = (signed char)pat[i];
				int end = (signed char)pat[i + 2];
				int c = (signed char)ch;

				if (start > end) {
					int t = start;

					start = end;
					end = t;
				}
				i += 2;
				if (c >= start && c <= end)
					match = 1;
			} else if (pat[i] == ch)
				match = 1;
		}
		*next = i + 1;
		return not ? !match : match;
	default:
		*next = p + 1;
		return pat[p] == ch;
	}
}

static int
glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t	 p = 0, i = 0, star_p = 0, star_i = 0, next;
	int	 star = 0;

	if (slen == 0)
		return plen == 0;
	while (i < slen) {
		if (p < plen && pat[p] == '*') {
			while (p < plen && pat[p] == '*')
				p++;
			if (p == plen)
				return 1;
			star = 1;
			star_p = p;
			star_i = i;
			continue;
		}
		if (p < plen && glob_token(pat, plen, p, s[i], &next)) {
			p = next;
			i++;
			continue;
		}
		if (!star)
			return 0;
		/* the last '*' takes one byte more */
		p = star_p;
		i = ++star_i;
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}

/* ---- deadlines ---- */

static void
deadlines_changed(void)
{
	earliest = deadline_earliest(&deadlines);
}

/* Writes the table to data_dir. Returns 0, or -1 with a message in err
 * (the sweep retries). */
static int
save_deadlines(struct core *core, char *err, size_t errlen)
{
	const char *dir = core->cfg->data_dir;

	if (deadline_save(dir, &deadlines, err, errlen) == -1) {
		unsaved = 1;
		return -1;
	}
	unsaved = 0;
	if (saved_dir == NULL || strcmp(saved_dir, dir) != 0) {
		free(saved_dir);
		saved_dir = strdup(dir);	/* NULL: written again, harmless */
	}
	return 0;
}

/* save_deadlines where no client waits for the answer: a failure is
 * logged once, and retried by the sweep until it succeeds. */
static void
save_or_log(struct core *core)
{
	char	 err[600];
	int	 was = unsaved;

	if (save_deadlines(core, err, sizeof(err)) == -1) {
		if (!was)
			log_warn("deadlines: %s; retrying every second", err);
	} else if (was)
		log_info("deadlines: %s/%s written again", core->cfg->data_dir,
		    DEADLINE_FILE);
}

/*
 * Out of the registry, its snapshot file removed (the saver removes one a
 * job is writing: deleted), and its reference dropped; its deadline is
 * the caller's.
 */
static void
drop(struct core *core, struct filter *f, const char *why)
{
	char path[4096];

	/* replay must not make it again from its 'r' record */
	persist_filter_dropped(core, f);
	registry_remove(core->reg, f);
	f->deleted = 1;
	if (snapshot_path(path, sizeof(path), core->cfg->data_dir,
	    f->name) == 0 && unlink(path) == -1 && errno != ENOENT)
		log_warn("filter %s: cannot remove %s: %s", f->name, path,
		    strerror(errno));
	log_info("filter %s dropped %s", f->name, why);
	filter_unref(f);
}

void
keyspace_drop_filter(struct core *core, struct filter *f, const char *why)
{
	int had = deadline_remove(&deadlines, f->name, f->namelen);

	drop(core, f, why);
	if (had) {
		deadlines_changed();
		save_or_log(core);
	}
}

void
keyspace_drop_moved(struct core *core)
{
	/* a replica's go when its primary's 'x' records come */
	if (core->repl.replica)
		return;
	/* from the end: a removal moves the last filter into the hole */
	for (size_t i = core->reg->nfilters; i-- > 0;) {
		struct filter	*f = core->reg->filters[i];
		char		 why[96];
		unsigned	 slot;

		if (!f->given_away)
			continue;
		f->given_away = 0;
		slot = keyslot_of(f->name, f->namelen);
		if (!f->runtime || f->slot_major ||
		    cluster_shard_owns(core->cluster, slot))
			continue;
		snprintf(why, sizeof(why), "(its slot %u is another node's "
		    "now)", slot);
		keyspace_drop_filter(core, f, why);
	}
}

/*
 * Drops every runtime filter whose deadline is at or before now; with
 * sweep, also forgets the deadlines of names that are no runtime filter.
 * Returns 1 if the table changed.
 */
static int
expire_due(struct core *core, int64_t now, int sweep, const char *why)
{
	int changed = 0;

	/* a replica's filters go when its primary's do (the stream's 'x') */
	if (core->repl.replica || (!sweep && now < earliest))
		return 0;
	/* from the end: a removal moves the last entry, already seen, into
	 * the hole */
	for (size_t i = deadlines.n; i-- > 0;) {
		struct deadline	 e = deadlines.v[i];
		struct filter	*f = registry_find(core->reg, e.name,
		    e.namelen);

		if (f == NULL || !f->runtime) {
			if (!sweep)
				continue;
			log_info("filter %s: deadline forgotten: %s", e.name,
			    f == NULL ? "no such filter" : "a section of the "
			    "config file names it now");
		} else if (e.at_ms > now)
			continue;
		deadline_remove(&deadlines, e.name, e.namelen);
		changed = 1;
		if (f != NULL && f->runtime)
			drop(core, f, why);
	}
	if (changed)
		deadlines_changed();
	return changed;
}

/* Lazy expiry before a RESP command reads the keyspace, as Redis's (RESP
 * requests run one at a time: no other holds a filter it could drop). */
static void
expire_now(struct core *core, int64_t now)
{
	if (now >= earliest && expire_due(core, now, 0, "at its deadline"))
		save_or_log(core);
}

int
keyspace_load(struct core *core)
{
	const char	*dir = core->cfg->data_dir;
	char		 err[1024];
	size_t		 n;

	if (deadline_load(dir, &deadlines, err, sizeof(err)) == -1) {
		log_error("%s", err);
		log_error("not starting: the deadline file is left as it is; "
		    "fix it, or remove it (its filters then have no deadline); "
		    "see seend(8), FILES");
		return -1;
	}
	free(saved_dir);
	saved_dir = strdup(dir);
	n = deadlines.n;
	/* drops the filters whose deadline passed while seend was stopped,
	 * before the journal is replayed (their records are skipped) */
	if (expire_due(core, wall_ms(), 1, "at start: its deadline passed "
	    "while seend was stopped"))
		save_or_log(core);
	deadlines_changed();
	if (n > 0)
		log_info("deadlines: %zu loaded, %zu pending", n,
		    deadlines.n);
	return 0;
}

void
keyspace_expire_due(struct core *core, int64_t now_ms)
{
	int moved = saved_dir != NULL &&
	    strcmp(saved_dir, core->cfg->data_dir) != 0;

	if (deadlines.n == 0 && !unsaved && !moved)
		return;
	if (expire_due(core, now_ms, 1, "at its deadline") || unsaved || moved)
		save_or_log(core);
}

/* The filter named by argv[i], lazily expired. */
static struct filter *
lookup(struct session *s, struct op *op, int i, int64_t now)
{
	expire_now(s->core, now);
	return registry_find(s->core->reg, op->argv[i], op->argl[i]);
}

/*
 * Forgets every key of f, durably (journaled before the reply) and keeps
 * its config: DEL of a config-file filter, RESET. Returns 0, or -1 with
 * the error in r.
 */
static int
empty_filter(struct session *s, struct filter *f, struct result *r)
{
	char err[512];

	if (persist_filter_reset(s->core, f, err, sizeof(err)) == -1) {
		result_error(r, "ERR", "%s", err);
		return -1;
	}
	/* the reset record is written at the end of this turn, before the
	 * reply leaves: held like a key answered new */
	s->journaled = 1;
	log_info("filter %s emptied by client %llu (%s)", f->name,
	    (unsigned long long)s->id, s->peer);
	return 0;
}

/* ---- DEL, UNLINK, RESET ---- */

/*
 * Whether slots of this node are being handed over (cluster_handoff.h):
 * then a partitioned filter must not be emptied, as its paused slots'
 * bits may have been copied to their new node already, which would keep
 * them under the old seed (TRYAGAIN in r, as for MERGE).
 */
static int
handing_over(struct session *s, const struct op *op, struct result *r)
{
	int line = op->proto == COMMAND_LINE;

	if (s->core->cluster == NULL || s->core->cluster->nhandoffs == 0)
		return 0;
	result_error(r, line ? "ERR" : "TRYAGAIN", "%sslots of this node are "
	    "being handed over to another node, try again", line ?
	    "TRYAGAIN " : "");
	return 1;
}

/*
 * Whether f may be emptied by DEL or RESET here: not a partitioned filter
 * of which this node holds only part (its other parts are other nodes',
 * and emptying one would leave the filter half forgotten, its seed no
 * longer the others'); else 0 with the error in r. FLUSHALL empties every
 * part of this node, as in a Redis Cluster, where it is sent to each.
 */
static int
whole_here(struct session *s, const struct op *op, const struct filter *f,
    struct result *r)
{
	if (!f->slot_major)
		return 1;
	if (handing_over(s, op, r))
		return 0;
	if (cluster_owns_all(s->core->cluster))
		return 1;
	result_error(r, "ERR", "filter %s is partitioned over the cluster's "
	    "nodes and this node holds part of it: empty every part with "
	    "seen-cli cluster reset HOST:PORT %s", f->name, f->name);
	return 0;
}

/*
 * DEL <name> ... of a name that is no filter: a URL key, forgotten (1)
 * where it routes to a cuckoo filter that holds it, else 0 (a bloom filter
 * cannot forget, no filter takes it, or it is not held). FORGET's path
 * (command_forget_key): journaled before the reply and replicated. -1
 * with the error in r if the journal refuses it.
 */
static int
del_key(struct session *s, const char *key, size_t len, struct result *r)
{
	struct filter *f = registry_route(s->core->reg, key, len);

	if (f == NULL || !filter_is_cuckoo(f))
		return 0;
	return command_forget_key(s, f, key, len, r);
}

/*
 * DEL f ... / UNLINK f ...: drops runtime filters (with their files and
 * deadlines) and empties config-file ones; :n filters dropped or emptied
 * (a name twice counts once, as in Redis) plus the keys forgotten of the
 * names that are no filter (del_key: Heritrix's DEL <uri>). The
 * config-file filters are emptied first, then the keys forgotten: if one
 * cannot be, the error is the reply and no runtime filter has been
 * dropped (those emptied or forgotten before it stay so).
 */
void
cmd_del(struct session *s, struct op *op, struct result *r)
{
	struct core *core = s->core;
	struct filter	*f, **emptied;
	char		 why[160];
	size_t		 nemptied = 0, j;
	long long	 n = 0;
	int		 changed = 0;

	expire_now(core, wall_ms());
	/* each config-file filter once, however often it is named */
	if ((emptied = calloc(core->reg->nfilters + 1, sizeof(*emptied))) ==
	    NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	/* nothing emptied when one cannot be */
	for (int i = 1; i < op->argc; i++) {
		f = registry_find(core->reg, op->argv[i], op->argl[i]);
		if (f != NULL && !whole_here(s, op, f, r)) {
			free(emptied);
			return;
		}
	}
	for (int i = 1; i < op->argc; i++) {
		f = registry_find(core->reg, op->argv[i], op->argl[i]);
		if (f == NULL || f->runtime)
			continue;
		for (j = 0; j < nemptied && emptied[j] != f; j++)
			;
		if (j < nemptied)
			continue;
		if (empty_filter(s, f, r) == -1) {
			free(emptied);
			return;
		}
		emptied[nemptied++] = f;
		n++;
	}
	free(emptied);
	for (int i = 1; i < op->argc; i++) {
		int k;

		if (registry_find(core->reg, op->argv[i], op->argl[i]) != NULL)
			continue;
		if ((k = del_key(s, op->argv[i], op->argl[i], r)) == -1)
			return;
		n += k;
	}
	snprintf(why, sizeof(why), "by client %llu (%s)",
	    (unsigned long long)s->id, s->peer);
	for (int i = 1; i < op->argc; i++) {
		f = registry_find(core->reg, op->argv[i], op->argl[i]);
		if (f == NULL || !f->runtime)
			continue;
		changed |= deadline_remove(&deadlines, f->name, f->namelen);
		drop(core, f, why);
		/* its drop record goes before the reply, as a key's */
		s->journaled = 1;
		n++;
	}
	if (changed) {
		deadlines_changed();
		save_or_log(core);
	}
	result_int(r, n);
}

/*
 * Line protocol: RESET <filter> -> OK, the filter emptied (it stays).
 * No lazy expiry here: the requests of a line batch are prepared (their
 * filter found) before any runs, so a line command must not drop one.
 */
void
cmd_reset(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	char		 tok[80];

	if ((f = registry_find(s->core->reg, op->argv[1], op->argl[1])) ==
	    NULL) {
		result_error(r, "ERR", "no such filter '%s'",
		    command_printable(op->argv[1], op->argl[1], tok,
		    sizeof(tok)));
		return;
	}
	if (whole_here(s, op, f, r) && empty_filter(s, f, r) == 0)
		result_status(r, "OK");
}

/* 16 hex digits; 0, or -1. */
static int
hex_seed(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len != 16)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int d = isdigit((unsigned char)s[i]) ? s[i] - '0' :
		    (s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'f' ?
		    (s[i] | 0x20) - 'a' + 10 : -1;

		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* CLUSTER <sub> <filter> ... of argc words (usage: its syntax): this
 * node's partitioned filter argv[2]; NULL with the error in r. */
static struct filter *
part_of(struct session *s, struct op *op, int argc, const char *usage,
    struct result *r)
{
	struct filter	*f;
	char		 tok[80];

	if (op->argc != argc) {
		result_error(r, "ERR", "syntax error: CLUSTER %s", usage);
		return NULL;
	}
	f = registry_find(s->core->reg, op->argv[2], op->argl[2]);
	if (f == NULL || !f->slot_major || f->runtime) {
		result_error(r, "ERR", "%s is not a partitioned filter here",
		    command_printable(op->argv[2], op->argl[2], tok,
		    sizeof(tok)));
		return NULL;
	}
	return f;
}

void
keyspace_part_seed(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	struct buf	*b;
	char		 text[32];

	if ((f = part_of(s, op, 3, "PARTSEED <filter>", r)) == NULL)
		return;
	/* in the result's own buffer: result_bulk would keep a pointer */
	snprintf(text, sizeof(text), "%016llx %s", (unsigned long long)f->seed,
	    filter_is_blank(f) ? "empty" : "keys");
	b = result_reset();
	if (resp_add_bulk(b, text, strlen(text)) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
}

void
keyspace_reset_part(struct session *s, struct op *op, struct result *r)
{
	struct core	*core = s->core;
	struct filter	*f;
	uint64_t	 seed;
	char		 err[512];

	if ((f = part_of(s, op, 4, "RESETPART <filter> <seed>", r)) == NULL)
		return;
	if (hex_seed(op->argv[3], op->argl[3], &seed) == -1) {
		result_error(r, "ERR", "the seed is 16 hex digits");
		return;
	}
	/* a replica's part is its primary's: the reset reaches it by the
	 * stream */
	if (core->repl.replica) {
		result_error(r, "READONLY", "You can't write against a read "
		    "only replica.");
		return;
	}
	/* a paused slot's bits are being copied to another node */
	if (handing_over(s, op, r))
		return;
	if (f->seed == filter_next_seed(seed)) {
		result_status(r, "OK");	/* emptied already */
		return;
	}
	if (f->seed == seed) {
		if (empty_filter(s, f, r) == 0)
			result_status(r, "OK");
		return;
	}
	/* a part holding nothing (a node added since, its seed the map's)
	 * takes the new seed, unless it held it or a later one already */
	if (filter_is_blank(f) && !filter_seed_after(f->seed, seed)) {
		if (persist_filter_reset_to(core, f, filter_next_seed(seed),
		    err, sizeof(err)) == -1) {
			result_error(r, "ERR", "%s", err);
			return;
		}
		s->journaled = 1;
		log_info("filter %s: its empty part takes seed %016llx (CLUSTER "
		    "RESETPART by client %llu)", f->name, (unsigned long long)
		    f->seed, (unsigned long long)s->id);
		result_status(r, "OK");
		return;
	}
	if (filter_is_blank(f))
		result_error(r, "ERR", "filter %s's empty part hashes with seed "
		    "%016llx here, which a later reset than one of %016llx "
		    "gave it", f->name, (unsigned long long)f->seed,
		    (unsigned long long)seed);
	else
		result_error(r, "ERR", "filter %s hashes with seed %016llx "
		    "here, neither %016llx nor the one after it, and holds "
		    "keys", f->name, (unsigned long long)f->seed,
		    (unsigned long long)seed);
}

/*
 * FLUSHALL / FLUSHDB [ASYNC|SYNC]: every config-file filter emptied and
 * every runtime filter dropped, each as DEL does it (journaled before the
 * reply and replicated; a runtime filter's file and deadline go), +OK.
 * seend has one database, so FLUSHDB is FLUSHALL; ASYNC and SYNC are
 * accepted and both done before the reply (an emptied filter is a new
 * seed and fresh slices, a dropped one a reference let go). As in DEL,
 * the config-file filters are emptied first: if one cannot be (the
 * journal in fault), the error is the reply and no runtime filter has
 * been dropped. Loads in progress (BF.LOADCHUNK) are not keys yet and
 * are left alone.
 */
void
cmd_flushall(struct session *s, struct op *op, struct result *r)
{
	struct core	*core = s->core;
	struct filter	**all;
	size_t		 n = core->reg->nfilters, emptied = 0, dropped = 0;
	char		 why[160];
	int		 changed = 0;

	if (op->argc > 2 || (op->argc == 2 &&
	    !name_is(op->argv[1], op->argl[1], "ASYNC", 5) &&
	    !name_is(op->argv[1], op->argl[1], "SYNC", 4))) {
		result_error(r, "ERR", "syntax error");
		return;
	}
	/* nothing emptied while a partitioned filter's slots are paused */
	for (size_t i = 0; i < n; i++)
		if (core->reg->filters[i]->slot_major && handing_over(s, op, r))
			return;
	/* a copy: dropping a filter changes the registry's array */
	if ((all = calloc(n + 1, sizeof(*all))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	memcpy(all, core->reg->filters, n * sizeof(*all));
	for (size_t i = 0; i < n; i++) {
		if (all[i]->runtime)
			continue;
		if (empty_filter(s, all[i], r) == -1) {
			free(all);
			return;
		}
		emptied++;
	}
	snprintf(why, sizeof(why), "by %s of client %llu (%s)", op->cmd->name,
	    (unsigned long long)s->id, s->peer);
	for (size_t i = 0; i < n; i++) {
		struct filter *f = all[i];

		if (!f->runtime)
			continue;
		changed |= deadline_remove(&deadlines, f->name, f->namelen);
		drop(core, f, why);
		/* its drop record goes before the reply, as a key's */
		s->journaled = 1;
		dropped++;
	}
	free(all);
	if (changed) {
		deadlines_changed();
		save_or_log(core);
	}
	log_info("%s by client %llu (%s): %zu filter(s) emptied, %zu "
	    "dropped", op->cmd->name, (unsigned long long)s->id, s->peer,
	    emptied, dropped);
	result_status(r, "OK");
}

/* ---- TYPE, KEYS, SCAN, MEMORY USAGE ---- */

/* TYPE <name>: +MBbloom-- for a filter, +none for anything else. */
void
cmd_type(struct session *s, struct op *op, struct result *r)
{
	struct filter *f = lookup(s, op, 1, wall_ms());

	result_status(r, f != NULL ? type_name(f) : "none");
}

/* MEMORY HELP: Redis's form, with what seend serves. */
static void
memory_help(struct result *r)
{
	static const char *const lines[] = {
		"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"USAGE <key> [SAMPLES <count>]",
		"    Return the bytes of the filter <key> (its slices' arrays or "
		    "tables).",
		"    SAMPLES is accepted and changes nothing: the size is exact.",
		"HELP",
		"    Prints this help.",
	};
	struct buf *b = result_reset();

	resp_add_array(b, (long long)(sizeof(lines) / sizeof(lines[0])));
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		resp_add_status(b, lines[i]);
	result_scratch(r, RESULT_ARRAY);
}

/*
 * MEMORY USAGE <name> [SAMPLES <count>]: the bytes of the filter of that
 * name (FILTERS' bytes=), or null for a name that is no filter, as Redis
 * answers a missing key; the options are checked as Redis 7.0 checks them
 * (object.c), before the name is looked up. MEMORY HELP; Redis's other
 * subcommands (STATS, DOCTOR, PURGE, MALLOC-STATS) are not served.
 */
void
cmd_memory(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 samples;

	if (name_is(op->argv[1], op->argl[1], "HELP", 4) && op->argc == 2) {
		memory_help(r);
		return;
	}
	if (!name_is(op->argv[1], op->argl[1], "USAGE", 5)) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try MEMORY "
		    "HELP.", (int)(op->argl[1] < 128 ? op->argl[1] : 128),
		    op->argv[1]);
		return;
	}
	if (op->argc < 3) {
		result_error(r, "ERR", "wrong number of arguments for "
		    "'memory|usage' command");
		return;
	}
	for (int j = 3; j < op->argc; j++) {
		if (!name_is(op->argv[j], op->argl[j], "SAMPLES", 7) ||
		    j + 1 == op->argc) {
			result_error(r, "ERR", "syntax error");
			return;
		}
		if (command_arg_ll(op->argv[j + 1], op->argl[j + 1],
		    &samples) == -1) {
			result_error(r, "ERR", "value is not an integer or out "
			    "of range");
			return;
		}
		if (samples < 0) {
			result_error(r, "ERR", "syntax error");
			return;
		}
		j++;
	}
	if ((f = lookup(s, op, 2, wall_ms())) == NULL)
		result_null(r);
	else
		result_int(r, (long long)filter_bytes(f));
}

/* The names of reg's filters at idx[0..n) as a RESP array. */
static int
add_names(struct buf *b, const struct registry *reg, const size_t *idx,
    size_t n)
{
	int rc = resp_add_array(b, (long long)n);

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = resp_add_bulk(b, reg->filters[idx[i]]->name,
		    reg->filters[idx[i]]->namelen);
	return rc;
}

/* KEYS <pattern>: every filter name the pattern matches. */
void
cmd_keys(struct session *s, struct op *op, struct result *r)
{
	const struct registry	*reg;
	size_t			*idx, n = 0;
	struct buf		*b;
	int			 all;

	expire_now(s->core, wall_ms());
	reg = s->core->reg;
	all = op->argl[1] == 1 && op->argv[1][0] == '*';
	if ((idx = malloc((reg->nfilters + 1) * sizeof(*idx))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (size_t i = 0; i < reg->nfilters; i++)
		if (all || glob_match(op->argv[1], op->argl[1],
		    reg->filters[i]->name, reg->filters[i]->namelen))
			idx[n++] = i;
	b = result_reset();
	if (add_names(b, reg, idx, n) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	free(idx);
}

/* The cursor as Redis reads one (parseScanCursorOrReply: strtoul, no
 * leading space, the whole text up to a NUL byte). 0, or -1. */
static int
scan_cursor(const char *s, size_t len, unsigned long long *cursor)
{
	char	*tmp, *end;
	int	 rc;

	if ((tmp = malloc(len + 1)) == NULL)
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	*cursor = strtoull(tmp, &end, 10);
	rc = isspace((unsigned char)tmp[0]) || *end != '\0' ||
	    errno == ERANGE ? -1 : 0;
	free(tmp);
	return rc;
}

/* Where a name sits in SCAN's order. */
static uint64_t
scan_hash(const struct filter *f)
{
	return XXH3_64bits(f->name, f->namelen);
}

/* A max-heap of the k smallest hashes seen: h[0] is the largest. */
static void
heap_push(uint64_t *h, size_t *n, size_t k, uint64_t v)
{
	size_t i, p, l, m;

	if (*n < k) {
		for (i = (*n)++; i > 0 && h[p = (i - 1) / 2] < v; i = p)
			h[i] = h[p];
		h[i] = v;
		return;
	}
	if (v >= h[0])
		return;
	/* replace the largest and sift down */
	for (i = 0;; i = m) {
		l = 2 * i + 1;
		if (l >= k)
			break;
		m = l + 1 < k && h[l + 1] > h[l] ? l + 1 : l;
		if (h[m] <= v)
			break;
		h[i] = h[m];
	}
	h[i] = v;
}

/*
 * SCAN <cursor> [MATCH p] [COUNT n] [TYPE t]: filter names, a page at a
 * time.
 *
 * The order is that of a 64-bit hash of the name (XXH3), which no filter
 * added or dropped changes; the cursor is the hash where the next page
 * starts. A page takes the COUNT (default 10) smallest hashes at or past
 * the cursor (and any name that shares the last one's hash), then MATCH
 * and TYPE filter it, as Redis filters a page after taking it; the next
 * cursor is one past the page's last hash, or 0 once nothing is left.
 * So a filter present from the first call to the last is returned exactly
 * once (Redis promises at least once), whatever is created or dropped in
 * between, and a page can be empty before the end. Each call reads every
 * name once: O(filters), and max_filters bounds that.
 */
void
cmd_scan(struct session *s, struct op *op, struct result *r)
{
	const struct registry	*reg;
	unsigned long long	 cursor;
	long long		 count = 10;
	const char		*pat = NULL, *type = NULL;
	size_t			 patlen = 0, typelen = 0, k, nheap = 0;
	size_t			 total = 0, taken = 0, n = 0, *idx = NULL;
	uint64_t		*hashes = NULL, *heap = NULL, last;
	unsigned long long	 next;
	struct buf		*b;
	char			 num[24];
	int			 rc;

	if (scan_cursor(op->argv[1], op->argl[1], &cursor) == -1) {
		result_error(r, "ERR", "invalid cursor");
		return;
	}
	for (int i = 2; i < op->argc; i += 2) {
		int left = op->argc - i;

		if (left >= 2 && name_is(op->argv[i], op->argl[i], "COUNT", 5)) {
			if (command_arg_ll(op->argv[i + 1], op->argl[i + 1],
			    &count) == -1) {
				result_error(r, "ERR", "value is not an "
				    "integer or out of range");
				return;
			}
			if (count < 1) {
				result_error(r, "ERR", "syntax error");
				return;
			}
		} else if (left >= 2 &&
		    name_is(op->argv[i], op->argl[i], "MATCH", 5)) {
			pat = op->argv[i + 1];
			patlen = op->argl[i + 1];
			if (patlen == 1 && pat[0] == '*')
				pat = NULL;	/* everything */
		} else if (left >= 2 &&
		    name_is(op->argv[i], op->argl[i], "TYPE", 4)) {
			type = op->argv[i + 1];
			typelen = op->argl[i + 1];
		} else {
			result_error(r, "ERR", "syntax error");
			return;
		}
	}

	expire_now(s->core, wall_ms());
	reg = s->core->reg;
	k = (unsigned long long)count < reg->nfilters ? (size_t)count :
	    reg->nfilters;
	hashes = malloc((reg->nfilters + 1) * sizeof(*hashes));
	heap = malloc((k + 1) * sizeof(*heap));
	idx = malloc((reg->nfilters + 1) * sizeof(*idx));
	if (hashes == NULL || heap == NULL || idx == NULL) {
		result_error(r, "ERR", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < reg->nfilters; i++) {
		hashes[i] = scan_hash(reg->filters[i]);
		if (hashes[i] < cursor)
			continue;
		total++;
		heap_push(heap, &nheap, k, hashes[i]);
	}
	/* the page: [cursor, last]; all that is left if it fits */
	last = total > k ? heap[0] : UINT64_MAX;
	for (size_t i = 0; i < reg->nfilters; i++) {
		const struct filter *f = reg->filters[i];

		if (hashes[i] < cursor || hashes[i] > last)
			continue;
		taken++;
		if (pat != NULL && !glob_match(pat, patlen, f->name,
		    f->namelen))
			continue;
		if (type != NULL && (strlen(type_name(f)) != typelen ||
		    strncasecmp(type, type_name(f), typelen) != 0))
			continue;
		idx[n++] = i;
	}
	next = taken == total || last == UINT64_MAX ? 0 :
	    (unsigned long long)last + 1;
	b = result_reset();
	rc = resp_add_array(b, 2);
	snprintf(num, sizeof(num), "%llu", next);
	if (rc == 0)
		rc = resp_add_bulk(b, num, strlen(num));
	if (rc == 0)
		rc = add_names(b, reg, idx, n);
	if (rc == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
out:
	free(hashes);
	free(heap);
	free(idx);
}

/* ---- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, PERSIST ---- */

#define EXPIRE_NX	0x1
#define EXPIRE_XX	0x2
#define EXPIRE_GT	0x4
#define EXPIRE_LT	0x8

static void
config_filter_error(struct result *r, const struct filter *f, const char *what)
{
	result_error(r, "ERR", "filter %s is in the config file: %s (remove "
	    "its section and reload to drop it; DEL or RESET empties it)",
	    f->name, what);
}

/*
 * EXPIRE <filter> <seconds> [NX|XX|GT|LT], PEXPIRE (milliseconds),
 * EXPIREAT / PEXPIREAT (a Unix time): as Redis 7.0's expireGenericCommand,
 * in its order: options, the number, its overflow, the key (:0 if
 * missing), the options' conditions (:0), then a time already past drops
 * the filter now, and any other sets its deadline (written to the file
 * before the reply): :1.
 */
void
cmd_expire(struct session *s, struct op *op, struct result *r)
{
	struct core *core = s->core;
	const char	*lname = op->cmd->lname;
	int		 ms = lname[0] == 'p';
	int		 at = strstr(lname, "at") != NULL;
	int		 flags = 0;
	long long	 when;
	int64_t		 now = wall_ms(), base = at ? 0 : now, cur;
	struct deadline	*e;
	struct filter	*f;
	char		 tok[400], err[600], why[160];

	for (int i = 3; i < op->argc; i++) {
		const char	*a = op->argv[i];
		size_t		 l = op->argl[i];

		if (name_is(a, l, "NX", 2))
			flags |= EXPIRE_NX;
		else if (name_is(a, l, "XX", 2))
			flags |= EXPIRE_XX;
		else if (name_is(a, l, "GT", 2))
			flags |= EXPIRE_GT;
		else if (name_is(a, l, "LT", 2))
			flags |= EXPIRE_LT;
		else {
			result_error(r, "ERR", "Unsupported option %s",
			    err_arg(a, l, tok, sizeof(tok)));
			return;
		}
	}
	if ((flags & EXPIRE_NX) && (flags & (EXPIRE_XX | EXPIRE_GT |
	    EXPIRE_LT))) {
		result_error(r, "ERR", "NX and XX, GT or LT options at the "
		    "same time are not compatible");
		return;
	}
	if ((flags & EXPIRE_GT) && (flags & EXPIRE_LT)) {
		result_error(r, "ERR", "GT and LT options at the same time "
		    "are not compatible");
		return;
	}
	if (command_arg_ll(op->argv[2], op->argl[2], &when) == -1) {
		result_error(r, "ERR", "value is not an integer or out of "
		    "range");
		return;
	}
	if (!ms) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto invalid;
		when *= 1000;
	}
	if (when > LLONG_MAX - base)
		goto invalid;
	when += base;

	if ((f = lookup(s, op, 1, now)) == NULL) {
		result_int(r, 0);
		return;
	}
	if (!f->runtime) {
		config_filter_error(r, f, "it cannot expire");
		return;
	}
	e = deadline_find(&deadlines, f->name, f->namelen);
	cur = e != NULL ? e->at_ms : -1;
	if (((flags & EXPIRE_NX) && cur != -1) ||
	    ((flags & EXPIRE_XX) && cur == -1) ||
	    ((flags & EXPIRE_GT) && (cur == -1 || when <= cur)) ||
	    ((flags & EXPIRE_LT) && cur != -1 && when >= cur)) {
		result_int(r, 0);
		return;
	}
	if (when <= now) {
		/* as Redis deletes a key given a time already past */
		snprintf(why, sizeof(why), "by %s %lld from client %llu (%s)",
		    lname, (long long)(ms ? when - base : (when - base) / 1000),
		    (unsigned long long)s->id, s->peer);
		keyspace_drop_filter(core, f, why);
		result_int(r, 1);
		return;
	}
	if (deadline_set(&deadlines, f->name, f->namelen, when) == -1) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	if (save_deadlines(core, err, sizeof(err)) == -1) {
		/* the deadline is not kept: the table goes back */
		if (cur == -1)
			deadline_remove(&deadlines, f->name, f->namelen);
		else
			deadline_set(&deadlines, f->name, f->namelen, cur);
		/* (the sweep rewrites the file as the table is, should the
		 * failed write have gone through) */
		deadlines_changed();
		result_error(r, "ERR", "cannot keep the deadline of filter "
		    "%s: %s", f->name, err);
		return;
	}
	deadlines_changed();
	persist_stream_deadline(core, f, when);
	result_int(r, 1);
	return;

invalid:
	result_error(r, "ERR", "invalid expire time in '%s' command", lname);
}

/* TTL / PTTL <filter>: -2 missing, -1 no deadline (a config-file filter
 * never has one), else the time left (TTL: seconds, rounded). */
void
cmd_ttl(struct session *s, struct op *op, struct result *r)
{
	int64_t		 now = wall_ms(), ttl;
	struct filter	*f = lookup(s, op, 1, now);
	struct deadline	*e;

	if (f == NULL) {
		result_int(r, -2);
		return;
	}
	if (!f->runtime ||
	    (e = deadline_find(&deadlines, f->name, f->namelen)) == NULL) {
		result_int(r, -1);
		return;
	}
	ttl = e->at_ms - now;
	if (ttl < 0)
		ttl = 0;
	result_int(r, op->cmd->lname[0] == 'p' ? ttl : (ttl + 500) / 1000);
}

/* PERSIST <filter>: :1 if its deadline was removed, :0 if it had none or
 * is missing; an error for a config-file filter. */
void
cmd_persist(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f = lookup(s, op, 1, wall_ms());
	struct deadline	*e;
	int64_t		 was;
	char		 err[600];

	if (f == NULL) {
		result_int(r, 0);
		return;
	}
	if (!f->runtime) {
		config_filter_error(r, f, "it has no deadline to remove");
		return;
	}
	if ((e = deadline_find(&deadlines, f->name, f->namelen)) == NULL) {
		result_int(r, 0);
		return;
	}
	was = e->at_ms;
	deadline_remove(&deadlines, f->name, f->namelen);
	if (save_deadlines(s->core, err, sizeof(err)) == -1) {
		/* the deadline stays (the sweep rewrites the file as the
		 * table is, should the failed write have gone through) */
		(void)deadline_set(&deadlines, f->name, f->namelen, was);
		deadlines_changed();
		result_error(r, "ERR", "cannot remove the deadline of filter "
		    "%s: %s", f->name, err);
		return;
	}
	deadlines_changed();
	persist_stream_deadline(s->core, f, 0);
	result_int(r, 1);
}

int64_t
keyspace_deadline(const struct filter *f)
{
	struct deadline *e = deadline_find(&deadlines, f->name, f->namelen);

	return e != NULL ? e->at_ms : 0;
}

void
keyspace_set_deadline(struct core *core, struct filter *f, int64_t at_ms)
{
	int changed;

	if (!f->runtime)
		return;
	if (at_ms == 0)
		changed = deadline_remove(&deadlines, f->name, f->namelen);
	else
		changed = deadline_set(&deadlines, f->name, f->namelen,
		    at_ms) == 0;
	if (changed) {
		deadlines_changed();
		save_or_log(core);
	}
}
