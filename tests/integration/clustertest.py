#!/usr/bin/python3
"""
What the cluster tests share (test_cluster_one.py, test_cluster_map.py,
test_cluster_failover.py, test_cli_cluster.py and, through pyseend,
python/tests/test_cluster_client.py): seend nodes in cluster mode, asking
them for their IDs and maps, maps written by hand in the canonical text of
src/cluster_map.h, pushing a map and waiting until the nodes hold it,
three shards of seend nodes, real redis-server nodes in cluster mode to
compare replies with, Redis Sentinels that watch one name per shard, and
the Node.js cluster clients (tests/node). Holds no tests itself.
"""
import json
import os
import shutil
import subprocess
import sys
import time

from seendtest import *
from repltest import FILTERS, stop_all

# the Python client's package in the source tree (its keyslot is Redis
# Cluster's), before any installed one
PYTHON_DIR = os.path.join(SRCDIR, "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
from seend.cluster import keyslot  # noqa: E402

# what makes a seend a cluster node: the [cluster] section's first lines
# (a config's [server] lines must come before it)
CLUSTER_ON = "[cluster]\nenabled = on\n"
# the slots of three primaries as redis-cli --cluster create splits them
RANGES = [(0, 5460), (5461, 10922), (10923, 16383)]
NODE_DIR = os.path.join(SRCDIR, "tests", "node")


def addr(s):
    """A node's host:port, as seen-cli and seend.Client take it."""
    return "127.0.0.1:%d" % s.port


def tls_lines(p, port):
    """The [server] lines of a TLS listener on port with the server
    certificate of p (a tlspki pki), client certificates not asked for."""
    return ("tls_listen = 127.0.0.1:%d\ntls_cert_file = %s\n"
            "tls_key_file = %s\ntls_ca_cert_file = %s\n"
            "tls_auth_clients = no\n" % ((port,) + tuple(p.server) + (p.ca,)))


def cluster_node(t, name="s", server="", cluster="", tls=None,
                 filters=FILTERS, unix=False, port=None, start=True):
    """A seend in cluster mode (Server): server's lines go into [server],
    cluster's into [cluster] after "enabled = on". tls: a tlspki pki, for
    a TLS listener on a port of its own, which the node keeps as .tport
    (0 without TLS). Started unless start=False."""
    tport = free_port() if tls else 0
    s = Server(t, server + (tls_lines(tls, tport) if tls else "") +
               CLUSTER_ON + cluster, filters=filters, unix=unix, port=port,
               name=name)
    s.tport = tport
    return s.start() if start else s


# ---- seen-cli and a RedisCluster crawler ----

# one partitioned filter, small enough for many nodes on one machine
MOVE_FILTERS = """
[filter.default]
capacity = 400000
error_rate = 0.001
"""


# the default filter and a cuckoo filter partitioned by slot beside it
# (URLs of hosts kc*), both moving
MOVE_CF_FILTERS = MOVE_FILTERS + """
[filter.cf]
prefixes = https://kc
type = cuckoo
capacity = 400000
error_rate = 0.001
"""


def nodes(t, n, name="n", filters=MOVE_FILTERS):
    """n cluster nodes named name0..., started, each with filters."""
    return [cluster_node(t, "%s%d" % (name, i), filters=filters)
            for i in range(n)]


def cli(t, *args):
    """seen-cli args: (exit status, stdout, stderr)."""
    p = subprocess.run([SEEN_CLI] + list(args), capture_output=True,
                       text=True, stdin=subprocess.DEVNULL,
                       timeout=300 * SLOW)
    return p.returncode, p.stdout, p.stderr


def ok_cli(t, *args):
    """cli, which must exit 0: its stdout."""
    rc, out, err = cli(t, *args)
    t.eq(rc, 0, "seen-cli %s exits 0; stdout:\n%s\nstderr:\n%s" %
         (" ".join(args), out, err))
    return out


def client(ns):
    """A redis-py RedisCluster client starting from nodes ns."""
    from redis.cluster import ClusterNode, RedisCluster
    return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", s.port)
                                       for s in ns],
                        socket_timeout=30 * SLOW)


def urls(prefix, n):
    """n URLs of a host named prefix."""
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
            except (system_module("redis").exceptions.RedisError,
                    OSError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
    return out


def seen_all(t, ns, keys, what):
    """EXISTS of every key through a new RedisCluster (SISMEMBER of a
    (name, member) pair): all 1."""
    rc = client(ns)
    try:
        missing = [k for k in keys if (rc.sismember(*k) if
                                       isinstance(k, tuple) else
                                       rc.exists(k)) != 1]
    finally:
        rc.close()
    t.eq(len(missing), 0, "%s: every URL answered seen (missing %d of %d, "
         "e.g. %r)" % (what, len(missing), len(keys), missing[:3]))


# ---- asking a node ----

def ask(s, *words, auth=None, timeout=30):
    """One command's reply from s as Resp gives it (an error reply is an
    Err); auth: a token sent with AUTH first."""
    c = Resp(s.port, timeout=timeout)
    try:
        if auth is not None:
            got = c.cmd("AUTH", auth)
            if got != "OK":
                raise Failed("AUTH on %s: %r" % (s.name, got))
        return c.cmd(*words)
    finally:
        c.close()


def info_field(s, section, field):
    """One field of s's INFO section, as redis-py's info() gives it."""
    c = s.client(timeout=30)
    try:
        return c.info(section)[field]
    finally:
        c.close()


def readonly_exists(s, keys):
    """EXISTS of each key on s after READONLY (a replica's reads)."""
    c = Resp(s.port, timeout=30)
    try:
        t_ok = c.cmd("READONLY")
        if t_ok != "OK":
            raise Failed("READONLY on %s: %r" % (s.name, t_ok))
        # 1 each; a MOVED (the map not there yet) counts as 0
        return [c.cmd("EXISTS", k) == 1 for k in keys]
    finally:
        c.close()


def roles(ns):
    """(primaries, {primary name: its replica}) of ns, by ROLE."""
    prim = [s for s in ns if ask(s, "ROLE")[0] == b"master"]
    repl = {}
    for s in ns:
        if s not in prim:
            port = int(ask(s, "ROLE")[2])
            repl[next(p.name for p in prim if p.port == port)] = s
    return prim, repl


def try_ask(s, *words, timeout=10):
    """ask, or None when s does not answer (dead, restarting, or our
    connection killed, as Sentinel's CLIENT KILL does)."""
    try:
        return ask(s, *words, timeout=timeout)
    except (OSError, EOFError):
        return None


def ask_raw(s, *words, timeout=30):
    """One command's reply from s as the bytes sent (RespBytes), for
    replies checked byte for byte."""
    c = RespBytes(s.port, timeout=timeout)
    try:
        return c.cmd(*words)
    finally:
        c.close()


def myid(s, auth=None):
    """CLUSTER MYID: the node's ID, 40 hex digits, as str."""
    got = ask(s, "CLUSTER", "MYID", auth=auth)
    if not isinstance(got, bytes):
        raise Failed("CLUSTER MYID on %s: %r" % (s.name, got))
    return got.decode()


def setmap(s, text, auth=None):
    """CLUSTER SETMAP text (str or bytes) on s: the reply's bytes
    (b"+OK\\r\\n", b"-STALEMAP ...", b"-ERR map refused: ...")."""
    c = RespBytes(s.port, timeout=30)
    try:
        if auth is not None:
            got = c.cmd("AUTH", auth)
            if got != b"+OK\r\n":
                raise Failed("AUTH on %s: %r" % (s.name, got))
        return c.cmd("CLUSTER", "SETMAP", text)
    finally:
        c.close()


def getmap(s, auth=None):
    """CLUSTER GETMAP on s: the map's text (str), None if s holds none.
    An error reply fails the test."""
    got = ask(s, "CLUSTER", "GETMAP", auth=auth)
    if got is not None and not isinstance(got, bytes):
        raise Failed("CLUSTER GETMAP on %s: %r" % (s.name, got))
    return None if got is None else got.decode()


def try_getmap(s, auth=None):
    """getmap for a wait: None also while s does not answer, an error
    reply as its Err."""
    try:
        got = ask(s, "CLUSTER", "GETMAP", auth=auth, timeout=10)
    except (OSError, EOFError):
        return None
    return got.decode() if isinstance(got, bytes) else got


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


def replicas_listed(s, n=1):
    """Whether every range of s's CLUSTER SLOTS lists n replicas after its
    primary (a replica is listed once past its full sync)."""
    got = try_ask(s, "CLUSTER", "SLOTS")
    return isinstance(got, list) and bool(got) and \
        all(len(x) == 3 + n for x in got)


# ---- maps by hand ----

def map_node(nid, port, primary=None, tls_port=0, host="127.0.0.1"):
    """A node line's fields for map_text: (id, host, port, tls port,
    primary's ID or None)."""
    return (nid, host, port, tls_port, primary)


def ranges_text(ranges):
    """[(a, b), ...] as a "slots" line gives them: ascending, merged,
    a single slot as "a"."""
    merged = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return " ".join("%d" % a if a == b else "%d-%d" % (a, b)
                    for a, b in merged)


def map_text(epoch, nodes, slots):
    """The canonical text of a map (src/cluster_map.h), as GETMAP gives
    it back: nodes [map_node(...)], slots {id: [(a, b), ...]} (a primary
    without slots may be left out)."""
    lines = ["seend-cluster-map 1", "epoch %d" % epoch]
    for nid, host, port, tport, prim in sorted(nodes):
        lines.append("node %s %s %d %d %s" % (nid, host, port, tport,
                                              prim or "-"))
    for nid, _, _, _, _ in sorted(nodes):
        if slots.get(nid):
            lines.append("slots %s %s" % (nid, ranges_text(slots[nid])))
    return "\n".join(lines) + "\n"


def wait_map(t, nodes, text, timeout=10):
    """Waits until every node in nodes holds the map text; fails naming
    what each holds."""
    ok = wait_until(lambda: all(try_getmap(s) == text for s in nodes),
                    timeout, step=0.05)
    t.ok(ok, "every node holds the map within %ss:\n%s\n%s" % (
        timeout * SLOW, text, "\n".join(
            "%s: %r" % (s.name, try_getmap(s)) for s in nodes)))


def as_ranges(r):
    """A shard's slots as Cluster takes them: None, (a, b) or a list of
    such: a list."""
    if r is None:
        return []
    return [r] if isinstance(r, tuple) else list(r)


class Cluster:
    """Three seend primaries in cluster mode (p0, p1, p2), each with a
    replica (r0, r1, r2; replicaof) unless replicas=False, their IDs read
    (ids: name -> ID), and the map of epoch 1 in which primary i owns
    RANGES[i] pushed to every node unless push=False. filters, unix and tls
    (a tlspki pki: the map names each node's TLS port) are each node's;
    prefix goes before the nodes' names (two clusters in one test)."""

    def __init__(self, t, replicas=True, push=True, filters=FILTERS,
                 unix=False, tls=None, prefix=""):
        self.t = t
        self.primaries = [cluster_node(t, "%sp%d" % (prefix, i),
                                       filters=filters, unix=unix, tls=tls)
                          for i in range(3)]
        self.replicas = [cluster_node(t, "%sr%d" % (prefix, i),
                                      "replicaof = 127.0.0.1:%d\n" % p.port,
                                      filters=filters, tls=tls)
                         for i, p in enumerate(self.primaries)] \
            if replicas else []
        self.ids = {s.name: myid(s) for s in self.all()}
        if push:
            self.push(self.text(1))

    def all(self):
        return self.primaries + self.replicas

    def shards(self):
        """(primary, replica or None) per shard, as the nodes started."""
        return list(zip(self.primaries, self.replicas or
                        [None] * len(self.primaries)))

    def text(self, epoch, ranges=RANGES, shards=None):
        """The map of this cluster at epoch: shard i's primary owns
        ranges[i] (None: nothing; (a, b); or a list of them); shards, a
        list of (primary, replica or None), says who is whose (by default
        the nodes as started: a failover swaps a pair)."""
        nodes, slots = [], {}
        for (p, r), rg in zip(shards or self.shards(), ranges):
            pid = self.ids[p.name]
            nodes.append(map_node(pid, p.port, tls_port=p.tport))
            if r is not None:
                nodes.append(map_node(self.ids[r.name], r.port, pid,
                                      tls_port=r.tport))
            if as_ranges(rg):
                slots[pid] = as_ranges(rg)
        return map_text(epoch, nodes, slots)

    def push(self, text, to=None, timeout=10):
        """SETMAP of text to every node (or those in to), each answering
        +OK; then waits until every node holds it."""
        for s in to or self.all():
            self.t.eq(setmap(s, text), b"+OK\r\n", "SETMAP on %s" % s.name)
        self.wait_agree(text, timeout=timeout)

    def wait_agree(self, text, nodes=None, timeout=10):
        """Waits until every node (or those in nodes) holds the map text."""
        wait_map(self.t, nodes or self.all(), text, timeout)

    def shard(self, key, ranges=RANGES):
        """The index of the shard whose primary owns key's slot under
        ranges, or None."""
        slot = keyslot(key)
        for i, rg in enumerate(ranges):
            if any(a <= slot <= b for a, b in as_ranges(rg)):
                return i
        return None

    def owner(self, key, ranges=RANGES):
        """The primary that owns key's slot under ranges, or None."""
        i = self.shard(key, ranges)
        return None if i is None else self.primaries[i]

    def counts(self):
        """INFO default's count on each primary."""
        out = []
        for p in self.primaries:
            c = p.client(timeout=30)
            try:
                out.append(int(c.info("default")["count"]))
            finally:
                c.close()
        return out

    def stop(self):
        """SIGTERM to every node, replicas first: each exits 0."""
        stop_all(self.t, *(self.replicas + self.primaries))


# ---- real Redis Cluster nodes, to compare replies with ----

class RedisNode:
    """A redis-server in cluster mode in its own directory under t's; id
    is its node ID (bytes), bus its cluster bus port."""

    def __init__(self, t, name):
        exe = shutil.which("redis-server")
        t.ok(exe is not None, "redis-server is installed")
        self.port = free_port()
        # the bus port is port + 10000 unless given: past 65535 for a high
        # port
        self.bus = free_port()
        d = t.path(name)
        os.makedirs(d, exist_ok=True)
        self.log = open(os.path.join(d, "log"), "w")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-port", str(self.bus),
             "--cluster-config-file", "nodes.conf", "--dir", d,
             "--save", "", "--appendonly", "no", "--daemonize", "no"],
            stdout=self.log, stderr=subprocess.STDOUT)
        t.servers.append(self)  # killed by run() at the end of the test
        t.ok(wait_until(self.ping, 10), "redis-server %s answers" % name)
        self.id = val(self.cmd("CLUSTER", "MYID"))

    def ping(self):
        try:
            return self.cmd("PING") == b"+PONG\r\n"
        except OSError:
            return False

    def cmd(self, *words):
        """One command's reply as the bytes sent."""
        c = RespBytes(self.port, timeout=5)
        try:
            return c.cmd(*words)
        finally:
            c.close()


# ---- Redis Sentinel, one name per shard ----

def shard_sentinel(t, i, primaries, down_ms, failover_ms):
    """seendtest's Sentinel (i of three) monitoring each of primaries under
    the name shard<k>, down after down_ms and failing over within
    failover_ms, with test_failover.py's short INFO and hello periods."""
    return Sentinel(t, i, [("shard%d" % k, p.port)
                           for k, p in enumerate(primaries)],
                    [("down-after-milliseconds", down_ms),
                     ("failover-timeout", failover_ms)])


def sees_shard(x, shard, p, r):
    """Whether sentinel x sees p up as shard's master, r up as its only
    replica, and the two other sentinels."""
    m = x.master(shard)
    reps = x.replicas(shard)
    if m is None or reps is None:
        return False
    return (m["port"] == str(p.port) and sentinel_up(m["flags"]) and
            m["num-other-sentinels"] == "2" and
            [int(y["port"]) for y in reps if sentinel_up(y["flags"]) and
             y["master-port"] == str(p.port)] == [r.port])


# ---- the Node.js cluster clients (tests/node) ----

def node_script(t, script, cfg, seconds):
    """Runs node tests/node/<script> with cfg (its JSON argument, to which
    total_ms is added: seconds, scaled) and returns the JSON object it
    prints last; fails if it cannot be read, or reports an error or a
    status other than 0."""
    node = shutil.which("node") or shutil.which("nodejs")
    t.ok(node is not None, "node is installed (tools/install-deps)")
    t.ok(os.path.isdir(os.path.join(NODE_DIR, "node_modules", "ioredis")),
         "tests/node's packages are installed (tools/install-deps)")
    env = dict(os.environ)
    env.pop("NODE_OPTIONS", None)
    cfg = dict(cfg, total_ms=int(seconds * 1000 * SLOW))
    p = subprocess.run([node, script, json.dumps(cfg)], cwd=NODE_DIR,
                       capture_output=True, text=True,
                       timeout=(seconds + 10) * SLOW,
                       stdin=subprocess.DEVNULL, env=env)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failed("node %s exited %s; stdout %r, stderr %s"
                     % (script, p.returncode, p.stdout[-2000:],
                        p.stderr[-2000:]))
    t.ok(p.returncode == 0 and "error" not in out,
         "%s: %r; stderr %s" % (cfg["client"], out, p.stderr[-2000:]))
    return out
