/*
 * client.c - connecting, line reading and writing for the clients; see
 * client.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "client.h"

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

int
client_connect(const struct client_target *t, char *err, size_t errlen)
{
	if (t->path != NULL)
		return connect_unix(t, err, errlen);
	return connect_tcp(t, err, errlen);
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
