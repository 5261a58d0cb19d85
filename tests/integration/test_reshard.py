"""
Adding a node to a sharded service without re-crawling (README, "Adding a
node"): three seend nodes behind twemproxy (Debian's nutcracker, ketama)
hold 100k URLs; a fourth node is started and given the union of the three
nodes' filters with `seen-cli copy nodeN/default node4/default --merge`;
nutcracker is restarted with the four-node server list. Ketama moves about
a quarter of the URLs to the new node, which without the merge would
answer them "new" (pages crawled again); with it every URL is still seen
through the proxy, and the false positives on fresh URLs stay within what
the filters' error_rate allows. The false-positive rate is measured and
printed as a TAP comment (README quotes it).

Which node answered a request is read from each node's INFO counters
(cmd_check for EXISTS, cmd_seen for SETNX, keys_seen for SETNX answered
"seen"), not computed: the test does not reimplement ketama.
"""
import math
import os
import shutil
import subprocess

from seendtest import *

# redis-py is a Debian package: /usr/bin/python3 has it
redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.05
URLS = max(int(100000 * SCALE), 2000)
# the nodes' filter (seendtest.DEFAULT_FILTERS): SETNX and EXISTS go to it
FILTER = "default"
ERROR_RATE = 0.001
# one source node's filter merged into the new node's, per old node
OLD_NODES = 3


def fp_allowed(queries, rate):
    """The most false positives an honest filter gives over queries
    lookups of keys it does not hold, each a chance of at most rate: the
    expected count plus 3 standard deviations (a binomial's is at most
    sqrt(mean)) and a little slack, so that noise fails it far less than
    once in 500 runs."""
    mean = queries * rate
    return int(mean + 3 * math.sqrt(mean) + 3)


class Proxy:
    """nutcracker in front of nodes, on one port across restarts (the
    crawlers' address does not change when a node joins). Servers are
    named seend1, seend2, ...: ketama places a server's points by its
    name, so a new name adds points and moves none of the old ones."""

    def __init__(self, t, nodes):
        self.t = t
        self.exe = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
        t.ok(os.access(self.exe, os.X_OK), "nutcracker is installed")
        self.port = free_port()
        self.proc = None
        t.servers.append(self)
        self.start(nodes)

    def start(self, nodes):
        conf = self.t.path("nc%d.yml" % len(nodes))
        with open(conf, "w") as f:
            f.write("seend:\n"
                    "  listen: 127.0.0.1:%d\n"
                    "  redis: true\n"
                    "  hash: fnv1a_64\n"
                    "  distribution: ketama\n"
                    "  auto_eject_hosts: false\n"
                    "  timeout: %d\n"
                    "  preconnect: true\n"
                    "  server_connections: 1\n"
                    "  servers:\n" % (self.port, int(10000 * SLOW)))
            for i, s in enumerate(nodes):
                f.write("    - 127.0.0.1:%d:1 seend%d\n" % (s.port, i + 1))
        self.proc = subprocess.Popen(
            [self.exe, "-c", conf, "-s", str(free_port()), "-a",
             "127.0.0.1", "-o", self.t.path("nc%d.log" % len(nodes)),
             "-v", "6"])
        self.t.ok(wait_until(self.ready, 10 * SLOW), "nutcracker answers")

    def ready(self):
        if self.proc.poll() is not None:
            raise Failed("nutcracker exited with %s" % self.proc.returncode)
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.exceptions.RedisError:
            return False

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=30 * SLOW)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc = None

    def restart(self, nodes):
        self.stop()
        self.start(nodes)


def urls(prefix, k):
    return ["https://%s.example/page/%d?q=%d" % (prefix, i, i * 7919)
            for i in range(k)]


def pipelined(r, op, keys, chunk=5000):
    """op (setnx or exists) of every key through r, pipelined: a list of
    replies, an exception where the proxy answered one."""
    out = []
    for i in range(0, len(keys), chunk):
        p = r.pipeline(transaction=False)
        for k in keys[i:i + chunk]:
            if op == "setnx":
                p.setnx(k, 1)
            else:
                p.exists(k)
        out += p.execute(raise_on_error=False)
    return out


def counters(nodes):
    """Each node's INFO counters of requests answered."""
    out = []
    for s in nodes:
        c = s.client()
        try:
            i = c.info()
        finally:
            c.close()
        out.append({k: int(i[k]) for k in ("cmd_check", "cmd_seen",
                                            "keys_seen")})
    return out


def delta(before, after, key):
    return [a[key] - b[key] for a, b in zip(after, before)]


def filter_info(s):
    c = s.client()
    try:
        return c.info(FILTER)
    finally:
        c.close()


def filters(s):
    c = s.client()
    try:
        c.send("FILTERS\n")
        return [l.split(" ", 1)[0] for l in c.lines_until_end()]
    finally:
        c.close()


@test
def a_fourth_node_given_the_merged_filters_answers_every_moved_url_seen(t):
    nodes = []
    for i in range(OLD_NODES):
        nodes.append(Server(t, name="n%d" % (i + 1), unix=False).start())
    px = Proxy(t, nodes)
    keys = urls("reshard", URLS)
    first = pipelined(px.client(), "setnx", keys)
    t.eq([x for x in first if isinstance(x, Exception)][:3], [],
         "the first pass is answered")
    new = sum(1 for x in first if x is True)
    t.ok(new >= URLS - fp_allowed(URLS, ERROR_RATE), "every URL is new "
         "the first time but for false positives: %d of %d" % (new, URLS))
    print("# %d URLs through three nodes: %s keys per node" % (
        URLS, " / ".join(filter_info(s)["count"] for s in nodes)))

    # the new node, given every old node's filter before it joins
    n4 = Server(t, name="n4", unix=False).start()
    for i, s in enumerate(nodes):
        p = subprocess.run(
            [SEEN_CLI, "copy", "127.0.0.1:%d/%s" % (s.port, FILTER),
             "127.0.0.1:%d/%s" % (n4.port, FILTER), "--merge"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=120 * SLOW)
        t.eq((p.returncode, p.stderr.decode()), (0, ""),
             "copy --merge of node %d's filter into node 4" % (i + 1))
        t.contains(p.stdout.decode(), "merged filter %s from 127.0.0.1:%d "
                   "into filter %s on 127.0.0.1:%d" % (FILTER, s.port,
                                                       FILTER, n4.port))
    got = filter_info(n4)
    print("# node 4 after 3 merges: count %s, %s slices (%s merged), "
          "%s bytes" % (got["count"], got["slices"], got["merged_slices"],
                        got["bytes"]))
    t.eq(filters(n4), [FILTER], "no temporary filter left on node 4")

    nodes.append(n4)
    px.restart(nodes)
    r = px.client()

    # every old URL, wherever the new ring sends it, is seen; which node
    # answered is each node's count of EXISTS
    before = counters(nodes)
    ex = pipelined(r, "exists", keys)
    per_node = delta(before, counters(nodes), "cmd_check")
    t.eq([x for x in ex if isinstance(x, Exception)][:3], [],
         "the four-node ring answers")
    t.eq(sum(per_node), URLS, "each EXISTS answered by one node: %s"
         % per_node)
    moved = per_node[3]
    print("# four-node ring: %s URLs per node; %d (%.1f%%) moved to node "
          "4, which without the merge would answer them new" % (
              " / ".join(map(str, per_node)), moved, 100.0 * moved / URLS))
    t.ok(0.15 * URLS <= moved <= 0.35 * URLS, "about a quarter of the "
         "URLs map to node 4: %d of %d" % (moved, URLS))
    t.eq(sum(1 for x in ex if x != 1), 0,
         "every URL answers EXISTS 1 through the four-node ring")
    again = pipelined(r, "setnx", keys)
    t.eq(sum(1 for x in again if x is False), URLS,
         "a repeat pass through the four-node ring is all seen (SETNX 0)")

    # fresh URLs: how many are answered "seen" (SETNX 0) though never
    # recorded, and by which node
    fresh = urls("fresh", URLS)
    before = counters(nodes)
    got = pipelined(r, "setnx", fresh)
    after = counters(nodes)
    t.eq([x for x in got if isinstance(x, Exception)][:3], [],
         "the fresh pass is answered")
    fp = sum(1 for x in got if x is False)
    on_node = delta(before, after, "cmd_seen")
    fp_node = delta(before, after, "keys_seen")
    t.eq(sum(on_node), URLS, "each SETNX answered by one node")
    t.eq(sum(fp_node), fp, "the nodes' count of 'seen' answers")
    # The bound. Each of the three old filters holds at most its capacity
    # of keys, so it answers a key it never saw "seen" with probability at
    # most its error_rate r. A fresh URL on an old node asks one filter:
    # at most r. One on node 4 asks the merged union: its own (new) slice
    # and the three filters' slices, each at most r, so at most 3r (union
    # bound; node 4's own slice holds only fresh URLs of this pass, far
    # below its capacity, and is covered by the slack). Expected false
    # positives at most r * (fresh on nodes 1-3) + 3r * (fresh on node 4),
    # and fp_allowed adds 3 standard deviations to that mean.
    rate = (ERROR_RATE * (URLS - on_node[3]) +
            3 * ERROR_RATE * on_node[3]) / URLS
    allowed = fp_allowed(URLS, rate)
    print("# false positives on %d fresh URLs through the four-node ring: "
          "%d (%.4f%%; per node %s, node 4 took %d of the URLs); "
          "allowed %d (error_rate %g, 3x on node 4)" % (
              URLS, fp, 100.0 * fp / URLS, " / ".join(map(str, fp_node)),
              on_node[3], allowed, ERROR_RATE))
    t.ok(fp <= allowed, "false positives on fresh URLs: %d, at most %d"
         % (fp, allowed))
    t.ok(fp_node[3] <= fp_allowed(on_node[3], 3 * ERROR_RATE),
         "node 4's false positives: %d of %d, at most %d" % (
             fp_node[3], on_node[3],
             fp_allowed(on_node[3], 3 * ERROR_RATE)))
    px.stop()


if __name__ == "__main__":
    run()
