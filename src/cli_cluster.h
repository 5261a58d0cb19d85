/*
 * cli_cluster.h - seen-cli cluster <verb>: a cluster's topology, as
 * redis-cli --cluster changes and checks it (issue 33).
 */
#ifndef SEEND_CLI_CLUSTER_H
#define SEEND_CLI_CLUSTER_H

struct client_target;

/* argv[0] is "cluster"; returns the exit status. */
int	cli_cluster(const struct client_target *defaults, const char *token,
	    int argc, char **argv);

#endif
