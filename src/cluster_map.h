/*
 * cluster_map.h - the map of a cluster: which node owns which of the 16384
 * slots, the nodes' addresses, each replica's primary, and the epoch that
 * orders maps (issue 33, step 2).
 *
 * Topology changes only by an operator's command (seen-cli cluster ...),
 * which makes a map with an epoch above every node's and pushes it to
 * every node (CLUSTER SETMAP); nodes keep the newest map they have seen in
 * data_dir and pass a newer one on to the nodes it names (peer.c). "The
 * newest wins": a higher epoch replaces a lower one; two different maps
 * of one epoch are ordered by their canonical texts (the greater text
 * wins, bytewise), so every node keeps the same one whatever the order they
 * arrive in. A node never assigns itself a slot.
 *
 * The text (also the file data_dir/cluster-map, and CLUSTER GETMAP's and
 * SETMAP's argument) is lines ending in "\n":
 *
 *   seend-cluster-map 1
 *   epoch <n>                             n: 1 .. 2^63-1
 *   seed <16 hex digits>                  optional, not zero
 *   node <id> <host> <port> <tls-port> <primary-id>|-
 *   ...
 *   slots <id> <a>[-<b>] [<a>[-<b>] ...]
 *   ...
 *
 * <id> is a node ID (40 lower-case hex digits), <host> an address without
 * spaces (an IPv6 address as is, without brackets), <port> 1..65535,
 * <tls-port> 0 (none) or 1..65535, and the last field the ID of the
 * node's primary ("-": a primary). "slots" lines name primaries only,
 * give each slot at most once, in ranges a <= b < 16384. The canonical
 * form (cluster_map_format) has nodes in ascending ID order, one "slots"
 * line per primary that owns any (in the nodes' order), ranges ascending
 * and merged, single slots as "a", the seed line (if any) after the
 * epoch, and no other spacing; the parser takes the same lines in any
 * order, ranges unmerged, "\r\n" ends, and refuses
 * anything else with the line's number.
 *
 * The seed is the hash seed of every partitioned filter (filter.h's
 * slot-major layout) on every node, drawn by seen-cli cluster create and
 * kept by every later map: a slot's bits mean the same on two nodes only
 * when both hashed its keys with one seed, so that they can be copied
 * from one to the other (a move, cluster_move.h). A map without one
 * (made before slots could move) moves nothing.
 */
#ifndef SEEND_CLUSTER_MAP_H
#define SEEND_CLUSTER_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "keyslot.h"

#define CLUSTER_SLOTS		KEYSLOT_COUNT	/* as Redis Cluster's */
#define CLUSTER_ID_LEN		40	/* hex digits, as Redis's node IDs */

#define CLUSTER_MAP_FILE	"cluster-map"
#define CLUSTER_MAP_MAGIC	"seend-cluster-map 1"
#define CLUSTER_MAP_MAX_NODES	1000	/* as Redis's advice for a cluster */
#define CLUSTER_MAP_MAX_TEXT	(1 << 20) /* a text longer is refused */
#define CLUSTER_NO_NODE		0xffff	/* owner[] of a slot nobody owns */

struct cluster_node {
	char		 id[CLUSTER_ID_LEN + 1];
	char		 host[256];
	unsigned	 port;
	unsigned	 tls_port;		/* 0: none */
	int		 primary;		/* index of its primary in
						 * nodes[], -1: a primary */
};

struct cluster_map {
	uint64_t	 epoch;
	uint64_t	 seed;			/* 0: none */
	size_t		 nnodes;
	struct cluster_node *nodes;		/* ascending by id */
	uint16_t	 owner[CLUSTER_SLOTS];	/* index in nodes[], or
						 * CLUSTER_NO_NODE */
};

/*
 * The map in text (len bytes, need not end in NUL): 0 with *m filled (free
 * it with cluster_map_free), -1 with "line N: why" in err.
 */
int	 cluster_map_parse(const char *text, size_t len, struct cluster_map *m,
	    char *err, size_t errlen);
/* The canonical text of m, NUL-terminated (malloc'd), its length in *len;
 * NULL when out of memory. */
char	*cluster_map_format(const struct cluster_map *m, size_t *len);
void	 cluster_map_free(struct cluster_map *m);
/* A deep copy: 0, or -1 when out of memory. */
int	 cluster_map_copy(struct cluster_map *dst, const struct cluster_map *src);
/*
 * Whether map a should replace map b: > 0 a wins (higher epoch, or the
 * same epoch and a greater canonical text), 0 the same map, < 0 b wins.
 */
int	 cluster_map_compare(const struct cluster_map *a,
	    const struct cluster_map *b);
/* The index of node id (40 bytes) in m, or -1. */
int	 cluster_map_find(const struct cluster_map *m, const char *id);
/* How many slots node i owns. */
unsigned cluster_map_slots_of(const struct cluster_map *m, int i);
/*
 * The map kept in dir: 1 with *m read, 0 when there is none, -1 with why
 * in err (a file that does not parse is an error, never ignored).
 */
int	 cluster_map_load(const char *dir, struct cluster_map *m, char *err,
	    size_t errlen);
/* Writes m to dir/CLUSTER_MAP_FILE as a snapshot is written (a temporary
 * file, fsync, rename, fsync of dir): 0, or -1 with why in err. */
int	 cluster_map_save(const char *dir, const struct cluster_map *m,
	    char *err, size_t errlen);

#endif
