/*
 * registry.c - named filters, routing, reload diffing; see registry.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "registry.h"
#include "snapshot.h"
#include "url.h"

/*
 * Host rules live in one open-addressing table keyed by host ("a.com" for
 * an exact rule, "*.a.com" for a wildcard one), each holding the smallest
 * filter index that asked for it. A key's host is looked up once exactly and
 * once as "*.<suffix>" for each of its parent domains, so routing costs a few
 * hash probes however many hosts are configured. Prefix rules are few in
 * practice and are scanned in filter order.
 */
struct host_slot {
	char		*host;	/* NULL = empty slot */
	size_t		 len;
	size_t		 index;
};

struct prefix_rule {
	const char	*prefix;	/* points into the config */
	size_t		 len;
	size_t		 index;
	char		*copy;
};

struct route_table {
	struct host_slot	*slots;
	size_t			 mask;	/* nslots - 1, a power of two minus one */
	size_t			 nhosts;
	struct prefix_rule	*prefixes;
	size_t			 nprefixes;
};

static struct host_slot *
host_lookup(const struct route_table *rt, const char *h, size_t len)
{
	size_t i = (size_t)XXH3_64bits(h, len) & rt->mask;

	for (;; i = (i + 1) & rt->mask) {
		struct host_slot *s = &rt->slots[i];

		if (s->host == NULL ||
		    (s->len == len && memcmp(s->host, h, len) == 0))
			return s;
	}
}

static int
host_insert(struct route_table *rt, const char *h, size_t index)
{
	size_t			 len = strlen(h);
	struct host_slot	*s = host_lookup(rt, h, len);

	if (s->host != NULL) {
		if (index < s->index)
			s->index = index;
		return 0;
	}
	if ((s->host = strdup(h)) == NULL)
		return -1;
	s->len = len;
	s->index = index;
	rt->nhosts++;
	return 0;
}

static void
routes_free(struct route_table *rt)
{
	if (rt == NULL)
		return;
	for (size_t i = 0; rt->slots != NULL && i <= rt->mask; i++)
		free(rt->slots[i].host);
	for (size_t i = 0; i < rt->nprefixes; i++)
		free(rt->prefixes[i].copy);
	free(rt->slots);
	free(rt->prefixes);
	free(rt);
}

static struct route_table *
routes_build(const struct config *cfg)
{
	struct route_table	*rt;
	size_t			 nhosts = 0, npfx = 0, nslots = 16;

	for (size_t i = 0; i < cfg->nfilters; i++) {
		nhosts += cfg->filters[i].nhosts;
		npfx += cfg->filters[i].nprefixes;
	}
	if (nhosts == 0 && npfx == 0)
		return NULL;
	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return NULL;
	while (nslots < nhosts * 2)
		nslots *= 2;
	rt->mask = nslots - 1;
	rt->slots = calloc(nslots, sizeof(*rt->slots));
	rt->prefixes = calloc(npfx ? npfx : 1, sizeof(*rt->prefixes));
	if (rt->slots == NULL || rt->prefixes == NULL)
		goto fail;
	for (size_t i = 0; i < cfg->nfilters; i++) {
		const struct filter_config *fc = &cfg->filters[i];

		for (size_t j = 0; j < fc->nhosts; j++)
			if (host_insert(rt, fc->hosts[j], i) == -1)
				goto fail;
		for (size_t j = 0; j < fc->nprefixes; j++) {
			struct prefix_rule *pr = &rt->prefixes[rt->nprefixes];

			if ((pr->copy = strdup(fc->prefixes[j])) == NULL)
				goto fail;
			pr->prefix = pr->copy;
			pr->len = strlen(pr->copy);
			pr->index = i;
			rt->nprefixes++;
		}
	}
	return rt;
fail:
	routes_free(rt);
	return NULL;
}

/* The smallest filter index whose host rules match host, or SIZE_MAX. */
static size_t
routes_match_host(const struct route_table *rt, const char *host, size_t len)
{
	struct host_slot	*s;
	char			 wild[URL_HOST_MAX + 3];
	size_t			 best = SIZE_MAX;

	if (rt->nhosts == 0)
		return best;
	s = host_lookup(rt, host, len);
	if (s->host != NULL)
		best = s->index;
	/* "*.b.c" matches "a.b.c" and "x.a.b.c", never "b.c" itself */
	for (size_t i = 0; i < len; i++) {
		if (host[i] != '.')
			continue;
		wild[0] = '*';
		memcpy(wild + 1, host + i, len - i);
		s = host_lookup(rt, wild, len - i + 1);
		if (s->host != NULL && s->index < best)
			best = s->index;
	}
	return best;
}

static size_t
routes_match(const struct route_table *rt, const char *key, size_t len)
{
	char	 host[URL_HOST_MAX + 1];
	int	 hl;
	size_t	 best = SIZE_MAX;

	if (rt->nhosts > 0 && (hl = url_host(key, len, host)) > 0)
		best = routes_match_host(rt, host, (size_t)hl);
	for (size_t i = 0; i < rt->nprefixes; i++) {
		const struct prefix_rule *pr = &rt->prefixes[i];

		if (pr->index >= best)
			break;		/* rules are in filter order */
		if (pr->len <= len && memcmp(key, pr->prefix, pr->len) == 0) {
			best = pr->index;
			break;
		}
	}
	return best;
}

struct filter *
registry_route_rules(const struct registry *reg, const char *key,
    size_t len)
{
	size_t i;

	if (reg->routes != NULL &&
	    (i = routes_match(reg->routes, key, len)) != SIZE_MAX)
		return reg->filters[i];
	return reg->default_filter;
}

/*
 * Filters by name: open addressing with linear probing, at most half full,
 * deletion by shifting back the entries after the hole (no tombstones), so
 * a lookup is one hash and a probe or two however many filters there are.
 */
struct name_slot {
	struct filter	*f;	/* NULL = empty */
	uint64_t	 hash;
};

static uint64_t
name_hash(const char *name, size_t len)
{
	return XXH3_64bits(name, len);
}

static int
names_insert(struct registry *reg, struct filter *f)
{
	size_t		 len = strlen(f->name), i;
	uint64_t	 h = name_hash(f->name, len);

	if ((reg->nfilters + 1) * 2 > reg->names_mask + 1) {
		size_t			 n = (reg->names_mask + 1) * 2, j;
		struct name_slot	*ns, *old = reg->names;

		if (n < 16)
			n = 16;
		if ((ns = calloc(n, sizeof(*ns))) == NULL)
			return -1;
		for (j = 0; old != NULL && j <= reg->names_mask; j++) {
			if (old[j].f == NULL)
				continue;
			for (i = old[j].hash & (n - 1); ns[i].f != NULL;
			    i = (i + 1) & (n - 1))
				;
			ns[i] = old[j];
		}
		free(old);
		reg->names = ns;
		reg->names_mask = n - 1;
	}
	for (i = h & reg->names_mask; reg->names[i].f != NULL;
	    i = (i + 1) & reg->names_mask)
		;
	reg->names[i].f = f;
	reg->names[i].hash = h;
	return 0;
}

static void
names_delete(struct registry *reg, const struct filter *f)
{
	size_t i, j, k, m = reg->names_mask;

	for (i = name_hash(f->name, strlen(f->name)) & m;
	    reg->names[i].f != f; i = (i + 1) & m)
		if (reg->names[i].f == NULL)
			return;
	/* shift back every later entry of the run that may move into the
	 * hole: one whose home k is not cyclically in (i, j] */
	for (j = i;;) {
		reg->names[i].f = NULL;
		for (;;) {
			j = (j + 1) & m;
			if (reg->names[j].f == NULL)
				return;
			k = reg->names[j].hash & m;
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		reg->names[i] = reg->names[j];
		i = j;
	}
}

struct filter *
registry_find(const struct registry *reg, const char *name, size_t len)
{
	uint64_t	 h;
	size_t		 i;

	if (len > FILTER_NAME_MAX)
		return NULL;
	if (reg->names == NULL) {
		/* a registry put together by hand (a reload's list of every
		 * known filter): no index, a scan */
		for (i = 0; i < reg->nfilters; i++)
			if (memcmp(reg->filters[i]->name, name, len) == 0 &&
			    reg->filters[i]->name[len] == '\0')
				return reg->filters[i];
		return NULL;
	}
	h = name_hash(name, len);
	for (i = h & reg->names_mask; reg->names[i].f != NULL;
	    i = (i + 1) & reg->names_mask) {
		struct filter *f = reg->names[i].f;

		if (reg->names[i].hash == h &&
		    memcmp(f->name, name, len) == 0 && f->name[len] == '\0')
			return f;
	}
	return NULL;
}

int
registry_contains(const struct registry *reg, const struct filter *f)
{
	return registry_find(reg, f->name, strlen(f->name)) == f;
}

/* Appends f (its reference is the registry's) and indexes its name. */
static int
registry_append(struct registry *reg, struct filter *f)
{
	if (reg->nfilters == reg->slots) {
		size_t		 n = reg->slots ? reg->slots * 2 : 16;
		struct filter	**grown;

		if ((grown = realloc(reg->filters, n * sizeof(*grown))) == NULL)
			return -1;
		reg->filters = grown;
		reg->slots = n;
	}
	if (names_insert(reg, f) == -1)
		return -1;
	reg->filters[reg->nfilters++] = f;
	return 0;
}

int
registry_valid_name(const char *name, size_t len)
{
	if (len < 1 || len > FILTER_NAME_MAX || name[0] == '.')
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		    ch == '.' || ch == ':'))
			return 0;
	}
	return 1;
}

/* The runtime filters count against max_filters with the others. */
static struct filter *
runtime_add(struct registry *reg, const struct config *cfg, const char *name,
    const struct filter_shape *shape, int load, char *err, size_t errlen)
{
	struct filter *f;

	if (reg->nfilters >= cfg->max_filters) {
		snprintf(err, errlen, "max_filters (%u) reached", cfg->max_filters);
		return NULL;
	}
	f = load ? filter_open(name, shape, cfg->data_dir, err, errlen) :
	    filter_create(name, shape, err, errlen);
	if (f == NULL)
		return NULL;
	f->runtime = 1;
	if (registry_append(reg, f) == -1) {
		filter_unref(f);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return f;
}

int
registry_adopt(struct registry *reg, const struct config *cfg,
    struct filter *f, char *err, size_t errlen)
{
	if (!registry_valid_name(f->name, f->namelen)) {
		snprintf(err, errlen, "bad filter name");
		return -1;
	}
	if (registry_find(reg, f->name, f->namelen) != NULL) {
		snprintf(err, errlen, "item exists");
		return -1;
	}
	if (reg->nfilters >= cfg->max_filters) {
		snprintf(err, errlen, "max_filters (%u) reached", cfg->max_filters);
		return -1;
	}
	if (registry_append(reg, f) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	f->runtime = 1;
	return 0;
}

struct filter *
registry_create(struct registry *reg, const struct config *cfg,
    const char *name, size_t len, uint64_t capacity, double error_rate,
    unsigned growth, char *err, size_t errlen)
{
	return registry_create_type(reg, cfg, name, len, capacity, error_rate,
	    growth, FILTER_TYPE_BLOOM, err, errlen);
}

struct filter *
registry_create_type(struct registry *reg, const struct config *cfg,
    const char *name, size_t len, uint64_t capacity, double error_rate,
    unsigned growth, int type, char *err, size_t errlen)
{
	struct filter_shape	 shape;
	struct filter		*f;
	char			 fname[FILTER_NAME_MAX + 1];

	if (!registry_valid_name(name, len)) {
		snprintf(err, errlen, "bad filter name (1 to %d bytes of "
		    "letters, digits, _-.: not starting with '.')",
		    FILTER_NAME_MAX);
		return NULL;
	}
	memcpy(fname, name, len);
	fname[len] = '\0';
	memset(&shape, 0, sizeof(shape));
	shape.capacity = capacity;
	shape.error_rate = error_rate;
	shape.growth = growth;
	shape.type = type;
	if (type == FILTER_TYPE_CUCKOO && error_rate < FILTER_CUCKOO_RATE_MIN) {
		snprintf(err, errlen, "error rate %g is below what a cuckoo "
		    "filter gives (%g)", error_rate, FILTER_CUCKOO_RATE_MIN);
		return NULL;
	}
	if ((f = runtime_add(reg, cfg, fname, &shape, 0, err, errlen)) != NULL)
		f->reshapes = 1;	/* owes a snapshot, empty or not */
	return f;
}

void
registry_remove(struct registry *reg, struct filter *f)
{
	size_t i;

	for (i = 0; i < reg->nfilters && reg->filters[i] != f; i++)
		;
	if (i == reg->nfilters)
		return;
	names_delete(reg, f);
	memmove(reg->filters + i, reg->filters + i + 1,
	    (reg->nfilters - i - 1) * sizeof(*reg->filters));
	reg->nfilters--;
}

int
registry_load_runtime(struct registry *reg, const struct config *cfg,
    void (*warn)(const char *), char *err, size_t errlen)
{
	DIR			*d;
	struct dirent		*de;
	size_t			 sl = strlen(SNAPSHOT_SUFFIX), len;
	char			 path[PATH_MAX], msg[PATH_MAX + 600], why[512];

	if ((d = opendir(cfg->data_dir)) == NULL)
		return 0;	/* a missing data_dir holds nothing yet */
	while ((de = readdir(d)) != NULL) {
		struct snapshot_header	 hdr;
		struct filter_shape	 shape;
		char			 fname[FILTER_NAME_MAX + 1];
		int			 fd;

		len = strlen(de->d_name);
		if (len <= sl || strcmp(de->d_name + len - sl,
		    SNAPSHOT_SUFFIX) != 0 ||
		    !registry_valid_name(de->d_name, len - sl) ||
		    registry_find(reg, de->d_name, len - sl) != NULL)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", cfg->data_dir,
		    de->d_name) >= (int)sizeof(path) ||
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		if (snapshot_verify_fd(fd, &hdr, why, sizeof(why)) == -1) {
			close(fd);
			if (warn != NULL) {
				snprintf(msg, sizeof(msg), "%s: not loaded: %s",
				    path, why);
				warn(msg);
			}
			continue;
		}
		close(fd);
		memcpy(fname, de->d_name, len - sl);
		fname[len - sl] = '\0';
		memset(&shape, 0, sizeof(shape));
		shape.capacity = hdr.capacity;
		shape.error_rate = hdr.error_rate;
		shape.growth = hdr.growth;
		shape.expire = hdr.expire_ms / 1000;
		shape.type = hdr.cuckoo ? FILTER_TYPE_CUCKOO :
		    FILTER_TYPE_BLOOM;
		if (runtime_add(reg, cfg, fname, &shape, 1, why,
		    sizeof(why)) == NULL) {
			if (reg->nfilters >= cfg->max_filters) {
				closedir(d);
				snprintf(err, errlen, "%s: %s", path, why);
				return -1;
			}
			if (warn != NULL) {
				snprintf(msg, sizeof(msg), "%s: not loaded: %s",
				    path, why);
				warn(msg);
			}
		}
	}
	closedir(d);
	return 0;
}

void
registry_apply_settings(struct registry *reg, const struct config *cfg,
    void (*say)(const char *))
{
	char changes[400], msg[600];

	for (size_t i = 0; i < reg->nfilters && i < cfg->nfilters; i++) {
		struct filter *f = reg->filters[i];

		f->runtime = 0;		/* a section names it now */
		filter_reconfigure(f, &cfg->filters[i].shape, changes,
		    sizeof(changes));
		if (say == NULL || changes[0] == '\0')
			continue;
		snprintf(msg, sizeof(msg), "filter %s: %s; every key it holds "
		    "stays, new slices follow the new settings", f->name,
		    changes);
		say(msg);
	}
}

struct registry *
registry_build(const struct config *cfg, const struct registry *old,
    void (*warn)(const char *), char *err, size_t errlen)
{
	struct registry	*reg;
	struct filter	*f;

	(void)warn;
	if ((reg = calloc(1, sizeof(*reg))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < cfg->nfilters; i++) {
		const struct filter_config *fc = &cfg->filters[i];

		f = old ? registry_find(old, fc->name, strlen(fc->name)) : NULL;
		if (f != NULL && f->type != fc->shape.type) {
			snprintf(err, errlen, "[filter.%s]: type = %s, but the "
			    "running filter is a %s filter: a filter's type "
			    "cannot change (restore its type; or remove the "
			    "section, reload, move its snapshot away and add "
			    "the section again)",
			    fc->name, fc->shape.type == FILTER_TYPE_CUCKOO ?
			    "cuckoo" : "bloom", filter_is_cuckoo(f) ? "cuckoo" :
			    "bloom");
			goto fail;
		}
		if (f != NULL)
			filter_ref(f);
		else if ((f = filter_open(fc->name, &fc->shape, cfg->data_dir,
		    err, errlen)) == NULL)
			goto fail;
		if (registry_append(reg, f) == -1) {
			filter_unref(f);
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	/* runtime filters outlive a reload; a section that now names one
	 * makes it a config filter (taken above) */
	for (size_t i = 0; old != NULL && i < old->nfilters; i++) {
		f = old->filters[i];
		if (!f->runtime || registry_find(reg, f->name,
		    strlen(f->name)) != NULL)
			continue;
		filter_ref(f);
		if (registry_append(reg, f) == -1) {
			filter_unref(f);
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (cfg->default_filter != NULL)
		reg->default_filter = registry_find(reg, cfg->default_filter,
		    strlen(cfg->default_filter));
	reg->routes = routes_build(cfg);
	if (reg->routes == NULL && (cfg->nfilters > 0)) {
		/* NULL is also "no rules": tell the two apart */
		for (size_t i = 0; i < cfg->nfilters; i++)
			if (cfg->filters[i].nhosts || cfg->filters[i].nprefixes) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
	}
	return reg;
fail:
	registry_free(reg);
	return NULL;
}

void
registry_free(struct registry *reg)
{
	if (reg == NULL)
		return;
	for (size_t i = 0; i < reg->nfilters; i++)
		filter_unref(reg->filters[i]);
	routes_free(reg->routes);
	free(reg->names);
	free(reg->filters);
	free(reg);
}
