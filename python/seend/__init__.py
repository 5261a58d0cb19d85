"""
seend - a client for the seend URL-dedup daemon (stdlib only, Python 3.9+).

    import seend
    c = seend.Client("127.0.0.1:6874")
    c.seen("https://example.com/")          # False: new, and now recorded
    c.seen("https://example.com/")          # True: seen before
    c.seen_many(["https://a/", "https://b/"])   # one round trip: [False, False]

Given a list of servers, ``Client`` returns a ``Ring`` (seend/ring.py): each
key goes to one node, chosen as twemproxy (nutcracker) chooses it with
``hash: fnv1a_64`` and ``distribution: ketama``, and a batch goes to every
node at once:

    ring = seend.Client(["10.0.0.1:6874", "10.0.0.2:6874", "10.0.0.3:6874"])
    ring.seen_many(urls)                    # answers in the order of urls

The client speaks seend's line protocol.  ``seen_many``, ``check_many`` and
``forget_many`` write a whole batch of requests before they read the
replies (pipelining), so a million keys cost a few round trips, not a
million.  ``forget``/``forget_many`` take keys out of a filter of ``type =
cuckoo`` (a bloom filter cannot forget: the server answers ``ERR``).

A connection lost while requests are in flight raises ``ConnectionError``
and nothing is sent again behind the caller's back: a ``SEEN`` that reached
the server and is sent twice would report a new URL as seen.  The next call
reconnects.  A connection that the server closed while it was idle (a
restart of seend, ``idle_timeout``) is noticed before anything is written
and replaced silently, since no request was lost.

A cluster (seend's ``[cluster] enabled = on``, seend/cluster.py): a
``Client`` whose node answers ``ERR MOVED`` follows the cluster from then
on, each key sent straight to the node that owns its slot, a batch to
every owner at once; ``cluster=True`` reads the slot table before the
first request:

    c = seend.Client("10.0.0.1:6874", cluster=True)
    c.seen_many(urls)                       # answers in the order of urls

TLS (seend's ``tls_listen``): give an ``ssl_context``, or an address
``seends://host:port`` (``rediss://`` too, so that one URL serves redis-py
and this client), which verifies the server against the system's CAs:

    ctx = seend.ssl_context(cafile="ca.crt", certfile="client.crt",
                            keyfile="client.key")
    c = seend.Client("10.0.0.1:6875", ssl_context=ctx)
    c = seend.Client("seends://:s3cret@dedup.internal:6875")  # token too
"""
import selectors
import socket
import ssl
import time
import urllib.parse
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

__all__ = ["Client", "Ring", "Cluster", "Error", "ConnectionError",
           "TimeoutError", "ssl_context"]
__version__ = "0.1.0"

Key = Union[str, bytes]
Number = Union[int, float, str]

# What the line protocol splits tokens on, or cannot carry inside one.
_FORBIDDEN = (b" ", b"\t", b"\n", b"\r", b"\v", b"\f")
_FORBIDDEN_STR = tuple(ch.decode() for ch in _FORBIDDEN)
_CHUNK = 1 << 18
# what a non-blocking socket (or TLS session) says when it must wait
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                ssl.SSLWantWriteError)


class Error(Exception):
    """
    The server answered ``ERR <reason>``; ``str(e)`` is the reason.

    For ``seen_many``/``check_many``/``forget_many``, ``index`` is the
    position of the first key that failed and ``replies`` the answers of
    every key sent, up to the end of the batch that failed (``None`` where a
    key got an error); those others were answered and, for ``SEEN``,
    recorded (for ``FORGET``, forgotten where True).  Later batches were
    not sent.
    """

    def __init__(self, reason: str, index: Optional[int] = None,
                 replies: Optional[List[Optional[bool]]] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.index = index
        self.replies = replies


class ConnectionError(Exception):  # noqa: A001 - the package's own name
    """
    The connection could not be made, or was lost.

    ``replies`` holds the answers that arrived before the loss (for a batch,
    the first ``len(replies)`` keys); the other keys of that batch may or may
    not have reached the server, and were not sent again.  ``sent`` is
    False when nothing of the call reached the server (the connect failed).
    """

    def __init__(self, message: str, replies: Optional[List[bool]] = None,
                 sent: bool = True) -> None:
        super().__init__(message)
        self.replies = replies if replies is not None else []
        self.sent = sent


class TimeoutError(ConnectionError):  # noqa: A001
    """The server did not answer within the client's timeout."""


# URL schemes an address may have: whether it asks for TLS
_SCHEMES = {"seend": False, "redis": False, "seends": True, "rediss": True}


def _split_url(address: str) -> Tuple[str, Optional[bool], Optional[str]]:
    """'seends://[:token@]host:port[/...]' -> ('host:port', tls, token);
    an address without a scheme -> (address, None, None)."""
    scheme, sep, _ = address.partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        return address, None, None
    u = urllib.parse.urlsplit(address)
    netloc = u.netloc.rpartition("@")[2]
    if not netloc:
        raise ValueError("seend address %r: no host:port after %s://"
                         % (address, scheme))
    if ":" not in netloc.rpartition("]")[2]:
        netloc += ":6874"
    token = urllib.parse.unquote(u.password) if u.password else None
    return netloc, _SCHEMES[scheme.lower()], token


def ssl_context(cafile: Optional[str] = None, certfile: Optional[str] = None,
                keyfile: Optional[str] = None,
                check_hostname: bool = True) -> ssl.SSLContext:
    """
    A client TLS context for seend's ``tls_listen``: the server is verified
    against ``cafile`` (default: the system's CAs), and its certificate's
    name against the host connected to unless ``check_hostname`` is False
    (redis-cli does not check it); ``certfile``/``keyfile`` is the client
    certificate a server with ``tls_auth_clients = yes`` asks for.
    """
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = check_hostname
    if certfile is not None:
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


def _parse_address(address: str) -> Tuple[int, object]:
    """'host:port', '[v6]:port' or a path containing '/' -> (family, addr)."""
    address = _split_url(address)[0]
    if "/" in address:
        return socket.AF_UNIX, address
    if address.startswith("["):
        host, sep, port = address[1:].partition("]:")
        if not sep:
            raise ValueError("seend address %r: expected [v6]:port" % address)
    else:
        host, sep, port = address.rpartition(":")
        if not sep or not host:
            raise ValueError("seend address %r: expected host:port, [v6]:port "
                             "or a Unix socket path" % address)
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ValueError("seend address %r: bad port %r" % (address, port))
    return socket.AF_UNSPEC, (host, int(port))


def _recv(s: socket.socket) -> bytes:
    """What a non-blocking socket has (b"" at its end; raises one of
    _WOULD_BLOCK if nothing yet), with, over TLS, the rest of a record
    read in part: it is in the session, where select() cannot see it."""
    chunk = s.recv(_CHUNK)
    while chunk and isinstance(s, ssl.SSLSocket) and s.pending():
        try:
            more = s.recv(_CHUNK)
        except _WOULD_BLOCK:
            break
        if not more:
            break
        chunk += more
    return chunk


def _number(text: str) -> Number:
    """INFO and FILTERS values: int, else float, else the text itself."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _encode(key: Key, what: str = "key") -> bytes:
    b = key.encode() if isinstance(key, str) else bytes(key)
    if not b:
        raise ValueError("seend: empty %s" % what)
    for ch in _FORBIDDEN:
        if ch in b:
            raise ValueError("seend: %s %r contains whitespace (%r), which the "
                             "line protocol cannot carry" % (what, key, ch))
    return b


def _multi_end(buf: bytearray) -> int:
    """Where a multi-line reply (or its one-line ERR) ends in buf, or -1."""
    nl = buf.find(b"\n")
    if nl < 0:
        return -1
    if buf.startswith(b"ERR") or buf.startswith(b"END\r\n"):
        return nl + 1
    i = buf.find(b"\r\nEND\r\n")
    return -1 if i < 0 else i + 7


class Client:
    """
    A connection to one seend.

    ``address`` is ``host:port``, ``[v6]:port``, or a Unix socket path (any
    address containing ``/``), or a URL ``seend://host:port`` or, over TLS,
    ``seends://host:port`` (also ``redis://``, ``rediss://``; a password in
    it, ``seends://:token@host:port``, is the token).  ``ssl_context``
    (``ssl.SSLContext``, see ``seend.ssl_context``) speaks TLS to a
    ``tls_listen`` port with it; a ``seends://`` address without one uses
    ``ssl.create_default_context()``.  ``token`` is sent with ``AUTH`` on
    every connect.  ``timeout`` (seconds) bounds the connect and every wait for the
    server; a timeout raises ``TimeoutError`` and drops the connection.
    ``connect_retry`` (seconds, default 0) keeps retrying a refused connect
    for that long, so that a restart of seend is ridden out; only connects
    are retried, never requests.

    ``cluster`` says what to do with a cluster's redirections (``ERR
    MOVED <slot> <host>:<port>``, seend's ``[cluster] enabled = on``):
    None (the default) follows the cluster from the first one on, True
    reads the slot table before the first request, False never follows
    (a redirection is an ``Error``).  Following, ``seen``, ``check``,
    ``forget`` and their ``_many`` send each key to the node that owns its
    slot (a connection per node, answers in the keys' order, see
    ``seend.cluster``), and ``cluster`` is then the ``seend.Cluster``
    doing it; ``ping``, ``info``, ``filters`` and ``save`` still ask the
    node at ``address``.

    The client is not thread-safe: give each thread its own.

    Given a list (or tuple) of servers instead of one address, ``Client``
    returns a ``seend.Ring`` over them (same keyword arguments): see
    ``seend.ring``.
    """

    def __new__(cls, address: Union[str, Sequence[str]],
                *args: object, **kwargs: object) -> "Client":
        """A ``Client`` for one address, a ``Ring`` for a list of them."""
        if cls is Client and isinstance(address, (list, tuple)):
            return Ring(address, *args, **kwargs)  # type: ignore
        return super().__new__(cls)

    def __init__(self, address: str, token: Optional[str] = None,
                 timeout: float = 10.0, connect_retry: float = 0.0,
                 ssl_context: Optional[ssl.SSLContext] = None,
                 cluster: Optional[bool] = None) -> None:
        self.address = address
        plain, tls, url_token = _split_url(address)
        self.token = token if token is not None else url_token
        self.timeout = timeout
        self.connect_retry = connect_retry
        self._family, self._addr = _parse_address(plain)
        if tls and ssl_context is None:
            ssl_context = ssl.create_default_context()
        if ssl_context is not None and self._family == socket.AF_UNIX:
            raise ValueError("seend address %r: TLS is for TCP (tls_listen), "
                             "not a Unix socket" % address)
        #: the TLS context, or None for plain TCP
        self.ssl_context = ssl_context
        self._sock: Optional[socket.socket] = None
        self._sel: Optional[selectors.BaseSelector] = None
        self._buf = bytearray()
        self._follow = cluster
        #: the seend.Cluster that routes keys once the client follows a
        #: cluster, else None
        self.cluster: Optional["Cluster"] = None

    # ---- connection ----

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "seend.Client(%r)" % self.address

    def close(self) -> None:
        """Closes the connection (a cluster's: every node's); the next
        call opens what it needs again."""
        if self.cluster is not None:
            self.cluster.close()
        self._close()

    def _close(self) -> None:
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self._buf = bytearray()

    def _open(self) -> socket.socket:
        if self._family == socket.AF_UNIX:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(self.timeout)
                s.connect(self._addr)
            except BaseException:
                s.close()
                raise
        else:
            s = socket.create_connection(self._addr, timeout=self.timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                # the handshake here, blocking, within the timeout: a
                # certificate refused is a failed connect
                try:
                    s = self.ssl_context.wrap_socket(
                        s, server_hostname=self._addr[0])  # type: ignore
                except BaseException:
                    s.close()
                    raise
        return s

    def _connect(self) -> None:
        deadline = time.monotonic() + self.connect_retry
        delay = 0.05
        while True:
            try:
                self._sock = self._open()
                break
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise ConnectionError("seend at %s: cannot connect: %s"
                                          % (self.address, e), sent=False) from e
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        self._buf = bytearray()
        # non-blocking from here on: waits go through the selector, which
        # applies the timeout, and a big batch is written while replies
        # are read
        self._sock.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ)
        if self.token is not None:
            reply = self._exchange(b"AUTH " + _encode(self.token, "token")
                                   + b"\n", 1).rstrip()
            if reply != b"OK":
                self._close()
                raise Error("seend at %s: AUTH refused: %s"
                            % (self.address, reply.decode(errors="replace")))

    def _usable(self) -> bool:
        """
        False if the server closed the idle connection (EOF, reset) or left
        bytes nobody asked for: then it cannot be used, and since nothing is
        in flight it can be replaced without losing anything.
        """
        s = self._sock
        if s is None or self._buf:
            return False
        if isinstance(s, ssl.SSLSocket) and s.pending():
            return False                 # bytes nobody asked for
        try:
            # the socket's own bytes (TLS records: a close_notify is the
            # server closing); the socket is non-blocking
            socket.socket.recv(s, 1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return True                  # nothing to read: as it should be
        except OSError:
            return False
        return False                     # EOF, or bytes nobody asked for

    def _ready(self) -> None:
        if not self._usable():
            self._close()
            self._connect()

    def _exchange(self, payload: bytes, nreplies: int,
                  multiline: bool = False) -> bytes:
        """
        Writes payload and reads nreplies reply lines (or, multiline, the
        reply up to END), sending and receiving together so that a big
        batch cannot deadlock on full socket buffers.  Returns the reply
        block as it came.  On a lost connection raises ConnectionError; its
        .raw holds the complete reply lines that did arrive.
        """
        s = self._sock
        sel = self._sel
        assert s is not None and sel is not None
        view = memoryview(payload)
        sent = 0
        buf = self._buf
        got = 0          # newlines in buf
        ended = False    # multiline: the reply is complete
        writing = False
        try:
            if payload:
                try:
                    sent = s.send(view[:_CHUNK])
                except _WOULD_BLOCK:
                    pass
            if sent < len(view):
                sel.modify(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
                writing = True
            while not (ended if multiline else got >= nreplies):
                events = sel.select(self.timeout)
                if not events:
                    raise TimeoutError("seend at %s: no answer within %ss"
                                       % (self.address, self.timeout))
                mask = events[0][1]
                if mask & selectors.EVENT_WRITE and writing:
                    try:
                        sent += s.send(view[sent:sent + _CHUNK])
                    except _WOULD_BLOCK:
                        pass
                    if sent >= len(view):
                        sel.modify(s, selectors.EVENT_READ)
                        writing = False
                if mask & selectors.EVENT_READ:
                    try:
                        chunk = _recv(s)
                    except _WOULD_BLOCK:
                        continue
                    if not chunk:
                        raise OSError("connection closed by the server")
                    buf += chunk
                    if multiline:
                        ended = _multi_end(buf) >= 0
                    else:
                        got += chunk.count(b"\n")
        except TimeoutError:
            self._close()
            raise
        except OSError as e:
            lines = bytes(buf).split(b"\r\n")[:-1]
            self._close()
            err = ConnectionError("seend at %s: connection lost with %d of %d "
                                  "requests unanswered: %s"
                                  % (self.address, max(nreplies - len(lines), 0),
                                     nreplies, e))
            err.raw = lines  # type: ignore[attr-defined]
            raise err from e
        except BaseException:
            # interrupted (KeyboardInterrupt...) with replies owed: the
            # connection is out of step, drop it
            self._close()
            raise
        if multiline:
            end = _multi_end(buf)
            data = bytes(buf[:end])
            del buf[:end]
            return data
        # the nreplies-th newline ends the answer
        if got == nreplies and buf.endswith(b"\n"):
            data = bytes(buf)
            buf.clear()
        else:
            pos = -1
            for _ in range(nreplies):
                pos = buf.index(b"\n", pos + 1)
            data = bytes(buf[:pos + 1])
            del buf[:pos + 1]
        return data

    def _call(self, payload: bytes, nreplies: int,
              multiline: bool = False) -> bytes:
        self._ready()
        return self._exchange(payload, nreplies, multiline)

    # ---- SEEN / CHECK ----

    def _batch(self, verb: bytes, keys: Sequence[Key], filter: Optional[str],
               batch: int) -> List[bool]:
        if batch < 1:
            raise ValueError("seend: batch must be at least 1")
        if self.cluster is None and self._follow:
            self._join_cluster()
        if self.cluster is not None:
            return self.cluster._batch(verb, keys, filter, batch)
        prefix = verb + b" " + (_encode(filter, "filter name") + b" "
                                if filter is not None else b"")
        out: List[bool] = []
        for start in range(0, len(keys), batch):
            part = keys[start:start + batch]
            if self.cluster is not None:
                # a redirection made this client follow the cluster
                self._payload(prefix, part)     # refuses bad keys first
                out.extend(self.cluster._part(prefix, part, start, out))
                continue
            payload = self._payload(prefix, part)
            try:
                data = self._call(payload, len(part))
            except ConnectionError as e:
                answered: List[bool] = []
                for r in getattr(e, "raw", [])[:len(part)]:
                    if r not in (b"0", b"1"):
                        break
                    answered.append(r == b"1")
                e.replies = out + answered
                raise
            try:
                out.extend(self._answers(data, len(part), start, out))
            except Error:
                if self._follow is False or b"ERR MOVED " not in data:
                    raise
                # the node is one of a cluster's, and not these keys' owner
                # (a redirected key was not recorded: sending it to its
                # owner is safe); from now on the cluster routes keys
                self._join_cluster()
                assert self.cluster is not None
                out.extend(self.cluster._resume(
                    prefix, part, data.split(b"\r\n")[:-1],
                    self.cluster._node(self.address), start, out))
        return out

    def _join_cluster(self) -> None:
        """Makes the Cluster that routes this client's keys, seeded with
        its address.  The Cluster has connections of its own, this one's
        among them: a node lost in a batch is closed there, and this
        client's connection stays for ping, info and the rest."""
        self.cluster = Cluster([self.address], token=self.token,
                               timeout=self.timeout,
                               connect_retry=self.connect_retry,
                               ssl_context=self.ssl_context)

    @staticmethod
    def _payload(prefix: bytes, keys: Sequence[Key]) -> bytes:
        """prefix + key + newline for every key, refusing what cannot go."""
        if not all(keys):
            raise ValueError("seend: empty key at index %d"
                             % next(i for i, k in enumerate(keys) if not k))
        try:
            # str keys (the usual case): one join, then memchr-fast scans of
            # the keys alone for what the protocol cannot carry
            plain = "".join(keys)  # type: ignore[arg-type]
            bad = any(ch in plain for ch in _FORBIDDEN_STR)
            sep = "\n" + prefix.decode()
            body = (prefix.decode() + sep.join(keys) + "\n").encode()  # type: ignore[arg-type]
        except TypeError:
            bkeys = [k.encode() if isinstance(k, str) else bytes(k) for k in keys]
            plain_b = b"".join(bkeys)
            bad = any(ch in plain_b for ch in _FORBIDDEN)
            body = prefix + (b"\n" + prefix).join(bkeys) + b"\n"
        if bad:
            for k in keys:
                _encode(k)
        return body

    @staticmethod
    def _answers(data: bytes, n: int, start: int,
                 before: List[bool]) -> List[bool]:
        """n reply lines -> booleans; an ERR among them raises Error."""
        if len(data) == 3 * n:
            # every reply one character: the fast path of a healthy batch
            answers = data[0::3]
            if answers.count(b"0") + answers.count(b"1") == n:
                return list(map((49).__eq__, answers))
        lines = data.split(b"\r\n")[:-1]
        replies: List[Optional[bool]] = []
        first: Optional[Tuple[int, str]] = None
        for i, x in enumerate(lines):
            if x == b"0" or x == b"1":
                replies.append(x == b"1")
                continue
            replies.append(None)
            if first is None:
                text = x.decode(errors="replace")
                first = (start + i, text[4:] if text.startswith("ERR ") else
                         "unexpected reply %r" % text)
        assert first is not None
        raise Error(first[1], first[0], list(before) + replies)

    def seen(self, key: Key, filter: Optional[str] = None) -> bool:
        """
        Asks and records: True if ``key`` was seen before, False if it is new
        (it is recorded now).  ``filter`` names a filter; without it the
        server routes the key.
        """
        return self._batch(b"SEEN", [key], filter, 1)[0]

    def seen_many(self, keys: Iterable[Key], filter: Optional[str] = None,
                  batch: int = 10000) -> List[bool]:
        """
        ``seen`` for every key, in order, pipelined: one round trip per
        ``batch`` keys.  A key repeated in ``keys`` answers False the first
        time and True after.  On an error reply, ``Error`` says which key;
        on a lost connection, ``ConnectionError.replies`` holds the answers
        that arrived.
        """
        return self._batch(b"SEEN", list(keys) if not isinstance(keys, list)
                           else keys, filter, batch)

    def check(self, key: Key, filter: Optional[str] = None) -> bool:
        """True if ``key`` was seen before; records nothing."""
        return self._batch(b"CHECK", [key], filter, 1)[0]

    def check_many(self, keys: Iterable[Key], filter: Optional[str] = None,
                   batch: int = 10000) -> List[bool]:
        """``check`` for every key, pipelined like ``seen_many``."""
        return self._batch(b"CHECK", list(keys) if not isinstance(keys, list)
                           else keys, filter, batch)

    # ---- FORGET ----

    def forget(self, key: Key, filter: Optional[str] = None) -> bool:
        """
        Forgets ``key``: True if the filter held it (it is forgotten now, and
        the next ``seen`` of it answers False), False if it did not hold it.
        ``filter`` names a filter; without it the server routes the key as
        for ``seen``.

        Only a filter of ``type = cuckoo`` can forget; a bloom filter answers
        ``ERR <filter> cannot forget keys (type = bloom)``, raised as
        ``Error``.  Forget only keys that were recorded: a key never
        recorded that happens to be a false positive answers True and takes
        another key's fingerprint with it.
        """
        return self._batch(b"FORGET", [key], filter, 1)[0]

    def forget_many(self, keys: Iterable[Key], filter: Optional[str] = None,
                    batch: int = 10000) -> List[bool]:
        """
        ``forget`` for every key, in order, pipelined like ``seen_many``: one
        round trip per ``batch`` keys.  A key repeated in ``keys`` answers
        True the first time (if it was held) and False after.  On an error
        reply, ``Error`` says which key (``index``) and holds the answers of
        the batch (``replies``); the other keys of that batch were
        answered, and forgotten where True.  On a lost connection,
        ``ConnectionError.replies`` holds the answers that arrived; the
        other keys may or may not have been forgotten, and nothing is sent
        again.
        """
        return self._batch(b"FORGET", list(keys) if not isinstance(keys, list)
                           else keys, filter, batch)

    # ---- the rest ----

    def _one(self, line: bytes) -> str:
        reply = self._call(line, 1).rstrip().decode(errors="replace")
        if reply.startswith("ERR"):
            raise Error(reply[4:])
        return reply

    def _lines(self, line: bytes) -> List[str]:
        """A multi-line request: its lines without END; ERR raises Error."""
        lines = self._call(line, 0, multiline=True).split(b"\r\n")[:-1]
        if lines and lines[0].startswith(b"ERR"):
            raise Error(lines[0][4:].decode(errors="replace"))
        return [x.decode(errors="replace") for x in lines[:-1]]

    def ping(self) -> bool:
        """True if the server answers PONG; raises otherwise."""
        reply = self._one(b"PING\n")
        if reply != "PONG":
            raise Error("unexpected reply to PING: %r" % reply)
        return True

    def info(self, filter: Optional[str] = None) -> Dict[str, Number]:
        """INFO's fields: numbers as int or float, the rest as str."""
        line = b"INFO" + (b" " + _encode(filter, "filter name")
                          if filter is not None else b"") + b"\n"
        out: Dict[str, Number] = {}
        for x in self._lines(line):
            name, _, value = x.partition(" ")
            out[name] = _number(value)
        return out

    def filters(self) -> Dict[str, Dict[str, Number]]:
        """Filter name -> its FILTERS fields (capacity, error_rate, ...)."""
        out: Dict[str, Dict[str, Number]] = {}
        for x in self._lines(b"FILTERS\n"):
            name, *fields = x.split()
            out[name] = {k: _number(v) for k, _, v in
                         (f.partition("=") for f in fields)}
        return out

    def save(self, filter: Optional[str] = None) -> None:
        """Snapshots now; returns once the files are written and fsynced."""
        self._one(b"SAVE" + (b" " + _encode(filter, "filter name")
                             if filter is not None else b"") + b"\n")


# a Ring and a Cluster are built of Clients: imported last, once they exist
from .ring import Ring  # noqa: E402
from .cluster import Cluster  # noqa: E402
