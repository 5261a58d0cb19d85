#!/usr/bin/python3
"""
Replication (issue 23, INTERFACE.md "Replicas and failover", the session-9
replication spec), with real seend processes, each with its own data_dir
and port:

- a primary and two replicas, one made by `replicaof` in its config, one by
  `REPLICAOF host port` at run time while URLs keep arriving: after 1M URLs
  (50k under valgrind) sent pipelined through the primary, over the line
  protocol and RESP, every replica answers seen for every one of them, and
  the primary's master_repl_offset equals each replica's slave_repl_offset,
  and their filters are the primary's (count, bits set); ROLE and INFO's
  replication fields on both sides; WAIT counts the replicas;
- a replica refuses every write (`-READONLY ...`, line `ERR READONLY ...`),
  changes nothing, and answers reads; what the primary creates, forgets
  and drops reaches it;
- a replica killed -9 while the primary keeps taking URLs comes back by a
  partial resync when the primary's backlog still holds its offset, by a
  full one when it does not (repl_backlog_size = 64K), and misses nothing;
  a full sync of a filter several times repl_backlog_size completes while
  URLs keep arriving;
- WAIT with no replica answers 0 once its timeout has passed; and failover:
  a client writes batches each followed by WAIT 1, the primary is killed
  -9 at a random moment (every other time with the replica stopped by
  SIGSTOP before, until a WAIT has answered 0, as asserted), the replica
  is promoted by REPLICAOF NO ONE and holds every URL whose WAIT answered
  1; the old primary comes back as a replica of
  the new one and answers exactly as it does (ten times, the two swapping
  roles);
- a promoted replica keeps the old primary's replication id as its second
  one: the other replica follows it by a partial resync, and gets what the
  promoted one took before it followed;
- the role set at run time is kept in data_dir across restarts and wins
  over the config's replicaof; a reload whose replicaof changed applies it;
- a config-file filter of another capacity on the replica keeps the link
  down, names the filter, and takes none of the primary's keys.

Every wait is for a condition, with a timeout (scaled under valgrind);
nothing is asserted on timing except that WAIT does not answer before its
timeout.
"""
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

from seendtest import *
from repltest import *


# ---- 1: two replicas, every URL, the same offset, the same filters ----

@test
def two_replicas_hold_every_url_and_reach_the_primary_s_offset(t):
    p = primary(t)
    r1 = replica(t, p, "r1")
    r2 = Server(t, filters=FILTERS, unix=False, name="r2").start()
    urls = [url("big", i) for i in range(N)]
    # a tenth over RESP (SETNX) while only r1 follows ...
    wait_info(t, r1, lambda i: i.get("master_link_status") == "up",
              what="r1's link comes up")
    record(t, p, urls[:N // 10], resp=True)
    # ... the rest over the line protocol; r2 becomes a replica by
    # REPLICAOF in the middle of it
    said = []
    pipe = Pipe(p.port)
    rest = urls[N // 10:]
    r = pipe.run(line_payload(b"SEEN", rest), len(rest),
                 at=(len(rest) // 3, lambda: said.append(
                     ask(r2, "REPLICAOF", "127.0.0.1", str(p.port)))))
    pipe.close()
    t.ok(set(r) <= {b"0", b"1"}, "SEEN replies: %r" % sorted(set(r))[:5])
    t.eq(said, ["OK"], "REPLICAOF 127.0.0.1 <port> on r2")
    wait_caught_up(t, p, [r1, r2], timeout=120, what="after %d URLs" % N)
    for r in (r1, r2):
        all_seen(t, r, urls, "every URL sent through the primary")
        few_false_positives(t, r, "never", "replica")

    # the replicas' filters are the primary's: same count (SCARD), same
    # bits set (INFO default), whether they followed from the start (r1)
    # or joined by a full sync while URLs kept arriving (r2)
    def shape(s):
        c = s.client()
        i = c.info("default")
        c.close()
        return (ask(s, "SCARD", "default"), i["count"], i["bits_set"],
                i["slices"])
    want = shape(p)
    for r in (r1, r2):
        t.eq(shape(r), want, "SCARD and INFO default's count, bits_set and "
             "slices on %s (want the primary's)" % r.name)
    agree(t, p, [r1, r2], urls, "after %d URLs" % N)
    stop_all(t, r1, r2, p)


# ---- 5 and 4: ROLE, INFO replication, WAIT ----

@test
def role_info_and_wait_with_two_replicas(t):
    p = primary(t)
    r1 = replica(t, p, "r1")
    r2 = Server(t, filters=FILTERS, unix=False, name="r2").start()
    urls = [url("few", i) for i in range(5000)]
    record(t, p, urls[:2000])
    t.eq(ask(r2, "REPLICAOF", "127.0.0.1", str(p.port)), "OK",
         "REPLICAOF 127.0.0.1 <port>")
    record(t, p, urls[2000:])
    wait_caught_up(t, p, [r1, r2])
    for r in (r1, r2):
        all_seen(t, r, urls, "every URL")

    # ROLE and INFO replication on both sides, read while the offset held
    # still (the primary sends a heartbeat a second)
    wait_caught_up(t, p, [r1, r2])
    snap = []
    if not wait_until(lambda: snap.append(at_rest(p, [r1, r2])) or snap[-1],
                      15, step=0.05):
        raise Failed("no moment where the primary's ROLE and INFO and its "
                     "replicas' agree on the offset: %r" % (snap[-1:],))
    pi, prole, ris, rroles = snap[-1]
    off = pi["master_repl_offset"]
    ports = sorted([r1.port, r2.port])
    t.eq(prole[0], b"master", "ROLE on the primary")
    t.eq(sorted((x[0], int(x[1])) for x in prole[2]),
         [(b"127.0.0.1", port) for port in ports],
         "the primary's ROLE lists both replicas: %r" % prole)
    t.eq(pi["role"], "master", "primary role")
    t.eq(pi["connected_slaves"], "2", "connected_slaves")
    slaves = []
    for k in ("slave0", "slave1"):
        t.ok(k in pi, "%s line in %r" % (k, pi))
        f = dict(x.split("=", 1) for x in pi[k].split(","))
        t.eq(sorted(f), ["ip", "lag", "offset", "port", "state"], k)
        t.eq(f["ip"], "127.0.0.1", k + " ip")
        t.eq(f["state"], "online", k + " state")
        t.ok(f["lag"].isdigit(), k + " lag: %r" % f["lag"])
        slaves.append(int(f["port"]))
    t.eq(sorted(slaves), ports, "the slaveN lines' ports are the replicas' "
         "listening ports")
    t.ok("slave2" not in pi, "no third slave line")
    t.eq(pi["master_failover_state"], "no-failover", "master_failover_state")
    t.ok(re.fullmatch("[0-9a-f]{40}", pi["master_replid"]),
         "master_replid: %r" % pi["master_replid"])
    t.ok(re.fullmatch("[0-9a-f]{40}", pi["master_replid2"]),
         "master_replid2: %r" % pi["master_replid2"])
    t.ok(int(off) > 5000, "the offset counts the stream's bytes: %s" % off)
    t.eq(pi["second_repl_offset"], "-1", "second_repl_offset")
    t.eq(pi["repl_backlog_active"], "1", "repl_backlog_active")
    t.eq(pi["repl_backlog_size"], str(64 << 20), "repl_backlog_size (64M)")
    first, hist = (int(pi["repl_backlog_first_byte_offset"]),
                   int(pi["repl_backlog_histlen"]))
    t.ok(0 < hist <= 64 << 20, "repl_backlog_histlen %d" % hist)
    # it ends at the offset (Redis counts the first byte held from 1,
    # seend from 0: either way)
    t.ok(first + hist - int(off) in (0, 1),
         "the backlog ends at the offset (first_byte_offset %d, histlen %d, "
         "offset %s)" % (first, hist, off))
    for r, ri, role in zip((r1, r2), ris, rroles):
        want = {"role": "slave", "master_host": "127.0.0.1",
                "master_port": str(p.port), "master_link_status": "up",
                "master_sync_in_progress": "0", "slave_priority": "100",
                "slave_read_only": "1", "replica_announced": "1",
                "connected_slaves": "0",
                "master_replid": pi["master_replid"],
                "slave_repl_offset": off, "slave_read_repl_offset": off,
                "master_repl_offset": off}
        t.eq(dict((k, ri.get(k)) for k in want), want,
             "INFO replication on %s" % r.name)
        t.ok(ri.get("master_last_io_seconds_ago", "").isdigit(),
             "master_last_io_seconds_ago: %r" % ri)
        t.ok("master_link_down_since_seconds" not in ri and
             "master_link_error" not in ri, "no link-down fields while up")
        t.eq(role, [b"slave", b"127.0.0.1", p.port, b"connected", int(off)],
             "ROLE on %s" % r.name)
        li = r.client().info()
        t.eq((li.get("role"), li.get("master_link_status"),
              li.get("master_port")), ("slave", "up", str(p.port)),
             "line INFO on %s" % r.name)
    t.contains(r2.read_log(), "replication: full resync with 127.0.0.1:%d"
               % p.port, "r2's log")
    t.contains(p.read_log(), "asks", "the primary logs what a replica asks")
    # WAIT, over RESP and the line protocol
    c = Resp(p.port)
    for u in [url("wait", i) for i in range(100)]:
        c.send("SETNX", u, "1")
    t.ok(all(c.reply() == 1 for _ in range(100)), "SETNX of new URLs")
    timeout_ms = str(int(30000 * SLOW))
    got = c.cmd("WAIT", "1", timeout_ms)
    t.ok(got in (1, 2), "WAIT 1 after a batch answers 1 or 2: %r" % got)
    t.eq(c.cmd("WAIT", "2", timeout_ms), 2, "WAIT 2 after a batch")
    c.close()
    lc = Line(p)
    lc.s.sendall(line_payload(b"SEEN", [url("wait2", i)
                                        for i in range(100)]))
    t.ok(all(lc.reply() == b"0\r\n" for _ in range(100)),
         "SEEN of new URLs")
    t.eq(lc.cmd("WAIT 2 %s" % timeout_ms), b"2\r\n", "line WAIT 2")
    lc.close()
    for r in (r1, r2):
        all_seen(t, r, [url("wait", i) for i in range(100)] +
                 [url("wait2", i) for i in range(100)], "after WAIT 2")

    stop_all(t, r1, r2, p)


# ---- 2: writes refused on a replica, reads answered ----

@test
def a_replica_refuses_writes_and_answers_reads(t):
    p = primary(t)
    r = replica(t, p)
    c = Resp(p.port)
    t.eq(c.cmd("SETNX", url("ro", 1), "1"), 1, "SETNX on the primary")
    t.eq(c.cmd("SADD", "default", "member-1"), 1, "SADD on the primary")
    t.eq(c.cmd("BF.RESERVE", "rt", "0.01", "1000"), "OK", "BF.RESERVE")
    t.eq(c.cmd("BF.ADD", "rt", "m1"), 1, "BF.ADD")
    t.eq(c.cmd("BF.RESERVE", "gone", "0.01", "1000"), "OK", "BF.RESERVE")
    t.eq(c.cmd("CF.RESERVE", "cf", "1000"), "OK", "CF.RESERVE")
    t.eq(c.cmd("CF.ADD", "cf", "a"), 1, "CF.ADD a")
    t.eq(c.cmd("CF.ADD", "cf", "b"), 1, "CF.ADD b")
    wait_caught_up(t, p, [r])
    # what the primary forgets and drops reaches the replica too
    t.eq(c.cmd("CF.DEL", "cf", "b"), 1, "CF.DEL on the primary")
    t.eq(c.cmd("DEL", "gone"), 1, "DEL of a runtime filter")
    c.close()
    wait_caught_up(t, p, [r])

    rc = Resp(r.port)
    writes = [
        ["SETNX", url("ro", 2), "1"],
        ["SET", url("ro", 2), "1", "NX"],
        ["SET", url("ro", 2), "1"],
        ["SADD", "default", "member-2"],
        ["BF.ADD", "rt", "m2"],
        ["BF.ADD", "newrt", "m2"],
        ["BF.MADD", "rt", "m2", "m3"],
        ["BF.INSERT", "rt", "ITEMS", "m2"],
        ["BF.RESERVE", "rt2", "0.01", "1000"],
        ["CF.RESERVE", "cf2", "1000"],
        ["CF.ADD", "cf", "m2"],
        ["CF.ADDNX", "cf", "m2"],
        ["CF.INSERT", "cf", "ITEMS", "m2"],
        ["CF.INSERTNX", "cf", "ITEMS", "m2"],
        ["CF.DEL", "cf", "a"],
        ["FORGET", "cf", "a"],
        ["MERGE", "rt3", "rt"],
        ["BF.LOADCHUNK", "rt4", "1", "x"],
        ["CF.LOADCHUNK", "cf4", "1", "x"],
        ["DEL", "rt"],
        ["DEL", "default"],
        ["UNLINK", "rt"],
        ["EXPIRE", "rt", "100"],
        ["PEXPIRE", "rt", "100000"],
        ["EXPIREAT", "rt", "4000000000"],
        ["PEXPIREAT", "rt", "4000000000000"],
        ["PERSIST", "rt"],
    ]
    for w in writes:
        t.eq(rc.cmd(*w), Err(READONLY), "RESP %s on a replica" % " ".join(w))
    lc = r.client()
    for w in ("SEEN %s" % url("ro", 2), "SEEN default %s" % url("ro", 2),
              "RESET default", "FORGET cf a", "MERGE rt3 rt"):
        t.eq(lc.cmd(w), "ERR " + READONLY, "line %s on a replica" % w)
    # nothing changed, and the reads answer
    t.eq(lc.cmd("CHECK %s" % url("ro", 1)), "1", "CHECK of a replicated URL")
    t.eq(lc.cmd("CHECK %s" % url("ro", 2)), "0", "CHECK of a refused URL")
    t.eq(rc.cmd("EXISTS", url("ro", 1), url("ro", 2)), 1, "EXISTS")
    t.eq(rc.cmd("GET", url("ro", 1)), b"1", "GET")
    t.eq(rc.cmd("SISMEMBER", "default", "member-1"), 1, "SISMEMBER")
    t.eq(rc.cmd("SISMEMBER", "default", "member-2"), 0,
         "SISMEMBER of a refused member")
    t.eq(rc.cmd("BF.EXISTS", "rt", "m1"), 1, "BF.EXISTS")
    t.eq(rc.cmd("BF.EXISTS", "rt", "m2"), 0, "BF.EXISTS of a refused item")
    t.eq(rc.cmd("CF.EXISTS", "cf", "a"), 1, "CF.EXISTS of a kept item")
    t.eq(rc.cmd("CF.EXISTS", "cf", "b"), 0,
         "CF.EXISTS of an item the primary deleted")
    t.eq(rc.cmd("TTL", "rt"), -1, "TTL: no deadline was set")
    lc.send("FILTERS\n")
    names = sorted(l.split()[0] for l in lc.lines_until_end())
    t.eq(names, ["cf", "default", "rt"],
         "FILTERS on the replica: the primary's, none refused, none dropped")
    ri = info(r)
    t.eq(ri["role"], "slave", "INFO role")
    t.ok(isinstance(rc.cmd("INFO"), bytes), "INFO")
    t.eq(lc.cmd("PING"), "PONG", "PING")
    # the primary still takes writes, and the replica follows
    c = Resp(p.port)
    t.eq(c.cmd("SETNX", url("ro", 2), "1"), 1,
         "the refused URL is new on the primary")
    c.close()
    wait_caught_up(t, p, [r])
    t.eq(lc.cmd("CHECK %s" % url("ro", 2)), "1", "and then seen on the "
         "replica")
    rc.close()
    lc.close()
    stop_all(t, r, p)


# ---- 3: kill -9 of a replica mid-stream, partial and full resync ----

def kill_while_writing(t, p, r, writer, gap, after):
    """kill -9 r once writer has recorded `after` more URLs; returns once
    the primary's offset has moved gap bytes past the kill."""
    at = writer.acked
    t.ok(wait_until(lambda: writer.acked >= at + after or writer.bad, 30,
                    step=0.005) and not writer.bad,
         "the writer recorded %d more URLs before the kill (%d of them; %r)"
         % (after, writer.acked - at, writer.bad))
    r.kill9()
    off = int(info(p)["master_repl_offset"])
    if not wait_until(lambda: int(info(p)["master_repl_offset"]) > off + gap,
                      60, step=0.02):
        raise Failed("the primary's offset did not move %d bytes past %d "
                     "with the writer running (acked %d)"
                     % (gap, off, writer.acked))


@test
def a_replica_killed_mid_stream_resumes_partially_and_misses_nothing(t):
    rnd = random.Random()
    p = primary(t)
    r = replica(t, p)
    wait_caught_up(t, p, [r])
    wait_image_saved(t, r)
    w = Writer(p, "part")
    rounds = []
    try:
        # each kill at another moment: while the replica follows, or
        # while it is still catching up after the last restart
        for i in range(2 if WRAPPER else 3):
            kill_while_writing(t, p, r, w, 20000, rnd.randrange(200, 3000))
            before = sync_stats(p)
            r.start()
            wait_info(t, r, lambda i: i.get("master_link_status") == "up",
                      what="round %d: the link comes up again" % i)
            after = sync_stats(p)
            t.ok(after["sync_partial_ok"] > before["sync_partial_ok"],
                 "round %d: sync_partial_ok goes up: %r -> %r"
                 % (i, before, after))
            t.eq(after["sync_full"], before["sync_full"],
                 "round %d: no full resync: %r -> %r" % (i, before, after))
            rounds.append(w.acked)
        at = w.acked
        t.ok(wait_until(lambda: w.acked >= at + 2000 or w.bad, 30,
                        step=0.01) and not w.bad,
             "2000 more URLs recorded after the last restart (%d; %r)"
             % (w.acked - at, w.bad))
    finally:
        w.stop(t)
    wait_caught_up(t, p, [r], timeout=60, what="after the restarts")
    t.contains(r.read_log(), "replication: partial resync with 127.0.0.1:%d "
               "from offset" % p.port, "the replica's log")
    diag("%d URLs recorded; killed -9 after %r" % (w.acked, rounds))
    all_seen(t, r, w.urls(), "every URL recorded on the primary")
    t.eq(sync_stats(p)["sync_full"], 1, "one full sync in all: the first")
    stop_all(t, r, p)


@test
def a_replica_down_past_the_backlog_resyncs_fully_and_misses_nothing(t):
    p = primary(t, extra="repl_backlog_size = 64K")
    r = replica(t, p)
    t.eq(info(p)["repl_backlog_size"], "65536", "repl_backlog_size")
    wait_caught_up(t, p, [r])
    wait_image_saved(t, r)
    # a writer slow enough that the replica never owes it 64K before the
    # kill (a replica dropped then is in a new full sync when it dies)
    w = Writer(p, "full", pause=0.01)
    try:
        # four times the backlog past the kill: the replica's offset is gone
        kill_while_writing(t, p, r, w, 4 * 65536, 1000)
    finally:
        w.stop(t)
    before = sync_stats(p)
    r.start()
    wait_caught_up(t, p, [r], timeout=60, what="after the restart")
    after = sync_stats(p)
    t.ok(after["sync_full"] > before["sync_full"],
         "sync_full goes up: %r -> %r" % (before, after))
    t.ok(after["sync_partial_err"] > before["sync_partial_err"],
         "the partial resync it asked for was refused: %r -> %r"
         % (before, after))
    t.eq(after["sync_partial_ok"], before["sync_partial_ok"],
         "no partial resync from an offset the backlog lost: %r -> %r"
         % (before, after))
    t.contains(r.read_log(), "replication: full resync with 127.0.0.1:%d"
               % p.port, "the replica's log")
    diag("%d URLs recorded" % w.acked)
    all_seen(t, r, w.urls(), "every URL recorded on the primary")
    # and the stream flows again after the full resync
    more = [url("after", i) for i in range(500)]
    record(t, p, more)
    wait_caught_up(t, p, [r])
    all_seen(t, r, more, "URLs recorded after the full resync")
    stop_all(t, r, p)


@test
def a_full_sync_larger_than_the_backlog_completes_while_urls_arrive(t):
    """repl_backlog_size bounds the stream a replica may owe, not the
    images of its full sync: a filter several times that size is copied
    while the primary keeps taking URLs."""
    if WRAPPER:
        cap, backlog, pause = 5000000, "4M", 0.02     # a 13 MB image
    else:
        cap, backlog, pause = 20000000, "16M", 0.002  # a 53 MB image
    big = "[filter.default]\ncapacity = %d\nerror_rate = 0.001\n" % cap
    p = Server(t, "repl_backlog_size = %s" % backlog, filters=big,
               unix=False, name="p").start()
    r = Server(t, filters=big, unix=False, name="r").start()
    w = Writer(p, "large", pause=pause)
    try:
        t.ok(wait_until(lambda: w.acked >= 1000 or w.bad, 30, step=0.01)
             and not w.bad, "1000 URLs recorded before REPLICAOF (%d; %r)"
             % (w.acked, w.bad))
        t.eq(ask(r, "REPLICAOF", "127.0.0.1", str(p.port)), "OK",
             "REPLICAOF")
        wait_info(t, r, lambda i: i.get("master_link_status") == "up", 30,
                  what="the link comes up while URLs keep arriving")
        at = w.acked
        t.ok(wait_until(lambda: w.acked >= at + 1000 or w.bad, 30,
                        step=0.01) and not w.bad,
             "1000 more URLs recorded once the link is up (%d; %r)"
             % (w.acked - at, w.bad))
    finally:
        w.stop(t)
    wait_caught_up(t, p, [r], timeout=60)
    all_seen(t, r, w.urls(), "every URL recorded on the primary")
    diag("%d URLs; %r" % (w.acked, sync_stats(p)))
    stop_all(t, r, p)


# ---- 4: WAIT, and failover keeps every acknowledged URL ----

@test
def wait_without_a_replica_answers_0_after_its_timeout(t):
    p = primary(t)
    lc = Line(p)
    t.eq(lc.cmd("WAIT 1 100"), b"0\r\n", "WAIT on a connection that wrote "
         "nothing, no replica")
    t.eq(lc.cmd("SEEN %s" % url("w", 1)), b"0\r\n", "SEEN")
    t0 = time.monotonic()
    t.eq(lc.cmd("WAIT 1 100"), b"0\r\n", "line WAIT 1 100 with no replica")
    took = time.monotonic() - t0
    t.ok(took >= 0.09, "WAIT answered after %.3f s, before its 100 ms" % took)
    c = Resp(p.port)
    t.eq(c.cmd("SETNX", url("w", 2), "1"), 1, "SETNX")
    t0 = time.monotonic()
    t.eq(c.cmd("WAIT", "1", "100"), 0, "RESP WAIT 1 100 with no replica")
    took2 = time.monotonic() - t0
    t.ok(took2 >= 0.09, "WAIT answered after %.3f s, before its 100 ms"
         % took2)
    t.eq(c.cmd("WAIT", "0", "100"), 0, "WAIT 0")
    diag("WAIT 1 100 answered after %.3f s and %.3f s" % (took, took2))
    c.close()
    lc.close()
    stop_all(t, p)


@test
def failover_keeps_every_url_a_wait_acknowledged(t):
    rnd = random.Random()
    seed = rnd.randrange(1 << 30)
    rnd.seed(seed)
    diag("random seed %d" % seed)
    a = primary(t, "a")
    b = replica(t, a, "b")
    old, new = a, b
    acked = []                 # every acknowledged URL so far
    stats = []
    wait_ms = int(200 * SLOW)
    batch = 20 if WRAPPER else 100
    for it in range(FAILOVERS):
        wait_caught_up(t, old, [new], what="iteration %d" % it)
        prefix = "fo%d" % it
        w = Writer(old, prefix, batch=batch, pause=0, wait_ms=wait_ms,
                   resp=True)
        # at least one batch acknowledged, then kill -9 at a random moment;
        # every other time the replica is stopped (SIGSTOP) before it,
        # until a WAIT has timed out (0, asserted): the primary takes URLs
        # the replica has not acknowledged, and a WAIT that answered 1 for
        # them (counting a replica that did not acknowledge) fails the
        # check. (The stream sent meanwhile waits in the stopped replica's
        # socket, so it mostly gets those URLs after SIGCONT: how many
        # unacknowledged URLs are missing is printed, not asserted.)
        if not wait_until(lambda: w.acked > 0 or w.bad, 30, step=0.005):
            raise Failed("iteration %d: no WAIT answered >= 1 (%r)\n%s"
                         % (it, w.waits, state([old, new])))
        time.sleep(rnd.uniform(0, 0.2))
        if it % 2:
            # stopped until WAITs time out: the kill comes once a WAIT
            # sent after the stop has answered 0 (the WAIT that was in
            # flight may answer either way), and a random while later
            new.send_signal(signal.SIGSTOP)
            try:
                n = len(w.waits) + 1
                timed_out = wait_until(lambda: 0 in w.waits[n:] or w.bad or
                                       not w.th.is_alive(), 30, step=0.005)
                time.sleep(rnd.uniform(0, 0.5) * SLOW)
                old.kill9()
            finally:
                new.send_signal(signal.SIGCONT)
            zeros = w.waits[n:].count(0)
            t.ok(timed_out and zeros > 0, "iteration %d: no WAIT answered 0 "
                 "while the replica was stopped (%d answers since the stop, "
                 "the last %r; %r)" % (it, len(w.waits[n:]), w.waits[-5:],
                                       w.bad))
        else:
            old.kill9()
        w.stop(t)
        t.eq(ask(new, "REPLICAOF", "NO", "ONE"), "OK",
             "iteration %d: REPLICAOF NO ONE" % it)
        t.eq(info(new)["role"], "master", "promoted")
        acked += w.urls()
        all_seen(t, new, acked, "iteration %d: acknowledged URLs on the "
                 "promoted replica" % it)
        # what was sent but never acknowledged may be missing (that is
        # what WAIT's 0 allows); how much of it is, is printed
        unacked = w.urls(w.sent)[w.acked:]
        lost = checks(new, unacked).count(b"0") if unacked else 0
        stats.append("%d/%d%s, %d unacknowledged missing" % (
            w.acked, w.sent, "" if it % 2 == 0 else
            " (stopped, %d WAITs 0)" % w.waits.count(0), lost))
        # the old primary comes back as a replica of the new one and
        # answers what it answers (URLs it took that were never
        # replicated dropped by a full resync)
        old.start()
        t.eq(ask(old, "REPLICAOF", "127.0.0.1", str(new.port)), "OK",
             "iteration %d: REPLICAOF on the old primary" % it)
        wait_caught_up(t, new, [old], what="iteration %d, the old primary "
                       "following the new one" % it)
        sent = w.urls(w.sent)
        differ = [(u, x, y) for u, x, y in zip(sent, checks(old, sent),
                                                checks(new, sent)) if x != y]
        t.ok(not differ, "iteration %d: the old primary answers otherwise "
             "than the new one for %d of the %d URLs sent (URL, old, new): "
             "%r" % (it, len(differ), len(sent), differ[:3]))
        old, new = new, old
    diag("%d failovers; per failover URLs acknowledged/sent: %s"
         % (FAILOVERS, ", ".join(stats)))
    i = sync_stats(old)
    diag("last primary's resyncs: %r" % i)
    # the soak's end: the last primary and its replica hold the same
    wait_caught_up(t, old, [new], what="after the last failover")
    agree(t, old, [new], w.urls(w.sent), "after %d failovers" % FAILOVERS)
    stop_all(t, a, b)


@test
def the_other_replica_follows_the_promoted_one_by_a_partial_resync(t):
    """Redis's replid2: a replica promoted by REPLICAOF NO ONE takes a new
    replication id and keeps the old one with its offset, so that the old
    primary's other replica continues from where it was."""
    p = primary(t)
    r1 = replica(t, p, "r1")
    r2 = replica(t, p, "r2")
    first = [url("two", i) for i in range(5000)]
    record(t, p, first)
    wait_caught_up(t, p, [r1, r2])
    old = info(p)
    p.kill9()
    t.eq(ask(r1, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE")
    i1 = info(r1)
    t.eq(i1["role"], "master", "promoted")
    t.ok(i1["master_replid"] != old["master_replid"], "a new replid")
    t.eq((i1["master_replid2"], i1["second_repl_offset"]),
         (old["master_replid"], str(int(old["master_repl_offset"]) + 1)),
         "master_replid2 and second_repl_offset are the old primary's")
    # URLs the promoted replica takes before any replica follows it, then
    # after
    second = [url("two2", i) for i in range(5000)]
    record(t, r1, second)
    t.eq(ask(r2, "REPLICAOF", "127.0.0.1", str(r1.port)), "OK",
         "REPLICAOF the promoted replica")
    third = [url("two3", i) for i in range(5000)]
    record(t, r1, third)
    wait_caught_up(t, r1, [r2], what="the other replica follows")
    st = sync_stats(r1)
    t.eq((st["sync_partial_ok"], st["sync_full"]), (1, 0),
         "r2 resynced partially from the promoted replica: %r" % st)
    t.contains(r2.read_log(), "replication: partial resync with 127.0.0.1:%d"
               % r1.port, "r2's log")
    all_seen(t, r2, first, "URLs of the old primary on the other replica")
    all_seen(t, r2, third, "URLs the promoted replica took once the other "
             "followed it")
    all_seen(t, r2, second, "URLs the promoted replica took before the "
             "other followed it")
    stop_all(t, r1, r2)


# ---- 6: the role set at run time is kept ----

@test
def the_role_set_at_run_time_outlives_a_restart(t):
    p = primary(t)
    r = Server(t, filters=FILTERS, unix=False, name="r").start()
    first = [url("role1", i) for i in range(2000)]
    record(t, p, first)
    lc = r.client()
    t.eq(lc.cmd("REPLICAOF 127.0.0.1 %d" % p.port), "OK",
         "line REPLICAOF host port")
    lc.close()
    wait_caught_up(t, p, [r])
    all_seen(t, r, first, "before the restart")
    kept = os.path.join(r.data_dir, "replication")
    with open(kept) as f:
        t.eq(f.read().strip(), "replicaof 127.0.0.1 %d" % p.port, kept)
    t.eq(r.stop(), 0, "SIGTERM")
    second = [url("role2", i) for i in range(2000)]
    record(t, p, second)
    # same config, without replicaof: still a replica of p
    r.start()
    ri = info(r)
    t.eq((ri["role"], ri["master_host"], ri["master_port"]),
         ("slave", "127.0.0.1", str(p.port)), "the role after a restart")
    wait_caught_up(t, p, [r], what="after the restart")
    all_seen(t, r, first + second, "after the restart")
    t.eq(r.client().cmd("SEEN %s" % url("role3", 0)), "ERR " + READONLY,
         "still read-only")

    # REPLICAOF NO ONE, restart with a config that says replicaof p: the
    # kept role wins, a primary
    t.eq(ask(r, "REPLICAOF", "NO", "ONE"), "OK", "REPLICAOF NO ONE")
    with open(kept) as f:
        t.eq(f.read().strip(), "replicaof no one", kept)
    t.eq(r.client().cmd("SEEN %s" % url("role3", 0)), "0",
         "a primary takes writes")
    t.eq(r.stop(), 0, "SIGTERM")
    r.write_config("replicaof = 127.0.0.1:%d" % p.port, FILTERS)
    r.start()
    t.eq(info(r)["role"], "master", "the kept role wins over the config's "
         "replicaof")
    t.ok(re.search(r"replication: .*%s.* wins over replicaof in the config"
                   % re.escape(kept), r.read_log()),
         "the log says the kept role wins: %s" % r.read_log()[-2000:])
    rc = r.client()
    t.eq(rc.cmd("CHECK %s" % url("role3", 0)), "1",
         "the key it took as a primary is kept")
    t.eq(rc.cmd("SEEN %s" % url("role3", 1)), "0", "still a primary")
    all_seen(t, r, first + second, "what it held as a replica")
    t.eq(info(p)["connected_slaves"], "0", "p has no replica")

    # a reload whose replicaof line changed applies the config's
    r.write_config("", FILTERS)
    r.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: rc.info().get("last_reload_status") == "ok", 10),
         "reloaded: %r" % rc.info().get("last_reload_status"))
    t.eq(info(r)["role"], "master", "a primary after a reload without "
         "replicaof")
    r.write_config("replicaof = 127.0.0.1:%d" % p.port, FILTERS)
    r.send_signal(signal.SIGHUP)
    wait_info(t, r, lambda i: i.get("role") == "slave" and
              i.get("master_port") == str(p.port),
              what="a reload that sets replicaof makes it a replica")
    wait_caught_up(t, p, [r], what="after the reload")
    t.eq(r.client().cmd("CHECK %s" % url("role3", 1)), "0",
         "a full resync replaced what it took as a primary")
    all_seen(t, r, first + second, "after the reload")
    rc.close()
    stop_all(t, r, p)


# ---- 7: a filter of another shape keeps the link down ----

@test
def a_filter_of_another_capacity_keeps_the_link_down(t):
    news = "\n[filter.news]\ncapacity = %d\nerror_rate = 0.001\n" \
           "prefixes = https://news.\n"
    p = Server(t, filters=FILTERS + news % 200000, unix=False,
               name="p").start()
    urls = [url("shape", i) for i in range(3000)]
    record(t, p, urls)
    newsurls = ["https://news.example/%d" % i for i in range(3000)]
    record(t, p, newsurls)
    r = Server(t, "replicaof = 127.0.0.1:%d" % p.port,
               filters=FILTERS + news % 100000, unix=False, name="r").start()
    wait_info(t, r, lambda i: "master_link_error" in i,
              what="master_link_error appears")
    ri = info(r)
    t.eq(ri["role"], "slave", "role")
    t.eq(ri["master_link_status"], "down", "master_link_status")
    t.ok("news" in ri["master_link_error"] and
         "default" not in ri["master_link_error"],
         "master_link_error names the filter: %r" % ri["master_link_error"])
    t.ok("master_link_down_since_seconds" in ri, "link down since: %r" % ri)
    t.ok(re.search(r"replication: .*news", r.read_log()),
         "the replica's log names the filter: %s" % r.read_log()[-2000:])
    # none of the primary's keys, in either filter
    for what in (urls, newsurls):
        r_ = checks(r, what)
        t.ok(r_.count(b"1") < 30, "%d of %d of the primary's URLs on the "
             "replica" % (r_.count(b"1"), len(what)))
    t.eq(r.client().cmd("SEEN %s" % url("shape", 0)), "ERR " + READONLY,
         "still read-only")
    # the same shape: the link comes up and the keys arrive
    t.eq(r.stop(), 0, "SIGTERM")
    subprocess.call(["rm", "-rf", r.data_dir])
    os.makedirs(r.data_dir)
    r.write_config("replicaof = 127.0.0.1:%d" % p.port, FILTERS + news %
                   200000)
    r.start()
    wait_caught_up(t, p, [r], what="once the shapes agree")
    t.ok("master_link_error" not in info(r), "no link error")
    all_seen(t, r, urls + newsurls, "once the shapes agree")
    stop_all(t, r, p)


if __name__ == "__main__":
    run()
