"""network = "proxy": the only way out is Charter's proxy, which applies
allow_hosts and the URL policy to every connection."""

from __future__ import annotations

import http.server
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.sandbox import need_full_sandbox, profile
from _support.servers import serving

from charter.runtime.proc import run_command
from charter.runtime.sandbox.hosts import host_matches
from charter.runtime.sandbox.launcher import Sandbox


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Handler.seen.append(self.path)
        body = b"hello from the host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    _Handler.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    with serving(httpd):
        yield httpd.server_address[1]


def _sandbox(tmp_path: Path, hosts: tuple[str, ...], *, local: bool) -> Sandbox:
    need_full_sandbox()
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return Sandbox(
        profile(network="proxy", allow_hosts=hosts),
        workspace=ws,
        private_dir=tmp_path / "private",
        allow_local_network=local,
    )


def _curl(sb: Sandbox, *args: str) -> str:
    env = sb.command_env({"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    proc = run_command(
        ["curl", "-sS", "-m", "5", "--noproxy", "", *args],
        cwd=sb.workspace,
        env=env,
        timeout_s=20,
        sandbox=sb,
    )
    assert proc.error is None, proc.error
    return proc.stdout + proc.stderr


def test_an_allowed_host_is_reached_through_the_proxy(tmp_path: Path, server: int) -> None:
    sb = _sandbox(tmp_path, ("127.0.0.1",), local=True)
    try:
        assert "hello from the host" in _curl(sb, f"http://127.0.0.1:{server}/plain")
        assert "hello from the host" in _curl(
            sb, "--proxytunnel", f"http://127.0.0.1:{server}/tunnel"
        )
    finally:
        sb.close()
    assert _Handler.seen == ["/plain", "/tunnel"]


def test_a_host_not_allowed_is_refused_without_being_looked_up(
    tmp_path: Path, server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from charter.runtime.net import resolve

    looked_up: list[str] = []
    real = resolve.SystemResolver.resolve

    def spy(self: Any, host: str, port: int) -> tuple[str, ...]:
        looked_up.append(host)
        return real(self, host, port)

    monkeypatch.setattr(resolve.SystemResolver, "resolve", spy)
    sb = _sandbox(tmp_path, ("127.0.0.1",), local=True)
    try:
        out = _curl(sb, "-i", "http://exfiltrate-this-secret.example.com/")
    finally:
        sb.close()
    assert "403" in out and "not in the sandbox's allow_hosts" in out
    assert looked_up == []


def test_the_url_policy_still_refuses_the_local_network(tmp_path: Path, server: int) -> None:
    sb = _sandbox(tmp_path, ("*",), local=False)
    try:
        out = _curl(sb, "-i", f"http://127.0.0.1:{server}/")
    finally:
        sb.close()
    assert "403" in out and "loopback" in out
    assert _Handler.seen == []


def test_going_around_the_proxy_reaches_nothing(tmp_path: Path, server: int) -> None:
    sb = _sandbox(tmp_path, ("*",), local=True)
    try:
        out = _curl(sb, "--noproxy", "*", f"http://127.0.0.1:{server}/direct")
    finally:
        sb.close()
    assert "hello" not in out and _Handler.seen == []


def test_host_patterns() -> None:
    assert host_matches("api.example.com", ["*.example.com"])
    assert not host_matches("example.com", ["*.example.com"])
    assert not host_matches("evilexample.com", ["*.example.com"])
    assert host_matches("PyPI.org.", ["pypi.org"])
    assert host_matches("anything.test", ["*"])
    assert not host_matches("pypi.org", [])
