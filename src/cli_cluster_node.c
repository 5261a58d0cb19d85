/*
 * cli_cluster_node.c - seen-cli cluster add-node and del-node: a node
 * joins or leaves a cluster by a new map, pushed to every node it names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster_int.h"
#include "cluster_map.h"

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

int
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
	if ((lrc = node_is_empty(&nn)) != 1) {
		if (lrc == -1)
			printf("[ERR] Node %s %s\n", nn.name, nn.err);
		else
			printf("[ERR] Node %s is not empty. Either the node "
			    "already knows other nodes (check with CLUSTER "
			    "GETMAP) or contains some key in database 0.\n",
			    nn.name);
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

int
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
