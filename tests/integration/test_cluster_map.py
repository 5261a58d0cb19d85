"""
A cluster of nodes (issue 33, step 2; INTERFACE.md, "A cluster of
nodes"): three seend primaries in cluster mode, each with a replica, and
a map pushed by hand (CLUSTER SETMAP, the text of src/cluster_map.h, node
IDs from CLUSTER MYID), so that this test depends on no seen-cli.

- redis-py's RedisCluster (Debian's 4.3): four clients race on one list
  of 300k URLs (SETNX, pipelined): each URL is answered new by exactly
  one of them, the keys spread over the three primaries, and all are
  read back; ioredis' Cluster and node-redis' createCluster likewise on
  a smaller list (tests/node/cluster-map.mjs); the Python client
  (python/seend) records 100k URLs given one node's address.
- CLUSTER SLOTS, SHARDS, NODES and INFO have the shapes of a real Redis
  Cluster's (three redis-server 7.0.15 primaries and three replicas made
  by redis-cli --cluster create), ids, ports, epochs, offsets and times
  masked, in RESP2 and RESP3.
- Redirections: MOVED from a wrong node to redis-cli and on the line
  protocol (nc), followed by redis-cli -c; CROSSSLOT; CLUSTERDOWN once a
  newer map leaves slots unowned; a client that keeps asking the wrong
  node gets MOVED every time, with the node's RSS flat.
- The map: pushed to one node it reaches the five others; a lower epoch
  is refused (-STALEMAP); two maps of one epoch end the same on every
  node whatever order they came in; a map that does not name the node is
  refused.

Under valgrind (SEEND_WRAPPER) the lists are smaller (SCALE), waits are
scaled by SLOW, and the RSS bound is valgrind's leak check.
"""
import shutil
import subprocess
import threading

from seendtest import *
from repltest import Pipe, setnx_payload, wait_caught_up
from clustertest import (RANGES, Cluster, RedisNode, ask_raw, getmap,
                         map_node, map_text, node_script, replicas_listed,
                         setmap)

redis = system_module("redis")
import seend  # noqa: E402  (clustertest puts python/ on the path)
from seend.cluster import keyslot  # noqa: E402

SCALE = 1 if not WRAPPER else 0.05


def n(x):
    return max(int(x * SCALE), 1)


def spread(t, counts, total, what):
    """Each primary holds about a third of the keys (the slots are split
    in thirds; CRC16 spreads URLs evenly)."""
    t.ok(sum(counts) <= total and sum(counts) >= total - total // 1000 - 1,
         "%s: the primaries hold %r keys, %d together, of %d recorded"
         % (what, counts, sum(counts), total))
    for c in counts:
        t.ok(total / 4 <= c <= total * 0.42 or total < 300,
             "%s: a primary holds %d of %d keys: %r" % (what, c, total,
                                                         counts))


def other_primary(cl, key):
    """A primary that does not own key."""
    own = cl.owner(key)
    return next(p for p in cl.primaries if p is not own)


# ---- a real Redis Cluster of three primaries and three replicas ----

def info_fields(raw):
    """CLUSTER INFO's name:value lines, in order."""
    text = plain(parse_all(raw)).decode()
    return [tuple(l.split(":", 1)) for l in text.split("\r\n") if l]


def redis_cluster(t):
    """redis-cli --cluster create of six nodes with --cluster-replicas 1:
    the primaries own RANGES; returned as (primaries, replicas) in the
    ranges' order, once every node says cluster_state:ok and every replica
    is online in CLUSTER SHARDS."""
    nodes = [RedisNode(t, "redis%d" % i) for i in range(6)]
    cli = shutil.which("redis-cli")
    t.ok(cli is not None, "redis-cli is installed")
    p = subprocess.run([cli, "--cluster", "create"] +
                       ["127.0.0.1:%d" % x.port for x in nodes] +
                       ["--cluster-replicas", "1", "--cluster-yes"],
                       capture_output=True, text=True, timeout=60 * SLOW,
                       stdin=subprocess.DEVNULL)
    t.ok(p.returncode == 0, "redis-cli --cluster create: %s %s"
         % (p.stdout[-2000:], p.stderr[-2000:]))

    def ready():
        for x in nodes:
            f = dict(info_fields(x.cmd("CLUSTER", "INFO")))
            if f.get("cluster_state") != "ok" or \
                    f.get("cluster_known_nodes") != "6":
                return False
            lines = [l.split() for l in val(x.cmd(
                "CLUSTER", "NODES")).decode().splitlines()]
            if sum(1 for f in lines if "master" in f[2] and len(f) == 9) \
                    != 3 or sum(1 for f in lines if "slave" in f[2]) != 3:
                return False
        return True
    t.ok(wait_until(ready, 30), "the Redis Cluster reaches cluster_state:ok "
         "with six nodes known to each")
    by_id = {x.id: x for x in nodes}
    prims, reps = [], []
    for line in val(nodes[0].cmd("CLUSTER", "NODES")).decode().splitlines():
        f = line.split()
        if "master" in f[2]:
            prims.append((f[8], by_id[f[0].encode()]))
    prims.sort(key=lambda x: int(x[0].split("-")[0]))
    prims = [x for _, x in prims]
    for pr in prims:
        for line in val(nodes[0].cmd("CLUSTER", "NODES")).decode() \
                .splitlines():
            f = line.split()
            if f[3] == pr.id.decode():
                reps.append(by_id[f[0].encode()])
    t.eq(len(reps), 3, "one replica per Redis primary")
    # a write in each primary's slots takes its replica past "loading"
    for i, pr in enumerate(prims):
        k = next("k%d" % j for j in range(10000)
                 if RANGES[i][0] <= keyslot("k%d" % j) <= RANGES[i][1])
        t.eq(pr.cmd("SET", k, "1"), b"+OK\r\n", "SET on a Redis primary")
    t.ok(wait_until(lambda: all(b"loading" not in x.cmd("CLUSTER", "SHARDS")
                                for x in nodes), 30),
         "the Redis replicas are online in CLUSTER SHARDS")
    return prims, reps


def mask(v, ids):
    """A parsed reply (parse()) with what must differ masked: node IDs,
    ports, timestamps, epochs, replication offsets; shards and NODES
    lines sorted (Redis lists them in no set order). Types are kept."""
    kind, x = v
    if kind in (b"$", b"="):
        if x is None:
            return v
        for nid in ids:
            x = x.replace(nid, b"<id>")
        head = b""
        if kind == b"=":
            head, x = x[:4], x[4:]
        lines = []
        for line in x.split(b"\n"):
            f = line.split(b" ")
            if len(f) >= 8 and b"@" in f[1]:
                # NODES: id addr flags primary ping-sent pong epoch link
                f[1] = b"<addr>"
                f[4] = b"<ping>"
                f[5] = b"<pong>"
                f[6] = b"<epoch>"
            lines.append(b" ".join(f))
        if x.startswith(b"<id>"):
            lines = sorted(lines[:-1]) + lines[-1:]
        return (kind, head + b"\n".join(lines))
    if kind in (b"*", b"~"):
        out = [mask(e, ids) for e in x]
        for i in range(len(out) - 1):
            if out[i] == (b"$", b"replication-offset"):
                out[i + 1] = (b":", b"<offset>")
        return (kind, out)
    if kind == b"%":
        return (kind, [(mask(k, ids), (b":", b"<offset>")
                        if k == (b"$", b"replication-offset")
                        else mask(e, ids)) for k, e in x])
    if kind == b":" and int(x) > 16383:
        return (kind, b"<port>")
    return v


def shards_sorted(v):
    """CLUSTER SHARDS' shards in a set order (Redis's is its dict's)."""
    kind, x = v
    return (kind, sorted(x, key=repr))


def same_shape(t, got, want, ids_got, ids_want, what, sort=False):
    g = mask(parse_all(got), ids_got)
    w = mask(parse_all(want), ids_want)
    if sort:
        g, w = shards_sorted(g), shards_sorted(w)
    t.ok(g == w, "%s differs from Redis's:\n  seend %r\n  redis %r"
         % (what, g, w))


# ---- clients ----

def urls(tag, count):
    return ["https://%s.example/%d/p" % (tag, i) for i in range(count)]


def redis_py_setnx(port, keys, chunk=10000):
    """SETNX of every key through a RedisCluster seeded with one node:
    the replies, in order."""
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


def race(t, clients, fn, what):
    """fn(i) in clients threads at once: their results, in order."""
    res = [None] * clients
    errs = []

    def run_one(i):
        try:
            res[i] = fn(i)
        except Exception as e:   # noqa: BLE001 - reported below
            errs.append("%s client %d: %r" % (what, i, e))
    ths = [threading.Thread(target=run_one, args=(i,), daemon=True)
           for i in range(clients)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(600 * SLOW)
    t.ok(not any(th.is_alive() for th in ths), "%s: a client hung" % what)
    t.ok(not errs, "; ".join(errs))
    return res


def new_once(t, keys, replies, what):
    """Across the clients' replies, each key answered new by exactly one
    (a Bloom filter may call a new key seen: none new, within its error
    rate; two new never)."""
    ones = [sum(x) for x in zip(*replies)]
    twice = [k for k, x in zip(keys, ones) if x > 1]
    never = [k for k, x in zip(keys, ones) if x == 0]
    t.ok(not twice, "%s: %d URLs answered new more than once; first %r"
         % (what, len(twice), twice[:3]))
    t.ok(len(never) <= len(keys) // 1000,
         "%s: %d of %d URLs answered new by no client" % (what, len(never),
                                                          len(keys)))


# ---- tests ----

@test
def redis_py_four_racing_clients_each_url_new_once_over_three_primaries(t):
    cl = Cluster(t)
    keys = urls("py", n(300000))
    # every client seeded with another node: replicas too
    seeds = [cl.primaries[0], cl.primaries[1], cl.primaries[2],
             cl.replicas[0]]
    replies = race(t, 4, lambda i: redis_py_setnx(seeds[i].port, keys),
                   "redis-py RedisCluster")
    for i, rs in enumerate(replies):
        t.eq(len(rs), len(keys), "client %d's replies" % i)
    new_once(t, keys, [[bool(x) for x in rs] for rs in replies],
             "four redis-py clients")
    spread(t, cl.counts(), len(keys), "redis-py")
    again = redis_py_setnx(cl.primaries[1].port, keys)
    t.eq(sum(1 for x in again if x), 0, "URLs answered new a second time")
    from redis.cluster import RedisCluster
    rc = RedisCluster(host="127.0.0.1", port=cl.primaries[2].port)
    got = []
    for i in range(0, len(keys), 10000):
        pipe = rc.pipeline()
        for k in keys[i:i + 10000]:
            pipe.get(k)
        got.extend(pipe.execute())
    rc.close()
    t.eq(sum(1 for x in got if x == b"1"), len(keys),
         "GETs read every URL back as 1")
    cl.stop()


@test
def ioredis_and_node_redis_clusters_race_each_url_new_once(t):
    cl = Cluster(t, replicas=False)
    k = n(20000)
    before = 0
    for client, resp in (("ioredis", 2), ("node-redis", 2),
                         ("node-redis", 3)):
        out = node_script(t, "cluster-map.mjs", {
            "client": client, "resp": resp,
            "ports": [p.port for p in cl.primaries], "n": k, "clients": 4,
            "prefix": "%s-%d" % (client, resp)}, 120)
        what = "%s RESP%d" % (client, resp)
        t.eq(out["twice"], 0, "%s: URLs answered new by two clients" % what)
        t.ok(out["never"] <= k // 1000, "%s: %d of %d URLs answered new by "
             "no client" % (what, out["never"], k))
        t.eq(out["again"], 0, "%s: answered new again" % what)
        t.eq(out["got"], k, "%s: GETs answered 1" % what)
        before += k
        spread(t, cl.counts(), before, what)
    cl.stop()


@test
def cluster_replies_have_a_redis_clusters_shapes(t):
    rprims, rreps = redis_cluster(t)
    cl = Cluster(t)
    # a write in each seend primary's slots, the replicas caught up
    for p in cl.primaries:
        k = next("k%d" % j for j in range(10000)
                 if cl.owner("k%d" % j) is p)
        t.eq(ask_raw(p, "SETNX", k, "1"), b":1\r\n", "SETNX on %s" % p.name)
    for p, r in zip(cl.primaries, cl.replicas):
        wait_caught_up(t, p, [r])
    t.ok(wait_until(lambda: replicas_listed(cl.primaries[0]), 10),
         "seend lists every primary's replica in CLUSTER SLOTS")
    t.ok(wait_until(lambda: all(b"loading" not in ask_raw(s, "CLUSTER",
                                                          "SHARDS")
                                for s in cl.all()), 10),
         "seend's replicas are online in CLUSTER SHARDS")
    sids = [cl.ids[s.name].encode() for s in cl.all()]
    rids = [x.id for x in rprims + rreps]
    pairs = list(zip(cl.primaries + cl.replicas, rprims + rreps))
    for resp3 in (False, True):
        for node, rnode in (pairs[0], pairs[1], pairs[4]):
            a = RespBytes(node.port, resp3=resp3)
            b = RespBytes(rnode.port, resp3=resp3)
            what = "on %s (RESP%d)" % (node.name, 3 if resp3 else 2)
            for sub in ("SLOTS", "SHARDS", "NODES"):
                same_shape(t, a.cmd("CLUSTER", sub), b.cmd("CLUSTER", sub),
                           sids, rids, "CLUSTER %s %s" % (sub, what),
                           sort=sub == "SHARDS")
            gi = info_fields(a.cmd("CLUSTER", "INFO"))
            ri = info_fields(b.cmd("CLUSTER", "INFO"))
            # Redis counts its bus messages; seend has no bus
            keep = [f for f, _ in ri
                    if not f.startswith("cluster_stats_messages_")]
            t.eq([f for f, _ in gi if not f.startswith(
                "cluster_stats_messages_")], keep,
                "CLUSTER INFO's fields %s" % what)
            gd, rd = dict(gi), dict(ri)
            for f in ("cluster_state", "cluster_slots_assigned",
                      "cluster_slots_ok", "cluster_slots_pfail",
                      "cluster_slots_fail", "cluster_known_nodes",
                      "cluster_size"):
                t.eq(gd.get(f), rd.get(f), "CLUSTER INFO %s %s" % (f, what))
            a.close()
            b.close()
    # what seend says where Redis's contents differ: its own nodes
    want = [[a, b, [b"127.0.0.1", p.port, cl.ids[p.name].encode(), []],
             [b"127.0.0.1", r.port, cl.ids[r.name].encode(), []]]
            for (a, b), p, r in zip(RANGES, cl.primaries, cl.replicas)]
    for s in cl.all():
        t.eq(val(ask_raw(s, "CLUSTER", "SLOTS")), want,
             "CLUSTER SLOTS on %s" % s.name)
    c = cl.primaries[1].client()
    c.send("CLUSTER SLOTS\n")
    t.eq(c.lines_until_end(), ["%d %d 127.0.0.1:%d 127.0.0.1:%d"
                               % (a, b, p.port, r.port)
                               for (a, b), p, r in zip(
                                   RANGES, cl.primaries, cl.replicas)],
         "line CLUSTER SLOTS")
    c.close()
    cl.stop()


@test
def moved_crossslot_and_clusterdown(t):
    cl = Cluster(t, replicas=False)
    url = "https://moved.example/a"
    own, wrong = cl.owner(url), other_primary(cl, url)
    slot = keyslot(url)
    moved = "MOVED %d 127.0.0.1:%d" % (slot, own.port)
    t.eq(ask_raw(wrong, "SETNX", url, "1"), ("-%s\r\n" % moved).encode(),
         "SETNX on a wrong node")
    t.eq(ask_raw(wrong, "GET", url), ("-%s\r\n" % moved).encode(),
         "GET on a wrong node")
    cli = shutil.which("redis-cli")
    t.ok(cli is not None, "redis-cli is installed")
    p = subprocess.run([cli, "-p", str(wrong.port), "SETNX", url, "1"],
                       capture_output=True, text=True, timeout=30 * SLOW)
    t.eq(p.stdout.strip(), moved, "redis-cli without -c")
    p = subprocess.run(["nc", "-N", "127.0.0.1", str(wrong.port)],
                       input=b"SEEN %s\nCHECK %s\nPING\n" % (
                           url.encode(), url.encode()),
                       capture_output=True, timeout=30 * SLOW)
    t.eq(p.stdout.decode(), "ERR %s\r\nERR %s\r\nPONG\r\n" % (moved, moved),
         "nc on the line protocol")
    p = subprocess.run([cli, "-c", "-p", str(wrong.port), "SETNX", url, "1"],
                       capture_output=True, text=True, timeout=30 * SLOW)
    t.eq(p.stdout.strip(), "1", "redis-cli -c follows MOVED: new")
    p = subprocess.run([cli, "-c", "-p", str(wrong.port), "SETNX", url, "1"],
                       capture_output=True, text=True, timeout=30 * SLOW)
    t.eq(p.stdout.strip(), "0", "redis-cli -c: seen")
    t.eq(own.client().cmd("CHECK " + url), "1", "the owner holds it")
    t.eq(wrong.client().info("default")["count"], "0",
         "the wrong node recorded nothing")
    # two keys of two slots, both the node's own: CROSSSLOT
    mine = [k for k in ("a%d" % i for i in range(1000))
            if cl.owner(k) is own]
    k1 = mine[0]
    k2 = next(k for k in mine if keyslot(k) != keyslot(k1))
    t.eq(ask_raw(own, "MGET", k1, k2),
         b"-CROSSSLOT Keys in request don't hash to the same slot\r\n",
         "MGET of two slots")
    t.eq(ask_raw(own, "MGET", "{t}" + k1, "{t}" + k2)[:1], b"*"
         if cl.owner("{t}") is own else b"-", "MGET of one hash tag")
    # a map of a higher epoch leaves the third primary's slots unowned
    cl.push(cl.text(2, RANGES[:2] + [None]))
    lost = next(u for u in urls("down", 1000)
                if keyslot(u) >= RANGES[2][0])
    for s in cl.primaries:
        t.eq(ask_raw(s, "SETNX", lost, "1"),
             b"-CLUSTERDOWN Hash slot not served\r\n",
             "SETNX of an unowned slot on %s" % s.name)
        t.eq(s.client().cmd("SEEN " + lost),
             "ERR CLUSTERDOWN Hash slot not served",
             "line SEEN of an unowned slot on %s" % s.name)
    c = seend.Client("127.0.0.1:%d" % cl.primaries[0].port, cluster=True)
    served = [u for u in urls("served", 1000)
              if keyslot(u) < RANGES[2][0]][:100]
    batch = served[:50] + [lost] + served[50:]
    try:
        c.seen_many(batch)
        raise Failed("the Python client answered a CLUSTERDOWN")
    except seend.Error as e:
        t.contains(str(e), "CLUSTERDOWN", "the Python client's Error")
        t.eq(e.index, 50, "the index of the unserved key")
        t.eq(e.replies[:50] + e.replies[51:], [False] * 100,
             "the other keys were answered")
        t.eq(e.replies[50], None, "no answer for the unserved key")
    c.close()
    cl.stop()


@test
def a_map_pushed_to_one_node_reaches_every_node(t):
    cl = Cluster(t)
    # slots 0-99 move from the first primary to the second
    text = cl.text(2, [[(100, 5460)], [(0, 99), (5461, 10922)], RANGES[2]])
    t.eq(setmap(cl.primaries[2], text), b"+OK\r\n", "SETMAP on one node")
    cl.wait_agree(text)
    key = next(u for u in urls("pushed", 10000) if keyslot(u) < 100)
    t.eq(ask_raw(cl.primaries[0], "SETNX", key, "1"),
         b"-MOVED %d 127.0.0.1:%d\r\n" % (keyslot(key),
                                          cl.primaries[1].port),
         "the first primary redirects a slot it gave away")
    cl.stop()


@test
def epochs_order_maps_and_a_map_must_name_its_node(t):
    cl = Cluster(t, replicas=False)
    p0, p1, p2 = cl.primaries
    cl.push(cl.text(3))
    got = setmap(p0, cl.text(2))
    t.ok(got.startswith(b"-STALEMAP"), "a lower epoch: %r" % got)
    t.eq(getmap(p0), cl.text(3), "the map is kept")
    got = setmap(p1, cl.text(3))
    t.ok(got == b"+OK\r\n" or got.startswith(b"-STALEMAP"),
         "the same map again: %r" % got)
    t.eq(getmap(p1), cl.text(3), "the same map again is kept")
    # two maps of epoch 4: the greater text wins wherever it comes first
    a = cl.text(4, [RANGES[0], (5461, 12000), (12001, 16383)])
    b = cl.text(4, [(0, 4000), (4001, 10922), RANGES[2]])
    win = max(a, b)
    for s, first, second in ((p0, a, b), (p1, b, a)):
        for m in (first, second):
            got = setmap(s, m)
            t.ok(got == b"+OK\r\n" or got.startswith(b"-STALEMAP"),
                 "SETMAP of an epoch-4 map on %s: %r" % (s.name, got))
    cl.wait_agree(win)
    t.eq(getmap(p0), getmap(p1), "both orders end in the same map")
    # a map without the node (the two others own everything)
    others = [map_node(cl.ids[s.name], s.port) for s in (p1, p2)]
    foreign = map_text(9, others, {cl.ids[p1.name]: [(0, 8191)],
                                   cl.ids[p2.name]: [(8192, 16383)]})
    got = setmap(p0, foreign)
    t.ok(got.startswith(b"-ERR map refused:"), "a map without the node: %r"
         % got)
    t.eq(getmap(p0), win, "the node keeps its map")
    got = setmap(p0, "seend-cluster-map 1\nepoch x\n")
    t.ok(got.startswith(b"-ERR map refused:"), "a map that does not parse: "
         "%r" % got)
    cl.stop()


@test
def a_client_at_the_wrong_node_gets_moved_every_time_rss_flat(t):
    cl = Cluster(t, replicas=False)
    wrong = cl.primaries[0]
    keys = [u for u in urls("wrong", n(300000))
            if cl.owner(u) is not wrong][:n(100000)]
    want = {u: b"-MOVED %d 127.0.0.1:%d" % (keyslot(u), cl.owner(u).port)
            for u in keys}
    pipe = Pipe(wrong.port)
    chunk = 10000
    rss = []
    bad = 0
    for i in range(0, len(keys), chunk):
        part = keys[i:i + chunk]
        got = pipe.run(setnx_payload(part), len(part))
        bad += sum(1 for u, g in zip(part, got) if g != want[u])
        rss.append(wrong.rss_kib())
    pipe.close()
    t.eq(bad, 0, "replies other than MOVED to the owner")
    c = wrong.client()
    got = [c.cmd("SEEN " + u) for u in keys[:200]]
    t.eq(got, ["ERR " + want[u][1:].decode() for u in keys[:200]],
         "line SEEN on the wrong node")
    t.eq(c.info("default")["count"], "0", "the wrong node recorded nothing")
    c.close()
    diag("the wrong node's RSS: %r KiB, every %d redirections"
         % (rss, chunk))
    if not WRAPPER and len(rss) > 2:
        t.ok(rss[-1] - rss[0] < 4096, "RSS grew from %d to %d KiB over %d "
             "redirections" % (rss[0], rss[-1], len(keys)))
    cl.stop()


@test
def the_python_client_records_100k_urls_through_one_node(t):
    cl = Cluster(t)
    keys = urls("python", n(100000))
    c = seend.Client("127.0.0.1:%d" % cl.primaries[0].port)
    got = c.seen_many(keys)
    t.ok(c.cluster is not None, "the client follows the cluster")
    t.ok(got.count(True) <= len(keys) // 1000,
         "%d of %d URLs answered seen the first time"
         % (got.count(True), len(keys)))
    spread(t, cl.counts(), len(keys), "the Python client")
    t.eq(sorted(c.cluster.slots().values()), sorted([[r] for r in RANGES]),
         "the client's slot table")
    t.eq(c.seen_many(keys, batch=777), [True] * len(keys), "seen again")
    # a client given a replica's address, the table read up front
    c2 = seend.Client("127.0.0.1:%d" % cl.replicas[1].port, cluster=True)
    t.eq(c2.check_many(keys), [True] * len(keys), "check_many")
    t.eq(c2.cluster.redirections, 0, "no redirection with the table")
    c.close()
    c2.close()
    cl.stop()


if __name__ == "__main__":
    run()
