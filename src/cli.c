/*
 * cli.c - seen-cli: one-shot commands, an interactive prompt, and a pipe
 * mode that prints only the URLs the server has not seen before.
 *
 * The protocol is line based and replies come back in request order, so the
 * pipe mode keeps a window of requests in flight and pairs each reply with
 * the oldest outstanding line. Reading stdin, writing the socket and reading
 * the socket all go through one poll(2) loop: a blocking write could
 * otherwise wait on a server that is itself waiting for us to read.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli_cluster.h"
#include "cli_dump.h"
#include "cli_import.h"
#include "cli_plan.h"
#include "cli_stat.h"
#include "client.h"

#define READ_BUF	65536
/* Requests in flight in pipe mode: enough to hide the round trip, small
 * enough that the replies never fill the server's output buffer. */
#define PIPE_WINDOW	1024
/* Redirections followed for one command, as redis-cli -c. */
#define MAX_HOPS	5
/* A request answered TRYAGAIN (its slot is being handed over to another
 * node: cluster_move.h) is sent again this many times at most, after
 * 10, 20, 40 ... ms (at most 500 ms apart): about 15 s in all, far more
 * than a hand-over's pause. */
#define TRYAGAIN_TRIES	40
/* Connections pipe mode keeps to the nodes redirections name. */
#define PIPE_REDIR_CONNS	16

enum mode {
	MODE_COMMAND,		/* command on the command line, or lines on stdin */
	MODE_NEW,		/* --new: SEEN each line, print the new ones */
	MODE_CHECK,		/* --check: CHECK each line, print the unknown ones */
};

struct cli {
	struct client_target	 target;
	char			 name[300];	/* target, for messages */
	const char		*token;
	const char		*filter;
	enum mode		 mode;
	int			 fd;
	struct client_reader	 rd;
	char			 host[256];	/* where a redirection */
	char			 port[8];	/* sent us */
};

/* One line of the pipe-mode window: kept so it can be printed as it was
 * read (not as encoded) once its reply arrives. */
struct slot {
	char		*line;
	size_t		 len;
	size_t		 cap;
	unsigned long	 lineno;
};

static const char *const multiline_commands[] = { "FILTERS", "INFO" };

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "[command [arg ...]]\n"
	    "       (each form takes --tls [--cacert file] [--cert file "
	    "--key file] too)\n"
	    "       seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "--new | --check\n"
	    "                [-f filter] < urls\n"
	    "       seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "stat [-i seconds] [-n count]\n"
	    "       seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "import\n"
	    "                redis://[[user]:password@]host[:port][/db] KEY "
	    "[--filter NAME]\n"
	    "       seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "dump FILTER FILE\n"
	    "       seen-cli [-h host] [-p port] [-s socket] [-a token] "
	    "restore FILTER FILE\n"
	    "       seen-cli [-a token] copy SOURCE/FILTER DEST/FILTER\n"
	    "                (SOURCE, DEST: host:port, [v6addr]:port or a "
	    "socket path)\n"
	    "       seen-cli plan CAPACITY ERROR_RATE [--growth G|off] "
	    "[--expire DURATION]\n"
	    "       seen-cli [-a token] cluster create|add-node|del-node|"
	    "check|fix|info ...\n"
	    "                (seen-cli cluster help: the verbs)\n"
	    "\n"
	    "  -h host       server host name or address (default %s)\n"
	    "  -p port       server TCP port (default %s)\n"
	    "  -s socket     connect to a Unix socket instead of TCP\n"
	    "  -a token      send AUTH token first\n"
	    "  --tls         connect with TLS (seend's tls_listen)\n"
	    "  --cacert file CA certificates to verify the server with "
	    "(default: the system's)\n"
	    "  --cert file   with --tls: the client certificate to present\n"
	    "  --key file    with --tls: its private key\n"
	    "  --new         read URLs from stdin, record them (SEEN), print "
	    "the new ones\n"
	    "  --check       read URLs from stdin, record nothing (CHECK), "
	    "print the unknown ones\n"
	    "  -f filter     with --new or --check: use this filter\n"
	    "  -c            follow MOVED and ASK (always on; taken as "
	    "redis-cli's -c)\n"
	    "  -V, --version print the version\n"
	    "  --help        print this help\n"
	    "\n"
	    "Without a command, reads commands from stdin (a prompt if it is "
	    "a terminal).\n", SEEN_DEFAULT_HOST, SEEN_DEFAULT_PORT);
}

static void
cli_warn(const char *fmt, const char *arg)
{
	fprintf(stderr, "seen-cli: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
}

static int
cli_connect(struct cli *c)
{
	char	 err[512];

	if ((c->fd = client_connect(&c->target, err, sizeof(err))) == -1) {
		cli_warn("%s", err);
		return -1;
	}
	c->rd.fd = c->fd;
	c->rd.start = c->rd.end = 0;
	if (c->token != NULL &&
	    client_auth(c->fd, &c->rd, c->token, err, sizeof(err)) == -1) {
		cli_warn("%s", err);
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

static void
cli_disconnect(struct cli *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
}

/* The length of the first token of a request line, after leading blanks. */
static const char *
first_token(const char *line, size_t *len)
{
	while (*line == ' ' || *line == '\t')
		line++;
	*len = strcspn(line, " \t");
	return line;
}

static int
is_multiline(const char *line)
{
	const char	*tok;
	size_t		 len, i;

	tok = first_token(line, &len);
	for (i = 0; i < sizeof(multiline_commands) /
	    sizeof(multiline_commands[0]); i++)
		if (strlen(multiline_commands[i]) == len &&
		    strncasecmp(tok, multiline_commands[i], len) == 0)
			return 1;
	return 0;
}

static int
is_error(const char *reply)
{
	return strncmp(reply, "ERR", 3) == 0 &&
	    (reply[3] == ' ' || reply[3] == '\0');
}

/*
 * "ERR MOVED <slot> <host>:<port>" or "ERR ASK ...": 1 with where to in
 * host and port (ask set for ASK), else 0.
 */
static int
parse_redirect(const char *reply, char *host, size_t hlen, char *port,
    size_t plen, int *ask)
{
	const char	*p, *colon;
	size_t		 len;

	if (strncmp(reply, "ERR MOVED ", 10) == 0) {
		p = reply + 10;
		*ask = 0;
	} else if (strncmp(reply, "ERR ASK ", 8) == 0) {
		p = reply + 8;
		*ask = 1;
	} else
		return 0;
	p += strspn(p, "0123456789");
	if (*p++ != ' ' || (colon = strrchr(p, ':')) == NULL ||
	    colon == p || strspn(colon + 1, "0123456789") !=
	    strlen(colon + 1) || colon[1] == '\0' ||
	    strlen(colon + 1) >= plen)
		return 0;
	len = (size_t)(colon - p);
	if (*p == '[' && len >= 2 && p[len - 1] == ']') {
		p++;
		len -= 2;
	}
	if (len == 0 || len >= hlen)
		return 0;
	memcpy(host, p, len);
	host[len] = '\0';
	snprintf(port, plen, "%s", colon + 1);
	return 1;
}

/* Whether reply is the line protocol's TRYAGAIN (ERR TRYAGAIN ...). */
static int
tryagain(const char *reply)
{
	return strncmp(reply, "ERR TRYAGAIN ", 13) == 0;
}

/* The wait before try n + 1 of a request answered TRYAGAIN. */
static void
tryagain_wait(int n)
{
	useconds_t us = 10000u << (n < 6 ? n : 6);

	usleep(us < 500000 ? us : 500000);
}

/*
 * Moves the connection to the node a redirection names (for the rest of
 * the session, as redis-cli -c does), and sends ASKING there first for an
 * ASK. Returns 0, or -1 after saying why.
 */
static int
cli_redirect(struct cli *c, const char *host, const char *port, int ask)
{
	char	*reply;
	size_t	 len;

	cli_disconnect(c);
	snprintf(c->host, sizeof(c->host), "%s", host);
	snprintf(c->port, sizeof(c->port), "%s", port);
	c->target.host = c->host;
	c->target.port = c->port;
	c->target.path = NULL;
	client_target_name(&c->target, c->name, sizeof(c->name));
	if (cli_connect(c) == -1)
		return -1;
	if (!ask)
		return 0;
	if (client_write_all(c->fd, "ASKING\n", 7) == -1 ||
	    client_reader_line(&c->rd, &reply, &len) != 1) {
		fprintf(stderr, "seen-cli: %s: ASKING failed\n", c->name);
		cli_disconnect(c);
		return -1;
	}
	return 0;
}

/*
 * Sends one request line and prints its reply: one line, or for FILTERS and
 * INFO the lines up to END (not END itself, which is framing). An error
 * reply goes to errfp. Returns 0, 1 for an error reply, or -1 if the
 * connection failed (it is closed then).
 */
static int
cli_command(struct cli *c, const char *line, FILE *errfp)
{
	char	*reply, *req;
	size_t	 len, rlen = strlen(line);
	int	 rc, multi = is_multiline(line), tries = 0;

	if ((req = malloc(rlen + 1)) == NULL) {
		cli_warn("%s", strerror(errno));
		return -1;
	}
	memcpy(req, line, rlen);
	req[rlen] = '\n';
	for (int hops = 0;; hops++) {
		char	 host[256], port[8];
		int	 ask;

		rc = client_write_all(c->fd, req, rlen + 1);
		if (rc == -1) {
			fprintf(stderr, "seen-cli: write to %s: %s\n",
			    c->name, strerror(errno));
			free(req);
			cli_disconnect(c);
			return -1;
		}
		/* the first line of any reply, a multi-line one too, may
		 * be a redirection: the key or filter lives elsewhere */
		rc = client_reader_line(&c->rd, &reply, &len);
		/* a slot being handed over: the same node again, soon */
		if (rc == 1 && tryagain(reply) && tries < TRYAGAIN_TRIES) {
			tryagain_wait(tries++);
			hops--;
			continue;
		}
		if (rc != 1 || hops == MAX_HOPS || !parse_redirect(reply,
		    host, sizeof(host), port, sizeof(port), &ask))
			break;
		if (cli_redirect(c, host, port, ask) == -1) {
			free(req);
			return -1;
		}
	}
	free(req);
	for (int first = 1;; first = 0) {
		if (!first)
			rc = client_reader_line(&c->rd, &reply, &len);
		if (rc <= 0) {
			if (rc == 0)
				fprintf(stderr, "seen-cli: %s closed the "
				    "connection\n", c->name);
			else
				fprintf(stderr, "seen-cli: read from %s: %s\n",
				    c->name, strerror(errno));
			cli_disconnect(c);
			return -1;
		}
		if (first && is_error(reply)) {
			fprintf(errfp, "%s\n", reply);
			return 1;
		}
		if (!multi || strcmp(reply, "END") == 0)
			break;
		printf("%s\n", reply);
	}
	if (!multi)
		printf("%s\n", reply);
	return 0;
}

/*
 * The command line's words joined by spaces. Whitespace inside a word is
 * percent-encoded so that `seen-cli SEEN "http://a/b c"` stays one key, as
 * in pipe mode; a newline cannot be sent at all.
 */
static char *
join_args(int argc, char **argv)
{
	size_t	 len = 0, o = 0;
	char	*buf;
	int	 i;

	for (i = 0; i < argc; i++) {
		if (strpbrk(argv[i], "\r\n") != NULL) {
			cli_warn("argument contains a line break: %s", argv[i]);
			return NULL;
		}
		len += 3 * strlen(argv[i]) + 1;
	}
	if ((buf = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < argc; i++) {
		if (i > 0)
			buf[o++] = ' ';
		o += client_encode_key(buf + o, argv[i], strlen(argv[i]));
	}
	buf[o] = '\0';
	return buf;
}

static int
is_blank(const char *s)
{
	return s[strspn(s, " \t")] == '\0';
}

static int
run_oneshot(struct cli *c, int argc, char **argv)
{
	char	*line;
	int	 rc;

	/* the server answers nothing to a blank line: do not wait for it */
	if (is_blank(argv[0])) {
		cli_warn("%s", "empty command");
		return 2;
	}
	if ((line = join_args(argc, argv)) == NULL)
		return 1;
	rc = cli_command(c, line, stderr);
	free(line);
	return rc == 0 ? 0 : 1;
}

/*
 * Commands read from stdin: a prompt when it is a terminal (errors then are
 * part of the conversation, on stdout), otherwise a script whose exit status
 * says whether any command failed. A dropped connection is re-opened at the
 * next command at the prompt, so restarting the server does not end the
 * session.
 */
static int
run_lines(struct cli *c, int interactive)
{
	char	*line = NULL, *nl;
	size_t	 cap = 0;
	int	 status = 0, rc, eof = 0;
	size_t	 toklen;
	const char *tok;

	for (;;) {
		if (interactive) {
			printf("seend %s> ", c->name);
			fflush(stdout);
		}
		if (getline(&line, &cap, stdin) == -1) {
			eof = 1;
			break;
		}
		if ((nl = strpbrk(line, "\r\n")) != NULL)
			*nl = '\0';
		/* The server answers nothing to an empty line, so sending
		 * one would leave us waiting for a reply forever. */
		if (is_blank(line))
			continue;
		tok = first_token(line, &toklen);
		if (interactive && toklen == 4 && strncasecmp(tok, "exit", 4)
		    == 0)
			break;
		if (c->fd == -1 && cli_connect(c) == -1) {
			status = 1;
			if (interactive)
				continue;
			break;
		}
		rc = cli_command(c, line, interactive ? stdout : stderr);
		if (rc != 0)
			status = 1;
		if (rc == -1 && !interactive)
			break;
		if (toklen == 4 && strncasecmp(tok, "quit", 4) == 0)
			break;
	}
	free(line);
	if (interactive) {
		/* leave the shell's prompt on a line of its own */
		if (eof)
			putchar('\n');
		return 0;
	}
	return status;
}

static int
slot_set(struct slot *s, const char *line, size_t len, unsigned long lineno)
{
	char	*n;

	if (len + 1 > s->cap) {
		if ((n = realloc(s->line, len + 1)) == NULL)
			return -1;
		s->line = n;
		s->cap = len + 1;
	}
	memcpy(s->line, line, len);
	s->line[len] = '\0';
	s->len = len;
	s->lineno = lineno;
	return 0;
}

struct outbuf {
	char	*buf;
	size_t	 len;		/* bytes held */
	size_t	 off;		/* bytes already sent */
	size_t	 cap;
};

static int
outbuf_reserve(struct outbuf *o, size_t need)
{
	char	*n;
	size_t	 cap;

	if (o->off > 0 && o->off == o->len)
		o->off = o->len = 0;
	if (o->len + need <= o->cap)
		return 0;
	if (o->off > 0) {
		memmove(o->buf, o->buf + o->off, o->len - o->off);
		o->len -= o->off;
		o->off = 0;
		if (o->len + need <= o->cap)
			return 0;
	}
	cap = o->cap ? o->cap : 65536;
	while (cap < o->len + need)
		cap *= 2;
	if ((n = realloc(o->buf, cap)) == NULL)
		return -1;
	o->buf = n;
	o->cap = cap;
	return 0;
}

/* Sends what the socket takes now. Returns 0, or -1 on a write error. */
static int
outbuf_flush(struct outbuf *o, int fd)
{
	return client_send_some(fd, o->buf, o->len, &o->off);
}

struct pipe_state {
	struct slot	 slots[PIPE_WINDOW];
	size_t		 head;		/* oldest request in flight */
	size_t		 count;		/* requests in flight */
	struct outbuf	 out;
	const char	*verb;		/* "SEEN" or "CHECK" */
	unsigned long	 errors;
	/* the other nodes of a cluster that redirections named */
	struct redir {
		char			 host[256];
		char			 port[8];
		int			 fd;
		struct client_reader	 rd;
	}		 redir[PIPE_REDIR_CONNS];
	size_t		 nredir;
};

static int
pipe_enqueue(struct cli *c, struct pipe_state *ps, const char *line,
    size_t len, unsigned long lineno)
{
	struct slot	*s = &ps->slots[(ps->head + ps->count) % PIPE_WINDOW];
	size_t		 flen = c->filter ? strlen(c->filter) + 1 : 0;
	struct outbuf	*o = &ps->out;

	if (slot_set(s, line, len, lineno) == -1 ||
	    outbuf_reserve(o, strlen(ps->verb) + 1 + flen + 3 * len + 1) == -1)
		return -1;
	o->len += (size_t)sprintf(o->buf + o->len, "%s ", ps->verb);
	if (c->filter != NULL)
		o->len += (size_t)sprintf(o->buf + o->len, "%s ", c->filter);
	o->len += client_encode_key(o->buf + o->len, line, len);
	o->buf[o->len++] = '\n';
	ps->count++;
	return 0;
}

/* A connection to host:port for redirected lines, opened once. */
static struct redir *
redir_conn(struct cli *c, struct pipe_state *ps, const char *host,
    const char *port)
{
	struct client_target	 t = c->target;
	struct redir		*r;
	char			 err[512], name[300];
	size_t			 i;

	for (i = 0; i < ps->nredir; i++)
		if (strcmp(ps->redir[i].host, host) == 0 &&
		    strcmp(ps->redir[i].port, port) == 0)
			return &ps->redir[i];
	/* a cluster has more nodes than kept: the first one goes */
	if (ps->nredir == PIPE_REDIR_CONNS) {
		close(ps->redir[0].fd);
		client_reader_free(&ps->redir[0].rd);
		memmove(&ps->redir[0], &ps->redir[1], (PIPE_REDIR_CONNS - 1) *
		    sizeof(ps->redir[0]));
		ps->nredir--;
	}
	r = &ps->redir[ps->nredir];
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->port, sizeof(r->port), "%s", port);
	t.host = r->host;
	t.port = r->port;
	t.path = NULL;
	client_target_name(&t, name, sizeof(name));
	if ((r->fd = client_connect(&t, err, sizeof(err))) == -1) {
		cli_warn("%s", err);
		return NULL;
	}
	if (client_reader_init(&r->rd, r->fd, READ_BUF) == -1) {
		cli_warn("%s", strerror(errno));
		close(r->fd);
		return NULL;
	}
	if (c->token != NULL && client_auth(r->fd, &r->rd, c->token, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "seen-cli: %s: %s\n", name, err);
		close(r->fd);
		client_reader_free(&r->rd);
		return NULL;
	}
	ps->nredir++;
	return r;
}

static void
redir_close_all(struct pipe_state *ps)
{
	for (size_t i = 0; i < ps->nredir; i++) {
		close(ps->redir[i].fd);
		client_reader_free(&ps->redir[i].rd);
	}
	ps->nredir = 0;
}

/*
 * A line the server redirected (reply is its ERR MOVED or ASK) or asked
 * for again (ERR TRYAGAIN): sent again to the node named (or the same),
 * there and then, so that the answers keep the input's order. The final answer goes into out. Returns 0, or -1 when a
 * node cannot be reached (said).
 */
static int
pipe_redirect(struct cli *c, struct pipe_state *ps, const struct slot *s,
    const char *reply, char *out, size_t outlen)
{
	struct redir	*r;
	char		 host[256], port[8], *req, *line;
	size_t		 len, rlen, flen;
	int		 ask, hops, rc = -1, tries = 0;

	flen = c->filter != NULL ? strlen(c->filter) + 1 : 0;
	if ((req = malloc(strlen(ps->verb) + 1 + flen + 3 * s->len + 16)) ==
	    NULL)
		return -1;
	rlen = (size_t)sprintf(req, "%s ", ps->verb);
	if (c->filter != NULL)
		rlen += (size_t)sprintf(req + rlen, "%s ", c->filter);
	rlen += client_encode_key(req + rlen, s->line, s->len);
	req[rlen++] = '\n';
	snprintf(out, outlen, "%s", reply);
	/* TRYAGAIN goes back to the node that answered it: the pipe's own
	 * (by TCP: a second connection, so that the window keeps its order)
	 * or the last one redirected to */
	if (c->target.path == NULL) {
		snprintf(host, sizeof(host), "%s", c->target.host);
		snprintf(port, sizeof(port), "%s", c->target.port);
	} else
		host[0] = '\0';
	for (hops = 0; hops < MAX_HOPS; hops++) {
		if (tryagain(out) && host[0] != '\0' &&
		    tries < TRYAGAIN_TRIES) {
			tryagain_wait(tries++);
			ask = 0;
			hops--;
		} else if (!parse_redirect(out, host, sizeof(host), port,
		    sizeof(port), &ask))
			break;
		if ((r = redir_conn(c, ps, host, port)) == NULL)
			goto done;
		if ((ask && (client_write_all(r->fd, "ASKING\n", 7) == -1 ||
		    client_reader_line(&r->rd, &line, &len) != 1)) ||
		    client_write_all(r->fd, req, rlen) == -1 ||
		    client_reader_line(&r->rd, &line, &len) != 1) {
			fprintf(stderr, "seen-cli: %s:%s: the connection "
			    "failed\n", host, port);
			goto done;
		}
		snprintf(out, outlen, "%s", line);
	}
	rc = 0;
done:
	free(req);
	return rc;
}

/* Pairs each complete reply with the oldest line in flight. Returns 0, or
 * -1 if the server sent a reply nobody asked for. */
static int
pipe_replies(struct cli *c, struct pipe_state *ps)
{
	struct slot	*s;
	char		*reply, final[512], host[256], port[8];
	size_t		 len;
	int		 ask;

	while (client_reader_next(&c->rd, &reply, &len)) {
		if (ps->count == 0) {
			fprintf(stderr, "seen-cli: unexpected reply from %s: "
			    "%s\n", c->name, reply);
			return -1;
		}
		s = &ps->slots[ps->head];
		ps->head = (ps->head + 1) % PIPE_WINDOW;
		ps->count--;
		if (tryagain(reply) || parse_redirect(reply, host,
		    sizeof(host), port, sizeof(port), &ask)) {
			if (pipe_redirect(c, ps, s, reply, final,
			    sizeof(final)) == -1)
				return -1;
			reply = final;
		}
		if (strcmp(reply, "0") == 0) {
			fwrite(s->line, 1, s->len, stdout);
			putchar('\n');
		} else if (strcmp(reply, "1") != 0) {
			fprintf(stderr, "seen-cli: line %lu: %s\n", s->lineno,
			    reply);
			ps->errors++;
		}
	}
	return 0;
}

/*
 * --new and --check. stdin is read through a client_reader too: it frames
 * lines the same way (dropping "\r\n") and grows for long ones.
 */
static int
run_pipe(struct cli *c)
{
	struct pipe_state	*ps;
	struct client_reader	 in;
	struct pollfd		 pfd[2];
	char			*line;
	size_t			 len;
	unsigned long		 lineno = 0;
	int			 in_eof = 0, in_done = 0, status = 1;
	ssize_t			 n;

	if ((ps = calloc(1, sizeof(*ps))) == NULL ||
	    client_reader_init(&in, STDIN_FILENO, READ_BUF) == -1) {
		cli_warn("%s", strerror(errno));
		free(ps);
		return 1;
	}
	ps->verb = c->mode == MODE_NEW ? "SEEN" : "CHECK";
	if (client_set_nonblock(c->fd, 1) == -1) {
		cli_warn("fcntl: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		while (!in_done && ps->count < PIPE_WINDOW) {
			if (client_reader_next(&in, &line, &len)) {
				lineno++;
				if (len > 0 && pipe_enqueue(c, ps, line, len,
				    lineno) == -1)
					goto nomem;
				continue;
			}
			if (in_eof) {
				/* a last line without a newline */
				len = in.end - in.start;
				if (len > 0 && in.buf[len - 1 + in.start] ==
				    '\r')
					len--;
				if (len > 0 && pipe_enqueue(c, ps,
				    in.buf + in.start, len, ++lineno) == -1)
					goto nomem;
				in.start = in.end;
				in_done = 1;
			}
			break;
		}
		if (outbuf_flush(&ps->out, c->fd) == -1) {
			fprintf(stderr, "seen-cli: write to %s: %s\n", c->name,
			    strerror(errno));
			goto out;
		}
		if (in_done && ps->count == 0)
			break;

		pfd[0].fd = c->fd;
		pfd[0].events = 0;
		if (ps->count > 0)
			pfd[0].events |= POLLIN;
		if (ps->out.off < ps->out.len)
			pfd[0].events |= POLLOUT;
		pfd[1].fd = in_eof || ps->count >= PIPE_WINDOW ?
		    -1 : STDIN_FILENO;
		pfd[1].events = POLLIN;
		/* Print what is known before waiting, so a slow producer
		 * (tail -f) sees its new URLs promptly. */
		fflush(stdout);
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			cli_warn("poll: %s", strerror(errno));
			goto out;
		}
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((n = client_reader_fill(&in)) == 0)
				in_eof = 1;
			else if (n == -1 && errno != EAGAIN) {
				cli_warn("read stdin: %s", strerror(errno));
				goto out;
			}
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = client_reader_fill(&c->rd);
			if (n == 0) {
				fprintf(stderr, "seen-cli: %s closed the "
				    "connection with %zu requests "
				    "unanswered\n", c->name, ps->count);
				goto out;
			}
			if (n == -1 && errno != EAGAIN) {
				fprintf(stderr, "seen-cli: read from %s: %s\n",
				    c->name, strerror(errno));
				goto out;
			}
			if (pipe_replies(c, ps) == -1)
				goto out;
		}
	}
	status = ps->errors > 0 ? 1 : 0;
	goto out;
nomem:
	cli_warn("%s", strerror(errno));
out:
	if (fflush(stdout) == EOF) {
		cli_warn("stdout: %s", strerror(errno));
		status = 1;
	}
	for (size_t i = 0; i < PIPE_WINDOW; i++)
		free(ps->slots[i].line);
	free(ps->out.buf);
	redir_close_all(ps);
	free(ps);
	client_reader_free(&in);
	return status;
}

/* "[::1]" as given to -h is "::1" to getaddrinfo. */
int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help",	no_argument,		NULL, 'H' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "new",	no_argument,		NULL, 'N' },
		{ "check",	no_argument,		NULL, 'C' },
		{ "filter",	required_argument,	NULL, 'f' },
		{ "host",	required_argument,	NULL, 'h' },
		{ "port",	required_argument,	NULL, 'p' },
		{ "socket",	required_argument,	NULL, 's' },
		CLIENT_TLS_LONGOPTS,
		{ NULL,		0,			NULL, 0 },
	};
	struct cli	 c;
	int		 ch, status;

	memset(&c, 0, sizeof(c));
	c.fd = -1;
	c.target.host = SEEN_DEFAULT_HOST;
	c.target.port = SEEN_DEFAULT_PORT;
	c.mode = MODE_COMMAND;

	/* "+": options end at the command, so its arguments may start
	 * with "-" */
	while ((ch = getopt_long(argc, argv, "+h:p:s:a:f:cV", longopts, NULL))
	    != -1) {
		if (client_target_option(ch, optarg, &c.target, &c.token))
			continue;
		switch (ch) {
		case 'f':
			c.filter = optarg;
			break;
		case 'c':	/* redis-cli's: redirections are always
				 * followed */
			break;
		case 'N':
		case 'C':
			if (c.mode != MODE_COMMAND &&
			    c.mode != (ch == 'N' ? MODE_NEW : MODE_CHECK)) {
				cli_warn("%s", "--new and --check exclude each "
				    "other");
				return 2;
			}
			c.mode = ch == 'N' ? MODE_NEW : MODE_CHECK;
			break;
		case 'V':
			printf("seen-cli %s\n", SEEN_VERSION);
			return 0;
		case 'H':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (c.mode != MODE_COMMAND && argc > 0) {
		cli_warn("%s", "--new and --check read URLs from stdin and take "
		    "no command");
		return 2;
	}
	if (c.mode == MODE_COMMAND && c.filter != NULL) {
		cli_warn("%s", "-f is for --new and --check; give the filter in "
		    "the command instead");
		return 2;
	}
	if (c.filter != NULL && (c.filter[0] == '\0' ||
	    strpbrk(c.filter, " \t\r\n") != NULL)) {
		cli_warn("%s", "a filter name cannot be empty or hold whitespace");
		return 2;
	}
	client_target_name(&c.target, c.name, sizeof(c.name));
	if (c.mode == MODE_COMMAND && argc > 0 && strcmp(argv[0], "plan") == 0)
		return cli_plan(argc, argv);	/* no server needed */
	if (c.mode == MODE_COMMAND && argc > 0 && strcmp(argv[0], "stat") == 0)
		return cli_stat(&c.target, c.token, c.name, argc, argv);
	if (c.mode == MODE_COMMAND && argc > 0 &&
	    strcmp(argv[0], "import") == 0)
		return cli_import(&c.target, c.token, c.name, argc, argv);
	if (c.mode == MODE_COMMAND && argc > 0 &&
	    (strcmp(argv[0], "dump") == 0 || strcmp(argv[0], "restore") == 0))
		return cli_dump(&c.target, c.token, c.name, argc, argv);
	if (c.mode == MODE_COMMAND && argc > 0 && strcmp(argv[0], "copy") == 0)
		return cli_copy(c.token, argc, argv);	/* its own servers */
	/* "cluster <verb> ...", but the server's CLUSTER INFO, KEYSLOT and
	 * MYID are sent as they are */
	if (c.mode == MODE_COMMAND && argc > 0 &&
	    strcmp(argv[0], "cluster") == 0 && !(argc > 1 &&
	    ((strcasecmp(argv[1], "info") == 0 && argc == 2) ||
	    strcasecmp(argv[1], "keyslot") == 0 ||
	    strcasecmp(argv[1], "myid") == 0)))
		return cli_cluster(&c.target, c.token, argc, argv);
	if (client_reader_init(&c.rd, -1, READ_BUF) == -1) {
		cli_warn("%s", strerror(errno));
		return 1;
	}

	if (c.mode == MODE_COMMAND && argc == 0 && isatty(STDIN_FILENO)) {
		/* A server that is down is worth saying at once, but the
		 * prompt stays and retries at the next command. */
		cli_connect(&c);
		status = run_lines(&c, 1);
	} else if (cli_connect(&c) == -1)
		status = 1;
	else if (c.mode != MODE_COMMAND)
		status = run_pipe(&c);
	else if (argc > 0)
		status = run_oneshot(&c, argc, argv);
	else
		status = run_lines(&c, 0);
	cli_disconnect(&c);
	client_reader_free(&c.rd);
	return status;
}
