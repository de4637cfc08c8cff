"""The mechanics of one tool call in the agent loop: the call runs in a
worker thread with a progress event about once a second, a person asked for
approval is announced (waiting, then resumed), and the run's own records
are kept from the file tools."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from charter.runtime.models import ModelToolCall
from charter.runtime.results import ToolResult, refusal
from charter.runtime.run.progress import Meter
from charter.runtime.tools.paths import path_args

if TYPE_CHECKING:
    from charter.runtime.plan import ToolEntry
    from charter.runtime.policy.approval import ApprovalAnswer, ApprovalProvider, ApprovalRequest
    from charter.runtime.run.context import RunContext

__all__ = ["Announced", "guard_records", "run_in_worker"]

_PROGRESS_EVERY_S = 1.0


async def run_in_worker(
    ctx: RunContext,
    emit: Callable[..., None],
    run: Callable[[], ToolResult],
    call: ModelToolCall,
    meter: Meter,
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
            emit(
                "tool_progress",
                tool=call.name,
                call_id=call.id,
                elapsed_s=round(time.perf_counter() - started, 1),
                output_bytes=snap.output_bytes,
                output_lines=snap.output_lines,
                last_line=snap.last_line,
            )

    with anyio.CancelScope(shield=True) as scope:
        ctx.guard(scope)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                result = await anyio.to_thread.run_sync(
                    run, abandon_on_cancel=True, limiter=ctx.limiter
                )
                ok = True
                done = True
                tg.cancel_scope.cancel()
        finally:
            done = True
            ctx.unguard(scope)
    if ok and isinstance(result, ToolResult):
        return result
    return refusal(
        "error",
        "dispatch",
        "run-interrupted",
        f"the call to '{call.name}' was abandoned: the run was interrupted and the tool "
        "did not stop in time",
    )


def guard_records(
    workspace: Path, entry: ToolEntry | None, args: Mapping[str, Any]
) -> ToolResult | None:
    """The run's own records (``.charter/`` in the workspace: plans, audit
    logs, events) are not the agent's to overwrite with file tools."""
    records = (workspace / ".charter").resolve()
    for _arg, value, op in path_args(entry, args):
        if op != "write":
            continue
        try:
            target = (workspace / value).resolve()
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


@dataclass(frozen=True, slots=True)
class Announced:
    """The run's approval provider for one call, announcing the wait: a
    ``approval_waiting`` event before a person is asked and
    ``approval_resumed`` with the answer after, so a watcher (or a program
    reading --json) knows the run is waiting on someone, not hung."""

    inner: ApprovalProvider
    emit: Callable[..., None]
    call: ModelToolCall
    meter: Meter

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self.meter.waiting = True
        self.emit(
            "approval_waiting",
            tool=req.tool,
            call_id=self.call.id,
            stage=req.stage,
            reasons=list(req.all_reasons),
        )
        started = time.perf_counter()
        answer: ApprovalAnswer | None = None
        try:
            answer = self.inner.request(req)
            return answer
        finally:
            self.meter.waiting = False
            self.emit(
                "approval_resumed",
                tool=req.tool,
                call_id=self.call.id,
                answer=answer.kind if answer is not None else "deny",
                by=answer.source if answer is not None else "error",
                waited_s=round(time.perf_counter() - started, 1),
            )
