"""
MERGE <dst> <src> [<src> ...] (seend(8); src/cmd_merge.c, src/merge.c):
afterwards dst answers seen for every key any source answered seen.

What is checked: the union of filters of different seeds (merged slices)
and of copies of one dump (OR-ed, no merged slice) holds every key of
every source, with count added up and the sources unchanged; the
estimated_fp_rate INFO shows after a merge is the rate measured on fresh
keys (within a statistical bound), and may exceed error_rate; refused
merges (the destination among the sources, a missing source, another
expire or normalize, arity) change nothing; a growth = off destination
pushed past its capacity is full; the line protocol's MERGE of two
sources and its four-token limit; keys added to the destination while a
merge runs stay; PING is answered while a big merge runs; an
acknowledged merge survives SIGTERM and kill -9 (the +OK waits for the
snapshot); a merged filter survives BF.SCANDUMP/BF.LOADCHUNK; DEL of the
destination or of a source during a merge does not crash the daemon.

Bloom answers for held keys must be 1 exactly; fresh keys appear only in
the false-positive test, under a statistical bound. Nothing asserts on
timing: PING latency during a merge is only printed as a diagnostic.
"""
import math
import socket
import time

from seendtest import *

redis = system_module("redis")

# Smaller under valgrind (SEEND_WRAPPER): the properties are the same.
N_UNION = 5000 if WRAPPER else 50000            # keys per source, test 1
N_COPY = 5000 if WRAPPER else 50000             # keys in the dumped filter
N_COPY_MORE = 3000 if WRAPPER else 30000        # added to the copy
FP_CAP = 2000 if WRAPPER else 20000             # the FP test's capacity
FP_FRESH = 50000 if WRAPPER else 200000         # fresh keys measured
BIGISH = 1000000 if WRAPPER else 8000000        # test 7: ~14 MB at 0.001
HUGE = 3000000 if WRAPPER else 25000000         # test 8: ~45 MB at 0.001
N_DURABLE = 3000 if WRAPPER else 30000
BATCH = 10000           # BF.MEXISTS/BF.MADD keys per request (~0.5 MB)


def rpy(s):
    return redis.Redis(port=s.port, socket_timeout=120 * SLOW)


# ---- keys, filling, asking ----

def madd(r, name, ks):
    p = r.pipeline(transaction=False)
    for i in range(0, len(ks), BATCH):
        p.execute_command("BF.MADD", name, *ks[i:i + BATCH])
    for got in p.execute():
        if not isinstance(got, list) or any(
                isinstance(x, Exception) for x in got):
            raise Failed("BF.MADD %s: %r" % (name, str(got)[:300]))


def mexists(r, name, ks):
    return bf_mexists(r, name, ks, BATCH)


def all_held(t, r, name, ks, what):
    got = mexists(r, name, ks)
    t.eq(len(got), len(ks), what + ": answers")
    n = sum(1 for x in got if x == 1)
    if n != len(ks):
        first = next(k for k, x in zip(ks, got) if x != 1)
        raise Failed("%s: %d of %d held keys answer 1 on %s (first miss "
                     "%r)" % (what, n, len(ks), name, first))


def info(s, name):
    """INFO <name> over the line protocol, as a dict of strings."""
    return filter_info(s, name, timeout=60)


# INFO <filter>'s fields that describe the filter (not its traffic or
# its snapshots).
STABLE = ("name", "capacity", "error_rate", "growth", "expire", "normalize",
          "state", "count", "slices", "merged_slices", "slice_capacity",
          "bits", "bytes", "bits_per_key", "hashes", "layout", "bits_set",
          "fill_ratio", "estimated_fp_rate", "fp_rate_at_capacity")


def stable(s, name):
    i = info(s, name)
    return {k: i.get(k) for k in STABLE}


def filters(s):
    """FILTERS over the line protocol: {name: its line}."""
    c = s.client(timeout=60)
    try:
        c.send("FILTERS\n")
        lines = c.lines_until_end()
    finally:
        c.close()
    out = {}
    for l in lines:
        name, _, rest = l.partition(" ")
        if not name or "capacity=" not in rest:
            raise Failed("FILTERS line: %r" % l)
        out[name] = l
    return out


def reserve(t, c, name, rate, cap, *extra):
    t.eq(c.cmd("BF.RESERVE", name, rate, cap, *extra), "OK",
         "BF.RESERVE " + name)


def merge_ok(t, c, *words):
    got = c.cmd("MERGE", *words)
    t.eq(got, "OK", "MERGE %s" % " ".join(words))


def load_ok(t, c, name, chunks, what):
    got = [c.cmd("BF.LOADCHUNK", name, it, data) for it, data in chunks]
    t.eq(got, ["OK"] * len(chunks), what + ": BF.LOADCHUNK replies")


def line_many(c, lines, step=2000):
    """Sends the lines a batch at a time; the replies, one per line."""
    out = []
    for i in range(0, len(lines), step):
        part = lines[i:i + step]
        c.send("".join(l + "\n" for l in part))
        out.extend(c.line() for _ in part)
    return out


# ---- 1: different seeds, a new destination ----

@test
def merge_of_two_seeds_into_a_new_name_holds_every_key_sources_unchanged(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        reserve(t, c, "x", "0.001", 2 * N_UNION)
        reserve(t, c, "y", "0.001", 2 * N_UNION)
        kx, ky = url_keys("x", N_UNION), url_keys("y", N_UNION)
        madd(r, "x", kx)
        madd(r, "y", ky)
        before = {n: info(s, n) for n in ("x", "y")}
        merge_ok(t, c, "u", "x", "y")
        t.ok("u" in filters(s), "FILTERS lists u")
        all_held(t, r, "u", kx, "x's keys")
        all_held(t, r, "u", ky, "y's keys")
        iu = info(s, "u")
        t.eq(int(iu["count"]), int(before["x"]["count"]) +
             int(before["y"]["count"]), "u's count: the sources' sum")
        t.ok(int(iu["merged_slices"]) >= 1, "u has merged slices: %s"
             % iu["merged_slices"])
        t.eq(iu["normalize"], before["x"]["normalize"], "u's normalize")
        t.eq(iu["expire"], "0", "u's expire")
        for n in ("x", "y"):
            now = info(s, n)
            for k in ("count", "bits_set", "bytes", "slices",
                      "merged_slices"):
                t.eq(now[k], before[n][k], "%s's %s after the merge" % (n, k))
        all_held(t, r, "x", kx, "x's own keys on x")
        all_held(t, r, "y", ky, "y's own keys on y")
        # the union takes keys of its own too
        t.eq(c.cmd("BF.ADD", "u", "https://new.example.org/1"), 1,
             "BF.ADD of a new key to u")
        t.eq(c.cmd("BF.EXISTS", "u", "https://new.example.org/1"), 1,
             "the new key is held by u")
        # a first source that has grown (several own slices), and a
        # source that has merged slices itself (u)
        reserve(t, c, "g", "0.01", N_UNION // 16, "EXPANSION", "2")
        kg = url_keys("g", N_UNION)
        madd(r, "g", kg)
        ig, iu = info(s, "g"), info(s, "u")
        t.ok(int(ig["slices"]) >= 3, "g grew: %s slices" % ig["slices"])
        merge_ok(t, c, "v", "g", "u")
        iv = info(s, "v")
        all_held(t, r, "v", kg + kx + ky + ["https://new.example.org/1"],
                 "v: the keys of g and of u")
        t.eq(int(iv["count"]), int(ig["count"]) + int(iu["count"]),
             "v's count: the sources' sum")
        t.eq(int(iv["slices"]), int(ig["slices"]) + int(iu["slices"]),
             "v's slices: g's and u's")
        t.eq(iv["error_rate"], ig["error_rate"], "v has g's settings")
        t.eq(info(s, "u")["count"], iu["count"], "u unchanged")
        c.close()


# ---- 2: copies of one dump are OR-ed ----

@test
def copies_of_one_dump_are_ored_without_merged_slices(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        # room for all keys in one slice: no growth on either side
        reserve(t, c, "a", "0.001", 4 * (N_COPY + N_COPY_MORE))
        base = url_keys("base", N_COPY)
        madd(r, "a", base)
        load_ok(t, c, "a2", scandump(c, "a"), "a2")
        more = url_keys("more", N_COPY_MORE)
        madd(r, "a2", more)
        ia, ia2 = info(s, "a"), info(s, "a2")
        t.eq(ia2["slices"], ia["slices"], "a2's slices are a's")
        merge_ok(t, c, "a", "a2")
        now = info(s, "a")
        t.eq(now["merged_slices"], "0", "a's merged_slices")
        t.eq(now["slices"], ia["slices"], "a's slices unchanged")
        t.eq(now["bytes"], ia["bytes"], "a's bytes unchanged")
        t.eq(int(now["count"]), int(ia["count"]) + int(ia2["count"]),
             "a's count: the sum")
        t.ok(int(now["bits_set"]) >= int(ia2["bits_set"]),
             "a's bits_set holds a2's")
        all_held(t, r, "a", base + more, "a2's keys on a")
        t.eq(info(s, "a2")["count"], ia2["count"], "a2's count unchanged")
        c.close()


# ---- 3: the estimate is honest ----

@test
def estimated_fp_rate_after_a_merge_matches_the_measured_rate(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        for n in ("p", "q"):
            reserve(t, c, n, "0.01", FP_CAP, "NONSCALING")
            madd(r, n, url_keys(n, FP_CAP))
        merge_ok(t, c, "pq", "p", "q")
        i = info(s, "pq")
        est = float(i["estimated_fp_rate"])
        rate = float(info(s, "p")["error_rate"])
        all_held(t, r, "pq", url_keys("p", FP_CAP) + url_keys("q", FP_CAP),
                 "the sources' keys")
        fresh = url_keys("fresh-fp", FP_FRESH)
        got = mexists(r, "pq", fresh)
        t.eq(len(got), FP_FRESH, "answers")
        measured = sum(got) / FP_FRESH
        p = est
        bound = 0.2 * est + 3 * math.sqrt(p * (1 - p) / FP_FRESH)
        diag("after the merge: estimated_fp_rate %.5f, measured %.5f on %d "
             "fresh keys (bound %.5f); error_rate %g, count %s, state %s"
             % (est, measured, FP_FRESH, bound, rate, i["count"],
                i["state"]))
        t.ok(abs(measured - est) <= bound,
             "|measured %.5f - estimated %.5f| <= %.5f"
             % (measured, est, bound))
        # two sources filled to capacity: their false positives add up,
        # and INFO says so
        t.ok(est > rate, "estimated_fp_rate %g exceeds the sources' "
             "error_rate %g" % (est, rate))
        diag("estimated_fp_rate %g > error_rate %g is allowed" % (est, rate))
        c.close()


# ---- 4: refusals change nothing ----

KINDS = """
[filter.default]
capacity = 100000
error_rate = 0.001

[filter.plain]
capacity = 10000
error_rate = 0.01

[filter.plain2]
capacity = 10000
error_rate = 0.01

[filter.win]
capacity = 10000
error_rate = 0.01
growth = 2
expire = 1h

[filter.norm]
capacity = 10000
error_rate = 0.01
normalize = standard
"""


@test
def refused_merges_change_nothing(t):
    with Server(t, filters=KINDS) as s:
        c, r = Resp(s.port), rpy(s)
        lc = s.client()
        for n in ("plain", "plain2", "win", "norm"):
            madd(r, n, url_keys(n, 500))
        fl = filters(s)
        before = {n: stable(s, n) for n in ("plain", "plain2", "win",
                                             "norm")}
        cases = [
            (("plain", "plain2", "plain"), "destination cannot be a source"),
            (("plain", "plain"), "destination cannot be a source"),
            (("plain", "plain2", "nope"), "no such filter 'nope'"),
            (("plain", "nope", "plain2"), "no such filter 'nope'"),
            (("plain", "win"), "expire"),
            (("win", "plain"), "expire"),
            (("plain", "plain2", "norm"), "normalize"),
            (("norm", "plain"), "normalize"),
            # a new destination takes the first source's settings
            (("fresh", "plain", "win"), "expire"),
            (("fresh", "plain", "norm"), "normalize"),
            (("fresh", "nope"), "no such filter 'nope'"),
            (("fresh", "plain", "fresh"), "destination cannot be a source"),
        ]
        for words, why in cases:
            got = c.cmd("MERGE", *words)
            t.ok(isinstance(got, Err) and got.startswith("ERR"),
                 "RESP MERGE %s: %r" % (" ".join(words), got))
            t.contains(got, why, "RESP MERGE " + " ".join(words))
            if len(words) <= 3:
                got = lc.cmd("MERGE " + " ".join(words))
                t.ok(got.startswith("ERR "), "line MERGE %s: %r"
                     % (" ".join(words), got))
                t.contains(got, why, "line MERGE " + " ".join(words))
        # arity
        for words in ((), ("plain",)):
            got = c.cmd("MERGE", *words)
            t.ok(isinstance(got, Err) and "wrong number of arguments" in got,
                 "RESP MERGE with %d arguments: %r" % (len(words), got))
            got = lc.cmd(" ".join(("MERGE",) + words))
            t.ok(got.startswith("ERR") and "wrong number of arguments" in got,
                 "line MERGE with %d arguments: %r" % (len(words), got))
        got = lc.cmd("MERGE plain plain2 win norm")
        t.eq(got, "ERR too many arguments", "line MERGE of 3 sources")
        t.eq(filters(s), fl, "FILTERS unchanged")
        for n, want in before.items():
            t.eq(stable(s, n), want, "INFO %s unchanged" % n)
        t.ok("fresh" not in filters(s), "no filter 'fresh' was made")
        t.eq(lc.cmd("PING"), "PONG", "the line connection goes on")
        t.eq(c.cmd("PING"), "PONG", "the RESP connection goes on")
        lc.close()
        c.close()


# ---- 5: a fixed destination pushed past its capacity ----

@test
def growth_off_dst_pushed_past_capacity_is_full(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        reserve(t, c, "d", "0.01", 1000, "NONSCALING")
        reserve(t, c, "big", "0.01", 5000, "NONSCALING")
        kd, kb = url_keys("d", 900), url_keys("big", 5000)
        madd(r, "d", kd)
        madd(r, "big", kb)
        t.eq(info(s, "d")["growth"], "off", "d's growth")
        merge_ok(t, c, "d", "big")
        i = info(s, "d")
        diag("d after the merge: count %s, slices %s, merged_slices %s, "
             "state %s, estimated_fp_rate %s" % (i["count"], i["slices"],
                                                 i["merged_slices"],
                                                 i["state"],
                                                 i["estimated_fp_rate"]))
        t.eq(i["state"], "full", "INFO d state")
        all_held(t, r, "d", kd + kb, "both filters' keys")
        # new keys (answered 0 by CHECK, so not false positives) are
        # refused, over both protocols, and not recorded
        lc = s.client()
        new = [k for k in url_keys("new", 200)
               if lc.cmd("CHECK d " + k) == "0"]
        t.ok(len(new) >= 100, "fresh keys answering 0: %d" % len(new))
        got = c.cmd("BF.ADD", "d", new[0])
        t.ok(isinstance(got, Err) and "full" in got, "BF.ADD: %r" % got)
        got = lc.cmd("SEEN d " + new[1])
        t.ok(got.startswith("ERR") and "full" in got, "SEEN: %r" % got)
        t.eq(lc.cmd("CHECK d " + new[0]), "0", "the refused key stays out")
        t.eq(lc.cmd("CHECK d " + new[1]), "0", "the refused key stays out")
        t.eq(lc.cmd("SEEN d " + kd[0]), "1", "a held key of d: SEEN")
        t.eq(lc.cmd("SEEN d " + kb[0]), "1", "a held key of big: SEEN")
        lc.close()
        c.close()


# ---- 6: the line protocol ----

LINE_FILTERS = """
[filter.default]
capacity = 100000
error_rate = 0.001

[filter.dst]
capacity = 20000
error_rate = 0.001

[filter.fa]
capacity = 20000
error_rate = 0.001

[filter.fb]
capacity = 20000
error_rate = 0.001

[filter.fc]
capacity = 20000
error_rate = 0.001
"""


@test
def line_protocol_merge_of_two_sources_and_its_token_limit(t):
    with Server(t, filters=LINE_FILTERS) as s:
        c = s.client(timeout=60)
        ka, kb = url_keys("fa", 5000), url_keys("fb", 5000)
        kc = url_keys("fc", 100)
        kd = url_keys("dst", 1000)
        for name, ks in (("fa", ka), ("fb", kb), ("fc", kc), ("dst", kd)):
            got = line_many(c, ["SEEN %s %s" % (name, k) for k in ks])
            t.ok(all(x in ("0", "1") for x in got),
                 "SEEN into %s: %r" % (name, [x for x in got
                                              if x not in ("0", "1")][:3]))
        t.eq(c.cmd("MERGE dst fa fb"), "OK", "MERGE dst fa fb")
        for verb in ("CHECK", "SEEN"):
            got = line_many(c, ["%s dst %s" % (verb, k)
                                for k in ka + kb + kd])
            t.eq(got.count("1"), len(got), "%s dst: keys answering 1"
                 % verb)
        before = stable(s, "dst")
        t.eq(c.cmd("MERGE dst fa fb fc"), "ERR too many arguments",
             "MERGE of three sources over the line protocol")
        t.eq(stable(s, "dst"), before, "dst unchanged by the refusal")
        t.eq(c.cmd("PING"), "PONG", "the connection goes on")
        c.close()


# ---- 7: keys arriving during a merge ----

@test
def keys_added_to_dst_during_a_merge_stay(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        reserve(t, c, "src", "0.001", BIGISH)
        reserve(t, c, "dst", "0.001", BIGISH)
        ksrc, kdst = url_keys("src", 20000), url_keys("dst", 20000)
        madd(r, "src", ksrc)
        madd(r, "dst", kdst)
        # and a copy of src's dump: its merge ORs into the slice that
        # takes the new keys
        load_ok(t, c, "twin", scandump(c, "src"), "twin")
        more = url_keys("more", 20000)
        madd(r, "src", more)
        during = {"dst": url_keys("during-dst", 30000),
                  "twin": url_keys("during-twin", 30000)}
        for dst in ("dst", "twin"):
            m = Resp(s.port)
            m.send("MERGE", dst, "src")
            # the other connection's keys, while the merge runs
            ks = during[dst]
            madd(r, dst, ks)
            got = m.reply()
            t.eq(got, "OK", "MERGE %s src" % dst)
            m.close()
            all_held(t, r, dst, ks, "keys added to %s during the merge"
                     % dst)
            all_held(t, r, dst, ksrc + more, "src's keys on " + dst)
        all_held(t, r, "dst", kdst, "dst's own keys")
        all_held(t, r, "twin", ksrc, "twin's own keys")
        t.eq(info(s, "twin")["merged_slices"], "0", "twin: OR-ed")
        t.ok(int(info(s, "dst")["merged_slices"]) >= 1, "dst: merged slice")
        c.close()


# ---- 8: the loop goes on ----

@test
def ping_is_answered_while_a_big_merge_runs(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        reserve(t, c, "h1", "0.001", HUGE)
        reserve(t, c, "h2", "0.001", HUGE)
        k1, k2 = url_keys("h1", 10000), url_keys("h2", 10000)
        madd(r, "h1", k1)
        madd(r, "h2", k2)
        pinger = Pinger(s.port, timeout=120)
        try:
            pinger.answered(t, "the merge")
            start = time.monotonic()
            got = c.cmd("MERGE", "hu", "h1", "h2")
            end = time.monotonic()
            t.eq(got, "OK", "MERGE hu h1 h2")
            t.eq(pinger.proc.poll(), None, "the pinger still runs")
        finally:
            pinger.stop()
        during = pinger.between(start, end)
        before = pinger.latencies_before(start)
        t.ok(len(during) > 0, "PINGs answered before the MERGE's +OK")
        diag("merge of %s bytes in %.3f s; %d PINGs answered meanwhile, "
             "max latency %.1f ms (%.1f ms before the merge)" % (
                 info(s, "hu")["bytes"], end - start, len(during),
                 1000 * max(b - a for a, b in during), 1000 * max(before)))
        all_held(t, r, "hu", k1 + k2, "hu")
        c.close()


# ---- 9: durable ----

def durable_setup(t, s, tag):
    """Sources x, y (other seeds) and an existing e; merges them into a
    new n<tag> and into e<tag>. Returns {dst: (keys, INFO)}."""
    c, r = Resp(s.port), rpy(s)
    kx, ky, ke = (url_keys(tag + n, N_DURABLE) for n in ("x", "y", "e"))
    for n, ks in (("x", kx), ("y", ky), ("e", ke)):
        reserve(t, c, tag + n, "0.001", 2 * N_DURABLE)
        madd(r, tag + n, ks)
    merge_ok(t, c, "n" + tag, tag + "x", tag + "y")
    merge_ok(t, c, tag + "e", tag + "x", tag + "y")
    c.close()
    out = {"n" + tag: (kx + ky, info(s, "n" + tag)),
           tag + "e": (kx + ky + ke, info(s, tag + "e"))}
    for dst, (_, i) in out.items():
        t.ok(int(i["merged_slices"]) >= 1, "%s has merged slices" % dst)
    return out


def durable_check(t, s, want, what):
    r = rpy(s)
    names = filters(s)
    for dst, (ks, i) in want.items():
        t.ok(dst in names, "%s: %s is in FILTERS" % (what, dst))
        now = info(s, dst)
        for k in ("count", "merged_slices", "slices", "bytes", "bits_set"):
            t.eq(now[k], i[k], "%s: INFO %s %s" % (what, dst, k))
        all_held(t, r, dst, ks, "%s: %s" % (what, dst))


@test
def acknowledged_merge_survives_sigterm_and_kill9(t):
    s = Server(t).start()
    want = durable_setup(t, s, "t")
    t.eq(s.stop(), 0, "SIGTERM")
    s.start()
    durable_check(t, s, want, "after SIGTERM and a restart")
    # the +OK waits for the snapshot: kill -9 right after it loses nothing
    want9 = durable_setup(t, s, "k")
    s.kill9()
    s.start()
    durable_check(t, s, want9, "after kill -9 and a restart")
    durable_check(t, s, want, "the first merges, after kill -9")
    t.eq(s.stop(), 0, "SIGTERM")


# ---- 10: a merged filter moves ----

@test
def merged_filter_survives_scandump_loadchunk(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ca, ra = Resp(a.port), rpy(a)
        kx, ky, ke = (url_keys(n, N_UNION) for n in ("x", "y", "e"))
        for n, ks in (("x", kx), ("y", ky), ("e", ke)):
            reserve(t, ca, n, "0.001", 2 * N_UNION)
            madd(ra, n, ks)
        merge_ok(t, ca, "e", "x", "y")
        ia = info(a, "e")
        t.ok(int(ia["merged_slices"]) >= 1, "e has merged slices")
        chunks = scandump(ca, "e")
        cb, rb = Resp(b.port), rpy(b)
        load_ok(t, cb, "e", chunks, "e on b")
        load_ok(t, ca, "e2", chunks, "e2 on a")
        for s, r, name in ((b, rb, "e"), (a, ra, "e2")):
            all_held(t, r, name, kx + ky + ke, "the copy %s" % name)
            ib = info(s, name)
            for k in ("count", "slices", "merged_slices", "bytes",
                      "bits_set", "estimated_fp_rate"):
                t.eq(ib[k], ia[k], "the copy %s: INFO %s" % (name, k))
        ca.close()
        cb.close()


# ---- 11: DEL during a merge ----

def started(s, dst, n):
    return ("merge of %d filter(s) into %s started" % (n, dst)
            in s.read_log())


@test
def del_of_dst_or_a_source_during_a_merge_does_not_crash(t):
    with Server(t) as s:
        c, r = Resp(s.port), rpy(s)
        # s1 is big, so that every merge here takes many loop turns and
        # the DEL (sent once the log says the merge started) comes while
        # it runs; whether it does is not asserted
        reserve(t, c, "s1", "0.001", HUGE)
        for n in ("s2", "d1", "s3"):
            reserve(t, c, n, "0.001", BIGISH)
        for n in ("s1", "s2", "d1", "s3"):
            madd(r, n, url_keys(n, 2000))
        outcomes = []
        for dst, srcs, victim in (("d1", ("s1", "s2"), "d1"),
                                  ("d2", ("s1", "s3"), "s3"),
                                  ("d3", ("s2", "s1"), "s2")):
            m = Resp(s.port)
            m.send("MERGE", dst, *srcs)
            t.ok(wait_until(lambda: started(s, dst, len(srcs)), timeout=30),
                 "the merge into %s started" % dst)
            got = c.cmd("DEL", victim)
            t.eq(got, 1, "DEL %s during the merge into %s" % (victim, dst))
            reply = m.reply()
            m.close()
            outcomes.append("%s <- %s, DEL %s: %r"
                            % (dst, ",".join(srcs), victim, reply))
            t.ok(reply == "OK" or (isinstance(reply, Err) and
                                   reply.startswith("ERR")),
                 "MERGE %s: %r" % (dst, reply))
            t.eq(c.cmd("PING"), "PONG", "PING after DEL " + victim)
            names = filters(s)
            t.ok(victim not in names, "%s is out of FILTERS" % victim)
            if reply == "OK" and dst != victim:
                t.ok(dst in names, "%s is in FILTERS after its OK" % dst)
                info(s, dst)
        # the name of a new destination taken while the merge runs: one
        # of the two wins, and what the other made is not lost silently
        m = Resp(s.port)
        m.send("MERGE", "d4", "s1")
        t.ok(wait_until(lambda: started(s, "d4", 1), timeout=30),
             "the merge into d4 started")
        got = c.cmd("BF.RESERVE", "d4", "0.01", "1000")
        reply = m.reply()
        m.close()
        outcomes.append("d4 <- s1, BF.RESERVE d4 %r: %r" % (got, reply))
        t.ok((got == "OK" and isinstance(reply, Err)) or
             (got == Err("ERR item exists") and reply == "OK"),
             "exactly one of BF.RESERVE (%r) and MERGE (%r) made d4"
             % (got, reply))
        if got == "OK":
            t.eq(c.cmd("BF.ADD", "d4", "mine"), 1, "BF.ADD d4")
            t.eq(c.cmd("BF.EXISTS", "d4", "mine"), 1, "d4 keeps its key")
        else:
            all_held(t, r, "d4", url_keys("s1", 2000), "d4: s1's keys")
        for o in outcomes:
            diag(o)
        t.eq(rpy(s).ping(), True, "PING at the end")
        names = filters(s)
        t.eq(sorted(names), sorted(["default", "s1", "d4"] +
                                   [d for d in ("d2", "d3") if d in names]),
             "FILTERS")
        for n in names:
            info(s, n)
        all_held(t, r, "s1", url_keys("s1", 2000), "s1 unchanged")
        c.close()
        # and so they stay: what was dropped does not come back
        t.eq(s.stop(), 0, "SIGTERM")
        s.start()
        t.eq(sorted(filters(s)), sorted(names), "FILTERS after a restart")


if __name__ == "__main__":
    run()
