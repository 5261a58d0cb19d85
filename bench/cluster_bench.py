#!/usr/bin/python3
"""cluster_bench - three seend nodes on this machine behind redis-py's
RedisCluster and behind twemproxy, side by side (issue 33): requests/s and
CPU per request of the servers, the proxy and the clients. A benchmark, not
a test: it prints figures.

    /usr/bin/python3 bench/cluster_bench.py [--build DIR] [-n REQUESTS]
        [--clients 4] [--pipeline 1000] [--repeat 3] [--redis]
        [--client redis-py,redis-benchmark] [--rb-conns 12]
        [--rb-pipeline 64] [--only cluster,proxy,redis] [--keep DIR]

--build (default: the current directory) must hold src/seend and
src/seen-cli; nothing is built. Each seend gets a temporary config (listen
127.0.0.1:PORT, its own data_dir, journal = off, snapshot_interval 0,
[filter.default] capacity 2 x REQUESTS x repeat, growth off) and runs
through a symlink "cbd" in the temporary directory, so that another job's
"pkill seend" spares it. Nothing is pinned: on a two-vCPU machine the
three nodes, the proxy and the client processes share both CPUs, and the
clients (Python) take most of them; requests/s is then what the clients
can send, and the CPU per request is the figure to compare.

Each request is "SETNX <url> 1" of a URL not sent before (what a crawler
sends to record a URL: the key is the URL, so a cluster client and the
proxy both spread the URLs over the nodes; "SADD <set> <url>" would put a
whole set on one node). The URLs are about 80 bytes,
"https://www.<host>.example/<path>/<n>?<query>", made by each client
process before the clock starts.

Set-ups, the same client processes in each (--clients, multiprocessing,
each sending its share of REQUESTS in pipelines of --pipeline):

1. cluster: three seend with [cluster] enabled = on, made one cluster by
   "seen-cli cluster create" (three primaries, no replicas); each client
   is a redis.cluster.RedisCluster seeded with the first node, and its
   pipeline (ClusterPipeline) splits each batch by slot owner, writes to
   every node, then reads every reply.
2. proxy: three seend standalone behind one nutcracker (twemproxy;
   redis: true, hash fnv1a_64, distribution ketama, server_connections 1,
   as conf/nutcracker.yml); each client is a plain redis.Redis pipeline
   (transaction=False) to the proxy.
3. redis (--redis): three redis-server 7 with --cluster-enabled yes, made
   one cluster by "redis-cli --cluster create" (no replicas), driven as 1.
   A reference: a Redis key per URL costs memory (about 130 bytes each).

The clients (--client): redis-py as above, written as a crawler would
write it, and slow (Python spends 10-20 us a request, so it, not a node or
the proxy, sets requests/s); and redis-benchmark (C), one process with
--rb-conns connections --rb-pipeline deep, with "--cluster" against a
cluster (its connections spread over the nodes, "{tag}" in the key made a
hash tag of the connection's node), plainly against the proxy: fast
enough to show what one proxy can forward. Its URLs are
"https://rb.host-{tag}.example/<run>/item/<random of 10^9>?...", about
the same length, recorded in a filter of their own (run_benchmark says
why); a run of 10^6 repeats about 500 of them, which cost a node what a
new one does.

The set-ups run interleaved (cluster, proxy, redis for each client, then
again) --repeat times, every run with fresh URLs; each figure is the
median of the runs.
Per run: requests/s over the wall time from the moment every client is
connected and released at once to the last client's end; CPU time
(utime + stime of every thread, /proc/PID/stat) per request of the three
nodes together, of nutcracker, and of the client processes (their own
process_time over the timed part, summed), in ns; the share of one CPU
the proxy used (proxy CPU / wall: at 100 % one proxy is the cap). Each run
also counts the replies that were not "new" (Bloom false positives, at
most about error_rate; redis-py only) and errors, and checks that the
nodes' INFO total_commands_processed grew by the requests sent (no MOVED
or retry along the way); an error or a miscount ends the benchmark.
"""
import argparse
import multiprocessing
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")
NODES = 3
ERROR_RATE = 0.001


def log(msg):
    sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def free_port():
    """A port free now, below the kernel's ephemeral range (as
    tests/integration/seendtest.py: a port bind(0) gives out may be taken
    as an outgoing connection's source port before the server binds it)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            floor = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        floor = 32768
    hi = min(floor, 32768) - 1
    while True:
        port = random.randrange(max(1024, hi - 12000), hi)
        if port in free_port.given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        free_port.given.add(port)
        return port


free_port.given = set()


def cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_port(port, proc, what):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit("%s exited %s" % (what, proc.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit("%s did not listen on %d" % (what, port))


def wait_for(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except Exception:  # a node not ready yet answers oddly: try again
            pass
        time.sleep(0.1)
    sys.exit("timed out waiting for %s" % what)


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ---- the servers ----

class Setup:
    """Three server processes (and a proxy) and how a client reaches them."""
    name = ""
    kind = ""           # "cluster": RedisCluster; "proxy": redis.Redis

    def __init__(self):
        self.nodes = []     # Popen of each node
        self.proxy = None   # Popen of nutcracker
        self.port = 0       # where clients connect
        self.ports = []     # each node's

    def procs(self):
        return self.nodes + ([self.proxy] if self.proxy else [])

    def stop(self):
        stop(self.procs())


def start_seend(a, d, name, cluster):
    nd = os.path.join(d, name)
    os.makedirs(nd)
    port = free_port()
    conf = os.path.join(nd, "seend.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "snapshot_interval = 0\njournal = off\nlog_level = warn\n"
                "%s[filter.default]\ncapacity = %d\nerror_rate = %g\n"
                "growth = off\n[filter.rb]\nprefixes = https://rb.\n"
                "capacity = %d\nerror_rate = %g\ngrowth = off\n"
                % (port, nd, "[cluster]\nenabled = on\n" if cluster else "",
                   2 * a.n * a.repeat, ERROR_RATE, 2 * a.n * a.repeat,
                   ERROR_RATE))
    exe = os.path.join(d, "cbd")
    if not os.path.exists(exe):
        os.symlink(os.path.abspath(os.path.join(a.build, "src", "seend")),
                   exe)
    p = subprocess.Popen([exe, "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(nd, "log"), "w"))
    wait_port(port, p, "seend " + name)
    return p, port


def cluster_ok(port, known):
    import redis
    r = redis.Redis(port=port, socket_timeout=5)
    try:
        info = r.execute_command("CLUSTER", "INFO")
    finally:
        r.close()
    if isinstance(info, bytes):
        info = info.decode()
    f = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    return f.get("cluster_state") == "ok" and \
        f.get("cluster_known_nodes") == str(known) and \
        f.get("cluster_slots_assigned") == "16384"


def seend_cluster(a, d):
    s = Setup()
    s.name, s.kind = "seend cluster", "cluster"
    ports = []
    try:
        for i in range(NODES):
            p, port = start_seend(a, d, "c%d" % (i + 1), True)
            s.nodes.append(p)
            ports.append(port)
        cli = os.path.join(a.build, "src", "seen-cli")
        r = subprocess.run([cli, "cluster", "create"] +
                           ["127.0.0.1:%d" % x for x in ports] + ["--yes"],
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.exit("seen-cli cluster create: %s %s" % (r.stdout, r.stderr))
        for x in ports:
            wait_for(lambda: cluster_ok(x, NODES),
                     "seend node %d to know the cluster" % x)
    except BaseException:
        s.stop()
        raise
    s.port, s.ports = ports[0], ports
    return s


def seend_proxy(a, d):
    s = Setup()
    s.name, s.kind = "seend twemproxy", "proxy"
    try:
        ports = []
        for i in range(NODES):
            p, port = start_seend(a, d, "p%d" % (i + 1), False)
            s.nodes.append(p)
            ports.append(port)
        s.ports = ports
        exe = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
        s.port, stats = free_port(), free_port()
        conf = os.path.join(d, "nutcracker.yml")
        with open(conf, "w") as f:
            f.write("seend:\n  listen: 127.0.0.1:%d\n  redis: true\n"
                    "  hash: fnv1a_64\n  distribution: ketama\n"
                    "  auto_eject_hosts: false\n  timeout: 10000\n"
                    "  preconnect: true\n  backlog: 1024\n"
                    "  server_connections: 1\n  servers:\n" % s.port)
            for i, port in enumerate(ports):
                f.write("    - 127.0.0.1:%d:1 seend%d\n" % (port, i + 1))
        s.proxy = subprocess.Popen(
            [exe, "-c", conf, "-s", str(stats), "-a", "127.0.0.1",
             "-o", os.path.join(d, "nutcracker.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(s.port, s.proxy, "nutcracker")
    except BaseException:
        s.stop()
        raise
    return s


def redis_cluster(a, d):
    s = Setup()
    s.name, s.kind = "redis-server cluster", "cluster"
    ports = []
    try:
        for i in range(NODES):
            nd = os.path.join(d, "r%d" % (i + 1))
            os.makedirs(nd)
            port, bus = free_port(), free_port()
            p = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes", "--cluster-port", str(bus),
                 "--cluster-config-file", "nodes.conf", "--dir", nd,
                 "--save", "", "--appendonly", "no", "--daemonize", "no"],
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(nd, "log"), "w"))
            s.nodes.append(p)
            ports.append(port)
            wait_port(port, p, "redis-server")
        r = subprocess.run(["redis-cli", "--cluster", "create"] +
                           ["127.0.0.1:%d" % x for x in ports] +
                           ["--cluster-yes"], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.exit("redis-cli --cluster create: %s %s"
                     % (r.stdout[-2000:], r.stderr[-2000:]))
        for x in ports:
            wait_for(lambda: cluster_ok(x, NODES),
                     "redis-server %d to reach cluster_state:ok" % x)
    except BaseException:
        s.stop()
        raise
    s.port, s.ports = ports[0], ports
    return s


# ---- the clients ----

def make_urls(tag, worker, count):
    """count URLs of about 80 bytes, unique to (tag, worker)."""
    return ["https://www.host%d-%s.example/catalogue/item-%07d/reviews"
            "?page=%d&sort=recent" % (i % 997, tag, worker * 10000000 + i,
                                      i % 50)
            for i in range(count)]


def client(kind, port, urls, pipeline, ready, go, out):
    """One client process: connect, say so, wait for go, send, report
    (new, not new, errors, seconds, own CPU seconds)."""
    import redis
    try:
        if kind == "cluster":
            from redis.cluster import RedisCluster
            r = RedisCluster(host="127.0.0.1", port=port, socket_timeout=60)
        else:
            r = redis.Redis(port=port, socket_timeout=60)
        r.ping()
        new = old = err = 0
        ready.release()
        go.wait()
        c0, t0 = time.process_time(), time.monotonic()
        for i in range(0, len(urls), pipeline):
            p = r.pipeline(transaction=False) if kind == "proxy" \
                else r.pipeline()
            for u in urls[i:i + pipeline]:
                p.setnx(u, 1)
            for x in p.execute(raise_on_error=False):
                if x is True:
                    new += 1
                elif x is False:
                    old += 1
                else:
                    err += 1
        t1, c1 = time.monotonic(), time.process_time()
        r.close()
        out.put((new, old, err, t1 - t0, c1 - c0, None))
    except Exception as e:  # reported by the parent
        ready.release()
        out.put((0, 0, 0, 0.0, 0.0, "%s: %s" % (type(e).__name__, e)))


def commands(s):
    """Commands the nodes of s have processed so far (INFO stats), less
    the INFO calls themselves."""
    import redis
    n = 0
    for port in s.ports:
        r = redis.Redis(port=port, socket_timeout=10)
        try:
            n += int(r.info("stats")["total_commands_processed"])
        finally:
            r.close()
    return n


def run_benchmark(a, s, tag):
    """One run of redis-benchmark (-n a.n, --rb-conns connections,
    --rb-pipeline deep) through set-up s: in cluster mode its connections
    are spread over the nodes, and "{tag}" in the key becomes a hash tag
    of the connection's node; through the proxy the key is hashed whole.
    __rand_int__ draws from 10^9, so a run repeats about n^2 / 2e9 URLs
    (500 of 10^6): they cost the node what a new one does. The URLs start
    "https://rb." and go to seend's filter "rb": in cluster mode a node's
    part of a filter is split by slot, and one hash tag a connection puts
    a node's whole share into one slot, which fills that slot's part; in
    the filter "default" the redis-py runs' URLs of those slots would then
    be answered "seen". That slot's part is small and stays in cache, so
    the nodes' CPU figure of these runs is the low side of a crawl's."""
    import resource
    argv = ["redis-benchmark", "-p", str(s.port), "-n", str(a.n),
            "-c", str(a.rb_conns), "-P", str(a.rb_pipeline),
            "-r", "1000000000", "-q"]
    if s.kind == "cluster":
        argv.append("--cluster")
    argv += ["SETNX", "https://rb.host-{tag}.example/%s/item/__rand_int__"
             "?page=1&sort=recent" % tag, "1"]
    cmds0 = commands(s)
    nodes0 = sum(cpu_ticks(p.pid) for p in s.nodes)
    proxy0 = cpu_ticks(s.proxy.pid) if s.proxy else 0
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    rb = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                       stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    nodes1 = sum(cpu_ticks(p.pid) for p in s.nodes)
    proxy1 = cpu_ticks(s.proxy.pid) if s.proxy else 0
    cmds = commands(s) - cmds0 - len(s.ports)
    if rb.returncode != 0:
        sys.exit("%s: redis-benchmark: %s %s" % (s.name, rb.stdout[-1000:],
                                                 rb.stderr[-1000:]))
    out = rb.stdout.replace("\r", "\n")
    if "rror" in out + rb.stderr:
        sys.exit("%s: redis-benchmark: %s %s" % (s.name, out[-1000:],
                                                 rb.stderr[-1000:]))
    # its own rate leaves out its start (CONFIG GET, CLUSTER NODES)
    last = [l for l in out.splitlines() if "requests per second" in l]
    rate = float(last[-1].split(":")[-1].split()[0]) if last else a.n / wall
    # every request reached a node once (MOVED, retries would add more):
    # the nodes' count is the check that the run did what it says
    if not a.n <= cmds <= a.n * 1.01 + 1000:
        sys.exit("%s: the nodes processed %d commands for %d requests"
                 % (s.name, cmds, a.n))
    ns = 1e9 / TICKS / a.n
    return {"rate": rate, "wall": wall,
            "nodes": (nodes1 - nodes0) * ns,
            "proxy": (proxy1 - proxy0) * ns if s.proxy else None,
            "proxy_pct": (proxy1 - proxy0) / TICKS / (a.n / rate) * 100
            if s.proxy else None,
            "client": (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime -
                       ru0.ru_stime) * 1e9 / a.n,
            "old": None}


def run(a, s, tag, how):
    """One timed run of a.n fresh URLs through set-up s, by the client
    processes of redis-py (how "redis-py") or by redis-benchmark."""
    if how == "redis-benchmark":
        return run_benchmark(a, s, tag)
    ctx = multiprocessing.get_context("fork")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    share = [a.n // a.clients + (i < a.n % a.clients)
             for i in range(a.clients)]
    workers = [ctx.Process(target=client, args=(
        s.kind, s.port, make_urls(tag, i, share[i]), a.pipeline, ready,
        go, out)) for i in range(a.clients)]
    for w in workers:
        w.start()
    for _ in workers:
        ready.acquire()
    cmds0 = commands(s)
    nodes0 = sum(cpu_ticks(p.pid) for p in s.nodes)
    proxy0 = cpu_ticks(s.proxy.pid) if s.proxy else 0
    t0 = time.monotonic()
    go.set()
    res = [out.get() for _ in workers]
    wall = time.monotonic() - t0
    nodes1 = sum(cpu_ticks(p.pid) for p in s.nodes)
    proxy1 = cpu_ticks(s.proxy.pid) if s.proxy else 0
    for w in workers:
        w.join()
    cmds = commands(s) - cmds0 - len(s.ports)
    bad = [x[5] for x in res if x[5]]
    if bad:
        sys.exit("%s: a client failed: %s" % (s.name, bad[0]))
    new, old, err = (sum(x[i] for x in res) for i in range(3))
    if err:
        sys.exit("%s: %d errors in %d replies" % (s.name, err, a.n))
    if new + old != a.n:
        sys.exit("%s: %d replies for %d requests" % (s.name, new + old, a.n))
    if cmds != a.n:
        sys.exit("%s: the nodes processed %d commands for %d requests"
                 % (s.name, cmds, a.n))
    ns = 1e9 / TICKS / a.n
    return {"rate": a.n / wall, "wall": wall,
            "nodes": (nodes1 - nodes0) * ns,
            "proxy": (proxy1 - proxy0) * ns if s.proxy else None,
            "proxy_pct": (proxy1 - proxy0) / TICKS / wall * 100
            if s.proxy else None,
            "client": sum(x[4] for x in res) * 1e9 / a.n,
            "old": old}


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=".")
    ap.add_argument("-n", type=int, default=1000000,
                    help="requests a run (default 1000000)")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--pipeline", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--client", default="redis-py,redis-benchmark",
                    help="comma list of redis-py, redis-benchmark")
    ap.add_argument("--rb-conns", type=int, default=12,
                    help="redis-benchmark's connections (default 12)")
    ap.add_argument("--rb-pipeline", type=int, default=64,
                    help="redis-benchmark's pipeline depth (default 64)")
    ap.add_argument("--redis", action="store_true",
                    help="also a redis-server 7 cluster, as a reference")
    ap.add_argument("--only", default="",
                    help="comma list of cluster, proxy, redis")
    ap.add_argument("--keep", help="keep the servers' files and logs here")
    a = ap.parse_args()
    for exe in ("seend", "seen-cli"):
        if not os.access(os.path.join(a.build, "src", exe), os.X_OK):
            sys.exit("no %s/src/%s" % (a.build, exe))
    try:
        import redis.cluster  # noqa: F401 (Debian's python3-redis)
    except ImportError:
        sys.exit("redis-py with redis.cluster is needed (python3-redis)")
    which = a.only.split(",") if a.only else \
        ["cluster", "proxy"] + (["redis"] if a.redis else [])
    makers = {"cluster": seend_cluster, "proxy": seend_proxy,
              "redis": redis_cluster}
    for w in which:
        if w not in makers:
            sys.exit("--only: unknown %r" % w)
    hows = a.client.split(",")
    for h in hows:
        if h not in ("redis-py", "redis-benchmark"):
            sys.exit("--client: unknown %r" % h)
        if not shutil.which(h if h != "redis-py" else "true"):
            sys.exit("--client: no %s" % h)
    d = a.keep or tempfile.mkdtemp(prefix="cluster_bench-")
    os.makedirs(d, exist_ok=True)
    setups = []
    log("machine: %s" % machine())
    load_start = os.getloadavg()
    log("load at start: %.2f %.2f %.2f" % load_start)
    try:
        for w in which:
            setups.append(makers[w](a, d))
        res = {(s.name, h): [] for s in setups for h in hows}
        for rep in range(a.repeat):
            for h in hows:
                for s in setups:
                    r = run(a, s, "r%d%s%s" % (rep, s.name.split()[-1][:3],
                                               h[-3:]), h)
                    res[(s.name, h)].append(r)
                    log("%-21s %-15s run %d: %8.0f req/s  nodes %6.0f ns  "
                        "proxy %s  client %6.0f ns  load %.2f" % (
                        s.name, h, rep + 1, r["rate"], r["nodes"],
                        "%6.0f ns" % r["proxy"] if r["proxy"] is not None
                        else "     -   ", r["client"], os.getloadavg()[0]))
    finally:
        for s in setups:
            s.stop()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    load_end = os.getloadavg()
    med = statistics.median
    print("three nodes on one machine, SETNX <fresh ~80-byte URL> 1, %d "
          "requests a run, median of %d runs" % (a.n, a.repeat))
    print("redis-py: %d client processes, pipelines of %d; redis-benchmark:"
          " -c %d -P %d" % (a.clients, a.pipeline, a.rb_conns,
                            a.rb_pipeline))
    print("machine: %s; load at start %.2f %.2f %.2f, at end %.2f %.2f %.2f"
          % ((machine(),) + load_start + load_end))
    print("%-21s %-15s %11s %9s %9s %9s %10s %8s" % (
        "set-up", "client", "requests/s", "nodes ns", "proxy ns",
        "proxy CPU", "client ns", "not new"))
    for h in hows:
        for s in setups:
            rs = res[(s.name, h)]
            px = [r["proxy"] for r in rs if r["proxy"] is not None]
            pp = [r["proxy_pct"] for r in rs if r["proxy_pct"] is not None]
            old = [r["old"] for r in rs if r["old"] is not None]
            print("%-21s %-15s %11.0f %9.0f %9s %9s %10.0f %8s" % (
                s.name, h, med(r["rate"] for r in rs),
                med(r["nodes"] for r in rs),
                "%.0f" % med(px) if px else "-",
                "%.0f %%" % med(pp) if pp else "-",
                med(r["client"] for r in rs),
                "%d" % sum(old) if old else "-"))
    print("ns: CPU time (utime + stime) per request; nodes: the three "
          "servers together;\nproxy CPU: nutcracker's use of one CPU over "
          "the run (100 %% is one proxy's cap);\nnot new: SETNX answered 0"
          " over all runs (Bloom false positives for seend), of %d fresh "
          "URLs" % (a.n * a.repeat))

if __name__ == "__main__":
    main()
