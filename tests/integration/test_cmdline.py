"""seend's command line: -V, -h, -t, bad flags, and refusing to start."""
from seendtest import *


def seend(*args, timeout=30):
    """Runs seend to completion; returns (exit status, stdout, stderr)."""
    p = subprocess.run(WRAPPER + [SEEND] + list(args), capture_output=True,
                       text=True, errors="replace", timeout=timeout * SLOW)
    return p.returncode, p.stdout, p.stderr


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 0.5):
            return True
    except OSError:
        return False


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


@test
def version_prints_the_version_and_exits_0(t):
    for flag in ("-V", "--version"):
        rc, out, err = seend(flag)
        t.eq(rc, 0, flag + " exit status")
        t.eq(out.strip(), "seend 0.1.0", flag + " output")


@test
def help_prints_usage_on_stdout_and_exits_0(t):
    for flag in ("-h", "--help"):
        rc, out, err = seend(flag)
        t.eq(rc, 0, flag + " exit status")
        t.contains(out, "usage:", flag + " stdout")
        for opt in ("-c", "--config", "-t", "--test-config", "-V", "-h"):
            t.contains(out, opt, flag + " mentions " + opt)


@test
def an_unknown_flag_exits_1_with_usage_on_stderr(t):
    for args in (["--no-such-flag"], ["-Z"], ["stray-argument"]):
        rc, out, err = seend(*args)
        t.eq(rc, 1, "%s exit status" % args)
        t.contains(err, "usage:", "%s stderr" % args)
        t.eq(out, "", "%s stdout" % args)


@test
def test_config_on_a_valid_file_says_ok_and_starts_nothing(t):
    s = Server(t, data_dir=t.path("never-created"))
    os.rmdir(s.data_dir)
    for flag in ("-t", "--test-config"):
        rc, out, err = seend(flag, "-c", s.conf)
        t.eq(rc, 0, flag + " exit status (stderr %r)" % err)
        t.contains(out, "ok", flag + " stdout")
    t.ok(not port_open(s.port), "-t must not open the TCP port")
    t.ok(not os.path.exists(s.sock), "-t must not create the unix socket")
    t.ok(not os.path.exists(s.data_dir), "-t must not create data_dir")


@test
def test_config_reports_every_error_with_file_and_line(t):
    conf = write(t.path("bad.conf"), "\n".join([
        "[server]",                             # 1
        "listen = 127.0.0.1:%d" % free_port(),  # 2
        "max_line = 12",                        # 3: below 64
        "log_level = loud",                     # 4: not a level
        "; a comment",                          # 5
        "[filter.default]",                     # 6
        "capacity = lots",                      # 7: not a number
        "error_rate = 0.001",                   # 8
        "colour = blue",                        # 9: unknown key
        "",
    ]))
    rc, out, err = seend("-t", "-c", conf)
    t.eq(rc, 1, "exit status")
    for line in (3, 4, 7, 9):
        t.contains(err, "%s:%d:" % (conf, line), "error for line %d" % line)
    for line in (1, 2, 5, 6, 8):
        t.ok("%s:%d:" % (conf, line) not in err,
             "no error for the valid line %d: %r" % (line, err))


@test
def test_config_on_a_missing_file_exits_1(t):
    missing = t.path("no-such.conf")
    rc, out, err = seend("-t", "-c", missing)
    t.eq(rc, 1, "exit status")
    t.contains(err, missing, "stderr names the file")


@test
def the_shipped_seend_conf_passes_test_config(t):
    conf = os.path.join(SRCDIR, "conf", "seend.conf")
    t.ok(os.path.exists(conf), "%s exists" % conf)
    rc, out, err = seend("-t", "-c", conf)
    t.eq(rc, 0, "exit status (stderr %r)" % err)
    t.contains(out, "ok", "stdout")


@test
def the_daemon_refuses_to_start_when_the_port_is_taken(t):
    hog = socket.socket()
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    hog.bind(("127.0.0.1", 0))
    hog.listen(1)
    try:
        s = Server(t, port=hog.getsockname()[1])
        rc = s.start(expect_fail=True)
        t.eq(rc, 1, "exit status")
        log = s.read_log()
        t.contains(log, "127.0.0.1:%d" % s.port, "the log names the address")
        t.contains(log, "Address already in use", "the log says why")
        t.ok(not os.path.exists(s.sock),
             "no unix socket left behind: %r" % os.listdir(t.dir))
    finally:
        hog.close()


def unix_only_config(s, unix_socket):
    lines = ["[server]",
             "listen = off",
             "data_dir = %s" % s.data_dir,
             "log_level = debug"]
    if unix_socket:
        lines.append("unix_socket = %s" % s.sock)
    write(s.conf, "\n".join(lines) + "\n" + DEFAULT_FILTERS)


@test
def listen_off_with_a_unix_socket_serves_on_the_socket_only(t):
    s = Server(t)
    unix_only_config(s, True)
    rc, out, err = seend("-t", "-c", s.conf)
    t.eq(rc, 0, "-t exit status (stderr %r)" % err)
    s.start(wait=False)

    def up():
        if s.proc.poll() is not None:
            raise Failed("seend exited %s; log:\n%s"
                         % (s.proc.returncode, s.read_log()))
        try:
            s.client(unix=True).close()
            return True
        except OSError:
            return False
    t.ok(wait_until(up, timeout=10), "the unix socket accepts")
    c = s.client(unix=True)
    t.eq(c.cmd("SEEN https://unix.example/"), "0")
    t.eq(c.cmd("SEEN https://unix.example/"), "1")
    t.ok(not port_open(s.port), "no TCP listener")
    t.eq(s.stop(), 0, "exit status")


@test
def listen_off_without_a_unix_socket_refuses_to_start(t):
    s = Server(t, unix=False)
    unix_only_config(s, False)
    rc = s.start(expect_fail=True)
    t.eq(rc, 1, "exit status")
    t.contains(s.read_log(), "nothing to listen on", "the log says why")


if __name__ == "__main__":
    run()
