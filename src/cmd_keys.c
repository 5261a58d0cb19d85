/*
 * cmd_keys.c - URL keys as Redis strings (SETNX, SET, GET, MGET, EXISTS)
 * and members of a filter as a Redis set (SADD, SISMEMBER, SCARD...).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "config.h"
#include "filter.h"
#include "handler.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "server.h"
#include "snapshot.h"

/* SETNX <url> <v>: :1 new, :0 seen. */
void
cmd_setnx(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit;

	if ((f = registry_route(c->srv->reg, op->argv[1], op->argl[1])) ==
	    NULL) {
		command_no_route(c, r);
		return;
	}
	if ((hit = command_dedup_key(c, f, op->argv[1], op->argl[1], 0, r)) !=
	    FILTER_FULL)
		result_int(r, !hit);
}

/* SET <url> <v> NX: +OK new, $-1 seen; any other form is refused. */
void
cmd_set(struct conn *c, struct op *op, struct result *r)
{
	int nx = 0;

	for (int i = 3; i < op->argc; i++) {
		if (!name_is(op->argv[i], op->argl[i], "NX", 2)) {
			nx = 0;
			break;
		}
		nx = 1;
	}
	if (!nx) {
		result_error(r, "ERR", "syntax error");
		return;
	}
	cmd_setnx(c, op, r);
	if (r->kind == RESULT_INT) {
		if (r->n)
			result_status(r, "OK");
		else
			r->kind = RESULT_NULL;
	}
}

/* EXISTS <url> ...: how many were seen (a repeated key counts twice). */
void
cmd_exists(struct conn *c, struct op *op, struct result *r)
{
	long long	 n = 0;

	for (int i = 1; i < op->argc; i++) {
		struct filter *f = registry_route(c->srv->reg, op->argv[i],
		    op->argl[i]);

		if (f == NULL) {
			command_no_route(c, r);
			return;
		}
		n += command_dedup_key(c, f, op->argv[i], op->argl[i], 1, r);
	}
	result_int(r, n);
}

/* SADD f m... (:new), BF.ADD f x (:1 new), BF.MADD f x... (array). */
void
cmd_sadd(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f;
	uint8_t		*a = NULL;
	long long	 n = 0;
	int		 hit, madd = strcmp(op->cmd->lname, "bf.madd") == 0;

	if ((f = command_named_filter(c, op, 1, r)) == NULL)
		return;
	if (madd && (a = result_answers(r, (size_t)op->argc - 2)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		hit = command_dedup_key(c, f, op->argv[i], op->argl[i], 0, r);
		if (hit == FILTER_FULL)
			return;
		n += !hit;
		if (a != NULL)
			a[i - 2] = (uint8_t)!hit;
	}
	if (!madd)
		result_int(r, n);
}

/* SISMEMBER/BF.EXISTS f m (:0/:1), SMISMEMBER/BF.MEXISTS f m... (array);
 * a missing filter holds nothing. */
void
cmd_sismember(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f = command_named_filter(c, op, 0, r);
	const char	*name = op->cmd->lname;
	int		 multi = strcmp(name, "smismember") == 0 ||
		    strcmp(name, "bf.mexists") == 0;
	uint8_t		*a = NULL;
	int		 hit = 0;

	if (multi && (a = result_answers(r, (size_t)op->argc - 2)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		hit = f ? command_dedup_key(c, f, op->argv[i], op->argl[i], 1, r) : 0;
		if (a != NULL)
			a[i - 2] = (uint8_t)hit;
	}
	if (!multi)
		result_int(r, hit);
}

void
cmd_scard(struct conn *c, struct op *op, struct result *r)
{
	struct filter *f = command_named_filter(c, op, 0, r);

	result_int(r, f ? (long long)filter_count(f) : 0);
}
