"""Resolving stages: which tools each offers (names canonical, unknown ones
reported), the decision for each with its provenance, edges and gates,
outputs, fan_out settings, and the one implicit stage of a bare core."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from charter.compiler.diagnostics import format_key_path, suggestion
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.frontends.blueprint import StageTable
from charter.compiler.frontends.stage_toml import StageEntry, stage_file_name
from charter.compiler.frontends.validation import thaw
from charter.compiler.resolve import emit_runtime
from charter.compiler.resolve.context import FAN_OUT, SUBMIT, AgentContext, span_ref, tool_enabled
from charter.compiler.resolve.describe import shell_hint_block
from charter.compiler.resolve.permissions import Said, ScopeInputs, resolve_permission
from charter.compiler.resolve.regions import (
    stage_layout,
    stage_models,
    stage_routing,
    stage_window,
)
from charter.compiler.resolve.schemas import ints_only
from charter.compiler.resolve.scopes import (
    UserScopes,
    core_inputs,
    declared_prefix,
    default_permission,
    loosenable,
    permission_map,
    untrusted_server_clamp,
)
from charter.compiler.resolve.tooltable import ToolTable, all_builtin_names
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.mcp.naming import mcp_safe_name
from charter.runtime.plan import (
    Edge,
    EdgeTransform,
    FanOut,
    Gate,
    InteractionPoint,
    NudgePolicy,
    OutputSpec,
    RequiredRegion,
    Stage,
    StageTool,
    ToolEntry,
    canonical_json,
)

__all__ = ["implicit_stage", "resolve_stage"]


def implicit_stage(ctx: AgentContext, table: ToolTable) -> dict[str, StageEntry]:
    """An agent core without a blueprint runs as one interactive stage that
    offers every tool the core declares."""
    names = tuple(n for n in table.tools if tool_enabled(ctx, n))
    # An unlocked MCP server's tools are known only at connect time; the
    # pattern lets the runtime offer what it discovers (each with an ask).
    names += tuple(prefix + "*" for prefix in sorted(table.dynamic_servers))
    # Cores run turn by turn with a person in the conversation. The host
    # caps each turn at runtime.max_model_steps model steps; Charter counts
    # them over the whole stage, which is never looser.
    spec: dict[str, object] = {"mode": "interactive", "available_tools": names}
    if ctx.core is not None:
        spec["max_iterations"] = ctx.core.runtime.max_model_steps
    stage = StageTable.model_validate(spec)
    smap = ctx.core_smap or SourceMap(ctx.agent.directory)
    return {"main": StageEntry("main", stage, smap.path, smap, ("tools",))}


def resolve_stage(
    ctx: AgentContext,
    entry: StageEntry,
    table: ToolTable,
    entries: dict[str, ToolEntry],
    user: UserScopes,
    agent_perms: dict[str, Said],
    stage_names: list[str],
) -> Stage:
    st = entry.stage
    offered: list[str] = []
    for i, raw in enumerate(st.available_tools):
        name = table.canonical(raw)
        if name in table.tools:
            if not tool_enabled(ctx, name):
                ctx.diags.append(
                    diag(
                        "tool-disabled",
                        f"'{name}' is disabled by tools.metadata and is not offered",
                        entry.span("available_tools", i),
                        key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                    )
                )
                continue
            if name in entries:
                offered.append(name)
        elif table.is_dynamic_mcp(raw):
            offered.append(raw)
        elif "__" in raw and not declared_prefix(ctx, raw):
            # Leviath's lint skips MCP names: the server may be installed on
            # another machine. Nothing can answer the name here, so it is not
            # offered, and the warning says why.
            ctx.diags.append(
                diag(
                    "mcp-server-not-declared",
                    f"stage '{entry.name}' offers '{raw}', an MCP tool name, but no declared MCP "
                    "server has that prefix; the stage does not get it",
                    entry.span("available_tools", i),
                    key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                )
            )
        else:
            ctx.diags.append(
                diag(
                    "unknown-tool",
                    f"stage '{entry.name}' offers '{raw}', which is not a built-in, authored or "
                    "MCP tool" + suggestion(raw, [*table.tools, *all_builtin_names()]),
                    entry.span("available_tools", i),
                    key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                )
            )
    offered.extend(_connector_tools(ctx, entry, table, entries))
    if st.mode == "fan_out" and FAN_OUT not in offered:
        offered.append(FAN_OUT)  # mode = "fan_out" grants it
    if st.mode == "output" and SUBMIT not in offered:
        offered.append(SUBMIT)  # mode = "output" grants it
    elif st.require_output and SUBMIT not in offered:
        ctx.diags.append(
            diag(
                "output-missing-submit-tool",
                f"stage '{entry.name}' requires an output but does not offer submit_output",
                entry.span("require_output"),
                key_path=format_key_path(("stages", entry.name, "require_output")),
            )
        )
    offered = list(dict.fromkeys(offered))

    required: list[str] = []
    for i, raw in enumerate(st.required_tools):
        name = table.canonical(raw)
        if name not in offered:
            ctx.diags.append(
                diag(
                    "required-tool-not-available",
                    f"'{raw}' is in required_tools but not in available_tools of stage "
                    f"'{entry.name}'",
                    entry.span("required_tools", i),
                    key_path=format_key_path(("stages", entry.name, "required_tools", i)),
                )
            )
        else:
            required.append(name)

    blocking = {n for n in offered if n in entries and entries[n].blocks_on_person}
    unattended = [n for n in offered if n not in blocking or n in required]

    stage_perms = permission_map(
        st.tool_permissions,
        entry.smap,
        (*entry.prefix, "tool_permissions"),
        table,
        ctx,
        f"stage '{entry.name}'",
    )
    decisions: list[StageTool] = []
    for name in offered:
        tool_entry = entries.get(name)
        ref = table.tools.get(name)
        core = core_inputs(ctx, tool_entry, ref) if tool_entry and ref else None
        registry_default = core.registry if core is not None and ctx.blueprint is None else None
        scopes = ScopeInputs(
            builtin_default=(
                registry_default.value
                if registry_default is not None
                else default_permission(ref)
                if ref
                else "ask"
            ),
            default_from=registry_default,
            stage=stage_perms.get(name),
            agent=agent_perms.get(name),
            agent_config=user.agent_config.get(name),
            config=user.config.get(name),
            blueprint_loosenable=loosenable(ctx, name, ref),
            allow_blueprint_permissions=user.trust_blueprint,
        )
        decision = untrusted_server_clamp(ctx, name, ref, resolve_permission(scopes, core))
        decisions.append(StageTool(name=name, decision=decision))

    edges = tuple(_edge(ctx, entry, path, e, stage_names, table) for path, e in st.all_edges())
    edges += _implied_edges(entry, stage_names)
    output = None
    if st.output is not None:
        o = st.output
        output = OutputSpec(
            format=o.format,
            instructions=o.instructions,
            example=o.example,
            answer_schema=canonical_json(ints_only(thaw(o.schema_))) if o.schema_ else None,
        )
    hint = None
    wants_hint = st.shell_hint if st.shell_hint is not None else _agent_hint(ctx)
    if wants_hint and "shell" in offered or wants_hint and "terminal" in offered:
        hint = shell_hint_block(ctx.options.target_platform)
    return Stage(
        name=entry.name,
        mode=st.mode or "autonomous",
        attended=tuple(offered),
        unattended=tuple(unattended),
        required_tools=tuple(required),
        allow_blocking_tools=st.allow_blocking_tools,
        allow_complete=bool(st.allow_complete),
        tools=tuple(decisions),
        edges=edges,
        max_iterations=st.max_iterations,
        max_revisits=st.max_revisits,
        output=output,
        shell_hint=hint,
        system_prompt=_system_prompt(st),
        transition_prompt=st.transition_prompt,
        fan_out=_fan_out(entry),
        interaction_points=_points(entry),
        requires_children=st.requires_children,
        required_regions=_required_regions(ctx, entry),
        regions=(layout := stage_layout(ctx, entry, size := stage_window(ctx, st))),
        context_window=size if layout else None,
        tool_routing=stage_routing(st.tool_routing, table),
        models=stage_models(st),
        nudge=_nudge(ctx, entry),
        accepts_messages=st.accepts_messages,
        origin=span_ref(entry.span()),
        redirect_write=emit_runtime.redirect_write(),
    )


def _connector_tools(
    ctx: AgentContext, entry: StageEntry, table: ToolTable, entries: Mapping[str, ToolEntry]
) -> list[str]:
    """What ``available_connectors`` offers: every pinned tool of a locked
    server, or the ``<server>__*`` pattern of one discovered at run time."""
    out: list[str] = []
    for i, server_name in enumerate(entry.stage.available_connectors):
        server = ctx.server(server_name)
        core_manifest = any(
            server_id_from_path(Path(x.display)) == server_name for x in ctx.agent.mcp
        )
        if server is None and not core_manifest:
            declared = [s.name for s in ctx.servers]
            ctx.diags.append(
                diag(
                    "mcp-server-not-declared",
                    f"stage '{entry.name}' names the connector '{server_name}', but neither the "
                    "blueprint nor your config declares an MCP server of that name"
                    + suggestion(server_name, declared),
                    entry.span("available_connectors", i),
                    key_path=format_key_path(("stages", entry.name, "available_connectors", i)),
                )
            )
            continue
        pinned = sorted(
            n for n, r in table.tools.items() if r.server == server_name and n in entries
        )
        if pinned:
            out.extend(pinned)
        else:
            out.append(mcp_safe_name(server_name, "x")[:-1] + "*")
    return out


def _implied_edges(entry: StageEntry, stage_names: list[str]) -> tuple[Edge, ...]:
    """Leviath runs a stage that declares no transitions on into the next
    stage declared (the last one ends the run); a fan_out stage hands over
    to its merge_stage. Written into the plan as always-edges."""
    st = entry.stage
    if st.mode == "fan_out" and st.merge_stage in stage_names:
        # Leviath hands a fan_out stage over to its merge stage once its
        # workers have reported, whatever else the stage declares (such as an
        # error edge); the loop takes it only after a fan_out call.
        if any(e.to == st.merge_stage for _, e in st.all_edges()):
            return ()
        origin = span_ref(entry.span())
        return (Edge(to=st.merge_stage, condition="always", implied=True, origin=origin),)
    # A stage that may end the run (an output stage, allow_complete) keeps
    # that ending: an always-edge would be taken before it could finish.
    if st.declares_edges or st.mode == "output" or st.allow_complete:
        return ()
    at = stage_names.index(entry.name) if entry.name in stage_names else -1
    target = stage_names[at + 1] if 0 <= at < len(stage_names) - 1 else None
    if target is None:
        return ()
    return (Edge(to=target, condition="always", implied=True, origin=span_ref(entry.span())),)


def _nudge(ctx: AgentContext, entry: StageEntry) -> NudgePolicy | None:
    """The nudge, each field from the stage, else the agent, else the user's
    config (as Leviath resolves it); None when no level configures one. A
    stage with interaction points is not nudged unless a level says so."""
    bp = ctx.blueprint
    levels: list[dict[str, Any]] = []
    if entry.stage.nudge is not None:
        levels.append(entry.stage.nudge.model_dump(exclude_none=True))
    if bp is not None and bp.agent.nudge is not None:
        levels.append(bp.agent.nudge.model_dump(exclude_none=True))
    if ctx.config is not None and isinstance(ctx.config.nudge, dict):
        levels.append({k: v for k, v in ctx.config.nudge.items() if v is not None})
    if not levels:
        return None
    d = NudgePolicy()

    def pick(key: str, default: Any) -> Any:
        return next((lv[key] for lv in levels if key in lv), default)

    reviewed = entry.stage.mode == "interactive_points" and bool(entry.stage.interaction_points)
    return NudgePolicy(
        enabled=bool(pick("enabled", not reviewed)),
        max=int(pick("max", d.max)),
        text=str(pick("text", d.text)),
    )


def _system_prompt(st: StageTable) -> str | None:
    """The stage's instructions; a fan_out stage's split_prompt (which asks
    for the work items) is folded onto them, as Leviath folds it."""
    split = (st.split_prompt or "").strip() if st.mode == "fan_out" else ""
    if not split:
        return st.system_prompt
    return f"{st.system_prompt}\n\n{split}" if st.system_prompt else split


def _required_regions(ctx: AgentContext, entry: StageEntry) -> tuple[RequiredRegion, ...]:
    """The required regions of the stage's layout (its own, else the
    blueprint's) that its agent writes, as Leviath checks them before the
    stage may end; regions filled from the caller are checked at the start."""
    own = entry.stage.context.regions if entry.stage.context is not None else {}
    bp = ctx.blueprint
    layout = own or (bp.context.regions if bp is not None and bp.context is not None else {})
    return tuple(
        RequiredRegion(name=name, message=region.required_message)
        for name, region in layout.items()
        if region.is_required and not region.caller_seeded(name)
    )


def _points(entry: StageEntry) -> tuple[InteractionPoint, ...]:
    """The checkpoints of an interactive_points stage (Leviath reads them
    only in that mode; ``choices`` and ``followups`` are its older names)."""
    st = entry.stage
    if st.mode != "interactive_points":
        return ()
    return tuple(
        InteractionPoint(
            name=p.name or "",
            prompt=p.prompt or "",
            required=p.required,
            unattended=p.unattended or "auto_approve",
            style=p.style or "free_text",
            options=p.options or p.choices,
            directives=tuple(sorted((p.directives or p.followups).items())),
            abort_options=p.abort_options,
            edit_options=p.edit_options,
            document_region=p.document_region,
        )
        for p in st.interaction_points
    )


def _fan_out(entry: StageEntry) -> FanOut | None:
    """A fan_out stage's workers as the plan carries them (their checks are
    in :mod:`charter.compiler.lint.sources`)."""
    st = entry.stage
    if st.mode != "fan_out":
        return None
    return FanOut(
        worker_stage=st.worker_stage,
        worker_agent=st.worker_agent,
        worker_query=st.worker_query,
        merge_stage=st.merge_stage,
        results_region=st.results_region,
        max_workers=st.max_workers,
        max_items=st.max_items,
        max_attempts=st.max_attempts,
        on_worker_failure=st.on_worker_failure or "continue",
    )


def _agent_hint(ctx: AgentContext) -> bool:
    bp = ctx.blueprint
    if bp is not None and bp.agent.shell_hint is not None:
        return bp.agent.shell_hint
    return ctx.config.shell_hint if ctx.config is not None else True


def _unloaded_stages(ctx: AgentContext) -> frozenset[str]:
    """Stages whose file did not validate: they exist, and their own
    diagnostics say what is wrong, so an edge to one is no second error."""
    return frozenset(stage_file_name(f.display) for f in ctx.agent.stage_files if f.model is None)


def _edge(
    ctx: AgentContext,
    entry: StageEntry,
    path: tuple[str | int, ...],
    e: Any,
    stage_names: list[str],
    table: ToolTable,
) -> Edge:
    if e.to not in stage_names and e.to not in _unloaded_stages(ctx):
        ctx.diags.append(
            diag(
                "edge-to-unknown-stage",
                f"edge from '{entry.name}' leads to '{e.to}', which is not a stage"
                + suggestion(e.to, stage_names),
                entry.span(*path, "to") if path[0] == "edges" else entry.span(*path, key=True),
                key_path=format_key_path(("stages", entry.name, *path)),
            )
        )
    gate = None
    if e.gate is not None:
        g = e.gate
        gate = Gate(
            require_modifications=g.require_modifications,
            require_regions=tuple(g.require_regions),
            require_region_updated=(g.require_region_updated,) if g.require_region_updated else (),
            require_no_open_items=(g.require_no_open_items,) if g.require_no_open_items else (),
            region=g.region,
            tools=tuple(table.canonical(t) for t in g.tools),
            message=g.message,
            max_attempts=g.max_attempts or 3,
        )
    condition = e.effective_condition
    return Edge(
        to=e.to,
        condition=condition,
        hint=e.hint,
        transform=e.transform,
        transform_config=None
        if e.transform_config is None
        else EdgeTransform(
            carry=e.transform_config.carry,
            compact=e.transform_config.compact,
            clear=e.transform_config.clear,
            compact_prompt=e.transform_config.compact_prompt,
        ),
        gate=gate,
        stuck_after_iterations=e.stuck_after_iterations,
        stuck_after_minutes=e.stuck_after_minutes,
        stuck_after_same_file_edits=e.stuck_after_same_file_edits,
        stuck_after_tool_calls=e.stuck_after_tool_calls,
        origin=span_ref(entry.span(*path, key=True)),
    )
