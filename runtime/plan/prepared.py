"""A loaded plan made ready for deciding tool calls.

Loading a plan (:mod:`charter.runtime.plan.loader`) proves it is intact;
preparing it (:func:`prepare`) builds what every decision needs so no call
pays for it: lookup maps from names (and aliases) to tool entries and stage
decisions, and one argument check per distinct schema text
(:class:`~charter.runtime.policy.arguments.SchemaCheck`). Everything here comes from
the plan: nothing is looked up in the built-in catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from charter.runtime.plan import AgentPlan, Decision, Plan, Stage, ToolEntry
from charter.runtime.plan.loader import load_plan
from charter.runtime.policy.arguments import SchemaCheck

__all__ = [
    "PreparedAgent",
    "PreparedPlan",
    "PreparedStage",
    "load_for_agents",
    "prepare",
    "usable_grants",
]


# PreparedStage and PreparedPlan are NamedTuples: they are defined at every
# start-up, and a NamedTuple costs about a tenth of a frozen dataclass to
# define. PreparedAgent stays a dataclass: its cache needs a fresh dict each.
class PreparedStage(NamedTuple):
    """A stage with its offered tool sets and decisions indexed for lookups."""

    stage: Stage
    attended: frozenset[str]
    unattended: frozenset[str]
    decisions: Mapping[str, Decision]

    def offered(self, *, unattended: bool) -> frozenset[str]:
        return self.unattended if unattended else self.attended


@dataclass(frozen=True, slots=True)
class PreparedAgent:
    """An agent's plan indexed for deciding calls: tools, schema checks, stages, grants."""

    agent: AgentPlan
    tools: Mapping[str, ToolEntry]
    checks: Mapping[str, SchemaCheck]
    stages: Mapping[str, PreparedStage]
    # Capabilities usable by every tool, and per authored-tool slot.
    grants: frozenset[str]
    slot_grants: Mapping[str, frozenset[str]]
    # Whether the capability gate applies: an agent with an agent.yaml core
    # declares grants; a blueprint-only agent declares none and is not checked.
    checks_capabilities: bool
    # Each alias a tool entry lists, to the entry's name (``bash`` -> ``shell``).
    aliases: Mapping[str, str] = field(default_factory=dict)
    # (stage, tool) -> the plan part of a decision's explanation, built on first use.
    provenance_cache: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # Plan tools that connected MCP servers do not offer (changed since they
    # were locked, not listed, server not connected), with the reason a call
    # is told; filled by charter.runtime.mcp.session.overlay.
    unavailable: Mapping[str, str] = field(default_factory=dict)

    def resolve_name(self, name: str, offered: frozenset[str]) -> str | None:
        """The plan's name for what the model called ``name``: the name itself
        when the stage offers it, else the tool an alias names (``bash`` ->
        ``shell``) when that is offered."""
        if name in offered:
            return name
        canonical = self.aliases.get(name)
        if canonical is not None and canonical in offered:
            return canonical
        return None

    def canonical(self, name: str) -> str:
        """``name`` as the plan spells it: the tool an alias names, else itself."""
        return self.aliases.get(name, name)


class PreparedPlan(NamedTuple):
    """A plan ready for decisions. ``plan`` may hold only the prepared agents
    (see :func:`load_for_agents`); ``agent_names`` lists every agent ``plan``
    holds."""

    plan: Plan
    agents: Mapping[str, PreparedAgent]
    agent_names: tuple[str, ...] = ()

    @property
    def shell(self) -> str:
        return self.plan.body.shell


def _slot_of(agent: AgentPlan, entry: ToolEntry) -> str | None:
    if entry.authored is None:
        return None
    prefix = "" if agent.root in ("", ".") else agent.root.rstrip("/") + "/"
    return entry.authored.directory.removeprefix(prefix)


def usable_grants(agent: PreparedAgent, entry: ToolEntry) -> frozenset[str]:
    """The capabilities ``entry`` may use: the agent's, plus its slot's."""
    slot = _slot_of(agent.agent, entry)
    if slot is None:
        return agent.grants
    return agent.grants | agent.slot_grants.get(slot, frozenset())


def _aliases(agent: AgentPlan) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for t in agent.tools:
        for alias in t.aliases:
            out.setdefault(alias, t.name)
    return MappingProxyType(out)


def _prepare_agent(
    agent: AgentPlan, cache: dict[str, SchemaCheck], *, eager: bool = True
) -> PreparedAgent:
    tools = {t.name: t for t in agent.tools}
    checks: dict[str, SchemaCheck] = {}
    for t in agent.tools:
        if t.input_schema is None:
            checks[t.name] = SchemaCheck(None, off_note=t.validation_note or "off in the plan")
            continue
        # Cross-field rules (not shown to the model) are checked with the
        # schema: "start needs goal" holds before any approval is asked.
        text = t.input_schema
        if t.input_rules is not None:
            text = json.dumps(
                {"allOf": [json.loads(t.input_schema), json.loads(t.input_rules)]},
                sort_keys=True,
                separators=(",", ":"),
            )
        # Agents and tools share schema texts; compile each distinct text once.
        check = cache.get(text)
        if check is None:
            check = cache[text] = SchemaCheck(text, trusted=t.schema_trusted, eager=eager)
        checks[t.name] = check
    stages = {
        s.name: PreparedStage(
            stage=s,
            attended=frozenset(s.attended),
            unattended=frozenset(s.unattended),
            decisions=MappingProxyType({st.name: st.decision for st in s.tools}),
        )
        for s in agent.stages
    }
    slots: dict[str, set[str]] = {}
    for g in agent.grants:
        if g.slot is not None:
            slots.setdefault(g.slot, set()).add(g.capability)
    return PreparedAgent(
        agent=agent,
        tools=MappingProxyType(tools),
        checks=MappingProxyType(checks),
        stages=MappingProxyType(stages),
        grants=frozenset(g.capability for g in agent.grants if g.slot is None),
        slot_grants=MappingProxyType({k: frozenset(v) for k, v in slots.items()}),
        checks_capabilities=agent.kind != "blueprint",
        aliases=_aliases(agent),
    )


def prepare(plan: Plan, *, agents: Iterable[str] | None = None, eager: bool = True) -> PreparedPlan:
    """Build lookup maps and argument checks for ``plan`` (all agents, or
    only the named ones: a one-shot CLI decision needs just one). With
    ``eager=False`` each validator is compiled when a call first needs it."""
    wanted = None if agents is None else set(agents)
    cache: dict[str, SchemaCheck] = {}
    prepared = {
        a.name: _prepare_agent(a, cache, eager=eager)
        for a in plan.body.agents
        if wanted is None or a.name in wanted
    }
    names = tuple(a.name for a in plan.body.agents)
    return PreparedPlan(plan=plan, agents=MappingProxyType(prepared), agent_names=names)


def load_for_agents(
    path: str | Path, agents: Iterable[str] | None, *, eager: bool = False
) -> PreparedPlan:
    """Load the plan at ``path`` (:func:`charter.runtime.plan.loader.load_plan`,
    selectively when ``agents`` names some) and prepare the named agents
    (every agent when ``agents`` is None). Raises ``PlanError``. When the
    selective mode read only the named agents, ``agent_names`` lists only
    them; an agent the plan does not hold makes the loader read it whole, so
    the error can name every agent there is."""
    wanted = None if agents is None else set(agents)
    return prepare(load_plan(path, agents=wanted), agents=wanted, eager=eager)
