"""
Scale-out through twemproxy (Debian's nutcracker): three seend nodes behind
one proxy (ketama, redis: true) on loopback ports form one sharded dedup
service. 100k URLs through the proxy with redis-py: every URL is recorded
on exactly one node, a repeat pass is all seen, racing clients never get
two "new" for one URL; and what a dead node does to the answers, with and
without auto_eject_hosts, is measured (printed as TAP comments; README,
"Several machines", quotes them).

A Bloom filter promises no false negative, and false positives at no more
than its error_rate: a URL never seen may be answered "seen". So where a
test counts answers to fresh URLs, it allows the false positives the
configured rate permits, with a margin (fp_allowed) that noise does not
break; what it asserts exactly is only what holds for every answer.
"""
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from seendtest import *

# redis-py is a Debian package: /usr/bin/python3 has it
redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.05
URLS = max(int(100000 * SCALE), 2000)
NODES = 3
# the nodes' filter (seendtest.DEFAULT_FILTERS): its rate bounds every
# answer, however full the filter
ERROR_RATE = 0.001


def fp_allowed(queries, rate=ERROR_RATE):
    """The most false positives a filter may honestly give over queries
    lookups of keys it does not hold: the expected count (each lookup a
    chance of at most rate) plus 3 standard deviations and a little slack,
    so that a right filter fails this far less than once in 500 runs."""
    mean = queries * rate
    return int(mean + 3 * math.sqrt(mean) + 3)


class Proxy:
    """nutcracker in front of the nodes, on a free port."""

    def __init__(self, t, nodes, eject=False, name="nc"):
        self.t = t
        exe = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
        t.ok(os.access(exe, os.X_OK), "nutcracker is installed")
        self.port = free_port()
        self.stats = free_port()
        self.conf = t.path(name + ".yml")
        with open(self.conf, "w") as f:
            f.write("seend:\n"
                    "  listen: 127.0.0.1:%d\n"
                    "  redis: true\n"
                    "  hash: fnv1a_64\n"
                    "  distribution: ketama\n"
                    "  auto_eject_hosts: %s\n"
                    "  server_retry_timeout: 60000\n"
                    "  server_failure_limit: 1\n"
                    "  timeout: %d\n"
                    "  preconnect: true\n"
                    "  server_connections: 1\n"
                    "  servers:\n" % (self.port, "true" if eject else "false",
                                      int(10000 * SLOW)))
            for i, s in enumerate(nodes):
                f.write("    - 127.0.0.1:%d:1 seend%d\n" % (s.port, i + 1))
        self.proc = subprocess.Popen(
            [exe, "-c", self.conf, "-s", str(self.stats), "-a", "127.0.0.1",
             "-o", t.path(name + ".log"), "-v", "6"])
        t.servers.append(self)
        t.ok(wait_until(self.ready, 10 * SLOW), "nutcracker answers")

    def ready(self):
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.exceptions.RedisError:
            return False

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=30 * SLOW)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def urls(prefix, k):
    return ["https://%s.example/page/%d?q=%d" % (prefix, i, i * 7919)
            for i in range(k)]


def setnx_all(r, keys, chunk=5000):
    """SETNX key 1 for every key, pipelined; a list of True (new), False
    (seen) or the exception the proxy answered."""
    out = []
    for i in range(0, len(keys), chunk):
        p = r.pipeline(transaction=False)
        for k in keys[i:i + chunk]:
            p.setnx(k, 1)
        out += p.execute(raise_on_error=False)
    return out


def exists_on(node, keys, chunk=5000):
    r = redis.Redis(port=node.port)
    out = []
    for i in range(0, len(keys), chunk):
        p = r.pipeline(transaction=False)
        for k in keys[i:i + chunk]:
            p.exists(k)
        out += p.execute()
    return out


def start_nodes(t):
    nodes = []
    for i in range(NODES):
        s = Server(t, name="n%d" % (i + 1), unix=False)
        s.start()
        nodes.append(s)
    return nodes


@test
def three_nodes_behind_twemproxy_record_each_url_on_exactly_one_node(t):
    nodes = start_nodes(t)
    px = Proxy(t, nodes)
    r = px.client()
    keys = urls("shard", URLS)
    first = setnx_all(r, keys)
    errors = [x for x in first if isinstance(x, Exception)]
    t.eq(errors[:3], [], "the first pass is answered")
    new = sum(1 for x in first if x is True)
    # "seen" the first time: a false positive of the URL's node
    print("# first pass: %d new, %d false positives" % (new, URLS - new))
    t.ok(new >= URLS - fp_allowed(URLS), "every URL is new the first "
         "time but for false positives: %d of %d (at most %d fewer)"
         % (new, URLS, fp_allowed(URLS)))
    counts = [0] * URLS
    per_node = []
    for s in nodes:
        e = exists_on(s, keys)
        per_node.append(sum(e))
        for i, x in enumerate(e):
            counts[i] += x
    print("# %d URLs through the proxy: %s per node" %
          (URLS, " / ".join(map(str, per_node))))
    # no false negatives: the URL's own node holds it (or it was a false
    # positive there, which EXISTS gives again); a node can answer 1 for a
    # URL it never saw, each of the two others at most at the error rate
    t.eq(sum(1 for c in counts if c == 0), 0, "no URL is missing")
    extra = sum(1 for c in counts if c > 1)
    t.ok(extra <= fp_allowed(URLS * (NODES - 1)), "URLs on more than one "
         "node: %d (only false positives, at most %d)"
         % (extra, fp_allowed(URLS * (NODES - 1))))
    for n in per_node:
        t.ok(n > URLS // 6, "ketama spreads URLs over every node")
    again = setnx_all(r, keys)
    t.eq(sum(1 for x in again if x is False), URLS,
         "a repeat pass through the proxy is all seen")
    px.stop()


@test
def racing_clients_through_the_proxy_get_one_new_per_url(t):
    nodes = start_nodes(t)
    px = Proxy(t, nodes)
    keys = urls("race", max(URLS // 10, 1000))
    results = {}

    def worker(w):
        r = px.client()
        # each worker in its own order, so that they really interleave
        order = keys if w % 2 == 0 else list(reversed(keys))
        got = setnx_all(r, order, chunk=500)
        results[w] = dict(zip(order, got))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120 * SLOW)
    t.eq(len(results), 4, "every racing client finished")
    new = [sum(1 for w in results if results[w][k] is True) for k in keys]
    t.eq(sum(1 for x in new if x > 1), 0,
         "no URL is 'new' to two clients")
    # none: the first SETNX of the URL met a false positive
    t.ok(sum(1 for x in new if x == 0) <= fp_allowed(len(keys)),
         "one client got 'new' for each URL but false positives: %d "
         "without" % sum(1 for x in new if x == 0))
    px.stop()


def kill_node(node):
    node.proc.send_signal(signal.SIGKILL)
    node.proc.wait()


@test
def a_dead_node_without_auto_eject_gives_errors_never_wrong_answers(t):
    nodes = start_nodes(t)
    px = Proxy(t, nodes, eject=False)
    r = px.client()
    keys = urls("dead", URLS // 5)
    setnx_all(r, keys)
    # its keys on disk first: a node killed with -9 loses what came after
    # its last snapshot (the journal, when wired, keeps them)
    t.eq(nodes[1].client().cmd("SAVE"), "OK")
    kill_node(nodes[1])
    got = setnx_all(r, keys)
    errors = sum(1 for x in got if isinstance(x, Exception))
    seen = sum(1 for x in got if x is False)
    new = sum(1 for x in got if x is True)
    print("# node 2 dead, auto_eject_hosts false: %d URLs: %d errors "
          "(%.1f%%), %d seen, %d new" % (len(keys), errors,
                                         100.0 * errors / len(keys), seen,
                                         new))
    t.eq(new, 0, "no URL recorded before is answered new")
    t.ok(errors > len(keys) // 6, "the dead node's share gets errors")
    t.eq(seen + errors, len(keys))
    kinds = set(str(x) for x in got if isinstance(x, Exception))
    print("# errors: %s" % sorted(kinds)[:3])
    nodes[1].start()
    t.ok(wait_until(px.ready, 10 * SLOW), "the proxy still answers")
    time.sleep(1 * SLOW)
    back = setnx_all(r, keys)
    t.eq(sum(1 for x in back if x is False), len(keys),
         "once the node is back (its snapshot loaded), all are seen again")
    px.stop()


@test
def a_dead_node_with_auto_eject_moves_its_urls_and_they_read_as_new(t):
    nodes = start_nodes(t)
    px = Proxy(t, nodes, eject=True)
    r = px.client()
    keys = urls("eject", URLS // 5)
    setnx_all(r, keys)
    kill_node(nodes[2])
    got = []
    # the first failures eject the node; then its share goes elsewhere
    for _ in range(3):
        got = setnx_all(r, keys)
        if not any(isinstance(x, Exception) for x in got):
            break
        time.sleep(0.2)
    errors = sum(1 for x in got if isinstance(x, Exception))
    new = sum(1 for x in got if x is True)
    seen = sum(1 for x in got if x is False)
    print("# node 3 dead, auto_eject_hosts true: %d URLs: %d errors, "
          "%d answered new though recorded before (%.1f%%), %d seen" %
          (len(keys), errors, new, 100.0 * new / len(keys), seen))
    t.eq(errors, 0, "after ejection every request is answered")
    t.ok(new > len(keys) // 6, "the ejected node's URLs read as new on "
         "the nodes that took its share")
    px.stop()


if __name__ == "__main__":
    run()
