"""Reading configuration files as text, with the checks every format shares."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.rules import diag

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "SourceText", "read_source"]

# Agent configuration is a few kilobytes; the cap keeps a hostile or broken
# file from costing memory and time.
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NESTING = 64


# A NamedTuple rather than a frozen dataclass: defined at every start-up,
# it costs a tenth as much to define.
class SourceText(NamedTuple):
    """A file's decoded text with its real path and its display path."""

    path: Path
    display: str  # path relative to the project root, with forward slashes
    text: str


def read_source(path: Path, display: str) -> tuple[SourceText | None, list[Diagnostic]]:
    span = Span(display, 1, 1)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, [
                diag(
                    "file-too-large",
                    f"file is {size} bytes; the limit is {MAX_FILE_BYTES} bytes",
                    span,
                )
            ]
        raw = path.read_bytes()
    except OSError as exc:
        return None, [diag("file-unreadable", f"cannot read file: {exc.strerror or exc}", span)]
    if len(raw) > MAX_FILE_BYTES:  # the file grew between stat and read
        return None, [diag("file-too-large", f"file exceeds {MAX_FILE_BYTES} bytes", span)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            diag(
                "file-not-utf8",
                f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid UTF-8",
                Span(display, line, col),
            )
        ]
    if text.startswith("\ufeff"):
        text = text[1:]
    if not _has_content(text):
        return None, [diag("empty-file", "file is empty", span)]
    return SourceText(path, display, text), []


def _has_content(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped != "---":
            return True
    return False
