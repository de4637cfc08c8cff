"""``tools.include`` / ``tools.exclude`` of an MCP manifest.

``*`` is the only wildcard (any run of characters, including none); every
other character, ``?`` and ``[`` included, matches itself, so a tool name that
happens to contain glob syntax is never widened by accident. A non-empty
include list must match a tool for it to be kept; then any matching exclude
removes it, so exclude always wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["pattern_matches", "select_tools", "unmatched_patterns"]


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "*" else re.escape(part) for part in _split(pattern)))


def _split(pattern: str) -> list[str]:
    parts: list[str] = []
    for i, chunk in enumerate(pattern.split("*")):
        if i:
            parts.append("*")
        if chunk:
            parts.append(chunk)
    return parts


def pattern_matches(pattern: str, name: str) -> bool:
    return _compiled(pattern).fullmatch(name) is not None


def select_tools(
    names: Iterable[str], include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> list[str]:
    """The names kept by the filters, in the order given."""
    out: list[str] = []
    for name in names:
        if include and not any(pattern_matches(p, name) for p in include):
            continue
        if any(pattern_matches(p, name) for p in exclude):
            continue
        out.append(name)
    return out


def unmatched_patterns(patterns: Sequence[str], names: Iterable[str]) -> list[str]:
    """The patterns that match none of ``names``: usually a typo, or a tool
    the server no longer has."""
    pool = list(names)
    return [p for p in dict.fromkeys(patterns) if not any(pattern_matches(p, n) for n in pool)]
