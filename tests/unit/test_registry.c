/*
 * test_registry.c - named filters, routing, reload diffing, reference counts
 * and snapshot loading.
 *
 * Configs come from config_load_string with a temporary data_dir and small
 * capacities, so every filter is a few KiB.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bloom.h"
#include "config.h"
#include "registry.h"
#include "snapshot.h"
#include "tap.h"

static char	 datadir[] = "/tmp/seend-test-registry.XXXXXX";
static char	 errbuf[1024];
static int	 nwarn;
static char	 lastwarn[1024];

static void
warn_cb(const char *msg)
{
	nwarn++;
	snprintf(lastwarn, sizeof(lastwarn), "%s", msg);
}

/* A config from printf-style text, after a [server] section that sets
 * data_dir (and default_filter if not NULL). NULL, with the errors shown,
 * if it does not load. */
static struct config *
cfg_make(const char *default_filter, const char *fmt, ...)
{
	struct config_errors	 errs;
	struct config		*cfg;
	char			*body, *text;
	va_list			 ap;

	va_start(ap, fmt);
	if (vasprintf(&body, fmt, ap) == -1)
		body = NULL;
	va_end(ap);
	if (body == NULL || asprintf(&text,
	    "[server]\n"
	    "data_dir = %s\n"
	    "%s%s%s"
	    "\n%s",
	    datadir,
	    default_filter ? "default_filter = " : "",
	    default_filter ? default_filter : "",
	    default_filter ? "\n" : "", body) == -1) {
		free(body);
		diag("out of memory");
		return NULL;
	}
	free(body);
	cfg = config_load_string(text, "test.conf", &errs);
	if (cfg == NULL) {
		diag("config_load_string failed on:\n%s", text);
		for (size_t i = 0; i < errs.n; i++)
			diag("  %s", errs.msgs[i]);
	}
	config_errors_free(&errs);
	free(text);
	return cfg;
}

static struct filter *
find(const struct registry *reg, const char *name)
{
	return registry_find(reg, name, strlen(name));
}

static struct filter *
route(const struct registry *reg, const char *key)
{
	return registry_route(reg, key, strlen(key));
}

/* "name of the filter key routes to", or "(null)" */
static const char *
route_name(const struct registry *reg, const char *key)
{
	struct filter *f = route(reg, key);

	return f ? f->name : "(null)";
}

static int
route_is(const struct registry *reg, const char *key, const char *want)
{
	struct filter *f = route(reg, key);

	if (want == NULL)
		return f == NULL;
	return f != NULL && strcmp(f->name, want) == 0;
}

static int
fadd(struct filter *f, const char *key)
{
	return filter_seen(f, filter_hash(f, key, strlen(key)));
}

static int
fcheck(struct filter *f, const char *key)
{
	return filter_check(f, filter_hash(f, key, strlen(key)));
}

static void
rm_datadir_files(void)
{
	DIR		*d = opendir(datadir);
	struct dirent	*e;
	char		 p[PATH_MAX];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", datadir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

/* ---- lookup by name ---- */

static void
test_find(void)
{
	struct config	*cfg;
	struct registry	*reg;

	cfg = cfg_make(NULL,
	    "[filter.default]\ncapacity = 1000\nerror_rate = 0.01\n"
	    "[filter.news]\ncapacity = 2000\nerror_rate = 0.001\n"
	    "[filter.news.v2]\ncapacity = 500\n");
	ok(cfg != NULL, "find: config loads");
	if (cfg == NULL)
		return;
	reg = registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf));
	ok(reg != NULL, "find: registry builds (%s)", reg ? "" : errbuf);
	if (reg == NULL) {
		config_free(cfg);
		return;
	}
	ok(reg->nfilters == 3, "find: 3 filters");
	ok(reg->nfilters == 3 && strcmp(reg->filters[0]->name, "default") == 0 &&
	    strcmp(reg->filters[1]->name, "news") == 0 &&
	    strcmp(reg->filters[2]->name, "news.v2") == 0,
	    "find: filters in file order");
	ok(find(reg, "news") == reg->filters[1], "find: exact name");
	ok(find(reg, "news.v2") == reg->filters[2], "find: dotted name");
	ok(find(reg, "News") == NULL, "find: case-sensitive");
	ok(find(reg, "de") == NULL, "find: \"de\" does not match \"default\"");
	ok(find(reg, "defaults") == NULL,
	    "find: \"defaults\" does not match \"default\"");
	ok(find(reg, "") == NULL, "find: empty name");
	ok(registry_find(reg, "newsroom", 4) == reg->filters[1],
	    "find: length-bounded (\"newsroom\", 4) is \"news\"");
	ok(registry_find(reg, "news.v2", 4) == reg->filters[1],
	    "find: (\"news.v2\", 4) is \"news\", not \"news.v2\"");
	{
		char long_name[200];

		memset(long_name, 'a', sizeof(long_name));
		ok(registry_find(reg, long_name, sizeof(long_name)) == NULL,
		    "find: 200-byte name not found");
	}
	ok(reg->default_filter == reg->filters[0],
	    "find: default_filter defaults to \"default\"");
	ok(reg->filters[1]->capacity == 2000 &&
	    reg->filters[1]->error_rate == 0.001 &&
	    reg->filters[2]->capacity == 500 &&
	    reg->filters[2]->error_rate == 0.001,
	    "find: shape from the config (error_rate default 0.001)");
	ok(reg->filters[0]->refs == 1 && reg->filters[0]->loaded_at == 0 &&
	    reg->filters[0]->last_save_ok == -1 &&
	    filter_count(reg->filters[0]) == 0 && !filter_dirty(reg->filters[0]),
	    "find: a new filter is empty, clean, never loaded");
	ok(reg->routes == NULL, "find: no rules, no route table");
	ok(route(reg, "https://a.com/") == reg->filters[0],
	    "find: without rules everything routes to default");
	registry_free(reg);
	config_free(cfg);
}

/* ---- routing ---- */

static void
test_route(void)
{
	struct config	*cfg;
	struct registry	*reg;

	cfg = cfg_make("default",
	    "[filter.default]\ncapacity = 1000\n"
	    "[filter.news]\ncapacity = 1000\n"
	    "hosts = bbc.co.uk *.x.com Exact.Example *.y.com a.z.com [2001:db8::1]\n"
	    "prefixes = https://news. urn:isbn:\n"
	    "[filter.blog]\ncapacity = 1000\n"
	    "hosts = blog.com a.y.com *.z.com\n"
	    "prefixes = https://bbc.co.uk/blog\n"
	    "[filter.pfirst]\ncapacity = 1000\n"
	    "prefixes = https://pf.\n"
	    "[filter.hlater]\ncapacity = 1000\n"
	    "hosts = pf.org blog.com\n");
	ok(cfg != NULL, "route: config loads");
	if (cfg == NULL)
		return;
	reg = registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf));
	ok(reg != NULL, "route: registry builds (%s)", reg ? "" : errbuf);
	if (reg == NULL) {
		config_free(cfg);
		return;
	}
#define R(key, want, what) \
	ok(route_is(reg, key, want), "route: %s: %s -> %s (got %s)", what, \
	    key, want ? want : "(null)", route_name(reg, key))
	R("https://bbc.co.uk/news/1", "news", "exact host");
	R("http://bbc.co.uk", "news", "exact host, no path");
	R("https://user:pw@bbc.co.uk:443/x", "news",
	    "exact host with userinfo and port");
	R("https://bbc.co.uk./x", "news", "exact host with trailing dot");
	R("https://www.bbc.co.uk/", "default",
	    "exact rule does not match a subdomain");
	R("https://co.uk/", "default", "exact rule does not match a parent");
	R("https://a.x.com/", "news", "wildcard *.x.com matches a.x.com");
	R("https://b.a.x.com/p", "news", "wildcard *.x.com matches b.a.x.com");
	R("https://x.com/", "default", "wildcard *.x.com does NOT match x.com");
	R("https://ax.com/", "default", "wildcard *.x.com does not match ax.com");
	R("https://x.com.evil/", "default",
	    "wildcard *.x.com does not match x.com.evil");
	R("https://BBC.Co.UK/", "news", "host match is case-insensitive");
	R("https://A.X.COM/", "news", "wildcard match is case-insensitive");
	R("https://exact.example/", "news",
	    "upper-case host in config matches lower-case URL");
	R("https://EXACT.EXAMPLE/", "news", "and upper-case URL");
	R("https://[2001:DB8::1]:8080/", "news", "IPv6 host rule");
	R("https://news.example.org/a", "news", "prefix rule");
	R("urn:isbn:0451450523", "news", "prefix rule on a non-URL key");
	R("HTTPS://NEWS.example.org/a", "default",
	    "prefix rules compare bytes (keys are case-sensitive)");
	R("https://news.", "news", "key equal to the prefix");
	R("https://news", "default", "key shorter than the prefix");
	R("https://blog.com/", "blog", "host of the third filter");
	R("https://bbc.co.uk/blog/1", "news",
	    "host rule (news, earlier) beats prefix rule (blog, later)");
	R("https://pf.org/", "pfirst",
	    "prefix rule (pfirst, earlier) beats host rule (hlater, later)");
	R("https://pf.net/", "pfirst", "prefix rule alone");
	R("https://a.y.com/", "news",
	    "wildcard (news, earlier) beats exact host (blog, later)");
	R("https://b.y.com/", "news", "wildcard *.y.com");
	R("https://a.z.com/", "news",
	    "exact host (news, earlier) beats wildcard (blog, later)");
	R("https://b.z.com/", "blog", "wildcard *.z.com");
	R("https://other.org/", "default", "unrouted URL -> default");
	R("not a url", "default", "unrouted non-URL -> default");
	R("", "default", "empty key -> default");
	{
		/* a host longer than URL_HOST_MAX never routes by host */
		char key[400];

		snprintf(key, sizeof(key), "https://%0300d.x.com/", 0);
		R(key, "default", "over-long host under *.x.com");
	}
	{
		/* a 255-byte host under *.x.com still routes */
		char key[400], host[256];

		memset(host, 'a', 249);
		for (int i = 50; i < 249; i += 50)
			host[i] = '.';
		memcpy(host + 249, ".x.com", 7);
		snprintf(key, sizeof(key), "https://%s/", host);
		ok(strlen(host) == 255, "route: host of 255 bytes built");
		R(key, "news", "255-byte host under *.x.com");
	}
	{
		/* not NUL-terminated: only len bytes count */
		const char k[] = "https://bbc.co.uk.evil/";

		ok(registry_route(reg, k, 17) == find(reg, "news"),
		    "route: length-bounded key \"https://bbc.co.uk\"");
	}
#undef R
	registry_free(reg);
	config_free(cfg);

	/* both orders of a host and a prefix rule with nothing else around */
	cfg = cfg_make(NULL,
	    "[filter.h]\ncapacity = 1000\nhosts = both.com\n"
	    "[filter.p]\ncapacity = 1000\nprefixes = https://both.com/\n");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	ok(reg != NULL && route_is(reg, "https://both.com/x", "h"),
	    "route: host first in file wins over a later prefix");
	registry_free(reg);
	config_free(cfg);
	cfg = cfg_make(NULL,
	    "[filter.p]\ncapacity = 1000\nprefixes = https://both.com/\n"
	    "[filter.h]\ncapacity = 1000\nhosts = both.com\n");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	ok(reg != NULL && route_is(reg, "https://both.com/x", "p"),
	    "route: prefix first in file wins over a later host");
	ok(reg != NULL && reg->default_filter == NULL &&
	    route(reg, "https://elsewhere/") == NULL,
	    "route: no \"default\" filter -> NULL");
	registry_free(reg);
	config_free(cfg);

	/* default_filter names a filter that does not exist */
	cfg = cfg_make("missing",
	    "[filter.default]\ncapacity = 1000\n"
	    "[filter.news]\ncapacity = 1000\nhosts = bbc.co.uk\n");
	ok(cfg != NULL, "route: default_filter may name a missing filter");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	ok(reg != NULL, "route: ... and the registry builds");
	if (reg != NULL) {
		ok(reg->default_filter == NULL, "route: default_filter is NULL");
		ok(route(reg, "https://other.org/") == NULL,
		    "route: unrouted key -> NULL");
		ok(route_is(reg, "https://bbc.co.uk/", "news"),
		    "route: routed key still routes");
	}
	registry_free(reg);
	config_free(cfg);

	/* a non-default default_filter */
	cfg = cfg_make("catchall",
	    "[filter.default]\ncapacity = 1000\n"
	    "[filter.catchall]\ncapacity = 1000\n");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	ok(reg != NULL && route_is(reg, "https://a/", "catchall"),
	    "route: default_filter = catchall");
	registry_free(reg);
	config_free(cfg);

	/* many hosts: the table grows and every one still routes */
	{
		char	*body = malloc(200000), *p = body;
		int	 bad = 0;

		/* config lines are short (inih): repeated "hosts =" lines
		 * and indented continuations both add to the list */
		p += sprintf(p, "[filter.default]\ncapacity = 1000\n"
		    "[filter.many]\ncapacity = 1000\n");
		for (int i = 0; i < 2000; i++)
			p += sprintf(p, "%s h%d.example%s", i % 5 == 0 ?
			    (i % 10 == 0 ? "\nhosts =" : "\n   ") : "", i,
			    i % 2 ? "" : ".org");
		p += sprintf(p, "\n[filter.wild]\ncapacity = 1000\n");
		for (int i = 0; i < 500; i++)
			p += sprintf(p, "%s *.w%d.net", i % 5 == 0 ?
			    "\nhosts =" : "", i);
		sprintf(p, "\n");
		cfg = cfg_make(NULL, "%s", body);
		free(body);
		reg = cfg ? registry_build(cfg, NULL, NULL, errbuf,
		    sizeof(errbuf)) : NULL;
		ok(reg != NULL, "route: 2500 host rules build");
		for (int i = 0; reg != NULL && i < 2000; i++) {
			char key[100];

			snprintf(key, sizeof(key), "https://H%d.example%s/", i,
			    i % 2 ? "" : ".org");
			if (!route_is(reg, key, "many") && bad++ < 5)
				diag("%s -> %s", key, route_name(reg, key));
			snprintf(key, sizeof(key), "https://h%d.example%s/", i,
			    i % 2 ? ".org" : "");
			if (!route_is(reg, key, "default") && bad++ < 5)
				diag("%s -> %s", key, route_name(reg, key));
		}
		for (int i = 0; reg != NULL && i < 500; i++) {
			char key[100];

			snprintf(key, sizeof(key), "https://a.b.w%d.net/", i);
			if (!route_is(reg, key, "wild") && bad++ < 5)
				diag("%s -> %s", key, route_name(reg, key));
			snprintf(key, sizeof(key), "https://w%d.net/", i);
			if (!route_is(reg, key, "default") && bad++ < 5)
				diag("%s -> %s", key, route_name(reg, key));
		}
		ok(reg != NULL && bad == 0,
		    "route: 5000 lookups in a big table (%d wrong)", bad);
		registry_free(reg);
		config_free(cfg);
	}
}

/* ---- reload diffing and reference counts ---- */

static void
test_reload(void)
{
	struct config	*c1, *c2, *c3;
	struct registry	*r1, *r2, *r3;
	struct filter	*def1, *news1, *blog1, *fresh2;
	uint64_t	 nblocks1;

	c1 = cfg_make(NULL,
	    "[filter.default]\ncapacity = 1000\nerror_rate = 0.01\n"
	    "[filter.news]\ncapacity = 1000\nerror_rate = 0.01\n"
	    "hosts = bbc.co.uk\n"
	    "[filter.blog]\ncapacity = 1000\nhosts = blog.com\n");
	c2 = cfg_make(NULL,
	    "[filter.fresh]\ncapacity = 1000\nhosts = bbc.co.uk\n"
	    "[filter.news]\ncapacity = 5000\nerror_rate = 0.01\n"
	    "hosts = cnn.com\n"
	    "[filter.default]\ncapacity = 1000\nerror_rate = 0.01\n");
	ok(c1 != NULL && c2 != NULL, "reload: configs load");
	if (c1 == NULL || c2 == NULL) {
		config_free(c1);
		config_free(c2);
		return;
	}
	r1 = registry_build(c1, NULL, warn_cb, errbuf, sizeof(errbuf));
	ok(r1 != NULL, "reload: first registry builds");
	if (r1 == NULL) {
		config_free(c1);
		config_free(c2);
		return;
	}
	def1 = find(r1, "default");
	news1 = find(r1, "news");
	blog1 = find(r1, "blog");
	nblocks1 = news1->head->bloom.nblocks;
	ok(fadd(news1, "https://bbc.co.uk/1") == 0 &&
	    fadd(def1, "https://other/1") == 0 && fadd(blog1, "b") == 0,
	    "reload: keys added to the old filters");
	ok(fcheck(news1, "https://bbc.co.uk/1"), "reload: key in old news");

	nwarn = 0;
	r2 = registry_build(c2, r1, warn_cb, errbuf, sizeof(errbuf));
	ok(r2 != NULL, "reload: second registry builds (%s)", r2 ? "" : errbuf);
	if (r2 == NULL) {
		registry_free(r1);
		config_free(c1);
		config_free(c2);
		return;
	}
	ok(find(r2, "news") == news1, "reload: kept \"news\" is the same struct");
	ok(find(r2, "default") == def1,
	    "reload: kept \"default\" is the same struct");
	ok(fcheck(find(r2, "news"), "https://bbc.co.uk/1") &&
	    fcheck(find(r2, "default"), "https://other/1"),
	    "reload: bits preserved in kept filters");
	ok(news1->refs == 2 && def1->refs == 2,
	    "reload: kept filters are referenced by both registries");
	fresh2 = find(r2, "fresh");
	ok(fresh2 != NULL && !registry_contains(r1, fresh2) &&
	    registry_contains(r2, fresh2) && fresh2->refs == 1,
	    "reload: new filter created, only in the new registry");
	ok(fresh2 != NULL && !fcheck(fresh2, "https://bbc.co.uk/1") &&
	    filter_count(fresh2) == 0, "reload: new filter starts empty");
	ok(find(r2, "blog") == NULL && !registry_contains(r2, blog1) &&
	    registry_contains(r1, blog1), "reload: removed filter dropped");
	ok(r2->nfilters == 3 && r2->filters[0] == fresh2 &&
	    r2->filters[1] == news1 && r2->filters[2] == def1,
	    "reload: new registry in the new file order");
	ok(nwarn == 0 && news1->capacity == 1000,
	    "reload: building does not change a kept filter (got %d)", nwarn);
	registry_apply_settings(r2, c2, warn_cb);
	ok(nwarn == 1, "reload: applying says exactly one change (got %d)",
	    nwarn);
	ok(nwarn >= 1 && strstr(lastwarn, "news") != NULL &&
	    strstr(lastwarn, "5000") != NULL && strstr(lastwarn, "1000") != NULL &&
	    strstr(lastwarn, "every key") != NULL,
	    "reload: the message names the filter, old and new capacity");
	diag("message: %s", lastwarn);
	ok(news1->capacity == 5000 && news1->error_rate == 0.01 &&
	    news1->nslices == 1 && news1->head->bloom.nblocks == nblocks1 &&
	    fcheck(news1, "https://bbc.co.uk/1"),
	    "reload: kept filter takes the new capacity for new slices and "
	    "keeps its slice and keys");
	ok(route_is(r2, "https://bbc.co.uk/2", "fresh") &&
	    route_is(r2, "https://cnn.com/", "news") &&
	    route_is(r2, "https://blog.com/", "default") &&
	    route_is(r1, "https://bbc.co.uk/2", "news"),
	    "reload: rules replaced in the new registry, old one unchanged");

	/* the old registry goes; the kept filters live on */
	registry_free(r1);
	ok(news1->refs == 1 && def1->refs == 1,
	    "reload: after freeing old, kept filters have one reference");
	ok(fcheck(news1, "https://bbc.co.uk/1") &&
	    fadd(news1, "https://cnn.com/2") == 0 &&
	    fcheck(find(r2, "news"), "https://cnn.com/2"),
	    "reload: kept filter usable after the old registry is freed");

	/* error_rate change alone; then both at once: one warning each */
	c3 = cfg_make(NULL,
	    "[filter.news]\ncapacity = 1000\nerror_rate = 0.001\n"
	    "[filter.default]\ncapacity = 1000\nerror_rate = 0.01\n"
	    "[filter.fresh]\ncapacity = 9999\nerror_rate = 0.2\n");
	nwarn = 0;
	r3 = c3 ? registry_build(c3, r2, warn_cb, errbuf, sizeof(errbuf)) : NULL;
	if (r3 != NULL)
		registry_apply_settings(r3, c3, warn_cb);
	ok(r3 != NULL && nwarn == 2,
	    "reload: error_rate change and capacity+error_rate change say "
	    "so once per filter (got %d)", nwarn);
	ok(r3 != NULL && find(r3, "fresh") == fresh2 &&
	    fresh2->capacity == 9999 && fresh2->error_rate == 0.2 &&
	    fresh2->nslices == 1,
	    "reload: ... and take the new settings, keeping the slice");
	registry_free(r3);

	/* the same config again: nothing to say */
	nwarn = 0;
	r3 = registry_build(c3, r2, warn_cb, errbuf, sizeof(errbuf));
	if (r3 != NULL)
		registry_apply_settings(r3, c3, warn_cb);
	ok(r3 != NULL && nwarn == 0, "reload: the same settings again say "
	    "nothing (got %d)", nwarn);
	registry_free(r3);
	{
		struct config *same = cfg_make(NULL,
		    "[filter.fresh]\ncapacity = 1000\n"
		    "[filter.news]\ncapacity = 1000\nerror_rate = 0.01\n"
		    "[filter.default]\ncapacity = 1000\nerror_rate = 0.01\n");

		nwarn = 0;
		r3 = same ? registry_build(same, r2, warn_cb, errbuf,
		    sizeof(errbuf)) : NULL;
		ok(r3 != NULL && nwarn == 0,
		    "reload: building alone never warns (got %d)", nwarn);
		registry_free(r3);
		config_free(same);
	}
	/* warn may be NULL */
	r3 = registry_build(c2, r2, NULL, errbuf, sizeof(errbuf));
	ok(r3 != NULL, "reload: warn may be NULL");
	registry_free(r3);

	/* a reload that drops everything */
	{
		struct config *none = cfg_make(NULL, "");

		r3 = none ? registry_build(none, r2, warn_cb, errbuf,
		    sizeof(errbuf)) : NULL;
		ok(r3 != NULL && r3->nfilters == 0 &&
		    r3->default_filter == NULL &&
		    route(r3, "https://bbc.co.uk/") == NULL,
		    "reload: config without filters gives an empty registry");
		ok(news1->refs == 1, "reload: and leaves old refs alone");
		registry_free(r3);
		config_free(none);
	}

	ok(news1->refs == 1 && def1->refs == 1 && fresh2->refs == 1,
	    "reload: refs back to 1 after the trial registries are freed");
	registry_free(r2);
	config_free(c1);
	config_free(c2);
	config_free(c3);
}

/* ---- snapshots ---- */

static int
write_file(const char *path, const void *p, size_t n)
{
	int	 fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int	 r;

	if (fd == -1)
		return -1;
	r = write(fd, p, n) == (ssize_t)n ? 0 : -1;
	close(fd);
	return r;
}

static char *
read_file(const char *path, size_t *n)
{
	struct stat	 st;
	char		*p;
	int		 fd = open(path, O_RDONLY);

	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || (p = malloc((size_t)st.st_size + 1)) ==
	    NULL) {
		close(fd);
		return NULL;
	}
	*n = (size_t)st.st_size;
	if (read(fd, p, *n) != (ssize_t)*n) {
		free(p);
		p = NULL;
	}
	close(fd);
	return p;
}

static void
test_snapshot(void)
{
	struct bloom	 b;
	struct config	*cfg, *bad;
	struct registry	*reg, *r2;
	struct filter	*f, *news;
	char		 path[PATH_MAX], key[64], *orig, *now;
	size_t		 n, n2;
	int		 missing = 0, fps = 0;

	rm_datadir_files();
	ok(bloom_create(&b, 1000, 0.01, bloom_random_seed()) == 0,
	    "snapshot: a filter to save");
	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "https://saved/%d", i);
		bloom_add(&b, bloom_hash(&b, key, strlen(key)));
	}
	ok(snapshot_write(datadir, "snap", &b, 1000, 0.01, b.count, b.bits_set,
	    errbuf, sizeof(errbuf)) == 0, "snapshot: written (%s)", errbuf);
	snapshot_path(path, sizeof(path), datadir, "snap");
	ok(access(path, R_OK) == 0, "snapshot: %s exists", path);

	cfg = cfg_make(NULL,
	    "[filter.default]\ncapacity = 1000\n"
	    "[filter.snap]\ncapacity = 1000\nerror_rate = 0.01\n");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	ok(reg != NULL, "snapshot: registry builds (%s)", reg ? "" : errbuf);
	if (reg == NULL) {
		bloom_free(&b);
		config_free(cfg);
		return;
	}
	f = find(reg, "snap");
	for (int i = 0; i < 500; i++) {
		snprintf(key, sizeof(key), "https://saved/%d", i);
		if (!fcheck(f, key))
			missing++;
		snprintf(key, sizeof(key), "https://never/%d", i);
		fps += fcheck(f, key);
	}
	ok(missing == 0, "snapshot: all 500 saved keys present after load "
	    "(%d missing)", missing);
	ok(fps < 25, "snapshot: absent keys mostly absent (%d/500)", fps);
	ok(f->loaded_at != 0, "snapshot: loaded_at set");
	ok(find(reg, "default")->loaded_at == 0,
	    "snapshot: filter without a file has loaded_at 0");
	ok(f->seed == b.seed && f->nslices == 1 &&
	    f->head->bloom.nblocks == b.nblocks &&
	    f->head->bloom.count == b.count &&
	    f->head->bloom.bits_set == b.bits_set,
	    "snapshot: seed, shape, count and bits_set restored");
	ok(!filter_dirty(f) && f->last_save_ok == 1 && f->last_save != 0,
	    "snapshot: a loaded filter is clean with a last save time");
	ok(fadd(f, "https://new/1") == 0 && filter_dirty(f),
	    "snapshot: a new key makes it dirty");

	/* a kept filter is not reloaded from its file on reload */
	{
		struct bloom	 empty;

		bloom_create(&empty, 1000, 0.01, 42);
		snapshot_write(datadir, "snap", &empty, 1000, 0.01, 0, 0,
		    errbuf, sizeof(errbuf));
		bloom_free(&empty);
		r2 = registry_build(cfg, reg, NULL, errbuf, sizeof(errbuf));
		ok(r2 != NULL && find(r2, "snap") == f &&
		    fcheck(f, "https://saved/1") && fcheck(f, "https://new/1"),
		    "snapshot: reload keeps the running filter, ignores its "
		    "file");
		registry_free(r2);
	}
	registry_free(reg);
	config_free(cfg);

	/* damaged: one flipped byte in the bit array */
	ok(snapshot_write(datadir, "snap", &b, 1000, 0.01, b.count, b.bits_set,
	    errbuf, sizeof(errbuf)) == 0, "snapshot: rewritten");
	orig = read_file(path, &n);
	ok(orig != NULL && n > SNAPSHOT_HEADER_SIZE + 8, "snapshot: read back "
	    "(%zu bytes)", n);
	if (orig == NULL) {
		bloom_free(&b);
		return;
	}
	orig[SNAPSHOT_HEADER_SIZE + 10] ^= 0x01;
	write_file(path, orig, n);

	/* the damaged file belongs to a new filter in a reload: the build
	 * fails and the old registry is untouched */
	cfg = cfg_make(NULL, "[filter.default]\ncapacity = 1000\n");
	reg = cfg ? registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	bad = cfg_make(NULL,
	    "[filter.default]\ncapacity = 1000\n"
	    "[filter.snap]\ncapacity = 1000\nerror_rate = 0.01\n");
	errbuf[0] = '\0';
	r2 = (reg && bad) ? registry_build(bad, reg, NULL, errbuf,
	    sizeof(errbuf)) : (struct registry *)1;
	ok(r2 == NULL, "snapshot: damaged snapshot -> registry_build NULL");
	ok(strstr(errbuf, path) != NULL || strstr(errbuf, "snap.bloom") != NULL,
	    "snapshot: the message names the file");
	diag("error: %s", errbuf);
	ok(reg != NULL && reg->nfilters == 1 && reg->filters[0]->refs == 1,
	    "snapshot: failed reload leaves the old registry untouched");
	now = read_file(path, &n2);
	ok(now != NULL && n2 == n && memcmp(now, orig, n) == 0,
	    "snapshot: the damaged file is not modified");
	free(now);

	/* damaged at first start */
	errbuf[0] = '\0';
	r2 = bad ? registry_build(bad, NULL, NULL, errbuf, sizeof(errbuf)) :
	    (struct registry *)1;
	ok(r2 == NULL && strstr(errbuf, "snap.bloom") != NULL,
	    "snapshot: damaged snapshot at start -> NULL naming the file");

	/* truncated */
	write_file(path, orig, n - 1);
	errbuf[0] = '\0';
	r2 = bad ? registry_build(bad, NULL, NULL, errbuf, sizeof(errbuf)) :
	    (struct registry *)1;
	ok(r2 == NULL && strstr(errbuf, "snap.bloom") != NULL,
	    "snapshot: truncated snapshot -> NULL naming the file");
	diag("error: %s", errbuf);

	/* empty file */
	write_file(path, "", 0);
	errbuf[0] = '\0';
	r2 = bad ? registry_build(bad, NULL, NULL, errbuf, sizeof(errbuf)) :
	    (struct registry *)1;
	ok(r2 == NULL && strstr(errbuf, "snap.bloom") != NULL,
	    "snapshot: empty snapshot file -> NULL naming the file");
	diag("error: %s", errbuf);

	/* a whole, valid snapshot whose shape the config no longer asks
	 * for */
	snapshot_write(datadir, "snap", &b, 1000, 0.01, b.count, b.bits_set,
	    errbuf, sizeof(errbuf));
	{
		struct config *other = cfg_make(NULL,
		    "[filter.snap]\ncapacity = 100000\nerror_rate = 0.01\n");

		errbuf[0] = '\0';
		r2 = other ? registry_build(other, NULL, NULL, errbuf,
		    sizeof(errbuf)) : (struct registry *)1;
		ok(r2 == NULL && strstr(errbuf, "snap.bloom") != NULL,
		    "snapshot: shape mismatch -> NULL naming the file");
		diag("error: %s", errbuf);
		if (r2 != NULL && r2 != (struct registry *)1)
			registry_free(r2);
		config_free(other);
	}

	/* and the good file loads next to a filter named like it */
	news = NULL;
	r2 = bad ? registry_build(bad, NULL, NULL, errbuf, sizeof(errbuf)) :
	    NULL;
	if (r2 != NULL)
		news = find(r2, "snap");
	ok(news != NULL && fcheck(news, "https://saved/0"),
	    "snapshot: restored file loads again");
	registry_free(r2);

	free(orig);
	registry_free(reg);
	config_free(cfg);
	config_free(bad);
	bloom_free(&b);
	rm_datadir_files();
}

/* Runtime filters: O(1) names, removal, reload keeps them, max_filters. */
static void
test_runtime(void)
{
	struct config	*cfg, *cfg2;
	struct registry	*reg, *reg2;
	struct filter	*f;
	char		 name[32];
	int		 found = 0, kept = 0;

	rm_datadir_files();
	cfg = cfg_make(NULL, "max_filters = 1100\n[filter.a]\ncapacity = 1000\n");
	if (cfg == NULL) {
		ok(0, "runtime: config loads");
		return;
	}
	reg = registry_build(cfg, NULL, NULL, errbuf, sizeof(errbuf));
	ok(reg != NULL, "runtime: registry builds");
	if (reg == NULL) {
		config_free(cfg);
		return;
	}
	ok(!registry_valid_name(".x", 2), "a name starting with '.' is refused");
	ok(!registry_valid_name("a/b", 3), "a name with '/' is refused");
	ok(!registry_valid_name("", 0), "an empty name is refused");
	ok(registry_valid_name("crawl:v1.a-b_c", 14),
	    "letters, digits, _-.: make a name");
	ok(registry_create(reg, cfg, "../x", 4, 1000, 0.01, 2, errbuf,
	    sizeof(errbuf)) == NULL, "registry_create refuses ../x");
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "rt:%d", i);
		if (registry_create(reg, cfg, name, strlen(name), 1000, 0.01,
		    2, errbuf, sizeof(errbuf)) == NULL) {
			diag("create %s: %s", name, errbuf);
			break;
		}
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "rt:%d", i);
		f = registry_find(reg, name, strlen(name));
		found += f != NULL && strcmp(f->name, name) == 0 && f->runtime;
	}
	ok(found == 1000, "1000 runtime filters are found by name (%d)", found);
	ok(registry_find(reg, "a", 1) != NULL, "the config filter too");
	f = registry_find(reg, "rt:500", 6);
	registry_remove(reg, f);
	filter_unref(f);
	ok(registry_find(reg, "rt:500", 6) == NULL, "a removed name is gone");
	found = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "rt:%d", i);
		found += registry_find(reg, name, strlen(name)) != NULL;
	}
	ok(found == 999, "the others are still found after a removal (%d)",
	    found);
	/* a reload keeps runtime filters */
	cfg2 = cfg_make(NULL, "max_filters = 1100\n[filter.a]\n"
	    "capacity = 1000\n");
	reg2 = registry_build(cfg2, reg, NULL, errbuf, sizeof(errbuf));
	ok(reg2 != NULL, "a reload builds");
	for (int i = 0; reg2 != NULL && i < 1000; i++) {
		snprintf(name, sizeof(name), "rt:%d", i);
		f = registry_find(reg2, name, strlen(name));
		kept += f != NULL && f == registry_find(reg, name,
		    strlen(name));
	}
	ok(kept == 999, "the reload keeps every runtime filter, bits and all "
	    "(%d)", kept);
	while (reg2 != NULL && reg2->nfilters < cfg2->max_filters)
		if (registry_create(reg2, cfg2, "more", 4, 1000, 0.01, 2,
		    errbuf, sizeof(errbuf)) == NULL ||
		    registry_create(reg2, cfg2, name, 0, 1000, 0.01, 2, errbuf,
		    sizeof(errbuf)) != NULL)
			break;
	ok(reg2 != NULL && registry_create(reg2, cfg2, "over", 4, 1000, 0.01,
	    2, errbuf, sizeof(errbuf)) == NULL && strstr(errbuf,
	    "max_filters") != NULL, "max_filters bounds runtime filters");
	registry_free(reg2);
	registry_free(reg);
	config_free(cfg2);
	config_free(cfg);
}

int
main(void)
{
	if (mkdtemp(datadir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	log_set_level(LOG_LEVEL_WARN);
	test_find();
	test_route();
	test_reload();
	test_snapshot();
	test_runtime();
	rm_datadir_files();
	rmdir(datadir);
	return done_testing();
}
