/*
 * cluster_move.c - a slot's bits out of one node and into another, and
 * the pause that hands it over; see cluster_move.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "cluster.h"
#include "cluster_handoff.h"
#include "cluster_map.h"
#include "cluster_move.h"
#include "config.h"
#include "cuckoo.h"
#include "core.h"
#include "dump.h"
#include "fileio.h"
#include "filter.h"
#include "keyslot.h"
#include "log.h"
#include "registry.h"

/* ---- the image ---- */

size_t	cluster_move_whole_max = CLUSTER_MOVE_WHOLE_MAX;

/* Blocks of slot first's range in a slice of nblocks, and their count. */
static uint64_t
range_start(uint64_t nblocks, unsigned slot)
{
	return nblocks / KEYSLOT_COUNT * slot;
}

/* The bytes of one slot's range in a partitioned filter's slice. */
static size_t
range_bytes(const struct slice *sl)
{
	if (sl->cuckoo.table != NULL)
		return (size_t)cuckoo_range_bytes(&sl->cuckoo);
	return (size_t)(sl->bloom.nblocks / KEYSLOT_COUNT) * BLOOM_BLOCK_BYTES;
}

/* A filter of the config file that lives whole on its name's slot (one
 * loaded whole from a snapshot made outside cluster mode, or by a seend
 * before partitioned cuckoo filters) whose name falls in first..last: it
 * is on every node, and does not move. */
static const struct filter *
pinned_in(const struct core *core, unsigned first, unsigned last)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		const struct filter *f = core->reg->filters[i];
		unsigned slot;

		if (f->slot_major || f->runtime)
			continue;
		slot = keyslot_of(f->name, f->namelen);
		if (slot >= first && slot <= last)
			return f;
	}
	return NULL;
}

/*
 * A filter of the config file that is not partitioned (loaded whole, as
 * pinned_in's) and takes URLs (the default filter, or one of hosts or
 * prefixes) while it holds keys: each node's copy holds the URLs of its
 * own slots, which a whole table cannot tell apart by slot, so no slot of
 * the node can move without its URLs answered new again on the target.
 * NULL when there is none.
 */
static const struct filter *
unmovable_urls(const struct core *core)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		const struct filter		*f = core->reg->filters[i];
		const struct filter_config	*fc;

		if (f->slot_major || f->runtime || filter_count(f) == 0)
			continue;
		fc = config_find_filter(core->cfg, f->name);
		if (f == core->reg->default_filter || (fc != NULL &&
		    (fc->nhosts > 0 || fc->nprefixes > 0)))
			return f;
	}
	return NULL;
}

/* A named filter (SADD, BF.RESERVE, CF.RESERVE, MERGE's dst: a runtime
 * filter not partitioned) that moves whole with its name's slot. */
static int
moves_whole(const struct filter *f, unsigned first, unsigned last)
{
	unsigned slot;

	if (f->slot_major || !f->runtime)
		return 0;
	slot = keyslot_of(f->name, f->namelen);
	return slot >= first && slot <= last;
}

/* The bytes a named filter's entry takes in an image, at most: its arrays,
 * its dump's header chunk and each chunk's header. */
static uint64_t
whole_estimate(const struct filter *f)
{
	uint64_t bytes = filter_bytes(f);

	return 1 + f->namelen + 12 + DUMP_CHUNK_HEADER + DUMP_HEADER_FIXED +
	    (uint64_t)DUMP_SLICE_ENTRY * filter_nall(f) + bytes +
	    DUMP_CHUNK_HEADER * (bytes / (DUMP_CHUNK_MAX / 2) + 1);
}

/* One named filter of an image being written: its dump, captured. */
struct whole_out {
	const struct filter	*f;
	struct dump_image	 img;
	struct slice		**owners;
	uint32_t		 nchunks;
	size_t			 bytes;	/* its entry in the image */
};

static void
wholes_free(struct whole_out *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		filter_dump_release(&w[i].img, w[i].owners);
	free(w);
}

/* The named filters of first..last captured into *out (*n of them): 0,
 * or -1 with why. */
static int
wholes_capture(const struct core *core, unsigned first, unsigned last,
    struct whole_out **out, size_t *n, size_t *bytes, char *err,
    size_t errlen)
{
	struct whole_out	*w;
	size_t			 m = 0;

	*n = 0;
	*bytes = 0;
	*out = NULL;
	for (size_t i = 0; i < core->reg->nfilters; i++)
		m += moves_whole(core->reg->filters[i], first, last);
	if (m == 0)
		return 0;
	if ((w = calloc(m, sizeof(*w))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < core->reg->nfilters && *n < m; i++) {
		struct filter		*f = core->reg->filters[i];
		struct whole_out	*o = &w[*n];

		if (!moves_whole(f, first, last))
			continue;
		if (filter_dump_capture(f, &o->img, &o->owners) == -1) {
			wholes_free(w, *n);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		o->f = f;
		(*n)++;
		if ((o->nchunks = dump_chunk_count(&o->img, 0)) == 0) {
			wholes_free(w, *n);
			snprintf(err, errlen, "filter %s cannot be dumped (too "
			    "many slices)", f->name);
			return -1;
		}
		o->bytes = 1 + f->namelen + 8 + 4;
		for (uint32_t c = 0; c < o->nchunks; c++)
			o->bytes += dump_chunk_len(&o->img, 0, c);
		*bytes += o->bytes;
	}
	*out = w;
	return 0;
}

/* A named filter's entry: name, deadline, its dump's chunks. */
static unsigned char *
whole_write(unsigned char *p, const struct whole_out *o, int64_t deadline)
{
	uint64_t id;

	do
		id = bloom_random_seed();
	while (id == 0);
	*p++ = (unsigned char)o->f->namelen;
	memcpy(p, o->f->name, o->f->namelen);
	p += o->f->namelen;
	put_le64(p, (uint64_t)deadline);
	put_le32(p + 8, o->nchunks);
	p += 12;
	for (uint32_t c = 0; c < o->nchunks; c++)
		p += dump_chunk(&o->img, id, 0, c, p);
	return p;
}

/* The bytes an image of first..last takes. */
static size_t
image_size(const struct core *core, unsigned nslots)
{
	size_t n = CLUSTER_MOVE_HEADER + 8;	/* the header, the checksum */

	for (size_t i = 0; i < core->reg->nfilters; i++) {
		const struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime)
			continue;
		n += 1 + f->namelen + 8 + 8 + 4;
		for (size_t j = 0; j < f->nslices; j++)
			n += 20 + range_bytes(f->slices[j]) * nslots;
	}
	return n;
}

unsigned char *
cluster_move_export(const struct core *core, unsigned first, unsigned last,
    int64_t (*deadline_of)(const struct filter *), size_t *lenp, char *err,
    size_t errlen)
{
	const struct cluster	*c = core->cluster;
	const struct filter	*pinned;
	struct whole_out	*wholes = NULL;
	unsigned		 nslots;
	unsigned char		*out, *p;
	size_t			 len, nf = 0, nwhole, whole_bytes;

	if (c == NULL || c->map == NULL) {
		snprintf(err, errlen, "this node holds no map");
		return NULL;
	}
	if (first > last || last >= CLUSTER_SLOTS) {
		snprintf(err, errlen, "slots %u..%u are not a range of "
		    "0..%d", first, last, CLUSTER_SLOTS - 1);
		return NULL;
	}
	if ((pinned = unmovable_urls(core)) != NULL) {
		snprintf(err, errlen, "filter %s, a %s filter of the config "
		    "file, is not partitioned by slot and holds %llu keys: "
		    "the URLs of the slots it holds here would be answered new "
		    "again on their new node, so no slot of this node moves "
		    "while it holds keys (%s; FLUSHALL sent to every node "
		    "empties it with every other filter)", pinned->name,
		    filter_is_cuckoo(pinned) ? "cuckoo" : "bloom",
		    (unsigned long long)filter_count(pinned),
		    filter_is_cuckoo(pinned) ? "URLs that must move with their "
		    "slots belong in a Bloom filter" : "its keys were recorded "
		    "outside cluster mode");
		return NULL;
	}
	if ((pinned = pinned_in(core, first, last)) != NULL) {
		snprintf(err, errlen, "slot %u holds the named filter %s, "
		    "which is in the config file (on every node) and cannot "
		    "move", keyslot_of(pinned->name, pinned->namelen),
		    pinned->name);
		return NULL;
	}
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		const struct filter *f = core->reg->filters[i];

		/* MERGE's slices of other shapes hold keys by their own
		 * seeds, not in slot ranges */
		if (f->slot_major && f->runtime) {
			snprintf(err, errlen, "filter %s was loaded from a dump "
			    "of a partitioned filter: its slots cannot move",
			    f->name);
			return NULL;
		}
		if (f->slot_major && f->nmerged > 0) {
			snprintf(err, errlen, "filter %s holds merged slices "
			    "(MERGE of a filter of another shape), which "
			    "cannot move", f->name);
			return NULL;
		}
	}
	nslots = last - first + 1;
	if ((len = image_size(core, nslots)) > CLUSTER_MOVE_MAX) {
		snprintf(err, errlen, "slots %u..%u take %zu bytes, more than "
		    "%u: ask for fewer", first, last, len, CLUSTER_MOVE_MAX);
		return NULL;
	}
	/* asked with BITSONLY too: a move's first copy learns before its
	 * pause that the range must be split (nothing is captured yet) */
	whole_bytes = 0;
	for (size_t i = 0; i < core->reg->nfilters; i++)
		if (moves_whole(core->reg->filters[i], first, last))
			whole_bytes += whole_estimate(core->reg->filters[i]);
	if (whole_bytes > cluster_move_whole_max) {
		snprintf(err, errlen, "the named filters of slots %u..%u take "
		    "%zu bytes, more than %zu: ask for fewer", first, last,
		    whole_bytes, cluster_move_whole_max);
		return NULL;
	}
	/* no deadline_of: the bits alone (BITSONLY) */
	nwhole = whole_bytes = 0;
	if (deadline_of != NULL && wholes_capture(core, first, last, &wholes,
	    &nwhole, &whole_bytes, err, errlen) == -1)
		return NULL;
	if (whole_bytes > cluster_move_whole_max) {	/* grown since */
		snprintf(err, errlen, "the named filters of slots %u..%u take "
		    "%zu bytes, more than %zu: ask for fewer", first, last,
		    whole_bytes, cluster_move_whole_max);
		wholes_free(wholes, nwhole);
		return NULL;
	}
	len += whole_bytes;
	if ((out = malloc(len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		wholes_free(wholes, nwhole);
		return NULL;
	}
	memcpy(out, CLUSTER_MOVE_MAGIC, 8);
	put_le16(out + 8, (uint16_t)first);
	put_le16(out + 10, (uint16_t)last);
	put_le32(out + 16, (uint32_t)nwhole);
	p = out + CLUSTER_MOVE_HEADER;
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		const struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime)
			continue;
		nf++;
		*p++ = (unsigned char)f->namelen;
		memcpy(p, f->name, f->namelen);
		p += f->namelen;
		put_le64(p, f->seed);
		put_le64(p + 8, (uint64_t)f->expire_ms);
		put_le32(p + 16, (uint32_t)f->nslices);
		p += 20;
		for (size_t j = 0; j < f->nslices; j++) {
			const struct slice *sl = f->slices[j];
			const struct bloom *b = &sl->bloom;
			const struct cuckoo *c = &sl->cuckoo;
			size_t bytes = range_bytes(sl) * nslots;

			put_le64(p + 12, (uint64_t)sl->start_ms);
			if (c->table != NULL) {
				put_le64(p, c->nbuckets);
				put_le32(p + 8, c->fpbits | CLUSTER_MOVE_CUCKOO);
				memcpy(p + 20, c->table + first *
				    cuckoo_range_bytes(c), bytes);
				p += 20 + bytes;
				continue;
			}
			put_le64(p, b->nblocks);
			put_le32(p + 8, b->hashes);
			p += 20;
			memcpy(p, b->words + range_start(b->nblocks, first) *
			    BLOOM_BLOCK_WORDS, bytes);
			p += bytes;
		}
	}
	put_le32(out + 12, (uint32_t)nf);
	for (size_t i = 0; i < nwhole; i++)
		p = whole_write(p, &wholes[i], deadline_of(wholes[i].f));
	wholes_free(wholes, nwhole);
	put_le64(p, XXH3_64bits(out, (size_t)(p - out)));
	*lenp = len;
	return out;
}

/* One filter of an image, as read. */
struct image_filter {
	struct filter		*f;
	uint64_t		 seed;		/* the source's */
	int			 reseed;	/* f holds no bit: takes it */
	/* of another seed, and holding no bit: nothing to take (the
	 * ranges of slots not held here are emptied: empty_ranges) */
	int			 skip;
	uint32_t		 nslices;
	const unsigned char	*slices;	/* the first slice's header */
	size_t			 slice_header;	/* its bytes: 20, SB2's 12 */
};

/* Bounds-checked reads of an image. */
struct reader {
	const unsigned char	*p, *end;
	int			 v2;		/* SEENDSB2: no windows */
};

static const unsigned char *
take(struct reader *r, size_t n)
{
	const unsigned char *at = r->p;

	if ((size_t)(r->end - r->p) < n)
		return NULL;
	r->p += n;
	return at;
}

/*
 * A partitioned cuckoo filter's slices of an image, checked against this
 * node's: each the shape of the slice of its index here (or of the one
 * growth would add: cuckoo filters have no window).
 */
static int
read_cuckoo(struct reader *r, unsigned nslots, struct image_filter *out,
    char *err, size_t errlen)
{
	const struct filter	*f = out->f;
	const unsigned char	*q;

	if (r->v2) {
		snprintf(err, errlen, "filter %s is a cuckoo filter here: an "
		    "image of a seend from before cuckoo filters moved cannot "
		    "hold it", f->name);
		return -1;
	}
	for (uint32_t j = 0; j < out->nslices; j++) {
		uint64_t nbuckets, want_n;
		uint32_t fpbits, want_bits;

		if ((q = take(r, out->slice_header)) == NULL)
			goto short_image;
		nbuckets = get_le64(q);
		fpbits = get_le32(q + 8);
		if (!(fpbits & CLUSTER_MOVE_CUCKOO)) {
			snprintf(err, errlen, "filter %s is a bloom filter on "
			    "the source and a cuckoo filter here (type must be "
			    "the same on every node)", f->name);
			return -1;
		}
		fpbits &= ~CLUSTER_MOVE_CUCKOO;
		if (fpbits < CUCKOO_FP_MIN || fpbits > CUCKOO_FP_MAX ||
		    nbuckets == 0 || nbuckets % (2 * CUCKOO_RANGES) != 0 ||
		    cuckoo_table_bytes_for(nbuckets, fpbits) >
		    CUCKOO_MAX_BYTES) {
			snprintf(err, errlen, "filter %s: slice %u of %llu "
			    "buckets of %u bits is not laid out by slot",
			    f->name, j + 1, (unsigned long long)nbuckets,
			    fpbits);
			return -1;
		}
		/* the slice it replaces ranges of, there or to be added:
		 * checked now, so that a refused image changes nothing */
		if (filter_part_plan(f, j, &want_n, &want_bits) == -1 ||
		    want_n != nbuckets || want_bits != fpbits) {
			snprintf(err, errlen, "filter %s: slice %u is %llu "
			    "buckets of %u bits on the source, and cannot be "
			    "here (%s: are capacity, error_rate and growth the "
			    "same on every node?)", f->name, j + 1,
			    (unsigned long long)nbuckets, fpbits,
			    j < f->nslices ? "it is another shape" :
			    "growth would add another shape, or none");
			return -1;
		}
		if (take(r, (size_t)(nbuckets / CUCKOO_RANGES * 4 * fpbits /
		    8) * nslots) == NULL)
			goto short_image;
	}
	return 0;
short_image:
	snprintf(err, errlen, "the image ends early");
	return -1;
}

/* The bytes of slice entry q's ranges in an image of nslots slots (its
 * fields checked by read_filter or read_cuckoo). */
static size_t
image_range_bytes(const unsigned char *q, unsigned nslots)
{
	uint64_t	n = get_le64(q);
	uint32_t	k = get_le32(q + 8);

	if (k & CLUSTER_MOVE_CUCKOO)
		return (size_t)(n / CUCKOO_RANGES * 4 *
		    (k & ~CLUSTER_MOVE_CUCKOO) / 8) * nslots;
	return (size_t)(n / KEYSLOT_COUNT) * nslots * BLOOM_BLOCK_BYTES;
}

/* Whether the image's slices of a filter hold no bit: its source's part
 * of those slots is empty. */
static int
image_empty(const struct image_filter *im, unsigned nslots)
{
	const unsigned char *q = im->slices;

	for (uint32_t j = 0; j < im->nslices; j++) {
		size_t n = image_range_bytes(q, nslots);

		for (size_t i = 0; i < n; i++)
			if (q[im->slice_header + i] != 0)
				return 0;
		q += im->slice_header + n;
	}
	return 1;
}

/*
 * The image's seed against the filter's here, once its slices are read.
 * An image of an empty part brings nothing, whatever its seed: it is
 * taken as no bit (skip), so that an empty source part of another seed
 * (a node emptied alone, never given the cluster's seed) gives its slots
 * away. Else the seeds must agree, or the part here must be blank (it
 * takes the source's).
 */
static int
check_seed(struct image_filter *out, unsigned nslots, char *err,
    size_t errlen)
{
	const struct filter	*f = out->f;
	uint64_t		 seed = out->seed;

	if (f->seed == seed)
		return 0;
	if (image_empty(out, nslots)) {
		out->skip = 1;
		return 0;
	}
	/* emptied here after the source's seed: a reset not finished on
	 * the source (taking its seed again would repeat one in the
	 * journal, whose resets are told apart by their seeds) */
	if (filter_seed_after(f->seed, seed)) {
		snprintf(err, errlen, "filter %s was emptied here and not on "
		    "the source (its seed %016llx follows the source's "
		    "%016llx): finish the reset with seen-cli cluster reset",
		    f->name, (unsigned long long)f->seed,
		    (unsigned long long)seed);
		return -1;
	}
	/* an empty part takes the source's seed: a node added after the
	 * cluster emptied the filter holds the map's */
	if (!(out->reseed = filter_is_blank(f))) {
		snprintf(err, errlen, "filter %s hashes with another seed "
		    "here (%016llx, the source's %016llx): its keys were "
		    "recorded before the map gave the cluster one seed, or "
		    "since a DEL or RESET emptied its part on one node (seen-cli"
		    " cluster reset empties every part), and its slots cannot "
		    "move", f->name, (unsigned long long)f->seed,
		    (unsigned long long)seed);
		return -1;
	}
	return 0;
}

/* Reads and checks one filter of the image against this node's. */
static int
read_filter(struct core *core, struct reader *r, unsigned nslots,
    struct image_filter *out, char *err, size_t errlen)
{
	const unsigned char	*q;
	char			 name[FILTER_NAME_MAX + 1];
	size_t			 nl, head = r->v2 ? 12 : 20;
	uint64_t		 seed, expire;
	int64_t			 period, now, prev;
	struct filter		*f;

	if ((q = take(r, 1)) == NULL || (nl = *q) == 0 ||
	    nl > FILTER_NAME_MAX || (q = take(r, nl + head)) == NULL)
		goto short_image;
	memcpy(name, q, nl);
	name[nl] = '\0';
	seed = get_le64(q + nl);
	expire = r->v2 ? 0 : get_le64(q + nl + 8);
	out->nslices = get_le32(q + nl + head - 4);
	out->slice_header = r->v2 ? 12 : 20;
	if ((f = registry_find(core->reg, name, nl)) == NULL ||
	    !f->slot_major || f->runtime) {
		snprintf(err, errlen, "filter %s is not a partitioned filter "
		    "here (every node's config must have its [filter.%s])",
		    name, name);
		return -1;
	}
	out->seed = seed;
	if ((uint64_t)f->expire_ms != expire) {
		snprintf(err, errlen, "filter %s has a window (expire) of "
		    "%llu ms here and %llu ms on the source%s", name,
		    (unsigned long long)f->expire_ms,
		    (unsigned long long)expire, r->v2 ? " (an image of a seend "
		    "from before windows moved: it says none)" :
		    " (must be the same on every node)");
		return -1;
	}
	period = filter_period_ms(f);
	filter_clock_update();
	now = filter_now_ms;
	prev = -1;
	if (out->nslices > FILTER_MAX_SLICES) {
		snprintf(err, errlen, "filter %s: %u slices", name,
		    out->nslices);
		return -1;
	}
	out->f = f;
	out->slices = r->p;
	if (filter_is_cuckoo(f))
		return read_cuckoo(r, nslots, out, err, errlen) == -1 ? -1 :
		    check_seed(out, nslots, err, errlen);
	for (uint32_t j = 0, nth = 0; j < out->nslices; j++) {
		uint64_t nblocks, per, want_blocks;
		uint32_t hashes, want_hashes;
		int64_t start;

		if ((q = take(r, out->slice_header)) == NULL)
			goto short_image;
		nblocks = get_le64(q);
		hashes = get_le32(q + 8);
		start = r->v2 ? 0 : (int64_t)get_le64(q + 12);
		per = nblocks / KEYSLOT_COUNT;
		if (hashes & CLUSTER_MOVE_CUCKOO) {
			snprintf(err, errlen, "filter %s is a cuckoo filter on "
			    "the source and a bloom filter here (type must be "
			    "the same on every node)", name);
			return -1;
		}
		if (nblocks == 0 || nblocks % KEYSLOT_COUNT != 0 ||
		    nblocks > BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES) {
			snprintf(err, errlen, "filter %s: slice %u of %llu "
			    "blocks is not laid out by slot", name, j + 1,
			    (unsigned long long)nblocks);
			return -1;
		}
		/* a window's slice: its period may be one the target has
		 * not, and need not be on the target's period boundaries
		 * (one of a window a reload changed), but it has started */
		if (period > 0 && (start <= 0 || start - period > now)) {
			snprintf(err, errlen, "filter %s: slice %u's period "
			    "starts at %lld, %s this node's clock (%lld): do "
			    "the nodes' clocks agree?", name, j + 1,
			    (long long)start, start <= 0 ? "not a time of" :
			    "more than a period after", (long long)now);
			return -1;
		}
		/* and it is matched by period and rank (merge_filter): the
		 * slice it goes to, there or to be added, must be of its
		 * shape, checked now so that a refused image adds nothing
		 * (a period expired here is skipped there) */
		nth = j > 0 && start == prev ? nth + 1 : 0;
		prev = start;
		if (period > 0 && start + period * FILTER_LIVE_PERIODS > now &&
		    (filter_period_plan(f, start, nth, &want_blocks,
		    &want_hashes) == -1 || want_blocks != nblocks ||
		    want_hashes != hashes)) {
			snprintf(err, errlen, "filter %s: slice %u (%u of its "
			    "period starting at %lld) is %llu blocks, k = %u "
			    "on the source, and cannot be here (are capacity, "
			    "error_rate and growth the same on every node? "
			    "The slices a window turned on by a reload keeps "
			    "from before have another shape until they "
			    "expire)", name, j + 1, nth + 1, (long long)start,
			    (unsigned long long)nblocks, hashes);
			return -1;
		}
		/* a window's are matched by period (merge_filter) */
		if (period == 0 && j < f->nslices &&
		    (f->slices[j]->bloom.nblocks != nblocks ||
		    f->slices[j]->bloom.hashes != hashes)) {
			snprintf(err, errlen, "filter %s: slice %u is %llu "
			    "blocks, k = %u here and %llu, k = %u on the "
			    "source (are capacity, error_rate and growth the "
			    "same on every node?)", name, j + 1,
			    (unsigned long long)f->slices[j]->bloom.nblocks,
			    f->slices[j]->bloom.hashes,
			    (unsigned long long)nblocks, hashes);
			return -1;
		}
		if (take(r, (size_t)(per * nslots) * BLOOM_BLOCK_BYTES) ==
		    NULL)
			goto short_image;
	}
	return check_seed(out, nslots, err, errlen);
short_image:
	snprintf(err, errlen, "the image ends early");
	return -1;
}

/*
 * The slice of f that the image's slice j takes: the same index, or with a
 * window the same rank in the period of the same start (nth counts the
 * image's slices of that period before it). NULL with err empty: a period
 * expired here, skipped.
 */
static struct bloom *
slice_for(struct filter *f, uint32_t j, int64_t start, uint32_t nth,
    char *err, size_t errlen)
{
	int64_t period = filter_period_ms(f);

	struct slice *sl;

	err[0] = '\0';
	if (period == 0)
		return (sl = filter_part_slice(f, j, err, errlen)) != NULL ?
		    &sl->bloom : NULL;
	if (start + period * FILTER_LIVE_PERIODS <= filter_now_ms)
		return NULL;
	return filter_period_slice(f, start, nth, err, errlen);
}

/* Whether the shard held slot s at the last map taken: its ranges are
 * in the counts (part_change counts a range as the slot comes). */
static int
counted_slot(const struct cluster *c, unsigned s)
{
	return c != NULL && c->held_valid && c->held[s];
}

/* The fingerprints of the ranges of slots first..first+n-1 the counts
 * have. */
static uint64_t
held_fingerprints(const struct cluster *c, const struct cuckoo *t,
    unsigned first, unsigned n)
{
	uint64_t k = 0;

	for (unsigned s = first; s < first + n; s++)
		if (counted_slot(c, s))
			k += cuckoo_range_count(t, s, 1);
	return k;
}

/*
 * An image of a part that holds no bit, of another seed (skip): the
 * ranges of the slots not held here are emptied, as an empty range
 * replaces, so that nothing an earlier copy left (of the seed a reset
 * since emptied on the source) comes in with the slots; the ranges of
 * held slots are the shard's own keys.
 */
static void
empty_ranges(const struct cluster *c, struct filter *f, unsigned first,
    unsigned nslots)
{
	for (size_t j = 0; j < f->nslices; j++) {
		struct slice *sl = f->slices[j];

		for (unsigned s = first; s < first + nslots; s++) {
			if (counted_slot(c, s))
				continue;
			if (sl->cuckoo.table != NULL) {
				uint64_t count = sl->cuckoo.count;

				cuckoo_range_clear(&sl->cuckoo, s, 1);
				sl->cuckoo.count = count;
			} else if (sl->bloom.words != NULL)
				bloom_clear_range(&sl->bloom,
				    range_start(sl->bloom.nblocks, s),
				    sl->bloom.nblocks / KEYSLOT_COUNT);
		}
	}
}

/*
 * A cuckoo filter's slices: each range replaced by the source's (a
 * table's fingerprints are not OR-ed: a forget on the source since an
 * earlier copy must not come back). A part's count is its shard's slots'
 * fingerprints: a range comes into it when the map gives its slot
 * (part_change), so ranges replaced here count only where the shard
 * holds them already (a move sent again after its map).
 */
static int
set_cuckoo(const struct cluster *c, const struct image_filter *im,
    unsigned first, unsigned nslots, char *err, size_t errlen)
{
	const unsigned char *q = im->slices;

	for (uint32_t j = 0; j < im->nslices; j++) {
		uint64_t	 nbuckets = get_le64(q);
		uint32_t	 fpbits = get_le32(q + 8) & ~CLUSTER_MOVE_CUCKOO;
		uint64_t	 count;
		struct slice	*sl;

		if ((sl = filter_part_slice(im->f, j, err, errlen)) == NULL)
			return -1;
		if (sl->cuckoo.nbuckets != nbuckets ||
		    sl->cuckoo.fpbits != fpbits) {
			snprintf(err, errlen, "filter %s: slice %u as added "
			    "here is %llu buckets of %u bits; on the source "
			    "%llu of %u (are capacity, error_rate and growth "
			    "the same on every node?)", im->f->name, j + 1,
			    (unsigned long long)sl->cuckoo.nbuckets,
			    sl->cuckoo.fpbits, (unsigned long long)nbuckets,
			    fpbits);
			return -1;
		}
		count = sl->cuckoo.count - held_fingerprints(c, &sl->cuckoo,
		    first, nslots);
		cuckoo_range_set(&sl->cuckoo, first, nslots, q +
		    im->slice_header);
		sl->cuckoo.count = count + held_fingerprints(c, &sl->cuckoo,
		    first, nslots);
		q += im->slice_header + range_bytes(sl) * nslots;
	}
	/* the head is looked at again once the map gives the slots
	 * (apply) */
	im->f->reshapes++;
	return 0;
}

/*
 * The image's ranges of slots first..first+nslots-1 (at src) OR-ed into
 * slice b. The keys of a slot count here once the map gives it
 * (part_change); those of slots it gave already (a move sent again, a
 * replica's image arriving after the map) count as they come in.
 */
static void
or_ranges(const struct cluster *c, struct bloom *b, unsigned first,
    unsigned nslots, const unsigned char *src)
{
	uint64_t per = b->nblocks / KEYSLOT_COUNT;

	for (unsigned s = first, e; s < first + nslots; s = e) {
		uint64_t at = range_start(b->nblocks, s), was = 0, n;

		for (e = s + 1; e < first + nslots &&
		    counted_slot(c, e) == counted_slot(c, s); e++)
			;
		n = per * (e - s);
		if (counted_slot(c, s))
			was = bloom_range_keys(b, at, n);
		bloom_or_range(b, at, src + (size_t)(per * (s - first)) *
		    BLOOM_BLOCK_BYTES, n);
		if (counted_slot(c, s)) {
			uint64_t now = bloom_range_keys(b, at, n);

			b->count += now > was ? now - was : 0;
		}
	}
}

/* One filter's slices OR-ed in (slices added as needed). */
static int
merge_filter(const struct cluster *c, const struct image_filter *im,
    unsigned first, unsigned nslots, char *err, size_t errlen)
{
	const unsigned char	*q = im->slices;
	int64_t			 prev = -1;
	uint32_t		 nth = 0;

	if (im->skip) {
		empty_ranges(c, im->f, first, nslots);
		return 0;
	}
	if (filter_is_cuckoo(im->f))
		return set_cuckoo(c, im, first, nslots, err, errlen);

	for (uint32_t j = 0; j < im->nslices; j++) {
		uint64_t	 nblocks = get_le64(q), per;
		uint32_t	 hashes = get_le32(q + 8);
		int64_t		 start = im->slice_header > 12 ?
				    (int64_t)get_le64(q + 12) : 0;
		struct bloom	*b;

		per = nblocks / KEYSLOT_COUNT;
		nth = start == prev ? nth + 1 : 0;
		prev = start;
		if ((b = slice_for(im->f, j, start, nth, err, errlen)) ==
		    NULL) {
			if (err[0] != '\0')
				return -1;
			q += im->slice_header + (size_t)(per * nslots) *
			    BLOOM_BLOCK_BYTES;
			continue;
		}
		if (b->nblocks != nblocks || b->hashes != hashes) {
			snprintf(err, errlen, "filter %s: slice %u as added "
			    "here is %llu blocks, k = %u; on the source %llu, "
			    "k = %u (are capacity, error_rate and growth the "
			    "same on every node?)", im->f->name, j + 1,
			    (unsigned long long)b->nblocks, b->hashes,
			    (unsigned long long)nblocks, hashes);
			return -1;
		}
		or_ranges(c, b, first, nslots, q + im->slice_header);
		q += im->slice_header + (size_t)(per * nslots) *
		    BLOOM_BLOCK_BYTES;
	}
	im->f->reshapes++;
	return 0;
}

/* One named filter of an image, as read and loaded. */
struct whole_in {
	char			 name[FILTER_NAME_MAX + 1];
	size_t			 namelen;
	int64_t			 deadline;
	struct dump_load	*load;
};

/* The next chunk of a dump in the image (its length is in its header),
 * or NULL. */
static const unsigned char *
take_chunk(struct reader *r, size_t *len)
{
	uint64_t plen;

	if ((size_t)(r->end - r->p) < DUMP_CHUNK_HEADER)
		return NULL;
	plen = get_le64(r->p + 40);
	if (plen > (uint64_t)(r->end - r->p) - DUMP_CHUNK_HEADER)
		return NULL;
	*len = DUMP_CHUNK_HEADER + (size_t)plen;
	return take(r, *len);
}

/* Reads one named filter of the image and loads its dump (checked whole:
 * nothing changes here yet). */
static int
read_whole(struct core *core, struct reader *r, unsigned first,
    unsigned last, int how, struct whole_in *w, char *err, size_t errlen)
{
	const unsigned char	*q;
	const struct filter	*f;
	uint32_t		 nchunks;
	unsigned		 slot;
	char			 why[400];

	if ((q = take(r, 1)) == NULL || (w->namelen = *q) == 0 ||
	    w->namelen > FILTER_NAME_MAX || (q = take(r, w->namelen + 12)) ==
	    NULL)
		goto short_image;
	memcpy(w->name, q, w->namelen);
	w->name[w->namelen] = '\0';
	w->deadline = (int64_t)get_le64(q + w->namelen);
	nchunks = get_le32(q + w->namelen + 8);
	if (!registry_valid_name(w->name, w->namelen) || w->deadline < 0) {
		snprintf(err, errlen, "the image names a filter %s with a "
		    "deadline of %lld", w->name, (long long)w->deadline);
		return -1;
	}
	slot = keyslot_of(w->name, w->namelen);
	if (slot < first || slot > last) {
		snprintf(err, errlen, "filter %s's slot %u is not among slots "
		    "%u..%u of the image", w->name, slot, first, last);
		return -1;
	}
	if (!(how & CLUSTER_MOVE_STREAM) &&
	    cluster_shard_owns(core->cluster, slot)) {
		snprintf(err, errlen, "slot %u (filter %s) is served here: "
		    "the image would replace what it holds", slot, w->name);
		return -1;
	}
	f = registry_find(core->reg, w->name, w->namelen);
	if (f != NULL && (!f->runtime || f->slot_major)) {
		snprintf(err, errlen, "filter %s is in this node's config: a "
		    "named filter of that name cannot move here", w->name);
		return -1;
	}
	if (f != NULL && f->saving) {
		snprintf(err, errlen, "filter %s (left by an earlier move) "
		    "is being saved here: try again", w->name);
		return -1;
	}
	for (uint32_t c = 0; c < nchunks; c++) {
		size_t	 clen;
		int	 rc;

		if ((q = take_chunk(r, &clen)) == NULL)
			goto short_image;
		if (c == 0) {
			w->load = dump_load_start(q, clen, filter_memory_room(),
			    why, sizeof(why));
			rc = w->load == NULL ? -1 : 0;
		} else if (dump_load_complete(w->load))
			rc = -1, snprintf(why, sizeof(why), "more chunks than "
			    "its dump");
		else
			rc = dump_load_add(w->load, q, clen, why, sizeof(why));
		if (rc == -1) {
			snprintf(err, errlen, "filter %s: %s", w->name, why);
			return -1;
		}
	}
	if (w->load == NULL || !dump_load_complete(w->load)) {
		snprintf(err, errlen, "filter %s: its dump ends early",
		    w->name);
		return -1;
	}
	return 0;
short_image:
	snprintf(err, errlen, "the image ends early");
	return -1;
}

/* A named filter of the image joins the registry, in place of what an
 * earlier move left under its name. NULL with why. */
static struct filter *
install_whole(struct core *core, struct whole_in *w, char *err,
    size_t errlen)
{
	struct filter	*f, *old;

	f = filter_from_dump(w->name, dump_load_image(w->load), err, errlen);
	dump_load_free(w->load);
	w->load = NULL;
	if (f == NULL)
		return NULL;
	/* not served here (read_whole): it holds an earlier copy alone,
	 * and the new one's snapshot takes its file */
	if ((old = registry_find(core->reg, w->name, w->namelen)) != NULL) {
		registry_remove(core->reg, old);
		filter_unref(old);
	}
	if (registry_adopt(core->reg, core->cfg, f, err, errlen) == -1) {
		filter_unref(f);
		return NULL;
	}
	log_info("filter %s arrived whole with its slot %u: %llu keys, %zu "
	    "slice(s)", f->name, keyslot_of(f->name, f->namelen),
	    (unsigned long long)filter_count(f), f->nslices);
	return f;
}

int
cluster_move_import(struct core *core, const unsigned char *p, size_t len,
    int how, cluster_move_reseed_fn reseed,
    struct cluster_move_changed **changedp, size_t *n, char *err,
    size_t errlen)
{
	struct image_filter		*ims = NULL;
	struct whole_in			*wholes = NULL;
	struct cluster_move_changed	*changed = NULL;
	struct reader			 r;
	unsigned			 first, last, nslots;
	uint32_t			 nf, nwhole;
	int				 rc = -1;

	*n = 0;
	*changedp = NULL;
	if (core->cluster == NULL || core->cluster->map == NULL) {
		snprintf(err, errlen, "this node holds no map");
		return -1;
	}
	if (len < CLUSTER_MOVE_HEADER + 8 ||
	    (memcmp(p, CLUSTER_MOVE_MAGIC, 8) != 0 &&
	    memcmp(p, CLUSTER_MOVE_MAGIC_2, 8) != 0)) {
		snprintf(err, errlen, "not an image of slots (CLUSTER "
		    "SLOTBITS makes them)");
		return -1;
	}
	if (get_le64(p + len - 8) != XXH3_64bits(p, len - 8)) {
		snprintf(err, errlen, "the image's checksum does not match");
		return -1;
	}
	first = get_le16(p + 8);
	last = get_le16(p + 10);
	nf = get_le32(p + 12);
	nwhole = get_le32(p + 16);
	/* a filter's entry takes 13 bytes at least, a named one's 77 */
	if (first > last || last >= CLUSTER_SLOTS || nf >
	    core->reg->nfilters || nwhole > len / 77) {
		snprintf(err, errlen, "the image names slots %u..%u, %u "
		    "partitioned filters and %u named ones", first, last, nf,
		    nwhole);
		return -1;
	}
	nslots = last - first + 1;
	if ((nf > 0 && (ims = calloc(nf, sizeof(*ims))) == NULL) ||
	    (nwhole > 0 && (wholes = calloc(nwhole, sizeof(*wholes))) ==
	    NULL) || (changed = calloc((size_t)nf + nwhole + 1,
	    sizeof(*changed))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	r.p = p + CLUSTER_MOVE_HEADER;
	r.end = p + len - 8;
	r.v2 = memcmp(p, CLUSTER_MOVE_MAGIC_2, 8) == 0;
	for (uint32_t i = 0; i < nf; i++)
		if (read_filter(core, &r, nslots, &ims[i], err, errlen) == -1)
			goto out;
	for (uint32_t i = 0; i < nwhole; i++) {
		if (read_whole(core, &r, first, last, how, &wholes[i], err,
		    errlen) == -1)
			goto out;
		/* twice, the second would free the first as it took its
		 * place */
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(wholes[j].name, wholes[i].name) == 0) {
				snprintf(err, errlen, "the image names filter "
				    "%s twice", wholes[i].name);
				goto out;
			}
	}
	if (r.p != r.end) {
		snprintf(err, errlen, "the image has %zu bytes more than its "
		    "filters", (size_t)(r.end - r.p));
		goto out;
	}
	/* an empty part takes the source's seed, journalled as a reset
	 * (keys recorded after it replay under it) before any bit moves */
	for (uint32_t i = 0; i < nf; i++)
		if (ims[i].reseed) {
			if (reseed(core, ims[i].f, ims[i].seed, err,
			    errlen) == -1)
				goto out;
			log_info("filter %s takes the seed of the slots coming "
			    "to it (%016llx): its part here was empty",
			    ims[i].f->name, (unsigned long long)ims[i].seed);
		}
	for (uint32_t i = 0; i < nf; i++) {
		uint64_t was = filter_count(ims[i].f);

		if (merge_filter(core->cluster, &ims[i], first, nslots, err,
		    errlen) == -1)
			goto out;
		/* ranges of slots counted here already: the head is looked
		 * at again (it may grow, or be full), as after MERGE */
		if (filter_count(ims[i].f) != was)
			filter_counts_changed(ims[i].f);
		changed[(*n)++].f = ims[i].f;
	}
	/* a named filter is taken whole once the source pauses its slot
	 * (SAVE): an earlier copy would only be replaced */
	for (uint32_t i = 0; (how & CLUSTER_MOVE_SAVE) && i < nwhole; i++) {
		struct filter *f;

		if ((f = install_whole(core, &wholes[i], err, errlen)) == NULL)
			goto out;
		changed[*n].f = f;
		changed[*n].whole = 1;
		changed[(*n)++].deadline_ms = wholes[i].deadline;
	}
	rc = 0;
out:
	for (uint32_t i = 0; wholes != NULL && i < nwhole; i++)
		if (wholes[i].load != NULL)
			dump_load_free(wholes[i].load);
	free(wholes);
	free(ims);
	if (rc == -1) {
		free(changed);
		*n = 0;
	} else
		*changedp = changed;
	return rc;
}

int
cluster_shard_owns(const struct cluster *c, unsigned slot)
{
	return c == NULL || c->map == NULL || c->map->owner[slot] ==
	    cluster_shard(c);
}

int
cluster_holds_slot(const struct cluster *c, unsigned slot)
{
	/* a replica's map may not name what its primary took yet: it
	 * keeps every key, as it frees nothing at its start */
	return c == NULL || c->map == NULL || c->replica_start ||
	    c->map->owner[slot] == cluster_shard(c);
}

/* ---- a map taken ---- */

/* Empty partitioned filters take the map's seed. */
static void
take_seed(struct core *core, uint64_t seed)
{
	seed = (seed & ~(uint64_t)0xffff) | FILTER_SEED_SLOTS;
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime || f->seed == seed)
			continue;
		if (filter_reseed(f, seed) == 0)
			log_info("filter %s hashes with the cluster's seed",
			    f->name);
		else
			log_warn("filter %s keeps its own seed: it holds keys "
			    "hashed with it (recorded before this node joined "
			    "the cluster, or since a DEL or RESET emptied it), "
			    "and its slots cannot move to another node",
			    f->name);
	}
}

/*
 * Slots a..b came to the shard (gained) or left it: each partitioned
 * filter's slices count the keys their ranges hold (estimated from the
 * bits: no count is kept per slot) in or out, and a range that left is
 * freed. counted 0: freed alone. The caller then has the filters look at
 * their counts again, once, after every run (filter_counts_changed).
 */
static void
part_change(struct core *core, unsigned a, unsigned b, int gained,
    int counted)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime)
			continue;
		for (size_t j = 0; j < f->nslices; j++) {
			struct bloom *bl = &f->slices[j]->bloom;
			uint64_t per = bl->nblocks / KEYSLOT_COUNT, keys = 0;
			uint64_t at = range_start(bl->nblocks, a);

			/* a table's count is its shard's ranges'
			 * fingerprints, exactly */
			if (f->slices[j]->cuckoo.table != NULL) {
				struct cuckoo *t = &f->slices[j]->cuckoo;

				if (!gained)
					cuckoo_range_clear(t, a, b - a + 1);
				else if (counted)
					t->count += cuckoo_range_count(t, a,
					    b - a + 1);
				continue;
			}
			if (bl->words == NULL)
				continue;
			if (counted)
				keys = bloom_range_keys(bl, at, per * (b - a + 1));
			if (gained) {
				bl->count += keys;
				continue;
			}
			bl->count -= keys < bl->count ? keys : bl->count;
			bloom_clear_range(bl, at, per * (b - a + 1));
		}
	}
}

/*
 * At a primary's start, once the ranges of slots not its shard's are
 * freed: each partitioned cuckoo table counts what it holds, exactly (a
 * snapshot's count leaves out the ranges a rolled-back move left, which
 * the frees took out again).
 */
static void
recount_tables(struct core *core)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime || !filter_is_cuckoo(f))
			continue;
		for (size_t j = 0; j < f->nslices; j++)
			f->slices[j]->cuckoo.count =
			    cuckoo_recount(&f->slices[j]->cuckoo);
	}
}

/* Every partitioned filter's slices count no key. */
static void
zero_counts(struct core *core)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter *f = core->reg->filters[i];

		if (!f->slot_major || f->runtime)
			continue;
		for (size_t j = 0; j < f->nslices; j++) {
			f->slices[j]->bloom.count = 0;
			/* and a table's ranges a rolled-back move left */
			if (f->slices[j]->cuckoo.table != NULL)
				cuckoo_range_clear(&f->slices[j]->cuckoo, 0,
				    CUCKOO_RANGES);
		}
	}
}

/* The runs of slots where want(slot) holds, each given to part_change. */
static unsigned
part_runs(struct core *core, const uint8_t *was, const uint8_t *now,
    int gained, int counted)
{
	unsigned n = 0;

	for (unsigned s = 0; s < CLUSTER_SLOTS;) {
		unsigned e = s;

		if ((gained ? now[s] && !was[s] : was[s] && !now[s]) == 0) {
			s++;
			continue;
		}
		while (e + 1 < CLUSTER_SLOTS && (gained ? now[e + 1] &&
		    !was[e + 1] : was[e + 1] && !now[e + 1]))
			e++;
		part_change(core, s, e, gained, counted);
		n += e - s + 1;
		s = e + 1;
	}
	return n;
}

/*
 * Named filters whose slot the shard gave away (held, now not) are marked
 * for keyspace_drop_moved (a layer up: the keyspace's tick drops them);
 * one whose slot came back before is not.
 */
static void
mark_given_away(struct core *core, const uint8_t *was, const uint8_t *now)
{
	for (size_t i = 0; i < core->reg->nfilters; i++) {
		struct filter	*f = core->reg->filters[i];
		unsigned	 slot;

		if (f->slot_major || !f->runtime)
			continue;
		slot = keyslot_of(f->name, f->namelen);
		if (was[slot] && !now[slot])
			f->given_away = 1;
		else if (now[slot])
			f->given_away = 0;
	}
}

void
cluster_move_apply(struct core *core)
{
	struct cluster	*c = core->cluster;
	uint8_t		 now[CLUSTER_SLOTS];
	unsigned	 shard, freed, taken = 0;
	int		 zeroed;
	char		 err[512];

	if (c == NULL || c->map == NULL || c->applied_gen == c->map_gen)
		return;
	c->applied_gen = c->map_gen;
	shard = cluster_shard(c);
	if (c->map->seed != 0)
		take_seed(core, c->map->seed);
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		now[s] = c->map->owner[s] == shard;
	/* at the start (main.c: before the journal's replay, which skips
	 * the keys of slots not the shard's) every range not the shard's
	 * is freed, and the keys its bits hold leave the counts: a
	 * snapshot taken before slots were given away holds both */
	/* but not on a replica: what its primary's full sync gave it is
	 * its primary's, and the map naming the slots it took may reach it
	 * only after it resumes (a partial sync would not bring them back) */
	if (!c->held_valid)
		memset(c->held, !c->replica_start, sizeof(c->held));
	freed = part_runs(core, c->held, now, 0, 1);
	if (!c->held_valid && !c->replica_start)
		recount_tables(core);
	mark_given_away(core, c->held, now);
	if (c->held_valid)
		taken = part_runs(core, c->held, now, 1, 1);
	/* a shard left with no slot holds no key: what the estimates of
	 * its ranges left over goes too */
	if ((zeroed = memchr(now, 1, sizeof(now)) == NULL))
		zero_counts(core);
	/* the counts judged once all runs are in: a filter that is full at
	 * the new part's capacity stays so (growth off) */
	for (size_t i = 0; (freed > 0 || taken > 0 || zeroed) &&
	    i < core->reg->nfilters; i++)
		if (core->reg->filters[i]->slot_major &&
		    !core->reg->filters[i]->runtime)
			filter_counts_changed(core->reg->filters[i]);
	if (c->held_valid && (freed > 0 || taken > 0))
		log_info("cluster: %u slot(s) taken, %u given away (their "
		    "ranges freed)", taken, freed);
	memcpy(c->held, now, sizeof(c->held));
	c->held_valid = 1;
	if (cluster_handoff_prune(c, core->cfg->data_dir, err,
	    sizeof(err)) == -1)
		log_warn("cluster: the hand-over's end cannot be saved: %s "
		    "(the slots are another node's and answered MOVED)", err);
	cluster_serve_update(c);
}
