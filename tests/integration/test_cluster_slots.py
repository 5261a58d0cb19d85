"""
A config-file filter spread over the cluster (issue 33 step 3; INTERFACE.md,
"A cluster of nodes": "each node holds only the part of it for the slots it
owns, in memory about owned slots / 16384 of the whole (capacity is the
cluster's). Its false-positive rate is error_rate cluster-wide.").

In cluster mode a config filter of type bloom is slot-major: a key's slot
picks its blocks, so a primary only ever writes the blocks of the slots it
owns and its resident memory grows by about a third of the filter in a
cluster of three, where a standalone seend given the same URLs grows by the
whole of it. The part survives SIGTERM and kill -9 (snapshot, journal), a
replica holds its primary's part, a snapshot's layout wins over the config
file (a cluster node restarted standalone, a standalone data_dir started
in cluster mode: no URL answered new again, after a journal alone too),
named filters and cuckoo filters stay whole, and MERGE between the two
layouts is refused.

The clusters are made as an operator makes them: seend nodes in cluster
mode and seen-cli cluster create (which gives node i the i-th third of the
slots, as redis-cli does); each URL is sent to the node owning its slot
(CRC16 as Redis Cluster's, the Python client's keyslot), on the line
protocol, so a URL sent to the wrong node would come back as ERR MOVED and
fail the test.
"""
import math
import os
import subprocess

from seendtest import *
from repltest import Pipe, checks, filters, line_payload, wait_caught_up
from clustertest import (CLUSTER_ON, RANGES, addr, ask, cluster_node,
                         keyslot, myid)

# Debian's python3-redis, imported before the plan is printed: another
# python3 running this file re-executes it under /usr/bin/python3
redis = system_module("redis")

# Big enough that resident memory measures it: about 53 MB whole, so that a
# third of it (plus a huge page at each end of a node's range) stays well
# under 0.55 of it, and the whole well over 0.9.
BIG = """
[filter.default]
capacity = 20000000
error_rate = 0.001
"""
# For the false-positive rate: filled to capacity in seconds, and big
# enough (over 16384 blocks when sized as a standalone filter) that a
# slot-major filter's rounding up to whole slots does not leave it nearly
# empty at capacity.
FP_CAPACITY = 810000
FP_RATE = 0.01
FPF = """
[filter.default]
capacity = %d
error_rate = %s
""" % (FP_CAPACITY, FP_RATE)
SMALL = """
[filter.default]
capacity = 200000
error_rate = 0.01
"""
# snapshots only on SAVE and shutdown: a kill -9 leaves the journal alone,
# and no periodic snapshot runs in the middle of a memory measure
NO_TIMER = "snapshot_interval = 0\n"


slot = keyslot       # Redis Cluster's (the Python client's)


def node_of(u):
    s = slot(u)
    return next(i for i, (a, b) in enumerate(RANGES) if a <= s <= b)


def urls(tag, count):
    return ["https://%s.example/%d/page" % (tag, i) for i in range(count)]


def split(us):
    """us by the node of create's cluster that owns each one's slot."""
    parts = [[], [], []]
    for u in us:
        parts[node_of(u)].append(u)
    return parts


def cli(*args):
    p = subprocess.run([SEEN_CLI] + list(args), capture_output=True,
                       text=True, stdin=subprocess.DEVNULL,
                       timeout=120 * SLOW)
    return p.returncode, p.stdout, p.stderr


def node(t, name, filters_text, extra=""):
    return cluster_node(t, name, server=NO_TIMER + extra,
                        filters=filters_text)


def cluster(t, filters_text, extra=""):
    """Three primaries made into a cluster by seen-cli cluster create;
    checks that they agree with this file on where a URL goes."""
    ns = [node(t, "n%d" % i, filters_text, extra) for i in range(3)]
    rc, out, err = cli("cluster", "create", *[addr(s) for s in ns])
    t.eq(rc, 0, "cluster create exits 0: %s %s" % (out, err))
    t.contains(out, "[OK] All 16384 slots covered.")
    for u in urls("keyslot", 20):
        t.eq(ask(ns[0], "CLUSTER", "KEYSLOT", u), slot(u),
             "CLUSTER KEYSLOT %s" % u)
    return ns


def record(t, s, us, what):
    """SEEN of every URL on s, pipelined: the replies (b"0" or b"1"; an
    ERR MOVED, full or journal error fails)."""
    if not us:
        return []
    p = Pipe(s.port)
    try:
        r = p.run(line_payload(b"SEEN", us), len(us))
    finally:
        p.close()
    bad = [(u, x) for u, x in zip(us, r) if x not in (b"0", b"1")]
    t.ok(not bad, "%s: SEEN on %s answered %d URLs otherwise than 0 or 1: "
         "%r" % (what, s.name, len(bad), bad[:3]))
    return r


def record_all(t, ns, us, what):
    """Each URL through the node that owns its slot."""
    for s, part in zip(ns, split(us)):
        record(t, s, part, what)


def all_seen(t, s, us, what):
    """CHECK of every URL on s answers 1: none lost (exact, a Bloom filter
    has no false negatives)."""
    r = checks(s, us)
    missing = [u for u, x in zip(us, r) if x != b"1"]
    t.ok(not missing, "%s: %d of %d URLs not seen on %s (replies %r); "
         "first %r" % (what, len(missing), len(us), s.name,
                       sorted(set(r))[:4], missing[:3]))


def mostly_new(t, s, us, what, at_most=0.02):
    """URLs never sent are new on s but for a few false positives: a node
    that answered 1 to everything would pass all_seen."""
    r = checks(s, us)
    t.ok(set(r) <= {b"0", b"1"}, "%s: CHECK replies %r" % (what,
                                                           sorted(set(r))[:4]))
    t.ok(r.count(b"1") <= at_most * len(us), "%s: %d of %d URLs never sent "
         "answer seen on %s" % (what, r.count(b"1"), len(us), s.name))


def info_bytes(s, name="default"):
    c = s.client(timeout=30)
    try:
        return int(c.info(name)["bytes"])
    finally:
        c.close()


SLOT_BYTES = 16384 * 64     # a slot-major slice: whole blocks per slot


def slot_major(s, name="default"):
    """Whether s's filter is laid out slot by slot: its bytes a multiple
    of 16384 blocks of 64 bytes (SMALL's standalone filter's are not)."""
    c = s.client(timeout=30)
    try:
        i = c.info(name)
    finally:
        c.close()
    diag("%s: %s's layout %s, %s bytes" % (s.name, name, i.get("layout"),
                                           i.get("bytes")))
    return int(i["bytes"]) % SLOT_BYTES == 0


def pairs(v):
    """A flat [name, value, ...] reply as a dict with str names."""
    return {(k.decode() if isinstance(k, bytes) else k): x
            for k, x in zip(v[::2], v[1::2])}


def restart(s, sig=None):
    """Stops s (SIGTERM, snapshot; or kill -9 with sig=9) and starts it
    again on the same config and data_dir."""
    if sig == 9:
        s.kill9()
    else:
        s.t.eq(s.stop(), 0, "%s's exit status after SIGTERM" % s.name)
    s.start()


# ---- 1. memory: owned slots / 16384 of the whole ----

# A node's third of the filter (about 4,300 pages of 4 KiB) gets 50,000
# keys, 11 per page: every page of its part is written (the chance that one
# is not is e^-11 each).
N_MEM = 150000

TINY = """
[filter.default]
capacity = 1000
error_rate = 0.001
"""


def base_rss(t, cluster_mode):
    """The resident bytes of a seend whose filter costs nothing (1,000
    keys), as started: what a node holds besides its filter. A standalone
    filter is faulted in whole when made, a slot-major one as its slots'
    keys come, so a node's filter is its RSS less this, whenever read."""
    s = Server(t, NO_TIMER + (CLUSTER_ON if cluster_mode else ""),
               filters=TINY, unix=False, name="base%d" % cluster_mode)
    s.start()
    record(t, s, urls("base", 2000), "base")
    rss = s.rss_kib() * 1024
    t.eq(s.stop(), 0, "base's exit status")
    return rss


def whole_bytes(t):
    """The bytes of BIG's filter in one standalone seend."""
    s = Server(t, NO_TIMER, filters=BIG, unix=False, name="w").start()
    try:
        return info_bytes(s)
    finally:
        t.eq(s.stop(), 0, "exit status")


@test
def each_primary_holds_a_third_of_the_filter_a_standalone_all_of_it(t):
    us = urls("mem", N_MEM)
    base = {m: base_rss(t, m) for m in (False, True)}

    # the whole: one standalone seend with the same filter and URLs
    s = Server(t, NO_TIMER, filters=BIG, unix=False, name="whole").start()
    whole = info_bytes(s)
    t.ok(whole > 30e6, "the filter is big enough to measure: %d bytes"
         % whole)
    record(t, s, us, "standalone")
    held = s.rss_kib() * 1024 - base[False]
    diag("standalone: filter %d bytes, RSS %d above a tiny filter's seend "
         "(%.2f of it)" % (whole, held, held / whole))
    t.ok(held > 0.9 * whole, "a standalone seend holds the whole filter "
         "(%d bytes of %d above a tiny one's): the measure can see a "
         "whole one" % (held, whole))
    t.eq(s.stop(), 0, "standalone's exit status")

    ns = cluster(t, BIG)
    before = [x.rss_kib() * 1024 for x in ns]
    record_all(t, ns, us, "cluster")
    for x, b0 in zip(ns, before):
        rss = x.rss_kib() * 1024
        grew, held = rss - b0, rss - base[True]
        diag("%s: RSS grew %d (%.2f of the whole), %d above a tiny "
             "filter's node (%.2f), INFO bytes %d" % (
                 x.name, grew, grew / whole, held, held / whole,
                 info_bytes(x)))
        t.ok(held < 0.55 * whole, "%s holds only its slots' part: RSS %d "
             "bytes above a tiny filter's node, %.2f of the whole filter's "
             "%d" % (x.name, held, held / whole, whole))
        t.ok(grew > 0.2 * whole, "%s wrote its part (a third of the "
             "filter) as its keys came: its RSS grew %d bytes of %d"
             % (x.name, grew, whole))
    for x, part in zip(ns, split(us)):
        all_seen(t, x, part, "cluster")


# ---- 2. the false-positive rate, cluster-wide ----

N_REDIS_PY = 60000


def redis_py_setnx(t, port, keys, chunk=10000):
    """SETNX of every key through redis-py's RedisCluster seeded with one
    node (Debian's python3-redis): the replies, in order."""
    from redis.cluster import RedisCluster
    rc = RedisCluster(host="127.0.0.1", port=port)
    out = []
    try:
        for i in range(0, len(keys), chunk):
            pipe = rc.pipeline()
            for k in keys[i:i + chunk]:
                pipe.setnx(k, 1)
            out.extend(pipe.execute())
    finally:
        rc.close()
    return out


def false_positives(t, ns, fresh):
    """How many of the fresh URLs answer seen, each asked of its node."""
    hits = 0
    for x, part in zip(ns, split(fresh) if len(ns) == 3 else [fresh]):
        r = checks(x, part)
        t.ok(set(r) <= {b"0", b"1"}, "CHECK replies on %s: %r"
             % (x.name, sorted(set(r))[:4]))
        hits += r.count(b"1")
    return hits


@test
def false_positive_rate_at_capacity_is_error_rate_cluster_wide(t):
    ns = cluster(t, FPF)
    us = urls("fill", FP_CAPACITY)
    # a part through redis-py's RedisCluster (SETNX, the RESP paths), the
    # rest on the line protocol: CHECK below answers both alike
    got = redis_py_setnx(t, ns[1].port, us[:N_REDIS_PY])
    t.ok(set(got) <= {True, False}, "SETNX replies: %r" % set(got))
    record_all(t, ns, us[N_REDIS_PY:], "filling to capacity")
    for x, part in zip(ns, split(us)):
        all_seen(t, x, part, "after filling")      # no false negative
    n = 200000
    fresh = urls("fresh", n)
    rate = false_positives(t, ns, fresh) / n
    sigma = math.sqrt(FP_RATE * (1 - FP_RATE) / n)
    diag("cluster: false positives %.5f of %d fresh URLs (error_rate %s, "
         "3 sigma %.5f)" % (rate, n, FP_RATE, 3 * sigma))
    t.ok(rate <= FP_RATE + 3 * sigma, "cluster-wide false-positive rate "
         "at capacity %.5f > error_rate %s + 3 sigma (%.5f)"
         % (rate, FP_RATE, 3 * sigma))

    # seend sizes below error_rate; the spread filter must not lose that
    # to its layout: the same filter standalone, the same URLs, and the
    # two rates may differ by noise only (4 sigma of a difference of two
    # rates: a wrong layout that doubles the rate fails, chance does not)
    s = Server(t, NO_TIMER, filters=FPF, unix=False, name="alone").start()
    record(t, s, us, "standalone")
    alone = false_positives(t, [s], fresh) / n
    p = max(alone, rate, 20.0 / n)
    sd = math.sqrt(2 * p * (1 - p) / n)
    diag("standalone: %.5f; bound for the cluster %.5f" % (alone,
                                                           alone + 4 * sd))
    t.ok(rate <= alone + 4 * sd, "the cluster's rate %.5f exceeds the same "
         "filter's standalone %.5f by more than noise (4 sigma %.5f)"
         % (rate, alone, 4 * sd))
    # each node's INFO estimates its part's rate from its part's fill,
    # not from its bits spread over the whole array (a third of the fill:
    # a rate thousands of times lower). The estimate averages the fill of
    # the part's blocks, and these URLs' slots (a CRC16 of sequential
    # names) are loaded less evenly than random blocks are, which a
    # rate convex in the load pays for: the URLs met 2-3 times the
    # estimate here, a factor that noise does not move (about 110 of
    # 200,000, sigma 10)
    est = sum(float(info_of(x)["estimated_fp_rate"]) for x in ns) / len(ns)
    t.ok(rate / 5 <= est <= rate * 5, "the nodes' mean estimate %.6f is "
         "the rate met %.6f within a factor of 5" % (est, rate))


FIXED_CAPACITY = 300000
FIXED = """
[filter.default]
capacity = %d
error_rate = 0.01
growth = off
""" % FIXED_CAPACITY


@test
def a_fixed_filter_takes_its_capacity_across_the_cluster(t):
    # capacity is the cluster's: each node's part takes its slots' share,
    # and 99 % of it spread over the slots fits (a node's share of these
    # URLs differs from a third by about 0.2 %, 1 % is 5 times that)
    ns = cluster(t, FIXED)
    us = urls("fixed", FIXED_CAPACITY * 99 // 100)
    record_all(t, ns, us, "99 % of a fixed filter's capacity")
    for x, part in zip(ns, split(us)):
        c = x.client(timeout=30)
        try:
            i = c.info("default")
        finally:
            c.close()
        diag("%s: %d URLs, count %s, state %s" % (x.name, len(part),
                                                  i["count"], i["state"]))
        t.ok(i["state"] != "full", "%s's part is full at 99 %% of the "
             "cluster's capacity: %r" % (x.name, i))
        all_seen(t, x, part, "fixed filter")


# ---- 3. restarts keep the part ----

@test
def a_restarted_primary_keeps_its_part_after_sigterm_and_kill9(t):
    base = base_rss(t, True)
    whole = whole_bytes(t)
    ns = cluster(t, BIG)
    n0 = ns[0]

    us = urls("restart", N_MEM)
    record_all(t, ns, us, "first batch")
    mine = split(us)[0]

    t.eq(n0.stop(), 0, "exit status after SIGTERM")    # a snapshot
    st = os.stat(os.path.join(n0.data_dir, "default.bloom"))
    diag("n0's snapshot: %d bytes long, %d on disk" % (st.st_size,
                                                       st.st_blocks * 512))
    t.ok(st.st_size >= whole, "the snapshot spans the whole filter: %d "
         "bytes of %d" % (st.st_size, whole))
    t.ok(st.st_blocks * 512 < 0.55 * whole, "the snapshot is written "
         "sparse, its disk the node's slots': %d bytes on disk of %d"
         % (st.st_blocks * 512, whole))
    n0.start()
    all_seen(t, n0, mine, "after SIGTERM and restart")
    mostly_new(t, n0, split(urls("never-a", 30000))[0], "after restart")
    grew = n0.rss_kib() * 1024 - base
    diag("after SIGTERM: RSS %d above a tiny filter's node (%.2f of %d)"
         % (grew, grew / whole, whole))
    t.ok(grew < 0.55 * whole, "a restarted node loads only its part: RSS "
         "%d bytes above a tiny filter's node, %.2f of the whole %d"
         % (grew, grew / whole, whole))

    more = split(urls("restart2", 30000))[0]
    record(t, n0, more, "second batch")     # acknowledged, in the journal
    restart(n0, 9)
    all_seen(t, n0, mine + more, "after kill -9 and restart")
    mostly_new(t, n0, split(urls("never-b", 30000))[0], "after kill -9")
    grew = n0.rss_kib() * 1024 - base
    diag("after kill -9: RSS %d above a tiny filter's node (%.2f)"
         % (grew, grew / whole))
    t.ok(grew < 0.55 * whole, "after kill -9 and replay: RSS %d bytes "
         "above a tiny filter's node, %.2f of the whole %d"
         % (grew, grew / whole, whole))
    # the others were untouched by it
    for x, part in zip(ns[1:], split(us)[1:]):
        all_seen(t, x, part, "the other primaries")


@test
def a_grown_part_replayed_after_kill9_is_the_same_filter(t):
    # SMALL's part on a node of three takes about 66,700 keys; 100,000
    # make it grow a slice, and the journal alone (no snapshot) must give
    # back the same filter: a replay that sized the part otherwise (the
    # map not yet read, say) would add the slice at another key and
    # answer some URLs never sent otherwise than before
    ns = cluster(t, SMALL)
    n0 = ns[0]
    us = urls("replay", 300000)
    record_all(t, ns, us, "past the part's capacity")
    probe = split(us)[0] + split(urls("never", 90000))[0]
    before, fb = checks(n0, probe), filters(n0)["default"]
    t.ok(int(fb["slices"]) >= 2, "the part grew: %r" % fb)
    restart(n0, 9)
    after, fa = checks(n0, probe), filters(n0)["default"]
    diag("before %r, after %r" % (fb, fa))
    mine = len(split(us)[0])
    diag("URLs never sent answered seen: %d of %d before, %d after" % (
        before[mine:].count(b"1"), len(probe) - mine,
        after[mine:].count(b"1")))
    for f in ("count", "bytes", "slices"):
        t.eq(fa.get(f), fb.get(f), "%s after the replay" % f)
    diff = [(u, a, b) for u, a, b in zip(probe, before, after) if a != b]
    t.ok(not diff, "%d of %d URLs answered otherwise after the replay "
         "(URL, before, after): %r" % (len(diff), len(probe), diff[:3]))


# ---- 4. a snapshot's (or journal's) layout wins over the config ----

def stop_as(t, s, how, record_more):
    """Stops s the way how says: "sigterm" (a snapshot of everything),
    "tail" (SAVE, record_more(), kill -9: a snapshot and a journal after
    it), "journal" (record_more(), kill -9: never snapshotted, the
    journal alone)."""
    if how == "tail":
        c = s.client(timeout=60)
        try:
            t.eq(c.cmd("SAVE"), "OK", "SAVE on %s" % s.name)
        finally:
            c.close()
    record_more()
    if how == "sigterm":
        t.eq(s.stop(), 0, "exit status after SIGTERM")
    else:
        s.kill9()


def cluster_node_restarted_standalone(t, how):
    ns = cluster(t, SMALL)
    us = urls("layout", 60000)
    first, second = us[:30000], us[30000:]
    record_all(t, ns, first, "in cluster mode")
    n0 = ns[0]
    t.ok(slot_major(n0), "a cluster node's config filter is laid out by "
         "slot")
    stop_as(t, n0, how, lambda: record_all(t, ns, second, "then"))
    n0.write_config(NO_TIMER, SMALL)        # [cluster] gone
    n0.start()
    t.contains(ask(n0, "INFO", "cluster").decode(), "cluster_enabled:0",
               "restarted with [cluster] off")
    all_seen(t, n0, split(us)[0], "cluster data_dir (%s) restarted "
             "standalone" % how)
    mostly_new(t, n0, urls("never", 20000), "restarted standalone")
    # a snapshot says how its filter is laid out; a journal alone may be
    # replayed either way, so long as the answers are right
    if how != "journal":
        t.ok(slot_major(n0), "the snapshot's layout (by slot) wins over "
             "the config (cluster off)")


def standalone_restarted_in_cluster_mode(t, how):
    s = Server(t, NO_TIMER, filters=SMALL, unix=False, name="s").start()
    t.ok(not slot_major(s), "a standalone filter is whole")
    us = urls("whole", 60000)
    record(t, s, us[:30000], "standalone")
    stop_as(t, s, how, lambda: record(t, s, us[30000:], "then"))
    s.write_config(NO_TIMER + CLUSTER_ON, SMALL)
    s.start()                               # a cluster of one
    t.contains(ask(s, "INFO", "cluster").decode(), "cluster_enabled:1")
    all_seen(t, s, us, "standalone data_dir (%s) restarted in cluster mode"
             % how)
    mostly_new(t, s, urls("never", 20000), "restarted in cluster mode")
    if how != "journal":
        t.ok(not slot_major(s), "a standalone snapshot's filter stays "
             "whole in cluster mode")


@test
def cluster_snapshot_restarted_with_cluster_off_answers_all_seen(t):
    cluster_node_restarted_standalone(t, "sigterm")


@test
def cluster_snapshot_and_journal_tail_with_cluster_off_answer_all_seen(t):
    cluster_node_restarted_standalone(t, "tail")


@test
def cluster_journal_alone_replayed_with_cluster_off_answers_all_seen(t):
    cluster_node_restarted_standalone(t, "journal")


@test
def standalone_snapshot_restarted_in_cluster_mode_answers_all_seen(t):
    standalone_restarted_in_cluster_mode(t, "sigterm")


@test
def standalone_snapshot_and_journal_tail_in_cluster_mode_answer_all_seen(t):
    standalone_restarted_in_cluster_mode(t, "tail")


@test
def standalone_journal_alone_replayed_in_cluster_mode_answers_all_seen(t):
    standalone_restarted_in_cluster_mode(t, "journal")


# ---- 5. a replica holds its primary's part ----

def replica_checks(r, us):
    """READONLY, then EXISTS of every URL on the replica r: the replies."""
    p = Pipe(r.port)
    try:
        out = p.run(enc("READONLY") + b"".join(enc("EXISTS", u) for u in us),
                    len(us) + 1)
    finally:
        p.close()
    return out


@test
def a_replica_answers_its_primarys_slots_after_sync_and_stream(t):
    ns = cluster(t, BIG)
    n0 = ns[0]
    a = urls("before-sync", 90000)
    record_all(t, ns, a, "before the replica")

    base = base_rss(t, True)
    whole = whole_bytes(t)
    r = node(t, "r0", BIG)
    id0 = myid(n0)
    rc, out, err = cli("cluster", "add-node", addr(r), addr(n0),
                       "--replica-of", id0)
    t.eq(rc, 0, "add-node --replica-of exits 0: %s %s" % (out, err))
    wait_caught_up(t, n0, [r], timeout=60, what="full sync")

    def replica_has(us, what):
        got = replica_checks(r, us)
        t.eq(got[0], b"+OK", "READONLY on the replica")
        missing = [u for u, x in zip(us, got[1:]) if x != b":1"]
        t.ok(not missing, "%s: %d of %d of the primary's URLs not seen on "
             "the replica (replies %r), first %r" % (
                 what, len(missing), len(us), sorted(set(got[1:]))[:4],
                 missing[:3]))

    mine = split(a)[0]
    replica_has(mine, "after the full sync")
    fresh = split(urls("never", 30000))[0]
    got = replica_checks(r, fresh)[1:]
    t.ok(got.count(b":1") <= 0.02 * len(fresh), "URLs never sent: %d of %d "
         "seen on the replica" % (got.count(b":1"), len(fresh)))

    b = urls("streamed", 60000)
    record_all(t, ns, b, "after the sync")
    wait_caught_up(t, n0, [r], timeout=60, what="streamed")
    replica_has(split(b)[0], "streamed")
    replica_has(mine, "the synced ones still")

    grew = r.rss_kib() * 1024 - base
    diag("replica: RSS %d above a tiny filter's node (%.2f of the whole "
         "%d)" % (grew, grew / whole, whole))
    t.ok(grew < 0.55 * whole, "the replica holds its primary's part only: "
         "RSS %d bytes above a tiny filter's node, %.2f of the whole %d"
         % (grew, grew / whole, whole))


@test
def a_replica_follows_its_primarys_part_as_it_grows(t):
    # SMALL's part on a node of three takes about 66,700 keys; 100,000
    # there make it grow a slice, on the primary by its count and on the
    # replica as the primary did (a replica that sized its part by its own
    # slots, none, or by all of them, would grow apart)
    ns = cluster(t, SMALL)
    n0 = ns[0]
    r = node(t, "r0", SMALL)
    rc, out, err = cli("cluster", "add-node", addr(r), addr(n0),
                       "--replica-of", myid(n0))
    t.eq(rc, 0, "add-node --replica-of exits 0: %s %s" % (out, err))
    wait_caught_up(t, n0, [r], timeout=60, what="empty")
    us = urls("grow", 300000)
    parts = split(us)
    answers = [record(t, s, part, "past the part's capacity")
               for s, part in zip(ns, parts)]
    wait_caught_up(t, n0, [r], timeout=60, what="streamed")
    fp, fr = filters(n0)["default"], filters(r)["default"]
    diag("primary %r, replica %r" % (fp, fr))
    t.ok(int(fp["slices"]) >= 2, "the primary's part grew: %r" % fp)
    for f in ("count", "bytes", "slices"):
        t.eq(fr.get(f), fp.get(f), "the replica's %s" % f)
    # every URL recorded is seen on the replica, exactly; the URLs never
    # sent answer alike but for a few. Not all: a full sync's image is
    # taken from live bits while its count is taken first, so a replica
    # may count a few streamed keys fewer than its primary for a while
    # and add its next slice a few keys later; those keys' bits then sit
    # in another slice on each side, which moves a few false positives.
    # (Replicating a slice's addition would make the two alike bit for
    # bit: issue 33's notes.)
    # (the URLs the primary answered new: one it called seen, a false
    # positive, was never recorded nor streamed)
    mine = [u for u, x in zip(parts[0], answers[0]) if x == b"0"]
    got = replica_checks(r, mine)
    t.eq(got[0], b"+OK", "READONLY on the replica")
    lost = [u for u, x in zip(mine, got[1:]) if x != b":1"]
    t.ok(not lost, "%d of %d recorded URLs not seen on the replica: %r" % (
        len(lost), len(mine), lost[:3]))
    never = split(urls("never", 90000))[0]
    want = [b":" + x for x in checks(n0, never)]
    got = replica_checks(r, never)[1:]
    diff = [(u, a, b) for u, a, b in zip(never, want, got) if a != b]
    t.ok(len(diff) <= 30, "%d of %d URLs never sent answered otherwise on "
         "the replica than on the primary (URL, primary, replica): %r" % (
             len(diff), len(never), diff[:3]))


# ---- 6. named filters stay whole on their name's node ----

def owner_of_name(ns, name):
    return ns[next(i for i, (a, b) in enumerate(RANGES)
                   if a <= slot(name) <= b)]


def scandump(s, name):
    c = Resp(s.port)
    try:
        out, it = [], 0
        while True:
            v = c.cmd("BF.SCANDUMP", name, it)
            if isinstance(v, Err):
                raise Failed("BF.SCANDUMP %s on %s: %s" % (name, s.name, v))
            it, data = v
            if it == 0:
                return out
            out.append((it, data))
    finally:
        c.close()


@test
def named_bloom_and_cuckoo_filters_live_whole_on_their_names_node(t):
    ns = cluster(t, SMALL)
    alone = Server(t, NO_TIMER, filters=SMALL, unix=False,
                   name="alone").start()
    members = urls("named", 3000)
    for name, kind in (("crawl:x", "sadd"), ("bf:y", "bf"), ("cf:z", "cf")):
        own = owner_of_name(ns, name)
        for s in (own, alone):
            c = Resp(s.port)
            try:
                if kind == "sadd":
                    v = c.cmd("SADD", name, *members)
                    t.eq(v, len(members), "SADD %s on %s" % (name, s.name))
                elif kind == "bf":
                    t.eq(c.cmd("BF.RESERVE", name, "0.01", "10000"), "OK",
                         "BF.RESERVE on %s" % s.name)
                    for m in members:
                        c.send("BF.ADD", name, m)
                    got = [c.reply() for _ in members]
                    t.ok(all(g in (0, 1) for g in got), "BF.ADD replies %r"
                         % sorted(set(map(repr, got)))[:4])
                else:
                    t.eq(c.cmd("CF.RESERVE", name, "10000"), "OK",
                         "CF.RESERVE on %s" % s.name)
                    for m in members:
                        c.send("CF.ADD", name, m)
                    got = [c.reply() for _ in members]
                    t.ok(all(g == 1 for g in got), "CF.ADD replies %r"
                         % sorted(set(map(repr, got)))[:4])
                ex = "CF.EXISTS" if kind == "cf" else "SISMEMBER"
                for m in members:
                    c.send(ex, name, m)
                got = [c.reply() for _ in members]
                t.eq(got.count(1), len(members), "%s %s on %s: every member"
                     % (ex, name, s.name))
            finally:
                c.close()
        for s in ns:
            has = name in filters(s)
            t.eq(has, s is own, "%s is on %s only (its name's slot %d), "
                 "and %s %s it" % (name, own.name, slot(name), s.name,
                                   "lists" if has else "does not list"))
        t.eq(info_bytes(own, name), info_bytes(alone, name),
             "%s on the cluster is the same size as standalone (whole, not "
             "laid out slot by slot)" % name)
        # not moved elsewhere: another node redirects the name to it
        other = next(x for x in ns if x is not own)
        v = ask(other, "SISMEMBER" if kind != "cf" else "CF.EXISTS", name,
                members[0])
        t.ok(isinstance(v, Err) and v.startswith("MOVED %d " % slot(name)),
             "%s on another node: %r" % (name, v))

    # bf:y's dump is a whole filter's: a standalone seend loads it
    own = owner_of_name(ns, "bf:y")
    chunks = scandump(own, "bf:y")
    c = Resp(alone.port)
    try:
        for it, data in chunks:
            t.eq(c.cmd("BF.LOADCHUNK", "bf:copy", it, data), "OK",
                 "BF.LOADCHUNK of the cluster's bf:y")
        for m in members:
            c.send("BF.EXISTS", "bf:copy", m)
        got = [c.reply() for _ in members]
        t.eq(got.count(1), len(members), "the copy answers every member")
    finally:
        c.close()


CUCKOO = """
[filter.default]
type = cuckoo
capacity = 200000
error_rate = 0.01
"""

# about 30 MB whole: a node's part is measured as BIG's is
BIG_CUCKOO = """
[filter.default]
type = cuckoo
capacity = 20000000
error_rate = 0.01
growth = off
"""


def info_of(s, name="default"):
    c = s.client(timeout=30)
    try:
        return c.info(name)
    finally:
        c.close()


@test
def a_config_cuckoo_filter_is_partitioned_and_answers_on_each_node(t):
    ns = cluster(t, CUCKOO)
    us = urls("cuckoo", 30000)
    new = [sum(1 for r in record(t, x, part, "config cuckoo filter")
               if r == b"0") for x, part in zip(ns, split(us))]
    counts = [int(info_of(x)["count"]) for x in ns]
    t.eq(counts, new, "each node counts the URLs of its slots it took")
    for x, part in zip(ns, split(us)):
        t.eq(info_of(x)["layout"], "slot-major-cuckoo-packed4",
             "%s's cuckoo filter is laid out by slot" % x.name)
        all_seen(t, x, part, "config cuckoo filter")
        # it forgets on the node of the URL's slot
        c = x.client(timeout=30)
        try:
            count = int(c.info("default")["count"])
            t.eq(c.cmd("FORGET %s" % part[0]), "1", "FORGET on %s" % x.name)
            t.eq(int(c.info("default")["count"]), count - 1,
                 "count after FORGET on %s" % x.name)
        finally:
            c.close()
    mostly_new(t, ns[0], split(urls("never", 20000))[0], "cuckoo")


@test
def each_primary_holds_a_third_of_a_cuckoo_filter(t):
    us = urls("cmem", N_MEM)
    base = base_rss(t, True)
    ns = cluster(t, BIG_CUCKOO)
    whole = info_bytes(ns[0])
    t.ok(whole > 25e6, "the table is big enough to measure: %d bytes"
         % whole)
    before = [x.rss_kib() * 1024 for x in ns]
    record_all(t, ns, us, "cluster")
    for x, b0 in zip(ns, before):
        rss = x.rss_kib() * 1024
        grew, held = rss - b0, rss - base
        diag("%s: RSS grew %d (%.2f of the table), %d above a tiny "
             "filter's node (%.2f)" % (x.name, grew, grew / whole, held,
                                      held / whole))
        t.ok(held < 0.55 * whole, "%s holds only its slots' ranges: RSS "
             "%d bytes above a tiny filter's node, %.2f of the table's %d"
             % (x.name, held, held / whole, whole))
        t.ok(grew > 0.2 * whole, "%s wrote its ranges (a third of the "
             "table) as its keys came: its RSS grew %d bytes of %d"
             % (x.name, grew, whole))
    for x, part in zip(ns, split(us)):
        all_seen(t, x, part, "cluster")


# ---- 7. MERGE between the layouts ----

@test
def merge_between_a_slot_major_and_a_whole_filter_is_refused(t):
    for mode in ("standalone", "cluster"):
        s = Server(t, NO_TIMER + (CLUSTER_ON if mode == "cluster" else ""),
                   filters=SMALL, unix=False, name=mode).start()
        c = Resp(s.port)
        try:
            t.eq(c.cmd("BF.RESERVE", "other", "0.01", "1000"), "OK",
                 "BF.RESERVE")
            t.eq(c.cmd("BF.ADD", "other", "https://o.example/1"), 1,
                 "BF.ADD")
            t.eq(c.cmd("SETNX", "https://d.example/1", "1"), 1, "SETNX")
            into_default = c.cmd("MERGE", "default", "other")
            into_other = c.cmd("MERGE", "other", "default")
            if mode == "standalone":
                # the same MERGEs between two layout-1 filters work: the
                # refusal below is the layouts', not MERGE's
                t.eq((into_default, into_other), ("OK", "OK"),
                     "standalone MERGEs")
                continue
            for v, what in ((into_default, "MERGE default other"),
                            (into_other, "MERGE other default")):
                t.ok(isinstance(v, Err), "%s between a slot-major and a "
                     "layout-1 filter is refused: %r" % (what, v))
            # and changed nothing (both filters hold one key: no false
            # positive to fear)
            t.eq(c.cmd("EXISTS", "https://o.example/1"), 0,
                 "default did not take other's key")
            t.eq(c.cmd("BF.EXISTS", "other", "https://d.example/1"), 0,
                 "other did not take default's key")
            # a new filter from a partitioned one would hold this node's
            # part alone, and BF.INSERT's URLs would all go to the name's
            # node: both refused, saying what to use
            v = c.cmd("MERGE", "fresh", "default")
            t.ok(isinstance(v, Err) and "partitioned by slot" in str(v),
                 "MERGE into a new filter from a partitioned one: %r" % v)
            t.eq(c.cmd("TYPE", "fresh"), "none", "no filter fresh made")
            v = c.cmd("BF.INSERT", "default", "ITEMS", "https://i.example/1")
            t.ok(isinstance(v, Err) and "BF.MADD" in str(v),
                 "BF.INSERT into a partitioned filter: %r" % v)
            t.eq(c.cmd("BF.MADD", "default", "https://i.example/1"), [1],
                 "BF.MADD, routed by URL, takes it")
            t.eq(c.cmd("PING"), "PONG", "the node still answers")
        finally:
            c.close()
        t.eq(s.stop(), 0, "%s's exit status" % mode)


if __name__ == "__main__":
    run()
