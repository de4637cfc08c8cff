"""A session: one agent running in one stage of a prepared plan.

A :class:`Session` is one agent in one stage with the launch flags and the
workspace it was started with; it also carries the run-scoped state the
gates keep (approval cache, data-flow labels, the connected MCP servers).
:func:`open_session` opens one on a plan prepared by
:mod:`charter.runtime.plan.prepared`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from charter.runtime.errors import CharterError
from charter.runtime.plan import Plan
from charter.runtime.plan.prepared import PreparedAgent, PreparedPlan, PreparedStage, prepare

if TYPE_CHECKING:
    from charter.runtime.mcp.session import McpBinding
    from charter.runtime.policy.approval import ApprovalCache
    from charter.runtime.policy.taint import TaintTracker

__all__ = ["Session", "SessionError", "normalise_allow", "open_session"]


class SessionError(CharterError):
    """The session cannot be opened (unknown agent or stage); the message says why."""


# Mutable state compared by identity: eq=False also saves a compiled __eq__
# at every start-up.
@dataclass(slots=True, eq=False)
class Session:
    """One agent in one stage, with its launch flags and workspace.

    ``allow`` holds canonical tool names from ``--allow``; ``yolo`` lifts every
    liftable ask. Neither ever lifts a deny. ``unattended`` selects the
    stage's unattended tool set (nobody is watching, blocking tools removed).
    """

    prepared: PreparedPlan
    agent: PreparedAgent
    stage_name: str
    workspace: Path
    unattended: bool = False
    yolo: bool = False
    allow: frozenset[str] = frozenset()
    # A parent's narrowing of what a child may use (delegate_task ``tools``):
    # None keeps the stage's own set; otherwise only these names stay offered.
    narrow: frozenset[str] | None = None
    approvals: ApprovalCache | None = None
    taint: TaintTracker | None = None
    run_id: str = ""
    # The agent's connected MCP servers (charter.runtime.mcp.session.McpRuntime.attach).
    mcp: McpBinding | None = None
    # Shell-guard reasons the stage's sandbox answers, set by charter run only
    # while that sandbox is in force (charter.runtime.sandbox.contained).
    contained: frozenset[str] = frozenset()
    _stage: PreparedStage | None = field(default=None, repr=False)

    @property
    def stage(self) -> PreparedStage:
        if self._stage is None or self._stage.stage.name != self.stage_name:
            self._stage = self.agent.stages[self.stage_name]
        return self._stage

    @property
    def shell(self) -> str:
        return self.prepared.shell

    def enter_stage(self, name: str) -> None:
        """Move to another stage; approvals granted "for this stage" lapse."""
        if name not in self.agent.stages:
            raise SessionError(_unknown("stage", name, self.agent.stages))
        if name != self.stage_name and self.approvals is not None:
            self.approvals.stage_changed(name)
        self.stage_name = name
        self._stage = None

    def offered(self) -> frozenset[str]:
        """The tools this session may call in its current stage: the stage's
        attended or unattended set, narrowed for a delegated child."""
        base = self.stage.offered(unattended=self.unattended)
        return base if self.narrow is None else base & self.narrow

    def lifted(self, tool: str) -> bool:
        """Whether a launch flag covers ``tool`` (only liftable asks use it)."""
        return self.yolo or tool in self.allow


def _unknown(what: str, name: str, known: Iterable[str]) -> str:
    names = sorted(known)
    listed = ", ".join(names) if names else "none"
    return f"no {what} named {name!r} in the plan (known: {listed})"


def normalise_allow(names: Iterable[str], agent: PreparedAgent) -> frozenset[str]:
    """``--allow`` values as the agent's plan names them (``bash`` -> ``shell``)."""
    return frozenset(agent.canonical(n) for n in names)


def open_session(
    plan: Plan | PreparedPlan,
    agent: str,
    *,
    workspace: str | Path,
    stage: str | None = None,
    unattended: bool = False,
    yolo: bool = False,
    allow: Iterable[str] = (),
    run_id: str = "",
    approvals: ApprovalCache | None = None,
    narrow: Iterable[str] | None = None,
) -> Session:
    """A session for ``agent`` (its entry stage unless ``stage`` is given).
    Data-flow tracking is attached when the agent's plan turns it on."""
    prepared = plan if isinstance(plan, PreparedPlan) else prepare(plan, agents=[agent])
    found = prepared.agents.get(agent)
    if found is None:
        raise SessionError(_unknown("agent", agent, prepared.agent_names))
    stage_name = stage if stage is not None else found.agent.entry_stage
    if stage_name not in found.stages:
        raise SessionError(_unknown("stage", stage_name, found.stages))
    from charter.runtime.policy.approval import ApprovalCache

    taint = None
    if found.agent.taint.enabled:
        from charter.runtime.policy.taint import TaintTracker

        taint = TaintTracker(found.agent.taint)
    return Session(
        prepared=prepared,
        agent=found,
        stage_name=stage_name,
        workspace=Path(workspace),
        unattended=unattended,
        yolo=yolo,
        allow=normalise_allow(allow, found),
        approvals=approvals if approvals is not None else ApprovalCache(stage_name),
        taint=taint,
        run_id=run_id,
        narrow=None if narrow is None else normalise_allow(narrow, found),
    )
