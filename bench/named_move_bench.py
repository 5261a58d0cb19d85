#!/usr/bin/python3
"""named_move_bench - what moving named filters whole with their slots
costs (seen-cli cluster reshard, cluster_move.h): how long each group of
slots is paused, and how long the source's event loop is held (every
other client waits) while it serializes a large named filter into the
group's image. A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/named_move_bench.py [--build DIR] [--sets 200]
        [--members 5000] [--big-capacity 2e7] [--keep DIR]

--build (default: the current directory) must hold src/seend and
src/seen-cli. Two seend in cluster mode (listen 127.0.0.1:PORT, their own
data_dir in a temporary directory, the default journal and snapshots,
log_level info, [filter.default] capacity 1000000 at error_rate 0.01,
growth off: move_bench.py's start_seend), made one cluster by "seen-cli
cluster create --yes" (node 0 owns slots 0-8191). Named filters are then made, each on its name's slot's owner
(CRC16 by binascii.crc_hqx, as Redis Cluster's):

  - --sets scrapy-redis-like sets "spider<i>:dupefilter", --members
    members "fp-<i>-<j>" each, by pipelined "SADD <set> <1000 members>";
  - one Bloom filter "BF.RESERVE bigbf<k> 0.01 <--big-capacity>", k the
    first whose slot is below 4096 (so that it moves), filled half full
    ("big-<j>") by pipelined "BF.MADD <name> <1000 members>".

Then "seen-cli cluster reshard <node 0> --from <id0> --to <id1> --slots
4096 --yes" moves slots 0-4095 (each named filter on them whole, in
groups of up to 512 slots), while two processes (processes, not threads:
the GIL would add its switch interval to the figures) run from 2 s before
it to 1 s after it:

  - a pinger: "PING" to node 0 on its own connection in a tight loop, each
    round trip timed; its longest during the reshard is the longest the
    source's loop was held (a SLOTBITS serializing the big filter, or any
    other step);
  - a writer: "SADD <set> w-<k>" of fresh members, one at a time, to random
    sets (not the ones sampled for the check below) at their current
    owner: a -MOVED reply is followed at once, a -TRYAGAIN one (the slot is
    paused) retried after 10 ms; a request's latency counts from its first
    try.

Figures: the reshard's wall time; the named filters moved (each node's
KEYS before and after) against those whose slots moved; INFO's bytes of
the big filter; each group's start (seconds from the reshard's) and
pause on the source (its log: from "slots a-b paused" to the next "map
epoch ... taken", ms resolution) and the named filters the target took
whole in it (the target's log); the pinger's round trips during the
reshard (p50, p99, p99.9, max, and when its 5 longest began; p50 and max
in the 2 s before, for comparison); the writer's requests during it
(p50, p99, max, TRYAGAIN retries, MOVED followed) and whether each of
its members is a member afterwards; each node's RSS (VmRSS) before and
after; the time of one "CLUSTER SLOTBITS s s" of the big filter's slot
alone on its new owner afterwards (serialization and transfer of its
image, which the source did with its loop held); and a check: for 20 of
the sets (at most half of them) and the big filter, SMISMEMBER /
BF.MEXISTS of 1000 members and 1000 strangers asked before and after the
move, "identical" or the number of answers that differ.
"""
import argparse
import binascii
import calendar
import multiprocessing
import os
import platform
import random
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_bench import free_port, wait_port, log  # noqa: E402
# two nodes as move_bench starts its four (growth off: [filter.default]
# is not what moves here), and seen-cli the same way
from move_bench import cli, start_seend  # noqa: E402

SLOTS = 16384
MOVING = 4096           # slots 0..MOVING-1 go from node 0 to node 1
BATCH = 1000            # members per SADD / BF.MADD of the fill
SAMPLE = 1000           # members (and as many strangers) per checked filter


# ---- RESP over a socket ----

class Err(str):
    """An error reply (its text, without the "-")."""


def resp(words):
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        if not isinstance(w, bytes):
            w = str(w).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(w), w))
    return b"".join(out)


def read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    t, body = line[:1], line[1:-2]
    if t == b"+":
        return body.decode()
    if t == b"-":
        return Err(body.decode())
    if t == b":":
        return int(body)
    if t == b"$":
        n = int(body)
        return None if n < 0 else f.read(n + 2)[:-2]
    if t == b"*":
        n = int(body)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise RuntimeError("reply %r" % line)


class Conn:
    def __init__(self, port, timeout=600):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def call(self, *words):
        self.s.sendall(resp(words))
        return read_reply(self.f)

    def pipeline(self, cmds):
        """Every command sent, then every reply read."""
        self.s.sendall(b"".join(resp(c) for c in cmds))
        return [read_reply(self.f) for _ in cmds]

    def close(self):
        self.f.close()
        self.s.close()


def slot_of(name):
    return binascii.crc_hqx(name, 0) % SLOTS


# ---- the nodes ----

def owners(port):
    """slot -> port of its owner, from CLUSTER GETMAP's "node <id> <host>
    <port> ..." and "slots <id> a-b ..." lines."""
    c = Conn(port)
    text = c.call("CLUSTER", "GETMAP").decode()
    c.close()
    port_of, table = {}, [0] * SLOTS
    for line in text.splitlines():
        w = line.split()
        if w[:1] == ["node"]:
            port_of[w[1]] = int(w[3])
        elif w[:1] == ["slots"]:
            for rng in w[2:]:
                lo, _, hi = rng.partition("-")
                for s in range(int(lo), int(hi or lo) + 1):
                    table[s] = port_of[w[1]]
    return table


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as st:
        return next(int(l.split()[1]) for l in st if l.startswith("VmRSS"))


def names_on(port):
    c = Conn(port)
    got = c.call("KEYS", "*")
    c.close()
    return {n for n in got if n != b"default"}


def info_field(port, name, field):
    c = Conn(port)
    got = c.call("INFO", name)
    c.close()
    for line in (got or b"").decode().splitlines():
        k, _, v = line.partition(":")
        if k == field:
            return v
    return None


# ---- fill ----

def set_name(i):
    return b"spider%d:dupefilter" % i


def fill_sets(a, ports, table):
    conns = {p: Conn(p) for p in ports}
    for i0 in range(0, a.sets, 10):
        cmds = {p: [] for p in ports}
        for i in range(i0, min(a.sets, i0 + 10)):
            name = set_name(i)
            for j0 in range(0, a.members, BATCH):
                cmds[table[slot_of(name)]].append(
                    [b"SADD", name] + [b"fp-%d-%d" % (i, j) for j in
                                       range(j0, min(a.members, j0 + BATCH))])
        for p, c in cmds.items():
            if c:
                for r in conns[p].pipeline(c):
                    if isinstance(r, Err):
                        sys.exit("SADD: %s" % r)
    for c in conns.values():
        c.close()


def fill_big(port, name, capacity):
    c = Conn(port)
    r = c.call("BF.RESERVE", name, "0.01", str(capacity))
    if isinstance(r, Err):
        sys.exit("BF.RESERVE: %s" % r)
    n, j = capacity // 2, 0
    while j < n:
        cmds = []
        for _ in range(50):
            if j >= n:
                break
            cmds.append([b"BF.MADD", name] +
                        [b"big-%d" % k for k in range(j, min(n, j + BATCH))])
            j += BATCH
        for r in c.pipeline(cmds):
            if isinstance(r, Err):
                sys.exit("BF.MADD: %s" % r)
    c.close()


# ---- the check: answers before and after ----

def probes(a, i):
    """1000 members (evenly spread) and 1000 strangers of set i (None:
    the big filter)."""
    if i is None:
        n = a.big_capacity // 2
        mem = [b"big-%d" % (k * n // SAMPLE) for k in range(min(SAMPLE, n))]
        return mem + [b"stranger-big-%d" % k for k in range(SAMPLE)]
    n = a.members
    mem = [b"fp-%d-%d" % (i, k * n // SAMPLE) for k in
           range(min(SAMPLE, n))]
    return mem + [b"stranger-%d-%d" % (i, k) for k in range(SAMPLE)]


def answers(a, table, sampled, big):
    out = []
    conns = {}
    for i in sampled + [None]:
        name = big if i is None else set_name(i)
        p = table[slot_of(name)]
        if p not in conns:
            conns[p] = Conn(p)
        got = conns[p].call(b"BF.MEXISTS" if i is None else b"SMISMEMBER",
                            name, *probes(a, i))
        if isinstance(got, Err):
            sys.exit("%s: %s" % (name.decode(), got))
        out.append(got)
    for c in conns.values():
        c.close()
    return out


# ---- the load during the move ----

def pinger(port, stop, out):
    """PING round trips until stop: (start, seconds) pairs, flat."""
    s = socket.create_connection(("127.0.0.1", port), 600)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ping = resp([b"PING"])
    rec = array("d")
    clock = time.perf_counter
    n = 0
    while True:
        n += 1
        if n & 255 == 0 and stop.is_set():
            break
        t0 = clock()
        s.sendall(ping)
        got = b""
        while not got.endswith(b"\r\n"):
            got += s.recv(64)
        rec.append(t0)
        rec.append(clock() - t0)
    s.close()
    out.put(rec.tobytes())


def writer(ports, table, sets, stop, out):
    """One fresh member at a time to a random set of sets at its owner
    until stop: ((start, seconds) pairs, TRYAGAIN retries, MOVED followed,
    (set, member) written)."""
    conns = {}
    rnd = random.Random(7)
    lat, tryagain, moved, written, k = array("d"), 0, 0, [], 0
    clock = time.perf_counter
    while not stop.is_set():
        i = rnd.choice(sets)
        name, member = set_name(i), b"w-%d" % k
        slot = slot_of(name)
        t0 = clock()
        while True:
            p = table[slot]
            try:
                if p not in conns:
                    conns[p] = Conn(p, 30)
                r = conns[p].call(b"SADD", name, member)
            except OSError:
                conns.pop(p, None)
                time.sleep(0.01)
                continue
            if not isinstance(r, Err):
                break
            if r.startswith("MOVED "):
                table[slot] = int(r.split()[2].rpartition(":")[2])
                moved += 1
            elif r.startswith("TRYAGAIN"):
                tryagain += 1
                time.sleep(0.01)
            else:
                sys.stderr.write("writer: %s\n" % r)
                time.sleep(0.01)
        lat.append(t0)
        lat.append(clock() - t0)
        written.append((i, k))
        k += 1
    out.put((lat.tobytes(), tryagain, moved, written))


def pairs(raw):
    x = array("d")
    x.frombytes(raw)
    return [(x[i], x[i + 1]) for i in range(0, len(x), 2)]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else 0


# ---- the nodes' logs ----

STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ")


def stamp(line):
    m = STAMP.match(line)
    if not m:
        return None
    t = time.strptime(m.group(1).split(".")[0], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) + float("0." + m.group(1).split(".")[1])


def pauses(d):
    """Each group's pause on node 0: [(first, last, seconds, named filters
    the target took whole, its start (Unix time))]."""
    groups, cur = [], None
    with open(os.path.join(d, "n0", "log")) as f:
        for line in f:
            m = re.search(r"slots (\d+)-(\d+) paused for", line)
            if m:
                cur = [int(m.group(1)), int(m.group(2)), stamp(line)]
            elif cur and re.search(r"cluster: map epoch \d+ taken", line):
                groups.append([cur[0], cur[1], stamp(line) - cur[2], 0,
                               cur[2]])
                cur = None
    taken = []
    with open(os.path.join(d, "n1", "log")) as f:
        for line in f:
            m = re.search(r"filter (\S+) arrived whole with its slot (\d+)",
                          line)
            if m:
                taken.append(int(m.group(2)))
    for g in groups:
        g[3] = sum(1 for s in taken if g[0] <= s <= g[1])
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=".")
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--members", type=int, default=5000)
    ap.add_argument("--big-capacity", type=float, default=2e7)
    ap.add_argument("--keep")
    a = ap.parse_args()
    a.big_capacity = int(a.big_capacity)
    a.error_rate = 0.01     # [filter.default]'s, for start_seend
    print("machine: %s, %d CPUs (nproc %s); %s" % (
        platform.node(), os.cpu_count(), len(os.sched_getaffinity(0)),
        platform.platform()))
    print("command: %s" % " ".join(shlex.quote(x) for x in
                                  [sys.executable] + sys.argv))
    sys.stdout.flush()
    d = a.keep or tempfile.mkdtemp(prefix="named-move-bench-")
    nodes = []
    try:
        for i in range(2):
            nodes.append(start_seend(a, d, "n%d" % i, 1000000))
        ports = [p for _, p in nodes]
        cli(a, "cluster", "create", *["127.0.0.1:%d" % p for p in ports],
            "--yes")
        time.sleep(1)
        ids = []
        for p in ports:
            c = Conn(p)
            ids.append(c.call("CLUSTER", "MYID").decode())
            c.close()
        table = owners(ports[0])
        big = next(b"bigbf%d" % k for k in range(100000)
                   if slot_of(b"bigbf%d" % k) < MOVING)

        log("filling %d sets of %d members" % (a.sets, a.members))
        t0 = time.monotonic()
        fill_sets(a, ports, table)
        log("sets filled in %.1f s; %s: %d members" %
            (time.monotonic() - t0, big.decode(), a.big_capacity // 2))
        t0 = time.monotonic()
        fill_big(table[slot_of(big)], big, a.big_capacity)
        log("big filter filled in %.1f s" % (time.monotonic() - t0))
        big_bytes = info_field(table[slot_of(big)], big, "bytes")
        big_count = info_field(table[slot_of(big)], big, "count")
        set_bytes = info_field(table[slot_of(set_name(0))], set_name(0),
                               "bytes")

        rnd = random.Random(1)
        sampled = sorted(rnd.sample(range(a.sets),
                                    min(20, max(1, a.sets // 2))))
        others = [i for i in range(a.sets) if i not in sampled] or sampled
        before_ans = answers(a, table, sampled, big)
        names_before = [names_on(p) for p in ports]
        moving = {n for n in names_before[0] if slot_of(n) < MOVING}
        rss_before = [rss_kib(pr.pid) for pr, _ in nodes]

        stop = multiprocessing.Event()
        qp, qw = multiprocessing.Queue(), multiprocessing.Queue()
        pp = multiprocessing.Process(target=pinger,
                                     args=(ports[0], stop, qp))
        wp = multiprocessing.Process(target=writer,
                                     args=(ports, table, others, stop, qw))
        pp.start()
        wp.start()
        time.sleep(2)
        log("resharding %d slots" % MOVING)
        m0 = time.perf_counter()
        wall0 = time.time() - m0    # perf_counter -> Unix time
        out = cli(a, "cluster", "reshard", "127.0.0.1:%d" % ports[0],
                  "--from", ids[0], "--to", ids[1], "--slots", str(MOVING),
                  "--yes")
        m1 = time.perf_counter()
        time.sleep(1)
        stop.set()
        ping = pairs(qp.get())
        wlat, tryagain, moved, written = qw.get()
        wlat = pairs(wlat)
        pp.join()
        wp.join()
        time.sleep(2)   # the source drops what it gave at its tick

        table = owners(ports[0])
        after_ans = answers(a, table, sampled, big)
        names_after = [names_on(p) for p in ports]
        rss_after = [rss_kib(pr.pid) for pr, _ in nodes]
        # the writer's members, asked again
        conns = {p: Conn(p) for p in ports}
        found = 0
        for x in range(0, len(written), 500):
            cmds = {p: [] for p in ports}
            for i, k in written[x:x + 500]:
                name = set_name(i)
                cmds[table[slot_of(name)]].append(
                    [b"SMISMEMBER", name, b"w-%d" % k])
            for p, c in cmds.items():
                if c:
                    found += sum(r[0] for r in conns[p].pipeline(c))
        # the big filter's slot alone, serialized by its new owner
        bp = table[slot_of(big)]
        s0 = time.perf_counter()
        img = conns[bp].call("CLUSTER", "SLOTBITS", slot_of(big),
                             slot_of(big))
        s1 = time.perf_counter()
        for c in conns.values():
            c.close()

        moved_names = moving & names_after[1]
        left = {n for n in names_after[0] if slot_of(n) < MOVING}
        nsets = len(moving) - (big in moving)
        groups = pauses(d)
        during = [l for t, l in ping if m0 <= t <= m1]
        calm = [l for t, l in ping if t < m0]
        wdur = [l for t, l in wlat if m0 <= t <= m1]
        diff = sum(x != y for b, f in zip(before_ans, after_ans)
                   for x, y in zip(b, f))

        print("cluster: 2 nodes; %d sets x %d members (INFO bytes %s "
              "each), %s: BF.RESERVE 0.01 %d, %s members (INFO bytes %s = "
              "%.1f MiB), slot %d" %
              (a.sets, a.members, set_bytes, big.decode(), a.big_capacity,
               big_count, big_bytes, int(big_bytes or 0) / 2 ** 20,
               slot_of(big)))
        print("reshard of slots 0-%d: %.2f s wall; named filters moved: "
              "%d of %d on the slots moved (%d sets and %s), %d left on "
              "node 0's moved slots; node 0 holds %d -> %d named, node 1 "
              "%d -> %d" %
              (MOVING - 1, m1 - m0, len(moved_names), len(moving), nsets,
               big.decode() if big in moving else "no big filter",
               len(left), len(names_before[0]), len(names_after[0]),
               len(names_before[1]), len(names_after[1])))
        for g in groups:
            print("  group %d-%d: at +%.2f s, paused %.0f ms on node 0, "
                  "%d named filter(s) taken whole%s" %
                  (g[0], g[1], g[4] - wall0 - m0, g[2] * 1e3, g[3],
                   " (with %s)" % big.decode()
                   if g[0] <= slot_of(big) <= g[1] else ""))
        if groups:
            print("pauses: longest %.0f ms, total %.0f ms of %d groups" %
                  (max(g[2] for g in groups) * 1e3,
                   sum(g[2] for g in groups) * 1e3, len(groups)))
        print("pinger (PING to node 0, own connection): %d round trips "
              "during the reshard, p50 %.3f ms, p99 %.3f ms, p99.9 %.2f ms, "
              "max %.1f ms; before it: %d, p50 %.3f ms, max %.2f ms" %
              (len(during), pct(during, 50) * 1e3, pct(during, 99) * 1e3,
               pct(during, 99.9) * 1e3, max(during or [0]) * 1e3,
               len(calm), pct(calm, 50) * 1e3, max(calm or [0]) * 1e3))
        print("pinger's 5 longest round trips during the reshard: %s" %
              ", ".join("%.1f ms at +%.2f s" % (l * 1e3, t - m0) for t, l in
                        sorted(((t, l) for t, l in ping if m0 <= t <= m1),
                               key=lambda x: -x[1])[:5]))
        print("writer (SADD one member, random set): %d requests during "
              "the reshard, p50 %.3f ms, p99 %.1f ms, max %.1f ms; %d "
              "TRYAGAIN retries, %d MOVED followed; %d of the %d members "
              "it wrote found after" %
              (len(wdur), pct(wdur, 50) * 1e3, pct(wdur, 99) * 1e3,
               max(wdur or [0]) * 1e3, tryagain, moved, found,
               len(written)))
        print("SLOTBITS %d %d on the new owner afterwards (%s alone): "
              "%.1f MiB in %.0f ms" %
              (slot_of(big), slot_of(big), big.decode(),
               len(img) / 2 ** 20 if isinstance(img, bytes) else 0,
               (s1 - s0) * 1e3))
        for i in range(2):
            print("node %d: RSS %d -> %d MiB" %
                  (i, rss_before[i] >> 10, rss_after[i] >> 10))
        print("check (%d sampled sets + %s, %d members + %d strangers "
              "each, before vs after): %s" %
              (len(sampled), big.decode(), SAMPLE, SAMPLE,
               "identical" if diff == 0 else
               "%d answers differ" % diff))
        print("seen-cli's last line: %s" % out.strip().splitlines()[-1])
    finally:
        for pr, _ in nodes:
            pr.terminate()
        for pr, _ in nodes:
            pr.wait()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
