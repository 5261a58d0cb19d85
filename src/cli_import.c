/*
 * cli_import.c - "seen-cli import": SSCAN a Redis set, SADD its members
 * into a seend filter.
 *
 * Both ends speak RESP over a socket of their own, with a buffer in and a
 * buffer out, driven by one poll(2) loop. Redis gets one SSCAN at a time
 * (each needs the cursor the last one returned); seend gets a pipeline of
 * SADD batches, so scanning the next page overlaps with seend adding the
 * last ones. The number of batches in flight is bounded: a fast Redis
 * cannot make us buffer the whole set.
 *
 * Members are bulk strings both ways, so they are copied byte for byte:
 * fingerprints, URLs or binary data alike.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli_import.h"
#include "client.h"
#include "progress.h"

#define DEFAULT_REDIS_PORT	"6379"
/* SSCAN's COUNT: a hint to Redis, which may return more or fewer. */
#define SCAN_COUNT		"1000"
/* A SADD batch closes at this many members or bytes, whichever comes
 * first. seend refuses a RESP request over max(2 * max_line + 4096, 1 MB)
 * bytes, so the byte bound keeps batches of long members under that; a
 * single member always fits. */
#define BATCH_MEMBERS		1000
#define BATCH_BYTES		(256 * 1024)
/* SADD batches awaiting their reply: enough to hide the round trip while
 * the next SSCAN page is read. */
#define MAX_INFLIGHT		64
/* The longest RESP header line we accept ("$123\r\n", "-ERR ...\r\n"). */
#define MAX_HEADER		65536
#define READ_CHUNK		65536

/* One RESP connection: a socket and its two buffers. */
struct rconn {
	int		 fd;
	char		 name[400];	/* for messages */
	char		*in;
	size_t		 in_start, in_end, in_cap;
	char		*out;
	size_t		 out_off, out_len, out_cap;
};

/* A parsed redis:// URL. */
struct redis_url {
	char		*host;
	char		*port;
	char		*user;		/* NULL: AUTH with the password alone */
	char		*password;	/* NULL: no AUTH */
	char		*db;		/* NULL: no SELECT */
	char		 name[400];	/* the URL without its password */
};

struct import {
	struct rconn	 redis, seend;
	const char	*key;
	const char	*filter;
	struct redis_url url;
	struct progress	 prog;

	char		 cursor[32];	/* SSCAN's next cursor */
	int		 scan_pending;	/* an SSCAN awaits its reply */
	int		 scan_done;	/* the cursor came back as 0 */

	/* the batch being built: member bulk strings, without the header */
	char		*batch;
	size_t		 batch_len, batch_cap;
	uint32_t	 batch_members;

	/* members in each SADD in flight, oldest first: a ring that grows,
	 * since one SSCAN page of long members may close many batches past
	 * MAX_INFLIGHT at once */
	uint32_t	*inflight;
	size_t		 inflight_head, inflight_count, inflight_cap;

	uint64_t	 total;		/* the set's SCARD when we began */
	uint64_t	 scanned;	/* members SSCAN returned */
	uint64_t	 imported;	/* members seend answered for */
	uint64_t	 added;		/* of those, new to the filter */
};

static void
import_warn(const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "seen-cli: import: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Ends a run that had started copying: the message, then how far it got,
 * since the filter keeps what it was given (a re-run adds the rest, and
 * what is already there answers "seen").
 */
static int
import_fail(struct import *im, const char *fmt, ...)
{
	va_list	 ap;

	progress_clear(&im->prog);
	fprintf(stderr, "seen-cli: import: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; %" PRIu64 " members of %s were imported into "
	    "filter %s before the error\n", im->imported, im->key, im->filter);
	return 1;
}

/* ---- buffers ---- */

static int
grow(char **buf, size_t *cap, size_t need)
{
	char	*n;
	size_t	 c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 65536;
	while (c < need)
		c *= 2;
	if ((n = realloc(*buf, c)) == NULL)
		return -1;
	*buf = n;
	*cap = c;
	return 0;
}

static int
out_append(struct rconn *c, const void *data, size_t len)
{
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + len > c->out_cap && c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (grow(&c->out, &c->out_cap, c->out_len + len) == -1)
		return -1;
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

/* Appends a RESP bulk string ("$len\r\n<data>\r\n") to a buffer. */
static int
bulk_append(char **buf, size_t *len, size_t *cap, const void *data,
    size_t dlen)
{
	char	 hdr[32];
	int	 h;

	h = snprintf(hdr, sizeof(hdr), "$%zu\r\n", dlen);
	if (grow(buf, cap, *len + (size_t)h + dlen + 2) == -1)
		return -1;
	memcpy(*buf + *len, hdr, (size_t)h);
	memcpy(*buf + *len + h, data, dlen);
	memcpy(*buf + *len + h + dlen, "\r\n", 2);
	*len += (size_t)h + dlen + 2;
	return 0;
}

/* Queues a command of C strings. */
static int
send_command(struct rconn *c, int argc, const char *const argv[])
{
	char	*buf = NULL, hdr[32];
	size_t	 len = 0, cap = 0;
	int	 h, i, rc;

	h = snprintf(hdr, sizeof(hdr), "*%d\r\n", argc);
	if (grow(&buf, &cap, (size_t)h) == -1)
		return -1;
	memcpy(buf, hdr, (size_t)h);
	len = (size_t)h;
	for (i = 0; i < argc; i++)
		if (bulk_append(&buf, &len, &cap, argv[i],
		    strlen(argv[i])) == -1) {
			free(buf);
			return -1;
		}
	rc = out_append(c, buf, len);
	free(buf);
	return rc;
}

/* Sends what the socket takes now. Returns 0, or -1 on a write error. */
static int
conn_flush(struct rconn *c)
{
	return client_send_some(c->fd, c->out, c->out_len, &c->out_off);
}

/* One read(2). Returns bytes read, 0 at end of file, -1 on error. */
static ssize_t
conn_fill(struct rconn *c)
{
	ssize_t	 n;

	if (c->in_start == c->in_end)
		c->in_start = c->in_end = 0;
	if (c->in_cap - c->in_end < READ_CHUNK && c->in_start > 0) {
		memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
		c->in_end -= c->in_start;
		c->in_start = 0;
	}
	if (grow(&c->in, &c->in_cap, c->in_end + READ_CHUNK) == -1)
		return -1;
	do
		n = read(c->fd, c->in + c->in_end, c->in_cap - c->in_end);
	while (n == -1 && errno == EINTR);
	if (n > 0)
		c->in_end += (size_t)n;
	return n;
}

/* ---- RESP replies ---- */

/*
 * Reads a header line at p: its type byte, and its text (the rest of the
 * line) or number. Returns the bytes up to and including "\r\n", 0 if the
 * line is not complete yet, -1 if it is malformed.
 */
static ssize_t
header(const char *p, size_t n, char *type, const char **text,
    size_t *tlen, long long *num)
{
	const char	*nl;
	char		*end;
	size_t		 len;

	if (n == 0)
		return 0;
	if ((nl = memchr(p, '\n', n < MAX_HEADER ? n : MAX_HEADER)) == NULL)
		return n < MAX_HEADER ? 0 : -1;
	len = (size_t)(nl - p);
	if (len < 1 || p[len - 1] != '\r')
		return -1;
	*type = p[0];
	*text = p + 1;
	*tlen = len - 2;
	*num = 0;
	if (*type == ':' || *type == '$' || *type == '*') {
		errno = 0;
		*num = strtoll(p + 1, &end, 10);
		if (errno != 0 || end != p + len - 1 || end == p + 1)
			return -1;
	} else if (*type != '+' && *type != '-')
		return -1;
	return (ssize_t)len + 1;
}

/*
 * The length of the complete RESP2 value at p (arrays nest up to depth
 * levels), 0 if more bytes are needed, -1 if it is malformed.
 */
static ssize_t
value_len(const char *p, size_t n, int depth)
{
	const char	*text;
	size_t		 tlen, off;
	long long	 num, i;
	ssize_t		 h, e;
	char		 type;

	if ((h = header(p, n, &type, &text, &tlen, &num)) <= 0)
		return h;
	off = (size_t)h;
	if (type == '$' && num >= 0) {
		if ((unsigned long long)num > SIZE_MAX / 2)
			return -1;
		if (n - off < (size_t)num + 2)
			return 0;
		off += (size_t)num;
		if (p[off] != '\r' || p[off + 1] != '\n')
			return -1;
		return (ssize_t)(off + 2);
	}
	if (type == '*' && num > 0) {
		if (depth == 0)
			return -1;
		for (i = 0; i < num; i++) {
			if ((e = value_len(p + off, n - off, depth - 1)) <= 0)
				return e;
			off += (size_t)e;
		}
	}
	return (ssize_t)off;
}

/*
 * The next complete reply in c's input: 1 with its bytes in *p / *len
 * (valid until the next conn_fill), 0 if none yet, -1 if malformed.
 */
static int
next_reply(struct rconn *c, const char **p, size_t *len)
{
	ssize_t	 n;

	n = value_len(c->in + c->in_start, c->in_end - c->in_start, 2);
	if (n <= 0)
		return (int)n;
	*p = c->in + c->in_start;
	*len = (size_t)n;
	c->in_start += (size_t)n;
	return 1;
}

/* Blocks until c's output is sent and one reply has come. Returns 1, 0
 * if the server closed the connection, -1 on an error (errno set; EPROTO
 * for a malformed reply). */
static int
roundtrip(struct rconn *c, const char **p, size_t *len)
{
	ssize_t	 n;
	int	 rc;

	if (client_write_all(c->fd, c->out + c->out_off,
	    c->out_len - c->out_off) == -1)
		return -1;
	c->out_off = c->out_len = 0;
	for (;;) {
		if ((rc = next_reply(c, p, len)) != 0) {
			if (rc == -1)
				errno = EPROTO;
			return rc;
		}
		if ((n = conn_fill(c)) <= 0)
			return (int)n;
	}
}

/* A reply as text for messages: "-ERR x" -> "ERR x", "+none" -> "none". */
static void
reply_text(const char *p, size_t len, char *buf, size_t blen)
{
	const char	*nl = memchr(p, '\r', len);
	size_t		 n = nl != NULL ? (size_t)(nl - p) : len;

	if (n > 0 && (p[0] == '-' || p[0] == '+' || p[0] == ':')) {
		p++;
		n--;
	}
	snprintf(buf, blen, "%.*s", (int)(n > 200 ? 200 : n), p);
}

/*
 * Sends one command and waits for its reply, for the setup steps before
 * the copy loop. Returns 0 and the reply, or -1 after saying why (a
 * connection failure; error replies are the caller's to judge).
 */
static int
call(struct rconn *c, int argc, const char *const argv[], const char **p,
    size_t *len)
{
	int	 rc;

	if (send_command(c, argc, argv) == -1) {
		import_warn("%s", strerror(errno));
		return -1;
	}
	if ((rc = roundtrip(c, p, len)) == 1)
		return 0;
	if (rc == 0)
		import_warn("%s closed the connection", c->name);
	else if (errno == EPROTO)
		import_warn("%s sent a reply that is not RESP", c->name);
	else
		import_warn("%s: %s", c->name, strerror(errno));
	return -1;
}

/* ---- the redis:// URL ---- */

static int
hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Decodes %XX in place, as a URL's user and password may hold them. */
static int
percent_decode(char *s)
{
	char	*o = s;
	int	 hi, lo;

	for (; *s != '\0'; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if ((hi = hexval((unsigned char)s[1])) == -1 ||
		    (lo = hexval((unsigned char)s[2])) == -1)
			return -1;
		*o++ = (char)(hi * 16 + lo);
		s += 2;
	}
	*o = '\0';
	return 0;
}

static int
all_digits(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/*
 * redis://[[user]:password@]host[:port][/db], as redis-cli -u and redis-py
 * take it; host may be "[v6addr]". The strings point into s, which is
 * modified.
 */
static int
parse_url(char *s, struct redis_url *u)
{
	char	*at, *slash, *hp, *colon, *pw;

	memset(u, 0, sizeof(*u));
	if (strncmp(s, "rediss://", 9) == 0) {
		import_warn("%s", "rediss:// (TLS) is not supported");
		return -1;
	}
	if (strncmp(s, "redis://", 8) != 0) {
		import_warn("not a redis:// URL: %s", s);
		return -1;
	}
	s += 8;
	if ((slash = strchr(s, '/')) != NULL) {
		*slash = '\0';
		if (slash[1] != '\0') {
			if (!all_digits(slash + 1)) {
				import_warn("bad database number in the URL: "
				    "%s", slash + 1);
				return -1;
			}
			u->db = slash + 1;
		}
	}
	hp = s;
	if ((at = strrchr(s, '@')) != NULL) {
		*at = '\0';
		hp = at + 1;
		if ((pw = strchr(s, ':')) != NULL) {
			*pw++ = '\0';
			if (*s != '\0')
				u->user = s;
		} else
			pw = s;		/* redis://password@host */
		u->password = pw;
		if ((u->user != NULL && percent_decode(u->user) == -1) ||
		    percent_decode(u->password) == -1) {
			import_warn("%s", "bad %-escape in the URL's user or "
			    "password");
			return -1;
		}
	}
	u->port = DEFAULT_REDIS_PORT;
	if (*hp == '[') {
		if ((colon = strchr(hp, ']')) == NULL) {
			import_warn("%s", "unclosed [ in the URL's host");
			return -1;
		}
		*colon++ = '\0';
		u->host = hp + 1;
		if (*colon == ':')
			u->port = colon + 1;
		else if (*colon != '\0') {
			import_warn("%s", "junk after ] in the URL's host");
			return -1;
		}
	} else {
		u->host = hp;
		if ((colon = strchr(hp, ':')) != NULL) {
			*colon = '\0';
			u->port = colon + 1;
		}
	}
	if (*u->host == '\0')
		u->host = "127.0.0.1";
	if (!all_digits(u->port)) {
		import_warn("bad port in the URL: %s", u->port);
		return -1;
	}
	snprintf(u->name, sizeof(u->name), "redis://%s%s%s:%s%s%s",
	    strchr(u->host, ':') != NULL ? "[" : "", u->host,
	    strchr(u->host, ':') != NULL ? "]" : "", u->port,
	    u->db != NULL ? "/" : "", u->db != NULL ? u->db : "");
	return 0;
}

/* seend's rule for filter names, checked here so that a key that cannot
 * be one fails before anything is scanned. */
static int
valid_filter_name(const char *s)
{
	size_t	 len = strlen(s), i;

	if (len < 1 || len > 64 || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("_-.:", s[i]) ==
		    NULL)
			return 0;
	return 1;
}

/* ---- setup ---- */

/* side says which server a connection error is about: both are often
 * on 127.0.0.1, so the address alone would not tell. */
static int
open_conn(struct rconn *c, const struct client_target *t, const char *name,
    const char *side)
{
	char	 err[512];

	snprintf(c->name, sizeof(c->name), "%s", name);
	if ((c->fd = client_connect(t, err, sizeof(err))) == -1) {
		import_warn("%s: %s", side, err);
		return -1;
	}
	return 0;
}

/* AUTH, SELECT, then TYPE and SCARD of the key: the set must be there. */
static int
redis_setup(struct import *im)
{
	struct client_target	 t = { .host = im->url.host,
				    .port = im->url.port };
	struct rconn		*r = &im->redis;
	const char		*argv[3], *p = NULL;
	char			 text[256];
	size_t			 len = 0;

	if (open_conn(r, &t, im->url.name, "redis") == -1)
		return -1;
	if (im->url.password != NULL) {
		argv[0] = "AUTH";
		argv[1] = im->url.user != NULL ? im->url.user :
		    im->url.password;
		argv[2] = im->url.password;
		if (call(r, im->url.user != NULL ? 3 : 2, argv, &p, &len) == -1)
			return -1;
		if (p[0] == '-') {
			reply_text(p, len, text, sizeof(text));
			import_warn("%s: AUTH: %s", r->name, text);
			return -1;
		}
	}
	if (im->url.db != NULL) {
		argv[0] = "SELECT";
		argv[1] = im->url.db;
		if (call(r, 2, argv, &p, &len) == -1)
			return -1;
		if (p[0] == '-') {
			reply_text(p, len, text, sizeof(text));
			import_warn("%s: SELECT %s: %s", r->name, im->url.db,
			    text);
			return -1;
		}
	}
	/* SCARD answers 0 for a missing key and an error for a wrong type;
	 * TYPE tells the two apart, and which type it is. */
	argv[0] = "TYPE";
	argv[1] = im->key;
	if (call(r, 2, argv, &p, &len) == -1)
		return -1;
	reply_text(p, len, text, sizeof(text));
	if (p[0] == '-') {
		import_warn("%s: TYPE %s: %s", r->name, im->key, text);
		return -1;
	}
	if (strcmp(text, "none") == 0) {
		import_warn("%s has no key %s", r->name, im->key);
		return -1;
	}
	if (strcmp(text, "set") != 0) {
		import_warn("%s: key %s holds a %s, not a set", r->name,
		    im->key, text);
		return -1;
	}
	argv[0] = "SCARD";
	if (call(r, 2, argv, &p, &len) == -1)
		return -1;
	if (p[0] != ':') {
		reply_text(p, len, text, sizeof(text));
		import_warn("%s: SCARD %s: %s", r->name, im->key, text);
		return -1;
	}
	im->total = strtoull(p + 1, NULL, 10);
	return 0;
}

static int
seend_setup(struct import *im, const struct client_target *t,
    const char *token, const char *name)
{
	const char	*argv[2], *p = NULL;
	char		 text[256];
	size_t		 len = 0;

	if (open_conn(&im->seend, t, name, "seend") == -1)
		return -1;
	if (token == NULL)
		return 0;
	/* over RESP, not client_auth's line: the SADDs that follow are
	 * RESP, and this way a failed AUTH reads as Redis's errors do */
	argv[0] = "AUTH";
	argv[1] = token;
	if (call(&im->seend, 2, argv, &p, &len) == -1)
		return -1;
	if (p[0] != '+') {
		reply_text(p, len, text, sizeof(text));
		import_warn("%s: AUTH: %s", name, text);
		return -1;
	}
	return 0;
}

/* ---- the copy loop ---- */

static int
send_scan(struct import *im)
{
	const char *argv[] = { "SSCAN", im->key, im->cursor, "COUNT",
	    SCAN_COUNT };

	if (send_command(&im->redis, 5, argv) == -1)
		return -1;
	im->scan_pending = 1;
	return 0;
}

/* Doubles the ring of batches in flight, oldest first at 0. */
static int
grow_ring(struct import *im)
{
	size_t		 cap = im->inflight_cap ? im->inflight_cap * 2 :
			    MAX_INFLIGHT * 2, i;
	uint32_t	*n;

	if ((n = calloc(cap, sizeof(*n))) == NULL)
		return -1;
	for (i = 0; i < im->inflight_count; i++)
		n[i] = im->inflight[(im->inflight_head + i) %
		    im->inflight_cap];
	free(im->inflight);
	im->inflight = n;
	im->inflight_cap = cap;
	im->inflight_head = 0;
	return 0;
}

/* Queues the batch being built as one SADD to seend. */
static int
close_batch(struct import *im)
{
	char	 hdr[32];
	size_t	 hlen = 0, hcap = 0;
	char	*h = NULL;
	int	 n;

	if (im->batch_members == 0)
		return 0;
	n = snprintf(hdr, sizeof(hdr), "*%" PRIu32 "\r\n",
	    im->batch_members + 2);
	if (grow(&h, &hcap, (size_t)n) == -1)
		return -1;
	memcpy(h, hdr, (size_t)n);
	hlen = (size_t)n;
	if (bulk_append(&h, &hlen, &hcap, "SADD", 4) == -1 ||
	    bulk_append(&h, &hlen, &hcap, im->filter, strlen(im->filter))
	    == -1 || out_append(&im->seend, h, hlen) == -1 ||
	    out_append(&im->seend, im->batch, im->batch_len) == -1) {
		free(h);
		return -1;
	}
	free(h);
	if (im->inflight_count == im->inflight_cap && grow_ring(im) == -1)
		return -1;
	im->inflight[(im->inflight_head + im->inflight_count) %
	    im->inflight_cap] = im->batch_members;
	im->inflight_count++;
	im->batch_len = 0;
	im->batch_members = 0;
	return 0;
}

/*
 * One SSCAN reply: ["cursor", [member, ...]]. Its members go into SADD
 * batches; the page's last batch is closed at once, so seend starts on it
 * while Redis scans the next page. Returns 0, or -1 after saying why.
 */
static int
scan_reply(struct import *im, const char *p, size_t len)
{
	const char	*text, *end = p + len;
	size_t		 tlen, mlen;
	long long	 num, n, i;
	ssize_t		 h;
	char		 type, msg[256];

	h = header(p, len, &type, &text, &tlen, &num);
	if (type == '-') {
		reply_text(p, len, msg, sizeof(msg));
		import_fail(im, "%s: SSCAN %s: %s", im->redis.name, im->key,
		    msg);
		return -1;
	}
	if (type != '*' || num != 2)
		goto bad;
	p += h;
	h = header(p, (size_t)(end - p), &type, &text, &tlen, &num);
	if (type != '$' || num < 1 || (size_t)num >= sizeof(im->cursor))
		goto bad;
	p += h;
	memcpy(im->cursor, p, (size_t)num);
	im->cursor[num] = '\0';
	p += num + 2;
	h = header(p, (size_t)(end - p), &type, &text, &tlen, &n);
	if (type != '*')
		goto bad;
	p += h;
	/* value_len checked every length against the bytes there */
	for (i = 0; i < n; i++) {
		h = header(p, (size_t)(end - p), &type, &text, &tlen, &num);
		if (type != '$' || num < 0)
			goto bad;
		p += h;
		mlen = (size_t)num;
		if (im->batch_members > 0 &&
		    (im->batch_members >= BATCH_MEMBERS ||
		    im->batch_len + mlen + 32 > BATCH_BYTES) &&
		    close_batch(im) == -1)
			goto nomem;
		if (bulk_append(&im->batch, &im->batch_len, &im->batch_cap, p,
		    mlen) == -1)
			goto nomem;
		im->batch_members++;
		im->scanned++;
		p += mlen + 2;
	}
	if (close_batch(im) == -1)
		goto nomem;
	im->scan_pending = 0;
	if (strcmp(im->cursor, "0") == 0)
		im->scan_done = 1;
	return 0;
nomem:
	import_fail(im, "%s", strerror(errno));
	return -1;
bad:
	import_fail(im, "%s: SSCAN %s: unexpected reply", im->redis.name,
	    im->key);
	return -1;
}

/* One SADD reply: the count of new members, or an error that ends it. */
static int
sadd_reply(struct import *im, const char *p, size_t len)
{
	uint32_t	 members;
	char		 msg[256];

	if (im->inflight_count == 0) {
		import_fail(im, "%s sent a reply nobody asked for",
		    im->seend.name);
		return -1;
	}
	members = im->inflight[im->inflight_head];
	im->inflight_head = (im->inflight_head + 1) % im->inflight_cap;
	im->inflight_count--;
	reply_text(p, len, msg, sizeof(msg));
	if (p[0] == '-') {
		import_fail(im, "%s: SADD %s: %s", im->seend.name, im->filter,
		    msg);
		return -1;
	}
	if (p[0] != ':') {
		import_fail(im, "%s: SADD %s: unexpected reply %s",
		    im->seend.name, im->filter, msg);
		return -1;
	}
	im->added += strtoull(msg, NULL, 10);
	im->imported += members;
	progress_update(&im->prog, im->imported);
	return 0;
}

/* Reads what a socket has and handles each complete reply. Returns 0, or
 * -1 after saying why. */
static int
drain(struct import *im, struct rconn *c,
    int (*handle)(struct import *, const char *, size_t))
{
	const char	*p = NULL;
	size_t		 len = 0;
	ssize_t		 n;
	int		 rc;

	n = conn_fill(c);
	if (n == 0) {
		import_fail(im, "%s closed the connection", c->name);
		return -1;
	}
	if (n == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		import_fail(im, "read from %s: %s", c->name, strerror(errno));
		return -1;
	}
	while ((rc = next_reply(c, &p, &len)) == 1)
		if (handle(im, p, len) == -1)
			return -1;
	if (rc == -1) {
		import_fail(im, "%s sent a reply that is not RESP", c->name);
		return -1;
	}
	return 0;
}

static int
copy_loop(struct import *im)
{
	struct pollfd	 pfd[2];
	struct rconn	*r = &im->redis, *s = &im->seend;

	if (client_set_nonblock(r->fd, 1) == -1 ||
	    client_set_nonblock(s->fd, 1) == -1) {
		import_fail(im, "fcntl: %s", strerror(errno));
		return -1;
	}
	strcpy(im->cursor, "0");
	for (;;) {
		if (!im->scan_done && !im->scan_pending &&
		    im->inflight_count < MAX_INFLIGHT && send_scan(im) == -1) {
			import_fail(im, "%s", strerror(errno));
			return -1;
		}
		if (conn_flush(r) == -1) {
			import_fail(im, "write to %s: %s", r->name,
			    strerror(errno));
			return -1;
		}
		if (conn_flush(s) == -1) {
			import_fail(im, "write to %s: %s", s->name,
			    strerror(errno));
			return -1;
		}
		if (im->scan_done && im->inflight_count == 0)
			return 0;
		/* once the scan is done Redis owes us nothing: an idle
		 * timeout closing it then must not end the run */
		pfd[0].fd = im->scan_done ? -1 : r->fd;
		pfd[0].events = (im->scan_pending ? POLLIN : 0) |
		    (r->out_off < r->out_len ? POLLOUT : 0);
		pfd[1].fd = s->fd;
		pfd[1].events = (im->inflight_count > 0 ? POLLIN : 0) |
		    (s->out_off < s->out_len ? POLLOUT : 0);
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			import_fail(im, "poll: %s", strerror(errno));
			return -1;
		}
		/* seend first: its replies free room for the next SSCAN */
		if ((pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    drain(im, s, sadd_reply) == -1)
			return -1;
		if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    drain(im, r, scan_reply) == -1)
			return -1;
	}
}

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: seen-cli [-h host] [-p port] [-s socket] "
	    "[-a token] import\n"
	    "           redis://[[user]:password@]host[:port][/db] KEY "
	    "[--filter NAME]\n");
}

static void
conn_free(struct rconn *c)
{
	if (c->fd != -1)
		close(c->fd);
	free(c->in);
	free(c->out);
}

int
cli_import(const struct client_target *target, const char *token,
    const char *name, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "filter",	required_argument,	NULL, 'f' },
		{ "help",	no_argument,		NULL, 'H' },
		{ NULL,		0,			NULL, 0 },
	};
	struct import	*im;
	char		*url, rate[32], took[32];
	double		 el;
	int		 ch, status = 1;

	if ((im = calloc(1, sizeof(*im))) == NULL) {
		import_warn("%s", strerror(errno));
		return 1;
	}
	im->redis.fd = im->seend.fd = -1;
	/* no "+": "--filter" may follow the URL and the key */
	optind = 0;	/* glibc: start over, on argv[1] */
	while ((ch = getopt_long(argc, argv, "f:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			im->filter = optarg;
			break;
		case 'H':
			usage(stdout);
			free(im);
			return 0;
		default:
			usage(stderr);
			free(im);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		free(im);
		return 2;
	}
	if ((url = strdup(argv[optind])) == NULL) {
		import_warn("%s", strerror(errno));
		free(im);
		return 1;
	}
	im->key = argv[optind + 1];
	if (im->filter == NULL)
		im->filter = im->key;
	if (parse_url(url, &im->url) == -1) {
		status = 2;
		goto out;
	}
	if (!valid_filter_name(im->filter)) {
		import_warn("%s is not a valid filter name (1 to 64 letters, "
		    "digits, _ - . :)%s", im->filter, im->filter == im->key ?
		    "; name one with --filter" : "");
		status = 2;
		goto out;
	}
	if (redis_setup(im) == -1 || seend_setup(im, target, token, name) == -1)
		goto out;

	progress_init(&im->prog, im->total);
	if (copy_loop(im) == -1)
		goto out;
	progress_finish(&im->prog);
	el = progress_elapsed(&im->prog);
	progress_fmt_count(rate, sizeof(rate), el > 0 ?
	    (double)im->imported / el : 0);
	progress_fmt_duration(took, sizeof(took), el);
	printf("imported %" PRIu64 " members of %s from %s into filter %s: "
	    "%" PRIu64 " new, %" PRIu64 " already seen, in %s (%s/s)\n",
	    im->imported, im->key, im->url.name, im->filter, im->added,
	    im->imported - im->added, took, rate);
	if (fflush(stdout) == EOF) {
		import_warn("stdout: %s", strerror(errno));
		goto out;
	}
	status = 0;
out:
	conn_free(&im->redis);
	conn_free(&im->seend);
	free(im->batch);
	free(im->inflight);
	free(url);
	free(im);
	return status;
}
