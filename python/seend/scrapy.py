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
  It may hold ``%(spider)s``, the spider's name (``%(spider)s:dupefilter``
  is scrapy-redis's own key).  A filter named so, or any SEEND_FILTER under
  scrapy-redis's scheduler, is made at its first use if seend has no such
  filter, as ``SADD`` makes one (``create_filters``, ``new_filter_*``);
  otherwise a name seend does not know stops the crawl.
- ``SEEND_TOKEN``: the server's ``auth_token``.
- ``SEEND_SSL``: False (default): plain TCP.  True: TLS, to seend's
  ``tls_listen`` (an address ``seends://host:port`` says the same).
  ``SEEND_SSL_CA`` (the CA file the server is verified against; default
  the system's), ``SEEND_SSL_CERT`` and ``SEEND_SSL_KEY`` (the client
  certificate and its key, for a server with ``tls_auth_clients = yes``),
  ``SEEND_SSL_CHECK_HOSTNAME`` (default True: the certificate must name
  the host of SEEND_ADDRESS).  Setting SEEND_SSL_CA or SEEND_SSL_CERT
  implies SEEND_SSL.
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
- ``SEEND_FORGET_FAILED``: False (default).  True: a request whose download
  failed for good is forgotten in seend (``FORGET``), so that a later crawl
  fetches it again; a request that got a response the crawl accepts is
  never forgotten.  See below.

scrapy-redis's scheduler
------------------------

With ``SCHEDULER = "scrapy_redis.scheduler.Scheduler"`` (its queue in a
real Redis, ``REDIS_URL``) and ``DUPEFILTER_CLASS =
"seend.scrapy.DupeFilter"``, the scheduler builds the DupeFilter with
``from_spider`` and never calls ``open`` or ``close``: the first
``request_seen`` does what ``open`` does, and the connection closes with
the spider.  Its ``clear()`` (at close unless ``SCHEDULER_PERSIST``; at the
start with ``SCHEDULER_FLUSH_ON_START``) empties SEEND_FILTER with
``RESET``; without SEEND_FILTER it empties nothing (the server's routed
filters are every crawl's) and logs a warning saying so.  scrapy-redis's
``SCHEDULER_DUPEFILTER_KEY`` is not read: SEEND_FILTER names the filter.

SEEND_FORGET_FAILED
-------------------

A download has failed for good when what reaches the engine, after every
downloader middleware, is

- an exception: RetryMiddleware gave up (its retries are spent, the stat
  ``retry/max_reached``), or the exception is not one it retries;
  ``IgnoreRequest`` (robots.txt, a redirect loop) is not a failure;
- or a response that the crawl does not accept: HttpErrorMiddleware would
  drop it (a status outside 200-299 that neither ``HTTPERROR_ALLOWED_CODES``,
  ``HTTPERROR_ALLOW_ALL``, the spider's ``handle_httpstatus_list`` nor the
  request's ``handle_httpstatus_list``/``handle_httpstatus_all`` meta
  allows), such as a 500 whose retries are spent or a 404.  The crawl's own
  HttpErrorMiddleware is asked, so its settings decide; without it every
  response is accepted.

Then the keys that the DupeFilter recorded for the request are forgotten:
its own and those of the requests it was redirected from (kept in
``request.meta["seend_recorded"]``, a tuple of str), so that the link that
led to it is followed again.  Requests that were never recorded
(``dont_filter``) have nothing to forget.  The failure is seen whatever the
request's errback does with it.

Only a filter of ``type = cuckoo`` can forget keys: with the setting on,
``DupeFilter.open`` asks ``INFO`` for the type of ``SEEND_FILTER`` (without
it, of every filter of the server, since the server may route a key to any
of them), and a bloom filter stops the crawl at its start with an error
naming the setting and the type.  A key forgotten during a crawl is not
fetched again by the same process in that crawl (the process remembers it,
about 150 bytes per failed request); another process, or the next crawl,
fetches it.  Stats: ``seend/forgotten`` (keys forgotten),
``seend/forget_not_held`` (keys the filter no longer held),
``seend/forget_errors`` (requests whose keys could not be forgotten: seend
unreachable or answering ``ERR``; logged as errors, the crawl goes on) and
``seend/forgotten_skipped`` (links to a forgotten request answered "seen"
by this process).

How: Scrapy hands download exceptions to the request's errback without the
spider middlewares (``Scraper._scrape2``), so the hook is a downloader
middleware that ``DupeFilter.open`` appends, after every configured one, to
the downloader's ``process_response``/``process_exception`` chains: it sees
exactly what the engine gets, after RetryMiddleware and RedirectMiddleware
have returned their new requests, which halts the chains before it.
"""
import gc
import logging
import time
import weakref
from typing import Any, Iterable, List, Optional, Sequence, cast

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.spidermiddlewares.httperror import HttpError, HttpErrorMiddleware
from scrapy.utils.misc import load_object

import seend

__all__ = ["DupeFilter", "SeenMiddleware", "SeendUnavailable", "CannotForget"]

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
# request.meta key, with SEEND_FORGET_FAILED: the keys the DupeFilter
# recorded as new for the request and for the requests it was redirected
# from (a tuple: a redirect's copy of meta shares it, and must not change
# the original's), forgotten if its download fails for good
RECORDED_KEY = "seend_recorded"

# crawler -> the keys its DupeFilter forgot (SEEND_FORGET_FAILED), which the
# crawl's DupeFilter and SeenMiddleware (each with its own _Seend) answer
# as seen without asking seend
_forgotten: "weakref.WeakKeyDictionary[Any, set]" = weakref.WeakKeyDictionary()


# crawlers whose DupeFilter a scheduler built with from_spider (scrapy-redis):
# their SeenMiddleware makes a missing SEEND_FILTER at first use, as the
# DupeFilter does
_scheduler_built: "weakref.WeakSet[Any]" = weakref.WeakSet()

# how often a batch is asked again after making its missing filter (another
# process may drop the filter in between; each try answers at least a key)
_CREATE_TRIES = 8


class _NoStats:
    """The stats of a DupeFilter built without a crawler: none kept."""

    def inc_value(self, *args: Any, **kwargs: Any) -> None:
        pass

    def get_value(self, key: str, default: Any = None, *args: Any,
                  **kwargs: Any) -> Any:
        return default


def _fingerprinter_from_settings(settings: Any) -> Any:
    """
    The request fingerprinter a crawler with these settings would have
    (REQUEST_FINGERPRINTER_CLASS, by default Scrapy's RequestFingerprinter
    with REQUEST_FINGERPRINTER_IMPLEMENTATION), for a DupeFilter built
    without a crawler: every process of a crawl must key requests alike.
    """
    from scrapy.utils.misc import create_instance
    from scrapy.utils.request import RequestFingerprinter
    cls = load_object(settings.get("REQUEST_FINGERPRINTER_CLASS") or
                      RequestFingerprinter)
    if isinstance(cls, type) and issubclass(cls, RequestFingerprinter) and \
            cls.__init__ is RequestFingerprinter.__init__ and \
            getattr(cls.from_crawler, "__func__", None) is \
            RequestFingerprinter.from_crawler.__func__:  # type: ignore[attr-defined]
        # Scrapy's, which reads nothing of the crawler but its settings
        class _SettingsOnly:
            pass
        holder = _SettingsOnly()
        holder.settings = settings  # type: ignore[attr-defined]
        return cls(holder)
    return create_instance(cls, settings, None)


def _no_such_filter(e: Exception) -> bool:
    """Whether seend's error says the named filter does not exist."""
    return str(getattr(e, "reason", e)).startswith("no such filter")


def _resp(*words: bytes) -> bytes:
    """One RESP request (an array of bulk strings)."""
    return b"*%d\r\n" % len(words) + b"".join(
        b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


def _nodes(client: Any) -> List[Any]:
    """The seend.Client of every node (one, or a Ring's)."""
    return list(getattr(client, "clients", None) or [client])


def _node(client: Any, key: str) -> Any:
    """The seend.Client of the node that holds key."""
    if getattr(client, "clients", None):
        return client.clients[client.node_index(key)]
    return client


class SeendUnavailable(seend.ConnectionError):
    """seend could not answer and SEEND_FAIL_OPEN is off: the crawl stops."""


class CannotForget(Exception):
    """SEEND_FORGET_FAILED is on but the filter cannot forget keys (a bloom
    filter), or the hook cannot be attached: the crawl does not start."""


def _ssl_from_settings(s: Any) -> Any:
    """SEEND_SSL and SEEND_SSL_*: a TLS context, or None for plain TCP
    (or for a seends:// SEEND_ADDRESS's default one)."""
    ca = s.get("SEEND_SSL_CA") or None
    cert = s.get("SEEND_SSL_CERT") or None
    key = s.get("SEEND_SSL_KEY") or None
    if key and not cert:
        raise ValueError("SEEND_SSL_KEY is set without SEEND_SSL_CERT")
    if not (s.getbool("SEEND_SSL", False) or ca or cert):
        return None
    return seend.ssl_context(cafile=ca, certfile=cert, keyfile=key,
                             check_hostname=s.getbool(
                                 "SEEND_SSL_CHECK_HOSTNAME", True))


class _Seend:
    """What DupeFilter and SeenMiddleware share: settings, key, client."""

    def __init__(self, crawler: Any, settings: Any = None, spider: Any = None,
                 fingerprinter: Any = None, create: bool = False) -> None:
        # crawler is None only for DupeFilter.from_settings (and from_spider
        # of a spider without one): then settings give the settings, and
        # the fingerprinter is built from them
        s = crawler.settings if crawler is not None else settings
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else _NoStats()
        self.address: str = s.get("SEEND_ADDRESS", "127.0.0.1:6874")
        # SEEND_FILTER as given; self.filter is it with %(spider)s
        # interpolated, known once the spider is (resolve())
        self.filter_setting: Optional[str] = s.get("SEEND_FILTER") or None
        self.filter: Optional[str] = self.filter_setting
        self.per_spider = self.filter_setting is not None and \
            "%" in self.filter_setting
        # make the filter at first use if it does not exist (as SADD makes
        # one): for a name built from the spider's, and under a scheduler
        # that builds the DupeFilter without a crawler's help (scrapy-redis)
        self.create = create
        self.fail_open: bool = s.getbool("SEEND_FAIL_OPEN", False)
        keying = s.get("SEEND_KEY", "fingerprint")
        if keying not in ("fingerprint", "url"):
            raise ValueError("SEEND_KEY must be 'fingerprint' or 'url', not %r"
                             % keying)
        self.by_url = keying == "url"
        if fingerprinter is not None:
            self.fingerprinter = fingerprinter
        elif crawler is not None:
            self.fingerprinter = crawler.request_fingerprinter
        else:
            self.fingerprinter = _fingerprinter_from_settings(s)
        self.retry = s.getfloat("SEEND_CONNECT_RETRY", 5.0)
        # after a failure: fail open at once for this long instead of
        # spending connect_retry on every request; fail closed for good
        self.down_until = 0.0
        self.stopped: Optional[Exception] = None
        self.forget_failed: bool = s.getbool("SEEND_FORGET_FAILED", False)
        if self.forget_failed and crawler is None:
            raise self._cannot("SEEND_FORGET_FAILED = True needs the crawler "
                               "(its downloader is where failed downloads are "
                               "seen), and this DupeFilter was built from the "
                               "settings alone (from_settings)")
        self.forgotten: Optional[set] = \
            _forgotten.setdefault(crawler, set()) if self.forget_failed else None
        self.client = seend.Client(self.address,
                                   token=s.get("SEEND_TOKEN") or None,
                                   timeout=s.getfloat("SEEND_TIMEOUT", 10.0),
                                   connect_retry=self.retry,
                                   ssl_context=_ssl_from_settings(s))
        if self.per_spider:
            self.filter = None
            if spider is None and crawler is not None:
                spider = getattr(crawler, "spider", None)
            if spider is not None:
                self.resolve(spider)

    def resolve(self, spider: Any) -> None:
        """
        SEEND_FILTER with ``%(spider)s``: interpolates the spider's name
        (once).  Raises ValueError if there is no spider to take it from.
        """
        if not self.per_spider or self.filter is not None:
            return
        name = getattr(spider, "name", None)
        if not name:
            raise ValueError("SEEND_FILTER %r holds %%(spider)s, but no spider "
                             "is known to this seend.scrapy.DupeFilter (built "
                             "by from_settings: give the scheduler "
                             "from_spider or from_crawler, or name the "
                             "filter)" % self.filter_setting)
        try:
            self.filter = self.filter_setting % {"spider": name}  # type: ignore[operator]
        except (KeyError, ValueError, TypeError) as e:
            raise ValueError("SEEND_FILTER %r: only %%(spider)s can be "
                             "interpolated (%s: %s)" % (self.filter_setting,
                                                        type(e).__name__, e)) from e

    def creates(self) -> bool:
        """Whether a missing SEEND_FILTER is made at first use."""
        return self.filter is not None and (
            self.create or self.per_spider or
            (self.crawler is not None and self.crawler in _scheduler_built))

    def key(self, request: Request) -> str:
        if self.by_url:
            return request.url
        return self.fingerprinter.fingerprint(request).hex()

    def answers(self, keys: Sequence[str], spider: Any) -> List[Optional[bool]]:
        """
        SEEN of every key: True seen, False new.  None for a key seend did
        not answer (unreachable, connection lost, ERR) when failing closed:
        the crawl is then stopping.  Failing open, those are False, counted
        in seend/fail_open.  An answer is never guessed as "seen".  A key
        this crawl forgot (SEEND_FORGET_FAILED) is "seen" without asking:
        recorded again, it would be fetched (and fail) again in this crawl,
        and stay recorded for the next.
        """
        self.resolve(spider)
        forgotten = self.forgotten
        if forgotten:
            local = [k in forgotten for k in keys]
            n = sum(local)
            if n:
                self.stats.inc_value("seend/forgotten_skipped", n, spider=spider)
                ask = [k for k, here in zip(keys, local) if not here]
                got = iter(self._ask(ask, spider) if ask else ())
                return [True if here else next(got) for here in local]
        return self._ask(keys, spider)

    def _ask(self, keys: Sequence[str], spider: Any) -> List[Optional[bool]]:
        if self.stopped is not None:
            return self._failed(self.stopped, [None] * len(keys), spider)
        if self.fail_open and time.monotonic() < self.down_until:
            # down a moment ago: do not spend connect_retry on every request
            return self._failed(None, [None] * len(keys), spider)
        self.client.connect_retry = self.retry if not self.down_until else 0.0
        err: Exception
        t0 = time.perf_counter()
        try:
            got = cast(List[Optional[bool]], self._seen_many(keys))
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

    def _seen_many(self, keys: Sequence[str]) -> List[Optional[bool]]:
        """
        ``seen_many`` of the keys.  Where SEEND_FILTER does not exist and
        creates(), the first unanswered key makes it with ``SADD`` (seend
        makes a missing set's filter, as Redis makes a missing set; sent
        over RESP on the same connection, seend telling the protocols apart
        request by request, since the line protocol's ``SEEN`` of a missing
        filter is an error), and the keys it missed are asked again.
        Errors as ``seen_many``'s, their ``replies`` in the order of keys
        (None: not answered).
        """
        if not self.creates():
            return self.client.seen_many(keys, filter=self.filter)
        assert self.filter is not None
        answers: List[Optional[bool]] = [None] * len(keys)
        todo = list(range(len(keys)))
        for _ in range(_CREATE_TRIES):
            try:
                got = self.client.seen_many([keys[i] for i in todo],
                                            filter=self.filter)
                for i, a in zip(todo, got):
                    answers[i] = a
                return answers
            except seend.ConnectionError as e:
                for i, a in zip(todo, e.replies):
                    answers[i] = a
                e.replies = answers  # type: ignore[assignment]
                raise
            except seend.Error as e:
                for i, a in zip(todo, e.replies or []):
                    answers[i] = a
                if not _no_such_filter(e):
                    e.replies = answers
                    raise
            todo = [i for i in todo if answers[i] is None]
            first = todo.pop(0)
            answers[first] = self._sadd(keys[first], answers)
            if not todo:
                return answers
        raise seend.Error("filter %r was dropped again and again while "
                          "being made" % self.filter, None, answers)

    def _sadd(self, key: str, answers: List[Optional[bool]]) -> bool:
        """``SADD <filter> <key>`` over RESP: True if the key was held."""
        assert self.filter is not None
        node = _node(self.client, key)
        try:
            # the line client has no SADD; its connection carries one
            reply = node._call(_resp(b"SADD", self.filter.encode(),
                                     key.encode()), 1).rstrip(b"\r\n")
        except seend.ConnectionError as e:
            e.replies = answers  # type: ignore[assignment]
            raise
        if reply in (b":0", b":1"):
            # made now, or by another process since the SEEN that missed it
            logger.info("seend at %s had no filter %r (SEEND_FILTER): made "
                        "at its first use, as SADD makes one", node.address,
                        self.filter)
            return reply == b":0"
        text = reply.decode(errors="replace")
        text = text[1:] if text.startswith("-") else \
            "unexpected reply to SADD: %r" % text
        raise seend.Error(text[4:] if text.startswith("ERR ") else text,
                          None, answers)

    def empty(self) -> List[str]:
        """
        ``RESET`` of SEEND_FILTER on every node (it stays, with its
        settings, and holds no key); a node that has no such filter has
        nothing to empty.  Returns the addresses of the nodes emptied.
        """
        assert self.filter is not None
        line = b"RESET " + self.filter.encode() + b"\n"
        emptied = []
        for node in _nodes(self.client):
            try:
                node._one(line)
            except seend.Error as e:
                if not _no_such_filter(e):
                    raise
                continue
            emptied.append(node.address)
        return emptied

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
            self.close_spider(spider, CLOSE_REASON)
        return answers

    def close_spider(self, spider: Any, reason: str) -> None:
        """Asks the crawl's engine to close the spider, if there is one
        and it runs that spider."""
        engine = getattr(self.crawler, "engine", None)
        if engine is not None and spider is not None and \
                getattr(engine, "spider", None) is spider:
            engine.close_spider(spider, reason)

    def check_forgettable(self) -> None:
        """
        SEEND_FORGET_FAILED: raises CannotForget unless every filter this
        crawl's keys may go to is of type cuckoo: SEEND_FILTER, or without
        it every filter of the server (it may route a key to any of them).
        A server whose INFO has no "type" predates cuckoo filters: bloom.
        """
        c = self.client
        names = [self.filter] if self.filter is not None else list(c.filters())
        bad = []
        for name in names:
            try:
                kind = str(c.info(name).get("type", "bloom"))
            except seend.Error as e:
                if self.creates() and _no_such_filter(e):
                    bad.append("%r (it does not exist yet: made at its first "
                               "use, as SADD makes one, it would be of type "
                               "bloom; make it first with CF.RESERVE)" % name)
                    continue
                raise self._cannot("seend at %s cannot tell the type of filter "
                                   "%r: %s" % (self.address, name, e)) from e
            if kind != "cuckoo":
                bad.append("%r (type = %s)" % (name, kind))
        if bad:
            raise self._cannot(
                "SEEND_FORGET_FAILED = True needs a filter that can forget "
                "keys, but %s %s at seend %s cannot%s: only type = cuckoo "
                "filters can (type = cuckoo in the filter's [filter.NAME] "
                "section, or CF.RESERVE for a filter created at run time)%s"
                % ("the filter" if self.filter is not None else
                   "filter" if len(bad) == 1 else "filters",
                   ", ".join(bad), self.address,
                   "" if self.filter is not None else
                   ", and without SEEND_FILTER the server may route this "
                   "crawl's keys to any of its filters",
                   "" if self.filter is not None else
                   "; SEEND_FILTER names the one filter to use"))

    def _cannot(self, text: str) -> "CannotForget":
        if not text.startswith("SEEND_FORGET_FAILED"):
            text = "SEEND_FORGET_FAILED = True: " + text
        logger.error("%s; the crawl does not start", text)
        return CannotForget(text)

    def forget(self, keys: Sequence[str], request: Request, why: str,
               spider: Any) -> None:
        """
        FORGET of the keys of a request whose download failed for good.
        Never raises: a failure is logged and counted (seend/forget_errors),
        and the crawl goes on.
        """
        assert self.forgotten is not None
        # whatever happens below, this process does not fetch it again in
        # this crawl
        self.forgotten.update(keys)
        if self.fail_open and time.monotonic() < self.down_until:
            self._forget_failed(request, why, "it was unreachable a moment "
                                "ago", spider)
            return
        self.client.connect_retry = self.retry if not self.down_until else 0.0
        t0 = time.perf_counter()
        try:
            got = self.client.forget_many(list(keys), filter=self.filter)
        except seend.ConnectionError as e:
            if self.fail_open:
                self.down_until = time.monotonic() + max(self.retry, 1.0)
            self._forget_failed(request, why, str(e), spider)
            return
        except (seend.Error, ValueError) as e:
            self._forget_failed(request, why, "it answered ERR %s" % e
                                if isinstance(e, seend.Error) else str(e),
                                spider)
            return
        finally:
            self.stats.inc_value("seend/round_trips", spider=spider)
            self.stats.inc_value("seend/wait_ms", (time.perf_counter() - t0) * 1e3,
                                 spider=spider)
        n = sum(got)
        self.stats.inc_value("seend/forgotten", n, spider=spider)
        if n < len(got):
            self.stats.inc_value("seend/forget_not_held", len(got) - n,
                                 spider=spider)
        logger.debug("Forgot %(request)s%(chain)s in seend (download failed "
                     "for good: %(why)s): a later crawl fetches it again",
                     {"request": request, "why": why,
                      "chain": "" if len(keys) < 2 else
                      " and the %d request(s) it was redirected from"
                      % (len(keys) - 1)},
                     extra={"spider": spider})

    def _forget_failed(self, request: Request, why: str, err: str,
                       spider: Any) -> None:
        self.stats.inc_value("seend/forget_errors", spider=spider)
        logger.error("seend at %(address)s could not forget %(request)s, whose "
                     "download failed for good (%(why)s): %(err)s; a later "
                     "crawl will not fetch it (SEEND_FORGET_FAILED)",
                     {"address": self.address, "request": request, "why": why,
                      "err": err}, extra={"spider": spider})

    def unavailable_error(self) -> SeendUnavailable:
        return SeendUnavailable("seend at %s did not answer: %s; the crawl is "
                                "stopping" % (self.address, self.stopped))


class DupeFilter(BaseDupeFilter):
    """
    Scrapy's DUPEFILTER_CLASS backed by seend: ``request_seen`` is seend's
    ``SEEN`` of the request's key, shared by every process of the crawl.

    Scrapy's own scheduler builds it with ``from_crawler`` and calls
    ``open``/``close``.  scrapy-redis's scheduler builds it with
    ``from_spider`` (``from_settings`` if a class has no ``from_spider``),
    never calls ``open`` or ``close``, and calls ``clear`` to empty the
    seen-set: then the first ``request_seen`` does what ``open`` does, the
    connection is closed with the spider, and a missing SEEND_FILTER is
    made at its first use.
    """

    def __init__(self, shared: _Seend, debug: bool = False) -> None:
        self.shared = shared
        self.debug = debug
        self.logdupes = True
        self.spider: Any = None
        self.logger = logger
        self.failed_downloads: Optional[_FailedDownloads] = None
        # built by from_spider/from_settings: the first request_seen opens
        self.lazy_open = False
        self.opened = False
        self.broken: Optional[Exception] = None
        self.clear_logged = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> "DupeFilter":
        """Scrapy's scheduler: the crawler's settings, fingerprinter and
        stats; Scrapy calls ``open`` and ``close``."""
        df = cls(_Seend(crawler), crawler.settings.getbool("DUPEFILTER_DEBUG"))
        crawler.signals.connect(df._spider_opened, signal=signals.spider_opened)
        return df

    @classmethod
    def from_spider(cls, spider: Any) -> "DupeFilter":
        """
        scrapy-redis's scheduler (``Scheduler.open``): the spider's
        crawler's settings, fingerprinter and stats (without a crawler,
        ``spider.settings`` as ``from_settings`` takes them), ``%(spider)s``
        in SEEND_FILTER is the spider's name, and a missing SEEND_FILTER is
        made at its first use.  Nothing is sent until the first
        ``request_seen``; the connection closes with the spider.
        """
        crawler = getattr(spider, "crawler", None)
        if crawler is None:
            df = cls.from_settings(spider.settings, spider=spider)
            df.spider = spider
            return df
        df = cls(_Seend(crawler, spider=spider, create=True),
                 crawler.settings.getbool("DUPEFILTER_DEBUG"))
        df.spider = spider
        df.lazy_open = True
        _scheduler_built.add(crawler)
        crawler.signals.connect(df._spider_closed, signal=signals.spider_closed)
        return df

    @classmethod
    def from_settings(cls, settings: Any, *, fingerprinter: Any = None,
                      spider: Any = None) -> "DupeFilter":
        """
        A scheduler that has neither crawler nor spider to give (scrapy-redis
        with a dupefilter class that has no ``from_spider``): the
        fingerprinter is ``fingerprinter``, else the one these settings
        make (REQUEST_FINGERPRINTER_CLASS and _IMPLEMENTATION, as a
        crawler's); no stats are kept; a missing SEEND_FILTER is made at its
        first use.  SEEND_FILTER cannot hold ``%(spider)s`` here (no spider
        name to put in it), nor can SEEND_FORGET_FAILED be on (no
        downloader to watch): either raises ValueError / CannotForget.
        """
        shared = _Seend(None, settings=settings, spider=spider,
                        fingerprinter=fingerprinter, create=True)
        if shared.per_spider and shared.filter is None:
            shared.resolve(None)     # raises, saying why
        df = cls(shared, settings.getbool("DUPEFILTER_DEBUG"))
        df.lazy_open = True
        return df

    def _spider_opened(self, spider: Any) -> None:
        self.spider = spider

    def _spider_closed(self, spider: Any) -> None:
        # built by from_spider: nobody calls close()
        self.close("")

    def open(self) -> None:
        """
        Checks at the start that seend answers (and takes the token); with
        SEEND_FORGET_FAILED, that the filter can forget (else CannotForget
        stops the crawl), and attaches the hook that forgets failed
        downloads.
        """
        self.opened = True
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
        if self.shared.forget_failed:
            self.shared.resolve(self.spider)
            if self.shared.down_until:
                logger.warning("SEEND_FORGET_FAILED: seend at %s cannot be "
                               "reached, so the type of its filter is not "
                               "checked", self.shared.address)
            else:
                self.shared.check_forgettable()
            self.failed_downloads = _FailedDownloads.install(self.shared)

    def _open_lazily(self) -> None:
        """
        ``open`` at the first ``request_seen``, for a scheduler that never
        calls it (scrapy-redis's).  What would have stopped the crawl at its
        start closes the spider now and is raised for this and every later
        request.
        """
        try:
            self.open()
        except (SeendUnavailable, CannotForget) as e:
            self.broken = e
            if isinstance(e, SeendUnavailable):
                self.shared.stopped = e
                self.shared.stats.inc_value("seend/errors", spider=self.spider)
                logger.error("%s; stopping the crawl (SEEND_FAIL_OPEN = True "
                             "would treat requests as new)", e)
                self.shared.close_spider(self.spider, CLOSE_REASON)
            else:
                self.shared.close_spider(self.spider, "seend_cannot_forget")
            raise

    def close(self, reason: str) -> None:
        """Detaches the SEEND_FORGET_FAILED hook and closes the connection."""
        if self.failed_downloads is not None:
            self.failed_downloads.uninstall()
            self.failed_downloads = None
        self.shared.client.close()

    def clear(self) -> None:
        """
        Empties SEEND_FILTER (the line protocol's ``RESET``: the filter
        stays, with its settings, and holds no key).  scrapy-redis's
        scheduler calls it at close when SCHEDULER_PERSIST is off and at
        its start with SCHEDULER_FLUSH_ON_START.  Without SEEND_FILTER the
        keys are in the filters the server routes them to, which every
        spider shares: nothing is emptied, and a warning says so once.
        Raises SeendUnavailable if seend cannot be reached, seend.Error if
        it refuses.
        """
        sh = self.shared
        if sh.filter_setting is None:
            if not self.clear_logged:
                self.clear_logged = True
                logger.warning(
                    "seend.scrapy.DupeFilter.clear(): SEEND_FILTER is not set, "
                    "so this crawl's keys are in the filters seend routes "
                    "them to, shared with every other crawl: nothing is "
                    "emptied (SEEND_FILTER = '%%(spider)s:dupefilter' gives "
                    "each spider a filter of its own, which clear() "
                    "empties)", extra={"spider": self.spider})
            return
        sh.resolve(self.spider)
        try:
            emptied = sh.empty()
        except seend.ConnectionError as e:
            raise SeendUnavailable("seend at %s: cannot empty filter %r "
                                   "(clear()): %s" % (sh.address, sh.filter, e)
                                   ) from e
        except seend.Error as e:
            raise seend.Error("seend at %s: cannot empty filter %r (clear()): "
                              "%s" % (sh.address, sh.filter,
                                      getattr(e, "reason", e))) from e
        if sh.forgotten:
            sh.forgotten.clear()     # new again, like every other key
        logger.info("Emptied seend filter %(filter)r at %(address)s (clear())"
                    if emptied else "seend at %(address)s has no filter "
                    "%(filter)r yet: nothing to empty (clear())",
                    {"filter": sh.filter, "address": sh.address},
                    extra={"spider": self.spider})

    def request_seen(self, request: Request) -> bool:
        """True if seend has seen the request's key (now recorded)."""
        if self.lazy_open and not self.opened:
            self._open_lazily()
        if self.broken is not None:
            raise self.broken
        mark = request.meta.pop(META_KEY, None)
        key = None
        if mark is not None and (mark[2]() is request or
                                 mark[0] == (key := self.shared.key(request))):
            self.shared.stats.inc_value("seend/batched", spider=self.spider)
            if not mark[1] and self.shared.forget_failed:
                self._recorded(request, mark[0])
            return bool(mark[1])
        if key is None:
            key = self.shared.key(request)
        self.shared.stats.inc_value("seend/direct", spider=self.spider)
        answer = self.shared.answers([key], self.spider)[0]
        if answer is None:
            # not "seen", not "new": the request is not scheduled, and the
            # crawl is stopping with the error logged
            raise self.shared.unavailable_error()
        if not answer and self.shared.forget_failed:
            self._recorded(request, key)
        return answer

    @staticmethod
    def _recorded(request: Request, key: str) -> None:
        """SEEND_FORGET_FAILED: notes in the request the key recorded for
        it, after those of the requests it was redirected from."""
        request.meta[RECORDED_KEY] = request.meta.get(RECORDED_KEY, ()) + (key,)

    def log(self, request: Request, spider: Any) -> None:
        """
        As RFPDupeFilter logs (the first duplicate, or every one with
        DUPEFILTER_DEBUG) and counts ``dupefilter/filtered``: its own code,
        so the messages stay those of the installed Scrapy.
        """
        if getattr(spider, "crawler", None) is not None:
            RFPDupeFilter.log(self, request, spider)  # type: ignore[arg-type]
        elif self.debug or self.logdupes:
            # a spider made without a crawler: the messages, no stats
            self.logger.debug("Filtered duplicate request: %(request)s",
                              {"request": request}, extra={"spider": spider})
            self.logdupes = False


class _FailedDownloads:
    """
    SEEND_FORGET_FAILED's hook: a downloader middleware that
    ``DupeFilter.open`` appends to the downloader's chains, after every
    configured downloader middleware, so that the settings need nothing
    beside SEEND_FORGET_FAILED.

    Scrapy's DownloaderMiddlewareManager calls ``process_response`` and
    ``process_exception`` from the highest order to the lowest and stops at
    the first that returns a Request (RetryMiddleware's retry,
    RedirectMiddleware's redirect) or, for exceptions, a Response.  Last in
    both chains, this sees what the engine gets: the final response, after
    retries (RetryMiddleware returns the response itself once its retries
    are spent), or the final exception, which the engine hands to the
    request's errback without the spider middlewares (Scraper._scrape2);
    a spider middleware could not see it.  Whether a response is accepted
    is asked of the crawl's own HttpErrorMiddleware instances, which are
    what would drop it.
    """

    def __init__(self, shared: _Seend, methods: Any,
                 httperror: List[Any]) -> None:
        self.shared = shared
        self.methods = methods
        self.httperror = httperror

    @classmethod
    def install(cls, shared: _Seend) -> Optional["_FailedDownloads"]:
        engine = getattr(shared.crawler, "engine", None)
        if engine is None:
            # a crawler made by hand (tests), which downloads nothing
            return None
        try:
            methods = engine.downloader.middleware.methods
            spidermws = engine.scraper.spidermw.middlewares
            chains = (methods["process_response"], methods["process_exception"])
            if not all(hasattr(c, "append") and hasattr(c, "remove")
                       for c in chains):
                raise TypeError("its middleware chains are %s"
                                % type(chains[0]).__name__)
        except (AttributeError, KeyError, TypeError) as e:
            raise shared._cannot("cannot attach to this Scrapy's downloader "
                                 "(%s: %s)" % (type(e).__name__, e)) from e
        hook = cls(shared, methods,
                   [m for m in spidermws if isinstance(m, HttpErrorMiddleware)])
        methods["process_response"].append(hook.process_response)
        methods["process_exception"].append(hook.process_exception)
        return hook

    def uninstall(self) -> None:
        for name, method in (("process_response", self.process_response),
                             ("process_exception", self.process_exception)):
            try:
                self.methods[name].remove(method)
            except ValueError:
                pass

    def process_response(self, request: Request, response: Any,
                         spider: Any) -> Any:
        if 200 <= response.status < 300:
            return response          # HttpErrorMiddleware's common case
        keys = request.meta.get(RECORDED_KEY)
        if keys:
            try:
                if not self._accepted(request, response, spider):
                    self.shared.forget(keys, request, "HTTP %d" % response.status,
                                       spider)
            except Exception:
                # never turn a response into an error
                logger.exception("SEEND_FORGET_FAILED: error while looking at "
                                 "%s", response, extra={"spider": spider})
        return response

    def process_exception(self, request: Request, exception: BaseException,
                          spider: Any) -> None:
        if isinstance(exception, IgnoreRequest):
            return None              # dropped on purpose, not a failure
        keys = request.meta.get(RECORDED_KEY)
        if keys:
            try:
                self.shared.forget(keys, request, "%s: %s" % (
                    type(exception).__name__, exception), spider)
            except Exception:
                logger.exception("SEEND_FORGET_FAILED: error while forgetting "
                                 "%s", request, extra={"spider": spider})
        return None

    def _accepted(self, request: Request, response: Any, spider: Any) -> bool:
        """Would the crawl's HttpErrorMiddleware let the response through?"""
        if not self.httperror:
            return True
        if response.request is None:
            # the engine sets it after the downloader middlewares; a copy
            # carries it for HttpErrorMiddleware, which reads response.meta
            response = response.replace(request=request)
        for mw in self.httperror:
            try:
                mw.process_spider_input(response, spider)
            except HttpError:
                return False
        return True


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
