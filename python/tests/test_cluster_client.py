"""
The Python client over a seend cluster (seend/cluster.py): three seend
primaries in cluster mode and a map pushed by hand (CLUSTER SETMAP).
The client follows ERR MOVED from any node, reads the slot table, sends
each key to its owner and keeps the keys' order; cluster=True reads the
table first, cluster=False never follows; a map that moves slots is
followed; CLUSTERDOWN, a lost node and bad keys raise, nothing is ever
answered "new" in their place or sent twice.  Over TLS the client goes
to the nodes' TLS ports, as the nodes name them.  The slot of a key is
CLUSTER KEYSLOT's.  TRYAGAIN and nodes that redirect forever are played
by a fake node.
"""
import random
import signal
import socket
import threading

from pyseend import Failed, address, run, test, wait_until
from tlspki import pki

import seend
from seend.cluster import SLOTS, keyslot, keyslots

from seendtest import RespBytes, val
from clustertest import RANGES, Cluster, cluster_node

FILTERS = """
[filter.default]
capacity = 1000000
error_rate = 0.001

[filter.jobs]
type = cuckoo
capacity = 100000
prefixes = job:
"""


def urls(n, tag):
    return ["https://%s.example/%d/x" % (tag, i) for i in range(n)]


def same(t, got, want, what):
    """Two long lists equal; else where they first differ, not all of
    them."""
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                 min(len(got), len(want)))
        raise Failed("%s: %d and %d answers, first differing at %d: got "
                     "%r, want %r" % (what, len(got), len(want), i,
                                      got[i:i + 5], want[i:i + 5]))


class Nodes(Cluster):
    """clustertest's three primaries in cluster mode, without replicas,
    the map of epoch 1 (RANGES) pushed to each, named by index as the
    client's tests count them: servers[i], addr(i), shard(key) (the
    owner's index), count(i)."""

    def __init__(self, t, unix=False, name="", tls=None):
        super().__init__(t, replicas=False, filters=FILTERS, unix=unix,
                         tls=tls, prefix=name)
        self.servers = self.primaries

    def addr(self, i):
        return address(self.servers[i])

    def count(self, i, filter="default"):
        with seend.Client(self.addr(i), cluster=False) as c:
            return c.info(filter)["count"]

    def answered_new(self, i, filter="default"):
        """The keys node i answered new (seen_new: what it was sent, where
        count follows the slots it holds now)."""
        with seend.Client(self.addr(i), cluster=False) as c:
            return c.info(filter)["seen_new"]


@test
def keyslot_is_cluster_keyslots(t):
    with cluster_node(t, filters=FILTERS) as s:
        rnd = random.Random(7)
        keys = [b"123456789", b"{user1000}.following", b"{}", b"{}{a}",
                b"a{}b{c}", b"{{a}}", b"a{b", b"}a{b}", b"foo{bar}{zap}",
                "https://\u00e9t\u00e9.example/{x}".encode()]
        keys += [bytes(rnd.randrange(256) for _ in range(rnd.randrange(
            1, 30))) for _ in range(2000)]
        keys += [b"https://e.example/%d/{t%d}" % (i, i % 7)
                 for i in range(2000)]
        c = RespBytes(s.port)
        want = [val(x) for x in c.pipeline([(b"CLUSTER", b"KEYSLOT", k)
                                            for k in keys])]
        c.close()
        t.eq(keyslots(keys), want, "keyslots")
        t.eq([keyslot(k) for k in keys[:50]], want[:50], "keyslot")
        t.eq(keyslot("https://\u00e9t\u00e9.example/{x}"), want[9],
             "a str key is hashed as UTF-8")
        t.ok(all(0 <= x < SLOTS for x in want), "slots in range")


@test
def a_client_follows_moved_and_keeps_the_keys_order(t):
    nodes = Nodes(t)
    keys = urls(30000, "order")
    # a batch whose first key is not the seed's, with repeats across
    # batch boundaries and nodes
    c = seend.Client(nodes.addr(0))
    t.eq(c.cluster, None, "not following before a redirection")
    mixed = keys[:10] + keys[:3] + [keys[0]]
    t.eq(c.seen_many(mixed, batch=7), [False] * 10 + [True] * 4,
         "answers in order, repeats seen")
    t.ok(c.cluster is not None, "following after MOVED")
    t.ok(c.cluster.redirections > 0, "redirections counted")
    t.eq(sorted(c.cluster.slots().items()),
         sorted((nodes.addr(i), [RANGES[i]]) for i in range(3)),
         "the slot table")
    before = c.cluster.redirections
    got = c.seen_many(keys)
    t.eq(got[:10], [True] * 10, "the first keys again")
    t.ok(got[10:].count(True) <= 30, "new keys: %d answered seen"
         % got[10:].count(True))
    t.eq(c.cluster.redirections, before, "no redirection once it knows")
    counts = [nodes.count(i) for i in range(3)]
    first = [False] * 10 + got[10:]
    t.eq(counts, [sum(1 for k, x in zip(keys, first)
                      if not x and nodes.shard(k) == i) for i in range(3)],
         "each node holds its keys")
    same(t, c.check_many(keys, batch=1001), [True] * len(keys),
         "check_many")
    t.eq([c.seen(k) for k in keys[:20]], [True] * 20, "seen one by one")
    t.eq(c.check("https://none.example/"), False, "check of a new key")
    t.eq(c.ping(), True, "ping (the seed)")
    t.eq(c.info("default")["count"], counts[0], "info is the seed's")
    # a named filter: the URL is the key, every primary has the filter
    t.eq(c.seen_many(["job:%d" % i for i in range(300)], filter="jobs"),
         [False] * 300, "a named filter")
    t.eq(c.forget_many(["job:%d" % i for i in range(300)]), [True] * 300,
         "forget_many on the owners")
    t.eq(sum(nodes.count(i, "jobs") for i in range(3)), 0,
         "forgotten everywhere")
    try:
        c.forget_many(keys[:100])
        raise Failed("a bloom filter forgot")
    except seend.Error as e:
        t.eq(e.index, 0, "the first key failed")
        t.contains(str(e), "cannot forget", "the reason")
        t.ok(e.address in [nodes.addr(i) for i in range(3)],
             "the node: %r" % e.address)
    c.close()


@test
def cluster_true_reads_the_table_first_and_false_never_follows(t):
    nodes = Nodes(t)
    keys = urls(3000, "table")
    c = seend.Client(nodes.addr(1), cluster=True)
    same(t, c.seen_many(keys), [False] * len(keys), "seen_many")
    t.eq(c.cluster.redirections, 0, "no redirection")
    c.close()
    n = seend.Client(nodes.addr(1), cluster=False)
    k = next(k for k in keys if nodes.shard(k) != 1)
    try:
        n.seen_many([keys[0], k])
        raise Failed("cluster=False followed a redirection")
    except seend.Error as e:
        t.contains(str(e), "MOVED %d 127.0.0.1:%d" % (
            keyslot(k), nodes.servers[nodes.shard(k)].port), "the MOVED")
        t.eq(e.index, 1 if nodes.shard(keys[0]) == 1 else 0, "its index")
    t.eq(n.cluster, None, "not following")
    n.close()


@test
def a_seed_on_a_unix_socket_follows_to_the_tcp_nodes(t):
    nodes = Nodes(t, unix=True)
    keys = urls(2000, "unix")
    c = seend.Client(address(nodes.servers[2], unix=True))
    same(t, c.seen_many(keys), [False] * len(keys), "seen_many")
    same(t, c.check_many(keys), [True] * len(keys), "check_many")
    t.eq(sum(nodes.count(i) for i in range(3)), len(keys), "counts")
    c.close()


@test
def over_tls_the_client_follows_to_the_tls_ports(t):
    p = pki(t)
    nodes = Nodes(t, tls=p)
    keys = urls(5000, "tls")
    ctx = seend.ssl_context(cafile=p.ca)
    for follow in (None, True):
        c = seend.Client("127.0.0.1:%d" % nodes.servers[0].tport,
                         ssl_context=ctx,
                         cluster=follow)
        same(t, c.seen_many(keys), [follow is True] * len(keys),
             "seen_many over TLS")
        t.eq(sorted(c.cluster.slots()), sorted(
            "127.0.0.1:%d" % s.tport for s in nodes.servers),
            "the table names the TLS ports")
        t.ok(all(x.ssl_context is ctx for x in c.cluster.clients),
             "every node's connection is TLS")
        c.close()
    t.eq(sum(nodes.count(i) for i in range(3)), len(keys), "counts")


@test
def a_newer_map_is_followed(t):
    nodes = Nodes(t)
    c = seend.Client(nodes.addr(0), cluster=True)
    same(t, c.seen_many(urls(1000, "before")), [False] * 1000, "before")
    # the first node's slots go to the second
    moved = [None, [(0, 10922)], RANGES[2]]
    nodes.push(nodes.text(2, moved))
    keys = urls(3000, "after")
    same(t, c.seen_many(keys), [False] * len(keys), "after the change")
    t.ok(c.cluster.redirections > 0, "redirected")
    t.eq(sorted(c.cluster.slots().items()),
         sorted([(nodes.addr(1), [(0, 10922)]),
                 (nodes.addr(2), [RANGES[2]])]), "the table read again")
    t.eq(nodes.answered_new(0), sum(1 for k in urls(1000, "before")
                                    if nodes.shard(k) == 0),
         "nothing new went to the node without slots")
    c.close()


@test
def clusterdown_raises_and_the_other_keys_are_answered(t):
    nodes = Nodes(t)
    nodes.push(nodes.text(2, [RANGES[0], RANGES[1], None]))
    keys = urls(1500, "down")
    served = [k for k in keys if nodes.shard(k) in (0, 1)]
    lost = [k for k in keys if nodes.shard(k) == 2]
    for follow in (None, True):
        batch = served[:100] + lost[:1] + served[100:200] + lost[1:2]
        c = seend.Client(nodes.addr(0), cluster=follow)
        try:
            c.seen_many(batch)
            raise Failed("a key of an unserved slot was answered")
        except seend.Error as e:
            t.contains(str(e), "CLUSTERDOWN", "the reason")
            t.eq(e.index, 100, "the first unserved key")
            if follow:
                same(t, e.replies[:100] + e.replies[101:201], [False] * 200,
                     "the served keys were answered")
                t.eq([e.replies[100], e.replies[201]], [None, None],
                     "no answer for the unserved keys")
        c.close()
        served = served[200:]


@test
def a_lost_node_raises_naming_it_and_nothing_is_resent(t):
    # another node than the seed, and the seed itself
    lost_mid_batch(t, 0, True)
    lost_mid_batch(t, 2, None)


def lost_mid_batch(t, seed, follow):
    """Node 2 dies with a batch in flight through a client seeded with
    node seed."""
    nodes = Nodes(t, name="seed%d-" % seed)
    keys = urls(30000, "lost")
    c = seend.Client(nodes.addr(seed), cluster=follow)
    same(t, c.seen_many(keys[:100]), [False] * 100, "before")
    lost = nodes.servers[2]
    # a node that dies with the batch in flight
    result = {}

    def call():
        try:
            result["ok"] = c.seen_many(keys[100:], batch=len(keys))
        except Exception as e:  # noqa: BLE001 - what it raised is the test
            result["err"] = e
    lost.send_signal(signal.SIGSTOP)
    th = threading.Thread(target=call)
    th.start()
    t.ok(wait_until(lambda: all(nodes.count(i) > 100 for i in (0, 1)), 10),
         "the other nodes answer")
    lost.kill9()
    th.join(30)
    t.ok(not th.is_alive(), "the call returned")
    e = result.get("err")
    t.ok(isinstance(e, seend.ConnectionError), "ConnectionError: %r"
         % result)
    t.eq(e.address, nodes.addr(2), "the node named")
    rest = keys[100:]
    first = next(i for i, k in enumerate(rest) if nodes.shard(k) == 2)
    same(t, e.replies, [False] * first, "replies up to the lost node's first")
    same(t, e.answers, [None if nodes.shard(k) == 2 else False
                        for k in rest], "every answer that came")
    # nothing was sent again: the other nodes recorded each key once
    t.eq([nodes.count(i) for i in (0, 1)],
         [sum(1 for k in keys if nodes.shard(k) == i) for i in (0, 1)],
         "the other nodes' counts")
    lost.start()
    same(t, c.check_many(rest), [nodes.shard(k) != 2 for k in rest],
         "after the restart: the lost node's keys were not recorded")
    c.close()


@test
def bad_keys_are_refused_before_anything_is_sent(t):
    nodes = Nodes(t)
    c = seend.Client(nodes.addr(0), cluster=True)
    for bad in (["ok", "has space"], ["ok", ""], ["x\ny"]):
        try:
            c.seen_many(bad)
            raise Failed("%r accepted" % bad)
        except ValueError:
            pass
    t.eq(sum(nodes.count(i) for i in range(3)), 0, "nothing recorded")
    c.close()


class FakeNode:
    """A line-protocol node on a free port: CLUSTER SLOTS says it owns
    every slot; each SEEN is answered by reply(key, times seen before)."""

    def __init__(self, reply):
        self.reply = reply
        self.seen = {}
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,),
                             daemon=True).start()

    def serve(self, conn):
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                out = []
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    w = line.decode().split()
                    if w[:2] == ["CLUSTER", "SLOTS"]:
                        out.append("0 16383 127.0.0.1:%d\r\nEND" % self.port)
                    else:
                        n = self.seen.get(w[-1], 0)
                        self.seen[w[-1]] = n + 1
                        out.append(self.reply(w[-1], n))
                conn.sendall("".join(x + "\r\n" for x in out).encode())

    def close(self):
        self.ls.close()


@test
def tryagain_is_retried_and_endless_redirections_fail(t):
    def tryagain(key, n):
        if key.endswith("1") and n < 3:
            return "ERR TRYAGAIN Multiple keys request during rehashing"
        return "0" if n == (3 if key.endswith("1") else 0) else "1"
    f = FakeNode(tryagain)
    c = seend.Client("127.0.0.1:%d" % f.port, cluster=True)
    t.eq(c.seen_many(["a0", "a1", "a2"]), [False] * 3, "TRYAGAIN retried")
    t.eq(f.seen, {"a0": 1, "a1": 4, "a2": 1}, "only the refused key again")
    c.close()
    f.close()
    loop = FakeNode(lambda key, n: "ERR MOVED %d 127.0.0.1:%d"
                    % (keyslot(key), loop.port))
    c = seend.Client("127.0.0.1:%d" % loop.port)
    try:
        c.seen_many(["b0", "b1"])
        raise Failed("endless redirections answered")
    except seend.Error as e:
        t.contains(str(e), "too many redirections", "the reason")
        t.eq(e.replies, [None, None], "no answers")
    c.close()
    loop.close()


if __name__ == "__main__":
    run()
