"""seen-cli stat: live figures, one line per interval, against a daemon
that receives traffic."""
import subprocess
import threading
import time

from seendtest import *

TWO = DEFAULT_FILTERS + """
[filter.small]
capacity = 1000
error_rate = 0.01
prefixes = small:
"""


def stat(s, *args, timeout=60, pre=()):
    p = subprocess.run([SEEN_CLI, "-p", str(s.port)] + list(pre) +
                       ["stat"] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout * SLOW)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


class Traffic(threading.Thread):
    """SEENs at a steady pace from one client until stopped: half of the
    keys new, half repeated."""

    def __init__(self, s):
        threading.Thread.__init__(self, daemon=True)
        self.c = s.client()
        self.stopping = threading.Event()
        self.sent = 0

    def run(self):
        i = 0
        while not self.stopping.is_set():
            batch = []
            for _ in range(50):
                batch.append("SEEN https://t.example/%d\n" % (i // 2))
                i += 1
            self.c.send("".join(batch))
            for _ in batch:
                self.c.line()
            self.sent += len(batch)
            time.sleep(0.01)

    def stop(self):
        self.stopping.set()
        self.join(10)
        self.c.close()


def rows(out):
    """The data lines as dicts by header column."""
    lines = out.splitlines()
    head = lines[0].split()
    return head, [dict(zip(head, l.split())) for l in lines[1:]
                  if l.split() != head]


@test
def stat_prints_live_figures(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        c.cmd("SEEN small:a")
        c.cmd("SEEN small:b")
        tr = Traffic(s)
        tr.start()
        try:
            t.ok(wait_until(lambda: tr.sent > 2000, 10), "traffic flows")
            rc, out, err = stat(s, "-i", "0.5", "-n", "3")
        finally:
            tr.stop()
        t.eq(rc, 0, "exit status (%s)" % err)
        head, data = rows(out)
        t.eq(head, ["keys", "ops/s", "new/s", "new%", "clients", "memory",
                    "fill", "filter"], "header")
        t.eq(len(data), 3, "three lines: " + out)
        for r in data:
            t.ok(float(r["ops/s"]) > 0, "ops/s > 0 under traffic: " + out)
            t.ok(float(r["new/s"]) > 0, "new/s > 0: " + out)
            pct = float(r["new%"].rstrip("%"))
            t.ok(30 <= pct <= 70, "about half the keys new: " + out)
            t.ok(float(r["ops/s"]) >= float(r["new/s"]), "new <= ops")
            t.eq(r["clients"], "2", "two clients besides stat")
            t.ok(r["memory"][-1] in "KMG", "memory has a unit: " + out)
            # small holds 2 keys in 1000's worth of bits, default holds
            # more in 100000's worth: small is not the worst
            t.eq(r["filter"], "default", "the fullest filter")
        keys = [int(r["keys"]) for r in data]
        t.ok(keys == sorted(keys) and keys[-1] > keys[0], "keys grow: "
             + out)
        info = c.info("default")
        # fill only grows; stat prints it to 4 decimals (rounded)
        t.ok(float(data[-1]["fill"]) <= float(info["fill_ratio"]) + 5e-5,
             "fill no more than INFO's now")
        c.close()


@test
def stat_idle_server_shows_no_ops(t):
    with Server(t) as s:
        rc, out, err = stat(s, "-i", "0.2", "-n", "2")
        t.eq(rc, 0, err)
        head, data = rows(out)
        t.eq(len(data), 2, out)
        # the first interval may still hold the start-up's own traffic
        # (seen once under ASan on a loaded machine); the next one is
        # stat polling an idle server
        r = data[-1]
        t.eq(r["ops/s"], "0", "its own polling is not counted: " + out)
        t.eq(r["new%"], "-", "no SEEN, no ratio")
        for r in data:
            t.eq(r["clients"], "0", "stat does not count itself")


@test
def stat_header_every_20_lines(t):
    with Server(t) as s:
        rc, out, err = stat(s, "-i", "0.05", "-n", "21")
        t.eq(rc, 0, err)
        lines = out.splitlines()
        t.eq(len(lines), 23, "21 lines and 2 headers")
        t.eq(lines[21], lines[0], "the header again after 20 lines")


@test
def stat_bad_arguments(t):
    with Server(t) as s:
        for args in (["-i", "0"], ["-i", "x"], ["-n", "0"], ["-n", "-3"],
                     ["extra"], ["-z"]):
            rc, out, err = stat(s, *args)
            t.eq(rc, 2, "stat %s: usage error" % " ".join(args))
            t.ok(err != "", "stat %s: says why" % " ".join(args))
        port = s.port
    p = subprocess.run([SEEN_CLI, "-p", str(port), "stat", "-n", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30)
    t.eq(p.returncode, 1, "no server: exit 1")
    t.contains(p.stderr.decode(), "cannot connect")


@test
def stat_with_auth(t):
    with Server(t, "auth_token = sesame") as s:
        rc, out, err = stat(s, "-i", "0.1", "-n", "1", pre=["-a", "sesame"])
        t.eq(rc, 0, "with the token: " + err)
        t.eq(len(rows(out)[1]), 1, "one line")
        rc, out, err = stat(s, "-i", "0.1", "-n", "1")
        t.eq(rc, 1, "without the token")
        t.contains(err, "authentication required")


if __name__ == "__main__":
    run()
