"""The pinned httpx2 client inside the MCP SDK's streamable HTTP transport."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from _support.servers import serving_asgi

from charter.runtime.net.resolve import StaticResolver
from charter.runtime.net.transport import mcp_http_client_factory
from charter.runtime.net.urlpolicy import UrlPolicy, UrlRefused

mcp = pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402


@pytest.fixture(scope="module")
def mcp_port() -> Iterator[int]:
    app = MCPServer("pinned-test")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with serving_asgi(app.streamable_http_app()) as port:
        yield port


async def _add(url: str, policy: UrlPolicy) -> str:
    factory = mcp_http_client_factory(policy, resolver=StaticResolver({}))
    async with factory() as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await session.call_tool("add", {"a": 2, "b": 3})
                return str(result.content[0].text)  # type: ignore[union-attr]


def test_mcp_over_pinned_client(mcp_port: int) -> None:
    url = f"http://127.0.0.1:{mcp_port}/mcp"
    assert anyio.run(_add, url, UrlPolicy(allow_local_network=True)) == "5"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    yield exc
    for child in getattr(exc, "exceptions", ()):
        yield from _chain(child)
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            yield from _chain(linked)


def test_mcp_server_on_loopback_refused_by_default(mcp_port: int) -> None:
    url = f"http://127.0.0.1:{mcp_port}/mcp"
    with pytest.raises(BaseException) as info:
        anyio.run(_add, url, UrlPolicy())
    refused = [e for e in _chain(info.value) if isinstance(e, UrlRefused)]
    assert refused and refused[0].decision.reason == "loopback-address"
