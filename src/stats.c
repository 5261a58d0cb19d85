/*
 * stats.c - what the process itself measures: its resident set size, the
 * memory malloc holds, and the commands' rate as INFO reports it.
 */
#include <malloc.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"

size_t
stats_rss_bytes(void)
{
	FILE		*fp = fopen("/proc/self/statm", "r");
	unsigned long	 size, res = 0;

	if (fp == NULL)
		return 0;
	if (fscanf(fp, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(fp);
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* What malloc has handed out and not had back, all arenas and its own
 * mmapped chunks; 0 where the C library cannot say. */
static size_t
heap_bytes(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || \
    (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

size_t
stats_used_memory(struct stats *st, uint64_t mapped)
{
	size_t used = heap_bytes() + (size_t)mapped;

	if (used > st->mem_peak)
		st->mem_peak = used;
	return used;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One sample: the growth of reading since the last one, per second. */
static void
rate_track(struct stats_rate *r, uint64_t reading)
{
	int64_t		now = now_ms(), t = now - r->last_ms;

	/* the first sample has nothing to grow from */
	r->samples[r->idx] = r->last_ms != 0 && t > 0 ?
	    (long long)((reading - r->last_count) * 1000 / (uint64_t)t) : 0;
	r->idx = (r->idx + 1) % STATS_RATE_SAMPLES;
	r->last_ms = now;
	r->last_count = reading;
}

long long
stats_rate(const struct stats_rate *r)
{
	long long sum = 0;

	for (int i = 0; i < STATS_RATE_SAMPLES; i++)
		sum += r->samples[i];
	return sum / STATS_RATE_SAMPLES;
}

void
stats_tick(struct stats *st, uint64_t mapped)
{
	rate_track(&st->ops_rate, st->commands);
	(void)stats_used_memory(st, mapped);
}
