"""Background tasks of a run: ``terminal(background=true)`` and the tools that
follow them (task_list, task_status, task_control, yield_until), plus the
validation of delegate_task's child controls.

Ownership: every task records the run store of the call that started it.
Each lookup compares that store with the caller's, so an id owned by
another run (or another agent of the same run) gets exactly the answer a
missing id gets. Ids are random, so they cannot be guessed either.

What the model gets back is a bounded projection: id, kind, state, exit
code, timing and the tail of the (redacted) output. Owner, environment and
working directory stay out of it.

A background shell command runs exactly as a foreground one does (same
shell, environment, confinement, redaction, output caps and process-tree
handling) in its own thread; its ``timeout_seconds`` still bounds it, and
cancelling the task, or cancelling the run, stops its whole process tree.

``yield_until`` waiting past its timeout returns the current state with
``timed_out`` set and status ``ok``: the task has not failed.

Sub-agents share these implementation keys (check_agent, wait_for_agent,
kill_agent use ``tasks.status``, ``tasks.wait``, ``tasks.cancel``). Under
``charter run`` the run loop answers for its children and hands every other
id here; outside it there are no sub-agents, and their ids are unknown like
any other.
"""

from __future__ import annotations

import atexit
import secrets
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from charter.runtime.proc import ProcResult
    from charter.runtime.tools.registry import ToolRuntime

__all__ = [
    "MAX_TASKS_PER_RUN",
    "TAIL_CHARS",
    "ChildControls",
    "Task",
    "cancel_tasks",
    "check_child_controls",
    "guard_delegate",
    "run_cancel",
    "run_list",
    "run_status",
    "run_wait",
    "start_shell_task",
]

MAX_TASKS_PER_RUN = 64  # running at once; finished ones do not count
TAIL_CHARS = 4000  # of each stream, in a model-facing payload
DEFAULT_WAIT_S = 30
_POLL_S = 0.05
_CANCEL_WAIT_S = 5.0


class _Either(threading.Event):
    """A cancel event that is also set when the run's own event is: a
    background task stops with the run that started it."""

    def __init__(self, parent: threading.Event) -> None:
        super().__init__()
        self._parent = parent

    def is_set(self) -> bool:
        return super().is_set() or self._parent.is_set()


@dataclass(slots=True)
class Task:
    id: str
    kind: str
    # The RunStore of the run that started it, compared by identity. Weak: a
    # finished run's store is not kept alive by its old tasks.
    owner: weakref.ref[Any]
    summary: str  # the command, already redacted for the model
    timeout_s: int
    cancel: _Either
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: ProcResult | None = None
    cancel_requested: bool = False
    status: str = "running"  # running | succeeded | failed | timed_out | cancelled | error


_TASKS: dict[str, Task] = {}
_LOCK = threading.Lock()


def _new_id() -> str:
    return "task_" + secrets.token_hex(6)


def _prune() -> None:
    """Forget finished tasks of runs that no longer exist (call with _LOCK)."""
    for tid in [t.id for t in _TASKS.values() if t.done.is_set() and t.owner() is None]:
        del _TASKS[tid]


def cancel_tasks(store: object | None = None, *, wait_s: float = 5.0) -> int:
    """Cancel the running tasks of the run owning ``store`` (every run's when
    None) and wait up to ``wait_s`` for their process trees to stop; returns
    how many were cancelled. A host calls this when a run ends; interpreter
    exit does it for all."""
    with _LOCK:
        running = [
            t
            for t in _TASKS.values()
            if not t.done.is_set() and (store is None or t.owner() is store)
        ]
    for task in running:
        task.cancel_requested = True
        task.cancel.set()
    deadline = time.monotonic() + wait_s
    for task in running:
        task.done.wait(max(0.0, deadline - time.monotonic()))
    return len(running)


# No background command outlives the runtime that started it.
atexit.register(cancel_tasks)


def _owned(rt: ToolRuntime, task_id: Any) -> Task | ToolResult:
    with _LOCK:
        task = _TASKS.get(str(task_id))
    if task is None or task.owner() is not rt.store:
        # One answer for "missing" and "not yours": nothing to learn from it.
        return refusal(
            "error",
            "dispatch",
            "unknown-task",
            f"no task '{task_id}' in this session; task_list shows yours",
        )
    return task


def _tail(text: str) -> str:
    if len(text) <= TAIL_CHARS:
        return text
    return f"[... {len(text) - TAIL_CHARS} earlier characters not shown]\n" + text[-TAIL_CHARS:]


def _elapsed(task: Task) -> float:
    end = task.finished if task.finished is not None else time.monotonic()
    return round(end - task.started, 1)


def _payload(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {
        "task_id": task.id,
        "kind": task.kind,
        "status": task.status,
        "elapsed_s": _elapsed(task),
    }
    proc = task.result
    if proc is not None:
        out["exit_code"] = proc.exit_code
    return out


def _describe(task: Task, rt: ToolRuntime) -> str:
    head = f"task {task.id} ({task.kind}): {task.status}, {_elapsed(task)}s"
    proc = task.result
    if proc is None:
        return f"{head}\n$ {task.summary}"
    if proc.error is not None:
        return f"{head}\n$ {task.summary}\n[error] {proc.error}"
    parts = [f"{head}, exit code {proc.exit_code}", f"$ {task.summary}"]
    out = rt.redactor.redact(proc.stdout.rstrip("\n"), "model")
    err = rt.redactor.redact(proc.stderr.rstrip("\n"), "model")
    if out:
        parts.append("[stdout]\n" + _tail(out))
    if err:
        parts.append("[stderr]\n" + _tail(err))
    return "\n".join(parts)


# -- starting ------------------------------------------------------------------------


def start_shell_task(
    rt: ToolRuntime,
    *,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: int,
    command: str,
) -> ToolResult:
    """Start ``argv`` as a background task of the caller's run (the shell
    tool has validated everything) and return its id at once."""
    from charter.runtime.proc import run_command

    with _LOCK:
        _prune()
        running = sum(1 for t in _TASKS.values() if t.owner() is rt.store and not t.done.is_set())
        if running >= MAX_TASKS_PER_RUN:
            return refusal(
                "error",
                "dispatch",
                "too-many-tasks",
                f"at most {MAX_TASKS_PER_RUN} background tasks may run at once; wait for or "
                "cancel one first",
            )
        task = Task(
            id=_new_id(),
            kind="terminal.exec",
            owner=weakref.ref(rt.store),
            summary=rt.redactor.redact(command, "model")[:500],
            timeout_s=timeout_s,
            cancel=_Either(rt.cancel),
        )
        _TASKS[task.id] = task
    env_copy = dict(env)

    def work() -> None:
        try:
            proc = run_command(
                list(argv),
                cwd=cwd,
                env=env_copy,
                timeout_s=timeout_s,
                output_cap=rt.output_cap,
                cancel=task.cancel,
                redact=lambda text: rt.redactor.redact_cut(text, "operator"),
            )
            task.result = proc
            if proc.error is not None:
                task.status = "error"
            elif proc.cancelled or task.cancel_requested:
                task.status = "cancelled"
            elif proc.timed_out:
                task.status = "timed_out"
            else:
                task.status = "succeeded" if proc.exit_code == 0 else "failed"
        except Exception as exc:  # noqa: BLE001 - the task reports it, the run goes on
            task.status = "error"
            task.summary += f" (the runner failed: {type(exc).__name__})"
        finally:
            env_copy.clear()
            task.finished = time.monotonic()
            task.done.set()

    threading.Thread(target=work, name=f"task:{task.id}", daemon=True).start()
    return ToolResult(
        "ok",
        f"Started background task {task.id}. Follow it with task_status, yield_until or "
        f"task_list; stop it with task_control(command='cancel'). It is stopped after "
        f"{timeout_s}s.",
        display=f"$ {command}\n(background task {task.id}, timeout {timeout_s}s)",
        data={"task_id": task.id, "background": True, "timeout_s": timeout_s},
    )


# -- following ---------------------------------------------------------------------------


def _task_id(args: Mapping[str, Any]) -> Any:
    return args.get("task_id", args.get("agent_id"))


def run_list(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    kind = args.get("kind")
    include_done = bool(args.get("include_completed", True))
    with _LOCK:
        mine = [t for t in _TASKS.values() if t.owner() is rt.store]
    mine.sort(key=lambda t: t.started)
    shown = [
        t
        for t in mine
        if (kind is None or t.kind == kind) and (include_done or not t.done.is_set())
    ]
    if not shown:
        return ToolResult("ok", "(no background tasks)", data={"tasks": []})
    lines = [f"{t.id} ({t.kind}): {t.status}, {_elapsed(t)}s: {t.summary[:120]}" for t in shown]
    return ToolResult("ok", "\n".join(lines), data={"tasks": [_payload(t) for t in shown]})


def run_status(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    task = _owned(rt, _task_id(args))
    if isinstance(task, ToolResult):
        return task
    return ToolResult("ok", _describe(task, rt), data=_payload(task))


def run_wait(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    task = _owned(rt, _task_id(args))
    if isinstance(task, ToolResult):
        return task
    timeout = float(args.get("timeout_seconds", DEFAULT_WAIT_S))
    if tool == "wait_for_agent":
        timeout = float(rt.timeout_s)
    deadline = time.monotonic() + timeout
    while not task.done.wait(_POLL_S):
        if rt.cancel.is_set():
            return refusal("error", "dispatch", "wait-cancelled", "stopped while waiting")
        if time.monotonic() >= deadline:
            text = _describe(task, rt) + (
                f"\n(still running after waiting {timeout:g}s: timed_out is not a failure; "
                "wait again or check later)"
            )
            return ToolResult("ok", text, data={**_payload(task), "timed_out": True})
    return ToolResult("ok", _describe(task, rt), data={**_payload(task), "timed_out": False})


def run_cancel(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    command = args.get("command", "cancel")
    if command != "cancel":
        return refusal(
            "invalid", "dispatch", "task-bad-command", f"unknown command {command!r} (cancel)"
        )
    task = _owned(rt, _task_id(args))
    if isinstance(task, ToolResult):
        return task
    if task.done.is_set():
        return ToolResult(
            "ok",
            f"task {task.id} had already finished.\n" + _describe(task, rt),
            data=_payload(task),
        )
    task.cancel_requested = True
    task.cancel.set()
    # The runner stops the process tree (SIGTERM, then SIGKILL after a grace
    # period) and seals the state; wait for that so the answer is final.
    task.done.wait(_CANCEL_WAIT_S)
    return ToolResult(
        "ok", f"cancelled task {task.id}.\n" + _describe(task, rt), data=_payload(task)
    )


# -- delegate_task's child controls ---------------------------------------------------------

# Charter's agent cores have one input and one output step; these are the
# only slot ids a child pipeline can be narrowed to.
BASE_INPUT = "base_input"
BASE_OUTPUT = "base_output"


@dataclass(frozen=True, slots=True)
class ChildControls:
    core: str
    tools: tuple[str, ...] | None  # None: every tool the child core has
    input_slots: tuple[str, ...]
    output_slots: tuple[str, ...]
    use_bootstrap: bool


def _slots(value: Any, base: str, what: str) -> tuple[str, ...] | str:
    if value is None or value == "all":
        return (base,)
    if isinstance(value, list | tuple):
        if not value:
            return (base,)
        unknown = [str(v) for v in value if v != base]
        if unknown:
            return (
                f"{what} {', '.join(repr(u) for u in unknown)} not in the child core's pipeline "
                f"(its only {what.split()[0]} slot is '{base}')"
            )
        return (base,)
    return f'{what} must be "all" or a list of slot ids'


def check_child_controls(args: Mapping[str, Any], session: Any) -> ChildControls | ToolResult:
    """Validate delegate_task's child selection against the plan: the core
    must exist, and tools / input_slots / output_slots may only narrow what
    the child core has. Anything invalid is a tool error naming it."""

    def bad(message: str) -> ToolResult:
        return refusal("error", "dispatch", "delegate-invalid", message)

    if session is None:
        return bad("delegate_task can only be checked inside a gated call")
    agents = session.prepared.agents
    core = str(args.get("core_id") or session.agent.agent.name)
    child = agents.get(core)
    if child is None:
        known = ", ".join(sorted(agents)) or "none"
        return bad(f"core_id {core!r} is not an agent core of this plan (cores: {known})")
    if args.get("context_mode", "isolated") != "isolated":
        return bad("context_mode 'fork' is not supported in this runtime; use 'isolated'")
    raw_tools = args.get("tools", "all")
    tools: tuple[str, ...] | None
    if raw_tools is None or raw_tools == "all":
        tools = None
    elif raw_tools == "none":
        tools = ()
    elif isinstance(raw_tools, list | tuple):
        have = set(child.tools)
        unknown = [str(t) for t in raw_tools if t not in have]
        if unknown:
            listed = ", ".join(sorted(have)) or "none"
            return bad(
                f"tools {', '.join(repr(u) for u in unknown)} are not tools of core {core!r}; "
                f"tools can only narrow its set ({listed})"
            )
        tools = tuple(str(t) for t in raw_tools)
    else:
        return bad('tools must be "all", "none" or a list of tool names')
    ins = _slots(args.get("input_slots", [BASE_INPUT]), BASE_INPUT, "input slots")
    if isinstance(ins, str):
        return bad(ins)
    outs = _slots(args.get("output_slots", [BASE_OUTPUT]), BASE_OUTPUT, "output slots")
    if isinstance(outs, str):
        return bad(outs)
    return ChildControls(core, tools, ins, outs, bool(args.get("use_bootstrap", False)))


def guard_delegate(args: Mapping[str, Any], session: Any) -> ToolResult | None:
    """None when delegate_task's child controls are valid and can be
    honoured; otherwise the tool error to return instead of starting a child.
    The gate pipeline calls this before any sub-agent implementation, so a
    narrowing is never silently widened, whichever runner starts the child."""
    controls = check_child_controls(args, session)
    if isinstance(controls, ToolResult):
        return controls
    # A narrowed tool list is honoured by the run loop's child runner, which
    # opens the child's session with only those tools offered.
    return None
