"""``charter sandbox PLAN --agent A [--stage S] -- CMD...``: run one command
inside the sandbox a stage's profile declares.

The same containment ``charter run`` gives the stage's commands, for a
person trying a profile by hand, or for another agent's hook that wants its
commands contained the way Charter would contain them. ``PLAN`` is a compiled
plan or a project directory (compiled first, like ``charter run``). The
command gets Charter's allowlisted environment with a private ``HOME``, its
standard streams are this process's, and the exit code is the command's.

With no command, or with ``--describe``, it prints what the sandbox contains
on this host and what it does not, and exits.

Exit codes: the command's own; 125 when the sandbox cannot be built here
(nothing ran); 2 for usage errors and plans that do not load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The front doors load nothing until a name is used.
import charter.compiler as compiler
import charter.runtime as runtime
from charter.compiler.cli._options import add_workspace

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", type=Path, metavar="PLAN", help="a plan file or a project directory")
    p.add_argument("--agent", required=True, help="the agent whose profile applies")
    p.add_argument("--stage", help="the stage (default: the agent's entry stage)")
    add_workspace(p, type=Path, help="the workspace (default: the current directory)")
    p.add_argument("--config", type=Path, help="the user config.toml used to compile a project")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    p.add_argument("--describe", action="store_true", help="print what is contained, run nothing")
    # Filled from everything after "--" (see charter.compiler.cli.main).
    p.set_defaults(command=[])


def _fail(message: str, code: int = 2) -> int:
    print(f"charter sandbox: {message}", file=sys.stderr)
    return code


def _plan(args: argparse.Namespace) -> runtime.Plan | str:
    target: Path = args.target
    if target.is_file():
        try:
            return runtime.load_plan(target)
        except runtime.PlanError as exc:
            return str(exc)
    if not target.is_dir():
        return f"{target}: no such plan file or project directory"
    project = compiler.load_project(
        target, config=args.config, use_default_config=not args.no_user_config
    )
    result = compiler.compile_project(project, compiler.CompileOptions(render_descriptions=False))
    if result.plan is None:
        # Loaded only here: a contained hook command runs this verb on a plan
        # file for every shell call, and never pays for the renderers (3 ms).
        from charter.compiler.render import render

        diags = [d for d in (*project.diagnostics, *result.diagnostics) if d.is_error]
        sys.stderr.write(render(diags, "concise", sources=project.sources))
        return f"{target}: the project does not compile; fix the errors above"
    return result.plan


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    plan = _plan(args)
    if isinstance(plan, str):
        return _fail(plan)
    try:
        done = runtime.run_contained(
            plan,
            args.agent,
            command,
            stage_name=args.stage,
            workspace=args.workspace,
            describe=args.describe,
            notice=lambda line: print(f"charter sandbox: {line}", file=sys.stderr),
        )
    except runtime.SandboxRefused as exc:
        return _fail(str(exc), exc.exit_code)
    if done.description is not None:
        print(done.description)
    return done.code
