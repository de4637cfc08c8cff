"""Which arguments of a call are workspace paths, and how each is used: as
the plan's entry for the tool says (``ToolEntry.path_args``), never by the
tool's name. Kept apart from the tool implementations so the gates can
consult confinement without importing every tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.plan import ToolEntry
    from charter.runtime.policy.workspace import PathOp

__all__ = ["path_args"]


def path_args(entry: ToolEntry | None, args: Mapping[str, Any]) -> list[tuple[str, str, PathOp]]:
    """(argument, path, op) for every workspace path the call would touch,
    so confinement can be consulted before approval. A tool the plan does
    not describe, or one without path arguments, gives []."""
    if entry is None:
        return []
    out: list[tuple[str, str, PathOp]] = []
    for spec in entry.path_args:
        if spec.arg not in args:
            if spec.default is not None:
                out.append((spec.arg, spec.default, spec.op))
            continue
        value = args[spec.arg]
        values = value if spec.many and isinstance(value, list | tuple) else None
        if spec.many and values is None:
            continue  # not a list: the schema gate reports it
        for v in values if values is not None else (value,):
            # A wrongly typed argument is the schema gate's to report; here it
            # is kept (as text) so confinement can still refuse it, not skip it.
            out.append((spec.arg, v if isinstance(v, str) else str(v), spec.op))
    return out
