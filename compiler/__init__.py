"""Charter's compiler: read an agent's files, lint them, and write a sealed plan.

This module is the compiler's front door. The names in ``__all__`` are the API an
embedder, the CLI and the benches rely on; everything else under
``charter.compiler`` may move between releases. Each name is imported on first
use (PEP 562), so ``import charter.compiler`` costs nothing at start-up.

A typical embedding::

    from pathlib import Path

    from charter.compiler import compile_project, load_project

    result = compile_project(load_project(Path("blueprints/coder")))
    if result.plan is None:  # an error in some agent: no plan is written
        for diagnostic in result.diagnostics:
            print(diagnostic)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.compiler.check import check_project
    from charter.compiler.cli import main
    from charter.compiler.compile import CompileOptions, CompileResult, compile_project
    from charter.compiler.diagnostics import Diagnostic
    from charter.compiler.frontends.project import Project, load_project
    from charter.compiler.resolve.lock_targets import mcp_lock_targets
    from charter.compiler.resolve.shell_policy import shell_policy_from_config
    from charter.compiler.rules import RULES

# name -> the module that defines it (see charter.runtime for why this is data).
# No name here may equal a subpackage's: importing charter.compiler.render
# sets the package attribute `render` to that module, whatever this says.
_EXPORTS: dict[str, str] = {
    "CompileOptions": "charter.compiler.compile",
    "CompileResult": "charter.compiler.compile",
    "Diagnostic": "charter.compiler.diagnostics",
    "Project": "charter.compiler.frontends.project",
    "RULES": "charter.compiler.rules",
    "check_project": "charter.compiler.check",
    "compile_project": "charter.compiler.compile",
    "load_project": "charter.compiler.frontends.project",
    "main": "charter.compiler.cli",
    "mcp_lock_targets": "charter.compiler.resolve.lock_targets",
    "shell_policy_from_config": "charter.compiler.resolve.shell_policy",
}

__all__ = [
    "CompileOptions",
    "CompileResult",
    "Diagnostic",
    "Project",
    "RULES",
    "check_project",
    "compile_project",
    "load_project",
    "main",
    "mcp_lock_targets",
    "shell_policy_from_config",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'charter.compiler' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
