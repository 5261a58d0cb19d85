/*
 * cmd_bloom.c - RedisBloom's BF.* commands, with its replies and errors.
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

/* The largest growth factor seend plans (config.c's bound). */
#define MAX_EXPANSION	16

/* A runtime filter from request parameters; NULL with r set. */
static struct filter *
create_filter(struct conn *c, struct op *op, long long cap, double rate,
    long long expansion, struct result *r)
{
	struct filter	*f;
	char		 err[400];

	if (expansion > MAX_EXPANSION) {
		result_error(r, "ERR", "expansion over %d is not supported",
		    MAX_EXPANSION);
		return NULL;
	}
	if (rate < 1e-9 || rate > 0.5) {
		result_error(r, "ERR", "error rate must be 1e-9 to 0.5");
		return NULL;
	}
	f = registry_create(c->srv->reg, c->srv->cfg, op->argv[1],
	    op->argl[1], (uint64_t)cap, rate, (unsigned)expansion, err,
	    sizeof(err));
	if (f == NULL)
		result_error(r, "ERR", "%s", err);
	else
		log_info("filter %s created by client %llu (%s)", f->name,
		    (unsigned long long)c->id, c->peer);
	return f;
}

/* BF.RESERVE f error_rate capacity [EXPANSION e] [NONSCALING] */
void
cmd_bf_reserve(struct conn *c, struct op *op, struct result *r)
{
	double		 rate;
	long long	 cap, exp = c->srv->cfg->new_filter_growth;
	int		 nonscaling = 0, has_exp = 0;

	if (command_arg_double(op->argv[2], op->argl[2], &rate) == -1) {
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
	for (int i = 4; i < op->argc; i++) {
		if (name_is(op->argv[i], op->argl[i], "NONSCALING", 10))
			nonscaling = 1;
		else if (name_is(op->argv[i], op->argl[i], "EXPANSION", 9)) {
			if (i + 1 == op->argc) {
				result_error(r, "ERR", "no expansion");
				return;
			}
			if (command_arg_ll(op->argv[i + 1], op->argl[i + 1], &exp) ==
			    -1 || exp < 1) {
				result_error(r, "ERR", "bad expansion");
				return;
			}
			has_exp = 1;
			i++;
		} else {
			result_error(r, "ERR", "syntax error");
			return;
		}
	}
	if (nonscaling && has_exp) {
		result_bare(r, "Nonscaling filters cannot expand");
		return;
	}
	if (registry_find(c->srv->reg, op->argv[1], op->argl[1]) != NULL) {
		result_error(r, "ERR", "item exists");
		return;
	}
	if (create_filter(c, op, cap, rate, nonscaling ? 0 : exp, r) != NULL)
		result_status(r, "OK");
}

/* BF.INSERT f [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
 * [NONSCALING] ITEMS a b ... */
void
cmd_bf_insert(struct conn *c, struct op *op, struct result *r)
{
	const struct config	*cfg = c->srv->cfg;
	struct filter		*f;
	double			 rate = cfg->new_filter_error_rate;
	long long		 cap = (long long)cfg->new_filter_capacity;
	long long		 exp = cfg->new_filter_growth;
	int			 i, nocreate = 0, nonscaling = 0, items = 0;
	uint8_t			*a;

	for (i = 2; i < op->argc && !items; i++) {
		const char	*w = op->argv[i];
		size_t		 l = op->argl[i];
		int		 last = i + 1 == op->argc;

		if (name_is(w, l, "ITEMS", 5)) {
			items = i + 1;
		} else if (name_is(w, l, "NOCREATE", 8)) {
			nocreate = 1;
		} else if (name_is(w, l, "NONSCALING", 10)) {
			nonscaling = 1;
		} else if (name_is(w, l, "CAPACITY", 8) && !last) {
			if (command_arg_ll(op->argv[i + 1], op->argl[i + 1],
			    &cap) == -1) {
				result_bare(r, "Bad capacity");
				return;
			}
			i++;
		} else if (name_is(w, l, "ERROR", 5) && !last) {
			if (command_arg_double(op->argv[i + 1], op->argl[i + 1],
			    &rate) == -1) {
				result_bare(r, "Bad error rate");
				return;
			}
			i++;
		} else if (name_is(w, l, "EXPANSION", 9) && !last) {
			if (command_arg_ll(op->argv[i + 1], op->argl[i + 1],
			    &exp) == -1) {
				result_bare(r, "Bad expansion");
				return;
			}
			i++;
		} else if (last && (name_is(w, l, "CAPACITY", 8) ||
		    name_is(w, l, "ERROR", 5) || name_is(w, l, "EXPANSION", 9))) {
			result_error(r, "ERR", "wrong number of arguments for "
			    "'bf.insert' command");
			return;
		} else {
			result_bare(r, "Unknown argument received");
			return;
		}
	}
	if (items == 0 || items >= op->argc) {
		result_error(r, "ERR", "wrong number of arguments for 'bf.insert' "
		    "command");
		return;
	}
	if (!(rate > 0 && rate < 1) || cap < 1 || exp < 1) {
		result_bare(r, "Bad argument received");
		return;
	}
	if ((f = registry_find(c->srv->reg, op->argv[1], op->argl[1])) ==
	    NULL) {
		if (nocreate) {
			result_error(r, "ERR", "not found");
			return;
		}
		if (!cfg->create_filters) {
			(void)command_named_filter(c, op, 1, r);
			return;
		}
		if ((f = create_filter(c, op, cap, rate, nonscaling ? 0 : exp,
		    r)) == NULL)
			return;
	}
	if ((a = result_answers(r, (size_t)(op->argc - items))) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	for (i = items; i < op->argc; i++) {
		int hit = command_dedup_key(c, f, op->argv[i], op->argl[i], 0, r);

		if (hit == FILTER_FULL)
			return;
		a[i - items] = (uint8_t)!hit;
	}
}

/* BF.INFO f [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION] */
void
cmd_bf_info(struct conn *c, struct op *op, struct result *r)
{
	static const char *names[] = { "Capacity", "Size", "Number of filters",
	    "Number of items inserted", "Expansion rate" };
	static const char *words[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS",
	    "EXPANSION" };
	struct filter	*f = command_named_filter(c, op, 0, r);
	long long	 v[5];
	int		 one = -1;

	if (f == NULL) {
		result_error(r, "ERR", "not found");
		return;
	}
	if (op->argc == 3) {
		for (int i = 0; i < 5; i++)
			if (name_is(op->argv[2], op->argl[2], words[i],
			    strlen(words[i])))
				one = i;
		if (one < 0) {
			result_bare(r, "Invalid information value");
			return;
		}
	}
	v[0] = (long long)f->capacity;
	v[1] = (long long)filter_bytes(f);
	v[2] = (long long)f->nslices;
	v[3] = (long long)filter_count(f);
	v[4] = (long long)f->growth;
	result_reset();
	if (one >= 0) {
		resp_add_array(&result_buf, 1);
		resp_add_int(&result_buf, v[one]);
	} else {
		resp_add_array(&result_buf, 10);
		for (int i = 0; i < 5; i++) {
			resp_add_status(&result_buf, names[i]);
			resp_add_int(&result_buf, v[i]);
		}
	}
	result_scratch(r, RESULT_ARRAY);
}
