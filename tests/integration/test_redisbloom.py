"""
RedisBloom's BF.* commands answer as RedisBloom 2.4 does, byte for byte,
for every reply a client acts on (RESP2), and in RedisBloom 2.6's RESP3
forms after HELLO 3 (booleans, BF.INFO a map). No RedisBloom module is
packaged for this machine, so the expected bytes are pinned from
RedisBloom's source (src/rebloom.c, src/sb.c of v2.4.23, v2.6.28 and
v2.8.20) and its tests/flow (test_overall.py, test_resp3.py).

Deliberate differences, checked here as seend's own behaviour (seend(8)
lists them): Size is the bytes of the bit arrays; a growing filter plans
each slice for a tighter rate than RedisBloom (its rate stays under the
one asked for at any fill); EXPANSION is at most 1024 and under 1 gets
RedisBloom 2.6's error; filters created without parameters take
new_filter_* from the config.

Bloom filters promise nothing exact about keys never added: every test
that counts answers uses error rates of 1e-9 (a false positive among a
few thousand keys: under 1e-5), or bounds with 3 sigma of margin.
"""
import math
import os
import signal
import socket
import time

from seendtest import *

redis = system_module("redis")

FULL = b"-ERR non scaling filter is full\r\n"
ARITY = b"-ERR wrong number of arguments for '%s' command\r\n"


def enc(*words):
    w = [x if isinstance(x, bytes) else str(x).encode() for x in words]
    return b"*%d\r\n" % len(w) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x)
                                          for x in w)


class Conn:
    """A RESP connection that reads exactly one whole reply per request
    (whatever the timing), as raw bytes."""

    def __init__(self, port, resp3=False):
        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=10 * SLOW)
        self.buf = b""
        if resp3:
            got = self.cmd("HELLO", "3")
            if not got.startswith(b"%"):
                raise Failed("HELLO 3: %r" % got)

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise Failed("connection closed; have %r" % self.buf)
        self.buf += chunk

    def _line(self, i):
        while True:
            j = self.buf.find(b"\r\n", i)
            if j >= 0:
                return j + 2
            self._more()

    def _value(self, i):
        """The end of the one value starting at buf[i]."""
        while len(self.buf) <= i:
            self._more()
        t = self.buf[i:i + 1]
        end = self._line(i)
        head = self.buf[i + 1:end - 2]
        if t in (b"+", b"-", b":", b"_", b"#", b","):
            return end
        if t in (b"$", b"=", b"!"):
            n = int(head)
            if n < 0:
                return end
            while len(self.buf) < end + n + 2:
                self._more()
            return end + n + 2
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(head)
            if t in (b"%", b"|"):
                n *= 2
            for _ in range(max(n, 0)):
                end = self._value(end)
            return end
        raise Failed("not RESP: %r" % self.buf[i:])

    def reply(self):
        end = self._value(0)
        got, self.buf = self.buf[:end], self.buf[end:]
        return got

    def cmd(self, *words):
        self.s.sendall(enc(*words))
        return self.reply()

    def close(self):
        self.s.close()


def check_cases(t, conn, cases, label):
    for case in cases:
        words, want = case[0], case[1]
        got = conn.cmd(*words)
        t.eq(got, want, "%s: %s" % (label, " ".join(str(w) for w in words)))


def info_pairs(b):
    """BF.INFO's RESP2 reply as a list of (name, value bytes)."""
    lines = b.split(b"\r\n")
    t_ok = lines[0] == b"*10"
    if not t_ok:
        raise Failed("BF.INFO reply %r" % b)
    out = []
    i = 1
    while i < len(lines) - 1:
        name = lines[i][1:].decode()
        if lines[i + 1] == b"$-1":
            out.append((name, None))
        else:
            out.append((name, int(lines[i + 1][1:])))
        i += 2
    return out


def bf_info(conn, name):
    return dict(info_pairs(conn.cmd("BF.INFO", name)))


def info_bytes(cap, size, nf, items, exp):
    e = b"$-1\r\n" if exp is None else b":%d\r\n" % exp
    return (b"*10\r\n+Capacity\r\n:%d\r\n+Size\r\n:%d\r\n+Number of filters"
            b"\r\n:%d\r\n+Number of items inserted\r\n:%d\r\n+Expansion rate"
            b"\r\n" % (cap, size, nf, items) + e)


def info_bytes3(cap, size, nf, items, exp):
    e = b"_\r\n" if exp is None else b":%d\r\n" % exp
    return (b"%%5\r\n+Capacity\r\n:%d\r\n+Size\r\n:%d\r\n+Number of filters"
            b"\r\n:%d\r\n+Number of items inserted\r\n:%d\r\n+Expansion rate"
            b"\r\n" % (cap, size, nf, items) + e)


def size_of(conn, name):
    got = conn.cmd("BF.INFO", name, "SIZE")
    if not got.startswith(b"*1\r\n:"):
        raise Failed("BF.INFO %s SIZE: %r" % (name, got))
    return int(got[5:-2])


@test
def every_bf_command_answers_as_redisbloom_2_4_in_resp2(t):
    with Server(t) as s:
        c = Conn(s.port)
        check_cases(t, c, [
            # BF.RESERVE: RedisBloom's checks, in its order
            (["BF.RESERVE", "bf", "0.01", "1000"], b"+OK\r\n"),
            (["BF.RESERVE", "bf", "0.01", "1000"], b"-ERR item exists\r\n"),
            (["bf.reserve", "bf"], ARITY % b"bf.reserve"),
            (["BF.RESERVE", "bf", "0.01"], ARITY % b"bf.reserve"),
            (["BF.RESERVE", "x", "0.01", "10", "a", "b", "c", "d"],
             ARITY % b"bf.reserve"),
            (["BF.RESERVE", "x", "blah", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "x", "nan", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "x", " 0.1", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "x", "0.1x", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "x", "", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "x", "7.7", "1000"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "x", "1", "1000"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "x", "0", "100"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "x", "-0.1", "100"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "x", "inf", "100"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "x", "0.01", "blah"], b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "x", "0.01", "+100"], b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "x", "0.01", "0100"], b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "x", "0.01", "1e3"], b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "x", "0.01", str(4294967296 * 4294967296)],
             b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "x", "0.01", "0"],
             b"-ERR (capacity should be larger than 0)\r\n"),
            (["BF.RESERVE", "x", "0.01", "-5"],
             b"-ERR (capacity should be larger than 0)\r\n"),
            (["BF.RESERVE", "x", "0.01", "10", "EXPANSION"],
             b"-ERR no expansion\r\n"),
            (["BF.RESERVE", "x", "0.01", "10", "NONSCALING", "expansion"],
             b"-ERR no expansion\r\n"),
            (["BF.RESERVE", "x", "0.01", "10", "expansion", "str"],
             b"-ERR bad expansion\r\n"),
            (["BF.RESERVE", "x", "0.01", "10", "EXPANSION", "2",
              "NONSCALING"], b"-Nonscaling filters cannot expand\r\n"),
            (["BF.RESERVE", "x", "0.01", "10", "nonscaling", "EXPANSION",
              "2"], b"-Nonscaling filters cannot expand\r\n"),
            (["BF.RESERVE", "bf", "0.01", "10", "EXPANSION", "x"],
             b"-ERR bad expansion\r\n"),
            # words RedisBloom does not know are ignored, as there
            (["BF.RESERVE", "r1", "0.01", "10", "FOO"], b"+OK\r\n"),
            (["BF.RESERVE", "r2", "0.01", "10", "EXPANSION", "3", "BAR"],
             b"+OK\r\n"),
            (["BF.RESERVE", "r3", "0.01", "10", "nonscaling"], b"+OK\r\n"),
            # BF.ADD / BF.MADD: 1 new, 0 seen; created on demand
            (["BF.ADD", "bf", "foo"], b":1\r\n"),
            (["BF.ADD", "bf", "foo"], b":0\r\n"),
            (["bf.add", "bf"], ARITY % b"bf.add"),
            (["BF.ADD", "bf", "1", "2"], ARITY % b"bf.add"),
            (["BF.MADD", "bf", "foo", "bar", "baz"],
             b"*3\r\n:0\r\n:1\r\n:1\r\n"),
            (["BF.MADD", "bf", "new1", "new1"], b"*2\r\n:1\r\n:0\r\n"),
            (["BF.MADD", "bf"], ARITY % b"bf.madd"),
            (["BF.ADD", "auto", "x"], b":1\r\n"),
            (["BF.MADD", "auto2", "x", "y"], b"*2\r\n:1\r\n:1\r\n"),
            # BF.EXISTS / BF.MEXISTS: a missing filter holds nothing
            (["BF.EXISTS", "bf", "foo"], b":1\r\n"),
            (["BF.EXISTS", "bf", "nonexist"], b":0\r\n"),
            (["BF.EXISTS", "nosuch", "foo"], b":0\r\n"),
            (["BF.EXISTS", "bf"], ARITY % b"bf.exists"),
            (["BF.EXISTS", "bf", "1", "2"], ARITY % b"bf.exists"),
            (["BF.MEXISTS", "bf", "foo", "nonexist", "bar"],
             b"*3\r\n:1\r\n:0\r\n:1\r\n"),
            (["BF.MEXISTS", "nosuch", "foo", "bar", "baz"],
             b"*3\r\n:0\r\n:0\r\n:0\r\n"),
            (["BF.MEXISTS", "bf"], ARITY % b"bf.mexists"),
            # BF.CARD
            (["BF.CARD", "bf"], b":4\r\n"),
            (["BF.CARD", "nosuch"], b":0\r\n"),
            (["BF.CARD"], ARITY % b"bf.card"),
            # BF.INSERT
            (["BF.INSERT", "ins", "CAPACITY", "100", "ERROR", "0.01",
              "ITEMS", "x", "y", "x"], b"*3\r\n:1\r\n:1\r\n:0\r\n"),
            (["BF.INSERT", "ins", "ITEMS", "x", "z"], b"*2\r\n:0\r\n:1\r\n"),
            (["BF.INSERT", "missing", "NOCREATE", "ITEMS", "foo", "bar"],
             b"-ERR not found\r\n"),
            (["BF.INSERT", "missing", "DONTEXIST", "NOCREATE"],
             b"-Unknown argument received\r\n"),
            (["BF.INSERT", "missing", "", "ITEMS", "x"],
             b"-Unknown argument received\r\n"),
            (["BF.INSERT", "missing"], ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "ITEMS"], ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "NOCREATE", "ITEMS"],
             ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "NOCREATE", "CAPACITY"],
             ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "NOCREATE", "ERROR"],
             ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "NONSCALING", "NOCREATE"],
             ARITY % b"bf.insert"),
            (["BF.INSERT", "missing", "CAPACITY", "0.3"],
             b"-Bad capacity\r\n"),
            (["BF.INSERT", "missing", "ERROR", "big"], b"-Bad error rate\r\n"),
            (["BF.INSERT", "missing", "EXPANSION", "big"],
             b"-Bad expansion\r\n"),
            (["BF.INSERT", "missing", "EXPANSION", "0", "ITEMS", "foo"],
             b"-Bad argument received\r\n"),
            (["BF.INSERT", "missing", "CAPACITY", "0", "ITEMS", "foo"],
             b"-Bad argument received\r\n"),
            (["BF.INSERT", "missing", "ERROR", "0", "ITEMS", "foo"],
             b"-Bad argument received\r\n"),
            (["BF.INSERT", "missing", "ERROR", "1", "ITEMS", "foo"],
             b"-Bad argument received\r\n"),
            # checked even when the filter exists, as RedisBloom does
            (["BF.INSERT", "ins", "ERROR", "1", "ITEMS", "foo"],
             b"-Bad argument received\r\n"),
            (["BF.INSERT", "missing", "ERROR", "0.001", "CAPACITY", "50000",
              "EXPANSION", "2", "ITEMS", "foo"], b"*1\r\n:1\r\n"),
            # BF.INFO
            (["BF.INFO", "bf", "CAPACITY"], b"*1\r\n:1000\r\n"),
            (["BF.INFO", "bf", "capacity"], b"*1\r\n:1000\r\n"),
            (["BF.INFO", "bf", "FILTERS"], b"*1\r\n:1\r\n"),
            (["BF.INFO", "bf", "ITEMS"], b"*1\r\n:4\r\n"),
            (["BF.INFO", "bf", "EXPANSION"], b"*1\r\n:2\r\n"),
            (["BF.INFO", "r2", "EXPANSION"], b"*1\r\n:3\r\n"),
            (["BF.INFO", "r3", "EXPANSION"], b"*1\r\n$-1\r\n"),
            (["BF.INFO", "bf", "wrong_value"],
             b"-Invalid information value\r\n"),
            (["BF.INFO", "bf", "capacity", "size"], ARITY % b"bf.info"),
            (["BF.INFO"], ARITY % b"bf.info"),
            (["BF.INFO", "nosuch"], b"-ERR not found\r\n"),
            (["BF.INFO", "nosuch", "CAPACITY"], b"-ERR not found\r\n"),
        ], "RESP2")
        sz = size_of(c, "bf")
        t.ok(sz > 0, "Size %d" % sz)
        t.eq(c.cmd("BF.INFO", "bf"), info_bytes(1000, sz, 1, 4, 2),
             "BF.INFO bf")
        t.eq(c.cmd("BF.INFO", "r3"), info_bytes(10, size_of(c, "r3"), 1, 0,
                                                None),
             "BF.INFO of a NONSCALING filter: Expansion rate null")
        c.close()


@test
def resp3_after_hello_3_answers_in_redisbloom_2_6_forms(t):
    with Server(t) as s:
        c = Conn(s.port, resp3=True)
        check_cases(t, c, [
            (["BF.RESERVE", "bf", "0.000000001", "1000"], b"+OK\r\n"),
            (["BF.ADD", "bf", "item"], b"#t\r\n"),
            (["BF.ADD", "bf", "item"], b"#f\r\n"),
            (["BF.CARD", "bf"], b":1\r\n"),
            (["BF.EXISTS", "bf", "item"], b"#t\r\n"),
            (["BF.EXISTS", "bf", "nope"], b"#f\r\n"),
            (["BF.EXISTS", "nosuch", "nope"], b"#f\r\n"),
            (["BF.INSERT", "bf", "ITEMS", "item2", "item3", "item2"],
             b"*3\r\n#t\r\n#t\r\n#f\r\n"),
            (["BF.MADD", "bf", "item4", "item5", "item2"],
             b"*3\r\n#t\r\n#t\r\n#f\r\n"),
            (["BF.MEXISTS", "bf", "item4", "item5", "item6"],
             b"*3\r\n#t\r\n#t\r\n#f\r\n"),
            (["BF.MEXISTS", "nosuch", "a"], b"*1\r\n#f\r\n"),
            (["BF.ADD", "fresh", "x"], b"#t\r\n"),
            (["BF.INFO", "bf", "CAPACITY"], b"%1\r\n+Capacity\r\n:1000\r\n"),
            (["BF.INFO", "bf", "FILTERS"],
             b"%1\r\n+Number of filters\r\n:1\r\n"),
            (["BF.INFO", "bf", "ITEMS"],
             b"%1\r\n+Number of items inserted\r\n:5\r\n"),
            (["BF.INFO", "bf", "EXPANSION"],
             b"%1\r\n+Expansion rate\r\n:2\r\n"),
            (["BF.RESERVE", "ns", "0.000000001", "2", "NONSCALING"],
             b"+OK\r\n"),
            (["BF.INFO", "ns", "EXPANSION"],
             b"%1\r\n+Expansion rate\r\n_\r\n"),
            (["BF.MADD", "ns", "a", "b", "c", "d"],
             b"*3\r\n#t\r\n#t\r\n" + FULL),
            (["BF.ADD", "ns", "c"], FULL),
            (["BF.ADD", "ns", "a"], b"#f\r\n"),
            (["BF.INSERT", "ns", "ITEMS", "a", "c", "b"],
             b"*2\r\n#f\r\n" + FULL),
            # errors are the same in both protocols
            (["BF.INFO", "nosuch"], b"-ERR not found\r\n"),
            (["BF.INFO", "bf", "nope"], b"-Invalid information value\r\n"),
            (["BF.INSERT", "x", "NOCREATE", "ITEMS", "a"],
             b"-ERR not found\r\n"),
            (["BF.RESERVE", "bf", "0.01", "10"], b"-ERR item exists\r\n"),
        ], "RESP3")
        sz = size_of3 = c.cmd("BF.INFO", "bf", "SIZE")
        t.ok(sz.startswith(b"%1\r\n+Size\r\n:"), "SIZE in RESP3: %r" % sz)
        size = int(size_of3.split(b"\r\n")[2][1:])
        t.eq(c.cmd("BF.INFO", "bf"), info_bytes3(1000, size, 1, 5, 2),
             "BF.INFO in RESP3: a map")
        nsize = int(c.cmd("BF.INFO", "ns", "SIZE").split(b"\r\n")[2][1:])
        t.eq(c.cmd("BF.INFO", "ns"), info_bytes3(2, nsize, 1, 2, None),
             "BF.INFO of a NONSCALING filter in RESP3")
        t.eq(c.cmd("HELLO", "2")[:1], b"*", "HELLO 2")
        t.eq(c.cmd("BF.ADD", "bf", "item"), b":0\r\n", "back in RESP2")
        t.eq(c.cmd("BF.INFO", "bf"), info_bytes(1000, size, 1, 5, 2),
             "BF.INFO back in RESP2")
        c.close()


@test
def a_pipeline_of_bf_add_answers_booleans_in_resp3(t):
    # BF.ADD on an existing filter takes seend's batch path: its answers
    # must be RESP3 booleans there too
    with Server(t) as s:
        for proto in (2, 3):
            c = Conn(s.port, resp3=proto == 3)
            name = "p%d" % proto
            t.eq(c.cmd("BF.RESERVE", name, "0.000000001", "10000"),
                 b"+OK\r\n")
            yes, no = (b"#t\r\n", b"#f\r\n") if proto == 3 else \
                (b":1\r\n", b":0\r\n")
            for rnd, want in ((0, yes), (1, no)):
                c.s.sendall(b"".join(enc("BF.ADD", name, "k%d" % i)
                                     for i in range(300)))
                got = [c.reply() for _ in range(300)]
                t.eq(set(got), {want}, "RESP%d pipeline of BF.ADD, pass %d"
                     % (proto, rnd + 1))
            c.close()


@test
def madd_and_insert_on_a_full_fixed_filter_answer_per_item(t):
    # RedisBloom's test_nonscaling_err, and what it means for a crawler:
    # the items before the full point are recorded (and answer seen
    # afterwards), the failing one is an error in its place, the ones
    # after it are not looked at
    with Server(t) as s:
        c = Conn(s.port)
        t.eq(c.cmd("BF.INSERT", "ne", "CAPACITY", "3", "ERROR", "1e-9",
                   "NONSCALING", "ITEMS", "a", "b", "c"),
             b"*3\r\n:1\r\n:1\r\n:1\r\n")
        t.eq(c.cmd("BF.INSERT", "ne", "ITEMS", "a", "b", "c", "d", "d"),
             b"*4\r\n:0\r\n:0\r\n:0\r\n" + FULL, "RedisBloom's case")
        t.eq(c.cmd("BF.INFO", "ne"), info_bytes(3, size_of(c, "ne"), 1, 3,
                                                None))
        t.eq(c.cmd("BF.ADD", "ne", "e"), FULL, "BF.ADD of a new item")
        t.eq(c.cmd("BF.ADD", "ne", "b"), b":0\r\n", "BF.ADD of a held item")
        t.eq(c.cmd("BF.EXISTS", "ne", "d"), b":0\r\n", "d was refused")

        cap = 1000
        t.eq(c.cmd("BF.RESERVE", "fix", "0.000000001", cap, "NONSCALING"),
             b"+OK\r\n")
        first = ["u%d" % i for i in range(cap - 5)]
        t.eq(c.cmd("BF.MADD", "fix", *first),
             b"*%d\r\n" % len(first) + b":1\r\n" * len(first))
        # 5 places left: two seen, five new, then the full point
        req = ["u0", "v0", "u1", "v1", "v2", "v3", "v4", "v5", "v6", "u2"]
        t.eq(c.cmd("BF.MADD", "fix", *req),
             b"*8\r\n:0\r\n:1\r\n:0\r\n:1\r\n:1\r\n:1\r\n:1\r\n" + FULL,
             "BF.MADD across the full point")
        # a client that is told "error" for v5 retries it: it is not
        # "seen" (it was never recorded), and nor is anything after it
        t.eq(c.cmd("BF.MEXISTS", "fix", "v0", "v4", "v5", "v6"),
             b"*4\r\n:1\r\n:1\r\n:0\r\n:0\r\n")
        t.eq(c.cmd("BF.ADD", "fix", "v5"), FULL, "the retry: still full")
        t.eq(c.cmd("BF.MADD", "fix", "v0", "v4"), b"*2\r\n:0\r\n:0\r\n")
        t.eq(c.cmd("BF.INSERT", "fix", "ITEMS", "v1", "w1", "v2"),
             b"*2\r\n:0\r\n" + FULL, "BF.INSERT across the full point")
        t.eq(c.cmd("BF.CARD", "fix"), b":%d\r\n" % cap)
        t.eq(c.cmd("BF.INFO", "fix", "ITEMS"), b"*1\r\n:%d\r\n" % cap)
        # the line protocol sees the same filter
        lc = s.client()
        t.eq(lc.cmd("CHECK fix v4"), "1")
        t.eq(lc.cmd("CHECK fix v5"), "0")
        # redis-py: the error is an element of the list, not an exception
        r = redis.Redis(port=s.port)
        got = r.bf().madd("ne", "a", "b", "c", "d", "d")
        t.eq(got[:3], [0, 0, 0], "redis-py madd")
        t.ok(isinstance(got[3], redis.ResponseError) and
             str(got[3]) == "non scaling filter is full",
             "redis-py madd's 4th answer: %r" % (got[3],))
        t.eq(len(got), 4, "redis-py madd length")
        try:
            r.bf().add("ne", "zzz")
            t.ok(False, "BF.ADD on a full filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "non scaling filter is full")
        c.close()


@test
def info_capacity_is_the_sum_of_sub_filters_as_redisbloom_grows(t):
    with Server(t) as s:
        c = Conn(s.port)
        t.eq(c.cmd("BF.RESERVE", "g", "0.000000001", "100"), b"+OK\r\n")
        seq = 0

        def add(n):
            nonlocal seq
            keys = ["k%d" % (seq + i) for i in range(n)]
            seq += n
            got = c.cmd("BF.MADD", "g", *keys)
            t.eq(got, b"*%d\r\n" % n + b":1\r\n" * n, "MADD of %d" % n)

        # RedisBloom adds a sub-filter with the key that needs it: at
        # exactly 100 keys it has one of 100, at 101 two (100 + 200)
        for n, cap, nf in ((99, 100, 1), (1, 100, 1), (1, 300, 2),
                           (199, 300, 2), (1, 700, 3), (400, 1500, 4)):
            add(n)
            info = bf_info(c, "g")
            t.eq((info["Capacity"], info["Number of filters"],
                  info["Number of items inserted"], info["Expansion rate"]),
                 (cap, nf, seq, 2), "after %d keys" % seq)
            t.eq(c.cmd("BF.INFO", "g", "CAPACITY"), b"*1\r\n:%d\r\n" % cap)
            t.eq(c.cmd("BF.INFO", "g", "FILTERS"), b"*1\r\n:%d\r\n" % nf)
        # RedisBloom's test_expansion (at a rate with no false positives
        # its 23 filters of expansion 1 are 25)
        for exp, nf, cap in ((1, 25, 100), (2, 5, 124), (4, 4, 340)):
            name = "exp%d" % exp
            t.eq(c.cmd("BF.RESERVE", name, "0.000000001", "4", "expansion",
                       exp), b"+OK\r\n")
            for i in range(100):
                t.eq(c.cmd("BF.ADD", name, str(i)), b":1\r\n")
            for i in range(100):
                t.eq(c.cmd("BF.EXISTS", name, str(i)), b":1\r\n")
            info = bf_info(c, name)
            t.eq((info["Number of filters"], info["Capacity"],
                  info["Number of items inserted"], info["Expansion rate"]),
                 (nf, cap, 100, exp), name)
        # Size: bytes of the bit arrays, growing with the filters
        t.ok(bf_info(c, "exp4")["Size"] > bf_info(c, "exp2")["Size"] > 0,
             "Size grows with capacity")
        # the same figures after a restart
        before = [c.cmd("BF.INFO", n) for n in ("g", "exp1", "exp2", "exp4")]
        c.close()
        s.stop()
        s.start()
        c = Conn(s.port)
        t.eq([c.cmd("BF.INFO", n) for n in ("g", "exp1", "exp2", "exp4")],
             before, "BF.INFO after a restart")
        c.close()


@test
def bf_insert_takes_options_abbreviated_as_redisbloom_does(t):
    # RedisBloom tells BF.INSERT's options by their first letter (ERROR
    # from EXPANSION by the second, NOCREATE from NONSCALING by the third)
    with Server(t) as s:
        c = Conn(s.port)
        check_cases(t, c, [
            (["BF.INSERT", "a1", "CAP", "10", "ER", "0.000000001", "EXP", "4",
              "I", "x", "y"], b"*2\r\n:1\r\n:1\r\n"),
            (["BF.INFO", "a1", "CAPACITY"], b"*1\r\n:10\r\n"),
            (["BF.INFO", "a1", "EXPANSION"], b"*1\r\n:4\r\n"),
            (["BF.INSERT", "a2", "c", "20", "e", "3", "items", "x"],
             b"*1\r\n:1\r\n"),
            (["BF.INFO", "a2", "CAPACITY"], b"*1\r\n:20\r\n"),
            (["BF.INFO", "a2", "EXPANSION"], b"*1\r\n:3\r\n"),
            # "E" is EXPANSION: a rate there is a bad expansion
            (["BF.INSERT", "a3", "E", "0.2", "I", "x"], b"-Bad expansion\r\n"),
            (["BF.INSERT", "a3", "Errr", "0.2", "I", "x"],
             b"*1\r\n:1\r\n"),
            (["BF.INSERT", "a4", "n", "c", "5", "ITEMZ", "x"],
             b"*1\r\n:1\r\n"),
            (["BF.INFO", "a4", "EXPANSION"], b"*1\r\n$-1\r\n"),
            (["BF.INFO", "a4", "CAPACITY"], b"*1\r\n:5\r\n"),
            (["BF.INSERT", "a5", "NOC", "I", "x"], b"-ERR not found\r\n"),
            (["BF.INSERT", "a5", "noCreate", "i", "x"], b"-ERR not found\r\n"),
            (["BF.INSERT", "a5", "NONS", "I", "x"], b"*1\r\n:1\r\n"),
            (["BF.INFO", "a5", "EXPANSION"], b"*1\r\n$-1\r\n"),
            # NONSCALING with EXPANSION is no error in BF.INSERT
            (["BF.INSERT", "a6", "NONSCALING", "EXPANSION", "4", "ITEMS",
              "x"], b"*1\r\n:1\r\n"),
            (["BF.INFO", "a6", "EXPANSION"], b"*1\r\n$-1\r\n"),
            (["BF.INSERT", "a6", "NOCREATE", "ITEMS", "x", "y"],
             b"*2\r\n:0\r\n:1\r\n"),
            # what follows ITEMS is items, whatever it looks like
            (["BF.INSERT", "a7", "ITEMS", "NOCREATE", "CAPACITY"],
             b"*2\r\n:1\r\n:1\r\n"),
            (["BF.INSERT", "a8", "Zzz", "ITEMS", "x"],
             b"-Unknown argument received\r\n"),
            (["BF.INSERT", "a8", "CAPACITY", "5", "ERROR"],
             ARITY % b"bf.insert"),
            (["BF.INSERT", "a8", "EXPANSION", "5", "NOCREATE"],
             ARITY % b"bf.insert"),
        ], "abbreviated")
        c.close()


@test
def error_rates_and_expansions_redisbloom_accepts_are_accepted(t):
    with Server(t) as s:
        c = Conn(s.port)
        check_cases(t, c, [
            # RedisBloom's test_very_high_error_rate
            (["BF.RESERVE", "bf1", "0.99", "3", "NONSCALING"], b"+OK\r\n"),
            (["BF.ADD", "bf1", "1"], b":1\r\n"),
            (["BF.RESERVE", "bf2", "0.95", "8", "NONSCALING"], b"+OK\r\n"),
            (["BF.ADD", "bf2", "1"], b":1\r\n"),
            (["BF.RESERVE", "bf3", "0.9999999999999999", "100",
              "NONSCALING"], b"+OK\r\n"),
            (["BF.ADD", "bf3", "1"], b":1\r\n"),
            (["BF.RESERVE", "bf4", "0.75", "100"], b"+OK\r\n"),
            (["BF.RESERVE", "bf5", "0.5", "100"], b"+OK\r\n"),
            (["BF.RESERVE", "bf6", "1e-12", "1000"], b"+OK\r\n"),
            (["BF.INSERT", "bi1", "ERROR", "0.9", "ITEMS", "x"],
             b"*1\r\n:1\r\n"),
            (["BF.INSERT", "bi2", "ERROR", "0.0000000001", "ITEMS", "x"],
             b"*1\r\n:1\r\n"),
            # expansions: any from 1 (RedisBloom 2.6's error under 1)
            (["BF.RESERVE", "e1", "0.01", "10", "EXPANSION", "1"], b"+OK\r\n"),
            (["BF.RESERVE", "e17", "0.01", "10", "EXPANSION", "17"],
             b"+OK\r\n"),
            (["BF.RESERVE", "e100", "0.01", "10", "EXPANSION", "100"],
             b"+OK\r\n"),
            (["BF.RESERVE", "e1024", "0.01", "10", "EXPANSION", "1024"],
             b"+OK\r\n"),
            (["BF.RESERVE", "e0", "0.01", "10", "EXPANSION", "0"],
             b"-ERR expansion should be greater or equal to 1\r\n"),
            (["BF.RESERVE", "e0", "0.01", "10", "EXPANSION", "-3"],
             b"-ERR expansion should be greater or equal to 1\r\n"),
            (["BF.INSERT", "i40", "EXPANSION", "40", "ITEMS", "x"],
             b"*1\r\n:1\r\n"),
            (["BF.INFO", "e100", "EXPANSION"], b"*1\r\n:100\r\n"),
            (["BF.INFO", "e1024", "EXPANSION"], b"*1\r\n:1024\r\n"),
            (["BF.INFO", "i40", "EXPANSION"], b"*1\r\n:40\r\n"),
            (["BF.INFO", "e1", "EXPANSION"], b"*1\r\n:1\r\n"),
        ], "bounds")
        # seend's own limit, above anything RedisBloom's docs suggest: a
        # snapshot keeps growth factors up to 1024
        t.eq(c.cmd("BF.RESERVE", "e2000", "0.01", "10", "EXPANSION", "2000"),
             b"-ERR expansion over 1024 is not supported\r\n")
        t.eq(c.cmd("BF.INFO", "e2000"), b"-ERR not found\r\n")
        # a filter of expansion 100 grows by 100
        t.eq(c.cmd("BF.RESERVE", "g100", "0.000000001", "10", "EXPANSION",
                   "100"), b"+OK\r\n")
        t.eq(c.cmd("BF.MADD", "g100", *range(11)), b"*11\r\n" +
             b":1\r\n" * 11)
        info = bf_info(c, "g100")
        t.eq((info["Number of filters"], info["Capacity"]), (2, 10 + 1000),
             "g100 grew by 100")
        # RedisBloom's test_no_scaling: a fixed filter is smaller than a
        # growing one of the same rate
        t.eq(c.cmd("BF.RESERVE", "nsc", "0.001", "1000", "nonscaling"),
             b"+OK\r\n")
        t.eq(c.cmd("BF.RESERVE", "sc", "0.001", "1000"), b"+OK\r\n")
        t.ok(bf_info(c, "nsc")["Size"] < bf_info(c, "sc")["Size"],
             "fixed smaller than growing")
        names = ["bf1", "bf3", "bf4", "bf6", "bi1", "e1024", "i40", "nsc"]
        before = [c.cmd("BF.INFO", n) for n in names]
        c.close()
        # they survive a restart and a reload
        s.stop()
        s.start()
        c = Conn(s.port)
        t.eq([c.cmd("BF.INFO", n) for n in names], before, "after restart")
        t.eq(c.cmd("BF.EXISTS", "bf3", "1"), b":1\r\n")
        s.send_signal(signal.SIGHUP)
        time.sleep(0.5 * SLOW)
        t.eq([c.cmd("BF.INFO", n) for n in names], before, "after SIGHUP")
        c.close()


@test
def false_positive_rate_stays_under_the_rate_asked_for(t):
    # RedisBloom's test_error_rate, with 3 sigma of margin over the rate
    with Server(t) as s:
        c = Conn(s.port)
        added, probes = 1024, 10240
        for rate in (0.1, 0.01, 0.001):
            name = "fp%s" % rate
            t.eq(c.cmd("BF.RESERVE", name, rate, added), b"+OK\r\n")
            c.cmd("BF.MADD", name, *range(added))
            got = c.cmd("BF.MEXISTS", name, *range(added, added + probes))
            fp = got.count(b":1\r\n")
            bound = probes * rate + 3 * math.sqrt(probes * rate * (1 - rate))
            t.ok(fp <= bound, "rate %s: %d false positives in %d (bound %.0f)"
                 % (rate, fp, probes, bound))
            got = c.cmd("BF.MEXISTS", name, *range(added))
            t.eq(got.count(b":1\r\n"), added, "every added item is found")
        c.close()


@test
def a_filter_name_is_not_a_url_key(t):
    # URL keys (SETNX/SET/GET) and filter names are separate namespaces:
    # a name used as both is no WRONGTYPE; every filter is a Bloom filter
    with Server(t) as s:
        c = Conn(s.port)
        t.eq(c.cmd("SETNX", "shared", "1"), b":1\r\n")
        t.eq(c.cmd("BF.RESERVE", "shared", "0.01", "100"), b"+OK\r\n")
        t.eq(c.cmd("BF.ADD", "shared", "x"), b":1\r\n")
        t.eq(c.cmd("BF.INFO", "shared", "ITEMS"), b"*1\r\n:1\r\n")
        t.eq(c.cmd("GET", "shared"), b"$1\r\n1\r\n")
        t.eq(c.cmd("TYPE", "shared"), b"+MBbloom--\r\n")
        # SADD and BF.* name the same filters
        t.eq(c.cmd("SADD", "shared", "y"), b":1\r\n")
        t.eq(c.cmd("BF.EXISTS", "shared", "y"), b":1\r\n")
        t.eq(c.cmd("BF.CARD", "shared"), b":2\r\n")
        c.close()


@test
def redis_py_bf_calls_work(t):
    with Server(t) as s:
        r = redis.Redis(port=s.port)
        bf = r.bf()
        t.eq(bf.create("py", 0.000000001, 1000), True)
        t.eq(bf.create("pyx", 0.01, 1000, expansion=4), True)
        t.eq(bf.create("pyn", 0.01, 1000, noScale=True), True)
        try:
            bf.create("py", 0.01, 1000)
            t.ok(False, "create of an existing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "item exists")
        t.eq(bf.add("py", "x"), 1)
        t.eq(bf.add("py", "x"), 0)
        t.eq(bf.madd("py", "x", "y", "z"), [0, 1, 1])
        t.eq(bf.exists("py", "y"), 1)
        t.eq(bf.exists("py", "nope"), 0)
        t.eq(bf.mexists("py", "x", "nope", "z"), [1, 0, 1])
        t.eq(bf.card("py") if hasattr(bf, "card") else
             r.execute_command("BF.CARD", "py"), 3)
        t.eq(bf.insert("pyi", ["a", "b", "a"], capacity=100,
                       error=0.000000001, expansion=3), [1, 1, 0])
        t.eq(bf.insert("pyi", ["c"], noCreate=True), [1])
        t.eq(bf.insert("pyin", ["a"], capacity=2, error=0.000000001,
                       noScale=True), [1])
        try:
            bf.insert("nosuch", ["a"], noCreate=True)
            t.ok(False, "insert NOCREATE of a missing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "not found")
        info = bf.info("py")
        t.eq((info.capacity, info.filterNum, info.insertedNum,
              info.expansionRate), (1000, 1, 3, 2))
        t.ok(info.size > 0, "Size %r" % info.size)
        t.eq(bf.info("pyx").expansionRate, 4)
        t.eq(bf.info("pyn").expansionRate, None, "NONSCALING: None")
        info = bf.info("pyi")
        t.eq((info.capacity, info.insertedNum, info.expansionRate),
             (100, 3, 3))
        t.eq(bf.info("pyin").expansionRate, None)
        # (r.bf() parses every BF.INFO reply of r as a whole one: a
        # single field is asked on a client without it, as it would be
        # of RedisBloom)
        t.eq(redis.Redis(port=s.port).execute_command("BF.INFO", "pyi",
                                                      "CAPACITY"), [100])
        try:
            bf.info("nosuch")
            t.ok(False, "info of a missing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "not found")
        p = r.pipeline(transaction=False)
        for i in range(500):
            p.execute_command("BF.ADD", "py", "p%d" % (i % 250))
        t.eq(p.execute(), [1] * 250 + [0] * 250, "a pipeline of BF.ADD")


if __name__ == "__main__":
    run()
