/*
 * fuzz_url.c - libFuzzer target for url_normalize and url_host: the input
 * is one key as a client sends it (any bytes).
 *
 * Invariants checked (a violation traps, so the fuzzer keeps the input):
 *   - url_normalize never writes past outcap, for the full buffer and for
 *     an outcap cut to fewer bytes than the result (then it returns 0);
 *   - a result is NUL-terminated and printable ASCII: every control byte,
 *     space and non-ASCII byte is percent-encoded, but for a space in an
 *     opaque path ("a:b c", no "/" after the scheme), which WHATWG keeps;
 *   - normalising a result again gives the same result (idempotence);
 *   - url_host of the result equals url_host of the input;
 *   - url_host returns -1 or 1..URL_HOST_MAX lower-case bytes, NUL
 *     terminated, and writes nothing past URL_HOST_MAX + 1 bytes.
 *
 * Build and run (make fuzz-build does this):
 *   clang -g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *       -Isrc tests/fuzz/fuzz_url.c src/url.c -lidn2 -o fuzz_url
 *   ./fuzz_url -max_total_time=60 tests/fuzz/corpus/url
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(c)	do { if (!(c)) __builtin_trap(); } while (0)
#define GUARD		8
#define CAP		(URL_NORMALIZE_CAP(4096) + GUARD)

static char	 norm[CAP], again[CAP];

/* url_host with guard bytes; returns its result and the host in out. */
static int
host_of(const char *key, size_t len, char out[URL_HOST_MAX + 1])
{
	char	 buf[URL_HOST_MAX + 1 + GUARD];
	int	 n;

	memset(buf, 0x5a, sizeof(buf));
	n = url_host(key, len, buf);
	for (size_t i = URL_HOST_MAX + 1; i < sizeof(buf); i++)
		CHECK(buf[i] == 0x5a);
	if (n == -1)
		return -1;
	CHECK(n >= 1 && n <= URL_HOST_MAX);
	CHECK(buf[n] == '\0');
	for (int i = 0; i < n; i++)
		CHECK(!(buf[i] >= 'A' && buf[i] <= 'Z') && buf[i] != '/' &&
		    buf[i] != '?' && buf[i] != '#' && buf[i] != '@' &&
		    buf[i] != '\0');
	memcpy(out, buf, (size_t)n + 1);
	return n;
}

/* url_normalize into buf[0..cap) with GUARD guard bytes after it. */
static size_t
normalize(const char *in, size_t len, char *buf, size_t cap)
{
	size_t	 n;

	memset(buf + cap, 0x5a, GUARD);
	n = url_normalize(in, len, buf, cap);
	for (size_t i = cap; i < cap + GUARD; i++)
		CHECK(buf[i] == 0x5a);
	if (n > 0) {
		CHECK(n < cap && buf[n] == '\0');
		CHECK(memchr(buf, '\0', n) == NULL);
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*in = (const char *)data, *colon;
	char		 h1[URL_HOST_MAX + 1], h2[URL_HOST_MAX + 1];
	size_t		 n, n2;
	int		 hl1, hl2;

	if (size > 4096)
		return 0;
	hl1 = host_of(in, size, h1);
	n = normalize(in, size, norm, CAP - GUARD);
	if (n == 0)
		return 0;
	colon = memchr(norm, ':', n);
	CHECK(colon != NULL);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)norm[i];

		CHECK(c < 0x7f && (c > 0x20 || (c == ' ' && colon[1] != '/')));
	}
	/* the same input with outcap just too small: 0, and nothing past */
	CHECK(normalize(in, size, again, n) == 0);
	n2 = normalize(norm, n, again, CAP - GUARD);
	CHECK(n2 == n && memcmp(norm, again, n) == 0);
	hl2 = host_of(norm, n, h2);
	CHECK(hl1 == hl2);
	if (hl1 > 0)
		CHECK(memcmp(h1, h2, (size_t)hl1) == 0);
	return 0;
}
