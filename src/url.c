/*
 * url.c - host extraction; see url.h.
 */
#include <string.h>

#include "url.h"

static const char *
find_scheme_end(const char *key, size_t len)
{
	/* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://" */
	for (size_t i = 0; i < len; i++) {
		char c = key[i];

		if (c == ':')
			return (i > 0 && i + 2 < len && key[i + 1] == '/' &&
			    key[i + 2] == '/') ? key + i + 3 : NULL;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (i > 0 && ((c >= '0' && c <= '9') || c == '+' ||
		    c == '-' || c == '.'))))
			return NULL;
	}
	return NULL;
}

int
url_host(const char *key, size_t len, char *out)
{
	const char	*p = find_scheme_end(key, len), *end = key + len;
	const char	*auth_end, *at, *h, *hend;
	size_t		 n;

	if (p == NULL)
		return -1;
	/* the authority runs to the first "/", "?" or "#" */
	for (auth_end = p; auth_end < end; auth_end++)
		if (*auth_end == '/' || *auth_end == '?' || *auth_end == '#')
			break;
	/* userinfo ends at the last "@" of the authority */
	h = p;
	for (at = p; at < auth_end; at++)
		if (*at == '@')
			h = at + 1;
	if (h < auth_end && *h == '[') {
		hend = memchr(h, ']', (size_t)(auth_end - h));
		if (hend == NULL)
			return -1;
		h++;
	} else {
		for (hend = h; hend < auth_end && *hend != ':'; hend++)
			;
	}
	if (hend > h && hend[-1] == '.')
		hend--;
	n = (size_t)(hend - h);
	if (n == 0 || n > URL_HOST_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];

		out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	out[n] = '\0';
	return (int)n;
}
