#!/usr/bin/env python3
"""The journal (issue 13) on real daemons: SIGKILL under load loses no
acknowledged key, torn tails and damage, a full disk, always's fsync,
journal_max.

A Bloom filter may answer "seen" (1) for a key it never held, at most at
its error_rate (0.001 here): where a test sends fresh keys it accepts those
false positives within fp_allowed, and where it needs a key the filter does
not hold it picks one that CHECK answers 0 for (fresh_key)."""
import hashlib
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from seendtest import *

# 20 random kills in the normal run (the issue asks for 20+); under
# valgrind each restart costs seconds, and the same rounds check the same
# code: fewer there keeps CI short
ROUNDS = 20 if not WRAPPER else 6
CONNS, DEPTH = 4, 256
ERROR_RATE = 0.001      # every filter of these tests


def fp_allowed(queries, rate=ERROR_RATE):
    """The most false positives honest over queries lookups of keys not
    held: expected + 3 standard deviations + slack."""
    mean = queries * rate
    return int(mean + 3 * math.sqrt(mean) + 3)


def seen_new(t, c, keys):
    """SEEN of fresh keys, pipelined: each answer 0, or 1 for a false
    positive (within fp_allowed). Returns the keys answered 0, which the
    journal holds."""
    c.send("".join("SEEN %s\n" % k for k in keys))
    got = [c.line() for k in keys]
    t.eq([g for g in got if g not in ("0", "1")][:3], [], "answers")
    fps = got.count("1")
    t.ok(fps <= fp_allowed(len(keys)), "fresh keys answered seen: %d of "
         "%d (false positives: at most %d)" % (fps, len(keys),
                                                fp_allowed(len(keys))))
    return [k for k, g in zip(keys, got) if g == "0"]


def fresh_key(t, c, prefix):
    """A key the filter does not hold (CHECK 0; CHECK records nothing), for
    a test that needs a SEEN to be a new key's."""
    for i in range(100):
        k = "https://%s/%d" % (prefix, i)
        if c.cmd("CHECK %s" % k) == "0":
            return k
    t.ok(False, "no fresh key among 100: the filter answers everything")


class Loader:
    """CONNS connections, each DEPTH SEENs in flight, recording every key
    whose 0 (or 1) came back, until the server goes away."""

    def __init__(self, srv, prefix):
        self.srv, self.prefix = srv, prefix
        self.acked, self.sent = [], 0
        self.per = [0] * CONNS      # keys answered, by connection
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,))
                        for i in range(CONNS)]

    def start(self):
        for th in self.threads:
            th.start()
        return self

    def join(self):
        for th in self.threads:
            th.join(timeout=60 * SLOW)

    def run(self, n):
        try:
            c = self.srv.client(timeout=20)
        except OSError:
            return
        i = 0
        try:
            while True:
                keys = ["https://%s/%d/%d" % (self.prefix, n, i + k)
                        for k in range(DEPTH)]
                i += DEPTH
                c.send("".join("SEEN %s\n" % k for k in keys))
                with self.lock:
                    self.sent += len(keys)
                for k in keys:
                    r = c.line()
                    if r not in ("0", "1"):
                        return
                    with self.lock:
                        self.acked.append(k)
                        self.per[n] += 1
        except OSError:
            return
        finally:
            c.close()


def check_all(t, s, keys, what):
    """Every key answers 1 to CHECK; pipelined."""
    c = s.client(timeout=60)
    missing = 0
    for i in range(0, len(keys), 1000):
        part = keys[i:i + 1000]
        c.send("".join("CHECK %s\n" % k for k in part))
        for k in part:
            if c.line() != "1":
                missing += 1
    c.close()
    t.eq(missing, 0, "%s: keys acknowledged but missing of %d"
         % (what, len(keys)))


def segments(d):
    return sorted(f for f in os.listdir(d)
                  if re.fullmatch(r"journal\.[0-9a-f]{16}", f))


@test
def sigkill_under_load_loses_no_acknowledged_key(t):
    rnd = random.Random(13)
    s = Server(t, "journal = everysec\nsnapshot_interval = 2\n",
               filters="[filter.default]\ncapacity = 2000000\n")
    total = 0
    for r in range(ROUNDS):
        s.start()
        ld = Loader(s, "r%d" % r).start()
        delay = rnd.uniform(0.05, 0.8) * (2 if WRAPPER else 1)
        time.sleep(delay)
        s.kill9()
        ld.join()
        s.start()
        check_all(t, s, ld.acked, "round %d (kill after %.2fs)" % (r, delay))
        total += len(ld.acked)
        s.kill9()
    print("# %d rounds, %d acknowledged keys, all there after restart"
          % (ROUNDS, total))
    t.ok(total > ROUNDS * 100, "the load got keys acknowledged")


def loader_progress(ld):
    with ld.lock:
        return list(ld.per)


@test
def always_under_load_mode_flips_sigterm_and_sigkill_lose_nothing(t):
    """journal = always under pipelined load from several connections,
    each waiting for the fsync its turn's replies need: every connection
    goes on through mode changes; SIGTERM and SIGKILL lose nothing."""
    filters = "[filter.default]\ncapacity = 2000000\n"
    always = "journal = always\nsnapshot_interval = 1h\n"
    everysec = "journal = everysec\nsnapshot_interval = 1h\n"
    s = Server(t, always, filters=filters)
    s.start()
    ld = Loader(s, "flip").start()
    for extra in (everysec, always, everysec, always):
        before = loader_progress(ld)
        s.write_config(extra, filters)
        s.send_signal(signal.SIGHUP)
        # every connection: one waiting for a sync when the mode
        # changed must be answered too
        t.ok(wait_until(lambda: all(
            a > b + 2 * DEPTH for a, b in zip(loader_progress(ld), before)),
            timeout=10),
             "each connection answered after a reload to %s (%s -> %s)"
             % (extra.split("\n")[0], before, loader_progress(ld)))
    t.ok(wait_until(lambda: "journal: everysec -> always" in s.read_log(),
                    timeout=5), "the mode changed: log")
    # SIGTERM with every connection's requests in flight: all answered
    # keys saved, the daemon gone within its usual time
    t.eq(s.stop(), 0, "SIGTERM under always's load")
    ld.join()
    t.ok(all(not th.is_alive() for th in ld.threads), "clients finished")
    s.start()
    check_all(t, s, ld.acked, "after SIGTERM")
    total = len(ld.acked)
    rnd = random.Random(14)
    for r in range(3 if WRAPPER else 6):
        ld = Loader(s, "always%d" % r).start()
        time.sleep(rnd.uniform(0.1, 0.6) * (2 if WRAPPER else 1))
        s.kill9()
        ld.join()
        s.start()
        check_all(t, s, ld.acked, "always, round %d" % r)
        total += len(ld.acked)
    print("# always: %d acknowledged keys, all there" % total)
    t.ok(total > 10 * DEPTH, "the load got keys acknowledged")


@test
def torn_tail_is_dropped_with_a_warning(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n")
    s.start()
    c = s.client()
    keys = ["https://torn/%d" % i for i in range(100)]
    seen_new(t, c, keys)
    c.close()
    s.kill9()
    seg = os.path.join(s.data_dir, segments(s.data_dir)[-1])
    size = os.path.getsize(seg)
    with open(seg, "rb") as f:
        data = f.read()
    with open(seg, "ab") as f:
        # the first 7 bytes of a key batch's header: type, length, name
        # id 0, a count of 1
        f.write(bytes([0x42, 24, 0, 0, 1, 0, 0]))
    s.start()
    log = s.read_log()
    t.contains(log, "torn tail of 7 bytes at offset %d" % size)
    t.contains(log, seg)
    check_all(t, s, keys, "after a torn tail")
    t.eq(os.path.getsize(seg), size, "the segment is cut back to its records")


def batches(data):
    """(offset, count) of each key batch of a version 2 segment image."""
    off, out = 40, []
    while off < len(data):
        if data[off] == 0x4E:              # a name record
            off += 84
        elif data[off] == 0x42:            # a key batch
            count = int.from_bytes(data[off + 4:off + 8], "little")
            out.append((off, count))
            off += 24 + 8 * count
        else:
            raise ValueError("record type 0x%02x at %d" % (data[off], off))
    return out


@test
def damage_stops_the_start_and_changes_nothing(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n")
    s.start()
    c = s.client()
    keys = ["https://dmg/%d" % i for i in range(200)]
    # two round trips: keys 50-99 are in batches of their own; only the
    # keys answered 0 are journalled (a false positive is not)
    journalled = []
    for part in (keys[:50], keys[50:100]):
        journalled.append(len(seen_new(t, c, part)))
    c.close()
    s.kill9()
    s.start()                      # a second segment
    c = s.client()
    seen_new(t, c, keys[100:])
    c.close()
    s.kill9()
    segs = segments(s.data_dir)
    t.ok(len(segs) >= 2, "two segments: %r" % segs)
    old = os.path.join(s.data_dir, segs[0])
    with open(old, "rb") as f:
        data = bytearray(f.read())
    # inside the first batch of the second round trip
    first, n = None, 0
    for off, count in batches(data):
        if n >= journalled[0] and first is None:
            first = off
        n += count
    t.eq(n, sum(journalled), "the first segment holds the keys answered 0")
    data[first + 24 + 5] ^= 0x40
    with open(old, "wb") as f:
        f.write(data)
    before = {n: hashlib.sha256(open(os.path.join(s.data_dir, n), "rb")
                                .read()).hexdigest() for n in segs}
    rc = s.start(expect_fail=True)
    t.eq(rc, 1, "exit status on damage")
    log = s.read_log()
    t.contains(log, old)
    m = re.search(r"truncate -s (\d+) (\S+?);", log)
    t.ok(m is not None, "the way out is in the log:\n" + log[-1500:])
    after = {n: hashlib.sha256(open(os.path.join(s.data_dir, n), "rb")
                               .read()).hexdigest() for n in segs}
    t.eq(after, before, "the journal is left as it was")
    subprocess.check_call(["truncate", "-s", m.group(1), m.group(2)])
    s.start()
    check_all(t, s, keys[:50] + keys[100:], "after the truncate")


def strace_ok():
    return shutil.which("strace") is not None and not WRAPPER


@test
def always_fsyncs_before_replying(t):
    if not strace_ok():
        print("# skipped: needs strace and no wrapper")
        return
    s = Server(t, "journal = always\nsnapshot_interval = 1h\n")
    trace = t.path("trace")
    s.start()
    pid = s.pid()
    fddir = "/proc/%d/fd" % pid
    jfd = set()
    for n in os.listdir(fddir):
        try:
            if "/journal." in os.readlink(os.path.join(fddir, n)):
                jfd.add(n)
        except OSError:
            pass
    t.eq(len(jfd), 1, "one journal descriptor open")
    tr = subprocess.Popen(["strace", "-f", "-qq", "-o", trace, "-e",
                           "trace=openat,write,writev,fdatasync,fsync,sendto",
                           "-p", str(pid)])
    time.sleep(1.0)
    c = s.client()
    for r in range(20):
        seen_new(t, c, ["https://alw/%d/%d" % (r, i) for i in range(50)])
    c.close()
    time.sleep(0.3)
    tr.send_signal(signal.SIGINT)
    tr.wait(timeout=10)
    s.stop()
    # a sync that another thread's call interrupts shows in strace -f as
    # its start ("fdatasync(5 <unfinished ...>") and, lines later, its end
    # ("<... fdatasync resumed>) = 0"); only the end makes records durable
    unsynced, replies, started = False, 0, {}
    for line in open(trace):
        m = re.search(r'openat\(.*journal\.[0-9a-f]{16}".*= (\d+)', line)
        if m:
            jfd.add(m.group(1))
            continue
        pid = line.split(None, 1)[0]
        m = re.search(r'<\.\.\. (fdatasync|fsync) resumed>.*= 0', line)
        if m:
            if started.pop(pid, None) in jfd:
                unsynced = False
            continue
        m = re.search(r'\b(write|writev|fdatasync|fsync|sendto)\((\d+)',
                      line)
        if not m:
            continue
        call, fd = m.groups()
        if fd in jfd and call in ("write", "writev"):
            unsynced = True
        elif call in ("fdatasync", "fsync") and "<unfinished" in line:
            started[pid] = fd
        elif fd in jfd and line.rstrip().endswith("= 0"):
            unsynced = False
        elif call in ("write", "sendto") and '"0\\r\\n' in line:
            replies += 1
            t.ok(not unsynced, "a reply of 0 left after a journal write "
                 "and before its fdatasync: " + line.strip())
    t.ok(replies >= 20, "replies seen in the trace: %d" % replies)


def journal_size(d):
    total = 0
    for n in segments(d):
        try:
            total += os.path.getsize(os.path.join(d, n))
        except OSError:
            pass
    return total


@test
def the_journal_stays_under_journal_max(t):
    """journal_max is a bound: the daemon holds it at every moment (its
    own peak, journal_bytes_peak, counts every write and rotation), and
    so every sample of the directory is under it too, however the
    sampling falls. 1.6 MB of hashes go through a 1 MiB journal."""
    s = Server(t, "journal = everysec\njournal_max = 1M\n"
               "snapshot_interval = 1h\n",
               filters="[filter.default]\ncapacity = 1000000\n")
    s.start()
    c = s.client()
    # as many under valgrind: fewer would never reach half of the
    # bound, and the early rounds are what this checks
    n = 200000
    worst = 0
    for b in range(0, n, 2000):
        seen_new(t, c, ["https://max/%d" % i for i in range(b, b + 2000)])
        worst = max(worst, journal_size(s.data_dir))
    info = c.info("default")
    sinfo = c.info()
    peak = int(sinfo["journal_bytes_peak"])
    print("# %d keys (%d bytes of hashes): the journal reached %d bytes "
          "(%d sampled); turns that waited for snapshots: %s"
          % (n, n * 8, peak, worst, sinfo["journal_max_waits"]))
    t.ok(peak <= 1 << 20, "journal within journal_max: peak %d" % peak)
    t.ok(worst <= 1 << 20, "journal within journal_max: sampled %d"
         % worst)
    t.ok(peak >= 1 << 19, "the journal did fill (peak %d): the bound "
         "was tested" % peak)
    t.ok(int(info["snapshots_ok"]) >= 2, "snapshots taken early: %s"
         % info["snapshots_ok"])
    c.close()
    s.kill9()
    s.start()
    check_all(t, s, ["https://max/%d" % i for i in range(n)],
              "after journal_max rounds")


@test
def journal_max_holds_when_snapshots_are_slower_than_keys(t):
    """A filter whose snapshot takes far longer to write than the keys
    take to fill the other half of journal_max: turns wait for the
    snapshots (journal_max_waits), the bound holds, and nothing
    acknowledged is lost to a kill -9 afterwards."""
    s = Server(t, "journal = everysec\njournal_max = 1M\n"
               "snapshot_interval = 1h\n",
               filters="[filter.default]\ncapacity = 30000000\n"
               "growth = off\n")
    s.start()
    n = 10000 if WRAPPER else 150000
    keys = ["https://slow/%d" % i for i in range(n)]
    c = s.client(timeout=120)
    for b in range(0, n, 5000):
        seen_new(t, c, keys[b:b + 5000])
    sinfo = c.info()
    peak = int(sinfo["journal_bytes_peak"])
    print("# a %s-byte filter: the journal reached %d bytes; turns that "
          "waited for snapshots: %s" % (c.info("default")["bytes"], peak,
                                        sinfo["journal_max_waits"]))
    t.ok(peak <= 1 << 20, "journal within journal_max: peak %d" % peak)
    c.close()
    s.kill9()
    s.start()
    check_all(t, s, keys, "after waiting for journal_max")
    s.kill9()


@test
def the_journal_spans_about_two_intervals(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 2\n")
    s.start()
    c = s.client()
    t0, oldest, nsegs = time.time(), 0.0, 0
    i = 0
    while time.time() - t0 < 10:
        seen_new(t, c, ["https://span/%d/%d" % (i, k) for k in range(100)])
        i += 1
        now = time.time()
        for n in segments(s.data_dir):
            try:
                with open(os.path.join(s.data_dir, n), "rb") as f:
                    head = f.read(32)
            except OSError:
                continue
            if len(head) < 32:
                continue
            # the header's creation time (Unix seconds)
            age = now - int.from_bytes(head[24:32], "little")
            if now - t0 > 5:
                oldest = max(oldest, age)
        nsegs = max(nsegs, len(segments(s.data_dir)))
        time.sleep(0.05)
    print("# oldest live segment %.1f s old, at most %d segments"
          % (oldest, nsegs))
    t.ok(oldest < 6.5 * (3 if WRAPPER else 1),
         "no segment outlives about two intervals: %.1f s" % oldest)
    t.ok(nsegs <= 6, "segments at once: %d" % nsegs)
    c.close()
    s.kill9()


@test
def a_journal_that_cannot_be_written_refuses_with_always(t):
    # the unprivileged variant of the full disk: journal writes fail with
    # ENOSPC past 1500 bytes in all (SEEND_FAULT_JOURNAL_LIMIT)
    s = Server(t, "journal = always\nsnapshot_interval = 1h\n",
               env={"SEEND_FAULT_JOURNAL_LIMIT": "1500"})
    s.start()
    c = s.client()
    before = ["https://lim/%d" % i for i in range(100)]
    # 40 + 84 + 800 bytes and 24 a batch: under 1500; the 300 more not
    seen_new(t, c, before)
    held = s.client()
    held.send("".join("SEEN https://lim-held/%d\n" % i
                      for i in range(300)))
    held.s.settimeout(1.0)
    try:
        got = held.line()
    except (socket.timeout, TimeoutError):
        got = None
    t.eq(got, None, "no 0 leaves for keys whose records failed")
    # CHECK now, after every key that was set: nothing is set after it
    fresh = fresh_key(t, c, "lim-new")
    r = c.cmd("SEEN %s" % fresh)
    t.ok(r.startswith("ERR journal ") and "No space left" in r,
         "a new key is refused: " + r)
    t.eq(c.cmd("SEEN %s" % before[5]), "1", "a key seen before")
    st = c.info()["journal_status"]
    t.ok(st.startswith("error "), "journal_status: " + st)
    c.close()
    held.close()
    s.kill9()
    s.env.pop("SEEND_FAULT_JOURNAL_LIMIT")
    s.start()
    check_all(t, s, before, "acknowledged before the fault")
    s.kill9()


class Tmpfs:
    """A 2 MiB tmpfs (root only) to fill up."""

    def __init__(self, t):
        self.path = t.path("tmpfs")
        os.makedirs(self.path)
        subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=2m",
                               "tmpfs", self.path])

    def fill(self):
        """Writes a filler file until the file system is full."""
        fd = os.open(os.path.join(self.path, "filler"),
                     os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            pass
        os.close(fd)

    def free(self):
        os.unlink(os.path.join(self.path, "filler"))

    def close(self):
        subprocess.call(["umount", "-l", self.path])


def full_disk(t, mode):
    if os.geteuid() != 0:
        print("# skipped: mounting a tmpfs needs root")
        return
    fs = Tmpfs(t)
    try:
        s = Server(t, "journal = %s\nsnapshot_interval = 1h\n" % mode,
                   data_dir=os.path.join(fs.path, "data"))
        s.start()
        c = s.client()
        before = ["https://before/%d" % i for i in range(500)]
        seen_new(t, c, before)
        fs.fill()
        during, held = [], None
        if mode == "always":
            # the first 0 after the disk filled cannot be made durable:
            # its reply waits for the snapshot that ends the fault
            # (more than the page the journal's last write left room in:
            # 600 keys are 4800 bytes of hashes, and 13 KB of requests
            # that one read takes, so one turn)
            held = s.client()
            during = ["https://held/%d" % i for i in range(600)]
            held.send("".join("SEEN %s\n" % k for k in during))
            held.s.settimeout(1.0)
            try:
                got = held.line()
            except (socket.timeout, TimeoutError):
                got = None
            t.eq(got, None, "a reply to a key not journalled")
            # CHECK after the held turn set its keys: none is set after
            refused = fresh_key(t, c, "refused")
            r = c.cmd("SEEN %s" % refused)
            t.ok(r.startswith("ERR journal ") and "No space left" in r,
                 "a new key is refused: " + r)
            t.eq(c.cmd("CHECK %s" % refused), "0", "and not set")
            t.eq(c.cmd("SEEN %s" % before[0]), "1", "a key seen before")
        else:
            # 8000 bytes of hashes: more than the page left
            during = ["https://during/%d" % i for i in range(1000)]
            seen_new(t, c, during)
        st = c.info()["journal_status"]
        t.ok(st.startswith("error ") and "No space left" in st,
             "INFO journal_status during the fault: " + st)
        fs.free()
        t.ok(wait_until(lambda: c.info()["journal_status"] == "ok",
                        timeout=10), "journal_status back to ok")
        if held is not None:
            held.s.settimeout(10 * SLOW)
            got = [held.line() for k in during]
            t.eq([g for g in got if g not in ("0", "1")][:3], [],
                 "the held replies, once a snapshot has their keys")
            t.ok(got.count("1") <= fp_allowed(len(during)),
                 "held replies: false positives %d" % got.count("1"))
        after = ["https://after/%d" % i for i in range(500)]
        seen_new(t, c, after)
        c.close()
        s.kill9()
        s.start()
        check_all(t, s, before + during + after, "after the full disk")
        s.kill9()
    finally:
        fs.close()


@test
def full_disk_everysec_keeps_answering_and_loses_nothing(t):
    full_disk(t, "everysec")


@test
def full_disk_always_refuses_new_keys_and_loses_nothing(t):
    full_disk(t, "always")


if __name__ == "__main__":
    run()
