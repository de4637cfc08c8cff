"""Sub-agents: child agents from the same plan, running beside their parent.

:class:`AgentWorld` owns every agent of a run. A child is an
:class:`~charter.runtime.run.loop.AgentRun` started in the run's anyio task
group under its own cancel scope, so several children run concurrently while
their parents go on. Children always run unattended (blocking tools are
withdrawn unless a stage requires them) and inherit the launch flags.

Depth is a budget: the root may have children when its agent's
``max_child_depth`` is at least 1; each child gets one level less (or what
``spawn_agent`` asked for, or its own agent's limit, whichever is smallest).

The tools are plain synchronous implementations, run in worker threads by
the gate pipeline; they reach the event loop through ``anyio.from_thread``.
Waiting is done on a thread event that also watches the caller's cancel
event, so Ctrl-C or a kill never leaves a thread waiting for a child.

An agent addresses only its own children. Killing one stops it and every
agent it started; a finished agent's unfinished children are killed too.
A child that submitted nothing says so in its result.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

import anyio
import anyio.from_thread

from charter.runtime.plan import OutputSpec
from charter.runtime.results import ToolResult, refusal
from charter.runtime.run.loop import AgentRun
from charter.runtime.tools.base import Args, CallFlags, ToolRuntime
from charter.runtime.tools.context import ContextEntry
from charter.runtime.tools.registry import NO_PATHS, Implementation, Registration, register

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from charter.runtime.run.loop import AgentResult, RunContext

__all__ = ["AgentTools", "AgentWorld", "Child", "agent_tools", "run_fan_out"]

_POLL_S = 0.05
# The impl keys AgentTools.implementations serves, in the order of its methods.
_IMPL_KEYS = ("agents.spawn", "tasks.status", "tasks.wait", "agents.send", "tasks.cancel",
              "tasks.list", "agents.fan_out")  # fmt: skip


@dataclass(slots=True)
class Child:
    id: str
    name: str
    parent: str
    run: AgentRun
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: threading.Event = field(default_factory=threading.Event)
    result: AgentResult | None = None
    killed: str | None = None  # why it was killed
    started: float = field(default_factory=time.monotonic)


class AgentWorld:
    """Every agent of one run, and the task group the children run in."""

    def __init__(self, ctx: RunContext, tg: TaskGroup) -> None:
        self.ctx = ctx
        self.tg = tg
        self.children: dict[str, Child] = {}
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- called on the event loop --------------------------------------------

    def spawn(
        self,
        parent: AgentRun,
        name: str,
        task: str,
        *,
        max_depth: int | None,
        output: OutputSpec | None,
        narrow: frozenset[str] | None = None,
        start_stage: str | None = None,
    ) -> Child | str:
        """Start a child of ``parent``; a string says why it cannot start."""
        if self.ctx.cancel.is_set() or parent.cancel.is_set():
            return "the run is stopping; no new sub-agents start"
        agents = self.ctx.prepared.agents
        found = agents.get(name)
        if found is None:
            known = ", ".join(sorted(agents)) or "none"
            return f"there is no agent named '{name}' in this plan (agents: {known})"
        if parent.depth_budget < 1:
            return (
                f"agent {parent.id} may not start sub-agents: the max_child_depth limit is "
                "reached at this depth"
            )
        budget = min(parent.depth_budget - 1, found.agent.limits.max_child_depth)
        if max_depth is not None:
            budget = min(budget, max_depth)
        with self._lock:
            n = self._counters.get(parent.id, 0) + 1
            self._counters[parent.id] = n
        cid = f"{parent.id}/{n}"
        try:
            run = AgentRun(
                self.ctx,
                self,
                agent_id=cid,
                agent_name=name,
                task=task,
                depth_budget=budget,
                unattended=True,
                provider=self.ctx.provider.for_agent(name),
                output_override=output,
                parent=parent.id,
                narrow=narrow,
                start_stage=start_stage,
            )
        except Exception as exc:  # noqa: BLE001 - an unusable child is the model's answer
            return f"the sub-agent could not be prepared: {exc}"
        child = Child(cid, name, parent.id, run)
        with self._lock:
            self.children[cid] = child
        parent.emit("agent_spawned", child=cid, agent_name=name, depth_budget=budget)
        self.tg.start_soon(self._run_child, child, name=f"agent {cid}")
        return child

    async def _run_child(self, child: Child) -> None:
        result: AgentResult | None = None
        try:
            with child.scope:
                result = await child.run.run()
        except Exception as exc:  # noqa: BLE001 - a crashed child is reported, not raised
            result = child.run.partial("failed", f"the sub-agent crashed: {exc}")
        finally:
            if result is None:
                if child.killed:
                    result = child.run.partial("killed", child.killed)
                else:
                    result = child.run.partial("cancelled", "the run was stopped")
                child.run.emit("agent_finished", **result.to_json())
            child.result = result
            child.done.set()

    def kill(self, cid: str, reason: str) -> list[str]:
        """Stop ``cid`` and every agent below it; the ids stopped."""
        stopped: list[str] = []
        with self._lock:
            order = [cid] + [c for c in self.children if c.startswith(cid + "/")]
            targets = [self.children[c] for c in order if c in self.children]
        for child in targets:
            if child.done.is_set():
                continue
            child.killed = reason
            child.run.stopped = ("killed", reason)
            child.run.cancel.set()  # running shells stop their process trees
            child.scope.cancel()
            stopped.append(child.id)
        return stopped

    def kill_children(self, parent_id: str, reason: str) -> None:
        with self._lock:
            mine = [c.id for c in self.children.values() if c.parent == parent_id]
        for cid in mine:
            self.kill(cid, reason)

    def cancel_all(self) -> None:
        """Ctrl-C: every agent's cancel event, so threads return promptly."""
        with self._lock:
            children = list(self.children.values())
        for child in children:
            child.killed = child.killed or "the run was interrupted"
            child.run.cancel.set()
            child.scope.cancel()

    # -- called from tool threads ------------------------------------------------

    def own_child(self, parent: AgentRun, cid: str) -> Child | ToolResult:
        with self._lock:
            child = self.children.get(cid)
        if child is None or child.parent != parent.id:
            mine = sorted(c.id for c in self.children.values() if c.parent == parent.id)
            listed = ", ".join(mine) or "none"
            return refusal(
                "error",
                "dispatch",
                "unknown-agent",
                f"no sub-agent '{cid}' of this agent (yours: {listed})",
            )
        return child


def describe(child: Child) -> str:
    """A child's state in words, with its answer once it has one."""
    if not child.done.is_set() or child.result is None:
        return f"Sub-agent {child.id} ({child.name}) is still running."
    r = child.result
    if r.status == "killed":
        return f"Sub-agent {child.id} ({child.name}) was killed ({r.reason}); it submitted nothing."
    if r.output is None:
        return (
            f"Sub-agent {child.id} ({child.name}) finished without submitting an output "
            f"(status {r.status}: {r.reason})."
        )
    fmt = f" ({r.output_format})" if r.output_format else ""
    return f"Sub-agent {child.id} ({child.name}) finished. Its answer{fmt}:\n\n{r.output}"


def _wait(child: Child, caller: AgentRun, timeout_s: float | None) -> bool:
    """Wait for ``child``; False when the caller was stopped or time ran out."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not child.done.wait(_POLL_S):
        if caller.cancel.is_set() or caller.ctx.cancel.is_set():
            return False
        if deadline is not None and time.monotonic() >= deadline:
            return False
    return True


_AGENT_TOOLS = frozenset(
    {
        "spawn_agent",
        "check_agent",
        "wait_for_agent",
        "send_to_agent",
        "kill_agent",
        "delegate_task",
        "fan_out",
    }
)


# The tools each sub-agent implementation serves; none takes a path.
_SERVES: Mapping[str, tuple[str, ...]] = {
    "agents.spawn": ("spawn_agent", "delegate_task"),
    "tasks.status": ("check_agent", "task_status"),
    "tasks.wait": ("wait_for_agent", "yield_until"),
    "agents.send": ("send_to_agent",),
    "tasks.cancel": ("kill_agent", "task_control"),
    "tasks.list": ("task_list",),
    "agents.fan_out": ("fan_out",),
}


# -- the tools ---------------------------------------------------------------------


def _ok(text: str, **data: Any) -> ToolResult:
    return ToolResult("ok", text, data=dict(data))


class AgentTools:
    """The sub-agent tools of one agent, ``me``: each method is an
    :class:`~charter.runtime.tools.registry.Implementation` acting on
    ``me``'s own children in ``world``."""

    __slots__ = ("me", "world")

    def __init__(self, world: AgentWorld, me: AgentRun) -> None:
        self.world = world
        self.me = me

    def spawn(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        me = self.me
        narrow: frozenset[str] | None = None
        tool = flags.get("tool")
        if tool == "delegate_task":
            name = str(args.get("core_id") or me.name)
            task = str(args["goal"])
            max_depth = args.get("max_depth")
            wait = False
            output = None
            # The gate pipeline already checked that the list only narrows
            # the child core's tools (charter.runtime.tools.tasks).
            chosen = args.get("tools", "all")
            if chosen == "none":
                narrow = frozenset()
            elif isinstance(chosen, list | tuple):
                narrow = frozenset(str(t) for t in chosen)
        else:
            name = str(args["blueprint"])
            task = str(args["task"])
            if args.get("seed_context"):
                task += "\n\nContext from the agent that started you:\n" + str(args["seed_context"])
            max_depth = args.get("max_child_depth")
            wait = bool(args.get("wait", False))
            fmt, how = args.get("output_format"), args.get("output_instructions")
            output = OutputSpec(format=fmt, instructions=how) if (fmt or how) else None
        started = anyio.from_thread.run_sync(
            lambda: self.world.spawn(
                me,
                name,
                task,
                max_depth=int(max_depth) if max_depth is not None else None,
                output=output,
                narrow=narrow,
            )
        )
        if isinstance(started, str):
            return refusal("denied", "dispatch", "spawn-refused", started)
        if not wait:
            return _ok(
                f"Started sub-agent {started.id} ({name}). Use check_agent or wait_for_agent "
                f"with agent_id '{started.id}'.",
                agent_id=started.id,
            )
        if not _wait(started, me, None):
            return refusal("error", "dispatch", "wait-cancelled", "stopped while waiting")
        return _ok(describe(started), agent_id=started.id)

    def _own_child(self, args: Mapping[str, Any]) -> Child | ToolResult:
        """The child the call names by ``agent_id`` (or ``task_id``, as the
        task tools name it), or the refusal when it is not one of ``me``'s."""
        return self.world.own_child(self.me, str(args.get("agent_id") or args.get("task_id")))

    def status(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        child = self._own_child(args)
        if isinstance(child, ToolResult):
            return child
        return _ok(describe(child), done=child.done.is_set())

    def wait(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        child = self._own_child(args)
        if isinstance(child, ToolResult):
            return child
        me = self.me
        tool = flags.get("tool")
        timeout = float(args["timeout_seconds"]) if tool == "yield_until" else None
        if tool == "yield_until" and "timeout_seconds" not in args:
            timeout = 30.0
        if not _wait(child, me, timeout):
            if me.cancel.is_set() or me.ctx.cancel.is_set():
                return refusal("error", "dispatch", "wait-cancelled", "stopped while waiting")
            return _ok(
                describe(child) + " (timed out waiting; it may still finish)", timed_out=True
            )
        return _ok(describe(child))

    def send(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        child = self.world.own_child(self.me, str(args["agent_id"]))
        if isinstance(child, ToolResult):
            return child
        if child.done.is_set():
            return refusal(
                "error", "dispatch", "agent-finished", f"sub-agent {child.id} has already finished"
            )
        if not child.run.stage.accepts_messages:
            return refusal(
                "denied",
                "dispatch",
                "agent-not-accepting",
                f"sub-agent {child.id} is in stage '{child.run.stage.name}', which does not take "
                "messages (accepts_messages = false); wait for it, or send later",
            )
        region = args.get("target_region")
        child.run.deliver(str(args["message"]), str(region) if region else None)
        where = f"context section '{region}'" if region else "its conversation"
        return _ok(
            f"Delivered to sub-agent {child.id} ({where}); it reads it before its next turn."
        )

    def cancel(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        child = self._own_child(args)
        if isinstance(child, ToolResult):
            return child
        world = self.world
        stopped = anyio.from_thread.run_sync(
            lambda: world.kill(child.id, f"killed by agent {self.me.id}")
        )
        if not stopped:
            return _ok(f"Sub-agent {child.id} had already finished. {describe(child)}")
        # Killing is prompt: wait (briefly) until the tree has wound down.
        deadline = time.monotonic() + 10
        for cid in stopped:
            target = world.children[cid]
            while not target.done.wait(_POLL_S) and time.monotonic() < deadline:
                pass
        return _ok(f"Killed {', '.join(stopped)}.", killed=stopped)

    def listing(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        mine = [c for c in self.world.children.values() if c.parent == self.me.id]
        if not args.get("include_completed", True):
            mine = [c for c in mine if not c.done.is_set()]
        if not mine:
            return _ok("(no sub-agents)")
        return _ok("\n".join(describe(c).splitlines()[0] for c in mine))

    def fan_out(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        return run_fan_out(self.world, self.me, args)

    def implementations(self) -> dict[str, Implementation]:
        """Each ``impl`` key of :data:`_SERVES` with the method serving it."""
        served = (self.spawn, self.status, self.wait, self.send, self.cancel, self.listing)
        return dict(zip(_IMPL_KEYS, (*served, self.fan_out), strict=True))


@dataclass(frozen=True, slots=True)
class _Shared:
    """One ``impl`` key served by both this agent's tools and the base
    registry's (the seed-000 task tools): a call about one of ``me``'s
    children goes to ``own``, anything else (a background command) to
    ``other``."""

    key: str
    me: str  # the agent's id; its children's ids start with it
    own: Implementation
    other: Implementation

    def __call__(self, args: Args, rt: ToolRuntime, /, **flags: Unpack[CallFlags]) -> ToolResult:
        if flags.get("tool") in _AGENT_TOOLS:
            return self.own(args, rt, **flags)
        if self.key == "tasks.list":
            if args.get("kind") == "agent.spawn":
                return self.own(args, rt, **flags)
            return self.other(args, rt, **flags)
        ref = str(args.get("task_id", ""))
        if ref == self.me or ref.startswith(self.me + "/"):
            return self.own(args, rt, **flags)
        return self.other(args, rt, **flags)


def agent_tools(
    world: AgentWorld, me: AgentRun, base: Mapping[str, Implementation] | None = None
) -> tuple[Registration, ...]:
    """The registrations of the sub-agent tools for the agent ``me``. The
    seed-000 task tools share their ``impl`` keys (``task_status``,
    ``yield_until``, ``task_control``, ``task_list``): a call naming one of
    this agent's children is answered here, anything else goes to ``base``'s
    implementation for the key (background commands)."""
    runs = AgentTools(world, me).implementations()
    if base:
        for key, own in runs.items():
            other = base.get(key)
            if other is not None:
                runs[key] = _Shared(key, me.id, own, other)
    return tuple(
        register(key, run, serves={tool: NO_PATHS for tool in _SERVES[key]})
        for key, run in runs.items()
    )


# -- fan_out ---------------------------------------------------------------------------

# How many workers run at once when neither the call nor the stage says.
DEFAULT_MAX_WORKERS = 4


def run_fan_out(world: AgentWorld, me: AgentRun, args: Mapping[str, Any]) -> ToolResult:
    """Leviath's fan_out: one worker per item, ``max_workers`` at a time, each
    a sub-agent under the same plan, gates, sandbox and audit log; their
    answers come back as one report (one section per item, in the items'
    order), also written to the stage's ``results_region``. A worker is this
    agent started at the stage's ``worker_stage``, or ``worker_agent`` (or the
    call's ``agent``) at its entry stage. A failed worker is tried again up to
    ``max_attempts`` times; with ``on_worker_failure = "fail_all"`` one that
    still fails fails the call."""
    spec = me.stage.fan_out
    items = [i for i in args.get("items") or [] if isinstance(i, Mapping)]
    if not items:
        return ToolResult("ok", "No items: nothing was handed out.", data={"workers": 0})
    if spec is not None and spec.worker_query:
        return refusal(
            "unavailable",
            "dispatch",
            "fan-out-worker-query",
            "this stage chooses its worker by a capability query (worker_query), which this "
            "runtime cannot resolve; name a worker_stage or worker_agent",
        )
    stage = spec.worker_stage if spec is not None else None
    name = (spec.worker_agent if spec is not None else None) or args.get("agent")
    if stage is not None:
        name = me.name
    if not name:
        return refusal(
            "denied", "dispatch", "fan-out-no-worker", "name the agent to run for every item"
        )
    cap = spec.max_items if spec is not None else None
    if cap is not None and len(items) > cap:
        return refusal(
            "denied",
            "dispatch",
            "fan-out-too-many",
            f"{len(items)} items is more than this stage's max_items ({cap}); hand out at most "
            f"{cap}",
        )
    asked = args.get("max_workers") or (spec.max_workers if spec is not None else None)
    limit = len(items) if asked == 0 else int(asked or DEFAULT_MAX_WORKERS)
    attempts = max(1, (spec.max_attempts if spec is not None else None) or 1)
    outcomes = _run_workers(world, me, str(name), stage, items, limit, attempts)
    if outcomes is None:
        return refusal("error", "dispatch", "wait-cancelled", "stopped while the workers ran")
    failed = [k for k, (ok, _) in outcomes.items() if not ok]
    report = "\n\n".join(f"## {k}\n{text}" for k, (_, text) in outcomes.items())
    if failed and spec is not None and spec.on_worker_failure == "fail_all":
        return refusal(
            "error",
            "dispatch",
            "fan-out-failed",
            f"{len(failed)} of {len(items)} workers failed ({', '.join(failed)}), and this "
            "stage fails them all:\n\n" + report,
        )
    if spec is not None and spec.results_region:
        with me.rt.store.lock:
            me.rt.store.regions[spec.results_region] = [ContextEntry(report)]
    head = f"{len(items) - len(failed)} of {len(items)} workers answered."
    return ToolResult(
        "ok", head + "\n\n" + report, data={"workers": len(items), "failed": len(failed)}
    )


def _starter(
    world: AgentWorld, me: AgentRun, name: str, task: str, stage: str | None
) -> Callable[[], Child | str]:
    def start() -> Child | str:
        return world.spawn(me, name, task, max_depth=None, output=None, start_stage=stage)

    return start


def _run_workers(
    world: AgentWorld,
    me: AgentRun,
    name: str,
    stage: str | None,
    items: list[Mapping[str, Any]],
    limit: int,
    attempts: int,
) -> dict[str, tuple[bool, str]] | None:
    """Run the workers; each item's (answered, text), in the items' order, or
    None when the run stopped."""
    keys = [str(i.get("id") or f"item-{n}") for n, i in enumerate(items, 1)]
    out: dict[str, tuple[bool, str]] = {k: (False, "(not run)") for k in keys}
    waiting = list(zip(keys, items, strict=True))
    tries = dict.fromkeys(keys, 0)
    running: dict[str, tuple[Child, Mapping[str, Any]]] = {}
    while waiting or running:
        while waiting and len(running) < max(1, limit):
            key, item = waiting.pop(0)
            tries[key] += 1
            context = json.dumps(item.get("context", {}), indent=2, ensure_ascii=False)
            task = f"Work item '{key}'. Everything you need to know:\n{context}"
            started = anyio.from_thread.run_sync(_starter(world, me, name, task, stage))
            if isinstance(started, str):
                out[key] = (False, f"(failed: {started})")
                continue
            me.emit("fan_out_worker", item=key, worker=started.id, attempt=tries[key])
            running[key] = (started, item)
        if me.cancel.is_set() or world.ctx.cancel.is_set():
            for child, _ in running.values():
                world.kill(child.id, "the fan-out was stopped")
            return None
        finished = [k for k, (c, _) in running.items() if c.done.is_set()]
        if not finished:
            time.sleep(_POLL_S)
            continue
        for key in finished:
            child, item = running.pop(key)
            r = child.result
            if r is not None and r.status == "completed" and r.output is not None:
                out[key] = (True, r.output)
            elif tries[key] < attempts:
                waiting.append((key, item))
            else:
                why = "no result" if r is None else f"{r.status}: {r.reason}"
                out[key] = (False, f"(failed: {why})")
    return out
