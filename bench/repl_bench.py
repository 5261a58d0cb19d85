#!/usr/bin/python3
"""repl_bench - what replication costs seend: the primary's CPU per SEEN with
a replica, a replica's lag at a steady rate, and a full sync of a big filter.
A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/repl_bench.py [BUILD_DIR] [-n REQUESTS]
        [--repeat 3] [--rate 1000000] [--lag-seconds 10]
        [--sync-keys 100000000] [--syncs 3] [--sync-load 100000]
        [--sync-dir DIR] [--server-conf 'repl_backlog_size = 256M']
        [--only cpu,lag,sync] [--no-redis] [--quick]
        [--keep-logs DIR] [--lag-trace CSV]

BUILD_DIR (default: the current directory) must hold src/seend and
src/seen-bench; nothing is built. Every seend gets a temporary config
(listen 127.0.0.1:PORT, its own temporary data_dir, snapshot_interval 0,
[filter.default] growth = off, --server-conf lines) and runs pinned with
taskset: primaries on --server-cpu (0), replicas on --replica-cpu (1),
seen-bench on --client-cpu (1). Primaries run with journal = off
(--primary-journal), replicas with the default everysec
(--replica-journal), as a replica would be run for real; a replica
acknowledges what it has journaled. The daemons run through a symlink
named "rbd" in the temporary directory, so that another job's "pkill
seend" on a shared machine does not stop them mid-run.

1. cpu: the primary's CPU time (utime + stime from /proc/PID/stat, every
   thread, read before the run and after the replica has caught up) per
   pipelined SEEN of new keys (seen-bench -c 4 -P 256), for a primary that
   never had a replica (A), one with a replica connected (B) and one with
   a "null replica" (C: a Python process that PSYNCs, reads the stream and
   acknowledges each read, applying nothing), the runs interleaved and
   getting the same keys; then A and B at a paced --rate (the same request
   rate: per-turn costs weigh more); then B again after its replica has
   gone (it keeps its stream and backlog: "0 replicas, backlog"). Also
   the primary's read+write system calls per 1000 requests (/proc/PID/io:
   how many requests a loop turn takes). Then redis-server with and
   without a Redis replica (seen-bench --resp: SETNX url 1; --no-redis to
   skip). Each row: the median of --repeat runs.
2. lag: a primary and its replica; seen-bench sends new keys at --rate
   for --lag-seconds; every --poll-ms a poller sends INFO replication to
   both at once and keeps (time, master_repl_offset, the replica's ack as
   the primary sees it) and (time, slave_repl_offset). Lag of an offset X
   the primary first showed at time t: the time of the first replica
   sample at >= X, minus t (a sample's time is the middle of its round
   trip; the poll interval bounds the error). The same from the primary's
   own view of the replica's acknowledgements (what WAIT waits for). Also
   the byte lag of each pair of samples over the stream's mean rate, the
   longest the primary's offset stood still while keys were sent, and how
   long each process waited for a CPU (/proc/PID/task/*/schedstat).
3. sync: a primary with a --sync-keys filter (capacity --sync-keys,
   error_rate --sync-error-rate, filled with seen-bench in 10M-key runs,
   once; --sync-dir keeps and reuses it) and a small second filter "load",
   then --syncs times a new replica with an empty data_dir: the time from
   its start until its INFO shows master_link_status:up and
   slave_repl_offset >= the primary's master_repl_offset; image MB per
   second; the phases from both logs; how often the primary dropped the
   syncing replica; another process's PING round trips to the primary
   throughout (max, p99) against 1 s of the same before the replica starts.
   Then one more sync while seen-bench sends --sync-load new keys/s to the
   filter "load" (a sync not done in --sync-timeout s is reported as such).

The whole default run takes about five minutes on two vCPUs; --quick is a
smoke run (smaller everything).
"""

import argparse
import csv
import datetime
import io
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_CPU_PCT = 10.0     # one replica costs the primary <= 10 % CPU/SEEN
TARGET_LAG_P99_MS = 100.0  # at 1M keys/s
TARGET_SYNC_S = 5.0       # a 1e8-key filter's full sync

TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def syscalls(pid):
    """read + write system calls of a process so far (/proc/PID/io)."""
    try:
        n = 0
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                if line.startswith(("syscr:", "syscw:")):
                    n += int(line.split()[1])
        return n
    except (OSError, ValueError):
        return 0


def runq_wait_ns(pid):
    """Nanoseconds the process's threads have waited for a CPU while
    runnable (/proc/PID/task/*/schedstat, second field)."""
    n = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                    n += int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        pass
    return n


def cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s; %d CPUs; Linux %s; Python %s" % (
        model, os.cpu_count(), platform.release(), platform.python_version())


def log(msg):
    sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def pct(xs, q):
    """The q-quantile of xs (nearest rank)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]


# ---- a minimal RESP client ----

class Resp:
    def __init__(self, port, timeout=30.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, *args):
        self.s.sendall(self.encode(*args))

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("connection closed")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2].decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return [self.read() for _ in range(max(n, 0))]
        raise ValueError("bad reply %r" % line)

    def cmd(self, *args):
        self.send(*args)
        r = self.read()
        if isinstance(r, RuntimeError):
            raise r
        return r

    def info(self):
        self.send("INFO", "replication")
        return parse_info(self.read())

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


def parse_info(text):
    d = {}
    for line in (text or "").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            d[k] = v
    return d


def connect_retry(port, proc, timeout=120.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise SystemExit("repl_bench: a server exited with %d" %
                             proc.returncode)
        try:
            return Resp(port)
        except OSError:
            time.sleep(0.01)
    raise SystemExit("repl_bench: server on port %d did not start" % port)


# ---- servers ----

class Server:
    """One server process (seend or redis-server) pinned to a CPU."""

    def __init__(self, kind, argv, cpu, port, logpath, datadir=None):
        self.kind, self.port, self.log, self.dir = kind, port, logpath, datadir
        with open(logpath, "w") as err:
            self.proc = subprocess.Popen(
                ["taskset", "-c", str(cpu)] + argv, stdout=subprocess.DEVNULL,
                stderr=err, start_new_session=True)
        self.pid = self.proc.pid      # taskset execs: this is the server
        self.conn = None

    def wait_ready(self, timeout=120.0):
        self.conn = connect_retry(self.port, self.proc, timeout)
        return self

    def cpu(self):
        return cpu_ticks(self.pid)

    def info(self):
        return self.conn.info()

    def stop(self, timeout=60):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        p = self.proc
        if p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="replbench-")
        # the daemons run through a symlink whose name (and command line)
        # does not say "seend": on a shared machine another job's
        # "pkill seend" took this benchmark's servers down mid-run
        self.daemon = os.path.join(self.tmp, "rbd")
        os.symlink(os.path.join(a.build, "src/seend"), self.daemon)
        self.servers = []
        self.commands = []     # (what, command line)

    # -- starting servers --

    def seend(self, name, cpu, capacity, error_rate, replicaof=None,
              journal="off", datadir=None, extra=""):
        port = free_port()
        d = datadir or os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(self.tmp, name + ".conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                    "journal = %s\nsnapshot_interval = 0\n"
                    "log_level = info\nmax_clients = 1000\n%s%s"
                    "[filter.default]\ncapacity = %s\nerror_rate = %s\n"
                    "growth = off\n%s"
                    % (port, d, journal,
                       "".join(x.strip() + "\n" for x in
                               self.a.server_conf.split(";") if x.strip()),
                       "replicaof = 127.0.0.1:%d\n" % replicaof
                       if replicaof else "", capacity, error_rate, extra))
        s = Server("seend", [self.daemon, "-c", conf], cpu, port,
                   os.path.join(self.tmp, name + ".log"), d)
        self.servers.append(s)
        return s

    def redis(self, name, cpu, replicaof=None):
        port = free_port()
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        argv = [self.a.redis, "--port", str(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", d,
                "--unixsocket", "", "--daemonize", "no"]
        if replicaof:
            argv += ["--replicaof", "127.0.0.1", str(replicaof)]
        s = Server("redis", argv, cpu, port,
                   os.path.join(self.tmp, name + ".log"))
        self.servers.append(s)
        return s

    def stop(self, s):
        s.stop()
        if s in self.servers:
            self.servers.remove(s)

    def stop_all(self):
        for s in list(self.servers):
            self.stop(s)

    # -- load --

    def seen_bench(self, what, port, seed, n, extra, record=True):
        argv = [os.path.join(self.a.build, "src/seen-bench"), "--csv",
                "-p", str(port), "-n", str(n), "--seed", str(seed)]
        if "-c" not in extra:
            argv += ["-c", "4", "-P", "256"]
        argv += extra
        cmd = ["taskset", "-c", str(self.a.client_cpu)] + argv
        if record and not any(c[0] == what for c in self.commands):
            self.commands.append(
                (what, " ".join(cmd).replace(self.a.build + "/", "")
                 .replace("-p %d" % port, "-p PORT")))
        return cmd

    def run_bench(self, cmd):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=self.a.timeout)
        if p.returncode != 0:
            gone = ["%s (%s) exited with %s" % (
                getattr(x, "log", "null replica"), x.kind, x.proc.returncode)
                for x in self.servers if x.proc.poll() is not None]
            raise SystemExit("repl_bench: seen-bench failed:\n%s%s%s" % (
                p.stdout, p.stderr, "\n".join(gone)))
        row = next(csv.DictReader(io.StringIO(p.stdout)))
        return {"rps": float(row["requests_per_s"]),
                "p99": float(row["p99_us"]),
                "new": int(row["replies_new"]),
                "seen": int(row["replies_seen"]),
                "err": int(row["replies_err"]),
                "n": int(row["requests"])}


def caught_up(primary, replica, timeout=120.0):
    """Waits until the replica holds (and has acknowledged) everything
    the primary has framed; returns the seconds waited."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        pi = primary.info()
        if replica.kind == "null":
            po = int(pi.get("master_repl_offset", -1))
            ack = re.search(r"offset=(\d+)", pi.get("slave0", ""))
            if ack and int(ack.group(1)) >= po:
                return time.time() - t0
            time.sleep(0.01)
            continue
        ri = replica.info()
        if primary.kind == "seend":
            po = int(pi.get("master_repl_offset", -1))
            ack = re.search(r"offset=(\d+)", pi.get("slave0", ""))
            if (ri.get("master_link_status") == "up" and
                    int(ri.get("slave_repl_offset", -2)) == po and
                    ack and int(ack.group(1)) == po):
                return time.time() - t0
        else:
            po = int(pi.get("master_repl_offset", -1))
            if (ri.get("master_link_status") == "up" and
                    int(ri.get("slave_repl_offset", -2)) >= po):
                return time.time() - t0
        time.sleep(0.01)
    raise SystemExit("repl_bench: the %s replica did not catch up in %.0f s"
                     % (primary.kind, timeout))


def wait_link_up(replica, timeout=300.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if replica.proc.poll() is not None:
            raise SystemExit("repl_bench: a replica exited; log %s" %
                             replica.log)
        if replica.info().get("master_link_status") == "up":
            return
        time.sleep(0.02)
    raise SystemExit("repl_bench: the replica's link did not come up; log %s"
                     % replica.log)


# ---- a replica that applies nothing ----

NULL_REPLICA = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = s.makefile("rb", buffering=1 << 20)
s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$1\r\n1\r\n"
          b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
assert f.readline().startswith(b"+OK"), "REPLCONF"
line = f.readline().split()
assert line[0] == b"+FULLRESYNC", line
off = int(line[2])
n = int(f.readline().split()[1])
for _ in range(n):
    size = int(f.readline().split()[1])
    while size:
        size -= len(f.read(min(size, 1 << 20)))
sys.stdout.write("ready\n")
sys.stdout.flush()
buf = bytearray(1 << 22)
while True:
    k = f.readinto1(buf)
    if not k:
        break
    off += k
    s.sendall(b"REPLCONF ACK %d\r\n" % off)
"""


class NullReplica:
    """A replica in name only: PSYNC, reads the image and then the stream
    into a buffer and acknowledges every read (its bytes counted as the
    offset); applies nothing. The primary's cost of one replica without
    a real replica's CPU next to the client's."""

    kind = "null"

    def __init__(self, primary, cpu):
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(cpu), sys.executable, "-c", NULL_REPLICA,
             str(primary.port)], stdout=subprocess.PIPE, text=True,
            start_new_session=True)
        self.pid = self.proc.pid
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit("repl_bench: the null replica failed")

    def cpu(self):
        return cpu_ticks(self.pid)

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---- 1. the primary's CPU per SEEN ----

def measure(b, what, primary, replica, seed, n, extra):
    cmd = b.seen_bench(what, primary.port, seed, n, extra)
    c0 = primary.cpu()
    r0 = replica.cpu() if replica else 0
    s0 = syscalls(primary.pid)
    r = b.run_bench(cmd)
    waited = caught_up(primary, replica) if replica else 0.0
    c1 = primary.cpu()
    r1 = replica.cpu() if replica else 0
    r["sys_k"] = (syscalls(primary.pid) - s0) * 1000.0 / r["n"]
    r["cpu_ns"] = (c1 - c0) * 1e9 / TICKS / r["n"]
    r["rcpu_ns"] = (r1 - r0) * 1e9 / TICKS / r["n"] if replica else None
    r["wait"] = waited
    if not b.a.quiet:
        log("  %-30s %10.0f req/s  p99 %8.0f us  primary %5.0f ns/req "
            "%5.1f syscalls/1k req%s  new %d seen %d err %d" % (
                what, r["rps"], r["p99"], r["cpu_ns"], r["sys_k"],
                "  replica %5.0f ns/req (caught up %.2f s later)" % (
                    r["rcpu_ns"], waited) if replica else "",
                r["new"], r["seen"], r["err"]))
    if r["err"]:
        raise SystemExit("repl_bench: %s: %d error replies (filter full? "
                         "raise --capacity)" % (what, r["err"]))
    return r


def part_cpu(b, res):
    a = b.a
    cap, er = a.capacity, a.error_rate
    log("cpu: starting primary A (no replica), primary B and its replica, "
        "primary C and a null replica")
    A = b.seend("cpuA", a.server_cpu, cap, er, journal=a.primary_journal)
    B = b.seend("cpuB", a.server_cpu, cap, er, journal=a.primary_journal)
    C = b.seend("cpuC", a.server_cpu, cap, er, journal=a.primary_journal)
    for x in (A, B, C):
        x.wait_ready()
    R = b.seend("cpuR", a.replica_cpu, cap, er, replicaof=B.port,
                journal=a.replica_journal).wait_ready()
    N = NullReplica(C, a.replica_cpu)
    b.servers.append(N)
    wait_link_up(R)
    caught_up(B, R)
    rows = {}

    def add(name, r):
        rows.setdefault(name, []).append(r)

    # the connections' first buffers, the first stream frames
    for x in (A, B, C):
        b.run_bench(b.seen_bench("warm-up", x.port, a.seed + 999, 200_000,
                                 [], record=False))
    caught_up(B, R)
    caught_up(C, N)
    log("cpu: pipelined, %d requests a run" % a.requests)
    for i in range(a.repeat):
        s = a.seed + i
        add("seend 0 replicas", measure(b, "seend 0 replicas", A, None, s,
                                        a.requests, []))
        add("seend 1 replica", measure(b, "seend 1 replica", B, R, s,
                                       a.requests, []))
        add("seend 1 null replica", measure(b, "seend 1 null replica", C, N,
                                            s, a.requests, []))
    npaced = int(a.rate * a.paced_seconds)
    log("cpu: paced at %.0f/s, %d requests a run" % (a.rate, npaced))
    for i in range(a.repeat):
        s = a.seed + 100 + i
        pace = ["--rate", "%.0f" % a.rate]
        add("seend 0 replicas paced", measure(
            b, "seend 0 replicas paced", A, None, s, npaced, pace))
        add("seend 1 replica paced", measure(
            b, "seend 1 replica paced", B, R, s, npaced, pace))
    log("cpu: B's replica stops; B keeps its stream and backlog")
    b.stop(R)
    time.sleep(1.5)
    for i in range(a.repeat):
        s = a.seed + 200 + i
        add("seend 0 replicas, backlog", measure(
            b, "seend 0 replicas, backlog", B, None, s, a.requests, []))
    for x in (N, A, B, C):
        b.stop(x)

    if a.redis:
        log("cpu: redis-server, with and without a replica (SETNX url 1)")
        RA = b.redis("redisA", a.server_cpu).wait_ready()
        RB = b.redis("redisB", a.server_cpu).wait_ready()
        RR = b.redis("redisR", a.replica_cpu, replicaof=RB.port).wait_ready()
        wait_link_up(RR)
        resp = ["--resp", "--resp-cmd", "setnx"]
        for s in (RA, RB):
            b.run_bench(b.seen_bench("warm-up", s.port, a.seed + 999,
                                     100_000, resp, record=False))
        caught_up(RB, RR)
        for i in range(a.repeat):
            s = a.seed + i
            add("redis 0 replicas", measure(b, "redis 0 replicas", RA, None,
                                            s, a.redis_requests, resp))
            add("redis 1 replica", measure(b, "redis 1 replica", RB, RR, s,
                                           a.redis_requests, resp))
        for s in (RR, RB, RA):
            b.stop(s)
    res["cpu"] = rows


def report_cpu(b, res):
    rows = res.get("cpu")
    if not rows:
        return
    a = b.a
    print("1. The primary's CPU per SEEN of a new key (median of %d runs; "
          "ns = the server process's user+system CPU time per request, "
          "read before the run and after the replica had caught up)" %
          a.repeat)
    fmt = "%-28s %12s %9s %10s %9s %11s %12s  %s"
    print(fmt % ("what", "req/s (med)", "p99 us", "primary ns", "sys/kreq",
                 "replica ns", "cost", "target"))

    def med(name, key):
        xs = [r[key] for r in rows.get(name, []) if r[key] is not None]
        return statistics.median(xs) if xs else None

    def row(name, base=None, target=""):
        if name not in rows:
            return
        cpu = med(name, "cpu_ns")
        rc = med(name, "rcpu_ns")
        cost = ""
        if base and med(base, "cpu_ns"):
            cost = "%+.0f%% %+.0fns" % (
                100.0 * (cpu / med(base, "cpu_ns") - 1),
                cpu - med(base, "cpu_ns"))
        print(fmt % (name, "%.0f" % med(name, "rps"), "%.0f" % med(name, "p99"),
                     "%.0f" % cpu, "%.1f" % med(name, "sys_k"),
                     "%.0f" % rc if rc is not None else "-", cost, target))

    def verdict(name, base):
        if name not in rows or base not in rows:
            return ""
        c = 100.0 * (med(name, "cpu_ns") / med(base, "cpu_ns") - 1)
        return "<= +%.0f%%: %s" % (TARGET_CPU_PCT,
                                   "met" if c <= TARGET_CPU_PCT else
                                   "NOT met")

    row("seend 0 replicas")
    row("seend 1 replica", "seend 0 replicas",
        verdict("seend 1 replica", "seend 0 replicas"))
    row("seend 1 null replica", "seend 0 replicas",
        verdict("seend 1 null replica", "seend 0 replicas"))
    row("seend 0 replicas, backlog", "seend 0 replicas")
    row("seend 0 replicas paced")
    row("seend 1 replica paced", "seend 0 replicas paced")
    row("redis 0 replicas")
    row("redis 1 replica", "redis 0 replicas")
    print("  sys/kreq: the primary's read+write system calls per 1000 "
          "requests (/proc/PID/io), a measure of how many requests a loop "
          "turn takes; paced rows: both at the same rate, per-turn costs "
          "weigh more, and a busier primary takes more per turn")
    print("  null replica: a Python process that PSYNCs, reads the stream "
          "and acknowledges every read, applying nothing")
    print("  each run's primary ns: " + "; ".join(
        "%s: %s" % (k, " ".join("%.0f" % r["cpu_ns"] for r in v))
        for k, v in rows.items()))
    print()


# ---- 2. lag ----

def poll_both(P, R, period, until):
    """Samples (t, master_repl_offset, ack) of P and (t, offset) of R
    every period seconds until until(ps, rs) is true."""
    ps, rs = [], []
    nxt = time.perf_counter()
    while not until(ps, rs):
        t0 = time.perf_counter()
        P.conn.send("INFO", "replication")
        R.conn.send("INFO", "replication")
        pi = parse_info(P.conn.read())
        t1 = time.perf_counter()
        ri = parse_info(R.conn.read())
        t2 = time.perf_counter()
        ack = re.search(r"offset=(\d+)", pi.get("slave0", ""))
        ps.append(((t0 + t1) / 2, int(pi["master_repl_offset"]),
                   int(ack.group(1)) if ack else -1))
        rs.append(((t0 + t2) / 2, int(ri.get("slave_repl_offset", -1))))
        nxt += period
        d = nxt - time.perf_counter()
        if d > 0:
            time.sleep(d)
        else:
            nxt = time.perf_counter()
    return ps, rs


def lags(ps, rs, key):
    """For each primary sample (t, X) whose offset X is new: the time of
    the first sample of the replica's offset (key 1: its INFO; key 2: the
    ack the primary saw) at >= X, minus t; in ms, 0 if it was already
    there."""
    seq = rs if key == 1 else [(t, ack) for t, _, ack in ps]
    out, j, prev = [], 0, None
    for t, x, _ in ps:
        if x == prev:
            continue
        prev = x
        while j < len(seq) and seq[j][1] < x:
            j += 1
        if j == len(seq):
            break
        out.append(max(0.0, seq[j][0] - t) * 1000.0)
    return out


def part_lag(b, res):
    a = b.a
    log("lag: a primary and its replica")
    P = b.seend("lagP", a.server_cpu, a.capacity, a.error_rate,
                journal=a.primary_journal).wait_ready()
    R = b.seend("lagR", a.replica_cpu, a.capacity, a.error_rate,
                replicaof=P.port, journal=a.replica_journal).wait_ready()
    wait_link_up(R)
    b.run_bench(b.seen_bench("warm-up", P.port, a.seed + 999, 200_000, [],
                             record=False))
    caught_up(P, R)
    n = int(a.rate * a.lag_seconds)
    cmd = b.seen_bench("lag sender", P.port, a.seed + 500, n,
                       ["--rate", "%.0f" % a.rate])
    log("lag: %d keys at %.0f/s, polling every %.0f ms" %
        (n, a.rate, a.poll_ms))
    out = open(os.path.join(b.tmp, "lag-sender.csv"), "w+")
    c0, r0 = P.cpu(), R.cpu()
    w0 = (runq_wait_ns(P.pid), runq_wait_ns(R.pid))
    sender = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                              start_new_session=True)
    b.sender = sender
    off0 = P.info()["master_repl_offset"]
    done_at = []

    def until(ps, rs):
        if sender.poll() is None:
            return False
        if not done_at:
            done_at.append(time.perf_counter())
        # then until the replica has the last offset (or 30 s)
        return (time.perf_counter() - done_at[0] > 30 or
                (len(ps) > 1 and rs[-1][1] >= ps[-1][1] and
                 ps[-1][1] == ps[-2][1]))

    ps, rs = poll_both(P, R, a.poll_ms / 1000.0, until)
    c1, r1 = P.cpu(), R.cpu()
    w1 = (runq_wait_ns(P.pid), runq_wait_ns(R.pid))
    b.sender = None
    if a.lag_trace:
        with open(a.lag_trace, "w") as f:
            f.write("t_primary,master_repl_offset,ack,t_replica,"
                    "slave_repl_offset\n")
            for (tp, op, ak), (tr, orr) in zip(ps, rs):
                f.write("%.6f,%d,%d,%.6f,%d\n" % (tp - ps[0][0], op, ak,
                                                   tr - ps[0][0], orr))
    out.seek(0)
    text = out.read()
    if sender.returncode != 0:
        raise SystemExit("repl_bench: lag sender failed:\n" + text)
    row = next(csv.DictReader(io.StringIO(text)))
    stream = ps[-1][1] - int(off0)
    # the stream's stretch: from the first sample that moved to the last
    moving = [p for p in ps if p[1] > int(off0)]
    t_first = moving[0][0]
    # until the last key's frame (not the heartbeats after it)
    t_last = next(p[0] for p in moving if p[1] >= ps[-1][1] - 1000)
    moving = [p for p in moving if p[0] <= t_last]
    rate_bps = stream / max(t_last - t_first, 1e-9)
    lr = lags(ps, rs, 1)
    la = lags(ps, rs, 2)
    # the longest the primary's offset stood still while keys were sent:
    # a stall of the sender or the primary, not the replica's lag
    pstall = max([moving[i + 1][0] - moving[i][0]
                  for i in range(len(moving) - 1)] or [0]) * 1000
    # pairs of samples: byte lag over the mean stream rate
    bl = []
    for (tp, op, _), (tr, orr) in zip(ps, rs):
        if t_first <= tp <= t_last:
            bl.append(max(0, op - orr))
    res["lag"] = {
        "rps": float(row["requests_per_s"]), "n": int(row["requests"]),
        "p99_us": float(row["p99_us"]), "err": int(row["replies_err"]),
        "samples": len(ps), "stream": stream, "rate_bps": rate_bps,
        "bytes_per_key": stream / max(int(row["requests"]), 1),
        "lag": lr, "ack": la, "bytes": bl,
        "pstall": pstall, "wait_p": (w1[0] - w0[0]) / 1e6,
        "wait_r": (w1[1] - w0[1]) / 1e6,
        "dur": t_last - t_first,
        "pcpu": (c1 - c0) * 1e9 / TICKS / int(row["requests"]),
        "rcpu": (r1 - r0) * 1e9 / TICKS / int(row["requests"]),
        "interval": statistics.median(
            [ps[i + 1][0] - ps[i][0] for i in range(len(ps) - 1)]) * 1000,
    }
    log("lag: %d samples; replica lag p50 %.1f p99 %.1f max %.1f ms" % (
        len(ps), pct(lr, .5), pct(lr, .99), max(lr) if lr else 0))
    b.stop(R)
    b.stop(P)


def report_lag(b, res):
    L = res.get("lag")
    if not L:
        return
    a = b.a
    print("2. Replica lag at %.0f new keys/s (seen-bench --rate, %d keys; "
          "achieved %.0f req/s, client p99 %.0f us): INFO replication of "
          "both every %.0f ms (median interval %.1f ms, %d samples)" % (
              a.rate, L["n"], L["rps"], L["p99_us"], a.poll_ms,
              L["interval"], L["samples"]))
    print("   stream %.1f MB, %.1f bytes/key, %.1f MB/s; primary %.0f ns/key,"
          " replica %.0f ns/key of CPU (whole run)" % (
              L["stream"] / 1e6, L["bytes_per_key"], L["rate_bps"] / 1e6,
              L["pcpu"], L["rcpu"]))
    fmt = "%-44s %9s %9s %9s %7s  %s"
    print(fmt % ("lag (ms)", "p50", "p99", "max", "n", "target"))
    lr, la, bl = L["lag"], L["ack"], L["bytes"]
    ok = lr and pct(lr, .99) < TARGET_LAG_P99_MS
    print(fmt % ("replica's slave_repl_offset reaches X", "%.1f" % pct(lr, .5),
                 "%.1f" % pct(lr, .99), "%.1f" % max(lr or [0]), len(lr),
                 "p99 < %.0f ms: %s" % (TARGET_LAG_P99_MS,
                                        "met" if ok else "NOT met")))
    print(fmt % ("primary sees the replica's ack of X", "%.1f" % pct(la, .5),
                 "%.1f" % pct(la, .99), "%.1f" % max(la or [0]), len(la), ""))
    tl = [x / L["rate_bps"] * 1000 for x in bl]
    print(fmt % ("byte lag / stream rate (paired samples)",
                 "%.1f" % pct(tl, .5), "%.1f" % pct(tl, .99),
                 "%.1f" % max(tl or [0]), len(tl),
                 "(bytes p50 %.0f, p99 %.0f, max %.0f)" % (
                     pct(bl, .5), pct(bl, .99), max(bl or [0]))))
    print("   lag of X: (first replica sample at >= X) - (first primary "
          "sample at X); +-1 poll interval")
    print("   the primary's offset stood still for at most %.0f ms while "
          "keys were sent (a stalled sender or primary); time spent "
          "runnable but waiting for a CPU during the %.1f s run "
          "(schedstat): primary %.0f ms, replica %.0f ms" % (
              L["pstall"], L["dur"], L["wait_p"], L["wait_r"]))
    print()


# ---- 3. full sync ----

PINGER = r"""
import select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = s.makefile("rb")
w = []
sys.stdout.write("go\n"); sys.stdout.flush()
while not select.select([sys.stdin], [], [], 0)[0]:
    t = time.perf_counter()
    s.sendall(b"PING\r\n")
    f.readline()
    w.append((time.perf_counter() - t, time.time()))
w.sort()
n = len(w)
sys.stdout.write("%d %.3f %.3f %.3f %.3f %d\n" % (
    n, w[-1][0] * 1e3, w[int(n * 0.99)][0] * 1e3, w[int(n * 0.999)][0] * 1e3,
    w[-1][1], sum(1 for x in w if x[0] > 0.010)))
"""


class Pinger:
    """PING (line protocol) back to back from another process until
    finish(): count, max ms, p99 ms, p99.9 ms, when the max was, > 10 ms."""

    def __init__(self, port):
        self.proc = subprocess.Popen([sys.executable, "-c", PINGER,
                                      str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.proc.stdout.readline()

    def finish(self):
        out, _ = self.proc.communicate("stop\n", timeout=60)
        n, mx, p99, p999, at, slow = out.split()
        return {"n": int(n), "max": float(mx), "p99": float(p99),
                "p999": float(p999), "max_at": float(at), "slow": int(slow)}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


LOGTIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ")


def log_times(path, patterns):
    """The first time (epoch s) each pattern's line appears in a log."""
    got = {}
    try:
        with open(path) as f:
            for line in f:
                m = LOGTIME.match(line)
                if not m:
                    continue
                for k, pat in patterns.items():
                    if k not in got and re.search(pat, line):
                        t = datetime.datetime.strptime(
                            m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
                            tzinfo=datetime.timezone.utc).timestamp()
                        mm = re.search(pat, line)
                        got[k] = (t, mm.groups())
    except OSError:
        pass
    return got


def line_cmd(port, text, timeout=10):
    """One line-protocol command; its first reply line."""
    with socket.create_connection(("127.0.0.1", port), timeout) as c:
        c.sendall(text.encode() + b"\r\n")
        return c.makefile("rb").readline().decode().strip()


def filter_count(s):
    """(keys, bytes) of the default filter: FILTERS, line protocol."""
    with socket.create_connection(("127.0.0.1", s.port), 10) as c:
        c.sendall(b"FILTERS\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            d = c.recv(65536)
            if not d:
                break
            buf += d
    m = re.search(rb"^default .*count=(\d+) bytes=(\d+)", buf, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def part_sync(b, res):
    a = b.a
    keep = a.sync_dir is not None
    d = os.path.abspath(a.sync_dir) if keep else os.path.join(b.tmp, "syncP")
    os.makedirs(d, exist_ok=True)
    log("sync: primary with capacity %d, error_rate %s (data_dir %s)" %
        (a.sync_keys, a.sync_error_rate, d))
    t = time.time()
    P = b.seend("syncP", a.server_cpu, a.sync_keys, a.sync_error_rate,
                journal=a.primary_journal, datadir=d,
                extra=LOAD_FILTER).wait_ready(600)
    t_load = time.time() - t
    count, size = filter_count(P)
    fill = None
    if count < 0.9 * a.sync_keys:
        chunk = 10_000_000
        log("sync: filling with %d keys (seen-bench runs of %d)" %
            (a.sync_keys, chunk))
        t = time.time()
        sent = 0
        i = 0
        while sent < a.sync_keys:
            m = min(chunk, a.sync_keys - sent)
            r = b.run_bench(b.seen_bench("fill", P.port, a.seed + 10_000 + i,
                                         m, [], record=(i == 0)))
            if r["err"]:
                raise SystemExit("repl_bench: fill: %d errors" % r["err"])
            sent += m
            i += 1
        fill = time.time() - t
        count, size = filter_count(P)
        log("sync: filled in %.1f s: %d keys, %d bytes" % (fill, count, size))
        if keep:
            log("sync: SAVE: %s" % line_cmd(P.port, "SAVE", 600))
    else:
        log("sync: %s holds %d keys already (loaded in %.1f s)" %
            (d, count, t_load))
    res["sync_fill"] = {"count": count, "bytes": size, "fill_s": fill,
                        "load_s": t_load if fill is None else None}
    runs = []
    for i in range(a.syncs):
        runs.append(one_sync(b, P, "syncR%d" % i, size))
    loaded = None
    if a.sync_load > 0:
        loaded = one_sync(b, P, "syncRload", size, load=a.sync_load)
    res["sync"] = runs
    res["sync_loaded"] = loaded
    b.stop(P)


# the sync runs' small second filter: the one --sync-load writes to
LOAD_FILTER = ("[filter.load]\ncapacity = 5000000\nerror_rate = 0.01\n"
               "growth = off\n")


def one_sync(b, P, name, size, load=0):
    a = b.a
    # a quiet stretch first: the PING control
    pg = Pinger(P.port)
    time.sleep(1.0)
    quiet = pg.finish()
    rdir = os.path.join(b.tmp, name)
    shutil.rmtree(rdir, ignore_errors=True)
    sender = None
    if load:
        cmd = b.seen_bench("sync load", P.port, a.seed + 20_000,
                           int(load * (a.sync_timeout + 5)),
                           ["--filter", "load", "--rate", "%.0f" % load,
                            "-c", "1", "-P", "64"])
        sender = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        b.sender = sender
        # seen-bench makes its keys first: wait for the stream to move
        o0 = int(P.info()["master_repl_offset"])
        t = time.time()
        while int(P.info()["master_repl_offset"]) < o0 + 100_000:
            if sender.poll() is not None or time.time() - t > 60:
                raise SystemExit("repl_bench: the sync load did not start")
            time.sleep(0.05)
        time.sleep(0.5)
    pg = Pinger(P.port)
    pmark = os.path.getsize(P.log)
    t0 = time.time()
    R = b.seend(name, a.replica_cpu, a.sync_keys, a.sync_error_rate,
                replicaof=P.port, journal=a.replica_journal, datadir=rdir,
                extra=LOAD_FILTER)
    R.conn = connect_retry(R.port, R.proc, 300)
    t_listen = time.time() - t0
    t_up = None
    try:
        while time.time() - t0 < a.sync_timeout:
            if R.proc.poll() is not None:
                raise SystemExit("repl_bench: replica exited; %s" % R.log)
            po = int(P.info()["master_repl_offset"])
            ri = R.info()
            if (ri.get("master_link_status") == "up" and
                    int(ri.get("slave_repl_offset", -1)) >= po):
                t_up = time.time() - t0
                break
            time.sleep(0.01)
    finally:
        busy = pg.finish()
        if sender is not None:
            sender.kill()
            sender.wait()
            b.sender = None
    rt = log_times(R.log, {
        "ready": r"info: ready",
        "fullresync": r"full resync with",
        "loaded": r"full sync from .* loaded"})
    with open(P.log) as f:
        f.seek(pmark)
        ptext = f.read()
    pt = {}
    drops = []
    for line in ptext.splitlines():
        m = LOGTIME.match(line)
        if not m:
            continue
        tt = datetime.datetime.strptime(
            m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        mm = re.search(r"dropped: (.*)", line)
        if mm:
            drops.append(mm.group(1))
        for k, pat in (("asks", r"asks .*: full sync"),
                       ("captured", r"captured at offset"),
                       ("sent", r"sync of .* sent: (\d+) bytes")):
            mm = re.search(pat, line)
            if mm and k not in pt:
                pt[k] = (tt, mm.groups())
    img = int(pt["sent"][1][0]) if "sent" in pt else size

    def rel(x):
        return (x[0] - t0) if x else float("nan")
    run = {"t": t_up, "listen": t_listen, "bytes": img,
           "ready": rel(rt.get("ready")), "asks": rel(pt.get("asks")),
           "captured": rel(pt.get("captured")),
           "sent": rel(pt.get("sent")),
           "fullresync": rel(rt.get("fullresync")),
           "loaded": rel(rt.get("loaded")),
           "ping": busy, "quiet": quiet, "drops": drops, "load": load,
           "ping_max_at": busy["max_at"] - t0}
    log("%s: %s (%.1f MB of image)%s; PING max %.2f ms p99 %.2f ms "
        "(quiet: max %.2f p99 %.2f)" % (
            name, "up in %.2f s" % t_up if t_up else
            "NOT up after %.0f s" % a.sync_timeout, img / 1e6,
            "; the primary dropped it %d times: %s" % (
                len(drops), drops[0]) if drops else "",
            busy["max"], busy["p99"], quiet["max"], quiet["p99"]))
    b.stop(R)
    shutil.rmtree(rdir, ignore_errors=True)
    return run


def report_sync(b, res):
    runs = res.get("sync")
    if not runs:
        return
    a = b.a
    f = res["sync_fill"]
    print("3. Full sync over loopback of a filter of capacity %d at "
          "error_rate %s holding %d keys (%.1f MB; the image also holds a "
          "5M-key filter 'load', %.1f MB in all); %s" % (
              a.sync_keys, a.sync_error_rate, f["count"], f["bytes"] / 1e6,
              runs[0]["bytes"] / 1e6,
              "filled in %.1f s" % f["fill_s"] if f["fill_s"] else
              "loaded from --sync-dir in %.1f s" % f["load_s"]))
    fmt = ("%-9s %7s %5s %6s %5s  %5s %5s %5s %5s %5s %6s  %13s %13s  %s")
    print(fmt % ("run", "up (s)", "MB/s", "xfer/s", "drops", "ready", "asks",
                 "capt", "sent", "fresy", "loaded", "PING max/p99",
                 "quiet max/p99", "target"))
    loaded = res.get("sync_loaded")
    for i, r in enumerate(runs + ([loaded] if loaded else [])):
        name = str(i) if r is not loaded else "%.0fk/s" % (r["load"] / 1e3)
        ok = r["t"] is not None and r["t"] < TARGET_SYNC_S
        print(fmt % (name, "%.2f" % r["t"] if r["t"] else
                     ">%.0f" % a.sync_timeout,
                     "%.0f" % (r["bytes"] / r["t"] / 1e6) if r["t"] else "-",
                     "%.0f" % (r["bytes"] / (r["loaded"] - r["fullresync"]) /
                               1e6) if r["t"] and not r["drops"] and
                     r["loaded"] > r["fullresync"] else "-",
                     len(r["drops"]),
                     "%.2f" % r["ready"], "%.2f" % r["asks"],
                     "%.2f" % r["captured"], "%.2f" % r["sent"],
                     "%.2f" % r["fullresync"], "%.2f" % r["loaded"],
                     "%.1f/%.2f ms" % (r["ping"]["max"], r["ping"]["p99"]),
                     "%.1f/%.2f ms" % (r["quiet"]["max"], r["quiet"]["p99"]),
                     "< %.0f s: %s" % (TARGET_SYNC_S,
                                       "met" if ok else "NOT met")))
    ts = [r["t"] if r["t"] else float("inf") for r in runs]
    med = statistics.median(ts)
    print("median of the %d unloaded syncs: %.2f s, %.0f MB/s of image; "
          "target < %.0f s: %s" % (
              len(runs), med,
              statistics.median(r["bytes"] for r in runs) / med / 1e6,
              TARGET_SYNC_S, "met" if med < TARGET_SYNC_S else "NOT met"))
    print("   phases, seconds from the replica's start (logs, ms): ready = "
          "the replica's filters made, listening; asks = the primary got its "
          "(first) PSYNC; capt = the (first) image captured; sent = the "
          "(first) image file written and queued (sendfile); fresy = the "
          "replica read the (first) +FULLRESYNC; loaded = the replica took the image (its last "
          "attempt); up = its INFO link up and offset >= the primary's "
          "(polled every 10 ms); MB/s = image bytes / up; xfer/s = image "
          "MB / (loaded - fresy): sending, receiving into a file, loading")
    why = sorted(set(d for r in runs + ([loaded] if loaded else [])
                     for d in r["drops"]))
    print("   drops: times the primary dropped the syncing replica (its log: "
          "%s)" % ("; ".join(why) or "none"))
    if loaded:
        print("   %.0fk/s: the same while seen-bench sends %.0f new keys/s "
              "to filter 'load' of the primary" % (loaded["load"] / 1e3,
                                                   loaded["load"]))
    print("   PING: another process's back-to-back PINGs to the primary "
          "during each sync (%s round trips; max at +%s s), and for 1 s "
          "before it (quiet)" % (
              "/".join(str(r["ping"]["n"]) for r in runs),
              "/".join("%.2f" % r["ping_max_at"] for r in runs)))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=".")
    ap.add_argument("-n", "--requests", type=int, default=10_000_000,
                    help="requests per pipelined cpu run (default 10M)")
    ap.add_argument("--redis-requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--capacity", default="150000000",
                    help="[filter.default] capacity for cpu and lag "
                    "(default 150M)")
    ap.add_argument("--error-rate", default="0.01")
    ap.add_argument("--rate", type=float, default=1_000_000,
                    help="keys/s of the lag run and the paced cpu runs")
    ap.add_argument("--paced-seconds", type=float, default=3.0)
    ap.add_argument("--lag-seconds", type=float, default=10.0)
    ap.add_argument("--poll-ms", type=float, default=10.0)
    ap.add_argument("--lag-trace", metavar="CSV",
                    help="write the lag run's samples here")
    ap.add_argument("--sync-keys", type=int, default=100_000_000,
                    help="capacity of the sync run's filter and keys put "
                    "in it (default 1e8)")
    ap.add_argument("--sync-error-rate", default="0.01")
    ap.add_argument("--syncs", type=int, default=3)
    ap.add_argument("--sync-load", type=float, default=100_000,
                    help="keys/s sent (to a second filter) during one more "
                    "sync (0: none)")
    ap.add_argument("--sync-timeout", type=float, default=30.0,
                    help="seconds a sync may take before it is reported "
                    "as not done")
    ap.add_argument("--sync-dir", default=None,
                    help="the sync primary's data_dir: kept, and reused "
                    "if it already holds the filled filter")
    ap.add_argument("--server-conf", default="", metavar="TEXT",
                    help="more lines for every seend's [server], ';' "
                    "between them, e.g. 'repl_backlog_size = 256M'")
    ap.add_argument("--primary-journal", default="off")
    ap.add_argument("--replica-journal", default="everysec")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--replica-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--only", default="cpu,lag,sync",
                    help="which parts, comma-separated (cpu,lag,sync)")
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--keep-logs", metavar="DIR",
                    help="copy the servers' logs and configs here")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 1M requests, 1 repeat, 3 s of lag, "
                    "a 1e7-key sync filter, one sync")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if a.quick:
        a.requests, a.repeat, a.redis_requests = 1_000_000, 1, 200_000
        a.lag_seconds, a.paced_seconds = 3.0, 1.0
        a.sync_keys, a.syncs = 10_000_000, 1
    for rel in ("src/seend", "src/seen-bench"):
        if not os.access(os.path.join(a.build, rel), os.X_OK):
            raise SystemExit("repl_bench: no %s in %s (build it first)" %
                             (rel, a.build))
    a.redis = None if a.no_redis else shutil.which("redis-server")
    parts = set(a.only.split(","))
    cmdline = "/usr/bin/python3 bench/repl_bench.py " + " ".join(
        x if x != a.build else a.build for x in sys.argv[1:])

    b = Bench(a)
    b.sender = None
    res = {}
    t_all = time.time()
    load0 = load()
    try:
        if "cpu" in parts:
            part_cpu(b, res)
        if "lag" in parts:
            part_lag(b, res)
        if "sync" in parts:
            part_sync(b, res)
    finally:
        if b.sender is not None and b.sender.poll() is None:
            b.sender.kill()
            b.sender.wait()
        b.stop_all()
        drops = {}
        for f in os.listdir(b.tmp):
            if (f.endswith(".log") and f[:-4] in ("cpuB", "cpuC", "lagP")):
                with open(os.path.join(b.tmp, f)) as fh:
                    drops[f[:-4]] = fh.read().count(
                        "passed repl_backlog_size")
        res["setup_drops"] = drops
        if a.keep_logs:
            os.makedirs(a.keep_logs, exist_ok=True)
            for f in os.listdir(b.tmp):
                if f.endswith((".log", ".conf", ".csv")):
                    shutil.copy(os.path.join(b.tmp, f), a.keep_logs)
        shutil.rmtree(b.tmp, ignore_errors=True)

    print("machine: %s" % machine())
    print("load average: %s at start, %s at end; %.0f s in all" % (
        load0, load(), time.time() - t_all))
    print("command: %s" % cmdline)
    print("primaries on CPU %d, replicas on CPU %d, seen-bench on CPU %d; "
          "primary journal %s, replica journal %s; [filter.default] growth "
          "off%s" % (a.server_cpu, a.replica_cpu, a.client_cpu,
                     a.primary_journal, a.replica_journal,
                     "; [server] " + a.server_conf if a.server_conf else ""))
    print()
    report_cpu(b, res)
    report_lag(b, res)
    report_sync(b, res)
    if res.get("setup_drops"):
        print("full syncs dropped by a primary with \"its unsent stream "
              "passed repl_backlog_size\" while setting up a replica "
              "(primary logs): " + ", ".join(
                  "%s %d" % kv for kv in sorted(res["setup_drops"].items())))
        print()
    print("commands (BUILD_DIR is %s):" % a.build)
    for what, cmd in b.commands:
        print("  %-28s %s" % (what, cmd))
    print("  servers: taskset -c CPU src/seend -c CONF (run through a "
          "symlink named rbd; [server] listen, "
          "data_dir, journal, snapshot_interval = 0, replicaof = "
          "127.0.0.1:PORT on replicas; [filter.default] capacity %s / %d, "
          "error_rate %s / %s, growth = off)%s" % (
              a.capacity, a.sync_keys, a.error_rate, a.sync_error_rate,
              "; taskset -c CPU redis-server --save '' --appendonly no "
              "[--replicaof 127.0.0.1 PORT]" if a.redis else ""))


if __name__ == "__main__":
    main()
