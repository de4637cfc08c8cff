"""Checking an authored tool's entrypoint by reading its source, never by
importing it: importing would run the repository's code at compile time."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EntrypointInfo", "inspect_entrypoint"]

MAX_MODULE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class EntrypointInfo:
    sha256: str
    is_async: bool


def inspect_entrypoint(module: Path, function: str) -> tuple[EntrypointInfo | None, str | None]:
    """(info, None) when ``module`` defines ``function(ctx, args)`` at top
    level; otherwise (None, a message saying what is wrong)."""
    try:
        data = module.read_bytes()
    except OSError:
        return None, f"module file {module.name} does not exist"
    if len(data) > MAX_MODULE_BYTES:
        return None, f"module file {module.name} is larger than {MAX_MODULE_BYTES} bytes"
    try:
        tree = ast.parse(data, filename=module.name)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return None, f"{module.name} does not parse" + (f" (line {line})" if line else "")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            required = len(positional) - len(args.defaults)
            if args.vararg is None and len(positional) < 2:
                return None, (
                    f"{module.name}: {function}() must accept two arguments (ctx, args); "
                    f"it takes {len(positional)}"
                )
            if required > 2 or any(d is None for d in args.kw_defaults):
                return None, (
                    f"{module.name}: {function}() requires more than (ctx, args); "
                    "give the extra parameters defaults"
                )
            return EntrypointInfo(
                hashlib.sha256(data).hexdigest(), isinstance(node, ast.AsyncFunctionDef)
            ), None
    return None, f"{module.name} defines no top-level function '{function}'"
