/*
 * cli_plan.c - "seen-cli plan"; see cli_plan.h.
 *
 * The figures are the plan seend itself follows (filter_plan_for, the same
 * sizing as a running filter's slices), for keys arriving as a steady
 * stream: with an expire window, capacity is keys per window and the memory
 * shown is that of the nine periods alive at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_plan.h"
#include "config.h"
#include "filter.h"

static const char *
human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double	 v = (double)b;
	int	 u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

static int
plan_usage(const char *why)
{
	fprintf(stderr, "seen-cli: plan: %s\nusage: seen-cli plan CAPACITY "
	    "ERROR_RATE [--growth G|off] [--expire DURATION]\n", why);
	return 2;
}

int
cli_plan(int argc, char **argv)
{
	static const unsigned mults[] = { 1, 2, 10, 100 };
	struct filter_plan	 p;
	uint64_t		 capacity, expire = 0, g;
	unsigned		 growth = 2;
	double			 rate;
	char			*end, mem[32];

	if (argc < 3)
		return plan_usage("needs CAPACITY and ERROR_RATE");
	if (config_parse_count(argv[1], &capacity) == -1 || capacity == 0)
		return plan_usage("CAPACITY: a positive integer, optionally "
		    "with k, M, G or T");
	rate = strtod(argv[2], &end);
	if (*end != '\0' || !(rate > 0 && rate < 1))
		return plan_usage("ERROR_RATE: a fraction such as 0.001");
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--growth") == 0 && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "off") == 0)
				growth = 0;
			else if (config_parse_count(argv[i], &g) == -1 ||
			    g < 1 || g > 16)
				return plan_usage("--growth: 1 to 16, or off");
			else
				growth = (unsigned)g;
		} else if (strcmp(argv[i], "--expire") == 0 && i + 1 < argc) {
			i++;
			if (config_parse_duration(argv[i], &expire) == -1 ||
			    expire == 0)
				return plan_usage("--expire: seconds, or a "
				    "number with s, m, h or d");
		} else
			return plan_usage("unknown option");
	}
	{
		char gtext[16], etext[32];

		if (growth)
			snprintf(gtext, sizeof(gtext), "%u", growth);
		else
			snprintf(gtext, sizeof(gtext), "off");
		if (expire)
			snprintf(etext, sizeof(etext), "%llu s",
			    (unsigned long long)expire);
		else
			snprintf(etext, sizeof(etext), "never");
		printf("capacity %llu%s, error_rate %g, growth %s, expire %s\n",
		    (unsigned long long)capacity, expire ? " per window" : "",
		    rate, gtext, etext);
	}
	printf("%-22s %7s %12s %9s %7s %12s\n", "keys", "slices", "memory",
	    "bits/key", "hashes", "fp rate");
	for (size_t i = 0; i < sizeof(mults) / sizeof(mults[0]); i++) {
		uint64_t	 keys = capacity * mults[i];
		char		 what[40];

		snprintf(what, sizeof(what), "%llu (%ux)",
		    (unsigned long long)keys, mults[i]);
		if (growth == 0 && mults[i] > 1) {
			printf("%-22s %7s %12s %9s %7s %12s\n", what, "-", "-",
			    "-", "-", "refused");
			continue;
		}
		if (filter_plan_for(capacity, rate, growth,
		    (int64_t)expire * 1000, keys, &p) == -1) {
			printf("%-22s cannot be planned (over 1 TiB a slice)\n",
			    what);
			continue;
		}
		printf("%-22s %7zu %12s %9.2f %7u %12.3g\n", what, p.slices,
		    human_bytes(p.bytes, mem, sizeof(mem)), p.bits_per_key,
		    p.hashes, p.fp_rate);
	}
	if (growth == 0)
		printf("growth off: keys past capacity are refused with "
		    "\"ERR full <filter>\"\n");
	return 0;
}
