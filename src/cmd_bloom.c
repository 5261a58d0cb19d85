/*
 * cmd_bloom.c - RedisBloom's BF.* commands, with its replies and errors.
 *
 * The model is RedisBloom 2.4 (rebloom.c): the same argument parsing, the
 * same error texts (some with "ERR", some bare), the same order of checks,
 * and per-item answers in BF.MADD and BF.INSERT: an item a fixed filter
 * cannot take is an error in its place in the array, the items before it
 * keep their answers (they were recorded), and the items after it are not
 * looked at. On a RESP3 connection the answers are booleans and BF.INFO is
 * a map, as RedisBloom 2.6 and later give them. seend(8) lists where seend
 * differs on purpose (Size, the rate bound, defaults from the config).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "core.h"
#include "snapshot.h"

/* The largest growth factor a snapshot keeps (snapshot.c refuses more),
 * so the largest EXPANSION a filter created here can have. */
#define MAX_EXPANSION	1024

#define FULL_TEXT	"non scaling filter is full"

/* ------------------------------------------------------------------ */
/* Arguments as Redis reads them for a module                          */
/* ------------------------------------------------------------------ */

/*
 * A number as RedisModule_StringToDouble reads one (Redis's string2d):
 * strtod over the whole text, no leading space, no NaN, no overflow or
 * underflow to zero (inf itself is a number). 0, or -1.
 */
static int
bf_double(const char *s, size_t len, double *v)
{
	char	 tmp[128], *p = tmp, *end;
	int	 rc = -1;

	if (len == 0 || isspace((unsigned char)s[0]))
		return -1;
	if (len >= sizeof(tmp) && (p = malloc(len + 1)) == NULL)
		return -1;
	memcpy(p, s, len);
	p[len] = '\0';
	errno = 0;
	*v = strtod(p, &end);
	if ((size_t)(end - p) == len && !isnan(*v) && !(errno == ERANGE &&
	    (*v == HUGE_VAL || *v == -HUGE_VAL || fpclassify(*v) == FP_ZERO)))
		rc = 0;
	if (p != tmp)
		free(p);
	return rc;
}

/* The first argument after the command equal to word (any case), as
 * RedisBloom's RMUtil_ArgIndex finds it - the key included - or -1. */
static int
arg_index(const struct op *op, const char *word)
{
	size_t n = strlen(word);

	for (int i = 1; i < op->argc; i++)
		if (name_is(op->argv[i], op->argl[i], word, n))
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Filters as RedisBloom's keys                                        */
/* ------------------------------------------------------------------ */

/*
 * The Bloom filter argv[1] names: BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT,
 * BF.INFO and BF.CARD answer WRONGTYPE on a cuckoo filter, as RedisBloom.
 */
enum bf_status
command_bf_lookup(struct session *s, struct op *op, struct filter **fp)
{
	return command_typed_lookup(s, op, FILTER_TYPE_BLOOM, fp);
}

/* A runtime filter from request parameters; NULL with r set. */
static struct filter *
create_filter(struct session *s, struct op *op, long long cap, double rate,
    unsigned growth, struct result *r)
{
	return command_create_filter(s, op->argv[1], op->argl[1],
	    (uint64_t)cap, rate, growth, FILTER_TYPE_BLOOM, 0, r);
}

/*
 * The filter BF.ADD / BF.MADD add to: the one named, or a new one with the
 * new_filter_* settings. NULL with r set.
 */
static struct filter *
bf_target(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	switch (command_bf_lookup(s, op, &f)) {
	case BF_FOUND:
		return f;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return NULL;
	case BF_MISSING:
		break;
	}
	return command_named_filter(s, op, 1, r);
}

/*
 * r holds command_dedup_key's error for an item f could not take: a fixed
 * filter at its capacity answers in RedisBloom's words; anything else (the
 * journal, max_memory) keeps seend's.
 */
static void
refusal(const struct filter *f, struct result *r)
{
	if (f->full && f->growth == 0)
		result_error(r, "ERR", FULL_TEXT);
}

/*
 * Adds argv[first..] to f, the answers an array (RESULT_INTS, booleans in
 * RESP3). An item f cannot take ends the array with its error; the items
 * before it stay recorded, the items after it are not looked at.
 */
static void
add_items(struct session *s, struct op *op, struct filter *f, int first,
    struct result *r)
{
	size_t		 n = (size_t)(op->argc - first), i;
	uint8_t		*a, *done;
	struct buf	*b;
	int		 hit;

	if ((a = result_answers(r, n)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	r->boolean = 1;
	for (i = 0; i < n; i++) {
		hit = command_dedup_key(s, f, op->argv[first + i],
		    op->argl[first + i], 0, r);
		if (hit == FILTER_FULL)
			break;
		a[i] = (uint8_t)!hit;
	}
	if (i == n)
		return;
	/* r holds the error; the answers so far leave result_buf for the
	 * array built there in RESP3 (booleans), downgraded for RESP2 */
	refusal(f, r);
	if ((done = malloc(i ? i : 1)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	memcpy(done, a, i);
	b = result_reset();
	if (resp_add_array(b, (long long)i + 1) == -1)
		goto oom;
	for (size_t j = 0; j < i; j++)
		if (resp_add_bool(b, done[j]) == -1)
			goto oom;
	if (command_add_error(b, r) == -1)
		goto oom;
	free(done);
	r->boolean = 0;
	result_scratch(r, RESULT_ARRAY);
	return;
oom:
	free(done);
	r->boolean = 0;
	result_error(r, "ERR", "out of memory");
}

/* ------------------------------------------------------------------ */
/* The commands                                                        */
/* ------------------------------------------------------------------ */

/* BF.RESERVE f error_rate capacity [EXPANSION e] [NONSCALING] */
void
cmd_bf_reserve(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	double		 rate;
	long long	 cap, exp = s->core->cfg->new_filter_growth;
	int		 nonscaling, ex;

	if (bf_double(op->argv[2], op->argl[2], &rate) == -1) {
		result_error(r, "ERR", "bad error rate");
		return;
	}
	if (!(rate > 0 && rate < 1)) {
		result_error(r, "ERR", "(0 < error rate range < 1) ");
		return;
	}
	if (command_arg_ll(op->argv[3], op->argl[3], &cap) == -1) {
		result_error(r, "ERR", "bad capacity");
		return;
	}
	if (cap <= 0) {
		result_error(r, "ERR", "(capacity should be larger than 0)");
		return;
	}
	/* as RedisBloom looks for them: anywhere, other words ignored */
	nonscaling = arg_index(op, "NONSCALING") != -1;
	ex = arg_index(op, "EXPANSION");
	if (ex + 1 == op->argc) {
		result_error(r, "ERR", "no expansion");
		return;
	}
	if (ex != -1) {
		if (nonscaling) {
			result_bare(r, "Nonscaling filters cannot expand");
			return;
		}
		if (command_arg_ll(op->argv[ex + 1], op->argl[ex + 1], &exp) == -1) {
			result_error(r, "ERR", "bad expansion");
			return;
		}
		/* RedisBloom 2.6's check (2.4 made a filter that broke) */
		if (exp < 1) {
			result_error(r, "ERR", "expansion should be greater or "
			    "equal to 1");
			return;
		}
		if (exp > MAX_EXPANSION) {
			result_error(r, "ERR", "expansion over %d is not "
			    "supported", MAX_EXPANSION);
			return;
		}
	}
	switch (command_bf_lookup(s, op, &f)) {
	case BF_FOUND:
		result_error(r, "ERR", "item exists");
		return;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		break;
	}
	if (create_filter(s, op, cap, rate, nonscaling ? 0 : (unsigned)exp,
	    r) != NULL)
		result_status(r, "OK");
}

/* BF.ADD f item: 1 new (it is recorded now), 0 seen. */
void
cmd_bf_add(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit;

	if ((f = bf_target(s, op, r)) == NULL)
		return;
	hit = command_dedup_key(s, f, op->argv[2], op->argl[2], 0, r);
	if (hit == FILTER_FULL)
		refusal(f, r);
	else
		result_bool(r, !hit);
}

/* BF.CARD f: the keys held; 0 for a missing filter (SCARD's answer),
 * WRONGTYPE for a cuckoo one, as RedisBloom. */
void
cmd_bf_card(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	switch (command_bf_lookup(s, op, &f)) {
	case BF_FOUND:
		result_int(r, (long long)filter_count(f));
		return;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		result_int(r, 0);
		return;
	}
}

/* BF.MADD f item...: BF.ADD of each, in one array. */
void
cmd_bf_madd(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	if ((f = bf_target(s, op, r)) != NULL)
		add_items(s, op, f, 2, r);
}

/* BF.EXISTS f item: 1 if seen; a missing filter holds nothing. */
void
cmd_bf_exists(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit = 0;

	/* RedisBloom answers 0 for a key of another type too */
	if (command_bf_lookup(s, op, &f) == BF_FOUND)
		hit = command_dedup_key(s, f, op->argv[2], op->argl[2], 1, r);
	result_bool(r, hit);
}

/* BF.MEXISTS f item...: BF.EXISTS of each, in one array. */
void
cmd_bf_mexists(struct session *s, struct op *op, struct result *r)
{
	struct filter *f;

	command_mexists(s, op, command_bf_lookup(s, op, &f) == BF_FOUND ? f :
	    NULL, r);
}

/*
 * BF.INSERT f [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
 * ITEMS a b ...
 *
 * Options are told apart as RedisBloom tells them: by their first letter
 * (and ERROR from EXPANSION by the second, NOCREATE from NONSCALING by the
 * third), so "CAP", "E", "EXP", "NOC" and "I" work as they do there.
 */
void
cmd_bf_insert(struct session *s, struct op *op, struct result *r)
{
	const struct config	*cfg = s->core->cfg;
	struct filter		*f;
	double			 rate = cfg->new_filter_error_rate;
	long long		 cap = (long long)cfg->new_filter_capacity;
	long long		 exp = cfg->new_filter_growth;
	int			 pos = 2, items = -1, nocreate = 0;
	int			 nonscaling = 0;

	while (pos < op->argc && items < 0) {
		const char	*w = op->argv[pos];
		size_t		 l = op->argl[pos];
		const char	*v;
		size_t		 vl;

		switch (l > 0 ? tolower((unsigned char)w[0]) : 0) {
		case 'i':
			items = ++pos;
			break;
		case 'e':
		case 'c':
			if (++pos == op->argc)
				goto arity;
			v = op->argv[pos];
			vl = op->argl[pos];
			pos++;
			if (tolower((unsigned char)w[0]) == 'c') {
				if (command_arg_ll(v, vl, &cap) == -1) {
					result_bare(r, "Bad capacity");
					return;
				}
			} else if (l > 1 && tolower((unsigned char)w[1]) ==
			    'r') {
				if (bf_double(v, vl, &rate) == -1) {
					result_bare(r, "Bad error rate");
					return;
				}
			} else if (command_arg_ll(v, vl, &exp) == -1) {
				result_bare(r, "Bad expansion");
				return;
			}
			break;
		case 'n':
			if (l > 2 && tolower((unsigned char)w[2]) == 'c')
				nocreate = 1;
			else
				nonscaling = 1;
			pos++;
			break;
		default:
			result_bare(r, "Unknown argument received");
			return;
		}
	}
	if (items < 0 || items == op->argc)
		goto arity;
	if (!(rate > 0 && rate < 1) || cap < 1 || exp < 1) {
		result_bare(r, "Bad argument received");
		return;
	}
	switch (command_bf_lookup(s, op, &f)) {
	case BF_FOUND:
		break;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		if (nocreate) {
			result_error(r, "ERR", "not found");
			return;
		}
		if (!cfg->create_filters) {
			(void)command_named_filter(s, op, 1, r);
			return;
		}
		if (!nonscaling && exp > MAX_EXPANSION) {
			result_error(r, "ERR", "expansion over %d is not "
			    "supported", MAX_EXPANSION);
			return;
		}
		if ((f = create_filter(s, op, cap, rate, nonscaling ? 0 :
		    (unsigned)exp, r)) == NULL)
			return;
		break;
	}
	/* its URLs would be routed by the filter's name, one node's, and
	 * their bits belong to their own slots' nodes (BF.MADD is routed by
	 * them) */
	if (f->slot_major && s->core->cluster != NULL) {
		result_error(r, "ERR", "filter %s is partitioned by slot in "
		    "cluster mode: add its URLs with BF.MADD, BF.ADD or SETNX, "
		    "which are routed by URL", f->name);
		return;
	}
	add_items(s, op, f, items, r);
	return;
arity:
	result_error(r, "ERR", "wrong number of arguments for '%s' command",
	    op->cmd->lname);
}

/*
 * What BF.INFO shows of f, as RedisBloom counts its sub-filters: it adds
 * the next one with the key that needs it, seend as soon as the newest is
 * full, so an empty newest slice of a growing filter is not counted yet.
 * A filter with an expire window shows its declared capacity (per window).
 */
struct bf_shape {
	long long	 capacity, bytes, filters;
};

static void
bf_shape(const struct filter *f, struct bf_shape *s)
{
	size_t n = f->nslices;

	if (f->expire_ms == 0 && f->growth > 0 && n > 1 &&
	    f->slices[n - 1] == f->head && f->head->bloom.count == 0)
		n--;
	s->capacity = s->bytes = 0;
	for (size_t i = 0; i < n; i++) {
		s->capacity += (long long)f->slices[i]->capacity;
		s->bytes += (long long)bloom_bytes(&f->slices[i]->bloom);
	}
	/* MERGE's slices count as RedisBloom's sub-filters too */
	for (size_t i = 0; i < f->nmerged; i++) {
		s->capacity += (long long)f->merged[i]->capacity;
		s->bytes += (long long)bloom_bytes(&f->merged[i]->bloom);
	}
	n += f->nmerged;
	s->filters = (long long)n;
	if (f->expire_ms > 0 || n == 0)
		s->capacity = (long long)f->capacity;
}

/* BF.INFO f [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]: an array of pairs (a
 * map in RESP3); one field: an array of its value (a map of one pair). */
void
cmd_bf_info(struct session *s, struct op *op, struct result *r)
{
	static const char *names[] = { "Capacity", "Size", "Number of filters",
	    "Number of items inserted", "Expansion rate" };
	static const char *words[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS",
	    "EXPANSION" };
	struct filter	*f;
	struct bf_shape	 sh;
	struct buf	*b;
	long long	 v[5];
	int		 one = -1, from = 0, to = 5;

	switch (command_bf_lookup(s, op, &f)) {
	case BF_FOUND:
		break;
	case BF_WRONGTYPE:
		result_bare(r, WRONGTYPE_TEXT);
		return;
	case BF_MISSING:
		result_error(r, "ERR", "not found");
		return;
	}
	if (op->argc == 3) {
		for (int i = 0; i < 5 && one < 0; i++)
			if (name_is(op->argv[2], op->argl[2], words[i],
			    strlen(words[i])))
				one = i;
		if (one < 0) {
			result_bare(r, "Invalid information value");
			return;
		}
		from = one;
		to = one + 1;
	}
	bf_shape(f, &sh);
	v[0] = sh.capacity;
	v[1] = sh.bytes;
	v[2] = sh.filters;
	v[3] = (long long)filter_count(f);
	v[4] = (long long)f->growth;
	b = result_reset();
	/* RESP2 gets the array RedisBloom 2.4 sends: of pairs for all, of
	 * the value alone for one field */
	if (one >= 0 && !op->resp3)
		resp_add_array(b, 1);
	else
		resp_add_map(b, to - from);
	for (int i = from; i < to; i++) {
		if (one < 0 || op->resp3)
			resp_add_status(b, names[i]);
		if (i == 4 && f->growth == 0)
			resp_add_null3(b);
		else
			resp_add_int(b, v[i]);
	}
	result_scratch(r, RESULT_ARRAY);
}
