/*
 * config_value.c - the errors and the values of the config file: what
 * config.c (the [server] keys, loading), config_filter.c (the
 * [filter.NAME] sections) and config_reader.c (inih's side) all use, and
 * that uses none of them: an error recorded with its file:line, a value
 * shown safely in a message, strings copied, and the numbers with their
 * units (k M G T, K M G T bytes, s m h d).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_parser.h"

/* ---- errors ---- */

static void
push_error(struct parser *p, int line, char *msg)
{
	struct config_errors	*e = p->errs;
	char			**n;
	int			*nl;

	p->nerrors++;
	if (e == NULL) {
		free(msg);
		return;
	}
	if ((nl = reallocarray(p->lines, e->n + 1, sizeof(*nl))) == NULL) {
		free(msg);
		p->oom = 1;
		return;
	}
	p->lines = nl;
	if ((n = reallocarray(e->msgs, e->n + 1, sizeof(*n))) == NULL) {
		free(msg);
		p->oom = 1;
		return;
	}
	e->msgs = n;
	p->lines[e->n] = line;
	e->msgs[e->n++] = msg;
}

/*
 * Puts the messages in line order: a filter's size can only be judged at
 * the end of its section, after the errors of the lines below its capacity.
 * Stable, and linear on the nearly sorted lists we make.
 */
void
sort_errors(struct parser *p)
{
	struct config_errors	*e = p->errs;
	char			*msg;
	int			 line;
	size_t			 j;

	if (e == NULL || p->lines == NULL)
		return;
	for (size_t i = 1; i < e->n; i++) {
		msg = e->msgs[i];
		line = p->lines[i];
		for (j = i; j > 0 && p->lines[j - 1] > line; j--) {
			e->msgs[j] = e->msgs[j - 1];
			p->lines[j] = p->lines[j - 1];
		}
		e->msgs[j] = msg;
		p->lines[j] = line;
	}
}

/* Records "name:line: message" (or "name: message" for line 0). */
void
perror_at(struct parser *p, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg, *full;
	int	 r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r == -1) {
		p->nerrors++;
		p->oom = 1;
		return;
	}
	if (line > 0)
		r = asprintf(&full, "%s:%d: %s", p->name, line, msg);
	else
		r = asprintf(&full, "%s: %s", p->name, msg);
	free(msg);
	if (r == -1) {
		p->nerrors++;
		p->oom = 1;
		return;
	}
	push_error(p, line, full);
}

/*
 * A value as it goes into a message: quoted by the caller, cut short, and
 * with control and non-ASCII bytes shown as '?', so that a binary file given
 * by mistake cannot write escape sequences onto the operator's terminal.
 */
const char *
shown(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < size; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	if (s[i] != '\0' && size > 4)
		memcpy(buf + size - 4, "...", 4);
	return buf;
}

char *
xstrdup(struct parser *p, const char *s)
{
	char *d;

	if ((d = strdup(s)) == NULL)
		p->oom = 1;
	return d;
}

/* Replaces *dst by a copy of s (or by NULL). */
void
set_string(struct parser *p, char **dst, const char *s)
{
	char *d = NULL;

	if (s != NULL && (d = xstrdup(p, s)) == NULL)
		return;
	free(*dst);
	*dst = d;
}

/* Appends s to a string list, growing it by doubling. */
int
push_string(struct parser *p, char ***list, size_t *n, const char *s)
{
	char	**nl;
	char	 *d;

	if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0)) {
		nl = reallocarray(*list, *n == 0 ? 8 : *n * 2, sizeof(*nl));
		if (nl == NULL) {
			p->oom = 1;
			return -1;
		}
		*list = nl;
	}
	if ((d = xstrdup(p, s)) == NULL)
		return -1;
	(*list)[(*n)++] = d;
	return 0;
}

/* ---- values ---- */

/* "off", "none" or "never". */
int
is_off(const char *v)
{
	return strcmp(v, "off") == 0 || strcmp(v, "none") == 0 ||
	    strcmp(v, "never") == 0;
}


int
is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\v' || c == '\f';
}

static uint64_t
suffix_scale(char c, enum unit u)
{
	static const char	 letters[] = "kmgt";
	const char		*l;
	uint64_t		 scale = 1;

	if (u == UNIT_SECONDS) {
		/* lower case only: "5M" must not be read as 5 minutes
		 * by someone who meant 5 million */
		switch (c) {
		case 's': return 1;
		case 'm': return 60;
		case 'h': return 3600;
		case 'd': return 86400;
		default: return 0;
		}
	}
	if (c == '\0' ||
	    (l = strchr(letters, tolower((unsigned char)c))) == NULL)
		return 0;
	for (const char *q = letters; q <= l; q++)
		scale *= u == UNIT_BYTES ? 1024 : 1000;
	return scale;
}

/*
 * A non-negative integer with an optional one-letter suffix. Returns 0,
 * -1 if it is not a number, -2 if it does not fit in 64 bits.
 */
static int
parse_number(const char *s, enum unit u, uint64_t *out)
{
	uint64_t	 v = 0, scale = 1;
	const char	*q = s;
	int		 big = 0;

	if (!isdigit((unsigned char)*q))
		return -1;
	for (; isdigit((unsigned char)*q); q++)
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*q - '0'), &v))
			big = 1;
	if (*q != '\0') {
		if (q[1] != '\0' || (scale = suffix_scale(*q, u)) == 0)
			return -1;
	}
	if (big || __builtin_mul_overflow(v, scale, &v))
		return -2;
	*out = v;
	return 0;
}

int
config_parse_count(const char *s, uint64_t *out)
{
	return parse_number(s, UNIT_COUNT, out) == 0 ? 0 : -1;
}

int
config_parse_duration(const char *s, uint64_t *out)
{
	return parse_number(s, UNIT_SECONDS, out) == 0 ? 0 : -1;
}

/* "64M" for a round number of bytes, else plain digits; for range texts. */
static const char *
amount(uint64_t v, enum unit u, char *buf, size_t size)
{
	static const char letters[] = "KMGT";
	int i = -1;

	if (u == UNIT_BYTES)
		while (i < 3 && v >= 1024 && v % 1024 == 0) {
			v /= 1024;
			i++;
		}
	if (i >= 0)
		snprintf(buf, size, "%llu%c", (unsigned long long)v,
		    letters[i]);
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

#define AMOUNT(v, u)	amount((v), (u), (char[32]){ 0 }, 32)

/* An integer key in [min, max]; reports and returns -1 if it is not. */
int
get_number(struct parser *p, const char *key, const char *value, enum unit u,
    uint64_t min, uint64_t max, uint64_t *out)
{
	static const char *const hint[] = {
		[UNIT_COUNT] = "an integer, optionally with k, M, G or T "
		    "(thousands, millions, ...)",
		[UNIT_BYTES] = "a number of bytes, optionally with K, M, G "
		    "or T (1024, 1024^2, ...)",
		[UNIT_SECONDS] = "a number of seconds, optionally with s, "
		    "m, h or d",
	};
	uint64_t v;

	switch (parse_number(value, u, &v)) {
	case -1:
		perror_at(p, p->lineno, "%s: \"%s\" is not a number (expected "
		    "%s)", key, SHOW(value), hint[u]);
		return -1;
	case -2:
		perror_at(p, p->lineno, "%s: \"%s\" is too large (at most %s)",
		    key, SHOW(value), AMOUNT(max, u));
		return -1;
	}
	if (v < min || v > max) {
		perror_at(p, p->lineno, "%s: \"%s\" is out of range "
		    "(%s to %s%s)", key, SHOW(value), AMOUNT(min, u),
		    AMOUNT(max, u), u == UNIT_BYTES ? " bytes" :
		    u == UNIT_SECONDS ? " seconds" : "");
		return -1;
	}
	*out = v;
	return 0;
}
