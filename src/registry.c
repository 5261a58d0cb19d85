/*
 * registry.c - named filters, routing, reload diffing; see registry.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

struct filter *
registry_find(const struct registry *reg, const char *name, size_t len)
{
	/* Linear: a handful of filters, and names are short. */
	if (len > CONFIG_NAME_MAX)
		return NULL;
	for (size_t i = 0; i < reg->nfilters; i++) {
		struct filter *f = reg->filters[i];

		if (memcmp(f->name, name, len) == 0 && f->name[len] == '\0' &&
		    memchr(name, '\0', len) == NULL)
			return f;
	}
	return NULL;
}

int
registry_contains(const struct registry *reg, const struct filter *f)
{
	for (size_t i = 0; i < reg->nfilters; i++)
		if (reg->filters[i] == f)
			return 1;
	return 0;
}

void
filter_ref(struct filter *f)
{
	f->refs++;
}

void
filter_unref(struct filter *f)
{
	if (--f->refs > 0)
		return;
	bloom_free(&f->bloom);
	free(f);
}

int
filter_dirty(const struct filter *f)
{
	return f->bloom.bits_set != f->saved_bits || f->saved_gen != f->dir_gen;
}

/* A new filter: its snapshot if there is one, else an empty array. */
static struct filter *
filter_open(const struct filter_config *fc, const char *dir, char *err,
    size_t errlen)
{
	struct filter		*f;
	struct snapshot_header	 hdr;
	char			 path[PATH_MAX];
	uint64_t		 nblocks = 0;
	uint32_t		 hashes;
	int			 r;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		snprintf(err, errlen, "filter %s: out of memory", fc->name);
		return NULL;
	}
	snprintf(f->name, sizeof(f->name), "%s", fc->name);
	f->capacity = fc->capacity;
	f->error_rate = fc->error_rate;
	f->refs = 1;
	f->last_save_ok = -1;
	if (snapshot_path(path, sizeof(path), dir, fc->name) == -1) {
		snprintf(err, errlen, "filter %s: data_dir path too long",
		    fc->name);
		free(f);
		return NULL;
	}
	r = snapshot_load(path, fc->capacity, fc->error_rate, &f->bloom, &hdr,
	    err, errlen);
	if (r == -1) {
		free(f);
		return NULL;
	}
	if (r == 1) {
		f->loaded_at = time(NULL);
		f->saved_bits = f->bloom.bits_set;
		f->last_save = (time_t)hdr.created;
		f->last_save_ok = 1;
		return f;
	}
	if (bloom_plan(fc->capacity, fc->error_rate, &nblocks, &hashes) == -1 ||
	    bloom_init(&f->bloom, nblocks, hashes, bloom_random_seed()) == -1 ||
	    bloom_populate(&f->bloom) == -1) {
		snprintf(err, errlen, "filter %s: cannot allocate its %llu-byte "
		    "bit array: %s", fc->name,
		    (unsigned long long)nblocks * BLOOM_BLOCK_BYTES,
		    strerror(errno));
		bloom_free(&f->bloom);
		free(f);
		return NULL;
	}
	return f;
}

static void
warn_shape_change(const struct filter *f, const struct filter_config *fc,
    void (*warn)(const char *))
{
	char msg[512];

	if (warn == NULL ||
	    (f->capacity == fc->capacity && f->error_rate == fc->error_rate))
		return;
	snprintf(msg, sizeof(msg),
	    "filter %s: capacity=%llu error_rate=%g cannot be applied to a "
	    "running filter; it keeps capacity=%llu error_rate=%g. To resize, "
	    "remove the filter from the config and reload (its snapshot is "
	    "saved), move %s%s out of data_dir, then add it back with the new "
	    "values and reload (it starts empty)",
	    f->name, (unsigned long long)fc->capacity, fc->error_rate,
	    (unsigned long long)f->capacity, f->error_rate, f->name,
	    SNAPSHOT_SUFFIX);
	warn(msg);
}

struct registry *
registry_build(const struct config *cfg, const struct registry *old,
    void (*warn)(const char *), char *err, size_t errlen)
{
	struct registry	*reg;
	struct filter	*f;

	if ((reg = calloc(1, sizeof(*reg))) == NULL ||
	    (reg->filters = calloc(cfg->nfilters ? cfg->nfilters : 1,
	    sizeof(*reg->filters))) == NULL) {
		free(reg);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < cfg->nfilters; i++) {
		const struct filter_config *fc = &cfg->filters[i];

		f = old ? registry_find(old, fc->name, strlen(fc->name)) : NULL;
		if (f != NULL) {
			filter_ref(f);
			warn_shape_change(f, fc, warn);
		} else if ((f = filter_open(fc, cfg->data_dir, err,
		    errlen)) == NULL)
			goto fail;
		reg->filters[reg->nfilters++] = f;
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
	free(reg->filters);
	free(reg);
}
