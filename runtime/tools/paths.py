"""Which arguments of a built-in call are workspace paths, and how each is
used. Kept apart from the tool implementations so the gate pipeline can
consult confinement without importing every tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from charter.runtime.workspace import PathOp

__all__ = ["path_args"]


def path_args(tool_name: str, args: Mapping[str, Any]) -> list[tuple[str, PathOp]]:
    """The workspace paths a call would touch and how, so confinement can be
    consulted before approval. Unknown tools and tools without paths give []."""
    from charter.runtime.catalog import resolve_builtin

    entry = resolve_builtin(tool_name)
    if entry is None:
        return []
    name = entry.name
    out: list[tuple[str, PathOp]] = []

    def add(value: Any, op: PathOp) -> None:
        # A wrongly typed argument is the schema gate's to report; here it is
        # kept (as text) so confinement can still refuse it rather than skip it.
        out.append((value if isinstance(value, str) else str(value), op))

    if name in ("read_file",):
        if "path" in args:
            add(args["path"], "read")
    elif name == "read_files":
        paths = args.get("paths")
        if isinstance(paths, list | tuple):
            for p in paths:
                add(p, "read")
    elif name in ("write_file", "edit_file", "patch"):
        if "path" in args:
            add(args["path"], "write")
    elif name in ("list_dir", "search_files"):
        add(args.get("path", "."), "read")
    elif name == "terminal":
        add(args.get("cwd", "."), "read")
    return out
