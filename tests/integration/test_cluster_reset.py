#!/usr/bin/python3
"""
Emptying a partitioned filter across a cluster (issue 33; seen-cli(1)
cluster reset, seend(8) CLUSTER RESETPART and PARTSEED): one filter whose
parts live on the nodes owning their slots.

What must hold:
- DEL of the filter on a node holding part of it is refused with a clear
  error naming seen-cli cluster reset, and changes nothing (every URL still
  seen).
- seen-cli cluster reset empties every primary's part (every URL answered
  new again), and every part, replicas' too, hashes with one new seed, the
  same on every node: slots then move onto a node added after the reset
  (whose empty part takes the seed of the slots coming to it), and a
  kill -9 and restart of every node keeps the reset and the keys after it.
- A reset that stopped midway (one part emptied) refuses moves of that
  part's slots into a part of the old seed, and running the reset again
  finishes it; FLUSHALL on every node, as redis-cli --cluster call sends
  it, makes one seed too. Bad RESETPART and PARTSEED requests are refused.
"""
import time

from seendtest import *
from clustertest import *

redis = system_module("redis")

URLS = 3000 if not WRAPPER else 600


def part_of(s):
    """CLUSTER PARTSEED default on s: (its 16 hex digits, "keys" or
    "empty")."""
    got = ask(s, "CLUSTER", "PARTSEED", "default")
    if not isinstance(got, bytes) or len(got.split()) != 2 or \
            len(got.split()[0]) != 16 or \
            got.split()[1] not in (b"keys", b"empty"):
        raise Failed("CLUSTER PARTSEED default on %s: %r" % (s.name, got))
    seed, what = got.decode().split()
    return seed, what


def first_slot(s):
    """The lowest slot s owns in the map it holds."""
    me = myid(s)
    for line in getmap(s).splitlines():
        f = line.split()
        if f[0] == "slots" and f[1] == me:
            return min(int(r.partition("-")[0]) for r in f[2:])
    raise Failed("%s owns no slot" % s.name)


def seed_of(s):
    """The seed of s's part of default."""
    return part_of(s)[0]


def primaries_of(ns):
    """The nodes of ns that are primaries in the map they hold."""
    return [s for s in ns if "role:master" in
            ask(s, "INFO", "replication").decode()]


def own_seen(c, keys):
    """How many of keys EXISTS answers 1 over c, among those its node
    serves; None if it serves none."""
    got = [c.cmd("EXISTS", k) for k in keys]
    own = [x for x in got if not isinstance(x, Err)]
    return sum(own) if own else None


def new_count(ns, keys):
    """How many of keys a fresh RedisCluster client answers new (SETNX 1),
    recording them."""
    rc = client(ns)
    try:
        return sum(record(rc, keys))
    finally:
        rc.close()


@test
def cluster_reset_empties_every_part_into_one_seed(t):
    ns = nodes(t, 4)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    keys = urls("before", URLS)
    t.eq(new_count(ns, keys), len(keys), "every URL new once")
    ps = primaries_of(ns)
    t.eq(len(ps), 2, "two primaries")
    before = {seed_of(s) for s in ns}
    t.eq(len(before), 1, "one seed on every node: %r" % before)

    # DEL is refused where the node holds part of the filter
    rc = client(ns)
    try:
        try:
            got = rc.delete("default")
        except redis.exceptions.ResponseError as e:
            got = str(e)
    finally:
        rc.close()
    t.ok(isinstance(got, str) and "partitioned" in got and
         "seen-cli cluster reset" in got, "DEL default refused: %r" % got)
    for s in ps:
        got = ask(s, "CLUSTER", "RESETPART", "default", "0" * 16)
        t.ok(isinstance(got, Err) and "neither" in got,
             "RESETPART of another seed refused on %s: %r" % (s.name, got))
    t.eq(new_count(ns, keys), 0, "after the refusals every URL is seen")

    out = ok_cli(t, "cluster", "reset", addr(ns[0]), "default", "--yes")
    t.eq(out.count("[OK] default emptied on"), 2,
         "both primaries emptied:\n" + out)
    after = seed_of(ps[0])
    t.ok(after not in before, "a new seed: %s" % after)
    for s in ns:
        t.ok(wait_until(lambda: seed_of(s) == after, timeout=10),
             "%s hashes with the new seed (%s)" % (s.name, seed_of(s)))
    # an emptied part answers new on the replicas too
    for s in ns:
        if s not in ps:
            c = Resp(s.port)
            try:
                t.eq(c.cmd("READONLY"), "OK", "READONLY on " + s.name)
                # its shard's keys (the others' answer MOVED)
                t.ok(wait_until(lambda: own_seen(c, keys[:100]) == 0,
                                timeout=10),
                     "%s forgot the URLs (%r seen)" %
                     (s.name, own_seen(c, keys[:100])))
            finally:
                c.close()
    t.eq(new_count(ns, keys), len(keys), "every URL new again")
    again = urls("after", URLS)
    t.eq(new_count(ns, again), len(again), "new URLs new")

    # a node added after the reset takes the seed of the slots it gets
    extra = nodes(t, 1, name="x")[0]
    ok_cli(t, "cluster", "add-node", addr(extra), addr(ns[0]))
    ok_cli(t, "cluster", "rebalance", addr(ns[0]), "--use-empty-masters",
           "--yes")
    t.ok(slots_of(extra) > 4000, "the new node owns slots: %d" %
         slots_of(extra))
    t.eq(seed_of(extra), after, "the new node's part took the seed")
    all_nodes = ns + [extra]
    seen_all(t, all_nodes, keys + again, "after the rebalance")

    # kill -9 of every node and a restart keep the reset and what came
    # after it (the journal's reset records, the moved slots' snapshots)
    for s in all_nodes:
        s.kill9()
    for s in all_nodes:
        s.start()
    for s in all_nodes:
        t.ok(wait_until(lambda: seed_of(s) == after, timeout=10),
             "%s hashes with the new seed after kill -9" % s.name)
    t.ok(wait_until(lambda: ask(ps[0], "CLUSTER", "INFO").decode()
                    .find("cluster_state:ok") >= 0, timeout=20),
         "the cluster is ok again")
    seen_all(t, all_nodes, keys + again, "after kill -9 and restart")
    ok_cli(t, "cluster", "check", addr(ns[0]))

    # a primary added since the reset, holding nothing (the map's seed),
    # counts for nothing: the next reset empties every part, and it takes
    # the new seed too
    late = nodes(t, 1, name="late")[0]
    ok_cli(t, "cluster", "add-node", addr(late), addr(ns[0]))
    t.eq(part_of(late), (list(before)[0], "empty"),
         "the late node's part: the map's seed, empty")
    out = ok_cli(t, "cluster", "reset", addr(ns[0]), "default", "--yes")
    t.eq(out.count("[OK] default emptied on"), 4,
         "four primaries emptied:\n" + out)
    third = seed_of(late)
    t.ok(third not in (after,) + tuple(before), "a third seed")
    for s in all_nodes:
        t.ok(wait_until(lambda: seed_of(s) == third, timeout=10),
             "%s took it" % s.name)
    t.eq(new_count(all_nodes, keys), len(keys), "every URL new again")


@test
def a_reset_stopped_midway_is_finished_by_running_it_again(t):
    a, b = nodes(t, 2)
    ok_cli(t, "cluster", "create", addr(a), addr(b), "--yes")
    keys = urls("k", URLS)
    t.eq(new_count([a, b], keys), len(keys), "every URL new once")
    s0 = seed_of(a)
    t.eq(seed_of(b), s0, "one seed")

    # bad requests change nothing
    for words, want in (
            (("RESETPART", "default", "xyz"), "16 hex digits"),
            (("RESETPART", "default"), "syntax error"),
            (("RESETPART", "nosuch", s0), "not a partitioned filter"),
            (("PARTSEED", "nosuch"), "not a partitioned filter"),
            (("PARTSEED",), "wrong number of arguments")):
        got = ask(a, "CLUSTER", *words)
        t.ok(isinstance(got, Err) and want in got,
             "CLUSTER %s: %r" % (" ".join(words), got))
    t.eq(seed_of(a), s0, "the bad requests left the seed")

    # only a's part emptied: a reset stopped midway
    t.eq(ask(a, "CLUSTER", "RESETPART", "default", s0), "OK", "a emptied")
    s1 = seed_of(a)
    t.ok(s1 != s0, "a's part took a new seed")
    t.eq(ask(a, "CLUSTER", "RESETPART", "default", s0), "OK",
         "sent again: OK, nothing more done")
    t.eq(seed_of(a), s1, "and the seed stays")
    # b's slots cannot move into a's emptied part, which would take the
    # old seed back (a seed repeated in its journal: a replay would empty
    # what came)
    rc_, out, err = cli(t, "cluster", "reshard", addr(a), "--from",
                        myid(b), "--to", myid(a), "--slots", "100", "--yes")
    t.ok(rc_ != 0 and "was emptied here and not on the source" in out,
         "a move into the emptied part refused: %d\n%s%s" % (rc_, out, err))
    # a's emptied slots move into b's part, which holds keys of the old
    # seed: their images hold no bit, and nothing of the other seed
    # comes in (their URLs stay new there)
    moving = slots_of(b)
    c = Resp(b.port)
    held = own_seen(c, keys)
    ok_cli(t, "cluster", "reshard", addr(a), "--from", myid(a), "--to",
           myid(b), "--slots", "100", "--yes")
    t.eq(slots_of(b), moving + 100, "an empty part's slots moved")
    t.eq(seed_of(b), s0, "b kept its seed")
    t.eq(own_seen(c, keys), held, "b answers seen its own URLs alone, "
         "the moved slots' (emptied on a) new")
    c.close()
    t.eq(seed_of(a), s1, "a kept the new seed")
    # seen-cli finishes it: b's part emptied, one seed again
    out = ok_cli(t, "cluster", "reset", addr(b), "default", "--yes")
    t.eq(seed_of(a), s1, "a kept its seed")
    t.eq(seed_of(b), s1, "b took the same one")
    t.eq(new_count([a, b], keys), len(keys), "every URL new again")
    ok_cli(t, "cluster", "reshard", addr(a), "--from", myid(a), "--to",
           myid(b), "--slots", "100", "--yes")
    seen_all(t, [a, b], keys, "after a move")

    # while slots are paused for a hand-over, nothing empties the filter
    lo = str(first_slot(a))
    t.eq(ask(a, "CLUSTER", "HANDOFF", "START", lo, lo, myid(b)), "OK")
    for words in (("DEL", "default"), ("FLUSHALL",),
                  ("CLUSTER", "RESETPART", "default", seed_of(a))):
        got = ask(a, *words)
        t.ok(isinstance(got, Err) and got.startswith("TRYAGAIN"),
             "%s during a hand-over: %r" % (" ".join(words), got))
    t.eq(ask(a, "CLUSTER", "HANDOFF", "CANCEL", lo, lo), "OK")
    seen_all(t, [a, b], keys, "after the refusals")

    # a user kept to other keys cannot empty it
    t.eq(ask(a, "ACL", "SETUSER", "crawler", "on", ">pw", "~crawl*",
             "+@all"), "OK")
    c = Resp(a.port)
    try:
        t.eq(c.cmd("AUTH", "crawler", "pw"), "OK")
        got = c.cmd("CLUSTER", "RESETPART", "default", seed_of(a))
        t.ok(isinstance(got, Err) and got.startswith("NOPERM"),
             "RESETPART of a filter outside the user's keys: %r" % got)
    finally:
        c.close()

    # FLUSHALL on every node, as redis-cli --cluster call sends it
    for s in (a, b):
        t.eq(ask(s, "FLUSHALL"), "OK", "FLUSHALL on %s" % s.name)
    t.eq(seed_of(a), seed_of(b), "FLUSHALL on each: one seed")
    t.ok(seed_of(a) != s1, "a new one")
    t.eq(new_count([a, b], keys), len(keys), "every URL new after FLUSHALL")


@test
def a_cluster_of_one_empties_the_whole_filter_with_del(t):
    s = nodes(t, 1, name="one")[0]
    c = redis.Redis(port=s.port, socket_timeout=30 * SLOW)
    try:
        keys = urls("one", 200)
        t.eq(sum(c.setnx(k, 1) for k in keys), len(keys), "new once")
        s0 = seed_of(s)
        t.eq(c.delete("default"), 1, "DEL default empties it")
        t.ok(seed_of(s) != s0, "a new seed")
        t.eq(sum(c.setnx(k, 1) for k in keys), len(keys), "new again")
    finally:
        c.close()


if __name__ == "__main__":
    run()
