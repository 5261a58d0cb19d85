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
   the map lists it under the promoted node. Every URL acknowledged by
   WAIT 1 before the kill, and every URL acknowledged after the promotion,
   answers seen (a replica may lose the writes it had not received).

Every wait is for a condition, with a timeout scaled by SLOW.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from seendtest import *
from repltest import FILTERS, primary, replica, stop_all

redis = system_module("redis")
from redis.cluster import ClusterNode, RedisCluster  # noqa: E402
sys.path.insert(0, os.path.join(SRCDIR, "python"))
from seend.cluster import keyslot  # noqa: E402

CLUSTER_ON = "[cluster]\nenabled = on\n"
RANGES = [(0, 5460), (5461, 10922), (10923, 16383)]
SENTINEL = shutil.which("redis-sentinel")
# Sentinel's timing, as test_failover.py's (why not less: see there)
DOWN_MS = 3000 if not WRAPPER else 20000
FAILOVER_MS = 10000 if not WRAPPER else 60000


def die_with_parent():
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def ask(s, *words, timeout=10):
    """A command's reply from s (Resp's values), None if s does not answer
    (dead, or our connection killed by Sentinel's CLIENT KILL)."""
    try:
        c = Resp(s.port, timeout=timeout * SLOW)
        try:
            return c.cmd(*words)
        finally:
            c.close()
    except (OSError, EOFError):
        return None


def s_(v):
    return v.decode() if isinstance(v, bytes) else v


def getmap(s):
    return s_(ask(s, "CLUSTER", "GETMAP"))


def role(s):
    got = ask(s, "ROLE")
    return s_(got[0]) if isinstance(got, list) and got else None


def map_text(epoch, nodes, slots):
    """The canonical text of a map (src/cluster_map.h): nodes is
    [(id, port, primary id or None)], slots {id: [(a, b)]}."""
    lines = ["seend-cluster-map 1", "epoch %d" % epoch]
    for nid, port, prim in sorted(nodes):
        lines.append("node %s 127.0.0.1 %d 0 %s" % (nid, port, prim or "-"))
    for nid, _, _ in sorted(nodes):
        if slots.get(nid):
            lines.append("slots %s %s" % (nid, " ".join(
                "%d" % a if a == b else "%d-%d" % (a, b)
                for a, b in sorted(slots[nid]))))
    return "\n".join(lines) + "\n"


class Cluster:
    """Three primaries in cluster mode, a replica each (replicaof), the
    map of epoch 1 pushed to every node."""

    def __init__(self, t):
        self.t = t
        self.primaries = [primary(t, "p%d" % i, CLUSTER_ON)
                          for i in range(3)]
        self.replicas = [replica(t, p, "r%d" % i, CLUSTER_ON)
                         for i, p in enumerate(self.primaries)]
        self.ids = {s.name: s_(ask(s, "CLUSTER", "MYID"))
                    for s in self.all()}
        self.push(self.text(1))

    def all(self):
        return self.primaries + self.replicas

    def text(self, epoch, pairs=None):
        """The map with shard i's (primary, replica) = pairs[i]."""
        pairs = pairs or list(zip(self.primaries, self.replicas))
        nodes, slots = [], {}
        for (p, r), rg in zip(pairs, RANGES):
            nodes.append((self.ids[p.name], p.port, None))
            nodes.append((self.ids[r.name], r.port, self.ids[p.name]))
            slots[self.ids[p.name]] = [rg]
        return map_text(epoch, nodes, slots)

    def push(self, text):
        for s in self.all():
            self.t.eq(ask(s, "CLUSTER", "SETMAP", text), "OK",
                      "SETMAP on %s" % s.name)
        self.wait_agree(text, self.all())

    def wait_agree(self, text, nodes, timeout=20):
        ok = wait_until(lambda: all(getmap(s) == text for s in nodes),
                        timeout, step=0.05)
        self.t.ok(ok, "every node holds the map within %ss:\n%s\n%s" % (
            timeout * SLOW, text, "\n".join(
                "%s: %r" % (s.name, getmap(s)) for s in nodes)))


def listed_under(s, rid, pid):
    """Whether s's CLUSTER NODES lists node rid as a replica of pid."""
    for x in (s_(ask(s, "CLUSTER", "NODES")) or "").splitlines():
        f = x.split()
        if len(f) > 3 and f[0] == rid:
            return "slave" in f[2].split(",") and f[3] == pid
    return False


@test
def test_replicaof_no_one_takes_the_primary_s_slots_in_the_map(t):
    cl = Cluster(t)
    p0, r0 = cl.primaries[0], cl.replicas[0]
    t.eq(role(r0), "slave", "r0 is a replica")
    t.eq(ask(r0, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE")
    # r0 a primary owning shard 0's slots, p0 its replica
    pairs = [(r0, p0)] + list(zip(cl.primaries[1:], cl.replicas[1:]))
    want = cl.text(2, pairs)
    cl.wait_agree(want, cl.all())
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s "
               "(map epoch 2)" % cl.ids["p0"], "r0's log")
    slots = ask(p0, "CLUSTER", "SLOTS")
    first = [x for x in slots if x[0] == 0][0]
    t.eq((first[1], first[2][1]), (5460, r0.port),
         "CLUSTER SLOTS names r0 for shard 0")
    t.ok(listed_under(p0, cl.ids["p0"], cl.ids["r0"]), "CLUSTER NODES "
         "lists p0 as r0's replica: %r" % ask(p0, "CLUSTER", "NODES"))
    # p0 is still a primary by role (nobody demoted it): it does nothing
    t.eq(role(p0), "master", "p0 is left a primary by role")
    # a map of a later epoch that lacks the promotion (another change made
    # at the same time): r0 takes it and makes the promotion again on it
    lacking = cl.text(3)
    t.eq(ask(p0, "CLUSTER", "SETMAP", lacking), "OK", "SETMAP on p0")
    cl.wait_agree(cl.text(4, pairs), cl.all())
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s "
               "(map epoch 4)" % cl.ids["p0"], "r0's log")
    # once a replica again, r0 promotes nothing
    t.eq(ask(r0, "REPLICAOF", "127.0.0.1", str(p0.port)), "OK",
         "REPLICAOF p0")
    t.ok(wait_until(lambda: role(r0) == "slave", 10), "r0 a replica")
    t.eq(ask(p0, "CLUSTER", "SETMAP", cl.text(5)), "OK", "SETMAP on p0")
    cl.wait_agree(cl.text(5), cl.all())
    # a replica removed from the cluster (seen-cli cluster del-node: the
    # new map, refused since it does not name the node, then REPLICAOF NO
    # ONE) takes nothing: its old map would give it its primary's slots
    r1 = cl.replicas[1]
    rest = [s for s in cl.all() if s is not r1]
    nodes = [(cl.ids[p.name], p.port, None) for p in cl.primaries] + \
        [(cl.ids[r.name], r.port, cl.ids[p.name])
         for p, r in zip(cl.primaries, cl.replicas) if r is not r1]
    without = map_text(6, nodes, dict((cl.ids[p.name], [rg]) for p, rg in
                                      zip(cl.primaries, RANGES)))
    for s in rest:
        t.eq(ask(s, "CLUSTER", "SETMAP", without), "OK", "SETMAP")
    t.ok(str(ask(r1, "CLUSTER", "SETMAP", without)).startswith(
        "ERR map refused: it does not name this node"), "r1 refuses it")
    t.eq(ask(r1, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE on r1")
    t.ok(wait_until(lambda: role(r1) == "master", 10), "r1 a primary")
    # the promotion is made when the role changes, before r1 answers again
    t.eq(getmap(r1), cl.text(5), "r1 keeps its old map")
    cl.wait_agree(without, rest)
    t.ok("promoted" not in r1.read_log(), "r1 promoted nothing")
    stop_all(t, *cl.all())


# ---- three real sentinels, one name per shard ----

class Sentinel:
    def __init__(self, t, i, primaries):
        self.port = free_port()
        self.dir = t.path("sentinel%d" % i)
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "sentinel.conf")
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndaemonize no\n"
                    "protected-mode no\ndir %s\nlogfile %s\n"
                    % (self.port, self.dir,
                       os.path.join(self.dir, "sentinel.log")))
            for k, p in enumerate(primaries):
                f.write("sentinel monitor shard%d 127.0.0.1 %d 2\n"
                        "sentinel down-after-milliseconds shard%d %d\n"
                        "sentinel failover-timeout shard%d %d\n"
                        % (k, p.port, k, DOWN_MS, k, FAILOVER_MS))
        self.proc = subprocess.Popen([SENTINEL, self.conf],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT,
                                     preexec_fn=die_with_parent)
        t.servers.append(self)  # killed by run() if the test fails
        t.ok(wait_until(lambda: self.cmd("PING") == "PONG", 10),
             "redis-sentinel %d answers" % i)
        # INFO every second, hello every half second (test_failover.py)
        t.eq(self.cmd("SENTINEL", "DEBUG", "info-period", "1000",
                      "publish-period", "500"), "OK", "SENTINEL DEBUG")

    def cmd(self, *words):
        try:
            c = Resp(self.port, timeout=5)
            try:
                return c.cmd(*words)
            finally:
                c.close()
        except (OSError, EOFError):
            return None

    def sees(self, shard, p, r):
        """Whether it sees p up as shard's master, r up as its replica and
        the two other sentinels."""
        m = self.cmd("SENTINEL", "MASTER", shard)
        reps = self.cmd("SENTINEL", "REPLICAS", shard)
        if not isinstance(m, list) or not isinstance(reps, list):
            return False
        m = dict((s_(m[i]), s_(m[i + 1])) for i in range(0, len(m), 2))
        reps = [dict((s_(x[i]), s_(x[i + 1])) for i in range(0, len(x), 2))
                for x in reps]
        bad = {"s_down", "o_down", "disconnected"}
        return (m["port"] == str(p.port) and
                not bad & set(m["flags"].split(",")) and
                m["num-other-sentinels"] == "2" and
                [int(x["port"]) for x in reps if not bad &
                 set(x["flags"].split(",")) and
                 x["master-port"] == str(p.port)] == [r.port])

    def master_port(self, shard):
        got = self.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", shard)
        return int(got[1]) if isinstance(got, list) and len(got) == 2 \
            else None

    def log(self):
        try:
            with open(os.path.join(self.dir, "sentinel.log"),
                      errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


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


def in_shard0(u):
    return keyslot(u) <= RANGES[0][1]


def slots_name(s, port):
    """Whether s's CLUSTER SLOTS gives shard 0's range to port."""
    got = ask(s, "CLUSTER", "SLOTS")
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
    sentinels = [Sentinel(t, i, cl.primaries) for i in range(3)]
    shards = list(zip(cl.primaries, cl.replicas))
    ok = wait_until(lambda: all(x.sees("shard%d" % k, p, r)
                                for x in sentinels
                                for k, (p, r) in enumerate(shards)), 60)
    t.ok(ok, "the sentinels see every shard: %s" % sentinels[0].log())

    crawler = Crawler([s.port for s in cl.all()])
    crawler.start()
    crawler.wait_for(t, 2000, "before the kill")
    mark = len(crawler.acked)
    for p in cl.primaries:
        got = ask(p, "WAIT", "1", str(int(10000 * SLOW)), timeout=30)
        t.ok(isinstance(got, int) and got >= 1, "WAIT 1 on %s: %r"
             % (p.name, got))
    confirmed = crawler.acked[:mark]
    crawler.wait_for(t, 200, "after the WAITs", since=mark)

    p0.kill9()
    killed_at = len(crawler.acked)
    ok = wait_until(lambda: all(x.master_port("shard0") == r0.port
                                for x in sentinels), 90)
    t.ok(ok, "Sentinel promotes r0: %s" % "\n".join(x.log()
                                                    for x in sentinels))
    t.ok(wait_until(lambda: role(r0) == "master", 20), "r0 a primary")
    live = [s for s in cl.all() if s is not p0]
    ok = wait_until(lambda: all(slots_name(s, r0.port) for s in live), 20)
    t.ok(ok, "every live node's CLUSTER SLOTS names r0 for shard 0: %r"
         % [(s.name, ask(s, "CLUSTER", "SLOTS")) for s in live])
    ok = wait_until(lambda: len(set(getmap(s) for s in live)) == 1, 20)
    t.ok(ok, "the live nodes' maps agree: %r" % [getmap(s) for s in live])
    t.contains(r0.read_log(), "cluster: promoted: took 5461 slots of %s"
               % cl.ids["p0"], "r0's log")
    promoted_at = len(crawler.acked)
    crawler.wait_for(t, 100, "after the promotion, in shard 0",
                     pred=in_shard0, since=promoted_at)

    # the old primary back with its data_dir: Sentinel makes it r0's
    # replica, and the map lists it so
    p0.start()
    def follows(s, p):
        got = ask(s, "ROLE")
        return (isinstance(got, list) and len(got) > 2 and
                got[0] == b"slave" and got[2] == p.port)

    ok = wait_until(lambda: follows(p0, r0), 60)
    t.ok(ok, "Sentinel makes p0 a replica of r0: ROLE %r\n%s" % (
        ask(p0, "ROLE"), "\n".join(x.log() for x in sentinels)))

    ok = wait_until(lambda: all(listed_under(s, cl.ids["p0"], cl.ids["r0"])
                                for s in cl.all()), 20)
    t.ok(ok, "every node's CLUSTER NODES lists p0 as r0's replica: %r"
         % [s_(ask(s, "CLUSTER", "NODES")) for s in cl.all()])
    ok = wait_until(lambda: len(set(getmap(s) for s in cl.all())) == 1, 20)
    t.ok(ok, "every node's map agrees")
    crawler.wait_for(t, 100, "with p0 back", since=len(crawler.acked))
    crawler.stop()
    diag("crawler: %d URLs, %d errors (last %s)" % (
        len(crawler.acked), crawler.errors, crawler.last_error))

    # acknowledged and kept: WAIT 1 before the kill; after the kill, the
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


if __name__ == "__main__":
    run()
