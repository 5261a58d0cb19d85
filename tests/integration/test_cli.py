"""seen-cli (one-shot, pipe mode, prompt) and seen-bench against a real seend."""
import csv
import io
import os
import random
import re
import select
import subprocess
import time

from seendtest import *

TWO = DEFAULT_FILTERS + """
[filter.other]
capacity = 100000
error_rate = 0.001
"""

RUN_TIMEOUT = 30 * SLOW


def cli(args, stdin=b"", timeout=RUN_TIMEOUT):
    """Runs seen-cli with stdin not a terminal; returns (rc, out, err) as
    str (stdout decoded as UTF-8 with surrogateescape)."""
    if isinstance(stdin, str):
        stdin = stdin.encode()
    p = subprocess.run([SEEN_CLI] + list(args), input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return (p.returncode, p.stdout.decode(errors="surrogateescape"),
            p.stderr.decode(errors="replace"))


def tcp(s):
    return ["-p", str(s.port)]


def bench(args, timeout=RUN_TIMEOUT):
    p = subprocess.run([SEEN_BENCH] + list(args), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), \
        p.stderr.decode(errors="replace")


def count(s, name="default"):
    c = s.client()
    try:
        return int(c.info(name)["count"])
    finally:
        c.close()


def check(s, key, filt=None):
    c = s.client()
    try:
        return c.cmd("CHECK %s%s" % (filt + " " if filt else "", key))
    finally:
        c.close()


# ---- one-shot ----

@test
def oneshot_seen_prints_0_then_1_and_exits_0(t):
    with Server(t) as s:
        t.eq(cli(tcp(s) + ["SEEN", "https://a/"]), (0, "0\n", ""),
             "first run")
        t.eq(cli(tcp(s) + ["SEEN", "https://a/"]), (0, "1\n", ""),
             "second run")
        t.eq(cli(tcp(s) + ["CHECK", "https://b/"]), (0, "0\n", ""),
             "CHECK of another key")
        t.eq(count(s), 1, "count")


@test
def oneshot_ping_over_unix_socket_prints_pong(t):
    with Server(t) as s:
        t.eq(cli(["-s", s.sock, "PING"]), (0, "PONG\n", ""))
        # lower case is the same command
        t.eq(cli(["-s", s.sock, "ping"]), (0, "PONG\n", ""), "ping")


@test
def oneshot_filters_prints_every_filter_line_without_end(t):
    with Server(t, filters=TWO) as s:
        cli(tcp(s) + ["SEEN", "other", "https://x/"])
        rc, out, err = cli(tcp(s) + ["FILTERS"])
        t.eq((rc, err), (0, ""), "status, stderr")
        c = s.client()
        c.send("FILTERS\n")
        want = c.lines_until_end()
        t.eq(out, "".join(l + "\n" for l in want), "stdout vs the server's "
             "FILTERS reply")
        t.ok("END" not in out.splitlines(), "END printed: %r" % out)
        t.eq(len(out.splitlines()), 2, "one line per filter")
        t.contains(out, "other capacity=100000 error_rate=0.001 count=1 ")


@test
def oneshot_info_prints_field_lines_without_end(t):
    with Server(t) as s:
        cli(tcp(s) + ["SEEN", "https://x/"])
        cli(tcp(s) + ["SEEN", "https://y/"])
        for args in (["INFO"], ["INFO", "default"], ["info", "default"]):
            rc, out, err = cli(tcp(s) + args)
            t.eq((rc, err), (0, ""), "%s: status, stderr" % args)
            lines = out.splitlines()
            t.ok(len(lines) >= 3, "%s: too few lines: %r" % (args, out))
            t.ok("END" not in lines, "%s: END printed: %r" % (args, out))
            for l in lines:
                t.ok(re.match(r"^\S+ \S", l), "%s: not a field line: %r"
                     % (args, l))
        c = s.client()
        want = c.info("default")
        rc, out, err = cli(tcp(s) + ["INFO", "default"])
        got = dict(l.split(" ", 1) for l in out.splitlines())
        t.eq(sorted(got), sorted(want), "INFO default fields")
        t.eq(got["count"], "2", "INFO default count")


@test
def oneshot_error_reply_goes_to_stderr_and_exits_1(t):
    with Server(t) as s:
        rc, out, err = cli(tcp(s) + ["SEEN", "nosuch", "https://a/"])
        t.eq(rc, 1, "exit status")
        t.eq(out, "", "stdout")
        t.ok(err.startswith("ERR "), "stderr is the ERR line: %r" % err)
        t.contains(err, "no such filter", "stderr")
        # INFO of an unknown filter: an error too, even if multi-line
        rc, out, err = cli(tcp(s) + ["INFO", "nosuch"])
        t.eq((rc, out), (1, ""), "INFO nosuch: status, stdout")
        t.contains(err, "ERR ", "INFO nosuch stderr")


@test
def oneshot_connection_refused_exits_1_with_a_clear_message(t):
    port = free_port()          # nothing listens there
    rc, out, err = cli(["-p", str(port), "PING"])
    t.eq(rc, 1, "exit status")
    t.eq(out, "", "stdout")
    t.contains(err, "cannot connect to 127.0.0.1:%d" % port, "stderr")
    t.contains(err, "Connection refused", "stderr")
    rc, out, err = cli(["-s", t.path("no.sock"), "PING"])
    t.eq((rc, out), (1, ""), "missing unix socket: status, stdout")
    t.contains(err, "cannot connect to " + t.path("no.sock"), "stderr")


# ---- pipe mode ----

def url_stream(n, dup_share, seed):
    """n URLs in a fixed order; about dup_share of them repeat an earlier
    one (a recent one more often, as in a crawl frontier)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        if out and rnd.random() < dup_share:
            j = len(out) - 1 - min(int(rnd.expovariate(1 / 200.0)),
                                   len(out) - 1)
            out.append(out[j])
        else:
            out.append("https://h%d.example/%s/%d?q=%d" % (
                rnd.randrange(300), rnd.choice(("a", "news", "x/y")), i,
                rnd.randrange(10 ** 6)))
    return out


def first_occurrences(urls):
    return list(dict.fromkeys(urls))


@test
def pipe_new_prints_first_occurrences_in_order_then_nothing_and_check_records_nothing(t):
    urls = url_stream(20000, 0.15, 1)
    want = first_occurrences(urls)
    t.ok(2000 < len(urls) - len(want) < 4000, "generator: %d duplicates"
         % (len(urls) - len(want)))
    data = "".join(u + "\n" for u in urls)
    with Server(t) as s:
        rc, out, err = cli(tcp(s) + ["--new"], data)
        t.eq((rc, err), (0, ""), "--new: status, stderr")
        got = out.splitlines()
        check_subsequence(t, got, want, "--new")
        n = count(s)
        t.eq(n, len(got), "count after --new vs lines printed")

        rc, out, err = cli(["-s", s.sock, "--new"], data)
        t.eq((rc, out, err), (0, "", ""), "second --new (unix socket)")
        t.eq(count(s), n, "count after the second --new")

        rc, out, err = cli(tcp(s) + ["--check"], data)
        t.eq((rc, out, err), (0, "", ""), "--check after --new")
        t.eq(count(s), n, "count after --check")

        # --check on unknown URLs prints all of them, every time, and
        # records none
        fresh = ["https://fresh.example/%d" % i for i in range(3000)]
        fdata = "".join(u + "\n" for u in fresh)
        for run in (1, 2):
            rc, out, err = cli(tcp(s) + ["--check"], fdata)
            t.eq((rc, err), (0, ""), "--check fresh run %d" % run)
            check_subsequence(t, out.splitlines(), fresh,
                              "--check fresh run %d" % run)
        t.eq(count(s), n, "count after --check of fresh URLs")


@test
def pipe_new_handles_crlf_empty_lines_and_a_last_line_without_newline(t):
    with Server(t) as s:
        data = "https://a/1\r\n\nhttps://a/2\n\r\nhttps://a/1\nhttps://a/3"
        t.eq(cli(tcp(s) + ["--new"], data),
             (0, "https://a/1\nhttps://a/2\nhttps://a/3\n", ""))
        t.eq(check(s, "https://a/3"), "1", "last line recorded")
        t.eq(count(s), 3, "count")
        t.eq(cli(tcp(s) + ["--new"], ""), (0, "", ""), "empty input")


@test
def pipe_percent_encodes_blanks_and_prints_the_original_line(t):
    with Server(t) as s:
        data = "https://a/b c\nhttps://a/d\te\nhttps://a/b%20c\n"
        rc, out, err = cli(tcp(s) + ["--new"], data)
        t.eq((rc, err), (0, ""), "status, stderr")
        # the third line is the same URL as the first once encoded
        t.eq(out, "https://a/b c\nhttps://a/d\te\n", "stdout")
        t.eq(check(s, "https://a/b%20c"), "1", "CHECK b%20c")
        t.eq(check(s, "https://a/d%09e"), "1", "CHECK d%09e")
        t.eq(check(s, "https://a/b"), "0", "not split at the blank")
        t.eq(count(s), 2, "count")
        t.eq(cli(tcp(s) + ["CHECK", "https://a/b c"]), (0, "1\n", ""),
             "one-shot argument with a blank is encoded the same way")


@test
def pipe_line_longer_than_max_line_reports_line_n_and_others_still_work(t):
    with Server(t, server_extra="max_line = 1024") as s:
        long_url = "https://long/" + "x" * 3000
        lines = ["https://a/1", "", "https://a/2", long_url, "https://a/3"]
        lines += ["https://b/%d" % i for i in range(3000)]
        lines += [long_url + "y", "https://a/4"]
        data = "".join(l + "\n" for l in lines)
        rc, out, err = cli(tcp(s) + ["--new"], data)
        t.eq(rc, 1, "exit status; stderr %r" % err)
        errlines = err.splitlines()
        t.eq(len(errlines), 2, "two error lines: %r" % err)
        t.ok(errlines[0].startswith("seen-cli: line 4: ERR "),
             "first error names input line 4: %r" % errlines[0])
        t.ok(errlines[1].startswith("seen-cli: line %d: ERR " % (3006)),
             "second error names input line 3006: %r" % errlines[1])
        want = [l for l in lines if l and not l.startswith(long_url)]
        check_subsequence(t, out.splitlines(), want, "stdout")
        for u in ("https://a/1", "https://a/3", "https://a/4",
                  "https://b/2999"):
            t.eq(check(s, u), "1", "CHECK %s" % u)


@test
def pipe_filter_option_sends_to_that_filter(t):
    with Server(t, filters=TWO) as s:
        urls = ["https://f/%d" % i for i in range(500)]
        data = "".join(u + "\n" for u in urls)
        rc, out, err = cli(tcp(s) + ["--new", "-f", "other"], data)
        t.eq((rc, err), (0, ""), "--new -f other")
        check_subsequence(t, out.splitlines(), urls, "--new -f other")
        t.eq(count(s, "other"), len(out.splitlines()), "other count")
        t.eq(count(s, "default"), 0, "default count")
        t.eq(check(s, urls[0], "other"), "1", "CHECK other")
        t.eq(cli(tcp(s) + ["--check", "--filter", "other"], data),
             (0, "", ""), "--check --filter other")
        rc, out, err = cli(tcp(s) + ["--check"], data)
        t.eq((rc, err), (0, ""), "--check, default routing")
        t.eq(len(out.splitlines()), len(urls), "all unknown to default")
        # an unknown filter: every line is an error, none printed
        rc, out, err = cli(tcp(s) + ["--new", "-f", "nosuch"],
                           "https://a/\nhttps://b/\n")
        t.eq((rc, out), (1, ""), "-f nosuch: status, stdout")
        t.contains(err, "seen-cli: line 1: ERR ", "-f nosuch stderr")
        t.contains(err, "seen-cli: line 2: ERR ", "-f nosuch stderr")
        t.contains(err, "no such filter", "-f nosuch stderr")


# ---- auth ----

@test
def auth_token_option_authenticates_and_without_it_exits_1(t):
    with Server(t, server_extra="auth_token = s3cret-tok") as s:
        t.eq(cli(tcp(s) + ["-a", "s3cret-tok", "SEEN", "x"]), (0, "0\n", ""),
             "with -a")
        t.eq(cli(tcp(s) + ["-a", "s3cret-tok", "SEEN", "x"]), (0, "1\n", ""),
             "with -a, again")
        rc, out, err = cli(tcp(s) + ["SEEN", "y"])
        t.eq((rc, out), (1, ""), "without -a: status, stdout")
        t.contains(err, "authentication required", "without -a: stderr")
        rc, out, err = cli(tcp(s) + ["-a", "wrong", "SEEN", "y"])
        t.eq((rc, out), (1, ""), "wrong token: status, stdout")
        t.ok(err != "", "wrong token: nothing on stderr")
        rc, out, err = cli(tcp(s) + ["--new", "-a", "s3cret-tok"],
                           "x\ny\n")
        t.eq((rc, out, err), (0, "y\n", ""), "--new with -a")
        rc, out, err = cli(tcp(s) + ["--new"], "z\n")
        t.eq((rc, out), (1, ""), "--new without -a: status, stdout")
        t.contains(err, "authentication required", "--new without -a")
        c = s.client()
        t.eq(c.cmd("AUTH s3cret-tok"), "OK")
        t.eq(c.cmd("CHECK z"), "0", "z not recorded without auth")
        t.eq(c.cmd("CHECK y"), "1", "y recorded by --new -a")


# ---- interactive prompt ----

class Pty:
    """seen-cli with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, args):
        master, slave = os.openpty()
        self.master = master
        self.proc = subprocess.Popen([SEEN_CLI] + args, stdin=slave,
                                     stdout=slave, stderr=slave,
                                     start_new_session=True)
        os.close(slave)
        self.buf = b""

    def read_until(self, t, needle, timeout=5.0):
        if isinstance(needle, str):
            needle = needle.encode()
        deadline = time.time() + timeout * SLOW
        while needle not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise Failed("%r not seen on the terminal; got %r"
                             % (needle, self.buf[-500:]))
            r, _, _ = select.select([self.master], [], [], left)
            if not r:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:         # EIO: the child closed its end
                chunk = b""
            if not chunk:
                raise Failed("terminal closed before %r; got %r"
                             % (needle, self.buf[-500:]))
            self.buf += chunk
        i = self.buf.index(needle) + len(needle)
        seen, self.buf = self.buf[:i], self.buf[i:]
        return seen.decode(errors="replace")

    def type(self, text):
        os.write(self.master, text.encode())

    def wait(self, t, timeout=5.0):
        try:
            return self.proc.wait(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            raise Failed("seen-cli did not exit; terminal: %r"
                         % self.buf[-500:])

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@test
def interactive_prompt_answers_ping_and_quit_exits_0(t):
    with Server(t) as s:
        p = Pty(tcp(s))
        try:
            prompt = "seend 127.0.0.1:%d> " % s.port
            p.read_until(t, prompt)
            p.type("PING\n")
            out = p.read_until(t, prompt)
            t.contains(out, "PONG\r\n", "reply to PING")
            p.type("SEEN https://i/\n")
            t.contains(p.read_until(t, prompt), "0\r\n", "first SEEN")
            p.type("seen https://i/\n")
            t.contains(p.read_until(t, prompt), "1\r\n", "second SEEN")
            p.type("\n")            # empty line: skipped, prompt again
            p.read_until(t, prompt)
            p.type("SEEN nosuch k\n")  # errors are part of the dialogue
            t.contains(p.read_until(t, prompt), "ERR no such filter",
                       "error reply")
            p.type("QUIT\n")
            t.contains(p.read_until(t, "OK"), "OK", "reply to QUIT")
            t.eq(p.wait(t), 0, "exit status after QUIT")
        finally:
            p.close()
        t.eq(count(s), 1, "count")


@test
def interactive_prompt_leaves_on_exit_and_on_eof(t):
    with Server(t) as s:
        prompt = "seend %s> " % s.sock
        for how in ("exit\n", "\x04"):
            p = Pty(["-s", s.sock])
            try:
                p.read_until(t, prompt)
                p.type("PING\n")
                t.contains(p.read_until(t, prompt), "PONG", how)
                p.type(how)
                t.eq(p.wait(t), 0, "exit status after %r" % how)
            finally:
                p.close()


@test
def interactive_prompt_reconnects_after_the_server_restarts(t):
    s = Server(t)
    prompt = "seend 127.0.0.1:%d> " % s.port
    p = Pty(tcp(s))             # the server is not up yet
    try:
        out = p.read_until(t, prompt)
        t.contains(out, "cannot connect to 127.0.0.1:%d" % s.port,
                   "message when the server is down")
        s.start()
        p.type("PING\n")
        t.contains(p.read_until(t, prompt), "PONG", "PING once it is up")
        s.stop()
        p.type("PING\n")        # the connection is gone: reported
        out = p.read_until(t, prompt)
        t.ok("PONG" not in out, "PONG from a stopped server: %r" % out)
        t.ok(p.proc.poll() is None, "the prompt ended with the connection")
        s.start()
        p.type("PING\n")
        t.contains(p.read_until(t, prompt), "PONG", "PING after restart")
        p.type("QUIT\n")
        t.eq(p.wait(t), 0, "exit status after QUIT")
    finally:
        p.close()


# ---- seen-bench ----

def bench_csv(t, args):
    rc, out, err = bench(args + ["--csv"])
    t.eq(rc, 0, "seen-bench %s: exit status; stderr %r" % (args, err))
    rows = list(csv.DictReader(io.StringIO(out)))
    t.eq(len(rows), 1, "one CSV row: %r" % out)
    return rows[0]


REPLIES = re.compile(r"^replies: +(\d+) new \(0\), (\d+) seen \(1\), "
                     r"(\d+) ERR$", re.M)


@test
def bench_quiet_run_exits_0_and_prints_one_summary_line(t):
    with Server(t) as s:
        rc, out, err = bench(tcp(s) + ["-n", "20000", "-c", "2", "-P", "16",
                                       "--seed", "5", "-q"])
        t.eq(rc, 0, "exit status; stderr %r" % err)
        t.ok(re.match(r"^\d+ requests/s, latency us p50 [\d.]+ p99 [\d.]+ "
                      r"p99\.9 [\d.]+ max [\d.]+\n$", out),
             "-q output: %r" % out)
        # every request reached the server: 20000 distinct new keys
        n = count(s)
        t.ok(19950 <= n <= 20000, "count after the run: %d" % n)


@test
def bench_same_seed_twice_second_run_is_all_seen(t):
    with Server(t) as s:
        args = tcp(s) + ["-n", "20000", "-c", "2", "-P", "16", "--seed", "5"]
        rc, out, err = bench(args)
        t.eq(rc, 0, "first run: exit status; stderr %r" % err)
        t.ok(re.search(r"^requests: +20000 \(SEEN\)$", out, re.M),
             "first run reports 20000 requests: %r" % out)
        t.contains(out, "(seed 5,", "seed in the report")
        m = REPLIES.search(out)
        t.ok(m, "replies line: %r" % out)
        new, seen, errs = map(int, m.groups())
        t.eq(new + seen, 20000, "first run new+seen")
        t.eq(errs, 0, "first run ERR")
        t.ok(new >= 19950, "first run: only %d new" % new)
        t.eq(count(s), new, "server count vs new replies")

        rc, out, err = bench(args)
        t.eq(rc, 0, "second run: exit status; stderr %r" % err)
        m = REPLIES.search(out)
        t.ok(m, "replies line: %r" % out)
        t.eq(tuple(map(int, m.groups())), (0, 20000, 0),
             "second run new, seen, ERR")

        row = bench_csv(t, args)
        t.eq((row["requests"], row["replies_new"], row["replies_seen"],
              row["replies_err"]), ("20000", "0", "20000", "0"),
             "third run, CSV")
        # another seed: other URLs, nearly all new
        row = bench_csv(t, tcp(s) + ["-n", "20000", "-c", "2", "-P", "16",
                                     "--seed", "6"])
        t.ok(int(row["replies_new"]) >= 19900, "seed 6 after seed 5: %r"
             % row)


@test
def bench_100_keys_over_1000_requests_gives_100_new_and_900_seen(t):
    with Server(t) as s:
        row = bench_csv(t, tcp(s) + ["-k", "100", "-n", "1000", "-c", "2",
                                     "-P", "8", "--seed", "11"])
        t.eq((row["requests"], row["keys"], row["replies_new"],
              row["replies_seen"], row["replies_err"]),
             ("1000", "100", "100", "900", "0"), "CSV row")
        t.eq(count(s), 100, "server count")


@test
def bench_against_a_closed_port_exits_1(t):
    port = free_port()
    rc, out, err = bench(["-p", str(port), "-n", "1000", "-c", "2", "-q"])
    t.eq(rc, 1, "exit status")
    t.contains(err, "127.0.0.1:%d" % port, "stderr names the target")
    t.contains(err, "Connection refused", "stderr")


if __name__ == "__main__":
    run()
