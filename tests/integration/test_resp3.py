"""
RESP3 and what today's clients send on connect (INTERFACE.md, "Today's
Redis clients: RESP3 and what they send"), side by side with a real
redis-server 7.0.15: the same request streams go to both, one request at a
time on one connection, and every reply must be the same bytes, in RESP2
and after HELLO 3, and again after HELLO 2 switches back.

Where a reply cannot be the same bytes, the case says how it is compared:
  Hello(...)  HELLO's map/array: "server", "version" and "id" are seend's
              own (checked in hello_fields_are_seends_own), every other
              byte is Redis's;
  Shape(...)  the value is the server's own (DBSIZE, COMMAND COUNT, CLIENT
              ID, INFO): same RESP type, framing checked, RESP3 verbatim
              strings carry "txt:";
  Differ(...) the contract deliberately differs from Redis 7.0.15: seend's
              bytes are the contract's, and Redis's observed bytes are
              asserted too, so that a Redis that changes is noticed.

Also: HELLO with AUTH and a password required (each case on its own
connection: seend closes a connection after three refused requests before
AUTH, by design), the exact bytes redis-py 8 sends on connect (from
redis-py 8.0.1's redis/connection.py on_connect_check_health) replayed with
the checks redis-py applies to each answer, and redis-cli -3 one-shots.
"""
import os
import re
import socket
import subprocess

from seendtest import *

U = "https://a.example/"


# ---- how a case is compared ----

# (seendtest's side-by-side cases: a list of words, the same bytes, or
# Differ; these two are this file's own)

class Hello:
    def __init__(self, *words):
        self.words = words

    def check(self, g, w):
        if hello_normalised(g) != hello_normalised(w):
            return ["HELLO reply %r, Redis's %r" % (g, w)]
        return []


class Shape:
    def __init__(self, *words):
        self.words = words

    def check(self, g, w):
        gk, gv = parse_all(g)
        wk, wv = parse_all(w)
        if gk != wk:
            return ["type %r, Redis's %r (%r)" % (gk, wk, g[:80])]
        if gk == b"=" and not gv.startswith(b"txt:"):
            return ["verbatim string not txt: %r" % gv[:20]]
        return []


OWN = (b"server", b"version", b"id")


def hello_pairs(b):
    """HELLO's reply as (container type, [(key, value bytes)])."""
    kind, val = parse_all(b)
    if kind == b"%":
        pairs = val
    elif kind == b"*" and len(val) % 2 == 0:
        pairs = list(zip(val[0::2], val[1::2]))
    else:
        raise ValueError("HELLO reply is neither a map nor an even array")
    out = []
    for k, v in pairs:
        out.append((k[1], v))
    return kind, out


def hello_normalised(b):
    """HELLO's reply with server, version and id blanked: what must be the
    same bytes as Redis's."""
    kind, pairs = hello_pairs(b)
    return kind, [(k, None if k in OWN else v) for k, v in pairs]


CLUSTER_OFF = b"-ERR This instance has cluster support disabled\r\n"
NO_SETINFO = b"-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.\r\n"


def common(p):
    """The requests both streams carry after their HELLO (or none); p
    makes the URLs of each stream distinct. Values are "1": seend's GET
    answers "1" for a seen key whatever was SET."""
    u = lambda n: U + p + str(n)
    return [
        ["PING"], ["PING", "msg"], ["ping", "a", "b"],
        ["ECHO", "hi"], ["ECHO", b"\x00\r\nbin\xff"], ["ECHO"],
        # SET: new, again, NX new and seen
        ["SET", u(1), "1"], ["SET", u(1), "1"],
        ["SET", u(1), "1", "NX"], ["SET", u(2), "1", "NX"],
        ["SET", u(2), "1", "nx"],
        # TTL options: accepted, not applied per key
        ["SET", u(3), "1", "EX", "100"], ["SET", u(3), "1", "PX", "100000"],
        ["SET", u(3), "1", "EXAT", "4102444800"],
        ["SET", u(3), "1", "PXAT", "4102444800000"],
        ["SET", u(3), "1", "KEEPTTL"], ["set", u(3), "1", "ex", "5"],
        ["SET", u(4), "1", "EX", "100", "NX"],
        ["SET", u(4), "1", "NX", "EX", "100"],
        ["SET", u(5), "1", "nx", "px", "100000"],
        ["SET", u(6), "1", "KEEPTTL", "NX"],
        ["SET", u(6), "1", "NX", "PXAT", "4102444800000"],
        # bad spellings
        ["SET", u(7), "1", "EX"], ["SET", u(7), "1", "EX", "x"],
        ["SET", u(7), "1", "EX", "0"], ["SET", u(7), "1", "EX", "-1"],
        ["SET", u(7), "1", "PX", "0"], ["SET", u(7), "1", "EXAT", "x"],
        ["SET", u(7), "1", "EX", "10", "PX", "10"],
        ["SET", u(7), "1", "EX", "10", "KEEPTTL"],
        ["SET", u(7), "1", "EX", "10", "EX", "10"],
        ["SET", u(7), "1", "NX", "XX"], ["SET", u(7), "1", "FOO"],
        ["SET", u(7), "1", "EX", "99999999999999999"],
        ["SET", u(7), "1", "NX", "NX"],
        ["SET", u(7)], ["SET"],
        ["GET", u(7)], ["SETNX", u(7), "1"],
        # GET, MGET, EXISTS, SETNX
        ["GET", u(1)], ["GET", u(99)], ["GET"], ["GET", u(1), u(2)],
        ["MGET", u(1), u(99), u(2), u(3)], ["MGET", u(98)], ["MGET"],
        ["EXISTS", u(1)], ["EXISTS", u(1), u(99), u(1)], ["EXISTS"],
        ["SETNX", u(8), "1"], ["SETNX", u(8), "1"], ["SETNX", u(8)],
        # CLIENT
        ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME", "crawler"],
        ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME", "a b"],
        ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME"],
        Shape("CLIENT", "ID"),
        Differ(["CLIENT", "SETINFO", "LIB-NAME", "x"], b"+OK\r\n", NO_SETINFO,
               "CLIENT SETINFO answers +OK as Redis 7.2 does"),
        Differ(["CLIENT", "SETINFO", "LIB-VER", "y"], b"+OK\r\n", NO_SETINFO,
               "CLIENT SETINFO answers +OK as Redis 7.2 does"),
        Differ(["client", "setinfo", "lib-name", "redis-py(x_v1)"],
               b"+OK\r\n", NO_SETINFO.replace(b"SETINFO", b"setinfo"),
               "as Redis 7.2"),
        Differ(["CLIENT", "SETINFO", "FOO", "y"],
               b"-ERR Unrecognized option 'FOO'\r\n", NO_SETINFO,
               "Redis 7.2's error for an unknown attribute"),
        Differ(["CLIENT", "SETINFO", "LIB-NAME"],
               b"-ERR wrong number of arguments for 'client|setinfo' "
               b"command\r\n", NO_SETINFO, "Redis 7.2's arity error"),
        ["CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type",
         "internal-ip"],
        ["CLIENT", "MAINT_NOTIFICATIONS"], ["CLIENT", "NOPE"],
        # SELECT
        ["SELECT", "0"],
        Differ(["SELECT", "1"], b"-ERR DB index is out of range\r\n",
               b"+OK\r\n", "seend has one database: Redis's own error "
               "for an index past 'databases'"),
        ["SELECT", "0"], ["SELECT", "x"], ["SELECT"],
        # values of the server's own
        Shape("DBSIZE"), Shape("COMMAND", "COUNT"),
        Shape("INFO"), Shape("INFO", "server"),
        # COMMAND INFO / DOCS: Redis 7.0.15's entries byte for byte
        ["COMMAND", "INFO", "get", "set", "setnx", "exists", "del"],
        ["COMMAND", "INFO", "GET", "nosuchcmd", "mget"],
        ["COMMAND", "INFO", "sadd", "sismember", "smismember", "scard",
         "ping", "echo", "select", "hello", "auth", "quit"],
        ["COMMAND", "DOCS", "get"],
        ["COMMAND", "DOCS", "set", "setnx"],
        ["COMMAND", "NOPE"],
        Differ(["READONLY"], b"+OK\r\n", CLUSTER_OFF,
               "the contract: READONLY/READWRITE answer +OK (cluster "
               "clients send them); standalone Redis refuses"),
        Differ(["READWRITE"], b"+OK\r\n", CLUSTER_OFF,
               "the contract: +OK"),
        ["CONFIG", "GET", "save"], ["CONFIG", "GET", "appendonly"],
        ["CONFIG", "GET"],
        # unknown commands and wrong arities
        ["NOSUCH", "a", "b"], ["nosuch"], ["NOSUCH", "a b", "c"],
        ["TYPE"], ["KEYS"], ["SCAN"], ["EXPIRE", "x"], ["PEXPIRE", "x"],
        ["EXPIREAT", "x"], ["TTL"], ["PTTL"], ["PERSIST"], ["UNLINK"],
        ["DEL"], ["DBSIZE", "x"], ["HELLO", "3", "AUTH", "default"],
        ["HELLO", "3", "SETNAME"], ["HELLO", "3", "FOO"],
        ["HELLO", "x"], ["HELLO", "4"], ["HELLO", "1"],
        ["HELLO", "3", "SETNAME", "a b"],
    ]


@test
def resp3_after_hello_3_answers_as_redis_server_byte_for_byte(t):
    r = RedisServer(t)
    with Server(t) as s:
        cases = [Hello("HELLO", "3")] + common("r3-") + [
            ["GET", U + "r3-99"],
            # HELLO with no version answers in the current protocol
            Hello("HELLO"),
            Hello("HELLO", "3", "SETNAME", "viahello"),
            ["CLIENT", "GETNAME"],
            # back to RESP2 mid-connection
            Hello("HELLO", "2"),
            ["GET", U + "r3-99"], ["CLIENT", "GETNAME"],
            ["MGET", U + "r3-1", U + "r3-99"],
            ["SET", U + "r3-1", "1", "NX"],
            ["CONFIG", "GET", "save"], ["COMMAND", "DOCS", "get"],
            ["CLIENT", "SETNAME", ""], ["CLIENT", "GETNAME"],
            Shape("INFO"),
            # and to RESP3 again
            Hello("HELLO", "3"),
            ["GET", U + "r3-99"], ["SET", U + "r3-1", "1", "NX"],
            ["CLIENT", "GETNAME"],
            ["QUIT"],
        ]
        side_by_side(t, s.port, r.port, cases, "RESP3")
    r.stop()


@test
def resp2_without_hello_answers_as_redis_server_byte_for_byte(t):
    r = RedisServer(t)
    with Server(t) as s:
        cases = common("r2-") + [["QUIT"]]
        side_by_side(t, s.port, r.port, cases, "RESP2")
    r.stop()


@test
def resp3_null_map_and_verbatim_shapes(t):
    # the RESP3 forms the contract names, asserted on seend alone (so that
    # a failure says which form is wrong even if Redis is missing)
    with Server(t) as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("HELLO", "3")[:3], b"%7\r", "HELLO 3 is a map of 7")
        t.eq(c.cmd("GET", U + "none"), b"_\r\n", "GET of an unseen key")
        t.eq(c.cmd("CLIENT", "GETNAME"), b"_\r\n", "GETNAME without a name")
        t.eq(c.cmd("SET", U + "n", "1", "NX"), b"+OK\r\n", "SET NX new")
        t.eq(c.cmd("SET", U + "n", "1", "NX"), b"_\r\n", "SET NX seen")
        t.eq(c.cmd("MGET", U + "n", U + "none"),
             b"*2\r\n$1\r\n1\r\n_\r\n", "MGET")
        t.eq(c.cmd("CONFIG", "GET", "save"), b"%1\r\n$4\r\nsave\r\n$0\r\n\r\n",
             "CONFIG GET save is a map")
        kind, val = parse_all(c.cmd("INFO"))
        t.eq(kind, b"=", "INFO is a verbatim string")
        t.ok(val.startswith(b"txt:"), "INFO's verbatim format is txt")
        t.ok(re.search(rb"\r\n[a-z_]+:[^\r\n]*\r\n", val),
             "INFO's text has field:value lines: %r" % val[:200])
        # the line protocol is unchanged on a RESP3 connection
        c.s.sendall(b"SEEN https://a.example/line\r\n")
        t.eq(c._line(), b"0\r\n", "a line SEEN after HELLO 3")
        t.eq(c.cmd("GET", "https://a.example/line"), b"$1\r\n1\r\n",
             "GET after the line SEEN")
        c.close()
        # a RESP2 connection is unaffected by another one's HELLO 3
        c2 = RespBytes(s.port)
        t.eq(c2.cmd("GET", U + "none"), b"$-1\r\n", "RESP2 null")
        c2.close()


def seend_version():
    p = subprocess.run([SEEND, "-V"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    m = re.search(rb"(\d+\.\d+[\w.\-]*)", p.stdout)
    return m.group(1) if m else p.stdout.strip()


@test
def hello_fields_are_seends_own(t):
    with Server(t) as s:
        version = seend_version()
        for proto, kind in (("2", b"*"), ("3", b"%")):
            c = RespBytes(s.port)
            got = c.cmd("HELLO", proto)
            k, pairs = hello_pairs(got)
            t.eq(k, kind, "HELLO %s's container" % proto)
            d = dict(pairs)
            t.eq([p[0] for p in pairs], [b"server", b"version", b"proto",
                                         b"id", b"mode", b"role",
                                         b"modules"], "HELLO's keys")
            t.eq(d[b"server"], (b"$", b"seend"), "server")
            t.eq(d[b"version"], (b"$", version), "version as seend -V says")
            t.eq(d[b"proto"], (b":", proto.encode()), "proto")
            t.eq(d[b"mode"], (b"$", b"standalone"), "mode")
            t.eq(d[b"role"], (b"$", b"master"), "role")
            t.eq(d[b"modules"], (b"*", []), "modules")
            t.eq(d[b"id"][0], b":", "id is an integer")
            cid = parse_all(c.cmd("CLIENT", "ID"))
            t.eq(cid, d[b"id"], "HELLO's id is CLIENT ID")
            c.close()
        # ids of two connections differ
        a, b = RespBytes(s.port), RespBytes(s.port)
        t.ok(a.cmd("CLIENT", "ID") != b.cmd("CLIENT", "ID"),
             "two connections, two ids")
        a.close()
        b.close()


PW = "s3cret"


def auth_cases():
    """Each list is one connection (at most two refused requests before
    AUTH, below seend's three-strikes close)."""
    return [
        [["PING"], ["GET", U + "x"]],
        [["HELLO", "3"], ["HELLO"]],
        [["HELLO", "2"], Hello("HELLO", "3", "AUTH", "default", PW),
         ["GET", U + "x"]],
        [["HELLO", "3", "AUTH", "default", "wrong"],
         Hello("HELLO", "3", "AUTH", "default", PW), ["PING"],
         ["GET", U + "x"], ["CLIENT", "GETNAME"]],
        [["HELLO", "3", "AUTH", "bob", PW],
         ["HELLO", "3", "AUTH", "default"]],
        [Hello("HELLO", "3", "AUTH", "default", PW, "SETNAME", "x"),
         ["CLIENT", "GETNAME"], ["SET", U + "x", "1", "NX"],
         ["SET", U + "x", "1", "NX"], ["GET", U + "y"], ["QUIT"]],
        [Hello("HELLO", "3", "auth", "default", PW), ["GET", U + "y"]],
        [Hello("HELLO", "2", "AUTH", "default", PW), ["GET", U + "y"],
         ["CLIENT", "GETNAME"]],
        [["AUTH", PW], Hello("HELLO", "3"), ["GET", U + "y"]],
        [["AUTH", "default", PW], Hello("HELLO"), ["GET", U + "y"]],
        [["AUTH", "wrong"], ["AUTH", "default", PW], ["PING"]],
    ]


@test
def hello_with_auth_answers_as_redis_server_with_requirepass(t):
    r = RedisServer(t)
    t.eq(r.talk(enc("CONFIG", "SET", "requirepass", PW), 1.0), b"+OK\r\n",
         "CONFIG SET requirepass")
    with Server(t, server_extra="auth_token = %s" % PW) as s:
        for i, cases in enumerate(auth_cases()):
            want = play(r.port, cases)
            got = play(s.port, cases)
            compare(t, cases, got, want, "connection %d" % (i + 1))
    r.stop()


@test
def hello_with_auth_when_no_password_is_set_answers_as_redis(t):
    # Redis's default user has no password: HELLO AUTH default <anything>
    # is accepted; so is seend's without auth_token
    r = RedisServer(t)
    with Server(t) as s:
        cases = [Hello("HELLO", "3", "AUTH", "default", "whatever"),
                 ["GET", U + "q"], ["AUTH", "default", "x"],
                 Hello("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"),
                 ["CLIENT", "GETNAME"], ["QUIT"]]
        side_by_side(t, s.port, r.port, cases, "no password")
    r.stop()


# ---- redis-py 8 ----
#
# redis-py 8.0.1 (redis/connection.py, AbstractConnection
# .on_connect_check_health; DEFAULT_RESP_VERSION = 3 in redis/utils.py;
# MaintNotificationsConfig(enabled="auto") made by the connection pool for
# RESP3 TCP connections; the endpoint type of 127.0.0.1, a private
# address, is "internal-ip"; DriverInfo's default name "redis-py" and the
# package version), with redis.Redis(host="127.0.0.1", port=P), sends,
# each after the previous reply:
REDIS_PY_8_CONNECT = [
    b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
    b"*5\r\n$6\r\nCLIENT\r\n$19\r\nMAINT_NOTIFICATIONS\r\n$2\r\nON\r\n"
    b"$20\r\nmoving-endpoint-type\r\n$11\r\ninternal-ip\r\n",
    b"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n"
    b"$8\r\nredis-py\r\n",
    b"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$7\r\nLIB-VER\r\n$5\r\n8.0.1\r\n",
]
# With password="pw" (no username) the first is HELLO 3 AUTH default pw;
# with client_name="n" a CLIENT SETNAME n follows MAINT_NOTIFICATIONS; with
# db=N a SELECT N comes last. health_check_interval=0: no PING.
REDIS_PY_8_CONNECT_AUTH = [
    b"*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n"
    b"$6\r\n" + PW.encode() + b"\r\n",
    REDIS_PY_8_CONNECT[1],
    b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$7\r\ncrawler\r\n",
    REDIS_PY_8_CONNECT[2], REDIS_PY_8_CONNECT[3],
    b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n",
]

# redis/_parsers/base.py EXCEPTION_CLASSES: errors that redis-py raises as
# ConnectionError (never tolerated, even where a ResponseError is).
CONNECTION_ERRORS = (b"-NOAUTH", b"-WRONGPASS",
                     b"-ERR max number of clients reached",
                     b"-ERR invalid password")


def replay(port, chunks):
    c = RespBytes(port)
    out = []
    try:
        for b in chunks:
            c.s.sendall(b)
            out.append(c.reply())
        c.s.settimeout(0.3 * SLOW)
        try:
            extra = c.s.recv(65536)
        except (socket.timeout, TimeoutError):
            extra = b""
        t_extra = c.buf + extra
    finally:
        c.close()
    return out, t_extra


def redis_py_8_accepts(t, replies, extra, with_auth):
    hello = replies[0]
    kind, pairs = hello_pairs(hello)
    t.eq(kind, b"%", "HELLO 3's reply is a RESP3 map (redis-py reads a "
         "dict): %r" % hello[:60])
    t.eq(dict(pairs).get(b"proto"), (b":", b"3"),
         "handshake_metadata[b'proto'] == 3 or redis-py raises "
         "'Invalid RESP version'")
    maint = replies[1]
    # +OK, or an error that parses to ResponseError: tolerated with
    # enabled="auto"
    t.ok(maint == b"+OK\r\n" or (maint.startswith(b"-") and
                                 not maint.startswith(CONNECTION_ERRORS)),
         "MAINT_NOTIFICATIONS: %r is neither +OK nor a ResponseError" % maint)
    rest = replies[2:]
    if with_auth:
        t.eq(rest[0], b"+OK\r\n", "CLIENT SETNAME must answer OK")
        rest = rest[1:]
        t.eq(rest[-1], b"+OK\r\n", "SELECT 0 must answer OK")
        rest = rest[:-1]
    for r in rest:
        t.eq(r, b"+OK\r\n", "CLIENT SETINFO")
    t.eq(extra, b"", "nothing beyond one reply per request")


@test
def redis_py_8_connect_bytes_are_answered_as_it_requires(t):
    r = RedisServer(t)
    with Server(t) as s:
        got, extra = replay(s.port, REDIS_PY_8_CONNECT)
        redis_py_8_accepts(t, got, extra, False)
        want, _ = replay(r.port, REDIS_PY_8_CONNECT)
        t.eq(hello_normalised(got[0]), hello_normalised(want[0]),
             "HELLO 3 as Redis's but for server/version/id")
        t.eq(got[1], want[1], "MAINT_NOTIFICATIONS as Redis 7.0.15")
        # and the connection then works in RESP3
        c = RespBytes(s.port)
        for b in REDIS_PY_8_CONNECT:
            c.s.sendall(b)
            c.reply()
        t.eq(c.cmd("SET", U + "py8", "1", "NX"), b"+OK\r\n")
        t.eq(c.cmd("SET", U + "py8", "1", "NX"), b"_\r\n")
        t.eq(c.cmd("GET", U + "py8-no"), b"_\r\n")
        c.close()
    r.stop()


@test
def redis_py_8_connect_bytes_with_a_password(t):
    with Server(t, server_extra="auth_token = %s" % PW) as s:
        got, extra = replay(s.port, REDIS_PY_8_CONNECT_AUTH)
        redis_py_8_accepts(t, got, extra, True)
        # a wrong password is an AuthenticationError, nothing else
        bad = [REDIS_PY_8_CONNECT_AUTH[0].replace(PW.encode(), b"wrong!")]
        got, _ = replay(s.port, bad)
        t.eq(got[0], b"-WRONGPASS invalid username-password pair or user "
             b"is disabled.\r\n", "HELLO 3 AUTH with a wrong password")


# ---- redis-cli -3 ----

def cli(port, *args):
    p = subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30 * SLOW)
    return p.returncode, p.stdout


@test
def redis_cli_3_one_shots_print_as_with_redis_server(t):
    r = RedisServer(t)
    with Server(t) as s:
        runs = [
            ("-3", "set", "https://x/", "1", "nx"),
            ("-3", "set", "https://x/", "1", "nx"),
            ("-3", "get", "https://x/"),
            ("-3", "get", "https://y/"),
            ("-3", "mget", "https://x/", "https://y/"),
            ("-3", "exists", "https://x/", "https://y/"),
            ("-3", "setnx", "https://z/", "1"),
            ("-3", "set", "https://w/", "1", "ex", "60", "nx"),
            ("-3", "client", "getname"),
            ("-3", "config", "get", "save"),
            ("-3", "ping"),
            ("-3", "command", "info", "get"),
            ("-3", "nosuch", "a"),
            ("-3", "--no-raw", "get", "https://y/"),
            ("-3", "--no-raw", "set", "https://x/", "1", "nx"),
            ("-3", "--no-raw", "config", "get", "save"),
            ("-3", "--no-raw", "mget", "https://x/", "https://y/"),
            ("-2", "get", "https://y/"),
            ("get", "https://y/"),
        ]
        bad = []
        for args in runs:
            want = cli(r.port, *args)
            got = cli(s.port, *args)
            if got != want:
                bad.append("redis-cli %s: seend %r, redis %r" % (
                    " ".join(args), got, want))
        # HELLO 3: a map printed "key value" a line, the same lines but
        # for server, version and id
        want = cli(r.port, "-3", "hello", "3")[1].split(b"\n")
        got = cli(s.port, "-3", "hello", "3")[1].split(b"\n")
        t.eq(len(got), len(want), "redis-cli -3 hello 3 lines: %r" % got)
        for g, w in zip(got, want):
            if w.split(b" ")[0] in OWN:
                t.eq(g.split(b" ")[0], w.split(b" ")[0], "hello 3 key")
            elif g != w:
                bad.append("redis-cli -3 hello 3: %r vs %r" % (g, w))
        t.ok(b"server seend" in got, "server seend: %r" % got)
        t.ok(not bad, "\n".join(bad))
    r.stop()


if __name__ == "__main__":
    run()
