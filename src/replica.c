/*
 * replica.c - a replica's link to its primary; see replica.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "backlog.h"
#include "cluster.h"
#include "cluster_move.h"
#include "config.h"
#include "core.h"
#include "filter.h"
#include "journal.h"
#include "fileio.h"
#include "log.h"
#include "mirror.h"
#include "primary.h"
#include "registry.h"
#include "replica.h"
#include "saver.h"
#include "tls.h"

/* The largest frame accepted: a turn's records are far fewer. */
#define FRAME_MAX	(1u << 30)
/* Seconds between attempts; a link kept down on purpose waits longer. */
#define RETRY_SECS	1
#define REFUSED_SECS	5
/* A primary silent this long (it sends a frame a second) is gone. */
#define TIMEOUT_SECS	60

enum phase {
	PH_IDLE,	/* not connected */
	PH_CONNECTING,
	PH_REPLIES,	/* AUTH and REPLCONF replies */
	PH_MYID,	/* CLUSTER MYID's reply: "$40" or an error */
	PH_MYID_BODY,	/* the ID */
	PH_PSYNC,	/* its answer */
	PH_IMAGE_HEAD,	/* "$IMAGE n" */
	PH_FILE_HEAD,	/* "<name> <size>" */
	PH_FILE,	/* its bytes */
	PH_STREAM,
};

struct replica {
	struct core	*core;
	struct event_base *base;
	struct bufferevent *bev;
	enum phase	 phase;
	int		 replies;	/* simple replies still expected */
	int		 want_myid;	/* then CLUSTER MYID's */
	time_t		 retry_at;
	/* a full sync being received */
	char		 replid[41];
	uint64_t	 from;
	struct mirror_image *img;
	size_t		 nimg, want;
	uint64_t	 left;		/* of the current file */
	/* the offset acknowledged, and the one owed a durable 'o' */
	uint64_t	 acked;
	int		 durable_pending;
	/* acknowledged at most: the offset before an image of moved slots
	 * whose snapshots are not written yet (UINT64_MAX: none), so that
	 * seen-cli's wait and WAIT count a replica that holds it durably */
	uint64_t	 ack_limit;
	uint64_t	 sync_gen;	/* full syncs loaded */
	int		 applied_turn;	/* frames applied this turn */
	/* the filters hold the stream up to core->repl.offset of
	 * core->repl.replid: a reconnection may resume */
	int		 have_state;
};

static void
set_state(struct replica *rp, int state)
{
	struct core_repl *r = &rp->core->repl;

	r->state = state;
	if (state == CORE_LINK_CONNECTED) {
		r->link_up = 1;
		r->link_error[0] = '\0';
	} else if (r->link_up || r->down_since == 0) {
		r->link_up = 0;
		r->down_since = time(NULL);
	}
	r->syncing = state == CORE_LINK_SYNC && rp->phase >= PH_IMAGE_HEAD &&
	    rp->phase <= PH_FILE;
}

static void
drop_image(struct replica *rp)
{
	for (size_t i = 0; i < rp->nimg; i++)
		if (rp->img[i].fd != -1)
			close(rp->img[i].fd);
	free(rp->img);
	rp->img = NULL;
	rp->nimg = rp->want = 0;
}

/* The link goes; another attempt in secs. why (may be NULL) is logged. */
static void
link_down(struct replica *rp, const char *why, int secs)
{
	if (why != NULL)
		log_warn("replication: link to %s:%u down: %s",
		    rp->core->repl.host, rp->core->repl.port, why);
	if (rp->bev != NULL)
		bufferevent_free(rp->bev);
	rp->bev = NULL;
	drop_image(rp);
	rp->phase = PH_IDLE;
	rp->retry_at = time(NULL) + secs;
	set_state(rp, CORE_LINK_CONNECT);
}

/* ---- the handshake ---- */

static void
send_cmd(struct replica *rp, int argc, const char **argv)
{
	struct evbuffer *out = bufferevent_get_output(rp->bev);

	evbuffer_add_printf(out, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		evbuffer_add_printf(out, "$%zu\r\n%s\r\n", strlen(argv[i]),
		    argv[i]);
}

/* Our listening port, for the primary's INFO and Sentinel: with
 * tls_replication, the TLS one (as a Redis replica announces its tls-port
 * with tls-replication yes), which is where Sentinel will connect. */
static const char *
listen_port(const struct config *cfg)
{
	const char *l = cfg->listen, *c;

	if (cfg->tls_replication && cfg->tls_listen != NULL)
		l = cfg->tls_listen;
	if (l == NULL || (c = strrchr(l, ':')) == NULL)
		return "0";
	return c + 1;
}

static void
handshake(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	const struct config	*cfg = rp->core->cfg;
	const struct cluster	*cl = rp->core->cluster;
	char			 off[32], aport[16];
	const char		*auth[3] = { "AUTH", cfg->primary_token, NULL };
	const char		*port[9] = { "REPLCONF", "listening-port",
				    listen_port(cfg), "capa", "seend-slots" };
	const char		*myid[2] = { "CLUSTER", "MYID" };
	int			 nport = 5;
	const char		*psync[3] = { "PSYNC", "?", "-1" };

	rp->replies = 1;
	/* AUTH <token>, or as a user (primary_user, Redis's masteruser):
	 * AUTH <user> <token>; a refusal keeps the link down, saying so */
	if (cfg->primary_token != NULL) {
		if (cfg->primary_user != NULL) {
			auth[1] = cfg->primary_user;
			auth[2] = cfg->primary_token;
		}
		send_cmd(rp, cfg->primary_user != NULL ? 3 : 2, auth);
		rp->replies++;
	}
	/* in cluster mode our node ID, and the primary's asked for: CLUSTER
	 * SLOTS lists this replica under it (issue 33); with announce, the
	 * address clients reach it at, as Redis's replica-announce-ip and
	 * replica-announce-port */
	if (cl != NULL) {
		port[nport++] = "node-id";
		port[nport++] = cl->myid;
		if (cl->announced) {
			snprintf(aport, sizeof(aport), "%u", cl->port);
			port[2] = aport;
			port[nport++] = "ip-address";
			port[nport++] = cl->host;
		}
	}
	send_cmd(rp, nport, port);
	r->primary_id[0] = '\0';
	rp->want_myid = cl != NULL;
	if (rp->want_myid)
		send_cmd(rp, 2, myid);
	/* where this replica had got to: its primary's history */
	if (rp->have_state && r->replid[0] != '\0') {
		snprintf(off, sizeof(off), "%" PRIu64, r->offset);
		psync[1] = r->replid;
		psync[2] = off;
	}
	send_cmd(rp, 3, psync);
	rp->phase = PH_REPLIES;
	set_state(rp, CORE_LINK_SYNC);
}

/* A line of the handshake; 1 if one was taken, 0 wait, -1 the link went. */
static int
take_line(struct replica *rp, char **line)
{
	struct evbuffer	*in = bufferevent_get_input(rp->bev);
	size_t		 len;

	*line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
	if (*line != NULL)
		return 1;
	if (evbuffer_get_length(in) > 4096) {
		link_down(rp, "the primary sent a line too long", RETRY_SECS);
		return -1;
	}
	return 0;
}

static int
on_reply(struct replica *rp, char *line)
{
	if (line[0] != '+') {
		char why[400];

		snprintf(why, sizeof(why), "the primary refused the "
		    "handshake: %.300s", line);
		snprintf(rp->core->repl.link_error,
		    sizeof(rp->core->repl.link_error), "%.290s", why);
		link_down(rp, why, REFUSED_SECS);
		return -1;
	}
	if (--rp->replies == 0)
		rp->phase = rp->want_myid ? PH_MYID : PH_PSYNC;
	return 0;
}

/* CLUSTER MYID's reply: the primary's node ID, or an error (a primary
 * not in cluster mode, an older seend): then it has none. */
static int
on_myid(struct replica *rp, char *line)
{
	if (rp->phase == PH_MYID) {
		rp->phase = line[0] == '$' && line[1] != '-' ? PH_MYID_BODY :
		    PH_PSYNC;
		return 0;
	}
	if (cluster_id_valid(line, strlen(line)))
		memcpy(rp->core->repl.primary_id, line, CLUSTER_ID_LEN + 1);
	rp->phase = PH_PSYNC;
	return 0;
}

static int
on_psync(struct replica *rp, char *line)
{
	struct core_repl	*r = &rp->core->repl;
	char			 id[64];
	unsigned long long	 o;

	if (sscanf(line, "+FULLRESYNC %40s %llu", id, &o) == 2 &&
	    strlen(id) == 40) {
		snprintf(rp->replid, sizeof(rp->replid), "%s", id);
		rp->from = o;
		rp->phase = PH_IMAGE_HEAD;
		set_state(rp, CORE_LINK_SYNC);
		log_info("replication: full resync with %s:%u from offset %llu",
		    r->host, r->port, o);
		return 0;
	}
	if (sscanf(line, "+CONTINUE %40s", id) == 1 && strlen(id) == 40) {
		/* a promoted primary goes on with our offsets under its id */
		snprintf(r->replid, sizeof(r->replid), "%s", id);
		rp->phase = PH_STREAM;
		rp->acked = UINT64_MAX;	/* what it holds, said at once */
		set_state(rp, CORE_LINK_CONNECTED);
		log_info("replication: partial resync with %s:%u from offset "
		    "%" PRIu64, r->host, r->port, r->offset);
		return 0;
	}
	{
		char why[400];

		snprintf(why, sizeof(why), "PSYNC refused: %.300s", line);
		link_down(rp, why, REFUSED_SECS);
	}
	return -1;
}

/* ---- a full sync ---- */

static int
on_image_head(struct replica *rp, char *line)
{
	unsigned long long n;

	if (sscanf(line, "$IMAGE %llu", &n) != 1 || n > 10000000) {
		link_down(rp, "a bad image header", RETRY_SECS);
		return -1;
	}
	if ((rp->img = calloc(n ? n : 1, sizeof(*rp->img))) == NULL) {
		link_down(rp, "out of memory", RETRY_SECS);
		return -1;
	}
	rp->want = n;
	rp->nimg = 0;
	rp->phase = PH_FILE_HEAD;
	set_state(rp, CORE_LINK_SYNC);
	return 0;
}

static int
on_file_head(struct replica *rp, char *line)
{
	struct mirror_image	*m;
	unsigned long long	 size;
	long long		 deadline = 0;
	char			 name[80];
	const char		*dir = rp->core->cfg->data_dir;

	if (sscanf(line, "%64s %llu %lld", name, &size, &deadline) < 2 ||
	    !registry_valid_name(name, strlen(name))) {
		link_down(rp, "a bad image file header", RETRY_SECS);
		return -1;
	}
	m = &rp->img[rp->nimg++];
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->deadline_ms = deadline > 0 ? deadline : 0;
	m->fd = fileio_tmpfile(dir);
	if (m->fd == -1) {
		char why[300];

		snprintf(why, sizeof(why), "a file in %s for the image: %s",
		    dir, strerror(errno));
		link_down(rp, why, REFUSED_SECS);
		return -1;
	}
	rp->left = size;
	rp->phase = PH_FILE;
	return 0;
}

/* The image's snapshots are written: a restart resumes from here on. */
static void
snapshots_done(void *arg, struct save_wait *w)
{
	struct replica		*rp = arg;
	struct core_repl	*r = &rp->core->repl;

	if ((uint64_t)w->count != rp->sync_gen || !rp->durable_pending)
		return;
	/* failed (data_dir full?): acknowledged all the same, as a full
	 * sync's load is, or the primary's WAITs would never count this
	 * replica again; durable only at a restart's full sync */
	rp->ack_limit = UINT64_MAX;
	if (w->failed) {
		log_warn("replication: a snapshot of what the primary sent "
		    "failed: a restart will sync fully");
		return;
	}
	rp->durable_pending = 0;
	/* (promoted meanwhile: its own history goes on, no offset) */
	if (rp->core->journal == NULL || !r->replica)
		return;
	(void)journal_append_offset(rp->core->journal, r->replid, r->offset);
	log_info("replication: the images' snapshots are written: a restart "
	    "resumes from offset %" PRIu64, r->offset);
}

/*
 * One wait for the snapshots of the n filters at f (NULL: every filter),
 * after which the offset is durable again; a wait still under way (a
 * full sync's, an earlier image's) is superseded, so this one takes every
 * filter then. The journal does not hold images: until then a restart
 * must sync fully (an empty id says so).
 */
static void
wait_for_snapshots(struct replica *rp, struct filter *const *f, size_t n)
{
	struct core		*core = rp->core;
	struct save_wait	*w;

	if (core->journal != NULL)
		(void)journal_append_offset(core->journal,
		    "0000000000000000000000000000000000000000", 0);
	if (f == NULL || rp->durable_pending) {
		f = core->reg->filters;
		n = core->reg->nfilters;
	}
	rp->durable_pending = 1;
	rp->sync_gen++;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		rp->ack_limit = UINT64_MAX;
		return;		/* a restart before the next sync is full */
	}
	w->then = snapshots_done;
	w->then_arg = rp;
	w->count = (long long)rp->sync_gen;
	w->pending = 1;
	for (size_t i = 0; i < n; i++)
		if (saver_submit(core->saver, f[i], core->cfg->data_dir, w) ==
		    -1)
			w->failed = 1;
	saver_wait_done(core->saver, w);
}

/* Every image here: the filters take them, and the stream begins. */
static int
load_image(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	struct core		*core = rp->core;
	size_t			 n = rp->nimg;
	char			 err[600];

	for (size_t i = 0; i < rp->nimg; i++)
		(void)lseek(rp->img[i].fd, 0, SEEK_SET);
	if (mirror_load_image(core, rp->img, rp->nimg, err, sizeof(err))
	    == -1) {
		snprintf(r->link_error, sizeof(r->link_error), "%.290s", err);
		log_error("replication: the link to %s:%u stays down: %s",
		    r->host, r->port, err);
		link_down(rp, NULL, REFUSED_SECS);
		return -1;
	}
	drop_image(rp);
	snprintf(r->replid, sizeof(r->replid), "%s", rp->replid);
	rp->have_state = 1;
	r->offset = rp->from;
	r->slots_end = 0;
	backlog_reset(r->backlog, rp->from);
	/* acknowledged once loaded (an image of slots before it is in it) */
	rp->ack_limit = UINT64_MAX;
	wait_for_snapshots(rp, NULL, 0);
	rp->acked = UINT64_MAX;
	rp->phase = PH_STREAM;
	set_state(rp, CORE_LINK_CONNECTED);
	log_info("replication: full sync from %s:%u loaded: %zu filters, "
	    "offset %" PRIu64, r->host, r->port, n, rp->from);
	return 0;
}

/* Bytes of the current file; 1 when it is whole, 0 wait, -1 gone. */
static int
take_file(struct replica *rp)
{
	struct evbuffer		*in = bufferevent_get_input(rp->bev);
	struct mirror_image	*m = &rp->img[rp->nimg - 1];

	while (rp->left > 0 && evbuffer_get_length(in) > 0) {
		size_t		 n = evbuffer_get_length(in);
		unsigned char	*p;

		if (n > rp->left)
			n = (size_t)rp->left;
		if (n > (1u << 20))
			n = 1u << 20;
		p = evbuffer_pullup(in, (ev_ssize_t)n);
		if (p == NULL || write(m->fd, p, n) != (ssize_t)n) {
			link_down(rp, "cannot keep the image (data_dir full?)",
			    REFUSED_SECS);
			return -1;
		}
		evbuffer_drain(in, n);
		rp->left -= n;
	}
	return rp->left == 0;
}

/* ---- the stream ---- */

/*
 * A frame of moved slots (primary.h): taken as the primary took it, and
 * the filters it changed snapshotted before a restart may resume past
 * it. 0, or -1 (the link went: a full sync follows, which brings them).
 */
static int
take_slots(struct replica *rp, const unsigned char *p, size_t len)
{
	struct cluster_move_changed	*changed;
	struct filter			**f;
	size_t				 n;
	char				 err[600];

	if (mirror_apply_slots(rp->core, p, len, &changed, &n, err,
	    sizeof(err)) == -1) {
		log_error("replication: the moved slots in the stream cannot "
		    "be taken (%s): a full sync follows", err);
		rp->have_state = 0;
		link_down(rp, "moved slots not taken", RETRY_SECS);
		return -1;
	}
	if (rp->ack_limit == UINT64_MAX)
		rp->ack_limit = rp->core->repl.offset;
	if ((f = calloc(n ? n : 1, sizeof(*f))) != NULL)
		for (size_t i = 0; i < n; i++)
			f[i] = changed[i].f;
	free(changed);
	/* out of memory for the list: every filter */
	wait_for_snapshots(rp, f, f != NULL ? n : 0);
	free(f);
	log_info("replication: moved slots taken from the stream: %zu "
	    "filter(s) changed", n);
	return 0;
}

/* Whole frames applied; 0 wait for more, -1 the link went. */
static int
take_frames(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	struct evbuffer		*in = bufferevent_get_input(rp->bev);
	unsigned char		 head[PRIMARY_FRAME_HEAD], *p;
	uint32_t		 len;
	char			 err[600];

	while (evbuffer_get_length(in) >= PRIMARY_FRAME_HEAD) {
		evbuffer_copyout(in, head, sizeof(head));
		len = (uint32_t)head[4] | (uint32_t)head[5] << 8 |
		    (uint32_t)head[6] << 16 | (uint32_t)head[7] << 24;
		if (head[0] != 'S' || (head[1] != 'R' && head[1] != 'I') ||
		    head[2] || head[3] || len > FRAME_MAX) {
			link_down(rp, "a bad frame in the stream", RETRY_SECS);
			return -1;
		}
		if (evbuffer_get_length(in) < PRIMARY_FRAME_HEAD + (size_t)len)
			return 0;
		p = evbuffer_pullup(in, PRIMARY_FRAME_HEAD + (ev_ssize_t)len);
		if (p == NULL) {
			link_down(rp, "out of memory", RETRY_SECS);
			return -1;
		}
		if (head[1] == 'I') {
			if (take_slots(rp, p + PRIMARY_FRAME_HEAD, len) == -1)
				return -1;
		} else if (mirror_apply(rp->core, p + PRIMARY_FRAME_HEAD, len,
		    err, sizeof(err)) == -1) {
			link_down(rp, err, RETRY_SECS);
			return -1;
		}
		backlog_append(r->backlog, p, PRIMARY_FRAME_HEAD + len);
		r->offset += PRIMARY_FRAME_HEAD + len;
		if (head[1] == 'I')
			r->slots_end = r->offset;
		r->backlog_first = r->backlog->first;
		evbuffer_drain(in, PRIMARY_FRAME_HEAD + len);
		rp->applied_turn = 1;
	}
	return 0;
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct replica	*rp = arg;
	char		*line;
	int		 rc;

	(void)bev;
	rp->core->repl.last_io = time(NULL);
	for (;;) {
		switch (rp->phase) {
		case PH_REPLIES:
		case PH_MYID:
		case PH_MYID_BODY:
		case PH_PSYNC:
		case PH_IMAGE_HEAD:
		case PH_FILE_HEAD:
			if ((rc = take_line(rp, &line)) <= 0)
				return;
			rc = rp->phase == PH_REPLIES ? on_reply(rp, line) :
			    rp->phase == PH_MYID || rp->phase == PH_MYID_BODY ?
			    on_myid(rp, line) :
			    rp->phase == PH_PSYNC ? on_psync(rp, line) :
			    rp->phase == PH_IMAGE_HEAD ?
			    on_image_head(rp, line) : on_file_head(rp, line);
			free(line);
			if (rc == -1)
				return;
			if (rp->phase == PH_FILE_HEAD && rp->nimg == rp->want &&
			    load_image(rp) == -1)
				return;
			break;
		case PH_FILE:
			if ((rc = take_file(rp)) <= 0)
				return;
			rp->phase = PH_FILE_HEAD;
			if (rp->nimg == rp->want && load_image(rp) == -1)
				return;
			break;
		case PH_STREAM:
			(void)take_frames(rp);
			return;
		default:
			return;
		}
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct replica *rp = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		handshake(rp);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		unsigned long	 e = rp->core->cfg->tls_replication ?
				    bufferevent_get_openssl_error(bev) : 0;
		char		 why[256];

		/* TLS: OpenSSL's reason (a certificate refused) */
		if (e != 0) {
			strcpy(why, "TLS: ");
			ERR_error_string_n(e, why + 5, sizeof(why) - 5);
			ERR_clear_error();
			snprintf(rp->core->repl.link_error,
			    sizeof(rp->core->repl.link_error), "%.290s", why);
		}
		link_down(rp, e != 0 ? why : what & BEV_EVENT_EOF ?
		    "the primary closed it" :
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()),
		    RETRY_SECS);
	}
}

/*
 * tls_replication: the link speaks TLS to the primary's tls_listen,
 * verifying its certificate against tls_ca_cert_file and presenting ours
 * (tls_cert_file, as a Redis replica presents its own to a primary with
 * tls-auth-clients). The context is read at each connect, so that a
 * rotated certificate is the next link's. NULL after logging why.
 */
static struct bufferevent *
tls_link(struct replica *rp)
{
	const struct config	*cfg = rp->core->cfg;
	struct tls_settings	 t;
	struct bufferevent	*bev;
	SSL_CTX			*ctx;
	SSL			*ssl;
	char			 err[512];

	config_tls_settings(cfg, &t);
	if ((ctx = tls_client_ctx_new(&t, err, sizeof(err))) == NULL) {
		log_error("replication: TLS: %s", err);
		snprintf(rp->core->repl.link_error,
		    sizeof(rp->core->repl.link_error), "TLS: %.280s", err);
		return NULL;
	}
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);	/* ssl holds its own reference */
	if (ssl == NULL)
		return NULL;
	if (strspn(rp->core->repl.host, "0123456789.:abcdefABCDEF") !=
	    strlen(rp->core->repl.host))
		SSL_set_tlsext_host_name(ssl, rp->core->repl.host);
	if ((bev = bufferevent_openssl_socket_new(rp->base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* a primary that goes away without a close_notify has ended the
	 * stream, as a plain socket's EOF */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void
replica_resume(struct replica *rp, const char *replid, uint64_t offset)
{
	struct core_repl *r = &rp->core->repl;

	if (strlen(replid) != 40 || strspn(replid, "0") == 40)
		return;
	snprintf(r->replid, sizeof(r->replid), "%s", replid);
	r->offset = offset;
	backlog_reset(r->backlog, offset);
	rp->have_state = 1;
}

void
replica_start(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	struct addrinfo		 hints, *ai = NULL;
	char			 port[16];
	int			 rc;

	replica_stop(rp);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", r->port);
	if ((rc = getaddrinfo(r->host, port, &hints, &ai)) != 0) {
		log_warn("replication: %s:%u: %s", r->host, r->port,
		    gai_strerror(rc));
		rp->retry_at = time(NULL) + REFUSED_SECS;
		return;
	}
	rp->bev = rp->core->cfg->tls_replication ? tls_link(rp) :
	    bufferevent_socket_new(rp->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (rp->bev == NULL) {
		freeaddrinfo(ai);
		rp->retry_at = time(NULL) + RETRY_SECS;
		return;
	}
	bufferevent_setcb(rp->bev, on_read, NULL, on_event, rp);
	bufferevent_enable(rp->bev, EV_READ | EV_WRITE);
	rp->phase = PH_CONNECTING;
	set_state(rp, CORE_LINK_CONNECTING);
	r->last_io = time(NULL);
	if (bufferevent_socket_connect(rp->bev, ai->ai_addr,
	    (int)ai->ai_addrlen) == -1)
		link_down(rp, "cannot connect", RETRY_SECS);
	freeaddrinfo(ai);
}

void
replica_stop(struct replica *rp)
{
	if (rp->bev != NULL)
		bufferevent_free(rp->bev);
	rp->bev = NULL;
	drop_image(rp);
	rp->phase = PH_IDLE;
	rp->retry_at = 0;
	/* durable_pending stays: the images' snapshots are what a restart
	 * resumes from, whatever link (a partial resync, a promotion)
	 * follows */
}

void
replica_turn_end(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	uint64_t		 ack;

	if (rp->phase != PH_STREAM)
		return;
	/* the turn's frames, journaled with the keys: where a restart
	 * resumes (replica.h) */
	if (rp->applied_turn && !rp->durable_pending &&
	    rp->core->journal != NULL)
		(void)journal_append_offset(rp->core->journal, r->replid,
		    r->offset);
	rp->applied_turn = 0;
	ack = r->offset < rp->ack_limit ? r->offset : rp->ack_limit;
	if (rp->acked == ack)
		return;
	/* the journal's write of this turn is done: they are held */
	evbuffer_add_printf(bufferevent_get_output(rp->bev),
	    "REPLCONF ACK %" PRIu64 "\r\n", ack);
	rp->acked = ack;
}

void
replica_tick(struct replica *rp)
{
	struct core_repl	*r = &rp->core->repl;
	time_t			 now = time(NULL);

	if (!r->replica)
		return;
	if (rp->phase == PH_IDLE && now >= rp->retry_at) {
		replica_start(rp);
		return;
	}
	if (rp->phase != PH_IDLE && rp->phase != PH_CONNECTING &&
	    now - r->last_io > TIMEOUT_SECS) {
		link_down(rp, "the primary has sent nothing for a minute",
		    RETRY_SECS);
		return;
	}
	/* an acknowledgement held at an image's start is said again, so
	 * that the primary sees the link alive (INFO's lag) meanwhile */
	if (rp->phase == PH_STREAM && rp->ack_limit != UINT64_MAX &&
	    rp->acked != UINT64_MAX)
		evbuffer_add_printf(bufferevent_get_output(rp->bev),
		    "REPLCONF ACK %" PRIu64 "\r\n", rp->acked);
}

struct replica *
replica_new(struct core *core, struct event_base *base)
{
	struct replica *rp;

	if ((rp = calloc(1, sizeof(*rp))) == NULL)
		return NULL;
	rp->core = core;
	rp->base = base;
	rp->acked = UINT64_MAX;
	rp->ack_limit = UINT64_MAX;
	return rp;
}

void
replica_free(struct replica *rp)
{
	if (rp == NULL)
		return;
	replica_stop(rp);
	free(rp);
}
