/*
 * cli_stat.c - "seen-cli stat": one line a second of live figures.
 *
 * Each sample is FILTERS, then INFO of each filter (for the worst fill),
 * then INFO last, so that the server's command count includes every
 * request of the sample and our own polling can be taken out of ops/s.
 * Rates are over the time between two samples, measured, not assumed.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_stat.h"
#include "client.h"

#define STAT_HEADER_EVERY	20	/* lines, as redis-cli --stat */
#define STAT_BATCH		256	/* INFO requests written at once */
#define STAT_MIN_INTERVAL	0.05
#define STAT_MAX_INTERVAL	86400.0

struct stat_sample {
	double		 when;		/* monotonic seconds */
	uint64_t	 commands;	/* commands_total */
	uint64_t	 keys_new, keys_seen;
	uint64_t	 conns;		/* connections_current */
	uint64_t	 rss;		/* rss_bytes */
	uint64_t	 keys;		/* count over every filter */
	double		 worst_fill;
	char		 worst[72];	/* its filter, "-" if none */
	uint64_t	 sent;		/* requests this sample made */
};

struct stat_conn {
	int			 fd;
	struct client_reader	 rd;
	const char		*name;
};

static double
now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
stat_warn(const char *name, const char *what)
{
	fprintf(stderr, "seen-cli: %s: %s\n", name, what);
}

/* The next reply line; -1 after saying why if there is none. */
static int
next_line(struct stat_conn *sc, char **line)
{
	size_t	len;
	int	rc = client_reader_line(&sc->rd, line, &len);

	if (rc == 1) {
		if (strncmp(*line, "ERR ", 4) == 0) {
			stat_warn(sc->name, *line);
			return -1;
		}
		return 0;
	}
	stat_warn(sc->name, rc == 0 ? "the server closed the connection" :
	    strerror(errno));
	return -1;
}

/* "field value" -> value, if line's field is name. */
static const char *
field(const char *line, const char *name)
{
	size_t n = strlen(name);

	return strncmp(line, name, n) == 0 && line[n] == ' ' ? line + n + 1 :
	    NULL;
}

static uint64_t
u64(const char *v)
{
	return strtoull(v, NULL, 10);
}

/* Reads one filter's INFO up to END into s. */
static int
read_filter_info(struct stat_conn *sc, struct stat_sample *s)
{
	char		*line, name[72] = "?";
	const char	*v;
	double		 fill = -1;

	for (;;) {
		if (next_line(sc, &line) == -1)
			return -1;
		if (strcmp(line, "END") == 0)
			break;
		if ((v = field(line, "name")) != NULL)
			snprintf(name, sizeof(name), "%s", v);
		else if ((v = field(line, "count")) != NULL)
			s->keys += u64(v);
		else if ((v = field(line, "fill_ratio")) != NULL)
			fill = strtod(v, NULL);
	}
	if (fill > s->worst_fill) {
		s->worst_fill = fill;
		snprintf(s->worst, sizeof(s->worst), "%s", name);
	}
	return 0;
}

/* FILTERS: the names, one per line up to END, into a list. */
static int
read_filter_names(struct stat_conn *sc, char ***names, size_t *n)
{
	char	*line, **grown;
	size_t	 cap = 0;

	*names = NULL;
	*n = 0;
	for (;;) {
		if (next_line(sc, &line) == -1)
			return -1;
		if (strcmp(line, "END") == 0)
			return 0;
		line[strcspn(line, " ")] = '\0';
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((grown = realloc(*names, cap * sizeof(**names))) ==
			    NULL)
				return -1;
			*names = grown;
		}
		if (((*names)[*n] = strdup(line)) == NULL)
			return -1;
		(*n)++;
	}
}

static void
free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int
send_text(struct stat_conn *sc, const char *text, size_t len)
{
	if (client_write_all(sc->fd, text, len) == 0)
		return 0;
	stat_warn(sc->name, strerror(errno));
	return -1;
}

/* The per-filter INFOs, STAT_BATCH at a time: a few round trips however
 * many filters, and never more unread replies than the server buffers. */
static int
sample_filters(struct stat_conn *sc, struct stat_sample *s, char **names,
    size_t n)
{
	char	*req = NULL;
	size_t	 cap = 0;
	int	 rc = 0;

	for (size_t i = 0; i < n && rc == 0; i += STAT_BATCH) {
		size_t end = i + STAT_BATCH < n ? i + STAT_BATCH : n, len = 0;

		for (size_t j = i; j < end; j++) {
			size_t need = len + strlen(names[j]) + 7;

			if (need > cap) {
				char *grown = realloc(req, need * 2);

				if (grown == NULL) {
					free(req);
					return -1;
				}
				req = grown;
				cap = need * 2;
			}
			len += (size_t)sprintf(req + len, "INFO %s\n",
			    names[j]);
		}
		if ((rc = send_text(sc, req, len)) == 0)
			for (size_t j = i; j < end && rc == 0; j++)
				rc = read_filter_info(sc, s);
		s->sent += end - i;
	}
	free(req);
	return rc;
}

static int
take_sample(struct stat_conn *sc, struct stat_sample *s)
{
	char		**names, *line;
	const char	 *v;
	size_t		  n;
	int		  rc;

	memset(s, 0, sizeof(*s));
	s->worst_fill = -1;
	snprintf(s->worst, sizeof(s->worst), "-");
	if (send_text(sc, "FILTERS\n", 8) == -1)
		return -1;
	rc = read_filter_names(sc, &names, &n);
	s->sent = 1;
	if (rc == 0)
		rc = sample_filters(sc, s, names, n);
	free_names(names, n);
	if (rc == -1 || send_text(sc, "INFO\n", 5) == -1)
		return -1;
	s->sent++;
	for (;;) {
		if (next_line(sc, &line) == -1)
			return -1;
		if (strcmp(line, "END") == 0)
			break;
		if ((v = field(line, "commands_total")) != NULL)
			s->commands = u64(v);
		else if ((v = field(line, "keys_new")) != NULL)
			s->keys_new = u64(v);
		else if ((v = field(line, "keys_seen")) != NULL)
			s->keys_seen = u64(v);
		else if ((v = field(line, "connections_current")) != NULL)
			s->conns = u64(v);
		else if ((v = field(line, "rss_bytes")) != NULL)
			s->rss = u64(v);
	}
	s->when = now_secs();
	return 0;
}

/* 1536 -> "1.5K": what a terminal column holds. */
static const char *
human(char *out, size_t len, double v)
{
	static const char units[] = "BKMGTP";
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%.0f%c", v, units[u]);
	else
		snprintf(out, len, "%.1f%c", v, units[u]);
	return out;
}

static void
print_header(void)
{
	printf("%12s %10s %10s %6s %8s %9s %7s  %s\n", "keys", "ops/s",
	    "new/s", "new%", "clients", "memory", "fill", "filter");
}

static void
print_line(const struct stat_sample *a, const struct stat_sample *b)
{
	double		dt = b->when - a->when;
	uint64_t	ops = b->commands - a->commands;
	uint64_t	nnew = b->keys_new - a->keys_new;
	uint64_t	seen = nnew + (b->keys_seen - a->keys_seen);
	char		mem[16], pct[16], fill[16];

	/* our own requests are not traffic */
	ops = ops > b->sent ? ops - b->sent : 0;
	if (dt <= 0)
		dt = 1e-9;
	if (seen > 0)
		snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * (double)nnew /
		    (double)seen);
	else
		snprintf(pct, sizeof(pct), "-");
	if (b->worst_fill >= 0)
		snprintf(fill, sizeof(fill), "%.4f", b->worst_fill);
	else
		snprintf(fill, sizeof(fill), "-");
	printf("%12llu %10.0f %10.0f %6s %8llu %9s %7s  %s\n",
	    (unsigned long long)b->keys, (double)ops / dt, (double)nnew / dt,
	    pct, (unsigned long long)(b->conns > 0 ? b->conns - 1 : 0),
	    human(mem, sizeof(mem), (double)b->rss), fill, b->worst);
	fflush(stdout);
}

/* Sleeps until deadline (monotonic seconds). */
static void
sleep_until(double deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)deadline;
	ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
}

static void
stat_usage(FILE *fp)
{
	fprintf(fp, "usage: seen-cli [-h host] [-p port] [-s socket] "
	    "[-a token] stat [-i seconds] [-n count]\n"
	    "  -i seconds   between lines (default 1; fractions allowed)\n"
	    "  -n count     stop after this many lines (default: never)\n");
}

int
cli_stat(const struct client_target *target, const char *token,
    const char *name, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval",	required_argument,	NULL, 'i' },
		{ "count",	required_argument,	NULL, 'n' },
		{ NULL,		0,			NULL, 0 },
	};
	struct stat_conn	 sc = { .fd = -1, .name = name };
	struct stat_sample	 prev, cur;
	double			 interval = 1, next;
	unsigned long long	 count = 0, lines = 0;
	char			 err[512], *end;
	int			 ch, status = 1;

	optind = 0;	/* glibc: start over, on argv[1] */
	while ((ch = getopt_long(argc, argv, "+i:n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			errno = 0;
			interval = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    !isfinite(interval) ||
			    interval < STAT_MIN_INTERVAL ||
			    interval > STAT_MAX_INTERVAL) {
				fprintf(stderr, "seen-cli: stat -i %s: not a "
				    "number of seconds from %g to %g\n",
				    optarg, STAT_MIN_INTERVAL,
				    STAT_MAX_INTERVAL);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			count = strtoull(optarg, &end, 10);
			if (*optarg < '1' || *optarg > '9' || *end != '\0' ||
			    errno != 0) {
				fprintf(stderr, "seen-cli: stat -n %s: not a "
				    "positive number of lines\n", optarg);
				return 2;
			}
			break;
		default:
			stat_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		stat_usage(stderr);
		return 2;
	}
	if ((sc.fd = client_connect(target, err, sizeof(err))) == -1) {
		fprintf(stderr, "seen-cli: %s\n", err);
		return 1;
	}
	if (client_reader_init(&sc.rd, sc.fd, 65536) == -1)
		goto out;
	if (token != NULL && client_auth(sc.fd, &sc.rd, token, err,
	    sizeof(err)) == -1) {
		stat_warn(name, err);
		goto out;
	}
	if (take_sample(&sc, &prev) == -1)
		goto out;
	next = prev.when;
	for (;;) {
		next += interval;
		sleep_until(next);
		if (take_sample(&sc, &cur) == -1)
			goto out;
		if (lines++ % STAT_HEADER_EVERY == 0)
			print_header();
		print_line(&prev, &cur);
		prev = cur;
		if (count != 0 && lines >= count)
			break;
	}
	status = 0;
out:
	client_reader_free(&sc.rd);
	close(sc.fd);
	return status;
}
