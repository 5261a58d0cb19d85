/*
 * cluster_handoff.h - the slots a node pauses while it hands them over to
 * another node (issue 33, step 4; cluster_move.h has the whole move).
 *
 * CLUSTER HANDOFF START a b <node-id> pauses slots a..b of this node: every
 * request on them is answered -TRYAGAIN (cluster.h's serve[]) until a map
 * gives them away (cluster_handoff_prune) or the pause is cancelled (a
 * roll back: seen-cli cluster fix). The pauses are kept in data_dir, so a
 * node killed during a hand-over pauses the slots again at its start
 * rather than serve slots another node may own already. A replica takes
 * its primary's pauses too (seen-cli sends them; slots its shard owns): it
 * keeps answering reads there, and once promoted it owns the slots and
 * pauses them, so that a failover during a hand-over records nothing the
 * move would lose; a map that gives them away from its shard ends them.
 * The file
 * (CLUSTER_HANDOFF_FILE) is written whole and fsynced, and removed when no
 * pause is left:
 *
 *   seend-cluster-handoff 1
 *   <first> <last> <node-id>
 *   ...
 *
 * numbers in 0..16383 without sign or leading zero, single spaces, every
 * line ending in "\n"; anything else stops the start.
 */
#ifndef SEEND_CLUSTER_HANDOFF_H
#define SEEND_CLUSTER_HANDOFF_H

#include <stddef.h>

struct cluster;

/*
 * The pauses kept in dir (CLUSTER_HANDOFF_FILE) read into c at its start:
 * 0, or -1 with why (a file that does not parse stops the start, as a
 * damaged map does: serving a paused slot could answer "new" twice).
 */
int	cluster_handoff_load(struct cluster *c, const char *dir, char *err,
	    size_t errlen);
/*
 * Pauses slots first..last, owned by this node, for their hand-over to
 * node to (a primary of the map held): saved in dir (fsynced) before it
 * takes effect. 0, or -1 with why. Again for slots already paused for the
 * same node: 0, nothing changes.
 */
int	cluster_handoff_start(struct cluster *c, const char *dir,
	    unsigned first, unsigned last, const char *to, char *err,
	    size_t errlen);
/* Ends the pauses of slots first..last (a rollback): the node serves
 * them again. 0, or -1 with why (the file could not be written). */
int	cluster_handoff_cancel(struct cluster *c, const char *dir,
	    unsigned first, unsigned last, char *err, size_t errlen);

/* Ends the pauses of slots the map held no longer gives this node (they
 * were handed over): 0, or -1 with why (the file could not be written). */
int	cluster_handoff_prune(struct cluster *c, const char *dir, char *err,
	    size_t errlen);

#endif
