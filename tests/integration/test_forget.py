"""
Cuckoo filters and FORGET on real daemons (INTERFACE.md, "Filters that can
forget a key"): a million keys recorded and half of them forgotten, in a
fixed filter and in one grown to several sub-filters; the false-positive
rate on fresh keys at 50 % and 100 % of a fixed filter and at 10x capacity
of a growing one; a full fixed filter's refusals; kill -9 after forgets,
with and without a snapshot in between; the config and protocol errors.

What is asserted exactly, and what within a bound:

- A key whose SEEN answered 0 is recorded. Until it is forgotten, CHECK and
  FORGET find it: a recorded key answering CHECK 0 or FORGET 0 is a false
  negative, never allowed, however many other keys were forgotten.
- Only recorded keys are forgotten here. A key whose first SEEN answered 1
  was a false positive and was not recorded: forgetting it would take
  another key's fingerprint with it (as RedisBloom warns for CF.DEL).
- A forgotten key answers CHECK 0, and a second FORGET 0, except with the
  false-positive probability: at most error_rate * n + 3 standard
  deviations of a binomial count over the n keys asked.
- Fresh keys (never sent) answer CHECK 1 at a measured rate at most
  error_rate + 3 sigma, sigma = sqrt(p (1 - p) / probes).
"""
import math
import os
import random
import subprocess
import threading

from seendtest import *

# under valgrind everything is ~30x slower: smaller filters, same checks
SCALE = 1 if not WRAPPER else 0.05


def n(x):
    return max(int(x * SCALE), 1)


def diag_lines(msg):
    for l in msg.splitlines():
        print("# " + l, flush=True)


def pipeline(c, lines, chunk=20000):
    """Sends request lines, chunk at a time, and returns every reply line
    (str, without CRLF). Reads replies in bulk: a reply line holds no
    bare LF, so counting LFs counts replies."""
    out = []
    for i in range(0, len(lines), chunk):
        part = lines[i:i + chunk]
        c.send("".join(l + "\n" for l in part))
        need = len(part)
        buf = c.buf
        have = buf.count(b"\n")
        while have < need:
            data = c.s.recv(1 << 20)
            if not data:
                raise Failed("the connection closed after %d of %d replies"
                             " (%r)" % (have, need, buf[-200:]))
            have += data.count(b"\n")
            buf += data
        parts = buf.split(b"\r\n", need)
        c.buf = parts[need] if len(parts) > need else b""
        out += [p.decode(errors="replace") for p in parts[:need]]
    return out


def cmds(c, verb, flt, keys):
    return pipeline(c, ["%s %s %s" % (verb, flt, k) for k in keys])


def keys_of(prefix, count, start=0):
    return ["https://%s.example/p/%d" % (prefix, i)
            for i in range(start, start + count)]


def fp_bound(rate, count):
    """The most false positives an honest filter at rate shows over count
    lookups of keys it does not hold: the mean plus three standard
    deviations of the binomial count (and one, so that a tiny mean does
    not make a single hit a failure)."""
    mean = rate * count
    return mean + 3 * math.sqrt(count * rate * (1 - rate)) + 1


def rate_bound(rate, probes):
    """The highest measured rate allowed: rate + 3 sigma."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / probes)


def record(t, c, flt, keys, rate, what):
    """SEEN of never-sent keys: each answer 0, or 1 for a false positive
    (at most fp_bound of them). Returns the keys answered 0: recorded."""
    got = cmds(c, "SEEN", flt, keys)
    odd = [(k, g) for k, g in zip(keys, got) if g not in ("0", "1")]
    t.ok(not odd, "%s: SEEN of new keys answers 0 or 1; %d others, first "
         "%r" % (what, len(odd), odd[:3]))
    fps = got.count("1")
    t.ok(fps <= fp_bound(rate, len(keys)),
         "%s: %d of %d new keys answered 1 to their first SEEN; at most "
         "%.0f false positives" % (what, fps, len(keys),
                                   fp_bound(rate, len(keys))))
    return [k for k, g in zip(keys, got) if g == "0"]


def all_held(t, c, flt, keys, what):
    """Every key answers CHECK 1: no false negative."""
    got = cmds(c, "CHECK", flt, keys)
    lost = [k for k, g in zip(keys, got) if g != "1"]
    t.ok(not lost, "%s: %d of %d recorded keys do not answer CHECK 1 "
         "(false negatives), first %r, answers %r"
         % (what, len(lost), len(keys), lost[:3],
            sorted(set(g for g in got if g != "1"))[:3]))


def forget_all(t, c, flt, keys, what):
    """FORGET of recorded keys: every one answers 1 (0 would mean the key
    was not held: a false negative)."""
    got = cmds(c, "FORGET", flt, keys)
    bad = [(k, g) for k, g in zip(keys, got) if g != "1"]
    t.ok(not bad, "%s: %d of %d FORGETs of recorded keys did not answer 1, "
         "first %r" % (what, len(bad), len(keys), bad[:3]))


def mostly_gone(t, c, flt, keys, rate, what):
    """Forgotten keys answer CHECK 0 but for false positives."""
    got = cmds(c, "CHECK", flt, keys)
    t.eq(sorted(set(got) - {"0", "1"}), [], "%s: CHECK answers" % what)
    hits = got.count("1")
    t.ok(hits <= fp_bound(rate, len(keys)),
         "%s: %d of %d forgotten keys still answer CHECK 1; false "
         "positives allow %.0f" % (what, hits, len(keys),
                                   fp_bound(rate, len(keys))))
    return hits


def count_of(c, flt):
    return int(c.info(flt)["count"])


def measure_fpr(t, c, flt, prefix, probes, rate, what):
    """CHECK of probes never-sent keys; the measured rate within
    rate + 3 sigma. Returns the measured rate."""
    got = cmds(c, "CHECK", flt, keys_of(prefix, probes))
    t.eq(sorted(set(got) - {"0", "1"}), [], "%s: CHECK answers" % what)
    measured = got.count("1") / probes
    t.ok(measured <= rate_bound(rate, probes),
         "%s: %d false positives in %d fresh keys (%.5f), the bound is "
         "%.5f" % (what, got.count("1"), probes, measured,
                   rate_bound(rate, probes)))
    return measured


def cuckoo(name, capacity, rate, growth="off", extra=""):
    return ("[filter.%s]\ntype = cuckoo\ncapacity = %d\nerror_rate = %s\n"
            "growth = %s\n%s" % (name, capacity, rate, growth, extra))


BLOOM_DEFAULT = "[filter.default]\ncapacity = 100000\nerror_rate = 0.001\n"


def check_cuckoo_info(t, info, what):
    t.eq(info.get("type"), "cuckoo", "%s: INFO type" % what)
    for field in ("count", "slices", "estimated_fp_rate", "fill_ratio"):
        t.ok(field in info, "%s: INFO has %s: %r" % (what, field,
                                                    sorted(info)))
    float(info["estimated_fp_rate"])
    float(info["fill_ratio"])


# ---- the protocol ----

@test
def forget_answers_1_then_0_counts_down_and_bloom_filters_refuse_it(t):
    filters = (cuckoo("default", 1000, 0.01) +
               "[filter.bl]\ncapacity = 1000\nerror_rate = 0.01\n"
               "prefixes = https://bloom.\n")
    with Server(t, filters=filters) as s:
        c = s.client()
        info = c.info("default")
        check_cuckoo_info(t, info, "empty cuckoo filter")
        t.eq(info["count"], "0", "empty")
        t.eq(c.info("bl").get("type"), "bloom", "INFO type of a bloom "
             "filter")
        k = "https://a.example/1"
        t.eq(c.cmd("SEEN " + k), "0", "SEEN routed to the cuckoo filter")
        t.eq(c.cmd("CHECK default " + k), "1", "held")
        t.eq(count_of(c, "default"), 1, "count 1")
        t.eq(c.cmd("FORGET default " + k), "1", "FORGET of a held key")
        t.eq(count_of(c, "default"), 0, "count goes down by one")
        # the table is empty: nothing can match
        t.eq(c.cmd("CHECK default " + k), "0", "forgotten")
        t.eq(c.cmd("FORGET default " + k), "0", "FORGET again: not held")
        t.eq(c.cmd("FORGET " + k), "0", "routed FORGET: not held")
        t.eq(count_of(c, "default"), 0, "a FORGET answered 0 changes "
             "nothing")
        t.eq(c.cmd("SEEN default " + k), "0", "recorded again: new")
        t.eq(c.cmd("SEEN default " + k), "1", "then seen")
        t.eq(c.cmd("forget " + k), "1", "command name in lower case, "
             "routed by the key")
        t.eq(count_of(c, "default"), 0, "count")
        # pipelined, in order
        c.send("SEEN default x1\nSEEN default x2\nFORGET default x1\n"
               "CHECK default x1\nCHECK default x2\nFORGET default x1\n"
               "FoRgEt default x2\nCHECK default x2\n")
        t.eq([c.line() for _ in range(8)],
             ["0", "0", "1", "0", "1", "0", "1", "0"],
             "a pipeline of SEEN, FORGET and CHECK")
        # a bloom filter cannot forget; named or routed, it keeps the key
        t.eq(c.cmd("SEEN bl https://bloom.example/1"), "0", "bloom SEEN")
        t.eq(c.cmd("FORGET bl https://bloom.example/1"),
             "ERR bl cannot forget keys (type = bloom)", "FORGET on bloom")
        t.eq(c.cmd("FORGET https://bloom.example/1"),
             "ERR bl cannot forget keys (type = bloom)",
             "FORGET routed to a bloom filter")
        t.eq(c.cmd("CHECK bl https://bloom.example/1"), "1",
             "the bloom filter still holds the key")
        # errors keep the connection
        for req in ("FORGET", "FORGET nosuch k", "FORGET default a b"):
            r = c.cmd(req)
            t.ok(r.startswith("ERR "), "%r: %r" % (req, r))
        t.eq(c.cmd("PING"), "PONG", "the connection goes on")


@test
def expire_with_type_cuckoo_is_a_config_error(t):
    filters = BLOOM_DEFAULT + cuckoo("cf", 1000, 0.01, extra="expire = 1h\n")
    s = Server(t, filters=filters)
    r = subprocess.run([SEEND, "-t", "-c", s.conf], capture_output=True,
                       text=True)
    out = r.stdout + r.stderr
    t.eq(r.returncode, 1, "seend -t exit status: %s" % out)
    t.contains(out, "expire", "seend -t names expire")
    t.contains(out, "cuckoo", "seend -t names type = cuckoo")
    t.ok(s.start(expect_fail=True) != 0, "seend refuses to start")
    log = s.read_log()
    t.contains(log, "expire", "the log names expire")
    t.contains(log, "cuckoo", "the log names type = cuckoo")
    # and without expire the same file starts
    s.write_config(filters=BLOOM_DEFAULT + cuckoo("cf", 1000, 0.01))
    s.start()
    t.eq(s.client().cmd("SEEN cf k"), "0", "a cuckoo filter without expire")
    t.eq(s.stop(), 0, "stops")


# ---- a million keys, half forgotten ----

def million_forgotten(t, s, flt, rate, total, seed, what):
    """Records total fresh keys, forgets a random half of those recorded,
    then checks both halves exactly (kept) and within the bound
    (forgotten). Returns (client, kept, forgotten, recorded)."""
    rnd = random.Random(seed)
    c = s.client(timeout=60)
    recorded = record(t, c, flt, keys_of(flt + "-m", total), rate, what)
    t.eq(count_of(c, flt), len(recorded), "%s: count = keys answered 0"
         % what)
    order = list(recorded)
    rnd.shuffle(order)
    half = len(order) // 2
    gone, kept = order[:half], order[half:]
    forget_all(t, c, flt, gone, what)
    t.eq(count_of(c, flt), len(kept), "%s: count down by one per forget"
         % what)
    all_held(t, c, flt, kept, "%s, after %d forgets" % (what, len(gone)))
    mostly_gone(t, c, flt, gone, rate, what)
    return c, kept, gone, recorded


@test
def million_keys_half_forgotten_in_a_fixed_filter(t):
    seed = random.randrange(1 << 30)
    diag_lines("random seed %d" % seed)
    total = n(1000000)
    rate = 0.001
    filters = BLOOM_DEFAULT + cuckoo("fixed", int(total * 1.1), rate)
    with Server(t, filters=filters) as s:
        c, kept, gone, _ = million_forgotten(t, s, "fixed", rate, total,
                                             seed, "fixed filter")
        info = c.info("fixed")
        check_cuckoo_info(t, info, "fixed filter")
        t.eq(info["slices"], "1", "a fixed filter is one table")
        # a second FORGET of a forgotten key: 0 but for a false positive
        # (one that answers 1 takes a kept key's fingerprint: last)
        sample = gone[:n(50000)]
        got = cmds(c, "FORGET", "fixed", sample)
        t.ok(got.count("1") <= fp_bound(rate, len(sample)),
             "FORGET of forgotten keys: %d of %d answered 1"
             % (got.count("1"), len(sample)))
        t.eq(sorted(set(got) - {"0", "1"}), [], "FORGET answers")
        diag_lines("%d recorded, %d forgotten; second FORGETs answered 1: "
                   "%d" % (len(kept) + len(gone), len(gone),
                           got.count("1")))


@test
def million_keys_half_forgotten_in_a_filter_grown_to_several_slices(t):
    """Forgetting one key never forgets another, also when a key's
    fingerprint matches in a newer slice too (likely at 1 %: thousands of
    the 500k forgotten keys have such a twin): only its own goes."""
    seed = random.randrange(1 << 30)
    diag_lines("random seed %d" % seed)
    total = n(1000000)
    rate = 0.01
    cap = max(total // 10, 100)     # 1+2+4+8 = 15x: 4 slices at 10x
    filters = BLOOM_DEFAULT + cuckoo("grow", cap, rate, growth="2")
    with Server(t, filters=filters) as s:
        c, kept, gone, _ = million_forgotten(t, s, "grow", rate, total,
                                             seed, "grown filter")
        info = c.info("grow")
        check_cuckoo_info(t, info, "grown filter")
        slices = int(info["slices"])
        t.ok(slices >= 3, "it grew to several slices: %d" % slices)
        # new keys after the forgets (into the newest slice, or a new
        # one), then more forgets across old and new keys
        rnd = random.Random(seed + 1)
        more = record(t, c, "grow", keys_of("grow-more", total // 2), rate,
                      "keys after the forgets")
        pool = kept + more
        rnd.shuffle(pool)
        gone2, kept2 = pool[:len(pool) // 3], pool[len(pool) // 3:]
        forget_all(t, c, "grow", gone2, "second round of forgets")
        t.eq(count_of(c, "grow"), len(kept2), "count after both rounds")
        all_held(t, c, "grow", kept2, "grown filter, after two rounds of "
                 "forgets")
        mostly_gone(t, c, "grow", gone + gone2, rate, "grown filter, both "
                    "rounds")
        # forgotten keys recorded again: 0 but for false positives, and
        # held from then on
        back = record(t, c, "grow", gone[:n(20000)], rate,
                      "forgotten keys recorded again")
        all_held(t, c, "grow", back + kept2, "after recording forgotten "
                 "keys again")
        t.eq(count_of(c, "grow"), len(kept2) + len(back), "count")
        info = c.info("grow")
        diag_lines("grown filter: %s slices, count %s, fill_ratio %s, "
                   "estimated_fp_rate %s" % (info["slices"], info["count"],
                                             info["fill_ratio"],
                                             info["estimated_fp_rate"]))


# ---- the false-positive rate ----

@test
def fpr_of_a_fixed_filter_at_half_and_full_capacity(t):
    cap = n(200000)
    probes = max(n(200000), 20000)
    rate = 0.01
    filters = BLOOM_DEFAULT + cuckoo("fixed", cap, rate)
    with Server(t, filters=filters) as s:
        c = s.client(timeout=60)
        done = 0
        for frac in (0.5, 1.0):
            want = int(cap * frac)
            refused = False
            # SEEN fresh keys until count reaches the fill (first SEENs
            # that are false positives are not counted)
            while count_of(c, "fixed") < want and not refused:
                need = want - count_of(c, "fixed")
                got = cmds(c, "SEEN", "fixed", keys_of("fill", need, done))
                done += need
                refused = "ERR full fixed" in got
                t.eq(sorted(set(got) - {"0", "1", "ERR full fixed"}), [],
                     "SEEN answers")
            got_count = count_of(c, "fixed")
            t.eq(got_count, want, "the filter takes %d keys (%.0f %% of "
                 "its capacity) before refusing any" % (want, frac * 100))
            measured = measure_fpr(t, c, "fixed", "probe%s" % frac, probes,
                                   rate, "fixed filter at %.0f %%"
                                   % (frac * 100))
            info = c.info("fixed")
            check_cuckoo_info(t, info, "fixed filter")
            t.ok(float(info["estimated_fp_rate"]) <= rate,
                 "estimated_fp_rate %s within error_rate"
                 % info["estimated_fp_rate"])
            diag_lines("fixed at %.0f %%: measured %.5f, estimated %s, "
                       "fill_ratio %s" % (frac * 100, measured,
                                          info["estimated_fp_rate"],
                                          info["fill_ratio"]))


@test
def fpr_of_a_growing_filter_at_10x_capacity(t):
    cap = n(50000)
    probes = max(n(200000), 20000)
    rate = 0.01
    filters = BLOOM_DEFAULT + cuckoo("grow", cap, rate, growth="2")
    with Server(t, filters=filters) as s:
        c = s.client(timeout=60)
        recorded = record(t, c, "grow", keys_of("g", cap * 10), rate,
                          "10x capacity")
        info = c.info("grow")
        check_cuckoo_info(t, info, "grown filter")
        t.ok(int(info["slices"]) >= 3, "it grew: %s slices"
             % info["slices"])
        t.eq(int(info["count"]), len(recorded), "count")
        measured = measure_fpr(t, c, "grow", "probe", probes, rate,
                               "growing filter at 10x capacity")
        all_held(t, c, "grow", recorded, "growing filter at 10x")
        diag_lines("10x: %s slices, measured %.5f, estimated %s"
                   % (info["slices"], measured, info["estimated_fp_rate"]))


# ---- a full fixed filter ----

@test
def full_fixed_filter_refuses_with_err_full_never_a_wrong_seen(t):
    cap = 2000
    rate = 0.01
    filters = BLOOM_DEFAULT + cuckoo("fixed", cap, rate)
    with Server(t, filters=filters) as s:
        c = s.client()
        keys = keys_of("full", cap * 3)
        got = cmds(c, "SEEN", "fixed", keys)
        t.eq(sorted(set(got) - {"0", "1", "ERR full fixed"}), [],
             "every reply is 0, 1 or ERR full fixed")
        t.ok("ERR full fixed" in got, "SEEN past capacity: ERR full fixed "
             "(answers: %d 0, %d 1)" % (got.count("0"), got.count("1")))
        first = got.index("ERR full fixed")
        held = [k for k, g in zip(keys, got) if g == "0"]
        refused = [k for k, g in zip(keys, got) if g == "ERR full fixed"]
        fps = [k for k, g in zip(keys, got) if g == "1"]
        t.ok(len(fps) <= fp_bound(rate, len(keys)),
             "first SEENs answered 1: %d" % len(fps))
        t.ok(len(held) >= cap * 0.95, "it took (about) its capacity before"
             " refusing: %d of %d, first refusal at key %d"
             % (len(held), cap, first))
        t.eq(count_of(c, "fixed"), len(held), "count = keys answered 0")
        # every key answered 0 is held, however many were refused
        all_held(t, c, "fixed", held, "full filter")
        t.eq(cmds(c, "SEEN", "fixed", held).count("1"), len(held),
             "SEEN of held keys answers 1 in a full filter")
        # refused keys were not recorded: CHECK 1 only as a false positive,
        # and SEEN of one again is refused unless it is one
        check = cmds(c, "CHECK", "fixed", refused)
        t.ok(check.count("1") <= fp_bound(rate, len(refused)),
             "refused keys answering CHECK 1: %d of %d"
             % (check.count("1"), len(refused)))
        again = cmds(c, "SEEN", "fixed", refused)
        for k, ch, ag in zip(refused, check, again):
            # a false positive answers 1; a key not held is refused again
            # (or, if the table found room for it after all, recorded)
            want = ("1",) if ch == "1" else ("ERR full fixed", "0")
            t.ok(ag in want, "SEEN again of refused key %s (CHECK %s): %r"
                 % (k, ch, ag))
        late = [k for k, ag in zip(refused, again) if ag == "0"]
        held += late
        t.eq(count_of(c, "fixed"), len(held), "refusals change no count")
        all_held(t, c, "fixed", held, "full filter, after SEENs of "
                 "refused keys")
        # forgetting makes room again
        rnd = random.Random(7)
        gone = rnd.sample(held, 100)
        forget_all(t, c, "fixed", gone, "full filter")
        t.eq(count_of(c, "fixed"), len(held) - 100, "count after forgets")
        fresh = [k for k, ch, ag in zip(refused, check, again)
                 if ch == "0" and ag != "0"][:200]
        got2 = cmds(c, "SEEN", "fixed", fresh)
        t.eq(sorted(set(got2) - {"0", "1", "ERR full fixed"}), [],
             "SEEN answers after the forgets")
        took = [k for k, g in zip(fresh, got2) if g == "0"]
        t.ok(len(took) >= 1, "after 100 forgets it takes new keys again")
        gone_set = set(gone)
        kept = [k for k in held if k not in gone_set] + took
        all_held(t, c, "fixed", kept, "full filter after forgets and new "
                 "keys")
        t.eq(count_of(c, "fixed"), len(kept), "count")
        diag_lines("capacity %d: %d taken, first refusal at key %d, %d "
                   "refused (%d taken when sent again), %d taken after 100 "
                   "forgets; INFO state %s"
                   % (cap, len(held), first, len(refused), len(late),
                      len(took), c.info("fixed").get("state")))


# ---- kill -9 after forgets ----

def answers(c, flt, keys):
    """Every CHECK answer and the count: what must survive a crash."""
    return cmds(c, "CHECK", flt, keys), count_of(c, flt)


def same_answers(t, c, flt, keys, before, what):
    after = answers(c, flt, keys)
    t.eq(after[1], before[1], "%s: count" % what)
    diff = [(k, a, b) for k, a, b in zip(keys, before[0], after[0])
            if a != b]
    t.ok(not diff, "%s: %d of %d CHECK answers changed, first (key, "
         "before, after) %r" % (what, len(diff), len(keys), diff[:5]))


@test
def kill9_after_forgets_replays_to_the_same_answers(t):
    """journal = always and no snapshot at all: records, forgets, kill -9;
    the journal alone gives back every answer, fresh keys' too."""
    rate = 0.01
    total = n(200000)
    filters = BLOOM_DEFAULT + cuckoo("cf", max(total // 10, 100), rate,
                                     growth="2")
    s = Server(t, "journal = always\nsnapshot_interval = 0\n",
               filters=filters).start()
    c = s.client(timeout=60)
    rnd = random.Random(11)
    recorded = record(t, c, "cf", keys_of("k", total), rate, "records")
    rnd.shuffle(recorded)
    gone = recorded[:len(recorded) // 2]
    forget_all(t, c, "cf", gone, "forgets")
    probe = keys_of("k", total) + keys_of("fresh", n(50000))
    before = answers(c, "cf", probe)
    slices = c.info("cf")["slices"]
    t.ok(int(slices) >= 3, "several slices: %s" % slices)
    diag_lines("data_dir before kill -9: %s"
               % " ".join(sorted(os.listdir(s.data_dir))))
    s.kill9()
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "after kill -9")
    t.eq(c.info("cf")["slices"], slices, "slices after kill -9")
    # again: more records and forgets on the replayed filter, kill -9
    more = record(t, c, "cf", keys_of("k2", total // 4), rate, "records "
                  "after the restart")
    rest = recorded[len(recorded) // 2:]
    gone2 = rest[:len(rest) // 3] + more[:len(more) // 2]
    forget_all(t, c, "cf", gone2, "forgets after the restart")
    probe += keys_of("k2", total // 4)
    before = answers(c, "cf", probe)
    s.kill9()
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "after a second kill -9")
    # and a clean stop and start (snapshot) keeps them too
    t.eq(s.stop(), 0, "SIGTERM")
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "after SIGTERM and a start")
    t.eq(s.stop(), 0, "SIGTERM")


@test
def kill9_after_forgets_of_keys_a_snapshot_holds(t):
    """records, SAVE, forgets, kill -9: the snapshot has the keys, the
    journal the forgets; the replayed filter answers as before. Then the
    same with forgets on both sides of a second SAVE."""
    rate = 0.01
    total = n(200000)
    filters = BLOOM_DEFAULT + cuckoo("cf", max(total // 10, 100), rate,
                                     growth="2")
    s = Server(t, "journal = always\nsnapshot_interval = 0\n",
               filters=filters).start()
    c = s.client(timeout=60)
    rnd = random.Random(12)
    recorded = record(t, c, "cf", keys_of("k", total), rate, "records")
    t.eq(c.cmd("SAVE"), "OK", "SAVE between the records and the forgets")
    rnd.shuffle(recorded)
    gone = recorded[:len(recorded) // 2]
    forget_all(t, c, "cf", gone, "forgets after the SAVE")
    probe = keys_of("k", total) + keys_of("fresh", n(50000))
    before = answers(c, "cf", probe)
    s.kill9()
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "snapshot + journal of "
                 "forgets, after kill -9")
    kept = recorded[len(recorded) // 2:]
    all_held(t, c, "cf", kept, "kept keys after kill -9")
    # forgets before a SAVE, new keys and forgets after it, kill -9
    forget_all(t, c, "cf", kept[:len(kept) // 4], "forgets before SAVE")
    t.eq(c.cmd("SAVE cf"), "OK", "SAVE cf")
    more = record(t, c, "cf", keys_of("k3", total // 4), rate,
                  "records after the second SAVE")
    forget_all(t, c, "cf", kept[len(kept) // 4:len(kept) // 2] +
               more[::2], "forgets after the second SAVE")
    probe += keys_of("k3", total // 4)
    before = answers(c, "cf", probe)
    s.kill9()
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "forgets on both sides of a "
                 "SAVE, after kill -9")
    all_held(t, c, "cf", kept[len(kept) // 2:] + more[1::2],
             "kept keys after the second kill -9")
    t.eq(s.stop(), 0, "SIGTERM")


@test
def runtime_filters_and_their_keys_outlive_kill9_before_a_snapshot(t):
    """CF.RESERVE (with MAXITERATIONS), BF.RESERVE and a first SADD make
    filters that no snapshot holds yet; their keys and forgets are
    journaled after an 'r' record, so a kill -9 right after loses none;
    one dropped by DEL stays dropped (its 'x' record)."""
    total = n(20000)
    s = Server(t, "journal = always\nsnapshot_interval = 0\n",
               filters=BLOOM_DEFAULT).start()
    r = Resp(s.port)
    t.eq(r.cmd("CF.RESERVE", "cf", str(max(total // 4, 100)),
               "MAXITERATIONS", "20"), "OK", "CF.RESERVE")
    t.eq(r.cmd("BF.RESERVE", "bf", "0.01", str(total)), "OK", "BF.RESERVE")
    t.eq(r.cmd("CF.RESERVE", "gone", "1000"), "OK", "CF.RESERVE gone")
    ks = keys_of("rt", total)
    c = s.client(timeout=60)
    cf = [k for k, a in zip(ks, cmds(c, "SEEN", "cf", ks)) if a == "0"]
    pipeline(c, ["SEEN bf %s" % k for k in ks])
    t.eq(r.cmd("SADD", "set", *ks[:100]), 100, "SADD makes 'set'")
    t.eq(r.cmd("CF.ADD", "gone", "x"), 1, "CF.ADD gone")
    forget_all(t, c, "cf", cf[:len(cf) // 2], "forgets")
    t.eq(r.cmd("DEL", "gone"), 1, "DEL gone")
    before = answers(c, "cf", ks)
    s.kill9()
    s.start()
    r = Resp(s.port)
    c = s.client(timeout=60)
    t.eq(r.cmd("TYPE", "cf"), "MBbloomCF", "cf made again")
    t.eq(r.cmd("TYPE", "gone"), "none", "a dropped filter stays dropped")
    info = r.cmd("CF.INFO", "cf")
    t.eq(info[info.index("Max iterations") + 1], 20, "MAXITERATIONS kept")
    same_answers(t, c, "cf", ks, before, "cf after kill -9")
    t.ok(all(a == "1" for a in cmds(c, "CHECK", "bf", ks)),
         "every bf key after kill -9")
    t.eq(r.cmd("SCARD", "set"), 100, "SCARD set after kill -9")
    t.eq(s.stop(), 0, "SIGTERM")


@test
def snapshot_of_a_big_table_while_it_changes_then_kill9(t):
    """A table of ~40 MB is copied for its snapshot a few MiB per loop
    turn (copy-on-write) while another client records and forgets keys:
    the file is the table as it was at SAVE, the journal holds the rest,
    and after kill -9 every answer is the same."""
    rate = 0.01
    total = n(200000)
    filters = BLOOM_DEFAULT + cuckoo("cf", 30000000 if not WRAPPER else
                                     3000000, rate)
    s = Server(t, "journal = always\nsnapshot_interval = 0\n",
               filters=filters).start()
    c = s.client(timeout=60)
    recorded = record(t, c, "cf", keys_of("k", total), rate, "records")
    other = s.client(timeout=120 * SLOW)
    result = {}

    def save():
        result["save"] = other.cmd("SAVE cf")
    th = threading.Thread(target=save)
    th.start()
    forget_all(t, c, "cf", recorded[::3], "forgets during the SAVE")
    more = record(t, c, "cf", keys_of("k4", total // 2), rate,
                  "records during the SAVE")
    th.join(120 * SLOW)
    t.eq(result.get("save"), "OK", "SAVE cf")
    forget_all(t, c, "cf", more[::5], "forgets after the SAVE")
    probe = keys_of("k", total) + keys_of("k4", total // 2) + \
        keys_of("fresh", n(20000))
    before = answers(c, "cf", probe)
    s.kill9()
    s.start()
    c = s.client(timeout=60)
    same_answers(t, c, "cf", probe, before, "after kill -9")
    t.eq(s.stop(), 0, "SIGTERM")


if __name__ == "__main__":
    run()
