"""
Access control (issue #6): loopback by default, unix_socket_mode,
auth_token / auth_token_file and AUTH, the warning for a wide listen
address without a token, and filter names that can never leave data_dir.
"""
import os
import re
import signal
import socket
import stat
import subprocess

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

TOKEN = "s3cret"
AUTH_REQUIRED = "ERR authentication required"
INVALID_TOKEN = "ERR invalid token"


def diag(fmt, *args):
    print("# " + (fmt % args if args else fmt), flush=True)


def shipped_listen():
    """The listen value in [server] of the shipped conf/seend.conf, or
    None if the file does not set it (inih: ';' and '#' start comments,
    and ' ;' starts one after a value)."""
    section, listen = None, None
    with open(os.path.join(SRCDIR, "conf", "seend.conf")) as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            m = re.match(r"^\[(.*)\]$", line)
            if m:
                section = m.group(1).strip()
                continue
            if "=" not in line:
                continue
            key, value = line.split("=", 1)
            value = re.split(r"\s;", value)[0].strip()
            if section == "server" and key.strip() == "listen":
                listen = value
    return listen


def host_of(listen):
    if listen.startswith("["):
        return listen[1:listen.index("]")]
    return listen.rsplit(":", 1)[0]


def start_until_log(t, s, needle, timeout=10):
    """Starts s without the TCP probe (it may listen where 127.0.0.1 cannot
    reach) and waits until its log has needle; returns the log."""
    s.start(wait=False)
    ok = wait_until(lambda: needle in s.read_log() or
                    s.proc.poll() is not None, timeout=timeout)
    log = s.read_log()
    t.ok(ok and needle in log, "%r not in the log (exit %r):\n%s"
         % (needle, s.proc.poll(), log[-2000:]))
    return log


def refuses_to_start(t, s, *needles):
    """The daemon exits 1 before serving, saying why; returns the log."""
    s.start(wait=False)
    try:
        rc = s.proc.wait(timeout=10 * SLOW)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()
        rc = "still running"
    s.proc = None
    s.logf.close()
    log = s.read_log()
    t.eq(rc, 1, "exit status; log:\n%s" % log[-2000:])
    for n in needles:
        t.contains(log, n, "start-up error")
    t.ok("ready" not in log, "it said ready")
    return log


# ---- loopback by default ----

@test
def shipped_config_listens_on_loopback_only(t):
    listen = shipped_listen()
    diag("conf/seend.conf: listen = %s", listen)
    if listen is None:
        listen = "127.0.0.1:6874"       # the documented default
    t.ok(listen != "off", "listen = off")
    t.ok(host_of(listen) in ("127.0.0.1", "::1", "localhost"),
         "the shipped config listens on %r" % listen)


@test
def built_in_default_listen_is_loopback(t):
    # a config without a listen key: what does the daemon bind? (The
    # default port may be taken by someone else; the log names the address
    # either way.)
    s = Server(t, filters=SMALL)
    with open(s.conf, "w") as f:
        f.write("[server]\ndata_dir = %s\nunix_socket = %s\nlog_level = "
                "debug\n%s" % (s.data_dir, s.sock, SMALL))
    s.start(wait=False)
    wait_until(lambda: re.search(r"listen(ing on)? \S+", s.read_log()) or
               s.proc.poll() is not None)
    log = s.read_log()
    m = re.search(r"listen(?:ing on)? (\S+?):? ", log)
    t.ok(m, "no listen address in the log:\n" + log[-2000:])
    diag("without a listen key: %s", m.group(0).strip())
    t.ok(host_of(m.group(1)) in ("127.0.0.1", "::1", "localhost"),
         "default listen address %r" % m.group(1))
    t.ok("not a loopback" not in log, "warned about its own default")
    if s.proc.poll() is None:
        s.stop()


# ---- auth_token ----

@test
def without_auth_every_command_is_refused_and_three_refusals_close(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("PING"), AUTH_REQUIRED, "PING before AUTH")
        t.eq(c.cmd("AUTH wrong"), INVALID_TOKEN, "AUTH with a wrong token")
        t.eq(c.cmd("SEEN https://before.auth/"), AUTH_REQUIRED,
             "SEEN before AUTH (the third refusal)")
        t.ok(c.closed(), "the connection is open after 3 refusals")
        t.eq(c.buf, b"", "bytes after the third refusal")
        c.close()
        # the refused SEEN recorded nothing
        a = s.client()
        t.eq(a.cmd("AUTH " + TOKEN), "OK", "AUTH")
        t.eq(a.cmd("CHECK https://before.auth/"), "0",
             "a refused SEEN was recorded")
        info = a.info()
        t.ok(int(info["auth_failures"]) >= 3, "auth_failures")
        t.ok(TOKEN not in " ".join(info.values()), "INFO shows the token")
        for cmd in ("CHECK k", "INFO", "FILTERS", "SAVE", "FROB",
                    "INFO default"):
            c = s.client()
            t.eq(c.cmd(cmd), AUTH_REQUIRED, "%r before AUTH" % cmd)
            c.close()
        # a pipeline of refused requests: three answers, then EOF
        c = s.client()
        c.send("PING\nFROB\nSEEN https://piped/\nPING\nSEEN https://p2/\n")
        got = [c.line() for _ in range(3)]
        t.eq(got, [AUTH_REQUIRED] * 3, "pipelined refusals")
        t.ok(c.closed(), "open after 3 pipelined refusals")
        t.eq(c.buf, b"", "a 4th request was answered")
        t.eq(a.cmd("CHECK https://p2/"), "0", "request after close run")
        t.eq(a.cmd("CHECK https://piped/"), "0", "refused SEEN recorded")
        t.ok(TOKEN not in s.read_log(), "the token is in the log")


@test
def auth_with_the_token_then_everything_works(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=TWO) as s:
        c = s.client()
        t.eq(c.cmd("AUTH " + TOKEN), "OK", "AUTH")
        t.eq(c.cmd("SEEN https://a/"), "0", "SEEN after AUTH")
        t.eq(c.cmd("SEEN https://a/"), "1", "SEEN again")
        t.eq(c.cmd("SEEN other k"), "0", "SEEN other")
        t.eq(c.cmd("PING"), "PONG")
        c.send("FILTERS\n")
        t.eq(len(c.lines_until_end()), 2, "FILTERS after AUTH")
        for i in range(5):              # errors after AUTH are not strikes
            t.ok(c.cmd("FROB").startswith("ERR unknown command"), "FROB")
        t.eq(c.cmd("PING"), "PONG", "still open after errors")
        # refusals before AUTH are forgiven by a good AUTH
        c = s.client()
        t.eq(c.cmd("PING"), AUTH_REQUIRED)
        t.eq(c.cmd("AUTH nope"), INVALID_TOKEN)
        t.eq(c.cmd("AUTH " + TOKEN), "OK", "AUTH after two refusals")
        t.eq(c.cmd("CHECK https://a/"), "1", "served after AUTH")
        # pipelined: AUTH first, then work, in one write
        c = s.client()
        c.send("AUTH %s\nSEEN https://b/\nPING\n" % TOKEN)
        t.eq([c.line(), c.line(), c.line()], ["OK", "0", "PONG"])


@test
def near_miss_tokens_are_refused(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL) as s:
        for bad in (TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "x" + TOKEN,
                    TOKEN[:-1] + "T", TOKEN * 2, "\x00" + TOKEN[1:]):
            c = s.client()
            r = c.cmd("AUTH " + bad)
            t.ok(r.startswith("ERR "), "AUTH %r: %r" % (bad, r))
            t.eq(c.cmd("PING"), AUTH_REQUIRED, "PING after AUTH %r" % bad)
            c.close()


@test
def quit_works_before_auth(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("QUIT"), "OK", "QUIT before AUTH")
        t.ok(c.closed(), "closed after QUIT")
        c = s.client()
        t.eq(c.cmd("PING"), AUTH_REQUIRED)
        t.eq(c.cmd("QUIT"), "OK", "QUIT after a refusal")
        t.ok(c.closed(), "closed after QUIT")


@test
def unix_socket_clients_need_no_auth(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL) as s:
        u = s.client(unix=True)
        t.eq(u.cmd("SEEN https://unix/"), "0", "SEEN over unix, no AUTH")
        t.eq(u.cmd("PING"), "PONG")
        for i in range(5):
            t.ok(u.cmd("FROB").startswith("ERR unknown"), "FROB over unix")
        t.eq(u.cmd("SEEN https://unix/"), "1", "still open")
        # and TCP still needs it
        c = s.client()
        t.eq(c.cmd("CHECK https://unix/"), AUTH_REQUIRED, "TCP")


@test
def every_refused_request_before_auth_is_a_strike(t):
    # Whatever an unauthenticated client sends that is not a good AUTH or
    # QUIT is refused, and the third refusal closes it: malformed lines
    # must not be a way to keep talking without the token.
    hostile = {
        "AUTH without a token": "AUTH",
        "AUTH with two words": "AUTH a b",
        "a NUL byte": "PI\x00NG",
        "too many arguments": "SEEN " + " ".join("a" * 40),
        "a line over max_line": "SEEN " + "x" * 300,
    }
    with Server(t, server_extra="auth_token = %s\nmax_line = 128" % TOKEN,
                filters=SMALL) as s:
        bad = []
        for what, line in hostile.items():
            c = s.client(timeout=2)
            replies = []
            for i in range(4):
                try:
                    c.send(line + "\n")
                    replies.append(c.line())
                except OSError:
                    break
            closed = c.closed(timeout=1)
            diag("%s x4 before AUTH: %r, %s", what, replies,
                 "closed" if closed else "still open")
            if not closed:
                bad.append(what)
            c.close()
        t.ok(not bad, "refused without counting as strikes, the connection "
             "stays open: %s" % ", ".join(bad))


# ---- auth_token changed by SIGHUP ----

def reload_to(t, s, server_extra):
    s.write_config(server_extra, SMALL)
    n = s.read_log().count("reloaded ")
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: s.read_log().count("reloaded ") > n),
         "no reload:\n" + s.read_log()[-1000:])


@test
def token_added_by_reload_applies_to_connected_tcp_clients(t):
    # server.c: "new limits and auth apply to existing clients from now
    # on". A token is added to shut out whoever is not meant to be there:
    # a TCP connection that never sent AUTH must not keep full access.
    with Server(t, filters=SMALL) as s:
        old = s.client()
        t.eq(old.cmd("PING"), "PONG", "before the token")
        u = s.client(unix=True)
        reload_to(t, s, "auth_token = " + TOKEN)
        t.eq(s.client().cmd("PING"), AUTH_REQUIRED, "a new TCP client")
        t.eq(u.cmd("PING"), "PONG", "a unix client stays exempt")
        t.eq(old.cmd("SEEN https://after.token/"), AUTH_REQUIRED,
             "a TCP client connected before the token was added, never "
             "authenticated")


@test
def token_removed_by_reload_serves_clients_that_had_not_authenticated(t):
    with Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("PING"), AUTH_REQUIRED, "before the reload")
        reload_to(t, s, "")
        t.eq(s.client().cmd("PING"), "PONG", "a new client")
        t.eq(c.cmd("PING"), "PONG", "a client connected while a token was "
             "required, now that none is")
        t.eq(c.cmd("PING"), "PONG", "and again (it would be the 3rd strike)")


# ---- auth_token_file ----

@test
def auth_token_file_supplies_the_token(t):
    path = t.path("token")
    with open(path, "w") as f:
        f.write("fr0m-a-file\r\n")      # written on Windows, or by echo
    os.chmod(path, 0o600)
    with Server(t, server_extra="auth_token_file = " + path,
                filters=SMALL) as s:
        c = s.client()
        t.eq(c.cmd("PING"), AUTH_REQUIRED, "PING before AUTH")
        t.eq(c.cmd("AUTH fr0m-a-file"), "OK", "AUTH with the file's token")
        t.eq(c.cmd("SEEN k"), "0")
        c = s.client()
        t.eq(c.cmd("AUTH " + TOKEN), INVALID_TOKEN, "another token")
        t.ok("fr0m-a-file" not in s.read_log(), "the token is in the log")


@test
def auth_token_and_auth_token_file_together_refuse_to_start(t):
    path = t.path("token")
    with open(path, "w") as f:
        f.write("other\n")
    s = Server(t, server_extra="auth_token = %s\nauth_token_file = %s"
               % (TOKEN, path), filters=SMALL)
    log = refuses_to_start(t, s, "auth_token", "auth_token_file")
    t.ok(re.search(re.escape(s.conf) + r":\d+:", log),
         "no file:line in:\n" + log[-1000:])


@test
def unreadable_token_file_refuses_to_start(t):
    missing = t.path("no-such-token")
    s = Server(t, server_extra="auth_token_file = " + missing,
               filters=SMALL, name="missing")
    log = refuses_to_start(t, s, missing)
    t.ok(re.search(re.escape(s.conf) + r":\d+:", log),
         "no file:line in:\n" + log[-1000:])
    empty = t.path("empty-token")
    open(empty, "w").close()
    s = Server(t, server_extra="auth_token_file = " + empty,
               filters=SMALL, name="empty")
    refuses_to_start(t, s, empty)
    if os.geteuid() != 0:               # root reads anything
        locked = t.path("locked-token")
        with open(locked, "w") as f:
            f.write("x\n")
        os.chmod(locked, 0)
        s = Server(t, server_extra="auth_token_file = " + locked,
                   filters=SMALL, name="locked")
        refuses_to_start(t, s, locked)


# ---- unix_socket_mode ----

@test
def unix_socket_mode_is_applied_to_the_socket_file(t):
    for extra, want in (("", 0o660), ("unix_socket_mode = 0600", 0o600),
                        ("unix_socket_mode = 0640", 0o640)):
        s = Server(t, server_extra=extra, filters=SMALL,
                   name="m%o" % want).start()
        mode = stat.S_IMODE(os.stat(s.sock).st_mode)
        diag("unix_socket_mode %r: socket file mode %04o", extra or
             "(default)", mode)
        t.eq(oct(mode), oct(want), "mode with %r" % (extra or "default"))
        t.ok(stat.S_ISSOCK(os.stat(s.sock).st_mode), "not a socket")
        s.stop()


# ---- the warning for a wide listen address ----

WARNING = "not a loopback address"


@test
def wildcard_listen_without_token_logs_a_loud_warning(t):
    s = Server(t, filters=SMALL)
    s.write_config(filters=SMALL)
    conf = open(s.conf).read().replace("listen = 127.0.0.1:",
                                       "listen = 0.0.0.0:")
    with open(s.conf, "w") as f:
        f.write(conf)
    s.start()
    log = s.read_log()
    warn = [l for l in log.splitlines() if WARNING in l]
    t.ok(warn, "no %r warning in:\n%s" % (WARNING, log[-2000:]))
    diag("%s", warn[0])
    t.ok(re.search(r"\bwarn", warn[0]), "not logged as a warning")
    t.contains(warn[0], "auth_token", "the warning says what to do")
    t.eq(s.client().cmd("PING"), "PONG", "it still serves")
    s.stop()


@test
def wildcard_listen_with_token_or_loopback_listen_gives_no_warning(t):
    s = Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL,
               name="tok")
    conf = open(s.conf).read().replace("listen = 127.0.0.1:",
                                       "listen = 0.0.0.0:")
    with open(s.conf, "w") as f:
        f.write(conf)
    s.start()
    t.ok(WARNING not in s.read_log(), "warned with a token:\n"
         + s.read_log()[-1000:])
    c = s.client()
    t.eq(c.cmd("PING"), AUTH_REQUIRED, "0.0.0.0 with a token needs AUTH")
    s.stop()
    s = Server(t, filters=SMALL, name="lo")
    s.start()
    t.ok(WARNING not in s.read_log(), "warned about 127.0.0.1")
    s.stop()


@test
def reload_that_drops_the_token_of_a_wildcard_listener_warns(t):
    # the listener stays open across the reload (same address), but it is
    # now a non-loopback address without a token all the same
    s = Server(t, server_extra="auth_token = " + TOKEN, filters=SMALL)
    wide = lambda: open(s.conf).read().replace("listen = 127.0.0.1:",
                                               "listen = 0.0.0.0:")
    conf = wide()
    with open(s.conf, "w") as f:
        f.write(conf)
    s.start()
    t.ok(WARNING not in s.read_log(), "warned with a token")
    s.write_config("", SMALL)
    conf = wide()
    with open(s.conf, "w") as f:
        f.write(conf)
    n = s.read_log().count("reloaded ")
    s.send_signal(signal.SIGHUP)
    t.ok(wait_until(lambda: s.read_log().count("reloaded ") > n),
         "no reload:\n" + s.read_log()[-1000:])
    t.eq(s.client().cmd("PING"), "PONG", "no token after the reload")
    t.ok(WARNING in s.read_log(), "serving 0.0.0.0 without a token after "
         "the reload, and no warning:\n" + s.read_log()[-1000:])
    s.stop()


@test
def ipv6_wildcard_listen_without_token_warns_too(t):
    try:
        probe = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        probe.bind(("::", 0))
        probe.close()
    except OSError as e:
        diag("skipped: no IPv6 here (%s)", e)
        return
    s = Server(t, filters=SMALL)
    conf = open(s.conf).read().replace("listen = 127.0.0.1:%d" % s.port,
                                       "listen = [::]:%d" % s.port)
    with open(s.conf, "w") as f:
        f.write(conf)
    log = start_until_log(t, s, "ready")
    t.ok(WARNING in log, "no warning for [::]:\n" + log[-1000:])
    s.stop()


# ---- filter names never leave data_dir ----

ESCAPES = ["../x", "a/b", "..hidden", "..", ".", "/etc", "a\\b", "a b",
           "%2e%2e", "x" * 65]


def filters_named(name):
    return SMALL + "\n[filter.%s]\ncapacity = 1000\nerror_rate = 0.01\n" \
        % name


@test
def filter_names_that_could_escape_data_dir_are_config_errors(t):
    for i, name in enumerate(ESCAPES):
        s = Server(t, filters=filters_named(name), name="bad%d" % i)
        with open(s.conf) as f:
            lineno = 1 + f.read().split("\n").index("[filter.%s]" % name)
        log = refuses_to_start(t, s, "%s:%d:" % (s.conf, lineno))
        diag("[filter.%s]: %s", name[:20] + ("..." if len(name) > 20
                                             else ""),
             [l for l in log.splitlines() if s.conf in l][0]
             .split(s.conf, 1)[1])
        t.eq(sorted(os.listdir(s.data_dir)), [],
             "files made in data_dir by %r" % name)
    # and -t says the same without starting
    s = Server(t, filters=filters_named("../x"), name="check")
    r = subprocess.run([SEEND, "-t", "-c", s.conf], capture_output=True,
                       text=True, timeout=30)
    t.eq(r.returncode, 1, "seend -t with [filter.../x]")


@test
def a_64_byte_filter_name_is_the_longest_and_is_used_whole(t):
    name = "f" * 40 + "-" + "g" * 23            # 64 bytes
    t.eq(len(name), 64)
    with Server(t, filters=filters_named(name)) as s:
        c = s.client()
        t.eq(c.cmd("SEEN %s k" % name), "0", "SEEN in the 64-byte filter")
        short = name[:49]                       # inih's section buffer
        r = c.cmd("SEEN %s k" % short)
        t.ok(r.startswith("ERR no such filter"), "SEEN %s...: %r"
             % (short[:10], r))
        t.eq(c.cmd("SAVE"), "OK")
        t.eq(sorted(n for n in os.listdir(s.data_dir)
                    if not n.startswith("journal.")),
             sorted(["default.bloom", name + ".bloom"]), "snapshot files")


@test
def keys_and_filter_arguments_never_touch_files_outside_data_dir(t):
    with Server(t, filters=TWO) as s:
        c = s.client()
        before = sorted(os.listdir(t.dir))
        for key in ("../../etc/passwd", "/etc/passwd", "..",
                    "../" * 40 + "tmp/x", "%2e%2e/x"):
            t.eq(c.cmd("SEEN " + key), "0", "SEEN %s is just a key" % key)
            t.eq(c.cmd("SEEN " + key), "1", "SEEN %s again" % key)
        for name in ("../x", "..", ".", "/tmp", "default/../other",
                     "../s-data/default", "other/", ".default",
                     "x" * 65, "DEFAULT"):
            for cmd in ("SEEN %s somekey", "CHECK %s somekey", "INFO %s",
                        "SAVE %s"):
                req = cmd % name
                r = c.cmd(req)
                t.ok(r.startswith("ERR no such filter"), "%r: %r"
                     % (req, r))
        t.eq(c.cmd("SAVE"), "OK", "SAVE")
        t.eq(c.cmd("SAVE other"), "OK", "SAVE other")
        files = sorted(n for n in os.listdir(s.data_dir)
                       if not n.startswith("journal."))
        diag("data_dir after SAVE: %s", files)
        t.eq(files, ["default.bloom", "other.bloom"], "data_dir contents")
        t.eq(sorted(os.listdir(t.dir)), before, "files next to data_dir")
        t.eq(c.cmd("PING"), "PONG")


@test
def unix_socket_group_is_applied_to_the_socket_file(t):
    import grp
    # a group that exists on every Debian system, other than our own
    g = grp.getgrnam("daemon")
    s = Server(t, server_extra="unix_socket_group = daemon", filters=SMALL)
    with s:
        st = os.stat(s.sock)
        t.eq(st.st_gid, g.gr_gid, "socket group")
        t.eq(stat.S_IMODE(st.st_mode), 0o660, "socket mode")
        t.eq(s.client(unix=True).cmd("PING"), "PONG", "served over it")


@test
def unknown_unix_socket_group_is_a_config_error_with_its_line(t):
    s = Server(t, server_extra="unix_socket_group = no-such-group-xyz",
               filters=SMALL)
    t.eq(s.start(expect_fail=True), 1, "exit status")
    log = s.read_log()
    t.contains(log, "no group", "the message")
    t.ok(re.search(r"s\.conf:\d+: unix_socket_group", log) is not None,
         "file:line in:\n" + log)


if __name__ == "__main__":
    run()
