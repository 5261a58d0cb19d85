"""
Users as Redis 6+ ACLs (issue 32): users_file in Redis's syntax, AUTH and
HELLO AUTH with a user, the categories, key patterns on filters, the ACL
subcommands, SIGHUP, and every -NOPERM / -WRONGPASS reply held up against
a real redis-server 7.0.15 running the same users file.
"""
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from seendtest import *

FILTERS = """
[filter.default]
capacity = 10000
error_rate = 0.001

[filter.crawl]
capacity = 100000
error_rate = 0.001
hosts = crawl.example

[filter.other]
capacity = 10000
error_rate = 0.001
hosts = other.example
"""

# Only Redis's commands and categories: redis-server loads it too.
USERS = """\
user default on nopass ~* &* +@all
user crawler on >crawlpass ~crawl* +setnx +sadd +ping +exists
user monitor on >monpass ~* +@read +info +ping -@dangerous
user off1 off >offpass ~* +@all
user admin on >adminpass ~* &* +@all
"""

CRAWLPASS_HASH = ("000f3f16d677eb50dcc6ca403710d5179d205662171db5a3519a6b56c5a4fc84")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class AclRedis:
    """redis-server 7.0.15 with --aclfile, on a free loopback port."""

    def __init__(self, t, aclfile, name="redis"):
        exe = shutil.which("redis-server")
        t.ok(exe is not None, "redis-server is installed (tools/install-deps)")
        self.port = free_port()
        self.log = t.path(name + ".log")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--daemonize", "no",
             "--dir", t.dir, "--aclfile", aclfile, "--logfile", self.log],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        t.servers.append(self)
        t.ok(wait_until(self.up, 10), "redis-server starts with %s: %s" % (
            aclfile, self.read_log()[-2000:]))

    def up(self):
        if self.proc.poll() is not None:
            return False
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

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def users_server(t, users=USERS, extra="", name="s"):
    path = t.path(name + "-users.acl")
    write(path, users)
    s = Server(t, server_extra="users_file = %s\n%s" % (path, extra),
               filters=FILTERS, name=name)
    s.users = path
    return s.start()


def login(port, user, password, resp3=False):
    c = RespBytes(port)
    if resp3:
        got = c.cmd("HELLO", "3", "AUTH", user, password)
        if not got.startswith(b"%"):
            raise Failed("HELLO 3 AUTH %s: %r" % (user, got))
    else:
        got = c.cmd("AUTH", user, password)
        if got != b"+OK\r\n":
            raise Failed("AUTH %s: %r" % (user, got))
    return c


def noperm_cmd(name):
    return ("-NOPERM this user has no permissions to run the '%s' command\r\n"
            % name).encode()


NOPERM_KEY = (b"-NOPERM this user has no permissions to access one of the "
              b"keys used as arguments\r\n")
WRONGPASS = (b"-WRONGPASS invalid username-password pair or user is "
             b"disabled.\r\n")


@test
def refusals_are_redis_bytes_for_the_same_users_file(t):
    s = users_server(t)
    aclfile = t.path("redis-users.acl")
    write(aclfile, USERS)
    r = AclRedis(t, aclfile)
    crawler = [
        ["AUTH", "crawler", "crawlpass"],
        ["DEL", "crawl1"],
        ["SHUTDOWN"],
        ["FLUSHALL"],
        ["CONFIG", "GET", "save"],
        ["REPLICAOF", "127.0.0.1", "1"],
        ["SLAVEOF", "no", "one"],
        ["ACL", "LIST"],
        ["ACL", "WHOAMI"],
        ["SADD", "other", "x"],
        ["SADD", "crawl1", "a"],
        ["SADD", "crawl1", "a"],
        ["SADD", "nocrawl", "a"],
        ["GET", "x"],
        ["PING"],
        ["AUTH", "crawler", "wrong"],
        ["AUTH", "nobody", "x"],
        ["AUTH", "off1", "offpass"],
        ["HELLO", "3", "AUTH", "crawler", "wrong"],
        ["HELLO", "2", "AUTH", "nobody", "wrong"],
        ["AUTH", "wrong"],
        ["PING"],
    ]
    side_by_side(t, s.port, r.port, crawler, "crawler")
    monitor = [
        ["AUTH", "monitor", "monpass"],
        ["SADD", "crawl1", "b"],
        ["SHUTDOWN", "NOSAVE"],
        ["CONFIG", "GET", "save"],
        ["KEYS", "*"],
        ["DEL", "crawl1"],
        ["EXPIRE", "crawl1", "10"],
        ["FLUSHDB"],
        ["ACL", "SETUSER", "monitor", "+@all"],
        ["ACL", "WHOAMI"],
        ["SMISMEMBER", "nosuch", "a"],
        ["PUBLISH", "ch", "x"],
    ]
    side_by_side(t, s.port, r.port, monitor, "monitor")
    # ACL's own errors, as the default user (everything)
    admin = [
        ["ACL", "WHOAMI"],
        ["ACL", "USERS"],
        ["ACL", "GETUSER", "nosuch"],
        ["ACL", "SETUSER", "x", "+nosuchcommand"],
        ["ACL", "SETUSER", "x", "+@nosuchcategory"],
        ["ACL", "SETUSER", "x", "#abc"],
        ["ACL", "SETUSER", "x", "~*", "~a"],
        ["ACL", "SETUSER", "x", "&*", "&a"],
        ["ACL", "SETUSER", "x", "<nosuchpass"],
        ["ACL", "SETUSER", "x", "bogus"],
        ["ACL", "SETUSER", "x", "+config|get|x"],
        ["ACL", "SETUSER", "a b"],
        ["ACL", "GETUSER", "x"],
        ["ACL", "DELUSER", "default"],
        ["ACL", "DELUSER", "nosuch", "x"],
        ["ACL", "CAT", "nosuch"],
        ["ACL", "LOG", "x"],
        ["ACL", "NOSUCH"],
        ["ACL", "WHOAMI", "x"],
        ["ACL", "GETUSER"],
        ["ACL", "SETUSER", "y", "on", ">p", "~y*", "+get"],
        ["AUTH", "y", "p"],
        ["GET", "zz"],
        ["ACL", "WHOAMI"],
        ["AUTH", "default", "anything"],
        ["ACL", "WHOAMI"],
    ]
    side_by_side(t, s.port, r.port, admin, "admin")


@test
def line_protocol_auth_with_a_user_and_its_refusals(t):
    s = users_server(t, USERS + "user liner on >linepass ~crawl +seen +ping\n")
    c = s.client()
    t.eq(c.cmd("AUTH liner wrong"), "ERR WRONGPASS invalid username-password "
         "pair or user is disabled.")
    t.eq(c.cmd("AUTH liner linepass"), "OK")
    t.eq(c.cmd("SEEN crawl https://crawl.example/a"), "0")
    t.eq(c.cmd("SEEN https://crawl.example/a"), "1", "routed to crawl")
    t.eq(c.cmd("SEEN https://other.example/a"), "ERR NOPERM this user has "
         "no permissions to access one of the keys used as arguments")
    t.eq(c.cmd("SEEN other https://x/"), "ERR NOPERM this user has no "
         "permissions to access one of the keys used as arguments")
    t.eq(c.cmd("CHECK https://crawl.example/a"), "ERR NOPERM this user has "
         "no permissions to run the 'check' command")
    t.eq(c.cmd("RESET crawl"), "ERR NOPERM this user has no permissions to "
         "run the 'reset' command")
    t.eq(c.cmd("PING"), "PONG")
    # a batch of plain SEEN lines (the fast path) checks them too
    c.send("SEEN https://crawl.example/b\nSEEN https://other.example/b\n"
           "SEEN https://crawl.example/b\n")
    t.eq([c.line() for _ in range(3)],
         ["0", "ERR NOPERM this user has no permissions to access one of "
          "the keys used as arguments", "1"])


@test
def fast_paths_check_users_too(t):
    s = users_server(t, USERS + "user nosetnx on >p ~* +sadd +ping\n"
                     "user bfonly on >p ~crawl* +bf.add\n")
    c = login(s.port, "nosetnx", "p")
    # a pipeline of SETNX (the batched path) from a user without SETNX
    got = c.pipeline([["SETNX", "https://crawl.example/%d" % i, "1"]
                      for i in range(100)])
    t.eq(set(got), {noperm_cmd("setnx")})
    got = c.pipeline([["SADD", "crawl", "m%d" % i] for i in range(100)])
    t.eq(set(got), {b":1\r\n"}, "SADD is allowed everywhere")
    b = login(s.port, "bfonly", "p")
    got = b.pipeline([["BF.ADD", f, "k"] for f in ("crawl", "other",
                                                   "crawl")] * 20)
    t.eq(got[:3], [b":1\r\n", NOPERM_KEY, b":0\r\n"])
    t.eq(got[3:6], [b":0\r\n", NOPERM_KEY, b":0\r\n"])
    t.eq(b.cmd("SADD", "crawl", "x"), noperm_cmd("sadd"))
    # a crawler kept to some filters keeps the batched paths (each filter
    # checked once in a row); the others' keys are refused in place. Each
    # of the 1,714 crawl.example URLs must answer new, on two servers: at
    # crawl's old capacity of 10,000 a false positive came once in 160,000
    # runs, at 100,000 once in two billion
    c = login(s.port, "crawler", "crawlpass")
    urls = [("https://crawl.example/%d" if i % 7 else
             "https://other.example/%d") % i for i in range(2000)]
    got = c.pipeline([["SETNX", u, "1"] for u in urls])
    t.eq(got, [b":1\r\n" if i % 7 else NOPERM_KEY
               for i in range(2000)], "SETNX: the allowed new, the others "
         "refused, in order")
    s2 = users_server(t, USERS + "user liner on >p ~crawl* +seen +check\n",
                      name="s2")
    l = s2.client()
    t.eq(l.cmd("AUTH liner p"), "OK")
    l.send("".join("SEEN %s\n" % u for u in urls))
    got = [l.line() for _ in urls]
    t.eq(got, ["0" if i % 7 else "ERR NOPERM this user has no permissions "
               "to access one of the keys used as arguments"
               for i in range(2000)], "line SEEN likewise")
    l.send("".join("CHECK %s\n" % u for u in urls[:700]))
    got = [l.line() for _ in urls[:700]]
    t.eq(got.count("1"), 600, "CHECK: what was recorded")


@test
def a_user_without_admin_cannot_shut_down_delete_merge_or_reconfigure(t):
    # everything but the admin's, the dangerous and the keyspace's
    s = users_server(t, USERS + "user worker on >w ~* +@all -@admin "
                     "-@dangerous -@keyspace\n")
    c = login(s.port, "worker", "w")
    t.eq(c.cmd("SADD", "crawl", "a"), b":1\r\n")
    for words, name in [(["SHUTDOWN"], "shutdown"), (["DEL", "crawl"], "del"),
                        (["MERGE", "crawl", "other"], "merge"),
                        (["REPLICAOF", "127.0.0.1", "9"], "replicaof"),
                        (["CONFIG", "GET", "save"], "config|get"),
                        (["CONFIG", "REWRITE"], "config|rewrite"),
                        (["FLUSHALL"], "flushall"),
                        (["ACL", "SETUSER", "worker", "+@all"],
                         "acl|setuser"),
                        (["ACL", "LOAD"], "acl|load")]:
        t.eq(c.cmd(*words), noperm_cmd(name), " ".join(words))
    t.eq(c.cmd("SISMEMBER", "crawl", "a"), b":1\r\n", "the filter is intact")
    l = s.client()
    t.eq(l.cmd("AUTH worker w"), "OK")
    t.eq(l.cmd("SHUTDOWN"), "ERR NOPERM this user has no permissions to run "
         "the 'shutdown' command")
    t.eq(l.cmd("MERGE crawl other"), "ERR NOPERM this user has no "
         "permissions to run the 'merge' command")
    t.ok(s.proc.poll() is None, "seend still runs")
    e = val(RespBytes(s.port).cmd("ACL", "LOG", "1"))[0]
    e = dict(zip(e[0::2], e[1::2]))
    t.eq((e[b"reason"], e[b"object"], e[b"username"]),
         (b"command", b"merge", b"worker"))


@test
def key_patterns_apply_to_the_filter_a_command_names_or_a_url_routes_to(t):
    s = users_server(t)
    c = login(s.port, "crawler", "crawlpass")
    t.eq(c.cmd("SADD", "other", "x"), NOPERM_KEY)
    t.eq(c.cmd("SADD", "crawl", "x"), b":1\r\n")
    t.eq(c.cmd("SETNX", "https://crawl.example/a", "1"), b":1\r\n")
    t.eq(c.cmd("SETNX", "https://other.example/a", "1"), NOPERM_KEY)
    t.eq(c.cmd("EXISTS", "https://crawl.example/a"), b":1\r\n")
    t.eq(c.cmd("EXISTS", "https://other.example/a"), NOPERM_KEY)
    # a name no filter has yet (SADD creates it): the name itself
    t.eq(c.cmd("SADD", "crawlnew", "x"), b":1\r\n")
    t.eq(c.cmd("SADD", "new", "x"), NOPERM_KEY)
    log = val(RespBytes(s.port).cmd("ACL", "LOG", "1"))[0]
    d = dict(zip(log[0::2], log[1::2]))
    t.eq(d[b"reason"], b"key")
    t.eq(d[b"object"], b"new")
    t.eq(d[b"username"], b"crawler")


@test
def wrong_passwords_are_counted_logged_at_a_rate_and_in_the_acl_log(t):
    mport = free_port()
    s = users_server(t, extra="metrics_listen = 127.0.0.1:%d" % mport)
    c = RespBytes(s.port)
    n = 60
    got = c.pipeline([["AUTH", "crawler", "guess%d" % i] for i in range(n)])
    t.eq(set(got), {WRONGPASS})
    t.eq(c.cmd("AUTH", "crawler", "crawlpass"), b"+OK\r\n",
         "the right one still works after many wrong ones")
    info = RespBytes(s.port).cmd("INFO", "stats").decode()
    t.contains(info, "acl_access_denied_auth:%d\r\n" % n)
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                  timeout=10).read().decode()
    t.contains(body, "seend_acl_access_denied_auth_total %d\n" % n)
    lines = [l for l in s.read_log().splitlines()
             if "AUTH as 'crawler' refused" in l]
    t.ok(1 <= len(lines) <= 5, "logged at most once a second, not %d times: "
         "%r" % (len(lines), lines))
    t.contains(lines[0], "127.0.0.1:")
    log = val(RespBytes(s.port).cmd("ACL", "LOG"))
    e = dict(zip(log[0][0::2], log[0][1::2]))
    t.eq((e[b"reason"], e[b"count"], e[b"username"], e[b"object"]),
         (b"auth", n, b"crawler", b"AUTH"), "one entry, counted")
    t.eq(RespBytes(s.port).cmd("ACL", "LOG", "RESET"), b"+OK\r\n")
    t.eq(RespBytes(s.port).cmd("ACL", "LOG"), b"*0\r\n")


@test
def setuser_save_load_round_trip_and_redis_loads_the_saved_file(t):
    s = users_server(t)
    a = RespBytes(s.port)
    t.eq(a.cmd("ACL", "SETUSER", "bob", "on", ">bobpass", "~bob*", "+@read",
               "+sadd", "-@dangerous", "&news"), b"+OK\r\n")
    t.eq(a.cmd("ACL", "SETUSER", "carol", "on", "nopass", "%R~c*", "%W~w*",
               "+@all", "-@admin"), b"+OK\r\n")
    t.eq(a.cmd("ACL", "DELUSER", "off1"), b":1\r\n")
    listed = val(a.cmd("ACL", "LIST"))
    t.eq(a.cmd("ACL", "SAVE"), b"+OK\r\n")
    with open(s.users) as f:
        saved = f.read()
    t.eq(saved.splitlines(), [l.decode() for l in listed],
         "ACL SAVE writes what ACL LIST shows")
    t.contains(saved, "user crawler on #%s ~crawl* resetchannels -@all"
               % CRAWLPASS_HASH)
    t.ok("crawlpass" not in saved and "bobpass" not in saved,
         "passwords are kept as SHA-256 only")
    t.ok(not [f for f in os.listdir(os.path.dirname(s.users))
              if ".tmp" in f], "no temporary file left")
    # the saved file: redis-server 7.0.15 loads it as it is
    r = AclRedis(t, s.users)
    rl = RespBytes(r.port)
    t.eq(sorted(val(rl.cmd("ACL", "USERS"))), sorted(val(a.cmd("ACL",
                                                                "USERS"))))
    t.eq(login(r.port, "bob", "bobpass").cmd("SISMEMBER", "bobset", "x"),
         b":0\r\n")
    # changed at run time, then ACL LOAD goes back to the file
    t.eq(a.cmd("ACL", "SETUSER", "dave", "on", ">d"), b"+OK\r\n")
    t.eq(a.cmd("ACL", "LOAD"), b"+OK\r\n")
    t.eq(a.cmd("ACL", "GETUSER", "dave"), b"$-1\r\n")
    b = login(s.port, "bob", "bobpass")
    t.eq(b.cmd("SADD", "bobset", "x"), b":1\r\n")
    t.eq(b.cmd("SADD", "crawl", "x"), NOPERM_KEY)
    t.eq(b.cmd("PUBLISH", "news", "x"), noperm_cmd("publish"))
    g = dict(zip(*[iter(val(a.cmd("ACL", "GETUSER", "carol")))] * 2))
    t.eq(g[b"keys"], b"%R~c* %W~w*")
    t.eq(g[b"flags"], [b"on", b"nopass"])
    # a file with an error: ACL LOAD says where, and nothing changes
    with open(s.users, "a") as f:
        f.write("user eve on >e +nosuchcommand\n")
    got = a.cmd("ACL", "LOAD")
    nlines = saved.count("\n") + 1
    t.eq(got, ("-ERR %s:%d: Error in applying operation '+nosuchcommand': "
               "Unknown command or category name in ACL. WARNING: ACL errors "
               "detected, no change to the previously active ACL rules was "
               "performed\r\n" % (s.users, nlines)).encode())
    t.eq(b.cmd("ACL", "WHOAMI"), noperm_cmd("acl|whoami"))


@test
def a_deleted_or_disabled_users_connections_are_closed(t):
    s = users_server(t, USERS + "user gone1 on >g ~* +@all\n"
                     "user gone2 on >g ~* +@all\nuser kept on >k ~* +@all\n")
    a = RespBytes(s.port)
    g1 = login(s.port, "gone1", "g")
    g2 = login(s.port, "gone2", "g", resp3=True)
    k = login(s.port, "kept", "k")
    t.eq(a.cmd("ACL", "DELUSER", "gone1"), b":1\r\n")
    t.ok(g1.closed(), "gone1's connection closed by ACL DELUSER")
    t.eq(a.cmd("ACL", "SETUSER", "gone2", "off"), b"+OK\r\n")
    t.ok(g2.closed(), "gone2's connection closed when turned off")
    t.eq(k.cmd("PING"), b"+PONG\r\n")
    # SIGHUP with the user gone from the file
    k2 = login(s.port, "crawler", "crawlpass")
    write(s.users, USERS.replace("user crawler on >crawlpass ~crawl* +setnx "
                                 "+sadd +ping +exists\n", "") +
          "user kept on >k ~* +@all\n")
    s.send_signal(signal.SIGHUP)
    t.ok(k2.closed(), "crawler's connection closed once the file drops it")
    t.eq(k.cmd("PING"), b"+PONG\r\n", "kept's still served")
    t.eq(RespBytes(s.port).cmd("AUTH", "crawler", "crawlpass"), WRONGPASS)


@test
def a_users_file_with_an_error_on_sighup_keeps_the_old_users(t):
    s = users_server(t)
    c = login(s.port, "crawler", "crawlpass")
    write(s.users, USERS + "user newbie on >n ~* +@all\n"
          "user broken on >b ~* +@nosuchcategory\n# a comment\n")
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: "users_file:" in s.read_log(), 10),
         "the error is logged")
    log = s.read_log()
    t.contains(log, "%s:7: Error in applying operation '+@nosuchcategory'"
               % s.users)
    t.contains(log, "%s:8 should start with user keyword" % s.users)
    t.eq(c.cmd("SADD", "crawl", "a"), b":1\r\n", "its sessions go on")
    t.eq(RespBytes(s.port).cmd("AUTH", "newbie", "n"), WRONGPASS,
         "the new file's users are not taken")
    t.eq(RespBytes(s.port).cmd("AUTH", "crawler", "crawlpass"), b"+OK\r\n")
    # fixed: taken on the next SIGHUP
    write(s.users, USERS + "user newbie on >n ~* +@all\n")
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: RespBytes(s.port).cmd("AUTH", "newbie", "n") ==
                    b"+OK\r\n", 10), "the fixed file is taken")


@test
def a_users_file_with_an_error_stops_the_start(t):
    path = t.path("bad.acl")
    write(path, "user a on >x +@all\nuser b on ~* +@nosuch\n")
    s = Server(t, server_extra="users_file = %s" % path, filters=FILTERS)
    t.ok(s.start(expect_fail=True) != 0, "seend refuses to start")
    t.contains(s.read_log(), "%s:2: Error in applying operation '+@nosuch'"
               % path)


@test
def the_default_user_is_unchanged_without_users_file(t):
    with Server(t, filters=FILTERS) as s:
        a = RespBytes(s.port)
        t.eq(a.cmd("ACL", "WHOAMI"), b"$7\r\ndefault\r\n")
        t.eq(a.cmd("ACL", "LIST"), b"*1\r\n$34\r\nuser default on nopass ~* "
             b"&* +@all\r\n")
        t.eq(a.cmd("ACL", "SAVE"), b"-ERR This Redis instance is not "
             b"configured to use an ACL file. You may want to specify users "
             b"via the ACL SETUSER command and then issue a CONFIG REWRITE "
             b"(assuming you have a Redis configuration file set) in order "
             b"to store users in the Redis configuration.\r\n")
        t.eq(a.cmd("AUTH", "x"), b"-ERR AUTH <password> called without any "
             b"password configured for the default user. Are you sure your "
             b"configuration is correct?\r\n")
        t.eq(a.cmd("SETNX", "https://crawl.example/a", "1"), b":1\r\n")
    with Server(t, server_extra="auth_token = tok", filters=FILTERS,
                name="tok") as s:
        a = RespBytes(s.port)
        t.eq(a.cmd("AUTH", "default", "tok"), b"+OK\r\n")
        got = val(a.cmd("ACL", "LIST"))[0].decode()
        t.eq(got, "user default on #%s ~* &* +@all"
             % hashlib.sha256(b"tok").hexdigest())
        t.eq(RespBytes(s.port).cmd("AUTH", "tok"), b"+OK\r\n")


@test
def hello_auth_with_a_user_and_acl_cat(t):
    s = users_server(t)
    c = login(s.port, "monitor", "monpass", resp3=True)
    t.eq(c.cmd("ACL", "WHOAMI"), noperm_cmd("acl|whoami"))
    a = RespBytes(s.port)
    cats = val(a.cmd("ACL", "CAT"))
    t.eq(cats[:21], [w.encode() for w in (
        "keyspace read write set sortedset list hash string bitmap "
        "hyperloglog geo stream pubsub admin fast slow blocking dangerous "
        "connection transaction scripting").split()])
    t.eq(cats[21:], [b"bloom", b"cuckoo"])
    bloom = val(a.cmd("ACL", "CAT", "bloom"))
    t.ok(b"bf.add" in bloom and b"bf.madd" in bloom and b"setnx" not in
         bloom, repr(bloom))
    t.ok(b"cf.add" in val(a.cmd("ACL", "CAT", "cuckoo")))
    write_ = val(a.cmd("ACL", "CAT", "write"))
    t.ok(b"seen" in write_ and b"setnx" in write_ and b"check" not in write_,
         "line commands in their RESP twins' categories")
    t.ok(b"check" in val(a.cmd("ACL", "CAT", "read")))


def repl_info(s):
    try:
        text = RespBytes(s.port, timeout=5).cmd("INFO", "replication")
    except (OSError, EOFError):
        return {}
    return dict(l.split(":", 1) for l in val(text).decode().split("\r\n")
                if ":" in l)


# README's minimum line for a replica link
REPL_USER = "user repl on >replpass +psync +replconf +ping\n"


@test
def a_replica_logs_in_as_a_user_and_a_refused_login_keeps_the_link_down(t):
    p = users_server(t, USERS + REPL_USER, name="p")
    r = Server(t, "replicaof = 127.0.0.1:%d\nprimary_user = repl\n"
               "primary_token = replpass" % p.port, filters=FILTERS,
               name="r").start()
    t.ok(wait_until(lambda: repl_info(r).get("master_link_status") == "up",
                    30), "the link comes up: %r" % repl_info(r))
    t.eq(RespBytes(p.port).cmd("SADD", "crawl", "x"), b":1\r\n")
    t.ok(wait_until(lambda: RespBytes(r.port).cmd("SISMEMBER", "crawl", "x")
                    == b":1\r\n", 30), "the replica follows")
    # a wrong password, and a user that may not PSYNC: the link stays
    # down and says why
    for name, user, token, why in [("r2", "repl", "wrong", "WRONGPASS"),
                                   ("r3", "monitor", "monpass", "NOPERM")]:
        b = Server(t, "replicaof = 127.0.0.1:%d\nprimary_user = %s\n"
                   "primary_token = %s" % (p.port, user, token),
                   filters=FILTERS, name=name).start()
        t.ok(wait_until(lambda: why in repl_info(b).get("master_link_error",
                                                        ""), 30),
             "%s: master_link_error says %s: %r" % (name, why, repl_info(b)))
        t.eq(repl_info(b).get("master_link_status"), "down")
        t.contains(b.read_log(), why)
        b.stop()


@test
def the_metrics_endpoint_asks_for_its_bearer_token(t):
    mport = free_port()
    s = Server(t, "metrics_listen = 127.0.0.1:%d\nmetrics_token = m3trics"
               % mport, filters=FILTERS).start()
    url = "http://127.0.0.1:%d/metrics" % mport

    def get(auth):
        req = urllib.request.Request(url)
        if auth is not None:
            req.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(req, timeout=10) as f:
                return f.status, f.read().decode(), f.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers
        except OSError:
            return None, "", {}

    t.ok(wait_until(lambda: get("Bearer m3trics")[0] == 200, 10),
         "the right token is served")
    code, body, _ = get("Bearer m3trics")
    t.contains(body, "seend_acl_access_denied_auth_total 0\n")
    for auth in (None, "Bearer wrong", "Bearer m3trics2", "Basic m3trics"):
        code, body, hdrs = get(auth)
        t.eq(code, 401, repr(auth))
        t.eq(hdrs.get("WWW-Authenticate"), 'Bearer realm="seend"')
        t.ok("seend_" not in body, "no figures without the token")


if __name__ == "__main__":
    run()
