/*
 * cli_stat.h - "seen-cli stat": one line of live figures per interval, as
 * redis-cli --stat prints.
 */
#ifndef SEEND_CLI_STAT_H
#define SEEND_CLI_STAT_H

struct client_target;

/*
 * Runs "stat [-i SECONDS] [-n COUNT]" (argv[0] is "stat") against target,
 * sending AUTH token first if it is not NULL; name is the target for
 * messages. Returns the exit status: 0, 1 if the server failed us, 2 for
 * a usage error.
 */
int	cli_stat(const struct client_target *target, const char *token,
	    const char *name, int argc, char **argv);

#endif
