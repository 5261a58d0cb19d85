/*
 * cli_dump.c - "seen-cli dump", "restore" and "copy": BF.SCANDUMP's chunks
 * into a file, a file's chunks back through BF.LOADCHUNK, or one server's
 * chunks straight into another's.
 *
 * A dump file is the chunks as the server sent them, one after the other,
 * unchanged: each carries its own length (dump.h), so restore frames them
 * again by reading a 64-byte header and then its payload, and the server,
 * not this program, judges them (checksums, order, the dump they belong
 * to). seen-cli checks only what it needs to frame a chunk and to tell a
 * truncated file from a whole one.
 *
 * Everything is one chunk at a time (at most DUMP_CHUNK_MAX bytes held,
 * whatever the filter's size) over blocking sockets: dump and copy ask
 * for the next chunk before writing or loading the current one, so the
 * server prepares it meanwhile, and restore and copy wait for each
 * BF.LOADCHUNK's reply before sending the next, so the first refused
 * chunk ends the run with the server's reason and nothing more was sent.
 * The server drops a partial load when its connection closes, so a
 * failed restore or copy leaves no filter behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cli_dump.h"
#include "client.h"
#include "dump.h"
#include "fileio.h"
#include "progress.h"

/* The longest RESP header line we accept ("$123\r\n", "-ERR ...\r\n"). */
#define MAX_HEADER	65536
/* What one read(2) asks for at least. */
#define READ_CHUNK	(1u << 20)
/* chunk header fields used here (dump.h) */
#define CH_KIND		12
#define CH_INDEX	24
#define CH_COUNT	28
#define CH_LENGTH	40
/* header chunk payload fields used here */
#define HP_COUNT	40
#define HP_TOTAL	64
#define HP_MIN		72

/* One RESP connection, read through a buffer that holds a whole chunk. */
struct rconn {
	int		 fd;
	char		 name[400];	/* for messages */
	char		*in;
	size_t		 start, end, cap;
};

/* A reply: +, -, :, $ or BF.SCANDUMP's [iter, chunk]. */
struct reply {
	char			 type;
	char			 text[256];	/* + and -: the line, truncated */
	long long		 num;		/* : and the iterator of [iter, chunk] */
	const unsigned char	*data;		/* the chunk, in the connection's
						 * buffer until its next read */
	size_t			 dlen;
	int			 nil;		/* [iter, nil]: CF.SCANDUMP's end */
};

/* One run: what the messages and the summary need. */
struct job {
	const char	*verb;		/* "dump", "restore", "copy" */
	const char	*filter;	/* the filter read or loaded */
	struct progress	 prog;
	uint64_t	 done;		/* bytes of chunks handled */
	uint64_t	 keys;		/* the header chunk's count */
	uint32_t	 chunks;	/* chunks handled */
	uint32_t	 nchunks;	/* the header chunk's count of them */
	int		 cf;		/* a cuckoo filter: CF.SCANDUMP and
					   CF.LOADCHUNK, not BF.* */
};

/* The command of the job's filter type: "BF.SCANDUMP" or "CF.SCANDUMP". */
static const char *
dump_cmd(const struct job *j, const char *bf)
{
	static char name[32];

	snprintf(name, sizeof(name), "%s", bf);
	if (j->cf)
		name[0] = 'C';
	return name;
}

/* The dump's first reply: a cuckoo filter answers BF.SCANDUMP with
 * WRONGTYPE; CF.SCANDUMP then asks again. Returns 0, or -1. */
static int	call(struct job *, struct rconn *, int, const char *const [],
		    const void *, size_t, struct reply *);

static int
scandump_first(struct job *j, struct rconn *c, const char *argv[3],
    struct reply *r)
{
	argv[0] = "BF.SCANDUMP";
	if (call(j, c, 3, argv, NULL, 0, r) == -1)
		return -1;
	if (r->type != '-' || strncmp(r->text, "WRONGTYPE", 9) != 0)
		return 0;
	j->cf = 1;
	argv[0] = "CF.SCANDUMP";
	return call(j, c, 3, argv, NULL, 0, r);
}

/* The temporary file of a dump, removed if a signal ends the run. */
static volatile sig_atomic_t	 tmp_live;
static char			*tmp_path;

static void	job_warn(struct job *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static int	summary(struct job *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
job_warn(struct job *j, const char *fmt, ...)
{
	va_list	 ap;

	progress_clear(&j->prog);
	fprintf(stderr, "seen-cli: %s: ", j->verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A filter name as seend takes one, checked before anything is sent. */
static int
valid_filter_name(const char *s)
{
	size_t	 len = strlen(s), i;

	if (len < 1 || len > 64 || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || strchr("_-.:", s[i]) != NULL))
			return 0;
	return 1;
}

static int
check_name(struct job *j, const char *s)
{
	if (valid_filter_name(s))
		return 0;
	job_warn(j, "'%s' is not a valid filter name (1 to 64 letters, "
	    "digits, _ - . :, not starting with .)", s);
	return -1;
}

/* ---- the connection ---- */

static int
grow(char **buf, size_t *cap, size_t need)
{
	char	*n;
	size_t	 c;

	if (need <= *cap)
		return 0;
	/* chunks come in one size: grow to it, not to twice it */
	c = (need + 65535) & ~(size_t)65535;
	if ((n = realloc(*buf, c)) == NULL)
		return -1;
	*buf = n;
	*cap = c;
	return 0;
}

/* Reads until n bytes are buffered. Returns 1, 0 if the server closed
 * the connection first, -1 on an error (errno set). */
static int
conn_need(struct rconn *c, size_t n)
{
	size_t	 want;
	ssize_t	 r;

	while (c->end - c->start < n) {
		want = n - (c->end - c->start);
		if (want < READ_CHUNK)
			want = READ_CHUNK;
		if (c->cap - c->end < want && c->start > 0) {
			memmove(c->in, c->in + c->start, c->end - c->start);
			c->end -= c->start;
			c->start = 0;
		}
		if (grow(&c->in, &c->cap, c->end + want) == -1)
			return -1;
		do
			r = read(c->fd, c->in + c->end, c->cap - c->end);
		while (r == -1 && errno == EINTR);
		if (r <= 0)
			return (int)r;
		c->end += (size_t)r;
	}
	return 1;
}

/* A header line, without its "\r\n", valid until the next read. */
static int
conn_line(struct rconn *c, const char **line, size_t *len)
{
	const char	*nl = NULL;
	size_t		 have;
	int		 rc;

	for (;;) {
		have = c->end - c->start;
		if (have > 0 && (nl = memchr(c->in + c->start, '\n', have))
		    != NULL)
			break;
		if (have >= MAX_HEADER) {
			errno = EPROTO;
			return -1;
		}
		if ((rc = conn_need(c, have + 1)) <= 0)
			return rc;
	}
	*line = c->in + c->start;
	*len = (size_t)(nl - *line);
	if (*len < 2 || nl[-1] != '\r') {
		errno = EPROTO;
		return -1;
	}
	c->start += *len + 1;
	(*len)--;
	return 1;
}

/* The number after a header line's type byte. */
static int
line_num(const char *line, size_t len, long long *num)
{
	char	 buf[32];
	char	*end;

	if (len < 2 || len - 1 >= sizeof(buf))
		return -1;
	memcpy(buf, line + 1, len - 1);
	buf[len - 1] = '\0';
	errno = 0;
	*num = strtoll(buf, &end, 10);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* A bulk string's body of n bytes and its "\r\n": 1 and where it lies. */
static int
conn_bulk(struct rconn *c, long long n, const unsigned char **p)
{
	int	 rc;

	if (n < 0 || (unsigned long long)n > DUMP_CHUNK_MAX) {
		errno = EPROTO;
		return -1;
	}
	if ((rc = conn_need(c, (size_t)n + 2)) <= 0)
		return rc;
	*p = (const unsigned char *)c->in + c->start;
	if ((*p)[n] != '\r' || (*p)[n + 1] != '\n') {
		errno = EPROTO;
		return -1;
	}
	c->start += (size_t)n + 2;
	return 1;
}

/*
 * Reads one reply. Returns 1, 0 if the server closed the connection, -1
 * on an error (errno set; EPROTO for a reply that is not one of ours).
 */
static int
read_reply(struct rconn *c, struct reply *r)
{
	const unsigned char	*body;
	const char		*line;
	size_t			 len;
	long long		 n;
	int			 rc;

	memset(r, 0, sizeof(*r));
	if ((rc = conn_line(c, &line, &len)) <= 0)
		return rc;
	r->type = line[0];
	switch (r->type) {
	case '+':
	case '-':
		snprintf(r->text, sizeof(r->text), "%.*s",
		    (int)(len - 1 < sizeof(r->text) ? len - 1 :
		    sizeof(r->text) - 1), line + 1);
		return 1;
	case ':':
		if (line_num(line, len, &r->num) == -1)
			break;
		return 1;
	case '$':
		if (line_num(line, len, &n) == -1)
			break;
		if (n == -1)
			return 1;
		if ((rc = conn_bulk(c, n, &body)) <= 0)
			return rc;
		r->data = body;
		r->dlen = (size_t)n;
		return 1;
	case '*':
		/* BF.SCANDUMP's [iter, chunk] is the only array we ask for;
		 * CF.SCANDUMP ends with [0, nil], as RedisBloom's */
		if (line_num(line, len, &n) == -1 || n != 2)
			break;
		if ((rc = conn_line(c, &line, &len)) <= 0)
			return rc;
		if (line[0] != ':' || line_num(line, len, &r->num) == -1)
			break;
		if ((rc = conn_line(c, &line, &len)) <= 0)
			return rc;
		if (line[0] != '$' || line_num(line, len, &n) == -1)
			break;
		if (n == -1) {
			r->nil = 1;
			return 1;
		}
		if ((rc = conn_bulk(c, n, &body)) <= 0)
			return rc;
		r->data = body;
		r->dlen = (size_t)n;
		return 1;
	}
	errno = EPROTO;
	return -1;
}

/* write(2) or send(2) of an iovec until all is gone. */
static int
send_iov(int fd, struct iovec *iov, int n)
{
	struct msghdr	 msg;
	ssize_t		 w;

	while (n > 0) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)n;
		if ((w = sendmsg(fd, &msg, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * Sends a command of C strings and, if data is not NULL, a last argument
 * of dlen bytes sent from where it lies (a chunk is not copied).
 */
static int
send_command(struct rconn *c, int argc, const char *const argv[],
    const void *data, size_t dlen)
{
	struct iovec	 iov[3];
	char		*buf = NULL;
	size_t		 len = 0, cap = 0, alen;
	int		 i, n, rc;

	if (grow(&buf, &cap, 64) == -1)
		return -1;
	len = (size_t)snprintf(buf, cap, "*%d\r\n", argc + (data != NULL));
	for (i = 0; i < argc; i++) {
		alen = strlen(argv[i]);
		if (grow(&buf, &cap, len + alen + 48) == -1) {
			free(buf);
			return -1;
		}
		len += (size_t)snprintf(buf + len, cap - len, "$%zu\r\n", alen);
		memcpy(buf + len, argv[i], alen);
		memcpy(buf + len + alen, "\r\n", 2);
		len += alen + 2;
	}
	n = 1;
	if (data != NULL) {
		len += (size_t)snprintf(buf + len, cap - len, "$%zu\r\n", dlen);
		iov[1].iov_base = (void *)(uintptr_t)data;
		iov[1].iov_len = dlen;
		iov[2].iov_base = (void *)"\r\n";
		iov[2].iov_len = 2;
		n = 3;
	}
	iov[0].iov_base = buf;
	iov[0].iov_len = len;
	rc = send_iov(c->fd, iov, n);
	free(buf);
	return rc;
}

/* Says why a send or a read failed (rc as read_reply's). */
static void
conn_failed(struct job *j, struct rconn *c, int rc, const char *what)
{
	if (rc == 0)
		job_warn(j, "%s closed the connection", c->name);
	else if (errno == EPROTO)
		job_warn(j, "%s sent a reply seen-cli does not understand",
		    c->name);
	else
		job_warn(j, "%s to %s: %s", what, c->name, strerror(errno));
}

/* Sends a command and reads its reply. Returns 0, or -1 after saying
 * why (a connection failure; error replies are the caller's to judge). */
static int
call(struct job *j, struct rconn *c, int argc, const char *const argv[],
    const void *data, size_t dlen, struct reply *r)
{
	int	 rc;

	if (send_command(c, argc, argv, data, dlen) == -1) {
		conn_failed(j, c, -1, "write");
		return -1;
	}
	if ((rc = read_reply(c, r)) != 1) {
		conn_failed(j, c, rc, "read");
		return -1;
	}
	return 0;
}

/* side is "" or "source: ", "destination: ": with two servers, often
 * both on 127.0.0.1, the address alone would not tell which failed. */
static void	conn_close(struct rconn *);

static int
open_conn(struct job *j, struct rconn *c, const struct client_target *t,
    const char *token, const char *side)
{
	const char	*argv[2];
	struct reply	 r;
	char		 err[512];

	client_target_name(t, c->name, sizeof(c->name));
	if ((c->fd = client_connect(t, err, sizeof(err))) == -1) {
		job_warn(j, "%s%s", side, err);
		return -1;
	}
	if (token == NULL)
		return 0;
	argv[0] = "AUTH";
	argv[1] = token;
	if (call(j, c, 2, argv, NULL, 0, &r) == -1) {
		conn_close(c);
		return -1;
	}
	if (r.type != '+') {
		job_warn(j, "%s%s: AUTH: %s", side, c->name, r.type == '-' ?
		    r.text : "unexpected reply");
		conn_close(c);
		return -1;
	}
	return 0;
}

static void
conn_close(struct rconn *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->in);
	c->in = NULL;
}

/* ---- chunks ---- */

/* What framing needs: the magic, and a payload length that is the rest. */
static int
frame_ok(struct job *j, const unsigned char *p, size_t len, const char *from)
{
	if (len < DUMP_CHUNK_HEADER || memcmp(p, DUMP_MAGIC, 8) != 0) {
		job_warn(j, "%s: bad dump chunk: chunk %" PRIu32 " is not a "
		    "seend dump chunk", from, j->chunks);
		return -1;
	}
	if (get_le64(p + CH_LENGTH) != len - DUMP_CHUNK_HEADER) {
		job_warn(j, "%s: bad dump chunk: chunk %" PRIu32 " holds %zu "
		    "bytes of payload but says %" PRIu64, from, j->chunks,
		    len - DUMP_CHUNK_HEADER, get_le64(p + CH_LENGTH));
		return -1;
	}
	return 0;
}

/*
 * The first chunk: the count of chunks and keys, and the dump's size (the
 * progress bar's total): this chunk, the bits, and a header for each bits
 * chunk. Only the server checks the chunk, so the size is an estimate
 * until it has accepted it.
 */
static uint64_t
header_chunk(struct job *j, const unsigned char *p, size_t len)
{
	uint64_t	 bits;

	j->nchunks = get_le32(p + CH_COUNT);
	if (get_le32(p + CH_KIND) != DUMP_KIND_HEADER ||
	    get_le32(p + CH_INDEX) != 0 || len < DUMP_CHUNK_HEADER + HP_MIN ||
	    j->nchunks < 2)
		return 0;
	j->keys = get_le64(p + DUMP_CHUNK_HEADER + HP_COUNT);
	bits = get_le64(p + DUMP_CHUNK_HEADER + HP_TOTAL);
	if (bits > UINT64_MAX / 2)
		return 0;
	return len + bits + (uint64_t)(j->nchunks - 1) * DUMP_CHUNK_HEADER;
}

/* One reply to BF.SCANDUMP: 1 and a chunk, 0 at the end ([0, ""], or
 * CF.SCANDUMP's [0, nil]), -1 after saying why not. */
static int
scandump_reply(struct job *j, struct rconn *c, const struct reply *r,
    const char *side)
{
	if (r->type == '-') {
		job_warn(j, "%s%s: %s %s: %s", side, c->name,
		    dump_cmd(j, "BF.SCANDUMP"), j->filter, r->text);
		return -1;
	}
	if (r->type != '*') {
		job_warn(j, "%s%s: %s %s: unexpected reply", side,
		    c->name, dump_cmd(j, "BF.SCANDUMP"), j->filter);
		return -1;
	}
	if (r->num == 0 && r->dlen == 0) {
		if (j->chunks == 0 && j->cf && r->nil) {
			job_warn(j, "%s%s: %s %s: the cuckoo filter holds no "
			    "item: there is nothing to dump (CF.SCANDUMP "
			    "answers [0, nil], as RedisBloom's)", side,
			    c->name, dump_cmd(j, "BF.SCANDUMP"), j->filter);
			return -1;
		}
		if (j->chunks == 0 || j->chunks != j->nchunks) {
			job_warn(j, "%s%s: %s %s: the dump ended "
			    "after %" PRIu32 " of %" PRIu32 " chunks", side,
			    c->name, dump_cmd(j, "BF.SCANDUMP"), j->filter,
			    j->chunks, j->nchunks);
			return -1;
		}
		return 0;
	}
	if (r->num == 0 || frame_ok(j, r->data, r->dlen, c->name) == -1) {
		if (r->num == 0)
			job_warn(j, "%s%s: %s %s: a chunk came with "
			    "iterator 0", side, c->name, dump_cmd(j, "BF.SCANDUMP"),
			    j->filter);
		return -1;
	}
	if (j->chunks == 0)
		progress_init(&j->prog, header_chunk(j, r->data, r->dlen));
	else if (j->chunks >= j->nchunks) {
		job_warn(j, "%s%s: %s %s: more chunks than the %"
		    PRIu32 " the dump announced", side, c->name,
		    dump_cmd(j, "BF.SCANDUMP"), j->filter,
		    j->nchunks);
		return -1;
	}
	return 1;
}

static void
chunk_done(struct job *j, size_t len)
{
	j->chunks++;
	j->done += len;
	progress_update(&j->prog, j->done);
}

/* The summary line, on standard output as import's. */
static int
summary(struct job *j, const char *fmt, ...)
{
	char	 rate[32], took[32];
	double	 el;
	va_list	 ap;

	progress_finish(&j->prog);
	el = progress_elapsed(&j->prog);
	progress_fmt_count(rate, sizeof(rate), el > 0 ?
	    (double)j->done / el : 0);
	progress_fmt_duration(took, sizeof(took), el);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(": %" PRIu64 " keys, %" PRIu64 " bytes in %" PRIu32 " chunks, "
	    "in %s (%sB/s)\n", j->keys, j->done, j->chunks, took, rate);
	if (fflush(stdout) == EOF) {
		job_warn(j, "stdout: %s", strerror(errno));
		return 1;
	}
	return 0;
}

/* ---- dump ---- */

static void
on_signal(int sig)
{
	if (tmp_live)
		unlink(tmp_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
write_all(int fd, const void *p, size_t len)
{
	ssize_t	 n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p = (const char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * BF.SCANDUMP from 0 to its end, each chunk written to file.tmp as it
 * came; then fsync and rename, so that file is a whole dump or is not
 * touched. The next chunk is asked for before this one is written.
 */
static int
run_dump(struct job *j, struct rconn *c, const char *file)
{
	const char	*argv[3];
	struct reply	 r;
	char		 iter[32], err[600], *dircopy = NULL;
	int		 fd = -1, rc, status = 1;

	if (asprintf(&tmp_path, "%s.tmp", file) == -1 ||
	    (dircopy = strdup(file)) == NULL) {
		job_warn(j, "%s", strerror(errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if ((fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) == -1) {
		job_warn(j, "cannot create %s: %s", tmp_path, strerror(errno));
		goto out;
	}
	tmp_live = 1;
	argv[1] = j->filter;
	argv[2] = "0";
	if (scandump_first(j, c, argv, &r) == -1)
		goto out;
	while ((rc = scandump_reply(j, c, &r, "")) == 1) {
		/* the next one is on its way while this one is written */
		snprintf(iter, sizeof(iter), "%lld", r.num);
		argv[2] = iter;
		if (send_command(c, 3, argv, NULL, 0) == -1) {
			conn_failed(j, c, -1, "write");
			goto out;
		}
		if (write_all(fd, r.data, r.dlen) == -1) {
			job_warn(j, "write %s: %s", tmp_path, strerror(errno));
			goto out;
		}
		chunk_done(j, r.dlen);
		if ((rc = read_reply(c, &r)) != 1) {
			conn_failed(j, c, rc, "read");
			goto out;
		}
	}
	if (rc == -1)
		goto out;
	if (fsync(fd) == -1) {
		job_warn(j, "fsync %s: %s", tmp_path, strerror(errno));
		goto out;
	}
	rc = close(fd);
	fd = -1;
	if (rc == -1) {
		job_warn(j, "close %s: %s", tmp_path, strerror(errno));
		goto out;
	}
	/* past the rename the dump is there: a failure is only reported */
	tmp_live = 0;
	if (fileio_commit(tmp_path, file, dirname(dircopy), err,
	    sizeof(err)) == -1) {
		job_warn(j, "%s", err);
		goto out;
	}
	status = summary(j, "dumped filter %s from %s into %s", j->filter,
	    c->name, file);
out:
	if (fd != -1)
		close(fd);
	if (tmp_live) {
		tmp_live = 0;
		unlink(tmp_path);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	free(tmp_path);
	tmp_path = NULL;
	free(dircopy);
	return status;
}

/* ---- restore ---- */

/* read(2) until len bytes or the end of the file: the bytes read, -1. */
static ssize_t
read_full(int fd, void *buf, size_t len)
{
	size_t	 got = 0;
	ssize_t	 n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * The next chunk of the file into *buf: 1 and its length, 0 at the end of
 * the file, -1 after saying why (a read error, or bytes that do not frame
 * as a chunk).
 */
static int
read_chunk(struct job *j, int fd, const char *file, unsigned char **buf,
    size_t *cap, size_t *len)
{
	uint64_t	 plen;
	ssize_t		 n;

	if (grow((char **)buf, cap, DUMP_CHUNK_HEADER) == -1) {
		job_warn(j, "%s", strerror(errno));
		return -1;
	}
	if ((n = read_full(fd, *buf, DUMP_CHUNK_HEADER)) == -1)
		goto ioerr;
	if (n == 0)
		return 0;
	if (n < DUMP_CHUNK_HEADER) {
		job_warn(j, "%s: bad dump chunk: the file ends inside the "
		    "header of chunk %" PRIu32, file, j->chunks);
		return -1;
	}
	plen = get_le64(*buf + CH_LENGTH);
	if (memcmp(*buf, DUMP_MAGIC, 8) != 0 ||
	    plen > DUMP_CHUNK_MAX - DUMP_CHUNK_HEADER) {
		job_warn(j, "%s: bad dump chunk: chunk %" PRIu32 " is not a "
		    "seend dump chunk", file, j->chunks);
		return -1;
	}
	if (grow((char **)buf, cap, DUMP_CHUNK_HEADER + plen) == -1) {
		job_warn(j, "%s", strerror(errno));
		return -1;
	}
	if ((n = read_full(fd, *buf + DUMP_CHUNK_HEADER, plen)) == -1)
		goto ioerr;
	if ((uint64_t)n < plen) {
		job_warn(j, "%s: bad dump chunk: the file ends inside chunk %"
		    PRIu32, file, j->chunks);
		return -1;
	}
	*len = DUMP_CHUNK_HEADER + plen;
	return 1;
ioerr:
	job_warn(j, "read %s: %s", file, strerror(errno));
	return -1;
}

/*
 * After a refused chunk's reply: the server answers RedisBloom's words
 * for a chunk it will not take, and says in its log which check it
 * failed (seend(8), BF.LOADCHUNK).
 */
static const char *
refusal_hint(const char *text)
{
	static const char *const generic[] = { "ERR received bad data",
	    "Couldn't load chunk!", "Couldn't create filter!",
	    "Invalid header" };

	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
		if (strcmp(text, generic[i]) == 0)
			return " (the chunk was refused: the server's log says "
			    "why)";
	return "";
}

/* BF.LOADCHUNK of one chunk, and its reply. Returns 0, or -1 after saying
 * why (the server's reason for a refused chunk). */
static int
load_chunk(struct job *j, struct rconn *c, const char *filter,
    const void *chunk, size_t len, const char *side)
{
	const char	*argv[3];
	struct reply	 r;
	char		 iter[16];

	snprintf(iter, sizeof(iter), "%" PRIu32, j->chunks + 1);
	/* the header chunk says the type: its payload's layout (dump.h) */
	if (j->chunks == 0 && len >= DUMP_CHUNK_HEADER + 4)
		j->cf = ((const unsigned char *)chunk)[DUMP_CHUNK_HEADER] ==
		    CUCKOO_LAYOUT_PACKED4;
	argv[0] = dump_cmd(j, "BF.LOADCHUNK");
	argv[1] = filter;
	argv[2] = iter;
	if (call(j, c, 3, argv, chunk, len, &r) == -1)
		return -1;
	if (r.type == '-') {
		job_warn(j, "%s%s: %s %s (chunk %" PRIu32 "): %s%s",
		    side, c->name, dump_cmd(j, "BF.LOADCHUNK"), filter,
		    j->chunks, r.text, refusal_hint(r.text));
		return -1;
	}
	if (r.type != '+') {
		job_warn(j, "%s%s: BF.LOADCHUNK %s: unexpected reply", side,
		    c->name, filter);
		return -1;
	}
	return 0;
}

/*
 * A chunk of the file is whole and undamaged (dump_chunk_verify: its
 * checksum): said here with the reason, before the server is sent it,
 * since the server answers RedisBloom's words for a refused chunk. Its
 * place in the dump is the server's to check. 0, or -1 after saying why.
 */
static int
check_chunk(struct job *j, const char *file, const unsigned char *chunk,
    size_t len)
{
	char		 err[512];
	uint32_t	 kind;

	if (dump_chunk_verify(chunk, len, &kind, err, sizeof(err)) == -1) {
		job_warn(j, "%s: %s", file, err);
		return -1;
	}
	return 0;
}

/*
 * The file's chunks, one BF.LOADCHUNK each, until the count its header
 * chunk gives: a file that ends early, or goes on past it, is refused
 * before its last chunk is sent, so the filter never appears from it.
 */
static int
run_restore(struct job *j, const struct client_target *t, const char *token,
    const char *file)
{
	struct rconn	 c = { .fd = -1 };
	struct stat	 st;
	unsigned char	*buf = NULL, extra;
	size_t		 cap = 0, len = 0;
	uint64_t	 total;
	int		 fd, rc, status = 1;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1) {
		job_warn(j, "cannot open %s: %s", file, strerror(errno));
		return 1;
	}
	/* the first chunk before connecting: a file that is no dump at all
	 * fails without touching the server */
	if ((rc = read_chunk(j, fd, file, &buf, &cap, &len)) <= 0) {
		if (rc == 0)
			job_warn(j, "%s: bad dump chunk: the file is empty",
			    file);
		goto out;
	}
	total = header_chunk(j, buf, len);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		total = (uint64_t)st.st_size;
	if (open_conn(j, &c, t, token, "") == -1)
		goto out;
	progress_init(&j->prog, total);
	for (;;) {
		if (j->chunks + 1 == j->nchunks) {
			if ((rc = (int)read_full(fd, &extra, 1)) == -1) {
				job_warn(j, "read %s: %s", file,
				    strerror(errno));
				goto out;
			}
			if (rc == 1) {
				job_warn(j, "%s: bad dump chunk: the file goes "
				    "on after the last chunk (%" PRIu32 ")",
				    file, j->nchunks - 1);
				goto out;
			}
		}
		if (check_chunk(j, file, buf, len) == -1 ||
		    load_chunk(j, &c, j->filter, buf, len, "") == -1)
			goto out;
		chunk_done(j, len);
		if (j->chunks == j->nchunks)
			break;
		if ((rc = read_chunk(j, fd, file, &buf, &cap, &len)) <= 0) {
			if (rc == 0)
				job_warn(j, "%s: bad dump chunk: the file "
				    "ends after %" PRIu32 " of %" PRIu32
				    " chunks", file, j->chunks, j->nchunks);
			goto out;
		}
	}
	status = summary(j, "restored filter %s on %s from %s", j->filter,
	    c.name, file);
out:
	close(fd);
	conn_close(&c);
	free(buf);
	return status;
}

/* ---- dump and restore ---- */

static void
dump_usage(FILE *fp, const char *verb)
{
	fprintf(fp, "usage: seen-cli [-h host] [-p port] [-s socket] "
	    "[-a token] %s FILTER FILE\n", verb);
}

int
cli_dump(const struct client_target *target, const char *token,
    const char *name, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",	no_argument,		NULL, 'H' },
		{ NULL,		0,			NULL, 0 },
	};
	struct job	 j;
	struct rconn	 c = { .fd = -1 };
	int		 ch, status;

	(void)name;
	memset(&j, 0, sizeof(j));
	j.verb = strcmp(argv[0], "restore") == 0 ? "restore" : "dump";
	progress_init(&j.prog, 0);
	optind = 0;	/* glibc: start over, on argv[1] */
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			dump_usage(stdout, j.verb);
			return 0;
		default:
			dump_usage(stderr, j.verb);
			return 2;
		}
	}
	if (argc - optind != 2) {
		dump_usage(stderr, j.verb);
		return 2;
	}
	j.filter = argv[optind];
	if (check_name(&j, j.filter) == -1)
		return 2;
	if (argv[optind + 1][0] == '\0') {
		job_warn(&j, "%s", "the file name is empty");
		return 2;
	}
	if (strcmp(j.verb, "restore") == 0)
		return run_restore(&j, target, token, argv[optind + 1]);
	if (open_conn(&j, &c, target, token, "") == -1)
		return 1;
	status = run_dump(&j, &c, argv[optind + 1]);
	conn_close(&c);
	return status;
}

/* ---- copy ---- */

static int
all_digits(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/*
 * "host:port/filter", "[v6addr]:port/filter" (":port" may be left out)
 * or "/path/to/socket/filter": split at the last '/'. A server part with
 * a '/' in it, or naming a socket that exists, is a socket's path.
 */
static int
parse_endpoint(struct job *j, char *s, struct client_target *t,
    const char **filter)
{
	char		*slash = strrchr(s, '/'), *colon, *arg = s;
	struct stat	 st;

	memset(t, 0, sizeof(*t));
	t->port = SEEN_DEFAULT_PORT;
	if (slash == NULL || slash == s) {
		job_warn(j, "%s: give a server and a filter: host:port/FILTER, "
		    "[v6addr]:port/FILTER or /path/to/socket/FILTER", arg);
		return -1;
	}
	*slash = '\0';
	*filter = slash + 1;
	if (check_name(j, *filter) == -1)
		return -1;
	if (strchr(s, '/') != NULL ||
	    (stat(s, &st) == 0 && S_ISSOCK(st.st_mode))) {
		t->path = s;
		return 0;
	}
	if (*s == '[') {
		if ((colon = strchr(s, ']')) == NULL) {
			job_warn(j, "%s: unclosed [", s);
			return -1;
		}
		*colon++ = '\0';
		t->host = s + 1;
		if (*colon == ':')
			t->port = colon + 1;
		else if (*colon != '\0') {
			job_warn(j, "%s]%s: junk after ]", s, colon);
			return -1;
		}
	} else {
		t->host = s;
		if ((colon = strrchr(s, ':')) != NULL) {
			if (strchr(s, ':') != colon) {
				job_warn(j, "%s: write an IPv6 address in "
				    "brackets: [addr]:port", s);
				return -1;
			}
			*colon = '\0';
			t->port = colon + 1;
		}
	}
	if (*t->host == '\0' || !all_digits(t->port)) {
		job_warn(j, "%s: bad host or port", arg);
		return -1;
	}
	return 0;
}

static void
copy_usage(FILE *fp)
{
	fprintf(fp, "usage: seen-cli [-a token] copy SOURCE/FILTER "
	    "DEST/FILTER [--merge]\n"
	    "       SOURCE, DEST: host:port, [v6addr]:port or a socket "
	    "path\n"
	    "       --merge: add the keys to DEST's filter (made if "
	    "missing)\n");
}

/*
 * --merge: where the chunks go first, a name of the destination's own
 * ("<filter>.merge.<pid>", the filter's name cut short to fit the 64
 * bytes of a name), the MERGE into the filter, and the temporary's DEL.
 */
struct merge_into {
	const struct client_target	*target;	/* to reconnect for DEL */
	const char			*token;
	char				 tmp[80];
};

static void
merge_tmp_name(struct merge_into *mi, const char *to)
{
	char	 suffix[32];
	size_t	 keep = strlen(to), room;

	snprintf(suffix, sizeof(suffix), ".merge.%ld", (long)getpid());
	room = 64 - strlen(suffix);
	if (keep > room)
		keep = room;
	snprintf(mi->tmp, sizeof(mi->tmp), "%.*s%s", (int)keep, to, suffix);
}

/*
 * DEL of the temporary filter, best effort: on the connection if it still
 * answers, or else on a new one; says so if it stays behind.
 */
static void
drop_tmp(struct job *j, struct rconn *dst, const struct merge_into *mi)
{
	const char	*argv[2];
	struct rconn	 again = { .fd = -1 };
	struct reply	 r;
	int		 rc;

	argv[0] = "DEL";
	argv[1] = mi->tmp;
	if (dst->fd != -1 && send_command(dst, 2, argv, NULL, 0) == 0 &&
	    read_reply(dst, &r) == 1 && r.type == ':')
		return;
	if (open_conn(j, &again, mi->target, mi->token, "destination: ")
	    == 0) {
		rc = call(j, &again, 2, argv, NULL, 0, &r);
		conn_close(&again);
		if (rc == 0 && r.type == ':')
			return;
	}
	job_warn(j, "destination: the temporary filter %s may be left on %s: "
	    "DEL it", mi->tmp, dst->name);
}

/* MERGE to tmp on the destination: 0 once the server answered +OK (the
 * merge is durable), -1 after saying why. */
static int
merge_tmp(struct job *j, struct rconn *dst, const char *to,
    const struct merge_into *mi)
{
	const char	*argv[3];
	struct reply	 r;

	argv[0] = "MERGE";
	argv[1] = to;
	argv[2] = mi->tmp;
	if (call(j, dst, 3, argv, NULL, 0, &r) == -1)
		return -1;
	if (r.type != '+') {
		job_warn(j, "destination: %s: MERGE %s %s: %s", dst->name, to,
		    mi->tmp, r.type == '-' ? r.text : "unexpected reply");
		return -1;
	}
	return 0;
}

/*
 * BF.SCANDUMP from the source, each chunk sent on as BF.LOADCHUNK to the
 * destination as it arrives; the source is asked for the next chunk
 * before the destination gets this one. With mi (--merge) the chunks
 * make mi->tmp, which is then MERGEd into to and dropped, on every path
 * once it may exist (its last chunk sent); a load that stops short of
 * that is dropped by the server when the connection closes.
 */
static int
run_copy(struct job *j, struct rconn *src, struct rconn *dst,
    const char *to, struct merge_into *mi)
{
	const char	*argv[3];
	struct reply	 r;
	char		 iter[32];
	int		 rc, last = 0, status = 1;

	argv[1] = j->filter;
	argv[2] = "0";
	if (scandump_first(j, src, argv, &r) == -1)
		return 1;
	while ((rc = scandump_reply(j, src, &r, "source: ")) == 1) {
		snprintf(iter, sizeof(iter), "%lld", r.num);
		argv[2] = iter;
		if (send_command(src, 3, argv, NULL, 0) == -1) {
			conn_failed(j, src, -1, "write");
			goto out;
		}
		/* r.data stays in src's buffer until src is read again */
		last |= j->chunks + 1 == j->nchunks;
		if (load_chunk(j, dst, mi != NULL ? mi->tmp : to, r.data,
		    r.dlen, "destination: ") == -1)
			goto out;
		chunk_done(j, r.dlen);
		if ((rc = read_reply(src, &r)) != 1) {
			conn_failed(j, src, rc, "read");
			goto out;
		}
	}
	if (rc == -1)
		goto out;
	if (mi == NULL)
		return summary(j, "copied filter %s from %s to filter %s on %s",
		    j->filter, src->name, to, dst->name);
	if (merge_tmp(j, dst, to, mi) == -1)
		goto out;
	status = 0;
out:
	/* the temporary may exist once its last chunk was sent (a load
	 * stopped short of it is not there to drop) */
	if (mi != NULL && last)
		drop_tmp(j, dst, mi);
	if (status == 0)
		status = summary(j, "merged filter %s from %s into filter %s "
		    "on %s", j->filter, src->name, to, dst->name);
	return status;
}

int
cli_copy(const char *token, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "merge",	no_argument,		NULL, 'M' },
		{ "help",	no_argument,		NULL, 'H' },
		{ NULL,		0,			NULL, 0 },
	};
	struct client_target	 from, to;
	struct rconn		 src = { .fd = -1 }, dst = { .fd = -1 };
	struct merge_into	 mi;
	struct job		 j;
	const char		*to_filter = NULL;
	int			 ch, merge = 0, status = 1;

	memset(&j, 0, sizeof(j));
	memset(&mi, 0, sizeof(mi));
	j.verb = "copy";
	progress_init(&j.prog, 0);
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'M':
			merge = 1;
			break;
		case 'H':
			copy_usage(stdout);
			return 0;
		default:
			copy_usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		copy_usage(stderr);
		return 2;
	}
	if (parse_endpoint(&j, argv[optind], &from, &j.filter) == -1 ||
	    parse_endpoint(&j, argv[optind + 1], &to, &to_filter) == -1)
		return 2;
	if (merge) {
		mi.target = &to;
		mi.token = token;
		merge_tmp_name(&mi, to_filter);
		if (check_name(&j, mi.tmp) == -1)
			return 2;
	}
	if (open_conn(&j, &src, &from, token, "source: ") == 0 &&
	    open_conn(&j, &dst, &to, token, "destination: ") == 0)
		status = run_copy(&j, &src, &dst, to_filter,
		    merge ? &mi : NULL);
	conn_close(&src);
	conn_close(&dst);
	return status;
}
