/*
 * cmd_cuckoo.c - RedisBloom's CF.* commands, with its replies and errors.
 *
 * The model is RedisBloom 2.4 (rebloom.c, cuckoo.c): the same argument
 * parsing (CF.RESERVE's keywords found anywhere, CF.INSERT's options told
 * by their first letter), the same error texts (some with "ERR", most
 * bare), the same order of checks. As there, CF.ADD stores another copy of
 * a key it holds (CF.COUNT 2, two CF.DEL to remove it), CF.ADDNX and
 * CF.INSERTNX record a key only when absent, CF.INSERT answers -1 for an
 * item a fixed filter has no room for and goes on with the next ones, and
 * CF.EXISTS, CF.MEXISTS and CF.COUNT answer 0 for a missing key and for a
 * Bloom filter alike. On a RESP3 connection the answers are booleans and
 * CF.INFO is a map, as RedisBloom 2.6 and later give them (CF.INSERTNX and
 * CF.COUNT stay integers there). seend(8) lists where seend differs on
 * purpose (bucket size, default MAXITERATIONS, defaults from the config,
 * Size and Number of buckets of its own tables).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "registry.h"
#include "resp.h"
#include "core.h"
#include "cuckoo.h"

/* The largest growth factor a snapshot keeps (as cmd_bloom.c). */
#define MAX_EXPANSION	1024

/* RedisBloom's limits and defaults (cuckoo.h) */
#define CF_DEFAULT_BUCKETSIZE	2
#define CF_MAX_BUCKET_SIZE	255
#define CF_MAX_ITERATIONS	65535
#define CF_MAX_EXPANSION	32768

#define CF_FULL_TEXT	"Filter is full"
/* RedisBloom 2.4's CF_MAX_EXPANSIONS (rebloom.c: CFMaxExpansions, 32 by
 * default): CF.ADD and CF.INSERT refuse a filter of that many sub-filters
 * before trying any item */
#define CF_MAX_EXPANSIONS	32
#define CF_EXPANSIONS_TEXT	"Maximum expansions reached"
/* cfCreate's CUCKOO_OOM: a table that cannot be made */
#define CF_NOMEM_TEXT		"Insufficient memory to create filter"

/* ------------------------------------------------------------------ */
/* Filters as RedisBloom's keys                                        */
/* ------------------------------------------------------------------ */

/* The cuckoo filter named by argv[1], in *fp when found. */
static enum bf_status
cf_lookup(struct session *s, struct op *op, struct filter **fp)
{
	return command_typed_lookup(s, op, FILTER_TYPE_CUCKOO, fp);
}

/*
 * A runtime cuckoo filter named by argv[1] (max_kicks: MAXITERATIONS, 0
 * the default); NULL with r set. A capacity whose first table cannot be
 * planned (over 1 TiB, as filter.c plans it) or allocated gets
 * RedisBloom's "ERR Insufficient memory to create filter"; max_memory
 * and the registry's limits keep seend's reasons.
 */
static struct filter *
cf_create(struct session *s, struct op *op, long long cap, unsigned growth,
    unsigned max_kicks, struct result *r)
{
	double		 rate = s->core->cfg->new_filter_error_rate, first;
	uint64_t	 c, nbuckets;
	uint32_t	 fpbits;
	struct filter	*f;

	filter_first_shape((uint64_t)cap, rate, growth, 0, &c, &first);
	if (first < FILTER_CUCKOO_RATE_MIN)
		first = FILTER_CUCKOO_RATE_MIN;
	if (cuckoo_plan(c, first, &nbuckets, &fpbits) == -1) {
		result_error(r, "ERR", CF_NOMEM_TEXT);
		return NULL;
	}
	f = command_create_filter(s, op->argv[1], op->argl[1], (uint64_t)cap,
	    rate, growth, FILTER_TYPE_CUCKOO, max_kicks, r);
	if (f == NULL && r->kind == RESULT_ERROR && r->text != NULL &&
	    memmem(r->text, r->len, "cannot allocate", 15) != NULL)
		result_error(r, "ERR", CF_NOMEM_TEXT);
	return f;
}

/* RedisBloom's bound on a filter's growth, asked before any item of
 * CF.ADD, CF.ADDNX, CF.INSERT or CF.INSERTNX: 1 (r set) if f has reached
 * it. SEEN, SADD and the other dedup commands are not bound by it: a
 * growing filter never refuses them a key (seend(8)). */
static int
max_expansions(const struct filter *f, struct result *r)
{
	if (f->nslices < CF_MAX_EXPANSIONS)
		return 0;
	result_bare(r, CF_EXPANSIONS_TEXT);
	return 1;
}

/*
 * The filter CF.ADD / CF.INSERT add to: the one named, or (unless
 * nocreate) a new one of capacity cap. NULL with r set.
 */
static struct filter *
cf_target(struct session *s, struct op *op, int nocreate, long long cap,
    struct result *r)
{
	struct filter *f;

	switch (cf_lookup(s, op, &f)) {
	case BF_FOUND:
		return f;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return NULL;
	case BF_MISSING:
		break;
	}
	if (nocreate) {
		result_error(r, "ERR", "not found");
		return NULL;
	}
	/* created on demand only when create_filters is on (CF.RESERVE
	 * creates either way, as BF.RESERVE does) */
	if (!s->core->cfg->create_filters) {
		result_error(r, "ERR", "no such filter '%.*s' (create_filters "
		    "is off)", (int)(op->argl[1] < 64 ? op->argl[1] : 64),
		    op->argv[1]);
		return NULL;
	}
	return cf_create(s, op, cap, s->core->cfg->new_filter_growth, 0, r);
}

/*
 * 1 if an item f could not take met a filter with no room for good,
 * which RedisBloom reports as "Filter is full" (CF.ADD) or -1
 * (CF.INSERT, which goes on with the next items): a fixed filter whose
 * table cannot take a key (filter.c marks it full), or a growing one at
 * seend's bound of FILTER_MAX_SLICES (as RedisBloom's at UINT16_MAX
 * sub-filters: 140,000 copies of one item in a CF.INSERT reach it).
 * Anything else (the journal, max_memory) keeps seend's error.
 */
static int
no_room(const struct filter *f)
{
	if (!f->full)
		return 0;
	return (f->growth == 0 && !f->held) || f->nslices >= FILTER_MAX_SLICES;
}

/* 1 for CF.ADDNX and CF.INSERTNX (as RedisBloom tells: the last letter). */
static int
is_nx(const struct op *op)
{
	size_t n = strlen(op->cmd->name);

	return n > 0 && op->cmd->name[n - 1] == 'X';
}

/* The smallest power of two >= v (0 stays 0), as RedisBloom stores a
 * cuckoo filter's expansion. */
static long long
pow2_up(long long v)
{
	long long p = 1;

	if (v <= 0)
		return 0;
	while (p < v)
		p <<= 1;
	return p;
}

/* ------------------------------------------------------------------ */
/* The commands                                                        */
/* ------------------------------------------------------------------ */

/* The value after a CF.RESERVE keyword: 0, -1 missing or not a number. */
static int
keyword_value(const struct op *op, const char *word, int *found,
    long long *v)
{
	size_t	 n = strlen(word);
	int	 i;

	*found = 0;
	/* RMUtil_ArgIndex: the first match, the key and capacity included */
	for (i = 1; i < op->argc; i++)
		if (name_is(op->argv[i], op->argl[i], word, n))
			break;
	if (i == op->argc)
		return 0;
	*found = 1;
	/* RedisBloom reads past the end for a keyword in the last place */
	if (i + 1 >= op->argc ||
	    command_arg_ll(op->argv[i + 1], op->argl[i + 1], v) == -1)
		return -1;
	return 0;
}

/* CF.RESERVE f capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e] */
void
cmd_cf_reserve(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 cap, iters = 0, bsize = CF_DEFAULT_BUCKETSIZE;
	long long	 exp = s->core->cfg->new_filter_growth;
	int		 found, have_iters;

	/* key, capacity and pairs of words */
	if (op->argc % 2 == 0) {
		result_error(r, "ERR", "wrong number of arguments for '%s' "
		    "command", op->cmd->lname);
		return;
	}
	if (command_arg_ll(op->argv[2], op->argl[2], &cap) == -1) {
		result_bare(r, "Bad capacity");
		return;
	}
	if (keyword_value(op, "MAXITERATIONS", &have_iters, &iters) == -1) {
		result_bare(r, "Couldn't parse MAXITERATIONS");
		return;
	}
	if (have_iters && (iters <= 0 || iters > CF_MAX_ITERATIONS)) {
		result_bare(r, "MAXITERATIONS: value must be an integer "
		    "between 1 and 65535, inclusive.");
		return;
	}
	if (keyword_value(op, "BUCKETSIZE", &found, &bsize) == -1) {
		result_bare(r, "Couldn't parse BUCKETSIZE");
		return;
	}
	if (found && (bsize <= 0 || bsize > CF_MAX_BUCKET_SIZE)) {
		result_bare(r, "BUCKETSIZE: value must be an integer between 1 "
		    "and 255, inclusive.");
		return;
	}
	if (keyword_value(op, "EXPANSION", &found, &exp) == -1) {
		result_bare(r, "Couldn't parse EXPANSION");
		return;
	}
	if (found) {
		if (exp < 0 || exp > CF_MAX_EXPANSION) {
			result_bare(r, "EXPANSION: value must be an integer "
			    "between 0 and 32768, inclusive.");
			return;
		}
		/* RedisBloom keeps (and CF.INFO shows) a power of two */
		exp = pow2_up(exp);
		if (exp > MAX_EXPANSION) {
			result_error(r, "ERR", "expansion over %d is not "
			    "supported", MAX_EXPANSION);
			return;
		}
	}
	if (bsize * 2 > cap) {
		result_bare(r, "Capacity must be at least (BucketSize * 2)");
		return;
	}
	switch (cf_lookup(s, op, &f)) {
	case BF_FOUND:
		result_error(r, "ERR", "item exists");
		return;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		break;
	}
	if (cf_create(s, op, cap, (unsigned)exp, have_iters ? (unsigned)iters :
	    0, r) != NULL)
		result_status(r, "OK");
}

/* CF.ADD f item (another copy even if held) / CF.ADDNX f item (only if
 * absent): 1 (#t) stored, 0 (#f) held already (CF.ADDNX). */
void
cmd_cf_add(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit;

	f = cf_target(s, op, 0, (long long)s->core->cfg->new_filter_capacity,
	    r);
	if (f == NULL || max_expansions(f, r))
		return;
	if (is_nx(op))
		hit = command_dedup_key(s, f, op->argv[2], op->argl[2], 0, r);
	else
		hit = command_add_copy(s, f, op->argv[2], op->argl[2], r);
	if (hit == FILTER_FULL) {
		if (no_room(f))
			result_bare(r, CF_FULL_TEXT);
		return;
	}
	result_bool(r, !hit);
}

/*
 * Adds argv[first..] to f: an array of 1 stored, 0 held already (NX), -1
 * no room (booleans in RESP3 for CF.INSERT, -1 then false). An item that
 * fails for another reason (the journal, max_memory) ends the array with
 * its error; the items before it keep their answers.
 */
static void
insert_items(struct session *s, struct op *op, struct filter *f, int first,
    int nx, struct result *r)
{
	size_t		 n = (size_t)(op->argc - first), i;
	signed char	*a;
	struct buf	*b;
	int		 hit, failed = 0;

	if ((a = malloc(n)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		const char	*key = op->argv[first + i];
		size_t		 len = op->argl[first + i];

		hit = nx ? command_dedup_key(s, f, key, len, 0, r) :
		    command_add_copy(s, f, key, len, r);
		if (hit == FILTER_FULL) {
			if (!no_room(f)) {
				failed = 1;	/* r holds the error */
				break;
			}
			a[i] = -1;
		} else
			a[i] = (signed char)!hit;
	}
	b = result_reset();
	if (resp_add_array(b, (long long)i + failed) == -1)
		goto oom;
	for (size_t j = 0; j < i; j++) {
		int rc;

		if (nx || (a[j] < 0 && !op->resp3))
			rc = resp_add_int(b, a[j]);
		else
			rc = resp_add_bool(b, a[j] > 0);
		if (rc == -1)
			goto oom;
	}
	if (failed && command_add_error(b, r) == -1)
		goto oom;
	free(a);
	r->boolean = 0;
	result_scratch(r, RESULT_ARRAY);
	return;
oom:
	free(a);
	r->boolean = 0;
	result_error(r, "ERR", "out of memory");
}

/* CF.INSERT / CF.INSERTNX f [CAPACITY c] [NOCREATE] ITEMS a b ... */
void
cmd_cf_insert(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 cap = (long long)s->core->cfg->new_filter_capacity;
	int		 pos = 2, items = -1, nocreate = 0;

	/* options told apart by their first letter, as RedisBloom does */
	while (pos < op->argc && items < 0) {
		const char *w = op->argv[pos];

		switch (op->argl[pos] > 0 ? tolower((unsigned char)w[0]) : 0) {
		case 'c':
			if (++pos == op->argc)
				goto arity;
			if (command_arg_ll(op->argv[pos], op->argl[pos],
			    &cap) == -1) {
				result_bare(r, "Bad capacity");
				return;
			}
			pos++;
			if (2 * CF_DEFAULT_BUCKETSIZE > cap) {
				result_bare(r, "Capacity must be at least "
				    "(BucketSize * 2)");
				return;
			}
			break;
		case 'i':
			items = ++pos;
			break;
		case 'n':
			nocreate = 1;
			pos++;
			break;
		default:
			result_bare(r, "Unknown argument received");
			return;
		}
	}
	if (items < 0 || items == op->argc)
		goto arity;
	if ((f = cf_target(s, op, nocreate, cap, r)) == NULL ||
	    max_expansions(f, r))
		return;
	/* its items would be routed by the filter's name, one node's, and
	 * their fingerprints belong to their own slots' nodes (CF.ADD is
	 * routed by its item) */
	if (f->slot_major && s->core->cluster != NULL) {
		result_error(r, "ERR", "filter %s is partitioned by slot in "
		    "cluster mode: add its items with CF.ADD or CF.ADDNX, "
		    "which are routed by item", f->name);
		return;
	}
	insert_items(s, op, f, items, is_nx(op), r);
	return;
arity:
	result_error(r, "ERR", "wrong number of arguments for '%s' command",
	    op->cmd->lname);
}

/* CF.EXISTS f item: 1 if held; a missing key, or one of another type,
 * holds nothing. */
void
cmd_cf_exists(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit = 0;

	if (cf_lookup(s, op, &f) == BF_FOUND)
		hit = command_dedup_key(s, f, op->argv[2], op->argl[2], 1, r);
	result_bool(r, hit);
}

/* CF.MEXISTS f item...: CF.EXISTS of each, in one array. */
void
cmd_cf_mexists(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	command_mexists(s, op, cf_lookup(s, op, &f) == BF_FOUND ? f : NULL, r);
}

/* CF.COUNT f item: copies of the item's fingerprint (an integer in RESP3
 * too); 0 for a missing key or one of another type. */
void
cmd_cf_count(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 n = 0;

	if (cf_lookup(s, op, &f) == BF_FOUND)
		n = (long long)filter_copies(f, filter_hash(f, op->argv[2],
		    op->argl[2]));
	result_int(r, n);
}

/* CF.DEL f item: 1 (#t) a copy was deleted, 0 (#f) none held. */
void
cmd_cf_del(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 rc;

	/* a key of another type is "Not found" too, as in RedisBloom */
	if (cf_lookup(s, op, &f) != BF_FOUND) {
		result_bare(r, "Not found");
		return;
	}
	rc = command_forget_key(s, f, op->argv[2], op->argl[2], r);
	if (rc >= 0)
		result_bool(r, rc);
}

/*
 * CF.COMPACT f: +OK, changing nothing. RedisBloom moves fingerprints of
 * its newer sub-filters into older ones and frees the emptied ones; seend
 * keeps each key in the slice that took it (a slice's fingerprints are
 * its own table's) and its slices whatever CF.DEL takes out of them.
 * Any other name is RedisBloom's "Cuckoo filter was not found", a Bloom
 * filter's too.
 */
void
cmd_cf_compact(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	if (cf_lookup(s, op, &f) != BF_FOUND) {
		result_bare(r, "Cuckoo filter was not found");
		return;
	}
	result_status(r, "OK");
}

/* CF.INFO f: eight pairs (a map in RESP3), in RedisBloom's order. */
void
cmd_cf_info(struct session *s, struct op *op, struct result *r)
{
	static const char *names[] = { "Size", "Number of buckets",
	    "Number of filters", "Number of items inserted",
	    "Number of items deleted", "Bucket size", "Expansion rate",
	    "Max iterations" };
	struct filter	*f;
	struct buf	*b;
	long long	 v[8];

	switch (cf_lookup(s, op, &f)) {
	case BF_FOUND:
		break;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		result_error(r, "ERR", "not found");
		return;
	}
	v[0] = (long long)filter_bytes(f);
	/* RedisBloom's is its first sub-filter's (it never changes) */
	v[1] = f->nslices > 0 && f->slices[0]->cuckoo.table != NULL ?
	    (long long)f->slices[0]->cuckoo.nbuckets :
	    (long long)filter_buckets(f);
	v[2] = (long long)f->nslices;
	v[3] = (long long)filter_count(f);
	v[4] = (long long)f->forgotten;
	v[5] = (long long)f->bucket_size;
	v[6] = (long long)f->growth;
	/* MAXITERATIONS as CF.RESERVE gave it, else the walk's own bound */
	v[7] = (long long)(f->max_kicks ? f->max_kicks : CUCKOO_MAX_KICKS);
	b = result_reset();
	if (resp_add_map(b, 8) == -1)
		goto oom;
	for (int i = 0; i < 8; i++)
		if (resp_add_status(b, names[i]) == -1 ||
		    resp_add_int(b, v[i]) == -1)
			goto oom;
	result_scratch(r, RESULT_ARRAY);
	return;
oom:
	result_error(r, "ERR", "out of memory");
}
