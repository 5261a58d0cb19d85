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
- Bad input: a move to an unknown node, a map without a seed, images that
  are not images, slots not owned, and a filter of another seed are
  refused with a clear error and change nothing.
"""
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

SCALE = 1 if not WRAPPER else 0.1
URLS = max(int(20000 * SCALE), 2000)
FILTERS = """
[filter.default]
capacity = 400000
error_rate = 0.001
"""


def cli(t, *args):
    """seen-cli args: (exit status, stdout, stderr)."""
    p = subprocess.run([SEEN_CLI] + list(args), capture_output=True,
                       text=True, stdin=subprocess.DEVNULL,
                       timeout=300 * SLOW)
    return p.returncode, p.stdout, p.stderr


def ok_cli(t, *args):
    rc, out, err = cli(t, *args)
    t.eq(rc, 0, "seen-cli %s exits 0; stdout:\n%s\nstderr:\n%s" %
         (" ".join(args), out, err))
    return out


def nodes(t, n, name="n"):
    return [cluster_node(t, "%s%d" % (name, i), filters=FILTERS)
            for i in range(n)]


def client(ns):
    return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", s.port)
                                       for s in ns],
                        socket_timeout=30 * SLOW)


def urls(prefix, n):
    return ["https://%s.example/p/%d" % (prefix, i) for i in range(n)]


def record(rc, keys, retry_for=60):
    """SETNX of each key through rc, each retried on an error the cluster
    answers while slots move (TRYAGAIN past redis-py's few tries): the
    answers, 1 new and 0 seen."""
    out = []
    for k in keys:
        deadline = time.time() + retry_for * SLOW
        while True:
            try:
                out.append(rc.setnx(k, "1"))
                break
            except (redis.exceptions.RedisError, OSError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
    return out


def seen_all(t, ns, keys, what):
    """EXISTS of every key through a new RedisCluster: all 1."""
    rc = client(ns)
    try:
        missing = [k for k in keys if rc.exists(k) != 1]
    finally:
        rc.close()
    t.eq(len(missing), 0, "%s: every URL answered seen (missing %d of %d, "
         "e.g. %r)" % (what, len(missing), len(keys), missing[:3]))


def slots_of(s):
    """How many slots s owns in the map it holds."""
    m = getmap(s)
    me = myid(s)
    n = 0
    for line in m.splitlines():
        f = line.split()
        if f[0] == "slots" and f[1] == me:
            for r in f[2:]:
                a, _, b = r.partition("-")
                n += int(b or a) - int(a) + 1
    return n


def info_field(s, section, field):
    c = s.client(timeout=30)
    try:
        return c.info(section)[field]
    finally:
        c.close()


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


if __name__ == "__main__":
    run()
