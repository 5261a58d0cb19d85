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

/*
 * The request nearly every client sends, recognised in one pass: a whole
 * line "SEEN <key>" or "CHECK <key>" (command in any case, one space, CR LF
 * or LF) whose key has no byte below 0x21, and at most max bytes long
 * without its terminator. Returns the key's length and sets *key, *check
 * (1 for CHECK) and *next (the bytes the line takes); returns -1 for
 * anything else, which proto_frame and proto_split then handle: the same
 * tokens, found more slowly.
 */
long	proto_simple_key(const char *p, size_t len, size_t max,
	    const char **key, int *check, size_t *next);

/* Case-insensitive compare of a token with an upper-case ASCII word. */
int	proto_token_is(const char *tok, size_t len, const char *word);

#endif
