#!/usr/bin/python3
"""
python_ring - one Python process, N distinct 80-byte URLs, then the same
again, over three seend nodes: the client-side ring
(``seend.Client([a, b, c]).seen_many``, line protocol, every node's share
of a batch in flight at once) against redis-py's pipelined ``SETNX``
through nutcracker (twemproxy: ketama, fnv1a_64) in front of the same three
nodes, and through a nutcracker in front of one node.  A benchmark, not a
test: it prints figures.

nutcracker proxies only RESP, and seend.Client speaks seend's line
protocol, so the proxy's side is measured with redis-py (Debian's
python3-redis, no hiredis), as a Python crawler going through the proxy
would talk to it.

    /usr/bin/python3 bench/python_ring.py [--seend build/src/seend]
        [-n 1000000] [--batch 30000] [--proxy-batch 10000] [--runs 3]
        [--nodes h:p,h:p,h:p --proxy h:p]

By default it starts three seend nodes and two nutcrackers (one over the
three nodes, one over the first node alone) on free loopback ports, with
temporary data directories, and stops them at the end.  With --nodes and
--proxy it uses running ones (--proxy must front exactly --nodes, named as
--nodes lists them; the one-node proxy is then skipped).
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
        if proc is not None and proc.poll() is not None:
            sys.exit("%s exited with %s" % (what, proc.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.02)
    sys.exit("%s did not start" % what)


def make_urls(n, run):
    """n distinct URLs of exactly 80 bytes, different for every run."""
    head = "https://www.example.com/q%d/articles/2026/11/" % run
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
    load = ""
    try:
        with open("/proc/loadavg") as f:
            load = ", load average " + " ".join(f.read().split()[:3])
    except OSError:
        pass
    return "%s, %d CPUs, %s, Python %s%s" % (model, os.cpu_count(),
                                            platform.platform(),
                                            platform.python_version(), load)


def start_nutcracker(tmp, name, servers, procs):
    """A nutcracker (ketama, fnv1a_64, redis) over servers; its port."""
    port = free_port()
    conf = os.path.join(tmp, name + ".yml")
    with open(conf, "w") as f:
        f.write("ring:\n  listen: 127.0.0.1:%d\n  redis: true\n"
                "  hash: fnv1a_64\n  distribution: ketama\n"
                "  auto_eject_hosts: false\n  timeout: 30000\n"
                "  preconnect: true\n  server_connections: 1\n  servers:\n"
                % port)
        for s in servers:
            f.write("    - %s\n" % s)
    exe = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
    p = subprocess.Popen([exe, "-c", conf, "-s", str(free_port()),
                          "-a", "127.0.0.1", "-o",
                          os.path.join(tmp, name + ".log")])
    procs.append(p)
    wait_port(port, p, "nutcracker")
    return port


def redis_setnx(r, urls, batch):
    """SETNX url 1 for each URL, pipelined batch by batch; True = was
    there (seen), as seen_many answers."""
    out = []
    for i in range(0, len(urls), batch):
        pipe = r.pipeline(transaction=False)
        for u in urls[i:i + batch]:
            pipe.setnx(u, 1)
        out.extend(x is False for x in pipe.execute())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seend", default=os.path.join(TOP, "build", "src", "seend"))
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--batch", type=int, default=30000,
                    help="seen_many's batch: keys per round trip to all nodes")
    ap.add_argument("--proxy-batch", type=int, default=10000,
                    help="redis-py commands per pipeline execute")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", help="running nodes, host:port,...")
    ap.add_argument("--proxy", help="a running nutcracker over --nodes")
    args = ap.parse_args()
    import redis  # python3-redis

    tmp = tempfile.mkdtemp(prefix="seend-ringbench-")
    procs = []
    try:
        if args.nodes:
            if not args.proxy:
                sys.exit("--nodes needs --proxy")
            nodes = args.nodes.split(",")
            servers = nodes
            proxy3 = int(args.proxy.rpartition(":")[2])
            proxy1 = None
        else:
            ports = []
            for i in range(3):
                port = free_port()
                data = os.path.join(tmp, "n%d" % i)
                os.mkdir(data)
                conf = os.path.join(tmp, "n%d.conf" % i)
                with open(conf, "w") as f:
                    f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                            "snapshot_interval = 0\nlog_level = warn\n"
                            "[filter.default]\ncapacity = %d\n"
                            "error_rate = 0.001\n"
                            % (port, data, 2 * args.n * args.runs))
                p = subprocess.Popen([args.seend, "-c", conf])
                procs.append(p)
                wait_port(port, p, "seend")
                ports.append(port)
            nodes = ["127.0.0.1:%d" % p for p in ports]
            servers = ["%s:1 seend%d" % (a, i + 1) for i, a in enumerate(nodes)]
            proxy3 = start_nutcracker(tmp, "nc3", servers, procs)
            proxy1 = start_nutcracker(tmp, "nc1", servers[:1], procs)

        ring = seend.Client(servers)
        r3 = redis.Redis(host="127.0.0.1", port=proxy3, socket_timeout=120)
        r1 = (redis.Redis(host="127.0.0.1", port=proxy1, socket_timeout=120)
              if proxy1 else None)
        print("machine: " + machine())
        print("command: " + " ".join([os.path.basename(sys.executable)]
                                     + sys.argv))
        print("%d URLs of %d bytes, ring batch %d, redis-py pipeline %d, "
              "%d runs (median)" % (args.n, len(make_urls(1, 0)[0]),
                                    args.batch, args.proxy_batch, args.runs))
        cases = [("ring", lambda u: ring.seen_many(u, batch=args.batch)),
                 ("nc3", lambda u: redis_setnx(r3, u, args.proxy_batch))]
        if r1 is not None:
            cases.append(("nc1", lambda u: redis_setnx(r1, u,
                                                       args.proxy_batch)))
        res = {"%s %s" % (label, phase): [] for label, _ in cases
               for phase in ("new", "seen")}
        for run in range(args.runs):
            for ci, (label, fn) in enumerate(cases):
                # fresh URLs for every case and run: "new" is new
                urls = make_urls(args.n, run * 10 + ci)
                for phase, want in (("new", False), ("seen", True)):
                    t0 = time.perf_counter()
                    answers = fn(urls)
                    dt = time.perf_counter() - t0
                    bad = sum(1 for a in answers if a != want)
                    if bad > len(urls) // 100:
                        sys.exit("%s %s: %d unexpected answers"
                                 % (label, phase, bad))
                    res["%s %s" % (label, phase)].append(args.n / dt)
                    print("  run %d %-4s %-4s %10.0f URLs/s"
                          % (run + 1, label, phase, args.n / dt), flush=True)
        names = {"ring": "ring seen_many, 3 nodes",
                 "nc3": "redis-py SETNX via nutcracker, 3 nodes",
                 "nc1": "redis-py SETNX via nutcracker, 1 node"}
        print("%-44s %12s %10s  %s" % ("", "URLs/s", "ring is", "runs"))
        for phase in ("new", "seen"):
            ring_rate = statistics.median(res["ring " + phase])
            for label, _ in cases:
                v = res["%s %s" % (label, phase)]
                m = statistics.median(v)
                print("%-44s %12.0f %10s  %s" % (
                    "%s, %s" % (names[label], phase), m,
                    "" if label == "ring" else "%.1fx" % (ring_rate / m),
                    ", ".join("%.0f" % x for x in v)))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
