"""A small agent core whose authored tools are written by each test module,
compiled once, and called through the gate pipeline."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from _support.approvals import Recorder

from charter.runtime.gates import execute
from charter.runtime.plan import Plan
from charter.runtime.policy.session import Session, open_session
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall, ToolResult
from charter.runtime.tools.registry import ToolRuntime

REPO = Path(__file__).resolve().parents[2]
NOTES_CORE = REPO / "blueprints" / "notes-core"

AGENT_YAML = """\
schema_version: 1
agent:
  id: t-core
  summary: A core whose tools the tests write.
slots:
  tools: agent/tools
approval:
  default: auto
"""


def compile_dir(root: Path) -> Plan:
    from charter.compiler.compile import CompileOptions, compile_project
    from charter.compiler.diagnostics import Severity
    from charter.compiler.frontends.project import load_project

    project = load_project(root)
    result = compile_project(project, CompileOptions())
    # (notes are the host's own settings, such as a core's chat channels)
    problems = [
        str(d)
        for d in (*project.diagnostics, *result.diagnostics)
        if d.severity is not Severity.NOTE
    ]
    assert result.plan is not None and not problems, problems
    return result.plan


def write_core(root: Path, tools: Mapping[str, tuple[str, str]]) -> Path:
    """``tools`` maps a tool id to (tool.yaml text, module.py text)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(AGENT_YAML, encoding="utf-8")
    for tool_id, (spec, module) in tools.items():
        d = root / "agent" / "tools" / tool_id
        d.mkdir(parents=True, exist_ok=True)
        (d / "tool.yaml").write_text(spec, encoding="utf-8")
        (d / "module.py").write_text(module, encoding="utf-8")
    return root


def copy_notes_core(dest: Path) -> Path:
    shutil.copytree(NOTES_CORE, dest)
    return dest


class Caller:
    """Calls tools of one compiled agent through ``gates.execute``."""

    def __init__(self, plan: Plan, agent: str, project: Path, workspace: Path, **rt: Any) -> None:
        self.plan = plan
        self.project = project
        self.workspace = workspace
        self.session: Session = open_session(plan, agent, workspace=workspace, run_id="run-1")
        self.rt = ToolRuntime(
            workspace=workspace,
            project_root=project,
            redactor=Redactor(),
            timeout_s=rt.pop("timeout_s", 5),
            **rt,
        )
        self.provider = Recorder()

    def __call__(self, tool: str, args: dict[str, Any], call_id: str = "c1") -> ToolResult:
        return execute(
            self.session, ToolCall(tool, args, call_id), None, self.provider, runtime=self.rt
        )


@pytest.fixture
def caller_for(tmp_path: Path) -> Callable[..., Caller]:
    def make(plan: Plan, agent: str, project: Path, **rt: Any) -> Caller:
        ws = tmp_path / "workspace"
        ws.mkdir(exist_ok=True)
        return Caller(plan, agent, project, ws, **rt)

    return make


@pytest.fixture(scope="session")
def ak() -> Any:
    """The helpers above, for test modules (tests are not a package)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        Caller=Caller,
        Recorder=Recorder,
        compile_dir=compile_dir,
        copy_notes_core=copy_notes_core,
        write_core=write_core,
    )
