/*
 * cmd_acl.c - ACL WHOAMI LIST USERS CAT GETUSER SETUSER DELUSER SAVE LOAD
 * LOG GENPASS HELP, with Redis 7.0's replies and errors. The users
 * themselves, their rules and the users file: acl.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "acl.h"
#include "config.h"
#include "core.h"
#include "handler.h"
#include "log.h"
#include "resp.h"
#include "session.h"

/* The longest ACL LIST line: a user with many patterns or commands. */
#define DESCRIBE_MAX	65536

static char	*describe_buf;

static char *
describe(const struct acl_user *u, int commands_only)
{
	if (describe_buf == NULL &&
	    (describe_buf = malloc(DESCRIBE_MAX)) == NULL)
		return NULL;
	if (commands_only)
		acl_describe_commands(u, describe_buf, DESCRIBE_MAX);
	else
		acl_describe(u, describe_buf, DESCRIBE_MAX);
	return describe_buf;
}

/* Sessions of users deleted or turned off are closed (this one after its
 * reply). */
static void
close_gone(struct session *s)
{
	struct session_match m = { SESSION_TYPE_ANY, 0, NULL, 0, 0,
	    command_session_gone };

	if (s->ops != NULL)
		(void)s->ops->kill(s, &m);
}

static void
acl_list(struct op *op, struct result *r, int names)
{
	struct buf	*b = result_reset();
	size_t		 n = acl_count();
	char		*d;

	(void)op;
	resp_add_array(b, (long long)n);
	for (size_t i = 0; i < n; i++) {
		const struct acl_user *u = acl_at(i);

		if (names) {
			resp_add_bulk(b, u->name, u->namelen);
			continue;
		}
		if ((d = describe(u, 0)) == NULL) {
			result_error(r, "ERR", "out of memory");
			return;
		}
		buf_append(b, "$", 1);
		{
			char	 num[32];
			size_t	 len = 5 + u->namelen + 1 + strlen(d);
			int	 k = snprintf(num, sizeof(num), "%zu\r\n", len);

			buf_append(b, num, (size_t)k);
		}
		buf_append(b, "user ", 5);
		buf_append(b, u->name, u->namelen);
		buf_append(b, " ", 1);
		buf_append(b, d, strlen(d));
		buf_append(b, "\r\n", 2);
	}
	result_scratch(r, RESULT_ARRAY);
}

static void
acl_getuser(struct op *op, struct result *r)
{
	const struct acl_user	*u = acl_find(op->argv[2], op->argl[2]);
	struct buf		*b;
	char			 hex[65], *d;
	int			 nflags = 0;
	static const struct {
		unsigned	 flag;
		const char	*name;
	} flags[] = {
		{ ACL_USER_NOPASS, "nopass" },
		{ ACL_USER_SKIP_SANITIZE, "skip-sanitize-payload" },
		{ ACL_USER_SANITIZE, "sanitize-payload" },
	};

	if (u == NULL) {
		result_null(r);
		return;
	}
	b = result_reset();
	resp_add_map(b, 6);
	resp_add_bulk(b, "flags", 5);
	nflags = 1;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		nflags += (u->flags & flags[i].flag) != 0;
	resp_add_set(b, nflags);
	if (u->flags & ACL_USER_ON)
		resp_add_bulk(b, "on", 2);
	else
		resp_add_bulk(b, "off", 3);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (u->flags & flags[i].flag)
			resp_add_bulk(b, flags[i].name, strlen(flags[i].name));
	resp_add_bulk(b, "passwords", 9);
	resp_add_array(b, (long long)u->npass);
	for (size_t i = 0; i < u->npass; i++) {
		static const char x[] = "0123456789abcdef";

		for (int j = 0; j < 32; j++) {
			hex[2 * j] = x[u->pass[i][j] >> 4];
			hex[2 * j + 1] = x[u->pass[i][j] & 15];
		}
		resp_add_bulk(b, hex, 64);
	}
	resp_add_bulk(b, "commands", 8);
	if ((d = describe(u, 1)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	resp_add_bulk(b, d, strlen(d));
	resp_add_bulk(b, "keys", 4);
	if (u->flags & ACL_USER_ALLKEYS)
		resp_add_bulk(b, "~*", 2);
	else {
		size_t len = 0;

		d[0] = '\0';
		for (size_t i = 0; i < u->nkeys; i++) {
			const struct acl_pattern *p = &u->keys[i];
			const char *pre = p->flags == (ACL_KEY_READ |
			    ACL_KEY_WRITE) ? "~" : p->flags == ACL_KEY_READ ?
			    "%R~" : "%W~";

			len += (size_t)snprintf(d + len, len < DESCRIBE_MAX ?
			    DESCRIBE_MAX - len : 0, "%s%s%.*s", i ? " " : "", pre,
			    (int)p->len, p->text);
			if (len >= DESCRIBE_MAX)
				len = DESCRIBE_MAX - 1;
		}
		resp_add_bulk(b, d, len);
	}
	resp_add_bulk(b, "channels", 8);
	if (u->flags & ACL_USER_ALLCHANNELS)
		resp_add_bulk(b, "&*", 2);
	else {
		size_t len = 0;

		d[0] = '\0';
		for (size_t i = 0; i < u->nchans; i++) {
			len += (size_t)snprintf(d + len, len < DESCRIBE_MAX ?
			    DESCRIBE_MAX - len : 0, "%s&%.*s", i ? " " : "",
			    (int)u->chans[i].len, u->chans[i].text);
			if (len >= DESCRIBE_MAX)
				len = DESCRIBE_MAX - 1;
		}
		resp_add_bulk(b, d, len);
	}
	resp_add_bulk(b, "selectors", 9);
	resp_add_array(b, 0);
	result_scratch(r, RESULT_ARRAY);
}

static void
acl_setuser_cmd(struct session *s, struct op *op, struct result *r)
{
	char		 err[512];
	const char	*name = op->argv[2];
	size_t		 len = op->argl[2];

	for (size_t i = 0; i < len; i++)
		if (name[i] == ' ' || name[i] == '\t' || name[i] == '\n' ||
		    name[i] == '\r' || name[i] == '\v' || name[i] == '\f' ||
		    name[i] == '\0') {
			result_error(r, "ERR", "Usernames can't contain spaces "
			    "or null characters");
			return;
		}
	if (acl_setuser(name, len, op->argv + 3, op->argl + 3, op->argc - 3,
	    err, sizeof(err)) == -1) {
		result_error(r, "ERR", "%s", err);
		return;
	}
	log_info("ACL SETUSER %.*s by client %llu (%s)", (int)(len < 64 ? len :
	    64), name, (unsigned long long)s->id, s->peer);
	close_gone(s);
	result_status(r, "OK");
}

static void
acl_deluser_cmd(struct session *s, struct op *op, struct result *r)
{
	long long n = 0;

	for (int i = 2; i < op->argc; i++)
		if (op->argl[i] == 7 && memcmp(op->argv[i], "default", 7) == 0) {
			result_error(r, "ERR", "The 'default' user cannot be "
			    "removed");
			return;
		}
	for (int i = 2; i < op->argc; i++)
		n += acl_deluser(op->argv[i], op->argl[i]);
	if (n > 0) {
		log_info("ACL DELUSER: %lld user(s) deleted by client %llu (%s)",
		    n, (unsigned long long)s->id, s->peer);
		close_gone(s);
	}
	result_int(r, n);
}

static void
acl_cat(struct op *op, struct result *r)
{
	struct buf	*b = result_reset();
	int		 cat, n = 0;

	if (op->argc == 2) {
		resp_add_array(b, ACL_NCATS);
		for (int i = 0; i < ACL_NCATS; i++)
			resp_add_bulk(b, acl_category_name(i),
			    strlen(acl_category_name(i)));
		result_scratch(r, RESULT_ARRAY);
		return;
	}
	if ((cat = acl_category(op->argv[2], op->argl[2])) < 0) {
		result_error(r, "ERR", "Unknown category '%.*s'",
		    (int)(op->argl[2] < 128 ? op->argl[2] : 128), op->argv[2]);
		return;
	}
	for (int i = 0; i < acl_catalog_count(); i++)
		n += acl_catalog_in(i, cat);
	resp_add_array(b, n);
	for (int i = 0; i < acl_catalog_count(); i++)
		if (acl_catalog_in(i, cat))
			resp_add_bulk(b, acl_catalog_name(i),
			    strlen(acl_catalog_name(i)));
	result_scratch(r, RESULT_ARRAY);
}

static void
acl_log(struct op *op, struct result *r)
{
	long long	 count = 10;
	struct buf	*b;
	int64_t		 now = acl_now_ms();

	if (op->argc == 3) {
		if (name_is(op->argv[2], op->argl[2], "RESET", 5)) {
			acl_log_reset();
			result_status(r, "OK");
			return;
		}
		if (command_arg_ll(op->argv[2], op->argl[2], &count) == -1) {
			result_error(r, "ERR", "value is not an integer or out of "
			    "range");
			return;
		}
		if (count < 0)
			count = 0;
	}
	if ((size_t)count > acl_log_count())
		count = (long long)acl_log_count();
	b = result_reset();
	resp_add_array(b, count);
	for (long long i = 0; i < count; i++) {
		static const char *const reasons[] = {
			"command", "key", "channel", "auth",
		};
		const struct acl_log_entry *e = acl_log_at((size_t)i);

		resp_add_map(b, 7);
		resp_add_bulk(b, "count", 5);
		resp_add_int(b, (long long)e->count);
		resp_add_bulk(b, "reason", 6);
		resp_add_bulk(b, reasons[e->reason], strlen(reasons[e->reason]));
		resp_add_bulk(b, "context", 7);
		if (e->multi)
			resp_add_bulk(b, "multi", 5);
		else
			resp_add_bulk(b, "toplevel", 8);
		resp_add_bulk(b, "object", 6);
		resp_add_bulk(b, e->object, e->objlen);
		resp_add_bulk(b, "username", 8);
		resp_add_bulk(b, e->username, e->userlen);
		resp_add_bulk(b, "age-seconds", 11);
		resp_add_double(b, (double)(now - e->ctime_ms) / 1000);
		resp_add_bulk(b, "client-info", 11);
		resp_add_bulk(b, e->cinfo, strlen(e->cinfo));
	}
	result_scratch(r, RESULT_ARRAY);
}

static void
acl_genpass(struct op *op, struct result *r)
{
	static const char	 x[] = "0123456789abcdef";
	unsigned char		 raw[512];
	char			 hex[1024];
	long long		 bits = 256;
	size_t			 chars;

	if (op->argc == 3 && command_arg_ll(op->argv[2], op->argl[2], &bits) ==
	    -1) {
		result_error(r, "ERR", "value is not an integer or out of range");
		return;
	}
	if (bits <= 0 || bits > 4096) {
		result_error(r, "ERR", "ACL GENPASS argument must be the number "
		    "of bits for the output password, a positive number up to "
		    "4096");
		return;
	}
	chars = (size_t)(bits + 3) / 4;
	if (RAND_bytes(raw, (int)(chars + 1) / 2) != 1) {
		result_error(r, "ERR", "no random bytes");
		return;
	}
	for (size_t i = 0; i < chars; i++)
		hex[i] = x[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	/* into result_buf: hex is gone once this returns */
	resp_add_bulk(result_reset(), hex, chars);
	result_scratch(r, RESULT_ARRAY);
}

static void
acl_load(struct session *s, struct result *r)
{
	const struct config	*cfg = s->core->cfg;
	char			*err;
	struct buf		*b;

	if ((err = malloc(65536)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	if (command_users_load(cfg->users_file, cfg->auth_token, err, 65536) ==
	    -1) {
		log_error("ACL LOAD by client %llu (%s): %s",
		    (unsigned long long)s->id, s->peer, err);
		b = result_reset();
		resp_add_error(b, "ERR", err, strlen(err));
		result_scratch(r, RESULT_ARRAY);
		free(err);
		return;
	}
	free(err);
	log_info("ACL LOAD: users read again from %s by client %llu (%s)",
	    cfg->users_file, (unsigned long long)s->id, s->peer);
	close_gone(s);
	result_status(r, "OK");
}

static void
acl_save_cmd(struct session *s, struct result *r)
{
	char err[512];

	if (acl_save(s->core->cfg->users_file, err, sizeof(err)) == -1) {
		log_error("ACL SAVE to %s: %s", s->core->cfg->users_file, err);
		result_error(r, "ERR", "There was an error trying to save the "
		    "ACLs. Please check the server logs for more information");
		return;
	}
	log_info("ACL SAVE: users written to %s by client %llu (%s)",
	    s->core->cfg->users_file, (unsigned long long)s->id, s->peer);
	result_status(r, "OK");
}

static void
acl_help(struct result *r)
{
	static const char *const help[] = {
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command "
		"categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` "
		"argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help.",
	};
	struct buf *b = result_reset();

	resp_add_array(b, sizeof(help) / sizeof(help[0]));
	for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
		resp_add_status(b, help[i]);
	result_scratch(r, RESULT_ARRAY);
}

void
cmd_acl(struct session *s, struct op *op, struct result *r)
{
	static const struct {
		const char	*word, *lname;
		int		 argc;		/* Redis's arity, ACL included */
	} subs[] = {
		{ "CAT", "cat", -2 }, { "DELUSER", "deluser", -3 },
		{ "GENPASS", "genpass", -2 }, { "GETUSER", "getuser", 3 },
		{ "HELP", "help", 2 }, { "LIST", "list", 2 },
		{ "LOAD", "load", 2 }, { "LOG", "log", -2 },
		{ "SAVE", "save", 2 }, { "SETUSER", "setuser", -3 },
		{ "USERS", "users", 2 }, { "WHOAMI", "whoami", 2 },
	};
	const char	*w = op->argv[1];
	size_t		 l = op->argl[1], i;
	const struct acl_user *u;

	command_users_ready();
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (name_is(w, l, subs[i].word, strlen(subs[i].word)))
			break;
	if (i == sizeof(subs) / sizeof(subs[0])) {
		result_error(r, "ERR", "unknown subcommand '%.*s'. Try ACL HELP.",
		    (int)(l < 128 ? l : 128), w);
		return;
	}
	if (subs[i].argc < 0 ? op->argc < -subs[i].argc :
	    op->argc != subs[i].argc) {
		result_error(r, "ERR", "wrong number of arguments for 'acl|%s' "
		    "command", subs[i].lname);
		return;
	}
	/* Redis's own arity checks within: CAT and LOG take one more at
	 * most, GENPASS one */
	if ((!strcmp(subs[i].lname, "cat") || !strcmp(subs[i].lname, "log") ||
	    !strcmp(subs[i].lname, "genpass")) && op->argc > 3) {
		result_error(r, "ERR", "unknown subcommand or wrong number of "
		    "arguments for '%.*s'. Try ACL HELP.", (int)(l < 128 ? l :
		    128), w);
		return;
	}
	if ((!strcmp(subs[i].lname, "load") || !strcmp(subs[i].lname, "save")) &&
	    s->core->cfg->users_file == NULL) {
		result_error(r, "ERR", "This Redis instance is not configured to "
		    "use an ACL file. You may want to specify users via the ACL "
		    "SETUSER command and then issue a CONFIG REWRITE (assuming "
		    "you have a Redis configuration file set) in order to store "
		    "users in the Redis configuration.");
		return;
	}
	switch (subs[i].lname[0] == 'w' ? 'W' : subs[i].lname[0] == 'u' ? 'U' :
	    subs[i].lname[0]) {
	case 'c':
		acl_cat(op, r);
		break;
	case 'd':
		acl_deluser_cmd(s, op, r);
		break;
	case 'g':
		if (subs[i].lname[1] == 'e' && subs[i].lname[2] == 'n')
			acl_genpass(op, r);
		else
			acl_getuser(op, r);
		break;
	case 'h':
		acl_help(r);
		break;
	case 'l':
		if (!strcmp(subs[i].lname, "list"))
			acl_list(op, r, 0);
		else if (!strcmp(subs[i].lname, "load"))
			acl_load(s, r);
		else
			acl_log(op, r);
		break;
	case 's':
		if (!strcmp(subs[i].lname, "save"))
			acl_save_cmd(s, r);
		else
			acl_setuser_cmd(s, op, r);
		break;
	case 'U':
		acl_list(op, r, 1);
		break;
	case 'W':
		u = s->user != NULL ? s->user : acl_default;
		result_bulk(r, u->name, u->namelen);
		break;
	}
}
