"""Resolving one agent: every step of :mod:`charter.compiler.resolve` in
order, into a :class:`ResolvedAgent` that the lint checks and the emitter
read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from charter.compiler.diagnostics import suggestion
from charter.compiler.frontends.base import salvage
from charter.compiler.frontends.blueprint import Blueprint
from charter.compiler.frontends.config_toml import SafeCommands
from charter.compiler.frontends.stage_toml import StageEntry, combine_stages
from charter.compiler.resolve.context import AgentContext
from charter.compiler.resolve.entries import authored_entry, builtin_entry, mcp_entry, script_entry
from charter.compiler.resolve.grants import resolve_grants
from charter.compiler.resolve.leviath import leviath_sources, resolve_script_permissions
from charter.compiler.resolve.mcp_servers import leviath_server_plans, mcp_server_plans
from charter.compiler.resolve.permissions import Said
from charter.compiler.resolve.scopes import permission_map, user_scopes
from charter.compiler.resolve.stages import implicit_stage, resolve_stage
from charter.compiler.resolve.tools import collect_tools
from charter.compiler.resolve.tooltable import ToolTable
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.plan import Grant, McpServerPlan, SandboxProfile, Stage, ToolEntry
from charter.runtime.plan.shell import ShellPolicy

__all__ = ["ResolvedAgent", "agent_directory", "resolve_agent"]


def resolve_shell_policy(
    ctx: AgentContext, agent_name: str, project_root: Path | None = None
) -> ShellPolicy:
    """The agent's shell policy: the user's [safe_commands], their
    [agent_safe_commands.<agent>] entries, and the blueprint's own
    [safe_commands] only when the user trusts them. Only the user's config
    switches the built-in read-only table."""
    from charter.compiler.resolve.shell_policy import compile_shell_policy

    cfg, csm = ctx.config, ctx.config_smap
    parts: list[ShellPolicy] = []

    def add(safe: Any, smap: SourceMap | None, prefix: tuple[str | int, ...]) -> None:
        policy, diags = compile_shell_policy(
            safe, source=smap.path if smap else "<none>", smap=smap, key_prefix=prefix
        )
        ctx.diags.extend(diags)
        parts.append(policy)

    add(cfg.safe_commands if cfg else None, csm, ("safe_commands",))
    per_agent = cfg.agent_safe_commands.get(agent_name) if cfg else None
    if per_agent is not None:
        extra = SafeCommands(tools=per_agent.tools, shell=per_agent.shell)
        add(extra, csm, ("agent_safe_commands", agent_name))
    bp = ctx.blueprint
    trusted = cfg is not None and (
        cfg.security.allow_blueprint_safe_commands
        or (per_agent is not None and per_agent.allow_blueprint)
    )
    if bp is not None and bp.safe_commands is not None and trusted:
        add(bp.safe_commands, ctx.bp_smap, ("safe_commands",))
    elif bp is not None and bp.safe_commands is not None:
        # Inert, but checked: an entry that cannot mean what it shows is an
        # error whether or not anyone has trusted the block yet. An entry
        # carrying a coding client's allow rule takes effect while the
        # client's settings in the policy's workspace still hold that rule
        # (charter init writes them; see charter.compiler.resolve.client_rules).
        from charter.compiler.resolve.client_rules import vouched

        bp_policy, inert_diags = compile_shell_policy(
            bp.safe_commands,
            source=ctx.bp_smap.path if ctx.bp_smap else "<none>",
            smap=ctx.bp_smap,
            key_prefix=("safe_commands",),
        )
        ctx.diags.extend(inert_diags)
        ok = vouched(agent_directory(ctx, project_root), bp.safe_commands)
        kept = tuple(e for e in bp_policy.safe if (e.source, e.exact) in ok)
        if kept:
            parts.append(ShellPolicy(safe=kept))
    safe = tuple(dict.fromkeys(entry for p in parts for entry in p.safe))
    return ShellPolicy(defaults=parts[0].defaults, safe=safe)


def agent_directory(ctx: AgentContext, project_root: Path | None) -> Path | None:
    """The agent's directory on disk (where its blueprint is)."""
    if project_root is None:
        return None
    return project_root / ctx.agent.directory


# Mutable resolution state nothing compares by value: identity equality
# spares a generated __eq__ at every start-up.
@dataclass(eq=False)
class ResolvedAgent:
    """One agent after resolution: every name looked up, every decision taken
    with its provenance. The lint checks over sources read it
    (:mod:`charter.compiler.lint.sources`), and the emitter
    (:mod:`charter.compiler.emit`) turns it into the agent's plan."""

    ctx: AgentContext
    name: str
    project_root: Path
    # The stages the files declare, and those the agent runs (the same, or
    # the implicit one stage of a core without a blueprint).
    declared: dict[str, StageEntry]
    stages: dict[str, StageEntry]
    table: ToolTable
    grants: list[Grant]
    entries: dict[str, ToolEntry]
    compiled: list[Stage]
    sandbox: SandboxProfile
    entry_stage: str
    mcp: list[McpServerPlan]
    shell: ShellPolicy
    # A Demiurge core's SOUL.md text (slots.soul, then <surface_root>/SOUL.md).
    soul: str | None = None


def _has_validator(entry: StageEntry) -> bool:
    return entry.stage.output is not None and entry.stage.output.validator is not None


def _with_scripts(ctx: AgentContext, stage: Stage, entry: StageEntry, root: Path) -> Stage:
    """The stage with the Rhai scripts it names (hooks, output validator)."""
    from charter.compiler.resolve.hooks import output_validator, stage_hooks

    update: dict[str, object] = {}
    if entry.stage.hooks is not None:
        update["hooks"] = stage_hooks(ctx, entry, root)
    validator = output_validator(ctx, entry, root)
    if validator is not None and stage.output is not None:
        update["output"] = stage.output.model_copy(update={"validator": validator})
    return stage.model_copy(update=update) if update else stage


def resolve_agent(ctx: AgentContext, project_root: Path, agent_name: str) -> ResolvedAgent | None:
    """Resolve one agent; None when nothing of its files could be read (their
    errors are already reported by the loader)."""
    salvage_invalid(ctx)
    bp, bsm = ctx.blueprint, ctx.bp_smap
    stages: dict[str, StageEntry] = {}
    if ctx.agent.blueprint is not None:
        if bp is None:
            return None  # nothing of the blueprint could be read
        stages, _dups = combine_stages(ctx.agent.blueprint, list(ctx.agent.stage_files))
    if ctx.agent.core is not None and ctx.core is None:
        return None
    declared = stages
    ctx.stage_models = {name: e.stage for name, e in stages.items()}
    leviath_sources(ctx, stages, agent_name)
    table = collect_tools(ctx, stages, project_root)
    grants = resolve_grants(ctx)

    # Tool entries, in name order.
    entries: dict[str, ToolEntry] = {}
    output_stage = next((e.stage for e in stages.values() if e.stage.mode == "output"), None)
    for name in sorted(table.tools):
        ref = table.tools[name]
        if ref.source == "builtin":
            entries[name] = builtin_entry(ctx, ref, output_stage)
        elif ref.source == "authored":
            authored = authored_entry(ctx, ref, grants, project_root)
            if authored is not None:
                entries[name] = authored
        elif ref.source == "mcp":
            pinned = mcp_entry(ctx, ref, project_root)
            if pinned is not None:
                entries[name] = pinned
        elif ref.source == "script":
            script = script_entry(ctx, ref)
            if script is not None:
                entries[name] = script

    if not stages:
        stages = implicit_stage(ctx, table)
    stage_names = list(stages)

    user = user_scopes(ctx, table, agent_name)
    agent_perms: dict[str, Said] = {}
    if bp is not None and bsm is not None:
        agent_perms = permission_map(
            bp.tool_permissions, bsm, ("tool_permissions",), table, ctx, "agent"
        )

    if ctx.scripts:
        ctx.script_perms = resolve_script_permissions(ctx, stages, table, user, agent_perms)

    compiled = [
        resolve_stage(ctx, e, table, entries, user, agent_perms, stage_names)
        for e in stages.values()
    ]
    if any(e.stage.hooks is not None or _has_validator(e) for e in stages.values()):
        compiled = [
            _with_scripts(ctx, s, e, project_root)
            for s, e in zip(compiled, stages.values(), strict=True)
        ]
    from charter.compiler.resolve.sandbox import plan_sandboxes

    compiled, agent_sandbox, sandbox_diags = plan_sandboxes(
        ctx.config, ctx.config_smap, bp, bsm, stages, compiled
    )
    ctx.diags.extend(sandbox_diags)

    entry_stage = stage_names[0]
    if bp is not None and bp.agent.entry_stage is not None and bsm is not None:
        entry_stage = bp.agent.entry_stage
        if entry_stage not in stages:
            ctx.diags.append(
                diag(
                    "entry-stage-unknown",
                    f"entry_stage '{entry_stage}' is not a stage"
                    + suggestion(entry_stage, stage_names),
                    bsm.value_span(("agent", "entry_stage")),
                    key_path="agent.entry_stage",
                )
            )

    mcp = mcp_server_plans(ctx, project_root) + leviath_server_plans(ctx, project_root)
    from charter.compiler.resolve.soul import core_soul

    soul = core_soul(ctx, project_root)
    shell = resolve_shell_policy(ctx, agent_name, project_root)
    return ResolvedAgent(
        soul=soul, ctx=ctx, name=agent_name, project_root=project_root, declared=declared,
        stages=stages, table=table, grants=grants, entries=entries, compiled=compiled,
        sandbox=agent_sandbox, entry_stage=entry_stage, mcp=mcp, shell=shell,
    )  # fmt: skip


def salvage_invalid(ctx: AgentContext) -> None:
    """Files that failed validation keep their errors, but what is valid in
    them is still checked (see :func:`salvage`)."""
    agent = ctx.agent
    bp = agent.blueprint
    if bp is not None and bp.model is None and bp.raw is not None:
        model = salvage(Blueprint, bp.raw)
        if model is not None:
            agent = agent._replace(blueprint=bp._replace(model=model))
    core = agent.core
    if core is not None and core.model is None and core.raw is not None:
        from charter.compiler.frontends.agent_yaml import AgentCore

        cmodel = salvage(AgentCore, core.raw)
        if cmodel is not None:
            agent = agent._replace(core=core._replace(model=cmodel))
    ctx.agent = agent
