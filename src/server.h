/*
 * server.h - the daemon's state: config, filters, listeners, connections,
 * timers and signals, and the start-up, reload and shutdown sequences.
 */
#ifndef SEEND_SERVER_H
#define SEEND_SERVER_H

#include <time.h>

#include "conn.h"
#include "core.h"

struct event_base;
struct event;
struct config;

struct listener {
	int		 fd;
	int		 is_unix;
	int		 loopback;	/* TCP on a loopback address */
	int		 tls;		/* tls_listen: TLS connections */
	char		 desc[300];	/* "127.0.0.1:6874" or the socket path */
	char		*path;		/* unix: to unlink on close */
	struct event	*ev;
	struct event	*ev_retry;	/* re-enables accepting after EMFILE */
	struct server	*srv;
};

/* At most one log line a second for an event that can come in a flood
 * (refused clients, accept failing), with how many were left out. */
struct log_limit {
	time_t		 last;
	unsigned long	 suppressed;
};

struct server {
	struct event_base	*base;
	char			*config_path;
	/* what handlers and persist.c share: config, filters, saver,
	 * journal, counters, retired filters */
	struct core		 core;
	struct conns		 conns;
	struct listener		*tcp;
	struct listener		*unx;
	struct listener		*tls;		/* tls_listen */
	struct event		*ev_tick;	/* 1 s: sets tick_due */
	struct event		*ev_saver;	/* the saver's jobs are done */
	struct event		*ev_stop;	/* polls for the end of shutdown */
	struct event		*ev_signals[4];
	int			 tick_due;	/* the turn's last step runs the
						 * once-a-second work */
	int			 work_pending;	/* background work remains */
	char			 last_reload_msg[512];
	time_t			 stop_deadline;
	int			 final_save_failed;
	struct metrics		*metrics;	/* metrics_listen, or NULL */
	struct log_limit	 refuse_log, accept_log;
	int			 done;		/* the loop ends */
	struct prebuild		*prebuild;	/* a reload's filters opening */
	struct role		*role;		/* primary or replica */
	int			 reload_again;	/* SIGHUP meanwhile */
};

/*
 * Loads snapshots, opens listeners and installs timers and signals from
 * srv->cfg. Returns 0, or -1 after logging why.
 */
int	server_start(struct server *);
/* Runs the loop until a shutdown completes; returns the exit status. */
int	server_run(struct server *);
void	server_reload(struct server *);
/* SIGTERM, SIGINT and SHUTDOWN: stop accepting and reading, snapshot
 * every dirty filter (not after SHUTDOWN NOSAVE: core.shutdown_asked),
 * flush the replies already made; the loop then ends. */
void	server_shutdown(struct server *);
/* Creates data_dir if it is missing (one level); logs what fails. */
void	server_ensure_data_dir(const char *dir);
void	server_free(struct server *);
/*
 * Raises RLIMIT_NOFILE (soft, up to hard) to fit cfg->max_clients plus
 * SERVER_RESERVED_FDS; if the hard limit is too low, lowers
 * cfg->max_clients to what fits and warns (a config not yet in use).
 */
#define SERVER_RESERVED_FDS	32
void	server_fit_fd_limit(struct config *);

#endif
