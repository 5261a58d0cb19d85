/*
 * cmd_connection.c - what clients send about their connection: PING, ECHO,
 * AUTH, SELECT, CLIENT, COMMAND, CONFIG, HELLO, READONLY, QUIT.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "acl.h"
#include "command_docs.h"
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

void
cmd_ping(struct session *s, struct op *op, struct result *r)
{
	if (s->nsubs != 0 && !s->resp3 && op->proto == COMMAND_RESP) {
		/* subscribed, RESP2: ["pong", message or ""], as Redis */
		struct buf *b = result_reset();

		resp_add_array(b, 2);
		resp_add_bulk(b, "pong", 4);
		resp_add_bulk(b, op->argc == 2 ? op->argv[1] : "",
		    op->argc == 2 ? op->argl[1] : 0);
		result_scratch(r, RESULT_ARRAY);
		return;
	}
	if (op->argc == 2) {
		r->kind = RESULT_BULK;
		r->text = op->argv[1];
		r->len = op->argl[1];
	} else
		result_status(r, "PONG");
}

void
cmd_echo(struct session *s, struct op *op, struct result *r)
{
	(void)s;
	r->kind = RESULT_BULK;
	r->text = op->argv[1];
	r->len = op->argl[1];
}

/*
 * A failed login: counted, in the ACL LOG, and logged with the peer's
 * address at most once a second (a guessing client cannot fill the log),
 * with how many went unlogged since.
 */
static void
auth_failed(struct session *s, const struct op *op, const char *user,
    size_t userl)
{
	static time_t		 logged_at;
	static unsigned long	 unlogged;
	time_t			 now = time(NULL);

	s->core->stats.auth_failures++;
	s->core->stats.acl_denied_auth++;
	command_acl_log(s, ACL_DENIED_AUTH, op->argv[0], op->argl[0],
	    op->cmd->lname, user, userl);
	if (now == logged_at) {
		unlogged++;
		return;
	}
	log_warn("client %llu (%s): AUTH as '%.*s' refused: wrong password, or "
	    "no such user, or the user is off%s", (unsigned long long)s->id,
	    s->peer, (int)(userl < 64 ? userl : 64), user, unlogged ?
	    " (and more refused logins since the last line)" : "");
	if (unlogged)
		log_warn("%lu refused logins were not logged (at most one line "
		    "a second)", unlogged);
	logged_at = now;
	unlogged = 0;
}

/*
 * A login as user (NULL: "default") with pass, against the users (acl.h:
 * SHA-256 of each password, compared in constant time). Returns 1 and
 * authenticates s as that user, or 0 with the error in r: Redis 7's in
 * RESP, and on the line protocol "ERR invalid token" for AUTH <token>,
 * "ERR WRONGPASS ..." for AUTH <user> <password>.
 */
static int
auth_check(struct session *s, const struct op *op, const char *user,
    size_t userl, const char *pass, size_t passl, int resp, struct result *r)
{
	struct acl_user	*u;
	int		 named = user != NULL;

	if (!named) {
		user = "default";
		userl = 7;
	}
	if ((u = acl_login(user, userl, pass, passl)) != NULL) {
		acl_unref(s->user);
		s->user = u;
		s->authed = 1;
		s->strikes = 0;
		return 1;
	}
	auth_failed(s, op, user, userl);
	if (resp)
		result_error(r, "WRONGPASS", "invalid username-password pair or "
		    "user is disabled.");
	else if (named)
		result_error(r, "ERR", "WRONGPASS invalid username-password pair "
		    "or user is disabled.");
	else
		result_error(r, "ERR", "invalid token");
	return 0;
}

void
cmd_auth(struct session *s, struct op *op, struct result *r)
{
	int	 resp = op->proto == COMMAND_RESP, user = op->argc == 3;

	if (resp && op->argc > 3) {
		result_error(r, "ERR", "syntax error");
		return;
	}
	command_users_ready();
	if (!user && acl_default_open()) {
		s->authed = 1;
		if (!resp)
			result_error(r, "ERR", "no auth_token is configured");
		else
			result_error(r, "ERR", "AUTH <password> called without "
			    "any password configured for the default user. Are "
			    "you sure your configuration is correct?");
		return;
	}
	if (auth_check(s, op, user ? op->argv[1] : NULL, user ? op->argl[1] : 0,
	    op->argv[op->argc - 1], op->argl[op->argc - 1], resp, r))
		result_status(r, "OK");
}

void
cmd_select(struct session *s, struct op *op, struct result *r)
{
	long long db;

	(void)s;
	if (command_arg_ll(op->argv[1], op->argl[1], &db) == -1)
		result_error(r, "ERR", "value is not an integer or out of range");
	else if (db != 0)
		result_error(r, "ERR", "DB index is out of range");
	else
		result_status(r, "OK");
}

/* A client name or CLIENT SETINFO value: Redis allows no spaces, newlines
 * or other bytes outside '!'..'~'. */
static int
name_valid(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] < '!' || p[i] > '~')
			return 0;
	return 1;
}

/* Sets s's name (empty: none); 0, or -1 with the error in r. */
static int
client_setname(struct session *s, const char *p, size_t len, struct result *r)
{
	char *name = NULL;

	if (!name_valid(p, len)) {
		result_error(r, "ERR", "Client names cannot contain spaces, "
		    "newlines or special characters.");
		return -1;
	}
	if (len > 0 && (name = strndup(p, len)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return -1;
	}
	free(s->name);
	s->name = name;
	return 0;
}

/* CLIENT SETINFO LIB-NAME|LIB-VER <value>, as Redis 7.2 answers it: the
 * values are checked, and only acknowledged (nothing lists clients). */
static void
client_setinfo(struct op *op, struct result *r)
{
	const char *attr = op->argv[2];
	size_t attrl = op->argl[2];

	if (!name_is(attr, attrl, "LIB-NAME", 8) &&
	    !name_is(attr, attrl, "LIB-VER", 7)) {
		result_error(r, "ERR", "Unrecognized option '%.*s'",
		    (int)(attrl < 128 ? attrl : 128), attr);
		return;
	}
	if (!name_valid(op->argv[3], op->argl[3])) {
		result_error(r, "ERR", "%s cannot contain spaces, newlines or "
		    "special characters.", name_is(attr, attrl, "LIB-NAME", 8) ?
		    "lib-name" : "lib-ver");
		return;
	}
	result_status(r, "OK");
}

/*
 * CLIENT KILL <ip:port> (+OK, or no such client), or CLIENT KILL
 * [TYPE normal|pubsub|master|replica|slave] [ID n] [ADDR ip:port]
 * [SKIPME yes|no] (how many were closed), as Redis 7: the caller is
 * spared unless SKIPME no, and closed after its reply if not. No
 * connection is a master or a replica yet (issue 23).
 */
static void
client_kill(struct session *s, struct op *op, struct result *r)
{
	struct session_match	 m = { SESSION_TYPE_ANY, 0, NULL, 0, 1, NULL };
	long long		 n;

	if (op->argc == 3) {
		m.addr = op->argv[2];
		m.addrl = op->argl[2];
		m.skipme = 0;
		if (s->ops == NULL || s->ops->kill(s, &m) == 0)
			result_error(r, "ERR", "No such client");
		else
			result_status(r, "OK");
		return;
	}
	for (int i = 2; i < op->argc; i += 2) {
		const char	*w = op->argv[i], *v;
		size_t		 l = op->argl[i], vl;

		if (i + 1 >= op->argc) {
			result_error(r, "ERR", "syntax error");
			return;
		}
		v = op->argv[i + 1];
		vl = op->argl[i + 1];
		if (name_is(w, l, "TYPE", 4)) {
			if (name_is(v, vl, "NORMAL", 6))
				m.type = SESSION_TYPE_NORMAL;
			else if (name_is(v, vl, "PUBSUB", 6))
				m.type = SESSION_TYPE_PUBSUB;
			else if (name_is(v, vl, "MASTER", 6) ||
			    name_is(v, vl, "REPLICA", 7) ||
			    name_is(v, vl, "SLAVE", 5))
				m.type = SESSION_TYPE_NONE;
			else {
				result_error(r, "ERR", "Unknown client type "
				    "'%.*s'", (int)(vl < 128 ? vl : 128), v);
				return;
			}
		} else if (name_is(w, l, "ID", 2)) {
			long long id;

			if (command_arg_ll(v, vl, &id) == -1 || id < 1) {
				result_error(r, "ERR", "client-id should be "
				    "greater than 0");
				return;
			}
			m.id = (uint64_t)id;
		} else if (name_is(w, l, "ADDR", 4)) {
			m.addr = v;
			m.addrl = vl;
		} else if (name_is(w, l, "SKIPME", 6)) {
			if (name_is(v, vl, "YES", 3))
				m.skipme = 1;
			else if (name_is(v, vl, "NO", 2))
				m.skipme = 0;
			else {
				result_error(r, "ERR", "syntax error");
				return;
			}
		} else {
			result_error(r, "ERR", "syntax error");
			return;
		}
	}
	n = s->ops != NULL ? s->ops->kill(s, &m) : 0;
	result_int(r, n);
}

/*
 * CLIENT SETNAME/GETNAME/ID/SETINFO/KILL; other subcommands (MAINT_NOTIFICATIONS
 * that redis-py 8 and go-redis send on connect, among them) as Redis 7.0
 * refuses unknown ones, which those clients tolerate.
 */
void
cmd_client(struct session *s, struct op *op, struct result *r)
{
	static const struct {
		const char	*word, *lname;
		int		 argc;
	} subs[] = {
		{ "SETNAME", "setname", 3 }, { "GETNAME", "getname", 2 },
		{ "ID", "id", 2 }, { "SETINFO", "setinfo", 4 },
		{ "KILL", "kill", -3 },
	};
	const char	*w = op->argv[1];
	size_t		 l = op->argl[1], i;

	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (name_is(w, l, subs[i].word, strlen(subs[i].word)))
			break;
	if (i == sizeof(subs) / sizeof(subs[0])) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try CLIENT "
		    "HELP.", (int)(l < 128 ? l : 128), w);
		return;
	}
	if (subs[i].argc < 0 ? op->argc < -subs[i].argc :
	    op->argc != subs[i].argc) {
		result_error(r, "ERR", "wrong number of arguments for "
		    "'client|%s' command", subs[i].lname);
		return;
	}
	switch (i) {
	case 0:
		if (client_setname(s, op->argv[2], op->argl[2], r) == 0)
			result_status(r, "OK");
		break;
	case 1:
		if (s->name == NULL)
			result_null(r);
		else
			result_bulk(r, s->name, strlen(s->name));
		break;
	case 2:
		result_int(r, (long long)s->id);
		break;
	case 3:
		client_setinfo(op, r);
		break;
	default:
		client_kill(s, op, r);
		break;
	}
}

/* READONLY, READWRITE: what cluster-aware clients send to a node; a
 * standalone seend serves reads and writes alike, a replica in a cluster
 * with a map serves its primary's slots' reads after READONLY. */
void
cmd_readonly(struct session *s, struct op *op, struct result *r)
{
	s->readonly = (op->argv[0][4] | 0x20) == 'o';	/* READONLY */
	result_status(r, "OK");
}

/* Whether seend answers name (or "name|sub") over RESP. */
static int
answered(const char *name, size_t len)
{
	const char *bar = memchr(name, '|', len);

	return command_lookup(name, bar ? (size_t)(bar - name) : len,
	    COMMAND_RESP) != NULL;
}

/* The i-th entry of command_docs that seend answers, from *i on: its
 * info entry (docs in *docs), or NULL past the end. */
static const char *
next_entry(size_t *i, size_t *infol, const char **docs, size_t *docsl)
{
	const char *info, *name;

	for (; (name = command_docs_name(*i)) != NULL; (*i)++)
		if (answered(name, strlen(name)) &&
		    (info = command_docs_entry(*i, infol, docs, docsl)) != NULL)
			return info;
	return NULL;
}

/*
 * COMMAND [COUNT | LIST | INFO name... | DOCS [name...]], as Redis 7.0
 * answers them, with Redis 7.0.15's entries (command_docs.c) for the
 * commands seend answers: cluster-aware clients and proxies read key
 * positions there.
 */
void
cmd_command(struct session *s, struct op *op, struct result *r)
{
	const char	*sub = op->argc >= 2 ? op->argv[1] : "", *info, *docs;
	size_t		 subl = op->argc >= 2 ? op->argl[1] : 0, i, n = 0;
	size_t		 infol, docsl;
	struct buf	*b = result_reset();
	int		 all = op->argc == 1, count, list, docs_sub, info_sub;

	(void)s;
	count = name_is(sub, subl, "COUNT", 5);
	list = name_is(sub, subl, "LIST", 4);
	info_sub = name_is(sub, subl, "INFO", 4);
	docs_sub = name_is(sub, subl, "DOCS", 4);
	if (!all && !count && !list && !info_sub && !docs_sub) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try COMMAND "
		    "HELP.", (int)(subl < 128 ? subl : 128), sub);
		return;
	}
	if (count && op->argc > 2) {
		result_error(r, "ERR", "wrong number of arguments for "
		    "'command|count' command");
		return;
	}
	for (i = 0; next_entry(&i, &infol, &docs, &docsl) != NULL; i++)
		n++;
	if (count) {
		result_int(r, (long long)n);
		return;
	}
	/* COMMAND INFO and COMMAND DOCS without names: every command */
	if (all || list || op->argc == 2) {
		if (docs_sub)
			resp_add_map(b, (long long)n);
		else
			resp_add_array(b, (long long)n);
		for (i = 0; (info = next_entry(&i, &infol, &docs, &docsl)) !=
		    NULL; i++) {
			const char *name = command_docs_name(i);

			if (list)
				resp_add_bulk(b, name, strlen(name));
			else if (all)
				buf_append(b, info, infol);
			else {
				resp_add_bulk(b, name, strlen(name));
				buf_append(b, docs, docsl);
			}
		}
	} else if (info_sub) {
		resp_add_array(b, op->argc - 2);
		for (int k = 2; k < op->argc; k++) {
			info = answered(op->argv[k], op->argl[k]) ?
			    command_docs_info(op->argv[k], op->argl[k], &infol) :
			    NULL;
			if (info != NULL)
				buf_append(b, info, infol);
			else
				resp_add_null3(b);
		}
	} else {
		/* DOCS name...: the known ones, in the order asked */
		n = 0;
		for (int k = 2; k < op->argc; k++)
			n += answered(op->argv[k], op->argl[k]) &&
			    command_docs_docs(op->argv[k], op->argl[k], &docsl);
		resp_add_map(b, (long long)n);
		for (int k = 2; k < op->argc; k++) {
			if (!answered(op->argv[k], op->argl[k]) ||
			    (docs = command_docs_docs(op->argv[k], op->argl[k],
			    &docsl)) == NULL)
				continue;
			resp_add_bulk(b, op->argv[k], op->argl[k]);
			buf_append(b, docs, docsl);
		}
	}
	result_scratch(r, RESULT_ARRAY);
}

/* CONFIG GET: what redis-benchmark asks (save, appendonly) as an
 * persistence-free Redis answers; anything else is not there. CONFIG
 * REWRITE (Redis Sentinel's, after a SLAVEOF): +OK. */
void
cmd_config(struct session *s, struct op *op, struct result *r)
{
	(void)s;
	if (name_is(op->argv[1], op->argl[1], "REWRITE", 7)) {
		/* nothing to write back: what seend changes at run time it
		 * keeps itself (INTERFACE.md, "Replicas and failover") */
		if (op->argc != 2)
			result_error(r, "ERR", "wrong number of arguments for "
			    "'config|rewrite' command");
		else
			result_status(r, "OK");
		return;
	}
	if (!name_is(op->argv[1], op->argl[1], "GET", 3)) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try CONFIG HELP.",
		    (int)(op->argl[1] < 128 ? op->argl[1] : 128), op->argv[1]);
		return;
	}
	if (op->argc < 3) {
		result_error(r, "ERR", "wrong number of arguments for 'config|get' "
		    "command");
		return;
	}
	result_reset();
	if (op->argc == 3 && name_is(op->argv[2], op->argl[2], "SAVE", 4)) {
		resp_add_map(&result_buf, 1);
		resp_add_bulk(&result_buf, "save", 4);
		resp_add_bulk(&result_buf, "", 0);
	} else if (op->argc == 3 && name_is(op->argv[2], op->argl[2],
	    "APPENDONLY", 10)) {
		resp_add_map(&result_buf, 1);
		resp_add_bulk(&result_buf, "appendonly", 10);
		resp_add_bulk(&result_buf, "no", 2);
	} else
		resp_add_map(&result_buf, 0);
	result_scratch(r, RESULT_ARRAY);
}

/*
 * HELLO [2|3 [AUTH <user> <pass>] [SETNAME <name>]], as Redis 7 answers it:
 * the version and the options are checked first, then the credentials;
 * only an authenticated connection switches protocol and is answered the
 * server's map (an array of pairs in RESP2).
 */
void
cmd_hello(struct session *s, struct op *op, struct result *r)
{
	const char	*user = NULL, *pass = NULL, *name = NULL;
	size_t		 userl = 0, passl = 0, namel = 0;
	long long	 v = s->resp3 ? 3 : 2;
	struct buf	*b;

	if (op->argc >= 2 && command_arg_ll(op->argv[1], op->argl[1], &v) ==
	    -1) {
		result_error(r, "ERR", "Protocol version is not an integer or "
		    "out of range");
		return;
	}
	if (v < 2 || v > 3) {
		result_error(r, "NOPROTO", "unsupported protocol version");
		return;
	}
	for (int i = 2; i < op->argc; i++) {
		int more = op->argc - 1 - i;

		if (name_is(op->argv[i], op->argl[i], "AUTH", 4) && more >= 2) {
			user = op->argv[i + 1];
			userl = op->argl[i + 1];
			pass = op->argv[i + 2];
			passl = op->argl[i + 2];
			i += 2;
		} else if (name_is(op->argv[i], op->argl[i], "SETNAME", 7) &&
		    more >= 1) {
			name = op->argv[i + 1];
			namel = op->argl[i + 1];
			if (!name_valid(name, namel)) {
				result_error(r, "ERR", "Client names cannot "
				    "contain spaces, newlines or special "
				    "characters.");
				return;
			}
			i++;
		} else {
			result_error(r, "ERR", "Syntax error in HELLO option "
			    "'%.*s'", (int)(op->argl[i] < 128 ? op->argl[i] :
			    128), op->argv[i]);
			return;
		}
	}
	if (user != NULL && !auth_check(s, op, user, userl, pass, passl, 1, r))
		return;
	if (!s->authed) {
		s->core->stats.auth_failures++;
		r->need_auth = 1;
		result_error(r, "NOAUTH", "HELLO must be called with the client "
		    "already authenticated, otherwise the HELLO AUTH "
		    "<user> <pass> option can be used to authenticate the "
		    "client and select the RESP protocol version at the same "
		    "time");
		return;
	}
	if (name != NULL && client_setname(s, name, namel, r) == -1)
		return;
	/* replies from here on, this one included, are in the new version */
	s->resp3 = v == 3;
	b = result_reset();
	resp_add_map(b, 7);
	resp_add_bulk(b, "server", 6);
	resp_add_bulk(b, "seend", 5);
	resp_add_bulk(b, "version", 7);
	resp_add_bulk(b, PACKAGE_VERSION, strlen(PACKAGE_VERSION));
	resp_add_bulk(b, "proto", 5);
	resp_add_int(b, v);
	resp_add_bulk(b, "id", 2);
	resp_add_int(b, (long long)s->id);
	resp_add_bulk(b, "mode", 4);
	if (s->core->cluster != NULL)	/* [cluster] enabled (issue 33) */
		resp_add_bulk(b, "cluster", 7);
	else
		resp_add_bulk(b, "standalone", 10);
	resp_add_bulk(b, "role", 4);
	resp_add_bulk(b, "master", 6);
	resp_add_bulk(b, "modules", 7);
	resp_add_array(b, 0);
	result_scratch(r, RESULT_ARRAY);
}

void
cmd_quit(struct session *s, struct op *op, struct result *r)
{
	(void)s;
	(void)op;
	result_status(r, "OK");
	r->close = 1;
}

/*
 * SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 7's shutdownCommand
 * reads it: any other word, ABORT with another, or NOSAVE with SAVE is a
 * syntax error. ABORT cancels a shutdown that waits (Redis's wait for its
 * replicas); seend's never waits for a client to ask, so there is none to
 * cancel. Otherwise the server stops at the end of this turn the way
 * SIGTERM stops it: every dirty filter snapshotted (not with NOSAVE: the
 * journal, fsynced at the exit, keeps their keys) and exit 0. SAVE is the
 * default here; NOW (do not wait for replicas) and FORCE (exit despite
 * errors) are how seend always stops. No reply: the client sees its
 * connection close when the process exits, as with Redis.
 */
void
cmd_shutdown(struct session *s, struct op *op, struct result *r)
{
	int nosave = 0, save = 0, other = 0, abort = 0;

	for (int i = 1; i < op->argc; i++) {
		const char	*w = op->argv[i];
		size_t		 l = op->argl[i];

		if (name_is(w, l, "NOSAVE", 6))
			nosave = 1;
		else if (name_is(w, l, "SAVE", 4))
			save = 1;
		else if (name_is(w, l, "NOW", 3) || name_is(w, l, "FORCE", 5))
			other = 1;
		else if (name_is(w, l, "ABORT", 5))
			abort = 1;
		else {
			result_error(r, "ERR", "syntax error");
			return;
		}
	}
	if ((abort && (nosave || save || other)) || (nosave && save)) {
		result_error(r, "ERR", "syntax error");
		return;
	}
	if (abort) {
		result_error(r, "ERR", "No shutdown in progress.");
		return;
	}
	log_info("SHUTDOWN%s by client %llu (%s)", nosave ? " NOSAVE" : "",
	    (unsigned long long)s->id, s->peer);
	s->core->shutdown_asked = nosave ? CORE_SHUTDOWN_NOSAVE :
	    CORE_SHUTDOWN_SAVE;
	r->kind = RESULT_NONE;
	r->linger = 1;
}
