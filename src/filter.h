/*
 * filter.h - a named filter: a list of Bloom "slices" that grows past its
 * planned capacity and, with a window, forgets.
 *
 * Every slice is one split-block Bloom filter (bloom.h). The newest slice
 * takes new keys; a lookup asks every live slice. All slices of a filter
 * share one hash seed, so a key is hashed once whatever the slice count.
 *
 * Growth (Almeida et al., "Scalable Bloom Filters", 2007): when the newest
 * slice has taken its capacity, a slice `growth` times larger is added,
 * planned for a false-positive rate FILTER_TIGHTENING times the previous
 * one's. The rates form a geometric series, so all slices together stay
 * under the filter's error_rate however far it grows:
 *
 *     e_i = E (1 - r) r^i,   sum over i >= 0 of e_i = E (1 - r) / (1 - r) = E
 *
 * and a lookup misses in each slice independently (disjoint keys), so the
 * filter's rate is 1 - prod(1 - p_i) <= sum p_i <= sum e_i <= E, where p_i
 * <= e_i is slice i's rate at its fill. A fixed filter (growth off) is one
 * slice planned for E itself, and refuses new keys once it holds capacity.
 *
 * Windows (expire T): keys are recorded in time slices. Time is cut into
 * periods of G = T / 8 aligned on multiples of G since the epoch; the
 * newest slice belongs to the current period, and a slice is dropped once
 * its period started 9 G ago. A key recorded at t lives in a slice that
 * started in (t - G, t], so it is forgotten between t + 8 G = t + T and
 * t + 9 G = t + 9T/8. At most 9 periods are live at once, so each gets E / 9
 * of the rate budget (and grows within its period as above), and capacity
 * counts keys per window: a period's first slice takes capacity / 8.
 *
 * Concurrency: only the event loop changes a filter; the snapshot thread
 * reads slices' bit arrays (bloom.h explains why that is safe) through
 * references it holds, so a slice dropped meanwhile stays mapped until the
 * snapshot is written.
 *
 * No libevent and no sockets here.
 */
#ifndef SEEND_FILTER_H
#define SEEND_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bloom.h"
#include "cuckoo.h"
#include "keyslot.h"

/* r: each grown slice is planned for this times the previous one's rate. */
#ifndef FILTER_TIGHTENING
#define FILTER_TIGHTENING	0.8
#endif
/* Periods of a window, and periods live at once (the current one too). */
#define FILTER_PERIODS		8
#define FILTER_LIVE_PERIODS	(FILTER_PERIODS + 1)
/* A limit no real filter reaches: 64 doublings of any capacity. */
#define FILTER_MAX_SLICES	4096

/* Filter names become file names in data_dir. */
#define FILTER_NAME_MAX		64

/* type: what a filter's slices are. A cuckoo filter's slices are cuckoo
 * tables (cuckoo.h), "sub-filters" in RedisBloom's words: it grows and
 * fills as a bloom filter does, has no window, and can forget a key
 * (filter_forget). Its slices are never on the fast paths. */
#define FILTER_TYPE_BLOOM	0
#define FILTER_TYPE_CUCKOO	1
/* The lowest rate a cuckoo slice is planned for: 16-bit fingerprints at
 * half load (cuckoo_plan refuses less). A growing cuckoo filter's slices
 * tighten as a bloom filter's do until they reach it; see seend(8). */
#define FILTER_CUCKOO_RATE_MIN	7e-5

/* normalize: keys hashed as given, or url_normalize()d first. */
#define FILTER_NORMALIZE_OFF		0
#define FILTER_NORMALIZE_STANDARD	1

/*
 * What a filter is asked to be: a [filter.NAME] section's settings (config.h
 * embeds it), a runtime filter's (BF.RESERVE, SADD...) or a snapshot's.
 */
struct filter_shape {
	uint64_t	 capacity;
	double		 error_rate;
	unsigned	 growth;	/* 0 = off */
	uint64_t	 expire;	/* seconds, 0 = never */
	int		 normalize;	/* FILTER_NORMALIZE_* */
	int		 type;		/* FILTER_TYPE_* */
	/* partitioned by slot (a config filter of a cluster node): see
	 * filter_slot_hash */
	int		 slot_major;
};

/* What seend_seen answers besides 0 (new) and 1 (seen). */
#define FILTER_FULL		(-1)

enum filter_state {
	FILTER_OK,
	FILTER_NEAR_FULL,	/* cannot grow, past 90 % of its capacity */
	FILTER_STATE_FULL,	/* cannot grow, at capacity: refuses keys */
};

struct slice {
	struct bloom	 bloom;		/* bloom.count: keys it took */
	/* a cuckoo filter's slice: cuckoo.table != NULL, bloom all zero */
	struct cuckoo	 cuckoo;
	uint64_t	 capacity;	/* keys it takes before the next is added */
	double		 error_rate;	/* its planned rate at capacity */
	int64_t		 start_ms;	/* wall-clock start of its period */
	int		 refs;		/* the filter's and snapshot jobs' */
	/* merged slices (MERGE): the seed their keys were hashed with */
	uint64_t	 seed;
	/* a snapshot's copy of a cuckoo slice being filled by
	 * copy-on-write: the live slice (referenced) it comes from */
	struct slice	*cow_src;
};

struct filter {
	char		 name[FILTER_NAME_MAX + 1];
	size_t		 namelen;	/* strlen(name), for the journal */
	/* what the config asks for now: new slices are planned from it */
	uint64_t	 capacity;
	double		 error_rate;
	unsigned	 growth;	/* 0 = off */
	int64_t		 expire_ms;	/* 0 = never */
	uint64_t	 seed;		/* one hash per key for every slice */
	int		 normalize;	/* hash url_normalize()d keys */
	int		 type;		/* FILTER_TYPE_* */
	/* partitioned by slot (BLOOM_LAYOUT_SLOTS512, CUCKOO_LAYOUT_SLOTS):
	 * each key's hash carries its slot (filter_slot_hash) and each
	 * slice's nblocks is a multiple of KEYSLOT_COUNT (a table's buckets
	 * of 2 * KEYSLOT_COUNT), so a node touches only the blocks (ranges)
	 * of the slots it is asked about: those it owns */
	int		 slot_major;
	/* a named filter whose slot this node gave away (cluster_move.c):
	 * the keyspace's tick drops it */
	int		 given_away;
	/* normalize or slot_major: filter_hash's out-of-line case */
	int		 hash_slow;
	unsigned	 part_gen;	/* filter_set_part's change it marks */
	/* cuckoo filters: keys forgotten (CF.INFO's "deleted") and the
	 * MAXITERATIONS CF.RESERVE was given (kept for CF.INFO: every
	 * insertion walks at most CUCKOO_MAX_KICKS) */
	uint64_t	 forgotten;
	unsigned	 max_kicks;
	unsigned	 bucket_size;	/* CUCKOO_SLOTS, whatever was asked */
	/* the journal position its snapshot was captured at (a cuckoo
	 * filter's replay skips the records before it: forgets are not
	 * idempotent) */
	uint64_t	 loaded_jseq, loaded_joff;
	struct slice	**slices;	/* oldest first */
	size_t		 nslices;
	size_t		 slots;		/* allocated in slices[] */
	struct slice	*head;		/* the newest, or NULL */
	/* slices MERGE brought from filters of other seeds or shapes:
	 * read-only, each asked with its own seed's hash of the key, so a
	 * lookup needs the key (filter_merged_hit); a filter with any is
	 * never on the batched fast paths */
	struct slice	**merged;
	size_t		 nmerged;
	/* the fast path: one slice, no window, not full; filter_seen and
	 * filter_check then cost what one Bloom filter does */
	int		 simple;
	/* the head's bits when simple and keys are hashed as given: the
	 * batch path then works on them directly (command_run_simple) */
	struct bloom	*fast;
	/* the same for a cuckoo filter of one slice, not full: its table */
	struct cuckoo	*fast_cuckoo;
	int		 full;		/* cannot record: refuses new keys */
	int		 held;		/* full because of max_memory */
	uint64_t	 next_mark;	/* head count at which to look again */
	int		 warned;	/* 0, 90 or 100: the last warning given */
	/* a partitioned cuckoo filter refused a key for its slot's full
	 * range (warned once) */
	int		 range_warned;
	int64_t		 drop_at_ms;	/* when the oldest slice expires */
	/* every new key and every slice added or dropped counts once:
	 * "changed since the last snapshot" is mutations != saved */
	uint64_t	 dropped;	/* mutations of dropped slices */
	uint64_t	 reshapes;	/* slices added or dropped */
	int		 refs;
	/* snapshots: a data_dir change makes every filter owe a snapshot in
	 * the new directory: dir_gen counts those changes, saved_gen is the
	 * one its last snapshot was for */
	uint64_t	 saved;
	unsigned	 dir_gen;
	unsigned	 saved_gen;
	int		 saving;		/* jobs queued or running */
	time_t		 last_save;		/* 0 = never */
	double		 last_save_secs;
	int		 last_save_ok;		/* -1 none yet, 0 failed, 1 ok */
	char		 last_save_error[256];
	uint64_t	 saves_ok, saves_failed;
	time_t		 loaded_at;		/* when its snapshot was loaded, or 0 */
	/* the journal: segments below this one hold none of its keys that
	 * a snapshot lacks (persist.c) */
	uint64_t	 journal_covered;
	/* its next periodic snapshot is due snapshot_interval after the
	 * later of this (a submission, or when it was first seen) and
	 * last_save */
	time_t		 snap_attempt;
	/* traffic */
	uint64_t	 seen_new, seen_old, checks, refused;
	/* created at run time (BF.RESERVE, SADD...), not by a config section */
	int		 runtime;
	int		 deleted;	/* by DEL: a snapshot in flight is unlinked */
};

/* The wall clock in milliseconds as the event loop last read it: windows
 * are decided on it, so a batch of requests sees one time. */
extern int64_t	 filter_now_ms;
/* Reads the clock into filter_now_ms (once per batch of input). */
void		 filter_clock_update(void);

/* Bytes mapped by every slice of every filter, and the cap (0: none). */
extern uint64_t	 filter_memory_used;
extern uint64_t	 filter_memory_limit;
/* What max_memory leaves for a load's arrays (0: no bound; at least 1
 * when it is reached): a dump's max_bytes (dump_load_start). */
uint64_t	 filter_memory_room(void);

/*
 * A slot-major filter's part on this node: the slots of its shard (the
 * node's, or its primary's), of KEYSLOT_COUNT; the part is full at that
 * share of its slices' capacity, which keeps the false-positive rate the
 * filter's error_rate cluster-wide. KEYSLOT_COUNT (the default) in a
 * cluster of one. filter_part_check applies a change.
 */
void		 filter_set_part(unsigned slots);
/* The share of a slot-major filter's slices its part holds keys in (the
 * part's slots / KEYSLOT_COUNT); 1 for any other filter. */
double		 filter_part_share(const struct filter *);
/* The seed of the cluster's map (0: none): a slot-major filter created
 * from now on hashes with it instead of a random one (cluster_map.h). */
void		 filter_set_part_seed(uint64_t seed);
/* Whether f hashes url_normalize()d keys (its other hash settings kept
 * in step). */
void		 filter_set_normalize(struct filter *, int on);
/* A change of filter_set_part applied to f's marks (every tick). */
void		 filter_part_check(struct filter *);

/*
 * The filter name (at most FILTER_NAME_MAX bytes) of that shape: its
 * snapshot in dir if there is one, else a new empty one. Returns NULL with
 * a message in err.
 */
struct filter	*filter_open(const char *name, const struct filter_shape *,
		    const char *dir, char *err, size_t errlen);
struct dump_image;
/*
 * The filter name holding a loaded dump's slices (BF.LOADCHUNK), with
 * every property the dump carries (seed, growth, window and its slices'
 * period starts, normalize, capacity and error_rate for new slices). The
 * slices are taken (img->slices becomes NULL) whatever happens. The new
 * filter owes its first snapshot. NULL with a message in err.
 */
struct filter	*filter_from_dump(const char *name, struct dump_image *img,
		    char *err, size_t errlen);
/*
 * Gives a filter that holds no key and was not loaded from a snapshot the
 * hash seed its journalled keys were hashed with. Returns 0, or -1 if it
 * holds keys (its seed can no longer change).
 */
int		 filter_reseed(struct filter *, uint64_t seed);
/*
 * A filter from a snapshot file open at fd (a full sync's image): its
 * shape, as the file says, in *shape. NULL with a message.
 */
struct filter	*filter_from_image(const char *name, int fd,
		    struct filter_shape *shape, char *err, size_t errlen);
/*
 * A key its primary answered new that a replica's filter already held:
 * counted all the same. A full sync's image is read from the live bits
 * after its counts were taken, so it may hold keys its count does not;
 * their records follow it, and the primary counted each once.
 */
void		 filter_count_new(struct filter *);
/* dst takes src's keys, slices and seed (a replica's full sync); src is
 * left empty for its owner to release. */
void		 filter_take(struct filter *dst, struct filter *src);
/*
 * Empties f (DEL of a config-file filter, RESET): every slice is let go
 * (a snapshot job that holds one keeps it until written), the hash seed
 * becomes seed, and f is what a new filter of its settings is - one empty
 * first slice, or none with a window (its first key opens a period) -
 * with its name, settings and traffic counters kept. The change counts
 * (f is dirty) even for a filter that held nothing, so that the next
 * snapshot replaces the file of the old seed. A first slice that cannot
 * be allocated now (max_memory) is tried again by the first key, as for
 * a window. Durability is the caller's (persist_filter_reset).
 */
void		 filter_reset(struct filter *, uint64_t seed);
/* A new empty filter name of that shape (no file is read). */
struct filter	*filter_create(const char *name,
		    const struct filter_shape *, char *err, size_t errlen);
/*
 * A reload's new settings for a running filter: every key it holds stays;
 * capacity, error_rate and growth plan the slices added from now on, and a
 * window starts counting for the slices it has. Writes what changed into
 * msg (empty if nothing did).
 */
void		 filter_reconfigure(struct filter *,
		    const struct filter_shape *, char *msg, size_t msglen);
void		 filter_ref(struct filter *);
void		 filter_unref(struct filter *);
void		 slice_ref(struct slice *);
void		 slice_unref(struct slice *);
/* A new empty slice of nblocks and hashes (MERGE's copies); NULL if
 * out of memory or over max_memory. */
struct slice	*slice_alloc(uint64_t nblocks, uint32_t hashes,
		    uint64_t capacity, double error_rate, int64_t start_ms);
/* Every slice, own (oldest first) then merged: i < filter_nall(f). */
size_t		 filter_nall(const struct filter *);
struct slice	*filter_slice_at(const struct filter *, size_t i);
struct snapshot_slice;
/*
 * The filter's slices as they are now, own then merged, into out (room
 * for filter_nall): each referenced in owners (the caller unrefs them),
 * with its count and bits set taken now (a snapshot job, a dump). A
 * cuckoo slice is copied (a table changes under a reader): owners then
 * holds the copy, filled by copy-on-write (cuckoo_cow_start) so that the
 * loop never stops for it; the image is the table as it is now however
 * long the filling takes. Returns 0 when every copy is whole, 1 while
 * some are being filled (filter_capture_step), -1 if out of memory (no
 * reference is left taken).
 */
int		 filter_capture(struct filter *, struct snapshot_slice *out,
		    struct slice **owners);
/* Fills the copies of a capture by at least max_bytes more: 1 once all
 * n are whole. filter_capture_finish fills them now. */
int		 filter_capture_step(struct slice **owners, size_t n,
		    size_t max_bytes);
void		 filter_capture_finish(struct slice **owners, size_t n);
/*
 * The filter as it is now as a dump's image (dump.h): its settings, and
 * each slice held in *owners (n = filter_nall), its count taken now; a
 * cuckoo filter's tables copied whole now. 0, or -1 out of memory.
 * filter_dump_release lets the slices go.
 */
int		 filter_dump_capture(struct filter *, struct dump_image *img,
		    struct slice ***owners);
void		 filter_dump_release(struct dump_image *img,
		    struct slice **owners);
/* A filter of that shape with no slice yet and the given seed (MERGE's
 * new destination: its slices come from the merge). */
struct filter	*filter_new_empty(const char *name,
		    const struct filter_shape *, uint64_t seed);
/* Appends s (its reference is taken) as the filter's newest own slice,
 * its head. -1 if out of memory. */
int		 filter_add_own(struct filter *, struct slice *s);
/* After slices' counts grew from outside (MERGE): the head is looked at
 * again (grows, warns, or is full), and the filter owes a snapshot. */
void		 filter_counts_changed(struct filter *);
/*
 * Slice i (oldest first) of a slot-major filter taking a moved slot's
 * blocks or buckets (cluster_move.c): slices are added, as growth adds
 * them, until there is one; the slice (its bloom, or cuckoo for a cuckoo
 * filter), or NULL with why in err (growth off, a window, max_memory).
 */
struct slice	*filter_part_slice(struct filter *, size_t i, char *err,
		    size_t errlen);
/*
 * The same for a slot-major filter with a window, whose slices are matched
 * by period rather than by index: slice nth (from 0) of the period
 * starting at start (Unix ms: a multiple of its period, or of the period
 * of a window a reload changed), slices added for that period as growth
 * adds them, in its place among the others, until there is one. NULL with
 * why in err (start not positive, growth off, max_memory).
 */
struct bloom	*filter_period_slice(struct filter *, int64_t start,
		    size_t nth, char *err, size_t errlen);
/* The blocks and hashes slice nth of the period starting at start has,
 * or would have once filter_period_slice added it: 0, or -1 when it could
 * not be added (growth off, a plan past 1 TiB). Changes nothing. */
int		 filter_period_plan(const struct filter *, int64_t start,
		    size_t nth, uint64_t *nblocks, uint32_t *hashes);
/* The shape slice nth of a filter without a window has, or would have
 * once filter_part_slice added it: buckets and fingerprint bits of a
 * cuckoo filter, blocks and hashes of a bloom one. 0, or -1 when it could
 * not be added (growth off, a plan past 1 TiB). Changes nothing. */
int		 filter_part_plan(const struct filter *, size_t nth,
		    uint64_t *n, uint32_t *bits);
/* A window's period in ms (expire / 8), or 0 without one. */
int64_t		 filter_period_ms(const struct filter *);
/* Adds s (its reference is taken) as a merged slice of seed. -1 if out
 * of memory. */
int		 filter_add_merged(struct filter *, struct slice *s,
		    uint64_t seed);
/*
 * Whether a merged slice holds key (h: its hash with the filter's own
 * seed; key as the client sent it, normalised here if the filter does).
 * 0 for a filter without merged slices.
 */
int		 filter_merged_hit(struct filter *, uint64_t h, const char *key,
		    size_t len, int64_t now_ms);

/* Cuckoo filters (FILTER_TYPE_CUCKOO) only. */
/*
 * FORGET / CF.DEL: removes one copy of h's fingerprint from the oldest
 * slice holding one. 1 if one was held, else 0. Why the oldest: a key is
 * recorded only where no slice held its fingerprint, and slices older
 * than the head take no key after it, so the oldest slice that holds the
 * fingerprint is the one that took the key (a newer one's copy belongs
 * to another key). A full fixed filter takes keys again once it has room.
 */
int		 filter_forget(struct filter *, uint64_t h);
/* CF.ADD: stores one more copy of h's fingerprint, held or not: 0, or
 * FILTER_FULL if the filter cannot take it (nothing changed). */
int		 filter_add_copy(struct filter *, uint64_t h);
/* CF.COUNT: copies of h's fingerprint in all slices (an upper bound of
 * the key's copies: another key's fingerprint may count). */
uint64_t	 filter_copies(const struct filter *, uint64_t h);
/* Buckets of all slices (CF.INFO). */
uint64_t	 filter_buckets(const struct filter *);
/* The slots every slice has, and the ones in use: the fill. */
uint64_t	 filter_slots(const struct filter *);

/* Keys a slice holds (a cuckoo slice: fingerprints). */
static inline uint64_t
slice_count(const struct slice *s)
{
	return s->cuckoo.table != NULL ? s->cuckoo.count : s->bloom.count;
}

static inline int
filter_is_cuckoo(const struct filter *f)
{
	return f->type == FILTER_TYPE_CUCKOO;
}

/* Keys answered new that live slices hold. */
uint64_t	 filter_count(const struct filter *);
/* Changes so far (see mutations above). */
uint64_t	 filter_mutations(const struct filter *);
/* 1 if changed since the last successful snapshot, or the snapshot is not
 * in the current data_dir. */
int		 filter_dirty(const struct filter *);
/* A filter held full by max_memory tries to grow again (the sweep calls
 * it every second, and a reload). */
void		 filter_retry(struct filter *);
/* Drops expired slices; the sweep calls it so memory goes back without
 * traffic. */
void		 filter_expire(struct filter *, int64_t now_ms);
enum filter_state filter_state(const struct filter *);
const char	*filter_state_name(enum filter_state);
/* Bytes of all slices' bit arrays, and the bytes mapped for them. */
uint64_t	 filter_bytes(const struct filter *);
uint64_t	 filter_mapped(const struct filter *);
/* Sum of the live slices' capacities. */
uint64_t	 filter_slice_capacity(const struct filter *);
/* The false-positive rate now, from each slice's fill (not from counts). */
double		 filter_fp_estimate(const struct filter *);
/* The rate when every live slice holds its capacity. */
double		 filter_fp_planned(const struct filter *);

/*
 * The plan a filter follows, for "seen-cli plan" and sizing texts: the
 * slices a filter of these settings has once it holds keys keys (per
 * window with an expire), their bytes and the rate all of them together
 * give when full. Returns 0, or -1 if the settings cannot be planned.
 */
struct filter_plan {
	uint64_t	 keys;
	size_t		 slices;
	uint64_t	 bytes;
	double		 fp_rate;	/* at that fill, from the exact formula */
	double		 bits_per_key;	/* bytes * 8 / keys */
	uint32_t	 hashes;	/* of the newest slice */
};
int		 filter_plan_for(uint64_t capacity, double error_rate,
		    unsigned growth, int64_t expire_ms, uint64_t keys,
		    struct filter_plan *);

/* The first slice of a filter (or of each period): its capacity and rate. */
void		 filter_first_shape(uint64_t capacity, double error_rate,
		    unsigned growth, int64_t expire_ms, uint64_t *cap,
		    double *rate);

/* A cuckoo filter's SEEN and CHECK (filter_seen's and filter_check's). */
int		 filter_cuckoo_seen(struct filter *, uint64_t h);
int		 filter_cuckoo_check(const struct filter *, uint64_t h);
/* Out of line: the cases filter_seen and filter_check do not inline. */
int		 filter_seen_slices(struct filter *, uint64_t h, int64_t now_ms);
int		 filter_check_slices(struct filter *, uint64_t h, int64_t now_ms);
void		 filter_head_filled(struct filter *);
/* filter_seen at a given time (journal replay). */
int		 filter_seen_at(struct filter *, uint64_t h, int64_t when_ms);

/*
 * A slot-major filter's hash of a key of slot: the slot in the top
 * KEYSLOT_BITS, the key's hash below. bloom_block's multiply-shift then
 * lands in the slot's nblocks / KEYSLOT_COUNT blocks, chosen by the hash's
 * next bits; bloom_masks mixes the whole. A cuckoo table's index lands
 * in the slot's range the same way (its fingerprint from the low 32
 * bits; cuckoo.h). The journal and the replication stream carry this
 * hash, so replays and replicas fill the same part.
 */
static inline uint64_t
filter_slot_hash(uint64_t h, unsigned slot)
{
	return (uint64_t)slot << (64 - KEYSLOT_BITS) |
	    (h & (UINT64_MAX >> KEYSLOT_BITS));
}

/*
 * A new filter's hash seed: random, its low 16 bits FILTER_SEED_SLOTS when
 * slot_major and anything else when not, so that a journal read without
 * a snapshot (its name records hold the seed, not the layout) tells which
 * layout its keys were hashed for (filter_reseed).
 */
#define FILTER_SEED_SLOTS	0x5107u
uint64_t	 filter_new_seed(int slot_major);
/*
 * The seed a partitioned filter takes when emptied (DEL, RESET, FLUSHALL,
 * CLUSTER RESETPART): derived from the one before rather than drawn, so
 * that every node of a cluster emptying its part of the filter arrives at
 * the same seed, and slots can move between them again. Never seed itself
 * (a reset's new seed is the filter's new epoch in the journal).
 */
uint64_t	 filter_next_seed(uint64_t seed);
/*
 * Whether seed later follows seed earlier by 1 to FILTER_SEED_CHAIN
 * resets. A part must never go back to a seed it held (the journal's
 * resets are told apart by their seeds): one emptied after earlier does
 * not take it again.
 */
#define FILTER_SEED_CHAIN	64
int		 filter_seed_after(uint64_t later, uint64_t earlier);
/* Whether f holds no key: no bit set in any slice (no fingerprint in a
 * cuckoo filter's), no merged slice. */
int		 filter_is_blank(const struct filter *);

/* filter_hash's out-of-line case: a canonical URL (normalize = standard)
 * and, slot_major, the key's slot (computed when slot is negative). */
uint64_t	 filter_hash_slow(const struct filter *, const char *key,
		    size_t len, int slot);
/* The longest canonical form hashed; a longer one, or a key that is not a
 * URL, is hashed as given. */
#define FILTER_NORMAL_MAX	16384

/* The one hash of a key for every slice of f. */
static inline uint64_t
filter_hash(const struct filter *f, const void *key, size_t len)
{
	if (__builtin_expect(f->hash_slow, 0))
		return filter_hash_slow(f, key, len, -1);
	return XXH3_64bits_withSeed(key, len, f->seed);
}

/* The same where the key's slot is known (a cluster node's batch has
 * computed it to route the key), or -1. */
static inline uint64_t
filter_hash_at(const struct filter *f, const void *key, size_t len, int slot)
{
	if (__builtin_expect(f->hash_slow, 0)) {
		if (f->normalize)
			return filter_hash_slow(f, key, len, slot);
		/* a partitioned filter's key on its node: inline, as the
		 * batch asks it for every request (the slot too, on a
		 * cluster of one, which checks no key against a map) */
		return filter_slot_hash(XXH3_64bits_withSeed(key, len,
		    f->seed), slot >= 0 ? (unsigned)slot :
		    keyslot_of(key, len));
	}
	return XXH3_64bits_withSeed(key, len, f->seed);
}

/* The blocks a lookup of h reads, one per slice. */
static inline __attribute__((always_inline)) void
filter_prefetch(const struct filter *f, uint64_t h)
{
	if (f->simple) {
		bloom_prefetch(&f->head->bloom, h);
		return;
	}
	for (size_t i = 0; i < f->nslices; i++)
		if (f->slices[i]->cuckoo.table != NULL)
			cuckoo_prefetch(&f->slices[i]->cuckoo, h);
		else
			bloom_prefetch(&f->slices[i]->bloom, h);
}

/* 1 if h is in the filter (or a false positive), else 0; records nothing. */
static inline __attribute__((always_inline)) int
filter_check(struct filter *f, uint64_t h)
{
	if (f->simple)
		return bloom_check(&f->head->bloom, h);
	if (f->type == FILTER_TYPE_CUCKOO)
		return filter_cuckoo_check(f, h);
	return filter_check_slices(f, h, filter_now_ms);
}

/*
 * SEEN: 0 if h was not in the filter (it is now), 1 if it was, FILTER_FULL
 * if it was not and the filter cannot take it (nothing recorded).
 */
static inline __attribute__((always_inline)) int
filter_seen(struct filter *f, uint64_t h)
{
	if (f->simple) {
		struct bloom *b = &f->head->bloom;
		int hit = bloom_add(b, h);

		if (!hit && b->count >= f->next_mark)
			filter_head_filled(f);
		return hit;
	}
	if (f->type == FILTER_TYPE_CUCKOO)
		return filter_cuckoo_seen(f, h);
	return filter_seen_slices(f, h, filter_now_ms);
}

#endif
