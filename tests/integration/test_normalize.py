"""
normalize = standard on a real daemon: the spellings of one URL are one
key, through the pipelined fast path and the general one alike; a filter
without it keeps keys as given; a reload that turns it on says so and
keeps every key.
"""
import signal

from seendtest import *

# one page, fourteen ways (issue 15): case of scheme and host, default
# port, fragment, dot segments, escapes of unreserved characters
SPELLINGS = [
    "http://example.com/a/b",
    "HTTP://Example.com:80/a/b#top",
    "http://EXAMPLE.COM/a/b",
    "http://example.com:80/a/b",
    "http://example.com/a/./b",
    "http://example.com/a/c/../b",
    "http://example.com/%61/b",
    "http://example.com/a/%62",
    "http://example.com/a/b#",
    "hTTp://eXample.Com/a/b#frag",
    "http://example.com/./a/b",
    "http://example.com:0080/a/b",
    "http://example.com/x/../a/b",
    "http://example.com:/a/b",
]

FILTERS = """
[filter.default]
capacity = 10000
error_rate = 0.001
normalize = standard
[filter.raw]
capacity = 10000
error_rate = 0.001
"""


@test
def spellings_of_one_url_are_one_key_in_a_normalizing_filter(t):
    with Server(t, filters=FILTERS) as s:
        c = s.client()
        t.eq(c.info("default")["normalize"], "standard", "INFO says so")
        # the first through the general path, the rest pipelined
        t.eq(c.cmd("SEEN default " + SPELLINGS[0]), "0", "first: new")
        keys = [k for k in SPELLINGS[1:] if " " not in k]
        c.send("".join("SEEN %s\n" % k for k in keys))
        got = [c.line() for _ in keys]
        t.eq(got, ["1"] * len(keys), "every other spelling is seen: %r"
             % list(zip(keys, got)))
        t.eq(c.cmd("CHECK http://example.com/a/B"), "0",
             "the path's case still matters")


@test
def a_filter_without_normalize_keeps_keys_as_given(t):
    with Server(t, filters=FILTERS) as s:
        c = s.client()
        t.eq(c.info("raw")["normalize"], "off", "INFO says off")
        got = [c.cmd("SEEN raw " + k) for k in SPELLINGS if " " not in k]
        t.eq(got.count("0"), len(got), "each spelling is its own key")


@test
def turning_normalize_on_by_reload_keeps_keys_and_says_so(t):
    s = Server(t, filters=FILTERS.replace("normalize = standard\n", ""))
    s.start()
    c = s.client()
    t.eq(c.cmd("SEEN HTTP://Example.com/x"), "0", "recorded as given")
    s.write_config(filters=FILTERS)
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: c.info("default")["normalize"] == "standard"),
         "applied by SIGHUP")
    t.contains(s.read_log(), "normalize standard", "the log says so")
    t.eq(c.cmd("SEEN http://example.com/y#z"), "0", "a new key")
    t.eq(c.cmd("SEEN HTTP://EXAMPLE.com/y"), "1", "its spelling is seen")
    s.stop()


if __name__ == "__main__":
    run()
