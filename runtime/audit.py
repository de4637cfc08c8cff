"""The audit log: one JSON object per line for every decision and execution.

Each event is written with a single ``write`` to a file opened for appending,
then flushed and ``fsync``-ed before the call goes on, so a run killed
outright (SIGKILL, power loss after the sync) leaves every finished event
readable; at worst the one line being written is torn, and
:func:`read_events` skips a torn last line and says so.

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
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "AUDIT_VERSION",
    "AuditLog",
    "AuditRead",
    "args_digest",
    "read_events",
]

AUDIT_VERSION = 1
_MAX_TEXT = 1000


def args_digest(args: Mapping[str, Any], redact: Callable[[str], str] | None = None) -> str:
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    if redact is not None:
        text = redact(text)
    # surrogatepass: a lone surrogate (refused by the gates, but still logged)
    # must give a digest, not an exception.
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Append-only JSON-lines log, durable per event. ``redact`` is applied to
    every free-text field (reasons name paths and commands)."""

    def __init__(self, path: str | Path, *, redact: Callable[[str], str] | None = None) -> None:
        self.path = Path(path)
        self._redact = redact
        self._lock = threading.Lock()
        # O_APPEND: concurrent writers (two runs sharing a log) never interleave
        # inside one event, because each event is a single write call.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            text = self._redact(value) if self._redact is not None else value
            return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
        if isinstance(value, dict):
            return {k: self._clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._clean(v) for v in value]
        return value

    def write(self, event: str, **fields: Any) -> None:
        record = {"v": AUDIT_VERSION, "ts": _now(), "event": event}
        record.update({k: self._clean(v) for k, v in fields.items() if v is not None})
        line = (
            json.dumps(record, ensure_ascii=False, sort_keys=False, default=str) + "\n"
        ).encode()
        with self._lock:
            if self._fd < 0:
                raise ValueError("audit log is closed")
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
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
