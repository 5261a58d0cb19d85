/*
 * resp.h - the Redis protocol: request parsing, and reply encoding in
 * RESP2 and RESP3; no I/O.
 *
 * A request that begins with '*' is an array of bulk strings:
 *
 *	*2\r\n$5\r\nSETNX\r\n$3\r\nurl\r\n
 *
 * resp_parse reads one from the head of a connection's input and points
 * its arguments into that input: nothing is copied or allocated. It keeps
 * no state between calls: with a partial request it says how many bytes it
 * needs at least before a call can answer differently, and is called again
 * from the start once they are there. Errors carry the text Redis 7 sends
 * (networking.c, processMultibulkBuffer) wherever Redis has one.
 */
#ifndef SEEND_RESP_H
#define SEEND_RESP_H

#include <stddef.h>

#include <stdint.h>
#include <string.h>

#include "buf.h"

/*
 * The longest length line ("*N" or "$N") looked at: string2ll's longest
 * number is 20 characters, so a line with no CR in this many bytes after
 * its '*' or '$' can never be valid. Redis looks 64 KB far before it says
 * "too big ... count string"; a shorter look keeps the bound small.
 */
#define RESP_LINE_MAX		32

/* Redis's bounds before AUTH (networking.c, authRequired). */
#define RESP_UNAUTH_ARGS	10
#define RESP_UNAUTH_BULK	16384

/* The smallest argument, "$0\r\n\r\n": what a request of n more arguments
 * takes at least. */
#define RESP_MIN_ARG		6

struct resp_limits {
	size_t	 max_bulk;	/* the longest bulk string: max_line */
	size_t	 max_request;	/* bytes a whole request may take */
	int	 max_args;	/* argv/argl slots the caller gives (>= 1) */
	int	 unauth;	/* not yet authenticated: Redis's tighter bounds */
	/* BF.LOADCHUNK's data (its 4th and last argument) and CLUSTER
	 * SETMAP's map (its 3rd) may take up to this many bytes instead of
	 * max_bulk, and their request as much more than max_request (0: no
	 * exemption) */
	size_t	 max_chunk;
	/* CLUSTER SLOTMERGE's image (its 3rd argument) likewise, up to
	 * this many bytes (0: no exemption) */
	size_t	 max_image;
};

struct resp_request {
	int		  argc;		/* the request's arguments */
	const char	**argv;		/* caller's max_args slots: the first */
	size_t		 *argl;		/* min(argc, max_args) arguments */
	/*
	 * RESP_OK, RESP_EMPTY, RESP_TOO_MANY: the bytes the request takes.
	 * RESP_MORE: the input must hold at least this many bytes before
	 * another call can answer differently (always more than it has).
	 */
	size_t		  used;
	/* RESP_ERROR: "Protocol error: ...", without the "ERR " */
	char		  error[80];
};

enum resp_status {
	RESP_OK,	/* a complete request of argc arguments */
	RESP_EMPTY,	/* "*0" or "*-1": Redis answers nothing */
	RESP_MORE,	/* incomplete: wait for used bytes */
	RESP_TOO_MANY,	/* complete, well formed, argc > max_args: refuse it,
			 * skip used bytes, the connection goes on */
	RESP_ERROR,	/* malformed: send error, then close (the rest of the
			 * stream cannot be framed) */
};

/*
 * Parses the request at p[0..len), which should begin with '*' (anything
 * else is a line request; given one, this answers RESP_ERROR).
 */
enum resp_status resp_parse(const char *p, size_t len,
	    const struct resp_limits *, struct resp_request *);

/*
 * Reply encoding. Each returns 0, or -1 if the buffer cannot grow. Simple
 * strings and errors cannot hold CR or LF: as Redis does, those at either
 * end are dropped and those inside become spaces.
 */
int	resp_add_status(struct buf *, const char *);	/* +OK */
/* -CODE message; code "ERR", "NOAUTH", "WRONGPASS", ... */
int	resp_add_error(struct buf *, const char *code, const char *msg,
	    size_t len);
int	resp_add_errorf(struct buf *, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
int	resp_add_int(struct buf *, long long);		/* :n */
int	resp_add_bulk(struct buf *, const void *, size_t); /* $n data */
int	resp_add_null(struct buf *);			/* $-1 */
int	resp_add_array(struct buf *, long long n);	/* *n, then n items */
int	resp_add_null_array(struct buf *);		/* *-1 */
/* RESP3's shapes: a map of n pairs (2n values follow), a set, a null, a
 * boolean, a double, a verbatim string ("txt" or "mkd"). */
int	resp_add_map(struct buf *, long long pairs);	/* %n */
int	resp_add_set(struct buf *, long long n);	/* ~n */
int	resp_add_null3(struct buf *);			/* _ */
int	resp_add_bool(struct buf *, int);		/* #t, #f */
int	resp_add_double(struct buf *, double);		/* ,1.5 */
int	resp_add_verbatim(struct buf *, const char *format, const void *,
	    size_t);					/* =n fmt:data */
/*
 * Writes the RESP3 values at p[0..len) into out as Redis writes the same
 * values to a RESP2 client: maps and attributes' pairs flattened into
 * arrays (attributes dropped), sets and pushes as arrays, null as $-1,
 * booleans as :1/:0, doubles and big numbers as bulk strings, verbatim
 * strings as bulk strings without their format, blob errors as simple
 * ones. Returns 0, or -1 (out as it was) if p is not whole RESP3 values
 * or out cannot grow.
 */
int	resp_downgrade(struct buf *out, const char *p, size_t len);
/* The bytes of the one whole RESP3 value at p[0..len), or 0. */
size_t	resp_value_len(const char *p, size_t len);

/* A bulk length as resp_parse accepts it: "0" or 1-18 digits without a
 * leading zero, then CR LF. Returns the position after the LF, or 0. */
static inline __attribute__((always_inline)) size_t
resp_simple_length(const char *p, size_t len, size_t pos, size_t *n)
{
	size_t i = pos, u = 0;

	/* lengths of 1 to 3 digits (keys under 1000 bytes, values), unrolled:
	 * the loop below costs twice as much for them */
	if (pos + 4 <= len && p[pos] >= '1' && p[pos] <= '9') {
		if (p[pos + 1] == '\r' && p[pos + 2] == '\n') {
			*n = (size_t)(p[pos] - '0');
			return pos + 3;
		}
		if (p[pos + 1] >= '0' && p[pos + 1] <= '9' &&
		    p[pos + 2] == '\r' && p[pos + 3] == '\n') {
			*n = (size_t)(p[pos] - '0') * 10 +
			    (size_t)(p[pos + 1] - '0');
			return pos + 4;
		}
		/* and 3 digits (URLs of 100 bytes or more) */
		if (pos + 5 <= len && p[pos + 1] >= '0' && p[pos + 1] <= '9' &&
		    p[pos + 2] >= '0' && p[pos + 2] <= '9' &&
		    p[pos + 3] == '\r' && p[pos + 4] == '\n') {
			*n = (size_t)(p[pos] - '0') * 100 +
			    (size_t)(p[pos + 1] - '0') * 10 +
			    (size_t)(p[pos + 2] - '0');
			return pos + 5;
		}
	}
	if (i < len && p[i] == '0') {
		i++;
	} else {
		if (i >= len || p[i] < '1' || p[i] > '9')
			return 0;
		for (; i < len && i - pos < 18 && p[i] >= '0' && p[i] <= '9';
		    i++)
			u = u * 10 + (size_t)(p[i] - '0');
	}
	if (i + 1 >= len || p[i] != '\r' || p[i + 1] != '\n')
		return 0;
	*n = u;
	return i + 2;
}

/* A bulk string "$<n>\r\n<n bytes>\r\n" at p[pos], n <= max: the
 * position after it, with its bytes in *arg and *argl, or 0. */
static inline __attribute__((always_inline)) size_t
resp_simple_bulk(const char *p, size_t len, size_t pos, size_t max,
    const char **arg, size_t *argl)
{
	size_t n;

	if (pos >= len || p[pos] != '$' ||
	    (pos = resp_simple_length(p, len, pos + 1, &n)) == 0 ||
	    n > max || n > len - pos || len - pos - n < 2 ||
	    p[pos + n] != '\r' || p[pos + n + 1] != '\n')
		return 0;
	*arg = p + pos;
	*argl = n;
	return pos + n + 2;
}

/* The hot commands resp_parse_hot knows. */
enum resp_hot {
	RESP_HOT_NONE,
	RESP_HOT_SETNX,		/* SETNX <url> <value> */
	RESP_HOT_SADD,		/* SADD <filter> <member> */
	RESP_HOT_BFADD,		/* BF.ADD <filter> <item> */
};

/* p[0..n) against pattern, letters in either case (mask: 0x20 on the
 * letters of pattern, which is lower case). 8 bytes at a time: n <= 16. */
static inline int
resp_hot_match(const char *p, const char *pattern, const char *mask,
    size_t n)
{
	uint64_t a, b, m, c, d, k;

	memcpy(&a, p, 8);
	memcpy(&b, pattern, 8);
	memcpy(&m, mask, 8);
	memcpy(&c, p + n - 8, 8);
	memcpy(&d, pattern + n - 8, 8);
	memcpy(&k, mask + n - 8, 8);
	return ((a | m) == b) & ((c | k) == d);
}

/*
 * The rest of a hot request from its key bulk string at p[pos]: the key
 * (and SETNX's value, which is read and ignored). Returns the bytes the
 * request takes, or 0 as resp_parse_hot does.
 */
static inline __attribute__((always_inline)) size_t
resp_parse_hot_tail(const char *p, size_t len, size_t pos,
    const struct resp_limits *lim, enum resp_hot cmd, const char **key,
    size_t *keyl)
{
	const char	*v;
	size_t		 vl;
	uint64_t	 w, m, one;

	if ((pos = resp_simple_bulk(p, len, pos, lim->max_bulk, key,
	    keyl)) == 0)
		return 0;
	if (cmd == RESP_HOT_SETNX) {
		/* the usual value is one byte ("SETNX <url> 1"): its seven
		 * bytes and the key's LF before them in one load */
		memcpy(&m, "\xff\xff\xff\xff\xff\0\xff\xff", 8);
		memcpy(&one, "\n$1\r\n\0\r\n", 8);
		if (pos + 7 <= len && (memcpy(&w, p + pos - 1, 8), (w & m) == one))
			pos += 7;
		else if ((pos = resp_simple_bulk(p, len, pos, lim->max_bulk,
		    &v, &vl)) == 0)
			return 0;
	}
	/* every request resp_parse takes is at least this big */
	return pos <= lim->max_request && lim->max_bulk >= 6 ? pos : 0;
}

/*
 * The hot shape: "*3" of three bulk strings whose first is SETNX, SADD or
 * BF.ADD (either case), read in one pass with the command name matched 8
 * bytes at a time. Returns the bytes the request takes, its command in
 * *cmd, the filter it names (SADD, BF.ADD; else NULL) in *name and *namel,
 * its key in *key and *keyl, and in *head how many of its bytes come
 * before the key's bulk string; or 0 if the input does not begin with a
 * whole such request within lim (unauth is not looked at: the caller has
 * authenticated). Where it answers, resp_parse answers the same (fuzz_resp
 * checks it); on 0, ask resp_parse.
 */
static inline size_t
resp_parse_hot(const char *p, size_t len, const struct resp_limits *lim,
    enum resp_hot *cmd, const char **name, size_t *namel, const char **key,
    size_t *keyl, size_t *head)
{
	size_t pos;

	if (len < 16)
		return 0;
	*name = NULL;
	*namel = 0;
	if (resp_hot_match(p, "*3\r\n$5\r\nsetnx\r\n",
	    "\0\0\0\0\0\0\0\0\x20\x20\x20\x20\x20\0\0", 15)) {
		*cmd = RESP_HOT_SETNX;
		pos = 15;
	} else {
		if (resp_hot_match(p, "*3\r\n$4\r\nsadd\r\n",
		    "\0\0\0\0\0\0\0\0\x20\x20\x20\x20\0\0", 14)) {
			*cmd = RESP_HOT_SADD;
			pos = 14;
		} else if (resp_hot_match(p, "*3\r\n$6\r\nbf.add\r\n",
		    "\0\0\0\0\0\0\0\0\x20\x20\0\x20\x20\x20\0\0",
		    16)) {
			*cmd = RESP_HOT_BFADD;
			pos = 16;
		} else
			return 0;
		if ((pos = resp_simple_bulk(p, len, pos, lim->max_bulk, name,
		    namel)) == 0)
			return 0;
	}
	*head = pos;
	return resp_parse_hot_tail(p, len, pos, lim, *cmd, key, keyl);
}

/* Whether a[0..n) and b[0..n) are equal, 8 bytes at a time: 8 <= n. */
static inline __attribute__((always_inline)) int
resp_same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y;
	size_t i;

	for (i = 0; i + 8 < n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return x == y;
}

/*
 * A pipeline repeats its command and filter: when p begins with the head
 * of the hot request at prev (what resp_parse_hot returned in *head, with
 * *cmd), only the key (and SETNX's value) are left to read. Returns what
 * resp_parse_hot would (the same command and filter as prev's), or 0 if the
 * head differs or the request is not whole (then ask resp_parse_hot).
 */
static inline __attribute__((always_inline)) size_t
resp_parse_hot_again(const char *p, size_t len, const char *prev,
    size_t head, const struct resp_limits *lim, enum resp_hot cmd,
    const char **key, size_t *keyl)
{
	if (len < head + 4 || !resp_same_bytes(p, prev, head))
		return 0;
	return resp_parse_hot_tail(p, len, head, lim, cmd, key, keyl);
}

#endif
