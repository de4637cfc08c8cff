"""The pinned transports against a real server on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import anyio
import httpcore
import httpx
import pytest

from charter.runtime.net.resolve import StaticResolver
from charter.runtime.net.transport import (
    AsyncPinnedTransport,
    BlockedRequest,
    PinnedTransport,
    connected_address,
    mcp_http_client_factory,
    pinned_async_client,
    pinned_client,
)
from charter.runtime.net.urlpolicy import UrlPolicy, UrlRefused

LOCAL = UrlPolicy(allow_local_network=True)
PUBLIC_IP = "93.184.215.14"


class LoopbackBackend(httpcore.SyncBackend):
    """Stands in for the Internet: records the address the transport pinned,
    then really connects to the test server on 127.0.0.1."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.connects.append((host, port))
        return super().connect_tcp("127.0.0.1", port, timeout, local_address, socket_options)


def _redirect(server: Any, target: str, host: str = "127.0.0.1") -> str:
    return str(server.url("/redirect?to=" + quote(target, safe=""), host=host))


def _client(policy: UrlPolicy, resolver: StaticResolver, backend: Any = None) -> httpx.Client:
    transport = PinnedTransport(policy, resolver=resolver, backend=backend)
    return httpx.Client(transport=transport, follow_redirects=True, trust_env=False, timeout=5)


def test_local_server_reachable_only_with_opt_in(http_server: Any) -> None:
    with pinned_client(LOCAL, resolver=StaticResolver({})) as client:
        response = client.get(http_server.url("/hello"))
    assert response.status_code == 200
    assert connected_address(response) == "127.0.0.1"
    with pinned_client(UrlPolicy(), resolver=StaticResolver({})) as client:
        with pytest.raises(BlockedRequest) as info:
            client.get(http_server.url("/hello"))
    assert info.value.decision.reason == "loopback-address"
    assert http_server.requests == [("/hello", f"127.0.0.1:{http_server.port}")]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "metadata-address"),
        ("http://0xa9fea9fe/", "metadata-address"),
        ("http://metadata.google.internal/", "metadata-hostname"),
        ("http://[fe80::1]/", "link-local-address"),
        ("http://rebind.test/", "metadata-address"),
        ("http://gone.test/", "dns-failure"),
        ("file:///etc/passwd", "unsupported-scheme"),
    ],
)
def test_redirect_to_refused_target(http_server: Any, target: str, reason: str) -> None:
    resolver = StaticResolver({"rebind.test": [PUBLIC_IP, "169.254.169.254"]})
    with pinned_client(LOCAL, resolver=resolver) as client:
        with pytest.raises(UrlRefused) as info:
            client.get(_redirect(http_server, target))
    assert info.value.decision.reason == reason
    # The first hop was served; the refused hop never reached any socket.
    assert [p.split("?")[0] for p, _ in http_server.requests] == ["/redirect"]


def test_pinned_to_the_validated_address_and_host_kept(http_server: Any) -> None:
    backend = LoopbackBackend()
    resolver = StaticResolver({"public.test": [PUBLIC_IP]})
    with _client(UrlPolicy(), resolver, backend) as client:
        response = client.get(http_server.url("/who", host="public.test"))
    assert response.text == f"host=public.test:{http_server.port}"
    assert backend.connects == [(PUBLIC_IP, http_server.port)]
    assert resolver.calls == ["public.test"]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://10.0.0.1/admin", "private-address"),
        ("http://127.0.0.1:{port}/who", "loopback-address"),
        ("http://0x7f.1:{port}/who", "loopback-address"),
        ("http://[::ffff:10.0.0.1]/", "private-address"),
        ("http://internal.test:{port}/who", "private-address"),
        ("http://rebind.test:{port}/who", "loopback-address"),
    ],
)
def test_redirect_from_public_to_private_refused(
    http_server: Any, target: str, reason: str
) -> None:
    backend = LoopbackBackend()
    resolver = StaticResolver(
        {
            "public.test": [PUBLIC_IP],
            "internal.test": ["192.168.0.10"],
            "rebind.test": [PUBLIC_IP, "127.0.0.1"],  # one bad answer is enough
        }
    )
    target = target.format(port=http_server.port)
    with _client(UrlPolicy(), resolver, backend) as client:
        with pytest.raises(BlockedRequest) as info:
            client.get(_redirect(http_server, target, host="public.test"))
    assert info.value.decision.reason == reason
    # Only the first hop ever reached a socket.
    assert backend.connects == [(PUBLIC_IP, http_server.port)]
    assert len(http_server.requests) == 1


def test_mixed_answers_refused_before_any_connection(http_server: Any) -> None:
    backend = LoopbackBackend()
    resolver = StaticResolver({"mixed.test": [PUBLIC_IP, "10.1.2.3", "8.8.8.8"]})
    with _client(UrlPolicy(), resolver, backend) as client:
        with pytest.raises(BlockedRequest) as info:
            client.get(http_server.url("/", host="mixed.test"))
    assert info.value.decision.reason == "private-address"
    assert info.value.decision.address == "10.1.2.3"
    assert backend.connects == []
    assert http_server.requests == []


def test_refusal_message_shows_origin_only() -> None:
    resolver = StaticResolver({})
    with pinned_client(UrlPolicy(), resolver=resolver) as client:
        with pytest.raises(BlockedRequest) as info:
            client.get("http://user:hunter2@10.0.0.1:8080/secret/path?token=abc")
    message = str(info.value)
    assert "http://10.0.0.1:8080" in message
    for secret in ("hunter2", "user", "secret", "token", "abc"):
        assert secret not in message
    assert isinstance(info.value, httpx.TransportError)


def test_ambient_proxy_variables_ignored(http_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy that would swallow every request (nothing listens on port 9).
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pinned_client(LOCAL, resolver=StaticResolver({})) as client:
        assert client.get(http_server.url("/direct")).status_code == 200
    # Even a client built with trust_env=True cannot route around the transport.
    transport = PinnedTransport(LOCAL, resolver=StaticResolver({}))
    with httpx.Client(transport=transport, trust_env=True) as client:
        assert client.get(http_server.url("/direct2")).status_code == 200
    assert [p for p, _ in http_server.requests] == ["/direct", "/direct2"]


def test_tls_keeps_server_name_while_pinned(https_server: Any, cert: Any) -> None:
    resolver = StaticResolver({cert.hostname: ["127.0.0.1"]})
    transport = PinnedTransport(LOCAL, resolver=resolver, verify=cert.client_context())
    with httpx.Client(transport=transport, trust_env=False) as client:
        response = client.get(https_server.url("/tls", host=cert.hostname, scheme="https"))
    # The certificate (issued to the name, not the IP) verified, the server saw
    # the name in SNI, and the Host header is the name.
    assert response.text == f"host={cert.hostname}:{https_server.port}"
    assert https_server.sni == [cert.hostname]
    assert connected_address(response) == "127.0.0.1"
    assert resolver.calls == [cert.hostname]


def test_tls_name_mismatch_still_fails(https_server: Any, cert: Any) -> None:
    # Pinning must not weaken certificate checks: another name on the same IP fails.
    resolver = StaticResolver({"other.test": ["127.0.0.1"]})
    transport = PinnedTransport(LOCAL, resolver=resolver, verify=cert.client_context())
    with httpx.Client(transport=transport, trust_env=False) as client:
        with pytest.raises(httpx.ConnectError):
            client.get(https_server.url("/", host="other.test", scheme="https"))


def test_async_transport(http_server: Any) -> None:
    resolver = StaticResolver({"rebind.test": ["127.0.0.1", "169.254.169.254"]})

    async def main() -> None:
        async with pinned_async_client(LOCAL, resolver=resolver) as client:
            ok = await client.get(http_server.url("/async"))
            assert ok.status_code == 200
            with pytest.raises(BlockedRequest) as info:
                await client.get(_redirect(http_server, "http://[::ffff:169.254.169.254]/"))
            assert info.value.decision.reason == "metadata-address"
            with pytest.raises(BlockedRequest) as info:
                await client.get(http_server.url("/", host="rebind.test"))
            assert info.value.decision.reason == "metadata-address"
        transport = AsyncPinnedTransport(UrlPolicy(), resolver=resolver)
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises(BlockedRequest):
                await client.get(http_server.url("/async"))

    anyio.run(main)
    assert [p for p, _ in http_server.requests] == [
        "/async",
        "/redirect?to=http%3A%2F%2F%5B%3A%3Affff%3A169.254.169.254%5D%2F",
    ]


def test_mcp_http_client_factory(http_server: Any) -> None:
    httpx2 = pytest.importorskip("httpx2")
    resolver = StaticResolver({"mixed.test": ["127.0.0.1", "100.100.100.200"]})
    factory = mcp_http_client_factory(LOCAL, resolver=resolver)

    async def main() -> None:
        async with factory(headers={"X-Test": "1"}) as client:
            assert isinstance(client, httpx2.AsyncClient)
            ok = await client.get(http_server.url("/mcp"))
            assert ok.status_code == 200
            for url, reason in [
                ("http://169.254.169.254/", "metadata-address"),
                (http_server.url("/", host="mixed.test"), "metadata-address"),
            ]:
                with pytest.raises(UrlRefused) as info:
                    await client.get(url)
                assert info.value.decision.reason == reason
                assert isinstance(info.value, httpx2.TransportError)

    anyio.run(main)
    strict = mcp_http_client_factory(UrlPolicy(), resolver=resolver)

    async def refused() -> None:
        async with strict() as client:
            with pytest.raises(UrlRefused):
                await client.get(http_server.url("/never"))

    anyio.run(refused)
    assert [p for p, _ in http_server.requests] == ["/mcp"]


def test_the_request_log_shows_only_the_origin(
    http_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # httpx logs each request's URL at INFO; a host that turns logging on
    # must not see the credentials or query a fetched URL carries
    import logging

    caplog.set_level(logging.INFO, logger="httpx")
    url = http_server.url("/hello?api_key=SEKRIT123").replace("http://", "http://bob:PW123@")
    with pinned_client(LOCAL, resolver=StaticResolver({})) as client:
        assert client.get(url).status_code == 200
    assert f"HTTP Request: GET http://127.0.0.1:{http_server.port} " in caplog.text
    for secret in ("SEKRIT123", "PW123", "bob", "/hello"):
        assert secret not in caplog.text


class BlackHoleBackend(httpcore.SyncBackend):
    """Every address is unreachable: each connect waits out its timeout."""

    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.timeouts.append(timeout)
        time.sleep(timeout or 0)
        raise httpcore.ConnectTimeout("black hole")


class AsyncBlackHoleBackend(httpcore.AnyIOBackend):
    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.timeouts.append(timeout)
        await anyio.sleep(timeout or 0)
        raise httpcore.ConnectTimeout("black hole")


MANY_ANSWERS = StaticResolver({"many.test": [f"93.184.215.{i}" for i in range(1, 11)]})


def test_many_unreachable_answers_share_one_connect_timeout() -> None:
    # Ten approved answers that never answer must not cost ten timeouts.
    backend = BlackHoleBackend()
    transport = PinnedTransport(UrlPolicy(), resolver=MANY_ANSWERS, backend=backend)
    started = time.monotonic()
    with httpx.Client(transport=transport, timeout=0.3) as client:
        with pytest.raises(httpx.ConnectTimeout):
            client.get("http://many.test/")
    assert time.monotonic() - started < 1.0
    assert sum(t or 0 for t in backend.timeouts) <= 0.35


def test_many_unreachable_answers_share_one_connect_timeout_async() -> None:
    backend = AsyncBlackHoleBackend()

    async def main() -> None:
        transport = AsyncPinnedTransport(UrlPolicy(), resolver=MANY_ANSWERS, backend=backend)
        async with httpx.AsyncClient(transport=transport, timeout=0.3) as client:
            with pytest.raises(httpx.ConnectTimeout):
                await client.get("http://many.test/")

    started = time.monotonic()
    anyio.run(main)
    assert time.monotonic() - started < 1.0
    assert sum(t or 0 for t in backend.timeouts) <= 0.35
