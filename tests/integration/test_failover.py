"""
Replicas and failover with real components (issue 23, INTERFACE.md
"Replicas and failover"):

1. Three redis-sentinel processes (Debian's) monitor a seend primary and two
   seend replicas (`replicaof = 127.0.0.1:PORT`): they find the replicas
   and each other. A crawler that finds the primary through redis-py's
   Sentinel(...).master_for() records URLs; the primary is killed -9
   while a crawler's batches, each followed by WAIT 2, are in flight and
   one replica is stopped (SIGSTOP) until WAIT 2 has answered less than 2;
   Sentinel promotes a replica, the crawler keeps recording through it
   (retrying on connection errors during the switch, as a crawler would),
   every URL acknowledged before the kill (WAIT 2 after its batch, or a
   later one) answers seen there, the other replica follows the new
   primary, and the old
   primary, restarted with its config and data_dir, is made a replica by
   Sentinel and catches up.
2. twemproxy's (nutcracker's) dead-node case with a replica promoted in the
   dead node's place: two seend primaries behind the proxy, one replica
   each; one primary is killed -9, its replica promoted (REPLICAOF NO ONE)
   and put under the dead node's server name (ketama hashes by that name):
   no URL recorded before is answered new.

Every wait is for a condition, with a timeout (scaled under valgrind);
nothing is asserted on timing. Sentinel's INFO and hello periods are
shortened with SENTINEL DEBUG (Redis 7's knob for them) so that the file
fits its budget; down-after-milliseconds and failover-timeout are set in
each sentinel's config.
"""
import os
import random
import shutil
import signal
import subprocess
import threading
import time

from seendtest import *

# redis-py is a Debian package: /usr/bin/python3 has it
redis = system_module("redis")

NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"

SCALE = 1 if not WRAPPER else 0.1
# Sentinel's timing: a primary that does not answer PING for DOWN_MS is
# down; FAILOVER_MS bounds each step of a failover (and a failed election
# is retried after twice that). Not less than 3 s: a sentinel that switches
# to the new primary makes a new link to it, connects up to its ping period
# (1 s) later and counts the wait for the first PONG from the switch; with
# 1 s it takes the new primary for dead now and then and fails over again.
# Under valgrind a seend answers slowly: a primary must not be taken for
# dead while it is only slow.
DOWN_MS = 3000 if not WRAPPER else 20000
FAILOVER_MS = 10000 if not WRAPPER else 60000

RETRYABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
             redis.exceptions.ReadOnlyError)


def urls(prefix, first, n):
    return ["https://%s.example/page/%d?q=%d" % (prefix, i, i * 7919)
            for i in range(first, first + n)]


# ---- a seend node and what its INFO says ----

def node(t, name, primary=None):
    """A seend on TCP only, a replica of primary if given."""
    extra = "replicaof = 127.0.0.1:%d\n" % primary.port if primary else ""
    return Server(t, server_extra=extra, unix=False, name=name).start()


def info(s, section="replication"):
    """INFO <section> of s as a dict; None if s does not answer (dead, or
    its connection killed by Sentinel's CLIENT KILL)."""
    try:
        c = Resp(s.port, timeout=5)
        try:
            raw = c.cmd("INFO", section)
        finally:
            c.close()
    except (OSError, EOFError):
        return None
    if not isinstance(raw, bytes):
        return None
    out = {}
    for line in raw.decode(errors="replace").split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def info_of(t, s):
    """INFO replication of s, waiting for an answer (a connection of ours
    that Sentinel's CLIENT KILL closes is asked again)."""
    got = []
    t.ok(wait_until(lambda: got.append(info(s)) or got[-1] is not None, 10),
         "%s answers INFO" % s.name)
    return got[-1]


def caught_up(primary, replicas):
    """True when every replica follows primary, its link is up and it holds
    the stream up to the offset primary had when asked (read first)."""
    p = info(primary)
    if p is None or p.get("role") != "master":
        return False
    offset = int(p["master_repl_offset"])
    for r in replicas:
        i = info(r)
        if (i is None or i.get("role") != "slave" or
                i.get("master_port") != str(primary.port) or
                i.get("master_link_status") != "up" or
                int(i.get("slave_repl_offset", -1)) < offset):
            return False
    return True


def why(nodes):
    """The replication view of each node and its log's tail, for a failure
    message."""
    out = []
    for s in nodes:
        i = info(s)
        keep = dict((k, v) for k, v in (i or {}).items()
                    if k.startswith(("role", "master_", "slave",
                                     "connected_slaves")))
        out.append("%s (port %d): %r\n  log: %s" % (
            s.name, s.port, keep, s.read_log()[-1500:].replace("\n",
                                                               "\n  ")))
    return "\n".join(out)


def wait_caught_up(t, primary, replicas, timeout=30, what="caught up",
                   more=lambda: ""):
    if not wait_until(lambda: caught_up(primary, replicas), timeout,
                      step=0.05):
        raise Failed("%s: replicas did not catch up with %s\n%s\n%s"
                     % (what, primary.name, why([primary] + replicas),
                        more()))


def exists_on(port, keys, chunk=2000):
    """EXISTS of every key on the instance at port, pipelined: 0 or 1
    each. A connection error (Sentinel's CLIENT KILL) is retried."""
    for attempt in range(5):
        try:
            r = redis.Redis(port=port, socket_timeout=30 * SLOW)
            out = []
            for i in range(0, len(keys), chunk):
                p = r.pipeline(transaction=False)
                for k in keys[i:i + chunk]:
                    p.exists(k)
                out += p.execute()
            r.close()
            return out
        except redis.exceptions.ConnectionError:
            if attempt == 4:
                raise
            time.sleep(0.2)


def all_seen(t, s, keys, what):
    """Every key answers EXISTS 1 on s; else the count and a few of them."""
    gone = [k for k, e in zip(keys, exists_on(s.port, keys)) if e != 1]
    t.ok(not gone, "%s: %d of %d answer not seen on %s, such as %r"
         % (what, len(gone), len(keys), s.name, gone[:3]))


def stop_all(t, servers):
    """Stops each seend with SIGTERM: exit status 0 (under valgrind or ASan
    also: no error found)."""
    for s in servers:
        if s.proc is not None:
            rc = s.stop()
            t.eq(rc, 0, "%s stopped by SIGTERM exits 0; log:\n%s"
                 % (s.name, s.read_log()[-3000:]))


# ---- three real sentinels ----

def sentinel(t, i, master_port):
    """seendtest's Sentinel (i of three) monitoring mymaster."""
    return Sentinel(t, i, [("mymaster", master_port)],
                    [("down-after-milliseconds", DOWN_MS),
                     ("failover-timeout", FAILOVER_MS),
                     ("parallel-syncs", 1)])


def sees(x, primary, replicas):
    """True when sentinel x sees primary up as the master, the replicas up
    as its replicas, and the two other sentinels."""
    m = x.master("mymaster")
    if (m is None or m["port"] != str(primary.port) or
            "master" not in m["flags"].split(",") or
            not sentinel_up(m["flags"]) or
            m["role-reported"] != "master" or
            m["num-other-sentinels"] != "2"):
        return False
    reps = x.replicas("mymaster")
    if reps is None:
        return False
    return (sorted(int(r["port"]) for r in reps
                   if sentinel_up(r["flags"]) and
                   r["role-reported"] == "slave" and
                   r["master-port"] == str(primary.port)) ==
            sorted(s.port for s in replicas))


def sentinel_view(sentinels):
    out = []
    for x in sentinels:
        out.append("sentinel %d: master %r\n  replicas %r\n  log: %s" % (
            x.port, x.master("mymaster"), x.replicas("mymaster"),
            x.log()[-2500:].replace("\n", "\n  ")))
    return "\n".join(out)


def record(m, keys, wait_replicas, wait_ms=1000):
    """SETNX key 1 for each key through m in one pipeline (one connection),
    then WAIT wait_replicas wait_ms (if wait_replicas is not None): the
    replies, WAIT's last."""
    p = m.pipeline(transaction=False)
    for k in keys:
        p.execute_command("SETNX", k, 1)
    if wait_replicas is not None:
        p.execute_command("WAIT", wait_replicas, int(wait_ms * SLOW))
    return p.execute()


class WaitWriter:
    """A crawler's thread: batches of new URLs through the primary on a
    connection of its own, each pipelined with WAIT 2 <wait_ms>, one after
    the other, until the connection fails (the primary's kill) or stop();
    when a batch's WAIT answers 2, both replicas hold it and every batch
    before it (whichever Sentinel promotes): urls("inflight", 0, acked)."""

    def __init__(self, port, batch, wait_ms=200):
        self.r = redis.Redis(port=port, socket_timeout=30 * SLOW)
        self.batch, self.wait_ms = batch, wait_ms
        self.acked, self.answers, self.sent = 0, [], 0
        self.error, self.bad = None, []
        self.stopping = threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def loop(self):
        n = 0
        while not self.stopping.is_set():
            keys = urls("inflight", n, self.batch)
            n += self.batch
            self.sent = n
            try:
                got = record(self.r, keys, 2, self.wait_ms)
            except RETRYABLE as e:
                self.error = e
                return
            except Exception as e:     # a failure of the test: reported
                self.bad.append(repr(e))
                return
            if not all(isinstance(x, int) for x in got):
                self.bad.append("replies %r" % [
                    x for x in got if not isinstance(x, int)][:3])
                return
            self.answers.append(got[-1])
            if got[-1] >= 2:
                self.acked = n

    def stop(self, t):
        self.stopping.set()
        self.th.join(60 * SLOW)
        t.ok(not self.th.is_alive(), "the writer thread stopped")
        self.r.close()
        t.ok(not self.bad, "writer: %r" % self.bad)


@test
def sentinel_promotes_a_replica_and_redis_py_keeps_recording(t):
    t.ok(SENTINEL is not None, "redis-sentinel is installed "
         "(tools/install-deps: redis-sentinel)")
    p = node(t, "p")
    r1 = node(t, "r1", p)
    r2 = node(t, "r2", p)
    seends = [p, r1, r2]
    wait_caught_up(t, p, [r1, r2], what="replicas from their config")
    t.eq(info_of(t, p)["connected_slaves"], "2",
         "the primary has two replicas")

    sentinels = [sentinel(t, i, p.port) for i in range(3)]
    # the replicas from the primary's INFO, each other from the hello
    # channel
    if not wait_until(lambda: all(sees(x, p, [r1, r2]) for x in sentinels),
                      timeout=60):
        raise Failed("the sentinels do not see the primary, its two "
                     "replicas and each other:\n" + sentinel_view(sentinels))
    for x in sentinels:
        t.eq(len(x.replicas("mymaster")), 2, "SENTINEL REPLICAS lists 2")
        t.eq(x.others("mymaster"), 2,
             "SENTINEL SENTINELS lists the two others")

    sen = redis.sentinel.Sentinel(
        [("127.0.0.1", x.port) for x in sentinels], socket_timeout=5 * SLOW)
    t.eq(sen.discover_master("mymaster"), ("127.0.0.1", p.port),
         "redis-py finds the primary through Sentinel")
    t.eq(sorted(sen.discover_slaves("mymaster")),
         sorted(("127.0.0.1", s.port) for s in (r1, r2)),
         "redis-py finds the replicas through Sentinel")
    m = sen.master_for("mymaster", socket_timeout=10 * SLOW)

    # the crawl before the kill: a batch counts as acknowledged once WAIT
    # says both replicas hold it (WAIT 1 says that one does, not which,
    # and Sentinel promotes the replica with the highest offset it last
    # read)
    batch = max(int(250 * SCALE), 50)
    acked, n = [], 0
    for b in range(max(int(20 * SCALE), 5)):
        keys = urls("before", n, batch)
        n += batch
        got = record(m, keys, 2)
        t.ok(all(isinstance(x, int) for x in got),
             "the primary answers SETNX and WAIT: %r" % [
                 x for x in got if not isinstance(x, int)][:3])
        if got[-1] >= 2:
            acked += keys
    t.ok(len(acked) > 0, "WAIT 2 acknowledges batches")

    # the kill lands while a crawler's batches with WAIT 2 are in flight
    # and one replica is behind: r2 is stopped (SIGSTOP) until a WAIT 2
    # sent after the stop has timed out short of 2 (asserted: a stopped
    # replica acknowledges nothing), the primary is killed a random while
    # later, and r2 goes on. What WAIT acknowledged must survive the
    # failover, what it did not may be missing.
    w = WaitWriter(p.port, batch)
    try:
        t.ok(wait_until(lambda: w.acked >= 3 * batch or
                        not w.th.is_alive(), 30) and w.th.is_alive(),
             "the writer's WAIT 2 acknowledges batches (%d URLs; answers "
             "%r; %r)" % (w.acked, w.answers[-5:], w.bad))
        r2.send_signal(signal.SIGSTOP)
        try:
            k = len(w.answers) + 1
            t.ok(wait_until(lambda: any(a < 2 for a in w.answers[k:]) or
                            not w.th.is_alive(), 30) and w.th.is_alive(),
                 "WAIT 2 answers less than 2 while a replica is stopped "
                 "(%d answers since the stop, the last %r; %r)" % (
                     len(w.answers[k:]), w.answers[-5:], w.bad))
            time.sleep(random.uniform(0, 0.2))
            p.kill9()
        finally:
            r2.send_signal(signal.SIGCONT)
        killed = time.time()
        w.th.join(30 * SLOW)
        t.ok(w.error is not None, "the kill landed while a batch was in "
             "flight: the writer's connection failed (%d batches "
             "answered)" % len(w.answers))
    finally:
        w.stop(t)
    inflight = urls("inflight", w.acked, w.sent - w.acked)
    acked += urls("inflight", 0, w.acked)
    diag("%d URLs recorded before the crawler, %d acknowledged by WAIT 2 "
         "before the kill; the kill came with %d more sent and not "
         "acknowledged" % (n, len(acked), len(inflight)))
    # the crawler goes on: each batch is retried until a primary takes it
    after, errors = [], 0
    kinds = set()
    deadline = time.time() + 60 * SLOW
    first_ok = None
    for b in range(max(int(8 * SCALE), 4)):
        keys = urls("after", b * batch, batch)
        while True:
            try:
                got = record(m, keys, None)
                break
            except RETRYABLE as e:
                errors += 1
                kinds.add(type(e).__name__)
                if time.time() > deadline:
                    raise Failed("no primary took the crawl's writes %ds "
                                 "after the kill (%d errors: %s)\n%s\n%s"
                                 % (60 * SLOW, errors, sorted(kinds),
                                    sentinel_view(sentinels),
                                    why([r1, r2])))
                time.sleep(0.1)
        if first_ok is None:
            first_ok = time.time() - killed
        t.ok(all(isinstance(x, int) for x in got), "SETNX answered")
        after += keys
    diag("the crawl went on %.1f s after the kill, after %d retried "
         "errors (%s)" % (first_ok, errors, ", ".join(sorted(kinds))))

    addr = sen.discover_master("mymaster")
    t.ok(addr in [("127.0.0.1", r1.port), ("127.0.0.1", r2.port)],
         "Sentinel promoted a replica: the master is %r" % (addr,))
    new, other = (r1, r2) if addr[1] == r1.port else (r2, r1)
    t.eq(info_of(t, new)["role"], "master", "the promoted replica says master")
    t.ok(wait_until(lambda: all(x.master_addr("mymaster") == addr
                                for x in sentinels), 30),
         "every sentinel names the new primary:\n"
         + sentinel_view(sentinels))
    all_seen(t, new, acked, "every URL acknowledged before the kill "
             "answers seen on the new primary")
    diag("of the %d sent and not acknowledged, %d are missing there" % (
        len(inflight), sum(e != 1 for e in exists_on(new.port, inflight))))
    all_seen(t, new, after, "the URLs recorded after the kill are on "
             "the new primary")
    # the other replica follows the new primary
    wait_caught_up(t, new, [other], timeout=60,
                   what="the other replica follows the new primary",
                   more=lambda: sentinel_view(sentinels))
    diag("the other replica followed the new primary %.1f s after the kill"
         % (time.time() - killed))
    t.eq(info_of(t, other)["master_port"], str(new.port),
         "INFO master_port of the other replica")
    all_seen(t, other, acked + after,
             "the other replica answers every URL seen")

    # the old primary comes back as it was configured, a primary; Sentinel
    # makes it a replica of the new one, and it catches up
    p.start()
    restarted = time.time()
    wait_caught_up(t, new, [other, p], timeout=60,
                   what="the old primary, restarted, made a replica",
                   more=lambda: sentinel_view(sentinels))
    diag("the old primary was a replica and caught up %.1f s after its "
         "restart" % (time.time() - restarted))
    t.eq(info_of(t, p)["role"], "slave", "INFO role of the old primary")
    t.eq(info_of(t, new)["connected_slaves"], "2",
         "the new primary has two replicas")
    all_seen(t, p, after, "the old primary answers the URLs recorded "
             "after the failover seen")
    all_seen(t, p, acked, "and those acknowledged before")
    if not wait_until(lambda: all(sees(x, new, [other, p])
                                  for x in sentinels), 30):
        raise Failed("the sentinels do not see the new primary with its "
                     "two replicas:\n" + sentinel_view(sentinels))
    # a write there is refused: it is a replica now
    c = Resp(p.port)
    reply = c.cmd("SETNX", "https://late.example/", "1")
    c.close()
    t.ok(isinstance(reply, Err) and reply.startswith("READONLY"),
         "SETNX on the old primary: %r" % reply)
    # and the crawl goes on through Sentinel
    more = urls("later", 0, batch)
    got = None
    deadline = time.time() + 30 * SLOW
    while got is None:
        try:
            got = record(m, more, 2, wait_ms=30000)
        except RETRYABLE:
            t.ok(time.time() < deadline, "the crawl goes on")
            time.sleep(0.1)
    t.eq(got[-1], 2, "WAIT 2: both replicas hold the new batch")
    all_seen(t, p, more, "the old primary has the new batch")
    for x in sentinels:
        x.stop()
    stop_all(t, seends)


# ---- twemproxy: a promoted replica in a dead node's place ----

class Proxy:
    """nutcracker on port (free if None) in front of servers, a list of
    (server name, seend)."""

    def __init__(self, t, servers, port=None, name="nc"):
        t.ok(os.access(NUTCRACKER, os.X_OK), "nutcracker is installed")
        self.port = port or free_port()
        self.conf = t.path(name + ".yml")
        with open(self.conf, "w") as f:
            f.write("seend:\n"
                    "  listen: 127.0.0.1:%d\n"
                    "  redis: true\n"
                    "  hash: fnv1a_64\n"
                    "  distribution: ketama\n"
                    "  auto_eject_hosts: false\n"
                    "  server_retry_timeout: 60000\n"
                    "  server_failure_limit: 1\n"
                    "  timeout: %d\n"
                    "  preconnect: true\n"
                    "  server_connections: 1\n"
                    "  servers:\n" % (self.port, int(10000 * SLOW)))
            for server_name, s in servers:
                f.write("    - 127.0.0.1:%d:1 %s\n" % (s.port, server_name))
        self.proc = subprocess.Popen(
            [NUTCRACKER, "-c", self.conf, "-s", str(free_port()),
             "-a", "127.0.0.1", "-o", t.path(name + ".log"), "-v", "6"],
            preexec_fn=die_with_parent)
        t.servers.append(self)
        t.ok(wait_until(self.ready, 10), "nutcracker answers")

    def ready(self):
        if self.proc.poll() is not None:
            raise Failed("nutcracker exited with %s" % self.proc.returncode)
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.exceptions.RedisError:
            return False

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=30 * SLOW)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc = None


def through(r, keys, op, chunk=2000):
    """op ("SETNX" or "EXISTS") of every key through the proxy, pipelined:
    the replies, an error reply as its exception."""
    out = []
    for i in range(0, len(keys), chunk):
        p = r.pipeline(transaction=False)
        for k in keys[i:i + chunk]:
            if op == "SETNX":
                p.execute_command("SETNX", k, 1)
            else:
                p.execute_command("EXISTS", k)
        out += p.execute(raise_on_error=False)
    return out


@test
def a_promoted_replica_in_a_dead_node_s_place_answers_its_urls_seen(t):
    p1 = node(t, "p1")
    p2 = node(t, "p2")
    r1 = node(t, "r1", p1)
    r2 = node(t, "r2", p2)
    seends = [p1, p2, r1, r2]
    wait_caught_up(t, p1, [r1])
    wait_caught_up(t, p2, [r2])
    px = Proxy(t, [("node1", p1), ("node2", p2)])
    r = px.client()
    keys = urls("ring", 0, max(int(20000 * SCALE), 1000))
    first = through(r, keys, "SETNX")
    t.eq([x for x in first if not isinstance(x, int)][:3], [],
         "the proxy answers every SETNX")
    on1 = sum(exists_on(p1.port, keys))
    diag("%d URLs through the proxy, %d on node1" % (len(keys), on1))
    t.ok(len(keys) // 6 < on1 < len(keys) * 5 // 6,
         "ketama gives node1 a share of the URLs")
    # WAIT does not pass through twemproxy: each replica holds what its
    # primary had once its offset reaches the primary's
    wait_caught_up(t, p1, [r1])
    wait_caught_up(t, p2, [r2])

    p1.kill9()
    dead = through(r, keys, "SETNX")
    errors = sum(1 for x in dead if isinstance(x, Exception))
    new = sum(1 for x in dead if x == 1)
    diag("node1 dead: %d errors, %d new of %d" % (errors, new, len(keys)))
    t.eq(new, 0, "with node1 dead no URL is answered new")
    t.ok(errors > 0, "node1's share gets errors")

    c = Resp(r1.port)
    t.eq(c.cmd("REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE")
    c.close()
    t.ok(wait_until(lambda: (info(r1) or {}).get("role") == "master", 10),
         "the replica becomes a primary")
    # the replica under the dead node's name, on the proxy's port
    px.stop()
    px = Proxy(t, [("node1", r1), ("node2", p2)], port=px.port, name="nc2")
    r = px.client()
    ex = through(r, keys, "EXISTS")
    gone = [k for k, x in zip(keys, ex) if x != 1]
    t.ok(not gone, "every URL recorded before answers EXISTS 1 through "
         "the proxy: %d do not, such as %r" % (len(gone), gone[:3]))
    again = through(r, keys, "SETNX")
    t.eq([x for x in again if not isinstance(x, int)][:3], [],
         "the proxy answers every SETNX")
    t.eq(sum(1 for x in again if x == 1), 0,
         "0 URLs recorded before are answered new")
    # and the promoted replica takes new URLs in node1's share
    fresh = urls("fresh", 0, 500)
    got = through(r, fresh, "SETNX")
    t.eq([x for x in got if not isinstance(x, int)][:3], [],
         "new URLs are recorded through the proxy")
    t.eq(sum(1 for x in through(r, fresh, "SETNX") if x == 1), 0,
         "and are seen the second time")
    t.ok(sum(exists_on(r1.port, fresh)) > 0, "the promoted replica took "
         "node1's share of them")
    px.stop()
    stop_all(t, seends)


if __name__ == "__main__":
    run()
