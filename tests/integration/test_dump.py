"""
BF.SCANDUMP / BF.LOADCHUNK (INTERFACE.md, "Moving, copying and merging
filters"; src/dump.h, src/cmd_dump.c): a filter moved between two real
seend daemons with redis-py's scandump/loadchunk loop and with raw RESP.

What is checked: the copy answers exactly as the original (the bits are
copied, so BF.MEXISTS agrees element by element, fresh keys included);
every property survives (slices, seed, count, growth, expire window and
its slices' ages, normalize), and the copy survives a restart and kill -9
right after the last chunk's OK; every damaged, truncated, reordered,
missing or foreign chunk is refused with -ERR and leaves nothing behind;
an existing name is never overwritten; a load in progress is invisible
and dies with its connection; a dump is one consistent image while keys
keep arriving and does not stall the loop; bad iterators are refused; the
chunk argument is exempt from max_line and nothing else is.

Timing is asserted once, as a ratio that a loaded machine, which slows the
dump and the PINGs alike, does not change: while a filter of many chunks
is dumped, no PING waits a quarter of the dump's time (a loop stalled by
the dump would hold them for the whole of it, or for a chunk of the
filter's size).
"""
import random
import socket
import struct
import time

from seendtest import *

redis = system_module("redis")

# Smaller under valgrind (SEEND_WRAPPER): the properties are the same.
HELD = 20000 if WRAPPER else 200000
# Capacity giving a dump of 3 chunks (header + 2 bits chunks of at most
# 4 MiB): about 5.3 MB of bits at 0.001.
BIG = 3000000
# The "large" filter of the stall test: ~50 MB of bits (~10 MB under
# valgrind).
HUGE = 4000000 if WRAPPER else 20000000
BATCH = 5000
HDR = 64                       # a chunk's header (dump.h)


def rpy(s):
    # redis-py's own parser, asked for by name: redis-py 4.3's bf().scandump
    # refuses to run whenever hiredis is importable (python3-hiredis, as on
    # users' machines), a test of the module rather than of the client's
    # parser; every redis-py client of this file is made here
    system_module("redis.commands.bf.commands").HIREDIS_AVAILABLE = False
    return redis.Redis(connection_pool=redis.ConnectionPool(
        port=s.port, socket_timeout=60 * SLOW,
        parser_class=redis.connection.PythonParser))


# ---- keys, filling, comparing ----

def madd(r, name, ks):
    p = r.pipeline(transaction=False)
    for i in range(0, len(ks), BATCH):
        p.execute_command("BF.MADD", name, *ks[i:i + BATCH])
    for got in p.execute():
        if not isinstance(got, list):
            raise Failed("BF.MADD: %r" % (got,))


def mexists(r, name, ks):
    return bf_mexists(r, name, ks, BATCH)


def same_answers(t, ra, na, rb, nb, ks, what):
    a = mexists(ra, na, ks)
    b = mexists(rb, nb, ks)
    t.eq(len(b), len(ks), what + ": answers")
    if a != b:
        bad = [i for i in range(len(ks)) if a[i] != b[i]]
        raise Failed("%s: %d of %d answers differ, first %r: %r vs %r"
                     % (what, len(bad), len(ks), ks[bad[0]], a[bad[0]],
                        b[bad[0]]))
    return a


def all_held(t, r, name, ks, what):
    got = mexists(r, name, ks)
    n = sum(1 for x in got if x == 1)
    t.eq(n, len(ks), what + ": held keys answering 1")


# INFO <filter> fields that describe the filter itself (not its traffic,
# its snapshots or how its arrays are mapped).
SHAPE = ("capacity", "error_rate", "growth", "expire", "normalize", "count",
         "slices", "slice_capacity", "bits", "bytes", "bits_per_key",
         "hashes", "layout", "bits_set", "fill_ratio", "estimated_fp_rate",
         "fp_rate_at_capacity")


def shape(s, name):
    info = filter_info(s, name)
    return {k: info.get(k) for k in SHAPE}


def same_shape(t, sa, na, sb, nb, what):
    a, b = shape(sa, na), shape(sb, nb)
    for k in SHAPE:
        t.eq(b[k], a[k], "%s: INFO %s" % (what, k))
    return a


def filter_names(s):
    got = one_request(s, "FILTERS")
    if not isinstance(got, bytes):
        raise Failed("FILTERS: %r" % (got,))
    return [l.split(b" ", 1)[0].decode() for l in got.split(b"\r\n") if l]


# ---- dumping and loading ----

def dump_redispy(r, name):
    """The same with redis-py's bf().scandump loop."""
    out, it = [], 0
    while True:
        it, data = r.bf().scandump(name, it)
        if it == 0:
            return out
        out.append((it, data))


def load(c, name, chunks):
    """Sends the chunks in order; the list of replies."""
    return [c.cmd("BF.LOADCHUNK", name, it, data) for it, data in chunks]


def load_ok(t, c, name, chunks, what):
    got = load(c, name, chunks)
    t.eq(got, ["OK"] * len(chunks), what + ": BF.LOADCHUNK replies")


def is_missing(t, s, name, what):
    """name is nowhere to be seen: not in FILTERS, BF.EXISTS answers 0 as
    for a missing filter, BF.INFO and INFO say it is not there."""
    t.ok(name not in filter_names(s), "%s: %s not in FILTERS" % (what, name))
    c = Resp(s.port)
    try:
        t.eq(c.cmd("BF.EXISTS", name, url_keys("held", 1)[0]), 0,
             what + ": BF.EXISTS on " + name)
        got = c.cmd("BF.INFO", name)
        t.ok(isinstance(got, Err) and "not found" in got,
             "%s: BF.INFO %s: %r" % (what, name, got))
        t.eq(c.cmd("TYPE", name), "none", what + ": TYPE " + name)
    finally:
        c.close()
    lc = s.client()
    try:
        got = lc.cmd("INFO " + name)
        t.ok(got.startswith("ERR"), "%s: INFO %s: %r" % (what, name, got))
    finally:
        lc.close()


def flip(data, pos):
    b = bytearray(data)
    b[pos] ^= 0x5a
    return bytes(b)


def header_payload(data):
    """Chunk 0's payload without the dump's creation time (+56): what two
    dumps of one unchanged filter have in common."""
    p = bytearray(data[HDR:])
    p[56:64] = b"\0" * 8
    return bytes(p)


def big_pair(t, held=10000):
    """Daemon A holding f (BIG capacity, held keys) and an empty B; the
    dump of f in >= 3 chunks."""
    a = Server(t, name="a").start()
    b = Server(t, name="b").start()
    ra = rpy(a)
    ra.execute_command("BF.RESERVE", "f", "0.001", BIG)
    ks = url_keys("held", held)
    madd(ra, "f", ks)
    ca = Resp(a.port)
    chunks = scandump(ca, "f")
    ca.close()
    t.ok(len(chunks) >= 3, "the dump has >= 3 chunks: %d" % len(chunks))
    return a, b, ra, ks, chunks


# ---- 1: redis-py between two daemons ----

@test
def redispy_scandump_loadchunk_copies_200k_keys_bit_for_bit(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        t.eq(ra.execute_command("BF.RESERVE", "f", "0.001", BIG), b"OK")
        held = url_keys("held", HELD)
        madd(ra, "f", held)
        chunks = dump_redispy(ra, "f")
        t.ok(len(chunks) >= 3, "chunks: %d" % len(chunks))
        t.ok(all(len(d) <= 16 << 20 for _, d in chunks),
             "every chunk is at most 16 MiB")
        for name in ("f", "copy"):
            for it, data in chunks:
                t.eq(rb.bf().loadchunk(name, it, data), b"OK",
                     "loadchunk %s %d" % (name, it))
        t.ok({"f", "copy"} <= set(filter_names(b)), "both copies listed")
        fresh = url_keys("fresh", HELD)
        for name in ("f", "copy"):
            got = same_answers(t, ra, "f", rb, name, held,
                               "held keys on " + name)
            t.eq(got.count(1), len(held), "held keys answering 1")
            same_answers(t, ra, "f", rb, name, fresh,
                         "fresh keys on " + name)
            t.eq(one_request(b, "BF.INFO", name),
                 one_request(a, "BF.INFO", "f"), "BF.INFO " + name)
            bi, ai = rb.bf().info(name), ra.bf().info("f")
            t.eq(vars(bi), vars(ai), "redis-py's bf().info " + name)
            info = same_shape(t, a, "f", b, name, name)
            t.eq(info["count"], str(HELD), "count")


# ---- 2: every property ----

WINDOW = """
[filter.default]
capacity = 100000
error_rate = 0.001

[filter.win]
capacity = 1000
error_rate = 0.001
growth = 2
expire = 1h
normalize = standard
"""

URL_PAIRS = [
    ("HTTP://Example.COM:80/a/./b/../c#frag", "http://example.com/a/c"),
    ("https://EXAMPLE.org:443/%7euser/x", "https://example.org/~user/x"),
    ("http://example.net/p?q=1#top", "http://example.net/p?q=1"),
]


@test
def every_property_survives_growth_expire_window_normalize(t):
    with Server(t, name="a", filters=WINDOW) as a, \
            Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        ca, cb = Resp(a.port), Resp(b.port)
        # a growing filter of 3+ slices
        t.eq(ca.cmd("BF.RESERVE", "g", "0.01", "1000", "EXPANSION", "2"),
             "OK", "BF.RESERVE g")
        gkeys = url_keys("grow", 20000)
        madd(ra, "g", gkeys)
        # the window filter of the config file, normalising, 3+ slices
        wkeys = ["https://w%d.example.com/x/%d" % (i % 13, i)
                 for i in range(8000)]
        madd(ra, "win", wkeys + [canon for _, canon in URL_PAIRS])
        for name in ("g", "win"):
            info = shape(a, name)
            t.ok(int(info["slices"]) >= 3, "%s has %s slices"
                 % (name, info["slices"]))
        t.eq(shape(a, "win")["expire"], "3600", "win's expire")
        t.eq(shape(a, "win")["normalize"], "standard", "win's normalize")
        for src, dst in (("g", "g2"), ("win", "win2")):
            chunks = scandump(ca, src)
            load_ok(t, cb, dst, chunks, dst)
            same_shape(t, a, src, b, dst, dst)
            ks = gkeys if src == "g" else wkeys
            all_held(t, rb, dst, ks, dst)
            same_answers(t, ra, src, rb, dst, url_keys("fresh", 20000),
                         dst + " fresh keys")
            # dumped again from B, the image is the same: every slice's
            # geometry, capacity, rate, count, bits set and start of its
            # period (the window's ages), the seed, and every bit
            again = scandump(cb, dst)
            t.eq(len(again), len(chunks), dst + ": chunks of its dump")
            t.eq(header_payload(again[0][1]), header_payload(chunks[0][1]),
                 dst + ": header chunk payload")
            for i in range(1, len(chunks)):
                t.ok(again[i][1][HDR:] == chunks[i][1][HDR:],
                     "%s: bits chunk %d" % (dst, i))
        # normalisation is on for the copy: a key's spellings are one key
        for variant, canon in URL_PAIRS:
            t.eq(cb.cmd("BF.EXISTS", "win2", variant), 1,
                 "win2: " + variant)
            t.eq(cb.cmd("BF.EXISTS", "win2", canon), 1, "win2: " + canon)
        fresh = [("HTTP://New%d.Example.COM:80/./a#x" % i,
                  "http://new%d.example.com/a" % i) for i in range(2000)]
        va = mexists(rb, "win2", [v for v, _ in fresh])
        vc = mexists(rb, "win2", [c for _, c in fresh])
        t.eq(va, vc, "win2: fresh keys answer alike in both spellings")
        t.eq(va, mexists(ra, "win", [v for v, _ in fresh]),
             "win2 answers fresh variants as win does")
        ca.close()
        cb.close()


# ---- 3: durable ----

@test
def loaded_filter_survives_restart_and_kill9_after_last_ok(t):
    n = HELD // 4
    with Server(t, name="a") as a:
        b = Server(t, name="b").start()
        ra = rpy(a)
        ra.execute_command("BF.RESERVE", "f", "0.001", BIG)
        held = url_keys("held", n)
        madd(ra, "f", held)
        ca = Resp(a.port)
        chunks = scandump(ca, "f")
        cb = Resp(b.port)
        load_ok(t, cb, "f", chunks, "f")
        cb.close()
        want = shape(a, "f")
        t.eq(b.stop(), 0, "SIGTERM")
        b.start()
        all_held(t, rpy(b), "f", held, "after a restart")
        same_shape(t, a, "f", b, "f", "after a restart")
        same_answers(t, ra, "f", rpy(b), "f", url_keys("fresh", n),
                     "fresh keys after a restart")
        # the last chunk's OK comes once the snapshot is on disk
        cb = Resp(b.port)
        load_ok(t, cb, "k9", chunks, "k9")
        b.kill9()
        b.start()
        t.ok("k9" in filter_names(b), "k9 is there after kill -9")
        all_held(t, rpy(b), "k9", held, "k9 after kill -9")
        got = shape(b, "k9")
        for k in SHAPE:
            t.eq(got[k], want[k], "k9 after kill -9: INFO " + k)
        t.eq(b.stop(), 0, "SIGTERM")
        ca.close()


@test
def a_filter_deleted_then_loaded_or_merged_again_survives_kill9(t):
    # DEL journals an 'x' record of the filter's seed; a dump of the same
    # filter (the same seed) loaded into the name again, or a MERGE into a
    # fresh filter of the name from a source of that seed, must journal it
    # made again: else a replay that meets the 'x' drops the filter its
    # snapshot holds
    n = HELD // 20
    with Server(t, server_extra="journal = always", name="a") as a:
        r = rpy(a)
        r.execute_command("BF.RESERVE", "f", "0.001", BIG // 10)
        held = url_keys("held", n)
        madd(r, "f", held)
        c = Resp(a.port)
        chunks = scandump(c, "f")
        # keys f took after its dump: the dump loaded again lacks them,
        # and a replay must not put them back
        later = url_keys("later", 300)
        madd(r, "f", later)
        t.eq(c.cmd("DEL", "f"), 1, "DEL f")
        load_ok(t, c, "f", chunks, "f loaded again")
        live = r.execute_command("BF.MEXISTS", "f", *later)
        t.ok(sum(live) < len(later) // 2, "the reloaded f answers most "
             "later keys new (%d of %d seen)" % (sum(live), len(later)))
        t.eq(c.cmd("MERGE", "m", "f"), "OK", "MERGE m f (m fresh)")
        t.eq(c.cmd("DEL", "m"), 1, "DEL m")
        t.eq(c.cmd("MERGE", "m", "f"), "OK", "MERGE m f again")
        # emptied before it was deleted: the reset's record, older than
        # the file written after the load, must not empty the file's
        # filter at the replay
        load_ok(t, c, "r", chunks, "r")
        lc = a.client()
        t.eq(lc.cmd("RESET r"), "OK", "RESET r")
        lc.close()
        t.eq(c.cmd("DEL", "r"), 1, "DEL r")
        load_ok(t, c, "r", chunks, "r loaded again after RESET and DEL")
        t.eq(c.cmd("MERGE", "n", "f"), "OK", "MERGE n f")
        lc = a.client()
        t.eq(lc.cmd("RESET n"), "OK", "RESET n")
        lc.close()
        t.eq(c.cmd("DEL", "n"), 1, "DEL n")
        t.eq(c.cmd("MERGE", "n", "f"), "OK", "MERGE n f after RESET, DEL")
        # deleted, made again by BF.RESERVE (another seed), deleted
        load_ok(t, c, "g", chunks, "g")
        t.eq(c.cmd("DEL", "g"), 1, "DEL g")
        t.eq(c.cmd("BF.RESERVE", "g", "0.01", "1000"), "OK", "BF.RESERVE g")
        t.eq(c.cmd("DEL", "g"), 1, "DEL g again")
        load_ok(t, c, "g", chunks, "g loaded again")
        c.close()
        a.kill9()
        a.start()
        names = filter_names(a)
        t.eq(rpy(a).execute_command("BF.MEXISTS", "f", *later), live,
             "f after kill -9 answers the later keys as before it")
        for name in ("f", "m", "r", "n", "g"):
            t.ok(name in names, "%s is there after kill -9: %r"
                 % (name, names))
            all_held(t, rpy(a), name, held, name + " after kill -9")
        # and once more, the journal replayed again from the same records
        t.eq(a.stop(), 0, "SIGTERM")
        a.start()
        names = filter_names(a)
        t.ok(all(x in names for x in "fmrng"), "f, m, r, n and g after a "
             "restart: %r" % (names,))


# ---- 4: a damaged chunk ----

@test
def every_chunk_with_a_flipped_byte_is_refused_and_dropped(t):
    a, b, ra, held, chunks = big_pair(t)
    c = Resp(b.port)
    rb = rpy(b)
    case = 0
    for i in range(len(chunks)):
        size = len(chunks[i][1])
        positions = [0, 8, 12, 16, 24, 28, 32, 40, 48, 56, 63,
                     HDR, HDR + (size - HDR) // 2, size - 1]
        if WRAPPER:
            positions = [20, HDR + (size - HDR) // 2]
        for pos in positions:
            case += 1
            name = "bad%d" % case
            what = "chunk %d byte %d" % (i, pos)
            got = load(c, name, chunks[:i])
            t.eq(got, ["OK"] * i, what + ": the chunks before")
            got = c.cmd("BF.LOADCHUNK", name, chunks[i][0],
                        flip(chunks[i][1], pos))
            # RedisBloom's text; the reason is in the log
            t.eq(got, Err("ERR received bad data"), what)
            is_missing(t, b, name, what)
            if i >= 1:
                # the partial load is gone, not waiting for chunk i
                got = c.cmd("BF.LOADCHUNK", name, chunks[i][0],
                            chunks[i][1])
                t.ok(isinstance(got, Err), "%s: chunk %d after the "
                     "refusal: %r" % (what, i, got))
                is_missing(t, b, name, what + ", then chunk again")
            # and the whole dump loads under that name on this connection
            if pos in (16, HDR) or WRAPPER:
                load_ok(t, c, name, chunks, what + ": a correct load")
                all_held(t, rb, name, held, what + ": the correct load")
                t.eq(c.cmd("DEL", name), 1, "DEL " + name)
    t.eq(a.stop(), 0, "a: SIGTERM")
    t.eq(b.stop(), 0, "b: SIGTERM")


# ---- 5: truncated, reordered, missing, foreign ----

def redisbloom_like_header():
    """What RedisBloom's first SCANDUMP chunk looks like: its dumpedChainHeader
    (size, nfilters, options, growth) and one link's bloom header."""
    return (struct.pack("<QIiI", 10000, 1, 0, 2) +
            struct.pack("<QQdd", 10000, 143775, 0.01, 14.4) +
            struct.pack("<IIQ", 7, 17, 17972) + b"\0" * 32)


@test
def truncated_reordered_missing_and_foreign_chunks_are_refused(t):
    a, b, ra, held, chunks = big_pair(t)
    ca = Resp(a.port)
    other = scandump(ca, "f")       # the same filter, another dump
    t.eq(len(other), len(chunks), "the second dump's chunks")
    t.ok(other[0][1][16:24] != chunks[0][1][16:24], "two dump ids")
    rnd = random.Random(7)
    c0, c1, c2 = chunks[0], chunks[1], chunks[2]
    cases = [
        ("truncated header chunk", [(c0[0], c0[1][:-1])]),
        ("header chunk of 63 bytes", [(c0[0], c0[1][:63])]),
        ("truncated bits chunk", [c0, (c1[0], c1[1][:len(c1[1]) // 2])]),
        ("bits chunk less its last byte", [c0, (c1[0], c1[1][:-1])]),
        ("bits chunk with a byte more", [c0, (c1[0], c1[1] + b"\0")]),
        ("bits chunk's header only", [c0, (c1[0], c1[1][:HDR])]),
        # refused at chunk 2, and chunk 1 after it too: the load was
        # dropped, a bits chunk does not start one nor resume it
        ("chunks 2 and 1 swapped", [c0, c2, c1], 1),
        ("chunk 1 missing", [c0, c2]),
        ("chunk 1 twice", [c0, c1, c1]),
        ("header chunk twice", [c0, c0]),
        ("a bits chunk first", [c1]),
        ("chunk 1 of another dump", [c0, other[1]]),
        ("chunk 2 of another dump", [c0, c1, other[2]]),
        ("header of another dump, then ours", [other[0], c1]),
        ("empty data", [(1, b"")]),
        ("random bytes", [(1, bytes(rnd.getrandbits(8)
                                    for _ in range(4096)))]),
        ("random bytes after our magic",
         [(1, b"SEENDDMP" + bytes(rnd.getrandbits(8) for _ in range(4096)))]),
        ("a RedisBloom-looking header", [(1, redisbloom_like_header())]),
        ("empty data after the header", [c0, (c1[0], b"")]),
        ("random bytes after the header",
         [c0, (c1[0], bytes(rnd.getrandbits(8) for _ in range(1000)))]),
    ]
    c = Resp(b.port)
    for n, case in enumerate(cases):
        # (what, chunks[, the first refused: else the last])
        what, seq = case[:2]
        first = case[2] if len(case) > 2 else len(seq) - 1
        name = "x%d" % n
        got = load(c, name, seq)
        t.eq(got[:first], ["OK"] * first, what + ": the chunks before")
        for i in range(first, len(seq)):
            t.ok(isinstance(got[i], Err) and got[i].startswith("ERR "),
                 "%s: chunk %d of %d refused: %r" % (what, i + 1, len(seq),
                                                     got[i]))
        is_missing(t, b, name, what)
    # nothing left behind: every name loads whole on the same connection
    rb = rpy(b)
    for n in (0, 2, 6, 11, len(cases) - 1):
        name = "x%d" % n
        load_ok(t, c, name, chunks, "%s after %s" % (name, cases[n][0]))
        all_held(t, rb, name, held, name)
        t.eq(c.cmd("DEL", name), 1, "DEL " + name)
    # a dump mixed the other way round loads neither
    got = load(c, "mix", [other[0], other[1], c2])
    t.eq(got[2], Err("ERR received bad data"),
         "chunk 2 of the first dump after the second's")
    t.ok(wait_until(lambda: "load of mix dropped: bad dump chunk: from "
                    "another dump" in b.read_log()), "the log says why")
    is_missing(t, b, "mix", "mix")
    load_ok(t, c, "mix", other, "the second dump whole")
    all_held(t, rb, "mix", held, "mix")
    t.eq(a.stop(), 0, "a: SIGTERM")
    t.eq(b.stop(), 0, "b: SIGTERM")


# ---- 6: an existing name ----

@test
def load_into_an_existing_name_is_item_exists_and_changes_nothing(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra, rb = rpy(a), rpy(b)
        ra.execute_command("BF.RESERVE", "f", "0.001", "100000")
        madd(ra, "f", url_keys("held", 5000))
        ca = Resp(a.port)
        chunks = scandump(ca, "f")
        cb = Resp(b.port)
        t.eq(cb.cmd("BF.RESERVE", "rt", "0.01", "1000", "EXPANSION", "2"),
             "OK", "BF.RESERVE rt")
        theirs = url_keys("theirs", 3000)
        madd(rb, "default", theirs)
        madd(rb, "rt", theirs)
        for name in ("default", "rt"):
            before = shape(b, name)
            got = cb.cmd("BF.LOADCHUNK", name, chunks[0][0], chunks[0][1])
            t.eq(got, Err("ERR item exists"), "BF.LOADCHUNK " + name)
            # and the bits chunks that follow find no load to go on with
            for it, data in chunks[1:]:
                got = cb.cmd("BF.LOADCHUNK", name, it, data)
                t.ok(isinstance(got, Err), "%s: chunk %d: %r"
                     % (name, it, got))
            t.eq(shape(b, name), before, name + " unchanged")
            all_held(t, rb, name, theirs, name)
            t.eq(mexists(rb, name, url_keys("held", 5000)).count(1) < 5000,
                 True, name + " did not take the dump's keys")
        # the same through redis-py
        try:
            rb.bf().loadchunk("rt", chunks[0][0], chunks[0][1])
            raise Failed("redis-py loadchunk into rt did not raise")
        except redis.ResponseError as e:
            t.contains(str(e), "item exists", "redis-py's error")
        ca.close()
        cb.close()


# ---- 7: a load in progress ----

@test
def load_in_progress_is_invisible_and_dropped_when_its_connection_closes(t):
    a, b, ra, held, chunks = big_pair(t)
    c = Resp(b.port)
    t.eq(load(c, "g", chunks[:1]), ["OK"], "chunk 0")
    is_missing(t, b, "g", "after chunk 0")
    t.eq(load(c, "g", chunks[1:2]), ["OK"], "chunk 1")
    is_missing(t, b, "g", "after chunk 1")
    # its own connection does not see it either
    t.eq(c.cmd("BF.EXISTS", "g", held[0]), 0, "BF.EXISTS on the loading "
         "connection")
    got = c.cmd("BF.INFO", "g")
    t.ok(isinstance(got, Err) and "not found" in got, "BF.INFO: %r" % got)
    got = c.cmd("BF.SCANDUMP", "g", 0)
    t.eq(got, Err("ERR not found"), "BF.SCANDUMP of the partial load")
    c.close()
    t.ok(wait_until(lambda: "load of g dropped: the connection closed"
                    in b.read_log(), timeout=10),
         "the log says the load was dropped")
    is_missing(t, b, "g", "after the close")
    c2 = Resp(b.port)
    load_ok(t, c2, "g", chunks, "a new connection, from scratch")
    all_held(t, rpy(b), "g", held, "g")
    # half a load and a name taken in the meantime: the last chunk is
    # refused and the filter made meanwhile stays as it was
    t.eq(load(c2, "h", chunks[:-1]), ["OK"] * (len(chunks) - 1), "h")
    c3 = Resp(b.port)
    t.eq(c3.cmd("BF.RESERVE", "h", "0.01", "1000"), "OK", "BF.RESERVE h")
    t.eq(c3.cmd("BF.ADD", "h", "mine"), 1, "BF.ADD h")
    before = shape(b, "h")
    got = c2.cmd("BF.LOADCHUNK", "h", chunks[-1][0], chunks[-1][1])
    t.ok(isinstance(got, Err) and "item exists" in got,
         "the last chunk for a name taken meanwhile: %r" % got)
    t.eq(shape(b, "h"), before, "h unchanged")
    t.eq(c3.cmd("BF.EXISTS", "h", "mine"), 1, "h's own key")
    c2.close()
    c3.close()
    t.eq(a.stop(), 0, "a: SIGTERM")
    t.eq(b.stop(), 0, "b: SIGTERM")


# ---- 8: consistent while keys arrive ----

@test
def dump_is_consistent_while_keys_keep_arriving(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ra = rpy(a)
        # a growing filter, so that the keys added during the dump also
        # add slices (of 10k, 20k, 40k, 80k keys: 60k keys take 3 slices,
        # 110k 4; under valgrind 20k take 2, 40k 3)
        ra.execute_command("BF.RESERVE", "f", "0.001", "10000",
                           "EXPANSION", "2")
        before = url_keys("before", 20000 if WRAPPER else 60000)
        madd(ra, "f", before)
        count = shape(a, "f")["count"]
        slices = shape(a, "f")["slices"]
        ca = Resp(a.port)
        first = ca.cmd("BF.SCANDUMP", "f", 0)
        t.ok(isinstance(first, list) and first[0] != 0, "chunk 0: %r"
             % (first,))
        during = url_keys("during", 20000 if WRAPPER else 50000)
        madd(ra, "f", during)
        t.ok(int(shape(a, "f")["slices"]) > int(slices),
             "the keys added during the dump added slices")
        chunks = [tuple(first)]
        it = first[0]
        while True:
            it, data = ca.cmd("BF.SCANDUMP", "f", it)
            if it == 0:
                break
            chunks.append((it, data))
        cb = Resp(b.port)
        load_ok(t, cb, "f", chunks, "the dump")
        rb = rpy(b)
        all_held(t, rb, "f", before, "keys added before the dump")
        got = shape(b, "f")
        t.eq(got["count"], count, "count: the one at the dump's start")
        t.eq(got["slices"], slices, "slices: those at the dump's start")
        ca.close()
        cb.close()


# ---- 9: the loop goes on ----

@test
def dump_of_a_large_filter_does_not_stall_the_loop(t):
    with Server(t, name="a") as a:
        ca = Resp(a.port, timeout=60)
        t.eq(ca.cmd("BF.RESERVE", "big", "0.001", HUGE), "OK", "BF.RESERVE")
        madd(rpy(a), "big", url_keys("held", 10000))
        # a PING loop of its own: this Python is busy with 4 MiB chunks
        pinger = Pinger(a.port)
        pongs = pinger.pongs
        try:
            pinger.answered(t, "the dump")
            start = time.monotonic()
            it, nchunks, total = 0, 0, 0
            while True:
                # the next chunk once the pinger has had an answer since
                # the last one (bounded: a stuck pinger fails below)
                seen = len(pongs)
                wait_until(lambda: len(pongs) > seen or
                           pinger.proc.poll() is not None, timeout=5)
                got = ca.cmd("BF.SCANDUMP", "big", it)
                t.ok(isinstance(got, list), "BF.SCANDUMP: %r" % (got,))
                it, data = got
                if it == 0:
                    break
                nchunks += 1
                total += len(data)
            end = time.monotonic()
            t.eq(pinger.proc.poll(), None, "the pinger still runs")
        finally:
            pinger.stop()
        during = pinger.between(start, end)
        before = pinger.latencies_before(start)
        took = end - start
        # the longest time in the dump with no PONG: from its start to the
        # first, between two, from the last to its end
        times = [start] + [e for s, e in pongs if start < e < end] + [end]
        gap = max(b - a for a, b in zip(times, times[1:]))
        t.ok(nchunks >= (3 if WRAPPER else 10),
             "a dump of many chunks: %d" % nchunks)
        t.ok(len(during) > 0, "PINGs answered during the dump")
        diag("dump of %d bytes in %d chunks, %.3f s; %d PINGs answered "
             "meanwhile, max latency %.1f ms (%.1f ms before the dump), "
             "longest time without a PONG %.1f ms" % (
                 total, nchunks, took, len(during),
                 1000 * max(e - s for s, e in during), 1000 * max(before),
                 1000 * gap))
        # The test asks for a chunk only once a PING was answered since the
        # last, so some PONGs come during any dump; a stalled loop shows as
        # a time with none: a dump done in one turn, or in chunks of the
        # filter's size, holds the PINGs for most of it. A chunk is at most
        # a tenth of this dump (a third under valgrind): PONGs keep coming
        # with no gap of a quarter (a half) of the dump's time, a ratio
        # that a loaded machine, slowing both, leaves as it is.
        share = 0.5 if WRAPPER else 0.25
        t.ok(gap < share * took, "no PONG for %.3f s of a dump of %.3f s "
             "(at most %.0f %% of it)" % (gap, took, 100 * share))
        ca.close()


# ---- 10: iterators ----

@test
def stale_and_bad_iterators_are_refused(t):
    with Server(t, name="a") as a:
        c = Resp(a.port)
        t.eq(c.cmd("BF.RESERVE", "f", "0.001", "100000"), "OK", "f")
        t.eq(c.cmd("BF.RESERVE", "g", "0.001", "100000"), "OK", "g")
        t.eq(c.cmd("BF.ADD", "f", "k"), 1, "BF.ADD f")

        def refused(got, what, text=None):
            t.ok(isinstance(got, Err) and got.startswith("ERR"),
                 "%s: %r" % (what, got))
            if text:
                t.contains(got, text, what)

        for it in (1, 12345, 1 << 40, (1 << 40) + 1, (17 << 40) + 1,
                   (1 << 62), 9223372036854775807):
            refused(c.cmd("BF.SCANDUMP", "f", it), "never issued %d" % it)
        # RedisBloom's: a negative iterator is the end, a word is not
        # a number
        for it in (-1, -9223372036854775808):
            t.eq(c.cmd("BF.SCANDUMP", "f", it), [0, b""],
                 "SCANDUMP iter %r" % it)
        for it in ("x", "1.5", "", "1e3"):
            t.eq(c.cmd("BF.SCANDUMP", "f", it),
                 Err("Second argument must be numeric"),
                 "SCANDUMP iter %r" % it)
        refused(c.cmd("BF.SCANDUMP", "nope", 0), "missing filter",
                "ERR not found")
        refused(c.cmd("BF.SCANDUMP", "nope", 1), "missing filter, iter 1",
                "ERR not found")
        chunks = scandump(c, "f")
        # every iterator of a finished dump is stale
        for it, _ in chunks:
            refused(c.cmd("BF.SCANDUMP", "f", it), "finished dump's %d" % it)
        # an iterator of f's dump is not g's
        first = c.cmd("BF.SCANDUMP", "f", 0)
        refused(c.cmd("BF.SCANDUMP", "g", first[0]), "f's iterator on g")
        # an iterator far ahead of the dump
        refused(c.cmd("BF.SCANDUMP", "f", first[0] + 1), "skipping ahead")
        # once a slot's dump is over and another started there, the first
        # one's iterators stay stale
        rest = c.cmd("BF.SCANDUMP", "f", first[0])
        t.ok(isinstance(rest, list), "f's dump goes on: %r" % (rest,))
        while rest[0] != 0:
            rest = c.cmd("BF.SCANDUMP", "f", rest[0])
        second = c.cmd("BF.SCANDUMP", "f", 0)
        refused(c.cmd("BF.SCANDUMP", "f", first[0]), "an earlier dump's")
        t.ok(isinstance(second, list), "second dump: %r" % (second,))
        # LOADCHUNK's iterator
        for it in (0, -1, "x", "", "1.5"):
            refused(c.cmd("BF.LOADCHUNK", "new", it, chunks[0][1]),
                    "LOADCHUNK iter %r" % it)
        is_missing(t, a, "new", "after bad LOADCHUNK iterators")
        # arity
        refused(c.cmd("BF.SCANDUMP", "f"), "SCANDUMP arity")
        refused(c.cmd("BF.LOADCHUNK", "new", 1), "LOADCHUNK arity")
        t.eq(c.cmd("PING"), "PONG", "still talking")
        c.close()


# ---- 11: max_line ----

@test
def loadchunk_data_is_exempt_from_max_line_and_nothing_else(t):
    a = Server(t, name="a").start()
    b = Server(t, name="b", server_extra="max_line = 1024").start()
    ra = rpy(a)
    ra.execute_command("BF.RESERVE", "f", "0.001", BIG)
    held = url_keys("held", 10000)
    madd(ra, "f", held)
    ca = Resp(a.port)
    chunks = scandump(ca, "f")
    t.ok(max(len(d) for _, d in chunks) > 1 << 20, "chunks of MBs")
    c = Resp(b.port)
    load_ok(t, c, "f", chunks, "chunks over max_line")
    all_held(t, rpy(b), "f", held, "loaded under max_line = 1024")
    # redis-py, too
    rb = rpy(b)
    for it, data in chunks:
        t.eq(rb.bf().loadchunk("g", it, data), b"OK", "redis-py %d" % it)
    all_held(t, rb, "g", held, "g")
    # the exemption is for the chunk alone: a key, a name, an iterator
    # over max_line, a 1 MB argument to BF.ADD are refused as before
    t.ok(isinstance(c.cmd("BF.ADD", "f", "k" * 2000), Err),
         "a 2000-byte key to BF.ADD")
    t.ok(c.closed(), "and the connection closes, as for any bulk string "
         "past max_line")
    c.close()
    big = b"$%d\r\n" % (1 << 20)
    heads = [
        ("BF.ADD, a 1 MB key",
         b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n" + big),
        ("BF.LOADCHUNK, a 2000-byte name",
         b"*4\r\n$12\r\nBF.LOADCHUNK\r\n$2000\r\n"),
        ("BF.LOADCHUNK, a 1 MB iterator",
         b"*4\r\n$12\r\nBF.LOADCHUNK\r\n$1\r\nn\r\n" + big),
        ("BF.LOADCHUNK of 5 arguments, a 1 MB third",
         b"*5\r\n$12\r\nBF.LOADCHUNK\r\n$1\r\nn\r\n$1\r\n1\r\n" + big),
        ("BF.LOADCHUNK, a chunk over 16 MiB",
         b"*4\r\n$12\r\nBF.LOADCHUNK\r\n$1\r\nn\r\n$1\r\n1\r\n"
         b"$%d\r\n" % ((16 << 20) + 1)),
        ("BF.SCANDUMP, a 1 MB iterator",
         b"*3\r\n$11\r\nBF.SCANDUMP\r\n$1\r\nf\r\n" + big),
    ]
    for what, head in heads:
        s = socket.create_connection(("127.0.0.1", b.port), timeout=30 * SLOW)
        s.sendall(head)
        got = b""
        try:
            while b"\r\n" not in got:
                part = s.recv(4096)
                if not part:
                    break
                got += part
        except OSError:
            pass
        s.close()
        t.ok(got.startswith(b"-ERR"), "%s: %r" % (what, got))
    t.eq(rb.ping(), True, "b still answers")
    ca.close()
    t.eq(a.stop(), 0, "a: SIGTERM")
    t.eq(b.stop(), 0, "b: SIGTERM")


# ---- an empty filter ----

@test
def filter_without_slices_dumps_whole_and_loads_back(t):
    """A config-file window no key has reached yet has no slice: its dump
    still ends with [0, ""], and loads back as the same empty filter,
    which then takes keys with its own settings."""
    with Server(t, name="a", filters=WINDOW) as a, \
            Server(t, name="b") as b:
        t.eq(shape(a, "win")["slices"], "0", "win has no slice")
        c = Resp(a.port)
        chunks = scandump(c, "win")
        t.ok(len(chunks) >= 1 and all(len(d) >= HDR for _, d in chunks),
             "chunks: %r" % ([len(d) for _, d in chunks],))
        t.eq(len(dump_redispy(rpy(a), "win")), len(chunks),
             "redis-py's loop: chunks")
        cb = Resp(b.port)
        load_ok(t, cb, "w2", chunks, "w2")
        same_shape(t, a, "win", b, "w2", "w2")
        variant, canon = URL_PAIRS[0]
        t.eq(cb.cmd("BF.ADD", "w2", canon), 1, "BF.ADD w2")
        t.eq(cb.cmd("BF.EXISTS", "w2", variant), 1, "normalised on w2")
        t.eq(shape(b, "w2")["slices"], "1", "w2 took its first slice")
        c.close()
        cb.close()


if __name__ == "__main__":
    run()
