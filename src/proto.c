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

enum proto_status
proto_split(const char *line, size_t len, struct request *req)
{
	size_t i = 0, start;

	req->argc = 0;
	if (memchr(line, '\0', len) != NULL)
		return PROTO_NUL;
	for (;;) {
		while (i < len && is_sep(line[i]))
			i++;
		if (i == len)
			break;
		if (req->argc == PROTO_MAX_TOKENS)
			return PROTO_TOO_MANY;
		start = i;
		while (i < len && !is_sep(line[i]))
			i++;
		req->argv[req->argc] = line + start;
		req->argl[req->argc] = i - start;
		req->argc++;
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
