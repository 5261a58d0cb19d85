/*
 * resp.h - RESP2, the Redis protocol: request parsing and reply encoding,
 * no I/O.
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

/* A bulk length as resp_parse accepts it: "0" or 1-18 digits without a
 * leading zero, then CR LF. Returns the position after the LF, or 0. */
static inline size_t
resp_simple_length(const char *p, size_t len, size_t pos, size_t *n)
{
	size_t i = pos, u = 0;

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

/*
 * The hot shape, an array of exactly three bulk strings (SETNX url v,
 * SADD filter member, BF.ADD filter item), read in one pass: returns the
 * bytes the request takes with its arguments in argv/argl, or 0 if the
 * input does not begin with a whole such request within lim (unauth is
 * not looked at: the caller has authenticated). Where it answers, it
 * answers what resp_parse does (fuzz_resp checks it); on 0, ask resp_parse.
 */
static inline size_t
resp_parse3(const char *p, size_t len, const struct resp_limits *lim,
    const char *argv[3], size_t argl[3])
{
	size_t pos = 4, n;

	if (len < 4 || memcmp(p, "*3\r\n", 4) != 0)
		return 0;
	for (int k = 0; k < 3; k++) {
		if (pos >= len || p[pos] != '$' ||
		    (pos = resp_simple_length(p, len, pos + 1, &n)) == 0 ||
		    n > lim->max_bulk || n > len - pos || len - pos - n < 2 ||
		    p[pos + n] != '\r' || p[pos + n + 1] != '\n')
			return 0;
		argv[k] = p + pos;
		argl[k] = n;
		pos += n + 2;
	}
	return pos <= lim->max_request ? pos : 0;
}

#endif
