/*
 * test_url.c - url_host: the host of a key, for routing.
 */
#include <string.h>

#include "tap.h"
#include "url.h"

/* url_host(key) == want (want NULL: -1). The output buffer is poisoned and
 * guarded to catch writes past URL_HOST_MAX + 1 bytes. */
static void
check(const char *key, const char *want, const char *what)
{
	char	 buf[URL_HOST_MAX + 1 + 16];
	int	 n;

	memset(buf, 'Z', sizeof(buf));
	n = url_host(key, strlen(key), buf);
	if (want == NULL) {
		ok(n == -1, "%s: -1 (got %d)", what, n);
		return;
	}
	ok(n == (int)strlen(want) && strcmp(buf, want) == 0 &&
	    buf[URL_HOST_MAX + 1] == 'Z', "%s: \"%s\" (got %d \"%.*s\")", what,
	    want, n, n > 0 ? n : 0, buf);
}

static void
test_schemes(void)
{
	check("http://example.com/", "example.com", "http");
	check("https://example.com/path?q=1#f", "example.com", "https");
	check("ftp://ftp.example.org/pub/file", "ftp.example.org", "ftp");
	check("git+ssh://git.example.com/repo", "git.example.com",
	    "scheme with +");
	check("x-custom.v2://h.example/", "h.example", "scheme with - . digit");
	check("a://h", "h", "one-letter scheme, host to the end");
	check("HTTPS://Example.COM/Path", "example.com",
	    "upper-case scheme and host, host lowered");
	check("https://example.com", "example.com", "no path");
	check("https://a.b.c.d.e.example.co.uk/", "a.b.c.d.e.example.co.uk",
	    "many labels");
	check("https://192.0.2.1:8080/", "192.0.2.1", "IPv4 with port");
}

static void
test_authority(void)
{
	check("https://user:pw@host.com/", "host.com", "userinfo skipped");
	check("https://user@host.com/", "host.com", "user without password");
	check("https://a@b@host.com/", "host.com", "last @ wins");
	check("https://u:p@evil.com@good.com:443/", "good.com",
	    "last @ wins, then port stripped");
	check("https://user@host.com/x@y.com", "host.com",
	    "@ in the path does not count");
	check("https://host.com?q=a@b.com", "host.com",
	    "@ in the query does not count");
	check("https://host.com#a@b.com", "host.com",
	    "@ in the fragment does not count");
	check("https://host.com:8443/x", "host.com", "port stripped");
	check("https://host.com:/x", "host.com", "empty port stripped");
	check("https://[::1]:80/", "::1", "IPv6 literal with port");
	check("https://[2001:DB8::1]/x", "2001:db8::1",
	    "IPv6 literal lowered, brackets dropped");
	check("https://u@[::1]:80", "::1", "userinfo before IPv6 literal");
	check("https://a.com?x", "a.com", "query right after host");
	check("https://a.com#f", "a.com", "fragment right after host");
	check("https://a.com/", "a.com", "path right after host");
	check("https://a.com./x", "a.com", "trailing dot removed");
	check("https://a.com.:80/x", "a.com", "trailing dot before port removed");
	check("https://A.COM.", "a.com", "trailing dot at the end removed");
}

static void
test_invalid(void)
{
	char	 host[256], key[400], out[URL_HOST_MAX + 1];
	int	 n;

	check("example.com/path", NULL, "no scheme");
	check("https:/example.com/", NULL, "one slash");
	check("https:example.com", NULL, "no slashes");
	check("mailto:x@example.com", NULL, "mailto:");
	check("mailto:x", NULL, "mailto:x");
	check("https:///path", NULL, "empty host");
	check("https://", NULL, "nothing after ://");
	check("https://?q", NULL, "empty host before query");
	check("https://#f", NULL, "empty host before fragment");
	check("https://user@/x", NULL, "empty host after userinfo");
	check("https://:80/x", NULL, "empty host before port");
	check("https://./", NULL, "host of only a dot");
	check("https://[]/", NULL, "empty IPv6 literal");
	check("https://[::1/x", NULL, "unterminated [");
	check("https://[::1", NULL, "unterminated [ at end");
	check("1http://a.com/", NULL, "scheme starting with a digit");
	check("+http://a.com/", NULL, "scheme starting with +");
	check("://a.com/", NULL, "empty scheme");
	check("ht tp://a.com/", NULL, "space in scheme");
	check("h_t://a.com/", NULL, "underscore in scheme");
	check("", NULL, "empty key");
	check("https", NULL, "scheme only");
	check("https:", NULL, "scheme and colon");
	check("https:/", NULL, "scheme, colon, one slash");

	/* 255 bytes of host is the limit */
	memset(host, 'a', 255);
	for (int i = 63; i < 255; i += 64)
		host[i] = '.';
	host[255] = '\0';
	snprintf(key, sizeof(key), "https://%s/x", host);
	check(key, host, "host of 255 bytes");
	snprintf(key, sizeof(key), "https://%s./x", host);
	check(key, host, "host of 255 bytes plus trailing dot");
	snprintf(key, sizeof(key), "https://%sb/x", host);
	check(key, NULL, "host of 256 bytes");
	snprintf(key, sizeof(key), "https://%sbbbbbbbbbbbbbbbbbbbb", host);
	check(key, NULL, "host of 275 bytes");

	/* length-bounded: bytes after len do not belong to the key */
	n = url_host("https://a.com.evil/x", 13, out);
	ok(n == 5 && strcmp(out, "a.com") == 0,
	    "length-bounded: \"https://a.com\" of a longer buffer");
	n = url_host("https://a.com", 7, out);
	ok(n == -1, "length-bounded: \"https:/\" cut before the second slash");
	n = url_host("https://[::1]", 12, out);
	ok(n == -1, "length-bounded: ] beyond len is not seen");
}

int
main(void)
{
	test_schemes();
	test_authority();
	test_invalid();
	return done_testing();
}
