"""
A cluster of one (issue 33, step 1; INTERFACE.md, "A cluster of nodes"):
with [cluster] enabled = on one seend is a Redis Cluster that owns every
slot, and Redis Cluster clients work against it unchanged.

Checked against real redis-server 7.0.15 processes in cluster mode: a
one-node cluster (CLUSTER ADDSLOTSRANGE 0 16383) and a primary with a
replica (CLUSTER MEET, CLUSTER REPLICATE). CLUSTER KEYSLOT of thousands of
keys (hash tags, empty tags, binary bytes) equals Redis's; CLUSTER SLOTS,
SHARDS, NODES, INFO and MYID have Redis's shapes byte for byte in RESP2
and RESP3 once the contents that must differ (node IDs, ports, the
announced address, timestamps, epochs, replication offsets) are masked;
a seend primary with a seend replica lists them as the Redis pair lists
itself, from either node. The node ID is kept across restarts, and a
damaged ID file stops the start, left as it is. redis-py's RedisCluster
(Debian's 4.3), ioredis' Cluster and node-redis' createCluster record
URLs (each new exactly once) and read them back, redis-py also from the
replica with read_from_replicas. With cluster mode off, CLUSTER answers as
a standalone redis-server does. The line protocol has CLUSTER INFO,
KEYSLOT, MYID and SLOTS.

Step 2, a node given a map (CLUSTER SETMAP; the other nodes named in the
maps here need not exist): SETMAP's refusals (a map that does not parse,
does not name this node, or is older than the one held), the map kept in
data_dir across restarts and a damaged one refused at the start, CLUSTER
SLOTS/SHARDS/NODES/INFO from the map, and requests for keys of slots
this node does not serve answered MOVED, CLUSTERDOWN or CROSSSLOT on both
protocols, pipelines of owned and other keys answered in order, without
memory growing.
"""
import os
import random
import re
import shutil
import subprocess

from seendtest import *
from repltest import FILTERS, primary, replica, wait_caught_up, stop_all
from clustertest import (CLUSTER_ON, RedisNode, cluster_node, map_node,
                         map_text, myid, node_script, replicas_listed)

redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.05
DISABLED = b"-ERR This instance has cluster support disabled\r\n"


def n(x):
    return max(int(x * SCALE), 1)


def info_field(raw, name):
    text = plain(parse_all(raw)).decode()
    m = re.search(r"^%s:(\S*)" % name, text, re.M)
    return m.group(1) if m else None


def redis_one(t):
    """A one-node Redis Cluster owning every slot, state ok."""
    r = RedisNode(t, "redis-one")
    t.eq(r.cmd("CLUSTER", "ADDSLOTSRANGE", "0", "16383"), b"+OK\r\n",
         "ADDSLOTSRANGE")
    t.ok(wait_until(lambda: info_field(r.cmd("CLUSTER", "INFO"),
                                       "cluster_state") == "ok", 20),
         "the one-node Redis Cluster reaches cluster_state:ok")
    return r


def redis_pair(t):
    """A Redis Cluster of one primary (every slot) and its replica, with
    the replica online (it has taken a write, as seend's replicas are
    listed once past their full sync)."""
    p = redis_one(t)
    r = RedisNode(t, "redis-replica")
    r.cmd("CLUSTER", "MEET", "127.0.0.1", str(p.port), str(p.bus))
    t.ok(wait_until(lambda: info_field(r.cmd("CLUSTER", "INFO"),
                                       "cluster_known_nodes") == "2", 20),
         "the Redis replica meets its primary")
    t.ok(wait_until(lambda: r.cmd("CLUSTER", "REPLICATE",
                                  p.id.decode()) == b"+OK\r\n", 20),
         "CLUSTER REPLICATE")
    p.cmd("SET", "k", "1")
    t.ok(wait_until(lambda: val(p.cmd("CLUSTER", "SLOTS"))[0].__len__()
                    == 4, 20), "Redis lists its replica in CLUSTER SLOTS")
    t.ok(wait_until(lambda: b"$7\r\nloading" not in
                    p.cmd("CLUSTER", "SHARDS"), 20),
         "the Redis replica is online in CLUSTER SHARDS")
    return p, r


def mask(v, ids):
    """A parsed reply (parse()) with what must differ masked: node IDs,
    ports, the host ("" for Redis's lone node, 127.0.0.1), timestamps and
    epochs in NODES lines, replication offsets. Types are kept."""
    kind, x = v
    if kind in (b"$", b"="):
        if x is None:
            return v
        if x in (b"", b"127.0.0.1"):
            return (kind, b"<host>")
        for i, nid in enumerate(ids):
            x = x.replace(nid, b"<id>")
        head = b""
        if kind == b"=":
            head, x = x[:4], x[4:]
        # NODES: "<id> <host>:<port>@<bus> flags primary ping pong epoch
        # link [slots]" per line
        lines = []
        for line in x.split(b"\n"):
            f = line.split(b" ")
            if len(f) >= 8 and b"@" in f[1]:
                f[1] = b"<addr>"
                f[5] = b"<pong>"
                f[6] = b"<epoch>"
            lines.append(b" ".join(f))
        if x.startswith(b"<id>"):     # NODES: in no set order
            lines = sorted(lines[:-1]) + lines[-1:]
        return (kind, head + b"\n".join(lines))
    if kind in (b"*", b"~"):
        out = [mask(e, ids) for e in x]
        # RESP2 maps are flat arrays: the offset after its name
        for i in range(len(out) - 1):
            if out[i] == (b"$", b"replication-offset"):
                out[i + 1] = (b":", b"<offset>")
        return (kind, out)
    if kind == b"%":
        return (kind, [(mask(k, ids), (b":", b"<offset>")
                        if k == (b"$", b"replication-offset")
                        else mask(e, ids)) for k, e in x])
    if kind == b":" and int(x) > 1024 and int(x) != 16383:
        return (kind, b"<port>")
    return v


def same_shape(t, got, want, ids_got, ids_want, what):
    g = mask(parse_all(got), ids_got)
    w = mask(parse_all(want), ids_want)
    t.ok(g == w, "%s differs from Redis's:\n  seend %r\n  redis %r\n"
         "  (raw seend %r\n   raw redis %r)" % (what, g, w, got, want))


def keys_for_slots():
    rnd = random.Random(33)
    keys = ["123456789", "", "{", "}", "{}", "{}{}", "a{}b{c}", "{{}}",
            "{a}{b}", "{{a}}", "a{b", "}a{b}", "{user1000}.following",
            "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap",
            "foo{bar}{zap}", "https://example.com/a?b={c}"]
    keys = [k.encode() for k in keys]
    for _ in range(n(3000)):
        shape = rnd.randrange(4)
        if shape == 0:      # URLs
            keys.append(b"https://%s.example/%d/{x%d}"
                        % (rnd.choice([b"a", b"b", b"c"]),
                           rnd.randrange(10 ** 9), rnd.randrange(50)))
        elif shape == 1:    # tags anywhere, empty ones too
            alphabet = b"ab{}{}{}x"
            keys.append(bytes(rnd.choice(alphabet)
                              for _ in range(rnd.randrange(1, 12))))
        elif shape == 2:    # any byte, NUL and CRLF included
            keys.append(bytes(rnd.randrange(256)
                              for _ in range(rnd.randrange(1, 40))))
        else:               # long
            keys.append(b"k" * rnd.randrange(100, 3000))
    return keys


# ---- tests ----

@test
def keyslot_of_thousands_of_keys_is_redis_clusters(t):
    r = redis_one(t)
    with cluster_node(t) as s:
        keys = keys_for_slots()
        a = RespBytes(s.port)
        b = RespBytes(r.port)
        got = a.pipeline([(b"CLUSTER", b"KEYSLOT", k) for k in keys])
        want = b.pipeline([(b"CLUSTER", b"KEYSLOT", k) for k in keys])
        bad = [(k, g, w) for k, g, w in zip(keys, got, want) if g != w]
        t.ok(not bad, "%d of %d keys' slots differ from Redis's; first: %r"
             % (len(bad), len(keys), bad[:3]))
        t.eq(got[0], b":12739\r\n", "KEYSLOT 123456789")
        # the line protocol: keys without blanks
        simple = [k for k in keys[:300] if k and re.fullmatch(rb"[!-~]+", k)]
        for k, w in zip(simple, [want[keys.index(k)] for k in simple]):
            t.eq(a.line("CLUSTER KEYSLOT " + k.decode()), w[1:-2].decode(),
                 "line KEYSLOT %r" % k)
        a.close()
        b.close()


@test
def one_node_replies_have_redis_clusters_shapes(t):
    r = redis_one(t)
    with cluster_node(t) as s:
        sid = myid(s).encode()
        t.ok(re.fullmatch(rb"[0-9a-f]{40}", sid), "MYID is 40 hex: %r" % sid)
        cases = [("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"),
                 ("CLUSTER", "NODES"), ("CLUSTER", "INFO"),
                 ("CLUSTER", "MYID"), ("CLUSTER", "KEYSLOT", "{a}b"),
                 ("CLUSTER", "COUNTKEYSINSLOT", "12"),
                 ("CLUSTER", "GETKEYSINSLOT", "12", "10"),
                 ("CLUSTER", "COUNTKEYSINSLOT", "16384"),
                 ("CLUSTER", "COUNTKEYSINSLOT", "x"),
                 ("CLUSTER", "GETKEYSINSLOT", "1", "-1"),
                 ("CLUSTER", "GETKEYSINSLOT", "1", "x"),
                 ("CLUSTER", "KEYSLOT"), ("CLUSTER", "INFO", "x"),
                 ("CLUSTER", "FOO"), ("CLUSTER",),
                 ("ASKING",), ("READONLY",), ("READWRITE",),
                 ("INFO", "cluster")]
        for resp3 in (False, True):
            a = RespBytes(s.port, resp3=resp3)
            b = RespBytes(r.port, resp3=resp3)
            for c in cases:
                same_shape(t, a.cmd(*c), b.cmd(*c), [sid], [r.id],
                           "%s (RESP%d)" % (" ".join(c), 3 if resp3 else 2))
            # HELLO's mode, INFO's redis_mode
            hs, hr = (val(x.cmd("HELLO", "3" if resp3 else "2"))
                      for x in (a, b))
            t.eq(dict(hs)[b"mode"] if resp3 else hs[hs.index(b"mode") + 1],
                 b"cluster", "HELLO's mode")
            t.eq(info_field(a.cmd("INFO", "server"), "redis_mode"),
                 "cluster", "INFO's redis_mode")
            a.close()
            b.close()
        # what seend says where Redis's contents differ: its own address
        slots = val(RespBytes(s.port).cmd("CLUSTER", "SLOTS"))
        t.eq(slots, [[0, 16383, [b"127.0.0.1", s.port, sid, []]]],
             "CLUSTER SLOTS names seend's own address")


@test
def a_seend_pair_lists_itself_as_a_redis_primary_and_replica_do(t):
    rp, rr = redis_pair(t)
    p = primary(t, "p", CLUSTER_ON)
    r = replica(t, p, "r", CLUSTER_ON)
    c = RespBytes(p.port)
    t.eq(c.cmd("SETNX", "https://a.example/1", "1"), b":1\r\n", "SETNX")
    t.ok(wait_until(lambda: replicas_listed(p), 10 * SLOW),
         "the seend primary lists its replica")
    wait_caught_up(t, p, [r])
    pid, rid = myid(p).encode(), myid(r).encode()
    t.ok(pid != rid, "two nodes, two IDs")
    for resp3 in (False, True):
        for node, redis_node in ((p, rp), (r, rr)):
            a = RespBytes(node.port, resp3=resp3)
            b = RespBytes(redis_node.port, resp3=resp3)
            for sub in ("SLOTS", "SHARDS", "NODES"):
                same_shape(t, a.cmd("CLUSTER", sub), b.cmd("CLUSTER", sub),
                           [pid, rid], [rp.id, rr.id],
                           "CLUSTER %s on the %s (RESP%d)"
                           % (sub, node.name, 3 if resp3 else 2))
            for f in ("cluster_state", "cluster_known_nodes",
                      "cluster_size", "cluster_slots_ok"):
                t.eq(info_field(a.cmd("CLUSTER", "INFO"), f),
                     info_field(b.cmd("CLUSTER", "INFO"), f),
                     "CLUSTER INFO %s on the %s" % (f, node.name))
            a.close()
            b.close()
    # the replica names its primary as the owner and itself under it
    slots = val(RespBytes(r.port).cmd("CLUSTER", "SLOTS"))
    t.eq(slots, [[0, 16383, [b"127.0.0.1", p.port, pid, []],
                  [b"127.0.0.1", r.port, rid, []]]],
         "the replica's CLUSTER SLOTS")
    # a client's READONLY read on the replica
    rc = RespBytes(r.port)
    t.eq(rc.cmd("READONLY"), b"+OK\r\n", "READONLY")
    t.eq(rc.cmd("GET", "https://a.example/1"), b"$1\r\n1\r\n",
         "GET on the replica")
    t.ok(rc.cmd("SETNX", "https://a.example/2", "1").startswith(b"-"),
         "a write on the replica is refused")
    stop_all(t, r, p)


@test
def announce_names_the_node_and_its_replica_where_clients_reach_them(t):
    port = free_port()
    p = cluster_node(t, "p", cluster="announce = 127.0.0.7:%d\n" % port,
                     port=port)
    r = replica(t, p, "r", CLUSTER_ON + "announce = 127.0.0.9:5555\n")
    c = RespBytes(p.port)
    t.ok(wait_until(lambda: replicas_listed(p), 10 * SLOW),
         "the primary lists its replica")
    pid, rid = myid(p).encode(), myid(r).encode()
    t.eq(val(c.cmd("CLUSTER", "SLOTS")),
         [[0, 16383, [b"127.0.0.7", p.port, pid, []],
           [b"127.0.0.9", 5555, rid, []]]],
         "the primary's CLUSTER SLOTS: both at their announce")
    t.contains(c.cmd("INFO", "replication"), b"ip=127.0.0.9,port=5555",
               "INFO names the replica as Redis's replica-announce-ip does")
    # the replica knows its primary by its replicaof address
    t.eq(val(RespBytes(r.port).cmd("CLUSTER", "SLOTS")),
         [[0, 16383, [b"127.0.0.1", p.port, pid, []],
           [b"127.0.0.9", 5555, rid, []]]], "the replica's CLUSTER SLOTS")
    stop_all(t, r, p)


@test
def the_node_id_is_kept_across_restarts_and_a_damaged_one_refused(t):
    s = cluster_node(t)
    first = myid(s).encode()
    path = os.path.join(s.data_dir, "cluster-node-id")
    with open(path, "rb") as f:
        t.eq(f.read(), first + b"\n", "data_dir/cluster-node-id")
    t.eq(s.stop(), 0, "exit status")
    s.start()
    t.eq(myid(s).encode(), first, "the ID after a restart")
    s.kill9()
    s.start()
    t.eq(myid(s).encode(), first, "the ID after kill -9")
    t.eq(s.stop(), 0, "exit status")
    with open(path, "wb") as f:
        f.write(b"not a node id\n")
    t.ok(s.start(expect_fail=True) != 0, "a damaged ID file stops the start")
    t.contains(s.read_log(), "holds no cluster node ID", "the log says why")
    with open(path, "rb") as f:
        t.eq(f.read(), b"not a node id\n", "the file is left as it was")
    # cluster mode off: the file is not needed, nor read
    s.write_config("", FILTERS)
    s.start()
    t.eq(s.stop(), 0, "exit status")


@test
def cluster_off_answers_as_a_standalone_redis_server(t):
    r = RedisServer(t)
    with Server(t, filters=FILTERS, unix=False) as s:
        cases = [("CLUSTER", "INFO"), ("CLUSTER", "SLOTS"),
                 ("CLUSTER", "SHARDS"), ("CLUSTER", "NODES"),
                 ("CLUSTER", "MYID"), ("CLUSTER", "KEYSLOT", "a"),
                 ("CLUSTER", "HELP"), ("CLUSTER", "MEET", "a", "1"),
                 ("CLUSTER", "KEYSLOT"), ("CLUSTER", "FOO"), ("CLUSTER",),
                 ("CLUSTER", "INFO", "x"), ("ASKING",), ("INFO", "cluster")]
        got, want = side_by_side(t, s.port, r.port, [list(c) for c in cases],
                                 "cluster off")
        t.eq(got[0], DISABLED, "CLUSTER INFO")
        c = RespBytes(s.port)
        t.contains(c.cmd("HELLO", "2"), b"standalone", "HELLO's mode")
        t.eq(c.line("CLUSTER INFO"), "ERR This instance has cluster support "
             "disabled", "the line protocol")
        t.ok(not os.path.exists(os.path.join(s.data_dir, "cluster-node-id")),
             "no node ID is made")


@test
def line_protocol_cluster_info_keyslot_myid(t):
    with cluster_node(t) as s:
        c = s.client()
        t.eq(c.cmd("CLUSTER MYID"), myid(s), "CLUSTER MYID")
        t.eq(c.cmd("CLUSTER KEYSLOT 123456789"), "12739", "KEYSLOT")
        t.eq(c.cmd("CLUSTER KEYSLOT {user1000}.following"), "3443",
             "KEYSLOT with a tag")
        c.send(b"CLUSTER INFO\n")
        lines = c.lines_until_end()
        t.ok("cluster_state ok" in lines and "cluster_known_nodes 1" in lines
             and "cluster_size 1" in lines,
             "CLUSTER INFO's name value lines: %r" % lines)
        c.send(b"CLUSTER SLOTS\n")
        t.eq(c.lines_until_end(), ["0 16383 127.0.0.1:%d" % s.port],
             "line CLUSTER SLOTS without a map: this node owns all")
        c.close()


@test
def redis_py_cluster_records_300k_urls_each_new_once(t):
    from redis.cluster import RedisCluster
    p = primary(t, "p", CLUSTER_ON)
    r = replica(t, p, "r", CLUSTER_ON)
    t.ok(wait_until(lambda: replicas_listed(p), 10 * SLOW),
         "the replica is listed")
    rc = RedisCluster(host="127.0.0.1", port=p.port)
    names = sorted(x.name for x in rc.get_nodes())
    t.eq(names, sorted(["127.0.0.1:%d" % p.port, "127.0.0.1:%d" % r.port]),
         "redis-py's nodes")
    # no hash tag: a config filter's part of a slot is sized for 1/16384
    # of its capacity, so URLs tagged alike would fill one slot's part
    # (README: do not tag the URLs of a config filter)
    urls = ["https://py.example/%d/p" % i for i in range(n(300000))]
    new = again = 0
    for i in range(0, len(urls), 10000):
        pipe = rc.pipeline()
        for u in urls[i:i + 10000]:
            pipe.setnx(u, 1)
        new += sum(1 for x in pipe.execute() if x)
    for i in range(0, len(urls), 10000):
        pipe = rc.pipeline()
        for u in urls[i:i + 10000]:
            pipe.setnx(u, 1)
        again += sum(1 for x in pipe.execute() if x)
    # a Bloom filter may call a new URL seen (error_rate 0.001, far from
    # full here); never a seen one new
    t.ok(len(urls) - new <= len(urls) // 1000,
         "%d of %d URLs answered new the first time" % (new, len(urls)))
    t.eq(again, 0, "URLs answered new a second time")
    got = [rc.get(u) for u in urls[:2000]]
    t.eq(set(got), {b"1"}, "GET reads them back")
    wait_caught_up(t, p, [r])
    ro = RedisCluster(host="127.0.0.1", port=p.port, read_from_replicas=True)
    got = [ro.get(u) for u in urls[:2000]]
    t.eq(set(got), {b"1"}, "GET with read_from_replicas")
    rc.close()
    ro.close()
    stop_all(t, r, p)


@test
def ioredis_cluster_and_node_redis_create_cluster_record_urls(t):
    with cluster_node(t) as s:
        k = n(20000)
        for client, resp in (("ioredis", 2), ("node-redis", 2),
                             ("node-redis", 3)):
            out = node_script(t, "cluster.mjs", {
                "client": client, "resp": resp, "port": s.port, "n": k,
                "prefix": "%s-%d" % (client, resp)}, 60)
            t.ok(k - out["first"] <= k // 1000, "%s RESP%d: %r new of %d"
                 % (client, resp, out["first"], k))
            t.eq(out["again"], 0, "%s RESP%d: answered new again"
                 % (client, resp))
            t.eq(out["got"], k, "%s RESP%d: GETs answered 1"
                 % (client, resp))


# ---- step 2: a node given a map ----

OTHER = "b" * 40        # a node named in the maps that need not exist
OTHER_REPLICA = "c" * 40


def half_map(s, me, epoch=5, last_other=16383):
    """me owns 0-8191, OTHER (127.0.0.2:7001, a replica 127.0.0.3:7002)
    8192-last_other: the map's text as bytes."""
    return map_text(epoch, [map_node(me, s.port),
                            map_node(OTHER, 7001, tls_port=7101,
                                     host="127.0.0.2"),
                            map_node(OTHER_REPLICA, 7002, OTHER,
                                     host="127.0.0.3")],
                    {me: [(0, 8191)], OTHER: [(8192, last_other)]}).encode()


def keys_in(c, pred, prefix, count=1):
    """count keys (bytes) whose slot satisfies pred."""
    out = []
    i = 0
    while len(out) < count:
        k = b"%s-%d" % (prefix, i)
        if pred(int(c.cmd("CLUSTER", "KEYSLOT", k)[1:-2])):
            out.append(k)
        i += 1
    return out


@test
def a_map_of_many_nodes_passes_max_line(t):
    # 800 nodes: about 50 KB of map, past max_line (its argument may take
    # as much as a dump's chunk); more than 1 MiB is refused by the map's
    # own bound, and the connection goes on
    s = cluster_node(t, server="max_line = 16384\n")
    me = myid(s)
    nodes = [map_node(me, s.port)]
    nodes += [map_node("%040x" % (i + 1), 1 + i) for i in range(799)]
    m = map_text(9, nodes, {me: [(0, 16383)]}).encode()
    t.ok(len(m) > 3 * 16384, "the map is %d bytes" % len(m))
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "taken")
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$%d\r\n%s\r\n" % (len(m), m),
         "held whole")
    huge = m + b"x" * (1 << 20)
    got = c.cmd("CLUSTER", "SETMAP", huge)
    t.ok(got.startswith(b"-ERR map refused"), "over 1 MiB: %r" % got[:80])
    t.eq(c.cmd("PING"), b"+PONG\r\n", "the connection goes on")
    # the exemption is SETMAP's map only: another argument that long
    got = c.cmd("CLUSTER", "KEYSLOT", b"k" * 20000)
    t.ok(got.startswith(b"-ERR Protocol error"), "a long key: %r" % got[:80])
    c.close()


@test
def setmap_refusals_getmap_and_the_map_kept_across_restarts(t):
    s = cluster_node(t)
    me = myid(s)
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$-1\r\n", "GETMAP without a map")
    c3 = RespBytes(s.port, resp3=True)
    t.eq(c3.cmd("CLUSTER", "GETMAP"), b"_\r\n", "GETMAP without a map, RESP3")
    c3.close()
    t.eq(c.cmd("CLUSTER", "SETMAP"), b"-ERR wrong number of arguments for "
         b"'cluster|setmap' command\r\n", "SETMAP's arity")
    got = c.cmd("CLUSTER", "SETMAP", "seend-cluster-map 1\nepoch x\n")
    t.ok(got.startswith(b"-ERR map refused: line 2: "), "a map that does not "
         "parse: %r" % got)
    m = half_map(s, me)
    foreign = m.replace(me.encode(), b"d" * 40)
    t.eq(c.cmd("CLUSTER", "SETMAP", foreign), b"-ERR map refused: it does "
         b"not name this node %s\r\n" % me.encode(), "a map without this node")
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$-1\r\n", "refused maps are not held")
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "a map taken")
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$%d\r\n%s\r\n" % (len(m), m),
         "GETMAP: the canonical text")
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "the same map again")
    t.eq(c.cmd("CLUSTER", "SETMAP", half_map(s, me, epoch=4)),
         b"-STALEMAP this node holds a newer map (epoch 5)\r\n", "an older map")
    path = os.path.join(s.data_dir, "cluster-map")
    with open(path, "rb") as f:
        t.eq(f.read(), m, "data_dir/cluster-map")
    t.ok(wait_until(lambda: "cluster: map epoch 5 taken (from 127.0.0.1:"
                    in s.read_log()), "the log says it was taken")
    c.close()
    t.eq(s.stop(), 0, "exit status")
    s.start()
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$%d\r\n%s\r\n" % (len(m), m),
         "the map after a restart")
    t.contains(c.cmd("CLUSTER", "INFO"), b"cluster_my_epoch:5\r\n",
               "its epoch after a restart")
    c.close()
    # SIGHUP does not touch it
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: "reload" in s.read_log()), "reloaded")
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$%d\r\n%s\r\n" % (len(m), m),
         "the map after SIGHUP")
    c.close()
    s.kill9()
    s.start()
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$%d\r\n%s\r\n" % (len(m), m),
         "the map after kill -9")
    m6 = half_map(s, me, epoch=6, last_other=16000)
    t.eq(c.cmd("CLUSTER", "SETMAP", m6), b"+OK\r\n", "a newer map")
    c.close()
    t.eq(s.stop(), 0, "exit status")
    with open(path, "rb") as f:
        t.eq(f.read(), m6, "the newer map kept")
    # a damaged map, and one of another node, stop the start
    with open(path, "wb") as f:
        f.write(m6[:-20])
    t.ok(s.start(expect_fail=True) != 0, "a damaged map stops the start")
    t.contains(s.read_log(), "cluster-map cannot be used", "the log says why")
    with open(path, "wb") as f:
        f.write(foreign)
    t.ok(s.start(expect_fail=True) != 0,
         "a map that does not name this node stops the start")
    t.contains(s.read_log(), "does not name this node %s" % me,
               "the log says why")
    os.unlink(path)
    s.start()
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$-1\r\n", "no map: a cluster of one")
    c.close()
    t.eq(s.stop(), 0, "exit status")
    # cluster mode off: SETMAP and GETMAP answer as any CLUSTER does
    s.write_config("", FILTERS)
    s.start()
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "SETMAP", m), DISABLED, "SETMAP, cluster mode off")
    t.eq(c.cmd("CLUSTER", "GETMAP"), DISABLED, "GETMAP, cluster mode off")
    c.close()
    t.eq(s.stop(), 0, "exit status")


@test
def replies_come_from_the_map(t):
    with cluster_node(t) as s:
        me = myid(s)
        c = Resp(s.port)
        m = half_map(s, me, epoch=7, last_other=16000)
        t.eq(c.cmd("CLUSTER", "SETMAP", m), "OK", "SETMAP")
        mine = [b"127.0.0.1", s.port, me.encode(), []]
        other = [b"127.0.0.2", 7001, OTHER.encode(), []]
        rep = [b"127.0.0.3", 7002, OTHER_REPLICA.encode(), []]
        t.eq(c.cmd("CLUSTER", "SLOTS"),
             [[0, 8191, mine], [8192, 16000, other, rep]], "CLUSTER SLOTS")
        shards = c.cmd("CLUSTER", "SHARDS")
        t.eq(len(shards), 2, "two shards: %r" % shards)
        byid = {sh[3][0][1]: sh for sh in shards}
        t.eq(byid[me.encode()][1], [0, 8191], "this node's slots")
        t.eq(byid[OTHER.encode()][1], [8192, 16000], "the other's slots")
        t.eq([n[1] for n in byid[OTHER.encode()][3]],
             [OTHER.encode(), OTHER_REPLICA.encode()], "the other's nodes")
        t.eq(byid[OTHER.encode()][3][1][9], b"replica", "its replica's role")
        nodes = c.cmd("CLUSTER", "NODES").decode().splitlines()
        t.eq(sorted(nodes), sorted([
            "%s 127.0.0.1:%d@0 myself,master - 0 0 7 connected 0-8191"
            % (me, s.port),
            "%s 127.0.0.2:7001@0 master - 0 0 7 connected 8192-16000"
            % OTHER,
            "%s 127.0.0.3:7002@0 slave %s 0 0 7 connected"
            % (OTHER_REPLICA, OTHER)]), "CLUSTER NODES")
        info = c.cmd("CLUSTER", "INFO").decode()
        for f in ("cluster_state:fail", "cluster_slots_assigned:16001",
                  "cluster_slots_ok:16001", "cluster_known_nodes:3",
                  "cluster_size:2", "cluster_current_epoch:7",
                  "cluster_my_epoch:7"):
            t.contains(info, f + "\r\n", "CLUSTER INFO")
        l = s.client()
        l.send(b"CLUSTER SLOTS\n")
        t.eq(l.lines_until_end(), ["0 8191 127.0.0.1:%d" % s.port,
                                   "8192 16000 127.0.0.2:7001 127.0.0.3:7002"],
             "line CLUSTER SLOTS")
        l.send(b"CLUSTER INFO\n")
        t.ok("cluster_state fail" in l.lines_until_end(), "line CLUSTER INFO")
        # the two other nodes do not exist: they never get it
        t.ok(wait_until(lambda: b"cluster_peers_behind:2\r\n" in
                        c.cmd("INFO", "stats")),
             "INFO stats: two nodes behind: %r" % c.cmd("INFO", "stats"))
        # every slot owned: ok
        t.eq(c.cmd("CLUSTER", "SETMAP", half_map(s, me, epoch=8)), "OK",
             "SETMAP")
        t.contains(c.cmd("CLUSTER", "INFO").decode(), "cluster_state:ok\r\n",
                   "CLUSTER INFO with every slot owned")
        l.close()
        c.close()


@test
def keys_of_other_slots_are_redirected_on_both_protocols(t):
    with cluster_node(t) as s:
        me = myid(s)
        c = RespBytes(s.port)
        t.eq(c.cmd("CLUSTER", "SETMAP", half_map(s, me, last_other=16382)),
             b"+OK\r\n", "SETMAP")
        mine = keys_in(c, lambda x: x < 8192, b"https://a.example", 3)
        other = keys_in(c, lambda x: 8192 <= x < 16383, b"https://b.example",
                        3)
        nobody = keys_in(c, lambda x: x == 16383, b"https://c.example")[0]
        slot = int(c.cmd("CLUSTER", "KEYSLOT", other[0])[1:-2])
        moved = b"MOVED %d 127.0.0.2:7001" % slot
        t.eq(c.cmd("SETNX", mine[0], "1"), b":1\r\n", "an owned key is served")
        t.eq(c.cmd("SETNX", other[0], "1"), b"-%s\r\n" % moved, "SETNX: MOVED")
        t.eq(c.cmd("GET", other[0]), b"-%s\r\n" % moved, "GET: MOVED")
        t.eq(c.cmd("EXISTS", nobody), b"-CLUSTERDOWN Hash slot not served\r\n",
             "a slot nobody owns")
        t.eq(c.cmd("MGET", mine[0], other[0]), b"-CROSSSLOT Keys in request "
             b"don't hash to the same slot\r\n", "keys of two slots")
        t.eq(c.cmd("MGET", b"{x}a", b"{x}b"), c.cmd("MGET", b"{x}b", b"{x}a"),
             "a hash tag puts keys in one slot")
        # a filter's name is its key
        fname = keys_in(c, lambda x: 8192 <= x < 16383, b"f")[0]
        fslot = int(c.cmd("CLUSTER", "KEYSLOT", fname)[1:-2])
        t.eq(c.cmd("SADD", fname, mine[0]), b"-MOVED %d 127.0.0.2:7001\r\n"
             % fslot, "SADD: its filter's name is the key")
        t.eq(c.cmd("BF.ADD", fname, mine[0]), b"-MOVED %d 127.0.0.2:7001\r\n"
             % fslot, "BF.ADD")
        t.eq(c.cmd("KEYS", "*").startswith(b"*"), True, "KEYS has no key")
        # MULTI: a redirected command aborts EXEC, as Redis's
        t.eq(c.cmd("MULTI"), b"+OK\r\n", "MULTI")
        t.eq(c.cmd("SETNX", other[1], "1")[:7], b"-MOVED ", "MOVED in MULTI")
        t.eq(c.cmd("EXEC")[:10], b"-EXECABORT", "EXEC aborted")
        # the line protocol
        l = s.client()
        t.eq(l.cmd("SEEN " + mine[1].decode()), "0", "line SEEN, owned")
        t.eq(l.cmd("SEEN " + other[0].decode()), "ERR " + moved.decode(),
             "line SEEN: ERR MOVED")
        t.eq(l.cmd("CHECK default " + other[0].decode()),
             "ERR " + moved.decode(), "line CHECK <filter> <key>: the URL")
        t.eq(l.cmd("CHECK " + nobody.decode()),
             "ERR CLUSTERDOWN Hash slot not served", "line CLUSTERDOWN")
        # redis-cli
        cli = shutil.which("redis-cli")
        t.ok(cli is not None, "redis-cli is installed")
        out = subprocess.run([cli, "-p", str(s.port), "SETNX", other[2], "1"],
                             capture_output=True, timeout=30 * SLOW)
        t.contains(out.stdout, b"MOVED %d 127.0.0.2:7001" % int(
            c.cmd("CLUSTER", "KEYSLOT", other[2])[1:-2]), "redis-cli")
        # pipelines of owned and other keys, answered in order, the owned
        # ones recorded once
        rnd = random.Random(2)
        keys = [rnd.choice([mine, other])[rnd.randrange(3)] + b"/%d" % i
                for i in range(2000)]
        slots = [int(x[1:-2]) for x in c.pipeline(
            [(b"CLUSTER", b"KEYSLOT", k) for k in keys])]
        want = [b":1\r\n" if sl < 8192 else b"-MOVED %d 127.0.0.2:7001\r\n"
                % sl if sl < 16383 else b"-CLUSTERDOWN Hash slot not served\r\n"
                for sl in slots]
        t.eq(c.pipeline([(b"SETNX", k, b"1") for k in keys]), want,
             "a SETNX pipeline of owned and other keys")
        want = [b":0\r\n" if w == b":1\r\n" else w for w in want]
        t.eq(c.pipeline([(b"SETNX", k, b"1") for k in keys]), want,
             "again: the owned ones seen")
        lwant = [b"1" if w == b":0\r\n" else b"ERR " + w[1:-2] for w in want]
        l.send(b"".join(b"SEEN %s\n" % k for k in keys))
        got = [l.line().encode() for _ in keys]
        t.eq(got, lwant, "a line SEEN pipeline of owned and other keys")
        fmine = keys_in(c, lambda x: x < 8192, b"f")[0]
        t.eq(c.cmd("BF.RESERVE", fmine, "0.01", "1000"), b"+OK\r\n",
             "a filter of an owned slot")
        sadds = []
        for i in range(300):
            sadds.append((b"SADD", fmine if i % 3 else fname, b"u%d" % i))
        got = c.pipeline(sadds)
        t.eq(got, [b":1\r\n" if i % 3 else b"-MOVED %d 127.0.0.2:7001\r\n"
                   % fslot for i in range(300)], "an SADD pipeline")
        info = c.cmd("INFO", "stats")
        t.ok(re.search(rb"cluster_redirections[: ](\d+)", info) is not None,
             "INFO stats counts redirections: %r" % info[-300:])
        l.close()
        c.close()


@test
def a_replica_in_the_map_serves_reads_after_readonly(t):
    with cluster_node(t) as s:
        me = myid(s)
        c = RespBytes(s.port)
        m = map_text(3, [map_node(me, s.port, OTHER),
                         map_node(OTHER, 7001, tls_port=7101,
                                  host="127.0.0.2")],
                     {OTHER: [(0, 16383)]})
        t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "SETMAP")
        k = b"https://r.example/1"
        slot = int(c.cmd("CLUSTER", "KEYSLOT", k)[1:-2])
        moved = b"-MOVED %d 127.0.0.2:7001\r\n" % slot
        t.eq(c.cmd("GET", k), moved, "a read without READONLY: MOVED")
        t.eq(c.cmd("READONLY"), b"+OK\r\n", "READONLY")
        t.eq(c.cmd("GET", k), b"$-1\r\n", "a read after READONLY: served")
        t.eq(c.cmd("EXISTS", k), b":0\r\n", "EXISTS after READONLY")
        t.eq(c.cmd("SETNX", k, "1"), moved, "a write: MOVED still")
        t.eq(c.cmd("READWRITE"), b"+OK\r\n", "READWRITE")
        t.eq(c.cmd("GET", k), moved, "a read after READWRITE: MOVED")
        c.close()


@test
def setmap_needs_admin_and_dangerous_as_redis_cluster_admin_commands(t):
    users = t.path("users.acl")
    with open(users, "w") as f:
        f.write("user default on nopass ~* &* +@all\n"
                "user ops on >opspass ~* &* +@all -@dangerous\n"
                "user admin on >adminpass ~* &* +@admin\n")
    s = cluster_node(t, server="users_file = %s\n" % users)
    me = myid(s)
    m = half_map(s, me)
    c = RespBytes(s.port)
    t.eq(c.cmd("AUTH", "ops", "opspass"), b"+OK\r\n", "AUTH ops")
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"-NOPERM this user has no "
         b"permissions to run the 'cluster|setmap' command\r\n",
         "SETMAP is @dangerous")
    t.eq(c.cmd("CLUSTER", "GETMAP"), b"$-1\r\n", "GETMAP is not")
    t.eq(c.cmd("AUTH", "admin", "adminpass"), b"+OK\r\n", "AUTH admin")
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "SETMAP is @admin")
    c.close()
    t.eq(s.stop(), 0, "exit status")


@test
def a_client_on_the_tls_port_is_told_tls_ports(t):
    import ssl
    from tlspki import pki
    p = pki(t)
    s = cluster_node(t, tls=p)
    tport = s.tport
    me = myid(s)
    m = map_text(9, [map_node(me, s.port, tls_port=tport),
                     map_node(OTHER, 7001, tls_port=7101, host="127.0.0.2"),
                     map_node(OTHER_REPLICA, 7002, OTHER, host="127.0.0.3")],
                 {me: [(0, 8191)], OTHER: [(8192, 16383)]})
    c = RespBytes(s.port)
    t.eq(c.cmd("CLUSTER", "SETMAP", m), b"+OK\r\n", "SETMAP")
    k = keys_in(c, lambda x: x >= 8192, b"https://t.example")[0]
    slot = int(c.cmd("CLUSTER", "KEYSLOT", k)[1:-2])
    t.eq(c.cmd("SETNX", k, "1"), b"-MOVED %d 127.0.0.2:7001\r\n" % slot,
         "plain TCP: the port")
    plain_slots = c.cmd("CLUSTER", "SLOTS")
    c.close()
    ctx = ssl.create_default_context(cafile=p.ca)
    ctx.check_hostname = False
    raw = socket.create_connection(("127.0.0.1", tport), 10 * SLOW)
    x = ctx.wrap_socket(raw)

    def ask(data, end):
        x.sendall(data)
        got = b""
        while not got.endswith(end):
            b = x.recv(65536)
            if not b:
                break
            got += b
        return got
    t.eq(ask(enc(b"SETNX", k, b"1"), b"\r\n"),
         b"-MOVED %d 127.0.0.2:7101\r\n" % slot, "TLS: the TLS port")
    want = plain_slots.replace(b":%d\r\n" % s.port, b":%d\r\n" % tport)
    want = want.replace(b":7001\r\n", b":7101\r\n")
    t.eq(ask(enc(b"CLUSTER", b"SLOTS"), want[-20:]), want,
         "TLS: CLUSTER SLOTS names TLS ports, the port where none")
    t.eq(ask(b"SEEN %s\r\n" % k, b"\r\n"),
         b"ERR MOVED %d 127.0.0.2:7101\r\n" % slot, "TLS, line protocol")
    x.close()
    t.eq(s.stop(), 0, "exit status")


@test
def a_cluster_of_one_tells_tls_clients_its_tls_port(t):
    # no map: a TLS client is told tls_listen's port (or tls_announce), so
    # that a Redis Cluster client over TLS reaches the node it was given
    import ssl
    from redis.cluster import RedisCluster
    from tlspki import pki
    p = pki(t)
    s = cluster_node(t, tls=p)
    ctx = ssl.create_default_context(cafile=p.ca)
    ctx.check_hostname = False

    def slots_over_tls(s):
        x = ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.tport),
                                                     10 * SLOW))
        x.sendall(enc(b"CLUSTER", b"SLOTS"))
        got = b""
        while got.count(b"\r\n") < 7:
            b = x.recv(65536)
            if not b:
                break
            got += b
        x.close()
        return got
    plain = RespBytes(s.port).cmd("CLUSTER", "SLOTS")
    t.contains(plain, b":%d\r\n" % s.port, "plain TCP: the port")
    over_tls = slots_over_tls(s)
    t.eq(over_tls, plain.replace(b":%d\r\n" % s.port, b":%d\r\n" % s.tport),
         "TLS: the TLS port, all else the same")
    rc = RedisCluster(host="127.0.0.1", port=s.tport, ssl=True,
                      ssl_ca_certs=p.ca, ssl_cert_reqs="required",
                      ssl_check_hostname=False, socket_timeout=10 * SLOW)
    urls = ["https://tls-one.example/%d" % i for i in range(300)]
    t.eq([rc.setnx(u, 1) for u in urls], [True] * 300,
         "redis-py RedisCluster over TLS records")
    t.eq([rc.exists(u) for u in urls[:50]], [1] * 50, "and reads them back")
    rc.close()
    t.eq(s.stop(), 0, "exit status")
    # tls_announce: what TLS clients are told, as announce for the others
    aport = free_port()
    s = cluster_node(t, "s2", cluster="tls_announce = 127.0.0.9:%d\n" % aport,
                     tls=p)
    plain = RespBytes(s.port).cmd("CLUSTER", "SLOTS")
    t.eq(slots_over_tls(s), plain.replace(
        b"$9\r\n127.0.0.1\r\n:%d\r\n" % s.port,
        b"$9\r\n127.0.0.9\r\n:%d\r\n" % aport), "tls_announce")
    t.eq(s.stop(), 0, "exit status")


@test
def memory_stays_flat_while_a_client_is_moved_100k_times(t):
    with cluster_node(t) as s:
        me = myid(s)
        c = RespBytes(s.port)
        t.eq(c.cmd("CLUSTER", "SETMAP", half_map(s, me)), b"+OK\r\n", "SETMAP")
        other = keys_in(c, lambda x: x >= 8192, b"https://m.example", 50)
        batch = b"".join(enc(b"SETNX", k, b"1") for k in other) + b"".join(
            b"SEEN %s\r\n" % k for k in other)
        total = n(100000)
        rounds = max(total // (2 * len(other)), 1)
        rss = []
        for i in range(rounds):
            c.s.sendall(batch)
            for _ in range(len(other)):
                got = c.reply()
                if not got.startswith(b"-MOVED "):
                    raise Failed("not MOVED: %r" % got)
            for _ in range(len(other)):
                got = c._line()
                if not got.startswith(b"ERR MOVED "):
                    raise Failed("not ERR MOVED: %r" % got)
            if i == rounds // 10:
                rss.append(s.rss_kib())
        rss.append(s.rss_kib())
        t.ok(rss[-1] - rss[0] < 2048, "RSS %r KiB" % rss)
        info = c.cmd("INFO", "stats")
        t.contains(info, b"cluster_redirections:%d" % (rounds * 2 * len(other)),
                   "every one counted")
        c.close()


if __name__ == "__main__":
    run()
