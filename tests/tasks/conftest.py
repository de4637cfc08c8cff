"""Runtimes over fresh workspaces, and notes-core compiled once, for the task,
child-control and catalog tool tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from _support.approvals import Recorder

from charter.runtime.plan import Plan
from charter.runtime.policy.env import build_env
from charter.runtime.redact import Redactor
from charter.runtime.tools.registry import RunStore, ToolRuntime

NOTES_CORE = Path(__file__).resolve().parents[2] / "blueprints" / "notes-core"


@pytest.fixture
def make_rt(tmp_path: Path) -> Any:
    """A ToolRuntime with its own run store; keyword arguments override fields."""

    def make(**fields: Any) -> ToolRuntime:
        ws = fields.pop("workspace", tmp_path / "work")
        ws.mkdir(parents=True, exist_ok=True)
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        fields.setdefault("env", build_env(os.environ, home=home))
        fields.setdefault("redactor", Redactor())
        fields.setdefault("store", RunStore())
        return ToolRuntime(workspace=ws, shell="/bin/sh", **fields)

    return make


@pytest.fixture(scope="session")
def notes_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    from charter.compiler.compile import CompileOptions, compile_project
    from charter.compiler.frontends.project import load_project

    root = tmp_path_factory.mktemp("notes") / "notes-core"
    shutil.copytree(NOTES_CORE, root)
    project = load_project(root)
    result = compile_project(project, CompileOptions())
    assert result.plan is not None
    return result.plan, root


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
