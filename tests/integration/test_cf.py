"""
RedisBloom's cuckoo-filter commands (CF.RESERVE, CF.ADD, CF.ADDNX,
CF.INSERT, CF.INSERTNX, CF.EXISTS, CF.MEXISTS, CF.DEL, CF.COUNT, CF.INFO)
answer as RedisBloom 2.4 does, byte for byte, in RESP2, and in RedisBloom
2.6's RESP3 forms after HELLO 3 (booleans except CF.INSERTNX and CF.COUNT,
CF.INFO a map). No RedisBloom module is packaged for this machine: the
expected bytes are pinned from RedisBloom's source (src/rebloom.c and
src/cuckoo.c of v2.4.23 and of the 2.6 branch) and its tests/flow
(test_cuckoo.py, test_resp3.py).

Deliberate differences, checked here as seend's own behaviour: buckets
hold 4 fingerprints whatever BUCKETSIZE says (it is validated), the
default MAXITERATIONS is 500, Size and Number of buckets are seend's
tables', EXPANSION above 1024 is refused, filters created without
parameters take new_filter_* from the config.

A cuckoo filter promises nothing exact about keys never added: absent keys
are only asserted absent in filters holding a handful of keys (a false
positive there has a chance around 1e-6), and the false-positive test
bounds its count with 3 sigma of margin.
"""
import math
import signal

from seendtest import *

redis = system_module("redis")

ARITY = b"-ERR wrong number of arguments for '%s' command\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind " \
    b"of value\r\n"
FULL = b"-Filter is full\r\n"
NOT_FOUND = b"-ERR not found\r\n"
CAP_SMALL = b"-Capacity must be at least (BucketSize * 2)\r\n"
MI_RANGE = b"-MAXITERATIONS: value must be an integer between 1 and " \
    b"65535, inclusive.\r\n"
BS_RANGE = b"-BUCKETSIZE: value must be an integer between 1 and 255, " \
    b"inclusive.\r\n"
EX_RANGE = b"-EXPANSION: value must be an integer between 0 and 32768, " \
    b"inclusive.\r\n"

SERVER = """
new_filter_capacity = 10000
new_filter_error_rate = 0.001
new_filter_growth = 2
"""
# for the false-positive test: a rate whose false positives are many
SERVER_FP = SERVER.replace("0.001", "0.01")

INFO_NAMES = ["Size", "Number of buckets", "Number of filters",
              "Number of items inserted", "Number of items deleted",
              "Bucket size", "Expansion rate", "Max iterations"]


def check_cases(t, conn, cases, label):
    for words, want in cases:
        got = conn.cmd(*words)
        t.eq(got, want, "%s: %s" % (label, " ".join(str(w) for w in words)))


def ints(*v):
    return b"*%d\r\n" % len(v) + b"".join(b":%d\r\n" % x for x in v)


def bools(*v):
    return b"*%d\r\n" % len(v) + b"".join(b"#t\r\n" if x else b"#f\r\n"
                                          for x in v)


def cf_info(t, conn, name):
    """CF.INFO's reply (RESP2 or RESP3) as a list of (name, value): the
    eight names in RedisBloom's order, each value an integer."""
    got = conn.cmd("CF.INFO", name)
    lines = got.split(b"\r\n")[:-1]
    t.ok(lines[0] in (b"*16", b"%8"), "CF.INFO %s: %r" % (name, got))
    out = []
    for i in range(1, len(lines), 2):
        t.ok(lines[i][:1] == b"+" and lines[i + 1][:1] == b":",
             "CF.INFO %s: simple strings and integers: %r" % (name, got))
        out.append((lines[i][1:].decode(), int(lines[i + 1][1:])))
    t.eq([n for n, _ in out], INFO_NAMES, "CF.INFO %s names" % name)
    return out


def info_dict(t, conn, name):
    return dict(cf_info(t, conn, name))


def info_bytes(pairs, resp3=False):
    head = b"%%%d\r\n" % len(pairs) if resp3 else b"*%d\r\n" % (2 * len(pairs))
    return head + b"".join(b"+%s\r\n:%d\r\n" % (n.encode(), v)
                           for n, v in pairs)


def fill_fixed(t, c, name, limit=20000):
    """CF.ADD k0, k1 ... to a fixed filter until one that it does not
    hold (no false positive) is refused; returns the keys it took and the
    one refused. A refusal changes nothing: the same key is refused again
    as long as the filter does not change."""
    took = []
    for i in range(limit):
        k = "k%d" % i
        got = c.cmd("CF.ADD", name, k)
        if got == FULL:
            if c.cmd("CF.EXISTS", name, k) == b":0\r\n":
                return took, k
            continue
        t.eq(got, b":1\r\n", "CF.ADD %s %s before the full point" % (name, k))
        took.append(k)
    raise Failed("%s took %d keys and was never full" % (name, limit))


@test
def cf_reserve_checks_its_arguments_as_redisbloom_2_4(t):
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        check_cases(t, c, [
            (["CF.RESERVE", "cf", "1000"], b"+OK\r\n"),
            (["CF.RESERVE", "cf", "1000"], b"-ERR item exists\r\n"),
            (["cf.reserve"], ARITY % b"cf.reserve"),
            (["CF.RESERVE", "cf"], ARITY % b"cf.reserve"),
            # options come in pairs: an odd number of words is an arity
            (["CF.RESERVE", "x", "100", "EXPANSION"], ARITY % b"cf.reserve"),
            (["CF.RESERVE", "x", "100", "BUCKETSIZE"],
             ARITY % b"cf.reserve"),
            (["CF.RESERVE", "x", "100", "a", "b", "c"],
             ARITY % b"cf.reserve"),
            (["CF.RESERVE", "x", "str"], b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", "+100"], b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", "0100"], b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", "1e3"], b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", ""], b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", "1"], CAP_SMALL),
            (["CF.RESERVE", "x", "3"], CAP_SMALL),
            (["CF.RESERVE", "x", "0"], CAP_SMALL),
            (["CF.RESERVE", "x", "-5"], CAP_SMALL),
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "6"], CAP_SMALL),
            (["CF.RESERVE", "x", "10", "MAXITERATIONS", "string"],
             b"-Couldn't parse MAXITERATIONS\r\n"),
            (["CF.RESERVE", "x", "10", "MAXITERATIONS", "0"], MI_RANGE),
            (["CF.RESERVE", "x", "10", "MAXITERATIONS", "-1"], MI_RANGE),
            (["CF.RESERVE", "x", "10", "MAXITERATIONS", "65536"], MI_RANGE),
            (["CF.RESERVE", "x", "100", "MAXITERATIONS", "165536"],
             MI_RANGE),
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "string"],
             b"-Couldn't parse BUCKETSIZE\r\n"),
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "0"], BS_RANGE),
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "-1"], BS_RANGE),
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "256"], BS_RANGE),
            (["CF.RESERVE", "x", "100", "BUCKETSIZE", "33554432"], BS_RANGE),
            (["CF.RESERVE", "x", "10", "EXPANSION", "string"],
             b"-Couldn't parse EXPANSION\r\n"),
            (["CF.RESERVE", "x", "10", "EXPANSION", "-1"], EX_RANGE),
            (["CF.RESERVE", "x", "10", "EXPANSION", "32769"], EX_RANGE),
            (["CF.RESERVE", "x", "100", "EXPANSION", "327695"], EX_RANGE),
            # RedisBloom's order: capacity, MAXITERATIONS, BUCKETSIZE,
            # EXPANSION (whatever their order), then capacity >= 2 * bucket
            (["CF.RESERVE", "x", "str", "MAXITERATIONS", "0"],
             b"-Bad capacity\r\n"),
            (["CF.RESERVE", "x", "1", "BUCKETSIZE", "0", "MAXITERATIONS",
              "0"], MI_RANGE),
            (["CF.RESERVE", "x", "1", "EXPANSION", "-1", "BUCKETSIZE", "0"],
             BS_RANGE),
            (["CF.RESERVE", "x", "1", "EXPANSION", "-1"], EX_RANGE),
            (["CF.RESERVE", "x", "1", "EXPANSION", "2"], CAP_SMALL),
            (["CF.RESERVE", "cf", "1", "EXPANSION", "2"], CAP_SMALL),
            # keywords in any case; words RedisBloom does not know are
            # ignored
            (["CF.RESERVE", "r1", "100", "maxIterations", "10", "bucketsize",
              "1", "expansion", "4"], b"+OK\r\n"),
            (["CF.RESERVE", "r2", "100", "FOO", "BAR"], b"+OK\r\n"),
            (["CF.RESERVE", "r3", "4"], b"+OK\r\n"),
            (["CF.RESERVE", "r4", "510", "BUCKETSIZE", "255",
              "MAXITERATIONS", "65535", "EXPANSION", "0"], b"+OK\r\n"),
            (["CF.RESERVE", "r5", "100", "EXPANSION", "3"], b"+OK\r\n"),
            (["CF.RESERVE", "r6", "100", "EXPANSION", "1000"], b"+OK\r\n"),
            (["CF.RESERVE", "r7", "100", "EXPANSION", "1"], b"+OK\r\n"),
            # seend's own limit (a snapshot keeps growth factors up to
            # 1024), after RedisBloom's rounding to a power of two
            (["CF.RESERVE", "x", "100", "EXPANSION", "1025"],
             b"-ERR expansion over 1024 is not supported\r\n"),
            (["CF.RESERVE", "x", "100", "EXPANSION", "32768"],
             b"-ERR expansion over 1024 is not supported\r\n"),
            # a keyword in the last place: RedisBloom reads past the end;
            # seend finds no number there
            (["CF.RESERVE", "x", "10", "BUCKETSIZE", "MAXITERATIONS"],
             b"-Couldn't parse MAXITERATIONS\r\n"),
            (["CF.INFO", "x"], NOT_FOUND),
        ], "CF.RESERVE")
        # what CF.INFO shows of them
        for name, exp, iters in (("cf", 2, 500), ("r1", 4, 10),
                                 ("r2", 2, 500), ("r4", 0, 65535),
                                 ("r5", 4, 500), ("r6", 1024, 500),
                                 ("r7", 1, 500)):
            info = info_dict(t, c, name)
            t.eq((info["Number of filters"], info["Number of items inserted"],
                  info["Number of items deleted"], info["Bucket size"],
                  info["Expansion rate"], info["Max iterations"]),
                 (1, 0, 0, 4, exp, iters), "CF.INFO %s" % name)
            t.ok(info["Size"] > 0, "CF.INFO %s Size %d" % (name, info["Size"]))
        # seend's table for 1000 keys has room for them (4 a bucket)
        info = info_dict(t, c, "cf")
        t.ok(info["Number of buckets"] * 4 >= 1000,
             "buckets for 1000 keys: %d" % info["Number of buckets"])
        t.ok(info_dict(t, c, "r3")["Number of buckets"] >= 1, "r3 buckets")
        t.eq(c.cmd("TYPE", "cf"), b"+MBbloomCF\r\n")
        t.eq(c.cmd("CF.INFO"), ARITY % b"cf.info")
        t.eq(c.cmd("CF.INFO", "cf", "SIZE"), ARITY % b"cf.info")
        c.close()


@test
def cf_add_insert_exists_del_count_answer_as_redisbloom_2_4_in_resp2(t):
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        check_cases(t, c, [
            # RedisBloom's test_count: CF.ADD of a held item stores a copy
            (["CF.RESERVE", "cf", "1000"], b"+OK\r\n"),
            (["CF.EXISTS", "cf", "k1"], b":0\r\n"),
            (["CF.ADD", "cf", "k1"], b":1\r\n"),
            (["CF.ADD", "cf", "k1"], b":1\r\n"),
            (["CF.EXISTS", "cf", "k1"], b":1\r\n"),
            (["CF.COUNT", "cf", "k1"], b":2\r\n"),
            (["CF.DEL", "cf", "k1"], b":1\r\n"),
            (["CF.COUNT", "cf", "k1"], b":1\r\n"),
            (["CF.EXISTS", "cf", "k1"], b":1\r\n"),
            (["CF.DEL", "cf", "k1"], b":1\r\n"),
            (["CF.COUNT", "cf", "k1"], b":0\r\n"),
            (["CF.EXISTS", "cf", "k1"], b":0\r\n"),
            (["CF.DEL", "cf", "k1"], b":0\r\n"),
            (["CF.DEL", "cf"], ARITY % b"cf.del"),
            (["CF.DEL", "cf", "a", "b"], ARITY % b"cf.del"),
            (["CF.DEL", "nosuch", "k1"], b"-Not found\r\n"),
            # test_setnx
            (["CF.ADDNX", "nx", "k1"], b":1\r\n"),
            (["CF.ADDNX", "nx", "k1"], b":0\r\n"),
            (["CF.COUNT", "nx", "k1"], b":1\r\n"),
            (["CF.ADD", "nx", "k1"], b":1\r\n"),
            (["CF.COUNT", "nx", "k1"], b":2\r\n"),
            (["cf.addnx", "nx", "k1"], b":0\r\n"),
            (["CF.ADD"], ARITY % b"cf.add"),
            (["CF.ADD", "err"], ARITY % b"cf.add"),
            (["CF.ADD", "err", "a", "b"], ARITY % b"cf.add"),
            (["CF.ADDNX", "err"], ARITY % b"cf.addnx"),
            # test_insert
            (["CF.ADD", "f1", "foo"], b":1\r\n"),
            (["CF.INSERT", "f2", "ITEMS", "foo"], ints(1)),
            (["CF.INSERT", "cf"], ARITY % b"cf.insert"),
            (["CF.INSERT", "cf", "element"], ARITY % b"cf.insert"),
            (["CF.INSERTNX", "cf", "element"], ARITY % b"cf.insertnx"),
            (["CF.INSERTNX", "f1", "items", "foo"], ints(0)),
            (["CF.INSERT", "f3", "CAPACITY", "10000", "ITEMS", "foo"],
             ints(1)),
            (["CF.INSERT", "f3", "NOCREATE", "CAPACITY"],
             ARITY % b"cf.insert"),
            (["CF.INSERT", "f3", "NOCREATE", "CAPACITY", "str"],
             b"-Bad capacity\r\n"),
            (["CF.INSERT", "f3", "NOCREATE", "DONTEXIST"],
             b"-Unknown argument received\r\n"),
            (["CF.INSERT", "f3", "NOCREATE", "ITEMS"],
             ARITY % b"cf.insert"),
            (["CF.INSERTNX", "f3", "ITEMS", "foo", "bar", "baz"],
             ints(0, 1, 1)),
            (["CF.INSERT", "f4", "nocreate", "items", "foo"], NOT_FOUND),
            (["CF.INSERT", "f4", "items", "foo"], ints(1)),
            (["CF.INSERT", "f4", "nocreate", "items", "foo"], ints(1)),
            (["CF.COUNT", "f4", "foo"], b":2\r\n"),
            # CAPACITY is checked while parsing, the filter existing or not
            (["CF.INSERT", "cf", "CAPACITY", "-1", "ITEMS", "k0"], CAP_SMALL),
            (["CF.INSERT", "cf", "CAPACITY", "3", "ITEMS", "k0"], CAP_SMALL),
            (["CF.INSERTNX", "cf", "CAPACITY", "-1", "ITEMS", "k0"],
             CAP_SMALL),
            (["CF.INSERTNX", "cf", "CAPACITY", "3", "ITEMS", "k0"],
             CAP_SMALL),
            (["CF.INSERT", "new", "CAPACITY", "4", "ITEMS", "a", "a"],
             ints(1, 1)),
            (["CF.INSERTNX", "new2", "CAPACITY", "4", "ITEMS", "a", "a"],
             ints(1, 0)),
            # options by their first letter, as RedisBloom tells them
            (["CF.INSERT", "ab1", "CAP", "100", "I", "x", "y"], ints(1, 1)),
            (["CF.INSERT", "ab2", "Nothing", "ITEMS", "x"], NOT_FOUND),
            (["CF.INSERT", "ab2", "", "ITEMS", "x"],
             b"-Unknown argument received\r\n"),
            (["CF.INSERT", "ab2", "xyz", "ITEMS", "x"],
             b"-Unknown argument received\r\n"),
            (["CF.INSERT", "ab2", "CAPACITY", "10", "ERROR", "0.01", "ITEMS",
              "x"], b"-Unknown argument received\r\n"),
            # what follows ITEMS is items, whatever it looks like
            (["CF.INSERT", "ab3", "ITEMS", "NOCREATE", "CAPACITY"],
             ints(1, 1)),
            (["CF.MEXISTS", "ab3", "NOCREATE", "CAPACITY"], ints(1, 1)),
            # test_exists
            (["CF.INSERT", "e1", "ITEMS", "foo", "bar", "baz"],
             ints(1, 1, 1)),
            (["CF.MEXISTS", "e1", "foo", "bar", "baz"], ints(1, 1, 1)),
            (["CF.MEXISTS", "e1", "foo", "nope"], ints(1, 0)),
            (["CF.EXISTS", "nonexist-key", "blah"], b":0\r\n"),
            (["CF.MEXISTS", "nonexist-key", "blah"], ints(0)),
            (["CF.MEXISTS", "nonexist-key", "a", "b", "c"], ints(0, 0, 0)),
            (["CF.COUNT", "nonexist-key", "blah"], b":0\r\n"),
            (["CF.MEXISTS", "key"], ARITY % b"cf.mexists"),
            (["CF.MEXISTS"], ARITY % b"cf.mexists"),
            (["CF.EXISTS", "key"], ARITY % b"cf.exists"),
            (["CF.EXISTS", "key", "a", "b"], ARITY % b"cf.exists"),
            (["CF.EXISTS"], ARITY % b"cf.exists"),
            (["CF.COUNT", "key"], ARITY % b"cf.count"),
            (["CF.COUNT", "key", "a", "b"], ARITY % b"cf.count"),
            (["CF.INFO", "nosuch"], NOT_FOUND),
        ], "RESP2")
        # CF.ADD never answers 0: four copies of one item count 4 (a
        # bucket's worth: copies share their two buckets) ...
        for i in range(4):
            t.eq(c.cmd("CF.ADD", "copies", "same"), b":1\r\n", "copy %d" % i)
        t.eq(c.cmd("CF.COUNT", "copies", "same"), b":4\r\n")
        t.eq(c.cmd("CF.ADDNX", "copies", "same"), b":0\r\n")
        info = info_dict(t, c, "copies")
        t.eq((info["Number of items inserted"],
              info["Number of items deleted"]), (4, 0))
        # ... and need four CF.DEL
        for i in range(4):
            t.eq(c.cmd("CF.EXISTS", "copies", "same"), b":1\r\n")
            t.eq(c.cmd("CF.DEL", "copies", "same"), b":1\r\n", "del %d" % i)
            t.eq(c.cmd("CF.COUNT", "copies", "same"), b":%d\r\n" % (3 - i))
        t.eq(c.cmd("CF.DEL", "copies", "same"), b":0\r\n")
        t.eq(c.cmd("CF.EXISTS", "copies", "same"), b":0\r\n")
        info = info_dict(t, c, "copies")
        t.eq((info["Number of items inserted"],
              info["Number of items deleted"]), (0, 4))
        # CF.INFO of a reserved filter, as bytes
        info = cf_info(t, c, "cf")
        t.eq([v for n, v in info][2:], [1, 0, 2, 4, 2, 500],
             "CF.INFO cf after two adds and two deletes")
        t.eq(c.cmd("CF.INFO", "cf"), info_bytes(info), "CF.INFO cf bytes")
        # a filter created by CF.ADD: new_filter_* of the config
        t.eq(info_dict(t, c, "f1")["Expansion rate"], 2)
        t.eq(info_dict(t, c, "f1")["Number of items inserted"], 1)
        c.close()


@test
def resp3_after_hello_3_answers_in_redisbloom_2_6_forms(t):
    # RedisBloom 2.6's test_resp3 (test_cf), and the missing-key answers
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port, resp3=True)
        check_cases(t, c, [
            (["CF.RESERVE", "a", "100", "EXPANSION", "0"], b"+OK\r\n"),
            (["CF.ADD", "a", "3"], b"#t\r\n"),
            (["CF.ADD", "a", "4"], b"#t\r\n"),
            (["CF.ADDNX", "a", "4"], b"#f\r\n"),
            (["CF.ADDNX", "a", "9"], b"#t\r\n"),
            (["CF.INSERT", "a", "ITEMS", "4", "5"], bools(1, 1)),
            (["CF.INSERTNX", "a", "ITEMS", "4", "6"], ints(0, 1)),
            (["CF.DEL", "a", "3"], b"#t\r\n"),
            (["CF.DEL", "a", "3"], b"#f\r\n"),
            (["CF.EXISTS", "a", "3"], b"#f\r\n"),
            (["CF.EXISTS", "a", "4"], b"#t\r\n"),
            (["CF.MEXISTS", "a", "4", "3"], bools(1, 0)),
            (["CF.COUNT", "a", "3"], b":0\r\n"),
            (["CF.COUNT", "a", "4"], b":2\r\n"),
            (["CF.EXISTS", "nosuch", "x"], b"#f\r\n"),
            (["CF.MEXISTS", "nosuch", "x", "y"], bools(0, 0)),
            (["CF.COUNT", "nosuch", "x"], b":0\r\n"),
            # errors are the same in both protocols
            (["CF.DEL", "nosuch", "x"], b"-Not found\r\n"),
            (["CF.INFO", "nosuch"], NOT_FOUND),
            (["CF.INSERT", "nosuch", "NOCREATE", "ITEMS", "x"], NOT_FOUND),
            (["CF.RESERVE", "a", "100"], b"-ERR item exists\r\n"),
            (["CF.RESERVE", "b", "1"], CAP_SMALL),
            (["CF.INSERT", "b", "ITEMS"], ARITY % b"cf.insert"),
        ], "RESP3")
        info = cf_info(t, c, "a")
        t.eq([v for n, v in info][2:], [1, 5, 1, 4, 0, 500], "CF.INFO a")
        t.eq(c.cmd("CF.INFO", "a"), info_bytes(info, resp3=True),
             "CF.INFO in RESP3: a map")
        t.eq(c.cmd("HELLO", "2")[:1], b"*", "HELLO 2")
        t.eq(c.cmd("CF.ADDNX", "a", "4"), b":0\r\n", "back in RESP2")
        t.eq(c.cmd("CF.INFO", "a"), info_bytes(info), "CF.INFO back in RESP2")
        c.close()


@test
def a_fixed_filter_that_is_full_answers_as_redisbloom(t):
    # RedisBloom's test_expansion_0: CF.ADD "Filter is full", CF.INSERT -1
    # for each item it has no room for, in RESP2 and RESP3
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        c3 = RespBytes(s.port, resp3=True)
        t.eq(c.cmd("CF.RESERVE", "fix", "100", "EXPANSION", "0"), b"+OK\r\n")
        took, refused = fill_fixed(t, c, "fix")
        t.ok(len(took) >= 1, "fix took %d keys" % len(took))
        held = took[0]
        # the refused item changed nothing: refused again, every time
        check_cases(t, c, [
            (["CF.ADD", "fix", refused], FULL),
            (["CF.INSERT", "fix", "ITEMS", refused, refused], ints(-1, -1)),
            (["CF.INSERTNX", "fix", "ITEMS", held, refused], ints(0, -1)),
            (["CF.ADDNX", "fix", held], b":0\r\n"),
            (["CF.EXISTS", "fix", refused], b":0\r\n"),
        ], "full, RESP2")
        check_cases(t, c3, [
            (["CF.ADD", "fix", refused], FULL),
            (["CF.INSERT", "fix", "ITEMS", refused], bools(0)),
            (["CF.INSERTNX", "fix", "ITEMS", held, refused], ints(0, -1)),
            (["CF.ADDNX", "fix", held], b"#f\r\n"),
        ], "full, RESP3")
        info = info_dict(t, c, "fix")
        t.eq((info["Number of filters"], info["Number of items inserted"],
              info["Expansion rate"]), (1, len(took), 0), "CF.INFO fix")
        # a delete makes room for the item deleted (its bucket has a free
        # slot again)
        t.eq(c.cmd("CF.DEL", "fix", held), b":1\r\n")
        t.eq(c.cmd("CF.ADD", "fix", held), b":1\r\n", "re-add after delete")
        t.eq(c.cmd("CF.EXISTS", "fix", held), b":1\r\n")
        t.eq(info_dict(t, c, "fix")["Number of items inserted"], len(took))
        # every key taken is still there
        t.eq(c.cmd("CF.MEXISTS", "fix", *took), ints(*[1] * len(took)))
        # redis-py: the error raises, CF.INSERT's -1 is a list element
        r = redis.Redis(port=s.port)
        try:
            r.cf().add("fix", refused)
            t.ok(False, "CF.ADD on a full filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "Filter is full")
        t.eq(r.cf().insert("fix", [refused]), [-1])
        t.eq(r.cf().insertnx("fix", [held, refused]), [0, -1])
        c.close()
        c3.close()


@test
def growing_filters_take_every_key_and_forget_only_the_one_asked(t):
    # keys recorded only when absent (CF.INSERTNX, as SEEN records them):
    # forgetting one never forgets another, in a grown filter too
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        n, rate = 1000, 0.001
        bound = n * rate + 3 * math.sqrt(n * rate * (1 - rate))
        for name, exp in (("g1", "1"), ("g2", "2"), ("g4", "4")):
            t.eq(c.cmd("CF.RESERVE", name, "64", "EXPANSION", exp), b"+OK\r\n")
            keys = [str(i) for i in range(n)]
            recorded = []
            for i in range(0, n, 100):
                got = c.cmd("CF.INSERTNX", name, "ITEMS", *keys[i:i + 100])
                answers = got.split(b"\r\n")[1:-1]
                t.eq(len(answers), 100, "%s: CF.INSERTNX from %d" % (name, i))
                t.ok(set(answers) <= {b":1", b":0"}, "%s: %r" % (name, got))
                recorded += [k for k, a in zip(keys[i:i + 100], answers)
                             if a == b":1"]
            # a key answered 0 was a false positive: few of them
            t.ok(n - len(recorded) <= bound, "%s: %d of %d keys taken for "
                 "held (bound %.1f)" % (name, n - len(recorded), n, bound))
            t.eq(c.cmd("CF.MEXISTS", name, *keys), ints(*[1] * n),
                 "%s: every key found" % name)
            info = info_dict(t, c, name)
            t.eq((info["Number of items inserted"], info["Expansion rate"]),
                 (len(recorded), int(exp)), "CF.INFO %s" % name)
            t.ok(info["Number of filters"] > 1, "%s grew: %d filters"
                 % (name, info["Number of filters"]))
            # forgetting half of them leaves the other half
            gone, kept = recorded[::2], recorded[1::2]
            for k in gone:
                t.eq(c.cmd("CF.DEL", name, k), b":1\r\n", "%s del %s"
                     % (name, k))
            t.eq(c.cmd("CF.MEXISTS", name, *kept), ints(*[1] * len(kept)),
                 "%s: the other half found" % name)
            info = info_dict(t, c, name)
            t.eq((info["Number of items inserted"],
                  info["Number of items deleted"]), (len(kept), len(gone)),
                 name)
            # and they can be recorded again
            got = c.cmd("CF.INSERTNX", name, "ITEMS", *gone)
            t.ok(got.count(b":1\r\n") >= len(gone) - bound,
                 "%s: forgotten keys recorded again: %d of %d"
                 % (name, got.count(b":1\r\n"), len(gone)))
        t.ok(info_dict(t, c, "g4")["Size"] > 0, "Size")
        c.close()


@test
def wrong_types_both_ways_as_redisbloom(t):
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        check_cases(t, c, [
            (["BF.RESERVE", "bf", "0.001", "1000"], b"+OK\r\n"),
            (["BF.ADD", "bf", "x"], b":1\r\n"),
            (["CF.RESERVE", "cf", "1000"], b"+OK\r\n"),
            (["CF.ADD", "cf", "x"], b":1\r\n"),
            # CF.* on a Bloom filter
            (["CF.ADD", "bf", "x"], WRONGTYPE),
            (["CF.ADDNX", "bf", "x"], WRONGTYPE),
            (["CF.INSERT", "bf", "ITEMS", "x"], WRONGTYPE),
            (["CF.INSERTNX", "bf", "NOCREATE", "ITEMS", "x"], WRONGTYPE),
            (["CF.RESERVE", "bf", "1000"], WRONGTYPE),
            (["CF.INFO", "bf"], WRONGTYPE),
            (["CF.EXISTS", "bf", "x"], b":0\r\n"),
            (["CF.MEXISTS", "bf", "x", "y"], ints(0, 0)),
            (["CF.COUNT", "bf", "x"], b":0\r\n"),
            (["CF.DEL", "bf", "x"], b"-Not found\r\n"),
            # argument errors come before the key is looked at
            (["CF.RESERVE", "bf", "str"], b"-Bad capacity\r\n"),
            (["CF.INSERT", "bf", "CAPACITY", "1", "ITEMS", "x"], CAP_SMALL),
            # BF.* on a cuckoo filter
            (["BF.ADD", "cf", "x"], WRONGTYPE),
            (["BF.MADD", "cf", "x", "y"], WRONGTYPE),
            (["BF.INSERT", "cf", "ITEMS", "x"], WRONGTYPE),
            (["BF.RESERVE", "cf", "0.01", "100"], WRONGTYPE),
            (["BF.INFO", "cf"], WRONGTYPE),
            (["BF.CARD", "cf"], WRONGTYPE),
            (["BF.EXISTS", "cf", "x"], b":0\r\n"),
            (["BF.MEXISTS", "cf", "x", "y"], ints(0, 0)),
            # both unchanged
            (["BF.EXISTS", "bf", "x"], b":1\r\n"),
            (["CF.COUNT", "cf", "x"], b":1\r\n"),
            (["TYPE", "cf"], b"+MBbloomCF\r\n"),
            (["TYPE", "bf"], b"+MBbloom--\r\n"),
        ], "wrong types")
        c3 = RespBytes(s.port, resp3=True)
        check_cases(t, c3, [
            (["CF.ADD", "bf", "x"], WRONGTYPE),
            (["CF.EXISTS", "bf", "x"], b"#f\r\n"),
            (["CF.MEXISTS", "bf", "x"], bools(0)),
            (["BF.ADD", "cf", "x"], WRONGTYPE),
            (["BF.EXISTS", "cf", "x"], b"#f\r\n"),
        ], "wrong types, RESP3")
        c.close()
        c3.close()


@test
def set_commands_and_the_line_protocol_work_on_a_cuckoo_filter(t):
    filters = """
[filter.default]
type = cuckoo
capacity = 10000
error_rate = 0.001
"""
    with Server(t, server_extra=SERVER, filters=filters) as s:
        c = RespBytes(s.port)
        lc = s.client()
        url = "https://example.com/a"
        check_cases(t, c, [
            (["TYPE", "default"], b"+MBbloomCF\r\n"),
            (["SETNX", url, "1"], b":1\r\n"),
            (["SETNX", url, "1"], b":0\r\n"),
            (["CF.EXISTS", "default", url], b":1\r\n"),
            (["CF.COUNT", "default", url], b":1\r\n"),
            (["SADD", "default", "m1", "m2", "m1"], b":2\r\n"),
            (["SADD", "default", "m1"], b":0\r\n"),
            (["SISMEMBER", "default", "m1"], b":1\r\n"),
            (["SISMEMBER", "default", "m3"], b":0\r\n"),
            (["SMISMEMBER", "default", "m1", "m2", "m3"], ints(1, 1, 0)),
            (["CF.COUNT", "default", "m1"], b":1\r\n"),
            (["SCARD", "default"], b":3\r\n"),
            # SADD and SETNX record a key only when absent; CF.ADD always
            (["CF.ADD", "default", "m1"], b":1\r\n"),
            (["CF.COUNT", "default", "m1"], b":2\r\n"),
            (["SADD", "default", "m1"], b":0\r\n"),
            (["CF.COUNT", "default", "m1"], b":2\r\n"),
        ], "set commands")
        t.eq(lc.cmd("SEEN %s" % url), "1", "SEEN of a SETNX key")
        t.eq(lc.cmd("SEEN default m2"), "1")
        t.eq(lc.cmd("CHECK default m4"), "0")
        t.eq(lc.cmd("SEEN default m4"), "0")
        t.eq(c.cmd("CF.EXISTS", "default", "m4"), b":1\r\n")
        # CF.DEL forgets: the crawler may fetch it again
        t.eq(c.cmd("CF.DEL", "default", url), b":1\r\n")
        t.eq(lc.cmd("CHECK %s" % url), "0", "CHECK after CF.DEL")
        t.eq(c.cmd("SETNX", url, "1"), b":1\r\n", "SETNX after CF.DEL")
        t.eq(lc.cmd("SEEN %s" % url), "1")
        info = info_dict(t, c, "default")
        t.eq((info["Number of items inserted"],
              info["Number of items deleted"]), (5, 1), "CF.INFO default")
        lc.close()
        c.close()


@test
def false_positive_rate_stays_under_the_rate_asked_for(t):
    # new_filter_error_rate = 0.01 for CF.RESERVE's filters; 3 sigma of
    # margin over the rate
    with Server(t, server_extra=SERVER_FP) as s:
        c = RespBytes(s.port)
        added, probes, rate = 2000, 10000, 0.01
        bound = probes * rate + 3 * math.sqrt(probes * rate * (1 - rate))
        for name, cap, args in (("fixed", 2200, ["EXPANSION", "0"]),
                                ("grown", 250, [])):
            t.eq(c.cmd("CF.RESERVE", name, cap, *args), b"+OK\r\n")
            for i in range(0, added, 500):
                t.eq(c.cmd("CF.INSERT", name, "ITEMS",
                           *range(i, i + 500)), ints(*[1] * 500),
                     "%s: CF.INSERT from %d" % (name, i))
            got = c.cmd("CF.MEXISTS", name, *range(added, added + probes))
            fp = got.count(b":1\r\n")
            t.ok(fp <= bound, "%s: %d false positives in %d (bound %.0f)"
                 % (name, fp, probes, bound))
            diag("%s: %d false positives in %d probes" % (name, fp, probes))
            t.eq(c.cmd("CF.MEXISTS", name, *range(added)),
                 ints(*[1] * added), "%s: every added item is found" % name)
        c.close()


@test
def cuckoo_filters_survive_a_restart_and_a_reload(t):
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        check_cases(t, c, [
            (["CF.RESERVE", "p", "1000", "MAXITERATIONS", "10", "EXPANSION",
              "4"], b"+OK\r\n"),
            (["CF.ADD", "p", "a"], b":1\r\n"),
            (["CF.ADD", "p", "a"], b":1\r\n"),
            (["CF.ADD", "p", "b"], b":1\r\n"),
            (["CF.DEL", "p", "b"], b":1\r\n"),
            (["CF.RESERVE", "q", "64", "EXPANSION", "0"], b"+OK\r\n"),
            (["CF.INSERT", "q", "ITEMS", "x", "y", "z"], ints(1, 1, 1)),
            (["CF.ADD", "auto", "k"], b":1\r\n"),
        ], "before")
        names = ["p", "q", "auto"]
        before = [c.cmd("CF.INFO", n) for n in names]
        t.eq(info_dict(t, c, "p")["Max iterations"], 10)
        c.close()
        s.stop()
        s.start()
        c = RespBytes(s.port)
        t.eq([c.cmd("CF.INFO", n) for n in names], before, "after restart")
        check_cases(t, c, [
            (["TYPE", "p"], b"+MBbloomCF\r\n"),
            (["CF.COUNT", "p", "a"], b":2\r\n"),
            (["CF.MEXISTS", "q", "x", "y", "z"], ints(1, 1, 1)),
            (["CF.EXISTS", "auto", "k"], b":1\r\n"),
            (["BF.ADD", "q", "w"], WRONGTYPE),
        ], "after restart")
        # the reload is awaited (its log line), not guessed at by a sleep:
        # the checks below must see the reloaded server
        reloads = s.read_log().count("reloaded ")
        s.send_signal(signal.SIGHUP)
        t.ok(wait_until(lambda: s.read_log().count("reloaded ") > reloads,
                        timeout=10), "no 'reloaded' in the log 10 s after "
             "SIGHUP:\n" + s.read_log()[-2000:])
        line = s.client()
        t.eq(line.info()["last_reload_status"], "ok", "last_reload_status")
        line.close()
        t.eq([c.cmd("CF.INFO", n) for n in names], before, "after SIGHUP")
        t.eq(c.cmd("CF.COUNT", "p", "a"), b":2\r\n")
        c.close()


@test
def redis_py_cf_calls_work(t):
    with Server(t, server_extra=SERVER) as s:
        r = redis.Redis(port=s.port)
        cf = r.cf()
        t.eq(cf.create("py", 1000), True)
        t.eq(cf.create("pyx", 1000, expansion=4, bucket_size=2,
                       max_iterations=30), True)
        try:
            cf.create("py", 1000)
            t.ok(False, "create of an existing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "item exists")
        try:
            cf.create("tiny", 1)
            t.ok(False, "create of capacity 1 must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "Capacity must be at least (BucketSize * 2)")
        t.eq(cf.add("py", "x"), 1)
        t.eq(cf.add("py", "x"), 1)
        t.eq(cf.count("py", "x"), 2)
        t.eq(cf.addnx("py", "x"), 0)
        t.eq(cf.addnx("py", "y"), 1)
        t.eq(cf.insert("py", ["a", "b"]), [1, 1])
        t.eq(cf.insertnx("py", ["a", "c"]), [0, 1])
        t.eq(cf.insert("pyi", ["a"], capacity=100), [1])
        t.eq(cf.insert("pyi", ["b"], nocreate=True), [1])
        try:
            cf.insert("nosuch", ["a"], nocreate=True)
            t.ok(False, "insert NOCREATE of a missing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "not found")
        t.eq(cf.exists("py", "y"), 1)
        t.eq(cf.exists("nosuch", "y"), 0)
        t.eq(cf.mexists("py", "x", "a", "c"), [1, 1, 1])
        t.eq(cf.delete("py", "x"), 1)
        t.eq(cf.count("py", "x"), 1)
        try:
            cf.delete("nosuch", "x")
            t.ok(False, "delete on a missing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "Not found")
        info = cf.info("py")
        t.eq((info.filterNum, info.insertedNum, info.deletedNum,
              info.bucketSize, info.expansionRate, info.maxIteration),
             (1, 5, 1, 4, 2, 500))
        t.ok(info.size > 0 and info.bucketNum > 0, "Size and buckets")
        info = cf.info("pyx")
        t.eq((info.expansionRate, info.maxIteration, info.bucketSize),
             (4, 30, 4))
        try:
            cf.info("nosuch")
            t.ok(False, "info of a missing filter must raise")
        except redis.ResponseError as e:
            t.eq(str(e), "not found")
        p = r.pipeline(transaction=False)
        for i in range(500):
            p.execute_command("CF.ADDNX", "py", "p%d" % (i % 250))
        got = p.execute()
        t.eq(got[250:], [0] * 250, "a pipeline of CF.ADDNX: held ones")
        t.ok(got[:250].count(1) >= 245, "new ones: %d of 250"
             % got[:250].count(1))


@test
def create_filters_off_refuses_implicit_creation_only(t):
    # as BF.ADD / BF.INSERT and BF.RESERVE do
    with Server(t, server_extra=SERVER + "create_filters = off\n") as s:
        c = RespBytes(s.port)
        check_cases(t, c, [
            (["CF.ADD", "nosuch", "x"],
             b"-ERR no such filter 'nosuch' (create_filters is off)\r\n"),
            (["CF.ADDNX", "nosuch", "x"],
             b"-ERR no such filter 'nosuch' (create_filters is off)\r\n"),
            (["CF.INSERT", "nosuch", "ITEMS", "x"],
             b"-ERR no such filter 'nosuch' (create_filters is off)\r\n"),
            (["CF.INSERT", "nosuch", "NOCREATE", "ITEMS", "x"], NOT_FOUND),
            (["CF.INFO", "nosuch"], NOT_FOUND),
            (["CF.RESERVE", "made", "100"], b"+OK\r\n"),
            (["CF.ADD", "made", "x"], b":1\r\n"),
            # and bad names are refused with seend's reason
            (["CF.RESERVE", ".bad", "100"],
             b"-ERR bad filter name (1 to 64 bytes of letters, digits, "
             b"_-.: not starting with '.')\r\n"),
        ], "create_filters off")
        c.close()


@test
def command_info_describes_the_cf_commands(t):
    # arities as RedisBloom checks them, flags as it registers them
    with Server(t, server_extra=SERVER) as s:
        c = RespBytes(s.port)
        for name, arity, flags in (
                ("cf.reserve", -3, b"+write\r\n+denyoom\r\n+module\r\n"),
                ("cf.add", 3, b"+write\r\n+denyoom\r\n+module\r\n"),
                ("cf.addnx", 3, b"+write\r\n+denyoom\r\n+module\r\n"),
                ("cf.insert", -4, b"+write\r\n+denyoom\r\n+module\r\n"),
                ("cf.insertnx", -4, b"+write\r\n+denyoom\r\n+module\r\n"),
                ("cf.exists", 3, b"+readonly\r\n+module\r\n+fast\r\n"),
                ("cf.mexists", -3, b"+readonly\r\n+module\r\n+fast\r\n"),
                ("cf.count", 3, b"+readonly\r\n+module\r\n+fast\r\n"),
                ("cf.del", 3, b"+write\r\n+module\r\n+fast\r\n"),
                ("cf.info", 2, b"+readonly\r\n+module\r\n+fast\r\n")):
            got = c.cmd("COMMAND", "INFO", name.upper())
            want = b"*1\r\n*10\r\n$%d\r\n%s\r\n:%d\r\n*3\r\n" % (
                len(name), name.encode(), arity) + flags + \
                b":1\r\n:1\r\n:1\r\n"
            t.eq(got[:len(want)], want, "COMMAND INFO %s" % name)
            got = c.cmd("COMMAND", "DOCS", name)
            t.ok(b"$6\r\nmodule\r\n$2\r\nbf\r\n" in got,
                 "COMMAND DOCS %s: %r" % (name, got))
        c.close()


if __name__ == "__main__":
    run()
