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
    the model ended a turn with neither a tool call nor an edge choice while
    every ordinary (``always``/``llm_choice``) edge's target has spent its
    ``max_revisits``, as Leviath defines a dead end (then the ``error`` edge,
    and without either the run fails); also the escape of a model error when
    the stage has no ``error`` edge.

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

This module is the loop itself; around it, :mod:`.context` holds what a
run's agents share and what one returns, :mod:`.prompt` what the model is
told each turn, :mod:`.shape` the answer shape, :mod:`.edges` what a stage
visit counts and when its edges open, and :mod:`.calls` the mechanics of
one tool call.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from charter.runtime.gates import decide, execute
from charter.runtime.models import (
    EdgeChoice,
    Message,
    ModelError,
    ModelProvider,
    ModelRequestError,
    ModelToolCall,
    ModelTurn,
    RetryNotice,
    ScriptExhaustedError,
    ScriptExpectationError,
    ToolSpec,
)
from charter.runtime.plan import OutputSpec, Stage
from charter.runtime.policy.session import Session, open_session
from charter.runtime.results import ToolCall, ToolResult, refusal
from charter.runtime.run.calls import Announced, guard_records, run_in_worker
from charter.runtime.run.checkpoints import Checkpoints
from charter.runtime.run.context import AgentResult, AgentStatus, RunContext
from charter.runtime.run.edges import (
    REQUIRED_MESSAGE,
    REQUIRED_ROUNDS,
    StageVisit,
    gate_reasons,
    refused,
    region_hash,
    stuck_reason,
    unwritten_required,
)
from charter.runtime.run.hooks import HookFailed, HookOutcome, run_hook
from charter.runtime.run.layout import assemble, trim_conversation
from charter.runtime.run.people import people_tools
from charter.runtime.run.progress import Meter
from charter.runtime.run.prompt import hinted_edges, offered_specs, system_prompt
from charter.runtime.run.regionwork import (
    apply_transform,
    queue_compactions,
    report,
    routed,
    seed_entered_stage,
    summarize_pending,
)
from charter.runtime.run.repetition import RepetitionWatch
from charter.runtime.run.shape import is_output_stage, output_spec
from charter.runtime.run.stagemodels import candidates, falls_over
from charter.runtime.run.transforms import plan_transform
from charter.runtime.tools.context import MAX_REGIONS, ContextEntry, fold_sections, validate_output
from charter.runtime.tools.regions import layout_of
from charter.runtime.tools.registry import IMPLEMENTATIONS, Registry, RunStore, ToolRuntime
from charter.runtime.tools.tasks import cancel_tasks
from charter.runtime.tools.web import web_config_for

if TYPE_CHECKING:
    from charter.runtime.run.agents import AgentWorld

__all__ = ["AgentResult", "AgentRun", "AgentStatus", "RunContext"]

_MAX_MODEL_FAILURES = 3  # in a row, across error edges


def _skills_root(agent: Any, project_root: Path | None, workspace: Path) -> Path | None:
    """Where the core's skills live: the plan names the folder relative to the
    project, which a run from a project directory knows; a run from a plan
    file reads it relative to the workspace."""
    rel: str | None = getattr(agent, "skills_root", None)
    if rel is None:
        return None
    return (project_root or workspace) / rel


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
        start_stage: str | None = None,
        inputs: Mapping[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.world = world
        self.id = agent_id
        self.name = agent_name
        self.task = task
        # what caller-seeded regions are filled from: the task and --input values
        self.inputs = {"task": task, **(inputs or {})}
        self.seeded: set[str] = set()  # regions seeded so far in this run
        self.seeding = False  # the stage just entered has seeds to run
        # what a compact edge left for the model to summarize:
        # (region or "conversation", its text, compact_prompt, the fallback note)
        self.pending_summaries: list[tuple[str, str, str | None, str | None]] = []
        self.depth_budget = depth_budget
        self.parent = parent
        self.provider = provider
        self.output_override = output_override
        self.session: Session = open_session(
            ctx.prepared,
            agent_name,
            workspace=ctx.workspace,
            stage=start_stage,
            unattended=unattended,
            yolo=ctx.yolo,
            allow=ctx.allow,
            run_id=ctx.run_id,
            narrow=narrow,
        )
        agent = self.session.agent.agent
        self.cancel = threading.Event()
        self.points: Checkpoints | None = None  # this visit's interaction points
        policy = self.session.agent.agent.repetition
        self.repetition = RepetitionWatch(policy) if policy is not None else None
        self.last_text = ""  # the stage's latest answer, which a checkpoint shows
        # Why this agent was stopped from outside (kill_agent), if it was.
        self.stopped: tuple[AgentStatus, str] | None = None
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
            earlier_sessions=self._earlier_sessions if ctx.session is not None else None,
        )
        self._contain(self.session.stage_name)
        self.inbox: list[tuple[str | None, str]] = []
        self._inbox_lock = threading.Lock()
        self.registry = self._registry()
        self.messages: list[Message] = []
        self.turns = 0
        self.calls = 0
        self.gates_forced: list[str] = []
        self.visits: dict[str, int] = {}
        self.gate_attempts: dict[tuple[str, int], int] = {}
        self.model_failures = 0
        self.model_at: dict[str, int] = {}  # each stage's place in its model list
        self.last_model: str | None = None  # the stage model the last turn ran on
        # What the current visit of a stage counts (a new one on each entry).
        self.visit = StageVisit()

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

        own = list(agent_tools(self.world, self, IMPLEMENTATIONS))
        if self.ctx.prompter is not None:
            own += people_tools(self.ctx.prompter, self.ctx.run_dir / "scratch").registrations()
        return IMPLEMENTATIONS.overlay(own)

    def deliver(self, message: str, region: str | None) -> None:
        """A message from the parent agent, read before this agent's next turn."""
        with self._inbox_lock:
            self.inbox.append((region, message))

    def _drain_inbox(self) -> None:
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
        return output_spec(stage, self.output_override)

    def _system_prompt(self, stage: Stage) -> str:
        if stage.regions:
            laid = assemble(self.rt.store, stage)
            memory, inside = laid.text, laid.holds_instructions
        else:
            memory, inside = fold_sections(self.rt.store), False
        return system_prompt(
            self.session.agent.agent.name,
            self.parent,
            stage,
            self._output_spec(stage),
            memory,
            self.session.agent.agent.soul,
            instructions_in_memory=inside,
        )

    def refresh_system_prompt(self) -> None:
        """Rebuild the system prompt before a turn: the context sections and
        checklists it shows change as the agent (or its parent) writes them."""
        if self.messages and self.messages[0].role == "system":
            self.messages[0] = Message.system(self._system_prompt(self.stage))

    def _offered_specs(self) -> list[ToolSpec]:
        # submit_output shows the shape a parent asked for, if it asked
        return offered_specs(
            self.session, self.rt.output if self.output_override is not None else None
        )

    # -- stages ----------------------------------------------------------------

    def _enter(self, stage_name: str, *, condition: str, transform: str | None) -> None:
        previous = self.stage.name
        if condition != "start":
            try:
                self._region_hook("on_stage_exit")
            except HookFailed as exc:
                self.stopped = ("failed", str(exc))
                return
        self.session.enter_stage(stage_name)
        stage = self.stage
        with self.rt.store.lock:
            self.rt.store.layout = layout_of(stage.regions)
        self.seeding = True  # seeds run before the stage's first turn
        self.rt = dataclasses.replace(self.rt, output=self._output_spec(stage))
        self._contain(stage_name)
        self.visits[stage_name] = self.visits.get(stage_name, 0) + 1
        self.points = None  # a new visit asks its points afresh
        self.last_text = ""
        # what the stage left behind: the last visit's log, for the transform
        log = self.visit.log
        self.visit = StageVisit(
            region_marks={
                name: region_hash(self.rt.store, name) for name in list(self.rt.store.regions)
            }
        )
        system = Message.system(self._system_prompt(stage))
        task = Message.user(self.task)
        kind = transform or "direct"
        if not self.messages:
            self.messages = [system, task]
        else:
            left = self.session.agent.agent.stage(previous)
            edge = next(
                (
                    e
                    for e in (left.edges if left else ())
                    if e.to == stage_name and e.transform == transform
                ),
                None,
            )
            how = plan_transform(edge, kind, left.regions if left else (), self.rt.store)
            apply_transform(self, how, previous, stage_name, log, system, task)
        if condition != "start":
            self.emit(
                "edge_taken", frm=previous, to=stage_name, condition=condition, transform=kind
            )
            self._audit("transition", stage=previous, to=stage_name, condition=condition)
        self.emit("stage_entered", stage=stage_name, mode=stage.mode, visit=self.visits[stage_name])
        try:
            self._region_hook("on_stage_enter")
        except HookFailed as exc:
            self.stopped = ("failed", str(exc))

    def _hook(self, name: str, ctx: dict[str, Any]) -> HookOutcome | None:
        """Run the current stage's ``name`` hook (see :mod:`.hooks`); raises
        HookFailed when it refuses or fails."""
        stage = self.stage
        if not stage.hooks:
            return None

        index = next(
            (i for i, s in enumerate(self.session.agent.agent.stages) if s.name == stage.name), 0
        )
        try:
            outcome = run_hook(stage, name, {"stage": stage.name, "stage_index": index, **ctx})
        except Exception as exc:
            self.emit("hook", stage=stage.name, hook=name, action="refused", reason=str(exc))
            self._audit("hook", stage=stage.name, hook=name, action="refused", reason=str(exc))
            raise
        if outcome is not None:
            self.emit("hook", stage=stage.name, hook=name, action=outcome.action)
            self._audit("hook", stage=stage.name, hook=name, action=outcome.action)
        return outcome

    def _regions_ctx(self) -> dict[str, Any]:
        with self.rt.store.lock:
            return {
                "regions": {
                    name: "\n".join(e.content for e in entries)
                    for name, entries in self.rt.store.regions.items()
                }
            }

    def _region_hook(self, name: str) -> None:
        """A hook that sees the regions and may replace their contents."""
        outcome = self._hook(name, self._regions_ctx())
        if outcome is None or outcome.action != "modify":
            return
        value = outcome.value
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise HookFailed(f"{name}: 'value' must be a map of region name to text")
        with self.rt.store.lock:
            regions = self.rt.store.regions
            if len(set(regions) | set(value)) > MAX_REGIONS:
                raise HookFailed(f"{name}: at most {MAX_REGIONS} context sections per run")
            for region, text in value.items():
                # Replaced, not appended: the hook saw the whole text.
                regions[region] = [ContextEntry(text)] if text else []

    def _nudged(self, stage: Stage) -> bool:
        """Leviath's nudge: a stage about to end on text with no tool call made
        in it is told to use its tools instead, at most ``max`` times."""
        nudge = stage.nudge
        visit = self.visit
        if nudge is None or not nudge.enabled or visit.calls or visit.nudges >= nudge.max:
            return False
        visit.nudges += 1
        regions = ", ".join(r.name for r in stage.required_regions)
        text = nudge.text.replace("{stage}", stage.name).replace("{regions}", regions)
        self.messages.append(Message.user(f"[System] {text}"))
        self.emit("nudged", stage=stage.name, count=visit.nudges)
        return True

    async def _before_leaving(self) -> bool | AgentResult | None:
        """What must happen before the stage may move on: a stage that
        requires its children waits for every sub-agent it started to end
        (as Leviath holds it), then its interaction points are asked."""
        if self.stage.requires_children:
            waited = False
            while any(
                not c.done.is_set()
                for c in list(self.world.children.values())
                if c.parent == self.id
            ):
                if not waited:
                    self.emit("waiting_for_children", stage=self.stage.name)
                    waited = True
                if self.ctx.cancel.is_set() or self.cancel.is_set():
                    return self.partial("cancelled", "the run was stopped")
                await anyio.sleep(0.05)
        unmet = (
            unwritten_required(self.stage, self.session.offered(), self.rt.store)
            if self.stage.required_regions
            else []
        )
        if unmet:
            cap = self.stage.max_revisits or REQUIRED_ROUNDS
            if self.visit.required_rounds < cap:
                # As Leviath: the stage goes on, told what it still owes.
                self.visit.required_rounds += 1
                for region in unmet:
                    text = region.message or REQUIRED_MESSAGE
                    self.messages.append(
                        Message.user("[System] " + text.replace("{region}", region.name))
                    )
                self.emit("required_regions", stage=self.stage.name, empty=[r.name for r in unmet])
                return False
            self.emit(
                "notice",
                message=f"required sections still empty after {cap} re-runs: "
                + ", ".join(r.name for r in unmet)
                + "; moving on",
            )
        return self._checkpoints()

    def _checkpoints(self) -> bool | AgentResult | None:
        """The stage's interaction points before it moves on (see
        :mod:`.checkpoints`): None when it may go, False to stay, or the
        run's end."""
        points = self.stage.interaction_points
        if not points:
            return None
        if self.points is None:  # (entering a stage clears it)
            person = None if self.session.unattended else self.ctx.prompter
            self.points = Checkpoints(
                points,
                person,
                self.ctx.run_dir / "scratch",
                self.rt.store,
                lambda line: self.messages.append(Message.user(line)),
                self.emit,
            )
        step = self.points.before_leaving(self.last_text)
        if step == "go":
            return None
        if step == "stay":
            return False
        self._audit("checkpoint", stage=self.stage.name, status=step[0], reason=step[1])
        return self.finish(*step)

    def _try_edge(self, index: int, condition: str) -> bool:
        """Take edge ``index`` of the current stage if its gate and the target's
        revisit limit allow; otherwise tell the model why. Returns whether the
        stage changed."""
        stage = self.stage
        edge = stage.edges[index]
        reasons = [] if edge.gate is None else gate_reasons(edge.gate, self.visit, self.rt.store)
        if reasons and edge.gate is not None:
            unmet = "; ".join(reasons)
            key = (stage.name, index)
            attempts = self.gate_attempts.get(key, 0) + 1
            self.gate_attempts[key] = attempts
            held = attempts < edge.gate.max_attempts
            self._audit(
                "gate",
                stage=stage.name,
                to=edge.to,
                decision="hold" if held else "forced",
                reason=unmet,
                attempt=attempts,
            )
            if held:
                why = edge.gate.message or unmet
                self.emit(
                    "gate_blocked",
                    to=edge.to,
                    attempt=attempts,
                    max_attempts=edge.gate.max_attempts,
                    reason=unmet,
                )
                self.messages.append(
                    Message.user(
                        f"[blocked] The way to stage '{edge.to}' is held: {why} "
                        f"(attempt {attempts} of {edge.gate.max_attempts}; unmet: {unmet})"
                    )
                )
                return False
            self.gates_forced.append(f"{stage.name}->{edge.to}")
            self.emit("gate_forced", to=edge.to, attempts=attempts, reason=unmet)
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

    def _spent(self, target: str) -> bool:
        """Whether ``target`` has used up its ``max_revisits`` (the test the
        edges themselves apply; the current stage never counts as spent)."""
        found = self.session.agent.stages.get(target)
        if found is None:
            return True
        limit = found.stage.max_revisits
        return (
            limit is not None and target != self.stage.name and self.visits.get(target, 0) > limit
        )

    def _dead_end(self) -> bool | AgentResult:
        """Every ordinary edge's target has spent its revisits, as Leviath
        defines a dead end: down the ``dead_end`` edge, else the ``error``
        edge, else the run fails (it must not read as a success)."""
        stage = self.stage
        message = (
            f"stage '{stage.name}' dead-ended: every declared transition's target has spent its "
            "max_revisits budget before an output or terminal stage was reached"
        )
        self.emit("notice", message=message)
        for condition in ("dead_end", "error"):
            index = self._edge_index(condition)
            if index is not None and not self._spent(stage.edges[index].to):
                self._enter(
                    stage.edges[index].to,
                    condition=condition,
                    transform=stage.edges[index].transform,
                )
                return True
        return self.finish("failed", message)

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
            approvals = Announced(self.ctx.approvals, self.emit, call, meter)
            rt, audit = dataclasses.replace(self.rt, progress=meter.feed), self.ctx.audit

            def run() -> ToolResult:
                return execute(session, tool_call, registry, approvals, audit, runtime=rt)

            guarded = guard_records(self.ctx.workspace, outcome.entry, call.arguments)
            if guarded is not None and outcome.decision != "deny":
                result, decision, gate, rule = guarded, "deny", "dispatch", "run-records"
                self._audit_refusal(call, "dispatch", "run-records", guarded.content)
            else:
                result = await run_in_worker(self.ctx, self.emit, run, call, meter)
            if decision == "ask":
                decision = (
                    "ask→allowed" if result.gate not in ("approval", "dataflow") else "ask→denied"
                )
        duration = round((time.perf_counter() - t0) * 1000)
        self.calls += 1
        self.visit.calls += 1
        canonical = call.name
        if call.arguments is not None:
            name = self.session.agent.resolve_name(call.name, self.session.offered())
            canonical = name or call.name
        visit = self.visit
        if not refused(result):
            visit.ok_tools.add(canonical)
            if result.data.get("counts_as_work"):
                visit.work_done = True
                path = (call.arguments or {}).get("path")
                if isinstance(path, str):
                    visit.file_edits[path] = visit.file_edits.get(path, 0) + 1
        visit.log.append(f"- {canonical}: {result.status}")
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

    # -- the loop ------------------------------------------------------------------

    def finish(self, status: AgentStatus, reason: str, output: str | None = None) -> AgentResult:
        """The agent's result, after the stage's terminal hook (on_completion
        for a completed run, on_error for a failed one; a cancelled run fires
        neither, as in Leviath)."""
        if status in ("completed", "failed") and self.stage.hooks:
            name = "on_completion" if status == "completed" else "on_error"
            subject = (output or "") if status == "completed" else reason
            try:
                outcome = self._hook(
                    name,
                    {
                        "status": status,
                        "output": subject if status == "completed" else "",
                        "error": subject if status == "failed" else "",
                    },
                )
            except HookFailed as exc:
                return self._finished("failed", str(exc), None)
            if outcome is not None and outcome.action == "modify":
                if not isinstance(outcome.value, str):
                    return self._finished(
                        "failed", f"{name}: 'value' must be replacement text", None
                    )
                if status == "completed":
                    if output is None:
                        return self._finished(
                            "failed",
                            f"{name}: asked to rewrite the answer, but this run submitted none",
                            None,
                        )
                    output = outcome.value
                else:
                    reason = outcome.value
        return self._finished(status, reason, output)

    def _finished(self, status: AgentStatus, reason: str, output: str | None) -> AgentResult:
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

    def partial(self, status: AgentStatus, reason: str) -> AgentResult:
        """What this agent has to show when it is stopped from outside."""
        with self.rt.store.lock:
            output = self.rt.store.output
        return self.finish(status, reason, output if status == "completed" else None)

    def _earlier_sessions(self, query: str | None, limit: int) -> list[tuple[str, int, str, str]]:
        """This agent's other stored sessions, for session_search."""
        book = self.ctx.session
        if book is None:
            return []
        hits = book.store.search(self.session.agent.agent.name, query, limit + 200)
        return [h for h in hits if h[0] != book.name][:limit]

    def _record_session(self) -> None:
        book = self.ctx.session if self.parent is None else None
        if book is None:
            return
        try:
            book.record(self.messages)
        except Exception as exc:  # noqa: BLE001 - a full disk must not end the run
            # The run goes on; what could not be kept is said, not hidden.
            self.emit("notice", message=f"session '{book.name}' not saved: {exc}")

    async def run(self) -> AgentResult:
        try:
            result = await self._loop()
        finally:
            self._record_session()
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
        book = self.ctx.session if self.parent is None else None
        if book is not None and book.history:
            # Resumed: the earlier conversation after today's system prompt,
            # then this run's task as the next thing the person says.
            earlier = [m for m in book.history if m.role != "system"]
            self.messages = [self.messages[0], *earlier, Message.user(self.task)]
            self.emit("session_resumed", session=book.name, messages=len(earlier))
        while True:
            if self.stopped is not None:
                return self.partial(*self.stopped)
            if self.ctx.cancel.is_set() or self.cancel.is_set():
                return self.partial("cancelled", "the run was stopped")
            stage = self.stage
            limit = stage.max_iterations or agent.limits.default_max_iterations
            if self.visit.iteration >= limit:
                index = self._edge_index("max_iterations")
                if index is not None:
                    report(
                        self,
                        "error_report",
                        f"[Iteration cap in stage '{stage.name}'] the stage used all {limit} "
                        "of its iterations and was cut off before it finished.",
                    )
                    self._enter(
                        stage.edges[index].to,
                        condition="max_iterations",
                        transform=stage.edges[index].transform,
                    )
                    continue
                return self.finish(
                    "no_output",
                    f"stage '{stage.name}' used all {limit} of its iterations without finishing",
                )
            await self._attach_mcp()
            queue_compactions(self)
            if self.pending_summaries:
                await summarize_pending(self)
            if self.seeding:
                failed = await seed_entered_stage(self)
                if failed is not None:
                    return failed
            self._drain_inbox()
            try:
                self._region_hook("before_inference")
            except HookFailed as exc:
                return self.finish("failed", str(exc))
            self.refresh_system_prompt()
            self.messages, dropped = trim_conversation(self.messages, stage)
            if dropped:
                self.emit("conversation_trimmed", stage=stage.name, messages=dropped)
            specs = self._offered_specs()
            edges = hinted_edges(stage)
            self.emit("thinking", stage=stage.name, iteration=self.visit.iteration + 1)
            try:
                turn = await self._complete(stage, specs, edges)
            except (ScriptExpectationError, ScriptExhaustedError) as exc:
                # The script, not the model, is wrong: no edge can fix that.
                self.emit("model_error", message=str(exc), stage=stage.name)
                return self.finish("failed", str(exc))
            except ModelError as exc:
                self.emit("model_error", message=str(exc), stage=stage.name)
                self._audit("model_error", stage=stage.name, reason=str(exc))
                # As in Leviath: the error edge, else the dead_end escape.
                index = self._edge_index("error")
                if index is None:
                    index = self._edge_index("dead_end")
                self.visit.iteration += 1
                self.model_failures += 1
                # Error edges between stages whose model keeps failing would
                # otherwise go round for ever.
                if index is not None and self.model_failures < _MAX_MODEL_FAILURES:
                    report(
                        self,
                        "error_report",
                        f"[Inference error in stage '{stage.name}'] {exc}. Diagnose this "
                        "failure from the error text before retrying or working around it.",
                    )
                    self._enter(
                        stage.edges[index].to,
                        condition=stage.edges[index].condition,
                        transform=stage.edges[index].transform,
                    )
                    continue
                return self.finish("failed", f"the model failed: {exc}")
            self.visit.iteration += 1
            self.turns += 1
            self.model_failures = 0
            try:
                turn = self._turn_hooks(turn)
            except HookFailed as exc:
                return self.finish("failed", str(exc))
            self.emit(
                "model_turn",
                stage=stage.name,
                iteration=self.visit.iteration,
                text=self._shown(turn.text) if turn.text else turn.text,
                tool_calls=[c.name for c in turn.tool_calls],
                edge=turn.edge,
                **({"model": self.last_model} if self.last_model is not None else {}),
            )
            self.messages.append(turn.message())
            results: list[ToolResult] = []
            for call in turn.tool_calls:
                result = await self._call(call)
                results.append(result)
                self.messages.append(Message.tool(call, routed(self, call, result)))
                if result.ok and is_output_stage(stage) and self.canonical(call) == "submit_output":
                    # Answer the remaining calls so the history stays well formed.
                    with self.rt.store.lock:
                        output = self.rt.store.output
                    self.emit("output_submitted", stage=stage.name, chars=len(output or ""))
                    return self.finish("completed", "the output was submitted", output)
            if self.repetition is not None:
                for call in turn.tool_calls:
                    nudge = self.repetition.record(self.canonical(call), call.arguments)
                    if nudge is not None:
                        self.messages.append(Message.user(f"[System] {nudge}"))
            moved = await self._after_turn(turn.edge, turn.text, turn.tool_calls, results)
            self._record_session()
            if isinstance(moved, AgentResult):
                return moved

    async def _complete(
        self, stage: Stage, specs: list[ToolSpec], edges: list[EdgeChoice]
    ) -> ModelTurn:
        """One model turn, on the stage's own model when the run serves its
        provider (see :mod:`charter.runtime.run.stagemodels`), moving along
        the stage's list when the model in use stops being usable."""
        models = candidates(stage, self.ctx.stage_providers)
        while True:
            at = self.model_at.get(stage.name, 0)
            model = models[at] if at < len(models) else None
            complete = functools.partial(
                self.provider.complete,
                stage=stage.name,
                messages=tuple(self.messages),
                tools=specs,
                edges=edges,
                on_retry=functools.partial(self._retrying, stage.name),
                model=model,
            )
            try:
                turn = await anyio.to_thread.run_sync(
                    complete, abandon_on_cancel=True, limiter=self.ctx.limiter
                )
            except ModelRequestError as exc:
                if model is None or not falls_over(exc):
                    raise
                self.model_at[stage.name] = at + 1
                after = models[at + 1] if at + 1 < len(models) else "the run's own model"
                self.emit(
                    "model_fallback", stage=stage.name, model=model, to=after, reason=str(exc)
                )
                continue
            self.last_model = model
            return turn

    def _turn_hooks(self, turn: ModelTurn) -> ModelTurn:
        """after_inference (may replace the text) and on_tool_call (may veto
        or replace the calls, which then meet every gate)."""
        if not self.stage.hooks:
            return turn
        outcome = self._hook(
            "after_inference",
            {
                "response": turn.text or "",
                "tokens_used": (turn.usage.prompt_tokens or 0)
                + (turn.usage.completion_tokens or 0),
                "tool_calls": [c.name for c in turn.tool_calls],
            },
        )
        if outcome is not None and outcome.action == "modify":
            if not isinstance(outcome.value, str):
                raise HookFailed("after_inference: 'value' must be the replacement response text")
            turn = dataclasses.replace(turn, text=outcome.value)
        if not turn.tool_calls:
            return turn
        outcome = self._hook(
            "on_tool_call",
            {
                "tool_calls": [
                    {"name": c.name, "arguments": c.arguments if c.arguments is not None else {}}
                    for c in turn.tool_calls
                ]
            },
        )
        if outcome is None or outcome.action != "modify":
            return turn
        items = outcome.value
        if not isinstance(items, list):
            raise HookFailed("on_tool_call: 'value' must be an array of #{ name, arguments }")
        calls = []
        for i, item in enumerate(items):
            name = item.get("name") if isinstance(item, dict) else None
            args = item.get("arguments", {}) if isinstance(item, dict) else None
            if not isinstance(name, str) or not isinstance(args, dict):
                raise HookFailed(f"on_tool_call: replacement call {i} needs a name and arguments")
            # A fresh id: the hook proposes a call, it does not edit the model's.
            raw = json.dumps(args, sort_keys=True)
            calls.append(ModelToolCall(f"hook-{name}-{i}", name, args, raw))
        return dataclasses.replace(turn, tool_calls=tuple(calls))

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

    def canonical(self, call: ModelToolCall) -> str:
        return self.session.agent.resolve_name(call.name, self.session.offered()) or call.name

    async def _after_turn(
        self,
        edge: str | None,
        text: str | None,
        calls: Sequence[ModelToolCall],
        results: Sequence[ToolResult],
    ) -> bool | AgentResult:
        stage = self.stage
        if text and text.strip():
            self.last_text = text
        if edge is not None:
            for n, e in enumerate(stage.edges):
                if e.condition == "llm_choice" and e.to == edge:
                    held = await self._before_leaving()
                    return held if held is not None else self._try_edge(n, "llm_choice")
            self.messages.append(Message.user(f"[error] there is no edge to '{edge}' here"))
            return False
        if not calls and edge is None and self._nudged(stage):
            return False
        if not calls and stage.fan_out is not None:
            # (its edge to the merge stage is for after the workers report)
            self.messages.append(
                Message.user(
                    "[stage] This stage hands its work out: call fan_out with the items, an "
                    "empty list if there is nothing to hand out."
                )
            )
            return False
        if not calls:
            always = self._edge_index("always")
            if always is not None:
                held = await self._before_leaving()
                return held if held is not None else self._try_edge(always, "always")
            if is_output_stage(stage):
                self.messages.append(
                    Message.user(
                        "[stage] This stage ends only when you call submit_output with the "
                        "final answer."
                    )
                )
                return False
            if stage.allow_complete or not stage.edges:
                with self.rt.store.lock:
                    submitted = self.rt.store.output
                if submitted is not None:
                    # What the agent submitted is its answer; a closing remark
                    # after it must not replace it (a fan-out worker's rows).
                    held = await self._before_leaving()
                    if held is not None:
                        return held
                    return self.finish("completed", "the agent submitted its output", submitted)
                answer = (text or "").strip()
                if not answer:
                    return self.finish("no_output", "the agent stopped without an answer")
                spec = self.rt.output
                problem = (
                    None
                    if spec is None
                    else validate_output(answer, spec.format, spec.answer_schema, spec.validator)
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
                held = await self._before_leaving()
                if held is not None:
                    return held
                return self.finish("completed", "the agent answered", answer)
            self.visit.idle_turns += 1
            ordinary = [e for e in stage.edges if e.condition in ("always", "llm_choice")]
            if ordinary and all(self._spent(e.to) for e in ordinary):
                return self._dead_end()
            hinted = ", ".join(e.target for e in hinted_edges(stage)) or "none"
            self.messages.append(
                Message.user(
                    "[stage] Keep working with the tools, or choose the next stage "
                    f"(choose_edge; edges: {hinted})."
                )
            )
            return False
        if stage.fan_out is not None and any(
            r.ok and self.canonical(c) == "fan_out" for c, r in zip(calls, results, strict=True)
        ):
            # the workers' report is in; a fan_out stage hands over to its merge stage
            always = self._edge_index("always")
            if always is not None:
                return self._try_edge(always, "always")
        self.visit.note_turn(calls, results)
        stuck = self._edge_index("stuck")
        if stuck is not None:
            why = stuck_reason(self.stage.edges[stuck], self.visit)
            if why is not None:
                self.emit("notice", message=f"{why}: stuck")
                report(
                    self,
                    "stuck_report",
                    f"[Stuck detected in stage '{stage.name}'] {why}. Stop repeating what you "
                    "have been doing; re-read the task and take a different approach.",
                )
                return self._try_edge(stuck, "stuck")
        return False
