"""Running one command as an owned process tree with bounded output.

:func:`run_command` starts the command (its own session, both pipes drained
into a :class:`~.capture.Capture` each), waits for it to end, time out or be
cancelled, stops its tree (:mod:`.tree`) and returns a :class:`ProcResult`.
Processes still in the group when the command itself exits are stopped the
same way: a foreground command may not leave work running behind it.

With ``sandbox`` the command starts inside that OS sandbox
(:mod:`charter.runtime.sandbox`): everything else here is the same (the
session is still signalled, and :func:`kill_running` still reaches it), a
sandbox that cannot be built is an error result, never an uncontained run,
and where the sandbox has a pid namespace the kernel also ends what left the
session with ``setsid`` once the command ends.

A caller that records the output itself (a background task writing its
durable log) passes ``on_output``: it gets every chunk as it is read, after
the capture has counted it. If it raises, or a pipe cannot be read, the
output can no longer be recorded completely, so the tree is stopped as on
cancellation; the pipes are still drained to their end (a child is never
left blocked on a full pipe), and the result names the failure.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.sandbox.container import ContainerSandbox
    from charter.runtime.sandbox.launcher import Sandbox

from charter.runtime.proc.capture import Capture, Drain, OutputSink
from charter.runtime.proc.tree import (
    CAN_PEEK,
    GRACE_S,
    HAS_PROC,
    IS_WINDOWS,
    POLL_S,
    Process,
    SpawnRecord,
    leader_exited,
    members_running,
    signal_group,
    spawn_record,
    still_ours,
    stop_tree,
)

__all__ = ["DEFAULT_OUTPUT_CAP", "ProcResult", "kill_running", "run_command"]

DEFAULT_OUTPUT_CAP = 1_000_000


@dataclass(frozen=True, slots=True)
class ProcResult:
    exit_code: int | None  # None when the command could not start (or was not reaped)
    stdout: str  # kept text, redacted, with a [truncated] line when cut
    stderr: str
    stdout_bytes: int  # how much the command really wrote
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    cancelled: bool
    duration_s: float
    pgid: int | None = None
    error: str | None = None  # why the command could not start
    stdout_chars: int = 0  # characters written (undecodable bytes count as one each)
    stderr_chars: int = 0
    spawn: SpawnRecord | None = None
    # Why the process tree was not signalled (its PID no longer named our
    # process); None when it was stopped or needed no stopping.
    stop_error: str | None = None
    # The first failure of run_command's on_output sink (None without one).
    output_error: str | None = None
    # A pipe that could not be read, or was still open when the result was
    # made (its writer could not be stopped); None when both were read to EOF.
    drain_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (
            self.timed_out
            or self.cancelled
            or self.error
            or self.stop_error
            or self.output_error  # only with on_output: its record is incomplete
        )


# Every tree run_command is still waiting for, so that a process about to
# exit without waiting (an interrupted run that abandoned a stuck tool thread)
# can stop them all first: see kill_running.
_LIVE: dict[str, tuple[Process, SpawnRecord]] = {}
_LIVE_LOCK = threading.Lock()


def kill_running() -> int:
    """SIGKILL, at once, every process tree a run_command call of this
    process is still waiting for (its group and its session). For a caller
    that is about to exit without waiting for those calls to finish their
    own TERM-then-KILL; they notice and return as usual. Returns how many
    trees were signalled."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    count = 0
    for proc, spawn in live:
        if IS_WINDOWS:  # pragma: no cover - exercised on Windows only
            if still_ours(spawn, proc):
                proc.kill()
                count += 1
        elif spawn.pgid is not None and signal_group(spawn, proc, signal.SIGKILL):
            count += 1
    return count


class _SandboxFailed(Exception):
    pass


def _contained(
    sandbox: Sandbox | ContainerSandbox,
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
) -> tuple[Process, Callable[[], None]]:
    from charter.runtime.sandbox.launcher import SandboxError, SandboxUnavailable

    try:
        launched = sandbox.popen(list(argv), cwd=cwd, env=env)
    except SandboxError as exc:
        if exc.stage == "exec":  # contained, but the program itself would not start
            raise _SandboxFailed(f"could not start {argv[0]}: {exc.message}") from exc
        raise _SandboxFailed(f"the sandbox could not be built ({exc})") from exc
    except SandboxUnavailable as exc:
        raise _SandboxFailed(f"the sandbox is not available: {exc}") from exc
    proc: Any = launched.proc
    return proc, launched.close


def _not_started(start: float, error: str) -> ProcResult:
    return ProcResult(
        exit_code=None,
        stdout="",
        stderr="",
        stdout_bytes=0,
        stderr_bytes=0,
        stdout_truncated=False,
        stderr_truncated=False,
        timed_out=False,
        cancelled=False,
        duration_s=time.monotonic() - start,
        error=error,
    )


def run_command(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int | None = DEFAULT_OUTPUT_CAP,
    tail_chars: int | None = None,
    cancel: threading.Event | None = None,
    redact: Callable[[str], str] | None = None,
    on_output: OutputSink | None = None,
    sandbox: Sandbox | ContainerSandbox | None = None,
) -> ProcResult:
    """Run ``argv`` to completion, timeout or cancellation; never raises for
    the command's own failures (they are in the result).

    ``output_cap`` bounds the head kept of each stream (bytes), ``tail_chars``
    the tail (characters); give either or both, never neither.

    ``on_output`` receives every chunk of both streams, from the two drain
    threads (so it must be thread-safe). If it raises, or a pipe read fails,
    the tree is stopped like on cancellation while both pipes keep being
    drained; ``output_error`` / ``drain_error`` say what happened. The
    function returns only after the tree is stopped and, unless a member
    could not be signalled, both pipes reached their end.
    """
    if output_cap is None and tail_chars is None:
        raise ValueError("run_command needs output_cap, tail_chars or both")
    start = time.monotonic()
    kwargs: dict[str, object] = {}
    if IS_WINDOWS:  # pragma: no cover
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    release: Callable[[], None] | None = None
    proc: Process
    try:
        if sandbox is not None:
            proc, release = _contained(sandbox, argv, cwd=cwd, env=env)
        else:
            proc = subprocess.Popen(  # noqa: S603 - argv comes from the shell tool, after the gates
                list(argv),
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                **kwargs,  # type: ignore[call-overload]
            )
    except _SandboxFailed as exc:
        return _not_started(start, str(exc))
    except (OSError, ValueError) as exc:
        return _not_started(start, f"could not start {argv[0] if argv else '(nothing)'}: {exc}")
    spawn = spawn_record(proc)
    with _LIVE_LOCK:
        _LIVE[spawn.spawn_id] = (proc, spawn)
    try:
        return _supervise(
            proc,
            spawn,
            start=start,
            timeout_s=timeout_s,
            output_cap=output_cap,
            tail_chars=tail_chars,
            cancel=cancel,
            redact=redact,
            on_output=on_output,
        )
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(spawn.spawn_id, None)
        if release is not None:
            release()  # the sandbox's own resources (pids cgroup, proxy), once it has ended


def _supervise(
    proc: Process,
    spawn: SpawnRecord,
    *,
    start: float,
    timeout_s: float,
    output_cap: int | None,
    tail_chars: int | None,
    cancel: threading.Event | None,
    redact: Callable[[str], str] | None,
    on_output: OutputSink | None,
) -> ProcResult:
    # Only a caller recording the output needs a failed pipe to stop the tree.
    failed = threading.Event() if on_output is not None else None
    out, err = (
        Drain(
            pipe,
            Capture(head_bytes=output_cap, tail_chars=tail_chars),
            name=name,
            sink=on_output,
            failed=failed,
        )
        for pipe, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr"))
    )
    deadline = start + timeout_s
    timed_out = cancelled = aborted = False
    stop_error: str | None = None
    pause = 0.0005
    try:
        while not leader_exited(proc):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            if failed is not None and failed.is_set():
                aborted = True  # the output cannot be recorded whole any more
                break
            time.sleep(pause)
            pause = min(pause * 2, POLL_S)  # quick commands answer quickly
    finally:
        if timed_out or cancelled or aborted:
            stop_error = stop_tree(proc, spawn)
        elif CAN_PEEK and (not HAS_PROC or members_running(spawn, proc)):
            # Also on normal exit: whatever the command left running in its
            # group (a backgrounded child holding the pipes open) is stopped
            # with it. Only while the leader is unreaped, which keeps the group
            # id ours; without /proc the leftovers cannot be seen, so the group
            # is stopped unconditionally (an empty group ignores the signals).
            stop_error = stop_tree(proc, spawn)
        if stop_error is None:
            try:
                proc.wait(timeout=GRACE_S)  # reap the leader only now
            except subprocess.TimeoutExpired:
                pass
    # Pipes held by a process we could not signal may never close.
    for drain in (out, err):
        drain.thread.join(timeout=GRACE_S if stop_error is None else POLL_S)
    drain_problems = [
        f"{d.name}: {d.error}" if d.error is not None else f"{d.name}: still open"
        for d in (out, err)
        if d.error is not None or d.thread.is_alive()
    ]
    return ProcResult(
        exit_code=proc.returncode,
        stdout=out.capture.render("stdout", redact, out.error),
        stderr=err.capture.render("stderr", redact, err.error),
        stdout_bytes=out.capture.total_bytes,
        stderr_bytes=err.capture.total_bytes,
        stdout_truncated=out.capture.truncated,
        stderr_truncated=err.capture.truncated,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=time.monotonic() - start,
        pgid=spawn.pgid,
        stdout_chars=out.capture.total_chars,
        stderr_chars=err.capture.total_chars,
        spawn=spawn,
        stop_error=stop_error,
        output_error=out.sink_error or err.sink_error,
        drain_error="; ".join(drain_problems) or None,
    )
