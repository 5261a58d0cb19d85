#!/usr/bin/python3
"""
Moved slots reach the target's replicas in its replication stream (issue
33; src/primary.h, "Moved slots"): CLUSTER SLOTMERGE ... SAVE STREAM puts
the image it took into the stream, an "SI" frame where it came among the
turn's records, and a replica takes it as its primary did. What they must
show:

- seen-cli cluster reshard onto a primary with a replica: no full sync of
  the replica (the target's sync_full stays), the replica holds every
  moved URL as soon as reshard returns (seen-cli waits for its
  acknowledgement before the map gives the slots), counts its part as
  its primary does, and once the images' snapshots are written a kill -9
  and restart resumes partially with every moved URL.
- A replica away during the move, back once the map has reached it,
  resumes from before the images and takes them all the same: the moved
  URLs, the named filters (of slots its map says are served here), and
  the counts of both filter types as its primary's; no full sync.
- An image of slots a node counts already (a move sent again after its
  map) counts their keys as it comes in, and a part passing its mark
  grows at once.
- The frame on the wire: a replica that says REPLCONF capa seend-slots
  gets the image byte for byte; one that does not (an older seend) has
  its link closed, and its PSYNC from before the image syncs fully while
  one that says it continues, the image in what it is sent; SAVE without
  STREAM (an older seen-cli) resyncs every replica fully.
- Until the replica has written the snapshots of what an image changed
  (held by SEEND_FAULT_HOLD_SNAPSHOT) a WAIT after the SLOTMERGE does not
  count it, not even after a partial resync in between, and a kill -9
  then syncs fully; once written, WAIT counts it.
"""
import os
import re

from seendtest import *
from clustertest import *

redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.2
URLS = max(int(6000 * SCALE), 1500)
# a Bloom filter and a cuckoo filter (URLs of hosts kc*) partitioned by
# slot: a replica ORs the one's ranges in, replaces the other's
FILTERS = MOVE_CF_FILTERS


def moved_keys(keys, before, after, src, dst):
    return [k for k in keys if before[keyslot(k)] == src and
            after[keyslot(k)] == dst]


def owner_ids(s):
    """slot -> the node ID owning it, by CLUSTER SLOTS."""
    out = [None] * 16384
    for r in ask(s, "CLUSTER", "SLOTS"):
        for slot in range(r[0], r[1] + 1):
            out[slot] = r[2][2].decode()
    return out


def stat(s, section, field):
    """A number of s's INFO section (RESP, "field:value" lines)."""
    m = re.search(rb"^%s:(\d+)" % field.encode(), ask(s, "INFO", section),
                  re.M)
    if m is None:
        raise Failed("no %s in INFO %s of %s" % (field, section, s.name))
    return int(m.group(1))


def snapshots_written(r):
    """Whether r's log says, after the last image of slots it took, that
    the snapshots are written (a restart resumes from there on)."""
    log = r.read_log()
    return "snapshots are written: a restart resumes" in log[
        log.rfind("moved slots taken from the stream"):]


@test
def a_move_reaches_the_targets_replica_in_its_stream(t):
    ns = nodes(t, 4, name="ms", filters=FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    prim, repl = roles(ns)
    t.eq(len(prim), 2, "two primaries, each with a replica")
    src, dst = prim
    rd = repl[dst.name]
    cf_keys = urls("kcstream", URLS // 2)
    keys = urls("stream", URLS) + cf_keys
    rc = client(prim)
    record(rc, keys)
    rc.close()
    # forgotten on the source in slots about to move: they must not come
    # back on the target's replica
    before = owner_ids(src)
    lowest = sorted(i for i, o in enumerate(before) if o == myid(src))[:2048]
    forgotten = [k for k in cf_keys if keyslot(k) in set(lowest)][:30]
    for k in forgotten:
        t.eq(ask(src, "CF.DEL", "cf", k), 1, "CF.DEL " + k)
    keys = [k for k in keys if k not in set(forgotten)]
    wait_until(lambda: b"master_link_status:up" in ask(
        rd, "INFO", "replication"), timeout=30)
    full0 = stat(dst, "stats", "sync_full")
    ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src), "--to",
           myid(dst), "--slots", "2048", "--yes")
    after = owner_ids(dst)
    moved = moved_keys(keys, before, after, myid(src), myid(dst))
    t.ok(len(moved) > len(keys) // 10, "%d URLs' slots moved" % len(moved))
    t.eq(stat(dst, "stats", "sync_full"), full0,
         "the target's replica did not sync fully")
    t.ok(rd.read_log().count("moved slots taken from the stream") >= 1,
         "the replica took the moved slots from the stream")
    # seen-cli gave the map only once the replica had acknowledged them
    t.eq(sum(readonly_exists(rd, moved)), len(moved),
         "the target's replica holds every moved URL as reshard returns")
    back = sum(readonly_exists(rd, forgotten))
    t.ok(back <= 2, "URLs forgotten on the source stay forgotten on the "
         "target's replica: %d of %d held (false positives at 0.001)" %
         (back, len(forgotten)))
    for f in ("default", "cf"):
        wait_until(lambda: int(info_field(rd, f, "count")) ==
                   int(info_field(dst, f, "count")), timeout=30)
        t.eq(int(info_field(rd, f, "count")),
             int(info_field(dst, f, "count")),
             "the replica counts its part of %s as its primary does" % f)
    # once the images' snapshots are written, a restart resumes
    t.ok(wait_until(lambda: snapshots_written(rd), timeout=60),
         "the replica wrote the moved slots' snapshots")
    part0 = stat(dst, "stats", "sync_partial_ok")
    rd.kill9()
    rd.start()
    wait_until(lambda: b"master_link_status:up" in ask(
        rd, "INFO", "replication"), timeout=30)
    t.eq(stat(dst, "stats", "sync_full"), full0,
         "restarted after its snapshots: no full sync")
    t.eq(stat(dst, "stats", "sync_partial_ok"), part0 + 1,
         "restarted after its snapshots: a partial resync")
    t.eq(sum(readonly_exists(rd, moved)), len(moved),
         "the restarted replica holds every moved URL")
    seen_all(t, prim, keys, "after the move")


@test
def a_replica_back_after_the_map_takes_the_images_it_missed(t):
    """A replica away during a move resumes from before its images once
    the map giving the slots has reached it: it takes them all the same
    (the named filters of slots its map says are served here included:
    the primary took them before it served them), and counts them."""
    ns = nodes(t, 4, name="ml", filters=FILTERS)
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    prim, repl = roles(ns)
    src, dst = prim
    rd = repl[dst.name]
    keys = urls("late", 3000) + urls("kclate", 1000)
    before = owner_ids(src)
    named = ["late-set-%d" % i for i in range(80)]
    rc = client(prim)
    record(rc, keys)
    for n in named:
        rc.sadd(n, "m")
    rc.close()
    wait_until(lambda: bits(rd) == bits(dst), timeout=30)
    # away (a primary that is not there), then back once the map moved
    t.eq(ask(rd, "REPLICAOF", "127.0.0.1", str(free_port())), "OK")
    full0 = stat(dst, "stats", "sync_full")
    ok_cli(t, "cluster", "reshard", addr(src), "--from", myid(src), "--to",
           myid(dst), "--slots", "2048", "--yes")
    after = owner_ids(dst)
    t.ok(wait_until(lambda: owner_ids(rd) == after, timeout=30),
         "the map reached the replica while it was away")
    moved = moved_keys(keys, before, after, myid(src), myid(dst))
    came = [n for n in named if before[keyslot(n)] == myid(src) and
            after[keyslot(n)] == myid(dst)]
    t.ok(len(came) > 0, "%d named filters moved" % len(came))
    t.eq(ask(rd, "REPLICAOF", "127.0.0.1", str(dst.port)), "OK")
    t.ok(wait_until(lambda: b"master_link_status:up" in
                    ask(rd, "INFO", "replication"), timeout=30),
         "the replica is back")
    t.eq(c_wait(dst), 1, "and has acknowledged the stream")
    t.eq(stat(dst, "stats", "sync_full"), full0,
         "it resumed from before the images, without a full sync")
    t.eq(sum(readonly_exists(rd, moved)), len(moved),
         "it holds every moved URL")
    held = set(x.decode() for x in ask(rd, "KEYS", "late-set-*"))
    t.eq(sorted(n for n in came if n not in held), [],
         "it holds the named filters that moved")
    for f in ("default", "cf"):
        t.eq(int(info_field(rd, f, "count")),
             int(info_field(dst, f, "count")),
             "it counts its part of %s as its primary does" % f)


def keys_in(lo, hi, prefix, n):
    """n URLs whose slots are in lo..hi."""
    out, i = [], 0
    while len(out) < n:
        k = "https://%s%d.example/p/%d" % (prefix, i % 997, i)
        if lo <= keyslot(k) <= hi:
            out.append(k)
        i += 1
    return out


def pipelined(s, keys):
    """SETNX of each key on s, pipelined: the answers."""
    c = Resp(s.port, timeout=60)
    try:
        c.s.sendall(b"".join(enc("SETNX", k, "1") for k in keys))
        return [c.reply() for _ in keys]
    finally:
        c.close()


@test
def ranges_merged_into_counted_slots_count_and_grow_the_filter(t):
    """An image of slots a node holds already (a move sent again after its
    map; a replica's late image) counts their keys as it comes in, and a
    part that passes its mark grows at once, as after MERGE (else the
    batched path, which trusts the mark, never would)."""
    small = "\n[filter.default]\ncapacity = 20000\nerror_rate = 0.01\n"
    a, b = [cluster_node(t, "mc%d" % i, filters=small) for i in range(2)]
    ok_cli(t, "cluster", "create", addr(a), addr(b), "--yes")
    ra = next((r[0], r[1]) for r in ask(a, "CLUSTER", "SLOTS")
              if r[2][1] == a.port)
    rb = next((r[0], r[1]) for r in ask(b, "CLUSTER", "SLOTS")
              if r[2][1] == b.port)
    lo, hi = ra[0], ra[0] + 2047
    t.ok(sum(pipelined(a, keys_in(lo, hi, "ka", 9000))) > 8900, "a's keys")
    t.ok(sum(pipelined(b, keys_in(rb[0], rb[1], "kb", 8000))) > 7900,
         "b's keys")
    img = ask(a, "CLUSTER", "SLOTBITS", str(lo), str(hi))
    # the map gives lo..hi to b before the image reaches it
    ep = int(re.search(r"^epoch (\d+)", getmap(a), re.M).group(1))
    ida, idb = myid(a), myid(b)
    text = map_text(ep + 1, [map_node(ida, a.port), map_node(idb, b.port)],
                    {ida: [(hi + 1, ra[1])], idb: [(lo, hi), rb]})
    t.eq(setmap(b, text), b"+OK\r\n")
    count0 = int(info_field(b, "default", "count"))
    t.eq(int(info_field(b, "default", "slices")), 1, "one slice")
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img), "OK")
    count1 = int(info_field(b, "default", "count"))
    t.ok(count1 - count0 > 8000, "the merged slots' keys count: %d -> %d" %
         (count0, count1))
    t.eq(int(info_field(b, "default", "slices")), 2,
         "past its mark (%d keys), the part grew" % count1)


def c_wait(p):
    """WAIT 1 on a connection that wrote (a SETNX of a slot p serves)."""
    mine = [r for r in ask(p, "CLUSTER", "SLOTS") if r[2][1] == p.port]
    key = next(u for u in urls("wait", 10000)
               if any(a <= keyslot(u) <= b for a, b, *_ in mine))
    c = Resp(p.port, timeout=30)
    try:
        c.cmd("SETNX", key, "1")
        return c.cmd("WAIT", "1", "10000")
    finally:
        c.close()


class LinkByHand:
    """A replica's side of the link, spoken by hand (src/primary.h): the
    handshake (with REPLCONF capa seend-slots if slots), PSYNC replid
    offset, a full sync's images skipped, then the stream's frames."""

    def __init__(self, s, slots, replid="?", offset=-1):
        self.c = Resp(s.port, timeout=30)
        words = ["REPLCONF", "listening-port", "1"]
        if slots:
            words += ["capa", "seend-slots"]
        got = self.c.cmd(*words)
        if got != "OK":
            raise Failed("REPLCONF: %r" % got)
        self.c.send("PSYNC", replid, str(offset))
        self.head = self.c._line().decode()
        if self.head.startswith("+FULLRESYNC "):
            _, self.replid, off = self.head.split()
            self.offset = int(off)
            n = int(self.c._line().decode().split()[1])  # "$IMAGE n"
            for _ in range(n):
                size = int(self.c._line().decode().split()[1])
                self.c._fill(size)
                del self.c.buf[:size]
        elif self.head.startswith("+CONTINUE "):
            self.replid = self.head.split()[1]
            self.offset = offset
        else:
            raise Failed("PSYNC: %r" % self.head)

    def frame(self):
        """The next frame: (its two letters, its body)."""
        self.c._fill(8)
        head = bytes(self.c.buf[:8])
        n = int.from_bytes(head[4:8], "little")
        if head[2:4] != b"\0\0":
            raise Failed("not a frame: %r" % head)
        self.c._fill(8 + n)
        body = bytes(self.c.buf[8:8 + n])
        del self.c.buf[:8 + n]
        self.offset += 8 + n
        return head[:2], body

    def slots(self):
        """The body of the next frame of moved slots."""
        while True:
            kind, body = self.frame()
            if kind == b"SI":
                return body
            if kind != b"SR":
                raise Failed("a frame %r" % kind)

    def close(self):
        self.c.close()


@test
def the_stream_carries_the_image_and_older_replicas_sync_fully(t):
    a, b = nodes(t, 2, name="mf")
    ok_cli(t, "cluster", "create", addr(a), addr(b), "--yes")
    rc = client([a, b])
    record(rc, urls("frame", 2000))
    rc.close()
    lo = next(r[0] for r in ask(a, "CLUSTER", "SLOTS") if r[2][1] == a.port)
    old = LinkByHand(b, slots=False)
    new = LinkByHand(b, slots=True)
    t.ok(wait_until(lambda: b"connected_slaves:2" in ask(
        b, "INFO", "replication"), timeout=30), "two links")
    img = ask(a, "CLUSTER", "SLOTBITS", str(lo), str(lo + 63))
    t.ok(isinstance(img, bytes) and len(img) > 100, "an image of 64 slots")
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img, "SAVE", "STREAM"), "OK")
    t.eq(new.slots(), img, "the image in the stream, byte for byte")
    t.ok(old.c.closed(30), "the older replica's link is closed")
    t.contains(b.read_log(), "it cannot take moved slots in its stream")
    # from before the image: an older replica syncs fully, a newer one
    # continues and is sent the image
    again = LinkByHand(b, slots=False, replid=new.replid, offset=old.offset)
    t.ok(again.head.startswith("+FULLRESYNC "),
         "an older replica's PSYNC from before the image: %r" % again.head)
    cont = LinkByHand(b, slots=True, replid=new.replid, offset=old.offset)
    t.eq(cont.head, "+CONTINUE " + new.replid,
         "a replica that takes moved slots continues")
    t.eq(cont.slots(), img, "and is sent the image from the backlog")
    # past the image, an older replica continues too
    past = LinkByHand(b, slots=False, replid=new.replid, offset=cont.offset)
    t.eq(past.head, "+CONTINUE " + new.replid,
         "an older replica's PSYNC from past the image continues")
    # SAVE without STREAM (an older seen-cli, which waits for full
    # syncs): every replica resyncs fully
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img, "SAVE"), "OK")
    t.ok(cont.c.closed(30), "SAVE without STREAM closes every link")
    t.contains(b.read_log(), "SLOTMERGE ... SAVE without STREAM")
    late = LinkByHand(b, slots=True, replid=new.replid, offset=cont.offset)
    t.ok(late.head.startswith("+FULLRESYNC "),
         "and the replicas sync fully: %r" % late.head)
    for link in (old, new, again, cont, past, late):
        link.close()
    t.eq(ask(b, "PING"), "PONG", "the primary serves on")


def bits(s):
    """The bits set in s's default filter (INFO default, line protocol)."""
    return int(info_field(s, "default", "bits_set"))


@test
def an_image_is_acknowledged_once_durable_on_the_replica(t):
    """Until the replica has written the snapshots of what an image
    changed, it acknowledges no further than the image (WAIT does not
    count it, seen-cli would not give the slots), and a restart syncs
    fully, even after a partial resync in between."""
    ns = [cluster_node(t, "md%d" % i, start=False) for i in range(4)]
    holds = {}
    for s in ns:
        holds[s.name] = os.path.join(t.dir, "hold-" + s.name)
        s.env["SEEND_FAULT_HOLD_SNAPSHOT"] = holds[s.name]
        s.start()
    ok_cli(t, "cluster", "create", *[addr(s) for s in ns], "--replicas",
           "1", "--yes")
    prim, repl = roles(ns)
    src, dst = prim
    rd = repl[dst.name]
    rc = client(prim)
    record(rc, urls("durable", 3000))
    rc.close()
    wait_until(lambda: bits(rd) == bits(dst), timeout=30)
    lo = next(r[0] for r in ask(src, "CLUSTER", "SLOTS")
              if r[2][1] == src.port)
    img = ask(src, "CLUSTER", "SLOTBITS", str(lo), str(lo + 1023))
    open(holds[rd.name], "w").close()
    full0 = stat(dst, "stats", "sync_full")
    part0 = stat(dst, "stats", "sync_partial_ok")
    # WAIT on the connection that sent the image waits for it
    c = Resp(dst.port, timeout=30)
    t.eq(c.cmd("CLUSTER", "SLOTMERGE", img, "SAVE", "STREAM"), "OK")
    t.ok(wait_until(lambda: "moved slots taken from the stream" in
                    rd.read_log(), timeout=30), "the replica took the image")
    t.eq(c.cmd("WAIT", "1", "1000"), 0, "WAIT does not count a replica "
         "whose snapshots of the image are not written")
    # a reconnection (a partial resync) in between
    t.eq(ask(rd, "REPLICAOF", "127.1", str(dst.port)), "OK")
    t.ok(wait_until(lambda: stat(dst, "stats", "sync_partial_ok") ==
                    part0 + 1 and b"master_link_status:up" in
                    ask(rd, "INFO", "replication"), timeout=30),
         "the replica resynced partially")
    t.eq(c.cmd("WAIT", "1", "1000"), 0, "and still is not counted")
    rd.kill9()
    os.unlink(holds[rd.name])
    rd.start()
    t.ok(wait_until(lambda: b"master_link_status:up" in
                    ask(rd, "INFO", "replication"), timeout=30),
         "the replica is back")
    t.eq(stat(dst, "stats", "sync_full"), full0 + 1,
         "killed before its snapshots were written, it synced fully")
    t.eq(bits(rd), bits(dst), "and holds the image's bits")
    t.eq(c.cmd("WAIT", "1", "5000"), 1, "then WAIT counts it")
    c.close()


if __name__ == "__main__":
    run()
