"""The Python client against a real seend: every call, every failure."""
import signal
import socket
import threading
import time

from pyseend import Failed, Server, address, free_port, run, test

import seend

TWO_FILTERS = """
[filter.default]
capacity = 1000000
error_rate = 0.001

[filter.news]
capacity = 1000
error_rate = 0.01
hosts = news.example
"""


def urls(n, tag):
    return ["https://example.com/%s/%08d" % (tag, i) for i in range(n)]


@test
def seen_check_and_ping_over_tcp_and_unix(t):
    with Server(t, filters=TWO_FILTERS) as s:
        for unix in (False, True):
            with seend.Client(address(s, unix)) as c:
                tag = "unix" if unix else "tcp"
                t.eq(c.ping(), True, "ping")
                t.eq(c.check("https://a/" + tag), False, "check before")
                t.eq(c.seen("https://a/" + tag), False, "first seen")
                t.eq(c.seen("https://a/" + tag), True, "second seen")
                t.eq(c.check("https://a/" + tag), True, "check after")
                t.eq(c.seen(b"https://bytes/" + tag.encode()), False, "bytes key")


@test
def seen_many_answers_in_order_across_batches(t):
    with Server(t, filters=TWO_FILTERS) as s:
        c = seend.Client(address(s))
        keys = urls(2500, "m")
        # duplicates inside one batch and across batch boundaries
        keys2 = keys[:10] + ["https://example.com/new/1"] + keys[:10] + \
            ["https://example.com/new/1"]
        t.eq(c.seen_many(keys, batch=1000), [False] * 2500, "first pass")
        t.eq(c.seen_many(keys, batch=7), [True] * 2500, "second pass")
        t.eq(c.seen_many(keys2, batch=3), [True] * 10 + [False] + [True] * 11,
             "repeats")
        t.eq(c.check_many(urls(5, "m") + urls(2, "none")),
             [True] * 5 + [False] * 2, "check_many")
        t.eq(c.check_many(urls(3, "none")), [False] * 3, "check records nothing")
        t.eq(c.seen_many([]), [], "empty batch")
        t.eq(c.info("default")["count"], 2501, "count after batches")
        try:
            c.seen_many(keys, batch=0)
            raise Failed("batch=0 accepted")
        except ValueError:
            pass


@test
def named_filters_and_routing(t):
    with Server(t, filters=TWO_FILTERS) as s:
        c = seend.Client(address(s))
        t.eq(c.seen("x1", filter="news"), False, "named")
        t.eq(c.seen("x1", filter="news"), True, "named again")
        t.eq(c.check("x1"), False, "other filter")
        t.eq(c.seen_many(["https://news.example/a", "https://news.example/a"]),
             [False, True], "routed")
        t.eq(c.info("news")["count"], 2, "news count")
        t.eq(c.check_many(["x1", "y1"], filter="news"), [True, False], "check_many named")


@test
def info_and_filters_are_parsed(t):
    with Server(t, filters=TWO_FILTERS) as s:
        c = seend.Client(address(s))
        c.seen_many(urls(10, "i"))
        info = c.info()
        t.ok(isinstance(info["uptime_seconds"], int), "uptime is an int")
        t.eq(info["version"], "0.1.0", "version stays text")
        t.ok(info["cmd_seen"] >= 10, "cmd_seen counts")
        f = c.info("default")
        t.eq(f["capacity"], 1000000, "capacity")
        t.eq(f["count"], 10, "count")
        t.ok(isinstance(f["error_rate"], float), "error_rate is a float")
        t.ok(isinstance(f["fill_ratio"], float), "fill_ratio is a float")
        fl = c.filters()
        t.eq(sorted(fl), ["default", "news"], "filter names")
        t.eq(fl["news"]["capacity"], 1000, "news capacity")
        t.eq(fl["news"]["error_rate"], 0.01, "news error_rate")
        t.eq(fl["default"]["count"], 10, "default count")
        t.ok(fl["default"]["bytes"] > 0, "bytes")
        # the connection is still in step after the multi-line replies
        t.eq(c.seen(urls(1, "i")[0]), True, "in step")
        c.save()
        c.save("news")


@test
def server_errors_raise_with_their_text(t):
    with Server(t, filters=TWO_FILTERS) as s:
        c = seend.Client(address(s))
        for call in (lambda: c.info("nope"), lambda: c.seen("k", filter="nope"),
                     lambda: c.save("nope")):
            try:
                call()
                raise Failed("no error for a missing filter")
            except seend.Error as e:
                t.contains(str(e), "nope", "error text")
                t.ok(not str(e).startswith("ERR"), "reason without ERR")
        # one bad key in a batch: which one, and the others answered
        try:
            c.seen_many(["a1", "a2", "a3"], filter="nope")
            raise Failed("no error")
        except seend.Error as e:
            t.eq(e.index, 0, "index of the first failure")
            t.eq(e.replies, [None, None, None], "replies")
        t.eq(c.seen("after-errors"), False, "in step after errors")


@test
def keys_the_protocol_cannot_carry_are_refused_before_sending(t):
    with Server(t) as s:
        c = seend.Client(address(s))
        for bad in ("a b", "a\tb", "a\nSEEN b", "a\rb", "", b"x y", "a\x0bb"):
            for call in (lambda: c.seen(bad), lambda: c.seen_many(["ok1", bad]),
                         lambda: c.check_many([bad])):
                try:
                    call()
                    raise Failed("key %r accepted" % bad)
                except ValueError as e:
                    t.ok("key" in str(e), "message names the key: %s" % e)
        try:
            c.seen("k", filter="a b")
            raise Failed("filter with a space accepted")
        except ValueError:
            pass
        # nothing of the refused batches was sent
        t.eq(c.check("ok1"), False, "refused batch sent nothing")
        t.eq(c.info()["cmd_seen"], 0, "no SEEN reached the server")


@test
def auth_token_is_sent_on_every_connect(t):
    with Server(t, server_extra="auth_token = s3cret") as s:
        try:
            seend.Client(address(s)).seen("k")
            raise Failed("served without AUTH")
        except seend.Error as e:
            t.contains(str(e), "authentication required")
        try:
            seend.Client(address(s), token="wrong").ping()
            raise Failed("wrong token accepted")
        except seend.Error as e:
            t.contains(str(e), "AUTH refused")
        c = seend.Client(address(s), token="s3cret")
        t.eq(c.seen("k"), False, "with token")
        c.close()
        t.eq(c.seen("k"), True, "after reconnect, AUTH again")


@test
def bad_addresses_are_refused_clearly(t):
    for bad in ("nohostport", "host:", ":80", "h:99999", "[::1]80", "h:x"):
        try:
            seend.Client(bad)
            raise Failed("address %r accepted" % bad)
        except ValueError as e:
            t.contains(str(e), "seend address")
    port = free_port()
    try:
        seend.Client("127.0.0.1:%d" % port, timeout=1).ping()
        raise Failed("connected to nothing")
    except seend.ConnectionError as e:
        t.contains(str(e), "127.0.0.1:%d" % port, "message names the address")
        t.eq(e.sent, False, "nothing sent")
    try:
        seend.Client(t.path("no.sock")).ping()
        raise Failed("connected to no socket")
    except seend.ConnectionError as e:
        t.contains(str(e), "no.sock")


@test
def ipv6_address_form(t):
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        return  # no ::1 on this machine: nothing to check
    port = free_port()
    s = Server(t, server_extra="", port=port)
    s.write_config()
    with open(s.conf) as f:
        conf = f.read().replace("127.0.0.1:%d" % port, "[::1]:%d" % port)
    with open(s.conf, "w") as f:
        f.write(conf)
    s.ready = lambda: s.proc.poll() is None and _v6_up(port)
    with s:
        c = seend.Client("[::1]:%d" % port)
        t.eq(c.seen("v6"), False, "over ::1")
        t.eq(c.seen("v6"), True, "again")


def _v6_up(port):
    try:
        with socket.create_connection(("::1", port), 0.5):
            return True
    except OSError:
        return False


@test
def a_stalled_server_times_out_and_the_next_call_reconnects(t):
    with Server(t) as s:
        c = seend.Client(address(s), timeout=0.5)
        t.eq(c.seen("before"), False, "before")
        s.send_signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            try:
                c.seen("during")
                raise Failed("no timeout")
            except seend.TimeoutError as e:
                t.ok(isinstance(e, seend.ConnectionError), "a ConnectionError")
                t.ok(time.monotonic() - t0 < 5, "timed out promptly")
        finally:
            s.send_signal(signal.SIGCONT)
        # the stalled SEEN reached seend and is answered there, but this
        # connection is gone: the next call opens another
        t.eq(c.seen("after"), False, "reconnected")
        t.eq(c.check("during"), True, "the stalled SEEN was applied once")


def _killed_mid_batch(t, s, c, keys, batch):
    """SIGSTOPs seend, starts seen_many, SIGKILLs seend; returns the error."""
    result = {}

    def call():
        try:
            result["ok"] = c.seen_many(keys, batch=batch)
        except Exception as e:  # noqa: BLE001 - what it raised is the test
            result["err"] = e

    s.send_signal(signal.SIGSTOP)
    th = threading.Thread(target=call)
    th.start()
    time.sleep(0.3)
    s.kill9()
    th.join(10)
    t.ok(not th.is_alive(), "the call returned")
    t.ok("err" in result, "a lost connection raised: %r" % result.get("ok"))
    return result["err"]


@test
def a_server_killed_mid_batch_raises_and_nothing_is_resent(t):
    with Server(t) as s:
        c = seend.Client(address(s))
        t.eq(c.seen("first"), False, "first")
        keys = urls(200000, "k")
        e = _killed_mid_batch(t, s, c, keys, 10000)
        t.ok(isinstance(e, seend.ConnectionError), "ConnectionError: %r" % e)
        t.contains(str(e), "unanswered", "message")
        t.eq(e.replies, [], "no answer arrived")
        s.start()
        # the next call reconnects; nothing of the lost batch was re-sent
        # (the killed daemon saved nothing, so a re-send would show here)
        t.eq(c.check_many(keys[:1000]), [False] * 1000, "not re-sent")
        t.eq(c.info()["cmd_seen"], 0, "no SEEN reached the new daemon")
        t.eq(c.seen_many(keys[:3]), [False] * 3, "works after reconnect")


@test
def a_lost_connection_keeps_the_answers_that_arrived(t):
    # a fake server that answers 3 of 5 SEENs, then closes
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    port = ls.getsockname()[1]

    def serve():
        for _ in range(2):
            conn, _ = ls.accept()
            data = b""
            while data.count(b"\n") < 5:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"SEEN"):
                conn.sendall(b"0\r\n1\r\n0\r\n")
            else:
                conn.sendall(b"PONG\r\n")
            conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        c = seend.Client("127.0.0.1:%d" % port, timeout=5)
        try:
            c.seen_many(["a", "b", "c", "d", "e"])
            raise Failed("no error")
        except seend.ConnectionError as e:
            t.eq(e.replies, [False, True, False], "answers before the loss")
            t.contains(str(e), "2 of 5 requests unanswered")
    finally:
        th.join(5)
        ls.close()


@test
def a_restarted_seend_is_reconnected_to_transparently(t):
    with Server(t) as s:
        c = seend.Client(address(s), connect_retry=10)
        t.eq(c.seen_many(urls(100, "r")), [False] * 100, "before")
        t.eq(s.stop(), 0, "SIGTERM exit status")
        # the idle connection is closed now; seend comes back after a moment
        restart = threading.Timer(0.5, s.start)
        restart.start()
        try:
            # nothing was in flight: the closed connection is replaced and
            # the refused connects are retried until seend is back
            t.eq(c.seen_many(urls(100, "r")), [True] * 100, "after restart")
        finally:
            restart.join()


if __name__ == "__main__":
    run()
