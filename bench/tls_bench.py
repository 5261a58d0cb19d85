#!/usr/bin/python3
"""tls_bench - what TLS costs the server: CPU time per pipelined SETNX over
TLS against plaintext, for seend and, measured the same way in the same
run, for redis-server (issue 32: seend's ratio no larger than Redis's).
A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/tls_bench.py [BUILD_DIR] [-n REQUESTS] [-c CONNS]
        [-P PIPELINE] [--repeat 3] [--no-redis]
        [--server-cpu 0] [--client-cpu 1] [--callgrind]

BUILD_DIR (default: the current directory) must hold src/seend; nothing is
built. A CA and a server certificate (EC P-256) are made with openssl(1) in
a temporary directory. seend runs with listen and tls_listen
(tls_auth_clients = no, journal = off, snapshot_interval 0, one filter of
capacity 2 x REQUESTS x repeat, growth off); redis-server 7 with port and
tls-port (tls-auth-clients no, no persistence). Each is pinned with
taskset to --server-cpu, the client to --client-cpu.

The client is redis-benchmark for both servers and both transports (the
same program, so the same bytes: "SETNX key:<random> 1", -c CONNS
connections, -P PIPELINE deep, random keys over 10^9, "--tls --cacert"
for TLS). The figure is the server's CPU time (utime + stime of every
thread, /proc/PID/stat) over the run, per request; the runs are
interleaved (seend plain, seend TLS, redis plain, redis TLS, repeated) and
each row is the median of --repeat runs. The connections' handshakes are
part of each TLS run, as they are of a crawl's. redis-server gets a
FLUSHALL before each run (outside the measure), so that every run inserts
REQUESTS keys into an empty table and memory stays bounded.

--callgrind counts instructions instead, as bench/callgrind-seen does: each
server runs under valgrind's callgrind for one client run and is stopped;
the same with 1000 requests; instructions per request = (total of the
REQUESTS run - total of the 1000 run) / (REQUESTS - 1000), so that start,
exit and the connections' handshakes cancel out. Repeatable whatever else
the machine does, unlike CPU time on a shared VM; OpenSSL's AES-NI and
CLMUL instructions count one each.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_port(port, proc, what):
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("%s exited %s" % (what, proc.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit("%s did not listen on %d" % (what, port))


def make_certs(d):
    def sh(*argv):
        subprocess.run(argv, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]
    sh("openssl", "req", "-x509", *ec, "-keyout", d + "/ca.key", "-out",
       d + "/ca.crt", "-days", "2", "-subj", "/CN=tls_bench CA")
    sh("openssl", "req", *ec, "-keyout", d + "/server.key", "-out",
       d + "/server.csr", "-subj", "/CN=localhost")
    with open(d + "/ext", "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    sh("openssl", "x509", "-req", "-in", d + "/server.csr", "-CA",
       d + "/ca.crt", "-CAkey", d + "/ca.key", "-CAcreateserial", "-out",
       d + "/server.crt", "-days", "2", "-extfile", d + "/ext")


def run_client(a, port, tls, ca):
    argv = ["taskset", "-c", str(a.client_cpu), "redis-benchmark", "-h",
            "127.0.0.1", "-p", str(port), "-n", str(a.n), "-c", str(a.c),
            "-P", str(a.P), "-r", "1000000000", "-q"]
    if tls:
        argv += ["--tls", "--cacert", ca]
    argv += ["SETNX", "key:__rand_int__", "1"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("redis-benchmark: %s %s" % (p.stdout, p.stderr))
    return p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""


def flushall(port):
    """redis-server starts each run empty, as seend's filter does not grow:
    the runs insert the same number of keys into the same table sizes."""
    with socket.create_connection(("127.0.0.1", port), 60) as s:
        s.sendall(b"FLUSHALL SYNC\r\n")
        got = b""
        while not got.endswith(b"\r\n"):
            b = s.recv(100)
            if not b:
                break
            got += b
    if got != b"+OK\r\n":
        sys.exit("FLUSHALL: %r" % got)


def measure(a, proc, port, tls, ca, flush_port=None):
    if flush_port is not None:
        flushall(flush_port)
    c0 = cpu_seconds(proc.pid)
    t0 = time.monotonic()
    line = run_client(a, port, tls, ca)
    wall = time.monotonic() - t0
    c1 = cpu_seconds(proc.pid)
    return (c1 - c0) / a.n * 1e6, a.n / wall, line


def start_seend(a, d, seend, sp, st, wrap=()):
    with open(d + "/seend.conf", "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ntls_listen = "
                "127.0.0.1:%d\ntls_cert_file = %s/server.crt\n"
                "tls_key_file = %s/server.key\ntls_auth_clients = no\n"
                "data_dir = %s\nsnapshot_interval = 0\njournal = off\n"
                "log_level = warn\n[filter.default]\ncapacity = %d\n"
                "error_rate = 0.001\ngrowth = off\n"
                % (sp, st, d, d, d, 2 * a.n * a.repeat))
    for f in os.listdir(d):
        if f.endswith(".bloom"):
            os.unlink(os.path.join(d, f))
    # a symlink of its own: another job's "pkill seend" spares it
    if not os.path.exists(d + "/tbd"):
        os.symlink(os.path.abspath(seend), d + "/tbd")
    p = subprocess.Popen(["taskset", "-c", str(a.server_cpu), *wrap,
                          d + "/tbd", "-c", d + "/seend.conf"],
                         stdout=subprocess.DEVNULL,
                         stderr=open(d + "/seend.log", "w"))
    wait_port(st, p, "seend")
    return p


def start_redis(a, d, rp, rt, wrap=()):
    p = subprocess.Popen(
        ["taskset", "-c", str(a.server_cpu), *wrap, "redis-server",
         "--port", str(rp), "--tls-port", str(rt), "--bind",
         "127.0.0.1", "--tls-cert-file", d + "/server.crt",
         "--tls-key-file", d + "/server.key", "--tls-auth-clients",
         "no", "--save", "", "--appendonly", "no", "--dir", d],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(rt, p, "redis-server")
    return p


def callgrind(a, d, seend, ca, servers):
    """Instructions per request of each server and mode (--callgrind)."""
    out = d + "/cg.out"
    res = {}
    for name in servers:
        for mode in ("plain", "TLS"):
            totals = []
            for n in (1000, a.n):
                plain, tls = free_port(), free_port()
                wrap = ("valgrind", "--tool=callgrind",
                        "--callgrind-out-file=" + out)
                p = start_seend(a, d, seend, plain, tls, wrap) \
                    if name == "seend" else \
                    start_redis(a, d, plain, tls, wrap)
                saved, a.n = a.n, n
                try:
                    run_client(a, plain if mode == "plain" else tls,
                               mode == "TLS", ca)
                finally:
                    a.n = saved
                    p.terminate()
                    p.wait(600)
                with open(out) as f:
                    totals.append(int([l for l in f if
                                       l.startswith("summary:")][0].split()[1]))
            res[(name, mode)] = (totals[1] - totals[0]) / (a.n - 1000)
    print("server instructions per pipelined SETNX (callgrind; "
          "redis-benchmark -c %d -P %d, %d requests less a run of 1000)"
          % (a.c, a.P, a.n))
    print("%-13s %-6s %12s" % ("server", "mode", "instr/req"))
    for name in servers:
        for mode in ("plain", "TLS"):
            print("%-13s %-6s %12.0f" % (name, mode, res[(name, mode)]))
        print("%-13s TLS - plain %.0f instructions, TLS/plain %.2f" % (
            name, res[(name, "TLS")] - res[(name, "plain")],
            res[(name, "TLS")] / res[(name, "plain")]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=".")
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("-c", type=int, default=4)
    ap.add_argument("-P", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--callgrind", action="store_true")
    a = ap.parse_args()
    seend = os.path.join(a.build, "src", "seend")
    if not os.access(seend, os.X_OK):
        sys.exit("no %s" % seend)
    d = tempfile.mkdtemp(prefix="tls_bench-")
    procs = []
    try:
        make_certs(d)
        ca = d + "/ca.crt"
        with_redis = not a.no_redis and shutil.which("redis-server")
        if a.callgrind:
            callgrind(a, d, seend, ca, ["seend"] +
                      (["redis-server"] if with_redis else []))
            return
        servers = []
        sp, st = free_port(), free_port()
        p = start_seend(a, d, seend, sp, st)
        procs.append(p)
        servers.append(("seend", p, sp, st))
        if with_redis:
            rp, rt = free_port(), free_port()
            p = start_redis(a, d, rp, rt)
            procs.append(p)
            servers.append(("redis-server", p, rp, rt))
        res = {}
        for _ in range(a.repeat):
            for name, p, plain, tls in servers:
                for mode, port in (("plain", plain), ("TLS", tls)):
                    us, rate, _ = measure(
                        a, p, port, mode == "TLS", ca,
                        plain if name == "redis-server" else None)
                    res.setdefault((name, mode), []).append((us, rate))
        print("server CPU per pipelined SETNX (redis-benchmark -c %d -P %d, "
              "%d requests a run, median of %d)" % (a.c, a.P, a.n, a.repeat))
        print("%-13s %-6s %12s %14s" % ("server", "mode", "CPU us/req",
                                        "requests/s"))
        for name, _, _, _ in servers:
            row = {}
            for mode in ("plain", "TLS"):
                us = statistics.median(x[0] for x in res[(name, mode)])
                rate = statistics.median(x[1] for x in res[(name, mode)])
                row[mode] = us
                print("%-13s %-6s %12.3f %14.0f" % (name, mode, us, rate))
            print("%-13s TLS/plain CPU ratio %.2f" % (
                name, row["TLS"] / row["plain"] if row["plain"] else 0))
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
