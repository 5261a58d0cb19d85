/*
 * primary.c - a primary's replicas; see primary.h.
 *
 * Why full syncs are captured at the turn's end: every record of a turn
 * goes into that turn's frame, so a capture taken after the frame is
 * framed holds exactly the records before the offset it is sent with,
 * and the replica applies exactly those after. A forget applied twice
 * would take another key's fingerprint with it; at a turn boundary
 * nothing is applied twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <event2/event.h>

#include "backlog.h"
#include "command.h"
#include "config.h"
#include "core.h"
#include "filter.h"
#include "journal.h"
#include "keyspace.h"
#include "log.h"
#include "primary.h"
#include "registry.h"
#include "saver.h"

/* The least stream a syncing replica may have waiting (see keep). */
#define SYNC_PENDING_MIN	((uint64_t)256 << 20)

/*
 * An online link is written to once this much of the stream is unsent, or
 * FLUSH_USEC after its oldest unsent frame, or at once while a WAIT waits:
 * one send per turn cost the primary a system call and the loopback's TCP
 * path per few hundred keys (a third of a SEEN's CPU); a few per millisecond
 * cost it nothing a replica's lag would notice.
 */
#define FLUSH_BYTES		((uint64_t)64 << 10)
#define FLUSH_USEC		1000

enum link_state {
	LINK_CAPTURE,	/* a full sync to capture at the turn's end */
	LINK_IMAGE,	/* its images being written */
	LINK_ONLINE,	/* streaming */
};

struct sync;

struct image {
	struct sync	*sync;
	char		 name[FILTER_NAME_MAX + 1];
	int		 fd;
	uint64_t	 size;
	int64_t		 deadline_ms;	/* EXPIRE's, 0: none */
};

/* A full sync's images; outlives its link if the replica goes first. */
struct sync {
	struct link	*link;		/* NULL: gone */
	struct image	*img;
	size_t		 n, pending;
	int		 failed;
	char		 err[300];
};

struct link {
	struct primary	*p;
	struct bufferevent *bev;
	char		 ip[64];
	unsigned	 port;
	char		 node_id[41];	/* its cluster node ID, or "" */
	/* it takes images of moved slots in the stream (REPLCONF capa
	 * seend-slots); an older seend resyncs fully instead */
	int		 slots;
	enum link_state	 state;
	uint64_t	 from;		/* the full sync's offset */
	struct sync	*sync;
	/* the stream since the capture, while the images are written: it
	 * follows them (as Redis keeps a syncing replica's output) */
	struct evbuffer	*pending;
	uint64_t	 pending_images;	/* of it, moved slots' images */
	/* the images' bytes and the stream kept while they were written,
	 * counted in its output until they are sent: the limit on unsent
	 * stream allows for them meanwhile */
	uint64_t	 image_bytes;
	uint64_t	 ack;
	time_t		 ack_at;
	/* online: the stream up to here is in its output; the rest is in
	 * the backlog, written by flush() */
	uint64_t	 sent;
	struct link	*next;
};

struct primary {
	struct core	*core;
	struct event_base *base;
	void		(*done)(void *, struct save_wait *);
	void		*arg;
	struct link	*links;
	struct event	*timer;		/* WAIT deadlines */
	struct event	*flusher;	/* unsent frames' FLUSH_USEC */
	time_t		 framed_at;	/* the last frame */
};

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* INFO's and ROLE's view of the links. */
static void
publish(struct primary *p)
{
	struct core_repl	*r = &p->core->repl;
	size_t			 n = 0;

	for (struct link *l = p->links; l != NULL; l = l->next)
		n++;
	free(r->replicas);
	r->replicas = calloc(n ? n : 1, sizeof(*r->replicas));
	r->nreplicas = 0;
	r->online = 0;
	if (r->replicas == NULL)
		return;
	for (struct link *l = p->links; l != NULL; l = l->next) {
		struct core_replica *c = &r->replicas[r->nreplicas++];

		snprintf(c->ip, sizeof(c->ip), "%s", l->ip);
		c->port = l->port;
		memcpy(c->node_id, l->node_id, sizeof(c->node_id));
		c->ack = l->ack;
		c->ack_at = l->ack_at;
		c->online = l->state == LINK_ONLINE;
		r->online += (size_t)c->online;
	}
}

static void
sync_release(struct sync *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->img[i].fd != -1)
			close(s->img[i].fd);
	free(s->img);
	free(s);
}

static void
link_close(struct link *l, const char *why)
{
	struct primary *p = l->p;

	log_info("replication: replica %s:%u dropped: %s", l->ip, l->port,
	    why);
	for (struct link **pp = &p->links; *pp != NULL; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	if (l->sync != NULL) {
		l->sync->link = NULL;
		if (l->sync->pending == 0)
			sync_release(l->sync);
	}
	bufferevent_free(l->bev);
	if (l->pending != NULL)
		evbuffer_free(l->pending);
	free(l);
	publish(p);
}

/* The backlog from offset o onwards into l's output, so that l has been
 * sent everything; -1 if it is gone. */
static int
send_from(struct link *l, uint64_t o)
{
	const struct backlog	*b = l->p->core->repl.backlog;
	const unsigned char	*q;
	size_t			 n;

	if (!backlog_holds(b, o))
		return -1;
	while ((n = backlog_read(b, o, &q, SIZE_MAX)) > 0) {
		if (bufferevent_write(l->bev, q, n) == -1)
			return -1;
		o += n;
	}
	l->sent = o;
	return 0;
}

/* ---- the link's input: acknowledgements ---- */

static void
check_waits(struct primary *p, int all_due);

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct link	*l = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	char		*line;
	size_t		 len;
	int		 acked = 0;

	while ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF)) != NULL) {
		unsigned long long o;

		if (sscanf(line, "REPLCONF ACK %llu", &o) == 1) {
			if (o > l->ack)
				l->ack = o;
			l->ack_at = time(NULL);
			acked = 1;
		}
		free(line);
	}
	if (evbuffer_get_length(in) > 4096) {
		link_close(l, "sent a line too long");
		return;
	}
	if (acked) {
		publish(l->p);
		check_waits(l->p, 0);
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct link *l = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		link_close(l, what & BEV_EVENT_EOF ? "it closed the link" :
		    strerror(EVUTIL_SOCKET_ERROR()));
}

/* ---- full syncs ---- */

/* Every image written: sent, then the stream from the capture. */
static void
image_ready(struct link *l)
{
	struct primary	*p = l->p;
	struct sync	*s = l->sync;
	struct evbuffer	*out = bufferevent_get_output(l->bev);
	uint64_t	 bytes = 0;

	l->sync = NULL;
	if (s->failed) {
		log_error("replication: full sync of %s:%u failed: %s", l->ip,
		    l->port, s->err);
		sync_release(s);
		link_close(l, "its full sync failed");
		return;
	}
	evbuffer_add_printf(out, "+FULLRESYNC %s %" PRIu64 "\r\n$IMAGE %zu\r\n",
	    p->core->repl.replid, l->from, s->n);
	for (size_t i = 0; i < s->n; i++) {
		evbuffer_add_printf(out, "%s %" PRIu64 " %" PRId64 "\r\n",
		    s->img[i].name, s->img[i].size, s->img[i].deadline_ms);
		/* sendfile(2): the file goes to the socket from the page
		 * cache; libevent closes it once sent */
		if (s->img[i].size > 0 && evbuffer_add_file(out, s->img[i].fd,
		    0, (ev_off_t)s->img[i].size) == 0)
			s->img[i].fd = -1;
		bytes += s->img[i].size;
	}
	sync_release(s);
	if (evbuffer_add_buffer(out, l->pending) == -1) {
		link_close(l, "out of memory");
		return;
	}
	/* and the stream kept meanwhile: every frame up to the backlog's end */
	l->image_bytes = evbuffer_get_length(out);
	l->sent = p->core->repl.backlog->end;
	l->state = LINK_ONLINE;
	/* acknowledged only by the replica's own REPLCONF ACK, once it has
	 * loaded the images: sent is not held, and WAIT counts what is held
	 * (as Redis's repl_ack_off) */
	l->ack = 0;
	log_info("replication: full sync of %s:%u sent: %" PRIu64 " bytes of "
	    "images, stream from offset %" PRIu64, l->ip, l->port, bytes,
	    l->from);
	publish(p);
}

static void
image_done(void *arg, struct filter *f, int fd, uint64_t size,
    const char *err)
{
	struct image	*img = arg;
	struct sync	*s = img->sync;

	(void)f;
	img->fd = fd;
	img->size = size;
	if (fd == -1 && !s->failed) {
		s->failed = 1;
		snprintf(s->err, sizeof(s->err), "image of %s: %s", img->name,
		    err);
	}
	if (--s->pending > 0)
		return;
	if (s->link == NULL)
		sync_release(s);
	else
		image_ready(s->link);
}

/* Images of every filter, captured now (the turn's end). */
static void
capture(struct link *l)
{
	struct core	*core = l->p->core;
	struct registry	*reg = core->reg;
	struct sync	*s = NULL;

	l->from = core->repl.offset;
	l->state = LINK_IMAGE;
	if ((l->pending = evbuffer_new()) == NULL ||
	    (s = calloc(1, sizeof(*s))) == NULL ||
	    (s->img = calloc(reg->nfilters ? reg->nfilters : 1,
	    sizeof(*s->img))) == NULL) {
		free(s);
		link_close(l, "out of memory");
		return;
	}
	s->link = l;
	l->sync = s;
	s->n = reg->nfilters;
	/* one hold while submitting, so no image completes the sync early */
	s->pending = 1;
	for (size_t i = 0; i < reg->nfilters; i++) {
		struct image *img = &s->img[i];

		img->sync = s;
		img->fd = -1;
		snprintf(img->name, sizeof(img->name), "%s",
		    reg->filters[i]->name);
		img->deadline_ms = keyspace_deadline(reg->filters[i]);
		s->pending++;
		if (saver_submit_image(core->saver, reg->filters[i],
		    core->cfg->data_dir, image_done, img) == -1) {
			s->pending--;
			s->failed = 1;
			snprintf(s->err, sizeof(s->err), "out of memory");
		}
	}
	core->repl.sync_full++;
	log_info("replication: full sync of %s:%u: %zu filters captured at "
	    "offset %" PRIu64, l->ip, l->port, s->n, l->from);
	if (--s->pending == 0)
		image_ready(l);
}

/* ---- attaching ---- */

/* Whether the history (replid, offset) is this one's and still held,
 * and the link takes what the stream holds from o on. */
static int
can_continue(const struct core_repl *r, const char *replid, uint64_t o,
    int slots)
{
	if (!slots && o < r->slots_end)
		return 0;
	if (strcmp(replid, r->replid) != 0 && (r->replid2[0] == '\0' ||
	    strcmp(replid, r->replid2) != 0 || o > r->second_offset))
		return 0;
	return backlog_holds(r->backlog, o);
}

void
primary_attach(struct primary *p, int fd, struct ssl_st *ssl, const char *ip,
    unsigned port, const char *node_id, int slots, const char *replid,
    uint64_t offset)
{
	struct core_repl	*r = &p->core->repl;
	struct link		*l;

	/* a TLS link goes on in the session its handshake opened */
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->bev = ssl != NULL ? bufferevent_openssl_socket_new(p->base,
	    fd, ssl, BUFFEREVENT_SSL_OPEN, BEV_OPT_CLOSE_ON_FREE) :
	    bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE)) ==
	    NULL) {
		log_error("replication: replica %s:%u: out of memory", ip,
		    port);
		free(l);
		if (ssl != NULL)
			SSL_free(ssl);
		close(fd);
		return;
	}
	l->p = p;
	snprintf(l->ip, sizeof(l->ip), "%s", ip);
	l->port = port;
	snprintf(l->node_id, sizeof(l->node_id), "%s", node_id);
	l->slots = slots;
	l->ack_at = time(NULL);
	bufferevent_setcb(l->bev, on_read, NULL, on_event, l);
	bufferevent_enable(l->bev, EV_READ | EV_WRITE);
	l->next = p->links;
	p->links = l;
	/* from now on each turn's records are kept for the replicas */
	primary_keep_stream(p);
	if (p->core->stream == NULL) {
		link_close(l, "out of memory");
		return;
	}
	if (can_continue(r, replid, offset, slots)) {
		evbuffer_add_printf(bufferevent_get_output(l->bev),
		    "+CONTINUE %s\r\n", r->replid);
		if (send_from(l, offset) == 0) {
			l->state = LINK_ONLINE;
			/* held so far only once it says so: a replica may
			 * hold an image of slots it has not written yet
			 * (replica.h) */
			l->ack = 0;
			r->sync_partial_ok++;
			log_info("replication: replica %s:%u resyncs partially "
			    "from offset %" PRIu64, ip, port, offset);
			publish(p);
			return;
		}
	}
	if (strcmp(replid, "?") != 0)
		r->sync_partial_err++;
	log_info("replication: replica %s:%u asks %s %" PRIu64 ": full sync",
	    ip, port, replid, offset);
	l->state = LINK_CAPTURE;
	publish(p);
}

/* ---- the turn ---- */

/*
 * A frame for a link whose images are being written: kept for it, up to
 * the larger of repl_backlog_size and SYNC_PENDING_MIN bytes (a full sync
 * of a big filter under a heavy load needs more than a small backlog),
 * and the moved slots' images kept besides.
 */
static void
keep(struct link *l, const unsigned char *head, const unsigned char *body,
    size_t len)
{
	uint64_t max = l->p->core->cfg->repl_backlog_size;

	if (max < SYNC_PENDING_MIN)
		max = SYNC_PENDING_MIN;
	max += l->pending_images;
	if (evbuffer_add(l->pending, head, PRIMARY_FRAME_HEAD) == -1 ||
	    (len > 0 && evbuffer_add(l->pending, body, len) == -1))
		link_close(l, "out of memory");
	else if (evbuffer_get_length(l->pending) > max)
		link_close(l, "the stream during its full sync passed the "
		    "larger of repl_backlog_size and 256M");
}

/* Records (len bytes at body) as one frame, kept and sent to the online
 * links. */
static void
frame_records(struct primary *p, const unsigned char *body, size_t len)
{
	struct core		*core = p->core;
	unsigned char		 head[PRIMARY_FRAME_HEAD] = { 'S', 'R', 0, 0 };
	uint64_t		 unsent;

	head[4] = (unsigned char)len;
	head[5] = (unsigned char)(len >> 8);
	head[6] = (unsigned char)(len >> 16);
	head[7] = (unsigned char)(len >> 24);
	backlog_append(core->repl.backlog, head, sizeof(head));
	if (len > 0)
		backlog_append(core->repl.backlog, body, len);
	core->repl.offset = core->repl.backlog->end;
	core->repl.backlog_first = core->repl.backlog->first;
	p->framed_at = time(NULL);
	for (struct link *l = p->links, *next; l != NULL; l = next) {
		next = l->next;
		if (l->state == LINK_IMAGE) {
			keep(l, head, body, len);
			continue;
		}
		if (l->state != LINK_ONLINE)
			continue;
		/* the frame waits in the backlog for flush(); one that does
		 * not read would hold the stream for ever: past the
		 * backlog's size it comes back by a full sync */
		unsent = evbuffer_get_length(bufferevent_get_output(l->bev)) +
		    (core->repl.backlog->end - l->sent);
		if (unsent <= core->cfg->repl_backlog_size)
			l->image_bytes = 0;	/* the images are gone */
		if (unsent > core->cfg->repl_backlog_size + l->image_bytes)
			link_close(l, "its unsent stream passed "
			    "repl_backlog_size");
	}
}

/* The turn's records (those after its last image of slots) as one frame;
 * an empty one for a heartbeat. */
static void
frame(struct primary *p, int heartbeat)
{
	struct core		*core = p->core;
	const unsigned char	*body = NULL;
	size_t			 len = 0;

	if (core->stream != NULL)
		len = journal_take(core->stream, &body);
	if (len == 0 && !heartbeat)
		return;
	frame_records(p, body, len);
	if (core->stream != NULL)
		journal_clear(core->stream);
}

/* One holder of q fewer (an evbuffer's cleanup, or the queue's). */
static void
slots_unref(const void *data, size_t len, void *arg)
{
	struct core_slots *q = arg;

	(void)data;
	(void)len;
	if (--q->refs == 0)
		free(q);
}

/* The frame of q into out: its head copied, the image by reference (an
 * image may be hundreds of MiB, and every replica is sent the same). */
static int
add_slots(struct evbuffer *out, const unsigned char *head,
    struct core_slots *q)
{
	if (evbuffer_add(out, head, PRIMARY_FRAME_HEAD) == -1)
		return -1;
	q->refs++;
	if (evbuffer_add_reference(out, q->data + q->before, q->len,
	    slots_unref, q) == 0)
		return 0;
	q->refs--;
	return -1;
}

/*
 * The moved slots' images queued this turn (core_repl.slots), each after
 * the records the turn had before it: a frame of those, then "SI", two
 * zero bytes, its length, the image. A link that cannot take one (an
 * older seend) is closed: its PSYNC from before the image then syncs
 * fully (can_continue). An online link is sent its unsent stream, then
 * the image from here, not from the backlog: an image may be larger than
 * the backlog (its bytes are allowed for as a full sync's are); a link
 * whose images are being written keeps it, as any frame, the image's
 * bytes allowed for there too.
 */
static void	flush(struct link *);

static void
frame_slots(struct primary *p)
{
	struct core_repl	*r = &p->core->repl;
	struct core_slots	*q;

	while ((q = r->slots) != NULL) {
		unsigned char head[PRIMARY_FRAME_HEAD] = { 'S', 'I', 0, 0,
		    (unsigned char)q->len, (unsigned char)(q->len >> 8),
		    (unsigned char)(q->len >> 16),
		    (unsigned char)(q->len >> 24) };
		r->slots = q->next;
		if (q->before > 0)
			frame_records(p, q->data, q->before);
		for (struct link *l = p->links, *next; l != NULL; l = next) {
			next = l->next;
			if (!l->slots && l->state != LINK_CAPTURE)
				link_close(l, "it cannot take moved slots in "
				    "its stream (an older seend): it "
				    "resyncs fully");
			else if (l->state == LINK_IMAGE) {
				if (add_slots(l->pending, head, q) == -1)
					link_close(l, "out of memory");
				else
					l->pending_images += q->len;
			} else if (l->state == LINK_ONLINE)
				flush(l);
		}
		backlog_append(r->backlog, head, sizeof(head));
		backlog_append(r->backlog, q->data + q->before, q->len);
		for (struct link *l = p->links, *next; l != NULL; l = next) {
			next = l->next;
			if (l->state != LINK_ONLINE)
				continue;
			if (add_slots(bufferevent_get_output(l->bev), head, q) ==
			    -1) {
				link_close(l, "out of memory");
				continue;
			}
			l->image_bytes += sizeof(head) + q->len;
			l->sent = r->backlog->end;
		}
		r->offset = r->backlog->end;
		r->backlog_first = r->backlog->first;
		r->slots_end = r->offset;
		slots_unref(NULL, 0, q);
	}
}

/* What the backlog holds past l->sent into l's output. */
static void
flush(struct link *l)
{
	if (l->sent != l->p->core->repl.backlog->end && send_from(l,
	    l->sent) == -1)
		link_close(l, "its unsent stream passed repl_backlog_size");
}

/*
 * The online links' unsent frames written where FLUSH_BYTES have gathered,
 * or everywhere (now: a WAIT waits, the flush timer, the heartbeat); what
 * is left waits at most FLUSH_USEC for the timer.
 */
static void
flush_due(struct primary *p, int now)
{
	uint64_t	 end = p->core->repl.backlog->end;
	int		 left = 0;

	for (struct link *l = p->links, *next; l != NULL; l = next) {
		next = l->next;
		if (l->state != LINK_ONLINE || l->sent == end)
			continue;
		if (now || end - l->sent >= FLUSH_BYTES)
			flush(l);
		else
			left = 1;
	}
	if (left && !evtimer_pending(p->flusher, NULL)) {
		struct timeval tv = { 0, FLUSH_USEC };

		evtimer_add(p->flusher, &tv);
	}
}

static void
on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush_due(arg, 1);
}

/* WAITs answered when enough replicas acknowledged theirs, or at their
 * deadline. all_due: the deadlines are checked too. */
static void
check_waits(struct primary *p, int all_due)
{
	struct core_repl	*r = &p->core->repl;
	uint64_t		 now = all_due ? mono_ms() : 0;

	for (struct core_wait **pp = &r->waits, *w; (w = *pp) != NULL; ) {
		long long n = 0;

		if (w->target == UINT64_MAX) {
			pp = &w->next;
			continue;
		}
		for (struct link *l = p->links; l != NULL; l = l->next)
			n += l->state == LINK_ONLINE && l->ack >= w->target;
		if (n < w->want && (!all_due || w->deadline_ms == 0 ||
		    now < w->deadline_ms)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->w->counted = 1;
		w->w->count = n;
		p->done(p->arg, w->w);
		free(w->w);
		free(w);
	}
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct primary	*p = arg;
	struct timeval	 tv = { 0, 5000 };

	(void)fd;
	(void)what;
	check_waits(p, 1);
	if (p->core->repl.waits != NULL)
		evtimer_add(p->timer, &tv);
}

void
primary_turn_end(struct primary *p)
{
	struct core_repl *r = &p->core->repl;
	struct timeval	 tv = { 0, 5000 };

	frame_slots(p);
	frame(p, 0);
	for (struct link *l = p->links, *next; l != NULL; l = next) {
		next = l->next;
		if (l->state == LINK_CAPTURE)
			capture(l);
	}
	/* a WAIT is answered by acknowledgements: its frames go now */
	flush_due(p, r->waits != NULL);
	if (r->waits == NULL)
		return;
	for (struct core_wait *w = r->waits; w != NULL; w = w->next)
		if (w->target == UINT64_MAX) {
			w->target = r->offset;
			w->deadline_ms = w->timeout_ms ? mono_ms() +
			    w->timeout_ms : 0;
		}
	check_waits(p, 1);
	/* the rest are looked at again soon for their deadlines */
	if (r->waits != NULL && !evtimer_pending(p->timer, NULL))
		evtimer_add(p->timer, &tv);
}

void
primary_tick(struct primary *p)
{
	/* a sign of life for replicas (their lag and timeouts) */
	if (p->links != NULL && time(NULL) - p->framed_at >= 1) {
		frame(p, 1);
		flush_due(p, 1);
	}
	publish(p);
}

void
primary_keep_stream(struct primary *p)
{
	char err[200];

	if (p->core->stream == NULL && (p->core->stream =
	    journal_open_mem(1u << 20, err, sizeof(err))) == NULL)
		log_error("replication: %s", err);
}

void
primary_drop_all(struct primary *p, const char *why)
{
	while (p->links != NULL)
		link_close(p->links, why);
}

/*
 * Why a new replication id: a reset backlog alone still holds its end, so
 * a replica standing exactly there (caught up, or away since) would be
 * let continue past the change. Under a new id with no second one (as
 * Redis's changeReplicationId and clearReplicationId2) no replica holds an
 * offset of the new history: online, syncing, connecting or away, each
 * syncs fully. A replica keeps its primary's id: it follows that history.
 */
void
primary_resync_all(struct primary *p, const char *why)
{
	struct core_repl *r = &p->core->repl;

	if (!r->replica) {
		command_new_replid(r->replid);
		r->replid2[0] = '\0';
		r->second_offset = 0;
	}
	if (p->links != NULL)
		log_info("replication: every replica resyncs fully: %s (a new "
		    "replication id %s at offset %" PRIu64 ")", why, r->replid,
		    r->offset);
	if (p->core->stream != NULL)
		journal_clear(p->core->stream);
	backlog_reset(r->backlog, r->offset);
	primary_drop_all(p, why);
}

struct primary *
primary_new(struct core *core, struct event_base *base,
    void (*done)(void *, struct save_wait *), void *arg)
{
	struct primary *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->core = core;
	p->base = base;
	p->done = done;
	p->arg = arg;
	if ((p->timer = evtimer_new(base, on_timer, p)) == NULL ||
	    (p->flusher = evtimer_new(base, on_flush_timer, p)) == NULL) {
		if (p->timer != NULL)
			event_free(p->timer);
		free(p);
		return NULL;
	}
	return p;
}

void
primary_free(struct primary *p)
{
	if (p == NULL)
		return;
	primary_drop_all(p, "shutting down");
	event_free(p->timer);
	event_free(p->flusher);
	free(p);
}
