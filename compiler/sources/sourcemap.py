"""Where every key and value of a loaded file came from.

A :class:`SourceMap` is keyed by the same path tuples pydantic uses in its
error ``loc`` (``("stages", "plan", "available_tools", 0)``), so a validation
error maps straight to a file position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from charter.compiler.diagnostics import Span

__all__ = ["Located", "SourceMap"]

KeyPath = tuple[str | int, ...]


# Defined at every start-up, so kept cheap to define: Located is a
# NamedTuple, and SourceMap (mutable state nothing compares by value) keeps
# identity equality instead of a generated __eq__.
class Located(NamedTuple):
    """The span of a key (None for list items and the root) and of its value."""

    key: Span | None
    value: Span


@dataclass(slots=True, eq=False)
class SourceMap:
    """Where each key and value of a parsed document sits in its file."""

    path: str
    entries: dict[KeyPath, Located] = field(default_factory=dict)
    # The raw text lines, kept for renderers that show a source excerpt and
    # for inline suppression comments.
    lines: tuple[str, ...] = ()

    def add(self, key_path: KeyPath, key: Span | None, value: Span) -> None:
        self.entries[key_path] = Located(key, value)

    def get(self, key_path: Sequence[str | int]) -> Located | None:
        return self.entries.get(tuple(key_path))

    def value_span(self, key_path: Sequence[str | int]) -> Span:
        """The value at ``key_path``, or the nearest enclosing value we know."""
        path = tuple(key_path)
        while True:
            found = self.entries.get(path)
            if found is not None:
                return found.value
            if not path:
                return Span(self.path, 1, 1)
            path = path[:-1]

    def key_span(self, key_path: Sequence[str | int]) -> Span:
        """The key at ``key_path`` (its value for list items), or the nearest
        enclosing position we know."""
        path = tuple(key_path)
        found = self.entries.get(path)
        if found is not None:
            return found.key or found.value
        return self.value_span(path[:-1]) if path else Span(self.path, 1, 1)

    def rebase(self, prefix: KeyPath) -> SourceMap:
        """A view whose paths are relative to ``prefix`` (for a sub-document,
        such as one stage of a blueprint validated on its own)."""
        n = len(prefix)
        sub = SourceMap(self.path, lines=self.lines)
        for path, loc in self.entries.items():
            if path[:n] == prefix:
                sub.entries[path[n:]] = loc
        return sub
