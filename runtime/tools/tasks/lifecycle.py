"""The life of a background task: started, followed, cancelled, recorded.

Ownership: every task records the run store of the call that started it,
and every lookup (:func:`find_task`, :func:`tasks_of`) is by that store.

Order of events, which the tests observe:

* a task's terminal state is written (and synced) before anyone waiting on
  it is woken: ``yield_until``, ``task_control``, ``task_status`` and
  ``cancel_tasks`` never see a state the store does not hold;
* if the output cannot be recorded (a task-log or artifact write fails) or a
  pipe cannot be read, the process tree is stopped and both pipes drained to
  their end before the task is published as ``error``; a failed flush or
  sync of the artifact at the end fails the task the same way;
* cancelling is single-flight: the first cancel requests it (recorded as
  ``cancelling``) and waits; a cancel arriving meanwhile joins that request
  and reports the same outcome instead of starting another.
"""

from __future__ import annotations

import atexit
import secrets
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.tasks.output import TERMINAL_TAIL_CHARS, TaskOutput
from charter.runtime.tools.tasks.store import TaskStore, artifact_ref, run_identity, store_for

if TYPE_CHECKING:
    from charter.runtime.proc import ProcResult
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "MAX_TASKS_PER_RUN",
    "RECORD_VERSION",
    "Task",
    "cancel_tasks",
    "find_task",
    "request_cancel",
    "start_shell_task",
    "tasks_of",
]

MAX_TASKS_PER_RUN = 64  # running at once; finished ones do not count
RECORD_VERSION = 1


class _Either(threading.Event):
    """A cancel event that is also set when the run's own event is: a
    background task stops with the run that started it."""

    def __init__(self, parent: threading.Event) -> None:
        super().__init__()
        self._parent = parent

    def is_set(self) -> bool:
        return super().is_set() or self._parent.is_set()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


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
    store: TaskStore | None = None
    stored_summary: str = ""  # the command redacted for durable records
    result_ref: str | None = None
    artifact: dict[str, Any] | None = None
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=_now)
    finished: float | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: ProcResult | None = None
    error: str | None = None  # why the task is in state "error"
    cancel_requested: bool = False
    # Set once the runner has its outcome: a cancel arriving later changes
    # nothing and waits for the publication instead.
    finishing: bool = False
    status: str = "running"  # running | cancelling | succeeded | failed | timed_out | ...
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Record writes of one task happen one at a time, and none after the
    # terminal one (a late "cancelling" must not overwrite the outcome).
    io_lock: threading.Lock = field(default_factory=threading.Lock)
    sealed: bool = False


_TASKS: dict[str, Task] = {}
_LOCK = threading.Lock()


def _new_id() -> str:
    return "task_" + secrets.token_hex(6)


def _prune() -> None:
    """Forget finished tasks of runs that no longer exist (call with _LOCK)."""
    for tid in [t.id for t in _TASKS.values() if t.done.is_set() and t.owner() is None]:
        del _TASKS[tid]


def find_task(task_id: str) -> Task | None:
    """The task with this id, whoever owns it (the caller compares owners)."""
    with _LOCK:
        return _TASKS.get(task_id)


def tasks_of(store: object) -> list[Task]:
    """The tasks the run owning ``store`` started, oldest first."""
    with _LOCK:
        mine = [t for t in _TASKS.values() if t.owner() is store]
    mine.sort(key=lambda t: t.started)
    return mine


def _stream_stats(proc: ProcResult | None) -> dict[str, Any]:
    if proc is None:
        return {"tail_chars": TERMINAL_TAIL_CHARS}
    return {
        "tail_chars": TERMINAL_TAIL_CHARS,
        "stdout": {
            "bytes": proc.stdout_bytes,
            "chars": proc.stdout_chars,
            "truncated": proc.stdout_truncated,
        },
        "stderr": {
            "bytes": proc.stderr_bytes,
            "chars": proc.stderr_chars,
            "truncated": proc.stderr_truncated,
        },
    }


def _record(
    task: Task,
    state: str,
    *,
    proc: ProcResult | None = None,
    error: str | None = None,
    finished_at: str | None = None,
) -> dict[str, Any]:
    """The operator/debug record of a task: state, timing, process, the
    tail statistics of its output and where the full output is."""
    return {
        "version": RECORD_VERSION,
        "task_id": task.id,
        "kind": task.kind,
        "state": state,
        "command": task.stored_summary,
        "timeout_s": task.timeout_s,
        "started_at": task.started_at,
        "finished_at": finished_at,
        "cancel_requested": task.cancel_requested,
        "exit_code": None if proc is None else proc.exit_code,
        "timed_out": None if proc is None else proc.timed_out,
        "error": error,
        "process": None if proc is None or proc.spawn is None else proc.spawn.as_dict(),
        "stop_error": None if proc is None else proc.stop_error,
        "output": _stream_stats(proc),
        "result_ref": task.result_ref,
        "artifact": task.artifact,
        "log": f"{task.id}.log.jsonl",
    }


def _persist(task: Task, record: dict[str, Any], *, terminal: bool = False) -> bool:
    """Write ``record``; False when the terminal record is already written
    (nothing may follow it). Raises what the store raises."""
    assert task.store is not None
    with task.io_lock:
        if task.sealed:
            return False
        task.store.write(record)
        if terminal:
            task.sealed = True
        return True


def request_cancel(task: Task) -> str:
    """Start cancelling ``task`` unless that is already under way.

    Returns ``requested`` (this call started it), ``joined`` (a cancel was
    already in flight: wait for its outcome, start nothing), ``finishing``
    (the command had already ended; its outcome is being published) or
    ``finished``. Single-flight: only one caller ever gets ``requested``.
    """
    with task.lock:
        if task.done.is_set():
            return "finished"
        if task.finishing:
            return "finishing"
        if task.cancel_requested:
            return "joined"
        task.cancel_requested = True
        task.status = "cancelling"
    try:
        _persist(task, _record(task, "cancelling"))
    except Exception:  # noqa: BLE001 - stopping the tree matters more than this note
        pass  # the terminal record still says what happened
    task.cancel.set()
    return "requested"


def cancel_tasks(store: object | None = None, *, wait_s: float = 5.0) -> int:
    """Cancel the running tasks of the run owning ``store`` (every run's when
    None) and wait up to ``wait_s`` for their process trees to stop and their
    outcome to be recorded; returns how many were cancelled (a cancel already
    in flight counts, and is joined). A host calls this when a run ends;
    interpreter exit does it for all."""
    with _LOCK:
        running = [
            t
            for t in _TASKS.values()
            if not t.done.is_set() and (store is None or t.owner() is store)
        ]
    cancelled = [t for t in running if request_cancel(t) in ("requested", "joined")]
    deadline = time.monotonic() + wait_s
    for task in running:
        task.done.wait(max(0.0, deadline - time.monotonic()))
    return len(cancelled)


# No background command outlives the runtime that started it.
atexit.register(cancel_tasks)


def _failure(proc: ProcResult) -> str | None:
    """Why a finished command counts as an error rather than an outcome."""
    if proc.error is not None:
        return proc.error
    if proc.output_error is not None:
        return f"the task log could not be written ({proc.output_error}); its tree was stopped"
    if proc.drain_error is not None:
        return f"the output could not be drained to its end ({proc.drain_error})"
    if proc.stop_error is not None:
        return proc.stop_error
    return None


def _outcome(proc: ProcResult | None, error: str | None) -> str:
    if error is not None or proc is None:
        return "error"
    if proc.cancelled:
        return "cancelled"
    if proc.timed_out:
        return "timed_out"
    return "succeeded" if proc.exit_code == 0 else "failed"


def start_shell_task(
    rt: ToolRuntime,
    *,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: int,
    command: str,
    sandbox: Any = None,
) -> ToolResult:
    """Start ``argv`` as a background task of the caller's run (the shell
    tool has validated everything) and return its id at once. With
    ``sandbox`` the task runs contained, like a foreground command.

    The task's record, task log and artifact are created before the command
    starts; if any of them cannot be, nothing is started."""
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
            stored_summary=rt.redactor.redact(command, "stored")[:500],
        )
        _TASKS[task.id] = task  # holds its slot while the store is prepared

    output: TaskOutput | None = None
    try:
        store = store_for(rt)
        task.store = store
        log = store.open_log(task.id)
        try:
            descriptor, streams = store.open_artifact(task.id, run_identity())
        except BaseException:
            log.close()
            raise
        task.artifact = descriptor
        task.result_ref = artifact_ref(str(descriptor["root"]))
        output = TaskOutput(rt.redactor, streams, log)
        _persist(task, _record(task, "running"))
    except Exception as exc:  # noqa: BLE001 - refused, with nothing started
        if output is not None:
            output.close()
        with _LOCK:
            _TASKS.pop(task.id, None)
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        return refusal(
            "error",
            "dispatch",
            "task-store-failed",
            f"the background task was not started: its record, log or output artifact could "
            f"not be created ({type(exc).__name__}: {reason})",
        )
    env_copy = dict(env)
    sink = output

    def work() -> None:
        proc: ProcResult | None = None
        error: str | None = None
        try:
            proc = run_command(
                list(argv),
                cwd=cwd,
                env=env_copy,
                timeout_s=timeout_s,
                output_cap=None,
                tail_chars=TERMINAL_TAIL_CHARS,
                cancel=task.cancel,
                redact=lambda text: rt.redactor.redact_cut(text, "operator"),
                on_output=sink,
                sandbox=sandbox,
            )
        except Exception as exc:  # noqa: BLE001 - the task reports it, the run goes on
            error = f"the runner failed: {type(exc).__name__}"
        finally:
            env_copy.clear()
        with task.lock:
            task.finishing = True
        # run_command has returned: the tree is stopped and, unless
        # drain_error says otherwise, both pipes were read to their end.
        if proc is not None and error is None:
            error = _failure(proc)
        if error is None:
            try:
                sink.finish()
            except Exception as exc:  # noqa: BLE001 - the artifact is incomplete
                error = (
                    "the output artifact could not be flushed or synced "
                    f"({type(exc).__name__}: {exc})"
                )
        sink.close()
        state = _outcome(proc, error)
        finished, finished_at = time.monotonic(), _now()
        # Persist, then announce: nobody learns of an outcome the store lacks.
        try:
            _persist(
                task,
                _record(task, state, proc=proc, error=error, finished_at=finished_at),
                terminal=True,
            )
        except Exception as exc:  # noqa: BLE001 - still published, as a failure
            state = "error"
            error = f"the task's final state could not be saved ({type(exc).__name__}: {exc})"
            try:
                _persist(
                    task,
                    _record(task, state, proc=proc, error=error, finished_at=finished_at),
                    terminal=True,
                )
            except Exception:  # noqa: BLE001 - nothing more can be done about the store
                pass
        with task.lock:
            task.result = proc
            task.error = error
            task.status = state
            task.finished = finished
            task.done.set()

    threading.Thread(target=work, name=f"task:{task.id}", daemon=True).start()
    return ToolResult(
        "ok",
        f"Started background task {task.id}. Follow it with task_status, yield_until or "
        f"task_list; stop it with task_control(command='cancel'). It is stopped after "
        f"{timeout_s}s. Its full output is kept as {task.result_ref}.",
        display=f"$ {command}\n(background task {task.id}, timeout {timeout_s}s)",
        data={
            "task_id": task.id,
            "background": True,
            "timeout_s": timeout_s,
            "result_ref": task.result_ref,
        },
    )
