/*
 * stats.h - server-wide counters and gauges for INFO, metrics and the
 * systemd STATUS line.
 *
 * Counters are bumped by whoever does the counted thing; gauges are kept
 * current by their owners (the connections count themselves and their
 * buffers, the server its start and reloads), so that the layers that
 * read them (INFO in cmd_info.c, metrics.c) never reach up for them.
 */
#ifndef SEEND_STATS_H
#define SEEND_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/*
 * A rate sampled as Redis samples instantaneous_ops_per_sec
 * (trackInstantaneousMetric): each sample is the counter's growth since
 * the previous sample, per second of the time that really passed; the
 * rate is the mean of the last STATS_RATE_SAMPLES samples. Redis takes 16
 * samples 100 ms apart (1.6 s); seend's tick comes once a second, so two
 * samples keep the window about as short.
 */
#define STATS_RATE_SAMPLES	2

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
	/* AUTH and HELLO AUTH refused: a wrong password, no such user,
	 * or the user is off (INFO's acl_access_denied_auth) */
	uint64_t	acl_denied_auth;
	/* requests for a command seend does not serve (RPUSH, EVALSHA...) */
	uint64_t	unknown_commands;
	/* TLS connections closed before or in their handshake: plaintext
	 * on tls_listen, TLS on listen, a certificate refused, too slow */
	uint64_t	tls_handshake_failures;
	/* cluster mode with a map: requests answered MOVED (issue 33) */
	uint64_t	cluster_redirections;

	/* gauges: conn.c keeps these two current */
	unsigned	clients;	/* connected now */
	uint64_t	conn_bytes;	/* connections and their buffers */
	/* server.c: its start and its last reload */
	time_t		started;
	time_t		last_reload;	/* 0: never */
	int		last_reload_ok;	/* -1: never */
	/* server.c's tick: INFO's instantaneous_ops_per_sec and
	 * used_memory_peak (stats_tick) */
	struct stats_rate {
		long long	samples[STATS_RATE_SAMPLES];
		int		idx;
		uint64_t	last_count;
		int64_t		last_ms;
	}		ops_rate;
	size_t		mem_peak;
};

/* The process's resident set size from /proc, in bytes; 0 if unknown. */
size_t	stats_rss_bytes(void);
/* INFO's used_memory: what malloc holds in use (mmapped chunks too) plus
 * mapped, the bytes the caller maps outside malloc (the filters'); the
 * peak in st goes up to it. */
size_t	stats_used_memory(struct stats *, uint64_t mapped);
/* Once a second (the server's tick): a sample of the commands' rate, and
 * used memory for the peak. */
void	stats_tick(struct stats *, uint64_t mapped);
/* The mean of the samples: instantaneous_ops_per_sec. */
long long stats_rate(const struct stats_rate *);

#endif
