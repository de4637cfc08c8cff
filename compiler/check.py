"""Everything ``charter validate`` reports beyond loading: the compiler's own
diagnostics, the linter's checks over each compiled agent, and the
project's policy self-tests."""

from __future__ import annotations

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.project import Project
from charter.compiler.lint import lint_agent
from charter.compiler.lint.expectations import check_expectations
from charter.runtime.plan import AgentPlan

__all__ = ["check_project"]


def _leviath_lints(project: Project, plans: list[AgentPlan]) -> list[Diagnostic]:
    """Leviath's blueprint lints, for every agent that has a blueprint (the
    module is imported only then)."""
    agents = [a for a in project.agents if a.blueprint is not None and a.blueprint.model]
    if not agents:
        return []
    from charter.compiler.lint.leviath_lint import lint_blueprint

    by_name = {p.name: p for p in plans}
    config = project.config.model if project.config else None
    smap = project.config.smap if project.config else None
    out: list[Diagnostic] = []
    for agent in agents:
        out.extend(lint_blueprint(agent, by_name.get(agent.name), config, smap, project.root))
    return out


def check_project(project: Project, options: CompileOptions | None = None) -> list[Diagnostic]:
    result = compile_project(project, options or CompileOptions(render_descriptions=False))
    out = list(result.diagnostics)
    for agent in result.agents:
        out.extend(lint_agent(agent))
    out.extend(_leviath_lints(project, result.agents))
    out.extend(check_expectations(project, result.plan))
    return out
