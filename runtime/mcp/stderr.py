"""A stdio server's stderr, kept through a bounded window into a private log.

The child writes into a pipe that a reader thread drains continuously (so a
chatty server never blocks on a full pipe), keeping only the last
:data:`WINDOW_BYTES`. When the connection closes, the last
:data:`WINDOW_CHARS` characters are redacted and appended to
``<log dir>/mcp-stderr.log``; the directory is created 0700 and the file
0600, because a server's error output often echoes its own configuration.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TextIO

from charter.runtime.redact import Redactor

__all__ = ["LOG_NAME", "WINDOW_CHARS", "StderrCapture", "append_private"]

LOG_NAME = "mcp-stderr.log"
WINDOW_CHARS = 12_000
# UTF-8 needs at most four bytes a character.
WINDOW_BYTES = WINDOW_CHARS * 4
_CHUNK = 65_536


def append_private(log_dir: Path, name: str, text: str) -> Path:
    """Append ``text`` to ``log_dir/name``, creating both privately."""
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix":
        os.chmod(log_dir, 0o700)
    path = log_dir / name
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        if os.name == "posix":
            os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8", errors="replace"))
    finally:
        os.close(fd)
    return path


class StderrCapture:
    """One server's stderr pipe. ``writer`` is what the child is given."""

    def __init__(self, server: str) -> None:
        self.server = server
        read_fd, write_fd = os.pipe()
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self._tail = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, name=f"mcp-stderr-{server}")
        self._thread.daemon = True
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = self._reader.read(_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            self._tail += chunk
            if len(self._tail) > WINDOW_BYTES:
                del self._tail[: len(self._tail) - WINDOW_BYTES]
        self._reader.close()

    def release_writer(self) -> None:
        """Drop the runtime's copy of the write end once the child has its
        own, so the reader sees end-of-file when the child exits."""
        if not self.writer.closed:
            self.writer.close()

    def window(self, wait: float = 2.0) -> str:
        """The last :data:`WINDOW_CHARS` characters written so far (waits up
        to ``wait`` seconds for the child's end of the pipe to close)."""
        self.release_writer()
        self._thread.join(wait)
        text = bytes(self._tail).decode("utf-8", errors="replace")
        return text[-WINDOW_CHARS:]

    def last_lines(self, redactor: Redactor, lines: int = 3, limit: int = 400) -> str:
        """The last few non-empty lines written, redacted and joined with
        ' | ', at most ``limit`` characters: what a console message quotes."""
        text = bytes(self._tail).decode("utf-8", errors="replace")
        kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        shown = redactor.redact(" | ".join(kept), "stored")
        return shown if len(shown) <= limit else "..." + shown[-(limit - 3) :]

    def flush_to(self, log_dir: Path, redactor: Redactor) -> Path | None:
        """Append the redacted window to the private log; None when the
        server wrote nothing."""
        text = self.window()
        if not text.strip():
            return None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        shown = redactor.redact(text, "stored")
        cut = " (earlier output dropped)" if self.total > len(text.encode()) else ""
        header = f"--- {self.server} {stamp}: last {len(text)} characters of stderr{cut} ---\n"
        body = shown if shown.endswith("\n") else shown + "\n"
        return append_private(log_dir, LOG_NAME, header + body)
