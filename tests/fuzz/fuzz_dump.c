/*
 * fuzz_dump.c - libFuzzer target for loading a dump (dump.h) chunk by
 * chunk, as BF.LOADCHUNK does.
 *
 * Input: a split length (2 bytes, little-endian), then the chunks end to
 * end. A split of 0 cuts the rest where each chunk's own payload length
 * says (so a valid dump loads whole); any other split cuts it into pieces
 * of that many bytes. The first piece goes to dump_load_start, the others
 * to dump_load_add until one is refused.
 *
 * Checked beyond "no crash, no read past the input" (ASan): every refusal
 * has a "bad dump chunk: " message; nothing is taken after the load is
 * complete or refused; and a load that completes holds what the chunks
 * said: written again with the same id and chunk size, it gives the same
 * chunks byte for byte (so no field is dropped or bent on the way in).
 *
 * A mutated chunk almost never passes its checksum, so each input is also
 * tried with every piece's checksum recomputed, which lets hostile headers
 * and offsets reach the checks behind it.
 *
 * Seeds in tests/fuzz/corpus/dump come from
 *   DUMP_CORPUS_DIR=tests/fuzz/corpus/dump tests/unit/test_dump
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

#define PREFIX	"bad dump chunk: "

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static unsigned char *out;	/* DUMP_CHUNK_MAX, for the rewrite */

struct piece {
	const uint8_t	*p;
	size_t		 len;
};

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* The next piece of data[*at..size). */
static struct piece
next_piece(const uint8_t *data, size_t size, size_t *at, size_t split)
{
	struct piece	pc = { data + *at, size - *at };
	uint64_t	own;

	if (split != 0 && pc.len > split)
		pc.len = split;
	else if (split == 0 && pc.len >= DUMP_CHUNK_HEADER) {
		own = le64(pc.p + 40);
		if (own <= pc.len - DUMP_CHUNK_HEADER)
			pc.len = DUMP_CHUNK_HEADER + (size_t)own;
	}
	*at += pc.len;
	return pc;
}

static void
refused(const char *err)
{
	if (strncmp(err, PREFIX, strlen(PREFIX)) != 0)
		abort();
}

/* A complete load, written again, gives the chunks it was given. */
static void
rewrite(struct dump_load *l, const struct piece *pcs, uint32_t n)
{
	struct dump_image	*im = dump_load_image(l);
	uint64_t		 id = le64(pcs[0].p + 16);
	size_t			 size = n > 1 ? pcs[1].len - DUMP_CHUNK_HEADER : 0;
	size_t			 len;

	if (dump_chunk_count(im, size) != n)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		len = dump_chunk(im, id, size, i, out);
		if (len != pcs[i].len || memcmp(out, pcs[i].p, len) != 0)
			abort();
	}
	for (uint32_t i = 0; i < im->nslices; i++)
		(void)bloom_check(&im->slices[i].bloom,
		    bloom_hash(&im->slices[i].bloom, "x", 1));
}

/* Loads data[0..size) cut into pieces; pieces go to pcs (room for max). */
static void
load(const uint8_t *data, size_t size, size_t split, struct piece *pcs,
    uint32_t max)
{
	struct dump_load	*l;
	char			 err[512];
	size_t			 at = 0;
	uint32_t		 n = 0;
	int			 rc = 0;

	if (size == 0)
		return;
	pcs[n++] = next_piece(data, size, &at, split);
	err[0] = '\0';
	if ((l = dump_load_start(pcs[0].p, pcs[0].len, 0, err,
	    sizeof(err))) == NULL) {
		refused(err);
		return;
	}
	/* a dump of no slice is complete with its header */
	if (dump_load_complete(l))
		rc = 1;
	while (at < size && n < max && rc == 0) {
		pcs[n] = next_piece(data, size, &at, split);
		rc = dump_load_add(l, pcs[n].p, pcs[n].len, err, sizeof(err));
		n++;
		if (rc == -1)
			refused(err);
	}
	if (rc == 1)
		rewrite(l, pcs, n);
	/* complete or refused, the load takes nothing more */
	if (rc != 0 && dump_load_add(l, pcs[0].p, pcs[0].len, err,
	    sizeof(err)) != -1)
		abort();
	dump_load_free(l);
}

/* Every piece's checksum recomputed over what the piece holds. */
static void
reseal(uint8_t *data, size_t size, size_t split)
{
	XXH3_state_t	st;
	struct piece	pc;
	size_t		at = 0;
	uint64_t	sum;

	while (at < size) {
		uint8_t *p = data + at;

		pc = next_piece(data, size, &at, split);
		if (pc.len < DUMP_CHUNK_HEADER)
			break;
		XXH3_INITSTATE(&st);
		(void)XXH3_64bits_reset(&st);
		(void)XXH3_64bits_update(&st, p, 48);
		(void)XXH3_64bits_update(&st, p + DUMP_CHUNK_HEADER,
		    pc.len - DUMP_CHUNK_HEADER);
		sum = XXH3_64bits_digest(&st);
		for (int i = 0; i < 8; i++)
			p[48 + i] = (uint8_t)(sum >> (8 * i));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct piece	*pcs;
	uint8_t		*copy;
	size_t		 split;
	uint32_t	 max;

	if (size < 2)
		return 0;
	if (out == NULL && (out = malloc(DUMP_CHUNK_MAX)) == NULL)
		return 0;
	split = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	/* a piece is at least a byte: never more pieces than bytes */
	max = size < 65536 ? (uint32_t)size + 1 : 65537;
	if ((pcs = calloc(max, sizeof(*pcs))) == NULL)
		return 0;
	load(data, size, split, pcs, max);
	if (size > 0 && (copy = malloc(size)) != NULL) {
		memcpy(copy, data, size);
		reseal(copy, size, split);
		load(copy, size, split, pcs, max);
		free(copy);
	}
	free(pcs);
	return 0;
}
