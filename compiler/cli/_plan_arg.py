"""A plan file or a project directory: one resolution for every verb that takes a plan.

``charter run``, ``check``, ``show``, ``diff`` and ``hook`` (and ``serve``)
accept either. A file is read through the runtime's loader, which refuses a
damaged or tampered plan; a directory is compiled first, exactly as
``charter compile`` would, with the user's config unless ``--no-user-config``
(or the one ``--config`` names). Compile problems are printed to stderr in the
concise format, and a project with errors yields no plan.

Only the standard library is imported at module level: the compiler is loaded
when a directory is actually given, so a verb given a plan file never pays
for it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from charter.runtime import Plan, PreparedPlan

__all__ = [
    "LoadedPlan",
    "add_hook_scope_options",
    "add_plan_operand",
    "add_project_options",
    "load_plan_or_project",
    "prepared_plan_or_project",
]


@dataclass(frozen=True, slots=True)
class LoadedPlan:
    plan: Plan
    project: Path | None  # the project directory, when one was compiled
    path: Path | None  # the plan file, when one was read


def add_plan_operand(p: argparse.ArgumentParser, dest: str) -> None:
    """The ``PLAN_OR_PROJECT`` operand, stored as a :class:`Path` in ``dest``."""
    p.add_argument(
        dest,
        type=Path,
        metavar="PLAN_OR_PROJECT",
        help="a compiled plan (plan.json) or a project directory (compiled first)",
    )


def add_hook_scope_options(p: argparse.ArgumentParser) -> None:
    """``--agent``, ``--stage``, ``--workspace`` and ``--allow``: which part of
    the plan answers a client's hook events, for ``hook`` and ``serve`` alike."""
    p.add_argument("--agent", help="agent in the plan (needed when it holds several)")
    p.add_argument("--stage", help="stage (default: the agent's entry stage)")
    p.add_argument("--workspace", help="workspace directory (default: each event's cwd)")
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="lift TOOL's liftable ask to allow (repeatable), as `charter check --allow`",
    )


def add_project_options(p: argparse.ArgumentParser) -> None:
    """``--config`` and ``--no-user-config``, which apply when the target is a
    project directory."""
    p.add_argument(
        "--config", type=Path, help="the user config.toml used to compile a project directory"
    )
    p.add_argument(
        "--no-user-config", action="store_true", help="compile a project without the user's config"
    )


def _compile(target: Path, config: Path | None, use_user_config: bool) -> Plan | str:
    if config is not None and not config.is_file():
        return f"{config}: config file not found"
    # The compiler is loaded only here: a verb given a plan file never pays for it.
    from charter.compiler import CompileOptions, compile_project, load_project
    from charter.compiler.render import render

    project = load_project(target, config=config, use_default_config=use_user_config)
    result = compile_project(project, CompileOptions())
    diags = [d for d in (*project.diagnostics, *result.diagnostics) if d.severity.value != "note"]
    if diags:
        sys.stderr.write(render(diags, "concise", sources=project.sources))
    if result.plan is None:
        return f"{target}: the project does not compile; fix the errors above"
    return result.plan


def load_plan_or_project(
    target: Path, *, config: Path | None = None, use_user_config: bool = True
) -> LoadedPlan | str:
    """The plan ``target`` names, or why there is none (a message to print)."""
    if target.is_file():
        from charter.runtime import PlanError, load_plan

        try:
            return LoadedPlan(load_plan(target), None, target)
        except PlanError as exc:
            return str(exc)
    if not target.is_dir():
        return f"{target}: no such project directory or plan file"
    compiled = _compile(target, config, use_user_config)
    if isinstance(compiled, str):
        return compiled
    return LoadedPlan(compiled, target, None)


def prepared_plan_or_project(
    target: Path,
    agents: Iterable[str],
    *,
    config: Path | None = None,
    use_user_config: bool = True,
) -> PreparedPlan | str:
    """The plan prepared for deciding the named agents' calls. A plan file
    takes the loader's fast path (only those agents are parsed); a project
    is compiled first."""
    from charter.runtime import PlanError

    wanted = list(agents)
    if target.is_file():
        from charter.runtime import load_for_agents

        try:
            return load_for_agents(target, wanted)
        except PlanError as exc:
            return str(exc)
    loaded = load_plan_or_project(target, config=config, use_user_config=use_user_config)
    if isinstance(loaded, str):
        return loaded
    from charter.runtime import prepare

    return prepare(loaded.plan, agents=set(wanted) or None, eager=False)
