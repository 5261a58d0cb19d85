"""
seend.scrapy - share Scrapy's duplicate filter between processes through seend.

In a project's settings.py:

    DUPEFILTER_CLASS = "seend.scrapy.DupeFilter"
    SPIDER_MIDDLEWARES = {"seend.scrapy.SeenMiddleware": 100}
    SEEND_ADDRESS = "127.0.0.1:6874"

``DupeFilter`` asks seend ``SEEN <key>`` for every request the scheduler
gets (unless ``dont_filter``).  ``SeenMiddleware`` makes that cheap: for
each response it asks about all the requests the callback produced in one
pipelined round trip and marks each request with its answer in
``request.meta``; the DupeFilter then answers marked requests from the mark
and only the others (start requests, redirects, retries, requests made by
downloader middlewares) cost a round trip each.

The middleware must run on the engine's side of OffsiteMiddleware (order
500): Scrapy calls ``process_spider_output`` from the highest order number
to the lowest, so at 100 it sees only what OffsiteMiddleware, DepthMiddleware
and UrlLengthMiddleware let through, and a request they drop is never
recorded as seen.

Settings:

- ``SEEND_ADDRESS``: ``host:port``, ``[v6]:port`` or a Unix socket path
  (default ``127.0.0.1:6874``).
- ``SEEND_FILTER``: the filter to use (default: the server routes the key).
- ``SEEND_TOKEN``: the server's ``auth_token``.
- ``SEEND_KEY``: ``fingerprint`` (default; the hex of
  ``crawler.request_fingerprinter``'s fingerprint, so every process of a
  crawl must use the same ``REQUEST_FINGERPRINTER_IMPLEMENTATION``) or
  ``url`` (``request.url``, so that the server's host routing and
  ``normalize`` apply).
- ``SEEND_FAIL_OPEN``: False (default): if seend cannot be reached the crawl
  stops with an error naming the address.  True: the request is treated as
  new and counted in the stat ``seend/fail_open``.  Never a silent "seen".
- ``SEEND_GC_PAUSE``: True (default): Python's garbage collector is paused
  while the middleware's batch of one response is in flight (see
  ``_GCPause``); False leaves it alone.
- ``SEEND_TIMEOUT`` (seconds, default 10) and ``SEEND_CONNECT_RETRY``
  (seconds, default 5: how long a refused connect is retried, to ride out a
  restart of seend).
"""
import gc
import logging
import time
import weakref
from typing import Any, Iterable, List, Optional, Sequence, cast

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.utils.misc import load_object

import seend

__all__ = ["DupeFilter", "SeenMiddleware", "SeendUnavailable"]

logger = logging.getLogger(__name__)

# request.meta key of the middleware's mark: (key, seen, weak reference to
# the request marked).  The reference lets request_seen recognise the very
# request it marked without computing its key again (a fingerprint costs a
# lookup in the fingerprinter's cache, a microsecond a request); the key is
# kept so that a copy of the request (a redirect copies meta) is answered
# from the mark only if it has the same key.  A request changed in place between
# the middleware and the scheduler keeps its mark: Scrapy's requests are
# immutable but for meta and headers, and its fingerprinter caches a
# request's fingerprint anyway.
META_KEY = "seend_seen"
CLOSE_REASON = "seend_unavailable"


class SeendUnavailable(seend.ConnectionError):
    """seend could not answer and SEEND_FAIL_OPEN is off: the crawl stops."""


class _Seend:
    """What DupeFilter and SeenMiddleware share: settings, key, client."""

    def __init__(self, crawler: Any) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.address: str = s.get("SEEND_ADDRESS", "127.0.0.1:6874")
        self.filter: Optional[str] = s.get("SEEND_FILTER") or None
        self.fail_open: bool = s.getbool("SEEND_FAIL_OPEN", False)
        keying = s.get("SEEND_KEY", "fingerprint")
        if keying not in ("fingerprint", "url"):
            raise ValueError("SEEND_KEY must be 'fingerprint' or 'url', not %r"
                             % keying)
        self.by_url = keying == "url"
        self.fingerprinter = crawler.request_fingerprinter
        self.retry = s.getfloat("SEEND_CONNECT_RETRY", 5.0)
        # after a failure: fail open at once for this long instead of
        # spending connect_retry on every request; fail closed for good
        self.down_until = 0.0
        self.stopped: Optional[Exception] = None
        self.client = seend.Client(self.address,
                                   token=s.get("SEEND_TOKEN") or None,
                                   timeout=s.getfloat("SEEND_TIMEOUT", 10.0),
                                   connect_retry=self.retry)

    def key(self, request: Request) -> str:
        if self.by_url:
            return request.url
        return self.fingerprinter.fingerprint(request).hex()

    def answers(self, keys: Sequence[str], spider: Any) -> List[Optional[bool]]:
        """
        SEEN of every key: True seen, False new.  None for a key seend did
        not answer (unreachable, connection lost, ERR) when failing closed:
        the crawl is then stopping.  Failing open, those are False, counted
        in seend/fail_open.  An answer is never guessed as "seen".
        """
        if self.stopped is not None:
            return self._failed(self.stopped, [None] * len(keys), spider)
        if self.fail_open and time.monotonic() < self.down_until:
            # down a moment ago: do not spend connect_retry on every request
            return self._failed(None, [None] * len(keys), spider)
        self.client.connect_retry = self.retry if not self.down_until else 0.0
        err: Exception
        t0 = time.perf_counter()
        try:
            got = cast(List[Optional[bool]],
                       self.client.seen_many(keys, filter=self.filter))
            self.down_until = 0.0
            return got
        except seend.ConnectionError as e:
            # the answers that arrived stand; the others are not guessed
            got, err = list(e.replies), e
            if self.fail_open:
                self.down_until = time.monotonic() + max(self.retry, 1.0)
        except seend.Error as e:
            got = list(e.replies or [])
            err = seend.Error("it answered ERR %s" % e)
        finally:
            # what seend costs the crawl: round trips and the time in them
            self.stats.inc_value("seend/round_trips", spider=spider)
            self.stats.inc_value("seend/wait_ms", (time.perf_counter() - t0) * 1e3,
                                 spider=spider)
        got += [None] * (len(keys) - len(got))
        return self._failed(err, got, spider)

    def _failed(self, err: Optional[Exception], answers: List[Optional[bool]],
                spider: Any) -> List[Optional[bool]]:
        n = answers.count(None)
        if self.fail_open:
            if err is not None:
                logger.warning("seend at %s did not answer %d request(s) (%s): "
                               "treated as new (SEEND_FAIL_OPEN)",
                               self.address, n, err)
            self.stats.inc_value("seend/fail_open", n, spider=spider)
            return [False if a is None else a for a in answers]
        if self.stopped is None and err is not None:
            self.stopped = err
            self.stats.inc_value("seend/errors", spider=spider)
            logger.error("seend at %s did not answer: %s; stopping the crawl "
                         "(SEEND_FAIL_OPEN = True would treat such requests "
                         "as new)", self.address, err)
            engine = getattr(self.crawler, "engine", None)
            if engine is not None and spider is not None and \
                    getattr(engine, "spider", None) is spider:
                engine.close_spider(spider, CLOSE_REASON)
        return answers

    def unavailable_error(self) -> SeendUnavailable:
        return SeendUnavailable("seend at %s did not answer: %s; the crawl is "
                                "stopping" % (self.address, self.stopped))


class DupeFilter(BaseDupeFilter):
    """
    Scrapy's DUPEFILTER_CLASS backed by seend: ``request_seen`` is seend's
    ``SEEN`` of the request's key, shared by every process of the crawl.
    """

    def __init__(self, shared: _Seend, debug: bool = False) -> None:
        self.shared = shared
        self.debug = debug
        self.logdupes = True
        self.spider: Any = None
        self.logger = logger

    @classmethod
    def from_crawler(cls, crawler: Any) -> "DupeFilter":
        df = cls(_Seend(crawler), crawler.settings.getbool("DUPEFILTER_DEBUG"))
        crawler.signals.connect(df._spider_opened, signal=signals.spider_opened)
        return df

    @classmethod
    def from_settings(cls, settings: Any, *, fingerprinter: Any = None) -> "DupeFilter":
        raise NotConfigured("seend.scrapy.DupeFilter needs a crawler "
                            "(Scrapy creates it with from_crawler)")

    def _spider_opened(self, spider: Any) -> None:
        self.spider = spider

    def open(self) -> None:
        """Checks at the start that seend answers (and takes the token)."""
        try:
            self.shared.client.ping()
        except seend.ConnectionError as e:
            if not self.shared.fail_open:
                raise SeendUnavailable("seend at %s cannot be reached: %s"
                                       % (self.shared.address, e)) from e
            logger.warning("seend at %s cannot be reached (%s); "
                           "SEEND_FAIL_OPEN: requests count as new until it "
                           "answers", self.shared.address, e)
            self.shared.down_until = time.monotonic() + max(self.shared.retry, 1.0)

    def close(self, reason: str) -> None:
        self.shared.client.close()

    def request_seen(self, request: Request) -> bool:
        """True if seend has seen the request's key (now recorded)."""
        mark = request.meta.pop(META_KEY, None)
        key = None
        if mark is not None and (mark[2]() is request or
                                 mark[0] == (key := self.shared.key(request))):
            self.shared.stats.inc_value("seend/batched", spider=self.spider)
            return bool(mark[1])
        if key is None:
            key = self.shared.key(request)
        self.shared.stats.inc_value("seend/direct", spider=self.spider)
        answer = self.shared.answers([key], self.spider)[0]
        if answer is None:
            # not "seen", not "new": the request is not scheduled, and the
            # crawl is stopping with the error logged
            raise self.shared.unavailable_error()
        return answer

    def log(self, request: Request, spider: Any) -> None:
        """
        As RFPDupeFilter logs (the first duplicate, or every one with
        DUPEFILTER_DEBUG) and counts ``dupefilter/filtered``: its own code,
        so the messages stay those of the installed Scrapy.
        """
        RFPDupeFilter.log(self, request, spider)  # type: ignore[arg-type]


class _GCPause:
    """
    Pauses CPython's cyclic garbage collector while batches are in flight.

    Why: a batch holds all the requests of one response alive at once (some
    fifty, each a dozen container objects), where a plain crawl creates
    each request and drops the duplicates at once.  The live batch pushes
    the young generation's count past its threshold (700) on nearly every
    response, so collections run far more often and promote the batch's
    objects to older generations, whose collections walk the whole heap:
    a 100k-request crawl spent 6.9 s collecting against RFPDupeFilter's
    3.9 s, all of the batched crawl's extra time.  Paused from the
    response's output to the last request handed on, the count falls back
    as the duplicates are freed, as in a plain crawl.

    Pauses nest (Scrapy may consume several responses' outputs in turns),
    and a collector that was already disabled is left disabled.  A pause
    never outlasts ``LIMIT`` seconds: a batch that finds the current pause
    older ends it and runs unpaused itself, so the collector runs before
    the next pause; the batches of the ended pause then leave nothing (each
    holds the generation it entered).  The spider's close ends it too.  The
    collector is the process's: so is the pause, shared by every crawler
    of the process.
    """

    LIMIT = 5.0
    depth = 0
    generation = 0
    since = 0.0
    was_enabled = False

    @classmethod
    def enter(cls) -> int:
        """Pauses (or joins the pause); returns the token for leave(), or
        -1 if this batch must run unpaused."""
        if cls.depth and time.monotonic() - cls.since > cls.LIMIT:
            cls.reset()
            return -1
        if cls.depth == 0:
            cls.was_enabled = gc.isenabled()
            gc.disable()
            cls.since = time.monotonic()
        cls.depth += 1
        return cls.generation

    @classmethod
    def leave(cls, token: int) -> None:
        if token != cls.generation or cls.depth == 0:
            return       # unpaused, or its pause was ended by reset()
        cls.depth -= 1
        if cls.depth == 0 and cls.was_enabled:
            gc.enable()

    @classmethod
    def reset(cls) -> None:
        if cls.depth:
            cls.depth = 0
            if cls.was_enabled:
                gc.enable()
        cls.generation += 1


class SeenMiddleware:
    """
    A spider middleware that asks seend about all the requests of one
    response in one round trip and marks each with its answer in
    ``request.meta`` (it never sets ``dont_filter``); ``DupeFilter`` answers
    from the mark.  Enable it below OffsiteMiddleware's 500, e.g. at 100.
    """

    def __init__(self, shared: _Seend, gc_pause: bool = True) -> None:
        self.shared = shared
        self.gc_pause = gc_pause

    @classmethod
    def from_crawler(cls, crawler: Any) -> "SeenMiddleware":
        dfclass = load_object(crawler.settings.get("DUPEFILTER_CLASS"))
        if not (isinstance(dfclass, type) and issubclass(dfclass, DupeFilter)):
            # marks nobody reads, and SEENs that would hide the pages from
            # the other processes: refuse rather than half-work
            raise NotConfigured("seend.scrapy.SeenMiddleware needs "
                                "DUPEFILTER_CLASS = 'seend.scrapy.DupeFilter'")
        mw = cls(_Seend(crawler),
                 crawler.settings.getbool("SEEND_GC_PAUSE", True))
        crawler.signals.connect(mw._spider_closed, signal=signals.spider_closed)
        return mw

    def _spider_closed(self, spider: Any) -> None:
        _GCPause.reset()
        self.shared.client.close()

    def _mark(self, result: Iterable[Any], spider: Any) -> List[Any]:
        out = list(result)
        reqs = [r for r in out if isinstance(r, Request) and not r.dont_filter]
        if not reqs:
            return out
        keys = [self.shared.key(r) for r in reqs]
        answers = self.shared.answers(keys, spider)
        unanswered = set()
        for r, k, a in zip(reqs, keys, answers):
            if a is None:
                unanswered.add(id(r))
            else:
                r.meta[META_KEY] = (k, a, weakref.ref(r))
        if unanswered:
            # failing closed, the crawl is stopping: the answered requests
            # still go to the scheduler (with JOBDIR, to the queue on disk,
            # so a resumed crawl fetches them); the others cannot be
            # scheduled honestly
            out = [r for r in out if id(r) not in unanswered]
        return out

    def process_spider_output(self, response: Any, result: Iterable[Any],
                              spider: Any) -> Iterable[Any]:
        if not self.gc_pause:
            yield from self._mark(result, spider)
            return
        token = _GCPause.enter()
        try:
            yield from self._mark(result, spider)
        finally:
            _GCPause.leave(token)

    async def process_spider_output_async(self, response: Any, result: Any,
                                          spider: Any) -> Any:
        collected = [r async for r in result]
        for r in self._mark(collected, spider):
            yield r
