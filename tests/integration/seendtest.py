"""
seendtest - start a real seend on a free loopback port and talk to it.

Each integration test file is a TAP program:

    from seendtest import *

    @test
    def seen_answers_0_then_1(t):
        with Server(t) as s:
            c = s.client()
            t.eq(c.cmd("SEEN https://a/"), "0")

    if __name__ == "__main__":
        run()

Environment (set by "make check"): SEEND, SEEN_CLI, SEEN_BENCH point at the
built programs; SEEND_WRAPPER, if set, is a command prefix (for example
"valgrind --error-exitcode=99 ...") that the daemon runs under.

Timeouts and time bounds are multiplied by SLOW: 20 under SEEND_WRAPPER
(valgrind runs the daemon ~30x slower), 1 otherwise, times how loaded the
machine is (LOAD). A test waits for a condition, and a busy machine (other
builds and tests on its cores) only makes it come later, so LOAD is
SEEND_TEST_SLOW if that is set (a factor >= 1, for a machine known to be
busy), else the one-minute load average over the CPUs this process may run
on when that exceeds 1 (a load of 6 on 2 CPUs: each runnable task gets a
third of a CPU, LOAD 3), capped at 8. It is read once, when a test file
starts, and printed as a TAP comment when it is not 1. Scaling only
lengthens waits: what a test asserts must hold with its own margins on an
idle machine and a loaded one alike.
"""
import math
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

SEEND = os.environ.get("SEEND", "seend")
SEEN_CLI = os.environ.get("SEEN_CLI", "seen-cli")
SEEN_BENCH = os.environ.get("SEEN_BENCH", "seen-bench")
SRCDIR = os.environ.get("SEEND_SRCDIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
WRAPPER = shlex.split(os.environ.get("SEEND_WRAPPER", ""))


def _load_factor():
    """LOAD (the docstring above): SEEND_TEST_SLOW, else the one-minute load
    average per CPU when above 1, capped at 8."""
    env = os.environ.get("SEEND_TEST_SLOW", "").strip()
    if env:
        try:
            return max(1.0, float(env))
        except ValueError:
            raise SystemExit("SEEND_TEST_SLOW=%r: not a number" % env)
    try:
        load = os.getloadavg()[0]
        cpus = len(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        return 1.0
    return min(8.0, max(1.0, load / max(cpus, 1)))


LOAD = _load_factor()
# Under valgrind everything is ~30x slower, on a loaded machine LOAD times:
# tests scale their waits by this.
SLOW = (20.0 if WRAPPER else 1.0) * LOAD

_tests = []


def test(fn):
    """Registers a test; its name is what it checks."""
    _tests.append(fn)
    return fn


class Failed(Exception):
    pass


class T:
    """Assertions and a scratch directory for one test."""

    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="seend-test-")
        self.servers = []

    def ok(self, cond, what="condition"):
        if not cond:
            raise Failed(what)

    def eq(self, got, want, what=""):
        if got != want:
            raise Failed("%s: got %r, want %r" % (what or "value", got, want))

    def contains(self, haystack, needle, what=""):
        if needle not in haystack:
            raise Failed("%s: %r not found in %r" % (what or "text", needle,
                                                     haystack[-2000:]))

    def path(self, name):
        return os.path.join(self.dir, name)


def system_module(name):
    """Imports a module that Debian packages for /usr/bin/python3 (redis,
    scrapy); run by another python3 without it, re-executes the test there."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        if sys.executable != "/usr/bin/python3" and os.path.exists(
                "/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        raise


_handed_out = set()


def _port_floor():
    """The first port of the kernel's ephemeral range (32768 by default)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A TCP port free on 127.0.0.1 now, for a server the test starts.
    Below the kernel's ephemeral range: a port bind(0) hands out is one
    that any outgoing connection may take as its source port before the
    daemon binds it (a valgrind'd daemon binds late), which made "Address
    already in use" now and then. Never the same twice in one test run."""
    hi = min(_port_floor(), 32768) - 1
    lo = max(1024, hi - 12000)
    for _ in range(2000):
        port = random.randrange(lo, hi)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, timeout=5.0, step=0.02):
    deadline = time.time() + timeout * SLOW
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()

# Prometheus (Debian's), for the tests that scrape with the real thing.
PROMETHEUS = "/usr/bin/prometheus"


def prom_query(pport, q):
    """The value of PromQL q on the Prometheus at 127.0.0.1:pport, or
    None (no answer, no series)."""
    import json
    import urllib.parse
    import urllib.request
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        pport, urllib.parse.urlencode({"query": q}))
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            data = json.loads(r.read().decode())
    except (OSError, ValueError):
        return None
    res = data.get("data", {}).get("result", [])
    return float(res[0]["value"][1]) if res else None

class Prometheus:
    """A real Prometheus (Debian's) scraping with the scrape_configs
    text given, its web API on a free port: with Prometheus(t, yml) as
    p: p.query(promql). Its log is kept in the test's directory."""

    def __init__(self, t, scrape_configs):
        if not os.access(PROMETHEUS, os.X_OK):
            raise Failed("%s is missing (tools/install-deps installs it)"
                         % PROMETHEUS)
        self.t = t
        self.port = free_port()
        self.conf = t.path("prometheus.yml")
        with open(self.conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n" +
                    scrape_configs)
        self.logpath = t.path("prometheus.log")
        self.proc = None

    def __enter__(self):
        self.logf = open(self.logpath, "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + self.conf,
             "--storage.tsdb.path=" + self.t.path("tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--log.level=warn"],
            stdout=self.logf, stderr=self.logf, cwd=self.t.dir)
        return self

    def query(self, q):
        return prom_query(self.port, q)

    def log(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()[-3000:]

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()




DEFAULT_FILTERS = """
[filter.default]
capacity = 100000
error_rate = 0.001
"""

# For a test that records tens of thousands of distinct keys and must get
# every one answered new, when the Bloom filter is not its subject (TLS
# framing, pipelines, relays): DEFAULT_FILTERS' first slice (rate 0.0002,
# growth on) makes a first occurrence answer "seen" while filling 40,000
# keys in one run of 200 and 60,000 in one of 13; this one (2.3 MB) in one
# of 12 million and 1.6 million (exact rate summed over the fill). A test
# of the filter itself asserts with margins instead (check_subsequence,
# fp_allowed in the tests that use it).
ROOMY_FILTERS = """
[filter.default]
capacity = 1000000
error_rate = 0.001
"""


def check_subsequence(t, got, want, what):
    """got must be want with a few lines left out (Bloom false positives):
    same order, nothing extra, nothing twice, under 0.5% missing."""
    wantset = set(want)
    extra = [g for g in got if g not in wantset]
    t.eq(extra[:5], [], "%s: lines that are not first occurrences" % what)
    t.eq(len(got), len(set(got)), "%s: a line printed twice" % what)
    gotset = set(got)
    t.eq(got, [w for w in want if w in gotset], "%s: input order" % what)
    missing = len(want) - len(got)
    t.ok(missing < 0.005 * len(want), "%s: %d of %d first occurrences "
         "missing" % (what, missing, len(want)))


def poisson_bounds(mean, chance=1e-7):
    """(lo, hi): a count of independent rare events (false positives
    among probes) expected mean times is below lo, or above hi, each with
    a chance of at most chance. For asserting a measured count against a
    rate with margins noise cannot break: "mean + 3 sigma" fails one run
    in 740 (one in 100 or worse for a mean near 1, where a Poisson count
    is far from normal), and suites run hundreds of such checks."""
    if mean <= 0:
        return 0, 0
    top = int(mean + 12 * math.sqrt(mean) + 40)
    logm = math.log(mean)
    pmf = [math.exp(-mean + k * logm - math.lgamma(k + 1))
           for k in range(top + 1)]
    lo, below = 0, 0.0
    while lo < top and below + pmf[lo] <= chance:
        below += pmf[lo]
        lo += 1
    hi, above = top, 0.0
    while hi > 0 and above + pmf[hi] <= chance:
        above += pmf[hi]
        hi -= 1
    return lo, hi


class Server:
    """
    A seend process with its own config and data_dir under the test's
    directory. server_extra lines go into [server]; filters replaces the
    default [filter.default] section.
    """

    def __init__(self, t, server_extra="", filters=DEFAULT_FILTERS,
                 unix=True, port=None, env=None, data_dir=None, name="s"):
        self.t = t
        self.name = name
        self.port = port or free_port()
        self.data_dir = data_dir or t.path(name + "-data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.sock = t.path(name + ".sock") if unix else None
        self.conf = t.path(name + ".conf")
        self.log = t.path(name + ".log")
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.proc = None
        self.write_config(server_extra, filters)
        t.servers.append(self)

    def write_config(self, server_extra="", filters=DEFAULT_FILTERS):
        lines = ["[server]",
                 "listen = 127.0.0.1:%d" % self.port,
                 "data_dir = %s" % self.data_dir,
                 "log_level = debug"]
        if self.sock:
            lines.append("unix_socket = %s" % self.sock)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n" + server_extra + "\n" + filters)

    def start(self, wait=True, expect_fail=False):
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(WRAPPER + [SEEND, "-c", self.conf],
                                     stdout=self.logf, stderr=self.logf,
                                     env=self.env)
        if expect_fail:
            rc = self.proc.wait(timeout=30 * SLOW)
            self.proc = None
            return rc
        if wait and not wait_until(self.ready, timeout=10):
            raise Failed("seend did not start; log:\n" + self.read_log())
        return self

    def ready(self):
        if self.proc.poll() is not None:
            raise Failed("seend exited with %s; log:\n%s"
                         % (self.proc.returncode, self.read_log()))
        # the Unix socket opens after the TCP listener; its file appears
        # at bind(), before listen(): ready once a connect succeeds
        if self.sock:
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                u.settimeout(0.5)
                u.connect(self.sock)
            except OSError:
                return False
            finally:
                u.close()
        try:
            with socket.create_connection(("127.0.0.1", self.port), 0.5):
                return True
        except OSError:
            return False

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def client(self, unix=False, timeout=10.0):
        return Client(("127.0.0.1", self.port) if not unix else self.sock,
                      timeout=timeout * SLOW)

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the daemon; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise Failed("seend did not stop within %ss" % timeout)
        self.proc = None
        self.logf.close()
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        self.logf.close()

    def pid(self):
        return self.proc.pid

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def __enter__(self):
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            rc = self.stop()
            if exc[0] is None and WRAPPER and rc != 0:
                raise Failed("seend under %s exited %s; log:\n%s"
                             % (WRAPPER[0], rc, self.read_log()[-4000:]))


class Client:
    """A line-protocol client over TCP (host, port) or a Unix socket path."""

    def __init__(self, addr, timeout=10.0):
        if isinstance(addr, tuple):
            self.s = socket.create_connection(addr, timeout=timeout)
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(timeout)
            self.s.connect(addr)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.s.sendall(data)

    def line(self):
        """One reply line without its CRLF, as str; '' at EOF."""
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                rest, self.buf = self.buf, b""
                return rest.decode(errors="replace")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode(errors="replace")

    def lines_until_end(self):
        out = []
        while True:
            l = self.line()
            if l == "END" or l == "":
                return out
            out.append(l)

    def cmd(self, text):
        self.send(text + "\n")
        return self.line()

    def info(self, arg=""):
        self.send(("INFO %s" % arg).strip() + "\n")
        return dict(l.split(" ", 1) for l in self.lines_until_end())

    def closed(self, timeout=5.0):
        """True if the server closed the connection (EOF) within timeout."""
        self.s.settimeout(timeout * SLOW)
        try:
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


class RedisServer:
    """A real redis-server on a free loopback port, in t's scratch dir, to
    hold seend's Redis side up against (max_bulk: its proto-max-bulk-len,
    1 MB at least). Stopped by stop() or at the end of the test."""

    def __init__(self, t, max_bulk=512 * 1024 * 1024):
        exe = shutil.which("redis-server")
        t.ok(exe is not None, "redis-server is installed (tools/install-deps)")
        self.port = free_port()
        self.log = open(t.path("redis.log"), "w")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--daemonize", "no",
             "--dir", t.dir, "--proto-max-bulk-len", str(max_bulk)],
            stdout=self.log, stderr=subprocess.STDOUT)
        t.servers.append(self)  # killed by run() if the test fails first
        t.ok(wait_until(lambda: self.talk(b"*1\r\n$4\r\nPING\r\n", 0.5)
                        == b"+PONG\r\n", 10), "redis-server answers PING")

    def talk(self, data, idle=3.0):
        """Sends data, returns what comes back until the server closes or
        is silent for idle seconds."""
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return None
        got = b""
        try:
            s.sendall(data)
            s.settimeout(idle)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            pass
        except OSError:
            pass
        finally:
            s.close()
        return got

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def diag(msg):
    """A TAP comment line: figures a test prints but does not assert."""
    print("# " + msg, flush=True)


# ---- a raw RESP client: exact replies, errors as values (dumps and
# merges, whose replies are big and whose errors are the point) ----

class Err(str):
    """An error reply's text ("ERR ..."), as a value."""


def enc(*words):
    w = [x if isinstance(x, bytes) else str(x).encode() for x in words]
    return b"*%d\r\n" % len(w) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x)
                                          for x in w)


class Resp:
    def __init__(self, port, timeout=30.0):
        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=timeout * SLOW)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Err(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            self._fill(n + 2)
            v = bytes(self.buf[:n])
            del self.buf[:n + 2]
            return v
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise Failed("not RESP: %r" % line[:200])

    def send(self, *words):
        self.s.sendall(enc(*words))

    def cmd(self, *words):
        self.send(*words)
        return self.reply()

    def close(self):
        self.s.close()

    def closed(self, timeout=5.0):
        self.s.settimeout(timeout * SLOW)
        try:
            while True:
                if not self.s.recv(65536):
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True


# ---- RESP as bytes: replies compared byte for byte, with redis-server's
# or with bytes pinned from another implementation's source ----

class Closed(EOFError):
    """The server closed a RespBytes connection; args[0] holds the bytes of
    the reply that had come so far."""


class RespBytes:
    """A RESP2/RESP3 connection that reads exactly one whole value per
    reply, whatever the timing, as the bytes sent (an attribute with the
    value it describes). resp3: HELLO 3 first. A silent server is a socket
    timeout, a closed one Closed."""

    def __init__(self, port, timeout=10.0, resp3=False):
        self.s = socket.create_connection(("127.0.0.1", port),
                                          timeout=timeout * SLOW)
        self.buf = b""
        if resp3:
            got = self.cmd("HELLO", "3")
            if not got.startswith(b"%"):
                raise Failed("HELLO 3: %r" % got)

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise Closed(self.buf)
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self):
        """The next whole value, as bytes."""
        line = self._line()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"$", b"=", b"!"):
            n = int(rest)
            return line + (self._exact(n + 2) if n >= 0 else b"")
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            return line + b"".join(self.reply() for _ in range(max(n, 0)))
        if kind == b"%":
            return line + b"".join(self.reply() for _ in range(2 * int(rest)))
        if kind == b"|":  # an attribute, then the reply it describes
            return line + b"".join(self.reply()
                                   for _ in range(2 * int(rest) + 1))
        return line

    def values(self, n):
        """The next n whole values, as one bytes string."""
        return b"".join(self.reply() for _ in range(n))

    def send(self, *words):
        self.s.sendall(enc(*words))

    def cmd(self, *words):
        self.send(*words)
        return self.reply()

    def ask(self, n, *words):
        """Sends one request, returns the n values that answer it."""
        self.send(*words)
        return self.values(n)

    def pipeline(self, cmds):
        self.s.sendall(b"".join(enc(*w) for w in cmds))
        return [self.reply() for _ in cmds]

    def line(self, text):
        """A line-protocol request on the same port: its reply line."""
        self.s.sendall(text.encode() + b"\r\n")
        return self._line()[:-2].decode()

    def closed(self, timeout=5.0):
        """True if the server closes the connection within timeout."""
        self.s.settimeout(timeout * SLOW)
        try:
            while True:
                if not self.s.recv(65536):
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def close(self):
        self.s.close()


def parse(b, i=0):
    """One RESP2/RESP3 value from b at i: ((type, value), next i). Arrays,
    sets and pushes hold lists, maps lists of (key, value); bulk and
    verbatim strings hold bytes; other types the bytes after the type
    byte. Raises ValueError on bad framing."""
    j = b.index(b"\r\n", i)
    kind, rest = b[i:i + 1], b[i + 1:j]
    i = j + 2
    if kind in (b"$", b"=", b"!"):
        n = int(rest)
        if n < 0:
            return (kind, None), i
        if b[i + n:i + n + 2] != b"\r\n":
            raise ValueError("bulk of %d not followed by CRLF" % n)
        return (kind, b[i:i + n]), i + n + 2
    if kind in (b"*", b"~", b">"):
        n = int(rest)
        out = []
        for _ in range(max(n, 0)):
            v, i = parse(b, i)
            out.append(v)
        return (kind, out if n >= 0 else None), i
    if kind == b"%":
        out = []
        for _ in range(int(rest)):
            k, i = parse(b, i)
            v, i = parse(b, i)
            out.append((k, v))
        return (kind, out), i
    if kind in (b"+", b"-", b":", b"_", b",", b"#", b"("):
        if kind == b":":
            int(rest)
        return (kind, rest), i
    raise ValueError("unknown RESP type %r" % kind)


def parse_all(b):
    """The one value b holds, as parse gives it; ValueError if more."""
    v, i = parse(b)
    if i != len(b):
        raise ValueError("%d bytes after the reply" % (len(b) - i))
    return v


def plain(v):
    """A parsed value without its types: bulk strings as bytes (or None),
    arrays, sets and pushes as lists, maps as lists of (key, value),
    integers as int, any other as its type byte and text (b"+OK")."""
    kind, x = v
    if kind in (b"$", b"=", b"!"):
        return x
    if kind in (b"*", b"~", b">"):
        return None if x is None else [plain(e) for e in x]
    if kind == b"%":
        return [(plain(k), plain(e)) for k, e in x]
    if kind == b":":
        return int(x)
    return kind + x


def val(b):
    """The first value in the reply bytes b, without its types (plain)."""
    return plain(parse(b)[0])


def first_diff(got, want):
    """Where two byte strings part: the offset and 40 bytes of each."""
    i = 0
    while i < min(len(got), len(want)) and got[i] == want[i]:
        i += 1
    return "differ at byte %d: seend %r... vs %r..." % (
        i, got[max(i - 10, 0):i + 40], want[max(i - 10, 0):i + 40])


# ---- the same requests to seend and to redis-server, side by side ----
#
# A case is a list of words (the replies must be the same bytes) or an
# object with .words and .check(got, want), which returns what is wrong
# (a list of texts; ValueError for bad framing).

class Differ:
    """The contract deliberately differs from redis-server: seend's bytes
    are ours, and Redis's observed bytes are asserted too, so that a Redis
    that changes is noticed."""

    def __init__(self, words, ours, redis_observed, why):
        self.words, self.ours, self.theirs, self.why = (words, ours,
                                                         redis_observed, why)

    def check(self, g, w):
        bad = []
        if g != self.ours:
            bad.append("%s (contract: %s)" % (first_diff(g, self.ours),
                                              self.why))
        if w != self.theirs:
            bad.append("redis-server now answers %r, not %r: review the "
                       "case" % (w, self.theirs))
        return bad


def words_of(case):
    return case if isinstance(case, list) else case.words


def play(port, cases):
    """Sends the cases one at a time on one connection; a list of reply
    bytes (b"<no reply>" / b"...<closed>" end it early; after a last QUIT
    answered, b"<QUIT did not close>" if the connection stays open)."""
    c = RespBytes(port, timeout=5)
    out = []
    try:
        for case in cases:
            try:
                out.append(c.cmd(*words_of(case)))
            except Closed as e:
                out.append(e.args[0] + b"<closed>")
                break
            except (socket.timeout, TimeoutError):
                out.append(c.buf + b"<no reply>")
                break
            except OSError as e:
                out.append(b"<%s>" % str(e).encode())
                break
        if out and words_of(cases[-1])[0].upper() == "QUIT" and \
                len(out) == len(cases):
            if not c.closed():
                out.append(b"<QUIT did not close>")
    finally:
        c.close()
    return out


def compare(t, cases, got, want, label):
    """Checks every case's reply from seend (got) against redis-server's
    (want); fails listing each that differs."""
    bad = []
    for i, case in enumerate(cases):
        name = "%s: %s" % (label, " ".join(
            w if isinstance(w, str) else repr(w) for w in words_of(case)))
        if i >= len(got) or i >= len(want):
            bad.append("%s: no reply (seend %r, redis %r)" % (
                name, got[i - 1:i] if got else got, want[i - 1:i]))
            break
        g, w = got[i], want[i]
        try:
            if isinstance(case, list):
                if g != w:
                    bad.append("%s: %s" % (name, first_diff(g, w)))
            else:
                bad += ["%s: %s" % (name, why) for why in case.check(g, w)]
        except ValueError as e:
            bad.append("%s: bad framing (%s): seend %r, redis %r" % (
                name, e, g[:120], w[:120]))
    if len(got) != len(want):
        bad.append("%s: %d replies from seend, %d from redis-server; "
                   "seend's last %r" % (label, len(got), len(want),
                                        got[-1:]))
    t.ok(not bad, "\n".join(bad))


def side_by_side(t, s_port, r_port, cases, label):
    """The cases to redis-server, then to seend, each on a connection of
    its own; compared. Returns (seend's replies, redis-server's)."""
    want = play(r_port, cases)
    got = play(s_port, cases)
    compare(t, cases, got, want, label)
    return got, want


def run():
    """Runs the registered tests as TAP; exit status 1 if any failed."""
    print("1..%d" % len(_tests), flush=True)
    if LOAD != 1.0:
        diag("waits scaled by %.2f for a loaded machine (SEEND_TEST_SLOW or "
             "the load average)" % LOAD)
    failed = 0
    for i, fn in enumerate(_tests, 1):
        t = T(fn.__name__)
        try:
            fn(t)
            print("ok %d - %s" % (i, fn.__name__), flush=True)
        except Exception as e:
            failed += 1
            print("not ok %d - %s" % (i, fn.__name__), flush=True)
            for line in (str(e) if isinstance(e, Failed)
                         else traceback.format_exc()).splitlines():
                print("#   " + line)
        finally:
            for s in t.servers:
                if s.proc is not None:
                    try:
                        s.proc.kill()
                        s.proc.wait()
                    except OSError:
                        pass
            subprocess.call(["rm", "-rf", t.dir])
    sys.exit(1 if failed else 0)


# ---- Redis Sentinel (test_sentinel.py, test_failover.py, clustertest.py) ----

import ctypes  # noqa: E402 (its only user is below)

SENTINEL = shutil.which("redis-sentinel")


def die_with_parent():
    """preexec_fn: the child gets SIGKILL if this test process dies
    (PR_SET_PDEATHSIG), so that no sentinel or proxy outlives a test run
    that was killed by a timeout."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def end_process(proc, grace=10):
    """SIGTERM, then SIGKILL if proc has not exited within grace seconds:
    its exit status."""
    proc.terminate()
    try:
        return proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
    return proc.wait()


def sentinel_up(flags):
    """Whether SENTINEL MASTER's or REPLICAS' flags say the instance is up."""
    return not {"s_down", "o_down", "disconnected"} & set(flags.split(","))


class Sentinel:
    """A redis-sentinel process in t's directory (sentinel<i>) monitoring
    each (name, port) of masters on 127.0.0.1 with quorum 2 (so three are
    run), each name with the settings given as (option, value) pairs
    ("down-after-milliseconds", ms). With fast, it waits until the sentinel
    answers and sets its INFO period to a second and its hello period to
    half a second (SENTINEL DEBUG, Redis 7's knob for them; every 10 and 2
    s otherwise): discovery, and converting an old primary to a replica (4
    hello periods), take seconds instead of tens of seconds."""

    def __init__(self, t, i, masters, settings=(), fast=True):
        self.port = free_port()
        self.dir = t.path("sentinel%d" % i)
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "sentinel.conf")
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndaemonize no\n"
                    "protected-mode no\ndir %s\nlogfile %s\n"
                    % (self.port, self.dir,
                       os.path.join(self.dir, "sentinel.log")))
            for name, port in masters:
                f.write("sentinel monitor %s 127.0.0.1 %d 2\n" % (name, port))
                for option, value in settings:
                    f.write("sentinel %s %s %s\n" % (option, name, value))
        self.proc = subprocess.Popen([SENTINEL, self.conf],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT,
                                     preexec_fn=die_with_parent)
        t.servers.append(self)  # killed by run() if the test fails
        if fast:
            t.ok(wait_until(lambda: self.cmd("PING") == "PONG", 10),
                 "redis-sentinel %d answers" % i)
            t.eq(self.cmd("SENTINEL", "DEBUG", "info-period", "1000",
                          "publish-period", "500"), "OK", "SENTINEL DEBUG")

    def cmd(self, *words):
        """A command's reply (Resp's values), None if it does not answer."""
        try:
            c = Resp(self.port, timeout=5)
            try:
                return c.cmd(*words)
            finally:
                c.close()
        except (OSError, EOFError):
            return None

    @staticmethod
    def _dict(flat):
        """A flat [name, value, ...] reply as a dict of str."""
        s = [x.decode() if isinstance(x, bytes) else x for x in flat]
        return dict(zip(s[0::2], s[1::2]))

    def master(self, name):
        """SENTINEL MASTER name as a dict, or None."""
        got = self.cmd("SENTINEL", "MASTER", name)
        return self._dict(got) if isinstance(got, list) else None

    def replicas(self, name):
        """SENTINEL REPLICAS name: a list of dicts, or None."""
        got = self.cmd("SENTINEL", "REPLICAS", name)
        return [self._dict(x) for x in got] if isinstance(got, list) \
            else None

    def others(self, name):
        """How many other sentinels SENTINEL SENTINELS name lists, or None."""
        got = self.cmd("SENTINEL", "SENTINELS", name)
        return len(got) if isinstance(got, list) else None

    def master_addr(self, name):
        """(host, port) it names for name's master, None if it cannot say."""
        got = self.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
        if not isinstance(got, list) or len(got) != 2:
            return None
        return (got[0].decode(), int(got[1]))

    def log(self, tail=3000):
        try:
            with open(os.path.join(self.dir, "sentinel.log"),
                      errors="replace") as f:
                return f.read()[-tail:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            end_process(self.proc)
            self.proc = None


# ---- a PING loop beside a long request (test_dump.py, test_merge.py) ----

import threading  # noqa: E402 (its only user is below)

# PINGs on one connection to 127.0.0.1:argv[1] (a socket timeout of
# argv[2] s), printing when each was sent and answered on CLOCK_MONOTONIC,
# time.monotonic's clock
_PINGER = r"""
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])),
                             timeout=float(sys.argv[2]))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    sent = time.monotonic()
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    got = b""
    while not got.endswith(b"\r\n"):
        part = s.recv(64)
        if not part:
            sys.exit("closed")
        got += part
    if got != b"+PONG\r\n":
        sys.exit("PING: %r" % got)
    print("%.6f %.6f" % (sent, time.monotonic()), flush=True)
"""


class Pinger:
    """A process of its own that PINGs the server at port, so that the
    test's Python, busy with a long request or big replies, does not delay
    it; pongs: (sent, answered) of each PING answered so far, in
    time.monotonic's seconds. Stopped by stop(), in a finally."""

    def __init__(self, port, timeout=60):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PINGER, str(port), str(timeout)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pongs = []
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                sent, done = map(float, line.split())
            except ValueError:
                continue
            self.pongs.append((sent, done))

    def answered(self, t, what):
        """Waits for the first PONG (fails if none comes)."""
        t.ok(wait_until(lambda: self.pongs or self.proc.poll() is not None,
                        timeout=10) and self.pongs,
             "PING answered before " + what)

    def stop(self):
        # the reader ends at the pinger's EOF; closing its pipe under the
        # reader (communicate) would race with it
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.th.join(30)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def between(self, start, end):
        """The (sent, answered) of the PINGs sent and answered in
        [start, end]."""
        return [(a, b) for a, b in self.pongs if a >= start and b <= end]

    def latencies_before(self, start):
        """The latency of each PING answered before start ([0] if none)."""
        return [b - a for a, b in self.pongs if b < start] or [0]


# ---- filters full of URLs, over RESP (test_dump.py, test_merge.py) ----

def one_request(s, *words):
    """One request on a connection of its own."""
    c = Resp(s.port)
    try:
        return c.cmd(*words)
    finally:
        c.close()


def url_keys(tag, n, start=0):
    """n distinct URLs of host <tag>.example.org, from the start'th on."""
    return ["https://%s.example.org/page/%d?q=%d" % (tag, i % 97, i)
            for i in range(start, start + n)]


def bf_mexists(r, name, ks, batch):
    """BF.MEXISTS of each of ks in requests of batch keys, pipelined on
    redis-py client r: the answers, in order."""
    p = r.pipeline(transaction=False)
    for i in range(0, len(ks), batch):
        p.execute_command("BF.MEXISTS", name, *ks[i:i + batch])
    out = []
    for got in p.execute():
        out.extend(got)
    return out


def scandump(c, name):
    """The chunks of one whole dump as [(iter, data)], over raw RESP
    (connection c); fails unless the last reply is [0, ""]."""
    out, it = [], 0
    while True:
        got = c.cmd("BF.SCANDUMP", name, it)
        if isinstance(got, Err) or not isinstance(got, list) or len(got) != 2:
            raise Failed("BF.SCANDUMP %s %d: %r" % (name, it, got))
        it, data = got
        if it == 0:
            if data != b"":
                raise Failed("the last reply: [0, %r]" % data[:80])
            return out
        out.append((it, data))


def filter_info(s, name, timeout=10.0):
    """INFO <name> over the line protocol, as a dict of strings; fails
    unless it describes a filter."""
    c = s.client(timeout=timeout)
    try:
        got = c.info(name)
    finally:
        c.close()
    if "capacity" not in got:
        raise Failed("INFO %s: %r" % (name, got))
    return got
