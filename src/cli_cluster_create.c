/*
 * cli_cluster_create.c - seen-cli cluster create: slots split evenly over
 * the primaries and replicas spread over hosts, as redis-cli does.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster_int.h"
#include "cluster_map.h"
#include "filter.h"

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

int
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
		if ((lrc = node_is_empty(&nodes[i])) != 1) {
			if (lrc == -1)
				printf("[ERR] Node %s %s\n", nodes[i].name,
				    nodes[i].err);
			else
				printf("[ERR] Node %s is not empty. Either the "
				    "node already knows other nodes (check "
				    "with CLUSTER GETMAP) or contains some key "
				    "in database 0.\n", nodes[i].name);
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
	/* the partitioned filters' one seed on every node: what lets a
	 * slot's bits be copied from one node to another (cluster_map.h) */
	m.seed = filter_new_seed(1);
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
