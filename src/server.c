/*
 * server.c - listeners, timers, signals, reload and shutdown.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster.h"
#include "cluster_move.h"
#include "cluster_map.h"
#include "command.h"
#include "config.h"
#include "conn.h"
#include "keyspace.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "peer.h"
#include "persist.h"
#include "prebuild.h"
#include "registry.h"
#include "role.h"
#include "saver.h"
#include "server.h"
#include "tls.h"

#define LISTEN_BACKLOG		1024
#define ACCEPTS_PER_EVENT	64
#define SHUTDOWN_FLUSH_SECS	5
/* bytes of cuckoo tables copied per loop turn for snapshots (~1 ms) */
#define SAVER_COPY_STEP		((size_t)4 << 20)

/* ---- listeners ---- */

/* Splits "host:port" or "[v6]:port"; returns 0, or -1. */
static int
split_hostport(const char *s, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':' ||
		    (size_t)(close - s - 1) >= hlen)
			return -1;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		colon = close + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL ||
		    (size_t)(colon - s) >= hlen)
			return -1;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	if (strlen(colon + 1) >= plen)
		return -1;
	strcpy(port, colon + 1);
	return 0;
}

static int
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
		    >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
		    &((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

static int
open_tcp(const char *spec, int *loopback)
{
	struct addrinfo	 hints, *res = NULL;
	char		 host[256], port[16];
	int		 fd = -1, on = 1, r;

	if (split_hostport(spec, host, sizeof(host), port, sizeof(port)) ==
	    -1) {
		log_error("listen %s: expected host:port or [v6]:port", spec);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0) {
		log_error("listen %s: %s", spec, gai_strerror(r));
		return -1;
	}
	*loopback = is_loopback(res->ai_addr);
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	if (bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, LISTEN_BACKLOG) == -1)
		goto fail;
	freeaddrinfo(res);
	return fd;
fail:
	log_error("listen %s: %s", spec, strerror(errno));
	if (fd != -1)
		close(fd);
	freeaddrinfo(res);
	return -1;
}

/*
 * A socket file left by a crash is replaced; one that a live server still
 * answers on is not.
 */
static int
clear_stale_socket(const char *path, const struct sockaddr_un *sun)
{
	struct stat	st;
	int		fd, r;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_error("unix_socket %s exists and is not a socket", path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (r == 0) {
		log_error("unix_socket %s: another server is listening there",
		    path);
		return -1;
	}
	return unlink(path);
}

static int
open_unix(const char *path, mode_t mode, gid_t group)
{
	struct sockaddr_un	sun;
	mode_t			old;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_error("unix_socket %s: path too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (clear_stale_socket(path, &sun) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		goto fail;
	/* no moment where the socket exists with looser permissions */
	old = umask(0777 & ~mode);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		goto fail;
	}
	umask(old);
	/* the group lets crawler users in without opening it to "other" */
	if (group != (gid_t)-1 && chown(path, (uid_t)-1, group) == -1)
		goto fail;
	if (chmod(path, mode) == -1 || listen(fd, LISTEN_BACKLOG) == -1)
		goto fail;
	return fd;
fail:
	log_error("unix_socket %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

static void	on_accept(evutil_socket_t, short, void *);
static void	listener_free(struct listener *);

static void
on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	(void)fd;
	(void)what;
	event_add(l->ev, NULL);
}

static struct listener *
listener_new(struct server *srv, int fd, int is_unix, const char *desc)
{
	struct listener *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->fd = fd;
	l->is_unix = is_unix;
	l->srv = srv;
	snprintf(l->desc, sizeof(l->desc), "%s", desc);
	if (is_unix)
		l->path = strdup(desc);
	l->ev = event_new(srv->base, fd, EV_READ | EV_PERSIST, on_accept, l);
	l->ev_retry = evtimer_new(srv->base, on_accept_retry, l);
	if (l->ev == NULL || l->ev_retry == NULL ||
	    event_add(l->ev, NULL) == -1) {
		log_error("%s: cannot watch the listener", desc);
		listener_free(l);
		return NULL;
	}
	return l;
}

static void
listener_free(struct listener *l)
{
	if (l == NULL)
		return;
	if (l->ev != NULL)
		event_free(l->ev);
	if (l->ev_retry != NULL)
		event_free(l->ev_retry);
	close(l->fd);
	if (l->path != NULL) {
		unlink(l->path);
		free(l->path);
	}
	free(l);
}

static struct listener *
listener_open_tcp(struct server *srv, const char *spec, const char *token)
{
	struct listener	*l;
	int		 fd, loopback = 0;

	if ((fd = open_tcp(spec, &loopback)) == -1)
		return NULL;
	if (!loopback && token == NULL)
		log_warn("listening on %s, which is not a loopback address, "
		    "WITHOUT auth_token: anyone who can reach this port can "
		    "read and write every filter", spec);
	log_info("listening on %s (TCP)", spec);
	if ((l = listener_new(srv, fd, 0, spec)) != NULL)
		l->loopback = loopback;
	return l;
}

/* tls_listen: the same listener, its connections TLS ones. */
static struct listener *
listener_open_tls(struct server *srv, const char *spec)
{
	struct listener	*l;
	int		 fd, loopback = 0;

	if ((fd = open_tcp(spec, &loopback)) == -1)
		return NULL;
	log_info("listening on %s (TLS)", spec);
	if ((l = listener_new(srv, fd, 0, spec)) != NULL) {
		l->loopback = loopback;
		l->tls = 1;
	}
	return l;
}

/*
 * The TLS context for cfg, read from its certificate, key and settings:
 * at start, and at each reload (SIGHUP rotates the certificate; the
 * connections open keep the context they hold). A new one that does not
 * load is logged and the one in use kept (*ctx is it). Returns 0 with
 * *ctx (NULL without tls_listen), or -1 if there is none to use.
 */
static int
tls_prepare(struct server *srv, const struct config *cfg, SSL_CTX **ctx)
{
	struct tls_settings	 t;
	char			 err[512];

	*ctx = NULL;
	if (cfg->tls_listen == NULL && !cfg->metrics_tls)
		return 0;
	config_tls_settings(cfg, &t);
	if ((*ctx = tls_server_ctx_new(&t, err, sizeof(err))) != NULL)
		return 0;
	if ((*ctx = srv->conns.tls_ctx) == NULL) {
		log_error("TLS: %s", err);
		return -1;
	}
	log_error("TLS: %s; the certificate in use is kept", err);
	return 0;
}

/* ctx (tls_prepare's) is the one for new connections from now on. */
static void
tls_commit(struct server *srv, SSL_CTX *ctx, const struct config *cfg)
{
	if (ctx == srv->conns.tls_ctx)
		return;
	SSL_CTX_free(srv->conns.tls_ctx);
	srv->conns.tls_ctx = ctx;
	if (ctx != NULL)
		log_info("TLS: certificate %s loaded", cfg->tls_cert_file);
}

/* A reload that failed after tls_prepare: its new context is dropped. */
static void
tls_drop(struct server *srv, SSL_CTX *ctx)
{
	if (ctx != srv->conns.tls_ctx)
		SSL_CTX_free(ctx);
}

static struct listener *
listener_open_unix(struct server *srv, const char *path, mode_t mode,
    gid_t group)
{
	int fd;

	if ((fd = open_unix(path, mode, group)) == -1)
		return NULL;
	log_info("listening on %s (unix, mode %04o)", path, (unsigned)mode);
	return listener_new(srv, fd, 1, path);
}

/*
 * 1 if a line may be logged now; otherwise counts it as left out. The
 * line logged next says how many were (log_limit_take).
 */
static int
log_limit_ok(struct log_limit *ll)
{
	time_t now = time(NULL);

	if (now == ll->last) {
		ll->suppressed++;
		return 0;
	}
	ll->last = now;
	return 1;
}

/* "" or " (N more since the last such line)", for the line logged now. */
static const char *
log_limit_take(struct log_limit *ll, char *buf, size_t len)
{
	buf[0] = '\0';
	if (ll->suppressed > 0)
		snprintf(buf, len, " (%lu more since the last such line)",
		    ll->suppressed);
	ll->suppressed = 0;
	return buf;
}

/*
 * The client learns why before the close. What it already sent is read
 * and dropped first: closing with unread input sends a reset, which can
 * destroy the ERR line before the client reads it.
 */
static void
refuse(struct server *srv, int fd, const char *peer)
{
	static const char	msg[] = "ERR max clients reached\r\n";
	char			sink[4096], more[64];

	srv->core.stats.conns_refused++;
	(void)!write(fd, msg, sizeof(msg) - 1);
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16 && read(fd, sink, sizeof(sink)) > 0; i++)
		;
	close(fd);
	if (log_limit_ok(&srv->refuse_log))
		log_warn("refused %s: max clients reached (max_clients "
		    "%u)%s", peer, srv->core.cfg->max_clients,
		    log_limit_take(&srv->refuse_log, more, sizeof(more)));
}

static void
describe_peer(const struct sockaddr_storage *ss, int is_unix, char *out,
    size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (is_unix) {
		snprintf(out, len, "unix");
		return;
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else
		snprintf(out, len, "?");
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct listener		*l = arg;
	struct server		*srv = l->srv;
	struct conn		*c;
	struct sockaddr_storage	 ss;
	socklen_t		 slen;
	char			 peer[80];
	int			 fd, on = 1;

	(void)what;
	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		slen = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &slen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* out of descriptors: stop accepting briefly
				 * rather than spin on a ready listener */
				struct timeval tv = { 0, 100000 };
				char more[64];

				if (log_limit_ok(&srv->accept_log))
					log_warn("accept on %s: %s%s", l->desc,
					    strerror(errno), log_limit_take(
					    &srv->accept_log, more,
					    sizeof(more)));
				event_del(l->ev);
				evtimer_add(l->ev_retry, &tv);
			}
			return;
		}
		describe_peer(&ss, l->is_unix, peer, sizeof(peer));
		if (srv->core.stats.clients >= srv->core.cfg->max_clients) {
			refuse(srv, fd, peer);
			continue;
		}
		if (!l->is_unix)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on,
			    sizeof(on));
		if ((c = conn_new(&srv->conns, fd, l->is_unix, l->tls,
		    peer)) == NULL) {
			log_warn("accept %s: out of memory", peer);
			close(fd);
			continue;
		}
		srv->core.stats.conns_total++;
	}
}

/* ---- descriptor limit ---- */

void
server_fit_fd_limit(struct config *cfg)
{
	struct rlimit	rl;
	unsigned	want = cfg->max_clients;
	rlim_t		need = (rlim_t)want + SERVER_RESERVED_FDS, fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY
	    || rl.rlim_cur >= need)
		return;
	/* as Redis does: the soft limit up to the hard one, which only
	 * root could raise */
	fit = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need :
	    rl.rlim_max;
	rl.rlim_cur = fit;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && fit >= need) {
		log_info("raised the open files limit to %llu for max_clients "
		    "%u", (unsigned long long)fit, want);
		return;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	fit = rl.rlim_cur > SERVER_RESERVED_FDS ?
	    rl.rlim_cur - SERVER_RESERVED_FDS : 1;
	cfg->max_clients = (unsigned)fit;
	log_warn("max_clients %u needs %llu open files but the limit is %llu "
	    "(hard %llu): serving at most %u clients; raise the limit "
	    "(ulimit -n, LimitNOFILE=) or lower max_clients", want,
	    (unsigned long long)need, (unsigned long long)rl.rlim_cur,
	    (unsigned long long)rl.rlim_max, cfg->max_clients);
}

#define STATUS_EVERY	10	/* seconds between systemd STATUS= updates */


/* The figures "systemctl status seend" shows. */
static void
send_status(struct server *srv)
{
	static uint64_t	last_cmds;
	uint64_t	cmds = srv->core.stats.commands;

	notify_send("STATUS=%u client(s), %zu filter(s), %llu keys new, "
	    "%llu seen, %.0f req/s", srv->core.stats.clients, srv->core.reg->nfilters,
	    (unsigned long long)srv->core.stats.keys_new,
	    (unsigned long long)srv->core.stats.keys_seen,
	    (double)(cmds - last_cmds) / STATUS_EVERY);
	last_cmds = cmds;
}

/* The once-a-second timer only says the tick is due: the turn runs it
 * last (server_turn), after the replies of the turn have gone. */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	srv->tick_due = 1;
}

/*
 * Once a second: retired filters released, periodic snapshots, the
 * journal's faults and rotation, windows and EXPIRE deadlines, idle
 * clients; every STATUS_EVERY seconds, tell systemd how we are doing.
 */
static void
server_tick(struct server *srv)
{
	struct core	*core = &srv->core;
	time_t		 now = time(NULL);
	static time_t	 last_status;

	if (now - last_status >= STATUS_EVERY && !core->stopping) {
		last_status = now;
		send_status(srv);
	}
	core_release_retired(core);
	core_snapshot_due(core, now);
	/* a fault that ended: the replies it held go now */
	if (persist_tick(core))
		conn_release_held(&srv->conns);
	/* windows drop their old slices even without traffic */
	filter_clock_update();
	/* a map held since the start (or taken by a role change): the
	 * ranges of slots not the shard's freed (cluster_move.h), before
	 * the parts follow it */
	cluster_move_apply(core);
	/* and the named filters of slots given away dropped */
	keyspace_drop_moved(core);
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		filter_expire(core->reg->filters[i], filter_now_ms);
		filter_retry(core->reg->filters[i]);
		filter_part_check(core->reg->filters[i]);
	}
	/* runtime filters whose EXPIRE deadline has come are dropped */
	keyspace_expire_due(core, filter_now_ms);
	/* and dumps no client asks for any more */
	command_tick(core, now);
	/* the cluster's map passed on to the nodes that lack it */
	if (core->cluster != NULL) {
		/* a promotion (failover) the map held lacks: made again */
		if (cluster_reconcile(core->cluster, core->cfg->data_dir) ==
		    CLUSTER_TAKEN)
			peer_map_changed(core);
		peer_tick(core);
	}
	conn_sweep(&srv->conns, core->cfg->idle_timeout);
	role_tick(srv->role);
	/* INFO's instantaneous_ops_per_sec and used_memory_peak */
	stats_tick(&core->stats, __atomic_load_n(&filter_memory_used,
	    __ATOMIC_RELAXED));
}

/* ---- snapshots ---- */

void
server_ensure_data_dir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			log_warn("data_dir %s is not a directory: snapshots "
			    "will fail", dir);
		return;
	}
	if (mkdir(dir, 0750) == 0) {
		log_info("created data_dir %s", dir);
		return;
	}
	log_warn("data_dir %s: %s: snapshots will fail until it exists",
	    dir, strerror(errno));
}

/* ---- reload ---- */

static void
log_warning_line(const char *msg)
{
	log_warn("%s", msg);
}

static void
log_info_line(const char *msg)
{
	log_info("%s", msg);
}

/*
 * Listener changes: the new listener is opened before the old one closes,
 * and if it cannot be opened the reload fails as a whole. Returns 0 or -1.
 */
static int
swap_listeners(struct server *srv, const struct config *ncfg,
    struct listener **ntcp, struct listener **nunx, struct listener **ntls)
{
	const struct config *ocfg = srv->core.cfg;

	*ntcp = srv->tcp;
	*nunx = srv->unx;
	*ntls = srv->tls;
	if ((ncfg->tls_listen == NULL) != (ocfg->tls_listen == NULL) ||
	    (ncfg->tls_listen && strcmp(ncfg->tls_listen,
	    ocfg->tls_listen) != 0)) {
		*ntls = NULL;
		if (ncfg->tls_listen != NULL &&
		    (*ntls = listener_open_tls(srv, ncfg->tls_listen)) == NULL)
			return -1;
	}
	if ((ncfg->listen == NULL) != (ocfg->listen == NULL) ||
	    (ncfg->listen && strcmp(ncfg->listen, ocfg->listen) != 0)) {
		*ntcp = NULL;
		if (ncfg->listen != NULL &&
		    (*ntcp = listener_open_tcp(srv, ncfg->listen,
		    ncfg->auth_token)) == NULL) {
			if (*ntls != srv->tls)
				listener_free(*ntls);
			return -1;
		}
	}
	if ((ncfg->unix_socket == NULL) != (ocfg->unix_socket == NULL) ||
	    (ncfg->unix_socket &&
	    (strcmp(ncfg->unix_socket, ocfg->unix_socket) != 0 ||
	    ncfg->unix_socket_mode != ocfg->unix_socket_mode ||
	    ncfg->unix_socket_group != ocfg->unix_socket_group))) {
		int same_path = ncfg->unix_socket && ocfg->unix_socket &&
		    strcmp(ncfg->unix_socket, ocfg->unix_socket) == 0;

		if (same_path) {
			/* only the mode or group changed: no rebind */
			if (ncfg->unix_socket_group != (gid_t)-1 &&
			    chown(ncfg->unix_socket, (uid_t)-1,
			    ncfg->unix_socket_group) == -1)
				log_warn("chown %s: %s", ncfg->unix_socket,
				    strerror(errno));
			if (chmod(ncfg->unix_socket,
			    ncfg->unix_socket_mode) == -1)
				log_warn("chmod %s: %s", ncfg->unix_socket,
				    strerror(errno));
		} else {
			*nunx = NULL;
			if (ncfg->unix_socket != NULL &&
			    (*nunx = listener_open_unix(srv, ncfg->unix_socket,
			    ncfg->unix_socket_mode,
			    ncfg->unix_socket_group)) == NULL) {
				if (*ntcp != srv->tcp)
					listener_free(*ntcp);
				if (*ntls != srv->tls)
					listener_free(*ntls);
				return -1;
			}
		}
	}
	return 0;
}

static int
str_differs(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* A changed metrics_listen: the new endpoint opens before the old one
 * closes, and a failure to bind fails the reload. Returns 0 or -1. */
static int
swap_metrics(struct server *srv, const struct config *ncfg,
    struct metrics **nmet)
{
	*nmet = srv->metrics;
	if (!str_differs(srv->core.cfg->metrics_listen,
	    ncfg->metrics_listen) && srv->core.cfg->metrics_tls ==
	    ncfg->metrics_tls)
		return 0;
	*nmet = NULL;
	if (ncfg->metrics_listen != NULL && (*nmet = metrics_open(srv->base,
	    &srv->core, ncfg->metrics_listen, ncfg->metrics_tls ?
	    &srv->conns.tls_ctx : NULL)) == NULL)
		return -1;
	return 0;
}

/*
 * A new or changed auth_token applies to connected TCP clients too: they
 * must AUTH again (or, once it is removed, are served).
 */
static void
apply_auth(struct server *srv, const struct config *ncfg)
{
	const struct config *ocfg = srv->core.cfg;

	if (!str_differs(ocfg->auth_token, ncfg->auth_token))
		return;
	conn_set_auth(&srv->conns, ncfg->auth_token != NULL);
	log_info("auth_token %s: TCP clients must AUTH%s",
	    ncfg->auth_token ? "changed" : "removed",
	    ncfg->auth_token ? " again" : " no more");
	if (ncfg->auth_token == NULL && srv->tcp != NULL && !srv->tcp->loopback)
		log_warn("auth_token removed while listening on %s, which is "
		    "not a loopback address: anyone who can reach this port "
		    "can read and write every filter", srv->tcp->desc);
}

/*
 * Users (acl.h) from users_file, with auth_token as the default user's
 * password, at start and on SIGHUP. A file with an error is logged
 * (file:line) and the users stay as they were; the connections of users
 * it deleted or turned off are closed.
 */
static int
users_load(struct server *srv, const struct config *cfg)
{
	struct session_match	 m = { SESSION_TYPE_ANY, 0, NULL, 0, 0,
				    command_session_gone };
	char			 err[4096];
	long long		 n;

	if (command_users_load(cfg->users_file, cfg->auth_token, err,
	    sizeof(err)) == -1) {
		log_error("users_file: %s", err);
		return -1;
	}
	if (cfg->users_file != NULL)
		log_info("users read from %s", cfg->users_file);
	if ((n = conn_kill_matching(&srv->conns, &m)) > 0)
		log_info("users: %lld connection(s) of users deleted or turned "
		    "off closed", n);
	return 0;
}

/*
 * After a data_dir change every filter, running or retired, owes a snapshot
 * in the new directory: until one is written there it counts as dirty, so
 * a failed write is retried and shutdown still saves it.
 */
static void
move_data_dir(struct server *srv)
{
	log_info("data_dir changed to %s: saving every filter there",
	    srv->core.cfg->data_dir);
	server_ensure_data_dir(srv->core.cfg->data_dir);
	for (size_t i = 0; i < srv->core.reg->nfilters; i++)
		srv->core.reg->filters[i]->dir_gen++;
	for (size_t i = 0; i < srv->core.nretired; i++)
		srv->core.retired[i]->dir_gen++;
	core_snapshot_dirty(&srv->core, 1);
}

static void
reload_failed(struct server *srv, const char *why)
{
	srv->core.stats.last_reload = time(NULL);
	srv->core.stats.last_reload_ok = 0;
	snprintf(srv->last_reload_msg, sizeof(srv->last_reload_msg), "%s",
	    why);
	log_error("reload failed, the running config is unchanged: %s", why);
}

static void
reload_done(struct server *srv)
{
	notify_send("READY=1\nSTATUS=serving %zu filter(s), %u client(s); "
	    "last reload %s", srv->core.reg->nfilters, srv->core.stats.clients,
	    srv->core.stats.last_reload_ok ? "ok" : "FAILED");
}

static void	reload_apply(struct server *, struct config *,
		    struct prebuild *);

/* The reload's thread has opened the new filters (or failed). */
static void
on_prebuilt(struct prebuild *pb, void *arg)
{
	struct server	*srv = arg;
	struct config	*ncfg = pb->cfg;

	srv->prebuild = NULL;
	if (srv->core.stopping) {
		prebuild_free(pb);
		return;
	}
	log_info("reload: new filters opened in %.3f s", pb->secs);
	if (pb->failed) {
		reload_failed(srv, pb->err);
		reload_done(srv);
	} else {
		pb->cfg = NULL;
		reload_apply(srv, ncfg, pb);
	}
	prebuild_free(pb);
	if (srv->reload_again && !srv->core.stopping) {
		srv->reload_again = 0;
		server_reload(srv);
	}
}

/*
 * The journal of the keys acknowledged since the last snapshots is in the
 * old directory, which the next start would not read: a crash before every
 * filter is saved in the new one would lose them. A journal turned off
 * stays open there until snapshots cover it, and would be reopened there
 * if turned on again. Checked before the reload's thread opens anything in
 * the new directory. Returns -1 with a message if the move is refused.
 */
static int
data_dir_move_refused(const struct server *srv, const struct config *ncfg,
    char *err, size_t errlen)
{
	if (strcmp(srv->core.cfg->data_dir, ncfg->data_dir) == 0 ||
	    !persist_has_journal(&srv->core))
		return 0;
	snprintf(err, errlen, "data_dir cannot change by a reload while a "
	    "journal is open (it stays in %s, which the next start would not "
	    "read): restart to move it", srv->core.cfg->data_dir);
	return -1;
}

/*
 * A reload reads the config here; the filters it adds are opened (their
 * snapshots read, their memory mapped) on a thread, and the new config is
 * applied once they are ready, so a big one never stalls the loop. A
 * SIGHUP during that is taken once it is done.
 */
void
server_reload(struct server *srv)
{
	struct config_errors		 errs = { 0 };
	struct config			*ncfg;
	const struct filter_config	**todo;
	struct timespec			 ts;
	char				 err[512];
	size_t				 ntodo = 0;

	if (srv->prebuild != NULL) {
		log_info("reload: one is in progress; reloading again after "
		    "it");
		srv->reload_again = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	notify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000, srv->config_path);
	log_info("reloading %s", srv->config_path);
	if ((ncfg = config_load(srv->config_path, &errs)) == NULL) {
		for (size_t i = 0; i < errs.n; i++)
			log_error("%s", errs.msgs[i]);
		snprintf(err, sizeof(err), "%zu error(s) in %s", errs.n,
		    srv->config_path);
		config_errors_free(&errs);
		reload_failed(srv, err);
		reload_done(srv);
		return;
	}
	if (data_dir_move_refused(srv, ncfg, err, sizeof(err)) == -1) {
		config_free(ncfg);
		reload_failed(srv, err);
		reload_done(srv);
		return;
	}
	if ((todo = calloc(ncfg->nfilters + 1, sizeof(*todo))) == NULL) {
		reload_apply(srv, ncfg, NULL);
		return;
	}
	for (size_t i = 0; i < ncfg->nfilters; i++) {
		const char *name = ncfg->filters[i].name;
		int known = registry_find(srv->core.reg, name, strlen(name)) != NULL;

		for (size_t k = 0; k < srv->core.nretired && !known; k++)
			known = strcmp(srv->core.retired[k]->name, name) == 0;
		if (!known)
			todo[ntodo++] = &ncfg->filters[i];
	}
	if (ntodo > 0 && (srv->prebuild = prebuild_start(srv->base, ncfg,
	    todo, ntodo, on_prebuilt, srv)) != NULL) {
		free(todo);
		return;
	}
	free(todo);
	reload_apply(srv, ncfg, NULL);
}

static void
reload_apply(struct server *srv, struct config *ncfg, struct prebuild *pb)
{
	struct registry		*nreg, *oreg = srv->core.reg;
	struct listener		*ntcp, *nunx, *ntls;
	struct metrics		*nmet;
	SSL_CTX			*nctx;
	char			 err[512];
	size_t			 first;
	int			 moved;

	if (ncfg->listen == NULL && ncfg->unix_socket == NULL &&
	    ncfg->tls_listen == NULL) {
		config_free(ncfg);
		reload_failed(srv, "nothing to listen on: listen is off and "
		    "no unix_socket or tls_listen is set");
		goto out;
	}
	/* the certificate is read again (rotation); a broken new one
	 * leaves the old in use, and a first one that does not load fails
	 * the reload */
	if (tls_prepare(srv, ncfg, &nctx) == -1) {
		config_free(ncfg);
		reload_failed(srv, "cannot load the TLS certificate");
		goto out;
	}
	if ((nreg = core_build_registry(&srv->core, ncfg, pb ? pb->made : NULL,
	    pb ? pb->nmade : 0, log_warning_line, err, sizeof(err))) == NULL) {
		tls_drop(srv, nctx);
		config_free(ncfg);
		reload_failed(srv, err);
		goto out;
	}
	if (swap_metrics(srv, ncfg, &nmet) == -1) {
		registry_free(nreg);
		tls_drop(srv, nctx);
		config_free(ncfg);
		reload_failed(srv, "cannot open the new metrics_listen");
		goto out;
	}
	if (swap_listeners(srv, ncfg, &ntcp, &nunx, &ntls) == -1) {
		if (nmet != srv->metrics)
			metrics_free(nmet);
		registry_free(nreg);
		tls_drop(srv, nctx);
		config_free(ncfg);
		reload_failed(srv, "cannot open the new listener");
		goto out;
	}
	/* committed from here on */
	if (srv->metrics != nmet)
		metrics_free(srv->metrics);
	srv->metrics = nmet;
	server_fit_fd_limit(ncfg);
	if (srv->tcp != ntcp)
		listener_free(srv->tcp);
	if (srv->unx != nunx)
		listener_free(srv->unx);
	if (srv->tls != ntls)
		listener_free(srv->tls);
	srv->tcp = ntcp;
	srv->unx = nunx;
	srv->tls = ntls;
	tls_commit(srv, nctx, ncfg);
	for (size_t i = 0; i < nreg->nfilters; i++)
		if (!registry_contains(oreg, nreg->filters[i]))
			log_info("filter %s added: %llu bytes, %zu slice(s)",
			    nreg->filters[i]->name, (unsigned long long)
			    filter_bytes(nreg->filters[i]),
			    nreg->filters[i]->nslices);
	srv->core.reg = nreg;
	filter_memory_limit = ncfg->max_memory;
	registry_apply_settings(nreg, ncfg, log_info_line);
	apply_auth(srv, ncfg);
	(void)users_load(srv, ncfg);
	moved = strcmp(srv->core.cfg->data_dir, ncfg->data_dir) != 0;
	role_reload(srv->role, srv->core.cfg, ncfg);
	if (ncfg->cluster_enabled != (srv->core.cluster != NULL) ||
	    str_differs(ncfg->cluster_announce, srv->core.cfg->cluster_announce))
		log_warn("reload: [cluster] changes take effect at the next "
		    "start");
	config_free(srv->core.cfg);
	srv->core.cfg = ncfg;
	/* the config is swapped first, so that the last snapshots of the
	 * filters it dropped go to the data_dir they would come back from */
	first = core_retire_removed(&srv->core, oreg, nreg);
	registry_free(oreg);
	if (moved)
		move_data_dir(srv);
	else
		for (size_t i = first; i < srv->core.nretired; i++)
			core_snapshot_filter(&srv->core, srv->core.retired[i], 1);
	log_set_level(ncfg->log_level);
	if (persist_reload(&srv->core, err, sizeof(err)) == -1)
		log_error("journal: the new mode is not applied: %s", err);
	/* new limits and auth apply to existing clients from now on */
	conn_kick_all(&srv->conns);
	srv->core.stats.last_reload = time(NULL);
	srv->core.stats.last_reload_ok = 1;
	srv->last_reload_msg[0] = '\0';
	log_info("reloaded %s: %zu filter(s)", srv->config_path,
	    nreg->nfilters);
out:
	reload_done(srv);
}


/* ---- shutdown ---- */

static void
on_stop_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server	*srv = arg;

	(void)fd;
	(void)what;
	if (saver_busy(srv->core.saver))
		return;		/* never cut a snapshot short */
	if (conn_output_pending(&srv->conns) &&
	    time(NULL) < srv->stop_deadline)
		return;
	srv->done = 1;
	event_base_loopbreak(srv->base);
}

void
server_shutdown(struct server *srv)
{
	struct timeval tv = { 0, 20000 };

	if (srv->core.stopping)
		return;
	srv->core.stopping = 1;
	srv->stop_deadline = time(NULL) + SHUTDOWN_FLUSH_SECS;
	notify_send("STOPPING=1\nSTATUS=saving and stopping");
	log_info("shutting down: saving dirty filters");
	listener_free(srv->tcp);
	listener_free(srv->unx);
	listener_free(srv->tls);
	srv->tcp = srv->unx = srv->tls = NULL;
	metrics_free(srv->metrics);
	srv->metrics = NULL;
	/* the links to the cluster's other nodes */
	if (srv->core.cluster != NULL)
		peer_shutdown(&srv->core);
	/* no more input: the keys acknowledged so far are all we save */
	conn_stop_reading_all(&srv->conns);
	if (srv->core.shutdown_asked == CORE_SHUTDOWN_NOSAVE)
		/* their keys stay in the journal, written and fsynced at
		 * the exit (persist_close), replayed at the next start */
		log_info("SHUTDOWN NOSAVE: no snapshot");
	else
		core_snapshot_dirty(&srv->core, 1);
	srv->ev_stop = event_new(srv->base, -1, EV_PERSIST, on_stop_tick, srv);
	event_add(srv->ev_stop, &tv);
}

/* ---- signals ---- */

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	switch (sig) {
	case SIGHUP:
		if (!srv->core.stopping)
			server_reload(srv);
		break;
	case SIGUSR1:
		log_info("SIGUSR1: saving dirty filters");
		core_snapshot_dirty(&srv->core, 0);
		break;
	default:
		log_info("%s received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		server_shutdown(srv);
		break;
	}
}

/* ---- start, run, free ---- */

/* A SAVE's files are written: the waiting client, if still there, gets
 * its reply (the saver knows nothing of connections). */
static void
save_done(void *arg, struct save_wait *w)
{
	(void)arg;
	if (w->then != NULL)
		w->then(w->then_arg, w);
	else if (w->owner != NULL && w->counted)
		conn_count_done(w->owner, w->count);
	else if (w->owner != NULL)
		conn_save_done(w->owner, !w->failed, w->err);
}

/* The saver's worker has finished jobs: their completions run here. */
static void
on_saver(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	saver_complete(srv->core.saver);
}

int
server_start(struct server *srv)
{
	static const int sigs[4] = { SIGHUP, SIGTERM, SIGINT, SIGUSR1 };
	struct timeval	 one = { 1, 0 };
	struct core	*core = &srv->core;

	core->stats.started = time(NULL);
	core->stats.last_reload_ok = -1;
	srv->conns.base = srv->base;
	srv->conns.core = core;
	server_fit_fd_limit(core->cfg);
	if ((core->saver = saver_start(save_done, srv)) == NULL)
		return -1;
	srv->ev_saver = event_new(srv->base, saver_fd(core->saver),
	    EV_READ | EV_PERSIST, on_saver, srv);
	if (srv->ev_saver == NULL || event_add(srv->ev_saver, NULL) == -1)
		return -1;
	/* handlers before listeners: a client (or systemd) that sees the
	 * port open may send SIGHUP at once, whose default action kills */
	for (int i = 0; i < 4; i++) {
		srv->ev_signals[i] = evsignal_new(srv->base, sigs[i], on_signal,
		    srv);
		if (srv->ev_signals[i] == NULL ||
		    event_add(srv->ev_signals[i], NULL) == -1)
			return -1;
	}
	/* users before listeners: the first client is checked against them */
	if (users_load(srv, core->cfg) == -1)
		return -1;
	/* the cluster node (opened by main before the filters) before
	 * listeners: a client's first CLUSTER SLOTS names it (issue 33) */
	if (core->cluster != NULL) {
		if (core->cluster->map == NULL)
			log_info("cluster mode: node %s, serving every slot "
			    "(no cluster map yet)", core->cluster->myid);
		else
			log_info("cluster mode: node %s, cluster map epoch "
			    "%llu, serving %u slots", core->cluster->myid,
			    (unsigned long long)core->cluster->map->epoch,
			    cluster_map_slots_of(core->cluster->map,
			    core->cluster->me));
		if (peer_start(core, srv->base) == -1) {
			log_error("cluster: out of memory");
			return -1;
		}
	}
	/* TLS first: a client that finds the plain port open finds it */
	if (core->cfg->tls_listen != NULL || core->cfg->metrics_tls) {
		SSL_CTX *ctx;

		if (tls_prepare(srv, core->cfg, &ctx) == -1)
			return -1;
		tls_commit(srv, ctx, core->cfg);
	}
	if (core->cfg->tls_listen != NULL) {
		if ((srv->tls = listener_open_tls(srv,
		    core->cfg->tls_listen)) == NULL)
			return -1;
	}
	if (core->cfg->listen != NULL && (srv->tcp = listener_open_tcp(srv,
	    core->cfg->listen, core->cfg->auth_token)) == NULL)
		return -1;
	if (core->cfg->unix_socket != NULL && (srv->unx =
	    listener_open_unix(srv, core->cfg->unix_socket,
	    core->cfg->unix_socket_mode, core->cfg->unix_socket_group)) == NULL)
		return -1;
	if (srv->tcp == NULL && srv->unx == NULL && srv->tls == NULL) {
		log_error("nothing to listen on: listen is off and no "
		    "unix_socket or tls_listen is set");
		return -1;
	}
	if (core->cfg->metrics_listen != NULL && (srv->metrics =
	    metrics_open(srv->base, core, core->cfg->metrics_listen,
	    core->cfg->metrics_tls ? &srv->conns.tls_ctx : NULL)) == NULL)
		return -1;
	srv->ev_tick = event_new(srv->base, -1, EV_PERSIST, on_tick, srv);
	if (srv->ev_tick == NULL || event_add(srv->ev_tick, &one) == -1)
		return -1;
	if ((srv->role = role_new(core, srv->base, save_done, srv)) == NULL)
		return -1;
	srv->conns.handover = role_handover;
	srv->conns.handover_arg = srv->role;
	role_start(srv->role);
	return 0;
}

/*
 * One turn of the loop, in this order:
 *   1. input: libevent runs what is ready - sockets are read, and saver
 *      completions, signals and metrics scrapes are taken;
 *   2. commands: each connection answers its complete requests as soon
 *      as they are read (conn.c), into its output buffer; with a journal
 *      the replies stay there, unreleased, and the keys answered new are
 *      appended to the journal's buffer;
 *   3. the journal: the turn's records are written, and fsynced with
 *      journal = always, once for every client of the turn (group
 *      commit: persist_turn_end);
 *   3b. replication (role.c): a primary frames the turn's records into
 *      its backlog and sends them to its replicas, captures the full
 *      syncs asked for this turn at this boundary, and counts WAITs; a
 *      replica journals where it has got to and acknowledges it, its
 *      frames being written by step 3; a REPLICAOF of the turn takes
 *      effect;
 *   4. replies released: only now do the turn's replies leave, so a
 *      client never holds an acknowledgement the journal does not; if
 *      the write failed with always, the replies that acknowledged a new
 *      key are held until the fault ends (step 5 lets them go);
 *   5. timers: the once-a-second work (server_tick);
 *   6. background work: a bounded step of a merge under way (MERGE),
 *      and of the copies of cuckoo tables snapshots wait for (saver),
 *      so that a big one never holds the loop; while work remains the
 *      next turn does not wait for events.
 * As Redis's beforeSleep writes the AOF and then flushes clients. A turn
 * that leaves requests unanswered (a batch limit) does not wait for
 * events: the next turn answers them.
 */
static void
server_turn(struct server *srv)
{
	int hold;

	/* 1 and 2 */
	if (event_base_loop(srv->base, EVLOOP_ONCE |
	    (conn_turn_pending(&srv->conns) || srv->work_pending ?
	    EVLOOP_NONBLOCK : 0)) == -1) {
		srv->done = 1;
		return;
	}
	/* 3 */
	hold = persist_turn_end(&srv->core);
	/* 3b */
	role_turn_end(srv->role);
	/* 4 */
	conn_release_turn(&srv->conns, hold);
	/* a SHUTDOWN of this turn: after its records and replies, as a
	 * SIGTERM would be */
	if (__builtin_expect(srv->core.shutdown_asked != 0, 0) &&
	    !srv->core.stopping)
		server_shutdown(srv);
	/* 5 */
	if (srv->tick_due) {
		srv->tick_due = 0;
		server_tick(srv);
	}
	/* 6 */
	srv->work_pending = command_work(&srv->core) |
	    saver_work(srv->core.saver, SAVER_COPY_STEP);
}

int
server_run(struct server *srv)
{
	struct core *core = &srv->core;

	while (!srv->done)
		server_turn(srv);
	/* a loop that ended without a shutdown still saves */
	if (!core->stopping)
		core_snapshot_dirty(core, 1);
	saver_drain(core->saver);
	for (size_t i = 0; i < core_nfilters_all(core); i++) {
		struct filter *f = core_filter_at(core, i);

		/* SHUTDOWN NOSAVE asked for no snapshot: not a failure */
		if (filter_dirty(f) &&
		    core->shutdown_asked == CORE_SHUTDOWN_NOSAVE) {
			log_info("filter %s: not snapshotted (SHUTDOWN NOSAVE)%s",
			    f->name, core->journal != NULL ? "; its keys are "
			    "in the journal" : "; journal = off: its keys since "
			    "its last snapshot are lost");
			continue;
		}
		if (filter_dirty(f)) {
			log_error("filter %s: its last snapshot failed (%s); "
			    "keys since %lld are lost", f->name,
			    f->last_save_error[0] ? f->last_save_error : "?",
			    (long long)f->last_save);
			srv->final_save_failed = 1;
		}
	}
	persist_close(core);
	return srv->final_save_failed ? 1 : 0;
}

void
server_free(struct server *srv)
{
	role_free(srv->role);
	srv->role = NULL;
	conn_close_all(&srv->conns);
	/* the saver's descriptor is still open: its event goes first */
	if (srv->ev_saver)
		event_free(srv->ev_saver);
	saver_stop(srv->core.saver);
	listener_free(srv->tcp);
	listener_free(srv->unx);
	listener_free(srv->tls);
	SSL_CTX_free(srv->conns.tls_ctx);
	srv->conns.tls_ctx = NULL;
	metrics_free(srv->metrics);
	for (int i = 0; i < 4; i++)
		if (srv->ev_signals[i] != NULL)
			event_free(srv->ev_signals[i]);
	if (srv->ev_tick)
		event_free(srv->ev_tick);
	if (srv->ev_stop)
		event_free(srv->ev_stop);
	prebuild_free(srv->prebuild);
	if (srv->core.cluster != NULL)
		peer_shutdown(&srv->core);
	cluster_free(srv->core.cluster);
	srv->core.cluster = NULL;
	core_free(&srv->core);
}
