/*
 * client.c - connecting, line reading and writing for the clients; see
 * client.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "client.h"
#include "tls.h"

void
client_target_name(const struct client_target *t, char *buf, size_t len)
{
	if (t->path != NULL)
		snprintf(buf, len, "%s", t->path);
	else if (strchr(t->host, ':') != NULL)
		snprintf(buf, len, "[%s]:%s", t->host, t->port);
	else
		snprintf(buf, len, "%s:%s", t->host, t->port);
}

static int
connect_unix(const struct client_target *t, char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	int			 fd, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(t->path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "cannot connect to %s: path too long",
		    t->path);
		return -1;
	}
	strcpy(sun.sun_path, t->path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		close(fd);
		snprintf(err, errlen, "cannot connect to %s: %s", t->path,
		    strerror(saved));
		return -1;
	}
	return fd;
}

/*
 * Tries each address getaddrinfo gives, so "localhost" works whether the
 * server listens on 127.0.0.1 or ::1; the error reported is the last one.
 * No AI_ADDRCONFIG: it hides ::1 on hosts whose only IPv6 address is the
 * loopback, which is exactly where a local server is reached.
 */
static int
connect_tcp(const struct client_target *t, char *err, size_t errlen)
{
	struct addrinfo	 hints, *res, *ai;
	char		 name[300];
	int		 fd = -1, rc, saved = 0, one = 1;

	client_target_name(t, name, sizeof(name));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(t->host, t->port, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", name,
		    gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1) {
		snprintf(err, errlen, "cannot connect to %s: %s", name,
		    strerror(saved));
		return -1;
	}
	/* Requests are small and often pipelined by hand; Nagle would only
	 * add a round trip of delay to an interactive client. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- TLS: a session relayed to a socket pair ---- */

#define RELAY_BUF	16384
#define RELAY_MAX	64	/* connections a program keeps at once */

struct relay {
	SSL		*ssl;
	int		 net;		/* the TCP socket, TLS on it */
	int		 app;		/* our end of the pair */
	int		 user;		/* the caller's end (closed at exit) */
	pthread_t	 thread;
	int		 done;
	char		 up[RELAY_BUF], down[RELAY_BUF];
	size_t		 up_len, up_off, down_len, down_off;
};

static struct relay	*relays[RELAY_MAX];
static pthread_mutex_t	 relays_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX		*client_ctx;

/* What SSL_read or SSL_write asks for: POLLIN, POLLOUT, or -1 (the end). */
static int
relay_want(SSL *ssl, int r)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return POLLIN;
	case SSL_ERROR_WANT_WRITE:
		return POLLOUT;
	default:
		ERR_clear_error();
		return -1;
	}
}

/*
 * The thread: bytes the caller writes go up through SSL_write, bytes
 * SSL_read gives go down to the caller, each through its buffer, until
 * either side ends. The caller's end closing (its close, or our atexit's
 * shutdown) ends it once what it wrote is sent.
 */
static void *
relay_run(void *arg)
{
	struct relay	*r = arg;
	struct pollfd	 pfd[2];
	sigset_t	 set;
	int		 app_eof = 0, net_eof = 0, net_ev, progress, w;
	ssize_t		 n;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		net_ev = 0;
		do {
			progress = 0;
			if (!net_eof && r->down_len == 0) {
				if ((w = SSL_read(r->ssl, r->down,
				    sizeof(r->down))) > 0) {
					r->down_len = (size_t)w;
					r->down_off = 0;
					progress = 1;
				} else if ((w = relay_want(r->ssl, w)) == -1)
					net_eof = 1;
				else
					net_ev |= w;
			}
			if (r->down_off < r->down_len) {
				n = send(r->app, r->down + r->down_off,
				    r->down_len - r->down_off, MSG_NOSIGNAL);
				if (n > 0) {
					r->down_off += (size_t)n;
					if (r->down_off == r->down_len)
						r->down_len = r->down_off = 0;
					progress = 1;
				} else if (n == -1 && errno != EAGAIN &&
				    errno != EINTR)
					goto out;
			}
			if (!app_eof && r->up_len == 0) {
				n = read(r->app, r->up, sizeof(r->up));
				if (n > 0) {
					r->up_len = (size_t)n;
					r->up_off = 0;
					progress = 1;
				} else if (n == 0 || (errno != EAGAIN &&
				    errno != EINTR))
					app_eof = 1;
			}
			if (!net_eof && r->up_off < r->up_len) {
				if ((w = SSL_write(r->ssl, r->up + r->up_off,
				    (int)(r->up_len - r->up_off))) > 0) {
					r->up_off += (size_t)w;
					if (r->up_off == r->up_len)
						r->up_len = r->up_off = 0;
					progress = 1;
				} else if ((w = relay_want(r->ssl, w)) == -1)
					net_eof = 1;
				else
					net_ev |= w;
			}
		} while (progress);
		if (app_eof && r->up_len == 0) {
			(void)SSL_shutdown(r->ssl);
			goto out;
		}
		if (net_eof && r->down_len == 0)
			goto out;	/* the caller reads its end of file */
		pfd[0].fd = r->net;
		pfd[0].events = (short)(net_ev ? net_ev : POLLIN);
		pfd[1].fd = r->app;
		pfd[1].events = (short)((r->up_len == 0 && !app_eof ? POLLIN :
		    0) | (r->down_len > 0 ? POLLOUT : 0));
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			goto out;
	}
out:
	ERR_clear_error();
	shutdown(r->app, SHUT_RDWR);
	close(r->app);
	SSL_free(r->ssl);
	close(r->net);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* At exit: each relay is told the caller is done (its end shut for
 * writing), and given a moment to send what it was given. */
static void
relay_exit(void)
{
	struct timespec	 ts;

	for (int i = 0; i < RELAY_MAX; i++) {
		struct relay *r = relays[i];

		if (r == NULL)
			continue;
		if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			shutdown(r->user, SHUT_WR);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 5;
		if (pthread_timedjoin_np(r->thread, NULL, &ts) == 0)
			free(r);
		relays[i] = NULL;
	}
}

/* Drops the relays whose connection has ended (a client that reconnects
 * makes one per connection). */
static void
relay_reap(void)
{
	for (int i = 0; i < RELAY_MAX; i++)
		if (relays[i] != NULL &&
		    __atomic_load_n(&relays[i]->done, __ATOMIC_ACQUIRE)) {
			pthread_join(relays[i]->thread, NULL);
			free(relays[i]);
			relays[i] = NULL;
		}
}

static int
connect_tls(const struct client_target *t, int fd, char *err, size_t errlen)
{
	static int		 hooked;
	struct tls_settings	 ts = { 0 };
	struct relay		*r = NULL;
	char			 name[300], why[256];
	int			 pair[2] = { -1, -1 }, slot = -1, rc;
	long			 vr;

	client_target_name(t, name, sizeof(name));
	pthread_mutex_lock(&relays_lock);
	relay_reap();
	for (int i = 0; i < RELAY_MAX && slot == -1; i++)
		if (relays[i] == NULL)
			slot = i;
	if (slot == -1) {
		snprintf(err, errlen, "%s: too many TLS connections", name);
		goto fail;
	}
	if (client_ctx == NULL) {
		ts.cert_file = t->cert;
		ts.key_file = t->key;
		ts.ca_cert_file = t->cacert;
		ts.protocols = TLS_PROTO_DEFAULT;
		if ((client_ctx = tls_client_ctx_new(&ts, why,
		    sizeof(why))) == NULL) {
			snprintf(err, errlen, "TLS: %s", why);
			goto fail;
		}
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->ssl = SSL_new(client_ctx)) == NULL ||
	    SSL_set_fd(r->ssl, fd) != 1) {
		snprintf(err, errlen, "TLS: out of memory");
		goto fail;
	}
	/* the name the server's certificate is checked against, and
	 * SNI, unless it is an address */
	if (strspn(t->host, "0123456789.:abcdefABCDEF") != strlen(t->host))
		SSL_set_tlsext_host_name(r->ssl, t->host);
	ERR_clear_error();
	if ((rc = SSL_connect(r->ssl)) != 1) {
		if ((vr = SSL_get_verify_result(r->ssl)) != X509_V_OK)
			snprintf(why, sizeof(why), "the server's certificate: "
			    "%s", X509_verify_cert_error_string(vr));
		else if (tls_error_string(why, sizeof(why))[0] == '\0')
			snprintf(why, sizeof(why), "the server closed the "
			    "connection (is %.200s its TLS port?)", name);
		snprintf(err, errlen, "cannot connect to %s: TLS handshake "
		    "failed: %s", name, why);
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	r->net = fd;
	r->app = pair[0];
	r->user = pair[1];
	if (client_set_nonblock(fd, 1) == -1 ||
	    client_set_nonblock(pair[0], 1) == -1 ||
	    pthread_create(&r->thread, NULL, relay_run, r) != 0) {
		snprintf(err, errlen, "TLS: cannot start its thread");
		goto fail;
	}
	relays[slot] = r;
	if (!hooked) {
		hooked = 1;
		atexit(relay_exit);
	}
	pthread_mutex_unlock(&relays_lock);
	return pair[1];
fail:
	pthread_mutex_unlock(&relays_lock);
	if (r != NULL)
		SSL_free(r->ssl);
	free(r);
	if (pair[0] != -1) {
		close(pair[0]);
		close(pair[1]);
	}
	close(fd);
	return -1;
}

int
client_connect(const struct client_target *t, char *err, size_t errlen)
{
	int fd;

	if (t->path != NULL)
		return connect_unix(t, err, errlen);
	if ((fd = connect_tcp(t, err, errlen)) == -1 || !t->tls)
		return fd;
	return connect_tls(t, fd, err, errlen);
}

int
client_set_nonblock(int fd, int on)
{
	int	 flags;

	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return -1;
	flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, flags);
}

/* send(2) with MSG_NOSIGNAL: a server that goes away must give EPIPE, not
 * kill the client with SIGPIPE before it can say what happened. */
int
client_write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;
	struct pollfd	 pfd;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				pfd.fd = fd;
				pfd.events = POLLOUT;
				if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
					return -1;
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
client_reader_init(struct client_reader *r, int fd, size_t cap)
{
	r->fd = fd;
	r->cap = cap;
	r->start = r->end = 0;
	if ((r->buf = malloc(cap)) == NULL)
		return -1;
	return 0;
}

void
client_reader_free(struct client_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

int
client_reader_next(struct client_reader *r, char **line, size_t *len)
{
	char	*p = r->buf + r->start, *nl;
	size_t	 n;

	if (r->start == r->end)
		return 0;
	if ((nl = memchr(p, '\n', r->end - r->start)) == NULL)
		return 0;
	n = (size_t)(nl - p);
	r->start += n + 1;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	p[n] = '\0';
	*line = p;
	*len = n;
	return 1;
}

ssize_t
client_reader_fill(struct client_reader *r)
{
	ssize_t	 n;
	char	*nbuf;

	/* Slide the partial line to the front, then grow if it fills the
	 * whole buffer: no reply line is long, but an INFO value might be. */
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end == r->cap) {
		if ((nbuf = realloc(r->buf, r->cap * 2)) == NULL)
			return -1;
		r->buf = nbuf;
		r->cap *= 2;
	}
	do {
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
	} while (n == -1 && errno == EINTR);
	if (n > 0)
		r->end += (size_t)n;
	return n;
}

int
client_reader_line(struct client_reader *r, char **line, size_t *len)
{
	ssize_t	 n;

	for (;;) {
		if (client_reader_next(r, line, len))
			return 1;
		if ((n = client_reader_fill(r)) == 0)
			return 0;
		if (n == -1)
			return -1;
	}
}

int
client_auth(int fd, struct client_reader *r, const char *token, char *err,
    size_t errlen)
{
	char	*line, *req;
	size_t	 len;
	int	 rc;

	if (asprintf(&req, "AUTH %s\n", token) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = client_write_all(fd, req, strlen(req));
	free(req);
	if (rc == -1) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		return -1;
	}
	rc = client_reader_line(r, &line, &len);
	if (rc == -1) {
		snprintf(err, errlen, "read: %s", strerror(errno));
		return -1;
	}
	if (rc == 0) {
		snprintf(err, errlen, "connection closed by server");
		return -1;
	}
	if (strcmp(line, "OK") != 0) {
		snprintf(err, errlen, "AUTH: %s", line);
		return -1;
	}
	return 0;
}

size_t
client_encode_key(char *dst, const char *src, size_t len)
{
	size_t	 i, o = 0;

	for (i = 0; i < len; i++) {
		if (src[i] == ' ') {
			memcpy(dst + o, "%20", 3);
			o += 3;
		} else if (src[i] == '\t') {
			memcpy(dst + o, "%09", 3);
			o += 3;
		} else
			dst[o++] = src[i];
	}
	return o;
}

char *
client_strip_brackets(char *host)
{
	size_t	 len = strlen(host);

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host[len - 1] = '\0';
		return host + 1;
	}
	return host;
}

int
client_target_option(int ch, char *arg, struct client_target *t,
    const char **token)
{
	switch (ch) {
	case 'h':
		t->host = client_strip_brackets(arg);
		return 1;
	case 'p':
		t->port = arg;
		return 1;
	case 's':
		t->path = arg;
		return 1;
	case 'a':
		*token = arg;
		return 1;
	case CLIENT_OPT_TLS:
		t->tls = 1;
		return 1;
	case CLIENT_OPT_CACERT:
		t->cacert = arg;
		return 1;
	case CLIENT_OPT_CERT:
		t->cert = arg;
		return 1;
	case CLIENT_OPT_KEY:
		t->key = arg;
		return 1;
	}
	return 0;
}

int
client_send_some(int fd, const char *p, size_t len, size_t *off)
{
	ssize_t	 n;

	while (*off < len) {
		n = send(fd, p + *off, len - *off, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		*off += (size_t)n;
	}
	return 0;
}
