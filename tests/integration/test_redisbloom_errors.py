"""
What RedisBloom 2.4.23's own tests (tests/flow: test_overall.py,
test_cuckoo.py) meet besides the BF.*/CF.* replies test_redisbloom.py and
test_cf.py check, and the Redis commands they send between cases: each
reply byte for byte (raw RESP) as RedisBloom's source gives it (src/
rebloom.c, sb.c, cf.c, cuckoo.c of v2.4.23; no RedisBloom module is
packaged here), or as redis-server 7.0.15 answers side by side.

- BF.SCANDUMP / BF.LOADCHUNK / CF.SCANDUMP / CF.LOADCHUNK iterator and chunk
  errors ("Second argument must be numeric", "Invalid position", "ERR
  received bad data", "Invalid header", "Couldn't create filter!",
  "Couldn't load chunk!"), in RedisBloom's order of checks; CF.SCANDUMP's
  [0, nil] for an empty filter and at the end of a dump.
- CF.ADD past RedisBloom's 32 sub-filters: "Maximum expansions reached";
  CF.RESERVE of an impossible capacity: "ERR Insufficient memory to create
  filter"; CF.COMPACT.
- More than 65,536 items in one BF.MADD / BF.INSERT / CF.INSERT (the flow
  test sends 140,000): an answer per item.
- FLUSHALL / FLUSHDB (durable across kill -9, replicated, READONLY on a
  replica) and MEMORY USAGE, beside redis-server.

Where seend differs on purpose (seend(8), "Differences from RedisBloom"),
seend's own bytes are pinned and the reason is named.
"""
import glob
import os
import subprocess

from seendtest import *
from repltest import primary, replica, wait_caught_up, agree, url, \
    READONLY

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind " \
    b"of value\r\n"
BF_END = b"*2\r\n:0\r\n$0\r\n\r\n"
CF_END = b"*2\r\n:0\r\n$-1\r\n"
CF_END3 = b"*2\r\n:0\r\n_\r\n"
NOT_FOUND = b"-ERR not found\r\n"
ITEM_EXISTS = b"-ERR item exists\r\n"
BAD_DATA = b"-ERR received bad data\r\n"

CUCKOO = """
[filter.default]
capacity = 100000
error_rate = 0.001

[filter.cuck]
type = cuckoo
capacity = 10000
error_rate = 0.001
hosts = cuck.example
"""


def dump(c, cmd, name):
    """The (iter, chunk) pairs of a whole dump, and the last reply's bytes."""
    chunks, it = [], 0
    while True:
        got = c.cmd(cmd, name, it)
        v = val(got)
        if not isinstance(v, list) or len(v) != 2:
            raise Failed("%s %s %s: %r" % (cmd, name, it, got[:200]))
        it = v[0]
        if it == 0:
            return chunks, got
        chunks.append((it, v[1]))


def flip(data, pos):
    return data[:pos] + bytes([data[pos] ^ 0x10]) + data[pos + 1:]


def log_has(s, text):
    return wait_until(lambda: text in s.read_log(), timeout=5)


@test
def scandump_iterators_answer_redisbloom_texts_in_its_order(t):
    with Server(t) as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("BF.RESERVE", "bf", "0.01", "1000"), b"+OK\r\n")
        t.eq(c.cmd("BF.ADD", "bf", "x"), b":1\r\n")
        t.eq(c.cmd("CF.RESERVE", "cf", "1000"), b"+OK\r\n")
        t.eq(c.cmd("CF.ADD", "cf", "x"), b":1\r\n")
        for words, want in [
                # BF.SCANDUMP: the filter first, then the iterator
                # (rebloom.c, BFScanDump_RedisCommand)
                (["BF.SCANDUMP", "nosuch", "str"], NOT_FOUND),
                (["BF.SCANDUMP", "cf", "str"], WRONGTYPE),
                (["BF.SCANDUMP", "bf", "str"],
                 b"-Second argument must be numeric\r\n"),
                (["BF.SCANDUMP", "bf", "1.5"],
                 b"-Second argument must be numeric\r\n"),
                (["BF.SCANDUMP", "bf", ""],
                 b"-Second argument must be numeric\r\n"),
                (["BF.SCANDUMP", "bf", "+1"],
                 b"-Second argument must be numeric\r\n"),
                # a negative iterator: no link there, the end (sb.c,
                # getLinkPos)
                (["BF.SCANDUMP", "bf", "-1"], BF_END),
                (["BF.SCANDUMP", "bf", "-9223372036854775808"], BF_END),
                # CF.SCANDUMP: the position first, then the filter
                # (CFScanDump_RedisCommand)
                (["CF.SCANDUMP", "nosuch", "str"], b"-Invalid position\r\n"),
                (["CF.SCANDUMP", "cf", "str"], b"-Invalid position\r\n"),
                (["CF.SCANDUMP", "cf", "-1"], b"-Invalid position\r\n"),
                (["CF.SCANDUMP", "bf", "-1"], b"-Invalid position\r\n"),
                (["CF.SCANDUMP", "nosuch", "0"], NOT_FOUND),
                (["CF.SCANDUMP", "bf", "0"], WRONGTYPE),
                (["BF.SCANDUMP", "bf"],
                 b"-ERR wrong number of arguments for 'bf.scandump' "
                 b"command\r\n"),
                (["CF.SCANDUMP", "cf", "0", "1"],
                 b"-ERR wrong number of arguments for 'cf.scandump' "
                 b"command\r\n")]:
            t.eq(c.cmd(*words), want, " ".join(words))
        # seend's iterators are opaque (seend(8), Differences from
        # RedisBloom, 11): one no dump gave is refused, not the end
        t.eq(c.cmd("BF.SCANDUMP", "bf", "12345"),
             b"-ERR no dump of this filter at this iterator (start again "
             b"at 0)\r\n", "an iterator of no dump")
        # whole dumps end as RedisBloom's: [0, ""] and [0, nil]
        chunks, last = dump(c, "BF.SCANDUMP", "bf")
        t.ok(len(chunks) >= 2, "bloom chunks: %d" % len(chunks))
        t.eq(last, BF_END, "BF.SCANDUMP's last reply")
        chunks, last = dump(c, "CF.SCANDUMP", "cf")
        t.ok(len(chunks) >= 2, "cuckoo chunks: %d" % len(chunks))
        t.eq(last, CF_END, "CF.SCANDUMP's last reply")
        c3 = RespBytes(s.port, resp3=True)
        chunks, last = dump(c3, "CF.SCANDUMP", "cf")
        t.eq(last, CF_END3, "CF.SCANDUMP's last reply in RESP3")
        # an empty cuckoo filter has nothing to dump: [0, nil] at once
        t.eq(c.cmd("CF.RESERVE", "empty", "1000"), b"+OK\r\n")
        t.eq(c.cmd("CF.SCANDUMP", "empty", "0"), CF_END, "empty")
        t.eq(c3.cmd("CF.SCANDUMP", "empty", "0"), CF_END3, "empty, RESP3")
        # ... and one whose items were all deleted (numItems 0)
        t.eq(c.cmd("CF.ADD", "empty", "k"), b":1\r\n")
        t.eq(c.cmd("CF.DEL", "empty", "k"), b":1\r\n")
        t.eq(c.cmd("CF.SCANDUMP", "empty", "0"), CF_END, "emptied")
        # an empty Bloom filter dumps as in RedisBloom (a header, bits)
        t.eq(c.cmd("BF.RESERVE", "bempty", "0.01", "100"), b"+OK\r\n")
        chunks, last = dump(c, "BF.SCANDUMP", "bempty")
        t.ok(len(chunks) >= 2 and last == BF_END, "empty bloom filter")
        c.close()
        c3.close()


@test
def loadchunk_errors_are_redisbloom_texts_and_the_log_says_why(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        ca, c = RespBytes(a.port), RespBytes(b.port)
        t.eq(ca.cmd("BF.RESERVE", "bf", "0.01", "100000"), b"+OK\r\n")
        t.eq(ca.cmd("BF.MADD", "bf", *["k%d" % i for i in range(2000)])
             .count(b":1\r\n"), 2000)
        t.eq(ca.cmd("CF.RESERVE", "cf", "10000"), b"+OK\r\n")
        t.eq(ca.cmd("CF.INSERT", "cf", "ITEMS",
                    *["k%d" % i for i in range(2000)]).count(b":1\r\n"),
             2000)
        bchunks, _ = dump(ca, "BF.SCANDUMP", "bf")
        cchunks, _ = dump(ca, "CF.SCANDUMP", "cf")
        for name, words in (("rb", ["BF.RESERVE", "ebf", "0.1", "4"]),
                            ("rc", ["CF.RESERVE", "ecf", "4"])):
            t.eq(c.cmd(*words), b"+OK\r\n", name)
        h, d1 = bchunks[0][1], bchunks[1][1]
        ch, cd1 = cchunks[0][1], cchunks[1][1]
        # RedisBloom's test_overall.py test_scandump_invalid and
        # test_scandump_invalid_header, test_cuckoo.py's twins
        zeroed = b"\0" * 9 + ch[9:]
        for words, want in [
                # BF.LOADCHUNK: the iterator first (BFLoadChunk_RedisCommand)
                (["BF.LOADCHUNK", "new", "str", "data"],
                 b"-ERR Second argument must be numeric\r\n"),
                (["BF.LOADCHUNK", "new", "", "data"],
                 b"-ERR Second argument must be numeric\r\n"),
                # no chunk's place: a filter there refuses it, none is
                # "not found" (a missing key given a data chunk)
                (["BF.LOADCHUNK", "ebf", "-9223372036854775808", "1"],
                 BAD_DATA),
                (["BF.LOADCHUNK", "ebf", "0", "1"], BAD_DATA),
                (["BF.LOADCHUNK", "new", "0", "1"], NOT_FOUND),
                (["BF.LOADCHUNK", "ecf", "0", "1"], WRONGTYPE),
                # a first chunk that is no header of a dump (sb.c,
                # SB_NewChainFromHeader)
                (["BF.LOADCHUNK", "new", "1", "abcd"], BAD_DATA),
                (["BF.LOADCHUNK", "new", "1",
                  "kdoasdksaodsadsadsadsadsadadsadadsdad"], BAD_DATA),
                (["BF.LOADCHUNK", "new", "1", b""], BAD_DATA),
                (["BF.LOADCHUNK", "new", "1", flip(h, 72)], BAD_DATA),
                (["BF.LOADCHUNK", "new", "1", b"\xff" * 4 + h[4:]], BAD_DATA),
                # a data chunk where a load would start: RedisBloom's
                # missing key
                (["BF.LOADCHUNK", "new", bchunks[1][0], d1], NOT_FOUND),
                (["BF.LOADCHUNK", "ecf", "1", h], WRONGTYPE),
                # CF.LOADCHUNK: position 0 or not a number
                # (CFLoadChunk_RedisCommand)
                (["CF.LOADCHUNK", "new", "str", "data"],
                 b"-Invalid position\r\n"),
                (["CF.LOADCHUNK", "new", "0", "data"],
                 b"-Invalid position\r\n"),
                (["CF.LOADCHUNK", "ecf", "-9223372036854775808", "1"],
                 b"-Couldn't load chunk!\r\n"),
                (["CF.LOADCHUNK", "new", "-1", "1"], NOT_FOUND),
                (["CF.LOADCHUNK", "ebf", "-1", "1"], WRONGTYPE),
                # a header of the wrong length, one that cannot be loaded
                # (test_cuckoo.py test_scandump_invalid_header: its first
                # 9 bytes zeroed)
                (["CF.LOADCHUNK", "new", "1", "abcd"],
                 b"-Invalid header\r\n"),
                (["CF.LOADCHUNK", "new", "1", ch[:-1]],
                 b"-Invalid header\r\n"),
                (["CF.LOADCHUNK", "new", "1", zeroed],
                 b"-Couldn't create filter!\r\n"),
                (["CF.LOADCHUNK", "new", "1", flip(ch, 80)],
                 b"-Couldn't create filter!\r\n"),
                (["CF.LOADCHUNK", "new", cchunks[1][0], cd1], NOT_FOUND),
                # an existing name: RedisBloom's "item exists" for a header
                (["CF.LOADCHUNK", "ecf", "1", ch], ITEM_EXISTS),
                (["CF.LOADCHUNK", "ebf", "1", ch], WRONGTYPE),
                (["CF.LOADCHUNK", "cf4", "1", "x", "y"],
                 b"-ERR wrong number of arguments for 'cf.loadchunk' "
                 b"command\r\n")]:
            t.eq(c.cmd(*words), want, " ".join(
                w if isinstance(w, str) else str(w) if isinstance(w, int)
                else "<%d bytes>" % len(w) for w in words[:3]))
        t.eq(c.cmd("EXISTS", "new"), b":0\r\n", "nothing left behind")
        t.ok(log_has(b, "load of new refused: bad dump chunk: checksum "
                     "mismatch"), "the log says why a header was refused")
        # a chunk refused during a load: RedisBloom's words, the load
        # dropped, the reason logged
        for cmd, chunks, want in (
                ("BF.LOADCHUNK", bchunks, BAD_DATA),
                ("CF.LOADCHUNK", cchunks, b"-Couldn't load chunk!\r\n")):
            name = "half" + cmd[0]
            t.eq(c.cmd(cmd, name, chunks[0][0], chunks[0][1]), b"+OK\r\n")
            bad = flip(chunks[1][1], len(chunks[1][1]) // 2)
            t.eq(c.cmd(cmd, name, chunks[1][0], bad), want, cmd + " damaged")
            t.ok(log_has(b, "load of %s dropped: bad dump chunk: checksum "
                         "mismatch" % name), cmd + ": the log says why")
            # the load is gone: the next chunk has nothing to go on with
            t.eq(c.cmd(cmd, name, chunks[1][0], chunks[1][1]), NOT_FOUND,
                 cmd + " after the refusal")
            # an iterator at no chunk's place drops a load in progress
            t.eq(c.cmd(cmd, name, chunks[0][0], chunks[0][1]), b"+OK\r\n")
            t.eq(c.cmd(cmd, name, "-5", chunks[1][1]),
                 BAD_DATA if cmd[0] == "B" else b"-Couldn't load chunk!\r\n",
                 cmd + " iterator -5 during a load")
            t.eq(c.cmd(cmd, name, chunks[1][0], chunks[1][1]), NOT_FOUND,
                 cmd + " after iterator -5")
            # and the whole dump still loads
            for it, data in chunks:
                t.eq(c.cmd(cmd, name, it, data), b"+OK\r\n", cmd + " whole")
        # seend's own texts where RedisBloom has no such check (seend(8)):
        # a name taken (RedisBloom overwrites), the other type's dump
        t.eq(c.cmd("BF.LOADCHUNK", "ebf", "922337203685477588", "1"),
             ITEM_EXISTS, "a taken name")
        got = c.cmd("BF.LOADCHUNK", "other", cchunks[0][0], ch)
        t.eq(got, b"-ERR the dump is of a cuckoo filter: load it with "
             b"CF.LOADCHUNK\r\n", "a cuckoo dump to BF.LOADCHUNK")
        ca.close()
        c.close()


@test
def seen_cli_restore_says_why_a_chunk_is_refused(t):
    with Server(t) as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("BF.MADD", "f", *["k%d" % i for i in range(100)])
             .count(b":1\r\n"), 100)
        f = t.path("f.dump")
        p = subprocess.run([SEEN_CLI, "-p", str(s.port), "dump", "f", f],
                           capture_output=True, text=True, timeout=60 * SLOW)
        t.eq(p.returncode, 0, "dump: %s" % p.stderr)
        data = open(f, "rb").read()
        bad = t.path("bad.dump")
        with open(bad, "wb") as out:
            out.write(flip(data, len(data) - 5))
        p = subprocess.run([SEEN_CLI, "-p", str(s.port), "restore", "g",
                            bad], capture_output=True, text=True,
                           timeout=60 * SLOW)
        t.eq(p.returncode, 1, "restore of a damaged file")
        t.contains(p.stderr, "bad dump chunk: checksum mismatch (chunk 1)")
        # an empty cuckoo filter has no dump: said, not a broken file
        t.eq(c.cmd("CF.RESERVE", "ec", "100"), b"+OK\r\n")
        p = subprocess.run([SEEN_CLI, "-p", str(s.port), "dump", "ec",
                            t.path("ec.dump")], capture_output=True,
                           text=True, timeout=60 * SLOW)
        t.eq(p.returncode, 1, "dump of an empty cuckoo filter")
        t.contains(p.stderr, "CF.SCANDUMP ec: the cuckoo filter holds no "
                   "item: there is nothing to dump")
        t.ok(not os.path.exists(t.path("ec.dump")), "no file")
        c.close()


@test
def cuckoo_growth_stops_at_redisbloom_maximum_expansions(t):
    # new_filter_growth = 1 is RedisBloom's CF default EXPANSION (1):
    # test_cuckoo.py test_max_expansions as it is written
    with Server(t, server_extra="new_filter_growth = 1") as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("CF.RESERVE", "cf", "4"), b"+OK\r\n")
        got = [c.cmd("CF.ADD", "cf", str(i)) for i in range(124)]
        t.eq(got, [b":1\r\n"] * 124, "124 items")
        full = b"-Maximum expansions reached\r\n"
        t.eq(c.cmd("CF.ADD", "cf", "2048"), full, "CF.ADD")
        info = val(c.cmd("CF.INFO", "cf"))
        t.eq(info[info.index(b"+Number of filters") + 1], 32, "sub-filters")
        # before any item, held ones too (cfInsertCommon)
        t.eq(c.cmd("CF.ADDNX", "cf", "1"), full, "CF.ADDNX of a held item")
        t.eq(c.cmd("CF.INSERT", "cf", "ITEMS", "a", "b"), full, "CF.INSERT")
        t.eq(c.cmd("CF.INSERTNX", "cf", "NOCREATE", "ITEMS", "a"), full,
             "CF.INSERTNX")
        t.eq(c.cmd("CF.INSERT", "nosuch", "NOCREATE", "ITEMS", "a"),
             NOT_FOUND, "NOCREATE on a missing name comes first")
        # the dedup commands are not bound by it: a growing filter never
        # refuses a key (seend(8))
        t.eq(c.cmd("SADD", "cf", "sadd-key"), b":1\r\n", "SADD")
        t.eq(c.cmd("CF.EXISTS", "cf", "sadd-key"), b":1\r\n")
        t.eq(c.cmd("CF.DEL", "cf", "5"), b":1\r\n", "CF.DEL still works")
        t.eq(c.cmd("CF.COMPACT", "cf"), b"+OK\r\n", "CF.COMPACT")
        t.eq(c.cmd("CF.ADD", "cf", "2049"), full, "after CF.COMPACT")
        # the bound is RedisBloom's count of sub-filters: with seend's
        # default growth of 2 the same capacity takes keys far past it
        t.eq(c.cmd("CF.RESERVE", "g2", "4", "EXPANSION", "2"), b"+OK\r\n")
        got = c.cmd("CF.INSERT", "g2", "ITEMS",
                    *["x%d" % i for i in range(4000)])
        t.eq(got.count(b":1\r\n"), 4000, "EXPANSION 2: 4000 items")
        c.close()


@test
def impossible_capacity_is_insufficient_memory_as_in_redisbloom(t):
    with Server(t) as s:
        c = RespBytes(s.port)
        nomem = b"-ERR Insufficient memory to create filter\r\n"
        # test_cuckoo.py test_insufficient_memory
        t.eq(c.cmd("CF.RESERVE", "cf", "9223372036854775807"), nomem,
             "CF.RESERVE")
        t.eq(c.cmd("CF.RESERVE", "cf", "1099511627776000"), nomem,
             "CF.RESERVE of a table over 1 TiB")
        t.eq(c.cmd("CF.INSERT", "ci", "CAPACITY", "9223372036854775807",
                   "ITEMS", "a"), nomem, "CF.INSERT creating")
        t.eq(c.cmd("CF.INSERTNX", "ci", "CAPACITY", "9223372036854775807",
                   "ITEMS", "a"), nomem, "CF.INSERTNX creating")
        t.eq(c.cmd("EXISTS", "cf", "ci"), b":0\r\n", "nothing made")
        t.eq(c.cmd("TYPE", "cf"), b"+none\r\n")
        # and a capacity that fits is made as before
        t.eq(c.cmd("CF.RESERVE", "cf", "1000"), b"+OK\r\n")
        c.close()


@test
def cf_compact_answers_ok_and_redisbloom_errors(t):
    with Server(t) as s:
        c = RespBytes(s.port)
        t.eq(c.cmd("CF.RESERVE", "cf", "8", "MAXITERATIONS", "50"),
             b"+OK\r\n")
        t.eq([c.cmd("CF.ADD", "cf", str(x)) for x in range(100)],
             [b":1\r\n"] * 100)
        before = c.cmd("CF.INFO", "cf")
        t.eq(c.cmd("cf.compact", "cf"), b"+OK\r\n", "CF.COMPACT")
        t.eq([c.cmd("CF.EXISTS", "cf", str(x)) for x in range(100)],
             [b":1\r\n"] * 100, "every item still held")
        t.eq(c.cmd("CF.INFO", "cf"), before, "nothing changed")
        missing = b"-Cuckoo filter was not found\r\n"
        t.eq(c.cmd("CF.COMPACT", "a"), missing, "a missing key")
        t.eq(c.cmd("BF.ADD", "bf", "x"), b":1\r\n")
        t.eq(c.cmd("CF.COMPACT", "bf"), missing, "a Bloom filter")
        arity = b"-ERR wrong number of arguments for 'cf.compact' command\r\n"
        t.eq(c.cmd("CF.COMPACT", "a", "b"), arity)
        t.eq(c.cmd("CF.COMPACT"), arity)
        c3 = RespBytes(s.port, resp3=True)
        t.eq(c3.cmd("CF.COMPACT", "cf"), b"+OK\r\n", "RESP3")
        # COMMAND INFO: a module command RedisBloom registers readonly fast
        got = c.cmd("COMMAND", "INFO", "CF.COMPACT")
        want = (b"*1\r\n*10\r\n$10\r\ncf.compact\r\n:2\r\n*3\r\n+readonly\r\n"
                b"+module\r\n+fast\r\n:1\r\n:1\r\n:1\r\n")
        t.eq(got[:len(want)], want, "COMMAND INFO cf.compact")
        t.ok(b"$6\r\nmodule\r\n$2\r\nbf\r\n" in
             c.cmd("COMMAND", "DOCS", "cf.compact"), "COMMAND DOCS")
        c.close()
        c3.close()


@test
def more_than_65536_items_are_answered_item_by_item(t):
    # every distinct item must answer 1: bf (100,000 items), bf2 and set
    # (70,000 each) are made on demand, and new_filter_error_rate 0.001
    # gave a false positive among them once in 80,000 runs; 0.0001 makes
    # it once in 800 million
    with Server(t, "new_filter_error_rate = 0.0001") as s:
        c = RespBytes(s.port, timeout=60)
        # test_cuckoo.py test_counter_overflow_with_large_number_of_items:
        # 140,000 copies of one item; RedisBloom answers each, 1 while a
        # sub-filter takes a copy, -1 once it can add none (UINT16_MAX
        # sub-filters; seend: 4096 slices)
        t.eq(c.cmd("CF.RESERVE", "cf", "2", "BUCKETSIZE", "1", "EXPANSION",
                   "1"), b"+OK\r\n")
        got = c.cmd("CF.INSERT", "cf", "ITEMS", *["1 "] * 140000)
        t.ok(got.startswith(b"*140000\r\n:1\r\n"), "CF.INSERT: %r" % got[:40])
        n1, nm1 = got.count(b":1\r\n"), got.count(b":-1\r\n")
        t.eq(n1 + nm1, 140000, "an answer per item (%d and %d)" % (n1, nm1))
        t.eq(len(got), len(b"*140000\r\n") + 4 * n1 + 5 * nm1, "nothing else")
        # distinct items past 65,536: each recorded, each answered
        items = ["https://many.example/%d" % i for i in range(100000)]
        got = c.cmd("BF.MADD", "bf", *items)
        t.eq(got, b"*100000\r\n" + b":1\r\n" * 100000, "BF.MADD")
        got = c.cmd("BF.INSERT", "bf2", "ITEMS", *items[:70000])
        t.eq(got, b"*70000\r\n" + b":1\r\n" * 70000, "BF.INSERT")
        got = c.cmd("BF.MEXISTS", "bf", *items[:70000])
        t.eq(got, b"*70000\r\n" + b":1\r\n" * 70000, "BF.MEXISTS")
        got = c.cmd("CF.INSERT", "cf2", "ITEMS", *items[:70000])
        t.eq(got, b"*70000\r\n" + b":1\r\n" * 70000, "CF.INSERT")
        t.eq(c.cmd("SADD", "set", *items[:70000]), b":70000\r\n", "SADD")
        t.eq(c.cmd("BF.CARD", "bf"), b":100000\r\n")
        t.eq(c.cmd("PING"), b"+PONG\r\n", "the connection goes on")
        c.close()


@test
def memory_usage_and_flush_syntax_as_redis_server(t):
    rs = RedisServer(t)
    with Server(t) as s:
        cases = [
            ["MEMORY", "USAGE", "nosuchkey"],
            ["MEMORY", "usage", "nosuchkey", "SAMPLES", "0"],
            ["MEMORY"],
            ["MEMORY", "USAGE"],
            ["MEMORY", "USAGE", "nosuchkey", "SAMPLES"],
            ["MEMORY", "USAGE", "nosuchkey", "SAMPLES", "x"],
            ["MEMORY", "USAGE", "nosuchkey", "SAMPLES", "-1"],
            ["MEMORY", "USAGE", "nosuchkey", "FOO"],
            ["MEMORY", "FOO"],
            ["FLUSHALL", "x"],
            ["FLUSHALL", "ASYNC", "SYNC"],
            ["FLUSHDB", "a", "b"],
            ["FLUSHDB", "nope"],
            ["FLUSHALL", "async"],
            ["FLUSHALL", "SYNC"],
            ["FLUSHDB", "ASYNC"],
            ["FLUSHDB"],
            ["FLUSHALL"],
            ["COMMAND", "INFO", "flushall", "flushdb", "memory|usage"],
            ["COMMAND", "DOCS", "flushall", "flushdb", "memory|usage"],
        ]
        side_by_side(t, s.port, rs.port, cases, "beside redis-server")
        for port, who in ((s.port, "seend"), (rs.port, "redis-server")):
            c3 = RespBytes(port, resp3=True)
            t.eq(c3.cmd("MEMORY", "USAGE", "nosuchkey"), b"_\r\n",
                 who + ": RESP3 null")
            c3.close()
        # a filter's bytes, as FILTERS has them
        c = RespBytes(s.port)
        t.eq(c.cmd("BF.RESERVE", "rt", "0.001", "100000"), b"+OK\r\n")
        t.eq(c.cmd("CF.RESERVE", "rc", "100000"), b"+OK\r\n")
        fl = filter_lines(s)
        for name in ("default", "rt", "rc"):
            t.eq(c.cmd("MEMORY", "USAGE", name),
                 b":%s\r\n" % fl[name]["bytes"].encode(), "MEMORY " + name)
        t.eq(c.cmd("MEMORY", "USAGE", "rt", "SAMPLES", "5"),
             b":%s\r\n" % fl["rt"]["bytes"].encode(), "SAMPLES changes "
             "nothing")
        # a URL key is not a filter: null, as a missing key
        t.eq(c.cmd("SETNX", "https://a.example/", "1"), b":1\r\n")
        t.eq(c.cmd("MEMORY", "USAGE", "https://a.example/"), b"$-1\r\n")
        got = c.cmd("MEMORY", "HELP")
        t.ok(got.startswith(b"*6\r\n+MEMORY <subcommand> [<arg> [value] "
                            b"[opt] ...]. Subcommands are:\r\n+USAGE <key> "
                            b"[SAMPLES <count>]\r\n"), "MEMORY HELP: %r" % got)
        t.eq(c.cmd("MEMORY", "STATS"),
             b"-ERR unknown subcommand 'STATS'. Try MEMORY HELP.\r\n",
             "a subcommand seend does not serve")
        c.close()
        rs.stop()


def filter_lines(s):
    lc = s.client()
    try:
        lc.send("FILTERS\n")
        return {l.split()[0]: dict(f.split("=", 1) for f in l.split()[1:])
                for l in lc.lines_until_end()}
    finally:
        lc.close()


@test
def flushall_is_journaled_before_its_reply_and_survives_kill9(t):
    s = Server(t, filters=CUCKOO).start()
    c = RespBytes(s.port)
    urls = ["https://www.example/%d" % i for i in range(3000)]
    curls = ["https://cuck.example/%d" % i for i in range(3000)]
    for u in urls + curls:
        c.send("SETNX", u, "1")
    # at 0.001 a few may be false positives
    got = c.values(len(urls) + len(curls)).count(b":1\r\n")
    t.ok(got > 5950, "recorded: %d new of 6000" % got)
    t.eq(c.cmd("BF.RESERVE", "rt", "0.001", "100000"), b"+OK\r\n")
    t.ok(c.cmd("BF.MADD", "rt", *urls).count(b":1\r\n") > 2950)
    t.eq(c.cmd("CF.RESERVE", "rc", "100000"), b"+OK\r\n")
    t.eq(c.cmd("CF.INSERT", "rc", "ITEMS", *urls).count(b":1\r\n"), 3000)
    t.eq(c.cmd("SADD", "sa", *urls[:100]), b":100\r\n", "created by SADD")
    t.eq(c.cmd("EXPIRE", "rt", "100000"), b":1\r\n", "a deadline")
    # snapshots of every filter, then more keys that only the journal holds
    lc = s.client()
    t.eq(lc.cmd("SAVE"), "OK")
    lc.close()
    more = ["https://www.example/more/%d" % i for i in range(500)]
    for u in more:
        c.send("SETNX", u, "1")
    t.ok(c.values(len(more)).count(b":1\r\n") > 490, "more recorded")
    t.ok(c.cmd("BF.MADD", "rt", *more).count(b":1\r\n") > 490)
    t.eq(c.cmd("FLUSHALL"), b"+OK\r\n", "FLUSHALL")
    # at once: nothing may wait for a snapshot or a second's fsync
    s.kill9()
    s.start()
    c = RespBytes(s.port)
    fl = filter_lines(s)
    t.eq(sorted(fl), ["cuck", "default"], "only the config file's filters")
    for name in fl:
        t.eq(fl[name]["count"], "0", name + " is empty")
    t.eq(c.cmd("KEYS", "*").count(b"$"), 2, "KEYS")
    for name in ("rt", "rc", "sa"):
        t.eq(c.cmd("TYPE", name), b"+none\r\n", name + " is gone")
        t.eq(glob.glob(os.path.join(s.data_dir, name + ".*")), [],
             name + "'s files are gone")
    dl = os.path.join(s.data_dir, "deadlines")
    t.ok(not os.path.exists(dl) or b"rt" not in open(dl, "rb").read(),
         "rt's deadline is gone")
    got = c.cmd("EXISTS", *(urls[:1000] + curls[:1000] + more[:100]))
    t.eq(got, b":0\r\n", "no key is held")
    # they are new again, and the filters take keys
    t.eq(c.cmd("SETNX", urls[0], "1"), b":1\r\n")
    t.eq(c.cmd("SETNX", curls[0], "1"), b":1\r\n")
    # FLUSHDB SYNC is the same
    t.eq(c.cmd("BF.ADD", "again", "x"), b":1\r\n")
    t.eq(c.cmd("FLUSHDB", "SYNC"), b"+OK\r\n", "FLUSHDB")
    s.kill9()
    s.start()
    c = RespBytes(s.port)
    fl = filter_lines(s)
    t.eq(sorted(fl), ["cuck", "default"], "after FLUSHDB and kill -9")
    t.eq([fl[n]["count"] for n in sorted(fl)], ["0", "0"])
    t.eq(c.cmd("EXISTS", urls[0], curls[0]), b":0\r\n")
    c.close()
    t.ok("FLUSHDB by client" in s.read_log(), "the log says who")
    t.eq(s.stop(), 0)


@test
def flushall_on_a_primary_reaches_its_replica_which_refuses_it(t):
    p = primary(t)
    r = replica(t, p)
    cp = RespBytes(p.port)
    urls = [url("flush", i) for i in range(5000)]
    for u in urls:
        cp.send("SETNX", u, "1")
    t.eq(cp.values(len(urls)), b":1\r\n" * len(urls))
    t.eq(cp.cmd("BF.RESERVE", "rt", "0.001", "100000"), b"+OK\r\n")
    t.eq(cp.cmd("BF.MADD", "rt", *urls[:1000]).count(b":1\r\n"), 1000)
    t.eq(cp.cmd("CF.RESERVE", "rc", "100000"), b"+OK\r\n")
    t.eq(cp.cmd("CF.INSERT", "rc", "ITEMS", *urls[:1000]).count(b":1\r\n"),
         1000)
    wait_caught_up(t, p, [r], what="before FLUSHALL")
    cr = RespBytes(r.port)
    ro = b"-" + READONLY.encode() + b"\r\n"
    t.eq(cr.cmd("FLUSHALL"), ro, "FLUSHALL on the replica")
    t.eq(cr.cmd("FLUSHDB", "ASYNC"), ro, "FLUSHDB on the replica")
    # reads, and CF.COMPACT (no write, as RedisBloom registers it)
    t.eq(cr.cmd("MEMORY", "USAGE", "rt"), cp.cmd("MEMORY", "USAGE", "rt"),
         "MEMORY USAGE on the replica")
    t.eq(cr.cmd("CF.COMPACT", "rc"), b"+OK\r\n", "CF.COMPACT on the replica")
    t.eq(cr.cmd("EXISTS", *urls[:100]), b":100\r\n", "nothing flushed")
    t.eq(cp.cmd("FLUSHALL"), b"+OK\r\n", "FLUSHALL on the primary")
    wait_caught_up(t, p, [r], what="after FLUSHALL")
    fl = filter_lines(r)
    t.eq(sorted(fl), ["default"], "the replica's filters")
    t.eq(fl["default"]["count"], "0", "default emptied on the replica")
    t.eq(cr.cmd("TYPE", "rt"), b"+none\r\n")
    t.eq(cr.cmd("EXISTS", *urls[:1000]), b":0\r\n", "no key on the replica")
    agree(t, p, [r], urls, "after FLUSHALL")
    # and it holds there across a kill -9 of the replica
    r.kill9()
    r.start()
    wait_caught_up(t, p, [r], what="replica restarted")
    t.eq(sorted(filter_lines(r)), ["default"], "after the replica's restart")
    cr = RespBytes(r.port)
    t.eq(cr.cmd("EXISTS", *urls[:1000]), b":0\r\n")
    cp.close()
    cr.close()
    t.eq(r.stop(), 0)
    t.eq(p.stop(), 0)


if __name__ == "__main__":
    run()
