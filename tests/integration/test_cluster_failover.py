"""
Failover of a cluster's shard by Redis Sentinel (issue 33, step 5;
INTERFACE.md "A cluster of nodes", Failover): when a replica listed under
primary P in the map becomes a primary by role (Sentinel's SLAVEOF NO
ONE), it takes P's slots in the map with the epoch one above, P and P's
other replicas as its replicas, and passes the map on.

1. By hand, no Sentinel: three primaries each with a replica, the map of
   epoch 1 pushed; REPLICAOF NO ONE on shard 0's replica gives every node
   the map of epoch 2 that says so; a map of epoch 3 that lacks the
   promotion (as one made for another change at the same time would) is
   taken and the promotion made again at epoch 4, on every node.
2. With three real redis-sentinel processes monitoring the three
   primaries (one name per shard, quorum 2): a redis-py RedisCluster
   client records URLs in a thread throughout, retrying on any error as a
   crawler would; shard 0's primary is killed -9; Sentinel promotes its
   replica, every live node's CLUSTER SLOTS names it for shard 0's slots
   within 20 s (scaled), the maps agree, the client goes on; restarted
   with its data_dir, the old primary is made a replica by Sentinel and
   the map lists it under the promoted node. Every URL acknowledged before
   each replica reached its primary's offset (what WAIT 1 on the crawler's
   connections would answer), and every URL acknowledged after the
   promotion, answers seen (a replica may lose the writes it had not
   received).

Every wait is for a condition, with a timeout scaled by SLOW.
"""
import os
import subprocess
import threading
import time

from seendtest import *
from repltest import info, stop_all, try_info
from clustertest import (RANGES, Cluster, cluster_node, getmap, sees_shard,
                         setmap, shard_sentinel, try_ask, try_getmap)

redis = system_module("redis")
from redis.cluster import ClusterNode, RedisCluster  # noqa: E402
from seend.cluster import keyslot  # noqa: E402

# Sentinel's timing, as test_failover.py's (why not less: see there)
DOWN_MS = 3000 if not WRAPPER else 20000
FAILOVER_MS = 10000 if not WRAPPER else 60000
# how long the nodes may take to pass a map on to each other
AGREE = 20


def s_(v):
    return v.decode() if isinstance(v, bytes) else v


def role(s):
    got = try_ask(s, "ROLE")
    return s_(got[0]) if isinstance(got, list) and got else None


def listed_under(s, rid, pid):
    """Whether s's CLUSTER NODES lists node rid as a replica of pid."""
    for x in (s_(try_ask(s, "CLUSTER", "NODES")) or "").splitlines():
        f = x.split()
        if len(f) > 3 and f[0] == rid:
            return "slave" in f[2].split(",") and f[3] == pid
    return False


@test
def test_replicaof_no_one_takes_the_primary_s_slots_in_the_map(t):
    cl = Cluster(t)
    p0, r0 = cl.primaries[0], cl.replicas[0]
    t.eq(role(r0), "slave", "r0 is a replica")
    t.eq(try_ask(r0, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE")
    # r0 a primary owning shard 0's slots, p0 its replica
    pairs = [(r0, p0)] + list(zip(cl.primaries[1:], cl.replicas[1:]))
    want = cl.text(2, shards=pairs)
    cl.wait_agree(want, timeout=AGREE)
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s "
               "(map epoch 2)" % cl.ids["p0"], "r0's log")
    slots = try_ask(p0, "CLUSTER", "SLOTS")
    first = [x for x in slots if x[0] == 0][0]
    t.eq((first[1], first[2][1]), (5460, r0.port),
         "CLUSTER SLOTS names r0 for shard 0")
    t.ok(listed_under(p0, cl.ids["p0"], cl.ids["r0"]), "CLUSTER NODES "
         "lists p0 as r0's replica: %r" % try_ask(p0, "CLUSTER", "NODES"))
    # p0 is still a primary by role (nobody demoted it): it does nothing
    t.eq(role(p0), "master", "p0 is left a primary by role")
    # a map of a later epoch that lacks the promotion (another change made
    # at the same time): r0 takes it and makes the promotion again on it
    lacking = cl.text(3)
    t.eq(setmap(p0, lacking), b"+OK\r\n", "SETMAP on p0")
    cl.wait_agree(cl.text(4, shards=pairs), timeout=AGREE)
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s "
               "(map epoch 4)" % cl.ids["p0"], "r0's log")
    # once a replica again, r0 promotes nothing
    t.eq(try_ask(r0, "REPLICAOF", "127.0.0.1", str(p0.port)), "OK",
         "REPLICAOF p0")
    t.ok(wait_until(lambda: role(r0) == "slave", 10), "r0 a replica")
    t.eq(setmap(p0, cl.text(5)), b"+OK\r\n", "SETMAP on p0")
    cl.wait_agree(cl.text(5), timeout=AGREE)
    # a replica removed from the cluster (seen-cli cluster del-node: the
    # new map, refused since it does not name the node, then REPLICAOF NO
    # ONE) takes nothing: its old map would give it its primary's slots
    r1 = cl.replicas[1]
    rest = [s for s in cl.all() if s is not r1]
    without = cl.text(6, shards=[(p, None if r is r1 else r)
                                 for p, r in cl.shards()])
    for s in rest:
        t.eq(setmap(s, without), b"+OK\r\n", "SETMAP")
    t.ok(setmap(r1, without).startswith(
        b"-ERR map refused: it does not name this node"), "r1 refuses it")
    t.eq(try_ask(r1, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE on r1")
    t.ok(wait_until(lambda: role(r1) == "master", 10), "r1 a primary")
    # the promotion is made when the role changes, before r1 answers again
    t.eq(getmap(r1), cl.text(5), "r1 keeps its old map")
    cl.wait_agree(without, rest, AGREE)
    t.ok("promoted" not in r1.read_log(), "r1 promoted nothing")
    stop_all(t, *cl.all())


class Crawler(threading.Thread):
    """Records new URLs one SETNX at a time through redis-py's
    RedisCluster; on any error it waits a little, makes a new client (its
    startup nodes are every node) and retries the URL, as a crawler
    would. acked: the URLs answered, in order."""

    def __init__(self, ports):
        super().__init__(daemon=True)
        self.ports = ports
        self.acked = []
        self.errors = 0
        self.last_error = None
        self.done = threading.Event()

    def client(self):
        return RedisCluster(
            startup_nodes=[ClusterNode("127.0.0.1", p) for p in self.ports],
            socket_timeout=5 * SLOW, socket_connect_timeout=2 * SLOW)

    def run(self):
        rc, i = None, 0
        while not self.done.is_set():
            u = "https://site%d.example/page/%d" % (i % 101, i)
            try:
                if rc is None:
                    rc = self.client()
                rc.setnx(u, 1)
                self.acked.append(u)
                i += 1
            except Exception as e:  # noqa: BLE001 (a crawler retries all)
                self.errors += 1
                self.last_error = repr(e)
                try:
                    if rc is not None:
                        rc.close()
                except Exception:  # noqa: BLE001
                    pass
                rc = None
                time.sleep(0.1)
        if rc is not None:
            rc.close()

    def wait_for(self, t, n, what, pred=lambda u: True, since=0):
        ok = wait_until(lambda: sum(1 for u in self.acked[since:]
                                    if pred(u)) >= n, 30, step=0.05)
        t.ok(ok, "%s: the crawler recorded %d URLs (wanted %d more); "
             "errors %d, last %s" % (what, len(self.acked) - since, n,
                                     self.errors, self.last_error))

    def stop(self):
        self.done.set()
        self.join(30 * SLOW)


def owners_of(s):
    """slot -> the ID of its owner in s's map."""
    out = [None] * 16384
    for line in (try_getmap(s) or "").splitlines():
        f = line.split()
        if f and f[0] == "slots":
            for r in f[2:]:
                a, _, b = r.partition("-")
                for x in range(int(a), int(b or a) + 1):
                    out[x] = f[1]
    return out


def in_shard0(u):
    return keyslot(u) <= RANGES[0][1]


def slots_name(s, port):
    """Whether s's CLUSTER SLOTS gives shard 0's range to port."""
    got = try_ask(s, "CLUSTER", "SLOTS")
    if not isinstance(got, list):
        return False
    return any(x[0] == RANGES[0][0] and x[1] == RANGES[0][1] and
               x[2][1] == port for x in got)


def seen(ports, urls):
    """EXISTS of each URL through a RedisCluster client: 0 or 1 each."""
    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p)
                                     for p in ports],
                      socket_timeout=30 * SLOW)
    out = []
    try:
        for i in range(0, len(urls), 1000):
            p = rc.pipeline()
            for u in urls[i:i + 1000]:
                p.exists(u)
            out += p.execute()
    finally:
        rc.close()
    return out


@test
def test_sentinel_fails_a_shard_over_and_the_map_follows(t):
    t.ok(SENTINEL is not None, "redis-sentinel is installed")
    cl = Cluster(t)
    p0, r0 = cl.primaries[0], cl.replicas[0]
    sentinels = [shard_sentinel(t, i, cl.primaries, DOWN_MS, FAILOVER_MS)
                 for i in range(3)]
    shards = list(zip(cl.primaries, cl.replicas))
    ok = wait_until(lambda: all(sees_shard(x, "shard%d" % k, p, r)
                                for x in sentinels
                                for k, (p, r) in enumerate(shards)), 60)
    t.ok(ok, "the sentinels see every shard: %s" % sentinels[0].log())

    crawler = Crawler([s.port for s in cl.all()])
    crawler.start()
    crawler.wait_for(t, 2000, "before the kill")
    mark = len(crawler.acked)
    # what WAIT 1 on the crawler's own connections would say: each
    # replica reached its primary's offset as it was after those URLs (a
    # WAIT on a connection that wrote nothing answers at once, as Redis's)
    for p, r in shards:
        off = int(info(p)["master_repl_offset"])
        t.ok(wait_until(lambda: int((try_info(r) or {}).get(
            "slave_repl_offset", -1)) >= off, 10),
            "%s's replica reached its offset %d" % (p.name, off))
    confirmed = crawler.acked[:mark]
    crawler.wait_for(t, 200, "after the replicas caught up", since=mark)

    p0.kill9()
    killed_at = len(crawler.acked)
    ok = wait_until(lambda: all(x.master_addr("shard0") ==
                                ("127.0.0.1", r0.port)
                                for x in sentinels), 90)
    t.ok(ok, "Sentinel promotes r0: %s" % "\n".join(x.log()
                                                    for x in sentinels))
    t.ok(wait_until(lambda: role(r0) == "master", 20), "r0 a primary")
    live = [s for s in cl.all() if s is not p0]
    ok = wait_until(lambda: all(slots_name(s, r0.port) for s in live), 20)
    t.ok(ok, "every live node's CLUSTER SLOTS names r0 for shard 0: %r"
         % [(s.name, try_ask(s, "CLUSTER", "SLOTS")) for s in live])
    ok = wait_until(lambda: len(set(try_getmap(s) for s in live)) == 1, 20)
    t.ok(ok, "the live nodes' maps agree: %r" % [try_getmap(s)
                                                 for s in live])
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s"
               % cl.ids["p0"], "r0's log")
    promoted_at = len(crawler.acked)
    crawler.wait_for(t, 100, "after the promotion, in shard 0",
                     pred=in_shard0, since=promoted_at)

    # the old primary back with its data_dir: Sentinel makes it r0's
    # replica, and the map lists it so
    p0.start()
    def follows(s, p):
        got = try_ask(s, "ROLE")
        return (isinstance(got, list) and len(got) > 2 and
                got[0] == b"slave" and got[2] == p.port)

    ok = wait_until(lambda: follows(p0, r0), 60)
    t.ok(ok, "Sentinel makes p0 a replica of r0: ROLE %r\n%s" % (
        try_ask(p0, "ROLE"), "\n".join(x.log() for x in sentinels)))

    ok = wait_until(lambda: all(listed_under(s, cl.ids["p0"], cl.ids["r0"])
                                for s in cl.all()), 20)
    t.ok(ok, "every node's CLUSTER NODES lists p0 as r0's replica: %r"
         % [s_(try_ask(s, "CLUSTER", "NODES")) for s in cl.all()])
    ok = wait_until(lambda: len(set(try_getmap(s) for s in cl.all())) == 1,
                    20)
    t.ok(ok, "every node's map agrees")
    crawler.wait_for(t, 100, "with p0 back", since=len(crawler.acked))
    crawler.stop()
    diag("crawler: %d URLs, %d errors (last %s)" % (
        len(crawler.acked), crawler.errors, crawler.last_error))

    # acknowledged and kept: replicated before the kill; after it, the
    # other shards'; after the promotion, all
    kept = confirmed + [u for u in crawler.acked[killed_at:promoted_at]
                        if not in_shard0(u)] + crawler.acked[promoted_at:]
    got = seen([s.port for s in cl.all()], kept)
    gone = [u for u, e in zip(kept, got) if e != 1]
    t.ok(not gone, "%d of %d acknowledged URLs answer not seen, such as %r"
         % (len(gone), len(kept), gone[:3]))
    for x in sentinels:
        x.stop()
    stop_all(t, *cl.all())


def handoffs(s):
    """CLUSTER HANDOFF LIST on s: its lines, or None if it cannot say."""
    got = try_ask(s, "CLUSTER", "HANDOFF", "LIST")
    return s_(got).splitlines() if isinstance(got, bytes) else None


@test
def test_a_failover_of_the_source_during_a_hand_over_loses_nothing(t):
    """seen-cli cluster reshard pauses a group of slots on the source and
    on its replica; the source is killed -9 while the group is paused and
    Sentinel promotes the replica, which keeps the pause (it records
    nothing in those slots, so a move that completed would lose nothing
    there); seen-cli sees the failover, rolls back on the promoted node
    and exits 1; the old primary returns as a replica with its pause,
    which fix ends; a move from the promoted node then completes, and
    every URL acknowledged is seen."""
    t.ok(SENTINEL is not None, "redis-sentinel is installed")
    ns = [cluster_node(t, "h%d" % i) for i in range(4)]
    p = subprocess.run([SEEN_CLI, "cluster", "create"] +
                       ["127.0.0.1:%d" % s.port for s in ns] +
                       ["--replicas", "1", "--yes"], capture_output=True,
                       text=True, timeout=120 * SLOW)
    t.eq(p.returncode, 0, "create: %s%s" % (p.stdout, p.stderr))
    prim = [s for s in ns if role(s) == "master"]
    repl = {}
    for s in ns:
        if s not in prim:
            port = int(try_ask(s, "ROLE")[2])
            repl[next(x for x in prim if x.port == port)] = s
    src, dst = prim
    r0 = repl[src]
    t.ok(wait_until(lambda: all(s_((try_ask(r, "ROLE") or [b""] * 4)[3]) ==
                                "connected" for r in repl.values()), 30),
         "the replicas are online")
    sentinels = [shard_sentinel(t, i, prim, DOWN_MS, FAILOVER_MS)
                 for i in range(3)]
    ok = wait_until(lambda: all(sees_shard(x, "shard%d" % k, pr, repl[pr])
                                for x in sentinels
                                for k, pr in enumerate(prim)), 60)
    t.ok(ok, "the sentinels see both shards: %s" % sentinels[0].log())
    src_id, dst_id = s_(try_ask(src, "CLUSTER", "MYID")), \
        s_(try_ask(dst, "CLUSTER", "MYID"))
    lowest = min(i for i, o in enumerate(owners_of(src)) if o == src_id)
    paused = next(u for u in ("https://paused.example/%d" % i
                              for i in range(100000))
                  if lowest <= keyslot(u) < lowest + 64)

    crawler = Crawler([s.port for s in ns])
    crawler.start()
    crawler.wait_for(t, 1000, "before the move")
    mark = len(crawler.acked)
    for pr in prim:
        off = int(info(pr)["master_repl_offset"])
        t.ok(wait_until(lambda: int((try_info(repl[pr]) or {}).get(
            "slave_repl_offset", -1)) >= off, 10),
            "%s's replica reached its offset %d" % (pr.name, off))
    confirmed = crawler.acked[:mark]

    # the move's first group held once paused, until the file goes
    hold = t.path("hold")
    open(hold, "w").close()
    env = dict(os.environ, SEEN_CLI_FAULT_HOLD_PAUSE=hold)
    mover = subprocess.Popen([SEEN_CLI, "cluster", "reshard",
                              "127.0.0.1:%d" % src.port, "--from", src_id,
                              "--to", dst_id, "--slots", "64", "--yes"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env, stdin=subprocess.DEVNULL)
    try:
        check_failover_during_hold(t, hold, mover, src, dst, r0, dst_id,
                                   lowest, paused, crawler, sentinels,
                                   ns, confirmed)
    finally:
        # a failed check leaves nothing waiting: the hold, the move, the
        # crawler, the sentinels
        if os.path.exists(hold):
            os.unlink(hold)
        if mover.poll() is None:
            mover.kill()
            mover.wait()
        crawler.stop()
        for x in sentinels:
            x.stop()


def check_failover_during_hold(t, hold, mover, src, dst, r0, dst_id, lowest,
                               paused, crawler, sentinels, ns, confirmed):
    """The rest of the test above, from the move held with its group
    paused."""
    want = "%d %d %s" % (lowest, lowest + 63, dst_id)
    t.ok(wait_until(lambda: handoffs(src) == [want] and
                    handoffs(r0) == [want], 30),
         "the source and its replica pause the group: %r %r" %
         (handoffs(src), handoffs(r0)))
    src.kill9()
    killed_at = len(crawler.acked)
    ok = wait_until(lambda: all(x.master_addr("shard0") ==
                                ("127.0.0.1", r0.port)
                                for x in sentinels), 90)
    t.ok(ok, "Sentinel promotes the source's replica: %s" %
         "\n".join(x.log() for x in sentinels))
    t.ok(wait_until(lambda: role(r0) == "master" and
                    owners_of(r0)[lowest] == s_(try_ask(r0, "CLUSTER",
                                                        "MYID")), 20),
         "the promoted node owns the source's slots")
    # it keeps the pause: nothing recorded there that a move would lose
    got = try_ask(r0, "SETNX", paused, "1")
    t.ok(isinstance(got, Err) and str(got).startswith("TRYAGAIN"),
         "the promoted node pauses the group's slots: %r" % (got,))
    t.eq(handoffs(r0), [want], "and lists the pause")
    # (the crawler may be retrying a URL of the paused slots meanwhile)
    promoted_at = len(crawler.acked)
    # seen-cli goes on, finds the source gone, and rolls back the pause
    os.unlink(hold)
    out, _ = mover.communicate(timeout=120 * SLOW)
    t.eq(mover.returncode, 1, "the move exits 1: %s" % out)
    t.contains(out, "may still be paused on 127.0.0.1:%d: run seen-cli "
               "cluster fix" % src.port)
    t.eq(handoffs(r0), [], "the pause ended on the promoted node: %s" %
         out)
    t.ok(try_ask(r0, "SETNX", paused, "1") in (0, 1),
         "which serves the slots again")
    crawler.wait_for(t, 100, "after the roll back", since=promoted_at)

    # the old primary back: a replica of the promoted node, with its pause
    # (data_dir), which fix ends
    src.start()
    ok = wait_until(lambda: s_((try_ask(src, "ROLE") or [b""])[0]) ==
                    "slave", 60)
    t.ok(ok, "Sentinel makes the old primary a replica")
    t.eq(handoffs(src), [want], "it paused the group again at its start")
    p = subprocess.run([SEEN_CLI, "cluster", "fix", "127.0.0.1:%d" %
                        dst.port], capture_output=True, text=True,
                       timeout=120 * SLOW)
    t.eq(p.returncode, 0, "fix: %s%s" % (p.stdout, p.stderr))
    t.contains(p.stdout, "never took them; rolling back")
    t.eq(handoffs(src), [], "fix ended it")
    # a move from the promoted node now completes
    r0_id = s_(try_ask(r0, "CLUSTER", "MYID"))
    p = subprocess.run([SEEN_CLI, "cluster", "reshard", "127.0.0.1:%d" %
                        r0.port, "--from", r0_id, "--to", dst_id, "--slots",
                        "64", "--yes"], capture_output=True, text=True,
                       timeout=120 * SLOW)
    t.eq(p.returncode, 0, "a move after the failover: %s%s" %
         (p.stdout, p.stderr))
    crawler.wait_for(t, 100, "after the move", since=len(crawler.acked))
    crawler.stop()
    diag("crawler: %d URLs, %d errors (last %s)" % (
        len(crawler.acked), crawler.errors, crawler.last_error))
    kept = confirmed + crawler.acked[promoted_at:] + [
        u for u in crawler.acked[killed_at:promoted_at]
        if owners_of(dst)[keyslot(u)] == dst_id]
    got = seen([s.port for s in ns], kept)
    gone = [u for u, e in zip(kept, got) if e != 1]
    t.ok(not gone, "%d of %d acknowledged URLs answer not seen, such as %r"
         % (len(gone), len(kept), gone[:3]))


if __name__ == "__main__":
    run()
