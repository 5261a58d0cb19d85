/*
 * cluster.c - a node's ID, its announced address and the slot of a key;
 * see cluster.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "cluster.h"
#include "cluster_map.h"
#include "config.h"
#include "fileio.h"
#include "filter.h"
#include "log.h"

int	cluster_routing;


int
cluster_owns_all(const struct cluster *c)
{
	unsigned shard;

	if (c == NULL || c->map == NULL)
		return 1;
	shard = cluster_shard(c);
	for (unsigned s = 0; s < CLUSTER_SLOTS; s++)
		if (c->map->owner[s] != shard)
			return 0;
	return 1;
}

int
cluster_id_valid(const char *s, size_t len)
{
	if (len != CLUSTER_ID_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* 40 random hex digits, as Redis's getRandomHexChars makes a node ID. */
static void
new_id(char out[CLUSTER_ID_LEN + 1])
{
	unsigned char	 r[CLUSTER_ID_LEN / 2];
	size_t		 got = 0;
	ssize_t		 n;

	while (got < sizeof(r) && (n = getrandom(r + got, sizeof(r) - got,
	    0)) > 0)
		got += (size_t)n;
	if (got < sizeof(r)) {
		/* no entropy to be had: time, clock and pid still differ */
		struct timespec ts;
		unsigned long long x;

		clock_gettime(CLOCK_REALTIME, &ts);
		x = ((unsigned long long)ts.tv_sec * 1000000000ULL +
		    (unsigned long long)ts.tv_nsec) ^
		    ((unsigned long long)getpid() << 40);
		for (size_t i = 0; i < sizeof(r); i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* The ID in dir's CLUSTER_ID_FILE: 1 read, 0 no file, -1 a file that holds
 * none (err). */
static int
read_id(const char *dir, char id[CLUSTER_ID_LEN + 1], char *err,
    size_t errlen)
{
	char	 e[600], *text;
	size_t	 len;
	int	 rc;

	rc = fileio_read_small(dir, CLUSTER_ID_FILE, 4096, &text, &len, e,
	    sizeof(e));
	if (rc == 0)
		return 0;
	if (rc == -1) {
		snprintf(err, errlen, "cannot read the cluster node ID: %s", e);
		return -1;
	}
	len = strcspn(text, "\r\n");
	if (!cluster_id_valid(text, len)) {
		snprintf(err, errlen, "%s/%s holds no cluster node ID (40 "
		    "lower-case hex digits on its first line): fix it, or "
		    "remove it to make this node a new one", dir,
		    CLUSTER_ID_FILE);
		free(text);
		return -1;
	}
	memcpy(id, text, CLUSTER_ID_LEN);
	id[CLUSTER_ID_LEN] = '\0';
	free(text);
	return 1;
}

/* Writes id to dir's CLUSTER_ID_FILE whole. */
static int
write_id(const char *dir, const char *id, char *err, size_t errlen)
{
	char	 line[CLUSTER_ID_LEN + 2], e[600];

	snprintf(line, sizeof(line), "%s\n", id);
	if (fileio_write_small(dir, CLUSTER_ID_FILE, line, strlen(line), e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "cannot keep the cluster node ID: %s", e);
		return -1;
	}
	return 0;
}

static int	map_open(struct cluster *, const char *, char *, size_t);

/* "host:port" or "[v6]:port" (checked by config.c) into c. */
static void
set_address(struct cluster *c, const char *addr)
{
	const char	*colon = strrchr(addr, ':');
	size_t		 n;

	if (colon == NULL)
		return;
	n = (size_t)(colon - addr);
	if (addr[0] == '[' && n >= 2 && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= sizeof(c->host))
		n = sizeof(c->host) - 1;
	memcpy(c->host, addr, n);
	c->host[n] = '\0';
	c->port = (unsigned)strtoul(colon + 1, NULL, 10);
}

struct cluster *
cluster_open(const struct config *cfg, char *err, size_t errlen)
{
	struct cluster	*c;
	int		 rc;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((rc = read_id(cfg->data_dir, c->myid, err, errlen)) == -1)
		goto fail;
	if (rc == 0) {
		new_id(c->myid);
		if (write_id(cfg->data_dir, c->myid, err, errlen) == -1)
			goto fail;
	}
	if (cfg->cluster_announce != NULL) {
		set_address(c, cfg->cluster_announce);
		c->announced = 1;
	}
	else if (cfg->listen != NULL) {
		set_address(c, cfg->listen);
		/* a wildcard is no address to give a client */
		if (strcmp(c->host, "0.0.0.0") == 0 ||
		    strcmp(c->host, "::") == 0 || strcmp(c->host, "*") == 0)
			c->host[0] = '\0';
	}
	if (map_open(c, cfg->data_dir, err, errlen) == -1)
		goto fail;
	return c;
fail:
	free(c);
	return NULL;
}

/* m (heap, parsed) becomes the map held, me its index of this node. */
static void
hold(struct cluster *c, struct cluster_map *m, int me)
{
	struct cluster_map *old = c->map;

	c->map = m;
	c->me = (uint16_t)me;
	c->removed = 0;
	c->map_gen++;
	cluster_serve_update(c);
	c->owner = c->serve;
	cluster_routing = 1;
	/* a partitioned filter made from now on hashes with the cluster's
	 * seed (one on every node: its slots' bits can move) */
	filter_set_part_seed(m->seed);
	/* the share of its shard (a replica's primary's) a slot-major
	 * filter's part holds here */
	filter_set_part(cluster_map_slots_of(m, m->nodes[me].primary >= 0 ?
	    m->nodes[me].primary : me));
	if (old != NULL) {
		cluster_map_free(old);
		free(old);
	}
}

/*
 * The map kept in dir, if any, held: a file that does not parse, or a map
 * that does not name this node, stops the start (as a damaged ID file
 * does) rather than have the node serve slots it may not own.
 */
static int
map_open(struct cluster *c, const char *dir, char *err, size_t errlen)
{
	struct cluster_map	*m;
	char			 why[512];
	int			 rc, me;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((rc = cluster_map_load(dir, m, why, sizeof(why))) <= 0) {
		free(m);
		if (rc == 0)
			return 0;
		snprintf(err, errlen, "the cluster map %s/%s cannot be used: "
		    "%s (fix it, or remove it to make this node a cluster of "
		    "one until it is given a map)", dir, CLUSTER_MAP_FILE,
		    why);
		return -1;
	}
	if ((me = cluster_map_find(m, c->myid)) < 0) {
		snprintf(err, errlen, "the cluster map %s/%s does not name "
		    "this node %s (a data_dir of another node?): remove it "
		    "to make this node a cluster of one until it is given a "
		    "map", dir, CLUSTER_MAP_FILE, c->myid);
		cluster_map_free(m);
		free(m);
		return -1;
	}
	hold(c, m, me);
	return 0;
}

int
cluster_take(struct cluster *c, const char *dir, const char *text,
    size_t len, char *err, size_t errlen)
{
	struct cluster_map	*m;
	char			 why[512];
	int			 me, cmp;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return CLUSTER_REFUSED;
	}
	if (cluster_map_parse(text, len, m, why, sizeof(why)) == -1) {
		free(m);
		snprintf(err, errlen, "map refused: %s", why);
		return CLUSTER_REFUSED;
	}
	if ((me = cluster_map_find(m, c->myid)) < 0) {
		snprintf(err, errlen, "map refused: it does not name this node "
		    "%s", c->myid);
		/* its old map would have it take its primary's slots */
		if (c->map != NULL && m->epoch > c->map->epoch) {
			c->removed = 1;
			c->promoted_from[0] = '\0';
		}
		cmp = CLUSTER_REFUSED;
		goto drop;
	}
	if (c->map != NULL && (cmp = cluster_map_compare(m, c->map)) <= 0) {
		if (cmp < 0)
			snprintf(err, errlen, "this node holds a newer map "
			    "(epoch %llu)", (unsigned long long)c->map->epoch);
		cmp = cmp < 0 ? CLUSTER_STALE : CLUSTER_SAME;
		goto drop;
	}
	/* on disk first: a node that said +OK has it after a crash */
	if (cluster_map_save(dir, m, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "map not saved: %s", why);
		cmp = CLUSTER_REFUSED;
		goto drop;
	}
	hold(c, m, me);
	return CLUSTER_TAKEN;
drop:
	cluster_map_free(m);
	free(m);
	return cmp;
}

void
cluster_free(struct cluster *c)
{
	if (c == NULL)
		return;
	if (c->map != NULL) {
		cluster_map_free(c->map);
		free(c->map);
	}
	free(c);
	cluster_routing = 0;
}

int
cluster_offer(struct cluster *c, const char *dir, const char *text,
    size_t len, const char *from, char *err, size_t errlen)
{
	int rc = cluster_take(c, dir, text, len, err, errlen);

	if (rc == CLUSTER_TAKEN) {
		log_info("cluster: map epoch %llu taken (from %s)",
		    (unsigned long long)c->map->epoch, from);
		/* a failover in another shard may have won our epoch with a
		 * map that lacks our promotion: made again, above it */
		cluster_reconcile(c, dir);
	}
	return rc;
}

/*
 * The map held with this node promoted in place of its primary p: this
 * node a primary owning exactly the slots p owns, p and p's other
 * replicas its replicas, the epoch one above. 0 with *m made, -1 when out
 * of memory.
 */
static int
promote(const struct cluster *c, int p, struct cluster_map *m,
    unsigned *nslots)
{
	int	 me = c->me;

	if (cluster_map_copy(m, c->map) == -1)
		return -1;
	m->epoch = c->map->epoch + 1;
	for (size_t i = 0; i < m->nnodes; i++)
		if ((int)i == p || m->nodes[i].primary == p)
			m->nodes[i].primary = me;
	m->nodes[me].primary = -1;
	*nslots = 0;
	for (size_t s = 0; s < CLUSTER_SLOTS; s++)
		if (m->owner[s] == p) {
			m->owner[s] = (uint16_t)me;
			(*nslots)++;
		}
	return 0;
}

int
cluster_reconcile(struct cluster *c, const char *dir)
{
	struct cluster_map	 m;
	char			*text, err[600], from[CLUSTER_ID_LEN + 1];
	size_t			 len;
	unsigned		 n;
	int			 p, rc;

	if (c->promoted_from[0] == '\0' || c->map == NULL || c->removed)
		return CLUSTER_SAME;
	/* only the slots of the primary it was promoted from, and only
	 * while the map held still names that node its primary */
	p = c->map->nodes[c->me].primary;
	if (p < 0 || strcmp(c->map->nodes[p].id, c->promoted_from) != 0)
		return CLUSTER_SAME;
	if (c->map->epoch >= INT64_MAX) {
		log_error("cluster: promoted, but the map's epoch is at its "
		    "maximum: the map keeps %s the primary", c->promoted_from);
		return CLUSTER_REFUSED;
	}
	if (promote(c, p, &m, &n) == -1)
		goto nomem;
	text = cluster_map_format(&m, &len);
	cluster_map_free(&m);
	if (text == NULL)
		goto nomem;
	memcpy(from, c->promoted_from, sizeof(from));
	rc = cluster_take(c, dir, text, len, err, sizeof(err));
	free(text);
	if (rc == CLUSTER_TAKEN)
		log_info("cluster: promoted: took %u slots of %s (map epoch "
		    "%llu)", n, from, (unsigned long long)c->map->epoch);
	else {
		log_error("cluster: promoted, but the map that says so was "
		    "not taken: %s", err);
		rc = CLUSTER_REFUSED;
	}
	return rc;
nomem:
	log_error("cluster: promoted, but no map could be made: out of "
	    "memory (tried again in a second)");
	return CLUSTER_REFUSED;
}

int
cluster_became_primary(struct cluster *c, const char *dir)
{
	int p;

	c->promoted_from[0] = '\0';
	if (c->map == NULL || c->removed ||
	    (p = c->map->nodes[c->me].primary) < 0)
		return CLUSTER_SAME;
	memcpy(c->promoted_from, c->map->nodes[p].id,
	    sizeof(c->promoted_from));
	return cluster_reconcile(c, dir);
}

void
cluster_became_replica(struct cluster *c)
{
	c->promoted_from[0] = '\0';
}
