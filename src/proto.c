/*
 * proto.c - framing and tokenising of request lines; see proto.h.
 */
#include <string.h>

#include "proto.h"

long
proto_frame(const char *p, size_t len, size_t *next)
{
	const char	*nl = memchr(p, '\n', len);
	size_t		 n;

	if (nl == NULL)
		return -1;
	n = (size_t)(nl - p);
	*next = n + 1;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	return (long)n;
}

static int
is_sep(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * The common request has single spaces and no tabs: then each token ends at
 * the next space, which memchr finds many bytes at a time. Lines with a tab
 * take the byte-by-byte path.
 */
static const char *
token_end(const char *p, const char *end, int tabs)
{
	const char *q;

	if (!tabs)
		return (q = memchr(p, ' ', (size_t)(end - p))) ? q : end;
	while (p < end && !is_sep(*p))
		p++;
	return p;
}

enum proto_status
proto_split(const char *line, size_t len, struct request *req)
{
	const char	*p = line, *end = line + len, *q;
	int		 tabs;

	req->argc = 0;
	if (memchr(line, '\0', len) != NULL)
		return PROTO_NUL;
	tabs = memchr(line, '\t', len) != NULL;
	for (;;) {
		while (p < end && is_sep(*p))
			p++;
		if (p == end)
			break;
		if (req->argc == PROTO_MAX_TOKENS)
			return PROTO_TOO_MANY;
		q = token_end(p, end, tabs);
		req->argv[req->argc] = p;
		req->argl[req->argc] = (size_t)(q - p);
		req->argc++;
		p = q;
	}
	return req->argc == 0 ? PROTO_EMPTY : PROTO_OK;
}

int
proto_token_is(const char *tok, size_t len, const char *word)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = tok[i];

		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		if (word[i] == '\0' || c != word[i])
			return 0;
	}
	return word[i] == '\0';
}
