"""Many clients, hostile clients, slow clients, and the Unix socket."""
import os
import random
import re
import signal
import socket
import stat
import threading
import time

from seendtest import *

BIG = """
[filter.default]
capacity = 1000000
error_rate = 0.001
"""

SMALL = """
[filter.default]
capacity = 10000
error_rate = 0.001
"""


def read_replies(sk, n, buf=b""):
    """Reads n CRLF-terminated lines from a raw socket; returns (lines, rest).
    Fewer than n lines means EOF came first."""
    lines = []
    buf = bytearray(buf)
    while len(lines) < n:
        end = buf.rfind(b"\r\n")
        if end >= 0:
            lines.extend(bytes(buf[:end]).split(b"\r\n"))
            del buf[:end + 2]
            if len(lines) >= n:
                break
        chunk = sk.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    rest = b"\r\n".join(lines[n:]) + (b"\r\n" if len(lines) > n else b"")
    return [l.decode(errors="replace") for l in lines[:n]], rest + bytes(buf)


def wait_connections(t, c, n):
    """Waits until the server counts n connections (c included)."""
    t.ok(wait_until(lambda: c.info()["connections_current"] == str(n)),
         "connections_current never became %d" % n)


# ---- racing clients ----

@test
def racing_clients_exactly_one_gets_0_per_new_key(t):
    nclients, nkeys = 8, 5000
    with Server(t, filters=BIG) as s:
        keys = ["https://race.example/%d" % i for i in range(nkeys)]
        socks = [socket.create_connection(("127.0.0.1", s.port))
                 for _ in range(nclients)]
        barrier = threading.Barrier(nclients)
        results = [None] * nclients
        errors = []

        def worker(i):
            try:
                order = list(range(nkeys))
                if i % 2:       # half the same order, half shuffled
                    random.Random(i).shuffle(order)
                data = "".join("SEEN %s\n" % keys[k] for k in order).encode()
                sk = socks[i]
                sk.settimeout(30 * SLOW)
                barrier.wait(10)
                sk.sendall(data)
                got, _ = read_replies(sk, nkeys)
                results[i] = dict(zip(order, got))
            except Exception as e:  # reported below
                errors.append("client %d: %r" % (i, e))

        threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(nclients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60 * SLOW)
        t.ok(not errors, "; ".join(errors))
        for i, r in enumerate(results):
            t.ok(r is not None and len(r) == nkeys,
                 "client %d got %s replies" % (i, r and len(r)))
            t.ok(set(r.values()) <= {"0", "1"}, "client %d: replies %r"
                 % (i, set(r.values())))
        zeros = [sum(1 for r in results if r[k] == "0") for k in range(nkeys)]
        many = [keys[k] for k in range(nkeys) if zeros[k] > 1]
        t.ok(not many, "%d keys answered 0 to more than one client, e.g. %r"
             % (len(many), many[:3]))
        none = sum(1 for z in zeros if z == 0)
        # a key nobody got 0 for can only be a false positive
        t.ok(none < nkeys * 0.005, "%d of %d keys got no 0 at all"
             % (none, nkeys))
        for sk in socks:
            sk.close()


# ---- garbage ----

PRINTABLE_LINE = re.compile(rb"^[\x20-\x7e]*$")


@test
def random_binary_garbage_leaves_the_daemon_serving(t):
    with Server(t, filters=SMALL) as s:
        rng = random.Random(1)
        # no '*': a request that begins with one is RESP, and malformed
        # RESP closes the connection (test_redis.py checks that)
        garbage = (b"\x00\r\n\r\n\x00\x00\n\xff\xfe\r\r\n" +
                   os.urandom(3 << 20) +
                   bytes(rng.randrange(256) for _ in range(4096))
                   ).replace(b"*", b"+")
        sk = socket.create_connection(("127.0.0.1", s.port))
        sk.settimeout(30 * SLOW)
        replies = bytearray()
        done = threading.Event()

        def reader():
            try:
                while not done.is_set():
                    chunk = sk.recv(1 << 20)
                    if not chunk:
                        break
                    replies.extend(chunk)
                    if replies.endswith(b"PONG\r\n"):
                        break
            except OSError:
                pass
            done.set()

        r = threading.Thread(target=reader, daemon=True)
        r.start()
        for i in range(0, len(garbage), 65536):
            sk.sendall(garbage[i:i + 65536])
        # end whatever partial line is left, then a request of ours
        sk.sendall(b"\nPING\n")
        t.ok(done.wait(30 * SLOW), "no PONG after the garbage")
        t.ok(s.proc.poll() is None, "seend exited: %s" % s.proc.returncode)
        lines = bytes(replies).split(b"\r\n")
        t.eq(lines[-2:], [b"PONG", b""], "the garbage connection goes on")
        t.ok(len(lines) > 1000, "only %d replies to the garbage" % len(lines))
        bad = [l for l in lines[:-2]
               if not PRINTABLE_LINE.match(l) or not l.startswith(b"ERR ")]
        t.ok(not bad, "%d replies to garbage that are not a printable "
             "ERR line, e.g. %r" % (len(bad), bad[:3]))
        sk.close()
        c = s.client()
        t.eq(c.cmd("PING"), "PONG", "a new client after the garbage")
        t.eq(c.cmd("SEEN https://after.garbage/"), "0", "SEEN new key")
        t.eq(c.cmd("SEEN https://after.garbage/"), "1", "SEEN it again")
        t.eq(c.cmd("CHECK https://never.sent/"), "0", "CHECK unknown")


# ---- a client that writes and never reads ----

# The bound on the daemon's growth while it holds a stuck client: its
# output buffer is capped at output_buffer_limit (64 KiB, plus at most one
# reply) and it stops reading, so its input buffer holds no more than what
# one read took; the rest of what the client wrote waits in the kernel or
# in the client. 64 MiB is far above the few hundred KiB that costs and
# below the 96 MiB a daemon that kept reading would have to buffer.
RSS_GROWTH_LIMIT_KIB = 64 * 1024
# More than the kernel can hold between a client and a daemon that reads
# everything it is sent: 4 MiB of unread replies (tcp_wmem) stand for
# ~20 MiB of requests, plus up to 32 MiB in the daemon's receive buffer.
STUCK_TOTAL = 96 << 20


def stuck_client(t, unix):
    with Server(t, server_extra="output_buffer_limit = 65536",
                filters=BIG) as s:
        other = s.client()
        t.eq(other.cmd("PING"), "PONG")
        rss_before = s.rss_kib()

        # one 1 MiB chunk of SEENs of short keys and a PING, repeated: the
        # first copy answers 0 per key, every later copy 1, and each PONG
        # marks the end of a copy
        lines = []
        size = 0
        while size < (1 << 20) - 64:
            l = b"SEEN s/%07d\n" % len(lines)
            lines.append(l)
            size += len(l)
        nkeys = len(lines)
        chunk = b"".join(lines) + b"PING\n"
        ncopies = STUCK_TOTAL // len(chunk)
        total = ncopies * len(chunk)

        if unix:
            sk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            sk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sk.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        sk.connect(s.sock if unix else ("127.0.0.1", s.port))
        sk.settimeout(60 * SLOW)
        sent = [0]
        werr = []

        def writer():
            mv = memoryview(chunk)
            try:
                for _ in range(ncopies):
                    for i in range(0, len(chunk), 65536):
                        piece = mv[i:i + 65536]
                        sk.sendall(piece)
                        sent[0] += len(piece)
            except OSError as e:
                werr.append(e)

        w = threading.Thread(target=writer, daemon=True)
        w.start()

        # stuck: neither the bytes taken nor the keys answered move
        last = [None]

        def served():
            info = other.info()
            return int(info["keys_new"]) + int(info["keys_seen"])

        def stalled():
            now = (sent[0], served())
            if now == last[0]:
                return True
            last[0] = now
            time.sleep(0.3)
            return False

        t.ok(wait_until(stalled, timeout=30), "the writer never stalled")
        t.ok(not werr, "writer: %r" % werr)
        t.ok(sent[0] < total, "the daemon took all %d bytes of a client "
             "that reads nothing" % sent[0])
        t.ok(served() < ncopies * nkeys, "the daemon answered all the "
             "requests of a client that reads nothing")
        rss_after = s.rss_kib()
        t.ok(rss_after - rss_before < RSS_GROWTH_LIMIT_KIB,
             "RSS grew %d KiB (from %d to %d) holding a stuck client"
             % (rss_after - rss_before, rss_before, rss_after))

        # others are served meanwhile, promptly
        t0 = time.time()
        t.eq(other.cmd("PING"), "PONG", "another client's PING")
        dt = time.time() - t0
        print("# stuck %s client: %d of %d bytes taken, %d requests "
              "answered, RSS +%d KiB, another's PING in %.3fs"
              % ("unix" if unix else "tcp", sent[0], total, served(),
                 rss_after - rss_before, dt), flush=True)
        t.ok(dt < 1.0 * SLOW, "PING took %.2fs while a client was stuck" % dt)
        c2 = s.client()
        t.eq(c2.cmd("SEEN https://other.client/"), "0", "another's SEEN")
        t.ok(s.proc.poll() is None, "seend is still running")

        # now it drains: every reply, in order
        want_later = b"1\r\n" * nkeys + b"PONG\r\n"
        got = bytearray()
        first_len = None
        while True:
            if first_len is None:
                end = got.find(b"PONG\r\n")
                if end >= 0:
                    first_len = end + 6
            if first_len is not None and \
                    len(got) >= first_len + (ncopies - 1) * len(want_later):
                break
            data = sk.recv(1 << 20)
            if not data:
                break
            got += data
        w.join(30 * SLOW)
        t.ok(not werr, "writer: %r" % werr)
        t.eq(sent[0], total, "bytes sent in the end")
        t.ok(first_len is not None, "no PONG at the end of the first copy")
        first = bytes(got[:first_len]).split(b"\r\n")
        t.eq(len(first), nkeys + 2, "replies to the first copy")
        t.eq(first[-2:], [b"PONG", b""], "end of the first copy")
        t.ok(set(first[:-2]) <= {b"0", b"1"}, "first copy: %r"
             % set(first[:-2]))
        fp = first.count(b"1")
        t.ok(fp < nkeys * 0.005, "first copy: %d of %d new keys answered 1"
             % (fp, nkeys))
        for n in range(1, ncopies):
            base = first_len + (n - 1) * len(want_later)
            if got[base:base + len(want_later)] != want_later:
                t.ok(False, "copy %d: replies differ from %d x '1' and "
                     "PONG: %r..." % (n, nkeys, bytes(got[base:base + 60])))
        t.eq(len(got), first_len + (ncopies - 1) * len(want_later),
             "bytes of replies")
        sk.sendall(b"PING\n")
        t.eq(read_replies(sk, 1)[0], ["PONG"], "the drained client goes on")
        sk.close()


@test
def tcp_client_that_never_reads_is_throttled_and_later_gets_every_reply(t):
    stuck_client(t, unix=False)


@test
def unix_client_that_never_reads_is_throttled_and_later_gets_every_reply(t):
    stuck_client(t, unix=True)


# ---- Unix socket ----

@test
def unix_socket_serves_with_mode_0660_and_is_removed_on_sigterm(t):
    with Server(t, filters=SMALL) as s:
        st = os.stat(s.sock)
        t.ok(stat.S_ISSOCK(st.st_mode), "%s is not a socket" % s.sock)
        t.eq(oct(stat.S_IMODE(st.st_mode)), oct(0o660), "socket mode")
        c = s.client(unix=True)
        t.eq(c.cmd("PING"), "PONG", "PING over unix")
        t.eq(c.cmd("SEEN https://u/"), "0", "SEEN over unix")
        t.eq(c.cmd("SEEN https://u/"), "1", "SEEN again over unix")
        tcp = s.client()
        t.eq(tcp.cmd("CHECK https://u/"), "1", "same filter over TCP")
        c.send("FILTERS\n")
        t.eq(len(c.lines_until_end()), 1, "FILTERS over unix")
        t.eq(c.cmd("QUIT"), "OK", "QUIT over unix")
        t.ok(c.closed(), "closed after QUIT")
        rc = s.stop(signal.SIGTERM)
        t.eq(rc, 0, "exit status after SIGTERM")
        t.ok(not os.path.exists(s.sock), "socket file left after SIGTERM")


@test
def unix_socket_mode_is_configurable(t):
    with Server(t, server_extra="unix_socket_mode = 0600",
                filters=SMALL) as s:
        t.eq(oct(stat.S_IMODE(os.stat(s.sock).st_mode)), oct(0o600),
             "socket mode")
        t.eq(s.client(unix=True).cmd("PING"), "PONG")


# ---- max_clients ----

@test
def connection_beyond_max_clients_is_refused_and_the_others_go_on(t):
    with Server(t, server_extra="max_clients = 5", filters=SMALL) as s:
        cs = [s.client()]
        wait_connections(t, cs[0], 1)    # the start-up probe is gone
        for i in range(4):
            cs.append(s.client())
            t.eq(cs[-1].cmd("PING"), "PONG", "client %d" % (i + 2))
        sixth = s.client()
        t.eq(sixth.line(), "ERR max clients reached", "the 6th connection")
        t.ok(sixth.closed(), "the 6th connection is closed")
        unix = s.client(unix=True)
        t.eq(unix.line(), "ERR max clients reached", "a 6th over unix")
        t.ok(unix.closed(), "the 6th unix connection is closed")
        for i, c in enumerate(cs):
            t.eq(c.cmd("SEEN k%d" % i), "0", "client %d after refusal"
                 % (i + 1))
        t.ok(int(cs[0].info()["connections_refused"]) >= 2,
             "connections_refused")
        # a slot freed is a slot to take
        cs.pop().close()
        wait_connections(t, cs[0], 4)
        again = s.client()
        t.eq(again.cmd("PING"), "PONG", "a new client once one left")


# ---- half-close ----

@test
def half_closed_client_gets_every_reply_then_eof(t):
    with Server(t, filters=SMALL) as s:
        reqs, want = [], []
        for b in range(0, 500, 50):
            block = ["SEEN https://half.example/%d\n" % i
                     for i in range(b, b + 50)]
            reqs += block + block
            want += ["0"] * 50 + ["1"] * 50
        sk = socket.create_connection(("127.0.0.1", s.port))
        sk.settimeout(10 * SLOW)
        sk.sendall("".join(reqs).encode())
        sk.shutdown(socket.SHUT_WR)
        got, rest = read_replies(sk, 1000)
        t.eq(len(got), 1000, "replies before EOF")
        for i, (g, w) in enumerate(zip(got, want)):
            if w == "1":
                t.eq(g, "1", "reply %d (a repeat)" % i)
            else:
                t.ok(g in ("0", "1"), "reply %d: %r" % (i, g))
        t.ok(got.count("1") - 500 < 5, "false positives: %d"
             % (got.count("1") - 500))
        t.eq(rest, b"", "bytes after the last reply")
        t.eq(sk.recv(100), b"", "EOF after the last reply")
        sk.close()


@test
def half_closed_client_with_more_replies_than_the_output_limit_gets_all(t):
    # the replies to what came before EOF are far more than the output
    # buffer may hold: they must still all be sent, then EOF
    with Server(t, server_extra="output_buffer_limit = 4096",
                filters=BIG) as s:
        n = 100000
        data = b"".join(b"SEEN h/%d\nSEEN h/%d\n" % (i, i)
                        for i in range(n // 2))
        sk = socket.create_connection(("127.0.0.1", s.port))
        sk.settimeout(10 * SLOW)
        sent = threading.Thread(target=lambda: (sk.sendall(data),
                                                sk.shutdown(socket.SHUT_WR)),
                                daemon=True)
        sent.start()
        got, rest = read_replies(sk, n)
        sent.join(10 * SLOW)
        t.eq(len(got), n, "replies before EOF")
        t.eq(got[1::2].count("1"), n // 2, "repeats answered 1")
        t.ok(got[0::2].count("1") < n // 200, "false positives: %d"
             % got[0::2].count("1"))
        t.eq(rest, b"", "bytes after the last reply")
        t.eq(sk.recv(100), b"", "EOF after the last reply")
        sk.close()


if __name__ == "__main__":
    run()
