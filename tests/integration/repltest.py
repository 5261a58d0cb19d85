#!/usr/bin/python3
"""
What the replication tests share (test_replication.py, test_resync.py):
talking to a primary and its replicas over long pipelines, waiting for them
to catch up, reading INFO replication, and a writer thread whose URLs are
acknowledged by their replies or by WAIT. Holds no tests itself.
"""
import random
import re
import socket
import threading
import time

from seendtest import *

# Smaller under valgrind (SEEND_WRAPPER): the properties are the same.
N = 50000 if WRAPPER else 1000000
FAILOVERS = 4 if WRAPPER else 10

FILTERS = """
[filter.default]
capacity = 2000000
error_rate = 0.001
"""

READONLY = "READONLY You can't write against a read only replica."


def url(prefix, n):
    return "https://%s.example/p/%d" % (prefix, n)


# ---- talking to servers ----

class Pipe:
    """A raw connection for long pipelines: the requests go out from a
    thread while the replies are read, so neither side's buffers fill."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=60 * SLOW)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def run(self, payload, n, at=None):
        """Sends payload (n requests), returns the n replies (the lines
        without CRLF, as bytes). at=(k, fn): fn() once k replies are in."""
        failed = []

        def send():
            try:
                self.s.sendall(payload)
            except OSError as e:
                failed.append(e)

        th = threading.Thread(target=send, daemon=True)
        th.start()
        chunks, lines = [], 0
        while lines < n:
            c = self.s.recv(1 << 20)
            if not c:
                raise Failed("connection closed after %d of %d replies "
                             "(send: %r)" % (lines, n, failed))
            chunks.append(c)
            lines += c.count(b"\n")
            if at is not None and lines >= at[0]:
                at[1]()
                at = None
        th.join(30 * SLOW)
        return b"".join(chunks).split(b"\r\n")[:n]

    def close(self):
        self.s.close()


class Line:
    """A line-protocol connection that returns each reply line whole, with
    its line end: a reply must end in CRLF."""

    def __init__(self, s):
        self.s = socket.create_connection(("127.0.0.1", s.port),
                                          timeout=30 * SLOW)
        self.buf = b""

    def cmd(self, text):
        self.s.sendall(text.encode() + b"\n")
        return self.reply()

    def reply(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise Failed("connection closed")
            self.buf += chunk
        i = self.buf.index(b"\n") + 1
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def close(self):
        self.s.close()


def line_payload(cmd, urls):
    return b"".join(b"%s %s\n" % (cmd, u.encode()) for u in urls)


def setnx_payload(urls):
    out = []
    for u in urls:
        b = u.encode()
        out.append(b"*3\r\n$5\r\nSETNX\r\n$%d\r\n%s\r\n$1\r\n1\r\n"
                   % (len(b), b))
    return b"".join(out)


def record(t, s, urls, resp=False):
    """SEENs (or SETNXs) every URL through s, pipelined; checks the
    replies are answers."""
    p = Pipe(s.port)
    r = p.run(setnx_payload(urls) if resp else line_payload(b"SEEN", urls),
              len(urls))
    p.close()
    ok = (b":0", b":1") if resp else (b"0", b"1")
    bad = [x for x in r if x not in ok]
    t.ok(not bad, "replies to %s: %r" % ("SETNX" if resp else "SEEN",
                                         bad[:5]))


def checks(s, urls):
    """CHECK of every URL on s, pipelined: the replies, as bytes."""
    p = Pipe(s.port)
    r = p.run(line_payload(b"CHECK", urls), len(urls))
    p.close()
    return r


def all_seen(t, s, urls, what):
    r = checks(s, urls)
    missing = [u for u, x in zip(urls, r) if x != b"1"]
    t.ok(not missing, "%s: %d of %d URLs not seen on %s (replies %r); "
         "first: %r" % (what, len(missing), len(urls), s.name,
                        sorted(set(r))[:5], missing[:3]))


def few_false_positives(t, s, prefix, what):
    """URLs never sent are (almost all) new on s: a replica that answered
    1 to everything would pass all_seen."""
    urls = [url(prefix, i) for i in range(20000)]
    r = checks(s, urls)
    t.ok(set(r) <= {b"0", b"1"}, "CHECK replies: %r" % sorted(set(r))[:5])
    t.ok(r.count(b"1") < 200, "%s: %d of 20000 URLs never sent answer seen "
         "on %s" % (what, r.count(b"1"), s.name))


def info(s, section="replication"):
    """INFO <section> over RESP, as a dict."""
    c = Resp(s.port, timeout=10)
    try:
        text = c.cmd("INFO", section)
    finally:
        c.close()
    if isinstance(text, Err):
        raise Failed("INFO %s on %s: %s" % (section, s.name, text))
    d = {}
    for l in text.decode().split("\r\n"):
        if l and not l.startswith("#") and ":" in l:
            k, v = l.split(":", 1)
            d[k] = v
    return d


def try_info(s, section="replication"):
    """INFO, or None while s cannot answer (restarting)."""
    try:
        return info(s, section)
    except (OSError, EOFError):
        return None


def sync_stats(s):
    i = info(s, "stats")
    return dict((k, int(i[k])) for k in ("sync_full", "sync_partial_ok",
                                         "sync_partial_err"))


def ask(s, *words):
    c = Resp(s.port, timeout=30)
    try:
        return c.cmd(*words)
    finally:
        c.close()


def caught_up(p, replicas):
    """The replicas' links are up and each has reached the primary's
    offset (read again after, so that it held still)."""
    pi = try_info(p)
    if pi is None or pi.get("role") != "master":
        return False
    off = pi["master_repl_offset"]
    for r in replicas:
        ri = try_info(r)
        if (ri is None or ri.get("role") != "slave" or
                ri.get("master_link_status") != "up" or
                ri.get("slave_repl_offset") != off):
            return False
    pi = try_info(p)
    return pi is not None and pi["master_repl_offset"] == off


def state(servers):
    """What the servers say, for a failure message."""
    out = []
    for s in servers:
        out.append("%s (port %d): %r" % (s.name, s.port, try_info(s)
                                         if s.proc else "not running"))
        log = [l for l in s.read_log().splitlines()
               if not re.search(r"debug: client \d+ .*(closed|accepted|"
                                r"connected)", l)]
        out.append("%s log tail:\n%s" % (s.name, "\n".join(log[-25:])))
    return "\n".join(out)


def at_rest(p, replicas):
    """(primary's INFO, its ROLE, the replicas' INFOs, their ROLEs), read
    while the primary's offset held still and every replica, and every
    acknowledgement the primary shows, was at it; None if not."""
    try:
        pi, prole = info(p), ask(p, "ROLE")
        ris = [info(r) for r in replicas]
        rroles = [ask(r, "ROLE") for r in replicas]
        again = info(p)["master_repl_offset"]
    except (OSError, EOFError):
        return None
    off = pi["master_repl_offset"]
    acks = [l.split("offset=")[1].split(",")[0]
            for k, l in pi.items() if re.fullmatch(r"slave\d+", k)]
    if (again != off or prole[1] != int(off) or
            any(x[2] != off.encode() for x in prole[2]) or
            any(a != off for a in acks) or
            any(ri.get("slave_repl_offset") != off for ri in ris) or
            any(rr[-1] != int(off) for rr in rroles)):
        return None
    return pi, prole, ris, rroles


def wait_caught_up(t, p, replicas, timeout=30, what="caught up"):
    if not wait_until(lambda: caught_up(p, replicas), timeout, step=0.05):
        raise Failed("%s: the replicas did not reach the primary's offset "
                     "within %ss\n%s" % (what, timeout * SLOW,
                                         state([p] + list(replicas))))


def wait_info(t, s, pred, timeout=10, what="INFO"):
    if not wait_until(lambda: (lambda i: i is not None and pred(i))(
            try_info(s)), timeout, step=0.05):
        raise Failed("%s on %s, within %ss\n%s" % (what, s.name,
                                                     timeout * SLOW,
                                                     state([s])))


def wait_image_saved(t, r):
    """A replica's full sync is its own once the snapshot of the image is
    written (until then a restart after kill -9 syncs fully again: the
    journal does not hold the image)."""
    lc = r.client()
    try:
        if not wait_until(lambda: (lambda i: int(i["snapshots_ok"]) >= 1 and
                                   i["snapshot_in_progress"] == "0")(
                                       lc.info("default")), 30, step=0.02):
            raise Failed("%s wrote no snapshot of its full sync: %r"
                         % (r.name, lc.info("default")))
    finally:
        lc.close()


def stop_all(t, *servers):
    """SIGTERM: each exits 0 (under valgrind or ASan a memory error shows
    here)."""
    for s in servers:
        if s.proc is not None:
            rc = s.stop()
            t.ok(rc == 0, "%s's exit status after SIGTERM: %r; log tail:\n%s"
                 % (s.name, rc, s.read_log()[-6000:] if rc != 0 else ""))


def primary(t, name="p", extra=""):
    return Server(t, extra, filters=FILTERS, unix=False, name=name).start()


def replica(t, p, name="r", extra=""):
    return Server(t, "replicaof = 127.0.0.1:%d\n%s" % (p.port, extra),
                  filters=FILTERS, unix=False, name=name).start()


class Writer:
    """A thread that records new URLs through one server in batches of
    SEEN until stop() or the server dies. Without wait_ms a URL is
    acknowledged when its reply arrived; with it, each batch is followed by
    WAIT 1 <wait_ms>, and the URLs of that batch and of every batch before
    it on the connection are acknowledged only when WAIT answers >= 1."""

    def __init__(self, s, prefix, batch=200, pause=0.005, wait_ms=None,
                 resp=False):
        self.prefix, self.batch, self.pause = prefix, batch, pause
        self.wait_ms, self.resp = wait_ms, resp
        self.sent = 0          # URLs 0 .. sent-1 had their SEEN sent
        self.acked = 0         # URLs 0 .. acked-1 are acknowledged
        self.waits = []        # WAIT's answers
        self.bad = []
        self.stopping = threading.Event()
        self.s = socket.create_connection(("127.0.0.1", s.port),
                                          timeout=60 * SLOW)
        self.buf = b""
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def urls(self, upto=None):
        return [url(self.prefix, i) for i in range(
            self.acked if upto is None else upto)]

    def line(self):
        """One reply line, or None at the end of the connection (a line
        cut short by a kill -9 is no reply)."""
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        if not line.endswith(b"\r"):
            self.bad.append("a reply not ending in CRLF: %r" % line)
            return None
        return line[:-1].decode(errors="replace")

    def loop(self):
        n = 0
        try:
            while not self.stopping.is_set():
                urls = [url(self.prefix, n + i) for i in range(self.batch)]
                if self.resp:
                    req = setnx_payload(urls)
                    if self.wait_ms is not None:
                        req += enc("WAIT", 1, self.wait_ms)
                    pre = ":"
                else:
                    req = line_payload(b"SEEN", urls)
                    if self.wait_ms is not None:
                        req += b"WAIT 1 %d\n" % self.wait_ms
                    pre = ""
                self.s.sendall(req)
                self.sent = n + self.batch
                for i in range(self.batch):
                    r = self.line()
                    if r is None:
                        return          # the server died
                    if r not in (pre + "0", pre + "1"):
                        self.bad.append("reply %r to a new URL" % r)
                        return
                    if self.wait_ms is None:
                        self.acked = n + i + 1
                if self.wait_ms is not None:
                    r = self.line()
                    if r is None:
                        return
                    if not (r.startswith(pre) and r[len(pre):].isdigit()):
                        self.bad.append("WAIT reply %r" % r)
                        return
                    self.waits.append(int(r[len(pre):]))
                    if self.waits[-1] >= 1:
                        self.acked = n + self.batch
                n += self.batch
                if self.pause:
                    time.sleep(self.pause)
        except OSError:
            return

    def stop(self, t):
        self.stopping.set()
        self.th.join(60 * SLOW)
        t.ok(not self.th.is_alive(), "the writer thread stopped")
        self.s.close()
        t.ok(not self.bad, "writer: %r" % self.bad)


def filters(s):
    """FILTERS on s: {name: {field: value}}."""
    c = s.client(timeout=30)
    try:
        c.send("FILTERS\n")
        out = {}
        for l in c.lines_until_end():
            name, *fields = l.split()
            out[name] = dict(f.split("=", 1) for f in fields)
        return out
    finally:
        c.close()


def agree(t, p, replicas, urls, what, sample=2000):
    """The primary and each replica have the same filters with the same
    counts and sizes, and answer a sample of urls and as many URLs never
    sent alike (a replica that missed a change, or answers 1 to all,
    differs)."""
    want = filters(p)
    rng = random.Random(len(urls))
    probe = rng.sample(urls, min(sample, len(urls)))
    probe += [url("never-%s" % what.replace(" ", "-"), i)
              for i in range(sample)]
    answers = checks(p, probe)
    for r in replicas:
        got = filters(r)
        t.eq(sorted(got), sorted(want), "%s: the filters on %s" % (what,
                                                                r.name))
        for name in want:
            for f in ("count", "bytes", "slices"):
                t.eq(got.get(name, {}).get(f), want[name].get(f),
                     "%s: filter %s's %s on %s" % (what, name, f, r.name))
        diff = sum(1 for a, b in zip(checks(r, probe), answers) if a != b)
        t.eq(diff, 0, "%s: CHECKs of %d URLs answered otherwise on %s "
             "than on the primary" % (what, len(probe), r.name))
