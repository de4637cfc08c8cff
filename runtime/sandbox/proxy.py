"""The network a sandbox may have: one proxy that applies the URL policy.

A sandbox with ``network = "proxy"`` has its own network namespace with
nothing in it but loopback. The listening socket on its loopback
(127.0.0.1:3128) was made inside that namespace and handed to the runtime
over a UNIX socket, so the runtime accepts connections *from inside* while
it connects out from the host's network: no forwarder process, no route.
The command finds it through ``HTTP_PROXY`` / ``HTTPS_PROXY``.

Every request names its target: ``CONNECT host:port`` (HTTPS and any
TLS) or an absolute ``http://`` URL. The target is checked before anything
else happens:

1. the host must match the profile's ``allow_hosts`` (an exact name,
   ``*.suffix`` for names below a domain, ``*`` for any public host); a
   refused name is never looked up, so it cannot carry data out through DNS;
2. the URL policy then decides (SSRF rules: loopback, private, link-local
   and metadata addresses refused unless the plan allows the local network),
   resolving names and judging every answer;
3. the connection goes to one of the addresses just judged, never to a
   second lookup (no DNS rebinding between check and use).

Refusals answer ``403`` with the reason. Names an allowed pattern covers are
resolved by the host's resolver, which is the known leak: the name itself
reaches DNS servers (see ``docs/sandbox.md``).
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from charter.runtime.sandbox.hosts import host_matches

__all__ = ["HostCheck", "ProxyServer", "host_checker", "host_matches"]

_HEAD_LIMIT = 64 * 1024
_TIMEOUT_S = 30.0
_IDLE_S = 300.0
_MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class HostCheck:
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()


def host_checker(
    patterns: Sequence[str],
    policy_check: Callable[[str, int], tuple[bool, str]] | None = None,
    *,
    allow_local_network: bool = False,
) -> Callable[[str, int], HostCheck]:
    """The check the proxy applies to each target."""
    from charter.runtime.net.resolve import SystemResolver
    from charter.runtime.net.urlpolicy import UrlPolicy

    policy = UrlPolicy(allow_local_network=allow_local_network)
    resolver = SystemResolver()

    def check(host: str, port: int) -> HostCheck:
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not host_matches(bare, patterns):
            return HostCheck(False, f"{bare} is not in the sandbox's allow_hosts")
        shown = f"[{bare}]" if ":" in bare else bare
        decision = policy.check(f"https://{shown}:{port}/", resolver)
        if not decision.allowed:
            return HostCheck(
                False, f"the URL policy refuses it: {decision.reason} ({decision.detail})"
            )
        if policy_check is not None:
            ok, why = policy_check(bare, port)
            if not ok:
                return HostCheck(False, why)
        return HostCheck(True, decision.reason, decision.addresses)

    return check


class ProxyServer:
    """Accepts on one listening socket until closed; one thread per connection."""

    def __init__(
        self,
        listener: socket.socket,
        check: Callable[[str, int], HostCheck],
        *,
        record: Callable[[dict[str, object]], None] | None = None,
    ) -> None:
        self._listener = listener
        self._check = check
        self._record = record
        self._closed = threading.Event()
        self._slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self.port = listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="sandbox-proxy", daemon=True)
        self._thread.start()

    @classmethod
    def on_loopback(cls, check: Callable[[str, int], HostCheck]) -> ProxyServer:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        return cls(s, check)

    def close(self) -> None:
        self._closed.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self._thread.join(timeout=2)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                ready, _, _ = select.select([self._listener], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            if not self._slots.acquire(blocking=False):
                _answer(conn, 503, "too many connections through the sandbox proxy")
                conn.close()
                continue
            threading.Thread(
                target=self._handle, args=(conn,), name="sandbox-proxy-conn", daemon=True
            ).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(_TIMEOUT_S)
            head, rest = _read_head(conn)
            if head is None:
                return
            line, _, headers = head.partition(b"\r\n")
            parts = line.split(b" ")
            if len(parts) != 3:
                _answer(conn, 400, "not an HTTP request")
                return
            method, target, version = parts
            if method == b"CONNECT":
                host, port = _split_hostport(target.decode("latin-1"), 443)
                upstream = self._open(conn, host, port, "CONNECT")
                if upstream is None:
                    return
                conn.sendall(version + b" 200 Connection Established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            elif target.lower().startswith(b"http://"):
                url = target.decode("latin-1")[7:]
                hostport, slash, path = url.partition("/")
                host, port = _split_hostport(hostport, 80)
                upstream = self._open(conn, host, port, method.decode("latin-1"))
                if upstream is None:
                    return
                kept = [
                    h
                    for h in headers.split(b"\r\n")
                    if h and not h.lower().startswith((b"proxy-", b"connection:"))
                ]
                request = b" ".join([method, ("/" + path if slash else "/").encode(), version])
                upstream.sendall(
                    b"\r\n".join([request, *kept, b"Connection: close", b"", b""]) + rest
                )
            else:
                _answer(conn, 400, "only CONNECT and absolute http:// requests are proxied")
                return
            _relay(conn, upstream)
        except (OSError, ValueError, UnicodeError):
            pass
        finally:
            try:
                conn.close()
            finally:
                self._slots.release()

    def _open(self, conn: socket.socket, host: str, port: int, method: str) -> socket.socket | None:
        verdict = self._check(host, port)
        if self._record is not None:
            self._record(
                {
                    "host": host,
                    "port": port,
                    "method": method,
                    "allowed": verdict.allowed,
                    "reason": verdict.reason,
                }
            )
        if not verdict.allowed:
            _answer(conn, 403, f"Charter's sandbox refused {host}:{port}: {verdict.reason}")
            return None
        last: OSError | None = None
        for address in verdict.addresses:
            try:
                return socket.create_connection((address, port), timeout=_TIMEOUT_S)
            except OSError as exc:
                last = exc
        _answer(conn, 502, f"could not connect to {host}:{port}: {last or 'no address'}")
        return None


def _split_hostport(text: str, default: int) -> tuple[str, int]:
    if text.startswith("["):
        end = text.index("]")
        host, rest = text[: end + 1], text[end + 1 :]
        return host, int(rest[1:]) if rest.startswith(":") else default
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default
    return host, int(port)


def _read_head(conn: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            _answer(conn, 431, "request head too large")
            return None, b""
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _answer(conn: socket.socket, code: int, text: str) -> None:
    reasons = {
        400: "Bad Request",
        403: "Forbidden",
        431: "Request Header Fields Too Large",
        502: "Bad Gateway",
        503: "Service Unavailable",
    }
    body = (text + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {code} {reasons.get(code, 'Error')}\r\nContent-Type: text/plain; "
        f"charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        conn.sendall(head + body)
    except OSError:
        pass


def _relay(a: socket.socket, b: socket.socket) -> None:
    a.settimeout(None)
    b.settimeout(None)
    try:
        socks = [a, b]
        while socks:
            ready, _, _ = select.select(socks, [], [], _IDLE_S)
            if not ready:
                return
            for s in ready:
                other = b if s is a else a
                data = s.recv(65536)
                if not data:
                    try:
                        other.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    socks.remove(s)
                    continue
                other.sendall(data)
    finally:
        b.close()
