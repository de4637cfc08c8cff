"""Streamable HTTP through the pinned transport: allowed only where the URL
policy allows, with ``${VAR}`` expanded into headers after approval."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer

from charter.runtime.mcp.client import (
    ConnectAuthorization,
    McpHost,
    McpPool,
    ServerReport,
    ServerRequest,
)
from charter.runtime.net.urlpolicy import UrlPolicy
from charter.runtime.plan import Decision, McpServerPlan
from charter.runtime.results import ToolResult

SEEN: list[str] = []


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    app = MCPServer("web")

    @app.tool(description="Add two numbers.")
    def add(a: int, b: int) -> int:
        return a + b

    inner = app.streamable_http_app()

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            SEEN.append(headers.get(b"x-docs-key", b"").decode())
        await inner(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(recording, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(5)


def _plan(port: int) -> McpServerPlan:
    return McpServerPlan(
        server="web",
        transport="streamable_http",
        url=f"http://127.0.0.1:{port}/mcp",
        headers=(("X-Docs-Key", "${WEB_KEY}"),),
        connect_capability="mcp.connect:web",
        call_capability="mcp.call:web",
        connect_decision=Decision(permission="ask", liftable=True),
        connect_timeout_seconds=10,
    )


def _run(tmp_path: Path, port: int, policy: UrlPolicy) -> tuple[ServerReport, ToolResult]:
    host = McpHost(
        agent_dir=tmp_path,
        workspace=tmp_path,
        home=tmp_path,
        log_dir=tmp_path / "logs",
        environ={"WEB_KEY": "k-123456789"},
        url_policy=policy,
    )

    async def main() -> tuple[ServerReport, ToolResult]:
        req = ServerRequest(_plan(port), ConnectAuthorization("web", "approval"))
        async with McpPool(host) as pool:
            [report] = await pool.discover([req])
            result = await pool.call("web__add", {"a": 2, "b": 3}, grants=["mcp.call:web"])
        return report, result

    return anyio.run(main)


def test_http_server_on_loopback_with_local_network_allowed(tmp_path: Path, port: int) -> None:
    SEEN.clear()
    report, result = _run(tmp_path, port, UrlPolicy(allow_local_network=True))
    assert report.status == "ok", report.message
    assert [t.name for t in report.offered] == ["web__add"]
    assert (result.status, result.content) == ("ok", "5")
    assert SEEN and set(SEEN) == {"k-123456789"}


def test_http_server_on_loopback_refused_by_default(tmp_path: Path, port: int) -> None:
    SEEN.clear()
    report, result = _run(tmp_path, port, UrlPolicy())
    assert (report.status, report.rule) == ("failed", "mcp-url-refused")
    assert "http://127.0.0.1:" in report.message and "k-123456789" not in report.message
    assert result.status == "unavailable"
    assert SEEN == []  # nothing was sent
