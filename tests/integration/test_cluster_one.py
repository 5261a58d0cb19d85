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
KEYSLOT and MYID.
"""
import json
import os
import random
import re
import shutil
import subprocess

from seendtest import *
from repltest import FILTERS, primary, replica, wait_caught_up, stop_all

redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.05
CLUSTER_ON = "[cluster]\nenabled = on\n"
DISABLED = b"-ERR This instance has cluster support disabled\r\n"
NODE_DIR = os.path.join(SRCDIR, "tests", "node")


def n(x):
    return max(int(x * SCALE), 1)


class RedisNode:
    """A redis-server in cluster mode in its own directory under t's."""

    def __init__(self, t, name):
        exe = shutil.which("redis-server")
        t.ok(exe is not None, "redis-server is installed")
        self.port = free_port()
        # the bus port is port + 10000 unless given: past 65535 for
        # an ephemeral port
        self.bus = bus = free_port()
        d = t.path(name)
        os.makedirs(d, exist_ok=True)
        self.log = open(os.path.join(d, "log"), "w")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-port", str(bus),
             "--cluster-config-file",
             "nodes.conf", "--dir", d, "--save", "", "--appendonly", "no",
             "--daemonize", "no"],
            stdout=self.log, stderr=subprocess.STDOUT)
        t.servers.append(self)
        t.ok(wait_until(lambda: self.ping(), 10), "redis-server %s answers"
             % name)
        self.id = self.cmd("CLUSTER", "MYID").split(b"\r\n")[1]

    def ping(self):
        try:
            return self.cmd("PING") == b"+PONG\r\n"
        except OSError:
            return False

    def cmd(self, *words):
        c = RespBytes(self.port, timeout=5)
        try:
            return c.cmd(*words)
        finally:
            c.close()


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


def seend_one(t, name="s", extra=""):
    return Server(t, CLUSTER_ON + extra, filters=FILTERS, unix=False,
                  name=name).start()


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
    with seend_one(t) as s:
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
    with seend_one(t) as s:
        sid = RespBytes(s.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1]
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
    t.ok(wait_until(lambda: len(val(c.cmd("CLUSTER", "SLOTS"))[0]) == 4,
                    10 * SLOW), "the seend primary lists its replica")
    wait_caught_up(t, p, [r])
    pid = c.cmd("CLUSTER", "MYID").split(b"\r\n")[1]
    rid = RespBytes(r.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1]
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
    p = Server(t, CLUSTER_ON + "announce = 127.0.0.7:%d\n" % port,
               filters=FILTERS, unix=False, port=port, name="p").start()
    r = replica(t, p, "r", CLUSTER_ON + "announce = 127.0.0.9:5555\n")
    c = RespBytes(p.port)
    t.ok(wait_until(lambda: len(val(c.cmd("CLUSTER", "SLOTS"))[0]) == 4,
                    10 * SLOW), "the primary lists its replica")
    pid = c.cmd("CLUSTER", "MYID").split(b"\r\n")[1]
    rid = RespBytes(r.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1]
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
    s = seend_one(t)
    first = RespBytes(s.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1]
    path = os.path.join(s.data_dir, "cluster-node-id")
    with open(path, "rb") as f:
        t.eq(f.read(), first + b"\n", "data_dir/cluster-node-id")
    t.eq(s.stop(), 0, "exit status")
    s.start()
    t.eq(RespBytes(s.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1], first,
         "the ID after a restart")
    s.kill9()
    s.start()
    t.eq(RespBytes(s.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1], first,
         "the ID after kill -9")
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
    with seend_one(t) as s:
        c = s.client()
        sid = RespBytes(s.port).cmd("CLUSTER", "MYID").split(b"\r\n")[1]
        t.eq(c.cmd("CLUSTER MYID"), sid.decode(), "CLUSTER MYID")
        t.eq(c.cmd("CLUSTER KEYSLOT 123456789"), "12739", "KEYSLOT")
        t.eq(c.cmd("CLUSTER KEYSLOT {user1000}.following"), "3443",
             "KEYSLOT with a tag")
        c.send(b"CLUSTER INFO\n")
        lines = c.lines_until_end()
        t.ok("cluster_state ok" in lines and "cluster_known_nodes 1" in lines
             and "cluster_size 1" in lines,
             "CLUSTER INFO's name value lines: %r" % lines)
        t.ok(c.cmd("CLUSTER SLOTS").startswith("ERR "),
             "SLOTS is RESP's")
        c.close()


@test
def redis_py_cluster_records_300k_urls_each_new_once(t):
    from redis.cluster import RedisCluster
    p = primary(t, "p", CLUSTER_ON)
    r = replica(t, p, "r", CLUSTER_ON)
    t.ok(wait_until(lambda: len(val(RespBytes(p.port).cmd(
        "CLUSTER", "SLOTS"))[0]) == 4, 10 * SLOW), "the replica is listed")
    rc = RedisCluster(host="127.0.0.1", port=p.port)
    names = sorted(x.name for x in rc.get_nodes())
    t.eq(names, sorted(["127.0.0.1:%d" % p.port, "127.0.0.1:%d" % r.port]),
         "redis-py's nodes")
    urls = ["https://py.example/%d/{x}/p" % i for i in range(n(300000))]
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


def node_run(t, cfg):
    node = shutil.which("node") or shutil.which("nodejs")
    t.ok(node is not None, "node is installed (tools/install-deps)")
    t.ok(os.path.isdir(os.path.join(NODE_DIR, "node_modules", "ioredis")),
         "tests/node's packages are installed (tools/install-deps)")
    env = dict(os.environ)
    env.pop("NODE_OPTIONS", None)
    cfg = dict(cfg, total_ms=int(60000 * SLOW))
    p = subprocess.run([node, "cluster.mjs", json.dumps(cfg)], cwd=NODE_DIR,
                       capture_output=True, text=True,
                       timeout=70 * SLOW, stdin=subprocess.DEVNULL, env=env)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failed("node cluster.mjs exited %s; stdout %r, stderr %s"
                     % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    t.ok(p.returncode == 0 and "error" not in out,
         "%s: %r; stderr %s" % (cfg["client"], out, p.stderr[-2000:]))
    return out


@test
def ioredis_cluster_and_node_redis_create_cluster_record_urls(t):
    with seend_one(t) as s:
        k = n(20000)
        for client, resp in (("ioredis", 2), ("node-redis", 2),
                             ("node-redis", 3)):
            out = node_run(t, {"client": client, "resp": resp,
                               "port": s.port, "n": k,
                               "prefix": "%s-%d" % (client, resp)})
            t.ok(k - out["first"] <= k // 1000, "%s RESP%d: %r new of %d"
                 % (client, resp, out["first"], k))
            t.eq(out["again"], 0, "%s RESP%d: answered new again"
                 % (client, resp))
            t.eq(out["got"], k, "%s RESP%d: GETs answered 1"
                 % (client, resp))


if __name__ == "__main__":
    run()
