"""The plan's MCP servers: a core's manifests and the [[mcp_servers]]
entries a stage names, with their connect decision and their locked pins."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from charter.compiler.diagnostics import Span
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.resolve.context import AgentContext, span_ref
from charter.compiler.resolve.permissions import APPROVAL_TO_PERMISSION
from charter.compiler.resolve.tools import leviath_pins
from charter.runtime.mcp.filters import select_tools
from charter.runtime.plan import Clamp, Decision, McpServerPlan, McpToolPin, stricter

__all__ = ["leviath_server_plans", "mcp_server_plans"]

if TYPE_CHECKING:
    # Agent cores, MCP manifests and lock files are read only for agents
    # that have them; a blueprint-only project never imports their models.
    from charter.compiler.frontends.mcp_manifest import McpServer


def mcp_server_plans(ctx: AgentContext, project_root: Path) -> list[McpServerPlan]:
    out: list[McpServerPlan] = []
    if not ctx.agent.mcp:
        return out
    from charter.compiler.resolve.mcp_lock import read_agent_lock, server_pins

    for loaded in ctx.agent.mcp:
        m: McpServer | None = loaded.model
        if m is None or not m.enabled:
            continue
        server = server_id_from_path(Path(loaded.display))
        approval = stricter("ask", APPROVAL_TO_PERMISSION[m.approval_policy])
        connect = Decision(permission=approval, liftable=approval == "ask")
        # The same test collect_tools applies: an entry counts only when it
        # is current for this manifest (a stale one leaves the server dynamic).
        entry = server_pins(
            read_agent_lock(project_root, ctx.agent.directory),
            server,
            project_root / loaded.display,
        ).entry
        kept = (
            set(select_tools([t.name for t in entry.tools], m.tools.include, m.tools.exclude))
            if entry is not None
            else set()
        )
        pins = tuple(
            McpToolPin(
                server=server,
                tool=t.name,
                description_sha256=t.description_sha256,
                schema_sha256=t.schema_sha256,
            )
            for t in (entry.tools if entry is not None else ())
            if t.name in kept
        )
        out.append(
            m.server_plan(
                server,
                connect_decision=connect,
                locked=entry is not None,
                origin=span_ref(Span(loaded.display)),
                pins=pins,
            )
        )
    return out


def leviath_server_plans(ctx: AgentContext, project_root: Path) -> list[McpServerPlan]:
    from charter.compiler.resolve.leviath_mcp import to_server_plan

    out: list[McpServerPlan] = []
    for srv in ctx.servers:
        entry = leviath_pins(ctx, srv, project_root)
        if srv.name in ctx.untrusted_servers:
            connect = Decision(
                permission="deny",
                liftable=False,
                clamps=(
                    Clamp(
                        rule="blueprint-mcp-server-untrusted",
                        before="ask",
                        after="deny",
                        reason="declared by the blueprint; your config does not trust it",
                        source=span_ref(srv.span("name")),
                    ),
                ),
            )
        else:
            connect = Decision(permission="ask", liftable=True)
        pins = tuple(
            McpToolPin(
                server=srv.name,
                tool=t.name,
                description_sha256=t.description_sha256,
                schema_sha256=t.schema_sha256,
            )
            for t in (entry.tools if entry is not None else ())
        )
        out.append(
            to_server_plan(
                srv,
                connect=connect,
                locked=entry is not None,
                pins=pins,
                origin=span_ref(srv.span("name")),
            )
        )
    return out
