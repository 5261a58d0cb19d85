/*
 * session.h - what a command knows of the client that sent it: who it is
 * (id, peer, CLIENT SETNAME), whether it has authenticated, the protocol
 * it asked for (HELLO 3), and whether its replies of this loop turn
 * answered a key new (so the journal must hold them first), its MULTI
 * queue and pub/sub subscriptions, plus the core it works on. A
 * connection (conn.c) embeds one; handlers see nothing else of it: no
 * socket, buffer or event (session_ops is what it lends them).
 */
#ifndef SEEND_SESSION_H
#define SEEND_SESSION_H

#include <stddef.h>
#include <stdint.h>

struct acl_user;
struct core;
struct dump_load;
struct session;
struct multi;
struct pubsub_subs;

/* CLIENT KILL's filters (cmd_connection.c parses them). */
#define SESSION_TYPE_ANY	0
#define SESSION_TYPE_NORMAL	1
#define SESSION_TYPE_PUBSUB	2
#define SESSION_TYPE_NONE	3	/* master, replica, slave: none yet */
struct session_match {
	int		 type;		/* SESSION_TYPE_* */
	uint64_t	 id;		/* 0: any */
	const char	*addr;		/* ip:port, or NULL: any */
	size_t		 addrl;
	int		 skipme;	/* spare the caller */
	/* and, when not NULL, what it says of the session (the sessions of
	 * a user deleted or turned off: command_session_gone) */
	int		(*pred)(const struct session *);
};

/*
 * What a command may ask of other connections, lent by the connection
 * layer (conn.c sets it; handlers never see a socket): push appends bytes
 * (a pub/sub message) to s's replies, or drops s when its unread replies
 * would pass output_buffer_limit (-1); kill closes the sessions that match
 * (after the caller's reply, when it is one of them) and counts them.
 */
struct session_ops {
	int		(*push)(struct session *, const char *, size_t);
	long long	(*kill)(struct session *caller,
			    const struct session_match *);
};

struct session {
	struct core	*core;
	uint64_t	 id;
	char		 peer[80];
	char		*name;		/* CLIENT SETNAME, or NULL */
	unsigned	 authed:1;
	/* the ACL user it authenticated as (a reference), or NULL: the
	 * default user (acl.h) */
	struct acl_user	*user;
	unsigned	 resp3:1;	/* HELLO 3: RESP replies in RESP3 */
	unsigned	 journaled:1;	/* its replies of this turn have a 0 */
	unsigned	 strikes;	/* commands refused before AUTH */
	/* a BF.LOADCHUNK in progress: invisible until its last chunk, and
	 * dropped with the session (command_session_end) */
	struct dump_load *load;
	char		 load_name[65];
	const struct session_ops *ops;
	/* MULTI: the commands queued for EXEC (cmd_multi.c), or NULL */
	struct multi	*multi;
	/* SUBSCRIBE, PSUBSCRIBE: what it listens to (pubsub.c) */
	struct pubsub_subs *subs;
	unsigned	 nsubs;		/* channels and patterns */
	/* replication: a replica's listening port (REPLCONF), and the
	 * PSYNC that hands its connection over (result.handover) */
	unsigned	 repl_port;
	/* its cluster node ID (REPLCONF node-id, issue 33), or "", and the
	 * address it announces (REPLCONF ip-address), or "": its peer's */
	char		 repl_node_id[41];
	char		 repl_ip[64];
	/* REPLCONF capa seend-slots: it takes moved slots' images in the
	 * stream (primary.h) */
	int		 repl_slots;
	char		 psync_replid[41];
	uint64_t	 psync_offset;
	/* it has had a key answered new, or another write: WAIT counts */
	unsigned	 wrote:1;
	/* cluster mode (issue 33): it came on the TLS port (told the nodes'
	 * TLS ports), and it sent READONLY (served reads of its primary's
	 * slots on a replica) */
	unsigned	 tls:1;
	unsigned	 readonly:1;
};

/* Whether s's RESP requests must all take the general path: queued by
 * MULTI, or limited to pub/sub commands (subscribed, RESP2). */
static inline int
session_general(const struct session *s)
{
	return s->multi != NULL || (s->nsubs != 0 && !s->resp3);
}

#endif
