/*
 * cluster_move.h - moving slots from one node to another (issue 33, step
 * 4): what the source gives, what the target takes, and the hand-over's
 * pause between them.
 *
 * A partitioned filter (filter.h's slot-major layout, one seed on every
 * node: cluster_map.h) keeps the bits of slot s in blocks [s * n / 16384,
 * (s + 1) * n / 16384) of each slice of n blocks, so a slot moves by
 * copying that range of each slice, and OR-ing it in on the target: a bit
 * set twice is set once, so a range may be copied again and again. A move
 * of slots a..b (seen-cli cluster reshard, cli_cluster_move.c) is:
 *
 *   1. CLUSTER SLOTBITS a b on the source, CLUSTER SLOTMERGE <image> on the
 *      target: the bits so far, while the source serves the slots.
 *   2. CLUSTER HANDOFF START a b <target-id> on the source: from now on it
 *      answers every request on those slots -TRYAGAIN (clients retry), so
 *      nothing new is recorded there; the pause is in data_dir before +OK
 *      (CLUSTER_HANDOFF_FILE), so a source killed now pauses again at its
 *      start instead of serving slots that may be the target's already.
 *   3. SLOTBITS again, and CLUSTER SLOTMERGE <image> SAVE on the target:
 *      every key the source ever recorded in them; +OK once each filter's
 *      snapshot holds them (fsynced), and the target's replicas resync.
 *   4. A map with a new epoch giving the target the slots: the target
 *      first (from then on it serves them), then the source (which stops
 *      pausing them, answers MOVED, and frees their ranges), then the rest.
 *
 * At any kill -9 each slot is served by one node with every key: before 4
 * reached the target, by the source (paused from 2 on until seen-cli cluster
 * fix rolls back: CLUSTER HANDOFF CANCEL); from then on by the target, the
 * source paused until it takes the map (passed on by peers, or by fix).
 *
 * The image (CLUSTER SLOTBITS' reply, SLOTMERGE's argument; integers
 * little-endian):
 *
 *   0  8  magic "SEENDSB1"
 *   8  2  first slot, 10 2 last slot (first <= last < 16384)
 *  12  4  filters, then for each: 1 name length (1-64), the name, 8 seed,
 *         4 slices, then for each slice (oldest first): 8 blocks (a
 *         multiple of 16384), 4 hashes (k), and (last - first + 1) *
 *         blocks / 16384 blocks of 64 bytes
 *   -  8  XXH3-64 (seed 0) of every byte before
 *
 * A filter that is not partitioned (a named one: SADD, BF.RESERVE name;
 * a config cuckoo filter; one loaded whole) lives whole on its name's
 * slot: a range that holds one is refused (it would move by a dump, not
 * yet), and so is any range while a partitioned filter holds MERGE's
 * slices of another shape (their keys are not in slot ranges).
 */
#ifndef SEEND_CLUSTER_MOVE_H
#define SEEND_CLUSTER_MOVE_H

#include <stddef.h>
#include <stdint.h>

struct cluster;
struct core;
struct filter;

#define CLUSTER_MOVE_MAGIC	"SEENDSB1"
/* The largest image: a dump's chunk (DUMP_CHUNK_MAX); seen-cli sizes its
 * groups of slots to fit. */
#define CLUSTER_MOVE_MAX	(16u << 20)

/*
 * CLUSTER SLOTBITS first last: the image of every partitioned filter's
 * blocks of those slots (malloc'd, *len bytes), or NULL with why.
 */
unsigned char *cluster_move_export(const struct core *, unsigned first,
	    unsigned last, size_t *len, char *err, size_t errlen);
/*
 * CLUSTER SLOTMERGE: the image OR-ed into the filters it names (checked
 * whole first: a filter missing here, of another seed or shape, changes
 * nothing). The keys count here only once a map gives the slots
 * (cluster_move_apply). The filters changed go in changed[] (at most max,
 * *n of them) for the caller's snapshots. 0, or -1 with why.
 */
int	cluster_move_import(struct core *, const unsigned char *p, size_t len,
	    struct filter **changed, size_t max, size_t *n, char *err,
	    size_t errlen);
/*
 * After a map was taken (and once at the start): partitioned filters take
 * the map's seed while empty; the ranges of slots this node's shard no
 * longer owns are freed, the keys their bits hold (estimated) leaving the
 * counts, and those of slots it gained are counted in; pauses of slots
 * given away end. Run before the filters' parts follow the map
 * (filter_part_check), so that no filter is full for a moment in
 * between. Cheap when nothing changed: the server's tick calls it.
 */
void	cluster_move_apply(struct core *);
/* Whether slot's keys are this node's shard's (no map: every slot is):
 * the journal's replay skips the others' (persist.c). */
int	cluster_holds_slot(const struct cluster *c, unsigned slot);

#endif
