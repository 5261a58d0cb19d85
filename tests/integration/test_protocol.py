"""Every command of the protocol, against a real seend over TCP."""
import os
import re
import socket

from seendtest import *

SMALL = """
[filter.default]
capacity = 10000
error_rate = 0.001
"""

TWO = SMALL + """
[filter.other]
capacity = 10000
error_rate = 0.001
"""

# hosts/prefixes routing; "first" comes first in file order, so a key that
# both "first" and "second" match must go to "first".
ROUTED = SMALL + """
[filter.first]
capacity = 10000
error_rate = 0.001
hosts = example.org *.news.com

[filter.second]
capacity = 10000
error_rate = 0.001
hosts = www.news.com
prefixes = ftp:// https://example.org/
"""

# no [filter.default], but default_filter names it
NO_DEFAULT = """
[filter.hosts]
capacity = 10000
error_rate = 0.001
hosts = example.org
"""


def count(c, name):
    return int(c.info(name)["count"])


def unread_by_daemon(s, c):
    """
    Bytes the client sent that the daemon has not read yet: the receive
    queue of the daemon's end of c's TCP connection, from /proc/net/tcp.
    """
    here = "0100007F:%04X" % c.s.getsockname()[1]
    there = "0100007F:%04X" % s.port
    with open("/proc/net/tcp") as f:
        for line in f:
            fields = line.split()
            if fields[1] == there and fields[2] == here:
                return int(fields[4].split(":")[1], 16)
    return None


def send_and_wait_read(t, s, c, data):
    """Sends data and waits until the daemon has read it, so that what is
    sent next arrives in a later read(2)."""
    c.send(data)
    t.ok(wait_until(lambda: unread_by_daemon(s, c) == 0, step=0.001),
         "the daemon did not read %r" % data[:40])


def no_more_replies(t, c):
    """Nothing but what was already read: a PING answers PONG next."""
    t.eq(c.cmd("PING"), "PONG", "next reply after the exchange")
    t.eq(c.buf, b"", "stray bytes after PONG")


# ---- SEEN / CHECK ----

@test
def seen_answers_0_for_a_new_key_then_1(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("SEEN https://example.com/"), "0")
        t.eq(c.cmd("SEEN https://example.com/"), "1")
        t.eq(c.cmd("SEEN https://example.com/other"), "0")


@test
def seen_with_filter_name_records_in_that_filter_only(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        t.eq(c.cmd("SEEN other https://a/"), "0", "first SEEN other")
        t.eq(c.cmd("SEEN other https://a/"), "1", "second SEEN other")
        t.eq(count(c, "other"), 1, "other count")
        t.eq(count(c, "default"), 0, "default count")
        t.eq(c.cmd("CHECK default https://a/"), "0", "not in default")
        t.eq(c.cmd("SEEN https://a/"), "0", "unnamed SEEN goes to default")
        t.eq(c.cmd("SEEN default https://a/"), "1", "now in default")
        t.eq(count(c, "default"), 1, "default count after")


@test
def check_records_nothing(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("CHECK https://new/"), "0", "CHECK new")
        t.eq(c.cmd("CHECK https://new/"), "0", "CHECK new again")
        t.eq(count(c, "default"), 0, "count after CHECKs")
        t.eq(c.cmd("SEEN https://new/"), "0", "SEEN after CHECK")
        t.eq(c.cmd("CHECK https://new/"), "1", "CHECK after SEEN")
        t.eq(count(c, "default"), 1, "count after SEEN")


@test
def check_with_filter_name_records_nothing(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        t.eq(c.cmd("CHECK other k1"), "0", "CHECK other new")
        t.eq(c.cmd("SEEN other k1"), "0", "SEEN other after CHECK")
        t.eq(c.cmd("CHECK other k1"), "1", "CHECK other after SEEN")
        t.eq(c.cmd("CHECK default k1"), "0", "CHECK default: other filter")
        t.eq(count(c, "default"), 0, "default count")


# ---- PING, FILTERS, INFO, SAVE, QUIT ----

@test
def ping_answers_pong(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("PING"), "PONG")
        t.eq(c.cmd("PING"), "PONG")


FILTER_LINE = re.compile(r"^(\S+) capacity=(\d+) error_rate=([0-9.eE+-]+) "
                         r"count=(\d+) bytes=(\d+) slices=(\d+)$")


@test
def filters_lists_every_filter_in_the_documented_format_then_end(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        c.cmd("SEEN other a")
        c.cmd("SEEN other b")
        c.cmd("SEEN default c")
        c.send("FILTERS\n")
        lines = c.lines_until_end()
        t.eq(len(lines), 2, "one line per filter: %r" % lines)
        got = {}
        for l in lines:
            m = FILTER_LINE.match(l)
            t.ok(m, "FILTERS line %r does not match the format" % l)
            got[m.group(1)] = m.groups()
        t.eq(sorted(got), ["default", "other"], "filter names")
        t.eq(got["default"][1], "10000", "default capacity")
        t.eq(float(got["default"][2]), 0.001, "default error_rate")
        t.eq(got["default"][3], "1", "default count")
        t.eq(got["other"][3], "2", "other count")
        t.ok(int(got["other"][4]) > 0, "bytes > 0")
        t.eq(got["other"][5], "1", "one slice")
        # the END terminator was consumed: the next reply is ours
        no_more_replies(t, c)


SERVER_FIELDS = ["version", "uptime_seconds", "connections_current",
                 "commands_total", "keys_new", "keys_seen", "errors_total"]
FILTER_FIELDS = ["capacity", "error_rate", "count", "bits", "bits_per_key",
                 "hashes", "fill_ratio", "estimated_fp_rate",
                 "last_snapshot_time"]


@test
def info_lists_server_fields_then_end(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        before = c.info()
        for f in SERVER_FIELDS:
            t.ok(f in before, "INFO lacks %r: %r" % (f, sorted(before)))
        for f in SERVER_FIELDS[1:]:
            t.ok(before[f].isdigit(), "INFO %s %r is not a number"
                 % (f, before[f]))
        t.ok(int(before["connections_current"]) >= 1, "connections_current")
        c.cmd("SEEN a")
        c.cmd("SEEN a")
        after = c.info()
        t.eq(int(after["keys_new"]) - int(before["keys_new"]), 1, "keys_new")
        t.eq(int(after["keys_seen"]) - int(before["keys_seen"]), 1,
             "keys_seen")
        t.ok(int(after["commands_total"]) >= int(before["commands_total"]) + 2,
             "commands_total counts commands")
        no_more_replies(t, c)


@test
def info_filter_lists_filter_fields_then_end(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        c.cmd("SEEN other a")
        info = c.info("other")
        for f in FILTER_FIELDS:
            t.ok(f in info, "INFO other lacks %r: %r" % (f, sorted(info)))
        t.eq(info["capacity"], "10000", "capacity")
        t.eq(float(info["error_rate"]), 0.001, "error_rate")
        t.eq(info["count"], "1", "count")
        t.ok(int(info["bits"]) >= 10000, "bits")
        t.ok(float(info["bits_per_key"]) > 1, "bits_per_key")
        t.ok(int(info["hashes"]) >= 1, "hashes")
        t.ok(0 < float(info["fill_ratio"]) < 0.01, "fill_ratio %r"
             % info["fill_ratio"])
        t.ok(0 <= float(info["estimated_fp_rate"]) < 0.001,
             "estimated_fp_rate")
        int(info["last_snapshot_time"])
        t.eq(c.info("default")["count"], "0", "default count")
        no_more_replies(t, c)


@test
def info_unknown_filter_is_an_error(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        r = c.cmd("INFO nosuch")
        t.ok(r.startswith("ERR "), "INFO nosuch: %r" % r)
        no_more_replies(t, c)


@test
def save_answers_ok_and_writes_snapshots(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        c.cmd("SEEN a")
        t.eq(c.cmd("SAVE"), "OK", "SAVE")
        files = os.listdir(s.data_dir)
        t.ok(any("default" in f for f in files), "snapshot of default: %r"
             % files)
        t.ok(any("other" in f for f in files), "snapshot of other: %r"
             % files)
        t.eq(c.cmd("SAVE other"), "OK", "SAVE other")
        r = c.cmd("SAVE nosuch")
        t.ok(r.startswith("ERR "), "SAVE nosuch: %r" % r)
        t.eq(c.cmd("PING"), "PONG")


@test
def quit_answers_ok_then_closes(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("QUIT"), "OK")
        t.ok(c.closed(), "connection closed after QUIT")
        t.eq(c.buf, b"", "nothing after OK")


@test
def quit_stops_a_pipeline_after_ok(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        c.send("PING\nQUIT\nSEEN after-quit\nPING\n")
        t.eq(c.line(), "PONG")
        t.eq(c.line(), "OK")
        t.ok(c.closed(), "closed after QUIT")
        t.eq(c.buf, b"", "requests after QUIT were answered")
        c2 = s.client()
        t.eq(c2.cmd("CHECK after-quit"), "0", "request after QUIT was run")


# ---- lexical rules ----

@test
def command_names_are_case_insensitive(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("seen k"), "0", "seen")
        t.eq(c.cmd("Seen k"), "1", "Seen")
        t.eq(c.cmd("sEeN k"), "1", "sEeN")
        t.eq(c.cmd("check k"), "1", "check")
        t.eq(c.cmd("Check default k"), "1", "Check default")
        t.eq(c.cmd("ping"), "PONG", "ping")
        t.eq(c.cmd("Ping"), "PONG", "Ping")
        c.send("filters\n")
        t.eq(len(c.lines_until_end()), 1, "filters")
        t.ok("version" in c.info().keys(), "info")
        c.send("info default\n")
        t.ok(any(l.startswith("capacity ") for l in c.lines_until_end()),
             "info default")
        t.eq(c.cmd("quit"), "OK", "quit")


@test
def keys_and_filter_names_are_case_sensitive(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        t.eq(c.cmd("SEEN https://a/Path"), "0")
        t.eq(c.cmd("SEEN https://a/path"), "0", "lower-case key is another")
        t.eq(c.cmd("SEEN https://a/PATH"), "0", "upper-case key is another")
        t.eq(c.cmd("SEEN https://a/Path"), "1")
        r = c.cmd("SEEN Other k")
        t.ok(r.startswith("ERR "), "filter 'Other' is not 'other': %r" % r)


@test
def crlf_and_lf_lines_are_equivalent(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("SEEN k\r"), "0", "CRLF")
        t.eq(c.cmd("SEEN k"), "1", "LF: same key as the CRLF one")
        t.eq(c.cmd("SEEN j"), "0", "LF")
        t.eq(c.cmd("SEEN j\r"), "1", "CRLF: same key as the LF one")
        t.eq(c.cmd("PING\r"), "PONG", "PING CRLF")
        c.send("PING\r\nPING\nSEEN j\r\n")
        t.eq([c.line(), c.line(), c.line()], ["PONG", "PONG", "1"])


@test
def tabs_and_runs_of_spaces_separate_tokens(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        t.eq(c.cmd("SEEN\tk1"), "0", "tab")
        t.eq(c.cmd("SEEN    k1"), "1", "spaces")
        t.eq(c.cmd("  \t SEEN \t\t k1 \t "), "1", "leading/trailing")
        t.eq(c.cmd("SEEN\t \tother\t \tk1"), "0", "tabs around filter name")
        t.eq(c.cmd("SEEN other k1"), "1", "same key in other")
        t.eq(c.cmd("\tPING\t"), "PONG", "PING with tabs")


@test
def empty_and_whitespace_only_lines_get_no_reply(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        c.send("\n\nPING\n")
        t.eq(c.line(), "PONG", "first reply after two empty lines")
        c.send(" \n\t\n\r\n \t \r\n\nPING\n")
        t.eq(c.line(), "PONG", "first reply after blank lines")
        no_more_replies(t, c)
        # and none of them counted as a command
        before = int(c.info()["errors_total"])
        c.send("\n \n\t\n")
        after = int(c.info()["errors_total"])
        t.eq(after, before, "errors_total after blank lines")


# ---- errors ----

@test
def unknown_command_is_an_error_and_the_connection_goes_on(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        r = c.cmd("FROB x")
        t.ok(r.startswith("ERR unknown command"), "FROB: %r" % r)
        r = c.cmd("SEENX k")
        t.ok(r.startswith("ERR unknown command"), "SEENX: %r" % r)
        t.eq(c.cmd("CHECK x"), "0", "FROB x recorded nothing")
        t.eq(c.cmd("PING"), "PONG")


@test
def wrong_arity_is_an_error_and_the_connection_goes_on(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        for req in ["SEEN", "CHECK", "PING extra", "FILTERS x",
                    "INFO default x", "SAVE default x", "QUIT now",
                    "SEEN default k extra", "CHECK default k extra"]:
            r = c.cmd(req)
            t.ok(r.startswith("ERR "), "%r: %r" % (req, r))
            t.eq(c.cmd("PING"), "PONG", "after %r" % req)
        t.eq(c.cmd("CHECK default k"), "0", "the 4-token SEEN recorded nothing")
        t.eq(c.cmd("CHECK k"), "0", "nothing recorded")


@test
def too_many_arguments_is_an_error(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        r = c.cmd("SEEN a b c d e f g h")
        t.ok(r.startswith("ERR "), "8 tokens: %r" % r)
        r = c.cmd("PING " + " ".join("x%d" % i for i in range(1000)))
        t.ok(r.startswith("ERR "), "1001 tokens: %r" % r)
        t.eq(c.cmd("PING"), "PONG")
        t.eq(c.cmd("CHECK a"), "0")


@test
def nul_byte_in_a_line_is_an_error(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        c.send(b"SEEN a\x00b\n")
        r = c.line()
        t.ok(r.startswith("ERR "), "NUL in key: %r" % r)
        c.send(b"\x00\n")
        r = c.line()
        t.ok(r.startswith("ERR "), "lone NUL: %r" % r)
        c.send(b"PI\x00NG\n")
        r = c.line()
        t.ok(r.startswith("ERR "), "NUL in command: %r" % r)
        t.eq(c.cmd("CHECK a"), "0", "neither half recorded")
        t.eq(c.cmd("PING"), "PONG")


@test
def nonexistent_filter_name_is_an_error(t):
    with Server(t, filters=SMALL) as s:
        c = s.client()
        for req in ["SEEN nosuch k", "CHECK nosuch k", "INFO nosuch",
                    "SAVE nosuch"]:
            r = c.cmd(req)
            t.ok(r.startswith("ERR "), "%r: %r" % (req, r))
        t.eq(c.cmd("CHECK k"), "0", "SEEN nosuch recorded nothing")
        t.eq(c.info("default")["count"], "0")


# ---- routing ----

def routed_to(t, c, key, want, names=("default", "first", "second")):
    """SEEN key, then checks it landed in want and in no other filter."""
    t.eq(c.cmd("SEEN " + key), "0", "SEEN %s" % key)
    for n in names:
        got = c.cmd("CHECK %s %s" % (n, key))
        t.eq(got, "1" if n == want else "0",
             "%s routed to %s: CHECK %s" % (key, want, n))


@test
def keys_route_by_host_case_insensitively_ignoring_userinfo_and_port(t):
    with Server(t, filters=ROUTED) as s:
        c = s.client()
        routed_to(t, c, "https://example.org/a", "first")
        routed_to(t, c, "http://EXAMPLE.ORG/b", "first")
        routed_to(t, c, "https://Example.Org:8443/c", "first")
        routed_to(t, c, "https://user:pw@example.org/d", "first")
        routed_to(t, c, "https://user@example.org:81/e?q=1", "first")
        routed_to(t, c, "http://example.org", "first")
        # not the host, only in the path/query
        routed_to(t, c, "https://other.com/example.org", "default")
        routed_to(t, c, "https://other.com/?u=http://example.org/",
                  "default")
        routed_to(t, c, "https://example.org.evil.com/", "default")
        routed_to(t, c, "https://notexample.org/", "default")
        t.eq(c.info("first")["count"], "6", "INFO first count")


@test
def wildcard_host_matches_subdomains_but_not_the_bare_domain(t):
    with Server(t, filters=ROUTED) as s:
        c = s.client()
        routed_to(t, c, "https://a.news.com/x", "first")
        routed_to(t, c, "https://b.c.news.com/x", "first")
        routed_to(t, c, "https://A.NEWS.COM/y", "first")
        routed_to(t, c, "https://news.com/x", "default")
        routed_to(t, c, "https://xnews.com/x", "default")
        routed_to(t, c, "https://a.news.com.org/x", "default")


@test
def prefix_rule_routes_keys_that_start_with_it(t):
    with Server(t, filters=ROUTED) as s:
        c = s.client()
        routed_to(t, c, "ftp://files.net/a", "second")
        routed_to(t, c, "ftp://", "second")
        routed_to(t, c, "ftp:/files.net/a", "default")
        routed_to(t, c, "xftp://files.net/a", "default")
        routed_to(t, c, "not-a-url", "default")


@test
def first_matching_filter_in_file_order_wins(t):
    with Server(t, filters=ROUTED) as s:
        c = s.client()
        # first: host example.org; second: prefix https://example.org/
        routed_to(t, c, "https://example.org/both", "first")
        # first: *.news.com; second: exact www.news.com
        routed_to(t, c, "https://www.news.com/both", "first")
        # first: host example.org (any scheme); second: prefix ftp://
        routed_to(t, c, "ftp://example.org/both", "first")
        t.eq(c.info("second")["count"], "0", "second count")


@test
def prefix_of_an_earlier_filter_beats_host_of_a_later_one(t):
    filters = SMALL + """
[filter.p]
capacity = 10000
error_rate = 0.001
prefixes = https://www.news.com/sport/

[filter.h]
capacity = 10000
error_rate = 0.001
hosts = *.news.com
"""
    with Server(t, filters=filters) as s:
        c = s.client()
        names = ("default", "p", "h")
        routed_to(t, c, "https://www.news.com/sport/1", "p", names)
        routed_to(t, c, "https://www.news.com/arts/1", "h", names)


@test
def unrouted_key_goes_to_the_default_filter(t):
    with Server(t, filters=ROUTED) as s:
        c = s.client()
        routed_to(t, c, "https://unrelated.net/", "default")
        routed_to(t, c, "plain-key", "default")
        t.eq(c.info("default")["count"], "2")


@test
def unrouted_key_without_a_default_filter_is_an_error(t):
    with Server(t, server_extra="default_filter = default",
                filters=NO_DEFAULT) as s:
        c = s.client()
        r = c.cmd("SEEN https://unrelated.net/")
        t.ok(r.startswith("ERR "), "SEEN unrouted: %r" % r)
        r = c.cmd("CHECK https://unrelated.net/")
        t.ok(r.startswith("ERR "), "CHECK unrouted: %r" % r)
        r = c.cmd("SEEN default k")
        t.ok(r.startswith("ERR "), "SEEN default k: %r" % r)
        # routed keys still work
        t.eq(c.cmd("SEEN https://example.org/"), "0", "routed key")
        t.eq(c.cmd("SEEN https://example.org/"), "1", "routed key again")
        t.eq(c.cmd("PING"), "PONG")


# ---- max_line ----

MAXL = "max_line = 128"


def line_of(n, key_char="k"):
    """A SEEN request exactly n bytes long, without the newline."""
    return "SEEN " + key_char * (n - 5)


@test
def line_of_exactly_max_line_bytes_is_served(t):
    with Server(t, server_extra=MAXL, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd(line_of(128)), "0", "128-byte line")
        t.eq(c.cmd(line_of(128)), "1", "128-byte line again")
        # the CR of a CRLF does not count
        t.eq(c.cmd(line_of(128, "c") + "\r"), "0", "128 bytes + CRLF")


@test
def line_of_max_line_bytes_whose_cr_and_lf_arrive_apart_is_served(t):
    # a CR is not part of the line: a 128-byte line ending in CRLF is served
    # whether or not the CR and the LF come in the same read
    with Server(t, server_extra=MAXL, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd(line_of(128, "a") + "\r"), "0", "CRLF in one piece")
        send_and_wait_read(t, s, c, line_of(128, "b") + "\r")
        c.send("\n")
        t.eq(c.line(), "0", "128 bytes + CR, then LF in a later read")
        t.eq(c.cmd("PING"), "PONG")


@test
def line_longer_than_max_line_is_refused_and_the_next_request_works(t):
    with Server(t, server_extra=MAXL, filters=SMALL) as s:
        c = s.client()
        r = c.cmd(line_of(129))
        t.ok(r.startswith("ERR line too long"), "129-byte line: %r" % r)
        t.eq(c.cmd("PING"), "PONG", "next request on the same connection")
        t.eq(c.info("default")["count"], "0", "the long line recorded")
        # pipelined: the long line in the middle of others
        c.send("SEEN a\n" + line_of(200) + "\nSEEN a\nPING\n")
        got = [c.line() for _ in range(4)]
        t.eq(got[0], "0")
        t.ok(got[1].startswith("ERR line too long"), "middle: %r" % got[1])
        t.eq(got[2:], ["1", "PONG"])
        no_more_replies(t, c)
        t.ok(int(c.info()["lines_too_long"]) == 2, "lines_too_long")


@test
def long_line_arriving_in_small_pieces_gets_one_error(t):
    with Server(t, server_extra=MAXL, filters=SMALL) as s:
        c = s.client()
        data = (line_of(600) + "\n").encode()
        for i in range(0, len(data), 7):
            send_and_wait_read(t, s, c, data[i:i + 7])
        c.send("PING\n")
        r = c.line()
        t.ok(r.startswith("ERR line too long"), "600 bytes in pieces: %r" % r)
        t.eq(c.line(), "PONG", "one ERR only, then PONG")
        # a line within the limit in one-byte pieces is served whole
        for b in (line_of(128) + "\n").encode():
            send_and_wait_read(t, s, c, bytes([b]))
        t.eq(c.line(), "0", "128-byte line in 1-byte pieces")
        no_more_replies(t, c)


@test
def megabyte_line_without_newline_gets_one_error_then_the_next_works(t):
    with Server(t, server_extra=MAXL, filters=SMALL) as s:
        c = s.client()
        c.send(b"SEEN " + b"x" * (1 << 20))
        # refused as soon as it is too long, before its newline comes
        r = c.line()
        t.ok(r.startswith("ERR line too long"), "1 MB line: %r" % r)
        c.send(b"x" * 100000)
        c.send("\nPING\n")
        t.eq(c.line(), "PONG", "after the 1 MB line")
        no_more_replies(t, c)
        t.eq(c.info("default")["count"], "0", "nothing recorded")


if __name__ == "__main__":
    run()
