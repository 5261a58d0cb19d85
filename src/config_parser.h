/*
 * config_parser.h - what config.c, config_filter.c, config_reader.c and
 * config_value.c share.
 *
 * Split by what each part knows, top to bottom: config.c the [server]
 * keys, loading and freeing; config_filter.c the [filter.NAME] sections
 * (what a filter's shape is); config_reader.c the lines as inih reads
 * them and where each key goes; config_value.c the errors and the values
 * (config_value.h, included here), which the three above use and which
 * calls none of them.
 *
 * Nothing else includes it: config.h is the interface.
 */
#ifndef SEEND_CONFIG_PARSER_H
#define SEEND_CONFIG_PARSER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "config_value.h"

#define MAX_SECONDS		(86400ULL * 365)

enum section_kind {
	SEC_NONE,	/* before the first header */
	SEC_SERVER,
	SEC_FILTER,
	SEC_CLUSTER,	/* [cluster] (issue 33) */
	SEC_SKIP,	/* a bad header, already reported: ignore its keys */
};

enum server_key {
	SK_LISTEN,
	SK_UNIX_SOCKET,
	SK_UNIX_SOCKET_MODE,
	SK_UNIX_SOCKET_GROUP,
	SK_DATA_DIR,
	SK_SNAPSHOT_INTERVAL,
	SK_DEFAULT_FILTER,
	SK_MAX_CLIENTS,
	SK_MAX_LINE,
	SK_OUTPUT_BUFFER_LIMIT,
	SK_IDLE_TIMEOUT,
	SK_AUTH_TOKEN,
	SK_AUTH_TOKEN_FILE,
	SK_USERS_FILE,
	SK_METRICS_TOKEN,
	SK_LOG_LEVEL,
	SK_MAX_MEMORY,
	SK_METRICS_LISTEN,
	SK_CREATE_FILTERS,
	SK_NEW_FILTER_CAPACITY,
	SK_NEW_FILTER_ERROR_RATE,
	SK_NEW_FILTER_GROWTH,
	SK_MAX_FILTERS,
	SK_JOURNAL,
	SK_JOURNAL_MAX,
	SK_REPLICAOF,
	SK_PRIMARY_TOKEN,
	SK_PRIMARY_USER,
	SK_REPL_BACKLOG_SIZE,
	SK_REPLICA_PRIORITY,
	SK_TLS_LISTEN,
	SK_TLS_CERT_FILE,
	SK_TLS_KEY_FILE,
	SK_TLS_CA_CERT_FILE,
	SK_TLS_AUTH_CLIENTS,
	SK_TLS_PROTOCOLS,
	SK_TLS_CIPHERS,
	SK_TLS_CIPHERSUITES,
	SK_TLS_HANDSHAKE_TIMEOUT,
	SK_TLS_REPLICATION,
	SK_METRICS_TLS,
	SK_COUNT
};

enum cluster_key {
	CK_ENABLED,
	CK_ANNOUNCE,
	CK_TLS_ANNOUNCE,
	CK_COUNT
};

enum filter_key {
	FK_CAPACITY,
	FK_ERROR_RATE,
	FK_HOSTS,
	FK_PREFIXES,
	FK_GROWTH,
	FK_EXPIRE,
	FK_NORMALIZE,
	FK_TYPE,
	FK_COUNT
};

struct parser {
	struct config		*cfg;
	struct config_errors	*errs;
	const char		*name;		/* the file, for messages */
	size_t			 nerrors;
	int			*lines;		/* of each errs->msgs[] */
	int			 oom;

	/* the input: a FILE, or a string */
	FILE			*fp;
	const char		*text;
	char			*buf;		/* getline's */
	size_t			 bufsize;
	int			 read_errno;

	/* the line inih is working on */
	int			 lineno;
	int			 cont;		/* a continuation line */
	int			 have_prev;	/* inih remembers a key name */
	int			 first_syntax;	/* our first syntax error */

	/* the section it is in */
	enum section_kind	 kind;
	size_t			 cur;		/* cfg->filters index */
	int			 server_line;	/* first [server] header */
	int			 server_keys[SK_COUNT]; /* line, 0 = unset */
	int			 filter_keys[FK_COUNT];
	int			 cluster_line;	/* first [cluster] header */
	int			 cluster_keys[CK_COUNT];
	int			 filter_bad;	/* a bad capacity/error_rate */
	int			 token_line;	/* of a non-empty auth_token */
	int			 token_file_line; /* and auth_token_file */
};

typedef void	(*key_fn)(struct parser *, const char *, const char *);

struct key_def {
	const char	*name;
	key_fn		 fn;
	int		 multi;	/* may repeat and continue: appends */
};

/* The keys of each section, indexed by enum server_key and filter_key. */
extern const struct key_def server_keys[SK_COUNT];	/* config.c */
extern const struct key_def filter_keys[FK_COUNT];	/* config_filter.c */
extern const struct key_def cluster_keys[CK_COUNT];	/* config.c */

/* ---- config_filter.c: [filter.NAME] sections ---- */

/* The filter whose section the parser is in. */
static inline struct filter_config *
cur_filter(struct parser *p)
{
	return &p->cfg->filters[p->cur];
}

/* A decimal error rate in [1e-9, 0.5]: 0, or -1 after saying why. */
int		 parse_rate(struct parser *, const char *key, const char *v,
		    double *out);
/* A growth factor, or "off" (0): 0, or -1 after saying why. */
int		 parse_growth(struct parser *, const char *key, const char *v,
		    unsigned *out);
/* A [filter.NAME] header: name is len bytes, not NUL-terminated. */
void		 open_filter(struct parser *, const char *name, size_t len);
/* The end of any section: checks a filter's size if it was one. */
void		 close_section(struct parser *);

/* ---- config_reader.c: inih's side ---- */

/* Runs inih over p->fp or p->text: ini_parse_stream's result. */
int		 config_read(struct parser *);

#endif
