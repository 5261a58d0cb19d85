/*
 * cli_cluster_reset.c - seen-cli cluster reset: a partitioned filter
 * emptied on every primary of the cluster.
 *
 * A partitioned filter is one filter whose slots' parts live on the
 * nodes owning them; DEL or RESET on one node would empty only its part
 * (the node refuses). Each primary empties its part with CLUSTER
 * RESETPART, which takes the seed after the one named (filter.h's
 * filter_next_seed): every part then hashes with the same new seed, and
 * slots move between the nodes again. The seed named is read from the
 * primaries first (CLUSTER PARTSEED): the parts that hold keys agree, or
 * a reset that stopped midway left two, one the other's next, and sending
 * it again finishes it (a part already emptied answers +OK and is left
 * alone). A part holding nothing (a primary added since, whose seed is
 * the map's) counts for nothing and takes the new seed. Replicas follow
 * their primaries' streams.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster_int.h"
#include "cluster_map.h"
#include "filter.h"

/* A primary's seed of the filter and whether its part holds keys: 0, or
 * -1 after saying why. */
static int
part_seed(struct cnode *n, const char *filter, uint64_t *seed, int *keys)
{
	struct reply	 r;
	char		*end;
	int		 rc = -1;

	if (!n->up) {
		printf("[ERR] Node %s: %s\n", n->name, n->err);
		return -1;
	}
	if (node_call(n, &r, 3, "CLUSTER", "PARTSEED", filter) == -1) {
		printf("[ERR] Node %s: %s\n", n->name, n->err);
		return -1;
	}
	/* "<16 hex digits> empty|keys" */
	if (r.type == '$' && r.str != NULL && r.len > 17 && r.str[16] == ' ') {
		*seed = strtoull(r.str, &end, 16);
		*keys = strcmp(r.str + 17, "keys") == 0;
		rc = end == r.str + 16 && (*keys ||
		    strcmp(r.str + 17, "empty") == 0) ? 0 : -1;
	}
	if (rc == -1)
		printf("[ERR] Node %s answers CLUSTER PARTSEED %s with %c%s\n",
		    n->name, filter, r.type, r.str != NULL ? r.str : "");
	reply_free(&r);
	return rc;
}

/*
 * The seed the reset starts from, given the seeds of the primaries whose
 * parts hold keys (or of all, when none does): their one seed, or of two
 * the one whose next is the other (a reset that stopped midway). 0, or -1
 * after saying why.
 */
static int
reset_from(const uint64_t *seeds, size_t n, uint64_t *from)
{
	uint64_t a = seeds[0], b = seeds[0];

	for (size_t i = 1; i < n; i++)
		if (seeds[i] != a) {
			if (b != a && seeds[i] != b) {
				printf("[ERR] The primaries' parts hash with "
				    "three seeds or more: a reset cannot "
				    "make them one\n");
				return -1;
			}
			b = seeds[i];
		}
	if (a == b || filter_next_seed(a) == b)
		*from = a;
	else if (filter_next_seed(b) == a)
		*from = b;
	else {
		printf("[ERR] The primaries' parts hash with seeds %016llx "
		    "and %016llx, neither a reset of the other: their keys "
		    "were recorded apart (see seen-cli(1), cluster reset)\n",
		    (unsigned long long)a, (unsigned long long)b);
		return -1;
	}
	return 0;
}

/* CLUSTER RESETPART filter from to n: 0, or -1 after saying why. */
static int
reset_part(struct cnode *n, const char *filter, uint64_t from)
{
	struct reply	 r;
	char		 hex[17];
	int		 rc;

	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)from);
	if (node_call(n, &r, 4, "CLUSTER", "RESETPART", filter, hex) == -1) {
		printf("[ERR] Node %s: %s\n", n->name, n->err);
		return -1;
	}
	rc = r.type == '+' ? 0 : -1;
	if (rc == 0)
		printf("[OK] %s emptied on %s\n", filter, n->name);
	else
		printf("[ERR] Node %s: %s\n", n->name, r.str != NULL ? r.str :
		    "no answer");
	reply_free(&r);
	return rc;
}

int
cmd_reset(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_YES, 0 };
	struct args		 a;
	struct view		 v;
	uint64_t		*seeds = NULL, from, seed;
	size_t			 np = 0, nkeys = 0;
	int			 rc = 1, failed = 0, keys;
	char			 question[200];

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 2) {
		verb_usage("reset", "host:port filter [--yes]");
		return 2;
	}
	if (view_load(cl, &v, a.pos[0]) == -1)
		goto out;
	if ((seeds = calloc(v.map.nnodes + 1, sizeof(*seeds))) == NULL) {
		perror("seen-cli: cluster reset");
		goto out;
	}
	/* the seeds of the parts holding keys first, the empty ones after */
	for (size_t i = 0; i < v.map.nnodes; i++) {
		if (v.map.nodes[i].primary >= 0)
			continue;
		if (part_seed(&v.nodes[i], a.pos[1], &seed, &keys) == -1)
			goto out;
		if (keys) {
			seeds[np++] = seeds[nkeys];
			seeds[nkeys++] = seed;
		} else
			seeds[np++] = seed;
	}
	if (np == 0 || reset_from(seeds, nkeys > 0 ? nkeys : 1, &from) == -1)
		goto out;
	/* every part empty: from the seed furthest along, which no part
	 * would go back from */
	for (size_t i = 0; nkeys == 0 && i < np; i++)
		if (filter_seed_after(seeds[i], from))
			from = seeds[i];
	snprintf(question, sizeof(question), "Empty filter %s on all %zu "
	    "primaries, forgetting every key it holds?", a.pos[1], np);
	if (!confirm(cl, question)) {
		printf("*** Aborting...\n");
		goto out;
	}
	printf(">>> Emptying %s (seed %016llx -> %016llx)\n", a.pos[1],
	    (unsigned long long)from, (unsigned long long)filter_next_seed(
	    from));
	for (size_t i = 0; i < v.map.nnodes; i++)
		if (v.map.nodes[i].primary < 0)
			failed |= reset_part(&v.nodes[i], a.pos[1], from) == -1;
	if (failed)
		printf("*** Some parts were not emptied: run cluster reset "
		    "again once every primary answers (the parts emptied "
		    "stay so)\n");
	rc = failed;
out:
	free(seeds);
	view_free(&v);
	return rc;
}
