/*
 * stats.c - what the process itself measures: its resident set size.
 */
#include <stdio.h>
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
