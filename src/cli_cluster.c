/*
 * cli_cluster.c - seen-cli cluster <verb>; see cli_cluster.h.
 *
 * The verbs and their output are redis-cli --cluster's, so that an
 * operator's habits and scripts carry over; what differs is how a change
 * reaches the nodes. Redis's nodes gossip and vote; a seend node keeps the
 * newest map it has seen (cluster_map.h), so every change here is: read
 * the maps the nodes hold, make the new one with an epoch above all of
 * them, push it with CLUSTER SETMAP to every node it names, and read it
 * back (CLUSTER GETMAP) until they all agree. The nodes pass a newer map
 * on among themselves too (peer.c), so a node missed here catches up.
 *
 * Everything speaks RESP over one blocking connection per node, with a
 * receive timeout so that a node that hangs is reported, not waited for.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli_cluster.h"
#include "client.h"
#include "cluster.h"
#include "cluster_map.h"

/* The longest reply header line we take ("$123", "-ERR ..."). */
#define MAX_HEADER	65536
/* The largest bulk reply: a map (CLUSTER_MAP_MAX_TEXT) or an INFO. */
#define MAX_BULK	(4u << 20)
/* Seconds a node may take to answer one command. */
#define NODE_TIMEOUT	10
/* Seconds the nodes may take to agree on a map just pushed. */
#define AGREE_WAIT	10.0

/* One run of a verb: how to reach and authenticate to each node. */
struct cl {
	const struct client_target	*defaults;	/* TLS options */
	const char			*token;
	int				 yes;	/* no question asked */
};

/* A RESP connection, read through a buffer. */
struct rconn {
	int		 fd;
	char		*in;
	size_t		 start, end, cap;
};

/* A reply: '+', '-' and '$' in str (NUL-terminated, malloc'd; NULL for a
 * nil bulk), ':' in num; an array is read and dropped ('*'). */
struct reply {
	char		 type;
	char		*str;
	size_t		 len;
	long long	 num;
};

/* A node as this run sees it. */
struct cnode {
	char		 host[256];
	char		 port[8];	/* the port connected to */
	char		 name[300];	/* "host:port", for messages */
	struct rconn	 c;		/* fd -1: not connected */
	int		 up;		/* answered MYID */
	char		 err[512];	/* why not, when !up */
	char		 id[CLUSTER_ID_LEN + 1];
	int		 has_map;
	struct cluster_map map;		/* when has_map */
};

/* A cluster as one node (the entry) describes it. */
struct view {
	struct cnode	 entry;
	struct cluster_map map;		/* the entry's, or its implicit one */
	int		 implicit;	/* a cluster of one without a map */
	struct cnode	*nodes;		/* one per map.nodes[] */
};

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

static void
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

static int
rc_send(struct rconn *c, int argc, const char *const argv[])
{
	char	*buf, *p;
	size_t	 len = 32;
	int	 i, rc;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 32;
	if ((buf = malloc(len)) == NULL)
		return -1;
	p = buf + sprintf(buf, "*%d\r\n", argc);
	for (i = 0; i < argc; i++) {
		size_t alen = strlen(argv[i]);

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

static void
node_close(struct cnode *n)
{
	if (n->c.fd != -1)
		close(n->c.fd);
	n->c.fd = -1;
	free(n->c.in);
	n->c.in = NULL;
	n->c.start = n->c.end = n->c.cap = 0;
}

static void
node_free(struct cnode *n)
{
	node_close(n);
	if (n->has_map)
		cluster_map_free(&n->map);
	n->has_map = 0;
}

/* Sends a command and reads its reply: 0, or -1 with n->err set and the
 * connection closed (error replies are the caller's to judge). */
static int
node_call(struct cnode *n, struct reply *r, int argc, ...)
{
	const char	*argv[8];
	va_list		 ap;
	int		 i;

	va_start(ap, argc);
	for (i = 0; i < argc && i < 8; i++)
		argv[i] = va_arg(ap, const char *);
	va_end(ap);
	if (n->c.fd == -1) {
		if (n->err[0] == '\0')
			snprintf(n->err, sizeof(n->err), "not connected");
		return -1;
	}
	if (rc_send(&n->c, argc, argv) == -1 || rc_reply(&n->c, r) == -1) {
		snprintf(n->err, sizeof(n->err), "%s", errno == EPROTO ?
		    "a reply seen-cli does not understand" : errno == EAGAIN ?
		    "no answer in time" : strerror(errno));
		node_close(n);
		return -1;
	}
	return 0;
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

static void
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
static int
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
static int
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
static int
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
static int
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
static unsigned
connect_port(const struct cl *cl, const struct cluster_node *cn)
{
	return cl->defaults->tls && cn->tls_port != 0 ? cn->tls_port :
	    cn->port;
}

/* Whether a node with map m, or none, may join a new cluster: no map, or
 * one that names only itself. */
static int
map_is_alone(const struct cnode *n)
{
	return !n->has_map || (n->map.nnodes == 1 &&
	    strcmp(n->map.nodes[0].id, n->id) == 0);
}

/* ---- maps ---- */

/* A cluster of one without a map: the node owns every slot, epoch 0. */
static int
map_one(struct cluster_map *m, const struct cnode *n)
{
	memset(m, 0, sizeof(*m));
	if ((m->nodes = calloc(1, sizeof(*m->nodes))) == NULL)
		return -1;
	m->nnodes = 1;
	snprintf(m->nodes[0].id, sizeof(m->nodes[0].id), "%s", n->id);
	snprintf(m->nodes[0].host, sizeof(m->nodes[0].host), "%s", n->host);
	m->nodes[0].port = (unsigned)atoi(n->port);
	m->nodes[0].primary = -1;
	memset(m->owner, 0, sizeof(m->owner));
	return 0;
}

static int
map_add(struct cluster_map *m, const char *id, const char *host,
    unsigned port, unsigned tls_port, int primary)
{
	struct cluster_node	*grown, *cn;

	if ((grown = realloc(m->nodes, (m->nnodes + 1) * sizeof(*grown))) ==
	    NULL)
		return -1;
	m->nodes = grown;
	cn = &m->nodes[m->nnodes++];
	memset(cn, 0, sizeof(*cn));
	snprintf(cn->id, sizeof(cn->id), "%s", id);
	snprintf(cn->host, sizeof(cn->host), "%s", host);
	cn->port = port;
	cn->tls_port = tls_port;
	cn->primary = primary;
	return 0;
}

/* Removes node i, which owns no slot and has no replica. */
static void
map_del(struct cluster_map *m, int i)
{
	size_t	 j;

	memmove(&m->nodes[i], &m->nodes[i + 1], (m->nnodes - (size_t)i - 1) *
	    sizeof(m->nodes[0]));
	m->nnodes--;
	for (j = 0; j < m->nnodes; j++)
		if (m->nodes[j].primary > i)
			m->nodes[j].primary--;
	for (j = 0; j < CLUSTER_SLOTS; j++)
		if (m->owner[j] != CLUSTER_NO_NODE && m->owner[j] > i)
			m->owner[j]--;
}

static int
buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;
	char	*grown;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		if ((grown = realloc(*buf, *cap * 2 + (size_t)n)) == NULL)
			return -1;
		*buf = grown;
		*cap = *cap * 2 + (size_t)n;
	}
}

/*
 * The text of m as the parser takes it, whatever the order of m's nodes
 * (a map being edited here is not sorted yet), and parses it back into
 * m: the canonical map, checked by the code every node runs. 0, or -1
 * with why on stderr.
 */
static int
map_canon(struct cluster_map *m)
{
	struct cluster_map	 out;
	char			*t, err[256];
	size_t			 len = 0, cap = 4096, i, s, a;
	int			 rc = 0;

	if ((t = malloc(cap)) == NULL)
		return -1;
	rc |= buf_printf(&t, &len, &cap, "%s\nepoch %" PRIu64 "\n",
	    CLUSTER_MAP_MAGIC, m->epoch);
	for (i = 0; i < m->nnodes; i++) {
		const struct cluster_node *cn = &m->nodes[i];

		rc |= buf_printf(&t, &len, &cap, "node %s %s %u %u %s\n",
		    cn->id, cn->host, cn->port, cn->tls_port, cn->primary < 0 ?
		    "-" : m->nodes[cn->primary].id);
	}
	for (i = 0; i < m->nnodes; i++) {
		if (cluster_map_slots_of(m, (int)i) == 0)
			continue;
		rc |= buf_printf(&t, &len, &cap, "slots %s", m->nodes[i].id);
		for (s = 0; s < CLUSTER_SLOTS; s = a + 1) {
			a = s;
			if (m->owner[s] != i)
				continue;
			while (a + 1 < CLUSTER_SLOTS && m->owner[a + 1] == i)
				a++;
			rc |= a == s ? buf_printf(&t, &len, &cap, " %zu", s) :
			    buf_printf(&t, &len, &cap, " %zu-%zu", s, a);
		}
		rc |= buf_printf(&t, &len, &cap, "\n");
	}
	if (rc != 0) {
		free(t);
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		return -1;
	}
	if (cluster_map_parse(t, len, &out, err, sizeof(err)) == -1) {
		fprintf(stderr, "[ERR] The new map is not valid: %s\n", err);
		free(t);
		return -1;
	}
	free(t);
	cluster_map_free(m);
	*m = out;
	return 0;
}

/* The slots of node i as redis-cli prints them: "[0-5460],[7]". */
static void
slots_string(const struct cluster_map *m, int i, char *buf, size_t len)
{
	size_t	 o = 0, s, a;

	buf[0] = '\0';
	for (s = 0; s < CLUSTER_SLOTS; s = a + 1) {
		a = s;
		if (m->owner[s] != (unsigned)i)
			continue;
		while (a + 1 < CLUSTER_SLOTS && m->owner[a + 1] == i)
			a++;
		if (o + 32 >= len) {
			snprintf(buf + o, len - o, "...");
			return;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s[%zu", o ? "," : "",
		    s);
		o += (size_t)(a == s ? snprintf(buf + o, len - o, "]") :
		    snprintf(buf + o, len - o, "-%zu]", a));
	}
}

static unsigned
replicas_of(const struct cluster_map *m, int i)
{
	unsigned n = 0;

	for (size_t j = 0; j < m->nnodes; j++)
		if (m->nodes[j].primary == i)
			n++;
	return n;
}

static unsigned
slots_covered(const struct cluster_map *m)
{
	unsigned n = 0;

	for (size_t s = 0; s < CLUSTER_SLOTS; s++)
		if (m->owner[s] != CLUSTER_NO_NODE)
			n++;
	return n;
}

static void
print_node(const struct cluster_map *m, int i)
{
	const struct cluster_node	*cn = &m->nodes[i];
	char				 slots[8192];
	unsigned			 nr;

	slots_string(m, i, slots, sizeof(slots));
	printf("%s: %s %s:%u\n   slots:%s (%u slots) %s\n", cn->primary < 0 ?
	    "M" : "S", cn->id, cn->host, cn->port, slots,
	    cluster_map_slots_of(m, i), cn->primary < 0 ? "master" : "slave");
	if (cn->primary >= 0)
		printf("   replicates %s\n", m->nodes[cn->primary].id);
	else if ((nr = replicas_of(m, i)) > 0)
		printf("   %u additional replica(s)\n", nr);
}

/* Primaries first, then replicas, as a reader looks for them. */
static void
print_nodes(const struct cluster_map *m)
{
	for (size_t i = 0; i < m->nnodes; i++)
		if (m->nodes[i].primary < 0)
			print_node(m, (int)i);
	for (size_t i = 0; i < m->nnodes; i++)
		if (m->nodes[i].primary >= 0)
			print_node(m, (int)i);
}

/* "yes" from a terminal, or no terminal to ask. */
static int
confirm(const struct cl *cl, const char *question)
{
	char	 line[64];

	if (cl->yes || !isatty(STDIN_FILENO))
		return 1;
	printf("%s (type 'yes' to accept): ", question);
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 0;
	line[strcspn(line, "\r\n")] = '\0';
	return strcmp(line, "yes") == 0;
}

/* ---- pushing a map ---- */

/* CLUSTER SETMAP text to n: 0, or -1 after saying why. */
static int
push_map(const struct cl *cl, struct cnode *n, const char *text)
{
	struct reply	 r;
	int		 rc = -1;

	if (n->c.fd == -1 && node_open(cl, n) == -1) {
		printf("[ERR] Could not send the map to %s: %s\n", n->name,
		    n->err);
		return -1;
	}
	if (node_call(n, &r, 3, "CLUSTER", "SETMAP", text) == -1) {
		printf("[ERR] Could not send the map to %s: %s\n", n->name,
		    n->err);
		return -1;
	}
	if (r.type == '+')
		rc = 0;
	else
		printf("[ERR] Node %s refused the map: %s\n", n->name,
		    r.type == '-' ? r.str : "unexpected reply");
	reply_free(&r);
	return rc;
}

/* REPLICAOF host port to n: 0, or -1 after saying why. */
static int
send_replicaof(const struct cl *cl, struct cnode *n, const char *host,
    unsigned port)
{
	struct reply	 r;
	char		 p[8];
	int		 rc = -1;

	snprintf(p, sizeof(p), "%u", port);
	if (n->c.fd == -1 && node_open(cl, n) == -1) {
		printf("[ERR] Could not configure %s as a replica: %s\n",
		    n->name, n->err);
		return -1;
	}
	if (node_call(n, &r, 3, "REPLICAOF", host, p) == -1) {
		printf("[ERR] Could not configure %s as a replica: %s\n",
		    n->name, n->err);
		return -1;
	}
	if (r.type == '+')
		rc = 0;
	else
		printf("[ERR] %s: REPLICAOF %s %s: %s\n", n->name, host, p,
		    r.type == '-' ? r.str : "unexpected reply");
	reply_free(&r);
	return rc;
}

static double
now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Reads the map back from each of nodes[0..n) until all hold m (or a newer
 * one: another operator's, which is theirs to report) or AGREE_WAIT
 * passes, printing a dot a round as redis-cli does while a cluster joins.
 * 0 when they agree.
 */
static int
wait_agree(const struct cl *cl, struct cnode *nodes, size_t n,
    const struct cluster_map *m)
{
	double	 deadline = now_secs() + AGREE_WAIT;
	size_t	 i, agree;

	printf("Waiting for the cluster to join\n");
	for (;;) {
		agree = 0;
		for (i = 0; i < n; i++) {
			if (nodes[i].c.fd == -1 && node_open(cl, &nodes[i]) ==
			    -1)
				continue;
			if (node_getmap(&nodes[i]) == 0 && nodes[i].has_map &&
			    cluster_map_compare(&nodes[i].map, m) >= 0)
				agree++;
		}
		if (agree == n) {
			printf("\n");
			return 0;
		}
		if (now_secs() > deadline)
			break;
		printf(".");
		fflush(stdout);
		usleep(200 * 1000);
	}
	printf("\n");
	for (i = 0; i < n; i++)
		if (!nodes[i].has_map || cluster_map_compare(&nodes[i].map, m)
		    < 0)
			printf("[ERR] Node %s does not hold the new map%s%s\n",
			    nodes[i].name, nodes[i].c.fd == -1 ? ": " : "",
			    nodes[i].c.fd == -1 ? nodes[i].err : "");
	return -1;
}

/* ---- a cluster as one node sees it ---- */

static void
view_free(struct view *v)
{
	if (v->nodes != NULL)
		for (size_t i = 0; i < v->map.nnodes; i++)
			node_free(&v->nodes[i]);
	free(v->nodes);
	v->nodes = NULL;
	if (v->map.nodes != NULL)
		cluster_map_free(&v->map);
	memset(&v->map, 0, sizeof(v->map));
	node_free(&v->entry);
}

/*
 * Loads the entry node at addr, its map (a cluster of one when it has
 * none), and every node that map names. Returns 0, or -1 after saying why
 * (the entry could not be asked: nothing to check).
 */
static int
view_load(const struct cl *cl, struct view *v, const char *addr)
{
	int	 rc;

	memset(v, 0, sizeof(*v));
	if ((rc = node_load_addr(cl, &v->entry, addr)) != 0) {
		if (rc == -1)
			printf("[ERR] Node %s: %s\n", v->entry.name,
			    v->entry.err);
		return -1;
	}
	if (v->entry.has_map)
		rc = cluster_map_copy(&v->map, &v->entry.map);
	else {
		rc = map_one(&v->map, &v->entry);
		v->implicit = 1;
	}
	if (rc == -1 || (v->nodes = calloc(v->map.nnodes,
	    sizeof(*v->nodes))) == NULL) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		return -1;
	}
	for (size_t i = 0; i < v->map.nnodes; i++) {
		const struct cluster_node *cn = &v->map.nodes[i];
		struct cnode *n = &v->nodes[i];

		node_setaddr(n, cn->host, cn->port, connect_port(cl, cn));
		if (v->implicit)	/* the address the user gave */
			snprintf(n->port, sizeof(n->port), "%s",
			    v->entry.port);
		if (node_load(cl, n) == 0 && strcmp(n->id, cn->id) != 0) {
			snprintf(n->err, sizeof(n->err), "answers as node %s, "
			    "not %s", n->id, cn->id);
			n->up = 0;
			node_close(n);
		}
	}
	return 0;
}

static unsigned long long
node_keys(struct cnode *n, int *ok)
{
	struct reply		 r;
	unsigned long long	 keys = 0;

	*ok = 0;
	if (!n->up || node_call(n, &r, 1, "DBSIZE") == -1)
		return 0;
	if (r.type == ':' && r.num >= 0) {
		keys = (unsigned long long)r.num;
		*ok = 1;
	}
	reply_free(&r);
	return keys;
}

/* redis-cli's clusterManagerShowClusterInfo. Returns the count of
 * primaries that could not be asked. */
static int
show_info(struct view *v)
{
	unsigned long long	 keys, total = 0;
	unsigned		 masters = 0;
	int			 bad = 0, ok;

	for (size_t i = 0; i < v->map.nnodes; i++) {
		const struct cluster_node *cn = &v->map.nodes[i];

		if (cn->primary >= 0)
			continue;
		masters++;
		keys = node_keys(&v->nodes[i], &ok);
		if (!ok) {
			bad++;
			printf("%s (%.8s...) -> ? keys | %u slots | %u slaves. "
			    "(%s)\n", v->nodes[i].name, cn->id,
			    cluster_map_slots_of(&v->map, (int)i),
			    replicas_of(&v->map, (int)i), v->nodes[i].up ?
			    "DBSIZE failed" : v->nodes[i].err);
			continue;
		}
		total += keys;
		printf("%s (%.8s...) -> %llu keys | %u slots | %u slaves.\n",
		    v->nodes[i].name, cn->id, keys, cluster_map_slots_of(
		    &v->map, (int)i), replicas_of(&v->map, (int)i));
	}
	printf("[OK] %llu keys in %u masters.\n", total, masters);
	printf("%.2f keys per slot on average.\n", (double)total /
	    CLUSTER_SLOTS);
	return bad;
}

/* redis-cli's clusterManagerCheckCluster: 0 when every node is reachable
 * and holds the entry's map and every slot is covered, else -1. */
static int
check_view(struct view *v)
{
	int	 ok = 1, agree = 1;
	size_t	 i;

	printf(">>> Performing Cluster Check (using node %s)\n",
	    v->entry.name);
	print_nodes(&v->map);
	for (i = 0; i < v->map.nnodes; i++) {
		struct cnode *n = &v->nodes[i];

		if (!n->up) {
			printf("[ERR] Node %s (%s) is not reachable: %s\n",
			    n->name, v->map.nodes[i].id, n->err);
			ok = 0;
			continue;
		}
		if (v->implicit ? n->has_map && !map_is_alone(n) :
		    !n->has_map || cluster_map_compare(&n->map, &v->map) != 0) {
			if (n->has_map)
				printf("*** Node %s holds the map of epoch %"
				    PRIu64 "%s, %s holds epoch %" PRIu64 "\n",
				    n->name, n->map.epoch,
				    cluster_map_compare(&n->map, &v->map) > 0 ?
				    " (newer)" : "", v->entry.name,
				    v->map.epoch);
			else
				printf("*** Node %s holds no map, %s holds "
				    "epoch %" PRIu64 "\n", n->name,
				    v->entry.name, v->map.epoch);
			agree = 0;
		}
	}
	if (agree)
		printf("[OK] All %snodes agree about slots configuration.\n",
		    ok ? "" : "reachable ");
	else {
		printf("[ERR] Nodes don't agree about configuration!\n");
		ok = 0;
	}
	printf(">>> Check for open slots...\n");
	/* TODO: slots being moved (a later step) are reported here */
	printf(">>> Check slots coverage...\n");
	if (slots_covered(&v->map) == CLUSTER_SLOTS)
		printf("[OK] All %d slots covered.\n", CLUSTER_SLOTS);
	else {
		printf("[ERR] Not all %d slots are covered by nodes.\n",
		    CLUSTER_SLOTS);
		ok = 0;
	}
	return ok ? 0 : -1;
}

/* ---- the verbs ---- */

static void
verb_usage(const char *verb, const char *args)
{
	fprintf(stderr, "usage: seen-cli cluster %s %s\n", verb, args);
}

/* The verbs' options; each verb takes the ones that are its own. */
enum {
	OPT_REPLICAS = 0x200, OPT_REPLICA_OF, OPT_YES, OPT_FROM, OPT_TO,
	OPT_SLOTS, OPT_WEIGHT, OPT_USE_EMPTY, OPT_THRESHOLD, OPT_SIMULATE,
	OPT_TIMEOUT, OPT_PIPELINE
};

static const struct option cluster_longopts[] = {
	{ "replicas",		required_argument,	NULL, OPT_REPLICAS },
	{ "cluster-replicas",	required_argument,	NULL, OPT_REPLICAS },
	{ "replica-of",		required_argument,	NULL, OPT_REPLICA_OF },
	{ "yes",		no_argument,		NULL, OPT_YES },
	{ "cluster-yes",	no_argument,		NULL, OPT_YES },
	{ "from",		required_argument,	NULL, OPT_FROM },
	{ "to",			required_argument,	NULL, OPT_TO },
	{ "slots",		required_argument,	NULL, OPT_SLOTS },
	{ "weight",		required_argument,	NULL, OPT_WEIGHT },
	{ "use-empty-masters",	no_argument,		NULL, OPT_USE_EMPTY },
	{ "threshold",		required_argument,	NULL, OPT_THRESHOLD },
	{ "simulate",		no_argument,		NULL, OPT_SIMULATE },
	{ "timeout",		required_argument,	NULL, OPT_TIMEOUT },
	{ "pipeline",		required_argument,	NULL, OPT_PIPELINE },
	{ NULL,			0,			NULL, 0 },
};

/* The verbs' arguments once options are taken out (argv[0] is the verb). */
struct args {
	int		 n;
	char		*pos[CLUSTER_MAP_MAX_NODES];
	long		 replicas;
	const char	*replica_of;
	const char	*from, *to;
	long		 slots;
};

/* Parses options; allowed is a list of OPT_ values ending in 0. Returns
 * 0, or 2 (usage) after saying why. */
static int
parse_args(struct cl *cl, int argc, char **argv, const int *allowed,
    struct args *a)
{
	int	 ch, ok;
	char	*end;

	memset(a, 0, sizeof(*a));
	a->slots = -1;
	optind = 0;	/* glibc: start over; options may follow nodes */
	while ((ch = getopt_long(argc, argv, "", cluster_longopts, NULL)) !=
	    -1) {
		ok = 0;
		for (const int *p = allowed; *p != 0; p++)
			if (*p == ch)
				ok = 1;
		if (!ok) {
			if (ch != '?')
				fprintf(stderr, "seen-cli: cluster %s: %s "
				    "does not take %s\n", argv[0], argv[0],
				    argv[optind - 1]);
			return 2;
		}
		switch (ch) {
		case OPT_REPLICAS:
		case OPT_SLOTS:
			errno = 0;
			a->replicas = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    a->replicas < 0 || a->replicas > (ch ==
			    OPT_REPLICAS ? CLUSTER_MAP_MAX_NODES :
			    CLUSTER_SLOTS)) {
				fprintf(stderr, "seen-cli: cluster %s: %s: not "
				    "a count\n", argv[0], optarg);
				return 2;
			}
			if (ch == OPT_SLOTS) {
				a->slots = a->replicas;
				a->replicas = 0;
			}
			break;
		case OPT_REPLICA_OF:
			a->replica_of = optarg;
			break;
		case OPT_FROM:
			a->from = optarg;
			break;
		case OPT_TO:
			a->to = optarg;
			break;
		case OPT_YES:
			cl->yes = 1;
			break;
		default:	/* taken, to be used by a later step */
			break;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (a->n == CLUSTER_MAP_MAX_NODES) {
			fprintf(stderr, "seen-cli: cluster %s: more than %d "
			    "nodes\n", argv[0], CLUSTER_MAP_MAX_NODES);
			return 2;
		}
		a->pos[a->n++] = argv[i];
	}
	return 0;
}

/* Node indexes in the order redis-cli takes them: one from each host in
 * turn, so that primaries spread over hosts. */
static void
interleave(struct cnode *nodes, size_t n, size_t *order)
{
	size_t	 o = 0, i, j, round;
	size_t	*rank = calloc(n, sizeof(*rank));

	if (rank == NULL) {
		for (i = 0; i < n; i++)
			order[i] = i;
		return;
	}
	/* rank[i]: how many earlier nodes share node i's host */
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (strcmp(nodes[i].host, nodes[j].host) == 0)
				rank[i]++;
	for (round = 0; o < n; round++)
		for (i = 0; i < n; i++)
			if (rank[i] == round)
				order[o++] = i;
	free(rank);
}

/* Assigns nodes[order[p..n)] as replicas to the p primaries order[0..p),
 * round robin (the nodes left over after n/p - 1 rounds go one more each,
 * as redis-cli gives them), each taking the first free node on another
 * host if any. */
static int
assign_replicas(struct cnode *nodes, size_t n, const size_t *order,
    size_t p, int *primary_of)
{
	size_t	 i, k, left = n - p;
	int	*taken = calloc(n, sizeof(*taken));

	for (i = 0; i < n; i++)
		primary_of[i] = -1;
	if (taken == NULL)
		return -1;
	while (left > 0) {
		for (i = 0; i < p && left > 0; i++) {
			size_t pi = order[i], pick = n;

			for (k = p; k < n; k++)
				if (!taken[order[k]] && strcmp(
				    nodes[order[k]].host, nodes[pi].host) != 0) {
					pick = k;
					break;
				}
			for (k = p; pick == n && k < n; k++)
				if (!taken[order[k]])
					pick = k;
			taken[order[pick]] = 1;
			primary_of[order[pick]] = (int)pi;
			left--;
			printf("Adding replica %s to %s\n",
			    nodes[order[pick]].name, nodes[pi].name);
		}
	}
	for (i = 0; i < p; i++) {
		int same = 0;

		for (k = 0; k < n; k++)
			if (primary_of[k] == (int)order[i] && strcmp(
			    nodes[k].host, nodes[order[i]].host) == 0)
				same = 1;
		if (same) {
			printf("[WARNING] Some slaves are in the same host as "
			    "their master\n");
			break;
		}
	}
	free(taken);
	return 0;
}

/*
 * The plain port of a node without a map, reached over TLS: INFO's
 * tcp_port (its listen port). Not its CLUSTER NODES line: that names the
 * TLS port to a TLS client, as Redis's tls-cluster does. 0 if none.
 */
static unsigned
announced_port(struct cnode *n)
{
	struct reply	 r;
	const char	*at;
	unsigned long	 port = 0;

	if (node_call(n, &r, 2, "INFO", "server") == -1)
		return 0;
	if (r.type == '$' && (at = strstr(r.str, "\ntcp_port:")) != NULL)
		port = strtoul(at + 10, NULL, 10);
	reply_free(&r);
	return port <= 65535 ? (unsigned)port : 0;
}

/*
 * The entry of node n in a new map: the address the user gave, which is
 * its plain port, or with --tls its TLS port; the other port from its own
 * map (of itself alone) if it has one, else, for the plain port behind a
 * TLS one, from what it announces.
 */
static int
map_add_cnode(const struct cl *cl, struct cluster_map *m, struct cnode *n,
    int primary)
{
	unsigned typed = (unsigned)atoi(n->port), port = typed, tls = 0;
	int	 own = n->has_map && n->map.nnodes == 1;

	if (!cl->defaults->tls)
		tls = own ? n->map.nodes[0].tls_port : 0;
	else {
		tls = typed;
		port = own ? n->map.nodes[0].port : announced_port(n);
		if (port == 0)
			port = typed;
	}
	return map_add(m, n->id, n->host, port, tls, primary);
}

static int
push_all(const struct cl *cl, struct cnode *nodes, size_t n,
    const struct cluster_map *m)
{
	char	*text;
	size_t	 len;
	int	 rc = 0;

	if ((text = cluster_map_format(m, &len)) == NULL) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (push_map(cl, &nodes[i], text) == -1)
			rc = -1;
	free(text);
	return rc;
}

/* Checks the cluster through addr, printing redis-cli's check. */
static int
run_check(const struct cl *cl, const char *addr, int info)
{
	struct view	 v;
	int		 rc = 1;

	if (view_load(cl, &v, addr) == 0) {
		if (info && show_info(&v) > 0)
			rc = 2;
		rc = check_view(&v) == 0 && rc != 2 ? 0 : 1;
	}
	view_free(&v);
	return rc;
}

static int
cmd_create(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_REPLICAS, OPT_YES, 0 };
	struct args		 a;
	struct cnode		*nodes;
	struct cluster_map	 m;
	size_t			 n, p, i, j, *order = NULL;
	int			*primary_of = NULL, rc = 1, *index = NULL;
	uint64_t		 epoch = 0;
	double			 per, cursor = 0;
	long			 first = 0, last;

	if ((rc = parse_args(cl, argc, argv, allowed, &a)) != 0 || a.n < 1) {
		verb_usage("create", "host1:port1 ... hostN:portN "
		    "[--replicas <n>]");
		return 2;
	}
	rc = 1;
	n = (size_t)a.n;
	memset(&m, 0, sizeof(m));
	if ((nodes = calloc(n, sizeof(*nodes))) == NULL ||
	    (order = calloc(n, sizeof(*order))) == NULL ||
	    (index = calloc(n, sizeof(*index))) == NULL ||
	    (primary_of = calloc(n, sizeof(*primary_of))) == NULL) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		goto out;
	}
	for (i = 0; i < n; i++)
		nodes[i].c.fd = -1;
	for (i = 0; i < n; i++) {
		int lrc = node_load_addr(cl, &nodes[i], a.pos[i]);

		if (lrc == -2) {
			rc = 2;
			goto out;
		}
		if (lrc == -1) {
			printf("[ERR] Node %s %s\n", nodes[i].name,
			    nodes[i].err);
			goto out;
		}
		if (!map_is_alone(&nodes[i])) {
			printf("[ERR] Node %s is not empty. Either the node "
			    "already knows other nodes (check with CLUSTER "
			    "GETMAP) or belongs to another cluster.\n",
			    nodes[i].name);
			goto out;
		}
		for (j = 0; j < i; j++)
			if (strcmp(nodes[i].id, nodes[j].id) == 0) {
				printf("[ERR] Nodes %s and %s are the same "
				    "node (%s)\n", nodes[j].name,
				    nodes[i].name, nodes[i].id);
				goto out;
			}
		if (nodes[i].has_map && nodes[i].map.epoch > epoch)
			epoch = nodes[i].map.epoch;
	}
	p = n / (size_t)(a.replicas + 1);
	if (p < 1) {
		printf("*** ERROR: Invalid configuration for cluster "
		    "creation.\n*** %zu nodes cannot hold a master with %ld "
		    "replicas.\n*** At least %ld nodes are required.\n", n,
		    a.replicas, a.replicas + 1);
		goto out;
	}
	interleave(nodes, n, order);
	printf(">>> Performing hash slots allocation on %zu nodes...\n", n);
	/* redis-cli's split: even ranges, rounded, the last to 16383 */
	per = (double)CLUSTER_SLOTS / (double)p;
	for (i = 0; i < p; i++) {
		last = lrint(cursor + per - 1);
		if (last > CLUSTER_SLOTS || i == p - 1)
			last = CLUSTER_SLOTS - 1;
		if (last < first)
			last = first;
		printf("Master[%zu] -> Slots %ld - %ld\n", i, first, last);
		for (long s = first; s <= last; s++)
			m.owner[s] = (uint16_t)i;	/* primary i, for now */
		first = last + 1;
		cursor += per;
	}
	if (assign_replicas(nodes, n, order, p, primary_of) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		goto out;
	}
	/* the map: primaries at 0..p, then the replicas */
	m.epoch = epoch + 1;
	for (i = 0; i < n; i++)
		index[order[i]] = (int)i;
	for (i = 0; i < n; i++) {
		size_t ni = order[i];

		if (map_add_cnode(cl, &m, &nodes[ni], primary_of[ni] < 0 ? -1 :
		    index[primary_of[ni]]) == -1) {
			fprintf(stderr, "seen-cli: cluster: %s\n",
			    strerror(ENOMEM));
			goto out;
		}
	}
	if (map_canon(&m) == -1)
		goto out;
	print_nodes(&m);
	if (!confirm(cl, "Can I set the above configuration?"))
		goto out;
	printf(">>> Nodes configuration updated\n");
	printf(">>> Sending CLUSTER SETMAP (epoch %" PRIu64 ") to every "
	    "node\n", m.epoch);
	if (push_all(cl, nodes, n, &m) == -1)
		goto out;
	for (i = 0; i < n; i++)
		if (primary_of[i] >= 0 && send_replicaof(cl, &nodes[i],
		    nodes[primary_of[i]].host, (unsigned)atoi(
		    nodes[primary_of[i]].port)) == -1)
			goto out;
	if (wait_agree(cl, nodes, n, &m) == -1)
		goto out;
	rc = run_check(cl, a.pos[0], 0);
out:
	if (m.nodes != NULL)
		cluster_map_free(&m);
	for (i = 0; nodes != NULL && i < n; i++)
		node_free(&nodes[i]);
	free(nodes);
	free(order);
	free(index);
	free(primary_of);
	return rc;
}

/* Loads the cluster through the existing node for add-node and
 * del-node: it must be reachable, hold the newest map, and cover every
 * slot is not required (del-node of a node is how a broken one goes). */
static int
load_for_change(const struct cl *cl, struct view *v, const char *addr)
{
	if (view_load(cl, v, addr) == -1)
		return -1;
	if (check_view(v) == -1) {
		for (size_t i = 0; i < v->map.nnodes; i++)
			if (v->nodes[i].has_map && cluster_map_compare(
			    &v->nodes[i].map, &v->map) > 0) {
				printf("[ERR] Node %s holds a newer map than "
				    "%s: run seen-cli cluster fix first\n",
				    v->nodes[i].name, v->entry.name);
				return -1;
			}
	}
	return 0;
}

/* The highest epoch any node of v holds. */
static uint64_t
view_epoch(const struct view *v)
{
	uint64_t e = v->map.epoch;

	for (size_t i = 0; i < v->map.nnodes; i++)
		if (v->nodes[i].has_map && v->nodes[i].map.epoch > e)
			e = v->nodes[i].map.epoch;
	return e;
}

/* Pushes m to the nodes of v it names (reachable or not: say so) and to
 * extra, then waits for them to agree. */
static int
push_view(const struct cl *cl, struct view *v, struct cnode *extra,
    const struct cluster_map *m)
{
	struct cnode	*to;
	size_t		 n = 0;
	int		 rc;

	if ((to = calloc(m->nnodes, sizeof(*to))) == NULL)
		return -1;
	for (size_t i = 0; i < m->nnodes; i++) {
		const struct cluster_node *cn = &m->nodes[i];

		if (extra != NULL && strcmp(extra->id, cn->id) == 0)
			continue;
		node_setaddr(&to[n++], cn->host, cn->port, connect_port(cl,
		    cn));
	}
	(void)v;
	rc = push_all(cl, to, n, m);
	if (rc == 0 && extra != NULL)
		rc = push_all(cl, extra, 1, m);
	if (rc == 0)
		rc = wait_agree(cl, to, n, m);
	for (size_t i = 0; i < n; i++)
		node_free(&to[i]);
	free(to);
	return rc;
}

static int
cmd_add_node(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_REPLICA_OF, OPT_YES, 0 };
	struct args		 a;
	struct view		 v;
	struct cnode		 nn;
	struct cluster_map	 m;
	int			 rc, primary = -1, lrc;

	if ((rc = parse_args(cl, argc, argv, allowed, &a)) != 0 || a.n != 2) {
		verb_usage("add-node", "new_host:new_port existing_host:"
		    "existing_port [--replica-of <id>]");
		return 2;
	}
	rc = 1;
	memset(&m, 0, sizeof(m));
	memset(&nn, 0, sizeof(nn));
	nn.c.fd = -1;
	printf(">>> Adding node %s to cluster %s\n", a.pos[0], a.pos[1]);
	if (load_for_change(cl, &v, a.pos[1]) == -1)
		goto out;
	if (a.replica_of != NULL) {
		primary = strlen(a.replica_of) == CLUSTER_ID_LEN ?
		    cluster_map_find(&v.map, a.replica_of) : -1;
		if (primary < 0 || v.map.nodes[primary].primary >= 0) {
			printf("[ERR] No such master ID %s\n", a.replica_of);
			goto out;
		}
	}
	if ((lrc = node_load_addr(cl, &nn, a.pos[0])) != 0) {
		if (lrc == -1)
			printf("[ERR] Node %s %s\n", nn.name, nn.err);
		rc = lrc == -2 ? 2 : 1;
		goto out;
	}
	if (cluster_map_find(&v.map, nn.id) >= 0) {
		printf("[ERR] Node %s (%s) is already in the cluster\n",
		    nn.name, nn.id);
		goto out;
	}
	if (!map_is_alone(&nn)) {
		printf("[ERR] Node %s is not empty. Either the node already "
		    "knows other nodes (check with CLUSTER GETMAP) or belongs "
		    "to another cluster.\n", nn.name);
		goto out;
	}
	if (cluster_map_copy(&m, &v.map) == -1 || map_add_cnode(cl, &m, &nn,
	    primary) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		goto out;
	}
	m.epoch = view_epoch(&v) + 1;
	if (nn.has_map && nn.map.epoch >= m.epoch)
		m.epoch = nn.map.epoch + 1;
	if (map_canon(&m) == -1)
		goto out;
	printf(">>> Send CLUSTER SETMAP (epoch %" PRIu64 ") to every node to "
	    "make %s join the cluster.\n", m.epoch, nn.name);
	if (push_view(cl, &v, &nn, &m) == -1)
		goto out;
	if (primary >= 0) {
		printf(">>> Configure node as replica of %s:%u.\n",
		    v.map.nodes[primary].host, v.map.nodes[primary].port);
		/* the port seen-cli reaches it on: the TLS one with --tls,
		 * as the operator's nodes are reached */
		if (send_replicaof(cl, &nn, v.map.nodes[primary].host,
		    connect_port(cl, &v.map.nodes[primary])) == -1)
			goto out;
	}
	printf("[OK] New node added correctly.\n");
	rc = 0;
out:
	if (m.nodes != NULL)
		cluster_map_free(&m);
	node_free(&nn);
	view_free(&v);
	return rc;
}

/* The primary other than skip with the fewest replicas, or -1. */
static int
fewest_replicas(const struct cluster_map *m, int skip)
{
	int		 best = -1;
	unsigned	 nr, bestn = 0;

	for (size_t i = 0; i < m->nnodes; i++) {
		if ((int)i == skip || m->nodes[i].primary >= 0)
			continue;
		nr = replicas_of(m, (int)i);
		if (best < 0 || nr < bestn) {
			best = (int)i;
			bestn = nr;
		}
	}
	return best;
}

/*
 * The deleted node is told it is out, as redis-cli resets it: it gets the
 * new map, which does not name it, and a replica stops replicating. Best
 * effort, said but not failed: the node may be down for good.
 */
static void
tell_deleted(const struct cl *cl, struct cnode *n, const struct cluster_map *m,
    int replica)
{
	struct reply	 r;
	char		*text;
	size_t		 len;

	printf(">>> Sending the new map to the deleted node %s.\n", n->name);
	if ((text = cluster_map_format(m, &len)) == NULL)
		return;
	if (node_open(cl, n) == -1 || node_call(n, &r, 3, "CLUSTER", "SETMAP",
	    text) == -1) {
		printf("*** The deleted node could not be told: %s\n", n->err);
		free(text);
		return;
	}
	free(text);
	if (r.type != '+')
		printf("*** The deleted node keeps its old map (%s): remove "
		    "its data_dir's %s before it serves again\n", r.type ==
		    '-' ? r.str : "unexpected reply", CLUSTER_MAP_FILE);
	reply_free(&r);
	if (replica && node_call(n, &r, 3, "REPLICAOF", "NO", "ONE") == 0)
		reply_free(&r);
}

static int
cmd_del_node(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_YES, 0 };
	struct args		 a;
	struct view		 v;
	struct cluster_map	 m;
	struct cnode		 gone;
	int			 rc, i, to = -1;
	char			 id[CLUSTER_ID_LEN + 1];

	if ((rc = parse_args(cl, argc, argv, allowed, &a)) != 0 || a.n != 2) {
		verb_usage("del-node", "host:port node_id");
		return 2;
	}
	rc = 1;
	memset(&m, 0, sizeof(m));
	memset(&gone, 0, sizeof(gone));
	gone.c.fd = -1;
	printf(">>> Removing node %s from cluster %s\n", a.pos[1], a.pos[0]);
	if (view_load(cl, &v, a.pos[0]) == -1)
		goto out;
	if (strlen(a.pos[1]) != CLUSTER_ID_LEN || (i = cluster_map_find(&v.map,
	    a.pos[1])) < 0) {
		printf("[ERR] No such node ID %s\n", a.pos[1]);
		goto out;
	}
	if (cluster_map_slots_of(&v.map, i) > 0) {
		printf("[ERR] Node %s:%u is not empty! Reshard data away and "
		    "try again.\n", v.map.nodes[i].host, v.map.nodes[i].port);
		goto out;
	}
	if (v.implicit || v.map.nnodes < 2) {
		printf("[ERR] Node %s is the only node of its cluster\n",
		    a.pos[1]);
		goto out;
	}
	for (size_t k = 0; k < v.map.nnodes; k++)
		if (v.nodes[k].has_map && cluster_map_compare(
		    &v.nodes[k].map, &v.map) > 0) {
			printf("[ERR] Node %s holds a newer map than %s: run "
			    "seen-cli cluster fix first\n", v.nodes[k].name,
			    v.entry.name);
			goto out;
		}
	snprintf(id, sizeof(id), "%s", a.pos[1]);
	if (cluster_map_copy(&m, &v.map) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		goto out;
	}
	/* its replicas go to the primary with the fewest, as redis-cli's */
	if (replicas_of(&m, i) > 0) {
		if ((to = fewest_replicas(&m, i)) < 0) {
			printf("[ERR] Node %s has replicas and no other master "
			    "can take them\n", id);
			goto out;
		}
		printf(">>> %u nodes replicating from the deleted node, moving "
		    "them to %s:%u\n", replicas_of(&m, i), m.nodes[to].host,
		    m.nodes[to].port);
		for (size_t k = 0; k < m.nnodes; k++)
			if (m.nodes[k].primary == i)
				m.nodes[k].primary = to;
	}
	node_setaddr(&gone, m.nodes[i].host, m.nodes[i].port,
	    connect_port(cl, &m.nodes[i]));
	map_del(&m, i);
	if (to > i)
		to--;
	m.epoch = view_epoch(&v) + 1;
	if (map_canon(&m) == -1)
		goto out;
	printf(">>> Sending CLUSTER SETMAP (epoch %" PRIu64 ") to the "
	    "cluster...\n", m.epoch);
	if (push_view(cl, &v, NULL, &m) == -1)
		goto out;
	for (size_t k = 0; to >= 0 && k < m.nnodes; k++) {
		struct cnode r;

		if (m.nodes[k].primary < 0 || strcmp(m.nodes[m.nodes[k].primary]
		    .id, v.map.nodes[i].id) == 0)
			continue;
		/* only the ones that were the deleted node's replicas */
		if (v.map.nodes[cluster_map_find(&v.map, m.nodes[k].id)]
		    .primary != i)
			continue;
		node_setaddr(&r, m.nodes[k].host, m.nodes[k].port,
		    connect_port(cl, &m.nodes[k]));
		send_replicaof(cl, &r, m.nodes[m.nodes[k].primary].host,
		    connect_port(cl, &m.nodes[m.nodes[k].primary]));
		node_free(&r);
	}
	/* The deleted node is told it is out, as redis-cli resets it: the
	 * new map, which does not name it (a replica also stops
	 * replicating). Best effort: it may be down for good. */
	tell_deleted(cl, &gone, &m, v.map.nodes[i].primary >= 0);
	printf("[OK] Node %s removed from the cluster.\n", id);
	rc = 0;
out:
	if (m.nodes != NULL)
		cluster_map_free(&m);
	node_free(&gone);
	view_free(&v);
	return rc;
}

/* The nodes fix knows of: every node any map it has read names. */
struct fleet {
	struct cnode	*nodes;
	size_t		 n, cap;
};

static struct cnode *
fleet_find(struct fleet *f, const char *id)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->nodes[i].id, id) == 0)
			return &f->nodes[i];
	return NULL;
}

/* Adds the nodes m names that f lacks, loading each. */
static int
fleet_grow(const struct cl *cl, struct fleet *f, const struct cluster_map *m)
{
	struct cnode	*grown, *n;

	for (size_t i = 0; i < m->nnodes; i++) {
		const struct cluster_node *cn = &m->nodes[i];

		if (fleet_find(f, cn->id) != NULL)
			continue;
		if (f->n == f->cap) {
			f->cap = f->cap ? f->cap * 2 : 16;
			if ((grown = realloc(f->nodes, f->cap *
			    sizeof(*grown))) == NULL)
				return -1;
			f->nodes = grown;
		}
		n = &f->nodes[f->n++];
		node_setaddr(n, cn->host, cn->port, connect_port(cl, cn));
		if (node_load(cl, n) == 0 && strcmp(n->id, cn->id) != 0) {
			snprintf(n->err, sizeof(n->err), "answers as node %s, "
			    "not %s", n->id, cn->id);
			n->up = 0;
			node_close(n);
		}
		/* known by the map's ID, whatever answered there */
		snprintf(n->id, sizeof(n->id), "%s", cn->id);
	}
	return 0;
}

/*
 * Gives the uncovered slots of m to its primaries, the ones with the
 * fewest slots first, each up to an even share, in contiguous ranges.
 * Returns the count of slots given, or -1 when m has no primary.
 */
static int
cover_slots(struct cluster_map *m)
{
	unsigned	*count, total = 0, share, np = 0, given = 0;
	size_t		 i, s = 0, pick;
	int		*done;

	if ((count = calloc(m->nnodes, sizeof(*count))) == NULL ||
	    (done = calloc(m->nnodes, sizeof(*done))) == NULL) {
		free(count);
		return -1;
	}
	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].primary < 0) {
			count[i] = cluster_map_slots_of(m, (int)i);
			np++;
		} else
			done[i] = 1;
	if (np == 0) {
		free(count);
		free(done);
		return -1;
	}
	total = CLUSTER_SLOTS;
	share = (total + np - 1) / np;
	for (;;) {
		pick = m->nnodes;
		for (i = 0; i < m->nnodes; i++)
			if (!done[i] && (pick == m->nnodes ||
			    count[i] < count[pick]))
				pick = i;
		if (pick == m->nnodes)
			break;
		done[pick] = 1;
		while (count[pick] < share) {
			size_t a;

			while (s < CLUSTER_SLOTS && m->owner[s] !=
			    CLUSTER_NO_NODE)
				s++;
			if (s == CLUSTER_SLOTS)
				break;
			for (a = s; a < CLUSTER_SLOTS && m->owner[a] ==
			    CLUSTER_NO_NODE && count[pick] < share; a++) {
				m->owner[a] = (uint16_t)pick;
				count[pick]++;
				given++;
			}
			if (a - 1 == s)
				printf("Covering slot %zu with %s:%u\n", s,
				    m->nodes[pick].host, m->nodes[pick].port);
			else
				printf("Covering slots %zu-%zu with %s:%u\n", s,
				    a - 1, m->nodes[pick].host,
				    m->nodes[pick].port);
			s = a;
		}
	}
	free(count);
	free(done);
	return (int)given;
}

/* The uncovered slots as redis-cli lists them: "0-99,200". */
static void
print_uncovered(const struct cluster_map *m)
{
	size_t	 s, a;
	int	 first = 1;

	for (s = 0; s < CLUSTER_SLOTS; s = a + 1) {
		a = s;
		if (m->owner[s] != CLUSTER_NO_NODE)
			continue;
		while (a + 1 < CLUSTER_SLOTS && m->owner[a + 1] ==
		    CLUSTER_NO_NODE)
			a++;
		printf(a == s ? "%s%zu" : "%s%zu-%zu", first ? "" : ",", s, a);
		first = 0;
	}
	printf("\n");
}

static int
cmd_fix(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_YES, OPT_TIMEOUT, 0 };
	struct args		 a;
	struct view		 v;
	struct fleet		 f = { 0 };
	struct cluster_map	 m;
	const struct cluster_map *newest = NULL;
	struct cnode		*to = NULL;
	uint64_t		 epoch = 0;
	size_t			 i, nto = 0;
	int			 rc;

	if ((rc = parse_args(cl, argc, argv, allowed, &a)) != 0 || a.n != 1) {
		verb_usage("fix", "host:port");
		return 2;
	}
	rc = 1;
	memset(&m, 0, sizeof(m));
	/*
	 * TODO (a later step, with reshard): finish or roll back a slot
	 * move that was interrupted (a node kill -9'd mid-move), as
	 * redis-cli's fix closes open slots, before the maps are made to
	 * agree.
	 */
	if (view_load(cl, &v, a.pos[0]) == -1)
		goto out;
	/* every map read, and every node each of them names */
	if (fleet_grow(cl, &f, &v.map) == -1)
		goto nomem;
	for (i = 0; i < f.n; i++)
		if (f.nodes[i].has_map && fleet_grow(cl, &f,
		    &f.nodes[i].map) == -1)
			goto nomem;
	for (i = 0; i < f.n; i++) {
		if (!f.nodes[i].has_map)
			continue;
		if (newest == NULL || cluster_map_compare(&f.nodes[i].map,
		    newest) > 0)
			newest = &f.nodes[i].map;
		if (f.nodes[i].map.epoch > epoch)
			epoch = f.nodes[i].map.epoch;
	}
	if (newest == NULL) {
		printf("[OK] No node holds a map: a cluster of one has "
		    "nothing to fix.\n");
		view_free(&v);
		rc = run_check(cl, a.pos[0], 0);
		goto done;
	}
	if (cluster_map_copy(&m, newest) == -1)
		goto nomem;
	printf(">>> The newest map is epoch %" PRIu64 " (%zu nodes)\n",
	    m.epoch, m.nnodes);
	if (slots_covered(&m) < CLUSTER_SLOTS) {
		printf(">>> Fixing slots coverage...\n");
		printf("The following slots are covered by no node:\n");
		print_uncovered(&m);
		if (!confirm(cl, "Fix these slots by covering them with the "
		    "masters with the fewest slots?"))
			goto out;
		if (cover_slots(&m) < 0) {
			printf("[ERR] The map has no master to cover the "
			    "slots with\n");
			goto out;
		}
		m.epoch = epoch + 1;
		if (map_canon(&m) == -1)
			goto out;
	}
	if ((to = calloc(m.nnodes, sizeof(*to))) == NULL)
		goto nomem;
	{
		char	*text;
		size_t	 len;
		int	 pushed = 0;

		if ((text = cluster_map_format(&m, &len)) == NULL)
			goto nomem;
		for (i = 0; i < m.nnodes; i++) {
			const struct cluster_node *cn = &m.nodes[i];
			struct cnode *n = fleet_find(&f, cn->id);

			node_setaddr(&to[nto++], cn->host, cn->port,
			    connect_port(cl, cn));
			if (n != NULL && n->has_map && cluster_map_compare(
			    &n->map, &m) == 0)
				continue;
			if (n != NULL && n->has_map)
				printf(">>> Sending the map of epoch %" PRIu64
				    " to %s (it holds epoch %" PRIu64 ")\n",
				    m.epoch, to[i].name, n->map.epoch);
			else
				printf(">>> Sending the map of epoch %" PRIu64
				    " to %s (it holds none)\n", m.epoch,
				    to[i].name);
			if (push_map(cl, &to[i], text) == -1)
				rc = 3;
			pushed++;
		}
		free(text);
		if (rc != 3 && pushed > 0 && wait_agree(cl, to, nto, &m) == -1)
			rc = 3;
	}
	view_free(&v);
	memset(&v, 0, sizeof(v));
	rc = run_check(cl, a.pos[0], 0) == 0 && rc != 3 ? 0 : 1;
	goto done;
nomem:
	fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
out:
	view_free(&v);
done:
	for (i = 0; i < nto; i++)
		node_free(&to[i]);
	free(to);
	for (i = 0; i < f.n; i++)
		node_free(&f.nodes[i]);
	free(f.nodes);
	if (m.nodes != NULL)
		cluster_map_free(&m);
	return rc;
}

static int
cmd_check(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { 0 };
	struct args		 a;

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1) {
		verb_usage("check", "host:port");
		return 2;
	}
	return run_check(cl, a.pos[0], 1);
}

static int
cmd_info(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { 0 };
	struct args		 a;
	struct view		 v;
	int			 rc = 1;

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1) {
		verb_usage("info", "host:port");
		return 2;
	}
	if (view_load(cl, &v, a.pos[0]) == 0)
		rc = show_info(&v) == 0 ? 0 : 1;
	view_free(&v);
	return rc;
}

/* reshard and rebalance: their arguments are taken now so that scripts
 * written for them fail for the right reason. */
static int
cmd_move(struct cl *cl, int argc, char **argv)
{
	static const int	 reshard[] = { OPT_FROM, OPT_TO, OPT_SLOTS,
				    OPT_YES, OPT_TIMEOUT, OPT_PIPELINE, 0 };
	static const int	 rebalance[] = { OPT_WEIGHT, OPT_USE_EMPTY,
				    OPT_THRESHOLD, OPT_SIMULATE, OPT_YES,
				    OPT_TIMEOUT, OPT_PIPELINE, 0 };
	int			 is_reshard = strcmp(argv[0], "reshard") == 0;
	struct args		 a;

	if (parse_args(cl, argc, argv, is_reshard ? reshard : rebalance, &a)
	    != 0 || a.n != 1) {
		verb_usage(argv[0], is_reshard ? "host:port --from <id> --to "
		    "<id> --slots <n> [--yes]" : "host:port [--weight "
		    "<id>=<w>] [--use-empty-masters] [--threshold <t>] "
		    "[--simulate]");
		return 2;
	}
	fprintf(stderr, "seen-cli: cluster %s: moving slots is not available "
	    "yet\n", argv[0]);
	return 2;
}

static void
cluster_usage(FILE *fp)
{
	fprintf(fp, "usage: seen-cli [-a token] [--tls ...] cluster <verb> "
	    "...\n"
	    "  create host1:port1 ... hostN:portN [--replicas <n>] [--yes]\n"
	    "  add-node new_host:new_port existing_host:existing_port "
	    "[--replica-of <id>]\n"
	    "  del-node host:port node_id\n"
	    "  check host:port\n"
	    "  fix host:port [--yes]\n"
	    "  info host:port\n"
	    "  reshard host:port --from <id> --to <id> --slots <n> [--yes]\n"
	    "  rebalance host:port [--weight <id>=<w>] [--use-empty-masters] "
	    "[--threshold <t>] [--simulate]\n");
}

int
cli_cluster(const struct client_target *defaults, const char *token,
    int argc, char **argv)
{
	static const struct {
		const char	*name;
		int		(*fn)(struct cl *, int, char **);
	} verbs[] = {
		{ "create",	cmd_create },
		{ "add-node",	cmd_add_node },
		{ "del-node",	cmd_del_node },
		{ "check",	cmd_check },
		{ "fix",	cmd_fix },
		{ "info",	cmd_info },
		{ "reshard",	cmd_move },
		{ "rebalance",	cmd_move },
	};
	struct cl	 cl = { .defaults = defaults, .token = token };
	int		 rc;

	if (argc < 2) {
		cluster_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		cluster_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0) {
			rc = verbs[i].fn(&cl, argc - 1, argv + 1);
			fflush(stdout);
			return rc;
		}
	fprintf(stderr, "seen-cli: cluster: unknown verb '%s'\n", argv[1]);
	cluster_usage(stderr);
	return 2;
}
