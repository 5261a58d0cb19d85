/*
 * config.c - the config file; see config.h.
 *
 * Every value is checked while parsing, so that "seend -t" and a SIGHUP
 * reload catch all mistakes at once, each with its file:line; nothing later
 * has to re-validate a struct config.
 *
 * This file has the [server] keys, loading and freeing. The [filter.NAME]
 * sections are in config_filter.c, the lines as inih reads them in
 * config_reader.c, the errors and the values (numbers and their units)
 * all three use in config_value.c, and what they share in config_parser.h.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "config.h"
#include "config_parser.h"
#include "tls.h"

#define DEFAULT_LISTEN		"127.0.0.1:6874"
#define DEFAULT_DATA_DIR	"/var/lib/seend"
#define DEFAULT_FILTER		"default"
#define TOKEN_LINE_MAX		4096	/* auth_token_file's first line */

/* ---- [server] keys ---- */

/* Why a "host:port" or "[v6]:port" is wrong, or NULL. */
static const char *
check_listen(const char *v)
{
	const char	*port, *end;
	char		 host[INET6_ADDRSTRLEN + 64];
	unsigned char	 in6[16];
	size_t		 hlen;
	unsigned long	 n = 0;

	if (v[0] == '[') {
		if ((end = strchr(v, ']')) == NULL)
			return "has no \"]\" after the IPv6 address";
		hlen = (size_t)(end - v - 1);
		if (hlen == 0)
			return "has an empty host";
		if (end[1] != ':')
			return "needs a port: [address]:port";
		port = end + 2;
		if (hlen >= sizeof(host))
			return "has a host that is too long";
		memcpy(host, v + 1, hlen);
		host[hlen] = '\0';
		/* a zone ("%eth0") is fine for the resolver, not for
		 * inet_pton */
		host[strcspn(host, "%")] = '\0';
		if (inet_pton(AF_INET6, host, in6) != 1)
			return "has an invalid IPv6 address in [ ]";
	} else {
		if ((end = strrchr(v, ':')) == NULL)
			return "needs a port: host:port, [v6]:port or \"off\"";
		if (end == v)
			return "has an empty host (write 0.0.0.0:port for "
			    "every IPv4 address)";
		if (memchr(v, ':', (size_t)(end - v)) != NULL)
			return "has an IPv6 address without brackets (write "
			    "[::1]:6874)";
		port = end + 1;
		for (const char *q = v; q < end; q++)
			if (is_blank((unsigned char)*q) || *q == '[' ||
			    *q == ']')
				return "has a character not allowed in a host";
	}
	if (*port == '\0')
		return "has an empty port";
	for (const char *q = port; *q != '\0'; q++) {
		if (!isdigit((unsigned char)*q) || q - port >= 5)
			return "has a port that is not a number from 1 "
			    "to 65535";
		n = n * 10 + (unsigned long)(*q - '0');
	}
	if (n < 1 || n > 65535)
		return "has a port that is not a number from 1 to 65535";
	return NULL;
}

static void
key_listen(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (strcmp(v, "off") == 0) {
		set_string(p, &p->cfg->listen, NULL);
		return;
	}
	if (*v == '\0')
		why = "is empty (write \"off\" to listen on no TCP port)";
	else
		why = check_listen(v);
	if (why != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->listen, v);
}

/* The Prometheus endpoint: host:port like listen; empty or "off" = none. */
static void
key_metrics_listen(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (*v == '\0' || strcmp(v, "off") == 0) {
		set_string(p, &p->cfg->metrics_listen, NULL);
		return;
	}
	if ((why = check_listen(v)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->metrics_listen, v);
}

static void
key_unix_socket(struct parser *p, const char *key, const char *v)
{
	size_t max = sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1;

	if (strlen(v) > max) {
		perror_at(p, p->lineno, "%s: \"%s\" is %zu bytes long; a "
		    "socket path holds at most %zu", key, SHOW(v), strlen(v),
		    max);
		return;
	}
	set_string(p, &p->cfg->unix_socket, *v == '\0' ? NULL : v);
}

static void
key_unix_socket_mode(struct parser *p, const char *key, const char *v)
{
	unsigned long m = 0;

	for (const char *q = v; *q != '\0'; q++) {
		if (*q < '0' || *q > '7' || m > 0777)
			goto bad;
		m = m * 8 + (unsigned long)(*q - '0');
	}
	if (*v == '\0' || m > 0777)
		goto bad;
	p->cfg->unix_socket_mode = (mode_t)m;
	return;
bad:
	perror_at(p, p->lineno, "%s: \"%s\" is not an octal mode from 0 to "
	    "0777 (e.g. 0660)", key, SHOW(v));
}

/*
 * A group name or a numeric gid, resolved now so that a typo is a config
 * error with its line rather than a failure at bind time.
 */
static void
key_unix_socket_group(struct parser *p, const char *key, const char *v)
{
	struct group	*gr;
	char		*end;
	unsigned long	 gid;

	if (*v == '\0') {
		p->cfg->unix_socket_group = (gid_t)-1;
		return;
	}
	errno = 0;
	gid = strtoul(v, &end, 10);
	if (*v >= '0' && *v <= '9' && *end == '\0' && errno == 0 &&
	    gid < (unsigned long)(gid_t)-1) {
		p->cfg->unix_socket_group = (gid_t)gid;
		return;
	}
	if ((gr = getgrnam(v)) == NULL) {
		perror_at(p, p->lineno, "%s: no group \"%s\" on this system",
		    key, SHOW(v));
		return;
	}
	p->cfg->unix_socket_group = gr->gr_gid;
}

static void
key_data_dir(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0') {
		perror_at(p, p->lineno, "%s: must not be empty", key);
		return;
	}
	set_string(p, &p->cfg->data_dir, v);
}

static void
key_snapshot_interval(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_SECONDS, 0, MAX_SECONDS, &n) == 0)
		p->cfg->snapshot_interval = (unsigned)n;
}

static void
key_default_filter(struct parser *p, const char *key, const char *v)
{
	/* it need not exist: requests routed to a missing filter get an
	 * error reply, which is what a config without one asks for */
	if (!config_valid_filter_name(v, strlen(v))) {
		perror_at(p, p->lineno, "%s: \"%s\" is not a valid filter name "
		    "(letters, digits, \"_\", \"-\" and, not first, \".\"; "
		    "at most %d)", key, SHOW(v), FILTER_NAME_MAX);
		return;
	}
	set_string(p, &p->cfg->default_filter, v);
}

static void
key_max_clients(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_COUNT, 1, 1000000, &n) == 0)
		p->cfg->max_clients = (unsigned)n;
}

static void
key_max_line(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_BYTES, 64, 64ULL << 20, &n) == 0)
		p->cfg->max_line = (size_t)n;
}

static void
key_output_buffer_limit(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_BYTES, 4096, 1ULL << 30, &n) == 0)
		p->cfg->output_buffer_limit = (size_t)n;
}

static void
key_idle_timeout(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_SECONDS, 0, MAX_SECONDS, &n) == 0)
		p->cfg->idle_timeout = (unsigned)n;
}

/* A token travels as one protocol token: "AUTH <token>". */
static int
check_token(struct parser *p, const char *key, const char *t)
{
	for (const char *q = t; *q != '\0'; q++)
		if (is_blank((unsigned char)*q) || (unsigned char)*q < 0x20 ||
		    *q == 0x7f) {
			perror_at(p, p->lineno, "%s: the token contains a "
			    "space or control character, which AUTH cannot "
			    "send",
			    key);
			return -1;
		}
	return 0;
}

static void
key_auth_token(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return;
	if (check_token(p, key, v) == -1)
		return;
	p->token_line = p->lineno;
	set_string(p, &p->cfg->auth_token, v);
}

static void
key_auth_token_file(struct parser *p, const char *key, const char *v)
{
	FILE	*fp;
	char	 line[TOKEN_LINE_MAX];
	size_t	 len;
	int	 c = EOF;

	if (*v == '\0')
		return;
	p->token_file_line = p->lineno;
	if ((fp = fopen(v, "re")) == NULL) {
		perror_at(p, p->lineno, "%s: cannot open \"%s\": %s", key,
		    SHOW(v), strerror(errno));
		return;
	}
	/* a bounded read: "/dev/zero" must not eat all memory */
	errno = 0;
	for (len = 0; (c = getc(fp)) != EOF && c != '\n'; line[len++] = (char)c)
		if (c == '\0' || len == sizeof(line) - 1)
			break;
	line[len] = '\0';
	if (ferror(fp)) {
		perror_at(p, p->lineno, "%s: cannot read \"%s\": %s", key,
		    SHOW(v), strerror(errno ? errno : EIO));
		goto out;
	}
	if (c == '\0') {
		perror_at(p, p->lineno, "%s: \"%s\" has a NUL byte in its "
		    "first line", key, SHOW(v));
		goto out;
	}
	if (len == sizeof(line) - 1) {
		perror_at(p, p->lineno, "%s: the first line of \"%s\" is "
		    "longer than %zu bytes", key, SHOW(v), sizeof(line) - 2);
		goto out;
	}
	while (len > 0 && is_blank((unsigned char)line[len - 1]))
		line[--len] = '\0';
	if (len == 0) {
		perror_at(p, p->lineno, "%s: \"%s\" is empty (the token is its "
		    "first line)", key, SHOW(v));
		goto out;
	}
	if (check_token(p, key, line) == 0)
		set_string(p, &p->cfg->auth_token, line);
out:
	explicit_bzero(line, sizeof(line));
	fclose(fp);
}

static void
key_log_level(struct parser *p, const char *key, const char *v)
{
	enum log_level l;

	if (log_level_parse(v, &l) == -1) {
		perror_at(p, p->lineno, "%s: \"%s\" is not one of error, warn, "
		    "info, debug", key, SHOW(v));
		return;
	}
	p->cfg->log_level = l;
}

static void
key_max_memory(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (is_off(v)) {
		p->cfg->max_memory = 0;
		return;
	}
	if (get_number(p, key, v, UNIT_BYTES, 0, BLOOM_MAX_BYTES * 1024, &n) ==
	    0)
		p->cfg->max_memory = n;
}

/* ---- filters created at run time (BF.RESERVE, SADD, BF.ADD) ---- */

static void
key_create_filters(struct parser *p, const char *key, const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0)
		p->cfg->create_filters = 1;
	else if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0)
		p->cfg->create_filters = 0;
	else
		perror_at(p, p->lineno, "%s: \"%s\" is not one of on, off",
		    key, SHOW(v));
}

static void
key_new_filter_capacity(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_COUNT, 1, 1000000000000ULL, &n) == 0)
		p->cfg->new_filter_capacity = n;
}

static void
key_new_filter_error_rate(struct parser *p, const char *key, const char *v)
{
	(void)parse_rate(p, key, v, &p->cfg->new_filter_error_rate);
}

static void
key_new_filter_growth(struct parser *p, const char *key, const char *v)
{
	(void)parse_growth(p, key, v, &p->cfg->new_filter_growth);
}

static void
key_max_filters(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_COUNT, 1, CONFIG_MAX_RUNTIME_FILTERS,
	    &n) == 0)
		p->cfg->max_filters = (unsigned)n;
}

static void
key_journal(struct parser *p, const char *key, const char *v)
{
	static const char *const modes[] = {
		[JOURNAL_OFF] = "off",
		[JOURNAL_EVERYSEC] = "everysec",
		[JOURNAL_ALWAYS] = "always",
	};

	for (int i = 0; i < 3; i++)
		if (strcmp(v, modes[i]) == 0) {
			p->cfg->journal = (enum journal_mode)i;
			return;
		}
	perror_at(p, p->lineno, "%s: \"%s\" is not one of always, everysec, "
	    "off", key, SHOW(v));
}

/* At least 1M: below that a snapshot round would follow every few
 * thousand keys. */
static void
key_journal_max(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_BYTES, 1 << 20, UINT64_C(1) << 50,
	    &n) == 0)
		p->cfg->journal_max = n;
}

/* The primary to copy, host:port as listen takes it; empty or "no one":
 * none (a primary). */
static void
key_replicaof(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (*v == '\0' || strcasecmp(v, "no one") == 0) {
		set_string(p, &p->cfg->replicaof, NULL);
		return;
	}
	if ((why = check_listen(v)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->replicaof, v);
}

static void
key_primary_token(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return;
	if (check_token(p, key, v) == -1)
		return;
	set_string(p, &p->cfg->primary_token, v);
}

/* The user the replica logs in as (Redis's masteruser); empty: none. */
static void
key_primary_user(struct parser *p, const char *key, const char *v)
{
	for (const char *c = v; *c != '\0'; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			perror_at(p, p->lineno, "%s: \"%s\" has a space or a "
			    "control character", key, SHOW(v));
			return;
		}
	set_string(p, &p->cfg->primary_user, *v == '\0' ? NULL : v);
}

/* Users as Redis ACLs (acl.h): the file is read when the server starts
 * and on SIGHUP, not here. */
static void
key_users_file(struct parser *p, const char *key, const char *v)
{
	(void)key;
	set_string(p, &p->cfg->users_file, *v == '\0' ? NULL : v);
}

/* A secret Prometheus sends as "Authorization: Bearer <it>". */
static void
key_metrics_token(struct parser *p, const char *key, const char *v)
{
	if (*v == '\0')
		return;
	if (check_token(p, key, v) == -1)
		return;
	set_string(p, &p->cfg->metrics_token, v);
}

/* At least 64k: a replica that paused for a moment comes back by a
 * partial resync. */
static void
key_repl_backlog_size(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_BYTES, 1 << 16, UINT64_C(1) << 40,
	    &n) == 0)
		p->cfg->repl_backlog_size = n;
}

static void
key_replica_priority(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_COUNT, 0, 1000000, &n) == 0)
		p->cfg->replica_priority = (unsigned)n;
}

/* ---- TLS (tls.h) ---- */

static void
key_tls_listen(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (*v == '\0' || strcmp(v, "off") == 0) {
		set_string(p, &p->cfg->tls_listen, NULL);
		return;
	}
	if ((why = check_listen(v)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->tls_listen, v);
}

/* A file tls.c reads (at start and at each reload, so that a SIGHUP
 * rotates it); empty: none. */
static void
key_tls_file(struct parser *p, const char *key, const char *v)
{
	char **dst = strcmp(key, "tls_cert_file") == 0 ?
	    &p->cfg->tls_cert_file : strcmp(key, "tls_key_file") == 0 ?
	    &p->cfg->tls_key_file : &p->cfg->tls_ca_cert_file;

	set_string(p, dst, *v == '\0' ? NULL : v);
}

static void
key_tls_auth_clients(struct parser *p, const char *key, const char *v)
{
	if (strcmp(v, "yes") == 0)
		p->cfg->tls_auth_clients = TLS_AUTH_YES;
	else if (strcmp(v, "no") == 0)
		p->cfg->tls_auth_clients = TLS_AUTH_NO;
	else if (strcmp(v, "optional") == 0)
		p->cfg->tls_auth_clients = TLS_AUTH_OPTIONAL;
	else
		perror_at(p, p->lineno, "%s: \"%s\" is not one of yes, no, "
		    "optional", key, SHOW(v));
}

static void
key_tls_protocols(struct parser *p, const char *key, const char *v)
{
	unsigned set = tls_parse_protocols(v);

	if (set == 0) {
		perror_at(p, p->lineno, "%s: \"%s\" is not a list of TLSv1, "
		    "TLSv1.1, TLSv1.2, TLSv1.3", key, SHOW(v));
		return;
	}
	p->cfg->tls_protocols = set;
}

/* OpenSSL checks them when it builds the context (seend -t does too). */
static void
key_tls_ciphers(struct parser *p, const char *key, const char *v)
{
	set_string(p, strcmp(key, "tls_ciphers") == 0 ? &p->cfg->tls_ciphers :
	    &p->cfg->tls_ciphersuites, *v == '\0' ? NULL : v);
}

static void
key_tls_handshake_timeout(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_SECONDS, 1, 3600, &n) == 0)
		p->cfg->tls_handshake_timeout = (unsigned)n;
}

/* An on/off key: 1, 0, or -1 after saying why. */
static int
get_switch(struct parser *p, const char *key, const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0)
		return 1;
	if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0)
		return 0;
	perror_at(p, p->lineno, "%s: \"%s\" is not one of on, off", key,
	    SHOW(v));
	return -1;
}

static void
key_tls_replication(struct parser *p, const char *key, const char *v)
{
	int on = get_switch(p, key, v);

	if (on >= 0)
		p->cfg->tls_replication = on;
}

static void
key_metrics_tls(struct parser *p, const char *key, const char *v)
{
	int on = get_switch(p, key, v);

	if (on >= 0)
		p->cfg->metrics_tls = on;
}

void
config_tls_settings(const struct config *cfg, struct tls_settings *t)
{
	t->cert_file = cfg->tls_cert_file;
	t->key_file = cfg->tls_key_file;
	t->ca_cert_file = cfg->tls_ca_cert_file;
	t->auth_clients = (enum tls_auth)cfg->tls_auth_clients;
	t->protocols = cfg->tls_protocols;
	t->ciphers = cfg->tls_ciphers;
	t->ciphersuites = cfg->tls_ciphersuites;
}

/* What the TLS keys need of each other, once all are read. */
static void
check_tls(struct parser *p)
{
	const struct config *c = p->cfg;
	/* the server's certificate serves tls_listen and metrics_tls */
	int tls_port = c->tls_listen != NULL;
	const char *who = tls_port ? "tls_listen" : "metrics_tls";
	int serves = tls_port || c->metrics_tls;
	int line = p->server_keys[tls_port ? SK_TLS_LISTEN : SK_METRICS_TLS];

	if (c->metrics_tls && c->metrics_listen == NULL)
		perror_at(p, p->server_keys[SK_METRICS_TLS], "metrics_tls "
		    "needs metrics_listen, the endpoint it serves over TLS");
	if (serves && (c->tls_cert_file == NULL || c->tls_key_file == NULL))
		perror_at(p, line, "%s needs tls_cert_file and tls_key_file",
		    who);
	else if (serves && c->tls_ca_cert_file == NULL &&
	    c->tls_auth_clients != TLS_AUTH_NO)
		perror_at(p, line, "%s with tls_auth_clients = %s "
		    "needs tls_ca_cert_file, the CA client certificates are "
		    "verified against (or set tls_auth_clients = no)", who,
		    c->tls_auth_clients == TLS_AUTH_YES ? "yes" : "optional");
	if (c->tls_replication && c->tls_ca_cert_file == NULL)
		perror_at(p, p->server_keys[SK_TLS_REPLICATION],
		    "tls_replication needs tls_ca_cert_file, the CA the "
		    "primary's certificate is verified against");
}

const struct key_def server_keys[SK_COUNT] = {
	[SK_LISTEN] = { "listen", key_listen, 0 },
	[SK_UNIX_SOCKET] = { "unix_socket", key_unix_socket, 0 },
	[SK_UNIX_SOCKET_MODE] = { "unix_socket_mode", key_unix_socket_mode, 0 },
	[SK_UNIX_SOCKET_GROUP] = { "unix_socket_group", key_unix_socket_group,
	    0 },
	[SK_DATA_DIR] = { "data_dir", key_data_dir, 0 },
	[SK_SNAPSHOT_INTERVAL] = { "snapshot_interval", key_snapshot_interval,
	    0 },
	[SK_DEFAULT_FILTER] = { "default_filter", key_default_filter, 0 },
	[SK_MAX_CLIENTS] = { "max_clients", key_max_clients, 0 },
	[SK_MAX_LINE] = { "max_line", key_max_line, 0 },
	[SK_OUTPUT_BUFFER_LIMIT] = { "output_buffer_limit",
	    key_output_buffer_limit, 0 },
	[SK_IDLE_TIMEOUT] = { "idle_timeout", key_idle_timeout, 0 },
	[SK_AUTH_TOKEN] = { "auth_token", key_auth_token, 0 },
	[SK_AUTH_TOKEN_FILE] = { "auth_token_file", key_auth_token_file, 0 },
	[SK_USERS_FILE] = { "users_file", key_users_file, 0 },
	[SK_METRICS_TOKEN] = { "metrics_token", key_metrics_token, 0 },
	[SK_LOG_LEVEL] = { "log_level", key_log_level, 0 },
	[SK_MAX_MEMORY] = { "max_memory", key_max_memory, 0 },
	[SK_CREATE_FILTERS] = { "create_filters", key_create_filters, 0 },
	[SK_NEW_FILTER_CAPACITY] = { "new_filter_capacity",
	    key_new_filter_capacity, 0 },
	[SK_NEW_FILTER_ERROR_RATE] = { "new_filter_error_rate",
	    key_new_filter_error_rate, 0 },
	[SK_NEW_FILTER_GROWTH] = { "new_filter_growth", key_new_filter_growth,
	    0 },
	[SK_MAX_FILTERS] = { "max_filters", key_max_filters, 0 },
	[SK_METRICS_LISTEN] = { "metrics_listen", key_metrics_listen, 0 },
	[SK_JOURNAL] = { "journal", key_journal, 0 },
	[SK_JOURNAL_MAX] = { "journal_max", key_journal_max, 0 },
	[SK_REPLICAOF] = { "replicaof", key_replicaof, 0 },
	[SK_PRIMARY_TOKEN] = { "primary_token", key_primary_token, 0 },
	[SK_PRIMARY_USER] = { "primary_user", key_primary_user, 0 },
	[SK_REPL_BACKLOG_SIZE] = { "repl_backlog_size",
	    key_repl_backlog_size, 0 },
	[SK_REPLICA_PRIORITY] = { "replica_priority", key_replica_priority,
	    0 },
	[SK_TLS_LISTEN] = { "tls_listen", key_tls_listen, 0 },
	[SK_TLS_CERT_FILE] = { "tls_cert_file", key_tls_file, 0 },
	[SK_TLS_KEY_FILE] = { "tls_key_file", key_tls_file, 0 },
	[SK_TLS_CA_CERT_FILE] = { "tls_ca_cert_file", key_tls_file, 0 },
	[SK_TLS_AUTH_CLIENTS] = { "tls_auth_clients", key_tls_auth_clients,
	    0 },
	[SK_TLS_PROTOCOLS] = { "tls_protocols", key_tls_protocols, 0 },
	[SK_TLS_CIPHERS] = { "tls_ciphers", key_tls_ciphers, 0 },
	[SK_TLS_CIPHERSUITES] = { "tls_ciphersuites", key_tls_ciphers, 0 },
	[SK_TLS_HANDSHAKE_TIMEOUT] = { "tls_handshake_timeout",
	    key_tls_handshake_timeout, 0 },
	[SK_TLS_REPLICATION] = { "tls_replication", key_tls_replication, 0 },
	[SK_METRICS_TLS] = { "metrics_tls", key_metrics_tls, 0 },
};

/* ---- [cluster] keys (issue 33) ---- */

static void
key_cluster_enabled(struct parser *p, const char *key, const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0)
		p->cfg->cluster_enabled = 1;
	else if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0)
		p->cfg->cluster_enabled = 0;
	else
		perror_at(p, p->lineno, "%s: \"%s\" is not one of on, off",
		    key, SHOW(v));
}

/* What clients are told to reach this node at: host:port like listen;
 * empty = listen's address. */
static void
key_cluster_announce(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (*v == '\0') {
		set_string(p, &p->cfg->cluster_announce, NULL);
		return;
	}
	if ((why = check_listen(v)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->cluster_announce, v);
}

/* What TLS clients are told, as announce for the others; empty: the
 * announced host with tls_listen's port. */
static void
key_cluster_tls_announce(struct parser *p, const char *key, const char *v)
{
	const char *why;

	if (*v == '\0') {
		set_string(p, &p->cfg->cluster_tls_announce, NULL);
		return;
	}
	if ((why = check_listen(v)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(v), why);
		return;
	}
	set_string(p, &p->cfg->cluster_tls_announce, v);
}

const struct key_def cluster_keys[CK_COUNT] = {
	[CK_ENABLED] = { "enabled", key_cluster_enabled, 0 },
	[CK_ANNOUNCE] = { "announce", key_cluster_announce, 0 },
	[CK_TLS_ANNOUNCE] = { "tls_announce", key_cluster_tls_announce, 0 },
};

/* ---- loading ---- */

static struct config *
config_new(struct parser *p, const char *name)
{
	struct config *cfg;

	if ((cfg = calloc(1, sizeof(*cfg))) == NULL) {
		p->oom = 1;
		return NULL;
	}
	cfg->path = xstrdup(p, name);
	cfg->listen = xstrdup(p, DEFAULT_LISTEN);
	cfg->unix_socket_mode = 0660;
	cfg->unix_socket_group = (gid_t)-1;
	cfg->data_dir = xstrdup(p, DEFAULT_DATA_DIR);
	cfg->snapshot_interval = 60;
	cfg->default_filter = xstrdup(p, DEFAULT_FILTER);
	cfg->max_clients = 10000;
	cfg->max_line = 65536;
	cfg->output_buffer_limit = 1 << 20;
	cfg->idle_timeout = 0;
	cfg->auth_token = NULL;
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->create_filters = 1;
	cfg->new_filter_capacity = 1000000;
	cfg->new_filter_error_rate = 0.001;
	cfg->new_filter_growth = 2;
	cfg->max_filters = 10000;
	cfg->journal = JOURNAL_EVERYSEC;
	cfg->journal_max = 256 << 20;
	cfg->repl_backlog_size = 64 << 20;
	cfg->replica_priority = 100;
	cfg->tls_auth_clients = TLS_AUTH_YES;
	cfg->tls_protocols = TLS_PROTO_DEFAULT;
	cfg->tls_handshake_timeout = 10;
	return cfg;
}

static void
parser_init(struct parser *p, const char *name, struct config_errors *errs)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->errs = errs;
	if (errs != NULL) {
		errs->msgs = NULL;
		errs->n = 0;
	}
}

/* A cluster node's config filters are partitioned by slot (the [cluster]
 * section may come after the [filter.*] ones), cuckoo filters too (their
 * tables in slot ranges, cuckoo.h). */
static void
partition_filters(struct config *cfg)
{
	for (size_t i = 0; i < cfg->nfilters; i++)
		cfg->filters[i].shape.slot_major = cfg->cluster_enabled;
}

static struct config *
parse(struct parser *p)
{
	int r;

	if ((p->cfg = config_new(p, p->name)) == NULL || p->oom)
		goto fail;
	r = config_read(p);
	close_section(p);
	if (p->read_errno != 0)
		perror_at(p, 0, "read error: %s", strerror(p->read_errno));
	if (r == -2)
		p->oom = 1;
	else if (r > 0 && r != p->first_syntax)
		perror_at(p, r, "syntax error");
	if (p->token_line != 0 && p->token_file_line != 0)
		perror_at(p, p->token_line > p->token_file_line ?
		    p->token_line : p->token_file_line, "auth_token and "
		    "auth_token_file are both set (lines %d and %d); keep one",
		    p->token_line, p->token_file_line);
	check_tls(p);
	partition_filters(p->cfg);
	if (p->nerrors == 0 && !p->oom)
		return p->cfg;
fail:
	if (p->oom)
		perror_at(p, 0, "out of memory");
	sort_errors(p);
	config_free(p->cfg);
	p->cfg = NULL;
	return NULL;
}

struct config *
config_load(const char *path, struct config_errors *errs)
{
	struct parser	 p;
	struct config	*cfg = NULL;

	parser_init(&p, path, errs);
	if ((p.fp = fopen(path, "re")) == NULL)
		perror_at(&p, 0, "cannot open: %s", strerror(errno));
	else {
		cfg = parse(&p);
		free(p.buf);
		fclose(p.fp);
	}
	free(p.lines);
	return cfg;
}

struct config *
config_load_string(const char *text, const char *name,
    struct config_errors *errs)
{
	struct parser	 p;
	struct config	*cfg;

	parser_init(&p, name != NULL ? name : "(string)", errs);
	p.text = text != NULL ? text : "";
	cfg = parse(&p);
	free(p.lines);
	return cfg;
}

static void
free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void
config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nfilters; i++) {
		free_list(cfg->filters[i].hosts, cfg->filters[i].nhosts);
		free_list(cfg->filters[i].prefixes, cfg->filters[i].nprefixes);
	}
	free(cfg->filters);
	free(cfg->path);
	free(cfg->listen);
	free(cfg->metrics_listen);
	free(cfg->unix_socket);
	free(cfg->data_dir);
	free(cfg->default_filter);
	free(cfg->replicaof);
	free(cfg->tls_listen);
	free(cfg->cluster_announce);
	free(cfg->cluster_tls_announce);
	free(cfg->tls_cert_file);
	free(cfg->tls_key_file);
	free(cfg->tls_ca_cert_file);
	free(cfg->tls_ciphers);
	free(cfg->tls_ciphersuites);
	if (cfg->primary_token != NULL) {
		explicit_bzero(cfg->primary_token, strlen(cfg->primary_token));
		free(cfg->primary_token);
	}
	if (cfg->auth_token != NULL) {
		/* a secret: leave no copy in freed memory */
		explicit_bzero(cfg->auth_token, strlen(cfg->auth_token));
		free(cfg->auth_token);
	}
	free(cfg->users_file);
	free(cfg->primary_user);
	if (cfg->metrics_token != NULL) {
		explicit_bzero(cfg->metrics_token, strlen(cfg->metrics_token));
		free(cfg->metrics_token);
	}
	free(cfg);
}

void
config_errors_free(struct config_errors *errs)
{
	if (errs == NULL)
		return;
	free_list(errs->msgs, errs->n);
	errs->msgs = NULL;
	errs->n = 0;
}

const struct filter_config *
config_find_filter(const struct config *cfg, const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nfilters; i++)
		if (strcmp(cfg->filters[i].name, name) == 0)
			return &cfg->filters[i];
	return NULL;
}
