"""JSON read with a nesting bound of Charter's own, the same on every Python.

``json.loads`` refuses deep nesting only where the interpreter's stack ends:
about a thousand levels on Python 3.11, many thousands on 3.13. An answer that
depends on that would differ between versions (a line nested 5,000 deep was
refused on one and decided on the other), so a value nested deeper than
:data:`MAX_DEPTH` is refused here whatever the interpreter could parse.
"""

from __future__ import annotations

import json
from typing import Any

from charter.runtime.errors import CharterError

__all__ = ["MAX_DEPTH", "TooDeep", "loads", "nesting"]

# Far beyond any tool call's arguments or a client's event, and below the
# depth where any supported Python's parser gives up by itself.
MAX_DEPTH = 512


class TooDeep(CharterError, ValueError):
    """The text nests arrays or objects deeper than the bound."""


def nesting(value: Any) -> int:
    """How deep ``value`` nests lists and dicts (a scalar is 0), counted
    with an explicit stack, so no depth can exhaust the interpreter's."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads``, refusing (:class:`TooDeep`) a value nested deeper
    than ``max_depth``; other bad input raises what ``json.loads`` raises."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nested deeper than {max_depth} levels") from None
    if nesting(value) > max_depth:
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return value
