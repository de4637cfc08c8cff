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
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from charter.compiler.cli._options import add_workspace

EXIT_NOT_CONTAINED = 125


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


def _plan(args: argparse.Namespace) -> Any:
    target: Path = args.target
    if target.is_file():
        from charter.runtime.plan.loader import PlanError, load_plan

        try:
            return load_plan(target)
        except PlanError as exc:
            return str(exc)
    if not target.is_dir():
        return f"{target}: no such plan file or project directory"
    from charter.compiler.compile import CompileOptions, compile_project
    from charter.compiler.frontends.project import load_project
    from charter.compiler.render import render

    project = load_project(target, config=args.config, use_default_config=not args.no_user_config)
    result = compile_project(project, CompileOptions(render_descriptions=False))
    if result.plan is None:
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
    agent = plan.body.agent(args.agent)
    if agent is None:
        known = ", ".join(a.name for a in plan.body.agents) or "none"
        return _fail(f"no agent named {args.agent!r} in the plan (agents: {known})")
    stage_name = args.stage or agent.entry_stage
    stage = agent.stage(stage_name)
    if stage is None:
        known = ", ".join(s.name for s in agent.stages)
        return _fail(f"agent {agent.name!r} has no stage {stage_name!r} (stages: {known})")
    profile = stage.sandbox or agent.sandbox
    if profile is None:
        return _fail("the plan has no sandbox profile (compiled by an older Charter)")
    workdir = (args.workspace or Path.cwd()).resolve()
    if not workdir.is_dir():
        return _fail(f"{workdir}: the workdir is not a directory")

    from charter.runtime.plan import AgentPlan
    from charter.runtime.policy.env import build_env
    from charter.runtime.sandbox.containment import ContainmentRefused, prepare

    private = Path(tempfile.mkdtemp(prefix="charter-sandbox-"))
    home = private / "home-env"
    home.mkdir()
    single = AgentPlan.model_construct(
        **{**dict(agent), "stages": (stage,), "sandbox": None}  # only this stage's profile
    )
    try:
        containment = prepare(
            [single], workspace=workdir, private_root=private / "s", env_home=home, unattended=True
        )
    except ContainmentRefused as exc:
        import shutil

        shutil.rmtree(private, ignore_errors=True)
        return _fail(str(exc), EXIT_NOT_CONTAINED)
    try:
        where = containment.stage(agent.name, stage.name)
        for line in containment.notices:
            if where.fallback or not command or args.describe:
                print(f"charter sandbox: {line}", file=sys.stderr)
        sb = where.sandbox
        if args.describe or not command:
            print(sb.describe() if sb is not None else "sandbox: none (commands are not contained)")
            return 0
        if sb is None:
            return _fail(
                "this profile contains nothing (kind = none); not running", EXIT_NOT_CONTAINED
            )
        env = build_env(os.environ, home=home)
        from charter.runtime.sandbox.launcher import SandboxError, SandboxUnavailable

        try:
            launched = sb.popen(
                command, cwd=Path.cwd(), env=env, stdin=None, stdout=None, stderr=None
            )
        except (SandboxError, SandboxUnavailable) as exc:
            if isinstance(exc, SandboxError) and exc.stage == "exec":
                return _fail(f"{command[0]}: {exc.message}", 127)
            return _fail(f"the sandbox could not be built: {exc}", EXIT_NOT_CONTAINED)
        try:
            code = int(launched.proc.wait())
        except KeyboardInterrupt:
            import signal

            os.killpg(launched.proc.pid, signal.SIGKILL)
            code = int(launched.proc.wait())
        finally:
            launched.close()
        return code if code >= 0 else 128 - code
    finally:
        containment.close()
        import shutil

        shutil.rmtree(private, ignore_errors=True)
