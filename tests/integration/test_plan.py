"""
seen-cli plan: the daemon's own sizing, checked against what a running
seend really allocates for the same settings, and its usage errors.
"""
import re
import subprocess

from seendtest import *


def plan(*args):
    return subprocess.run([SEEN_CLI, "plan"] + list(args),
                          capture_output=True, text=True, timeout=30)


def rows(out):
    """keys multiple -> (slices, memory text, bits/key, hashes, fp)."""
    got = {}
    for line in out.splitlines():
        m = re.match(r"^\d+ \((\d+)x\)\s+(\S+)\s+(\S+(?: \S+)?)\s+(\S+)"
                     r"\s+(\S+)\s+(\S+)$", line)
        if m:
            got[int(m.group(1))] = m.groups()[1:]
    return got


def mib(text):
    v, unit = text.split()
    return float(v) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20,
                       "GiB": 1 << 30}[unit]


@test
def plan_at_capacity_matches_a_running_filters_bytes(t):
    for extra, args in (("", ()), ("growth = off", ("--growth", "off")),
                        ("growth = 4", ("--growth", "4"))):
        filters = ("[filter.default]\ncapacity = 200000\n"
                   "error_rate = 0.001\n%s\n" % extra)
        with Server(t, filters=filters) as s:
            info = s.client().info("default")
        r = plan("200k", "0.001", *args)
        t.eq(r.returncode, 0, "plan exits 0: " + r.stderr)
        got = rows(r.stdout)
        t.ok(1 in got, "a 1x row:\n" + r.stdout)
        planned = mib(got[1][1])
        t.ok(abs(planned - int(info["bytes"])) <= 0.001 * planned + 64,
             "%s: plan says %s, the daemon has %s bytes"
             % (extra or "growth 2", got[1][1], info["bytes"]))
        t.eq(got[1][3], info["hashes"], "same hash count")


@test
def plan_grows_with_growth_and_refuses_without(t):
    r = plan("1M", "0.01")
    got = rows(r.stdout)
    t.eq([got[m][0] for m in (1, 2, 10, 100)], ["1", "2", "4", "7"],
         "slices at 1x, 2x, 10x, 100x:\n" + r.stdout)
    for m in (1, 2, 10, 100):
        t.ok(float(got[m][4]) <= 0.01, "fp rate at %dx under 0.01" % m)
    off = plan("1M", "0.01", "--growth", "off")
    t.eq(rows(off.stdout)[10][4], "refused", "fixed: 10x refused")
    t.contains(off.stdout, "ERR full", "and says how")


@test
def plan_counts_every_live_period_of_a_window(t):
    r = plan("8M", "0.001", "--expire", "30d")
    got = rows(r.stdout)
    t.eq(got[1][0], "9", "nine periods alive at once")
    t.ok(float(got[1][4]) <= 0.001, "window's fp under error_rate")
    t.contains(r.stdout, "per window", "capacity is per window")


@test
def plan_usage_errors_exit_2(t):
    for args in ((), ("10M",), ("x", "0.01"), ("10M", "2"),
                 ("10M", "0.01", "--growth", "99"),
                 ("10M", "0.01", "--expire", "soon"),
                 ("10M", "0.01", "--bogus")):
        r = plan(*args)
        t.eq(r.returncode, 2, "plan %r exits 2" % (args,))
        t.contains(r.stderr, "usage: seen-cli plan", "usage shown")


if __name__ == "__main__":
    run()
