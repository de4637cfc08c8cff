"""HTTP transports that connect only where the URL policy allows.

Checking a URL and then handing it to an HTTP client is not enough: the
client resolves the name again (DNS rebinding gets a second answer), follows
redirects on its own, and may route through a proxy taken from the
environment. These transports close all three gaps:

* **Pinning.** The TCP connection is opened by a network backend that resolves
  the host itself, judges *every* answer with the policy, and connects only to
  those addresses. The HTTP layer above still uses the host name, so the
  ``Host`` header and the TLS server name (SNI, and certificate checking) are
  those of the URL, not of the IP.
* **Redirects.** httpx follows redirects by sending a new request through the
  same transport, so each hop is judged again before any connection; a
  redirect to a refused address fails with :class:`BlockedRequest`.
* **No ambient proxies.** The transports own their connection pool and never
  read ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``; the client helpers also
  pass ``trust_env=False``.

Two HTTP stacks are covered: httpx (web tools, callbacks) and httpx2, the fork
the mcp 2.x SDK uses for its streamable HTTP client
(:func:`mcp_http_client_factory`). This is the only module that imports them.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import httpcore
import httpx

from charter.runtime.net.resolve import Resolver, SystemResolver
from charter.runtime.net.urlpolicy import UrlPolicy, UrlRefused, UrlVerdict, audit_origin

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "AsyncPinnedTransport",
    "BlockedRequest",
    "Guard",
    "PinnedTransport",
    "UrlDecisionSink",
    "connected_address",
    "mcp_http_client_factory",
    "pinned_async_client",
    "pinned_client",
    "url_decision_event",
]

SocketOption = Any  # httpcore's SOCKET_OPTION union; only passed through
_LIMITS = httpx.Limits(max_connections=20, max_keepalive_connections=5)


@dataclass(frozen=True)
class Guard:
    """The policy plus a resolver: what both HTTP stacks consult."""

    policy: UrlPolicy
    resolver: Resolver

    def check_request(self, scheme: str, host: str, port: int | None) -> UrlVerdict:
        """Judge a request's target (literal host only; names pass as ``needs-dns``
        and are settled when the connection is opened)."""
        decision = self.policy.check(_url_for(scheme, host, port))
        return decision

    def pin(self, host: str, port: int) -> UrlVerdict:
        """Resolve ``host`` and judge every answer; the decision's ``addresses``
        are the only ones a connection may use."""
        return self.policy.check(_url_for("http", host, port), self.resolver)


def _url_for(scheme: str, host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{scheme}://{shown}" + ("" if port is None else f":{port}") + "/"


class BlockedRequest(httpx.TransportError, UrlRefused):
    """httpx's error for a request the URL policy refused (also a :class:`UrlRefused`)."""

    def __init__(self, decision: UrlVerdict) -> None:
        self.decision = decision
        super().__init__(UrlRefused.__str__(self))

    def __str__(self) -> str:
        return UrlRefused.__str__(self)


_PEER_KEY = "charter.connected_address"


def connected_address(response: httpx.Response) -> str | None:
    """The IP address a response actually came from (for audit metadata)."""
    peer = response.extensions.get(_PEER_KEY)
    return str(peer) if peer else None


def _record_peer(extensions: dict[str, Any]) -> None:
    # Read while the connection is open: the socket may be closed by the time
    # the caller looks at the response.
    stream = extensions.get("network_stream")
    try:
        peer = stream.get_extra_info("server_addr") if stream is not None else None
    except OSError:
        peer = None
    extensions[_PEER_KEY] = str(peer[0]) if peer else None


# --------------------------------------------------------------------------- httpcore backends


class _LifetimeStream(httpcore.NetworkStream):
    """A connection that may be used until ``deadline`` and no longer.

    httpx's timeouts bound each read; a server sending one header line or one
    body byte just inside every one of them would hold the request forever. The
    socket waits at most what is left of the lifetime, then fails as a timeout.
    """

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def _budget(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error("the connection outlived its time limit")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._budget(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._budget(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        budget = self._budget(timeout, httpcore.ConnectTimeout)
        return _LifetimeStream(
            self._inner.start_tls(ssl_context, server_hostname, budget), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    def __init__(
        self,
        guard: Guard,
        refuse: Callable[[UrlVerdict], Exception],
        inner: httpcore.NetworkBackend | None = None,
        lifetime: float | None = None,
    ) -> None:
        self._guard = guard
        self._refuse = refuse
        self._inner = inner if inner is not None else httpcore.SyncBackend()
        self._lifetime = lifetime

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        decision = self._guard.pin(host, port)
        if not decision.allowed:
            raise self._refuse(decision)
        error: Exception | None = None
        deadline = _deadline(timeout)
        # Every address was judged safe, so trying them in turn is still pinned.
        for address in decision.addresses:
            left = _left(deadline)
            if left is not None and left <= 0 and error is not None:
                break
            try:
                stream = self._inner.connect_tcp(address, port, left, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
                continue
            if self._lifetime is None:
                return stream
            return _LifetimeStream(stream, time.monotonic() + self._lifetime)
        assert error is not None  # an allowed decision always has addresses
        raise error

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are never used by the pinned transport")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncPinning:
    """The body of both asynchronous backends, httpcore's and httpcore2's (the
    fork mcp uses): the two stacks differ only in their types, so a subclass
    for each names its stack's connect errors and nothing else."""

    _connect_error: type[Exception]
    _connect_timeout: type[Exception]

    def __init__(
        self,
        guard: Guard,
        refuse: Callable[[UrlVerdict], Exception],
        inner: Any,
        on_decision: UrlDecisionSink | None = None,
    ) -> None:
        self._guard = guard
        self._refuse = refuse
        self._inner = inner
        self._on_decision = on_decision

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> Any:
        """Resolve and judge every answer, tell ``on_decision`` (phase
        ``connect``), then try the approved addresses in turn."""
        # getaddrinfo blocks, so the lookup runs on a worker thread.
        decision = await anyio.to_thread.run_sync(self._guard.pin, host, port)
        if self._on_decision is not None:
            self._on_decision(url_decision_event("connect", decision))
        if not decision.allowed:
            raise self._refuse(decision)
        error: Exception | None = None
        deadline = _deadline(timeout)
        # Every address was judged safe, so trying them in turn is still pinned.
        for address in decision.addresses:
            left = _left(deadline)
            if left is not None and left <= 0 and error is not None:
                break
            try:
                return await self._inner.connect_tcp(
                    address, port, left, local_address, socket_options
                )
            except (self._connect_error, self._connect_timeout) as exc:
                error = exc
        assert error is not None  # an allowed decision always has addresses
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> Any:
        raise self._connect_error("unix sockets are never used by the pinned transport")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _AsyncPinnedBackend(_AsyncPinning, httpcore.AsyncNetworkBackend):
    _connect_error = httpcore.ConnectError
    _connect_timeout = httpcore.ConnectTimeout


# --------------------------------------------------------------------------- httpx transports


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _left(deadline: float | None) -> float | None:
    """What remains of the connect timeout. A name may have dozens of approved
    answers; each one tried with a fresh timeout would let one unreachable
    name hold a request for dozens of timeouts, so they share one."""
    return None if deadline is None else deadline - time.monotonic()


def _guard(policy: UrlPolicy | None, resolver: Resolver | None) -> Guard:
    return Guard(policy or UrlPolicy(), resolver if resolver is not None else SystemResolver())


def _raw_host(url: Any) -> str:
    raw: bytes = url.raw_host  # httpx.URL or httpx2.URL
    return raw.decode("ascii", errors="replace")


def _pool_options(
    verify: ssl.SSLContext | str | bool, http2: bool, limits: httpx.Limits
) -> dict[str, Any]:
    """The connection-pool settings both transports share: TLS as httpx would
    set it up (no proxy or certificate settings from the environment) and
    httpx's limits carried over."""
    return {
        "ssl_context": httpx.create_ssl_context(verify=verify, trust_env=False),
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
        "http1": True,
        "http2": http2,
    }


def _admit(
    guard: Guard,
    request: Any,
    refuse: Callable[[UrlVerdict], Exception] = BlockedRequest,
    on_decision: UrlDecisionSink | None = None,
) -> None:
    """Refuse a request whose URL the policy denies before any connection is
    made (the backend still pins the address it connects to). ``request`` is
    an httpx or an httpx2 request: both stacks spell the URL alike.
    ``on_decision`` hears of the decision first (phase ``request``)."""
    decision = guard.check_request(request.url.scheme, _raw_host(request.url), request.url.port)
    if on_decision is not None:
        on_decision(url_decision_event("request", decision, method=request.method))
    if decision.verdict == "deny":
        raise refuse(decision)


class PinnedTransport(httpx.HTTPTransport):
    """A synchronous httpx transport that connects only to policy-approved addresses.

    ``backend`` replaces the socket layer (tests use it to observe what is
    connected and which TLS server name is sent). ``lifetime`` (seconds), when
    given, is the longest any connection may be used, whatever its traffic.
    """

    def __init__(
        self,
        policy: UrlPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | str | bool = True,
        http2: bool = False,
        limits: httpx.Limits = _LIMITS,
        backend: httpcore.NetworkBackend | None = None,
        lifetime: float | None = None,
    ) -> None:
        super().__init__(verify=verify, trust_env=False, http2=http2, limits=limits)
        self.guard = _guard(policy, resolver)
        # The pool httpx built is swapped for one whose sockets go through the
        # pinning backend; httpx has no public hook for a network backend.
        self._pool = httpcore.ConnectionPool(
            **_pool_options(verify, http2, limits),
            network_backend=_PinnedBackend(self.guard, BlockedRequest, backend, lifetime),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        _admit(self.guard, request)
        response = super().handle_request(request)
        _record_peer(response.extensions)
        return response


class AsyncPinnedTransport(httpx.AsyncHTTPTransport):
    """The asynchronous twin of :class:`PinnedTransport`."""

    def __init__(
        self,
        policy: UrlPolicy | None = None,
        *,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | str | bool = True,
        http2: bool = False,
        limits: httpx.Limits = _LIMITS,
        backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        super().__init__(verify=verify, trust_env=False, http2=http2, limits=limits)
        self.guard = _guard(policy, resolver)
        self._pool = httpcore.AsyncConnectionPool(
            **_pool_options(verify, http2, limits),
            network_backend=_AsyncPinnedBackend(
                self.guard,
                BlockedRequest,
                backend if backend is not None else httpcore.AnyIOBackend(),
            ),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _admit(self.guard, request)
        response = await super().handle_async_request(request)
        _record_peer(response.extensions)
        return response


def pinned_client(
    policy: UrlPolicy | None = None,
    *,
    resolver: Resolver | None = None,
    timeout: float = 15.0,
    max_redirects: int = 5,
    verify: ssl.SSLContext | str | bool = True,
    headers: dict[str, str] | None = None,
    lifetime: float | None = None,
) -> httpx.Client:
    """An httpx client whose every request and redirect hop is pinned and judged.

    ``lifetime`` bounds how long any one connection is used (see
    :class:`PinnedTransport`); ``timeout`` alone bounds each wait, not the total."""
    _hide_logged_urls(logging.getLogger("httpx"), httpx.URL)
    return httpx.Client(
        transport=PinnedTransport(policy, resolver=resolver, verify=verify, lifetime=lifetime),
        trust_env=False,
        follow_redirects=True,
        max_redirects=max_redirects,
        timeout=timeout,
        headers=headers,
    )


def pinned_async_client(
    policy: UrlPolicy | None = None,
    *,
    resolver: Resolver | None = None,
    timeout: float = 15.0,
    max_redirects: int = 5,
    verify: ssl.SSLContext | str | bool = True,
    headers: dict[str, str] | None = None,
) -> httpx.AsyncClient:
    """The asynchronous twin of :func:`pinned_client`."""
    _hide_logged_urls(logging.getLogger("httpx"), httpx.URL)
    return httpx.AsyncClient(
        transport=AsyncPinnedTransport(policy, resolver=resolver, verify=verify),
        trust_env=False,
        follow_redirects=True,
        max_redirects=max_redirects,
        timeout=timeout,
        headers=headers,
    )


# --------------------------------------------------------------------------- httpx2 (mcp 2.x)

McpHttpClientFactory = Callable[..., "httpx2.AsyncClient"]
# Receives one URL decision of an MCP HTTP client (see mcp_http_client_factory).
UrlDecisionSink = Callable[[dict[str, Any]], None]


def url_decision_event(
    phase: str, decision: UrlVerdict, *, method: str | None = None
) -> dict[str, Any]:
    """What may be recorded about one URL decision: the origin, host and port
    the policy judged, its verdict and reason, and addresses. Never a path,
    query, userinfo or header: each can carry a credential."""
    event: dict[str, Any] = {"phase": phase}
    if phase != "connect":
        # A connect decision judges only host and port (pinning resolves
        # without a scheme), so it has no origin worth showing.
        event["origin"] = decision.origin or "<invalid-url>"
    event.update(
        host=decision.host, port=decision.port, decision=decision.verdict, reason=decision.reason
    )
    if method is not None:
        event["method"] = method
    if decision.addresses:
        event["addresses"] = list(decision.addresses)
    if decision.address is not None:
        event["address"] = decision.address  # the address that caused a refusal
    return event


class _OriginOnlyUrls(logging.Filter):
    """httpx and httpx2 log every request's full URL at INFO (``HTTP Request:
    POST https://user:TOKEN@host/path?key=...``). A host that turns INFO
    logging on would print the credentials a web or MCP URL carries, so URLs in
    those records are cut to their origin."""

    def __init__(self, url_type: type) -> None:
        super().__init__()
        self._url_type = url_type

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                audit_origin(str(a)) if isinstance(a, self._url_type) else a for a in record.args
            )
        return True


def _hide_logged_urls(logger: logging.Logger, url_type: type) -> None:
    if not any(isinstance(f, _OriginOnlyUrls) for f in logger.filters):
        logger.addFilter(_OriginOnlyUrls(url_type))


def mcp_http_client_factory(
    policy: UrlPolicy | None = None,
    *,
    resolver: Resolver | None = None,
    verify: ssl.SSLContext | str | bool = True,
    on_decision: UrlDecisionSink | None = None,
) -> McpHttpClientFactory:
    """A factory with the signature of mcp's ``create_mcp_http_client``
    (``headers``, ``timeout``, ``auth``) whose clients are pinned and judged.

    mcp 2.x speaks HTTP through httpx2 and httpcore2, a fork with the same
    design, so the same backend is rebuilt on that stack. httpx2 is imported
    here, on first use, so plain web fetches never load it.

    ``on_decision`` hears of every decision before it takes effect (see
    :func:`url_decision_event`): phase ``request`` for each request the client
    sends, so each redirect hop the SDK follows is a request of its own, and
    phase ``connect`` for the DNS answers a new connection is pinned to. If it
    raises, the request fails: an unrecorded request is not sent.
    """
    import httpcore2
    import httpx2

    guard = _guard(policy, resolver)
    _hide_logged_urls(logging.getLogger("httpx2"), httpx2.URL)

    class BlockedHttpx2Request(httpx2.TransportError, UrlRefused):
        def __init__(self, decision: UrlVerdict) -> None:
            self.decision = decision
            super().__init__(UrlRefused.__str__(self))

        def __str__(self) -> str:
            return UrlRefused.__str__(self)

    class _Backend2(_AsyncPinning, httpcore2.AsyncNetworkBackend):
        _connect_error = httpcore2.ConnectError
        _connect_timeout = httpcore2.ConnectTimeout

    class _Transport2(httpx2.AsyncHTTPTransport):
        def __init__(self) -> None:
            super().__init__(verify=verify, trust_env=False)
            self._pool = httpcore2.AsyncConnectionPool(
                ssl_context=httpx2.create_ssl_context(verify=verify, trust_env=False),
                http1=True,
                network_backend=_Backend2(
                    guard, BlockedHttpx2Request, httpcore2.AnyIOBackend(), on_decision
                ),
            )

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            _admit(guard, request, BlockedHttpx2Request, on_decision)
            response = await super().handle_async_request(request)
            _record_peer(response.extensions)
            return response

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=_Transport2(),
            trust_env=False,
            headers=headers,
            # mcp's own defaults: long reads, because a server may hold an SSE stream open
            timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
            auth=auth,
        )

    return factory
