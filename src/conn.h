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

#include "buf.h"

struct server;
struct save_wait;
struct conn;

/* Called once from conn_close, before the conn is freed: its owner forgets
 * it (the server keeps the list of its connections). */
typedef void	(*conn_closed_cb)(void *arg, struct conn *);

struct conn {
	struct server	*srv;
	conn_closed_cb	 closed;
	void		*closed_arg;
	int		 fd;
	uint64_t	 id;
	char		 peer[80];
	struct event	*ev_read;
	struct event	*ev_write;
	struct buf	 in, out;
	unsigned	 is_unix:1;
	unsigned	 authed:1;
	unsigned	 resp3:1;	/* HELLO 3: RESP replies in RESP3 */
	unsigned	 reading:1;	/* ev_read is added */
	unsigned	 writing:1;	/* ev_write is added */
	unsigned	 discarding:1;	/* skipping the rest of an over-long line */
	unsigned	 eof:1;		/* the client shut down its side */
	unsigned	 quitting:1;	/* QUIT: flush, then close */
	unsigned	 queued:1;	/* on srv->turn: replies not yet released */
	unsigned	 journaled:1;	/* its replies of this turn have a 0 */
	unsigned	 held:1;	/* those 0s wait for a snapshot */
	unsigned	 strikes;	/* commands refused before AUTH */
	size_t		 resp_need;	/* a partial RESP request needs this
					 * many bytes of input at least */
	char		*name;		/* CLIENT SETNAME, or NULL */
	struct save_wait *wait;		/* a SAVE it is waiting on */
	uint64_t	 last_active;	/* conn_clock_ms() of the last read or write */
	struct conn	*prev, *next;
	/* with a journal, replies leave at the end of the loop turn that
	 * made them (persist.c): the last unreleased bytes of out wait */
	size_t		 unreleased;
	struct conn	*tnext;		/* srv->turn */
};

/* Monotonic milliseconds, for idle timeouts (a wall-clock step must not
 * close or spare every client at once). */
uint64_t	 conn_clock_ms(void);
/* Counts a refused request of a client that has not sent AUTH; returns 1
 * once it has had its last chance (the caller closes after the reply). */
int		 conn_strike(struct conn *);

/* Takes ownership of fd (non-blocking); returns NULL if out of memory.
 * closed(arg, conn) is called when it closes. */
struct conn	*conn_new(struct server *, int fd, int is_unix, const char *peer,
		    conn_closed_cb closed, void *arg);
void		 conn_close(struct conn *, const char *why);
/* A SAVE it waited on has finished: reply and go on with its input. */
void		 conn_save_done(struct conn *, int ok, const char *err);
/* Stop reading (shutdown); replies already computed are still sent. */
void		 conn_stop_reading(struct conn *);
/* Re-evaluates what to read and write (after a limit changed). */
void		 conn_kick(struct conn *);
/* The end of a loop turn (the journal is written): sends the replies the
 * turn made, except, if hold, those of connections that got a 0 from it,
 * which wait for conn_release_held. */
void		 conn_release_turn(struct server *, int hold);
void		 conn_release_held(struct server *);

#endif
