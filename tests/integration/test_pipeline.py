"""Pipelining: many requests written before any reply is read."""
import random
import socket
import threading

from seendtest import *

BIG = """
[filter.default]
capacity = 1000000
error_rate = 0.001
"""

SMALL = """
[filter.default]
capacity = 10000
error_rate = 0.001

[filter.other]
capacity = 10000
error_rate = 0.001
"""


def raw_socket(s, unix=False):
    if unix:
        sk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sk.connect(s.sock)
    else:
        sk = socket.create_connection(("127.0.0.1", s.port))
    sk.settimeout(30 * SLOW)
    return sk


def pipeline(sk, data, nreplies):
    """
    Writes all of data from a thread while reading; returns the first
    nreplies reply lines (str, without CRLF) and whatever came after them.
    """
    err = []

    def writer():
        try:
            sk.sendall(data)
        except OSError as e:
            err.append(e)

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    buf = bytearray()
    lines = []
    while len(lines) < nreplies:
        chunk = sk.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
        end = buf.rfind(b"\r\n")
        if end >= 0:
            lines.extend(bytes(buf[:end]).split(b"\r\n"))
            del buf[:end + 2]
    w.join(30 * SLOW)
    if err:
        raise Failed("writing the pipeline: %s" % err[0])
    extra = bytes(buf) + b"\r\n".join(l for l in lines[nreplies:])
    return [l.decode(errors="replace") for l in lines[:nreplies]], extra


def repeat_pattern(n, prefix):
    """
    Requests for n keys, each sent twice, in blocks of 64 (k0..k63, k0..k63,
    k64..): the expected reply is 0 the first time and 1 the second.
    """
    reqs, want = [], []
    for b in range(0, n, 64):
        block = ["SEEN https://%s.example/%d\n" % (prefix, i)
                 for i in range(b, min(b + 64, n))]
        reqs += block + block
        want += ["0"] * len(block) + ["1"] * len(block)
    return "".join(reqs).encode(), want


def check_repeats(t, got, want, what):
    t.eq(len(got), len(want), "%s: number of replies" % what)
    bad = [(i, g) for i, (g, w) in enumerate(zip(got, want))
           if g not in ("0", "1")]
    t.ok(not bad, "%s: replies that are neither 0 nor 1 (index, reply): %r"
         % (what, bad[:5]))
    false_neg = [i for i, (g, w) in enumerate(zip(got, want))
                 if w == "1" and g != "1"]
    t.ok(not false_neg, "%s: %d repeats answered 0 (first at %r)"
         % (what, len(false_neg), false_neg[:5]))
    firsts = sum(1 for w in want if w == "0")
    false_pos = sum(1 for g, w in zip(got, want) if w == "0" and g == "1")
    # capacity 1M at error_rate 0.001: ~0 expected among 50k new keys
    t.ok(false_pos < firsts * 0.005, "%s: %d of %d new keys answered 1"
         % (what, false_pos, firsts))


@test
def pipeline_of_100k_requests_is_answered_in_order(t):
    with Server(t, filters=BIG) as s:
        data, want = repeat_pattern(50000, "tcp")
        t.eq(len(want), 100000)
        sk = raw_socket(s)
        got, extra = pipeline(sk, data, len(want))
        check_repeats(t, got, want, "100k pipeline")
        t.eq(extra, b"", "bytes after the last reply")
        # the connection is still in step
        sk.sendall(b"PING\n")
        t.eq(sk.recv(100), b"PONG\r\n", "PING after the pipeline")
        sk.close()
        c = s.client()
        info = c.info()
        t.eq(int(info["keys_new"]) + int(info["keys_seen"]), 100000,
             "keys_new + keys_seen")


@test
def scalar_and_avx2_batches_set_the_same_bits(t):
    """
    SEEND_NO_AVX2 makes the pipelined batches use the scalar block
    operations: a filter filled one way and restarted the other way (its
    snapshot holds the bits as set) answers every key it was given, in
    both directions, and the pipeline's own repeats too. Where the CPU has no
    AVX2 both ways are the scalar one and this still holds.
    """
    d = t.path("ways")
    ways = [("scalar", {"SEEND_NO_AVX2": "1"}), ("avx2", {}),
            ("scalar", {"SEEND_NO_AVX2": "1"})]
    earlier = []
    for n, (way, env) in enumerate(ways):
        s = Server(t, filters=BIG, data_dir=d, env=env,
                   name="%s%d" % (way, n)).start()
        sk = raw_socket(s)
        if earlier:
            # every key of the earlier runs, asked by CHECK: all seen
            data = "".join("CHECK %s\n" % k for k in earlier).encode()
            got, _ = pipeline(sk, data, len(earlier))
            missed = [k for k, g in zip(earlier, got) if g != "1"]
            t.ok(len(got) == len(earlier) and not missed,
                 "%s after %s: %d of %d earlier keys not seen (first %r)"
                 % (way, ways[n - 1][0], len(missed), len(earlier),
                    missed[:3]))
        data, want = repeat_pattern(10000, "%s%d" % (way, n))
        got, extra = pipeline(sk, data, len(want))
        check_repeats(t, got, want, "%s pipeline" % way)
        earlier += ["https://%s%d.example/%d" % (way, n, i)
                    for i in range(10000)]
        sk.close()
        s.stop()                # the bits as set, in the snapshot at exit


@test
def pipeline_over_the_unix_socket_is_answered_in_order(t):
    with Server(t, filters=BIG) as s:
        data, want = repeat_pattern(20000, "unix")
        sk = raw_socket(s, unix=True)
        got, extra = pipeline(sk, data, len(want))
        check_repeats(t, got, want, "unix pipeline")
        t.eq(extra, b"", "bytes after the last reply")
        sk.close()


@test
def mixed_commands_in_a_pipeline_are_answered_in_order(t):
    with Server(t, filters=SMALL) as s:
        reqs = ("PING\n"
                "CHECK k1\n"
                "SEEN k1\n"
                "\n"
                "CHECK k1\n"
                "INFO\n"
                "SEEN k1\n"
                "FROB\n"
                "INFO default\n"
                "SEEN other k1\n"
                "FILTERS\n"
                "SEEN other k1\n"
                "SEEN nosuch k1\n"
                "CHECK other k1\n"
                "PING\n")
        reqs = reqs * 50
        c = s.client()
        c.send(reqs)
        for rnd in range(50):
            first = rnd == 0
            t.eq(c.line(), "PONG", "round %d: PING" % rnd)
            t.eq(c.line(), "0" if first else "1", "round %d: CHECK k1" % rnd)
            t.eq(c.line(), "0" if first else "1", "round %d: SEEN k1" % rnd)
            t.eq(c.line(), "1", "round %d: CHECK k1 after SEEN" % rnd)
            info = c.lines_until_end()
            t.ok(any(l.startswith("version ") for l in info),
                 "round %d: INFO: %r" % (rnd, info[:3]))
            # SEEN k1 before it; from round 1 on also SEEN other k1
            t.ok(("keys_new %d" % (1 if first else 2)) in info,
                 "round %d: INFO keys_new counts the SEEN before it" % rnd)
            t.eq(c.line(), "1", "round %d: SEEN k1 again" % rnd)
            l = c.line()
            t.ok(l.startswith("ERR unknown command"), "round %d: FROB: %r"
                 % (rnd, l))
            info = c.lines_until_end()
            t.ok("count 1" in info, "round %d: INFO default: %r"
                 % (rnd, info[:5]))
            t.eq(c.line(), "0" if first else "1", "round %d: SEEN other" % rnd)
            fl = c.lines_until_end()
            t.eq(len(fl), 2, "round %d: FILTERS: %r" % (rnd, fl))
            t.ok(fl[1 if fl[1].startswith("other ") else 0]
                 .find(" count=1 ") > 0, "round %d: FILTERS counts: %r"
                 % (rnd, fl))
            t.eq(c.line(), "1", "round %d: SEEN other again" % rnd)
            l = c.line()
            t.ok(l.startswith("ERR "), "round %d: SEEN nosuch: %r" % (rnd, l))
            t.eq(c.line(), "1", "round %d: CHECK other" % rnd)
            t.eq(c.line(), "PONG", "round %d: last PING" % rnd)
        t.eq(c.cmd("PING"), "PONG", "after the pipeline")
        t.eq(c.buf, b"", "stray bytes")


@test
def info_counters_match_the_answers_of_a_long_pipeline(t):
    # plain SEEN/CHECK lines are answered many at a time and counted a
    # batch at a time; the counters must still be exact, and a line the
    # batch cannot take (a tab, a filter name) must land in order
    with Server(t, filters=SMALL) as s:
        c = s.client()
        keys = ["https://count.example/%d" % (i % 700) for i in range(1000)]
        reqs = ["SEEN %s\r\n" % k for k in keys]
        reqs += ["CHECK %s\n" % k for k in keys[:400]]
        reqs += ["check https://none.example/%d\n" % i for i in range(100)]
        reqs.insert(500, "SEEN\thttps://count.example/tab\n")
        reqs.insert(900, "SEEN default https://count.example/named\n")
        c.send("".join(reqs))
        got = [c.line() for _ in range(len(reqs))]
        t.eq(got[500], "0", "the SEEN with a tab, in its place")
        t.eq(got[900], "0", "the SEEN with a filter name, in its place")
        seen = got[:1002]
        # 700 distinct keys (the last 300 SEENs repeat the first 300),
        # the tab key and the named key
        t.eq(seen.count("0"), 702, "SEEN answered 0 once per new key")
        t.eq(got[1002:1402], ["1"] * 400, "CHECK of keys seen")
        info = c.info()
        t.eq(info.get("cmd_seen"), "1002", "cmd_seen")
        t.eq(info.get("cmd_check"), "500", "cmd_check")
        t.eq(info.get("commands_total"), str(len(reqs) + 1),
             "commands_total (with the INFO)")
        t.eq(info.get("keys_new"), str(seen.count("0")), "keys_new")
        t.eq(info.get("keys_seen"), str(seen.count("1")), "keys_seen")
        checks = got[1002:]
        t.eq(info.get("check_hits"), str(checks.count("1")), "check_hits")
        t.eq(info.get("check_misses"), str(checks.count("0")),
             "check_misses")


@test
def save_in_a_pipeline_keeps_replies_in_order(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        c.send("SEEN a\nSAVE\nSEEN a\nSEEN b\nSAVE default\nPING\nCHECK b\n")
        t.eq([c.line() for _ in range(7)],
             ["0", "OK", "1", "0", "OK", "PONG", "1"])


@test
def pipeline_split_at_random_points_is_answered_whole(t):
    with Server(t, filters=SMALL) as s:
        rng = random.Random(7)
        reqs, want = [], []
        for i in range(1500):
            k = "https://split.example/%d" % (i // 2)
            reqs.append(("SEEN %s\r\n" if i % 3 else "SEEN %s\n") % k)
            want.append("0" if i % 2 == 0 else "1")
        data = "".join(reqs).encode()
        sk = raw_socket(s)
        sk.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pieces, i = [], 0
        while i < len(data):
            n = rng.choice([1, 2, 3, 5, 8, 13, 100, 1000])
            pieces.append(data[i:i + n])
            i += n

        got = []

        def reader():
            buf = b""
            while len(got) < len(want):
                chunk = sk.recv(65536)
                if not chunk:
                    return
                buf += chunk
                *done, buf = buf.split(b"\r\n")
                got.extend(l.decode() for l in done)

        r = threading.Thread(target=reader, daemon=True)
        r.start()
        for p in pieces:
            sk.sendall(p)
        r.join(30 * SLOW)
        t.eq(len(got), len(want), "number of replies")
        for i, (g, w) in enumerate(zip(got, want)):
            if w == "1":
                t.eq(g, "1", "reply %d (a repeat)" % i)
            else:
                t.ok(g in ("0", "1"), "reply %d: %r" % (i, g))
        fp = sum(1 for g, w in zip(got, want) if w == "0" and g == "1")
        t.ok(fp < 5, "%d false positives among 750 new keys" % fp)
        sk.close()


if __name__ == "__main__":
    run()
