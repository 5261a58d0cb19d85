"""
SIGHUP reloads the config: new filters and routes, removed filters saved and
released, limits and log level replaced, listeners moved; an invalid file
changes nothing; connections and bits survive. Each reload is awaited through
the notify protocol (READY=1 after RELOADING=1), not by sleeping.
"""
import struct
import threading

from seendtest import *


class Reloader:
    """Rewrites a Server's config and reloads it, waiting for READY=1."""

    def __init__(self, t, server_kw=None, **conf):
        self.t = t
        self.n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.n.bind(t.path("notify"))
        kw = dict(server_kw or {})
        kw["env"] = {"NOTIFY_SOCKET": t.path("notify")}
        self.s = Server(t, **kw)
        self.write(**conf)

    def write(self, port=None, log_level="debug", server="",
              filters=DEFAULT_FILTERS, listen=None):
        """The whole file: [server] lines, then the filter sections."""
        s = self.s
        lines = ["[server]",
                 "listen = %s" % (listen or "127.0.0.1:%d" % (port or s.port)),
                 "data_dir = %s" % s.data_dir,
                 "log_level = %s" % log_level]
        if s.sock:
            lines.append("unix_socket = %s" % s.sock)
        with open(s.conf, "w") as f:
            f.write("\n".join(lines) + "\n" + server + "\n" + filters)

    def line_of(self, text):
        """The 1-based line number of the config line equal to text."""
        with open(self.s.conf) as f:
            for i, l in enumerate(f, 1):
                if l.strip() == text:
                    return i
        raise Failed("%r not in the config" % text)

    def start(self):
        self.s.start()
        self.ready()
        return self.s

    def ready(self):
        """Waits for READY=1; returns the datagrams up to it."""
        got = []
        self.n.settimeout(15 * SLOW)
        while True:
            try:
                m = self.n.recv(4096).decode()
            except (socket.timeout, TimeoutError):
                raise Failed("no READY=1 from seend; got %r; log:\n%s"
                             % (got, self.s.read_log()[-3000:]))
            got.append(m)
            if "READY=1" in m.split("\n"):
                return got

    def reload(self, via=None, **conf):
        """Writes the config if given, sends SIGHUP, waits; returns
        last_reload_status from INFO (over the unix socket if there is one,
        as the TCP port may have moved; or over the client via)."""
        if conf:
            self.write(**conf)
        self.s.send_signal(signal.SIGHUP)
        got = self.ready()
        # the periodic STATUS= alone (every 10 s) may come between
        got = [m for m in got if not m.startswith("STATUS=")]
        self.t.ok("RELOADING=1" in got[0].split("\n"),
                  "RELOADING=1 before READY=1: %r" % got)
        c = via or self.s.client(unix=self.s.sock is not None)
        status = c.info()["last_reload_status"]
        if via is None:
            c.close()
        return status


def filters(c):
    c.send("FILTERS\n")
    return {l.split()[0]: dict(kv.split("=", 1) for kv in l.split()[1:])
            for l in c.lines_until_end()}


def count(c, name):
    return int(c.info(name)["count"])


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return False
    except OSError:
        return True


NEWS = """
[filter.news]
capacity = 1000
error_rate = 0.01
hosts = news.example.com *.nytimes.example
prefixes = urn:news:
"""


@test
def reload_adds_a_filter_and_its_routes(t):
    r = Reloader(t)
    s = r.start()
    c = s.client()
    t.eq(c.info()["last_reload_status"], "none", "before any reload")
    t.eq(c.cmd("SEEN https://news.example.com/a"), "0")
    t.eq(count(c, "default"), 1, "default count before the reload")
    t.ok(c.cmd("SEEN news x").startswith("ERR"), "no news filter yet")
    t.eq(r.reload(filters=DEFAULT_FILTERS + NEWS), "ok", "reload status")
    t.ok(int(c.info()["last_reload_time"]) > 0, "last_reload_time set")
    f = filters(c)
    t.eq(sorted(f), ["default", "news"], "FILTERS")
    t.eq(f["news"]["capacity"], "1000", "news capacity")
    # the same URL now routes to news, where it is new
    t.eq(c.cmd("SEEN https://news.example.com/a"), "0", "routed to news")
    t.eq(c.cmd("SEEN https://www.nytimes.example/x"), "0")
    t.eq(c.cmd("SEEN urn:news:42"), "0")
    t.eq(count(c, "news"), 3, "news count")
    t.eq(count(c, "default"), 1, "default count unchanged")
    t.eq(c.cmd("SEEN https://other.example/"), "0")
    t.eq(count(c, "default"), 2, "unrouted keys still go to default")
    t.eq(c.cmd("CHECK https://news.example.com/a"), "1")


@test
def an_invalid_file_is_refused_and_the_old_config_keeps_serving(t):
    r = Reloader(t, filters=DEFAULT_FILTERS + NEWS)
    s = r.start()
    c = s.client()
    t.eq(c.cmd("SEEN https://news.example.com/1"), "0")
    t.eq(count(c, "news"), 1)
    # valid new filter and route, a bad value further down: all or nothing
    r.write(filters=DEFAULT_FILTERS + """
[filter.extra]
capacity = 1000
hosts = other.example
""" + NEWS.replace("capacity = 1000", "capacity = a-lot")
          .replace("error_rate = 0.01", "error_rate = 2"))
    bad1 = r.line_of("capacity = a-lot")
    bad2 = r.line_of("error_rate = 2")
    t.eq(r.reload(), "failed", "last_reload_status")
    log = s.read_log()
    t.contains(log, "%s:%d:" % (s.conf, bad1), "error for line %d" % bad1)
    t.contains(log, "%s:%d:" % (s.conf, bad2), "error for line %d" % bad2)
    t.eq(sorted(filters(c)), ["default", "news"], "FILTERS unchanged")
    t.eq(c.cmd("SEEN https://other.example/"), "0")
    t.eq(count(c, "default"), 1, "the refused route to extra is not used")
    t.eq(c.cmd("SEEN https://news.example.com/1"), "1", "old route, old bits")
    t.eq(c.cmd("SEEN https://news.example.com/2"), "0")
    t.eq(count(c, "news"), 2)
    t.eq(filters(c)["news"]["capacity"], "1000")
    # a missing file is refused the same way
    os.rename(s.conf, s.conf + ".away")
    t.eq(r.reload(), "failed", "reload of a missing file")
    os.rename(s.conf + ".away", s.conf)
    t.eq(c.cmd("PING"), "PONG")
    # and fixing the file makes the next reload apply it whole
    r.write(filters=DEFAULT_FILTERS + """
[filter.extra]
capacity = 1000
hosts = other.example
""" + NEWS)
    t.eq(r.reload(), "ok", "after the fix")
    t.eq(sorted(filters(c)), ["default", "extra", "news"])
    t.eq(c.cmd("SEEN https://other.example/"), "0", "now routed to extra")
    t.eq(count(c, "extra"), 1)


@test
def connections_and_bits_survive_many_reloads(t):
    r = Reloader(t)
    s = r.start()
    tcp = s.client()
    unx = s.client(unix=True)
    keys = ["https://k%d.example/" % i for i in range(200)]
    for k in keys:
        t.eq(tcp.cmd("SEEN " + k), "0", k)
    for i in range(6):
        conf = DEFAULT_FILTERS + (NEWS if i % 2 == 0 else "")
        t.eq(r.reload(filters=conf), "ok", "reload %d" % i)
        t.eq(tcp.cmd("PING"), "PONG", "tcp after reload %d" % i)
        t.eq(unx.cmd("PING"), "PONG", "unix after reload %d" % i)
        t.eq(unx.cmd("CHECK " + keys[i]), "1", "bits after reload %d" % i)
    for k in keys:
        t.eq(tcp.cmd("SEEN " + k), "1", k + " after the reloads")
    t.eq(count(tcp, "default"), 200, "default count")
    t.eq(s.stop(), 0, "exit status")


@test
def a_removed_filter_is_saved_released_and_comes_back_from_its_snapshot(t):
    extra = "\n[filter.extra]\ncapacity = 5000\nerror_rate = 0.001\n"
    r = Reloader(t, filters=DEFAULT_FILTERS + extra)
    s = r.start()
    c = s.client()
    keys = ["https://e%d.example/" % i for i in range(300)]
    for k in keys:
        t.eq(c.cmd("SEEN extra " + k), "0")
    snap = os.path.join(s.data_dir, "extra.bloom")
    t.ok(not os.path.exists(snap), "no snapshot yet")
    t.eq(r.reload(filters=DEFAULT_FILTERS), "ok", "reload without extra")
    t.eq(sorted(filters(c)), ["default"], "FILTERS without extra")
    t.ok(c.cmd("SEEN extra x").startswith("ERR"), "extra is gone")
    t.ok(wait_until(lambda: os.path.exists(snap), timeout=10),
         "the removed filter's snapshot %s is written: %r"
         % (snap, os.listdir(s.data_dir)))
    t.contains(s.read_log(), "extra", "the log mentions the removal")
    t.eq(r.reload(filters=DEFAULT_FILTERS + extra), "ok", "re-add extra")
    t.eq(count(c, "extra"), 300, "count loaded from the snapshot")
    for k in keys:
        t.eq(c.cmd("CHECK extra " + k), "1", k + " from the snapshot")
    t.eq(c.cmd("SEEN extra https://new.example/"), "0")


@test
def a_filter_removed_and_re_added_at_once_keeps_its_bits(t):
    # the removal's snapshot of a big filter takes a while; a re-add that
    # comes before it is written must not start from nothing (or from an
    # older snapshot)
    big = "\n[filter.big]\ncapacity = 30M\nerror_rate = 0.001\n"
    r = Reloader(t, filters=DEFAULT_FILTERS + big)
    s = r.start()
    c = s.client()
    keys = ["https://b%d.example/" % i for i in range(200)]
    for k in keys[:100]:
        t.eq(c.cmd("SEEN big " + k), "0")
    t.eq(c.cmd("SAVE big"), "OK", "an older snapshot on disk")
    for k in keys[100:]:
        t.eq(c.cmd("SEEN big " + k), "0")
    t.eq(r.reload(filters=DEFAULT_FILTERS), "ok", "remove big")
    t.eq(r.reload(filters=DEFAULT_FILTERS + big), "ok", "re-add big")
    t.eq(count(c, "big"), 200, "count after the re-add")
    lost = [k for k in keys if c.cmd("CHECK big " + k) != "1"]
    t.ok(not lost, "%d keys lost, e.g. %r" % (len(lost), lost[:3]))
    t.eq(s.stop(), 0, "exit status")


@test
def a_damaged_snapshot_of_a_new_filter_fails_the_reload(t):
    r = Reloader(t)
    s = r.start()
    c = s.client()
    snap = os.path.join(s.data_dir, "news.bloom")
    with open(snap, "wb") as f:
        f.write(b"not a snapshot at all" * 100)
    t.eq(r.reload(filters=DEFAULT_FILTERS + NEWS), "failed",
         "reload with a damaged snapshot for the new filter")
    t.contains(s.read_log(), "news", "the log names the filter")
    t.eq(sorted(filters(c)), ["default"], "FILTERS unchanged")
    t.eq(c.cmd("SEEN https://news.example.com/"), "0")
    t.eq(count(c, "default"), 1, "routes unchanged")
    with open(snap, "rb") as f:
        t.eq(f.read(), b"not a snapshot at all" * 100,
             "the damaged file is left alone")
    os.unlink(snap)
    t.eq(r.reload(), "ok", "once it is moved away")
    t.eq(sorted(filters(c)), ["default", "news"])


@test
def a_changed_shape_keeps_every_key_and_plans_new_slices_by_it(t):
    r = Reloader(t, filters="""
[filter.default]
capacity = 100000
error_rate = 0.001
[filter.sized]
capacity = 2000
error_rate = 0.01
""")
    s = r.start()
    c = s.client()
    before = c.info("sized")
    for i in range(50):
        c.cmd("SEEN sized k%d" % i)
    t.eq(r.reload(filters="""
[filter.default]
capacity = 100000
error_rate = 0.001
[filter.sized]
capacity = 9000
error_rate = 0.0001
"""), "ok", "a shape change is not an error")
    after = c.info("sized")
    t.eq(after["capacity"], "9000", "the new capacity is the filter's")
    t.eq(float(after["error_rate"]), 0.0001, "the new error_rate too")
    for field in ("bytes", "hashes", "slices"):
        t.eq(after[field], before[field], "the running slice is kept: " +
             field)
    t.eq(after["count"], "50", "count kept")
    for i in range(50):
        t.eq(c.cmd("CHECK sized k%d" % i), "1", "bits kept")
    said = [l for l in s.read_log().splitlines()
            if "sized" in l and "capacity 2000 -> 9000" in l and
            "every key" in l]
    t.ok(said, "the log names the filter and the change:\n" +
         s.read_log()[-2000:])
    # past the old slice's 2000 keys the filter grows by the new plan
    c.send("".join("SEEN sized n%d\n" % i for i in range(3000)))
    got = [c.line() for _ in range(3000)]
    t.ok(got.count("0") >= 2900, "new keys answered new: %d" %
         got.count("0"))
    grown = c.info("sized")
    t.eq(grown["slices"], "2", "a second slice was added")
    for i in range(50):
        t.eq(c.cmd("CHECK sized k%d" % i), "1", "old keys still there")


@test
def a_log_level_change_takes_effect(t):
    def debug_lines():
        return sum(1 for l in s.read_log().splitlines() if " debug: " in l)

    def quit_one():
        c = s.client()
        t.eq(c.cmd("QUIT"), "OK")
        t.ok(c.closed(), "QUIT closes")
        c.close()
        time.sleep(0.2)

    r = Reloader(t, log_level="info")
    s = r.start()
    quit_one()
    t.eq(debug_lines(), 0, "no debug lines at info")
    t.eq(r.reload(log_level="debug"), "ok")
    quit_one()
    # the client's debug lines come as the daemon gets to them: wait for
    # them, then for the count to hold still (a late one would otherwise
    # count as logged at level error below)
    t.ok(wait_until(lambda: debug_lines() > 0), "debug lines once "
         "log_level = debug:\n" + s.read_log())
    n = -1
    while n != debug_lines():
        n = debug_lines()
        time.sleep(0.3)
    t.eq(r.reload(log_level="error"), "ok")
    size = len(s.read_log())
    quit_one()
    c = s.client()
    c.cmd("SEEN https://a.example/")
    t.eq(r.reload(), "ok")   # same file: log_level = error still
    t.eq(debug_lines(), n, "no more debug lines")
    t.eq(s.read_log()[size:], "", "nothing below error is logged")


@test
def a_listen_change_moves_the_tcp_listener(t):
    r = Reloader(t)
    s = r.start()
    old_port = s.port
    c = s.client()
    t.eq(c.cmd("SEEN https://a.example/"), "0")
    new_port = free_port()
    t.eq(r.reload(port=new_port), "ok")
    t.ok(refused(old_port), "the old port is closed")
    s.port = new_port
    c2 = s.client()
    t.eq(c2.cmd("SEEN https://a.example/"), "1", "new port, same filter")
    t.eq(c.cmd("PING"), "PONG", "a connection made on the old port lives on")
    # a port that cannot be bound fails the reload and keeps the listener
    hog = socket.socket()
    hog.bind(("127.0.0.1", 0))
    hog.listen(1)
    try:
        t.eq(r.reload(port=hog.getsockname()[1],
                      filters=DEFAULT_FILTERS + NEWS), "failed",
             "reload onto a busy port")
        t.eq(s.client().cmd("PING"), "PONG", "still on %d" % new_port)
        t.eq(sorted(filters(c2)), ["default"],
             "a failed listener change applies nothing else either")
    finally:
        hog.close()
    t.eq(s.stop(), 0, "exit status")


@test
def a_unix_socket_change_moves_it(t):
    r = Reloader(t)
    s = r.start()
    old = s.sock
    s.sock = t.path("moved.sock")
    r.write()
    t.eq(r.reload(), "ok")
    t.ok(os.path.exists(s.sock), "the new socket exists")
    t.ok(not os.path.exists(old), "the old socket file is removed")
    t.eq(s.client(unix=True).cmd("PING"), "PONG")


@test
def a_max_line_change_applies_to_open_connections(t):
    r = Reloader(t, server="max_line = 4096")
    s = r.start()
    c = s.client()
    long_key = "https://long.example/" + "x" * 1000
    t.eq(c.cmd("SEEN " + long_key), "0", "1 KB line under max_line 4096")
    t.eq(r.reload(server="max_line = 256"), "ok")
    t.ok(c.cmd("SEEN " + long_key + "y").startswith("ERR"),
         "the same connection now refuses a 1 KB line")
    t.eq(c.cmd("SEEN https://short.example/"), "0", "and goes on")
    t.eq(r.reload(server="max_line = 4096"), "ok")
    t.eq(c.cmd("SEEN " + long_key), "1", "allowed again")


@test
def a_max_clients_change_applies(t):
    r = Reloader(t, server="max_clients = 100")
    s = r.start()
    held = [s.client() for _ in range(3)]
    for h in held:
        t.eq(h.cmd("PING"), "PONG")
    t.eq(r.reload(via=held[0], server="max_clients = 3"), "ok")
    for h in held:
        t.eq(h.cmd("PING"), "PONG", "existing clients are kept")
    try:
        answer = s.client().cmd("PING")
    except OSError as e:
        answer = repr(e)
    t.ok(answer != "PONG", "a 4th client is refused at 3: %r" % answer)
    for h in held:
        h.close()
    t.ok(wait_until(lambda: s.client().cmd("PING") == "PONG"),
         "accepts again below the limit")
    t.eq(s.client().info()["max_clients"], "3", "INFO max_clients")


@test
def a_reload_to_nothing_to_listen_on_is_refused(t):
    r = Reloader(t, server_kw={"unix": False})
    s = r.start()
    c = s.client()
    t.eq(r.reload(via=c, listen="off"), "failed", "listen = off, no socket")
    t.contains(s.read_log(), "nothing to listen on", "the log says why")
    t.eq(s.client().cmd("PING"), "PONG", "the TCP listener is still open")


@test
def a_data_dir_change_saves_every_filter_in_the_new_one(t):
    # with the journal off: with it on, the change is refused (below)
    r = Reloader(t, filters=DEFAULT_FILTERS + NEWS, server="journal = off")
    s = r.start()
    c = s.client()
    t.eq(c.cmd("SEEN https://news.example.com/1"), "0")
    t.eq(c.cmd("SEEN https://plain.example/1"), "0")
    newdir = t.path("data2")
    os.makedirs(newdir)
    s.data_dir = newdir
    t.eq(r.reload(filters=DEFAULT_FILTERS + NEWS, server="journal = off"), "ok")
    want = ["default.bloom", "news.bloom"]
    t.ok(wait_until(lambda: sorted(f for f in os.listdir(newdir)
                                   if f.endswith(".bloom")) == want),
         "snapshots in the new data_dir: %r" % os.listdir(newdir))
    t.eq(s.stop(), 0, "exit status")
    s.start()
    c = s.client()
    t.eq(c.cmd("CHECK https://news.example.com/1"), "1", "news after restart")
    t.eq(c.cmd("CHECK https://plain.example/1"), "1", "default after restart")


@test
def a_new_auth_token_applies_to_connected_tcp_clients(t):
    r = Reloader(t)
    s = r.start()
    tcp = s.client()
    unx = s.client(unix=True)
    t.eq(tcp.cmd("PING"), "PONG")
    t.eq(r.reload(via=unx, server="auth_token = s3cret"), "ok")
    t.ok(tcp.cmd("SEEN https://a.example/").startswith("ERR"),
         "a connected TCP client must AUTH now")
    t.eq(unx.cmd("SEEN https://a.example/"), "0", "unix clients need not")
    t.ok(tcp.cmd("AUTH wrong").startswith("ERR"), "a wrong token")
    t.eq(tcp.cmd("AUTH s3cret"), "OK")
    t.eq(tcp.cmd("SEEN https://a.example/"), "1")
    t.eq(r.reload(via=unx, server=""), "ok", "back to no token")
    fresh = s.client()
    t.eq(fresh.cmd("SEEN https://a.example/"), "1", "no AUTH needed again")


LOAD = """
[filter.default]
capacity = 100000
error_rate = 0.001
[filter.load]
capacity = 1M
error_rate = 0.0001
"""


@test
def reloads_during_heavy_pipelined_load_lose_no_reply(t):
    r = Reloader(t, filters=LOAD)
    s = r.start()
    c = s.client(timeout=60)
    pairs = 100000          # 200k SEENs: each key twice, a PING every 1000
    every = 1000
    nreloads = 10
    want = pairs * 2 + pairs // every
    replies = []
    errors = []
    # the writer stops at each tenth of the load until the SIGHUP is sent,
    # then floods on: every reload lands while requests are in flight
    reached = [threading.Event() for _ in range(nreloads)]
    signalled = [threading.Event() for _ in range(nreloads)]

    def writer():
        try:
            chunk = []
            for i in range(pairs):
                k = "SEEN load https://load.example/%d\n" % i
                chunk.append(k)
                chunk.append(k)
                if i % every == every - 1:
                    chunk.append("PING\n")
                    c.send("".join(chunk))
                    chunk = []
                    n = (i + 1) * (nreloads + 1) // pairs - 1
                    if 0 <= n < nreloads and not reached[n].is_set():
                        reached[n].set()
                        signalled[n].wait(30 * SLOW)
            c.send("".join(chunk))
        except Exception as e:
            errors.append("writer: %r" % e)
        finally:
            for e in reached:
                e.set()

    def reader():
        try:
            while len(replies) < want:
                l = c.line()
                if l == "":
                    errors.append("EOF after %d replies" % len(replies))
                    return
                replies.append(l)
        except Exception as e:
            errors.append("reader after %d replies: %r" % (len(replies), e))

    th = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for x in th:
        x.start()
    statuses = []
    during = []
    try:
        for i in range(nreloads):
            reached[i].wait(60 * SLOW)
            r.write(filters=LOAD + (NEWS if i % 2 == 0 else ""),
                    server="max_line = %d" % (1024 + i))
            s.send_signal(signal.SIGHUP)
            signalled[i].set()
            r.ready()
            during.append(len(replies))
            statuses.append(s.client(unix=True).info()["last_reload_status"])
    finally:
        for e in signalled:
            e.set()
    for x in th:
        x.join(120 * SLOW)
    t.ok(not any(x.is_alive() for x in th), "the load finished")
    t.ok(not errors, "; ".join(errors))
    t.eq(statuses, ["ok"] * nreloads, "reload statuses")
    t.ok(sum(1 for d in during if d < want) >= nreloads // 2,
         "the reloads happened during the load (replies by then: %r)"
         % during)
    t.eq(len(replies), want, "reply count")
    i = 0
    bad = []
    new = 0
    for p in range(pairs):
        first, second = replies[i], replies[i + 1]
        i += 2
        new += first == "0"
        if first not in ("0", "1") or second != "1":
            bad.append((p, first, second))
        if p % every == every - 1:
            if replies[i] != "PONG":
                bad.append((p, "PING ->", replies[i]))
            i += 1
    t.ok(not bad, "replies out of order or wrong: %r" % bad[:10])
    t.ok(new > pairs * 0.99, "nearly every key was new (%d)" % new)
    t.eq(count(s.client(), "load"), new, "count of load")
    t.eq(c.cmd("PING"), "PONG", "the connection is still fine")
    t.eq(s.stop(), 0, "exit status")


@test
def a_data_dir_change_to_a_missing_dir_creates_it_and_saves_there(t):
    # also the filters that were clean: their only snapshot is in the old
    # directory, and a restart reads the new one
    r = Reloader(t, server="journal = off")
    s = r.start()
    c = s.client()
    t.eq(c.cmd("SEEN https://a.example/1"), "0")
    t.eq(c.cmd("SAVE"), "OK")
    newdir = t.path("created-by-seend")
    s.data_dir = newdir
    t.eq(r.reload(filters=DEFAULT_FILTERS, server="journal = off"), "ok")
    t.ok(wait_until(lambda: os.path.exists(os.path.join(newdir,
                                                        "default.bloom"))),
         "no snapshot in the new data_dir; log:\n" + s.read_log()[-2000:])
    t.eq(s.stop(), 0, "exit status")
    s.start()
    t.eq(s.client().cmd("CHECK https://a.example/1"), "1", "after restart")


@test
def a_failed_save_into_a_new_data_dir_stays_dirty_and_fails_the_stop(t):
    # a data_dir that cannot be created: the clean filter now owes a
    # snapshot there, so it must show as dirty, and a stop that cannot
    # write it must not claim success
    r = Reloader(t, server="journal = off")
    s = r.start()
    c = s.client()
    t.eq(c.cmd("SEEN https://a.example/1"), "0")
    t.eq(c.cmd("SAVE"), "OK")
    blocker = t.path("a-file")
    open(blocker, "w").close()
    s.data_dir = os.path.join(blocker, "data")
    t.eq(r.reload(filters=DEFAULT_FILTERS, server="journal = off"), "ok")
    t.ok(wait_until(lambda: c.info("default").get("last_snapshot_status")
                    == "failed"), "the save into the new data_dir failed")
    t.eq(c.info("default")["dirty"], "1", "dirty after the failed save")
    t.eq(s.stop(), 1, "exit status when a final snapshot fails")


@test
def a_data_dir_change_with_the_journal_on_is_refused(t):
    # the journal of what was acknowledged since the last snapshots is in
    # the old directory, which a restart would not read: refused, nothing
    # of the old config changes, and a kill -9 then loses nothing
    r = Reloader(t)
    s = r.start()
    c = s.client()
    t.eq(c.cmd("SEEN https://a.example/1"), "0")
    olddir = s.data_dir
    s.data_dir = t.path("elsewhere")
    os.makedirs(s.data_dir)
    t.eq(r.reload(filters=DEFAULT_FILTERS), "failed", "reload refused")
    t.contains(s.read_log(), "data_dir cannot change by a reload while a "
               "journal is open", "the log says why")
    t.eq(os.listdir(s.data_dir), [], "nothing written to the new data_dir")
    t.eq(c.cmd("SEEN https://a.example/2"), "0", "still serving")
    s.data_dir = olddir
    r.write(filters=DEFAULT_FILTERS)
    s.kill9()
    r.start()
    c = s.client()
    t.eq([c.cmd("CHECK https://a.example/%d" % i) for i in (1, 2)],
         ["1", "1"], "both keys back from the old data_dir's journal")
    # turned off by a reload, the journal stays open in the old directory
    # (and would reopen there if turned on): a move is still refused
    t.eq(r.reload(filters=DEFAULT_FILTERS, server="journal = off"), "ok",
         "journal off")
    s.data_dir = t.path("elsewhere")
    t.eq(r.reload(filters=DEFAULT_FILTERS, server="journal = off"),
         "failed", "move refused with a journal still open")


def file_jseq(path):
    """The journal segment a snapshot file says it was captured in."""
    with open(path, "rb") as f:
        return struct.unpack_from("<Q", f.read(128), 80)[0]


@test
def keys_of_a_filter_added_back_survive_a_journal_numbered_again(t):
    # a's file names a late segment; the journal goes off and its segments
    # away; turned on again it numbers from nothing: it must start past
    # a's file, also when a is retired at that moment and comes back from
    # its file later, or a replay takes the new keys as ones the file holds
    a = "\n[filter.a]\ncapacity = 100000\nerror_rate = 0.01\n"
    on = "journal = always\nsnapshot_interval = 2\n"
    off = "journal = off\nsnapshot_interval = 2\n"
    r = Reloader(t, filters=DEFAULT_FILTERS + a, server=on)
    s = r.start()
    c = s.client()
    path = os.path.join(s.data_dir, "a.bloom")
    deadline = time.time() + 60 * SLOW
    i = 0
    while True:
        t.eq(c.cmd("SEEN a https://old.example/%d" % i), "0", "old key")
        i += 1
        t.eq(c.cmd("SAVE a"), "OK")
        if file_jseq(path) >= 3:
            break
        if time.time() > deadline:
            raise Failed("a's file never named segment 3 (%d)" %
                         file_jseq(path))
        time.sleep(0.2)
    c.close()
    t.eq(r.reload(filters=DEFAULT_FILTERS + a, server=off), "ok")
    t.eq(s.stop(), 0)
    r.start()
    t.eq(r.reload(filters=DEFAULT_FILTERS, server=on), "ok",
         "journal on, a retired")
    t.eq(r.reload(filters=DEFAULT_FILTERS + a, server=on), "ok",
         "a back from its file")
    c = s.client()
    new = ["https://new.example/%d" % i for i in range(50)]
    for k in new:
        t.eq(c.cmd("SEEN a " + k), "0", "a new key acknowledged")
    c.close()
    s.kill9()
    r.start()
    c = s.client()
    got = [c.cmd("CHECK a " + k) for k in new]
    c.close()
    t.eq(got.count("1"), len(new), "acknowledged keys after kill -9")

if __name__ == "__main__":
    run()
