"""The catalog itself: what a rule is, the one registry every group module
fills, and :func:`diag`, which turns a rule's name into a diagnostic.

Kept apart from the group modules so each of them can import
:func:`register` without importing the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from charter.compiler.diagnostics import Diagnostic, Severity, Span, format_key_path
from charter.compiler.errors import CompilerBug

if TYPE_CHECKING:
    from charter.compiler.sources.sourcemap import SourceMap

__all__ = [
    "RULES",
    "E",
    "N",
    "Rule",
    "W",
    "by_name",
    "diag",
    "diag_at",
    "has_rule",
    "register",
    "rule",
]


# A NamedTuple rather than a frozen dataclass: defined at every start-up,
# it costs a tenth as much to define.
class Rule(NamedTuple):
    """A lint rule: stable code, kebab-case name, default severity and its four-part doc."""

    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    example: str
    fix: str


RULES: dict[str, Rule] = {}
_BY_NAME: dict[str, Rule] = {}

# Shorthands for the group modules' register calls.
E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE


def register(
    code: str, name: str, severity: Severity, summary: str, why: str, example: str, fix: str
) -> None:
    """Add one rule. A code or a name used twice is a bug in Charter itself:
    codes are stable forever, so a clash must never reach a release."""
    if code in RULES or name in _BY_NAME:
        raise CompilerBug(f"rule {code} {name} registered twice")
    r = Rule(code, name, severity, summary, why, example, fix)
    RULES[code] = r
    _BY_NAME[name] = r


def rule(code: str) -> Rule:
    return RULES[code]


def by_name(name: str) -> Rule:
    return _BY_NAME[name]


def has_rule(name: str) -> bool:
    """Whether ``name`` is the kebab name of a rule (pydantic error types
    that name one become that rule's diagnostic)."""
    return name in _BY_NAME


def diag(
    name: str,
    message: str,
    span: Span,
    *,
    key_path: str = "",
    help: str | None = None,
    severity: Severity | None = None,
    data: dict[str, str] | None = None,
) -> Diagnostic:
    """Build a diagnostic for the rule called ``name``."""
    r = _BY_NAME[name]
    return Diagnostic(
        code=r.code,
        name=r.name,
        severity=severity or r.severity,
        message=message,
        span=span,
        key_path=key_path,
        help=help,
        data=tuple(sorted((data or {}).items())),
    )


def diag_at(
    name: str,
    message: str,
    smap: SourceMap,
    path: Sequence[str | int],
    *,
    at: Literal["key", "value"] = "value",
    help: str | None = None,
    severity: Severity | None = None,
) -> Diagnostic:
    """A diagnostic for the rule called ``name`` about the key ``path`` of
    the file ``smap`` maps: its span (of the value, or with ``at="key"`` of
    the key) and its key path both come from the one ``path``."""
    span = smap.key_span(path) if at == "key" else smap.value_span(path)
    return diag(name, message, span, key_path=format_key_path(path), help=help, severity=severity)
