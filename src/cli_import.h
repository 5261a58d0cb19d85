/*
 * cli_import.h - "seen-cli import": copies a Redis set (a Scrapy-Redis
 * "<spider>:dupefilter" set of fingerprints) from a real redis-server into
 * a seend filter.
 */
#ifndef SEEND_CLI_IMPORT_H
#define SEEND_CLI_IMPORT_H

struct client_target;

/*
 * Runs "import redis://[[user]:password@]host[:port][/db] KEY
 * [--filter NAME]" (argv[0] is "import") against the seend at target,
 * sending AUTH token first if it is not NULL; name is the target for
 * messages. Returns the exit status: 0, 1 if either server failed us, 2
 * for a usage error.
 */
int	cli_import(const struct client_target *target, const char *token,
	    const char *name, int argc, char **argv);

#endif
