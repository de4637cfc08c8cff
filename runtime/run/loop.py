"""The agent loop: drive one agent through its stages with a model.

Each turn sends the model the stage's tool definitions exactly as the plan
compiled them (the attended or the unattended set) and the conversation; each
tool call goes through the gate pipeline (:func:`charter.runtime.gates.
execute`), whose refusals come back to the model as results. After the turn
the loop decides whether to leave the stage, by the stage's edges:

``llm_choice``
    the model chose this hinted edge (``ModelTurn.edge``);
``always``
    the model ended a turn without calling a tool;
``error``
    the model provider failed (after its own retries);
``max_iterations``
    the stage used up its iterations (``max_iterations``, else the plan's
    ``default_max_iterations``); without such an edge the run stops there;
``stuck``
    any threshold the edge sets is reached (``stuck_after_iterations`` turns
    without progress, ``stuck_after_tool_calls`` calls or
    ``stuck_after_minutes`` minutes in the stage, one file edited
    ``stuck_after_same_file_edits`` times); with none set, three turns in a
    row made no progress: every call was refused or failed, or the turn
    repeated the previous one's calls exactly;
``dead_end``
    the model twice ended a turn with neither a tool call nor an edge choice.

An edge with a gate is taken only when the gate's conditions hold. Work
means a call that succeeded and counts as work in the plan (a write, an edit,
a submitted output) or a successful call to one of the gate's own tools; a
refused, failed or malformed call never counts. A held gate tells the model
why and the stage goes on; after ``max_attempts`` holds the edge is taken
anyway and that is recorded in the events and the audit log.

The run ends when ``submit_output`` succeeds in an output stage. A stage
with no edges and no output (an agent core's single chat stage) or one with
``allow_complete`` ends when the model answers without calling a tool, and
that text is the answer.

The system prompt is rebuilt before every turn: it ends with the agent's
context sections and checklists as they stand (bounded in size), so what the
agent wrote with the context tools on one turn is in front of it on the next,
in every later stage, whatever the edge's transform did to the conversation.

A sub-agent may be asked for another answer shape than its blueprint
declares (``spawn_agent``'s ``output_format`` and ``output_instructions``).
That request replaces the declared shape everywhere the child meets it: in
its system prompt, in the description of ``submit_output`` (the one tool
definition not sent exactly as compiled), in the check its answer must pass,
and in the format its result reports.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread

from charter.runtime.gates import decide, execute
from charter.runtime.models import (
    EdgeChoice,
    Message,
    ModelError,
    ModelProvider,
    ModelToolCall,
    RetryNotice,
    ScriptExhaustedError,
    ScriptExpectationError,
    ToolSpec,
)
from charter.runtime.plan import Edge, OutputSpec, Stage, ToolEntry
from charter.runtime.prepared import PreparedPlan
from charter.runtime.results import ToolCall, ToolResult, refusal
from charter.runtime.run.progress import Meter
from charter.runtime.session import Session, open_session
from charter.runtime.tools.context import fold_sections, validate_output
from charter.runtime.tools.registry import IMPLEMENTATIONS, Registry, RunStore, ToolRuntime
from charter.runtime.tools.tasks import cancel_tasks
from charter.runtime.tools.web import web_config_for

if TYPE_CHECKING:
    from charter.runtime.approval import ApprovalAnswer, ApprovalProvider, ApprovalRequest
    from charter.runtime.audit import AuditLog
    from charter.runtime.mcp.session import McpRuntime
    from charter.runtime.redact import Redactor
    from charter.runtime.run.agents import AgentWorld
    from charter.runtime.run.events import EventBus
    from charter.runtime.run.people import Prompter
    from charter.runtime.sandbox.containment import Containment

__all__ = ["AgentResult", "AgentRun", "RunContext", "Status"]

Status = Literal["completed", "no_output", "failed", "cancelled", "killed"]

_STUCK_TURNS = 3
_PROGRESS_EVERY_S = 1.0
_DEAD_END_TURNS = 2
_MAX_MODEL_FAILURES = 3  # in a row, across error edges
_REFUSED = ("[error]", "[denied]", "[unavailable]", "[blocked]")


@dataclass(frozen=True, slots=True)
class AgentResult:
    agent_id: str
    agent_name: str
    status: Status
    reason: str
    output: str | None
    output_format: str | None
    turns: int
    tool_calls: int
    gates_forced: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "status": self.status,
            "reason": self.reason,
            "output": self.output,
            "output_format": self.output_format,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "gates_forced": list(self.gates_forced),
        }


@dataclass(slots=True)
class RunContext:
    """What every agent of one run shares."""

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
    limiter: anyio.CapacityLimiter | None = None
    # Where authored tools' modules are found (the compiled project's root);
    # None falls back to the workspace. Their digests are checked either way.
    project_root: Path | None = None
    # The run's MCP connections; made when the first agent with servers
    # starts (or given, e.g. with in-process servers), closed by the root.
    mcp: McpRuntime | None = None
    # Where commands run (charter.runtime.sandbox.containment); None: uncontained.
    containment: Containment | None = None
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
                import os

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


def _skills_root(agent: Any, project_root: Path | None, workspace: Path) -> Path | None:
    """Where the core's skills live: the plan names the folder relative to the
    project, which a run from a project directory knows; a run from a plan
    file reads it relative to the workspace."""
    rel: str | None = getattr(agent, "skills_root", None)
    if rel is None:
        return None
    return (project_root or workspace) / rel


def _region_hash(store: RunStore, region: str) -> str:
    with store.lock:
        entries = store.regions.get(region) or []
        text = json.dumps([[e.key, e.content] for e in entries])
    return hashlib.sha256(text.encode()).hexdigest()


def _is_output_stage(stage: Stage) -> bool:
    return stage.output is not None or stage.mode == "output"


def _ends_with_text(stage: Stage) -> bool:
    """A stage whose answer is the model's reply text (it stops calling tools)."""
    return not _is_output_stage(stage) and (stage.allow_complete or not stage.edges)


def _same_format(a: str | None, b: str | None) -> bool:
    return (a or "").strip().lower() == (b or "").strip().lower()


def _overridden(base: OutputSpec, asked: OutputSpec) -> OutputSpec:
    """The shape a parent asked for (``spawn_agent``'s ``output_format`` and
    ``output_instructions``) laid over the one the stage declares. What the
    parent said wins; the blueprint's instructions, example and answer schema
    describe the blueprint's own shape, so they are kept only while the
    parent asked for nothing that contradicts them."""
    new_format = asked.format is not None and not _same_format(asked.format, base.format)
    if not new_format and asked.instructions is None:
        return base
    if new_format:
        instructions = asked.instructions
    else:
        instructions = asked.instructions or base.instructions
    return OutputSpec(
        format=asked.format or base.format,
        instructions=instructions,
        # The blueprint's example and schema show its own shape; with another
        # format or other instructions they would contradict the request.
        example=None,
        answer_schema=None,
    )


# Bounded: the format and instructions are whatever a parent model asked for.
@functools.lru_cache(maxsize=64)
def _submit_description(fmt: str | None, instructions: str | None, example: str | None) -> str:
    """submit_output's description for an overridden shape, rendered from the
    catalog's own template as the compiler renders it for a declared one, so
    the tool does not advertise the shape the parent overrode."""
    import jinja2

    from charter.runtime.catalog import resolve_builtin

    tool = resolve_builtin("submit_output")
    if tool is None:  # pragma: no cover - the packaged catalog always has it
        raise RuntimeError("the built-in catalog has no submit_output")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    out = {"format": fmt, "instructions": instructions, "example": example}
    return env.from_string(tool.description_template).render(output=out, tool=tool.name).strip()


class AgentRun:
    """One agent (the root, or a sub-agent) running through its stages."""

    def __init__(
        self,
        ctx: RunContext,
        world: AgentWorld,
        *,
        agent_id: str,
        agent_name: str,
        task: str,
        depth_budget: int,
        unattended: bool,
        provider: ModelProvider,
        output_override: OutputSpec | None = None,
        parent: str | None = None,
        narrow: frozenset[str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.world = world
        self.id = agent_id
        self.name = agent_name
        self.task = task
        self.depth_budget = depth_budget
        self.parent = parent
        self.provider = provider
        self.output_override = output_override
        self.session: Session = open_session(
            ctx.prepared,
            agent_name,
            workspace=ctx.workspace,
            unattended=unattended,
            yolo=ctx.yolo,
            allow=ctx.allow,
            run_id=ctx.run_id,
            narrow=narrow,
        )
        agent = self.session.agent.agent
        self.cancel = threading.Event()
        # Why this agent was stopped from outside (kill_agent), if it was.
        self.stopped: tuple[Status, str] | None = None
        self.rt = ToolRuntime(
            workspace=ctx.workspace,
            store=RunStore(),
            redactor=ctx.redactor,
            shell=ctx.prepared.shell,
            timeout_s=agent.limits.shell_timeout_secs,
            cancel=self.cancel,
            env=dict(ctx.env),
            grants=self.session.agent.grants,
            project_root=ctx.project_root,
            skills_root=_skills_root(agent, ctx.project_root, ctx.workspace),
            history=lambda: self.messages,
            web=web_config_for(agent.allow_local_network, agent.allow_env_vars, os.environ),
        )
        self._contain(self.session.stage_name)
        self.inbox: list[tuple[str | None, str]] = []
        self._inbox_lock = threading.Lock()
        self.registry = self._registry()
        self.messages: list[Message] = []
        self.turns = 0
        self.calls = 0
        self.gates_forced: list[str] = []
        # Per stage visit:
        self.iteration = 0
        self.work_done = False
        self.ok_tools: set[str] = set()
        self.region_marks: dict[str, str] = {}
        self.visits: dict[str, int] = {}
        self.gate_attempts: dict[tuple[str, int], int] = {}
        self.no_progress = 0
        self.idle_turns = 0
        # Per stage visit, for a stuck edge's thresholds.
        self.stage_started = time.monotonic()
        self.stage_calls = 0
        self.file_edits: dict[str, int] = {}
        self.model_failures = 0
        self.last_signature: tuple[tuple[str, str], ...] | None = None
        self.visit_log: list[str] = []

    # -- plumbing ------------------------------------------------------------

    def _contain(self, stage: str) -> None:
        """Commands of ``stage`` run in its sandbox, and the asks that
        sandbox answers are lifted only while it is in force."""
        if self.ctx.containment is None:
            return
        where = self.ctx.containment.stage(self.name, stage)
        self.rt = dataclasses.replace(self.rt, sandbox=where.sandbox)
        self.session.contained = where.rules()

    def emit(self, kind: str, **fields: Any) -> None:
        self.ctx.bus.emit(kind, self.id, **fields)

    def _audit(self, event: str, **fields: Any) -> None:
        if self.ctx.audit is not None:
            self.ctx.audit.write(
                event, run=self.ctx.run_id, agent=self.name, agent_id=self.id, **fields
            )

    def _audit_refusal(self, call: ModelToolCall, gate: str, rule: str, reason: str | None) -> None:
        """Audit a call the loop refuses itself, before the gates see it, in
        the shape the gates' own decision records have."""
        self._audit(
            "decision",
            stage=self.stage.name,
            call_id=call.id,
            tool=call.name,
            gate=gate,
            rule=rule,
            decision="deny",
            reason=reason,
        )

    def _shown(self, text: str) -> str:
        try:
            return self.ctx.redactor.redact(text, "event")
        except Exception:  # noqa: BLE001 - a failing redactor hides, never shows
            return "[hidden: redaction failed]"

    def _registry(self) -> Registry:
        from charter.runtime.run.agents import agent_tools
        from charter.runtime.run.people import people_tools

        own = list(agent_tools(self.world, self, IMPLEMENTATIONS))
        if self.ctx.prompter is not None:
            own += people_tools(self.ctx.prompter, self.ctx.run_dir / "scratch").registrations()
        return IMPLEMENTATIONS.overlay(own)

    def deliver(self, message: str, region: str | None) -> None:
        """A message from the parent agent, read before this agent's next turn."""
        with self._inbox_lock:
            self.inbox.append((region, message))

    def _drain_inbox(self) -> None:
        from charter.runtime.tools.context import ContextEntry

        with self._inbox_lock:
            pending, self.inbox = self.inbox, []
        for region, text in pending:
            if region is None:
                self.messages.append(Message.user(f"[message from the parent agent] {text}"))
            else:
                with self.rt.store.lock:
                    self.rt.store.regions.setdefault(region, []).append(ContextEntry(text))

    @property
    def stage(self) -> Stage:
        return self.session.stage.stage

    def _output_spec(self, stage: Stage) -> OutputSpec | None:
        """The answer shape this agent is held to in ``stage``: the stage's
        own, or the one its parent asked for. A parent's request also applies
        to a stage whose answer is the reply text, though it declares none."""
        asked = self.output_override
        if _is_output_stage(stage):
            base = stage.output or OutputSpec()
        elif asked is not None and _ends_with_text(stage):
            base = OutputSpec()
        else:
            return stage.output
        return base if asked is None else _overridden(base, asked)

    def _system_prompt(self, stage: Stage) -> str:
        agent = self.session.agent.agent
        who = f"You are the agent '{agent.name}'"
        if self.parent is not None:
            who += f", a sub-agent started by agent {self.parent}; nobody is watching this run"
        parts = [who + ".", f"You are in stage '{stage.name}' ({stage.mode})."]
        if stage.system_prompt:
            parts.append(stage.system_prompt.strip())
        if stage.shell_hint:
            parts.append(stage.shell_hint.strip())
        spec = self._output_spec(stage)
        if _is_output_stage(stage):
            parts.append("This stage ends the run: give the final answer with submit_output.")
        elif spec is not None and _ends_with_text(stage):
            parts.append("Your final answer is the text of your reply when you stop calling tools.")
        if spec is not None and (_is_output_stage(stage) or _ends_with_text(stage)):
            if spec.format:
                parts.append(f"Answer format: {spec.format}.")
            if spec.instructions:
                parts.append(f"Instructions for the answer: {spec.instructions.strip()}")
            if spec.example:
                parts.append(f"Example answer:\n{spec.example.strip()}")
        hinted = self._hinted_edges(stage)
        if hinted:
            lines = [f"- {e.target}: {e.hint}" if e.hint else f"- {e.target}" for e in hinted]
            parts.append(
                "When the work of this stage is done, choose the next stage:\n" + "\n".join(lines)
            )
        # Last, so the part that changes from turn to turn comes after the
        # part that does not (providers cache a prompt's unchanged prefix).
        memory = fold_sections(self.rt.store)
        if memory is not None:
            parts.append(memory)
        return "\n\n".join(parts)

    def _refresh_system_prompt(self) -> None:
        """Rebuild the system prompt before a turn: the context sections and
        checklists it shows change as the agent (or its parent) writes them."""
        if self.messages and self.messages[0].role == "system":
            self.messages[0] = Message.system(self._system_prompt(self.stage))

    @staticmethod
    def _hinted_edges(stage: Stage) -> list[EdgeChoice]:
        return [EdgeChoice(e.to, e.hint) for e in stage.edges if e.condition == "llm_choice"]

    def _offered_specs(self) -> list[ToolSpec]:
        offered = self.session.offered()
        order = self.stage.unattended if self.session.unattended else self.stage.attended
        tools = self.session.agent.tools
        specs: list[ToolSpec] = []
        # The plan rendered submit_output's description with the stage's
        # declared shape; a parent's override must replace it there too, or
        # the tool would ask for the very shape that was overridden.
        shape = self.rt.output if self.output_override is not None else None
        for name in order:
            entry = tools.get(name)
            if name in offered and entry is not None:
                try:
                    spec = ToolSpec.from_entry(entry)
                except ValueError:
                    # A schema that is not an object: the schema gate refuses
                    # every call (schema-unusable); the model is still told the
                    # tool takes an object, so its call gets that refusal.
                    spec = ToolSpec(entry.name, entry.description, {"type": "object"})
                if shape is not None and name == "submit_output" and entry.source == "builtin":
                    spec = dataclasses.replace(
                        spec,
                        description=_submit_description(
                            shape.format, shape.instructions, shape.example
                        ),
                    )
                specs.append(spec)
        return specs

    # -- stages ----------------------------------------------------------------

    def _enter(self, stage_name: str, *, condition: str, transform: str | None) -> None:
        previous = self.stage.name
        self.session.enter_stage(stage_name)
        stage = self.stage
        self.rt = dataclasses.replace(self.rt, output=self._output_spec(stage))
        self._contain(stage_name)
        self.visits[stage_name] = self.visits.get(stage_name, 0) + 1
        self.iteration = 0
        self.work_done = False
        self.ok_tools = set()
        self.no_progress = 0
        self.idle_turns = 0
        self.stage_started = time.monotonic()
        self.stage_calls = 0
        self.file_edits = {}
        self.last_signature = None
        self.region_marks = {
            name: _region_hash(self.rt.store, name) for name in list(self.rt.store.regions)
        }
        system = Message.system(self._system_prompt(stage))
        task = Message.user(self.task)
        kind = transform or "direct"
        if not self.messages:
            self.messages = [system, task]
        elif kind == "direct":
            self.messages[0] = system
            self.messages.append(Message.user(f"[stage] You are now in stage '{stage_name}'."))
        elif kind == "clear":
            self.messages = [system, task]
        else:
            # compact / summarize / custom: a lightweight runtime cannot ask the
            # model to summarise, so the new stage starts from the task and the
            # runtime's own record of what the previous stage did.
            digest = "\n".join(self.visit_log[-40:]) or "(no tool calls)"
            last = next(
                (m.content for m in reversed(self.messages) if m.role == "assistant" and m.content),
                None,
            )
            note = f"[stage] You are now in stage '{stage_name}'. In stage '{previous}':\n{digest}"
            if last:
                note += f"\nYour last words there: {last[:2000]}"
            self.messages = [system, task, Message.user(note)]
        self.visit_log = []
        if condition != "start":
            self.emit(
                "edge_taken", frm=previous, to=stage_name, condition=condition, transform=kind
            )
            self._audit("transition", stage=previous, to=stage_name, condition=condition)
        self.emit("stage_entered", stage=stage_name, mode=stage.mode, visit=self.visits[stage_name])

    def _gate_reasons(self, edge: Edge) -> list[str]:
        gate = edge.gate
        if gate is None:
            return []
        store = self.rt.store

        def updated(region: str) -> bool:
            return _region_hash(store, region) != self.region_marks.get(
                region, _region_hash(RunStore(), region)
            )

        if gate.region is not None and updated(gate.region):
            return []  # the alternative way through: the named section changed
        reasons: list[str] = []
        worked = self.work_done or any(t in self.ok_tools for t in gate.tools)
        if gate.require_modifications and not worked:
            reasons.append(
                "no work was done in this stage yet (a successful write, edit or submitted "
                "output; refused, failed or malformed calls do not count)"
            )
        for region in gate.require_regions:
            with store.lock:
                present = bool(store.regions.get(region))
            if not present:
                reasons.append(f"context section '{region}' is empty")
        for region in gate.require_region_updated:
            if not updated(region):
                reasons.append(f"context section '{region}' was not updated in this stage")
        for region in gate.require_no_open_items:
            left = store.open_items(region)
            if left:
                reasons.append(f"checklist '{region}' still has {len(left)} open item(s)")
        return reasons

    def _try_edge(self, index: int, condition: str) -> bool:
        """Take edge ``index`` of the current stage if its gate and the target's
        revisit limit allow; otherwise tell the model why. Returns whether the
        stage changed."""
        stage = self.stage
        edge = stage.edges[index]
        reasons = self._gate_reasons(edge)
        if reasons and edge.gate is not None:
            key = (stage.name, index)
            attempts = self.gate_attempts.get(key, 0) + 1
            self.gate_attempts[key] = attempts
            if attempts < edge.gate.max_attempts:
                why = edge.gate.message or "; ".join(reasons)
                self.emit(
                    "gate_blocked",
                    to=edge.to,
                    attempt=attempts,
                    max_attempts=edge.gate.max_attempts,
                    reason="; ".join(reasons),
                )
                self._audit(
                    "gate",
                    stage=stage.name,
                    to=edge.to,
                    decision="hold",
                    reason="; ".join(reasons),
                    attempt=attempts,
                )
                self.messages.append(
                    Message.user(
                        f"[blocked] The way to stage '{edge.to}' is held: {why} "
                        f"(attempt {attempts} of {edge.gate.max_attempts}; "
                        f"unmet: {'; '.join(reasons)})"
                    )
                )
                return False
            self.gates_forced.append(f"{stage.name}->{edge.to}")
            self.emit("gate_forced", to=edge.to, attempts=attempts, reason="; ".join(reasons))
            self._audit(
                "gate",
                stage=stage.name,
                to=edge.to,
                decision="forced",
                reason="; ".join(reasons),
                attempt=attempts,
            )
        target = self.session.agent.stages.get(edge.to)
        if target is None:
            self.messages.append(Message.user(f"[error] stage '{edge.to}' does not exist"))
            return False
        limit = target.stage.max_revisits
        if limit is not None and edge.to != stage.name and self.visits.get(edge.to, 0) > limit:
            self.emit(
                "notice", message=f"stage '{edge.to}' was revisited {limit} times (max_revisits)"
            )
            self.messages.append(
                Message.user(
                    f"[blocked] Stage '{edge.to}' may not be entered again: it was already "
                    f"revisited {limit} time(s). Choose another way."
                )
            )
            return False
        self._enter(edge.to, condition=condition, transform=edge.transform)
        return True

    def _edge_index(self, condition: str) -> int | None:
        for n, edge in enumerate(self.stage.edges):
            if edge.condition == condition:
                return n
        return None

    # -- one tool call -----------------------------------------------------------

    async def _call(self, call: ModelToolCall) -> ToolResult:
        t0 = time.perf_counter()
        # Events are read by people and files outside the model's view: the
        # model's text passes the same redactor as every other event field.
        args_text = self._shown(call.raw_arguments[:400])
        self.emit("tool_started", tool=call.name, call_id=call.id, args=args_text)
        decision = "deny"
        gate: str | None = None
        rule: str | None = "malformed-arguments"
        if call.error is not None or call.arguments is None:
            result = refusal(
                "invalid",
                "schema",
                "malformed-arguments",
                f"the call to '{call.name}' was not run: {call.error or 'no arguments'}",
            )
            gate = "schema"
            self._audit_refusal(call, "schema", "malformed-arguments", call.error)
        else:
            tool_call = ToolCall(call.name, call.arguments, call.id)
            outcome = decide(self.session, tool_call)
            decision, gate, rule = outcome.decision, outcome.gate, outcome.rule
            meter = Meter(self.ctx.redactor)
            session, registry = self.session, self.registry
            approvals = _Announced(self.ctx.approvals, self, call, meter)
            rt, audit = dataclasses.replace(self.rt, progress=meter.feed), self.ctx.audit

            def run() -> ToolResult:
                return execute(session, tool_call, registry, approvals, audit, runtime=rt)

            guarded = self._guard_records(outcome.entry, call.arguments)
            if guarded is not None and outcome.decision != "deny":
                result, decision, gate, rule = guarded, "deny", "dispatch", "run-records"
                self._audit_refusal(call, "dispatch", "run-records", guarded.content)
            else:
                result = await self._run_tool(run, call, meter)
            if decision == "ask":
                decision = (
                    "ask→allowed" if result.gate not in ("approval", "dataflow") else "ask→denied"
                )
        duration = round((time.perf_counter() - t0) * 1000)
        self.calls += 1
        self.stage_calls += 1
        canonical = call.name
        if call.arguments is not None:
            name = self.session.agent.resolve_name(call.name, self.session.offered())
            canonical = name or call.name
        if result.ok and not result.content.startswith(_REFUSED):
            self.ok_tools.add(canonical)
            if result.data.get("counts_as_work"):
                self.work_done = True
                path = (call.arguments or {}).get("path")
                if isinstance(path, str):
                    self.file_edits[path] = self.file_edits.get(path, 0) + 1
        self.visit_log.append(f"- {canonical}: {result.status}")
        self.emit(
            "tool_finished",
            tool=call.name,
            call_id=call.id,
            decision=decision,
            gate=gate if not result.ok else None,
            rule=rule,
            status=result.status,
            duration_ms=duration,
            args=args_text,
            result=(result.display or result.content)[:2000],
        )
        return result

    async def _run_tool(
        self, run: Callable[[], ToolResult], call: ModelToolCall, meter: Meter
    ) -> ToolResult:
        """The call in a worker thread, with a progress event about once a
        second while it runs. Not abandoned when the run is cancelled: the
        call is stopped through the runtime's cancel event (a shell kills its
        process tree) and waited for, so nothing outlives the run; but only
        until the interrupt deadline, so that a tool that ignores the cancel
        event cannot hold the run open."""
        started = time.perf_counter()
        done = False
        ok, result = False, None

        async def tick() -> None:
            while not done:
                await anyio.sleep(_PROGRESS_EVERY_S)
                if done or meter.waiting:
                    continue
                snap = meter.snapshot()
                self.emit(
                    "tool_progress",
                    tool=call.name,
                    call_id=call.id,
                    elapsed_s=round(time.perf_counter() - started, 1),
                    output_bytes=snap.output_bytes,
                    output_lines=snap.output_lines,
                    last_line=snap.last_line,
                )

        with anyio.CancelScope(shield=True) as scope:
            self.ctx.guard(scope)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tick)
                    result = await anyio.to_thread.run_sync(
                        run, abandon_on_cancel=True, limiter=self.ctx.limiter
                    )
                    ok = True
                    done = True
                    tg.cancel_scope.cancel()
            finally:
                done = True
                self.ctx.unguard(scope)
        if ok and isinstance(result, ToolResult):
            return result
        return refusal(
            "error",
            "dispatch",
            "run-interrupted",
            f"the call to '{call.name}' was abandoned: the run was interrupted and the tool "
            "did not stop in time",
        )

    def _guard_records(
        self, entry: ToolEntry | None, args: Mapping[str, Any]
    ) -> ToolResult | None:
        """The run's own records (``.charter/`` in the workspace: plans, audit
        logs, events) are not the agent's to overwrite with file tools."""
        from charter.runtime.tools.paths import path_args

        records = (self.ctx.workspace / ".charter").resolve()
        for _arg, value, op in path_args(entry, args):
            if op != "write":
                continue
            try:
                target = (self.ctx.workspace / value).resolve()
            except (OSError, ValueError):
                continue  # confinement reports what cannot be resolved
            if target == records or records in target.parents:
                return refusal(
                    "denied",
                    "dispatch",
                    "run-records",
                    f"'{value}' is inside .charter/, where Charter keeps the run's plan and "
                    "audit log; the agent may not write there",
                )
        return None

    # -- the loop ------------------------------------------------------------------

    def _result(self, status: Status, reason: str, output: str | None = None) -> AgentResult:
        spec = self.rt.output
        return AgentResult(
            agent_id=self.id,
            agent_name=self.name,
            status=status,
            reason=reason,
            output=output,
            output_format=spec.format if spec is not None else None,
            turns=self.turns,
            tool_calls=self.calls,
            gates_forced=tuple(self.gates_forced),
        )

    def partial(self, status: Status, reason: str) -> AgentResult:
        """What this agent has to show when it is stopped from outside."""
        with self.rt.store.lock:
            output = self.rt.store.output
        return self._result(status, reason, output if status == "completed" else None)

    async def run(self) -> AgentResult:
        try:
            result = await self._loop()
        finally:
            # A finished agent leaves nothing behind: its sub-agents stop too,
            # and so do the background tasks it started.
            self.world.kill_children(self.id, reason=f"agent {self.id} finished")
            store = self.rt.store
            await self.ctx.in_thread(lambda: cancel_tasks(store))
            if self.parent is None and self.ctx.mcp is not None:
                # The root ends the run: every MCP server it started stops.
                await self.ctx.in_thread(self.ctx.mcp.close)
        self.emit("agent_finished", **result.to_json())
        return result

    async def _attach_mcp(self) -> None:
        """Bring the agent's MCP servers up to date before a turn: connect
        (asking first, as the plan says) and offer what they list; retry a
        failed server once its negative cache expires; ask again about a
        refused one. Only servers whose outcome this call decided are shown,
        so a healthy server is not announced again every turn."""
        if not self.session.agent.agent.mcp_servers and self.session.mcp is None:
            return
        runtime = self.ctx.mcp_runtime()
        session, approvals = self.session, self.ctx.approvals
        await self.ctx.in_thread(lambda: runtime.attach(session, approvals))
        binding = self.session.mcp
        decided = binding.decided if binding is not None else ()
        for r in decided:
            self.emit(
                "mcp_server",
                server=r.server,
                status=r.status,
                rule=r.rule,
                offered=[t.name for t in r.offered],
                changed=[c.name for c in r.changed],
                new=list(r.new),
                missing=list(r.missing),
                collisions=list(r.collisions),
            )
            for line in r.lines():
                self.emit("notice", message=f"MCP {line}")

    async def _loop(self) -> AgentResult:
        agent = self.session.agent.agent
        self.visits[self.stage.name] = 0
        self._enter(self.stage.name, condition="start", transform=None)
        while True:
            if self.stopped is not None:
                return self.partial(*self.stopped)
            if self.ctx.cancel.is_set() or self.cancel.is_set():
                return self.partial("cancelled", "the run was stopped")
            stage = self.stage
            limit = stage.max_iterations or agent.limits.default_max_iterations
            if self.iteration >= limit:
                index = self._edge_index("max_iterations")
                if index is not None:
                    self._enter(
                        stage.edges[index].to,
                        condition="max_iterations",
                        transform=stage.edges[index].transform,
                    )
                    continue
                return self._result(
                    "no_output",
                    f"stage '{stage.name}' used all {limit} of its iterations without finishing",
                )
            await self._attach_mcp()
            self._drain_inbox()
            self._refresh_system_prompt()
            specs = self._offered_specs()
            edges = self._hinted_edges(stage)
            self.emit("thinking", stage=stage.name, iteration=self.iteration + 1)
            complete = functools.partial(
                self.provider.complete,
                stage=stage.name,
                messages=tuple(self.messages),
                tools=specs,
                edges=edges,
                on_retry=functools.partial(self._retrying, stage.name),
            )

            try:
                turn = await anyio.to_thread.run_sync(
                    complete, abandon_on_cancel=True, limiter=self.ctx.limiter
                )
            except (ScriptExpectationError, ScriptExhaustedError) as exc:
                # The script, not the model, is wrong: no edge can fix that.
                self.emit("model_error", message=str(exc), stage=stage.name)
                return self._result("failed", str(exc))
            except ModelError as exc:
                self.emit("model_error", message=str(exc), stage=stage.name)
                self._audit("model_error", stage=stage.name, reason=str(exc))
                index = self._edge_index("error")
                self.iteration += 1
                self.model_failures += 1
                # Error edges between stages whose model keeps failing would
                # otherwise go round for ever.
                if index is not None and self.model_failures < _MAX_MODEL_FAILURES:
                    self._enter(
                        stage.edges[index].to,
                        condition="error",
                        transform=stage.edges[index].transform,
                    )
                    continue
                return self._result("failed", f"the model failed: {exc}")
            self.iteration += 1
            self.turns += 1
            self.model_failures = 0
            self.emit(
                "model_turn",
                stage=stage.name,
                iteration=self.iteration,
                text=self._shown(turn.text) if turn.text else turn.text,
                tool_calls=[c.name for c in turn.tool_calls],
                edge=turn.edge,
            )
            self.messages.append(turn.message())
            results: list[ToolResult] = []
            for call in turn.tool_calls:
                result = await self._call(call)
                results.append(result)
                self.messages.append(Message.tool(call, result.content))
                if (
                    result.ok
                    and _is_output_stage(stage)
                    and self._canonical(call) == "submit_output"
                ):
                    # Answer the remaining calls so the history stays well formed.
                    with self.rt.store.lock:
                        output = self.rt.store.output
                    self.emit("output_submitted", stage=stage.name, chars=len(output or ""))
                    return self._result("completed", "the output was submitted", output)
            moved = await self._after_turn(turn.edge, turn.text, turn.tool_calls, results)
            if isinstance(moved, AgentResult):
                return moved

    def _retrying(self, stage: str, notice: RetryNotice) -> None:
        """The provider is about to retry a failed request (called from its
        thread): a person watching sees why nothing happens, and for how long."""
        if self.ctx.cancel.is_set():
            return  # an abandoned request of a stopped run reports nothing
        self.emit(
            "model_retry",
            stage=stage,
            attempt=notice.attempt,
            attempts=notice.attempts,
            delay_s=round(notice.delay_s, 2),
            status=notice.status,
            reason=self._shown(notice.reason),
        )

    def _canonical(self, call: ModelToolCall) -> str:
        return self.session.agent.resolve_name(call.name, self.session.offered()) or call.name

    async def _after_turn(
        self,
        edge: str | None,
        text: str | None,
        calls: Sequence[ModelToolCall],
        results: Sequence[ToolResult],
    ) -> bool | AgentResult:
        stage = self.stage
        if edge is not None:
            for n, e in enumerate(stage.edges):
                if e.condition == "llm_choice" and e.to == edge:
                    return self._try_edge(n, "llm_choice")
            self.messages.append(Message.user(f"[error] there is no edge to '{edge}' here"))
            return False
        if not calls:
            always = self._edge_index("always")
            if always is not None:
                return self._try_edge(always, "always")
            if _is_output_stage(stage):
                self.messages.append(
                    Message.user(
                        "[stage] This stage ends only when you call submit_output with the "
                        "final answer."
                    )
                )
                return False
            if stage.allow_complete or not stage.edges:
                answer = (text or "").strip()
                if not answer:
                    return self._result("no_output", "the agent stopped without an answer")
                spec = self.rt.output
                problem = (
                    None
                    if spec is None
                    else validate_output(answer, spec.format, spec.answer_schema)
                )
                if problem is not None:
                    # Held to the shape it was asked for, as submit_output is.
                    self.messages.append(
                        Message.user(
                            f"[stage] Your answer was not accepted: {problem}. "
                            "Answer again in the requested format."
                        )
                    )
                    return False
                return self._result("completed", "the agent answered", answer)
            self.idle_turns += 1
            dead_end = self._edge_index("dead_end")
            if dead_end is not None and self.idle_turns >= _DEAD_END_TURNS:
                return self._try_edge(dead_end, "dead_end")
            hinted = ", ".join(e.target for e in self._hinted_edges(stage)) or "none"
            self.messages.append(
                Message.user(
                    "[stage] Keep working with the tools, or choose the next stage "
                    f"(choose_edge; edges: {hinted})."
                )
            )
            return False
        self.idle_turns = 0
        signature = tuple((c.name, c.raw_arguments) for c in calls)
        failed = all((not r.ok) or r.content.startswith(_REFUSED) for r in results)
        if failed or signature == self.last_signature:
            self.no_progress += 1
        else:
            self.no_progress = 0
        self.last_signature = signature
        stuck = self._edge_index("stuck")
        if stuck is not None:
            why = self._stuck_reason(self.stage.edges[stuck])
            if why is not None:
                self.emit("notice", message=f"{why}: stuck")
                return self._try_edge(stuck, "stuck")
        return False

    def _stuck_reason(self, edge: Edge) -> str | None:
        """Why the stage counts as stuck, by the edge's own thresholds (any
        one reached), or by the default rule when it sets none."""
        armed = False
        if edge.stuck_after_iterations is not None:
            armed = True
            if self.no_progress >= edge.stuck_after_iterations:
                return f"no progress for {self.no_progress} turns"
        if edge.stuck_after_tool_calls is not None:
            armed = True
            if self.stage_calls >= edge.stuck_after_tool_calls:
                return f"{self.stage_calls} tool calls in this stage"
        if edge.stuck_after_minutes is not None:
            armed = True
            minutes = (time.monotonic() - self.stage_started) / 60
            if minutes >= edge.stuck_after_minutes:
                return f"{minutes:.0f} minutes in this stage"
        if edge.stuck_after_same_file_edits is not None:
            armed = True
            path, count = max(self.file_edits.items(), key=lambda kv: kv[1], default=("", 0))
            if count >= edge.stuck_after_same_file_edits:
                return f"{path} edited {count} times"
        if not armed and self.no_progress >= _STUCK_TURNS:
            return f"no progress for {self.no_progress} turns"
        return None


class _Announced:
    """The run's approval provider for one call, announcing the wait: a
    ``approval_waiting`` event before a person is asked and
    ``approval_resumed`` with the answer after, so a watcher (or a program
    reading --json) knows the run is waiting on someone, not hung."""

    def __init__(
        self, inner: ApprovalProvider, agent: AgentRun, call: ModelToolCall, meter: Meter
    ) -> None:
        self._inner = inner
        self._agent = agent
        self._call = call
        self._meter = meter

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self._meter.waiting = True
        self._agent.emit(
            "approval_waiting",
            tool=req.tool,
            call_id=self._call.id,
            stage=req.stage,
            reasons=list(req.all_reasons),
        )
        started = time.perf_counter()
        answer: ApprovalAnswer | None = None
        try:
            answer = self._inner.request(req)
            return answer
        finally:
            self._meter.waiting = False
            self._agent.emit(
                "approval_resumed",
                tool=req.tool,
                call_id=self._call.id,
                answer=answer.kind if answer is not None else "deny",
                by=answer.source if answer is not None else "error",
                waited_s=round(time.perf_counter() - started, 1),
            )
