/*
 * fuzz_resp.c - libFuzzer target for the RESP2 parser and encoders. The
 * first 3 bytes choose the limits (max_bulk, max_request, max_args, unauth);
 * the rest is what a client wrote, parsed request after request as a
 * connection would.
 *
 * Invariants checked (a violation traps, so the fuzzer keeps the input):
 *   - a complete request takes 1..len bytes, at most max_request; its
 *     arguments lie inside those bytes, in order, each after its "$n\r\n"
 *     and before "\r\n", at most max_bulk long; argc <= max_args for
 *     RESP_OK, > max_args for RESP_TOO_MANY; the unauthenticated bounds
 *     hold; each argument's header reads back as its length;
 *   - RESP_MORE asks for more than there is, and never for more than
 *     max_request plus one length line: memory stays bounded;
 *   - an error text is "Protocol error: ..." with no CR or LF;
 *   - feeding the bytes one at a time (every prefix, in a copy of exactly
 *     that size so that ASan sees any read past it) answers RESP_MORE, with
 *     an honest need, until the same result as the whole buffer;
 *   - encoding the arguments as an array of bulk strings parses back to
 *     the same arguments; resp_add_error never lets a CR or LF through;
 *   - resp_parse_hot (the hot path's recogniser), where it accepts, agrees
 *     with resp_parse: RESP_OK, three arguments, the same bytes, the
 *     command it names;
 *   - RESP3: the arguments built into a map, a set with a null and a
 *     boolean, a verbatim string and a double, then resp_downgrade, give
 *     exactly what the RESP2 encoders give for the same values (as Redis
 *     writes them to a RESP2 client); resp_downgrade of the raw input
 *     never reads past it (whatever it answers).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(c)	do { if (!(c)) __builtin_trap(); } while (0)

#define MAX_ARGS	16
/* the prefixes fed one by one: enough to cover several requests */
#define SPLIT_MAX	600

struct result {
	enum resp_status	 st;
	struct resp_request	 req;
	const char		*av[MAX_ARGS];
	size_t			 al[MAX_ARGS];
};

static void
parse(const char *p, size_t len, const struct resp_limits *lim,
    struct result *r)
{
	memset(r, 0, sizeof(*r));
	r->req.argv = r->av;
	r->req.argl = r->al;
	r->st = resp_parse(p, len, lim, &r->req);
}

static void
check_one(const char *p, size_t len, const struct resp_limits *lim,
    const struct result *r)
{
	const struct resp_request	*q = &r->req;
	const char			*prev = p;
	char				 hdr[32];
	int				 n, d;

	switch (r->st) {
	case RESP_MORE:
		CHECK(q->used > len);
		CHECK(q->used <= lim->max_request + RESP_LINE_MAX + 2);
		return;
	case RESP_ERROR:
		CHECK(strncmp(q->error, "Protocol error: ", 16) == 0);
		CHECK(strchr(q->error, '\r') == NULL);
		CHECK(strchr(q->error, '\n') == NULL);
		return;
	case RESP_EMPTY:
		CHECK(q->used >= 4 && q->used <= len && q->argc == 0);
		CHECK(memcmp(p + q->used - 2, "\r\n", 2) == 0);
		return;
	case RESP_OK:
		CHECK(q->argc >= 1 && q->argc <= lim->max_args);
		break;
	case RESP_TOO_MANY:
		CHECK(q->argc > lim->max_args);
		break;
	default:
		CHECK(0);
	}
	CHECK(q->used >= 1 && q->used <= len && q->used <= lim->max_request);
	CHECK(p[0] == '*');
	if (lim->unauth)
		CHECK(q->argc <= RESP_UNAUTH_ARGS);
	n = q->argc < lim->max_args ? q->argc : lim->max_args;
	for (int i = 0; i < n; i++) {
		const char	*a = q->argv[i];
		size_t		 l = q->argl[i];

		CHECK(a > prev && a + l + 2 <= p + q->used);
		CHECK(l <= lim->max_bulk);
		if (lim->unauth)
			CHECK(l <= RESP_UNAUTH_BULK);
		CHECK(a[-2] == '\r' && a[-1] == '\n');
		CHECK(a[l] == '\r' && a[l + 1] == '\n');
		/* its header is exactly "$<l>": no sign, no leading zero */
		d = snprintf(hdr, sizeof(hdr), "$%zu", l);
		CHECK(a - 2 - d > prev && memcmp(a - 2 - d, hdr, (size_t)d) == 0);
		prev = a + l;
	}
	if (r->st == RESP_OK)
		CHECK(prev + 2 == p + q->used);
}

static int
same(const char *p, const struct result *a, const char *q,
    const struct result *b, const struct resp_limits *lim)
{
	int n;

	if (a->st != b->st || a->req.argc != b->req.argc)
		return 0;
	if (a->st == RESP_ERROR)
		return strcmp(a->req.error, b->req.error) == 0;
	if (a->st == RESP_MORE)
		return 1;
	if (a->req.used != b->req.used)
		return 0;
	n = a->req.argc < lim->max_args ? a->req.argc : lim->max_args;
	for (int i = 0; i < n; i++)
		if (a->al[i] != b->al[i] || a->av[i] - p != b->av[i] - q)
			return 0;
	return 1;
}

/* Every prefix of p[0..len) up to SPLIT_MAX against the whole. */
static void
check_splits(const char *p, size_t len, const struct resp_limits *lim,
    const struct result *whole)
{
	struct result	 r;
	size_t		 k, need = 0, stop = len < SPLIT_MAX ? len : SPLIT_MAX;

	for (k = 0; k < stop; k++) {
		char *copy = malloc(k ? k : 1);

		CHECK(copy != NULL);
		memcpy(copy, p, k);
		parse(copy, k, lim, &r);
		check_one(copy, k, lim, &r);
		if (r.st == RESP_MORE) {
			if (r.req.used > need)
				need = r.req.used;
		} else {
			/* decided: not before an earlier need said it could,
			 * and as the whole buffer is */
			CHECK(k >= need);
			CHECK(same(copy, &r, p, whole, lim));
		}
		free(copy);
	}
}

/* The arguments, encoded as a client would, parse back the same. */
static void
check_roundtrip(const struct result *r, const struct resp_limits *lim)
{
	struct resp_limits	 big = { lim->max_bulk, (size_t)1 << 30,
				     MAX_ARGS, 0, 0, 0 };
	struct result		 back;
	struct buf		 b = { 0 };
	int			 n = r->req.argc;

	if (r->st != RESP_OK)
		return;
	CHECK(resp_add_array(&b, n) == 0);
	for (int i = 0; i < n; i++)
		CHECK(resp_add_bulk(&b, r->av[i], r->al[i]) == 0);
	parse(buf_head(&b), buf_used(&b), &big, &back);
	CHECK(back.st == RESP_OK && back.req.argc == n &&
	    back.req.used == buf_used(&b));
	for (int i = 0; i < n; i++)
		CHECK(back.al[i] == r->al[i] &&
		    memcmp(back.av[i], r->av[i], r->al[i]) == 0);
	buf_free(&b);

	/* any argument as an error message: one line whatever it holds */
	CHECK(resp_add_error(&b, "ERR", r->av[0], r->al[0]) == 0);
	CHECK(buf_used(&b) >= 7);
	CHECK(memchr(buf_head(&b), '\r', buf_used(&b) - 2) == NULL);
	CHECK(memchr(buf_head(&b), '\n', buf_used(&b) - 2) == NULL);
	CHECK(memcmp(buf_head(&b) + buf_used(&b) - 2, "\r\n", 2) == 0);
	buf_free(&b);
}

/* Where the hot path last accepted: the head resp_parse_hot_again compares
 * the next request with. */
struct hot_prev {
	const char	*p;		/* NULL: the last request was not hot */
	size_t		 head;
	enum resp_hot	 cmd;
	const char	*name;
	size_t		 namel;
};

/*
 * The hot path's recogniser agrees with resp_parse wherever it accepts, and
 * so does its shortcut for a request that repeats the previous one's head.
 */
static void
check_hot(const char *p, size_t len, const struct resp_limits *lim,
    const struct result *r, struct hot_prev *prev)
{
	static const char *names[] = { "", "SETNX", "SADD", "BF.ADD" };
	struct resp_limits	 authed = *lim;
	struct result		 full;
	enum resp_hot		 cmd;
	const char		*name, *key, *k2;
	size_t			 namel, keyl, head, kl2, used, again = 0;

	authed.unauth = 0;
	if (prev->p != NULL)
		again = resp_parse_hot_again(p, len, prev->p, prev->head, lim,
		    prev->cmd, &k2, &kl2);
	used = resp_parse_hot(p, len, lim, &cmd, &name, &namel, &key, &keyl,
	    &head);
	prev->p = NULL;
	if (used == 0) {
		CHECK(again == 0);
		return;
	}
	if (again != 0)	/* the shortcut reads what the full reading does */
		CHECK(again == used && cmd == prev->cmd && k2 == key &&
		    kl2 == keyl && namel == prev->namel &&
		    (namel == 0 || memcmp(name, prev->name, namel) == 0));
	*prev = (struct hot_prev){ p, head, cmd, name, namel };
	if (lim->unauth)
		parse(p, len, &authed, &full);
	else
		full = *r;
	CHECK(cmd >= RESP_HOT_SETNX && cmd <= RESP_HOT_BFADD);
	CHECK(full.st == RESP_OK || (full.st == RESP_TOO_MANY &&
	    lim->max_args < 3));
	CHECK(full.req.argc == 3 && full.req.used == used);
	CHECK(full.al[0] == strlen(names[cmd]) &&
	    strncasecmp(full.av[0], names[cmd], full.al[0]) == 0);
	CHECK(head < used && p[head] == '$');
	if (cmd == RESP_HOT_SETNX) {
		CHECK(name == NULL && head == 15);
		if (lim->max_args >= 2)
			CHECK(full.av[1] == key && full.al[1] == keyl);
	} else {
		if (lim->max_args >= 2)
			CHECK(full.av[1] == name && full.al[1] == namel);
		if (lim->max_args >= 3)
			CHECK(full.av[2] == key && full.al[2] == keyl);
	}
	/* read again from its own head: the same */
	CHECK(resp_parse_hot_again(p, len, p, head, lim, cmd, &k2, &kl2) ==
	    used && k2 == key && kl2 == keyl);
}

/* RESP3 values of the request's arguments, downgraded, against the same
 * values written in RESP2 directly. */
static void
check_resp3(const struct result *r)
{
	const struct resp_request	*q = &r->req;
	struct buf			 b3 = { 0 }, b2 = { 0 }, want = { 0 };
	char				 num[40];
	int				 n, pairs;

	if (r->st != RESP_OK)
		return;
	n = q->argc < MAX_ARGS ? q->argc : MAX_ARGS;
	pairs = n / 2;
	CHECK(resp_add_map(&b3, pairs) == 0);
	CHECK(resp_add_array(&want, 2 * pairs) == 0);
	for (int i = 0; i < 2 * pairs; i++) {
		CHECK(resp_add_bulk(&b3, q->argv[i], q->argl[i]) == 0);
		CHECK(resp_add_bulk(&want, q->argv[i], q->argl[i]) == 0);
	}
	CHECK(resp_add_set(&b3, 2) == 0 && resp_add_null3(&b3) == 0 &&
	    resp_add_bool(&b3, n & 1) == 0);
	CHECK(resp_add_array(&want, 2) == 0 && resp_add_null(&want) == 0 &&
	    resp_add_int(&want, n & 1) == 0);
	CHECK(resp_add_verbatim(&b3, "txt", q->argv[0], q->argl[0]) == 0);
	CHECK(resp_add_bulk(&want, q->argv[0], q->argl[0]) == 0);
	CHECK(resp_add_double(&b3, (double)q->argl[0] / 4) == 0);
	snprintf(num, sizeof(num), "%.17g", (double)q->argl[0] / 4);
	CHECK(resp_add_bulk(&want, num, strlen(num)) == 0);
	CHECK(resp_downgrade(&b2, b3.data, b3.len) == 0);
	CHECK(b2.len == want.len && memcmp(b2.data, want.data, b2.len) == 0);
	buf_free(&b3);
	buf_free(&b2);
	buf_free(&want);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_limits	 lim;
	struct result		 r;
	const char		*p = (const char *)data + 3;
	size_t			 left;
	struct hot_prev		 prev = { NULL, 0, RESP_HOT_NONE, NULL, 0 };
	int			 first = 1;

	if (size < 3)
		return 0;
	/* small limits, so that their edges are reached */
	lim.max_bulk = data[0] & 0x7f;
	lim.max_request = (size_t)(data[1] + 1) * 16;
	lim.max_args = 1 + (data[2] & 0x0f);
	lim.unauth = data[2] >> 7;
	/* BF.LOADCHUNK's exemption, small too, on half the inputs */
	lim.max_chunk = data[2] & 0x40 ? 300 : 0;
	/* and CLUSTER SLOTMERGE's, larger */
	lim.max_image = data[2] & 0x20 ? 500 : 0;
	if (data[0] & 0x80)
		lim.max_bulk = 20000;	/* over RESP_UNAUTH_BULK */
	left = size - 3;
	{
		/* in a copy of exactly its size, so that ASan sees a read
		 * past it */
		char		*copy = malloc(left ? left : 1);
		struct buf	 out = { 0 };

		CHECK(copy != NULL);
		memcpy(copy, p, left);
		(void)resp_downgrade(&out, copy, left);
		buf_free(&out);
		free(copy);
	}
	while (left > 0) {
		parse(p, left, &lim, &r);
		check_one(p, left, &lim, &r);
		check_hot(p, left, &lim, &r, &prev);
		if (first)
			check_splits(p, left, &lim, &r);
		first = 0;
		check_roundtrip(&r, &lim);
		check_resp3(&r);
		if (r.st == RESP_MORE || r.st == RESP_ERROR)
			break;
		p += r.req.used;
		left -= r.req.used;
		/* a line request between RESP ones: not ours; skip its line */
		if (left > 0 && *p != '*') {
			const char *nl = memchr(p, '\n', left);

			if (nl == NULL)
				break;
			left -= (size_t)(nl + 1 - p);
			p = nl + 1;
		}
	}
	return 0;
}
