"""The resolver interface, the system resolver's edges and the audit helper."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from charter.runtime.net.resolve import ResolutionError, Resolver, StaticResolver, SystemResolver
from charter.runtime.net.urlpolicy import UrlPolicy, audit_origin


def _info(*addresses: str) -> list[Any]:
    out: list[Any] = []
    for a in addresses:
        family = socket.AF_INET6 if ":" in a else socket.AF_INET
        sockaddr = (a, 443, 0, 0) if family == socket.AF_INET6 else (a, 443)
        out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
    return out


def test_system_resolver_dedupes_and_strips_zones() -> None:
    def lookup(host: str, port: int, *rest: object) -> list[Any]:
        assert (host, port) == ("example.test", 443)
        return _info("192.0.2.1", "192.0.2.1", "fe80::1%eth0", "2001:db8::1")

    resolver = SystemResolver(getaddrinfo=lookup)
    assert isinstance(resolver, Resolver)
    assert resolver.resolve("example.test", 443) == ("192.0.2.1", "fe80::1", "2001:db8::1")


@pytest.mark.parametrize(
    "error", [socket.gaierror(socket.EAI_NONAME, "unknown"), OSError("down"), UnicodeError("x")]
)
def test_system_resolver_failures_raise_resolution_error(error: Exception) -> None:
    def lookup(*args: object) -> list[Any]:
        raise error

    with pytest.raises(ResolutionError):
        SystemResolver(getaddrinfo=lookup).resolve("example.test", 443)
    decision = UrlPolicy().check("https://example.test/", SystemResolver(getaddrinfo=lookup))
    assert (decision.verdict, decision.reason) == ("deny", "dns-failure")


def test_system_resolver_timeout_fails_closed() -> None:
    release = threading.Event()

    def slow(*args: object) -> list[Any]:
        release.wait(5)
        return _info("93.184.215.14")

    resolver = SystemResolver(timeout=0.05, getaddrinfo=slow)
    try:
        decision = UrlPolicy().check("https://slow.test/", resolver)
    finally:
        release.set()
    assert (decision.verdict, decision.reason) == ("deny", "dns-failure")
    assert "timed out" in decision.detail


def test_system_resolver_real_localhost() -> None:
    # No network needed: localhost comes from the hosts file.
    answers = SystemResolver().resolve("localhost", 80)
    assert answers and all(a in ("127.0.0.1", "::1") for a in answers)
    decision = UrlPolicy(allow_local_network=True).check("http://localhost/", SystemResolver())
    assert (decision.verdict, decision.reason) == ("allow", "local-network-allowed")


def test_static_resolver_records_and_fails_unknown_names() -> None:
    resolver = StaticResolver({"a.test": ["93.184.215.14"], "b.test": TimeoutError("slow")})
    assert resolver.resolve("a.test", 80) == ("93.184.215.14",)
    for name in ("b.test", "c.test"):
        with pytest.raises(ResolutionError):
            resolver.resolve(name, 80)
    assert resolver.calls == ["a.test", "b.test", "c.test"]


def test_audit_origin_never_echoes_secrets() -> None:
    assert audit_origin("https://u:pw@Example.com/p?token=1#f") == "https://example.com:443"
    assert audit_origin("http://[::1]:8080/") == "http://[::1]:8080"
    for bad in ("not a url", "http://exa mple.com/?token=1", "ftp://u:pw@host/"):
        assert audit_origin(bad) == "<invalid-url>"
        assert audit_origin(UrlPolicy().check(bad)) == "<invalid-url>"
