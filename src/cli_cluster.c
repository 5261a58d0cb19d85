/*
 * cli_cluster.c - seen-cli cluster <verb>; see cli_cluster.h.
 *
 * The verbs and their output are redis-cli --cluster's, so that an
 * operator's habits and scripts carry over; what differs is how a change
 * reaches the nodes. Redis's nodes gossip and vote; a seend node keeps the
 * newest map it has seen (cluster_map.h), so every change here is: read
 * the maps the nodes hold, make the new one with an epoch above all of
 * them, push it with CLUSTER SETMAP to every node it names, and read it
 * back (CLUSTER GETMAP) until they all agree. The nodes pass a newer map
 * on among themselves too (peer.c), so a node missed here catches up.
 *
 * Everything speaks RESP over one blocking connection per node, with a
 * receive timeout so that a node that hangs is reported, not waited for.
 *
 * The verbs live in files of their own, the maps and the connections
 * below them: cli_cluster_int.h says which and what they share.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_cluster.h"
#include "cli_cluster_int.h"
#include "cluster_map.h"

/* ---- the verbs ---- */

void
verb_usage(const char *verb, const char *args)
{
	fprintf(stderr, "usage: seen-cli cluster %s %s\n", verb, args);
}

static const struct option cluster_longopts[] = {
	{ "replicas",		required_argument,	NULL, OPT_REPLICAS },
	{ "cluster-replicas",	required_argument,	NULL, OPT_REPLICAS },
	{ "replica-of",		required_argument,	NULL, OPT_REPLICA_OF },
	{ "yes",		no_argument,		NULL, OPT_YES },
	{ "cluster-yes",	no_argument,		NULL, OPT_YES },
	{ "from",		required_argument,	NULL, OPT_FROM },
	{ "to",			required_argument,	NULL, OPT_TO },
	{ "slots",		required_argument,	NULL, OPT_SLOTS },
	{ "weight",		required_argument,	NULL, OPT_WEIGHT },
	{ "use-empty-masters",	no_argument,		NULL, OPT_USE_EMPTY },
	{ "threshold",		required_argument,	NULL, OPT_THRESHOLD },
	{ "simulate",		no_argument,		NULL, OPT_SIMULATE },
	{ "timeout",		required_argument,	NULL, OPT_TIMEOUT },
	{ "pipeline",		required_argument,	NULL, OPT_PIPELINE },
	{ NULL,			0,			NULL, 0 },
};

/* --weight <id>=<w> (repeated, or several in one as redis-cli takes). */
static int
weight_arg(const char *verb, const char *arg, struct args *a)
{
	const char	*eq = strchr(arg, '=');
	char		*end;
	double		 w;

	if (eq == NULL || eq == arg || (size_t)(eq - arg) > CLUSTER_ID_LEN ||
	    a->nweights == CLUSTER_MAP_MAX_NODES) {
		fprintf(stderr, "seen-cli: cluster %s: %s: not <id>=<weight>\n",
		    verb, arg);
		return -1;
	}
	errno = 0;
	w = strtod(eq + 1, &end);
	if (eq[1] == '\0' || *end != '\0' || errno != 0 || !(w >= 0)) {
		fprintf(stderr, "seen-cli: cluster %s: %s: not <id>=<weight>\n",
		    verb, arg);
		return -1;
	}
	memcpy(a->weights[a->nweights].id, arg, (size_t)(eq - arg));
	a->weights[a->nweights].id[eq - arg] = '\0';
	a->weights[a->nweights++].w = w;
	return 0;
}

/* Parses options; allowed is a list of OPT_ values ending in 0. Returns
 * 0, or 2 (usage) after saying why. */
int
parse_args(struct cl *cl, int argc, char **argv, const int *allowed,
    struct args *a)
{
	int	 ch, ok;
	char	*end;

	memset(a, 0, sizeof(*a));
	a->slots = -1;
	optind = 0;	/* glibc: start over; options may follow nodes */
	while ((ch = getopt_long(argc, argv, "", cluster_longopts, NULL)) !=
	    -1) {
		ok = 0;
		for (const int *p = allowed; *p != 0; p++)
			if (*p == ch)
				ok = 1;
		if (!ok) {
			if (ch != '?')
				fprintf(stderr, "seen-cli: cluster %s: %s "
				    "does not take %s\n", argv[0], argv[0],
				    argv[optind - 1]);
			return 2;
		}
		switch (ch) {
		case OPT_REPLICAS:
		case OPT_SLOTS:
			errno = 0;
			a->replicas = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    a->replicas < 0 || a->replicas > (ch ==
			    OPT_REPLICAS ? CLUSTER_MAP_MAX_NODES :
			    CLUSTER_SLOTS)) {
				fprintf(stderr, "seen-cli: cluster %s: %s: not "
				    "a count\n", argv[0], optarg);
				return 2;
			}
			if (ch == OPT_SLOTS) {
				a->slots = a->replicas;
				a->replicas = 0;
			}
			break;
		case OPT_REPLICA_OF:
			a->replica_of = optarg;
			break;
		case OPT_FROM:
			a->from = optarg;
			break;
		case OPT_TO:
			a->to = optarg;
			break;
		case OPT_YES:
			cl->yes = 1;
			break;
		case OPT_WEIGHT:
			if (weight_arg(argv[0], optarg, a) == -1)
				return 2;
			break;
		case OPT_USE_EMPTY:
			a->use_empty = 1;
			break;
		case OPT_SIMULATE:
			a->simulate = 1;
			break;
		case OPT_THRESHOLD:
			errno = 0;
			a->threshold = strtod(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    !(a->threshold > 0)) {
				fprintf(stderr, "seen-cli: cluster %s: %s: not "
				    "a threshold\n", argv[0], optarg);
				return 2;
			}
			break;
		default:	/* --timeout, --pipeline: redis-cli's, taken */
			break;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (a->n == CLUSTER_MAP_MAX_NODES) {
			fprintf(stderr, "seen-cli: cluster %s: more than %d "
			    "nodes\n", argv[0], CLUSTER_MAP_MAX_NODES);
			return 2;
		}
		a->pos[a->n++] = argv[i];
	}
	return 0;
}

static int
cmd_check(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { 0 };
	struct args		 a;

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1) {
		verb_usage("check", "host:port");
		return 2;
	}
	return run_check(cl, a.pos[0], 1);
}

static int
cmd_info(struct cl *cl, int argc, char **argv)
{
	static const int	 allowed[] = { 0 };
	struct args		 a;
	struct view		 v;
	int			 rc = 1;

	if (parse_args(cl, argc, argv, allowed, &a) != 0 || a.n != 1) {
		verb_usage("info", "host:port");
		return 2;
	}
	if (view_load(cl, &v, a.pos[0]) == 0)
		rc = show_info(&v) == 0 ? 0 : 1;
	view_free(&v);
	return rc;
}

static void
cluster_usage(FILE *fp)
{
	fprintf(fp, "usage: seen-cli [-a token] [--tls ...] cluster <verb> "
	    "...\n"
	    "  create host1:port1 ... hostN:portN [--replicas <n>] [--yes]\n"
	    "  add-node new_host:new_port existing_host:existing_port "
	    "[--replica-of <id>]\n"
	    "  del-node host:port node_id\n"
	    "  check host:port\n"
	    "  fix host:port [--yes]\n"
	    "  info host:port\n"
	    "  reshard host:port --from <id>[,<id>...]|all --to <id> "
	    "--slots <n> [--yes]\n"
	    "  rebalance host:port [--weight <id>=<w>] [--use-empty-masters] "
	    "[--threshold <t>] [--simulate]\n"
	    "  reset host:port filter [--yes]\n");
}

int
cli_cluster(const struct client_target *defaults, const char *token,
    int argc, char **argv)
{
	static const struct {
		const char	*name;
		int		(*fn)(struct cl *, int, char **);
	} verbs[] = {
		{ "create",	cmd_create },
		{ "add-node",	cmd_add_node },
		{ "del-node",	cmd_del_node },
		{ "check",	cmd_check },
		{ "fix",	cmd_fix },
		{ "info",	cmd_info },
		{ "reshard",	cmd_move },
		{ "rebalance",	cmd_move },
		{ "reset",	cmd_reset },
	};
	struct cl	 cl = { .defaults = defaults, .token = token };
	int		 rc;

	if (argc < 2) {
		cluster_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		cluster_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0) {
			rc = verbs[i].fn(&cl, argc - 1, argv + 1);
			fflush(stdout);
			return rc;
		}
	fprintf(stderr, "seen-cli: cluster: unknown verb '%s'\n", argv[1]);
	cluster_usage(stderr);
	return 2;
}
