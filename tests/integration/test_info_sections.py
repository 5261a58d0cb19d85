#!/usr/bin/env python3
"""INFO over RESP has Redis 7's sections and field names with true values,
side by side with a real redis-server 7.0.15: every field the contract
names exists in both and in the same section, sections come in Redis's
order (then seend's own, "# Seend"), section words select as Redis's do,
and the values are true (clients, commands, connections, memory against the
filters' bytes, keyspace = the filters, snapshots, hits and misses, the
commands' rate under load, CPU). redis-cli --stat shows true figures. The
line protocol's INFO is unchanged."""
import os
import re
import shutil
import subprocess
import time

from seendtest import *

# What the contract (INTERFACE.md, "Crawler stacks as they are") names,
# by section, plus what Sentinel and redis-cli --stat read.
CONTRACT = {
    "Server": ["redis_version", "redis_mode", "os", "arch_bits", "process_id",
               "run_id", "tcp_port", "uptime_in_seconds", "uptime_in_days",
               "executable", "config_file"],
    "Clients": ["connected_clients", "blocked_clients", "maxclients"],
    "Memory": ["used_memory", "used_memory_human", "used_memory_rss",
               "used_memory_peak", "maxmemory", "maxmemory_human"],
    "Persistence": ["loading", "rdb_bgsave_in_progress", "rdb_last_save_time",
                    "rdb_last_bgsave_status", "aof_enabled",
                    "aof_rewrite_in_progress", "aof_last_write_status"],
    "Stats": ["total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "rejected_connections",
              "keyspace_hits", "keyspace_misses", "sync_full",
              "sync_partial_ok", "sync_partial_err"],
    "Replication": ["role", "connected_slaves", "master_replid",
                    "master_repl_offset"],
    "CPU": ["used_cpu_sys", "used_cpu_user"],
    "Keyspace": ["db0"],
}
# seend's own fields that the contract puts in a Redis section
# seend's own Stats fields: unknown_commands (INTERFACE.md, crawler stacks),
# acl_access_denied_auth (users: Redis 7.2's name, not yet in 7.0.15's INFO)
SEEND_EXTRA = {"Stats": {"unknown_commands", "acl_access_denied_auth"}}
# Redis's sections seend has nothing of (no modules, no per-command or
# per-error tables)
REDIS_ONLY = {"Modules", "Errorstats", "Commandstats", "Latencystats"}
MIN64 = "-9223372036854775808"


def sections(text):
    """INFO's text as [(section, {field: value})], in order."""
    if isinstance(text, bytes):
        text = text.decode()
    out = []
    for line in text.split("\r\n"):
        if line.startswith("# "):
            out.append((line[2:], {}))
        elif line:
            if not out:
                raise Failed("a field before any section: %r" % line)
            k, _, v = line.partition(":")
            out[-1][1][k] = v
    return out


def info(port, *words):
    c = Resp(port)
    try:
        got = c.cmd("INFO", *words)
    finally:
        c.close()
    if not isinstance(got, bytes):
        raise Failed("INFO %s: %r" % (" ".join(words), got))
    return got


def fields(port, *words):
    """INFO's fields of all its sections as one dict (field names are
    distinct in the Redis sections; seend's own come last)."""
    return flat(info(port, *words))


def headers(text):
    return [name for name, _ in sections(text)]


def filter_bytes(s):
    c = s.client()
    c.send("FILTERS\n")
    lines = c.lines_until_end()
    c.close()
    return [int(re.search(r"bytes=(\d+)", l).group(1)) for l in lines]


@test
def contract_fields_exist_in_both_in_the_same_sections_and_order(t):
    r = RedisServer(t)
    with Server(t) as s:
        rc = Resp(r.port)
        rc.cmd("SET", "k", "1")   # Redis lists db0 only when it holds a key
        rc.close()
        ours, theirs = sections(info(s.port)), sections(info(r.port))
        od, td = dict(ours), dict(theirs)
        for sec, names in CONTRACT.items():
            t.ok(sec in td, "redis-server has # %s" % sec)
            t.ok(sec in od, "seend has # %s: %r" % (sec, headers(info(s.port))))
            for n in names:
                t.ok(n in td[sec], "redis-server: %s in # %s" % (n, sec))
                t.ok(n in od[sec], "seend: %s in # %s" % (n, sec))
        # every field seend writes in a Redis section is Redis's, there
        for sec, f in ours:
            if sec == "Seend":
                continue
            extra = set(f) - set(td.get(sec, {})) - SEEND_EXTRA.get(sec, set())
            t.eq(sorted(extra), [], "seend's # %s fields that Redis 7.0.15 "
                 "lacks there" % sec)
        # Redis's order, seend's own section last
        names = [n for n, _ in ours]
        t.eq(names[-1], "Seend", "# Seend comes last")
        t.eq(names[:-1], [n for n, _ in theirs if n not in REDIS_ONLY],
             "sections in Redis's order")
        # values whose form is Redis's
        for k in ("redis_version", "redis_mode", "os", "arch_bits"):
            t.eq(od["Server"][k], td["Server"][k], "Server %s" % k)
        t.eq(od["Server"]["redis_version"], "7.0.15", "redis_version")
        for k in ("maxmemory", "maxmemory_human", "maxmemory_policy"):
            t.eq(od["Memory"][k], td["Memory"][k], "Memory %s" % k)
        t.ok(re.fullmatch(r"\d+(\.\d\d[KMGTP]|B)",
                          od["Memory"]["used_memory_human"]),
             "used_memory_human %r" % od["Memory"]["used_memory_human"])
        for k in ("loading", "rdb_bgsave_in_progress", "rdb_last_bgsave_status",
                  "aof_rewrite_in_progress", "aof_last_write_status"):
            t.eq(od["Persistence"][k], td["Persistence"][k], "Persistence %s" % k)
        for k in ("used_cpu_sys", "used_cpu_user"):
            t.ok(re.fullmatch(r"\d+\.\d{6}", od["CPU"][k]), "CPU %s" % k)
        t.ok(re.fullmatch(r"keys=\d+,expires=\d+,avg_ttl=\d+",
                          od["Keyspace"]["db0"]), "db0 %r" % od["Keyspace"])
        # the server's own figures
        srv = od["Server"]
        t.eq(int(srv["process_id"]), s.pid(), "process_id")
        t.eq(int(srv["tcp_port"]), s.port, "tcp_port")
        t.ok(re.fullmatch("[0-9a-f]{40}", srv["run_id"]), "run_id")
        t.eq(od["Seend"]["run_id"], srv["run_id"], "one run_id")
        t.ok(0 <= int(srv["uptime_in_seconds"]) < 60, "uptime_in_seconds")
        t.eq(srv["uptime_in_days"], "0", "uptime_in_days")
        if not WRAPPER:     # valgrind runs seend from its own binary
            t.eq(srv["executable"], os.path.realpath(shutil.which(SEEND)),
                 "executable")
        t.eq(srv["config_file"], os.path.realpath(s.conf), "config_file")
        t.ok(od["Seend"]["seend_version"] == od["Seend"]["version"] != "",
             "seend_version")
    r.stop()


@test
def section_words_select_as_redis_does(t):
    r = RedisServer(t)
    with Server(t) as s:
        for words in (["server"], ["SERVER"], ["clients", "memory"],
                      ["memory", "clients"], ["stats", "replication"],
                      ["keyspace"], ["cpu", "nosuchsection"], ["default"],
                      ["all"], ["everything"], ["persistence", "default"],
                      ["nosuchsection"]):
            ours = [n for n in headers(info(s.port, *words)) if n != "Seend"]
            theirs = [n for n in headers(info(r.port, *words))
                      if n not in REDIS_ONLY]
            t.eq(ours, theirs, "INFO %s: sections" % " ".join(words))
        # the whole set has seend's own too; "seend" alone is only that
        for words in ([], ["default"], ["all"], ["everything"]):
            t.eq(headers(info(s.port, *words))[-1], "Seend",
                 "INFO %s ends with # Seend" % " ".join(words))
        t.eq(headers(info(s.port, "seend")), ["Seend"], "INFO seend")
        t.eq(headers(info(s.port, "cpu", "seend")), ["CPU", "Seend"],
             "INFO cpu seend")
        t.eq(info(s.port, "nosuchsection"), b"", "an unknown word: nothing")
        # a filter's INFO over RESP is as it was
        f = fields(s.port, "default")
        t.ok("seend_version" in f and "redis_version" in f,
             "INFO default: the sections, not the filter")
        c = Resp(s.port)
        c.cmd("BF.RESERVE", "mine", "0.01", "1000")
        c.close()
        one = sections(info(s.port, "mine"))
        t.eq([n for n, _ in one], ["Seend"], "INFO <filter>'s header")
        t.eq(one[0][1].get("name"), "mine", "INFO <filter> is the filter's")
        # RESP3: a verbatim string of the same sections
        c = Resp(s.port)
        c.send("HELLO", "3")       # a map, which Resp does not read
        c.send("INFO")
        while re.search(rb"\r\n=(\d+)\r\n", bytes(c.buf)) is None:
            chunk = c.s.recv(65536)
            t.ok(chunk, "RESP3 INFO is a verbatim string: %r" % c.buf[-200:])
            c.buf += chunk
        m = re.search(rb"\r\n=(\d+)\r\n", bytes(c.buf))
        n = int(m.group(1))
        del c.buf[:m.end()]
        c._fill(n + 2)
        body = bytes(c.buf[:n])
        c.close()
        t.ok(body.startswith(b"txt:# Server\r\n"), "txt: %r" % body[:30])
        t.eq(headers(body[4:]), headers(info(s.port)), "RESP3 sections")
    r.stop()


@test
def line_protocol_info_is_unchanged(t):
    with Server(t) as s:
        c = s.client()
        c.send("INFO\n")
        lines = c.lines_until_end()
        names = [l.split(" ", 1)[0] for l in lines]
        t.ok(all(re.fullmatch("[a-z0-9_]+", n) for n in names),
             "line INFO: \"name value\" lines, no headers: %r" % lines[:5])
        t.eq(names[0], "version", "the first line is version")
        for n in ("redis_version", "seend_version", "used_memory",
                  "connected_clients"):
            t.ok(n not in names, "line INFO has no %s" % n)
        # the fields: # Seend's (but seend_version and
        # cluster_move_stream, for seen-cli), the replication section's
        # and Sentinel's three stats
        secs = dict(sections(info(s.port)))
        want = [n for n in secs["Seend"] if n not in
                ("seend_version", "cluster_move_stream")] + \
            list(secs["Replication"]) + \
            ["sync_full", "sync_partial_ok", "sync_partial_err"]
        t.eq(names, want, "line INFO's fields")
        t.eq(c.info("default")["name"], "default", "line INFO <filter>")
        c.close()


def flat(text):
    f = {}
    for _, sec in sections(text):
        for k, v in sec.items():
            f.setdefault(k, v)
    return f


def admitted(t, port):
    """A RESP connection the server took (a connection closed just before
    may still count against max_clients for a moment)."""
    deadline = time.time() + 5 * SLOW
    while True:
        c = Resp(port, timeout=5)
        try:
            if c.cmd("PING") == "PONG":
                return c
        except (Failed, EOFError, OSError):
            pass
        c.close()
        t.ok(time.time() < deadline, "a connection is admitted")
        time.sleep(0.05)


@test
def values_are_true_side_by_side(t):
    r = RedisServer(t)
    with Server(t) as s:
        for port, u in ((s.port, "https://a.example/"), (r.port, "k:")):
            label = "seend" if port == s.port else "redis"
            extra = [Resp(port) for _ in range(5)]
            # INFO's own connection and the five (the close of an
            # earlier INFO's connection may come a moment later)
            t.ok(wait_until(lambda: fields(port)["connected_clients"] ==
                            "6"), "%s: connected_clients %s" % (
                                label, fields(port)["connected_clients"]))
            c = extra[0]
            a = fields(port)
            for i in range(40):
                c.cmd("PING")
            for i in range(10):
                c.cmd("SETNX", u + str(i), "1")
            c.cmd("EXISTS", u + "1")
            c.cmd("EXISTS", u + "absent")
            b = fields(port)
            # the 50 requests, 2 EXISTS and the first INFO
            t.eq(int(b["total_commands_processed"]) -
                 int(a["total_commands_processed"]), 53,
                 "%s: total_commands_processed" % label)
            t.eq(int(b["total_connections_received"]) -
                 int(a["total_connections_received"]), 1,
                 "%s: total_connections_received (b's)" % label)
            t.eq((int(b["keyspace_hits"]) - int(a["keyspace_hits"]),
                  int(b["keyspace_misses"]) - int(a["keyspace_misses"])),
                 (1, 1), "%s: keyspace_hits, keyspace_misses" % label)
            for x in extra[3:]:
                x.close()
            t.ok(wait_until(lambda: fields(port)["connected_clients"] ==
                            "4"), "%s: connected_clients after 2 closed"
                 % label)
            # WAIT for a replica that is not there blocks its client
            # until its timeout
            extra[1].cmd("SETNX", u + "w", "1")
            extra[1].send("WAIT", "1", str(int(3000 * SLOW)))
            t.ok(wait_until(lambda: fields(port)["blocked_clients"] == "1",
                            timeout=2.5),
                 "%s: blocked_clients with a WAIT" % label)
            t.eq(extra[1].reply(), 0, "%s: WAIT's answer" % label)
            t.eq(fields(port)["blocked_clients"], "0",
                 "%s: blocked_clients once WAIT answered" % label)
            for x in extra[:3]:
                x.close()
        # seend's own: the filters are Redis's keys, their bytes in memory
        c = Resp(s.port)
        t.eq(c.cmd("BF.RESERVE", "big", "0.0001", "2000000"), "OK")
        t.eq(c.cmd("BF.RESERVE", "later", "0.01", "1000"), "OK")
        t.eq(c.cmd("EXPIRE", "later", "3600"), 1)
        f = fields(s.port)
        fb = filter_bytes(s)
        t.eq(f["db0"], "keys=%d,expires=1,avg_ttl=0" % len(fb), "db0")
        t.ok(int(f["used_memory"]) > sum(fb), "used_memory %s > the filters' "
             "%d bytes" % (f["used_memory"], sum(fb)))
        t.ok(int(f["used_memory_peak"]) >= int(f["used_memory"]),
             "used_memory_peak")
        rss = s.rss_kib() * 1024
        t.ok(rss / 2 < int(f["used_memory_rss"]) < rss * 2,
             "used_memory_rss %s, VmRSS %d" % (f["used_memory_rss"], rss))
        t.eq(f["maxclients"], "10000", "maxclients (max_clients)")
        t.eq(f["aof_enabled"], "1", "aof_enabled: the journal is on")
        # an unknown command is counted
        u0 = int(f["unknown_commands"])
        t.ok(isinstance(c.cmd("RPUSH", "q", "x"), Err), "RPUSH refused")
        t.eq(int(fields(s.port)["unknown_commands"]), u0 + 1,
             "unknown_commands")
        # a snapshot is Redis's save
        before = int(time.time())
        t.ok(int(fields(s.port)["rdb_changes_since_last_save"]) > 0,
             "changes not saved yet")
        lc = s.client()     # SAVE is the line protocol's
        t.eq(lc.cmd("SAVE"), "OK")
        lc.close()
        f = fields(s.port)
        t.ok(int(f["rdb_last_save_time"]) >= before, "rdb_last_save_time")
        t.eq((f["rdb_changes_since_last_save"], f["rdb_last_bgsave_status"],
              f["rdb_bgsave_in_progress"]), ("0", "ok", "0"), "after SAVE")
        t.ok(int(f["rdb_saves"]) >= 1, "rdb_saves")
        t.eq(c.cmd("DEL", "big"), 1)
        t.eq(fields(s.port)["db0"], "keys=%d,expires=1,avg_ttl=0"
             % (len(fb) - 1), "db0 after DEL")
        c.close()
    # max_memory is maxmemory; a refused client is counted
    with Server(t, "max_memory = 64M\nmax_clients = 2\njournal = off") as s:
        a, b = admitted(t, s.port), admitted(t, s.port)
        f0 = flat(a.cmd("INFO"))
        x = Resp(s.port)
        t.ok(x.closed(), "a third client is refused")
        x.close()
        f = flat(a.cmd("INFO"))
        t.eq((f["maxmemory"], f["maxmemory_human"], f["maxclients"]),
             (str(64 << 20), "64.00M", "2"), "maxmemory, maxclients")
        t.eq(int(f["rejected_connections"]) -
             int(f0["rejected_connections"]), 1, "rejected_connections")
        t.eq(f["aof_enabled"], "0", "aof_enabled with journal = off")
        a.close()
        b.close()
    r.stop()


@test
def instantaneous_ops_per_sec_under_load_and_cpu(t):
    with Server(t) as s:
        f = fields(s.port)
        cpu0 = float(f["used_cpu_user"]) + float(f["used_cpu_sys"])
        load = subprocess.Popen(
            ["redis-benchmark", "-p", str(s.port), "-n", "100000000", "-P",
             "16", "-c", "2", "-q", "-t", "ping_mbulk"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rate = 0
        try:
            # samples are taken once a second: several seconds of load
            deadline = time.time() + 8 * SLOW
            while time.time() < deadline:
                time.sleep(0.5)
                f = fields(s.port, "stats")
                rate = int(f["instantaneous_ops_per_sec"])
                if rate > 0:
                    break
        finally:
            load.terminate()
            load.wait()
        diag("instantaneous_ops_per_sec under load: %d (commands %s)"
             % (rate, f["total_commands_processed"]))
        t.ok(rate > 0, "instantaneous_ops_per_sec > 0 while a load runs")
        f = fields(s.port, "cpu")
        t.ok(float(f["used_cpu_user"]) + float(f["used_cpu_sys"]) > cpu0,
             "used_cpu_* grew with the load")


def stat_lines(port, seconds=3):
    """redis-cli --stat's lines, run for a few seconds (line-buffered, or
    a killed redis-cli leaves nothing)."""
    p = subprocess.run(["timeout", str(seconds), "stdbuf", "-oL",
                        "redis-cli", "-p", str(port), "--stat", "-i", "0.5"],
                       capture_output=True, timeout=30 * SLOW)
    return p.stdout.decode(errors="replace").splitlines()


@test
def redis_cli_stat_shows_true_figures(t):
    with Server(t) as s:
        c = Resp(s.port)
        c.cmd("BF.RESERVE", "two", "0.01", "1000")
        extra = [Resp(s.port) for _ in range(3)]
        t.ok(wait_until(lambda: fields(s.port)["connected_clients"] == "5"),
             "the four and INFO's own")
        lines = stat_lines(s.port)
        out = "\n".join(lines)
        rows = [l.split() for l in lines if re.match(r"\d", l)]
        t.ok(len(rows) >= 2, "redis-cli --stat printed rows: %r" % out)
        t.ok(MIN64 not in out and "LONG_MIN" not in out,
             "no missing field: %r" % out)
        for row in rows:
            keys, mem, clients, blocked = row[:4]
            t.eq(keys, "2", "keys: the two filters")
            t.ok(re.fullmatch(r"\d+(\.\d\d[KMGTP]|B)", mem), "mem %r" % mem)
            # c, the three, and redis-cli's own connection
            t.eq(clients, "5", "clients")
            t.eq(blocked, "0", "blocked")
        # the requests column: INFO's count grows by its own requests
        t.ok(int(rows[-1][4]) > int(rows[0][4]), "requests grow: %r" % out)
        for x in extra + [c]:
            x.close()


if __name__ == "__main__":
    run()
