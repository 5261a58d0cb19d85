#!/usr/bin/python3
"""window_move_bench - moving the slots of a partitioned filter with a
window (expire): its slices are periods, and each moves into the target's
slice of the same period (cluster_move.h). How long a reshard takes, the
slices it adds on the target, the URLs seen after it, and whether the
first period's URLs are forgotten on time on their new node. A benchmark,
not a test: it prints figures.

    /usr/bin/python3 bench/window_move_bench.py [--build DIR]
        [--period 5] [--periods 6] [--per-period 200000] [--fillers 2]
        [--capacity 1000000] [--keep DIR]

--build (default: the current directory) must hold src/seend and
src/seen-cli. Two seend in cluster mode (listen 127.0.0.1:PORT, their own
data_dir, the default journal and snapshots, log_level info) whose
[filter.default] has capacity --capacity (per window) at error_rate 0.01,
growth 2 and expire 8 x --period seconds, made one cluster by "seen-cli
cluster create --yes" (node 0 owns slots 0-8191). --periods periods of
--period seconds each record --per-period URLs ("SETNX <url> 1",
move_bench.py's URLs and fillers: each URL to its slot's owner), starting
at a period's start; the last period holds node 0's URLs alone, so that
node 1 lacks it and takes its slices between older and newer ones. Then
"seen-cli cluster reshard <node 0> --from <id0> --to <id1> --slots 8192
--yes" moves every slot to node 1.

Figures: the reshard's wall time; INFO default's slices, count and bytes
of each node before and after; the URLs answered seen after the move
(EXISTS of every URL recorded: all must be); then, once 9 periods have
passed since the first period's start, the share of the first period's
URLs still answered seen (false positives of the live slices: a few per
cent at most) against the last period's (all).
"""
import argparse
import binascii
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_bench import free_port, wait_port, log  # noqa: E402
from move_bench import (cli, fill, fill_url, filter_info,  # noqa: E402
                        owners, send_round)


def start_seend(a, d, name):
    nd = os.path.join(d, name)
    os.makedirs(nd)
    port = free_port()
    conf = os.path.join(nd, "seend.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "log_level = info\n[cluster]\nenabled = on\n"
                "[filter.default]\ncapacity = %d\nerror_rate = 0.01\n"
                "growth = 2\nexpire = %ds\n" % (port, nd, a.capacity,
                                               8 * a.period))
    p = subprocess.Popen([os.path.join(a.build, "src", "seend"), "-c", conf],
                         stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(nd, "log"), "w"))
    wait_port(port, p, "seend " + name)
    return p, port


def info(port):
    """INFO default (line protocol) and the node's ID."""
    return filter_info(port, then=b"CLUSTER MYID")


def next_period(p):
    now = time.time()
    start = (int(now) // p + 1) * p
    time.sleep(start - now + 0.05)
    return start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=".")
    ap.add_argument("--period", type=int, default=5)
    ap.add_argument("--periods", type=int, default=6)
    ap.add_argument("--per-period", type=int, default=200000)
    ap.add_argument("--capacity", type=int, default=1000000)
    ap.add_argument("--fillers", type=int, default=2)
    ap.add_argument("--keep")
    a = ap.parse_args()
    if a.periods < 2 or a.periods > 7:
        sys.exit("--periods: 2 to 7 (all live at the move)")
    d = a.keep or tempfile.mkdtemp(prefix="window-move-")
    procs = []
    try:
        nodes = [start_seend(a, d, "n%d" % i) for i in range(2)]
        procs = [p for p, _ in nodes]
        ports = [port for _, port in nodes]
        cli(a, "cluster", "create", *["127.0.0.1:%d" % p for p in ports],
            "--yes")
        table = owners(ports[0])
        log("%s, %s; window %d s (periods of %d s), %d URLs a period, "
            "capacity %d a window" % (platform.node(), platform.machine(),
                                      8 * a.period, a.period, a.per_period,
                                      a.capacity))
        n = a.per_period
        first = next_period(a.period)
        for k in range(a.periods - 1):
            if k:
                next_period(a.period)
            t0 = time.time()
            fill(a, ports, table, k * n, (k + 1) * n, 1, b"SETNX")
            log("period %d: %d URLs in %.2f s" % (k, n, time.time() - t0))
        # the last period: node 0's URLs alone (node 1 lacks the period)
        next_period(a.period)
        last = a.periods - 1
        mine = [m for m in range(last * n, (last + 2) * n)
                if table[binascii.crc_hqx(fill_url(m), 0) & 16383] ==
                ports[0]][:n // 2]
        t0 = time.time()
        fill_only(a, ports, table, mine)
        log("period %d: %d URLs of node 0 alone in %.2f s" %
            (last, len(mine), time.time() - t0))
        before = [info(p) for p in ports]
        for (i, _), p in zip(before, ports):
            log("before: node %d slices %s count %s bytes %s" %
                (p, i["slices"], i["count"], i["bytes"]))
        t0 = time.time()
        out = cli(a, "cluster", "reshard", "127.0.0.1:%d" % ports[0],
                  "--from", before[0][1], "--to", before[1][1], "--slots",
                  "8192", "--yes")
        took = time.time() - t0
        log("reshard of 8192 slots: %.2f s (%d groups); %.1f s into the "
            "window of %d s" % (took, out.count("Moving slots"),
                                time.time() - first, 8 * a.period))
        after = [info(p) for p in ports]
        for (i, _), p in zip(after, ports):
            log("after: node %d slices %s count %s bytes %s" %
                (p, i["slices"], i["count"], i["bytes"]))
        table = owners(ports[1])
        ones = fill(a, ports, table, 0, last * n, 1, b"EXISTS")
        ones += exists_only(a, ports, table, mine)
        total = last * n + len(mine)
        log("seen after the move: %d of %d URLs (%d answered new)" %
            (ones, total, total - ones))
        wait = first + 9 * a.period + 0.5 - time.time()
        log("waiting %.1f s for the first period to expire" % wait)
        time.sleep(max(0, wait))
        gone = fill(a, ports, table, 0, n, 1, b"EXISTS")
        kept = exists_only(a, ports, table, mine)
        log("9 periods after the first's start: first period %d of %d "
            "still seen (%.3f %%), last period %d of %d (%.1f s after "
            "the first's start)" % (gone, n, 100.0 * gone / n, kept,
                                    len(mine), time.time() - first))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


def fill_only(a, ports, table, urls, cmd=b"SETNX"):
    """cmd of the given URL numbers (move_bench's URLs), pipelined in
    batches to their owners: the count of replies "1"."""
    socks = {p: socket.create_connection(("127.0.0.1", p)) for p in ports}
    files = {p: s.makefile("rb") for p, s in socks.items()}
    ones = 0
    for i in range(0, len(urls), 2000):
        ones += send_round(socks, files, table, cmd, urls[i:i + 2000])
    for s in socks.values():
        s.close()
    return ones


def exists_only(a, ports, table, urls):
    return fill_only(a, ports, table, urls, b"EXISTS")


if __name__ == "__main__":
    main()
