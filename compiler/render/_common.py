"""Pieces every renderer shares: ordering, counts, suppression marks, source lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from charter.compiler.diagnostics import Diagnostic, Severity

__all__ = [
    "SUPPRESSION_KEY",
    "Counts",
    "count",
    "exit_code",
    "ordered",
    "plural",
    "source_line",
    "suppression_kind",
    "tool_version",
]

# The key under which :mod:`charter.compiler.lint.suppress` records, in a
# diagnostic's ``data``, how the finding was silenced ("inline" or "config").
SUPPRESSION_KEY = "suppression"


def suppression_kind(d: Diagnostic) -> str | None:
    for key, value in d.data:
        if key == SUPPRESSION_KEY:
            return value
    return None


def ordered(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Severity (errors first), then file, position and code; duplicates removed. Every renderer
    goes through this so the same findings always print the same bytes."""
    return sorted(set(diags), key=Diagnostic.sort_key)


# A NamedTuple rather than a frozen dataclass: defined at every start-up,
# it costs a tenth as much to define.
class Counts(NamedTuple):
    """How many findings of each severity a report holds, plus the suppressed ones."""

    errors: int
    warnings: int
    notes: int
    suppressed: int

    def summary(self) -> str:
        """``Found 2 errors, 1 warning (3 suppressed).`` or ``All checks passed.``"""
        parts = [
            plural(n, word)
            for n, word in (
                (self.errors, "error"),
                (self.warnings, "warning"),
                (self.notes, "note"),
            )
            if n
        ]
        tail = f" ({self.suppressed} suppressed)" if self.suppressed else ""
        if not parts:
            return f"All checks passed{tail}."
        return f"Found {', '.join(parts)}{tail}."


def count(diags: Sequence[Diagnostic], suppressed: Sequence[Diagnostic]) -> Counts:
    kept = [d for d in set(diags) if suppression_kind(d) is None]
    return Counts(
        errors=sum(d.severity is Severity.ERROR for d in kept),
        warnings=sum(d.severity is Severity.WARNING for d in kept),
        notes=sum(d.severity is Severity.NOTE for d in kept),
        suppressed=len(set(suppressed)),
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def source_line(sources: Mapping[str, Sequence[str]], path: str, line: int) -> str | None:
    """Line ``line`` (1-based) of ``path`` without its terminator, if known."""
    lines = sources.get(path)
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1].rstrip("\r\n")


def tool_version() -> str:
    from charter.runtime.version import VERSION

    return VERSION


def exit_code(diagnostics: Iterable[Diagnostic], *, deny_warnings: bool) -> int:
    """0 when nothing fails the run, else 1.

    Errors always fail; warnings fail under ``deny_warnings``; notes never do.
    A suppressed finding never fails, even if a caller passes it here.
    """
    for d in diagnostics:
        if suppression_kind(d) is not None:
            continue
        if d.severity is Severity.ERROR:
            return 1
        if d.severity is Severity.WARNING and deny_warnings:
            return 1
    return 0
