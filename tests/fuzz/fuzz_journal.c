/*
 * fuzz_journal.c - libFuzzer target for journal replay: the input is one
 * segment file, handed over in a memfd so replay runs its real fstat/pread
 * path, read once as the last segment (a torn tail allowed) and once as an
 * earlier one (no torn tail allowed).
 *
 * Checked beyond "no crash, no read past the input" (ASan): the outcome is
 * one of success, success with a torn tail that lies inside the file, or
 * damage with a message; a segment accepted as an earlier one is accepted
 * as the last with the same keys; never more keys than 8-byte hashes fit.
 * Every version: the seeds hold version 1 segments (seend 0.x's 'N', 'T'
 * and 'K' records), version 2 ones ('N' and 'B' key batches), version
 * 3 ones (batches and 'E' resets) and version 4 ones (also 'f' forget
 * and 'a' copy batches, laid out as 'B'). A reset counts as a record
 * too, and its name must be 1 to 64 bytes like a key's.
 *
 * The records after the header are also replayed from memory, as a
 * replica applies a turn of the replication stream (journal_replay_mem,
 * which also reads 'o' offset and 'u' deadline records).
 *
 * A mutated file almost never passes its checksums, so each input is also
 * tried with every checksum recomputed (a batch's body and header sums
 * included), which lets hostile record contents (ids, names, times,
 * counts, order) reach the record handling.
 *
 * Seeds in tests/fuzz/corpus/journal come from
 *   JOURNAL_CORPUS_DIR=tests/fuzz/corpus/journal tests/unit/test_journal
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
count(void *arg, const struct journal_key *k, char *err, size_t errlen)
{
	uint64_t *n = arg;

	(void)err;
	(void)errlen;
	if (k->repl) {
		/* a replica's offset: no name, an id of 40 characters */
		if (k->namelen != 0 || memchr(k->replid, '\0', 40) != NULL)
			abort();
		(*n)++;
		return 0;
	}
	if (k->namelen == 0 || k->namelen > JOURNAL_NAME_MAX ||
	    k->op < JOURNAL_OP_NEW || k->op > JOURNAL_OP_COPY ||
	    (k->reset && k->op != JOURNAL_OP_NEW))
		abort();
	(*n)++;
	return 0;
}

static void
replay(const uint8_t *data, size_t size)
{
	struct journal_replay_info	 last, mid;
	uint64_t			 nlast = 0, nmid = 0;
	char				 err[8192];
	size_t				 off = 0;
	ssize_t				 n;
	int				 fd, rlast, rmid;

	if ((fd = memfd_create("fuzz_journal", MFD_CLOEXEC)) == -1)
		return;
	while (off < size) {
		if ((n = write(fd, data + off, size - off)) <= 0) {
			close(fd);
			return;
		}
		off += (size_t)n;
	}
	memset(&last, 0, sizeof(last));
	memset(&mid, 0, sizeof(mid));
	err[0] = '\0';
	rlast = journal_replay_fd(fd, "fuzz", UINT64_MAX, 1, count, &nlast,
	    &last, err, sizeof(err));
	if (rlast == -1 && err[0] == '\0')
		abort();			/* damage without a message */
	if (rlast == 0 && last.torn &&
	    (last.torn_offset > size ||
	    last.torn_offset + last.torn_bytes != size))
		abort();			/* a tail outside the file */
	if (nlast > size / 8)
		abort();
	err[0] = '\0';
	rmid = journal_replay_fd(fd, "fuzz", UINT64_MAX, 0, count, &nmid,
	    &mid, err, sizeof(err));
	if (rmid == 0 && (mid.torn || rlast != 0 || last.torn ||
	    nmid != nlast))
		abort();			/* stricter read, other result */
	close(fd);
	/* the records after the header, as a replica reads a turn of the
	 * replication stream: whole, or damage with a message */
	if (size > JOURNAL_HEADER_SIZE) {
		uint64_t nmem = 0;

		err[0] = '\0';
		if (journal_replay_mem(data + JOURNAL_HEADER_SIZE,
		    size - JOURNAL_HEADER_SIZE, "fuzz", count, &nmem, err,
		    sizeof(err)) == -1 && err[0] == '\0')
			abort();
		if (nmem > size / 8)
			abort();
	}
}

/* The length of the record at p, avail bytes of it present; 0 unknown. */
static uint64_t
rec_len(const uint8_t *p, size_t avail)
{
	uint32_t count;

	switch (p[0]) {
	case JOURNAL_REC_NAME:
		return JOURNAL_NAME_SIZE;
	case JOURNAL_REC_TIME:
		return JOURNAL_TIME_SIZE;
	case JOURNAL_REC_KEY:
		return JOURNAL_KEY_SIZE;
	case JOURNAL_REC_RESET:
		return JOURNAL_RESET_SIZE;
	case JOURNAL_REC_CREATE:
		return JOURNAL_CREATE_SIZE;
	case JOURNAL_REC_DROP:
	case JOURNAL_REC_DEADLINE:
		return JOURNAL_DROP_SIZE;
	case JOURNAL_REC_OFFSET:
		return JOURNAL_OFFSET_SIZE;
	case JOURNAL_REC_BATCH:
	case JOURNAL_REC_FORGET:
	case JOURNAL_REC_COPY:
		if (avail < JOURNAL_BATCH_HEAD)
			return JOURNAL_BATCH_HEAD;
		count = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
		    (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		if (count > JOURNAL_BATCH_MAX)
			return 0;
		return JOURNAL_BATCH_HEAD + 8 * (uint64_t)count;
	}
	return 0;
}

/* The checksum of [p, p + len) into at. */
static void
put_sum(uint8_t *at, const uint8_t *p, size_t len)
{
	uint32_t sum = (uint32_t)XXH3_64bits(p, len);

	for (int i = 0; i < 4; i++)
		at[i] = (uint8_t)(sum >> (8 * i));
}

static void
seal(uint8_t *p, size_t len)
{
	if (p[0] == JOURNAL_REC_BATCH || p[0] == JOURNAL_REC_FORGET ||
	    p[0] == JOURNAL_REC_COPY) {
		put_sum(p + 16, p + JOURNAL_BATCH_HEAD,
		    len - JOURNAL_BATCH_HEAD);
		put_sum(p + 20, p, 20);
	} else
		put_sum(p + len - 4, p, len - 4);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t	*copy;
	size_t	 at, len;

	replay(data, size);
	if (size < JOURNAL_HEADER_SIZE || (copy = malloc(size)) == NULL)
		return 0;
	memcpy(copy, data, size);
	put_sum(copy + JOURNAL_HEADER_SIZE - 4, copy, JOURNAL_HEADER_SIZE - 4);
	for (at = JOURNAL_HEADER_SIZE; at < size; at += len) {
		if ((len = rec_len(copy + at, size - at)) == 0)
			break;
		if (at + len <= size)
			seal(copy + at, len);
	}
	replay(copy, size);
	free(copy);
	return 0;
}
