"""
SEEND_FORGET_FAILED: real Scrapy crawls (Debian's python3-scrapy, in their
own processes) of a local site where some pages always fail (HTTP 500 with
their retries spent, a 404, a dropped connection, a redirect to a 500)
and the others succeed (one after a retry, one with a 410 the crawl
accepts), deduplicated by a real seend with a cuckoo filter: a later crawl
fetches exactly the failed pages; once they succeed, nothing.  A bloom
filter stops the crawl at its start.  And the client's forget/forget_many
against a real seend.
"""
import json
import os
import socket
import subprocess
import threading

from pyseend import HERE, SYSTEM_PYTHON, Failed, Server, address, \
    free_port, run, test
from website import Site

import seend

CUCKOO = """
[filter.default]
type = cuckoo
capacity = 100000
error_rate = 0.001
"""

CUCKOO_AND_BLOOM = CUCKOO + """
[filter.plain]
capacity = 1000
error_rate = 0.01
"""


class Crawl:
    """A crawl.py process; wait() returns it with its result and stats."""

    def __init__(self, t, name, starts, settings):
        self.out = t.path(name + ".json")
        self.log = t.path(name + ".log")
        args = [SYSTEM_PYTHON, os.path.join(HERE, "crawl.py"), self.out]
        args += starts
        for k, v in settings.items():
            args += ["-s", "%s=%s" % (k, json.dumps(v))]
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen(args, stdout=logf, stderr=logf,
                                         env=os.environ)

    def wait(self, timeout=120):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failed("crawl did not finish in %ss; log:\n%s"
                         % (timeout, self.text()[-3000:]))
        try:
            with open(self.out) as f:
                self.result = json.load(f)
        except (OSError, ValueError):
            raise Failed("crawl wrote no result (exit %s); log:\n%s"
                         % (self.proc.returncode, self.text()[-3000:]))
        self.stats = self.result.get("stats", {})
        return self

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def crawl(t, name, starts, settings):
    return Crawl(t, name, starts, settings).wait()


def forget_settings(s, **extra):
    d = {"SEEND_ADDRESS": address(s), "SEEND_FORGET_FAILED": True,
         "RETRY_ENABLED": True, "RETRY_TIMES": 2,
         "HTTPERROR_ALLOWED_CODES": [410]}
    d.update(extra)
    return d


def urls(n, tag):
    return ["https://example.com/%s/%08d" % (tag, i) for i in range(n)]


# ---- the client ----

def resp(port, *args):
    """One RESP request to seend; its reply line."""
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sk:
        sk.sendall(req)
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = sk.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode()


@test
def forget_and_forget_many_on_a_cuckoo_filter(t):
    with Server(t, filters=CUCKOO_AND_BLOOM) as s:
        c = seend.Client(address(s))
        t.eq(c.info("default")["type"], "cuckoo", "INFO type of a cuckoo filter")
        t.eq(c.info("plain")["type"], "bloom", "INFO type of a bloom filter")
        info = c.info("default")
        t.eq(list(info)[:2], ["name", "type"], "type comes right after name")

        t.eq(c.seen("https://a/1"), False, "recorded")
        t.eq(c.forget("https://a/1"), True, "forgotten")
        t.eq(c.check("https://a/1"), False, "no longer held")
        t.eq(c.forget("https://a/1"), False, "a key not held")
        t.eq(c.seen("https://a/1"), False, "new again")
        t.eq(c.forget(b"https://a/1", filter="default"), True, "bytes, named")

        # a cuckoo filter of 100,000 with 16-bit fingerprints answers a
        # first occurrence True now and then: 0.0036 expected while these
        # 2,500 fill it (one run in 280), 0.0017 among the 1,000 forgotten
        # keys checked below. Those two counts get margins (3 or more:
        # once in 100 million runs); the rest is exact
        keys = urls(2500, "m")
        got = c.seen_many(keys)
        keys = [k for k, was in zip(keys, got) if not was]
        t.ok(2500 - len(keys) <= 2, "recorded: %d of 2500 answered False"
             % len(keys))
        # across batch boundaries, with repeats: True once, then False
        got = c.forget_many(keys[:1000] + keys[:3] + ["https://never/1"],
                            batch=333)
        t.eq(got, [True] * 1000 + [False] * 4, "forget_many")
        got = c.check_many(keys)
        t.eq(got[1000:], [True] * (len(keys) - 1000), "what is left")
        t.ok(got[:1000].count(True) <= 2, "forgotten keys answering True "
             "(false positives): %d of 1000" % got[:1000].count(True))
        t.eq(c.info("default")["count"], len(keys) - 1000,
             "count goes down per key")
        t.eq(c.forget_many([]), [], "empty batch")
        t.eq(c.forget_many(iter(keys[1000:1002])), [True, True], "an iterable")

        # over the Unix socket too
        with seend.Client(address(s, unix=True)) as u:
            t.eq(u.forget(keys[1002]), True, "unix socket")

        # a bloom filter cannot forget: Error with the server's text
        c.seen("k1", filter="plain")
        try:
            c.forget("k1", filter="plain")
            raise Failed("a bloom filter forgot")
        except seend.Error as e:
            t.eq(str(e), "plain cannot forget keys (type = bloom)", "ERR text")
        t.eq(c.check("k1", filter="plain"), True, "the bloom filter kept it")
        try:
            c.forget_many(["k1", "k2", "k3"], filter="plain")
            raise Failed("a bloom filter forgot")
        except seend.Error as e:
            t.eq((e.index, e.replies), (0, [None, None, None]), "batch error")
        try:
            c.forget("k", filter="nosuchfilter")
            raise Failed("forgot in a filter that does not exist")
        except seend.Error as e:
            t.contains(str(e), "nosuchfilter", "ERR text")
        # the connection is still in step after the errors
        t.eq(c.forget_many([keys[1003], "https://never/2"]), [True, False],
             "after errors")
        for bad in ("", "a b", "a\tb", "a\nb"):
            try:
                c.forget(bad)
                raise Failed("key %r accepted" % bad)
            except ValueError:
                pass

        # a cuckoo filter created at run time
        t.eq(resp(s.port, "CF.RESERVE", "rt", "1000"), "+OK\r\n", "CF.RESERVE")
        t.eq(c.info("rt")["type"], "cuckoo", "runtime filter's type")
        t.eq(c.seen_many(["x", "y"], filter="rt"), [False, False], "recorded")
        t.eq(c.forget_many(["y", "x", "y"], filter="rt"), [True, True, False],
             "forgotten in the runtime filter")


@test
def forget_many_reports_a_lost_connection(t):
    # a server that answers one FORGET and closes: the answers that came
    # are in replies, nothing is sent again
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = []

    def serve():
        conn, _ = srv.accept()
        data = b""
        while data.count(b"\n") < 3:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        got.append(data)
        conn.sendall(b"1\r\n")
        conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    c = seend.Client("127.0.0.1:%d" % port, timeout=10)
    try:
        c.forget_many(["a", "b", "c"])
        raise Failed("no error")
    except seend.ConnectionError as e:
        t.eq(e.replies, [True], "the answer that came")
    th.join(10)
    srv.close()
    t.eq(got, [b"FORGET a\nFORGET b\nFORGET c\n"], "what was sent, once")


# ---- Scrapy ----

@test
def a_later_crawl_fetches_exactly_the_pages_that_failed(t):
    # 5 and 9: HTTP 500 always (retried twice, then given up); 13: 404 (not
    # retried, not accepted); 17: the connection dropped (retried, given
    # up); 33: linked as /r/33, a redirect to /p/33, which answers 500;
    # 21: 410, which HTTPERROR_ALLOWED_CODES accepts; 29: one 500, then
    # fine (the retry succeeds)
    with Server(t, filters=CUCKOO) as s, \
            Site(pages=60, status={5: 500, 9: 500, 13: 404, 21: 410, 33: 500},
                 drop={17}, flaky={29: 1}, redirect_pages={33}) as site:
        failed = {"/p/5", "/p/9", "/p/13", "/p/17", "/r/33", "/p/33"}
        first = crawl(t, "first", [site.url(0)], forget_settings(s))
        st = first.stats
        t.eq(st.get("finish_reason"), "finished", "finish reason")
        t.eq(site.paths_since(0),
             {"/p/%d" % i for i in range(60)} | {"/r/33"}, "first crawl")
        hits = site.page_hits()
        t.eq({i: hits[i] for i in (5, 9, 13, 17, 21, 29, 33)},
             {5: 3, 9: 3, 13: 1, 17: 3, 21: 1, 29: 2, 33: 3},
             "requests per failing page (a retry each time, never a "
             "refetch in the same crawl)")
        t.eq({i: n for i, n in hits.items() if n != 1 and
              i not in (5, 9, 17, 29, 33)}, {}, "the others once")
        t.eq(st.get("retry/max_reached"), 4, "retries spent")
        t.eq(st.get("seend/forgotten"), 6, "keys forgotten")
        t.eq(st.get("seend/forget_errors", 0), 0, "forget errors")
        t.ok("could not forget" not in first.text(), "no forget failed")
        # seend holds every key the crawl recorded but the six
        c = seend.Client(address(s))
        t.eq(c.info("default")["count"], 61 - 6, "keys held")

        # the links of the site (what any crawl finds), as start requests
        # that go through the dupefilter
        links = [site.url(i) for i in range(60) if i != 33] + \
            ["http://127.0.0.1:%d/r/33" % site.port]
        mark = len(site.log)
        second = crawl(t, "second", links, forget_settings(s))
        t.eq(second.stats.get("finish_reason"), "finished", "finish reason")
        t.eq(site.paths_since(mark), failed, "the second crawl fetched")
        t.eq(second.stats.get("seend/forgotten"), 6, "forgotten again")
        t.eq(second.stats.get("dupefilter/filtered"), 60 - 5,
             "the pages that succeeded are seen")

        # the site recovers: a crawl fetches them (and follows their links,
        # all seen); they stay recorded, as every success does
        site.status = {21: 410}
        site.drop = set()
        mark = len(site.log)
        third = crawl(t, "third", links, forget_settings(s))
        t.eq(third.stats.get("finish_reason"), "finished", "finish reason")
        t.eq(site.paths_since(mark), failed, "the third crawl fetched")
        t.eq(third.stats.get("seend/forgotten", 0), 0, "nothing forgotten")
        mark = len(site.log)
        fourth = crawl(t, "fourth", links, forget_settings(s))
        t.eq(fourth.stats.get("finish_reason"), "finished", "finish reason")
        t.eq(site.paths_since(mark), set(), "the fourth crawl fetched")
        t.eq(c.info("default")["count"], 61, "keys held at the end")


@test
def a_bloom_filter_stops_the_crawl_at_its_start(t):
    with Server(t) as s, Site(pages=20) as site:
        c = crawl(t, "bloom", [site.url(0)], forget_settings(s))
        err = c.result.get("error", "")
        t.contains(err, "SEEND_FORGET_FAILED", "error")
        t.contains(err, "'default' (type = bloom)", "error")
        t.contains(c.text(), "SEEND_FORGET_FAILED = True needs a filter that "
                   "can forget keys", "log")
        t.eq(site.page_hits(), {}, "nothing fetched")
        # the same crawl without the setting runs as before
        c = crawl(t, "plain", [site.url(0)], {"SEEND_ADDRESS": address(s)})
        t.eq(c.stats.get("finish_reason"), "finished", "without the setting")
        t.eq(len(site.page_hits()), 20, "pages fetched")


def dupefilter(s, **settings):
    """A DupeFilter of a crawler of this process (no engine: it downloads
    nothing, and the hook is not attached)."""
    from scrapy.utils.test import get_crawler
    from seend.scrapy import DupeFilter
    base = {"DUPEFILTER_CLASS": "seend.scrapy.DupeFilter",
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
            "SEEND_ADDRESS": address(s) if s is not None else "",
            "SEEND_FORGET_FAILED": True}
    base.update(settings)
    crawler = get_crawler(settings_dict=base)
    crawler.stats.open_spider(None)
    return crawler, DupeFilter.from_crawler(crawler)


@test
def the_type_check_looks_at_the_filters_the_keys_may_go_to(t):
    from seend.scrapy import CannotForget

    def refused(df):
        try:
            df.open()
        except CannotForget as e:
            return str(e)
        finally:
            df.close("finished")
        return None

    with Server(t, filters=CUCKOO_AND_BLOOM) as s:
        # without SEEND_FILTER the server may route keys to any filter
        err = refused(dupefilter(s)[1])
        t.ok(err is not None, "a bloom filter among the server's refused")
        t.contains(err, "filter 'plain' (type = bloom)", "error")
        t.contains(err, "SEEND_FILTER", "error says what to do")
        t.ok("'default'" not in err, "the cuckoo filter is not named")
        t.eq(refused(dupefilter(s, SEEND_FILTER="default")[1]), None,
             "a cuckoo SEEND_FILTER")
        err = refused(dupefilter(s, SEEND_FILTER="plain")[1])
        t.contains(err or "", "SEEND_FORGET_FAILED = True needs a filter "
                   "that can forget keys", "error")
        t.contains(err or "", "the filter 'plain' (type = bloom)", "error")
        err = refused(dupefilter(s, SEEND_FILTER="nosuch")[1])
        t.contains(err or "", "SEEND_FORGET_FAILED", "error")
        t.contains(err or "", "no such filter", "error")
        # the setting off: no check
        t.eq(refused(dupefilter(s, SEEND_FILTER="plain",
                                SEEND_FORGET_FAILED=False)[1]), None,
             "without the setting")
    with Server(t, filters=CUCKOO, name="c") as s:
        t.eq(refused(dupefilter(s)[1]), None, "only cuckoo filters")


@test
def a_forget_that_fails_is_logged_and_the_crawl_goes_on(t):
    import logging
    from scrapy import Request

    class Catch(logging.Handler):
        def __init__(self):
            super().__init__()
            self.lines = []

        def emit(self, record):
            self.lines.append(record.getMessage())

    catch = Catch()
    logging.getLogger("seend.scrapy").addHandler(catch)
    try:
        # seend unreachable
        port = free_port()
        crawler, df = dupefilter(None, SEEND_ADDRESS="127.0.0.1:%d" % port,
                                 SEEND_CONNECT_RETRY=0.1)
        req = Request("http://example.com/x")
        df.shared.forget(("k1",), req, "HTTP 500", None)
        t.eq(crawler.stats.get_value("seend/forget_errors"), 1, "counted")
        t.contains(catch.lines[-1], "could not forget <GET http://example.com/x>",
                   "logged")
        t.contains(catch.lines[-1], "HTTP 500", "logged")
        # an ERR answer (a bloom filter)
        with Server(t, filters=CUCKOO_AND_BLOOM) as s:
            crawler, df = dupefilter(s, SEEND_FILTER="plain")
            df.shared.forget(("k1", "k2"), req, "HTTP 404", None)
            t.eq(crawler.stats.get_value("seend/forget_errors"), 1, "counted")
            t.contains(catch.lines[-1], "answered ERR plain cannot forget keys",
                       "logged")
            # and one that works: the keys are answered "seen" by this
            # process from now on, without asking seend
            crawler, df = dupefilter(s)
            c = seend.Client(address(s))
            t.eq(df.request_seen(Request("http://example.com/a")), False, "new")
            keys = Request("http://example.com/a").meta.get("seend_recorded")
            t.eq(keys, None, "a fresh request carries nothing")
            r = Request("http://example.com/b")
            t.eq(df.request_seen(r), False, "new")
            t.eq(len(r.meta["seend_recorded"]), 1, "its key noted")
            # a redirect's copy adds its own key after the original's
            r2 = r.replace(url="http://example.com/c")
            t.eq(df.request_seen(r2), False, "new")
            t.eq(r2.meta["seend_recorded"][0], r.meta["seend_recorded"][0],
                 "the chain")
            t.eq(len(r2.meta["seend_recorded"]), 2, "the chain")
            t.eq(len(r.meta["seend_recorded"]), 1, "the original unchanged")
            before = c.info()["cmd_seen"]
            df.shared.forget(r2.meta["seend_recorded"], r2, "HTTP 500", None)
            t.eq(crawler.stats.get_value("seend/forgotten"), 2, "forgotten")
            t.eq(c.check_many(list(r2.meta["seend_recorded"])), [False, False],
                 "no longer held")
            t.eq(df.request_seen(Request("http://example.com/c")), True,
                 "this process does not fetch it again")
            t.eq(c.info()["cmd_seen"], before, "without asking seend")
            t.eq(crawler.stats.get_value("seend/forgotten_skipped"), 1, "counted")
    finally:
        logging.getLogger("seend.scrapy").removeHandler(catch)


if __name__ == "__main__":
    run()
