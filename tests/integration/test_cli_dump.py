"""seen-cli dump, restore and copy: a filter into a file and back, or from
one seend to another, as BF.SCANDUMP / BF.LOADCHUNK chunks."""
import os
import pty
import re
import subprocess
import threading

from seendtest import *

redis = system_module("redis")

N = 100000
RUN_TIMEOUT = 120

# "dumped filter F from S into FILE: N keys, B bytes in C chunks, in T (R)"
SUMMARY = re.compile(r"^(dumped|restored|copied|merged) filter (\S+) "
                     r"(?:from|on) "
                     r"(\S+) (?:into|from|to) (.+): (\d+) keys, (\d+) bytes "
                     r"in (\d+) chunks, in [0-9.]+ s \(\S+B/s\)$")


def cli(*args, timeout=RUN_TIMEOUT):
    p = subprocess.run([SEEN_CLI] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout * SLOW)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def rd(s):
    return redis.Redis(host="127.0.0.1", port=s.port,
                       socket_timeout=60 * SLOW)


def keys(n, tag="k"):
    return [b"https://example.com/%s/%d" % (tag.encode(), i)
            for i in range(n)]


def fill(s, name, ks, capacity=None):
    """A filter of ks; BF.RESERVE first if capacity is given (a small
    capacity makes a filter of several slices)."""
    r = rd(s)
    if capacity is not None:
        r.execute_command("BF.RESERVE", name, "0.001", str(capacity))
    p = r.pipeline(transaction=False)
    for i in range(0, len(ks), 5000):
        p.execute_command("BF.MADD", name, *ks[i:i + 5000])
    p.execute()
    r.close()


def unseen(s, name, ks):
    """The keys of ks the filter does not answer 1 for."""
    r = rd(s)
    p = r.pipeline(transaction=False)
    for i in range(0, len(ks), 10000):
        p.execute_command("BF.MEXISTS", name, *ks[i:i + 10000])
    out = []
    for i, rep in enumerate(p.execute()):
        out += [ks[i * 10000 + j] for j, v in enumerate(rep) if v != 1]
    r.close()
    return out


def info(s, name):
    c = s.client()
    try:
        return c.info(name)
    finally:
        c.close()


def filters(s):
    c = s.client()
    try:
        c.send("FILTERS\n")
        return [l.split(" ", 1)[0] for l in c.lines_until_end()]
    finally:
        c.close()


def summary(t, out, verb):
    lines = out.splitlines()
    t.eq(len(lines), 1, "one summary line: %r" % out)
    m = SUMMARY.match(lines[0])
    t.ok(m is not None, "summary line: %r" % lines[0])
    t.eq(m.group(1), verb)
    return m


def chunk_ends(data):
    """Where each chunk of a dump file ends (its payload length is at
    offset 40 of its 64-byte header)."""
    ends, off = [], 0
    while off < len(data):
        off += 64 + int.from_bytes(data[off + 40:off + 48], "little")
        ends.append(off)
    return ends


def tcp(s):
    return ["-p", str(s.port)]


@test
def dump_then_restore_100k_keys_into_another_server_and_name(t):
    ks = keys(N)
    with Server(t, name="a") as a, Server(t, name="b") as b:
        # capacity 30000 of 100k keys: a filter of several slices
        fill(a, "crawl", ks, capacity=30000)
        want = info(a, "crawl")
        t.ok(int(want["slices"]) > 1, "several slices: %r" % want["slices"])
        dump = t.path("crawl.dump")
        rc, out, err = cli(*tcp(a), "dump", "crawl", dump)
        t.eq((rc, err), (0, ""), "dump: nothing on stderr off a terminal")
        m = summary(t, out, "dumped")
        t.eq(m.group(2), "crawl")
        t.eq(m.group(3), "127.0.0.1:%d" % a.port)
        t.eq(m.group(4), dump)
        t.eq(m.group(5), want["count"], "keys in the summary")
        t.eq(int(m.group(6)), os.path.getsize(dump), "bytes = file size")
        t.ok(not os.path.exists(dump + ".tmp"), "no temporary file left")
        t.ok(int(m.group(7)) >= 2, "a header chunk and bits chunks")

        rc, out, err = cli(*tcp(b), "restore", "moved", dump)
        t.eq((rc, err), (0, ""), "restore")
        m = summary(t, out, "restored")
        t.eq(m.group(2), "moved")
        t.eq(m.group(4), dump)
        t.eq(int(m.group(6)), os.path.getsize(dump))
        t.eq(unseen(b, "moved", ks), [], "every key seen after restore")
        got = info(b, "moved")
        for k in ("count", "slices", "capacity", "error_rate", "bytes",
                  "bits_set"):
            t.eq(got[k], want[k], "INFO %s" % k)
        t.ok("crawl" not in filters(b), "only the new name")
        # the last BF.LOADCHUNK answered once the filter was durable
        b.kill9()
        b.start()
        t.eq(info(b, "moved")["count"], want["count"], "after kill -9")
        t.eq(unseen(b, "moved", ks[:1000]), [], "seen after kill -9")


@test
def copy_between_two_servers_over_tcp_and_unix_sockets(t):
    ks = keys(20000, "c")
    with Server(t, name="a") as a, Server(t, name="b") as b:
        # 10M capacity: ~25 MB of bits, several 4 MiB chunks
        fill(a, "big", ks, capacity=10000000)
        want = info(a, "big")
        rc, out, err = cli("copy", "127.0.0.1:%d/big" % a.port,
                           "127.0.0.1:%d/big_tcp" % b.port)
        t.eq((rc, err), (0, ""), "copy over TCP")
        m = summary(t, out, "copied")
        t.eq((m.group(2), m.group(3)), ("big", "127.0.0.1:%d" % a.port))
        t.eq(m.group(4), "filter big_tcp on 127.0.0.1:%d" % b.port)
        t.ok(int(m.group(7)) > 3, "several chunks: %s" % m.group(7))
        rc, out, err = cli("copy", a.sock + "/big", b.sock + "/big_unix")
        t.eq((rc, err), (0, ""), "copy over Unix sockets")
        m = summary(t, out, "copied")
        t.eq(m.group(3), a.sock, "a socket path split at its last /")
        # one way and the other: TCP to a socket
        rc, out, err = cli("copy", "127.0.0.1:%d/big" % a.port,
                           b.sock + "/big_mixed")
        t.eq((rc, err), (0, ""), "TCP to a Unix socket")
        for name in ("big_tcp", "big_unix", "big_mixed"):
            t.eq(unseen(b, name, ks), [], "every key seen in " + name)
            t.eq(info(b, name)["count"], want["count"], name + " count")
            t.eq(info(b, name)["bytes"], want["bytes"], name + " bytes")
        # and within one server
        rc, out, err = cli("copy", "127.0.0.1:%d/big" % a.port,
                           "127.0.0.1:%d/big_copy" % a.port)
        t.eq(rc, 0, err)
        t.eq(unseen(a, "big_copy", ks), [], "copy on the same server")


@test
def copy_or_restore_onto_an_existing_name_fails_with_item_exists(t):
    ks = keys(3000, "e")
    with Server(t, name="a") as a, Server(t, name="b") as b:
        fill(a, "src", ks)
        fill(b, "taken", keys(10, "other"))
        rc, out, err = cli("copy", "127.0.0.1:%d/src" % a.port,
                           "127.0.0.1:%d/taken" % b.port)
        t.eq((rc, out), (1, ""), "copy onto an existing filter")
        t.contains(err, "item exists")
        t.contains(err, "destination: 127.0.0.1:%d" % b.port)
        dump = t.path("src.dump")
        t.eq(cli(*tcp(a), "dump", "src", dump)[0], 0)
        rc, out, err = cli(*tcp(b), "restore", "taken", dump)
        t.eq((rc, out), (1, ""), "restore onto an existing filter")
        t.contains(err, "item exists")
        t.eq(info(b, "taken")["count"], "10", "the existing filter kept")
        t.eq(unseen(b, "taken", ks[:100]), ks[:100], "and gained nothing")


def temporaries(s):
    return [n for n in filters(s) if ".merge." in n]


@test
def copy_merge_adds_to_an_existing_filter_and_creates_a_missing_one(t):
    ka, kb = keys(20000, "ma"), keys(20000, "mb")
    with Server(t, name="a") as a, Server(t, name="b") as b:
        fill(a, "src", ka, capacity=30000)
        fill(b, "dst", kb, capacity=30000)
        want = info(a, "src")["count"]
        rc, out, err = cli("copy", "127.0.0.1:%d/src" % a.port,
                           "127.0.0.1:%d/dst" % b.port, "--merge")
        t.eq((rc, err), (0, ""), "copy --merge into an existing filter")
        m = summary(t, out, "merged")
        t.eq((m.group(2), m.group(3)), ("src", "127.0.0.1:%d" % a.port))
        t.eq(m.group(4), "filter dst on 127.0.0.1:%d" % b.port)
        t.eq(m.group(5), want, "keys in the summary: the source's count")
        t.eq(len(unseen(b, "dst", ka)), 0, "the source's keys merged in")
        t.eq(len(unseen(b, "dst", kb)), 0, "the filter's own keys kept")
        t.ok(len(unseen(a, "src", kb[:1000])) >= 990,
             "the source unchanged (it answers the other's keys unseen "
             "but for false positives)")
        t.eq(temporaries(b), [], "the temporary filter dropped")
        # into a missing name: made, with the source's keys and settings
        rc, out, err = cli("copy", a.sock + "/src", b.sock + "/fresh",
                           "--merge")
        t.eq((rc, err), (0, ""), "copy --merge into a missing filter")
        summary(t, out, "merged")
        t.eq(len(unseen(b, "fresh", ka)), 0, "made from the source")
        t.ok(len(unseen(b, "fresh", kb[:1000])) >= 990,
             "and not the other filter's (but false positives)")
        got = info(b, "fresh")
        for k in ("capacity", "error_rate", "count"):
            t.eq(got[k], info(a, "src")[k], "INFO %s" % k)
        t.eq(temporaries(b), [], "no temporary left")
        # a 64-byte name: the temporary's name is cut short to fit
        long_name = "n" * 64
        rc, out, err = cli("copy", "127.0.0.1:%d/src" % a.port,
                           "127.0.0.1:%d/%s" % (b.port, long_name),
                           "--merge")
        t.eq((rc, err), (0, ""), "a 64-byte destination name")
        t.eq(len(unseen(b, long_name, ka[:2000])), 0)
        # and merged twice: still every key, nothing left behind
        rc, out, err = cli("copy", "127.0.0.1:%d/src" % a.port,
                           "127.0.0.1:%d/dst" % b.port, "--merge")
        t.eq(rc, 0, err)
        t.eq(len(unseen(b, "dst", ka + kb)), 0, "merged again")
        t.eq(temporaries(b), [])
        # the merge is durable: after kill -9 every key is still there
        b.kill9()
        b.start()
        t.eq(len(unseen(b, "dst", ka + kb)), 0, "after kill -9")
        t.eq(len(unseen(b, "fresh", ka)), 0, "the made one after kill -9")
        t.eq(temporaries(b), [], "no temporary after kill -9")


@test
def a_refused_copy_merge_exits_1_and_drops_its_temporary(t):
    ks = keys(2000, "mr")
    win = DEFAULT_FILTERS + "\n[filter.win]\ncapacity = 100000\nexpire = 1h\n"
    with Server(t, name="a") as a, Server(t, name="b", filters=win) as b:
        fill(a, "src", ks)
        # MERGE refuses sources of another window
        rc, out, err = cli("copy", "127.0.0.1:%d/src" % a.port,
                           "127.0.0.1:%d/win" % b.port, "--merge")
        t.eq((rc, out), (1, ""), "merge into a windowed filter")
        t.contains(err, "destination: 127.0.0.1:%d: MERGE win" % b.port)
        t.contains(err, "share their window")
        t.eq(temporaries(b), [], "the temporary filter dropped")
        t.eq(unseen(b, "win", ks[:100]), ks[:100], "nothing merged")
        # a missing source: nothing is made on the destination
        rc, out, err = cli("copy", "127.0.0.1:%d/nosuch" % a.port,
                           "127.0.0.1:%d/dst" % b.port, "--merge")
        t.eq((rc, out), (1, ""), "a missing source")
        t.contains(err, "not found")
        t.ok("dst" not in filters(b), "no destination made")
        t.eq(temporaries(b), [])


@test
def a_corrupted_or_truncated_file_is_refused_and_leaves_no_filter(t):
    ks = keys(5000, "x")
    with Server(t, name="a") as a, Server(t, name="b") as b:
        fill(a, "src", ks, capacity=3000000)   # ~7 MB: a few chunks
        dump = t.path("src.dump")
        t.eq(cli(*tcp(a), "dump", "src", dump)[0], 0)
        data = open(dump, "rb").read()
        t.ok(len(chunk_ends(data)) >= 3, "a header and 2 bits chunks")
        t.eq(chunk_ends(data)[-1], len(data), "the chunks frame the file")
        cases = {
            # a bit flipped deep in a bits chunk: its checksum
            "flip_bits": data[:len(data) // 2] +
            bytes([data[len(data) // 2] ^ 0x10]) + data[len(data) // 2 + 1:],
            # in the last chunk, which would make the filter appear
            "flip_last": data[:-10] + bytes([data[-10] ^ 0x80]) + data[-9:],
            # in the header chunk's payload (its capacity field)
            "flip_header": data[:64 + 24] + bytes([data[64 + 24] ^ 1]) +
            data[64 + 25:],
            # the magic
            "flip_magic": b"X" + data[1:],
            # a file cut short, inside a chunk and at a chunk's end
            "cut": data[:len(data) - 1000],
            "cut_at_chunk": data[:chunk_ends(data)[-2]],
            # bytes after the last chunk
            "trailing": data + b"\0",
        }
        for name, blob in sorted(cases.items()):
            path = t.path(name + ".dump")
            with open(path, "wb") as f:
                f.write(blob)
            rc, out, err = cli(*tcp(b), "restore", name, path)
            t.eq((rc, out), (1, ""), name)
            t.contains(err, "bad dump chunk", name)
            t.ok(name not in filters(b), name + ": no filter left")
        t.eq(cli(*tcp(b), "restore", "whole", dump)[0], 0, "the good file")
        t.eq(unseen(b, "whole", ks), [])


@test
def dump_of_a_missing_filter_exits_1_and_leaves_files_alone(t):
    with Server(t, name="a") as a:
        dump = t.path("none.dump")
        rc, out, err = cli(*tcp(a), "dump", "nosuch", dump)
        t.eq((rc, out), (1, ""), "missing filter")
        t.contains(err, "not found")
        t.ok(not os.path.exists(dump), "no file")
        t.ok(not os.path.exists(dump + ".tmp"), "no temporary file")
        # a failed dump does not touch a file already there
        with open(dump, "w") as f:
            f.write("precious")
        rc, out, err = cli(*tcp(a), "dump", "nosuch", dump)
        t.eq(rc, 1)
        t.eq(open(dump).read(), "precious", "the old file kept")
        t.ok(not os.path.exists(dump + ".tmp"), "no temporary file")
        fill(a, "f", keys(10))
        rc, out, err = cli(*tcp(a), "dump", "f", t.path("no/dir/f.dump"))
        t.eq(rc, 1, "an unwritable place")
        t.contains(err, "cannot create")
        rc, out, err = cli(*tcp(a), "restore", "g", t.path("missing"))
        t.eq(rc, 1, "a missing file")
        t.contains(err, "cannot open")
        rc, out, err = cli("copy", "127.0.0.1:%d/nosuch" % a.port,
                           "127.0.0.1:%d/g" % a.port)
        t.eq((rc, out), (1, ""), "copy of a missing filter")
        t.contains(err, "source: 127.0.0.1:%d: BF.SCANDUMP nosuch" % a.port)
        t.contains(err, "not found")
    # nothing listens there any more
    rc, out, err = cli(*tcp(a), "dump", "f", t.path("x.dump"))
    t.eq(rc, 1, "server down")
    t.contains(err, "cannot connect to 127.0.0.1:%d" % a.port)
    t.ok(not os.path.exists(t.path("x.dump.tmp")), "no temporary file")


@test
def usage_errors_exit_2(t):
    for args, msg in [
            (["dump", "f"], "usage:"),
            (["dump", "f", "x", "y"], "usage:"),
            (["restore"], "usage:"),
            (["dump", "--bogus", "f", "x"], "usage:"),
            (["dump", "bad name", "x"], "not a valid filter name"),
            (["restore", ".hidden", "x"], "not a valid filter name"),
            (["dump", "f", ""], "file name is empty"),
            (["copy", "127.0.0.1:1/a"], "usage:"),
            (["copy", "127.0.0.1:1", "127.0.0.1:2/b"], "give a server"),
            (["copy", "127.0.0.1:1/a", "/b"], "give a server"),
            (["copy", "127.0.0.1:1/a", "127.0.0.1:2/"],
             "not a valid filter name"),
            (["copy", "::1:6874/a", "127.0.0.1:2/b"], "[addr]:port"),
            (["copy", "[::1:6874/a", "127.0.0.1:2/b"], "unclosed ["),
            (["copy", "127.0.0.1:x/a", "127.0.0.1:2/b"], "bad host or port"),
            (["copy", "--merge"], "usage:"),
            (["copy", "127.0.0.1:1/a", "--merge"], "usage:"),
            (["copy", "127.0.0.1:1/a", "127.0.0.1:2/.b", "--merge"],
             "not a valid filter name")]:
        rc, out, err = cli(*args)
        t.eq((rc, out), (2, ""), " ".join(args))
        t.contains(err, msg, " ".join(args))
    rc, out, err = cli("--help")
    t.eq(rc, 0)
    for word in ("dump FILTER FILE", "restore FILTER FILE", "copy SOURCE"):
        t.contains(out, word, "--help")
    rc, out, err = cli("copy", "--help")
    t.eq(rc, 0)
    t.contains(out, "DEST/FILTER [--merge]", "copy --help")
    # an IPv6 server in brackets is parsed (nothing listens on port 1)
    rc, out, err = cli("copy", "[::1]:1/a", "127.0.0.1:1/b")
    t.eq(rc, 1, "[::1]:1: " + err)
    t.contains(err, "source: cannot connect to [::1]:1")
    # --merge is no usage error: it goes on to connect
    rc, out, err = cli("copy", "127.0.0.1:1/a", "127.0.0.1:1/b", "--merge")
    t.eq((rc, out), (1, ""), "--merge, nothing listening")
    t.contains(err, "source: cannot connect to 127.0.0.1:1")


@test
def an_auth_token_is_sent_to_every_server(t):
    ks = keys(2000, "auth")
    with Server(t, name="a", server_extra="auth_token = sekrit\n") as a, \
            Server(t, name="b", server_extra="auth_token = sekrit\n") as b:
        r = redis.Redis(port=a.port, password="sekrit")
        r.execute_command("BF.MADD", "f", *ks)
        r.close()
        dump = t.path("f.dump")
        rc, out, err = cli(*tcp(a), "dump", "f", dump)
        t.eq((rc, out), (1, ""), "without the token")
        t.contains(err, "NOAUTH")
        rc, out, err = cli(*tcp(a), "-a", "wrong", "dump", "f", dump)
        t.eq(rc, 1, "a wrong token")
        t.contains(err, "AUTH")
        rc, out, err = cli(*tcp(a), "-a", "sekrit", "dump", "f", dump)
        t.eq(rc, 0, err)
        rc, out, err = cli(*tcp(b), "restore", "g", dump)
        t.eq(rc, 1, "restore without the token")
        t.contains(err, "NOAUTH")
        rc, out, err = cli(*tcp(b), "-a", "sekrit", "restore", "g", dump)
        t.eq(rc, 0, err)
        rc, out, err = cli("-a", "sekrit", "copy", a.sock + "/f",
                           b.sock + "/h")
        t.eq(rc, 0, err)
        r = redis.Redis(port=b.port, password="sekrit")
        for name in ("g", "h"):
            t.eq(r.execute_command("BF.MEXISTS", name, *ks[:500]),
                 [1] * 500, name)
        r.close()


def on_a_pty(args):
    """Runs seen-cli with stderr a pseudo-terminal: (rc, stdout, what the
    terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([SEEN_CLI] + args, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []

    def read_bar():
        # read while it runs: a pty may drop what is left unread when its
        # last writer closes
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:     # EIO: the last writer closed the pty
                return
            if not chunk:
                return
            chunks.append(chunk)
    reader = threading.Thread(target=read_bar)
    reader.start()
    out, _ = p.communicate(timeout=RUN_TIMEOUT * SLOW)
    reader.join(30 * SLOW)
    os.close(master)
    return p.returncode, out.decode(), b"".join(chunks).decode()


@test
def on_a_terminal_a_progress_bar_is_redrawn_in_place(t):
    with Server(t, name="a") as a, Server(t, name="b") as b:
        fill(a, "f", keys(5000, "p"), capacity=3000000)
        dump = t.path("f.dump")
        size = None
        for verb, args in [
                ("dumped", tcp(a) + ["dump", "f", dump]),
                ("restored", tcp(b) + ["restore", "g", dump]),
                ("copied", ["copy", "127.0.0.1:%d/f" % a.port,
                            "127.0.0.1:%d/h" % b.port]),
                # the same bar, then the MERGE into h
                ("merged", ["copy", "127.0.0.1:%d/f" % a.port,
                            "127.0.0.1:%d/h" % b.port, "--merge"])]:
            rc, out, bar = on_a_pty(args)
            t.eq(rc, 0, bar)
            m = summary(t, out, verb)
            size = size or os.path.getsize(dump)
            t.eq(int(m.group(6)), size, verb + ": bytes")
            t.ok(bar.startswith("\r"), "redrawn with CR: %r" % bar[:80])
            t.contains(bar, "%", verb)
            last = bar.rstrip("\r\n").split("\r")[-1]
            t.ok(re.match(r"^%d/%d 100%% \[#+\] \S+/s, \S+ s left"
                          % (size, size), last) is not None,
                 "%s: final bar: %r" % (verb, last))
            t.ok(bar.endswith("\n"), "the bar's line is ended")
        # an error clears the bar first: the message starts its line
        rc, out, bar = on_a_pty(tcp(b) + ["restore", "g", dump])
        t.eq(rc, 1)
        t.contains(bar, "item exists")


if __name__ == "__main__":
    run()
