#!/usr/bin/python3
"""ab_cpu - two seend builds (or one build with two environments) side by
side: the server's CPU time per pipelined request, the runs alternating A,
B, B, A, A, B... so that a slow minute of a shared VM weighs on both.
A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/ab_cpu.py BUILD_A [BUILD_B] [-n 3000000]
        [--repeat 10] [--mode line|setnx] [--env-a VAR=VALUE]
        [--env-b VAR=VALUE] [--capacity 150000000] [--filter-conf TEXT]

BUILD_B defaults to BUILD_A: then --env-a/--env-b tell the two sides
apart (e.g. --env-b SEEND_NO_AVX2=1). Each run starts a fresh seend from
its build (pinned to --server-cpu, default 0; journal = off and no
snapshots, so that neither a fsync nor a snapshot lands in one run and not
the other), records --warm fresh keys (1M) so that the filter is no longer
empty, then reads its CPU time (utime + stime of every thread, from
/proc/PID/stat) around -n fresh keys sent by BUILD_A's seen-bench (pinned
to --client-cpu, default 1; -c 4 -P 256; line SEEN, or RESP SETNX with
--mode setnx). Prints, per side, the median, the minimum and every run.

Why beside bench/compare: compare runs one build through many rows and
leaves the journal on; on this VM its runs of one build spread by 2x, and
two builds compared invocation by invocation drift with the machine's
load. Alternated runs of two builds under the same load are what a 5 %
budget on the request path can be checked with.
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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    """utime + stime of every thread of pid, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def env_pairs(items):
    env = {}
    for item in items or []:
        name, _, value = item.partition("=")
        env[name] = value
    return env


def one_run(args, build, env, seed):
    """The server's CPU ns per request of one fresh seend of build."""
    d = tempfile.mkdtemp(prefix="ab-cpu-")
    port = free_port()
    conf = os.path.join(d, "c.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "snapshot_interval = 0\njournal = off\nlog_level = warn\n"
                "[filter.default]\ncapacity = %d\nerror_rate = 0.001\n"
                "%s\n" % (port, d, args.capacity,
                          args.filter_conf.replace(";", "\n")))
    server_env = dict(os.environ)
    server_env.update(env)
    srv = subprocess.Popen(["taskset", "-c", str(args.server_cpu),
                            os.path.join(build, "src/seend"), "-c", conf],
                           env=server_env)
    bench = os.path.join(args.build_a, "src/seen-bench")
    try:
        for _ in range(300):
            if subprocess.run([bench, "-q", "-p", str(port), "-n", "1",
                               "-c", "1"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit("%s: seend did not start" % build)
        cmd = ["taskset", "-c", str(args.client_cpu), bench, "-q", "-p",
               str(port), "-c", "4", "-P", "256"]
        if args.mode == "setnx":
            cmd += ["--resp", "--resp-cmd", "setnx"]
        subprocess.run(cmd + ["--seed", str(seed), "-n", str(args.warm)],
                       capture_output=True, check=True)
        before = cpu_seconds(srv.pid)
        subprocess.run(cmd + ["--seed", str(seed + 1), "-n",
                              str(args.requests)],
                       capture_output=True, check=True)
        return (cpu_seconds(srv.pid) - before) / args.requests * 1e9
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build_a")
    p.add_argument("build_b", nargs="?")
    p.add_argument("-n", "--requests", type=int, default=3000000)
    p.add_argument("--warm", type=int, default=1000000)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--mode", choices=("line", "setnx"), default="line")
    p.add_argument("--env-a", action="append")
    p.add_argument("--env-b", action="append")
    p.add_argument("--capacity", type=int, default=150000000)
    p.add_argument("--filter-conf", default="growth = off")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--client-cpu", type=int, default=1)
    args = p.parse_args()
    sides = {"A": (args.build_a, env_pairs(args.env_a)),
             "B": (args.build_b or args.build_a, env_pairs(args.env_b))}
    ns = {"A": [], "B": []}
    for r in range(args.repeat):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            build, env = sides[side]
            ns[side].append(one_run(args, build, env, 100 + 10 * r))
    for side in ("A", "B"):
        build, env = sides[side]
        v = ns[side]
        print("%s %-5s %s%s: median %.1f min %.1f ns/req, runs %s" % (
            side, args.mode, build,
            "".join(" %s=%s" % kv for kv in env.items()),
            statistics.median(v), min(v), sorted(round(x) for x in v)))
    print("B / A (medians): %.3f" % (statistics.median(ns["B"]) /
                                     statistics.median(ns["A"])))


if __name__ == "__main__":
    main()
