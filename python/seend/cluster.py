"""
seend.cluster - one client over a seend cluster ([cluster] enabled = on),
each key sent to the node that owns its slot, as Redis Cluster clients do.

    import seend
    c = seend.Client("10.0.0.1:6874", cluster=True)
    c.seen_many(urls)           # answers in the order of urls

A ``seend.Client`` follows the cluster by itself: the first time a node
answers ``ERR MOVED <slot> <host>:<port>`` (the key's slot is another
node's), the client reads the slot table with the line protocol's
``CLUSTER SLOTS``, resends the redirected keys to their owners, and from
then on sends every key straight to its owner, through a ``Cluster`` kept
in ``Client.cluster``.  ``cluster=True`` reads the table before the first
request instead, which saves that first redirection.

A key's slot is Redis Cluster's: CRC16/XMODEM of the key as sent (or of
what is between its first ``{`` and the first ``}`` after it, when that is
not empty), modulo 16384.  The key of ``SEEN``, ``CHECK`` and ``FORGET`` is
the URL, with or without a filter name; so a cluster computes slots on
URLs as they are sent, before the server normalises them: two spellings
of one URL may land on two nodes (normalise in the crawler).

Only keys that a node refused without doing anything are sent again
(``MOVED``, ``TRYAGAIN``): a redirected ``SEEN`` was not recorded, so
sending it to the owner reports a new URL once.  ``CLUSTERDOWN`` (a slot
no node serves) and every other error are raised as ``seend.Error``,
never answered "new"; a lost node raises ``seend.ConnectionError`` and
nothing of it is sent again, as for one ``Client``.  ``ASK`` (a slot on
its way to another node) is not followed yet: it is raised as
``seend.Error`` too.  Keys go to primaries only; a replica's address
serves as a seed.
"""
import binascii
import ssl
import time
from array import array
from typing import Dict, List, Optional, Sequence, Tuple

from . import Client, ConnectionError, Error, Key, _encode, _parse_address
from .ring import Ring

__all__ = ["Cluster", "keyslot", "keyslots", "SLOTS"]

#: the slots of a cluster, as Redis Cluster's
SLOTS = 16384
_NONE = 0xFFFF                  # the owner of a slot nobody serves
# redirections followed for one key before giving up: a table that keeps
# changing under the client, or nodes that disagree for good
_MAX_REDIRECTS = 16


def keyslot(key: Key) -> int:
    """
    The slot of ``key``: CRC16/XMODEM of its bytes (UTF-8 for a str), or of
    the part between the first ``{`` and the next ``}`` when that part is
    not empty, modulo 16384 (Redis's keyHashSlot; ``CLUSTER KEYSLOT``).
    """
    b = key.encode() if isinstance(key, str) else bytes(key)
    s = b.find(b"{")
    if s >= 0:
        e = b.find(b"}", s + 1)
        if e > s + 1:
            b = b[s + 1:e]
    return binascii.crc_hqx(b, 0) & (SLOTS - 1)


def keyslots(keys: Sequence[Key]) -> List[int]:
    """``keyslot`` of every key."""
    crc = binascii.crc_hqx
    out = []
    append = out.append
    for k in keys:
        b = k.encode() if isinstance(k, str) else k
        s = b.find(b"{")
        if s >= 0:
            e = b.find(b"}", s + 1)
            if e > s + 1:
                b = b[s + 1:e]
        append(crc(b, 0) & (SLOTS - 1))
    return out


def _join(host: str, port: int) -> str:
    """An address for seend.Client: host:port, [v6]:port."""
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def _node_address(text: str, asked: str) -> str:
    """
    '<host>:<port>' as the server writes it (an IPv6 host without
    brackets; an empty host for a node that announces none, reached at the
    address the client asked) -> an address for seend.Client.
    """
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()):
        raise Error("unexpected node address %r" % text)
    host = host.strip("[]")
    if not host:
        fam, addr = _parse_address(asked)
        host = addr[0] if isinstance(addr, tuple) else "127.0.0.1"
    return _join(host, int(port))


def _canonical(address: str) -> str:
    """The address a node is known by: host:port for TCP (whatever scheme
    or token it was given with), the path of a Unix socket."""
    fam, addr = _parse_address(address)
    if isinstance(addr, tuple):
        return _join(addr[0], addr[1])
    return str(addr)


class Cluster(Ring):
    """
    The nodes of a seend cluster as one: each key goes to the primary that
    owns its slot, a batch to every owner at once, answers in the keys'
    order.  ``seend.Client`` makes one when it meets a cluster (see the
    module's docstring); it can also be made from seed addresses:
    ``seend.cluster.Cluster(["10.0.0.1:6874", "10.0.0.2:6874"])``.

    ``token``, ``timeout``, ``connect_retry`` and ``ssl_context`` are
    ``seend.Client``'s, for every node.

    A connection per node, opened when a key first goes there.  The slot
    table is read (line ``CLUSTER SLOTS``) before the first request, and
    again after a redirection.  ``seen``, ``check``, ``forget`` and their
    ``_many`` are ``seend.Ring``'s: answers in the keys' order, an error
    names its key (``index``) and node (``address``), a lost node raises
    ``seend.ConnectionError`` naming it with the answers that came
    (``replies``, ``answers``), and nothing is sent twice.  ``ping``,
    ``info``, ``filters`` and ``save`` ask every known node (by address);
    ``node(key)`` is the address of the key's owner, ``slots()`` the
    table.  Not thread-safe.
    """

    def __init__(self, seeds: Sequence[str], token: Optional[str] = None,
                 timeout: float = 10.0, connect_retry: float = 0.0,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        # Ring's I/O (_exchange_all, _lost, ...) is reused: it needs
        # clients, addresses and timeout; the ketama ring is not built
        if isinstance(seeds, (str, bytes)) or not seeds:
            raise ValueError("seend cluster: give a non-empty list of "
                             "seed addresses")
        self.servers = list(seeds)
        self.token = token
        self.timeout = timeout
        self.connect_retry = connect_retry
        self.ssl_context = ssl_context
        self.hash_tag = None
        self.signed_char = True
        #: the known nodes' addresses (host:port), in the order met
        self.addresses: List[str] = []
        self.clients: List[Client] = []
        self._index: Dict[str, int] = {}
        # slot -> index in clients, _NONE while unknown or unserved
        self._slot_owner = array("H", [_NONE]) * SLOTS
        self._table = False              # the table has been read
        self.redirections = 0            # MOVED followed, for the curious
        for s in seeds:
            self._node(s)

    def _adopt(self, c: Client) -> int:
        """Takes c as the connection to its address."""
        name = _canonical(c.address)
        if name in self._index:
            return self._index[name]
        self._index[name] = len(self.clients)
        self.addresses.append(name)
        self.clients.append(c)
        return self._index[name]

    def _node(self, address: str) -> int:
        """The index of the node at address, connected to when first used."""
        name = _canonical(address)
        j = self._index.get(name)
        if j is None:
            j = self._adopt(Client(address, token=self.token,
                                   timeout=self.timeout,
                                   connect_retry=self.connect_retry,
                                   ssl_context=self.ssl_context,
                                   cluster=False))
        return j

    def __repr__(self) -> str:
        """``seend.Cluster([seeds])``."""
        return "seend.Cluster(%r)" % self.servers

    # ---- the slot table ----

    def refresh(self, first: Optional[int] = None) -> None:
        """
        Reads the slot table (line ``CLUSTER SLOTS``) from node ``first``,
        else from the known nodes in turn, the first that answers.  A node
        that answers ``ERR`` (not in cluster mode) raises ``seend.Error``.
        """
        order = list(range(len(self.clients)))
        if first is not None:
            order.remove(first)
            order.insert(0, first)
        last: Optional[Exception] = None
        for j in order:
            try:
                lines = self.clients[j]._lines(b"CLUSTER SLOTS\n")
            except ConnectionError as e:
                last = e
                continue
            except Error as e:
                err = Error("seend at %s: CLUSTER SLOTS: %s"
                            % (self.addresses[j], e.reason))
                err.reason = e.reason
                err.address = self.addresses[j]  # type: ignore[attr-defined]
                raise err from e
            self._load(lines, self.addresses[j])
            return
        assert last is not None
        raise last

    def _load(self, lines: List[str], asked: str) -> None:
        """The table from CLUSTER SLOTS' lines: "<first> <last> <host>:<port>
        [<replica> ...]"."""
        owner = array("H", [_NONE]) * SLOTS
        for line in lines:
            f = line.split()
            try:
                a, b = int(f[0]), int(f[1])
                addr = _node_address(f[2], asked)
            except (IndexError, ValueError):
                raise Error("seend at %s: unexpected CLUSTER SLOTS line %r"
                            % (asked, line))
            if not 0 <= a <= b < SLOTS:
                raise Error("seend at %s: CLUSTER SLOTS: bad range %r"
                            % (asked, line))
            j = self._node(addr)
            owner[a:b + 1] = array("H", [j]) * (b - a + 1)
        self._slot_owner = owner
        self._table = True

    def slots(self) -> Dict[str, List[Tuple[int, int]]]:
        """The table as it is known: owner address -> its slot ranges."""
        if not self._table:
            self.refresh()
        out: Dict[str, List[Tuple[int, int]]] = {}
        owner = self._slot_owner
        a = 0
        while a < SLOTS:
            b = a
            while b + 1 < SLOTS and owner[b + 1] == owner[a]:
                b += 1
            if owner[a] != _NONE:
                out.setdefault(self.addresses[owner[a]], []).append((a, b))
            a = b + 1
        return out

    def _route(self, keys: Sequence[Key]) -> List[int]:
        """The node of every key by the table; an unserved slot goes to the
        first node, which answers MOVED or CLUSTERDOWN."""
        if not self._table:
            self.refresh()
        owner = self._slot_owner
        return [0 if j == _NONE else j
                for j in map(owner.__getitem__, keyslots(keys))]

    # ---- SEEN / CHECK / FORGET ----

    def _batch(self, verb: bytes, keys: Sequence[Key], filter: Optional[str],
               batch: int) -> List[bool]:
        if batch < 1:
            raise ValueError("seend: batch must be at least 1")
        prefix = verb + b" " + (_encode(filter, "filter name") + b" "
                                if filter is not None else b"")
        out: List[bool] = []
        for start in range(0, len(keys), batch):
            part = keys[start:start + batch]
            Client._payload(prefix, part)          # refuses bad keys first
            out.extend(self._part(prefix, part, start, out))
        return out

    def _resume(self, prefix: bytes, part: Sequence[Key], lines: List[bytes],
                node: int, start: int, out: List[bool]) -> List[bool]:
        """Finishes a batch that node answered with lines (some MOVED): the
        redirected keys go to their owners."""
        return self._part(prefix, part, start, out, (node, lines))

    def _part(self, prefix: bytes, part: Sequence[Key], start: int,
              out: List[bool],
              first: Optional[Tuple[int, List[bytes]]] = None
              ) -> List[bool]:
        """
        One batch: sends each key to its owner, follows MOVED and TRYAGAIN
        until every key is answered or failed, then returns the answers in
        order or raises (the first failed key's Error, or the lost node's
        ConnectionError).
        """
        n = len(part)
        answers: List[Optional[bool]] = [None] * n
        errors: Dict[int, Tuple[int, str]] = {}   # key -> (node, reason)
        todo: Dict[int, List[int]] = {}           # node -> keys to send
        hops = [0] * n
        if first is None:
            for i, j in enumerate(self._route(part)):
                todo.setdefault(j, []).append(i)
        else:
            moved, wait = self._sort(first[0], first[1], list(range(n)),
                                     answers, errors, todo, hops)
            self._after(moved, wait, todo, hops, errors)
        delay = 0.01
        while todo:
            jobs = {j: (Client._payload(prefix, [part[i] for i in idx]),
                        len(idx)) for j, idx in todo.items()}
            try:
                data, failed = self._exchange_all(jobs)
            except ConnectionError as e:
                # a node could not be reached: nothing of this round went
                # out
                raise self._lost_part(e, answers, out, start) from None
            nxt: Dict[int, List[int]] = {}
            moved = wait = 0
            for j, raw in data.items():
                try:
                    got = Client._answers(raw, len(todo[j]), 0, [])
                except Error:
                    lines = raw.split(b"\r\n")[:-1]
                    m, w = self._sort(j, lines, todo[j], answers, errors,
                                      nxt, hops)
                    moved += m
                    wait += w
                    continue
                for i, a in zip(todo[j], got):
                    answers[i] = a
            if failed:
                j = min(failed, key=lambda x: todo[x][0])
                e = failed[j]
                for r, i in zip(getattr(e, "raw", []), todo[j]):
                    if r in (b"0", b"1"):
                        answers[i] = r == b"1"
                e.address = self.addresses[j]  # type: ignore[attr-defined]
                e.node = j                     # type: ignore[attr-defined]
                raise self._lost_part(e, answers, out, start)
            todo = nxt
            self._after(moved, wait, todo, hops, errors)
            if wait:
                # a slot in the middle of a move: back off a little
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        if errors:
            i = min(errors)
            j, reason = errors[i]
            err = Error("seend at %s: %s" % (self.addresses[j], reason),
                        start + i, list(out) + answers)
            err.reason = reason
            err.address = self.addresses[j]  # type: ignore[attr-defined]
            err.node = j                     # type: ignore[attr-defined]
            raise err
        return answers  # type: ignore[return-value]

    def _sort(self, j: int, lines: List[bytes], idx: List[int],
              answers: List[Optional[bool]],
              errors: Dict[int, Tuple[int, str]], nxt: Dict[int, List[int]],
              hops: List[int]) -> Tuple[int, int]:
        """
        Node j's reply lines to the keys idx: answers, keys to send again
        (MOVED: to the node named, whose slot is noted in the table;
        TRYAGAIN: to the same owner) and errors.  Returns how many were
        moved and how many must wait.
        """
        moved = wait = 0
        for i, x in zip(idx, lines):
            if x == b"0" or x == b"1":
                answers[i] = x == b"1"
                continue
            text = x.decode(errors="replace")
            reason = text[4:] if text.startswith("ERR ") else \
                "unexpected reply %r" % text
            f = reason.split()
            if len(f) == 3 and f[0] == "MOVED" and f[1].isdigit() and \
                    int(f[1]) < SLOTS:
                try:
                    to = self._node(_node_address(f[2], self.addresses[j]))
                except (Error, ValueError):
                    errors[i] = (j, reason)
                    continue
                self._slot_owner[int(f[1])] = to
                nxt.setdefault(to, []).append(i)
                hops[i] += 1
                moved += 1
            elif f and f[0] == "TRYAGAIN":
                nxt.setdefault(j, []).append(i)
                hops[i] += 1
                wait += 1
            else:
                errors[i] = (j, reason)
        return moved, wait

    def _after(self, moved: int, wait: int, todo: Dict[int, List[int]],
               hops: List[int], errors: Dict[int, Tuple[int, str]]) -> None:
        """After a round: a redirection makes the table be read again (the
        map changed: other slots likely moved too); a key redirected too
        often fails."""
        if moved:
            self.redirections += moved
            first = next(iter(todo))
            self.refresh(first)
        for j in list(todo):
            keep = []
            for i in todo[j]:
                if hops[i] > _MAX_REDIRECTS:
                    errors[i] = (j, "too many redirections (%d): the nodes "
                                 "do not agree on the slot's owner"
                                 % hops[i])
                else:
                    keep.append(i)
            if keep:
                todo[j] = keep
            else:
                del todo[j]

    def _lost_part(self, e: ConnectionError, answers: List[Optional[bool]],
                   out: List[bool], start: int) -> ConnectionError:
        """e with the batch's answers: replies up to the first key
        unanswered, answers all (None where none came)."""
        prefix_ok: List[bool] = []
        for a in answers:
            if a is None:
                break
            prefix_ok.append(a)
        e.replies = list(out) + prefix_ok
        e.answers = list(out) + answers  # type: ignore[attr-defined]
        return e

