"""Shared pieces of the MCP tests: a test server and project builders,
handed to tests as the ``kit`` fixture (tests import no helper modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from _support.files import write_tree
from mcp import Client
from mcp.server.mcpserver import MCPServer

from charter.compiler.compile import CompileOptions, CompileResult, compile_project
from charter.compiler.frontends.mcp_manifest import load_mcp_manifest
from charter.compiler.frontends.project import load_project
from charter.compiler.resolve.lock_targets import server_plan
from charter.compiler.resolve.mcp_lock import lock_path, manifest_sha256
from charter.runtime.mcp.client import to_listed
from charter.runtime.mcp.launch import launch_identity
from charter.runtime.mcp.lock import Lock, ServerLock, pin_tools, read_lock, write_lock

POSIX = CompileOptions("posix", "/bin/bash")
GRANTS = '    "mcp.connect:docs": {}\n    "mcp.call:docs": {}\n'


def core(grants: str = GRANTS) -> str:
    return (
        "agent:\n  id: core\nslots:\n  mcp: agent/mcp\ntools:\n  toolsets: []\n"
        "capabilities:\n  defaults:\n    fs.read: {}\n" + grants
    )


def docs_server() -> MCPServer:
    app = MCPServer("docs")

    @app.tool(description="Search the documentation.")
    def search(query: str) -> str:
        return f"results for {query}"

    @app.tool(description="Fetch one page.")
    def get_page(n: int, zoom: float = 1.5) -> str:
        return f"page {n}"

    @app.tool(description="Delete a page.")
    def delete_page(n: int) -> str:
        return f"deleted {n}"

    return app


write = write_tree  # as kit.write, for the test modules


async def _list(app: Any) -> list[Any]:
    async with Client(app, cache=None) as client:
        return [to_listed(t) for t in (await client.list_tools()).tools]


def lock_in_process(root: Path, server: str, app: Any, agent_dir: str = ".") -> None:
    """What ``charter mcp lock`` writes, for an in-process server."""
    manifest = root / agent_dir / "agent" / "mcp" / f"{server}.yaml"
    loaded = load_mcp_manifest(manifest, manifest.name)
    assert loaded.model is not None
    listed = anyio.run(_list, app)
    entry = ServerLock(
        server=server,
        transport=loaded.model.transport,
        launch=launch_identity(server_plan(server, loaded.model)),
        manifest_sha256=manifest_sha256(manifest) or "",
        tools=pin_tools(server, listed),
    )
    path = lock_path(root, agent_dir)
    write_lock(path, (read_lock(path) or Lock()).with_server(entry))


def compiled(root: Path) -> CompileResult:
    project = load_project(root, use_default_config=False)
    result = compile_project(project, POSIX)
    result.diagnostics = [*project.diagnostics, *result.diagnostics]
    return result


@pytest.fixture
def kit() -> Any:
    import sys

    return sys.modules[__name__]
