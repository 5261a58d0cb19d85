/*
 * url_bench.c - nanoseconds per URL for url_normalize and url_host, the
 * price of "normalize = standard" (and of hosts routing) on the request
 * path. Keys are in memory already; each class is timed over nkeys URLs,
 * best of REPS passes, in CPU time of this process (the VM is shared).
 *
 *   url_bench [nkeys]
 *
 * Classes (URL-sized, ~70-110 bytes):
 *   canonical  already in normal form: what most crawlers send
 *   messy      upper case, default port, dot segments, escapes, fragment
 *   idn        a non-ASCII host label, through libidn2
 *   ipv4       a host in hex/short IPv4 form
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "url.h"

#define REPS	3
#define KEYMAX	256

enum { C_CANONICAL, C_MESSY, C_IDN, C_IPV4, C_COUNT };
static const char *const class_names[C_COUNT] = {
	"canonical", "messy", "idn", "ipv4",
};

static char	*keys;		/* nkeys slots of KEYMAX bytes */
static size_t	*lens;
static size_t	 nkeys;

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int
gen_url(int cls, uint64_t i, char *buf, size_t size)
{
	uint64_t s = i, h = splitmix64(&s);

	switch (cls) {
	case C_CANONICAL:
		return snprintf(buf, size, "https://host%u.example%u.com/"
		    "news/%" PRIu64 "/article.html?id=%016" PRIx64,
		    (unsigned)(i % 5000), (unsigned)(i % 37), i, h);
	case C_MESSY:
		return snprintf(buf, size, "HTTPS://Host%u.Example%u.COM:443/"
		    "News/./%" PRIu64 "/x/../%%7Euser/a%%2fb?id=%016" PRIx64
		    "#top", (unsigned)(i % 5000), (unsigned)(i % 37), i, h);
	case C_IDN:
		return snprintf(buf, size, "https://b\xc3\xbc" "cher%u.example"
		    "/news/%" PRIu64 "/article.html?id=%016" PRIx64,
		    (unsigned)(i % 5000), i, h);
	default:
		return snprintf(buf, size, "http://0x%x.%u/news/%" PRIu64
		    "/article.html?id=%016" PRIx64, (unsigned)(h & 0xff),
		    (unsigned)(i % 65536), i, h);
	}
}

static void
fill(int cls)
{
	for (size_t i = 0; i < nkeys; i++)
		lens[i] = (size_t)gen_url(cls, i, keys + i * KEYMAX, KEYMAX);
}

/* CPU ns per URL of one pass of url_normalize (which 0) or url_host. */
static double
pass(int which, size_t *sink)
{
	char	 out[URL_NORMALIZE_CAP(KEYMAX)], host[URL_HOST_MAX + 1];
	double	 t0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);

	for (size_t i = 0; i < nkeys; i++) {
		if (which == 0)
			*sink += url_normalize(keys + i * KEYMAX, lens[i], out,
			    sizeof(out));
		else
			*sink += (size_t)url_host(keys + i * KEYMAX, lens[i],
			    host);
	}
	return (bench_clock(CLOCK_PROCESS_CPUTIME_ID) - t0) * 1e9 /
	    (double)nkeys;
}

int
main(int argc, char **argv)
{
	size_t	 sink = 0, total = 0;
	char	 out[URL_NORMALIZE_CAP(KEYMAX)];

	nkeys = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	if (nkeys == 0)
		nkeys = 1;
	keys = malloc(nkeys * KEYMAX);
	lens = malloc(nkeys * sizeof(*lens));
	if (keys == NULL || lens == NULL) {
		fprintf(stderr, "url_bench: out of memory\n");
		return 1;
	}
	printf("%-10s %6s %14s %12s  %s\n", "class", "bytes",
	    "normalize ns", "host ns", "example");
	for (int cls = 0; cls < C_COUNT; cls++) {
		double	 best[2] = { 1e30, 1e30 };

		fill(cls);
		total = 0;
		for (size_t i = 0; i < nkeys; i++)
			total += lens[i];
		for (int r = 0; r < REPS; r++)
			for (int w = 0; w < 2; w++) {
				double ns = pass(w, &sink);

				if (ns < best[w])
					best[w] = ns;
			}
		if (url_normalize(keys, lens[0], out, sizeof(out)) == 0)
			snprintf(out, sizeof(out), "(not normalisable)");
		printf("%-10s %6.0f %14.1f %12.1f  %.*s -> %s\n",
		    class_names[cls], (double)total / (double)nkeys, best[0],
		    best[1], (int)lens[0], keys, out);
	}
	fprintf(stderr, "(checksum %zu)\n", sink);
	free(keys);
	free(lens);
	return 0;
}
