#!/usr/bin/python3
"""
dump_bench - BF.SCANDUMP and BF.LOADCHUNK of a big filter over loopback:
the rate each way, and how long other clients wait meanwhile.  A
benchmark, not a test: it prints figures.

    /usr/bin/python3 bench/dump_bench.py --seend build/src/seend
        [--capacity 1000000000] [--keys 2000000] [--runs 3]

Starts two seend daemons (A and B, temporary data directories, journal
off so that only the dump is measured), creates a filter sized for
--capacity keys at error_rate 0.001 on A (BF.RESERVE, NONSCALING) and adds
--keys keys to it (the bytes moved depend on the capacity, not on how full
it is), then per run:

  dump:  redis-py's scandump loop from A into memory, bytes / seconds;
  load:  redis-py's loadchunk loop of those chunks into B under a new
         name, bytes / seconds until the last chunk's +OK (which waits for
         the filter's snapshot to be written and fsynced) and until the
         chunk before it (the transfer alone);
  PING:  another process sends PING back to back to the daemon being
         dumped (or loaded) the whole time; the longest and the 99th
         percentile wait are printed.

Every key added is then checked on B (BF.MEXISTS, all must answer 1).
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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, seend, name):
        self.dir = tempfile.mkdtemp(prefix="seend-dumpbench-%s-" % name)
        self.port = free_port()
        conf = os.path.join(self.dir, "seend.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s/data\n"
                    "journal = off\nsnapshot_interval = 0\n"
                    "max_memory = off\n" % (self.port, self.dir))
        self.proc = subprocess.Popen([seend, "-c", conf],
                                     stderr=open(os.path.join(
                                         self.dir, "log"), "w"))
        for _ in range(200):
            try:
                redis.Redis(port=self.port).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise SystemExit("seend did not start: see %s/log" % self.dir)

    def client(self):
        return redis.Redis(port=self.port)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


PINGER = r"""
import sys, time, redis
r = redis.Redis(port=int(sys.argv[1]))
waits = []
sys.stdout.write("go\n")
sys.stdout.flush()
import select
while not select.select([sys.stdin], [], [], 0)[0]:
    t = time.perf_counter()
    r.ping()
    waits.append(time.perf_counter() - t)
waits.sort()
print(len(waits), waits[-1] * 1000 if waits else 0,
      waits[int(len(waits) * 0.99)] * 1000 if waits else 0)
"""


class Pinger:
    """PING back to back from another process (not this one's GIL) until
    finish(); then the count, the longest and the 99th percentile wait."""

    def __init__(self, port):
        self.proc = subprocess.Popen([sys.executable, "-c", PINGER,
                                      str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()

    def finish(self):
        out, _ = self.proc.communicate("stop\n")
        n, mx, p99 = out.split()
        return int(n), float(mx), float(p99)


def dump(r, name):
    chunks, it, total = [], 0, 0
    while True:
        it, data = r.bf().scandump(name, it)
        if it == 0:
            return chunks, total
        chunks.append((it, data))
        total += len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seend", required=True)
    ap.add_argument("--capacity", type=int, default=1000000000)
    ap.add_argument("--keys", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    a, b = Daemon(args.seend, "a"), Daemon(args.seend, "b")
    try:
        ra, rb = a.client(), b.client()
        ra.execute_command("BF.RESERVE", "big", 0.001, args.capacity,
                           "NONSCALING")
        keys = ["https://example.com/page/%d" % i for i in range(args.keys)]
        t = time.time()
        for i in range(0, len(keys), 20000):
            ra.bf().madd("big", *keys[i:i + 20000])
        print("# %d keys added in %.1f s; filter %s bytes" % (
            len(keys), time.time() - t,
            ra.bf().info("big").size))
        print("# %s, %d CPUs, Python %s, redis-py %s" % (
            platform.platform(), os.cpu_count(), platform.python_version(),
            redis.__version__))
        rows = []
        for run in range(args.runs):
            p = Pinger(a.port)
            t = time.perf_counter()
            chunks, total = dump(ra, "big")
            dt = time.perf_counter() - t
            np_a, max_a, p99_a = p.finish()
            name = "copy%d" % run
            p = Pinger(b.port)
            t = time.perf_counter()
            for it, data in chunks[:-1]:
                rb.bf().loadchunk(name, it, data)
            t_xfer = time.perf_counter() - t
            rb.bf().loadchunk(name, *chunks[-1])
            t_all = time.perf_counter() - t
            np_b, max_b, p99_b = p.finish()
            rows.append((total / dt / 1e6, total / t_xfer / 1e6,
                         total / t_all / 1e6))
            print("run %d: %d chunks, %.0f MB: dump %.0f MB/s (PING on A: "
                  "%d, max %.2f ms, p99 %.2f ms); load %.0f MB/s transfer, "
                  "%.0f MB/s to the durable +OK (PING on B: %d, max %.2f "
                  "ms, p99 %.2f ms)" % (
                      run, len(chunks), total / 1e6, rows[-1][0], np_a,
                      max_a, p99_a, rows[-1][1], rows[-1][2], np_b, max_b,
                      p99_b))
            del chunks
            if run > 0:
                rb.delete(name)
        bad = 0
        for i in range(0, len(keys), 20000):
            bad += sum(1 for x in rb.bf().mexists("copy0", *keys[i:i + 20000])
                       if not x)
        print("keys missing on the copy: %d of %d" % (bad, len(keys)))
        print("median: dump %.0f MB/s, load %.0f MB/s (transfer), %.0f MB/s "
              "(durable)" % tuple(statistics.median(r[i] for r in rows)
                                  for i in range(3)))
        return 1 if bad else 0
    finally:
        a.stop()
        b.stop()


if __name__ == "__main__":
    sys.exit(main())
