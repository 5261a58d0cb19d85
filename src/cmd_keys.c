/*
 * cmd_keys.c - URL keys as Redis strings (SETNX, SET, GET, MGET, EXISTS)
 * and members of a filter as a Redis set (SADD, SISMEMBER, SCARD...).
 */
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

/*
 * SEEN (check 0) or CHECK of the URL key argv[i], routed as SEEN routes
 * it: the answer, or FILTER_FULL with the error in r (no filter takes it,
 * or it cannot be recorded).
 */
static int
url_key(struct session *s, struct op *op, int i, int check, struct result *r)
{
	struct filter *f = registry_route(s->core->reg, op->argv[i], op->argl[i]);

	if (f == NULL) {
		command_no_route(s, r);
		return FILTER_FULL;
	}
	return command_dedup_key(s, f, op->argv[i], op->argl[i], check, r);
}

/* SETNX <url> <v>: :1 new, :0 seen. */
void
cmd_setnx(struct session *s, struct op *op, struct result *r)
{
	int hit = url_key(s, op, 1, 0, r);

	if (hit != FILTER_FULL)
		result_int(r, !hit);
}

/* SET's options, as Redis 7 reads them (t_string.c): NX and XX exclude
 * each other, KEEPTTL any expiry, one of EX/PX/EXAT/PXAT (the last one
 * given) takes the next argument. */
#define SET_NX		0x01
#define SET_XX		0x02
#define SET_GET		0x04
#define SET_KEEPTTL	0x08
#define SET_EXPIRY	0x10
#define SET_SECONDS	0x20	/* EX, EXAT: the number is in seconds */
#define SET_RELATIVE	0x40	/* EX, PX: from now */

/* Reads SET's options from argv[3]; 0, or -1 with Redis's error in r. */
static int
set_options(struct op *op, int *flags, const char **ttl, size_t *ttll,
    struct result *r)
{
	static const struct {
		const char	*word;
		int		 flag;
	} expiries[] = {
		{ "EX", SET_SECONDS | SET_RELATIVE }, { "PX", SET_RELATIVE },
		{ "EXAT", SET_SECONDS }, { "PXAT", 0 },
	};

	*flags = 0;
	for (int i = 3; i < op->argc; i++) {
		const char	*w = op->argv[i];
		size_t		 l = op->argl[i], e;
		int		 next = i + 1 < op->argc;

		if (name_is(w, l, "NX", 2) && !(*flags & SET_XX)) {
			*flags |= SET_NX;
			continue;
		}
		if (name_is(w, l, "XX", 2) && !(*flags & SET_NX)) {
			*flags |= SET_XX;
			continue;
		}
		if (name_is(w, l, "GET", 3)) {
			*flags |= SET_GET;
			continue;
		}
		if (name_is(w, l, "KEEPTTL", 7) && !(*flags & SET_EXPIRY)) {
			*flags |= SET_KEEPTTL;
			continue;
		}
		for (e = 0; e < sizeof(expiries) / sizeof(expiries[0]); e++)
			if (name_is(w, l, expiries[e].word,
			    strlen(expiries[e].word)))
				break;
		if (e == sizeof(expiries) / sizeof(expiries[0]) || !next ||
		    (*flags & SET_KEEPTTL) || ((*flags & SET_EXPIRY) &&
		    (*flags & (SET_SECONDS | SET_RELATIVE)) != expiries[e].flag)) {
			result_error(r, "ERR", "syntax error");
			return -1;
		}
		*flags = (*flags & ~(SET_SECONDS | SET_RELATIVE)) | SET_EXPIRY |
		    expiries[e].flag;
		*ttl = op->argv[i + 1];
		*ttll = op->argl[i + 1];
		i++;
	}
	return 0;
}

/* Checks a SET expiry as Redis does, though seend does not apply it (the
 * filter's expire window governs every key): 0, or -1 with r set. */
static int
set_check_ttl(int flags, const char *ttl, size_t ttll, struct result *r)
{
	long long	 v;
	struct timespec	 ts;

	if (!(flags & SET_EXPIRY))
		return 0;
	if (command_arg_ll(ttl, ttll, &v) == -1) {
		result_error(r, "ERR", "value is not an integer or out of range");
		return -1;
	}
	if (v <= 0 || ((flags & SET_SECONDS) && v > LLONG_MAX / 1000))
		goto invalid;
	if (flags & SET_SECONDS)
		v *= 1000;
	if (flags & SET_RELATIVE) {
		clock_gettime(CLOCK_REALTIME, &ts);
		if (v > LLONG_MAX - (long long)ts.tv_sec * 1000)
			goto invalid;
	}
	return 0;
invalid:
	result_error(r, "ERR", "invalid expire time in 'set' command");
	return -1;
}

/*
 * SET <url> <v> [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]: a key is
 * present once recorded. Plain SET records it (+OK); NX records it only if
 * absent (+OK, or null if present); XX records nothing and answers +OK
 * only if present. GET answers the old value instead: "1" if the key was
 * present, else null.
 *
 * Values are not stored, so without NX only the value "1" is taken: any
 * other is refused and nothing recorded, rather than kept as a "1" that a
 * later GET would give back in its place (colly keeps its cookies with SET
 * and GET: they must fail loudly, not vanish). With NX, a test-and-set,
 * any value goes (Heritrix: SET <uri> <uri> NX EX <ttl>).
 */
void
cmd_set(struct session *s, struct op *op, struct result *r)
{
	const char	*ttl = NULL;
	size_t		 ttll = 0;
	int		 flags, hit, skip;

	if (set_options(op, &flags, &ttl, &ttll, r) == -1 ||
	    set_check_ttl(flags, ttl, ttll, r) == -1)
		return;
	if (!(flags & SET_NX) && (op->argl[2] != 1 || op->argv[2][0] != '1')) {
		result_error(r, "ERR", "seend stores keys, not values: SET <key> 1 "
		    "records a key");
		return;
	}
	/* XX never records: a key is only ever added */
	if ((hit = url_key(s, op, 1, (flags & SET_XX) != 0, r)) == FILTER_FULL)
		return;
	skip = ((flags & SET_NX) && hit) || ((flags & SET_XX) && !hit);
	if (flags & SET_GET) {
		if (hit)
			result_bulk(r, "1", 1);
		else
			result_null(r);
	} else if (skip)
		result_null(r);
	else
		result_status(r, "OK");
}

/* GET <url>: "1" if the key was recorded, else null. */
void
cmd_get(struct session *s, struct op *op, struct result *r)
{
	int hit = url_key(s, op, 1, 1, r);

	if (hit == FILTER_FULL)
		return;
	if (hit)
		result_bulk(r, "1", 1);
	else
		result_null(r);
}

/* MGET <url> ...: GET of each, in one array. */
void
cmd_mget(struct session *s, struct op *op, struct result *r)
{
	struct buf	*b = result_reset();
	int		 hit;

	resp_add_array(b, op->argc - 1);
	for (int i = 1; i < op->argc; i++) {
		if ((hit = url_key(s, op, i, 1, r)) == FILTER_FULL)
			return;
		if ((hit ? resp_add_bulk(b, "1", 1) : resp_add_null3(b)) == -1) {
			result_error(r, "ERR", "out of memory");
			return;
		}
	}
	result_scratch(r, RESULT_ARRAY);
}

/* EXISTS <url> ...: how many were seen (a repeated key counts twice). */
void
cmd_exists(struct session *s, struct op *op, struct result *r)
{
	long long	 n = 0;
	int		 hit;

	for (int i = 1; i < op->argc; i++) {
		if ((hit = url_key(s, op, i, 1, r)) == FILTER_FULL)
			return;
		n += hit;
	}
	result_int(r, n);
}

/* SADD f m...: how many members were new. */
void
cmd_sadd(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f;
	long long	 n = 0;
	int		 hit;

	if ((f = command_named_filter(s, op, 1, r)) == NULL)
		return;
	for (int i = 2; i < op->argc; i++) {
		hit = command_dedup_key(s, f, op->argv[i], op->argl[i], 0, r);
		if (hit == FILTER_FULL)
			return;
		n += !hit;
	}
	result_int(r, n);
}

/* SISMEMBER f m (:0/:1), SMISMEMBER f m... (array); a missing filter
 * holds nothing. */
void
cmd_sismember(struct session *s, struct op *op, struct result *r)
{
	struct filter	*f = command_named_filter(s, op, 0, r);
	int		 multi = op->cmd->max_args < 0;
	uint8_t		*a = NULL;
	int		 hit = 0;

	if (multi && (a = result_answers(r, (size_t)op->argc - 2)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		hit = f ? command_dedup_key(s, f, op->argv[i], op->argl[i], 1,
		    r) : 0;
		if (a != NULL)
			a[i - 2] = (uint8_t)hit;
	}
	if (!multi)
		result_int(r, hit);
}

void
cmd_scard(struct session *s, struct op *op, struct result *r)
{
	struct filter *f = command_named_filter(s, op, 0, r);

	result_int(r, f ? (long long)filter_count(f) : 0);
}
