/*
 * urlgen.h - realistic URLs for benchmarks, reproducible from (seed, index).
 *
 * A benchmark key should look like what seend stores in production: a
 * scheme, a host with a long-tailed popularity (a few hosts get most URLs),
 * a path of words and numbers, sometimes a query string; about 80 bytes on
 * average. URL i depends on nothing but the seed and i, so threads can
 * generate disjoint ranges and two runs with the same seed send the same
 * keys. Distinct indices below 2^40 give distinct URLs: each carries a
 * document id that is a bijection of the index.
 */
#ifndef SEEND_URLGEN_H
#define SEEND_URLGEN_H

#include <stddef.h>
#include <stdint.h>

/* No URL is longer than this (without the terminating NUL). */
#define URLGEN_MAX	320

/*
 * Writes URL number index into buf, NUL-terminated, truncated to cap - 1
 * bytes if cap is too small. Returns the URL's full length (as snprintf
 * does), which is at most URLGEN_MAX.
 */
size_t	urlgen_url(uint64_t seed, uint64_t index, char *buf, size_t cap);

#endif
