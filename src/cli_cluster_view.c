/*
 * cli_cluster_view.c - the maps seen-cli cluster makes and prints, how it
 * pushes one to the nodes and waits for them to agree, and a cluster as
 * one node describes it (redis-cli's check and info). See
 * cli_cluster_int.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_cluster_int.h"
#include "client.h"
#include "cluster_map.h"

/* Seconds the nodes may take to agree on a map just pushed. */
#define AGREE_WAIT	10.0

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
int
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
int
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
	if (m->seed != 0)
		rc |= buf_printf(&t, &len, &cap, "seed %016" PRIx64 "\n",
		    m->seed);
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

unsigned
replicas_of(const struct cluster_map *m, int i)
{
	unsigned n = 0;

	for (size_t j = 0; j < m->nnodes; j++)
		if (m->nodes[j].primary == i)
			n++;
	return n;
}

unsigned
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
void
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
int
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
int
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
int
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

double
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
int
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

int
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

/* ---- a cluster as one node sees it ---- */

void
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
int
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
int
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

char *
node_handoffs(struct cnode *n)
{
	struct reply	 r;
	char		*text = NULL;

	if (n->c.fd == -1 || node_call(n, &r, 3, "CLUSTER", "HANDOFF",
	    "LIST") == -1)
		return NULL;
	if (r.type == '$' && r.str != NULL) {
		text = r.str;
		r.str = NULL;
	} else
		snprintf(n->err, sizeof(n->err), "CLUSTER HANDOFF LIST: %s",
		    r.type == '-' ? r.str : "unexpected reply");
	reply_free(&r);
	return text;
}

/* Prints the slots each reachable primary of v pauses for a hand-over
 * (redis-cli's open slots); returns how many ranges. */
static int
report_handoffs(struct view *v)
{
	int	 n = 0;

	for (size_t i = 0; i < v->map.nnodes; i++) {
		char		*text, *line, *next;
		unsigned	 a, b;
		char		 id[CLUSTER_ID_LEN + 2];

		if (!v->nodes[i].up || (text = node_handoffs(&v->nodes[i])) ==
		    NULL)
			continue;
		for (line = text; *line != '\0'; line = next) {
			if ((next = strchr(line, '\n')) == NULL)
				next = line + strlen(line);
			else
				*next++ = '\0';
			if (sscanf(line, "%u %u %41s", &a, &b, id) != 3)
				continue;
			printf("[WARNING] Node %s has slots %u-%u paused for "
			    "their hand-over to %s\n", v->nodes[i].name, a, b,
			    id);
			n++;
		}
		free(text);
	}
	return n;
}

/* redis-cli's clusterManagerCheckCluster: 0 when every node is reachable
 * and holds the entry's map and every slot is covered, else -1. */
int
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
	if (report_handoffs(v) > 0) {
		printf("[ERR] Slots are being handed over: a move was "
		    "interrupted (seen-cli cluster fix finishes or rolls it "
		    "back).\n");
		ok = 0;
	}
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

/* Checks the cluster through addr, printing redis-cli's check. */
int
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
