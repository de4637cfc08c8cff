"""The one diagnostic type every part of the compiler reports through.

Loading and validation never raise on user input: each problem becomes a
:class:`Diagnostic` and the caller keeps going, so one run reports every
problem in every file. Rule codes, names and docs live in
:mod:`charter.compiler.rules`; this module only holds the value types.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "Diagnostic",
    "Severity",
    "Span",
    "did_you_mean",
    "format_key_path",
    "has_errors",
    "sort_diagnostics",
    "suggestion",
]


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "note": 2}[self.value]


# Span and Diagnostic are NamedTuples, not frozen dataclasses: they are
# defined at every start-up, and a NamedTuple costs a tenth as much to define.
class Span(NamedTuple):
    """A region of a file. Lines and columns are 1-based; ends are inclusive
    of the last line and exclusive of the end column, like most editors."""

    path: str
    line: int = 1
    col: int = 1
    end_line: int | None = None
    end_col: int | None = None

    def with_path(self, path: str) -> Span:
        return Span(path, self.line, self.col, self.end_line, self.end_col)

    @property
    def end(self) -> tuple[int, int]:
        return (self.end_line or self.line, self.end_col or self.col)


KeyPart = str | int


def format_key_path(parts: Sequence[KeyPart]) -> str:
    """Render ``("stages", "plan", "available_tools", 2)`` as
    ``stages.plan.available_tools[2]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            needs_quotes = not text or any(c in text for c in ".[] \"'")
            piece = '"' + text.replace('"', '\\"') + '"' if needs_quotes else text
            out += piece if not out else "." + piece
    return out


class Diagnostic(NamedTuple):
    """One finding: a rule's code and name, its severity, what is wrong, and where."""

    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    key_path: str = ""
    help: str | None = None
    # Extra machine-readable facts (for example the decision a clamp produced);
    # kept as sorted pairs so the value stays hashable and frozen.
    data: tuple[tuple[str, str], ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[int, str, int, int, str, str]:
        """Errors first, then warnings, then notes; within each, by place.
        The real problem is what a reader must see first, not a note that
        happens to sit in an earlier file."""
        return (
            self.severity.rank,
            self.span.path,
            self.span.line,
            self.span.col,
            self.code,
            self.message,
        )


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Severity (errors first), then file, position and code; duplicates removed."""
    return sorted(set(diags), key=Diagnostic.sort_key)


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diags)


_LOOKALIKES = str.maketrans({"O": "0", "o": "0", "l": "1", "I": "1"})


def suggestion(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when a candidate is a likely typo of
    ``word`` (see :func:`did_you_mean`), else nothing: a message's tail."""
    hint = did_you_mean(word, candidates)
    return f"; did you mean '{hint}'?" if hint else ""


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate, if any is close enough to be a likely typo."""
    pool = sorted(set(candidates))
    import difflib  # only when a name is unknown

    # A letter typed for the digit it looks like (CH2O1 for CH201) is the
    # likeliest typo of all; scores alone cannot tell it from a near code.
    lookalike = word.translate(_LOOKALIKES)
    if lookalike != word and lookalike in pool:
        return lookalike
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    lowered = {c.lower(): c for c in pool}
    return lowered.get(word.lower())
