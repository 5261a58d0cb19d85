/*
 * bench_util.h - what every benchmark program here needs: a clock and
 * whether the kernel gave its big mapping transparent huge pages.
 */
#ifndef SEEND_BENCH_UTIL_H
#define SEEND_BENCH_UTIL_H

#include <stdio.h>
#include <time.h>

/* Seconds on clock id (CLOCK_MONOTONIC, or a CPU-time clock). */
static inline double
bench_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double
now(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

/* This process's anonymous memory in transparent huge pages, in MiB, or
 * -1 if /proc does not tell. */
static inline long
thp_mib(void)
{
	char	 line[256];
	long	 kb = -1;
	FILE	*f = fopen("/proc/self/smaps_rollup", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

#endif
