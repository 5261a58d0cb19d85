/*
 * role.c - primary or replica, and the moves between them; see role.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backlog.h"
#include "cluster.h"
#include "command.h"
#include "config.h"
#include "core.h"
#include "fileio.h"
#include "journal.h"
#include "log.h"
#include "peer.h"
#include "primary.h"
#include "replica.h"
#include "role.h"
#include "session.h"

struct role {
	struct core	*core;
	struct primary	*primary;
	struct replica	*replica;
	struct backlog	 backlog;
};

/* "host:port" (or "[v6]:port") into host and port; -1 if not one. */
static int
split_addr(const char *addr, char *host, size_t hostlen, unsigned *port)
{
	const char	*c = strrchr(addr, ':');
	size_t		 n;
	char		*end;
	unsigned long	 p;

	if (c == NULL || c == addr)
		return -1;
	n = (size_t)(c - addr);
	if (addr[0] == '[' && n >= 2 && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hostlen)
		return -1;
	memcpy(host, addr, n);
	host[n] = '\0';
	p = strtoul(c + 1, &end, 10);
	if (*end != '\0' || p == 0 || p > 65535)
		return -1;
	*port = (unsigned)p;
	return 0;
}

/* The role file, written whole and renamed into place. */
static void
save_role(struct role *ro)
{
	const struct core_repl	*r = &ro->core->repl;
	const char		*dir = ro->core->cfg->data_dir;
	char			 tmp[PATH_MAX], final[PATH_MAX], err[600];
	FILE			*f;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, ROLE_FILE);
	snprintf(final, sizeof(final), "%s/%s", dir, ROLE_FILE);
	if ((f = fopen(tmp, "w")) == NULL) {
		log_error("replication: cannot keep the role in %s: %s", final,
		    strerror(errno));
		return;
	}
	if (r->replica)
		fprintf(f, "replicaof %s %u\n", r->host, r->port);
	else
		fprintf(f, "replicaof no one\n");
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		log_error("replication: cannot keep the role in %s: %s", final,
		    strerror(errno));
		fclose(f);
		unlink(tmp);
		return;
	}
	fclose(f);
	if (fileio_commit(tmp, final, dir, err, sizeof(err)) == -1)
		log_error("replication: cannot keep the role: %s", err);
}

/* The role file in dir: 1 replica (host, port set), 0 primary, -1 none
 * (warn: one that says nothing this seend reads is said so). */
static int
read_role(const char *dir, char *host, size_t hostlen, unsigned *port,
    int warn)
{
	char	 path[PATH_MAX], line[600], h[300];
	FILE	*f;
	int	 rc = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, ROLE_FILE);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) != NULL) {
		if (strncasecmp(line, "replicaof no one", 16) == 0)
			rc = 0;
		else if (sscanf(line, "replicaof %299s %u", h, port) == 2 &&
		    strlen(h) < hostlen && *port > 0 && *port < 65536) {
			snprintf(host, hostlen, "%s", h);
			rc = 1;
		}
	}
	fclose(f);
	if (rc == -1 && warn)
		log_warn("replication: %s says nothing this seend reads; the "
		    "config's replicaof applies", path);
	return rc;
}

static int
load_role(struct role *ro, char *host, size_t hostlen, unsigned *port)
{
	return read_role(ro->core->cfg->data_dir, host, hostlen, port, 1);
}

int
role_starts_replica(const struct config *cfg)
{
	char		 host[300];
	unsigned	 port;
	int		 kept = read_role(cfg->data_dir, host, sizeof(host), &port,
			    0);

	return kept >= 0 ? kept : cfg->replicaof != NULL;
}

/* Becomes a replica of host:port, or (host NULL) a primary. */
static void
become(struct role *ro, const char *host, unsigned port)
{
	struct core_repl *r = &ro->core->repl;

	if (host != NULL) {
		int was_primary = !r->replica;

		snprintf(r->host, sizeof(r->host), "%s", host);
		r->port = port;
		r->replica = 1;
		r->link_error[0] = '\0';
		primary_drop_all(ro->primary, "this seend became a replica");
		if (ro->core->stream != NULL) {
			journal_close(ro->core->stream);
			ro->core->stream = NULL;
		}
		/* its own history: a primary that was its replica may
		 * continue it (replid2) */
		if (was_primary)
			replica_resume(ro->replica, r->replid, r->offset);
		log_info("replication: a replica of %s:%u", host, port);
		replica_start(ro->replica);
		if (ro->core->cluster != NULL)
			cluster_became_replica(ro->core->cluster);
		return;
	}
	if (!r->replica)
		return;
	replica_stop(ro->replica);
	r->replica = 0;
	r->link_up = 0;
	/* a new history: replicas of the old primary at offsets this one
	 * holds continue from them (replid2, as Redis) */
	snprintf(r->replid2, sizeof(r->replid2), "%s", r->replid);
	r->second_offset = r->offset;
	command_new_replid(r->replid);
	primary_keep_stream(ro->primary);
	log_info("replication: a primary now (replication id %s, offset "
	    "%llu)", r->replid, (unsigned long long)r->offset);
	/* in a cluster, Sentinel's promotion: this node takes its old
	 * primary's slots in the map, and the others are told */
	if (ro->core->cluster != NULL &&
	    cluster_became_primary(ro->core->cluster,
	    ro->core->cfg->data_dir) == CLUSTER_TAKEN)
		peer_map_changed(ro->core);
}

struct role *
role_new(struct core *core, struct event_base *base,
    void (*done)(void *, struct save_wait *), void *arg)
{
	struct role *ro;

	if ((ro = calloc(1, sizeof(*ro))) == NULL)
		return NULL;
	ro->core = core;
	if (backlog_init(&ro->backlog, core->cfg->repl_backlog_size, 0) == -1 ||
	    (ro->primary = primary_new(core, base, done, arg)) == NULL ||
	    (ro->replica = replica_new(core, base)) == NULL) {
		role_free(ro);
		return NULL;
	}
	core->repl.backlog = &ro->backlog;
	core->repl.backlog_size = core->cfg->repl_backlog_size;
	core->repl.priority = core->cfg->replica_priority;
	command_new_replid(core->repl.replid);
	return ro;
}

void
role_start(struct role *ro)
{
	struct core	*core = ro->core;
	char		 host[256];
	unsigned	 port = 0;
	int		 kept;

	kept = load_role(ro, host, sizeof(host), &port);
	if (kept >= 0 && core->cfg->replicaof != NULL)
		log_info("replication: the role in %s/%s (%s) wins over "
		    "replicaof in the config", core->cfg->data_dir, ROLE_FILE,
		    kept ? "a replica" : "a primary");
	if (kept == -1) {
		kept = core->cfg->replicaof != NULL &&
		    split_addr(core->cfg->replicaof, host, sizeof(host),
		    &port) == 0;
	}
	if (!kept)
		return;
	core->repl.replica = 1;
	snprintf(core->repl.host, sizeof(core->repl.host), "%s", host);
	core->repl.port = port;
	replica_resume(ro->replica, core->repl.kept_replid,
	    core->repl.kept_offset);
	log_info("replication: a replica of %s:%u%s", host, port,
	    core->repl.offset ? " (resuming)" : "");
	replica_start(ro->replica);
}

void
role_turn_end(struct role *ro)
{
	struct core_repl *r = &ro->core->repl;

	if (r->resync_why != NULL) {
		primary_resync_all(ro->primary, r->resync_why);
		r->resync_why = NULL;
	}
	primary_turn_end(ro->primary);
	replica_turn_end(ro->replica);
	if (r->changed) {
		r->changed = 0;
		become(ro, r->want_replica ? r->want_host : NULL, r->want_port);
		save_role(ro);
	}
}

void
role_tick(struct role *ro)
{
	ro->core->repl.priority = ro->core->cfg->replica_priority;
	primary_tick(ro->primary);
	replica_tick(ro->replica);
}

void
role_reload(struct role *ro, const struct config *old,
    const struct config *new)
{
	char		 host[256];
	unsigned	 port;
	const char	*o = old->replicaof ? old->replicaof : "";
	const char	*n = new->replicaof ? new->replicaof : "";

	if (new->repl_backlog_size != old->repl_backlog_size) {
		if (backlog_resize(&ro->backlog, new->repl_backlog_size) == -1)
			log_error("replication: repl_backlog_size: out of "
			    "memory, the backlog keeps its size");
		ro->core->repl.backlog_size = ro->backlog.size;
		ro->core->repl.backlog_first = ro->backlog.first;
	}
	if (strcmp(o, n) == 0)
		return;
	log_info("replication: replicaof changed in the config (\"%s\" -> "
	    "\"%s\"): it applies", o, n);
	if (new->replicaof != NULL && split_addr(new->replicaof, host,
	    sizeof(host), &port) == 0)
		become(ro, host, port);
	else
		become(ro, NULL, 0);
	save_role(ro);
}

void
role_handover(void *arg, int fd, struct ssl_st *ssl, const struct session *s)
{
	struct role	*ro = arg;
	char		 ip[64];
	const char	*c = strrchr(s->peer, ':');
	size_t		 n = c != NULL ? (size_t)(c - s->peer) : strlen(s->peer);

	if (n >= sizeof(ip))
		n = sizeof(ip) - 1;
	memcpy(ip, s->peer, n);
	ip[n] = '\0';
	/* REPLCONF ip-address: where clients reach it (its announce) */
	if (s->repl_ip[0] != '\0')
		snprintf(ip, sizeof(ip), "%s", s->repl_ip);
	primary_attach(ro->primary, fd, ssl, ip, s->repl_port,
	    s->repl_node_id, s->repl_slots, s->psync_replid, s->psync_offset);
}

void
role_free(struct role *ro)
{
	if (ro == NULL)
		return;
	primary_free(ro->primary);
	replica_free(ro->replica);
	if (ro->core->stream != NULL) {
		journal_close(ro->core->stream);
		ro->core->stream = NULL;
	}
	while (ro->core->repl.slots != NULL) {
		struct core_slots *q = ro->core->repl.slots;

		ro->core->repl.slots = q->next;
		free(q);
	}
	free(ro->core->repl.replicas);
	ro->core->repl.replicas = NULL;
	ro->core->repl.nreplicas = 0;
	ro->core->repl.backlog = NULL;
	backlog_free(&ro->backlog);
	free(ro);
}
