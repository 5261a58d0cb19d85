#!/usr/bin/python3
"""
python_client - one Python process, 1M distinct 80-byte URLs, then the same
again: seend's seen_many against redis-py's pipelined SADD to a local
redis-server.  A benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/python_client.py [--seend build/src/seend]
        [-n 1000000] [--batch 10000] [--runs 3]

It starts its own seend and redis-server on free loopback ports, with
temporary data directories, and stops them at the end.
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

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "python"))
import seend  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    for _ in range(500):
        if proc.poll() is not None:
            sys.exit("%s exited with %s" % (what, proc.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.02)
    sys.exit("%s did not start" % what)


def make_urls(n, run):
    """n distinct URLs of exactly 80 bytes, different for every run."""
    head = "https://www.example.com/r%d/articles/2026/11/" % run
    pad = 80 - len(head) - len(".html") - 12
    return ["%s%s%012d.html" % (head, "p" * pad, i) for i in range(n)]


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d CPUs, %s, Python %s" % (model, os.cpu_count(),
                                          platform.platform(),
                                          platform.python_version())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seend", default=os.path.join(TOP, "build", "src", "seend"))
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--redis-server", default="redis-server")
    args = ap.parse_args()
    import redis  # python3-redis

    tmp = tempfile.mkdtemp(prefix="seend-pybench-")
    procs = []
    try:
        sport, rport = free_port(), free_port()
        conf = os.path.join(tmp, "seend.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                    "snapshot_interval = 0\nlog_level = warn\n"
                    "[filter.default]\ncapacity = %d\nerror_rate = 0.001\n"
                    % (sport, tmp, 2 * args.n * args.runs))
        sp = subprocess.Popen([args.seend, "-c", conf])
        procs.append(sp)
        rp = subprocess.Popen([args.redis_server, "--port", str(rport),
                               "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", tmp],
                              stdout=subprocess.DEVNULL)
        procs.append(rp)
        wait_port(sport, sp, "seend")
        wait_port(rport, rp, "redis-server")

        c = seend.Client("127.0.0.1:%d" % sport)
        r = redis.Redis(host="127.0.0.1", port=rport)
        print("machine: " + machine())
        print("command: " + " ".join([os.path.basename(sys.executable)] + sys.argv))
        print("%d URLs of %d bytes, batch %d, %d runs (median)"
              % (args.n, len(make_urls(1, 0)[0]), args.batch, args.runs))
        res = {k: [] for k in ("seend new", "seend seen", "redis new", "redis seen")}
        for run in range(args.runs):
            urls = make_urls(args.n, run)
            for label, fn in (("seend", lambda u: c.seen_many(u, batch=args.batch)),
                              ("redis", lambda u: redis_sadd(r, u, args.batch))):
                for phase, want in (("new", False), ("seen", True)):
                    t0 = time.perf_counter()
                    answers = fn(urls)
                    dt = time.perf_counter() - t0
                    bad = sum(1 for a in answers if a != want)
                    if bad > len(urls) // 100:
                        sys.exit("%s %s: %d unexpected answers" % (label, phase, bad))
                    res["%s %s" % (label, phase)].append(args.n / dt)
        print("%-12s %14s %14s" % ("", "URLs/s", "vs redis-py"))
        for phase in ("new", "seen"):
            s = statistics.median(res["seend " + phase])
            rr = statistics.median(res["redis " + phase])
            print("%-12s %14.0f %13.1fx" % ("seend " + phase, s, s / rr))
            print("%-12s %14.0f %14s" % ("redis " + phase, rr, ""))
        print("all runs: " + ", ".join("%s %s" % (k, ["%.0f" % x for x in v])
                                       for k, v in res.items()))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def redis_sadd(r, urls, batch):
    """SADD each URL to one set, pipelined batch by batch; True = was there."""
    out = []
    for i in range(0, len(urls), batch):
        pipe = r.pipeline(transaction=False)
        for u in urls[i:i + batch]:
            pipe.sadd("seen", u)
        out.extend(x == 0 for x in pipe.execute())
    return out


if __name__ == "__main__":
    main()
