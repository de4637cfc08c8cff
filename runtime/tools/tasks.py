"""Background tasks of a run: ``terminal(background=true)`` and the tools that
follow them (task_list, task_status, task_control, yield_until), plus the
validation of delegate_task's child controls.

Ownership: every task records the run store of the call that started it.
Each lookup compares that store with the caller's, so an id owned by
another run (or another agent of the same run) gets exactly the answer a
missing id gets. Ids are random, so they cannot be guessed either.

What the model gets back is a bounded projection: id, kind, state, exit
code, timing, the opaque ``result_ref`` of the task's output artifact and
the tail of the (redacted) output. Owner, environment and working directory
stay out of it.

A background shell command runs like a foreground ``terminal`` one (same
shell, environment, confinement, redaction and process-tree handling, the
same 12,000-character tail of each stream with its totals and truncation
flags) in its own thread; its ``timeout_seconds`` still bounds it, and
cancelling the task, or cancelling the run, stops its whole process tree.

Durable state (:class:`TaskStore`, below the run's runtime directory, see
:func:`runtime_dir`):

* ``tasks/<task_id>.json``: the task record, replaced atomically and synced
  at each change of state (running, cancelling, then its terminal state);
* ``tasks/<task_id>.log.jsonl``: the task log, one line per bounded piece of
  output as it is drained (stream, time, text);
* ``artifacts/<root>/stdout.txt`` and ``stderr.txt``: the complete streams,
  written as they are drained. ``<root>`` is opaque, derived from the run's
  identity and the task id; the record's ``result_ref`` names it.

Everything written there is redacted first (the ``stored`` view), a chunk at
a time: a secret split between two reads is still recognised, because each
stream holds back as many characters as the longest known secret has, less
one, until more text (or the end) shows whether they start a secret.

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
import codecs
import hashlib
import json
import os
import re
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.atomic import fsync_dir, write_atomic
from charter.runtime.redact import FAILED_MARKER, Redactor, find_secrets, tail_overlap
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.shell import TERMINAL_TAIL_CHARS

if TYPE_CHECKING:
    from charter.runtime.proc import ProcResult
    from charter.runtime.tools.registry import ToolRuntime

__all__ = [
    "LOG_ENTRY_CHARS",
    "MAX_TASKS_PER_RUN",
    "STREAM_FILES",
    "TAIL_CHARS",
    "AppendFile",
    "ChildControls",
    "StreamRedactor",
    "Task",
    "TaskStore",
    "TaskStoreError",
    "cancel_tasks",
    "check_child_controls",
    "guard_delegate",
    "run_cancel",
    "run_list",
    "run_status",
    "run_wait",
    "runtime_dir",
    "set_store_factory",
    "start_shell_task",
    "store_for",
]

MAX_TASKS_PER_RUN = 64  # running at once; finished ones do not count
TAIL_CHARS = 4000  # of each stream, in a model-facing payload
LOG_ENTRY_CHARS = 8192  # at most this much text in one task-log line
DEFAULT_WAIT_S = 30
_POLL_S = 0.05
_CANCEL_WAIT_S = 5.0
RECORD_VERSION = 1
# Where each stream of a task's artifact lives, relative to its opaque root.
STREAM_FILES: Mapping[str, str] = {"stdout": "stdout.txt", "stderr": "stderr.txt"}

_TASK_ID = re.compile(r"task_[0-9a-f]{12}")
_ROOT_ID = re.compile(r"[0-9a-f]{32}")
_REF_PREFIX = "artifact:"
# A run id that can name a directory of its own (charter run's are
# 20250101-120000-abc123).
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_POSIX = os.name == "posix"


# -- the durable store ---------------------------------------------------------------------


class TaskStoreError(OSError):
    """The store's folders are not what they must be (a symlink, a file, or
    a path that leaves the runtime directory)."""


def runtime_dir(rt: ToolRuntime) -> Path:
    """Where the runtime keeps a run's private task state and artifacts.

    Under ``charter run`` that is ``runtime/`` in the run's own directory,
    ``<workspace>/.charter/runs/<run_id>/runtime`` (next to its plan and
    audit log); outside a run (no calling session, or one without a usable
    run id) it is ``<workspace>/.charter/runtime``. Either is inside
    ``.charter/``, which the file tools may not write to.
    """
    from charter.runtime.tools.registry import current_session

    base = Path(rt.workspace) / ".charter"
    run_id = getattr(current_session(), "run_id", "")
    if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id):
        return base / "runs" / run_id / "runtime"
    return base / "runtime"


def _run_identity() -> str:
    from charter.runtime.tools.registry import current_session

    run_id = getattr(current_session(), "run_id", "")
    return run_id if isinstance(run_id, str) else ""


def artifact_root(identity: str, task_id: str) -> str:
    """The opaque folder name of a task's artifact: derived from the run's
    identity and the task id, so it names no path a caller chose."""
    digest = hashlib.sha256(f"charter-task-artifact\0{identity}\0{task_id}".encode())
    return digest.hexdigest()[:32]


class AppendFile:
    """One private file, created new (0600, never through a symlink) and
    appended to with unbuffered writes: what :meth:`write` returned from is
    with the OS, and :meth:`sync` puts it on disk."""

    def __init__(self, path: Path) -> None:
        flags = (
            os.O_WRONLY
            | os.O_CREAT
            | os.O_EXCL
            | os.O_APPEND
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_CLOEXEC", 0)
            | getattr(os, "O_BINARY", 0)
        )
        self.path = path
        self._fd: int | None = os.open(path, flags, 0o600)
        if _POSIX:
            os.fchmod(self._fd, 0o600)  # whatever the umask was

    def _open_fd(self) -> int:
        if self._fd is None:
            raise OSError(f"{self.path.name} is closed")
        return self._fd

    def write(self, data: bytes) -> None:
        fd = self._open_fd()
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def sync(self) -> None:
        os.fsync(self._open_fd())

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class TaskStore:
    """The durable records of background tasks below one runtime directory.

    Folders are created 0700 and files 0600 (POSIX); a folder of the store
    that is a symlink, or resolves outside the runtime directory, is refused
    rather than followed. Subclasses can replace :meth:`open_append` (how
    task-log and artifact files are opened) or :meth:`write` (the record).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def tasks_dir(self) -> Path:
        return self.root / "tasks"

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    def _private_dirs(self, *parts: str) -> Path:
        """``root/parts...``, each level created private and checked."""
        path = self.root
        levels = [path]
        for part in parts:
            path = path / part
            levels.append(path)
        for level in levels:
            level.mkdir(mode=0o700, parents=True, exist_ok=True)
            if level.is_symlink() or not level.is_dir():
                raise TaskStoreError(f"{level.name or level} is not a private directory")
            if _POSIX:
                os.chmod(level, 0o700)
        if not path.resolve().is_relative_to(self.root.resolve()):
            raise TaskStoreError(f"{path.name} resolves outside the runtime directory")
        return path

    def write(self, record: Mapping[str, Any]) -> None:
        """Replace the task's record whole and sync it to disk."""
        task_id = _checked_id(record.get("task_id"))
        folder = self._private_dirs("tasks")
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        write_atomic(folder / f"{task_id}.json", text, prefix=".task-", durable=True)

    def read(self, task_id: str) -> dict[str, Any] | None:
        """The task's last record, or None when there is none."""
        path = self.tasks_dir / f"{_checked_id(task_id)}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return data if isinstance(data, dict) else None

    def open_append(self, path: Path, role: str) -> AppendFile:
        """Open one of a task's files; ``role`` is ``log`` or a stream name."""
        return AppendFile(path)

    def open_log(self, task_id: str) -> AppendFile:
        folder = self._private_dirs("tasks")
        return self.open_append(folder / f"{_checked_id(task_id)}.log.jsonl", "log")

    def open_artifact(
        self, task_id: str, identity: str
    ) -> tuple[dict[str, Any], dict[str, AppendFile]]:
        """Create the task's artifact: its descriptor (opaque root and
        stream-relative paths) and one open file per stream."""
        root_id = artifact_root(identity, _checked_id(task_id))
        folder = self._private_dirs("artifacts", root_id)
        opened: dict[str, AppendFile] = {}
        try:
            for stream, rel in STREAM_FILES.items():
                opened[stream] = self.open_append(folder / rel, stream)
            fsync_dir(folder)
        except BaseException:
            for handle in opened.values():
                handle.close()
            raise
        descriptor = {"root": root_id, "streams": dict(STREAM_FILES), "redaction": "stored"}
        return descriptor, opened

    def artifact_path(self, result_ref: str, stream: str) -> Path:
        """The file holding ``stream`` of the artifact ``result_ref`` names.
        Only a well-formed reference to a stream of this store is accepted,
        and the path must stay below ``artifacts/`` once symlinks are
        resolved."""
        if not isinstance(result_ref, str) or not result_ref.startswith(_REF_PREFIX):
            raise TaskStoreError("not an artifact reference")
        root_id = result_ref[len(_REF_PREFIX) :]
        rel = STREAM_FILES.get(stream)
        if not _ROOT_ID.fullmatch(root_id) or rel is None:
            raise TaskStoreError("not an artifact reference")
        base = self.artifacts_dir
        if base.is_symlink():
            raise TaskStoreError("the artifact folder is a symlink")
        path = base / root_id / rel
        if not path.resolve().is_relative_to(base.resolve()):
            raise TaskStoreError("the artifact resolves outside the artifact folder")
        return path


def _checked_id(task_id: Any) -> str:
    if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        raise TaskStoreError("not a task id")
    return task_id


def _default_store(rt: ToolRuntime) -> TaskStore:
    return TaskStore(runtime_dir(rt))


_store_factory: Callable[[ToolRuntime], TaskStore] = _default_store


def set_store_factory(
    factory: Callable[[ToolRuntime], TaskStore] | None,
) -> Callable[[ToolRuntime], TaskStore]:
    """Choose how a run's :class:`TaskStore` is made (None: the default,
    below :func:`runtime_dir`); returns the previous factory. For hosts that
    keep task state elsewhere, and for tests."""
    global _store_factory
    previous = _store_factory
    _store_factory = factory if factory is not None else _default_store
    return previous


def store_for(rt: ToolRuntime) -> TaskStore:
    return _store_factory(rt)


# -- redacting a stream that arrives in pieces ---------------------------------------------


class StreamRedactor:
    """Exact-value redaction of one stream fed a piece at a time.

    A secret may be split between two pieces; redacting each piece alone
    would write both halves in clear. So each call emits only text that no
    later text can change: everything before the earliest point from which
    the rest of the text could still be the start of a known secret, extended
    to the end of a secret that straddles that point. The rest is held back
    and emitted with the next piece, or by ``final=True``. What is emitted
    over the stream equals the redaction of the whole stream, while never
    holding more than the longest secret less one character (and, in
    ordinary output, nothing at all).

    Each piece costs time linear in the piece plus what is held back (see
    :func:`charter.runtime.redact.find_secrets`): a megabyte arriving in
    small pieces is not scanned again for every piece.

    Secrets are those the run's :class:`Redactor` knows when the text is
    emitted; one learned later cannot reach back into text already written.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def _replacement(self, value: str) -> str:
        out = self._redactor.redact(value, "stored")
        if out == FAILED_MARKER or value in out:
            # Fail closed: the caller's write fails and the task with it.
            raise ValueError("a secret could not be redacted")
        return out

    def feed(self, text: str, *, final: bool = False) -> str:
        buf = self._pending + text
        # The known values, read as one snapshot: which of them the end of
        # the text may be the start of decides how much to hold back.
        ordered, _ = self._redactor.snapshot()
        if not ordered:
            self._pending = ""
            return buf
        cut = len(buf)
        if not final:
            for value in ordered:
                cut = min(cut, len(buf) - tail_overlap(buf, value))
        present = [v for v in ordered if v in buf]
        if len(present) == 1 and tail_overlap(present[0], present[0]) == 0:
            # One value whose occurrences cannot overlap (no end of it is also
            # its start): every occurrence is a match, replaced at string speed.
            value = present[0]
            end = cut
            last = buf.rfind(value, 0, cut + len(value) - 1)  # the last to start before the cut
            if last != -1:
                end = max(end, last + len(value))
            self._pending = buf[end:]
            return buf[:end].replace(value, self._replacement(value))
        parts: list[str] = []
        pos = 0
        markers: dict[str, str] = {}
        for start, end, value in find_secrets(buf, present):
            if start >= cut:
                break
            # A match starting before the cut is final: no secret starting
            # at or before it reaches past the end of ``buf``.
            parts.append(buf[pos:start])
            marker = markers.get(value)
            if marker is None:
                marker = markers[value] = self._replacement(value)
            parts.append(marker)
            pos = end
            cut = max(cut, pos)
        parts.append(buf[pos:cut])
        self._pending = buf[cut:]
        return "".join(parts)

    @property
    def pending(self) -> int:
        """How many characters are held back."""
        return len(self._pending)


class _TaskOutput:
    """The ``on_output`` sink of one task: decodes each stream, redacts it
    as a stream, appends it to the stream's artifact file and to the task
    log. Called from both drain threads, hence the lock. Any exception
    propagates to the drain, which stops calling it and has the tree
    stopped."""

    def __init__(
        self,
        redactor: Redactor,
        streams: Mapping[str, AppendFile],
        log: AppendFile,
    ) -> None:
        self._streams = dict(streams)
        self._log = log
        self._lock = threading.Lock()
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace") for name in streams
        }
        self._redactors = {name: StreamRedactor(redactor) for name in streams}
        self._offsets = dict.fromkeys(streams, 0)  # bytes written to each artifact file
        self._seq = 0
        self._started = time.monotonic()
        self._closed = False

    def __call__(self, stream: str, chunk: bytes) -> None:
        with self._lock:
            if self._closed:
                raise OSError("output arrived after the task's files were closed")
            text = self._decoders[stream].decode(chunk)
            self._emit(stream, self._redactors[stream].feed(text))

    def _emit(self, stream: str, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8")
        self._streams[stream].write(data)
        lines: list[bytes] = []
        offset = self._offsets[stream]
        t = round(time.monotonic() - self._started, 3)
        for i in range(0, len(text), LOG_ENTRY_CHARS):
            piece = text[i : i + LOG_ENTRY_CHARS]
            entry = {"seq": self._seq, "t": t, "stream": stream, "offset": offset, "text": piece}
            lines.append(json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")
            self._seq += 1
            offset += len(piece.encode("utf-8"))
        self._log.write(b"".join(lines))
        self._offsets[stream] += len(data)

    def finish(self) -> None:
        """Both pipes reached their end: flush what the decoders and the
        redactors held back, then sync every file to disk."""
        with self._lock:
            if self._closed:
                raise OSError("the task's files were already closed")
            for stream in self._streams:
                tail = self._decoders[stream].decode(b"", final=True)
                self._emit(stream, self._redactors[stream].feed(tail, final=True))
            for handle in (*self._streams.values(), self._log):
                handle.sync()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for handle in (*self._streams.values(), self._log):
                try:
                    handle.close()
                except OSError:
                    pass


# -- tasks -----------------------------------------------------------------------------------


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


def _request_cancel(task: Task) -> str:
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
    cancelled = [t for t in running if _request_cancel(t) in ("requested", "joined")]
    deadline = time.monotonic() + wait_s
    for task in running:
        task.done.wait(max(0.0, deadline - time.monotonic()))
    return len(cancelled)


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


# -- starting ------------------------------------------------------------------------


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

    output: _TaskOutput | None = None
    try:
        store = store_for(rt)
        task.store = store
        log = store.open_log(task.id)
        try:
            descriptor, streams = store.open_artifact(task.id, _run_identity())
        except BaseException:
            log.close()
            raise
        task.artifact = descriptor
        task.result_ref = _REF_PREFIX + str(descriptor["root"])
        output = _TaskOutput(rt.redactor, streams, log)
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
    how = _request_cancel(task)
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
