"""The audit log: one JSON object per line for every decision and execution.

Each event is written with a single ``write`` to a file opened for appending,
then flushed and ``fsync``-ed before the call goes on, so a run killed
outright (SIGKILL, power loss after the sync) leaves every finished event
readable; at worst the one line being written is torn, and
:func:`read_events` skips a torn last line and says so.

The log is tamper-evident. Every event carries ``prev_hash``, the ``hash``
of the event before it (:data:`GENESIS` for the first), and its own
``hash``: the sha256 of its canonical JSON without ``hash``. Editing,
removing or reordering an event breaks the chain at that line. Cutting off
the end cannot break a chain, so a run's log is sealed: its last event is
``run_finished``, and :func:`verify_log` treats a log that does not end with
one as truncated (a run killed outright leaves exactly that). Anyone able to
rewrite the whole file can recompute every hash, so the final hash is also
reported elsewhere (the ``run_finished`` event of the event stream carries it
as ``audit_hash``) for a reader who wants to compare.

Arguments are never logged. An event carries the sha256 of the *redacted*
canonical arguments: enough to tell two calls apart or match a call against
another record, and nothing a reader could recover a secret from.

An event for a shell call also carries ``executables``: ``{"shell": path,
"command": path or null}``, the resolved shell and, best effort, the file the
command's first program runs from (null when that cannot be told without
running it, e.g. ``$CMD``). A decision event names what was resolved before
the call ran; an execution event what the shell tool itself resolved.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "AUDIT_VERSION",
    "GENESIS",
    "SEAL_EVENT",
    "AuditLog",
    "AuditRead",
    "Verification",
    "args_digest",
    "event_hash",
    "read_events",
    "verify_log",
]

# 2: every event carries prev_hash and hash (the chain described above).
AUDIT_VERSION = 2
GENESIS = "sha256:" + "0" * 64
SEAL_EVENT = "run_finished"
# charter serve's decision log: each server session ends with SERVE_SEAL, and
# the next one that appends to the same file begins with SERVE_START
SERVE_SEAL = "serve_stopped"
SERVE_START = "serve_started"
# ... and a decision log that grew past its bound ends with LOG_ROTATED (its
# successor begins with log_continued, naming this file's head)
LOG_ROTATED = "log_rotated"
_CHAIN_KEYS = ("prev_hash", "hash")
_MAX_TEXT = 1000
# A lone surrogate cannot be encoded as UTF-8; such a line is written with
# JSON escapes instead (ASCII), which reads back as the same value.
_SURROGATE = re.compile("[\ud800-\udfff]")


def args_digest(args: Mapping[str, Any], redact: Callable[[str], str] | None = None) -> str:
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    if redact is not None:
        text = redact(text)
    # surrogatepass: a lone surrogate (refused by the gates, but still logged)
    # must give a digest, not an exception.
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def event_hash(record: Mapping[str, Any]) -> str:
    """The chain hash of one event: sha256 of its canonical JSON (sorted
    keys, compact, ASCII) without its own ``hash``."""
    body = {k: v for k, v in record.items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Append-only JSON-lines log, durable per event. ``redact`` is applied to
    every free-text field (reasons name paths and commands)."""

    def __init__(self, path: str | Path, *, redact: Callable[[str], str] | None = None) -> None:
        self.path = Path(path)
        self._redact = redact
        self._lock = threading.Lock()
        # O_APPEND: each event is a single write call, so a reader never sees
        # half of one. One writer per log: the chain follows write order.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if os.name == "posix":
            os.fchmod(self._fd, 0o600)  # whatever the umask, or an older file's mode
        self._last = _last_hash(self.path)

    @property
    def head(self) -> str:
        """The hash of the last event written (GENESIS before the first)."""
        with self._lock:
            return self._last

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            text = self._redact(value) if self._redact is not None else value
            return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
        if isinstance(value, dict):
            return {str(k): self._clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._clean(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        # Plain JSON only, so that the hash of what is written is the hash of
        # what a reader parses back.
        return self._clean(str(value))

    def write(self, event: str, *, sync: bool = True, **fields: Any) -> None:
        """Append one event; with ``sync=False`` it is not yet on disk: a
        writer that groups many calls makes them durable at once with
        :meth:`sync`."""
        for key in _CHAIN_KEYS:
            if key in fields:
                raise ValueError(f"{key!r} is the audit chain's own field")
        record: dict[str, Any] = {"v": AUDIT_VERSION, "ts": _now(), "event": event}
        record.update({k: self._clean(v) for k, v in fields.items() if v is not None})
        with self._lock:
            if self._fd < 0:
                raise ValueError("audit log is closed")
            record["prev_hash"] = self._last
            record["hash"] = event_hash(record)
            text = json.dumps(record, ensure_ascii=False)
            if _SURROGATE.search(text):
                text = json.dumps(record, ensure_ascii=True)
            view = memoryview((text + "\n").encode("utf-8"))
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            if sync:
                os.fsync(self._fd)
            self._last = record["hash"]

    def sync(self) -> None:
        """Make every event written so far durable (one fsync for all)."""
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class AuditRead:
    events: list[dict[str, Any]]
    problems: list[str]


def read_events(path: str | Path) -> AuditRead:
    """Every readable event of a log. A line that is not a JSON object is
    reported (with its line number) and skipped; a torn last line is the
    expected trace of a killed run."""
    events: list[dict[str, Any]] = []
    problems: list[str] = []
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            last = n == len(lines) and not data.endswith(b"\n")
            problems.append(
                f"line {n}: "
                + (
                    "incomplete last event (the run was stopped while writing it)"
                    if last
                    else "not a JSON event"
                )
            )
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {n}: not a JSON object")
            continue
        events.append(obj)
    return AuditRead(events, problems)


def _last_hash(path: Path) -> str:
    """Where the chain of an existing log left off, so that reopening a log
    continues it; GENESIS for a new or empty one."""
    try:
        size = path.stat().st_size
        if size == 0:
            return GENESIS
        with path.open("rb") as fh:
            fh.seek(max(0, size - 64 * 1024))
            tail = fh.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        value = json.loads(tail.decode("utf-8")).get("hash")
    except (OSError, ValueError, AttributeError):
        return GENESIS  # unreadable: verify_log reports the break
    return value if isinstance(value, str) else GENESIS


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of :func:`verify_log`: ``ok`` and the number of events, or
    the first bad line (1-based) and what is wrong there. ``head`` is the
    hash of the last event whose chain holds."""

    ok: bool
    events: int
    head: str
    line: int | None = None
    problem: str = ""


def verify_log(path: str | Path) -> Verification:
    """Check a log's hash chain and its seal, line by line; linear in its size.

    Bad: a line that is not a JSON event, an event without the chain fields
    (an older format), a ``prev_hash`` that is not the previous event's hash
    (an event removed, inserted or moved), a ``hash`` that does not match the
    event (edited), an event after the seal, or no seal at the end (cut off,
    or the run was killed before it ended). Raises OSError when the file
    cannot be read.
    """
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    prev = GENESIS
    count = 0
    sealed_at: int | None = None
    sealed_by = SEAL_EVENT

    def bad(n: int, problem: str) -> Verification:
        return Verification(False, count, prev, n, problem)

    for n, raw in enumerate(lines, 1):
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            torn = n == len(lines) and not data.endswith(b"\n")
            return bad(n, "a torn last line (cut off while written)" if torn else "not JSON")
        if not isinstance(record, dict):
            return bad(n, "not a JSON object")
        if sealed_at is not None:
            if sealed_by == SERVE_SEAL and record.get("event") == SERVE_START:
                # a decision log: the next server session continues the chain
                sealed_at = None
            else:
                what = {SEAL_EVENT: "the run's end", LOG_ROTATED: "the log's rotation"}.get(
                    sealed_by, "the server's stop"
                )
                return bad(n, f"an event after {what} ({sealed_by} on line {sealed_at})")
        if "hash" not in record or "prev_hash" not in record:
            return bad(n, "no hash chain (an older log format, or a line added by hand)")
        if record["prev_hash"] != prev:
            return bad(
                n,
                "the chain is broken: prev_hash is not the hash of the event before it "
                "(an event was removed, inserted or moved)",
            )
        if event_hash(record) != record["hash"]:
            return bad(n, "the event does not match its hash (it was edited)")
        prev = record["hash"]
        count += 1
        if record.get("event") in (SEAL_EVENT, SERVE_SEAL, LOG_ROTATED):
            sealed_at, sealed_by = n, str(record["event"])
    if sealed_at is None:
        return bad(
            len(lines) + 1,
            f"the log ends without {SEAL_EVENT} (or, for charter serve's decision log, "
            f"{SERVE_SEAL}): it was cut off, or its writer was killed before it ended",
        )
    return Verification(True, count, prev)
