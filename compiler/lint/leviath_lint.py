"""Leviath's own lints, over a blueprint as written.

``lev validate`` runs checks that :mod:`charter.compiler.lint` does not:
about what a stage leaves to a default (mode, model, iteration limit), the
models and providers it names, the context regions (seeds the loader drops,
budgets that never bind, required regions nothing can fill, deliverables a
compact edge would paraphrase), what runs before anyone is asked (command and
tool seeds), reads outside the working directory, output stages, fan-out
escapes, and checkpoints that hold an unattended run. They read the
blueprint's model rather than the plan because the plan holds no regions and
no models; where a check needs a resolved tool list it takes the plan's.

A check whose facts are unknown is skipped rather than guessed, as in
Leviath: the providers a machine can reach are judged only against a user
config (``--no-user-config`` skips it), and a budget only against a model
whose window is known.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from charter.compiler.catalog.builtin import resolve_builtin
from charter.compiler.diagnostics import Diagnostic, Span, did_you_mean, format_key_path
from charter.compiler.frontends.blueprint import Blueprint, Region, StageTable
from charter.compiler.frontends.config_toml import UserConfig
from charter.compiler.frontends.project import AgentSources
from charter.compiler.frontends.regions import SEED_KEYS, parse_percentage
from charter.compiler.frontends.stage_toml import StageEntry, combine_stages
from charter.compiler.lint.model_catalog import is_known, window
from charter.compiler.resolve.tooltable import builtin_canonical
from charter.compiler.rules import diag, diag_at
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.runtime.plan import AgentPlan

__all__ = ["lint_blueprint"]

_MODIFYING = ("write_file", "edit_file")
_CONTEXT_WRITERS = ("context_write", "context_append")
# Region kinds that evict when they reach their bound.
_EVICTING = ("temporary", "clearable", "sliding_window", "compacting")
# Region kinds a compact edge leaves alone.
_NOT_STAGE_SPECIFIC = ("pinned", "compact_history", "hashmap", "hash_map")


# A NamedTuple rather than a frozen dataclass: defined at every start-up,
# it costs a tenth as much to define.
class _Layout(NamedTuple):
    """One set of regions: the blueprint's, or a stage's own."""

    regions: Mapping[str, Region]
    smap: SourceMap
    prefix: KeyPath  # where ``regions`` sits in ``smap``'s file

    def key(self, name: str, *more: str | int) -> Span:
        return self.smap.key_span((*self.prefix, name, *more))

    def path(self, name: str, *more: str | int) -> str:
        return format_key_path((*self.prefix, name, *more))

    def diag(self, rule: str, message: str, name: str, *more: str | int) -> Diagnostic:
        """A finding about region ``name`` (or a key below it), at its key."""
        return diag(rule, message, self.key(name, *more), key_path=self.path(name, *more))


def lint_blueprint(
    agent: AgentSources,
    plan: AgentPlan | None,
    config: UserConfig | None,
    config_smap: SourceMap | None,
    project_root: Path,
) -> list[Diagnostic]:
    loaded = agent.blueprint
    if loaded is None or loaded.model is None:
        return []
    bp, smap = loaded.model, loaded.smap
    stages, _ = combine_stages(loaded, list(agent.stage_files))
    top = _Layout(bp.context.regions if bp.context else {}, smap, ("context", "regions"))
    layouts = _layouts(top, stages)
    out: list[Diagnostic] = []
    out += _seeds(top, stages, plan, project_root / agent.directory)
    for entry in stages.values():
        out += _declarations(entry)
        out += _models(entry, config)
        out += _stage_shape(entry, bp, stages)
        out += _held_points(entry)
    out += _no_reachable_provider(stages, config)
    out += _dead_end_possible(stages)
    out += _required_unenforceable(top, stages, layouts)
    out += _compacted_deliverables(stages, layouts)
    out += _unbounded_percentage(top, stages, config)
    out += _read_paths(bp, smap, config, config_smap)
    return out


def _layouts(top: _Layout, stages: Mapping[str, StageEntry]) -> dict[str, _Layout]:
    """The regions each stage sees: its own layout, else the blueprint's."""
    out = {}
    for name, e in stages.items():
        own = e.stage.context.regions if e.stage.context is not None else {}
        if own:
            out[name] = _Layout(own, e.smap, (*e.prefix, "context", "regions"))
        else:
            out[name] = top
    return out


def _all_layouts(top: _Layout, stages: Mapping[str, StageEntry]) -> Iterator[_Layout]:
    yield top
    for e in stages.values():
        if e.stage.context is not None and e.stage.context.regions:
            yield _Layout(e.stage.context.regions, e.smap, (*e.prefix, "context", "regions"))


# -- stages -------------------------------------------------------------------------------


def _declarations(entry: StageEntry) -> list[Diagnostic]:
    st = entry.stage
    where = entry.span()
    path = format_key_path(("stages", entry.name))
    out = []
    if st.mode is None:
        out.append(
            diag(
                "stage-missing-mode",
                f"stage '{entry.name}' sets no mode, so it runs as autonomous",
                where,
                key_path=path,
            )
        )
    if st.model is None:
        out.append(
            diag(
                "stage-missing-model",
                f"stage '{entry.name}' names no model, so Leviath runs it on the user's default "
                "provider, whatever that is",
                where,
                key_path=path,
            )
        )
    if st.mode != "fan_out" and st.max_iterations is None:
        out.append(
            diag(
                "stage-missing-max-iterations",
                f"stage '{entry.name}' sets no max_iterations, so only the user's [limits] "
                "default_max_iterations bounds it",
                where,
                key_path=path,
            )
        )
    return out


def _model_entries(st: StageTable) -> list[tuple[str, str, KeyPath]]:
    """(provider, model, key path of the model name) for every model a stage
    lists: ``models``, else the ``provider``/``model`` shorthand and
    ``fallbacks``."""
    m = st.model
    if m is None:
        return []
    if m.models:
        return [
            (e.provider, e.model, ("model", "models", i, "model")) for i, e in enumerate(m.models)
        ]
    out: list[tuple[str, str, KeyPath]] = []
    if m.provider is not None:
        out.append((m.provider, m.model or "", ("model", "model" if m.model else "provider")))
    out += [
        (e.provider, e.model, ("model", "fallbacks", i, "model")) for i, e in enumerate(m.fallbacks)
    ]
    return out


def _models(entry: StageEntry, config: UserConfig | None) -> list[Diagnostic]:
    out = []
    for provider, model, path in _model_entries(entry.stage):
        if is_known(provider, model) is False:
            out.append(
                diag(
                    "unknown-model",
                    f"stage '{entry.name}' names {provider}/{model}, which is not a model "
                    f"{provider} is known to serve",
                    entry.span(*path),
                    key_path=format_key_path(("stages", entry.name, *path)),
                )
            )
    return out


def _reachable(provider: str, config: UserConfig) -> bool | None:
    """Whether this machine can reach the provider: True, False, or None when
    Charter cannot tell without probing (ollama answers on its address)."""
    providers: dict[str, Any] = config.providers or {}

    def key(name: str, *env: str) -> bool:
        return bool(providers.get(name)) or any(os.environ.get(v) for v in env)

    if provider == "anthropic":
        return key("anthropic_api_key", "ANTHROPIC_API_KEY")
    if provider == "openai":
        return key("openai_api_key", "OPENAI_API_KEY")
    if provider == "google":
        return key("google_api_key", "GOOGLE_API_KEY", "GEMINI_API_KEY")
    if provider == "openrouter":
        return bool(config.openrouter_api_key) or key("openrouter_api_key", "OPENROUTER_API_KEY")
    if provider == "claude-code":
        return bool(providers.get("claude_code_enabled"))
    if provider == "ollama":
        return None
    return provider in (config.model_providers or {})


def _no_reachable_provider(
    stages: Mapping[str, StageEntry], config: UserConfig | None
) -> list[Diagnostic]:
    if config is None:
        return []  # nobody asked: the facts are unknown
    out = []
    for entry in stages.values():
        listed = _model_entries(entry.stage)
        if not listed:
            continue
        answers = [_reachable(p, config) for p, _, _ in listed]
        if any(a is not False for a in answers):
            continue
        tried = ", ".join(dict.fromkeys(p for p, _, _ in listed))
        out.append(
            diag(
                "no-reachable-provider",
                f"stage '{entry.name}' names no provider this machine is configured for (tried "
                f"{tried}), so it falls back to the default model",
                entry.span("model"),
                key_path=format_key_path(("stages", entry.name, "model")),
            )
        )
    return out


def _stage_shape(
    entry: StageEntry, bp: Blueprint, stages: Mapping[str, StageEntry]
) -> list[Diagnostic]:
    st = entry.stage
    out = []
    base = ("stages", entry.name)
    tools = list(st.available_tools)
    canonical = [(builtin_canonical(t), i, t) for i, t in enumerate(tools)]
    if st.tool_routing is not None:
        r = st.tool_routing
        targets = [r.default_region or "conversation"] + [
            v if isinstance(v, str) else (v.region or "conversation") for v in r.overrides.values()
        ]
        routes = any(t != "conversation" for t in targets)
        reads = any(c in ("read_file", "read_files") for c, _, _ in canonical)
        if routes and reads and not any(c == "context_read" for c, _, _ in canonical):
            out.append(
                diag(
                    "routing-without-region-read",
                    f"stage '{entry.name}' routes tool results into a context region and offers "
                    "read_file but not context_read, so the model aims read_file at the region's "
                    "name",
                    entry.span("tool_routing", key=True),
                    key_path=format_key_path((*base, "tool_routing")),
                )
            )
    if st.output is not None and not (st.require_output or st.mode == "output"):
        out.append(
            diag(
                "output-shape-not-required",
                f"stage '{entry.name}' declares an output shape but need not produce an output, "
                "so the run may finish with nothing of that shape",
                entry.span("output", key=True),
                key_path=format_key_path((*base, "output")),
            )
        )
    if st.mode == "output":
        for c, i, raw in canonical:
            if c in _MODIFYING:
                out.append(
                    diag(
                        "output-stage-can-modify",
                        f"output stage '{entry.name}' offers '{raw}', which changes the workspace "
                        "after the work was meant to be done",
                        entry.span("available_tools", i),
                        key_path=format_key_path((*base, "available_tools", i)),
                    )
                )
    has_output_stage = any(e.stage.mode == "output" for e in stages.values())
    if has_output_stage and st.allow_complete and st.mode != "output":
        out.append(
            diag(
                "allow-complete-skips-output",
                f"stage '{entry.name}' may end the run itself (allow_complete), so the model can "
                "finish here and never reach the output stage",
                entry.span("allow_complete"),
                key_path=format_key_path((*base, "allow_complete")),
            )
        )
    if st.mode == "fan_out" and st.on_worker_failure == "fail_all":
        escapes = any(e.effective_condition in ("error", "dead_end") for _, e in st.all_edges())
        if not escapes:
            out.append(
                diag(
                    "fanout-no-escape",
                    f"fan_out stage '{entry.name}' fails as a whole when one worker fails "
                    '(on_worker_failure = "fail_all") and has no error or dead_end edge to go to',
                    entry.span("on_worker_failure"),
                    key_path=format_key_path((*base, "on_worker_failure")),
                )
            )
    return out


def _held_points(entry: StageEntry) -> list[Diagnostic]:
    st = entry.stage
    if st.mode != "interactive_points":
        return []
    out = []
    for i, point in enumerate(st.interaction_points):
        if point.unattended != "ask":
            continue
        label = point.name or f"#{i + 1}"
        out.append(
            diag(
                "holds-under-yolo",
                f"stage '{entry.name}': interaction point '{label}' says unattended = \"ask\", so "
                "even an unattended run stops there for a person",
                entry.span("interaction_points", i, "unattended"),
                key_path=format_key_path(
                    ("stages", entry.name, "interaction_points", i, "unattended")
                ),
            )
        )
    return out


def _dead_end_possible(stages: Mapping[str, StageEntry]) -> list[Diagnostic]:
    out = []
    for entry in stages.values():
        edges = [e for _, e in entry.stage.all_edges()]
        normal = [e for e in edges if e.effective_condition in ("always", "llm_choice")]
        if not normal:
            continue

        def capped(name: str) -> bool:
            target = stages.get(name)
            return target is None or target.stage.max_revisits is not None

        if not all(capped(e.to) for e in normal):
            continue
        escape = any(
            e.effective_condition in ("dead_end", "error")
            and e.to in stages
            and stages[e.to].stage.max_revisits is None
            for e in edges
        )
        if escape:
            continue
        out.append(
            diag(
                "dead-end-possible",
                f"stage '{entry.name}' can strand the run: every ordinary edge out of it leads to "
                "a stage with max_revisits, and once those are spent there is nowhere to go",
                entry.span(),
                key_path=format_key_path(("stages", entry.name)),
            )
        )
    return out


# -- regions ------------------------------------------------------------------------------


def _required_unenforceable(
    top: _Layout, stages: Mapping[str, StageEntry], layouts: Mapping[str, _Layout]
) -> list[Diagnostic]:
    out = []
    named: set[str] = set()
    writers = [
        n for n, e in stages.items() if any(t in _CONTEXT_WRITERS for t in e.stage.available_tools)
    ]
    for layout in [layouts[n] for n in stages] or [top]:
        for name, region in layout.regions.items():
            if not region.is_required or region.caller_seeded(name) or name in named:
                continue
            if any(name in layouts[w].regions for w in writers):
                continue
            named.add(name)
            out.append(
                layout.diag(
                    "required-region-unenforceable",
                    f"region '{name}' is required, but no stage that sees it offers context_write "
                    "or context_append, so nothing can fill it and the flag has no effect",
                    name,
                )
            )
    return out


def _compacted_deliverables(
    stages: Mapping[str, StageEntry], layouts: Mapping[str, _Layout]
) -> list[Diagnostic]:
    out = []
    named: set[str] = set()
    for name, entry in stages.items():
        if not any(e.transform in ("compact", "summarize") for _, e in entry.stage.all_edges()):
            continue
        layout = layouts[name]
        for region_name, region in layout.regions.items():
            kind = region.effective_kind
            stage_specific = kind not in _NOT_STAGE_SPECIFIC and not (
                kind == "custom" and region.persistent
            )
            if (
                region.is_required
                and region.can_be_summarized
                and stage_specific
                and region_name not in named
            ):
                named.add(region_name)
                out.append(
                    layout.diag(
                        "compact-summarizes-deliverable",
                        f"region '{region_name}' is required, and a compact edge out of stage "
                        f"'{name}' hands it to the summarizer, so later stages read it "
                        "paraphrased",
                        region_name,
                    )
                )
    return out


def _unbounded_percentage(
    top: _Layout, stages: Mapping[str, StageEntry], config: UserConfig | None
) -> list[Diagnostic]:
    overrides: dict[str, int] = {}
    for model, caps in ((config.model_capabilities if config else None) or {}).items():
        tokens = caps.get("max_context_tokens") if isinstance(caps, dict) else None
        if isinstance(tokens, int) and tokens > 0:
            overrides[model] = tokens
    widest: tuple[int, str] | None = None
    for entry in stages.values():
        for provider, model, _ in _model_entries(entry.stage):
            size = window(provider, model, overrides)
            if size is not None and (widest is None or size > widest[0]):
                widest = (size, model)
    if widest is None:
        return []  # no window known: no number to put in the sentence
    size, model = widest
    out = []
    named: set[str] = set()
    for layout in _all_layouts(top, stages):
        for name, region in layout.regions.items():
            if region.budget is None or region.max_tokens is not None or name in named:
                continue
            if region.effective_kind not in _EVICTING:
                continue
            fraction = parse_percentage(region.budget)
            if fraction is None:
                continue
            named.add(name)
            out.append(
                layout.diag(
                    "unbounded-percentage-budget",
                    f"region '{name}' evicts at its bound, and its budget "
                    f'"{region.budget.strip()}" is {round(size * fraction)} tokens on {model} '
                    f"({size} window): a bound that large may never be reached, so the region "
                    "keeps growing",
                    name,
                    "budget",
                )
            )
    return out


def _seeds(
    top: _Layout,
    stages: Mapping[str, StageEntry],
    plan: AgentPlan | None,
    workspace: Path,
) -> list[Diagnostic]:
    out = []
    for layout in _all_layouts(top, stages):
        for name, region in layout.regions.items():
            table = region.seed_table()
            if table is None:
                continue
            unknown = table.unknown_keys
            empty_tools = table.tools is not None and not table.tools
            if unknown or (table.kind is None and empty_tools):
                first = unknown[0] if unknown else "tools"
                hint = did_you_mean(first, SEED_KEYS) if unknown else None
                consequence = (
                    "so the region starts empty"
                    if table.kind is None
                    else f"which is ignored (the seed is read as '{table.kind}')"
                )
                what = (
                    f"unknown key '{first}'" + (f" (did you mean '{hint}'?)" if hint else "")
                    if unknown
                    else "an empty tools list"
                )
                out.append(
                    layout.diag(
                        "region-seed-not-understood",
                        f"region '{name}' has a seed with {what}, {consequence}",
                        name,
                        "seed",
                        first,
                    )
                )
            if table.kind == "command" and table.command is not None:
                covered = _default_safe(table.command, workspace)
                verdict = (
                    "the default safe list covers it"
                    if covered
                    else "the default safe list does not cover it, so Leviath refuses it at spawn"
                )
                out.append(
                    layout.diag(
                        "command-seed",
                        f"region '{name}' runs `{table.command}` when the agent starts, before the "
                        f"first inference and before any approval: {verdict}",
                        name,
                        "seed",
                        "command",
                    )
                )
            calls = table.tool_names()
            if calls:
                when = " on every stage entry" if table.refresh == "each_stage" else " at spawn"
                out.append(
                    layout.diag(
                        "tool-seed",
                        f"region '{name}' calls {', '.join(calls)}{when}, before any approval; "
                        + _seed_decisions(calls, plan),
                        name,
                        "seed",
                        table.kind or "tools",
                    )
                )
    return out


def _seed_decisions(calls: Iterable[str], plan: AgentPlan | None) -> str:
    """What the agent's permissions say about each seeded tool: a call that
    would ask is refused at spawn, because nobody can be asked yet."""
    parts = []
    for name in calls:
        decision = None
        if plan is not None:
            stage = plan.stage(plan.entry_stage)
            for st in stage.tools if stage is not None else ():
                if st.name == builtin_canonical(name):
                    decision = st.decision.permission
        if decision is None:
            b = resolve_builtin(name)
            decision = b.default_permission if b is not None else "ask"
        parts.append(f"{name} {decision}")
    return "each answers to the tool permissions (" + ", ".join(parts) + ")"


def _default_safe(command: str, workspace: Path) -> bool:
    from charter.runtime.shell import ShellPolicy, evaluate

    root = workspace if workspace.is_dir() else Path.cwd()
    verdict = evaluate(command, cwd=root, workspace=root, policy=ShellPolicy())
    return verdict.decision == "allow"


# -- read paths ---------------------------------------------------------------------------


def _read_paths(
    bp: Blueprint, smap: SourceMap, config: UserConfig | None, config_smap: SourceMap | None
) -> list[Diagnostic]:
    declared = bp.read_paths.allow if bp.read_paths is not None else ()
    if not declared:
        return []
    from charter.compiler.frontends.read_paths import grant_status, grants_problem, is_broad

    out = []
    where = smap.key_span(("read_paths",))
    for i, raw in enumerate(declared):
        if is_broad(raw):
            out.append(
                diag_at(
                    "broad-read-path",
                    f"read_paths entry '{raw}' covers the whole home directory or any path on the "
                    "machine",
                    smap,
                    ("read_paths", "allow", i),
                )
            )
    if config is None:
        out.append(
            diag(
                "read-paths-declared",
                "this blueprint asks to read outside its working directory ("
                + ", ".join(declared)
                + "); declaring is not granting, so each is refused unless the user's config "
                "grants it",
                where,
                key_path="read_paths",
            )
        )
        return out
    extra = config.agent_read_paths.get(bp.agent.name)
    located: list[tuple[str, KeyPath]] = [
        (g, ("security", "read_paths", i)) for i, g in enumerate(config.security.read_paths)
    ]
    located += [
        (g, ("agent_read_paths", bp.agent.name, "allow", i))
        for i, g in enumerate(extra.allow if extra is not None else ())
    ]
    grants = [g for g, _ in located]
    for raw, path in located:
        problem = grants_problem([raw])
        if problem is not None:
            at = config_smap.value_span(path) if config_smap is not None else where
            out.append(
                diag("read-paths-grant-invalid", problem, at, key_path=format_key_path(path))
            )
    if any(grants_problem([g]) for g in grants):
        return out
    allow_all = config.security.allow_blueprint_read_paths
    statuses = [(raw, grant_status(raw, grants, allow_blueprint=allow_all)) for raw in declared]
    out.append(
        diag(
            "read-paths-declared",
            "this blueprint asks to read outside its working directory: "
            + "; ".join(f"{raw} ({status})" for raw, status in statuses),
            where,
            key_path="read_paths",
        )
    )
    missing = [raw for raw, status in statuses if status == "not granted"]
    if missing:
        out.append(
            diag(
                "read-paths-not-granted",
                f"your config does not grant {', '.join(missing)}; reads there will be refused",
                where,
                key_path="read_paths",
                help=f"add to config.toml: [agent_read_paths.{bp.agent.name}] allow = "
                + "["
                + ", ".join(f'"{m}"' for m in missing)
                + "]",
            )
        )
    return out
