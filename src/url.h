/*
 * url.h - the host part of a URL, for routing. No allocation.
 */
#ifndef SEEND_URL_H
#define SEEND_URL_H

#include <stddef.h>

#define URL_HOST_MAX	255	/* the DNS limit; longer hosts never route */

/*
 * Copies the lower-cased host of key ("scheme://[user@]host[:port]/...")
 * into out (URL_HOST_MAX + 1 bytes, NUL-terminated), without brackets for
 * IPv6 literals and without a trailing dot. Returns its length, or -1 if the
 * key has no "://", an empty host, or a host longer than URL_HOST_MAX.
 */
int	url_host(const char *key, size_t len, char *out);

#endif
