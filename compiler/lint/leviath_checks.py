"""What Leviath refuses when it loads a blueprint, beyond single values.

``Blueprint::validate`` in Leviath rejects, before anything runs:

* a gate or a stage's tool routing that names a context region no layout
  declares, or routing into a region the stage's own layout leaves out (its
  results would land where the stage cannot read them back);
* a ``require_no_open_items`` gate on a region that is not a checklist (it
  would always read zero open items and pass);
* a ``require_modifications`` gate on a stage that offers no tool that
  modifies files (and none the gate counts), which can never pass;
* an edge from a stage to itself without ``max_revisits``;
* a graph in which no path from the entry stage reaches a stage that ends
  the run.

Charter reports each as an error at the key at fault, so ``charter compile``
refuses what Leviath would refuse to start.
"""

from __future__ import annotations

from collections.abc import Mapping

from charter.compiler.diagnostics import Diagnostic, format_key_path
from charter.compiler.frontends.blueprint import Blueprint
from charter.compiler.frontends.regions import Region
from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.resolve.tooltable import builtin_canonical
from charter.compiler.rules import diag

__all__ = ["ALWAYS_VISIBLE", "blueprint_refusals"]

# Regions the runtime keeps visible in every stage whatever a layout says.
ALWAYS_VISIBLE: tuple[str, ...] = (
    "conversation",
    "tool_results",
    "final_output",
    "stage_instructions",
)
# The layout Leviath uses when a blueprint declares no regions at all.
_DEFAULT_LAYOUT: tuple[str, ...] = ("system", "conversation")
_MODIFYING = ("write_file", "edit_file")


def _top_regions(bp: Blueprint) -> dict[str, Region]:
    return dict(bp.context.regions) if bp.context is not None else {}


def blueprint_refusals(bp: Blueprint, stages: Mapping[str, StageEntry]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    top = _top_regions(bp)
    top_names = set(top) or set(_DEFAULT_LAYOUT)
    known = set(top_names) | set(ALWAYS_VISIBLE)
    checklists = {n for n, r in top.items() if r.effective_kind == "checklist"}
    for e in stages.values():
        own = e.stage.context.regions if e.stage.context is not None else {}
        known.update(own)
        checklists.update(n for n, r in own.items() if r.effective_kind == "checklist")
    for e in stages.values():
        out += _routing(e, top_names)
        out += _gates(e, known, checklists)
        out += _self_loop(e)
    out += _terminal_path(bp, stages)
    return out


def _routing(e: StageEntry, top_names: set[str]) -> list[Diagnostic]:
    r = e.stage.tool_routing
    if r is None:
        return []
    own = e.stage.context.regions if e.stage.context is not None else {}
    visible = (set(own) if own else top_names) | set(ALWAYS_VISIBLE)
    targets: list[tuple[tuple[str | int, ...], str]] = []
    if r.default_region is not None:
        targets.append((("tool_routing", "default_region"), r.default_region))
    for tool, value in r.overrides.items():
        region = value if isinstance(value, str) else value.region
        if region is not None:
            key = ("tool_routing", "overrides", tool)
            targets.append((key if isinstance(value, str) else (*key, "region"), region))
    out = []
    for path, region in targets:
        if region in visible:
            continue
        out.append(
            diag(
                "unknown-region",
                f"stage '{e.name}' routes results to region '{region}', which it cannot see "
                "(no layout it uses declares it), so it could never read them back",
                e.span(*path),
                key_path=format_key_path(("stages", e.name, *path)),
            )
        )
    return out


def _gates(e: StageEntry, known: set[str], checklists: set[str]) -> list[Diagnostic]:
    out = []
    offered = {builtin_canonical(t) for t in e.stage.available_tools}
    for path, edge in e.stage.all_edges():
        g = edge.gate
        if g is None:
            continue
        for key in ("region", "require_region_updated", "require_no_open_items"):
            region = getattr(g, key)
            if region is not None and region not in known:
                out.append(
                    diag(
                        "unknown-region",
                        f"the gate on the edge from '{e.name}' to '{edge.to}' names region "
                        f"'{region}' in {key}, which no layout declares",
                        e.span(*path, "gate", key),
                        key_path=format_key_path(("stages", e.name, *path, "gate", key)),
                    )
                )
        region = g.require_no_open_items
        if region is not None and region in known and region not in checklists:
            out.append(
                diag(
                    "invalid-value",
                    f"require_no_open_items names region '{region}', which is not a checklist "
                    '(kind = "checklist"), so the gate would always pass',
                    e.span(*path, "gate", "require_no_open_items"),
                    key_path=format_key_path(
                        ("stages", e.name, *path, "gate", "require_no_open_items")
                    ),
                )
            )
        extra = {builtin_canonical(t) for t in g.tools}
        if g.require_modifications and not (offered & set(_MODIFYING)) and not (offered & extra):
            out.append(
                diag(
                    "gate-cannot-pass",
                    f"the gate on the edge from '{e.name}' to '{edge.to}' requires modifications, "
                    "but the stage offers no tool that modifies files (write_file, edit_file) "
                    "and none the gate lists",
                    e.span(*path, "gate", "require_modifications"),
                    key_path=format_key_path(
                        ("stages", e.name, *path, "gate", "require_modifications")
                    ),
                )
            )
    return out


def _self_loop(e: StageEntry) -> list[Diagnostic]:
    st = e.stage
    if e.name not in st.transitions or st.max_revisits is not None:
        return []
    return [
        diag(
            "self-loop-without-limit",
            f"stage '{e.name}' has an edge to itself and no max_revisits, so it could loop forever",
            e.span("transitions", e.name, key=True),
            key_path=format_key_path(("stages", e.name, "transitions", e.name)),
        )
    ]


def _terminal_path(bp: Blueprint, stages: Mapping[str, StageEntry]) -> list[Diagnostic]:
    """Leviath's rule: some stage reachable from the entry ends the run (an
    empty transitions table, or the last stage of a run of stages without
    transitions); a fan_out stage with a merge stage continues there. Only a
    blueprint that writes transitions at all has a graph to check."""
    names = list(stages)
    if not names or not any(e.stage.declares_edges for e in stages.values()):
        return []
    entry = bp.agent.entry_stage or names[0]
    if entry not in stages:
        return []  # entry-stage-unknown says so
    position = {n: i for i, n in enumerate(names)}

    def successors(name: str) -> list[str] | None:
        """Where a run may go from this stage, or None when it can end here."""
        st = stages[name].stage
        # Charter's runtime also ends a run in an output stage and in one
        # that allows completing, whatever edges they have.
        if st.mode == "output" or st.allow_complete:
            return None
        if st.mode == "fan_out" and st.merge_stage is not None:
            return [st.merge_stage]
        if not st.declares_edges:
            at = position[name]
            return None if at + 1 >= len(names) else [names[at + 1]]
        targets = list(st.transitions) + [edge.to for edge in st.edges]
        return targets or None

    # A search with an explicit stack: a blueprint may chain thousands of
    # stages, deeper than Python's recursion allows.
    seen: set[str] = set()
    stack = [entry]
    while stack:
        name = stack.pop()
        if name in seen or name not in stages:
            continue
        seen.add(name)
        nxt = successors(name)
        if nxt is None:
            return []
        stack.extend(nxt)
    e = stages[entry]
    return [
        diag(
            "no-terminal-path",
            f"no path of edges from the entry stage '{entry}' reaches a stage that ends the run "
            "(one with an empty [stages.<name>.transitions] table), so the agent could never "
            "finish",
            e.span(),
            key_path=format_key_path(("stages", entry)),
        )
    ]
