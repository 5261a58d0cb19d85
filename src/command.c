/*
 * command.c - the command table and one handler per command.
 *
 * Adding a command is one table entry and one function; the dispatcher
 * never grows. Replies are appended to the connection's output buffer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bloom.h"
#include "command.h"
#include "config.h"
#include "conn.h"
#include "journal.h"
#include "log.h"
#include "persist.h"
#include "registry.h"
#include "saver.h"
#include "server.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

typedef enum command_result (*command_fn)(struct conn *, struct op *);

struct command {
	const char	*name;
	enum cmd_id	 id;
	int		 min_args;	/* not counting the command itself */
	int		 max_args;
	int		 before_auth;	/* allowed before AUTH */
	command_fn	 fn;
};

static enum command_result cmd_seen(struct conn *, struct op *);
static enum command_result cmd_ping(struct conn *, struct op *);
static enum command_result cmd_auth(struct conn *, struct op *);
static enum command_result cmd_filters(struct conn *, struct op *);
static enum command_result cmd_info(struct conn *, struct op *);
static enum command_result cmd_save(struct conn *, struct op *);
static enum command_result cmd_quit(struct conn *, struct op *);

static const struct command commands[] = {
	{ "SEEN",	CMD_SEEN,	1, 2, 0, cmd_seen },
	{ "CHECK",	CMD_CHECK,	1, 2, 0, cmd_seen },
	{ "PING",	CMD_PING,	0, 0, 0, cmd_ping },
	{ "AUTH",	CMD_AUTH,	1, 1, 1, cmd_auth },
	{ "FILTERS",	CMD_FILTERS,	0, 0, 0, cmd_filters },
	{ "INFO",	CMD_INFO,	0, 1, 0, cmd_info },
	{ "SAVE",	CMD_SAVE,	0, 1, 0, cmd_save },
	{ "QUIT",	CMD_QUIT,	0, 0, 1, cmd_quit },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const char *
command_name(enum cmd_id id)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].id == id)
			return commands[i].name;
	return "?";
}

static const struct command *
lookup(const char *tok, size_t len)
{
	/* SEEN first: it is nearly every request */
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (proto_token_is(tok, len, commands[i].name))
			return &commands[i];
	return NULL;
}

static inline void
reply(struct conn *c, const char *s, size_t n)
{
	struct buf *b = &c->out;

	/* the usual case, a short reply with room for it, without a call */
	if (b->cap - b->len >= n) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
	} else
		buf_append(b, s, n);
}

static enum command_result
reply_err(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum command_result
reply_err(struct conn *c, const char *fmt, ...)
{
	char	 msg[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->srv->stats.errors++;
	buf_printf(&c->out, "ERR %s\r\n", msg);
	/* before AUTH every refusal counts: a scanner or a misconfigured
	 * worker gets a few clear answers, no more */
	return conn_strike(c) ? COMMAND_CLOSE : COMMAND_DONE;
}

/*
 * A token for an error message: at most 64 bytes, and bytes that would
 * break the reply line shown as '?'.
 */
static const char *
printable(const char *tok, size_t len, char *out, size_t outlen)
{
	size_t n = len < outlen - 4 ? len : outlen - 4;

	for (size_t i = 0; i < n; i++)
		out[i] = (tok[i] >= 0x20 && tok[i] < 0x7f) ? tok[i] : '?';
	if (n < len) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

void
command_prepare(struct conn *c, const char *line, size_t len, struct op *op)
{
	const struct registry	*reg = c->srv->reg;
	struct request		*rq = &op->req;

	/* plain SEEN/CHECK lines from clients that may run commands never
	 * get here: command_run_simple answers them */
	op->filter = NULL;
	op->cmd = NULL;
	op->status = proto_split(line, len, rq);
	if (op->status != PROTO_OK)
		return;
	op->cmd = lookup(rq->argv[0], rq->argl[0]);
	if (op->cmd == NULL ||
	    (op->cmd->id != CMD_SEEN && op->cmd->id != CMD_CHECK))
		return;
	if (rq->argc == 2)
		op->filter = registry_route(reg, rq->argv[1], rq->argl[1]);
	else if (rq->argc == 3)
		op->filter = registry_find(reg, rq->argv[1], rq->argl[1]);
	if (op->filter == NULL)
		return;
	op->hash = filter_hash(op->filter, rq->argv[rq->argc - 1],
	    rq->argl[rq->argc - 1]);
	/* no prefetch here: the caller issues a batch's prefetches back to
	 * back once every key is hashed (see process_input) */
}

enum command_result
command_run(struct conn *c, struct op *op)
{
	struct stats		*st = &c->srv->stats;
	const struct command	*cmd = op->cmd;
	struct request		*rq = &op->req;
	char			 tok[80];

	switch (op->status) {
	case PROTO_EMPTY:
		return COMMAND_DONE;
	case PROTO_NUL:
		st->commands++;
		return reply_err(c, "request contains a NUL byte");
	case PROTO_TOO_MANY:
		st->commands++;
		return reply_err(c, "too many arguments");
	case PROTO_OK:
		break;
	}
	st->commands++;
	if (cmd == NULL) {
		if (!c->authed)
			goto need_auth;
		return reply_err(c, "unknown command '%s'",
		    printable(rq->argv[0], rq->argl[0], tok, sizeof(tok)));
	}
	if (!c->authed && !cmd->before_auth)
		goto need_auth;
	st->by_cmd[cmd->id]++;
	if (rq->argc - 1 < cmd->min_args || rq->argc - 1 > cmd->max_args)
		return reply_err(c, "wrong number of arguments for '%s'",
		    cmd->name);
	return cmd->fn(c, op);

need_auth:
	st->auth_failures++;
	return reply_err(c, "authentication required");
}

/*
 * CHECK (check = 1) or SEEN of a hashed key in filter f, counted in the
 * filter's own traffic counters; returns the answer (FILTER_FULL: a SEEN
 * the filter cannot record). The server-wide counters are the caller's:
 * cmd_seen adds them per request, the simple batch once per batch.
 */
static inline __attribute__((always_inline)) int
filter_answer(struct server *srv, struct filter *f, uint64_t h, int check)
{
	int hit;

	if (check) {
		hit = filter_check(f, h);
		f->checks++;
	} else {
		hit = filter_seen(f, h);
		if (__builtin_expect(hit == FILTER_FULL, 0))
			return hit;	/* cmd_seen counts and explains */
		f->seen_old += (uint64_t)hit;
		f->seen_new += (uint64_t)!hit;
		/* the caller made room (persist_make_room): no system call
		 * here, and nothing at all for a key already seen */
		if (!hit && srv->journal != NULL &&
		    __builtin_expect(journal_append(srv->journal, f->name,
		    strlen(f->name), f->seed, h, (uint64_t)filter_now_ms) ==
		    -1, 0))
			persist_append_failed(srv, f, h);
	}
	return hit;
}

static enum command_result
cmd_seen(struct conn *c, struct op *op)
{
	struct request	*rq = &op->req;
	struct filter	*f = op->filter;
	struct stats	*st = &c->srv->stats;
	char		 tok[80];
	int		 hit;

	if (f == NULL) {
		if (rq->argc == 3)
			return reply_err(c, "no such filter '%s'",
			    printable(rq->argv[1], rq->argl[1], tok,
			    sizeof(tok)));
		return reply_err(c, "no filter for this key: no rule routes "
		    "it and default_filter '%s' does not exist",
		    c->srv->cfg->default_filter ? c->srv->cfg->default_filter :
		    "");
	}
	if (op->cmd->id == CMD_SEEN && c->srv->journal != NULL &&
	    persist_make_room(c->srv, 1) == -1 &&
	    !filter_check(f, op->hash)) {
		/* always, and the journal cannot take it: not set, so a
		 * retry once the fault is over gets an honest 0 */
		f->refused++;
		return reply_err(c, "journal %s", persist_reason(c->srv));
	}
	if (op->cmd->id == CMD_CHECK) {
		hit = filter_answer(c->srv, f, op->hash, 1);
		if (hit)
			st->check_hits++;
		else
			st->check_misses++;
	} else {
		hit = filter_answer(c->srv, f, op->hash, 0);
		c->journaled |= hit == 0;
		if (hit == FILTER_FULL) {
			f->refused++;
			return reply_err(c, "full %s", f->name);
		}
		if (hit)
			st->keys_seen++;
		else
			st->keys_new++;
	}
	reply(c, hit ? "1\r\n" : "0\r\n", 3);
	return COMMAND_DONE;
}

/* One simple request between being hashed and being answered. */
struct simple {
	struct filter	*f;
	uint64_t	 h;
	int		 check;
	size_t		 next;		/* bytes of its line */
};

int
command_run_simple(struct conn *c, int max)
{
	struct simple	 q[COMMAND_SIMPLE_BATCH];
	const struct registry *reg = c->srv->reg;
	struct stats	*st = &c->srv->stats;
	const char	*p = buf_head(&c->in), *key;
	size_t		 left = buf_used(&c->in), off = 0, next, maxl;
	uint64_t	 checks = 0, check_hits = 0, seen_hits = 0;
	long		 klen;
	int		 n, i;
	char		*out;

	maxl = c->srv->cfg->max_line;
	if (max > COMMAND_SIMPLE_BATCH)
		max = COMMAND_SIMPLE_BATCH;
	for (n = 0; n < max; n++) {
		klen = proto_simple_key(p + off, left - off, maxl, &key,
		    &q[n].check, &next);
		if (klen < 0 ||
		    (q[n].f = registry_route(reg, key, (size_t)klen)) == NULL)
			break;	/* not simple, or an error to explain */
		q[n].h = filter_hash(q[n].f, key, (size_t)klen);
		q[n].next = next;
		off += next;
	}
	if (n == 0 || buf_reserve(&c->out, 3 * (size_t)n) == -1)
		return 0;
	/* room in the journal for every key first; if it cannot be made
	 * (always, in fault), cmd_seen refuses them one by one */
	if (c->srv->journal != NULL &&
	    persist_make_room(c->srv, (size_t)n) == -1)
		return 0;
	/*
	 * The prefetches back to back, after all of the hashing. Measured
	 * in seend (bench/RESULTS.md): a prefetch right after each hash cost
	 * 60% more CPU per request, a sliding window of them 66-113% more,
	 * double-buffered batches no less. Why this CPU prefers bursts was
	 * not measured (no PMU counters in this VM).
	 */
	for (i = 0; i < n; i++)
		filter_prefetch(q[i].f, q[i].h);
	out = c->out.data + c->out.len;
	off = 0;
	for (i = 0; i < n; i++) {
		int r = filter_answer(c->srv, q[i].f, q[i].h, q[i].check);
		uint64_t hit;

		if (__builtin_expect(r == FILTER_FULL, 0))
			break;	/* the general path explains, in order */
		hit = (uint64_t)r;
		off += q[i].next;

		if (q[i].check) {
			checks++;
			check_hits += hit;
		} else
			seen_hits += hit;
		out[0] = (char)('0' + hit);
		out[1] = '\r';
		out[2] = '\n';
		out += 3;
	}
	n = i;
	c->out.len += 3 * (size_t)n;
	buf_consume(&c->in, off);
	/* the counters command_run and cmd_seen keep, a batch at a time */
	st->commands += (uint64_t)n;
	st->by_cmd[CMD_CHECK] += checks;
	st->by_cmd[CMD_SEEN] += (uint64_t)n - checks;
	st->check_hits += check_hits;
	st->check_misses += checks - check_hits;
	st->keys_seen += seen_hits;
	st->keys_new += (uint64_t)n - checks - seen_hits;
	c->journaled |= (uint64_t)n - checks - seen_hits > 0;
	return n;
}

static enum command_result
cmd_ping(struct conn *c, struct op *op)
{
	(void)op;
	reply(c, "PONG\r\n", 6);
	return COMMAND_DONE;
}

/* Compares in time that depends only on the lengths, never on where the
 * first difference is. */
static int
token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char	 diff = (unsigned char)(alen != blen);
	size_t		 n = alen < blen ? alen : blen;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

static enum command_result
cmd_auth(struct conn *c, struct op *op)
{
	const char	*token = c->srv->cfg->auth_token;
	struct request	*rq = &op->req;

	if (token == NULL) {
		c->authed = 1;
		return reply_err(c, "no auth_token is configured");
	}
	if (token_equal(rq->argv[1], rq->argl[1], token, strlen(token))) {
		c->authed = 1;
		c->strikes = 0;
		reply(c, "OK\r\n", 4);
		return COMMAND_DONE;
	}
	c->srv->stats.auth_failures++;
	log_warn("client %llu (%s): AUTH with a wrong token",
	    (unsigned long long)c->id, c->peer);
	return reply_err(c, "invalid token");
}

static void
filter_line(struct conn *c, const struct filter *f)
{
	buf_printf(&c->out, "%s capacity=%llu error_rate=%g count=%llu "
	    "bytes=%llu slices=%zu\r\n", f->name,
	    (unsigned long long)f->capacity, f->error_rate,
	    (unsigned long long)filter_count(f),
	    (unsigned long long)filter_bytes(f), f->nslices);
}

static enum command_result
cmd_filters(struct conn *c, struct op *op)
{
	const struct registry *reg = c->srv->reg;

	(void)op;
	for (size_t i = 0; i < reg->nfilters; i++)
		filter_line(c, reg->filters[i]);
	reply(c, "END\r\n", 5);
	return COMMAND_DONE;
}

/* The growth factor as the config spells it. */
static const char *
growth_text(const struct filter *f, char *buf, size_t len)
{
	if (f->growth == 0)
		return "off";
	snprintf(buf, len, "%u", f->growth);
	return buf;
}

static void
info_filter(struct conn *c, const struct filter *f)
{
	const struct slice	*h = f->head;
	double			 bits = (double)filter_bytes(f) * 8;
	uint64_t		 bits_set = 0, cap = filter_slice_capacity(f);
	char			 g[16];

	for (size_t i = 0; i < f->nslices; i++)
		bits_set += f->slices[i]->bloom.bits_set;
	buf_printf(&c->out,
	    "name %s\r\n"
	    "capacity %llu\r\n"
	    "error_rate %g\r\n"
	    "growth %s\r\n"
	    "expire %lld\r\n"
	    "state %s\r\n"
	    "count %llu\r\n"
	    "slices %zu\r\n"
	    "slice_capacity %llu\r\n"
	    "bits %.0f\r\n"
	    "bytes %llu\r\n"
	    "mapped_bytes %llu\r\n"
	    "bits_per_key %.2f\r\n"
	    "hashes %u\r\n"
	    "layout split-block-512\r\n"
	    "bits_set %llu\r\n"
	    "fill_ratio %.6f\r\n"
	    "estimated_fp_rate %.3g\r\n"
	    "fp_rate_at_capacity %.3g\r\n"
	    "seen_new %llu\r\n"
	    "seen_old %llu\r\n"
	    "checks %llu\r\n"
	    "refused_full %llu\r\n",
	    f->name, (unsigned long long)f->capacity, f->error_rate,
	    growth_text(f, g, sizeof(g)), (long long)(f->expire_ms / 1000),
	    filter_state_name(filter_state(f)),
	    (unsigned long long)filter_count(f), f->nslices,
	    (unsigned long long)cap, bits, (unsigned long long)filter_bytes(f),
	    (unsigned long long)filter_mapped(f),
	    cap ? bits / (double)cap : 0.0, h ? h->bloom.hashes : 0,
	    (unsigned long long)bits_set, bits > 0 ? (double)bits_set / bits :
	    0.0, filter_fp_estimate(f), filter_fp_planned(f),
	    (unsigned long long)f->seen_new, (unsigned long long)f->seen_old,
	    (unsigned long long)f->checks, (unsigned long long)f->refused);
	buf_printf(&c->out,
	    "dirty %d\r\n"
	    "snapshot_in_progress %d\r\n"
	    "last_snapshot_time %lld\r\n"
	    "last_snapshot_status %s\r\n"
	    "last_snapshot_duration_ms %.1f\r\n"
	    "last_snapshot_error %s\r\n"
	    "snapshots_ok %llu\r\n"
	    "snapshots_failed %llu\r\n",
	    filter_dirty(f), f->saving > 0,
	    (long long)f->last_save,
	    f->last_save_ok < 0 ? "none" : f->last_save_ok ? "ok" : "failed",
	    f->last_save_secs * 1000,
	    f->last_save_error[0] ? f->last_save_error : "-",
	    (unsigned long long)f->saves_ok,
	    (unsigned long long)f->saves_failed);
}

/* Resident set size from /proc, in bytes; 0 if unknown. */
static size_t
rss_bytes(void)
{
	FILE		*fp = fopen("/proc/self/statm", "r");
	unsigned long	 size, res = 0;

	if (fp == NULL)
		return 0;
	if (fscanf(fp, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(fp);
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static void
info_server(struct conn *c)
{
	struct server		*srv = c->srv;
	const struct stats	*st = &srv->stats;
	const struct registry	*reg = srv->reg;
	time_t			 now = time(NULL);
	buf_printf(&c->out,
	    "version %s\r\n"
	    "pid %ld\r\n"
	    "uptime_seconds %lld\r\n"
	    "connections_current %u\r\n"
	    "connections_total %llu\r\n"
	    "connections_refused %llu\r\n"
	    "max_clients %u\r\n"
	    "commands_total %llu\r\n",
	    PACKAGE_VERSION, (long)getpid(), (long long)(now - srv->started),
	    srv->nconns, (unsigned long long)st->conns_total,
	    (unsigned long long)st->conns_refused, srv->cfg->max_clients,
	    (unsigned long long)st->commands);
	for (int i = 0; i < CMD_COUNT; i++) {
		char name[16];
		size_t j;

		for (j = 0; command_name(i)[j] && j < sizeof(name) - 1; j++)
			name[j] = (char)(command_name(i)[j] | 0x20);
		name[j] = '\0';
		buf_printf(&c->out, "cmd_%s %llu\r\n", name,
		    (unsigned long long)st->by_cmd[i]);
	}
	buf_printf(&c->out,
	    "errors_total %llu\r\n"
	    "keys_new %llu\r\n"
	    "keys_seen %llu\r\n"
	    "check_hits %llu\r\n"
	    "check_misses %llu\r\n"
	    "lines_too_long %llu\r\n"
	    "idle_closed %llu\r\n"
	    "auth_failures %llu\r\n"
	    "filters %zu\r\n"
	    "filter_memory_bytes %llu\r\n"
	    "max_memory %llu\r\n"
	    "connection_memory_bytes %zu\r\n"
	    "rss_bytes %zu\r\n"
	    "snapshots_in_progress %d\r\n"
	    "last_reload_time %lld\r\n"
	    "last_reload_status %s\r\n",
	    (unsigned long long)st->errors,
	    (unsigned long long)st->keys_new,
	    (unsigned long long)st->keys_seen,
	    (unsigned long long)st->check_hits,
	    (unsigned long long)st->check_misses,
	    (unsigned long long)st->lines_too_long,
	    (unsigned long long)st->idle_closed,
	    (unsigned long long)st->auth_failures,
	    reg->nfilters, (unsigned long long)filter_memory_used,
	    (unsigned long long)filter_memory_limit, server_conn_memory(srv),
	    rss_bytes(),
	    saver_busy(srv->saver), (long long)srv->last_reload,
	    srv->last_reload_ok < 0 ? "none" :
	    srv->last_reload_ok ? "ok" : "failed");
	persist_info(srv, &c->out);
}

static enum command_result
cmd_info(struct conn *c, struct op *op)
{
	struct request	*rq = &op->req;
	struct filter	*f;
	char		 tok[80];

	if (rq->argc == 2) {
		f = registry_find(c->srv->reg, rq->argv[1], rq->argl[1]);
		if (f == NULL)
			return reply_err(c, "no such filter '%s'",
			    printable(rq->argv[1], rq->argl[1], tok,
			    sizeof(tok)));
		info_filter(c, f);
	} else
		info_server(c);
	reply(c, "END\r\n", 5);
	return COMMAND_DONE;
}

/*
 * SAVE answers only once every file is written and fsynced, so the
 * connection waits (its later requests too, to keep replies in order)
 * while the worker thread writes; other clients are served meanwhile.
 */
static enum command_result
cmd_save(struct conn *c, struct op *op)
{
	struct server		*srv = c->srv;
	struct request		*rq = &op->req;
	struct save_wait	*w;
	struct filter		*one = NULL;
	char			 tok[80];

	if (rq->argc == 2 &&
	    (one = registry_find(srv->reg, rq->argv[1], rq->argl[1])) == NULL)
		return reply_err(c, "no such filter '%s'",
		    printable(rq->argv[1], rq->argl[1], tok, sizeof(tok)));
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return reply_err(c, "out of memory");
	w->conn = c;
	w->pending = 1;		/* held until every job is queued */
	for (size_t i = 0; i < srv->reg->nfilters; i++) {
		struct filter *f = srv->reg->filters[i];

		if (one != NULL && f != one)
			continue;
		if (saver_submit(srv->saver, f, srv->cfg->data_dir, w) == -1) {
			w->failed = 1;
			snprintf(w->err, sizeof(w->err), "out of memory");
		}
	}
	if (--w->pending == 0) {
		int failed = w->failed;

		free(w);
		if (failed)
			return reply_err(c, "out of memory");
		reply(c, "OK\r\n", 4);
		return COMMAND_DONE;
	}
	c->wait = w;
	return COMMAND_WAIT;
}

static enum command_result
cmd_quit(struct conn *c, struct op *op)
{
	(void)op;
	reply(c, "OK\r\n", 4);
	return COMMAND_CLOSE;
}
