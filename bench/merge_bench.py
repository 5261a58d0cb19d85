#!/usr/bin/python3
"""
merge_bench - MERGE of two big filters of different seeds into a new one,
and how long other clients wait meanwhile.  A benchmark, not a test: it
prints figures.

    /usr/bin/python3 bench/merge_bench.py --seend build/src/seend
        [--capacity 100000000] [--keys 1000000] [--runs 3]

Starts a seend (temporary data directory, journal off), creates two
filters sized for --capacity keys at error_rate 0.001 (BF.RESERVE,
NONSCALING: different seeds, so the merge copies one and ORs nothing)
with --keys keys each, then per run sends MERGE into a new name while
another process PINGs back to back; prints the time to the +OK (which
includes writing the new filter's snapshot), the bytes merged per second
of it, and the PING waits (count, longest, 99th percentile).  Every key
of both sources is then checked on the last result.
"""
import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_bench import Pinger, free_port  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seend", required=True)
    ap.add_argument("--capacity", type=int, default=100000000)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    d = tempfile.mkdtemp(prefix="seend-mergebench-")
    port = free_port()
    conf = os.path.join(d, "seend.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s/data\n"
                "journal = off\nsnapshot_interval = 0\n" % (port, d))
    proc = subprocess.Popen([args.seend, "-c", conf],
                            stderr=open(os.path.join(d, "log"), "w"))
    try:
        r = redis.Redis(port=port)
        for _ in range(200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        keys = {}
        for name in ("a", "b"):
            r.execute_command("BF.RESERVE", name, 0.001, args.capacity,
                              "NONSCALING")
            keys[name] = ["https://%s.example/%d" % (name, i)
                          for i in range(args.keys)]
            for i in range(0, args.keys, 20000):
                r.bf().madd(name, *keys[name][i:i + 20000])
        size = r.bf().info("a").size
        print("# two filters of %d bytes, %d keys each" % (size, args.keys))
        print("# %s, %d CPUs, Python %s" % (platform.platform(),
                                            os.cpu_count(),
                                            platform.python_version()))
        rates = []
        for run in range(args.runs):
            p = Pinger(port)
            t = time.perf_counter()
            r.execute_command("MERGE", "u%d" % run, "a", "b")
            dt = time.perf_counter() - t
            n, mx, p99 = p.finish()
            rates.append(2 * size / dt / 1e6)
            print("run %d: MERGE of %.0f MB in %.2f s (%.0f MB/s, snapshot "
                  "included); PING: %d, max %.2f ms, p99 %.2f ms" % (
                      run, 2 * size / 1e6, dt, rates[-1], n, mx, p99))
            if run + 1 < args.runs:
                r.delete("u%d" % run)
        last = "u%d" % (args.runs - 1)
        missing = 0
        for name in ("a", "b"):
            for i in range(0, args.keys, 20000):
                missing += sum(1 for x in r.bf().mexists(
                    last, *keys[name][i:i + 20000]) if not x)
        print("keys missing on the union: %d of %d" % (missing,
                                                       2 * args.keys))
        print("median: %.0f MB/s" % statistics.median(rates))
        return 1 if missing else 0
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
