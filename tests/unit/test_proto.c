/*
 * test_proto.c - request framing (proto_frame), tokenising (proto_split) and
 * command-name matching (proto_token_is).
 */
#include <string.h>

#include "proto.h"
#include "tap.h"

/* The literal and its length without the terminating NUL. */
#define S(lit)	(lit), (sizeof(lit) - 1)

/* 1 if token i of r is exactly the string want. */
static int
tok_eq(const struct request *r, int i, const char *want)
{
	size_t n = strlen(want);

	return i < r->argc && r->argl[i] == n &&
	    memcmp(r->argv[i], want, n) == 0;
}

static void
test_frame(void)
{
	size_t	 next;
	long	 n;

	next = 999;
	n = proto_frame(S("PING\n"), &next);
	ok(n == 4 && next == 5, "frame: LF line, length 4, next 5 (got %ld, %zu)",
	    n, next);

	n = proto_frame(S("PING\r\n"), &next);
	ok(n == 4 && next == 6, "frame: CRLF dropped from length, counted in "
	    "next (got %ld, %zu)", n, next);

	{
		const char in[] = "a\rb\n";

		n = proto_frame(in, sizeof(in) - 1, &next);
		ok(n == 3 && next == 4 && in[1] == '\r',
		    "frame: lone CR inside the line is kept (got %ld, %zu)", n,
		    next);
	}

	n = proto_frame(S("a\r\r\n"), &next);
	ok(n == 2 && next == 4, "frame: only the CR right before LF is dropped "
	    "(got %ld, %zu)", n, next);

	next = 12345;
	n = proto_frame(S("PING"), &next);
	ok(n == -1, "frame: no newline -> -1");
	ok(next == 12345, "frame: no newline leaves next untouched");

	n = proto_frame(S("PING\r"), &next);
	ok(n == -1, "frame: trailing CR without LF -> -1 (the LF may follow)");

	n = proto_frame("", 0, &next);
	ok(n == -1, "frame: empty buffer -> -1");

	n = proto_frame(S("\n"), &next);
	ok(n == 0 && next == 1, "frame: empty line, length 0, next 1 (got %ld, "
	    "%zu)", n, next);

	n = proto_frame(S("\r\n"), &next);
	ok(n == 0 && next == 2, "frame: line of only CRLF, length 0, next 2 "
	    "(got %ld, %zu)", n, next);

	n = proto_frame(S("SEEN a\nPING\n"), &next);
	ok(n == 6 && next == 7, "frame: stops at the first LF of a pipeline "
	    "(got %ld, %zu)", n, next);

	/* walk a pipelined buffer line by line */
	{
		const char	 buf[] = "PING\r\nSEEN x\n\r\nCHECK y\npartial";
		const char	*p = buf;
		size_t		 left = sizeof(buf) - 1;
		long		 lens[8];
		int		 lines = 0;

		while ((n = proto_frame(p, left, &next)) >= 0 && lines < 8) {
			lens[lines++] = n;
			p += next;
			left -= next;
		}
		ok(lines == 4 && lens[0] == 4 && lens[1] == 6 && lens[2] == 0 &&
		    lens[3] == 7, "frame: pipeline of 4 lines walked with next "
		    "(got %d lines)", lines);
		ok(left == 7 && memcmp(p, "partial", 7) == 0,
		    "frame: the unterminated tail is left for later");
	}

	/* the newline is found wherever it is, length is not limited here */
	{
		char big[10001];

		memset(big, 'x', sizeof(big));
		big[10000] = '\n';
		n = proto_frame(big, sizeof(big), &next);
		ok(n == 10000 && next == 10001, "frame: 10000-byte line");
	}

	/* a NUL before the newline does not stop framing; proto_split
	 * refuses it */
	{
		const char in[] = "a\0b\n";

		n = proto_frame(in, sizeof(in) - 1, &next);
		ok(n == 3 && next == 4, "frame: NUL inside a line is framed");
	}
}

static void
test_split(void)
{
	struct request		 r;
	enum proto_status	 st;

	st = proto_split(S("PING"), &r);
	ok(st == PROTO_OK && r.argc == 1 && tok_eq(&r, 0, "PING"),
	    "split: one token");

	st = proto_split(S("SEEN news https://a.com/x"), &r);
	ok(st == PROTO_OK && r.argc == 3 && tok_eq(&r, 0, "SEEN") &&
	    tok_eq(&r, 1, "news") && tok_eq(&r, 2, "https://a.com/x"),
	    "split: three tokens");

	st = proto_split(S("SEEN\tnews \t  \t key"), &r);
	ok(st == PROTO_OK && r.argc == 3 && tok_eq(&r, 0, "SEEN") &&
	    tok_eq(&r, 1, "news") && tok_eq(&r, 2, "key"),
	    "split: tabs and runs of spaces separate tokens");

	st = proto_split(S("  \t SEEN key \t "), &r);
	ok(st == PROTO_OK && r.argc == 2 && tok_eq(&r, 0, "SEEN") &&
	    tok_eq(&r, 1, "key"), "split: leading and trailing blanks ignored");

	st = proto_split(S(""), &r);
	ok(st == PROTO_EMPTY && r.argc == 0, "split: empty line -> PROTO_EMPTY");

	st = proto_split(S("   \t\t  "), &r);
	ok(st == PROTO_EMPTY && r.argc == 0,
	    "split: blank line -> PROTO_EMPTY");

	st = proto_split(S("a b c d"), &r);
	ok(st == PROTO_OK && r.argc == 4 && tok_eq(&r, 3, "d"),
	    "split: %d tokens (PROTO_MAX_TOKENS) are OK", PROTO_MAX_TOKENS);

	st = proto_split(S("a b c d e"), &r);
	ok(st == PROTO_TOO_MANY, "split: 5 tokens -> PROTO_TOO_MANY");

	st = proto_split(S("a b c d e f g h i j"), &r);
	ok(st == PROTO_TOO_MANY, "split: 10 tokens -> PROTO_TOO_MANY");

	st = proto_split(S("a b c d   \t"), &r);
	ok(st == PROTO_OK && r.argc == 4,
	    "split: 4 tokens plus trailing blanks are still OK");

	{
		const char in[] = "SEEN a\0b";

		st = proto_split(in, sizeof(in) - 1, &r);
		ok(st == PROTO_NUL, "split: NUL byte -> PROTO_NUL");
	}
	{
		const char in[] = "\0";

		st = proto_split(in, 1, &r);
		ok(st == PROTO_NUL, "split: lone NUL -> PROTO_NUL, not EMPTY");
	}
	{
		/* the NUL comes after more than PROTO_MAX_TOKENS tokens: the
		 * whole line is still refused as not text */
		const char in[] = "a b c d e\0";

		st = proto_split(in, sizeof(in) - 1, &r);
		ok(st == PROTO_NUL, "split: NUL wins over too many tokens");
	}
	{
		const char in[] = "SEEN a\0";

		st = proto_split(in, 6, &r);
		ok(st == PROTO_OK && r.argc == 2,
		    "split: a NUL past len is not looked at");
	}

	/* tokens point into the input: no copy */
	{
		const char in[] = " SEEN  news\tkey ";

		st = proto_split(in, sizeof(in) - 1, &r);
		ok(st == PROTO_OK && r.argc == 3 && r.argv[0] == in + 1 &&
		    r.argv[1] == in + 7 && r.argv[2] == in + 12 &&
		    r.argl[0] == 4 && r.argl[1] == 4 && r.argl[2] == 3,
		    "split: tokens point into the input buffer");
	}

	/* not NUL-terminated: split must honour len */
	{
		const char in[] = "SEEN keyXXXX";

		st = proto_split(in, 8, &r);
		ok(st == PROTO_OK && r.argc == 2 && tok_eq(&r, 1, "key"),
		    "split: stops at len, not at a NUL");
	}

	/* bytes >= 0x80 are ordinary token bytes */
	{
		const char in[] = "SEEN https://\xc3\xa9t\xc3\xa9.fr/\xff\x80";

		st = proto_split(in, sizeof(in) - 1, &r);
		ok(st == PROTO_OK && r.argc == 2 &&
		    r.argl[1] == sizeof(in) - 1 - 5,
		    "split: bytes >= 0x80 are part of tokens");
	}
	{
		const char in[] = "\xa0SEEN\xa0";	/* NBSP in Latin-1 */

		st = proto_split(in, sizeof(in) - 1, &r);
		ok(st == PROTO_OK && r.argc == 1 && r.argl[0] == 6,
		    "split: 0xa0 is not a separator");
	}

	/* only space and tab separate */
	st = proto_split(S("a\rb\vc\fd"), &r);
	ok(st == PROTO_OK && r.argc == 1 && r.argl[0] == 7,
	    "split: CR, VT, FF are not separators");

	/* a CR left inside a line by proto_frame stays in the token */
	{
		const char	 in[] = "SEEN a\r\r\n";
		size_t		 next;
		long		 n = proto_frame(in, sizeof(in) - 1, &next);

		st = proto_split(in, (size_t)n, &r);
		ok(n == 7 && st == PROTO_OK && r.argc == 2 &&
		    tok_eq(&r, 1, "a\r"), "frame+split: inner CR is a key byte");
	}
}

static void
test_token_is(void)
{
	ok(proto_token_is(S("SEEN"), "SEEN"), "token_is: SEEN == SEEN");
	ok(proto_token_is(S("seen"), "SEEN"), "token_is: seen == SEEN");
	ok(proto_token_is(S("SeEn"), "SEEN"), "token_is: SeEn == SEEN");
	ok(!proto_token_is(S("SEE"), "SEEN"), "token_is: SEE != SEEN");
	ok(!proto_token_is(S("SEENX"), "SEEN"), "token_is: SEENX != SEEN");
	ok(!proto_token_is(S("SEEM"), "SEEN"), "token_is: SEEM != SEEN");
	ok(!proto_token_is("", 0, "SEEN"), "token_is: empty token != SEEN");
	ok(proto_token_is("", 0, ""), "token_is: empty token == empty word");
	ok(!proto_token_is(S("x"), ""), "token_is: x != empty word");
	/* length-bounded: the bytes after len do not count */
	ok(proto_token_is("PINGPONG", 4, "PING"),
	    "token_is: compares only len bytes");
	ok(!proto_token_is("PIN", 3, "PING"),
	    "token_is: a prefix of the word is not the word");
	/* only ASCII letters fold */
	ok(!proto_token_is(S("\xd3K"), "OK"),
	    "token_is: non-ASCII byte does not fold to a letter");
	ok(!proto_token_is(S("SEEN\0"), "SEEN"),
	    "token_is: a NUL in the token does not end it early");
	ok(!proto_token_is(S("{ING"), "[ING"),
	    "token_is: only a-z fold ('{' is not '[')");
	ok(proto_token_is(S("info"), "INFO") &&
	    proto_token_is(S("Filters"), "FILTERS") &&
	    proto_token_is(S("quit"), "QUIT"), "token_is: other commands fold");
}

int
main(void)
{
	test_frame();
	test_split();
	test_token_is();
	return done_testing();
}
