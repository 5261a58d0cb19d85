"""metrics_listen: GET /metrics in Prometheus' text format, checked against
INFO, by promtool, and by a real Prometheus server scraping it."""
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from seendtest import *

TWO = DEFAULT_FILTERS + """
[filter.news]
capacity = 1000
error_rate = 0.01
prefixes = https://news.
"""

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


class MetricsServer(Server):
    """A seend with metrics_listen on a free port; ready once that port
    is open too (it opens after the client listeners)."""

    def __init__(self, t):
        self.mport = free_port()
        Server.__init__(self, t, "metrics_listen = 127.0.0.1:%d\n"
                        % self.mport, filters=TWO)

    def ready(self):
        return Server.ready(self) and port_open(self.mport)


def metrics_server(t):
    return MetricsServer(t)


def http(url, method="GET", data=None):
    """(status, headers, body) of one request; errors are answers too."""
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=10 * SLOW) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode(errors="replace")


def scrape(s):
    st, hdrs, body = http("http://127.0.0.1:%d/metrics" % s.mport)
    if st != 200:
        raise Failed("GET /metrics: %d %s" % (st, body[:200]))
    return hdrs, body


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def parse(body):
    """{(name, 'label="v",...'): float} of every sample."""
    out = {}
    for line in body.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        if m is None:
            raise Failed("not a sample line: %r" % line)
        out[(m.group(1), (m.group(2) or "")[1:-1])] = float(m.group(3))
    return out


def traffic(s):
    c = s.client()
    for i in range(50):
        c.cmd("SEEN https://a.example/%d" % i)
    for i in range(10):
        c.cmd("SEEN https://a.example/%d" % i)
    for i in range(7):
        c.cmd("SEEN https://news.example/%d" % i)
    c.cmd("CHECK https://a.example/1")
    c.cmd("CHECK https://a.example/none")
    c.cmd("SEEN nosuch https://x/")
    c.cmd("BOGUS")
    return c


@test
def metrics_match_info(t):
    with metrics_server(t) as s:
        c = traffic(s)
        info = c.info()
        fi = c.info("default")
        news = c.info("news")
        hdrs, body = scrape(s)
        m = parse(body)
        t.contains(hdrs.get("Content-Type", ""), "version=0.0.4",
                   "content type")
        req = lambda cmd, a: m[("seend_requests_total",
                                'command="%s",answer="%s"' % (cmd, a))]
        t.eq(req("seen", "new"), float(info["keys_new"]), "seen new")
        t.eq(req("seen", "new"), 57.0, "seen new is 50 + 7")
        t.eq(req("seen", "seen"), float(info["keys_seen"]), "seen seen")
        t.eq(req("seen", "seen"), 10.0, "seen seen is 10")
        t.eq(req("seen", "error"), 1.0, "SEEN of a missing filter")
        t.eq(req("check", "hit"), float(info["check_hits"]), "check hit")
        t.eq(req("check", "miss"), float(info["check_misses"]), "miss")
        t.eq(req("unknown", "error"), 1.0, "BOGUS counted")
        t.eq(m[("seend_errors_total", "")], float(info["errors_total"]),
             "errors")
        t.eq(m[("seend_connections", "")], 1.0, "one client connected")
        t.eq(m[("seend_connections_total", "")],
             float(info["connections_total"]), "connections total")
        t.eq(m[("seend_filters", "")], 2.0, "two filters")
        for name, fi_ in (("default", fi), ("news", news)):
            lab = 'filter="%s"' % name
            t.eq(m[("seend_filter_keys", lab)], float(fi_["count"]),
                 name + " keys")
            t.eq(m[("seend_filter_capacity", lab)], float(fi_["capacity"]),
                 name + " capacity")
            t.eq(m[("seend_filter_bytes", lab)], float(fi_["bytes"]),
                 name + " bytes")
            t.ok(abs(m[("seend_filter_fill_ratio", lab)] -
                     float(fi_["fill_ratio"])) < 1e-6, name + " fill")
            est = float(fi_["estimated_fp_rate"])
            t.ok(abs(m[("seend_filter_estimated_false_positive_rate", lab)]
                     - est) <= est * 0.01, name + " fp rate")
            t.eq(m[("seend_filter_slices", lab)], 1.0, name + " slices")
        t.eq(m[("seend_filter_keys", 'filter="default"')], 50.0, "50 keys")
        t.eq(m[("seend_filter_keys", 'filter="news"')], 7.0, "7 keys")
        t.ok(m[("seend_uptime_seconds", "")] >= 0, "uptime")
        t.ok(abs(m[("process_start_time_seconds", "")] - time.time()) < 60,
             "start time is now-ish")
        c.close()


@test
def metrics_snapshot_figures(t):
    with metrics_server(t) as s:
        c = traffic(s)
        t.eq(c.cmd("SAVE"), "OK")
        fi = c.info("default")
        m = parse(scrape(s)[1])
        lab = 'filter="default"'
        t.eq(m[("seend_filter_snapshots_total", lab)], 1.0, "one snapshot")
        t.eq(m[("seend_filter_snapshot_failures_total", lab)], 0.0, "none "
             "failed")
        t.eq(m[("seend_filter_last_snapshot_timestamp_seconds", lab)],
             float(fi["last_snapshot_time"]), "snapshot time as INFO")
        t.ok(m[("seend_filter_snapshot_age_seconds", lab)] < 30, "age")
        t.eq(m[("seend_filter_dirty", lab)], 0.0, "clean after SAVE")
        c.close()


@test
def metrics_http_errors(t):
    with metrics_server(t) as s:
        base = "http://127.0.0.1:%d" % s.mport
        t.eq(http(base + "/")[0], 404, "/ is not found")
        t.eq(http(base + "/metricsx")[0], 404, "/metricsx is not found")
        st, hdrs, _ = http(base + "/metrics", method="POST", data=b"x=1")
        t.eq(st, 405, "POST")
        t.contains(hdrs.get("Allow", ""), "GET", "Allow header")
        t.eq(http(base + "/metrics", method="DELETE")[0], 405, "DELETE")
        st, _, body = http(base + "/metrics", method="HEAD")
        t.eq((st, body), (200, ""), "HEAD: 200, no body")
        t.eq(http(base + "/metrics?x=1")[0], 200, "a query string is fine")
        # the daemon still serves its clients
        t.eq(s.client().cmd("PING"), "PONG")


@test
def metrics_pass_promtool(t):
    with metrics_server(t) as s:
        traffic(s).close()
        body = scrape(s)[1]
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=body.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        out = p.stdout.decode(errors="replace")
        t.eq(p.returncode, 0, "promtool exit status: " + out)
        t.eq(out.strip(), "", "promtool has no lint warnings")


@test
def metrics_listen_reload(t):
    with metrics_server(t) as s:
        old = s.mport
        new = free_port()
        s.write_config("metrics_listen = 127.0.0.1:%d\n" % new, TWO)
        s.send_signal(signal.SIGHUP)
        s.mport = new
        t.ok(wait_until(lambda: port_open(new), 10), "the new address opens")
        t.eq(scrape(s)[0] is not None, True, "the new address serves")
        t.ok(wait_until(lambda: not port_open(old), 5), "the old one closed")
        # a port someone else holds: the reload fails, metrics stay
        with socket.socket() as hold:
            hold.bind(("127.0.0.1", 0))
            hold.listen(1)
            busy = hold.getsockname()[1]
            s.write_config("metrics_listen = 127.0.0.1:%d\n" % busy, TWO)
            s.send_signal(signal.SIGHUP)
            c = s.client()
            t.ok(wait_until(lambda: c.info()["last_reload_status"] ==
                            "failed", 10), "the reload failed")
            c.close()
        t.eq(scrape(s)[0] is not None, True, "the old endpoint still serves")
        t.contains(s.read_log(), "cannot open the new metrics_listen")
        # off: no endpoint
        s.write_config("", TWO)
        s.send_signal(signal.SIGHUP)
        t.ok(wait_until(lambda: not port_open(new), 10), "off closes it")


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 0.5):
            return True
    except OSError:
        return False


@test
def prometheus_scrapes_seend(t):
    with metrics_server(t) as s:
        traffic(s).close()
        with Prometheus(t, "  - job_name: seend\n"
                        "    scrape_interval: 1s\n"
                        "    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n"
                        % s.mport) as pr:
            q = 'seend_requests_total{command="seen",answer="new"}'
            if not wait_until(lambda: pr.query(q) == 57.0, 30, step=0.5):
                raise Failed("prometheus never saw 57 new keys (%r); "
                             "its log:\n%s" % (pr.query(q), pr.log()))
            t.eq(pr.query('seend_filter_keys{filter="news"}'), 7.0,
                 "news keys as Prometheus stored them")
            t.eq(pr.query('up{job="seend"}'), 1.0, "target up")


if __name__ == "__main__":
    run()
