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
 *      snapshot holds them (fsynced); the image goes into the target's
 *      replication stream, and its replicas take it as it did (primary.h).
 *   4. A map with a new epoch giving the target the slots: the target
 *      first (from then on it serves them), then the source (which stops
 *      pausing them, answers MOVED, and frees their ranges), then the rest.
 *
 * At any kill -9 each slot is served by one node with every key: before 4
 * reached the target, by the source (paused from 2 on until seen-cli cluster
 * fix rolls back: CLUSTER HANDOFF CANCEL); from then on by the target, the
 * source paused until it takes the map (passed on by peers, or by fix).
 *
 * A named filter (SADD, BF.RESERVE, CF.RESERVE name; MERGE's dst: a
 * runtime filter, not partitioned) lives whole on its name's slot and
 * moves whole with it: every image of a range carries the dumps (dump.h)
 * of the named filters whose slots are in it, and the target takes them
 * at step 3 alone (SAVE: the source pauses them then, so the copy is
 * final; without SAVE they are checked, not taken, and seen-cli's first
 * copy asks SLOTBITS a b BITSONLY, without them), in place of anything an
 * earlier move left under their names, with their EXPIRE deadlines and an
 * 'r' journal record, and drops any other named filter of those slots it
 * does not serve (a copy a rolled-back move left: the filter may have
 * been deleted on the source since). The source drops each once a map
 * gives its slot away (keyspace_drop_moved, as DEL: its 'x' record goes
 * to the journal and to its replicas), and so does a primary that finds
 * at its start a named filter of a slot not its shard's (a copy left by
 * a move rolled back, or one given away just before a kill). A filter
 * keeps its seed when it moves, so one that comes back meets its old 'x'
 * at a replay: the 'r' of its return undoes it (persist.c). The named
 * filters of an image are held to cluster_move_whole_max: a range past it
 * is refused before anything is captured, BITSONLY too, and seen-cli
 * halves the group (a single slot past it stays where it is).
 *
 * The image (CLUSTER SLOTBITS' reply, SLOTMERGE's argument; integers
 * little-endian):
 *
 *   0  8  magic "SEENDSB3"
 *   8  2  first slot, 10 2 last slot (first <= last < 16384)
 *  12  4  partitioned filters, 16 4 named filters
 *  20  -  each partitioned filter: 1 name length (1-64), the name, 8 seed,
 *         8 its window (expire, ms; 0 none), 4 slices, then for each slice
 *         (oldest first): 8 blocks (a multiple of 16384), 4 hashes (k),
 *         8 its period's start (Unix ms), and (last - first + 1) *
 *         blocks / 16384 blocks of 64 bytes; a cuckoo filter's slice: 8
 *         buckets (a multiple of 2 * 16384), 4 fingerprint bits OR
 *         CLUSTER_MOVE_CUCKOO, 8 its start, and the slots' ranges of the
 *         table (cuckoo.h, CUCKOO_LAYOUT_SLOTS: buckets / 16384 * 4 * bits
 *         / 8 bytes a slot), which replace the target's
 *   -  -  each named filter: 1 name length, the name, 8 its EXPIRE
 *         deadline (Unix ms; 0 none), 4 chunks, then its dump's chunks
 *         (dump.h; each chunk's length is in its header)
 *   -  8  XXH3-64 (seed 0) of every byte before
 *
 * "SEENDSB2" (seend before windows moved) is the same without the window
 * and the period starts, and is taken for filters without a window. A
 * window's slices are matched by period, not by index: each is OR-ed into
 * the target's slice of the same rank in the period of the same start
 * (added there as growth would add it), and one whose period has expired
 * on the target is skipped; windows must be the same on every node.
 *
 * A filter of the config file that is not partitioned (one loaded from a
 * snapshot made outside cluster mode) is on every node and lives on its
 * name's slot: a range that holds one is refused, every range while one
 * that takes URLs holds keys, and any range while a partitioned filter
 * holds MERGE's slices of another shape (their keys are not in slot
 * ranges).
 */
#ifndef SEEND_CLUSTER_MOVE_H
#define SEEND_CLUSTER_MOVE_H

#include <stddef.h>
#include <stdint.h>

struct cluster;
struct core;
struct filter;

#define CLUSTER_MOVE_MAGIC	"SEENDSB3"
/* The image of seend before windows moved (no expire, no period starts):
 * still taken, for filters without a window. */
#define CLUSTER_MOVE_MAGIC_2	"SEENDSB2"
#define CLUSTER_MOVE_HEADER	20
/* A cuckoo slice's entry: its "hashes" field is its fingerprint bits with
 * this flag (an older seend refuses it as a slice of another shape). */
#define CLUSTER_MOVE_CUCKOO	0x80000000u
/* The largest image of partitioned filters' ranges: a dump's chunk
 * (DUMP_CHUNK_MAX); seen-cli sizes its groups of slots to fit. */
#define CLUSTER_MOVE_MAX	(16u << 20)
/* The most the named filters of an image may add: Redis's largest
 * argument (proto-max-bulk-len), which MIGRATE of a key is held to. */
#define CLUSTER_MOVE_WHOLE_MAX	(512u << 20)
/* The bound the named filters of an image are held to: WHOLE_MAX, less
 * for tests (SEEND_FAULT_MOVE_NAMED_MAX, read in main.c). */
extern size_t	cluster_move_whole_max;
/* The largest image, and SLOTMERGE's argument. */
#define CLUSTER_IMAGE_MAX	(CLUSTER_MOVE_MAX + CLUSTER_MOVE_WHOLE_MAX)

/* A filter a SLOTMERGE changed: whole (a named filter taken, with its
 * EXPIRE deadline in Unix ms, 0 none) or a partitioned one's ranges. */
struct cluster_move_changed {
	struct filter	*f;
	int		 whole;
	int64_t		 deadline_ms;
};

/*
 * CLUSTER SLOTBITS first last: the image of every partitioned filter's
 * blocks of those slots and of the named filters on them, each with its
 * deadline_of (NULL: no named filter, BITSONLY) (malloc'd, *len bytes),
 * or NULL with why.
 */
unsigned char *cluster_move_export(const struct core *, unsigned first,
	    unsigned last, int64_t (*deadline_of)(const struct filter *),
	    size_t *len, char *err, size_t errlen);
/* cluster_move_import's how: the named filters are taken too (SAVE); the
 * image comes from the primary's stream (a replica: what it replaces in
 * a slot its map gives it already is older than the image, which the
 * primary took before it served the slot). */
#define CLUSTER_MOVE_SAVE	1
#define CLUSTER_MOVE_STREAM	2
/*
 * CLUSTER SLOTMERGE: the image OR-ed into the partitioned filters it
 * names and, with CLUSTER_MOVE_SAVE in how, its named filters taken
 * whole (checked whole first: a filter missing here, of another seed or
 * shape, a named one of a slot served here (unless CLUSTER_MOVE_STREAM)
 * or in the config, a damaged dump, changes nothing). The keys count
 * here once a map gives the slots (cluster_move_apply), or at once for
 * the slots it gave already (a move sent again, a replica's late image). The filters changed go in *changed (malloc'd,
 * *n of them) for the caller's snapshots and deadlines. A partitioned
 * filter of another seed is refused unless its part here holds no bit:
 * then reseed empties it with the source's seed, durably (the caller's
 * persist_filter_reset_to), before any bit is merged (a merge that then
 * fails, out of memory, leaves that empty part with the new seed). 0, or
 * -1 with why.
 */
typedef int	(*cluster_move_reseed_fn)(struct core *, struct filter *,
		    uint64_t seed, char *err, size_t errlen);
int	cluster_move_import(struct core *, const unsigned char *p, size_t len,
	    int how, cluster_move_reseed_fn reseed,
	    struct cluster_move_changed **changed, size_t *n, char *err,
	    size_t errlen);
/*
 * After a map was taken (and once at the start): partitioned filters take
 * the map's seed while empty; the ranges of slots this node's shard no
 * longer owns are freed, the keys their bits hold (estimated) leaving the
 * counts, and those of slots it gained are counted in; named filters of
 * slots given away are marked (filter.given_away) for the keyspace's
 * tick to drop (keyspace_drop_moved); pauses of slots
 * given away end. Run before the filters' parts follow the map
 * (filter_part_check), so that no filter is full for a moment in
 * between. Cheap when nothing changed: the server's tick calls it.
 */
void	cluster_move_apply(struct core *);
/* Whether slot's keys are this node's shard's (no map: every slot is):
 * the journal's replay skips the others' (persist.c). A node started as
 * a replica holds every slot here (its primary's map may lag). */
int	cluster_holds_slot(const struct cluster *c, unsigned slot);
/* Whether slot is this node's shard's in the map it holds now (no map:
 * every slot is), whatever its role at its start. */
int	cluster_shard_owns(const struct cluster *c, unsigned slot);

#endif
