/*
 * test_proto.c - request framing (proto_frame), tokenising (proto_split),
 * command-name matching (proto_token_is) and the one-pass recogniser of
 * plain SEEN/CHECK lines (proto_simple_key).
 */
#include <stdint.h>
#include <stdio.h>
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

/* proto_simple_key on a literal: its return, and key/check/next if >= 0. */
static long
simple(const char *p, size_t len, size_t max, size_t *keyoff, int *check,
    size_t *next)
{
	const char	*key = NULL;
	long		 n;

	*check = -1;
	*next = 0;
	n = proto_simple_key(p, len, max, &key, check, next);
	*keyoff = key != NULL ? (size_t)(key - p) : SIZE_MAX;
	return n;
}

static void
test_simple_key(void)
{
	size_t	 ko, next;
	int	 chk;
	long	 n;

	n = simple(S("SEEN abc\r\n"), 100, &ko, &chk, &next);
	ok(n == 3 && ko == 5 && chk == 0 && next == 10,
	    "simple: SEEN key CRLF (got %ld, key at %zu, check %d, next %zu)",
	    n, ko, chk, next);
	n = simple(S("SEEN abc\n"), 100, &ko, &chk, &next);
	ok(n == 3 && ko == 5 && chk == 0 && next == 9, "simple: SEEN key LF");
	n = simple(S("CHECK abc\r\n"), 100, &ko, &chk, &next);
	ok(n == 3 && ko == 6 && chk == 1 && next == 11, "simple: CHECK key");
	n = simple(S("sEeN x\n"), 100, &ko, &chk, &next);
	ok(n == 1 && chk == 0, "simple: the command in any case");
	n = simple(S("check x\n"), 100, &ko, &chk, &next);
	ok(n == 1 && chk == 1, "simple: check in lower case");
	n = simple(S("SEEN h\xc3\xa9\n"), 100, &ko, &chk, &next);
	ok(n == 3, "simple: bytes above 0x7f are key bytes (UTF-8)");
	n = simple(S("SEEN a\nSEEN bb\n"), 100, &ko, &chk, &next);
	ok(n == 1 && next == 7, "simple: the first line of a pipeline");

	/* everything else goes to the general path */
	ok(simple(S("SEEN abc"), 100, &ko, &chk, &next) == -1,
	    "simple: no terminator yet -> -1");
	ok(simple(S("SEEN abc\r"), 100, &ko, &chk, &next) == -1,
	    "simple: CR without its LF yet -> -1");
	ok(simple(S("SEEN  abc\n"), 100, &ko, &chk, &next) == -1,
	    "simple: two spaces -> -1");
	ok(simple(S("SEEN\tabc\n"), 100, &ko, &chk, &next) == -1,
	    "simple: a tab -> -1");
	ok(simple(S("SEEN a b\n"), 100, &ko, &chk, &next) == -1,
	    "simple: two arguments -> -1");
	ok(simple(S("SEEN abc \n"), 100, &ko, &chk, &next) == -1,
	    "simple: a trailing space -> -1");
	ok(simple(S("SEEN a\0b\n"), 100, &ko, &chk, &next) == -1,
	    "simple: a NUL -> -1");
	ok(simple(S("SEEN a\rb\n"), 100, &ko, &chk, &next) == -1,
	    "simple: a CR inside the key -> -1");
	ok(simple(S("SEEN a\r\r\n"), 100, &ko, &chk, &next) == -1,
	    "simple: CR CR LF -> -1");
	ok(simple(S("SEEN a\x01b\n"), 100, &ko, &chk, &next) == -1,
	    "simple: a control byte -> -1");
	ok(simple(S("SEEN \n"), 100, &ko, &chk, &next) == -1,
	    "simple: an empty key -> -1");
	ok(simple(S("SEEN\n"), 100, &ko, &chk, &next) == -1,
	    "simple: no key -> -1");
	ok(simple(S("SEENX abc\n"), 100, &ko, &chk, &next) == -1 &&
	    simple(S("SEEM abc\n"), 100, &ko, &chk, &next) == -1 &&
	    simple(S("CHECKS a\n"), 100, &ko, &chk, &next) == -1 &&
	    simple(S("\xd3" "EEN a\n"), 100, &ko, &chk, &next) == -1 &&
	    simple(S("PING\n"), 100, &ko, &chk, &next) == -1,
	    "simple: other words -> -1");
	ok(simple(S("SEEN\n"), 3, &ko, &chk, &next) == -1 &&
	    simple("", 0, 100, &ko, &chk, &next) == -1,
	    "simple: short input -> -1");
	/* max counts the line without its terminator, as proto_frame does */
	n = simple(S("SEEN abc\r\n"), 8, &ko, &chk, &next);
	ok(n == 3, "simple: a line of exactly max bytes is simple");
	ok(simple(S("SEEN abcd\r\n"), 8, &ko, &chk, &next) == -1,
	    "simple: a line of max + 1 bytes -> -1 (the error path)");
	ok(simple(S("SEEN abcdefghij\n"), 8, &ko, &chk, &next) == -1,
	    "simple: the terminator beyond max is not looked for");
}

/*
 * Every line proto_simple_key accepts, proto_frame and proto_split read
 * the same way (the same key, the same next), for lines of every length
 * across the 16-byte steps and with a blank or a control byte at every
 * position; and every plain one it is shown, it accepts.
 */
static void
test_simple_agrees(void)
{
	static const char odd[] = { ' ', '\t', '\0', '\r', '\x01', '\x7f' };
	char		 line[300];
	size_t		 bad = 0, accepted = 0, ko, next, fnext;
	int		 chk;

	for (size_t klen = 1; klen <= 150; klen++) {
		for (size_t at = 0; at <= klen; at++) {
			for (size_t o = 0; o < sizeof(odd); o++) {
				struct request	 rq;
				long		 n, fl;
				size_t		 len;

				memcpy(line, "SEEN ", 5);
				for (size_t i = 0; i < klen; i++)
					line[5 + i] = (char)('a' + i % 26);
				if (at < klen)	/* at == klen: a plain line */
					line[5 + at] = odd[o];
				len = 5 + klen;
				line[len++] = '\r';
				line[len++] = '\n';
				n = simple(line, len, 1000, &ko, &chk, &next);
				if (at == klen && n != (long)klen)
					bad++;
				if (n < 0)
					continue;
				accepted++;
				fl = proto_frame(line, len, &fnext);
				if (fl < 0 || fnext != next ||
				    proto_split(line, (size_t)fl, &rq) !=
				    PROTO_OK || rq.argc != 2 ||
				    rq.argl[1] != (size_t)n ||
				    rq.argv[1] != line + ko)
					bad++;
			}
		}
	}
	ok(bad == 0 && accepted > 0, "simple: agrees with frame + split on "
	    "%zu accepted lines (%zu disagreements)", accepted, bad);
}

int
main(void)
{
	test_frame();
	test_split();
	test_token_is();
	test_simple_key();
	test_simple_agrees();
	return done_testing();
}
