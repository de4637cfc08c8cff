"""What every agent of one run shares (:class:`RunContext`), and what one
agent's run comes to (:class:`AgentResult`)."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread

from charter.runtime.records import field_values

if TYPE_CHECKING:
    from charter.runtime.audit import AuditLog
    from charter.runtime.mcp.session import McpRuntime
    from charter.runtime.models import ModelProvider
    from charter.runtime.plan.prepared import PreparedPlan
    from charter.runtime.policy.approval import ApprovalProvider
    from charter.runtime.redact import Redactor
    from charter.runtime.run.events import EventBus
    from charter.runtime.run.people import Prompter
    from charter.runtime.run.sessions import SessionBook
    from charter.runtime.sandbox.containment import Containment

__all__ = ["AgentResult", "AgentStatus", "RunContext", "RunSettings"]

AgentStatus = Literal["completed", "no_output", "failed", "cancelled", "killed"]


@dataclass(frozen=True, slots=True)
class AgentResult:
    agent_id: str
    agent_name: str
    status: AgentStatus
    reason: str
    output: str | None
    output_format: str | None
    turns: int
    tool_calls: int
    gates_forced: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**field_values(self), "gates_forced": list(self.gates_forced)}


@dataclass(slots=True, kw_only=True)
class RunSettings:
    """What the caller of a run decides for all of it; :class:`RunContext`
    carries these to every agent, and ``runner.RunOptions`` adds which agent
    starts and with what task."""

    prepared: PreparedPlan
    workspace: Path
    run_dir: Path
    run_id: str
    provider: ModelProvider
    approvals: ApprovalProvider
    bus: EventBus
    audit: AuditLog | None
    redactor: Redactor
    env: Mapping[str, str]
    yolo: bool = False
    allow: tuple[str, ...] = ()
    prompter: Prompter | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    # Where authored tools' modules are found (the compiled project's root);
    # None falls back to the workspace. Their digests are checked either way.
    project_root: Path | None = None
    # Where commands run (charter.runtime.sandbox.containment); None: uncontained.
    containment: Containment | None = None
    # The named session the root agent's conversation is kept in (and resumed
    # from); None: the run keeps its conversation only in memory.
    session: SessionBook | None = None
    # The providers the run's model endpoint serves (--stage-models): a stage
    # whose model list names one of them runs on that entry, falling back
    # along its list; empty: every stage runs on the run's own model.
    stage_providers: tuple[str, ...] = ()


@dataclass(slots=True, kw_only=True)
class RunContext(RunSettings):
    """What every agent of one run shares: the settings, and the state the
    run builds as it goes."""

    limiter: anyio.CapacityLimiter | None = None
    # The run's MCP connections; made when the first agent with servers
    # starts (or given, e.g. with in-process servers), closed by the root.
    mcp: McpRuntime | None = None
    _mcp_lock: threading.Lock = field(default_factory=threading.Lock)
    # Work in threads that the run waits for (tool calls, MCP connects and
    # closes, stopping background tasks) runs in shielded scopes registered
    # here; an interrupt gives them all one short deadline (see expire).
    _guarded: set[anyio.CancelScope] = field(default_factory=set)
    _expires_at: float | None = None

    def guard(self, scope: anyio.CancelScope) -> None:
        self._guarded.add(scope)
        if self._expires_at is not None:
            scope.deadline = min(scope.deadline, self._expires_at)

    def unguard(self, scope: anyio.CancelScope) -> None:
        self._guarded.discard(scope)

    def expire(self, grace_s: float) -> None:
        """The run is stopping: every thread it waits for gets ``grace_s`` more
        seconds (enough for a shell to stop its process tree on the cancel
        event), then is abandoned, so the run ends promptly whatever a tool
        is doing. Call from the event loop."""
        at = anyio.current_time() + grace_s
        self._expires_at = at if self._expires_at is None else min(self._expires_at, at)
        for scope in list(self._guarded):
            scope.deadline = min(scope.deadline, self._expires_at)

    async def in_thread(self, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """Run ``fn`` in a worker thread, shielded from cancellation until the
        run's interrupt deadline (:meth:`expire`); ``(True, result)``, or
        ``(False, None)`` when it was abandoned at that deadline. An
        exception from ``fn`` propagates."""
        with anyio.CancelScope(shield=True) as scope:
            self.guard(scope)
            try:
                return True, await anyio.to_thread.run_sync(
                    fn, abandon_on_cancel=True, limiter=self.limiter
                )
            finally:
                self.unguard(scope)
        return False, None

    def mcp_runtime(self) -> McpRuntime:
        with self._mcp_lock:
            if self.mcp is None:
                from charter.runtime.mcp.session import McpRuntime, run_host

                workspace, run_dir, project = self.workspace, self.run_dir, self.project_root
                containment = self.containment

                def host(agent: Any) -> Any:
                    # ${VAR} in a manifest is expanded from the real
                    # environment, and only after connecting was approved.
                    made = run_host(
                        agent,
                        workspace=workspace,
                        run_dir=run_dir,
                        environ=os.environ,
                        project_root=project,
                    )
                    if containment is None:
                        return made
                    # A server of an agent this run compiled may start in the
                    # agent's own directory (outside the workspace): its
                    # sandbox shows that directory, read-only.
                    readable = (made.agent_dir,) if made.agent_dir_trusted else ()
                    return dataclasses.replace(
                        made, contain=containment.mcp_contain(agent, readable=readable)
                    )

                self.mcp = McpRuntime(host, audit=self.audit)
            return self.mcp
