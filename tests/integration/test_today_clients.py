"""
What today's Redis clients do against seend (INTERFACE.md, "Today's Redis
clients: RESP3 and what they send"): filter names behave as keys (TYPE,
KEYS, SCAN over hundreds of runtime filters, redis-cli --scan; the EXPIRE
family on a runtime filter answering as redis-server answers for a real set
key, the filter dropped with its files at its deadline, deadlines kept
across a restart and passing during one; config-file filters have no
deadline; UNLINK = DEL; DEL and line RESET of a config-file filter empty
it, also across kill -9); the Debian python3-redis (4.3) client with its
defaults; colly's Redis storage (gocolly/redisstorage on go-redis v6)
replayed byte for byte beside redis-server.
"""
import fnmatch
import os
import re
import signal
import subprocess
import time

from seendtest import *

redis = system_module("redis")

# runtime filters small enough that hundreds of them cost little
SMALL = "new_filter_capacity = 1000\nnew_filter_error_rate = 0.01\n"
U = "https://a.example/"


class Near:
    """An integer reply that may differ by the time between two servers'
    clocks being read: within slack of Redis's."""

    def __init__(self, slack, *words):
        self.slack, self.words = slack, words

    def check(self, g, w):
        ok = g[:1] == w[:1] == b":"
        if ok:
            gv, wv = int(g[1:-2]), int(w[1:-2])
            ok = abs(gv - wv) <= self.slack * SLOW and (gv < 0) == (wv < 0)
        return [] if ok else ["%r, Redis's %r (within %s)" % (
            g, w, self.slack)]


class Any:
    """A reply of the same RESP type, its value the server's own (HELLO's
    server, version and id)."""

    def __init__(self, *words):
        self.words = words

    def check(self, g, w):
        if g[:1] != w[:1] or g.endswith(b">"):
            return ["%r, Redis's %r" % (g[:60], w[:60])]
        return []


def files_of(s, name):
    return sorted(f for f in os.listdir(s.data_dir)
                  if f == name or f.startswith(name + "."))


# ---- TYPE, KEYS, SCAN ----

CONFIG_FILTERS = """
[filter.default]
capacity = 100000
error_rate = 0.001

[filter.news]
capacity = 10000
error_rate = 0.001
hosts = news.example
"""


def make_runtime_filters(c, n=300):
    """n runtime filters, half by BF.RESERVE, half by SADD; their names."""
    names = []
    cmds = []
    for i in range(n):
        if i % 2:
            name = "bf-%d" % i
            cmds.append(["BF.RESERVE", name, "0.01", "100"])
        else:
            name = "set:%d" % i
            cmds.append(["SADD", name, "m"])
        names.append(name)
    for i in range(0, len(cmds), 100):
        for rep in c.pipeline(cmds[i:i + 100]):
            if rep not in (b"+OK\r\n", b":1\r\n"):
                raise Failed("creating filters: %r" % rep)
    return names


def scan_all(c, *opts):
    """Iterates SCAN to cursor 0; every name in the order listed, and the
    number of calls."""
    cursor, names, calls = b"0", [], 0
    while True:
        rep = c.cmd("SCAN", cursor, *opts)
        v = val(rep)
        if not (isinstance(v, list) and len(v) == 2 and
                isinstance(v[0], bytes) and isinstance(v[1], list)):
            raise Failed("SCAN %s %s: not [cursor, [names]]: %r" % (
                cursor, opts, rep[:200]))
        t_ok = re.fullmatch(rb"\d+", v[0])
        if not t_ok:
            raise Failed("SCAN cursor not decimal: %r" % v[0])
        names += v[1]
        calls += 1
        cursor = v[0]
        if cursor == b"0":
            return names, calls
        if calls > 10000:
            raise Failed("SCAN never ends")


@test
def type_keys_and_scan_list_every_filter_exactly_once(t):
    with Server(t, server_extra=SMALL, filters=CONFIG_FILTERS) as s:
        c = RespBytes(s.port)
        runtime = make_runtime_filters(c, 300)
        blooms = set(runtime) | {"default", "news"}
        every = blooms
        # TYPE
        t.eq(c.cmd("TYPE", "bf-1"), b"+MBbloom--\r\n", "TYPE of a BF.RESERVE")
        t.eq(c.cmd("TYPE", "set:0"), b"+MBbloom--\r\n", "TYPE of an SADD")
        t.eq(c.cmd("TYPE", "default"), b"+MBbloom--\r\n", "TYPE of a config "
             "filter")
        t.eq(c.cmd("TYPE", "nofilter"), b"+none\r\n", "TYPE of no filter")
        t.eq(c.cmd("TYPE", U + "1"), b"+none\r\n", "TYPE of a URL")
        # KEYS
        for resp3 in (False, True):
            if resp3:
                t.eq(c.cmd("HELLO", "3")[:1], b"%", "HELLO 3")
            keys = [k.decode() for k in val(c.cmd("KEYS", "*"))]
            t.eq(len(keys), len(set(keys)), "KEYS * lists each name once")
            t.eq(set(keys), every, "KEYS * lists every filter")
            for pat in ("bf-1*", "set:2?", "*-1", "news", "x*", "set:[12]0",
                        "*:*9", "b?-*7"):
                got = sorted(k.decode() for k in val(c.cmd("KEYS", pat)))
                t.eq(got, sorted(n for n in every
                                 if fnmatch.fnmatchcase(n, pat)),
                     "KEYS %s" % pat)
            # SCAN, plain and with options
            for opts, want in (
                    ((), every),
                    (("COUNT", "7"), every),
                    (("COUNT", "1000"), every),
                    (("MATCH", "bf-2*"), {n for n in every
                                          if n.startswith("bf-2")}),
                    (("MATCH", "set:*", "COUNT", "25"),
                     {n for n in every if n.startswith("set:")}),
                    (("TYPE", "MBbloom--"), blooms),
                    (("TYPE", "MBbloomCF"), set()),
                    (("TYPE", "set"), set()),
                    (("TYPE", "MBbloom--", "MATCH", "*1", "COUNT", "3"),
                     {n for n in blooms if n.endswith("1")})):
                names, calls = scan_all(c, *opts)
                names = [n.decode() for n in names]
                t.eq(len(names), len(set(names)),
                     "SCAN %s: a name listed twice" % (opts,))
                t.eq(set(names), want, "SCAN %s" % (opts,))
                if opts == ("COUNT", "7"):
                    t.ok(calls > 5, "SCAN COUNT 7 over 303 names pages: %d "
                         "calls" % calls)
        t.eq(c.cmd("SCAN", "x"), b"-ERR invalid cursor\r\n", "SCAN x")
        t.eq(c.cmd("SCAN", "0", "COUNT", "0"), b"-ERR syntax error\r\n",
             "SCAN COUNT 0")
        t.eq(c.cmd("SCAN", "0", "FOO"), b"-ERR syntax error\r\n", "SCAN FOO")
        c.close()


@test
def scan_and_keys_replies_have_redis_shapes(t):
    # the same requests to redis-server and seend, each holding one key
    # "crawl" (a set there, a filter here): the same bytes
    r = RedisServer(t)
    with Server(t, server_extra=SMALL) as s:
        rc = RespBytes(r.port)
        t.eq(rc.cmd("SADD", "crawl", "a"), b":1\r\n")
        rc.close()
        c = RespBytes(s.port)
        t.eq(c.cmd("SADD", "crawl", "a"), b":1\r\n")
        c.close()
        cases = [["KEYS", "cr*"], ["KEYS", "nomatch*"],
                 ["SCAN", "0", "MATCH", "cr*", "COUNT", "1000"],
                 ["SCAN", "0", "MATCH", "nomatch*"],
                 ["SCAN", "0", "TYPE", "nosuchtype"],
                 ["SCAN", "x"], ["SCAN", "0", "COUNT", "x"],
                 ["SCAN", "0", "MATCH"], ["SCAN", "0", "FOO", "1"],
                 ["TYPE", "nofilter"], ["TYPE", "a", "b"], ["KEYS", "a", "b"],
                 Differ(["TYPE", "crawl"], b"+MBbloom--\r\n", b"+set\r\n",
                        "a filter is RedisBloom's type")]
        side_by_side(t, s.port, r.port, cases, "RESP2")
        side_by_side(t, s.port, r.port, [Any("HELLO", "3")] + cases, "RESP3")
    r.stop()


def cli(port, *args):
    p = subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60 * SLOW)
    return p.returncode, p.stdout.decode(errors="replace")


@test
def redis_cli_scan_lists_every_filter_once(t):
    with Server(t, server_extra=SMALL, filters=CONFIG_FILTERS) as s:
        c = RespBytes(s.port)
        every = set(make_runtime_filters(c, 300)) | {"default", "news"}
        c.close()
        for proto in ((), ("-3",), ("-2",)):
            for extra, want in (
                    ((), every),
                    (("--pattern", "bf-1*"),
                     {n for n in every if n.startswith("bf-1")}),
                    (("--pattern", "x*"), set()),
                    (("--pattern", "set:*"),
                     {n for n in every if n.startswith("set:")})):
                rc, out = cli(s.port, *(proto + ("--scan",) + extra))
                t.eq(rc, 0, "redis-cli %s --scan %s: %r" % (proto, extra,
                                                            out[-300:]))
                lines = out.splitlines()
                t.eq(len(lines), len(set(lines)),
                     "redis-cli %s --scan %s lists a name twice" % (
                         proto, extra))
                t.eq(set(lines), want, "redis-cli %s --scan %s" % (proto,
                                                                 extra))
        rc, out = cli(s.port, "-3", "type", "bf-1")
        t.eq(out, "MBbloom--\n", "redis-cli -3 type")
        rc, out = cli(s.port, "keys", "news")
        t.eq(out, "news\n", "redis-cli keys news")


# ---- the EXPIRE family ----

@test
def expire_family_on_a_runtime_filter_answers_as_redis_on_a_set_key(t):
    r = RedisServer(t)
    with Server(t, server_extra=SMALL) as s:
        for proto in ("RESP2", "RESP3"):
            p = proto + ":"
            cases = expire_cases(p)
            if proto == "RESP3":
                cases = [Any("HELLO", "3")] + cases
            side_by_side(t, s.port, r.port, cases, proto)
    r.stop()


def expire_cases(p):
    """The EXPIRE family on keys named p + ...: a set key on Redis, a
    runtime filter on seend."""
    far = int(time.time()) + 5000
    n = lambda name: p + name
    cases = [
        ["SADD", n("crawl"), "a"], ["SADD", n("gone"), "a"],
        ["SADD", n("u1"), "a"], ["SADD", n("u2"), "a"], ["SADD", n("d1"), "a"],
        ["TTL", n("crawl")], ["PTTL", n("crawl")],
        ["TTL", "nofilter"], ["PTTL", "nofilter"],
        ["EXPIRE", n("crawl"), "100"], Near(2, "TTL", n("crawl")),
        Near(2000, "PTTL", n("crawl")),
        ["EXPIRE", n("crawl"), "10", "NX"], ["EXPIRE", n("crawl"), "200", "XX"],
        Near(2, "TTL", n("crawl")),
        ["EXPIRE", n("crawl"), "300", "GT"], ["EXPIRE", n("crawl"), "10", "GT"],
        ["EXPIRE", n("crawl"), "50", "LT"], ["EXPIRE", n("crawl"), "900", "LT"],
        Near(2, "TTL", n("crawl")),
        ["EXPIRE", n("crawl"), "10", "FOO"], ["EXPIRE", n("crawl"), "x"],
        ["EXPIRE", n("crawl"), "10", "NX", "XX"],
        ["EXPIRE", n("crawl"), "10", "GT", "LT"],
        ["EXPIRE", n("crawl"), "10", "NX", "GT"],
        ["EXPIRE", n("crawl"), "99999999999999999"],
        ["EXPIRE", n("crawl")], ["EXPIRE", n("crawl"), "1", "2", "3"],
        ["PERSIST", n("crawl")], ["PERSIST", n("crawl")], ["TTL", n("crawl")],
        ["EXPIRE", n("crawl"), "10", "XX"], ["TTL", n("crawl")],
        ["PEXPIRE", n("crawl"), "100000"], Near(2000, "PTTL", n("crawl")),
        Near(2, "TTL", n("crawl")),
        ["PEXPIRE", n("crawl"), "1000", "GT"], ["PEXPIRE", n("crawl"), "x"],
        ["EXPIREAT", n("crawl"), str(far)], Near(3, "TTL", n("crawl")),
        ["PEXPIREAT", n("crawl"), str(far * 1000 + 500)],
        Near(3000, "PTTL", n("crawl")),
        ["EXPIREAT", n("crawl"), str(far), "NX"],
        ["PERSIST", n("crawl")], ["TTL", n("crawl")], ["PTTL", n("crawl")],
        ["EXPIRE", "nofilter", "10"], ["PEXPIRE", "nofilter", "10"],
        ["EXPIREAT", "nofilter", str(far)], ["PERSIST", "nofilter"],
        # a deadline now or past drops it at once
        ["EXPIRE", n("gone"), "0"], ["TYPE", n("gone")], ["TTL", n("gone")],
        ["SCARD", n("gone")], ["EXPIRE", n("gone"), "10"],
        ["SADD", n("gone"), "b"], ["EXPIREAT", n("gone"), "1"],
        ["TYPE", n("gone")], ["SADD", n("gone"), "c"],
        ["PEXPIRE", n("gone"), "-5"], ["TYPE", n("gone")],
        # UNLINK is DEL
        ["UNLINK", n("u1"), n("u2"), "nofilter"], ["UNLINK", n("u1")],
        ["TYPE", n("u1")], ["UNLINK"],
        ["EXPIRE", n("d1"), "100"], ["DEL", n("d1")], ["TTL", n("d1")],
        ["SADD", n("d1"), "x"], ["TTL", n("d1")],
        ["EXPIRE", n("crawl"), "100"],
        ["SADD", n("crawl"), "more"], Near(2, "TTL", n("crawl")),
    ]
    return cases


@test
def expire_family_in_resp3(t):
    with Server(t, server_extra=SMALL) as s:
        c = RespBytes(s.port)
        c.cmd("HELLO", "3")
        t.eq(c.cmd("BF.RESERVE", "f", "0.01", "100"), b"+OK\r\n")
        t.eq(c.cmd("TTL", "f"), b":-1\r\n")
        t.eq(c.cmd("EXPIRE", "f", "100"), b":1\r\n")
        ttl = val(c.cmd("TTL", "f"))
        t.ok(95 <= ttl <= 100, "TTL %r" % ttl)
        t.eq(c.cmd("PERSIST", "f"), b":1\r\n")
        t.eq(c.cmd("TTL", "nofilter"), b":-2\r\n")
        t.eq(c.cmd("TYPE", "f"), b"+MBbloom--\r\n")
        c.close()


@test
def a_runtime_filter_is_dropped_with_its_files_at_its_deadline(t):
    with Server(t, server_extra=SMALL) as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("BF.RESERVE", "short", "0.01", "100"), b"+OK\r\n")
        t.eq(c.cmd("BF.ADD", "short", "k"), b":1\r\n")
        t.eq(c.cmd("SADD", "longer", "k"), b":1\r\n")
        t.eq(c.line("SAVE"), "OK", "SAVE")
        t.ok(files_of(s, "short"), "short has snapshot files: %r" %
             os.listdir(s.data_dir))
        # the deadline is at least 1.5 s after t0, taken before PEXPIRE is
        # sent (the server reads its clock on receiving it): however late
        # the requests below are answered, the drop cannot be seen sooner
        t0 = time.time()
        t.eq(c.cmd("PEXPIRE", "short", "1500"), b":1\r\n")
        t.eq(c.cmd("EXPIRE", "longer", "3600"), b":1\r\n")
        # alive before its deadline (asked later, it may have gone)
        for words, want in ((["TYPE", "short"], b"+MBbloom--\r\n"),
                            (["BF.EXISTS", "short", "k"], b":1\r\n")):
            rep = c.cmd(*words)
            dt = time.time() - t0
            t.ok(rep == want or dt >= 1.49, "%s answered %r %.3f s after "
                 "the PEXPIRE 1500 was sent" % (" ".join(words), rep, dt))
        t.ok(wait_until(lambda: c.cmd("TYPE", "short") == b"+none\r\n",
                        timeout=15), "short not dropped within 15 s")
        dt = time.time() - t0
        # 10 ms: the server's clock is read in whole milliseconds
        t.ok(dt >= 1.49, "dropped %.3f s after the PEXPIRE 1500 was sent, "
             "before its deadline" % dt)
        t.ok(wait_until(lambda: not files_of(s, "short"), timeout=10),
             "its files stay: %r" % files_of(s, "short"))
        t.eq(c.cmd("TTL", "short"), b":-2\r\n")
        t.eq(c.cmd("EXISTS", "short"), b":0\r\n")
        t.ok(b"short" not in c.cmd("KEYS", "*"), "KEYS lists it")
        t.ok("short" not in filters_listed(c), "FILTERS lists it")
        t.eq(c.cmd("TYPE", "longer"), b"+MBbloom--\r\n", "the other stays")
        # the name is free again, without the old keys
        t.eq(c.cmd("BF.RESERVE", "short", "0.01", "100"), b"+OK\r\n")
        t.eq(c.cmd("BF.EXISTS", "short", "k"), b":0\r\n")
        t.eq(c.cmd("TTL", "short"), b":-1\r\n", "a new filter, no deadline")
        c.close()


def filters_listed(c):
    c.s.sendall(b"FILTERS\r\n")
    names = []
    while True:
        l = c._line()[:-2].decode()
        if l == "END":
            return names
        names.append(l.split(" ", 1)[0])


@test
def deadlines_survive_restart_and_pass_during_one(t):
    s = Server(t, server_extra=SMALL)
    s.start()
    c = RespBytes(s.port)
    for name in ("kept", "passes", "forever"):
        t.eq(c.cmd("SADD", name, "k"), b":1\r\n")
    t.eq(c.cmd("EXPIRE", "kept", "3600"), b":1\r\n")
    t.eq(c.cmd("EXPIRE", "passes", "3"), b":1\r\n")
    deadline = time.time() + 3
    c.close()
    t.eq(s.stop(signal.SIGTERM), 0, "SIGTERM exit status")
    time.sleep(max(deadline + 1.5 - time.time(), 0))
    s.start()
    c = RespBytes(s.port)
    ttl = val(c.cmd("TTL", "kept"))
    t.ok(isinstance(ttl, int) and 3500 <= ttl <= 3600,
         "TTL of kept after restart: %r" % ttl)
    t.eq(c.cmd("SISMEMBER", "kept", "k"), b":1\r\n", "kept keeps its keys")
    # dropped at start, or by the first one-second sweep at the latest
    t.ok(wait_until(lambda: c.cmd("TYPE", "passes") == b"+none\r\n",
                    timeout=5), "passes, whose deadline passed during the "
         "restart, is still there")
    t.eq(c.cmd("TTL", "passes"), b":-2\r\n")
    t.eq(c.cmd("TTL", "forever"), b":-1\r\n")
    t.ok("passes" not in filters_listed(c), "FILTERS lists passes")
    t.eq(files_of(s, "passes"), [], "files of passes")
    # PERSIST is kept too
    t.eq(c.cmd("PERSIST", "kept"), b":1\r\n")
    c.close()
    t.eq(s.stop(), 0)
    s.start()
    c = RespBytes(s.port)
    t.eq(c.cmd("TTL", "kept"), b":-1\r\n", "PERSIST kept across restart")
    c.close()
    s.stop()


@test
def config_file_filters_have_no_deadline(t):
    # Every EXPIRE-family request on a config-file filter is refused and
    # changes nothing: a time already past (which drops a runtime filter
    # at once) and deadlines to come alike, the shortest last so that none
    # asked after it would hide it. No PERSIST in between (it would hide a
    # deadline wrongly set); after each request the filter still holds
    # its keys and answers TTL -1, and once the shortest deadline and a
    # one-second sweep have passed it is still there with its keys.
    keys = {"default": [U + "cfg/%d" % i for i in range(50)],
            "news": ["https://news.example/cfg/%d" % i for i in range(50)]}
    with Server(t, filters=CONFIG_FILTERS) as s:
        c = RespBytes(s.port)
        for name, ks in keys.items():
            t.eq(seen_keys(c, ks, name), ["0"] * len(ks), "SEEN %s" % name)
        past = int(time.time()) - 10
        for name, ks in keys.items():
            for words in (["EXPIREAT", name, str(past)],
                          ["PEXPIREAT", name, str(past * 1000)],
                          ["EXPIRE", name, "-1"], ["PEXPIRE", name, "0"],
                          ["EXPIREAT", name, "4102444800"],
                          ["PEXPIREAT", name, "4102444800000"],
                          ["EXPIRE", name, "10"], ["PEXPIRE", name, "10"]):
                what = " ".join(words)
                rep = c.cmd(*words)
                t.ok(rep.startswith(b"-ERR "), "%s: %r is not an error" % (
                    what, rep))
                t.eq(c.cmd("TTL", name), b":-1\r\n", "TTL after " + what)
                t.eq(c.cmd("PTTL", name), b":-1\r\n", "PTTL after " + what)
                t.eq(c.cmd("TYPE", name), b"+MBbloom--\r\n",
                     "TYPE after " + what)
                t.eq(count_of(c, name), len(ks), "SCARD after " + what)
                t.eq(check_keys(c, ks, name), ["1"] * len(ks),
                     "its keys after " + what)
        # PEXPIRE 10 was the last: past it, and past the sweep after it
        time.sleep(1.5)
        for name, ks in keys.items():
            t.eq(c.cmd("TYPE", name), b"+MBbloom--\r\n", "%s, after the "
                 "PEXPIRE 10 refused and a sweep" % name)
            t.eq(check_keys(c, ks, name), ["1"] * len(ks),
                 "%s keeps its keys after the PEXPIRE 10 refused" % name)
            rep = c.cmd("PERSIST", name)
            t.ok(rep.startswith(b"-ERR "), "PERSIST %s: %r is not an "
                 "error" % (name, rep))
            t.eq(c.cmd("TTL", name), b":-1\r\n", "TTL %s" % name)
        c.close()


# ---- DEL / UNLINK / RESET of a config-file filter ----

def seen_keys(c, keys, filt=None):
    c.s.sendall("".join("SEEN %s%s\r\n" % (filt + " " if filt else "", k)
                        for k in keys).encode())
    return [c._line()[:-2].decode() for _ in keys]


def check_keys(c, keys, filt=None):
    c.s.sendall("".join("CHECK %s%s\r\n" % (filt + " " if filt else "", k)
                        for k in keys).encode())
    return [c._line()[:-2].decode() for _ in keys]


def count_of(c, name):
    return val(c.cmd("SCARD", name))


@test
def del_and_reset_empty_a_config_file_filter_and_keep_it(t):
    keys = [U + "del/%d" % i for i in range(200)]
    with Server(t, filters=CONFIG_FILTERS) as s:
        c = RespBytes(s.port)
        t.eq(seen_keys(c, keys), ["0"] * len(keys), "first SEENs")
        t.eq(c.line("SAVE"), "OK")
        t.eq(count_of(c, "default"), 200)
        t.eq(c.cmd("DEL", "default", "nofilter"), b":1\r\n",
             "DEL of a config filter counts 1")
        # an empty filter has no bit set: every CHECK is exactly 0
        t.eq(check_keys(c, keys), ["0"] * len(keys), "CHECK after DEL")
        t.eq(count_of(c, "default"), 0, "count after DEL")
        t.eq(c.cmd("TYPE", "default"), b"+MBbloom--\r\n", "still a filter")
        t.ok("default" in filters_listed(c), "still in FILTERS")
        t.eq(seen_keys(c, keys[:1]), ["0"], "the next SEEN of an old key")
        t.eq(c.cmd("UNLINK", "default"), b":1\r\n", "UNLINK empties too")
        t.eq(check_keys(c, keys[:50]), ["0"] * 50, "CHECK after UNLINK")
        # line RESET
        t.eq(seen_keys(c, keys[:20], "news"), ["0"] * 20)
        t.eq(c.line("RESET news"), "OK", "RESET news")
        t.eq(check_keys(c, keys[:20], "news"), ["0"] * 20, "after RESET")
        t.ok(c.line("RESET nofilter").startswith("ERR "),
             "RESET of no filter is an error")
        t.eq(c.cmd("SADD", "rt", "m"), b":1\r\n")
        t.eq(c.line("RESET rt"), "OK", "RESET of a runtime filter")
        t.eq(c.cmd("SISMEMBER", "rt", "m"), b":0\r\n")
        t.eq(c.cmd("TYPE", "rt"), b"+MBbloom--\r\n", "RESET keeps it")
        c.close()
        # snapshots are reset: a restart keeps them empty
        t.eq(s.stop(), 0)
        s.start()
        c = RespBytes(s.port)
        t.eq(check_keys(c, keys[1:]), ["0"] * (len(keys) - 1),
             "after restart")
        t.eq(check_keys(c, keys[:20], "news"), ["0"] * 20, "news after "
             "restart")
        t.eq(count_of(c, "default"), 0)
        c.close()


def kill9_after_del(t, save_first):
    keys = [U + "k9/%d" % i for i in range(300)]
    extra = "journal = everysec\nsnapshot_interval = 0"
    with Server(t, server_extra=extra) as s:
        c = RespBytes(s.port)
        t.eq(seen_keys(c, keys), ["0"] * len(keys))
        if save_first:
            t.eq(c.line("SAVE"), "OK")
        t.eq(c.cmd("DEL", "default"), b":1\r\n")
        c.close()
        s.kill9()
        s.start()
        c = RespBytes(s.port)
        t.eq(check_keys(c, keys), ["0"] * len(keys),
             "a kill -9 right after DEL brought keys back")
        t.eq(count_of(c, "default"), 0, "count after restart")
        # and keys recorded after the DEL are kept
        t.eq(seen_keys(c, keys[:5]), ["0"] * 5)
        c.close()
        s.kill9()
        s.start()
        c = RespBytes(s.port)
        t.eq(check_keys(c, keys[:5]), ["1"] * 5, "keys after the DEL kept")
        c.close()


@test
def kill_9_right_after_del_keeps_the_filter_empty(t):
    kill9_after_del(t, save_first=True)


@test
def kill_9_right_after_del_of_journal_only_keys(t):
    kill9_after_del(t, save_first=False)


# ---- python3-redis (Debian, 4.3) ----

def redis_py_calls(t, r, label):
    a, b, z = U + "py/a", U + "py/b", U + "py/none"
    t.eq(r.ping(), True, label + " ping")
    t.eq(r.set(a, 1), True, label + " set")
    t.eq(r.set(b, 1, nx=True), True, label + " set nx new")
    t.eq(r.set(b, 1, nx=True), None, label + " set nx seen")
    t.eq(r.set(U + "py/c", 1, ex=60, nx=True), True, label + " set ex nx")
    t.eq(r.set(U + "py/d", 1, px=60000), True, label + " set px")
    t.eq(r.set(U + "py/d", 1, keepttl=True), True, label + " set keepttl")
    t.eq(r.get(a), b"1", label + " get seen")
    t.eq(r.get(z), None, label + " get unseen")
    t.eq(r.mget([a, z, b]), [b"1", None, b"1"], label + " mget")
    t.eq(r.setnx(U + "py/e", 1), True, label + " setnx new")
    t.eq(r.setnx(U + "py/e", 1), False, label + " setnx seen")
    t.eq(r.exists(a, z, b), 2, label + " exists")
    t.eq(r.sadd("pyset", "m1", "m2", "m1"), 2, label + " sadd")
    t.eq(r.sismember("pyset", "m1"), True, label + " sismember")
    t.eq(r.type("pyset"), b"MBbloom--", label + " type")
    t.eq(r.type("nofilter"), b"none", label + " type of none")
    names = list(r.scan_iter())
    t.eq(len(names), len(set(names)), label + " scan_iter once each")
    t.ok({b"pyset", b"default"} <= set(names), label + " scan_iter: %r"
         % names)
    t.eq(list(r.scan_iter(match="py*")), [b"pyset"], label + " scan match")
    t.ok(b"pyset" in list(r.scan_iter(_type="MBbloom--")),
         label + " scan _type")
    t.eq(r.keys("py*"), [b"pyset"], label + " keys")
    t.eq(r.ttl("pyset"), -1, label + " ttl none")
    t.eq(r.expire("pyset", 100), True, label + " expire")
    ttl = r.ttl("pyset")
    t.ok(95 <= ttl <= 100, label + " ttl %r" % ttl)
    t.ok(90000 <= r.pttl("pyset") <= 100000, label + " pttl")
    t.eq(r.persist("pyset"), True, label + " persist")
    t.eq(r.ttl("pyset"), -1, label + " ttl after persist")
    t.eq(r.expire("nofilter", 10), False, label + " expire of none")
    t.eq(r.ttl("nofilter"), -2, label + " ttl of none")
    t.eq(r.unlink("pyset"), 1, label + " unlink")
    t.eq(r.type("pyset"), b"none", label + " type after unlink")
    t.ok(r.dbsize() >= 1, label + " dbsize")
    p = r.pipeline(transaction=False)
    p.set(U + "py/p1", 1, nx=True)
    p.set(U + "py/p1", 1, nx=True)
    p.get(U + "py/p1")
    p.get(U + "py/p2")
    t.eq(p.execute(), [True, None, b"1", None], label + " pipeline")


@test
def debian_redis_py_with_its_defaults(t):
    with Server(t, server_extra=SMALL) as s:
        r = redis.Redis(host="127.0.0.1", port=s.port,
                        socket_timeout=10 * SLOW)
        redis_py_calls(t, r, "redis-py %s" % redis.__version__)
        r.close()
        r = redis.Redis(host="127.0.0.1", port=s.port, client_name="crawler",
                        socket_timeout=10 * SLOW)
        t.eq(r.client_getname(), "crawler", "client_name")
        t.ok(isinstance(r.client_id(), int), "client_id")
        r.close()


# ---- colly's Redis storage ----
#
# gocolly/redisstorage (redisstorage.go) on go-redis v6 (v6.15.9): Init
# sends "ping"; Visited(id) "set :request:<id> 1" (with Expires > 0
# "set ... ex <s>", or "px <ms>" for a duration that is not whole
# seconds); IsVisited(id) "get :request:<id>", nil meaning not visited;
# SetCookies "set :cookie:<host> <cookies>", Cookies "get
# :cookie:<host>". go-redis v6's initConn sends nothing when Password is
# "" and DB is 0; with a Password it pipelines "auth <pw>" (and "select
# <db>" when DB > 0). Command names go lowercase, as here.

def colly_id(n):
    return ":request:%d" % (1844674407370955161 * n % (1 << 64))


def colly_stream():
    a, b, c = colly_id(1), colly_id(2), colly_id(3)
    return [
        ["ping"],
        ["get", a], ["set", a, "1"], ["get", a],
        ["get", b], ["set", b, "1", "ex", "86400"], ["get", b],
        ["get", c], ["set", c, "1", "px", "1500"], ["get", c],
        ["set", a, "1"], ["get", a],
        Differ(["set", ":cookie:a.example", "session=1; path=/"],
               b"-ERR seend stores keys, not values: SET <key> 1 records a "
               b"key\r\n", b"+OK\r\n",
               "seend keeps no values: a SET of another value than 1 is "
               "refused, loudly (colly's cookies belong in Redis)"),
        Differ(["get", ":cookie:a.example"], b"$-1\r\n",
               b"$17\r\nsession=1; path=/\r\n",
               "the refused SET recorded nothing"),
        ["get", ":cookie:b.example"],
    ]


@test
def colly_redis_storage_sequence_byte_for_byte(t):
    r = RedisServer(t)
    with Server(t) as s:
        side_by_side(t, s.port, r.port, colly_stream(), "colly")
    r.stop()


@test
def colly_redis_storage_with_a_password(t):
    r = RedisServer(t)
    t.eq(r.talk(enc("CONFIG", "SET", "requirepass", "pw"), 1.0), b"+OK\r\n")
    with Server(t, server_extra="auth_token = pw") as s:
        stream = [["auth", "pw"]] + colly_stream()
        side_by_side(t, s.port, r.port, stream, "colly+auth")
    r.stop()


if __name__ == "__main__":
    run()
