/*
 * command.c - the command table and one handler per command, for the line
 * protocol and RESP2 alike.
 *
 * Adding a command is one table entry and one function; the dispatcher
 * never grows. A handler fills a struct result; command_encode writes it
 * in the protocol of the request (see command.h). Texts longer than a
 * status (INFO, FILTERS, BF.INFO's array) are built in one scratch buffer:
 * the loop is single-threaded and a result is encoded before the next
 * request runs.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
#include "resp.h"
#include "saver.h"
#include "server.h"
#include "snapshot.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

typedef void (*command_fn)(struct conn *, struct op *, struct result *);

struct command {
	const char	*name;		/* upper case */
	const char	*lname;		/* as Redis names it in errors */
	enum cmd_id	 id;		/* counted under (CMD_COUNT: none) */
	int		 min_args;	/* not counting the command itself */
	int		 max_args;	/* -1: any */
	int		 proto;		/* COMMAND_LINE, COMMAND_RESP or both */
	int		 before_auth;	/* allowed before AUTH */
	command_fn	 fn;
};

#define LINE	COMMAND_LINE
#define RESP	COMMAND_RESP
#define BOTH	(COMMAND_LINE | COMMAND_RESP)

static void	cmd_seen(struct conn *, struct op *, struct result *);
static void	cmd_ping(struct conn *, struct op *, struct result *);
static void	cmd_auth(struct conn *, struct op *, struct result *);
static void	cmd_filters(struct conn *, struct op *, struct result *);
static void	cmd_info(struct conn *, struct op *, struct result *);
static void	cmd_save(struct conn *, struct op *, struct result *);
static void	cmd_quit(struct conn *, struct op *, struct result *);
static void	cmd_setnx(struct conn *, struct op *, struct result *);
static void	cmd_set(struct conn *, struct op *, struct result *);
static void	cmd_exists(struct conn *, struct op *, struct result *);
static void	cmd_sadd(struct conn *, struct op *, struct result *);
static void	cmd_sismember(struct conn *, struct op *, struct result *);
static void	cmd_scard(struct conn *, struct op *, struct result *);
static void	cmd_bf_reserve(struct conn *, struct op *, struct result *);
static void	cmd_bf_insert(struct conn *, struct op *, struct result *);
static void	cmd_bf_info(struct conn *, struct op *, struct result *);
static void	cmd_del(struct conn *, struct op *, struct result *);
static void	cmd_echo(struct conn *, struct op *, struct result *);
static void	cmd_select(struct conn *, struct op *, struct result *);
static void	cmd_client(struct conn *, struct op *, struct result *);
static void	cmd_command(struct conn *, struct op *, struct result *);
static void	cmd_config(struct conn *, struct op *, struct result *);
static void	cmd_dbsize(struct conn *, struct op *, struct result *);
static void	cmd_hello(struct conn *, struct op *, struct result *);

/*
 * Line commands first, SEEN first of all: a line lookup stops early. The
 * RESP arities are Redis's (and RedisBloom's), so the "wrong number of
 * arguments" answers match.
 */
static const struct command commands[] = {
	{ "SEEN",	"seen",	CMD_SEEN,	1, 2, LINE, 0, cmd_seen },
	{ "CHECK",	"check", CMD_CHECK,	1, 2, LINE, 0, cmd_seen },
	{ "PING",	"ping",	CMD_PING,	0, 0, LINE, 0, cmd_ping },
	{ "AUTH",	"auth",	CMD_AUTH,	1, 1, LINE, 1, cmd_auth },
	{ "FILTERS",	"filters", CMD_FILTERS,	0, 0, BOTH, 0, cmd_filters },
	{ "INFO",	"info",	CMD_INFO,	0, 1, LINE, 0, cmd_info },
	{ "SAVE",	"save",	CMD_SAVE,	0, 1, LINE, 0, cmd_save },
	{ "QUIT",	"quit",	CMD_QUIT,	0, 0, LINE, 1, cmd_quit },
	/* RESP: the hot ones first */
	{ "SETNX",	"setnx", CMD_SEEN,	2, 2, RESP, 0, cmd_setnx },
	{ "SADD",	"sadd",	CMD_SEEN,	2, -1, RESP, 0, cmd_sadd },
	{ "BF.ADD",	"bf.add", CMD_SEEN,	2, 2, RESP, 0, cmd_sadd },
	{ "BF.MADD",	"bf.madd", CMD_SEEN,	2, -1, RESP, 0, cmd_sadd },
	{ "SET",	"set",	CMD_SEEN,	2, -1, RESP, 0, cmd_set },
	{ "EXISTS",	"exists", CMD_CHECK,	1, -1, RESP, 0, cmd_exists },
	{ "SISMEMBER",	"sismember", CMD_CHECK,	2, 2, RESP, 0, cmd_sismember },
	{ "SMISMEMBER",	"smismember", CMD_CHECK, 2, -1, RESP, 0,
	    cmd_sismember },
	{ "BF.EXISTS",	"bf.exists", CMD_CHECK,	2, 2, RESP, 0, cmd_sismember },
	{ "BF.MEXISTS",	"bf.mexists", CMD_CHECK, 2, -1, RESP, 0,
	    cmd_sismember },
	{ "BF.INSERT",	"bf.insert", CMD_SEEN,	3, -1, RESP, 0, cmd_bf_insert },
	{ "SCARD",	"scard", CMD_COUNT,	1, 1, RESP, 0, cmd_scard },
	{ "BF.CARD",	"bf.card", CMD_COUNT,	1, 1, RESP, 0, cmd_scard },
	{ "BF.RESERVE",	"bf.reserve", CMD_COUNT, 3, 6, RESP, 0,
	    cmd_bf_reserve },
	{ "BF.INFO",	"bf.info", CMD_COUNT,	1, 2, RESP, 0, cmd_bf_info },
	{ "DEL",	"del",	CMD_COUNT,	1, -1, RESP, 0, cmd_del },
	{ "PING",	"ping",	CMD_PING,	0, 1, RESP, 0, cmd_ping },
	{ "ECHO",	"echo",	CMD_COUNT,	1, 1, RESP, 0, cmd_echo },
	{ "AUTH",	"auth",	CMD_AUTH,	1, -1, RESP, 1, cmd_auth },
	{ "SELECT",	"select", CMD_COUNT,	1, 1, RESP, 0, cmd_select },
	{ "QUIT",	"quit",	CMD_QUIT,	0, -1, RESP, 1, cmd_quit },
	{ "CLIENT",	"client", CMD_COUNT,	1, -1, RESP, 0, cmd_client },
	{ "COMMAND",	"command", CMD_COUNT,	0, -1, RESP, 0, cmd_command },
	{ "CONFIG",	"config", CMD_COUNT,	1, -1, RESP, 0, cmd_config },
	{ "INFO",	"info",	CMD_INFO,	0, -1, RESP, 0, cmd_info },
	{ "DBSIZE",	"dbsize", CMD_COUNT,	0, 0, RESP, 0, cmd_dbsize },
	{ "HELLO",	"hello", CMD_COUNT,	0, -1, RESP, 1, cmd_hello },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* Long results (INFO, FILTERS, arrays) are built here. */
static struct buf	 scratch;
/* Error texts formatted for a result. */
static char		 errtext[600];

const char *
command_name(enum cmd_id id)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].id == id)
			return commands[i].name;
	return "?";
}

static const struct command *
lookup(const char *tok, size_t len, int proto)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if ((commands[i].proto & proto) &&
		    proto_token_is(tok, len, commands[i].name))
			return &commands[i];
	return NULL;
}

static void
set_int(struct result *r, long long n)
{
	r->kind = RESULT_INT;
	r->n = n;
}

static void
set_status(struct result *r, const char *text)
{
	r->kind = RESULT_STATUS;
	r->text = text;
	r->len = strlen(text);
}

static void
set_error(struct result *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error: "ERR text" on a line, "-code text" in RESP. */
static void
set_error(struct result *r, const char *code, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(errtext, 512, fmt, ap);
	va_end(ap);
	r->kind = RESULT_ERROR;
	r->code = code;
	r->text = errtext;
	r->len = n < 0 ? 0 : (size_t)n < 512 ? (size_t)n : 511;
}

/* A RedisBloom error sent as is: its first word is its code. */
static void
set_bare(struct result *r, const char *text)
{
	r->kind = RESULT_ERROR;
	r->code = NULL;
	r->text = text;
	r->len = strlen(text);
}

static void
scratch_reset(void)
{
	scratch.off = scratch.len = 0;
}

static void
set_scratch(struct result *r, enum result_kind kind)
{
	r->kind = kind;
	r->text = buf_head(&scratch);
	r->len = buf_used(&scratch);
}

/* Answers of 0/1, one byte each, for RESULT_INTS. */
static uint8_t *
answers(struct result *r, size_t n)
{
	scratch_reset();
	if (buf_reserve(&scratch, n ? n : 1) == -1)
		return NULL;
	r->kind = RESULT_INTS;
	r->text = scratch.data;
	r->len = n;
	return (uint8_t *)scratch.data;
}

static int
encode_text_resp(struct buf *out, const struct result *r)
{
	/* INFO's "name value" lines as Redis's "name:value", under a
	 * section header redis-py's info() skips */
	const char	*p = r->text, *end = r->text + r->len;
	struct buf	 t = { 0 };
	int		 rc;

	if (buf_append_str(&t, "# Seend\r\n") == -1)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp;
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		if (buf_append(&t, p, n) == -1) {
			buf_free(&t);
			return -1;
		}
		sp = memchr(t.data + t.len - n, ' ', n);
		if (sp != NULL)
			t.data[sp - t.data] = ':';
		p += n;
	}
	rc = resp_add_bulk(out, buf_head(&t), buf_used(&t));
	buf_free(&t);
	return rc;
}

int
command_encode(struct buf *out, int proto, const struct result *r)
{
	if (proto == COMMAND_LINE) {
		switch (r->kind) {
		case RESULT_NONE:
		case RESULT_WAIT:
			return 0;
		case RESULT_INT:
			if (r->n == 0 || r->n == 1)
				return buf_append(out, r->n ? "1\r\n" : "0\r\n",
				    3);
			return buf_printf(out, "%lld\r\n", r->n);
		case RESULT_STATUS:
			return buf_append(out, r->text, r->len) == -1 ? -1 :
			    buf_append(out, "\r\n", 2);
		case RESULT_ERROR:
			return buf_printf(out, "ERR %.*s\r\n", (int)r->len,
			    r->text);
		case RESULT_TEXT:
			return buf_append(out, r->text, r->len) == -1 ? -1 :
			    buf_append(out, "END\r\n", 5);
		default:
			/* RESP-only shapes never come from line commands */
			return buf_append(out, "ERR internal error\r\n", 20);
		}
	}
	switch (r->kind) {
	case RESULT_NONE:
	case RESULT_WAIT:
		return 0;
	case RESULT_INT:
		return resp_add_int(out, r->n);
	case RESULT_STATUS:
		return buf_append(out, "+", 1) == -1 ||
		    buf_append(out, r->text, r->len) == -1 ? -1 :
		    buf_append(out, "\r\n", 2);
	case RESULT_ERROR:
		if (r->code == NULL)
			return buf_append(out, "-", 1) == -1 ||
			    buf_append(out, r->text, r->len) == -1 ? -1 :
			    buf_append(out, "\r\n", 2);
		return resp_add_error(out, r->code, r->text, r->len);
	case RESULT_BULK:
		return resp_add_bulk(out, r->text, r->len);
	case RESULT_NULL:
		return resp_add_null(out);
	case RESULT_INTS:
		if (resp_add_array(out, (long long)r->len) == -1)
			return -1;
		for (size_t i = 0; i < r->len; i++)
			if (resp_add_int(out, (unsigned char)r->text[i]) == -1)
				return -1;
		return 0;
	case RESULT_TEXT:
		return encode_text_resp(out, r);
	case RESULT_ARRAY:
		return buf_append(out, r->text, r->len);
	}
	return 0;
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
	op->proto = COMMAND_LINE;
	op->filter = NULL;
	op->cmd = NULL;
	op->status = proto_split(line, len, rq);
	op->argc = rq->argc;
	op->argv = rq->argv;
	op->argl = rq->argl;
	if (op->status != PROTO_OK)
		return;
	op->cmd = lookup(rq->argv[0], rq->argl[0], COMMAND_LINE);
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

void
command_prepare_resp(struct conn *c, const struct resp_request *rr,
    struct op *op)
{
	(void)c;
	op->proto = COMMAND_RESP;
	op->status = PROTO_OK;
	op->filter = NULL;
	op->argc = rr->argc;
	op->argv = rr->argv;
	op->argl = rr->argl;
	op->cmd = lookup(rr->argv[0], rr->argl[0], COMMAND_RESP);
}

/* Redis 7's text for an unknown command (server.c, processCommand). */
static void
unknown_resp(const struct op *op, struct result *r)
{
	char	 args[200];
	size_t	 n = 0, l;

	args[0] = '\0';
	for (int i = 1; i < op->argc && n < 128; i++) {
		/* %s stops at a NUL byte: so does Redis's text */
		l = strnlen(op->argv[i], op->argl[i]);
		if (l > 128 - n)
			l = 128 - n;
		n += (size_t)snprintf(args + n, sizeof(args) - n, "'%.*s' ",
		    (int)l, op->argv[i]);
	}
	l = strnlen(op->argv[0], op->argl[0]);
	set_error(r, "ERR", "unknown command '%.*s', with args beginning "
	    "with: %s", (int)(l < 128 ? l : 128), op->argv[0], args);
}

void
command_run(struct conn *c, struct op *op, struct result *r)
{
	struct stats		*st = &c->srv->stats;
	const struct command	*cmd = op->cmd;
	char			 tok[80];
	int			 n = op->argc - 1;

	memset(r, 0, sizeof(*r));
	if (op->proto == COMMAND_LINE) {
		switch (op->status) {
		case PROTO_EMPTY:
			return;
		case PROTO_NUL:
			st->commands++;
			set_error(r, "ERR", "request contains a NUL byte");
			return;
		case PROTO_TOO_MANY:
			st->commands++;
			set_error(r, "ERR", "too many arguments");
			return;
		case PROTO_OK:
			break;
		}
		st->commands++;
		if (cmd == NULL) {
			if (!c->authed)
				goto need_auth;
			set_error(r, "ERR", "unknown command '%s'",
			    printable(op->argv[0], op->argl[0], tok,
			    sizeof(tok)));
			return;
		}
		if (!c->authed && !cmd->before_auth)
			goto need_auth;
		st->by_cmd[cmd->id]++;
		if (n < cmd->min_args || n > cmd->max_args) {
			set_error(r, "ERR", "wrong number of arguments for '%s'",
			    cmd->name);
			return;
		}
		cmd->fn(c, op, r);
		return;
	}
	/* RESP, in Redis's order: unknown, arity, then authentication */
	st->commands++;
	if (cmd == NULL) {
		unknown_resp(op, r);
		return;
	}
	if (n < cmd->min_args || (cmd->max_args >= 0 && n > cmd->max_args)) {
		set_error(r, "ERR", "wrong number of arguments for '%s' command",
		    cmd->lname);
		return;
	}
	if (!c->authed && !cmd->before_auth) {
		st->auth_failures++;
		r->need_auth = 1;
		if (cmd->fn == cmd_hello)
			set_error(r, "NOAUTH", "HELLO must be called with the "
			    "client already authenticated, otherwise the HELLO "
			    "AUTH <user> <pass> option can be used to "
			    "authenticate the client and select the RESP "
			    "protocol version at the same time");
		else
			set_error(r, "NOAUTH", "Authentication required.");
		return;
	}
	if (cmd->id < CMD_COUNT && cmd->id != CMD_SEEN && cmd->id != CMD_CHECK)
		st->by_cmd[cmd->id]++;
	cmd->fn(c, op, r);
	return;

need_auth:
	st->auth_failures++;
	r->need_auth = 1;
	set_error(r, "ERR", "authentication required");
}

/*
 * A key answered new goes into the journal before its reply leaves (the
 * connection flushes replies at the end of the loop turn, after the
 * journal's write). The caller made room (persist_make_room): no system
 * call here, and nothing at all for a key already seen.
 */
static inline __attribute__((always_inline)) void
journal_key(struct server *srv, struct filter *f, uint64_t h)
{
	uint64_t now = (uint64_t)filter_now_ms;

	/* apart, so that the name's length is only loaded for the slow one */
	if (srv->journal != NULL &&
	    !journal_append_fast(srv->journal, f->name, f->seed, h, now) &&
	    journal_append_slow(srv->journal, f->name, f->namelen, f->seed, h,
	    now) == -1)
		persist_append_failed(srv, f, h);
}

/*
 * With journal = always, a SEEN the journal cannot take (a fault) is not
 * set, so that a retry once the fault is over gets an honest 0; a key
 * already held still answers. Returns 1 (error in r) if refused.
 */
static int
journal_refuses(struct conn *c, struct filter *f, uint64_t h, int check,
    struct result *r)
{
	if (check || c->srv->journal == NULL ||
	    persist_make_room(c->srv, 1) == 0 || filter_check(f, h))
		return 0;
	f->refused++;
	set_error(r, "ERR", "journal %s", persist_reason(c->srv));
	return 1;
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
		if (!hit)
			journal_key(srv, f, h);
	}
	return hit;
}

/* The server-wide counters of one answer. */
static void
count_answer(struct stats *st, int check, int hit)
{
	if (check) {
		if (hit)
			st->check_hits++;
		else
			st->check_misses++;
	} else if (hit)
		st->keys_seen++;
	else
		st->keys_new++;
}

/*
 * SEEN (check 0) or CHECK of one key of a RESP command in f: the answer,
 * or FILTER_FULL with the error in r.
 */
static int
dedup_key(struct conn *c, struct filter *f, const char *key, size_t len,
    int check, struct result *r)
{
	struct stats	*st = &c->srv->stats;
	uint64_t	 h = filter_hash(f, key, len);
	int		 hit;

	if (journal_refuses(c, f, h, check, r))
		return FILTER_FULL;
	hit = filter_answer(c->srv, f, h, check);
	c->journaled |= hit == 0 && !check;
	if (hit == FILTER_FULL) {
		f->refused++;
		set_error(r, "ERR", "full %s", f->name);
		return hit;
	}
	st->by_cmd[check ? CMD_CHECK : CMD_SEEN]++;
	count_answer(st, check, hit);
	return hit;
}

/* The error of a key no filter takes. */
static void
no_route(struct conn *c, struct result *r)
{
	set_error(r, "ERR", "no filter for this key: no rule routes it and "
	    "default_filter '%s' does not exist",
	    c->srv->cfg->default_filter ? c->srv->cfg->default_filter : "");
}

static void
cmd_seen(struct conn *c, struct op *op, struct result *r)
{
	struct request	*rq = &op->req;
	struct filter	*f = op->filter;
	struct stats	*st = &c->srv->stats;
	char		 tok[80];
	int		 hit, check = op->cmd->id == CMD_CHECK;

	if (f == NULL) {
		if (rq->argc == 3)
			set_error(r, "ERR", "no such filter '%s'",
			    printable(rq->argv[1], rq->argl[1], tok,
			    sizeof(tok)));
		else
			no_route(c, r);
		return;
	}
	if (journal_refuses(c, f, op->hash, check, r))
		return;
	hit = filter_answer(c->srv, f, op->hash, check);
	c->journaled |= hit == 0 && !check;
	if (hit == FILTER_FULL) {
		f->refused++;
		set_error(r, "ERR", "full %s", f->name);
		return;
	}
	count_answer(st, check, hit);
	set_int(r, hit);
}

/* One simple request between being hashed and being answered. */
struct simple {
	struct filter	*f;
	uint64_t	 h;
	int		 check;
	size_t		 next;		/* bytes of its line */
};

/* One answer of a simple batch: the line protocol's "0"/"1" (1: seen), or
 * RESP's integer for SETNX/SADD/BF.ADD (1: new). Returns the end. */
static inline __attribute__((always_inline)) char *
put_answer(char *out, uint64_t hit, int resp)
{
	if (resp) {
		out[0] = ':';
		out[1] = (char)('1' - hit);
		out[2] = '\r';
		out[3] = '\n';
		return out + 4;
	}
	out[0] = (char)('0' + hit);
	out[1] = '\r';
	out[2] = '\n';
	return out + 3;
}

/*
 * A batch whose keys all go to f, a filter of one slice b with room for
 * all of them (so none can fill it): prefetch and answer on b alone, the
 * filter's counters added once; replies as lines, or (resp) as RESP
 * integers for SETNX/SADD/BF.ADD. Returns n.
 */
static inline __attribute__((always_inline)) int
answer_fast(struct server *srv, struct filter *f, struct bloom *b,
    const struct simple *q, int n, char *out, uint64_t *checks,
    uint64_t *check_hits, uint64_t *seen_hits, int resp)
{
	uint64_t	 nchecks = 0, chits = 0, shits = 0, hit;

	for (int i = 0; i < n; i++)
		bloom_prefetch(b, q[i].h);
	for (int i = 0; i < n; i++) {
		if (q[i].check) {
			hit = (uint64_t)bloom_check(b, q[i].h);
			nchecks++;
			chits += hit;
		} else {
			hit = (uint64_t)bloom_add(b, q[i].h);
			shits += hit;
			if (!hit)
				journal_key(srv, f, q[i].h);
		}
		out = put_answer(out, hit, resp);
	}
	f->checks += nchecks;
	f->seen_old += shits;
	f->seen_new += (uint64_t)n - nchecks - shits;
	*checks += nchecks;
	*check_hits += chits;
	*seen_hits += shits;
	return n;
}

/*
 * Answers the n prepared requests of a simple batch (off: the bytes they
 * take), in either protocol: each key is one Bloom filter operation when
 * they all go to one filter of one slice with room for them all, else one
 * filter_answer each. Consumes what it answered, counts it, and returns
 * how many (fewer than n if a filter is full: the general path explains).
 */
static inline __attribute__((always_inline)) int
answer_batch(struct conn *c, const struct simple *q, int n, size_t off,
    int uniform, int resp)
{
	struct stats	*st = &c->srv->stats;
	size_t		 width = resp ? 4 : 3;
	uint64_t	 checks = 0, check_hits = 0, seen_hits = 0;
	struct bloom	*b;
	int		 i, j;
	char		*out;

	if (n == 0 || buf_reserve(&c->out, width * (size_t)n) == -1)
		return 0;
	/* room in the journal for every key first; if it cannot be made
	 * (always, in a fault), the general path refuses them one by one */
	if (c->srv->journal != NULL &&
	    persist_make_room(c->srv, (size_t)n) == -1)
		return 0;
	out = c->out.data + c->out.len;
	b = q[0].f->fast;
	if (uniform && b != NULL && q[0].f->next_mark - b->count > (uint64_t)n)
		/* one filter of one slice with room for every key: each
		 * key is one Bloom filter operation, nothing else */
		i = answer_fast(c->srv, q[0].f, b, q, n, out, &checks,
		    &check_hits, &seen_hits, resp);
	else {
		/*
		 * The prefetches back to back, after all of the hashing.
		 * Measured in seend (bench/RESULTS.md): a prefetch right
		 * after each hash cost 60% more CPU per request, a sliding
		 * window of them 66-113% more, double-buffered batches no
		 * less. Why this CPU prefers bursts was not measured (no
		 * PMU counters in this VM).
		 */
		for (i = 0; i < n; i++)
			filter_prefetch(q[i].f, q[i].h);
		for (i = 0; i < n; i++) {
			int r = filter_answer(c->srv, q[i].f, q[i].h,
			    q[i].check);
			uint64_t hit;

			if (__builtin_expect(r == FILTER_FULL, 0))
				break;	/* the general path explains it */
			hit = (uint64_t)r;
			if (q[i].check) {
				checks++;
				check_hits += hit;
			} else
				seen_hits += hit;
			out = put_answer(out, hit, resp);
		}
		if (i < n)	/* only the answered requests are consumed */
			for (off = 0, j = 0; j < i; j++)
				off += q[j].next;
	}
	n = i;
	c->out.len += width * (size_t)n;
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

int
command_run_simple(struct conn *c, int max)
{
	struct simple	 q[COMMAND_SIMPLE_BATCH];
	const struct registry *reg = c->srv->reg;
	const char	*p = buf_head(&c->in), *key;
	size_t		 left = buf_used(&c->in), off = 0, next, maxl;
	long		 klen;
	int		 n, uniform = 1;

	maxl = c->srv->cfg->max_line;
	if (max > COMMAND_SIMPLE_BATCH)
		max = COMMAND_SIMPLE_BATCH;
	for (n = 0; n < max; n++) {
		struct filter *f;

		klen = proto_simple_key(p + off, left - off, maxl, &key,
		    &q[n].check, &next);
		if (klen < 0 ||
		    (f = registry_route(reg, key, (size_t)klen)) == NULL)
			break;	/* not simple, or an error to explain */
		q[n].f = f;
		uniform &= f == q[0].f;
		q[n].h = filter_hash(f, key, (size_t)klen);
		q[n].next = next;
		off += next;
	}
	return answer_batch(c, q, n, off, uniform, 0);
}

/* Case-insensitive compare of a RESP command name with an upper-case word
 * of exactly n bytes. */
static inline int
name_is(const char *a, size_t alen, const char *word, size_t n)
{
	if (alen != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((a[i] & ~0x20) != word[i] && a[i] != word[i])
			return 0;
	return 1;
}

int
command_run_resp_simple(struct conn *c, const struct resp_limits *lim,
    int max)
{
	struct simple	 q[COMMAND_SIMPLE_BATCH];
	const struct registry *reg = c->srv->reg;
	const char	*p = buf_head(&c->in), *key, *name;
	size_t		 left = buf_used(&c->in), off = 0, next, keyl, namel;
	size_t		 head = 0, prev = 0;
	struct filter	*f = NULL;
	enum resp_hot	 cmd = RESP_HOT_NONE;
	int		 n, uniform = 1;

	if (max > COMMAND_SIMPLE_BATCH)
		max = COMMAND_SIMPLE_BATCH;
	for (n = 0; n < max; n++) {
		/* a pipeline repeats its command and filter: after the first
		 * request, only the key is read and the filter is the last */
		if (n == 0 || (next = resp_parse_hot_again(p + off, left - off,
		    p + prev, head, lim, cmd, &key, &keyl)) == 0) {
			next = resp_parse_hot(p + off, left - off, lim, &cmd,
			    &name, &namel, &key, &keyl, &head);
			if (next == 0)
				break;
			if (cmd != RESP_HOT_SETNX)
				f = registry_find(reg, name, namel);
		}
		if (cmd == RESP_HOT_SETNX)
			f = registry_route(reg, key, keyl);
		if (f == NULL)
			break;	/* the general path explains or creates */
		q[n].f = f;
		q[n].check = 0;
		uniform &= f == q[0].f;
		q[n].h = filter_hash(f, key, keyl);
		q[n].next = next;
		prev = off;
		off += next;
	}
	return answer_batch(c, q, n, off, uniform, 1);
}

static void
cmd_ping(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	if (op->argc == 2) {
		r->kind = RESULT_BULK;
		r->text = op->argv[1];
		r->len = op->argl[1];
	} else
		set_status(r, "PONG");
}

static void
cmd_echo(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	r->kind = RESULT_BULK;
	r->text = op->argv[1];
	r->len = op->argl[1];
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

static void
cmd_auth(struct conn *c, struct op *op, struct result *r)
{
	const char	*token = c->srv->cfg->auth_token;
	int		 resp = op->proto == COMMAND_RESP, user = 0;

	if (resp && op->argc > 3) {
		set_error(r, "ERR", "syntax error");
		return;
	}
	if (resp && op->argc == 3) {
		/* AUTH <user> <token>: the one user is Redis's "default" */
		user = 1;
		if (!token_equal(op->argv[1], op->argl[1], "default", 7))
			goto wrong;
	}
	if (token == NULL) {
		c->authed = 1;
		if (!resp)
			set_error(r, "ERR", "no auth_token is configured");
		else if (user)
			set_status(r, "OK");	/* Redis's nopass default user */
		else
			set_error(r, "ERR", "AUTH <password> called without any "
			    "password configured for the default user. Are you "
			    "sure your configuration is correct?");
		return;
	}
	if (token_equal(op->argv[op->argc - 1], op->argl[op->argc - 1], token,
	    strlen(token))) {
		c->authed = 1;
		c->strikes = 0;
		set_status(r, "OK");
		return;
	}
wrong:
	c->srv->stats.auth_failures++;
	log_warn("client %llu (%s): AUTH with a wrong token",
	    (unsigned long long)c->id, c->peer);
	if (resp)
		set_error(r, "WRONGPASS", "invalid username-password pair or "
		    "user is disabled.");
	else
		set_error(r, "ERR", "invalid token");
}

/* The filter a RESP command names in argv[1]; creates it (with the
 * new_filter_* settings) when create is set and create_filters is on.
 * NULL: missing, with r set if that is an error. */
static struct filter *
named_filter(struct conn *c, struct op *op, int create, struct result *r)
{
	const struct config	*cfg = c->srv->cfg;
	struct filter		*f;
	char			 err[400];

	f = registry_find(c->srv->reg, op->argv[1], op->argl[1]);
	if (f != NULL || !create)
		return f;
	if (!cfg->create_filters) {
		set_error(r, "ERR", "no such filter '%.*s' (create_filters is "
		    "off)", (int)(op->argl[1] < 64 ? op->argl[1] : 64),
		    op->argv[1]);
		return NULL;
	}
	f = registry_create(c->srv->reg, cfg, op->argv[1], op->argl[1],
	    cfg->new_filter_capacity, cfg->new_filter_error_rate,
	    cfg->new_filter_growth, err, sizeof(err));
	if (f == NULL) {
		set_error(r, "ERR", "%s", err);
		return NULL;
	}
	log_info("filter %s created by client %llu (%s)", f->name,
	    (unsigned long long)c->id, c->peer);
	return f;
}

/* SETNX <url> <v>: :1 new, :0 seen. */
static void
cmd_setnx(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f;
	int		 hit;

	if ((f = registry_route(c->srv->reg, op->argv[1], op->argl[1])) ==
	    NULL) {
		no_route(c, r);
		return;
	}
	if ((hit = dedup_key(c, f, op->argv[1], op->argl[1], 0, r)) !=
	    FILTER_FULL)
		set_int(r, !hit);
}

/* SET <url> <v> NX: +OK new, $-1 seen; any other form is refused. */
static void
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
		set_error(r, "ERR", "syntax error");
		return;
	}
	cmd_setnx(c, op, r);
	if (r->kind == RESULT_INT) {
		if (r->n)
			set_status(r, "OK");
		else
			r->kind = RESULT_NULL;
	}
}

/* EXISTS <url> ...: how many were seen (a repeated key counts twice). */
static void
cmd_exists(struct conn *c, struct op *op, struct result *r)
{
	long long	 n = 0;

	for (int i = 1; i < op->argc; i++) {
		struct filter *f = registry_route(c->srv->reg, op->argv[i],
		    op->argl[i]);

		if (f == NULL) {
			no_route(c, r);
			return;
		}
		n += dedup_key(c, f, op->argv[i], op->argl[i], 1, r);
	}
	set_int(r, n);
}

/* SADD f m... (:new), BF.ADD f x (:1 new), BF.MADD f x... (array). */
static void
cmd_sadd(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f;
	uint8_t		*a = NULL;
	long long	 n = 0;
	int		 hit, madd = strcmp(op->cmd->lname, "bf.madd") == 0;

	if ((f = named_filter(c, op, 1, r)) == NULL)
		return;
	if (madd && (a = answers(r, (size_t)op->argc - 2)) == NULL) {
		set_error(r, "ERR", "out of memory");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		hit = dedup_key(c, f, op->argv[i], op->argl[i], 0, r);
		if (hit == FILTER_FULL)
			return;
		n += !hit;
		if (a != NULL)
			a[i - 2] = (uint8_t)!hit;
	}
	if (!madd)
		set_int(r, n);
}

/* SISMEMBER/BF.EXISTS f m (:0/:1), SMISMEMBER/BF.MEXISTS f m... (array);
 * a missing filter holds nothing. */
static void
cmd_sismember(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f = named_filter(c, op, 0, r);
	const char	*name = op->cmd->lname;
	int		 multi = strcmp(name, "smismember") == 0 ||
		    strcmp(name, "bf.mexists") == 0;
	uint8_t		*a = NULL;
	int		 hit = 0;

	if (multi && (a = answers(r, (size_t)op->argc - 2)) == NULL) {
		set_error(r, "ERR", "out of memory");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		hit = f ? dedup_key(c, f, op->argv[i], op->argl[i], 1, r) : 0;
		if (a != NULL)
			a[i - 2] = (uint8_t)hit;
	}
	if (!multi)
		set_int(r, hit);
}

static void
cmd_scard(struct conn *c, struct op *op, struct result *r)
{
	struct filter *f = named_filter(c, op, 0, r);

	set_int(r, f ? (long long)filter_count(f) : 0);
}

/* A number as RedisBloom reads one (strtod/strtoll on the whole text). */
static int
arg_double(const char *s, size_t len, double *v)
{
	char	 tmp[64], *end;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	*v = strtod(tmp, &end);
	return *end != '\0' || errno != 0 || isnan(*v) ? -1 : 0;
}

static int
arg_ll(const char *s, size_t len, long long *v)
{
	char	 tmp[32], *end;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	*v = strtoll(tmp, &end, 10);
	return *end != '\0' || errno != 0 ? -1 : 0;
}

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
		set_error(r, "ERR", "expansion over %d is not supported",
		    MAX_EXPANSION);
		return NULL;
	}
	if (rate < 1e-9 || rate > 0.5) {
		set_error(r, "ERR", "error rate must be 1e-9 to 0.5");
		return NULL;
	}
	f = registry_create(c->srv->reg, c->srv->cfg, op->argv[1],
	    op->argl[1], (uint64_t)cap, rate, (unsigned)expansion, err,
	    sizeof(err));
	if (f == NULL)
		set_error(r, "ERR", "%s", err);
	else
		log_info("filter %s created by client %llu (%s)", f->name,
		    (unsigned long long)c->id, c->peer);
	return f;
}

/* BF.RESERVE f error_rate capacity [EXPANSION e] [NONSCALING] */
static void
cmd_bf_reserve(struct conn *c, struct op *op, struct result *r)
{
	double		 rate;
	long long	 cap, exp = c->srv->cfg->new_filter_growth;
	int		 nonscaling = 0, has_exp = 0;

	if (arg_double(op->argv[2], op->argl[2], &rate) == -1) {
		set_error(r, "ERR", "bad error rate");
		return;
	}
	if (!(rate > 0 && rate < 1)) {
		set_error(r, "ERR", "(0 < error rate range < 1) ");
		return;
	}
	if (arg_ll(op->argv[3], op->argl[3], &cap) == -1) {
		set_error(r, "ERR", "bad capacity");
		return;
	}
	if (cap <= 0) {
		set_error(r, "ERR", "(capacity should be larger than 0)");
		return;
	}
	for (int i = 4; i < op->argc; i++) {
		if (name_is(op->argv[i], op->argl[i], "NONSCALING", 10))
			nonscaling = 1;
		else if (name_is(op->argv[i], op->argl[i], "EXPANSION", 9)) {
			if (i + 1 == op->argc) {
				set_error(r, "ERR", "no expansion");
				return;
			}
			if (arg_ll(op->argv[i + 1], op->argl[i + 1], &exp) ==
			    -1 || exp < 1) {
				set_error(r, "ERR", "bad expansion");
				return;
			}
			has_exp = 1;
			i++;
		} else {
			set_error(r, "ERR", "syntax error");
			return;
		}
	}
	if (nonscaling && has_exp) {
		set_bare(r, "Nonscaling filters cannot expand");
		return;
	}
	if (registry_find(c->srv->reg, op->argv[1], op->argl[1]) != NULL) {
		set_error(r, "ERR", "item exists");
		return;
	}
	if (create_filter(c, op, cap, rate, nonscaling ? 0 : exp, r) != NULL)
		set_status(r, "OK");
}

/* BF.INSERT f [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
 * [NONSCALING] ITEMS a b ... */
static void
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
			if (arg_ll(op->argv[i + 1], op->argl[i + 1],
			    &cap) == -1) {
				set_bare(r, "Bad capacity");
				return;
			}
			i++;
		} else if (name_is(w, l, "ERROR", 5) && !last) {
			if (arg_double(op->argv[i + 1], op->argl[i + 1],
			    &rate) == -1) {
				set_bare(r, "Bad error rate");
				return;
			}
			i++;
		} else if (name_is(w, l, "EXPANSION", 9) && !last) {
			if (arg_ll(op->argv[i + 1], op->argl[i + 1],
			    &exp) == -1) {
				set_bare(r, "Bad expansion");
				return;
			}
			i++;
		} else if (last && (name_is(w, l, "CAPACITY", 8) ||
		    name_is(w, l, "ERROR", 5) || name_is(w, l, "EXPANSION", 9))) {
			set_error(r, "ERR", "wrong number of arguments for "
			    "'bf.insert' command");
			return;
		} else {
			set_bare(r, "Unknown argument received");
			return;
		}
	}
	if (items == 0 || items >= op->argc) {
		set_error(r, "ERR", "wrong number of arguments for 'bf.insert' "
		    "command");
		return;
	}
	if (!(rate > 0 && rate < 1) || cap < 1 || exp < 1) {
		set_bare(r, "Bad argument received");
		return;
	}
	if ((f = registry_find(c->srv->reg, op->argv[1], op->argl[1])) ==
	    NULL) {
		if (nocreate) {
			set_error(r, "ERR", "not found");
			return;
		}
		if (!cfg->create_filters) {
			(void)named_filter(c, op, 1, r);
			return;
		}
		if ((f = create_filter(c, op, cap, rate, nonscaling ? 0 : exp,
		    r)) == NULL)
			return;
	}
	if ((a = answers(r, (size_t)(op->argc - items))) == NULL) {
		set_error(r, "ERR", "out of memory");
		return;
	}
	for (i = items; i < op->argc; i++) {
		int hit = dedup_key(c, f, op->argv[i], op->argl[i], 0, r);

		if (hit == FILTER_FULL)
			return;
		a[i - items] = (uint8_t)!hit;
	}
}

/* BF.INFO f [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION] */
static void
cmd_bf_info(struct conn *c, struct op *op, struct result *r)
{
	static const char *names[] = { "Capacity", "Size", "Number of filters",
	    "Number of items inserted", "Expansion rate" };
	static const char *words[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS",
	    "EXPANSION" };
	struct filter	*f = named_filter(c, op, 0, r);
	long long	 v[5];
	int		 one = -1;

	if (f == NULL) {
		set_error(r, "ERR", "not found");
		return;
	}
	if (op->argc == 3) {
		for (int i = 0; i < 5; i++)
			if (name_is(op->argv[2], op->argl[2], words[i],
			    strlen(words[i])))
				one = i;
		if (one < 0) {
			set_bare(r, "Invalid information value");
			return;
		}
	}
	v[0] = (long long)f->capacity;
	v[1] = (long long)filter_bytes(f);
	v[2] = (long long)f->nslices;
	v[3] = (long long)filter_count(f);
	v[4] = (long long)f->growth;
	scratch_reset();
	if (one >= 0) {
		resp_add_array(&scratch, 1);
		resp_add_int(&scratch, v[one]);
	} else {
		resp_add_array(&scratch, 10);
		for (int i = 0; i < 5; i++) {
			resp_add_status(&scratch, names[i]);
			resp_add_int(&scratch, v[i]);
		}
	}
	set_scratch(r, RESULT_ARRAY);
}

/*
 * DEL f ...: drops runtime filters and their snapshot files; :n dropped.
 * A filter from the config file among them is an error, and nothing is
 * dropped.
 */
static void
cmd_del(struct conn *c, struct op *op, struct result *r)
{
	struct registry	*reg = c->srv->reg;
	struct filter	*f;
	char		 path[4096];
	long long	 n = 0;

	for (int i = 1; i < op->argc; i++) {
		f = registry_find(reg, op->argv[i], op->argl[i]);
		if (f != NULL && !f->runtime) {
			set_error(r, "ERR", "filter %s is in the config file: "
			    "remove its section and reload to drop it",
			    f->name);
			return;
		}
	}
	for (int i = 1; i < op->argc; i++) {
		if ((f = registry_find(reg, op->argv[i], op->argl[i])) == NULL)
			continue;
		registry_remove(reg, f);
		f->deleted = 1;
		if (snapshot_path(path, sizeof(path), c->srv->cfg->data_dir,
		    f->name) == 0 && unlink(path) == -1 && errno != ENOENT)
			log_warn("filter %s: cannot remove %s: %s", f->name,
			    path, strerror(errno));
		log_info("filter %s dropped by client %llu (%s)", f->name,
		    (unsigned long long)c->id, c->peer);
		filter_unref(f);
		n++;
	}
	set_int(r, n);
}

static void
cmd_select(struct conn *c, struct op *op, struct result *r)
{
	long long db;

	(void)c;
	if (arg_ll(op->argv[1], op->argl[1], &db) == -1)
		set_error(r, "ERR", "value is not an integer or out of range");
	else if (db != 0)
		set_error(r, "ERR", "DB index is out of range");
	else
		set_status(r, "OK");
}

/* CLIENT SETNAME/GETNAME; other subcommands as Redis refuses unknown ones */
static void
cmd_client(struct conn *c, struct op *op, struct result *r)
{
	const char	*s = op->argv[1];
	size_t		 l = op->argl[1];

	if (name_is(s, l, "SETNAME", 7) && op->argc == 3) {
		char *name = NULL;

		for (size_t i = 0; i < op->argl[2]; i++)
			if (op->argv[2][i] < '!' || op->argv[2][i] > '~') {
				set_error(r, "ERR", "Client names cannot "
				    "contain spaces, newlines or special "
				    "characters.");
				return;
			}
		if (op->argl[2] > 0 &&
		    (name = strndup(op->argv[2], op->argl[2])) == NULL) {
			set_error(r, "ERR", "out of memory");
			return;
		}
		free(c->name);
		c->name = name;
		set_status(r, "OK");
	} else if (name_is(s, l, "GETNAME", 7) && op->argc == 2) {
		if (c->name == NULL)
			r->kind = RESULT_NULL;
		else {
			r->kind = RESULT_BULK;
			r->text = c->name;
			r->len = strlen(c->name);
		}
	} else if (name_is(s, l, "SETNAME", 7) || name_is(s, l, "GETNAME", 7))
		set_error(r, "ERR", "wrong number of arguments for 'client|%s' "
		    "command", name_is(s, l, "SETNAME", 7) ? "setname" :
		    "getname");
	else
		set_error(r, "ERR", "unknown subcommand '%.*s'. Try CLIENT HELP.",
		    (int)(l < 128 ? l : 128), s);
}

/* COMMAND, COMMAND DOCS: an empty table (redis-cli copes); COUNT. */
static void
cmd_command(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	if (op->argc >= 2 && name_is(op->argv[1], op->argl[1], "COUNT", 5)) {
		size_t n = 0;

		for (size_t i = 0; i < NCOMMANDS; i++)
			n += (commands[i].proto & COMMAND_RESP) != 0;
		set_int(r, (long long)n);
		return;
	}
	if (op->argc >= 2 && !name_is(op->argv[1], op->argl[1], "DOCS", 4) &&
	    !name_is(op->argv[1], op->argl[1], "INFO", 4)) {
		set_error(r, "ERR", "unknown subcommand '%.*s'. Try COMMAND "
		    "HELP.", (int)(op->argl[1] < 128 ? op->argl[1] : 128),
		    op->argv[1]);
		return;
	}
	scratch_reset();
	resp_add_array(&scratch, 0);
	set_scratch(r, RESULT_ARRAY);
}

/* CONFIG GET: what redis-benchmark asks (save, appendonly) as an
 * persistence-free Redis answers; anything else is not there. */
static void
cmd_config(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	if (!name_is(op->argv[1], op->argl[1], "GET", 3)) {
		set_error(r, "ERR", "unknown subcommand '%.*s'. Try CONFIG HELP.",
		    (int)(op->argl[1] < 128 ? op->argl[1] : 128), op->argv[1]);
		return;
	}
	if (op->argc < 3) {
		set_error(r, "ERR", "wrong number of arguments for 'config|get' "
		    "command");
		return;
	}
	scratch_reset();
	if (op->argc == 3 && name_is(op->argv[2], op->argl[2], "SAVE", 4)) {
		resp_add_array(&scratch, 2);
		resp_add_bulk(&scratch, "save", 4);
		resp_add_bulk(&scratch, "", 0);
	} else if (op->argc == 3 && name_is(op->argv[2], op->argl[2],
	    "APPENDONLY", 10)) {
		resp_add_array(&scratch, 2);
		resp_add_bulk(&scratch, "appendonly", 10);
		resp_add_bulk(&scratch, "no", 2);
	} else
		resp_add_array(&scratch, 0);
	set_scratch(r, RESULT_ARRAY);
}

/* The keys all filters answered new: Redis's key count, near enough. */
static void
cmd_dbsize(struct conn *c, struct op *op, struct result *r)
{
	const struct registry	*reg = c->srv->reg;
	long long		 n = 0;

	(void)op;
	for (size_t i = 0; i < reg->nfilters; i++)
		n += (long long)filter_count(reg->filters[i]);
	set_int(r, n);
}

/* HELLO [2]: RESP2 only; HELLO 3 is refused so clients stay on RESP2. */
static void
cmd_hello(struct conn *c, struct op *op, struct result *r)
{
	long long v = 2;

	if (op->argc >= 2 && (arg_ll(op->argv[1], op->argl[1], &v) == -1)) {
		set_error(r, "ERR", "Protocol version is not an integer or out "
		    "of range");
		return;
	}
	if (v != 2) {
		set_error(r, "NOPROTO", "unsupported protocol version");
		return;
	}
	if (op->argc > 2) {
		set_error(r, "ERR", "syntax error");
		return;
	}
	scratch_reset();
	resp_add_array(&scratch, 14);
	resp_add_bulk(&scratch, "server", 6);
	resp_add_bulk(&scratch, "seend", 5);
	resp_add_bulk(&scratch, "version", 7);
	resp_add_bulk(&scratch, PACKAGE_VERSION, strlen(PACKAGE_VERSION));
	resp_add_bulk(&scratch, "proto", 5);
	resp_add_int(&scratch, 2);
	resp_add_bulk(&scratch, "id", 2);
	resp_add_int(&scratch, (long long)c->id);
	resp_add_bulk(&scratch, "mode", 4);
	resp_add_bulk(&scratch, "standalone", 10);
	resp_add_bulk(&scratch, "role", 4);
	resp_add_bulk(&scratch, "master", 6);
	resp_add_bulk(&scratch, "modules", 7);
	resp_add_array(&scratch, 0);
	set_scratch(r, RESULT_ARRAY);
}

static void
filter_line(const struct filter *f)
{
	buf_printf(&scratch, "%s capacity=%llu error_rate=%g count=%llu "
	    "bytes=%llu slices=%zu\r\n", f->name,
	    (unsigned long long)f->capacity, f->error_rate,
	    (unsigned long long)filter_count(f),
	    (unsigned long long)filter_bytes(f), f->nslices);
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
info_filter(const struct filter *f)
{
	const struct slice	*h = f->head;
	double			 bits = (double)filter_bytes(f) * 8;
	uint64_t		 bits_set = 0, cap = filter_slice_capacity(f);
	char			 g[16];

	for (size_t i = 0; i < f->nslices; i++)
		bits_set += f->slices[i]->bloom.bits_set;
	buf_printf(&scratch,
	    "name %s\r\n"
	    "capacity %llu\r\n"
	    "error_rate %g\r\n"
	    "growth %s\r\n"
	    "expire %lld\r\n"
	    "normalize %s\r\n"
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
	    f->normalize ? "standard" : "off", filter_state_name(filter_state(f)),
	    (unsigned long long)filter_count(f), f->nslices,
	    (unsigned long long)cap, bits, (unsigned long long)filter_bytes(f),
	    (unsigned long long)filter_mapped(f),
	    cap ? bits / (double)cap : 0.0, h ? h->bloom.hashes : 0,
	    (unsigned long long)bits_set, bits > 0 ? (double)bits_set / bits :
	    0.0, filter_fp_estimate(f), filter_fp_planned(f),
	    (unsigned long long)f->seen_new, (unsigned long long)f->seen_old,
	    (unsigned long long)f->checks, (unsigned long long)f->refused);
	buf_printf(&scratch,
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

static void
info_server(struct server *srv)
{
	const struct stats	*st = &srv->stats;
	const struct registry	*reg = srv->reg;
	time_t			 now = time(NULL);
	buf_printf(&scratch,
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
		buf_printf(&scratch, "cmd_%s %llu\r\n", name,
		    (unsigned long long)st->by_cmd[i]);
	}
	buf_printf(&scratch,
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
	    server_rss_bytes(),
	    saver_busy(srv->saver), (long long)srv->last_reload,
	    srv->last_reload_ok < 0 ? "none" :
	    srv->last_reload_ok ? "ok" : "failed");
	persist_info(srv, &scratch);
}

static void
cmd_filters(struct conn *c, struct op *op, struct result *r)
{
	const struct registry *reg = c->srv->reg;

	scratch_reset();
	for (size_t i = 0; i < reg->nfilters; i++)
		filter_line(reg->filters[i]);
	set_scratch(r, op->proto == COMMAND_RESP ? RESULT_BULK : RESULT_TEXT);
}

static void
cmd_info(struct conn *c, struct op *op, struct result *r)
{
	struct filter	*f;
	char		 tok[80];

	scratch_reset();
	if (op->argc == 2 && (f = registry_find(c->srv->reg, op->argv[1],
	    op->argl[1])) != NULL)
		info_filter(f);
	else if (op->argc == 2 && op->proto == COMMAND_LINE) {
		set_error(r, "ERR", "no such filter '%s'",
		    printable(op->argv[1], op->argl[1], tok, sizeof(tok)));
		return;
	} else if (op->argc > 2 || (op->argc == 2 &&
	    !name_is(op->argv[1], op->argl[1], "SERVER", 6) &&
	    !name_is(op->argv[1], op->argl[1], "ALL", 3) &&
	    !name_is(op->argv[1], op->argl[1], "DEFAULT", 7) &&
	    !name_is(op->argv[1], op->argl[1], "EVERYTHING", 10) &&
	    !name_is(op->argv[1], op->argl[1], "SEEND", 5))) {
		/* Redis answers an unknown section with nothing */
		r->kind = RESULT_BULK;
		r->text = "";
		r->len = 0;
		return;
	} else
		info_server(c->srv);
	set_scratch(r, RESULT_TEXT);
}

/*
 * SAVE answers only once every file is written and fsynced, so the
 * connection waits (its later requests too, to keep replies in order)
 * while the worker thread writes; other clients are served meanwhile.
 * The result is a wait token the connection holds until it completes.
 */
static void
cmd_save(struct conn *c, struct op *op, struct result *r)
{
	struct server		*srv = c->srv;
	struct save_wait	*w;
	struct filter		*one = NULL;
	char			 tok[80];

	if (op->argc == 2 &&
	    (one = registry_find(srv->reg, op->argv[1], op->argl[1])) == NULL) {
		set_error(r, "ERR", "no such filter '%s'",
		    printable(op->argv[1], op->argl[1], tok, sizeof(tok)));
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		set_error(r, "ERR", "out of memory");
		return;
	}
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
			set_error(r, "ERR", "out of memory");
		else
			set_status(r, "OK");
		return;
	}
	r->kind = RESULT_WAIT;
	r->wait = w;
}

static void
cmd_quit(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	(void)op;
	set_status(r, "OK");
	r->close = 1;
}
