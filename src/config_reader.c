/*
 * config_reader.c - the config file as inih reads it: its lines, its
 * section headers, and which section's key table each key goes to.
 *
 * inih does the key = value splitting, but its handler is not told the line
 * number, and it truncates section names to 49 bytes (a 64-byte filter name
 * would silently lose its tail). So we feed it through our own ini_reader,
 * which counts lines and classifies each one exactly as inih is about to
 * (section header, continuation, key, syntax error): the handler runs before
 * the next line is read, so the reader's state is the state of the line
 * being handled, and section names come from the reader, uncut.
 *
 * Separate from config.c because it mirrors inih's own parsing (its options,
 * its find_chars_or_comment) and has to follow inih, not the meaning of any
 * key; it is the one file that includes <ini.h>.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config_parser.h"

/* ---- sections ---- */

/* The line holds "[name]": the name is between the brackets, untrimmed. */
static void
open_section(struct parser *p, const char *name, size_t len)
{
	char shownbuf[SHOWN_VALUE_MAX], namebuf[256];

	close_section(p);
	while (len > 0 && is_blank((unsigned char)*name)) {
		name++;
		len--;
	}
	while (len > 0 && is_blank((unsigned char)name[len - 1]))
		len--;
	if (len == 6 && memcmp(name, "server", 6) == 0) {
		if (p->server_line != 0)
			perror_at(p, p->lineno, "[server] appears twice, first "
			    "at line %d", p->server_line);
		else
			p->server_line = p->lineno;
		p->kind = SEC_SERVER;
		return;
	}
	if (len == 7 && memcmp(name, "cluster", 7) == 0) {
		if (p->cluster_line != 0)
			perror_at(p, p->lineno, "[cluster] appears twice, first "
			    "at line %d", p->cluster_line);
		else
			p->cluster_line = p->lineno;
		p->kind = SEC_CLUSTER;
		return;
	}
	if (len >= 7 && memcmp(name, "filter.", 7) == 0) {
		open_filter(p, name + 7, len - 7);
		return;
	}
	p->kind = SEC_SKIP;
	snprintf(namebuf, sizeof(namebuf), "%.*s", (int)len, name);
	perror_at(p, p->lineno, "unknown section [%s] (expected [server], "
	    "[cluster] or [filter.NAME])", shown(namebuf, shownbuf,
	    sizeof(shownbuf)));
}

/* ---- keys and lines ---- */

static const struct key_def *
find_key(const struct key_def *defs, size_t n, const char *name, size_t *idx)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(defs[i].name, name) == 0) {
			*idx = i;
			return &defs[i];
		}
	return NULL;
}

static int
handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser		*p = user;
	const struct key_def	*defs, *d;
	int			*seen;
	size_t			 n, i;

	(void)section;	/* cut at 49 bytes by inih; ours is whole */
	if (p->kind == SEC_SKIP)
		return 1;
	if (p->kind == SEC_NONE) {
		if (!p->cont)
			perror_at(p, p->lineno, "%s: key outside any section "
			    "(put it under [server] or [filter.NAME])",
			    SHOW(name));
		return 1;
	}
	if (p->kind == SEC_SERVER) {
		defs = server_keys;
		n = SK_COUNT;
		seen = p->server_keys;
	} else if (p->kind == SEC_CLUSTER) {
		defs = cluster_keys;
		n = CK_COUNT;
		seen = p->cluster_keys;
	} else {
		defs = filter_keys;
		n = FK_COUNT;
		seen = p->filter_keys;
	}
	if ((d = find_key(defs, n, name, &i)) == NULL) {
		/* a continuation of an unknown key was reported with it */
		if (!p->cont && *name == '\0')
			perror_at(p, p->lineno, "missing key name before "
			    "\"=\"");
		else if (!p->cont && p->kind == SEC_SERVER)
			perror_at(p, p->lineno, "unknown key \"%s\" in "
			    "[server]", SHOW(name));
		else if (!p->cont && p->kind == SEC_CLUSTER)
			perror_at(p, p->lineno, "unknown key \"%s\" in "
			    "[cluster]", SHOW(name));
		else if (!p->cont)
			perror_at(p, p->lineno, "unknown key \"%s\" in "
			    "[filter.%s]", SHOW(name), cur_filter(p)->name);
		return 1;
	}
	if (p->cont && !d->multi) {
		perror_at(p, p->lineno, "an indented line continues \"%s\", "
		    "which takes a single value (remove the indentation)",
		    d->name);
		return 1;
	}
	if (!d->multi && seen[i] != 0) {
		perror_at(p, p->lineno, "%s set twice, first at line %d",
		    d->name, seen[i]);
		return 1;
	}
	if (seen[i] == 0)
		seen[i] = p->lineno;
	d->fn(p, d->name, value);
	/* keep going: every error is collected, and inih would only
	 * remember the first line anyway */
	return 1;
}

/* inih's find_chars_or_comment(), so that we split lines as it does. */
static const char *
find_chars_or_comment(const char *s, const char *chars)
{
	int was_space = 0;

	while (*s != '\0' && (chars == NULL || strchr(chars, *s) == NULL) &&
	    !(INI_ALLOW_INLINE_COMMENTS && was_space &&
	    strchr(INI_INLINE_COMMENT_PREFIXES, *s) != NULL)) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

/*
 * Decides what inih will make of line, which it is about to parse, and
 * tracks the section. Mirrors ini_parse_stream() with the default options.
 */
static void
classify(struct parser *p, const char *line)
{
	const char	*s = line, *end;
	size_t		 len;

	p->cont = 0;
	if (INI_ALLOW_BOM && p->lineno == 1 &&
	    strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	while (isspace((unsigned char)*s))
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0 || strchr(INI_START_COMMENT_PREFIXES, *s) != NULL)
		return;
	if (INI_ALLOW_MULTILINE && p->have_prev && s > line) {
		p->cont = 1;
		return;
	}
	if (*s == '[') {
		end = find_chars_or_comment(s + 1, "]");
		if (*end != ']') {
			perror_at(p, p->lineno, "syntax error: section header "
			    "without \"]\"");
			goto syntax;
		}
		p->have_prev = 0;
		open_section(p, s + 1, (size_t)(end - s - 1));
		for (end++; (size_t)(end - s) < len; end++) {
			if (*end == ';' || *end == '#')
				break;
			if (!isspace((unsigned char)*end)) {
				perror_at(p, p->lineno, "unexpected text after "
				    "the section header");
				break;
			}
		}
		return;
	}
	end = find_chars_or_comment(s, "=:");
	if (*end == '=' || *end == ':') {
		p->have_prev = 1;
		return;
	}
	perror_at(p, p->lineno, "syntax error: expected \"key = value\", "
	    "\"[section]\" or a comment");
syntax:
	if (p->first_syntax == 0)
		p->first_syntax = p->lineno;
}

/* The next whole line, with its newline if it has one. */
static int
next_line(struct parser *p, const char **line, size_t *len)
{
	const char	*nl;
	ssize_t		 n;

	if (p->text != NULL) {
		if (*p->text == '\0')
			return -1;
		nl = strchr(p->text, '\n');
		*line = p->text;
		*len = nl != NULL ? (size_t)(nl - p->text) + 1 :
		    strlen(p->text);
		p->text += *len;
		return 0;
	}
	errno = 0;
	if ((n = getline(&p->buf, &p->bufsize, p->fp)) == -1) {
		if (ferror(p->fp))
			p->read_errno = errno ? errno : EIO;
		return -1;
	}
	*line = p->buf;
	*len = (size_t)n;
	return 0;
}

/*
 * Our ini_reader: reads whole lines ourselves so that a line too long for
 * inih's buffer is reported, not split into two lines at a random byte.
 */
static char *
reader(char *str, int num, void *stream)
{
	struct parser	*p = stream;
	const char	*line;
	size_t		 len, body;

	if (num < 3 || next_line(p, &line, &len) == -1)
		return NULL;
	p->lineno++;
	p->cont = 0;
	body = len;
	while (body > 0 && (line[body - 1] == '\n' || line[body - 1] == '\r'))
		body--;
	if (memchr(line, '\0', len) != NULL) {
		perror_at(p, p->lineno, "the line contains a NUL byte");
		strcpy(str, "\n");
	} else if (body + 3 > (size_t)num) {
		/* inih needs room for "\r\n\0" */
		perror_at(p, p->lineno, "the line is longer than %d bytes "
		    "(split a long hosts or prefixes list over several "
		    "lines)", num - 3);
		strcpy(str, "\n");
	} else {
		/* only the body, whose length was checked: a short line
		 * followed by hundreds of CRs must not overrun inih's buffer */
		memcpy(str, line, body);
		str[body] = '\n';
		str[body + 1] = '\0';
		classify(p, str);
	}
	return str;
}

/* ---- reading ---- */

int
config_read(struct parser *p)
{
	return ini_parse_stream(reader, p, handler, p);
}
