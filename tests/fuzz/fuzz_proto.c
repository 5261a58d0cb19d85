/*
 * fuzz_proto.c - libFuzzer target for the request-line code: the input is
 * what a client wrote on a connection. It is framed into lines with
 * proto_frame, each line is split with proto_split, every token is matched
 * against the command names and handed to url_host, as the server does.
 *
 * Invariants checked (a violation traps, so the fuzzer keeps the input):
 *   - framing: the line lies inside the input, "next" counts the "\n" that
 *     ends it, the line does not contain that "\n" nor end in "\r";
 *   - splitting: argc <= PROTO_MAX_TOKENS, every token is non-empty, lies
 *     inside its line, in order, and holds no space or tab; the bytes
 *     between tokens are blanks; PROTO_EMPTY means a line of blanks only;
 *     PROTO_NUL iff the line holds a NUL byte;
 *   - proto_token_is agrees with a plain ASCII case-insensitive compare;
 *   - proto_simple_key, where it accepts a line, reads it as proto_frame
 *     and proto_split do (same next, two tokens, SEEN or CHECK, the same
 *     key, no byte below 0x21 in it, within max);
 *   - url_host returns -1 or 1..URL_HOST_MAX bytes, lower-case, NUL
 *     terminated, no write past URL_HOST_MAX + 1 bytes.
 *
 * Build and run:
 *   clang -g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
 *       -Isrc tests/fuzz/fuzz_proto.c src/proto.c src/url.c -o fuzz_proto
 *   ./fuzz_proto -max_total_time=60 tests/fuzz/corpus/proto
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(c)	do { if (!(c)) __builtin_trap(); } while (0)

static const char *const words[] = {
	"SEEN", "CHECK", "PING", "AUTH", "FILTERS", "INFO", "SAVE", "QUIT", "",
};

static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The reference for proto_token_is. */
static int
same_word(const char *tok, size_t len, const char *word)
{
	if (strlen(word) != len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = tok[i];

		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		if (c != word[i])
			return 0;
	}
	return 1;
}

static void
check_host(const char *tok, size_t len)
{
	/* guard bytes after the documented URL_HOST_MAX + 1 */
	char	 out[URL_HOST_MAX + 1 + 8];
	int	 n;

	memset(out, 0x5a, sizeof(out));
	n = url_host(tok, len, out);
	for (size_t i = URL_HOST_MAX + 1; i < sizeof(out); i++)
		CHECK(out[i] == 0x5a);
	if (n == -1)
		return;
	CHECK(n >= 1 && n <= URL_HOST_MAX);
	CHECK(out[n] == '\0');
	/* no length bound from the token: WHATWG makes "http:0" 0.0.0.0,
	 * and punycode can be longer than the UTF-8 it encodes */
	for (int i = 0; i < n; i++) {
		CHECK(!(out[i] >= 'A' && out[i] <= 'Z'));
		CHECK(out[i] != '/' && out[i] != '?' && out[i] != '#' &&
		    out[i] != '@');
	}
}

static void
check_line(const char *line, size_t len)
{
	struct request		 req;
	enum proto_status	 st;
	const char		*prev_end = line;
	int			 has_nul = memchr(line, '\0', len) != NULL;

	memset(&req, 0xa5, sizeof(req));
	st = proto_split(line, len, &req);
	CHECK(st == PROTO_OK || st == PROTO_EMPTY || st == PROTO_TOO_MANY ||
	    st == PROTO_NUL);
	CHECK((st == PROTO_NUL) == has_nul);
	CHECK(req.argc >= 0 && req.argc <= PROTO_MAX_TOKENS);
	if (st == PROTO_EMPTY) {
		CHECK(req.argc == 0);
		for (size_t i = 0; i < len; i++)
			CHECK(is_blank(line[i]));
		return;
	}
	if (st == PROTO_NUL)
		return;
	if (st == PROTO_OK)
		CHECK(req.argc >= 1);
	if (st == PROTO_TOO_MANY)
		CHECK(req.argc == PROTO_MAX_TOKENS);
	for (int i = 0; i < req.argc; i++) {
		const char	*t = req.argv[i];
		size_t		 tl = req.argl[i];

		CHECK(tl > 0);
		CHECK(t >= line && t + tl <= line + len);
		CHECK(t >= prev_end);
		for (const char *q = prev_end; q < t; q++)
			CHECK(is_blank(*q));
		for (size_t j = 0; j < tl; j++)
			CHECK(!is_blank(t[j]));
		/* tokens are maximal runs */
		CHECK(t == line || is_blank(t[-1]));
		CHECK(t + tl == line + len || is_blank(t[tl]));
		prev_end = t + tl;
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
			CHECK(!proto_token_is(t, tl, words[w]) ==
			    !same_word(t, tl, words[w]));
		check_host(t, tl);
	}
	if (st == PROTO_OK)
		for (const char *q = prev_end; q < line + len; q++)
			CHECK(is_blank(*q));
	/* url_host on the whole line too: it must stay inside len */
	check_host(line, len);
}

/* The fast recogniser against the general path, at the head of p. */
static void
check_simple(const char *p, size_t left)
{
	struct request	 req;
	const char	*key = NULL;
	size_t		 next = 0, fnext = 0;
	size_t		 max = left > 0 ? (unsigned char)p[0] % 64 + 6 : 6;
	int		 check = -1;
	long		 n, fl;

	for (int pass = 0; pass < 2; pass++, max = 100000) {
		n = proto_simple_key(p, left, max, &key, &check, &next);
		if (n < 0) {
			CHECK(n == -1);
			continue;
		}
		fl = proto_frame(p, left, &fnext);
		CHECK(fl >= 0 && (size_t)fl <= max && fnext == next);
		CHECK(proto_split(p, (size_t)fl, &req) == PROTO_OK);
		CHECK(req.argc == 2);
		CHECK(proto_token_is(req.argv[0], req.argl[0],
		    check ? "CHECK" : "SEEN"));
		CHECK(req.argv[1] == key && req.argl[1] == (size_t)n);
		for (long i = 0; i < n; i++)
			CHECK((unsigned char)key[i] > 0x20);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*p = (const char *)data;
	size_t		 left = size, next;
	long		 n;

	while (left > 0) {
		check_simple(p, left);
		n = proto_frame(p, left, &next);
		if (n < 0) {
			CHECK(n == -1);
			CHECK(memchr(p, '\n', left) == NULL);
			/* the server would wait for more; split what is there
			 * anyway, as a line cut by a full buffer */
			check_line(p, left);
			break;
		}
		CHECK(next >= 1 && next <= left);
		CHECK(p[next - 1] == '\n');
		CHECK((size_t)n == next - 1 || ((size_t)n == next - 2 &&
		    p[n] == '\r'));
		CHECK(memchr(p, '\n', (size_t)n) == NULL);
		check_line(p, (size_t)n);
		p += next;
		left -= next;
	}
	return 0;
}
