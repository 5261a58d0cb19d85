"""Golden check of the RESP parser against the real thing: each input is
sent to a real redis-server and to tests/unit/resp_cli (resp_parse as a
filter), and the reply bytes must be the same. Where we part from Redis on
purpose, the case says why, and both behaviours are asserted: ours as
designed, Redis's as observed (so that a Redis that changes is noticed).
"""
import os
import subprocess

from seendtest import *

RESP_CLI = os.environ.get("RESP_CLI", "resp_cli")
# Redis's smallest proto-max-bulk-len; resp_cli gets the same as max_bulk.
MAX_BULK = 1024 * 1024

PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"

# Inputs whose replies must be the same bytes from both. Each one ends the
# connection with a protocol error (or starts with requests Redis and
# resp_cli both answer: PING, ECHO), so Redis's reply ends at its close.
SAME = [
    ("non-numeric array length", b"*x\r\n"),
    ("array length with junk", b"*1x\r\n"),
    ("space before array length", b"* 1\r\n"),
    ("plus sign", b"*+1\r\n"),
    ("leading zero", b"*01\r\n"),
    ("minus zero", b"*-0\r\n"),
    ("no digits", b"*\r\n"),
    ("array length above INT_MAX", b"*3000000000\r\n"),
    ("array length past long long", b"*99999999999999999999\r\n"),
    ("non-numeric bulk length", b"*1\r\n$x\r\n"),
    ("null bulk as argument", b"*1\r\n$-1\r\n"),
    ("negative bulk length", b"*1\r\n$-10\r\n"),
    ("bulk length over the max", b"*1\r\n$%d\r\n" % (MAX_BULK + 1)),
    ("bulk length past long long", b"*1\r\n$9223372036854775808\r\n"),
    ("argument not a bulk string", b"*1\r\nfoo\r\n"),
    ("nested array", b"*1\r\n*1\r\n$4\r\nPING\r\n"),
    ("integer as argument", b"*1\r\n:1\r\n"),
    ("CR where '$' should be", b"*1\r\n\r\n"),
    ("LF where '$' should be", b"*1\r\n\nX\r\n"),
    ("Redis's own wrong payload header", b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"),
    ("pipelined PINGs then an error", PING * 3 + b"*x\r\n"),
    ("empty arrays answer nothing", b"*0\r\n*-1\r\n" + PING + b"*1\r\nfoo\r\n"),
    ("binary bulk string", b"*2\r\n$4\r\nECHO\r\n$7\r\na\x00b\r\nc\n\r\n*x\r\n"),
    ("bulk of exactly the max, then an error",
     b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % MAX_BULK + b"u" * MAX_BULK + b"\r\n*x\r\n"),
    ("no CR in a huge array length", b"*" + b"1" * 70000),
    ("no CR in a huge bulk length", b"*1\r\n$" + b"1" * 70000),
]

# Before AUTH (Redis with requirepass, resp_cli -u).
UNAUTH = [
    ("11 arguments before AUTH", b"*11\r\n"),
    ("a 16385-byte bulk before AUTH", b"*1\r\n$16385\r\n"),
    ("an invalid length before AUTH", b"*x\r\n"),
]

E = b"-ERR Protocol error: "

# Where we differ by design: (name, input, ours, Redis's, why). Redis's
# None means it answers nothing and keeps waiting.
DIFFER = [
    ("array length below -1", b"*-2\r\n", E + b"invalid multibulk length\r\n",
     None, "the contract: a negative length other than -1 is an error; "
     "Redis takes any negative count as an empty request"),
    ("array length ended by LF alone", b"*1\n", E + b"invalid multibulk length\r\n",
     None, "a length line ends at CR LF; Redis waits for a CR that a client "
     "typing LF lines never sends"),
    ("array length: CR then another byte", b"*1\rX" + PING[4:],
     E + b"invalid multibulk length\r\n", PONG,
     "Redis skips the byte after CR unread; we require LF"),
    ("bulk string not followed by CRLF", b"*1\r\n$4\r\nPINGXY",
     E + b"bulk string not followed by CRLF\r\n", PONG,
     "the contract: Redis skips two bytes unread, so a wrong length "
     "silently shifts every later request"),
    ("a 40-digit array length", b"*" + b"1" * 40 + b"\r\n",
     E + b"too big mbulk count string\r\n", E + b"invalid multibulk length\r\n",
     "we look RESP_LINE_MAX (32) bytes for the CR, Redis 64 KB: a longer "
     "length line is never valid either way"),
    ("no '$' and no CR after it", b"*1\r\nX",
     E + b"expected '$', got 'X'\r\n", None,
     "we refuse the byte at once; Redis waits for a CR first"),
    ("NUL in the array length", b"*1\x00\r\n", E + b"invalid multibulk length\r\n",
     None, "Redis looks for the CR with strchr, which stops at the NUL, and "
     "waits"),
]


def ours(data, *args):
    p = subprocess.run([RESP_CLI, "-m", str(MAX_BULK)] + list(args),
                       input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    return p.stdout


def check_same(t, r, cases, args=()):
    bad = []
    for name, data in cases:
        want = r.talk(data)
        got = ours(data, *args)
        if E not in want:
            bad.append("%s: redis-server gave no protocol error: %r" %
                       (name, want[:200]))
        elif got != want:
            bad.append("%s: redis-server %r, resp_cli %r" %
                       (name, want[:200], got[:200]))
    t.ok(not bad, "\n".join(bad))


@test
def protocol_errors_are_redis_7_texts_byte_for_byte(t):
    r = RedisServer(t, MAX_BULK)
    try:
        check_same(t, r, SAME)
    finally:
        r.stop()


@test
def unauthenticated_limits_are_redis_7_texts_byte_for_byte(t):
    r = RedisServer(t, MAX_BULK)
    try:
        t.eq(r.talk(b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$11\r\nrequirepass"
                    b"\r\n$6\r\nsecret\r\n", 1.0), b"+OK\r\n",
             "CONFIG SET requirepass")
        check_same(t, r, UNAUTH, ("-u",))
    finally:
        r.stop()


@test
def designed_differences_from_redis_are_as_documented(t):
    r = RedisServer(t, MAX_BULK)
    try:
        bad = []
        for name, data, want_ours, want_redis, why in DIFFER:
            got = ours(data)
            if got != want_ours:
                bad.append("%s (%s): resp_cli %r, want %r" %
                           (name, why, got, want_ours))
            got = r.talk(data, 0.5)
            if got != (want_redis or b""):
                bad.append("%s: redis-server now answers %r, not %r: "
                           "review the case" % (name, got, want_redis))
        t.ok(not bad, "\n".join(bad))
    finally:
        r.stop()


if __name__ == "__main__":
    run()
