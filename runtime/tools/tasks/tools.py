"""The task tools the model calls: ``task_list``, ``task_status``,
``yield_until`` and ``task_control`` (and the sub-agent names that share
them: check_agent, wait_for_agent, kill_agent).

What the model gets back is a bounded projection: id, kind, state, exit
code, timing, the opaque ``result_ref`` of the task's output artifact and
the tail of the (redacted) output. Owner, environment and working directory
stay out of it, and an id owned by another run gets exactly the answer a
missing id gets.

``yield_until`` waiting past its timeout returns the current state with
``timed_out`` set and status ``ok``: the task has not failed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.tasks.lifecycle import Task, find_task, request_cancel, tasks_of

if TYPE_CHECKING:
    from charter.runtime.tools.base import ToolRuntime

__all__ = ["TAIL_CHARS", "run_cancel", "run_list", "run_status", "run_wait"]

TAIL_CHARS = 4000  # of each stream, in a model-facing payload
DEFAULT_WAIT_S = 30
_POLL_S = 0.05
_CANCEL_WAIT_S = 5.0


def _owned(rt: ToolRuntime, task_id: Any) -> Task | ToolResult:
    task = find_task(str(task_id))
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
        "result_ref": task.result_ref,
    }
    proc = task.result
    if proc is not None:
        out["exit_code"] = proc.exit_code
    return out


def _describe(task: Task, rt: ToolRuntime) -> str:
    head = f"task {task.id} ({task.kind}): {task.status}, {_elapsed(task)}s"
    proc = task.result
    if proc is None:
        lines = [head, f"$ {task.summary}"]
        if task.error is not None:
            lines.append(f"[error] {task.error}")
        return "\n".join(lines)
    parts = [f"{head}, exit code {proc.exit_code}", f"$ {task.summary}"]
    if task.error is not None:
        parts.append(f"[error] {task.error}")
    out = rt.redactor.redact(proc.stdout.rstrip("\n"), "model")
    err = rt.redactor.redact(proc.stderr.rstrip("\n"), "model")
    if out:
        parts.append("[stdout]\n" + _tail(out))
    if err:
        parts.append("[stderr]\n" + _tail(err))
    if task.result_ref is not None and proc.error is None:
        parts.append(
            f"(full output: {task.result_ref}; stdout {proc.stdout_bytes} bytes, "
            f"stderr {proc.stderr_bytes} bytes)"
        )
    return "\n".join(parts)


def _task_id(args: Mapping[str, Any]) -> Any:
    return args.get("task_id", args.get("agent_id"))


def run_list(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    kind = args.get("kind")
    include_done = bool(args.get("include_completed", True))
    shown = [
        t
        for t in tasks_of(rt.store)
        if (kind is None or t.kind == kind) and (include_done or not t.done.is_set())
    ]
    if not shown:
        return ToolResult("ok", "(no background tasks)", data={"tasks": []})
    lines = [f"{t.id} ({t.kind}): {t.status}, {_elapsed(t)}s: {t.summary[:120]}" for t in shown]
    return ToolResult("ok", "\n".join(lines), data={"tasks": [_payload(t) for t in shown]})


def _operator_view(task: Task, rt: ToolRuntime) -> str:
    """task_status for the operator: the model's text plus the tail
    statistics kept in the task's record."""
    text = _describe(task, rt)
    proc = task.result
    if proc is None:
        return text
    stats = []
    for name, total, chars, cut in (
        ("stdout", proc.stdout_bytes, proc.stdout_chars, proc.stdout_truncated),
        ("stderr", proc.stderr_bytes, proc.stderr_chars, proc.stderr_truncated),
    ):
        stats.append(f"{name} {total} bytes / {chars} chars" + (" (tail kept)" if cut else ""))
    return text + "\n(" + "; ".join(stats) + ")"


def run_status(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    task = _owned(rt, _task_id(args))
    if isinstance(task, ToolResult):
        return task
    return ToolResult(
        "ok", _describe(task, rt), display=_operator_view(task, rt), data=_payload(task)
    )


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
    how = request_cancel(task)
    if how == "finished":
        return ToolResult(
            "ok",
            f"task {task.id} had already finished.\n" + _describe(task, rt),
            data={**_payload(task), "cancel": how},
        )
    # The runner stops the process tree (SIGTERM, then SIGKILL after a grace
    # period), records the outcome and only then publishes it; wait for that
    # so the answer is final. A cancel that joined one in flight waits for
    # the same publication and reports the same outcome.
    if not task.done.wait(_CANCEL_WAIT_S):
        return ToolResult(
            "ok",
            f"cancellation of task {task.id} is under way; its tree is still being stopped. "
            "task_status shows the outcome once it is recorded.\n" + _describe(task, rt),
            data={**_payload(task), "cancel": how},
        )
    if how == "requested":
        lead = f"cancelled task {task.id}."
    elif how == "joined":
        lead = f"task {task.id} was already being cancelled; this is that cancellation's outcome."
    else:
        lead = f"task {task.id} had already ended when the cancel arrived."
    return ToolResult(
        "ok", lead + "\n" + _describe(task, rt), data={**_payload(task), "cancel": how}
    )
