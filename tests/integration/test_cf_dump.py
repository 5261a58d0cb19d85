"""
CF.SCANDUMP / CF.LOADCHUNK and seen-cli dump, restore and copy of cuckoo
filters (INTERFACE.md, "Filters that can forget a key": dump/restore cover
them; src/dump.h, layout 2; src/cmd_dump.c; src/cli_dump.c).

What is checked: a cuckoo filter grown to several sub-filters, with keys
forgotten and keys stored twice (CF.ADD), moved between two real daemons
by redis-py's loop and by seen-cli answers exactly as the original
(CF.EXISTS element by element, fresh keys included, CF.COUNT, CF.INFO),
and after a kill -9 of the copy; the type is kept (TYPE MBbloomCF,
FORGET works on the copy); BF.SCANDUMP of a cuckoo filter and CF.SCANDUMP
of a bloom one answer WRONGTYPE; a cuckoo dump fed to BF.LOADCHUNK (and a
bloom dump to CF.LOADCHUNK) is refused and leaves nothing; a flipped bit
in a chunk is refused and leaves nothing.

Answers for held keys must be 1 exactly; the copy must equal the original
key by key, so no false-positive rate is asserted here.
"""
import struct
import subprocess

from seendtest import *

redis = system_module("redis")

N = 5000 if WRAPPER else 60000


def rpy(s):
    return redis.Redis(port=s.port, socket_timeout=60 * SLOW)


def keys(tag, n):
    return ["https://%s.example.org/p/%d" % (tag, i) for i in range(n)]


def pipe_all(r, words_list):
    p = r.pipeline(transaction=False)
    for words in words_list:
        p.execute_command(*words)
    return p.execute(raise_on_error=False)


def dump(r, name, cmd="CF.SCANDUMP"):
    chunks, it = [], 0
    while True:
        it, data = r.execute_command(cmd, name, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def filled(t, r):
    """A cuckoo filter of 4+ sub-filters, half its first keys forgotten
    and some keys stored twice; returns (held keys, forgotten keys)."""
    t.eq(r.execute_command("CF.RESERVE", "cf", N // 8, "EXPANSION", 2),
         b"OK", "CF.RESERVE")
    ks = keys("held", N)
    got = pipe_all(r, [("CF.ADDNX", "cf", k) for k in ks])
    held = [k for k, a in zip(ks, got) if a == 1]
    gone = held[: len(held) // 4]
    t.ok(all(a == 1 for a in pipe_all(r, [("CF.DEL", "cf", k)
                                          for k in gone])), "forgets")
    held = held[len(held) // 4:]
    twice = held[:100]
    t.ok(all(a == 1 for a in pipe_all(r, [("CF.ADD", "cf", k)
                                          for k in twice])), "CF.ADD twice")
    info = dict(zip(*[iter(r.execute_command("CF.INFO", "cf"))] * 2))
    t.ok(info[b"Number of filters"] >= 4,
         "sub-filters: %r" % info[b"Number of filters"])
    return held, gone


def same(t, ra, a_name, rb, b_name, ks, what):
    ea = pipe_all(ra, [("CF.EXISTS", a_name, k) for k in ks])
    eb = pipe_all(rb, [("CF.EXISTS", b_name, k) for k in ks])
    t.ok(ea == eb, "%s: %d answers differ" % (
        what, sum(x != y for x, y in zip(ea, eb))))
    return eb


@test
def cf_scandump_loadchunk_copy_answers_as_the_original(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        held, gone = filled(t, ra)
        chunks = dump(ra, "cf")
        t.ok(len(chunks) >= 2, "chunks: %d" % len(chunks))
        for it, data in chunks:
            t.eq(rb.execute_command("CF.LOADCHUNK", "cf", it, data), b"OK",
                 "CF.LOADCHUNK %d" % it)
        t.eq(rb.type("cf"), b"MBbloomCF", "TYPE of the copy")
        got = same(t, ra, "cf", rb, "cf", held, "held keys")
        t.eq(got.count(1), len(held), "held keys answering 1 on the copy")
        same(t, ra, "cf", rb, "cf", gone, "forgotten keys")
        same(t, ra, "cf", rb, "cf", keys("fresh", N), "fresh keys")
        t.eq(rb.execute_command("CF.INFO", "cf"),
             ra.execute_command("CF.INFO", "cf"), "CF.INFO")
        t.eq(rb.execute_command("CF.COUNT", "cf", held[0]),
             ra.execute_command("CF.COUNT", "cf", held[0]), "CF.COUNT")
        # the copy is a cuckoo filter in every way: it forgets too
        t.eq(rb.execute_command("CF.DEL", "cf", held[-1]), 1, "CF.DEL")
        b.kill9()
        b.start()
        rb = rpy(b)
        got = pipe_all(rb, [("CF.EXISTS", "cf", k) for k in held[:-1]])
        t.eq(got.count(1), len(held) - 1, "held keys after kill -9")


@test
def seen_cli_dump_restore_and_copy_move_a_cuckoo_filter(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        held, gone = filled(t, ra)
        f = t.path("cf.dump")
        for argv in (["-p", str(a.port), "dump", "cf", f],
                     ["-p", str(b.port), "restore", "r", f],
                     ["copy", "127.0.0.1:%d/cf" % a.port,
                      "127.0.0.1:%d/c" % b.port]):
            p = subprocess.run([SEEN_CLI] + argv, capture_output=True,
                               text=True, timeout=120 * SLOW)
            t.eq(p.returncode, 0, "seen-cli %s: %s" % (argv[-3], p.stderr))
        for name in ("r", "c"):
            t.eq(rb.type(name), b"MBbloomCF", "TYPE " + name)
            got = same(t, ra, "cf", rb, name, held + gone, "keys of " + name)
            t.eq(got[:len(held)].count(1), len(held), "held keys of " + name)


@test
def dump_commands_keep_to_their_type(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ca, cb = Resp(a.port), Resp(b.port)
        ra = rpy(a)
        t.eq(ca.cmd("CF.RESERVE", "cf", "1000"), "OK")
        t.eq(ca.cmd("BF.RESERVE", "bf", "0.01", "1000"), "OK")
        t.eq(ca.cmd("CF.ADD", "cf", "x"), 1)
        t.eq(ca.cmd("BF.ADD", "bf", "x"), 1)
        wrong = "WRONGTYPE Operation against a key holding the wrong kind " \
            "of value"
        t.eq(ca.cmd("BF.SCANDUMP", "cf", "0"), Err(wrong), "BF on cuckoo")
        t.eq(ca.cmd("CF.SCANDUMP", "bf", "0"), Err(wrong), "CF on bloom")
        cf, bf = dump(ra, "cf"), dump(ra, "bf", "BF.SCANDUMP")
        r = cb.cmd("BF.LOADCHUNK", "x", str(cf[0][0]), cf[0][1])
        t.ok(isinstance(r, Err) and "CF.LOADCHUNK" in r, "BF.LOADCHUNK of "
             "a cuckoo dump: %r" % r)
        r = cb.cmd("CF.LOADCHUNK", "y", str(bf[0][0]), bf[0][1])
        t.ok(isinstance(r, Err) and "BF.LOADCHUNK" in r, "CF.LOADCHUNK of "
             "a bloom dump: %r" % r)
        t.eq(cb.cmd("EXISTS", "x", "y"), 0, "nothing left behind")


@test
def a_flipped_bit_in_a_cuckoo_dump_is_refused_and_leaves_nothing(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        held, _ = filled(t, ra)
        chunks = dump(ra, "cf")
        it, data = chunks[-1]
        bad = bytearray(data)
        bad[64 + len(bad[64:]) // 2] ^= 0x10
        for i, (n, d) in enumerate(chunks):
            d = bytes(bad) if i == len(chunks) - 1 else d
            try:
                r = rb.execute_command("CF.LOADCHUNK", "cf", n, d)
            except redis.ResponseError as e:
                r = Err(str(e))
        t.ok(isinstance(r, Err), "the damaged last chunk: %r" % r)
        t.eq(rb.exists("cf"), 0, "nothing left behind")


if __name__ == "__main__":
    run()
