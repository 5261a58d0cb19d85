#!/usr/bin/env python3
"""Emptying a filter durably (DEL of a config-file filter, line RESET):
the journal's reset record ('E', journal.h) on real daemons.

Until the DEL/RESET handlers call persist_filter_reset, the reset records
are written into a segment here, as the daemon writes them (a record of
100 bytes: the name, the seed before, the new seed), and the daemon's
replay is checked: keys before the reset forgotten, keys after it kept,
a snapshot older than the reset emptied and one taken after it left
alone, a window's filter, damage. The end-to-end cases (RESET, DEL, then
kill -9) run once the line RESET answers OK, and are skipped before.

CHECK of a key the filter does not hold may answer 1 (a false positive,
at most at the error rate 0.001): counts of forgotten keys allow that.
"""
import ctypes
import math
import os
import random
import re
import socket
import struct
import time

from seendtest import *

ERROR_RATE = 0.001
_xx = ctypes.CDLL("libxxhash.so.0")
_xx.XXH3_64bits.restype = ctypes.c_uint64
_xx.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_xx.XXH3_64bits_withSeed.restype = ctypes.c_uint64
_xx.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.c_uint64]


def sum32(b):
    return _xx.XXH3_64bits(bytes(b), len(b)) & 0xFFFFFFFF


def key_hash(key, seed):
    """The key's hash in a filter of that seed (normalize off)."""
    k = key.encode()
    return _xx.XXH3_64bits_withSeed(k, len(k), seed)


def rec_name(slot, name, seed):
    r = bytearray(84)
    r[0], r[1] = 0x4E, 84
    struct.pack_into("<HB", r, 2, slot, len(name))
    struct.pack_into("<Q", r, 8, seed)
    r[16:16 + len(name)] = name.encode()
    struct.pack_into("<I", r, 80, sum32(r[:80]))
    return bytes(r)


def rec_batch(slot, hashes, ms):
    body = b"".join(struct.pack("<Q", h) for h in hashes)
    r = bytearray(24)
    r[0], r[1] = 0x42, 24
    struct.pack_into("<HIQI", r, 2, slot, len(hashes), ms, sum32(body))
    struct.pack_into("<I", r, 20, sum32(r[:20]))
    return bytes(r) + body


def rec_reset(name, old, new, ms):
    r = bytearray(100)
    r[0], r[1] = 0x45, 100
    r[4] = len(name)
    struct.pack_into("<QQQ", r, 8, old, new, ms)
    r[32:32 + len(name)] = name.encode()
    struct.pack_into("<I", r, 96, sum32(r[:96]))
    return bytes(r)


def segments(d):
    return sorted(f for f in os.listdir(d)
                  if re.fullmatch(r"journal\.[0-9a-f]{16}", f))


def journal_seed(path, name):
    """The seed of the last name record of name in a version 3 segment."""
    with open(path, "rb") as f:
        data = f.read()
    off, seed = 40, None
    while off < len(data):
        t = data[off]
        if t == 0x4E:
            n = data[off + 4]
            if data[off + 16:off + 16 + n] == name.encode():
                seed = struct.unpack_from("<Q", data, off + 8)[0]
            off += 84
        elif t == 0x42:
            off += 24 + 8 * struct.unpack_from("<I", data, off + 4)[0]
        elif t == 0x45:
            n = data[off + 4]
            if data[off + 32:off + 32 + n] == name.encode():
                seed = struct.unpack_from("<Q", data, off + 16)[0]
            off += 100
        else:
            raise ValueError("record 0x%02x at %d" % (t, off))
    return seed


def fp_allowed(queries, rate=ERROR_RATE):
    mean = queries * rate
    return int(mean + 3 * math.sqrt(mean) + 3)


def seen_all(c, keys, filt=None):
    pre = "SEEN %s " % filt if filt else "SEEN "
    c.send("".join(pre + k + "\n" for k in keys))
    return [c.line() for k in keys]


def checks(c, keys, filt=None):
    """How many of keys CHECK answers 1 for."""
    pre = "CHECK %s " % filt if filt else "CHECK "
    c.send("".join(pre + k + "\n" for k in keys))
    return sum(1 for k in keys if c.line() == "1")


def held(t, s, keys, what, filt=None):
    c = s.client()
    t.eq(checks(c, keys, filt), len(keys), "%s: all %d held" %
         (what, len(keys)))
    c.close()


def forgotten(t, s, keys, what, filt=None):
    c = s.client()
    n = checks(c, keys, filt)
    c.close()
    t.ok(n <= fp_allowed(len(keys)), "%s: %d of %d still answer 1 (false "
         "positives: at most %d)" % (what, n, len(keys),
                                     fp_allowed(len(keys))))


def urls(prefix, n):
    return ["https://%s.example/%d" % (prefix, i) for i in range(n)]


def append_reset(t, s, name, keys_after=()):
    """After a kill -9: the reset of filter name, and keys_after (hashed
    with the new seed) behind it, at the end of the last segment, as the
    daemon writes them. Returns the new seed."""
    last = os.path.join(s.data_dir, segments(s.data_dir)[-1])
    old = journal_seed(last, name)
    t.ok(old is not None, "the segment names %s" % name)
    new = random.getrandbits(64)
    ms = int(time.time() * 1000)
    data = rec_reset(name, old, new, ms)
    if keys_after:
        data += rec_name(4095, name, new)
        data += rec_batch(4095, [key_hash(k, new) for k in keys_after], ms)
    with open(last, "ab") as f:
        f.write(data)
    return new


@test
def replayed_reset_forgets_the_snapshot_and_keys_before_it_keeps_after(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n")
    s.start()
    c = s.client()
    a, b, cc, d, e = (urls(p, 300) for p in "abcde")
    seen_all(c, a)
    t.eq(c.cmd("SAVE"), "OK", "a snapshot holds a")
    seen_all(c, b)                  # journalled only
    c.close()
    s.kill9()
    append_reset(t, s, "default", keys_after=cc)
    s.start()
    log = s.read_log()
    t.contains(log, "journal: 1 filter reset(s) replayed, 0 already in "
               "the snapshots")
    forgotten(t, s, a, "the snapshot's keys, older than the reset")
    forgotten(t, s, b, "keys journalled before the reset")
    held(t, s, cc, "keys journalled after the reset")
    t.eq(s.client().info("default")["count"], str(len(cc)),
         "count: the keys after the reset")
    # new keys, hashed with the new seed by the daemon, then kill -9: the
    # old snapshot and the reset are still on disk, replayed again
    c = s.client()
    seen_all(c, d)
    c.close()
    s.kill9()
    s.start()
    forgotten(t, s, a + b, "after a second kill -9, before the reset")
    held(t, s, cc + d, "after a second kill -9, after the reset")
    # a snapshot taken after the reset: the reset record is older than it
    c = s.client()
    t.eq(c.cmd("SAVE"), "OK")
    seen_all(c, e)
    c.close()
    s.kill9()
    s.start()
    t.contains(s.read_log(), "1 already in the snapshots")
    forgotten(t, s, a + b, "a snapshot after the reset, before")
    held(t, s, cc + d + e, "a snapshot after the reset, after")
    s.stop()


@test
def replayed_reset_of_a_filter_with_a_window(t):
    filters = ("[filter.default]\ncapacity = 100000\n"
               "[filter.win]\ncapacity = 100000\nexpire = 1h\n")
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n",
               filters=filters)
    s.start()
    c = s.client()
    old, new, other = urls("old", 200), urls("new", 200), urls("other", 50)
    seen_all(c, old, "win")
    seen_all(c, other)
    t.eq(c.cmd("SAVE"), "OK")
    c.close()
    s.kill9()
    append_reset(t, s, "win")
    s.start()
    c = s.client()
    info = c.info("win")
    t.eq((info["count"], info["slices"]), ("0", "0"),
         "emptied: no slice until a key opens the window's period")
    got = seen_all(c, new, "win")
    t.ok(got.count("1") <= fp_allowed(len(new)), "new keys are new")
    t.eq(c.info("win")["slices"], "1", "the first key opened a period")
    c.close()
    forgotten(t, s, old, "the window's keys", "win")
    held(t, s, other, "another filter is untouched")
    s.kill9()
    s.start()
    forgotten(t, s, old, "after kill -9", "win")
    held(t, s, [k for k, g in zip(new, got) if g == "0"], "after kill -9",
         "win")
    s.stop()


@test
def reset_of_a_filter_the_config_no_longer_has_is_skipped(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n")
    s.start()
    c = s.client()
    keys = urls("kept", 100)
    seen_all(c, keys)
    c.close()
    s.kill9()
    last = os.path.join(s.data_dir, segments(s.data_dir)[-1])
    with open(last, "ab") as f:
        f.write(rec_reset("gone", 1, 2, int(time.time() * 1000)))
    s.start()
    t.contains(s.read_log(), "filter 'gone', which the configuration no "
               "longer has")
    held(t, s, keys, "the configured filter")
    s.stop()


@test
def a_damaged_reset_record_stops_the_start_and_changes_nothing(t):
    s = Server(t, "journal = everysec\nsnapshot_interval = 1h\n")
    s.start()
    c = s.client()
    seen_all(c, urls("x", 50))
    c.close()
    s.kill9()
    last = os.path.join(s.data_dir, segments(s.data_dir)[-1])
    size = os.path.getsize(last)
    seed = journal_seed(last, "default")
    rec = bytearray(rec_reset("default", seed, seed + 1, 1))
    rec[16] ^= 0x01                 # the new seed: fails its checksum
    more = urls("y", 10)
    with open(last, "ab") as f:
        f.write(bytes(rec) + rec_batch(4095, [1], 1))
    with open(last, "rb") as f:
        before = f.read()
    t.eq(s.start(expect_fail=True), 1, "exit status on damage")
    log = s.read_log()
    t.contains(log, "record fails its checksum at byte offset %d" % size)
    with open(last, "rb") as f:
        t.ok(f.read() == before, "the segment is left as it was")


# ---- end to end, once RESET and DEL call persist_filter_reset ----

def reset_works(s):
    c = s.client()
    r = c.cmd("RESET nosuchfilter")
    r2 = c.cmd("RESET default")
    c.close()
    return r2 == "OK"


def resp(c, *args):
    c.send("*%d\r\n" % len(args) + "".join(
        "$%d\r\n%s\r\n" % (len(a.encode()), a) for a in args))
    return c.line()


def end_to_end(t, mode):
    s = Server(t, "journal = %s\nsnapshot_interval = 1h\n" % mode)
    s.start()
    if not reset_works(s):
        print("# skipped: RESET does not empty a filter yet")
        s.stop()
        return
    c = s.client()
    old, new = urls("old", 500), urls("new", 500)
    seen_all(c, old)
    t.eq(c.cmd("SAVE"), "OK", "a snapshot with the keys")
    seen_all(c, urls("journalled", 100))
    t.eq(c.cmd("RESET default"), "OK")
    t.eq(c.info("default")["count"], "0", "emptied")
    forgotten(t, s, old, "%s: at once" % mode)
    got = seen_all(c, new)
    t.ok(got.count("1") <= fp_allowed(len(new)), "new keys are new")
    c.close()
    s.kill9()
    s.start()
    forgotten(t, s, old + urls("journalled", 100),
              "%s: after kill -9, before the reset" % mode)
    if mode != "off":
        held(t, s, [k for k, g in zip(new, got) if g == "0"],
             "%s: after kill -9, after the reset" % mode)
    # DEL of a config-file filter over RESP: :1, the filter stays
    c = s.client()
    seen_all(c, old)
    t.eq(resp(c, "DEL", "default"), ":1", "DEL counts the emptied filter")
    t.eq(c.info("default")["count"], "0", "DEL emptied it")
    c.close()
    s.kill9()
    s.start()
    forgotten(t, s, old, "%s: DEL, then kill -9" % mode)
    s.stop()


@test
def reset_then_kill9_keeps_the_filter_empty_everysec(t):
    end_to_end(t, "everysec")


@test
def reset_then_kill9_keeps_the_filter_empty_always(t):
    end_to_end(t, "always")


@test
def reset_then_kill9_keeps_the_filter_empty_journal_off(t):
    end_to_end(t, "off")


if __name__ == "__main__":
    run()
