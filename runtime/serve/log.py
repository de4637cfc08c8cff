"""The decision server's log: one JSON line per decision, secrets redacted.

A decision is on disk before its answer is sent: a server killed at any
moment (kill -9 included) has logged every answer a client received. Lines
are written by a thread of their own with group commit: it takes every line
queued while the previous fsync ran, writes them, and makes them durable
with one fsync, so under load the cost of a sync is shared by every request
waiting on it. The queue is bounded; when it is full the request thread
waits, so no decision goes unlogged.

What a line holds: when, which endpoint, the peer's session id, the tool, the
decision and its reason, the plan's digest, how long the decision took, and
the sha256 of the redacted arguments (never the arguments). Every text is
redacted first: credential-looking environment variables of the server, and
whatever the call's own arguments reveal (an ``Authorization:`` header in a
command, a ``--token=`` option, a URL's password) are replaced with
``<redacted:NAME@SOURCE>``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from charter.runtime.audit import AuditLog, args_digest
from charter.runtime.redact import Redactor

__all__ = ["DecisionLog", "LinePreparer", "LineWork", "Lines", "enqueue"]

_MAX_PREVIEW = 300
# How long a putter sleeps between looks for room in a full queue.
_ROOM_WAIT_S = 0.001
# Lines made durable by one fsync, at most.
_MAX_BATCH = 512
# When the log is rotated, and how many old files are kept.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_KEEP = 5
ROTATED = "log_rotated"
CONTINUED = "log_continued"


# What works out a line's fields and arguments, off the caller's thread.
LineWork = Callable[[], tuple[dict[str, Any], Any]]


@dataclass(slots=True, eq=False)
class _Line:
    """One queued line, and whether it reached the disk."""

    event: str
    fields: dict[str, Any]
    args: Any
    # fields and args worked out by the writer thread (reading an event
    # costs time the caller's thread may not have to give)
    later: LineWork | None = None
    # fields already redacted into what the log holds (by a worker's link,
    # see LinePreparer), written as they are
    prepared: bool = field(default=False, kw_only=True)
    # how much the work of preparing it reads (the event's bytes): a
    # worker's link prepares a large line off its event loop
    size: int = field(default=0, kw_only=True)
    finished: bool = field(default=False, init=False)
    ok: bool = field(default=False, init=False)
    _callbacks: list[Callable[[bool], None]] = field(default_factory=list, init=False)
    _waiter: threading.Event | None = field(default=None, init=False)  # for a blocking wait

    # One lock for every line: a line is finished once, by the one writer,
    # and a lock (with an event) of its own cost more than the rest of
    # queueing it, at every request under load.
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def durable(self, timeout: float) -> bool:
        """Whether the line is on disk, waiting at most ``timeout`` seconds."""
        with _Line._guard:
            if self.finished:
                return self.ok
            if self._waiter is None:
                self._waiter = threading.Event()
            waiter = self._waiter
        return waiter.wait(timeout) and self.ok

    def add_done_callback(self, fn: Callable[[bool], None]) -> None:
        """Call ``fn(on_disk)`` once the writer is done with the line (at once
        when it already is), from the writer's thread."""
        with _Line._guard:
            if not self.finished:
                self._callbacks.append(fn)
                return
        fn(self.ok)

    def finish(self, ok: bool) -> None:
        with _Line._guard:
            self.ok = ok
            self.finished = True
            callbacks, self._callbacks = self._callbacks, []
            waiter = self._waiter
        if waiter is not None:
            waiter.set()
        for fn in callbacks:
            try:
                fn(ok)
            except Exception as exc:  # noqa: BLE001 - the writer thread must go on
                print(f"charter serve: a log callback failed: {exc!r}", file=sys.stderr)


class Lines:
    """A bounded queue of lines between threads.

    ``queue.Queue`` keeps its bound with condition variables written in
    Python, and under load notifying them cost more than the rest of
    queueing a line; here puts and gets are ``queue.SimpleQueue``'s (in C)
    and the putter keeps the bound, waiting (rarely: the writer is that far
    behind) in short sleeps.
    """

    __slots__ = ("_q", "bound")

    def __init__(self, bound: int) -> None:
        self._q: queue.SimpleQueue[_Line | None] = queue.SimpleQueue()
        self.bound = bound

    def put(self, line: _Line, *, block: bool = True) -> bool:
        """Queue ``line``; False (not queued) when the queue is full and
        ``block`` is False, else wait for room."""
        while self._q.qsize() >= self.bound:
            if not block:
                return False
            time.sleep(_ROOM_WAIT_S)
        self._q.put(line)
        return True

    def end(self) -> None:
        """Queue the end mark (past the bound: closing never waits)."""
        self._q.put(None)

    def get(self) -> _Line | None:
        return self._q.get()

    def get_nowait(self) -> _Line | None:
        """The next line; raises ``queue.Empty`` when there is none."""
        return self._q.get_nowait()

    def empty(self) -> bool:
        return self._q.empty()


def enqueue(q: Lines, line: _Line, block: bool, counter: list[int]) -> _Line:
    """Queue ``line``; when ``block`` is False and the queue is full, drop it
    (it is finished as not written) and count it: a line about a request
    refused before any decision, which a client without the token could send
    as fast as it likes, never holds up the event loop or the decisions."""
    if q.put(line, block=block):
        return line
    counter[0] += 1
    if counter[0] == 1 or counter[0] % 1000 == 0:
        print(f"charter serve: the decision log is behind; {counter[0]} refusals of "
              "requests not decided were not logged", file=sys.stderr)  # fmt: skip
    line.finish(False)
    return line


class DecisionLog:
    """Append decision records to ``path`` from a background thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        env: Mapping[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
        start: bool = True,
    ) -> None:
        """Open (and lock) the log; with ``start`` False the writer thread is
        started by :meth:`start` (a server that forks workers forks first:
        no thread may run in a process that forks)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.keep = max(1, keep)
        # One server per log: two appending to one file would interleave two
        # sessions into one chain. The lock (on a file beside the log, which
        # rotation leaves in place) lives as long as the server.
        lock = self.path.with_name(self.path.name + ".lock")
        self._lock_fd = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise OSError(
                errno.EBUSY,
                "another charter serve is writing this decision log; give this one its own --log",
            ) from None
        self._log = AuditLog(self.path)
        self.preparer = LinePreparer(os.environ if env is None else env)
        self._queue = Lines(1024)
        self._after_commit: list[Callable[[], None]] = []
        self.dropped = [0]  # lines dropped rather than waited for (see enqueue)
        self._thread = threading.Thread(target=self._run, name="charter-serve-log", daemon=True)
        if start:
            self._thread.start()

    def record(
        self, event: str, fields: dict[str, Any], *, args: Any = None, prepared: bool = False
    ) -> _Line:
        """Queue one line; ``args`` (the call's arguments) only serve to find
        secrets and to compute the digest, and are never written (``prepared``:
        the fields are :meth:`LinePreparer.prepare`'s already). Wait on the
        returned line (:meth:`_Line.durable`) before answering."""
        line = _Line(event, fields, args, prepared=prepared)
        self._queue.put(line)
        return line

    def record_later(
        self, event: str, work: LineWork, *, block: bool = True, size: int = 0
    ) -> _Line:
        """:meth:`record`, with the fields and arguments worked out by
        ``work()`` in the writer thread (``block`` False: see :func:`enqueue`;
        ``size``: how many bytes ``work`` reads)."""
        line = _Line(event, {}, None, work, size=size)
        return enqueue(self._queue, line, block, self.dropped)

    def after_commit(self, hook: Callable[[], None]) -> None:
        """Call ``hook()`` from the writer after each group commit, once
        every line in it is finished (callbacks told)."""
        self._after_commit.append(hook)

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def forget(self) -> None:
        """In a forked worker: close this process's copies of the log's file
        and lock without writing anything (the owner keeps both)."""
        self._log.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # the owner's descriptor still holds the lock
            self._lock_fd = -1

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.end()
            self._thread.join(timeout=10)
        self._log.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # (releases the lock)
            self._lock_fd = -1

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:  # close()
                return
            batch = [first]
            stop = False
            while len(batch) < _MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            written: list[_Line] = []
            for line in batch:
                try:
                    if line.later is not None:
                        line.fields, line.args = line.later()
                    self._write(line)
                    written.append(line)
                except Exception as exc:  # noqa: BLE001 - a log failure must not stop the server
                    # ... but it must not pass unseen: the line's answer waits on it
                    print(f"charter serve: a decision log line was lost: {exc}", file=sys.stderr)
                    line.finish(False)
            synced = False
            try:
                self._log.sync()
                synced = True
            except OSError as exc:
                print(f"charter serve: the decision log was not synced: {exc}", file=sys.stderr)
            for line in written:
                line.finish(synced)
            for hook in self._after_commit:
                try:
                    hook()
                except Exception as exc:  # noqa: BLE001 - the writer thread must go on
                    print(f"charter serve: a log commit hook failed: {exc!r}", file=sys.stderr)
            if written:
                self._rotate_if_full()
            if stop:
                return

    def _rotate_if_full(self) -> None:
        """Past ``max_bytes``, the log is closed with ``log_rotated`` and kept
        as ``<name>.1`` (older ones shift up; past ``keep`` they are deleted),
        and a new file starts with ``log_continued``, naming the old head, so
        the chain is followed across files. A log never grows without bound."""
        try:
            if self.path.stat().st_size < self.max_bytes:
                return
            self._log.write(ROTATED, sync=True, next=self.path.name)
            head = self._log.head
            self._log.close()
            for n in range(self.keep, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{n}")
                if n == self.keep:
                    older.unlink(missing_ok=True)
                elif older.exists():
                    older.rename(self.path.with_name(f"{self.path.name}.{n + 1}"))
            self.path.rename(self.path.with_name(f"{self.path.name}.1"))
            self._log = AuditLog(self.path)
            self._log.write(CONTINUED, sync=True, previous=f"{self.path.name}.1", head=head)
        except Exception as exc:  # noqa: BLE001 - the writer thread must outlive it
            print(f"charter serve: the decision log was not rotated: {exc}", file=sys.stderr)

    def _write(self, line: _Line) -> None:
        fields = line.fields if line.prepared else self.preparer.prepare(line.fields, line.args)
        self._log.write(line.event, sync=False, **fields)


class LinePreparer:
    """What a decision's fields become in the log: every text redacted
    (the server's credential-looking environment variables, and whatever the
    call's own arguments reveal), the arguments replaced by their digest and
    a short preview.

    The work is per line and needs nothing but the line, so with ``--workers``
    each worker's link does it for its own lines, in parallel, and the one
    writer only chains and writes them (measured under load: the writer's
    process went from about 80 to 44 us of CPU per decision)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        base = Redactor()
        base.add_env(env)
        _, self._base = base.snapshot()

    def prepare(self, fields: Mapping[str, Any], args: Any) -> dict[str, Any]:

        redactor = Redactor()
        for value, (name, source) in self._base.items():
            redactor.add(value, name, source)
        if args is not None:
            redactor.discover_value(args)
        if not redactor.known:
            # nothing to hide: every text stays as it is (redact() would
            # return each one unchanged, taking a lock and a copy per text)
            plain = dict(fields)
            if isinstance(args, dict):
                plain["args"] = args_digest(args)
                preview = _preview(args)
                if preview:
                    plain["input"] = preview
            return plain

        def clean(value: Any) -> Any:
            if isinstance(value, str):
                return redactor.redact(value, "stored")
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [clean(v) for v in value]
            return value

        out = {k: clean(v) for k, v in fields.items()}
        if isinstance(args, dict):
            out["args"] = args_digest(args, lambda t: redactor.redact(t, "stored"))
            preview = _preview(args)
            if preview:
                out["input"] = clean(preview)
        return out


def _preview(args: Mapping[str, Any]) -> str:
    """The part of a call a reader of the log wants first: its command, path
    or URL (redacted by the caller, cut to a few hundred characters)."""
    for key in ("command", "file_path", "notebook_path", "path", "url", "dir_path", "pattern"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value if len(value) <= _MAX_PREVIEW else value[:_MAX_PREVIEW] + "..."
    return ""
