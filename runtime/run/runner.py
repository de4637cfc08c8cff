"""One run from start to finish: the root agent, its sub-agents, Ctrl-C.

:func:`execute_run` takes a prepared plan and everything the run needs
(:class:`RunOptions`) and returns a :class:`RunReport`. It runs an anyio
event loop with one task group: the root agent in the host task, sub-agents
as tasks beside it, and a watcher for SIGINT and SIGTERM.

On an interrupt the watcher sets every agent's cancel event first (a shell
call stops its whole process tree, a prompt stops waiting, a wait for a child
returns) and only then cancels the task scopes. Tool threads are waited for,
so that a process the run started is stopped before the run ends, but only
for :data:`INTERRUPT_GRACE_S`: a tool that ignores the cancel event is
abandoned then, so the run ends within about a second whatever is in flight,
and any command such a thread still waits for is killed outright.
A model request in flight (or its retry wait) is abandoned at once. The audit
log is closed by the caller in every case.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from charter.runtime.proc import kill_running
from charter.runtime.records import field_values
from charter.runtime.run.context import RunSettings
from charter.runtime.run.loop import AgentResult, AgentRun, RunContext

__all__ = ["INTERRUPT_GRACE_S", "RunOptions", "RunReport", "execute_run"]

# How long an interrupted run waits for its tool threads to stop; a shell that
# gets SIGTERM ends well within it.
INTERRUPT_GRACE_S = 0.8

# Worker threads: model calls, tool calls and waits on children all hold one,
# so the pool is sized well above anyio's default of 40.
_THREADS = 256


@dataclass(slots=True, kw_only=True)
class RunOptions(RunSettings):
    """What one run is given: the settings every agent shares, and which
    agent starts with what task."""

    agent: str
    task: str
    # named caller inputs (--input KEY=VALUE), which caller-seeded regions read
    inputs: Mapping[str, str] = field(default_factory=dict)
    handle_signals: bool = True


@dataclass(frozen=True, slots=True)
class RunReport:
    result: AgentResult
    interrupted: int | None  # the signal number that stopped the run, if any

    @property
    def completed(self) -> bool:
        return self.result.status == "completed" and self.result.output is not None


def execute_run(options: RunOptions) -> RunReport:
    """Run the agent to its end (or until interrupted)."""
    return anyio.run(_main, options)


async def _main(o: RunOptions) -> RunReport:
    from charter.runtime.run.agents import AgentWorld

    ctx = RunContext(**field_values(o, of=RunSettings), limiter=anyio.CapacityLimiter(_THREADS))
    found = o.prepared.agents[o.agent]
    interrupted: list[int] = []
    result: AgentResult | None = None
    async with anyio.create_task_group() as tg:
        world = AgentWorld(ctx, tg)
        root = AgentRun(
            ctx,
            world,
            agent_id="main",
            agent_name=o.agent,
            task=o.task,
            inputs=o.inputs,
            depth_budget=found.agent.limits.max_child_depth,
            unattended=o.yolo,
            provider=o.provider,
        )
        main_scope = anyio.CancelScope()

        def interrupt(signum: int) -> None:
            if interrupted:
                # A second signal while cleaning up: the person insists.
                o.bus.emit("notice", "main", message="second interrupt: exiting at once")
                os._exit(128 + signum)
            interrupted.append(signum)
            o.bus.emit("interrupted", "main", signal=signal.Signals(signum).name)
            # Events first, so threads stop their work; then the scopes, and a
            # deadline for the threads the run would otherwise wait for.
            ctx.cancel.set()
            root.cancel.set()
            world.cancel_all()
            ctx.expire(INTERRUPT_GRACE_S)
            main_scope.cancel()

        if o.handle_signals and threading.current_thread() is threading.main_thread():
            tg.start_soon(_watch_signals, interrupt)
        with main_scope:
            try:
                result = await root.run()
            except Exception as exc:  # noqa: BLE001 - a bug ends the run, it does not hide it
                result = root.partial("failed", f"internal error: {type(exc).__name__}: {exc}")
                o.bus.emit("agent_finished", "main", **result.to_json())
        tg.cancel_scope.cancel()
    if interrupted:
        # Threads that did not stop within the grace were abandoned; a command
        # one of them still waits for (one that ignored SIGTERM) must not
        # outlive the run, which is about to end without waiting.
        kill_running()
    if result is None:
        result = root.partial("cancelled", "the run was interrupted")
        o.bus.emit("agent_finished", "main", **result.to_json())
    return RunReport(result, interrupted[0] if interrupted else None)


async def _watch_signals(interrupt: Any) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            interrupt(int(signum))
