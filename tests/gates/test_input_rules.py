"""A tool's cross-field argument rules are enforced by the schema gate."""

from __future__ import annotations

from pathlib import Path

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.gates import decide
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall


def test_evolve_core_review_without_run_id_is_refused_at_the_schema_gate(tmp_path: Path) -> None:
    root = tmp_path / "core"
    (root / "agent").mkdir(parents=True)
    (root / "agent.yaml").write_text(
        "agent:\n  id: core\ntools:\n  toolsets: [demiurge_control]\n"
        'capabilities:\n  defaults:\n    "tool.call:*": {}\n    task.control: {}\n'
    )
    result = compile_project(load_project(root, use_default_config=False), CompileOptions("posix"))
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    session = open_session(result.plan, "core", workspace=root)
    bad = decide(session, ToolCall("evolve_core", {"action": "review"}))
    assert (bad.decision, bad.gate) == ("deny", "schema")
    good = decide(session, ToolCall("evolve_core", {"action": "review", "run_id": "r1"}))
    assert good.gate != "schema"
