"""The durable state of background tasks, below a run's runtime directory
(see :func:`runtime_dir`):

* ``tasks/<task_id>.json``: the task record, replaced atomically and synced
  at each change of state (running, cancelling, then its terminal state);
* ``tasks/<task_id>.log.jsonl``: the task log, one line per bounded piece of
  output as it is drained (stream, time, text);
* ``artifacts/<root>/stdout.txt`` and ``stderr.txt``: the complete streams,
  written as they are drained. ``<root>`` is opaque, derived from the run's
  identity and the task id; the record's ``result_ref`` names it.

Folders are private (0700) and files too (0600, created new, never through
a symlink); a folder that is a symlink or leads outside the runtime
directory is refused, not followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.atomic import fsync_dir, write_atomic
from charter.runtime.errors import CharterError
from charter.runtime.tools.base import current_session

if TYPE_CHECKING:
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "STREAM_FILES",
    "AppendFile",
    "TaskStore",
    "TaskStoreError",
    "artifact_ref",
    "artifact_root",
    "run_identity",
    "runtime_dir",
    "set_store_factory",
    "store_for",
]

# Where each stream of a task's artifact lives, relative to its opaque root.
STREAM_FILES: Mapping[str, str] = {"stdout": "stdout.txt", "stderr": "stderr.txt"}

_TASK_ID = re.compile(r"task_[0-9a-f]{12}")
_ROOT_ID = re.compile(r"[0-9a-f]{32}")
_REF_PREFIX = "artifact:"
# A run id that can name a directory of its own (charter run's are
# 20250101-120000-abc123).
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_POSIX = os.name == "posix"


class TaskStoreError(CharterError, OSError):
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
    base = Path(rt.workspace) / ".charter"
    session = current_session()
    run_id = session.run_id if session is not None else ""
    if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id):
        return base / "runs" / run_id / "runtime"
    return base / "runtime"


def run_identity() -> str:
    """The calling run's id (empty outside a run): part of what names its
    artifacts."""
    session = current_session()
    run_id = session.run_id if session is not None else ""
    return run_id if isinstance(run_id, str) else ""


def artifact_root(identity: str, task_id: str) -> str:
    """The opaque folder name of a task's artifact: derived from the run's
    identity and the task id, so it names no path a caller chose."""
    digest = hashlib.sha256(f"charter-task-artifact\0{identity}\0{task_id}".encode())
    return digest.hexdigest()[:32]


def artifact_ref(root_id: str) -> str:
    """The opaque ``result_ref`` that names the artifact below ``root_id``."""
    return _REF_PREFIX + root_id


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
