#!/usr/bin/python3
"""
cuckoo_fpr - the false-positive rate a cuckoo filter gives, measured
against its error_rate at every fill (issue 24).  A benchmark, not a
test: it prints figures.  Standard library only.

    /usr/bin/python3 bench/cuckoo_fpr.py BUILD_DIR
        [--capacity 1000000] [--rates 0.01,0.001] [--type cuckoo]
        [--queries 0.01=1000000,0.001=4000000] [--steps 10] [--growth 2]
        [--grow-to 10]

Starts BUILD_DIR/src/seend (temporary config and data directory, journal
off, snapshots off) with, for each rate R in --rates, two filters of
--capacity at error_rate R: one with growth = off, one with growth =
--growth.  Over one raw TCP connection, requests pipelined:

  growth = off: fills the filter with fresh keys (SEEN) in --steps equal
  steps up to its capacity (10 %, 20 %, ... 100 %);
  growth = G:   fills it in steps of 1x capacity up to --grow-to x.

"Filled to n keys" means INFO's count is n: a fresh key that SEEN answers
1 (a false positive) is not recorded, so each step is topped up with more
fresh keys until count reaches n.  After each step, CHECK on --queries
fresh keys that were never recorded; every 1 is a false positive.  The
line printed per step: keys held, slices, bits per key (INFO bytes * 8 /
keys held), the measured rate (hits / queries), the target (error_rate),
INFO's estimated_fp_rate, and a verdict:

  ok      measured <= target
  ~       measured > target, but within 3 sigma of it (sigma: the binomial
          standard deviation of the count at the target rate,
          sqrt(N p (1 - p)));
  OVER    measured > target + 3 sigma: above the target beyond noise.

Then FORGET of every other recorded key (half of them; only keys whose
SEEN answered 0, so each FORGET removes that key's own copy and must
answer 1), the rate measured again on new fresh keys, and two checks of
exactness: every key still recorded must answer CHECK 1 (no false
negatives; printed as "lost"), and how many of the forgotten keys still
answer 1.  That last is not the false-positive rate: a fresh key whose
fingerprint is already in one of its buckets is answered 1 and not stored,
so within one table no two recorded keys share a fingerprint and a bucket
pair, and a forgotten key can still answer 1 only through another slice
(a grown filter) holding its fingerprint.

--type bloom runs the same steps on Bloom filters (FORGET skipped), for
comparison.

    /usr/bin/python3 bench/cuckoo_fpr.py BUILD_DIR --bits
        [--bits-capacities 1e4,1e6,1e8] [--bits-rates 0.01,0.001,0.0001]

instead prints the memory of filters with growth = off, a Bloom and a
cuckoo one per capacity and rate: INFO's bytes * 8 / capacity (bits per
key at capacity), the cuckoo's fingerprint bits and fp_rate_at_capacity
for both.  Nothing is inserted.
"""
import argparse
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

CHUNK = 50000           # requests per send; replies are read meanwhile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    """One pipelined connection: a writer thread sends, the caller reads."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rbuf = b""

    def _readn(self, n):
        while len(self.rbuf) < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise SystemExit("cuckoo_fpr: seend closed the connection")
            self.rbuf += d
        out, self.rbuf = self.rbuf[:n], self.rbuf[n:]
        return out

    def _readline(self):
        while b"\r\n" not in self.rbuf:
            d = self.s.recv(65536)
            if not d:
                raise SystemExit("cuckoo_fpr: seend closed the connection")
            self.rbuf += d
        line, self.rbuf = self.rbuf.split(b"\r\n", 1)
        return line

    def pipeline(self, cmd, fname, keyfmt, idx):
        """Sends "cmd fname key" for every i in idx (a range or a list;
        key = keyfmt % i), pipelined.  Every reply must be 0 or 1 (3
        bytes).  Returns (hits, positions in idx of the 1 replies)."""
        head = b"%s %s " % (cmd, fname)
        line = head + keyfmt + b"\r\n"
        n = len(idx)
        err = []

        def writer():
            try:
                for a in range(0, n, CHUNK):
                    self.s.sendall(b"".join(
                        [line % i for i in idx[a:a + CHUNK]]))
            except OSError as e:
                err.append(e)

        t = threading.Thread(target=writer)
        t.start()
        hits, where = 0, []
        for a in range(0, n, CHUNK):
            m = min(CHUNK, n - a)
            r = self._readn(3 * m)
            if r.count(b"\r\n") != m or r.count(b"0\r\n") + \
                    r.count(b"1\r\n") != m:
                t.join()
                raise SystemExit("cuckoo_fpr: %s %s: a reply other than "
                                 "0/1 near %r" %
                                 (cmd.decode(), fname.decode(), r[:200]))
            c = r.count(b"1")
            hits += c
            if c:
                p = r.find(b"1\r\n")
                while p != -1:
                    where.append(a + p // 3)
                    p = r.find(b"1\r\n", p + 3)
        t.join()
        if err:
            raise SystemExit("cuckoo_fpr: send: %s" % err[0])
        return hits, where

    def info(self, fname):
        self.s.sendall(b"INFO %s\r\n" % fname)
        d = {}
        while True:
            line = self._readline().decode()
            if line == "END":
                return d
            if line.startswith("ERR"):
                raise SystemExit("cuckoo_fpr: INFO: " + line)
            k, _, v = line.partition(" ")
            d[k] = v


def verdict(hits, n, target):
    mean = n * target
    sigma = math.sqrt(n * target * (1 - target))
    if hits <= mean:
        return "ok"
    return "~" if hits <= mean + 3 * sigma else "OVER"


class Filter:
    """One filter under test: its recorded keys are rec%d (indices in
    self.recorded), its query keys q<serial>:%d, never recorded."""

    def __init__(self, conn, name, rate, nq):
        self.c = conn
        self.name = name.encode()
        self.rate = rate
        self.nq = nq
        self.next_key = 0           # keys rec0.. rec(next_key-1) sent
        self.fp_at_insert = set()   # of those, the ones SEEN answered 1
        self.forgotten = set()
        self.qserial = 0
        self.rows = []
        self.kfmt = b"http://example.com/%s/rec/%%d" % self.name

    def fill_to(self, goal):
        """SEEN fresh keys until INFO count is goal."""
        while True:
            count = int(self.c.info(self.name)["count"])
            if count >= goal:
                return count
            a, b = self.next_key, self.next_key + (goal - count)
            _, where = self.c.pipeline(b"SEEN", self.name, self.kfmt,
                                       range(a, b))
            self.fp_at_insert.update(a + w for w in where)
            self.next_key = b

    def measure(self, label, n=None):
        n = n or self.nq
        self.qserial += 1
        qfmt = b"http://example.com/%s/q%d/%%d" % (self.name, self.qserial)
        hits, _ = self.c.pipeline(b"CHECK", self.name, qfmt, range(n))
        inf = self.c.info(self.name)
        count = int(inf["count"])
        measured = hits / n
        est = float(inf["estimated_fp_rate"])
        sigma = math.sqrt(self.rate * (1 - self.rate) / n)
        row = {
            "label": label, "count": count, "slices": int(inf["slices"]),
            "bpk": int(inf["bytes"]) * 8 / count if count else 0.0,
            "hits": hits, "n": n, "measured": measured,
            "target": self.rate, "bound": self.rate + 3 * sigma,
            "est": est, "verdict": verdict(hits, n, self.rate),
        }
        self.rows.append(row)
        print_row(self.name.decode(), row)
        return row

    def recorded(self):
        return [i for i in range(self.next_key)
                if i not in self.fp_at_insert and i not in self.forgotten]

    def forget_half(self):
        rec = self.recorded()
        half = rec[::2]
        hits, _ = self.c.pipeline(b"FORGET", self.name, self.kfmt, half)
        self.forgotten.update(half)
        return len(half), hits

    def exactness(self):
        rec = self.recorded()
        hits, _ = self.c.pipeline(b"CHECK", self.name, self.kfmt, rec)
        lost = len(rec) - hits
        fz = sorted(self.forgotten)
        still = self.c.pipeline(b"CHECK", self.name, self.kfmt, fz)[0] \
            if fz else 0
        return len(rec), lost, len(fz), still


HEADER = ("%-16s %-22s %10s %6s %7s %9s %11s %10s %10s %11s %7s" %
          ("filter", "step", "keys held", "slices", "bits/k", "queries",
           "measured", "target", "3-sigma", "INFO est", "verdict"))


def print_row(fname, r):
    print("%-16s %-22s %10d %6d %7.2f %9d %11.6f %10g %10.6f %11.3g %7s" %
          (fname, r["label"], r["count"], r["slices"], r["bpk"], r["n"],
           r["measured"], r["target"], r["bound"], r["est"], r["verdict"]),
          flush=True)


def wait_listening(port, proc, timeout=30.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit("cuckoo_fpr: seend exited with %d" %
                             proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("cuckoo_fpr: seend did not start listening")


def parse_queries(text, rates):
    q = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            q[float(k)] = int(float(v))
        elif part:
            for r in rates:
                q.setdefault(r, int(float(part)))
    for r in rates:
        q.setdefault(r, 1000000)
    return q


def bits_table(seend, caps, rates):
    """Bits per key at capacity of fixed Bloom and cuckoo filters."""
    d = tempfile.mkdtemp(prefix="seend-cuckoobits-")
    port = free_port()
    conf = os.path.join(d, "seend.conf")
    names = []
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "journal = off\nsnapshot_interval = 0\nlog_level = warn\n"
                % (port, d))
        for c in caps:
            for r in rates:
                for t in ("bloom", "cuckoo"):
                    name = "%s_%d_%s" % (t, c, ("%g" % r).replace(".", "")
                                         .replace("-", "m"))
                    names.append((name, c, r, t))
                    f.write("[filter.%s]\ntype = %s\ncapacity = %d\n"
                            "error_rate = %g\ngrowth = off\n" %
                            (name, t, c, r))
    proc = subprocess.Popen([seend, "-c", conf], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "log"), "w"))
    try:
        wait_listening(port, proc, timeout=120)
        conn = Conn(port)
        info = {n: conn.info(n.encode()) for n, _, _, _ in names}
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)
    print("| capacity | error_rate | bloom bits/key | bloom hashes | bloom "
          "fp at capacity | cuckoo bits/key | cuckoo fp bits | cuckoo fp "
          "at capacity | cuckoo / bloom |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in caps:
        for r in rates:
            b = info[[n for n, cc, rr, t in names
                      if (cc, rr, t) == (c, r, "bloom")][0]]
            k = info[[n for n, cc, rr, t in names
                      if (cc, rr, t) == (c, r, "cuckoo")][0]]
            bb = int(b["bytes"]) * 8 / c
            kb = int(k["bytes"]) * 8 / c
            print("| %s | %g | %.2f | %s | %s | %.2f | %s | %s | %.3f |" %
                  ("{:,}".format(c), r, bb, b["hashes"],
                   b["fp_rate_at_capacity"], kb, k["fingerprint_bits"],
                   k["fp_rate_at_capacity"], kb / bb))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("build")
    ap.add_argument("--capacity", type=float, default=1e6)
    ap.add_argument("--rates", default="0.01,0.001")
    ap.add_argument("--type", default="cuckoo", choices=("cuckoo", "bloom"))
    ap.add_argument("--queries", default="0.01=1000000,0.001=4000000",
                    help="fresh keys per measurement: N, or RATE=N,...")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--growth", type=int, default=2)
    ap.add_argument("--grow-to", type=int, default=10)
    ap.add_argument("--bits", action="store_true",
                    help="print the bits-per-key table instead")
    ap.add_argument("--bits-capacities", default="1e4,1e6,1e8")
    ap.add_argument("--bits-rates", default="0.01,0.001,0.0001")
    a = ap.parse_args()
    cap = int(a.capacity)
    rates = [float(x) for x in a.rates.split(",") if x]
    nq = parse_queries(a.queries, rates)
    seend = os.path.join(os.path.abspath(a.build), "src", "seend")
    if not os.access(seend, os.X_OK):
        raise SystemExit("cuckoo_fpr: no %s (build it first)" % seend)
    if a.bits:
        bits_table(seend, [int(float(x)) for x in
                           a.bits_capacities.split(",")],
                   [float(x) for x in a.bits_rates.split(",")])
        return

    d = tempfile.mkdtemp(prefix="seend-cuckoofpr-")
    port = free_port()
    conf = os.path.join(d, "seend.conf")
    plan = []       # (filter name, rate, growth)
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\ndata_dir = %s\n"
                "journal = off\nsnapshot_interval = 0\nlog_level = warn\n"
                % (port, d))
        for r in rates:
            for g in ("off", str(a.growth)):
                name = "%s_%s_g%s" % (a.type[0], ("%g" % r)[2:], g)
                plan.append((name, r, g))
                f.write("[filter.%s]\ntype = %s\ncapacity = %d\n"
                        "error_rate = %g\ngrowth = %s\n"
                        % (name, a.type, cap, r, g))
    proc = subprocess.Popen([seend, "-c", conf], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "log"), "w"))
    t0 = time.time()
    try:
        wait_listening(port, proc)
        conn = Conn(port)
        print("cuckoo_fpr: %s, capacity %d, rates %s, type %s; queries per "
              "step: %s; seend %s (pid %d)" %
              (time.strftime("%Y-%m-%d %H:%M:%S"), cap, a.rates, a.type,
               ", ".join("%g: %d" % (r, nq[r]) for r in rates), seend,
               proc.pid))
        print()
        print(HEADER)
        summary = []
        for name, r, g in plan:
            flt = Filter(conn, name, r, nq[r])
            if g == "off":
                goals = [(cap * s // a.steps, "%d %% of capacity" %
                          (100 * s // a.steps)) for s in
                         range(1, a.steps + 1)]
            else:
                goals = [(cap * x, "%dx capacity" % x) for x in
                         range(1, a.grow_to + 1)]
            for goal, label in goals:
                got = flt.fill_to(goal)
                if got != goal:
                    print("%-16s %s: count %d, wanted %d" %
                          (name, label, got, goal))
                flt.measure(label)
            if a.type == "cuckoo":
                nf, ok = flt.forget_half()
                if ok != nf:
                    print("%-16s FORGET: %d of %d answered 1  <-- WRONG" %
                          (name, ok, nf))
                flt.measure("after FORGET of half")
                nrec, lost, nfz, still = flt.exactness()
                print("%-16s exactness: %d recorded keys, %d lost (CHECK 0)"
                      "; %d forgotten, %d (%.6f) still answer 1; %d fresh "
                      "keys answered SEEN 1 while filling" %
                      (name, nrec, lost, nfz, still,
                       still / nfz if nfz else 0.0, len(flt.fp_at_insert)))
            else:
                nrec, lost, _, _ = flt.exactness()
                print("%-16s exactness: %d recorded keys, %d lost" %
                      (name, nrec, lost))
            over = [x["label"] for x in flt.rows if x["verdict"] == "OVER"]
            worst = max(flt.rows, key=lambda x: x["measured"] / x["target"])
            summary.append((name, over, worst, lost))
            print()
        print("summary:")
        for name, over, worst, lost in summary:
            print("  %-16s worst step %s: %.6f (%.2f x target); steps above "
                  "target + 3 sigma: %s; keys lost: %d" %
                  (name, worst["label"], worst["measured"],
                   worst["measured"] / worst["target"],
                   ", ".join(over) if over else "none", lost))
        print("elapsed %.0f s" % (time.time() - t0))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
