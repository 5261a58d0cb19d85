/*
 * config.h - the config file, parsed once into an immutable struct config.
 *
 * A reload parses a whole new struct and swaps it in only if it is valid, so
 * nothing ever runs on a half-applied config. Every problem is collected with
 * its file:line, not just the first one, so an operator fixes them in one go.
 */
#ifndef SEEND_CONFIG_H
#define SEEND_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "filter.h"
#include "log.h"

/* deadline.h and metrics.c size names by it */
#define CONFIG_NAME_MAX		FILTER_NAME_MAX
#define CONFIG_MAX_FILTERS	1024

/*
 * A [filter.NAME] section: the filter's shape (defaults: capacity 1000000,
 * error_rate 0.001, growth 2 of 1..16 or 0 = off, expire 0, normalize off)
 * and the keys routed to it.
 */
struct filter_config {
	char		 name[FILTER_NAME_MAX + 1];
	int		 line;		/* of its [filter.NAME] header */
	struct filter_shape shape;
	char		**hosts;	/* lower-cased; "*.x.com" or "x.com" */
	size_t		 nhosts;
	char		**prefixes;
	size_t		 nprefixes;
};

enum journal_mode {
	JOURNAL_OFF,
	JOURNAL_EVERYSEC,
	JOURNAL_ALWAYS,
};

struct config {
	char		*path;			/* as given, for messages */
	char		*listen;		/* "host:port", "[v6]:port"; NULL = off */
	char		*unix_socket;		/* NULL = none */
	mode_t		 unix_socket_mode;	/* default 0660 */
	gid_t		 unix_socket_group;	/* (gid_t)-1: the daemon's own */
	char		*data_dir;		/* default /var/lib/seend */
	unsigned	 snapshot_interval;	/* seconds, 0 = never periodic; default 60 */
	char		*default_filter;	/* default "default" */
	unsigned	 max_clients;		/* default 10000 */
	size_t		 max_line;		/* bytes, default 65536 */
	size_t		 output_buffer_limit;	/* bytes of unsent replies before we stop
						   reading a client; default 1 MiB */
	unsigned	 idle_timeout;		/* seconds, 0 = never; default 0 */
	char		*auth_token;		/* NULL = none; from auth_token or auth_token_file */
	/* users as Redis ACLs in Redis's file syntax (acl.h); NULL = none:
	 * the default user alone, with auth_token as its password */
	char		*users_file;
	/* the metrics endpoint asks "Authorization: Bearer <it>"; NULL: not */
	char		*metrics_token;
	enum log_level	 log_level;		/* default info */
	uint64_t	 max_memory;		/* bytes of all filters, 0 = no cap */
	struct filter_config *filters;		/* in file order */
	size_t		 nfilters;
	char		*metrics_listen;	/* Prometheus "host:port"; NULL = off */
	/* filters created at run time (BF.RESERVE, SADD, BF.ADD) */
	int		 create_filters;	/* on a missing name; default 1 */
	uint64_t	 new_filter_capacity;	/* default 1000000 */
	double		 new_filter_error_rate;	/* default 0.001 */
	unsigned	 new_filter_growth;	/* 0 = off; default 2 */
	unsigned	 max_filters;		/* all filters; default 10000 */
	enum journal_mode journal;		/* default everysec */
	uint64_t	 journal_max;		/* bytes, default 256 MiB */
	/* replication: the primary's "host:port" (NULL: a primary), the
	 * token sent to it, the stream kept for partial resyncs, and
	 * Sentinel's replica priority */
	char		*replicaof;
	char		*primary_token;
	char		*primary_user;	/* AUTH <user> <token>; NULL: AUTH <token> */
	uint64_t	 repl_backlog_size;	/* bytes, default 64 MiB */
	unsigned	 replica_priority;	/* default 100 */
	/* TLS (tls.h): a second listener, serving both protocols, with
	 * its certificate; the clients' certificates (tls_auth_clients:
	 * enum tls_auth, default yes as Redis's); the replica link */
	char		*tls_listen;		/* "host:port"; NULL = off */
	char		*tls_cert_file;
	char		*tls_key_file;
	char		*tls_ca_cert_file;
	int		 tls_auth_clients;	/* enum tls_auth */
	unsigned	 tls_protocols;		/* TLS_PROTO_*; TLSv1.2 TLSv1.3 */
	char		*tls_ciphers;		/* NULL: OpenSSL's */
	char		*tls_ciphersuites;	/* NULL: OpenSSL's */
	unsigned	 tls_handshake_timeout;	/* seconds, default 10 */
	int		 tls_replication;	/* to the primary's tls port */
	int		 metrics_tls;		/* metrics_listen over TLS */
	/* [cluster] (issue 33), read at start: a reload keeps the running
	 * values */
	int		 cluster_enabled;	/* default off */
	char		*cluster_announce;	/* host:port; NULL: listen's */
	char		*cluster_tls_announce;	/* host:port; NULL: tls_listen's */
};

/* The most filters max_filters allows (config-file ones are fewer:
 * CONFIG_MAX_FILTERS). */
#define CONFIG_MAX_RUNTIME_FILTERS	1000000

/* Problems found while loading, each "file:line: message". */
struct config_errors {
	char		**msgs;
	size_t		 n;
};

/*
 * Loads and validates path. Returns the new config, or NULL with every
 * problem in errs (which the caller frees with config_errors_free).
 */
struct config	*config_load(const char *path, struct config_errors *errs);
/* The same from a string in memory; name is used in messages (fuzzing, tests). */
struct config	*config_load_string(const char *text, const char *name,
		    struct config_errors *errs);
void		 config_free(struct config *);
void		 config_errors_free(struct config_errors *);
const struct filter_config *config_find_filter(const struct config *,
		    const char *name);
/* A count with an optional k/M/G/T suffix (10^3..), and a duration in
 * seconds with an optional s/m/h/d suffix, as the config file takes them;
 * 0, or -1 if s is not one. */
int		 config_parse_count(const char *s, uint64_t *out);
int		 config_parse_duration(const char *s, uint64_t *out);
/* The tls_* keys as tls.c takes them (pointers into cfg). */
struct tls_settings;
void		 config_tls_settings(const struct config *,
		    struct tls_settings *);
/* 1 if name is a valid filter name: [A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}. */
int		 config_valid_filter_name(const char *name, size_t len);

#endif
