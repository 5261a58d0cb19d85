/*
 * deadline.c - runtime filters' expiry deadlines and their file; see
 * deadline.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deadline.h"
#include "fileio.h"
#include "registry.h"

struct deadline *
deadline_find(const struct deadlines *d, const char *name, size_t len)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].namelen == len &&
		    memcmp(d->v[i].name, name, len) == 0)
			return &d->v[i];
	return NULL;
}

int
deadline_set(struct deadlines *d, const char *name, size_t len,
    int64_t at_ms)
{
	struct deadline *e;

	if ((e = deadline_find(d, name, len)) != NULL) {
		e->at_ms = at_ms;
		return 0;
	}
	if (len > CONFIG_NAME_MAX)
		return -1;
	if (d->n == d->slots) {
		size_t		 n = d->slots ? d->slots * 2 : 16;
		struct deadline	*grown;

		if ((grown = realloc(d->v, n * sizeof(*grown))) == NULL)
			return -1;
		d->v = grown;
		d->slots = n;
	}
	e = &d->v[d->n++];
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->namelen = len;
	e->at_ms = at_ms;
	return 0;
}

int
deadline_remove(struct deadlines *d, const char *name, size_t len)
{
	struct deadline *e = deadline_find(d, name, len);

	if (e == NULL)
		return 0;
	/* order does not matter: the last entry fills the hole */
	*e = d->v[--d->n];
	return 1;
}

int64_t
deadline_earliest(const struct deadlines *d)
{
	int64_t min = INT64_MAX;

	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].at_ms < min)
			min = d->v[i].at_ms;
	return min;
}

void
deadline_free(struct deadlines *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

int
deadline_format(const struct deadlines *d, char **text, size_t *len)
{
	/* a line: a name, a space, at most 20 characters, a newline */
	size_t	 cap = sizeof(DEADLINE_HEADER) + 32 +
	    d->n * (CONFIG_NAME_MAX + 24), n;
	char	*p;

	if ((p = malloc(cap)) == NULL)
		return -1;
	n = (size_t)snprintf(p, cap, "%s\n", DEADLINE_HEADER);
	for (size_t i = 0; i < d->n; i++)
		n += (size_t)snprintf(p + n, cap - n, "%s %" PRId64 "\n",
		    d->v[i].name, d->v[i].at_ms);
	n += (size_t)snprintf(p + n, cap - n, "end %zu\n", d->n);
	*text = p;
	*len = n;
	return 0;
}

/* A signed decimal that fills [s, s + len) and fits in int64_t. */
static int
parse_i64(const char *s, size_t len, int64_t *v)
{
	char	 tmp[24], *end;
	long long x;

	if (len == 0 || len >= sizeof(tmp) || s[0] == '+' ||
	    (s[0] == '-' && len == 1))
		return -1;
	for (size_t i = s[0] == '-'; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	x = strtoll(tmp, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*v = (int64_t)x;
	return 0;
}

int
deadline_parse(const char *text, size_t len, const char *name,
    struct deadlines *d, char *err, size_t errlen)
{
	const char	*p = text, *end = text + len, *nl, *sp;
	size_t		 line = 0, l;
	int64_t		 at, count;
	int		 ended = 0;

	deadline_free(d);
	while (p < end) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL) {
			snprintf(err, errlen, "%s: line %zu: no newline at the "
			    "end (the file is cut short)", name, line);
			goto bad;
		}
		l = (size_t)(nl - p);
		if (ended) {
			snprintf(err, errlen, "%s: line %zu: text after the "
			    "\"end\" line", name, line);
			goto bad;
		}
		if (line == 1) {
			if (l != strlen(DEADLINE_HEADER) ||
			    memcmp(p, DEADLINE_HEADER, l) != 0) {
				snprintf(err, errlen, "%s: line 1: not \"%s\" "
				    "(not a deadline file, or another version)",
				    name, DEADLINE_HEADER);
				goto bad;
			}
			p = nl + 1;
			continue;
		}
		if ((sp = memchr(p, ' ', l)) == NULL) {
			snprintf(err, errlen, "%s: line %zu: not \"<filter> "
			    "<unix ms>\" nor \"end <n>\"", name, line);
			goto bad;
		}
		if ((size_t)(sp - p) == 3 && memcmp(p, "end", 3) == 0) {
			if (parse_i64(sp + 1, (size_t)(nl - sp - 1),
			    &count) == -1 || count < 0 ||
			    (uint64_t)count != d->n) {
				snprintf(err, errlen, "%s: line %zu: \"end\" "
				    "does not give the %zu deadline(s) above "
				    "it", name, line, d->n);
				goto bad;
			}
			ended = 1;
			p = nl + 1;
			continue;
		}
		if (!registry_valid_name(p, (size_t)(sp - p))) {
			snprintf(err, errlen, "%s: line %zu: not a filter "
			    "name", name, line);
			goto bad;
		}
		if (parse_i64(sp + 1, (size_t)(nl - sp - 1), &at) == -1) {
			snprintf(err, errlen, "%s: line %zu: the deadline is "
			    "not a number of milliseconds", name, line);
			goto bad;
		}
		if (deadline_find(d, p, (size_t)(sp - p)) != NULL) {
			snprintf(err, errlen, "%s: line %zu: filter %.*s "
			    "appears twice", name, line, (int)(sp - p), p);
			goto bad;
		}
		if (deadline_set(d, p, (size_t)(sp - p), at) == -1) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto bad;
		}
		p = nl + 1;
	}
	if (line == 0) {
		snprintf(err, errlen, "%s: empty (not a deadline file)", name);
		goto bad;
	}
	if (!ended) {
		snprintf(err, errlen, "%s: no \"end\" line after line %zu "
		    "(the file is cut short)", name, line);
		goto bad;
	}
	return 0;
bad:
	deadline_free(d);
	return -1;
}

int
deadline_load(const char *dir, struct deadlines *d, char *err,
    size_t errlen)
{
	char	 path[PATH_MAX], *text;
	size_t	 len;
	int	 rc;

	deadline_free(d);
	rc = fileio_read_small(dir, DEADLINE_FILE, DEADLINE_FILE_MAX, &text,
	    &len, err, errlen);
	if (rc <= 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", dir, DEADLINE_FILE);
	rc = deadline_parse(text, len, path, d, err, errlen);
	free(text);
	return rc;
}

int
deadline_save(const char *dir, const struct deadlines *d, char *err,
    size_t errlen)
{
	char	 final[PATH_MAX], *text;
	size_t	 len;
	int	 rc;

	if (d->n == 0) {
		/* no deadline: no file */
		snprintf(final, sizeof(final), "%s/%s", dir, DEADLINE_FILE);
		if (unlink(final) == -1) {
			if (errno == ENOENT)
				return 0;
			snprintf(err, errlen, "unlink %s: %s", final,
			    strerror(errno));
			return -1;
		}
		if (fileio_sync_dir(dir) == -1) {
			snprintf(err, errlen, "fsync directory %s: %s", dir,
			    strerror(errno));
			return -1;
		}
		return 0;
	}
	if (deadline_format(d, &text, &len) == -1) {
		snprintf(err, errlen, "%s/%s: out of memory", dir,
		    DEADLINE_FILE);
		return -1;
	}
	rc = fileio_write_small(dir, DEADLINE_FILE, text, len, err, errlen);
	free(text);
	return rc;
}
