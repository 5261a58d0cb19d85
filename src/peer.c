/*
 * peer.c - passing the cluster's map on; see peer.h.
 *
 * One struct peer per other node of the held map, kept in ID order. A
 * peer is "owed" the map until it answers +OK to our SETMAP (or hands us
 * a newer one through GETMAP); an owed peer gets one connection at a
 * time, at most PEER_ACTIVE_MAX of them at once (each is a descriptor,
 * and the server keeps only SERVER_RESERVED_FDS beyond its clients), and
 * after a failure waits 1, 2, 4 ... 30 seconds before the next one.
 *
 * The work starts from the loop, never inside peer_map_changed: that is
 * called while a request (or our own offer of a peer's map) is being
 * handled, and reshaping the peers there could free the connection whose
 * callback is running. peer_map_changed only activates an event.
 *
 * The text sent is one copy, reference-counted, that every connection's
 * output buffer points to (evbuffer_add_reference): a thousand peers do
 * not make a thousand copies of a map of up to CLUSTER_MAP_MAX_TEXT.
 */
#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "cluster.h"
#include "cluster_move.h"
#include "cluster_map.h"
#include "config.h"
#include "core.h"
#include "filter.h"
#include "log.h"
#include "registry.h"
#include "peer.h"
#include "tls.h"

#define PEER_ACTIVE_MAX		8	/* connections at once */
#define PEER_TIMEOUT_SECS	5	/* an exchange, connect to reply */
#define PEER_BACKOFF_MAX	30	/* seconds between attempts, at most */
#define PEER_LOG_SECS		60	/* one warning per peer this often */
#define PEER_LOG_MAX		20	/* and this many in all, then a sum */
#define PEER_LINE_MAX		4096	/* a status or error reply */
/* the most a peer may send us: GETMAP's bulk and its header */
#define PEER_INPUT_MAX		(CLUSTER_MAP_MAX_TEXT + 64)

/* The canonical text of the held map, shared by the output buffers. */
struct peer_text {
	unsigned	 refs;
	uint64_t	 epoch;
	uint64_t	 hash;
	size_t		 len;
	char		 data[];
};

enum peer_phase {
	PP_IDLE,
	PP_RESOLVING,	/* a name, looked up by evdns */
	PP_CONNECTING,
	PP_AUTH,	/* AUTH's reply */
	PP_SETMAP,	/* SETMAP's reply */
	PP_GETMAP,	/* GETMAP's "$n" */
	PP_BODY,	/* its n bytes */
};

struct peer_lookup;

struct peer {
	char		 id[CLUSTER_ID_LEN + 1];
	char		 host[256];
	unsigned	 port;		/* the one dialled */
	int		 tls;
	enum peer_phase	 phase;
	struct bufferevent *bev;
	struct peer_lookup *lookup;	/* PP_RESOLVING */
	struct peer_text *sent;		/* the text of this exchange */
	size_t		 body;		/* PP_BODY: GETMAP's length */
	time_t		 deadline;	/* of this exchange */
	time_t		 retry_at;
	unsigned	 backoff;	/* seconds, 1 .. PEER_BACKOFF_MAX */
	/* the text it holds, as far as we know: the hash of the last one
	 * it took or gave (0: none); owed when that is not ours */
	uint64_t	 holds;
	int		 failing;	/* its last exchange failed */
	time_t		 logged_at;
	unsigned long	 unlogged;	/* failures not logged since */
};

/*
 * A name being looked up. A peer dropped meanwhile leaves it to finish
 * (p = NULL) rather than cancel it: evdns answers a cancel later, from
 * the loop, through the resolver, which peer_shutdown may have freed by
 * then. Freeing the resolver answers every lookup left with an error,
 * without it.
 */
struct peer_lookup {
	struct peer		*p;	/* NULL: nobody waits for it */
};

struct peers {
	struct core		*core;
	struct event_base	*base;
	struct event		*kick;		/* work due in the loop */
	struct evdns_base	*dns;		/* made at the first name */
	struct peer_text	*text;		/* NULL: no map held */
	struct peer		**v;		/* ascending by id */
	size_t			 n;
	size_t			 active;	/* connections open */
	size_t			 next;		/* where to start looking */
	int			 changed;	/* the held map may be new */
	/* warnings in this minute, and those left out: a thousand nodes
	 * down do not make a thousand lines a minute */
	time_t			 log_window;
	unsigned		 logged;
	unsigned long		 unlogged;
};

/* One daemon per process: peer.h's calls carry only the core. */
static struct peers	*P;

static void	peer_begin(struct peer *);
static void	kick(void);

/* ---- the node's map (cluster.h) ---- */

/* The map this node holds, NULL: none (a cluster of one). */
static const struct cluster_map *
held_map(const struct core *core)
{
	return core->cluster != NULL ? core->cluster->map : NULL;
}

/* ---- the shared text ---- */

static uint64_t
fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;	/* 0 says "none" */
}

static void
text_unref(struct peer_text *t)
{
	if (t != NULL && --t->refs == 0)
		free(t);
}

/* evbuffer_add_reference's cleanup: an output buffer let go of it. */
static void
text_released(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	text_unref(arg);
}

/* The held map's canonical text, or NULL (none held, out of memory). */
static struct peer_text *
text_of_held(const struct core *core)
{
	const struct cluster_map	*m = held_map(core);
	struct peer_text		*t;
	char				*s;
	size_t				 len;

	if (m == NULL || (s = cluster_map_format(m, &len)) == NULL)
		return NULL;
	if ((t = malloc(sizeof(*t) + len)) != NULL) {
		t->refs = 1;
		t->epoch = m->epoch;
		t->hash = fnv1a(s, len);
		t->len = len;
		memcpy(t->data, s, len);
	}
	free(s);
	return t;
}

/* ---- a peer's state ---- */

static int
owed(const struct peer *p)
{
	return P->text != NULL && p->holds != P->text->hash;
}

/* The sum of the warnings left out in the last minute, once a minute. */
static void
warn_window(time_t now)
{
	if (now - P->log_window < PEER_LOG_SECS)
		return;
	if (P->unlogged > 0)
		log_warn("cluster: %lu more failures to pass the map on in the "
		    "last minute; %zu nodes lack it", P->unlogged,
		    peer_behind(P->core));
	P->log_window = now;
	P->logged = 0;
	P->unlogged = 0;
}

/* At most one warning a minute per peer, with how many were left out,
 * and PEER_LOG_MAX in all. */
static void
peer_warn(struct peer *p, const char *why)
{
	time_t now = time(NULL);

	if (p->logged_at != 0 && now - p->logged_at < PEER_LOG_SECS) {
		p->unlogged++;
		return;
	}
	warn_window(now);
	if (P->logged >= PEER_LOG_MAX) {
		P->unlogged++;
		return;
	}
	P->logged++;
	if (p->unlogged > 0)
		log_warn("cluster: cannot pass the map to %s:%u (%.8s): %s "
		    "(%lu more failures in the last minute)", p->host, p->port,
		    p->id, why, p->unlogged);
	else
		log_warn("cluster: cannot pass the map to %s:%u (%.8s): %s; "
		    "retrying", p->host, p->port, p->id, why);
	p->logged_at = now;
	p->unlogged = 0;
}

/* The connection (or the lookup) goes; nothing is said. */
static void
peer_close(struct peer *p)
{
	if (p->lookup != NULL) {
		p->lookup->p = NULL;	/* its callback frees it */
		p->lookup = NULL;
	}
	if (p->bev != NULL) {
		bufferevent_free(p->bev);
		p->bev = NULL;
	}
	if (p->phase != PP_IDLE && P->active > 0)
		P->active--;
	p->phase = PP_IDLE;
	text_unref(p->sent);
	p->sent = NULL;
}

/* This exchange failed: logged, and retried after the backoff. */
static void
peer_fail(struct peer *p, const char *why)
{
	peer_close(p);
	peer_warn(p, why);
	p->failing = 1;
	p->retry_at = time(NULL) + p->backoff;
	p->backoff = p->backoff >= PEER_BACKOFF_MAX / 2 ? PEER_BACKOFF_MAX :
	    p->backoff * 2;
	kick();		/* its slot is free for another peer */
}

/* This exchange ended well: the peer holds the text whose hash is h. */
static void
peer_done(struct peer *p, uint64_t h)
{
	peer_close(p);
	p->holds = h;
	if (p->failing)
		log_info("cluster: %s:%u (%.8s) reached again", p->host,
		    p->port, p->id);
	p->failing = 0;
	p->backoff = 1;
	p->logged_at = 0;
	p->unlogged = 0;
	p->retry_at = 0;	/* a newer map of ours meanwhile: at once */
	kick();
}

static void
peer_free(struct peer *p)
{
	if (p == NULL)
		return;
	peer_close(p);
	free(p);
}

/* ---- the exchange ---- */

static void
send_cmd(struct peer *p, int argc, const char **argv)
{
	struct evbuffer *out = bufferevent_get_output(p->bev);

	evbuffer_add_printf(out, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		evbuffer_add_printf(out, "$%zu\r\n%s\r\n", strlen(argv[i]),
		    argv[i]);
}

/* AUTH as a replica logs in to its primary (primary_user, primary_token),
 * then CLUSTER SETMAP <text>, pipelined. */
static void
send_setmap(struct peer *p)
{
	const struct config	*cfg = P->core->cfg;
	struct evbuffer		*out = bufferevent_get_output(p->bev);
	const char		*auth[3] = { "AUTH", cfg->primary_token, NULL };

	if (P->text == NULL) {		/* no map held any more */
		peer_close(p);
		kick();
		return;
	}
	p->phase = PP_SETMAP;
	if (cfg->primary_token != NULL) {
		if (cfg->primary_user != NULL) {
			auth[1] = cfg->primary_user;
			auth[2] = cfg->primary_token;
		}
		send_cmd(p, cfg->primary_user != NULL ? 3 : 2, auth);
		p->phase = PP_AUTH;
	}
	p->sent = P->text;
	p->sent->refs++;
	evbuffer_add_printf(out, "*3\r\n$7\r\nCLUSTER\r\n$6\r\nSETMAP\r\n"
	    "$%zu\r\n", p->sent->len);
	p->sent->refs++;
	if (evbuffer_add_reference(out, p->sent->data, p->sent->len,
	    text_released, p->sent) == -1)
		p->sent->refs--;
	evbuffer_add(out, "\r\n", 2);
}

/* The peer holds a newer map: it is asked for it. */
static void
send_getmap(struct peer *p)
{
	const char *getmap[2] = { "CLUSTER", "GETMAP" };

	send_cmd(p, 2, getmap);
	p->phase = PP_GETMAP;
}

/* GETMAP's map, offered to this node: the newest wins (cluster.c). */
static void
take_body(struct peer *p, const char *text, size_t len)
{
	char		 from[300], err[300];
	uint64_t	 h = fnv1a(text, len);
	int		 rc;

	snprintf(from, sizeof(from), "peer %s:%u", p->host, p->port);
	/* taken: cluster_offer logs it; the others are told in turn */
	rc = cluster_offer(P->core->cluster, P->core->cfg->data_dir, text,
	    len, from, err, sizeof(err));
	if (rc == CLUSTER_TAKEN)
		peer_map_changed(P->core);
	if (rc == CLUSTER_REFUSED) {
		char why[400];

		snprintf(why, sizeof(why), "its map (GETMAP) was refused: "
		    "%.300s", err);
		peer_fail(p, why);
		return;
	}
	/* it said STALEMAP, yet ours is newer: the two disagree on which
	 * wins (or ours changed meanwhile); not asked again at once, or
	 * the two would go round in a loop */
	if (rc != CLUSTER_TAKEN && P->text != NULL && h != P->text->hash) {
		peer_fail(p, "it answers STALEMAP, but its map is not newer "
		    "than ours");
		return;
	}
	/* it holds that text, ours now too */
	peer_done(p, h);
}

/* A status line: 0 go on, -1 the exchange ended. */
static int
on_line(struct peer *p, const char *line)
{
	char why[400];

	switch (p->phase) {
	case PP_AUTH:
		if (line[0] != '+') {
			snprintf(why, sizeof(why), "AUTH refused: %.300s", line);
			peer_fail(p, why);
			return -1;
		}
		p->phase = PP_SETMAP;
		return 0;
	case PP_SETMAP:
		if (strcmp(line, "+OK") == 0) {
			peer_done(p, p->sent->hash);
			return -1;
		}
		if (strncmp(line, "-STALEMAP", 9) == 0 &&
		    (line[9] == '\0' || line[9] == ' ')) {
			send_getmap(p);
			return 0;
		}
		snprintf(why, sizeof(why), "SETMAP: %.300s", line);
		peer_fail(p, why);
		return -1;
	case PP_GETMAP: {
		char		*end;
		long long	 n;

		if (line[0] == '$') {
			n = strtoll(line + 1, &end, 10);
			if (*end == '\0' && end != line + 1 && n >= 0 &&
			    n <= CLUSTER_MAP_MAX_TEXT) {
				p->body = (size_t)n;
				p->phase = PP_BODY;
				return 0;
			}
		}
		snprintf(why, sizeof(why), "GETMAP: %.300s", line);
		peer_fail(p, why);
		return -1;
	}
	default:
		peer_fail(p, "a reply out of turn");
		return -1;
	}
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct peer	*p = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	char		*line, *text;
	size_t		 len;
	int		 rc;

	if (evbuffer_get_length(in) > PEER_INPUT_MAX) {
		peer_fail(p, "it sent more than a map");
		return;
	}
	for (;;) {
		if (p->phase == PP_BODY) {
			if (evbuffer_get_length(in) < p->body + 2)
				return;
			text = (char *)evbuffer_pullup(in,
			    (ev_ssize_t)p->body + 2);
			if (text == NULL) {
				peer_fail(p, "out of memory");
				return;
			}
			if (text[p->body] != '\r' || text[p->body + 1] != '\n') {
				peer_fail(p, "GETMAP: a bad bulk string");
				return;
			}
			take_body(p, text, p->body);
			return;
		}
		if (p->phase < PP_AUTH)
			return;
		line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF_STRICT);
		if (line == NULL) {
			if (evbuffer_get_length(in) > PEER_LINE_MAX)
				peer_fail(p, "it sent a line too long");
			return;
		}
		rc = on_line(p, line);
		free(line);
		if (rc == -1)
			return;
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct peer	*p = arg;
	unsigned long	 e;
	char		 why[256];

	if (what & BEV_EVENT_CONNECTED) {
		send_setmap(p);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	/* TLS: OpenSSL's reason (a certificate refused) */
	if (p->tls && (e = bufferevent_get_openssl_error(bev)) != 0) {
		strcpy(why, "TLS: ");
		ERR_error_string_n(e, why + 5, sizeof(why) - 5);
		ERR_clear_error();
	} else if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "it closed the connection");
	else
		snprintf(why, sizeof(why), "%s", evutil_socket_error_to_string(
		    EVUTIL_SOCKET_ERROR()));
	peer_fail(p, why);
}

/*
 * tls_replication: TLS to the peer's tls-port, verifying its certificate
 * against tls_ca_cert_file and presenting ours, as replica.c's link does;
 * the context is read at each connect, so a rotated certificate is the
 * next one's. NULL with why in err.
 */
static struct bufferevent *
tls_bev(struct peer *p, char *err, size_t errlen)
{
	struct tls_settings	 t;
	struct bufferevent	*bev;
	SSL_CTX			*ctx;
	SSL			*ssl;
	char			 e[512];

	config_tls_settings(P->core->cfg, &t);
	if ((ctx = tls_client_ctx_new(&t, e, sizeof(e))) == NULL) {
		snprintf(err, errlen, "TLS: %.200s", e);
		return NULL;
	}
	ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);	/* ssl holds its own reference */
	if (ssl == NULL) {
		snprintf(err, errlen, "TLS: out of memory");
		return NULL;
	}
	if (strspn(p->host, "0123456789.:abcdefABCDEF") != strlen(p->host))
		SSL_set_tlsext_host_name(ssl, p->host);
	if ((bev = bufferevent_openssl_socket_new(P->base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		SSL_free(ssl);
		snprintf(err, errlen, "TLS: out of memory");
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/* An address found: the connection begins. */
static void
peer_connect(struct peer *p, const struct evutil_addrinfo *ai)
{
	char err[300];

	p->bev = p->tls ? tls_bev(p, err, sizeof(err)) :
	    bufferevent_socket_new(P->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (p->bev == NULL) {
		peer_fail(p, p->tls ? err : "out of memory");
		return;
	}
	bufferevent_setcb(p->bev, on_read, NULL, on_event, p);
	bufferevent_enable(p->bev, EV_READ | EV_WRITE);
	p->phase = PP_CONNECTING;
	if (bufferevent_socket_connect(p->bev, ai->ai_addr,
	    (int)ai->ai_addrlen) == -1)
		peer_fail(p, evutil_socket_error_to_string(
		    EVUTIL_SOCKET_ERROR()));
}

static void
on_lookup(int rc, struct evutil_addrinfo *ai, void *arg)
{
	struct peer_lookup	*l = arg;
	struct peer		*p = l->p;

	free(l);
	if (p == NULL) {	/* dropped meanwhile, or peer_shutdown */
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		return;
	}
	p->lookup = NULL;
	if (rc != 0 || ai == NULL) {
		char why[300];

		snprintf(why, sizeof(why), "%s: %s", p->host,
		    evutil_gai_strerror(rc));
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		peer_fail(p, why);
		return;
	}
	peer_connect(p, ai);
	evutil_freeaddrinfo(ai);
}

/* A name: evdns looks it up without blocking the loop. */
static void
peer_resolve(struct peer *p, const struct evutil_addrinfo *hints,
    const char *port)
{
	struct peer_lookup *l;

	if (P->dns == NULL && (P->dns = evdns_base_new(P->base,
	    EVDNS_BASE_INITIALIZE_NAMESERVERS |
	    EVDNS_BASE_DISABLE_WHEN_INACTIVE)) == NULL) {
		peer_fail(p, "cannot start a DNS resolver");
		return;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		peer_fail(p, "out of memory");
		return;
	}
	l->p = p;
	p->lookup = l;
	p->phase = PP_RESOLVING;
	/* it may call back before it returns (the hosts file, an error) */
	(void)evdns_getaddrinfo(P->dns, p->host, port, hints, on_lookup, l);
}

static void
peer_begin(struct peer *p)
{
	struct evutil_addrinfo	 hints, *ai = NULL;
	char			 port[16];

	p->deadline = time(NULL) + PEER_TIMEOUT_SECS;
	p->phase = PP_CONNECTING;
	P->active++;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", p->port);
	/* an address, as maps mostly name them: no lookup at all */
	if (evutil_getaddrinfo(p->host, port, &hints, &ai) == 0 &&
	    ai != NULL) {
		peer_connect(p, ai);
		evutil_freeaddrinfo(ai);
		return;
	}
	hints.ai_flags = EVUTIL_AI_NUMERICSERV;
	peer_resolve(p, &hints, port);
}

/* ---- the peers of the held map ---- */

/* The index of peer id in P->v (ascending by id), or -1. */
static long
find_peer(const char *id)
{
	size_t lo = 0, hi = P->n;

	while (lo < hi) {
		size_t	mid = lo + (hi - lo) / 2;
		int	c = memcmp(P->v[mid]->id, id, CLUSTER_ID_LEN);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The dialled address of node n: its TLS port with tls_replication when
 * the map names one, its plain port otherwise. */
static void
address_of(const struct cluster_node *n, unsigned *port, int *tls)
{
	*tls = P->core->cfg->tls_replication && n->tls_port != 0;
	*port = *tls ? n->tls_port : n->port;
}

/*
 * The held map may be new: the peers become its other nodes (those it
 * no longer names are dropped, those whose address changed reconnect),
 * and every peer that does not hold its text is owed it at once.
 */
static void
reshape(void)
{
	const struct cluster_map	*m;
	struct peer_text		*t;
	struct peer			**v = NULL, *p;
	size_t				 n = 0;
	long				 j;
	char				*kept;
	const char			*myid = P->core->cluster->myid;

	P->changed = 0;
	t = text_of_held(P->core);
	if (t == NULL && held_map(P->core) != NULL) {
		log_error("cluster: out of memory: the map is not passed on");
		return;
	}
	if (t != NULL && P->text != NULL && t->hash == P->text->hash &&
	    t->len == P->text->len && memcmp(t->data, P->text->data,
	    t->len) == 0) {
		text_unref(t);
		return;		/* the same map */
	}
	m = held_map(P->core);
	kept = calloc(P->n + 1, 1);
	if (kept == NULL || (m != NULL && m->nnodes > 0 &&
	    (v = calloc(m->nnodes, sizeof(*v))) == NULL)) {
		free(kept);
		text_unref(t);
		log_error("cluster: out of memory: the map is not passed on");
		return;
	}
	for (size_t i = 0; m != NULL && i < m->nnodes; i++) {
		const struct cluster_node	*nd = &m->nodes[i];
		unsigned			 port;
		int				 tls;

		if (memcmp(nd->id, myid, CLUSTER_ID_LEN) == 0)
			continue;
		address_of(nd, &port, &tls);
		if ((j = find_peer(nd->id)) != -1) {
			/* kept: taken out of the old list (its id stays
			 * there for the search) */
			p = P->v[j];
			kept[j] = 1;
			if (strcmp(p->host, nd->host) != 0 ||
			    p->port != port || p->tls != tls) {
				peer_close(p);
				p->backoff = 1;
				p->logged_at = 0;
			}
		} else if ((p = calloc(1, sizeof(*p))) == NULL) {
			log_error("cluster: out of memory: the map is not "
			    "passed to %s:%u", nd->host, nd->port);
			continue;
		} else {
			memcpy(p->id, nd->id, sizeof(p->id));
			p->backoff = 1;
		}
		snprintf(p->host, sizeof(p->host), "%s", nd->host);
		p->port = port;
		p->tls = tls;
		p->retry_at = 0;	/* news: a backoff starts again */
		v[n++] = p;
	}
	for (size_t i = 0; i < P->n; i++)
		if (!kept[i])
			peer_free(P->v[i]);	/* no longer in the map */
	free(kept);
	free(P->v);
	P->v = v;
	P->n = n;
	P->next = 0;
	text_unref(P->text);
	P->text = t;
	if (t != NULL)
		log_info("cluster: passing the map of epoch %llu on to %zu "
		    "nodes", (unsigned long long)t->epoch, n);
}

/* Owed peers whose time has come, while connections are free. */
static void
start_due(void)
{
	time_t now = time(NULL);

	if (P->core->stopping || P->text == NULL)
		return;
	/* from where the last round stopped: a few peers that time out
	 * do not keep the others waiting */
	for (size_t k = 0, from = P->next; k < P->n &&
	    P->active < PEER_ACTIVE_MAX; k++) {
		size_t		 i = (from + k) % P->n;
		struct peer	*p = P->v[i];

		if (p->phase != PP_IDLE || !owed(p) || p->retry_at > now)
			continue;
		P->next = (i + 1) % P->n;
		peer_begin(p);
	}
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (P == NULL)
		return;
	if (P->changed)
		reshape();
	start_due();
}

static void
kick(void)
{
	if (P != NULL && P->kick != NULL)
		event_active(P->kick, EV_TIMEOUT, 0);
}

/* The state peer_start made for core, or NULL (cluster mode off, not
 * started, or memory short). */
static struct peers *
peers_of(struct core *core)
{
	return P != NULL && P->core == core ? P : NULL;
}

/* ---- peer.h ---- */

int
peer_start(struct core *core, struct event_base *base)
{
	if (P != NULL || core->cluster == NULL)
		return 0;
	if ((P = calloc(1, sizeof(*P))) == NULL)
		return -1;
	P->core = core;
	P->base = base;
	if ((P->kick = event_new(P->base, -1, 0, on_kick, NULL)) == NULL) {
		free(P);
		P = NULL;
		return -1;
	}
	return 0;
}

void
peer_map_changed(struct core *core)
{
	/* a partitioned filter's part follows the map now, not at the next
	 * tick: keys recorded in between would fill it past its share, and
	 * a replay of the journal (which knows the map from the start) would
	 * then grow it at another key */
	/* first the slots' keys counted in or out, their ranges freed and
	 * pauses ended (before the SETMAP that gave them is answered) */
	cluster_move_apply(core);
	for (size_t i = 0; i < core->reg->nfilters; i++)
		filter_part_check(core->reg->filters[i]);
	if (peers_of(core) == NULL)
		return;
	P->changed = 1;
	kick();
}

void
peer_tick(struct core *core)
{
	time_t now = time(NULL);

	/* a map read from data_dir at the start is passed on too: a node
	 * that was down when the others gave up on it, or that restarted
	 * before they reached it, gets it */
	if (P == NULL && held_map(core) != NULL)
		peer_map_changed(core);
	if (P == NULL || P->core != core)
		return;
	for (size_t i = 0; i < P->n; i++) {
		struct peer *p = P->v[i];

		if (p->phase != PP_IDLE && now >= p->deadline)
			peer_fail(p, p->phase <= PP_CONNECTING ?
			    "no connection within 5 s" :
			    "no answer within 5 s");
	}
	if (P->changed)
		reshape();
	start_due();
	warn_window(now);
}

size_t
peer_behind(const struct core *core)
{
	size_t n = 0;

	if (P == NULL || P->core != core)
		return 0;
	for (size_t i = 0; i < P->n; i++)
		n += owed(P->v[i]);
	return n;
}

void
peer_shutdown(struct core *core)
{
	if (P == NULL || P->core != core)
		return;
	for (size_t i = 0; i < P->n; i++)
		peer_free(P->v[i]);
	free(P->v);
	text_unref(P->text);
	event_free(P->kick);
	/* lookups still in flight (the peers left them) fail: their
	 * callbacks run from the loop, which turns on until the daemon's
	 * last snapshots are written (server_shutdown) */
	if (P->dns != NULL)
		evdns_base_free(P->dns, 1);
	free(P);
	P = NULL;
}
