"""JSON read with a nesting bound of Charter's own, the same on every Python,
and without repeated keys.

``json.loads`` refuses deep nesting only where the interpreter's stack ends:
about a thousand levels on Python 3.11, many thousands on 3.13. An answer that
depends on that would differ between versions (a line nested 5,000 deep was
refused on one and decided on the other), so a value nested deeper than
:data:`MAX_DEPTH` is refused here whatever the interpreter could parse.

An object that names one key twice (``{"command": "rm -rf ~", "command":
"ls"}``) has no one meaning: Python and JavaScript keep the last value, other
readers the first or refuse it. Charter would decide on one reading while
whatever reads the same text next may act on the other, so such text is
refused (:class:`RepeatedKey`), as a request it cannot understand.
"""

from __future__ import annotations

import json
from typing import Any

from charter.runtime.errors import CharterError

__all__ = ["MAX_DEPTH", "RepeatedKey", "TooDeep", "loads", "nesting"]

# Far beyond any tool call's arguments or a client's event, and below the
# depth where any supported Python's parser gives up by itself.
MAX_DEPTH = 512


class TooDeep(CharterError, ValueError):
    """The text nests arrays or objects deeper than the bound."""


class RepeatedKey(CharterError, ValueError):
    """An object in the text names one key more than once."""


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(f"the key {key!r} appears more than once in one object")
            seen.add(key)
    return obj


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
    than ``max_depth`` and (:class:`RepeatedKey`) an object with a key
    twice; other bad input raises what ``json.loads`` raises."""
    try:
        value = json.loads(text, object_pairs_hook=_one_value_per_key)
    except RecursionError:
        raise TooDeep(f"nested deeper than {max_depth} levels") from None
    # Each level opens with a bracket of the text, so a text with no more
    # opening brackets than the bound (strings' included: an upper bound)
    # cannot nest past it, and the walk over the value is skipped.
    opening = text.count("[") + text.count("{") if isinstance(text, str) else (
        text.count(b"[") + text.count(b"{"))  # fmt: skip
    if opening > max_depth and nesting(value) > max_depth:
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return value
