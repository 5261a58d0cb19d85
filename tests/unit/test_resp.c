/*
 * test_resp.c - the RESP2 request parser (resp_parse): framing, every
 * error with its exact text, pipelines, every split point, binary bulk
 * strings, the limits; and the reply encoders (resp_add_*).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "tap.h"

/* The literal and its length without the terminating NUL. */
#define S(lit)	(lit), (sizeof(lit) - 1)

#define MAX_ARGS	8

static const char	*av[MAX_ARGS];
static size_t		 al[MAX_ARGS];
static struct resp_limits lim = { 64, 4096, MAX_ARGS, 0, 0, 0 };

static enum resp_status
parse(const char *p, size_t len, struct resp_request *req)
{
	memset(req, 0, sizeof(*req));
	memset(av, 0, sizeof(av));
	memset(al, 0, sizeof(al));
	req->argv = av;
	req->argl = al;
	return resp_parse(p, len, &lim, req);
}

static int
arg_is(const struct resp_request *r, int i, const char *want, size_t n)
{
	return i < r->argc && r->argl[i] == n && memcmp(r->argv[i], want, n) == 0;
}

/* The error text for p, or "" if p is not an error. */
static const char *
error_of(const char *p, size_t len)
{
	static struct resp_request req;

	return parse(p, len, &req) == RESP_ERROR ? req.error : "";
}

static void
test_simple(void)
{
	struct resp_request	 r;
	enum resp_status	 st;
	const char		 in[] = "*2\r\n$5\r\nSETNX\r\n$3\r\nurl\r\n";

	st = parse(S(in), &r);
	ok(st == RESP_OK && r.argc == 2, "SETNX url: OK, argc 2");
	ok(r.used == sizeof(in) - 1, "SETNX url: takes all %zu bytes (got %zu)",
	    sizeof(in) - 1, r.used);
	ok(arg_is(&r, 0, S("SETNX")) && arg_is(&r, 1, S("url")),
	    "SETNX url: arguments as sent");
	ok(r.argv[0] == in + 8 && r.argv[1] == in + 19,
	    "arguments point into the input, not into a copy");

	st = parse(S("*1\r\n$0\r\n\r\n"), &r);
	ok(st == RESP_OK && r.argc == 1 && r.argl[0] == 0 && r.used == 10,
	    "an empty bulk string is an argument of length 0");

	st = parse(S("*0\r\n"), &r);
	ok(st == RESP_EMPTY && r.used == 4, "*0: empty request, 4 bytes");
	st = parse(S("*-1\r\n"), &r);
	ok(st == RESP_EMPTY && r.used == 5,
	    "*-1 (null array): empty request as Redis has it, 5 bytes");
	st = parse(S("*-1\r\n*1\r\n$4\r\nPING\r\n"), &r);
	ok(st == RESP_EMPTY && r.used == 5,
	    "*-1 then a request: only the null array is taken");
}

static void
test_pipeline(void)
{
	const char		 in[] = "*1\r\n$4\r\nPING\r\n"
				     "*0\r\n"
				     "*3\r\n$4\r\nSADD\r\n$1\r\nf\r\n$2\r\nab\r\n"
				     "*2\r\n$3\r\nGET";
	struct resp_request	 r;
	size_t			 off = 0;
	enum resp_status	 st;

	st = parse(in + off, sizeof(in) - 1 - off, &r);
	ok(st == RESP_OK && r.argc == 1 && arg_is(&r, 0, S("PING")) &&
	    r.used == 14, "pipeline: first request PING, 14 bytes");
	off += r.used;
	st = parse(in + off, sizeof(in) - 1 - off, &r);
	ok(st == RESP_EMPTY && r.used == 4, "pipeline: then *0, 4 bytes");
	off += r.used;
	st = parse(in + off, sizeof(in) - 1 - off, &r);
	ok(st == RESP_OK && r.argc == 3 && arg_is(&r, 0, S("SADD")) &&
	    arg_is(&r, 1, S("f")) && arg_is(&r, 2, S("ab")),
	    "pipeline: then SADD f ab");
	off += r.used;
	st = parse(in + off, sizeof(in) - 1 - off, &r);
	ok(st == RESP_MORE && r.used > sizeof(in) - 1 - off,
	    "pipeline: the partial last request needs more (need %zu > %zu)",
	    r.used, sizeof(in) - 1 - off);
}

static void
test_binary(void)
{
	const char		 in[] = "*2\r\n$4\r\nSADD\r\n$7\r\na\0b\r\nc\n\r\n";
	struct resp_request	 r;
	enum resp_status	 st;

	st = parse(S(in), &r);
	ok(st == RESP_OK && r.argc == 2 && arg_is(&r, 1, S("a\0b\r\nc\n")),
	    "binary: NUL, CR LF and LF inside a bulk string are data");
	ok(r.used == sizeof(in) - 1, "binary: the whole request is taken");

	st = parse(S("*1\r\n$2\r\n\r\n\r\n"), &r);
	ok(st == RESP_OK && arg_is(&r, 0, S("\r\n")),
	    "binary: a bulk string that is just CR LF");
}

/* Every error case, with the exact text (the golden test checks the
 * texts against redis-server). */
static void
test_errors(void)
{
	static const struct {
		const char	*in;
		size_t		 len;
		const char	*want;
		const char	*what;
	} t[] = {
#define E(in, want, what)	{ in, sizeof(in) - 1, want, what }
		E("*x\r\n", "Protocol error: invalid multibulk length",
		    "non-numeric array length"),
		E("*1x\r\n", "Protocol error: invalid multibulk length",
		    "digits then junk"),
		E("* 1\r\n", "Protocol error: invalid multibulk length",
		    "a space before the length"),
		E("*+1\r\n", "Protocol error: invalid multibulk length",
		    "a plus sign"),
		E("*01\r\n", "Protocol error: invalid multibulk length",
		    "a leading zero"),
		E("*-0\r\n", "Protocol error: invalid multibulk length",
		    "minus zero"),
		E("*\r\n", "Protocol error: invalid multibulk length",
		    "no digits"),
		E("*-2\r\n", "Protocol error: invalid multibulk length",
		    "negative array length other than -1"),
		E("*2147483648\r\n", "Protocol error: invalid multibulk length",
		    "array length above INT_MAX"),
		E("*99999999999999999999\r\n",
		    "Protocol error: invalid multibulk length",
		    "array length past long long"),
		E("*1\n", "Protocol error: invalid multibulk length",
		    "array length ended by LF alone"),
		E("*1\rX", "Protocol error: invalid multibulk length",
		    "array length: CR not followed by LF"),
		E("*123456789012345678901234567890123",
		    "Protocol error: too big mbulk count string",
		    "no CR within RESP_LINE_MAX bytes of the array length"),
		E("*1\r\n$x\r\n", "Protocol error: invalid bulk length",
		    "non-numeric bulk length"),
		E("*1\r\n$-1\r\n", "Protocol error: invalid bulk length",
		    "null bulk string as an argument"),
		E("*1\r\n$-10\r\n", "Protocol error: invalid bulk length",
		    "negative bulk length"),
		E("*1\r\n$65\r\n", "Protocol error: invalid bulk length",
		    "bulk length over max_bulk"),
		E("*1\r\n$9223372036854775808\r\n",
		    "Protocol error: invalid bulk length",
		    "bulk length past long long"),
		E("*1\r\n$4\n", "Protocol error: invalid bulk length",
		    "bulk length ended by LF alone"),
		E("*1\r\n$4\r\r", "Protocol error: invalid bulk length",
		    "bulk length: CR not followed by LF"),
		E("*1\r\n$123456789012345678901234567890123",
		    "Protocol error: too big bulk count string",
		    "no CR within RESP_LINE_MAX bytes of the bulk length"),
		E("*1\r\nfoo\r\n", "Protocol error: expected '$', got 'f'",
		    "an argument that is not a bulk string"),
		E("*1\r\n*1\r\n$4\r\nPING\r\n",
		    "Protocol error: expected '$', got '*'", "a nested array"),
		E("*1\r\n:1\r\n", "Protocol error: expected '$', got ':'",
		    "an integer as an argument"),
		E("*1\r\n\r\n", "Protocol error: expected '$', got ' '",
		    "a CR where '$' should be: shown as a space, as Redis"),
		E("*1\r\n\0", "Protocol error: expected '$', got ' '",
		    "a NUL where '$' should be: shown as a space"),
		E("*1\r\n$4\r\nPINGXY", "Protocol error: bulk string not "
		    "followed by CRLF", "bulk string followed by other bytes"),
		E("*1\r\n$4\r\nPING\rX", "Protocol error: bulk string not "
		    "followed by CRLF", "bulk string followed by CR only"),
		E("*1\r\n$3\r\nPING\r\n", "Protocol error: bulk string not "
		    "followed by CRLF", "bulk length one short"),
		E("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
		    "Protocol error: expected '$', got 'f'",
		    "Redis's 'wrong multibulk payload header' case"),
		E("PING\r\n", "Protocol error: expected '*', got 'P'",
		    "a line request is not RESP"),
#undef E
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *got = error_of(t[i].in, t[i].len);

		ok(strcmp(got, t[i].want) == 0, "error: %s -> \"%s\" (got "
		    "\"%s\")", t[i].what, t[i].want, got);
	}
}

/* Feeds every prefix of in[0..len): each is RESP_MORE with an honest need
 * (every prefix shorter than it is RESP_MORE too) until the whole request
 * gives the same result as the whole buffer. */
static int
check_splits(const char *in, size_t len)
{
	struct resp_request	 whole, r;
	enum resp_status	 wst, st;
	const char		*wav[MAX_ARGS];
	size_t			 wal[MAX_ARGS], k, need = 0, end;
	char			 werr[sizeof(whole.error)];
	int			 wargc;

	wst = parse(in, len, &whole);
	wargc = whole.argc;
	memcpy(wav, av, sizeof(av));
	memcpy(wal, al, sizeof(al));
	memcpy(werr, whole.error, sizeof(werr));
	end = wst == RESP_ERROR || wst == RESP_MORE ? len : whole.used;
	for (k = 0; k <= len; k++) {
		char *copy = malloc(k + 1);	/* ASan sees any over-read */

		memcpy(copy, in, k);
		st = parse(copy, k, &r);
		if (st == RESP_MORE) {
			if (r.used <= k || k >= end) {
				free(copy);
				return 0;
			}
			if (r.used > need)
				need = r.used;
			free(copy);
			continue;
		}
		/* a decision: never before need said it could come */
		if (k < need || st != wst || (wst == RESP_ERROR &&
		    strcmp(r.error, werr) != 0)) {
			free(copy);
			return 0;
		}
		if (wst != RESP_ERROR) {
			if (r.used != whole.used || r.argc != wargc)
				return free(copy), 0;
			for (int i = 0; i < wargc && i < MAX_ARGS; i++)
				if (al[i] != wal[i] || av[i] - copy !=
				    wav[i] - in)
					return free(copy), 0;
		}
		free(copy);
	}
	return 1;
}

static void
test_splits(void)
{
	static const struct {
		const char	*in;
		size_t		 len;
	} t[] = {
#define T(in)	{ in, sizeof(in) - 1 }
		T("*2\r\n$5\r\nSETNX\r\n$3\r\nurl\r\n"),
		T("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n"),
		T("*3\r\n$4\r\nSADD\r\n$1\r\nf\r\n$7\r\na\0b\r\nc\n\r\n"),
		T("*1\r\n$0\r\n\r\n"),
		T("*-1\r\n"),
		T("*0\r\n"),
		T("*1\r\n$4\r\nPINGXY"),
		T("*1\r\n*1\r\n$4\r\nPING\r\n"),
		T("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"),
		T("*1\r\n$65\r\n"),
		T("*10\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"
		    "$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n$1\r\nj\r\n"),
		T("*123456789012345678901234567890123"),
		T("*1\r\n$64\r\n"
		    "0123456789012345678901234567890123456789012345678901234567890123"
		    "\r\n"),
#undef T
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ok(check_splits(t[i].in, t[i].len), "splits: every prefix of "
		    "case %zu (%zu bytes) needs more, honestly, until it gives "
		    "the whole buffer's result", i, t[i].len);
}

static void
test_limits(void)
{
	struct resp_request	 r;
	enum resp_status	 st;
	char			 big[256];
	int			 n;

	/* max_bulk = 64: 64 is fine, 65 is not */
	n = snprintf(big, sizeof(big), "*1\r\n$64\r\n%064d\r\n", 0);
	st = parse(big, (size_t)n, &r);
	ok(st == RESP_OK && r.argl[0] == 64, "max_bulk: a bulk string of "
	    "exactly max_bulk bytes is accepted");
	st = parse(S("*1\r\n$65\r\n"), &r);
	ok(st == RESP_ERROR, "max_bulk: one byte more is refused from its "
	    "header alone, before its data comes");
	st = parse(S("*1\r\n$64\r\n"), &r);
	ok(st == RESP_MORE && r.used == 9 + 64 + 2, "max_bulk: with the "
	    "header only, need header + 64 + CR LF (got %zu)", r.used);

	/* the argument bound: 8 slots */
	st = parse(S("*9\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"
	    "$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n*1\r\n"),
	    &r);
	ok(st == RESP_TOO_MANY && r.argc == 9 && r.used == 4 + 9 * 7,
	    "max_args: 9 arguments for 8 slots: TOO_MANY, argc 9, the whole "
	    "request skipped (used %zu)", r.used);
	ok(arg_is(&r, 0, S("a")) && arg_is(&r, 7, S("h")),
	    "max_args: the first 8 arguments are there for the error reply");
	st = parse(S("*8\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"
	    "$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n"), &r);
	ok(st == RESP_OK && r.argc == 8, "max_args: exactly 8 is OK");

	/* huge announced lengths: refused at once, nothing to buffer */
	st = parse(S("*2147483647\r\n"), &r);
	ok(st == RESP_ERROR && strcmp(r.error,
	    "Protocol error: too big request") == 0, "huge array length "
	    "(INT_MAX): too big request at once (got \"%s\")", r.error);
	st = parse(S("*682\r\n"), &r);
	ok(st == RESP_ERROR, "682 arguments cannot fit in 4096 bytes: refused "
	    "from the header");
	st = parse(S("*681\r\n"), &r);
	ok(st == RESP_MORE && r.used == 7, "681 arguments might fit: need "
	    "more, one byte at a time (got %zu)", r.used);
	{
		struct resp_limits	save = lim;

		lim.max_bulk = 1 << 20;
		st = parse(S("*1\r\n$4096\r\n"), &r);
		ok(st == RESP_ERROR && strcmp(r.error,
		    "Protocol error: too big request") == 0,
		    "a bulk string within max_bulk but past max_request: too "
		    "big request before its data comes");
		st = parse(S("*1\r\n$4083\r\n"), &r);
		ok(st == RESP_MORE && r.used == 4096, "a request of exactly "
		    "max_request bytes is waited for (need %zu)", r.used);
		st = parse(S("*2\r\n$4078\r\n"), &r);
		ok(st == RESP_ERROR, "a bulk string that leaves no room for "
		    "the next argument: too big request");

		lim.max_bulk = 1 << 20;
		lim.max_request = 1 << 20;
		lim.unauth = 1;
		st = parse(S("*11\r\n"), &r);
		ok(st == RESP_ERROR && strcmp(r.error, "Protocol error: "
		    "unauthenticated multibulk length") == 0,
		    "unauth: 11 arguments -> unauthenticated multibulk length");
		st = parse(S("*10\r\n"), &r);
		ok(st == RESP_MORE, "unauth: 10 arguments are fine");
		st = parse(S("*1\r\n$16385\r\n"), &r);
		ok(st == RESP_ERROR && strcmp(r.error, "Protocol error: "
		    "unauthenticated bulk length") == 0,
		    "unauth: 16385 bytes -> unauthenticated bulk length");
		st = parse(S("*1\r\n$16384\r\n"), &r);
		ok(st == RESP_MORE, "unauth: 16384 bytes are fine");
		st = parse(S("*x\r\n"), &r);
		ok(st == RESP_ERROR && strcmp(r.error, "Protocol error: "
		    "invalid multibulk length") == 0,
		    "unauth: an invalid length is still that first, as Redis");
		lim = save;
	}
	st = parse("", 0, &r);
	ok(st == RESP_MORE && r.used == 1, "empty input: need 1 byte");
}

static int
buf_is(struct buf *b, const char *want, size_t n)
{
	int same = buf_used(b) == n && memcmp(buf_head(b), want, n) == 0;

	if (!same)
		diag("got \"%.*s\"", (int)buf_used(b), buf_head(b));
	buf_free(b);
	return same;
}

static void
test_encode(void)
{
	struct buf b = { 0 };

	resp_add_status(&b, "OK");
	ok(buf_is(&b, S("+OK\r\n")), "status: +OK");
	resp_add_status(&b, "a\r\nb\n");
	ok(buf_is(&b, S("+a  b\r\n")), "status: CR LF inside become spaces, "
	    "at the end are dropped");
	resp_add_error(&b, "ERR", S("unknown command 'x\r\ny'"));
	ok(buf_is(&b, S("-ERR unknown command 'x  y'\r\n")),
	    "error: CR LF in the text cannot break the reply");
	resp_add_error(&b, "NOAUTH", S("Authentication required."));
	ok(buf_is(&b, S("-NOAUTH Authentication required.\r\n")),
	    "error: its own code");
	resp_add_errorf(&b, "ERR", "wrong number of arguments for '%s' "
	    "command", "setnx");
	ok(buf_is(&b, S("-ERR wrong number of arguments for 'setnx' "
	    "command\r\n")), "errorf: formatted");
	resp_add_error(&b, "ERR", S("\r\nx\r\n"));
	ok(buf_is(&b, S("-ERR x\r\n")), "error: leading CR LF dropped too");
	resp_add_int(&b, 0);
	resp_add_int(&b, 1);
	resp_add_int(&b, 42);
	resp_add_int(&b, -7);
	ok(buf_is(&b, S(":0\r\n:1\r\n:42\r\n:-7\r\n")), "int: 0, 1, 42, -7");
	resp_add_int(&b, LLONG_MIN);
	ok(buf_is(&b, S(":-9223372036854775808\r\n")), "int: LLONG_MIN");
	resp_add_int(&b, LLONG_MAX);
	ok(buf_is(&b, S(":9223372036854775807\r\n")), "int: LLONG_MAX");
	resp_add_bulk(&b, S("a\0\r\n"));
	ok(buf_is(&b, S("$4\r\na\0\r\n\r\n")), "bulk: binary safe");
	resp_add_bulk(&b, "", 0);
	ok(buf_is(&b, S("$0\r\n\r\n")), "bulk: empty");
	resp_add_null(&b);
	ok(buf_is(&b, S("$-1\r\n")), "null bulk: $-1");
	resp_add_array(&b, 2);
	resp_add_int(&b, 1);
	resp_add_int(&b, 0);
	ok(buf_is(&b, S("*2\r\n:1\r\n:0\r\n")), "array of two ints");
	resp_add_null_array(&b);
	ok(buf_is(&b, S("*-1\r\n")), "null array: *-1");
	resp_add_array(&b, 0);
	ok(buf_is(&b, S("*0\r\n")), "empty array: *0");

	/* a reply read back as a request: the encoders and the parser agree */
	{
		struct resp_request	r;
		char			big[300];

		memset(big, 'u', sizeof(big));
		resp_add_array(&b, 2);
		resp_add_bulk(&b, S("SETNX"));
		resp_add_bulk(&b, big, 60);
		ok(parse(buf_head(&b), buf_used(&b), &r) == RESP_OK &&
		    arg_is(&r, 0, S("SETNX")) && arg_is(&r, 1, big, 60) &&
		    r.used == buf_used(&b), "encoded array of bulks parses back");
		buf_free(&b);
	}
}

/* resp_parse_hot: the hot path's one-pass recogniser; resp_parse_hot_again:
 * its shortcut for a request with the head of the one before. */
static void
test_hot(void)
{
	const char	*setnx = "*3\r\n$5\r\nSeTnX\r\n$3\r\nurl\r\n$1\r\n1\r\n";
	const char	*sadd = "*3\r\n$4\r\nsadd\r\n$1\r\nf\r\n$0\r\n\r\n";
	const char	*bfadd = "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$2\r\nab\r\n";
	const char	*v2 = "*3\r\n$5\r\nSETNX\r\n$1\r\na\r\n$2\r\nvv\r\n";
	const char	*sadd2 = "*3\r\n$4\r\nsadd\r\n$1\r\nf\r\n$1\r\nk\r\n";
	const char	*sadd3 = "*3\r\n$4\r\nsadd\r\n$1\r\ng\r\n$1\r\nk\r\n";
	struct resp_limits lim = { 512, 4096, 16, 0, 0, 0 };
	const char	*name, *key;
	size_t		 namel, keyl, head;
	enum resp_hot	 cmd;
	char		 big[200];
	int		 n;

#define HOT(s, l) resp_parse_hot((s), (l), &lim, &cmd, &name, &namel, &key, \
	&keyl, &head)
	ok(HOT(setnx, strlen(setnx)) == strlen(setnx) &&
	    cmd == RESP_HOT_SETNX && keyl == 3 && memcmp(key, "url", 3) == 0 &&
	    name == NULL && head == 15, "hot: SETNX in mixed case");
	ok(HOT(v2, strlen(v2)) == strlen(v2) && keyl == 1,
	    "hot: SETNX with a two-byte value");
	ok(HOT(sadd, strlen(sadd)) == strlen(sadd) && cmd == RESP_HOT_SADD &&
	    namel == 1 && *name == 'f' && keyl == 0 && head == 21,
	    "hot: SADD with an empty member");
	ok(HOT(bfadd, strlen(bfadd)) == strlen(bfadd) &&
	    cmd == RESP_HOT_BFADD && keyl == 2 && head == 23, "hot: BF.ADD");
	ok(HOT(setnx, strlen(setnx) - 1) == 0,
	    "hot: a partial request is not taken");
	ok(HOT("*3\r\n$5\r\nSETNY\r\n$1\r\na\r\n$1\r\n1\r\n", 30) == 0,
	    "hot: another command is not taken");
	ok(HOT("*3\r\n$5\r\nSETNX\r\n$01\r\na\r\n$1\r\n1\r\n", 31) == 0,
	    "hot: a leading zero is left to resp_parse");
	ok(HOT("*3\r\n$5\r\nSETNX\r\n$99\r\na\r\n$1\r\n1\r\n", 31) == 0,
	    "hot: a bulk over max_bulk is not taken");
	n = snprintf(big, sizeof(big), "*3\r\n$4\r\nSADD\r\n$1\r\nf\r\n"
	    "$123\r\n%0123d\r\n", 0);
	ok(HOT(big, (size_t)n) == (size_t)n && keyl == 123,
	    "hot: a three-digit length");
#undef HOT
	ok(resp_parse_hot_again(sadd2, strlen(sadd2), sadd, 21, &lim,
	    RESP_HOT_SADD, &key, &keyl) == strlen(sadd2) && keyl == 1 &&
	    *key == 'k', "again: the same head, another key");
	ok(resp_parse_hot_again(sadd3, strlen(sadd3), sadd, 21, &lim,
	    RESP_HOT_SADD, &key, &keyl) == 0,
	    "again: another filter is not the same head");
	ok(resp_parse_hot_again(sadd2, strlen(sadd2) - 1, sadd, 21, &lim,
	    RESP_HOT_SADD, &key, &keyl) == 0, "again: a partial request");
	ok(resp_parse_hot_again(v2, strlen(v2), setnx, 15, &lim,
	    RESP_HOT_SETNX, &key, &keyl) == 0,
	    "again: the command in another case is another head");
	ok(resp_parse_hot_again(v2, strlen(v2), v2, 15, &lim,
	    RESP_HOT_SETNX, &key, &keyl) == strlen(v2) && keyl == 1,
	    "again: SETNX's value read in full when not one byte");
}

/* RESP3's shapes, and what a RESP2 client gets of them: Redis's forms */
static void
test_resp3(void)
{
	struct buf	b = { 0 }, d = { 0 };

	resp_add_map(&b, 1);
	resp_add_bulk(&b, S("save"));
	resp_add_bulk(&b, S(""));
	ok(buf_is(&b, S("%1\r\n$4\r\nsave\r\n$0\r\n\r\n")), "map: %1, a pair");
	resp_add_set(&b, 2);
	resp_add_null3(&b);
	resp_add_bool(&b, 1);
	ok(buf_is(&b, S("~2\r\n_\r\n#t\r\n")), "set of a null and true");
	resp_add_verbatim(&b, "txt", S("a:b\r\n"));
	ok(buf_is(&b, S("=9\r\ntxt:a:b\r\n\r\n")),
	    "verbatim: the length counts txt:");
	resp_add_double(&b, 0.5);
	ok(buf_is(&b, S(",0.5\r\n")), "double");

#define DOWN(in, want, what) do {					\
		d.off = d.len = 0;					\
		ok(resp_downgrade(&d, S(in)) == 0 && buf_is(&d, S(want)),	\
		    "downgrade: " what);				\
	} while (0)
	DOWN("%1\r\n$4\r\nsave\r\n$0\r\n\r\n", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n",
	    "a map is a flat array of its pairs");
	DOWN("~2\r\n_\r\n#f\r\n", "*2\r\n$-1\r\n:0\r\n",
	    "a set an array, null $-1, false :0");
	DOWN("=9\r\ntxt:a:b\r\n\r\n", "$5\r\na:b\r\n\r\n",
	    "verbatim: a bulk string without its format");
	DOWN(",0.5\r\n", "$3\r\n0.5\r\n", "a double is a bulk string");
	DOWN("|1\r\n+k\r\n+v\r\n:7\r\n", ":7\r\n", "an attribute is dropped");
	DOWN("*2\r\n%1\r\n+a\r\n:1\r\n-ERR x\r\n",
	    "*2\r\n*2\r\n+a\r\n:1\r\n-ERR x\r\n", "nested, errors as they are");
	d.off = d.len = 0;
	ok(resp_downgrade(&d, S("*3\r\n:1\r\n")) == -1,
	    "downgrade: an array missing elements is refused");
	ok(resp_downgrade(&d, S("%9223372036854775807\r\n")) == -1,
	    "downgrade: a count past the input is refused, not doubled");
#undef DOWN
	buf_free(&b);
	buf_free(&d);
}

/* BF.LOADCHUNK's data argument may pass max_bulk up to max_chunk. */
static void
test_loadchunk_exemption(void)
{
	struct resp_limits	 save = lim;
	struct resp_request	 r;
	enum resp_status	 st;
	char			 req[512];
	int			 n;

	lim.max_chunk = 200;
	n = snprintf(req, sizeof(req), "*4\r\n$12\r\nbf.LoadChunk\r\n$1\r\n"
	    "f\r\n$1\r\n1\r\n$150\r\n%0150d\r\n", 7);
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_OK && r.argc == 4 && r.argl[3] == 150,
	    "BF.LOADCHUNK (any case): its data may pass max_bulk (64) up to "
	    "max_chunk (200)");
	n = snprintf(req, sizeof(req), "*4\r\n$12\r\nBF.LOADCHUNK\r\n"
	    "$1\r\nf\r\n$1\r\n1\r\n$201\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR && strcmp(r.error,
	    "Protocol error: invalid bulk length") == 0,
	    "but not past max_chunk, refused before the data comes");
	n = snprintf(req, sizeof(req), "*4\r\n$12\r\nBF.LOADCHUNK\r\n"
	    "$100\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "the key is still bound by max_bulk");
	n = snprintf(req, sizeof(req), "*4\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n"
	    "$1\r\n1\r\n$150\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "another command's 4th argument is not exempt");
	n = snprintf(req, sizeof(req), "*5\r\n$12\r\nBF.LOADCHUNK\r\n"
	    "$1\r\nf\r\n$1\r\n1\r\n$150\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "nor a BF.LOADCHUNK of five arguments");
	lim.max_chunk = 0;
	n = snprintf(req, sizeof(req), "*4\r\n$12\r\nBF.LOADCHUNK\r\n"
	    "$1\r\nf\r\n$1\r\n1\r\n$150\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "max_chunk 0: no exemption");
	lim = save;
}

/* CLUSTER SLOTMERGE's image may pass max_bulk and max_chunk up to
 * max_image, and nothing else may. */
static void
test_slotmerge_exemption(void)
{
	struct resp_limits	 save = lim;
	struct resp_request	 r;
	enum resp_status	 st;
	char			 req[1024];
	int			 n;

	lim.max_chunk = 200;
	lim.max_image = 400;
	n = snprintf(req, sizeof(req), "*4\r\n$7\r\ncluster\r\n$9\r\n"
	    "SlotMerge\r\n$300\r\n%0300d\r\n$4\r\nSAVE\r\n", 7);
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_OK && r.argc == 4 && r.argl[2] == 300,
	    "CLUSTER SLOTMERGE: its image may pass max_chunk (200) up to "
	    "max_image (400)");
	n = snprintf(req, sizeof(req), "*3\r\n$7\r\nCLUSTER\r\n$9\r\n"
	    "SLOTMERGE\r\n$401\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR && strcmp(r.error,
	    "Protocol error: invalid bulk length") == 0,
	    "but not past max_image, refused before the image comes");
	n = snprintf(req, sizeof(req), "*4\r\n$7\r\nCLUSTER\r\n$9\r\n"
	    "SLOTMERGE\r\n$1\r\nx\r\n$100\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "its fourth argument is still bound by max_bulk");
	n = snprintf(req, sizeof(req), "*3\r\n$7\r\nCLUSTER\r\n$9\r\n"
	    "SLOTBITSX\r\n$300\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "another CLUSTER subcommand is not exempt");
	lim.max_image = 0;
	n = snprintf(req, sizeof(req), "*3\r\n$7\r\nCLUSTER\r\n$9\r\n"
	    "SLOTMERGE\r\n$300\r\n");
	st = parse(req, (size_t)n, &r);
	ok(st == RESP_ERROR, "max_image 0 (not a cluster node): no exemption");
	lim = save;
}

int
main(void)
{
	test_resp3();
	test_loadchunk_exemption();
	test_slotmerge_exemption();
	test_simple();
	test_pipeline();
	test_binary();
	test_errors();
	test_splits();
	test_limits();
	test_encode();
	test_hot();
	return done_testing();
}
