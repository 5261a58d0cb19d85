/*
 * command.h - the command table and the per-request work, for both
 * protocols.
 *
 * One table serves the line protocol and RESP: a handler never formats
 * bytes, it fills a struct result (an integer, a status, an error, an
 * array of answers...) that result_encode writes in the protocol of the
 * connection (result.h). The handlers live in cmd_*.c by what they act
 * on (handler.h). Handlers see a session (session.h: who the client is)
 * and the core (core.h: config, filters, journal, counters), never a
 * socket, a connection or the server: what must happen next (close after
 * the reply, wait for a SAVE) is a flag or a wait token in the result,
 * and the connection acts on it.
 *
 * A request runs in two steps so that many can be batched: command_prepare
 * parses it and, for SEEN and CHECK, routes the key, hashes it and
 * prefetches its filter block; command_run then answers it. Running a batch's
 * prepares before its runs overlaps the memory misses of many keys instead of
 * paying them one after another. Requests still run in order, so a key twice
 * in one batch answers 0 then 1.
 */
#ifndef SEEND_COMMAND_H
#define SEEND_COMMAND_H

#include <stdint.h>
#include <time.h>

#include "buf.h"
#include "proto.h"
#include "resp.h"
#include "result.h"
#include "stats.h"

struct session;
struct core;
struct filter;
struct command;
struct save_wait;

/* Which protocol a request came in (see result.h for the encodings). */
#define COMMAND_LINE	1
#define COMMAND_RESP	2

struct op {
	int			 proto;	/* COMMAND_LINE or COMMAND_RESP */
	int			 resp3;	/* RESP, on a connection after HELLO 3 */
	enum proto_status	 status;	/* line framing */
	struct request		 req;		/* line tokens */
	/* the arguments, the command's name first: req's or RESP's */
	int			 argc;
	const char		**argv;
	const size_t		*argl;
	const struct command	*cmd;	/* NULL: unknown command */
	struct filter		*filter; /* SEEN/CHECK: routed, or NULL */
	uint64_t		 hash;
	uint64_t		 seed;	/* filter's seed when hashed: a RESET
					 * earlier in the batch changes it */
};

/* A fresh replication id (40 hex digits). */
void		command_new_replid(char out[41]);

/* Line requests. */
void		command_prepare(struct session *, const char *line, size_t len,
		    struct op *);
/* A RESP request resp_parse returned (its arguments point into the input). */
void		command_prepare_resp(struct session *, const struct resp_request *,
		    struct op *);
/* Runs a prepared request; the caller encodes r and acts on its flags. */
void		command_run(struct session *, struct op *, struct result *r);

/*
 * Answers up to max simple requests ("SEEN <key>" and "CHECK <key>" lines,
 * see proto_simple_key) at the head of in, the connection's input, in
 * order, with the replies appended to out,
 * and consumes them: every key routed and hashed, then every block
 * prefetched, then every test-and-set, with the replies written straight
 * into the output buffer. Stops at the first other line, or at one whose
 * key no filter takes (the general path explains). Returns how many
 * it answered (0: the head line needs command_prepare and command_run).
 * The caller has checked that the connection may run commands.
 */
int		command_run_simple(struct session *, struct buf *in,
		    struct buf *out, int max);
/*
 * The same for RESP: "SETNX <url> <v>", "SADD <filter> <member>" and
 * "BF.ADD <filter> <item>" arrays (resp_parse_hot), answered ":1" new, ":0"
 * seen. Stops at anything else, a missing filter, or a full one.
 */
int		command_run_resp_simple(struct session *, struct buf *in,
		    struct buf *out, const struct resp_limits *, int max);
/*
 * The most simple requests hashed before their blocks are prefetched and
 * answered: the first answer of a batch waits a whole memory miss, so the
 * bigger the batch the less each key pays. Server CPU per request on a
 * 1 GiB filter (bench/RESULTS.md): 16: 73 ns, 32: 67, 64: 62, 128: 63,
 * 256: 61.
 */
#define COMMAND_SIMPLE_BATCH	64
/* A session ends (its connection closed): what it held goes (its name,
 * a BF.LOADCHUNK in progress). */
void		command_session_end(struct session *);
/* The turn's background step: a slice of the merge under way (MERGE).
 * Returns 1 while work remains (the loop must not sleep then). */
int		command_work(struct core *);
/* Once a second: dumps no client has asked for in a minute are dropped
 * (BF.SCANDUMP holds its filter's slices until its last chunk). */
void		command_tick(struct core *, time_t now);
/*
 * Users (acl.h): the command catalog filled from the table (once), then
 * the users defined from users_file (NULL: the default user alone) with
 * auth_token as the default user's password. At start and on SIGHUP;
 * -1 with every error in err ("file:line: ...") and the users unchanged.
 * Sessions of a user deleted or turned off must then close:
 * command_session_gone says which.
 */
int		command_users_load(const char *path, const char *auth_token,
		    char *err, size_t errlen);
void		command_users_ready(void);
int		command_session_gone(const struct session *);
/* The name of a command id, for INFO. */
const char	*command_name(enum cmd_id);

#endif
