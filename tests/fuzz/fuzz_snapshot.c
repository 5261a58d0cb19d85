/*
 * fuzz_snapshot.c - libFuzzer target for snapshot loading: the input is the
 * file, handed over in a memfd so the loader runs its real fstat/pread path.
 *
 * The loader checks the file size against the header before it allocates,
 * so a hostile header cannot make it map more than the input holds.
 *
 * The config side (capacity, error_rate) is taken from the input's own
 * header when it is small and sane, so that valid seeds get through the
 * parameter match and the whole load path runs; otherwise a fixed small
 * config is used. Big capacities are avoided because bloom_plan's cost
 * grows with them and would only make the fuzzer slow.
 *
 * Seeds in tests/fuzz/corpus/snapshot come from
 *   SNAPSHOT_CORPUS_DIR=tests/fuzz/corpus/snapshot tests/unit/test_snapshot
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bloom.h"
#include "cuckoo.h"
#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void
pick_config(const uint8_t *data, size_t size, uint64_t *cap, double *rate)
{
	uint64_t	 c, bits;
	double		 r;

	*cap = 1000;
	*rate = 0.01;
	if (size < 56)
		return;
	c = le64(data + 40);
	bits = le64(data + 48);
	memcpy(&r, &bits, sizeof(r));
	if (c >= 1 && c <= 100000 && r >= 1e-6 && r < 1)
		*cap = c, *rate = r;
}

/* Loads one candidate file through a memfd. */
static void
load(const uint8_t *data, size_t size, uint64_t cap, double rate)
{
	struct snapshot_header	 h;
	struct snapshot_slice	*sl = NULL;
	char			 err[512];
	size_t			 off = 0;
	ssize_t			 n;
	int			 fd;

	if ((fd = memfd_create("fuzz_snapshot", MFD_CLOEXEC)) == -1)
		return;
	while (off < size) {
		n = write(fd, data + off, size - off);
		if (n <= 0) {
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	/* versions 1 to 4, any number of slices */
	if (snapshot_load_slices_fd(fd, "fuzz", cap, rate, &h, &sl, err,
	    sizeof(err)) == 1) {
		/* every loaded slice must answer without crashing; a
		 * cuckoo table holds what its entry says (the loader
		 * recounts it) */
		for (uint32_t i = 0; i < h.nslices; i++) {
			struct cuckoo *c = &sl[i].cuckoo;

			if (!h.cuckoo) {
				(void)bloom_check(&sl[i].bloom,
				    bloom_hash(&sl[i].bloom, "x", 1));
				continue;
			}
			if (c->table == NULL || sl[i].bloom.words != NULL ||
			    c->count != sl[i].count ||
			    cuckoo_recount(c) != c->count)
				abort();
			(void)cuckoo_contains(c, cuckoo_hash(c, "x", 1));
		}
		snapshot_slices_free(sl, h.nslices);
	}
	(void)snapshot_verify_fd(fd, &h, err, sizeof(err));
	close(fd);
}

/*
 * Each input is tried as it is and, since a mutated file almost never
 * passes its checksum, once more with the trailer recomputed, so that the
 * parameter match and the success path see hostile headers too.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t		*copy;
	uint64_t	 cap, sum;
	double		 rate;

	pick_config(data, size, &cap, &rate);
	load(data, size, cap, rate);
	if (size < SNAPSHOT_HEADER_SIZE + 8 || (copy = malloc(size)) == NULL)
		return 0;
	memcpy(copy, data, size);
	sum = XXH3_64bits(copy, size - 8);
	for (int i = 0; i < 8; i++)
		copy[size - 8 + i] = (uint8_t)(sum >> (8 * i));
	load(copy, size, cap, rate);
	free(copy);
	return 0;
}
