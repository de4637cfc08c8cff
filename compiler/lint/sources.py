"""Checks over a resolved agent and its source files, run by the compile
between resolution and emission: they report, and change nothing that the
plan carries. Errors among them still withhold the plan."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from charter.compiler.catalog.builtin import resolve_builtin
from charter.compiler.diagnostics import Severity, Span, format_key_path, suggestion
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.frontends.config_toml import SafeShellEntry
from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.lint.fates import refusals
from charter.compiler.resolve.agent import ResolvedAgent, agent_directory
from charter.compiler.resolve.context import RISKS, AgentContext, tool_denied, tool_enabled
from charter.compiler.resolve.grants import granted
from charter.compiler.resolve.permissions import APPROVAL_TO_PERMISSION
from charter.compiler.resolve.tooltable import ToolTable
from charter.compiler.rules import diag, diag_at
from charter.runtime.plan import Decision, Grant, SourceRef, Stage, ToolEntry, stricter
from charter.runtime.policy.capabilities import grant_covers

if TYPE_CHECKING:
    # Agent cores, MCP manifests and lock files are read only for agents
    # that have them; a blueprint-only project never imports their models.
    from charter.compiler.frontends.mcp_manifest import McpServer


def lint_resolved(resolved: ResolvedAgent) -> None:
    """Every check of this module, into the agent's diagnostics."""
    ctx = resolved.ctx
    bp = ctx.blueprint
    if bp is not None:
        from charter.compiler.lint.leviath_checks import blueprint_refusals

        ctx.diags.extend(blueprint_refusals(bp, resolved.declared))
    _metadata_overrides(ctx, resolved.table)
    _builtin_grants(resolved)
    _unused_grants(ctx, resolved.grants, resolved.entries, _mcp_caps(ctx))
    _inert_blueprint_safe_commands(ctx, resolved.project_root)
    stage_names = list(resolved.stages)
    overridden: set[tuple[str, str]] = set()  # (the user's setting, what overrode it)
    # plan_sandboxes keeps the stages in order, one compiled per entry.
    for entry, stage in zip(resolved.stages.values(), resolved.compiled, strict=True):
        _orphan_permissions(ctx, entry, resolved.table, stage)
        for tool in stage.tools:
            _report_clamps(ctx, tool.decision, tool.name, entry.name)
            _report_user_overridden(ctx, tool.decision, tool.name, entry.name, overridden)
        _fan_out_checks(ctx, entry, stage_names)
        _unexecuted_scripts(ctx, entry)
    _unexecuted_region_scripts(ctx)
    _mcp_server_checks(ctx, resolved.grants, resolved.project_root)
    _keys_not_run(resolved)


def _keys_not_run(resolved: ResolvedAgent) -> None:
    """Each key of this agent's own files that Charter's runtime does not
    carry out, reported where it is set (see :mod:`.fates`). The user's
    config and a shared fallback file are walked once, by the compile."""
    ctx = resolved.ctx
    agent = ctx.agent
    bp = agent.blueprint
    if bp is not None and bp.model is not None:
        ctx.diags.extend(refusals(bp.model, bp.smap, skip=frozenset({"stages"})))
        for entry in resolved.stages.values():
            ctx.diags.extend(refusals(entry.stage, entry.smap, entry.prefix))
    loaded = [agent.core, *agent.mcp, *(t.spec for t in agent.tools)]
    for one in loaded:
        if one is not None and one.model is not None:
            ctx.diags.extend(refusals(one.model, one.smap))


def _unexecuted_region_scripts(ctx: AgentContext) -> None:
    """The blueprint's own [context.regions]: a custom region's script
    renders it and reacts to writes; a run without it shows the model other
    context than the blueprint says."""
    bp, bsm = ctx.blueprint, ctx.bp_smap
    if bp is None or bsm is None or bp.context is None:
        return
    for region, spec in bp.context.regions.items():
        if spec.script:
            path = ("context", "regions", region, "script")
            ctx.diags.append(
                diag(
                    "script-not-executed",
                    f"the custom region {region!r} runs the Rhai script {spec.script!r}, which "
                    "Charter's runtime does not execute; the run would ignore it, so no plan is "
                    "written",
                    bsm.key_span(path),
                    key_path=format_key_path(path),
                )
            )


def _unexecuted_scripts(ctx: AgentContext, entry: StageEntry) -> None:
    """Custom regions are Rhai scripts this runtime does not run yet: refuse
    them rather than drop them. (Stage hooks and output validators run: see
    ``resolve/hooks.py``.)"""
    st = entry.stage
    named: list[tuple[tuple[str, ...], str]] = []
    for region, spec in (st.context.regions if st.context is not None else {}).items():
        if spec.script:
            named.append(
                (("context", "regions", region, "script"), f"the custom region {region!r}")
            )
    for path, what in named:
        ctx.diags.append(
            diag(
                "script-not-executed",
                f"stage '{entry.name}' runs {what}, a Rhai script Charter's runtime does not "
                "execute; the run would ignore it, so no plan is written",
                entry.span(*path, key=True),
                key_path=format_key_path(("stages", entry.name, *path)),
            )
        )


def _builtin_grants(resolved: ResolvedAgent) -> None:
    """A core's built-in tool whose capability the core does not grant: every
    call would be refused (a warning, since the core may mean it)."""
    ctx = resolved.ctx
    if ctx.core is None:
        return
    for name, entry in resolved.entries.items():
        ref = resolved.table.tools[name]
        cap = entry.capability
        if ref.source != "builtin" or cap is None:
            continue
        if (
            not granted(cap, resolved.grants, None)
            and tool_enabled(ctx, name)
            and not tool_denied(ctx, name)
        ):
            ctx.diags.append(
                diag(
                    "capability-not-granted",
                    f"built-in tool '{name}' needs '{cap}', which agent.yaml does not "
                    "grant; every call would be refused",
                    ref.where,
                    severity=Severity.WARNING,
                )
            )


def _orphan_permissions(
    ctx: AgentContext, entry: StageEntry, table: ToolTable, stage: Stage
) -> None:
    """A stage's permission for a tool it never offers does nothing."""
    st = entry.stage
    offered = set(stage.attended)
    seen: set[str] = set()
    for key in st.tool_permissions:
        name = table.canonical(key)
        if name in seen:
            continue  # a second spelling: reported as such by the resolution
        seen.add(name)
        if name not in offered and (name in table.tools or resolve_builtin(name) is not None):
            path = (*entry.prefix, "tool_permissions")
            ctx.diags.append(
                diag(
                    "orphan-stage-permission",
                    f"stage '{entry.name}' sets a permission for '{key}' but never offers it",
                    entry.smap.key_span((*path, key)),
                    key_path=format_key_path(("stages", entry.name, "tool_permissions", key)),
                )
            )


def _metadata_overrides(ctx: AgentContext, table: ToolTable) -> None:
    core, csm = ctx.core, ctx.core_smap
    if core is None or csm is None:
        return
    for name, meta in core.tools.metadata.items():
        path = ("tools", "metadata", name)
        ref = table.lookup(name)
        if ref is None:
            if not table.is_dynamic_mcp(name):
                ctx.diags.append(
                    diag_at(
                        "unknown-tool",
                        f"tools.metadata names '{name}', which this agent does not have"
                        + suggestion(name, table.tools),
                        csm,
                        path,
                        at="key",
                    )
                )
            continue
        if ref.builtin is None:
            continue
        b = ref.builtin
        if meta.risk is not None and RISKS.index(meta.risk) < RISKS.index(b.risk):
            ctx.diags.append(
                diag_at(
                    "metadata-override-loosens",
                    f"risk '{meta.risk}' is lower than the built-in's '{b.risk}'; "
                    "core metadata may only raise it",
                    csm,
                    (*path, "risk"),
                )
            )
        if meta.approval_policy is not None:
            mine = APPROVAL_TO_PERMISSION[meta.approval_policy]
            theirs = APPROVAL_TO_PERMISSION[b.approval]
            if stricter(mine, theirs) != mine:
                ctx.diags.append(
                    diag_at(
                        "metadata-override-loosens",
                        f"approval_policy '{meta.approval_policy}' is laxer than the built-in's "
                        f"'{b.approval}'; core metadata may only make it stricter",
                        csm,
                        (*path, "approval_policy"),
                    )
                )
        if meta.capability is not None and meta.capability != b.capability:
            ctx.diags.append(
                diag_at(
                    "metadata-override-loosens",
                    f"the built-in tool '{b.name}' requires '{b.capability}'; "
                    "a core cannot rename a built-in's capability",
                    csm,
                    (*path, "capability"),
                )
            )


_GATE_PREFIXES = ("mcp.connect:", "mcp.call:", "secret.bind:", "tool.call:")


def _mcp_caps(ctx: AgentContext) -> list[str]:
    caps: list[str] = []
    for loaded in ctx.agent.mcp:
        if loaded.model is not None and loaded.model.enabled:
            server = server_id_from_path(Path(loaded.display))
            caps += [f"mcp.connect:{server}", loaded.model.capability or f"mcp.call:{server}"]
    return caps


def _unused_grants(
    ctx: AgentContext, grants: list[Grant], entries: Mapping[str, ToolEntry], extra: list[str]
) -> None:
    """A grant that covers no capability any tool or server of this agent
    requires grants nothing; it is usually a typo of one that is needed."""
    wanted = [e.capability for e in entries.values() if e.capability] + extra
    for e in entries.values():
        if e.authored is not None:
            wanted += list(e.authored.capabilities)
    for g in grants:
        cap = g.capability
        if cap.startswith(_GATE_PREFIXES) and cap.endswith(":*"):
            continue  # a deliberate family grant (tool.call:*, mcp.call:*)
        if cap.startswith("secret.bind:"):
            continue  # consumed by terminal calls, not by a tool definition
        if cap.startswith("agents.spawn:") and "delegate_task" in entries:
            continue  # delegate_task needs agents.spawn:<core> for the core it starts
        if any(grant_covers(cap, w) for w in wanted):
            continue
        src = g.origin
        ctx.diags.append(
            diag(
                "unknown-capability",
                f"grant '{cap}' covers no capability a tool or server of this agent requires"
                + suggestion(cap, wanted),
                Span(src.path, src.line, src.col) if src else ctx.agent_span(),
            )
        )


def _inert_blueprint_safe_commands(ctx: AgentContext, project_root: Path) -> None:
    bp, bsm = ctx.blueprint, ctx.bp_smap
    if bp is None or bsm is None or bp.safe_commands is None:
        return
    cfg = ctx.config
    trusted = cfg is not None and (
        cfg.security.allow_blueprint_safe_commands
        or (
            bp.agent.name in cfg.agent_safe_commands
            and cfg.agent_safe_commands[bp.agent.name].allow_blueprint
        )
    )
    if trusted:
        return
    from charter.compiler.resolve.client_rules import vouched

    # Entries the client's own settings vouch for take effect (charter init
    # carried them from Claude Code's allow rules); name only the others.
    ok = vouched(agent_directory(ctx, project_root), bp.safe_commands)
    inert = [
        e
        for e in bp.safe_commands.shell
        if not (isinstance(e, SafeShellEntry) and (e.command, e.exact) in ok)
    ]
    if ok and not inert and not bp.safe_commands.tools:
        return
    carried = [e for e in inert if isinstance(e, SafeShellEntry) and e.client_rule is not None]
    extra = ""
    if carried:
        names = ", ".join(repr(e.client_rule) for e in carried[:3])
        extra = (
            f"; {names} carried a Claude Code allow rule that .claude/settings.json (or "
            "settings.local.json) of this workspace no longer holds"
        )
    which = (
        f"{len(inert)} of this blueprint's [safe_commands] entries take"
        if ok
        else "this blueprint's [safe_commands] take"
    )
    ctx.diags.append(
        diag(
            "blueprint-safe-commands-inert",
            f"{which} no effect until your config trusts them "
            f"([agent_safe_commands.{bp.agent.name}] allow_blueprint = true, or [security] "
            "allow_blueprint_safe_commands = true)" + extra,
            bsm.key_span(("safe_commands",)),
            key_path="safe_commands",
        )
    )


def _report_clamps(ctx: AgentContext, decision: Decision, tool: str, stage: str) -> None:
    for clamp in decision.clamps:
        if clamp.rule == "core-approval-stricter":
            continue
        scope = next(
            (s for s in decision.scopes if s.scope in ("stage", "agent") and s.value is not None),
            None,
        )
        if scope is None or scope.source is None:
            continue
        src = scope.source
        reason = clamp.reason
        if clamp.rule == "blueprint-tighten-only" and clamp.source is not None:
            reason += f" (your config, {_where(clamp.source)})"  # name both files
        ctx.diags.append(
            diag(
                "blueprint-permission-clamped",
                f"stage '{stage}': '{tool}' asked for {clamp.before} and became {clamp.after}: "
                f"{reason}",
                Span(src.path, src.line, src.col),
                key_path=scope.detail,
                data={"tool": tool, "stage": stage, "before": clamp.before, "after": clamp.after},
            )
        )


def _where(source: SourceRef) -> str:
    """A place for a message: the user's config (``<config>/NAME`` in the
    plan, which names no machine path) by its file name, a policy file by its
    path in the project."""
    path = source.path.removeprefix("<config>/")
    return f"{path}:{source.line}"


def _report_user_overridden(
    ctx: AgentContext, decision: Decision, tool: str, stage: str, seen: set[tuple[str, str]]
) -> None:
    """The user's config set this tool looser than the decision came out:
    another layer (the policy's stricter entry, the agent core's approval, an
    untrusted server) overrode it. Reported once per pair of settings, at the
    user's, naming the other."""
    said = {s.scope: s for s in decision.scopes if s.value is not None}
    mine = said.get("agent_config") or said.get("config")
    if mine is None or mine.source is None or mine.value is None:
        return
    if stricter(mine.value, decision.permission) == mine.value:
        return  # the user's value applies (or is the stricter one)
    policy = said.get("stage") or said.get("agent")
    clamp = next((c for c in decision.clamps if c.after == decision.permission), None)
    if policy is not None and policy.value is not None and policy.value != mine.value:
        by = policy.source
        if by is None:
            return
        what = (
            f"the policy sets {policy.value} at {_where(by)}, which wins: a policy may tighten "
            "your config, never loosen it"
        )
    elif clamp is not None and clamp.source is not None:
        by = clamp.source
        what = f"{_where(by)} overrides it: {clamp.reason}"
    else:
        return
    key = (str(mine.source), str(by))
    if key in seen:
        return
    seen.add(key)
    scope = "[agent_tool_permissions]" if mine.scope == "agent_config" else "[tool_permissions]"
    ctx.diags.append(
        diag(
            "user-permission-overridden",
            f"your config's {scope} sets '{tool}' = {mine.value} ({_where(mine.source)}), but "
            f"{what} ('{tool}' is {decision.permission} in stage '{stage}')",
            Span(mine.source.path, mine.source.line, mine.source.col),
            key_path=mine.detail,
            data={
                "tool": tool,
                "stage": stage,
                "config": str(mine.source),
                "overridden_by": str(by),
                "permission": decision.permission,
            },
        )
    )


def _fan_out_checks(ctx: AgentContext, entry: StageEntry, stage_names: list[str]) -> None:
    """A fan_out stage's workers, checked as Leviath checks them when it
    loads the blueprint: one worker source, an existing worker stage that
    allows being one, an existing merge stage."""
    st = entry.stage
    if st.mode != "fan_out":
        return
    where = entry.span("mode")
    path = format_key_path(("stages", entry.name))
    sources = [k for k in ("worker_agent", "worker_stage", "worker_query") if getattr(st, k)]
    if len(sources) != 1:
        said = ", ".join(sources) if sources else "none of them"
        ctx.diags.append(
            diag(
                "fan-out-invalid",
                f"fan_out stage '{entry.name}' must set exactly one of worker_agent, worker_stage "
                f"or worker_query (it sets {said})",
                entry.span(sources[1]) if len(sources) > 1 else where,
                key_path=path,
            )
        )

    def refuse(key: str, value: str, problem: str) -> None:
        ctx.diags.append(
            diag(
                "fan-out-invalid",
                f"{key} '{value}' of fan_out stage '{entry.name}' {problem}",
                entry.span(key),
                key_path=f"{path}.{key}",
            )
        )

    if st.worker_stage is not None:
        target = ctx.stage_models.get(st.worker_stage)
        if st.worker_stage not in stage_names:
            refuse(
                "worker_stage",
                st.worker_stage,
                "is not a stage" + suggestion(st.worker_stage, stage_names),
            )
        elif target is not None and not target.allow_as_worker:
            refuse("worker_stage", st.worker_stage, "does not set allow_as_worker = true")
    if st.merge_stage is not None and st.merge_stage not in stage_names:
        refuse(
            "merge_stage",
            st.merge_stage,
            "is not a stage" + suggestion(st.merge_stage, stage_names),
        )


def _mcp_server_checks(ctx: AgentContext, grants: list[Grant], project_root: Path) -> None:
    """A core's MCP manifests: a working directory outside the agent, a
    literal secret, a connect or call capability the core does not grant."""
    if not ctx.agent.mcp:
        return
    from charter.compiler.support.literal_secrets import literal_secrets

    agent_dir = (project_root / ctx.agent.directory).resolve()
    for loaded in ctx.agent.mcp:
        m: McpServer | None = loaded.model
        if m is None or not m.enabled:
            continue
        server = server_id_from_path(Path(loaded.display))
        smap = loaded.smap
        if m.cwd is not None:
            target = (agent_dir / m.cwd).resolve()
            if target != agent_dir and agent_dir not in target.parents:
                ctx.diags.append(
                    diag(
                        "mcp-cwd-outside-workspace",
                        f"cwd '{m.cwd}' resolves outside the agent's directory",
                        smap.value_span(("cwd",)),
                        key_path="cwd",
                    )
                )
        for path, what in literal_secrets(env=m.env, headers=m.headers, url=m.url, args=m.args):
            ctx.diags.append(
                diag_at(
                    "hardcoded-secret",
                    f"{what}; write it as a ${{VAR}} reference and set VAR in the environment",
                    smap,
                    path,
                )
            )
        connect_cap = f"mcp.connect:{server}"
        call_cap = m.call_capability(server)
        for cap, what in ((connect_cap, "connect to"), (call_cap, "call tools of")):
            if not granted(cap, grants, None):
                ctx.diags.append(
                    diag(
                        "capability-not-granted",
                        f"agent.yaml does not grant '{cap}', so the agent can never {what} "
                        f"MCP server '{server}'",
                        smap.value_span(()),
                        severity=Severity.WARNING,
                    )
                )
