"""The emitter: resolved agents become the plan.

Nothing here looks a name up or reports a finding; every decision was taken
by :mod:`charter.compiler.resolve` and checked by :mod:`charter.compiler.lint`.
What remains is translation: which tools the plan lists, the limits and
switches copied from the user's config and the blueprint, and the sealed plan
body. A new plan field's value is computed here from the
:class:`~charter.compiler.resolve.agent.ResolvedAgent` (in :func:`emit_agent`
for a per-agent field, in :func:`emit_plan` for a plan-wide one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from charter.compiler.resolve.agent import ResolvedAgent
from charter.compiler.resolve.context import AgentContext, shell_timeout, span_ref
from charter.runtime.plan import (
    AgentPlan,
    Limits,
    Plan,
    PlanBody,
    RepetitionPolicy,
    SourceDigest,
    SummaryPolicy,
    TaintPolicy,
)
from charter.runtime.version import VERSION

if TYPE_CHECKING:
    from charter.compiler.frontends.blueprint import Blueprint

__all__ = ["compiler_version", "emit_agent", "emit_plan"]


def compiler_version() -> str:
    return VERSION


def _skills_root(ctx: AgentContext) -> str | None:
    core = ctx.core
    if core is None:
        return None
    # slots.skills, else <surface_root>/skills: the folder the host reads.
    prefix = "" if ctx.agent.directory == "." else ctx.agent.directory + "/"
    return prefix + str(core.skills_root).strip("/")


def _limits(ctx: AgentContext) -> Limits:
    cfg, bp = ctx.config, ctx.blueprint
    limits = Limits()
    if cfg is not None:
        limits = Limits(
            interaction_timeout_secs=cfg.limits.interaction_timeout_secs,
            shell_timeout_secs=shell_timeout(ctx),
            model_request_timeout_secs=cfg.request_timeout_secs,
            default_max_iterations=cfg.limits.default_max_iterations,
            max_tool_call_write_bytes=cfg.limits.max_tool_call_write_bytes,
            max_run_write_bytes=cfg.limits.max_run_write_bytes,
        )
    if bp is not None and bp.agent.max_child_depth is not None:
        limits = limits.model_copy(update={"max_child_depth": bp.agent.max_child_depth})
    return limits


def _repetition(bp: Blueprint | None) -> RepetitionPolicy | None:
    """[repetition_detection], with Leviath's defaults for what it leaves out."""
    cfg = bp.repetition_detection if bp is not None else None
    if cfg is None:
        return None
    d = RepetitionPolicy()
    return RepetitionPolicy(
        enabled=d.enabled if cfg.enabled is None else cfg.enabled,
        max_repeat_calls=cfg.max_repeat_calls or d.max_repeat_calls,
        max_readonly_streak=cfg.max_readonly_streak or d.max_readonly_streak,
    )


def _compaction(bp: Blueprint | None) -> SummaryPolicy | None:
    """The blueprint's ``[compaction]``, as the summaries on its compact
    edges are asked for."""
    c = bp.compaction if bp is not None else None
    if c is None:
        return None
    return SummaryPolicy(
        provider=c.provider,
        model=c.model,
        system_prompt=c.system_prompt,
        max_summary_tokens=c.max_summary_tokens or SummaryPolicy().max_summary_tokens,
    )


def _required_inputs(bp: Blueprint | None) -> tuple[str, ...]:
    """The caller inputs of required regions (any layout of the blueprint):
    Leviath refuses to start a run without them."""
    if bp is None:
        return ()
    layouts = [bp.context.regions if bp.context is not None else {}]
    layouts += [s.context.regions for s in bp.stages.values() if s.context is not None]
    keys: set[str] = set()
    for layout in layouts:
        for name, region in layout.items():
            if not (region.is_required and region.caller_seeded(name)):
                continue
            seed = region.seed
            key = seed if isinstance(seed, str) else seed.caller if seed is not None else None
            keys.add(name if key in (None, "input") else str(key))
    return tuple(sorted(keys))


def emit_agent(resolved: ResolvedAgent) -> AgentPlan:
    """One agent's plan. Only the tools some stage offers are listed."""
    ctx = resolved.ctx
    cfg, bp = ctx.config, ctx.blueprint
    entries = resolved.entries
    offered_anywhere = {n for s in resolved.compiled for n in s.attended}
    tools = tuple(entries[n] for n in sorted(entries) if n in offered_anywhere)
    taint_on = bool(cfg and cfg.taint_tracking) or bool(
        bp is not None and bp.security is not None and bp.security.taint_tracking
    )
    kind: Literal["blueprint", "core", "combined"] = (
        "combined"
        if ctx.core is not None and bp is not None
        else "core"
        if bp is None
        else "blueprint"
    )
    return AgentPlan(
        name=resolved.name,
        kind=kind,
        root=ctx.agent.directory,
        entry_stage=resolved.entry_stage,
        tools=tools,
        stages=tuple(resolved.compiled),
        grants=tuple(sorted(resolved.grants, key=lambda g: (g.slot or "", g.capability))),
        mcp_servers=tuple(resolved.mcp),
        shell=resolved.shell,
        limits=_limits(ctx),
        taint=TaintPolicy(enabled=taint_on),
        allow_local_network=bool(cfg and cfg.security.allow_local_network),
        allow_env_vars=tuple(sorted(cfg.security.allow_env_vars)) if cfg else (),
        skills_root=_skills_root(ctx),
        soul=resolved.soul,
        script_permissions=ctx.script_perms,
        repetition=_repetition(bp),
        allowed_workdirs=tuple(cfg.security.allowed_workdirs) if cfg is not None else (),
        required_inputs=_required_inputs(bp),
        allow_seed_commands=cfg is None or cfg.security.allow_seed_commands,
        compaction=_compaction(bp),
        sandbox=resolved.sandbox,
        origin=span_ref(ctx.agent_span()),
    )


def emit_plan(
    agents: Sequence[AgentPlan],
    *,
    target_platform: Literal["posix", "windows"],
    shell: str,
    digests: Mapping[str, str],
) -> Plan:
    """The sealed plan of every agent, with the digests of the files read."""
    body = PlanBody(
        compiler_version=compiler_version(),
        target_platform=target_platform,
        shell=shell,
        agents=tuple(sorted(agents, key=lambda a: a.name)),
        sources=tuple(SourceDigest(path=p, sha256=d) for p, d in sorted(digests.items())),
    )
    return Plan.seal(body)
