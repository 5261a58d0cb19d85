/*
 * cluster_handoff.c - the slots a node pauses while it hands them over to
 * another node, kept in data_dir; see cluster_handoff.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_handoff.h"
#include "cluster_map.h"
#include "fileio.h"
#include "log.h"

/* The pauses into dir, whole or not at all; none: no file. */
static int
handoff_save(const struct cluster *c, const char *dir, char *err,
    size_t errlen)
{
	char	*text, path[4096];
	size_t	 cap = 64 + c->nhandoffs * (CLUSTER_ID_LEN + 16), len;
	int	 rc;

	if (c->nhandoffs == 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, CLUSTER_HANDOFF_FILE);
		if ((unlink(path) == -1 && errno != ENOENT) ||
		    fileio_sync_dir(dir) == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if ((text = malloc(cap)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	len = (size_t)snprintf(text, cap, "%s\n", CLUSTER_HANDOFF_MAGIC);
	for (size_t i = 0; i < c->nhandoffs; i++)
		len += (size_t)snprintf(text + len, cap - len, "%u %u %s\n",
		    c->handoffs[i].first, c->handoffs[i].last,
		    c->handoffs[i].to);
	rc = fileio_write_small(dir, CLUSTER_HANDOFF_FILE, text, len, err,
	    errlen);
	free(text);
	return rc;
}

/* A slot number of the file: 1-5 digits, no sign or leading zero,
 * below CLUSTER_SLOTS; *p moves past it. -1 when it is not one. */
static long
slot_field(const char **p)
{
	const char	*s = *p;
	long		 v = 0;
	int		 n = 0;

	while (s[n] >= '0' && s[n] <= '9' && n < 6)
		v = v * 10 + (s[n++] - '0');
	if (n == 0 || n > 5 || (n > 1 && s[0] == '0') || v >= CLUSTER_SLOTS)
		return -1;
	*p = s + n;
	return v;
}

/* One line "<first> <last> <node-id>" of the file into h: single spaces,
 * nothing else (the file is seend's own: anything else is damage). */
static int
handoff_parse_line(const char *line, struct cluster_handoff *h)
{
	const char	*p = line;
	long		 a, b;

	if ((a = slot_field(&p)) < 0 || *p++ != ' ' ||
	    (b = slot_field(&p)) < 0 || *p++ != ' ' || a > b ||
	    strlen(p) != CLUSTER_ID_LEN || !cluster_id_valid(p, CLUSTER_ID_LEN))
		return -1;
	h->first = (uint16_t)a;
	h->last = (uint16_t)b;
	memcpy(h->to, p, CLUSTER_ID_LEN + 1);
	return 0;
}

int
cluster_handoff_load(struct cluster *c, const char *dir, char *err,
    size_t errlen)
{
	char	*text, *line, *next, why[512];
	size_t	 len;
	int	 rc, n = 0;

	c->nhandoffs = 0;
	rc = fileio_read_small(dir, CLUSTER_HANDOFF_FILE, 1 << 20, &text, &len,
	    why, sizeof(why));
	if (rc <= 0) {
		if (rc == -1)
			snprintf(err, errlen, "%s", why);
		return rc;
	}
	/* every line ends in "\n", the first is the magic, and no NUL byte
	 * hides the rest: an empty or zeroed file is damage too */
	if (len == 0 || strlen(text) != len || text[len - 1] != '\n') {
		snprintf(err, errlen, "%s/%s: not a hand-over file (seen-cli "
		    "cluster fix ends the hand-over it recorded; remove the "
		    "file only if no move is under way)", dir,
		    CLUSTER_HANDOFF_FILE);
		free(text);
		return -1;
	}
	for (line = text; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		n++;
		if (n == 1 ? strcmp(line, CLUSTER_HANDOFF_MAGIC) != 0 :
		    c->nhandoffs == CLUSTER_HANDOFF_MAX ||
		    handoff_parse_line(line, &c->handoffs[c->nhandoffs++]) ==
		    -1) {
			snprintf(err, errlen, "%s/%s: line %d cannot be used "
			    "(seen-cli cluster fix ends the hand-over it "
			    "recorded; remove the file only if no move is "
			    "under way)", dir, CLUSTER_HANDOFF_FILE, n);
			free(text);
			c->nhandoffs = 0;
			return -1;
		}
	}
	free(text);
	cluster_serve_update(c);
	if (c->nhandoffs > 0)
		log_warn("cluster: %zu range(s) of slots paused for a "
		    "hand-over that had not ended (seen-cli cluster fix ends "
		    "it)", c->nhandoffs);
	return 0;
}

int
cluster_handoff_start(struct cluster *c, const char *dir, unsigned first,
    unsigned last, const char *to, char *err, size_t errlen)
{
	int	 t;

	if (c->map == NULL) {
		snprintf(err, errlen, "this node holds no map (a cluster of "
		    "one has nobody to hand slots to)");
		return -1;
	}
	if (first > last || last >= CLUSTER_SLOTS) {
		snprintf(err, errlen, "slots %u..%u are not a range of "
		    "0..%d", first, last, CLUSTER_SLOTS - 1);
		return -1;
	}
	if ((t = cluster_map_find(c->map, to)) < 0 ||
	    c->map->nodes[t].primary >= 0 || (unsigned)t == cluster_shard(c)) {
		snprintf(err, errlen, "node %s is not another primary of the "
		    "map held", to);
		return -1;
	}
	/* a replica takes its primary's pauses (seen-cli sends them) */
	for (unsigned s = first; s <= last; s++)
		if (c->map->owner[s] != cluster_shard(c)) {
			snprintf(err, errlen, "slot %u is not this node's", s);
			return -1;
		}
	for (size_t i = 0; i < c->nhandoffs; i++) {
		const struct cluster_handoff *h = &c->handoffs[i];

		if (h->first == first && h->last == last &&
		    strcmp(h->to, to) == 0)
			return 0;
		if (h->first <= last && first <= h->last) {
			snprintf(err, errlen, "slots %u..%u are being handed "
			    "over already (%u..%u to %s)", first, last,
			    h->first, h->last, h->to);
			return -1;
		}
	}
	if (c->nhandoffs == CLUSTER_HANDOFF_MAX) {
		snprintf(err, errlen, "%d ranges are being handed over "
		    "already", CLUSTER_HANDOFF_MAX);
		return -1;
	}
	c->handoffs[c->nhandoffs].first = (uint16_t)first;
	c->handoffs[c->nhandoffs].last = (uint16_t)last;
	memcpy(c->handoffs[c->nhandoffs].to, to, CLUSTER_ID_LEN + 1);
	c->nhandoffs++;
	if (handoff_save(c, dir, err, errlen) == -1) {
		c->nhandoffs--;
		return -1;
	}
	cluster_serve_update(c);
	return 0;
}

/* Drops the pauses keep() says no to; saved when any went. */
static int
handoff_drop(struct cluster *c, const char *dir,
    int (*keep)(const struct cluster *, const struct cluster_handoff *,
    const void *), const void *arg, char *err, size_t errlen)
{
	struct cluster_handoff	 was[CLUSTER_HANDOFF_MAX];
	size_t			 n = 0, before = c->nhandoffs;

	memcpy(was, c->handoffs, before * sizeof(was[0]));
	for (size_t i = 0; i < before; i++)
		if (keep(c, &was[i], arg))
			c->handoffs[n++] = was[i];
	if (n == before)
		return 0;
	c->nhandoffs = n;
	if (handoff_save(c, dir, err, errlen) == -1) {
		memcpy(c->handoffs, was, before * sizeof(was[0]));
		c->nhandoffs = before;
		return -1;
	}
	cluster_serve_update(c);
	return 0;
}

/* cancel's keep: a pause outside the range asked */
static int
outside(const struct cluster *c, const struct cluster_handoff *h,
    const void *arg)
{
	const unsigned *r = arg;

	(void)c;
	return h->last < r[0] || h->first > r[1];
}

int
cluster_handoff_cancel(struct cluster *c, const char *dir, unsigned first,
    unsigned last, char *err, size_t errlen)
{
	unsigned r[2] = { first, last };

	return handoff_drop(c, dir, outside, r, err, errlen);
}

/* prune's keep: a pause of slots the node's shard still owns */
static int
still_mine(const struct cluster *c, const struct cluster_handoff *h,
    const void *arg)
{
	(void)arg;
	for (unsigned s = h->first; s <= h->last; s++)
		if (c->map->owner[s] == cluster_shard(c))
			return 1;
	return 0;
}

int
cluster_handoff_prune(struct cluster *c, const char *dir, char *err,
    size_t errlen)
{
	if (c->map == NULL)
		return 0;
	return handoff_drop(c, dir, still_mine, NULL, err, errlen);
}
