/*
 * server.h - the daemon's state: config, filters, listeners, connections,
 * timers and signals, and the start-up, reload and shutdown sequences.
 */
#ifndef SEEND_SERVER_H
#define SEEND_SERVER_H

#include <time.h>

#include "stats.h"

struct event_base;
struct event;
struct config;
struct registry;
struct conn;
struct saver;

struct listener {
	int		 fd;
	int		 is_unix;
	int		 loopback;	/* TCP on a loopback address */
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
	struct config		*cfg;
	struct registry		*reg;
	/* filters a reload removed, kept (with a reference) until their last
	 * snapshot is written; a reload that brings the name back takes the
	 * live filter from here instead of an older file from disk */
	struct filter		**retired;
	size_t			 nretired;
	struct listener		*tcp;
	struct listener		*unx;
	struct conn		*conns;
	unsigned		 nconns;
	uint64_t		 next_conn_id;
	struct stats		 stats;
	struct saver		*saver;
	struct event		*ev_sweep;	/* 1 s: idle timeouts */
	struct event		*ev_snapshot;	/* snapshot_interval */
	struct event		*ev_stop;	/* polls for the end of shutdown */
	struct event		*ev_signals[4];
	time_t			 started;
	time_t			 last_reload;
	int			 last_reload_ok;	/* -1 never */
	char			 last_reload_msg[512];
	int			 stopping;
	time_t			 stop_deadline;
	int			 final_save_failed;
	struct metrics		*metrics;	/* metrics_listen, or NULL */
	struct log_limit	 refuse_log, accept_log;
	uint64_t		 last_sweep_ms;
	/* the journal (persist.c): appended to when not NULL; refuse: new
	 * keys get ERR journal (always, in fault) */
	struct journal		*journal;
	int			 journal_refuse;
	struct persist		*persist;
	struct conn		*turn;		/* replies to release */
	int			 done;		/* the loop ends */
	struct prebuild		*prebuild;	/* a reload's filters opening */
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
void	server_shutdown(struct server *);
/* Creates data_dir if it is missing (one level); logs what fails. */
void	server_ensure_data_dir(const char *dir);
/* Snapshots every dirty filter (the periodic timer and SIGUSR1). */
void	server_snapshot_dirty(struct server *, int all);
void	server_free(struct server *);
/* Approximate heap held by connections' buffers, for INFO. */
size_t	server_conn_memory(const struct server *);
/* The process's resident set size from /proc, in bytes; 0 if unknown
 * (INFO and metrics). */
size_t	server_rss_bytes(void);
/*
 * Raises RLIMIT_NOFILE (soft, up to hard) to fit cfg->max_clients plus
 * SERVER_RESERVED_FDS; if the hard limit is too low, lowers
 * cfg->max_clients to what fits and warns (a config not yet in use).
 */
#define SERVER_RESERVED_FDS	32
void	server_fit_fd_limit(struct config *);

#endif
