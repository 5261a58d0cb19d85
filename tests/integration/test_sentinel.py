"""
What Redis Sentinel needs of the instances it monitors (issue 23,
INTERFACE.md "Replicas and failover"): pub/sub enough for
__sentinel__:hello and its clients, MULTI/EXEC/DISCARD, CLIENT KILL TYPE,
SLAVEOF NO ONE, CONFIG REWRITE, ROLE and INFO's replication section.

Replies are held up byte for byte against a real redis-server (Debian 12's
7.0.15) wherever Redis gives the same answer, in RESP2 and RESP3; and three
real redis-sentinel processes monitor one seend: each sees it up as a
master, they find each other through its __sentinel__:hello channel, and
redis-py's Sentinel(...).master_for(...) records URLs through it.

Every wait is for a condition, with a timeout (scaled under valgrind);
nothing is asserted on timing.
"""
import re
import socket
import subprocess
import time

from seendtest import *

# redis-py is a Debian package: /usr/bin/python3 has it
redis = system_module("redis")


def start_pair(t):
    """A seend and a redis-server, to hold side by side."""
    s = Server(t, unix=False).start()
    r = RedisServer(t)
    return s, r


def pubsub_script(port, resp3):
    """A subscriber and a publisher through one session of pub/sub: what
    each sees, in order (HELLO's reply, which differs, left out)."""
    sub, pub = RespBytes(port, timeout=30), RespBytes(port, timeout=30)
    got = []
    if resp3:
        sub.ask(1, "HELLO", "3")
    got.append(sub.ask(2, "SUBSCRIBE", "news", "sport"))
    got.append(pub.ask(1, "PUBLISH", "news", "hello"))
    got.append(sub.values(1))
    got.append(sub.ask(1, "PING"))
    got.append(sub.ask(1, "PING", "there"))
    # RESP2: refused in the subscribed context; RESP3: answered
    got.append(sub.ask(1, "GET", "https://example.com/"))
    got.append(sub.ask(1, "PSUBSCRIBE", "h[aeu]t*"))
    got.append(pub.ask(1, "PUBLISH", "hats", "m2"))
    got.append(sub.values(1))
    got.append(pub.ask(1, "PUBLISH", "hxt", "nobody"))
    got.append(sub.ask(1, "UNSUBSCRIBE", "sport"))
    got.append(sub.ask(1, "UNSUBSCRIBE", "never"))
    got.append(sub.ask(1, "UNSUBSCRIBE"))
    got.append(sub.ask(1, "PUNSUBSCRIBE"))
    got.append(sub.ask(1, "UNSUBSCRIBE"))
    got.append(sub.ask(1, "PUNSUBSCRIBE"))
    # out of the subscribed context: every command again
    got.append(sub.ask(1, "PING"))
    got.append(pub.ask(1, "PUBLISH", "news", "gone"))
    got.append(sub.ask(1, "SUBSCRIBE", "news"))
    got.append(sub.ask(1, "QUIT"))
    got.append(pub.ask(1, "PUBLISH", "news", "after quit"))
    sub.close()
    pub.close()
    return got


@test
def test_pubsub_replies_are_redis_s_in_resp2_and_resp3(t):
    s, r = start_pair(t)
    for resp3 in (False, True):
        ours = pubsub_script(s.port, resp3)
        theirs = pubsub_script(r.port, resp3)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            t.eq(a, b, "RESP%d pub/sub step %d" % (3 if resp3 else 2, i))
    # spot checks of the shapes themselves
    ours = pubsub_script(s.port, True)
    t.eq(ours[2], b">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n",
         "RESP3 message is a push")
    ours = pubsub_script(s.port, False)
    t.eq(ours[3], b"*2\r\n$4\r\npong\r\n$0\r\n\r\n",
         "PING while subscribed (RESP2)")
    t.ok(ours[5].startswith(b"-ERR Can't execute 'get'"),
         "GET refused while subscribed (RESP2): %r" % ours[5])


def redis_py_pubsub(port, protocol_cli):
    """redis-py listens, redis-cli publishes (and listens too): the
    messages each sees."""
    c = redis.Redis(port=port, socket_timeout=30 * SLOW)
    p = c.pubsub()
    p.subscribe("crawl:done")
    p.psubscribe("crawl:*")
    seen = []
    deadline = time.time() + 10 * SLOW
    while len(seen) < 2 and time.time() < deadline:
        m = p.get_message(timeout=1.0)
        if m is not None:
            seen.append(m)
    args = ["redis-cli", "-p", str(port)] + (["-3"] if protocol_cli else [])
    cli = subprocess.Popen(args + ["SUBSCRIBE", "crawl:done"],
                           stdout=subprocess.PIPE, text=True)
    cli_lines = []
    # its confirmation: three lines ("subscribe", channel, count)
    while len(cli_lines) < 3:
        cli_lines.append(cli.stdout.readline().rstrip("\n"))
    out = subprocess.run(args + ["PUBLISH", "crawl:done",
                                 "https://example.com/a"],
                         capture_output=True, text=True, timeout=30 * SLOW)
    receivers = out.stdout.strip()
    while len(cli_lines) < 6:
        cli_lines.append(cli.stdout.readline().rstrip("\n"))
    cli.kill()
    cli.wait()
    while len(seen) < 4 and time.time() < deadline:
        m = p.get_message(timeout=1.0)
        if m is not None:
            seen.append(m)
    p.close()
    c.close()
    return seen, receivers, cli_lines


@test
def test_redis_py_and_redis_cli_pubsub_as_with_redis(t):
    s, r = start_pair(t)
    for resp3 in (False, True):
        ours = redis_py_pubsub(s.port, resp3)
        theirs = redis_py_pubsub(r.port, resp3)
        t.eq(ours, theirs, "redis-py and redis-cli%s pub/sub"
             % (" -3" if resp3 else ""))
        t.eq(ours[1], "3", "PUBLISH counts every receiver (channel, "
             "pattern, redis-cli)")
        t.eq(ours[0][2]["data"], b"https://example.com/a", "message data")


def multi_script(port, resp3):
    c = RespBytes(port, timeout=30)
    got = []
    if resp3:
        c.ask(1, "HELLO", "3")
    for words in (
            ["EXEC"], ["DISCARD"],
            ["MULTI"], ["SETNX", "https://example.com/m", "1"],
            ["EXISTS", "https://example.com/m"], ["PING"],
            ["ECHO", "x"], ["EXEC"],
            ["MULTI"], ["MULTI"], ["PING"], ["EXEC"],
            ["MULTI"], ["PING"], ["DISCARD"], ["EXEC"],
            ["MULTI"], ["NOSUCHCOMMAND", "a"], ["PING"], ["EXEC"],
            ["MULTI"], ["GET"], ["EXEC"],
            ["MULTI"], ["SELECT", "x"], ["PING"], ["EXEC"],
            ["MULTI"], ["EXEC"],
            ["MULTI"], ["SLAVEOF", "NO", "ONE"], ["EXEC"],
            ["PING"]):
        got.append((words, c.ask(1, *words)))
    c.close()
    return got


@test
def test_multi_exec_discard_replies_are_redis_s(t):
    s, r = start_pair(t)
    first = None
    for resp3 in (False, True):
        ours = multi_script(s.port, resp3)
        theirs = multi_script(r.port, resp3)
        first = first or ours
        for (w, a), (_, b) in zip(ours, theirs):
            t.eq(a, b, "RESP%d %s" % (3 if resp3 else 2, " ".join(w)))
    got = first
    t.eq(got[0][1], b"-ERR EXEC without MULTI\r\n", "EXEC without MULTI")
    t.eq(got[7][1], b"*4\r\n:1\r\n:1\r\n+PONG\r\n$1\r\nx\r\n",
         "EXEC answers the queued replies in order")
    t.eq(got[19][1], b"-EXECABORT Transaction discarded because of "
         b"previous errors.\r\n", "an unknown command queued aborts EXEC")


@test
def test_sentinel_failover_transaction(t):
    """What Sentinel 7 sends when it promotes an instance or points it at
    a new primary."""
    s = Server(t, unix=False).start()
    c = Resp(s.port)
    victims = [Resp(s.port) for _ in range(2)]
    listener = Resp(s.port)
    t.eq(listener.cmd("SUBSCRIBE", "__sentinel__:hello"),
         [b"subscribe", b"__sentinel__:hello", 1], "SUBSCRIBE")
    for w in (["MULTI"], ["SLAVEOF", "NO", "ONE"], ["CONFIG", "REWRITE"],
              ["CLIENT", "KILL", "TYPE", "normal"],
              ["CLIENT", "KILL", "TYPE", "pubsub"]):
        want = "OK" if w == ["MULTI"] else "QUEUED"
        t.eq(c.cmd(*w), want, " ".join(w))
    t.eq(c.cmd("EXEC"), ["OK", "OK", 2, 1], "EXEC's replies")
    for v in victims + [listener]:
        t.ok(v.closed(), "killed connections are closed")
    t.eq(c.cmd("PING"), "PONG", "the caller is spared")
    t.eq(c.cmd("SLAVEOF", "127.0.0.1", "1"), "OK",
         "SLAVEOF host port makes it a replica (of nothing listening)")
    t.eq(c.cmd("SLAVEOF", "127.0.0.1", "1"),
         "OK Already connected to specified master", "the same again")
    t.eq(c.cmd("SETNX", "k", "1"),
         Err("READONLY You can't write against a read only replica."),
         "a replica refuses writes")
    t.eq(c.cmd("REPLICAOF", "no", "one"), "OK", "REPLICAOF NO ONE")
    t.eq(c.cmd("SETNX", "k", "1"), 1, "a primary again: writes go")


def kill_script(port):
    """CLIENT KILL's counts and errors with 3 normal clients and 2
    subscribers."""
    me = Resp(port)
    normal = [Resp(port) for _ in range(3)]
    subs = [Resp(port) for _ in range(2)]
    for n in normal:
        n.cmd("PING")
    for sb in subs:
        sb.cmd("SUBSCRIBE", "c")
    got = [me.cmd("CLIENT", "KILL", "TYPE", "master"),
           me.cmd("CLIENT", "KILL", "TYPE", "replica"),
           me.cmd("CLIENT", "KILL", "TYPE", "slave"),
           me.cmd("CLIENT", "KILL", "TYPE", "bogus"),
           me.cmd("CLIENT", "KILL", "TYPE", "pubsub"),
           all(sb.closed() for sb in subs),
           me.cmd("CLIENT", "KILL", "TYPE", "pubsub")]
    victim = normal.pop()
    vid = victim.cmd("CLIENT", "ID")
    got += [me.cmd("CLIENT", "KILL", "ID", str(vid)), victim.closed(),
            me.cmd("CLIENT", "KILL", "ID", "0"),
            me.cmd("CLIENT", "KILL", "ID", str(vid)),
            me.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME"),
            me.cmd("CLIENT", "KILL", "SKIPME", "maybe"),
            me.cmd("CLIENT", "KILL", "NOPE", "x"),
            me.cmd("CLIENT", "KILL", "127.0.0.1:1"),
            me.cmd("CLIENT", "KILL", "TYPE", "normal"),
            all(n.closed() for n in normal),
            me.cmd("PING")]
    addr = "127.0.0.1:%d" % me.s.getsockname()[1]
    got += [me.cmd("CLIENT", "KILL", "ADDR", addr), me.cmd("PING"),
            me.cmd("CLIENT", "KILL", "ADDR", addr, "SKIPME", "no"),
            me.closed()]
    return got


@test
def test_client_kill_counts_are_redis_s(t):
    s, r = start_pair(t)
    ours, theirs = kill_script(s.port), kill_script(r.port)
    t.eq(ours, theirs, "CLIENT KILL with seend and with redis-server")
    t.eq(ours[4], 2, "TYPE pubsub kills the two subscribers")
    t.eq(ours[-7], 2, "TYPE normal kills the two others, not the caller")


@test
def test_info_replication_run_id_and_role(t):
    s = Server(t, unix=False, filters=DEFAULT_FILTERS +
               "[filter.replication]\ncapacity = 1000\n").start()
    c = Resp(s.port)
    info = c.cmd("INFO", "replication").decode()
    t.ok(info.startswith("# Replication\r\n"), "section header: %r" % info)
    fields = dict(l.split(":", 1) for l in info.split("\r\n")[1:] if l)
    t.eq(fields["role"], "master", "role")
    t.eq(fields["connected_slaves"], "0", "connected_slaves")
    t.eq(fields["master_failover_state"], "no-failover", "failover state")
    t.ok(re.fullmatch("[0-9a-f]{40}", fields["master_replid"]),
         "master_replid: %r" % fields["master_replid"])
    t.eq(fields["master_replid2"], "0" * 40, "master_replid2")
    t.eq(fields["master_repl_offset"], "0", "offset")
    t.eq(fields["second_repl_offset"], "-1", "second offset")
    t.eq(fields["repl_backlog_active"], "0", "no backlog")
    whole = c.cmd("INFO").decode()
    t.ok(re.search(r"\r\nrun_id:[0-9a-f]{40}\r\n", whole), "run_id")
    t.ok("\r\n# Replication\r\nrole:master\r\n" in whole,
         "INFO has the replication section")
    server = c.cmd("INFO", "server").decode()
    t.ok("run_id:" in server and "role:" not in server, "INFO server")
    t.ok(c.cmd("INFO", "keyspace").startswith(b"# Keyspace\r\ndb0:keys="),
         "INFO keyspace is Redis's section (the filters are its keys)")
    t.ok("name:replication" not in info, "a Redis section name wins over "
         "a filter of that name")
    t.ok("\r\n# Replication\r\n" in c.cmd("INFO", "default").decode(),
         "INFO default is Redis's default sections, not the filter")
    # a filter's INFO over RESP, by a name that is no Redis section
    s2 = c.cmd("INFO", "nosuchfilter")
    t.eq(s2, b"", "an unknown word is an empty string")
    t.eq(c.cmd("ROLE"), [b"master", 0, []], "ROLE")
    r3 = RespBytes(s.port, timeout=30)
    r3.ask(1, "HELLO", "3")
    t.eq(r3.ask(1, "ROLE"), b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n",
         "ROLE in RESP3")
    # the line protocol: the same fields, "name value", no headers
    line = Client(("127.0.0.1", s.port))
    fields = line.info()
    t.ok(re.fullmatch("[0-9a-f]{40}", fields["run_id"]), "line INFO run_id")
    t.eq(fields["role"], "master", "line INFO role")
    t.ok(not any(k.startswith("#") for k in fields), "line INFO: no headers")
    t.eq(line.info("replication")["name"], "replication",
         "line INFO <filter> is the filter's, whatever its name")
    t.eq(line.info("default")["name"], "default", "line INFO default")


@test
def test_a_subscriber_that_never_reads_is_dropped_not_grown(t):
    """Messages for a listener that does not read pile up to
    output_buffer_limit, then it is disconnected: the daemon's memory for
    it stays bounded, and everyone else is served."""
    s = Server(t, "output_buffer_limit = 65536", unix=False).start()
    lazy = socket.socket()
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.connect(("127.0.0.1", s.port))
    lazy.sendall(enc("SUBSCRIBE", "firehose"))
    pub = Resp(s.port)
    t.ok(wait_until(lambda: pub.cmd("PUBLISH", "firehose", "x") == 1, 10),
         "the listener is subscribed")
    payload = b"u" * 8192
    peak = 0
    # far more than the socket buffers take: 32 MiB
    for i in range(4096):
        n = pub.cmd("PUBLISH", "firehose", payload)
        if n == 0:
            break
        if i % 256 == 0:
            info = pub.cmd("INFO").decode()
            peak = max(peak, int(re.search(r"connection_memory_bytes:(\d+)",
                                           info).group(1)))
    t.eq(pub.cmd("PUBLISH", "firehose", "x"), 0,
         "the listener is gone once its unread messages pass the limit")
    t.ok(peak < 4 * 65536 + 2 * (1 << 20),
         "connection memory stays bounded: peak %d bytes" % peak)
    lazy.settimeout(10 * SLOW)
    got = 0
    try:
        while True:
            chunk = lazy.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
    except (ConnectionResetError, socket.timeout):
        pass
    t.ok(got < 4096 * 8192, "it got only part of the messages (%d bytes)"
         % got)
    t.eq(pub.cmd("PING"), "PONG", "the publisher is served")
    t.contains(s.read_log(), "output_buffer_limit", "the log says why")


# ---- three real sentinels ----

def sentinel(t, i, master_port, down_ms):
    """seendtest's Sentinel (i of three) monitoring mymaster, with Redis's
    own INFO and hello periods."""
    return Sentinel(t, i, [("mymaster", master_port)],
                    [("down-after-milliseconds", down_ms),
                     ("failover-timeout", 600000)], fast=False)


def healthy(m):
    if m is None:
        return False
    flags = m["flags"].split(",")
    return ("master" in flags and "s_down" not in flags and
            "o_down" not in flags and "disconnected" not in flags and
            m["num-other-sentinels"] == "2" and m["role-reported"] ==
            "master" and m["num-slaves"] == "0")


@test
def test_three_sentinels_monitor_seend_and_find_each_other(t):
    t.ok(SENTINEL is not None, "redis-sentinel is installed "
         "(tools/install-deps: redis-sentinel)")
    s = Server(t, unix=False).start()
    down_ms = int(2000 * SLOW)
    sentinels = [sentinel(t, i, s.port, down_ms) for i in range(3)]
    # hello messages go every 2 s: discovery takes a few of them
    ok = wait_until(lambda: all(healthy(x.master("mymaster"))
                                for x in sentinels),
                    timeout=60)
    if not ok:
        raise Failed("sentinels' view: %r\nlog: %s\nseend: %s" % (
            [x.master("mymaster") for x in sentinels], sentinels[0].log(),
            s.read_log()[-3000:]))
    for x in sentinels:
        m = x.master("mymaster")
        t.eq((m["ip"], m["port"]), ("127.0.0.1", str(s.port)),
             "the master's address")
    # the run_id they learned from INFO is seend's
    run_id = re.search(r"run_id:([0-9a-f]{40})",
                       Resp(s.port).cmd("INFO").decode()).group(1)
    t.eq(sentinels[0].master("mymaster")["runid"], run_id, "runid from INFO")
    # each sentinel knows the two others, by the hello channel
    for x in sentinels:
        c = Resp(x.port)
        others = c.cmd("SENTINEL", "SENTINELS", "mymaster")
        c.close()
        t.eq(len(others), 2, "SENTINEL SENTINELS lists the two others")
    # a client that finds the primary through Sentinel records URLs
    sen = redis.sentinel.Sentinel(
        [("127.0.0.1", x.port) for x in sentinels],
        socket_timeout=30 * SLOW)
    t.eq(sen.discover_master("mymaster"), ("127.0.0.1", s.port),
         "redis-py discovers the master")
    m = sen.master_for("mymaster", socket_timeout=30 * SLOW)
    t.eq(m.sadd("crawl", "https://example.com/s1"), 1, "SADD new")
    t.eq(m.sadd("crawl", "https://example.com/s1"), 0, "SADD seen")
    t.eq(m.sismember("crawl", "https://example.com/s1"), True, "SISMEMBER")
    t.eq(m.sismember("crawl", "https://example.com/s2"), False,
         "SISMEMBER of another")
    # still healthy after all that
    t.ok(all(healthy(x.master("mymaster")) for x in sentinels),
         "still healthy")
    for x in sentinels:
        x.proc.terminate()
        x.proc.wait(30)
        x.proc = None


if __name__ == "__main__":
    run()
