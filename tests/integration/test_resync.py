#!/usr/bin/python3
"""
A restore or a MERGE on a primary reaches every replica (issue 29).

A restore (BF.LOADCHUNK, here by `seen-cli restore`) and MERGE change a
filter whole; they are not in the replication stream, so every replica
must sync fully after them. A replica exactly caught up at that moment
used to resume partially from the primary's offset and never get the
change. Each case below failed before the fix and checks, with real seend
processes:

- a caught-up replica holds a restored filter and a merged key, and the
  two sides' INFO replication agree on master_replid and the offset;
- a replica caught mid-way (stopped by SIGSTOP right after REPLICAOF, while
  it connects or receives its full sync) holds both once it runs again;
- a replica that was offline (killed -9 at the primary's offset) during two
  restores and MERGEs (the second with an empty backlog) holds them all
  after it starts again;
- a failover right after a restore (WAIT 1 acknowledging it) answers every
  restored key seen on the promoted replica;
"""
import signal
import subprocess

from seendtest import *
from repltest import *

# seen-cli restore waits for the restored filter's first snapshot; the
# filters here are small so that it is quick.
KEYS = 5000 if WRAPPER else 20000


def cli(t, s, *args):
    """seen-cli against s; its output, failing on a non-zero exit."""
    p = subprocess.run([SEEN_CLI, "-p", str(s.port)] + list(args),
                       capture_output=True, text=True, timeout=120 * SLOW)
    if p.returncode != 0:
        raise Failed("seen-cli %s: exit %d: %s%s" % (
            " ".join(args), p.returncode, p.stdout, p.stderr))
    return p.stdout


def keys(prefix, n=KEYS):
    return ["%s-%d" % (prefix, i) for i in range(n)]


def madd(t, s, name, members):
    """BF.MADD of members into the filter name (made at first use), in
    batches; every reply an answer."""
    c = Resp(s.port, timeout=60 * SLOW)
    try:
        for i in range(0, len(members), 1000):
            r = c.cmd("BF.MADD", name, *members[i:i + 1000])
            t.ok(isinstance(r, list) and len(r) == len(members[i:i + 1000]),
                 "BF.MADD %s: %r" % (name, r if not isinstance(r, list)
                                     else r[:3]))
    finally:
        c.close()


def held(s, name, members):
    """How many of members BF.MEXISTS answers 1 for on s (0 if the filter
    is not there)."""
    c = Resp(s.port, timeout=60 * SLOW)
    n = 0
    try:
        for i in range(0, len(members), 1000):
            r = c.cmd("BF.MEXISTS", name, *members[i:i + 1000])
            if isinstance(r, Err):
                return 0
            n += sum(1 for x in r if x == 1)
    finally:
        c.close()
    return n


def restore_and_merge(t, p, tag, settle=lambda: None):
    """On p: a filter src<tag> of KEYS keys dumped and restored as
    copy<tag>; other<tag> with one key merged into src<tag>. settle() runs
    before the restore's last chunk can arrive and before the MERGE (to
    have the replicas exactly at the primary's offset then). Returns the
    (filter, keys) pairs a replica must hold after."""
    src, copy, other = "src" + tag, "copy" + tag, "other" + tag
    madd(t, p, src, keys("k" + tag))
    madd(t, p, other, ["merged" + tag])
    f = t.path(copy + ".dump")
    cli(t, p, "dump", src, f)
    settle()
    cli(t, p, "restore", copy, f)
    settle()
    t.eq(ask(p, "MERGE", src, other), "OK", "MERGE %s %s" % (src, other))
    for name, ks in ((copy, keys("k" + tag)), (src, ["merged" + tag])):
        t.eq(held(p, name, ks), len(ks), "%s on the primary" % name)
    return [(copy, keys("k" + tag)), (src, ["merged" + tag]),
            (src, keys("k" + tag))]


def holds_all(t, p, r, want, what):
    """r caught up with p, holding every key of want, with the same
    replication id and offset."""
    wait_caught_up(t, p, [r], timeout=60, what=what)
    for name, ks in want:
        n = held(r, name, ks)
        t.ok(n == len(ks), "%s: %d of %d keys of %s on the replica\n%s" % (
            what, n, len(ks), name, state([p, r])))
    pi, ri = info(p), info(r)
    t.eq(ri["master_replid"], pi["master_replid"],
         "%s: the replica's master_replid is the primary's" % what)

    def same_offset():
        # read between two of the primary's: its heartbeat (a PING in
        # the stream) may land between two INFOs, which is not a lag
        before = info(p)["master_repl_offset"]
        mine = info(r)["master_repl_offset"]
        return mine == before == info(p)["master_repl_offset"]

    t.ok(wait_until(same_offset, 10, step=0.05),
         "%s: master_repl_offset, the replica's %s and the primary's %s" % (
             what, info(r)["master_repl_offset"],
             info(p)["master_repl_offset"]))
    agree(t, p, [r], [], what)


def log_says_full_sync_after(t, p, mark, what):
    """The primary's log, after the first mark bytes, has a full sync and
    no partial resync."""
    tail = p.read_log()[mark:]
    t.ok("full sync" in tail and "resyncs partially" not in tail,
         "%s: the primary's log after the change:\n%s" % (what, tail[-3000:]))


@test
def a_caught_up_replica_holds_a_restore_and_a_merge(t):
    p = primary(t)
    r = replica(t, p)
    record(t, p, [url("before", i) for i in range(2000)])
    wait_caught_up(t, p, [r])
    old_id = info(p)["master_replid"]
    mark = len(p.read_log())
    settle = lambda: wait_caught_up(t, p, [r])
    want = restore_and_merge(t, p, "1", settle)
    holds_all(t, p, r, want, "caught up at the restore")
    t.ok(info(p)["master_replid"] != old_id,
         "the restore took a new replication id")
    log_says_full_sync_after(t, p, mark, "caught up")
    # and again, now that the replica is at the new id's offset
    want += restore_and_merge(t, p, "2", settle)
    holds_all(t, p, r, want, "a second restore and merge")
    stop_all(t, r, p)


@test
def a_replica_caught_mid_sync_holds_a_restore_and_a_merge(t):
    # a default filter large enough that its image takes a while to send
    big = FILTERS.replace("capacity = 2000000", "capacity = 30000000")
    p = Server(t, filters=big, unix=False, name="p").start()
    record(t, p, [url("before", i) for i in range(2000)])
    r = Server(t, filters=big, unix=False, name="r").start()
    t.eq(ask(r, "REPLICAOF", "127.0.0.1", str(p.port)), "OK", "REPLICAOF")
    r.send_signal(signal.SIGSTOP)
    try:
        # connecting, in its handshake or receiving the image: not online
        pi = info(p)
        t.ok(not any("state=online" in v for k, v in pi.items()
                     if k.startswith("slave")),
             "the replica is not online when the restore begins: %r" % pi)
        want = restore_and_merge(t, p, "1")
    finally:
        r.send_signal(signal.SIGCONT)
    holds_all(t, p, r, want, "mid-sync at the restore")
    stop_all(t, r, p)


@test
def a_replica_offline_during_restores_and_merges_holds_them_after(t):
    p = primary(t)
    r = replica(t, p)
    # everything but the restore and the MERGE written while it is online
    for tag in ("1", "2"):
        madd(t, p, "src" + tag, keys("k" + tag))
        madd(t, p, "other" + tag, ["merged" + tag])
    wait_caught_up(t, p, [r])
    wait_image_saved(t, r)
    # killed -9: its journal keeps where it had got to, so it asks to
    # continue from the primary's offset when it comes back
    r.kill9()
    mark = len(p.read_log())
    want = []
    # twice: the second finds no replica and an empty backlog
    for tag in ("1", "2"):
        f = t.path("copy%s.dump" % tag)
        cli(t, p, "dump", "src" + tag, f)
        cli(t, p, "restore", "copy" + tag, f)
        t.eq(ask(p, "MERGE", "src" + tag, "other" + tag), "OK", "MERGE")
        want += [("copy" + tag, keys("k" + tag)),
                 ("src" + tag, ["merged" + tag])]
    r.start()
    holds_all(t, p, r, want, "offline at the restores")
    log_says_full_sync_after(t, p, mark, "offline")
    stop_all(t, r, p)


@test
def a_failover_right_after_a_restore_answers_every_restored_key_seen(t):
    p = primary(t)
    r = replica(t, p)
    madd(t, p, "src", keys("k"))
    f = t.path("copy.dump")
    cli(t, p, "dump", "src", f)
    wait_caught_up(t, p, [r])
    cli(t, p, "restore", "copy", f)
    # the replica reached the primary's offset after the restore (a WAIT
    # here would answer at once: this connection wrote nothing, and a WAIT
    # covers its own connection's writes, as Redis's; seen-cli's is gone)
    wait_caught_up(t, p, [r], what="after the restore")
    p.kill9()
    t.eq(ask(r, "REPLICAOF", "NO", "ONE"), "OK", "the replica promoted")
    n = held(r, "copy", keys("k"))
    t.eq(n, KEYS, "restored keys seen on the promoted replica")
    stop_all(t, r)


if __name__ == "__main__":
    run()
