"""Compiling a loaded project into a plan: the pipeline.

For each agent, three steps with one concern each:

1. resolution (:mod:`charter.compiler.resolve`): collect its tools
   (built-in, authored, MCP, script) and check their names, resolve
   capability grants, every stage's tool set and the permission of every
   offered tool with provenance, edges, MCP pins and the shell policy;
2. lint (:mod:`charter.compiler.lint.sources`): the checks that read the
   resolved agent and its sources but change nothing in it (unused grants,
   orphan permissions, clamped permissions, Leviath's load-time refusals...);
3. emission (:mod:`charter.compiler.emit`): the agent's plan.

Every problem becomes a diagnostic; a plan is produced only when there is no
error in any agent.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.emit import compiler_version, emit_agent, emit_plan
from charter.compiler.frontends.project import Project
from charter.compiler.lint.fates import refusals
from charter.compiler.lint.sources import lint_resolved
from charter.compiler.resolve.agent import resolve_agent
from charter.compiler.resolve.context import AgentContext
from charter.runtime.plan import AgentPlan, Plan

__all__ = [
    "CompileOptions",
    "CompileResult",
    "compile_project",
    "compiler_version",
    "default_shell",
]


def default_shell(target: str) -> str:
    """The shell the shell tool runs on ``target`` (seed 004's resolution)."""
    if target == "windows":
        return "cmd.exe /C"
    env_shell = os.environ.get("SHELL", "")
    if env_shell and Path(env_shell).name in ("sh", "bash", "zsh") and Path(env_shell).exists():
        return env_shell
    for candidate in ("/bin/bash", "/usr/bin/bash", "/bin/zsh", "/usr/bin/zsh", "/bin/sh"):
        if Path(candidate).exists():
            return candidate
    return "/bin/sh"


# Defined at every start-up, so kept cheap to define: CompileOptions is a
# NamedTuple (a tenth of a frozen dataclass's cost), and CompileResult, which
# nothing compares by value, keeps identity equality.
class CompileOptions(NamedTuple):
    """What the compiler targets: platform, shell and whether to render descriptions."""

    target_platform: Literal["posix", "windows"] = "windows" if sys.platform == "win32" else "posix"
    shell: str | None = None  # None: resolve for the target platform
    # Linting needs the decisions, not the model-facing text; skipping the
    # templates keeps jinja2 out of `charter validate`'s start-up.
    render_descriptions: bool = True


@dataclass(eq=False)
class CompileResult:
    """A compile's plan (None when any agent has errors), its diagnostics and agents."""

    plan: Plan | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Every agent that could be compiled, even when another has errors: the
    # linter checks them all in one run.
    agents: list[AgentPlan] = field(default_factory=list)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector. A compile allocates many small
    objects and frees almost none; full collections triggered along the way
    cost more than the compile itself on large projects (measured 3x)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _shared_keys_not_run(project: Project) -> list[Diagnostic]:
    """The keys Charter's runtime does not carry out in the files every agent
    shares (the user's config, the cores' fallback file), reported once."""
    out: list[Diagnostic] = []
    shared = [
        project.config,
        *{a.fallback.display: a.fallback for a in project.agents if a.fallback}.values(),
    ]
    for loaded in shared:
        if loaded is not None and loaded.model is not None:
            out.extend(refusals(loaded.model, loaded.smap))
    return out


def compile_project(project: Project, options: CompileOptions | None = None) -> CompileResult:
    with no_gc():
        return _compile_project(project, options)


def _compile_project(project: Project, options: CompileOptions | None) -> CompileResult:
    options = options or CompileOptions()
    shell = options.shell or default_shell(options.target_platform)
    diags: list[Diagnostic] = []
    agents: list[AgentPlan] = []
    config = project.config.model if project.config else None
    config_smap = project.config.smap if project.config else None
    seen: set[str] = set()
    for agent in project.agents:
        name = agent.name
        if name in seen:
            continue  # reported by the project loader
        seen.add(name)
        ctx = AgentContext(agent, config, config_smap, options, shell)
        ctx.user_scripts = list(project.user_scripts)
        resolved = resolve_agent(ctx, project.root, name)
        if resolved is not None:
            lint_resolved(resolved)
            agents.append(emit_agent(resolved))
        diags.extend(ctx.diags)
    diags.extend(_shared_keys_not_run(project))
    all_diags = [*project.diagnostics, *diags]
    if any(d.is_error for d in all_diags) or not agents:
        return CompileResult(None, diags, agents)
    plan = emit_plan(
        agents, target_platform=options.target_platform, shell=shell, digests=project.digests
    )
    return CompileResult(plan, diags, agents)
