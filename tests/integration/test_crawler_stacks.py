"""
Crawler stacks as they are (INTERFACE.md, "Crawler stacks as they are"):
what colly's Redis storage (gocolly/redisstorage) and a Heritrix
Redis-backed UriUniqFilter send, replayed byte for byte as raw RESP against
seend and against a real redis-server side by side; the replies agree where
the contract says they do, and where seend differs on purpose (a cookie
SET refused, KEYS listing filter names only, DEL of a key whose filter
cannot forget) the difference is exactly the documented one. Commands
seend does not serve (RPUSH, HSET, EVALSHA, JSON.GET) get Redis's own
unknown-command bytes, are logged once per name (a bounded table) and
counted (seend_unknown_commands_total). SHUTDOWN [NOSAVE|SAVE] [NOW]
[FORCE] [ABORT] as Redis 7: the default snapshots and exits 0, NOSAVE
leaves the keys to the journal, both keep every acknowledged key across
the restart; ABORT and bad combinations are Redis's errors. SET k v
without NX is an error, never a stored lie.
"""
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.request

from seendtest import *

U = "https://crawl.example/"

# 1,000,000 (2 MB): a cuckoo filter's rate grows with its load from the
# first key on, and heritrix's test asserts 200 keys new and 100 forgotten
# ones absent exactly; at 100,000 that failed once in 29,000 runs, here
# once in 290,000 (the exact rate summed over the fill)
CUCKOO = """
[filter.default]
type = cuckoo
capacity = 1000000
error_rate = 0.001

[filter.news]
capacity = 100000
error_rate = 0.001
hosts = news.example
"""


class Raw(RespBytes):
    """seendtest's RespBytes (each reply's exact bytes), and what arrives
    before the server closes the connection."""

    def eof(self, timeout=30.0):
        """What arrives before the server closes the connection (None if
        it does not close within timeout)."""
        self.s.settimeout(timeout * SLOW)
        got = self.buf
        try:
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    return got
                got += chunk
        except (socket.timeout, TimeoutError):
            return None
        except ConnectionResetError:
            return got


class Redis:
    """A real redis-server 7 beside seend; rename lists commands it must
    not know (so that its unknown-command reply can be compared)."""

    def __init__(self, t, rename=()):
        exe = shutil.which("redis-server")
        t.ok(exe is not None, "redis-server is installed")
        self.port = free_port()
        args = [exe, "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", t.dir]
        for name in rename:
            args += ["--rename-command", name, ""]
        self.log = open(t.path("redis-%d.log" % self.port), "w")
        self.proc = subprocess.Popen(args, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        t.servers.append(self)

        def up():
            try:
                c = Raw(self.port, 0.5)
                ok = c.cmd("PING") == b"+PONG\r\n"
                c.close()
                return ok
            except OSError:
                return False
        t.ok(wait_until(up, 10), "redis-server answers PING")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        self.log.close()


class Differ:
    """A request whose reply differs on purpose: seend's exact bytes,
    and a check of Redis's."""

    def __init__(self, words, ours, theirs, why):
        self.words, self.ours, self.theirs, self.why = (words, ours, theirs,
                                                         why)


def words_of(case):
    return case if isinstance(case, list) else case.words


def play(port, cases):
    c = Raw(port, 5)
    out = []
    try:
        for case in cases:
            try:
                out.append(c.cmd(*words_of(case)))
            except Closed as e:
                out.append(e.args[0] + b"<closed>")
                break
    finally:
        c.close()
    return out


def side_by_side(t, s_port, r_port, cases, label):
    want = play(r_port, cases)
    got = play(s_port, cases)
    bad = []
    for i, case in enumerate(cases):
        name = "%s: %s" % (label, " ".join(words_of(case)))
        if i >= len(got) or i >= len(want):
            bad.append("%s: no reply" % name)
            break
        g, w = got[i], want[i]
        if isinstance(case, list):
            if g != w:
                bad.append("%s: seend %r, redis %r" % (name, g, w))
            continue
        if g != case.ours:
            bad.append("%s: seend %r, documented %r (%s)" % (
                name, g, case.ours, case.why))
        theirs = case.theirs(w) if callable(case.theirs) else \
            w == case.theirs
        if not theirs:
            bad.append("%s: redis-server now answers %r" % (name, w))
    t.ok(not bad, "\n".join(bad))


def scrape(s):
    """The /metrics page; the endpoint may open a moment after the
    server's port (slowly, under valgrind): a refused connect is retried."""
    url = "http://127.0.0.1:%d/metrics" % s.metrics_port
    page = []

    def get():
        try:
            with urllib.request.urlopen(url, timeout=10 * SLOW) as f:
                page.append(f.read().decode())
                return True
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                return False
            raise

    if not wait_until(get, 10):
        raise Failed("%s refused every connection" % url)
    return page[0]


def metric(s, name):
    for line in scrape(s).splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise Failed("no %s in /metrics" % name)


def server(t, filters=CUCKOO, extra="", data_dir=None, name="s"):
    mport = free_port()
    s = Server(t, server_extra="metrics_listen = 127.0.0.1:%d\n%s" % (
        mport, extra), filters=filters, data_dir=data_dir, name=name)
    s.metrics_port = mport
    return s


# room for 20000 keys with no false positive to speak of
BIG = """
[filter.default]
capacity = 1000000
error_rate = 0.0000001
"""

SET_REFUSED = (b"-ERR seend stores keys, not values: SET <key> 1 records "
               b"a key\r\n")


# ---- colly: gocolly/redisstorage on go-redis ----
#
# Init: "ping". Visited(id): "set <p>:request:<id> 1" (with an expiry,
# "ex <s>"). IsVisited(id): "get <p>:request:<id>", nil meaning not visited.
# SetCookies: "get <p>:cookie:<host>" then "set <p>:cookie:<host>
# <cookies>". Clear(): "keys <p>:request:*" and a "del" of what it lists.
# go-redis writes command names in lower case.

def colly_stream(p):
    a, b = "%s:request:%d" % (p, 1844674407370955161), \
        "%s:request:%d" % (p, 7)
    cookie = "%s:cookie:a.example" % p
    return [
        ["ping"],
        ["get", a], ["set", a, "1"], ["get", a],
        ["get", b], ["set", b, "1", "ex", "86400"], ["get", b],
        ["set", a, "1"], ["get", a],
        ["get", cookie],
        Differ(["set", cookie, "session=1; Path=/"], SET_REFUSED,
               b"+OK\r\n",
               "values are not stored: a SET of another value than 1 is "
               "refused (colly's cookie jar belongs in Redis)"),
        Differ(["get", cookie], b"$-1\r\n",
               b"$17\r\nsession=1; Path=/\r\n",
               "the refused SET recorded nothing"),
        Differ(["keys", "%s:request:*" % p], b"*0\r\n",
               lambda w: sorted(re.findall(rb"\$\d+\r\n([^\r]*)\r\n", w))
               == sorted([a.encode(), b.encode()]) and w.startswith(b"*2"),
               "KEYS lists filter names only: colly's Clear() deletes "
               "nothing"),
        ["ping"],
    ]


@test
def colly_redis_storage_replayed_beside_redis_server(t):
    r = Redis(t)
    for label, filters in (("cuckoo", CUCKOO), ("bloom", DEFAULT_FILTERS)):
        with server(t, filters=filters, name="s-" + label) as s:
            side_by_side(t, s.port, r.port, colly_stream(label),
                         "colly, " + label)
            # the visited keys are really recorded: SEEN says so
            c = s.client()
            t.eq(c.cmd("SEEN %s:request:1844674407370955161" % label), "1",
                 label + ": SET <p>:request:<n> 1 recorded the key")
            c.close()
    r.stop()


# ---- Heritrix: a Redis-backed UriUniqFilter ----
#
# "select 0" on connect; a URI is added with "set <uri> <uri> nx ex <ttl>"
# (+OK new, nil already there) and forgotten with "del <uri>".

def heritrix_stream(host):
    u1, u2, u3 = ("https://%s/page/%d" % (host, i) for i in (1, 2, 3))
    return [
        ["select", "0"],
        ["set", u1, u1, "nx", "ex", "86400"],
        ["set", u1, u1, "nx", "ex", "86400"],
        ["set", u2, u2, "nx", "ex", "86400"],
        ["exists", u1, u2, u3],
        ["del", u1],
        ["exists", u1],
        ["set", u1, u1, "nx", "ex", "86400"],
        ["del", u3],
        ["del", u2, u2, u3],
        ["exists", u1, u2, u3],
    ]


@test
def heritrix_uri_filter_replayed_beside_redis_server(t):
    r = Redis(t)
    with server(t) as s:
        # a cuckoo filter forgets: every reply is Redis's
        side_by_side(t, s.port, r.port, heritrix_stream("h.example"),
                     "heritrix, cuckoo")
        # a bloom filter cannot: DEL of its key is :0 (seend(8))
        u = "https://news.example/a"
        side_by_side(t, s.port, r.port, [
            ["select", "0"],
            ["set", u, u, "nx", "ex", "86400"],
            Differ(["del", u], b":0\r\n", b":1\r\n",
                   "a key of a bloom filter is not forgotten"),
            Differ(["set", u, u, "nx", "ex", "86400"], b"$-1\r\n",
                   b"+OK\r\n", "so it is still seen"),
        ], "heritrix, bloom")
        # DEL of a key is journaled as FORGET: a kill -9 keeps it
        # forgotten, and the other keys held
        c = Raw(s.port)
        keys = [U + "k/%d" % i for i in range(200)]
        t.eq(set(c.pipeline([["SET", k, k, "NX", "EX", "60"]
                             for k in keys])), {b"+OK\r\n"})
        t.eq(c.cmd("DEL", *keys[:100]), b":100\r\n", "DEL of 100 keys")
        c.close()
        s.kill9()
        s.start()
        c = Raw(s.port)
        t.eq(c.cmd("EXISTS", *keys[:100]), b":0\r\n",
             "forgotten keys stay forgotten after kill -9")
        t.eq(c.cmd("EXISTS", *keys[100:]), b":100\r\n",
             "the others are held")
        # a filter name still drops the filter, beside keys
        t.eq(c.cmd("SADD", "rt", "m"), b":1\r\n")
        t.eq(c.cmd("DEL", "rt", keys[100], "nofilter"), b":2\r\n",
             "DEL of a filter and a key: both counted")
        t.eq(c.cmd("TYPE", "rt"), b"+none\r\n", "the runtime filter is gone")
        t.eq(c.cmd("UNLINK", keys[101]), b":1\r\n", "UNLINK = DEL")
        c.close()
    r.stop()


# ---- commands seend does not serve ----

UNKNOWN = [["RPUSH", "queue", "https://a/"], ["HSET", "h", "f", "v"],
           ["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff831", "0"],
           ["JSON.GET", "doc", "$"]]


@test
def unknown_commands_answer_as_redis_logged_once_and_counted(t):
    # Redis's own reply to a command it does not know: the ones it has,
    # renamed away (JSON.GET it never had)
    r = Redis(t, rename=[w[0] for w in UNKNOWN if w[0] != "JSON.GET"])
    with server(t) as s:
        base = metric(s, "seend_unknown_commands_total")
        cases = []
        for w in UNKNOWN:
            cases += [w, [w[0].lower()] + w[1:], w]
        side_by_side(t, s.port, r.port, cases, "unknown")
        t.eq(metric(s, "seend_unknown_commands_total"), base + len(cases),
             "every request counted")
        log = s.read_log()
        for w in UNKNOWN:
            lines = [l for l in log.splitlines()
                     if "unknown command '%s'" % w[0].lower() in l.lower()]
            t.eq(len(lines), 1, "%s logged once: %r" % (w[0], lines))
            t.ok("seend keeps dedup sets only" in lines[0] and
                 "queues, hashes, lists, scripts and JSON belong in Redis"
                 in lines[0], "the log says where they belong: %r" % lines)
        # a flood of names costs no memory: at most 64 are ever logged
        c = Raw(s.port)
        reps = c.pipeline([["X%05dQ" % i, "a"] for i in range(500)])
        t.eq(reps[7], b"-ERR unknown command 'X00007Q', with args "
             b"beginning with: 'a' \r\n")
        t.eq(c.cmd("PING"), b"+PONG\r\n", "still serving")
        c.close()
        n = len([l for l in s.read_log().splitlines()
                 if "unknown command '" in l])
        t.eq(n, 64, "64 names logged, no more")
        t.eq(metric(s, "seend_unknown_commands_total"),
             base + len(cases) + 500, "the flood counted")
        # INFO counts them too (its layout is another file's: a loose look)
        info = Raw(s.port).cmd("INFO")
        m = re.search(rb"unknown_commands[:= ](\d+)", info)
        if m is None:
            diag("INFO has no unknown_commands field yet")
        else:
            t.eq(int(m.group(1)), len(cases) + 500, "INFO unknown_commands")
    r.stop()


# ---- SET k v is refused ----

@test
def set_of_a_value_is_an_error_never_a_stored_lie(t):
    with server(t) as s:
        c = Raw(s.port)
        k = U + "lie"
        for words in (["SET", k, "v"], ["set", k, "2"],
                      ["SET", k, "v", "EX", "10"], ["SET", k, "", "XX"],
                      ["SET", k, "10"], ["SET", k, "v", "GET"]):
            t.eq(c.cmd(*words), SET_REFUSED, " ".join(words))
        t.eq(c.cmd("GET", k), b"$-1\r\n", "nothing recorded: GET is null")
        t.eq(c.cmd("EXISTS", k), b":0\r\n")
        t.eq(c.cmd("SET", k, "1", "EX", "10"), b"+OK\r\n", "SET k 1 records")
        t.eq(c.cmd("GET", k), b"$1\r\n1\r\n")
        t.eq(c.cmd("SET", U + "nx", "anything", "NX"), b"+OK\r\n",
             "with NX any value")
        t.eq(c.cmd("SET", U + "nx", "other", "NX"), b"$-1\r\n")
        t.eq(c.cmd("SET", k, "v", "BAD"), b"-ERR syntax error\r\n",
             "a syntax error stays one")
        c.close()


# ---- SHUTDOWN ----

def record(port, keys):
    c = Raw(port)
    for i in range(0, len(keys), 1000):
        reps = c.pipeline([["SETNX", k, "1"] for k in keys[i:i + 1000]])
        if set(reps) != {b":1\r\n"}:
            raise Failed("recording: %r" % sorted(set(reps)))
    return c


def all_seen(t, port, keys, what):
    c = Raw(port)
    seen = 0
    for i in range(0, len(keys), 1000):
        seen += sum(rep == b":0\r\n" for rep in c.pipeline(
            [["SETNX", k, "1"] for k in keys[i:i + 1000]]))
    c.close()
    t.eq(seen, len(keys), what)


def shutdown(t, s, c, *args):
    """SHUTDOWN on c: no reply, the connection closes, the process exits 0."""
    c.s.sendall(enc("SHUTDOWN", *args))
    got = c.eof()
    t.eq(got, b"", "SHUTDOWN %s: no reply, the connection closes" %
         " ".join(args))
    c.close()
    rc = s.proc.wait(timeout=60 * SLOW)
    s.proc = None
    s.logf.close()
    t.eq(rc, 0, "SHUTDOWN %s: exit 0" % " ".join(args))


@test
def shutdown_saves_and_a_restart_keeps_every_acknowledged_key(t):
    keys = [U + "sd/%d" % i for i in range(20000)]
    # journal = off: only the snapshots SHUTDOWN writes can hold the keys
    with server(t, filters=BIG, extra="journal = off") as s:
        c = record(s.port, keys)
        shutdown(t, s, c)
        log = s.read_log()
        t.ok("SHUTDOWN by client" in log, "the log names the client")
        t.ok("snapshot written" in log.split("SHUTDOWN by client")[1],
             "the filters were snapshotted")
        s.start()
        all_seen(t, s.port, keys, "all 20000 keys seen after the restart")
        # redis-cli shutdown prints nothing and succeeds, as with Redis
        p = subprocess.run(["redis-cli", "-p", str(s.port), "shutdown"],
                           capture_output=True, timeout=60 * SLOW)
        t.eq((p.returncode, p.stdout.strip()), (0, b""),
             "redis-cli shutdown: %r" % (p.stderr,))
        t.eq(s.proc.wait(timeout=60 * SLOW), 0, "exit 0")
        s.proc = None
        s.logf.close()


@test
def shutdown_nosave_leaves_the_keys_to_the_journal(t):
    keys = [U + "ns/%d" % i for i in range(20000)]
    with server(t, filters=BIG, extra="journal = always") as s:
        c = record(s.port, keys)
        shutdown(t, s, c, "NOSAVE")
        after = s.read_log().split("SHUTDOWN NOSAVE by client")
        t.eq(len(after), 2, "the log names the client")
        t.ok("snapshot written" not in after[1],
             "no snapshot after SHUTDOWN NOSAVE:\n" + after[1][-2000:])
        s.start()
        t.ok("journal: replayed 20000 keys" in
             s.read_log().split("SHUTDOWN NOSAVE")[-1],
             "the journal was replayed")
        all_seen(t, s.port, keys, "all 20000 keys seen after the restart")
        # and the line protocol's SHUTDOWN stops it too
        c = Raw(s.port)
        t.eq(c.line("SHUTDOWN ABORT"), "ERR No shutdown in progress.")
        c.s.sendall(b"SHUTDOWN\r\n")
        t.eq(c.eof(), b"", "line SHUTDOWN: no reply, closed")
        t.eq(s.proc.wait(timeout=60 * SLOW), 0, "exit 0")
        s.proc = None
        s.logf.close()
        s.start()
        all_seen(t, s.port, keys, "all 20000 keys seen after that stop too")


@test
def shutdown_abort_and_bad_combinations_are_redis_errors(t):
    r = Redis(t)
    with server(t) as s:
        side_by_side(t, s.port, r.port, [
            ["SHUTDOWN", "ABORT"], ["shutdown", "abort"],
            ["SHUTDOWN", "NOSAVE", "SAVE"], ["SHUTDOWN", "ABORT", "NOW"],
            ["SHUTDOWN", "FORCE", "ABORT"], ["SHUTDOWN", "SAVE", "ABORT"],
            ["SHUTDOWN", "FOO"], ["SHUTDOWN", "NOW", "LATER"],
            ["MULTI"], ["SHUTDOWN"], ["EXEC"],
            ["COMMAND", "INFO", "shutdown"], ["COMMAND", "DOCS", "shutdown"],
            ["PING"],
        ], "shutdown")
        t.ok(s.proc.poll() is None, "still running after the errors")
        # allowed on a replica, as in Redis (a primary that is not there)
        c = Raw(s.port)
        t.eq(c.cmd("REPLICAOF", "127.0.0.1", str(free_port())), b"+OK\r\n")
        t.ok(c.cmd("SETNX", U + "ro", "1").startswith(b"-READONLY"),
             "a replica now")
        shutdown(t, s, c, "NOW", "FORCE", "SAVE")
    r.stop()


if __name__ == "__main__":
    run()
