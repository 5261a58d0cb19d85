/*
 * cli_plan.h - "seen-cli plan": what a filter of given settings costs, from
 * the daemon's own sizing code (filter_plan_for), before it exists.
 */
#ifndef SEEND_CLI_PLAN_H
#define SEEND_CLI_PLAN_H

/*
 * Runs "plan CAPACITY ERROR_RATE [--growth G|off] [--expire T]" (argv[0]
 * is "plan"): prints memory, slices, bits per key, hashes and the
 * false-positive rate at 1x, 2x, 10x and 100x capacity. Returns the exit
 * status: 0, or 2 for a usage error.
 */
int	cli_plan(int argc, char **argv);

#endif
