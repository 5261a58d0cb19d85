/*
 * cmd_replication.c - what a seend answers about replication before it
 * has any (issue 23): it is a primary without replicas, and says so as
 * Redis 7 does, so that Redis Sentinel monitors it as a healthy master.
 * ROLE, REPLICAOF/SLAVEOF NO ONE, INFO's replication fields and run_id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "session.h"
#include "handler.h"
#include "resp.h"

/* 40 hex digits, random, made once per start. */
static void
random_hex(char out[41])
{
	unsigned char	 r[20];
	size_t		 got = 0;
	ssize_t		 n;

	while (got < sizeof(r) && (n = getrandom(r + got, sizeof(r) - got,
	    0)) > 0)
		got += (size_t)n;
	if (got < sizeof(r)) {
		/* no entropy to be had: time and pid still differ per start */
		unsigned long long x = (unsigned long long)time(NULL) ^
		    ((unsigned long long)getpid() << 32);

		for (size_t i = 0; i < sizeof(r); i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

const char *
command_run_id(void)
{
	static char id[41];

	if (id[0] == '\0')
		random_hex(id);
	return id;
}

/* The replication id: a primary's history, new at each start. */
static const char *
replid(void)
{
	static char id[41];

	if (id[0] == '\0')
		random_hex(id);
	return id;
}

void
command_info_replication(struct buf *b)
{
	buf_printf(b,
	    "role master\r\n"
	    "connected_slaves 0\r\n"
	    "master_failover_state no-failover\r\n"
	    "master_replid %s\r\n"
	    "master_replid2 0000000000000000000000000000000000000000\r\n"
	    "master_repl_offset 0\r\n"
	    "second_repl_offset -1\r\n"
	    "repl_backlog_active 0\r\n"
	    "repl_backlog_size 0\r\n"
	    "repl_backlog_first_byte_offset 0\r\n"
	    "repl_backlog_histlen 0\r\n", replid());
}

/* ROLE: ["master", offset, [replicas...]]. */
void
cmd_role(struct session *s, struct op *op, struct result *r)
{
	struct buf *b = result_reset();

	(void)s;
	(void)op;
	resp_add_array(b, 3);
	resp_add_bulk(b, "master", 6);
	resp_add_int(b, 0);
	resp_add_array(b, 0);
	result_scratch(r, RESULT_ARRAY);
}

/* REPLICAOF NO ONE: already a primary. REPLICAOF <host> <port>: not
 * yet, and said so plainly rather than pretended. */
void
cmd_replicaof(struct session *s, struct op *op, struct result *r)
{
	(void)s;
	if (name_is(op->argv[1], op->argl[1], "NO", 2) &&
	    name_is(op->argv[2], op->argl[2], "ONE", 3)) {
		result_status(r, "OK");
		return;
	}
	result_error(r, "ERR", "replication is not built yet (issue 23)");
}
