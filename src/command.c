/*
 * command.c - the command table, dispatch, SEEN/CHECK and the fast paths
 * of simple requests, for the line protocol and RESP alike.
 *
 * Adding a command is one table entry and one function (in the cmd_*.c
 * file of what it acts on, see handler.h); the dispatcher never grows. A
 * handler fills a struct result; result_encode writes it in the protocol
 * of the connection (result.h).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "acl.h"
#include "bloom.h"
#include "cluster.h"
#include "cluster_map.h"
#include "keyslot.h"
#include "command.h"
#include "config.h"
#include "session.h"
#include "handler.h"
#include "journal.h"
#include "log.h"
#include "persist.h"
#include "pubsub.h"
#include "registry.h"
#include "resp.h"
#include "saver.h"
#include "core.h"
#include "snapshot.h"

/*
 * Line commands first, SEEN first of all: a line lookup stops early. The
 * RESP arities are Redis's (and RedisBloom's), so the "wrong number of
 * arguments" answers match. An entry without hooks leaves them out (NULL):
 * hence the pragma, -Wextra would ask every entry for them.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct command commands[] = {
	{ "SEEN",	"seen",	CMD_SEEN,	1, 2, LINE, 0, cmd_seen, 1 },
	{ "CHECK",	"check", CMD_CHECK,	1, 2, LINE, 0, cmd_seen, 0 },
	{ "PING",	"ping",	CMD_PING,	0, 0, LINE, 0, cmd_ping, 0 },
	/* AUTH <token>, or AUTH <user> <password> (users, acl.h) */
	{ "AUTH",	"auth",	CMD_AUTH,	1, 2, LINE, 1, cmd_auth, 0 },
	{ "FILTERS",	"filters", CMD_FILTERS,	0, 0, BOTH, 0, cmd_filters, 0 },
	{ "INFO",	"info",	CMD_INFO,	0, 1, LINE, 0, cmd_info, 0 },
	{ "SAVE",	"save",	CMD_SAVE,	0, 1, LINE, 0, cmd_save, 0 },
	{ "QUIT",	"quit",	CMD_QUIT,	0, 0, LINE, 1, cmd_quit, 0 },
	/* not a write: Redis stops a replica with it too */
	{ "SHUTDOWN",	"shutdown", CMD_COUNT,	0, -1, BOTH, 0, cmd_shutdown, 0 },
	{ "RESET",	"reset", CMD_COUNT,	1, 1, LINE, 0, cmd_reset, 1 },
	{ "FORGET",	"forget", CMD_COUNT,	1, 2, BOTH, 0, cmd_forget, 1 },
	/* RESP: the hot ones first */
	{ "SETNX",	"setnx", CMD_SEEN,	2, 2, RESP, 0, cmd_setnx, 1 },
	{ "SADD",	"sadd",	CMD_SEEN,	2, -1, RESP, 0, cmd_sadd, 1 },
	{ "BF.ADD",	"bf.add", CMD_SEEN,	2, 2, RESP, 0, cmd_bf_add, 1 },
	{ "BF.MADD",	"bf.madd", CMD_SEEN,	2, -1, RESP, 0, cmd_bf_madd, 1 },
	{ "SET",	"set",	CMD_SEEN,	2, -1, RESP, 0, cmd_set, 1 },
	{ "GET",	"get",	CMD_CHECK,	1, 1, RESP, 0, cmd_get, 0 },
	{ "MGET",	"mget",	CMD_CHECK,	1, -1, RESP, 0, cmd_mget, 0 },
	{ "EXISTS",	"exists", CMD_CHECK,	1, -1, RESP, 0, cmd_exists, 0 },
	{ "SISMEMBER",	"sismember", CMD_CHECK,	2, 2, RESP, 0, cmd_sismember, 0 },
	{ "SMISMEMBER",	"smismember", CMD_CHECK, 2, -1, RESP, 0,
	    cmd_sismember, 0 },
	{ "BF.EXISTS",	"bf.exists", CMD_CHECK,	2, 2, RESP, 0, cmd_bf_exists, 0 },
	{ "BF.MEXISTS",	"bf.mexists", CMD_CHECK, 2, -1, RESP, 0,
	    cmd_bf_mexists, 0 },
	{ "BF.INSERT",	"bf.insert", CMD_SEEN,	3, -1, RESP, 0, cmd_bf_insert, 1 },
	{ "SCARD",	"scard", CMD_COUNT,	1, 1, RESP, 0, cmd_scard, 0 },
	{ "BF.CARD",	"bf.card", CMD_COUNT,	1, 1, RESP, 0, cmd_bf_card, 0 },
	{ "BF.RESERVE",	"bf.reserve", CMD_COUNT, 3, 6, RESP, 0,
	    cmd_bf_reserve, 1 },
	{ "BF.INFO",	"bf.info", CMD_COUNT,	1, 2, RESP, 0, cmd_bf_info, 0 },
	{ "MERGE",	"merge", CMD_COUNT,	2, -1, BOTH, 0, cmd_merge, 1,
	    &cmd_merge_hooks },
	{ "BF.SCANDUMP", "bf.scandump", CMD_COUNT, 2, 2, RESP, 0,
	    cmd_bf_scandump, 0, &cmd_dump_hooks },
	{ "BF.LOADCHUNK", "bf.loadchunk", CMD_COUNT, 3, 3, RESP, 0,
	    cmd_bf_loadchunk, 1, &cmd_dump_hooks },
	{ "CF.SCANDUMP", "cf.scandump", CMD_COUNT, 2, 2, RESP, 0,
	    cmd_bf_scandump, 0, &cmd_dump_hooks },
	{ "CF.LOADCHUNK", "cf.loadchunk", CMD_COUNT, 3, 3, RESP, 0,
	    cmd_bf_loadchunk, 1, &cmd_dump_hooks },
	{ "CF.RESERVE",	"cf.reserve", CMD_COUNT, 2, -1, RESP, 0,
	    cmd_cf_reserve, 1 },
	{ "CF.ADD",	"cf.add", CMD_SEEN,	2, 2, RESP, 0, cmd_cf_add, 1 },
	{ "CF.ADDNX",	"cf.addnx", CMD_SEEN,	2, 2, RESP, 0, cmd_cf_add, 1 },
	{ "CF.INSERT",	"cf.insert", CMD_SEEN,	3, -1, RESP, 0, cmd_cf_insert, 1 },
	{ "CF.INSERTNX", "cf.insertnx", CMD_SEEN, 3, -1, RESP, 0,
	    cmd_cf_insert, 1 },
	{ "CF.EXISTS",	"cf.exists", CMD_CHECK,	2, 2, RESP, 0, cmd_cf_exists, 0 },
	{ "CF.MEXISTS",	"cf.mexists", CMD_CHECK, 2, -1, RESP, 0,
	    cmd_cf_mexists, 0 },
	{ "CF.DEL",	"cf.del", CMD_COUNT,	2, 2, RESP, 0, cmd_cf_del, 1 },
	{ "CF.COUNT",	"cf.count", CMD_COUNT,	2, 2, RESP, 0, cmd_cf_count, 0 },
	{ "CF.INFO",	"cf.info", CMD_COUNT,	1, 1, RESP, 0, cmd_cf_info, 0 },
	/* changes nothing: RedisBloom registers it "readonly" too */
	{ "CF.COMPACT",	"cf.compact", CMD_COUNT, 1, 1, RESP, 0,
	    cmd_cf_compact, 0 },
	{ "DEL",	"del",	CMD_COUNT,	1, -1, RESP, 0, cmd_del, 1 },
	{ "UNLINK",	"unlink", CMD_COUNT,	1, -1, RESP, 0, cmd_del, 1 },
	{ "TYPE",	"type",	CMD_COUNT,	1, 1, RESP, 0, cmd_type, 0 },
	{ "KEYS",	"keys",	CMD_COUNT,	1, 1, RESP, 0, cmd_keys, 0 },
	{ "SCAN",	"scan",	CMD_COUNT,	1, -1, RESP, 0, cmd_scan, 0 },
	{ "EXPIRE",	"expire", CMD_COUNT,	2, -1, RESP, 0, cmd_expire, 1 },
	{ "PEXPIRE",	"pexpire", CMD_COUNT,	2, -1, RESP, 0, cmd_expire, 1 },
	{ "EXPIREAT",	"expireat", CMD_COUNT,	2, -1, RESP, 0, cmd_expire, 1 },
	{ "PEXPIREAT",	"pexpireat", CMD_COUNT,	2, -1, RESP, 0, cmd_expire, 1 },
	{ "TTL",	"ttl",	CMD_COUNT,	1, 1, RESP, 0, cmd_ttl, 0 },
	{ "PTTL",	"pttl",	CMD_COUNT,	1, 1, RESP, 0, cmd_ttl, 0 },
	{ "PERSIST",	"persist", CMD_COUNT,	1, 1, RESP, 0, cmd_persist, 1 },
	{ "FLUSHALL",	"flushall", CMD_COUNT,	0, -1, RESP, 0, cmd_flushall, 1 },
	{ "FLUSHDB",	"flushdb", CMD_COUNT,	0, -1, RESP, 0, cmd_flushall, 1 },
	{ "MEMORY",	"memory", CMD_COUNT,	1, -1, RESP, 0, cmd_memory, 0 },
	{ "PING",	"ping",	CMD_PING,	0, 1, RESP, 0, cmd_ping, 0 },
	{ "ECHO",	"echo",	CMD_COUNT,	1, 1, RESP, 0, cmd_echo, 0 },
	{ "AUTH",	"auth",	CMD_AUTH,	1, -1, RESP, 1, cmd_auth, 0 },
	{ "SELECT",	"select", CMD_COUNT,	1, 1, RESP, 0, cmd_select, 0 },
	{ "QUIT",	"quit",	CMD_QUIT,	0, -1, RESP, 1, cmd_quit, 0 },
	{ "CLIENT",	"client", CMD_COUNT,	1, -1, RESP, 0, cmd_client, 0 },
	{ "COMMAND",	"command", CMD_COUNT,	0, -1, RESP, 0, cmd_command, 0 },
	{ "CONFIG",	"config", CMD_COUNT,	1, -1, RESP, 0, cmd_config, 0 },
	{ "INFO",	"info",	CMD_INFO,	0, -1, RESP, 0, cmd_info, 0 },
	{ "DBSIZE",	"dbsize", CMD_COUNT,	0, 0, RESP, 0, cmd_dbsize, 0 },
	{ "HELLO",	"hello", CMD_COUNT,	0, -1, RESP, 1, cmd_hello, 0 },
	{ "READONLY",	"readonly", CMD_COUNT,	0, 0, RESP, 0, cmd_readonly, 0 },
	{ "READWRITE",	"readwrite", CMD_COUNT,	0, 0, RESP, 0, cmd_readonly, 0 },
	/* Redis Cluster clients' (issue 33); the line protocol's CLUSTER
	 * INFO, KEYSLOT and MYID */
	{ "CLUSTER",	"cluster", CMD_COUNT,	1, -1, BOTH, 0, cmd_cluster, 0 },
	{ "ASKING",	"asking", CMD_COUNT,	0, 0, RESP, 0, cmd_asking, 0 },
	/* what Redis Sentinel sends (INTERFACE.md, "Replicas and failover") */
	{ "SUBSCRIBE",	"subscribe", CMD_COUNT,	1, -1, RESP, 0, cmd_subscribe, 0 },
	{ "UNSUBSCRIBE", "unsubscribe", CMD_COUNT, 0, -1, RESP, 0,
	    cmd_unsubscribe, 0 },
	{ "PSUBSCRIBE",	"psubscribe", CMD_COUNT, 1, -1, RESP, 0, cmd_subscribe, 0 },
	{ "PUNSUBSCRIBE", "punsubscribe", CMD_COUNT, 0, -1, RESP, 0,
	    cmd_unsubscribe, 0 },
	{ "PUBLISH",	"publish", CMD_COUNT,	2, 2, RESP, 0, cmd_publish, 0 },
	{ "MULTI",	"multi", CMD_COUNT,	0, 0, RESP, 0, cmd_multi, 0,
	    &cmd_multi_hooks },
	{ "EXEC",	"exec",	CMD_COUNT,	0, 0, RESP, 0, cmd_exec, 0 },
	{ "DISCARD",	"discard", CMD_COUNT,	0, 0, RESP, 0, cmd_discard, 0 },
	{ "ROLE",	"role",	CMD_COUNT,	0, 0, RESP, 0, cmd_role, 0 },
	{ "REPLICAOF",	"replicaof", CMD_COUNT,	2, 2, BOTH, 0, cmd_replicaof, 0 },
	{ "SLAVEOF",	"slaveof", CMD_COUNT,	2, 2, BOTH, 0, cmd_replicaof, 0 },
	{ "WAIT",	"wait",	CMD_COUNT,	2, 2, BOTH, 0, cmd_wait, 0 },
	{ "REPLCONF",	"replconf", CMD_COUNT,	0, -1, RESP, 0, cmd_replconf, 0 },
	{ "PSYNC",	"psync", CMD_COUNT,	2, 2, RESP, 0, cmd_psync, 0 },
	{ "ACL",	"acl",	CMD_COUNT,	1, -1, RESP, 0, cmd_acl, 0 },
};
#pragma GCC diagnostic pop
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))


const struct command *
command_table(size_t *n)
{
	*n = NCOMMANDS;
	return commands;
}

/*
 * The entries' hooks (struct command_hooks), each set once, in table
 * order, gathered at first use: the table's per-turn and per-session work
 * runs by walking a handful of pointers, and the dispatcher names no
 * handler. held is the set that queues a session's commands (MULTI).
 */
static struct {
	int				 ready;
	size_t				 n;
	const struct command_hooks	*list[NCOMMANDS];
	const struct command_hooks	*held;
} hooks;

static void
hooks_gather(void)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct command_hooks *h = commands[i].hooks;
		size_t j;

		if (h == NULL)
			continue;
		for (j = 0; j < hooks.n && hooks.list[j] != h; j++)
			;
		if (j < hooks.n)
			continue;
		hooks.list[hooks.n++] = h;
		if (h->queue != NULL && hooks.held == NULL)
			hooks.held = h;
	}
	hooks.ready = 1;
}

static inline void
hooks_ready(void)
{
	if (__builtin_expect(!hooks.ready, 0))
		hooks_gather();
}

/* A command refused: a session in MULTI has its EXEC abort. */
static inline void
refused(struct session *s)
{
	if (s->multi == NULL)
		return;
	hooks_ready();
	if (hooks.held != NULL && hooks.held->refuse != NULL)
		hooks.held->refuse(s);
}

void
command_session_end(struct session *s)
{
	hooks_ready();
	for (size_t i = 0; i < hooks.n; i++)
		if (hooks.list[i]->session_end != NULL)
			hooks.list[i]->session_end(s);
	pubsub_session_end(s);
	free(s->name);
	s->name = NULL;
	acl_unref(s->user);
	s->user = NULL;
}

int
command_work(struct core *core)
{
	int more = 0;

	hooks_ready();
	for (size_t i = 0; i < hooks.n; i++)
		if (hooks.list[i]->work != NULL)
			more |= hooks.list[i]->work(core);
	return more;
}

void
command_tick(struct core *core, time_t now)
{
	(void)core;
	hooks_ready();
	for (size_t i = 0; i < hooks.n; i++)
		if (hooks.list[i]->tick != NULL)
			hooks.list[i]->tick(now);
}

const char *
command_name(enum cmd_id id)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].id == id)
			return commands[i].name;
	return "?";
}

const struct command *
command_lookup(const char *tok, size_t len, int proto)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if ((commands[i].proto & proto) &&
		    proto_token_is(tok, len, commands[i].name))
			return &commands[i];
	return NULL;
}

/*
 * A token for an error message: at most 64 bytes, and bytes that would
 * break the reply line shown as '?'.
 */
const char *
command_printable(const char *tok, size_t len, char *out, size_t outlen)
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
command_prepare(struct session *s, const char *line, size_t len, struct op *op)
{
	const struct registry	*reg = s->core->reg;
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
	op->cmd = command_lookup(rq->argv[0], rq->argl[0], COMMAND_LINE);
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
	op->seed = op->filter->seed;
	/* no prefetch here: the caller issues a batch's prefetches back to
	 * back once every key is hashed (see process_input) */
}

void
command_prepare_resp(struct session *s, const struct resp_request *rr,
    struct op *op)
{
	op->proto = COMMAND_RESP;
	op->resp3 = s->resp3;
	op->status = PROTO_OK;
	op->filter = NULL;
	op->argc = rr->argc;
	op->argv = rr->argv;
	op->argl = rr->argl;
	op->cmd = command_lookup(rr->argv[0], rr->argl[0], COMMAND_RESP);
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
	result_error(r, "ERR", "unknown command '%.*s', with args beginning "
	    "with: %s", (int)(l < 128 ? l : 128), op->argv[0], args);
}

/*
 * The names of unknown commands already logged, lower case: a fixed table,
 * so that a flood of random names costs no memory (once it is full, the
 * names that follow are counted, not logged).
 */
#define UNKNOWN_NAMES		64
#define UNKNOWN_NAME_MAX	32
static char	unknown_names[UNKNOWN_NAMES][UNKNOWN_NAME_MAX + 1];
static int	unknown_nnames;

/*
 * A request for a command seend does not serve (RPUSH, HSET, EVALSHA,
 * JSON.GET...): counted, and logged once per command name, saying where
 * such data belongs. The cold path: the hot ones never come here.
 */
static void
unknown_note(struct session *s, const char *name, size_t len)
{
	char	 low[UNKNOWN_NAME_MAX + 1], tok[80];
	size_t	 n = len < UNKNOWN_NAME_MAX ? len : UNKNOWN_NAME_MAX;
	int	 i;

	s->core->stats.unknown_commands++;
	for (size_t j = 0; j < n; j++)
		low[j] = (char)(name[j] >= 'A' && name[j] <= 'Z' ?
		    name[j] | 0x20 : name[j]);
	low[n] = '\0';
	for (i = 0; i < unknown_nnames; i++)
		if (memcmp(unknown_names[i], low, n + 1) == 0)
			return;
	if (unknown_nnames == UNKNOWN_NAMES)
		return;
	memcpy(unknown_names[unknown_nnames++], low, n + 1);
	log_warn("unknown command '%s' from client %llu (%s): seend keeps "
	    "dedup sets only; queues, hashes, lists, scripts and JSON belong "
	    "in Redis (logged once per command name%s)",
	    command_printable(name, len, tok, sizeof(tok)),
	    (unsigned long long)s->id, s->peer,
	    unknown_nnames == UNKNOWN_NAMES ? "; the last one logged" : "");
}

/* ---- users: who may run what on which filter (acl.h) ---- */

/* Each entry's bit in the users' bitmaps, and those of the fast paths'
 * commands: the catalog is filled once, before any user is defined. */
static int16_t	acl_ids[NCOMMANDS];
static int	acl_ready;
static int	id_seen, id_check, id_setnx, id_sadd, id_bfadd;

static void
users_catalog(void)
{
	if (acl_ready)
		return;
	for (size_t i = 0; i < NCOMMANDS; i++)
		acl_ids[i] = (int16_t)acl_catalog_add(commands[i].lname);
	id_seen = acl_catalog_add("seen");
	id_check = acl_catalog_add("check");
	id_setnx = acl_catalog_add("setnx");
	id_sadd = acl_catalog_add("sadd");
	id_bfadd = acl_catalog_add("bf.add");
	acl_ready = 1;
}

int
command_users_load(const char *path, const char *auth_token, char *err,
    size_t errlen)
{
	users_catalog();
	return acl_configure(path, auth_token, err, errlen);
}

void
command_users_ready(void)
{
	users_catalog();
}

int
command_session_gone(const struct session *s)
{
	return s->user != NULL && acl_user_gone(s->user);
}

static inline struct acl_user *
session_user(const struct session *s)
{
	return s->user != NULL ? s->user : acl_default;
}

void
command_acl_log(const struct session *s, int reason, const char *object,
    size_t len, const char *cmd, const char *user, size_t userlen)
{
	const struct acl_user	*u = session_user(s);
	char			 info[512];

	if (user == NULL) {
		user = u->name;
		userlen = u->namelen;
	}
	snprintf(info, sizeof(info), "id=%llu addr=%s name=%s db=0 multi=%d "
	    "cmd=%s user=%s resp=%d", (unsigned long long)s->id, s->peer,
	    s->name != NULL ? s->name : "", s->multi != NULL ? 0 : -1, cmd,
	    u->name, s->resp3 ? 3 : 2);
	acl_log_add(reason, s->multi != NULL, object, len, user, userlen, info);
}

/* A refusal, worded as Redis 7.0 words it ("ERR NOPERM ..." on the line
 * protocol), logged in the ACL LOG; returns 1. */
static int
acl_refuse(struct session *s, struct op *op, struct result *r, int reason,
    const char *name, int arg)
{
	static const char *const what[] = {
		[ACL_DENIED_KEY] = "keys", [ACL_DENIED_CHANNEL] = "channels",
	};
	int line = op->proto == COMMAND_LINE;

	if (reason == ACL_DENIED_CMD) {
		command_acl_log(s, reason, name, strlen(name), op->cmd->lname,
		    NULL, 0);
		result_error(r, line ? "ERR" : "NOPERM", "%sthis user has no "
		    "permissions to run the '%s' command", line ? "NOPERM " : "",
		    name);
		return 1;
	}
	command_acl_log(s, reason, op->argv[arg], op->argl[arg], op->cmd->lname,
	    NULL, 0);
	result_error(r, line ? "ERR" : "NOPERM", "%sthis user has no "
	    "permissions to access one of the %s used as arguments", line ?
	    "NOPERM " : "", what[reason]);
	return 1;
}

/*
 * The key arguments u may not touch: the filter each names, or (a URL
 * key) the filter it routes to, against u's key patterns. Returns the
 * index of the first refused, or -1.
 */
static int
keys_refused(struct session *s, const struct op *op, const struct acl_user *u,
    int id)
{
	const struct command	*cmd = op->cmd;
	const struct registry	*reg = s->core->reg;
	int			 first, last, step, flags, route, either;

	flags = acl_catalog_keys(id, &first, &last, &step);
	if (op->proto == COMMAND_LINE && (cmd->id == CMD_SEEN ||
	    cmd->id == CMD_CHECK || cmd->fn == cmd_forget)) {
		/* [<filter>] <key> */
		first = last = step = 1;
		route = op->argc == 2;
		either = 0;
	} else {
		if (flags < 0)
			return -1;
		route = cmd->fn == cmd_setnx || cmd->fn == cmd_set ||
		    cmd->fn == cmd_get || cmd->fn == cmd_mget ||
		    cmd->fn == cmd_exists;
		/* DEL of a name that is no filter forgets a URL key */
		either = cmd->fn == cmd_del;
	}
	if (flags < 0)
		flags = 0;
	if (last < 0)
		last += op->argc;
	if (last >= op->argc)
		last = op->argc - 1;
	for (int i = first; i <= last; i += step) {
		const char	*name = op->argv[i];
		size_t		 len = op->argl[i];

		if (route || either) {
			struct filter *f = either ? registry_find(reg, name,
			    len) : NULL;

			if (f == NULL)
				f = registry_route(reg, name, len);
			if (f == NULL)
				continue;	/* the handler explains */
			name = f->name;
			len = f->namelen;
		}
		if (!acl_user_key(u, name, len, flags))
			return i;
	}
	return -1;
}

/* The channels of PUBLISH, SUBSCRIBE and PSUBSCRIBE: the index of the
 * first u may not use, or -1. */
static int
channels_refused(const struct op *op, const struct acl_user *u)
{
	const struct command *cmd = op->cmd;

	if (cmd->fn == cmd_publish)
		return acl_user_channel(u, op->argv[1], op->argl[1], 0) ? -1 : 1;
	if (cmd->fn != cmd_subscribe)
		return -1;
	for (int i = 1; i < op->argc; i++)
		if (!acl_user_channel(u, op->argv[i], op->argl[i],
		    cmd->lname[0] == 'p'))
			return i;
	return -1;
}

/*
 * seend's CLUSTER SETMAP, GETMAP, SLOTBITS, SLOTMERGE, HANDOFF,
 * RESETPART and PARTSEED are not
 * in Redis's COMMAND INFO: their permission is that of the Redis
 * subcommand of the same categories, SETSLOT's (@admin @slow @dangerous;
 * GETMAP: NODES', @slow), and a refusal
 * names them (*name). The bit of the twin, or -1.
 */
static int
cluster_sub_twin(int id, const struct op *op, const char **name)
{
	if (proto_token_is(op->argv[1], op->argl[1], "SETMAP")) {
		*name = "cluster|setmap";
		return acl_catalog_sub(id, "setslot", 7);
	}
	/* a move's steps (cluster_move.h) change or read what a node
	 * serves, as SETSLOT does */
	if (proto_token_is(op->argv[1], op->argl[1], "SLOTBITS") ||
	    proto_token_is(op->argv[1], op->argl[1], "SLOTMERGE") ||
	    proto_token_is(op->argv[1], op->argl[1], "HANDOFF")) {
		*name = proto_token_is(op->argv[1], op->argl[1], "SLOTBITS") ?
		    "cluster|slotbits" : proto_token_is(op->argv[1],
		    op->argl[1], "HANDOFF") ? "cluster|handoff" :
		    "cluster|slotmerge";
		return acl_catalog_sub(id, "setslot", 7);
	}
	/* it empties data as FLUSHALL does, on a cluster's say-so */
	if (proto_token_is(op->argv[1], op->argl[1], "RESETPART")) {
		*name = "cluster|resetpart";
		return acl_catalog_sub(id, "setslot", 7);
	}
	if (proto_token_is(op->argv[1], op->argl[1], "GETMAP") ||
	    proto_token_is(op->argv[1], op->argl[1], "PARTSEED")) {
		*name = proto_token_is(op->argv[1], op->argl[1], "GETMAP") ?
		    "cluster|getmap" : "cluster|partseed";
		return acl_catalog_sub(id, "nodes", 5);
	}
	return -1;
}

/*
 * Whether s's user may not run op (the error in r), as Redis's
 * ACLCheckAllPerm: the command's bit (a container's: its subcommand's),
 * then the filters it names, then its channels. Only called while some
 * user has limits (acl_limits).
 */
static int __attribute__((noinline))
acl_refused(struct session *s, struct op *op, struct result *r)
{
	const struct command	*cmd = op->cmd;
	struct acl_user		*u = session_user(s);
	const char		*name = NULL;
	int			 id, k;

	if (s->user == NULL && !cmd->before_auth && acl_default_needs_auth() &&
	    strcmp(s->peer, "unix") != 0) {
		/* the users file gave the default user a password */
		s->core->stats.auth_failures++;
		r->need_auth = 1;
		if (op->proto == COMMAND_LINE)
			result_error(r, "ERR", "authentication required");
		else
			result_error(r, "NOAUTH", "Authentication required.");
		return 1;
	}
	/* AUTH, HELLO, QUIT: Redis's no-auth commands need no permission */
	if (acl_user_unrestricted(u) || cmd->before_auth)
		return 0;
	id = acl_ids[cmd - commands];
	if (id >= 0 && op->argc >= 2 && acl_catalog_container(id) &&
	    (k = acl_catalog_sub(id, op->argv[1], op->argl[1])) >= 0)
		id = k;
	else if (cmd->fn == cmd_cluster && op->argc >= 2 &&
	    (k = cluster_sub_twin(id, op, &name)) >= 0)
		id = k;
	if (id < 0 || !acl_user_can(u, id))
		return acl_refuse(s, op, r, ACL_DENIED_CMD, name != NULL ? name :
		    id >= 0 ? acl_catalog_name(id) : cmd->lname, 0);
	if (!(u->flags & ACL_USER_ALLKEYS) &&
	    (k = keys_refused(s, op, u, id)) >= 0)
		return acl_refuse(s, op, r, ACL_DENIED_KEY, NULL, k);
	/* CLUSTER RESETPART empties the filter it names, as DEL would: a
	 * key of the user's patterns (its twin, SETSLOT, has none) */
	if (!(u->flags & ACL_USER_ALLKEYS) && name != NULL && op->argc >= 3 &&
	    strcmp(name, "cluster|resetpart") == 0 &&
	    !acl_user_key(u, op->argv[2], op->argl[2], ACL_KEY_WRITE))
		return acl_refuse(s, op, r, ACL_DENIED_KEY, NULL, 2);
	if (!(u->flags & ACL_USER_ALLCHANNELS) &&
	    (k = channels_refused(op, u)) >= 0)
		return acl_refuse(s, op, r, ACL_DENIED_CHANNEL, NULL, k);
	return 0;
}

/* What the fast paths may answer for a session (fast_allowed). */
enum fast {
	FAST_NONE,		/* nothing: the general path checks, explains */
	FAST_EACH_FILTER,	/* on the filters its key patterns allow */
	FAST_ANY_FILTER,	/* on every filter */
};

/*
 * Whether the fast paths may answer command id for s: its user has no
 * limits or may run id on every filter (FAST_ANY_FILTER), or may run id
 * on some filters (FAST_EACH_FILTER: fast_filter checks each filter a
 * batch meets, once, so that a crawler kept to ~crawl* keeps the batch).
 */
static enum fast
fast_allowed(const struct session *s, int id)
{
	const struct acl_user *u = session_user(s);

	if (s->user == NULL && acl_default_needs_auth())
		return FAST_NONE;
	if (acl_user_unrestricted(u))
		return FAST_ANY_FILTER;
	if (id < 0 || !acl_user_can(u, id))
		return FAST_NONE;
	return acl_user_all_keys(u, ACL_KEY_READ | ACL_KEY_WRITE) ?
	    FAST_ANY_FILTER : FAST_EACH_FILTER;
}

/* ---- cluster mode with a map: the slots this node serves (issue 33) ---- */

/* A command whose arguments after the filter's name are its URLs. */
static int
is_member_command(const struct command *cmd)
{
	command_fn fn = cmd->fn;

	return fn == cmd_sadd || fn == cmd_sismember || fn == cmd_bf_add ||
	    fn == cmd_bf_madd || fn == cmd_bf_exists || fn == cmd_bf_mexists ||
	    fn == cmd_cf_add || fn == cmd_cf_exists || fn == cmd_cf_mexists ||
	    fn == cmd_cf_count || fn == cmd_cf_del;
}

/*
 * The key arguments of op as the cluster places them: the last argument
 * of a line SEEN, CHECK or FORGET (the URL), else the command table's key
 * positions (COMMAND INFO's, a container's from its subcommand): the URL
 * of SETNX, SET, GET, MGET, EXISTS, the filter's name of SADD, BF.*, CF.*,
 * DEL... 0 with *first.. set, -1 for a command without keys.
 */
static int
cluster_keys(const struct session *s, const struct op *op, int *first,
    int *last, int *step)
{
	const struct command	*cmd = op->cmd;
	const struct filter	*f;
	int			 id, k;

	if (op->proto == COMMAND_LINE && (cmd->id == CMD_SEEN ||
	    cmd->id == CMD_CHECK || cmd->fn == cmd_forget)) {
		*first = *last = op->argc - 1;
		*step = 1;
		return 0;
	}
	users_catalog();
	id = acl_ids[cmd - commands];
	if (id >= 0 && op->argc >= 2 && acl_catalog_container(id) &&
	    (k = acl_catalog_sub(id, op->argv[1], op->argl[1])) >= 0)
		id = k;
	if (acl_catalog_keys(id, first, last, step) < 0)
		return -1;
	if (*last < 0)
		*last += op->argc;
	if (*last >= op->argc)
		*last = op->argc - 1;
	/* a filter partitioned by slot is asked on the node of each URL's
	 * slot: its members are the keys, not its name */
	if (is_member_command(cmd) && op->argc > *first + 1 &&
	    (f = registry_find(s->core->reg, op->argv[*first],
	    op->argl[*first])) != NULL && f->slot_major) {
		*first += 1;
		*last = op->argc - 1;
		*step = 1;
	}
	return 0;
}

/* Whether this node replicates the map's node owner: a replica of it in
 * the map, or by REPLICAOF (its primary's ID from the handshake). */
static int
replica_of(const struct core *core, unsigned owner)
{
	const struct cluster		*cl = core->cluster;
	const struct cluster_map	*m = cl->map;

	return m->nodes[cl->me].primary == (int)owner || (core->repl.replica &&
	    strcmp(core->repl.primary_id, m->nodes[owner].id) == 0);
}

/*
 * Whether op's keys are not served here (the redirection in r), as Redis
 * Cluster's getNodeByQuery: keys of two slots are CROSSSLOT, a slot
 * nobody owns CLUSTERDOWN, a slot of another node MOVED to it, but for
 * the reads of a READONLY session on a replica of its owner. Only called
 * while this node holds a map (cluster_routing); nothing is touched.
 */
static int __attribute__((noinline))
cluster_refused(struct session *s, struct op *op, struct result *r)
{
	const struct cluster	*cl = s->core->cluster;
	const struct cluster_node *x;
	int			 line = op->proto == COMMAND_LINE;
	int			 first, last, step;
	unsigned		 slot = 0, owner;

	if (cluster_keys(s, op, &first, &last, &step) == -1 ||
	    first >= op->argc)
		return 0;
	for (int i = first; i <= last; i += step) {
		unsigned k = keyslot_of(op->argv[i], op->argl[i]);

		if (i > first && k != slot) {
			result_error(r, line ? "ERR" : "CROSSSLOT", "%sKeys in "
			    "request don't hash to the same slot", line ?
			    "CROSSSLOT " : "");
			return 1;
		}
		slot = k;
	}
	if ((owner = cl->owner[slot]) == cl->me)
		return 0;
	/* being handed over (cluster_move.h): nothing is recorded here now,
	 * and the new owner serves it once the map says so */
	if (owner == CLUSTER_PAUSED) {
		result_error(r, line ? "ERR" : "TRYAGAIN", "%sHash slot %u is "
		    "being handed over to another node, try again", line ?
		    "TRYAGAIN " : "", slot);
		return 1;
	}
	if (owner == CLUSTER_NO_NODE) {
		result_error(r, line ? "ERR" : "CLUSTERDOWN", "%sHash slot not "
		    "served", line ? "CLUSTERDOWN " : "");
		return 1;
	}
	if (s->readonly && !op->cmd->write && replica_of(s->core, owner))
		return 0;
	x = &cl->map->nodes[owner];
	s->core->stats.cluster_redirections++;
	result_error(r, line ? "ERR" : "MOVED", "%s%u %s:%u", line ? "MOVED " :
	    "", slot, x->host, s->tls && x->tls_port != 0 ? x->tls_port :
	    x->port);
	return 1;
}

/* Whether the fast paths may answer key here: this node owns its slot,
 * which *slot is set to (a slot-major filter's hash carries it). */
static inline int
cluster_serves(const struct session *s, const char *key, size_t len,
    int *slot)
{
	*slot = (int)keyslot_of(key, len);
	return cluster_owns(s->core->cluster, (unsigned)*slot);
}

/*
 * A RESP request of a session in MULTI or subscribed in RESP2: refused
 * (the pub/sub context), queued (MULTI), or 0: run as usual.
 */
static int
general_request(struct session *s, struct op *op, struct result *r)
{
	const struct command *cmd = op->cmd;
	command_fn fn = cmd->fn;

	/* what a subscribed RESP2 session may send, and what runs at once
	 * inside MULTI, as Redis has them */
	if (s->nsubs != 0 && !s->resp3 && fn != cmd_subscribe &&
	    fn != cmd_unsubscribe && fn != cmd_ping && fn != cmd_quit) {
		result_error(r, "ERR", "Can't execute '%s': only (P|S)SUBSCRIBE "
		    "/ (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
		    "this context", cmd->lname);
		refused(s);
		return 1;
	}
	/* Redis's no_multi commands (SHUTDOWN) */
	if (s->multi != NULL && fn == cmd_shutdown) {
		result_error(r, "ERR", "Command not allowed inside a "
		    "transaction");
		refused(s);
		return 1;
	}
	if (s->multi != NULL && fn != cmd_multi && fn != cmd_exec &&
	    fn != cmd_discard && fn != cmd_quit) {
		hooks_ready();
		hooks.held->queue(s, op, r);
		return 1;
	}
	return 0;
}

void
command_run(struct session *s, struct op *op, struct result *r)
{
	struct stats		*st = &s->core->stats;
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
			result_error(r, "ERR", "request contains a NUL byte");
			return;
		case PROTO_TOO_MANY:
			st->commands++;
			result_error(r, "ERR", "too many arguments");
			return;
		case PROTO_OK:
			break;
		}
		st->commands++;
		if (cmd == NULL) {
			if (!s->authed)
				goto need_auth;
			unknown_note(s, op->argv[0], op->argl[0]);
			result_error(r, "ERR", "unknown command '%s'",
			    command_printable(op->argv[0], op->argl[0], tok,
			    sizeof(tok)));
			return;
		}
		if (!s->authed && !cmd->before_auth)
			goto need_auth;
		if (cmd->id < CMD_COUNT)	/* RESET has no counter */
			st->by_cmd[cmd->id]++;
		if (n < cmd->min_args ||
		    (cmd->max_args >= 0 && n > cmd->max_args)) {
			result_error(r, "ERR", "wrong number of arguments for '%s'",
			    cmd->name);
			return;
		}
		if (__builtin_expect(acl_limits, 0) && acl_refused(s, op, r))
			return;
		if (__builtin_expect(cluster_routing, 0) &&
		    cluster_refused(s, op, r))
			return;
		if (cmd->write && s->core->repl.replica) {
			result_error(r, "ERR", "%s", READONLY_TEXT);
			return;
		}
		cmd->fn(s, op, r);
		return;
	}
	/* RESP, in Redis's order: unknown, arity, then authentication */
	st->commands++;
	if (cmd == NULL) {
		unknown_note(s, op->argv[0], op->argl[0]);
		unknown_resp(op, r);
		refused(s);
		return;
	}
	if (n < cmd->min_args || (cmd->max_args >= 0 && n > cmd->max_args)) {
		result_error(r, "ERR", "wrong number of arguments for '%s' command",
		    cmd->lname);
		refused(s);
		return;
	}
	if (!s->authed && !cmd->before_auth) {
		st->auth_failures++;
		r->need_auth = 1;
		result_error(r, "NOAUTH", "Authentication required.");
		refused(s);
		return;
	}
	/* users: one predictable branch while no user has limits */
	if (__builtin_expect(acl_limits, 0) && acl_refused(s, op, r)) {
		refused(s);
		return;
	}
	/* cluster mode with a map: one predictable branch otherwise */
	if (__builtin_expect(cluster_routing, 0) && cluster_refused(s, op, r)) {
		refused(s);
		return;
	}
	if (__builtin_expect(session_general(s), 0) &&
	    general_request(s, op, r))
		return;
	if (cmd->write && s->core->repl.replica) {
		result_error(r, "READONLY", "%s", READONLY_TEXT + 9);
		refused(s);
		return;
	}
	if (cmd->id < CMD_COUNT && cmd->id != CMD_SEEN && cmd->id != CMD_CHECK)
		st->by_cmd[cmd->id]++;
	cmd->fn(s, op, r);
	return;

need_auth:
	st->auth_failures++;
	r->need_auth = 1;
	result_error(r, "ERR", "authentication required");
}

/*
 * A key answered new goes into the journal before its reply leaves (the
 * connection flushes replies at the end of the loop turn, after the
 * journal's write). The caller made room (persist_make_room): no system
 * call here, and nothing at all for a key already seen.
 */
static inline __attribute__((always_inline)) void
journal_key(struct core *core, struct filter *f, uint64_t h)
{
	uint64_t now = (uint64_t)filter_now_ms;

	/* apart, so that the name's length is only loaded for the slow one */
	if (core->journal != NULL &&
	    !journal_append_fast(core->journal, f->name, f->seed, h, now) &&
	    journal_append_slow(core->journal, f->name, f->namelen, f->seed, h,
	    now) == -1)
		persist_append_failed(core, f, h);
	/* and the replicas' copy, once some replica has asked for one */
	if (core->stream != NULL &&
	    !journal_append_fast(core->stream, f->name, f->seed, h, now))
		persist_stream_key(core, f, JOURNAL_OP_NEW, h);
}

/*
 * With journal = always, a SEEN the journal cannot take (a fault) is not
 * set, so that a retry once the fault is over gets an honest 0; a key
 * already held still answers. Returns 1 (error in r) if refused.
 */
static int
journal_refuses(struct session *s, struct filter *f, uint64_t h, int check,
    struct result *r)
{
	if (check || s->core->journal == NULL ||
	    persist_make_room(s->core, 1) == 0 || filter_check(f, h))
		return 0;
	f->refused++;
	result_error(r, "ERR", "journal %s", persist_reason(s->core));
	return 1;
}

/*
 * CHECK (check = 1) or SEEN of a hashed key in filter f, counted in the
 * filter's own traffic counters; returns the answer (FILTER_FULL: a SEEN
 * the filter cannot record). The server-wide counters are the caller's:
 * cmd_seen adds them per request, the simple batch once per batch.
 */
static inline __attribute__((always_inline)) int
filter_answer(struct core *core, struct filter *f, uint64_t h, int check)
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
			journal_key(core, f, h);
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
/*
 * A key a merged slice holds (MERGE) is seen, and nothing is recorded:
 * those slices are read-only. Counts it on f; 1 if it answered.
 */
static int
merged_answer(struct filter *f, uint64_t h, const char *key, size_t len,
    int check)
{
	if (!filter_merged_hit(f, h, key, len, filter_now_ms))
		return 0;
	if (check)
		f->checks++;
	else
		f->seen_old++;
	return 1;
}

int
command_dedup_key(struct session *s, struct filter *f, const char *key, size_t len,
    int check, struct result *r)
{
	struct stats	*st = &s->core->stats;
	uint64_t	 h = filter_hash(f, key, len);
	int		 hit;

	if (__builtin_expect(f->nmerged > 0, 0) &&
	    merged_answer(f, h, key, len, check)) {
		st->by_cmd[check ? CMD_CHECK : CMD_SEEN]++;
		count_answer(st, check, 1);
		return 1;
	}
	if (journal_refuses(s, f, h, check, r))
		return FILTER_FULL;
	hit = filter_answer(s->core, f, h, check);
	s->journaled |= hit == 0 && !check;
	if (hit == FILTER_FULL) {
		f->refused++;
		result_error(r, "ERR", "full %s", f->name);
		return hit;
	}
	st->by_cmd[check ? CMD_CHECK : CMD_SEEN]++;
	count_answer(st, check, hit);
	return hit;
}

/* The error of a key no filter takes. */
void
command_no_route(struct session *s, struct result *r)
{
	result_error(r, "ERR", "no filter for this key: no rule routes it and "
	    "default_filter '%s' does not exist",
	    s->core->cfg->default_filter ? s->core->cfg->default_filter : "");
}

void
cmd_seen(struct session *s, struct op *op, struct result *r)
{
	struct request	*rq = &op->req;
	struct filter	*f = op->filter;
	struct stats	*st = &s->core->stats;
	char		 tok[80];
	int		 hit, check = op->cmd->id == CMD_CHECK;

	if (f == NULL) {
		if (rq->argc == 3)
			result_error(r, "ERR", "no such filter '%s'",
			    command_printable(rq->argv[1], rq->argl[1], tok,
			    sizeof(tok)));
		else
			command_no_route(s, r);
		return;
	}
	if (__builtin_expect(op->seed != f->seed, 0))
		/* emptied (RESET) after this request was hashed, in the same
		 * batch: the filter has a new seed */
		op->hash = filter_hash(f, rq->argv[rq->argc - 1],
		    rq->argl[rq->argc - 1]);
	if (__builtin_expect(f->nmerged > 0, 0) && merged_answer(f, op->hash,
	    rq->argv[rq->argc - 1], rq->argl[rq->argc - 1], check)) {
		count_answer(st, check, 1);
		result_int(r, 1);
		return;
	}
	if (journal_refuses(s, f, op->hash, check, r))
		return;
	hit = filter_answer(s->core, f, op->hash, check);
	s->journaled |= hit == 0 && !check;
	if (hit == FILTER_FULL) {
		f->refused++;
		result_error(r, "ERR", "full %s", f->name);
		return;
	}
	count_answer(st, check, hit);
	result_int(r, hit);
}

int
command_forget_key(struct session *s, struct filter *f, const char *key,
    size_t len, struct result *r)
{
	struct core	*core = s->core;
	uint64_t	 h;

	if (!filter_is_cuckoo(f)) {
		result_error(r, "ERR", "%s cannot forget keys (type = bloom)",
		    f->name);
		return -1;
	}
	if (core->journal != NULL && persist_make_room(core, 1) == -1) {
		f->refused++;
		result_error(r, "ERR", "journal %s", persist_reason(core));
		return -1;
	}
	h = filter_hash(f, key, len);
	if (!filter_forget(f, h))
		return 0;
	persist_key_op(core, f, JOURNAL_OP_FORGET, h);
	s->journaled = 1;
	return 1;
}

int
command_add_copy(struct session *s, struct filter *f, const char *key,
    size_t len, struct result *r)
{
	struct core	*core = s->core;
	uint64_t	 h;

	if (core->journal != NULL && persist_make_room(core, 1) == -1) {
		f->refused++;
		result_error(r, "ERR", "journal %s", persist_reason(core));
		return FILTER_FULL;
	}
	h = filter_hash(f, key, len);
	if (filter_add_copy(f, h) == FILTER_FULL) {
		f->refused++;
		result_error(r, "ERR", "full %s", f->name);
		return FILTER_FULL;
	}
	f->seen_new++;
	persist_key_op(core, f, JOURNAL_OP_COPY, h);
	s->journaled = 1;
	return 0;
}

/* FORGET [<filter>] <key>: routed as SEEN is. */
void
cmd_forget(struct session *s, struct op *op, struct result *r)
{
	const struct registry	*reg = s->core->reg;
	struct filter		*f;
	char			 tok[80];
	int			 n = op->argc;

	f = n == 2 ? registry_route(reg, op->argv[1], op->argl[1]) :
	    registry_find(reg, op->argv[1], op->argl[1]);
	if (f == NULL) {
		if (n == 3)
			result_error(r, "ERR", "no such filter '%s'",
			    command_printable(op->argv[1], op->argl[1], tok,
			    sizeof(tok)));
		else
			command_no_route(s, r);
		return;
	}
	n = command_forget_key(s, f, op->argv[op->argc - 1],
	    op->argl[op->argc - 1], r);
	if (n >= 0)
		result_int(r, n);
}

/* One simple request between being hashed and being answered. */
struct simple {
	struct filter	*f;
	uint64_t	 h;
	int		 check;
	size_t		 next;		/* bytes of its line */
};

/* How a simple batch answers: line "0"/"1" (1: seen), RESP's integer for
 * SETNX/SADD/BF.ADD (1: new), or RESP3's boolean for BF.ADD (#t: new), as
 * RedisBloom 2.6 answers after HELLO 3. */
#define ANSWER_LINE	0
#define ANSWER_INT	1
#define ANSWER_BOOL	2

/* One answer of a simple batch (how: ANSWER_*, a constant wherever this
 * is inlined). Returns the end. */
static inline __attribute__((always_inline)) char *
put_answer(char *out, uint64_t hit, int resp)
{
	if (resp == ANSWER_BOOL) {
		out[0] = '#';
		out[1] = (char)(hit ? 'f' : 't');
		out[2] = '\r';
		out[3] = '\n';
		return out + 4;
	}
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
 * integers for SETNX/SADD/BF.ADD. Returns n. Made twice (ANSWER_FAST):
 * with bloom.h's scalar block operations, and with its AVX2 ones in
 * functions of that target, which the batch calls where the CPU has it.
 */
#define ANSWER_FAST(name, attrs, CHECK, ADD)				\
static inline attrs int							\
name(struct core *core, struct filter *f, struct bloom *b,		\
    const struct simple *q, int n, char *out, uint64_t *checks,		\
    uint64_t *check_hits, uint64_t *seen_hits, int resp)		\
{									\
	uint64_t	 nchecks = 0, chits = 0, shits = 0, hit;	\
									\
	for (int i = 0; i < n; i++)					\
		bloom_prefetch(b, q[i].h);				\
	for (int i = 0; i < n; i++) {					\
		if (q[i].check) {					\
			hit = (uint64_t)CHECK(b, q[i].h);		\
			nchecks++;					\
			chits += hit;					\
		} else {						\
			hit = (uint64_t)ADD(b, q[i].h);			\
			shits += hit;					\
			if (!hit)					\
				journal_key(core, f, q[i].h);		\
		}							\
		out = put_answer(out, hit, resp);			\
	}								\
	f->checks += nchecks;						\
	f->seen_old += shits;						\
	f->seen_new += (uint64_t)n - nchecks - shits;			\
	*checks += nchecks;						\
	*check_hits += chits;						\
	*seen_hits += shits;						\
	return n;							\
}

ANSWER_FAST(answer_fast, __attribute__((always_inline)), bloom_check,
    bloom_add)

#ifdef BLOOM_AVX2
ANSWER_FAST(answer_fast_avx2, __attribute__((always_inline,
    target("avx2,popcnt"))), bloom_check_avx2, bloom_add_avx2)

/* answer_fast_avx2 for each kind of answer, a constant in each */
#define ANSWER_FAST_AVX2_AS(name, how)					\
__attribute__((noinline, target("avx2,popcnt"))) static int		\
name(struct core *core, struct filter *f, struct bloom *b,		\
    const struct simple *q, int n, char *out, uint64_t *checks,		\
    uint64_t *check_hits, uint64_t *seen_hits)				\
{									\
	return answer_fast_avx2(core, f, b, q, n, out, checks,		\
	    check_hits, seen_hits, how);				\
}
ANSWER_FAST_AVX2_AS(answer_fast_avx2_line, ANSWER_LINE)
ANSWER_FAST_AVX2_AS(answer_fast_avx2_int, ANSWER_INT)
ANSWER_FAST_AVX2_AS(answer_fast_avx2_bool, ANSWER_BOOL)

/* The AVX2 batch for resp (a constant where answer_batch is inlined). */
static inline __attribute__((always_inline)) int
answer_fast_simd(struct core *core, struct filter *f, struct bloom *b,
    const struct simple *q, int n, char *out, uint64_t *checks,
    uint64_t *check_hits, uint64_t *seen_hits, int resp)
{
	if (resp == ANSWER_LINE)
		return answer_fast_avx2_line(core, f, b, q, n, out, checks,
		    check_hits, seen_hits);
	if (resp == ANSWER_INT)
		return answer_fast_avx2_int(core, f, b, q, n, out, checks,
		    check_hits, seen_hits);
	return answer_fast_avx2_bool(core, f, b, q, n, out, checks,
	    check_hits, seen_hits);
}
#endif

/*
 * answer_fast for a cuckoo filter of one slice c, not full, with room for
 * every key before its next mark: each key is located once, in the
 * prefetch pass, and answered from there. A key its table has no room for
 * (the kicks failed) ends the batch there; the general path grows the
 * filter or refuses it. Returns how many were answered.
 */
static inline __attribute__((always_inline)) int
answer_fast_cuckoo(struct core *core, struct filter *f, struct cuckoo *c,
    const struct simple *q, int n, char *out, uint64_t *checks,
    uint64_t *check_hits, uint64_t *seen_hits, int resp)
{
	struct cuckoo_at at[COMMAND_SIMPLE_BATCH];
	uint64_t	 nchecks = 0, chits = 0, shits = 0;
	int		 hit, i;

	for (i = 0; i < n; i++) {
		cuckoo_locate(c, q[i].h, &at[i]);
		cuckoo_prefetch_at(c, &at[i]);
	}
	for (i = 0; i < n; i++) {
		if (q[i].check) {
			hit = cuckoo_contains_at(c, &at[i]);
			nchecks++;
			chits += (uint64_t)hit;
		} else {
			if ((hit = cuckoo_test_add_at(c, &at[i], q[i].h)) < 0)
				break;
			shits += (uint64_t)hit;
			if (!hit)
				journal_key(core, f, q[i].h);
		}
		out = put_answer(out, (uint64_t)hit, resp);
	}
	f->checks += nchecks;
	f->seen_old += shits;
	f->seen_new += (uint64_t)i - nchecks - shits;
	*checks += nchecks;
	*check_hits += chits;
	*seen_hits += shits;
	return i;
}

/*
 * Answers the n prepared requests of a simple batch (off: the bytes they
 * take), in either protocol: each key is one Bloom filter operation when
 * they all go to one filter of one slice with room for them all, else one
 * filter_answer each. Consumes what it answered, counts it, and returns
 * how many (fewer than n if a filter is full: the general path explains).
 */
static inline __attribute__((always_inline)) int
answer_batch(struct session *s, struct buf *in, struct buf *ob,
    const struct simple *q, int n, size_t off, int uniform, int resp)
{
	struct stats	*st = &s->core->stats;
	size_t		 width = resp ? 4 : 3;
	uint64_t	 checks = 0, check_hits = 0, seen_hits = 0;
	struct bloom	*b;
	struct cuckoo	*c;
	int		 i, j;
	char		*out;

	if (n == 0 || buf_reserve(ob, width * (size_t)n) == -1)
		return 0;
	/* room in the journal for every key first; if it cannot be made
	 * (always, in a fault), the general path refuses them one by one */
	if (s->core->journal != NULL &&
	    persist_make_room(s->core, (size_t)n) == -1)
		return 0;
	out = ob->data + ob->len;
	b = q[0].f->fast;
	c = q[0].f->fast_cuckoo;
	if (uniform && b != NULL && q[0].f->next_mark - b->count > (uint64_t)n) {
		/* one filter of one slice with room for every key: each
		 * key is one Bloom filter operation, nothing else */
#ifdef BLOOM_AVX2
		if (bloom_avx2)
			i = answer_fast_simd(s->core, q[0].f, b, q, n, out,
			    &checks, &check_hits, &seen_hits, resp);
		else
#endif
			i = answer_fast(s->core, q[0].f, b, q, n, out,
			    &checks, &check_hits, &seen_hits, resp);
	} else if (uniform && c != NULL &&
	    q[0].f->next_mark - c->count > (uint64_t)n) {
		i = answer_fast_cuckoo(s->core, q[0].f, c, q, n, out, &checks,
		    &check_hits, &seen_hits, resp);
		if (i < n)	/* only the answered requests are consumed */
			for (off = 0, j = 0; j < i; j++)
				off += q[j].next;
	} else {
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
			int r = filter_answer(s->core, q[i].f, q[i].h,
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
	ob->len += width * (size_t)n;
	buf_consume(in, off);
	/* the counters command_run and cmd_seen keep, a batch at a time */
	st->commands += (uint64_t)n;
	st->by_cmd[CMD_CHECK] += checks;
	st->by_cmd[CMD_SEEN] += (uint64_t)n - checks;
	st->check_hits += check_hits;
	st->check_misses += checks - check_hits;
	st->keys_seen += seen_hits;
	st->keys_new += (uint64_t)n - checks - seen_hits;
	s->journaled |= (uint64_t)n - checks - seen_hits > 0;
	return n;
}

/*
 * FAST_EACH_FILTER: whether s's user may read and write filter f (SEEN,
 * SETNX, SADD and BF.ADD write, CHECK reads; a user allowed less goes the
 * general way, which refuses with Redis's words). *ok remembers the last
 * filter allowed, so that a batch of one filter checks it once.
 */
static inline int
fast_filter(const struct session *s, const struct filter *f,
    const struct filter **ok)
{
	if (f == *ok)
		return 1;
	if (!acl_user_key(session_user(s), f->name, f->namelen,
	    ACL_KEY_READ | ACL_KEY_WRITE))
		return 0;
	*ok = f;
	return 1;
}

int
command_run_simple(struct session *s, struct buf *in, struct buf *out,
    int max)
{
	struct simple	 q[COMMAND_SIMPLE_BATCH];
	const struct registry *reg = s->core->reg;
	const char	*p = buf_head(in), *key;
	size_t		 left = buf_used(in), off = 0, next, maxl;
	long		 klen;
	int		 n, uniform = 1, slot = -1;
	enum fast	 fast = FAST_ANY_FILTER;
	const struct filter *ok = NULL;

	/* a user with limits: what it may not run the general path checks */
	if (__builtin_expect(acl_limits, 0)) {
		enum fast fs = fast_allowed(s, id_seen);
		enum fast fc = fast_allowed(s, id_check);

		if ((fast = fs < fc ? fs : fc) == FAST_NONE)
			return 0;
	}
	maxl = s->core->cfg->max_line;
	if (max > COMMAND_SIMPLE_BATCH)
		max = COMMAND_SIMPLE_BATCH;
	for (n = 0; n < max; n++) {
		struct filter *f;

		klen = proto_simple_key(p + off, left - off, maxl, &key,
		    &q[n].check, &next);
		/* a filter with merged slices needs the key: the general
		 * path (cmd_seen) has it */
		if (klen < 0 ||
		    (f = registry_route(reg, key, (size_t)klen)) == NULL ||
		    f->nmerged > 0)
			break;	/* not simple, or an error to explain */
		if (__builtin_expect(fast == FAST_EACH_FILTER, 0) &&
		    !fast_filter(s, f, &ok))
			break;	/* refused, with Redis's words */
		/* a key of a slot served elsewhere: redirected there */
		if (__builtin_expect(cluster_routing, 0) &&
		    !cluster_serves(s, key, (size_t)klen, &slot))
			break;
		q[n].f = f;
		uniform &= f == q[0].f;
		q[n].h = filter_hash_at(f, key, (size_t)klen, slot);
		q[n].next = next;
		off += next;
	}
	return answer_batch(s, in, out, q, n, off, uniform, ANSWER_LINE);
}


int
command_run_resp_simple(struct session *s, struct buf *in, struct buf *out,
    const struct resp_limits *lim, int max)
{
	struct simple	 q[COMMAND_SIMPLE_BATCH];
	const struct registry *reg = s->core->reg;
	const char	*p = buf_head(in), *key, *name;
	size_t		 left = buf_used(in), off = 0, next, keyl, namel;
	size_t		 head = 0, prev = 0;
	struct filter	*f = NULL;
	enum resp_hot	 cmd = RESP_HOT_NONE;
	int		 n, uniform = 1, bools = -1, slot = -1;
	/* cluster mode with a map: each key's slot is checked */
	const int	 routing = cluster_routing;
	enum fast	 fast = FAST_ANY_FILTER;
	const struct filter *ok = NULL;

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
			/* a user with limits: only what it may run on
			 * every filter; the general path checks the rest */
			if (__builtin_expect(acl_limits, 0) &&
			    (fast = fast_allowed(s, cmd == RESP_HOT_SETNX ?
			    id_setnx : cmd == RESP_HOT_SADD ? id_sadd :
			    id_bfadd)) == FAST_NONE)
				break;
			/* one batch, one kind of answer: in RESP3 BF.ADD's
			 * are booleans, SETNX's and SADD's integers */
			if (bools == -1)
				bools = s->resp3 && cmd == RESP_HOT_BFADD;
			else if (bools != (s->resp3 && cmd == RESP_HOT_BFADD))
				break;
			if (cmd != RESP_HOT_SETNX)
				f = registry_find(reg, name, namel);
			/* a filter of a slot served elsewhere: redirected
			 * (the requests that repeat it, too); one
			 * partitioned by slot is routed by URL, below */
			if (__builtin_expect(routing, 0) &&
			    cmd != RESP_HOT_SETNX &&
			    !(f != NULL && f->slot_major) &&
			    !cluster_serves(s, name, namel, &slot))
				break;
		}
		if (cmd == RESP_HOT_SETNX)
			f = registry_route(reg, key, keyl);
		if (f == NULL || f->nmerged > 0 ||
		    (cmd == RESP_HOT_BFADD && filter_is_cuckoo(f)))
			break;	/* the general path explains, creates, asks
				 * merged slices or answers WRONGTYPE */
		if (__builtin_expect(fast == FAST_EACH_FILTER, 0) &&
		    !fast_filter(s, f, &ok))
			break;	/* refused, with Redis's words */
		/* a URL of a slot served elsewhere: redirected */
		slot = -1;
		if (__builtin_expect(routing, 0) && (cmd == RESP_HOT_SETNX ||
		    f->slot_major) && !cluster_serves(s, key, keyl, &slot))
			break;
		q[n].f = f;
		q[n].check = 0;
		uniform &= f == q[0].f;
		q[n].h = filter_hash_at(f, key, keyl, slot);
		q[n].next = next;
		prev = off;
		off += next;
	}
	if (bools == 1)
		return answer_batch(s, in, out, q, n, off, uniform, ANSWER_BOOL);
	return answer_batch(s, in, out, q, n, off, uniform, ANSWER_INT);
}

/* The filter a RESP command names in argv[1]; creates it (with the
 * new_filter_* settings) when create is set and create_filters is on.
 * NULL: missing, with r set if that is an error. */
struct filter *
command_named_filter(struct session *s, struct op *op, int create, struct result *r)
{
	const struct config	*cfg = s->core->cfg;
	struct filter		*f;

	f = registry_find(s->core->reg, op->argv[1], op->argl[1]);
	if (f != NULL || !create)
		return f;
	if (!cfg->create_filters) {
		result_error(r, "ERR", "no such filter '%.*s' (create_filters is "
		    "off)", (int)(op->argl[1] < 64 ? op->argl[1] : 64),
		    op->argv[1]);
		return NULL;
	}
	return command_create_filter(s, op->argv[1], op->argl[1],
	    cfg->new_filter_capacity, cfg->new_filter_error_rate,
	    cfg->new_filter_growth, FILTER_TYPE_BLOOM, 0, r);
}

/* r's error as an element of an array. */
int
command_add_error(struct buf *b, const struct result *r)
{
	char		 code[32];
	const char	*sp;
	size_t		 n;

	if (r->code != NULL)
		return resp_add_error(b, r->code, r->text, r->len);
	/* a bare text: its first word is its code */
	sp = memchr(r->text, ' ', r->len);
	n = sp != NULL ? (size_t)(sp - r->text) : r->len;
	if (n >= sizeof(code))
		n = sizeof(code) - 1;
	memcpy(code, r->text, n);
	code[n] = '\0';
	return sp != NULL ? resp_add_error(b, code, sp + 1,
	    r->len - n - 1) : resp_add_error(b, code, "", 0);
}

enum bf_status
command_typed_lookup(struct session *s, struct op *op, int type,
    struct filter **fp)
{
	*fp = registry_find(s->core->reg, op->argv[1], op->argl[1]);
	if (*fp == NULL)
		return BF_MISSING;
	if ((*fp)->type != type) {
		*fp = NULL;
		return BF_WRONGTYPE;
	}
	return BF_FOUND;
}

void
command_mexists(struct session *s, struct op *op, struct filter *f,
    struct result *r)
{
	size_t	 n = (size_t)(op->argc - 2);
	uint8_t	*a;

	if ((a = result_answers(r, n)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	r->boolean = 1;
	for (size_t i = 0; i < n; i++)
		a[i] = f != NULL ? (uint8_t)command_dedup_key(s, f,
		    op->argv[i + 2], op->argl[i + 2], 1, r) : 0;
}

struct filter *
command_create_filter(struct session *s, const char *name, size_t len,
    uint64_t capacity, double error_rate, unsigned growth, int type,
    unsigned max_kicks, struct result *r)
{
	struct core	*core = s->core;
	struct filter	*f;
	char		 err[400];

	f = registry_create_type(core->reg, core->cfg, name, len, capacity,
	    error_rate, growth, type, err, sizeof(err));
	if (f == NULL) {
		result_error(r, "ERR", "%s", err);
		return NULL;
	}
	f->max_kicks = max_kicks;
	/* replay makes it again before its keys: it has no snapshot yet */
	persist_filter_created(core, f);
	s->journaled = 1;
	log_info("%sfilter %s created by client %llu (%s)", type ==
	    FILTER_TYPE_CUCKOO ? "cuckoo " : "", f->name,
	    (unsigned long long)s->id, s->peer);
	return f;
}

/* A number as RedisBloom reads one (strtod/strtoll on the whole text). */
int
command_arg_double(const char *s, size_t len, double *v)
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

int
command_arg_ll(const char *s, size_t len, long long *v)
{
	unsigned long long	 x = 0, lim;
	size_t			 i = 0;
	int			 neg = 0;

	/* Redis's string2ll: the whole text, an optional '-', no '+', no
	 * spaces, no leading zero, within long long */
	if (len == 0 || len > 20)
		return -1;
	if (len == 1 && s[0] == '0') {
		*v = 0;
		return 0;
	}
	if (s[0] == '-') {
		neg = 1;
		if (++i == len)
			return -1;
	}
	if (s[i] < '1' || s[i] > '9')
		return -1;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (x > (lim - (unsigned)(s[i] - '0')) / 10)
			return -1;
		x = x * 10 + (unsigned)(s[i] - '0');
	}
	if (neg)
		*v = x == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN :
		    -(long long)x;
	else
		*v = (long long)x;
	return 0;
}
