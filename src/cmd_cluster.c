/*
 * cmd_cluster.c - CLUSTER and ASKING, as Redis 7.0 answers them to Redis
 * Cluster clients (issue 33), and seend's CLUSTER SETMAP and GETMAP.
 *
 * With [cluster] enabled = on and no map (step 1, a cluster of one), this
 * node owns all 16384 slots; its replicas (primary.c's links, core->repl)
 * are listed under it. On a replica the slot owner is its primary (host
 * and port from REPLICAOF, its ID from the handshake) and the replica
 * itself is listed under it, so that a client's READONLY reads can go
 * there. With a map (step 2, cluster_map.h), the replies list what it
 * says: every primary with its ranges and its replicas, the map's epoch
 * as every epoch; a client on the TLS port is told the nodes' TLS ports.
 * The replies have Redis 7.0.15's shapes: CLUSTER SLOTS' ranges, CLUSTER
 * SHARDS' maps, CLUSTER NODES' lines, CLUSTER INFO's fields. There is no
 * cluster bus: a node's bus port is 0.
 *
 * With it off (the default), every CLUSTER subcommand Redis has answers
 * "ERR This instance has cluster support disabled", as a standalone
 * redis-server does, after the same unknown-subcommand and arity checks.
 *
 * The line protocol has CLUSTER INFO ("name value" lines, END), CLUSTER
 * SLOTS ("<first> <last> <host>:<port> [<replica>...]" lines, END),
 * CLUSTER KEYSLOT <key> (a number) and CLUSTER MYID (the ID).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "cluster_map.h"
#include "keyslot.h"
#include "core.h"
#include "filter.h"
#include "log.h"
#include "peer.h"
#include "registry.h"
#include "resp.h"
#include "session.h"
#include "handler.h"
#include "keyspace.h"

#define DISABLED_TEXT	"This instance has cluster support disabled"
#define NO_ID		"0000000000000000000000000000000000000000"

/* A node as the replies list it. */
struct node {
	const char	*id;
	const char	*host;
	unsigned	 port;
	int		 primary;
	int		 myself;
	int		 online;	/* SHARDS' health: online, else loading */
	uint64_t	 offset;	/* its replication offset */
	long long	 pong_ms;	/* NODES' pong-recv: 0 for itself */
	const char	*primary_id;	/* a replica's, NULL for a primary */
	size_t		 nshard;	/* a primary: it and its replicas */
};

/* A range of slots and the shard that owns it: nodes[node], a primary,
 * and the nshard nodes after it. */
struct range {
	unsigned	 first, last;
	size_t		 node;
};

/* What the replies say: the nodes by shard (each primary followed by its
 * replicas), the ranges in slot order, CLUSTER INFO's numbers. */
struct view {
	struct node	*nodes;
	size_t		 nnodes;
	struct range	*ranges;
	size_t		 nranges;
	unsigned	 assigned;	/* slots owned */
	size_t		 size;		/* primaries owning a slot */
	uint64_t	 epoch;
	char		 tls_host[256];	/* this node's, for a TLS client */
};

/*
 * The nodes of this node's shard, its primary first, in nodes[] (room for
 * 1 + the replicas' links): on a primary itself and its replicas past
 * their full sync that gave a node ID; on a replica its primary and
 * itself. Returns how many.
 */
static size_t
shard_nodes(const struct core *core, struct node *nodes)
{
	const struct cluster	*cl = core->cluster;
	const struct core_repl	*rp = &core->repl;
	size_t			 n = 0;

	if (rp->replica) {
		nodes[n++] = (struct node){ rp->primary_id[0] != '\0' ?
		    rp->primary_id : NO_ID, rp->host, rp->port, 1, 0, 1,
		    rp->offset, (long long)rp->last_io * 1000, NULL, 2 };
		nodes[n++] = (struct node){ cl->myid, cl->host, cl->port, 0,
		    1, rp->link_up, rp->offset, 0, nodes[0].id, 0 };
		return n;
	}
	nodes[n++] = (struct node){ cl->myid, cl->host, cl->port, 1, 1, 1,
	    rp->offset, 0, NULL, 1 };
	for (size_t i = 0; i < rp->nreplicas; i++) {
		const struct core_replica *c = &rp->replicas[i];

		if (!c->online || c->node_id[0] == '\0')
			continue;
		nodes[n++] = (struct node){ c->node_id, c->ip, c->port, 0, 0,
		    1, c->ack, (long long)c->ack_at * 1000, cl->myid, 0 };
		nodes[0].nshard++;
	}
	return n;
}

/*
 * "host:port" or "[v6]:port" (config.c checked it): the port, the host
 * in host (hostlen bytes with its NUL; "" for a wildcard, which is no
 * address to give a client). 0 when addr is NULL.
 */
static unsigned
split_address(const char *addr, char *host, size_t hostlen)
{
	const char	*colon;
	size_t		 n;

	host[0] = '\0';
	if (addr == NULL || (colon = strrchr(addr, ':')) == NULL)
		return 0;
	n = (size_t)(colon - addr);
	if (addr[0] == '[' && n >= 2 && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hostlen)
		n = hostlen - 1;
	memcpy(host, addr, n);
	host[n] = '\0';
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
	    strcmp(host, "*") == 0)
		host[0] = '\0';
	return (unsigned)strtoul(colon + 1, NULL, 10);
}

/*
 * This node as a client on its TLS port is told it, without a map (a
 * map names its nodes' TLS ports): [cluster] tls_announce, else the
 * announced host with tls_listen's port, as Redis's tls-cluster gives a
 * TLS client TLS ports. Nothing changes when neither is set.
 */
static void
tls_myself(const struct core *core, struct node *me, struct view *v)
{
	const struct config	*cfg = core->cfg;
	unsigned		 port;

	if (cfg->cluster_tls_announce != NULL) {
		if ((port = split_address(cfg->cluster_tls_announce,
		    v->tls_host, sizeof(v->tls_host))) == 0)
			return;
		me->host = v->tls_host;
	} else if ((port = split_address(cfg->tls_listen, v->tls_host,
	    sizeof(v->tls_host))) == 0)
		return;
	me->port = port;
}

/* Without a map, step 1's cluster of one: this node's shard owns all. */
static int
view_one(const struct core *core, int tls, struct view *v)
{
	if ((v->nodes = calloc(2 + core->repl.nreplicas,
	    sizeof(*v->nodes))) == NULL ||
	    (v->ranges = calloc(1, sizeof(*v->ranges))) == NULL)
		return -1;
	v->nnodes = shard_nodes(core, v->nodes);
	for (size_t i = 0; tls && i < v->nnodes; i++)
		if (v->nodes[i].myself)
			tls_myself(core, &v->nodes[i], v);
	v->ranges[0] = (struct range){ 0, CLUSTER_SLOTS - 1, 0 };
	v->nranges = 1;
	v->assigned = CLUSTER_SLOTS;
	v->size = 1;
	return 0;
}

/* m's node i as the replies list it; tls: its TLS port where it has one
 * (a client on the TLS port is told those, as Redis's tls-cluster). */
static struct node
map_node(const struct core *core, const struct cluster_map *m, size_t i,
    int tls)
{
	const struct cluster_node	*x = &m->nodes[i];
	const struct cluster		*cl = core->cluster;
	int				 me = i == cl->me;

	return (struct node){ x->id, x->host, tls && x->tls_port != 0 ?
	    x->tls_port : x->port, x->primary < 0, me, me && x->primary >= 0 ?
	    core->repl.link_up : 1, me ? core->repl.offset : 0, 0,
	    x->primary >= 0 ? m->nodes[x->primary].id : NULL, 0 };
}

/* With a map: its primaries in its order, each followed by its replicas;
 * the ranges from its owner[]. */
static int
view_map(const struct core *core, int tls, struct view *v)
{
	const struct cluster_map	*m = core->cluster->map;
	size_t				*pos, n = 0, nr = 0;
	unsigned			 a;

	if ((pos = calloc(m->nnodes, sizeof(*pos))) == NULL ||
	    (v->nodes = calloc(m->nnodes, sizeof(*v->nodes))) == NULL) {
		free(pos);
		return -1;
	}
	for (size_t i = 0; i < m->nnodes; i++) {
		size_t p = n;

		if (m->nodes[i].primary >= 0)
			continue;
		pos[i] = n;
		v->nodes[n++] = map_node(core, m, i, tls);
		for (size_t j = 0; j < m->nnodes; j++)
			if (m->nodes[j].primary == (int)i) {
				pos[j] = n;
				v->nodes[n++] = map_node(core, m, j, tls);
			}
		v->nodes[p].nshard = n - p;
		v->size += cluster_map_slots_of(m, (int)i) > 0;
	}
	v->nnodes = n;
	for (a = 0; a < CLUSTER_SLOTS; a++)
		nr += m->owner[a] != CLUSTER_NO_NODE && (a == 0 ||
		    m->owner[a - 1] != m->owner[a]);
	if ((v->ranges = calloc(nr + 1, sizeof(*v->ranges))) == NULL) {
		free(pos);
		return -1;
	}
	for (a = 0; a < CLUSTER_SLOTS; a++) {
		if (m->owner[a] == CLUSTER_NO_NODE)
			continue;
		v->assigned++;
		if (a > 0 && m->owner[a - 1] == m->owner[a])
			v->ranges[v->nranges - 1].last = a;
		else
			v->ranges[v->nranges++] = (struct range){ a, a,
			    pos[m->owner[a]] };
	}
	v->epoch = m->epoch;
	free(pos);
	return 0;
}

static int
view_make(const struct core *core, int tls, struct view *v)
{
	memset(v, 0, sizeof(*v));
	if ((core->cluster->map != NULL ? view_map(core, tls, v) :
	    view_one(core, tls, v)) == 0)
		return 0;
	free(v->nodes);
	free(v->ranges);
	return -1;
}

static void
view_free(struct view *v)
{
	free(v->nodes);
	free(v->ranges);
}

static int
add_str(struct buf *b, const char *s)
{
	return resp_add_bulk(b, s, strlen(s));
}

/* CLUSTER SLOTS: [[first, last, [host, port, id, {}], ...], ...]; the
 * empty map is Redis 7's metadata (hostname), an empty array in RESP2. */
static void
reply_slots(const struct view *v, struct result *r)
{
	struct buf *b = result_reset();

	resp_add_array(b, (long long)v->nranges);
	for (size_t k = 0; k < v->nranges; k++) {
		const struct range *g = &v->ranges[k];
		const struct node *x = &v->nodes[g->node];

		resp_add_array(b, 2 + (long long)x->nshard);
		resp_add_int(b, g->first);
		resp_add_int(b, g->last);
		for (size_t i = 0; i < x->nshard; i++) {
			resp_add_array(b, 4);
			add_str(b, x[i].host);
			resp_add_int(b, x[i].port);
			add_str(b, x[i].id);
			resp_add_map(b, 0);
		}
	}
	result_scratch(r, RESULT_ARRAY);
}

/* The ranges of the primary nodes[i]: how many. */
static size_t
ranges_of(const struct view *v, size_t i)
{
	size_t n = 0;

	for (size_t k = 0; k < v->nranges; k++)
		n += v->ranges[k].node == i;
	return n;
}

/* CLUSTER SHARDS: per primary (one without slots too, as Redis) {slots:
 * [first, last, ...], nodes: [{id, port, ip, endpoint, role,
 * replication-offset, health}...]}. */
static void
reply_shards(const struct view *v, struct result *r)
{
	struct buf	*b = result_reset();
	size_t		 nshards = 0;

	for (size_t i = 0; i < v->nnodes; i++)
		nshards += v->nodes[i].primary;
	resp_add_array(b, (long long)nshards);
	for (size_t p = 0; p < v->nnodes; p++) {
		const struct node *x = &v->nodes[p];

		if (!x->primary)
			continue;
		resp_add_map(b, 2);
		add_str(b, "slots");
		resp_add_array(b, 2 * (long long)ranges_of(v, p));
		for (size_t k = 0; k < v->nranges; k++)
			if (v->ranges[k].node == p) {
				resp_add_int(b, v->ranges[k].first);
				resp_add_int(b, v->ranges[k].last);
			}
		add_str(b, "nodes");
		resp_add_array(b, (long long)x->nshard);
		for (size_t i = 0; i < x->nshard; i++) {
			resp_add_map(b, 7);
			add_str(b, "id");
			add_str(b, x[i].id);
			add_str(b, "port");
			resp_add_int(b, x[i].port);
			add_str(b, "ip");
			add_str(b, x[i].host);
			add_str(b, "endpoint");
			add_str(b, x[i].host);
			add_str(b, "role");
			add_str(b, x[i].primary ? "master" : "replica");
			add_str(b, "replication-offset");
			resp_add_int(b, (long long)x[i].offset);
			add_str(b, "health");
			add_str(b, x[i].online ? "online" : "loading");
		}
	}
	result_scratch(r, RESULT_ARRAY);
}

/* CLUSTER NODES: "<id> <ip>:<port>@<bus port> <flags> <primary> <ping
 * sent> <pong recv> <config epoch> <link> [<slots>]\n" per node. */
static void
reply_nodes(const struct view *v, struct result *r)
{
	struct buf	 t = { 0 };
	struct buf	*b;

	for (size_t i = 0; i < v->nnodes; i++) {
		const struct node *x = &v->nodes[i];

		buf_printf(&t, "%s %s:%u@0 %s%s %s 0 %lld %llu connected",
		    x->id, x->host, x->port, x->myself ? "myself," : "",
		    x->primary ? "master" : "slave",
		    x->primary ? "-" : x->primary_id, x->pong_ms,
		    (unsigned long long)v->epoch);
		for (size_t k = 0; k < v->nranges; k++) {
			const struct range *g = &v->ranges[k];

			if (g->node != i)
				continue;
			if (g->first == g->last)
				buf_printf(&t, " %u", g->first);
			else
				buf_printf(&t, " %u-%u", g->first, g->last);
		}
		buf_printf(&t, "\n");
	}
	b = result_reset();
	if (resp_add_verbatim(b, "txt", t.data != NULL ? buf_head(&t) : "",
	    buf_used(&t)) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	buf_free(&t);
}

/* CLUSTER INFO's fields as Redis Cluster has them; sep ':' (RESP) or ' '
 * (the line protocol's "name value"). */
static void
info_text(struct buf *t, const struct view *v, char sep)
{
	static const char *const names[] = {
		"cluster_state", "cluster_slots_assigned", "cluster_slots_ok",
		"cluster_slots_pfail", "cluster_slots_fail",
		"cluster_known_nodes", "cluster_size", "cluster_current_epoch",
		"cluster_my_epoch", "cluster_stats_messages_sent",
		"cluster_stats_messages_received",
		"total_cluster_links_buffer_limit_exceeded",
	};
	char	 val[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (i == 0)
			snprintf(val, sizeof(val), "%s", v->assigned ==
			    CLUSTER_SLOTS ? "ok" : "fail");
		else if (i == 1 || i == 2)
			snprintf(val, sizeof(val), "%u", v->assigned);
		else if (i == 5)
			snprintf(val, sizeof(val), "%zu", v->nnodes);
		else if (i == 6)
			snprintf(val, sizeof(val), "%zu", v->size);
		else if (i == 7 || i == 8)
			snprintf(val, sizeof(val), "%llu",
			    (unsigned long long)v->epoch);
		else
			snprintf(val, sizeof(val), "0");
		buf_printf(t, "%s%c%s\r\n", names[i], sep, val);
	}
}

static void
reply_info(const struct view *v, int line, struct result *r)
{
	struct buf	 t = { 0 };
	struct buf	*b;

	if (line) {
		b = result_reset();
		info_text(b, v, ' ');
		result_scratch(r, RESULT_TEXT);
		return;
	}
	info_text(&t, v, ':');
	b = result_reset();
	if (resp_add_verbatim(b, "txt", t.data != NULL ? buf_head(&t) : "",
	    buf_used(&t)) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	buf_free(&t);
}

/* The line protocol's CLUSTER SLOTS: "<first> <last> <host>:<port>
 * [<replica host>:<port> ...]" per range, then END. */
static void
reply_slots_line(const struct view *v, struct result *r)
{
	struct buf *b = result_reset();

	for (size_t k = 0; k < v->nranges; k++) {
		const struct range *g = &v->ranges[k];
		const struct node *x = &v->nodes[g->node];

		buf_printf(b, "%u %u", g->first, g->last);
		for (size_t i = 0; i < x->nshard; i++)
			buf_printf(b, " %s:%u", x[i].host, x[i].port);
		buf_printf(b, "\r\n");
	}
	result_scratch(r, RESULT_TEXT);
}

/* A slot argument as Redis reads it: a number (else the integer error),
 * then in range (else why). -1 after setting r. */
static long long
slot_arg(const char *s, size_t len, const char *why, struct result *r)
{
	long long v;

	if (command_arg_ll(s, len, &v) == -1) {
		result_error(r, "ERR", "value is not an integer or out of "
		    "range");
		return -1;
	}
	if (v < 0 || v >= CLUSTER_SLOTS) {
		result_error(r, "ERR", "%s", why);
		return -1;
	}
	return v;
}

/*
 * COUNTKEYSINSLOT <slot>, GETKEYSINSLOT <slot> <count>: the keys seend
 * can list are its filters (KEYS, SCAN), so these count and list the
 * filters whose names hash to the slot; URL keys are bits in a filter and
 * are never listed (a slot of URLs counts 0).
 */
static void
keys_in_slot(struct session *s, struct op *op, int get, struct result *r)
{
	const struct registry	*reg = s->core->reg;
	long long		 slot, max = 0, n = 0;
	struct buf		*b;

	if (get) {
		if (command_arg_ll(op->argv[2], op->argl[2], &slot) == -1 ||
		    command_arg_ll(op->argv[3], op->argl[3], &max) == -1) {
			result_error(r, "ERR", "value is not an integer or "
			    "out of range");
			return;
		}
		if (slot < 0 || slot >= CLUSTER_SLOTS || max < 0) {
			result_error(r, "ERR", "Invalid slot or number of "
			    "keys");
			return;
		}
	} else if ((slot = slot_arg(op->argv[2], op->argl[2], "Invalid slot",
	    r)) == -1)
		return;
	for (size_t i = 0; i < reg->nfilters; i++)
		n += keyslot_of(reg->filters[i]->name,
		    reg->filters[i]->namelen) == (unsigned)slot;
	if (!get) {
		result_int(r, n);
		return;
	}
	if (n > max)
		n = max;
	b = result_reset();
	resp_add_array(b, n);
	for (size_t i = 0; i < reg->nfilters && n > 0; i++) {
		const struct filter *f = reg->filters[i];

		if (keyslot_of(f->name, f->namelen) != (unsigned)slot)
			continue;
		resp_add_bulk(b, f->name, f->namelen);
		n--;
	}
	result_scratch(r, RESULT_ARRAY);
}

static void
reply_help(struct result *r)
{
	static const char *const lines[] = {
		"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands "
		    "are:",
		"COUNTKEYSINSLOT <slot>",
		"    Return the number of keys in <slot> (filters: a URL is "
		    "not a listed key).",
		"GETKEYSINSLOT <slot> <count>",
		"    Return key names stored by current node in a slot.",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"MYID",
		"    Return the node id.",
		"NODES",
		"    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> "
		    "<link> <slot> ...",
		"SLOTS",
		"    Return information about slots range mappings. Each range "
		    "is made of:",
		"    start, end, master and replicas IP addresses, ports and "
		    "ids",
		"SHARDS",
		"    Return information about slot range mappings and the "
		    "nodes associated with them.",
		"SETMAP <map>",
		"    Take the cluster's map if it is newer than this node's "
		    "(seen-cli cluster sends it).",
		"GETMAP",
		"    Return the cluster's map this node holds (null: none, a "
		    "cluster of one).",
		"SLOTBITS <first> <last> [BITSONLY]",
		"    Return the partitioned filters' bits of those slots and "
		    "their named filters (a move's copy).",
		"SLOTMERGE <image> [SAVE [STREAM]]",
		"    OR a SLOTBITS image into this node's filters (SAVE: and "
		    "snapshot them; STREAM: replicas take it in the stream).",
		"HANDOFF START <first> <last> <node-id> | CANCEL <first> "
		    "<last> | LIST",
		"    Pause slots for their hand-over to another node (-TRYAGAIN)"
		    ", or end it.",
		"RESETPART <filter> <seed>",
		"    Empty this node's part of a partitioned filter hashing with "
		    "<seed> (seen-cli cluster reset sends it).",
		"PARTSEED <filter>",
		"    Return the seed this node's part of a partitioned filter "
		    "hashes with.",
		"HELP",
		"    Prints this help.",
	};
	struct buf *b = result_reset();

	resp_add_array(b, sizeof(lines) / sizeof(lines[0]));
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		resp_add_status(b, lines[i]);
	result_scratch(r, RESULT_ARRAY);
}

enum sub {
	SUB_OTHER, SUB_SLOTS, SUB_SHARDS, SUB_NODES, SUB_INFO, SUB_MYID,
	SUB_KEYSLOT, SUB_COUNTKEYS, SUB_GETKEYS, SUB_HELP, SUB_SETMAP,
	SUB_GETMAP, SUB_SLOTBITS, SUB_SLOTMERGE, SUB_HANDOFF, SUB_RESETPART,
	SUB_PARTSEED,
};

/* Redis 7.0.15's CLUSTER subcommands and their arities (the command's
 * name counted), those seend answers with what it does, and seend's
 * own. */
static const struct subcommand {
	const char	*name;		/* upper case */
	int		 arity;		/* < 0: at least -arity */
	enum sub	 sub;
} subs[] = {
	{ "SLOTS", 2, SUB_SLOTS },
	{ "SHARDS", 2, SUB_SHARDS },
	{ "NODES", 2, SUB_NODES },
	{ "INFO", 2, SUB_INFO },
	{ "MYID", 2, SUB_MYID },
	{ "KEYSLOT", 3, SUB_KEYSLOT },
	{ "COUNTKEYSINSLOT", 3, SUB_COUNTKEYS },
	{ "GETKEYSINSLOT", 4, SUB_GETKEYS },
	{ "HELP", 2, SUB_HELP },
	/* seend's: the map (cluster_map.h) */
	{ "SETMAP", 3, SUB_SETMAP },
	{ "GETMAP", 2, SUB_GETMAP },
	/* seend's: a slot's move (cluster_move.h) */
	{ "SLOTBITS", -4, SUB_SLOTBITS },
	{ "SLOTMERGE", -3, SUB_SLOTMERGE },
	{ "HANDOFF", -3, SUB_HANDOFF },
	/* seend's: a partitioned filter emptied on every node */
	{ "RESETPART", -3, SUB_RESETPART },
	{ "PARTSEED", -3, SUB_PARTSEED },
	{ "ADDSLOTS", -3, SUB_OTHER },
	{ "ADDSLOTSRANGE", -4, SUB_OTHER },
	{ "BUMPEPOCH", 2, SUB_OTHER },
	{ "COUNT-FAILURE-REPORTS", 3, SUB_OTHER },
	{ "DELSLOTS", -3, SUB_OTHER },
	{ "DELSLOTSRANGE", -4, SUB_OTHER },
	{ "FAILOVER", -2, SUB_OTHER },
	{ "FLUSHSLOTS", 2, SUB_OTHER },
	{ "FORGET", 3, SUB_OTHER },
	{ "LINKS", 2, SUB_OTHER },
	{ "MEET", -4, SUB_OTHER },
	{ "REPLICAS", 3, SUB_OTHER },
	{ "REPLICATE", 3, SUB_OTHER },
	{ "RESET", -2, SUB_OTHER },
	{ "SAVECONFIG", 2, SUB_OTHER },
	{ "SET-CONFIG-EPOCH", 3, SUB_OTHER },
	{ "SETSLOT", -4, SUB_OTHER },
	{ "SLAVES", 3, SUB_OTHER },
};

static const struct subcommand *
find_sub(const char *w, size_t l)
{
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (name_is(w, l, subs[i].name, strlen(subs[i].name)))
			return &subs[i];
	return NULL;
}

/* SLOTS, SHARDS, NODES or INFO (line: the line protocol's INFO or
 * SLOTS). */
static void
shard_reply(const struct session *s, enum sub sub, int line,
    struct result *r)
{
	struct view v;

	if (view_make(s->core, s->tls, &v) == -1) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	if (sub == SUB_SLOTS)
		line ? reply_slots_line(&v, r) : reply_slots(&v, r);
	else if (sub == SUB_SHARDS)
		reply_shards(&v, r);
	else if (sub == SUB_NODES)
		reply_nodes(&v, r);
	else
		reply_info(&v, line, r);
	view_free(&v);
}

/* CLUSTER GETMAP: the map's canonical text, or null without one. */
static void
reply_getmap(const struct cluster *cl, struct result *r)
{
	struct buf	*b;
	char		*text;
	size_t		 len;

	if (cl->map == NULL) {
		result_null(r);
		return;
	}
	if ((text = cluster_map_format(cl->map, &len)) == NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	b = result_reset();
	if (resp_add_bulk(b, text, len) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	free(text);
}

/* CLUSTER SETMAP <map>: see cluster_take. */
static void
setmap(struct session *s, struct op *op, struct result *r)
{
	char err[700];

	switch (cluster_offer(s->core->cluster, s->core->cfg->data_dir,
	    op->argv[2], op->argl[2], s->peer, err, sizeof(err))) {
	case CLUSTER_TAKEN:
		peer_map_changed(s->core);
		result_status(r, "OK");
		break;
	case CLUSTER_SAME:
		result_status(r, "OK");
		break;
	case CLUSTER_STALE:
		result_error(r, "STALEMAP", "%s", err);
		break;
	default:
		result_error(r, "ERR", "%s", err);
		break;
	}
}

/* The line protocol's CLUSTER INFO | SLOTS | KEYSLOT <key> | MYID. */
static void
cluster_line(struct session *s, struct op *op, const struct subcommand *sc,
    struct result *r)
{
	const struct cluster *cl = s->core->cluster;

	if (sc == NULL || (sc->sub != SUB_INFO && sc->sub != SUB_KEYSLOT &&
	    sc->sub != SUB_MYID && sc->sub != SUB_SLOTS)) {
		result_error(r, "ERR", "CLUSTER takes INFO, SLOTS, KEYSLOT <key> "
		    "or MYID on the line protocol");
		return;
	}
	if (op->argc != (sc->sub == SUB_KEYSLOT ? 3 : 2)) {
		result_error(r, "ERR", "wrong number of arguments for "
		    "'CLUSTER %s'", sc->name);
		return;
	}
	if (cl == NULL) {
		result_error(r, "ERR", DISABLED_TEXT);
		return;
	}
	if (sc->sub == SUB_KEYSLOT)
		result_int(r, keyslot_of(op->argv[2], op->argl[2]));
	else if (sc->sub == SUB_MYID)
		result_status(r, cl->myid);
	else
		shard_reply(s, sc->sub, 1, r);
}

void
cmd_cluster(struct session *s, struct op *op, struct result *r)
{
	const struct subcommand	*sc = find_sub(op->argv[1], op->argl[1]);
	char			 tok[80];

	if (op->proto == COMMAND_LINE) {
		cluster_line(s, op, sc, r);
		return;
	}
	if (sc == NULL) {
		result_error(r, "ERR", "unknown subcommand '%s'. Try CLUSTER "
		    "HELP.", command_printable(op->argv[1], op->argl[1], tok,
		    sizeof(tok)));
		return;
	}
	if (sc->arity >= 0 ? op->argc != sc->arity : op->argc < -sc->arity) {
		char lower[32];
		size_t i;

		for (i = 0; sc->name[i] != '\0' && i + 1 < sizeof(lower); i++)
			lower[i] = (char)(sc->name[i] | 0x20);
		lower[i] = '\0';
		result_error(r, "ERR", "wrong number of arguments for "
		    "'cluster|%s' command", lower);
		return;
	}
	if (s->core->cluster == NULL) {
		result_error(r, "ERR", DISABLED_TEXT);
		return;
	}
	switch (sc->sub) {
	case SUB_HELP:
		reply_help(r);
		return;
	case SUB_MYID:
		result_bulk(r, s->core->cluster->myid, CLUSTER_ID_LEN);
		return;
	case SUB_KEYSLOT:
		result_int(r, keyslot_of(op->argv[2], op->argl[2]));
		return;
	case SUB_COUNTKEYS:
	case SUB_GETKEYS:
		keys_in_slot(s, op, sc->sub == SUB_GETKEYS, r);
		return;
	case SUB_SETMAP:
		setmap(s, op, r);
		return;
	case SUB_GETMAP:
		reply_getmap(s->core->cluster, r);
		return;
	case SUB_SLOTBITS:
		cmd_cluster_slotbits(s, op, r);
		return;
	case SUB_SLOTMERGE:
		cmd_cluster_slotmerge(s, op, r);
		return;
	case SUB_HANDOFF:
		cmd_cluster_handoff(s, op, r);
		return;
	case SUB_RESETPART:
		keyspace_reset_part(s, op, r);
		return;
	case SUB_PARTSEED:
		keyspace_part_seed(s, op, r);
		return;
	case SUB_OTHER:
		result_error(r, "ERR", "CLUSTER %s is not supported: a seend "
		    "cluster's slots move by seen-cli cluster (CLUSTER SETMAP)",
		    sc->name);
		return;
	default:
		break;
	}
	shard_reply(s, sc->sub, 0, r);
}

/* ASKING: +OK in cluster mode (no slot is ever being imported yet); the
 * error of a standalone redis-server otherwise. */
void
cmd_asking(struct session *s, struct op *op, struct result *r)
{
	(void)op;
	if (s->core->cluster == NULL)
		result_error(r, "ERR", DISABLED_TEXT);
	else
		result_status(r, "OK");
}
