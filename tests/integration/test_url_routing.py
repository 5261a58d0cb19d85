"""hosts routing on a real seend finds a URL's host as the WHATWG URL
Standard does (issue 15): a backslash ends the host of an http(s) URL,
international and percent-encoded hosts match their xn-- rule, IPv4 and
IPv6 hosts in any form match their rule."""
from seendtest import *

FILTERS = DEFAULT_FILTERS + """
[filter.news]
capacity = 100000
error_rate = 0.001
hosts = bbc.co.uk xn--bcher-kva.example 127.0.0.1 [2001:db8::1]
normalize = standard
"""


def routed_to(s, key):
    """Sends SEEN key (UTF-8) without a filter name, then asks each filter
    by name which one recorded it: "news", "default", or what went wrong."""
    c = s.client()
    try:
        first = c.cmd("SEEN " + key)
        if first != "0":
            return "SEEN answered %r" % first
        got = [f for f in ("news", "default")
               if c.cmd("CHECK %s %s" % (f, key)) == "1"]
        return got[0] if len(got) == 1 else "recorded in %r" % (got,)
    finally:
        c.close()


@test
def backslash_ends_the_host_of_an_https_url(t):
    with Server(t, filters=FILTERS) as s:
        t.eq(routed_to(s, "https://u@bbc.co.uk/a"), "news",
             "userinfo@bbc.co.uk is bbc.co.uk")
        t.eq(routed_to(s, "https://evil.example\\@bbc.co.uk/"), "default",
             "evil.example\\@bbc.co.uk is evil.example, as browsers read it")
        t.eq(routed_to(s, "https://evil.example\\bbc.co.uk/"), "default",
             "a backslash is a path separator")
        t.eq(routed_to(s, "https:\\\\BBC.co.uk\\b"), "news",
             "backslashes after the scheme, and upper case")
        t.eq(routed_to(s, "https:bbc.co.uk/c"), "news",
             "no slashes after a special scheme")


@test
def international_hosts_match_their_punycode_rule(t):
    with Server(t, filters=FILTERS) as s:
        t.eq(routed_to(s, "http://bücher.example/a"), "news",
             "UTF-8 host")
        t.eq(routed_to(s, "http://BÜCHER.example/b"), "news",
             "UTF-8 host in upper case")
        t.eq(routed_to(s, "http://b%C3%BCcher.example/c"), "news",
             "percent-encoded UTF-8 host")
        t.eq(routed_to(s, "http://xn--bcher-kva.example/d"), "news",
             "the punycode itself")
        t.eq(routed_to(s, "http://bucher.example/e"), "default",
             "another host")


@test
def address_hosts_match_in_every_form(t):
    with Server(t, filters=FILTERS) as s:
        t.eq(routed_to(s, "http://0x7f.1/a"), "news", "0x7f.1 is 127.0.0.1")
        t.eq(routed_to(s, "http://2130706433/b"), "news",
             "2130706433 is 127.0.0.1")
        t.eq(routed_to(s, "http://127.0.0.1./c"), "news", "trailing dot")
        t.eq(routed_to(s, "http://127.0.0.2/d"), "default", "another address")
        t.eq(routed_to(s, "http://[2001:DB8:0:0:0:0:0:1]:8080/e"), "news",
             "IPv6 written out in full, upper case, with a port")


@test
def keys_that_are_not_urls_never_route_by_host(t):
    with Server(t, filters=FILTERS) as s:
        t.eq(routed_to(s, "bbc.co.uk/a"), "default", "no scheme")
        t.eq(routed_to(s, "https://bbc.co.uk:99999/b"), "default",
             "a port over 65535: not a URL")
        t.eq(routed_to(s, "mailto:x@bbc.co.uk"), "default",
             "mailto: has no host")


if __name__ == "__main__":
    run()
