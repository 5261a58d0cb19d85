/*
 * resp.c - RESP2 request parsing and reply encoding; see resp.h.
 *
 * The checks come in Redis's order, so that where Redis answers an input
 * at all we answer the same words (tests/integration/test_resp_golden.py
 * holds us to it). Where we part from Redis, on purpose:
 *   - a length line ends at CR LF and nothing else: Redis skips whatever
 *     byte follows the CR and waits for a CR when it sees a lone LF;
 *   - a bulk string must be followed by CR LF: Redis skips two bytes
 *     unread, so a wrong length silently shifts every later request;
 *   - an array length below -1 is an error, not an empty request;
 *   - a length line is bounded by RESP_LINE_MAX, not 64 KB, and a byte
 *     other than '$' where a bulk string should start is refused at once,
 *     not after a CR turns up;
 *   - a request over max_request bytes, or announcing more arguments than
 *     that many bytes can hold, is refused before it is read.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"

enum line {
	LINE_OK,	/* *eol: the CR of the CR LF ending the line */
	LINE_MORE,	/* no end yet: one more byte may bring it */
	LINE_BAD,	/* a LF, or a CR not followed by LF */
	LINE_LONG,	/* no end within RESP_LINE_MAX bytes */
};

/* The length line whose type byte ('*' or '$') is p[pos]. */
static enum line
scan_line(const char *p, size_t len, size_t pos, size_t *eol)
{
	size_t i, stop = pos + 1 + RESP_LINE_MAX;

	for (i = pos + 1; i < len && i < stop; i++) {
		if (p[i] == '\n')
			return LINE_BAD;
		if (p[i] == '\r') {
			if (i + 1 == len)
				return LINE_MORE;
			if (p[i + 1] != '\n')
				return LINE_BAD;
			*eol = i;
			return LINE_OK;
		}
	}
	return i == stop ? LINE_LONG : LINE_MORE;
}

/*
 * A decimal long long exactly as Redis's string2ll reads one: an optional
 * '-', no '+', no spaces, no leading zeros ("0" alone is fine, "-0" is
 * not), at most 20 characters, no overflow. Returns 1 and sets *v, or 0.
 */
static int
parse_ll(const char *s, size_t n, long long *v)
{
	unsigned long long	 u;
	size_t			 i = 0;
	int			 neg = 0;

	if (n == 0 || n > 20)
		return 0;
	if (n == 1 && s[0] == '0') {
		*v = 0;
		return 1;
	}
	if (s[0] == '-') {
		neg = 1;
		if (++i == n)
			return 0;
	}
	if (s[i] < '1' || s[i] > '9')
		return 0;
	u = (unsigned long long)(s[i++] - '0');
	for (; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9')
			return 0;
		if (u > (ULLONG_MAX - d) / 10)
			return 0;
		u = u * 10 + d;
	}
	if (neg) {
		if (u > (unsigned long long)LLONG_MAX + 1)
			return 0;
		*v = u == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN :
		    -(long long)u;
	} else {
		if (u > (unsigned long long)LLONG_MAX)
			return 0;
		*v = (long long)u;
	}
	return 1;
}

/*
 * The length line at p[pos] and its number: LINE_OK with *num 1 and *v
 * set, or *num 0 if the line is not a number as string2ll reads one. Most
 * lines are 1 to 18 digits and CR LF: those are read in one pass, and
 * anything else in two (scan_line, then parse_ll), which say the same for
 * the common case.
 */
static enum line
read_length(const char *p, size_t len, size_t pos, size_t *eol,
    long long *v, int *num)
{
	unsigned long long	 u;
	size_t			 i = pos + 1, start = i;
	enum line		 r;

	if (i < len && p[i] >= '1' && p[i] <= '9') {
		for (u = 0; i < len && i - start < 18 && p[i] >= '0' &&
		    p[i] <= '9'; i++)
			u = u * 10 + (unsigned)(p[i] - '0');
		if (i + 1 < len && p[i] == '\r' && p[i + 1] == '\n') {
			*eol = i;
			*v = (long long)u;
			*num = 1;
			return LINE_OK;
		}
	}
	if ((r = scan_line(p, len, pos, eol)) == LINE_OK)
		*num = parse_ll(p + pos + 1, *eol - pos - 1, v);
	return r;
}

static enum resp_status
fail(struct resp_request *req, const char *reason)
{
	snprintf(req->error, sizeof(req->error), "Protocol error: %s",
	    reason);
	return RESP_ERROR;
}

/* Redis prints the byte with %c and then turns CR and LF into spaces; a
 * NUL (which Redis never gets this far with) would end our string. */
static enum resp_status
fail_got(struct resp_request *req, char want, char got)
{
	if (got == '\r' || got == '\n' || got == '\0')
		got = ' ';
	snprintf(req->error, sizeof(req->error),
	    "Protocol error: expected '%c', got '%c'", want, got);
	return RESP_ERROR;
}

static enum resp_status
more(struct resp_request *req, size_t need)
{
	req->used = need;
	return RESP_MORE;
}

/* Whether pos bytes and then n more arguments can fit in max bytes. */
static int
fits(size_t pos, long long n, size_t max)
{
	return pos <= max &&
	    (unsigned long long)n <= (max - pos) / RESP_MIN_ARG;
}

enum resp_status
resp_parse(const char *p, size_t len, const struct resp_limits *lim,
    struct resp_request *req)
{
	size_t		 pos, eol, body, max_request = lim->max_request;
	size_t		 max_bulk = lim->max_bulk;
	long long	 n, l, i;
	long long	 big = -1;	/* the argument that may take max_bulk */
	int		 num = 0;

	req->argc = 0;
	req->error[0] = '\0';
	if (len == 0)
		return more(req, 1);
	if (p[0] != '*')
		return fail_got(req, '*', p[0]);
	switch (read_length(p, len, 0, &eol, &n, &num)) {
	case LINE_MORE:
		return more(req, len + 1);
	case LINE_LONG:
		return fail(req, "too big mbulk count string");
	case LINE_BAD:
		return fail(req, "invalid multibulk length");
	case LINE_OK:
		break;
	}
	if (!num || n > INT_MAX)
		return fail(req, "invalid multibulk length");
	if (n > RESP_UNAUTH_ARGS && lim->unauth)
		return fail(req, "unauthenticated multibulk length");
	pos = eol + 2;
	if (n == 0 || n == -1) {
		req->used = pos;
		return RESP_EMPTY;
	}
	if (n < 0)
		return fail(req, "invalid multibulk length");
	if (!fits(pos, n, lim->max_request))
		return fail(req, "too big request");

	for (i = 0; i < n; i++) {
		if (pos == len)
			return more(req, len + 1);
		if (p[pos] != '$')
			return fail_got(req, '$', p[pos]);
		switch (read_length(p, len, pos, &eol, &l, &num)) {
		case LINE_MORE:
			return more(req, len + 1);
		case LINE_LONG:
			return fail(req, "too big bulk count string");
		case LINE_BAD:
			return fail(req, "invalid bulk length");
		case LINE_OK:
			break;
		}
		if (!num || l < 0 || (unsigned long long)l >
		    (i == big ? max_bulk : lim->max_bulk))
			return fail(req, "invalid bulk length");
		if (l > RESP_UNAUTH_BULK && lim->unauth)
			return fail(req, "unauthenticated bulk length");
		body = eol + 2;
		/* the body, its CR LF and the smallest arguments after it */
		if (!fits(body, 0, max_request) ||
		    (size_t)l + 2 > max_request - body ||
		    !fits(body + (size_t)l + 2, n - i - 1, max_request))
			return fail(req, "too big request");
		pos = body + (size_t)l + 2;
		if (pos > len)
			return more(req, pos);
		if (p[pos - 2] != '\r' || p[pos - 1] != '\n')
			return fail(req, "bulk string not followed by CRLF");
		if (i < lim->max_args) {
			req->argv[i] = p + body;
			req->argl[i] = (size_t)l;
		}
		/* a dump's chunk is one argument bigger than any key, and
		 * so is the map of a cluster of many nodes (CLUSTER SETMAP:
		 * cluster_map.c refuses one of more than 1 MiB) */
		if (big >= 0 || max_bulk != lim->max_bulk)
			continue;
		if (i == 0 && n == 4 && lim->max_chunk > 0 && l == 12 &&
		    (strncasecmp(p + body, "BF.LOADCHUNK", 12) == 0 ||
		    strncasecmp(p + body, "CF.LOADCHUNK", 12) == 0))
			big = 3;
		else if (i == 1 && n == 3 && lim->max_chunk > 0 && l == 6 &&
		    strncasecmp(p + body, "SETMAP", 6) == 0 &&
		    req->argl[0] == 7 &&
		    strncasecmp(req->argv[0], "CLUSTER", 7) == 0)
			big = 2;
		/* and moving slots' bits with their named filters (CLUSTER
		 * SLOTMERGE <image> [SAVE [STREAM]]: cluster_move.h), up to
		 * max_image */
		else if (i == 1 && n >= 3 && n <= 5 && lim->max_image > 0 &&
		    l == 9 && strncasecmp(p + body, "SLOTMERGE", 9) == 0 &&
		    req->argl[0] == 7 &&
		    strncasecmp(req->argv[0], "CLUSTER", 7) == 0) {
			big = 2;
			max_bulk = lim->max_image;
			max_request = lim->max_request + lim->max_image;
			continue;
		}
		if (big >= 0) {
			max_bulk = lim->max_chunk;
			max_request = lim->max_request + lim->max_chunk;
		}
	}
	req->argc = (int)n;
	req->used = pos;
	return n > lim->max_args ? RESP_TOO_MANY : RESP_OK;
}

/* ---- replies ---- */

/* The decimal digits of v at the end of a char[24] ending at end. */
static char *
format_ll(char *end, long long v)
{
	unsigned long long	 u = v < 0 ? 0 - (unsigned long long)v :
				     (unsigned long long)v;
	char			*s = end;

	do {
		*--s = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--s = '-';
	return s;
}

/* type byte, number, CR LF: the head of every integer, bulk and array. */
static int
add_number_line(struct buf *b, char type, long long v)
{
	char	 tmp[24], *end = tmp + sizeof(tmp), *s;

	end[-2] = '\r';
	end[-1] = '\n';
	s = format_ll(end - 2, v);
	*--s = type;
	return buf_append(b, s, (size_t)(end - s));
}

/*
 * A simple string or error line: prefix, then text with CR and LF at its
 * ends dropped and inside turned to spaces (Redis's sdstrim + sdsmapchars),
 * then CR LF.
 */
static int
add_line(struct buf *b, const char *pre, size_t plen, const char *s,
    size_t len)
{
	size_t	 i, start;
	char	*d;

	while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == '\n'))
		len--;
	for (start = 0; start < len && (s[start] == '\r' || s[start] == '\n');
	    start++)
		;
	if (buf_reserve(b, plen + (len - start) + 2) == -1)
		return -1;
	d = b->data + b->len;
	memcpy(d, pre, plen);
	d += plen;
	for (i = start; i < len; i++)
		*d++ = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
	*d++ = '\r';
	*d++ = '\n';
	b->len = (size_t)(d - b->data);
	return 0;
}

int
resp_add_status(struct buf *b, const char *s)
{
	return add_line(b, "+", 1, s, strlen(s));
}

int
resp_add_error(struct buf *b, const char *code, const char *msg, size_t len)
{
	char	 pre[40];
	int	 n;

	n = snprintf(pre, sizeof(pre), "-%s ", code);
	if (n < 0 || (size_t)n >= sizeof(pre))
		return -1;
	return add_line(b, pre, (size_t)n, msg, len);
}

int
resp_add_errorf(struct buf *b, const char *code, const char *fmt, ...)
{
	char	 msg[512];
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;	/* a long message is cut, not lost */
	return resp_add_error(b, code, msg, (size_t)n);
}

int
resp_add_int(struct buf *b, long long v)
{
	/* the dedup answers, nearly every reply */
	if (v == 0)
		return buf_append(b, ":0\r\n", 4);
	if (v == 1)
		return buf_append(b, ":1\r\n", 4);
	return add_number_line(b, ':', v);
}

int
resp_add_bulk(struct buf *b, const void *p, size_t len)
{
	if (len > (size_t)-1 / 2 || buf_reserve(b, len + 24 + 2) == -1 ||
	    add_number_line(b, '$', (long long)len) == -1)
		return -1;
	memcpy(b->data + b->len, p, len);
	memcpy(b->data + b->len + len, "\r\n", 2);
	b->len += len + 2;
	return 0;
}

int
resp_add_null(struct buf *b)
{
	return buf_append(b, "$-1\r\n", 5);
}

int
resp_add_array(struct buf *b, long long n)
{
	return add_number_line(b, '*', n);
}

int
resp_add_null_array(struct buf *b)
{
	return buf_append(b, "*-1\r\n", 5);
}


/* ---- RESP3 (HELLO 3): the richer shapes, and their RESP2 forms ---- */

int
resp_add_map(struct buf *b, long long pairs)
{
	return add_number_line(b, '%', pairs);
}

int
resp_add_set(struct buf *b, long long n)
{
	return add_number_line(b, '~', n);
}

int
resp_add_null3(struct buf *b)
{
	return buf_append(b, "_\r\n", 3);
}

int
resp_add_bool(struct buf *b, int yes)
{
	return buf_append(b, yes ? "#t\r\n" : "#f\r\n", 4);
}

int
resp_add_double(struct buf *b, double v)
{
	char	 text[40];
	int	 n = snprintf(text, sizeof(text), "%.17g", v);

	if (n < 0 || (size_t)n >= sizeof(text))
		return -1;
	return add_line(b, ",", 1, text, (size_t)n);
}

int
resp_add_verbatim(struct buf *b, const char *format, const void *p,
    size_t len)
{
	/* "=<len>\r\n<3 letters>:<data>\r\n": the length counts the prefix */
	if (strlen(format) != 3 || len > (size_t)-1 / 2 ||
	    buf_reserve(b, len + 32) == -1 ||
	    add_number_line(b, '=', (long long)len + 4) == -1)
		return -1;
	memcpy(b->data + b->len, format, 3);
	b->data[b->len + 3] = ':';
	memcpy(b->data + b->len + 4, p, len);
	memcpy(b->data + b->len + 4 + len, "\r\n", 2);
	b->len += len + 6;
	return 0;
}

/* The bytes of the simple line at p[0..len), CR LF included, or 0. */
static size_t
downgrade_number_line(const char *p, size_t len)
{
	const char *cr = memchr(p, '\r', len);

	if (cr == NULL || (size_t)(cr - p) + 2 > len || cr[1] != '\n')
		return 0;
	return (size_t)(cr - p) + 2;
}

/* The number of a "<type><n>\r\n" line at p[0..len): the position after
 * it, or 0 if there is none. */
static size_t
downgrade_number(const char *p, size_t len, long long *n)
{
	const char	*cr = memchr(p, '\r', len);
	char		 text[32], *end;
	size_t		 l;

	if (cr == NULL || (size_t)(cr - p) + 2 > len || cr[1] != '\n')
		return 0;
	l = (size_t)(cr - p) - 1;
	if (l == 0 || l >= sizeof(text))
		return 0;
	memcpy(text, p + 1, l);
	text[l] = '\0';
	*n = strtoll(text, &end, 10);
	if (*end != '\0')
		return 0;
	return (size_t)(cr - p) + 2;
}

/*
 * One value at p[0..len) into out in RESP2; returns the bytes it took in
 * p, or 0 if it is not one whole value. depth bounds the nesting.
 */
static size_t
downgrade_value(struct buf *out, const char *p, size_t len, int depth)
{
	long long	 n;
	size_t		 pos, used, line;

	if (len < 3 || depth > 16)
		return 0;
	switch (p[0]) {
	case '+': case '-': case ':':
		/* simple lines are the same in both */
		if ((line = downgrade_number_line(p, len)) == 0)
			return 0;
		return buf_append(out, p, line) == -1 ? 0 : line;
	case '_':
		return memcmp(p, "_\r\n", 3) != 0 ||
		    resp_add_null(out) == -1 ? 0 : 3;
	case '#':
		if (len < 4 || (p[1] != 't' && p[1] != 'f') ||
		    p[2] != '\r' || p[3] != '\n')
			return 0;
		return resp_add_int(out, p[1] == 't') == -1 ? 0 : 4;
	case ',': case '(':
		/* a double or a big number: Redis sends RESP2 a bulk string */
		if ((line = downgrade_number_line(p, len)) == 0 ||
		    resp_add_bulk(out, p + 1, line - 3) == -1)
			return 0;
		return line;
	case '$': case '=': case '!':
		if ((pos = downgrade_number(p, len, &n)) == 0 || n < -1 ||
		    (n == -1 && p[0] != '$'))
			return 0;
		if (n == -1)
			return resp_add_null(out) == -1 ? 0 : pos;
		if ((size_t)n > len - pos || len - pos - (size_t)n < 2)
			return 0;
		if (p[0] == '=') {
			/* verbatim: the bulk without its "txt:" */
			if (n < 4 || p[pos + 3] != ':' ||
			    resp_add_bulk(out, p + pos + 4, (size_t)n - 4) == -1)
				return 0;
		} else if (p[0] == '!') {
			/* a blob error: a simple one, its CR LF as spaces */
			if (add_line(out, "-", 1, p + pos, (size_t)n) == -1)
				return 0;
		} else if (buf_append(out, p, pos + (size_t)n + 2) == -1)
			return 0;
		return pos + (size_t)n + 2;
	case '*': case '~': case '%': case '>': case '|':
		if ((pos = downgrade_number(p, len, &n)) == 0 || n < -1)
			return 0;
		if (n == -1 && p[0] != '*')
			return 0;	/* only an array may be null */
		if (n == -1)
			return buf_append(out, "*-1\r\n", 5) == -1 ? 0 : pos;
		/* every element takes 3 bytes at least: a longer count
		 * cannot be whole (and would overflow doubled) */
		if ((unsigned long long)n > len / 3)
			return 0;
		if (p[0] == '%' || p[0] == '|')
			n *= 2;
		if (p[0] != '|' && add_number_line(out, '*', n) == -1)
			return 0;
		if (p[0] == '|') {
			/* an attribute is dropped, and the value it
			 * describes follows */
			struct buf skip = { 0 };

			for (long long i = 0; i < n; i++) {
				used = downgrade_value(&skip, p + pos,
				    len - pos, depth + 1);
				if (used == 0) {
					buf_free(&skip);
					return 0;
				}
				pos += used;
			}
			buf_free(&skip);
			if ((used = downgrade_value(out, p + pos, len - pos,
			    depth + 1)) == 0)
				return 0;
			return pos + used;
		}
		for (long long i = 0; i < n; i++) {
			if ((used = downgrade_value(out, p + pos, len - pos,
			    depth + 1)) == 0)
				return 0;
			pos += used;
		}
		return pos;
	}
	return 0;
}

size_t
resp_value_len(const char *p, size_t len)
{
	struct buf	 skip = { 0 };
	size_t		 n = downgrade_value(&skip, p, len, 0);

	buf_free(&skip);
	return n;
}

int
resp_downgrade(struct buf *out, const char *p, size_t len)
{
	size_t	 pos = 0, used, mark = out->len;

	while (pos < len) {
		if ((used = downgrade_value(out, p + pos, len - pos, 0)) == 0) {
			out->len = mark;
			return -1;
		}
		pos += used;
	}
	return 0;
}
