"""
seend under systemd: the sd_notify protocol on a real datagram socket
($NOTIFY_SOCKET, a path or "@abstract"), and journal-style log lines when
stderr is the stream named by $JOURNAL_STREAM.
"""
import re
import uuid

from seendtest import *


class Notify:
    """An AF_UNIX datagram socket standing in for systemd's notify socket."""

    def __init__(self, t, abstract=False):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "seend-test-%s" % uuid.uuid4().hex
            self.s.bind("\0" + name)
            self.env = "@" + name
        else:
            path = t.path("notify")
            self.s.bind(path)
            self.env = path
        self.got = []

    def next(self, timeout=10.0):
        """The next datagram as a dict of its VAR=value lines."""
        self.s.settimeout(timeout * SLOW)
        try:
            data = self.s.recv(4096).decode()
        except (socket.timeout, TimeoutError):
            raise Failed("no notification within %ss; so far %r"
                         % (timeout, self.got))
        self.got.append(data)
        return dict(l.split("=", 1) for l in data.split("\n") if "=" in l)

    def wait_for(self, var, value="1", timeout=10.0):
        """Datagrams up to and including the one with var=value."""
        seen = []
        while True:
            m = self.next(timeout)
            seen.append(m)
            if m.get(var) == value:
                return seen

    def close(self):
        self.s.close()


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 0.5):
            return True
    except OSError:
        return False


def start_notified(t, n, **kw):
    s = Server(t, env={"NOTIFY_SOCKET": n.env}, **kw)
    s.start(wait=False)
    msgs = n.wait_for("READY", timeout=15)
    ready = msgs[-1]
    # READY=1 is a promise that the listeners are open already
    t.ok(port_open(s.port), "the TCP port accepts as soon as READY=1 came")
    t.ok(os.path.exists(s.sock), "the unix socket exists at READY=1")
    t.eq(ready.get("MAINPID"), str(s.pid()), "MAINPID")
    t.ok(ready.get("STATUS"), "READY=1 carries a STATUS= line: %r" % ready)
    return s


@test
def ready_comes_once_listening_and_stopping_on_sigterm(t):
    n = Notify(t)
    s = start_notified(t, n)
    c = s.client()
    t.eq(c.cmd("SEEN https://a.example/"), "0")
    s.send_signal(signal.SIGTERM)
    stop = n.wait_for("STOPPING")[-1]
    t.ok(stop.get("STATUS"), "STOPPING=1 carries a STATUS= line")
    t.eq(s.stop(), 0, "exit status")
    n.close()


@test
def sighup_sends_reloading_with_monotonic_usec_then_ready(t):
    n = Notify(t)
    s = start_notified(t, n)
    before = time.clock_gettime(time.CLOCK_MONOTONIC)
    s.send_signal(signal.SIGHUP)
    msgs = n.wait_for("READY")
    after = time.clock_gettime(time.CLOCK_MONOTONIC)
    t.eq(msgs[0].get("RELOADING"), "1",
         "the first datagram after SIGHUP is RELOADING=1: %r" % msgs)
    usec = msgs[0].get("MONOTONIC_USEC")
    t.ok(usec and usec.isdigit(), "MONOTONIC_USEC= is a number: %r" % usec)
    t.ok(before - 1 <= int(usec) / 1e6 <= after + 1,
         "MONOTONIC_USEC %s is CLOCK_MONOTONIC now (%.3f..%.3f)"
         % (usec, before, after))
    t.ok(msgs[-1].get("STATUS"), "READY=1 after a reload has STATUS=")
    t.ok(all(m.get("READY") != "1" for m in msgs[:-1]),
         "no READY=1 before RELOADING=1: %r" % msgs)
    t.eq(s.client().cmd("PING"), "PONG")
    s.send_signal(signal.SIGTERM)
    n.wait_for("STOPPING")
    t.eq(s.stop(), 0, "exit status")


@test
def a_failed_reload_still_ends_with_ready_and_says_so_in_status(t):
    n = Notify(t)
    s = start_notified(t, n)
    with open(s.conf, "a") as f:
        f.write("\n[filter.broken]\ncapacity = none\n")
    s.send_signal(signal.SIGHUP)
    msgs = n.wait_for("READY")
    t.eq(msgs[0].get("RELOADING"), "1", "RELOADING=1 first")
    t.contains(msgs[-1].get("STATUS", "").lower(), "fail",
               "STATUS after a failed reload")
    t.eq(s.client().cmd("PING"), "PONG")
    s.send_signal(signal.SIGTERM)
    n.wait_for("STOPPING")
    t.eq(s.stop(), 0, "exit status")


@test
def several_reloads_each_send_reloading_then_ready(t):
    n = Notify(t)
    s = start_notified(t, n)
    for i in range(5):
        s.send_signal(signal.SIGHUP)
        msgs = n.wait_for("READY")
        t.eq(len(msgs), 2, "reload %d: RELOADING then READY: %r" % (i, msgs))
        t.eq(msgs[0].get("RELOADING"), "1", "reload %d" % i)
    s.stop()


@test
def the_abstract_namespace_works(t):
    n = Notify(t, abstract=True)
    s = start_notified(t, n)
    s.send_signal(signal.SIGHUP)
    msgs = n.wait_for("READY")
    t.eq(msgs[0].get("RELOADING"), "1", "RELOADING=1 over @abstract")
    s.send_signal(signal.SIGTERM)
    n.wait_for("STOPPING")
    t.eq(s.stop(), 0, "exit status")


@test
def an_unreachable_notify_socket_is_not_fatal(t):
    s = Server(t, env={"NOTIFY_SOCKET": t.path("nobody-listens")})
    s.start()
    t.eq(s.client().cmd("PING"), "PONG")
    s.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    t.eq(s.client().cmd("PING"), "PONG")
    t.eq(s.stop(), 0, "exit status")
    t.contains(s.read_log(), "nobody-listens", "the log names the socket")


JOURNAL_LINE = re.compile(r"^<[3-7]>")
TIMESTAMP_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def journal_env(s):
    """JOURNAL_STREAM naming the file that will be seend's stderr."""
    open(s.log, "ab").close()
    st = os.stat(s.log)
    return "%d:%d" % (st.st_dev, st.st_ino)


@test
def with_journal_stream_lines_carry_a_priority_not_a_timestamp(t):
    s = Server(t)
    s.env["JOURNAL_STREAM"] = journal_env(s)
    s.start()
    s.client().cmd("SEEN https://j.example/")
    t.eq(s.stop(), 0, "exit status")
    lines = [l for l in s.read_log().splitlines() if l]
    t.ok(lines, "something was logged")
    bad = [l for l in lines if not JOURNAL_LINE.match(l)]
    t.ok(not bad, "every line starts with <N>: %r" % bad[:5])
    t.ok(any(l.startswith("<6>") for l in lines),
         "info lines start with <6>: %r" % lines[:5])
    t.ok(not any(TIMESTAMP_LINE.match(l[3:]) for l in lines),
         "no timestamps (journald adds its own)")


@test
def with_a_stale_journal_stream_stderr_keeps_timestamps(t):
    # a shell started from a unit inherits JOURNAL_STREAM but redirected
    # stderr elsewhere: that stream is not the journal
    s = Server(t)
    st = os.stat(t.dir)
    s.env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
    s.start()
    t.eq(s.stop(), 0, "exit status")
    lines = [l for l in s.read_log().splitlines() if l]
    t.ok(lines and all(TIMESTAMP_LINE.match(l) for l in lines),
         "timestamped lines: %r" % lines[:3])


if __name__ == "__main__":
    run()
