"""One client connection of the decision server: HTTP/1.1 read with h11 on the event loop.

Every connection is read by the one event-loop thread; a decision is handed
to the :class:`~charter.runtime.serve.decisions.Decider`'s pool only once its
request is complete. So a client that sends half a request, or nothing, or
never reads its answer, costs a buffer and a timer, never a worker thread.

What bounds a connection (:class:`Limits`):

* the whole of one request (line, headers, body) must arrive within
  ``read_timeout`` seconds of its first byte (of the connection, for the
  first request); a keep-alive connection with no request in progress is
  closed after ``idle_timeout``;
* the request head may not exceed ``head_bytes`` (h11 refuses it while it is
  still arriving) nor hold more than ``max_headers`` headers, and the body
  ``body_bytes``, both as announced (``Content-Length``) and as read (a
  chunked body); the bodies held by all connections at once may not exceed
  ``buffer_bytes`` (a request that would pass it is refused);
* at most ``max_connections`` connections are open, at most ``max_per_peer``
  from one address. When a new connection would pass a bound, the open one
  that has done least for longest makes room (:class:`Admission`): first a
  connection that has not yet completed a request, oldest first; then one in
  the middle of a later request; then an idle keep-alive one. A connection
  whose request is being decided or answered is never closed for another.

Requests on one connection are answered in the order they arrived: the next
one is not parsed until the answer to the last is written, and once a head's
worth of it is waiting, reading pauses, so a client that sends without
reading its answers fills its own buffers.

A request that cannot be read or is refused is answered by the
:class:`Router` (a hook route answers it with the client's deny, never with a
bare HTTP error that a client takes as "no objection"), then the connection
is closed after the answer: the server stops sending, drains what the client
still sends for at most ``linger`` seconds (so the client reads its answer
rather than a reset), and closes.
"""

from __future__ import annotations

import asyncio
import enum
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import h11

__all__ = ["Admission", "Connection", "Head", "Limits", "Reply", "Request", "Router"]

# How much of a request's first bytes is kept to tell its route when its
# head cannot be read (it is too long, or malformed).
_PEEK_BYTES = 2048


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds every connection is held to (see the module's docstring)."""

    read_timeout: float = 10.0
    idle_timeout: float = 30.0
    head_bytes: int = 32 * 1024
    max_headers: int = 100
    body_bytes: int = 8 * 1024 * 1024
    max_connections: int = 1024
    max_per_peer: int = 1024
    linger: float = 2.0
    # request bodies held at once, over every connection (each may hold
    # body_bytes: without this, a thousand slow ones hold gigabytes)
    buffer_bytes: int = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Head:
    """A request's line and headers, before its body is read."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]  # names in lower case
    peer: str

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k == name]


@dataclass(frozen=True, slots=True)
class Request:
    head: Head
    body: bytes


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    close: bool = False


class Router(Protocol):
    """What the server answers; every method but :meth:`answer` runs on the
    event loop and must be quick."""

    def before_body(self, head: Head) -> Reply | None:
        """A refusal of the request before its body is read (route, host,
        token), or None to read on. A refusal closes the connection."""
        ...

    def too_large(self, head: Head) -> Reply: ...

    def overloaded(self, head: Head) -> Reply:
        """The answer to a request whose body would pass the server's bound
        on request data held at once."""
        ...

    def too_slow(self, head: Head) -> Reply | None:
        """The answer to a request whose head arrived but not its body within
        the read deadline; None to just close."""
        ...

    def unreadable(self, target: str | None, why: str, peer: str) -> Reply:
        """The answer to a request whose head could not be read; ``target``
        is its request target when it could be told from the first bytes."""
        ...

    async def answer(self, request: Request) -> Reply: ...

    def failed(self, request: Request, exc: BaseException) -> Reply:
        """The answer when :meth:`answer` raised (a bug): fail closed."""
        ...


class _State(enum.Enum):
    FRESH = "fresh"  # no byte of a first request yet
    READING = "reading"  # a request is arriving
    BUSY = "busy"  # a request is complete; its answer is being worked out or written
    IDLE = "idle"  # keep-alive, between requests
    CLOSING = "closing"  # answered for the last time; draining, then closing
    CLOSED = "closed"


class Admission:
    """The open connections, and who makes room when a bound is reached."""

    def __init__(self, limits: Limits, on_count: Callable[[int], None] | None = None) -> None:
        """``on_count(n)``: told each time the number of open connections changes."""
        self.limits = limits
        self.open: dict[Connection, None] = {}
        self._by_peer: dict[str, dict[Connection, None]] = {}
        self.buffered = 0  # request body bytes held by every connection
        self._on_count = on_count

    def admit(self, conn: Connection) -> bool:
        """Count ``conn`` in, making room if a bound is reached; False when
        no room can be made (every connection is answering a request)."""
        peers = self._by_peer.get(conn.peer, {})
        if len(peers) >= self.limits.max_per_peer and not self._make_room(peers):
            return False
        if len(self.open) >= self.limits.max_connections and not self._make_room(self.open):
            return False
        self.open[conn] = None
        self._by_peer.setdefault(conn.peer, {})[conn] = None
        if self._on_count is not None:
            self._on_count(len(self.open))
        return True

    def leave(self, conn: Connection) -> None:
        if conn not in self.open:
            return
        del self.open[conn]
        peers = self._by_peer.get(conn.peer)
        if peers is not None:
            peers.pop(conn, None)
            if not peers:
                del self._by_peer[conn.peer]
        if self._on_count is not None:
            self._on_count(len(self.open))

    def _make_room(self, among: dict[Connection, None]) -> bool:
        victim: Connection | None = None
        best: tuple[int, float] | None = None
        for conn in among:
            rank = conn.eviction_rank()
            if rank is None:
                continue
            key = (rank, conn.since)
            if best is None or key < best:
                victim, best = conn, key
        if victim is None:
            return False
        self.leave(victim)
        victim.evict()
        return True


class Connection(asyncio.Protocol):
    """One client connection; see the module's docstring."""

    def __init__(self, router: Router, admission: Admission) -> None:
        self.router = router
        self.admission = admission
        self.limits = admission.limits
        self.peer = "?"
        self.state = _State.FRESH
        self.since = time.monotonic()
        self.served = 0
        self._transport: asyncio.Transport | None = None
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.head_bytes)
        self._timer: asyncio.TimerHandle | None = None
        self._head: Head | None = None
        self._body = bytearray()
        self._peek = bytearray()
        self._peek_valid = True
        self._writable = True
        self._keep_alive = True
        self._early = 0  # bytes of a next request received while answering
        self._held = 0  # body bytes of this request counted in admission.buffered
        self._task: asyncio.Task[None] | None = None

    # -- asyncio's side -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        if not self.admission.admit(self):
            self.state = _State.CLOSED
            transport.abort()
            return
        self._arm(self.limits.read_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = _State.CLOSED
        self._disarm()
        self._release()
        self.admission.leave(self)

    def _release(self) -> None:
        self.admission.buffered -= self._held
        self._held = 0

    def data_received(self, data: bytes) -> None:
        if self.state in (_State.CLOSING, _State.CLOSED):
            return  # drained and dropped
        if self.state is _State.BUSY:
            # the next request, sent before this one's answer: kept for
            # after it, and reading pauses once a head's worth is waiting
            self._h11.receive_data(data)
            self._early += len(data)
            if self._early > self.limits.head_bytes and self._transport is not None:
                self._transport.pause_reading()
            return
        if self.state in (_State.FRESH, _State.IDLE):
            if self.state is _State.IDLE:
                self.since = time.monotonic()
                self._arm(self.limits.read_timeout)
            self.state = _State.READING
        if self._peek_valid and len(self._peek) < _PEEK_BYTES:
            self._peek += data[: _PEEK_BYTES - len(self._peek)]
        self._h11.receive_data(data)
        self._pump()

    def eof_received(self) -> bool | None:
        if self.state is _State.BUSY:
            # the client has sent all it will: it still gets its answer,
            # then the connection closes
            self._h11.receive_data(b"")
            return True
        if self.state in (_State.READING, _State.FRESH, _State.IDLE):
            self._h11.receive_data(b"")
            self._pump()
        return None  # let the transport close (after any answer being written)

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        if self.state is _State.IDLE and self._transport is not None:
            self._transport.resume_reading()

    # -- admission --------------------------------------------------------------------------

    def eviction_rank(self) -> int | None:
        """Lower goes first when room is needed; None: never (answering)."""
        if self.state is _State.CLOSING:
            return -1
        if self.state is _State.FRESH or (self.state is _State.READING and self.served == 0):
            return 0
        if self.state is _State.READING:
            return 1
        if self.state is _State.IDLE:
            return 2
        return None

    def evict(self) -> None:
        self.state = _State.CLOSED
        self._disarm()
        self._release()
        if self._transport is not None:
            self._transport.abort()

    # -- reading ------------------------------------------------------------------------------

    def _pump(self) -> None:
        while self.state is _State.READING:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                self._unreadable(exc)
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self._got_head(event)
            elif isinstance(event, h11.Data):
                assert self._head is not None
                self._body += event.data
                self._held += len(event.data)
                self.admission.buffered += len(event.data)
                if len(self._body) > self.limits.body_bytes:
                    self._close_with(self.router.too_large(self._head))
                elif self.admission.buffered > self.limits.buffer_bytes:
                    self._close_with(self.router.overloaded(self._head))
            elif isinstance(event, h11.EndOfMessage):
                self._complete()
            elif isinstance(event, h11.ConnectionClosed):
                self._close()

    def _got_head(self, event: h11.Request) -> None:
        # h11 bounds a head still arriving; one that arrived whole in one
        # read is measured here
        size = len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers)
        if size > self.limits.head_bytes:
            self._unreadable(h11.RemoteProtocolError("too long", error_status_hint=431), event)
            return
        if len(event.headers) > self.limits.max_headers:
            why = f"more than {self.limits.max_headers} headers"
            self._unreadable(h11.RemoteProtocolError(why), event)
            return
        target = event.target.decode("latin-1")
        path, _, query = target.partition("?")
        head = Head(
            event.method.decode("latin-1"),
            path,
            query,
            tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers),
            self.peer,
        )
        self._head = head
        self._body = bytearray()
        self._peek = bytearray()
        self._peek_valid = False
        # HTTP/1.1 keeps the connection unless the client says close; 1.0 closes
        tokens = {t.strip().lower() for v in head.header("connection") for t in v.split(",")}
        self._keep_alive = event.http_version == b"1.1" and "close" not in tokens
        refusal = self.router.before_body(head)
        if refusal is not None:
            self._close_with(refusal)
            return
        length = head.header("content-length")
        if length and length[0].isdigit() and int(length[0]) > self.limits.body_bytes:
            self._close_with(self.router.too_large(head))
            return
        if self._h11.they_are_waiting_for_100_continue:
            self._write(self._h11.send(h11.InformationalResponse(status_code=100, headers=[])))

    def _unreadable(self, exc: h11.RemoteProtocolError, request: h11.Request | None = None) -> None:
        target: str | None = None
        if request is not None:
            target = request.target.decode("latin-1")
        elif self._peek_valid and self._head is None:
            line = bytes(self._peek).split(b"\r\n", 1)[0].split(b"\n", 1)[0]
            parts = line.split(b" ")
            if len(parts) >= 2 and parts[0].isalpha():
                target = parts[1].decode("latin-1")
        elif self._head is not None:
            target = self._head.path + ("?" + self._head.query if self._head.query else "")
        why = str(exc) or "a malformed request"
        if getattr(exc, "error_status_hint", 400) == 431:
            why = f"the request's head is larger than {self.limits.head_bytes} bytes"
        self._close_with(self.router.unreadable(target, why, self.peer))

    def _complete(self) -> None:
        assert self._head is not None
        request = Request(self._head, bytes(self._body))
        self._body = bytearray()
        self.state = _State.BUSY
        self._early = 0
        self._disarm()
        self._task = asyncio.get_running_loop().create_task(self._answer(request))

    async def _answer(self, request: Request) -> None:
        try:
            reply = await self.router.answer(request)
        except Exception as exc:  # a bug: fail closed, say so in one line
            report_failure(self.peer, exc)
            reply = self.router.failed(request, exc)
        if self.state is not _State.BUSY:
            return  # the client went away; the decision is logged all the same
        self._reply(reply)

    # -- writing ------------------------------------------------------------------------------

    def _reply(self, reply: Reply) -> None:
        """Write the answer to the complete request. h11 reads requests; an
        answer is one status line and four headers, written here (h11's
        state machine would cost more than the rest of the request's HTTP
        side), after which a fresh parser takes what the client has already
        sent of its next request."""
        keep = self._keep_alive and not reply.close
        self._write(_response(reply, close=not keep))
        self._release()
        self.served += 1
        if not keep:
            self._linger()
            return
        leftover, closed = self._h11.trailing_data
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.head_bytes)
        self._head = None
        self._peek = bytearray(leftover[:_PEEK_BYTES])
        self._peek_valid = True
        self.state = _State.IDLE
        self.since = time.monotonic()
        self._arm(self.limits.idle_timeout)
        if self._transport is not None and self._writable and not self._transport.is_reading():
            self._transport.resume_reading()
        if leftover or closed:  # pipelined, or the client has hung up
            self.state = _State.READING
            self._arm(self.limits.read_timeout)
            self._h11.receive_data(leftover)
            if closed:
                self._h11.receive_data(b"")
            self._pump()

    def _close_with(self, reply: Reply) -> None:
        """Answer whatever state h11 is in (it may be in error), then close."""
        self._write(_response(reply, close=True))
        self._body = bytearray()
        self._release()
        self._linger()

    def _linger(self) -> None:
        self.state = _State.CLOSING
        self.since = time.monotonic()
        transport = self._transport
        if transport is None:
            return
        if transport.can_write_eof():
            transport.write_eof()
        transport.resume_reading()  # drain what the client still sends
        self._arm(self.limits.linger)

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    # -- deadlines ----------------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.state is _State.READING and self._head is not None:
            reply = self.router.too_slow(self._head)
            if reply is not None:
                self._close_with(reply)
                return
        if self.state is _State.CLOSING and self._transport is not None:
            if self._transport.get_write_buffer_size():
                self._transport.abort()  # it never read its answer
                return
        self._close()

    def _close(self) -> None:
        self.state = _State.CLOSED
        self._disarm()
        if self._transport is not None:
            self._transport.close()

    def shutdown(self) -> None:
        """Close now unless an answer is being worked out (the server is stopping)."""
        if self.state is not _State.BUSY:
            self._close()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _response(reply: Reply, *, close: bool) -> bytes:
    head = (
        f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, '')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(reply.body)}\r\n"
        "Cache-Control: no-store\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    return head.encode("ascii") + reply.body


def report_failure(peer: str, exc: BaseException) -> None:
    """One line on stderr naming the client and the kind of failure; not its
    text, which may quote the request (a header holding a token, say)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return  # a client that went away is routine
    sys.stderr.write(
        f"charter serve: a request from {peer} failed ({type(exc).__name__}); answered deny\n"
    )
