/*
 * session.h - what a command knows of the client that sent it: who it is
 * (id, peer, CLIENT SETNAME), whether it has authenticated, the protocol
 * it asked for (HELLO 3), and whether its replies of this loop turn
 * answered a key new (so the journal must hold them first), plus the core
 * it works on. A connection (conn.c) embeds one; handlers see nothing
 * else of it: no socket, buffer or event.
 */
#ifndef SEEND_SESSION_H
#define SEEND_SESSION_H

#include <stdint.h>

struct core;
struct dump_load;

struct session {
	struct core	*core;
	uint64_t	 id;
	char		 peer[80];
	char		*name;		/* CLIENT SETNAME, or NULL */
	unsigned	 authed:1;
	unsigned	 resp3:1;	/* HELLO 3: RESP replies in RESP3 */
	unsigned	 journaled:1;	/* its replies of this turn have a 0 */
	unsigned	 strikes;	/* commands refused before AUTH */
	/* a BF.LOADCHUNK in progress: invisible until its last chunk, and
	 * dropped with the session (command_session_end) */
	struct dump_load *load;
	char		 load_name[65];
};

#endif
