"""
website - a generated site on 127.0.0.1 for crawl tests, counting hits.

Page /p/<i> (0 <= i < pages) links to its successor, to /p/0, and to a
handful of other pages, each link several times over, plus one offsite
link (host "localhost", which the test spider does not allow).  Every path
the server is asked for is counted, so a test can say which page was
fetched how often.

Failures, for SEEND_FORGET_FAILED: ``status`` (page -> the HTTP status it
always answers, with a page without links), ``drop`` (pages whose
connection is closed without an answer), ``flaky`` (page -> how many 500s
it answers before it answers as usual), ``redirect_pages`` (links to these
pages go through /r/N, a redirect to /p/N).  ``log`` is the access log: one
(path, status) per request, status 0 for a dropped connection.
"""
import collections
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple


class Site:
    def __init__(self, pages: int = 200, fanout: int = 6, repeat: int = 3,
                 offsite: bool = True, redirects: bool = False,
                 status: Optional[Dict[int, int]] = None,
                 drop: Iterable[int] = (),
                 flaky: Optional[Dict[int, int]] = None,
                 redirect_pages: Iterable[int] = ()) -> None:
        self.pages = pages
        self.fanout = fanout
        self.repeat = repeat
        self.offsite = offsite
        self.redirects = redirects  # link to /r/N (a redirect) for odd N
        self.status: Dict[int, int] = dict(status or {})
        self.drop: Set[int] = set(drop)
        self.flaky: Dict[int, int] = dict(flaky or {})
        self.redirect_pages: Set[int] = set(redirect_pages)
        self.log: List[Tuple[str, int]] = []
        self.hits: Dict[str, int] = collections.Counter()
        self.lock = threading.Lock()
        # request number (1 = the first request) -> function called, in the
        # server's thread, before that request is answered
        self.hooks: Dict[int, Callable[[], None]] = {}
        self.requests = 0
        # hold every reply until all of these paths were asked for (so that
        # crawls started at once really run side by side)
        self.hold: set = set()
        self.released = threading.Event()
        self.released.set()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                with site.lock:
                    site.hits[self.path] += 1
                    site.requests += 1
                    hook = site.hooks.pop(site.requests, None)
                    if site.hold and site.hold.issubset(site.hits):
                        site.released.set()
                site.released.wait(60)
                if hook is not None:
                    hook()
                failure = site.failure(self.path)
                if failure is not None:
                    with site.lock:
                        site.log.append((self.path, failure))
                    if failure == 0:
                        # no status line, nothing: the client sees the
                        # connection closed before any response
                        self.close_connection = True
                        return
                    self.send_error(failure)
                    return
                if self.path.startswith("/r/"):
                    # /r/N redirects to /p/N
                    with site.lock:
                        site.log.append((self.path, 302))
                    self.send_response(302)
                    self.send_header("Location", "/p/" + self.path[3:])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = site.page(self.path)
                with site.lock:
                    site.log.append((self.path, 404 if body is None else 200))
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread: Optional[threading.Thread] = None

    def url(self, i: int) -> str:
        return "http://127.0.0.1:%d/p/%d" % (self.port, i)

    def hold_until(self, *paths: str) -> None:
        """Answers nothing until every one of paths has been requested."""
        self.hold = set(paths)
        self.released.clear()

    def offsite_url(self, i: int) -> str:
        return "http://localhost:%d/off/%d" % (self.port, i)

    def links(self, i: int) -> List[int]:
        out = [(i + 1) % self.pages, 0]
        out += [(i * 7 + j * 13 + 1) % self.pages for j in range(self.fanout)]
        return out

    def page(self, path: str) -> Optional[str]:
        if not path.startswith("/p/"):
            return None
        try:
            i = int(path[3:])
        except ValueError:
            return None
        if not 0 <= i < self.pages:
            return None
        a = ['<a href="/%s/%d">page %d</a>'
             % ("r" if self.redirects and j % 2 or j in self.redirect_pages
                else "p", j, j)
             for j in self.links(i)]
        if self.offsite:
            a.append('<a href="%s">elsewhere</a>' % self.offsite_url(i))
        return "<html><body><h1>%d</h1>%s</body></html>" % (
            i, "\n".join(a * self.repeat))

    def failure(self, path: str) -> Optional[int]:
        """The status a failing page answers (0: dropped), None if it works."""
        if not path.startswith("/p/"):
            return None
        try:
            i = int(path[3:])
        except ValueError:
            return None
        if i in self.drop:
            return 0
        if i in self.status:
            return self.status[i]
        with self.lock:
            if self.flaky.get(i, 0) > 0:
                self.flaky[i] -= 1
                return 500
        return None

    def paths_since(self, start: int) -> Set[str]:
        """The paths requested since the access log had start entries."""
        with self.lock:
            return {p for p, _ in self.log[start:]}

    def page_hits(self) -> Dict[int, int]:
        """Page number -> how often it was fetched (only fetched pages)."""
        with self.lock:
            return {int(p[3:]): n for p, n in self.hits.items()
                    if p.startswith("/p/")}

    def __enter__(self) -> "Site":
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
