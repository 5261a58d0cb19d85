/*
 * cluster.h - a node of a cluster as Redis Cluster clients see one
 * (issue 33): its node ID, kept in data_dir, the address it announces,
 * and the slot of a key as Redis Cluster computes it.
 *
 * Step 1, a cluster of one: with [cluster] enabled = on, a node owns all
 * 16384 slots, and CLUSTER SLOTS, SHARDS, NODES (cmd_cluster.c) list it
 * with its replicas, so that every Redis Cluster client works against one
 * seend. No request pays for it: nothing here runs per SETNX or SEEN.
 *
 * Step 2, a map (cluster_map.h): a node that holds one (CLUSTER SETMAP,
 * kept in data_dir) serves the slots the map gives it and redirects the
 * others (command.c). Only then does a request pay: one CRC16 and one
 * load per key, behind cluster_routing.
 */
#ifndef SEEND_CLUSTER_H
#define SEEND_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "cluster_map.h"	/* CLUSTER_SLOTS, CLUSTER_ID_LEN */

struct config;
struct cluster_map;
struct core;

/* The node ID's file in data_dir: the ID and a newline. */
#define CLUSTER_ID_FILE		"cluster-node-id"
/* The pauses of slots being handed over (cluster_handoff.h), in
 * data_dir. */
#define CLUSTER_HANDOFF_FILE	"cluster-handoff"
#define CLUSTER_HANDOFF_MAGIC	"seend-cluster-handoff 1"
#define CLUSTER_HANDOFF_MAX	256	/* ranges paused at once */
/* serve[] of a slot this node owns but is handing over: -TRYAGAIN */
#define CLUSTER_PAUSED		0xfffe

/* Slots first..last paused for their hand-over to node to. */
struct cluster_handoff {
	uint16_t	 first, last;
	char		 to[CLUSTER_ID_LEN + 1];
};

struct cluster {
	char		 myid[CLUSTER_ID_LEN + 1];
	/* what clients are told to reach this node at: [cluster] announce,
	 * else listen's address; "" when that is a wildcard (0.0.0.0, ::),
	 * as Redis announces a node that does not know its address (a
	 * client then uses the address it reached) */
	char		 host[256];
	unsigned	 port;		/* 0: no TCP listener */
	int		 announced;	/* host and port are [cluster] announce */
	/* the map held (cluster_map.h), NULL: none, a cluster of one; its
	 * owner[] and this node's index in it, for the requests' checks */
	struct cluster_map *map;
	const uint16_t	*owner;		/* serve, once a map is held */
	uint16_t	 me;
	/* the map's owner[] with the slots handed over CLUSTER_PAUSED:
	 * what requests are checked against (cluster_serve_update) */
	uint16_t	 serve[CLUSTER_SLOTS];
	struct cluster_handoff handoffs[CLUSTER_HANDOFF_MAX];
	size_t		 nhandoffs;
	/* maps held since the start, and the one cluster_move_apply last
	 * saw; the slots whose ranges the filters hold for the shard then
	 * (held_valid: set once, at the first apply) */
	unsigned	 map_gen, applied_gen;
	uint8_t		 held[CLUSTER_SLOTS];
	int		 held_valid;
	/* started as a replica (main.c, role_starts_replica): frees nothing
	 * at its start and replays every key (cluster_move.h) */
	int		 replica_start;
	/* the primary (node ID) this node was a replica of in the map held
	 * when it became a primary by role (Sentinel's REPLICAOF NO ONE);
	 * "": not promoted since its start or its last move to a replica */
	char		 promoted_from[CLUSTER_ID_LEN + 1];
	/* a newer map that does not name this node was offered: it was
	 * removed (seen-cli cluster del-node, which then sends a replica
	 * REPLICAOF NO ONE) and promotes nothing until a map names it */
	int		 removed;
};

/*
 * Nonzero while a node holds a map: every key of a request is checked
 * against it (command.c). 0 (cluster mode off, or no map): the requests
 * pay one predictable branch.
 */
extern int	 cluster_routing;

/* What cluster_take did with a map. */
#define CLUSTER_TAKEN		1	/* newer: saved and held */
#define CLUSTER_SAME		0	/* the one held: nothing done */
#define CLUSTER_REFUSED		-1	/* "ERR" why in err */
#define CLUSTER_STALE		-2	/* this node holds a newer one */

/*
 * The node of this seend: its ID read from data_dir/CLUSTER_ID_FILE, or
 * made (random) and written there at its first start in cluster mode,
 * and the address to announce from cfg. NULL with a message in err (a
 * file that holds no ID is refused, never overwritten).
 */
struct cluster	*cluster_open(const struct config *cfg, char *err,
		    size_t errlen);
void		 cluster_free(struct cluster *);
/*
 * CLUSTER SETMAP's map (text, len bytes) offered to c: parsed, checked
 * to name this node, compared with the one held, and when newer saved in
 * dir (fsync'd) before it replaces it. Returns CLUSTER_*, with the error's
 * text (no code) in err.
 */
int		 cluster_take(struct cluster *c, const char *dir,
		    const char *text, size_t len, char *err, size_t errlen);
/*
 * cluster_take, and when taken the log line that says so (from: who
 * offered it, a client's address or a peer's), then cluster_reconcile (a
 * promotion the map lacks is made again on it). Returns CLUSTER_*, why in
 * err. The caller tells the other nodes of a map taken (peer.c's
 * peer_map_changed: the daemon's loop, above this file).
 */
int		 cluster_offer(struct cluster *c, const char *dir,
		    const char *text, size_t len, const char *from, char *err,
		    size_t errlen);
/*
 * Failover (step 5): Redis Sentinel promotes a replica by REPLICAOF NO ONE;
 * the promoted node, still a replica of P in the map, makes the map that
 * says so: itself a primary owning P's slots, P and P's other replicas its
 * replicas, epoch + 1. role.c calls these where the node's role changes,
 * and the caller tells the peers when a map was taken (peer_map_changed).
 *
 * cluster_became_primary: the node was a replica and is a primary now;
 * returns cluster_reconcile's answer.
 */
int		 cluster_became_primary(struct cluster *c, const char *dir);
/* The node became a replica (Sentinel demoted it): it promotes nothing. */
void		 cluster_became_replica(struct cluster *c);
/*
 * When the node was promoted and the map held still lists it as a replica
 * of the primary it was promoted from (a map of another change won over
 * its own), the promotion made again on that map and taken: CLUSTER_TAKEN,
 * and one log line; CLUSTER_SAME when there is nothing to do, else
 * CLUSTER_REFUSED (logged). Run when a map is taken (cluster_offer) and
 * once a second, never per request. A node listed as a primary that is a
 * replica by role does nothing: the promoted node's map reaches it.
 */
int		 cluster_reconcile(struct cluster *c, const char *dir);
/* The map's index of the shard whose slots this node's filters hold: its
 * own, or its primary's (a map must be held). */
static inline unsigned
cluster_shard(const struct cluster *c)
{
	int p = c->map->nodes[c->me].primary;

	return p >= 0 ? (unsigned)p : c->me;
}
/* serve[] from the map held and the pauses (cluster_handoff.h): the
 * slots handed over CLUSTER_PAUSED, the others their owner. A replica
 * holds its primary's pauses (seen-cli sends them) but keeps answering
 * reads there: nothing changes in them; once promoted it owns the slots
 * and pauses them, so that it records nothing a move would lose. */
static inline void
cluster_serve_update(struct cluster *c)
{
	if (c->map == NULL)
		return;
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		c->serve[s] = c->map->owner[s];
	for (size_t i = 0; i < c->nhandoffs; i++)
		for (unsigned s = c->handoffs[i].first;
		    s <= c->handoffs[i].last; s++)
			if (c->serve[s] == c->me)
				c->serve[s] = CLUSTER_PAUSED;
}
/* Whether slot is served here: owned by this node in the map held, and
 * not being handed over. */
static inline int
cluster_owns(const struct cluster *c, unsigned slot)
{
	return c->owner[slot] == c->me;
}
/* Whether this node's shard owns every slot (so its part of a
 * partitioned filter is the whole of it): c NULL (cluster mode off), no
 * map (a cluster of one), or a map giving every slot to the shard. */
int		 cluster_owns_all(const struct cluster *c);
/* Whether s (len bytes) is a node ID: 40 lower-case hex digits. */
int		 cluster_id_valid(const char *s, size_t len);

#endif
