/*
 * command.h - the command table and the per-request work.
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

#include "proto.h"
#include "stats.h"

struct conn;
struct filter;
struct command;

struct op {
	enum proto_status	 status;
	struct request		 req;
	const struct command	*cmd;	/* NULL: unknown command */
	struct filter		*filter; /* SEEN/CHECK: routed, or NULL */
	uint64_t		 hash;
};

enum command_result {
	COMMAND_DONE,		/* replied; go on */
	COMMAND_WAIT,		/* the reply comes later (SAVE) */
	COMMAND_CLOSE,		/* replied; close once it is sent */
};

void		command_prepare(struct conn *, const char *line, size_t len,
		    struct op *);
enum command_result command_run(struct conn *, struct op *);
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
