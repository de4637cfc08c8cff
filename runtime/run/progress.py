"""How far a running tool call has got, for the live view.

A :class:`Meter` is fed every chunk a foreground command writes (through
``ToolRuntime.progress``) from the command's reader threads. It keeps counts
and a small window of the latest output, never the output itself, and the
loop reads a :meth:`Meter.snapshot` about once a second to emit a
``tool_progress`` event: elapsed time, bytes and lines so far, and the last
line, redacted for the operator and stripped of control characters (a
command's escape sequences must not drive the terminal that watches it).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from charter.runtime.redact import Redactor

__all__ = ["Meter", "Snapshot"]

_WINDOW = 4096  # bytes of the latest output kept to find its last line
_LINE = 160  # characters of that line shown
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Snapshot:
    output_bytes: int
    output_lines: int
    last_line: str


class Meter:
    """Counts and the latest window of a call's output. Thread-safe; feeding
    never raises (a failing meter must not stop the command it watches)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._lock = threading.Lock()
        self._bytes = 0
        self._lines = 0
        self._window = bytearray()
        self.waiting = False  # an approval prompt is open for this call

    def feed(self, stream: str, chunk: bytes) -> None:
        """A chunk of ``stream`` (stdout or stderr), as run_command reads it."""
        try:
            with self._lock:
                self._bytes += len(chunk)
                self._lines += chunk.count(b"\n")
                self._window += chunk
                if len(self._window) > _WINDOW:
                    del self._window[: len(self._window) - _WINDOW]
        except Exception:  # noqa: BLE001 - progress is a nicety, the command is not
            pass

    def snapshot(self) -> Snapshot:
        with self._lock:
            total, lines, window = self._bytes, self._lines, bytes(self._window)
        text = window.decode("utf-8", errors="replace")
        if total > len(window) and "\n" in text:
            text = text.split("\n", 1)[1]  # a line cut by the window is not shown
        try:
            shown = self._redactor.redact_cut(text, "operator")
        except Exception:  # noqa: BLE001 - hide, never show raw
            shown = ""
        candidates = [line for line in shown.splitlines() if line.strip()]
        last = _CONTROL.sub("", candidates[-1]).strip() if candidates else ""
        if len(last) > _LINE:
            last = last[: _LINE - 1] + "…"
        return Snapshot(total, lines, last)
