#!/usr/bin/python3
"""
Moved slots reach the target's replicas in its replication stream (issue
33; src/primary.h, "Moved slots"): CLUSTER SLOTMERGE ... SAVE puts the
image it took into the stream, one "SI" frame after its turn's records,
and a replica takes it as its primary did. What they must show:

- seen-cli cluster reshard onto a primary with a replica: no full sync of
  the replica (the target's sync_full stays), the replica holds every
  moved URL as soon as reshard returns (seen-cli waits for its
  acknowledgement before the map gives the slots), counts its part as
  its primary does, and once the images' snapshots are written a kill -9
  and restart resumes partially with every moved URL.
- The frame on the wire: a replica that says REPLCONF capa seend-slots
  gets the image byte for byte; one that does not (an older seend) has
  its link closed, and its PSYNC from before the image syncs fully while
  one that says it continues, the image in what it is sent.
"""
import re

from seendtest import *
from clustertest import *

redis = system_module("redis")

SCALE = 1 if not WRAPPER else 0.2
URLS = max(int(6000 * SCALE), 1500)
# the default filter and a cuckoo filter partitioned by slot beside it
# (URLs of hosts kc*): a replica ORs the one's ranges in, replaces the
# other's
FILTERS = MOVE_FILTERS + """
[filter.cf]
prefixes = https://kc
type = cuckoo
capacity = 400000
error_rate = 0.001
"""


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


def resumed_at(r):
    """The offsets a replica's log says a restart resumes from."""
    return [int(m) for m in re.findall(
        r"snapshots are written: a restart resumes from offset (\d+)",
        r.read_log())]


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
    at = stat(dst, "replication", "master_repl_offset")
    t.ok(wait_until(lambda: any(o >= at for o in resumed_at(rd)),
                    timeout=60),
         "the replica wrote the moved slots' snapshots (offset %d)" % at)
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
    t.eq(ask(b, "CLUSTER", "SLOTMERGE", img, "SAVE"), "OK")
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
    for link in (old, new, again, cont, past):
        link.close()
    t.eq(ask(b, "PING"), "PONG", "the primary serves on")


if __name__ == "__main__":
    run()
