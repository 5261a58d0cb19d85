/*
 * cli_cluster.c - seen-cli cluster <verb>; see cli_cluster.h. (Being
 * written.)
 */
#include <stdio.h>

#include "cli_cluster.h"

int
cli_cluster(const struct client_target *defaults, const char *token,
    int argc, char **argv)
{
	(void)defaults;
	(void)token;
	(void)argc;
	(void)argv;
	fprintf(stderr, "seen-cli: cluster: not yet\n");
	return 2;
}
