/*
 * null_server - the I/O ceiling for seend benchmarks.
 *
 * Reads request lines and answers each with "0\r\n", doing no other work:
 * one thread, epoll, non-blocking sockets, one read and one write per
 * batch, as seend does. Whatever rate a load generator reaches against this
 * is the most any line server on this machine could answer; bench/compare
 * reports seend as a fraction of it.
 *
 *   null_server PORT            TCP on 127.0.0.1:PORT
 *   null_server /path/sock      a Unix socket
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BUFSZ	(64 * 1024)

struct client {
	int	 fd;
	char	 in[BUFSZ];
	size_t	 inlen;
	char	*out;
	size_t	 outlen, outcap;
};

static int
listen_on(const char *spec)
{
	int fd, on = 1;

	if (strchr(spec, '/') != NULL) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		unlink(spec);
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", spec);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fd == -1 || bind(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == -1)
			return -1;
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		sin.sin_port = htons((unsigned short)atoi(spec));
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fd == -1)
			return -1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
			return -1;
	}
	return listen(fd, 1024) == -1 ? -1 : fd;
}

static int
flush(struct client *c)
{
	size_t off = 0;

	while (off < c->outlen) {
		ssize_t n = write(c->fd, c->out + off, c->outlen - off);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EAGAIN)
			break;
		return -1;
	}
	memmove(c->out, c->out + off, c->outlen - off);
	c->outlen -= off;
	return 0;
}

/* Answers every complete line in the input buffer. */
static int
serve(struct client *c)
{
	ssize_t	 n = read(c->fd, c->in + c->inlen, BUFSZ - c->inlen);
	char	*p, *end, *nl;
	size_t	 lines = 0;

	if (n == 0 || (n == -1 && errno != EAGAIN))
		return -1;
	if (n > 0)
		c->inlen += (size_t)n;
	p = c->in;
	end = c->in + c->inlen;
	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		lines++;
		p = nl + 1;
	}
	if (p == c->in && c->inlen == BUFSZ)
		p = end;	/* a line longer than the buffer: drop it */
	c->inlen = (size_t)(end - p);
	memmove(c->in, p, c->inlen);
	if (c->outlen + lines * 3 > c->outcap) {
		c->outcap = (c->outlen + lines * 3) * 2;
		if ((c->out = realloc(c->out, c->outcap)) == NULL)
			return -1;
	}
	for (size_t i = 0; i < lines; i++) {
		memcpy(c->out + c->outlen, "0\r\n", 3);
		c->outlen += 3;
	}
	return flush(c);
}

int
main(int argc, char **argv)
{
	struct epoll_event	 ev, evs[256];
	int			 lfd, ep, n, on = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: null_server PORT|SOCKET-PATH\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((lfd = listen_on(argv[1])) == -1) {
		perror(argv[1]);
		return 1;
	}
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	for (;;) {
		n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;

			if (c == NULL) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);

				if (fd == -1)
					continue;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on,
				    sizeof(on));
				c = calloc(1, sizeof(*c));
				c->fd = fd;
				ev.events = EPOLLIN;
				ev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				continue;
			}
			if (serve(c) == -1) {
				close(c->fd);
				free(c->out);
				free(c);
			}
		}
	}
}
