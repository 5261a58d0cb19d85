/*
 * role.h - whether this server is a primary or a replica, and the move
 * from one to the other: at start (the role file in data_dir wins over
 * the config's replicaof), on REPLICAOF (handlers ask through
 * core->repl; the change is made at the turn's end) and on a reload
 * whose replicaof line changed. It drives primary.c and replica.c in the
 * server's turn.
 *
 * The role file, <data_dir>/replication: one line, "replicaof HOST PORT"
 * or "replicaof no one", written (and fsynced, renamed into place) when
 * the role changes at run time.
 */
#ifndef SEEND_ROLE_H
#define SEEND_ROLE_H

#include <stdint.h>

struct config;
struct core;
struct event_base;
struct role;
struct save_wait;
struct session;

#define ROLE_FILE	"replication"

/* done answers a WAIT's token. NULL if out of memory. */
struct role	*role_new(struct core *, struct event_base *,
		    void (*done)(void *, struct save_wait *), void *arg);
/* After the journal's replay: takes the role, and connects a replica. */
void		 role_start(struct role *);
/* Whether the node starts as a replica: the role file in data_dir (every
 * REPLICAOF's, Sentinel's too) or else the config's replicaof, as
 * role_start decides. Readable before the role exists (main.c). */
struct config;
int		 role_starts_replica(const struct config *);
/* The turn's replication step, after the journal's write. */
void		 role_turn_end(struct role *);
void		 role_tick(struct role *);
/* A reload: a changed replicaof line applies the config's role. */
void		 role_reload(struct role *, const struct config *old,
		    const struct config *new);
/* A PSYNC's connection (conns' handover). */
struct ssl_st;
void		 role_handover(void *role, int fd, struct ssl_st *ssl,
		    const struct session *);
void		 role_free(struct role *);

#endif
