"""Policy self-tests ([[expect]] in charter.toml) checked by validate."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from charter.compiler.check import check_project
from charter.compiler.frontends.project import load_project

REPO = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, settings: str) -> Path:
    root = tmp_path / "coder"
    shutil.copytree(REPO / "blueprints" / "coder", root)
    (root / "charter.toml").write_text(settings)
    return root


def _findings(root: Path) -> list[Any]:
    project = load_project(root, use_default_config=False)
    return [*project.diagnostics, *check_project(project)]


def test_shipped_expectations_hold() -> None:
    found = _findings(REPO / "blueprints" / "coder")
    assert not [d for d in found if d.name.startswith("policy-")]


def test_a_failing_expectation_shows_expected_actual_and_provenance(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        '[[expect]]\nname = "push"\nstage = "implement"\ntool = "shell"\n'
        'command = "git push"\ndecision = "allow"\n',
    )
    [d] = [d for d in _findings(root) if d.name == "policy-expectation-failed"]
    assert "expected to be allow but is ask" in d.message
    assert "provenance:" in d.message and "stage=ask" in d.message
    assert (d.span.path, d.span.line, d.span.col) == ("charter.toml", 6, 12)
    assert dict(d.data)["actual"] == "ask"


def test_unknown_agent_or_stage_is_reported(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        '[[expect]]\nagent = "codr"\ntool = "read_file"\ndecision = "allow"\n'
        '[[expect]]\nstage = "nope"\ntool = "read_file"\ndecision = "allow"\n',
    )
    bad = [d for d in _findings(root) if d.name == "policy-expectation-invalid"]
    assert len(bad) == 2
    assert "codr" in bad[0].message and "nope" in bad[1].message


def test_expectations_are_skipped_with_a_note_when_the_project_has_errors(tmp_path: Path) -> None:
    root = _project(tmp_path, '[[expect]]\ntool = "read_file"\ndecision = "allow"\n')
    text = (root / "agent.leviath").read_text().replace('shell = "ask"', 'shell = "dney"', 1)
    (root / "agent.leviath").write_text(text)
    assert "policy-expectations-skipped" in {d.name for d in _findings(root)}


def test_lint_ignore_in_charter_toml_is_applied(tmp_path: Path, capsys: Any) -> None:
    from charter.compiler.cli import main

    root = _project(tmp_path, '[lint]\nignore = ["holds-under-yolo"]\n')
    assert main(["validate", "--no-user-config", "--format", "concise", str(root)]) == 0
    assert "CH410" not in capsys.readouterr().out
