"""Each tool the agent has, as a plan entry: built-in (description rendered
for the target), authored (entrypoint inspected without import), MCP (pinned
description and schema when locked) or script tool."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from charter.compiler.diagnostics import Span
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.frontends.blueprint import StageTable
from charter.compiler.resolve import emit_runtime
from charter.compiler.resolve.context import (
    RISKS,
    AgentContext,
    shell_timeout,
    span_ref,
    tool_metadata,
)
from charter.compiler.resolve.describe import render_description
from charter.compiler.resolve.grants import granted
from charter.compiler.resolve.schemas import schema_at, user_schema
from charter.compiler.resolve.tools import leviath_pins
from charter.compiler.resolve.tooltable import ToolRef
from charter.compiler.rules import diag
from charter.runtime.plan import AuthoredTool, Grant, McpToolPin, ScriptTool, ToolEntry

__all__ = ["authored_entry", "builtin_entry", "leviath_mcp_entry", "mcp_entry", "script_entry"]

if TYPE_CHECKING:
    from charter.runtime.mcp.lock import ToolPin


def mcp_entry(ctx: AgentContext, ref: ToolRef, project_root: Path) -> ToolEntry | None:
    """A tool entry for an MCP tool the compiler knows by name: with its
    pinned description and schema when the server is locked, else a bare
    entry whose schema arrives when the server connects."""
    from charter.compiler.resolve.mcp_lock import read_agent_lock, server_pins

    loaded = next(
        (x for x in ctx.agent.mcp if server_id_from_path(Path(x.display)) == ref.server), None
    )
    if loaded is None and ref.server is not None and ctx.server(ref.server) is not None:
        return leviath_mcp_entry(ctx, ref, project_root)
    if loaded is None or loaded.model is None or ref.server is None or ref.server_tool is None:
        return None
    m = loaded.model
    meta = tool_metadata(ctx, ref.name)
    risk = meta[0].risk if meta is not None and meta[0].risk is not None else m.risk
    pins = server_pins(
        read_agent_lock(project_root, ctx.agent.directory),
        ref.server,
        project_root / loaded.display,
    )
    pin = pins.entry.tool(ref.server_tool) if pins.entry is not None else None
    if pin is None:
        description, schema_text = "", None
        note = "not locked: the schema is known only when the server connects"
        mcp = McpToolPin(server=ref.server, tool=ref.server_tool)
    else:
        description = pin.description
        schema_text, note, mcp = _locked(ctx, ref, ref.server, pin)
    return ToolEntry(
        name=ref.name,
        source="mcp",
        impl=ref.server,
        description=description,
        input_schema=schema_text,
        validation_note=note,
        capability=m.call_capability(ref.server),
        risk=risk,
        origin=span_ref(Span(loaded.display)),
        mcp=mcp,
    )


def leviath_mcp_entry(ctx: AgentContext, ref: ToolRef, project_root: Path) -> ToolEntry | None:
    """A pinned tool of a [[mcp_servers]] entry: its locked description and
    schema, and Leviath's defaults for MCP tools (medium risk, ask)."""
    server = ctx.server(ref.server or "")
    if server is None or ref.server_tool is None:
        return None
    entry = leviath_pins(ctx, server, project_root)
    pin = entry.tool(ref.server_tool) if entry is not None else None
    if pin is None:
        return None
    schema_text, note, mcp = _locked(ctx, ref, server.name, pin)
    return ToolEntry(
        name=ref.name,
        source="mcp",
        impl=server.name,
        description=pin.description,
        input_schema=schema_text,
        validation_note=note,
        capability=f"mcp.call:{server.name}",
        risk="medium",
        origin=span_ref(server.span("name")),
        mcp=mcp,
    )


def _locked(
    ctx: AgentContext, ref: ToolRef, server: str, pin: ToolPin
) -> tuple[str | None, str, McpToolPin]:
    """A locked tool's schema as the plan carries it, its validation note,
    and its pin. A locked schema that cannot be used is reported: without
    validation when it needs what the validator never fetches, else kept so
    the runtime refuses every call."""
    from charter.compiler.resolve.mcp_lock import pinned_schema

    schema_text, note, rule = pinned_schema(pin.input_schema)
    if rule is not None:
        consequence = (
            "argument validation is off for this tool"
            if schema_text is None
            else "every call to this tool is refused"
        )
        ctx.diags.append(
            diag(
                rule,
                f"the locked schema of MCP tool '{ref.name}': {note}; {consequence}",
                ref.where,
            )
        )
        if schema_text is not None:
            note = ""  # the text stays in the plan: the runtime refuses every call
    mcp = McpToolPin(
        server=server,
        tool=pin.name,
        description_sha256=pin.description_sha256,
        schema_sha256=pin.schema_sha256,
    )
    return schema_text, note, mcp


def script_entry(ctx: AgentContext, ref: ToolRef) -> ToolEntry | None:
    """A Leviath script tool: the schema its directives declare, the file it
    came from, and the defaults of a tool that is neither built-in nor MCP
    (ask; outbound, since a script can reach the network)."""
    tool = next((t for t in ctx.scripts if t.name == ref.name), None)
    if tool is None:
        return None
    schema_text, note = schema_at(ctx, tool.input_schema, ref.where)
    return ToolEntry(
        name=tool.name,
        source="script",
        impl=tool.name,
        description=tool.description,
        input_schema=schema_text,
        validation_note=note,
        risk="medium",
        outbound=True,
        origin=span_ref(ref.where),
        script=ScriptTool(
            path=tool.display,
            sha256=tool.sha256,
            source=tool.source or None,
            scope="user" if tool.scope == "user" else "agent",
            override=tool.override,
        ),
    )


def authored_entry(
    ctx: AgentContext, ref: ToolRef, grants: list[Grant], project_root: Path
) -> ToolEntry | None:
    from charter.compiler.resolve.authored import inspect_entrypoint

    src = next(t for t in ctx.agent.tools if t.tool_id == ref.authored_id)
    spec = src.spec.model
    if spec is None:
        return None
    smap = src.spec.smap
    slot_path = _slot_path(ctx, src.directory)
    if spec.capability is not None and not granted(spec.capability, grants, slot_path):
        plural = (
            " (its own capabilities list cannot satisfy the gate)"
            if (spec.capability in spec.capabilities)
            else ""
        )
        ctx.diags.append(
            diag(
                "capability-not-granted",
                f"authored tool '{ref.name}' requires '{spec.capability}', which agent.yaml "
                f"does not grant{plural}",
                smap.value_span(("capability",)),
                key_path="capability",
                help=f"grant it under capabilities.defaults or capabilities.slots.{slot_path}",
            )
        )
    module_file, function = spec.entrypoint.split(":", 1)
    module_path = project_root / src.directory / f"{module_file.replace('.', '/')}.py"
    info, problem = inspect_entrypoint(module_path, function)
    if problem is not None:
        ctx.diags.append(
            diag(
                "authored-entrypoint-invalid",
                problem,
                smap.value_span(("entrypoint",)),
                key_path="entrypoint",
            )
        )
        return None
    assert info is not None
    schema_text, note = user_schema(
        ctx, spec.input_schema or {"type": "object", "properties": {}}, smap, ("input_schema",)
    )
    meta = tool_metadata(ctx, ref.name)
    risk = spec.risk
    if meta is not None and meta[0].risk is not None:
        risk = meta[0].risk
    return ToolEntry(
        name=ref.name,
        source="authored",
        impl=ref.name,
        description=spec.description,
        input_schema=schema_text,
        validation_note=note,
        capability=spec.capability,
        risk=risk,
        origin=span_ref(Span(src.spec.display)),
        authored=AuthoredTool(
            tool_id=ref.name,
            directory=src.directory,
            module=f"{src.directory}/{module_file.replace('.', '/')}.py",
            entrypoint=spec.entrypoint,
            module_sha256=info.sha256,
            capabilities=tuple(sorted(spec.capabilities)),
            is_async=info.is_async,
        ),
    )


def _slot_path(ctx: AgentContext, tool_dir_display: str) -> str:
    """The tool's path relative to the agent directory, as slot grants name it."""
    prefix = "" if ctx.agent.directory == "." else ctx.agent.directory + "/"
    return tool_dir_display.removeprefix(prefix)


def builtin_entry(ctx: AgentContext, ref: ToolRef, output: StageTable | None) -> ToolEntry:
    b = ref.builtin
    assert b is not None
    meta = tool_metadata(ctx, b.name)
    risk = b.risk
    if meta is not None and meta[0].risk is not None:
        if RISKS.index(meta[0].risk) > RISKS.index(risk):
            risk = meta[0].risk
    spec = output.output if output is not None else None
    description = (
        render_description(
            b,
            shell=ctx.shell,
            platform=ctx.options.target_platform,
            output=spec,
            shell_timeout_secs=shell_timeout(ctx),
        )
        if ctx.options.render_descriptions
        else b.description_template
    )
    # The catalog's facts a decision needs are pinned into the plan there.
    return emit_runtime.builtin_entry(
        b,
        description=description,
        risk=cast(Any, risk),
        origin=span_ref(ref.where),
        pin_template=ctx.options.render_descriptions,
    )
