"""
seend speaks Redis (RESP2) on the line protocol's listeners: the same
request bytes to seend and to a real redis-server get the same reply bytes
for every command Redis has; RedisBloom's BF.* commands answer as
RedisBloom 2.4 does; redis-cli (one-shot and --pipe), redis-benchmark and
redis-py 4.3 (plain, pipelines, r.bf()) work; malformed RESP gets
"-ERR Protocol error: ..." and the connection closes while others are
served; AUTH; filters created at run time survive restart, reload and DEL.
"""
import os
import signal
import socket
import subprocess
import sys
import time

from seendtest import *

# redis-py is a Debian package: /usr/bin/python3 has it
redis = system_module("redis")

# under valgrind everything is ~30x slower: fewer keys, same checks
SCALE = 1 if not WRAPPER else 0.05


def n(x):
    return max(int(x * SCALE), 1)


def enc(*words):
    w = [x.encode() if isinstance(x, str) else x for x in words]
    return b"*%d\r\n" % len(w) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x)
                                          for x in w)


def talk(port, data, idle=None):
    """Sends data on a new connection; returns what comes back until the
    server closes or is silent for idle seconds."""
    idle = idle or 0.5 * SLOW
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SLOW)
    got = b""
    try:
        s.sendall(data)
        s.settimeout(idle)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                got += b"<closed>"
                break
            got += chunk
    except socket.timeout:
        pass
    except OSError:
        got += b"<reset>"
    finally:
        s.close()
    return got


def one_by_one(port, cmds):
    """Each command on one connection, answered before the next is sent:
    a list of reply bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SLOW)
    out = []
    for words in cmds:
        s.sendall(enc(*words))
        s.settimeout(0.1 * SLOW)
        got = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            pass
        out.append(got)
    s.close()
    return out


# Commands Redis has, with the answers seend must give byte for byte. URL
# keys and filter names (SADD's first argument) never meet in one call.
SIDE_BY_SIDE = [
    ["SETNX", "https://a.example/1", "1"],
    ["SETNX", "https://a.example/1", "1"],
    ["setnx", "https://a.example/2", "x"],
    ["SETNX", "https://a.example/3"],
    ["SETNX"],
    ["SET", "https://a.example/4", "1", "NX"],
    ["SET", "https://a.example/4", "1", "NX"],
    ["SET", "https://a.example/5", "1", "nx"],
    ["EXISTS", "https://a.example/1"],
    ["EXISTS", "https://a.example/1", "https://nope.example/", "https://a.example/1"],
    ["EXISTS"],
    ["SADD", "crawl", "a", "b", "a"],
    ["SADD", "crawl", "a"],
    ["SADD", "crawl"],
    ["SISMEMBER", "crawl", "a"],
    ["SISMEMBER", "crawl", "z"],
    ["SISMEMBER", "crawl"],
    ["SMISMEMBER", "crawl", "a", "z"],
    ["SMISMEMBER", "nofilter", "a"],
    ["SMISMEMBER", "crawl"],
    ["SCARD", "crawl"],
    ["SCARD", "nofilter"],
    ["SCARD"],
    ["PING"],
    ["PING", "hello"],
    ["ping", "a", "b"],
    ["ECHO", "x"],
    ["ECHO", b"\x00\r\nbinary\xff"],
    ["ECHO"],
    ["ECHO", "a", "b"],
    ["SELECT", "0"],
    ["SELECT", "x"],
    ["SELECT"],
    ["CLIENT", "SETNAME", "crawler"],
    ["CLIENT", "GETNAME"],
    ["CLIENT", "SETNAME", "a b"],
    ["CLIENT", "SETNAME", ""],
    ["CLIENT", "GETNAME"],
    ["CLIENT", "NOPE"],
    ["CLIENT"],
    ["AUTH", "pw"],
    ["AUTH", "default", "pw"],
    ["AUTH"],
    ["AUTH", "a", "b", "c"],
    ["DBSIZE", "x"],
    ["CONFIG", "GET", "save"],
    ["CONFIG", "GET", "appendonly"],
    ["COMMAND", "NOPE"],
    ["NOSUCH", "a", "b"],
    ["NOSUCH"],
    ["nosuch", "a b", "c"],
    ["NOSUCH", "a" * 200, "b"],
    ["DEL", "crawl"],
    ["DEL", "crawl"],
    ["DEL"],
    ["SADD", "crawl", "again"],
    ["SCARD", "crawl"],
    ["HELLO", "4"],
    ["QUIT"],
]


@test
def every_redis_command_answers_as_redis_server_does_byte_for_byte(t):
    rs = RedisServer(t)
    with Server(t) as s:
        data = b"".join(enc(*w) for w in SIDE_BY_SIDE)
        want = talk(rs.port, data)
        got = talk(s.port, data)
        if got != want:
            # one at a time, to name the first that differs
            want = one_by_one(rs.port, SIDE_BY_SIDE)
            got = one_by_one(s.port, SIDE_BY_SIDE)
            for words, w, g in zip(SIDE_BY_SIDE, want, got):
                t.eq(g, w, " ".join(map(repr, words)))
        t.eq(got, want)
        t.ok(want.endswith(b"+OK\r\n<closed>"), "QUIT closes both")
    rs.stop()


@test
def redisbloom_commands_answer_as_redisbloom_2_4(t):
    with Server(t) as s:
        cases = [
            (["BF.RESERVE", "bf", "0.01", "1000"], b"+OK\r\n"),
            (["BF.RESERVE", "bf", "0.01", "1000"], b"-ERR item exists\r\n"),
            (["BF.RESERVE", "bf"], b"-ERR wrong number of arguments for "
             b"'bf.reserve' command\r\n"),
            (["BF.RESERVE", "b2", "x", "1000"], b"-ERR bad error rate\r\n"),
            (["BF.RESERVE", "b2", "1.5", "1000"],
             b"-ERR (0 < error rate range < 1) \r\n"),
            (["BF.RESERVE", "b2", "0.01", "x"], b"-ERR bad capacity\r\n"),
            (["BF.RESERVE", "b2", "0.01", "0"],
             b"-ERR (capacity should be larger than 0)\r\n"),
            (["BF.RESERVE", "b2", "0.01", "10", "EXPANSION"],
             b"-ERR no expansion\r\n"),
            (["BF.RESERVE", "b2", "0.01", "10", "EXPANSION", "x"],
             b"-ERR bad expansion\r\n"),
            (["BF.RESERVE", "b2", "0.01", "10", "EXPANSION", "2",
              "NONSCALING"], b"-Nonscaling filters cannot expand\r\n"),
            (["BF.ADD", "bf", "x"], b":1\r\n"),
            (["BF.ADD", "bf", "x"], b":0\r\n"),
            (["BF.ADD", "bf"], b"-ERR wrong number of arguments for "
             b"'bf.add' command\r\n"),
            (["BF.MADD", "bf", "x", "y"], b"*2\r\n:0\r\n:1\r\n"),
            (["BF.EXISTS", "bf", "x"], b":1\r\n"),
            (["BF.EXISTS", "bf", "z"], b":0\r\n"),
            (["BF.EXISTS", "nosuch", "z"], b":0\r\n"),
            (["BF.MEXISTS", "bf", "x", "z"], b"*2\r\n:1\r\n:0\r\n"),
            (["BF.CARD", "bf"], b":2\r\n"),
            (["BF.CARD", "nosuch"], b":0\r\n"),
            (["BF.INSERT", "bi", "CAPACITY", "100", "ERROR", "0.01", "ITEMS",
              "x", "y", "x"], b"*3\r\n:1\r\n:1\r\n:0\r\n"),
            (["BF.INSERT", "bn", "NOCREATE", "ITEMS", "x"],
             b"-ERR not found\r\n"),
            (["BF.INSERT", "bn", "ERROR", "x", "ITEMS", "x"],
             b"-Bad error rate\r\n"),
            (["BF.INSERT", "bn", "CAPACITY", "x", "ITEMS", "x"],
             b"-Bad capacity\r\n"),
            (["BF.INSERT", "bn", "FOO", "ITEMS", "x"],
             b"-Unknown argument received\r\n"),
            (["BF.INSERT", "bn", "ITEMS"], b"-ERR wrong number of arguments "
             b"for 'bf.insert' command\r\n"),
            (["BF.INFO", "bf", "CAPACITY"], b"*1\r\n:1000\r\n"),
            (["BF.INFO", "bf", "ITEMS"], b"*1\r\n:2\r\n"),
            (["BF.INFO", "bf", "EXPANSION"], b"*1\r\n:2\r\n"),
            (["BF.INFO", "bf", "NOPE"], b"-Invalid information value\r\n"),
            (["BF.INFO", "nosuch"], b"-ERR not found\r\n"),
        ]
        got = one_by_one(s.port, [c for c, _ in cases])
        for (words, want), g in zip(cases, got):
            t.eq(g, want, " ".join(words))
        info = one_by_one(s.port, [["BF.INFO", "bf"]])[0]
        t.ok(info.startswith(b"*10\r\n+Capacity\r\n:1000\r\n+Size\r\n:"),
             "BF.INFO: %r" % info)
        t.contains(info, b"+Number of filters\r\n:1\r\n+Number of items "
                   b"inserted\r\n:2\r\n+Expansion rate\r\n:2\r\n")
        c = s.client()
        c.send("FILTERS\n")
        lines = c.lines_until_end()
        t.ok(any(l.startswith("bf capacity=1000 error_rate=0.01 count=2")
                 for l in lines), "FILTERS lists bf: %r" % lines)
        t.ok(any(l.startswith("bi capacity=100 ") for l in lines),
             "FILTERS lists bi")


@test
def line_and_resp_requests_mix_on_one_pipelined_connection(t):
    with Server(t) as s:
        data = (b"SEEN https://m.example/1\n" +
                enc("SETNX", "https://m.example/1", "v") +
                b"PING\r\n" +
                enc("SETNX", "https://m.example/2", "v") +
                b"SEEN https://m.example/2\n" +
                enc("PING") + b"CHECK https://m.example/3\n" +
                enc("EXISTS", "https://m.example/1", "https://m.example/3"))
        want = (b"0\r\n:0\r\nPONG\r\n:1\r\n1\r\n+PONG\r\n0\r\n:1\r\n")
        t.eq(talk(s.port, data), want)
        # the same bytes one at a time
        sk = socket.create_connection(("127.0.0.1", s.port))
        for i in range(len(data)):
            sk.send(data[i:i + 1])
        sk.settimeout(5 * SLOW)
        got = b""
        while len(got) < len(want):
            chunk = sk.recv(4096)
            if not chunk:
                break
            got += chunk
        sk.close()
        t.eq(got, b"1\r\n:0\r\nPONG\r\n:0\r\n1\r\n+PONG\r\n0\r\n:1\r\n",
             "byte by byte, the same keys again: all seen")


@test
def hot_path_batches_answer_like_the_general_path(t):
    # every first occurrence must answer new: filter f takes 20,000
    # distinct members, where a capacity of 100,000 gave a false positive
    # once in 17,600 runs; 1,000,000 makes it once in 280 million
    with Server(t, filters="[filter.default]\ncapacity = 1000000\n"
                "[filter.f]\ncapacity = 1000000\n") as s:
        k = n(20000)
        data = b"".join(enc("SETNX", "https://h.example/%d" % (i % (k // 2)),
                            "1") + enc("SADD", "f", "m%d" % (i % (k // 2))) +
                        enc("bf.add", "f", "m%d" % i)
                        for i in range(k))
        got = talk(s.port, data, idle=2 * SLOW)
        replies = got.split(b"\r\n")[:-1]
        t.eq(len(replies), 3 * k)
        new = [r == b":1" for r in replies]
        setnx = new[0::3]
        t.eq(sum(setnx), k // 2, "SETNX: each URL new once")
        t.ok(all(setnx[:k // 2]) and not any(setnx[k // 2:]),
             "SETNX: new in the first half, seen in the second")
        sadd = new[1::3]
        badd = new[2::3]
        t.eq(sum(sadd), k // 2, "SADD: each member new once")
        t.eq(sum(badd), k // 2, "BF.ADD: the second half was added by SADD")
        c = s.client()
        info = c.info()
        t.eq(info.get("keys_new"), str(k // 2 + k // 2 + k // 2),
             "INFO keys_new counts every new answer")


@test
def malformed_resp_gets_a_protocol_error_and_the_connection_closes(t):
    with Server(t, "max_line = 1000") as s:
        cases = [
            (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
            (b"*-5\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
            (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
            (b"*1\r\n$1001\r\n", b"-ERR Protocol error: invalid bulk "
             b"length\r\n"),
            (b"*1\r\n*1\r\n$1\r\na\r\n", b"-ERR Protocol error: expected "
             b"'$', got '*'\r\n"),
            (b"*1\r\n$4\r\nPINGxx\r\n", b"-ERR Protocol error: bulk string "
             b"not followed by CRLF\r\n"),
            (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk "
             b"length\r\n"),
            (b"*3" + b"9" * 40 + b"\r\n", b"-ERR Protocol error: too big "
             b"mbulk count string\r\n"),
        ]
        other = s.client()
        for data, want in cases:
            got = talk(s.port, data + enc("PING"))
            t.eq(got, want + b"<closed>", repr(data))
            t.eq(other.cmd("PING"), "PONG", "another client is served")
        # a huge announced array and bulk do not make seend buffer them
        rss0 = s.rss_kib()
        socks = []
        for i in range(20):
            sk = socket.create_connection(("127.0.0.1", s.port))
            sk.sendall(b"*1000000\r\n$1000\r\n" + b"a" * 500)
            socks.append(sk)
        t.eq(other.cmd("PING"), "PONG")
        t.ok(s.rss_kib() - rss0 < 20 * 1024,
             "20 clients announcing a million arguments: RSS %d KiB more"
             % (s.rss_kib() - rss0))
        for sk in socks:
            sk.close()
        # a request of many arguments, pipelined with another
        t.eq(talk(s.port, enc("SADD", "f", *["m%d" % i for i in range(10)])
                  + enc("PING")), b":10\r\n+PONG\r\n")
        t.eq(other.cmd("PING"), "PONG")


@test
def auth_before_resp_commands_as_redis_does(t):
    with Server(t, "auth_token = s3cret", unix=False) as s:
        got = one_by_one(s.port, [["SETNX", "https://a/", "1"],
                                  ["AUTH", "wrong"],
                                  ["AUTH", "s3cret"],
                                  ["SETNX", "https://a/", "1"]])
        t.eq(got, [b"-NOAUTH Authentication required.\r\n",
                   b"-WRONGPASS invalid username-password pair or user is "
                   b"disabled.\r\n", b"+OK\r\n", b":1\r\n"])
        got = one_by_one(s.port, [["NOSUCH"], ["SETNX", "a"],
                                  ["AUTH", "default", "s3cret"],
                                  ["SETNX", "https://a/", "1"]])
        t.eq(got, [b"-ERR unknown command 'NOSUCH', with args beginning "
                   b"with: \r\n", b"-ERR wrong number of arguments for "
                   b"'setnx' command\r\n", b"+OK\r\n", b":0\r\n"])
        # an unauthenticated client cannot announce a big request
        got = talk(s.port, b"*11\r\n")
        t.eq(got, b"-ERR Protocol error: unauthenticated multibulk "
             b"length\r\n<closed>")
        r = redis.Redis(port=s.port, password="s3cret")
        t.eq(r.setnx("https://b/", 1), True)
        try:
            redis.Redis(port=s.port, password="nope").ping()
            t.ok(False, "a wrong password raises")
        except redis.exceptions.ResponseError as e:
            # redis-py 4.3 raises this for Redis 7's WRONGPASS too
            t.contains(str(e), "WRONGPASS")


@test
def redis_cli_one_shot_and_pipe(t):
    # keys_new is asserted exactly after 25,000 distinct URLs: in
    # DEFAULT_FILTERS a false positive among them came once in 4,300 runs,
    # in ROOMY_FILTERS once in 100 million
    with Server(t, filters=ROOMY_FILTERS) as s:
        def cli(*args, **kw):
            return subprocess.run(["redis-cli", "-p", str(s.port)] +
                                  list(args), capture_output=True,
                                  timeout=60 * SLOW, **kw)
        t.eq(cli("setnx", "https://c/1", "1").stdout, b"1\n")
        t.eq(cli("setnx", "https://c/1", "1").stdout, b"0\n")
        t.eq(cli("ping").stdout, b"PONG\n")
        t.eq(cli("sadd", "cli", "a", "b").stdout, b"2\n")
        t.eq(cli("bf.exists", "cli", "a").stdout, b"1\n")
        k = n(50000)
        data = b"".join(enc("SETNX", "https://p/%d" % (i % (k // 2)), "1")
                        for i in range(k))
        p = cli("--pipe", input=data)
        t.eq(p.returncode, 0, "redis-cli --pipe: %r" % p.stdout[-300:])
        t.contains(p.stdout, b"errors: 0, replies: %d" % k)
        info = s.client().info()
        t.eq(info["keys_new"], str(k // 2 + 1 + 2))


@test
def redis_benchmark_setnx_and_ping_mbulk(t):
    with Server(t) as s:
        k = n(20000)
        p = subprocess.run(["redis-benchmark", "-p", str(s.port), "-n",
                            str(k), "-r", "1000000", "-P", "16", "-c", "4",
                            "-q", "SETNX", "key:__rand_int__", "v"],
                           capture_output=True, timeout=120 * SLOW)
        t.eq(p.returncode, 0, "redis-benchmark: %r %r" % (p.stdout, p.stderr))
        t.ok(b"requests per second" in p.stdout, repr(p.stdout))
        t.ok(b"WARNING" not in p.stdout + p.stderr, "no CONFIG warning")
        p = subprocess.run(["redis-benchmark", "-p", str(s.port), "-n",
                            str(k), "-t", "ping_mbulk", "-q"],
                           capture_output=True, timeout=120 * SLOW)
        t.eq(p.returncode, 0)
        t.ok(b"PING_MBULK" in p.stdout, repr(p.stdout))
        info = s.client().info()
        t.ok(int(info["cmd_seen"]) >= k, "the SETNX requests were answered")


@test
def redis_py_plain_pipeline_and_bf_against_redis_server(t):
    rs = RedisServer(t)
    with Server(t) as s:
        def calls(r):
            out = [r.setnx("https://py/1", 1), r.setnx("https://py/1", 1),
                   r.set("https://py/2", 1, nx=True),
                   r.set("https://py/2", 1, nx=True),
                   r.exists("https://py/1", "https://py/9"),
                   r.sadd("pyset", "a", "b", "a"), r.sadd("pyset", "a"),
                   r.sismember("pyset", "a"), r.sismember("pyset", "z"),
                   r.smismember("pyset", ["a", "z"]), r.scard("pyset"),
                   r.ping(), r.echo("hi"), r.client_setname("crawler"),
                   r.client_getname()]
            p = r.pipeline(transaction=False)
            for i in range(100):
                p.setnx("https://pipe/%d" % (i % 50), 1)
            p.sadd("pyset", "c")
            p.scard("pyset")
            out.append(p.execute())
            out.append(r.delete("pyset"))
            out.append(r.scard("pyset"))
            return out
        want = calls(redis.Redis(port=rs.port, decode_responses=True))
        got = calls(redis.Redis(port=s.port, decode_responses=True))
        for i, (g, w) in enumerate(zip(got, want)):
            t.eq(g, w, "call %d" % i)

        r = redis.Redis(port=s.port, decode_responses=True)
        bf = r.bf()
        t.eq(bf.create("pybf", 0.01, 1000), True)
        t.eq(bf.add("pybf", "x"), 1)
        t.eq(bf.add("pybf", "x"), 0)
        t.eq(bf.madd("pybf", "x", "y"), [0, 1])
        t.eq(bf.insert("pyins", ["x", "y"], capacity=100, error=0.01),
             [1, 1])
        t.eq(bf.exists("pybf", "y"), 1)
        t.eq(bf.mexists("pybf", "x", "z"), [1, 0])
        info = bf.info("pybf")
        t.eq((info.capacity, info.insertedNum, info.filterNum,
              info.expansionRate), (1000, 2, 1, 2))
        t.ok(info.size > 0, "BF.INFO Size %r" % info.size)
        t.eq(r.execute_command("BF.CARD", "pybf"), 2)
        p = r.pipeline(transaction=False)
        for i in range(1000):
            p.execute_command("BF.ADD", "pybf", "p%d" % (i % 500))
        res = p.execute()
        t.eq(sum(res), 500, "a pipeline of BF.ADD: 500 new")
        t.ok("keys_new" in r.info(), "redis-py parses INFO")
    rs.stop()


RUNTIME = 1000


@test
def a_thousand_runtime_filters_survive_restart_reload_and_del(t):
    k = n(RUNTIME) if WRAPPER else RUNTIME
    with Server(t, "max_filters = 2000\nnew_filter_capacity = 1000\n"
                "new_filter_error_rate = 0.01") as s:
        r = redis.Redis(port=s.port)
        p = r.pipeline(transaction=False)
        for i in range(k):
            if i % 2:
                p.execute_command("BF.RESERVE", "rt:%d" % i, "0.01", "100")
            p.sadd("rt:%d" % i, "member-%d" % i)
        p.execute()
        t.eq(r.execute_command("BF.INFO", "rt:1", "CAPACITY"), [100])
        t.eq(r.execute_command("BF.INFO", "rt:2", "CAPACITY"), [1000])
        s.stop()
        s.start()
        r = redis.Redis(port=s.port)
        p = r.pipeline(transaction=False)
        for i in range(k):
            p.sismember("rt:%d" % i, "member-%d" % i)
        t.ok(all(p.execute()), "every runtime filter kept its member "
             "across a restart")
        t.eq(r.execute_command("BF.INFO", "rt:1", "CAPACITY"), [100],
             "the capacity BF.RESERVE gave comes back from the snapshot")
        s.send_signal(signal.SIGHUP)
        time.sleep(0.5 * SLOW)
        t.eq(r.sismember("rt:%d" % (k - 1), "member-%d" % (k - 1)), 1,
             "a reload keeps runtime filters")
        t.eq(r.sadd("rt:0", "member-0"), 0)
        c = s.client()
        c.send("FILTERS\n")
        t.eq(len(c.lines_until_end()), k + 1, "FILTERS lists them all")
        t.eq(r.delete("rt:0", "rt:1", "nosuch"), 2)
        t.ok(not os.path.exists(os.path.join(s.data_dir, "rt:0.bloom")),
             "DEL removes the snapshot file")
        # a config-file filter is emptied (and kept), a runtime one dropped
        t.eq(r.setnx("https://kept.example/", 1), 1)
        t.eq(r.delete("default", "rt:2"), 2)
        t.eq(r.sismember("rt:2", "member-2"), 0, "the runtime one is gone")
        t.eq(r.setnx("https://kept.example/", 1), 1,
             "the config-file one is empty and still takes keys")
        s.stop()
        s.start()
        r = redis.Redis(port=s.port)
        t.eq(r.scard("rt:0"), 0, "a DELeted filter stays gone after a "
             "restart")
        t.eq(r.scard("rt:3"), 1)


@test
def runtime_filter_limits_names_and_create_filters_off(t):
    with Server(t, "max_filters = 3\nnew_filter_capacity = 1000") as s:
        got = one_by_one(s.port, [["SADD", "a", "x"], ["SADD", "b", "x"],
                                  ["SADD", "c", "x"], ["SADD", ".x", "x"],
                                  ["SADD", "../x", "x"],
                                  ["SADD", "a" * 65, "x"]])
        t.eq(got[:2], [b":1\r\n", b":1\r\n"])
        t.contains(got[2], b"max_filters")
        for g in got[3:]:
            t.contains(g, b"-ERR bad filter name")
    with Server(t, "create_filters = off", name="off") as s:
        got = one_by_one(s.port, [["SADD", "a", "x"], ["SISMEMBER", "a", "x"],
                                  ["BF.RESERVE", "a", "0.01", "100"],
                                  ["SADD", "a", "x"]])
        t.contains(got[0], b"-ERR no such filter 'a'")
        t.eq(got[1:], [b":0\r\n", b"+OK\r\n", b":1\r\n"])


if __name__ == "__main__":
    run()
