/*
 * conn.h - one client connection: its buffers, its state, and the loop that
 * turns input lines into replies.
 *
 * Reading stops while a client's unsent replies exceed output_buffer_limit
 * (it is not reading them), and while it waits for a SAVE to finish (replies
 * must stay in request order). Its input buffer never holds more than
 * max_line plus one read, so each client's memory is bounded.
 */
#ifndef SEEND_CONN_H
#define SEEND_CONN_H

#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "buf.h"
#include "session.h"

struct event_base;
struct core;
struct save_wait;
struct conn;
struct ssl_st;
struct ssl_ctx_st;

/*
 * How a connection's bytes move, as Redis's connection.h has it
 * (connTypeOfTCP, connTypeOfTLS): conn.c reads into and writes from its own
 * buffers through these, one read and one write per turn whatever the
 * type. read and write return what read(2) and write(2) return (-1 with
 * errno EAGAIN: wait for the socket's next event). pending: bytes the
 * type holds that the socket's readiness will not announce (TLS records
 * already taken off the socket), or NULL.
 */
struct conn_type {
	const char	*name;
	ssize_t		(*read)(struct conn *, void *, size_t);
	ssize_t		(*write)(struct conn *, const void *, size_t);
	int		(*pending)(const struct conn *);
	void		(*close)(struct conn *);
};

/* The set of connections: the server owns one, conn.c keeps it. */
struct conns {
	struct event_base *base;
	struct core	*core;
	struct conn	*head;
	/* the connections whose replies wait for the turn's end (with a
	 * journal: persist_turn_end, then conn_release_turn) */
	struct conn	*turn;
	uint64_t	 next_id;
	uint64_t	 last_sweep_ms;
	/* a PSYNC's connection handed over: fd is the callee's (a copy;
	 * the connection closes its own), and so is ssl, the connection's
	 * TLS session on it (NULL on a plain one); s says who asked what */
	void		(*handover)(void *arg, int fd, struct ssl_st *ssl,
			    const struct session *s);
	void		*handover_arg;
	/* tls_listen's context (NULL: none); each TLS connection holds a
	 * reference of its own, so a reload's new one is for new ones */
	struct ssl_ctx_st *tls_ctx;
	unsigned	 handshakes;	/* TLS handshakes under way */
	time_t		 tls_log_last;	/* failures: a log line a second */
	unsigned long	 tls_log_suppressed;
};

struct conn {
	struct session	 s;		/* what commands see of it */
	struct conns	*set;
	const struct conn_type *type;
	int		 fd;
	struct ssl_st	*ssl;		/* the TLS type's, else NULL */
	struct event	*ev_read;
	struct event	*ev_write;
	struct buf	 in, out;
	unsigned	 is_unix:1;
	unsigned	 reading:1;	/* ev_read is added */
	unsigned	 writing:1;	/* ev_write is added */
	unsigned	 discarding:1;	/* skipping the rest of an over-long line */
	unsigned	 eof:1;		/* the client shut down its side */
	unsigned	 quitting:1;	/* QUIT: flush, then close */
	unsigned	 queued:1;	/* on set->turn: replies not yet released */
	unsigned	 held:1;	/* its 0s wait for a snapshot */
	unsigned	 doomed:1;	/* CLIENT KILL, or pub/sub output over
					 * the limit: closed from the loop */
	unsigned	 lingering:1;	/* sent SHUTDOWN: open until the exit */
	unsigned	 handshaking:1;	/* TLS: not yet a connection */
	unsigned	 fresh:1;	/* plain TCP: nothing read yet */
	unsigned	 read_wants_write:1; /* TLS: SSL_read waits to write */
	size_t		 resp_need;	/* a partial RESP request needs this
					 * many bytes of input at least */
	struct save_wait *wait;		/* a SAVE it is waiting on */
	int		 wait_proto;	/* the protocol its reply is due in */
	uint64_t	 last_active;	/* conn_clock_ms() of the last read or write */
	struct conn	*prev, *next;
	/* with a journal, replies leave at the end of the loop turn that
	 * made them (persist.c): the last unreleased bytes of out wait */
	size_t		 unreleased;
	struct conn	*tnext;		/* set->turn */
	size_t		 counted;	/* its bytes in stats.conn_bytes */
};

/* Monotonic milliseconds, for idle timeouts (a wall-clock step must not
 * close or spare every client at once). */
uint64_t	 conn_clock_ms(void);
/* Counts a refused request of a client that has not sent AUTH; returns 1
 * once it has had its last chance (the caller closes after the reply). */
int		 conn_strike(struct conn *);

/* Takes ownership of fd (non-blocking) and adds the connection to the
 * set; returns NULL if out of memory. With tls, its first state is a
 * TLS handshake with set->tls_ctx (closed and counted if it fails, or is
 * not done within tls_handshake_timeout). */
struct conn	*conn_new(struct conns *, int fd, int is_unix, int tls,
		    const char *peer);
void		 conn_close(struct conn *, const char *why);
/* A SAVE it waited on has finished: reply and go on with its input. */
void		 conn_save_done(struct conn *, int ok, const char *err);
/* A WAIT it waited on is answered: n. */
void		 conn_count_done(struct conn *, long long n);
/* Stop reading (shutdown); replies already computed are still sent. */
void		 conn_stop_reading(struct conn *);
/* Re-evaluates what to read and write (after a limit changed). */
void		 conn_kick(struct conn *);
/* Whether some connection's replies wait for the turn's end. */
int		 conn_turn_pending(const struct conns *);
/* The end of a loop turn (the journal is written): sends the replies the
 * turn made, except, if hold, those of connections that got a 0 from it,
 * which wait for conn_release_held. */
void		 conn_release_turn(struct conns *, int hold);
void		 conn_release_held(struct conns *);

/* Every second: closes clients idle for idle_timeout seconds (0: never),
 * and TLS handshakes not done in tls_handshake_timeout; a sweep that
 * comes late (the process was stopped) is no one's idleness. */
void		 conn_sweep(struct conns *, unsigned idle_timeout);
/* After a reload: TCP clients must AUTH (required) or need not. */
void		 conn_set_auth(struct conns *, int required);
/* Closes, from the loop, every connection whose session m matches (the
 * users' reload: those of users deleted or turned off); how many. */
long long	 conn_kill_matching(struct conns *, const struct session_match *);
/* Re-evaluates every connection (after a reload changed limits). */
void		 conn_kick_all(struct conns *);
/* Shutdown: stop reading every client; replies still go. */
void		 conn_stop_reading_all(struct conns *);
/* Whether some client has replies unsent or waits for a SAVE. */
int		 conn_output_pending(const struct conns *);
void		 conn_close_all(struct conns *);

#endif
