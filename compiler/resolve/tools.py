"""Collecting an agent's tool table: built-ins of its toolsets and stages,
authored tools, its MCP servers' locked or dynamic tools, and script tools,
with every name clash reported by the table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from charter.compiler.catalog.builtin import TOOLSETS
from charter.compiler.diagnostics import Span
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.resolve.context import FAN_OUT, SUBMIT, AgentContext
from charter.compiler.resolve.tooltable import ToolTable
from charter.compiler.rules import diag, diag_at
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.mcp.filters import select_tools, unmatched_patterns
from charter.runtime.mcp.naming import mcp_safe_name

__all__ = ["collect_tools", "leviath_pins"]

if TYPE_CHECKING:
    # Agent cores, MCP manifests and lock files are read only for agents
    # that have them; a blueprint-only project never imports their models.
    from charter.compiler.frontends.mcp_manifest import McpServer
    from charter.compiler.resolve.leviath_mcp import LeviathServer
    from charter.runtime.mcp.lock import ServerLock


def collect_tools(
    ctx: AgentContext, stages: Mapping[str, StageEntry], project_root: Path
) -> ToolTable:
    table = ToolTable()
    core, csm = ctx.core, ctx.core_smap
    if core is not None and csm is not None:
        from charter.compiler.resolve.mcp_lock import lock_display, read_agent_lock, server_pins

        for i, toolset in enumerate(core.tools.toolsets):
            where = csm.value_span(("tools", "toolsets", i))
            for name in TOOLSETS.get(toolset, ()):
                table.add_builtin(name, where)
        for tool in ctx.agent.tools:
            table.add_authored(tool.tool_id, Span(tool.spec.display))
        lock = read_agent_lock(project_root, ctx.agent.directory)
        if lock.error is not None:
            ctx.diags.append(
                diag(
                    "mcp-lock-invalid",
                    f"{lock_display(ctx.agent.directory)}: {lock.error}",
                    Span(lock_display(ctx.agent.directory)),
                )
            )
        for loaded in ctx.agent.mcp:
            server = server_id_from_path(Path(loaded.display))
            m = loaded.model
            if m is None or not m.enabled:
                continue
            pins = server_pins(lock, server, project_root / loaded.display)
            if pins.stale is not None:
                ctx.diags.append(diag("mcp-lock-stale", pins.stale, Span(loaded.display)))
            if pins.entry is not None:
                _add_pinned_tools(ctx, table, server, m, loaded.smap, pins.entry)
                continue
            # Exact include entries name tools statically, so their
            # collisions are caught now; everything else is discovered when
            # the server connects.
            declared = [t for t in m.tools.include if "*" not in t and t not in m.tools.exclude]
            if declared:
                table.add_mcp_tools(server, declared, loaded.smap.value_span(("tools", "include")))
            table.add_dynamic_server(server, mcp_safe_name(server, "x")[:-1])
    # Script tools first: a script is the agent's own tool, even under a
    # built-in's name, so it must hold the name before the stages' built-ins.
    for script in ctx.scripts:
        table.add_script(script.name, script.where)
    _add_leviath_servers(ctx, table, project_root)
    # A blueprint offers built-ins by naming them in a stage.
    for entry in stages.values():
        for i, name in enumerate(entry.stage.available_tools):
            if table.holds_script(name):
                continue
            table.add_builtin(name, entry.span("available_tools", i))
        if entry.stage.mode == "output" or entry.stage.require_output:
            table.add_builtin(SUBMIT, entry.span("mode"))
        if entry.stage.mode == "fan_out":
            table.add_builtin(FAN_OUT, entry.span("mode"))
    ctx.diags.extend(table.diagnostics)
    return table


def leviath_pins(ctx: AgentContext, server: LeviathServer, project_root: Path) -> ServerLock | None:
    from charter.compiler.resolve.leviath_mcp import entry_digest
    from charter.compiler.resolve.mcp_lock import read_agent_lock, server_pins_for

    read = read_agent_lock(project_root, ctx.agent.directory)
    return server_pins_for(read, server.name, entry_digest(server.model)).entry


def _add_leviath_servers(ctx: AgentContext, table: ToolTable, project_root: Path) -> None:
    """A locked [[mcp_servers]] entry's tools join the table by name; an
    unlocked one is discovered when it connects."""
    for server in ctx.servers:
        entry = leviath_pins(ctx, server, project_root)
        if entry is not None and entry.tools:
            table.add_mcp_tools(server.name, [t.name for t in entry.tools], server.span("name"))
        else:
            table.add_dynamic_server(server.name, mcp_safe_name(server.name, "x")[:-1])


def _add_pinned_tools(
    ctx: AgentContext,
    table: ToolTable,
    server: str,
    m: McpServer,
    smap: SourceMap,
    entry: ServerLock,
) -> None:
    """A locked server's tools, filtered, join the table like any other
    tool; a filter pattern that selects none of them is reported."""
    names = [t.name for t in entry.tools]
    for key in ("include", "exclude"):
        patterns = getattr(m.tools, key)
        for pattern in unmatched_patterns(patterns, names):
            i = patterns.index(pattern)
            ctx.diags.append(
                diag_at(
                    "mcp-filter-matches-nothing",
                    f"tools.{key} pattern '{pattern}' matches none of the tools locked for "
                    f"MCP server '{server}'",
                    smap,
                    ("tools", key, i),
                )
            )
    selected = select_tools(names, m.tools.include, m.tools.exclude)
    if selected:
        where = smap.value_span(("tools", "include")) if m.tools.include else Span(smap.path)
        table.add_mcp_tools(server, selected, where)
