#!/usr/bin/python3
"""move_bench - a fourth node added to a three-node seend cluster and the
cluster rebalanced onto it under load (issue 33, step 4): the time to move
a quarter of the filter, the writers' latency during the move, the URLs
answered new again, and each node's memory before and after. A benchmark,
not a test: it prints figures.

    /usr/bin/python3 bench/move_bench.py [--build DIR] [--keys 100000000]
        [--error-rate 0.01] [--fillers 2] [--writers 2] [--verify 2000000]
        [--replica] [--keep DIR]

--build (default: the current directory) must hold src/seend and
src/seen-cli. Four seend in cluster mode (listen 127.0.0.1:PORT, their
own data_dir, the default journal and snapshots, [filter.default]
capacity --keys x 1.1 at --error-rate, growth off); seen-cli cluster
create of the first three, --keys URLs recorded ("SETNX <url> 1",
"https://www.host<h>.example/item/<n>", pipelined by --fillers processes
that send each URL to its slot's owner: CRC16 by binascii.crc_hqx, as
Redis Cluster's), then add-node of the fourth; then --writers processes
record fresh URLs one at a time through redis-py's RedisCluster (as a
crawler would), retrying a URL on any error, while "seen-cli cluster
rebalance --use-empty-masters --yes" runs; they go on 2 s after it ends.

Figures: the rebalance's wall time and slots moved; the writers' requests
during it, their latency (p50, p99, max; a retried request counts from
its first try), errors retried; URLs answered new again: every writer URL
and --verify URLs of the fill (evenly spread) asked again with SETNX
through the new map, any "1" counted; each node's RSS and INFO default's
bytes and count before and after (the old nodes should free what they
gave: their RSS falls by about the quarter's share).

--replica gives the fourth node a replica (a fifth seend, add-node
--replica-of) before the rebalance: each group of slots then waits, in
its pause, for the replica to take the moved slots (from the stream, or
by a full sync from a seend before that); printed: the full syncs the
fourth node served during the move, and the replica's count against its
primary's.
"""
import argparse
import binascii
import multiprocessing
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_bench import free_port, wait_port, log  # noqa: E402


def start_seend(a, d, name, capacity):
    nd = os.path.join(d, name)
    os.makedirs(nd)
    port = free_port()
    conf = os.path.join(nd, "seend.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "log_level = info\n[cluster]\nenabled = on\n"
                "[filter.default]\ncapacity = %d\nerror_rate = %g\n"
                "growth = off\n" % (port, nd, capacity, a.error_rate))
    exe = os.path.join(d, "mvb")
    if not os.path.exists(exe):
        os.symlink(os.path.abspath(os.path.join(a.build, "src", "seend")),
                   exe)
    p = subprocess.Popen([exe, "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(nd, "log"), "w"))
    wait_port(port, p, "seend " + name)
    return p, port


def cli(a, *args):
    r = subprocess.run([os.path.join(a.build, "src", "seen-cli")] +
                       list(args), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=7200)
    if r.returncode != 0:
        sys.exit("seen-cli %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def owners(port):
    """slot -> port of its owner, from CLUSTER SLOTS of one node."""
    import redis
    r = redis.Redis(port=port, socket_timeout=30)
    try:
        got = r.execute_command("CLUSTER", "SLOTS")
    finally:
        r.close()
    table = [0] * 16384
    for rng in got:
        for s in range(int(rng[0]), int(rng[1]) + 1):
            table[s] = int(rng[2][1])
    return table


def fill_url(n):
    return b"https://www.host%d.example/item/%d" % (n % 100003, n)


def resp(words):
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        out.append(b"$%d\r\n%s\r\n" % (len(w), w))
    return b"".join(out)


def read_replies(f, n):
    """n integer replies: how many were 1."""
    ones = 0
    for _ in range(n):
        line = f.readline()
        if line[:1] != b":":
            raise RuntimeError("reply %r" % line)
        ones += line[1:2] == b"1"
    return ones


def send_round(socks, files, table, cmd, numbers):
    """cmd (SETNX: with a value) of the URLs of the given numbers, each
    pipelined to its slot's owner (table: slot -> port, socks and files
    by port): the count of replies "1"."""
    bufs = {p: [] for p in socks}
    for m in numbers:
        u = fill_url(m)
        p = table[binascii.crc_hqx(u, 0) & 16383]
        bufs[p].append(resp([cmd, u, b"1"] if cmd == b"SETNX" else [cmd, u]))
    for p, b in bufs.items():
        if b:
            socks[p].sendall(b"".join(b))
    return sum(read_replies(files[p], len(b)) for p, b in bufs.items())


def filler(table, ports, lo, hi, step, batch, cmd, out):
    """SETNX (or cmd) of URLs lo, lo+step, ... < hi, each to its owner,
    batch URLs a round: the count of replies "1" into out."""
    socks = {p: socket.create_connection(("127.0.0.1", p)) for p in ports}
    files = {p: s.makefile("rb") for p, s in socks.items()}
    ones = 0
    n = lo
    while n < hi:
        ones += send_round(socks, files, table, cmd,
                           range(n, min(hi, n + batch * step), step))
        n += batch * step
    out.put(ones)


def fill(a, ports, table, lo, hi, step, cmd):
    q = multiprocessing.Queue()
    procs = [multiprocessing.Process(
        target=filler, args=(table, ports, lo + i * step, hi,
                             step * a.fillers, 2000, cmd, q))
             for i in range(a.fillers)]
    for p in procs:
        p.start()
    ones = sum(q.get() for _ in procs)
    for p in procs:
        p.join()
    return ones


def writer(i, ports, stop, out):
    """Fresh URLs one at a time through RedisCluster until stop: their
    (url, answer) and each request's latency from its first try."""
    import logging
    from redis.cluster import ClusterNode, RedisCluster
    logging.getLogger("redis").setLevel(logging.CRITICAL)
    rc, k, acked, lat, errors = None, 0, [], [], 0
    while not stop.is_set():
        u = "https://w%d.example/p/%d" % (i, k)
        t0 = time.perf_counter()
        got = None
        # a URL refused until the end (a part full: "ERR full default")
        # is given up, not acknowledged
        while not stop.is_set():
            try:
                if rc is None:
                    rc = RedisCluster(startup_nodes=[
                        ClusterNode("127.0.0.1", p) for p in ports],
                        socket_timeout=10)
                got = rc.setnx(u, "1")
                break
            except Exception:
                # RedisError and OSError, and what redis-py 4.3's
                # RedisCluster raises while it follows a MOVED on a
                # refresh ("cannot pickle '_thread.lock' object"): a new
                # client, as the tests' writers do
                errors += 1
                rc = None
                time.sleep(0.01)
        if got is None:
            break
        lat.append((t0, time.perf_counter() - t0))
        acked.append((u, got))
        k += 1
    out.put((acked, lat, errors))


def filter_info(port, name=b"default", then=b""):
    """The line protocol's INFO <filter> ("name value" lines, then END; on
    RESP, INFO default is Redis's default sections) as a dict, and the
    first line answering the command then, if given."""
    f = {}
    with socket.create_connection(("127.0.0.1", port), 30) as sk:
        sk.sendall(b"INFO " + name + b"\n" + (then + b"\n" if then else b""))
        rd = sk.makefile("rb")
        for line in rd:
            line = line.decode().strip()
            if line == "END" or line.startswith("ERR"):
                break
            k, _, v = line.partition(" ")
            f[k] = v
        more = rd.readline().decode().strip() if then else None
    return f, more


def node_stats(port, pid):
    """RSS (KiB), and INFO default's bytes and count (filter_info)."""
    f, _ = filter_info(port)
    with open("/proc/%d/status" % pid) as st:
        rss = next(int(l.split()[1]) for l in st if l.startswith("VmRSS"))
    return rss, int(f.get("bytes", 0)), int(f.get("count", 0)), \
        filter_rss(pid, int(f.get("bytes", 0)))


def filter_rss(pid, nbytes):
    """The resident KiB of the filter's bit array: the mappings of
    /proc/PID/smaps as big as INFO's bytes (the process's RSS also holds
    the buffers a move's images passed through, which glibc keeps)."""
    size = rss = total = 0
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1])
            elif line.startswith("Rss:") and nbytes and \
                    abs(size * 1024 - nbytes) < 4 << 20:
                total += int(line.split()[1])
    return total


def info_number(port, section, field):
    """A number of a node's INFO section (RESP "field:value" lines)."""
    import redis
    r = redis.Redis(port=port, socket_timeout=30)
    try:
        return int(r.info(section)[field])
    finally:
        r.close()


def add_replica(a, d, ports, capacity):
    """A fifth seend, the fourth node's replica: (process, port)."""
    import redis
    pr, port = start_seend(a, d, "n4", capacity)
    r = redis.Redis(port=ports[3], socket_timeout=30)
    target = r.execute_command("CLUSTER", "MYID").decode()
    r.close()
    cli(a, "cluster", "add-node", "127.0.0.1:%d" % port,
        "127.0.0.1:%d" % ports[0], "--replica-of", target)
    deadline = time.monotonic() + 600
    while info_number(ports[3], "replication", "connected_slaves") < 1 or \
            filter_info(port)[0].get("count") != \
            filter_info(ports[3])[0].get("count"):
        if time.monotonic() > deadline:
            sys.exit("the replica did not catch up")
        time.sleep(0.5)
    return pr, port


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=".")
    ap.add_argument("--keys", type=float, default=1e8)
    ap.add_argument("--error-rate", type=float, default=0.01)
    ap.add_argument("--fillers", type=int, default=2)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--verify", type=float, default=2e6)
    ap.add_argument("--replica", action="store_true")
    ap.add_argument("--keep")
    a = ap.parse_args()
    keys = int(a.keys)
    d = a.keep or tempfile.mkdtemp(prefix="move-bench-")
    nodes = []
    try:
        for i in range(4):
            nodes.append(start_seend(a, d, "n%d" % i, int(keys * 1.1)))
        ports = [p for _, p in nodes]
        cli(a, "cluster", "create", *["127.0.0.1:%d" % p
                                      for p in ports[:3]], "--yes")
        time.sleep(1)
        table = owners(ports[0])
        log("filling %d URLs" % keys)
        t0 = time.monotonic()
        new = fill(a, ports[:3], table, 0, keys, 1, b"SETNX")
        log("filled in %.0f s (%d new)" % (time.monotonic() - t0, new))
        cli(a, "cluster", "add-node", "127.0.0.1:%d" % ports[3],
            "127.0.0.1:%d" % ports[0])
        time.sleep(1)
        if a.replica:
            nodes.append(add_replica(a, d, ports, int(keys * 1.1)))
            full0 = info_number(ports[3], "stats", "sync_full")
        before = [node_stats(p, pr.pid) for pr, p in nodes]
        stop = multiprocessing.Event()
        q = multiprocessing.Queue()
        # daemons: a failed step (cli's sys.exit) must not wait for them
        ws = [multiprocessing.Process(target=writer,
                                      args=(i, ports[:3], stop, q),
                                      daemon=True)
              for i in range(a.writers)]
        for w in ws:
            w.start()
        time.sleep(2)
        log("rebalancing")
        m0 = time.perf_counter()
        out = cli(a, "cluster", "rebalance", "127.0.0.1:%d" % ports[0],
                  "--use-empty-masters", "--yes")
        m1 = time.perf_counter()
        time.sleep(2)
        stop.set()
        res = [q.get() for _ in ws]
        for w in ws:
            w.join()
        moved = sum(int(x) for x in
                    __import__("re").findall(r"(\d+) slot\(s\) moved", out))
        time.sleep(1)
        after = [node_stats(p, pr.pid) for pr, p in nodes]
        acked = [x for r in res for x in r[0]]
        lat = [l for r in res for t, l in r[1] if m0 <= t <= m1]
        errors = sum(r[2] for r in res)
        table = owners(ports[0])
        # every writer URL, and --verify fill URLs, asked again
        import redis
        from redis.cluster import ClusterNode, RedisCluster
        rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p)
                                         for p in ports], socket_timeout=30)
        again_w = sum(rc.setnx(u, "1") for u, _ in acked)
        rc.close()
        step = max(1, keys // int(a.verify))
        again_f = fill(a, ports, table, 0, keys, step, b"SETNX")
        first_seen = sum(1 for _, g in acked if not g)
        print("machine: %s, %d CPUs; %s" % (platform.node(),
                                             os.cpu_count(),
                                             platform.platform()))
        print("keys %d at error_rate %g; rebalance: %d slots moved in %.1f s"
              % (keys, a.error_rate, moved, m1 - m0))
        print("writers: %d requests during the move, p50 %.2f ms, p99 "
              "%.2f ms, max %.1f ms; %d errors retried; %d of %d fresh "
              "URLs first answered seen (false positives)" %
              (len(lat), pct(lat, 50) * 1e3, pct(lat, 99) * 1e3,
               max(lat or [0]) * 1e3, errors, first_seen, len(acked)))
        print("answered new again: %d of %d writer URLs, %d of %d fill "
              "URLs asked" % (again_w, len(acked), again_f,
                              len(range(0, keys, step))))
        if a.replica:
            rport = nodes[4][1]
            deadline = time.monotonic() + 60
            while filter_info(rport)[0].get("count") != \
                    filter_info(ports[3])[0].get("count") and \
                    time.monotonic() < deadline:
                time.sleep(0.2)
            print("the fourth node's replica: %d full sync(s) served "
                  "during the move; its count %s, its primary's %s" %
                  (info_number(ports[3], "stats", "sync_full") - full0,
                   filter_info(rport)[0].get("count"),
                   filter_info(ports[3])[0].get("count")))
        for i, (b, f) in enumerate(zip(before, after)):
            print("node %d: RSS %d -> %d MiB, the filter's resident pages "
                  "%d -> %d MiB (of %d MiB mapped), count %d -> %d" %
                  (i, b[0] >> 10, f[0] >> 10, b[3] >> 10, f[3] >> 10,
                   f[1] >> 20, b[2], f[2]))
    finally:
        for pr, _ in nodes:
            pr.terminate()
        for pr, _ in nodes:
            pr.wait()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
