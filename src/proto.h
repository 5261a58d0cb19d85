/*
 * proto.h - the request line: framing and tokenising, no I/O.
 *
 * A request is one line ending in "\n"; a "\r" before it is dropped. Tokens
 * are separated by runs of spaces or tabs. Tokens point into the caller's
 * buffer: nothing is copied or allocated.
 */
#ifndef SEEND_PROTO_H
#define SEEND_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The longest command has 3 tokens (SEEN <filter> <key>); one more slot
 * lets us tell "too many arguments" from "just enough". */
#define PROTO_MAX_TOKENS	4

struct request {
	int		 argc;
	const char	*argv[PROTO_MAX_TOKENS];
	size_t		 argl[PROTO_MAX_TOKENS];
};

enum proto_status {
	PROTO_OK,		/* argc tokens */
	PROTO_EMPTY,		/* blank line: no reply */
	PROTO_TOO_MANY,		/* more than PROTO_MAX_TOKENS tokens */
	PROTO_NUL,		/* a NUL byte: not a text request */
};

/*
 * Finds the end of the first line in p[0..len). Returns the length of the
 * line without its "\n" (and without a "\r" before it) and sets *next to the
 * bytes the line takes including its terminator; returns -1 if there is no
 * "\n" yet.
 */
long	proto_frame(const char *p, size_t len, size_t *next);

/* Splits a framed line into tokens. */
enum proto_status proto_split(const char *line, size_t len, struct request *);

/* Case-insensitive compare of a token with an upper-case ASCII word. */
int	proto_token_is(const char *tok, size_t len, const char *word);

/* The hot path's parser, inline: it runs for nearly every request. */
#ifdef __SSE2__
/* One bit per byte of p[0..16) that is below 0x21. */
static inline uint64_t
proto_low_bytes16(const char *p)
{
	const __m128i	 top = _mm_set1_epi8(0x20);
	__m128i		 v = _mm_loadu_si128((const __m128i *)(const void *)p);

	/* v <= 0x20 unsigned exactly where min(v, 0x20) == v */
	return (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
	    _mm_min_epu8(v, top), v));
}
#endif

/*
 * The offset of the first byte below 0x21 (space, tab, CR, LF, NUL and the
 * other controls) in p[0..len), or len: a key ends at such a byte, and all
 * of them but the terminator send the line to the general path.
 */
static inline size_t
proto_first_low_byte(const char *p, size_t len)
{
	size_t i = 0;

#ifdef __SSE2__
	/* 64 bytes a step: most URLs end in the first or second, and each
	 * step is one branch however the 64 bytes fall */
	for (; i + 64 <= len; i += 64) {
		uint64_t m = proto_low_bytes16(p + i) |
		    proto_low_bytes16(p + i + 16) << 16 |
		    proto_low_bytes16(p + i + 32) << 32 |
		    proto_low_bytes16(p + i + 48) << 48;

		if (m != 0)
			return i + (size_t)__builtin_ctzll(m);
	}
	for (; i + 16 <= len; i += 16) {
		uint64_t m = proto_low_bytes16(p + i);

		if (m != 0)
			return i + (size_t)__builtin_ctzll(m);
	}
#endif
	for (; i < len; i++)
		if ((unsigned char)p[i] <= 0x20)
			return i;
	return len;
}

/*
 * The request nearly every client sends, recognised in one pass: a whole
 * line "SEEN <key>" or "CHECK <key>" (command in any case, one space, CR LF
 * or LF) whose key has no byte below 0x21, and at most max bytes long
 * without its terminator. Returns the key's length and sets *key, *check
 * (1 for CHECK) and *next (the bytes the line takes); returns -1 for
 * anything else, which proto_frame and proto_split then handle: the same
 * tokens, found more slowly.
 */
static inline long
proto_simple_key(const char *p, size_t len, size_t max, const char **key,
    int *check, size_t *next)
{
	size_t	 start, end, limit;
	uint32_t w, seen, chec;

	if (len < 6)
		return -1;
	/* the words as loaded from memory, whatever the byte order; the
	 * compiler folds these copies into constants */
	memcpy(&seen, "seen", 4);
	memcpy(&chec, "chec", 4);
	memcpy(&w, p, 4);
	w |= 0x20202020u;	/* lower case, as proto_token_is compares */
	if (w == seen && p[4] == ' ') {
		start = 5;
		*check = 0;
	} else if (w == chec && (p[4] | 0x20) == 'k' && p[5] == ' ') {
		start = 6;
		*check = 1;
	} else
		return -1;
	/* a line of max bytes plus its CR LF is all that need be looked at */
	limit = len < max + 2 ? len : max + 2;
	if (start >= limit)
		return -1;
	end = start + proto_first_low_byte(p + start, limit - start);
	if (end == start || end >= limit)
		return -1;	/* no key, or no terminator in reach */
	if (p[end] == '\n')
		*next = end + 1;
	else if (p[end] == '\r' && end + 1 < len && p[end + 1] == '\n')
		*next = end + 2;
	else
		return -1;
	if (end > max)
		return -1;
	*key = p + start;
	return (long)(end - start);
}

#endif
