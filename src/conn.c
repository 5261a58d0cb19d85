/*
 * conn.c - a client connection: read, frame, batch, reply, write.
 *
 * Raw events and our own buffers rather than bufferevents: the hot path is
 * one read(2) of many pipelined lines, a batch pass that hashes and
 * prefetches, a pass that answers, and one write(2) of all the replies.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bloom.h"
#include "command.h"
#include "config.h"
#include "filter.h"
#include "conn.h"
#include "cluster_move.h"
#include "dump.h"
#include "log.h"
#include "proto.h"
#include "resp.h"
#include "core.h"
#include "saver.h"
#include "tls.h"

/* How many requests are hashed and prefetched ahead of being answered:
 * enough to cover a memory miss, few enough to stay in L1. */
#define BATCH		32
/* The smallest free space offered to read(2). */
#define READ_CHUNK	16384
/* An idle client's buffers are freed above this size. */
#define KEEP_BYTES	65536

static void	on_read(evutil_socket_t, short, void *);
static void	on_write(evutil_socket_t, short, void *);
static void	process_input(struct conn *);
static void	conn_service(struct conn *);
static int	has_work(const struct conn *);
static void	tls_handshake_step(struct conn *);
static ssize_t	tls_write(struct conn *, const void *, size_t);
static const struct session_ops conn_session_ops;
static const struct conn_type conn_type_tcp, conn_type_tls, conn_type_gone;

/* Refused requests allowed before AUTH; the last one closes the client. */
#define AUTH_STRIKES	3

uint64_t
conn_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
conn_strike(struct conn *c)
{
	if (c->s.authed)
		return 0;
	if (++c->s.strikes < AUTH_STRIKES)
		return 0;
	log_info("client %llu (%s): closed after %u refused requests "
	    "without AUTH", (unsigned long long)c->s.id, c->s.peer, c->s.strikes);
	return 1;
}

static void
set_reading(struct conn *c, int on)
{
	if (on && !c->reading) {
		event_add(c->ev_read, NULL);
		c->reading = 1;
		/* what a TLS record left in its session: the socket will
		 * not say it is there */
		if (c->type->pending != NULL && c->type->pending(c))
			event_active(c->ev_read, EV_READ, 0);
	} else if (!on && c->reading) {
		event_del(c->ev_read);
		c->reading = 0;
	}
}

static void
set_writing(struct conn *c, int on)
{
	if (on && !c->writing) {
		event_add(c->ev_write, NULL);
		c->writing = 1;
	} else if (!on && c->writing) {
		event_del(c->ev_write);
		c->writing = 0;
	}
}

/* Keeps stats.conn_bytes current: what c holds now, less what it held. */
static void
account(struct conn *c)
{
	size_t now = sizeof(*c) + c->in.cap + c->out.cap;

	c->set->core->stats.conn_bytes += now - c->counted;
	c->counted = now;
}

struct conn *
conn_new(struct conns *set, int fd, int is_unix, int tls, const char *peer)
{
	struct conn	*c;
	struct core	*core = set->core;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->set = set;
	c->s.core = core;
	c->s.ops = &conn_session_ops;
	c->fd = fd;
	c->type = &conn_type_tcp;
	c->fresh = !is_unix && !tls;
	if (tls && (set->tls_ctx == NULL ||
	    (c->ssl = SSL_new(set->tls_ctx)) == NULL ||
	    SSL_set_fd(c->ssl, fd) != 1)) {
		ERR_clear_error();
		SSL_free(c->ssl);
		free(c);
		return NULL;
	}
	if (tls) {
		SSL_set_accept_state(c->ssl);
		c->type = &conn_type_tls;
		c->s.tls = 1;
		c->handshaking = 1;
		set->handshakes++;
	}
	c->s.id = ++set->next_id;
	c->is_unix = is_unix ? 1 : 0;
	/* Unix-socket clients are vouched for by the socket's permissions */
	c->s.authed = (core->cfg->auth_token == NULL || is_unix) ? 1 : 0;
	snprintf(c->s.peer, sizeof(c->s.peer), "%s", peer);
	c->last_active = conn_clock_ms();
	c->ev_read = event_new(set->base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->ev_write = event_new(set->base, fd, EV_WRITE | EV_PERSIST, on_write,
	    c);
	if (c->ev_read == NULL || c->ev_write == NULL) {
		if (c->ev_read)
			event_free(c->ev_read);
		if (c->ev_write)
			event_free(c->ev_write);
		if (c->handshaking)
			set->handshakes--;
		SSL_free(c->ssl);
		free(c);
		return NULL;
	}
	c->next = set->head;
	if (set->head != NULL)
		set->head->prev = c;
	set->head = c;
	core->stats.clients++;
	account(c);
	set_reading(c, 1);
	return c;
}

void
conn_close(struct conn *c, const char *why)
{
	if (why != NULL)
		log_debug("client %llu (%s) closed: %s",
		    (unsigned long long)c->s.id, c->s.peer, why);
	if (c->wait != NULL)
		c->wait->owner = NULL;	/* the SAVE goes on without us */
	if (c->queued)
		for (struct conn **pp = &c->set->turn; *pp != NULL;
		    pp = &(*pp)->tnext)
			if (*pp == c) {
				*pp = c->tnext;
				break;
			}
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		c->set->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->set->core->stats.clients--;
	c->set->core->stats.conn_bytes -= c->counted;
	if (c->handshaking)
		c->set->handshakes--;
	event_free(c->ev_read);
	event_free(c->ev_write);
	c->type->close(c);
	buf_free(&c->in);
	buf_free(&c->out);
	command_session_end(&c->s);
	free(c);
}

void
conn_stop_reading(struct conn *c)
{
	set_reading(c, 0);
	conn_service(c);
}

/*
 * Whether to read more: not while replies pile up unread, not while a SAVE
 * holds the queue, not after EOF or QUIT.
 */
static int
may_read(const struct conn *c)
{
	/* and not while complete requests still wait for an answer: more
	 * input would only pile up behind them */
	return !c->eof && !c->quitting && c->wait == NULL &&
	    !c->set->core->stopping && !c->lingering &&
	    buf_used(&c->out) < c->set->core->cfg->output_buffer_limit &&
	    !has_work(c);
}

void
conn_kick(struct conn *c)
{
	conn_service(c);
}

static void
reply_error(struct conn *c, const char *msg)
{
	c->set->core->stats.errors++;
	buf_printf(&c->out, "ERR %s\r\n", msg);
}

/*
 * Lines longer than max_line: the client gets one ERR, the rest of the line
 * up to its newline is skipped, and the connection goes on.
 */
static int
skip_long_line(struct conn *c)
{
	const char	*nl;
	size_t		 used = buf_used(&c->in);

	nl = memchr(buf_head(&c->in), '\n', used);
	if (nl == NULL) {
		buf_consume(&c->in, used);
		return 0;
	}
	buf_consume(&c->in, (size_t)(nl - buf_head(&c->in)) + 1);
	c->discarding = 0;
	return 1;
}

static void
refuse_long_line(struct conn *c)
{
	char msg[96];

	c->set->core->stats.lines_too_long++;
	snprintf(msg, sizeof(msg), "line too long (max %zu bytes)",
	    c->set->core->cfg->max_line);
	reply_error(c, msg);
	c->discarding = 1;
	if (conn_strike(c))
		c->quitting = 1;
}

/*
 * Sends a command's result in the request's protocol and acts on it: an
 * error before AUTH is a strike, a close or a wait is taken up here.
 * Returns 1 if the connection must stop taking requests.
 */
static int
conn_reply(struct conn *c, int proto, const struct result *r)
{
	if (result_encode(&c->out, proto == COMMAND_LINE ? REPLY_LINE :
	    c->s.resp3 ? REPLY_RESP3 : REPLY_RESP2, r) == -1)
		c->quitting = 1;	/* out of memory: nothing sane to send */
	if (r->kind == RESULT_ERROR) {
		c->set->core->stats.errors++;
		/* before AUTH every refusal counts: a scanner or a
		 * misconfigured worker gets a few clear answers, no more */
		if (conn_strike(c))
			c->quitting = 1;
	}
	if (r->close)
		c->quitting = 1;
	if (r->linger)
		c->lingering = 1;
	if (r->handover) {
		int		 fd = dup(c->fd);
		struct ssl_st	*ssl = c->ssl;

		/* a TLS session goes with the socket, on the copy, and
		 * nothing more of this connection's may be written into its
		 * stream: the replies before PSYNC (AUTH's, REPLCONF's, a
		 * few bytes) are written now, ahead of the link's */
		while (ssl != NULL && fd != -1 && buf_used(&c->out) > 0) {
			ssize_t n = tls_write(c, buf_head(&c->out),
			    buf_used(&c->out));

			if (n <= 0) {
				close(fd);
				fd = -1;
				break;
			}
			buf_consume(&c->out, (size_t)n);
		}
		if (ssl != NULL)
			c->unreleased = 0;
		if (ssl != NULL && fd != -1 && SSL_set_fd(ssl, fd) != 1) {
			close(fd);
			fd = -1;
		}
		if (ssl != NULL && fd != -1) {
			c->ssl = NULL;
			c->type = &conn_type_gone;
		}
		if (fd != -1 && c->set->handover != NULL) {
			c->s.wrote = 0;
			c->set->handover(c->set->handover_arg, fd, ssl, &c->s);
		} else if (fd != -1) {
			SSL_free(ssl);
			close(fd);
		}
		c->quitting = 1;
	}
	if (r->kind == RESULT_WAIT) {
		c->wait = r->wait;
		c->wait->owner = c;
		c->wait_proto = proto;
	}
	return c->quitting || c->wait != NULL || c->lingering;
}

/*
 * The arguments of a RESP request, shared by every connection (a request
 * is answered before the next is parsed): RESP_ARGS slots here, and for a
 * request with more (a BF.MADD or CF.INSERT of 100,000 items, which Redis
 * and RedisBloom answer item by item) slots from the heap for exactly its
 * count, freed once it is answered. The count is bounded by the request's
 * bytes (resp_max_request / RESP_MIN_ARG), not by a number of its own.
 */
#define RESP_ARGS	65536
static const char	*resp_argv[RESP_ARGS];
static size_t		 resp_argl[RESP_ARGS];

/* The least that resp_max_request allows: as much as one dump's chunk, so
 * that a request of many items (140,000 short ones in one CF.INSERT, as
 * RedisBloom's tests send) is taken whole. */
#define RESP_REQUEST_MIN	((size_t)DUMP_CHUNK_MAX)

/* The bytes a whole RESP request may take: max_line bounds each bulk
 * string, this the request. */
static size_t
resp_max_request(const struct conn *c)
{
	size_t twice = 2 * c->set->core->cfg->max_line + 4096;

	return twice > RESP_REQUEST_MIN ? twice : RESP_REQUEST_MIN;
}

static void
resp_limits_for(const struct conn *c, struct resp_limits *lim)
{
	lim->max_bulk = c->set->core->cfg->max_line;
	lim->max_request = resp_max_request(c);
	lim->max_args = RESP_ARGS;
	lim->unauth = !c->s.authed;
	lim->max_chunk = DUMP_CHUNK_MAX;
	lim->max_image = c->set->core->cluster != NULL ? CLUSTER_IMAGE_MAX :
	    0;
}

/*
 * A whole request of more than RESP_ARGS arguments, parsed again into
 * heap slots for all of them (*argv, *argl: free them once it is
 * answered). 0, or -1 out of memory.
 */
static int
resp_parse_many(struct conn *c, struct resp_limits *lim,
    struct resp_request *req, const char ***argv, size_t **argl)
{
	size_t n = (size_t)req->argc;

	*argv = malloc(n * sizeof(**argv));
	*argl = malloc(n * sizeof(**argl));
	if (*argv == NULL || *argl == NULL) {
		free(*argv);
		free(*argl);
		*argv = NULL;
		*argl = NULL;
		return -1;
	}
	lim->max_args = req->argc;
	req->argv = *argv;
	req->argl = *argl;
	/* the same bytes: whole, and now every argument has a slot */
	if (resp_parse(buf_head(&c->in), buf_used(&c->in), lim, req) ==
	    RESP_OK)
		return 0;
	free(*argv);
	free(*argl);
	*argv = NULL;
	*argl = NULL;
	return -1;
}

/*
 * The RESP request at the head of the input (it begins with '*'): a run of
 * hot SETNX/SADD/BF.ADD requests, or one request of any kind. Returns 1 if
 * it answered something, 0 if it must wait for input or stop.
 */
static int
process_resp(struct conn *c)
{
	struct resp_limits	 lim;
	struct resp_request	 req;
	struct result		 r;
	struct op		 op;
	const char		**many_argv = NULL;
	size_t			*many_argl = NULL;
	int			 stop;

	resp_limits_for(c, &lim);
	if (buf_used(&c->in) < c->resp_need)
		return 0;
	/* in MULTI, or subscribed in RESP2, every request is the general
	 * path's (queued, or refused) */
	if (c->s.authed && !session_general(&c->s) &&
	    !c->set->core->repl.replica &&
	    command_run_resp_simple(&c->s, &c->in, &c->out, &lim,
	    COMMAND_SIMPLE_BATCH) > 0) {
		c->resp_need = 0;
		return 1;
	}
	req.argv = resp_argv;
	req.argl = resp_argl;
	switch (resp_parse(buf_head(&c->in), buf_used(&c->in), &lim, &req)) {
	case RESP_MORE:
		c->resp_need = req.used;
		return 0;
	case RESP_ERROR:
		c->set->core->stats.errors++;
		c->set->core->stats.commands++;
		resp_add_error(&c->out, "ERR", req.error, strlen(req.error));
		log_debug("client %llu (%s): %s", (unsigned long long)c->s.id,
		    c->s.peer, req.error);
		/* the rest of the stream cannot be framed */
		c->quitting = 1;
		return 0;
	case RESP_EMPTY:
		c->resp_need = 0;
		buf_consume(&c->in, req.used);
		return 1;
	case RESP_TOO_MANY:
		if (resp_parse_many(c, &lim, &req, &many_argv,
		    &many_argl) == 0)
			break;
		c->resp_need = 0;
		c->set->core->stats.errors++;
		c->set->core->stats.commands++;
		resp_add_errorf(&c->out, "ERR", "out of memory for the %d "
		    "arguments of '%.*s'", req.argc, (int)(resp_argl[0] < 64 ?
		    resp_argl[0] : 64), resp_argv[0]);
		buf_consume(&c->in, req.used);
		return 1;
	case RESP_OK:
		break;
	}
	c->resp_need = 0;
	command_prepare_resp(&c->s, &req, &op);
	command_run(&c->s, &op, &r);
	/* the arguments point into the input: consumed once answered */
	stop = conn_reply(c, COMMAND_RESP, &r);
	buf_consume(&c->in, req.used);
	free(many_argv);
	free(many_argl);
	return !stop;
}

/* Whether the next request is a RESP one. */
static int
resp_next(const struct conn *c)
{
	return !c->discarding && buf_used(&c->in) > 0 &&
	    buf_head(&c->in)[0] == '*';
}

/*
 * Answers as many complete lines as limits allow, BATCH at a time: first
 * every line of the batch is prepared (its key hashed, its block
 * prefetched), then each is run in order. Runs of plain SEEN/CHECK lines
 * take command_run_simple, which does the same in one pass per line and
 * no per-request bookkeeping; any other line takes command_prepare and
 * command_run. Input is consumed only as requests are answered, so one
 * that must wait is prepared again later. The output limit is checked
 * before each batch, so it may be passed by a batch of replies.
 */
static void
process_input(struct conn *c)
{
	struct op	 ops[BATCH];
	size_t		 len[BATCH], maxl = c->set->core->cfg->max_line;
	int		 n, i;

	/* windows are decided on one reading of the clock per pass */
	filter_clock_update();
	/* at shutdown the final snapshot is already queued: a key answered
	 * now could miss it, so no new request is answered */
	while (!c->quitting && c->wait == NULL && !c->set->core->stopping &&
	    !c->lingering && buf_used(&c->in) > 0) {
		if (buf_used(&c->out) >= c->set->core->cfg->output_buffer_limit)
			break;
		if (c->discarding && !skip_long_line(c))
			break;
		/* a request that begins with '*' is RESP (a line request
		 * begins with a command word) */
		if (resp_next(c)) {
			if (!process_resp(c))
				break;
			continue;
		}
		/* plain SEEN/CHECK lines, nearly all traffic, in one pass */
		if (c->s.authed && !c->set->core->repl.replica &&
		    command_run_simple(&c->s, &c->in, &c->out,
		    COMMAND_SIMPLE_BATCH) > 0)
			continue;
		const char *p = buf_head(&c->in);
		size_t left = buf_used(&c->in), off = 0, next;
		long ll;

		for (n = 0; n < BATCH; n++) {
			if (off < left && p[off] == '*')
				break;	/* RESP: taken at the loop's top */
			ll = proto_frame(p + off, left - off, &next);
			if (ll < 0)
				break;
			if ((size_t)ll > maxl)
				break;	/* answered below, in order */
			command_prepare(&c->s, p + off, (size_t)ll, &ops[n]);
			len[n] = next;
			off += next;
		}
		/* All the batch's prefetches back to back, after all of its
		 * hashing, as command_run_simple does and for its reason. */
		for (i = 0; i < n; i++)
			if (ops[i].filter != NULL)
				filter_prefetch(ops[i].filter, ops[i].hash);
		for (i = 0; i < n; i++) {
			struct result r;

			/* over the limit by at most one reply */
			if (buf_used(&c->out) >= c->set->core->cfg->output_buffer_limit)
				break;
			command_run(&c->s, &ops[i], &r);
			buf_consume(&c->in, len[i]);
			if (conn_reply(c, COMMAND_LINE, &r))
				break;
		}
		if (i < n || c->quitting || c->wait != NULL || c->lingering)
			break;
		if (n == BATCH || resp_next(c))
			continue;
		/* n < BATCH: an over-long line, or no complete line left */
		ll = proto_frame(buf_head(&c->in), buf_used(&c->in), &next);
		if (ll >= 0 && (size_t)ll > maxl) {
			refuse_long_line(c);
			continue;
		}
		/* +1: the line's "\r" may be here before its "\n" */
		if (ll < 0 && buf_used(&c->in) > maxl + 1) {
			refuse_long_line(c);
			continue;
		}
		break;
	}
	if (buf_used(&c->in) == 0)
		buf_shrink(&c->in, KEEP_BYTES);
}

/* A line about a TLS client, at most one a second (a flood of failed
 * handshakes must not flood the log): the others are counted and said
 * with the next. */
static void
tls_note(struct conn *c, const char *why)
{
	struct conns	*set = c->set;
	time_t		 now = time(NULL);

	if (now != set->tls_log_last) {
		if (set->tls_log_suppressed > 0)
			log_info("TLS: client %s: %s (%lu more since the last "
			    "such line)", c->s.peer, why,
			    set->tls_log_suppressed);
		else
			log_info("TLS: client %s: %s", c->s.peer, why);
		set->tls_log_last = now;
		set->tls_log_suppressed = 0;
	} else
		set->tls_log_suppressed++;
}

/* A TLS failure: counted, logged (tls_note), closed. */
static void
tls_failed(struct conn *c, const char *why)
{
	c->set->core->stats.tls_handshake_failures++;
	tls_note(c, why);
	conn_close(c, why);
}

/*
 * The first bytes of a plain TCP connection: a TLS ClientHello (a record
 * of type 22, version 3.x) is a client that wanted tls_listen. It would
 * wait for our ServerHello while we wait for a line: it is told nothing
 * it could read, and closed.
 */
static int
first_input(struct conn *c)
{
	const unsigned char *p = (const unsigned char *)buf_head(&c->in);

	if (buf_used(&c->in) < 2)
		return 0;	/* one byte: the next read decides */
	c->fresh = 0;
	if (p[0] == 0x16 && p[1] == 0x03) {
		tls_failed(c, "a TLS handshake on the plain port");
		return -1;
	}
	return 0;
}

/*
 * Reads what fits under the input bound: one line of max_line bytes (and
 * its CR LF) plus one read. may_read keeps us below it; this is the
 * backstop that makes the bound hold whatever the caller did.
 */
static int
read_input(struct conn *c)
{
	size_t	bound = c->set->core->cfg->max_line + 2 + READ_CHUNK;
	size_t	used = buf_used(&c->in), room;

	/* a RESP request is held whole: resp_parse never asks for more */
	if (resp_next(c))
		bound = resp_max_request(c) + RESP_LINE_MAX + 2 + READ_CHUNK;
	/* a BF.LOADCHUNK the parser has seen announce its chunk: the
	 * request is held whole, up to DUMP_CHUNK_MAX more */
	if (resp_next(c) && c->resp_need + READ_CHUNK > bound)
		bound = c->resp_need + READ_CHUNK;
	ssize_t	n;

	if (used >= bound) {
		set_reading(c, 0);
		return 0;
	}
	/* a big request announced (a dump's chunk): room for all of it at
	 * once, not a doubling (and a copy) per read */
	if (c->resp_need > used + READ_CHUNK && c->resp_need <= bound &&
	    buf_reserve(&c->in, c->resp_need - used) == -1) {
		conn_close(c, "out of memory");
		return -1;
	}
	if (buf_reserve(&c->in, READ_CHUNK) == -1) {
		conn_close(c, "out of memory");
		return -1;
	}
	room = c->in.cap - c->in.len;
	if (room > bound - used)
		room = bound - used;
	n = c->type->read(c, c->in.data + c->in.len, room);
	if (n > 0) {
		c->in.len += (size_t)n;
		c->last_active = conn_clock_ms();
		if (__builtin_expect(c->fresh, 0))
			return first_input(c);
		return 0;
	}
	if (n == 0) {
		/* a half-close: answer the complete lines that came, then close */
		c->eof = 1;
		set_reading(c, 0);
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	conn_close(c, strerror(errno));
	return -1;
}

/*
 * Writes what the socket takes. Returns 0 when everything is sent, 1 when
 * some is left (the write event is armed for it), -1 if the conn was closed.
 */
static int
flush_output(struct conn *c)
{
	ssize_t n;

	while (buf_used(&c->out) > c->unreleased) {
		n = c->type->write(c, buf_head(&c->out), buf_used(&c->out) -
		    c->unreleased);
		if (n > 0) {
			buf_consume(&c->out, (size_t)n);
			/* a client slowly reading a long reply is not idle */
			c->last_active = conn_clock_ms();
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			set_writing(c, 1);
			return 1;
		}
		if (n == -1 && errno == EINTR)
			continue;
		conn_close(c, n == 0 ? "write returned 0" : strerror(errno));
		return -1;
	}
	set_writing(c, 0);
	if (c->unreleased > 0)
		return 1;	/* the rest goes at the turn's end */
	buf_shrink(&c->out, KEEP_BYTES);
	return 0;
}

static int
has_work(const struct conn *c)
{
	if (c->lingering)
		return 0;
	if (resp_next(c))
		return !c->quitting && c->wait == NULL && !c->set->core->stopping &&
		    buf_used(&c->in) >= c->resp_need;
	return !c->quitting && c->wait == NULL && !c->set->core->stopping &&
	    buf_used(&c->in) > 0 &&
	    (c->discarding ||
	    memchr(buf_head(&c->in), '\n', buf_used(&c->in)) != NULL ||
	    buf_used(&c->in) > c->set->core->cfg->max_line + 1);
}

/*
 * The one place that moves a connection forward: answer input, send
 * replies, repeat while the socket takes them and complete lines remain;
 * then close it if it is finished, else choose whether to read.
 */
static void
conn_finish(struct conn *c, int r)
{
	account(c);
	if (c->doomed) {
		conn_close(c, "killed");
		return;
	}
	/* a SHUTDOWN's client is closed by the exit, as Redis's is */
	if (r == 0 && c->wait == NULL && !c->lingering) {
		if (c->quitting) {
			conn_close(c, "QUIT");
			return;
		}
		/* after EOF or at shutdown, a partial line never completes */
		if ((c->eof || c->set->core->stopping) && !has_work(c)) {
			conn_close(c, c->eof ? "end of input" : "shutdown");
			return;
		}
	}
	set_reading(c, may_read(c));
}

/*
 * With a journal: the replies wait for the end of the turn, when the
 * journal has their records (persist_turn_end then conn_release_turn).
 */
static void
conn_defer(struct conn *c)
{
	process_input(c);
	account(c);
	c->unreleased = buf_used(&c->out);
	if (!c->queued) {
		c->queued = 1;
		c->tnext = c->set->turn;
		c->set->turn = c;
	}
	set_reading(c, may_read(c));
}

/*
 * The one place that moves a connection forward: answer input, send
 * replies, repeat while the socket takes them and complete lines remain;
 * then close it if it is finished, else choose whether to read.
 */
static void
conn_service(struct conn *c)
{
	int r;

	if (c->doomed) {
		conn_close(c, "killed");
		return;
	}
	if (c->set->core->journal != NULL || c->held) {
		conn_defer(c);
		return;
	}
	do {
		process_input(c);
		if ((r = flush_output(c)) == -1)
			return;
	} while (r == 0 && has_work(c));
	conn_finish(c, r);
}

int
conn_turn_pending(const struct conns *set)
{
	return set->turn != NULL;
}

void
conn_release_turn(struct conns *set, int hold)
{
	struct conn	*c, *next;
	int		 r;

	c = set->turn;
	set->turn = NULL;
	for (; c != NULL; c = next) {
		/* c may be closed or queued again below */
		next = c->tnext;
		c->queued = 0;
		if (c->doomed) {
			conn_close(c, "killed");
			continue;
		}
		c->s.wrote |= c->s.journaled;
		if (c->held || (hold && c->s.journaled)) {
			c->held = 1;	/* stays unreleased */
			continue;
		}
		c->s.journaled = 0;
		c->unreleased = 0;
		if ((r = flush_output(c)) == -1)
			continue;
		/* input left over is answered in the next turn */
		if (r == 0 && has_work(c)) {
			conn_defer(c);
			continue;
		}
		conn_finish(c, r);
	}
}

void
conn_release_held(struct conns *set)
{
	/* conn_service may close c (CLIENT KILL) */
	for (struct conn *c = set->head, *next; c != NULL; c = next) {
		next = c->next;
		if (c->held) {
			c->held = 0;
			c->s.journaled = 0;
			c->unreleased = 0;
			conn_service(c);
		}
	}
}

/* ---- the set ---- */

/*
 * 1 if the client's input is waiting to be read: it is not idle, the loop
 * has not got to it yet. Its last activity becomes now.
 */
static int
input_pending(struct conn *c, uint64_t now_ms)
{
	int n = 0;

	if (c->fd < 0 || ioctl(c->fd, FIONREAD, &n) == -1 || n <= 0)
		return 0;
	c->last_active = now_ms;
	return 1;
}

void
conn_sweep(struct conns *set, unsigned idle_timeout)
{
	struct conn	*c, *next;
	uint64_t	 now_ms = conn_clock_ms();
	uint64_t	 limit = (uint64_t)idle_timeout * 1000;

	/* a time when the daemon did not run (SIGSTOP, a frozen VM) is not
	 * its clients' idleness: a sweep that comes late moves every
	 * client's last activity forward by the delay */
	if (set->last_sweep_ms != 0 && now_ms - set->last_sweep_ms > 2000)
		for (c = set->head; c != NULL; c = c->next)
			c->last_active += now_ms - set->last_sweep_ms - 1000;
	set->last_sweep_ms = now_ms;
	if (set->handshakes > 0) {
		uint64_t hs = (uint64_t)set->core->cfg->tls_handshake_timeout *
		    1000;

		for (c = set->head; c != NULL; c = next) {
			next = c->next;
			if (c->handshaking && now_ms - c->last_active >= hs)
				tls_failed(c, "TLS handshake not done within "
				    "tls_handshake_timeout");
		}
	}
	if (limit == 0)
		return;
	for (c = set->head; c != NULL; c = next) {
		next = c->next;
		if (c->wait == NULL && now_ms - c->last_active >= limit &&
		    !input_pending(c, now_ms)) {
			set->core->stats.idle_closed++;
			conn_close(c, "idle timeout");
		}
	}
}

void
conn_set_auth(struct conns *set, int required)
{
	for (struct conn *c = set->head; c != NULL; c = c->next)
		if (!c->is_unix)
			c->s.authed = !required;
}

void
conn_kick_all(struct conns *set)
{
	for (struct conn *c = set->head, *next; c != NULL; c = next) {
		next = c->next;
		conn_kick(c);
	}
}

void
conn_stop_reading_all(struct conns *set)
{
	for (struct conn *c = set->head, *next; c != NULL; c = next) {
		next = c->next;
		conn_stop_reading(c);
	}
}

int
conn_output_pending(const struct conns *set)
{
	for (const struct conn *c = set->head; c != NULL; c = c->next)
		if (buf_used(&c->out) > 0 || c->wait != NULL)
			return 1;
	return 0;
}

void
conn_close_all(struct conns *set)
{
	while (set->head != NULL)
		conn_close(set->head, NULL);
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (__builtin_expect(c->handshaking, 0)) {
		tls_handshake_step(c);
		return;
	}
	if (read_input(c) == -1)
		return;
	conn_service(c);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->doomed) {
		conn_close(c, "killed");
		return;
	}
	if (__builtin_expect(c->handshaking, 0)) {
		tls_handshake_step(c);
		return;
	}
	if (__builtin_expect(c->read_wants_write, 0)) {
		/* the read that waited for the socket to take a write */
		c->read_wants_write = 0;
		if (buf_used(&c->out) <= c->unreleased)
			set_writing(c, 0);
		if (read_input(c) == -1)
			return;
		conn_service(c);
		return;
	}
	if (flush_output(c) == 0)
		conn_service(c);
}

void
conn_save_done(struct conn *c, int ok, const char *err)
{
	c->wait = NULL;
	if (ok && c->wait_proto == COMMAND_RESP)
		buf_append(&c->out, "+OK\r\n", 5);
	else if (ok)
		buf_append(&c->out, "OK\r\n", 4);
	else if (c->wait_proto == COMMAND_RESP) {
		c->set->core->stats.errors++;
		resp_add_errorf(&c->out, "ERR", "%s", err);
	} else
		reply_error(c, err);
	conn_kick(c);
}

void
conn_count_done(struct conn *c, long long n)
{
	char	 line[32];
	int	 len;

	c->wait = NULL;
	len = snprintf(line, sizeof(line), c->wait_proto == COMMAND_RESP ?
	    ":%lld\r\n" : "%lld\r\n", n);
	buf_append(&c->out, line, (size_t)len);
	conn_kick(c);
}

/* ---- what commands may ask of other connections (session_ops) ---- */

/*
 * Marks c to be closed from the loop, not now: a command is running (a
 * PUBLISH going through its listeners, a CLIENT KILL through the set).
 */
static void
doom(struct conn *c, const char *why)
{
	log_debug("client %llu (%s): %s", (unsigned long long)c->s.id,
	    c->s.peer, why);
	c->doomed = 1;
	set_reading(c, 0);
	event_active(c->ev_write, EV_WRITE, 0);
}

/*
 * A pub/sub message for c. A listener that does not read is bounded as
 * any client is, by output_buffer_limit: past it, it is dropped (Redis's
 * client-output-buffer-limit for pubsub), never left to grow.
 */
static int
conn_push(struct session *s, const char *p, size_t n)
{
	struct conn *c = (struct conn *)s;	/* s is its first member */

	if (c->doomed)
		return -1;
	if (buf_used(&c->out) + n > c->set->core->cfg->output_buffer_limit) {
		doom(c, "closed: pub/sub messages unread past "
		    "output_buffer_limit");
		return -1;
	}
	if (buf_append(&c->out, p, n) == -1) {
		doom(c, "closed: out of memory for a pub/sub message");
		return -1;
	}
	/* replies that wait for the turn's end keep the message behind
	 * them; else it goes when the socket takes it */
	if (c->queued || c->held)
		c->unreleased += n;
	else
		set_writing(c, 1);
	account(c);
	return 0;
}

static int
conn_matches(const struct conn *c, const struct session_match *m)
{
	if (m->id != 0 && c->s.id != m->id)
		return 0;
	if (m->addr != NULL && (strlen(c->s.peer) != m->addrl ||
	    memcmp(c->s.peer, m->addr, m->addrl) != 0))
		return 0;
	if (m->pred != NULL && !m->pred(&c->s))
		return 0;
	switch (m->type) {
	case SESSION_TYPE_NORMAL:
		return c->s.nsubs == 0;
	case SESSION_TYPE_PUBSUB:
		return c->s.nsubs != 0;
	case SESSION_TYPE_NONE:
		return 0;
	}
	return 1;
}

/* CLIENT KILL: the caller, when it matches, is closed after its reply. */
static long long
conn_kill(struct session *caller, const struct session_match *m)
{
	struct conn	*me = (struct conn *)caller;
	long long	 n = 0;

	for (struct conn *c = me->set->head; c != NULL; c = c->next) {
		if (c->doomed || (c == me && m->skipme) || !conn_matches(c, m))
			continue;
		n++;
		if (c == me)
			c->quitting = 1;
		else
			doom(c, "closed by CLIENT KILL");
	}
	return n;
}

static const struct session_ops conn_session_ops = { conn_push, conn_kill };

long long
conn_kill_matching(struct conns *set, const struct session_match *m)
{
	long long n = 0;

	for (struct conn *c = set->head; c != NULL; c = c->next)
		if (!c->doomed && conn_matches(c, m)) {
			doom(c, "closed: its user was deleted or turned off");
			n++;
		}
	return n;
}

/* ---- connection types ---- */

static ssize_t
tcp_read(struct conn *c, void *p, size_t n)
{
	return read(c->fd, p, n);
}

static ssize_t
tcp_write(struct conn *c, const void *p, size_t n)
{
	return write(c->fd, p, n);
}

static void
tcp_close(struct conn *c)
{
	close(c->fd);
}

static const struct conn_type conn_type_tcp = {
	"tcp", tcp_read, tcp_write, NULL, tcp_close
};

/* A connection whose socket and TLS session were handed over (PSYNC):
 * nothing more is read from or written into that stream. */
static ssize_t
gone_read(struct conn *c, void *p, size_t n)
{
	(void)c;
	(void)p;
	(void)n;
	return 0;
}

static ssize_t
gone_write(struct conn *c, const void *p, size_t n)
{
	(void)c;
	(void)p;
	return (ssize_t)n;
}

static const struct conn_type conn_type_gone = {
	"gone", gone_read, gone_write, NULL, tcp_close
};

/*
 * SSL_read and SSL_write as read(2) and write(2). A want of the other
 * direction: SSL_read that must write first (a TLSv1.3 key update while
 * the socket is full) arms the write event, and on_write reads again;
 * SSL_write never waits to read, renegotiation being off (tls.c).
 */
static ssize_t
tls_io_result(struct conn *c, int r, int reading)
{
	char buf[160];

	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		if (reading) {
			c->read_wants_write = 1;
			set_writing(c, 1);
		}
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;	/* close_notify: the end of its input */
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		if (errno == 0)
			errno = ECONNRESET;
		return -1;
	default:
		/* a record that does not decrypt, an alert: the connection
		 * is closed for it, and the log says why */
		tls_note(c, tls_error_string(buf, sizeof(buf)));
		errno = EPROTO;
		return -1;
	}
}

/*
 * As many records as fit: the server's context reads ahead (tls.c), so
 * one read(2) brings in what the socket holds, and the records it already
 * has are taken here without another system call, as one read(2) of a
 * plain connection takes many pipelined requests.
 */
static ssize_t
tls_read(struct conn *c, void *p, size_t n)
{
	size_t	 got = 0;
	int	 r;

	ERR_clear_error();
	errno = 0;
	if (n > INT_MAX)
		n = INT_MAX;
	while ((r = SSL_read(c->ssl, (char *)p + got, (int)(n - got))) > 0) {
		got += (size_t)r;
		if (!SSL_has_pending(c->ssl))
			return (ssize_t)got;
		if (got == n) {
			/* the rest is read in the next turn, if reading
			 * is still on then (else set_reading says so) */
			event_active(c->ev_read, EV_READ, 0);
			return (ssize_t)got;
		}
	}
	if (got > 0) {
		ERR_clear_error();
		return (ssize_t)got;	/* the error, if any, comes next time */
	}
	return tls_io_result(c, r, 1);
}

static ssize_t
tls_write(struct conn *c, const void *p, size_t n)
{
	int r;

	ERR_clear_error();
	errno = 0;
	if ((r = SSL_write(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n)) > 0)
		return r;
	return tls_io_result(c, r, 0);
}

/* Records read ahead, whole or not yet decrypted: the socket has given
 * them already and will not say so again. */
static int
tls_pending(const struct conn *c)
{
	return c->ssl != NULL && SSL_has_pending(c->ssl);
}

static void
tls_close(struct conn *c)
{
	/* a close_notify for a client that finished its handshake (one
	 * try: a socket that does not take it is closed anyway) */
	if (!c->handshaking && SSL_is_init_finished(c->ssl)) {
		ERR_clear_error();
		(void)SSL_shutdown(c->ssl);
	}
	ERR_clear_error();
	SSL_free(c->ssl);
	c->ssl = NULL;
	close(c->fd);
}

static const struct conn_type conn_type_tls = {
	"tls", tls_read, tls_write, tls_pending, tls_close
};

/*
 * The handshake, one more state of a TLS connection, moved on by its
 * socket's events as its reads and writes are: done, it becomes a
 * connection like any other; failed (a plaintext client, a certificate
 * that does not verify, a protocol or cipher not allowed), it is
 * counted and closed with its buffers.
 */
static void
tls_handshake_step(struct conn *c)
{
	char	 why[256], err[160];
	long	 vr;
	int	 r;

	ERR_clear_error();
	errno = 0;
	if ((r = SSL_do_handshake(c->ssl)) == 1) {
		c->handshaking = 0;
		c->set->handshakes--;
		c->last_active = conn_clock_ms();
		set_writing(c, 0);
		log_debug("client %llu (%s): TLS: %s, %s",
		    (unsigned long long)c->s.id, c->s.peer,
		    SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl));
		/* a request may have come with the handshake's end */
		if (read_input(c) == -1)
			return;
		conn_service(c);
		return;
	}
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		set_writing(c, 0);
		set_reading(c, 1);
		return;
	case SSL_ERROR_WANT_WRITE:
		set_writing(c, 1);
		return;
	case SSL_ERROR_SYSCALL:
		snprintf(why, sizeof(why), "TLS handshake failed: %s",
		    errno != 0 ? strerror(errno) : "the client closed");
		ERR_clear_error();
		break;
	default:
		tls_error_string(err, sizeof(err));
		if ((vr = SSL_get_verify_result(c->ssl)) != X509_V_OK)
			snprintf(why, sizeof(why), "TLS handshake failed: "
			    "client certificate: %s",
			    X509_verify_cert_error_string(vr));
		else
			snprintf(why, sizeof(why), "TLS handshake failed: %s",
			    err[0] ? err : "protocol error");
		break;
	}
	tls_failed(c, why);
}
