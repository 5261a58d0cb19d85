/*
 * command.h - the command table and the per-request work, for both
 * protocols.
 *
 * One table serves the line protocol and RESP2: a handler never formats
 * bytes, it fills a struct result (an integer, a status, an error, an
 * array of answers...) that command_encode writes in the protocol the
 * request came in. Handlers change no connection or server machinery:
 * what must happen next (close after the reply, wait for a SAVE) is a flag
 * or a wait token in the result, and the connection acts on it.
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

#include "buf.h"
#include "proto.h"
#include "resp.h"
#include "stats.h"

struct conn;
struct filter;
struct command;
struct save_wait;

/* Which protocol a request came in, and so which encoding its reply gets. */
#define COMMAND_LINE	1
#define COMMAND_RESP	2

struct op {
	int			 proto;	/* COMMAND_LINE or COMMAND_RESP */
	enum proto_status	 status;	/* line framing */
	struct request		 req;		/* line tokens */
	/* the arguments, the command's name first: req's or RESP's */
	int			 argc;
	const char		**argv;
	const size_t		*argl;
	const struct command	*cmd;	/* NULL: unknown command */
	struct filter		*filter; /* SEEN/CHECK: routed, or NULL */
	uint64_t		 hash;
};

enum result_kind {
	RESULT_NONE,	/* no reply (an empty request) */
	RESULT_INT,	/* n                     line "n"        RESP ":n" */
	RESULT_STATUS,	/* text                  line "text"     RESP "+text" */
	RESULT_ERROR,	/* code, text            line "ERR text" RESP "-code text" */
	RESULT_BULK,	/* text, len                             RESP "$len text" */
	RESULT_NULL,	/*                                       RESP "$-1" */
	RESULT_INTS,	/* len answers of 0/1 at text            RESP "*len :a ..." */
	RESULT_TEXT,	/* "name value" lines    line: + "END"   RESP: one bulk */
	RESULT_ARRAY,	/* text, len: an array resp_add_* built  RESP only */
	RESULT_WAIT,	/* wait: the reply comes when it completes (SAVE) */
};

struct result {
	enum result_kind	 kind;
	/* RESULT_ERROR: Redis's code ("ERR", "NOAUTH", "WRONGPASS"), or NULL
	 * for a bare RedisBloom text whose first word is its code */
	const char		*code;
	const char		*text;	/* static, the request, or scratch */
	size_t			 len;
	long long		 n;
	int			 close;	/* close once the reply is sent */
	int			 need_auth; /* refused for want of AUTH */
	struct save_wait	*wait;	/* RESULT_WAIT */
};

/* Line requests. */
void		command_prepare(struct conn *, const char *line, size_t len,
		    struct op *);
/* A RESP request resp_parse returned (its arguments point into the input). */
void		command_prepare_resp(struct conn *, const struct resp_request *,
		    struct op *);
/* Runs a prepared request; the caller encodes r and acts on its flags. */
void		command_run(struct conn *, struct op *, struct result *r);
/* Writes r into out in proto's encoding. Returns 0, or -1 out of memory. */
int		command_encode(struct buf *out, int proto,
		    const struct result *r);

/*
 * Answers up to max simple requests ("SEEN <key>" and "CHECK <key>" lines,
 * see proto_simple_key) at the head of the connection's input, in order,
 * and consumes them: every key routed and hashed, then every block
 * prefetched, then every test-and-set, with the replies written straight
 * into the output buffer. Stops at the first other line, or at one whose
 * key no filter takes (the general path explains). Returns how many
 * it answered (0: the head line needs command_prepare and command_run).
 * The caller has checked that the connection may run commands.
 */
int		command_run_simple(struct conn *, int max);
/*
 * The same for RESP: "SETNX <url> <v>", "SADD <filter> <member>" and
 * "BF.ADD <filter> <item>" arrays (resp_parse_hot), answered ":1" new, ":0"
 * seen. Stops at anything else, a missing filter, or a full one.
 */
int		command_run_resp_simple(struct conn *, const struct resp_limits *,
		    int max);
/*
 * The most simple requests hashed before their blocks are prefetched and
 * answered: the first answer of a batch waits a whole memory miss, so the
 * bigger the batch the less each key pays. Server CPU per request on a
 * 1 GiB filter (bench/RESULTS.md): 16: 73 ns, 32: 67, 64: 62, 128: 63,
 * 256: 61.
 */
#define COMMAND_SIMPLE_BATCH	64
/* The name of a command id, for INFO. */
const char	*command_name(enum cmd_id);

#endif
