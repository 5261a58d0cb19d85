/*
 * cli_cluster_fix.c - seen-cli cluster fix: the newest map any node holds,
 * with its uncovered slots given to primaries, pushed to every node that
 * does not hold it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster_int.h"
#include "cluster_map.h"

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
 * A hand-over a kill interrupted (cluster_move.h): node n (the source, or
 * one of its replicas) pauses slots a..b for node to. When the newest map
 * gives them away from n's shard, its push below
 * finishes it; when it still gives them to n, the target never took them
 * (it takes a map only after their keys are saved there), and the pause
 * is ended here: a roll back. But not while the target cannot be asked:
 * it may hold a newer map that gives it the slots. 0, or -1 (said).
 */
static int
end_handoff(struct fleet *f, struct cnode *n, const struct cluster_map *m,
    unsigned a, unsigned b, const char *to)
{
	struct cnode	*t = fleet_find(f, to);
	struct reply	 r;
	char		 sa[16], sb[16];
	int		 me = cluster_map_find(m, n->id), mine = 0, shard;

	/* a replica holds its primary's pauses (seen-cli pauses both) */
	shard = me >= 0 && m->nodes[me].primary >= 0 ? m->nodes[me].primary :
	    me;
	for (unsigned s = a; s <= b; s++)
		mine |= shard >= 0 && m->owner[s] == shard;
	if (!mine) {
		printf(">>> Slots %u-%u paused on %s: the newest map gives them "
		    "to another node; finishing the hand-over\n", a, b,
		    n->name);
		return 0;
	}
	if (t == NULL || !t->up) {
		printf("[ERR] Slots %u-%u are paused on %s for node %s, which "
		    "cannot be asked (%s): bring it back and run fix again%s%s\n",
		    a, b, n->name, to, t == NULL ? "no map names it" : t->err,
		    t == NULL ? ", or, if it is gone for good and never owned "
		    "them, end the pause with CLUSTER HANDOFF CANCEL on " :
		    "", t == NULL ? n->name : "");
		return -1;
	}
	printf(">>> Slots %u-%u paused on %s: %s never took them; rolling "
	    "back (%s serves them again)\n", a, b, n->name, t->name, n->name);
	snprintf(sa, sizeof(sa), "%u", a);
	snprintf(sb, sizeof(sb), "%u", b);
	if (node_call(n, &r, 5, "CLUSTER", "HANDOFF", "CANCEL", sa, sb) == -1) {
		printf("[ERR] %s: %s\n", n->name, n->err);
		return -1;
	}
	if (r.type != '+')
		printf("[ERR] %s: CLUSTER HANDOFF CANCEL: %s\n", n->name,
		    r.type == '-' ? r.str : "unexpected reply");
	reply_free(&r);
	return r.type == '+' ? 0 : -1;
}

/* Every node's paused slots ended (end_handoff): 0, or -1. */
static int
end_handoffs(struct fleet *f, const struct cluster_map *m)
{
	int	 rc = 0;

	for (size_t i = 0; i < f->n; i++) {
		char		*text, *line, *next;
		unsigned	 a, b;
		char		 id[CLUSTER_ID_LEN + 2];

		if (!f->nodes[i].up ||
		    (text = node_handoffs(&f->nodes[i])) == NULL)
			continue;
		for (line = text; *line != '\0'; line = next) {
			if ((next = strchr(line, '\n')) == NULL)
				next = line + strlen(line);
			else
				*next++ = '\0';
			if (sscanf(line, "%u %u %41s", &a, &b, id) == 3 &&
			    end_handoff(f, &f->nodes[i], m, a, b, id) == -1)
				rc = -1;
		}
		free(text);
	}
	return rc;
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

int
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
	printf(">>> Check for open slots...\n");
	if (end_handoffs(&f, &m) == -1)
		goto out;
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
