/*
 * bench.c - seen-bench: a load generator for seend, like redis-benchmark.
 *
 * Every request line is built before the clock starts (generating URLs is
 * not what we measure), then worker threads each drive a share of the
 * connections with a poll(2) loop: fill the pipeline with one big write,
 * read replies with big reads, pair them with their send times in order.
 * The hot path does no allocation and no per-request system call.
 *
 * Requests are numbered 0..n-1 and handed out in runs from one atomic
 * counter, so connections that go faster take more; request i uses key
 * i % k, so with the default k = n every key is sent exactly once.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "client.h"
#include "urlgen.h"

#define READ_BUF	(256 * 1024)
/* A batch is written with one call; bigger gains nothing and costs cache. */
#define BATCH_BYTES	(256 * 1024)

/*
 * --redis: each URL becomes REDIS_K pipelined "SETBIT key offset 1"
 * commands on one bit array of 2^REDIS_LOG2_BITS bits (a 128 MiB string),
 * as scrapy-redis's BloomFilter does; the URL was seen iff every previous
 * bit was 1. The offsets come from one XXH3-64 of the URL by double hashing.
 * A URL's commands take at most REDIS_URL_BYTES.
 */
#define REDIS_K		6
#define REDIS_LOG2_BITS	30
#define REDIS_KEY	"seen-bench:bloom"
#define REDIS_URL_BYTES	(REDIS_K * 80)
/*
 * --resp: each URL is one RESP command to seend (or any Redis): "SETNX url
 * 1", "SADD filter url" or "BF.ADD filter url", answered ":1" (new) or
 * ":0" (seen). The command up to the URL's length is the same for every
 * URL; RESP_TAIL bounds the length, CR LF pairs and "$1 1" around a URL.
 */
#define RESP_TAIL	40
/* --rate: sleep in the kernel only when the next request is due later than
 * this; nearer deadlines are waited for by polling without a timeout. */
#define SPIN_NS		50000

/*
 * Latency histogram, log-linear like HdrHistogram: values are nanoseconds,
 * exact below 2^HIST_SUB_BITS and with 2^(HIST_SUB_BITS-1) linear buckets in
 * every power of two above, so a bucket is at most 0.2% wide: better than
 * 1 us below 1 ms and than 1% above.
 */
#define HIST_SUB_BITS	10
#define HIST_HALF	(1u << (HIST_SUB_BITS - 1))
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) * HIST_HALF + HIST_HALF)

struct hist {
	uint64_t	 counts[HIST_BUCKETS];
	uint64_t	 total;
	uint64_t	 sum;
	uint64_t	 max;
};

struct conn {
	int			 fd;
	char			*out;		/* the batch being written */
	size_t			 out_len;
	size_t			 out_off;
	struct client_reader	 in;
	uint64_t		*sent;		/* send time per pipeline slot */
	size_t			 head;		/* oldest slot in flight */
	size_t			 inflight;
	int			 done;
	uint64_t		 scheduled;	/* --rate: requests sent so far */
	uint64_t		 due;		/* --rate: when the next one is */
	unsigned		 sub;		/* --redis: replies of this URL */
	int			 allset;	/* --redis: all of them 1 so far */
	int			 suberr;	/* --redis: one of them an error */
};

struct worker {
	pthread_t	 tid;
	struct conn	*conns;
	size_t		 nconns;
	struct hist	*hist;
	uint64_t	 replies_new;
	uint64_t	 replies_seen;
	uint64_t	 replies_err;
	_Atomic uint64_t progress;	/* replies so far, for the ticker */
	uint64_t	 end_ns;
	char		 first_err[256];
	char		 failure[512];
};

struct bench {
	struct client_target	 target;
	char			 name[300];
	const char		*token;
	const char		*filter;
	const char		*keyfile;
	size_t			 nconns;
	size_t			 nthreads;
	size_t			 depth;
	uint64_t		 requests;
	uint64_t		 nkeys;
	uint64_t		 seed;
	double			 ratio;
	int			 csv;
	int			 quiet;
	int			 redis;		/* six SETBITs per URL */
	int			 resp;		/* one RESP command per URL */
	int			 resp3;		/* HELLO 3 first */
	const char		*resp_cmd;	/* "SETNX", "SADD", "BF.ADD" */
	char			 resp_prefix[400];
	size_t			 resp_plen;
	double			 rate;		/* requests/s in all, 0: no limit */
	uint64_t		 interval_ns;	/* --rate: per connection */
	uint64_t		 start_ns;

	/* Key i is keys[keyoff[i] .. keyoff[i + 1]), ending in "\n". When
	 * every request has the same verb the whole request line is stored,
	 * so a run of consecutive requests is one memcpy. */
	char			*keys;
	uint64_t		*keyoff;
	size_t			 maxline;	/* longest request line */
	double			 avgkey;	/* average URL length */
	int			 uniform;
	uint64_t		 check_below;	/* CHECK if hash(i) < this */
	char			 seen_prefix[300];
	char			 check_prefix[300];
	size_t			 seen_plen;
	size_t			 check_plen;
	size_t			 batch_max;	/* requests per batch */
};

static struct bench	 B;
static _Atomic uint64_t	 next_request;
static _Atomic int	 aborted;
static pthread_barrier_t start_barrier;

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: seen-bench [-q] [--csv] [-h host] [-p port] [-s socket] "
	    "[-a token]\n"
	    "                  [-c conns] [-P depth] [-n requests] [-k keys] "
	    "[-f file]\n"
	    "                  [--seed seed] [-r ratio] [--filter name] "
	    "[-t threads]\n"
	    "\n"
	    "  -h host       server host (default %s)\n"
	    "  -p port       server port (default %s)\n"
	    "  -s socket     connect to a Unix socket instead\n"
	    "  -a token      send AUTH token on each connection first\n"
	    "  --tls, --cacert file, --cert file, --key file\n"
	    "                connect with TLS (seend's tls_listen), as "
	    "seen-cli does\n"
	    "  -c conns      connections (default 4)\n"
	    "  -P depth      requests in flight per connection (default 1)\n"
	    "  -n requests   total requests (default 1000000; k, M, G "
	    "suffixes)\n"
	    "  -k keys       distinct keys, request i uses key i %% keys "
	    "(default: requests)\n"
	    "  -f file       read keys from a file of URLs instead of "
	    "generating them\n"
	    "  --seed seed   URL generator seed (default: random, printed)\n"
	    "  -r ratio      share of CHECK requests, 0 to 1 (default 0: all "
	    "SEEN)\n"
	    "  --filter name send requests to this filter\n"
	    "  -t threads    client threads (default 1)\n"
	    "  --rate R      send at most R requests/s in all, paced per "
	    "connection;\n"
	    "                latency counts from when a request was due\n"
	    "  --redis       talk to redis-server: each URL is %d pipelined "
	    "SETBITs\n"
	    "                on one 2^%d-bit key (a request = a URL)\n"
	    "  --resp        speak RESP (the Redis protocol): SETNX url 1 per "
	    "request\n"
	    "  --resp-cmd C  with --resp: setnx (default), sadd or bfadd (SADD "
	    "or\n"
	    "                BF.ADD to the --filter name, default \"default\")\n"
	    "  --csv         print one CSV header line and one result line\n"
	    "  -q            print only a one-line summary\n"
	    "  -V, --version print the version\n"
	    "  --help        print this help\n",
	    SEEN_DEFAULT_HOST, SEEN_DEFAULT_PORT, REDIS_K, REDIS_LOG2_BITS);
}

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "seen-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ---- histogram ---- */

static inline unsigned
hist_index(uint64_t v)
{
	unsigned	 e, shift;

	if (v < (1u << HIST_SUB_BITS))
		return (unsigned)v;
	e = 63 - (unsigned)__builtin_clzll(v);
	shift = e - HIST_SUB_BITS + 1;
	return shift * HIST_HALF + (unsigned)(v >> shift);
}

/* The highest value that falls in bucket i, as HdrHistogram reports. */
static uint64_t
hist_value(unsigned i)
{
	unsigned	 shift;
	uint64_t	 sub;

	if (i < (1u << HIST_SUB_BITS))
		return i;
	shift = (i >> (HIST_SUB_BITS - 1)) - 1;
	sub = i - (uint64_t)shift * HIST_HALF;
	return ((sub + 1) << shift) - 1;
}

static inline void
hist_add(struct hist *h, uint64_t v)
{
	h->counts[hist_index(v)]++;
	h->total++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

static void
hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

/* The value at quantile q (0..1], in nanoseconds; never above the max. */
static uint64_t
hist_quantile(const struct hist *h, double q)
{
	uint64_t	 want, seen = 0, v;

	if (h->total == 0)
		return 0;
	want = (uint64_t)ceil(q * (double)h->total);
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= want) {
			v = hist_value(i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}

/* ---- keys ---- */

struct keybuf {
	char		*buf;
	size_t		 len;
	size_t		 cap;
	uint64_t	*off;		/* n + 1 entries */
	uint64_t	 n;
	uint64_t	 offcap;
	uint64_t	 urlbytes;
};

static void
keybuf_reserve(struct keybuf *kb, size_t need)
{
	size_t	 cap;

	if (kb->n + 2 > kb->offcap) {
		kb->offcap = kb->offcap ? kb->offcap * 2 : 1 << 16;
		kb->off = realloc(kb->off, sizeof(uint64_t) * kb->offcap);
		if (kb->off == NULL)
			die("out of memory for the key index");
	}
	if (kb->len + need <= kb->cap)
		return;
	cap = kb->cap ? kb->cap : 1 << 20;
	while (cap < kb->len + need)
		cap *= 2;
	if ((kb->buf = realloc(kb->buf, cap)) == NULL)
		die("cannot allocate %zu bytes for the keys", cap);
	kb->cap = cap;
}

/* Appends the whole RESP command of one URL: the URL as it is (RESP is
 * binary safe, nothing to encode). */
static void
keybuf_add_resp(struct keybuf *kb, const char *url, size_t len)
{
	char	*d;
	int	 n;

	keybuf_reserve(kb, B.resp_plen + len + RESP_TAIL);
	d = kb->buf + kb->len;
	memcpy(d, B.resp_prefix, B.resp_plen);
	d += B.resp_plen;
	n = sprintf(d, "%zu\r\n", len);
	memcpy(d + n, url, len);
	d += (size_t)n + len;
	/* SETNX's value; SADD and BF.ADD end with the URL */
	if (strcmp(B.resp_cmd, "SETNX") == 0) {
		memcpy(d, "\r\n$1\r\n1\r\n", 9);
		d += 9;
	} else {
		memcpy(d, "\r\n", 2);
		d += 2;
	}
	if ((size_t)(d - (kb->buf + kb->len)) > B.maxline)
		B.maxline = (size_t)(d - (kb->buf + kb->len));
	kb->len = (size_t)(d - kb->buf);
	kb->off[++kb->n] = kb->len;
	kb->urlbytes += len;
}

/* Appends one request line (or, when the verb varies, the key and "\n"). */
static void
keybuf_add(struct keybuf *kb, const char *url, size_t len)
{
	const char	*prefix = B.redis ? "" : B.uniform ? (B.ratio > 0 ?
			    B.check_prefix : B.seen_prefix) : "";
	size_t		 plen = strlen(prefix), line;

	if (B.resp) {
		keybuf_add_resp(kb, url, len);
		return;
	}
	keybuf_reserve(kb, plen + 3 * len + 1);
	memcpy(kb->buf + kb->len, prefix, plen);
	line = plen + client_encode_key(kb->buf + kb->len + plen, url, len);
	kb->buf[kb->len + line] = '\n';
	kb->len += line + 1;
	kb->off[++kb->n] = kb->len;
	kb->urlbytes += len;
	if (line + 1 > B.maxline)
		B.maxline = line + 1;
}

static void
keys_generate(struct keybuf *kb, uint64_t want)
{
	char	 url[URLGEN_MAX + 1];
	size_t	 len;

	/* one allocation of the right size, rather than doublings that
	 * briefly need three times the memory */
	kb->offcap = want + 2;
	if ((kb->off = malloc(sizeof(uint64_t) * kb->offcap)) == NULL)
		die("cannot allocate the index for %" PRIu64 " keys", want);
	kb->off[0] = 0;
	keybuf_reserve(kb, (size_t)want * 88);
	for (uint64_t i = 0; i < want; i++) {
		len = urlgen_url(B.seed, i, url, sizeof(url));
		keybuf_add(kb, url, len);
	}
}

/* Lines of the file, without "\r\n", empty ones skipped; at most want. */
static void
keys_load(struct keybuf *kb, uint64_t want)
{
	FILE	*fp;
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;

	if ((fp = fopen(B.keyfile, "r")) == NULL)
		die("%s: %s", B.keyfile, strerror(errno));
	keybuf_reserve(kb, 0);
	kb->off[0] = 0;
	while (kb->n < want && (n = getline(&line, &cap, fp)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n > 0)
			keybuf_add(kb, line, (size_t)n);
	}
	if (ferror(fp))
		die("%s: %s", B.keyfile, strerror(errno));
	fclose(fp);
	free(line);
	if (kb->n == 0)
		die("%s: no keys", B.keyfile);
}

static void
keys_prepare(void)
{
	struct keybuf	 kb;

	memset(&kb, 0, sizeof(kb));
	B.uniform = B.ratio == 0.0 || B.ratio == 1.0;
	if (B.ratio >= 1.0)
		B.check_below = UINT64_MAX;
	else
		B.check_below = (uint64_t)(B.ratio * 18446744073709551616.0);
	snprintf(B.seen_prefix, sizeof(B.seen_prefix), "SEEN %s%s",
	    B.filter ? B.filter : "", B.filter ? " " : "");
	snprintf(B.check_prefix, sizeof(B.check_prefix), "CHECK %s%s",
	    B.filter ? B.filter : "", B.filter ? " " : "");
	B.seen_plen = strlen(B.seen_prefix);
	B.check_plen = strlen(B.check_prefix);
	if (B.resp && strcmp(B.resp_cmd, "SETNX") == 0)
		snprintf(B.resp_prefix, sizeof(B.resp_prefix),
		    "*3\r\n$5\r\nSETNX\r\n$");
	else if (B.resp) {
		const char *f = B.filter ? B.filter : "default";

		snprintf(B.resp_prefix, sizeof(B.resp_prefix),
		    "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$",
		    strlen(B.resp_cmd), B.resp_cmd, strlen(f), f);
	}
	B.resp_plen = strlen(B.resp_prefix);

	if (B.keyfile != NULL) {
		/* with a file, -k only caps how many of its lines are used */
		keys_load(&kb, B.nkeys ? B.nkeys : UINT64_MAX);
	} else {
		if (B.nkeys == 0)
			B.nkeys = B.requests;
		if (B.nkeys > (1ULL << 40))
			die("-k %" PRIu64 ": at most 2^40 generated keys are "
			    "distinct", B.nkeys);
		if (B.nkeys > SIZE_MAX / 128)
			die("-k %" PRIu64 ": too many keys to hold in memory",
			    B.nkeys);
		keys_generate(&kb, B.nkeys);
	}
	B.nkeys = kb.n;
	B.keys = kb.buf;
	B.keyoff = kb.off;
	B.avgkey = (double)kb.urlbytes / (double)kb.n;
	if (!B.uniform)
		B.maxline += strlen(B.check_prefix);
	if (B.redis)
		B.maxline = REDIS_URL_BYTES;
	B.batch_max = BATCH_BYTES / B.maxline;
	if (B.batch_max < 1)
		B.batch_max = 1;
	if (B.batch_max > B.depth)
		B.batch_max = B.depth;
}

/* ---- the load loop ---- */

static void
fail(struct worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
fail(struct worker *w, const char *fmt, ...)
{
	va_list	 ap;

	if (w->failure[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(w->failure, sizeof(w->failure), fmt, ap);
		va_end(ap);
	}
	atomic_store(&aborted, 1);
}

/* Decimal digits of v at p; returns how many. */
static size_t
put_u32(char *p, uint32_t v)
{
	char	 tmp[10];
	size_t	 n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* The REDIS_K SETBIT commands of one URL, in RESP; returns their length. */
static size_t
redis_commands(char *out, const char *url, size_t len)
{
	static const char head[] = "*4\r\n$6\r\nSETBIT\r\n$" "16" "\r\n"
	    REDIS_KEY "\r\n$";
	uint64_t	 h = XXH3_64bits(url, len);
	uint32_t	 h1 = (uint32_t)h, h2 = (uint32_t)(h >> 32) | 1, bit;
	size_t		 o = 0, d;
	char		 num[10];

	for (uint32_t i = 0; i < REDIS_K; i++) {
		bit = (h1 + i * h2) & ((1u << REDIS_LOG2_BITS) - 1);
		memcpy(out + o, head, sizeof(head) - 1);
		o += sizeof(head) - 1;
		d = put_u32(num, bit);
		o += put_u32(out + o, (uint32_t)d);
		memcpy(out + o, "\r\n", 2);
		memcpy(out + o + 2, num, d);
		o += 2 + d;
		memcpy(out + o, "\r\n$1\r\n1\r\n", 9);
		o += 9;
	}
	return o;
}

/*
 * How many requests this connection may send now under --rate: the ones
 * whose time has come (connection i's j-th request is due at start +
 * j * interval). Sets *due to the time the next one is due.
 */
static uint64_t
rate_allows(const struct conn *c, uint64_t now, uint64_t *due)
{
	uint64_t	 ready;

	if (now < B.start_ns)
		ready = 0;
	else
		ready = (now - B.start_ns) / B.interval_ns + 1;
	*due = B.start_ns + (ready > c->scheduled ? ready : c->scheduled) *
	    B.interval_ns;
	return ready > c->scheduled ? ready - c->scheduled : 0;
}

/*
 * Claims up to batch_max free pipeline slots' worth of requests and lays
 * their lines out in the connection's buffer. Returns how many.
 */
static size_t
conn_fill(struct conn *c)
{
	uint64_t	 first, n, i, k = B.nkeys, j, run, t, due = 0;
	size_t		 room = B.depth - c->inflight, o = 0, slot;

	if (room > B.batch_max)
		room = B.batch_max;
	if (B.rate > 0 && room > 0) {
		uint64_t may = rate_allows(c, now_ns(), &due);

		c->due = due;
		if (room > may)
			room = (size_t)may;
	}
	if (room == 0 || atomic_load_explicit(&next_request,
	    memory_order_relaxed) >= B.requests)
		return 0;
	first = atomic_fetch_add_explicit(&next_request, room,
	    memory_order_relaxed);
	if (first >= B.requests)
		return 0;
	n = B.requests - first < room ? B.requests - first : room;

	if (B.redis) {
		for (i = first; i < first + n; i++) {
			j = i % k;
			o += redis_commands(c->out + o, B.keys + B.keyoff[j],
			    B.keyoff[j + 1] - B.keyoff[j] - 1);
		}
	} else if (B.uniform) {
		/* consecutive requests are consecutive keys: copy runs */
		for (i = 0, j = first % k; i < n; i += run, j = 0) {
			run = n - i < k - j ? n - i : k - j;
			memcpy(c->out + o, B.keys + B.keyoff[j],
			    B.keyoff[j + run] - B.keyoff[j]);
			o += B.keyoff[j + run] - B.keyoff[j];
		}
	} else {
		for (i = first; i < first + n; i++) {
			int	 check = mix64(B.seed ^ i) < B.check_below;
			const char *p = check ? B.check_prefix : B.seen_prefix;
			size_t	 plen = check ? B.check_plen : B.seen_plen;

			j = i % k;
			memcpy(c->out + o, p, plen);
			o += plen;
			memcpy(c->out + o, B.keys + B.keyoff[j],
			    B.keyoff[j + 1] - B.keyoff[j]);
			o += B.keyoff[j + 1] - B.keyoff[j];
		}
	}
	c->out_len = o;
	c->out_off = 0;
	t = now_ns();
	slot = c->head + c->inflight;
	if (B.rate > 0) {
		/* from when each was due: a late send is the server's (or
		 * this client's) delay, not a pause in the measurement */
		for (i = 0; i < n; i++, slot++)
			c->sent[slot % B.depth] = B.start_ns +
			    (c->scheduled + i) * B.interval_ns;
		c->scheduled += n;
	} else
		for (i = 0; i < n; i++, slot++)
			c->sent[slot % B.depth] = t;
	c->inflight += n;
	return n;
}

/* Writes what the socket takes. Returns 0, or -1 on error. */
static int
conn_flush(struct worker *w, struct conn *c)
{
	ssize_t	 n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		    MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			fail(w, "write to %s: %s", B.name, strerror(errno));
			return -1;
		}
		c->out_off += (size_t)n;
	}
	return 0;
}

static void
note_error(struct worker *w, const char *p, size_t len)
{
	if (!B.redis)
		w->replies_err++;
	if (w->first_err[0] == '\0') {
		if (len >= sizeof(w->first_err))
			len = sizeof(w->first_err) - 1;
		memcpy(w->first_err, p, len);
		w->first_err[len] = '\0';
	}
}

/*
 * One RESP reply at p (before e) to a command answering ":0" or ":1": sets
 * *len to its bytes and returns 0 or 1; -1 for an error reply (noted);
 * -3 if it is not all there yet; -2 (the run fails) for anything else.
 */
static int
resp_int_reply(struct worker *w, const char *p, const char *e, size_t *len)
{
	const char	*nl;
	size_t		 n;

	if (e - p >= 4 && p[0] == ':' && (p[1] == '0' || p[1] == '1') &&
	    p[2] == '\r' && p[3] == '\n') {
		*len = 4;
		return p[1] - '0';
	}
	/* RESP3's booleans (BF.ADD after HELLO 3): true is :1 */
	if (e - p >= 4 && p[0] == '#' && (p[1] == 't' || p[1] == 'f') &&
	    p[2] == '\r' && p[3] == '\n') {
		*len = 4;
		return p[1] == 't';
	}
	if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL)
		return -3;
	*len = (size_t)(nl - p) + 1;
	n = *len - 1;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	if (p[0] != '-' || n == 0) {
		fail(w, "unexpected reply from %s: %.*s", B.name, (int)n, p);
		return -2;
	}
	note_error(w, p + 1, n - 1);
	return -1;
}

/*
 * Reads once and pairs every complete reply with its slot. "0\r\n" and
 * "1\r\n" are recognised without a search; anything else is framed with
 * memchr. Returns 0, or -1 if the connection failed.
 */
static int
conn_read(struct worker *w, struct conn *c)
{
	struct client_reader	*r = &c->in;
	char			*p, *e, *nl;
	size_t			 len;
	ssize_t			 n;
	uint64_t		 t;
	int			 bit;

	n = client_reader_fill(r);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n == -1) {
		fail(w, "read from %s: %s", B.name, strerror(errno));
		return -1;
	}
	if (n == 0) {
		fail(w, "%s closed the connection with %zu requests "
		    "unanswered", B.name, c->inflight);
		return -1;
	}
	t = now_ns();
	p = r->buf + r->start;
	e = r->buf + r->end;
	while (p < e) {
		if (B.resp) {
			/* SETNX, SADD, BF.ADD: ":1" new, ":0" seen */
			if ((bit = resp_int_reply(w, p, e, &len)) == -2)
				return -1;
			if (bit == -3)
				break;
			if (bit == 1)
				w->replies_new++;
			else if (bit == 0)
				w->replies_seen++;
		} else if (B.redis) {
			/* ":0" or ":1" per SETBIT, REDIS_K per URL */
			if ((bit = resp_int_reply(w, p, e, &len)) == -2)
				return -1;
			if (bit == -3)
				break;
			if (bit == -1)
				c->suberr = 1;
			else
				c->allset &= bit;
			p += len;
			if (++c->sub < REDIS_K)
				continue;
			if (c->suberr)
				w->replies_err++;
			else if (c->allset)
				w->replies_seen++;
			else
				w->replies_new++;
			c->sub = 0;
			c->allset = 1;
			c->suberr = 0;
			if (c->inflight == 0) {
				fail(w, "%s sent a reply nobody asked for",
				    B.name);
				return -1;
			}
			hist_add(w->hist, t - c->sent[c->head]);
			if (++c->head == B.depth)
				c->head = 0;
			c->inflight--;
			continue;
		}
		else if (e - p >= 3 && (p[0] == '0' || p[0] == '1') &&
		    p[1] == '\r' && p[2] == '\n') {
			if (p[0] == '0')
				w->replies_new++;
			else
				w->replies_seen++;
			len = 3;
		} else {
			if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL)
				break;
			len = (size_t)(nl - p) + 1;
			n = (ssize_t)len - 1;
			if (n > 0 && p[n - 1] == '\r')
				n--;
			if (n >= 3 && memcmp(p, "ERR", 3) == 0 &&
			    (n == 3 || p[3] == ' '))
				note_error(w, p, (size_t)n);
			else {
				fail(w, "unexpected reply from %s: %.*s",
				    B.name, (int)n, p);
				return -1;
			}
		}
		if (c->inflight == 0) {
			fail(w, "%s sent a reply nobody asked for", B.name);
			return -1;
		}
		hist_add(w->hist, t - c->sent[c->head]);
		if (++c->head == B.depth)
			c->head = 0;
		c->inflight--;
		p += len;
	}
	r->start = (size_t)(p - r->buf);
	return 0;
}

static void *
worker_run(void *arg)
{
	struct worker	*w = arg;
	struct pollfd	*pfd;
	struct conn	*c;
	size_t		 i, active = w->nconns, np;
	uint64_t	 replies, wake, now;
	struct timespec	 ts, *tsp;
	int		 have_wake;

	pfd = calloc(w->nconns, sizeof(*pfd));
	pthread_barrier_wait(&start_barrier);
	if (pfd == NULL) {
		fail(w, "out of memory");
		goto out;
	}
	while (active > 0 && !atomic_load_explicit(&aborted,
	    memory_order_relaxed)) {
		np = 0;
		have_wake = 0;
		wake = 0;
		for (i = 0; i < w->nconns; i++) {
			c = &w->conns[i];
			if (c->done)
				continue;
			if (c->out_off == c->out_len && conn_fill(c) == 0 &&
			    c->inflight == 0 && atomic_load_explicit(
			    &next_request, memory_order_relaxed) >=
			    B.requests) {
				c->done = 1;
				active--;
				continue;
			}
			if (B.rate > 0 && c->out_off == c->out_len &&
			    c->inflight < B.depth && (!have_wake ||
			    c->due < wake)) {
				wake = c->due;
				have_wake = 1;
			}
			if (conn_flush(w, c) == -1)
				goto out;
			pfd[np].fd = c->fd;
			pfd[np].events = POLLIN;
			if (c->out_off < c->out_len)
				pfd[np].events |= POLLOUT;
			np++;
		}
		if (np == 0)
			break;
		/* --rate: wake when the next request is due; a near one
		 * by polling without sleeping */
		ts.tv_sec = 1;
		ts.tv_nsec = 0;
		tsp = &ts;
		if (have_wake) {
			now = now_ns();
			if (wake <= now + SPIN_NS)
				ts.tv_sec = 0;
			else {
				ts.tv_sec = (time_t)((wake - now) / 1000000000u);
				ts.tv_nsec = (long)((wake - now) % 1000000000u);
			}
		}
		if (ppoll(pfd, np, tsp, NULL) == -1 && errno != EINTR) {
			fail(w, "poll: %s", strerror(errno));
			break;
		}
		np = 0;
		for (i = 0; i < w->nconns; i++) {
			c = &w->conns[i];
			if (c->done)
				continue;
			if ((pfd[np].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    conn_read(w, c) == -1)
				goto out;
			if ((pfd[np].revents & POLLOUT) &&
			    conn_flush(w, c) == -1)
				goto out;
			np++;
		}
		replies = w->replies_new + w->replies_seen + w->replies_err;
		atomic_store_explicit(&w->progress, replies,
		    memory_order_relaxed);
	}
out:
	w->end_ns = now_ns();
	free(pfd);
	return NULL;
}

/* ---- set-up and report ---- */

static uint64_t
parse_count(const char *flag, const char *s, uint64_t min)
{
	char		*end;
	unsigned long long v;
	uint64_t	 mult = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mult = 1000, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1000000, end++;
	else if (*end == 'g' || *end == 'G')
		mult = 1000000000, end++;
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' ||
	    v > UINT64_MAX / mult || v * mult < min)
		die("%s %s: expected a number of at least %" PRIu64, flag, s,
		    min);
	return v * mult;
}

/* AUTH in RESP: "+OK" or the server's error. */
static int
resp_auth(int fd, struct client_reader *r, const char *token, char *err,
    size_t errlen)
{
	char	 req[600], *line;
	size_t	 len;
	int	 n, rc;

	n = snprintf(req, sizeof(req), "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n",
	    strlen(token), token);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, errlen, "AUTH: token too long");
		return -1;
	}
	if (client_write_all(fd, req, (size_t)n) == -1) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		return -1;
	}
	if ((rc = client_reader_line(r, &line, &len)) != 1) {
		snprintf(err, errlen, "%s", rc == 0 ?
		    "connection closed by server" : strerror(errno));
		return -1;
	}
	if (strcmp(line, "+OK") != 0) {
		snprintf(err, errlen, "AUTH: %s", line);
		return -1;
	}
	return 0;
}

/* HELLO 3 (--resp3): the reply is a map of simple values and bulk
 * strings, read line by line. */
static int
resp_hello3(int fd, struct client_reader *r, char *err, size_t errlen)
{
	static const char req[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
	char	*line;
	size_t	 len;
	long	 left;
	int	 rc;

	if (client_write_all(fd, req, sizeof(req) - 1) == -1) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		return -1;
	}
	if ((rc = client_reader_line(r, &line, &len)) != 1 || line[0] != '%') {
		snprintf(err, errlen, "HELLO 3: %s", rc != 1 ?
		    "connection closed" : line);
		return -1;
	}
	for (left = 2 * strtol(line + 1, NULL, 10); left > 0; left--) {
		if (client_reader_line(r, &line, &len) != 1)
			goto closed;
		if (line[0] == '$' && client_reader_line(r, &line, &len) != 1)
			goto closed;
	}
	return 0;
closed:
	snprintf(err, errlen, "HELLO 3: connection closed");
	return -1;
}

static void
connect_all(struct worker *workers)
{
	char	 err[512];
	size_t	 i, t;

	for (t = 0; t < B.nthreads; t++) {
		workers[t].nconns = 0;
		workers[t].conns = calloc(B.nconns / B.nthreads + 1,
		    sizeof(struct conn));
		workers[t].hist = calloc(1, sizeof(struct hist));
		if (workers[t].conns == NULL || workers[t].hist == NULL)
			die("out of memory");
	}
	for (i = 0; i < B.nconns; i++) {
		struct worker	*w = &workers[i % B.nthreads];
		struct conn	*c = &w->conns[w->nconns++];

		if ((c->fd = client_connect(&B.target, err, sizeof(err))) == -1)
			die("%s", err);
		c->allset = 1;
		if (client_reader_init(&c->in, c->fd, READ_BUF) == -1 ||
		    (c->out = malloc(B.batch_max * B.maxline)) == NULL ||
		    (c->sent = calloc(B.depth, sizeof(uint64_t))) == NULL)
			die("out of memory");
		if (B.token != NULL && (B.resp ?
		    resp_auth(c->fd, &c->in, B.token, err, sizeof(err)) :
		    client_auth(c->fd, &c->in, B.token, err, sizeof(err))) == -1)
			die("%s: %s", B.name, err);
		if (B.resp3 && resp_hello3(c->fd, &c->in, err,
		    sizeof(err)) == -1)
			die("%s: %s", B.name, err);
		if (client_set_nonblock(c->fd, 1) == -1)
			die("fcntl: %s", strerror(errno));
	}
}

static void
machine(char *arch, size_t alen, char *model, size_t mlen)
{
	struct utsname	 u;
	FILE		*fp;
	char		 line[512], *p;

	snprintf(arch, alen, "%s", uname(&u) == 0 ? u.machine : "unknown");
	snprintf(model, mlen, "unknown");
	if ((fp = fopen("/proc/cpuinfo", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, "model name", 10) != 0 &&
		    strncmp(line, "Model", 5) != 0)
			continue;
		if ((p = strchr(line, ':')) == NULL)
			continue;
		p += strspn(p + 1, " \t") + 1;
		p[strcspn(p, "\n")] = '\0';
		snprintf(model, mlen, "%s", p);
		break;
	}
	fclose(fp);
}

/* The command line as a shell would take it back. */
static void
command_line(int argc, char **argv, char *buf, size_t len)
{
	size_t	 o = 0;

	buf[0] = '\0';
	for (int i = 0; i < argc && o < len; i++) {
		const char *a = argv[i];
		int	 plain = a[0] != '\0' &&
		    strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789-_./:=,@+%") == strlen(a);

		o += (size_t)snprintf(buf + o, len - o, plain ? "%s%s" :
		    "%s'%s'", i ? " " : "", a);
	}
}

static void
csv_field(const char *s, int last)
{
	if (strpbrk(s, ",\"\n") != NULL) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else
		fputs(s, stdout);
	putchar(last ? '\n' : ',');
}

static void
report(int argc, char **argv, struct worker *workers, double secs)
{
	static struct hist h;
	char		 arch[80], model[256], cmd[4096];
	uint64_t	 rnew = 0, rseen = 0, rerr = 0;
	double		 rps, p50, p99, p999, pmax, avg;
	long		 ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (size_t t = 0; t < B.nthreads; t++) {
		hist_merge(&h, workers[t].hist);
		rnew += workers[t].replies_new;
		rseen += workers[t].replies_seen;
		rerr += workers[t].replies_err;
	}
	rps = secs > 0 ? (double)h.total / secs : 0;
	p50 = (double)hist_quantile(&h, 0.50) / 1e3;
	p99 = (double)hist_quantile(&h, 0.99) / 1e3;
	p999 = (double)hist_quantile(&h, 0.999) / 1e3;
	pmax = (double)h.max / 1e3;
	avg = h.total ? (double)h.sum / (double)h.total / 1e3 : 0;
	machine(arch, sizeof(arch), model, sizeof(model));
	command_line(argc, argv, cmd, sizeof(cmd));

	if (B.csv) {
		char	 f[64];

		printf("arch,cpus,cpu_model,command,target,connections,threads,"
		    "depth,requests,keys,check_ratio,elapsed_s,requests_per_s,"
		    "p50_us,p99_us,p999_us,max_us,avg_us,replies_new,"
		    "replies_seen,replies_err\n");
		csv_field(arch, 0);
		printf("%ld,", ncpu);
		csv_field(model, 0);
		csv_field(cmd, 0);
		csv_field(B.name, 0);
		printf("%zu,%zu,%zu,%" PRIu64 ",%" PRIu64 ",%g,%.6f,%.0f,"
		    "%.1f,%.1f,%.1f,%.1f,%.1f,%" PRIu64 ",%" PRIu64 ",",
		    B.nconns, B.nthreads, B.depth, h.total, B.nkeys, B.ratio,
		    secs, rps, p50, p99, p999, pmax, avg, rnew, rseen);
		snprintf(f, sizeof(f), "%" PRIu64, rerr);
		csv_field(f, 1);
		return;
	}
	if (B.quiet) {
		printf("%.0f requests/s, latency us p50 %.1f p99 %.1f "
		    "p99.9 %.1f max %.1f\n", rps, p50, p99, p999, pmax);
		return;
	}
	printf("machine:     %s, %ld CPUs, %s\n", arch, ncpu, model);
	printf("command:     %s\n", cmd);
	printf("target:      %s\n", B.name);
	printf("connections: %zu over %zu thread%s, pipeline depth %zu\n",
	    B.nconns, B.nthreads, B.nthreads == 1 ? "" : "s", B.depth);
	if (B.keyfile != NULL)
		printf("keys:        %" PRIu64 " from %s (%.1f bytes on "
		    "average)\n", B.nkeys, B.keyfile, B.avgkey);
	else
		printf("keys:        %" PRIu64 " generated (seed %" PRIu64
		    ", %.1f bytes on average)\n", B.nkeys, B.seed, B.avgkey);
	if (B.redis)
		printf("requests:    %" PRIu64 " URLs, each %d pipelined SETBITs "
		    "on a 2^%d-bit key\n", h.total, REDIS_K, REDIS_LOG2_BITS);
	else if (B.resp)
		printf("requests:    %" PRIu64 " (RESP %s%s%s)\n", h.total,
		    B.resp_cmd, strcmp(B.resp_cmd, "SETNX") ? ", filter " : "",
		    strcmp(B.resp_cmd, "SETNX") ? (B.filter ? B.filter :
		    "default") : "");
	else
		printf("requests:    %" PRIu64 " (%s%s%s)\n", h.total,
		    B.ratio == 0 ? "SEEN" : B.ratio == 1 ? "CHECK" :
		    "SEEN and CHECK", B.filter ? ", filter " : "",
		    B.filter ? B.filter : "");
	if (B.rate > 0)
		printf("rate limit:  %.0f requests/s\n", B.rate);
	if (B.ratio > 0 && B.ratio < 1)
		printf("check ratio: %g\n", B.ratio);
	printf("elapsed:     %.3f s\n", secs);
	printf("throughput:  %.0f requests/s\n", rps);
	printf("latency us:  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  "
	    "(avg %.1f)\n", p50, p99, p999, pmax, avg);
	if (B.resp)
		printf("replies:     %" PRIu64 " new (:1), %" PRIu64 " seen "
		    "(:0), %" PRIu64 " ERR\n", rnew, rseen, rerr);
	else
		printf("replies:     %" PRIu64 " new (0), %" PRIu64 " seen "
		    "(1), %" PRIu64 " ERR\n", rnew, rseen, rerr);
}

/* Replies so far, on stderr once a second while the run lasts, when
 * someone is watching. */
static void
wait_workers(struct worker *workers)
{
	int		 tick = isatty(STDERR_FILENO) && !B.quiet && !B.csv;
	uint64_t	 done, start = now_ns();
	struct timespec	 ts = { 0, 100 * 1000 * 1000 };
	int		 n = 0, shown = 0;

	for (;;) {
		done = 0;
		for (size_t t = 0; t < B.nthreads; t++)
			done += atomic_load_explicit(&workers[t].progress,
			    memory_order_relaxed);
		if (done >= B.requests || atomic_load(&aborted))
			break;
		nanosleep(&ts, NULL);
		if (tick && ++n % 10 == 0) {
			fprintf(stderr, "\r%" PRIu64 " of %" PRIu64 " requests, "
			    "%.0f/s   ", done, B.requests, (double)done /
			    ((double)(now_ns() - start) / 1e9));
			shown = 1;
		}
	}
	for (size_t t = 0; t < B.nthreads; t++)
		pthread_join(workers[t].tid, NULL);
	if (shown)
		fprintf(stderr, "\r%60s\r", "");
}

/* Everything is released before exit so that a leak checker (the tests run
 * under AddressSanitizer) reports real leaks only. */
static void
cleanup(struct worker *workers)
{
	for (size_t t = 0; t < B.nthreads; t++) {
		for (size_t i = 0; i < workers[t].nconns; i++) {
			struct conn *c = &workers[t].conns[i];

			close(c->fd);
			client_reader_free(&c->in);
			free(c->out);
			free(c->sent);
		}
		free(workers[t].conns);
		free(workers[t].hist);
	}
	free(workers);
	free(B.keys);
	free(B.keyoff);
	pthread_barrier_destroy(&start_barrier);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help",	no_argument,		NULL, 'H' },
		{ "version",	no_argument,		NULL, 'V' },
		{ "csv",	no_argument,		NULL, 'C' },
		{ "seed",	required_argument,	NULL, 'S' },
		{ "filter",	required_argument,	NULL, 'F' },
		{ "rate",	required_argument,	NULL, 'R' },
		{ "redis",	no_argument,		NULL, 'D' },
		{ "resp",	no_argument,		NULL, 'E' },
		{ "resp3",	no_argument,		NULL, '3' },
		{ "resp-cmd",	required_argument,	NULL, 'M' },
		CLIENT_TLS_LONGOPTS,
		{ NULL,		0,			NULL, 0 },
	};
	struct worker	*workers;
	uint64_t	 t0, t1;
	char		*end;
	int		 ch, seeded = 0, status = 0;

	B.target.host = SEEN_DEFAULT_HOST;
	B.target.port = SEEN_DEFAULT_PORT;
	B.nconns = 4;
	B.nthreads = 1;
	B.depth = 1;
	B.requests = 1000000;

	while ((ch = getopt_long(argc, argv, "h:p:s:a:c:P:n:k:f:r:t:qV",
	    longopts, NULL)) != -1) {
		if (client_target_option(ch, optarg, &B.target, &B.token))
			continue;
		switch (ch) {
		case 'c':
			B.nconns = (size_t)parse_count("-c", optarg, 1);
			break;
		case 'P':
			B.depth = (size_t)parse_count("-P", optarg, 1);
			break;
		case 'n':
			B.requests = parse_count("-n", optarg, 1);
			break;
		case 'k':
			B.nkeys = parse_count("-k", optarg, 1);
			break;
		case 'f':
			B.keyfile = optarg;
			break;
		case 'r':
			errno = 0;
			B.ratio = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !(B.ratio >= 0.0 && B.ratio <= 1.0))
				die("-r %s: expected a ratio from 0 to 1",
				    optarg);
			break;
		case 't':
			B.nthreads = (size_t)parse_count("-t", optarg, 1);
			break;
		case 'q':
			B.quiet = 1;
			break;
		case 'C':
			B.csv = 1;
			break;
		case 'S':
			errno = 0;
			B.seed = strtoull(optarg, &end, 0);
			if (errno != 0 || end == optarg || *end != '\0')
				die("--seed %s: expected a number", optarg);
			seeded = 1;
			break;
		case 'F':
			B.filter = optarg;
			if (optarg[0] == '\0' ||
			    strpbrk(optarg, " \t\r\n") != NULL)
				die("--filter: a filter name cannot be empty "
				    "or hold whitespace");
			break;
		case 'R':
			errno = 0;
			B.rate = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !(B.rate > 0.0 && B.rate < 1e12))
				die("--rate %s: expected requests per second",
				    optarg);
			break;
		case 'D':
			B.redis = 1;
			break;
		case 'E':
			B.resp = 1;
			break;
		case '3':
			B.resp = B.resp3 = 1;
			break;
		case 'M':
			B.resp = 1;
			if (strcasecmp(optarg, "setnx") == 0)
				B.resp_cmd = "SETNX";
			else if (strcasecmp(optarg, "sadd") == 0)
				B.resp_cmd = "SADD";
			else if (strcasecmp(optarg, "bfadd") == 0 ||
			    strcasecmp(optarg, "bf.add") == 0)
				B.resp_cmd = "BF.ADD";
			else
				die("--resp-cmd %s: expected setnx, sadd or "
				    "bfadd", optarg);
			break;
		case 'V':
			printf("seen-bench %s\n", SEEN_VERSION);
			return 0;
		case 'H':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (B.depth > 1u << 24 || B.nconns > 1u << 20)
		die("-P and -c are limited to 16M and 1M");
	/* A run should bring fresh keys unless asked to repeat one: the
	 * default -k promises that every request is new. */
	if (!seeded && getrandom(&B.seed, sizeof(B.seed), 0) !=
	    sizeof(B.seed))
		B.seed = now_ns();
	if (B.nthreads > B.nconns)
		B.nthreads = B.nconns;
	if (B.redis && (B.token != NULL || B.filter != NULL || B.ratio > 0 ||
	    B.resp))
		die("--redis takes no -a, --filter, -r or --resp");
	if (B.resp && B.resp_cmd == NULL)
		B.resp_cmd = "SETNX";
	if (B.resp && B.ratio > 0)
		die("--resp takes no -r: every request is %s", B.resp_cmd);
	if (B.resp && B.filter != NULL && strcmp(B.resp_cmd, "SETNX") == 0)
		die("--filter with --resp needs --resp-cmd sadd or bfadd "
		    "(SETNX keys are routed as SEEN routes them)");
	if (B.rate > 0) {
		B.interval_ns = (uint64_t)((double)B.nconns * 1e9 / B.rate);
		if (B.interval_ns == 0)
			B.interval_ns = 1;
		/* a deadline 1 us late is a 1 us latency: no timer slack */
		(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	}
	client_target_name(&B.target, B.name, sizeof(B.name));

	if (!B.quiet && !B.csv && isatty(STDERR_FILENO))
		fprintf(stderr, "preparing keys...\r");
	keys_prepare();

	if ((workers = calloc(B.nthreads, sizeof(*workers))) == NULL)
		die("out of memory");
	connect_all(workers);
	if (pthread_barrier_init(&start_barrier, NULL,
	    (unsigned)B.nthreads + 1) != 0)
		die("pthread_barrier_init failed");
	for (size_t t = 0; t < B.nthreads; t++)
		if (pthread_create(&workers[t].tid, NULL, worker_run,
		    &workers[t]) != 0)
			die("pthread_create failed");
	t0 = now_ns();
	B.start_ns = t0;
	pthread_barrier_wait(&start_barrier);
	wait_workers(workers);
	t1 = t0;
	for (size_t t = 0; t < B.nthreads; t++) {
		if (workers[t].end_ns > t1)
			t1 = workers[t].end_ns;
		if (workers[t].failure[0] != '\0') {
			fprintf(stderr, "seen-bench: %s\n", workers[t].failure);
			status = 1;
		}
	}
	report(argc, argv, workers, (double)(t1 - t0) / 1e9);
	for (size_t t = 0; t < B.nthreads; t++)
		if (workers[t].first_err[0] != '\0') {
			fprintf(stderr, "seen-bench: error reply: %s\n",
			    workers[t].first_err);
			status = 1;
			break;
		}
	cleanup(workers);
	if (fflush(stdout) == EOF)
		die("stdout: %s", strerror(errno));
	return status;
}
