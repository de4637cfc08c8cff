"""One command inside the sandbox a stage's profile declares: ``charter sandbox``.

The same containment ``charter run`` gives the stage's commands, for a
person trying a profile by hand or for another agent's hook that wants its
commands contained the way Charter would contain them. The command gets
Charter's allowlisted environment with a private ``HOME`` (in a temporary
folder removed afterwards), its standard streams are this process's, and its
exit code is returned. With no command, or ``describe``, nothing runs: the
answer is what the sandbox contains on this host and what it does not.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from charter.runtime.errors import CharterError
from charter.runtime.plan import AgentPlan, Plan
from charter.runtime.policy.env import build_env
from charter.runtime.sandbox.containment import ContainmentRefused, prepare
from charter.runtime.sandbox.launcher import SandboxError, SandboxUnavailable

__all__ = ["EXIT_NOT_CONTAINED", "Contained", "SandboxRefused", "run_contained"]

# The exit code when the sandbox cannot be built here (nothing ran).
EXIT_NOT_CONTAINED = 125


class SandboxRefused(CharterError):
    """Nothing ran; the message says why, ``exit_code`` is what ``charter
    sandbox`` exits with (2: a plan or usage problem; 125: no sandbox can be
    built here; 127: the command could not be started)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Contained:
    code: int  # the command's exit code (128 + the signal that ended it)
    description: str | None  # with nothing to run: what the sandbox contains


def run_contained(
    plan: Plan,
    agent_name: str,
    command: Sequence[str],
    *,
    stage_name: str | None = None,
    workspace: Path | None = None,
    describe: bool = False,
    notice: Callable[[str], None] = lambda line: None,
) -> Contained:
    """Run ``command`` in the sandbox of ``agent_name``'s stage (its entry
    stage by default), confined to ``workspace`` (the current directory by
    default). ``notice`` is told what the containment says about this host
    (when the stage falls back to less, or nothing is run). Raises
    SandboxRefused."""
    agent = plan.body.agent(agent_name)
    if agent is None:
        known = ", ".join(a.name for a in plan.body.agents) or "none"
        raise SandboxRefused(f"no agent named {agent_name!r} in the plan (agents: {known})")
    stage_name = stage_name or agent.entry_stage
    stage = agent.stage(stage_name)
    if stage is None:
        known = ", ".join(s.name for s in agent.stages)
        raise SandboxRefused(f"agent {agent.name!r} has no stage {stage_name!r} (stages: {known})")
    profile = stage.sandbox or agent.sandbox
    if profile is None:
        raise SandboxRefused("the plan has no sandbox profile (compiled by an older Charter)")
    workdir = (workspace or Path.cwd()).resolve()
    if not workdir.is_dir():
        raise SandboxRefused(f"{workdir}: the workdir is not a directory")

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
        shutil.rmtree(private, ignore_errors=True)
        raise SandboxRefused(str(exc), EXIT_NOT_CONTAINED) from None
    try:
        where = containment.stage(agent.name, stage.name)
        for line in containment.notices:
            if where.fallback or not command or describe:
                notice(line)
        sb = where.sandbox
        if describe or not command:
            if sb is None:
                return Contained(0, "sandbox: none (commands are not contained)")
            return Contained(0, sb.describe())
        if sb is None:
            raise SandboxRefused(
                "this profile contains nothing (kind = none); not running", EXIT_NOT_CONTAINED
            )
        env = build_env(os.environ, home=home)
        try:
            launched = sb.popen(
                list(command), cwd=Path.cwd(), env=env, stdin=None, stdout=None, stderr=None
            )
        except (SandboxError, SandboxUnavailable) as exc:
            if isinstance(exc, SandboxError) and exc.stage == "exec":
                raise SandboxRefused(f"{command[0]}: {exc.message}", 127) from None
            raise SandboxRefused(
                f"the sandbox could not be built: {exc}", EXIT_NOT_CONTAINED
            ) from None
        try:
            code = int(launched.proc.wait())
        except KeyboardInterrupt:
            os.killpg(launched.proc.pid, signal.SIGKILL)
            code = int(launched.proc.wait())
        finally:
            launched.close()
        return Contained(code if code >= 0 else 128 - code, None)
    finally:
        containment.close()
        shutil.rmtree(private, ignore_errors=True)
