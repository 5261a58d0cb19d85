/*
 * config_filter.c - the [filter.NAME] sections of the config file: a
 * section's header (its name, its defaults), its keys (capacity,
 * error_rate, growth, expire, normalize, hosts, prefixes) and its end (can
 * its first slice be allocated at all?).
 *
 * Separate from config.c because this is the part of the parser that knows
 * what a filter is: it fills a struct filter_shape and asks filter.c to plan
 * it. parse_rate and parse_growth are here too, and [server]'s
 * new_filter_error_rate and new_filter_growth use them, so that a runtime
 * filter's settings are read as a section's are.
 */
#include <sys/socket.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "config.h"
#include "config_parser.h"
#include "filter.h"
#include "url.h"

#define DEFAULT_CAPACITY	1000000
#define DEFAULT_ERROR_RATE	0.001
#define DEFAULT_GROWTH		2
#define MAX_GROWTH		16

#define MIN_ERROR_RATE		1e-9
#define MAX_ERROR_RATE		0.5
#define HOST_LABEL_MAX		63

/* ---- names and hosts ---- */

int
config_valid_filter_name(const char *name, size_t len)
{
	if (name == NULL || len == 0 || len > FILTER_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x80 && (isalnum(c) || c == '_' || c == '-'))
			continue;
		/* a filter name becomes a file name in data_dir: a leading
		 * dot could make it ".", ".." or a hidden file */
		if (c == '.' && i > 0)
			continue;
		return 0;
	}
	return 1;
}

/*
 * One hosts entry, lower-cased into out (URL_HOST_MAX + 3 bytes): "a.b",
 * "*.a.b", or an IPv6 address without brackets, as url_host() gives them.
 * Returns NULL, or why it is not a host.
 */
static const char *
normalize_host(const char *tok, char *out)
{
	size_t		 len = strlen(tok), start = 0, label = 0;
	unsigned char	 in6[16];

	if (len > URL_HOST_MAX + 2)
		return "is too long";
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = (unsigned char)tok[i];

		if (c >= 0x80)
			return "is not ASCII (write an international name in "
			    "its xn-- form)";
		out[i] = (char)tolower(c);
	}
	if (out[0] == '[' || strchr(out, ':') != NULL) {
		/* an IPv6 literal; URLs bracket it, url_host() does not */
		if (out[0] == '[') {
			if (len < 3 || out[len - 1] != ']')
				return "is not a valid [IPv6] address";
			memmove(out, out + 1, len - 2);
			out[len - 2] = '\0';
		}
		if (inet_pton(AF_INET6, out, in6) != 1)
			return "is not a valid IPv6 address";
		return NULL;
	}
	if (strcmp(out, "*") == 0)
		return "would match every host (keys that no rule routes go "
		    "to default_filter)";
	if (out[0] == '*') {
		if (out[1] != '.')
			return "has \"*\" not followed by \".\" (write "
			    "\"*.example.com\")";
		start = 2;
	}
	if (strchr(out + start, '*') != NULL)
		return "has a \"*\" that is not a leading \"*.\"";
	if (len - start > URL_HOST_MAX)
		return "is longer than 255 bytes";
	for (size_t i = start; i <= len; i++) {
		unsigned char c = (unsigned char)out[i];

		if (c == '.' || c == '\0') {
			if (label == 0)
				return "has an empty label (\"..\", or a "
				    "leading or trailing \".\")";
			if (label > HOST_LABEL_MAX)
				return "has a label longer than 63 bytes";
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return "has a character not allowed in a host name";
		label++;
	}
	return NULL;
}

/* ---- [filter.NAME] keys ---- */

static void
key_capacity(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (get_number(p, key, v, UNIT_COUNT, 1, 1000000000000ULL, &n) == 0)
		cur_filter(p)->shape.capacity = n;
	else
		p->filter_bad = 1;
}

/* A decimal error rate in [1e-9, 0.5]: 0, or -1 after saying why. */
int
parse_rate(struct parser *p, const char *key, const char *v, double *out)
{
	char	*end;
	double	 d;

	/* decimal only: strtod would also take "inf", "nan" and hex */
	if (*v == '\0' || v[strspn(v, "0123456789.eE+-")] != '\0')
		goto bad;
	errno = 0;
	d = strtod(v, &end);
	if (*end != '\0' || end == v)
		goto bad;
	if (!(d >= MIN_ERROR_RATE && d <= MAX_ERROR_RATE)) {
		perror_at(p, p->lineno, "%s: \"%s\" is out of range (1e-9 to "
		    "0.5)", key, SHOW(v));
		return -1;
	}
	*out = d;
	return 0;
bad:
	perror_at(p, p->lineno, "%s: \"%s\" is not a number (expected a "
	    "decimal fraction such as 0.001 or 1e-4)", key, SHOW(v));
	return -1;
}

static void
key_error_rate(struct parser *p, const char *key, const char *v)
{
	if (parse_rate(p, key, v, &cur_filter(p)->shape.error_rate) == -1)
		p->filter_bad = 1;
}

/* A growth factor, or "off" (0): 0, or -1 after saying why. */
int
parse_growth(struct parser *p, const char *key, const char *v, unsigned *out)
{
	uint64_t n;

	if (strcmp(v, "off") == 0) {
		*out = 0;
		return 0;
	}
	if (get_number(p, key, v, UNIT_COUNT, 1, MAX_GROWTH, &n) == -1)
		return -1;
	*out = (unsigned)n;
	return 0;
}

static void
key_growth(struct parser *p, const char *key, const char *v)
{
	if (parse_growth(p, key, v, &cur_filter(p)->shape.growth) == -1)
		p->filter_bad = 1;
}

static void
key_expire(struct parser *p, const char *key, const char *v)
{
	uint64_t n;

	if (is_off(v)) {
		cur_filter(p)->shape.expire = 0;
		return;
	}
	if (get_number(p, key, v, UNIT_SECONDS, 1, MAX_SECONDS * 10, &n) == 0)
		cur_filter(p)->shape.expire = n;
	else
		p->filter_bad = 1;
}

/* Calls fn for each whitespace-separated word of v. */
static void
each_word(struct parser *p, const char *key, const char *v,
    void (*fn)(struct parser *, const char *, char *))
{
	char	*copy, *w, *save = NULL;

	if ((copy = xstrdup(p, v)) == NULL)
		return;
	for (w = strtok_r(copy, " \t\r\n\v\f", &save); w != NULL;
	    w = strtok_r(NULL, " \t\r\n\v\f", &save))
		fn(p, key, w);
	free(copy);
}

static void
add_host(struct parser *p, const char *key, char *w)
{
	struct filter_config	*f = cur_filter(p);
	char			 host[URL_HOST_MAX + 3];
	const char		*why;

	if ((why = normalize_host(w, host)) != NULL) {
		perror_at(p, p->lineno, "%s: \"%s\" %s", key, SHOW(w), why);
		return;
	}
	push_string(p, &f->hosts, &f->nhosts, host);
}

static void
add_prefix(struct parser *p, const char *key, char *w)
{
	struct filter_config *f = cur_filter(p);

	(void)key;
	push_string(p, &f->prefixes, &f->nprefixes, w);
}

static void
key_hosts(struct parser *p, const char *key, const char *v)
{
	each_word(p, key, v, add_host);
}

static void
key_prefixes(struct parser *p, const char *key, const char *v)
{
	each_word(p, key, v, add_prefix);
}

static void
key_normalize(struct parser *p, const char *key, const char *v)
{
	if (strcasecmp(v, "off") == 0)
		cur_filter(p)->shape.normalize = FILTER_NORMALIZE_OFF;
	else if (strcasecmp(v, "standard") == 0)
		cur_filter(p)->shape.normalize = FILTER_NORMALIZE_STANDARD;
	else
		perror_at(p, p->lineno, "%s: \"%s\" is not one of off, standard",
		    key, SHOW(v));
}

static void
key_type(struct parser *p, const char *key, const char *v)
{
	if (strcasecmp(v, "bloom") == 0)
		cur_filter(p)->shape.type = FILTER_TYPE_BLOOM;
	else if (strcasecmp(v, "cuckoo") == 0)
		cur_filter(p)->shape.type = FILTER_TYPE_CUCKOO;
	else {
		perror_at(p, p->lineno, "%s: \"%s\" is not one of bloom, "
		    "cuckoo", key, SHOW(v));
		p->filter_bad = 1;
	}
}

const struct key_def filter_keys[FK_COUNT] = {
	[FK_CAPACITY] = { "capacity", key_capacity, 0 },
	[FK_ERROR_RATE] = { "error_rate", key_error_rate, 0 },
	[FK_HOSTS] = { "hosts", key_hosts, 1 },
	[FK_PREFIXES] = { "prefixes", key_prefixes, 1 },
	[FK_GROWTH] = { "growth", key_growth, 0 },
	[FK_EXPIRE] = { "expire", key_expire, 0 },
	[FK_NORMALIZE] = { "normalize", key_normalize, 0 },
	[FK_TYPE] = { "type", key_type, 0 },
};

/* ---- the section ---- */

/*
 * A cuckoo filter's section: no window (a table cannot drop a period's
 * keys), a rate a table of 16-bit fingerprints can give, a size that can
 * be allocated.
 */
static void
close_cuckoo(struct parser *p, struct filter_config *f)
{
	uint64_t	 cap, nbuckets;
	uint32_t	 bits;
	double		 rate;

	if (f->shape.expire > 0) {
		perror_at(p, p->filter_keys[FK_EXPIRE], "[filter.%s]: expire "
		    "is not available with type = cuckoo (a cuckoo filter "
		    "forgets keys by FORGET, not by time)", f->name);
		return;
	}
	if (f->shape.error_rate < FILTER_CUCKOO_RATE_MIN) {
		perror_at(p, p->filter_keys[FK_ERROR_RATE] ?
		    p->filter_keys[FK_ERROR_RATE] : f->line, "[filter.%s]: "
		    "error_rate %g is below what type = cuckoo gives (%g)",
		    f->name, f->shape.error_rate, FILTER_CUCKOO_RATE_MIN);
		return;
	}
	filter_first_shape(f->shape.capacity, f->shape.error_rate,
	    f->shape.growth, 0, &cap, &rate);
	if (rate < FILTER_CUCKOO_RATE_MIN)
		rate = FILTER_CUCKOO_RATE_MIN;
	if (cuckoo_plan(cap, rate, &nbuckets, &bits) == 0)
		return;
	perror_at(p, p->filter_keys[FK_CAPACITY] ?
	    p->filter_keys[FK_CAPACITY] : f->line, "[filter.%s]: capacity %llu "
	    "at error_rate %g needs more than 1 TiB of memory", f->name,
	    (unsigned long long)f->shape.capacity, f->shape.error_rate);
}

/* The end of a filter section: can its bits be allocated at all? */
void
close_section(struct parser *p)
{
	struct filter_config	*f;
	uint64_t		 nblocks, cap;
	uint32_t		 hashes;
	double			 rate;
	int			 line;

	if (p->kind != SEC_FILTER || p->filter_bad)
		return;
	f = cur_filter(p);
	if (f->shape.type == FILTER_TYPE_CUCKOO) {
		close_cuckoo(p, f);
		return;
	}
	filter_first_shape(f->shape.capacity, f->shape.error_rate,
	    f->shape.growth, (int64_t)f->shape.expire * 1000, &cap, &rate);
	if (bloom_plan(cap, rate, &nblocks, &hashes) == 0)
		return;
	line = p->filter_keys[FK_CAPACITY] ? p->filter_keys[FK_CAPACITY] :
	    p->filter_keys[FK_ERROR_RATE] ? p->filter_keys[FK_ERROR_RATE] :
	    f->line;
	perror_at(p, line, "[filter.%s]: capacity %llu at error_rate %g needs "
	    "more than 1 TiB of memory", f->name,
	    (unsigned long long)f->shape.capacity, f->shape.error_rate);
}

void
open_filter(struct parser *p, const char *name, size_t len)
{
	struct config		*cfg = p->cfg;
	struct filter_config	*f, *nf;
	char			 shownbuf[SHOWN_VALUE_MAX], namebuf[256];

	p->kind = SEC_SKIP;
	snprintf(namebuf, sizeof(namebuf), "%.*s", (int)len, name);
	if (!config_valid_filter_name(name, len)) {
		perror_at(p, p->lineno, "[filter.%s]: invalid filter name "
		    "(letters, digits, \"_\", \"-\" and, not first, \".\"; at "
		    "most %d)", shown(namebuf, shownbuf, sizeof(shownbuf)),
		    FILTER_NAME_MAX);
		return;
	}
	for (size_t i = 0; i < cfg->nfilters; i++)
		if (strcmp(cfg->filters[i].name, namebuf) == 0) {
			perror_at(p, p->lineno, "[filter.%s] defined twice, "
			    "first at line %d", namebuf, cfg->filters[i].line);
			return;
		}
	if (cfg->nfilters >= CONFIG_MAX_FILTERS) {
		perror_at(p, p->lineno, "[filter.%s]: too many filters (at "
		    "most %d)", namebuf, CONFIG_MAX_FILTERS);
		return;
	}
	if (cfg->nfilters == 0 || (cfg->nfilters >= 8 &&
	    (cfg->nfilters & (cfg->nfilters - 1)) == 0)) {
		nf = reallocarray(cfg->filters, cfg->nfilters == 0 ? 8 :
		    cfg->nfilters * 2, sizeof(*nf));
		if (nf == NULL) {
			p->oom = 1;
			return;
		}
		cfg->filters = nf;
	}
	f = &cfg->filters[cfg->nfilters];
	memset(f, 0, sizeof(*f));
	memcpy(f->name, name, len);
	f->line = p->lineno;
	f->shape.capacity = DEFAULT_CAPACITY;
	f->shape.error_rate = DEFAULT_ERROR_RATE;
	f->shape.growth = DEFAULT_GROWTH;
	p->cur = cfg->nfilters++;
	p->kind = SEC_FILTER;
	p->filter_bad = 0;
	memset(p->filter_keys, 0, sizeof(p->filter_keys));
}
