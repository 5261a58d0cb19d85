/*
 * metrics.c - GET /metrics for Prometheus, on libevent's evhttp.
 *
 * evhttp and not an HTTP parser of our own: libevent is already linked,
 * its server runs on the same event_base, and it bounds headers, bodies
 * and idle connections for us. All it has to serve is one read-only page.
 *
 * Names follow Prometheus' conventions: a seend_ prefix, _total on
 * counters, base units (_seconds, _bytes), and the process_* names that
 * every client library exports for the process itself.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "acl.h"
#include "command.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "persist.h"
#include "registry.h"
#include "saver.h"
#include "core.h"
#include "stats.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define METRICS_TIMEOUT_SECS	10	/* a scraper that stalls is dropped */
#define METRICS_MAX_HEADERS	8192
#define METRICS_MAX_BODY	4096	/* a body is read, then refused (405) */
#define ACCEPT_PAUSE_USEC	100000	/* after EMFILE, as the main listener */

struct metrics {
	struct core			*core;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct event			*ev_retry;
	time_t				 warned;	/* last accept warning */
	char				*spec;
	/* metrics_tls: where the server keeps its TLS context (a reload
	 * that rotates the certificate replaces it there); NULL: plain */
	SSL_CTX *const			*tls;
	struct metrics			*next;
};

/* libevent hands the accept error callback the evhttp, not us: the live
 * endpoints (two for a moment during a reload) are found through this. */
static struct metrics *live;

void
metrics_filter_figures(const struct filter *f, struct filter_figures *ff)
{
	double		 bits = (double)filter_bytes(f) * 8;
	uint64_t	 set = 0;

	memset(ff, 0, sizeof(*ff));
	for (size_t i = 0; i < filter_nall(f); i++)
		set += filter_slice_at(f, i)->bloom.bits_set;
	ff->keys = filter_count(f);
	ff->capacity = f->capacity;
	ff->error_rate = f->error_rate;
	ff->bytes = filter_bytes(f);
	ff->fill_ratio = bits > 0 ? (double)set / bits : 0;
	if (filter_is_cuckoo(f) && filter_slots(f) > 0)
		ff->fill_ratio = (double)ff->keys / (double)filter_slots(f);
	ff->forgotten = f->forgotten;
	ff->fp_rate = filter_fp_estimate(f);
	ff->slices = (unsigned)filter_nall(f);
	ff->dirty = filter_dirty(f);
	ff->last_save = f->last_save;
	ff->last_save_secs = f->last_save_secs;
	ff->saves_ok = f->saves_ok;
	ff->saves_failed = f->saves_failed;
	ff->seen_new = f->seen_new;
	ff->seen_old = f->seen_old;
	ff->checks = f->checks;
}

/* ---- the page ---- */

static void
family(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

static void
sample_u(struct evbuffer *out, const char *name, uint64_t v)
{
	evbuffer_add_printf(out, "%s %llu\n", name, (unsigned long long)v);
}

/* The shortest of %.15g and %.17g that reads back as v: a timestamp
 * keeps its seconds, 0.001 stays 0.001. */
static const char *
num(char *dst, size_t len, double v)
{
	snprintf(dst, len, "%.15g", v);
	if (strtod(dst, NULL) != v)
		snprintf(dst, len, "%.17g", v);
	return dst;
}

static void
sample_d(struct evbuffer *out, const char *name, double v)
{
	char n[32];

	evbuffer_add_printf(out, "%s %s\n", name, num(n, sizeof(n), v));
}

/* A label value as the text format wants it: \, " and newline escaped.
 * Filter names never hold them, but a page must not break if one did. */
static void
label_value(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	for (; *src != '\0' && n + 3 < len; src++) {
		if (*src == '\\' || *src == '"' || *src == '\n') {
			dst[n++] = '\\';
			dst[n++] = *src == '\n' ? 'n' : *src;
		} else
			dst[n++] = *src;
	}
	dst[n] = '\0';
}

static void
one(struct evbuffer *out, const char *name, const char *type,
    const char *help, double v)
{
	family(out, name, type, help);
	sample_d(out, name, v);
}

static void
one_u(struct evbuffer *out, const char *name, const char *type,
    const char *help, uint64_t v)
{
	family(out, name, type, help);
	sample_u(out, name, v);
}

static void
requests(struct evbuffer *out, const struct stats *st)
{
	uint64_t by_cmds = 0;

	family(out, "seend_requests_total", "counter",
	    "Requests answered, by command and answer.");
#define REQ(cmd, answer, v)						\
	evbuffer_add_printf(out, "seend_requests_total{command=\"%s\","	\
	    "answer=\"%s\"} %llu\n", cmd, answer, (unsigned long long)(v))
	REQ("seen", "new", st->keys_new);
	REQ("seen", "seen", st->keys_seen);
	REQ("seen", "error", st->by_cmd[CMD_SEEN] - st->keys_new -
	    st->keys_seen);
	REQ("check", "hit", st->check_hits);
	REQ("check", "miss", st->check_misses);
	REQ("check", "error", st->by_cmd[CMD_CHECK] - st->check_hits -
	    st->check_misses);
	for (int i = 0; i < CMD_COUNT; i++) {
		char name[16];
		size_t j;

		by_cmds += st->by_cmd[i];
		if (i == CMD_SEEN || i == CMD_CHECK)
			continue;
		for (j = 0; command_name(i)[j] && j < sizeof(name) - 1; j++)
			name[j] = (char)(command_name(i)[j] | 0x20);
		name[j] = '\0';
		REQ(name, "reply", st->by_cmd[i]);
	}
	/* unknown commands, bad lines, refusals before AUTH */
	REQ("unknown", "error", st->commands - by_cmds);
#undef REQ
}

static unsigned
open_fds(void)
{
	DIR		*d = opendir("/proc/self/fd");
	unsigned	 n = 0;

	if (d == NULL)
		return 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0;	/* ".", ".." and d's own */
}

static void
process(struct evbuffer *out, const struct core *core)
{
	struct rlimit rl;

	one(out, "process_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch in seconds.",
	    (double)core->stats.started);
	one_u(out, "process_resident_memory_bytes", "gauge",
	    "Resident memory size in bytes.", stats_rss_bytes());
	one_u(out, "process_open_fds", "gauge",
	    "Number of open file descriptors.", open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		one(out, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.",
		    rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur);
}

static void
journal_figures(struct evbuffer *out, struct core *core)
{
	uint64_t	 bytes, segs;
	double		 age;
	int		 ok;

	persist_figures(core, &bytes, &segs, &age, &ok);
	one_u(out, "seend_journal_bytes", "gauge",
	    "Bytes of the journal: its segments and its buffer.", bytes);
	one_u(out, "seend_journal_segments", "gauge",
	    "Journal segment files.", segs);
	one(out, "seend_journal_sync_age_seconds", "gauge",
	    "Seconds since the journal's last fsync, while records wait for "
	    "one (0 when none do).", age);
	one_u(out, "seend_journal_ok", "gauge",
	    "0 while the journal is in fault (see INFO journal_status), "
	    "else 1.", (uint64_t)ok);
}

/* Replication, as INFO's replication section says it. */
static void
replication_figures(struct evbuffer *out, struct core *core)
{
	const struct core_repl	*r = &core->repl;
	one_u(out, "seend_replica", "gauge",
	    "1 on a read-only replica, 0 on a primary.",
	    (uint64_t)r->replica);
	one_u(out, "seend_replication_offset_bytes", "gauge",
	    "The replication stream's offset: a primary's end, what a "
	    "replica has applied.", r->offset);
	one_u(out, "seend_connected_replicas", "gauge",
	    "Replicas streaming from this primary.", (uint64_t)r->online);
	one_u(out, "seend_replica_link_up", "gauge",
	    "On a replica, 1 while its link to the primary is up.",
	    (uint64_t)(r->replica && r->link_up));
	one_u(out, "seend_replication_full_syncs_total", "counter",
	    "Full syncs this primary served.", r->sync_full);
}

static void
server_figures(struct evbuffer *out, struct core *core)
{
	const struct stats	*st = &core->stats;
	const struct registry	*reg = core->reg;
	time_t			 now = time(NULL);
	uint64_t		 filter_bytes = 0;

	for (size_t i = 0; i < reg->nfilters; i++) {
		struct filter_figures ff;

		metrics_filter_figures(reg->filters[i], &ff);
		filter_bytes += ff.bytes;
	}
	family(out, "seend_build_info", "gauge",
	    "Always 1; the version is the label.");
	evbuffer_add_printf(out, "seend_build_info{version=\"%s\"} 1\n",
	    PACKAGE_VERSION);
	one_u(out, "seend_uptime_seconds", "gauge",
	    "Seconds since the daemon started.", (uint64_t)(now - core->stats.started));
	requests(out, st);
	one_u(out, "seend_commands_total", "counter",
	    "Requests that got a reply, every command.", st->commands);
	one_u(out, "seend_errors_total", "counter",
	    "ERR replies.", st->errors);
	one_u(out, "seend_unknown_commands_total", "counter",
	    "Requests for commands seend does not serve (queues, hashes, "
	    "lists, scripts, JSON: they belong in Redis).",
	    st->unknown_commands);
	one_u(out, "seend_connections", "gauge",
	    "Clients connected now.", core->stats.clients);
	one_u(out, "seend_connections_total", "counter",
	    "Clients accepted.", st->conns_total);
	one_u(out, "seend_connections_refused_total", "counter",
	    "Clients refused: over max_clients.", st->conns_refused);
	one_u(out, "seend_max_clients", "gauge",
	    "The client limit in force (max_clients, lowered to fit the "
	    "descriptor limit if need be).", core->cfg->max_clients);
	one_u(out, "seend_lines_too_long_total", "counter",
	    "Request lines refused for being longer than max_line.",
	    st->lines_too_long);
	one_u(out, "seend_idle_closed_total", "counter",
	    "Connections closed after idle_timeout.", st->idle_closed);
	one_u(out, "seend_auth_failures_total", "counter",
	    "Wrong AUTH tokens and requests refused before AUTH.",
	    st->auth_failures);
	one_u(out, "seend_acl_access_denied_auth_total", "counter",
	    "AUTH and HELLO AUTH refused: a wrong password, no such user, "
	    "or the user is off.", st->acl_denied_auth);
	one_u(out, "seend_tls_handshake_failures_total", "counter",
	    "TLS connections closed in their handshake: plaintext on "
	    "tls_listen, TLS on listen, a certificate refused, "
	    "tls_handshake_timeout.", st->tls_handshake_failures);
	one_u(out, "seend_filters", "gauge",
	    "Filters configured.", reg->nfilters);
	one_u(out, "seend_filter_memory_bytes", "gauge",
	    "Bytes of every filter's bits together.", filter_bytes);
	one_u(out, "seend_connection_memory_bytes", "gauge",
	    "Bytes held by connections and their buffers.",
	    core->stats.conn_bytes);
	one_u(out, "seend_snapshots_in_progress", "gauge",
	    "Snapshot jobs queued or being written.",
	    (uint64_t)saver_busy(core->saver));
	one_u(out, "seend_last_reload_timestamp_seconds", "gauge",
	    "Time of the last SIGHUP reload, 0 if none.",
	    (uint64_t)core->stats.last_reload);
	one_u(out, "seend_last_reload_success", "gauge",
	    "1 if the last reload was applied (or there was none), 0 if it "
	    "failed.", core->stats.last_reload_ok != 0);
	journal_figures(out, core);
	replication_figures(out, core);
}

/* One family, one sample per filter. */
enum ff_field {
	FF_KEYS, FF_CAPACITY, FF_ERROR_RATE, FF_BYTES, FF_FILL, FF_FP,
	FF_SLICES, FF_DIRTY, FF_LAST_SAVE, FF_AGE, FF_DURATION, FF_SAVES_OK,
	FF_SAVES_FAILED, FF_FORGOTTEN, FF_COUNT
};

static const struct {
	const char	*name, *type, *help;
} ff_family[FF_COUNT] = {
	[FF_KEYS] = { "seend_filter_keys", "gauge",
	    "Keys recorded in the filter (SEEN answered 0)." },
	[FF_CAPACITY] = { "seend_filter_capacity", "gauge",
	    "Keys the filter is sized for." },
	[FF_ERROR_RATE] = { "seend_filter_error_rate", "gauge",
	    "Target false-positive rate at capacity." },
	[FF_BYTES] = { "seend_filter_bytes", "gauge",
	    "Bytes of the filter's bits." },
	[FF_FILL] = { "seend_filter_fill_ratio", "gauge",
	    "Fraction of the filter's bits that are set (a cuckoo filter: "
	    "of its slots in use)." },
	[FF_FP] = { "seend_filter_estimated_false_positive_rate", "gauge",
	    "False-positive rate expected at the filter's current fill." },
	[FF_SLICES] = { "seend_filter_slices", "gauge",
	    "Bloom filters (slices) that make up the filter." },
	[FF_DIRTY] = { "seend_filter_dirty", "gauge",
	    "1 if keys were recorded since the last snapshot." },
	[FF_LAST_SAVE] = { "seend_filter_last_snapshot_timestamp_seconds",
	    "gauge", "Time of the last snapshot written or loaded, 0 if "
	    "none." },
	[FF_AGE] = { "seend_filter_snapshot_age_seconds", "gauge",
	    "Seconds since the last snapshot (since the start if none)." },
	[FF_DURATION] = { "seend_filter_last_snapshot_duration_seconds",
	    "gauge", "How long the last snapshot took to write." },
	[FF_SAVES_OK] = { "seend_filter_snapshots_total", "counter",
	    "Snapshots written." },
	[FF_SAVES_FAILED] = { "seend_filter_snapshot_failures_total",
	    "counter", "Snapshots that failed." },
	[FF_FORGOTTEN] = { "seend_filter_forgotten_total", "counter",
	    "Keys a cuckoo filter forgot (FORGET, CF.DEL); 0 for a bloom "
	    "filter." },
};

static double
ff_value(const struct filter_figures *ff, enum ff_field which, time_t now,
    time_t started)
{
	switch (which) {
	case FF_KEYS:		return (double)ff->keys;
	case FF_CAPACITY:	return (double)ff->capacity;
	case FF_ERROR_RATE:	return ff->error_rate;
	case FF_BYTES:		return (double)ff->bytes;
	case FF_FILL:		return ff->fill_ratio;
	case FF_FP:		return ff->fp_rate;
	case FF_SLICES:		return ff->slices;
	case FF_DIRTY:		return ff->dirty;
	case FF_LAST_SAVE:	return (double)ff->last_save;
	case FF_AGE:
		return (double)(now - (ff->last_save ? ff->last_save :
		    started));
	case FF_DURATION:	return ff->last_save_secs;
	case FF_SAVES_OK:	return (double)ff->saves_ok;
	case FF_SAVES_FAILED:	return (double)ff->saves_failed;
	case FF_FORGOTTEN:	return (double)ff->forgotten;
	default:		return 0;
	}
}

static void
filter_figures(struct evbuffer *out, const struct core *core)
{
	const struct registry	*reg = core->reg;
	struct filter_figures	*ffs;
	char			(*labels)[CONFIG_NAME_MAX * 2 + 1];
	time_t			 now = time(NULL);

	if (reg->nfilters == 0)
		return;
	ffs = calloc(reg->nfilters, sizeof(*ffs));
	labels = calloc(reg->nfilters, sizeof(*labels));
	if (ffs == NULL || labels == NULL)
		goto out;
	for (size_t i = 0; i < reg->nfilters; i++) {
		metrics_filter_figures(reg->filters[i], &ffs[i]);
		label_value(labels[i], sizeof(labels[i]),
		    reg->filters[i]->name);
	}
	for (int k = 0; k < FF_COUNT; k++) {
		family(out, ff_family[k].name, ff_family[k].type,
		    ff_family[k].help);
		for (size_t i = 0; i < reg->nfilters; i++) {
			char n[32];

			evbuffer_add_printf(out, "%s{filter=\"%s\"} %s\n",
			    ff_family[k].name, labels[i], num(n, sizeof(n),
			    ff_value(&ffs[i], k, now, core->stats.started)));
		}
	}
	family(out, "seend_filter_requests_total", "counter",
	    "SEEN and CHECK requests answered by the filter.");
	for (size_t i = 0; i < reg->nfilters; i++)
		evbuffer_add_printf(out,
		    "seend_filter_requests_total{filter=\"%s\",command=\"seen\","
		    "answer=\"new\"} %llu\n"
		    "seend_filter_requests_total{filter=\"%s\",command=\"seen\","
		    "answer=\"seen\"} %llu\n"
		    "seend_filter_requests_total{filter=\"%s\",command=\"check\","
		    "answer=\"any\"} %llu\n",
		    labels[i], (unsigned long long)ffs[i].seen_new,
		    labels[i], (unsigned long long)ffs[i].seen_old,
		    labels[i], (unsigned long long)ffs[i].checks);
out:
	free(ffs);
	free(labels);
}

int
metrics_render(struct core *core, struct evbuffer *out)
{
	server_figures(out, core);
	filter_figures(out, core);
	process(out, core);
	return 0;
}

/* ---- HTTP ---- */

/*
 * evhttp writes the headers and the body apart: with Nagle's algorithm the
 * last piece waits for the client's delayed ACK, 40 ms a scrape.
 */
static void
no_delay(struct evhttp_request *req)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	int				 on = 1;

	if ((evcon = evhttp_request_get_connection(req)) == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL)
		return;
	(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &on,
	    sizeof(on));
}

/*
 * metrics_token: the scraper must send "Authorization: Bearer <it>"
 * (Prometheus's authorization block). Compared as SHA-256 digests, in
 * constant time, so neither its length nor its bytes leak by timing.
 */
static int
authorized(const struct metrics *m, struct evhttp_request *req)
{
	const char	*tok = m->core->cfg->metrics_token, *h;
	char		 want[65], got[65];

	if (tok == NULL)
		return 1;
	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	for (h += 7; *h == ' '; h++)
		;
	acl_hash_hex(tok, strlen(tok), want);
	acl_hash_hex(h, strlen(h), got);
	return CRYPTO_memcmp(want, got, 64) == 0;
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	struct metrics		*m = arg;
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);
	struct evkeyvalq	*hdrs = evhttp_request_get_output_headers(req);
	struct evbuffer		*body;

	if (path == NULL || strcmp(path, "/metrics") != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, NULL);
		return;
	}
	if ((body = evbuffer_new()) == NULL) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	no_delay(req);
	if (!authorized(m, req)) {
		evhttp_add_header(hdrs, "WWW-Authenticate",
		    "Bearer realm=\"seend\"");
		evhttp_add_header(hdrs, "Content-Type", "text/plain");
		evbuffer_add_printf(body, "401 unauthorized: send "
		    "Authorization: Bearer <metrics_token>\n");
		evhttp_send_reply(req, 401, "Unauthorized", body);
	/* not evhttp_send_error, which drops the Allow header */
	} else if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(hdrs, "Allow", "GET, HEAD");
		evhttp_add_header(hdrs, "Content-Type", "text/plain");
		evbuffer_add_printf(body, "405 method not allowed: GET or "
		    "HEAD only\n");
		evhttp_send_reply(req, 405, "Method Not Allowed", body);
	} else {
		metrics_render(m->core, body);
		evhttp_add_header(hdrs, "Content-Type",
		    "text/plain; version=0.0.4; charset=utf-8");
		evhttp_send_reply(req, HTTP_OK, "OK", body);
	}
	evbuffer_free(body);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(evhttp_bound_socket_get_listener(m->sock));
}

/*
 * accept failed (EMFILE most likely): pause the listener for a moment
 * rather than let libevent retry, and warn, in a loop; warn once a second.
 */
static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct metrics	*m = live;
	struct timeval	 tv = { 0, ACCEPT_PAUSE_USEC };
	time_t		 now = time(NULL);
	int		 err = EVUTIL_SOCKET_ERROR();

	while (m != NULL && (void *)m->http != arg)
		m = m->next;
	if (m == NULL)
		return;
	if (now != m->warned) {
		m->warned = now;
		log_warn("metrics_listen %s: accept: %s", m->spec,
		    evutil_socket_error_to_string(err));
	}
	evconnlistener_disable(lev);
	evtimer_add(m->ev_retry, &tv);
}

/*
 * metrics_tls: each connection evhttp accepts is wrapped in an OpenSSL
 * bufferevent of the server's current context, so a scrape is served
 * with the certificate (and client certificate rule) of tls_listen.
 * NULL (out of memory) makes evhttp drop the connection.
 */
static struct bufferevent *
tls_bev(struct event_base *base, void *arg)
{
	struct metrics	*m = arg;
	SSL		*ssl;
	struct bufferevent *bev;

	if (*m->tls == NULL || (ssl = SSL_new(*m->tls)) == NULL)
		return NULL;
	/* the context reads ahead for conn.c, which takes what OpenSSL
	 * holds; libevent 2.1's bufferevent does not look there: a request
	 * read ahead with the handshake's last records waited until evhttp's
	 * timeout, or the connection was dropped (about half the scrapes,
	 * more with client certificates asked for) */
	SSL_set_read_ahead(ssl, 0);
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		SSL_free(ssl);
	return bev;
}

static int
split_spec(const char *spec, char *host, size_t hlen, unsigned *port)
{
	const char	*colon;
	size_t		 n;
	char		*end;
	unsigned long	 p;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (close == NULL || close[1] != ':')
			return -1;
		n = (size_t)(close - spec - 1);
		if (n >= hlen)
			return -1;
		memcpy(host, spec + 1, n);
		colon = close + 1;
	} else {
		if ((colon = strrchr(spec, ':')) == NULL)
			return -1;
		n = (size_t)(colon - spec);
		if (n >= hlen)
			return -1;
		memcpy(host, spec, n);
	}
	host[n] = '\0';
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || p == 0 || p > 65535)
		return -1;
	*port = (unsigned)p;
	return 0;
}

struct metrics *
metrics_open(struct event_base *base, struct core *core,
    const char *spec, SSL_CTX *const *tls)
{
	struct metrics	*m;
	char		 host[256];
	unsigned	 port;

	if (split_spec(spec, host, sizeof(host), &port) == -1) {
		log_error("metrics_listen %s: expected host:port or "
		    "[v6]:port", spec);
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->spec = strdup(spec)) == NULL ||
	    (m->http = evhttp_new(base)) == NULL ||
	    (m->ev_retry = evtimer_new(base, on_retry, m)) == NULL) {
		log_error("metrics_listen %s: out of memory", spec);
		metrics_free(m);
		return NULL;
	}
	m->core = core;
	if ((m->tls = tls) != NULL)
		evhttp_set_bevcb(m->http, tls_bev, m);
	/* every method reaches on_request, which answers 405 itself (evhttp
	 * would answer 501 for the ones it was not told about) */
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
	    EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_timeout(m->http, METRICS_TIMEOUT_SECS);
	evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(m->http, METRICS_MAX_BODY);
	evhttp_set_gencb(m->http, on_request, m);
	errno = 0;
	m->sock = evhttp_bind_socket_with_handle(m->http, host,
	    (ev_uint16_t)port);
	if (m->sock == NULL) {
		log_error("metrics_listen %s: cannot listen: %s", spec,
		    errno ? strerror(errno) : "bind failed");
		metrics_free(m);
		return NULL;
	}
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(m->sock),
	    on_accept_error);
	m->next = live;
	live = m;
	log_info("metrics on %s://%s/metrics", tls != NULL ? "https" : "http",
	    spec);
	return m;
}

void
metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	for (struct metrics **pp = &live; *pp != NULL; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	if (m->http != NULL)
		evhttp_free(m->http);
	if (m->ev_retry != NULL)
		event_free(m->ev_retry);
	free(m->spec);
	free(m);
}

const char *
metrics_spec(const struct metrics *m)
{
	return m->spec;
}
