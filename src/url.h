/*
 * url.h - URL keys as the WHATWG URL Standard parses them: the host, for
 * routing, and a canonical form, for filters with "normalize = standard".
 * Neither allocates, except libidn2 for an internationalised host label.
 */
#ifndef SEEND_URL_H
#define SEEND_URL_H

#include <stddef.h>

#define URL_HOST_MAX	255	/* the DNS limit; longer hosts never route */

/*
 * Input longer than this that holds a tab, CR or LF (which WHATWG removes
 * anywhere) is not parsed: the copy without them lives on the stack.
 */
#define URL_SCRATCH	8192

/*
 * An output size that fits the normalised form of any key of len bytes that
 * url_normalize() accepts, but for a few IPv4 forms and IDN hosts that grow;
 * those that do not fit are reported as not normalisable.
 */
#define URL_NORMALIZE_CAP(len)	(3 * (len) + 64)

/*
 * Copies the host of key, as the WHATWG URL parser finds it, into out
 * (URL_HOST_MAX + 1 bytes, NUL-terminated): lower case, percent-decoded,
 * an international name in its xn-- (punycode) form, IPv4 in dotted decimal
 * (0x7f.1 is 127.0.0.1), IPv6 compressed and without brackets, and without
 * one trailing dot (hosts rules have none). For the special schemes (http,
 * https, ws, wss, ftp, file) a backslash ends the host as "/" does, so
 * "https://evil.example\@bbc.co.uk/" gives "evil.example". Userinfo and
 * port are dropped. Returns the host's length, or -1 if key is not a URL
 * (no scheme: bare keys never route by host), WHATWG rejects it, it has no
 * or an empty host, or the host is longer than URL_HOST_MAX.
 */
int	url_host(const char *key, size_t len, char out[URL_HOST_MAX + 1]);

/*
 * Writes the canonical form of the URL in[0..len) into out (outcap bytes,
 * NUL-terminated; URL_NORMALIZE_CAP(len) is enough but for rare IDN hosts
 * that grow more than 3 times): the WHATWG URL serialisation without the
 * fragment, and with percent-encoded unreserved characters decoded and
 * other escapes in upper case (RFC 3986 6.2.2).
 * Returns its length, or 0 if in is not a URL that parses (then the key is
 * used as given), its host is over 1 KiB, or the result does not fit.
 * Never writes past outcap. Normalising a result again gives the same
 * result, and url_host() of it is url_host() of in.
 */
size_t	url_normalize(const char *in, size_t len, char *out, size_t outcap);

#endif
