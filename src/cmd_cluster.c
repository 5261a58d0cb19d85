/*
 * cmd_cluster.c - CLUSTER and ASKING, as Redis 7.0 answers them to Redis
 * Cluster clients (issue 33, step 1: a cluster of one).
 *
 * With [cluster] enabled = on, this node owns all 16384 slots; its
 * replicas (primary.c's links, core->repl) are listed under it. On a
 * replica the slot owner is its primary (host and port from REPLICAOF,
 * its ID from the handshake) and the replica itself is listed under it,
 * so that a client's READONLY reads can go there. The replies have Redis
 * 7.0.15's shapes: CLUSTER SLOTS' ranges, CLUSTER SHARDS' maps, CLUSTER
 * NODES' lines, CLUSTER INFO's fields. There is no cluster bus: a node's
 * bus port is 0, its epochs 0.
 *
 * With it off (the default), every CLUSTER subcommand Redis has answers
 * "ERR This instance has cluster support disabled", as a standalone
 * redis-server does, after the same unknown-subcommand and arity checks.
 *
 * The line protocol has CLUSTER INFO ("name value" lines, END), CLUSTER
 * KEYSLOT <key> (a number) and CLUSTER MYID (the ID).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "core.h"
#include "filter.h"
#include "registry.h"
#include "resp.h"
#include "session.h"
#include "handler.h"

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
		    rp->offset, (long long)rp->last_io * 1000 };
		nodes[n++] = (struct node){ cl->myid, cl->host, cl->port, 0,
		    1, rp->link_up, rp->offset, 0 };
		return n;
	}
	nodes[n++] = (struct node){ cl->myid, cl->host, cl->port, 1, 1, 1,
	    rp->offset, 0 };
	for (size_t i = 0; i < rp->nreplicas; i++) {
		const struct core_replica *c = &rp->replicas[i];

		if (!c->online || c->node_id[0] == '\0')
			continue;
		nodes[n++] = (struct node){ c->node_id, c->ip, c->port, 0, 0,
		    1, c->ack, (long long)c->ack_at * 1000 };
	}
	return n;
}

static int
add_str(struct buf *b, const char *s)
{
	return resp_add_bulk(b, s, strlen(s));
}

/* CLUSTER SLOTS: [[0, 16383, [host, port, id, {}], ...]]; the empty map
 * is Redis 7's metadata (hostname), an empty array in RESP2. */
static void
reply_slots(const struct node *nodes, size_t n, struct result *r)
{
	struct buf *b = result_reset();

	resp_add_array(b, 1);
	resp_add_array(b, 2 + (long long)n);
	resp_add_int(b, 0);
	resp_add_int(b, CLUSTER_SLOTS - 1);
	for (size_t i = 0; i < n; i++) {
		resp_add_array(b, 4);
		add_str(b, nodes[i].host);
		resp_add_int(b, nodes[i].port);
		add_str(b, nodes[i].id);
		resp_add_map(b, 0);
	}
	result_scratch(r, RESULT_ARRAY);
}

/* CLUSTER SHARDS: [{slots: [0, 16383], nodes: [{id, port, ip, endpoint,
 * role, replication-offset, health}...]}]. */
static void
reply_shards(const struct node *nodes, size_t n, struct result *r)
{
	struct buf *b = result_reset();

	resp_add_array(b, 1);
	resp_add_map(b, 2);
	add_str(b, "slots");
	resp_add_array(b, 2);
	resp_add_int(b, 0);
	resp_add_int(b, CLUSTER_SLOTS - 1);
	add_str(b, "nodes");
	resp_add_array(b, (long long)n);
	for (size_t i = 0; i < n; i++) {
		resp_add_map(b, 7);
		add_str(b, "id");
		add_str(b, nodes[i].id);
		add_str(b, "port");
		resp_add_int(b, nodes[i].port);
		add_str(b, "ip");
		add_str(b, nodes[i].host);
		add_str(b, "endpoint");
		add_str(b, nodes[i].host);
		add_str(b, "role");
		add_str(b, nodes[i].primary ? "master" : "replica");
		add_str(b, "replication-offset");
		resp_add_int(b, (long long)nodes[i].offset);
		add_str(b, "health");
		add_str(b, nodes[i].online ? "online" : "loading");
	}
	result_scratch(r, RESULT_ARRAY);
}

/* CLUSTER NODES: "<id> <ip>:<port>@<bus port> <flags> <primary> <ping
 * sent> <pong recv> <config epoch> <link> [<slots>]\n" per node. */
static void
reply_nodes(const struct node *nodes, size_t n, struct result *r)
{
	struct buf	 t = { 0 };
	struct buf	*b;
	const char	*primary_id = nodes[0].id;

	for (size_t i = 0; i < n; i++) {
		const struct node *x = &nodes[i];

		buf_printf(&t, "%s %s:%u@0 %s%s %s 0 %lld 0 connected%s\n",
		    x->id, x->host, x->port, x->myself ? "myself," : "",
		    x->primary ? "master" : "slave",
		    x->primary ? "-" : primary_id, x->pong_ms,
		    x->primary ? " 0-16383" : "");
	}
	b = result_reset();
	if (resp_add_verbatim(b, "txt", t.data != NULL ? buf_head(&t) : "",
	    buf_used(&t)) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	buf_free(&t);
}

/* CLUSTER INFO's fields as a one-node Redis Cluster has them; sep ':'
 * (RESP) or ' ' (the line protocol's "name value"). */
static void
info_text(struct buf *t, size_t known, char sep)
{
	static const char *const names[] = {
		"cluster_state", "cluster_slots_assigned", "cluster_slots_ok",
		"cluster_slots_pfail", "cluster_slots_fail",
		"cluster_known_nodes", "cluster_size", "cluster_current_epoch",
		"cluster_my_epoch", "cluster_stats_messages_sent",
		"cluster_stats_messages_received",
		"total_cluster_links_buffer_limit_exceeded",
	};
	char	 v[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (i == 0)
			snprintf(v, sizeof(v), "ok");
		else if (i == 1 || i == 2)
			snprintf(v, sizeof(v), "%d", CLUSTER_SLOTS);
		else if (i == 5)
			snprintf(v, sizeof(v), "%zu", known);
		else if (i == 6)
			snprintf(v, sizeof(v), "1");
		else
			snprintf(v, sizeof(v), "0");
		buf_printf(t, "%s%c%s\r\n", names[i], sep, v);
	}
}

static void
reply_info(size_t n, int line, struct result *r)
{
	struct buf	 t = { 0 };
	struct buf	*b;

	if (line) {
		b = result_reset();
		info_text(b, n, ' ');
		result_scratch(r, RESULT_TEXT);
		return;
	}
	info_text(&t, n, ':');
	b = result_reset();
	if (resp_add_verbatim(b, "txt", t.data != NULL ? buf_head(&t) : "",
	    buf_used(&t)) == -1)
		result_error(r, "ERR", "out of memory");
	else
		result_scratch(r, RESULT_ARRAY);
	buf_free(&t);
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
		n += cluster_keyslot(reg->filters[i]->name,
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

		if (cluster_keyslot(f->name, f->namelen) != (unsigned)slot)
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
	SUB_KEYSLOT, SUB_COUNTKEYS, SUB_GETKEYS, SUB_HELP,
};

/* Redis 7.0.15's CLUSTER subcommands and their arities (the command's
 * name counted), those seend answers with what it does. */
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

/* SLOTS, SHARDS, NODES or INFO (line: the line protocol's INFO). */
static void
shard_reply(const struct core *core, enum sub sub, int line,
    struct result *r)
{
	struct node	*nodes;
	size_t		 n;

	if ((nodes = calloc(2 + core->repl.nreplicas, sizeof(*nodes))) ==
	    NULL) {
		result_error(r, "ERR", "out of memory");
		return;
	}
	n = shard_nodes(core, nodes);
	if (sub == SUB_SLOTS)
		reply_slots(nodes, n, r);
	else if (sub == SUB_SHARDS)
		reply_shards(nodes, n, r);
	else if (sub == SUB_NODES)
		reply_nodes(nodes, n, r);
	else
		reply_info(n, line, r);
	free(nodes);
}

/* The line protocol's CLUSTER INFO | KEYSLOT <key> | MYID. */
static void
cluster_line(struct session *s, struct op *op, const struct subcommand *sc,
    struct result *r)
{
	const struct cluster *cl = s->core->cluster;

	if (sc == NULL || (sc->sub != SUB_INFO && sc->sub != SUB_KEYSLOT &&
	    sc->sub != SUB_MYID)) {
		result_error(r, "ERR", "CLUSTER takes INFO, KEYSLOT <key> or "
		    "MYID on the line protocol");
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
		result_int(r, cluster_keyslot(op->argv[2], op->argl[2]));
	else if (sc->sub == SUB_MYID)
		result_status(r, cl->myid);
	else
		shard_reply(s->core, SUB_INFO, 1, r);
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
		result_int(r, cluster_keyslot(op->argv[2], op->argl[2]));
		return;
	case SUB_COUNTKEYS:
	case SUB_GETKEYS:
		keys_in_slot(s, op, sc->sub == SUB_GETKEYS, r);
		return;
	case SUB_OTHER:
		result_error(r, "ERR", "CLUSTER %s is not supported: a seend "
		    "node owns every slot (a cluster of one)", sc->name);
		return;
	default:
		break;
	}
	shard_reply(s->core, sc->sub, 0, r);
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
