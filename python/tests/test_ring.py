"""
The ring client, seend.Client([...]): three seend nodes with a real
nutcracker (Debian's twemproxy: ketama, fnv1a_64, redis: true) in front.
Keys go in through nutcracker with SETNX; then every key must be held by
the node the Python ring chooses for it, for the server list written with
names, without names, and with weights and a hash_tag; keys include UTF-8
URLs and raw bytes >= 0x80 (which twemproxy hashes as signed chars).  And
seen_many over the ring: answers in key order, every node's batch in
flight at once, errors and lost nodes named, nothing ever re-sent.

A Bloom filter answers "seen" for a key it never got at most at its
error_rate: where a node other than the key's claims to hold it, that is
counted against a bound of the expected false positives plus 3 standard
deviations (fp_allowed), never required to be zero.  A key missing from
its own node is never allowed (a Bloom filter has no false negative).
"""
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import threading

from pyseend import Failed, Server, free_port, run, test, wait_until

from seendtest import SLOW, system_module

import seend
from seend.ring import _fnv_many, fnv1a_64, parse_server

redis = system_module("redis")

KEYS = 100000
ERROR_RATE = 0.001
FILTERS = """
[filter.default]
capacity = 2000000
error_rate = %s
""" % ERROR_RATE


def fp_allowed(queries, rate=ERROR_RATE):
    """The most false positives a filter may honestly give over queries
    lookups of keys it does not hold: the expected count plus 3 standard
    deviations and a little slack (fails a right filter far less than once
    in 500 runs; in practice the filters here, far from full, give a
    fraction of their error rate)."""
    mean = queries * rate
    return int(mean + 3 * math.sqrt(mean) + 3)


def make_keys(tag, n, hash_tags=False):
    """n distinct keys: a third ASCII URLs, a third UTF-8 URLs with
    characters of 2, 3 and 4 bytes (str), a third raw bytes with every
    value 0x80-0xff (latin-1 and invalid UTF-8 alike)."""
    rnd = random.Random(tag)
    high = bytes(range(0x80, 0x100))
    out = []
    for i in range(n):
        kind = i % 3
        tagged = "{user%d}" % (i % 97) if hash_tags and i % 2 else ""
        if kind == 0:
            out.append("https://%s.example/page/%d%s?q=%d"
                       % (tag, i, tagged, i * 7919))
        elif kind == 1:
            out.append("https://bücher-%s.example/straße/%d%s/日本語/%s"
                       % (tag, i, tagged, "🦆" * (i % 4)))
        else:
            j = rnd.randrange(len(high) - 8)
            out.append(b"https://caf\xe9-" + tag.encode() + b".example/" +
                       high[j:j + rnd.randrange(1, 9)] + tagged.encode() +
                       b"/%d" % i)
    return out


class Nutcracker:
    """nutcracker in front of the nodes, its servers written as given."""

    def __init__(self, t, servers, name, hash_tag=None):
        exe = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
        t.ok(os.access(exe, os.X_OK), "nutcracker is installed")
        self.port = free_port()
        conf = t.path(name + ".yml")
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
                    % (self.port, int(30000 * SLOW)))
            if hash_tag:
                f.write('  hash_tag: "%s"\n' % hash_tag)
            f.write("  servers:\n")
            for s in servers:
                f.write("    - %s\n" % s)
        self.proc = subprocess.Popen(
            [exe, "-c", conf, "-s", str(free_port()), "-a", "127.0.0.1",
             "-o", t.path(name + ".log")])
        t.servers.append(self)
        t.ok(wait_until(self.ready, 10), "nutcracker answers")

    def ready(self):
        if self.proc.poll() is not None:
            raise Failed("nutcracker exited with %s" % self.proc.returncode)
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.exceptions.RedisError:
            return False

    def setnx_all(self, keys, chunk=5000):
        """SETNX key 1 for every key through the proxy, pipelined."""
        r = redis.Redis(port=self.port, socket_timeout=60 * SLOW)
        out = []
        for i in range(0, len(keys), chunk):
            p = r.pipeline(transaction=False)
            for k in keys[i:i + chunk]:
                p.setnx(k, 1)
            out += p.execute(raise_on_error=False)
        r.close()
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def start_nodes(t, n=3, filters=FILTERS):
    nodes = []
    for i in range(n):
        s = Server(t, name="n%d" % (i + 1), unix=False, filters=filters)
        s.start()
        nodes.append(s)
    return nodes


def addr(node):
    return "127.0.0.1:%d" % node.port


def held(nodes, keys):
    """held[j][i]: node j answers CHECK key i with "seen" (asked directly)."""
    out = []
    for s in nodes:
        with seend.Client(addr(s), timeout=60 * SLOW) as c:
            out.append(c.check_many(keys))
    return out


def check_routing(t, nodes, keys, route, what):
    """Every key held by its ring node; other nodes only by false
    positive.  Returns (held, how many keys each node got)."""
    h = held(nodes, keys)
    missing = [i for i, j in enumerate(route) if not h[j][i]]
    t.eq(missing[:5], [], "%s: keys not held by the node the Python ring "
         "chose (%d of %d)" % (what, len(missing), len(keys)))
    extra = sum(1 for i, j in enumerate(route)
                for k in range(len(nodes)) if k != j and h[k][i])
    bound = fp_allowed(len(keys) * (len(nodes) - 1))
    print("# %s: %d keys, per node %s, %d also 'held' elsewhere (false "
          "positives, at most %d)" % (what, len(keys),
                                      [route.count(j) for j in
                                       range(len(nodes))], extra, bound))
    t.ok(extra <= bound, "%s: keys held by another node too: %d, more "
         "than the false positives allowed (%d)" % (what, extra, bound))
    return h, [route.count(j) for j in range(len(nodes))]


def misrouted(h, route):
    """How many keys the node of this (wrong) route does not hold."""
    return sum(1 for i, j in enumerate(route) if not h[j][i])


def through_proxy(t, px, keys):
    first = px.setnx_all(keys)
    errors = [x for x in first if isinstance(x, Exception)]
    t.eq(errors[:3], [], "every SETNX through nutcracker is answered")
    new = sum(1 for x in first if x is True)
    t.ok(new >= len(keys) - fp_allowed(len(keys)), "new through the proxy: "
         "%d of %d" % (new, len(keys)))


@test
def the_fast_fnv_is_the_plain_one(t):
    rnd = random.Random(7)
    for _ in range(30):
        keys = [bytes(rnd.randrange(256) for _ in range(
                rnd.choice([0, 1, 2, 3, 4, 7, 80, rnd.randrange(300)])))
                for _ in range(rnd.randrange(1, 2000))]
        for signed in (True, False):
            t.eq(_fnv_many(keys, signed), [fnv1a_64(k, signed) for k in keys],
                 "batch hash = one-by-one hash (signed %s)" % signed)
    # the sign of a byte >= 0x80 matters, and only for such bytes
    t.eq(fnv1a_64(b"abc"), fnv1a_64(b"abc", signed_char=False), "ascii")
    t.ok(fnv1a_64(b"\xe9") != fnv1a_64(b"\xe9", signed_char=False), "sign")
    t.eq(fnv1a_64(b""), 0, "an empty key hashes to 0, as in twemproxy")
    # names as nutcracker.yml gives them
    t.eq(parse_server("127.0.0.1:7001"), ("127.0.0.1:7001", 1,
                                          b"127.0.0.1:7001"), "host:port")
    t.eq(parse_server("127.0.0.1:7001:3"), ("127.0.0.1:7001", 3,
                                            b"127.0.0.1:7001"), "weight")
    t.eq(parse_server("127.0.0.1:7001:1 seend1"), ("127.0.0.1:7001", 1,
                                                   b"seend1"), "named")
    t.eq(parse_server("cache1:11211:1"), ("cache1:11211", 1, b"cache1"),
         "port 11211 is left out of the name")
    t.eq(parse_server("/run/seend.sock:2"), ("/run/seend.sock", 2,
                                             b"/run/seend.sock:"), "unix")
    t.eq(parse_server("[::1]:7001:1 v6"), ("[::1]:7001", 1, b"v6"), "v6")
    for bad in ("127.0.0.1:7001:0", "127.0.0.1", "127.0.0.1:x",
                "a:1:2:3", "127.0.0.1:7001:1 "):
        try:
            parse_server(bad)
            raise Failed("server %r accepted" % bad)
        except ValueError:
            pass
    t.ok(type(seend.Client("127.0.0.1:1")) is seend.Client, "one address")
    ring = seend.Client(["127.0.0.1:1", "127.0.0.1:2"], timeout=3)
    t.ok(isinstance(ring, seend.Ring), "a list gives a Ring")
    t.eq(ring.timeout, 3, "keywords reach the Ring")


@test
def the_ring_routes_100k_keys_to_the_nodes_nutcracker_chose(t):
    nodes = start_nodes(t)
    named = ["127.0.0.1:%d:1 seend%d" % (s.port, i + 1)
             for i, s in enumerate(nodes)]
    plain = ["127.0.0.1:%d:1" % s.port for s in nodes]

    # servers with names: twemproxy hashes the names
    keys = make_keys("named", KEYS)
    px = Nutcracker(t, named, "named")
    through_proxy(t, px, keys)
    px.stop()
    ring = seend.Client(named)
    route = ring.node_indexes(keys)
    h, per = check_routing(t, nodes, keys, route, "named servers")
    for n in per:
        t.ok(n > KEYS // 5, "ketama spreads keys over every node: %s" % per)
    # the test can tell a wrong ring: hashing host:port instead of the
    # names, or bytes >= 0x80 as unsigned chars, misses many keys
    wrong = seend.Client([addr(s) for s in nodes]).node_indexes(keys)
    t.ok(misrouted(h, wrong) > KEYS // 3, "a ring of other names misses")
    unsigned = seend.Ring(named, signed_char=False).node_indexes(keys)
    differ = sum(1 for a, b in zip(route, unsigned) if a != b)
    t.ok(differ > KEYS // 10, "unsigned chars route other nodes: %d" % differ)
    t.ok(misrouted(h, unsigned) >= differ - fp_allowed(differ),
         "and those keys are not there")
    # and the ring answers for them: every key seen
    t.eq(ring.seen_many(keys) == [True] * KEYS, True,
         "seen_many over the ring: every key seen")

    # servers without names: twemproxy hashes "host:port"; the ring takes
    # them with or without nutcracker.yml's weight
    keys = make_keys("plain", KEYS)
    px = Nutcracker(t, plain, "plain")
    through_proxy(t, px, keys)
    px.stop()
    route = seend.Client(plain).node_indexes(keys)
    t.eq(route, seend.Client([addr(s) for s in nodes]).node_indexes(keys),
         "host:port and host:port:1 name a server alike")
    h, _ = check_routing(t, nodes, keys, route, "servers without names")
    t.ok(misrouted(h, seend.Client(named).node_indexes(keys)) > KEYS // 3,
         "the named ring misses here")


@test
def weights_and_hash_tag_route_as_nutcracker_does(t):
    nodes = start_nodes(t)
    servers = ["127.0.0.1:%d:%d w%d" % (s.port, i + 1, i)
               for i, s in enumerate(nodes)]
    keys = make_keys("weights", KEYS // 3, hash_tags=True)
    px = Nutcracker(t, servers, "weighted", hash_tag="{}")
    through_proxy(t, px, keys)
    px.stop()
    ring = seend.Ring(servers, hash_tag="{}")
    route = ring.node_indexes(keys)
    _, per = check_routing(t, nodes, keys, route, "weights 1:2:3, hash_tag")
    t.ok(per[0] < per[1] < per[2], "weights show: %s" % per)
    tagged = [i for i, k in enumerate(keys)
              if (b"{user5}" if isinstance(k, bytes) else "{user5}") in k]
    t.eq(len(set(route[i] for i in tagged)), 1, "a hash tag keeps its keys "
         "on one node")


class FakeNodes:
    """Line-protocol nodes that answer a batch only once every node has
    its whole batch: a client that waits for one node's answers before
    writing to the next never gets them.  The answer to "SEEN key" is 1
    when the key ends in an odd digit."""

    def __init__(self, t, expect):
        self.expect = expect
        self.barrier = threading.Barrier(len(expect), timeout=10 * SLOW)
        self.listeners = []
        self.errors = []
        self.threads = []
        for n in expect:
            ls = socket.socket()
            ls.bind(("127.0.0.1", 0))
            ls.listen(4)
            self.listeners.append(ls)
            th = threading.Thread(target=self.serve, args=(ls, n), daemon=True)
            th.start()
            self.threads.append(th)

    def addresses(self):
        return ["127.0.0.1:%d" % ls.getsockname()[1] for ls in self.listeners]

    def serve(self, ls, n):
        conn, _ = ls.accept()
        with conn:
            data = b""
            while data.count(b"\n") < n:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    return
                data += chunk
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.errors.append("a node was answered before the others "
                                   "had their batch")
                return
            conn.sendall(b"".join(b"1\r\n" if line[-1] in b"13579" else
                                  b"0\r\n"
                                  for line in data.split(b"\n")[:-1]))

    def close(self):
        for th in self.threads:
            th.join(15 * SLOW)
        for ls in self.listeners:
            ls.close()


@test
def seen_many_sends_to_every_node_at_once_and_keeps_key_order(t):
    keys = ["https://example.com/o/%d/index.html?%d" % (i, i % 7)
            for i in range(60000)]
    # where the ring will send them, to tell each fake node what to expect
    ports = []
    for _ in range(3):
        ports.append(socket.socket())
        ports[-1].bind(("127.0.0.1", 0))
    servers = ["127.0.0.1:%d" % s.getsockname()[1] for s in ports]
    for s in ports:
        s.close()
    ring = seend.Client(servers, timeout=20 * SLOW)
    route = ring.node_indexes(keys)
    fake = FakeNodes(t, [route.count(j) for j in range(3)])
    # the fakes got other ports: same names, so the same routes
    servers2 = ["%s:1 %s" % (a, s) for a, s in zip(fake.addresses(), servers)]
    ring = seend.Ring(servers2, timeout=20 * SLOW)
    t.eq(ring.node_indexes(keys), route, "names choose the nodes")
    try:
        got = ring.seen_many(keys, batch=len(keys))
    finally:
        fake.close()
    t.eq(fake.errors, [], "every node's batch was in flight together")
    t.ok(got == [k[-1] in "13579" for k in keys], "answers in key order")


def cmd_seen(addresses):
    """Each node's INFO cmd_seen, asked on a connection of its own."""
    out = []
    for a in addresses:
        with seend.Client(a) as c:
            out.append(c.info()["cmd_seen"])
    return out


@test
def errors_and_lost_nodes_name_the_node_and_nothing_is_resent(t):
    news = FILTERS + "\n[filter.news]\ncapacity = 100000\nerror_rate = 0.01\n"
    nodes = [Server(t, name="e%d" % (i + 1), unix=False,
                    filters=news if i != 1 else FILTERS) for i in range(3)]
    for s in nodes:
        s.start()
    servers = [addr(s) for s in nodes]
    ring = seend.Client(servers, timeout=30 * SLOW)
    # twemproxy's fnv1a_64 multiplies by 0x1b3: keys that differ only in
    # their last two or three bytes hash close together and may all land
    # on one node; these differ further from the end, and spread
    keys = ["https://example.com/e/%d/index.html" % i for i in range(30000)]
    route = ring.node_indexes(keys)

    # an error reply: node 2 has no filter "news"
    try:
        got = ring.seen_many(keys[:300], filter="news")
        raise Failed("no error for the node without the filter: %r" % got)
    except seend.Error as e:
        t.eq(e.address, servers[1], "the error names the node")
        t.contains(str(e), servers[1], "in its text")
        t.contains(e.reason, "news", "the server's reason")
        t.eq(e.index, route.index(1), "the first key that failed")
        t.eq(e.replies, [None if j == 1 else False for j in route[:300]],
             "the other nodes' answers, None where it failed")
    t.eq(ring.ping(), True, "every node in step after the error")

    # a node that cannot be reached: nothing is sent anywhere
    before = cmd_seen(servers)
    # a port bound but not listening refuses, and nothing else can take it
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = ["127.0.0.1:%d" % closed.getsockname()[1]]
    down = seend.Client(servers[:1] + dead + servers[2:], timeout=5 * SLOW)
    down_route = down.node_indexes(keys[:3000])
    try:
        got = down.seen_many(keys[:3000])
        raise Failed("the unreachable node answered: %r" % got[:10])
    except seend.ConnectionError as e:
        t.eq(e.address, dead[0], "names the node that refused")
        t.contains(str(e), dead[0], "in its text")
        t.eq(e.sent, False, "nothing sent")
    closed.close()
    t.ok(1 in down_route, "some keys were for the dead node")
    t.eq(cmd_seen(servers), before, "nothing reached the other nodes")

    # a node that stops answering: TimeoutError naming it, the others'
    # answers kept
    nodes[1].send_signal(signal.SIGSTOP)
    slow = seend.Client(servers, timeout=3 * SLOW)
    try:
        part = keys[300:3300]
        try:
            slow.seen_many(part)
            raise Failed("no timeout")
        except seend.TimeoutError as e:
            t.eq(e.address, servers[1], "the timeout names the node")
            t.contains(str(e), servers[1], "in its text")
            want = [None if j == 1 else False for j in route[300:3300]]
            t.eq(e.answers, want, "the other nodes' answers")
            t.eq(e.replies, want[:want.index(None)], "the answered prefix")
    finally:
        nodes[1].send_signal(signal.SIGCONT)

    # a node killed mid-batch: ConnectionError naming it, nothing re-sent
    rest = keys[3300:]
    base = cmd_seen(servers)
    nodes[1].send_signal(signal.SIGSTOP)
    result = {}

    def call():
        try:
            result["ok"] = ring.seen_many(rest, batch=len(rest))
        except Exception as e:  # noqa: BLE001 - what it raised is the test
            result["err"] = e

    share = [sum(1 for j in route[3300:] if j == k) for k in range(3)]
    th = threading.Thread(target=call)
    th.start()
    # the other nodes answer their share; node 2 never does
    t.ok(wait_until(lambda: all(cmd_seen([servers[k]])[0] >= base[k] + share[k]
                                for k in (0, 2)), 30),
         "the live nodes answered their share")
    nodes[1].kill9()
    th.join(30 * SLOW)
    t.ok(not th.is_alive(), "the call returned")
    e = result.get("err")
    t.ok(isinstance(e, seend.ConnectionError) and not isinstance(
        e, seend.TimeoutError), "a lost node raises ConnectionError: %r"
         % (result,))
    t.eq(e.address, servers[1], "naming the node")
    t.contains(str(e), servers[1], "in its text")
    want = [None if j == 1 else False for j in route[3300:]]
    t.eq(e.answers, want, "the other nodes' answers arrived")
    t.eq(e.replies, want[:want.index(None)], "replies: the answered prefix")
    nodes[1].start()
    # nothing re-sent: the restarted node (nothing saved) has none of them;
    # the others hold theirs, once
    got = ring.check_many(rest)
    t.eq(got, [j != 1 for j in route[3300:]], "only the live nodes' keys")
    t.eq(ring.info()[servers[1]]["cmd_seen"], 0, "no SEEN re-sent to node 2")
    after = ["https://example.com/after/%d" % i for i in range(100)]
    t.eq(ring.seen_many(after), [False] * 100, "the ring works after the "
         "restart")


@test
def ring_forget_forgets_on_the_keys_node_only(t):
    """Ring.forget_many goes to each key's node: the forgotten keys answer
    False there afterwards (a false positive aside), the others stay."""
    cuckoo = FILTERS.replace("[filter.default]\n",
                             "[filter.default]\ntype = cuckoo\n")
    nodes = start_nodes(t, 3, cuckoo)
    keys = ["https://forget%d.example/p/%d" % (i % 41, i)
            for i in range(6000)]
    with seend.Ring([addr(s) for s in nodes], timeout=60 * SLOW) as ring:
        new = ring.seen_many(keys)
        rec = [k for k, was in zip(keys, new) if not was]
        gone, kept = rec[::2], rec[1::2]
        t.eq(ring.forget_many(gone).count(True), len(gone),
             "every recorded key forgotten")
        t.ok(ring.forget(kept[0]), "Ring.forget of a held key")
        kept = kept[1:]
        t.eq(ring.check_many(kept).count(True), len(kept),
             "the kept keys stay held")
        back = ring.check_many(gone).count(True)
        t.ok(back <= fp_allowed(len(gone)), "forgotten keys held again: %d "
             "(false positives allowed: %d)" % (back, fp_allowed(len(gone))))
        route = ring.node_indexes(kept)
    h = held(nodes, kept)
    t.eq(sum(1 for i, j in enumerate(route) if not h[j][i]), 0,
         "every kept key on its own node")


if __name__ == "__main__":
    run()
