"""A stage's context layout for the plan: its regions (the stage's own
``[stages.<name>.context.regions]``, else the blueprint's), each budget
resolved against the stage model's context window as Leviath resolves it at
spawn, each seed said as data the runtime can carry out, and the stage's
``tool_routing`` with tool names made canonical.

Leviath resolves a percentage budget against the window of the model the
stage runs on: ``round(window * percent)``, then the ``max_tokens`` cap, then
the ``min_tokens`` floor (the floor wins). A region without a percentage gets
``max_tokens`` (5,000 when unset). When no window is known for the stage's
model, Leviath falls back to 8,192 tokens, and so does the plan; the window
used is written beside the layout so a reader can see what the numbers mean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from charter.compiler.frontends.blueprint import StageTable, ToolRouting
from charter.compiler.frontends.regions import Region, parse_percentage
from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.lint.model_catalog import window
from charter.compiler.resolve.context import AgentContext, span_ref
from charter.compiler.resolve.tooltable import ToolTable
from charter.runtime.plan import (
    ContextRegion,
    RegionSeed,
    ResultRouting,
    RouteRule,
    SeedCall,
    SourceRef,
    StageModel,
)

__all__ = ["DEFAULT_WINDOW", "stage_layout", "stage_models", "stage_routing", "stage_window"]

# Leviath's window when the stage's model is not one it knows.
DEFAULT_WINDOW = 8192
# Leviath's ceiling for a region that gives neither a percentage nor max_tokens.
DEFAULT_MAX_TOKENS = 5000


def stage_models(st: StageTable) -> tuple[StageModel, ...]:
    """The stage's models in the order Leviath tries them: ``models``, else
    ``provider``/``model`` and then ``fallbacks``."""
    m = st.model
    if m is None:
        return ()
    if m.models:
        return tuple(StageModel(provider=e.provider, model=e.model) for e in m.models)
    out: list[StageModel] = []
    if m.provider is not None and m.model:
        out.append(StageModel(provider=m.provider, model=m.model))
    out += [StageModel(provider=e.provider, model=e.model) for e in m.fallbacks]
    return tuple(out)


def stage_window(ctx: AgentContext, st: StageTable) -> int:
    """The context window of the model the stage names first (the user's
    ``[model_capabilities]`` can set or override one), else Leviath's
    fallback."""
    overrides: dict[str, int] = {}
    caps = (ctx.config.model_capabilities if ctx.config is not None else None) or {}
    for model, entry in caps.items():
        tokens = entry.get("max_context_tokens") if isinstance(entry, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            overrides[model] = tokens
    m = st.model
    first: tuple[str, str] | None = None
    if m is not None:
        if m.models:
            first = (m.models[0].provider, m.models[0].model)
        elif m.provider is not None:
            first = (m.provider, m.model or "")
    if first is None:
        return DEFAULT_WINDOW
    return window(first[0], first[1], overrides) or DEFAULT_WINDOW


def _budget(region: Region, size: int) -> int:
    fraction = parse_percentage(region.budget) if region.budget is not None else None
    if fraction is None:
        return region.max_tokens or DEFAULT_MAX_TOKENS
    tokens = round(size * fraction)
    if region.max_tokens is not None:
        tokens = min(tokens, region.max_tokens)
    if region.min_tokens is not None:
        tokens = max(tokens, region.min_tokens)
    return tokens


def _compact_at(region: Region, budget: int) -> int | None:
    """Where a compacting region is summarized in place: ``compact_at`` of
    its resolved budget, ``threshold_tokens``, the lower of the two; None
    when neither is set (the region then rolls its oldest entries off)."""
    marks: list[int] = []
    fraction = parse_percentage(region.compact_at) if region.compact_at is not None else None
    if fraction is not None:
        marks.append(round(budget * fraction))
    if region.threshold_tokens is not None:
        marks.append(region.threshold_tokens)
    return min(marks) if marks else None


def _seed(name: str, region: Region) -> RegionSeed | None:
    seed = region.seed
    if seed is None:
        # a region literally named task is seeded from the task, as in Leviath
        return RegionSeed(source="caller", key="task") if name == "task" else None
    if isinstance(seed, str):
        key = {"task_input": "task", "input": name}.get(seed, seed)
        return RegionSeed(source="caller", key=key)
    each = seed.refresh == "each_stage"
    kind = seed.kind
    if kind == "glob" and seed.glob is not None:
        return RegionSeed(source="glob", text=seed.glob, each_stage=each)
    if kind == "files" and seed.files is not None:
        return RegionSeed(source="files", paths=seed.files, each_stage=each)
    if kind == "literal" and seed.literal is not None:
        return RegionSeed(source="literal", text=seed.literal, each_stage=each)
    if kind == "command" and seed.command is not None:
        return RegionSeed(source="command", text=seed.command, each_stage=each)
    if kind in ("tool", "tools"):
        calls = tuple(
            SeedCall(name=c)
            if isinstance(c, str)
            else SeedCall(name=c.name, args_json=json.dumps(c.args, sort_keys=True))
            for c in ((seed.tool,) if kind == "tool" and seed.tool else seed.tools or ())
        )
        return RegionSeed(source="tools", calls=calls, each_stage=each)
    if kind == "caller" and seed.caller is not None:
        return RegionSeed(source="parent", key=seed.caller)
    # rhai seeds are not run (CH234 says so at the key); an unrecognised
    # table seeds nothing, as in Leviath (region-seed-not-understood)
    return None


def _layout_source(ctx: AgentContext, entry: StageEntry) -> tuple[Mapping[str, Region], bool]:
    own = entry.stage.context.regions if entry.stage.context is not None else {}
    if own:
        return own, True
    bp = ctx.blueprint
    return (bp.context.regions if bp is not None and bp.context is not None else {}), False


def stage_layout(ctx: AgentContext, entry: StageEntry, size: int) -> tuple[ContextRegion, ...]:
    """The regions the stage sees, in the order the file declares them."""
    layout, own = _layout_source(ctx, entry)
    out: list[ContextRegion] = []
    for name, region in layout.items():
        kind = region.effective_kind
        if kind == "custom":
            continue  # refused by CH661 before a plan is written
        origin: SourceRef | None = None
        if own:
            origin = span_ref(entry.span("context", "regions", name, key=True))
        elif ctx.bp_smap is not None:
            origin = span_ref(ctx.bp_smap.key_span(("context", "regions", name)))
        out.append(
            ContextRegion(
                name=name,
                kind="hashmap" if kind == "hash_map" else kind,
                max_tokens=_budget(region, size),
                volatility=region.volatility or "rewritten",
                admission=region.admission or "evict",
                description=region.description,
                describe_in_prompt=bool(region.describe_in_prompt),
                max_items=(region.max_items or 10) if kind == "sliding_window" else None,
                strategy=region.strategy or "per_item",
                overflow=region.overflow or 0,
                compact_count=region.compact_count or 10,
                compact_at_tokens=_compact_at(region, _budget(region, size))
                if kind == "compacting"
                else None,
                source_region=region.source_region if kind == "compact_history" else None,
                max_entries=region.max_entries,
                required=region.is_required,
                summarizable=region.can_be_summarized,
                required_message=region.required_message,
                seed=_seed(name, region),
                origin=origin,
            )
        )
    return tuple(out)


def stage_routing(routing: ToolRouting | None, table: ToolTable) -> ResultRouting | None:
    """The stage's ``tool_routing`` with each tool named as the plan names it
    (an alias covers the tool it aliases, as in Leviath)."""
    if routing is None:
        return None
    rules: dict[str, RouteRule] = {}

    def rule(tool: str) -> RouteRule:
        name = table.canonical(tool)
        return rules.get(name) or RouteRule(tool=name)

    for tool, value in routing.overrides.items():
        r = rule(tool)
        if isinstance(value, str):
            rules[r.tool] = r.model_copy(update={"region": value})
        else:
            update: dict[str, object] = {}
            if value.region is not None:
                update["region"] = value.region
            if value.max_result_tokens is not None:
                update["max_result_tokens"] = value.max_result_tokens
            rules[r.tool] = r.model_copy(update=update)
    for tool, cap in routing.max_result_tokens_per_tool.items():
        r = rule(tool)
        rules[r.tool] = r.model_copy(update={"max_result_tokens": cap})
    return ResultRouting(
        default_region=routing.default_region,
        max_result_tokens=routing.max_result_tokens,
        rules=tuple(rules[k] for k in sorted(rules)),
    )
