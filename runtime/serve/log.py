"""The decision server's log: one JSON line per decision, secrets redacted.

Lines are written by a thread of their own, after the answer has been sent,
so a slow disk never delays an answer (each line is still ``fsync``-ed, as
the audit log's are: :class:`charter.runtime.audit.AuditLog` writes them).
The queue is bounded; when it is full the request thread waits, so no
decision goes unlogged.

What a line holds: when, which endpoint, the peer's session id, the tool, the
decision and its reason, the plan's digest, how long the decision took, and
the sha256 of the redacted arguments (never the arguments). Every text is
redacted first: credential-looking environment variables of the server, and
whatever the call's own arguments reveal (an ``Authorization:`` header in a
command, a ``--token=`` option, a URL's password) are replaced with
``<redacted:NAME@SOURCE>``.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["DecisionLog"]

_MAX_PREVIEW = 300


class DecisionLog:
    """Append decision records to ``path`` from a background thread."""

    def __init__(self, path: str | Path, *, env: Mapping[str, str] | None = None) -> None:
        from charter.runtime.audit import AuditLog
        from charter.runtime.redact import Redactor

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._log = AuditLog(self.path)
        base = Redactor()
        base.add_env(os.environ if env is None else env)
        _, self._base = base.snapshot()
        self._queue: queue.Queue[tuple[str, dict[str, Any], Any] | None] = queue.Queue(maxsize=1024)
        self._thread = threading.Thread(target=self._run, name="charter-serve-log", daemon=True)
        self._thread.start()

    def record(self, event: str, fields: dict[str, Any], *, args: Any = None) -> None:
        """Queue one line; ``args`` (the call's arguments) only serve to find
        secrets and to compute the digest, and are never written."""
        self._queue.put((event, fields, args))

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._log.close()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:  # close()
                return
            event, fields, args = item
            try:
                self._write(event, fields, args)
            except Exception as exc:  # noqa: BLE001 - a log failure must not stop the server
                # ... but it must not pass unseen either: a lost line is said on stderr
                print(f"charter serve: a decision log line was lost: {exc}", file=sys.stderr)
                continue

    def _write(self, event: str, fields: dict[str, Any], args: Any) -> None:
        from charter.runtime.audit import args_digest
        from charter.runtime.redact import Redactor

        redactor = Redactor()
        for value, (name, source) in self._base.items():
            redactor.add(value, name, source)
        if args is not None:
            redactor.discover_value(args)

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
        self._log.write(event, **out)


def _preview(args: Mapping[str, Any]) -> str:
    """The part of a call a reader of the log wants first: its command, path
    or URL (redacted by the caller, cut to a few hundred characters)."""
    for key in ("command", "file_path", "notebook_path", "path", "url", "dir_path", "pattern"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value if len(value) <= _MAX_PREVIEW else value[:_MAX_PREVIEW] + "..."
    return ""
