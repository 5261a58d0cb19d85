/*
 * test_backlog.c - the replication backlog's ring (backlog.c) and the
 * stream's encoding in memory (journal_open_mem, journal_take,
 * journal_clear, journal_replay_mem): what a primary keeps and sends and
 * a replica reads back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "journal.h"
#include "tap.h"

/* Reads [o, end) out of b into out; returns the bytes read. */
static size_t
read_all(const struct backlog *b, uint64_t o, unsigned char *out, size_t max)
{
	const unsigned char	*p;
	size_t			 n, got = 0;

	while ((n = backlog_read(b, o, &p, max - got)) > 0) {
		memcpy(out + got, p, n);
		got += n;
		o += n;
	}
	return got;
}

static void
ring(void)
{
	struct backlog	 b;
	unsigned char	 in[10000], out[10000];
	size_t		 n;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	ok(backlog_init(&b, 4096, 100) == 0, "a backlog of 4096 bytes");
	ok(backlog_holds(&b, 100) && !backlog_holds(&b, 99) &&
	    !backlog_holds(&b, 101), "empty: only its start is held");
	backlog_append(&b, in, 1000);
	ok(b.first == 100 && b.end == 1100, "1000 bytes: 100 to 1100");
	n = read_all(&b, 600, out, sizeof(out));
	ok(n == 500 && memcmp(out, in + 500, 500) == 0,
	    "read from an offset inside");
	backlog_append(&b, in + 1000, 5000);
	ok(b.end == 6100 && b.first == 6100 - 4096,
	    "past its size the oldest bytes go");
	ok(!backlog_holds(&b, 1100) && backlog_holds(&b, b.first) &&
	    backlog_holds(&b, b.end), "what went is no longer held");
	n = read_all(&b, b.first, out, sizeof(out));
	ok(n == 4096 && memcmp(out, in + 6000 - 4096, 4096) == 0,
	    "across the ring's wrap, in order");
	backlog_append(&b, in, sizeof(in));
	n = read_all(&b, b.first, out, sizeof(out));
	ok(b.end == 16100 && n == 4096 &&
	    memcmp(out, in + sizeof(in) - 4096, 4096) == 0,
	    "an append longer than the ring keeps its last bytes");
	ok(backlog_resize(&b, 8192) == 0 && b.size == 8192 &&
	    b.first == 16100 - 4096 && b.end == 16100,
	    "grown: what it held stays");
	ok(backlog_resize(&b, 5000) == 0 && b.first == 16100 - 4096 &&
	    b.end == 16100 && read_all(&b, b.first, out, sizeof(out)) ==
	    4096, "shrunk to more than it holds: all of it stays");
	ok(backlog_resize(&b, 4096) == 0 && b.first == 16100 - 4096 &&
	    read_all(&b, b.first, out, sizeof(out)) == 4096 &&
	    memcmp(out, in + sizeof(in) - 4096, 4096) == 0,
	    "and in order");
	backlog_reset(&b, 777);
	ok(b.first == 777 && b.end == 777 && !backlog_holds(&b, 16100),
	    "reset: nothing held, the stream goes on from its offset");
	backlog_free(&b);
}

struct seen {
	int	 keys, creates, drops, resets, deadlines, offsets;
	uint64_t last_hash;
	int64_t	 deadline;
	uint64_t offset;
	char	 replid[41];
	char	 name[65];
};

static int
collect(void *arg, const struct journal_key *k, char *err, size_t errlen)
{
	struct seen *s = arg;

	(void)err;
	(void)errlen;
	if (k->repl) {
		s->offsets++;
		s->offset = k->repl_offset;
		memcpy(s->replid, k->replid, 40);
		return 0;
	}
	snprintf(s->name, sizeof(s->name), "%.*s", (int)k->namelen, k->name);
	if (k->create)
		s->creates++;
	else if (k->drop)
		s->drops++;
	else if (k->reset)
		s->resets++;
	else if (k->deadline) {
		s->deadlines++;
		s->deadline = k->deadline_ms;
	} else {
		s->keys++;
		s->last_hash = k->hash;
	}
	return 0;
}

static void
stream(void)
{
	struct journal		*j;
	struct journal_filter	 sh;
	struct seen		 s;
	const unsigned char	*p;
	unsigned char		*copy;
	char			 err[300];
	const char		*id = "0123456789abcdef0123456789abcdef01234567";
	size_t			 n, n2;

	j = journal_open_mem(4096, err, sizeof(err));
	ok(j != NULL, "an in-memory stream");
	memset(&sh, 0, sizeof(sh));
	sh.capacity = 1000;
	sh.error_rate = 0.01;
	ok(journal_append_create(j, "rt", 2, 42, &sh, 1) == 0,
	    "a creation");
	/* more keys than the buffer holds: it grows */
	for (uint64_t i = 1; i <= 2000; i++)
		if (journal_append(j, "rt", 2, 42, i, 5) == -1 &&
		    (journal_reserve(j, 1 << 16) == -1 ||
		    journal_append(j, "rt", 2, 42, i, 5) == -1))
			break;
	ok(journal_append_deadline(j, "rt", 2, 42, 1234567, 6) == 0,
	    "a deadline");
	ok(journal_append_drop(j, "rt", 2, 42, 7) == 0, "a drop");
	ok(journal_append_offset(j, id, 99) == 0, "an offset record");
	n = journal_take(j, &p);
	ok(n > 2000 * 8, "a turn's records: %zu bytes", n);
	memset(&s, 0, sizeof(s));
	ok(journal_replay_mem(p, n, "test", collect, &s, err, sizeof(err))
	    == 0, "they replay from memory: %s", err);
	ok(s.creates == 1 && s.keys == 2000 && s.last_hash == 2000 &&
	    s.deadlines == 1 && s.deadline == 1234567 && s.drops == 1 &&
	    s.offsets == 1 && s.offset == 99 && memcmp(s.replid, id, 40) == 0
	    && strcmp(s.name, "rt") == 0, "every record, in order");
	/* the next turn says its names again: it replays alone */
	journal_clear(j);
	ok(journal_append(j, "rt", 2, 42, 77, 8) == 0, "a key next turn");
	n2 = journal_take(j, &p);
	memset(&s, 0, sizeof(s));
	ok(journal_replay_mem(p, n2, "test", collect, &s, err, sizeof(err))
	    == 0 && s.keys == 1 && s.last_hash == 77,
	    "a turn replays without the turns before it");
	/* a turn cut short is damage, with a message */
	copy = malloc(n2);
	memcpy(copy, p, n2);
	err[0] = '\0';
	ok(journal_replay_mem(copy, n2 - 3, "test", collect, &s, err,
	    sizeof(err)) == -1 && err[0] != '\0', "a cut turn: %s", err);
	copy[n2 - 1] ^= 1;
	err[0] = '\0';
	ok(journal_replay_mem(copy, n2, "test", collect, &s, err,
	    sizeof(err)) == -1 && strstr(err, "checksum") != NULL,
	    "a flipped bit: %s", err);
	free(copy);
	journal_close(j);
}

int
main(void)
{
	ring();
	stream();
	return done_testing();
}
