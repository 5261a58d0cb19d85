#!/usr/bin/python3
"""repl_profile - where a primary's CPU goes, with and without a replica,
by perf's cpu-clock samples (issue 31: what one replica costs its
primary). A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/repl_profile.py [BUILD_DIR] [-n REQUESTS]
        [--runs 3] [--freq 2000]

BUILD_DIR (default: the current directory) must hold src/seend and
src/seen-bench. For each run, two primaries are measured in turn, one
alone and one with a replica (both: journal off, snapshot_interval 0, one
filter of capacity 150M, growth off, pinned to CPU 0; the replica and
seen-bench on CPU 1). seen-bench sends REQUESTS new keys (-c 4 -P 256)
while `perf record -e cpu-clock -g` samples the primary (software events:
this VM has no hardware counters). Each sample is put in one bucket by
its call stack, the first that matches:

  replication    the replica link's writev, the ACKs' reads, primary_*,
                 backlog_* (the stream's work that a primary alone skips)
  replies        write(2) to clients (on loopback the receiver's TCP work
                 runs in the sender's system call, so this includes it)
  requests read  read(2) from clients
  epoll          epoll_wait (and the scheduler's switches in it)
  requests       command_run*, xxHash, the filters
  other          the rest (libevent, timers, interrupts)

Why buckets and not the CPU time of the whole process: on a 2-CPU VM the
replica shares CPU 1 with the load generator, so with a replica the client
sends less per loop turn and every per-turn cost (epoll, read, write)
weighs more per request; bench/repl_bench.py's "sys/kreq" shows it. The
replication bucket is the part no batch size explains.

Needs perf (Debian's linux-perf) and permission to sample the daemon
(root, or kernel.perf_event_paranoid <= 1).
"""
import argparse
import collections
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BUCKETS = [
    ("replication", ("do_writev", "readv", "primary_", "backlog_")),
    ("replies", ("tcp_sendmsg", "ksys_write")),
    ("requests read", ("ksys_read", "vfs_read")),
    ("epoll", ("epoll",)),
    ("requests", ("command_run", "XXH", "bloom_", "filter_", "answer_")),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf(path, port, data, replicaof=None):
    with open(path, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "snapshot_interval = 0\nlog_level = warn\n" % (port, data))
        if replicaof:
            f.write("replicaof = 127.0.0.1:%d\n" % replicaof)
        else:
            f.write("journal = off\n")
        f.write("[filter.default]\ncapacity = 150000000\n"
                "error_rate = 0.01\ngrowth = off\n")


def ask(port, line):
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(line.encode() + b"\r\n")
        got = b""
        while not got.endswith(b"END\r\n"):
            b = s.recv(65536)
            if not b:
                break
            got += b
    return got.decode(errors="replace")


def start(a, tmp, name, cpu, replicaof=None):
    port = free_port()
    data = os.path.join(tmp, name)
    os.makedirs(data)
    cpath = os.path.join(tmp, name + ".conf")
    conf(cpath, port, data, replicaof)
    # through a symlink of another name: a "pkill seend" elsewhere on a
    # shared machine does not stop it mid-run
    exe = os.path.join(tmp, "rpd")
    if not os.path.exists(exe):
        os.symlink(os.path.abspath(os.path.join(a.build, "src/seend")), exe)
    p = subprocess.Popen(["taskset", "-c", str(cpu), exe, "-c", cpath],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("%s did not start" % name)


def linked(port):
    return "connected_slaves 1" in ask(port, "INFO")


def bucket(stack):
    j = " ".join(stack)
    for name, marks in BUCKETS:
        if any(m in j for m in marks):
            return name
    return "other"


def profile(a, tmp, port, pid, seed, tag):
    data = os.path.join(tmp, "perf-%s.data" % tag)
    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock",
                            "-F", str(a.freq), "-g", "-p", str(pid),
                            "-o", data], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    t0 = time.monotonic()
    subprocess.run(["taskset", "-c", "1",
                    os.path.join(a.build, "src/seen-bench"), "-q", "-p",
                    str(port), "-n", str(a.requests), "--seed", str(seed),
                    "-c", "4", "-P", "256"], check=True,
                   stdout=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    rec.send_signal(2)
    rec.wait()
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"],
                         capture_output=True, text=True).stdout
    counts = collections.Counter()
    cur = []
    for line in out.splitlines() + [""]:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            counts[bucket(cur)] += 1
            cur = []
    return counts, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=".")
    ap.add_argument("-n", "--requests", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--freq", type=int, default=2000)
    a = ap.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("perf is missing (apt-get install linux-perf)")
    names = [b for b, _ in BUCKETS] + ["other"]
    total = {"alone": collections.Counter(), "replica": collections.Counter()}
    rates = {"alone": [], "replica": []}
    for run in range(a.runs):
        tmp = tempfile.mkdtemp(prefix="repl_profile.")
        procs = []
        try:
            pa, port_a = start(a, tmp, "alone", 0)
            pb, port_b = start(a, tmp, "primary", 0)
            rb, _ = start(a, tmp, "replica", 1, replicaof=port_b)
            procs = [pa, pb, rb]
            for _ in range(600):
                if linked(port_b):
                    break
                time.sleep(0.1)
            else:
                raise SystemExit("the replica never linked")
            for tag, port, p in (("alone", port_a, pa),
                                 ("replica", port_b, pb)):
                c, secs = profile(a, tmp, port, p.pid, 7 + run, tag)
                total[tag] += c
                rates[tag].append(a.requests / secs)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    period_ns = 1e9 / a.freq
    print("machine: %s; load average at end: %s" % (
        os.uname().release, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("command: /usr/bin/python3 %s" % " ".join(sys.argv))
    print("the primary's cpu-clock samples by bucket, %d runs of %d new keys "
          "(seen-bench -c 4 -P 256)" % (a.runs, a.requests))
    print("%-15s %16s %16s" % ("bucket", "alone", "with a replica"))
    for tag in ("alone", "replica"):
        pass
    n_req = a.runs * a.requests
    for name in names + ["all"]:
        row = []
        for tag in ("alone", "replica"):
            c = total[tag]
            v = sum(c.values()) if name == "all" else c[name]
            share = 100.0 * v / max(1, sum(c.values()))
            row.append("%5.1f%% %5.0f ns" % (share, v * period_ns / n_req))
        print("%-15s %16s %16s" % (name, row[0], row[1]))
    print("requests/s (median): alone %.0f, with a replica %.0f" % (
        sorted(rates["alone"])[len(rates["alone"]) // 2],
        sorted(rates["replica"])[len(rates["replica"]) // 2]))


if __name__ == "__main__":
    main()
