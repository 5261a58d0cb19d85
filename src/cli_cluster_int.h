/*
 * cli_cluster_int.h - what the files of seen-cli cluster share.
 *
 * Top to bottom, each calling only the files below it: the verbs that
 * change a cluster (cli_cluster_create.c, cli_cluster_node.c for add-node
 * and del-node, cli_cluster_fix.c, cli_cluster_move.c for reshard and
 * rebalance, cli_cluster_reset.c); cli_cluster.c, the arguments and the
 * dispatch, which reaches the verbs only through its table; then
 * cli_cluster_view.c, the maps, pushing one, and a cluster as one node
 * describes it; and cli_cluster_conn.c, RESP to one node.
 *
 * Nothing else includes it: cli_cluster.h is the interface.
 */
#ifndef SEEND_CLI_CLUSTER_INT_H
#define SEEND_CLI_CLUSTER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cluster_map.h"

struct client_target;

/* One run of a verb: how to reach and authenticate to each node. */
struct cl {
	const struct client_target	*defaults;	/* TLS options */
	const char			*token;
	int				 yes;	/* no question asked */
};

/* A RESP connection, read through a buffer. */
struct rconn {
	int		 fd;
	char		*in;
	size_t		 start, end, cap;
};

/* A reply: '+', '-' and '$' in str (NUL-terminated, malloc'd; NULL for a
 * nil bulk), ':' in num; an array is read and dropped ('*'). */
struct reply {
	char		 type;
	char		*str;
	size_t		 len;
	long long	 num;
};

/* A node as this run sees it. */
struct cnode {
	char		 host[256];
	char		 port[8];	/* the port connected to */
	char		 name[300];	/* "host:port", for messages */
	struct rconn	 c;		/* fd -1: not connected */
	int		 up;		/* answered MYID */
	char		 err[512];	/* why not, when !up */
	char		 id[CLUSTER_ID_LEN + 1];
	int		 has_map;
	struct cluster_map map;		/* when has_map */
};

/* A cluster as one node (the entry) describes it. */
struct view {
	struct cnode	 entry;
	struct cluster_map map;		/* the entry's, or its implicit one */
	int		 implicit;	/* a cluster of one without a map */
	struct cnode	*nodes;		/* one per map.nodes[] */
};

/* The verbs' options; each verb takes the ones that are its own. */
enum {
	OPT_REPLICAS = 0x200, OPT_REPLICA_OF, OPT_YES, OPT_FROM, OPT_TO,
	OPT_SLOTS, OPT_WEIGHT, OPT_USE_EMPTY, OPT_THRESHOLD, OPT_SIMULATE,
	OPT_TIMEOUT, OPT_PIPELINE
};

/* The verbs' arguments once options are taken out (argv[0] is the verb). */
struct args {
	int		 n;
	char		*pos[CLUSTER_MAP_MAX_NODES];
	long		 replicas;
	const char	*replica_of;
	const char	*from, *to;
	long		 slots;
	/* rebalance's */
	struct {
		char	 id[CLUSTER_ID_LEN + 1];
		double	 w;
	}		 weights[CLUSTER_MAP_MAX_NODES];
	int		 nweights;
	int		 use_empty, simulate;
	double		 threshold;
};

/* cli_cluster.c */
void	verb_usage(const char *verb, const char *args);
int	parse_args(struct cl *cl, int argc, char **argv, const int *allowed,
	    struct args *a);

/* the verbs: cli_cluster_create.c, cli_cluster_node.c, cli_cluster_fix.c */
int	cmd_create(struct cl *cl, int argc, char **argv);
int	cmd_add_node(struct cl *cl, int argc, char **argv);
int	cmd_del_node(struct cl *cl, int argc, char **argv);
int	cmd_fix(struct cl *cl, int argc, char **argv);
/* reshard and rebalance: cli_cluster_move.c */
int	cmd_move(struct cl *cl, int argc, char **argv);
/* a partitioned filter emptied on every primary: cli_cluster_reset.c */
int	cmd_reset(struct cl *cl, int argc, char **argv);

/* cli_cluster_view.c: maps */
int	map_add_cnode(const struct cl *cl, struct cluster_map *m,
	    struct cnode *n, int primary);
int	map_canon(struct cluster_map *m);
unsigned replicas_of(const struct cluster_map *m, int i);
unsigned slots_covered(const struct cluster_map *m);
void	print_nodes(const struct cluster_map *m);
int	confirm(const struct cl *cl, const char *question);
/* CLOCK_MONOTONIC in seconds, for waits and the time a move took. */
double	now_secs(void);
/* cli_cluster_view.c: pushing a map */
int	push_map(const struct cl *cl, struct cnode *n, const char *text);
int	send_replicaof(const struct cl *cl, struct cnode *n, const char *host,
	    unsigned port);
int	wait_agree(const struct cl *cl, struct cnode *nodes, size_t n,
	    const struct cluster_map *m);
int	push_all(const struct cl *cl, struct cnode *nodes, size_t n,
	    const struct cluster_map *m);
/* cli_cluster_view.c: a cluster as one node sees it */
void	view_free(struct view *v);
int	view_load(const struct cl *cl, struct view *v, const char *addr);
int	show_info(struct view *v);
int	check_view(struct view *v);
/* CLUSTER HANDOFF LIST of n: "<first> <last> <node-id>" lines (malloc'd;
 * "" for none), or NULL with why in n->err. */
char	*node_handoffs(struct cnode *n);
int	run_check(const struct cl *cl, const char *addr, int info);

/* cli_cluster_conn.c */
void	reply_free(struct reply *r);
void	node_close(struct cnode *n);
void	node_free(struct cnode *n);
int	node_call(struct cnode *n, struct reply *r, int argc, ...);
/* The same with argv[i] of lens[i] bytes (binary; lens NULL: strings). */
int	node_call_argv(struct cnode *n, struct reply *r, int argc,
	    const char *const argv[], const size_t *lens);
void	node_setaddr(struct cnode *n, const char *host, unsigned port,
	    unsigned connect_port);
int	node_open(const struct cl *cl, struct cnode *n);
int	node_getmap(struct cnode *n);
int	node_load(const struct cl *cl, struct cnode *n);
int	node_load_addr(const struct cl *cl, struct cnode *n, const char *addr);
unsigned connect_port(const struct cl *cl, const struct cluster_node *cn);
int	map_is_alone(const struct cnode *n);
int	node_is_empty(struct cnode *n);

#endif
