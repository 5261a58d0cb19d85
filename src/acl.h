/*
 * acl.h - users as Redis 6+ ACLs: who may run which command on which
 * filter (issue 32).
 *
 * Three parts, all below the command table and knowing nothing of
 * sessions, sockets or filters:
 *
 *  - The catalog: every command name seend answers (the table's, both
 *    protocols) and the subcommands of its container commands (CLIENT,
 *    CONFIG, ACL...), each with a bit number and its ACL categories. The
 *    categories are Redis 7.0.15's, read from the COMMAND INFO entries
 *    (command_docs.c), so they are never typed twice; seend's own
 *    commands take them from their flags as Redis gives a module command
 *    its implicit ones, plus @bloom (BF.*) or @cuckoo (CF.*); line
 *    commands take their RESP twin's (SEEN as SETNX, CHECK as EXISTS,
 *    FORGET as CF.DEL, FILTERS as INFO, RESET as DEL). The command module
 *    fills it once at start (command_users_init).
 *
 *  - The users: Redis's rules (on off >pass #hash <pass !hash nopass
 *    resetpass ~pat %R~pat %W~pat allkeys resetkeys &chan allchannels
 *    resetchannels +cmd -cmd +cmd|sub +@cat -@cat allcommands nocommands
 *    reset), applied in order to a bitmap of allowed commands, key
 *    patterns and channel patterns, as Redis 7.0's acl.c does. Passwords
 *    are kept as SHA-256 only and compared in constant time. The set
 *    always holds "default", which sessions that never authenticated as
 *    someone else run as.
 *
 *  - The ACL LOG: refusals and failed logins, newest first, similar ones
 *    within a minute counted on one entry, at most ACL_LOG_MAX.
 *
 * A permission check is, for the unrestricted default user of a server
 * without users_file (the common case), one test of acl_limits; then one
 * bit test per command (acl_user_can) and the key patterns of the filters
 * it names (acl_user_key).
 */
#ifndef SEEND_ACL_H
#define SEEND_ACL_H

#include <stddef.h>
#include <stdint.h>

/* Command bits; the last one is set only by +@all ("future commands"). */
#define ACL_CMD_MAX	512
#define ACL_WORDS	(ACL_CMD_MAX / 64)

/* Categories: Redis 7.0's, in its order (ACL CAT), then seend's. */
enum acl_cat {
	ACL_CAT_KEYSPACE, ACL_CAT_READ, ACL_CAT_WRITE, ACL_CAT_SET,
	ACL_CAT_SORTEDSET, ACL_CAT_LIST, ACL_CAT_HASH, ACL_CAT_STRING,
	ACL_CAT_BITMAP, ACL_CAT_HYPERLOGLOG, ACL_CAT_GEO, ACL_CAT_STREAM,
	ACL_CAT_PUBSUB, ACL_CAT_ADMIN, ACL_CAT_FAST, ACL_CAT_SLOW,
	ACL_CAT_BLOCKING, ACL_CAT_DANGEROUS, ACL_CAT_CONNECTION,
	ACL_CAT_TRANSACTION, ACL_CAT_SCRIPTING, ACL_CAT_BLOOM, ACL_CAT_CUCKOO,
	ACL_NCATS
};

/* What a key argument does (Redis's key spec flags, ACL-wise). */
#define ACL_KEY_READ	1
#define ACL_KEY_WRITE	2

/* User flags. */
#define ACL_USER_ON		0x01
#define ACL_USER_NOPASS		0x02
#define ACL_USER_ALLKEYS	0x04
#define ACL_USER_ALLCHANNELS	0x08
#define ACL_USER_ALLCOMMANDS	0x10
#define ACL_USER_GONE		0x20	/* deleted: its sessions close */
#define ACL_USER_SKIP_SANITIZE	0x40	/* skip-sanitize-payload */
#define ACL_USER_SANITIZE	0x80	/* sanitize-payload */

struct acl_pattern {
	char		*text;
	size_t		 len;
	int		 flags;		/* ACL_KEY_*; channels: 0 */
};

struct acl_user {
	char		*name;
	size_t		 namelen;
	unsigned	 refs;		/* the set's, and each session's */
	unsigned	 flags;		/* ACL_USER_* */
	uint64_t	 allowed[ACL_WORDS];
	unsigned char	(*pass)[32];	/* SHA-256 of each password */
	size_t		 npass;
	struct acl_pattern *keys;
	size_t		 nkeys;
	struct acl_pattern *chans;
	size_t		 nchans;
};

/*
 * Nonzero when some check can refuse something: a user other than an
 * unrestricted one exists, or the default user needs a password that
 * auth_token does not enforce. 0 (no users_file, the default user with
 * everything): command.c skips every check on one predictable branch.
 */
extern int		 acl_limits;
/* The default user: never freed (a load copies into it). */
extern struct acl_user	*acl_default;

/* ---- the catalog ---- */

/* The bit of command lname (the table's lower case name), added with its
 * categories and subcommands on first sight; -1 if the catalog is full. */
int		 acl_catalog_add(const char *lname);
/* The bit of id's subcommand sub (any case), or -1. */
int		 acl_catalog_sub(int id, const char *sub, size_t len);
/* Whether id has subcommands (CLIENT, CONFIG...). */
int		 acl_catalog_container(int id);
/* "name" or "name|sub". */
const char	*acl_catalog_name(int id);
/* The command's key arguments as COMMAND INFO gives them (first, last,
 * step; last < 0 counts from the end) and what it does with them
 * (ACL_KEY_*, 0: neither, as EXISTS); -1 if it has none. */
int		 acl_catalog_keys(int id, int *first, int *last, int *step);
/* Category by name (no '@', any case), or -1; and its name. */
int		 acl_category(const char *name, size_t len);
const char	*acl_category_name(int cat);
/* Whether command id is in category cat. */
int		 acl_catalog_in(int id, int cat);
/* Catalog size (bits in use). */
int		 acl_catalog_count(void);

/* ---- checks ---- */

static inline int
acl_user_can(const struct acl_user *u, int id)
{
	return (int)((u->allowed[id >> 6] >> (id & 63)) & 1);
}

/* No restriction at all: every command, key and channel. */
static inline int
acl_user_unrestricted(const struct acl_user *u)
{
	return (u->flags & (ACL_USER_ALLCOMMANDS | ACL_USER_ALLKEYS |
	    ACL_USER_ALLCHANNELS)) == (ACL_USER_ALLCOMMANDS | ACL_USER_ALLKEYS |
	    ACL_USER_ALLCHANNELS);
}

/* Whether u may touch key (a filter's name) as flags (ACL_KEY_*) say. */
int		 acl_user_key(const struct acl_user *u, const char *key,
		    size_t len, int flags);
/* Whether u may touch every key as flags say (allkeys, or ~* / %R~*...). */
int		 acl_user_all_keys(const struct acl_user *u, int flags);
/* A channel (is_pattern: a PSUBSCRIBE pattern, matched literally). */
int		 acl_user_channel(const struct acl_user *u, const char *ch,
		    size_t len, int is_pattern);
/* Whether the user is deleted or off: its sessions must close. */
static inline int
acl_user_gone(const struct acl_user *u)
{
	return (u->flags & ACL_USER_GONE) || !(u->flags & ACL_USER_ON);
}
/* The default user lets a new connection in without AUTH (on, nopass). */
int		 acl_default_open(void);
/* The default user needs a password that auth_token does not ask for (the
 * users file gives it one, or turns it off): sessions that never
 * authenticated must AUTH first. */
int		 acl_default_needs_auth(void);

/* ---- users ---- */

struct acl_user	*acl_find(const char *name, size_t len);
/*
 * A login: the user (a reference taken) if name exists, is on and pass
 * is one of its passwords (or it is nopass); else NULL.
 */
struct acl_user	*acl_login(const char *name, size_t len, const char *pass,
		    size_t passlen);
void		 acl_ref(struct acl_user *);
void		 acl_unref(struct acl_user *);
/* Users, sorted by name. */
size_t		 acl_count(void);
struct acl_user	*acl_at(size_t i);

/*
 * ACL SETUSER name op...: every op applied to a copy, which replaces the
 * user (created if new) only if all apply. 0, or -1 with Redis's error
 * text in err.
 */
int		 acl_setuser(const char *name, size_t len, const char **ops,
		    const size_t *lens, int nops, char *err, size_t errlen);
/* ACL DELUSER: 1 if it existed (it is marked gone), else 0. */
int		 acl_deluser(const char *name, size_t len);
/* One rule applied to u: 0, or -1 with Redis's reason in err. */
int		 acl_user_apply(struct acl_user *u, const char *op, size_t len,
		    char *err, size_t errlen);

/*
 * The users' definition, from users_file (path; NULL: none, the default
 * user alone) with auth_token (NULL: none) as the default user's
 * password. All or nothing: -1 with every error ("file:line: ...", as
 * Redis's ACL LOAD words them) in err and the users unchanged. Users no
 * longer defined are marked gone, those still defined are updated in
 * place (sessions keep their pointers).
 */
int		 acl_configure(const char *path, const char *auth_token,
		    char *err, size_t errlen);
/* The same from a file's text (name: its name in errors; text NULL: no
 * file). */
int		 acl_configure_text(const char *text, size_t len,
		    const char *name, const char *auth_token, char *err,
		    size_t errlen);
/* The text of a file with users' definitions, checked as acl_configure
 * would (the fuzz target): 0 or -1 with the errors. Changes nothing. */
int		 acl_check_text(const char *text, size_t len, const char *name,
		    char *err, size_t errlen);
/* ACL SAVE: every user, one "user ..." line each, written atomically
 * (temp file, fsync, rename, fsync of the directory). 0 or -1. */
int		 acl_save(const char *path, char *err, size_t errlen);
/*
 * A user as ACL LIST describes it, without "user <name> ": flags,
 * #hashes, key and channel patterns, then the command rules (+@all or
 * -@all and the categories and commands that best give its bitmap).
 * Returns the length written (truncated to outlen - 1).
 */
size_t		 acl_describe(const struct acl_user *u, char *out, size_t outlen);
/* Only the command rules (ACL GETUSER's "commands"). */
size_t		 acl_describe_commands(const struct acl_user *u, char *out,
		    size_t outlen);

/* SHA-256 of p as 64 lower case hex digits (and a NUL). */
void		 acl_hash_hex(const void *p, size_t len, char out[65]);

/* ---- ACL LOG ---- */

#define ACL_LOG_MAX	128

#define ACL_DENIED_CMD		0
#define ACL_DENIED_KEY		1
#define ACL_DENIED_CHANNEL	2
#define ACL_DENIED_AUTH		3

struct acl_log_entry {
	uint64_t	 count;
	int		 reason;	/* ACL_DENIED_* */
	int		 multi;		/* context: "multi", else "toplevel" */
	char		*object;
	size_t		 objlen;
	char		*username;
	size_t		 userlen;
	int64_t		 ctime_ms;
	char		*cinfo;
};

void		 acl_log_add(int reason, int multi, const char *object,
		    size_t objlen, const char *user, size_t userlen,
		    const char *cinfo);
size_t		 acl_log_count(void);
const struct acl_log_entry *acl_log_at(size_t i);	/* 0: newest */
void		 acl_log_reset(void);
int64_t		 acl_now_ms(void);

#endif
