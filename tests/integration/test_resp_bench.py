"""seen-bench --resp against a real redis-server: the RESP commands it
sends are ones Redis takes, and it counts ":1" as new and ":0" as seen."""
import re
import subprocess

from seendtest import *

RUN_TIMEOUT = 60 * SLOW


def bench(t, r, *args, status=0):
    p = subprocess.run([SEEN_BENCH, "-p", str(r.port), "-c", "2", "-P", "16",
                        "-n", "2000", "--seed", "7"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=RUN_TIMEOUT)
    t.eq(p.returncode, status, "seen-bench exit status (stderr %r)" %
         p.stderr)
    if status:
        t.contains(p.stderr, "error reply: ", "the first error is shown")
    m = re.search(r"replies: +(\d+) new \(:1\), (\d+) seen \(:0\), (\d+) ERR",
                  p.stdout)
    t.ok(m is not None, "a replies line in %r" % p.stdout)
    return tuple(int(x) for x in m.groups())


def redis_cmd(r, *words):
    req = b"*%d\r\n" % len(words) + b"".join(
        b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
    return r.talk(req, 1.0)


@test
def setnx_counts_new_then_seen_against_redis_server(t):
    r = RedisServer(t)
    t.eq(bench(t, r, "--resp"), (2000, 0, 0), "first pass: all new")
    t.eq(bench(t, r, "--resp"), (0, 2000, 0), "same seed again: all seen")
    t.eq(redis_cmd(r, b"DBSIZE"), b":2000\r\n", "one Redis key per URL")
    r.stop()


@test
def sadd_goes_to_the_filter_named_by_filter(t):
    r = RedisServer(t)
    t.eq(bench(t, r, "--resp-cmd", "sadd", "--filter", "urls"), (2000, 0, 0),
         "SADD: all new")
    t.eq(redis_cmd(r, b"SCARD", b"urls"), b":2000\r\n", "SCARD urls")
    r.stop()


@test
def bfadd_error_replies_are_counted_and_make_the_run_fail(t):
    # redis-server without RedisBloom answers BF.ADD with an error: each is
    # paired with its request, the run goes on and ends with status 1
    r = RedisServer(t)
    t.eq(bench(t, r, "--resp-cmd", "bfadd", status=1), (0, 0, 2000),
         "all ERR")
    r.stop()


@test
def resp_auth_is_sent_as_resp(t):
    r = RedisServer(t)
    t.eq(redis_cmd(r, b"CONFIG", b"SET", b"requirepass", b"pw"), b"+OK\r\n",
         "CONFIG SET requirepass")
    t.eq(bench(t, r, "--resp", "-a", "pw")[0], 2000, "with the password")
    p = subprocess.run([SEEN_BENCH, "-p", str(r.port), "--resp", "-a", "no",
                        "-n", "10"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=RUN_TIMEOUT)
    t.ok(p.returncode != 0, "a wrong password fails the run")
    t.contains(p.stderr, "WRONGPASS", "the server's refusal is shown")
    r.stop()


@test
def resp_options_that_make_no_sense_are_refused(t):
    for args, want in ((["--resp", "-r", "0.5"], "--resp takes no -r"),
                       (["--resp", "--filter", "f"], "--resp-cmd sadd"),
                       (["--resp", "--redis"], "--redis takes no"),
                       (["--resp-cmd", "get"], "expected setnx, sadd or bfadd")):
        p = subprocess.run([SEEN_BENCH, "-n", "1"] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=RUN_TIMEOUT)
        t.ok(p.returncode != 0, "%s: refused" % args)
        t.contains(p.stderr, want, "%s: says why" % args)


if __name__ == "__main__":
    run()
