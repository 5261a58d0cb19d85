"""seen-cli import: a Redis set (a Scrapy-Redis dupefilter) read with SSCAN
from a real redis-server and SADDed into a seend filter."""
import hashlib
import math
import re
import socket
import subprocess
import threading

from seendtest import *

N = 1000000
RATE = 0.001
# runtime filters get these; said here so the bound below is honest
NEW_FILTERS = """new_filter_capacity = 1000000
new_filter_error_rate = %s
new_filter_growth = 2
""" % RATE


def fp(i):
    """A Scrapy request fingerprint: 40 hex characters."""
    return hashlib.sha1(b"https://example.com/page/%d" % i).hexdigest() \
        .encode()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Resp:
    """A minimal RESP2 client (stdlib only): pipelined commands, replies
    as Python values; an error reply is an Exception instance."""

    def __init__(self, port, token=None, timeout=60.0):
        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=timeout * SLOW)
        self.buf = b""
        self.pos = 0
        if token is not None and self.cmd("AUTH", token) != "OK":
            raise Failed("AUTH refused")

    def _fill(self):
        chunk = self.s.recv(1 << 20)
        if not chunk:
            raise Failed("connection closed")
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 2
                return line
            self._fill()

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Exception(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            v = self.buf[self.pos:self.pos + n]
            self.pos += n + 2
            return v
        if t == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise Failed("bad reply %r" % line)

    def pipeline(self, cmds):
        """Sends every command (from a thread, so neither side blocks on
        a full socket buffer) and returns their replies in order."""
        data = b"".join(encode(c) for c in cmds)
        w = threading.Thread(target=self.s.sendall, args=(data,))
        w.start()
        replies = [self._reply() for _ in cmds]
        w.join()
        return replies

    def cmd(self, *args):
        return self.pipeline([args])[0]

    def close(self):
        self.s.close()


def sadd_all(port, key, members, batch=1000):
    r = Resp(port)
    replies = r.pipeline([["SADD", key] + members[i:i + batch]
                          for i in range(0, len(members), batch)])
    r.close()
    for x in replies:
        if isinstance(x, Exception):
            raise Failed("SADD %s: %s" % (key, x))


def all_seen(port, filt, members, batch=10000, token=None):
    """Members seend does not answer seen for (SMISMEMBER in batches)."""
    r = Resp(port, token)
    replies = r.pipeline([["SMISMEMBER", filt] + members[i:i + batch]
                          for i in range(0, len(members), batch)])
    r.close()
    missing = []
    for i, rep in enumerate(replies):
        if isinstance(rep, Exception):
            raise Failed("SMISMEMBER %s: %s" % (filt, rep))
        for j, v in enumerate(rep):
            if v != 1:
                missing.append(members[i * batch + j])
    return missing


def scard(port, filt):
    r = Resp(port)
    v = r.cmd("SCARD", filt)
    r.close()
    return v


def seend(t, extra=""):
    return Server(t, server_extra=NEW_FILTERS + extra)


def cli_import(s, *args, pre=(), timeout=120):
    p = subprocess.run([SEEN_CLI, "-p", str(s.port)] + list(pre) +
                       ["import"] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout * SLOW)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


SUMMARY = re.compile(r"^imported (\d+) members of (\S+) from (\S+) into "
                     r"filter (\S+): (\d+) new, (\d+) already seen, "
                     r"in [0-9.]+ s \(\S+/s\)$")


def summary(t, out):
    lines = out.splitlines()
    t.eq(len(lines), 1, "one summary line: %r" % out)
    m = SUMMARY.match(lines[0])
    t.ok(m is not None, "summary line: %r" % lines[0])
    return m


@test
def import_of_a_million_fingerprints_gives_every_member_seen(t):
    r = RedisServer(t)
    members = [fp(i) for i in range(N)]
    sadd_all(r.port, "fp_key", members)
    t.eq(scard(r.port, "fp_key"), N, "redis holds the set")
    with seend(t) as s:
        url = "redis://127.0.0.1:%d" % r.port
        rc, out, err = cli_import(s, url, "fp_key", "--filter", "fps")
        t.eq(rc, 0, "exit status (stderr %r)" % err)
        t.eq(err, "", "nothing on stderr when it is not a terminal")
        m = summary(t, out)
        t.eq(m.group(1), str(N), "members imported")
        t.eq(m.group(2), "fp_key")
        t.eq(m.group(3), url)
        t.eq(m.group(4), "fps")
        new, old = int(m.group(5)), int(m.group(6))
        t.eq(new + old, N, "new + already seen")
        count = scard(s.port, "fps")
        t.eq(count, new, "SCARD is the members answered new")
        fp_bound = N * RATE + 3 * math.sqrt(N * RATE) + 3
        t.ok(N - fp_bound <= count <= N,
             "SCARD %d within FPR of %d (>= %d)" % (count, N, N - fp_bound))
        t.eq(all_seen(s.port, "fps", members), [], "every member seen")
        # the same import again: nothing is new
        rc, out, err = cli_import(s, url, "fp_key", "--filter", "fps")
        t.eq(rc, 0, "second run: %r" % err)
        m = summary(t, out)
        t.eq((m.group(5), m.group(6)), ("0", str(N)), "all already seen")
        t.eq(scard(s.port, "fps"), count, "SCARD unchanged")


@test
def on_a_terminal_a_progress_bar_is_redrawn_in_place(t):
    import os
    import pty
    r = RedisServer(t)
    sadd_all(r.port, "k", [fp(i) for i in range(20000)])
    with seend(t) as s:
        master, slave = pty.openpty()
        p = subprocess.Popen([SEEN_CLI, "-p", str(s.port), "import",
                              "redis://127.0.0.1:%d" % r.port, "k"],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []

        def read_bar():
            # read while it runs: a pty may drop what is left unread when
            # its last writer closes
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # EIO: the last writer closed the pty
                    return
                if not chunk:
                    return
                chunks.append(chunk)
        reader = threading.Thread(target=read_bar)
        reader.start()
        out, _ = p.communicate(timeout=60 * SLOW)
        reader.join(30 * SLOW)
        bar = b"".join(chunks)
        os.close(master)
        t.eq(p.returncode, 0, bar)
        summary(t, out.decode())
        bar = bar.decode()
        t.ok(bar.startswith("\r"), "redrawn with CR: %r" % bar[:80])
        last = bar.rstrip("\r\n").split("\r")[-1]
        t.ok(re.match(r"^20000/20000 100% \[#+\] \S+/s, \S+ s left",
                      last) is not None, "final bar: %r" % last)
        t.ok(bar.endswith("\n"), "the bar's line is ended")


@test
def an_existing_filter_gains_the_members(t):
    r = RedisServer(t)
    members = [fp(i) for i in range(5000)]
    sadd_all(r.port, "spider:dupefilter", members)
    with seend(t) as s:
        before = [b"https://already.example/%d" % i for i in range(100)]
        sadd_all(s.port, "mine", before + members[:10])
        t.eq(scard(s.port, "mine"), 110)
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d" % r.port,
                                  "spider:dupefilter", "--filter", "mine")
        t.eq(rc, 0, err)
        m = summary(t, out)
        t.eq(m.group(1), "5000")
        t.ok(int(m.group(6)) >= 10, "the 10 it held are already seen")
        t.ok(scard(s.port, "mine") >= 110 + 4990 - 10, "SCARD grew")
        t.eq(all_seen(s.port, "mine", members + before), [],
             "old and imported members seen")


@test
def filter_defaults_to_the_key_and_the_url_selects_the_db(t):
    r = RedisServer(t)
    rr = Resp(r.port)
    t.eq(rr.cmd("SELECT", "3"), "OK")
    members = [fp(i) for i in range(2000)]
    t.eq(rr.pipeline([["SADD", "spider:dupefilter"] + members]), [2000])
    rr.close()
    with seend(t) as s:
        # db 0 has no such key
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d" % r.port,
                                  "spider:dupefilter")
        t.eq(rc, 1, "db 0: exit status")
        t.contains(err, "has no key spider:dupefilter")
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d/3" % r.port,
                                  "spider:dupefilter")
        t.eq(rc, 0, err)
        m = summary(t, out)
        t.eq(m.group(4), "spider:dupefilter", "filter named as the key")
        t.eq(all_seen(s.port, "spider:dupefilter", members), [])
        # a key that cannot be a filter name needs --filter
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d/3" % r.port,
                                  "no such/key")
        t.eq(rc, 2, "invalid filter name: usage error")
        t.contains(err, "--filter")


@test
def a_missing_or_wrong_type_key_is_a_clear_error(t):
    r = RedisServer(t)
    rr = Resp(r.port)
    t.eq(rr.cmd("SET", "str", "x"), "OK")
    t.eq(rr.cmd("RPUSH", "lst", "a", "b"), 2)
    rr.close()
    with seend(t) as s:
        url = "redis://127.0.0.1:%d" % r.port
        rc, out, err = cli_import(s, url, "nokey", "--filter", "f1")
        t.eq((rc, out), (1, ""), "missing key")
        t.contains(err, "has no key nokey")
        rc, out, err = cli_import(s, url, "str", "--filter", "f1")
        t.eq((rc, out), (1, ""), "string key")
        t.contains(err, "key str holds a string, not a set")
        rc, out, err = cli_import(s, url, "lst", "--filter", "f1")
        t.eq(rc, 1, "list key")
        t.contains(err, "key lst holds a list, not a set")
        t.eq(scard(s.port, "f1"), 0, "no filter was filled")


@test
def a_stopped_server_on_either_side_is_an_error(t):
    r = RedisServer(t)
    sadd_all(r.port, "k", [b"a", b"b"])
    with seend(t) as s:
        url = "redis://127.0.0.1:%d" % r.port
        r.stop()
        rc, out, err = cli_import(s, url, "k")
        t.eq((rc, out), (1, ""), "redis stopped")
        t.contains(err, "redis: cannot connect to 127.0.0.1:%d" % r.port)
    r2 = RedisServer(t)
    sadd_all(r2.port, "k", [b"a", b"b"])
    s2 = seend(t)
    rc, out, err = cli_import(s2, "redis://127.0.0.1:%d" % r2.port, "k")
    t.eq((rc, out), (1, ""), "seend not running")
    t.contains(err, "seend: cannot connect to 127.0.0.1:%d" % s2.port)


@test
def a_seend_error_ends_the_run_and_says_how_far_it_got(t):
    r = RedisServer(t)
    sadd_all(r.port, "k", [fp(i) for i in range(3000)])
    with seend(t, "create_filters = off\n") as s:
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d" % r.port, "k",
                                  "--filter", "nosuch")
        t.eq((rc, out), (1, ""), "SADD into a filter that cannot be made")
        t.contains(err, "SADD nosuch")
        t.contains(err, "0 members of k were imported into filter nosuch "
                   "before the error")


@test
def members_are_binary_safe_up_to_max_line(t):
    r = RedisServer(t)
    odd = [b"with space", b"tab\there", b"crlf\r\nin it", b"nul\0byte",
           b"%20", bytes(range(256)), b"x" * 60000, b"y" * 65000]
    sadd_all(r.port, "odd", odd, batch=3)
    with seend(t) as s:
        rc, out, err = cli_import(s, "redis://127.0.0.1:%d" % r.port, "odd")
        t.eq(rc, 0, err)
        m = summary(t, out)
        t.eq(m.group(1), str(len(odd)))
        t.eq(all_seen(s.port, "odd", odd, batch=2), [], "every member")
        t.eq(all_seen(s.port, "odd", [b"with", b"space", b"x" * 59999]),
             [b"with", b"space", b"x" * 59999], "no split or cut member")


@test
def passwords_on_both_sides(t):
    r = RedisServer(t)
    rr = Resp(r.port)
    t.eq(rr.cmd("CONFIG", "SET", "requirepass", "p@ss:w"), "OK")
    t.eq(rr.cmd("AUTH", "p@ss:w"), "OK")
    t.eq(rr.pipeline([["SADD", "k", "a", "b", "c"]]), [3])
    rr.close()
    with seend(t, "auth_token = sekrit\n") as s:
        base = "127.0.0.1:%d" % r.port
        rc, out, err = cli_import(s, "redis://" + base, "k", pre=("-a",
                                  "sekrit"))
        t.eq(rc, 1, "redis without its password")
        t.contains(err, "NOAUTH")
        rc, out, err = cli_import(s, "redis://:wrong@" + base, "k",
                                  pre=("-a", "sekrit"))
        t.eq(rc, 1, "a wrong redis password")
        t.contains(err, "AUTH")
        rc, out, err = cli_import(s, "redis://:p%40ss%3Aw@" + base, "k")
        t.eq(rc, 1, "seend without its token")
        t.contains(err, "NOAUTH")
        rc, out, err = cli_import(s, "redis://default:p%40ss%3Aw@" + base,
                                  "k", pre=("-a", "sekrit"))
        t.eq(rc, 0, err)
        m = summary(t, out)
        t.eq(m.group(3), "redis://" + base, "no password in the summary")
        t.ok("p%40ss" not in out + err)
        t.eq(all_seen(s.port, "k", [b"a", b"b", b"c"], token="sekrit"), [])


if __name__ == "__main__":
    run()
