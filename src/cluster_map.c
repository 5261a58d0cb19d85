/*
 * cluster_map.c - the cluster's map: its text, parsed strictly and
 * formatted canonically, its order by epoch and text, and its file in
 * data_dir; see cluster_map.h.
 *
 * The parser reads the lines in one pass into scratch records that keep
 * their line numbers, then sorts the nodes and resolves the IDs that
 * lines name, so that lines may come in any order and every refusal
 * still names the line at fault. Nothing it keeps grows with the text
 * beyond CLUSTER_MAP_MAX_NODES nodes and one record per "slots" line
 * (at most CLUSTER_SLOTS, since each gives at least one new slot).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_map.h"
#include "fileio.h"

#define NO_ENTRY	0xffff

/* A "node" line as read: the node, its primary's ID ("" for "-"). */
struct pnode {
	struct cluster_node	 n;
	char			 pid[CLUSTER_ID_LEN + 1];
	int			 line;
};

/* A "slots" line as read: whose slots, and the node's index once known. */
struct pslots {
	char		 id[CLUSTER_ID_LEN + 1];
	int		 line;
	int		 node;
};

struct parse {
	char		*err;
	size_t		 errlen;
	uint64_t	 epoch;
	int		 epoch_line;
	uint64_t	 seed;
	int		 seed_line;
	struct pnode	*nodes;
	size_t		 nnodes, nodes_cap;
	struct pslots	*sl;
	size_t		 nsl, sl_cap;
	uint16_t	 entry[CLUSTER_SLOTS];	/* index in sl, or NO_ENTRY */
};

static int
fail(struct parse *p, int line, const char *fmt, ...)
{
	char	 why[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (p->err != NULL && p->errlen > 0) {
		if (line > 0)
			snprintf(p->err, p->errlen, "line %d: %s", line, why);
		else
			snprintf(p->err, p->errlen, "%s", why);
	}
	return -1;
}

/*
 * A decimal number of n bytes, 0 .. max: digits only, no sign and no
 * leading zero, so that a number has one spelling, as the canonical text
 * writes it. 0, or -1.
 */
static int
number(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/*
 * The next field of a line split at single spaces: 1 with it in *f, *n;
 * 0 past the last one; -1 for an empty field (two spaces, or a space at
 * an end). *pos is NULL once the last field is taken.
 */
static int
field(const char **pos, const char *end, const char **f, size_t *n)
{
	const char *s = *pos, *sp;

	if (s == NULL)
		return 0;
	sp = memchr(s, ' ', (size_t)(end - s));
	*f = s;
	*n = (sp != NULL ? sp : end) - s;
	*pos = sp != NULL ? sp + 1 : NULL;
	return *n > 0 ? 1 : -1;
}

/*
 * Whether f is a node ID, as cluster_id_valid says, here again so that
 * the map stays below the node (cluster.c holds a map, not the reverse).
 */
static int
id_ok(const char *f, size_t n)
{
	if (n != CLUSTER_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((f[i] >= '0' && f[i] <= '9') ||
		    (f[i] >= 'a' && f[i] <= 'f')))
			return 0;
	return 1;
}

static int
is(const char *f, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(f, word, n) == 0;
}

static void
copy_id(char *dst, const char *src)
{
	memcpy(dst, src, CLUSTER_ID_LEN);
	dst[CLUSTER_ID_LEN] = '\0';
}

static int
epoch_line(struct parse *p, int line, const char *pos, const char *end)
{
	const char	*f;
	size_t		 n;

	if (p->epoch_line != 0)
		return fail(p, line, "epoch given twice (also on line %d)",
		    p->epoch_line);
	if (field(&pos, end, &f, &n) != 1 || pos != NULL ||
	    number(f, n, INT64_MAX, &p->epoch) == -1 || p->epoch == 0)
		return fail(p, line, "epoch must be 1..%lld",
		    (long long)INT64_MAX);
	p->epoch_line = line;
	return 0;
}

/* "seed <16 hex digits>": the partitioned filters' hash seed. */
static int
seed_line(struct parse *p, int line, const char *pos, const char *end)
{
	const char	*f;
	size_t		 n;
	uint64_t	 v = 0;

	if (p->seed_line != 0)
		return fail(p, line, "seed given twice (also on line %d)",
		    p->seed_line);
	if (field(&pos, end, &f, &n) != 1 || pos != NULL || n != 16)
		return fail(p, line, "seed must be 16 lower-case hex digits");
	for (size_t i = 0; i < n; i++) {
		int d = f[i] >= '0' && f[i] <= '9' ? f[i] - '0' :
		    f[i] >= 'a' && f[i] <= 'f' ? f[i] - 'a' + 10 : -1;

		if (d < 0)
			return fail(p, line, "seed must be 16 lower-case hex "
			    "digits");
		v = v << 4 | (uint64_t)d;
	}
	if (v == 0)
		return fail(p, line, "seed must not be zero");
	p->seed = v;
	p->seed_line = line;
	return 0;
}

static int
host_ok(struct parse *p, int line, const char *f, size_t n)
{
	if (n >= sizeof(((struct cluster_node *)0)->host))
		return fail(p, line, "host is longer than %zu bytes",
		    sizeof(((struct cluster_node *)0)->host) - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)f[i] > 0x7e)
			return fail(p, line, "host has a byte outside ASCII "
			    "(0x%02x)", (unsigned char)f[i]);
	return 0;
}

static int
node_line(struct parse *p, int line, const char *pos, const char *end)
{
	struct pnode	*pn;
	const char	*f[5];
	size_t		 n[5], i;
	uint64_t	 v;

	for (i = 0; i < 5; i++)
		if (field(&pos, end, &f[i], &n[i]) != 1)
			break;
	if (i < 5 || pos != NULL)
		return fail(p, line, "a node line is \"node <id> <host> "
		    "<port> <tls-port> <primary-id>|-\"");
	if (!id_ok(f[0], n[0]))
		return fail(p, line, "node id is not 40 lower-case hex digits");
	if (host_ok(p, line, f[1], n[1]) == -1)
		return -1;
	if (p->nnodes == CLUSTER_MAP_MAX_NODES)
		return fail(p, line, "more than %d nodes",
		    CLUSTER_MAP_MAX_NODES);
	if (p->nnodes == p->nodes_cap) {
		size_t	 cap = p->nodes_cap ? p->nodes_cap * 2 : 16;
		void	*np;

		if (cap > CLUSTER_MAP_MAX_NODES)
			cap = CLUSTER_MAP_MAX_NODES;
		if ((np = realloc(p->nodes, cap * sizeof(*p->nodes))) == NULL)
			return fail(p, line, "out of memory");
		p->nodes = np;
		p->nodes_cap = cap;
	}
	pn = &p->nodes[p->nnodes];
	memset(pn, 0, sizeof(*pn));
	pn->line = line;
	copy_id(pn->n.id, f[0]);
	memcpy(pn->n.host, f[1], n[1]);
	pn->n.host[n[1]] = '\0';
	if (number(f[2], n[2], 65535, &v) == -1 || v == 0)
		return fail(p, line, "port must be 1..65535");
	pn->n.port = (unsigned)v;
	if (number(f[3], n[3], 65535, &v) == -1)
		return fail(p, line, "tls-port must be 0 (none) or 1..65535");
	pn->n.tls_port = (unsigned)v;
	if (is(f[4], n[4], "-"))
		pn->pid[0] = '\0';
	else if (id_ok(f[4], n[4]))
		copy_id(pn->pid, f[4]);
	else
		return fail(p, line, "primary is neither \"-\" nor a node id "
		    "(40 lower-case hex digits)");
	if (strcmp(pn->pid, pn->n.id) == 0)
		return fail(p, line, "node %s names itself as its primary",
		    pn->n.id);
	p->nnodes++;
	return 0;
}

/* One "a" or "a-b" of a slots line, given to record e. */
static int
slot_range(struct parse *p, int line, const char *f, size_t n, uint16_t e)
{
	const char	*dash = memchr(f, '-', n);
	uint64_t	 a, b;

	if (dash == NULL) {
		if (number(f, n, CLUSTER_SLOTS - 1, &a) == -1)
			goto bad;
		b = a;
	} else if (number(f, (size_t)(dash - f), CLUSTER_SLOTS - 1, &a) == -1 ||
	    number(dash + 1, n - (size_t)(dash - f) - 1, CLUSTER_SLOTS - 1,
	    &b) == -1)
		goto bad;
	if (a > b)
		return fail(p, line, "slot range %u-%u runs backwards",
		    (unsigned)a, (unsigned)b);
	for (uint64_t s = a; s <= b; s++) {
		if (p->entry[s] != NO_ENTRY)
			return fail(p, line, "slot %u given twice (also on "
			    "line %d)", (unsigned)s, p->sl[p->entry[s]].line);
		p->entry[s] = e;
	}
	return 0;
bad:
	return fail(p, line, "slots are \"a\" or \"a-b\", 0 <= a <= b <= %d",
	    CLUSTER_SLOTS - 1);
}

static int
slots_line(struct parse *p, int line, const char *pos, const char *end)
{
	const char	*f;
	size_t		 n;
	int		 r;

	if (field(&pos, end, &f, &n) != 1 || pos == NULL)
		return fail(p, line, "a slots line is \"slots <id> "
		    "<a>[-<b>] ...\"");
	if (!id_ok(f, n))
		return fail(p, line, "node id is not 40 lower-case hex digits");
	/* each record holds at least one slot given once, so at most
	 * CLUSTER_SLOTS records fit; one more means a slot given twice */
	if (p->nsl == p->sl_cap) {
		size_t	 cap = p->sl_cap ? p->sl_cap * 2 : 16;
		void	*np;

		if (cap > CLUSTER_SLOTS)
			cap = CLUSTER_SLOTS;
		if (p->nsl == cap)
			return fail(p, line, "more than %d slots lines",
			    CLUSTER_SLOTS);
		if ((np = realloc(p->sl, cap * sizeof(*p->sl))) == NULL)
			return fail(p, line, "out of memory");
		p->sl = np;
		p->sl_cap = cap;
	}
	copy_id(p->sl[p->nsl].id, f);
	p->sl[p->nsl].line = line;
	p->sl[p->nsl].node = -1;
	while ((r = field(&pos, end, &f, &n)) == 1)
		if (slot_range(p, line, f, n, (uint16_t)p->nsl) == -1)
			return -1;
	if (r == -1)
		return fail(p, line, "two spaces, or a space at an end");
	p->nsl++;
	return 0;
}

/* Line number line, its content (without "\n" or "\r\n"). */
static int
one_line(struct parse *p, int line, const char *s, const char *end)
{
	const char	*pos = s, *f;
	size_t		 n;

	for (const char *c = s; c < end; c++) {
		unsigned char ch = (unsigned char)*c;

		if (ch == '\0')
			return fail(p, line, "a NUL byte");
		if (ch < 0x20 || ch == 0x7f)
			return fail(p, line, "a control character (0x%02x)",
			    ch);
	}
	if (line == 1) {
		if (!is(s, (size_t)(end - s), CLUSTER_MAP_MAGIC))
			return fail(p, line, "not a seend cluster map (\"%s\" "
			    "expected)", CLUSTER_MAP_MAGIC);
		return 0;
	}
	if (s == end)
		return fail(p, line, "an empty line");
	if (field(&pos, end, &f, &n) != 1)
		return fail(p, line, "a space at the start");
	if (is(f, n, "epoch"))
		return epoch_line(p, line, pos, end);
	if (is(f, n, "seed"))
		return seed_line(p, line, pos, end);
	if (is(f, n, "node"))
		return node_line(p, line, pos, end);
	if (is(f, n, "slots"))
		return slots_line(p, line, pos, end);
	return fail(p, line, "not an epoch, seed, node or slots line");
}

static int
pnode_cmp(const void *a, const void *b)
{
	const struct pnode *x = a, *y = b;
	int c = memcmp(x->n.id, y->n.id, CLUSTER_ID_LEN);

	return c != 0 ? c : (x->line > y->line) - (x->line < y->line);
}

static int
pnode_find(const struct parse *p, const char *id)
{
	size_t lo = 0, hi = p->nnodes;

	while (lo < hi) {
		size_t	 mid = lo + (hi - lo) / 2;
		int	 c = memcmp(id, p->nodes[mid].n.id, CLUSTER_ID_LEN);

		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Sorts the nodes and resolves the IDs lines name, after every line. */
static int
resolve(struct parse *p, int end_line)
{
	if (p->epoch_line == 0)
		return fail(p, end_line, "the map ends with no epoch line");
	if (p->nnodes == 0)
		return fail(p, end_line, "the map names no node");
	qsort(p->nodes, p->nnodes, sizeof(*p->nodes), pnode_cmp);
	for (size_t i = 1; i < p->nnodes; i++)
		if (memcmp(p->nodes[i - 1].n.id, p->nodes[i].n.id,
		    CLUSTER_ID_LEN) == 0)
			return fail(p, p->nodes[i].line, "node %s given twice "
			    "(also on line %d)", p->nodes[i].n.id,
			    p->nodes[i - 1].line);
	for (size_t i = 0; i < p->nnodes; i++) {
		struct pnode	*pn = &p->nodes[i];
		int		 k;

		pn->n.primary = -1;
		if (pn->pid[0] == '\0')
			continue;
		if ((k = pnode_find(p, pn->pid)) == -1)
			return fail(p, pn->line, "replica %s names unknown "
			    "primary %s", pn->n.id, pn->pid);
		if (p->nodes[k].pid[0] != '\0')
			return fail(p, pn->line, "a replica's primary must be "
			    "a primary: %s is a replica of %s", pn->pid,
			    p->nodes[k].pid);
		pn->n.primary = k;
	}
	for (size_t i = 0; i < p->nsl; i++) {
		struct pslots	*ps = &p->sl[i];

		if ((ps->node = pnode_find(p, ps->id)) == -1)
			return fail(p, ps->line, "slots of unknown node %s",
			    ps->id);
		if (p->nodes[ps->node].pid[0] != '\0')
			return fail(p, ps->line, "slots given to replica %s",
			    ps->id);
	}
	return 0;
}

static int
parse_lines(struct parse *p, const char *text, size_t len)
{
	const char	*s = text, *end = text + len;
	int		 line = 0;

	if (len > CLUSTER_MAP_MAX_TEXT)
		return fail(p, 0, "the map is longer than %d bytes",
		    CLUSTER_MAP_MAX_TEXT);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e;

		line++;
		if (nl == NULL)
			return fail(p, line, "no newline at the end");
		e = nl;
		if (e > s && e[-1] == '\r')
			e--;
		if (one_line(p, line, s, e) == -1)
			return -1;
		s = nl + 1;
	}
	if (line == 0)
		return fail(p, 1, "not a seend cluster map (empty)");
	return resolve(p, line + 1);
}

int
cluster_map_parse(const char *text, size_t len, struct cluster_map *m,
    char *err, size_t errlen)
{
	struct parse	*p;
	int		 r = -1;

	memset(m, 0, sizeof(*m));
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->err = err;
	p->errlen = errlen;
	memset(p->entry, 0xff, sizeof(p->entry));
	if (parse_lines(p, text, len) == -1)
		goto out;
	if ((m->nodes = calloc(p->nnodes, sizeof(*m->nodes))) == NULL) {
		fail(p, 0, "out of memory");
		goto out;
	}
	m->epoch = p->epoch;
	m->seed = p->seed;
	m->nnodes = p->nnodes;
	for (size_t i = 0; i < p->nnodes; i++)
		m->nodes[i] = p->nodes[i].n;
	for (size_t s = 0; s < CLUSTER_SLOTS; s++)
		m->owner[s] = p->entry[s] == NO_ENTRY ? CLUSTER_NO_NODE :
		    (uint16_t)p->sl[p->entry[s]].node;
	r = 0;
out:
	free(p->nodes);
	free(p->sl);
	free(p);
	if (r == -1)
		memset(m, 0, sizeof(*m));
	return r;
}

/* A run of slots of one owner, for the formatter. */
struct run {
	uint16_t	 a, b;
};

char *
cluster_map_format(const struct cluster_map *m, size_t *lenp)
{
	struct run	*runs = NULL;
	size_t		*first = NULL, cap, len = 0;
	char		*out = NULL;

	/* each node line, its slots line's head, and every slot as a range
	 * of its own at worst ("16383-16383 " is 12 bytes) */
	cap = 64 + m->nnodes * (sizeof(m->nodes[0].host) + 3 *
	    CLUSTER_ID_LEN + 96) + (size_t)CLUSTER_SLOTS * 12;
	if ((out = malloc(cap)) == NULL ||
	    (runs = malloc(CLUSTER_SLOTS * sizeof(*runs))) == NULL ||
	    (first = calloc(m->nnodes + 1, sizeof(*first))) == NULL)
		goto fail;
	len += snprintf(out + len, cap - len, "%s\nepoch %llu\n",
	    CLUSTER_MAP_MAGIC, (unsigned long long)m->epoch);
	if (m->seed != 0)
		len += snprintf(out + len, cap - len, "seed %016llx\n",
		    (unsigned long long)m->seed);
	for (size_t i = 0; i < m->nnodes; i++) {
		const struct cluster_node *n = &m->nodes[i];

		len += snprintf(out + len, cap - len, "node %.40s %.*s %u %u "
		    "%.40s\n", n->id, (int)strnlen(n->host, sizeof(n->host)),
		    n->host, n->port, n->tls_port, n->primary >= 0 &&
		    (size_t)n->primary < m->nnodes ?
		    m->nodes[n->primary].id : "-");
	}
	/* the slots' runs, grouped by owner with a counting sort so that
	 * this stays linear in slots + nodes */
	for (size_t s = 0; s < CLUSTER_SLOTS; s++) {
		uint16_t o = m->owner[s];

		if (o >= m->nnodes || (s > 0 && m->owner[s - 1] == o))
			continue;
		first[o + 1]++;
	}
	for (size_t i = 0; i < m->nnodes; i++)
		first[i + 1] += first[i];
	for (size_t s = 0; s < CLUSTER_SLOTS; s++) {
		uint16_t o = m->owner[s];

		if (o >= m->nnodes)
			continue;
		if (s > 0 && m->owner[s - 1] == o) {
			runs[first[o] - 1].b = (uint16_t)s;
			continue;
		}
		runs[first[o]].a = runs[first[o]].b = (uint16_t)s;
		first[o]++;
	}
	/* first[i] now ends node i's runs; node i's begin at first[i-1] */
	for (size_t i = 0, r = 0; i < m->nnodes; i++) {
		if (r == first[i])
			continue;
		len += snprintf(out + len, cap - len, "slots %s",
		    m->nodes[i].id);
		for (; r < first[i]; r++)
			len += runs[r].a == runs[r].b ?
			    snprintf(out + len, cap - len, " %u",
			    runs[r].a) : snprintf(out + len, cap - len,
			    " %u-%u", runs[r].a, runs[r].b);
		out[len++] = '\n';
	}
	out[len] = '\0';
	free(runs);
	free(first);
	if (lenp != NULL)
		*lenp = len;
	return out;
fail:
	free(out);
	free(runs);
	free(first);
	return NULL;
}

void
cluster_map_free(struct cluster_map *m)
{
	if (m == NULL)
		return;
	free(m->nodes);
	memset(m, 0, sizeof(*m));
}

int
cluster_map_copy(struct cluster_map *dst, const struct cluster_map *src)
{
	struct cluster_node *nodes = NULL;

	if (src->nnodes > 0) {
		nodes = malloc(src->nnodes * sizeof(*nodes));
		if (nodes == NULL)
			return -1;
		memcpy(nodes, src->nodes, src->nnodes * sizeof(*nodes));
	}
	*dst = *src;
	dst->nodes = nodes;
	return 0;
}

int
cluster_map_compare(const struct cluster_map *a, const struct cluster_map *b)
{
	char	*ta, *tb;
	size_t	 la, lb;
	int	 c;

	if (a->epoch != b->epoch)
		return a->epoch > b->epoch ? 1 : -1;
	ta = cluster_map_format(a, &la);
	tb = cluster_map_format(b, &lb);
	if (ta == NULL || tb == NULL) {
		/* out of memory: keep the map held (b), the safe answer */
		free(ta);
		free(tb);
		return -1;
	}
	c = memcmp(ta, tb, la < lb ? la : lb);
	if (c == 0)
		c = (la > lb) - (la < lb);
	free(ta);
	free(tb);
	return c > 0 ? 1 : c < 0 ? -1 : 0;
}

int
cluster_map_find(const struct cluster_map *m, const char *id)
{
	size_t lo = 0, hi = m->nnodes;

	while (lo < hi) {
		size_t	 mid = lo + (hi - lo) / 2;
		int	 c = memcmp(id, m->nodes[mid].id, CLUSTER_ID_LEN);

		if (c == 0)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

unsigned
cluster_map_slots_of(const struct cluster_map *m, int i)
{
	unsigned n = 0;

	if (i < 0 || (size_t)i >= m->nnodes)
		return 0;
	for (size_t s = 0; s < CLUSTER_SLOTS; s++)
		n += m->owner[s] == i;
	return n;
}

int
cluster_map_load(const char *dir, struct cluster_map *m, char *err,
    size_t errlen)
{
	char	 why[512], *text;
	size_t	 len;
	int	 rc;

	memset(m, 0, sizeof(*m));
	rc = fileio_read_small(dir, CLUSTER_MAP_FILE, CLUSTER_MAP_MAX_TEXT,
	    &text, &len, err, errlen);
	if (rc <= 0)
		return rc;
	if (cluster_map_parse(text, len, m, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "%s/%s: %s", dir, CLUSTER_MAP_FILE, why);
		rc = -1;
	}
	free(text);
	return rc;
}

int
cluster_map_save(const char *dir, const struct cluster_map *m, char *err,
    size_t errlen)
{
	char	*text;
	size_t	 len;
	int	 rc;

	if ((text = cluster_map_format(m, &len)) == NULL) {
		snprintf(err, errlen, "cannot write %s/%s: out of memory", dir,
		    CLUSTER_MAP_FILE);
		return -1;
	}
	rc = fileio_write_small(dir, CLUSTER_MAP_FILE, text, len, err, errlen);
	free(text);
	return rc;
}
