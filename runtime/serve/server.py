"""The decision server's HTTP side: routes, limits, authentication.

The standard library's threaded HTTP server: one thread per connection,
HTTP/1.1 keep-alive, no dependency. Decisions are short, synchronous and
CPU-bound (the gates, the shell guard), so an event loop would add nothing
but a hop to a worker thread; the pool in :mod:`charter.runtime.serve.decisions`
is what bounds their time.

Routes::

    POST /v1/hooks/claude-code   a Claude Code hook event -> `charter hook claude-code`'s answer
    POST /v1/hooks/gemini-cli    a Gemini CLI hook event -> `charter hook gemini-cli`'s answer
                                 (?ask=deny|ask|defer overrides the server's --gemini-ask)
    POST /v1/check               {"tool", "args", "stage"?, "agent"?} -> `charter check` JSON
    GET  /v1/health              the plan's digest and agents

Both clients run a call when a hook's HTTP request fails (a non-2xx status,
a timeout, a refused connection), so a hook endpoint answers every problem it
can answer at all with status 200 and the adapter's deny: a request that is
too large, not authorised, addressed to another host name, or not decided in
time. ``/v1/check`` and ``/v1/health`` use ordinary status codes.

Limits: a request body of at most 8 MiB (the hook commands' own bound);
reading one request (line, headers and body) within ``read_timeout`` seconds,
after which the connection is closed; at most ``max_connections`` connections
served at once (more wait in the listen queue); an idle keep-alive connection
is closed after ``read_timeout``.

Listening on a loopback address needs nothing more; any other address needs
a bearer token (``Authorization: Bearer TOKEN``), checked on every route. On
loopback the ``Host`` header must name a loopback host, so a web page the
user opens cannot reach the server through DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs

from charter.runtime.errors import CharterError
from charter.runtime.hooks.common import MAX_EVENT_BYTES
from charter.runtime.serve.decisions import Answer, Decider, HookKind

__all__ = ["DecisionServer", "ListenError", "is_loopback", "parse_listen"]

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


class _Reaper:
    """Closes connections that take longer than allowed to send a request:
    one thread for all of them, checking a few times a second."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, socket.socket]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="charter-serve-reaper", daemon=True)
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._lock:
            self._due[id(sock)] = (time.monotonic() + seconds, sock)

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(id(sock), None)

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            now = time.monotonic()
            with self._lock:
                late = [s for k, (t, s) in list(self._due.items()) if t <= now]
                for s in late:
                    self._due.pop(id(s), None)
            for s in late:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    decider: Decider
    token: bytes | None
    check_host: bool
    read_timeout: float
    reaper: _Reaper
    slots: threading.BoundedSemaphore
    stopping: bool

    def process_request(self, request: Any, client_address: Any) -> None:
        # Beyond max_connections, wait (the connection stays in the listen
        # queue) rather than refuse: a refused hook request lets the call run.
        while not self.slots.acquire(timeout=0.5):
            if self.stopping:
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver's default prints a traceback to stderr. A client that
        # goes away mid-request is routine (its hook timed out); anything
        # else is one line naming the client, so the operator sees what
        # failed without a traceback. The connection closes unanswered,
        # which both clients treat as the hook failing.
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, (ConnectionError, TimeoutError)):
            return
        try:
            where = f"{client_address[0]}:{client_address[1]}"
        except (IndexError, TypeError):
            where = str(client_address)
        # The exception's type only: its text may quote the request (a
        # header holding the bearer token, say), and stderr is not redacted.
        sys.stderr.write(
            f"charter serve: a request from {where} failed ({type(exc).__name__}); "
            "closed it unanswered\n"
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "charter-serve"
    sys_version = ""
    # The status line, headers and body go out in one write; without this,
    # Nagle's algorithm and delayed ACKs can hold a keep-alive answer 40 ms.
    disable_nagle_algorithm = True

    server: _Server

    def setup(self) -> None:
        super().setup()
        # Each read of the request waits at most this long; the reaper bounds
        # the whole request.
        self.connection.settimeout(self.server.read_timeout)

    def handle_one_request(self) -> None:
        self.server.reaper.arm(self.connection, self.server.read_timeout)
        try:
            super().handle_one_request()
        finally:
            self.server.reaper.disarm(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the decision log says what matters

    # -- replies --------------------------------------------------------------

    def _send(self, status: int, body: bytes, *, close: bool = False) -> None:
        head = (
            f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
        ).encode("ascii")
        self.wfile.write(head + body)
        if close:
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library answers a request it cannot read (headers
        too long: 431, too many: 431, a bad line: 400) with a bare HTTP error,
        and a client's hook takes any non-2xx answer as "no objection" and
        runs the call. On a hook route, answer with that hook's deny instead."""
        path = getattr(self, "path", "") or ""
        kind = _HOOKS.get(path.partition("?")[0])
        if kind is None:
            super().send_error(code, message, explain)
            return
        reason = f"the request could not be read ({code} {message or ''})".strip()
        decider = self.server.decider
        refused = decider.refuse_hook(kind, reason)
        answer = decider.logged(kind, b"", refused, self.client_address[0])
        self._send(answer.status, answer.body, close=True)

    def _error(self, status: int, message: str, *, close: bool = False) -> None:
        import json

        self._send(status, (json.dumps({"error": message}) + "\n").encode("ascii"), close=close)

    # -- checks shared by every route ---------------------------------------------

    def _refusal(self) -> str:
        """Why this request is refused before it is read further, or ""."""
        server = self.server
        if server.check_host and not _host_is_loopback(self.headers.get("Host")):
            return "the Host header does not name this machine; the server answers loopback only"
        if server.token is not None:
            given = self.headers.get("Authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode("utf-8", "replace"), server.token
            ):
                return "the request carries no valid bearer token"
        return ""

    def _body(self) -> tuple[bytes | None, str]:
        """The request body, or None and why it was not read."""
        if self.headers.get("Transfer-Encoding"):
            return None, "a chunked request body is not accepted; send Content-Length"
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            return None, "the request has no Content-Length"
        n = int(length)
        if n > MAX_EVENT_BYTES:
            # Read one byte past the bound, as the hook commands read stdin,
            # so the adapter refuses it in the same words; the rest is never
            # read, and the connection is closed after the answer.
            self.close_connection = True
            n = MAX_EVENT_BYTES + 1
        try:
            data = self.rfile.read(n)
        except OSError as exc:
            return None, f"the request body could not be read ({exc})"
        if len(data) != n:
            return None, "the request body ended early"
        return data, ""

    # -- routes ---------------------------------------------------------------------

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        kind = _HOOKS.get(path)
        decider = self.server.decider
        if kind is None and path != "/v1/check":
            self._error(404, f"no route {path!r}", close=True)
            return
        refused = self._refusal()
        raw, problem = (None, refused) if refused else self._body()
        self.server.reaper.disarm(self.connection)
        answer: Answer
        if kind is not None:
            ask = None
            if raw is not None and query:
                ask, problem = _ask_query(query)
                raw = None if problem else raw
            if raw is None:
                answer = decider.refuse_hook(kind, problem)
                answer = decider.logged(kind, b"", answer, self.client_address[0])
                # A body left unread (too large, chunked) must not be read
                # as the next request.
                self._send(answer.status, answer.body, close=True)
            else:
                answer = decider.hook(kind, raw, ask=cast(Any, ask))
                answer = decider.logged(kind, raw, answer, self.client_address[0])
                self._send(answer.status, answer.body, close=self.close_connection)
            return
        if raw is None:
            status = 401 if refused else 400
            self._error(status, problem, close=True)
            return
        answer = decider.logged("check", raw, decider.check(raw), self.client_address[0])
        self._send(answer.status, answer.body, close=self.close_connection)

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        if path != "/v1/health":
            self._error(404, f"no route {path!r}")
            return
        refused = self._refusal()
        if refused:
            self._error(401, refused)
            return
        answer = self.server.decider.health()
        self._send(answer.status, answer.body)


def _ask_query(query: str) -> tuple[str | None, str]:
    params = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(params) - {"ask"})
    if unknown:
        return None, f"unknown query parameter {unknown[0]!r} (the hook URL takes only ask=)"
    values = params.get("ask", [])
    if len(values) != 1 or values[0] not in _ASK:
        return None, "ask= must be one of deny, ask, defer"
    return values[0], ""


class DecisionServer:
    """A listening decision server; :meth:`serve_forever` until :meth:`shutdown`."""

    def __init__(
        self,
        decider: Decider,
        host: str,
        port: int,
        *,
        token: str | None = None,
        max_connections: int = 64,
        read_timeout: float = 10.0,
    ) -> None:
        if not is_loopback(host) and not token:
            raise ListenError(
                f"listening on {host}, which is not a loopback address, needs a bearer token "
                "(--token-file FILE or CHARTER_SERVE_TOKEN)"
            )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server_cls = cast(
            Callable[..., _Server], type("_Bound", (_Server,), {"address_family": family})
        )
        bind = "127.0.0.1" if host == "localhost" else host
        self._server = server_cls((bind, port), _Handler)
        self._server.decider = decider
        self._server.token = token.encode("utf-8") if token else None
        self._server.check_host = is_loopback(host)
        self._server.read_timeout = read_timeout
        self._server.reaper = _Reaper()
        self._server.slots = threading.BoundedSemaphore(max_connections)
        self._server.stopping = False
        self.decider = decider

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.25)

    def shutdown(self) -> None:
        """Stop serving (from another thread than serve_forever's)."""
        self._server.stopping = True
        self._server.shutdown()

    def close(self) -> None:
        self._server.reaper.stop()
        self._server.server_close()
        self.decider.close()
