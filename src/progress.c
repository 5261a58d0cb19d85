/*
 * progress.c - the progress bar of long seen-cli runs; see progress.h.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

/* Redraws at most this often: a bar redrawn for every batch would cost
 * more terminal output than the work it reports. */
#define REDRAW_INTERVAL	0.2
#define BAR_CELLS	24

static double
now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
progress_init(struct progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->fp = stderr;
	p->tty = isatty(fileno(stderr));
	p->total = total;
	p->start = p->last = now();
}

double
progress_elapsed(const struct progress *p)
{
	return now() - p->start;
}

void
progress_fmt_count(char *buf, size_t len, double n)
{
	if (n < 1000)
		snprintf(buf, len, "%.0f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.*fk", n < 1e4 ? 1 : 0, n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.*fM", n < 1e7 ? 2 : 1, n / 1e6);
	else
		snprintf(buf, len, "%.2fG", n / 1e9);
}

void
progress_fmt_duration(char *buf, size_t len, double s)
{
	long	 t;

	if (s < 0)
		s = 0;
	if (s < 60) {
		snprintf(buf, len, "%.1f s", s);
		return;
	}
	t = (long)(s + 0.5);
	if (t < 3600)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%ldh%02ldm", t / 3600, t % 3600 / 60);
}

static void
draw(struct progress *p, double t)
{
	char		 line[160], rate[32], left[32];
	uint64_t	 total = p->total > p->done ? p->total : p->done;
	double		 el = t - p->start, r, frac;
	size_t		 cells, n, i;
	int		 w;

	r = el > 0 ? (double)p->done / el : 0;
	progress_fmt_count(rate, sizeof(rate), r);
	frac = total > 0 ? (double)p->done / (double)total : 0;
	if (r > 0 && total > p->done)
		progress_fmt_duration(left, sizeof(left),
		    (double)(total - p->done) / r);
	else if (total > 0 && p->done >= total)
		snprintf(left, sizeof(left), "0 s");
	else
		snprintf(left, sizeof(left), "?");
	cells = (size_t)(frac * BAR_CELLS);
	w = snprintf(line, sizeof(line), "%llu/%llu %3.0f%% [",
	    (unsigned long long)p->done, (unsigned long long)total,
	    frac * 100);
	n = (size_t)w;
	for (i = 0; i < BAR_CELLS && n < sizeof(line) - 1; i++)
		line[n++] = i < cells ? '#' : '.';
	line[n] = '\0';
	snprintf(line + n, sizeof(line) - n, "] %s/s, %s left", rate, left);
	n = strlen(line);
	/* pad over what a longer previous bar left behind */
	fprintf(p->fp, "\r%s%*s", line, p->width > n ? (int)(p->width - n) : 0,
	    "");
	fflush(p->fp);
	p->width = n;
	p->drawn = 1;
	p->last = t;
}

void
progress_update(struct progress *p, uint64_t done)
{
	double	 t;

	p->done = done;
	if (!p->tty)
		return;
	t = now();
	if (p->drawn && t - p->last < REDRAW_INTERVAL)
		return;
	draw(p, t);
}

void
progress_finish(struct progress *p)
{
	if (!p->tty || !p->drawn)
		return;
	draw(p, now());
	fputc('\n', p->fp);
	fflush(p->fp);
	p->drawn = 0;
}

void
progress_clear(struct progress *p)
{
	if (!p->tty || !p->drawn)
		return;
	fprintf(p->fp, "\r%*s\r", (int)p->width, "");
	fflush(p->fp);
	p->drawn = 0;
}
