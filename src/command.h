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
/* The name of a command id, for INFO. */
const char	*command_name(enum cmd_id);

#endif
