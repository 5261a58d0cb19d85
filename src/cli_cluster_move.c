/*
 * cli_cluster_move.c - seen-cli cluster reshard and rebalance: slots move
 * from node to node in small groups, each as cluster_move.h says (copy,
 * pause, copy again and save, a new map to the target, then the source,
 * then the rest), so that no key recorded before or during the move is
 * ever answered new again, and a kill -9 at any step leaves each slot
 * with one node (seen-cli cluster fix ends what a kill interrupted).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli_cluster_int.h"
#include "cluster_map.h"
#include "cluster_move.h"
#include "fileio.h"

/* Slots handed over at once at most: a group is one pause and one map. */
#define GROUP_MAX	512
/* Seconds a CLUSTER SLOTMERGE ... SAVE may take (snapshots of the
 * target's partitioned filters), and the target's replicas to take the
 * image from its stream after it (or a full sync, from an older seend). */
#define SAVE_TIMEOUT	600
#define SYNC_TIMEOUT	120

/* A move under way: the cluster, the map all nodes hold, and the two
 * nodes of the current group. */
struct move {
	const struct cl		*cl;
	struct view		*v;
	struct cluster_map	 m;	/* the newest map pushed */
	uint64_t		 epoch;	/* the highest any node holds */
	unsigned		 moved;
};

/*
 * CLUSTER SLOTBITS a b of src into *img: 0, or -1 after saying why; or,
 * when pinned is not NULL: -2 with the slot in *pinned when the range
 * holds the slot of a filter that does not move (a config cuckoo filter),
 * said; -3 when the range's image would be too big (its named filters:
 * "ask for fewer"), unsaid.
 */
static int
slot_bits(struct cnode *src, unsigned a, unsigned b, int bits_only,
    struct reply *img, unsigned *pinned)
{
	char	 sa[16], sb[16];
	int	 used = 0;

	snprintf(sa, sizeof(sa), "%u", a);
	snprintf(sb, sizeof(sb), "%u", b);
	if ((bits_only ? node_call(src, img, 5, "CLUSTER", "SLOTBITS", sa, sb,
	    "BITSONLY") : node_call(src, img, 4, "CLUSTER", "SLOTBITS", sa,
	    sb)) == -1) {
		printf("[ERR] %s: CLUSTER SLOTBITS %u %u: %s\n", src->name, a,
		    b, src->err);
		return -1;
	}
	if (pinned != NULL && img->type == '-' && img->str != NULL &&
	    sscanf(img->str, "ERR slot %u holds the named filter %*s%n",
	    pinned, &used) == 1 && used > 0 && *pinned >= a && *pinned <= b) {
		printf("[WARNING] %s: %s: the slot stays there\n", src->name,
		    img->str + 4);
		reply_free(img);
		return -2;
	}
	if (pinned != NULL && img->type == '-' && img->str != NULL &&
	    strstr(img->str, ": ask for fewer") != NULL) {
		reply_free(img);
		return -3;
	}
	if (img->type != '$' || img->str == NULL) {
		printf("[ERR] %s: CLUSTER SLOTBITS %u %u: %s\n", src->name, a,
		    b, img->type == '-' ? img->str : "unexpected reply");
		reply_free(img);
		return -1;
	}
	return 0;
}

/* A number of INFO section's field name on n ("name:value" lines), or
 * -1. */
static long long
info_number(struct cnode *n, const char *section, const char *name)
{
	struct reply	 r;
	long long	 v = -1;
	size_t		 l = strlen(name);

	if (node_call(n, &r, 2, "INFO", section) == -1)
		return -1;
	for (const char *p = r.type == '$' ? r.str : NULL; p != NULL;
	    p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, l) == 0 && (p[l] == ':' || p[l] == ' ')) {
			v = strtoll(p + l + 1, NULL, 10);
			break;
		}
	reply_free(&r);
	return v;
}

/* CLUSTER SLOTMERGE img [SAVE STREAM] to dst (SAVE alone to an older
 * seend, which then syncs its replicas fully; INFO seend says which):
 * 0, 1 (refused: nothing durable), or -1 (no answer: it may have been
 * taken). */
static int
slot_merge(struct cnode *dst, const struct reply *img, int save)
{
	const char	*argv[5] = { "CLUSTER", "SLOTMERGE", img->str, "SAVE",
			    "STREAM" };
	size_t		 lens[5] = { 7, 9, img->len, 4, 6 };
	struct timeval	 wait = { .tv_sec = SAVE_TIMEOUT }, back = { .tv_sec =
			    10 };
	struct reply	 r;
	int		 rc = 0, call;

	/* SAVE answers once the target's snapshots are fsynced: a big
	 * filter's take longer than a node's usual answer */
	if (save && dst->c.fd != -1)
		setsockopt(dst->c.fd, SOL_SOCKET, SO_RCVTIMEO, &wait,
		    sizeof(wait));
	call = node_call_argv(dst, &r, !save ? 3 : info_number(dst, "seend",
	    "cluster_move_stream") == 1 ? 5 : 4, argv, lens);
	if (save && dst->c.fd != -1)
		setsockopt(dst->c.fd, SOL_SOCKET, SO_RCVTIMEO, &back,
		    sizeof(back));
	if (call == -1) {
		printf("[ERR] %s: CLUSTER SLOTMERGE: %s\n", dst->name,
		    dst->err);
		return -1;
	}
	if (r.type != '+') {
		printf("[ERR] %s: CLUSTER SLOTMERGE: %s\n", dst->name,
		    r.type == '-' ? r.str : "unexpected reply");
		rc = 1;
	}
	reply_free(&r);
	return rc;
}

/* Whether every "slaveN:...,offset=X,..." line of n's INFO replication
 * has X >= at (the replica loaded its sync and acknowledged that far). */
static int
replicas_acked(struct cnode *n, long long at)
{
	struct reply	 r;
	int		 ok = 1;

	if (node_call(n, &r, 2, "INFO", "replication") == -1)
		return 0;
	for (const char *p = r.type == '$' ? r.str : NULL; p != NULL;
	    p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *o;

		if (strncmp(p, "slave", 5) != 0 || (o = strstr(p, ",offset=")) ==
		    NULL || (strchr(p, '\n') != NULL && o > strchr(p, '\n')))
			continue;
		ok &= strtoll(o + 8, NULL, 10) >= at;
	}
	if (r.type != '$')
		ok = 0;
	reply_free(&r);
	return ok;
}

/*
 * The target's replicas took the moved slots: SLOTMERGE ... SAVE put
 * their image in its stream (an older seend made each sync fully), and a
 * failover of the target must not promote one without them. Waits until
 * n replicas are online and each has acknowledged the offset the target
 * is at now, past the image (a replica acknowledges an image once it has
 * taken it, a full sync once loaded). 0, or -1 (said) after SYNC_TIMEOUT.
 */
static int
replicas_synced(struct cnode *dst, long long n)
{
	double		 deadline = now_secs() + SYNC_TIMEOUT;
	long long	 at, online = 0;

	if (n <= 0)
		return 0;
	at = info_number(dst, "replication", "master_repl_offset");
	while (at >= 0 && now_secs() <= deadline) {
		online = info_number(dst, "replication", "connected_slaves");
		if (online < 0)
			break;
		if (online >= n && replicas_acked(dst, at))
			return 0;
		usleep(10 * 1000);
	}
	printf("[WARNING] %s: its replicas have not taken the moved slots "
	    "(%lld of %lld online)\n", dst->name, online < 0 ? 0 : online, n);
	return -1;
}

/* CLUSTER HANDOFF START|CANCEL a b [id] on src, once more on a new
 * connection when the one held was closed (Sentinel's failover kills a
 * promoted node's clients): 0, 1 refused, -1 no answer. */
static int
handoff(const struct cl *cl, struct cnode *src, const char *verb,
    unsigned a, unsigned b, const char *id)
{
	char		 sa[16], sb[16];
	struct reply	 r;
	int		 rc = 0, call = -1;

	snprintf(sa, sizeof(sa), "%u", a);
	snprintf(sb, sizeof(sb), "%u", b);
	for (int tries = 0; tries < 2 && call == -1; tries++) {
		if (src->c.fd == -1 && node_open(cl, src) == -1)
			break;
		call = id != NULL ? node_call(src, &r, 6, "CLUSTER", "HANDOFF",
		    verb, sa, sb, id) : node_call(src, &r, 5, "CLUSTER",
		    "HANDOFF", verb, sa, sb);
	}
	if (call == -1) {
		printf("[ERR] %s: CLUSTER HANDOFF %s %u %u: %s\n", src->name,
		    verb, a, b, src->err);
		return -1;
	}
	if (r.type != '+') {
		printf("[ERR] %s: CLUSTER HANDOFF %s %u %u: %s\n", src->name,
		    verb, a, b, r.type == '-' ? r.str : "unexpected reply");
		rc = 1;
	}
	reply_free(&r);
	return rc;
}

/*
 * The pause of a..b for node to on the replicas of map index si, so that
 * one Sentinel promotes during the hand-over records nothing there either
 * (it keeps the pause, as the source would; the map that gives the slots
 * away, or fix, ends it); verb CANCEL ends it. A replica that does not
 * answer is said, not fatal (one that is down is not promoted meanwhile):
 * 0; -1 when one refused (said): the group must not go on without it; 1
 * when one did not answer a CANCEL (its pause stays until fix).
 */
static int
handoff_replicas(struct move *mv, int si, const char *verb, unsigned a,
    unsigned b, const char *to)
{
	int rc = 0;

	for (size_t i = 0; i < mv->m.nnodes; i++) {
		struct cnode	*r = &mv->v->nodes[i];
		int		 got;

		if (mv->m.nodes[i].primary != si ||
		    (got = handoff(mv->cl, r, verb, a, b, to)) == 0)
			continue;
		if (got == 1 && strcmp(verb, "START") == 0) {
			rc = -1;
			continue;
		}
		printf("[WARNING] %s, a replica of %s, did not take the %s of "
		    "slots %u-%u\n", r->name, mv->v->nodes[si].name,
		    strcmp(verb, "START") == 0 ? "pause" : "end of the pause",
		    a, b);
		if (rc == 0 && strcmp(verb, "START") != 0)
			rc = 1;
	}
	return rc;
}

/* The pause of a..b on src (map index si) and its replicas ended after a
 * failed step: 0, or -1 (the operator must run fix). */
static int
roll_back(struct move *mv, int si, unsigned a, unsigned b)
{
	struct cnode	*src = &mv->v->nodes[si];
	int		 replicas = handoff_replicas(mv, si, "CANCEL", a, b, NULL);

	if (handoff(mv->cl, src, "CANCEL", a, b, NULL) != 0) {
		printf("[ERR] Slots %u-%u may still be paused on %s: run "
		    "seen-cli cluster fix\n", a, b, src->name);
		return -1;
	}
	printf(">>> Slots %u-%u stay with %s\n", a, b, src->name);
	if (replicas != 0) {
		printf("[ERR] A replica of %s may still hold their pause: run "
		    "seen-cli cluster fix\n", src->name);
		return -1;
	}
	return 0;
}

/*
 * For tests only: while the file SEEN_CLI_FAULT_HOLD_PAUSE names exists
 * (ten minutes at most), a group waits once its slots are paused, so that
 * a test can fail a node over in the middle of a hand-over.
 */
static void
hold_paused(void)
{
	const char	*path = getenv("SEEN_CLI_FAULT_HOLD_PAUSE");

	for (int i = 0; path != NULL && *path != '\0' && i < 6000 &&
	    access(path, F_OK) == 0; i++)
		usleep(100 * 1000);
}

/*
 * Whether n holds a map newer than the move's: another change reached the
 * cluster during the move (a Sentinel failover's map), which the move's
 * next map, made from the map the move read, would undo. 0 not, 1 newer
 * (said), -1 no answer (said).
 */
static int
map_moved_on(struct move *mv, struct cnode *n)
{
	if ((n->c.fd == -1 && node_open(mv->cl, n) == -1) ||
	    node_getmap(n) == -1) {
		printf("[ERR] %s: %s\n", n->name, n->err);
		return -1;
	}
	if (n->has_map && n->map.epoch > mv->epoch) {
		printf("[ERR] %s holds a map of epoch %" PRIu64 ", newer than "
		    "this move's %" PRIu64 ": the cluster changed during the "
		    "move (a failover?). Run seen-cli cluster check (and fix), "
		    "then move the rest again\n", n->name, n->map.epoch,
		    mv->epoch);
		return 1;
	}
	return 0;
}

/* SETMAP text to n: 0 taken, 1 refused, -1 no answer. */
static int
give_map(const struct cl *cl, struct cnode *n, const char *text)
{
	struct reply	 r;
	int		 rc = 0;

	if (n->c.fd == -1 && node_open(cl, n) == -1) {
		printf("[ERR] %s: %s\n", n->name, n->err);
		return -1;
	}
	if (node_call(n, &r, 3, "CLUSTER", "SETMAP", text) == -1) {
		printf("[ERR] %s: CLUSTER SETMAP: %s\n", n->name, n->err);
		return -1;
	}
	if (r.type != '+') {
		printf("[ERR] %s refused the map: %s\n", n->name, r.type ==
		    '-' ? r.str : "unexpected reply");
		rc = 1;
	}
	reply_free(&r);
	return rc;
}

/*
 * Slots a..b from node si to node di (indexes in mv->m): the steps of
 * cluster_move.h. 0 moved; -1 not moved (rolled back, or fix must end it:
 * said); -2 nothing done, slot *pinned holds a filter that does not move;
 * -3 nothing done, the range is too big for one image.
 */
static int
move_group(struct move *mv, int si, int di, unsigned a, unsigned b,
    unsigned *pinned)
{
	struct cnode		*src = &mv->v->nodes[si], *dst = &mv->v->nodes[di];
	struct cluster_map	 next;
	struct reply		 img;
	char			*text;
	size_t			 len;
	long long		 nrepl;
	int			 rc;

	/* 1. the bits so far, the source serving (the named filters
	 * come whole at 3, once paused) */
	if ((rc = slot_bits(src, a, b, 1, &img, pinned)) < 0)
		return rc;
	rc = slot_merge(dst, &img, 0);
	reply_free(&img);
	if (rc != 0)
		return -1;
	/* a failover since the move read the map: its next map would
	 * undo the failover's (and the source may be a replica now) */
	if (map_moved_on(mv, src) != 0)
		return -1;
	/* 2. the pause, on the source's replicas too */
	if ((rc = handoff(mv->cl, src, "START", a, b, mv->m.nodes[di].id)) !=
	    0) {
		if (rc == -1)
			(void)roll_back(mv, si, a, b);
		return -1;
	}
	if (handoff_replicas(mv, si, "START", a, b, mv->m.nodes[di].id) ==
	    -1) {
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	hold_paused();
	/* 3. every key, saved on the target and on its replicas */
	nrepl = info_number(dst, "replication", "connected_slaves");
	if (slot_bits(src, a, b, 0, &img, NULL) == -1) {
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	/* an image of no filter changes nothing there, and is not
	 * streamed */
	if (img.len >= CLUSTER_MOVE_HEADER && get_le32((const unsigned char *)
	    img.str + 12) == 0 && get_le32((const unsigned char *)img.str +
	    16) == 0)
		nrepl = 0;
	rc = slot_merge(dst, &img, 1);
	reply_free(&img);
	if (rc != 0 || replicas_synced(dst, nrepl) == -1) {
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	/* a failover of either shard during the pause: rolled back (the
	 * source's promoted replica pauses the slots too, so nothing was
	 * recorded there since) */
	/* (no map of this move was given yet: the slots are the source's
	 * whatever either answers, and the pause goes) */
	if (map_moved_on(mv, src) != 0 || map_moved_on(mv, dst) != 0) {
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	/* 4. the map: the target first */
	if (cluster_map_copy(&next, &mv->m) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	for (unsigned s = a; s <= b; s++)
		next.owner[s] = (uint16_t)di;
	/* two above: a replica promoted from here on makes its map one
	 * above the one it holds, so this one wins over it (two of one
	 * epoch are ordered by their text: the move's could lose, and the
	 * target free the slots it served meanwhile), and the promoted
	 * node makes its own again on top of it (cluster_reconcile) */
	mv->epoch += 2;
	next.epoch = mv->epoch;
	if ((text = cluster_map_format(&next, &len)) == NULL) {
		cluster_map_free(&next);
		(void)roll_back(mv, si, a, b);
		return -1;
	}
	if ((rc = give_map(mv->cl, dst, text)) != 0) {
		free(text);
		cluster_map_free(&next);
		if (rc == 1)
			(void)roll_back(mv, si, a, b);
		else
			printf("[ERR] %s may or may not hold slots %u-%u now: "
			    "run seen-cli cluster fix\n", dst->name, a, b);
		return -1;
	}
	cluster_map_free(&mv->m);
	mv->m = next;
	/* then the source, which stops pausing and frees the range */
	if (give_map(mv->cl, src, text) != 0)
		printf("[WARNING] %s pauses slots %u-%u until the map reaches "
		    "it (from a peer, or seen-cli cluster fix)\n", src->name,
		    a, b);
	/* and the rest (the nodes pass it on among themselves too) */
	for (size_t i = 0; i < mv->m.nnodes; i++)
		if ((int)i != si && (int)i != di &&
		    give_map(mv->cl, &mv->v->nodes[i], text) != 0)
			printf("[WARNING] %s will take the map from a peer\n",
			    mv->v->nodes[i].name);
	free(text);
	mv->moved += b - a + 1;
	return 0;
}

/* The slots one image may hold, from the size of slot a's bits (the
 * named filters of a range come whole, whatever its length): > 0; 0 after
 * saying why; or -2 with slot a in *pinned when it holds a filter that
 * does not move (said too, as for a group's). */
static int
group_size(struct cnode *src, unsigned a, unsigned *pinned)
{
	struct reply	 img;
	size_t		 per;
	unsigned	 g;
	int		 rc;

	/* -3: slot a's named filters alone pass the bound (its group says
	 * so) */
	if ((rc = slot_bits(src, a, a, 1, &img, pinned)) < 0)
		return rc == -2 ? -2 : rc == -3 ? 1 : 0;
	per = img.len;
	reply_free(&img);
	g = per == 0 ? GROUP_MAX : (unsigned)((CLUSTER_MOVE_MAX / 2) / per);
	return g < 1 ? 1 : g > GROUP_MAX ? GROUP_MAX : (int)g;
}

/*
 * Moves the n lowest slots of node si to node di, group by group; a slot
 * that holds a config filter living whole on it (a cuckoo one, on every
 * node) stays, and the next slots make up for it.
 */
static int
move_slots(struct move *mv, int si, int di, unsigned n)
{
	unsigned	 g = 0, left = n, pinned;
	struct cnode	*src = &mv->v->nodes[si];
	uint8_t		 stays[CLUSTER_SLOTS] = { 0 };

	for (unsigned s = 0; s < CLUSTER_SLOTS && left > 0;) {
		unsigned e;
		int	 rc;

		if (mv->m.owner[s] != si || stays[s]) {
			s++;
			continue;
		}
		if (g == 0) {
			int gs = group_size(src, s, &pinned);

			if (gs == 0)
				return -1;
			if (gs == -2) {
				stays[pinned] = 1;	/* sized from the next */
				continue;
			}
			g = (unsigned)gs;
		}
		for (e = s; e + 1 < CLUSTER_SLOTS && mv->m.owner[e + 1] == si &&
		    !stays[e + 1] && e + 1 - s < g && e + 1 - s < left; e++)
			;
		printf("Moving slots %u-%u from %s to %s\n", s, e,
		    mv->m.nodes[si].id, mv->m.nodes[di].id);
		fflush(stdout);
		if ((rc = move_group(mv, si, di, s, e, &pinned)) == -2) {
			stays[pinned] = 1;	/* the same range without it */
			continue;
		}
		if (rc == -3 && e > s) {
			/* its named filters take too much for one image:
			 * halves, down to one slot */
			g = (e - s + 1) / 2;
			continue;
		}
		if (rc == -3) {
			printf("[WARNING] %s: slot %u's named filters are too "
			    "big for one image: the slot stays there\n",
			    src->name, s);
			stays[s] = 1;
			g = 0;
			continue;
		}
		if (rc == -1)
			return -1;
		left -= e - s + 1;
		s = e + 1;
	}
	if (left > 0)
		printf("[WARNING] %u slot(s) fewer than asked moved from %s: "
		    "the others hold filters that do not move\n", left,
		    mv->m.nodes[si].id);
	return 0;
}

/* Loads the cluster for a move: a map with a seed that every node holds,
 * every primary reachable, and nothing paused. */
static int
load_for_move(const struct cl *cl, struct view *v, struct move *mv,
    const char *addr)
{
	memset(mv, 0, sizeof(*mv));
	mv->cl = cl;
	mv->v = v;
	if (view_load(cl, v, addr) == -1)
		return -1;
	if (v->implicit) {
		printf("[ERR] %s holds no map: a cluster of one has no other "
		    "node to move slots to (seen-cli cluster create)\n",
		    v->entry.name);
		return -1;
	}
	if (check_view(v) == -1) {
		printf("[ERR] Please fix your cluster problems before "
		    "resharding (seen-cli cluster fix)\n");
		return -1;
	}
	if (v->map.seed == 0) {
		printf("[ERR] The map has no seed: it was made before slots "
		    "could move, and the nodes' filters hash with seeds of "
		    "their own\n");
		return -1;
	}
	mv->epoch = v->map.epoch;
	if (cluster_map_copy(&mv->m, &v->map) == -1) {
		fprintf(stderr, "seen-cli: cluster: %s\n", strerror(ENOMEM));
		return -1;
	}
	return 0;
}

/* A primary named by id (a unique prefix, as redis-cli takes) in m. */
static int
find_primary(const struct cluster_map *m, const char *id)
{
	int	 found = -1;
	size_t	 n = strlen(id);

	for (size_t i = 0; i < m->nnodes; i++)
		if (m->nodes[i].primary < 0 && n > 0 &&
		    strncmp(m->nodes[i].id, id, n) == 0) {
			if (found >= 0)
				return -2;
			found = (int)i;
		}
	return found;
}

/* The end of reshard or rebalance, however it went: what moved said, the
 * maps and connections freed. */
static void
move_end(struct move *mv, struct view *v, double start)
{
	if (mv->m.nodes != NULL) {
		printf(">>> %u slot(s) moved in %.1f s (epoch %" PRIu64 ")\n",
		    mv->moved, now_secs() - start, mv->m.epoch);
		cluster_map_free(&mv->m);
	}
	view_free(v);
}

/* seen-cli cluster reshard host:port --from <id>[,<id>...]|all --to <id>
 * --slots <n> */
static int
cmd_reshard(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_FROM, OPT_TO, OPT_SLOTS,
				    OPT_YES, OPT_TIMEOUT, OPT_PIPELINE, 0 };
	struct args		 a;
	struct view		 v;
	struct move		 mv;
	int			 di, from[CLUSTER_MAP_MAX_NODES], nfrom = 0;
	unsigned		 have = 0, want;
	int			 rc = 1;
	double			 start = now_secs();

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1 ||
	    a.from == NULL || a.to == NULL || a.slots <= 0) {
		verb_usage("reshard", "host:port --from <id>[,<id>...]|all "
		    "--to <id> --slots <n> [--yes]");
		return 2;
	}
	if (load_for_move(cl, &v, &mv, a.pos[0]) == -1)
		goto out;
	if ((di = find_primary(&mv.m, a.to)) < 0) {
		printf("*** The specified node (%s) is not known or not a "
		    "master, please retry.\n", a.to);
		goto out;
	}
	if (strcmp(a.from, "all") == 0) {
		for (size_t i = 0; i < mv.m.nnodes; i++)
			if (mv.m.nodes[i].primary < 0 && (int)i != di)
				from[nfrom++] = (int)i;
	} else {
		char *list = strdup(a.from), *tok, *save = NULL;

		for (tok = list ? strtok_r(list, ",", &save) : NULL;
		    tok != NULL; tok = strtok_r(NULL, ",", &save)) {
			int si = find_primary(&mv.m, tok), dup = 0;

			for (int k = 0; k < nfrom; k++)
				dup |= from[k] == si;
			if (dup)
				continue;
			if (si < 0 || si == di) {
				printf("*** The specified node (%s) is not "
				    "known or is not a master other than the "
				    "target, please retry.\n", tok);
				free(list);
				goto out;
			}
			from[nfrom++] = si;
		}
		free(list);
	}
	for (int i = 0; i < nfrom; i++)
		have += cluster_map_slots_of(&mv.m, from[i]);
	want = (unsigned)a.slots;
	if (want > have) {
		printf("*** The source node(s) own only %u slots, %u asked\n",
		    have, want);
		goto out;
	}
	printf("\nReady to move %u slots.\n", want);
	printf("  Source nodes:\n");
	for (int i = 0; i < nfrom; i++)
		printf("    M: %s %s:%u\n", mv.m.nodes[from[i]].id,
		    mv.m.nodes[from[i]].host, mv.m.nodes[from[i]].port);
	printf("  Destination node:\n    M: %s %s:%u\n", mv.m.nodes[di].id,
	    mv.m.nodes[di].host, mv.m.nodes[di].port);
	if (!confirm(cl, "Do you want to proceed with the proposed reshard "
	    "plan (yes/no)?")) {
		rc = 1;
		goto out;
	}
	/* from each source its share, as redis-cli's plan: by slots owned,
	 * the first source taking the rounding */
	{
		unsigned left = want;

		for (int i = 0; i < nfrom && left > 0; i++) {
			unsigned own = cluster_map_slots_of(&mv.m, from[i]);
			unsigned n = i == 0 ? (unsigned)ceil((double)want *
			    own / have) : (unsigned)floor((double)want * own /
			    have);

			if (n > left)
				n = left;
			if (n > own)
				n = own;
			if (move_slots(&mv, from[i], di, n) == -1)
				goto out;
			left -= n;
		}
		if (left > 0 && move_slots(&mv, from[0], di, left) == -1)
			goto out;
	}
	rc = 0;
out:
	move_end(&mv, &v, start);
	return rc;
}

/* One primary's place in a rebalance. */
struct bal {
	int		 node;
	double		 weight;
	long		 balance;	/* slots to give (> 0) or take (< 0) */
};

static int
bal_cmp(const void *x, const void *y)
{
	const struct bal *a = x, *b = y;

	return (a->balance > b->balance) - (a->balance < b->balance);
}

/* seen-cli cluster rebalance host:port [--weight <id>=<w>]...
 * [--use-empty-masters] [--threshold <t>] [--simulate]: redis-cli's
 * clusterManagerCommandRebalance, by slots. */
static int
cmd_rebalance(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { OPT_WEIGHT, OPT_USE_EMPTY,
				    OPT_THRESHOLD, OPT_SIMULATE, OPT_YES,
				    OPT_TIMEOUT, OPT_PIPELINE, 0 };
	struct args		 a;
	struct view		 v;
	struct move		 mv;
	struct bal		 b[CLUSTER_MAP_MAX_NODES];
	int			 n = 0, rc = 1, over = 0;
	double			 total = 0, start = now_secs();
	long			 sum = 0;

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1) {
		verb_usage("rebalance", "host:port [--weight <id>=<w>] "
		    "[--use-empty-masters] [--threshold <t>] [--simulate]");
		return 2;
	}
	if (load_for_move(cl, &v, &mv, a.pos[0]) == -1)
		goto out;
	for (size_t i = 0; i < mv.m.nnodes; i++) {
		double w = 1;

		if (mv.m.nodes[i].primary >= 0)
			continue;
		for (int k = 0; k < a.nweights; k++) {
			size_t l = strlen(a.weights[k].id);

			if (l > 0 && strncmp(mv.m.nodes[i].id, a.weights[k].id,
			    l) == 0)
				w = a.weights[k].w;
		}
		/* an empty master takes slots only when asked to */
		if (!a.use_empty && cluster_map_slots_of(&mv.m, (int)i) == 0)
			w = 0;
		b[n].node = (int)i;
		b[n].weight = w;
		total += w;
		n++;
	}
	if (total <= 0) {
		printf("*** No master to balance slots over\n");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		long want = (long)((double)CLUSTER_SLOTS * b[i].weight / total);
		long own = (long)cluster_map_slots_of(&mv.m, b[i].node);
		double pct = want == 0 ? (own > 0 ? 100 : 0) :
		    fabs((double)(want - own) / (double)want * 100);

		b[i].balance = own - want;
		sum += b[i].balance;
		if (pct > (a.threshold > 0 ? a.threshold : 2))
			over = 1;
	}
	if (!over) {
		printf("*** No rebalancing needed! All nodes are within the "
		    "%.2f%% threshold.\n", a.threshold > 0 ? a.threshold : 2.0);
		rc = 0;
		goto out;
	}
	/* the rounding's slots go to the nodes that take the most, as
	 * redis-cli gives them to the first of the receivers */
	qsort(b, (size_t)n, sizeof(b[0]), bal_cmp);
	for (int i = 0; sum > 0 && i < n; i++, sum--)
		b[i].balance++;
	for (int i = n - 1; sum < 0 && i >= 0; i--, sum++)
		b[i].balance--;
	printf(">>> Rebalancing across %d nodes. Total weight = %.2f\n", n,
	    total);
	/* receivers (balance < 0) from the front, givers from the back */
	for (int dst = 0, src = n - 1; dst < src;) {
		long k;

		if (b[dst].balance >= 0) {
			dst++;
			continue;
		}
		if (b[src].balance <= 0) {
			src--;
			continue;
		}
		k = -b[dst].balance < b[src].balance ? -b[dst].balance :
		    b[src].balance;
		printf("Moving %ld slots from %s:%u to %s:%u\n", k,
		    mv.m.nodes[b[src].node].host, mv.m.nodes[b[src].node].port,
		    mv.m.nodes[b[dst].node].host,
		    mv.m.nodes[b[dst].node].port);
		if (!a.simulate && move_slots(&mv, b[src].node, b[dst].node,
		    (unsigned)k) == -1)
			goto out;
		b[dst].balance += k;
		b[src].balance -= k;
	}
	rc = 0;
out:
	move_end(&mv, &v, start);
	return rc;
}

int
cmd_move(struct cl *cl, int argc, char **argv)
{
	return strcmp(argv[0], "reshard") == 0 ? cmd_reshard(cl, argc, argv) :
	    cmd_rebalance(cl, argc, argv);
}
