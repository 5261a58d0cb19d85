"""
Real Scrapy crawls (Debian's python3-scrapy, in their own processes) of a
real local website, deduplicated by a real seend: every page once, across
processes, restarts of the crawl and restarts of seend (SIGTERM, and
SIGKILL with the journal); nothing recorded
for what OffsiteMiddleware drops; fail-closed and fail-open.
"""
import json
import os
import signal
import subprocess
import time
import weakref

from pyseend import HERE, SYSTEM_PYTHON, Failed, Server, address, free_port, \
    run, test
from website import Site

import seend


class Crawl:
    """A crawl.py process; wait() returns its result (stats, error)."""

    def __init__(self, t, name, starts, settings):
        self.t = t
        self.out = t.path(name + ".json")
        self.log = t.path(name + ".log")
        args = [SYSTEM_PYTHON, os.path.join(HERE, "crawl.py"), self.out]
        args += starts
        for k, v in settings.items():
            args += ["-s", "%s=%s" % (k, json.dumps(v))]
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen(args, stdout=logf, stderr=logf,
                                         env=os.environ)

    def wait(self, timeout=90):
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


def seend_settings(s, **extra):
    d = {"SEEND_ADDRESS": address(s)}
    d.update(extra)
    return d


def every_page_once(t, site, what):
    hits = site.page_hits()
    twice = {p: n for p, n in hits.items() if n > 1}
    t.eq(twice, {}, "%s: pages fetched more than once" % what)
    t.eq(sorted(hits), list(range(site.pages)), "%s: pages fetched" % what)


@test
def two_processes_sharing_one_seend_fetch_every_page_once(t):
    with Server(t) as s, Site(pages=300) as site:
        # one over TCP, one over the Unix socket; different start pages;
        # the site answers once both have asked for theirs
        site.hold_until("/p/0", "/p/150")
        a = Crawl(t, "a", [site.url(0)], seend_settings(s))
        b = Crawl(t, "b", [site.url(150)],
                  seend_settings(s, SEEND_ADDRESS=address(s, unix=True)))
        a, b = a.wait(), b.wait()
        every_page_once(t, site, "two processes")
        for c in (a, b):
            t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
            # how the 300 pages split depends on scheduling (one process
            # got 7 under ASan on a loaded machine): each took part
            t.ok(c.stats.get("response_received_count", 0) >= 1,
                 "both crawled a share: %s" % c.stats.get("response_received_count"))
        t.eq(a.stats["response_received_count"] +
             b.stats["response_received_count"], 300, "responses in total")
        # links came from the middleware's batches, not one trip each
        batched = sum(c.stats.get("seend/batched", 0) for c in (a, b))
        direct = sum(c.stats.get("seend/direct", 0) for c in (a, b))
        t.ok(batched > 10 * direct, "batched %d, direct %d" % (batched,
                                                                direct))


@test
def a_stopped_and_resumed_crawl_fetches_nothing_twice(t):
    with Server(t) as s, Site(pages=300) as site:
        jobdir = t.path("job")
        first = crawl(t, "first", [site.url(0)],
                      seend_settings(s, JOBDIR=jobdir, CLOSESPIDER_PAGECOUNT=60))
        t.eq(first.stats.get("finish_reason"), "closespider_pagecount", "stopped")
        done = len(site.page_hits())
        t.ok(done < 200, "the first run stopped early (%d pages)" % done)
        second = crawl(t, "second", [site.url(0)], seend_settings(s, JOBDIR=jobdir))
        t.eq(second.stats.get("finish_reason"), "finished", "resumed run")
        every_page_once(t, site, "stop and resume")


def settle(s, quiet=1.0, limit=30.0):
    """Waits until seend has answered no key for `quiet` seconds."""
    c = s.client()
    try:
        def answered():
            info = c.info()
            return int(info["keys_new"]) + int(info["keys_seen"])
        last, since = answered(), time.monotonic()
        deadline = since + limit
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = answered()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
    finally:
        c.close()


def restarted_mid_crawl(t, sig):
    with Server(t) as s, Site(pages=200) as site:
        restarted = []

        def restart():
            # the crawler is idle on this one download (one at a time):
            # seend is stopped (SIGTERM: saves; SIGKILL: its journal keeps
            # every key answered new) and started again. Idle once the
            # previous response's batch is answered: Scrapy starts this
            # download before it parses that response, which on a loaded
            # machine can take longer than any fixed pause
            settle(s)
            if sig == signal.SIGKILL:
                s.kill9()
                restarted.append("killed")
            else:
                restarted.append(s.stop(sig))
            s.start()

        site.hooks[100] = restart
        c = crawl(t, "c", [site.url(0)],
                  seend_settings(s, CONCURRENT_REQUESTS=1,
                                 CONCURRENT_REQUESTS_PER_DOMAIN=1))
        t.eq(restarted, ["killed" if sig == signal.SIGKILL else 0],
             "seend was restarted mid-crawl")
        t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
        every_page_once(t, site, "seend restart")
        return s.read_log()


@test
def a_seend_restarted_mid_crawl_forgets_nothing(t):
    log = restarted_mid_crawl(t, signal.SIGTERM)
    t.contains(log, "SIGTERM", "seend log")


@test
def a_seend_killed_mid_crawl_forgets_nothing_thanks_to_its_journal(t):
    log = restarted_mid_crawl(t, signal.SIGKILL)
    t.contains(log, "journal: replayed", "the restart replayed the journal")


def offsite_recorded(t, order):
    """Crawls with the middleware at order; how many offsite URLs seend holds."""
    with Server(t, name="o%d" % order) as s, Site(pages=40) as site:
        c = crawl(t, "off%d" % order, [site.url(0)],
                  seend_settings(s, SEEND_KEY="url",
                                 SPIDER_MIDDLEWARES={"seend.scrapy.SeenMiddleware": order}))
        t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
        t.ok(c.stats.get("offsite/filtered", 0) >= 40, "offsite links dropped")
        every_page_once(t, site, "offsite crawl")
        cl = seend.Client(address(s))
        t.eq(cl.check(site.url(7)), True, "pages are recorded by URL")
        recorded = sum(cl.check_many([site.offsite_url(i) for i in range(40)]))
        t.eq(site.hits.get("/off/1", 0), 0, "offsite never fetched")
        return recorded


@test
def requests_dropped_as_offsite_are_never_recorded(t):
    t.eq(offsite_recorded(t, 100), 0, "offsite URLs recorded at order 100")
    # the same crawl with the middleware on the spider's side of
    # OffsiteMiddleware records them: the order is what protects them
    t.eq(offsite_recorded(t, 600), 40, "offsite URLs recorded at order 600")


@test
def an_unreachable_seend_stops_the_crawl_by_default(t):
    port = free_port()
    with Site(pages=20) as site:
        c = crawl(t, "closed", [site.url(0)],
                  {"SEEND_ADDRESS": "127.0.0.1:%d" % port,
                   "SEEND_CONNECT_RETRY": 0.2})
        t.contains(c.result.get("error", ""), "127.0.0.1:%d" % port, "error")
        t.contains(c.text(), "seend at 127.0.0.1:%d cannot be reached" % port, "log")
        t.eq(site.page_hits(), {}, "nothing fetched")


@test
def a_seend_lost_mid_crawl_stops_it_with_an_error(t):
    with Server(t) as s, Site(pages=100) as site:
        def stop():
            time.sleep(0.3)
            s.stop(signal.SIGTERM)

        site.hooks[30] = stop
        c = crawl(t, "lost", [site.url(0)],
                  seend_settings(s, CONCURRENT_REQUESTS=1,
                                 CONCURRENT_REQUESTS_PER_DOMAIN=1,
                                 SEEND_CONNECT_RETRY=0.3))
        t.eq(c.stats.get("finish_reason"), "seend_unavailable", "finish reason")
        t.contains(c.text(), "seend at %s did not answer" % address(s), "log")
        hits = site.page_hits()
        t.ok(len(hits) < 100, "the crawl stopped (%d pages)" % len(hits))
        t.eq({p: n for p, n in hits.items() if n > 1}, {}, "nothing twice")
        t.eq(c.stats.get("seend/fail_open", 0), 0, "no request guessed new")


@test
def redirected_requests_get_their_own_round_trip(t):
    with Server(t) as s, Site(pages=80, redirects=True) as site:
        c = crawl(t, "redirects", [site.url(0)], seend_settings(s))
        t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
        every_page_once(t, site, "with redirects")
        with site.lock:
            r = {p: n for p, n in site.hits.items() if p.startswith("/r/")}
        t.eq(sorted(r.values()), [1] * 40, "each redirect followed once")
        # the redirect copies the request's meta: its target is asked
        # about directly, not answered from the link's mark
        t.ok(c.stats.get("seend/direct", 0) >= 40,
             "direct round trips: %s" % c.stats.get("seend/direct"))


def in_process(s, **settings):
    """A crawler of this process with seend's DupeFilter and middleware."""
    from scrapy.utils.test import get_crawler
    from seend.scrapy import DupeFilter, SeenMiddleware
    base = {"DUPEFILTER_CLASS": "seend.scrapy.DupeFilter",
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
            "SEEND_ADDRESS": address(s)}
    base.update(settings)
    crawler = get_crawler(settings_dict=base)
    crawler.stats.open_spider(None)
    return crawler, DupeFilter.from_crawler(crawler), \
        SeenMiddleware.from_crawler(crawler)


@test
def marks_answer_only_their_own_request(t):
    from scrapy import Request
    with Server(t) as s:
        crawler, df, mw = in_process(s, SEEND_KEY="url")
        cl = seend.Client(address(s))
        reqs = [Request("http://a.example/%d" % (i % 3)) for i in range(5)]
        reqs.append(Request("http://a.example/x", dont_filter=True))
        item = {"an": "item"}
        before = cl.info()["cmd_seen"]
        out = list(mw.process_spider_output(None, reqs + [item], None))
        t.eq(out, reqs + [item], "everything passed on, in order")
        t.eq(cl.info()["cmd_seen"] - before, 5, "one SEEN per request")
        t.eq([r.meta.get("seend_seen")[:2] for r in reqs[:5]],
             [("http://a.example/0", False), ("http://a.example/1", False),
              ("http://a.example/2", False), ("http://a.example/0", True),
              ("http://a.example/1", True)], "marks")
        t.ok(all(r.meta["seend_seen"][2]() is r for r in reqs[:5]),
             "each mark knows its request")
        t.ok("seend_seen" not in reqs[5].meta, "dont_filter not asked about")
        t.eq([r.dont_filter for r in reqs], [False] * 5 + [True], "dont_filter")
        t.eq(crawler.stats.get_value("seend/round_trips"), 1, "one round trip")
        # the DupeFilter answers from the marks, sending nothing
        before = cl.info()["cmd_seen"]
        t.eq([df.request_seen(r) for r in reqs[:5]],
             [False, False, False, True, True], "answers from marks")
        t.eq(cl.info()["cmd_seen"], before, "nothing sent")
        t.ok("seend_seen" not in reqs[0].meta, "a mark is used once")
        # a copy for another URL (what a redirect does) keeps the meta but
        # not the answer: asked directly
        other = Request("http://a.example/new", meta={"seend_seen": (
            "http://a.example/0", True, weakref.ref(reqs[0]))})
        t.eq(df.request_seen(other), False, "mark for another key ignored")
        # a copy carrying the mark of its original (a redirect copies
        # meta): the mark's request is not the copy, its key decides
        orig = Request("http://a.example/0")
        out = list(mw.process_spider_output(None, [orig], None))
        copy = orig.replace(url="http://a.example/copy")
        t.eq(copy.meta["seend_seen"][2]() is orig, True, "copy has the mark")
        t.eq(df.request_seen(copy), False, "copy for another key asked")
        t.eq(df.request_seen(orig), True, "the original from its mark")
        t.eq(cl.check("http://a.example/new"), True, "recorded directly")
        # unmarked, seen before: True, from seend
        t.eq(df.request_seen(Request("http://a.example/new")), True, "direct")
        t.eq(crawler.stats.get_value("seend/direct"), 3, "direct trips")
        # the fingerprint key is the hex of Scrapy's fingerprint
        crawler2, df2, _ = in_process(s)
        r = Request("http://b.example/")
        t.eq(df2.request_seen(r), False, "fingerprint key new")
        fp = crawler2.request_fingerprinter.fingerprint(r).hex()
        t.eq(cl.check(fp), True, "the fingerprint's hex was recorded")


@test
def the_collector_pauses_while_a_batch_is_in_flight(t):
    import gc
    from scrapy import Request
    from seend.scrapy import _GCPause
    t.ok(gc.isenabled(), "the collector runs to begin with")
    with Server(t) as s:
        _, _, mw = in_process(s, SEEND_KEY="url")
        reqs = [Request("http://g.example/%d" % i) for i in range(3)]
        it = mw.process_spider_output(None, reqs, None)
        t.eq(next(it), reqs[0], "first request")
        t.ok(not gc.isenabled(), "paused while the batch is consumed")
        t.eq(list(it), reqs[1:], "the rest")
        t.ok(gc.isenabled(), "running again once it is consumed")
        # two outputs consumed in turns: running again after the last
        a = mw.process_spider_output(None, [Request("http://g.example/a")], None)
        b = mw.process_spider_output(None, [Request("http://g.example/b")], None)
        next(a), next(b)
        list(a)
        t.ok(not gc.isenabled(), "still paused: b is in flight")
        list(b)
        t.ok(gc.isenabled(), "running after both")
        # a consumer that gives up: closing the output ends the pause
        c = mw.process_spider_output(None, reqs, None)
        next(c)
        c.close()
        t.ok(gc.isenabled(), "running after close()")
        # one never closed is ended by the next batch past the limit, which
        # runs unpaused; the stale one leaves nothing when it ends
        d = mw.process_spider_output(None, reqs, None)
        next(d)
        _GCPause.since -= _GCPause.LIMIT + 1
        e = mw.process_spider_output(None, reqs, None)
        next(e)
        t.ok(gc.isenabled(), "the batch past the limit runs unpaused")
        f = mw.process_spider_output(None, reqs, None)
        next(f)
        t.ok(not gc.isenabled(), "the next one pauses again")
        list(d)
        t.ok(not gc.isenabled(), "the stale one's end does not end it")
        list(e), list(f)
        t.ok(gc.isenabled(), "a stale pause does not outlive the limit")
        t.eq(_GCPause.depth, 0, "no pause left")
        # a collector the application disabled stays disabled
        gc.disable()
        list(mw.process_spider_output(None, reqs, None))
        t.ok(not gc.isenabled(), "left disabled")
        gc.enable()
        # SEEND_GC_PAUSE = False: left alone
        _, _, mw2 = in_process(s, SEEND_KEY="url", SEEND_GC_PAUSE=False)
        it = mw2.process_spider_output(None, reqs, None)
        next(it)
        t.ok(gc.isenabled(), "not paused with SEEND_GC_PAUSE off")
        list(it)


@test
def the_middleware_refuses_to_run_without_the_dupefilter(t):
    from scrapy.exceptions import NotConfigured
    with Server(t) as s:
        try:
            in_process(s, DUPEFILTER_CLASS="scrapy.dupefilters.RFPDupeFilter")
            raise Failed("SeenMiddleware accepted RFPDupeFilter")
        except NotConfigured as e:
            t.contains(str(e), "seend.scrapy.DupeFilter")


@test
def the_asyncio_reactor_works_too(t):
    with Server(t) as s, Site(pages=60) as site:
        c = crawl(t, "asyncio", [site.url(0)], seend_settings(
            s, TWISTED_REACTOR="twisted.internet.asyncioreactor."
                               "AsyncioSelectorReactor"))
        t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
        t.eq(c.stats.get("log_count/ERROR", 0), 0, "errors logged")
        t.ok(c.stats.get("seend/batched", 0) > 100, "batched")
        every_page_once(t, site, "asyncio reactor")


@test
def dupefilter_debug_logs_every_duplicate(t):
    with Server(t) as s, Site(pages=20) as site:
        c = crawl(t, "debug", [site.url(0)],
                  seend_settings(s, DUPEFILTER_DEBUG=True, LOG_LEVEL="DEBUG"))
        n = c.stats.get("dupefilter/filtered", 0)
        t.ok(n > 20, "duplicates filtered: %d" % n)
        t.eq(c.text().count("Filtered duplicate request: <GET "), n,
             "one log line per duplicate")
        t.contains(c.text(), "(referer: http://127.0.0.1:%d/p/" % site.port,
                   "with the referer")


@test
def an_err_reply_stops_the_crawl_too(t):
    with Server(t) as s, Site(pages=20) as site:
        c = crawl(t, "err", [site.url(0)],
                  seend_settings(s, SEEND_FILTER="nosuchfilter"))
        t.eq(c.stats.get("finish_reason"), "seend_unavailable", "finish reason")
        t.contains(c.text(), "answered ERR no such filter 'nosuchfilter'", "log")
        t.eq(site.page_hits(), {}, "nothing fetched")
        t.eq(c.stats.get("dupefilter/filtered", 0), 0, "nothing called seen")


@test
def fail_open_crawls_on_and_counts_it(t):
    port = free_port()
    with Site(pages=15, fanout=2, repeat=1, offsite=False) as site:
        c = crawl(t, "open", [site.url(0)],
                  {"SEEND_ADDRESS": "127.0.0.1:%d" % port,
                   "SEEND_FAIL_OPEN": True, "SEEND_CONNECT_RETRY": 0.1,
                   "DEPTH_LIMIT": 3})
        t.eq(c.stats.get("finish_reason"), "finished", "finish reason")
        t.ok(c.stats.get("seend/fail_open", 0) > 15,
             "counted: %s" % c.stats.get("seend/fail_open"))
        t.eq(c.stats.get("dupefilter/filtered", 0), 0, "nothing called seen")
        t.ok(sum(site.page_hits().values()) > site.pages, "duplicates fetched")
        t.contains(c.text(), "SEEND_FAIL_OPEN", "log says why")


@test
def the_example_project_runs_and_a_second_run_fetches_nothing(t):
    project = os.path.join(os.path.dirname(os.path.dirname(HERE)),
                           "examples", "scrapy")
    with Server(t) as s, Site(pages=30) as site:
        for run_no in (1, 2):
            log = t.path("example%d.log" % run_no)
            with open(log, "w") as logf:
                rc = subprocess.call(
                    [SYSTEM_PYTHON, "-m", "scrapy", "crawl", "site",
                     "-a", "start=" + site.url(0), "-s", "ROBOTSTXT_OBEY=False",
                     "-s", "SEEND_ADDRESS=" + address(s)],
                    cwd=project, stdout=logf, stderr=logf, timeout=90)
            with open(log) as f:
                text = f.read()
            t.eq(rc, 0, "scrapy crawl exit status; log:\n" + text[-2000:])
            t.contains(text, "'finish_reason': 'finished'", "finished")
            # DUPEFILTER_DEBUG off: the first duplicate is logged, no more
            t.eq(text.count("Filtered duplicate request"), 1, "duplicates logged")
            t.contains(text, "no more duplicates will be shown", "log")
        every_page_once(t, site, "example project, two runs")
        t.contains(text, "'dupefilter/filtered': 1,", "second run: start page seen")


if __name__ == "__main__":
    run()
