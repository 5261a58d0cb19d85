/*
 * fuzz_slot_image.c - libFuzzer target for the image of slots
 * (cluster_move.h): cluster_move_import(), which parses CLUSTER
 * SLOTMERGE <image> [SAVE [STREAM]]'s argument, ORs partitioned filters' ranges in
 * and, with SAVE, takes named filters whole from their dumps (dump.h).
 *
 * The node: a cluster node (P1 of a small map with a seed, holding slots
 * 0-8191 and 10000) whose config has one partitioned filter, default,
 * hashing with the map's seed, so that an image made by CLUSTER SLOTBITS
 * on a node of the same map and config merges in, and a named filter of
 * a slot P2 owns is taken.
 *
 * The input is the image, except that its last 8 bytes (its checksum) are
 * recomputed before the call: a mutated image would almost never pass it.
 * What they held is not lost: bit 0 of the input's last byte asks for SAVE,
 * bit 1 for the dump chunks of the named filters to be resealed too (each
 * chunk's own checksum recomputed, as fuzz_dump.c does), so that mutated
 * dumps reach filter_from_dump and the registry.
 *
 * Reading any bytes must never crash, leak or read out of bounds (the
 * image is a malloc'd copy of exactly the input's size, so ASan sees a
 * read past it). The import gives 0 or -1; -1 with a message, no filter
 * changed listed (changed NULL, n 0); 0 with at most one entry per
 * partitioned filter of the registry and per named filter of the header,
 * each a filter: a partitioned one of the registry, or (SAVE alone) a
 * named one the registry holds now.
 *
 * The filters taken are removed after each input, and the default filter
 * emptied if the image added slices to it, so that memory stays bounded
 * and an input does the same whatever ran before it.
 *
 * Seeds in tests/fuzz/corpus/slot_image are CLUSTER SLOTBITS replies of a
 * one-node cluster of this config and map seed (default's ranges, one and
 * two slices; named filters BF.RESERVE, CF.RESERVE and SADD with an
 * EXPIRE, on slots P2 owns here), their last byte's bits 0 and 1 set by
 * hand, and empty-0-0: slots 0..0 and no filter. Those named default-*
 * and named-* are SEENDSB2 images (seend before windows moved, still
 * taken), made before recent was in this config; window-* are SEENDSB3
 * images with recent's slices (of two periods, one grown; one slice; one
 * of a period long expired, which is skipped, before a live one);
 * cuckoo-0-3 holds cf's ranges of slots 0..3 (six URLs), which replace
 * cf's (cf is emptied after an input that left it a key).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_map.h"
#include "cluster_move.h"
#include "config.h"
#include "core.h"
#include "dump.h"
#include "fileio.h"
#include "filter.h"
#include "keyslot.h"
#include "log.h"
#include "registry.h"

#define P1	"1111111111111111111111111111111111111111"
#define P2	"2222222222222222222222222222222222222222"
#define R1	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* this node is P1 (index 0); slots 16001..16383 are nobody's. The seed
 * is the one the seeds in corpus/slot_image were made with. */
static const char map_text[] =
	CLUSTER_MAP_MAGIC "\n"
	"epoch 3\n"
	"seed 0123456789abcdef\n"
	"node " P1 " 10.0.0.1 7001 0 -\n"
	"node " P2 " 10.0.0.2 7002 0 -\n"
	"node " R1 " 10.0.0.3 7003 0 " P1 "\n"
	"slots " P1 " 0-8191 10000\n"
	"slots " P2 " 8192-9999 10001-16000\n";

/* capacity and error_rate as the seeds' source node had them: its
 * slices' shapes must be these for its ranges to merge */
static const char config_text[] =
	"[server]\n"
	"data_dir = %s\n"
	"[filter.default]\n"
	"capacity = 20000\n"
	"error_rate = 0.01\n"
	"[filter.recent]\n"
	"prefixes = https://recent.\n"
	"capacity = 20000\n"
	"error_rate = 0.01\n"
	"expire = 3650d\n"
	"[filter.cf]\n"
	"prefixes = https://cf.\n"
	"type = cuckoo\n"
	"capacity = 20000\n"
	"error_rate = 0.01\n"
	"[cluster]\n"
	"enabled = on\n";

static char			 dir[] = "/tmp/seend-fuzz-slot-image-XXXXXX";
static struct cluster_map	 map;
static struct cluster		 node;
static struct core		 core;
static struct filter		*part;		/* default */
static size_t			 part_slices;	/* its slices at the start */
/* recent: a window (of 3650 days, so that the periods of the seeds made
 * in 2026 stay live for years), which starts with no slice */
static struct filter		*windowed;
/* cf: a partitioned cuckoo filter, whose ranges an image replaces */
static struct filter		*cuckoo;
static size_t			 cuckoo_slices;
static int			 ready;

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
cleanup(void)
{
	registry_free(core.reg);
	config_free(core.cfg);
	cluster_map_free(&map);
	rmdir(dir);
}

/* The partitioned filters' seed (the map's), which restore() gives back
 * to a filter that took an image's (its part held no bit). */
static uint64_t part_seed;

/* persist_filter_reset_to without a journal: the filter emptied with the
 * image's seed. */
static int
reseed(struct core *c, struct filter *f, uint64_t seed, char *err,
    size_t errlen)
{
	(void)c;
	(void)err;
	(void)errlen;
	filter_reset(f, seed);
	return 0;
}

static void
setup(void)
{
	struct config_errors	 errs = { 0 };
	char			 text[sizeof(config_text) + sizeof(dir)];
	char			 err[1024];
	uint64_t		 seed;

	log_set_level(LOG_LEVEL_ERROR);	/* no line per import */
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	if (cluster_map_parse(map_text, strlen(map_text), &map, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "the target's map is refused: %s\n", err);
		abort();
	}
	/* the node holds the map as cluster.c's hold() makes it, before
	 * the filters (as main.c): the partitioned filters then hash with
	 * the map's seed, at their shard's part */
	memcpy(node.myid, P1, sizeof(P1));
	node.map = &map;
	node.me = 0;
	node.map_gen = 1;
	cluster_serve_update(&node);
	node.owner = node.serve;
	filter_set_part_seed(map.seed);
	filter_set_part(cluster_map_slots_of(&map, 0));

	snprintf(text, sizeof(text), config_text, dir);
	if ((core.cfg = config_load_string(text, "fuzz", &errs)) == NULL) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "config: %s\n", errs.msgs[i]);
		abort();
	}
	config_errors_free(&errs);
	if ((core.reg = registry_build(core.cfg, NULL, NULL, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "registry_build: %s\n", err);
		abort();
	}
	core.cluster = &node;
	/* slices the images add are bounded, as max_memory bounds them */
	filter_memory_limit = 256u << 20;

	/* without these, every image with a filter is refused before
	 * merge_filter and read_whole: the target would test nothing */
	seed = (map.seed & ~(uint64_t)0xffff) | FILTER_SEED_SLOTS;
	part_seed = seed;
	if ((part = registry_find(core.reg, "default", 7)) == NULL ||
	    !part->slot_major || part->runtime || part->seed != seed ||
	    part->nslices == 0) {
		fprintf(stderr, "the default filter is not partitioned with "
		    "the map's seed\n");
		abort();
	}
	part_slices = part->nslices;
	if ((windowed = registry_find(core.reg, "recent", 6)) == NULL ||
	    !windowed->slot_major || windowed->seed != seed ||
	    filter_period_ms(windowed) == 0 || windowed->nslices != 0) {
		fprintf(stderr, "the recent filter is not partitioned with a "
		    "window and the map's seed\n");
		abort();
	}
	if ((cuckoo = registry_find(core.reg, "cf", 2)) == NULL ||
	    !cuckoo->slot_major || !filter_is_cuckoo(cuckoo) ||
	    cuckoo->seed != seed || cuckoo->nslices == 0) {
		fprintf(stderr, "the cf filter is not a partitioned cuckoo "
		    "filter with the map's seed\n");
		abort();
	}
	cuckoo_slices = cuckoo->nslices;
	atexit(cleanup);
	ready = 1;
}

/* Whether f is in the registry now (compared, never read: a filter
 * listed as changed may have been freed). */
static int
registered(const struct filter *f)
{
	for (size_t i = 0; i < core.reg->nfilters; i++)
		if (core.reg->filters[i] == f)
			return 1;
	return 0;
}

/* Partitioned filters of the registry: the most entries an image's
 * partitioned part may change. */
static size_t
partitioned(void)
{
	size_t n = 0;

	for (size_t i = 0; i < core.reg->nfilters; i++)
		n += core.reg->filters[i]->slot_major &&
		    !core.reg->filters[i]->runtime;
	return n;
}

/*
 * The checksum of every dump chunk of the image's named filters
 * recomputed, walking the image as far as it is well-formed (the import
 * checks all of it again).
 */
static void
reseal_dumps(unsigned char *p, size_t len)
{
	unsigned char	*at = p + CLUSTER_MOVE_HEADER, *end = p + len - 8;
	uint64_t	 nslots;
	uint32_t	 nf, nwhole;
	/* SEENDSB2's headers lack the window and the period starts */
	size_t		 head = memcmp(p, "SEENDSB2", 8) == 0 ? 12 : 20;

	if (get_le16(p + 8) > get_le16(p + 10))
		return;
	nslots = (uint64_t)get_le16(p + 10) - get_le16(p + 8) + 1;
	nf = get_le32(p + 12);
	nwhole = get_le32(p + 16);
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t nslices;

		if (end - at < 1 || (size_t)(end - at) < 1u + *at + head)
			return;
		at += 1 + *at;
		nslices = get_le32(at + head - 4);
		at += head;
		for (uint32_t j = 0; j < nslices; j++) {
			uint64_t bytes;

			if ((size_t)(end - at) < head)
				return;
			bytes = get_le64(at) / KEYSLOT_COUNT;
			at += head;
			if (bytes > (uint64_t)(end - at) / BLOOM_BLOCK_BYTES /
			    nslots)
				return;
			at += bytes * nslots * BLOOM_BLOCK_BYTES;
		}
	}
	for (uint32_t i = 0; i < nwhole; i++) {
		uint32_t nchunks;

		if (end - at < 1 || (size_t)(end - at) < 1u + *at + 12)
			return;
		at += 1 + *at;
		nchunks = get_le32(at + 8);
		at += 12;
		for (uint32_t c = 0; c < nchunks; c++) {
			XXH3_state_t	st;
			uint64_t	plen;

			if (end - at < DUMP_CHUNK_HEADER)
				return;
			plen = get_le64(at + 40);
			if (plen > (uint64_t)(end - at) - DUMP_CHUNK_HEADER)
				return;
			XXH3_INITSTATE(&st);
			(void)XXH3_64bits_reset(&st);
			(void)XXH3_64bits_update(&st, at, 48);
			(void)XXH3_64bits_update(&st, at + DUMP_CHUNK_HEADER,
			    (size_t)plen);
			put_le64(at + 48, XXH3_64bits_digest(&st));
			at += DUMP_CHUNK_HEADER + plen;
		}
	}
}

/* What an import gave must be what cluster_move.h says. */
static void
check(int rc, const char *err, size_t errlen,
    const struct cluster_move_changed *changed, size_t n, size_t most,
    int save)
{
	if (rc != 0 && rc != -1) {
		fprintf(stderr, "import gave %d\n", rc);
		abort();
	}
	if (rc == -1) {
		if (memchr(err, '\0', errlen) == NULL || err[0] == '\0') {
			fprintf(stderr, "refused without a message\n");
			abort();
		}
		if (changed != NULL || n != 0) {
			fprintf(stderr, "refused (%s) with %zu filters "
			    "changed\n", err, n);
			abort();
		}
		return;
	}
	if (n > most || (n > 0 && changed == NULL)) {
		fprintf(stderr, "%zu filters changed, at most %zu\n", n, most);
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		const struct filter *f = changed[i].f;

		if (f == NULL) {
			fprintf(stderr, "changed[%zu] is no filter\n", i);
			abort();
		}
		/* checked before f is read: a named filter replaced by a
		 * later one of the same import would be freed */
		if (!registered(f)) {
			fprintf(stderr, "changed[%zu] (%s) is not in the "
			    "registry\n", i, changed[i].whole ? "named" :
			    "partitioned");
			abort();
		}
		if (changed[i].whole ? !save || f->slot_major || !f->runtime ||
		    changed[i].deadline_ms < 0 : !f->slot_major || f->runtime) {
			fprintf(stderr, "changed[%zu] (%s, whole %d) is not "
			    "what an import changes\n", i, f->name,
			    changed[i].whole);
			abort();
		}
	}
}

/* The registry and the default filter as they were before the input. */
static int
has_bits(const struct filter *f)
{
	for (size_t i = 0; i < f->nslices; i++)
		if (f->slices[i]->bloom.bits_set != 0)
			return 1;
	return 0;
}

static void
restore(struct cluster_move_changed *changed, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (changed[i].whole) {
			registry_remove(core.reg, changed[i].f);
			filter_unref(changed[i].f);
		}
	/* and what an import refused midway left (the named filters taken
	 * before one that could not be) */
	for (size_t i = core.reg->nfilters; i > 0; i--) {
		struct filter *f = core.reg->filters[i - 1];

		if (f->runtime) {
			registry_remove(core.reg, f);
			filter_unref(f);
		}
	}
	if (core.reg->nfilters != 3 || registry_find(core.reg, "default",
	    7) != part || registry_find(core.reg, "recent", 6) != windowed ||
	    registry_find(core.reg, "cf", 2) != cuckoo)
		abort();
	/* slices added change later outcomes, and so do bits OR-ed in (a
	 * part holding none takes an image's seed) */
	if (part->nslices != part_slices || part->seed != part_seed ||
	    has_bits(part))
		filter_reset(part, part_seed);
	if (windowed->nslices != 0 || windowed->seed != part_seed)
		filter_reset(windowed, part_seed);
	if (cuckoo->nslices != cuckoo_slices || cuckoo->seed != part_seed ||
	    filter_count(cuckoo) != 0)
		filter_reset(cuckoo, part_seed);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster_move_changed	*changed, sentinel;
	unsigned char			*copy;
	char				 err[512];
	size_t				 n, most;
	int				 rc, save = 0;

	if (!ready)
		setup();
	/* exactly size bytes: a read past them is ASan's */
	if ((copy = malloc(size > 0 ? size : 1)) == NULL)
		abort();
	if (size > 0)
		memcpy(copy, data, size);
	if (size >= CLUSTER_MOVE_HEADER + 8) {
		save = data[size - 1] & 1;
		if (data[size - 1] & 2)
			reseal_dumps(copy, size);
		put_le64(copy + size - 8, XXH3_64bits(copy, size - 8));
	}
	most = partitioned() + (size >= CLUSTER_MOVE_HEADER + 8 ?
	    get_le32(copy + 16) : 0);

	/* what the import must set whatever happens */
	memset(err, 0xa5, sizeof(err));
	changed = &sentinel;
	n = SIZE_MAX;
	/* bit 2 of the last byte: as a replica takes it from the stream */
	rc = cluster_move_import(&core, copy, size, save | (size > 0 &&
	    (data[size - 1] & 4) ? CLUSTER_MOVE_STREAM : 0), reseed, &changed,
	    &n, err, sizeof(err));
	check(rc, err, sizeof(err), changed, n, most, save);
	restore(changed, rc == 0 ? n : 0);
	if (rc == 0)
		free(changed);
	free(copy);
	return 0;
}
