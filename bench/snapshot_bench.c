/*
 * snapshot_bench.c - how long writing and loading a big snapshot takes.
 *
 *   snapshot_bench [dir [capacity]]     default: /tmp, 832000000 (~1 GiB)
 *
 * The filter is filled with pseudo-random words so every page is real. The
 * first load pulls the file into the page cache; the loads after it measure
 * what start-up costs on a warm cache: bloom_init's page faults, the read,
 * the checksum and the bloom_plan of the parameter match, which is also timed
 * on its own, as is snapshot_verify_fd (read and checksum, no filter).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "bloom.h"
#include "snapshot.h"

#define RATE	0.01

int
main(int argc, char *argv[])
{
	const char	*dir = argc > 1 ? argv[1] : "/tmp";
	uint64_t	 cap = argc > 2 ? strtoull(argv[2], NULL, 10) : 832000000;
	uint64_t	 x = 0x9e3779b97f4a7c15ULL, nblocks;
	uint32_t	 hashes;
	struct bloom	 b, l;
	char		 err[512], path[4096];
	double		 t;

	t = now();
	if (bloom_plan(cap, RATE, &nblocks, &hashes) == -1) {
		fprintf(stderr, "cannot plan capacity %llu\n",
		    (unsigned long long)cap);
		return 1;
	}
	printf("bloom_plan(%llu, %g): %.3f s\n", (unsigned long long)cap, RATE,
	    now() - t);
	if (bloom_init(&b, nblocks, hashes, 1) == -1) {
		perror("bloom_init");
		return 1;
	}
	for (uint64_t i = 0; i < nblocks * BLOOM_BLOCK_WORDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b.words[i] = x;
	}
	printf("filter: nblocks %llu, %.3f GiB\n", (unsigned long long)nblocks,
	    (double)bloom_bytes(&b) / (1 << 30));

	snapshot_path(path, sizeof(path), dir, "bench");
	for (int i = 0; i < 2; i++) {
		t = now();
		if (snapshot_write(dir, "bench", &b, cap, RATE, 1, 1, err,
		    sizeof(err)) == -1) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("snapshot_write (incl. fsync): %.3f s\n", now() - t);
	}
	for (int i = 0; i < 4; i++) {
		t = now();
		if (snapshot_load(path, cap, RATE, &l, NULL, err,
		    sizeof(err)) != 1) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("snapshot_load%s: %.3f s\n", i == 0 ? " (first)" : "",
		    now() - t);
		if (memcmp(l.words, b.words, bloom_bytes(&b)) != 0) {
			fprintf(stderr, "loaded filter differs\n");
			return 1;
		}
		bloom_free(&l);
	}
	for (int i = 0; i < 3; i++) {
		t = now();
		bloom_plan(cap, RATE, &nblocks, &hashes);
		printf("  of which bloom_plan: %.3f s\n", now() - t);
	}
	for (int i = 0; i < 3; i++) {
		int fd = open(path, O_RDONLY);

		t = now();
		if (snapshot_verify_fd(fd, NULL, err, sizeof(err)) == -1) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("snapshot_verify_fd (read + checksum only): %.3f s\n",
		    now() - t);
		close(fd);
	}
	unlink(path);
	bloom_free(&b);
	return 0;
}
