/*
 * cli_cluster_conn.c - seen-cli cluster's connection to a node: RESP over
 * one blocking socket, with a receive timeout so that a node that hangs is
 * reported, not waited for; and a node's ID and map as it answers them.
 * See cli_cluster_int.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli_cluster_int.h"
#include "cluster_move.h"
#include "client.h"
#include "cluster_map.h"

/* The longest reply header line we take ("$123", "-ERR ..."). */
#define MAX_HEADER	65536
/* The largest bulk reply: a map (CLUSTER_MAP_MAX_TEXT) or an INFO. */
/* a map, or a moving slot's bits (CLUSTER SLOTBITS: cluster_move.h) */
#define MAX_BULK	(CLUSTER_IMAGE_MAX + 4096)
/* Seconds a node may take to answer one command. */
#define NODE_TIMEOUT	10

/* ---- RESP over a socket ---- */

static int
rc_need(struct rconn *c, size_t n)
{
	ssize_t	 r;
	char	*grown;
	size_t	 cap;

	while (c->end - c->start < n) {
		if (c->start > 0) {
			memmove(c->in, c->in + c->start, c->end - c->start);
			c->end -= c->start;
			c->start = 0;
		}
		if (c->cap - c->end < 65536 || c->cap < n) {
			cap = c->cap ? c->cap * 2 : 65536;
			while (cap < n + 65536)
				cap *= 2;
			if ((grown = realloc(c->in, cap)) == NULL)
				return -1;
			c->in = grown;
			c->cap = cap;
		}
		do
			r = read(c->fd, c->in + c->end, c->cap - c->end);
		while (r == -1 && errno == EINTR);
		if (r == 0)
			errno = ECONNRESET;
		if (r <= 0)
			return -1;
		c->end += (size_t)r;
	}
	return 0;
}

/* A header line without its "\r\n", valid until the next read. */
static int
rc_line(struct rconn *c, char **line, size_t *len)
{
	char	*nl;
	size_t	 have;

	for (;;) {
		have = c->end - c->start;
		if (have > 0 && (nl = memchr(c->in + c->start, '\n', have)) !=
		    NULL)
			break;
		if (have >= MAX_HEADER) {
			errno = EPROTO;
			return -1;
		}
		if (rc_need(c, have + 1) == -1)
			return -1;
	}
	*line = c->in + c->start;
	*len = (size_t)(nl - *line);
	if (*len < 2 || nl[-1] != '\r') {
		errno = EPROTO;
		return -1;
	}
	c->start += *len + 1;
	(*len)--;
	(*line)[*len] = '\0';
	return 0;
}

void
reply_free(struct reply *r)
{
	free(r->str);
	r->str = NULL;
}

static int
rc_reply(struct rconn *c, struct reply *r)
{
	char		*line, *end;
	size_t		 len;
	long long	 n;

	memset(r, 0, sizeof(*r));
	if (rc_line(c, &line, &len) == -1)
		return -1;
	r->type = line[0];
	switch (r->type) {
	case '+':
	case '-':
		if ((r->str = strdup(line + 1)) == NULL)
			return -1;
		r->len = len - 1;
		return 0;
	case ':':
	case '$':
	case '*':
		errno = 0;
		n = strtoll(line + 1, &end, 10);
		if (errno != 0 || *end != '\0' || end == line + 1)
			break;
		if (r->type == ':') {
			r->num = n;
			return 0;
		}
		if (r->type == '*') {
			struct reply sub;

			for (long long i = 0; i < n; i++) {
				if (rc_reply(c, &sub) == -1)
					return -1;
				reply_free(&sub);
			}
			return 0;
		}
		if (n == -1)
			return 0;
		if (n < 0 || (unsigned long long)n > MAX_BULK)
			break;
		if (rc_need(c, (size_t)n + 2) == -1)
			return -1;
		if ((r->str = malloc((size_t)n + 1)) == NULL)
			return -1;
		memcpy(r->str, c->in + c->start, (size_t)n);
		r->str[n] = '\0';
		r->len = (size_t)n;
		c->start += (size_t)n + 2;
		return 0;
	}
	errno = EPROTO;
	return -1;
}

/* argv[i] is lens[i] bytes (lens NULL: strings). */
static int
rc_send(struct rconn *c, int argc, const char *const argv[],
    const size_t *lens)
{
	char	*buf, *p;
	size_t	 len = 32;
	int	 i, rc;

	for (i = 0; i < argc; i++)
		len += (lens ? lens[i] : strlen(argv[i])) + 32;
	if ((buf = malloc(len)) == NULL)
		return -1;
	p = buf + sprintf(buf, "*%d\r\n", argc);
	for (i = 0; i < argc; i++) {
		size_t alen = lens ? lens[i] : strlen(argv[i]);

		p += sprintf(p, "$%zu\r\n", alen);
		memcpy(p, argv[i], alen);
		p += alen;
		*p++ = '\r';
		*p++ = '\n';
	}
	rc = client_write_all(c->fd, buf, (size_t)(p - buf));
	free(buf);
	return rc;
}

/* ---- nodes ---- */

void
node_close(struct cnode *n)
{
	if (n->c.fd != -1)
		close(n->c.fd);
	n->c.fd = -1;
	free(n->c.in);
	n->c.in = NULL;
	n->c.start = n->c.end = n->c.cap = 0;
}

void
node_free(struct cnode *n)
{
	node_close(n);
	if (n->has_map)
		cluster_map_free(&n->map);
	n->has_map = 0;
}

int
node_call_argv(struct cnode *n, struct reply *r, int argc,
    const char *const argv[], const size_t *lens)
{
	if (n->c.fd == -1) {
		if (n->err[0] == '\0')
			snprintf(n->err, sizeof(n->err), "not connected");
		return -1;
	}
	if (rc_send(&n->c, argc, argv, lens) == -1 ||
	    rc_reply(&n->c, r) == -1) {
		snprintf(n->err, sizeof(n->err), "%s", errno == EPROTO ?
		    "a reply seen-cli does not understand" : errno == EAGAIN ?
		    "no answer in time" : strerror(errno));
		node_close(n);
		return -1;
	}
	return 0;
}

/* Sends a command and reads its reply: 0, or -1 with n->err set and the
 * connection closed (error replies are the caller's to judge). */
int
node_call(struct cnode *n, struct reply *r, int argc, ...)
{
	const char	*argv[8];
	va_list		 ap;
	int		 i;

	va_start(ap, argc);
	for (i = 0; i < argc && i < 8; i++)
		argv[i] = va_arg(ap, const char *);
	va_end(ap);
	return node_call_argv(n, r, i, argv, NULL);
}

/* "host:port", "[v6]:port" -> host and port. */
static int
split_addr(const char *s, char *host, size_t hlen, char *port, size_t plen)
{
	const char	*colon = strrchr(s, ':');
	size_t		 len;
	char		*end;
	unsigned long	 p;

	if (colon == NULL || colon == s)
		return -1;
	len = (size_t)(colon - s);
	if (s[0] == '[' && len >= 2 && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (len == 0 || len >= hlen || *end != '\0' || colon[1] == '\0' ||
	    errno != 0 || p < 1 || p > 65535)
		return -1;
	memcpy(host, s, len);
	host[len] = '\0';
	snprintf(port, plen, "%lu", p);
	return 0;
}

void
node_setaddr(struct cnode *n, const char *host, unsigned port,
    unsigned connect_port)
{
	memset(n, 0, sizeof(*n));
	n->c.fd = -1;
	snprintf(n->host, sizeof(n->host), "%s", host);
	snprintf(n->port, sizeof(n->port), "%u", connect_port);
	snprintf(n->name, sizeof(n->name), "%s:%u", host, port);
}

/* Connects and authenticates: 0, or -1 with n->err. */
int
node_open(const struct cl *cl, struct cnode *n)
{
	struct client_target	 t = *cl->defaults;
	struct timeval		 tv = { .tv_sec = NODE_TIMEOUT };
	struct reply		 r;
	char			 user[256];
	const char		*sp;
	int			 rc;

	t.host = n->host;
	t.port = n->port;
	t.path = NULL;
	if ((n->c.fd = client_connect(&t, n->err, sizeof(n->err))) == -1)
		return -1;
	setsockopt(n->c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(n->c.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (cl->token == NULL)
		return 0;
	/* -a "user password" is AUTH user password, as on the line
	 * protocol, where the words are split by the server */
	if ((sp = strchr(cl->token, ' ')) != NULL &&
	    (size_t)(sp - cl->token) < sizeof(user)) {
		memcpy(user, cl->token, (size_t)(sp - cl->token));
		user[sp - cl->token] = '\0';
		rc = node_call(n, &r, 3, "AUTH", user, sp + 1);
	} else
		rc = node_call(n, &r, 2, "AUTH", cl->token);
	if (rc == -1)
		return -1;
	if (r.type != '+') {
		snprintf(n->err, sizeof(n->err), "AUTH: %s", r.type == '-' ?
		    r.str : "unexpected reply");
		reply_free(&r);
		node_close(n);
		return -1;
	}
	reply_free(&r);
	return 0;
}

/* CLUSTER GETMAP into n->map: 0, or -1 with n->err. */
int
node_getmap(struct cnode *n)
{
	struct reply	 r;
	char		 err[256];

	if (n->has_map)
		cluster_map_free(&n->map);
	n->has_map = 0;
	if (node_call(n, &r, 2, "CLUSTER", "GETMAP") == -1)
		return -1;
	if (r.type == '$' && r.str == NULL)
		return 0;
	if (r.type != '$') {
		snprintf(n->err, sizeof(n->err), "CLUSTER GETMAP: %s",
		    r.type == '-' ? r.str : "unexpected reply");
		reply_free(&r);
		return -1;
	}
	if (cluster_map_parse(r.str, r.len, &n->map, err, sizeof(err)) ==
	    -1) {
		snprintf(n->err, sizeof(n->err), "its map does not parse: %s",
		    err);
		reply_free(&r);
		return -1;
	}
	n->has_map = 1;
	reply_free(&r);
	return 0;
}

/* A node ID: 40 lower-case hex digits. (cluster_id_valid's test, kept
 * here: cluster.o is the daemon's node and needs the daemon to link.) */
static int
id_valid(const char *s, size_t len)
{
	if (len != CLUSTER_ID_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * Connects to a node, asks its ID and its map. Returns 0 (n->up), or -1
 * with n->err: unreachable, or not in cluster mode (CLUSTER MYID refused).
 */
int
node_load(const struct cl *cl, struct cnode *n)
{
	struct reply	 r;

	if (node_open(cl, n) == -1 || node_call(n, &r, 2, "CLUSTER", "MYID")
	    == -1)
		return -1;
	if (r.type != '$' || r.str == NULL || !id_valid(r.str, r.len)) {
		snprintf(n->err, sizeof(n->err), "is not configured as a "
		    "cluster node%s%s", r.type == '-' ? ": " : "",
		    r.type == '-' ? r.str : "");
		reply_free(&r);
		node_close(n);
		return -1;
	}
	memcpy(n->id, r.str, CLUSTER_ID_LEN);
	n->id[CLUSTER_ID_LEN] = '\0';
	reply_free(&r);
	if (node_getmap(n) == -1)
		return -1;
	n->up = 1;
	return 0;
}

/* The node at "host:port" as the user typed it. */
int
node_load_addr(const struct cl *cl, struct cnode *n, const char *addr)
{
	char		 host[256], port[8];

	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s: not host:port\n",
		    addr);
		memset(n, 0, sizeof(*n));
		n->c.fd = -1;
		return -2;
	}
	node_setaddr(n, host, (unsigned)atoi(port), (unsigned)atoi(port));
	return node_load(cl, n);
}

/* The port to connect to a map's node on: its TLS port with --tls. */
unsigned
connect_port(const struct cl *cl, const struct cluster_node *cn)
{
	return cl->defaults->tls && cn->tls_port != 0 ? cn->tls_port :
	    cn->port;
}

/* Whether a node with map m, or none, may join a new cluster: no map, or
 * one that names only itself. */
int
map_is_alone(const struct cnode *n)
{
	return !n->has_map || (n->map.nnodes == 1 &&
	    strcmp(n->map.nodes[0].id, n->id) == 0);
}

/* Whether a node holds no filter made by a command (INFO seend's
 * runtime_filters 0; a seend from before that field: taken as none), even
 * an empty one; -1 when it cannot say (n->err). */
static int
no_named_filter(struct cnode *n)
{
	struct reply	 r;
	const char	*at;
	int		 none;

	if (node_call(n, &r, 2, "INFO", "seend") == -1)
		return -1;
	if (r.type != '$' || r.str == NULL) {
		snprintf(n->err, sizeof(n->err), "answers INFO seend with %c%s",
		    r.type, r.str != NULL ? r.str : "");
		reply_free(&r);
		return -1;
	}
	/* "runtime_filters:N" over RESP (the line protocol's space) */
	at = strstr(r.str, "\nruntime_filters:");
	none = at == NULL || strtoull(at + 17, NULL, 10) == 0;
	reply_free(&r);
	return none;
}

/* Whether a node may join a new cluster, as redis-cli judges it: it knows
 * no other node (map_is_alone) and holds no key (DBSIZE 0) nor filter
 * made by a command (a named filter, empty or not): the keys of the
 * slots the map would not give it would be freed as it took the map, its
 * named filters of those slots dropped, and its filters' keys, hashed
 * with their own seeds, could never move. -1 when it cannot say
 * (n->err). */
int
node_is_empty(struct cnode *n)
{
	struct reply	 r;
	int		 empty;

	if (!map_is_alone(n))
		return 0;
	if (node_call(n, &r, 1, "DBSIZE") == -1)
		return -1;
	empty = r.type == ':' && r.num == 0;
	if (r.type != ':') {
		snprintf(n->err, sizeof(n->err), "answers DBSIZE with %c%s",
		    r.type, r.str != NULL ? r.str : "");
		empty = -1;
	}
	reply_free(&r);
	return empty == 1 ? no_named_filter(n) : empty;
}
