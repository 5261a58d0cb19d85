/*
 * test_dump.c - dump chunks (dump.h): images of one to three slices round
 * trip through chunks of many sizes; every kind of damage, truncation,
 * reordering, gap, foreign chunk and hostile header is refused on arrival
 * with a "bad dump chunk: " message; a dump taken while keys are added
 * still loads every key acknowledged before it.
 *
 * With DUMP_CORPUS_DIR set in the environment it writes the seed corpus
 * for tests/fuzz/fuzz_dump.c there and exits:
 *   DUMP_CORPUS_DIR=tests/fuzz/corpus/dump ./tests/unit/test_dump
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bloom.h"
#include "dump.h"
#include "keyslot.h"
#include "snapshot.h"
#include "tap.h"

#define SEED	0x5eed5eed12345678ULL
#define ID_A	0x0123456789abcdefULL
#define ID_B	0xfedcba9876543210ULL
#define SMALL	1000		/* bits chunks' payload: many chunks */
#define PREFIX	"bad dump chunk: "

/* Three slices of different shapes: 2368 + 320 + 4096 = 6784 bytes, so
 * chunks of 1000 bytes cross both slice boundaries (chunk 3 spans all
 * three slices) and the last holds 784. A fourth (576 bytes) for the
 * images of merged slices. */
static const uint64_t	 NBLOCKS[4] = { 37, 5, 64, 9 };
static const uint32_t	 HASHES[4] = { 8, 4, 16, 8 };
static const uint32_t	 NKEYS[4] = { 300, 40, 500, 60 };
/* the seeds of merged slices 0..3 (a merged slice's keys are hashed
 * with its own seed) */
static const uint64_t	 MSEED[4] = { 0xa1, 0xb2b2b2b2b2b2b2b2ULL, 0xc3,
			     0x0d0d0d0d0d0d0d0dULL };

static char		 dir[] = "/tmp/test_dump.XXXXXX";
static char		 err[512];
static unsigned char	*scratch;	/* DUMP_CHUNK_MAX: dump_chunk's out */

struct blob {
	unsigned char	*p;
	size_t		 len;
};

/* A dump's chunks, each in its own exact-size buffer. */
struct dump {
	struct blob	*c;
	uint32_t	 n;
};

struct image {
	struct dump_image	 im;
	struct snapshot_slice	 sl[4];
};

static void
key(char *buf, size_t len, const char *tag, uint32_t slice, uint32_t i)
{
	snprintf(buf, len, "https://example.com/%s/%u/%u", tag, slice, i);
}

static void
add_keys(struct bloom *b, const char *tag, uint32_t slice, uint32_t n)
{
	char k[96];

	for (uint32_t i = 0; i < n; i++) {
		key(k, sizeof(k), tag, slice, i);
		bloom_add(b, bloom_hash(b, k, strlen(k)));
	}
}

/* How many of tag's keys slice's bloom does not answer. */
static uint32_t
missing_keys(const struct bloom *b, const char *tag, uint32_t slice,
    uint32_t n)
{
	char		k[96];
	uint32_t	missing = 0;

	for (uint32_t i = 0; i < n; i++) {
		key(k, sizeof(k), tag, slice, i);
		missing += !bloom_check(b, bloom_hash(b, k, strlen(k)));
	}
	return missing;
}

/* n slices holding keys "k/slice/i", the last nmerged of them merged
 * (seeds MSEED); the second one has a period start. */
static void
build_merged(struct image *img, uint32_t n, uint32_t nmerged)
{
	struct dump_image *im = &img->im;

	memset(img, 0, sizeof(*img));
	for (uint32_t i = 0; i < n; i++) {
		struct snapshot_slice	*s = &img->sl[i];
		uint64_t		 seed = SEED;

		if (i >= n - nmerged) {
			s->merged = 1;
			s->seed = seed = MSEED[i];
		}
		if (bloom_init(&s->bloom, NBLOCKS[i], HASHES[i], seed) == -1) {
			perror("bloom_init");
			exit(2);
		}
		add_keys(&s->bloom, "k", i, NKEYS[i]);
		s->capacity = 100 * (i + 1);
		s->error_rate = 0.01 / (i + 1);
		s->start_ms = i == 1 ? 1700000000123LL : 0;
		s->count = s->bloom.count;
		s->bits_set = s->bloom.bits_set;
		im->count += s->count;
	}
	im->seed = SEED;
	im->capacity = 1000;
	im->error_rate = 0.01;
	im->growth = 2;
	im->normalize = 1;
	im->expire_ms = 3600000;
	im->created = 1700000000;
	im->nslices = n;
	im->slices = img->sl;
}

static void
build(struct image *img, uint32_t n)
{
	build_merged(img, n, 0);
}

static void
unbuild(struct image *img)
{
	for (uint32_t i = 0; i < img->im.nslices; i++)
		bloom_free(&img->sl[i].bloom);
}

static struct blob
copy_blob(const void *p, size_t len)
{
	struct blob b = { malloc(len ? len : 1), len };

	if (b.p == NULL) {
		perror("malloc");
		exit(2);
	}
	memcpy(b.p, p, len);
	return b;
}

/* All of an image's chunks, written now. */
static void
make_dump(const struct dump_image *im, uint64_t id, size_t payload,
    struct dump *d)
{
	size_t len;

	d->n = dump_chunk_count(im, payload);
	d->c = calloc(d->n ? d->n : 1, sizeof(*d->c));
	for (uint32_t i = 0; i < d->n; i++) {
		len = dump_chunk(im, id, payload, i, scratch);
		d->c[i] = copy_blob(scratch, len);
	}
}

static void
drop_dump(struct dump *d)
{
	for (uint32_t i = 0; i < d->n; i++)
		free(d->c[i].p);
	free(d->c);
}

/*
 * Feeds seq in order. Returns the position of the first refusal (err
 * holds why), or -1 if none; *load keeps the load when asked for and
 * none was refused, and *complete says whether the last chunk ended it
 * (and no earlier one did).
 */
static int
feed(const struct blob *seq, uint32_t n, struct dump_load **load,
    int *complete)
{
	struct dump_load	*l;
	int			 rc = 0;

	err[0] = '\0';
	if (complete != NULL)
		*complete = 0;
	if (n == 0)
		return -1;
	if ((l = dump_load_start(seq[0].p, seq[0].len, 0, err,
	    sizeof(err))) == NULL)
		return 0;
	for (uint32_t i = 1; i < n; i++) {
		if (rc == 1) {
			/* an earlier chunk completed it: one is extra */
			rc = dump_load_add(l, seq[i].p, seq[i].len, err,
			    sizeof(err));
			dump_load_free(l);
			return rc == -1 ? (int)i : -2;
		}
		rc = dump_load_add(l, seq[i].p, seq[i].len, err, sizeof(err));
		if (rc == -1) {
			dump_load_free(l);
			return (int)i;
		}
	}
	if (complete != NULL)
		*complete = rc == 1;
	if (load != NULL)
		*load = l;
	else
		dump_load_free(l);
	return -1;
}

/* seq is refused at position at, with a message naming want; at -1:
 * taken whole. */
static void
refused(const struct blob *seq, uint32_t n, int at, const char *want,
    const char *what)
{
	int got = feed(seq, n, NULL, NULL);

	if (at == -1) {
		ok(got == -1, "%s (%s)", what, got == -1 ? "ok" : err);
		return;
	}
	ok(got == at && strncmp(err, PREFIX, strlen(PREFIX)) == 0 &&
	    (want == NULL || strstr(err, want) != NULL),
	    "%s: refused at chunk %d (got %d: %s)", what, at, got, err);
}

/* The checksum dump.h describes, computed here from its definition. */
static void
reseal(struct blob *b)
{
	unsigned char	*tmp = malloc(b->len);
	uint64_t	 sum;

	memcpy(tmp, b->p, 48);
	memcpy(tmp + 48, b->p + DUMP_CHUNK_HEADER, b->len - DUMP_CHUNK_HEADER);
	sum = XXH3_64bits(tmp, 48 + b->len - DUMP_CHUNK_HEADER);
	for (int i = 0; i < 8; i++)
		b->p[48 + i] = (unsigned char)(sum >> (8 * i));
	free(tmp);
}

static void
put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void
put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t
get32(const unsigned char *p)
{
	return (uint32_t)(get64(p) & 0xffffffffu);
}

/* Does the loaded image equal the one dumped, field by field and byte by
 * byte, and answer every key? */
static void
check_same(const struct dump_image *want, const struct dump_image *got,
    const char *what)
{
	uint32_t	 bad_slices = 0, missing = 0, bad_arrays = 0;
	uint32_t	 bad_bits = 0;

	ok(got->nslices == want->nslices && got->seed == want->seed &&
	    got->capacity == want->capacity &&
	    got->error_rate == want->error_rate &&
	    got->growth == want->growth && got->normalize == want->normalize,
	    "%s: header shape, seed and settings equal", what);
	ok(got->count == want->count && got->expire_ms == want->expire_ms &&
	    got->created == want->created,
	    "%s: header count, expire and creation time equal", what);
	if (got->nslices != want->nslices)
		return;
	for (uint32_t i = 0; i < got->nslices; i++) {
		const struct snapshot_slice *a = &want->slices[i];
		const struct snapshot_slice *b = &got->slices[i];

		if (b->bloom.nblocks != a->bloom.nblocks ||
		    b->bloom.hashes != a->bloom.hashes ||
		    b->merged != a->merged || b->seed != a->seed ||
		    b->bloom.seed != (a->merged ? a->seed : want->seed) ||
		    b->capacity != a->capacity ||
		    b->error_rate != a->error_rate ||
		    b->start_ms != a->start_ms || b->count != a->count ||
		    b->bits_set != a->bits_set ||
		    b->bloom.count != a->count)
			bad_slices++;
		else if (memcmp(a->bloom.words, b->bloom.words,
		    bloom_bytes(&a->bloom)) != 0)
			bad_arrays++;
		else
			missing += missing_keys(&b->bloom, "k", i, NKEYS[i]);
		if (b->bloom.words != NULL &&
		    b->bloom.bits_set != bloom_popcount(&b->bloom))
			bad_bits++;
	}
	ok(bad_slices == 0, "%s: every slice's fields equal (%u differ)", what,
	    bad_slices);
	ok(bad_arrays == 0, "%s: arrays byte-identical (%u differ)", what,
	    bad_arrays);
	ok(missing == 0, "%s: every key present (%u missing)", what, missing);
	ok(bad_bits == 0, "%s: bits_set is the loaded arrays' popcount",
	    what);
}

/* Dump and load back, chunk by chunk. */
static void
round_trip(uint32_t nslices, size_t payload, const char *what)
{
	struct image		 img;
	struct dump		 d;
	struct dump_load	*l = NULL;
	int			 at, complete;

	build(&img, nslices);
	make_dump(&img.im, ID_A, payload, &d);
	at = feed(d.c, d.n, &l, &complete);
	ok(at == -1 && complete, "%s: %u chunks load (%s)", what, d.n,
	    at == -1 ? "ok" : err);
	if (at == -1)
		check_same(&img.im, dump_load_image(l), what);
	dump_load_free(l);
	drop_dump(&d);
	unbuild(&img);
}

static void
test_round_trips(void)
{
	round_trip(1, SMALL, "1 slice, 1000-byte chunks");
	round_trip(2, 0, "2 slices, default chunks");
	round_trip(3, SMALL, "3 slices, 1000-byte chunks");
	round_trip(3, 0, "3 slices, default chunks");
	round_trip(3, 64, "3 slices, one block a chunk");
	round_trip(3, 7, "3 slices, 7-byte chunks");
	round_trip(3, 6784, "3 slices, one bits chunk");
	round_trip(3, 6783, "3 slices, a last chunk of 1 byte");
}

/* The chunks' shape: what dump.h promises of sizes, ids and counts. */
static void
test_layout(void)
{
	struct image	img;
	struct dump	d;
	uint32_t	bad = 0;

	build(&img, 3);
	ok(dump_bits_bytes(&img.im) == 6784, "layout: 6784 bytes of arrays");
	ok(dump_chunk_count(&img.im, SMALL) == 8 &&
	    dump_chunk_count(&img.im, 0) == 2 &&
	    dump_chunk_count(&img.im, 64) == 107 &&
	    dump_chunk_count(&img.im, DUMP_CHUNK_MAX) == 2,
	    "layout: chunk counts for 1000, default, 64 and oversized payloads");
	make_dump(&img.im, ID_A, SMALL, &d);
	for (uint32_t i = 0; i < d.n; i++) {
		size_t want = i == 0 ? 64 + 128 + 3 * 64 :
		    i == d.n - 1 ? 64 + 784 : 64 + 1000;

		if (d.c[i].len != want || get64(d.c[i].p + 16) != ID_A ||
		    memcmp(d.c[i].p, DUMP_MAGIC, 8) != 0 ||
		    get64(d.c[i].p + 32) != (i ? (i - 1) * 1000ULL : 0))
			bad++;
	}
	ok(d.n == 8 && bad == 0, "layout: sizes, ids and offsets as dump.h "
	    "says (%u wrong)", bad);
	ok(dump_chunk(&img.im, ID_A, SMALL, 8, scratch) == 0 &&
	    dump_chunk(&img.im, 0, SMALL, 0, scratch) == 0,
	    "layout: no chunk past the count, none with id 0");
	drop_dump(&d);
	unbuild(&img);
}

/*
 * The writer reads only the words that hold a chunk: from arrays in heap
 * buffers of their exact size (where ASan sees a read past the end, as
 * it cannot in bloom_init's page-rounded mappings), chunks of 7 and 1000
 * bytes are the same as from the mappings.
 */
static void
test_exact_arrays(void)
{
	struct image	 img, heap;
	struct dump	 a, b;
	uint32_t	 differ = 0;
	size_t		 sizes[2] = { 7, SMALL };

	build(&img, 3);
	heap = img;
	heap.im.slices = heap.sl;
	for (uint32_t i = 0; i < 3; i++) {
		size_t n = bloom_bytes(&img.sl[i].bloom);

		heap.sl[i].bloom.words = malloc(n);
		memcpy(heap.sl[i].bloom.words, img.sl[i].bloom.words, n);
	}
	for (int s = 0; s < 2; s++) {
		make_dump(&img.im, ID_A, sizes[s], &a);
		make_dump(&heap.im, ID_A, sizes[s], &b);
		for (uint32_t i = 0; i < a.n && i < b.n; i++)
			differ += a.c[i].len != b.c[i].len ||
			    memcmp(a.c[i].p, b.c[i].p, a.c[i].len) != 0;
		differ += a.n != b.n;
		drop_dump(&a);
		drop_dump(&b);
	}
	ok(differ == 0, "exact arrays: the same chunks, no read past an array");
	for (uint32_t i = 0; i < 3; i++)
		free(heap.sl[i].bloom.words);
	unbuild(&img);
}

/* A dump the size of the largest filters: counted, never read. */
static void
test_huge_counts(void)
{
	struct snapshot_slice	s;
	struct dump_image	im;
	size_t			len;

	memset(&s, 0, sizeof(s));
	memset(&im, 0, sizeof(im));
	s.bloom.nblocks = BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES;
	s.bloom.hashes = 8;
	s.capacity = 1;
	s.error_rate = 0.5;
	im.nslices = 1;
	im.slices = &s;
	im.capacity = 1;
	im.error_rate = 0.5;
	ok(dump_chunk_count(&im, 1) == 0,
	    "huge: 1-byte chunks of 1 TiB are too many to count");
	ok(dump_chunk_count(&im, 0) == 1 + (BLOOM_MAX_BYTES +
	    DUMP_CHUNK_MAX - 64 - 1) / (DUMP_CHUNK_MAX - 64),
	    "huge: default chunks of 1 TiB are counted");
	len = dump_chunk(&im, ID_A, 0, 0, scratch);
	ok(len == 64 + 128 + 64, "huge: its header chunk is written");
	im.nslices = SNAPSHOT_MAX_SLICES + 1;
	ok(dump_chunk_count(&im, 0) == 0 &&
	    dump_chunk(&im, ID_A, 0, 0, scratch) == 0,
	    "huge: an image of too many slices makes no dump");
}

/* Every chunk with one byte flipped, in its header and in its payload. */
static void
test_flips(void)
{
	struct image	 img;
	struct dump	 d;
	char		 what[64];

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &d);
	for (uint32_t i = 0; i < d.n; i++) {
		struct blob	*c = &d.c[i];
		size_t		 at[2];

		/* id, index, count or offset; then the payload */
		at[0] = 16 + (i * 5) % 24;
		at[1] = 64 + (c->len - 64) * (i + 1) / (d.n + 1);
		for (int j = 0; j < 2; j++) {
			c->p[at[j]] ^= 0x10;
			snprintf(what, sizeof(what), "flip: chunk %u byte %zu",
			    i, at[j]);
			refused(d.c, d.n, (int)i, "checksum mismatch", what);
			c->p[at[j]] ^= 0x10;
		}
	}
	d.c[2].p[50] ^= 1;
	refused(d.c, d.n, 2, "checksum mismatch (chunk 2)",
	    "flip: the checksum itself");
	d.c[2].p[50] ^= 1;
	d.c[3].p[60] = 1;
	refused(d.c, d.n, 3, "reserved", "flip: reserved (not checksummed)");
	d.c[3].p[60] = 0;
	d.c[1].p[3] ^= 0x20;
	refused(d.c, d.n, 1, "not a seend dump", "flip: magic");
	d.c[1].p[3] ^= 0x20;
	d.c[0].p[8] = 9;
	refused(d.c, d.n, 0, "version 9 (this seend reads 1)",
	    "flip: version");
	d.c[0].p[8] = 1;
	d.c[4].p[41] ^= 1;
	refused(d.c, d.n, 4, NULL, "flip: payload length");
	d.c[4].p[41] ^= 1;
	refused(d.c, d.n, -1, NULL, "flip: all restored, the dump loads");
	drop_dump(&d);
	unbuild(&img);
}

/* Truncation, order, gaps, strangers, extras. */
static void
test_sequence(void)
{
	struct image		 img;
	struct dump		 a, b;
	struct blob		 seq[12];
	struct dump_load	*l;
	char			 what[64];

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &a);
	make_dump(&img.im, ID_B, SMALL, &b);
	for (uint32_t i = 0; i < a.n; i++) {
		a.c[i].len--;
		snprintf(what, sizeof(what), "truncated: chunk %u by 1 byte",
		    i);
		refused(a.c, a.n, (int)i, "truncated", what);
		a.c[i].len++;
	}
	seq[0] = (struct blob){ a.c[0].p, 30 };
	refused(seq, 1, 0, "truncated", "truncated: in the chunk header");
	seq[0] = (struct blob){ a.c[0].p, 0 };
	refused(seq, 1, 0, "not a seend dump", "an empty chunk");

	seq[0] = a.c[0], seq[1] = a.c[2], seq[2] = a.c[1];
	refused(seq, 3, 1, "chunk 2 where chunk 1 was due",
	    "reordered: 2 before 1");
	seq[0] = a.c[0], seq[1] = a.c[1], seq[2] = a.c[2], seq[3] = a.c[4];
	refused(seq, 4, 3, "chunk 4 where chunk 3 was due", "missing: 3");
	seq[0] = a.c[0], seq[1] = a.c[1], seq[2] = b.c[2];
	refused(seq, 3, 2, "from another dump", "foreign: B's chunk 2 in A");
	seq[0] = a.c[0], seq[1] = a.c[0];
	refused(seq, 2, 1, "chunk 0 where chunk 1 was due",
	    "the header chunk twice");
	refused(&a.c[1], 1, 0, "is a bits chunk", "a bits chunk first");

	memcpy(seq, a.c, a.n * sizeof(*seq));
	seq[a.n] = a.c[a.n - 1];
	refused(seq, a.n + 1, (int)a.n, "complete",
	    "extra: the last chunk again after completion");
	seq[a.n] = a.c[0];
	refused(seq, a.n + 1, (int)a.n, "complete",
	    "extra: the header chunk after completion");

	/* a refused load stays refused, even for the chunk that was due */
	l = dump_load_start(a.c[0].p, a.c[0].len, 0, err, sizeof(err));
	ok(l != NULL && dump_load_add(l, a.c[2].p, a.c[2].len, err,
	    sizeof(err)) == -1 && dump_load_add(l, a.c[1].p, a.c[1].len, err,
	    sizeof(err)) == -1 && strstr(err, "earlier") != NULL,
	    "a failed load takes nothing more (%s)", err);
	dump_load_free(l);
	drop_dump(&a);
	drop_dump(&b);
	unbuild(&img);
}

/* Things that are not dumps at all, given as the first chunk. */
static void
test_foreign(void)
{
	struct image		 img;
	struct snapshot_info	 info;
	struct blob		 blob;
	unsigned char		 noise[500];
	char			 path[600];
	uint64_t		 x = 0x9e3779b97f4a7c15ULL;
	struct stat		 sb;
	FILE			*f;

	for (size_t i = 0; i < sizeof(noise); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		noise[i] = (unsigned char)x;
	}
	blob = (struct blob){ noise, sizeof(noise) };
	refused(&blob, 1, 0, "not a seend dump", "foreign: random bytes");
	memcpy(noise, DUMP_MAGIC, 8);
	refused(&blob, 1, 0, "version", "foreign: random bytes after our magic");

	build(&img, 3);
	memset(&info, 0, sizeof(info));
	info.nslices = 3;
	info.seed = SEED;
	info.capacity = img.im.capacity;
	info.error_rate = img.im.error_rate;
	if (snapshot_write_slices(dir, "snap", &info, img.sl, err,
	    sizeof(err)) == -1 || snapshot_path(path, sizeof(path), dir,
	    "snap") == -1 || stat(path, &sb) == -1 ||
	    (f = fopen(path, "rb")) == NULL) {
		ok(0, "foreign: a snapshot file to try (%s)", err);
		unbuild(&img);
		return;
	}
	blob.len = (size_t)sb.st_size;
	blob.p = malloc(blob.len);
	if (fread(blob.p, 1, blob.len, f) != blob.len)
		blob.len = 0;
	fclose(f);
	refused(&blob, 1, 0, "not a seend dump", "foreign: a snapshot file");
	free(blob.p);
	unbuild(&img);
}

/* The header chunk of a; payload field at off set to v (width 4 or 8),
 * resealed, so that only the field's value is wrong. */
static void
bad_header(const struct dump *a, size_t off, int width, uint64_t v,
    const char *want, const char *what)
{
	struct blob c = copy_blob(a->c[0].p, a->c[0].len);

	if (width == 4)
		put32(c.p + off, (uint32_t)v);
	else
		put64(c.p + off, v);
	reseal(&c);
	refused(&c, 1, 0, want, what);
	free(c.p);
}

#define HP(x)		(64 + (x))
#define SE(i, x)	(64 + 128 + 64 * (i) + (x))

/* Headers that lie, checksum and all: refused before any allocation
 * (every check is made before alloc_arrays). */
static void
test_hostile_header(void)
{
	struct image	 img;
	struct dump	 a;
	struct blob	 c;

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &a);
	bad_header(&a, HP(4), 4, 0, "for 0 slices",
	    "header: 0 slices with a table of 3");
	bad_header(&a, HP(4), 4, SNAPSHOT_MAX_SLICES + 1,
	    "bad slice count 4097", "header: 4097 slices");
	bad_header(&a, HP(4), 4, 2, "for 2 slices",
	    "header: a table longer than its slice count");
	bad_header(&a, HP(4), 4, 4, "for 4 slices",
	    "header: a table shorter than its slice count");
	bad_header(&a, SE(0, 0), 8, 1ULL << 40, "bad block count",
	    "header: 2^40 blocks");
	bad_header(&a, SE(0, 0), 8, BLOOM_MAX_BYTES / BLOOM_BLOCK_BYTES,
	    "the header says 6784 bytes",
	    "header: a 1 TiB slice the total does not add up to");
	bad_header(&a, HP(64), 8, 6784 + 64, "the header says 6848 bytes",
	    "header: a total one block too large");
	bad_header(&a, HP(64), 8, UINT64_MAX, "the header says",
	    "header: a total of 2^64-1");
	bad_header(&a, SE(1, 8), 4, 5, "bad hash count 5", "header: 5 hashes");
	bad_header(&a, SE(2, 24), 8, 0x3ff8000000000000ULL, "slice 2: bad",
	    "header: a slice's error rate 1.5");
	bad_header(&a, SE(1, 48), 8, UINT64_MAX, "slice 1: bad",
	    "header: a start time of -1");
	bad_header(&a, SE(1, 40), 8, 5 * 512 + 1, "slice 1: bad",
	    "header: more bits set than a slice has");
	bad_header(&a, SE(0, 60), 4, 7, "slice 0: not merged but with a seed",
	    "header: an own slice's seed field (once reserved)");
	bad_header(&a, SE(1, 12), 4, 4, "slice 1: bad flags 0x4",
	    "header: an own slice's flags field (once reserved)");
	bad_header(&a, HP(0), 4, 5, "unknown layout 5", "header: layout 5");
	/* a bloom dump relabelled a partitioned cuckoo filter's */
	bad_header(&a, HP(0), 4, 4, "cuckoo", "header: layout 4");
	/* a partitioned filter's: its slices are not cut in slots */
	bad_header(&a, HP(0), 4, 3, "slice 0: 37 blocks, not a multiple of "
	    "16384", "header: layout 3");
	/* a bloom dump relabelled cuckoo (layout 2) is no cuckoo filter: a
	 * window, or 4 or 8-bit "fingerprints" */
	bad_header(&a, HP(0), 4, 2, "cuckoo", "header: layout 2");
	bad_header(&a, HP(12), 4, 2, "bad normalize 2", "header: normalize 2");
	bad_header(&a, HP(8), 4, 5000, "bad growth", "header: growth 5000");
	bad_header(&a, HP(32), 8, 0, "bad capacity",
	    "header: the filter's error rate 0");
	bad_header(&a, HP(40), 8, img.im.count + 1, "counts",
	    "header: a count the slices do not add up to");
	bad_header(&a, HP(100), 4, 1, "reserved", "header: reserved bytes");
	bad_header(&a, 28, 4, 1, "cannot carry", "header: 1 chunk");
	bad_header(&a, 28, 4, 6786, "cannot carry",
	    "header: more chunks than bytes");
	bad_header(&a, 16, 8, 0, "dump id 0", "header: dump id 0");
	bad_header(&a, 12, 4, 3, "unknown kind 3", "header: kind 3");
	bad_header(&a, 24, 4, 1, "header chunk at index 1",
	    "header: a header chunk at index 1");

	/* a header chunk shorter than its fixed part, length and all */
	c = copy_blob(a.c[0].p, 64 + 100);
	put64(c.p + 40, 100);
	reseal(&c);
	refused(&c, 1, 0, "need at least 128", "header: 100 payload bytes");
	free(c.p);
	c = copy_blob(a.c[0].p, a.c[0].len);
	put64(c.p + 40, DUMP_CHUNK_MAX);
	refused(&c, 1, 0, "more than a chunk holds",
	    "header: a payload length past DUMP_CHUNK_MAX");
	free(c.p);
	drop_dump(&a);
	unbuild(&img);
}

/*
 * Merged slices (MERGE): their flag and seed travel in the slice entry as
 * in a version 3 snapshot, they load with their own seed, and they must
 * come after the filter's own; a dump of none has those fields zero, as
 * before MERGE.
 */
static void
test_merged(void)
{
	struct image		 img;
	struct dump		 a;
	struct dump_load	*l = NULL;
	struct blob		 c;
	size_t			 sizes[2] = { SMALL, 0 };
	int			 at, complete, fields = 1;
	char			 what[64];

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &a);
	for (uint32_t i = 0; i < 3; i++)
		fields &= get64(a.c[0].p + SE(i, 8)) >> 32 == 0 &&
		    get64(a.c[0].p + SE(i, 56)) == 0;
	ok(fields, "merged: none, every entry's flags and seed zero");
	drop_dump(&a);
	unbuild(&img);

	build_merged(&img, 4, 2);
	for (int k = 0; k < 2; k++) {
		snprintf(what, sizeof(what), "merged: 2 own + 2 merged, %s "
		    "chunks", k == 0 ? "1000-byte" : "default");
		make_dump(&img.im, ID_A, sizes[k], &a);
		at = feed(a.c, a.n, &l, &complete);
		ok(at == -1 && complete, "%s: %u chunks load (%s)", what, a.n,
		    at == -1 ? "ok" : err);
		if (at == -1) {
			struct dump_image *got = dump_load_image(l);

			check_same(&img.im, got, what);
			ok(!got->slices[1].merged && got->slices[2].merged &&
			    got->slices[3].merged &&
			    got->slices[2].seed == MSEED[2] &&
			    got->slices[3].bloom.seed == MSEED[3],
			    "%s: slices 2 and 3 merged, with their seeds",
			    what);
		}
		dump_load_free(l);
		l = NULL;
		if (k == 0) {
			fields = 1;
			for (uint32_t i = 0; i < 4; i++)
				fields &= get64(a.c[0].p + SE(i, 8)) >> 32 ==
				    (i >= 2) && get64(a.c[0].p + SE(i, 56)) ==
				    (i >= 2 ? MSEED[i] : 0);
			ok(fields, "merged: flags (+12) and seeds (+56) as "
			    "dump.h says");
			bad_header(&a, SE(0, 12), 4, 2, "slice 0: bad flags "
			    "0x2 (only bit 0, merged, is defined)",
			    "merged: flags 2 on an own slice");
			bad_header(&a, SE(3, 12), 4, 3, "slice 3: bad flags 0x3",
			    "merged: flags 3 on a merged slice");
			bad_header(&a, SE(2, 12), 4, 0x80000001u,
			    "slice 2: bad flags 0x80000001",
			    "merged: flags with the top bit");
			bad_header(&a, SE(1, 56), 8, 42, "slice 1: not merged "
			    "but with a seed (0x000000000000002a)",
			    "merged: an own slice with a seed");
			bad_header(&a, SE(0, 12), 4, 1, "slice 1: the filter's "
			    "own after merged slice 0 (merged slices come "
			    "last)", "merged: a merged slice before an own "
			    "one");
			/* the last slice made own again, flag and seed */
			c = copy_blob(a.c[0].p, a.c[0].len);
			put32(c.p + SE(3, 12), 0);
			put64(c.p + SE(3, 56), 0);
			reseal(&c);
			refused(&c, 1, 0, "slice 3: the filter's own after "
			    "merged slice 2", "merged: an own slice last");
			free(c.p);
			/* a merged slice of seed 0 is a merged slice */
			c = copy_blob(a.c[0].p, a.c[0].len);
			put64(c.p + SE(2, 56), 0);
			reseal(&c);
			l = dump_load_start(c.p, c.len, 0, err, sizeof(err));
			ok(l != NULL && dump_load_image(l)->slices[2].merged &&
			    dump_load_image(l)->slices[2].bloom.seed == 0,
			    "merged: a merged slice of seed 0 starts (%s)",
			    l == NULL ? err : "ok");
			dump_load_free(l);
			l = NULL;
			free(c.p);
		}
		drop_dump(&a);
	}
	/* the writer makes no dump a loader would refuse */
	img.sl[3].merged = 0;
	img.sl[3].seed = 0;
	ok(dump_chunk_count(&img.im, SMALL) == 0 &&
	    dump_chunk(&img.im, ID_A, SMALL, 0, scratch) == 0,
	    "merged: an image with an own slice after a merged one makes no "
	    "dump");
	img.sl[3].merged = 1;
	unbuild(&img);

	/* a window whose only slice is merged */
	build_merged(&img, 1, 1);
	make_dump(&img.im, ID_B, 0, &a);
	at = feed(a.c, a.n, &l, &complete);
	ok(at == -1 && complete && dump_load_image(l)->slices[0].merged,
	    "merged: one merged slice and no own round-trips (%s)",
	    at == -1 ? "ok" : err);
	if (at == -1)
		check_same(&img.im, dump_load_image(l), "merged: alone");
	dump_load_free(l);
	drop_dump(&a);
	unbuild(&img);
}

/* Bits chunks that lie, checksum and all. */
static void
test_hostile_bits(void)
{
	struct image	 img;
	struct dump	 a;
	struct blob	 keep;

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &a);

	keep = a.c[2];
	a.c[2] = copy_blob(keep.p, keep.len);
	put64(a.c[2].p + 32, 1999);
	reseal(&a.c[2]);
	refused(a.c, a.n, 2, "at offset 1999 where 1000", "bits: wrong offset");
	put64(a.c[2].p + 32, 1000);
	put32(a.c[2].p + 28, 9);
	reseal(&a.c[2]);
	refused(a.c, a.n, 2, "counts 9 chunks", "bits: wrong chunk count");
	put32(a.c[2].p + 28, 8);
	put32(a.c[2].p + 12, DUMP_KIND_HEADER);
	reseal(&a.c[2]);
	refused(a.c, a.n, 2, "not bits", "bits: a header kind at index 2");
	put32(a.c[2].p + 12, DUMP_KIND_BITS);
	a.c[2].len--;
	put64(a.c[2].p + 40, 999);
	reseal(&a.c[2]);
	refused(a.c, a.n, 2, "holds 999 bytes where 1000",
	    "bits: a middle chunk one byte short");
	free(a.c[2].p);
	a.c[2] = keep;

	keep = a.c[1];
	a.c[1] = copy_blob(keep.p, 64 + 500);
	put64(a.c[1].p + 40, 500);
	reseal(&a.c[1]);
	refused(a.c, a.n, 1, "in the 8 chunks",
	    "bits: chunk 1 of a size that makes another count");
	free(a.c[1].p);
	a.c[1] = keep;

	keep = a.c[a.n - 1];
	a.c[a.n - 1] = copy_blob(keep.p, keep.len);
	a.c[a.n - 1].p = realloc(a.c[a.n - 1].p, keep.len + 1);
	a.c[a.n - 1].p[a.c[a.n - 1].len++] = 0xff;
	put64(a.c[a.n - 1].p + 40, keep.len + 1 - 64);
	reseal(&a.c[a.n - 1]);
	refused(a.c, a.n, (int)a.n - 1, "holds 785 bytes where 784",
	    "bits: a last chunk one byte past the total");
	free(a.c[a.n - 1].p);
	a.c[a.n - 1] = keep;
	refused(a.c, a.n, -1, NULL, "bits: all restored, the dump loads");
	drop_dump(&a);
	unbuild(&img);
}

/*
 * Keys added while the dump is read: every key acknowledged before it
 * began is loaded; the slices' entries keep the counts taken at the
 * start, and each bloom's bits_set counts the bits that arrived.
 */
static void
test_live(void)
{
	struct image		 img;
	struct dump		 d;
	struct dump_load	*l = NULL;
	struct dump_image	*got;
	struct snapshot_slice	*taken;
	uint32_t		 missing = 0;
	int			 at, complete;

	build(&img, 3);
	d.n = dump_chunk_count(&img.im, SMALL);
	d.c = calloc(d.n, sizeof(*d.c));
	for (uint32_t i = 0; i < d.n; i++) {
		if (i == 3)	/* halfway: more keys in every slice */
			for (uint32_t s = 0; s < 3; s++)
				add_keys(&img.sl[s].bloom, "late", s, 50);
		d.c[i] = copy_blob(scratch, dump_chunk(&img.im, ID_A, SMALL,
		    i, scratch));
	}
	at = feed(d.c, d.n, &l, &complete);
	ok(at == -1 && complete, "live: a dump read while keys are added "
	    "loads (%s)", at == -1 ? "ok" : err);
	if (at != -1) {
		drop_dump(&d);
		unbuild(&img);
		return;
	}
	got = dump_load_image(l);
	for (uint32_t s = 0; s < 3; s++)
		missing += missing_keys(&got->slices[s].bloom, "k", s,
		    NKEYS[s]);
	ok(missing == 0, "live: every key from before the dump (%u missing)",
	    missing);
	/* slice 2's chunks were all read after the late keys */
	ok(missing_keys(&got->slices[2].bloom, "late", 2, 50) == 0 &&
	    got->slices[2].bloom.bits_set > got->slices[2].bits_set &&
	    got->slices[2].bloom.bits_set ==
	    bloom_popcount(&got->slices[2].bloom),
	    "live: late keys read later are there, bits_set counts them");
	ok(got->slices[2].count == img.sl[2].count &&
	    got->slices[2].bloom.count == img.sl[2].count,
	    "live: counts are those taken at the start");

	/* the slices may be taken: the load then frees only itself */
	taken = got->slices;
	got->slices = NULL;
	dump_load_free(l);
	ok(taken[0].bloom.words != NULL && missing_keys(&taken[0].bloom, "k",
	    0, NKEYS[0]) == 0, "live: taken slices outlive their load");
	snapshot_slices_free(taken, 3);
	drop_dump(&d);
	unbuild(&img);
}

/* ---- the fuzzer's seeds: a split length (0: each chunk's own), then
 * the chunks end to end ---- */

static void
write_seed(const char *out, const char *name, uint16_t split,
    const struct dump *d, int flip)
{
	char	 path[600];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", out, name);
	if ((f = fopen(path, "wb")) == NULL) {
		perror(path);
		exit(2);
	}
	fputc(split & 0xff, f);
	fputc(split >> 8, f);
	for (uint32_t i = 0; i < d->n; i++) {
		if (flip && i == 2)
			d->c[i].p[d->c[i].len / 2] ^= 1;
		fwrite(d->c[i].p, 1, d->c[i].len, f);
		if (flip && i == 2)
			d->c[i].p[d->c[i].len / 2] ^= 1;
	}
	if (fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

static void
write_corpus(const char *out)
{
	struct image	img;
	struct dump	d;

	build(&img, 1);
	/* header chunk 64 + 192 bytes: bits chunks of 192 make every
	 * chunk but the last 256 bytes, so a split of 256 finds them */
	make_dump(&img.im, ID_A, 192, &d);
	write_seed(out, "one-slice-split256", 256, &d, 0);
	write_seed(out, "one-slice-own", 0, &d, 0);
	write_seed(out, "one-slice-damaged", 0, &d, 1);
	d.n = 1;
	write_seed(out, "header-only", 0, &d, 0);
	d.n = dump_chunk_count(&img.im, 192);
	drop_dump(&d);
	unbuild(&img);
	build(&img, 3);
	make_dump(&img.im, ID_B, SMALL, &d);
	write_seed(out, "three-slices-own", 0, &d, 0);
	drop_dump(&d);
	unbuild(&img);
	build_merged(&img, 4, 2);
	make_dump(&img.im, ID_B, SMALL, &d);
	write_seed(out, "four-slices-2-merged", 0, &d, 0);
	drop_dump(&d);
	unbuild(&img);
	/* layout 3: a slot-major window of no slice (a whole dump: a slice
	 * is a MiB at least, too big a seed), and one slice of 37 blocks
	 * relabelled layout 3, refused */
	build(&img, 0);
	img.im.slot_major = 1;
	make_dump(&img.im, ID_A, 0, &d);
	write_seed(out, "slot-major-header-only", 0, &d, 0);
	drop_dump(&d);
	build(&img, 1);
	make_dump(&img.im, ID_A, 192, &d);
	put32(d.c[0].p + HP(0), BLOOM_LAYOUT_SLOTS512);
	reseal(&d.c[0]);
	write_seed(out, "slot-major-bad-nblocks", 0, &d, 0);
	drop_dump(&d);
	unbuild(&img);
}

static void
cleanup(void)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/snap%s", dir, SNAPSHOT_SUFFIX);
	(void)unlink(path);
	(void)rmdir(dir);
}

/* A window with no slice dumps as its header alone; a load bigger than
 * max_bytes is refused before anything is allocated; chunk lengths are
 * known before the chunks are written. */
static void
test_empty_and_bounded(void)
{
	struct image		 img;
	struct dump		 a;
	struct dump_load	*l;
	uint64_t		 total;
	int			 lens_ok = 1;

	build(&img, 0);
	make_dump(&img.im, ID_A, SMALL, &a);
	ok(a.n == 1, "an image of no slice is one chunk (got %u)", a.n);
	l = a.n == 1 ? dump_load_start(a.c[0].p, a.c[0].len, 0, err,
	    sizeof(err)) : NULL;
	ok(l != NULL && dump_load_complete(l) &&
	    dump_load_image(l)->nslices == 0 &&
	    dump_load_image(l)->expire_ms == 3600000,
	    "it loads complete from its header chunk, window kept (%s)",
	    l == NULL ? err : "");
	dump_load_free(l);
	drop_dump(&a);

	build(&img, 3);
	make_dump(&img.im, ID_A, SMALL, &a);
	total = dump_bits_bytes(&img.im);
	for (uint32_t i = 0; i < a.n; i++)
		lens_ok &= dump_chunk_len(&img.im, SMALL, i) == a.c[i].len;
	ok(lens_ok && dump_chunk_len(&img.im, SMALL, a.n) == 0,
	    "dump_chunk_len gives every chunk's length, 0 past the last");
	l = dump_load_start(a.c[0].p, a.c[0].len, total - 1, err, sizeof(err));
	ok(l == NULL && strstr(err, "more than max_memory leaves") != NULL,
	    "a dump one byte over max_bytes is refused (%s)", err);
	l = dump_load_start(a.c[0].p, a.c[0].len, total, err, sizeof(err));
	ok(l != NULL && !dump_load_complete(l),
	    "one exactly at max_bytes starts, not complete yet");
	dump_load_free(l);
	drop_dump(&a);
	unbuild(&img);
}

/* ---- layout 3: a filter partitioned by slot ---- */

/* 7 MiB a slice: 3 make more than the load's populate threshold (16
 * MiB), each below bloom_init's huge pages (8 MiB), so that residency is
 * counted in small pages. */
#define SM_BLOCKS	((uint64_t)KEYSLOT_COUNT * 7)
#define SM_N		3
#define SM_KEYS		3000

/* The slot of key i of slice s: 100 slots a slice, in different parts. */
static unsigned
sm_slot(uint32_t s, uint32_t i)
{
	return s * 5000 + i % 100;
}

static uint64_t
sm_hash(const struct bloom *b, uint32_t s, uint32_t i)
{
	char k[96];

	key(k, sizeof(k), "sm", s, i);
	return (uint64_t)sm_slot(s, i) << (64 - KEYSLOT_BITS) |
	    (bloom_hash(b, k, strlen(k)) & (UINT64_MAX >> KEYSLOT_BITS));
}

static void
sm_build(struct image *img, uint64_t nblocks)
{
	build(img, 0);
	for (uint32_t s = 0; s < SM_N; s++) {
		struct snapshot_slice *sl = &img->sl[s];

		if (bloom_init(&sl->bloom, nblocks, 8, SEED) == -1) {
			perror("bloom_init");
			exit(2);
		}
		for (uint32_t i = 0; i < SM_KEYS; i++)
			bloom_add(&sl->bloom, sm_hash(&sl->bloom, s, i));
		sl->capacity = 1000;
		sl->error_rate = 0.01;
		sl->count = sl->bloom.count;
		sl->bits_set = sl->bloom.bits_set;
		img->im.count += sl->count;
	}
	img->im.nslices = SM_N;
	img->im.slot_major = 1;
}

static long
resident_pages(const void *p, size_t len)
{
	size_t		 page = (size_t)sysconf(_SC_PAGESIZE);
	size_t		 n = (len + page - 1) / page;
	unsigned char	*vec = malloc(n);
	long		 in = 0;

	if (vec == NULL || mincore((void *)p, len, vec) == -1) {
		free(vec);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}

static long
set_pages(const struct bloom *b)
{
	size_t			 page = (size_t)sysconf(_SC_PAGESIZE);
	const unsigned char	*p = (const unsigned char *)b->words;
	long			 n = 0;

	for (size_t off = 0; off < bloom_bytes(b); off += page)
		for (size_t i = 0; i < page; i++)
			if (p[off + i] != 0) {
				n++;
				break;
			}
	return n;
}

/* Dumped and loaded with chunks of payload bytes: layout 3 in the
 * header, slot_major back, the arrays and keys, and only the pages
 * with bits resident in the loaded arrays. */
static void
sm_round_trip(size_t payload, const char *what)
{
	struct image		 img;
	struct dump		 d;
	struct dump_load	*l = NULL;
	struct dump_image	*got;
	long			 want = 0, in = 0;
	uint32_t		 bad = 0, missing = 0;
	int			 at, complete;

	sm_build(&img, SM_BLOCKS);
	for (uint32_t s = 0; s < SM_N; s++)
		want += set_pages(&img.sl[s].bloom);
	make_dump(&img.im, ID_A, payload, &d);
	ok(d.n > 1 && get32(d.c[0].p + HP(0)) == BLOOM_LAYOUT_SLOTS512,
	    "%s: %u chunks, the header's layout 3", what, d.n);
	at = feed(d.c, d.n, &l, &complete);
	ok(at == -1 && complete, "%s: loads (%s)", what, at == -1 ? "ok" :
	    err);
	if (at != -1) {
		drop_dump(&d);
		unbuild(&img);
		return;
	}
	got = dump_load_image(l);
	/* before anything reads the arrays (a read maps the zero page) */
	for (uint32_t s = 0; s < got->nslices; s++)
		in += resident_pages(got->slices[s].bloom.words,
		    bloom_bytes(&got->slices[s].bloom));
	/* at most: a page may have left memory since (swap) */
	ok(in <= want, "%s: only the %ld pages with bits are resident (%ld "
	    "of %llu)", what, want, in, (unsigned long long)(SM_N *
	    SM_BLOCKS * BLOOM_BLOCK_BYTES / 4096));
	ok(got->slot_major == 1 && !got->cuckoo && got->nslices == SM_N &&
	    got->count == img.im.count, "%s: slot_major back, counts", what);
	for (uint32_t s = 0; s < got->nslices; s++) {
		const struct bloom *b = &got->slices[s].bloom;

		if (b->nblocks != SM_BLOCKS || memcmp(b->words,
		    img.sl[s].bloom.words, bloom_bytes(b)) != 0 ||
		    b->bits_set != img.sl[s].bits_set)
			bad++;
		for (uint32_t i = 0; i < SM_KEYS; i++)
			if (!bloom_check(b, sm_hash(b, s, i)))
				missing++;
	}
	ok(bad == 0 && missing == 0, "%s: arrays identical (%u differ), "
	    "every key there (%u missing)", what, bad, missing);
	dump_load_free(l);
	drop_dump(&d);
	unbuild(&img);
}

static void
test_slot_major(void)
{
	struct image	img;
	struct dump	a;

	sm_round_trip(0, "slot-major, default chunks");
	sm_round_trip(1000003, "slot-major, chunks across pages");
	sm_round_trip(4096 * 3 + 7, "slot-major, small odd chunks");

	/* not cut in slots: not dumped, and a dump saying so refused */
	sm_build(&img, 1000);
	ok(dump_chunk_count(&img.im, 0) == 0 &&
	    dump_chunk(&img.im, ID_A, 0, 0, scratch) == 0,
	    "slot-major of 1000 blocks: no chunk written");
	img.im.slot_major = 0;
	make_dump(&img.im, ID_A, 0, &a);
	bad_header(&a, HP(0), 4, BLOOM_LAYOUT_SLOTS512, "slice 0: 1000 "
	    "blocks, not a multiple of 16384",
	    "layout 3 of 1000 blocks a slice");
	drop_dump(&a);
	unbuild(&img);
}

int
main(void)
{
	const char *corpus = getenv("DUMP_CORPUS_DIR");

	if ((scratch = malloc(DUMP_CHUNK_MAX)) == NULL ||
	    mkdtemp(dir) == NULL) {
		perror("test_dump");
		return 2;
	}
	if (corpus != NULL) {
		write_corpus(corpus);
		free(scratch);
		cleanup();
		return 0;
	}
	test_round_trips();
	test_layout();
	test_exact_arrays();
	test_huge_counts();
	test_flips();
	test_sequence();
	test_foreign();
	test_hostile_header();
	test_hostile_bits();
	test_merged();
	test_live();
	test_empty_and_bounded();
	test_slot_major();
	free(scratch);
	cleanup();
	return done_testing();
}
