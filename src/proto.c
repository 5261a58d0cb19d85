/*
 * proto.c - framing and tokenising of request lines; see proto.h.
 */
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proto.h"

#ifdef __SSE2__
/* One bit per byte of p[0..16) that is below 0x21. */
static inline uint64_t
low_bytes16(const char *p)
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
first_low_byte(const char *p, size_t len)
{
	size_t i = 0;

#ifdef __SSE2__
	/* 64 bytes a step: most URLs end in the first or second, and each
	 * step is one branch however the 64 bytes fall */
	for (; i + 64 <= len; i += 64) {
		uint64_t m = low_bytes16(p + i) |
		    low_bytes16(p + i + 16) << 16 |
		    low_bytes16(p + i + 32) << 32 |
		    low_bytes16(p + i + 48) << 48;

		if (m != 0)
			return i + (size_t)__builtin_ctzll(m);
	}
	for (; i + 16 <= len; i += 16) {
		uint64_t m = low_bytes16(p + i);

		if (m != 0)
			return i + (size_t)__builtin_ctzll(m);
	}
#endif
	for (; i < len; i++)
		if ((unsigned char)p[i] <= 0x20)
			return i;
	return len;
}

long
proto_simple_key(const char *p, size_t len, size_t max, const char **key,
    int *check, size_t *next)
{
	size_t	 start, end, limit;
	uint32_t w;

	if (len < 6)
		return -1;
	memcpy(&w, p, 4);
	w |= 0x20202020u;	/* lower case, as proto_token_is compares */
	if (w == ('s' | 'e' << 8 | 'e' << 16 | (uint32_t)'n' << 24) &&
	    p[4] == ' ') {
		start = 5;
		*check = 0;
	} else if (w == ('c' | 'h' << 8 | 'e' << 16 | (uint32_t)'c' << 24) &&
	    (p[4] | 0x20) == 'k' && p[5] == ' ') {
		start = 6;
		*check = 1;
	} else
		return -1;
	/* a line of max bytes plus its CR LF is all that need be looked at */
	limit = len < max + 2 ? len : max + 2;
	if (start >= limit)
		return -1;
	end = start + first_low_byte(p + start, limit - start);
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

long
proto_frame(const char *p, size_t len, size_t *next)
{
	const char	*nl = memchr(p, '\n', len);
	size_t		 n;

	if (nl == NULL)
		return -1;
	n = (size_t)(nl - p);
	*next = n + 1;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	return (long)n;
}

static int
is_sep(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * The common request has single spaces and no tabs: then each token ends at
 * the next space, which memchr finds many bytes at a time. Lines with a tab
 * take the byte-by-byte path.
 */
static const char *
token_end(const char *p, const char *end, int tabs)
{
	const char *q;

	if (!tabs)
		return (q = memchr(p, ' ', (size_t)(end - p))) ? q : end;
	while (p < end && !is_sep(*p))
		p++;
	return p;
}

enum proto_status
proto_split(const char *line, size_t len, struct request *req)
{
	const char	*p = line, *end = line + len, *q;
	int		 tabs;

	req->argc = 0;
	if (memchr(line, '\0', len) != NULL)
		return PROTO_NUL;
	tabs = memchr(line, '\t', len) != NULL;
	for (;;) {
		while (p < end && is_sep(*p))
			p++;
		if (p == end)
			break;
		if (req->argc == PROTO_MAX_TOKENS)
			return PROTO_TOO_MANY;
		q = token_end(p, end, tabs);
		req->argv[req->argc] = p;
		req->argl[req->argc] = (size_t)(q - p);
		req->argc++;
		p = q;
	}
	return req->argc == 0 ? PROTO_EMPTY : PROTO_OK;
}

int
proto_token_is(const char *tok, size_t len, const char *word)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = tok[i];

		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		if (word[i] == '\0' || c != word[i])
			return 0;
	}
	return word[i] == '\0';
}
