#!/usr/bin/python3
"""
Moving slots between nodes (issue 33, step 4; src/cluster_move.h):
seen-cli cluster reshard and rebalance copy a slot's bits from its node to
another while the source serves, pause it (-TRYAGAIN), copy again and save
on the target, and hand it over by a new map. What they must show:

- URLs recorded through redis-py's RedisCluster before a node is added
  and the cluster rebalanced onto it are all answered seen afterwards,
  by their new owners; the new node owns its share and holds their keys;
  the old nodes free what they gave away; check agrees.
- The same with two writers recording fresh URLs throughout the move:
  every URL acknowledged new once, then answered seen (0 answered new
  again), and a node removed the same way (reshard its slots away, then
  del-node).
- kill -9 of the source or of the target at a random moment of a move,
  then a restart and fix: every slot served by one node, and every URL
  acknowledged before the kill answered seen.
- A source killed right after a move replays only its own slots' keys
  from the journal (its part, smaller now, is not filled by the others').
- Bad input: a move to an unknown node, a map without a seed, images that
  are not images, slots not owned, a filter that is not partitioned in
  the range, are refused with a clear error and change nothing.
"""
import logging
import os
import random
import re
import signal
import subprocess
import threading
import time

from seendtest import *
from clustertest import *

redis = system_module("redis")
from redis.cluster import ClusterNode, RedisCluster  # noqa: E402
# redis-py logs every MOVED and TRYAGAIN it follows with a traceback
logging.getLogger("redis").setLevel(logging.CRITICAL)

SCALE = 1 if not WRAPPER else 0.1
URLS = max(int(10000 * SCALE), 2000)
# kill -9 runs per side (one under valgrind)
RUNS = int(os.environ.get("SEEND_MOVE_KILL_RUNS", "10" if not WRAPPER else
                          "1"))
FILTERS = MOVE_FILTERS


def rss_kb(s):
    with open("/proc/%d/status" % s.proc.pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


@test
def rebalance_onto_a_new_node_keeps_every_url_seen(t):
    ns = nodes(t, 4)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns[:3]], "--yes")
    keys = urls("before", URLS)
    rc = client(ns[:3])
    got = record(rc, keys)
    rc.close()
    t.eq(sum(got), len(keys), "every URL new once")
    ok_cli(t, "cluster", "add-node", addr(ns[3]), addr(ns[0]))
    out = ok_cli(t, "cluster", "rebalance", addr(ns[0]),
                 "--use-empty-masters", "--yes")
    t.contains(out, "Moving")
    t.ok(4000 <= slots_of(ns[3]) <= 4200,
         "the new node owns a quarter: %d" % slots_of(ns[3]))
    seen_all(t, ns, keys, "after the rebalance")
    count = int(info_field(ns[3], "default", "count"))
    t.ok(len(keys) * 0.2 <= count <= len(keys) * 0.3,
         "the new node's part counts about a quarter of the keys: %d" %
         count)
    ok_cli(t, "cluster", "check", addr(ns[1]))
    # nothing answered new again: SETNX of every key through a new
    # client says seen
    rc = client(ns)
    again = record(rc, keys)
    rc.close()
    t.eq(sum(again), 0, "no URL answered new again")


@test
def replicas_follow_a_move(t):
    ns = nodes(t, 4)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    prim, repl = roles(ns)
    t.eq(len(prim), 2, "two primaries, each with a replica")
    keys = urls("repl", URLS // 2)
    rc = client(prim)
    record(rc, keys)
    rc.close()
    src, dst = prim
    before = owners(src)
    # a named filter on a slot the move takes (the source's 2048 lowest)
    lowest = min(i for i, o in enumerate(before) if o == myid(src))
    named = next(n for n in SPIDERS if lowest <= keyslot(n) < lowest + 2048)
    t.eq(ask(src, "SADD", named, "a", "b", "c"), 3)
    wait_until(lambda: named.encode() in ask(repl[src.name], "KEYS", "*"),
               timeout=30)
    # the source's replica restarted first: a replica from its start,
    # which must still drop what its primary gives away
    repl[src.name].kill9()
    repl[src.name].start()
    wait_until(lambda: b"master_link_status:up" in ask(
        repl[src.name], "INFO", "replication"), timeout=30)
    t.ok(named.encode() in ask(repl[src.name], "KEYS", "*"),
         "the restarted replica holds the named filter")
    count0 = int(info_field(repl[src.name], "default", "count"))
    # a quarter of the source's slots: 4 groups, each streamed to
    # the target's replica before the map gives them
    ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src), "--to",
           myid(dst), "--slots", "2048", "--yes")
    after = owners(src)
    moved = [k for k in keys if before[keyslot(k)] == myid(src) and
             after[keyslot(k)] == myid(dst)]
    t.ok(len(moved) > len(keys) // 10, "%d URLs' slots moved" % len(moved))
    # the target's replica holds the moved slots' URLs (READONLY reads);
    # the source's replica freed them
    wait_until(lambda: sum(readonly_exists(repl[dst.name], moved)) ==
               len(moved), timeout=30)
    t.eq(sum(readonly_exists(repl[dst.name], moved)), len(moved),
         "the target's replica holds every moved URL")
    wait_until(lambda: int(info_field(repl[src.name], "default",
                                      "count")) < count0 * 0.85, timeout=30)
    count1 = int(info_field(repl[src.name], "default", "count"))
    t.ok(abs(count1 - count0 * 0.75) < count0 * 0.1, "the source's "
         "replica counts its shard's keys without the slots given away: "
         "%d -> %d" % (count0, count1))
    # the named filter is on the target's replica, gone from the source's
    wait_until(lambda: named.encode() not in ask(repl[src.name], "KEYS",
                                                 "*"), timeout=30)
    t.ok(named.encode() not in ask(repl[src.name], "KEYS", "*"),
         "the source's replica dropped the named filter that moved")
    c = Resp(repl[dst.name].port, timeout=30)
    try:
        t.eq(c.cmd("READONLY"), "OK")
        t.eq(c.cmd("SMISMEMBER", named, "a", "b", "c"), [1, 1, 1],
             "the target's replica holds the named filter that moved")
    finally:
        c.close()
    t.eq(ask(repl[dst.name], "CLUSTER", "SLOTMERGE",
             ask(src, "CLUSTER", "SLOTBITS", "0", "0")),
         Err("READONLY You can't write against a read only replica."))
    seen_all(t, prim, keys, "after the move")


def owners(s):
    """slot -> the ID of its owner in s's map."""
    out = [None] * 16384
    for line in getmap(s).splitlines():
        f = line.split()
        if f[0] != "slots":
            continue
        for r in f[2:]:
            a, _, b = r.partition("-")
            for slot in range(int(a), int(b or a) + 1):
                out[slot] = f[1]
    return out


class Writers:
    """n threads recording fresh URLs through RedisCluster clients of
    their own until stopped, each URL until it is answered (an error, a
    TRYAGAIN past redis-py's tries or a node killed, is retried with the
    same URL): acked holds (URL, first answer) in order."""

    def __init__(self, ns, n=2, prefix="w", named=False):
        self.ns = ns
        self.prefix = prefix
        # named: SADD of fresh members into 16 named filters a thread
        # (acked holds ((name, member), first answer))
        self.named = named
        self.acked = []
        self.errors = 0
        self.last_error = None
        self.failed = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,),
                                         daemon=True) for i in range(n)]
        for th in self.threads:
            th.start()

    def run(self, i):
        rc, k = None, 0
        try:
            while not self.stopping.is_set():
                key = "https://%s%d.example/p/%d" % (self.prefix, i, k)
                try:
                    if rc is None:
                        rc = RedisCluster(
                            startup_nodes=[ClusterNode("127.0.0.1", s.port)
                                           for s in self.ns],
                            socket_timeout=5 * SLOW)
                    if self.named:
                        key = ("%s%d-set%d" % (self.prefix, i, k % 16),
                               "m%d" % k)
                        got = rc.sadd(*key)
                    else:
                        got = rc.setnx(key, "1")
                except Exception as e:
                    # RedisError, OSError, and redis-py's
                    # RedisClusterException when no node answers in time
                    with self.lock:
                        self.errors += 1
                        self.last_error = e
                    if rc is not None:
                        try:
                            rc.close()
                        except Exception:
                            pass
                    rc = None
                    time.sleep(0.05)
                    continue
                with self.lock:
                    self.acked.append((key, got))
                k += 1
        except Exception as e:     # reported by stop()
            self.failed = e

    def count(self):
        with self.lock:
            return len(self.acked)

    def stop(self, t):
        self.stopping.set()
        for th in self.threads:
            th.join(timeout=120 * SLOW)
        t.ok(self.failed is None, "the writers ran: %r" % (self.failed,))
        diag("%d URLs recorded by the writers, %d errors retried (the "
             "last: %r)" % (len(self.acked), self.errors, self.last_error))
        return [k for k, _ in self.acked]


def fp_allowed(n):
    """False positives allowed among n fresh URLs at error_rate 0.001."""
    return poisson_bounds(n * 0.001)[1]


def first_answers_new(t, w):
    """The writers' URLs were first answered new (but for false
    positives: a Bloom filter's first pass promises no more)."""
    seen_first = sum(1 for _, got in w.acked if not got)
    t.ok(seen_first <= fp_allowed(len(w.acked)),
         "%d of %d fresh URLs first answered seen (allowed %d)" %
         (seen_first, len(w.acked), fp_allowed(len(w.acked))))


@test
def writers_throughout_a_rebalance_and_a_removal_lose_nothing(t):
    ns = nodes(t, 4)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns[:3]], "--yes")
    ok_cli(t, "cluster", "add-node", addr(ns[3]), addr(ns[0]))
    before = urls("before", URLS)
    rc = client(ns[:3])
    record(rc, before)
    rc.close()
    w = Writers(ns[:3])
    wait_until(lambda: w.count() >= 200, timeout=30)
    out = ok_cli(t, "cluster", "rebalance", addr(ns[0]),
                 "--use-empty-masters", "--yes")
    t.contains(out, "slot(s) moved")
    # and the new node removed again: its slots resharded away, one
    # old node each, then del-node
    n3 = myid(ns[3])
    left = slots_of(ns[3])
    for i, s in enumerate(ns[:3]):
        n = left // 3 + (1 if i < left % 3 else 0)
        ok_cli(t, "cluster", "reshard", addr(ns[0]), "--from", n3, "--to",
               myid(s), "--slots", str(n), "--yes")
    t.eq(slots_of(ns[3]), 0, "the fourth node gave all its slots away")
    c = w.count()
    wait_until(lambda: w.count() >= c + 200, timeout=30)
    during = w.stop(t)
    ok_cli(t, "cluster", "del-node", addr(ns[0]), n3)
    first_answers_new(t, w)
    t.ok(len(during) >= 400, "the writers kept recording: %d URLs" %
         len(during))
    seen_all(t, ns[:3], before + during, "after the moves")
    rc = client(ns[:3])
    again = record(rc, before + during)
    rc.close()
    t.eq(sum(again), 0, "no URL answered new again")
    ok_cli(t, "cluster", "check", addr(ns[1]))


KILL_FILTERS = MOVE_CF_FILTERS


def kill_during_a_move(t, victim_is_source, run):
    """One run: two primaries, URLs recorded, a reshard of most of the
    source's slots to the target killed (-9) on one side at a random
    moment, the node restarted, fix, then every URL acknowledged before
    or during it answered seen, and every slot with one node."""
    ns = nodes(t, 2, name="k%d-" % run, filters=KILL_FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    src, dst = ns
    before = urls("k%d" % run, 1000) + urls("kc%d" % run, 500)
    rc = client(ns)
    record(rc, before)
    rc.close()
    w = Writers(ns, prefix="k%dw" % run)
    # and named filters, whole on their slots, moving with them
    wn = Writers(ns, n=1, prefix="k%dn" % run, named=True)
    # and the cuckoo filter's URLs, its ranges moving
    wc = Writers(ns, n=1, prefix="kc%dw" % run)
    wait_until(lambda: w.count() >= 20 and wn.count() >= 40 and
               wc.count() >= 20, timeout=30)
    p = subprocess.Popen([SEEN_CLI, "cluster", "reshard", addr(src),
                          "--from", myid(src), "--to", myid(dst),
                          "--slots", "4000", "--yes"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True)
    # the kill comes a random moment after a random group's start: any
    # step of a hand-over (4000 slots go in 8 groups of 512 or fewer)
    victim = src if victim_is_source else dst
    group, lines = random.randint(1, 8), []
    for line in p.stdout:
        lines.append(line)
        if line.startswith("Moving slots") and group == 1:
            break
        group -= line.startswith("Moving slots")
    time.sleep(random.uniform(0, 0.05) * SLOW)
    victim.kill9()
    out = "".join(lines) + p.communicate(timeout=300 * SLOW)[0]
    victim.start()
    fixed = None
    for _ in range(10):
        rc_, fixed, err = cli(t, "cluster", "fix", addr(dst), "--yes")
        if rc_ == 0:
            break
        time.sleep(0.5 * SLOW)
    t.eq(rc_, 0, "fix exits 0 after the kill; reshard said:\n%s\nfix:\n%s"
         % (out, fixed))
    c, cn, cc = w.count(), wn.count(), wc.count()
    wait_until(lambda: w.count() >= c + 20 and wn.count() >= cn + 20 and
               wc.count() >= cc + 20, timeout=60)
    during = w.stop(t) + wc.stop(t)
    named = wn.stop(t)
    first_answers_new(t, w)
    first_answers_new(t, wn)    # new_filter_error_rate is 0.001 too
    first_answers_new(t, wc)    # and cf's error_rate
    ok_cli(t, "cluster", "check", addr(src))
    moved = slots_of(dst) - 8192
    diag("run %d: %s killed, %d slots had moved, %d paused groups rolled "
         "back" % (run, victim.name, moved, fixed.count("rolling back")))
    seen_all(t, ns, before + during + named, "run %d (%s killed, %d "
             "slots had moved)" % (run, victim.name, moved))
    for s in ns:
        s.stop()


@test
def kill_9_of_the_source_during_a_move_loses_nothing(t):
    for run in range(RUNS):
        kill_during_a_move(t, True, run)


@test
def kill_9_of_the_target_during_a_move_loses_nothing(t):
    for run in range(RUNS):
        kill_during_a_move(t, False, run)


@test
def bad_moves_are_refused_and_change_nothing(t):
    ns = nodes(t, 2)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    a, b = ns
    rc, out, err = cli(t, "cluster", "reshard", addr(a), "--from", myid(a),
                       "--to", "f" * 40, "--slots", "10", "--yes")
    t.eq(rc, 1, "a move to an unknown node exits 1")
    t.contains(out, "is not known or not a master")
    rc, out, err = cli(t, "cluster", "reshard", addr(a), "--from", myid(a),
                       "--to", myid(b), "--slots", "9000", "--yes")
    t.eq(rc, 1, "more slots than the source owns: exits 1")
    t.contains(out, "own only 8192 slots, 9000 asked")
    # the node commands themselves
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", "not an image"),
         Err("ERR not an image of slots (CLUSTER SLOTBITS makes them)"))
    img = ask(a, "CLUSTER", "SLOTBITS", "0", "3")
    t.ok(isinstance(img, bytes) and img.startswith(b"SEENDSB3"),
         "SLOTBITS gives an image")
    bad = img[:-9] + bytes([img[-9] ^ 1]) + img[-8:]
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", bad),
         Err("ERR the image's checksum does not match"))
    t.eq(ask(a, "CLUSTER", "SLOTBITS", "5", "3"),
         Err("ERR Invalid slot range: two slots, the first not above the "
             "second, in 0..16383"))
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", "9000", "9001", myid(b)),
         Err("ERR slot 9000 is not this node's"))
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", "0", "1", myid(a)),
         Err("ERR node %s is not another primary of the map held" % myid(a)))
    t.eq(ask(a, "CLUSTER", "HANDOFF", "LIST"), b"")
    # a pause answers TRYAGAIN for its slots alone, and survives a
    # restart until it is cancelled
    key = next(k for k in urls("pause", 200000) if keyslot(k) <= 1)
    other = next(k for k in urls("pause", 1000) if 2 <= keyslot(k) < 8192)
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", "0", "1", myid(b)), "OK")
    t.eq(ask(a, "SETNX", key, "1"),
         Err("TRYAGAIN Hash slot %d is being handed over to another node, "
             "try again" % keyslot(key)))
    t.eq(ask(a, "SETNX", other, "1"), 1)
    a.kill9()
    a.start()
    t.eq(ask(a, "CLUSTER", "HANDOFF", "LIST"), ("0 1 %s\n" %
                                                myid(b)).encode())
    t.eq(ask(a, "EXISTS", key), Err("TRYAGAIN Hash slot %d is being handed "
                                    "over to another node, try again" %
                                    keyslot(key)))
    rc, out, err = cli(t, "cluster", "check", addr(a))
    t.eq(rc, 1, "check exits 1 while slots are paused")
    t.contains(out, "has slots 0-1 paused for their hand-over to %s" %
               myid(b))
    rc, out, err = cli(t, "cluster", "fix", addr(a), "--yes")
    t.eq(rc, 0, "fix rolls the pause back: %s" % out)
    t.contains(out, "rolling back")
    t.eq(ask(a, "SETNX", key, "1"), 1)
    ok_cli(t, "cluster", "check", addr(b))
    # seen-cli (pipe mode and a command) sends a line answered TRYAGAIN
    # again until the pause ends: through b, which redirects to a
    paused = [k for k in urls("cli", 400000) if keyslot(k) <= 1][:3]
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", "0", "1", myid(b)), "OK")
    text = "".join(k + "\n" for k in paused[:2] + urls("cli-other", 20))
    pipe = subprocess.Popen([SEEN_CLI, "-p", str(b.port), "--new"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    one = subprocess.Popen([SEEN_CLI, "-p", str(b.port), "SEEN",
                            paused[2]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    pipe.stdin.write(text)
    pipe.stdin.flush()
    time.sleep(0.5)
    t.eq(one.poll(), None, "seen-cli SEEN waits while the slots pause")
    t.eq(ask(a, "CLUSTER", "HANDOFF", "CANCEL", "0", "1"), "OK")
    pipe.stdin.close()
    out, err = pipe.stdout.read(), pipe.stderr.read()
    pipe.wait(timeout=60 * SLOW)
    t.eq((pipe.returncode, err), (0, ""), "--new exits 0 after the pause")
    t.eq(out, text, "every URL new, in order, the paused ones too")
    out, err = one.communicate(timeout=60 * SLOW)
    t.eq((one.returncode, out, err), (0, "0\n", ""),
         "a command answered TRYAGAIN is sent again")


@test
def a_map_without_a_seed_moves_nothing(t):
    ns = nodes(t, 2, name="u")
    ids = [myid(s) for s in ns]
    text = map_text(2, [map_node(ids[0], ns[0].port),
                        map_node(ids[1], ns[1].port)],
                    {ids[0]: [(0, 8191)], ids[1]: [(8192, 16383)]})
    for s in ns:
        t.eq(setmap(s, text), b"+OK\r\n", "SETMAP of a map without a seed")
    rc, out, err = cli(t, "cluster", "reshard", addr(ns[0]), "--from",
                       ids[0], "--to", ids[1], "--slots", "10", "--yes")
    t.eq(rc, 1, "reshard exits 1")
    t.contains(out, "[ERR] The map has no seed")
    t.eq(slots_of(ns[0]), 8192, "nothing moved")


SMALL = """
[filter.default]
capacity = 20000
error_rate = 0.01
growth = off
[filter.cf]
prefixes = cf:
type = cuckoo
capacity = 1000
"""


@test
def a_source_killed_after_a_move_replays_only_its_slots(t):
    ns = [cluster_node(t, "m%d" % i, filters=SMALL) for i in range(2)]
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    src, dst = ns
    keys = urls("replay", 14000)
    rc = client(ns)
    record(rc, keys)
    rc.close()
    before = int(info_field(src, "default", "count"))
    ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src), "--to",
           myid(dst), "--slots", "4096", "--yes")
    after = int(info_field(src, "default", "count"))
    t.ok(abs(after - before / 2) < before * 0.1,
         "the source's count halves with half its slots: %d -> %d" %
         (before, after))
    # killed before any snapshot: the journal still holds the keys of
    # the slots given away, which its part (now half) has no room for
    src.kill9()
    src.start()
    again = int(info_field(src, "default", "count"))
    t.ok(abs(again - after) < before * 0.05, "after a restart the source "
         "counts its own slots' keys: %d (before the kill %d)" %
         (again, after))
    t.contains(src.read_log(), "keys of slots given away to other nodes "
               "skipped")
    seen_all(t, ns, keys, "after the source's restart")
    rc = client(ns)
    fresh = record(rc, urls("fresh", 500))
    rc.close()
    t.ok(sum(fresh) >= 490, "both nodes take new URLs (not full): %d of "
         "500 new" % sum(fresh))


# named filters: scrapy-redis's dupefilter sets (SADD), a RedisBloom
# filter and a cuckoo filter with a delete, each living whole on its
# name's slot
SPIDERS = ["spider%d:dupefilter" % i for i in range(24)]
# on slot 159: among the slots a 2 -> 3 rebalance moves
EXPIRING = "spider11:dupefilter"


def make_named(t, rc):
    """The named filters, through RedisCluster: name -> members."""
    made = {}
    for i, name in enumerate(SPIDERS):
        made[name] = ["fp-%d-%d" % (i, j) for j in range(150)]
        t.eq(rc.sadd(name, *made[name]), 150, "SADD %s" % name)
    t.eq(rc.execute_command("BF.RESERVE", "bfcrawl", "0.01", "1000"),
         b"OK")
    made["bfcrawl"] = ["b%d" % j for j in range(300)]
    rc.execute_command("BF.MADD", "bfcrawl", *made["bfcrawl"])
    t.eq(rc.execute_command("CF.RESERVE", "cfcrawl1", "1000"), b"OK")
    made["cfcrawl1"] = ["c%d" % j for j in range(300)]
    for m in made["cfcrawl1"]:
        rc.execute_command("CF.ADD", "cfcrawl1", m)
    # a delete and an extra copy travel with the tables
    rc.execute_command("CF.DEL", "cfcrawl1", "c0")
    rc.execute_command("CF.ADD", "cfcrawl1", "c1")
    t.eq(rc.expire(EXPIRING, 3600), True, "EXPIRE of a named filter")
    return made


def answers(rc, made):
    """Every member's answer and 100 strangers' per named filter: a filter
    moved byte for byte answers exactly the same (false positives too)."""
    out = {}
    for name, members in made.items():
        probe = members + ["stranger-%d" % j for j in range(100)]
        if name.startswith("bf"):
            got = rc.execute_command("BF.MEXISTS", name, *probe)
        elif name.startswith("cf"):
            got = [rc.execute_command("CF.COUNT", name, m) for m in probe]
        else:
            got = rc.execute_command("SMISMEMBER", name, *probe)
        out[name] = [int(x) for x in got]
    return out


def with_checksum(img):
    """img (bytes) with its last 8 bytes the XXH3-64 of the rest, as
    cluster_move.h says (libxxhash, which seend links, through ctypes)."""
    import ctypes
    import struct
    x = ctypes.CDLL("libxxhash.so.0")
    x.XXH3_64bits.restype = ctypes.c_uint64
    x.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    body = img[:-8]
    return body + struct.pack("<Q", x.XXH3_64bits(body, len(body)))


def same_answers(t, got, want, what):
    """got == want (answers' dicts), a failure naming the filters that
    differ and how many of their answers do."""
    diff = {n: sum(a != b for a, b in zip(got.get(n, []), want[n])) or
            "missing" for n in want if got.get(n) != want[n]}
    t.eq(diff, {}, what)


def holders(ns, name):
    """The nodes whose KEYS lists name."""
    return [s.name for s in ns if name.encode() in ask(s, "KEYS", "*")]


@test
def named_filters_move_whole_with_their_slots(t):
    ns = nodes(t, 3, name="w")
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns[:2]], "--yes")
    rc = client(ns[:2])
    made = make_named(t, rc)
    want = answers(rc, made)
    t.ok(all(want[n][:len(m)] == [1] * len(m) for n, m in made.items()
             if not n.startswith("cf")), "every member answered seen")
    t.eq(want["cfcrawl1"][:3], [0, 2, 1], "CF.COUNT after a delete and "
         "a copy")
    rc.close()
    ids = {myid(s): s for s in ns}
    before = {n: owners(ns[0])[keyslot(n)] for n in made}
    ok_cli(t, "cluster", "add-node", addr(ns[2]), addr(ns[0]))
    out = ok_cli(t, "cluster", "rebalance", addr(ns[0]),
                 "--use-empty-masters", "--yes")
    t.ok("stays there" not in out, "no slot stays for a named filter")
    after = {n: owners(ns[0])[keyslot(n)] for n in made}
    moved = [n for n in made if before[n] != after[n]]
    diag("%d of %d named filters moved: %s" % (len(moved), len(made),
                                               moved))
    t.ok(len(moved) >= 3 and "bfcrawl" in moved and "cfcrawl1" in moved,
         "named filters of each kind moved with their slots: %d" %
         len(moved))
    rc = client(ns)
    same_answers(t, answers(rc, made), want, "every named filter answers "
                 "as before the move, on its new node")
    t.ok(EXPIRING in moved, "the filter with a deadline moved")
    ttl = rc.ttl(EXPIRING)
    t.ok(3500 <= ttl <= 3600, "its EXPIRE deadline came along: TTL %d" %
         ttl)
    rc.close()
    # the old owners drop them (a tick), the new ones list them
    for n in moved:
        wait_until(lambda: holders(ns, n) == [ids[after[n]].name],
                   timeout=10)
        t.eq(holders(ns, n), [ids[after[n]].name], "%s only on %s" %
             (n, ids[after[n]].name))
    # both sides restarted: the filters stay where they went
    for s in ns:
        s.kill9()
        s.start()
    for n in moved:
        t.eq(holders(ns, n), [ids[after[n]].name], "%s only on %s after "
             "restarts" % (n, ids[after[n]].name))
    rc = client(ns)
    same_answers(t, answers(rc, made), want, "and answers the same after "
                 "restarts")
    # a named filter keeps recording where it went; then everything on the
    # new node goes back (the same seeds return: a replay must not drop
    # them) and the old node is restarted again
    t.eq(rc.sadd(moved[0], "late"), 1, "SADD on the new owner")
    # and one deleted there: it must not come back with its slot, on the
    # old owner whose journal still holds its keys
    deleted = moved[1]
    t.eq(rc.delete(deleted), 1, "DEL on the new owner")
    rc.close()
    made[moved[0]].append("late")
    del made[deleted]
    want = answers(client(ns), made)
    ok_cli(t, "cluster", "reshard", addr(ns[0]), "--from", myid(ns[2]),
           "--to", myid(ns[0]), "--slots", str(slots_of(ns[2])), "--yes")
    t.eq(slots_of(ns[2]), 0, "the new node gave every slot back")
    wait_until(lambda: all(ns[2].name not in holders(ns, n) for n in made),
               timeout=10)
    for s in ns:
        s.kill9()
        s.start()
    rc = client(ns)
    same_answers(t, answers(rc, made), want, "every named filter answers "
                 "the same after going back and restarts")
    rc.close()
    t.eq([n for n in made if ns[2].name in holders(ns, n)], [],
         "the node left with no slot holds no named filter")
    t.eq(holders(ns, deleted), [], "the filter deleted on the new owner "
         "stays deleted")
    ok_cli(t, "cluster", "check", addr(ns[1]))


@test
def bad_images_of_named_filters_change_nothing(t):
    ns = nodes(t, 2, name="b")
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    name = EXPIRING     # slot 159, a's
    a, b = ns
    slot = keyslot(name)
    t.eq(ask(a, "SADD", name, "x", "y"), 2)
    img = ask(a, "CLUSTER", "SLOTBITS", str(slot), str(slot))
    t.ok(isinstance(img, bytes) and name.encode() in img,
         "the image carries the named filter")
    bits = ask(a, "CLUSTER", "SLOTBITS", str(slot), str(slot), "BITSONLY")
    t.ok(isinstance(bits, bytes) and name.encode() not in bits and
         bits[16:20] == b"\0\0\0\0", "BITSONLY leaves it out")
    t.eq(ask(a, "CLUSTER", "SLOTBITS", "0", "1", "WITHALL"),
         Err("ERR syntax error: CLUSTER SLOTBITS <first> <last> "
             "[BITSONLY]"))
    t.eq(ask(a, "CLUSTER", "SLOTMERGE", img, "SAVE"),
         Err("ERR slot %d (filter %s) is served here: the image would "
             "replace what it holds" % (slot, name)))
    # a byte of its dump's bits damaged, the image's checksum made right
    at = len(img) - 8 - 1
    bad = with_checksum(img[:at] + bytes([img[at] ^ 0x10]) + img[at + 1:])
    got = ask(b, "CLUSTER", "SLOTMERGE", bad, "SAVE")
    t.ok(isinstance(got, Err) and str(got).startswith(
        "ERR filter %s: bad dump chunk: " % name), "a damaged dump is "
        "refused: %r" % (got,))
    # the image cut inside the dump (the checksum made right)
    cut = with_checksum(img[:len(img) - 40] + b"\0" * 8)
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", cut, "SAVE"),
         Err("ERR the image ends early"))
    t.ok(name.encode() not in ask(b, "KEYS", "*"), "nothing was taken")
    # without SAVE the named filter is checked, not taken
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img), "OK")
    t.ok(name.encode() not in ask(b, "KEYS", "*"), "not taken without SAVE")
    # with SAVE it is (a copy b does not serve: MOVED), and a restart
    # drops that copy of a slot not b's
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img, "SAVE"), "OK")
    t.ok(name.encode() in ask(b, "KEYS", "*"), "taken with SAVE")
    t.eq(ask(b, "SISMEMBER", name, "x"),
         Err("MOVED %d 127.0.0.1:%d" % (slot, a.port)))
    b.kill9()
    b.start()
    wait_until(lambda: name.encode() not in ask(b, "KEYS", "*"), timeout=10)
    t.contains(b.read_log(), "filter %s dropped (its slot %d is another "
               "node's now)" % (name, slot))
    t.eq(ask(a, "SMISMEMBER", name, "x", "y"), [1, 1], "a still has it")
    # a copy left again, the filter deleted on a, then its slot moved for
    # real: the final copy does not hold it, and b drops the stale one
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img, "SAVE"), "OK")
    t.eq(ask(a, "DEL", name), 1)
    ok_cli(t, "cluster", "reshard", addr(a), "--from", myid(a), "--to",
           myid(b), "--slots", str(slot + 1), "--yes")
    t.eq(owners(a)[slot], myid(b), "the slot moved")
    t.ok(name.encode() not in ask(b, "KEYS", "*"), "the deleted filter "
         "did not come back on its new owner")
    t.eq(ask(b, "SISMEMBER", name, "x"), 0)


def same_slot_name(prefix, name):
    """prefix<i> for the first i whose slot is name's."""
    return next("%s%d" % (prefix, i) for i in range(10 ** 6)
                if keyslot("%s%d" % (prefix, i)) == keyslot(name))


@test
def named_filters_too_big_for_one_image_split_the_group(t):
    ns = [cluster_node(t, "z%d" % i, filters=FILTERS, start=False)
          for i in range(2)]
    for s in ns:
        # an image's named filters held to 6 MB: a SADD set is ~1.8 MB
        s.env["SEEND_FAULT_MOVE_NAMED_MAX"] = "6000000"
        s.start()
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    a, b = ns
    # six sets spread over slots 0..511 (one group), and four sharing
    # one slot there, which no image can carry
    spread = [n for n in ("crawl%d" % i for i in range(10 ** 5))
              if keyslot(n) < 512][:6]
    crowd = same_slot_name("crowd", spread[0])
    crowded = [crowd] + [same_slot_name("crowd%s-" % crowd, crowd)
                         for _ in range(1)]
    crowded += [same_slot_name("crowdy%d-" % i, crowd) for i in range(2)]
    t.eq(len(set(keyslot(n) for n in crowded)), 1, "one slot")
    made = {n: ["m%d" % j for j in range(50)] for n in spread[1:] + crowded}
    rc = client(ns)
    for n, members in made.items():
        rc.sadd(n, *members)
    want = answers(rc, made)
    rc.close()
    rc_, out, err = cli(t, "cluster", "reshard", addr(a), "--from", myid(a),
                        "--to", myid(b), "--slots", "512", "--yes")
    t.eq(rc_, 0, "the reshard exits 0: %s%s" % (out, err))
    t.contains(out, "slot %d's named filters are too big for one image: "
               "the slot stays there" % keyslot(crowd))
    t.ok(out.count("Moving slots") > 2, "the group was split:\n%s" % out)
    own = owners(a)
    t.eq(own[512], myid(b), "the next slot made up for the one that stayed")
    t.eq([n for n in spread[1:] if own[keyslot(n)] != myid(b)], [],
         "the spread sets moved")
    t.eq(own[keyslot(crowd)], myid(a), "the crowded slot stayed")
    rc = client(ns)
    same_answers(t, answers(rc, made), want, "every set answers as before")
    rc.close()


@test
def a_merge_under_way_holds_a_hand_over_off(t):
    # a second partitioned filter whose name shares default's slot, so
    # that MERGE default <it> is one slot's request
    other = same_slot_name("part", "default")
    filters = FILTERS + "[filter.%s]\nprefixes = part:\ncapacity = 1000\n" \
        "error_rate = 0.001\n" % other
    ns = [cluster_node(t, "g%d" % i, filters=filters, start=False)
          for i in range(2)]
    for s in ns:
        # 64 bytes of OR a loop turn: the merge below lasts long enough
        s.env["SEEND_FAULT_MERGE_STEP"] = "64"
        s.start()
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    a, b = ns
    # MERGE's keys share a slot in a cluster: a source named for its dst's
    dst = EXPIRING      # slot 159, a's
    slot = keyslot(dst)
    src = same_slot_name("src", dst)
    # 64 MiB at 64 bytes a turn: about a second of merging here
    t.eq(ask(a, "BF.RESERVE", src, "0.01", "40000000"), "OK")
    t.eq(ask(a, "BF.ADD", src, "x"), 1)
    c = Resp(a.port, timeout=120 * SLOW)
    try:
        c.send("MERGE", dst, src)
        wait_until(lambda: "into %s started" % dst in a.read_log(),
                   timeout=30)
        t.eq(ask(a, "CLUSTER", "HANDOFF", "START", str(slot), str(slot),
                 myid(b)),
             Err("ERR a MERGE into filter %s is under way: hand slots "
                 "%d-%d over once it is done" % (dst, slot, slot)))
        t.eq(ask(a, "CLUSTER", "HANDOFF", "LIST"), b"", "nothing paused")
        t.eq(c.reply(), "OK", "the merge ends")
    finally:
        c.close()
    t.eq(ask(a, "BF.EXISTS", dst, "x"), 1, "merged")
    # once it is done the slot may pause; and while slots pause, a MERGE
    # into a partitioned filter (it spans them) waits
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", str(slot), str(slot),
             myid(b)), "OK")
    owner = a if keyslot("default") < 8192 else b
    if owner is not a:
        t.eq(ask(owner, "CLUSTER", "HANDOFF", "START", "8192", "8192",
                 myid(a)), "OK")
    t.eq(ask(owner, "MERGE", "default", other),
         Err("TRYAGAIN slots of this node are being handed over to another "
             "node, try again"))
    for s, first in ((a, slot), (b, 8192)):
        t.eq(ask(s, "CLUSTER", "HANDOFF", "CANCEL", str(first), str(first)),
             "OK")
    t.eq(ask(owner, "MERGE", "default", other), "OK", "after the pause")


# a config cuckoo filter taking URLs by prefix beside the default one
CUCKOO = SMALL.replace("capacity = 1000\n", "capacity = 40000\n"
                       "error_rate = 0.001\ngrowth = off\n")


def cf_counts(ns):
    return [int(info_field(s, "cf", "count")) for s in ns]


@test
def a_config_cuckoo_filter_moves_with_its_slots(t):
    """A config cuckoo filter is partitioned by slot as a Bloom filter
    is: each node's table holds its slots' ranges, a move replaces the
    target's ranges with the source's (forgotten keys stay forgotten),
    the source frees them, and both keep it through kill -9."""
    ns = [cluster_node(t, "c%d" % i, filters=CUCKOO) for i in range(2)]
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    a, b = ns
    keys = ["cf:" + u for u in urls("cuckoo", 3000)]
    rc = client(ns)
    got = record(rc, keys)
    t.ok(sum(got) >= len(keys) - 10, "the URLs are new once: %d of %d" %
         (sum(got), len(keys)))
    rc.close()
    # member commands are asked on the node of the item's slot (the
    # other redirects there)
    own = owners(a)
    port = {myid(s): s for s in ns}
    t.eq([ask(port[own[keyslot(k)]], "CF.EXISTS", "cf", k)
          for k in keys[:20]], [1] * 20, "CF.EXISTS on each item's node")
    counts = cf_counts(ns)
    t.eq(sum(counts), sum(got), "each node counts its own slots' "
         "fingerprints: %s" % counts)
    t.ok(min(counts) > sum(got) / 4, "both nodes hold a part: %s" % counts)
    t.eq(ask(a, "CF.INSERT", "cf", "ITEMS", "x"),
         Err("ERR filter cf is partitioned by slot in cluster mode: add its "
             "items with CF.ADD or CF.ADDNX, which are routed by item"))
    # forgotten on a, in slots about to move to b
    moving = [k for k in keys if own[keyslot(k)] == myid(a) and
              keyslot(k) < 4096]
    forgotten = moving[:50]
    for k in forgotten:
        t.eq(ask(a, "CF.DEL", "cf", k), 1, "CF.DEL " + k)
    kept = [k for k in keys if k not in set(forgotten)]
    out = ok_cli(t, "cluster", "reshard", addr(a), "--from", myid(a),
                 "--to", myid(b), "--slots", "4096", "--yes")
    t.contains(out, "Moving")
    after = cf_counts(ns)
    t.eq(sum(after), sum(counts) - len(forgotten), "no fingerprint lost or "
         "doubled by the move: %s -> %s" % (counts, after))
    t.ok(after[0] < counts[0] * 0.6 and after[1] > counts[1] * 1.4,
         "half of a's part went to b: %s -> %s" % (counts, after))
    seen_all(t, ns, kept, "after the move")
    back = sum(1 for k in forgotten
               if ask(b, "CF.EXISTS", "cf", k) == 1)
    t.ok(back <= 2, "forgotten URLs stay forgotten on their new node: %d "
         "of %d answered held (false positives at 0.001)" %
         (back, len(forgotten)))
    t.eq(ask(a, "CF.EXISTS", "cf", moving[60]),
         Err("MOVED %d 127.0.0.1:%d" % (keyslot(moving[60]), b.port)),
         "the old owner redirects")
    for s in ns:
        s.kill9()
        s.start()
    t.eq(cf_counts(ns), after, "kill -9 of both nodes keeps each part")
    seen_all(t, ns, kept, "after kill -9 of both")
    rc = client(ns)
    again = record(rc, kept)
    rc.close()
    t.eq(sum(again), 0, "no URL answered new again")
    ok_cli(t, "cluster", "check", addr(a))


HOT = """
[filter.default]
capacity = 20000
error_rate = 0.01
growth = off
[filter.cf]
prefixes = https://cf.
type = cuckoo
capacity = 100000
error_rate = 0.001
growth = %s
"""


# small and tight: a few hundred URLs of one slot grow it past a dozen
# slices
HOT_TIGHT = HOT.replace("capacity = 100000", "capacity = 1000") % "2"


def hot_urls(n):
    """n URLs of one hash tag: all in one slot."""
    return ["https://cf.example/{hot}/%d" % i for i in range(n)]


@test
def a_hot_slot_fills_its_range_alone(t):
    """URLs of one hash tag fill their slot's range of a partitioned
    cuckoo filter long before the part is full: without growth only that
    slot's new URLs are refused; with growth the filter adds the slices
    growth plans (the same shapes on every node), so the slot still
    moves."""
    s = cluster_node(t, "fixed", filters=HOT % "off")
    ok_cli(t, "cluster", "create", addr(s), "--yes")
    c = Resp(s.port)
    got = [c.cmd("SETNX", u, "1") for u in hot_urls(400)]
    refused = [g for g in got if isinstance(g, Err)]
    t.ok(refused and all(g == "ERR full cf" for g in refused),
         "the hot slot's range refuses its URLs once full: %d of 400 "
         "refused (%r)" % (len(refused), refused[:1]))
    t.ok(got.count(1) >= 20, "it took some first: %d" % got.count(1))
    t.eq(c.cmd("SETNX", "https://cf.example/cold", "1"), 1,
         "another slot's URL is still taken")
    t.eq(int(info_field(s, "cf", "slices")), 1, "no slice added (growth off)")
    c.close()

    owner, other, hot, got = hot_pair(t, "g", HOT % "2", 400)
    # (a first pass may meet a false positive: a few per thousand in a
    # range this full, each answered seen)
    t.eq(sorted(set(got)), [0, 1] if 0 in got else [1], "with growth "
         "every hot URL is taken or seen, none refused: %r" %
         sorted(set(map(str, got))))
    t.ok(got.count(1) >= len(hot) - 10, "with growth the hot URLs are new "
         "but for false positives: %d of %d" % (got.count(1), len(hot)))
    grown = int(info_field(owner, "cf", "slices"))
    t.ok(2 <= grown <= 6, "the filter grew a few slices for one slot's "
         "range: %d" % grown)
    hot_moves(t, owner, other, hot, grown)

    # a dozen slices and more: past the slices whose rate reaches
    # FILTER_CUCKOO_RATE_MIN, each planned as the live filter made it
    owner, other, hot, got = hot_pair(t, "m", HOT_TIGHT, 700)
    grown = int(info_field(owner, "cf", "slices"))
    t.ok(grown >= 12 and not any(isinstance(g, Err) for g in got),
         "one slot's URLs grew the filter to %d slices" % grown)
    hot_moves(t, owner, other, hot, grown)


def hot_pair(t, name, filters, n):
    """Two nodes of filters in a cluster, and n hot URLs recorded on the
    owner of their slot: (owner, the other, the URLs, the answers)."""
    ns = [cluster_node(t, "%s%d" % (name, i), filters=filters)
          for i in range(2)]
    ok_cli(t, "cluster", "create", *[addr(x) for x in ns], "--yes")
    slot = keyslot("{hot}")
    owner = ns[0] if owners(ns[0])[slot] == myid(ns[0]) else ns[1]
    other = ns[1] if owner is ns[0] else ns[0]
    hot = hot_urls(n)
    c = Resp(owner.port)
    got = [c.cmd("SETNX", u, "1") for u in hot]
    c.close()
    return owner, other, hot, got


def hot_moves(t, owner, other, hot, grown):
    """The hot slot moves with half the owner's slots: the target adds
    the slices the source has, of the same planned shapes, and answers
    every hot URL seen."""
    slot = keyslot("{hot}")
    out = ok_cli(t, "cluster", "reshard", addr(owner), "--from",
                 myid(owner), "--to", myid(other), "--slots", "8192",
                 "--yes")
    t.contains(out, "slot(s) moved")
    t.eq(owners(other)[slot], myid(other), "the hot slot moved")
    t.eq(int(info_field(other, "cf", "slices")), grown, "the target took "
         "every slice")
    c = Resp(other.port)
    t.eq(sum(c.cmd("EXISTS", u) for u in hot), len(hot),
         "every hot URL seen on its new node")
    c.close()


def cf_count(s):
    return int(info_field(s, "cf", "count"))


@test
def a_replica_restarted_then_promoted_counts_moved_ranges_once(t):
    """A replica started as one (it keeps every range until its primary
    says otherwise), promoted, then given slots: the cuckoo filter's
    moved ranges count once."""
    ns = nodes(t, 4, filters=KILL_FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    prim, repl = roles(ns)
    src, dst = prim
    rc = client(prim)
    new = record(rc, urls("kcpromo", 3000))
    rc.close()
    r = repl[dst.name]
    r.kill9()
    r.start()
    t.ok(wait_until(lambda: b"master_link_status:up" in
                    ask(r, "INFO", "replication"), timeout=30),
         "the replica is back")
    t.ok(wait_until(lambda: cf_count(r) == cf_count(dst), timeout=30),
         "the replica holds its primary's part")
    t.eq(try_ask(r, "REPLICAOF", "NO", "ONE"), "OK")
    t.ok(wait_until(lambda: owners(src).count(myid(r)) > 0, timeout=30),
         "the promoted replica owns its primary's slots")
    before = cf_count(src) + cf_count(r)
    t.eq(before, sum(new), "the parts count every URL once")
    ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src), "--to",
           myid(r), "--slots", "2048", "--yes")
    t.eq(cf_count(src) + cf_count(r), before, "after a move into the "
         "promoted replica: %d + %d" % (cf_count(src), cf_count(r)))


@test
def an_empty_image_of_a_reset_part_brings_no_old_key(t):
    """A first copy of a slot reaches the target, the source's part is
    then emptied alone (a cluster reset stopped midway): its next images
    hold no bit, of a new seed, and the slot moves with none of the keys
    the reset forgot, in either type of filter."""
    ns = nodes(t, 2, filters=KILL_FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    a = ns[0] if owners(ns[0])[0] == myid(ns[0]) else ns[1]
    b = ns[1] if a is ns[0] else ns[0]
    tag = next("t%d" % i for i in range(200000)
               if keyslot("{t%d}" % i) == 0)
    u = "https://bl.example/{%s}/1" % tag
    v = "https://kc.example/{%s}/1" % tag
    t.eq(ask(a, "SETNX", u, "1"), 1, "a URL of slot 0 in default")
    t.eq(ask(a, "SETNX", v, "1"), 1, "and one in cf")
    # a first copy of slot 0 (of a move that went no further)
    img = ask(a, "CLUSTER", "SLOTBITS", "0", "0")
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img), "OK", "the first copy")
    for f in ("default", "cf"):
        seed = ask(a, "CLUSTER", "PARTSEED", f).split()[0].decode()
        t.eq(ask(a, "CLUSTER", "RESETPART", f, seed), "OK",
             "a's part of %s emptied" % f)
    ok_cli(t, "cluster", "reshard", addr(a), "--from", myid(a), "--to",
           myid(b), "--slots", "1", "--yes")
    t.eq(owners(b)[0], myid(b), "slot 0 moved")
    t.eq(ask(b, "EXISTS", u), 0, "the Bloom filter's forgotten URL is new")
    t.eq(ask(b, "EXISTS", v), 0, "the cuckoo filter's too")


@test
def a_newer_map_during_a_move_stops_it(t):
    """A map newer than the move's (a Sentinel promotion's, made here by
    hand) reaches the nodes while a group is paused: seen-cli finds it
    before it gives its own map, rolls the group back and exits 1; the
    slots stay with the source, served, with every URL. The target's
    partitioned cuckoo filter, whose ranges of those slots the group's
    copies replaced, counts only its own slots' URLs, before and after
    a kill -9."""
    ns = nodes(t, 2, filters=KILL_FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    src, dst = ns
    keys = urls("newer", URLS // 4) + urls("kcnewer", 1000)
    rc = client(ns)
    record(rc, keys)
    rc.close()
    cf = [int(info_field(s, "cf", "count")) for s in ns]
    t.ok(min(cf) > 300, "both nodes' cuckoo parts hold URLs: %s" % cf)
    hold = t.path("hold")
    open(hold, "w").close()
    mover = subprocess.Popen(
        [SEEN_CLI, "cluster", "reshard", addr(src), "--from", myid(src),
         "--to", myid(dst), "--slots", "64", "--yes"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, SEEN_CLI_FAULT_HOLD_PAUSE=hold))
    try:
        want = b"0 63 %s\n" % myid(dst).encode()
        t.ok(wait_until(lambda: ask(src, "CLUSTER", "HANDOFF", "LIST") ==
                        want, 30), "the group is paused")
        text = getmap(src)
        epoch = int(re.search(r"^epoch (\d+)$", text, re.M).group(1))
        newer = re.sub(r"^epoch \d+$", "epoch %d" % (epoch + 1), text,
                       flags=re.M)
        for s in ns:
            t.eq(setmap(s, newer), b"+OK\r\n", "SETMAP of a newer map")
    finally:
        os.unlink(hold)
    out, _ = mover.communicate(timeout=120 * SLOW)
    t.eq(mover.returncode, 1, "the move exits 1: %s" % out)
    t.contains(out, "holds a map of epoch %d, newer than this move's %d: "
               "the cluster changed during the move (a failover?)" %
               (epoch + 1, epoch))
    t.contains(out, ">>> Slots 0-63 stay with %s" % addr(src))
    t.eq(ask(src, "CLUSTER", "HANDOFF", "LIST"), b"", "the pause ended")
    t.eq(owners(dst)[0], myid(src), "slot 0 is still the source's")
    t.eq(getmap(dst), newer, "the newer map holds")
    seen_all(t, ns, keys, "after the stopped move")
    ok_cli(t, "cluster", "check", addr(dst))
    t.eq([int(info_field(s, "cf", "count")) for s in ns], cf,
         "the cuckoo parts count their own slots' URLs alone")
    for s in ns:
        s.kill9()
        s.start()
    t.eq([int(info_field(s, "cf", "count")) for s in ns], cf,
         "and so they do after kill -9 of both")
    seen_all(t, ns, keys, "after kill -9 of both")


# a window of 8 periods of PERIOD seconds: short enough to see a moved
# period forgotten on time, long enough to record three periods and move
# them (longer under valgrind)
PERIOD = max(3, round(3 * LOAD)) if not WRAPPER else \
    max(8, round(8 * LOAD))
WINDOWED = FILTERS + """
[filter.recent]
prefixes = https://recent.
capacity = 2000
error_rate = 0.01
growth = 2
expire = %ds
""" % (8 * PERIOD)


def next_period():
    """Sleeps until a new period of PERIOD seconds (of the wall clock, as
    seend cuts them) starts; its start."""
    now = time.time()
    start = (int(now) // PERIOD + 1) * PERIOD
    time.sleep(start - now + 0.05)
    return start


def slices_of(s, name):
    return int(info_field(s, name, "slices"))


def as_sb2(img, names):
    """An image of CLUSTER SLOTBITS (SEENDSB3) rewritten as a seend before
    windows moved made them (SEENDSB2: no window, no period starts), with
    the partitioned filters of names alone, its checksum made right."""
    import struct
    first, last, nf, nw = struct.unpack_from("<HHII", img, 8)
    at, out = 20, []
    for _ in range(nf):
        nl = img[at]
        name = img[at + 1:at + 1 + nl]
        seed, _, ns = struct.unpack_from("<QQI", img, at + 1 + nl)
        at += 1 + nl + 20
        f = bytes([nl]) + name + struct.pack("<QI", seed, ns)
        for _ in range(ns):
            nb, k, _ = struct.unpack_from("<QIQ", img, at)
            n = nb // 16384 * (last - first + 1) * 64
            f += struct.pack("<QI", nb, k) + img[at + 20:at + 20 + n]
            at += 20 + n
        if name.decode() in names:
            out.append(f)
    body = (b"SEENDSB2" + struct.pack("<HHII", first, last, len(out), 0) +
            b"".join(out))
    return with_checksum(body + b"\0" * 8)


@test
def windows_move_period_by_period(t):
    ns = [cluster_node(t, "w%d" % i, filters=WINDOWED) for i in range(2)]
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--yes")
    src, dst = ns
    # a node whose window is another: the source's slots are refused there
    odd = cluster_node(t, "w2", filters=WINDOWED.replace(
        "expire = %ds" % (8 * PERIOD), "expire = %ds" % (16 * PERIOD)))
    ok_cli(t, "cluster", "add-node", addr(odd), addr(src))
    t.eq(ask(odd, "CLUSTER", "SLOTMERGE",
             ask(src, "CLUSTER", "SLOTBITS", "0", "0")),
         Err("ERR filter recent has a window (expire) of %d ms here and %d "
             "ms on the source (must be the same on every node)" %
             (16000 * PERIOD, 8000 * PERIOD)))
    # one whose window has another error_rate (its slices another k):
    # refused before it adds a slice (asked once recent has keys, below)
    other = cluster_node(t, "w3", filters=WINDOWED.replace(
        "error_rate = 0.01\ngrowth", "error_rate = 0.00001\ngrowth"))
    ok_cli(t, "cluster", "add-node", addr(other), addr(src))
    # an image of a seend from before windows moved: taken for a filter
    # without a window, refused for one with
    img = ask(src, "CLUSTER", "SLOTBITS", "0", "3")
    t.eq(ask(odd, "CLUSTER", "SLOTMERGE", as_sb2(img, ["default"])), "OK")
    t.eq(ask(odd, "CLUSTER", "SLOTMERGE", as_sb2(img, ["recent"])),
         Err("ERR filter recent has a window (expire) of %d ms here and 0 "
             "ms on the source (an image of a seend from before windows "
             "moved: it says none)" % (16000 * PERIOD)))
    own = owners(src)
    rc = client(ns)
    # three periods; the second's URLs are all the source's, so that the
    # target has no slice of that period and takes one between two it has;
    # a node's part of a period takes 125 keys before it grows, so each
    # period has slices of several sizes on each node
    n = max(int(1500 * SCALE), 600)
    mine = [k for k in urls("recent.b", 3 * n)
            if own[keyslot(k)] == myid(src)][:n]
    batches = [urls("recent.a", n), mine, urls("recent.c", n)]
    starts, ends = [], []
    for b in batches:
        starts.append(next_period())
        p = rc.pipeline()
        for k in b:
            p.setnx(k, "1")
        t.eq(sum(p.execute()), len(b), "every URL new")
        ends.append(time.time())
    # a batch may spill into the next period on a slow machine: the
    # first batch's slices are dropped 9 periods after the start of the
    # period it ended in at the latest, the third's not before 8 periods
    # after its start, which is 2 periods after that at least
    gone_at = ends[0] - ends[0] % PERIOD + 9 * PERIOD
    kept_until = starts[2] + 8 * PERIOD
    got = ask(other, "CLUSTER", "SLOTMERGE",
              ask(src, "CLUSTER", "SLOTBITS", "0", "8191", "BITSONLY"))
    t.ok(isinstance(got, Err) and "cannot be here (are capacity, "
         "error_rate and growth the same on every node?" in str(got),
         "slices of another shape are refused: %r" % (got,))
    t.eq(slices_of(other, "recent"), 0, "and the refused image added none")
    before = slices_of(dst, "recent")
    # all of the source's slots, so that every URL is the target's after
    out = ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src),
                 "--to", myid(dst), "--slots", "8192", "--yes")
    t.contains(out, "Moving")
    t.eq(slots_of(dst), 16384, "the target owns every slot")
    t.ok(slices_of(dst, "recent") > before, "the target took the slices of "
         "the periods it lacked: %d -> %d" % (before,
                                             slices_of(dst, "recent")))
    # the second period's slices went between the first's and the third's
    # (tests/unit/test_filter_window.c checks where)
    with open(dst.log, errors="replace") as f:
        took = [l for l in f if "filter recent took slice" in l]
    t.ok(took, "the target took the slices of periods it lacked")
    diag("periods %r; the target took %s" % (starts, "; ".join(
        l.split("info: ", 1)[-1].strip() for l in took)))
    # the first period's slices go 9 periods after its start
    left = starts[0] + 9 * PERIOD - time.time()
    diag("recorded and moved %.1f s into the window of %d s" %
         (time.time() - starts[0], 8 * PERIOD))
    t.ok(left > 1, "the move ended within the window (%.1f s left)" % left)
    for b, what in zip(batches, "abc"):
        seen_all(t, ns, b, "period %s after the move" % what)
    # the moved slices kept their periods' starts: the first period's URLs
    # are forgotten once 9 periods passed from its start, the third's
    # not before 8 from its own
    rc.close()
    time.sleep(max(0, gone_at + 0.3 - time.time()))
    rc = client(ns)
    try:
        gone = [rc.exists(k) for k in batches[0]]
        kept = [rc.exists(k) for k in batches[2]]
        late = time.time()
    finally:
        rc.close()
    t.ok(late < kept_until, "asked before the third period's slices go "
         "(%.1f s early)" % (kept_until - late))
    # a false positive of the window's other live slices: each planned
    # for 0.01 / 9 at its fill, a few of them: 2 % is well past 3 sigma
    t.ok(sum(gone) < len(gone) * 0.02, "the first period's URLs forgotten "
         "on time on the target (%d of %d still seen)" % (sum(gone),
                                                         len(gone)))
    t.eq(sum(kept), len(kept), "the third period's URLs still seen")
    ok_cli(t, "cluster", "check", addr(dst))


if __name__ == "__main__":
    run()
