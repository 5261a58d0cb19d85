/*
 * url.c - the WHATWG URL Standard's basic URL parser (https://url.spec.
 * whatwg.org/#concept-basic-url-parser) for absolute URLs without a base,
 * and its serialiser: url_host() for routing, url_normalize() for keys.
 *
 * One parse serves both, so that the host a key routes by is the host its
 * normalised form names. Where seend departs from the standard it says so:
 *  - url_normalize() decodes %XX of unreserved characters and upper-cases
 *    the hex of other escapes (RFC 3986 6.2.2.1-2). WHATWG leaves escapes as
 *    written; issue 15 asks for it so that "/%61" and "/a" are one key.
 *  - the fragment is dropped: it never reaches the server.
 *  - hosts of other ("non-special") schemes, opaque to WHATWG, are
 *    lower-cased: they name DNS hosts in practice (git+ssh, redis, ...).
 *  - userinfo is kept as WHATWG serialises it: it is part of the request a
 *    crawler makes, and the same path with other credentials can be another
 *    page; dropping it would merge keys the crawler fetches apart.
 *  - IDNA is libidn2's UTS #46 (non-transitional, then transitional as
 *    browsers fall back), which also checks hyphens (CheckHyphens), so
 *    "ab--c.bücher" is rejected where WHATWG accepts it.
 *  - hosts over URL_HOSTBUF bytes and over-long input with tab/CR/LF are
 *    not parsed (bounded stack buffers).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <idn2.h>

#include "url.h"

#define URL_HOSTBUF	1024	/* a host, percent-decoded or in ASCII */
#define URL_LABELBUF	256	/* one IDN label, NUL-terminated for libidn2 */

/* An output that never writes past cap and remembers that it was full. */
struct sink {
	char	*p;
	size_t	 len, cap;
	int	 full;
};

static void
sink_put(struct sink *o, char c)
{
	if (o->len < o->cap)
		o->p[o->len++] = c;
	else
		o->full = 1;
}

static void
sink_write(struct sink *o, const char *s, size_t n)
{
	if (n > o->cap - o->len) {
		o->full = 1;
		n = o->cap - o->len;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

/* What the scheme/authority part of a URL holds, as offsets into s. */
struct url_head {
	const char	*s;
	size_t		 n;
	size_t		 scheme_len;	/* s[0..scheme_len) is the scheme */
	int		 special;	/* http https ws wss ftp file */
	int		 file;
	int		 default_port;	/* -1: none */
	int		 has_host;	/* an authority (WHATWG: host non-null) */
	int		 has_user;	/* an "@" in the authority */
	size_t		 user, user_end;	/* userinfo, before the last @ */
	size_t		 host, host_end;
	long		 port;		/* -1: none or default */
	size_t		 rest;		/* path, query, fragment start here */
};

/* A scheme of up to 5 bytes as one number, its first byte highest. */
#define SCHEME_KEY(a, b, c, d, e) \
	((uint64_t)(a) << 32 | (uint64_t)(b) << 24 | (uint64_t)(c) << 16 | \
	    (uint64_t)(d) << 8 | (uint64_t)(e))

static const struct special_scheme {
	uint64_t	 key;		/* SCHEME_KEY of the name, lower case */
	int		 port;		/* -1: none (file) */
} special_schemes[] = {
	{ SCHEME_KEY(0, 'h', 't', 't', 'p'), 80 },
	{ SCHEME_KEY('h', 't', 't', 'p', 's'), 443 },
	{ SCHEME_KEY(0, 0, 0, 'w', 's'), 80 },
	{ SCHEME_KEY(0, 0, 'w', 's', 's'), 443 },
	{ SCHEME_KEY(0, 0, 'f', 't', 'p'), 21 },
	{ SCHEME_KEY(0, 'f', 'i', 'l', 'e'), -1 },
};

/*
 * Byte classes, one table lookup per byte on the request path. The
 * percent-encode sets of WHATWG 1.3 (C0 control, which also holds every
 * byte above 0x7e; query; special query; path; userinfo: each holds the
 * one before, but special query the "'" only), its forbidden host and
 * domain code points (3.2), RFC 3986's unreserved characters, and the
 * bytes a path or query copies through unchanged.
 */
enum {
	PE_C0 = 1 << 0, PE_QUERY = 1 << 1, PE_SQUERY = 1 << 2,
	PE_PATH = 1 << 3, PE_USERINFO = 1 << 4,
	FORBIDDEN_HOST = 1 << 5, FORBIDDEN_DOMAIN = 1 << 6,
	UNRESERVED = 1 << 7, PLAIN_PATH = 1 << 8, PLAIN_QUERY = 1 << 9,
	TAB_NL = 1 << 10, SCHEME = 1 << 11, AUTH_STOP = 1 << 12,
	HOST_PLAIN = 1 << 13,
};

#define B_C0(c)		((c) < 0x20 || (c) > 0x7e)
#define B_QUERY(c)	((c) == ' ' || (c) == '"' || (c) == '#' || \
			    (c) == '<' || (c) == '>')
#define B_PATH(c)	((c) == '?' || (c) == '^' || (c) == '`' || \
			    (c) == '{' || (c) == '}')
#define B_USERINFO(c)	((c) == '/' || (c) == ':' || (c) == ';' || \
			    (c) == '=' || (c) == '@' || \
			    ((c) >= '[' && (c) <= '^') || (c) == '|')
#define B_FHOST(c)	((c) == 0 || (c) == '\t' || (c) == '\n' || \
			    (c) == '\r' || (c) == ' ' || (c) == '#' || \
			    (c) == '/' || (c) == ':' || (c) == '<' || \
			    (c) == '>' || (c) == '?' || (c) == '@' || \
			    (c) == '[' || (c) == '\\' || (c) == ']' || \
			    (c) == '^' || (c) == '|')
#define B_FDOMAIN(c)	(B_FHOST(c) || (c) < 0x20 || (c) == '%' || \
			    (c) == 0x7f)
#define B_UNRES(c)	(((c) >= 'a' && (c) <= 'z') || \
			    ((c) >= 'A' && (c) <= 'Z') || \
			    ((c) >= '0' && (c) <= '9') || (c) == '-' || \
			    (c) == '.' || (c) == '_' || (c) == '~')
#define B_CLASS(c) ( \
	(B_C0(c) ? PE_C0 | PE_QUERY | PE_SQUERY | PE_PATH | PE_USERINFO : 0) | \
	(B_QUERY(c) ? PE_QUERY | PE_SQUERY | PE_PATH | PE_USERINFO : 0) | \
	((c) == '\'' ? PE_SQUERY : 0) | \
	(B_PATH(c) ? PE_PATH | PE_USERINFO : 0) | \
	(B_USERINFO(c) ? PE_USERINFO : 0) | \
	(B_FHOST(c) ? FORBIDDEN_HOST : 0) | \
	(B_FDOMAIN(c) ? FORBIDDEN_DOMAIN : 0) | \
	(B_UNRES(c) ? UNRESERVED : 0) | \
	(!B_C0(c) && !B_QUERY(c) && !B_PATH(c) && (c) != '%' && \
	    (c) != '/' && (c) != '\\' ? PLAIN_PATH : 0) | \
	(!B_C0(c) && !B_QUERY(c) && (c) != '\'' && (c) != '%' ? \
	    PLAIN_QUERY : 0) | \
	((c) == '\t' || (c) == '\n' || (c) == '\r' ? TAB_NL : 0) | \
	(((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || \
	    ((c) >= '0' && (c) <= '9') || (c) == '+' || (c) == '-' || \
	    (c) == '.' ? SCHEME : 0) | \
	((c) == '/' || (c) == '\\' || (c) == '?' || (c) == '#' || \
	    (c) == '@' ? AUTH_STOP : 0) | \
	((c) < 0x80 && !B_FDOMAIN(c) ? HOST_PLAIN : 0))
#define B_4(c)		B_CLASS(c), B_CLASS((c) + 1), B_CLASS((c) + 2), \
			    B_CLASS((c) + 3)
#define B_16(c)		B_4(c), B_4((c) + 4), B_4((c) + 8), B_4((c) + 12)
#define B_64(c)		B_16(c), B_16((c) + 16), B_16((c) + 32), \
			    B_16((c) + 48)

static const uint16_t byte_class[256] = {
	B_64(0), B_64(64), B_64(128), B_64(192)
};

static int
is_class(unsigned char c, unsigned bits)
{
	return (byte_class[c] & bits) != 0;
}

static int
is_alpha(unsigned char c)
{
	return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
hex_value(unsigned char c)
{
	if (is_digit(c))
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static char
to_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}


static void
put_escape(struct sink *o, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";

	sink_put(o, '%');
	sink_put(o, hex[c >> 4]);
	sink_put(o, hex[c & 15]);
}

/*
 * 1 if o ends in a "%" or "%h" that is not an escape (WHATWG keeps those):
 * a hex digit decoded after it would make one, and the second
 * normalisation would read what the first did not.
 */
static int
stray_escape(const struct sink *o)
{
	return (o->len >= 1 && o->p[o->len - 1] == '%') || (o->len >= 2 &&
	    o->p[o->len - 2] == '%' &&
	    hex_value((unsigned char)o->p[o->len - 1]) >= 0);
}

/*
 * Appends s[i] (and, for an escape, the two hex digits after it) to o as
 * WHATWG encodes it with percent-encode set `set`, with escapes normalised
 * as RFC 3986 says. Returns the number of input bytes used.
 */
static size_t
put_encoded(struct sink *o, const char *s, size_t i, size_t n, unsigned set)
{
	unsigned char	 c = (unsigned char)s[i];
	int		 hi, lo;

	if (c == '%' && i + 2 < n &&
	    (hi = hex_value((unsigned char)s[i + 1])) >= 0 &&
	    (lo = hex_value((unsigned char)s[i + 2])) >= 0) {
		c = (unsigned char)(hi << 4 | lo);
		if (is_class(c, UNRESERVED) &&
		    !(hex_value(c) >= 0 && stray_escape(o)))
			sink_put(o, (char)c);
		else
			put_escape(o, c);
		return 3;
	}
	if (is_class(c, set))
		put_escape(o, c);
	else
		sink_put(o, (char)c);
	return 1;
}

/* Copies the bytes of class plain from s[p] on, as they are; returns
 * where the first other one is. */
static size_t
put_run(struct sink *o, const char *s, size_t p, size_t n, unsigned plain)
{
	size_t q = p;

	while (q < n && is_class((unsigned char)s[q], plain))
		q++;
	sink_write(o, s + p, q - p);
	return q;
}

/* ---- hosts ---- */


/* The IPv6 parser of WHATWG 3.5, on s[0..n) (inside the brackets). */
static int
ipv6_parse(const char *s, size_t n, uint16_t addr[8])
{
	size_t	 p = 0;
	int	 piece = 0, compress = -1;

	memset(addr, 0, 8 * sizeof(addr[0]));
#define C(i)	((i) < n ? (unsigned char)s[i] : 0)
	if (C(p) == ':') {
		if (C(p + 1) != ':')
			return -1;
		p += 2;
		compress = ++piece;
	}
	while (p < n) {
		unsigned	 value = 0, length = 0;

		if (piece == 8)
			return -1;
		if (C(p) == ':') {
			if (compress != -1)
				return -1;
			p++;
			compress = ++piece;
			continue;
		}
		while (length < 4 && hex_value(C(p)) >= 0) {
			value = value * 16 + (unsigned)hex_value(C(p));
			p++;
			length++;
		}
		if (C(p) == '.') {
			int seen = 0;

			if (length == 0 || piece > 6)
				return -1;
			p -= length;
			while (p < n) {
				int v4 = -1;

				if (seen > 0) {
					if (C(p) == '.' && seen < 4)
						p++;
					else
						return -1;
				}
				if (!is_digit(C(p)))
					return -1;
				while (is_digit(C(p))) {
					int d = C(p) - '0';

					if (v4 == -1)
						v4 = d;
					else if (v4 == 0)
						return -1;
					else
						v4 = v4 * 10 + d;
					if (v4 > 255)
						return -1;
					p++;
				}
				addr[piece] = (uint16_t)(addr[piece] * 0x100 + v4);
				seen++;
				if (seen == 2 || seen == 4)
					piece++;
			}
			if (seen != 4)
				return -1;
			break;
		} else if (C(p) == ':') {
			if (++p >= n)
				return -1;
		} else if (p < n)
			return -1;
		addr[piece++] = (uint16_t)value;
	}
#undef C
	if (compress != -1) {
		int swaps = piece - compress;

		for (piece = 7; piece != 0 && swaps > 0; piece--, swaps--) {
			uint16_t t = addr[piece];

			addr[piece] = addr[compress + swaps - 1];
			addr[compress + swaps - 1] = t;
		}
	} else if (piece != 8)
		return -1;
	return 0;
}

/* WHATWG 3.7 IPv6 serializer: the first longest run of two or more zero
 * pieces becomes "::". */
static void
ipv6_serialize(struct sink *o, const uint16_t addr[8])
{
	static const char hex[] = "0123456789abcdef";
	int	 compress = -1, best = 1, ignore0 = 0;

	for (int i = 0; i < 8; i++) {
		int j = i;

		while (j < 8 && addr[j] == 0)
			j++;
		if (j - i > best) {
			best = j - i;
			compress = i;
		}
		if (j > i)
			i = j - 1;
	}
	for (int i = 0; i < 8; i++) {
		int started = 0;

		if (ignore0 && addr[i] == 0)
			continue;
		ignore0 = 0;
		if (compress == i) {
			sink_write(o, i == 0 ? "::" : ":", i == 0 ? 2 : 1);
			ignore0 = 1;
			continue;
		}
		for (int shift = 12; shift >= 0; shift -= 4) {
			unsigned d = (addr[i] >> shift) & 15;

			if (d != 0 || started || shift == 0) {
				sink_put(o, hex[d]);
				started = 1;
			}
		}
		if (i != 7)
			sink_put(o, ':');
	}
}

/* WHATWG IPv4 number parser: 0x hex, 0 octal, else decimal; saturates above
 * 2^32 so that every too-large number stays too large. */
static int
ipv4_number(const char *s, size_t n, uint64_t *v)
{
	unsigned	 base = 10;
	uint64_t	 x = 0;

	if (n == 0)
		return -1;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		n -= 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		s++;
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		int d = hex_value((unsigned char)s[i]);

		if (d < 0 || (unsigned)d >= base)
			return -1;
		x = x * base + (unsigned)d;
		if (x > 0xffffffffULL)
			x = 0x100000000ULL;
	}
	*v = x;
	return 0;
}

/* WHATWG "ends in a number": the last label (a trailing empty one aside) is
 * all digits or an IPv4 number, so the host must parse as IPv4. */
static int
ends_in_number(const char *s, size_t n)
{
	size_t		 end = n, start;
	uint64_t	 v;
	int		 digits = 1;

	if (end > 0 && s[end - 1] == '.')
		end--;
	/* a number ends in a digit of its base, or is "0x" */
	if (end == 0 || (hex_value((unsigned char)s[end - 1]) < 0 &&
	    (s[end - 1] | 0x20) != 'x'))
		return 0;
	for (start = end; start > 0 && s[start - 1] != '.'; start--)
		;
	for (size_t i = start; i < end; i++)
		digits &= is_digit((unsigned char)s[i]);
	if (end > start && digits)
		return 1;
	return ipv4_number(s + start, end - start, &v) == 0;
}

/* The IPv4 parser of WHATWG 3.5, serialised in dotted decimal. */
static int
ipv4_parse(struct sink *o, const char *s, size_t n)
{
	uint64_t	 part[4], addr = 0;
	size_t		 nparts = 0, start = 0;

	if (n > 0 && s[n - 1] == '.')
		n--;		/* one trailing dot is allowed */
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (nparts == 4 ||
		    ipv4_number(s + start, i - start, &part[nparts]) == -1)
			return -1;
		nparts++;
		start = i + 1;
	}
	for (size_t i = 0; i + 1 < nparts; i++) {
		if (part[i] > 255)
			return -1;
		addr = addr << 8 | part[i];
	}
	if (part[nparts - 1] >= (1ULL << (8 * (5 - nparts))))
		return -1;
	addr = addr << (8 * (5 - nparts)) | part[nparts - 1];
	for (int shift = 24; shift >= 0; shift -= 8) {
		unsigned b = (unsigned)(addr >> shift & 255);

		if (b >= 100)
			sink_put(o, (char)('0' + b / 100));
		if (b >= 10)
			sink_put(o, (char)('0' + b / 10 % 10));
		sink_put(o, (char)('0' + b % 10));
		if (shift > 0)
			sink_put(o, '.');
	}
	return 0;
}

/* One label through libidn2, or -1 if UTS #46 rejects it. */
static int
label_to_ascii(struct sink *o, const char *s, size_t n)
{
	char	 label[URL_LABELBUF], *ascii = NULL;
	int	 rc;

	if (n >= sizeof(label))
		return -1;
	memcpy(label, s, n);
	label[n] = '\0';
	rc = idn2_to_ascii_8z(label, &ascii, IDN2_NONTRANSITIONAL |
	    IDN2_NFC_INPUT);
	if (rc != IDN2_OK)	/* as browsers do, for symbols IDNA2008 lacks */
		rc = idn2_to_ascii_8z(label, &ascii, IDN2_TRANSITIONAL |
		    IDN2_NFC_INPUT);
	if (rc != IDN2_OK)
		return -1;
	sink_write(o, ascii, strlen(ascii));
	idn2_free(ascii);
	return 0;
}

/* 1 if s[i..n) starts with "xn--" in any case (an IDNA label). */
static int
is_xn_label(const char *s, size_t i, size_t n)
{
	return i + 4 <= n && to_lower(s[i]) == 'x' && to_lower(s[i + 1]) == 'n' &&
	    s[i + 2] == '-' && s[i + 3] == '-';
}

/*
 * WHATWG "domain to ASCII", label by label: an ASCII label that does not
 * start with "xn--" is only lower-cased (the standard's own fast path);
 * any other goes through libidn2.
 */
static int
domain_to_ascii(struct sink *o, const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		int ascii = 1;

		if (i < n && s[i] != '.')
			continue;
		for (size_t j = start; j < i; j++)
			ascii &= (unsigned char)s[j] < 0x80;
		if (ascii && !is_xn_label(s, start, i)) {
			for (size_t j = start; j < i; j++)
				sink_put(o, to_lower(s[j]));
		} else if (label_to_ascii(o, s + start, i - start) == -1)
			return -1;
		if (i < n)
			sink_put(o, '.');
		start = i + 1;
	}
	return o->full ? -1 : 0;
}

/*
 * A domain of a special URL the slow way: percent-decoded, then "domain to
 * ASCII", then checked for forbidden code points and read as IPv4 if it
 * ends in a number. Out of line: its buffers stay off the fast path's
 * stack.
 */
static __attribute__((noinline)) int
domain_parse(struct sink *o, const char *s, size_t n)
{
	char		 dec[URL_HOSTBUF], asc[URL_HOSTBUF];
	struct sink	 a = { asc, 0, sizeof(asc), 0 };
	size_t		 dn = 0;

	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (dn == sizeof(dec))
			return -1;
		if (s[i] == '%' && i + 2 < n &&
		    (hi = hex_value((unsigned char)s[i + 1])) >= 0 &&
		    (lo = hex_value((unsigned char)s[i + 2])) >= 0) {
			dec[dn++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			dec[dn++] = s[i];
	}
	/* NUL would cut the label libidn2 sees; it is forbidden anyway */
	if (memchr(dec, '\0', dn) != NULL || domain_to_ascii(&a, dec, dn) == -1)
		return -1;
	if (a.len == 0)
		return -1;
	for (size_t i = 0; i < a.len; i++)
		if (is_class((unsigned char)asc[i], FORBIDDEN_DOMAIN))
			return -1;
	if (ends_in_number(asc, a.len))
		return ipv4_parse(o, asc, a.len);
	sink_write(o, asc, a.len);
	return 0;
}

/*
 * The WHATWG host parser on s[0..n), serialised into o: "[v6]", IPv4, a
 * domain in ASCII (special schemes), or an opaque host (others).
 */
static int
host_parse(struct sink *o, const char *s, size_t n, int special)
{
	uint16_t	 v6[8];
	char		*d;

	if (n > 0 && s[0] == '[') {
		if (n < 2 || s[n - 1] != ']' || ipv6_parse(s + 1, n - 2, v6) == -1)
			return -1;
		sink_put(o, '[');
		ipv6_serialize(o, v6);
		sink_put(o, ']');
		return 0;
	}
	if (!special) {
		/* opaque host: C0 control set; lower case is seend's */
		for (size_t i = 0; i < n; i++)
			if (is_class((unsigned char)s[i], FORBIDDEN_HOST))
				return -1;
		for (size_t i = 0; i < n;) {
			size_t at = o->len;

			/* a letter, written or decoded; never an escape's hex */
			i += put_encoded(o, s, i, n, PE_C0);
			if (o->len == at + 1)
				o->p[at] = to_lower(o->p[at]);
		}
		return 0;
	}
	/* one limit for every path, whatever room the output has, so that
	 * url_host and url_normalize agree on what is a host */
	if (n == 0 || n > URL_HOSTBUF)
		return -1;
	/* The common case, and WHATWG's own shortcut: ASCII with nothing to
	 * decode and no "xn--" label is only lower-cased. */
	if (n > o->cap - o->len)	/* decoding might make it fit */
		return domain_parse(o, s, n);
	d = o->p + o->len;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!is_class(c, HOST_PLAIN)) {
			if (c >= 0x80 || c == '%')
				return domain_parse(o, s, n);
			return -1;	/* a forbidden domain code point */
		}
		if ((c | 0x20) == 'x' && (i == 0 || s[i - 1] == '.') &&
		    is_xn_label(s, i, n))
			return domain_parse(o, s, n);
		d[i] = to_lower((char)c);
	}
	if (ends_in_number(d, n))
		return ipv4_parse(o, s, n);
	o->len += n;
	return 0;
}

/* ---- scheme and authority ---- */

/* WHATWG's first step: C0 controls and spaces at both ends go. */
static const char *
url_trim(const char *in, size_t *len)
{
	size_t n = *len;

	while (n > 0 && (unsigned char)in[0] <= 0x20) {
		in++;
		n--;
	}
	while (n > 0 && (unsigned char)in[n - 1] <= 0x20)
		n--;
	*len = n;
	return in;
}

/* 1 if s holds a tab, CR or LF, which WHATWG removes anywhere. */
static int
has_tab_nl(const char *s, size_t n)
{
	const uint64_t	 ones = 0x0101010101010101ULL;
	size_t		 i = 0;
	uint64_t	 x;

	/* eight bytes at a time: is any below 14 (CR)? Only then look
	 * closer, as a key with control bytes is rare */
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, s + i, 8);
		if (((x - ones * 14) & ~x & ones * 0x80) != 0)
			goto closer;
	}
	for (; i < n; i++)
		if ((unsigned char)s[i] < 14)
			goto closer;
	return 0;
closer:
	return memchr(s, '\t', n) != NULL || memchr(s, '\n', n) != NULL ||
	    memchr(s, '\r', n) != NULL;
}

/* s without tab, CR and LF in scratch (URL_SCRATCH bytes, n at most). */
static size_t
strip_tab_nl(const char *s, size_t n, char *scratch)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!is_class((unsigned char)s[i], TAB_NL))
			scratch[k++] = s[i];
	return k;
}

static int
is_special_sep(const struct url_head *h, char c)
{
	return c == '/' || (h->special && c == '\\');
}

/*
 * The scheme, authority and port states of the basic URL parser, for s
 * without a base URL. Returns 0, or -1 where WHATWG returns failure (which
 * includes "no scheme").
 */
static int
url_parse_head(struct url_head *h, const char *s, size_t n)
{
	size_t	 p, at, end;

	memset(h, 0, sizeof(*h));
	h->s = s;
	h->n = n;
	h->default_port = -1;
	h->port = -1;
	if (n == 0 || !is_alpha((unsigned char)s[0]))
		return -1;
	for (p = 1; p < n && is_class((unsigned char)s[p], SCHEME); p++)
		;
	if (p == n || s[p] != ':')
		return -1;
	h->scheme_len = p++;
	if (h->scheme_len <= 5) {
		uint64_t key = 0;

		for (size_t i = 0; i < h->scheme_len; i++)
			key = key << 8 | (unsigned char)to_lower(s[i]);
		for (size_t i = 0; i < sizeof(special_schemes) /
		    sizeof(special_schemes[0]); i++)
			if (special_schemes[i].key == key) {
				h->special = 1;
				h->file = special_schemes[i].port == -1;
				h->default_port = special_schemes[i].port;
				break;
			}
	}
	if (h->file) {
		/* file state, file slash state, file host state */
		h->has_host = 1;
		h->host = h->host_end = p;
		if (p < n && is_special_sep(h, s[p]) && p + 1 < n &&
		    is_special_sep(h, s[p + 1])) {
			for (end = p + 2; end < n && !is_special_sep(h, s[end]) &&
			    s[end] != '?' && s[end] != '#'; end++)
				;
			/* "file://C|/x": a drive letter, not a host */
			if (end - (p + 2) == 2 && is_alpha((unsigned char)s[p + 2]) &&
			    (s[p + 3] == ':' || s[p + 3] == '|')) {
				h->rest = p + 2;
				return 0;
			}
			h->host = p + 2;
			h->host_end = end;
			h->rest = end;
		} else
			h->rest = p;
		return 0;
	}
	if (h->special) {
		/* special authority (ignore) slashes state */
		while (p < n && is_special_sep(h, s[p]))
			p++;
	} else if (p + 1 < n && s[p] == '/' && s[p + 1] == '/') {
		p += 2;
	} else {
		h->rest = p;		/* a path, or an opaque path */
		return 0;
	}
	/* authority state: up to the first separator; userinfo ends at the
	 * last "@" before it */
	h->has_host = 1;
	h->user = h->user_end = p;
	h->host = p;
	for (end = p;; end++) {
		while (end < n && !is_class((unsigned char)s[end], AUTH_STOP))
			end++;
		if (end == n || s[end] != '@') {
			if (end == n || !(s[end] == '\\' && !h->special))
				break;
			continue;	/* a "\" of another scheme */
		}
		h->has_user = 1;
		h->user_end = end;
		h->host = end + 1;
	}
	h->rest = end;
	if (h->has_user && h->host == end)
		return -1;		/* "u@" and no host */
	/* host state: the port starts at a ":" outside brackets */
	for (at = h->host; at < end && s[at] != ':'; at++)
		if (s[at] == '[')
			while (at + 1 < end && s[at] != ']')
				at++;
	h->host_end = at;
	if (h->host_end == h->host && (h->special || at < end))
		return -1;		/* empty host */
	if (at < end) {
		long port = 0;

		for (at++; at < end; at++) {
			if (!is_digit((unsigned char)s[at]))
				return -1;
			port = port * 10 + (s[at] - '0');
			if (port > 65535)
				return -1;
		}
		if (end > h->host_end + 1 && port != h->default_port)
			h->port = port;
	}
	return 0;
}

/* ---- the public functions ---- */

static int
host_of(const char *s, size_t n, char out[URL_HOST_MAX + 1])
{
	char		 buf[URL_HOSTBUF];	/* a long IPv4 form may fit */
	struct sink	 o = { buf, 0, sizeof(buf), 0 };
	struct url_head	 h;
	const char	*host;

	if (url_parse_head(&h, s, n) == -1 || !h.has_host ||
	    h.host_end == h.host || host_parse(&o, s + h.host,
	    h.host_end - h.host, h.special) == -1 || o.full)
		return -1;
	host = buf;
	n = o.len;
	if (n >= 2 && buf[0] == '[') {
		host++;
		n -= 2;
	} else if (n > 0 && buf[n - 1] == '.')
		n--;
	/* file: "localhost" is the empty host */
	if (n == 0 || n > URL_HOST_MAX ||
	    (h.file && n == 9 && memcmp(host, "localhost", 9) == 0))
		return -1;
	/* the hex of an escape in an opaque host too: rules are lower case */
	if (h.special)
		memcpy(out, host, n);
	else
		for (size_t i = 0; i < n; i++)
			out[i] = to_lower(host[i]);
	out[n] = '\0';
	return (int)n;
}

static __attribute__((noinline)) int
host_of_stripped(const char *s, size_t n, char out[URL_HOST_MAX + 1])
{
	char scratch[URL_SCRATCH];

	if (n > sizeof(scratch))
		return -1;
	return host_of(scratch, strip_tab_nl(s, n, scratch), out);
}

int
url_host(const char *key, size_t len, char out[URL_HOST_MAX + 1])
{
	const char *s = url_trim(key, &len);

	if (has_tab_nl(s, len))
		return host_of_stripped(s, len, out);
	return host_of(s, len, out);
}

/* The path, the list of segments WHATWG's path state builds, written as
 * "/seg" after path_start; "." and ".." are resolved as they end. */
static void
put_path(struct sink *o, const struct url_head *h, size_t p, size_t *pend)
{
	const char	*s = h->s;
	size_t		 n = h->n, path_start = o->len;

	for (;;) {
		size_t	 seg = o->len, q;
		char	 c;

		sink_put(o, '/');
		p = put_run(o, s, p, n, PLAIN_PATH);
		while (p < n && !is_special_sep(h, s[p]) && s[p] != '?' &&
		    s[p] != '#') {
			p += put_encoded(o, s, p, n, PE_PATH);
			p = put_run(o, s, p, n, PLAIN_PATH);
		}
		c = p < n ? s[p] : '\0';
		q = o->len - seg - 1;	/* the segment's length, "/" aside */
		if (!o->full && ((q == 1 && o->p[seg + 1] == '.') ||
		    (q == 2 && o->p[seg + 1] == '.' && o->p[seg + 2] == '.'))) {
			o->len = seg;
			if (q == 2 && o->len > path_start) {
				/* shorten: a file URL keeps its drive letter */
				size_t last = o->len;

				while (o->p[--last] != '/')
					;
				if (!(h->file && last == path_start &&
				    o->len - last == 3 && is_alpha(
				    (unsigned char)o->p[last + 1]) &&
				    o->p[last + 2] == ':'))
					o->len = last;
			}
			if (!is_special_sep(h, c))
				sink_put(o, '/');
		} else if (h->file && seg == path_start && q == 2 && !o->full &&
		    is_alpha((unsigned char)o->p[seg + 1]) &&
		    (o->p[seg + 2] == ':' || o->p[seg + 2] == '|'))
			o->p[seg + 2] = ':';	/* "C|" is the drive "C:" */
		if (!is_special_sep(h, c))
			break;
		p++;
	}
	*pend = p;
}

static size_t
normalize_of(const char *s, size_t n, char *out, size_t outcap)
{
	struct sink	 o = { out, 0, outcap, 0 };
	struct url_head	 h;
	size_t		 p, path_start, host_start;

	if (outcap == 0 || url_parse_head(&h, s, n) == -1)
		return 0;
	o.cap = outcap - 1;		/* room for the NUL */
	for (size_t i = 0; i < h.scheme_len; i++)
		sink_put(&o, to_lower(s[i]));
	sink_put(&o, ':');
	p = h.rest;
	if (h.has_host) {
		sink_write(&o, "//", 2);
		if (h.user_end > h.user) {
			/* username, then ":" password if there is one */
			size_t	 colon = h.user, mark = o.len;

			while (colon < h.user_end && h.s[colon] != ':')
				colon++;
			for (size_t i = h.user; i < colon;)
				i += put_encoded(&o, s, i, colon, PE_USERINFO);
			if (h.user_end - colon > 1) {
				sink_put(&o, ':');
				for (size_t i = colon + 1; i < h.user_end;)
					i += put_encoded(&o, s, i, h.user_end,
					    PE_USERINFO);
			}
			if (o.len > mark)
				sink_put(&o, '@');
		}
		host_start = o.len;
		if (h.host_end > h.host && host_parse(&o, s + h.host,
		    h.host_end - h.host, h.special) == -1)
			return 0;
		/* file: "localhost" is the empty host */
		if (h.file && o.len - host_start == 9 &&
		    memcmp(o.p + host_start, "localhost", 9) == 0)
			o.len = host_start;
		if (h.port != -1) {
			char	 buf[8];
			int	 pl = snprintf(buf, sizeof(buf), ":%ld", h.port);

			sink_write(&o, buf, (size_t)pl);
		}
	}
	path_start = o.len;
	if (!h.has_host && !h.special && (p == n || s[p] != '/')) {
		/* an opaque path ("mailto:a@b"): C0 control set; a space
		 * before "?" or "#" is escaped so that it is not trimmed */
		for (; p < n && s[p] != '?' && s[p] != '#';) {
			if (s[p] == ' ' && p + 1 < n &&
			    (s[p + 1] == '?' || s[p + 1] == '#')) {
				sink_write(&o, "%20", 3);
				p++;
			} else
				p += put_encoded(&o, s, p, n, PE_C0);
		}
	} else if (h.special || (p < n && s[p] != '?' && s[p] != '#')) {
		/* path start state: one leading separator is consumed */
		if (p < n && is_special_sep(&h, s[p]))
			p++;
		put_path(&o, &h, p, &p);
		/* no host and a path starting "//": "/." keeps it a path */
		if (!h.has_host && o.len - path_start >= 2 &&
		    o.p[path_start + 1] == '/' && !o.full) {
			sink_write(&o, "..", 2);
			memmove(o.p + path_start + 2, o.p + path_start,
			    o.len - path_start - 2);
			o.p[path_start] = '/';
			o.p[path_start + 1] = '.';
		}
	}
	if (p < n && s[p] == '?') {
		unsigned char set = h.special ? PE_SQUERY : PE_QUERY;

		sink_put(&o, '?');
		for (p = put_run(&o, s, p + 1, n, PLAIN_QUERY);
		    p < n && s[p] != '#';)
			p = put_run(&o, s, p + put_encoded(&o, s, p, n, set), n,
			    PLAIN_QUERY);
	}
	/* the fragment is dropped */
	if (o.full)
		return 0;
	out[o.len] = '\0';
	return o.len;
}

static __attribute__((noinline)) size_t
normalize_stripped(const char *s, size_t n, char *out, size_t outcap)
{
	char scratch[URL_SCRATCH];

	if (n > sizeof(scratch))
		return 0;
	return normalize_of(scratch, strip_tab_nl(s, n, scratch), out, outcap);
}

size_t
url_normalize(const char *in, size_t len, char *out, size_t outcap)
{
	const char *s = url_trim(in, &len);

	if (has_tab_nl(s, len))
		return normalize_stripped(s, len, out, outcap);
	return normalize_of(s, len, out, outcap);
}
