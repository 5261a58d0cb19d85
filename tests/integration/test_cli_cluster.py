"""
seen-cli cluster <verb> (issue 33, step 2; INTERFACE.md, "A cluster of
nodes"): create, add-node, del-node, check, fix and info, with the habits
and the output of redis-cli --cluster, over real seend nodes in cluster
mode (CLUSTER GETMAP / SETMAP); and seen-cli following ERR MOVED.

create splits the slots as redis-cli does (Master[i] -> Slots a - b) and
makes the nodes agree; --replicas 1 makes replicas of the last nodes.
add-node adds an empty primary or a replica; del-node removes an empty
node and refuses one that owns slots. check exits 0 only when every node
is reachable, every node holds the entry's map, and every slot is
covered; fix pushes the newest map to the nodes that hold an older one
and covers uncovered slots. To hold a disagreement still while check
looks at it, those tests give the nodes an auth_token and no
primary_token: the nodes cannot pass a map on to each other (peer.c logs
in as a replica does), only seen-cli -a can. Over --tls the map gets
each node's plain and TLS ports; on a terminal create asks first.
"""
import os
import re
import select
import subprocess
import time

from seendtest import *
from clustertest import addr, ask, cluster_node, getmap, myid, setmap

TOKEN = "cluster-secret"
ID = r"[0-9a-f]{40}"


def nodes(t, n, auth=None, cluster=True, name="n"):
    """n nodes (name0, name1, ...), in cluster mode unless cluster=False,
    with auth_token auth if given."""
    server = "auth_token = %s\n" % auth if auth else ""
    if cluster:
        return [cluster_node(t, "%s%d" % (name, i), server,
                             filters=DEFAULT_FILTERS) for i in range(n)]
    return [Server(t, server, filters=DEFAULT_FILTERS, unix=False,
                   name="%s%d" % (name, i)).start() for i in range(n)]


def cli(t, *args, auth=None):
    """seen-cli args (-a auth first, a token): (exit status, stdout,
    stderr)."""
    argv = [SEEN_CLI] + (["-a", auth] if auth else []) + list(args)
    p = subprocess.run(argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=120 * SLOW)
    return p.returncode, p.stdout, p.stderr


def epoch(text):
    return int(re.search(r"^epoch (\d+)$", text, re.M).group(1))


def create(t, ns, *extra, auth=None):
    rc, out, err = cli(t, "cluster", "create", *[addr(s) for s in ns],
                       *extra, auth=auth)
    t.eq(rc, 0, "create exits 0; stdout %s stderr %s" % (out, err))
    return out


def check(t, s, auth=None):
    return cli(t, "cluster", "check", addr(s), auth=auth)


def with_epoch(text, e, drop=None):
    """A map's text with another epoch, and drop removed from the slots
    lines (" 0-5460" -> " 100-5460" as given)."""
    text = re.sub(r"^epoch \d+$", "epoch %d" % e, text, flags=re.M)
    if drop:
        text = text.replace(drop[0], drop[1])
    return text


@test
def create_three_nodes_splits_slots_as_redis_cli_and_check_agrees(t):
    ns = nodes(t, 3)
    out = create(t, ns)
    for line in (">>> Performing hash slots allocation on 3 nodes...",
                 "Master[0] -> Slots 0 - 5460",
                 "Master[1] -> Slots 5461 - 10922",
                 "Master[2] -> Slots 10923 - 16383",
                 ">>> Performing Cluster Check (using node %s)"
                 % addr(ns[0]),
                 "[OK] All nodes agree about slots configuration.",
                 "[OK] All 16384 slots covered."):
        t.contains(out, line + "\n", "create's output")
    maps = [getmap(s) for s in ns]
    t.ok(all(m == maps[0] for m in maps), "every node holds one map: %r"
         % maps)
    t.eq(epoch(maps[0]), 1, "the first map's epoch")
    for i, s in enumerate(ns):
        t.contains(maps[0], "node %s 127.0.0.1 %d 0 -\n" % (myid(s), s.port),
                   "the map names node %d" % i)

    rc, out, err = check(t, ns[1])
    t.eq(rc, 0, "check exits 0: %s %s" % (out, err))
    t.ok(re.search(r"^M: %s 127\.0\.0\.1:%d\n   slots:\[0-5460\] \(5461 "
                   r"slots\) master\n" % (myid(ns[0]), ns[0].port), out,
                   re.M), "check lists the first primary: %s" % out)
    t.ok(re.search(r"^127\.0\.0\.1:%d \([0-9a-f]{8}\.\.\.\) -> 0 keys \| "
                   r"5462 slots \| 0 slaves\.$" % ns[1].port, out, re.M),
         "check's info line of the second primary: %s" % out)
    t.contains(out, "[OK] 0 keys in 3 masters.\n")
    t.contains(out, "0.00 keys per slot on average.\n")

    # ordinary commands follow ERR MOVED, whichever node they start at
    for i in range(30):
        rc, out, err = cli(t, "-p", str(ns[i % 3].port), "SEEN",
                           "https://example.com/%d" % i)
        t.eq((rc, out, err), (0, "0\n", ""), "SEEN %d through node %d"
             % (i, i % 3))
    for i in range(30):
        rc, out, err = cli(t, "-p", str(ns[(i + 1) % 3].port), "SEEN",
                           "https://example.com/%d" % i)
        t.eq((rc, out, err), (0, "1\n", ""), "SEEN %d again" % i)
    rc, out, err = cli(t, "cluster", "info", addr(ns[2]))
    t.eq(rc, 0, "info exits 0: %s" % err)
    keys = [int(k) for k in re.findall(r"-> (\d+) keys \|", out)]
    t.eq(len(keys), 3, "info lists 3 primaries: %s" % out)
    t.eq(sum(keys), 30, "info's keys: %s" % out)
    t.ok(all(k > 0 for k in keys), "the keys spread over the 3 nodes: %s"
         % out)
    t.contains(out, "[OK] 30 keys in 3 masters.\n")


@test
def create_with_replicas_makes_the_last_nodes_replicas(t):
    ns = nodes(t, 6)
    out = create(t, ns, "--replicas", "1")
    for p, r in ((0, 3), (1, 4), (2, 5)):
        t.contains(out, "Adding replica %s to %s\n" % (addr(ns[r]),
                                                        addr(ns[p])))
    rc, out, err = check(t, ns[4])
    t.eq(rc, 0, "check exits 0: %s %s" % (out, err))
    t.eq(out.count("   1 additional replica(s)\n"), 3, out)
    for p, r in ((0, 3), (1, 4), (2, 5)):
        t.ok(re.search(r"^S: %s 127\.0\.0\.1:%d\n   slots: \(0 slots\) "
                       r"slave\n   replicates %s$" % (myid(ns[r]),
                                                      ns[r].port,
                                                      myid(ns[p])),
                       out, re.M), "node %d replicates node %d: %s"
             % (r, p, out))
        t.ok(wait_until(lambda: b"role:slave" in ask(ns[r], "INFO",
                                                      "replication"), 10),
             "node %d is a replica (REPLICAOF sent)" % r)


@test
def add_node_then_del_node(t):
    ns = nodes(t, 5)
    create(t, ns[:3])
    rc, out, err = cli(t, "cluster", "add-node", addr(ns[3]), addr(ns[0]))
    t.eq(rc, 0, "add-node exits 0: %s %s" % (out, err))
    t.contains(out, ">>> Adding node %s to cluster %s\n" % (addr(ns[3]),
                                                           addr(ns[0])))
    t.contains(out, "[OK] New node added correctly.\n")
    rc, out, err = check(t, ns[3])
    t.eq(rc, 0, "check through the new node exits 0: %s" % out)
    t.contains(out, "M: %s %s\n   slots: (0 slots) master\n"
               % (myid(ns[3]), addr(ns[3])))
    t.eq(epoch(getmap(ns[0])), 2, "add-node's epoch")

    id0 = myid(ns[0])
    rc, out, err = cli(t, "cluster", "add-node", addr(ns[4]), addr(ns[1]),
                       "--replica-of", id0)
    t.eq(rc, 0, "add-node --replica-of exits 0: %s %s" % (out, err))
    rc, out, err = check(t, ns[2])
    t.eq(rc, 0, "check exits 0: %s" % out)
    t.contains(out, "S: %s %s\n   slots: (0 slots) slave\n   replicates %s\n"
               % (myid(ns[4]), addr(ns[4]), id0))
    t.ok(wait_until(lambda: b"role:slave" in ask(ns[4], "INFO",
                                                  "replication"), 10),
         "the added replica replicates")

    # a node that owns slots stays
    rc, out, err = cli(t, "cluster", "del-node", addr(ns[0]), myid(ns[1]))
    t.eq(rc, 1, "del-node of a node with slots exits 1")
    t.contains(out, "[ERR] Node %s is not empty! Reshard data away and try "
               "again.\n" % addr(ns[1]))
    t.eq(epoch(getmap(ns[0])), 3, "the refused del-node changed nothing")
    rc, out, err = cli(t, "cluster", "del-node", addr(ns[0]), "f" * 40)
    t.eq(rc, 1, "del-node of an unknown ID exits 1")
    t.contains(out, "[ERR] No such node ID %s\n" % ("f" * 40))

    # the empty primary and the replica go
    for gone in (ns[3], ns[4]):
        gid = myid(gone)
        rc, out, err = cli(t, "cluster", "del-node", addr(ns[0]), gid)
        t.eq(rc, 0, "del-node exits 0: %s %s" % (out, err))
        t.contains(out, ">>> Removing node %s from cluster %s\n"
                   % (gid, addr(ns[0])))
        for s in ns[:3]:
            t.ok(gid not in getmap(s), "%s no longer names %s"
                 % (addr(s), gid))
    rc, out, err = check(t, ns[1])
    t.eq(rc, 0, "check after del-node exits 0: %s" % out)
    t.eq(len(re.findall(r"^[MS]: ", out, re.M)), 3, out)
    t.eq(epoch(getmap(ns[1])), 5, "two del-nodes, two epochs")


@test
def check_reports_a_node_with_an_older_map_and_fix_pushes_the_newest(t):
    ns = nodes(t, 3, auth=TOKEN)
    create(t, ns, auth=TOKEN)
    text = getmap(ns[0], auth=TOKEN)
    newer = with_epoch(text, 7)
    t.eq(setmap(ns[2], newer, auth=TOKEN), b"+OK\r\n",
         "a newer map by hand to one node")
    for s in ns[:2]:
        rc, out, err = check(t, s, auth=TOKEN)
        t.eq(rc, 1, "check through %s exits 1: %s" % (addr(s), out))
        t.contains(out, "[ERR] Nodes don't agree about configuration!\n")
        t.contains(out, "*** Node %s holds the map of epoch 7 (newer)"
                   % addr(ns[2]))
    rc, out, err = check(t, ns[2], auth=TOKEN)
    t.eq(rc, 1, "check through the newer node exits 1 too")
    t.contains(out, "*** Node %s holds the map of epoch 1, %s holds epoch 7"
               % (addr(ns[0]), addr(ns[2])))

    rc, out, err = cli(t, "cluster", "fix", addr(ns[0]), auth=TOKEN)
    t.eq(rc, 0, "fix exits 0: %s %s" % (out, err))
    t.contains(out, ">>> Sending the map of epoch 7 to %s (it holds epoch "
               "1)\n" % addr(ns[0]))
    t.ok(">>> Sending the map of epoch 7 to %s" % addr(ns[2]) not in out,
         "the node that holds the newest map is left alone")
    for s in ns:
        t.eq(getmap(s, auth=TOKEN), newer, "%s holds the newest map"
             % addr(s))
        rc, out, err = check(t, s, auth=TOKEN)
        t.eq(rc, 0, "check exits 0 after fix: %s" % out)


@test
def check_reports_uncovered_slots_and_fix_covers_them(t):
    ns = nodes(t, 3, auth=TOKEN)
    create(t, ns, auth=TOKEN)
    text = getmap(ns[0], auth=TOKEN)
    id0 = myid(ns[0], auth=TOKEN)
    holed = with_epoch(text, 4, ("slots %s 0-5460" % id0,
                                 "slots %s 100-5460" % id0))
    t.ok(holed != with_epoch(text, 4), "the hole is made")
    for s in ns:
        t.eq(setmap(s, holed, auth=TOKEN), b"+OK\r\n",
             "the map with a hole to %s" % addr(s))
    rc, out, err = check(t, ns[1], auth=TOKEN)
    t.eq(rc, 1, "check exits 1: %s" % out)
    t.contains(out, "[OK] All nodes agree about slots configuration.\n")
    t.contains(out, "[ERR] Not all 16384 slots are covered by nodes.\n")

    rc, out, err = cli(t, "cluster", "fix", addr(ns[1]), auth=TOKEN)
    t.eq(rc, 0, "fix exits 0: %s %s" % (out, err))
    t.contains(out, "0-99\n", "fix lists the uncovered slots")
    t.contains(out, "Covering slots 0-99 with %s\n" % addr(ns[0]),
               "the primary with the fewest slots takes them")
    t.contains(out, "[OK] All 16384 slots covered.\n")
    for s in ns:
        m = getmap(s, auth=TOKEN)
        t.eq(epoch(m), 5, "fix's map has the next epoch")
        t.contains(m, "slots %s 0-5460\n" % id0)


@test
def check_exits_1_when_a_node_is_unreachable(t):
    ns = nodes(t, 3)
    create(t, ns)
    down = ns[2]
    down.stop()
    rc, out, err = check(t, ns[0])
    t.eq(rc, 1, "check exits 1: %s" % out)
    t.ok(re.search(r"^\[ERR\] Node %s \(%s\) is not reachable: "
                   % (re.escape(addr(down)), ID), out, re.M),
         "check names the unreachable node: %s" % out)
    t.contains(out, "[OK] All 16384 slots covered.\n",
               "the map still covers every slot")
    rc, out, err = cli(t, "cluster", "info", addr(ns[1]))
    t.eq(rc, 1, "info exits 1 when a primary cannot be asked")
    down.start()
    rc, out, err = check(t, ns[0])
    t.eq(rc, 0, "check exits 0 once the node is back: %s" % out)
    rc, out, err = check(t, down)
    t.eq(rc, 0, "check through the restarted node (its map kept): %s"
         % out)


@test
def create_and_add_node_refuse_nodes_of_other_clusters_with_keys_or_alone(t):
    ns = nodes(t, 3)
    create(t, ns[:2])
    rc, out, err = cli(t, "cluster", "create", addr(ns[2]), addr(ns[1]))
    t.eq(rc, 1, "create with a node of another cluster exits 1")
    t.contains(out, "[ERR] Node %s is not empty." % addr(ns[1]))
    t.eq(getmap(ns[2]), None, "nothing was pushed")

    plain = nodes(t, 1, cluster=False, name="plain")[0]
    rc, out, err = cli(t, "cluster", "create", addr(ns[2]), addr(plain))
    t.eq(rc, 1, "create with a standalone node exits 1")
    t.contains(out, "[ERR] Node %s is not configured as a cluster node"
               % addr(plain))
    rc, out, err = check(t, plain)
    t.eq(rc, 1, "check of a standalone node exits 1")

    # a lone node without a map is a cluster of one: check passes
    rc, out, err = check(t, ns[2])
    t.eq(rc, 0, "check of a cluster of one: %s" % out)
    t.contains(out, "slots:[0-16383] (16384 slots) master\n")

    # a node that holds a key is refused by create and add-node, as
    # redis-cli refuses one (its keys of slots the map would not give it
    # would be freed); the same node empty again is taken
    full = nodes(t, 1, name="full")[0]
    t.eq(ask(full, "SETNX", "https://example.org/kept", "1"), 1)
    want = ("[ERR] Node %s is not empty. Either the node already knows "
            "other nodes (check with CLUSTER GETMAP) or contains some key "
            "in database 0.\n" % addr(full))
    rc, out, err = cli(t, "cluster", "create", addr(ns[2]), addr(full))
    t.eq(rc, 1, "create with a node holding a key exits 1")
    t.contains(out, want)
    t.eq((getmap(ns[2]), getmap(full)), (None, None), "nothing was pushed")
    rc, out, err = cli(t, "cluster", "add-node", addr(full), addr(ns[0]))
    t.eq(rc, 1, "add-node of a node holding a key exits 1")
    t.contains(out, want)
    t.eq(getmap(full), None, "nothing was pushed to it")
    t.eq(ask(full, "EXISTS", "https://example.org/kept"), 1,
         "its key is still there")
    t.eq(ask(full, "DEL", "default"), 1)
    # a named filter, even an empty one (DBSIZE 0), makes it not empty:
    # taking the map would drop it where its slot is not the node's
    t.eq(ask(full, "BF.RESERVE", "named", "0.01", "1000"), "OK")
    t.eq(ask(full, "DBSIZE"), 0, "an empty named filter: DBSIZE 0")
    rc, out, err = cli(t, "cluster", "add-node", addr(full), addr(ns[0]))
    t.eq(rc, 1, "add-node of a node holding an empty named filter exits 1")
    t.contains(out, want)
    t.eq(ask(full, "DEL", "named"), 1)
    rc, out, err = cli(t, "cluster", "add-node", addr(full), addr(ns[0]))
    t.eq(rc, 0, "emptied, it is added: %s" % out)


def cli_in(t, stdin, *args):
    p = subprocess.run([SEEN_CLI] + list(args), capture_output=True,
                       text=True, input=stdin, timeout=120 * SLOW)
    return p.returncode, p.stdout, p.stderr


@test
def pipe_and_script_modes_follow_moved_too(t):
    ns = nodes(t, 3)
    create(t, ns)
    urls = ["https://example.org/page/%d" % i for i in range(600)]
    text = "".join(u + "\n" for u in urls)
    rc, out, err = cli_in(t, text, "-p", str(ns[0].port), "--new")
    t.eq((rc, err), (0, ""), "--new exits 0")
    t.eq(out, text, "--new prints every new URL, in the input's order")
    rc, out, err = cli_in(t, text, "-p", str(ns[1].port), "--new")
    t.eq((rc, out, err), (0, "", ""), "none is new through another node")
    more = "".join("https://example.org/more/%d\n" % i for i in range(50))
    rc, out, err = cli_in(t, text + more, "-p", str(ns[2].port), "--check")
    t.eq((rc, out, err), (0, more, ""), "--check prints the unknown ones")
    script = "".join("SEEN %s\n" % u for u in urls[:20]) + \
        "SEEN https://example.org/new\n"
    rc, out, err = cli_in(t, script, "-p", str(ns[0].port))
    t.eq((rc, out, err), (0, "1\n" * 20 + "0\n", ""),
         "commands read from stdin follow MOVED")
    keys = sum(int(ask(s, "DBSIZE")) for s in ns)
    t.eq(keys, 601, "each URL is recorded once, on its own node")


@test
def over_tls_the_map_records_both_ports(t):
    from tlspki import pki
    p = pki(t)
    ns = [cluster_node(t, "n%d" % i, tls=p, filters=DEFAULT_FILTERS)
          for i in range(3)]
    tls = ["--tls", "--cacert", p.ca]
    rc, out, err = cli(t, *tls, "cluster", "create",
                       *["127.0.0.1:%d" % s.tport for s in ns])
    t.eq(rc, 0, "create over TLS exits 0: %s %s" % (out, err))
    m = getmap(ns[0])
    for s in ns:
        t.contains(m, "node %s 127.0.0.1 %d %d -\n" % (myid(s), s.port,
                                                       s.tport),
                   "the map has the plain and the TLS port")
    rc, out, err = cli(t, *tls, "cluster", "check", "127.0.0.1:%d"
                       % ns[1].tport)
    t.eq(rc, 0, "check over TLS exits 0: %s %s" % (out, err))
    rc, out, err = check(t, ns[2])
    t.eq(rc, 0, "check without TLS exits 0: %s %s" % (out, err))
    for i in range(12):
        rc, out, err = cli(t, *tls, "-p", str(ns[0].tport), "SEEN",
                           "https://tls.example/%d" % i)
        t.eq((rc, out, err), (0, "0\n", ""), "SEEN %d over TLS" % i)
    t.eq(sum(int(ask(s, "DBSIZE")) for s in ns), 12, "12 keys recorded")


def on_terminal(t, args, answer):
    """seen-cli with a pseudo-terminal for stdin and stdout: waits for the
    question, types answer; returns the exit status and the output."""
    master, slave = os.openpty()
    proc = subprocess.Popen([SEEN_CLI] + args, stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True)
    os.close(slave)
    buf, asked = b"", False
    deadline = time.time() + 60 * SLOW
    try:
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 0.1)
            chunk = b""
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # EIO: the child closed its end
                    chunk = b""
                buf += chunk
            if not asked and b"(type 'yes' to accept): " in buf:
                os.write(master, answer.encode())
                asked = True
            if not chunk and proc.poll() is not None:
                return proc.returncode, buf.decode(errors="replace")
        raise Failed("seen-cli did not exit; terminal: %r" % buf[-500:])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@test
def create_asks_on_a_terminal(t):
    ns = nodes(t, 3)
    args = ["cluster", "create"] + [addr(s) for s in ns]
    rc, out = on_terminal(t, args, "no\n")
    t.eq(rc, 1, "create answered no exits 1: %r" % out)
    t.contains(out, "Can I set the above configuration? (type 'yes' to "
               "accept): ")
    t.ok(all(getmap(s) is None for s in ns), "nothing was pushed")
    rc, out = on_terminal(t, args, "yes\n")
    t.eq(rc, 0, "create answered yes exits 0: %r" % out)
    t.contains(out, "[OK] All 16384 slots covered.")
    t.eq(epoch(getmap(ns[2])), 1, "the map was pushed")


@test
def reshard_and_rebalance_say_what_they_need(t):
    rc, out, err = cli(t, "cluster", "reshard", "127.0.0.1:1", "--yes")
    t.eq(rc, 2, "reshard without --from, --to and --slots exits 2")
    t.contains(err, "usage: seen-cli cluster reshard host:port --from")
    rc, out, err = cli(t, "cluster", "rebalance", "127.0.0.1:1",
                       "--weight", "abc")
    t.eq(rc, 2, "a weight that is not <id>=<w> exits 2")
    t.contains(err, "abc: not <id>=<weight>")
    rc, out, err = cli(t, "cluster", "rebalance", "127.0.0.1:1",
                       "--threshold", "x")
    t.eq(rc, 2, "a threshold that is not a number exits 2")
    rc, out, err = cli(t, "cluster", "frobnicate")
    t.eq(rc, 2, "an unknown verb exits 2")
    rc, out, err = cli(t, "cluster", "create")
    t.eq(rc, 2, "create without nodes exits 2")


if __name__ == "__main__":
    run()
