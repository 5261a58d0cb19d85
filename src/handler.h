/*
 * handler.h - what the command handlers share: the table entry, one
 * function per command (in cmd_*.c, by what it acts on), and the helpers
 * they use. Only command.c and the cmd_*.c files include it.
 *
 *   cmd_acl.c         ACL (the users themselves: acl.c)
 *   cmd_connection.c  PING ECHO AUTH SELECT CLIENT COMMAND CONFIG HELLO
 *                     READONLY READWRITE QUIT SHUTDOWN
 *   cmd_keys.c        URL keys and set members: SETNX SET GET MGET EXISTS
 *                     SADD SISMEMBER SMISMEMBER SCARD
 *   cmd_bloom.c       RedisBloom's BF.*
 *   cmd_dump.c        moving a filter: BF.SCANDUMP BF.LOADCHUNK
 *   cmd_merge.c       MERGE
 *   cmd_cuckoo.c      RedisBloom's CF.* (cuckoo filters)
 *   cmd_keyspace.c    filters as keys: DEL UNLINK TYPE KEYS SCAN EXPIRE...
 *                     FLUSHALL FLUSHDB MEMORY and the line protocol's RESET
 *   cmd_info.c        INFO FILTERS SAVE DBSIZE
 *   cmd_pubsub.c      SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH
 *                     (the channels themselves: pubsub.c)
 *   cmd_multi.c       MULTI EXEC DISCARD, and the queue they keep
 *   cmd_replication.c ROLE REPLICAOF SLAVEOF and INFO's replication
 *                     fields (issue 23: a primary without replicas)
 *   cmd_cluster.c     CLUSTER ASKING (the node itself: cluster.c)
 *   cmd_cluster_move.c CLUSTER SLOTBITS SLOTMERGE HANDOFF (a slot's move:
 *                     cluster_move.c)
 *   command.c         the table, dispatch, SEEN/CHECK and the fast paths
 */
#ifndef SEEND_HANDLER_H
#define SEEND_HANDLER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "command.h"
#include "result.h"

struct core;

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

typedef void (*command_fn)(struct session *, struct op *, struct result *);

struct command_hooks;

struct command {
	const char	*name;		/* upper case */
	const char	*lname;		/* as Redis names it in errors */
	enum cmd_id	 id;		/* counted under (CMD_COUNT: none) */
	int		 min_args;	/* not counting the command itself */
	int		 max_args;	/* -1: any */
	int		 proto;		/* COMMAND_LINE, COMMAND_RESP or both */
	int		 before_auth;	/* allowed before AUTH */
	command_fn	 fn;
	int		 write;		/* refused on a replica (READONLY) */
	const struct command_hooks *hooks;	/* NULL: none */
};

/*
 * What an entry does besides answering its command: the table's
 * per-turn and per-session work, which command.c runs by walking the
 * table (it gathers the entries' hooks once) without naming a handler.
 * Any hook may be NULL; entries may share one set.
 */
struct command_hooks {
	/* once a second (BF.SCANDUMP: dumps idle for a minute go) */
	void	(*tick)(time_t now);
	/* a session ends: what it held goes (a BF.LOADCHUNK in progress,
	 * MULTI's queue) */
	void	(*session_end)(struct session *);
	/* the loop turn's background step (MERGE): 1 while work remains */
	int	(*work)(struct core *);
	/* a session in a transaction (s->multi): a command it sends is
	 * queued, +QUEUED (or an error that makes EXEC answer -EXECABORT),
	 * and one refused (unknown, arity...) makes EXEC abort */
	void	(*queue)(struct session *, struct op *, struct result *);
	void	(*refuse)(struct session *);
};

/* What a write gets on a replica, as Redis words it ("READONLY" is the
 * RESP error's code). */
#define READONLY_TEXT \
	"READONLY You can't write against a read only replica."


#define LINE	COMMAND_LINE
#define RESP	COMMAND_RESP
#define BOTH	(COMMAND_LINE | COMMAND_RESP)

/* command.c */
void	cmd_seen(struct session *, struct op *, struct result *);
/* An ACL LOG entry (acl.h) for s: reason ACL_DENIED_*, what was refused,
 * the command; user NULL: s's own. */
void	command_acl_log(const struct session *s, int reason, const char *object,
	    size_t len, const char *cmd, const char *user, size_t userlen);
/* cmd_acl.c */
void	cmd_acl(struct session *, struct op *, struct result *);
/* cmd_cluster.c */
void	cmd_cluster(struct session *, struct op *, struct result *);
void	cmd_asking(struct session *, struct op *, struct result *);
/* cmd_cluster_move.c (cmd_cluster dispatches them) */
void	cmd_cluster_slotbits(struct session *, struct op *, struct result *);
void	cmd_cluster_slotmerge(struct session *, struct op *, struct result *);
void	cmd_cluster_handoff(struct session *, struct op *, struct result *);
/* cmd_connection.c */
void	cmd_ping(struct session *, struct op *, struct result *);
void	cmd_echo(struct session *, struct op *, struct result *);
void	cmd_auth(struct session *, struct op *, struct result *);
void	cmd_select(struct session *, struct op *, struct result *);
void	cmd_client(struct session *, struct op *, struct result *);
void	cmd_command(struct session *, struct op *, struct result *);
void	cmd_config(struct session *, struct op *, struct result *);
void	cmd_hello(struct session *, struct op *, struct result *);
void	cmd_readonly(struct session *, struct op *, struct result *);
void	cmd_quit(struct session *, struct op *, struct result *);
void	cmd_shutdown(struct session *, struct op *, struct result *);
/* cmd_keys.c */
void	cmd_setnx(struct session *, struct op *, struct result *);
void	cmd_set(struct session *, struct op *, struct result *);
void	cmd_get(struct session *, struct op *, struct result *);
void	cmd_mget(struct session *, struct op *, struct result *);
void	cmd_exists(struct session *, struct op *, struct result *);
void	cmd_sadd(struct session *, struct op *, struct result *);
void	cmd_sismember(struct session *, struct op *, struct result *);
void	cmd_scard(struct session *, struct op *, struct result *);
/* cmd_bloom.c */
void	cmd_bf_add(struct session *, struct op *, struct result *);
void	cmd_bf_madd(struct session *, struct op *, struct result *);
void	cmd_bf_card(struct session *, struct op *, struct result *);
void	cmd_bf_exists(struct session *, struct op *, struct result *);
void	cmd_bf_mexists(struct session *, struct op *, struct result *);
void	cmd_bf_reserve(struct session *, struct op *, struct result *);
void	cmd_bf_insert(struct session *, struct op *, struct result *);
void	cmd_bf_info(struct session *, struct op *, struct result *);
/* cmd_dump.c */
void	cmd_bf_scandump(struct session *, struct op *, struct result *);
void	cmd_bf_loadchunk(struct session *, struct op *, struct result *);
/* cmd_cuckoo.c */
void	cmd_cf_reserve(struct session *, struct op *, struct result *);
void	cmd_cf_add(struct session *, struct op *, struct result *);
void	cmd_cf_insert(struct session *, struct op *, struct result *);
void	cmd_cf_exists(struct session *, struct op *, struct result *);
void	cmd_cf_mexists(struct session *, struct op *, struct result *);
void	cmd_cf_del(struct session *, struct op *, struct result *);
void	cmd_cf_count(struct session *, struct op *, struct result *);
void	cmd_cf_info(struct session *, struct op *, struct result *);
void	cmd_cf_compact(struct session *, struct op *, struct result *);
/* command.c: FORGET [<filter>] <key> */
void	cmd_forget(struct session *, struct op *, struct result *);

/* cmd_merge.c: MERGE; its work hook takes a step of the merge under way */
void	cmd_merge(struct session *, struct op *, struct result *);
extern const struct command_hooks cmd_merge_hooks;
/* The destination of a merge queued or under way whose bits fall in slots
 * first..last (a named filter on one of them, or a partitioned one: it
 * spans them all), or NULL: a hand-over must not begin under it
 * (cmd_cluster_move.c), or what the merge writes after the move's copy
 * would stay behind. */
const char *cmd_merge_into_slots(unsigned first, unsigned last);
/* cmd_dump.c: its hooks drop dumps idle for a minute, and a session's
 * load in progress */
extern const struct command_hooks cmd_dump_hooks;
/* cmd_keyspace.c */
void	cmd_del(struct session *, struct op *, struct result *);	/* DEL UNLINK */
void	cmd_reset(struct session *, struct op *, struct result *);
void	cmd_type(struct session *, struct op *, struct result *);
void	cmd_keys(struct session *, struct op *, struct result *);
void	cmd_scan(struct session *, struct op *, struct result *);
/* EXPIRE PEXPIRE EXPIREAT PEXPIREAT */
void	cmd_expire(struct session *, struct op *, struct result *);
void	cmd_ttl(struct session *, struct op *, struct result *);	/* TTL PTTL */
void	cmd_persist(struct session *, struct op *, struct result *);
void	cmd_flushall(struct session *, struct op *, struct result *);	/* FLUSHDB */
void	cmd_memory(struct session *, struct op *, struct result *);
/* cmd_info.c */
void	cmd_info(struct session *, struct op *, struct result *);
void	cmd_filters(struct session *, struct op *, struct result *);
void	cmd_save(struct session *, struct op *, struct result *);
void	cmd_dbsize(struct session *, struct op *, struct result *);
/* cmd_pubsub.c */
void	cmd_subscribe(struct session *, struct op *, struct result *);
void	cmd_unsubscribe(struct session *, struct op *, struct result *);
void	cmd_publish(struct session *, struct op *, struct result *);
/* cmd_multi.c */
void	cmd_multi(struct session *, struct op *, struct result *);
void	cmd_exec(struct session *, struct op *, struct result *);
void	cmd_discard(struct session *, struct op *, struct result *);
/* the queue: a command sent inside MULTI, one refused, the session's end */
extern const struct command_hooks cmd_multi_hooks;
/* cmd_replication.c */
void	cmd_role(struct session *, struct op *, struct result *);
void	cmd_replicaof(struct session *, struct op *, struct result *);
void	cmd_replconf(struct session *, struct op *, struct result *);
void	cmd_psync(struct session *, struct op *, struct result *);
void	cmd_wait(struct session *, struct op *, struct result *);
/* This run's id (40 hex digits, random per start), for INFO's run_id. */
const char	*command_run_id(void);
/* INFO's replication fields, and its Stats section's sync counters, as
 * "name value" lines, into b. */
void		 command_info_replication(const struct core *, struct buf *b);
void		 command_info_repl_stats(const struct core *, struct buf *b);

/* The table, for COMMAND COUNT and INFO's counters. */
const struct command *command_table(size_t *n);
/* The entry for a command name (any case) in proto, or NULL. */
const struct command *command_lookup(const char *name, size_t len, int proto);

/* A token for an error message: at most 64 bytes, bytes that would break
 * the reply line shown as '?'. */
const char	*command_printable(const char *tok, size_t len, char *out,
		    size_t outlen);
/* SEEN (check 0) or CHECK of one key of a RESP command in f: the answer,
 * or FILTER_FULL with the error in r. */
int		 command_dedup_key(struct session *, struct filter *,
		    const char *key, size_t len, int check, struct result *r);
/* The error of a key no filter takes. */
void		 command_no_route(struct session *, struct result *r);
/*
 * FORGET / CF.DEL of one key in f, journaled before the reply: 1 a copy
 * was forgotten, 0 none was held, -1 with the error in r (a bloom filter
 * cannot forget; the journal refused it).
 */
int		 command_forget_key(struct session *, struct filter *,
		    const char *key, size_t len, struct result *r);
/* CF.ADD / CF.INSERT of one key in a cuckoo filter: one more copy stored,
 * held or not, journaled: 0, or FILTER_FULL with the error in r. */
int		 command_add_copy(struct session *, struct filter *,
		    const char *key, size_t len, struct result *r);
/* The filter a RESP command names in argv[1]; creates it (with the
 * new_filter_* settings) when create is set and create_filters is on.
 * NULL: missing, with r set if that is an error. */
struct filter	*command_named_filter(struct session *, struct op *, int create,
		    struct result *r);
/* r's error as an element of an array (BF.MADD's, CF.INSERT's): 0, or
 * -1 out of memory. */
int		 command_add_error(struct buf *, const struct result *r);
/* BF.MEXISTS / CF.MEXISTS: CHECK of argv[2..] in f (NULL: a missing
 * filter, or one of another type, holds nothing), in one array. */
void		 command_mexists(struct session *, struct op *, struct filter *,
		    struct result *);
/*
 * A runtime filter made by a command (BF.RESERVE, CF.RESERVE, a first
 * BF.ADD, SADD...): in the registry, and journaled before the reply so
 * that its keys outlive a kill -9 before its first snapshot. NULL with
 * the error in r.
 */
struct filter	*command_create_filter(struct session *, const char *name,
		    size_t len, uint64_t capacity, double error_rate,
		    unsigned growth, int type, unsigned max_kicks,
		    struct result *r);
/* The Bloom filter named by argv[1] (URL keys are another namespace: a
 * name is only ever a filter), in *fp when found (cmd_bloom.c). */
enum bf_status { BF_FOUND, BF_MISSING, BF_WRONGTYPE };
#define WRONGTYPE_TEXT \
	"WRONGTYPE Operation against a key holding the wrong kind of value"
enum bf_status	 command_bf_lookup(struct session *, struct op *,
		    struct filter **fp);
/* The same for a filter of type (FILTER_TYPE_*): CF.* asks for cuckoo. */
enum bf_status	 command_typed_lookup(struct session *, struct op *, int type,
		    struct filter **fp);
/* Numbers as Redis and RedisBloom read them (integers as string2ll:
 * the whole text, no '+', spaces or leading zeros): 0, or -1. */
int		 command_arg_double(const char *s, size_t len, double *v);
int		 command_arg_ll(const char *s, size_t len, long long *v);

/* Case-insensitive compare of a word of a request with an upper-case word
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

#endif
