"""
seend.ring - one client over several seend nodes, each key on one node.

    import seend
    ring = seend.Client(["10.0.0.1:6874", "10.0.0.2:6874", "10.0.0.3:6874"])
    ring.seen_many(urls)        # answers in the order of urls

``seend.Client`` given a list (or tuple) of servers returns a ``Ring``.  It
sends every key to the node that twemproxy (nutcracker) would send it to
with ``hash: fnv1a_64`` and ``distribution: ketama`` over the same server
list, so that Python crawlers can talk to the nodes directly, skipping the
proxy, while other clients go through it, and both agree on where each key
lives.

Each server is written as ``nutcracker.yml`` writes it, or as
``seend.Client`` takes an address:

    "host:port"                  name "host:port", weight 1
    "host:port:weight"           name "host:port"
    "host:port:weight name"      name "name" (what twemproxy hashes)
    "[v6]:port", "/unix/path", "/unix/path:weight name"

twemproxy places a server on its ring by the server's *name*: the word
after the last space when there is one, else ``host:port`` as written
(only ``host`` when the port is 11211; ``/path:`` for a Unix socket).  So
the ring here must be given the servers in the same order and with the
same names (or none) as nutcracker.yml, and the same weights.

What twemproxy's fnv1a_64 really computes, and so what this module
computes: FNV-1a over the key's bytes in 32-bit arithmetic (the 64-bit
offset basis and prime cut to their low 32 bits), with each byte read as a
C ``char``, signed on x86-64 (Debian's amd64 nutcracker): a byte >= 0x80
enters the hash as 0xFFFFFFxx.  ``signed_char=False`` gives the hash of a
nutcracker built where char is unsigned (arm64, ppc64el, s390x).
"""
import bisect
import hashlib
import math
import selectors
import struct
from array import array
from itertools import repeat
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import (_CHUNK, _WOULD_BLOCK, Client, ConnectionError, Error, Key,
               Number, TimeoutError, _encode, _parse_address, _recv)

__all__ = ["Ring", "parse_server", "fnv1a_64", "ketama_points"]

_MASK32 = 0xFFFFFFFF
_FNV_BASIS = 0xCBF29CE484222325 & _MASK32   # what twemproxy starts from
_FNV_PRIME = 0x100000001B3 & _MASK32        # = 0x1b3
_POINTS_PER_SERVER = 160                     # twemproxy's ketama constants
_POINTS_PER_HASH = 4
_MAX_HOSTLEN = 273                           # its snprintf buffer, with NUL
_DEFAULT_KETAMA_PORT = 11211                 # left out of a server's name


def _f32(x: float) -> float:
    """x rounded to a C float, as twemproxy's float arithmetic rounds."""
    return struct.unpack("f", struct.pack("f", x))[0]


def parse_server(entry: str) -> Tuple[str, int, bytes]:
    """
    One server of the list, as nutcracker.yml writes it
    (``host:port:weight [name]``, ``/path:weight [name]``) or as
    ``seend.Client`` takes it (``host:port``, ``[v6]:port``, ``/path``):
    returns ``(address for seend.Client, weight, name twemproxy hashes)``.
    """
    if not isinstance(entry, str):
        raise TypeError("seend ring: a server is a str, not %r" % (entry,))
    rest, sep, name = entry.rpartition(" ")
    if not sep:
        rest, name = entry, ""
    elif not name:
        raise ValueError("seend ring: server %r: empty name" % entry)
    weight = "1"
    if "/" in rest:
        # a Unix socket: "/path" or "/path:weight"
        path, colon, w = rest.rpartition(":")
        if colon and w.isascii() and w.isdigit():
            rest, weight = path, w
        address = rest
        default_name = rest + ":"       # twemproxy's name for "/path:weight"
    else:
        if rest.startswith("["):
            close = rest.find("]:")
            if close < 0:
                raise ValueError("seend ring: server %r: expected [v6]:port"
                                 % entry)
            host, tail = rest[:close + 1], rest[close + 2:].split(":")
        else:
            host, *tail = rest.split(":")
        if len(tail) == 2:
            port, weight = tail
        elif len(tail) == 1:
            port = tail[0]
        else:
            raise ValueError("seend ring: server %r: expected host:port, "
                             "host:port:weight or host:port:weight name"
                             % entry)
        address = host + ":" + port
        _parse_address(address)          # checks host and port
        default_name = host if int(port) == _DEFAULT_KETAMA_PORT else address
    if not (weight.isascii() and weight.isdigit()) or int(weight) < 1:
        raise ValueError("seend ring: server %r: the weight must be a "
                         "positive integer" % entry)
    return address, int(weight), (name or default_name).encode()


def fnv1a_64(key: bytes, signed_char: bool = True) -> int:
    """
    twemproxy's ``fnv1a_64`` of one key: 32-bit FNV-1a from the truncated
    64-bit basis, bytes >= 0x80 sign-extended unless ``signed_char`` is
    False; 0 for an empty key, as twemproxy hashes one.
    """
    if not key:
        return 0
    h = _FNV_BASIS
    if signed_char:
        for b in key:
            h = ((h ^ (b | 0xFFFFFF00 if b & 0x80 else b)) * _FNV_PRIME) \
                & _MASK32
    else:
        for b in key:
            h = ((h ^ b) * _FNV_PRIME) & _MASK32
    return h


# A byte's sign extension, one byte wide: 0xff for bytes >= 0x80.
_SIGN = bytes(0xFF if b & 0x80 else 0 for b in range(256))
_NO_SIGN = bytes(256)
_LANE = 8          # bytes a key's hash occupies in the wide integer


def _fnv_many(keys: Sequence[bytes], signed_char: bool = True) -> List[int]:
    """
    ``fnv1a_64`` of many keys at once.  The hashes of all keys are lanes of
    one big integer (8 bytes a key: a 32-bit hash times 0x1b3 three times
    stays inside its lane), so each step of FNV is three big-integer operations for the
    whole batch instead of three per key.  Keys are sorted longest first:
    the keys still being hashed at byte i are then the low lanes, and the
    finished ones are split off the top.
    """
    n = len(keys)
    if n < 32:
        return [fnv1a_64(k, signed_char) for k in keys]
    lens = list(map(len, keys))
    order = sorted(range(n), key=lens.__getitem__, reverse=True)
    longest = lens[order[0]]
    if longest == 0:
        return [0] * n
    skeys = list(map(keys.__getitem__, order))
    slens = list(map(lens.__getitem__, order))
    blob = b"".join(map(bytes.ljust, skeys, repeat(longest)))
    sign = _NO_SIGN if not signed_char or blob.isascii() else _SIGN
    # active[i]: keys longer than i (a prefix of skeys)
    ends = [0] * (longest + 1)
    for ln in slens:
        ends[ln] += 1
    active = [0] * (longest + 1)
    k = n
    for i in range(longest + 1):
        k -= ends[i]
        active[i] = k
    mask = int.from_bytes(b"\xff\xff\xff\xff\0\0\0\0" * n, "little")
    h = int.from_bytes(_FNV_BASIS.to_bytes(_LANE, "little") * n, "little")
    lanes = n
    done: List[bytes] = []        # finished lanes, highest lanes first
    empty = ends[0]               # keys of length 0 hash to 0
    if empty:
        lanes -= empty
        done.append(bytes(_LANE * empty))
        h &= (1 << (64 * lanes)) - 1
    for i in range(longest):
        k = active[i]
        if k < lanes:
            bits = 64 * k
            done.append((h >> bits).to_bytes(_LANE * (lanes - k), "little"))
            h &= (1 << bits) - 1
            lanes = k
        col = blob[i:i + longest * k:longest]
        x = bytearray(_LANE * k)
        x[0::_LANE] = col
        if sign is _SIGN:
            hi = col.translate(sign)
            x[1::_LANE] = hi
            x[2::_LANE] = hi
            x[3::_LANE] = hi
        h = (h ^ int.from_bytes(x, "little")) * _FNV_PRIME
        # a lane grows < 9 bits a step (0x1b3 < 2**9): cut it back to 32
        # bits every third step, before it could carry into the next lane;
        # the bits above 32 never reach the low 32 (xor and multiplication
        # carry only upwards), and only the low 32 are kept at the end
        if i % 3 == 2:
            h &= mask
    done.append(h.to_bytes(_LANE * lanes, "little"))
    wide = b"".join(reversed(done))
    # the low 4 bytes of each 8-byte lane, as native unsigned 32-bit ints
    packed = bytearray(4 * n)
    for j in range(4):
        packed[j::4] = wide[j::_LANE]
    low = array("I")
    low.frombytes(bytes(packed))
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover
        low.byteswap()
    out = [0] * n
    for j, idx in enumerate(order):
        out[idx] = low[j]
    return out


def ketama_points(names: Sequence[bytes],
                  weights: Sequence[int]) -> List[Tuple[int, int]]:
    """
    twemproxy's ketama continuum for servers with these names and weights,
    all live: sorted ``(point, server index)`` pairs.  Each server gets
    ``floor(weight / total * 40 * nservers) * 4`` points, computed in C
    float as twemproxy computes it (160 for equal weights), from the MD5 of
    ``name-0``, ``name-1``, ... (four little-endian 32-bit points a digest).
    """
    n = len(names)
    total = _f32(float(sum(weights)))
    points: List[Tuple[int, int]] = []
    for idx, (name, weight) in enumerate(zip(names, weights)):
        pct = _f32(_f32(float(weight)) / total)
        per = _f32(_f32(_f32(pct * _POINTS_PER_SERVER) / 4) * _f32(float(n)))
        count = int(math.floor(_f32(per + 0.0000000001))) * 4
        for p in range(count // _POINTS_PER_HASH):
            host = b"%s-%d" % (name, p)
            digest = hashlib.md5(host[:_MAX_HOSTLEN - 1]).digest()
            for x in range(_POINTS_PER_HASH):
                points.append((int.from_bytes(digest[4 * x:4 * x + 4],
                                              "little"), idx))
    # glibc's qsort is a merge sort, stable: equal points keep server order
    points.sort(key=lambda pt: pt[0])
    return points


class Ring:
    """
    Several seend nodes as one: each key goes to one node, chosen with
    twemproxy's ketama over fnv1a_64 (see the module's docstring), and a
    batch goes to every node at once.

    ``servers`` lists the nodes, in nutcracker.yml's order, each as
    ``host:port``, ``host:port:weight name``, ``[v6]:port`` or a Unix
    socket path.  ``token``, ``timeout``, ``connect_retry`` and
    ``ssl_context`` (TLS to every node's ``tls_listen``) are those of
    ``seend.Client``, for every node.  ``hash_tag`` (two characters, as
    twemproxy's ``hash_tag: "{}"``) hashes only the part of a key between
    them, when there is such a part.  ``signed_char=False`` hashes bytes
    >= 0x80 as a nutcracker built where C's char is unsigned does.

    Errors name the node: ``seend.Error`` and ``seend.ConnectionError``
    carry ``address``, the node's address, and say it in their text.  A
    lost node raises; nothing is ever sent again behind the caller's back.
    Not thread-safe: give each thread its own.
    """

    def __init__(self, servers: Sequence[str], token: Optional[str] = None,
                 timeout: float = 10.0, connect_retry: float = 0.0,
                 hash_tag: Optional[str] = None,
                 signed_char: bool = True,
                 ssl_context: Optional[Any] = None) -> None:
        if isinstance(servers, (str, bytes)) or not servers:
            raise ValueError("seend ring: give a non-empty list of servers")
        parsed = [parse_server(s) for s in servers]
        if hash_tag is not None and len(hash_tag.encode()) != 2:
            raise ValueError("seend ring: hash_tag must be two characters")
        self.servers = list(servers)
        #: the nodes' addresses, in the servers' order
        self.addresses = [a for a, _, _ in parsed]
        #: the names twemproxy hashes, in the servers' order
        self.names = [nm for _, _, nm in parsed]
        self.weights = [w for _, w, _ in parsed]
        self.token = token
        self.timeout = timeout
        self.hash_tag = hash_tag.encode() if hash_tag is not None else None
        self.signed_char = signed_char
        self.clients = [Client(a, token=token, timeout=timeout,
                               connect_retry=connect_retry,
                               ssl_context=ssl_context)
                        for a in self.addresses]
        pts = ketama_points(self.names, self.weights)
        self._points = [p for p, _ in pts]
        # the point past the last wraps to the first
        self._owner = [i for _, i in pts] + [pts[0][1]]

    # ---- where keys go ----

    def _key_bytes(self, keys: Sequence[Key]) -> List[bytes]:
        out = [k.encode() if isinstance(k, str) else bytes(k) for k in keys]
        tag = self.hash_tag
        if tag is not None:
            open_, close = tag[0:1], tag[1:2]
            for i, b in enumerate(out):
                s = b.find(open_)
                if s >= 0:
                    e = b.find(close, s + 1)
                    if e - s > 1:
                        out[i] = b[s + 1:e]
        return out

    def _route(self, keys: Sequence[Key]) -> List[int]:
        """The node index of every key."""
        if len(self.clients) == 1:
            return [0] * len(keys)      # twemproxy skips hashing too
        hashes = _fnv_many(self._key_bytes(keys), self.signed_char)
        points, owner = self._points, self._owner
        return [owner[i] for i in map(bisect.bisect_left, repeat(points),
                                      hashes)]

    def node_index(self, key: Key) -> int:
        """The position in ``servers`` of the node that holds ``key``."""
        return self._route([key])[0]

    def node_indexes(self, keys: Sequence[Key]) -> List[int]:
        """``node_index`` of every key, hashing the batch at once."""
        return self._route(list(keys))

    def node(self, key: Key) -> str:
        """The address of the node that holds ``key``."""
        return self.addresses[self.node_index(key)]

    # ---- connections ----

    def __enter__(self) -> "Ring":
        """``with seend.Client([...]) as ring:`` closes the nodes' connections
        at the end."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Closes every node's connection."""
        self.close()

    def __repr__(self) -> str:
        """``seend.Ring([servers])``."""
        return "seend.Ring(%r)" % self.servers

    def close(self) -> None:
        """Closes every node's connection; the next call opens them again."""
        for c in self.clients:
            c.close()

    def _fail_connect(self, e: ConnectionError, node: int) -> ConnectionError:
        e.address = self.addresses[node]  # type: ignore[attr-defined]
        e.node = node                     # type: ignore[attr-defined]
        return e

    def _exchange_all(self, jobs: Dict[int, Tuple[bytes, int]]
                      ) -> Tuple[Dict[int, bytes], Dict[int, Exception]]:
        """
        Writes each node's payload and reads its nreplies lines, all nodes
        at once through one selector.  Returns (replies by node, failures
        by node); a failed node's connection is closed, the others stay
        in step.  Every node is connected before anything is written.
        """
        for j in jobs:
            try:
                self.clients[j]._ready()
            except ConnectionError as e:
                raise self._fail_connect(e, j)
            except Error as e:           # AUTH refused: already names it
                e.address = self.addresses[j]  # type: ignore[attr-defined]
                raise
        sel = selectors.DefaultSelector()
        state: Dict[int, List] = {}
        data: Dict[int, bytes] = {}
        failed: Dict[int, Exception] = {}
        try:
            for j, (payload, n) in jobs.items():
                c = self.clients[j]
                s = c._sock
                assert s is not None
                view = memoryview(payload)
                sent = 0
                try:
                    sent = s.send(view[:_CHUNK])
                except _WOULD_BLOCK:
                    pass
                except OSError as e:
                    failed[j] = self._lost(j, n, e)
                    continue
                # [view, sent, newlines read, replies wanted]
                state[j] = [view, sent, 0, n]
                sel.register(s, selectors.EVENT_READ |
                             (selectors.EVENT_WRITE if sent < len(view)
                              else 0), j)
            while state:
                events = sel.select(self.timeout)
                if not events:
                    for j in list(state):
                        sel.unregister(self.clients[j]._sock)
                        self.clients[j].close()
                        failed[j] = TimeoutError(
                            "seend at %s: no answer within %ss"
                            % (self.addresses[j], self.timeout))
                        failed[j].replies = []  # type: ignore[attr-defined]
                        del state[j]
                    break
                for key, mask in events:
                    j = key.data
                    st = state[j]
                    c = self.clients[j]
                    s = c._sock
                    try:
                        if mask & selectors.EVENT_WRITE and st[1] < len(st[0]):
                            try:
                                st[1] += s.send(st[0][st[1]:st[1] + _CHUNK])
                            except _WOULD_BLOCK:
                                pass
                            if st[1] >= len(st[0]):
                                sel.modify(s, selectors.EVENT_READ, j)
                        if mask & selectors.EVENT_READ:
                            try:
                                chunk = _recv(s)
                            except _WOULD_BLOCK:
                                continue
                            if not chunk:
                                raise OSError("connection closed by the server")
                            c._buf += chunk
                            st[2] += chunk.count(b"\n")
                    except OSError as e:
                        sel.unregister(s)
                        failed[j] = self._lost(j, st[3], e)
                        del state[j]
                        continue
                    if st[2] >= st[3]:
                        sel.unregister(s)
                        data[j] = _take_lines(c._buf, st[3], st[2])
                        del state[j]
        except BaseException:
            # interrupted with replies owed: those connections are out of step
            for j in state:
                self.clients[j].close()
            raise
        finally:
            sel.close()
        return data, failed

    def _lost(self, j: int, n: int, e: OSError) -> ConnectionError:
        """The ConnectionError of node j, lost with n replies owed."""
        c = self.clients[j]
        lines = bytes(c._buf).split(b"\r\n")[:-1]
        c.close()
        err = ConnectionError("seend at %s: connection lost with %d of %d "
                              "requests unanswered: %s"
                              % (self.addresses[j], max(n - len(lines), 0), n,
                                 e))
        err.raw = lines  # type: ignore[attr-defined]
        err.__cause__ = e
        return err

    # ---- SEEN / CHECK ----

    def _batch(self, verb: bytes, keys: Sequence[Key], filter: Optional[str],
               batch: int) -> List[bool]:
        if batch < 1:
            raise ValueError("seend: batch must be at least 1")
        prefix = verb + b" " + (_encode(filter, "filter name") + b" "
                                if filter is not None else b"")
        nodes = len(self.clients)
        out: List[bool] = []
        for start in range(0, len(keys), batch):
            part = keys[start:start + batch]
            route = self._route(part)
            per: List[List[Key]] = [[] for _ in range(nodes)]
            appends = [p.append for p in per]
            for k, j in zip(part, route):
                appends[j](k)
            jobs: Dict[int, Tuple[bytes, int]] = {}
            try:
                for j in range(nodes):
                    if per[j]:
                        jobs[j] = (Client._payload(prefix, per[j]),
                                   len(per[j]))
            except ValueError:
                # which key, in the caller's numbering
                Client._payload(prefix, part)
                raise
            data, failed = self._exchange_all(jobs)
            answers: List[List[Optional[bool]]] = [[] for _ in range(nodes)]
            first_err: Optional[Tuple[int, int, str]] = None
            for j, raw in data.items():
                try:
                    answers[j] = Client._answers(raw, jobs[j][1], 0, [])
                except Error as e:
                    answers[j] = e.replies or []
                    g = _global_index(route, j, e.index or 0)
                    if first_err is None or g < first_err[0]:
                        first_err = (g, j, e.reason)
            for j, e in failed.items():
                got: List[Optional[bool]] = []
                for r in getattr(e, "raw", [])[:jobs[j][1]]:
                    got.append(True if r == b"1" else False if r == b"0"
                               else None)
                answers[j] = got
            merged = _merge(route, answers)
            if failed:
                j = min(failed, key=lambda x: _global_index(
                    route, x, len(answers[x])))
                e = failed[j]
                prefix_ok: List[bool] = []
                for a in merged:
                    if a is None:
                        break
                    prefix_ok.append(a)
                e.replies = out + prefix_ok  # type: ignore[attr-defined]
                e.answers = list(out) + merged  # type: ignore[attr-defined]
                e.address = self.addresses[j]  # type: ignore[attr-defined]
                e.node = j  # type: ignore[attr-defined]
                e.failed = {self.addresses[x]: failed[x]  # type: ignore
                            for x in failed}
                raise e
            if first_err is not None:
                g, j, reason = first_err
                err = Error("seend at %s: %s" % (self.addresses[j], reason),
                            start + g, list(out) + merged)
                err.reason = reason
                err.address = self.addresses[j]  # type: ignore[attr-defined]
                err.node = j  # type: ignore[attr-defined]
                raise err
            out.extend(merged)  # type: ignore[arg-type]
        return out

    def seen(self, key: Key, filter: Optional[str] = None) -> bool:
        """
        Asks the key's node and records: True if ``key`` was seen before,
        False if it is new (recorded now).  ``filter`` names a filter, which
        every node must have; the key alone chooses the node.
        """
        return self._batch(b"SEEN", [key], filter, 1)[0]

    def seen_many(self, keys: Sequence[Key], filter: Optional[str] = None,
                  batch: int = 30000) -> List[bool]:
        """
        ``seen`` for every key, answers in the order of ``keys``.  Each
        ``batch`` keys are split by node and sent to all their nodes at
        once: one round trip (the slowest node's) per batch.  An error
        reply raises ``Error`` (``index``: the first key, in ``keys``'
        order, that failed; ``replies``: every answer of the keys sent,
        None where one failed; ``address``: the node).  A lost node raises
        ``ConnectionError`` naming it, after the other nodes' answers to
        the batch are in: ``replies`` holds the answers of the first keys
        up to the first one unanswered, ``answers`` every answer that came
        (None for the others), and nothing is sent again.
        """
        return self._batch(b"SEEN", keys if isinstance(keys, list)
                           else list(keys), filter, batch)

    def check(self, key: Key, filter: Optional[str] = None) -> bool:
        """True if ``key``'s node has seen it; records nothing."""
        return self._batch(b"CHECK", [key], filter, 1)[0]

    def check_many(self, keys: Sequence[Key], filter: Optional[str] = None,
                   batch: int = 30000) -> List[bool]:
        """``check`` for every key, sent to the nodes like ``seen_many``."""
        return self._batch(b"CHECK", keys if isinstance(keys, list)
                           else list(keys), filter, batch)

    def forget(self, key: Key, filter: Optional[str] = None) -> bool:
        """
        Forgets ``key`` on its node: True if the node's filter held it,
        False if not.  Only a filter of ``type = cuckoo`` forgets (see
        ``Client.forget``); forget only keys that were recorded.
        """
        return self._batch(b"FORGET", [key], filter, 1)[0]

    def forget_many(self, keys: Sequence[Key], filter: Optional[str] = None,
                    batch: int = 30000) -> List[bool]:
        """``forget`` for every key, sent to the nodes like ``seen_many``."""
        return self._batch(b"FORGET", keys if isinstance(keys, list)
                           else list(keys), filter, batch)

    # ---- every node ----

    def _each(self, call):
        out = {}
        for j, c in enumerate(self.clients):
            try:
                out[self.addresses[j]] = call(c)
            except Error as e:
                err = Error("seend at %s: %s" % (self.addresses[j], e.reason))
                err.reason = e.reason
                err.address = self.addresses[j]  # type: ignore[attr-defined]
                raise err from e
            except ConnectionError as e:
                raise self._fail_connect(e, j)
        return out

    def ping(self) -> bool:
        """True if every node answers PONG; raises naming the first that
        does not."""
        self._each(Client.ping)
        return True

    def info(self, filter: Optional[str] = None) -> Dict[str, Dict[str, Number]]:
        """Each node's ``info(filter)``, by address."""
        return self._each(lambda c: c.info(filter))

    def filters(self) -> Dict[str, Dict[str, Dict[str, Number]]]:
        """Each node's ``filters()``, by address."""
        return self._each(Client.filters)

    def save(self, filter: Optional[str] = None) -> None:
        """``save(filter)`` on every node, one after the other."""
        self._each(lambda c: c.save(filter))


def _take_lines(buf: bytearray, n: int, got: int) -> bytes:
    """Takes the first n reply lines out of buf (which holds got lines)."""
    if got == n and buf.endswith(b"\n"):
        data = bytes(buf)
        buf.clear()
        return data
    pos = -1
    for _ in range(n):
        pos = buf.index(b"\n", pos + 1)
    data = bytes(buf[:pos + 1])
    del buf[:pos + 1]
    return data


def _merge(route: List[int], answers: List[List[Optional[bool]]]
           ) -> List[Optional[bool]]:
    """Each node's answers back into the keys' order; None past a node's
    last answer."""
    its = [iter(a) for a in answers]
    nxt = [it.__next__ for it in its]
    short = any(len(a) < route.count(j) for j, a in enumerate(answers))
    if not short:
        return [f() for f in map(nxt.__getitem__, route)]
    return [next(its[j], None) for j in route]


def _global_index(route: List[int], node: int, local: int) -> int:
    """The position in the batch of the local-th key sent to node (the
    batch's length if there is none)."""
    seen = -1
    for i, j in enumerate(route):
        if j == node:
            seen += 1
            if seen == local:
                return i
    return len(route)
