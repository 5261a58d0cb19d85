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
registry_apply_settings(struct registry *reg, const struct config *cfg,
    void (*say)(const char *))
{
	char changes[400], msg[600];

	for (size_t i = 0; i < reg->nfilters && i < cfg->nfilters; i++) {
		struct filter *f = reg->filters[i];

		filter_reconfigure(f, &cfg->filters[i], changes,
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
		if (f != NULL)
			filter_ref(f);
		else if ((f = filter_open(fc, cfg->data_dir, err,
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
