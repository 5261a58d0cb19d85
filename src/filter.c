/*
 * filter.c - slices, growth, windows and the fill-based estimate; see
 * filter.h for the arithmetic.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dump.h"
#include "filter.h"
#include "log.h"
#include "snapshot.h"
#include "url.h"

int64_t		filter_now_ms;
/* updated atomically: a reload creates filters on its own thread */
uint64_t	filter_memory_used;
uint64_t	filter_memory_limit;
static unsigned	part_slots = KEYSLOT_COUNT, part_gen;

/* a partitioned cuckoo table's ranges are the slots */
_Static_assert(CUCKOO_RANGES == KEYSLOT_COUNT &&
    CUCKOO_RANGE_BITS == KEYSLOT_BITS, "cuckoo ranges are not the slots");
/* filter_set_part_seed's: 0, or low 16 bits FILTER_SEED_SLOTS */
static uint64_t	part_seed;

void
filter_clock_update(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	filter_now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
now_ms(void)
{
	if (filter_now_ms == 0)
		filter_clock_update();
	return filter_now_ms;
}

/* ---- slices ---- */

static int64_t
period_ms(const struct filter *f)
{
	int64_t g = f->expire_ms / FILTER_PERIODS;

	return g > 0 ? g : 1;
}

static int64_t
period_start(const struct filter *f, int64_t t)
{
	int64_t g = period_ms(f);

	return t - (((t % g) + g) % g);
}

static void	set_drop_at(struct filter *);
static void	refresh(struct filter *);
static int64_t	now_ms(void);

/* Whether f's head belongs to a period already over: a window's keys go
 * to the current period's slice, opened by its first key. */
static int
head_is_past(const struct filter *f)
{
	return f->expire_ms > 0 && f->head != NULL &&
	    f->head->start_ms < period_start(f, now_ms());
}
static int	push_slice(struct filter *, struct slice *);
static struct filter *filter_alloc(const char *, const struct filter_shape *);
static void	become_full(struct filter *, const char *);

/* The bytes a slice maps. */
static uint64_t
slice_map_bytes(const struct slice *s)
{
	return s->cuckoo.table != NULL ? s->cuckoo.map_bytes :
	    s->bloom.map_bytes;
}

/* s, whose array or table is allocated, with its plan and one reference,
 * counted in filter_memory_used. */
static struct slice *
slice_finish(struct slice *s, uint64_t capacity, double error_rate,
    int64_t start_ms)
{
	s->capacity = capacity;
	s->error_rate = error_rate;
	s->start_ms = start_ms;
	s->refs = 1;
	__atomic_add_fetch(&filter_memory_used, slice_map_bytes(s),
	    __ATOMIC_RELAXED);
	return s;
}

/* A slice of that many blocks, counted in filter_memory_used; NULL if
 * out of memory (errno says why). */
static struct slice *
slice_make(uint64_t nblocks, uint32_t hashes, uint64_t seed,
    uint64_t capacity, double error_rate, int64_t start_ms)
{
	struct slice *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if (bloom_init(&s->bloom, nblocks, hashes, seed) == -1) {
		free(s);
		return NULL;
	}
	return slice_finish(s, capacity, error_rate, start_ms);
}

/* A cuckoo slice of that shape, as slice_make. */
static struct slice *
slice_make_cuckoo(uint64_t nbuckets, uint32_t fpbits, uint32_t nranges,
    uint64_t seed, uint64_t capacity, double error_rate, int64_t start_ms)
{
	struct slice *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if (cuckoo_init_ranges(&s->cuckoo, nbuckets, fpbits, seed,
	    nranges) == -1) {
		free(s);
		return NULL;
	}
	return slice_finish(s, capacity, error_rate, start_ms);
}

/* A new cuckoo slice planned for capacity at error_rate (at least
 * FILTER_CUCKOO_RATE_MIN), in slot ranges when slot_major. */
static struct slice *
slice_new_cuckoo(uint64_t capacity, double error_rate, int64_t start_ms,
    uint64_t seed, int slot_major, char *err, size_t errlen)
{
	struct slice	*s;
	uint64_t	 nbuckets, bytes;
	uint32_t	 fpbits;

	if (error_rate < FILTER_CUCKOO_RATE_MIN)
		error_rate = FILTER_CUCKOO_RATE_MIN;
	if ((slot_major ? cuckoo_plan_ranges(capacity, error_rate, &nbuckets,
	    &fpbits) : cuckoo_plan(capacity, error_rate, &nbuckets,
	    &fpbits)) == -1) {
		snprintf(err, errlen, "capacity %llu at error_rate %g cannot "
		    "be planned as a cuckoo table (over 1 TiB)",
		    (unsigned long long)capacity, error_rate);
		return NULL;
	}
	bytes = cuckoo_table_bytes_for(nbuckets, fpbits);
	if (filter_memory_limit > 0 &&
	    filter_memory_used + bytes > filter_memory_limit) {
		snprintf(err, errlen, "max_memory (%llu bytes) reached: "
		    "%llu in use, %llu more needed",
		    (unsigned long long)filter_memory_limit,
		    (unsigned long long)filter_memory_used,
		    (unsigned long long)bytes);
		errno = ENOMEM;
		return NULL;
	}
	if ((s = slice_make_cuckoo(nbuckets, fpbits, slot_major ?
	    CUCKOO_RANGES : 1, seed, capacity, error_rate, start_ms)) == NULL)
		snprintf(err, errlen, "cannot allocate %llu bytes: %s",
		    (unsigned long long)bytes, strerror(errno));
	return s;
}

static struct slice *
slice_new(uint64_t capacity, double error_rate, int64_t start_ms,
    uint64_t seed, int slot_major, char *err, size_t errlen)
{
	struct slice	*s;
	uint64_t	 nblocks;
	uint32_t	 hashes;

	if (bloom_plan(capacity, error_rate, &nblocks, &hashes) == -1) {
		snprintf(err, errlen, "capacity %llu at error_rate %g cannot "
		    "be planned (over 1 TiB)", (unsigned long long)capacity,
		    error_rate);
		return NULL;
	}
	/* every slot the same whole number of blocks (at least one: a small
	 * filter's part grows to 1 MiB of address space, and a node faults
	 * in only its slots' pages of it) */
	if (slot_major)
		nblocks = (nblocks + KEYSLOT_COUNT - 1) / KEYSLOT_COUNT *
		    KEYSLOT_COUNT;
	if (filter_memory_limit > 0 &&
	    filter_memory_used + bloom_map_bytes(nblocks) > filter_memory_limit) {
		snprintf(err, errlen, "max_memory (%llu bytes) reached: "
		    "%llu in use, %llu more needed",
		    (unsigned long long)filter_memory_limit,
		    (unsigned long long)filter_memory_used,
		    (unsigned long long)bloom_map_bytes(nblocks));
		errno = ENOMEM;
		return NULL;
	}
	if ((s = slice_make(nblocks, hashes, seed, capacity, error_rate,
	    start_ms)) == NULL)
		snprintf(err, errlen, "cannot allocate %llu bytes: %s",
		    (unsigned long long)nblocks * BLOOM_BLOCK_BYTES,
		    strerror(errno));
	return s;
}

void
slice_ref(struct slice *s)
{
	s->refs++;
}

void
slice_unref(struct slice *s)
{
	if (--s->refs > 0)
		return;
	if (s->cow_src != NULL) {
		/* an unfinished copy: its source stops copying into it */
		if (cuckoo_cow_is(&s->cow_src->cuckoo, &s->cuckoo))
			cuckoo_cow_cancel(&s->cow_src->cuckoo);
		slice_unref(s->cow_src);
	}
	__atomic_sub_fetch(&filter_memory_used, slice_map_bytes(s),
	    __ATOMIC_RELAXED);
	if (s->cuckoo.table != NULL)
		cuckoo_free(&s->cuckoo);
	else
		bloom_free(&s->bloom);
	free(s);
}

struct slice *
slice_alloc(uint64_t nblocks, uint32_t hashes, uint64_t capacity,
    double error_rate, int64_t start_ms)
{
	if (filter_memory_limit > 0 && filter_memory_used +
	    bloom_map_bytes(nblocks) > filter_memory_limit)
		return NULL;
	return slice_make(nblocks, hashes, 0, capacity, error_rate, start_ms);
}

size_t
filter_nall(const struct filter *f)
{
	return f->nslices + f->nmerged;
}

struct slice *
filter_slice_at(const struct filter *f, size_t i)
{
	return i < f->nslices ? f->slices[i] : f->merged[i - f->nslices];
}

/* A fixed filter holds its rate up to its capacity, merged slices' keys
 * included: past it (a merge, or a snapshot of one) it is full. */
static void
full_if_merged_past(struct filter *f)
{
	if (f->growth == 0 && f->nmerged > 0 && !f->full &&
	    filter_count(f) >= f->capacity)
		become_full(f, "merged slices brought it past its capacity");
}

struct filter *
filter_new_empty(const char *name, const struct filter_shape *shape,
    uint64_t seed)
{
	struct filter *f;

	if ((f = filter_alloc(name, shape)) == NULL)
		return NULL;
	f->seed = seed;
	refresh(f);
	return f;
}

int
filter_add_own(struct filter *f, struct slice *s)
{
	if (push_slice(f, s) == -1)
		return -1;
	set_drop_at(f);
	return 0;
}

void
filter_counts_changed(struct filter *f)
{
	f->reshapes++;
	f->warned = 0;
	refresh(f);
	set_drop_at(f);
	/* a head of a past period (a window's, a move's) is left to the
	 * next key's new period, as at a load */
	if (f->head != NULL && slice_count(f->head) >= f->next_mark &&
	    !head_is_past(f))
		filter_head_filled(f);
	full_if_merged_past(f);
}

/*
 * A copy of a cuckoo slice for a snapshot job: unlike a Bloom filter, a
 * table changes under a reader (kicks move fingerprints, forgets clear
 * them), so the job writes a copy. It is filled by copy-on-write from
 * now on (*pending set), or at once when the slice is already being
 * copied for another capture. NULL if out of memory.
 */
static struct slice *
cuckoo_copy(struct slice *s, int *pending)
{
	struct slice *c;

	if ((c = slice_make_cuckoo(s->cuckoo.nbuckets, s->cuckoo.fpbits,
	    (uint32_t)s->cuckoo.range_mask + 1, s->cuckoo.seed, s->capacity, s->error_rate, s->start_ms)) == NULL)
		return NULL;
	if (cuckoo_cow_start(&s->cuckoo, &c->cuckoo) == 0) {
		slice_ref(s);
		c->cow_src = s;
		*pending = 1;
		return c;
	}
	cuckoo_copy_table(&c->cuckoo, &s->cuckoo);
	return c;
}

/* Fills copy by max_bytes more: 1 once it is whole. */
static int
copy_step(struct slice *copy, size_t max_bytes)
{
	struct slice *src = copy->cow_src;

	if (src == NULL)
		return 1;
	/* another copy of src may have started since this one was done */
	if (cuckoo_cow_is(&src->cuckoo, &copy->cuckoo) &&
	    !cuckoo_cow_step(&src->cuckoo, max_bytes))
		return 0;
	copy->cow_src = NULL;
	slice_unref(src);
	return 1;
}

int
filter_capture_step(struct slice **owners, size_t n, size_t max_bytes)
{
	int done = 1;

	for (size_t i = 0; i < n; i++)
		done &= copy_step(owners[i], max_bytes);
	return done;
}

void
filter_capture_finish(struct slice **owners, size_t n)
{
	while (!filter_capture_step(owners, n, SIZE_MAX))
		;
}

int
filter_capture(struct filter *f, struct snapshot_slice *out,
    struct slice **owners)
{
	int pending = 0;

	for (size_t i = 0; i < filter_nall(f); i++)
		owners[i] = NULL;
	for (size_t i = 0; i < filter_nall(f); i++) {
		struct slice		*s = filter_slice_at(f, i);
		struct snapshot_slice	*d = &out[i];

		if (s->cuckoo.table != NULL) {
			if ((owners[i] = cuckoo_copy(s, &pending)) == NULL) {
				for (size_t j = 0; j < i; j++)
					slice_unref(owners[j]);
				return -1;
			}
			memset(d, 0, sizeof(*d));
			d->cuckoo = owners[i]->cuckoo;
			d->capacity = s->capacity;
			d->error_rate = s->error_rate;
			d->start_ms = s->start_ms;
			d->count = s->cuckoo.count;
			continue;
		}
		slice_ref(s);
		owners[i] = s;
		memset(d, 0, sizeof(*d));
		d->bloom = s->bloom;
		d->capacity = s->capacity;
		d->error_rate = s->error_rate;
		d->start_ms = s->start_ms;
		d->count = s->bloom.count;
		d->bits_set = s->bloom.bits_set;
		d->merged = i >= f->nslices;
		d->seed = d->merged ? s->seed : 0;
	}
	return pending;
}

uint64_t
filter_memory_room(void)
{
	uint64_t used = __atomic_load_n(&filter_memory_used, __ATOMIC_RELAXED);

	if (filter_memory_limit == 0)
		return 0;
	return used < filter_memory_limit ? filter_memory_limit - used : 1;
}

int
filter_dump_capture(struct filter *f, struct dump_image *img,
    struct slice ***ownersp)
{
	size_t		  n = filter_nall(f);
	struct slice	**owners;

	memset(img, 0, sizeof(*img));
	owners = calloc(n ? n : 1, sizeof(*owners));
	img->slices = calloc(n ? n : 1, sizeof(*img->slices));
	if (owners == NULL || img->slices == NULL)
		goto fail;
	img->seed = f->seed;
	img->capacity = f->capacity;
	img->error_rate = f->error_rate;
	img->growth = f->growth;
	img->normalize = f->normalize;
	img->expire_ms = (uint64_t)f->expire_ms;
	img->created = (uint64_t)time(NULL);
	img->cuckoo = filter_is_cuckoo(f);
	img->slot_major = f->slot_major;
	img->max_kicks = f->max_kicks;
	img->forgotten = f->forgotten;
	/* a dump reads a cuckoo filter's copies from its first chunk on,
	 * so they are filled now */
	switch (filter_capture(f, img->slices, owners)) {
	case -1:
		goto fail;
	case 1:
		filter_capture_finish(owners, n);
		break;
	}
	img->nslices = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		img->count += img->slices[i].count;
	*ownersp = owners;
	return 0;
fail:
	free(owners);
	free(img->slices);
	img->slices = NULL;
	return -1;
}

void
filter_dump_release(struct dump_image *img, struct slice **owners)
{
	for (uint32_t i = 0; i < img->nslices; i++)
		slice_unref(owners[i]);
	free(owners);
	free(img->slices);
	img->slices = NULL;
	img->nslices = 0;
}

int
filter_add_merged(struct filter *f, struct slice *s, uint64_t seed)
{
	struct slice **grown;

	if ((grown = reallocarray(f->merged, f->nmerged + 1,
	    sizeof(*grown))) == NULL)
		return -1;
	f->merged = grown;
	s->seed = seed;
	f->merged[f->nmerged++] = s;
	f->reshapes++;
	set_drop_at(f);
	return 0;
}

/* filter_hash's case, after normalize or slot_major changed. */
static void
set_hash(struct filter *f)
{
	f->hash_slow = f->normalize || f->slot_major;
}

/* The keys a slice of that capacity takes here: a slot-major filter's
 * part holds its shard's share of them. */
static uint64_t
part_capacity(const struct filter *f, uint64_t capacity)
{
	unsigned	 slots = __atomic_load_n(&part_slots, __ATOMIC_RELAXED);
	uint64_t	 c;

	if (!f->slot_major || slots >= KEYSLOT_COUNT)
		return capacity;
	c = capacity / KEYSLOT_COUNT * slots +
	    capacity % KEYSLOT_COUNT * slots / KEYSLOT_COUNT;
	return c > 0 ? c : 1;
}

/* The fast path holds when one slice, no window and room remain. */
static void
refresh(struct filter *f)
{
	struct slice *h = f->head;
	uint64_t cap;

	f->simple = f->nslices == 1 && f->nmerged == 0 && f->expire_ms == 0 &&
	    !f->full && f->type == FILTER_TYPE_BLOOM;
	f->fast = f->simple && !f->normalize ? &h->bloom : NULL;
	f->fast_cuckoo = f->nslices == 1 && f->nmerged == 0 && !f->full &&
	    f->type == FILTER_TYPE_CUCKOO && !f->normalize ? &h->cuckoo : NULL;
	if (h == NULL) {
		f->next_mark = UINT64_MAX;
		return;
	}
	/* a filter that cannot grow looks again at 90 % for the warning */
	f->part_gen = __atomic_load_n(&part_gen, __ATOMIC_RELAXED);
	cap = part_capacity(f, h->capacity);
	if (f->growth == 0 && f->warned < 90 && cap >= 10)
		f->next_mark = cap - cap / 10;
	else
		f->next_mark = cap;
	if (f->full)
		f->next_mark = UINT64_MAX;
}

static int
push_slice(struct filter *f, struct slice *s)
{
	if (f->nslices == f->slots) {
		size_t		 n = f->slots ? f->slots * 2 : 4;
		struct slice	**grown;

		if ((grown = reallocarray(f->slices, n, sizeof(*grown))) ==
		    NULL)
			return -1;
		f->slices = grown;
		f->slots = n;
	}
	f->slices[f->nslices++] = s;
	f->head = s;
	f->reshapes++;
	refresh(f);
	return 0;
}

void
filter_first_shape(uint64_t capacity, double error_rate, unsigned growth,
    int64_t expire_ms, uint64_t *cap, double *rate)
{
	*cap = capacity;
	*rate = error_rate;
	if (expire_ms > 0) {
		*rate /= FILTER_LIVE_PERIODS;
		*cap = (capacity + FILTER_PERIODS - 1) / FILTER_PERIODS;
	}
	if (growth > 0)
		*rate *= 1.0 - FILTER_TIGHTENING;
}

/*
 * The next slice of a period whose slices so far were planned for rates
 * summing to spent and capacities summing to capsum (both 0 for a new
 * period), the newest of capacity last. Returns 0, or -1 when a fixed
 * filter has no capacity left to give.
 *
 * A growing filter's next slice takes (1 - r) of the rate budget the
 * period has left, which is the geometric series of filter.h whatever
 * came before: slices planned for more than the budget (a fixed filter
 * turned growing, a version 1 snapshot, an error_rate lowered by a reload)
 * open a second budget as large, so such a filter stays under the rate
 * its old slices were planned for plus error_rate. Capacity grows by
 * growth from the newest slice, and is never less than the first slice's:
 * a capacity raised by a reload applies to the next slice. A fixed filter
 * whose capacity a reload raised gets one more slice for the difference.
 */
static int
shape_after(uint64_t capacity, double error_rate, unsigned growth,
    int64_t expire_ms, uint64_t last, double spent, uint64_t capsum,
    uint64_t *cap, double *rate)
{
	uint64_t	 base;
	double		 budget, left;

	filter_first_shape(capacity, error_rate, growth, expire_ms, &base,
	    &budget);
	if (capsum == 0) {
		*cap = base;
		*rate = budget;
		return 0;
	}
	budget = expire_ms > 0 ? error_rate / FILTER_LIVE_PERIODS : error_rate;
	left = budget - fmod(spent, budget);
	if (left < budget * 1e-6)
		left += budget;
	if (growth == 0) {
		if (capsum >= base)
			return -1;
		*cap = base - capsum;
		*rate = left;
		return 0;
	}
	if (__builtin_mul_overflow(last, (uint64_t)growth, cap))
		*cap = UINT64_MAX / 2;
	if (*cap < base)
		*cap = base;
	*rate = left * (1.0 - FILTER_TIGHTENING);
	return 0;
}

/* The plan of the slice after f's slices [0, upto) in the period starting
 * at start (upto: f->nslices, but for a moved period's slice inserted
 * before newer ones). */
static int
shape_at(const struct filter *f, size_t upto, int64_t start, uint64_t *cap,
    double *rate)
{
	uint64_t	 capsum = 0, last = 0;
	double		 spent = 0;

	for (size_t i = upto; i-- > 0 && f->slices[i]->start_ms == start;) {
		if (last == 0)
			last = f->slices[i]->capacity;
		spent += f->slices[i]->error_rate;
		capsum += f->slices[i]->capacity;
	}
	return shape_after(f->capacity, f->error_rate, f->growth, f->expire_ms,
	    last, spent, capsum, cap, rate);
}

/* A new slice of the period starting at start, planned as growth plans
 * the one after slices [0, at), placed at slices[at] (at: f->nslices, the
 * head, but for a moved period's slice that goes before newer ones). */
static int
add_slice_at(struct filter *f, size_t at, int64_t start, char *err,
    size_t errlen)
{
	struct slice	*s;
	uint64_t	 cap;
	double		 rate;

	if (f->nslices >= FILTER_MAX_SLICES) {
		snprintf(err, errlen, "%d slices", FILTER_MAX_SLICES);
		return -1;
	}
	if (shape_at(f, at, start, &cap, &rate) == -1) {
		snprintf(err, errlen, "growth = off");
		return -1;
	}
	s = f->type == FILTER_TYPE_CUCKOO ? slice_new_cuckoo(cap, rate, start,
	    f->seed, f->slot_major, err, errlen) : slice_new(cap, rate, start, f->seed,
	    f->slot_major, err, errlen);
	if (s == NULL)
		return -1;
	if (push_slice(f, s) == -1) {
		slice_unref(s);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (at < f->nslices - 1) {
		memmove(f->slices + at + 1, f->slices + at,
		    (f->nslices - 1 - at) * sizeof(*f->slices));
		f->slices[at] = s;
		f->head = f->slices[f->nslices - 1];
		refresh(f);
	}
	return 0;
}

static int
add_slice(struct filter *f, int64_t start, char *err, size_t errlen)
{
	return add_slice_at(f, f->nslices, start, err, errlen);
}

/* The head cannot take more: say so once, and refuse from now on. */
static void
become_full(struct filter *f, const char *why)
{
	f->full = 1;
	refresh(f);
	if (f->warned < 100) {
		f->warned = 100;
		log_warn("filter %s is full (%s): it holds %llu keys; new keys "
		    "are refused with \"ERR full %s\"", f->name, why,
		    (unsigned long long)filter_count(f), f->name);
	}
}

/*
 * The head reached next_mark: warn at 90 % of a filter that cannot grow,
 * add a slice at 100 % of one that can, else stop taking keys.
 */
void
filter_head_filled(struct filter *f)
{
	struct slice	*h = f->head;
	uint64_t	 cap = part_capacity(f, h->capacity);
	char		 err[256];

	if (slice_count(h) < cap) {
		if (f->warned < 90) {
			f->warned = 90;
			log_warn("filter %s is 90%% full (%llu of %llu keys) "
			    "and cannot grow (growth = off)", f->name,
			    (unsigned long long)slice_count(h),
			    (unsigned long long)cap);
		}
		refresh(f);
		return;
	}
	if (add_slice(f, h->start_ms, err, sizeof(err)) == -1) {
		/* growth off is final; anything else (max_memory) is
		 * tried again by filter_retry */
		f->held = f->growth > 0 || strcmp(err, "growth = off") != 0;
		become_full(f, err);
		return;
	}
	f->held = 0;
	log_info("filter %s grew to %zu slices (%llu bytes)", f->name,
	    f->nslices, (unsigned long long)filter_bytes(f));
}

/* (relaxed atomics: a reload's thread builds filters while the loop
 * may take a map) */
void
filter_set_part(unsigned slots)
{
	if (slots == 0 || slots > KEYSLOT_COUNT)
		slots = KEYSLOT_COUNT;
	if (slots != __atomic_load_n(&part_slots, __ATOMIC_RELAXED)) {
		__atomic_store_n(&part_slots, slots, __ATOMIC_RELAXED);
		__atomic_add_fetch(&part_gen, 1, __ATOMIC_RELAXED);
	}
}

void
filter_set_part_seed(uint64_t seed)
{
	if (seed != 0)
		seed = (seed & ~(uint64_t)0xffff) | FILTER_SEED_SLOTS;
	__atomic_store_n(&part_seed, seed, __ATOMIC_RELAXED);
}

void
filter_set_normalize(struct filter *f, int on)
{
	f->normalize = on != 0;
	set_hash(f);
}

void
filter_part_check(struct filter *f)
{
	if (!f->slot_major || f->head == NULL ||
	    f->part_gen == __atomic_load_n(&part_gen, __ATOMIC_RELAXED))
		return;
	refresh(f);
	if (!f->full && f->expire_ms == 0 &&
	    slice_count(f->head) >= f->next_mark)
		filter_head_filled(f);
}

void
filter_retry(struct filter *f)
{
	char	 err[256];
	int64_t	 start;

	if (!f->held || f->head == NULL)
		return;
	start = f->expire_ms > 0 ? period_start(f, now_ms()) :
	    f->head->start_ms;
	/* slices stay oldest first: a head a move brought may start a
	 * little ahead of this node's clock */
	if (start < f->head->start_ms)
		start = f->head->start_ms;
	if (add_slice(f, start, err, sizeof(err)) == -1)
		return;
	f->held = 0;
	f->full = 0;
	f->warned = 0;
	refresh(f);
	log_info("filter %s takes keys again: %zu slices (%llu bytes)",
	    f->name, f->nslices, (unsigned long long)filter_bytes(f));
}

/* When the oldest slice expires (INT64_MAX: never, or no slice). */
static void
set_drop_at(struct filter *f)
{
	int64_t oldest = f->nslices ? f->slices[0]->start_ms : INT64_MAX;

	for (size_t i = 0; i < f->nmerged; i++)
		if (f->merged[i]->start_ms < oldest)
			oldest = f->merged[i]->start_ms;
	f->drop_at_ms = oldest != INT64_MAX && f->expire_ms > 0 ?
	    oldest + period_ms(f) * FILTER_LIVE_PERIODS : INT64_MAX;
}

/* Merged slices whose period started FILTER_LIVE_PERIODS ago go. */
static void
expire_merged(struct filter *f, int64_t now, int64_t live)
{
	size_t i = 0;

	while (i < f->nmerged) {
		if (f->merged[i]->start_ms + live > now) {
			i++;
			continue;
		}
		f->dropped += slice_count(f->merged[i]);
		slice_unref(f->merged[i]);
		f->merged[i] = f->merged[--f->nmerged];
		f->reshapes++;
	}
}

/* Drops the slices whose period started FILTER_LIVE_PERIODS ago. */
void
filter_expire(struct filter *f, int64_t now)
{
	int64_t	 live = period_ms(f) * FILTER_LIVE_PERIODS;
	size_t	 n = 0;

	if (f->expire_ms == 0 || now < f->drop_at_ms)
		return;
	expire_merged(f, now, live);
	while (n < f->nslices && f->slices[n]->start_ms + live <= now)
		n++;
	for (size_t i = 0; i < n; i++) {
		f->dropped += slice_count(f->slices[i]);
		slice_unref(f->slices[i]);
	}
	if (n > 0) {
		memmove(f->slices, f->slices + n,
		    (f->nslices - n) * sizeof(*f->slices));
		f->nslices -= n;
		f->reshapes++;
		f->head = f->nslices ? f->slices[f->nslices - 1] : NULL;
		/* a new period starts with room again */
		if (f->full && !f->held)
			f->full = 0;
		f->warned = 0;
		refresh(f);
	}
	set_drop_at(f);
}

/* The slice that takes a key at time t: a new period opens one. */
static struct slice *
head_for(struct filter *f, int64_t t)
{
	char	 err[256];
	int64_t	 start;

	if (f->expire_ms == 0) {
		/* a window turned off while it held nothing */
		if (f->head == NULL && add_slice(f, t, err, sizeof(err)) == -1)
			become_full(f, err);
		return f->head;
	}
	start = period_start(f, t);
	if (f->head != NULL && f->head->start_ms >= start)
		return f->head;
	/* the first key of a period */
	f->full = 0;
	f->warned = 0;
	if (add_slice(f, start, err, sizeof(err)) == -1) {
		f->held = filter_memory_limit > 0;
		become_full(f, err);
		return NULL;
	}
	if (f->drop_at_ms == INT64_MAX || f->nslices == 1)
		f->drop_at_ms = f->slices[0]->start_ms +
		    period_ms(f) * FILTER_LIVE_PERIODS;
	return f->head;
}

/*
 * A key's masks depend on its hash and k only: computed once per k for
 * all the slices of a lookup (slices differ in k as they tighten).
 */
struct key_masks {
	unsigned	 have;		/* bit k/4: masks[k/8] computed */
	uint64_t	 m[3][BLOOM_BLOCK_WORDS];
};

static inline const uint64_t *
masks_for(struct key_masks *km, const struct bloom *b, uint64_t h)
{
	unsigned i = b->hashes == 4 ? 0 : b->hashes == 8 ? 1 : 2;

	if (!(km->have & (1u << i))) {
		bloom_masks(b, h, km->m[i]);
		km->have |= 1u << i;
	}
	return km->m[i];
}

int
filter_check_slices(struct filter *f, uint64_t h, int64_t now)
{
	struct key_masks km;

	if (f->type == FILTER_TYPE_CUCKOO)
		return filter_cuckoo_check(f, h);
	km.have = 0;
	filter_expire(f, now);
	/* newest first: the big slices hold most keys */
	for (size_t i = f->nslices; i-- > 0;) {
		const struct bloom *b = &f->slices[i]->bloom;

		if (bloom_check_masks(b, h, masks_for(&km, b, h)))
			return 1;
	}
	return 0;
}

int
filter_seen_slices(struct filter *f, uint64_t h, int64_t now)
{
	struct slice	*head;
	struct bloom	*b;
	struct key_masks km;
	int		 hit;

	if (f->type == FILTER_TYPE_CUCKOO)
		return filter_cuckoo_seen(f, h);
	km.have = 0;
	filter_expire(f, now);
	/* every slice but the head is only asked */
	for (size_t i = f->nslices; i-- > 0;) {
		b = &f->slices[i]->bloom;
		if (f->slices[i] != f->head &&
		    bloom_check_masks(b, h, masks_for(&km, b, h)))
			return 1;
	}
	if (f->head != NULL && (f->full || (f->expire_ms > 0 &&
	    f->head->start_ms < period_start(f, now)))) {
		/* full, or the last period's slice: only asked */
		b = &f->head->bloom;
		if (bloom_check_masks(b, h, masks_for(&km, b, h)))
			return 1;
		if (f->full)
			return FILTER_FULL;
	} else if (f->full)
		return FILTER_FULL;
	if ((head = head_for(f, now)) == NULL)
		return FILTER_FULL;
	b = &head->bloom;
	hit = bloom_add_masks(b, h, masks_for(&km, b, h));
	if (!hit && b->count >= f->next_mark)
		filter_head_filled(f);
	return hit;
}

/* ---- cuckoo filters ---- */

int
filter_cuckoo_check(const struct filter *f, uint64_t h)
{
	/* newest first: the big slices hold most keys */
	for (size_t i = f->nslices; i-- > 0;)
		if (cuckoo_contains(&f->slices[i]->cuckoo, h))
			return 1;
	return 0;
}

/*
 * A partitioned cuckoo filter's head has no room in one slot's range while
 * its part has room (a slot taking far more than its share: a hash tag's
 * URLs): the next slice is added as growth plans it after the head's
 * planned capacity (so that slice i has one shape on every node, and
 * slots can move), or, growth off, the key is refused alone and the
 * filter keeps taking the other slots' keys. 0 once there is a new head.
 */
static int
range_full(struct filter *f)
{
	char err[256];

	if (f->growth == 0 ||
	    add_slice(f, f->head->start_ms, err, sizeof(err)) == -1) {
		if (!f->range_warned) {
			f->range_warned = 1;
			log_warn("filter %s: a slot's range of its table is "
			    "full, and its keys are refused (%s): a hash tag "
			    "puts far more than its share of URLs in one slot",
			    f->name, f->growth == 0 ? "growth = off" : err);
		}
		return -1;
	}
	log_info("filter %s grew to %zu slices (%llu bytes): a slot's range "
	    "of its newest table was full", f->name, f->nslices,
	    (unsigned long long)filter_bytes(f));
	refresh(f);
	return 0;
}

/*
 * The head has no room for h (its kicks failed, rare below the planned
 * load) or reached its capacity: the filter grows as a bloom filter does,
 * or refuses. Returns 0 once h is stored, else FILTER_FULL.
 */
static int
cuckoo_no_room(struct filter *f, uint64_t h)
{
	char err[256];

	if (f->head == NULL) {
		if (add_slice(f, now_ms(), err, sizeof(err)) == -1) {
			become_full(f, err);
			return FILTER_FULL;
		}
	} else if (f->slot_major) {
		/* shapes as planned, never as filled: slice i is the same on
		 * every node */
		if (slice_count(f->head) < part_capacity(f, f->head->capacity)) {
			if (range_full(f) == -1)
				return FILTER_FULL;
		} else
			filter_head_filled(f);
	} else {
		/* the head takes no more: capacity is what it holds */
		f->head->capacity = f->head->cuckoo.count;
		filter_head_filled(f);
	}
	if (f->full || cuckoo_add(&f->head->cuckoo, h) == -1) {
		/* a partitioned filter's new head refuses this key alone */
		if (!f->full && !f->slot_major)
			become_full(f, "no room in its table");
		return FILTER_FULL;
	}
	if (f->head->cuckoo.count >= f->next_mark)
		filter_head_filled(f);
	return 0;
}

/* Stores a copy of h in the head (CF.ADD), held or not. */
static int
cuckoo_store(struct filter *f, uint64_t h)
{
	if (f->full)
		return FILTER_FULL;
	if (f->head == NULL || cuckoo_add(&f->head->cuckoo, h) == -1)
		return cuckoo_no_room(f, h);
	if (f->head->cuckoo.count >= f->next_mark)
		filter_head_filled(f);
	return 0;
}

/* SEEN: every slice but the head is only asked; the head is asked and
 * takes h in one pass over its two buckets. */
int
filter_cuckoo_seen(struct filter *f, uint64_t h)
{
	struct slice	*head = f->head;
	int		 hit;

	for (size_t i = f->nslices; i-- > 0;)
		if (f->slices[i] != head &&
		    cuckoo_contains(&f->slices[i]->cuckoo, h))
			return 1;
	if (head == NULL)
		return f->full ? FILTER_FULL : cuckoo_no_room(f, h);
	if (f->full)
		return cuckoo_contains(&head->cuckoo, h) ? 1 : FILTER_FULL;
	if ((hit = cuckoo_test_add(&head->cuckoo, h)) == -1)
		return cuckoo_no_room(f, h);
	if (!hit && head->cuckoo.count >= f->next_mark)
		filter_head_filled(f);
	return hit;
}

int
filter_add_copy(struct filter *f, uint64_t h)
{
	return cuckoo_store(f, h);
}

int
filter_forget(struct filter *f, uint64_t h)
{
	struct slice *s;

	for (size_t i = 0; i < f->nslices; i++) {
		s = f->slices[i];
		if (!cuckoo_delete(&s->cuckoo, h))
			continue;
		f->forgotten++;
		/* a forget is a change the snapshot must see, though the
		 * count went down: dropped only ever grows */
		f->dropped += 2;
		/* a fixed filter with room again takes keys again */
		if (f->full && !f->held && f->growth == 0 && s == f->head &&
		    slice_count(s) < s->capacity) {
			/* warned stays: a filter at its edge warns once */
			f->full = 0;
			refresh(f);
		}
		return 1;
	}
	return 0;
}

uint64_t
filter_copies(const struct filter *f, uint64_t h)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->nslices; i++) {
		const struct cuckoo *c = &f->slices[i]->cuckoo;
		uint64_t fp = cuckoo_fp(c, h), i1 = cuckoo_index(c, h);
		uint64_t i2 = cuckoo_alt(c, i1, fp);

		for (unsigned k = 0; k < CUCKOO_SLOTS; k++) {
			n += cuckoo_get(c, i1, k) == fp;
			n += i2 != i1 && cuckoo_get(c, i2, k) == fp;
		}
	}
	return n;
}

uint64_t
filter_buckets(const struct filter *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->nslices; i++)
		n += f->slices[i]->cuckoo.nbuckets;
	return n;
}

uint64_t
filter_slots(const struct filter *f)
{
	return filter_buckets(f) * CUCKOO_SLOTS;
}

int
filter_seen_at(struct filter *f, uint64_t h, int64_t when)
{
	int64_t now = now_ms();

	/* a key whose window has passed is not brought back */
	if (f->expire_ms > 0 &&
	    period_start(f, when) + period_ms(f) * FILTER_LIVE_PERIODS <= now)
		return 1;
	if (f->simple)
		return filter_seen(f, h);
	return filter_seen_slices(f, h, f->expire_ms > 0 ? when : now);
}

uint64_t
filter_hash_slow(const struct filter *f, const char *key, size_t len,
    int slot)
{
	char		 out[FILTER_NORMAL_MAX];
	size_t		 n = f->normalize ? url_normalize(key, len, out,
			    sizeof(out)) : 0;
	uint64_t	 h = n > 0 ? XXH3_64bits_withSeed(out, n, f->seed) :
			    XXH3_64bits_withSeed(key, len, f->seed);

	if (!f->slot_major)
		return h;
	/* the slot of the key as routed, not of its canonical form */
	return filter_slot_hash(h, slot >= 0 ? (unsigned)slot :
	    keyslot_of(key, len));
}

int
filter_merged_hit(struct filter *f, uint64_t h, const char *key, size_t len,
    int64_t now)
{
	char		 out[FILTER_NORMAL_MAX];
	uint64_t	 seed = f->seed, hk = h;
	unsigned	 slot = f->slot_major ? keyslot_of(key, len) : 0;
	size_t		 n;

	if (f->nmerged == 0)
		return 0;
	filter_expire(f, now);
	if (f->normalize && (n = url_normalize(key, len, out,
	    sizeof(out))) > 0) {
		key = out;
		len = n;
	}
	for (size_t i = 0; i < f->nmerged; i++) {
		const struct slice *m = f->merged[i];

		/* one hash per seed: merged slices of one source are
		 * next to each other */
		if (m->seed != seed) {
			seed = m->seed;
			hk = XXH3_64bits_withSeed(key, len, seed);
			/* MERGE takes only a source of the same layout */
			if (f->slot_major)
				hk = filter_slot_hash(hk, slot);
		}
		if (bloom_check(&m->bloom, hk))
			return 1;
	}
	return 0;
}

/* ---- the filter ---- */


static struct filter *
filter_alloc(const char *name, const struct filter_shape *shape)
{
	struct filter *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->namelen = strlen(f->name);
	f->capacity = shape->capacity;
	f->error_rate = shape->error_rate;
	f->growth = shape->growth;
	f->expire_ms = (int64_t)shape->expire * 1000;
	f->normalize = shape->normalize == FILTER_NORMALIZE_STANDARD;
	f->type = shape->type;
	f->slot_major = shape->slot_major;
	set_hash(f);
	f->bucket_size = CUCKOO_SLOTS;
	f->refs = 1;
	f->last_save_ok = -1;
	f->drop_at_ms = INT64_MAX;
	return f;
}

struct filter *
filter_create(const char *name, const struct filter_shape *shape, char *err,
    size_t errlen)
{
	struct filter	*f;
	char		 why[256];

	if ((f = filter_alloc(name, shape)) == NULL) {
		snprintf(err, errlen, "filter %s: out of memory", name);
		return NULL;
	}
	f->seed = filter_new_seed(f->slot_major);
	if (f->slot_major && __atomic_load_n(&part_seed, __ATOMIC_RELAXED) != 0)
		f->seed = __atomic_load_n(&part_seed, __ATOMIC_RELAXED);
	if (f->expire_ms > 0) {
		/* its first period opens with its first key */
		refresh(f);
		return f;
	}
	/* its pages are faulted in now, not by its first keys; a
	 * slot-major filter's only as its slots' keys come: a node touches
	 * its own part alone */
	if (add_slice(f, now_ms(), why, sizeof(why)) == -1 ||
	    (f->slot_major ? 0 : f->type == FILTER_TYPE_BLOOM ?
	    bloom_populate(&f->head->bloom) :
	    cuckoo_populate(&f->head->cuckoo)) == -1) {
		snprintf(err, errlen, "filter %s: %s", name,
		    f->head ? strerror(errno) : why);
		filter_unref(f);
		return NULL;
	}
	f->reshapes = 0;	/* a new empty filter owes no snapshot */
	return f;
}

uint64_t
filter_new_seed(int slot_major)
{
	uint64_t seed = bloom_random_seed();

	if (slot_major)
		return (seed & ~(uint64_t)0xffff) | FILTER_SEED_SLOTS;
	if ((seed & 0xffff) == FILTER_SEED_SLOTS)
		seed ^= 1;
	return seed;
}

uint64_t
filter_next_seed(uint64_t seed)
{
	/* a fixed key: the sequence is the same on every node */
	static const uint64_t key = 0x7365656e64726573ULL;	/* "seendres" */
	uint64_t	 next = seed;
	unsigned char	 le[8];

	do {
		/* its bytes in one order whatever the host's */
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(next >> (8 * i));
		next = (XXH3_64bits_withSeed(le, sizeof(le), key) &
		    ~(uint64_t)0xffff) | FILTER_SEED_SLOTS;
	} while (next == seed);
	return next;
}

int
filter_seed_after(uint64_t later, uint64_t earlier)
{
	for (int k = 0; k < FILTER_SEED_CHAIN; k++)
		if ((earlier = filter_next_seed(earlier)) == later)
			return 1;
	return 0;
}

int
filter_is_blank(const struct filter *f)
{
	if (f->nmerged > 0)
		return 0;
	for (size_t i = 0; i < f->nslices; i++) {
		const struct slice *s = f->slices[i];

		/* a table's fingerprints, counted or not (a partitioned
		 * one's count leaves out the ranges of slots not held, which
		 * a rolled-back move may have filled): as a Bloom filter's
		 * bits set */
		if (s->cuckoo.table != NULL ? s->cuckoo.count != 0 ||
		    cuckoo_recount(&s->cuckoo) != 0 : s->bloom.bits_set != 0)
			return 0;
	}
	return 1;
}

/* An empty filter's slices made again in the other layout. */
static void
relayout(struct filter *f)
{
	uint64_t	 reshapes = f->reshapes;
	char		 why[256];

	for (size_t i = 0; i < f->nslices; i++)
		slice_unref(f->slices[i]);
	f->nslices = 0;
	f->head = NULL;
	f->slot_major = !f->slot_major;
	set_hash(f);
	refresh(f);
	if (f->expire_ms == 0 && add_slice(f, now_ms(), why,
	    sizeof(why)) == -1)
		log_warn("filter %s: its first slice waits for its first key: "
		    "%s", f->name, why);
	/* still a new empty filter: it owes no snapshot */
	f->reshapes = reshapes;
}

int
filter_reseed(struct filter *f, uint64_t seed)
{
	int slot_major = (seed & 0xffff) == FILTER_SEED_SLOTS;

	if (f->loaded_at != 0 || filter_mutations(f) != 0 ||
	    filter_count(f) != 0)
		return -1;
	/* its journalled keys were hashed for the layout their seed says
	 * (a node restarted in another cluster mode before any snapshot) */
	if (!f->runtime && slot_major != f->slot_major) {
		log_info("filter %s: its journal was written %s: it is so "
		    "again", f->name, slot_major ? "partitioned by slot (in "
		    "cluster mode)" : "whole (outside cluster mode)");
		relayout(f);
	}
	f->seed = seed;
	return 0;
}

void
filter_reset(struct filter *f, uint64_t seed)
{
	uint64_t	 held = filter_count(f);
	char		 why[256];

	for (size_t i = 0; i < f->nslices; i++)
		slice_unref(f->slices[i]);
	for (size_t i = 0; i < f->nmerged; i++)
		slice_unref(f->merged[i]);
	f->nmerged = 0;
	/* mutations only ever grow: a snapshot job captured before the
	 * reset can never make the filter look saved */
	f->dropped += held;
	f->reshapes++;
	f->nslices = 0;
	f->head = NULL;
	f->seed = seed;
	f->full = 0;
	f->held = 0;
	f->warned = 0;
	f->drop_at_ms = INT64_MAX;
	refresh(f);
	if (f->expire_ms > 0)
		return;
	if (add_slice(f, now_ms(), why, sizeof(why)) == -1)
		log_warn("filter %s: emptied, its first slice waits for its "
		    "first key: %s", f->name, why);
}

/* Takes the slices a snapshot held. */
static int
adopt(struct filter *f, const struct snapshot_info *info,
    struct snapshot_slice *ss, char *err, size_t errlen)
{
	f->seed = info->seed;
	/* the file's layout, whatever the config says now: its keys' hashes
	 * were made for it */
	if (info->slot_major != f->slot_major) {
		log_info("filter %s: its snapshot is %s; it stays so", f->name,
		    info->slot_major ? "partitioned by slot (made in cluster "
		    "mode)" : "whole (made outside cluster mode): this node "
		    "holds all of it");
		f->slot_major = info->slot_major;
		set_hash(f);
	}
	if (info->cuckoo != (f->type == FILTER_TYPE_CUCKOO)) {
		snprintf(err, errlen, "filter %s: its snapshot is of a %s "
		    "filter, the config says type = %s; restore type = %s or "
		    "move %s%s out of data_dir", f->name, info->cuckoo ?
		    "cuckoo" : "bloom", info->cuckoo ? "bloom" : "cuckoo",
		    info->cuckoo ? "cuckoo" : "bloom", f->name,
		    SNAPSHOT_SUFFIX);
		return -1;
	}
	f->forgotten = info->forgotten;
	f->max_kicks = info->max_kicks;
	f->loaded_jseq = info->jseq;
	f->loaded_joff = info->joff;
	for (uint32_t i = 0; i < info->nslices; i++) {
		struct slice *s;

		if ((s = calloc(1, sizeof(*s))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		s->bloom = ss[i].bloom;
		memset(&ss[i].bloom, 0, sizeof(ss[i].bloom));
		s->cuckoo = ss[i].cuckoo;
		memset(&ss[i].cuckoo, 0, sizeof(ss[i].cuckoo));
		s->capacity = ss[i].capacity;
		s->error_rate = ss[i].error_rate;
		s->start_ms = ss[i].start_ms;
		s->refs = 1;
		__atomic_add_fetch(&filter_memory_used, slice_map_bytes(s),
		    __ATOMIC_RELAXED);
		if (ss[i].merged ? filter_add_merged(f, s, ss[i].seed) == -1 :
		    push_slice(f, s) == -1) {
			slice_unref(s);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

/*
 * A filter holding slices ss as info describes them (a snapshot's or a
 * dump's), then taking shape's settings as a reload would. Returns it, or
 * NULL with a message; ss is freed either way.
 */
static struct filter *
filter_from_slices(const char *name, const struct filter_shape *shape,
    const struct snapshot_info *info, struct snapshot_slice *ss, char *err,
    size_t errlen)
{
	struct filter	*f;
	char		 msg[512];

	if ((f = filter_alloc(name, shape)) == NULL ||
	    adopt(f, info, ss, err, errlen) == -1) {
		snapshot_slices_free(ss, info->nslices);
		if (f != NULL)
			filter_unref(f);
		else
			snprintf(err, errlen, "filter %s: out of memory",
			    name);
		return NULL;
	}
	snapshot_slices_free(ss, info->nslices);
	/* the file's settings are the filter's until the config's apply */
	f->growth = info->growth;
	f->expire_ms = (int64_t)info->expire_ms;
	/* the oldest slice's drop time from its own period start: left
	 * unset, it was set only by the next period's first key, and a
	 * restart postponed every recrawl the window promised */
	set_drop_at(f);
	f->loaded_at = time(NULL);
	f->last_save = (time_t)info->created;
	f->last_save_ok = 1;
	f->reshapes = 0;
	filter_reconfigure(f, shape, msg, sizeof(msg));
	if (msg[0] != '\0')
		log_info("filter %s: the config changes %s since its snapshot",
		    f->name, msg);
	filter_expire(f, now_ms());
	/* a head loaded at its mark grows, warns or refuses now; one of a
	 * past period is left to the next key's new period */
	if (f->head != NULL && slice_count(f->head) >= f->next_mark &&
	    !head_is_past(f))
		filter_head_filled(f);
	full_if_merged_past(f);
	f->saved = filter_mutations(f);
	return f;
}

struct filter *
filter_open(const char *name, const struct filter_shape *shape,
    const char *dir, char *err, size_t errlen)
{
	struct snapshot_info	 info;
	struct snapshot_slice	*ss = NULL;
	char			 path[PATH_MAX];
	int			 r;

	if (snapshot_path(path, sizeof(path), dir, name) == -1) {
		snprintf(err, errlen, "filter %s: data_dir path too long",
		    name);
		return NULL;
	}
	r = snapshot_load_slices(path, shape->capacity, shape->error_rate,
	    &info, &ss, err, errlen);
	if (r == -1)
		return NULL;
	if (r == 0)
		return filter_create(name, shape, err, errlen);
	return filter_from_slices(name, shape, &info, ss, err, errlen);
}

struct filter *
filter_from_dump(const char *name, struct dump_image *img, char *err,
    size_t errlen)
{
	struct snapshot_info	 info;
	struct filter_shape	 shape;
	struct filter		*f;

	memset(&info, 0, sizeof(info));
	info.nslices = img->nslices;
	info.growth = img->growth;
	info.expire_ms = img->expire_ms;
	info.seed = img->seed;
	info.capacity = img->capacity;
	info.error_rate = img->error_rate;
	info.count = img->count;
	info.created = img->created;
	info.cuckoo = img->cuckoo;
	info.slot_major = img->slot_major;
	info.max_kicks = img->max_kicks;
	info.forgotten = img->forgotten;
	memset(&shape, 0, sizeof(shape));
	shape.type = img->cuckoo ? FILTER_TYPE_CUCKOO : FILTER_TYPE_BLOOM;
	shape.slot_major = img->slot_major;
	shape.capacity = img->capacity;
	shape.error_rate = img->error_rate;
	shape.growth = img->growth;
	/* a window's own length: the config's whole seconds do not apply */
	shape.expire = img->expire_ms / 1000;
	shape.normalize = img->normalize ? FILTER_NORMALIZE_STANDARD :
	    FILTER_NORMALIZE_OFF;
	f = filter_from_slices(name, &shape, &info, img->slices, err, errlen);
	img->slices = NULL;
	if (f == NULL)
		return NULL;
	f->expire_ms = (int64_t)img->expire_ms;
	set_drop_at(f);
	/* no file holds it yet: it owes its first snapshot */
	f->last_save = 0;
	f->last_save_ok = -1;
	f->reshapes = 1;
	return f;
}

struct filter *
filter_from_image(const char *name, int fd, struct filter_shape *shape,
    char *err, size_t errlen)
{
	struct snapshot_header	 hdr;
	struct snapshot_info	 info;
	struct snapshot_slice	*ss = NULL;
	struct filter		*f;

	if (snapshot_verify_fd(fd, &hdr, err, errlen) == -1)
		return NULL;
	memset(shape, 0, sizeof(*shape));
	shape->capacity = hdr.capacity;
	shape->error_rate = hdr.error_rate;
	shape->growth = hdr.growth;
	shape->expire = hdr.expire_ms / 1000;
	shape->type = hdr.cuckoo ? FILTER_TYPE_CUCKOO : FILTER_TYPE_BLOOM;
	shape->slot_major = hdr.slot_major;
	if (snapshot_load_slices_fd(fd, name, hdr.capacity, hdr.error_rate,
	    &info, &ss, err, errlen) != 1) {
		if (err[0] == '\0')
			snprintf(err, errlen, "filter %s: empty image", name);
		return NULL;
	}
	if ((f = filter_from_slices(name, shape, &info, ss, err, errlen))
	    == NULL)
		return NULL;
	f->expire_ms = (int64_t)info.expire_ms;
	set_drop_at(f);
	/* the image was written from the live bits: it may hold keys set
	 * after its counts were taken, so its bits are counted here */
	for (size_t i = 0; i < f->nslices; i++)
		if (f->slices[i]->cuckoo.table == NULL)
			f->slices[i]->bloom.bits_set =
			    bloom_popcount(&f->slices[i]->bloom);
	/* its journal positions were the primary's: nothing here */
	f->loaded_at = 0;
	f->loaded_jseq = f->loaded_joff = 0;
	return f;
}

void
filter_count_new(struct filter *f)
{
	if (f->head != NULL && f->head->cuckoo.table == NULL)
		f->head->bloom.count++;
}

void
filter_take(struct filter *dst, struct filter *src)
{
	uint64_t	 held = filter_count(dst);
	struct slice	**sl, **mg;
	size_t		 n, slots, nm;

	sl = dst->slices;
	n = dst->nslices;
	slots = dst->slots;
	mg = dst->merged;
	nm = dst->nmerged;
	dst->slices = src->slices;
	dst->nslices = src->nslices;
	dst->slots = src->slots;
	dst->head = src->head;
	dst->merged = src->merged;
	dst->nmerged = src->nmerged;
	src->slices = sl;
	src->nslices = n;
	src->slots = slots;
	src->merged = mg;
	/* what dst held is dropped here; src's unref frees the arrays */
	src->nmerged = 0;
	for (size_t i = 0; i < n; i++)
		slice_unref(sl[i]);
	for (size_t i = 0; i < nm; i++)
		slice_unref(mg[i]);
	src->nslices = 0;
	src->head = NULL;
	dst->seed = src->seed;
	/* its hashes follow the slices' layout */
	dst->slot_major = src->slot_major;
	set_hash(dst);
	dst->forgotten = src->forgotten;
	dst->max_kicks = src->max_kicks;
	dst->expire_ms = src->expire_ms;
	dst->drop_at_ms = src->drop_at_ms;
	dst->full = src->full;
	dst->held = src->held;
	dst->warned = src->warned;
	if (dst->runtime) {
		dst->capacity = src->capacity;
		dst->error_rate = src->error_rate;
		dst->growth = src->growth;
	}
	dst->loaded_at = 0;
	dst->loaded_jseq = dst->loaded_joff = 0;
	/* mutations only grow: it owes a snapshot of what it holds now */
	dst->dropped += held + filter_count(dst) + 1;
	dst->reshapes++;
	refresh(dst);
}

void
filter_reconfigure(struct filter *f, const struct filter_shape *shape,
    char *msg, size_t msglen)
{
	int64_t	 expire = (int64_t)shape->expire * 1000;
	size_t	 n = 0;

	msg[0] = '\0';
#define SAID(...) do {							\
	if (n < msglen)							\
		n += (size_t)snprintf(msg + n, msglen - n, __VA_ARGS__);	\
} while (0)
	if (f->capacity != shape->capacity)
		SAID("%scapacity %llu -> %llu", n ? ", " : "",
		    (unsigned long long)f->capacity,
		    (unsigned long long)shape->capacity);
	if (f->error_rate != shape->error_rate)
		SAID("%serror_rate %g -> %g", n ? ", " : "", f->error_rate,
		    shape->error_rate);
	if (f->growth != shape->growth)
		SAID("%sgrowth %u -> %u", n ? ", " : "", f->growth,
		    shape->growth);
	if (f->expire_ms != expire)
		SAID("%sexpire %llds -> %llds", n ? ", " : "",
		    (long long)(f->expire_ms / 1000),
		    (long long)(expire / 1000));
	if (f->normalize != (shape->normalize == FILTER_NORMALIZE_STANDARD)) {
		/* keys already recorded keep the form they were hashed in */
		f->normalize = shape->normalize == FILTER_NORMALIZE_STANDARD;
		set_hash(f);
		SAID("%snormalize %s (keys recorded before keep their "
		    "spelling)", n ? ", " : "", f->normalize ? "standard" :
		    "off");
	}
#undef SAID
	if (n == 0) {
		/* max_memory may have been raised */
		filter_retry(f);
		return;
	}
	/* a window that starts now counts from now for the keys held:
	 * nothing is forgotten sooner than one window after the change */
	if (f->expire_ms == 0 && expire > 0) {
		int64_t t = now_ms();

		for (size_t i = 0; i < f->nslices; i++)
			if (f->slices[i]->start_ms < t)
				f->slices[i]->start_ms = t;
	}
	f->capacity = shape->capacity;
	f->error_rate = shape->error_rate;
	f->growth = shape->growth;
	f->expire_ms = expire;
	set_drop_at(f);
	f->reshapes++;
	/* growth turned on frees a full filter; turned off, the head takes
	 * what it has room for */
	f->full = 0;
	f->held = 0;
	f->warned = 0;
	refresh(f);
	if (f->head != NULL && f->expire_ms == 0 &&
	    slice_count(f->head) >= f->next_mark)
		filter_head_filled(f);
}

void
filter_ref(struct filter *f)
{
	f->refs++;
}

void
filter_unref(struct filter *f)
{
	if (--f->refs > 0)
		return;
	for (size_t i = 0; i < f->nslices; i++)
		slice_unref(f->slices[i]);
	for (size_t i = 0; i < f->nmerged; i++)
		slice_unref(f->merged[i]);
	free(f->slices);
	free(f->merged);
	free(f);
}

uint64_t
filter_count(const struct filter *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < filter_nall(f); i++)
		n += slice_count(filter_slice_at(f, i));
	return n;
}

uint64_t
filter_mutations(const struct filter *f)
{
	return f->dropped + f->reshapes + filter_count(f);
}

int
filter_dirty(const struct filter *f)
{
	return filter_mutations(f) != f->saved || f->saved_gen != f->dir_gen;
}

enum filter_state
filter_state(const struct filter *f)
{
	const struct slice *h = f->head;
	uint64_t cap = h != NULL ? part_capacity(f, h->capacity) : 0;

	if (f->full)
		return FILTER_STATE_FULL;
	if (h != NULL && (f->growth == 0 || f->held) &&
	    slice_count(h) >= cap - cap / 10)
		return FILTER_NEAR_FULL;
	return FILTER_OK;
}

const char *
filter_state_name(enum filter_state s)
{
	switch (s) {
	case FILTER_NEAR_FULL:
		return "near_full";
	case FILTER_STATE_FULL:
		return "full";
	default:
		return "ok";
	}
}

uint64_t
filter_bytes(const struct filter *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < filter_nall(f); i++) {
		const struct slice *s = filter_slice_at(f, i);

		n += s->cuckoo.table != NULL ? cuckoo_table_bytes(&s->cuckoo) :
		    bloom_bytes(&s->bloom);
	}
	return n;
}

uint64_t
filter_mapped(const struct filter *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < filter_nall(f); i++)
		n += slice_map_bytes(filter_slice_at(f, i));
	return n;
}

uint64_t
filter_slice_capacity(const struct filter *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < filter_nall(f); i++)
		n += filter_slice_at(f, i)->capacity;
	return n;
}

double
filter_part_share(const struct filter *f)
{
	unsigned slots = __atomic_load_n(&part_slots, __ATOMIC_RELAXED);

	if (!f->slot_major || slots >= KEYSLOT_COUNT)
		return 1.0;
	return (double)slots / KEYSLOT_COUNT;
}

/* A miss must miss in every slice: 1 - prod(1 - p_i). A partitioned
 * filter's part is asked about its slots alone: its keys fill their share
 * of each slice. */
double
filter_fp_estimate(const struct filter *f)
{
	double miss = 1.0, share = filter_part_share(f);

	for (size_t i = 0; i < filter_nall(f); i++) {
		const struct slice *s = filter_slice_at(f, i);
		const struct cuckoo *c = &s->cuckoo;

		miss *= 1.0 - (c->table != NULL ? cuckoo_fp_rate((uint64_t)(
		    (double)c->nbuckets * share + 0.5), c->fpbits,
		    (double)c->count) :
		    bloom_fp_from_fill_part(&s->bloom, share));
	}
	return 1.0 - miss;
}

double
filter_fp_planned(const struct filter *f)
{
	double miss = 1.0;

	for (size_t i = 0; i < filter_nall(f); i++) {
		const struct slice *s = filter_slice_at(f, i);
		const struct bloom *b = &s->bloom;

		miss *= 1.0 - (s->cuckoo.table != NULL ?
		    cuckoo_fp_rate(s->cuckoo.nbuckets, s->cuckoo.fpbits,
		    (double)s->capacity) :
		    bloom_fp_rate(b->nblocks, b->hashes, s->capacity));
	}
	return 1.0 - miss;
}

int
filter_plan_for(uint64_t capacity, double error_rate, unsigned growth,
    int64_t expire_ms, uint64_t keys, struct filter_plan *plan)
{
	struct filter_shape	 shape;
	struct filter		*f;
	double			 miss = 1.0;
	uint64_t		 left = keys, per;
	int			 periods = 1;

	memset(&shape, 0, sizeof(shape));
	memset(plan, 0, sizeof(*plan));
	shape.capacity = capacity;
	shape.error_rate = error_rate;
	shape.growth = growth;
	shape.expire = (uint64_t)(expire_ms / 1000);
	if ((f = filter_alloc("plan", &shape)) == NULL)
		return -1;
	f->expire_ms = expire_ms;
	/* a steady stream: keys per window spread over its live periods */
	if (expire_ms > 0)
		periods = FILTER_LIVE_PERIODS;
	per = expire_ms > 0 ? (keys + FILTER_PERIODS - 1) / FILTER_PERIODS :
	    keys;
	for (int p = 0; p < periods; p++) {
		uint64_t	 capsum = 0, last = 0;
		double		 spent = 0;

		left = per;
		for (;;) {
			uint64_t	 cap, nb, take;
			double		 rate;
			uint32_t	 k;

			if (shape_after(capacity, error_rate, growth, expire_ms,
			    last, spent, capsum, &cap, &rate) == -1)
				break;	/* fixed: keys past capacity refused */
			if (bloom_plan(cap, rate, &nb, &k) == -1 ||
			    plan->slices >= FILTER_MAX_SLICES) {
				free(f);
				return -1;
			}
			take = left < cap ? left : cap;
			plan->slices++;
			plan->bytes += nb * BLOOM_BLOCK_BYTES;
			plan->hashes = k;
			miss *= 1.0 - bloom_fp_rate(nb, k, take);
			left -= take;
			last = cap;
			spent += rate;
			capsum += cap;
			if (left == 0)
				break;
		}
	}
	f->head = NULL;
	free(f);
	plan->keys = keys;
	plan->fp_rate = 1.0 - miss;
	plan->bits_per_key = keys ? (double)plan->bytes * 8 / (double)keys : 0;
	return 0;
}

struct slice *
filter_part_slice(struct filter *f, size_t i, char *err, size_t errlen)
{
	char	 why[256];

	if (!f->slot_major) {
		snprintf(err, errlen, "filter %s is not partitioned by slot",
		    f->name);
		return NULL;
	}
	/* a window's slices are periods: the same index is another period
	 * on another node (filter_period_slice) */
	if (f->expire_ms > 0) {
		snprintf(err, errlen, "filter %s has a window (expire): its "
		    "slices are taken by period", f->name);
		return NULL;
	}
	while (f->nslices <= i) {
		int64_t start = f->head != NULL ? f->head->start_ms : now_ms();

		if (add_slice(f, start, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "filter %s cannot add slice %zu: "
			    "%s", f->name, f->nslices + 1, why);
			return NULL;
		}
		f->full = 0;
		f->warned = 0;
		refresh(f);
		log_info("filter %s grew to %zu slices to take moved slots",
		    f->name, f->nslices);
	}
	return f->slices[i];
}

/*
 * The capacity and rate of the slice growth adds as rank nth after have
 * slices (of one period), the newest of capacity last, whose rates add
 * up to spent and capacities to capsum. -1: growth adds none.
 */
static int
grow_to(const struct filter *f, size_t have, size_t nth, uint64_t last,
    double spent, uint64_t capsum, uint64_t *cap, double *rate)
{
	for (; have <= nth; have++) {
		if (shape_after(f->capacity, f->error_rate, f->growth,
		    f->expire_ms, last, spent, capsum, cap, rate) == -1)
			return -1;
		/* a cuckoo slice is made at FILTER_CUCKOO_RATE_MIN at least
		 * (slice_new_cuckoo), and the next is planned after it */
		if (f->type == FILTER_TYPE_CUCKOO &&
		    *rate < FILTER_CUCKOO_RATE_MIN)
			*rate = FILTER_CUCKOO_RATE_MIN;
		last = *cap;
		spent += *rate;
		capsum += *cap;
	}
	return 0;
}

/* A bloom slice's blocks and hashes for capacity at rate, in f's layout
 * (a slot-major one's blocks a whole number a slot). */
static int
plan_bloom(const struct filter *f, uint64_t cap, double rate,
    uint64_t *nblocks, uint32_t *hashes)
{
	if (bloom_plan(cap, rate, nblocks, hashes) == -1)
		return -1;
	if (f->slot_major)
		*nblocks = (*nblocks + KEYSLOT_COUNT - 1) / KEYSLOT_COUNT *
		    KEYSLOT_COUNT;
	return 0;
}

int
filter_part_plan(const struct filter *f, size_t nth, uint64_t *n,
    uint32_t *bits)
{
	uint64_t	 capsum = 0, last = 0, cap = 0;
	double		 spent = 0, rate = 0;

	if (nth < f->nslices) {
		const struct slice *sl = f->slices[nth];

		*n = sl->cuckoo.table != NULL ? sl->cuckoo.nbuckets :
		    sl->bloom.nblocks;
		*bits = sl->cuckoo.table != NULL ? sl->cuckoo.fpbits :
		    sl->bloom.hashes;
		return 0;
	}
	/* as filter_part_slice adds them: after the head, one period */
	for (size_t i = 0; i < f->nslices; i++) {
		last = f->slices[i]->capacity;
		spent += f->slices[i]->error_rate;
		capsum += f->slices[i]->capacity;
	}
	if (grow_to(f, f->nslices, nth, last, spent, capsum, &cap, &rate) == -1)
		return -1;
	if (f->type == FILTER_TYPE_CUCKOO) {
		if (rate < FILTER_CUCKOO_RATE_MIN)
			rate = FILTER_CUCKOO_RATE_MIN;
		return f->slot_major ? cuckoo_plan_ranges(cap, rate, n, bits) :
		    cuckoo_plan(cap, rate, n, bits);
	}
	return plan_bloom(f, cap, rate, n, bits);
}

int64_t
filter_period_ms(const struct filter *f)
{
	return f->expire_ms > 0 ? period_ms(f) : 0;
}

/* A moved period's slice at slices[at] (after every slice that started no
 * later), its period's next by growth. */
static int
insert_slice(struct filter *f, size_t at, int64_t start, char *err,
    size_t errlen)
{
	if (add_slice_at(f, at, start, err, errlen) == -1)
		return -1;
	/* a slice of the current period appended has room */
	if (f->head == f->slices[at] && !f->held)
		f->full = 0;
	f->warned = 0;
	refresh(f);
	set_drop_at(f);
	return 0;
}

int
filter_period_plan(const struct filter *f, int64_t start, size_t nth,
    uint64_t *nblocks, uint32_t *hashes)
{
	uint64_t	 capsum = 0, last = 0, cap = 0;
	double		 spent = 0, rate = 0;
	size_t		 have = 0;

	for (size_t i = 0; i < f->nslices; i++) {
		const struct slice *sl = f->slices[i];

		if (sl->start_ms != start)
			continue;
		if (have++ == nth) {
			*nblocks = sl->bloom.nblocks;
			*hashes = sl->bloom.hashes;
			return 0;
		}
		last = sl->capacity;
		spent += sl->error_rate;
		capsum += sl->capacity;
	}
	/* the slices growth would add to the period up to rank nth */
	if (grow_to(f, have, nth, last, spent, capsum, &cap, &rate) == -1)
		return -1;
	return plan_bloom(f, cap, rate, nblocks, hashes);
}

struct bloom *
filter_period_slice(struct filter *f, int64_t start, size_t nth, char *err,
    size_t errlen)
{
	char	 why[256];

	if (!f->slot_major || f->type != FILTER_TYPE_BLOOM ||
	    f->expire_ms == 0) {
		snprintf(err, errlen, "filter %s is not partitioned by slot "
		    "with a window", f->name);
		return NULL;
	}
	/* a start off this filter's period boundaries is a period of a
	 * window a reload changed: its slices are placed by their start,
	 * and expire as the source's do */
	if (start <= 0) {
		snprintf(err, errlen, "filter %s: a slice starting at %lld",
		    f->name, (long long)start);
		return NULL;
	}
	for (;;) {
		size_t at = 0, have = 0;

		/* slices are oldest first: the period's are contiguous */
		for (size_t i = 0; i < f->nslices; i++) {
			if (f->slices[i]->start_ms > start)
				break;
			at = i + 1;
			if (f->slices[i]->start_ms == start &&
			    have++ == nth)
				return &f->slices[i]->bloom;
		}
		if (insert_slice(f, at, start, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "filter %s cannot add slice %zu "
			    "of its period starting at %lld: %s", f->name,
			    have + 1, (long long)start, why);
			return NULL;
		}
		log_info("filter %s took slice %zu of its period starting at "
		    "%lld for moved slots (%zu slice(s) now)", f->name, have + 1,
		    (long long)start, f->nslices);
	}
}
