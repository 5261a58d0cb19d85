/*
 * test_config.c - the config loader: defaults, every key's valid and bad
 * values, and that each problem is reported as "file:LINE: key ...".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "tap.h"

#define NAME	"t.conf"

static struct config_errors errs;

/*
 * config_load* overwrite errs without freeing it (it may be garbage), so
 * every load here goes through these two, which free the last messages.
 */
static struct config *
load_file(const char *path)
{
	config_errors_free(&errs);
	return config_load(path, &errs);
}

/* Loads text as NAME; errors stay in errs until the next call. */
static struct config *
load(const char *text)
{
	config_errors_free(&errs);
	return config_load_string(text, NAME, &errs);
}

static void
dump_errors(void)
{
	for (size_t i = 0; i < errs.n; i++)
		diag("  %s", errs.msgs[i]);
}

/* 1 if some message starts with "t.conf:LINE: " and contains needle. */
static int
has_error(int line, const char *needle)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), NAME ":%d: ", line);
	for (size_t i = 0; i < errs.n; i++)
		if (strncmp(errs.msgs[i], prefix, strlen(prefix)) == 0 &&
		    strstr(errs.msgs[i], needle) != NULL)
			return 1;
	return 0;
}

/* text must fail, with an error at line that mentions needle. */
static void
bad(const char *text, int line, const char *needle, const char *what)
{
	struct config *cfg = load(text);

	if (!ok(cfg == NULL && has_error(line, needle),
	    "rejected: %s (line %d mentions \"%s\")", what, line, needle))
		dump_errors();
	config_free(cfg);
}

/* A [server] section with one key = value: line 2 is the key. */
static void
bad_server(const char *key, const char *value, const char *what)
{
	char text[512];

	snprintf(text, sizeof(text), "[server]\n%s = %s\n", key, value);
	bad(text, 2, key, what);
}

/* A [filter.f] section with one key = value: line 2 is the key. */
static void
bad_filter(const char *key, const char *value, const char *what)
{
	char text[512];

	snprintf(text, sizeof(text), "[filter.f]\n%s = %s\n", key, value);
	bad(text, 2, key, what);
}

static struct config *
good(const char *text, const char *what)
{
	struct config *cfg = load(text);

	if (!ok(cfg != NULL && errs.n == 0, "accepted: %s", what))
		dump_errors();
	return cfg;
}

static struct config *
good_server(const char *key, const char *value)
{
	char text[512], what[600];

	snprintf(text, sizeof(text), "[server]\n%s = %s\n", key, value);
	snprintf(what, sizeof(what), "[server] %s = %s", key, value);
	return good(text, what);
}

static struct config *
good_filter(const char *key, const char *value)
{
	char text[512], what[600];

	snprintf(text, sizeof(text), "[filter.f]\n%s = %s\n", key, value);
	snprintf(what, sizeof(what), "[filter.f] %s = %s", key, value);
	return good(text, what);
}

static void
test_defaults(void)
{
	struct config *cfg = good("", "an empty file");

	if (cfg == NULL)
		return;
	ok(strcmp(cfg->path, NAME) == 0, "path is the name given");
	ok(cfg->listen && strcmp(cfg->listen, "127.0.0.1:6874") == 0,
	    "listen defaults to 127.0.0.1:6874");
	ok(cfg->unix_socket == NULL, "unix_socket defaults to none");
	ok(cfg->unix_socket_mode == 0660, "unix_socket_mode defaults to 0660");
	ok(strcmp(cfg->data_dir, "/var/lib/seend") == 0,
	    "data_dir defaults to /var/lib/seend");
	ok(cfg->snapshot_interval == 60, "snapshot_interval defaults to 60");
	ok(strcmp(cfg->default_filter, "default") == 0,
	    "default_filter defaults to \"default\"");
	ok(cfg->max_clients == 10000, "max_clients defaults to 10000");
	ok(cfg->max_line == 65536, "max_line defaults to 65536");
	ok(cfg->output_buffer_limit == 1 << 20,
	    "output_buffer_limit defaults to 1 MiB");
	ok(cfg->idle_timeout == 0, "idle_timeout defaults to 0");
	ok(cfg->auth_token == NULL, "auth_token defaults to none");
	ok(cfg->log_level == LOG_LEVEL_INFO, "log_level defaults to info");
	ok(cfg->nfilters == 0 && cfg->filters == NULL, "no filters by default");
	config_free(cfg);

	cfg = good("[server]\n[filter.x]\n", "empty sections");
	if (cfg != NULL) {
		ok(cfg->nfilters == 1 && strcmp(cfg->filters[0].name, "x") == 0,
		    "a filter section without keys still defines the filter");
		ok(cfg->filters[0].shape.capacity == 1000000,
		    "capacity defaults to 1000000");
		ok(cfg->filters[0].shape.error_rate == 0.001,
		    "error_rate defaults to 0.001");
		ok(cfg->filters[0].nhosts == 0 &&
		    cfg->filters[0].nprefixes == 0,
		    "hosts and prefixes default to none");
		ok(cfg->filters[0].line == 2, "the filter remembers its line");
	}
	config_free(cfg);
}

static void
test_server_valid(void)
{
	struct config *cfg;

#define CHECK(key, value, cond, what) do {				\
	cfg = good_server(key, value);					\
	ok(cfg != NULL && (cond), what);				\
	config_free(cfg);						\
} while (0)
	CHECK("listen", "0.0.0.0:1", strcmp(cfg->listen, "0.0.0.0:1") == 0,
	    "listen takes host:port");
	CHECK("listen", "localhost:65535",
	    strcmp(cfg->listen, "localhost:65535") == 0,
	    "listen takes a host name and port 65535");
	CHECK("listen", "[::1]:6874", strcmp(cfg->listen, "[::1]:6874") == 0,
	    "listen takes [v6]:port");
	CHECK("listen", "[fe80::1%eth0]:6874", cfg->listen != NULL,
	    "listen takes a scoped [v6%zone]:port");
	CHECK("listen", "off", cfg->listen == NULL, "listen = off means none");
	CHECK("unix_socket", "/run/seend/seend.sock",
	    strcmp(cfg->unix_socket, "/run/seend/seend.sock") == 0,
	    "unix_socket takes a path");
	CHECK("unix_socket", "", cfg->unix_socket == NULL,
	    "an empty unix_socket means none");
	CHECK("unix_socket_mode", "0600", cfg->unix_socket_mode == 0600,
	    "unix_socket_mode is octal (0600)");
	CHECK("unix_socket_mode", "777", cfg->unix_socket_mode == 0777,
	    "unix_socket_mode is octal without a leading 0 (777)");
	CHECK("unix_socket_mode", "0", cfg->unix_socket_mode == 0,
	    "unix_socket_mode may be 0");
	CHECK("data_dir", "/srv/seend",
	    strcmp(cfg->data_dir, "/srv/seend") == 0, "data_dir takes a path");
	CHECK("snapshot_interval", "0", cfg->snapshot_interval == 0,
	    "snapshot_interval may be 0");
	CHECK("snapshot_interval", "300", cfg->snapshot_interval == 300,
	    "snapshot_interval takes seconds");
	CHECK("snapshot_interval", "5m", cfg->snapshot_interval == 300,
	    "snapshot_interval 5m is 300 s");
	CHECK("snapshot_interval", "2h", cfg->snapshot_interval == 7200,
	    "snapshot_interval 2h is 7200 s");
	CHECK("snapshot_interval", "365d", cfg->snapshot_interval == 31536000,
	    "snapshot_interval 365d is the maximum");
	CHECK("snapshot_interval", "30s", cfg->snapshot_interval == 30,
	    "snapshot_interval 30s is 30 s");
	CHECK("default_filter", "news.v2",
	    strcmp(cfg->default_filter, "news.v2") == 0,
	    "default_filter takes a filter name");
	CHECK("default_filter", "nosuchfilter", cfg->default_filter != NULL,
	    "default_filter may name a filter that does not exist");
	CHECK("max_clients", "1", cfg->max_clients == 1, "max_clients 1");
	CHECK("max_clients", "10k", cfg->max_clients == 10000,
	    "max_clients 10k is 10000 (decimal)");
	CHECK("max_clients", "1M", cfg->max_clients == 1000000,
	    "max_clients 1M is the maximum 1000000");
	CHECK("max_line", "64", cfg->max_line == 64, "max_line minimum 64");
	CHECK("max_line", "64k", cfg->max_line == 65536,
	    "max_line 64k is 65536 (binary)");
	CHECK("max_line", "64M", cfg->max_line == 64 << 20,
	    "max_line 64M is the maximum");
	CHECK("output_buffer_limit", "4096", cfg->output_buffer_limit == 4096,
	    "output_buffer_limit minimum 4096");
	CHECK("output_buffer_limit", "1G", cfg->output_buffer_limit == 1 << 30,
	    "output_buffer_limit 1G is 2^30, the maximum");
	CHECK("output_buffer_limit", "4M",
	    cfg->output_buffer_limit == 4 << 20,
	    "output_buffer_limit 4M is 4 MiB");
	CHECK("idle_timeout", "0", cfg->idle_timeout == 0,
	    "idle_timeout 0 = never");
	CHECK("idle_timeout", "1h", cfg->idle_timeout == 3600,
	    "idle_timeout 1h is 3600 s");
	CHECK("auth_token", "s3cr3t-Token", strcmp(cfg->auth_token,
	    "s3cr3t-Token") == 0, "auth_token takes a token");
	CHECK("auth_token", "", cfg->auth_token == NULL,
	    "an empty auth_token means none");
	CHECK("log_level", "debug", cfg->log_level == LOG_LEVEL_DEBUG,
	    "log_level debug");
	CHECK("log_level", "error", cfg->log_level == LOG_LEVEL_ERROR,
	    "log_level error");
	CHECK("log_level", "warn", cfg->log_level == LOG_LEVEL_WARN,
	    "log_level warn");
#undef CHECK
}

static void
test_server_bad(void)
{
	char path[200];

	bad_server("listen", "", "an empty listen");
	bad_server("listen", "127.0.0.1", "listen without a port");
	bad_server("listen", "127.0.0.1:", "listen with an empty port");
	bad_server("listen", "127.0.0.1:0", "listen port 0");
	bad_server("listen", "127.0.0.1:65536", "listen port 65536");
	bad_server("listen", "127.0.0.1:123456", "listen port 123456");
	bad_server("listen", "127.0.0.1:http", "listen port not a number");
	bad_server("listen", ":6874", "listen with an empty host");
	bad_server("listen", "::1:6874", "listen IPv6 without brackets");
	bad_server("listen", "[::1]", "listen [v6] without a port");
	bad_server("listen", "[]:6874", "listen with empty brackets");
	bad_server("listen", "[::1:6874", "listen without ]");
	bad_server("listen", "[nope]:6874", "listen [not an address]");
	bad_server("listen", "a b:6874", "listen host with a space");
	memset(path, 'x', sizeof(path));
	path[0] = '/';
	path[108] = '\0';
	bad_server("unix_socket", path, "a 108-byte unix_socket path");
	path[107] = '\0';
	{
		struct config *cfg = good_server("unix_socket", path);

		ok(cfg != NULL, "a 107-byte unix_socket path fits");
		config_free(cfg);
	}
	bad_server("unix_socket_mode", "0800", "unix_socket_mode with an 8");
	bad_server("unix_socket_mode", "1000", "unix_socket_mode over 0777");
	bad_server("unix_socket_mode", "rw", "unix_socket_mode not a number");
	bad_server("unix_socket_mode", "-1", "unix_socket_mode negative");
	bad_server("unix_socket_mode", "", "an empty unix_socket_mode");
	bad_server("data_dir", "", "an empty data_dir");
	bad_server("snapshot_interval", "-1", "negative snapshot_interval");
	bad_server("snapshot_interval", "10x", "snapshot_interval 10x");
	bad_server("snapshot_interval", "5M",
	    "snapshot_interval 5M (ambiguous, upper case)");
	bad_server("snapshot_interval", "366d",
	    "snapshot_interval over a year");
	bad_server("snapshot_interval", "1.5", "snapshot_interval 1.5");
	bad_server("default_filter", "../x", "default_filter ../x");
	bad_server("default_filter", "", "an empty default_filter");
	bad_server("max_clients", "0", "max_clients 0");
	bad_server("max_clients", "1000001", "max_clients 1000001");
	bad_server("max_clients", "2M", "max_clients 2M");
	bad_server("max_clients", "ten", "max_clients not a number");
	bad_server("max_clients", "+5", "max_clients with a sign");
	bad_server("max_clients", "5 k", "max_clients with a space");
	bad_server("max_clients", "99999999999999999999999",
	    "max_clients over 64 bits");
	bad_server("max_clients", "20000000T", "max_clients suffix overflow");
	bad_server("max_line", "63", "max_line 63");
	bad_server("max_line", "65M", "max_line over 64M");
	bad_server("max_line", "64KB", "max_line with a two-letter suffix");
	bad_server("output_buffer_limit", "4095", "output_buffer_limit 4095");
	bad_server("output_buffer_limit", "2G", "output_buffer_limit 2G");
	bad_server("idle_timeout", "abc", "idle_timeout not a number");
	bad_server("idle_timeout", "-5", "negative idle_timeout");
	bad_server("auth_token", "two words", "auth_token with a space");
	bad_server("log_level", "loud", "log_level loud");
	bad_server("log_level", "", "an empty log_level");
	bad("[server]\nmax_clients = 10Q\n", 2,
	    "max_clients: \"10Q\" is not a number",
	    "the message quotes the key and the bad value");
	bad("[server]\nmax_line = 1\n", 2, "64 to 64M bytes",
	    "a range message says the range with its unit");
}

static void
test_filter_values(void)
{
	struct config *cfg;

	cfg = good_filter("capacity", "10M");
	ok(cfg && cfg->filters[0].shape.capacity == 10000000,
	    "capacity 10M is 10000000 (decimal)");
	config_free(cfg);
	cfg = good_filter("capacity", "1");
	ok(cfg && cfg->filters[0].shape.capacity == 1, "capacity 1");
	config_free(cfg);
	cfg = good_filter("capacity", "2k");
	ok(cfg && cfg->filters[0].shape.capacity == 2000,
	    "capacity 2k is 2000");
	config_free(cfg);
	cfg = good_filter("capacity", "3G");
	ok(cfg && cfg->filters[0].shape.capacity == 3000000000ULL,
	    "capacity 3G is 3e9");
	config_free(cfg);
	cfg = good("[filter.f]\ncapacity = 1T\nerror_rate = 0.5\n",
	    "capacity 1T at error_rate 0.5");
	ok(cfg && cfg->filters[0].shape.capacity == 1000000000000ULL,
	    "capacity 1T is 1e12, the maximum");
	config_free(cfg);
	cfg = good_filter("error_rate", "1e-4");
	ok(cfg && cfg->filters[0].shape.error_rate == 1e-4, "error_rate 1e-4");
	config_free(cfg);
	cfg = good_filter("error_rate", "0.5");
	ok(cfg && cfg->filters[0].shape.error_rate == 0.5, "error_rate 0.5");
	config_free(cfg);
	cfg = good_filter("error_rate", "1e-9");
	ok(cfg && cfg->filters[0].shape.error_rate == 1e-9, "error_rate 1e-9");
	config_free(cfg);

	bad_filter("capacity", "10Q", "capacity 10Q");
	bad("[filter.f]\ncapacity = 10Q\n", 2,
	    "capacity: \"10Q\" is not a number", "capacity 10Q message");
	bad_filter("capacity", "-5", "negative capacity");
	bad_filter("capacity", "0", "capacity 0");
	bad_filter("capacity", "1001G", "capacity over 1e12");
	bad_filter("capacity", "18446744073709551616", "capacity 2^64");
	bad_filter("capacity", "", "an empty capacity");
	bad_filter("capacity", "1e6", "capacity in float notation");
	bad_filter("error_rate", "0", "error_rate 0");
	bad_filter("error_rate", "1", "error_rate 1");
	bad_filter("error_rate", "0.6", "error_rate 0.6");
	bad_filter("error_rate", "1e-10", "error_rate 1e-10");
	bad_filter("error_rate", "-0.1", "negative error_rate");
	bad_filter("error_rate", "abc", "error_rate abc");
	bad_filter("error_rate", "inf", "error_rate inf");
	bad_filter("error_rate", "nan", "error_rate nan");
	bad_filter("error_rate", "0x1p-4", "error_rate in hex");
	bad_filter("error_rate", "0.1%", "error_rate with %");
	bad_filter("error_rate", "", "an empty error_rate");
	bad("[filter.huge]\ncapacity = 1T\nerror_rate = 1e-9\n", 2, "1 TiB",
	    "a filter that would need more than 1 TiB");
	bad("[filter.huge]\nerror_rate = 1e-9\ncapacity = 1T\n", 3, "1 TiB",
	    "the 1 TiB error names the capacity line");
	bad("[filter.a]\ncapacity = 1T\nerror_rate = 1e-9\n[filter.b]\n", 2,
	    "[filter.a]", "the 1 TiB error names its filter");
}

static void
test_hosts_prefixes(void)
{
	struct config		*cfg;
	struct filter_config	*f;

	cfg = good("[filter.news]\n"
	    "hosts = BBC.co.uk *.NYTimes.com\n"
	    "prefixes = https://news. http://x/\n"
	    "hosts = example.org\tbbc.co.uk\n"
	    "    lemonde.fr\n"
	    "prefixes = ftp://\n"
	    "hosts = [2001:DB8::1] ::1 _dmarc.x-y.com 10.0.0.1\n",
	    "hosts and prefixes, repeated and continued");
	if (cfg != NULL) {
		f = &cfg->filters[0];
		ok(f->nhosts == 9, "every host is kept, across keys (%zu)",
		    f->nhosts);
		ok(f->nhosts == 9 && strcmp(f->hosts[0], "bbc.co.uk") == 0 &&
		    strcmp(f->hosts[1], "*.nytimes.com") == 0,
		    "hosts are lower-cased, wildcards kept");
		ok(f->nhosts == 9 && strcmp(f->hosts[2], "example.org") == 0 &&
		    strcmp(f->hosts[3], "bbc.co.uk") == 0,
		    "a second hosts key appends, tabs separate, repeats kept");
		ok(f->nhosts == 9 && strcmp(f->hosts[4], "lemonde.fr") == 0,
		    "an indented line continues hosts");
		ok(f->nhosts == 9 && strcmp(f->hosts[5], "2001:db8::1") == 0 &&
		    strcmp(f->hosts[6], "::1") == 0,
		    "IPv6 hosts lose their brackets, as url_host gives them");
		ok(f->nhosts == 9 &&
		    strcmp(f->hosts[7], "_dmarc.x-y.com") == 0 &&
		    strcmp(f->hosts[8], "10.0.0.1") == 0,
		    "underscores, hyphens and IPv4 addresses are hosts");
		ok(f->nprefixes == 3 &&
		    strcmp(f->prefixes[0], "https://news.") == 0 &&
		    strcmp(f->prefixes[1], "http://x/") == 0 &&
		    strcmp(f->prefixes[2], "ftp://") == 0,
		    "prefixes split on whitespace and append, case kept");
	}
	config_free(cfg);

	cfg = load("[filter.big]\nhosts = a0.com a1.com a2.com a3.com a4.com "
	    "a5.com a6.com a7.com a8.com a9.com\n"
	    "  b0.com b1.com b2.com b3.com b4.com b5.com b6.com b7.com\n");
	ok(cfg && cfg->filters[0].nhosts == 18 &&
	    strcmp(cfg->filters[0].hosts[17], "b7.com") == 0,
	    "a long hosts list grows past its first allocation");
	config_free(cfg);

	bad_filter("hosts", "*", "a lone * host");
	bad_filter("hosts", "a.*.com", "a * inside a host");
	bad_filter("hosts", "*example.com", "a * not followed by a dot");
	bad_filter("hosts", "*.*.com", "two wildcards");
	bad_filter("hosts", "*.", "a wildcard with nothing after it");
	bad_filter("hosts", "a..b", "an empty label");
	bad_filter("hosts", ".a.com", "a leading dot");
	bad_filter("hosts", "a.com.", "a trailing dot");
	bad_filter("hosts", "a/b.com", "a slash in a host");
	bad_filter("hosts", "\xc3\xbc" "ber.de", "a non-ASCII host");
	bad_filter("hosts", "[zz]", "a bracketed non-address");
	bad_filter("hosts",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	    "a 64-byte label");
	bad("[filter.f]\nhosts = ok.com a..b fine.org\n", 2, "\"a..b\"",
	    "the bad host is named, not the whole list");
	bad("[server]\nhosts = a.com\n", 2, "hosts",
	    "hosts is not a [server] key");
}

static void
test_structure(void)
{
	struct config	*cfg;
	char		 text[400], name[80];

	bad("[server]\nlisten = 127.0.0.1:1\nlisten = 127.0.0.1:2\n", 3,
	    "listen set twice, first at line 2", "a key set twice");
	bad("[filter.a]\ncapacity = 5\ncapacity = 6\n", 3,
	    "capacity set twice, first at line 2", "a filter key set twice");
	bad("[filter.a]\n[filter.b]\n\n[filter.a]\n", 4, "first at line 1",
	    "a filter defined twice names the earlier line");
	bad("[server]\n[server]\n", 2, "first at line 1",
	    "[server] twice names the earlier line");
	bad("[filter.../x]\n", 1, "invalid filter name",
	    "filter name ../x");
	bad("[filter..x]\n", 1, "invalid filter name", "filter name .x");
	bad("[filter.a/b]\n", 1, "invalid filter name", "filter name a/b");
	bad("[filter.]\n", 1, "invalid filter name", "an empty filter name");
	memset(name, 'n', 65);
	name[65] = '\0';
	snprintf(text, sizeof(text), "[filter.%s]\n", name);
	bad(text, 1, "invalid filter name", "a 65-byte filter name");
	name[64] = '\0';
	snprintf(text, sizeof(text), "[filter.%s]\ncapacity = 5\n", name);
	cfg = good(text, "a 64-byte filter name");
	ok(cfg && strcmp(cfg->filters[0].name, name) == 0 &&
	    cfg->filters[0].shape.capacity == 5,
	    "a 64-byte filter name is kept whole (inih would cut it at 49)");
	config_free(cfg);
	bad("[server]\nlisten = off\n[bogus]\nx = 1\n", 3,
	    "unknown section [bogus]", "an unknown section");
	bad("[filter]\n", 1, "unknown section [filter]",
	    "[filter] without a name");
	bad("[server]\nlisen = 1\n", 2, "unknown key \"lisen\"",
	    "an unknown [server] key");
	bad("[filter.f]\ncapcity = 1\n", 2, "unknown key \"capcity\" in "
	    "[filter.f]", "an unknown filter key");
	bad("listen = 127.0.0.1:1\n[server]\n", 1, "outside any section",
	    "a key before any section");
	bad("[server]\n = 1\n", 2, "missing key name",
	    "a line with no key name");
	bad("[server]\nlisten\n", 2, "syntax error", "a line without =");
	bad("[server\n", 1, "syntax error", "a header without ]");
	bad("[server] junk\n", 1, "after the section header",
	    "text after a section header");
	bad("[server]\nlisten = 127.0.0.1:1\n   127.0.0.2:1\n", 3,
	    "continues \"listen\"", "an indented line after a scalar key");
	memset(text, 'a', sizeof(text));
	memcpy(text, "[server]\ndata_dir = /", 21);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = '\0';
	bad(text, 2, "longer than", "an overlong line is reported, not split");
	{
		char	many[CONFIG_MAX_FILTERS * 16 + 64], *q = many;

		for (int i = 0; i <= CONFIG_MAX_FILTERS; i++)
			q += sprintf(q, "[filter.f%d]\n", i);
		bad(many, CONFIG_MAX_FILTERS + 1, "too many filters",
		    "more than CONFIG_MAX_FILTERS filters");
	}

	/* several problems in one file are all reported */
	cfg = load("[server]\n"
	    "max_clients = 0\n"
	    "log_level = loud\n"
	    "nosuchkey = 1\n"
	    "[filter.x]\n"
	    "capacity = -1\n"
	    "hosts = *\n");
	ok(cfg == NULL && errs.n == 5 && has_error(2, "max_clients") &&
	    has_error(3, "log_level") && has_error(4, "nosuchkey") &&
	    has_error(6, "capacity") && has_error(7, "hosts"),
	    "five errors in one file are all reported, each at its line");
	if (errs.n != 5)
		dump_errors();
	config_free(cfg);

	cfg = good("\xef\xbb\xbf[server]\r\n"
	    "listen = 127.0.0.1:7 ; a comment\r\n"
	    "# a comment\r\n"
	    "; another\r\n"
	    "\r\n"
	    "[filter.a] ; trailing comment\r\n"
	    "capacity : 42\r\n"
	    "[filter.b]\r\n"
	    "prefixes = x",
	    "BOM, CRLF, comments, ':' and no final newline");
	ok(cfg && strcmp(cfg->listen, "127.0.0.1:7") == 0 &&
	    cfg->nfilters == 2 && cfg->filters[0].shape.capacity == 42 &&
	    cfg->filters[1].nprefixes == 1 && cfg->filters[1].line == 8,
	    "those are parsed as intended");
	ok(cfg && config_find_filter(cfg, "b") == &cfg->filters[1] &&
	    config_find_filter(cfg, "c") == NULL,
	    "config_find_filter finds by name");
	config_free(cfg);

	cfg = config_load_string("[server]\nbad = 1\n", "x", NULL);
	ok(cfg == NULL, "errors without an errs struct still fail the load");
}

static void
test_names(void)
{
	char n65[66];

	memset(n65, 'a', 65);
	n65[65] = '\0';
	ok(config_valid_filter_name("default", 7), "\"default\" is a name");
	ok(config_valid_filter_name("a.b-c_D9", 8), "a.b-c_D9 is a name");
	ok(config_valid_filter_name("_x", 2), "a leading _ is fine");
	ok(config_valid_filter_name("-x", 2), "a leading - is fine");
	ok(config_valid_filter_name("a..b", 4), "a..b is a name (no slash)");
	ok(config_valid_filter_name(n65, 64), "64 bytes is a name");
	ok(!config_valid_filter_name(n65, 65), "65 bytes is not");
	ok(!config_valid_filter_name("", 0), "empty is not a name");
	ok(!config_valid_filter_name(".x", 2), ".x is not a name");
	ok(!config_valid_filter_name("..", 2), ".. is not a name");
	ok(!config_valid_filter_name("a/b", 3), "a/b is not a name");
	ok(!config_valid_filter_name("a b", 3), "a b is not a name");
	ok(!config_valid_filter_name("\xc3\xa9", 2), "non-ASCII is not");
	ok(config_valid_filter_name("ab/", 2), "only len bytes are looked at");
}

/* Writes content to a new temp file; returns its path (static). */
static const char *
temp_file(const char *content, size_t len)
{
	static char	path[64];
	int		fd;

	snprintf(path, sizeof(path), "/tmp/test_config.XXXXXX");
	if ((fd = mkstemp(path)) == -1)
		return NULL;
	if (write(fd, content, len) != (ssize_t)len) {
		close(fd);
		return NULL;
	}
	close(fd);
	return path;
}

/* A literal's bytes, embedded NULs included. */
#define TEMP_FILE(lit)	temp_file((lit), sizeof(lit) - 1)

static void
test_files(void)
{
	struct config	*cfg;
	const char	*p;
	char		 text[256], want[256];

	cfg = load_file("/nonexistent/seend.conf");
	ok(cfg == NULL && errs.n == 1 && strcmp(errs.msgs[0],
	    "/nonexistent/seend.conf: cannot open: No such file or directory")
	    == 0, "a missing file says path: cannot open: strerror");
	config_free(cfg);
	config_errors_free(&errs);
	ok(errs.n == 0 && errs.msgs == NULL, "config_errors_free resets");

	p = TEMP_FILE("[server]\nmax_clients = 7\n[filter.f]\n");
	cfg = load_file(p);
	ok(cfg && cfg->max_clients == 7 && cfg->nfilters == 1 &&
	    strcmp(cfg->path, p) == 0, "config_load reads a file");
	config_free(cfg);
	unlink(p);

	p = TEMP_FILE("[server]\n\nlog_level = x\n");
	cfg = load_file(p);
	snprintf(want, sizeof(want), "%s:3: log_level", p);
	ok(cfg == NULL && errs.n == 1 && strncmp(errs.msgs[0], want,
	    strlen(want)) == 0, "errors in a file carry its path and line");
	config_free(cfg);
	unlink(p);

	p = TEMP_FILE("[server]\nlisten = off\0garbage\n");
	cfg = load_file(p);
	snprintf(want, sizeof(want), "%s:2: ", p);
	ok(cfg == NULL && errs.n == 1 && strncmp(errs.msgs[0], want,
	    strlen(want)) == 0 && strstr(errs.msgs[0], "NUL"),
	    "a NUL byte in a file is an error");
	config_free(cfg);
	unlink(p);

	cfg = load_file("/");
	ok(cfg == NULL && errs.n == 1 && strstr(errs.msgs[0], "/: "),
	    "a directory is a read error");
	config_free(cfg);

	/* auth_token_file */
	p = TEMP_FILE("t0ken-ABC  \r\nsecond line\n");
	snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n", p);
	cfg = good(text, "auth_token_file");
	ok(cfg && cfg->auth_token && strcmp(cfg->auth_token, "t0ken-ABC") == 0,
	    "auth_token_file gives its first line, trailing space stripped");
	config_free(cfg);
	snprintf(text, sizeof(text), "[server]\nauth_token = x\n"
	    "auth_token_file = %s\n", p);
	bad(text, 3, "both set", "auth_token and auth_token_file together");
	snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n"
	    "auth_token = x\n", p);
	bad(text, 3, "both set", "auth_token_file then auth_token");
	unlink(p);

	p = TEMP_FILE("");
	snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n", p);
	bad(text, 2, "auth_token_file", "an empty auth_token_file");
	unlink(p);
	p = TEMP_FILE(" \n");
	snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n", p);
	bad(text, 2, "is empty", "an auth_token_file with a blank line");
	unlink(p);
	p = TEMP_FILE("two words\n");
	snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n", p);
	bad(text, 2, "auth_token_file", "a token with a space in the file");
	unlink(p);
	{
		static char	long_token[5001];

		memset(long_token, 'k', 5000);
		p = temp_file(long_token, 5000);
		snprintf(text, sizeof(text), "[server]\nauth_token_file = %s\n",
		    p);
		bad(text, 2, "longer than", "an auth_token_file line of 5000 "
		    "bytes");
		unlink(p);
	}
	bad("[server]\nauth_token_file = /dev/zero\n", 2, "NUL byte",
	    "an endless auth_token_file is read with a bound");
	bad("[server]\nauth_token_file = /nonexistent/token\n", 2,
	    "auth_token_file: cannot open \"/nonexistent/token\"",
	    "a missing auth_token_file");
}

static void
test_shipped(void)
{
	const char	*src = getenv("SEEND_SRCDIR");
	const char	*tries[] = { "../conf/seend.conf", "conf/seend.conf",
			    "../../conf/seend.conf" };
	char		 path[4096];
	struct config	*cfg = NULL;

	if (src != NULL) {
		snprintf(path, sizeof(path), "%s/conf/seend.conf", src);
		cfg = load_file(path);
	} else {
		/* not under make check: try next to this source file (an
		 * out-of-tree build compiles it by its srcdir path), then
		 * relative to the current directory */
		const char *slash = strrchr(__FILE__, '/');

		snprintf(path, sizeof(path), "%.*s../../conf/seend.conf",
		    slash != NULL ? (int)(slash - __FILE__) + 1 : 0, __FILE__);
		for (size_t i = 0; access(path, R_OK) == -1 &&
		    i < sizeof(tries) / sizeof(tries[0]); i++)
			snprintf(path, sizeof(path), "%s", tries[i]);
		cfg = load_file(path);
	}
	if (!ok(cfg != NULL && errs.n == 0, "the shipped %s loads with no "
	    "errors", path))
		dump_errors();
	if (cfg != NULL) {
		const struct filter_config *f = config_find_filter(cfg,
		    "default");

		ok(strcmp(cfg->listen, "127.0.0.1:6874") == 0,
		    "the shipped config listens on loopback only");
		ok(strcmp(cfg->data_dir, "/var/lib/seend") == 0,
		    "the shipped data_dir is /var/lib/seend");
		ok(f != NULL && f->shape.capacity == 10000000 &&
		    f->shape.error_rate == 0.001,
		    "the shipped [filter.default] is 10M keys at 0.001");
		ok(cfg->auth_token == NULL && cfg->unix_socket == NULL,
		    "the shipped config sets no token and no unix socket");
	}
	config_free(cfg);
	config_errors_free(&errs);
}

/*
 * A short line followed by many CRs: the reader once checked the length
 * without them and copied them all, overrunning inih's ~200-byte line
 * buffer (found by fuzz_config; the input is kept in tests/fuzz/regressions).
 */
static void
test_trailing_crs(void)
{
	char		 text[1024];
	struct config	*cfg;
	int		 n;

	n = snprintf(text, sizeof(text), "[server]\nmax_clients = 77");
	memset(text + n, '\r', 600);
	strcpy(text + n + 600, "\nidle_timeout = 5\r\r\r\n");
	cfg = load(text);
	ok(cfg != NULL, "a line with 600 trailing CRs loads");
	ok(cfg && cfg->max_clients == 77, "its value is read without the CRs");
	ok(cfg && cfg->idle_timeout == 5, "the next line is read too");
	config_free(cfg);
}

static void
test_metrics_listen(void)
{
	struct config *cfg;

	cfg = good("", "an empty file, for metrics_listen");
	ok(cfg != NULL && cfg->metrics_listen == NULL,
	    "metrics_listen defaults to off");
	config_free(cfg);
	cfg = good_server("metrics_listen", "127.0.0.1:9874");
	ok(cfg != NULL && cfg->metrics_listen != NULL &&
	    strcmp(cfg->metrics_listen, "127.0.0.1:9874") == 0,
	    "metrics_listen takes host:port");
	config_free(cfg);
	cfg = good_server("metrics_listen", "[::1]:9874");
	ok(cfg != NULL && cfg->metrics_listen != NULL &&
	    strcmp(cfg->metrics_listen, "[::1]:9874") == 0,
	    "metrics_listen takes [v6]:port");
	config_free(cfg);
	cfg = good_server("metrics_listen", "off");
	ok(cfg != NULL && cfg->metrics_listen == NULL,
	    "metrics_listen = off means none");
	config_free(cfg);
	bad_server("metrics_listen", "127.0.0.1", "metrics_listen without a port");
	bad_server("metrics_listen", "127.0.0.1:0", "metrics_listen port 0");
	bad_server("metrics_listen", "::1:9874",
	    "metrics_listen IPv6 without brackets");
}

/* [filter.NAME] normalize = off | standard, default off. */
static void
test_normalize(void)
{
	struct config	*cfg;

	cfg = good("[filter.f]\ncapacity = 1000\n", "a filter without normalize");
	ok(cfg && cfg->filters[0].shape.normalize == FILTER_NORMALIZE_OFF,
	    "normalize defaults to off");
	config_free(cfg);
	cfg = good_filter("normalize", "standard");
	ok(cfg && cfg->filters[0].shape.normalize == FILTER_NORMALIZE_STANDARD,
	    "normalize standard");
	config_free(cfg);
	cfg = good_filter("normalize", "Standard");
	ok(cfg && cfg->filters[0].shape.normalize == FILTER_NORMALIZE_STANDARD,
	    "normalize is case-insensitive");
	config_free(cfg);
	cfg = good_filter("normalize", "off");
	ok(cfg && cfg->filters[0].shape.normalize == FILTER_NORMALIZE_OFF,
	    "normalize off");
	config_free(cfg);
	cfg = good("[filter.a]\nnormalize = standard\n[filter.b]\n",
	    "normalize on one filter only");
	ok(cfg && cfg->nfilters == 2 &&
	    cfg->filters[0].shape.normalize == FILTER_NORMALIZE_STANDARD &&
	    cfg->filters[1].shape.normalize == FILTER_NORMALIZE_OFF,
	    "normalize is per filter");
	config_free(cfg);
	bad_filter("normalize", "on", "normalize on");
	bad_filter("normalize", "whatwg", "normalize whatwg");
	bad_filter("normalize", "", "an empty normalize");
	bad("[filter.f]\nnormalize = off\nnormalize = standard\n", 3,
	    "normalize", "normalize twice in one filter");
	bad("[server]\nnormalize = standard\n", 2, "normalize",
	    "normalize in [server]");
	config_errors_free(&errs);
}

/* growth = off | 1..16 (default 2), expire = duration | never, and
 * [server] max_memory = bytes | off. */
static void
test_growth_expire_memory(void)
{
	struct config *cfg;

	cfg = good("[filter.f]\ncapacity = 1000\n", "a filter, defaults");
	ok(cfg && cfg->filters[0].shape.growth == 2 &&
	    cfg->filters[0].shape.expire == 0 && cfg->max_memory == 0,
	    "growth 2, no expire, no max_memory by default");
	config_free(cfg);
	cfg = good_filter("growth", "off");
	ok(cfg && cfg->filters[0].shape.growth == 0, "growth = off is 0");
	config_free(cfg);
	cfg = good_filter("growth", "4");
	ok(cfg && cfg->filters[0].shape.growth == 4, "growth = 4");
	config_free(cfg);
	cfg = good_filter("expire", "30d");
	ok(cfg && cfg->filters[0].shape.expire == 30 * 86400, "expire = 30d");
	config_free(cfg);
	cfg = good_filter("expire", "3s");
	ok(cfg && cfg->filters[0].shape.expire == 3, "expire = 3s");
	config_free(cfg);
	cfg = good_filter("expire", "never");
	ok(cfg && cfg->filters[0].shape.expire == 0, "expire = never");
	config_free(cfg);
	cfg = good_server("max_memory", "64M");
	ok(cfg && cfg->max_memory == 64ULL << 20, "max_memory = 64M");
	config_free(cfg);
	cfg = good_server("max_memory", "off");
	ok(cfg && cfg->max_memory == 0, "max_memory = off");
	config_free(cfg);
	bad_filter("growth", "0", "growth 0");
	bad_filter("growth", "17", "growth 17");
	bad_filter("growth", "two", "growth two");
	bad_filter("expire", "0", "expire 0");
	bad_filter("expire", "5M", "expire with a count suffix");
	bad_filter("expire", "-1", "a negative expire");
	bad_server("max_memory", "lots", "max_memory lots");
	bad("[server]\ngrowth = 2\n", 2, "growth", "growth in [server]");
	/* the first slice must be plannable: a window's is tighter */
	bad("[filter.f]\ncapacity = 1T\nerror_rate = 1e-9\nexpire = 1d\n",
	    2, "1 TiB", "a window whose first slice needs over 1 TiB");
	config_errors_free(&errs);
}

/* [server] keys for filters created at run time (issue 14). */
static void
test_runtime_filter_keys(void)
{
	struct config *cfg;

	cfg = good("", "an empty file, for the runtime filter keys");
	ok(cfg && cfg->create_filters == 1, "create_filters defaults to on");
	ok(cfg && cfg->new_filter_capacity == 1000000,
	    "new_filter_capacity defaults to 1M");
	ok(cfg && cfg->new_filter_error_rate == 0.001,
	    "new_filter_error_rate defaults to 0.001");
	ok(cfg && cfg->new_filter_growth == 2,
	    "new_filter_growth defaults to 2");
	ok(cfg && cfg->max_filters == 10000, "max_filters defaults to 10000");
	config_free(cfg);
	cfg = good_server("create_filters", "off");
	ok(cfg && cfg->create_filters == 0, "create_filters = off");
	config_free(cfg);
	cfg = good_server("new_filter_capacity", "10k");
	ok(cfg && cfg->new_filter_capacity == 10000,
	    "new_filter_capacity = 10k");
	config_free(cfg);
	cfg = good_server("new_filter_error_rate", "0.01");
	ok(cfg && cfg->new_filter_error_rate == 0.01,
	    "new_filter_error_rate = 0.01");
	config_free(cfg);
	cfg = good_server("new_filter_growth", "off");
	ok(cfg && cfg->new_filter_growth == 0, "new_filter_growth = off");
	config_free(cfg);
	cfg = good_server("max_filters", "5000");
	ok(cfg && cfg->max_filters == 5000, "max_filters = 5000");
	config_free(cfg);
	bad_server("create_filters", "maybe", "create_filters maybe");
	bad_server("new_filter_capacity", "0", "new_filter_capacity 0");
	bad_server("new_filter_error_rate", "1", "new_filter_error_rate 1");
	bad_server("new_filter_growth", "17", "new_filter_growth 17");
	bad_server("max_filters", "0", "max_filters 0");
}

static void
test_journal_keys(void)
{
	struct config *cfg;

	cfg = good("", "an empty file, for journal");
	ok(cfg != NULL && cfg->journal == JOURNAL_EVERYSEC &&
	    cfg->journal_max == 256 << 20,
	    "journal defaults to everysec, journal_max to 256M");
	config_free(cfg);
	cfg = good_server("journal", "always");
	ok(cfg != NULL && cfg->journal == JOURNAL_ALWAYS, "journal = always");
	config_free(cfg);
	cfg = good_server("journal", "off");
	ok(cfg != NULL && cfg->journal == JOURNAL_OFF, "journal = off");
	config_free(cfg);
	cfg = good_server("journal_max", "1G");
	ok(cfg != NULL && cfg->journal_max == 1 << 30, "journal_max = 1G");
	config_free(cfg);
	bad_server("journal", "sometimes", "journal of an unknown mode");
	bad_server("journal", "", "journal empty");
	bad_server("journal_max", "512K", "journal_max under 1M");
	bad_server("journal_max", "lots", "journal_max not a size");
}

int
main(void)
{
	test_defaults();
	test_server_valid();
	test_server_bad();
	test_filter_values();
	test_hosts_prefixes();
	test_structure();
	test_names();
	test_files();
	test_shipped();
	test_trailing_crs();
	test_metrics_listen();
	test_normalize();
	test_growth_expire_memory();
	test_runtime_filter_keys();
	test_journal_keys();
	config_errors_free(&errs);
	return done_testing();
}
