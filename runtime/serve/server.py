"""The decision server's HTTP side: routes, authentication, and the listening socket.

HTTP/1.1 is read with h11 (a sans-IO parser that bounds what it buffers) on
one asyncio event-loop thread, :mod:`charter.runtime.serve.connection`;
decisions run on the :class:`~charter.runtime.serve.decisions.Decider`'s
worker pool. A client that is slow to send, or sends half a request and
waits, holds a buffer and a timer, never a worker: honest requests are
decided as they arrive whatever a neighbour does (see the limits there).

Routes::

    POST /v1/hooks/claude-code   a Claude Code hook event -> `charter hook claude-code`'s answer
    POST /v1/hooks/gemini-cli    a Gemini CLI hook event -> `charter hook gemini-cli`'s answer
                                 (?ask=deny|ask|defer overrides the server's --gemini-ask)
    POST /v1/check               {"tool", "args", "stage"?, "agent"?} -> `charter check` JSON
    GET  /v1/health              the plan's digest and agents

Both clients run a call when a hook's HTTP request fails (a non-2xx status,
a timeout, a refused connection), so a hook endpoint answers every problem it
can answer at all with status 200 and the adapter's deny: a request that is
too large (head or body), malformed, too slow, not authorised, addressed to
another host name, or not decided in time. ``/v1/check`` and ``/v1/health``
use ordinary status codes.

Authentication: with a token (``charter init`` writes one; ``--token-file``),
every request on every route must carry ``Authorization: Bearer TOKEN``;
listening on an address that is not loopback needs one. On loopback the
``Host`` header must also name a loopback host, so a web page the user opens
cannot reach the server through DNS rebinding.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import ipaddress
import json
import resource
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import parse_qs

from charter.runtime.errors import CharterError
from charter.runtime.hooks.common import MAX_EVENT_BYTES, TOO_LARGE
from charter.runtime.serve.balance import DEFER_S, MAX_DEFERS, Balance
from charter.runtime.serve.connection import (
    Admission,
    Connection,
    Head,
    Limits,
    Reply,
    Request,
)
from charter.runtime.serve.decisions import LOG_WAIT_S, Decider, HookKind
from charter.runtime.serve.handoff import DecisionQueue, DurableWaits

__all__ = ["DecisionServer", "ListenError", "is_loopback", "listen_socket", "parse_listen"]

_HOOKS: dict[str, HookKind] = {
    "/v1/hooks/claude-code": "claude-code",
    "/v1/hooks/gemini-cli": "gemini-cli",
}
_ASK = ("deny", "ask", "defer")


class ListenError(CharterError, ValueError):
    """A --listen value that cannot be used; the message says why."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT`` for IPv6) as host and port."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ListenError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8787")
    port = int(port_text)
    if port > 65535:
        raise ListenError(f"--listen {text!r}: port {port} is out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise ListenError(f"--listen {text!r}: name the address (127.0.0.1 for this machine only)")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError as exc:
            raise ListenError(f"--listen {text!r}: {host!r} is not an IP address") from exc
    return host, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _host_is_loopback(header: str | None) -> bool:
    if not header:
        return False
    host = header.strip()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _json_error(status: int, message: str, *, close: bool = False) -> Reply:
    body = (json.dumps({"error": message}) + "\n").encode("ascii")
    return Reply(status, body, close)


class _Routes:
    """What each request is answered (the :class:`Router` of every connection)."""

    # (set by the server once its event loop runs)
    queue: DecisionQueue
    waits: DurableWaits

    def __init__(self, decider: Decider, token: bytes | None, check_host: bool) -> None:
        self.decider = decider
        self.token = token
        self.check_host = check_host

    # -- checks before the body is read --------------------------------------------------

    def _refusal(self, head: Head) -> str:
        """Why this request is refused before its body is read, or ""."""
        if self.check_host and not _host_is_loopback(next(iter(head.header("host")), None)):
            return "the Host header does not name this machine; the server answers loopback only"
        if self.token is not None:
            given = head.header("authorization")
            scheme, _, value = (given[0] if len(given) == 1 else "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode("utf-8", "replace"), self.token
            ):
                return "the request carries no valid bearer token"
        return ""

    def _hook_refusal(self, kind: HookKind, reason: str, peer: str) -> Reply:
        """The hook's deny for a request refused before any decision (logged;
        a deny waits for no disk), on a connection then closed."""
        answer = self.decider.refuse_hook(kind, reason)
        self.decider.record(kind, b"", answer, peer, droppable=True)
        return Reply(answer.status, answer.body, close=True)

    def before_body(self, head: Head) -> Reply | None:
        kind = _HOOKS.get(head.path)
        routes = ("/v1/check", "/v1/health", *_HOOKS)
        if head.path not in routes:
            return _json_error(404, f"no route {head.path!r}", close=True)
        want = "GET" if head.path == "/v1/health" else "POST"
        if head.method != want:
            if kind is not None:
                return self._hook_refusal(kind, f"a hook request is a POST, not {head.method}",
                                          head.peer)  # fmt: skip
            return _json_error(405, f"{head.path} takes {want}", close=True)
        refused = self._refusal(head)
        if refused:
            if kind is not None:
                return self._hook_refusal(kind, refused, head.peer)
            return _json_error(401, refused, close=True)
        if kind is not None and head.query:
            _, problem = _ask_query(head.query)
            if problem:
                return self._hook_refusal(kind, problem, head.peer)
        return None

    def too_large(self, head: Head) -> Reply:
        kind = _HOOKS.get(head.path)
        if kind is not None:
            # the words the hook commands use for an event past the bound
            return self._hook_refusal(kind, TOO_LARGE, head.peer)
        return _json_error(413, f"the request body is larger than {MAX_EVENT_BYTES} bytes",
                           close=True)  # fmt: skip

    def overloaded(self, head: Head) -> Reply:
        why = "the server holds too much unread request data now; try again"
        kind = _HOOKS.get(head.path)
        if kind is not None:
            return self._hook_refusal(kind, why, head.peer)
        return _json_error(503, why, close=True)

    def too_slow(self, head: Head) -> Reply | None:
        kind = _HOOKS.get(head.path)
        if kind is None:
            return None
        return self._hook_refusal(kind, "the request did not arrive in time", head.peer)

    def unreadable(self, target: str | None, why: str, peer: str) -> Reply:
        kind = _HOOKS.get((target or "").partition("?")[0])
        if kind is not None:
            return self._hook_refusal(kind, f"the request could not be read ({why})", peer)
        return _json_error(400, f"the request could not be read ({why})", close=True)

    def failed(self, request: Request, exc: BaseException) -> Reply:
        kind = _HOOKS.get(request.head.path)
        reason = f"the hook could not decide ({type(exc).__name__})"
        if kind is not None:
            return self._hook_refusal(kind, reason, request.head.peer)
        return _json_error(500, reason, close=True)

    # -- answers ---------------------------------------------------------------------------

    async def answer(self, request: Request) -> Reply:
        head = request.head
        decider = self.decider
        if head.path == "/v1/health":
            # off the event loop: a changed plan file is loaded first
            answer = await asyncio.get_running_loop().run_in_executor(None, decider.health)
            return Reply(answer.status, answer.body)
        kind = _HOOKS.get(head.path)
        endpoint: str
        if kind is not None:
            ask = _ask_query(head.query)[0] if head.query else None
            job = decider.hook_job(kind, request.body, ask=cast(Any, ask))
            endpoint = kind
        else:
            job = decider.check_job(request.body)
            endpoint = "check"
        answer = await self.queue.put(job)
        line = decider.record(endpoint, request.body, answer, head.peer)
        if decider.must_wait(line, answer):
            assert line is not None
            answer = decider.settled(endpoint, answer, await self.waits.wait(line))
        return Reply(answer.status, answer.body)


def _ask_query(query: str) -> tuple[str | None, str]:
    params = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(params) - {"ask"})
    if unknown:
        return None, f"unknown query parameter {unknown[0]!r} (the hook URL takes only ask=)"
    values = params.get("ask", [])
    if len(values) != 1 or values[0] not in _ASK:
        return None, "ask= must be one of deny, ask, defer"
    return values[0], ""


# Connections one wake of the event loop takes from the listening socket.
_ACCEPT_BATCH = 4
# How long a thread holding the GIL keeps it from the event loop (see serve_forever).
_SWITCH_INTERVAL_S = 0.001


def listen_socket(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on HOST:PORT (raises OSError)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bind = "127.0.0.1" if host == "localhost" else host
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _fd_room() -> int:
    """How many connections this process can hold open: the soft limit on
    open files is raised to the hard one, less a margin for the log, the plan
    and the pool. (Past the limit, accepting fails and the event loop stops
    accepting for a second: every client would wait.)"""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        want = 65536 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return max(16, soft - 128)


class DecisionServer:
    """A listening decision server; :meth:`serve_forever` until :meth:`shutdown`."""

    def __init__(
        self,
        decider: Decider,
        host: str,
        port: int,
        *,
        token: str | None = None,
        max_connections: int = 1024,
        max_per_peer: int | None = None,
        read_timeout: float = 10.0,
        idle_timeout: float = 30.0,
        buffer_bytes: int = 256 * 1024 * 1024,
        sock: socket.socket | None = None,
        balance: Balance | None = None,
        on_loop: Callable[[asyncio.AbstractEventLoop], None] | None = None,
    ) -> None:
        """``sock``: a listening socket to serve (one a parent process bound
        before forking workers that share it); else one is bound to HOST:PORT.
        ``balance``: the workers' shared counts of open connections (this
        worker's slot joined), which steer who takes a new connection.
        ``on_loop(loop)``: called on the event loop once it runs (a worker's
        log link attaches itself there)."""
        if not is_loopback(host) and not token:
            raise ListenError(
                f"listening on {host}, which is not a loopback address, needs a bearer token "
                "(--token-file FILE or CHARTER_SERVE_TOKEN)"
            )
        if sock is None:
            sock = listen_socket(host, port)
        self._sock = sock
        # (asyncio closes the socket when the server stops)
        self._address = sock.getsockname()[:2]
        total = max(1, min(max_connections, _fd_room()))
        self.limits = Limits(
            read_timeout=read_timeout,
            idle_timeout=idle_timeout,
            body_bytes=MAX_EVENT_BYTES,
            max_connections=total,
            max_per_peer=max(1, min(max_per_peer or total, total)),
            buffer_bytes=max(MAX_EVENT_BYTES + 1, buffer_bytes),
        )
        self._routes = _Routes(decider, token.encode("utf-8") if token else None, is_loopback(host))
        self._balance = balance
        self._on_loop = on_loop
        self._admission = Admission(self.limits, balance.hold if balance is not None else None)
        self._defers = 0  # times in a row a new connection was left to another worker
        self._last_defer = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._accepting: set[asyncio.Task[Any]] = set()
        self._stop_asked = threading.Event()
        self._started = threading.Event()
        self._finished = threading.Event()
        self.decider = decider

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._address
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    @property
    def open_connections(self) -> int:
        return len(self._admission.open)

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown`."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        # The event loop shares the GIL with the threads that decide and
        # prepare log lines; woken by a request, it waits for the GIL at
        # most this long while they work (measured: an honest client's
        # median while 7 MB events were decided, 12 ms at Python's 5 ms
        # interval, 1-4 ms at 1 ms).
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, _SWITCH_INTERVAL_S))
        try:
            loop.run_until_complete(self._serve())
        finally:
            sys.setswitchinterval(interval)
            loop.close()
            self._finished.set()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        decider = self.decider
        queue = DecisionQueue(loop, decider.spawn, limit=decider.options.time_limit or 0.01,
                              threads=decider.threads)  # fmt: skip
        self._routes.queue = queue
        self._routes.waits = waits = DurableWaits(loop, LOG_WAIT_S)
        if self._on_loop is not None:
            self._on_loop(loop)
        fd = self._sock.fileno()
        loop.add_reader(fd, self._accept, loop)
        self._started.set()
        if self._stop_asked.is_set():
            self._stop.set()
        try:
            await self._stop.wait()
        finally:
            loop.remove_reader(fd)
            self._sock.close()
            # answers being worked out are finished (each is bounded by the
            # time limit); every other connection is closed now
            for _ in range(100):
                for conn in list(self._admission.open):
                    conn.shutdown()  # (one whose answer was just written, too)
                if not self._admission.open:
                    break
                await asyncio.sleep(0.05)
            for conn in list(self._admission.open):
                conn.evict()
            queue.close()
            waits.close()

    def _accept(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take a few waiting connections (not every one: with --workers,
        the processes share the socket, and one that takes only a few per
        wake leaves the rest to a worker with time for them), unless a
        worker holding fewer should take them (see :mod:`.balance`)."""
        if self._leave_to_another(loop):
            return
        for _ in range(_ACCEPT_BATCH):
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: the bound below the limit failed
                sys.stderr.write(f"charter serve: accepting a connection failed ({exc})\n")
                return
            conn.setblocking(False)
            factory = functools.partial(Connection, self._routes, self._admission)
            task = loop.create_task(loop.connect_accepted_socket(factory, conn))
            self._accepting.add(task)
            task.add_done_callback(self._accepted)

    def _leave_to_another(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Stop watching the socket for a moment when another worker holds
        fewer connections (at most MAX_DEFERS times in a row)."""
        balance = self._balance
        if balance is None:
            return False
        now = loop.time()
        if now - self._last_defer > 2 * DEFER_S:
            self._defers = 0  # a new connection, not the one left a moment ago
        if self._defers >= MAX_DEFERS or not balance.lighter_elsewhere(len(self._admission.open)):
            return False
        self._defers += 1
        self._last_defer = now
        fd = self._sock.fileno()
        loop.remove_reader(fd)

        def watch_again() -> None:
            if self._stop is not None and not self._stop.is_set():
                loop.add_reader(fd, self._accept, loop)

        loop.call_later(DEFER_S, watch_again)
        return True

    def _accepted(self, task: asyncio.Task[Any]) -> None:
        self._accepting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            pass  # the client went away before its connection was set up

    def shutdown(self) -> None:
        """Stop serving (from another thread than serve_forever's) and wait
        until it has stopped."""
        self._stop_asked.set()
        loop, stop = self._loop, self._stop
        if loop is None or not self._started.is_set() or stop is None:
            return
        try:
            loop.call_soon_threadsafe(stop.set)
        except RuntimeError:  # the loop is closed: already stopped
            return
        self._finished.wait(15)

    def close(self) -> None:
        self._sock.close()
        self.decider.close()
