"""Checks over compiled agents that make an agent unsafe or stuck without
being outright errors of the files: the stage graph, shell policy, blocking
tools in unattended stages, and what holds under --yolo."""

from __future__ import annotations

from collections.abc import Iterable

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.rules import diag
from charter.runtime.plan import AgentPlan, SourceRef, Stage
from charter.runtime.plan.vocabulary import RANK

__all__ = ["lint_agent"]

_SHELL_NAMES = ("shell", "terminal")


def _span(ref: SourceRef | None, fallback: str) -> Span:
    if ref is None:
        return Span(fallback)
    return Span(ref.path, ref.line, ref.col)


def _stage_diag(rule: str, message: str, stage: Stage, root: str) -> Diagnostic:
    """A finding about a whole stage, at its origin."""
    return diag(rule, message, _span(stage.origin, root), key_path=f"stages.{stage.name}")


def _reachable(agent: AgentPlan) -> set[str]:
    stages = {s.name: s for s in agent.stages}
    seen: set[str] = set()
    todo = [agent.entry_stage]
    while todo:
        name = todo.pop()
        if name in seen or name not in stages:
            continue
        seen.add(name)
        todo.extend(e.to for e in stages[name].edges)
        # A fan_out stage reaches its worker and merge stages through its own
        # settings, not through an edge.
        fan = stages[name].fan_out
        if fan is not None:
            todo.extend(t for t in (fan.worker_stage, fan.merge_stage) if t is not None)
    return seen


def _worker_stages(agent: AgentPlan) -> set[str]:
    return {s.fan_out.worker_stage for s in agent.stages if s.fan_out and s.fan_out.worker_stage}


def _cycles_without_limit(agent: AgentPlan) -> list[list[str]]:
    """Strongly connected groups of stages (or self-loops) where no stage
    sets max_revisits and no edge inside the group has a gate."""
    stages = {s.name: s for s in agent.stages}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0

    # Iterative Tarjan: a chain of thousands of stages must not exhaust
    # Python's recursion limit (each frame is one stage in the recursive form).
    for root in stages:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work[-1]
            edges = stages[v].edges
            if i < len(edges):
                work[-1] = (v, i + 1)
                w = edges[i].to
                if w not in stages:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                groups.append(sorted(group))
    out = []
    for group in groups:
        members = set(group)
        internal = [e for n in group for e in stages[n].edges if e.to in members]
        if not internal:
            continue
        limited = any(stages[n].max_revisits is not None for n in group) or any(
            e.gate is not None for e in internal
        )
        if not limited:
            out.append(group)
    return out


def lint_agent(agent: AgentPlan) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    root = agent.root
    stages = {s.name: s for s in agent.stages}
    reachable = _reachable(agent)
    # With an unknown entry stage (already an error) nothing is reachable;
    # reporting every stage as unreachable would bury the one real mistake.
    graph_known = agent.entry_stage in stages
    for s in agent.stages if graph_known else ():
        # An unreachable output stage is reported once, as output-unreachable.
        if s.name not in reachable and s.name in stages and s.mode != "output":
            out.append(
                _stage_diag(
                    "unreachable-stage",
                    f"no edge path from the entry stage '{agent.entry_stage}' reaches stage "
                    f"'{s.name}'",
                    s,
                    root,
                )
            )
    outputs = [s for s in agent.stages if s.mode == "output"]
    for s in outputs:
        if s.name not in reachable and graph_known:
            out.append(
                _stage_diag(
                    "output-unreachable",
                    f"output stage '{s.name}' cannot be reached from '{agent.entry_stage}'",
                    s,
                    root,
                )
            )
    for group in _cycles_without_limit(agent):
        first = stages[group[0]]
        out.append(
            _stage_diag(
                "cycle-without-limit",
                "stages " + " -> ".join(group) + " form a loop with no max_revisits and no "
                "gated edge",
                first,
                root,
            )
        )
    if len(agent.stages) > 1:
        # A fan-out worker's run ends where its stage ends: that is the design.
        workers = _worker_stages(agent)
        # A blueprint that writes no edges runs its stages in order, and its
        # last stage ends the run: that is Leviath's linear form, not a dead end.
        linear = all(e.implied for st in agent.stages for e in st.edges)
        for s in agent.stages:
            if s.name in workers or linear:
                continue
            if not s.edges and s.mode != "output" and not s.allow_complete:
                out.append(
                    _stage_diag(
                        "dead-end-stage",
                        f"stage '{s.name}' has no edge out and is not an output stage",
                        s,
                        root,
                    )
                )
    out.extend(_stage_checks(agent, agent.stages))
    out.extend(_untracked_data_flow(agent))
    return out


def _stage_checks(agent: AgentPlan, stages: Iterable[Stage]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    tools = {t.name: t for t in agent.tools}
    for s in stages:
        where = _span(s.origin, agent.root)
        decisions = {t.name: t.decision for t in s.tools}
        for name, d in decisions.items():
            said = {sv.scope: sv for sv in d.scopes}
            st, ag = said.get("stage"), said.get("agent")
            if st and ag and st.value and ag.value and RANK[st.value] < RANK[ag.value]:
                out.append(
                    diag(
                        "stage-loosens-agent-permission",
                        f"stage '{s.name}' sets '{name}' to {st.value}, looser than the "
                        f"agent-wide {ag.value}",
                        _span(st.source, agent.root),
                        key_path=f"stages.{s.name}.tool_permissions.{name}",
                    )
                )
        for name in _SHELL_NAMES:
            shell_decision = decisions.get(name)
            if shell_decision is None:
                continue
            spoke = [sv for sv in shell_decision.scopes if sv.scope != "builtin_default"]
            if all(sv.value is None for sv in spoke) and shell_decision.permission == "ask":
                out.append(
                    diag(
                        "implicit-shell-policy",
                        f"stage '{s.name}' offers '{name}' with no permission set anywhere: it "
                        "asks every time, so an unattended run would wait for nobody",
                        where,
                        key_path=f"stages.{s.name}.tool_permissions",
                    )
                )
        blocking = [n for n in s.attended if n in tools and tools[n].blocks_on_person]
        if s.mode == "autonomous":
            unsettled = [n for n in blocking if n not in s.required_tools]
            if unsettled and not _allows_blocking(s):
                out.append(
                    diag(
                        "blocking-tool-in-autonomous-stage",
                        f"autonomous stage '{s.name}' offers {', '.join(unsettled)}, which wait "
                        "for a person; unattended runs drop them",
                        where,
                        key_path=f"stages.{s.name}.available_tools",
                    )
                )
        kept = [n for n in blocking if n in s.required_tools]
        if kept:
            out.append(
                diag(
                    "holds-under-yolo",
                    f"stage '{s.name}' keeps {', '.join(kept)} in unattended runs; such a run "
                    "will wait for an answer",
                    where,
                    key_path=f"stages.{s.name}.required_tools",
                )
            )
            if agent.limits.interaction_timeout_secs == 0:
                out.append(
                    diag(
                        "interaction-without-timeout",
                        f"stage '{s.name}' keeps a blocking tool but interaction_timeout_secs is "
                        "0, so an unanswered prompt waits forever",
                        where,
                        key_path="limits.interaction_timeout_secs",
                    )
                )
    return out


def _allows_blocking(stage: Stage) -> bool:
    return stage.allow_blocking_tools


def _untracked_data_flow(agent: AgentPlan) -> list[Diagnostic]:
    """Untrusted input or secrets, and a way out that nobody has to be asked
    about (allowed, or an ask that --yolo or --allow lifts), with nothing
    watching the path between them. Data-flow tracking is the one check that
    --yolo does not waive."""
    if agent.taint.enabled:
        return []
    inputs = []
    if agent.mcp_servers:
        inputs.append("MCP results (" + ", ".join(m.server for m in agent.mcp_servers) + ")")
    if any(g.capability.startswith("secret.bind:") for g in agent.grants):
        inputs.append("secret bindings")
    if not inputs:
        return []
    tools = {t.name: t for t in agent.tools}
    outbound = sorted(
        {
            st.name
            for s in agent.stages
            for st in s.tools
            if (st.decision.permission == "allow" or st.decision.liftable)
            and (t := tools.get(st.name)) is not None
            and t.outbound
            and t.source == "builtin"
        }
    )
    if not outbound:
        return []
    return [
        diag(
            "untracked-data-flow",
            f"agent '{agent.name}' takes in {' and '.join(inputs)} and offers "
            f"{', '.join(outbound)}; under --yolo (or --allow) nothing would check where those "
            "send data, because data-flow tracking is off",
            _span(agent.origin, agent.root),
            key_path="",
        )
    ]
