"""
seend.scrapy.DupeFilter as the dupefilter of scrapy-redis's scheduler: real
Scrapy crawls (Debian's python3-scrapy, in their own processes) of a real
local website, their request queue in a real redis-server, their seen-set
in a real seend.

scrapy-redis is not packaged by Debian, so ``Scheduler`` below is a small
scheduler that drives the dupefilter and the queue exactly as scrapy-redis
0.9.1's does (src/scrapy_redis/scheduler.py, queue.py, dupefilter.py at tag
v0.9.1; the lines are named where they are followed): the dupefilter built
with ``from_spider``, ``request_seen`` then ``log`` for a duplicate,
``clear`` at close unless SCHEDULER_PERSIST and at the start with
SCHEDULER_FLUSH_ON_START, ``open``/``close`` never called.  Its queue is
scrapy-redis's FifoQueue: LPUSH of the pickled request dict, RPOP.

This file is also the crawls' module: crawl.py (run from this directory)
imports ``test_scrapy_redis.Scheduler`` by its SCHEDULER setting.
"""
import hashlib
import json
import logging
import os
import pickle
import time

from pyseend import HERE, SYSTEM_PYTHON, Failed, Server, address, run, test
from seendtest import RedisServer, system_module
from website import Site

import seend

SPIDER = "site"                         # crawl.py's spider
FILTER = "%(spider)s:dupefilter"        # scrapy-redis's own key
QUEUE_KEY = "%(spider)s:requests"       # scrapy-redis's default queue key


class FifoQueue:
    """scrapy-redis 0.9.1's queue.FifoQueue (queue.py lines 9-95) with its
    default serializer, picklecompat (pickle, protocol -1)."""

    def __init__(self, server, spider, key):
        self.server = server
        self.spider = spider
        self.key = key % {"spider": spider.name}            # queue.py l. 42

    def _encode_request(self, request):                     # l. 45-51
        return pickle.dumps(request.to_dict(spider=self.spider), protocol=-1)

    def _decode_request(self, encoded):                     # l. 53-56
        from scrapy.utils.request import request_from_dict
        return request_from_dict(pickle.loads(encoded), spider=self.spider)

    def __len__(self):                                      # l. 78-80
        return self.server.llen(self.key)

    def push(self, request):                                # l. 82-84
        self.server.lpush(self.key, self._encode_request(request))

    def pop(self, timeout=0):                               # l. 86-95
        if timeout > 0:
            data = self.server.brpop(self.key, timeout)
            if isinstance(data, tuple):
                data = data[1]
        else:
            data = self.server.rpop(self.key)
        if data:
            return self._decode_request(data)
        return None

    def clear(self):                                        # l. 70-72
        self.server.delete(self.key)


class Scheduler:
    """
    scrapy-redis 0.9.1's scheduler.Scheduler, as far as the dupefilter and
    a FIFO queue go (no serializer or queue class settings).
    """

    def __init__(self, server, persist, flush_on_start, dupefilter_cls,
                 idle_before_close, dupefilter=None):
        self.server = server
        self.persist = persist
        self.flush_on_start = flush_on_start
        self.dupefilter_cls = dupefilter_cls
        self.df = dupefilter
        self.idle_before_close = idle_before_close
        self.stats = None

    def __len__(self):                                  # scheduler.py l. 85-86
        return len(self.queue)

    @classmethod
    def from_settings(cls, settings):                   # l. 88-124
        from scrapy.utils.misc import load_object
        redis = system_module("redis")
        kwargs = {
            "persist": settings.getbool("SCHEDULER_PERSIST"),
            "flush_on_start": settings.getbool("SCHEDULER_FLUSH_ON_START"),
            "idle_before_close": settings.getint("SCHEDULER_IDLE_BEFORE_CLOSE"),
            # l. 104: "We use the default setting name to keep compatibility"
            "dupefilter_cls": settings.get("DUPEFILTER_CLASS"),
        }
        # l. 112-114: from_settings only for a class without from_spider
        dupefilter_cls = load_object(kwargs["dupefilter_cls"])
        if not hasattr(dupefilter_cls, "from_spider"):
            kwargs["dupefilter"] = dupefilter_cls.from_settings(settings)
        # l. 120-122 (connection.get_redis_from_settings: REDIS_URL)
        server = redis.StrictRedis.from_url(settings.get("REDIS_URL"))
        server.ping()
        return cls(server=server, **kwargs)

    @classmethod
    def from_crawler(cls, crawler):                     # l. 126-131
        instance = cls.from_settings(crawler.settings)
        instance.stats = crawler.stats
        return instance

    def open(self, spider):                             # l. 133-155
        from scrapy.utils.misc import load_object
        self.spider = spider
        self.queue = FifoQueue(self.server, spider, QUEUE_KEY)
        if not self.df:
            self.df = load_object(self.dupefilter_cls).from_spider(spider)
        if self.flush_on_start:
            self.flush()
        if len(self.queue):
            spider.log("Resuming crawl (%d requests scheduled)" % len(self.queue))

    def close(self, reason):                            # l. 157-159
        if not self.persist:
            self.flush()

    def flush(self):                                    # l. 161-163
        self.df.clear()
        self.queue.clear()

    def enqueue_request(self, request):                 # l. 165-172
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        if self.stats:
            self.stats.inc_value("scheduler/enqueued/redis", spider=self.spider)
        self.queue.push(request)
        return True

    def next_request(self):                             # l. 174-179
        request = self.queue.pop(self.idle_before_close)
        if request and self.stats:
            self.stats.inc_value("scheduler/dequeued/redis", spider=self.spider)
        return request

    def has_pending_requests(self):                     # l. 181-182
        return len(self) > 0


# ---- the crawls ----

class Crawl:
    """A crawl.py process with scrapy-redis's scheduler; wait() returns it
    with its result (stats, error) and log."""

    def __init__(self, t, name, starts, settings):
        import subprocess
        self.t = t
        self.out = t.path(name + ".json")
        self.log = t.path(name + ".log")
        args = [SYSTEM_PYTHON, os.path.join(HERE, "crawl.py"), self.out]
        args += starts
        for k, v in settings.items():
            args += ["-s", "%s=%s" % (k, json.dumps(v))]
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen(args, stdout=logf, stderr=logf,
                                         env=os.environ, cwd=HERE)

    def wait(self, timeout=120):
        import subprocess
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

    def finished(self):
        self.t.eq(self.stats.get("finish_reason"), "finished",
                  "finish reason; log:\n" + self.text()[-3000:])
        self.t.eq(self.stats.get("log_count/ERROR", 0), 0,
                  "errors logged; log:\n" + self.text()[-3000:])
        return self


def settings(s, r, **extra):
    d = {"SCHEDULER": "test_scrapy_redis.Scheduler",
         "REDIS_URL": "redis://127.0.0.1:%d/0" % r.port,
         "SEEND_ADDRESS": address(s),
         "SEEND_FILTER": FILTER}
    d.update(extra)
    return d


def crawl(t, name, starts, settings):
    return Crawl(t, name, starts, settings).wait().finished()


def count(s, name):
    """The filter's count in seend (None if it has no such filter)."""
    c = seend.Client(address(s))
    try:
        return c.filters().get(name, {}).get("count")
    finally:
        c.close()


def redis_client(r):
    return system_module("redis").StrictRedis(host="127.0.0.1", port=r.port)


@test
def two_processes_share_the_queue_and_the_seen_set_and_persist(t):
    s = Server(t).start()
    r = RedisServer(t)
    with Site(pages=200) as site:
        t.eq(count(s, "site:dupefilter"), None, "no filter before the crawl")
        # both start pages are asked for before any is answered, so that
        # both processes are at work at once
        site.hold_until("/p/0", "/p/100")
        conf = settings(s, r, SCHEDULER_PERSIST=True)
        a = Crawl(t, "a", [site.url(0)], conf)
        b = Crawl(t, "b", [site.url(100)],
                  dict(conf, SEEND_ADDRESS=address(s, unix=True)))
        a, b = a.wait().finished(), b.wait().finished()
        hits = site.page_hits()
        t.eq({p: n for p, n in hits.items() if n > 1}, {},
             "pages fetched more than once")
        t.eq(sorted(hits), list(range(200)), "pages fetched")
        t.eq(a.stats.get("response_received_count", 0) +
             b.stats.get("response_received_count", 0), 200,
             "responses of both together")
        # both processes went through the shared queue
        for c in (a, b):
            t.eq(c.stats.get("scheduler/enqueued/redis", 0) > 0, True,
                 "enqueued in Redis")
        t.eq(a.stats.get("scheduler/dequeued/redis", 0) +
             b.stats.get("scheduler/dequeued/redis", 0), 200,
             "every page taken from the Redis queue once")
        # seend made the spider's filter at first use; one key per page
        t.eq(count(s, "site:dupefilter"), 200, "keys in site:dupefilter")
        t.eq(redis_client(r).llen("site:requests"), 0, "queue drained")
        t.ok("Emptied seend filter" not in a.text() + b.text(),
             "SCHEDULER_PERSIST: nothing emptied")

        # a second run, persisting: its start page is seen, nothing fetched
        again = crawl(t, "again", [site.url(0), site.url(50)], conf)
        t.eq(site.page_hits(), hits, "the second run fetched nothing")
        t.eq(again.stats.get("dupefilter/filtered"), 2, "start pages seen")
        t.eq(again.stats.get("response_received_count", 0), 0, "responses")

        # SCHEDULER_FLUSH_ON_START: emptied at the start, all fetched again
        flush = crawl(t, "flush", [site.url(0)],
                      dict(conf, SCHEDULER_FLUSH_ON_START=True))
        t.contains(flush.text(), "Emptied seend filter 'site:dupefilter'",
                   "log of the flush")
        t.eq(site.page_hits(), {p: 2 for p in range(200)},
             "every page fetched once more after the flush")
        t.eq(count(s, "site:dupefilter"), 200, "keys after the flushed run")


@test
def without_persist_the_filter_is_emptied_at_close(t):
    # one process: with SCHEDULER_PERSIST off, scrapy-redis's scheduler
    # flushes the queue and the seen-set when its process closes, so a
    # second process still at work would fetch pages again (with Redis as
    # with seend): shared crawls persist
    s = Server(t).start()
    r = RedisServer(t)
    with Site(pages=60) as site:
        conf = settings(s, r, SEEND_FILTER="crawl-%(spider)s")
        first = crawl(t, "first", [site.url(0)], conf)
        t.eq(site.page_hits(), {p: 1 for p in range(60)}, "first run")
        t.contains(first.text(), "Emptied seend filter 'crawl-site'", "log")
        # RESET: the filter stays, empty
        t.eq(count(s, "crawl-site"), 0, "keys left after close")
        t.eq(redis_client(r).exists("site:requests"), 0, "queue cleared")
        crawl(t, "second", [site.url(0)], conf)
        t.eq(site.page_hits(), {p: 2 for p in range(60)},
             "the second run fetched every page again, once")


@test
def the_scheduler_api_in_process(t):
    """The calls scrapy-redis's scheduler makes, in this process: what
    each one sends to seend and to Redis, and the warning without
    SEEND_FILTER."""
    from scrapy import Request, Spider
    from scrapy.utils.test import get_crawler
    from seend.scrapy import DupeFilter

    s = Server(t).start()
    r = RedisServer(t)
    red = redis_client(r)
    cl = seend.Client(address(s))

    def open_scheduler(name, **extra):
        class S(Spider):
            pass
        S.name = name
        crawler = get_crawler(S, settings_dict=dict(
            settings(s, r, REQUEST_FINGERPRINTER_IMPLEMENTATION="2.7"),
            DUPEFILTER_CLASS="seend.scrapy.DupeFilter", **extra))
        crawler.spider = spider = crawler._create_spider()
        crawler.stats.open_spider(spider)
        sched = Scheduler.from_crawler(crawler)
        t.eq(sched.df, None, "from_spider is used: no dupefilter yet")
        sched.open(spider)
        t.ok(isinstance(sched.df, DupeFilter), "the dupefilter is seend's")
        t.eq(sched.df.shared.client._sock, None, "from_spider connects nowhere")
        t.eq("%s:dupefilter" % name in cl.filters(), False, "no filter yet")
        return crawler, spider, sched

    crawler, spider, sched = open_scheduler("alpha")
    reqs = [Request("http://x.example/%d" % (i % 3)) for i in range(5)]
    t.eq([sched.enqueue_request(q) for q in reqs],
         [True, True, True, False, False], "enqueued")
    t.eq(crawler.stats.get_value("dupefilter/filtered"), 2, "log() counted")
    fp = crawler.request_fingerprinter.fingerprint(reqs[0]).hex()
    t.eq(cl.check(fp, filter="alpha:dupefilter"), True,
         "the fingerprint's hex in alpha:dupefilter")
    t.eq(red.llen("alpha:requests"), 3, "queue length in Redis")
    t.eq(sched.next_request().url, "http://x.example/0", "FIFO")
    t.eq(cl.filters()["alpha:dupefilter"]["count"], 3, "keys recorded")
    sched.close("finished")          # SCHEDULER_PERSIST off: flush
    t.eq(cl.filters()["alpha:dupefilter"]["count"], 0, "emptied at close")
    t.eq(red.exists("alpha:requests"), 0, "queue cleared")

    # no SEEND_FILTER: clear() leaves the routed filters alone, says so once
    cl.seen("http://routed.example/")
    crawler, spider, sched = open_scheduler("beta", SEEND_FILTER="")
    t.eq(sched.enqueue_request(Request("http://y.example/")), True, "new")
    records = []

    class Catch(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    h = Catch(logging.WARNING)
    logging.getLogger("seend.scrapy").addHandler(h)
    try:
        sched.close("finished")
        sched.df.clear()
    finally:
        logging.getLogger("seend.scrapy").removeHandler(h)
    t.eq(len(records), 1, "one warning for two clear() calls: %r" % records)
    t.contains(records[0], "SEEND_FILTER is not set", "why")
    t.eq(cl.check("http://routed.example/"), True, "the routed filter kept")
    t.eq(cl.filters()["default"]["count"], 2, "keys kept in default")

    # from_settings: the fingerprinter the settings make, no spider name
    from scrapy.settings import Settings
    st = Settings(dict(settings(s, r), SEEND_FILTER="made-here",
                       REQUEST_FINGERPRINTER_IMPLEMENTATION="2.7"))
    df = DupeFilter.from_settings(st)
    q = Request("http://z.example/")
    t.eq(df.request_seen(q), False, "new")
    t.eq(df.request_seen(q), True, "seen")
    from scrapy.utils.request import fingerprint
    t.eq(cl.check(fingerprint(q).hex(), filter="made-here"), True,
         "keyed as a crawler's fingerprinter keys it")
    df.clear()
    t.eq(cl.filters()["made-here"]["count"], 0, "cleared")
    try:
        DupeFilter.from_settings(Settings(dict(
            settings(s, r), REQUEST_FINGERPRINTER_IMPLEMENTATION="2.7")))
        raise Failed("from_settings took %(spider)s without a spider")
    except ValueError as e:
        t.contains(str(e), "%(spider)s", "error")
    cl.close()


@test
def a_missing_filter_is_made_unless_create_filters_is_off(t):
    from scrapy import Request
    from scrapy.settings import Settings
    from seend.scrapy import DupeFilter
    s = Server(t, server_extra="create_filters = off").start()
    st = Settings({"SEEND_ADDRESS": address(s), "SEEND_FILTER": "nope",
                   "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"})
    df = DupeFilter.from_settings(st)
    try:
        df.request_seen(Request("http://a.example/"))
        raise Failed("a missing filter was taken with create_filters off")
    except seend.ConnectionError as e:
        t.contains(str(e), "no such filter 'nope' (create_filters is off)",
                   "error")
    df.clear()                       # nothing to empty: no error


@test
def scrapy_redis_rfpdupefilter_standalone_against_seend(t):
    # scrapy-redis 0.9.1's own RFPDupeFilter with REDIS_URL at seend, as
    # Scrapy's scheduler uses it (dupefilter.py): from_settings' one-time
    # key (l. 68, defaults.DUPEFILTER_KEY "dupefilter:%(timestamp)s"),
    # request_seen's SADD (l. 100-103), its fingerprint (l. 117-123),
    # close() -> clear()'s DEL (l. 136-148)
    redis = system_module("redis")
    s = Server(t).start()
    server = redis.StrictRedis.from_url("redis://127.0.0.1:%d/0" % s.port)
    key = "dupefilter:%s" % int(time.time())

    def request_fingerprint(method, url, body=b""):
        from w3lib.url import canonicalize_url
        data = {"method": method, "url": canonicalize_url(url),
                "body": body.hex()}
        return hashlib.sha1(json.dumps(data, sort_keys=True).encode()
                            ).hexdigest()

    def request_seen(fp):
        return server.sadd(key, fp) == 0

    a = request_fingerprint("GET", "http://a.example/?b=2&a=1")
    b = request_fingerprint("GET", "http://a.example/?a=1&b=2")
    c = request_fingerprint("POST", "http://a.example/", b"x")
    t.eq(server.sadd(key, a), 1, "SADD of a new fingerprint")
    t.eq(server.sadd(key, b), 0, "SADD of the same (canonical URL)")
    t.eq([request_seen(c), request_seen(c)], [False, True], "request_seen")
    t.eq(server.scard(key), 2, "SCARD")
    t.eq(server.delete(key), 1, "DEL at close")
    t.eq(server.exists(key), 0, "gone")
    t.eq(key in seend.Client(address(s)).filters(), False, "not in FILTERS")
    t.eq(server.sadd(key, a), 1, "new again after DEL")
    t.eq(server.delete(key), 1, "DEL")


if __name__ == "__main__":
    run()
