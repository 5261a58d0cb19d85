/*
 * journal_bench.c - what the journal costs: journal_append per record on
 * the request path, and write + fdatasync per batch (the group commit of
 * journal = always) for batches of 1, 64 and 4096 records.
 *
 *   journal_bench [dir [seconds]]     default: /var/tmp, 2 s per batch size
 *
 * dir should be on the disk data_dir will use: an fsync there is what the
 * always mode pays once per event-loop turn. A fresh directory is made
 * under dir and removed at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "journal.h"

#define APPENDS		(1u << 21)	/* per append run: 32 MiB of records */
#define TURN		4096		/* appends between two writes */
#define T0		1700000000ULL

static char	 err[8192];

static void
die(const char *what)
{
	fprintf(stderr, "journal_bench: %s: %s\n", what, err);
	exit(1);
}

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* ns per journal_append, keys spread over nnames filters. */
static double
bench_append(struct journal *j, unsigned nnames)
{
	char		 names[1024][16];
	size_t		 lens[1024];
	double		 t, best = 1e9;

	for (unsigned n = 0; n < nnames; n++)
		lens[n] = (size_t)snprintf(names[n], sizeof(names[n]),
		    "filter-%u", n);
	for (int run = 0; run < 3; run++) {
		double spent = 0;

		/* as the loop does: a turn's appends, then one write (not
		 * timed), so the buffer stays in cache */
		for (uint32_t i = 0; i < APPENDS; ) {
			t = now();
			for (uint32_t end = i + TURN; i < end; i++) {
				unsigned n = nnames == 1 ? 0 :
				    (unsigned)(mix(i) % nnames);

				/* a new second every 100000 keys */
				if (journal_append(j, names[n], lens[n], n + 1,
				    mix(i), T0 + i / 100000) == -1)
					die("journal_append");
			}
			spent += now() - t;
			if (journal_write(j, err, sizeof(err)) == -1)
				die("journal_write");
		}
		t = spent * 1e9 / APPENDS;
		if (t < best)
			best = t;
	}
	return best;
}

/* Batches of n records, each written and fdatasynced, for secs seconds. */
static void
bench_commit(struct journal *j, unsigned n, double secs)
{
	double		 t0, t, lat, worst = 0;
	uint64_t	 commits = 0, i = 0;

	t0 = now();
	do {
		t = now();
		for (unsigned k = 0; k < n; k++, i++)
			if (journal_append(j, "default", 7, 1, mix(i),
			    T0 + i / 100000) == -1)
				die("journal_append");
		if (journal_write(j, err, sizeof(err)) == -1)
			die("journal_write");
		if (journal_sync(j, err, sizeof(err)) == -1)
			die("journal_sync");
		lat = now() - t;
		if (lat > worst)
			worst = lat;
		commits++;
	} while (now() - t0 < secs);
	t = now() - t0;
	printf("batch %4u: %7" PRIu64 " commits in %.2f s, %7.3f ms per "
	    "commit (worst %.1f ms), %9.0f records/s\n", n, commits, t,
	    t * 1e3 / (double)commits, worst * 1e3,
	    (double)(commits * n) / t);
}

int
main(int argc, char *argv[])
{
	const char	*base = argc > 1 ? argv[1] : "/var/tmp";
	double		 secs = argc > 2 ? atof(argv[2]) : 2.0;
	char		 dir[4096], cmd[4200];
	struct journal	*j;
	uint64_t	 closed;

	snprintf(dir, sizeof(dir), "%s/journal_bench.XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		perror(dir);
		return 1;
	}
	j = journal_open(dir, NULL, 0, err, sizeof(err));
	if (j == NULL)
		die("journal_open");
	printf("dir %s\n", dir);
	printf("journal_append, 1 filter:       %6.2f ns/record\n",
	    bench_append(j, 1));
	printf("journal_append, 1000 filters:   %6.2f ns/record\n",
	    bench_append(j, 1000));
	if (journal_rotate(j, &closed, err, sizeof(err)) == -1 ||
	    journal_drop_upto(j, closed, err, sizeof(err)) == -1)
		die("journal_rotate");
	bench_commit(j, 1, secs);
	bench_commit(j, 64, secs);
	bench_commit(j, 4096, secs);
	printf("journal size at the end: %.1f MiB\n",
	    (double)journal_bytes(j) / (1 << 20));
	journal_close(j);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
