/*
 * stats.h - server-wide counters for INFO and the systemd STATUS line.
 */
#ifndef SEEND_STATS_H
#define SEEND_STATS_H

#include <stdint.h>

enum cmd_id {
	CMD_SEEN,
	CMD_CHECK,
	CMD_PING,
	CMD_AUTH,
	CMD_FILTERS,
	CMD_INFO,
	CMD_SAVE,
	CMD_QUIT,
	CMD_COUNT
};

struct stats {
	uint64_t	conns_total;	/* accepted */
	uint64_t	conns_refused;	/* over max_clients */
	uint64_t	commands;	/* every request that got a reply */
	uint64_t	by_cmd[CMD_COUNT];
	uint64_t	errors;		/* ERR replies */
	uint64_t	keys_new;	/* SEEN answered 0 */
	uint64_t	keys_seen;	/* SEEN answered 1 */
	uint64_t	check_hits;	/* CHECK answered 1 */
	uint64_t	check_misses;
	uint64_t	lines_too_long;
	uint64_t	idle_closed;
	uint64_t	auth_failures;
};

#endif
