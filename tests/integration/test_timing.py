#!/usr/bin/env python3
"""Snapshot timing and reloads (issue 13, point 5): each filter's snapshot
is due snapshot_interval after its own last one, reloads never postpone
it nor stall the loop, SAVEs coalesce, SIGTERM is quick."""
import os
import signal
import socket
import subprocess
import threading
import time

from seendtest import *

TWO = """
[filter.a]
capacity = 100000
[filter.b]
capacity = 100000
"""


def add(c, filt, prefix, n=50):
    c.send("".join("SEEN %s https://%s/%d\n" % (filt, prefix, i)
                   for i in range(n)))
    for i in range(n):
        c.line()


def saves(c, filt):
    return int(c.info(filt)["snapshots_ok"])


@test
def sixty_reloads_a_minute_do_not_delay_snapshots(t):
    # the old timer restarted at every SIGHUP: with a reload every second
    # and an interval of 3 s no snapshot was ever written
    s = Server(t, "snapshot_interval = 3\njournal = off\n", filters=TWO)
    s.start()
    c = s.client()
    t0 = time.time()
    add(c, "a", "first")
    n0 = saves(c, "a")
    i = 0
    # reloads go on until the second snapshot or the deadline: a fixed 9 s
    # left three intervals of slack, which a loaded machine (LOAD) or
    # valgrind can eat; the old timer never wrote one however long
    deadline = t0 + 9 * (2 if WRAPPER else 1) * LOAD
    while time.time() < deadline and (saves(c, "a") - n0 < 2 or i < 3):
        s.send_signal(signal.SIGHUP)
        add(c, "a", "k%d" % i)
        i += 1
        time.sleep(1.0)
    n = saves(c, "a") - n0
    print("# %d reloads, %d snapshots of a changing filter in %.1f s"
          % (i, n, time.time() - t0))
    t.ok(n >= 2, "snapshots written while reloading every second: %d" % n)
    t.contains(s.read_log(), "reloaded")


@test
def each_filter_is_due_an_interval_after_its_own_snapshot(t):
    iv = 4
    s = Server(t, "snapshot_interval = %d\njournal = off\n" % iv,
               filters=TWO)
    s.start()
    c = s.client()
    add(c, "a", "x")
    add(c, "b", "x")
    time.sleep(2)
    t.eq(c.cmd("SAVE b"), "OK")
    tb = int(c.info("b")["last_snapshot_time"])
    add(c, "a", "y")
    add(c, "b", "y")
    # a is due iv after the start, b iv after its SAVE
    t.ok(wait_until(lambda: saves(c, "a") >= 1, timeout=iv + 3),
         "a's periodic snapshot")
    ta = int(c.info("a")["last_snapshot_time"])
    t.ok(wait_until(lambda: saves(c, "b") >= 2, timeout=iv + 3),
         "b's periodic snapshot")
    tb2 = int(c.info("b")["last_snapshot_time"])
    print("# a at +%d, b saved at +%d then at +%d" % (ta - tb + 2, 2,
                                                     tb2 - tb + 2))
    t.ok(tb2 - tb >= iv - 1, "b waited an interval after its own SAVE "
         "(%d s)" % (tb2 - tb))
    t.ok(tb2 > ta, "b's snapshot came after a's")


@test
def saves_coalesce_and_sigterm_is_quick(t):
    cap = "20000000" if not WRAPPER else "200000"
    s = Server(t, "snapshot_interval = 0\njournal = off\n",
               filters="[filter.default]\ncapacity = %s\ngrowth = off\n"
               % cap)
    s.start()
    c = s.client()
    add(c, "default", "k", 1000)
    clients = [s.client(timeout=120) for i in range(40)]
    for cl in clients:
        cl.send("SAVE\n")
    for cl in clients:
        t.eq(cl.line(), "OK", "each SAVE is answered")
    n = saves(c, "default")
    print("# 40 SAVEs, %d snapshots written" % n)
    t.ok(n <= 3, "40 SAVEs coalesce into a few writes: %d" % n)
    # a burst again, then SIGTERM at once: the stop waits for at most
    # the snapshot being written and one more, not for a queue of 40
    for cl in clients:
        cl.send("SAVE\n")
    time.sleep(0.05)
    t0 = time.time()
    rc = s.stop()
    took = time.time() - t0
    print("# stopped in %.2f s" % took)
    t.eq(rc, 0, "exit status")
    t.ok(took < 5 * SLOW, "SIGTERM honoured quickly: %.2f s" % took)


# The PING probe runs in a process of its own, so that the test's other
# threads (and Python's GIL) never delay it: it pings until its stdin
# closes, then prints the slowest round trip in seconds.
PROBE = r"""
import socket, sys, threading, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()),
                 daemon=True).start()
worst, n = 0.0, 0
while not stop.is_set():
    t0 = time.perf_counter()
    s.sendall(b"PING\n")
    buf = b""
    while not buf.endswith(b"\r\n"):
        buf += s.recv(64)
    worst = max(worst, time.perf_counter() - t0)
    n += 1
    time.sleep(0.001)
print(worst, n)
"""


def huge_reload(t, s, c, cap, name):
    """Adds a filter of cap keys by SIGHUP under the PING probe; returns
    (slowest PING, seconds the reload took)."""
    probe = subprocess.Popen(["/usr/bin/python3", "-c", PROBE,
                              str(s.port)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    s.write_config("snapshot_interval = 0\njournal = off\n",
                   DEFAULT_FILTERS + "[filter.%s]\ncapacity = %s\n"
                   "growth = off\n" % (name, cap))
    t0 = time.time()
    s.send_signal(signal.SIGHUP)

    def arrived():
        c.send("FILTERS\n")
        return any(l.startswith(name + " ") for l in c.lines_until_end())
    ok = wait_until(arrived, timeout=60, step=0.1)
    took = time.time() - t0
    time.sleep(0.3)
    out, _ = probe.communicate("", timeout=30)
    t.ok(ok, "the huge filter arrived (waited %.0f s); log:\n%s"
         % (took, "\n".join(s.read_log().splitlines()[-8:])))
    worst, n = out.split()
    t.ok(int(n) > 100, "pings sent: %s" % n)
    return float(worst), took


@test
def ping_stays_fast_while_a_reload_creates_a_huge_filter(t):
    # 1e9 keys at 0.001: about 1.8 GB mapped and populated on the reload's
    # thread; under valgrind a tenth of it
    cap = "1000000000" if not WRAPPER else "100000000"
    s = Server(t, "snapshot_interval = 0\njournal = off\n")
    s.start()
    c = s.client()
    worst, took = huge_reload(t, s, c, cap, "huge")
    print("# the reload took %.2f s; the slowest PING %.2f ms"
          % (took, worst * 1000))
    # A loop that stalls while the filter is made answers no PING for
    # about as long as the reload takes; one that does not answers within
    # milliseconds. On this shared machine a busy neighbour stretches both
    # alike (seen: a 27 s reload, PINGs up to 100 ms), so the bound is the
    # larger of 15 ms and a twentieth of the reload, never a stall's (under
    # valgrind, 300 ms against a reload of 0.7-1 s: PINGs of 200-240 ms
    # were seen there with no stall).
    def bound(took):
        return max(0.015 * SLOW, took / 20)
    if worst >= bound(took):
        # a stall comes back every time; a hiccup of the machine not
        s.write_config("snapshot_interval = 0\njournal = off\n")
        s.send_signal(signal.SIGHUP)
        time.sleep(1)
        worst, took = huge_reload(t, s, c, cap, "huge2")
        print("# again: the reload took %.2f s; the slowest PING %.2f ms"
              % (took, worst * 1000))
    t.ok(worst < bound(took), "PING within %.0f ms during a reload of "
         "%.2f s: %.2f ms" % (bound(took) * 1000, took, worst * 1000))
    t.eq(c.cmd("SEEN https://x/1"), "0")
    c.close()
    s.kill9()


@test
def a_retired_filter_whose_snapshot_fails_is_kept_and_reported(t):
    s = Server(t, "snapshot_interval = 1\njournal = off\n", filters=TWO,
               env={"SEEND_FAULT_WRITE_LIMIT": "1"})
    s.start()
    c = s.client()
    add(c, "b", "x")
    s.write_config("snapshot_interval = 1\njournal = off\n",
                   "[filter.a]\ncapacity = 100000\n")
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: c.info().get("filters_retired") == "1",
                    timeout=5), "INFO filters_retired 1")
    time.sleep(2.5)
    t.eq(c.info().get("filters_retired"), "1",
         "still kept while its snapshot fails")
    t.contains(s.read_log(), "filter b: snapshot failed")
    c.close()
    s.kill9()


if __name__ == "__main__":
    run()
