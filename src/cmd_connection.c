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

void
cmd_ping(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	if (op->argc == 2) {
		r->kind = RESULT_BULK;
		r->text = op->argv[1];
		r->len = op->argl[1];
	} else
		result_status(r, "PONG");
}

void
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

void
cmd_auth(struct conn *c, struct op *op, struct result *r)
{
	const char	*token = c->srv->cfg->auth_token;
	int		 resp = op->proto == COMMAND_RESP, user = 0;

	if (resp && op->argc > 3) {
		result_error(r, "ERR", "syntax error");
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
			result_error(r, "ERR", "no auth_token is configured");
		else if (user)
			result_status(r, "OK");	/* Redis's nopass default user */
		else
			result_error(r, "ERR", "AUTH <password> called without any "
			    "password configured for the default user. Are you "
			    "sure your configuration is correct?");
		return;
	}
	if (token_equal(op->argv[op->argc - 1], op->argl[op->argc - 1], token,
	    strlen(token))) {
		c->authed = 1;
		c->strikes = 0;
		result_status(r, "OK");
		return;
	}
wrong:
	c->srv->stats.auth_failures++;
	log_warn("client %llu (%s): AUTH with a wrong token",
	    (unsigned long long)c->id, c->peer);
	if (resp)
		result_error(r, "WRONGPASS", "invalid username-password pair or "
		    "user is disabled.");
	else
		result_error(r, "ERR", "invalid token");
}

void
cmd_select(struct conn *c, struct op *op, struct result *r)
{
	long long db;

	(void)c;
	if (command_arg_ll(op->argv[1], op->argl[1], &db) == -1)
		result_error(r, "ERR", "value is not an integer or out of range");
	else if (db != 0)
		result_error(r, "ERR", "DB index is out of range");
	else
		result_status(r, "OK");
}

/* CLIENT SETNAME/GETNAME; other subcommands as Redis refuses unknown ones */
void
cmd_client(struct conn *c, struct op *op, struct result *r)
{
	const char	*s = op->argv[1];
	size_t		 l = op->argl[1];

	if (name_is(s, l, "SETNAME", 7) && op->argc == 3) {
		char *name = NULL;

		for (size_t i = 0; i < op->argl[2]; i++)
			if (op->argv[2][i] < '!' || op->argv[2][i] > '~') {
				result_error(r, "ERR", "Client names cannot "
				    "contain spaces, newlines or special "
				    "characters.");
				return;
			}
		if (op->argl[2] > 0 &&
		    (name = strndup(op->argv[2], op->argl[2])) == NULL) {
			result_error(r, "ERR", "out of memory");
			return;
		}
		free(c->name);
		c->name = name;
		result_status(r, "OK");
	} else if (name_is(s, l, "GETNAME", 7) && op->argc == 2) {
		if (c->name == NULL)
			r->kind = RESULT_NULL;
		else {
			r->kind = RESULT_BULK;
			r->text = c->name;
			r->len = strlen(c->name);
		}
	} else if (name_is(s, l, "SETNAME", 7) || name_is(s, l, "GETNAME", 7))
		result_error(r, "ERR", "wrong number of arguments for 'client|%s' "
		    "command", name_is(s, l, "SETNAME", 7) ? "setname" :
		    "getname");
	else
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try CLIENT HELP.",
		    (int)(l < 128 ? l : 128), s);
}

/* COMMAND, COMMAND DOCS: an empty table (redis-cli copes); COUNT. */
void
cmd_command(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	if (op->argc >= 2 && name_is(op->argv[1], op->argl[1], "COUNT", 5)) {
		size_t n = 0, all;
		const struct command *t = command_table(&all);

		for (size_t i = 0; i < all; i++)
			n += (t[i].proto & COMMAND_RESP) != 0;
		result_int(r, (long long)n);
		return;
	}
	if (op->argc >= 2 && !name_is(op->argv[1], op->argl[1], "DOCS", 4) &&
	    !name_is(op->argv[1], op->argl[1], "INFO", 4)) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try COMMAND "
		    "HELP.", (int)(op->argl[1] < 128 ? op->argl[1] : 128),
		    op->argv[1]);
		return;
	}
	result_reset();
	resp_add_array(&result_buf, 0);
	result_scratch(r, RESULT_ARRAY);
}

/* CONFIG GET: what redis-benchmark asks (save, appendonly) as an
 * persistence-free Redis answers; anything else is not there. */
void
cmd_config(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
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
		resp_add_array(&result_buf, 2);
		resp_add_bulk(&result_buf, "save", 4);
		resp_add_bulk(&result_buf, "", 0);
	} else if (op->argc == 3 && name_is(op->argv[2], op->argl[2],
	    "APPENDONLY", 10)) {
		resp_add_array(&result_buf, 2);
		resp_add_bulk(&result_buf, "appendonly", 10);
		resp_add_bulk(&result_buf, "no", 2);
	} else
		resp_add_array(&result_buf, 0);
	result_scratch(r, RESULT_ARRAY);
}

/* HELLO [2]: RESP2 only; HELLO 3 is refused so clients stay on RESP2. */
void
cmd_hello(struct conn *c, struct op *op, struct result *r)
{
	long long v = 2;

	if (op->argc >= 2 && (command_arg_ll(op->argv[1], op->argl[1], &v) == -1)) {
		result_error(r, "ERR", "Protocol version is not an integer or out "
		    "of range");
		return;
	}
	if (v != 2) {
		result_error(r, "NOPROTO", "unsupported protocol version");
		return;
	}
	if (op->argc > 2) {
		result_error(r, "ERR", "syntax error");
		return;
	}
	result_reset();
	resp_add_array(&result_buf, 14);
	resp_add_bulk(&result_buf, "server", 6);
	resp_add_bulk(&result_buf, "seend", 5);
	resp_add_bulk(&result_buf, "version", 7);
	resp_add_bulk(&result_buf, PACKAGE_VERSION, strlen(PACKAGE_VERSION));
	resp_add_bulk(&result_buf, "proto", 5);
	resp_add_int(&result_buf, 2);
	resp_add_bulk(&result_buf, "id", 2);
	resp_add_int(&result_buf, (long long)c->id);
	resp_add_bulk(&result_buf, "mode", 4);
	resp_add_bulk(&result_buf, "standalone", 10);
	resp_add_bulk(&result_buf, "role", 4);
	resp_add_bulk(&result_buf, "master", 6);
	resp_add_bulk(&result_buf, "modules", 7);
	resp_add_array(&result_buf, 0);
	result_scratch(r, RESULT_ARRAY);
}

void
cmd_quit(struct conn *c, struct op *op, struct result *r)
{
	(void)c;
	(void)op;
	result_status(r, "OK");
	r->close = 1;
}
