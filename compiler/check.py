"""Everything ``charter validate`` reports beyond loading: the compiler's own
diagnostics, the linter's checks over each compiled agent, and the
project's policy self-tests."""

from __future__ import annotations

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.diagnostics import Diagnostic
from charter.compiler.expectations import check_expectations
from charter.compiler.frontends.project import Project
from charter.compiler.lint import lint_agent

__all__ = ["check_project"]


def check_project(project: Project, options: CompileOptions | None = None) -> list[Diagnostic]:
    result = compile_project(project, options or CompileOptions(render_descriptions=False))
    out = list(result.diagnostics)
    for agent in result.agents:
        out.extend(lint_agent(agent))
    out.extend(check_expectations(project, result.plan))
    return out
