"""`charter validate` from the outside: exit codes, formats and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main

REPO = Path(__file__).resolve().parents[2]
BROKEN = REPO / "tests" / "fixtures" / "projects" / "broken"


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(["validate", "--no-user-config", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_shipped_examples_are_clean(capsys: Any) -> None:
    code, out, _ = run(capsys, "--format", "json", str(REPO / "blueprints"))
    data = json.loads(out)
    assert code == 0 and data["valid"] is True
    assert data["errors"] == 0


def test_broken_project_reports_every_problem_at_its_position(capsys: Any) -> None:
    os.chdir(BROKEN)
    code, out, _ = run(capsys, "--format", "concise", ".")
    assert code == 1
    lines = [line for line in out.splitlines() if ": CH" in line]
    expected = (BROKEN / "expected.txt").read_text().splitlines()
    assert lines == expected


def test_no_such_path_is_a_usage_error(capsys: Any, tmp_path: Path) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing"))
    assert code == 2 and "no such file" in err


def test_directory_without_agent_files_says_what_was_looked_for(
    capsys: Any, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    code, out, _ = run(capsys, "--format", "concise", str(tmp_path))
    assert code == 1
    assert "agent.yaml, agent.leviath and blueprint.toml" in out


@pytest.mark.parametrize(
    ("name", "content", "rule"),
    [
        ("agent.leviath", b"", "empty-file"),
        ("agent.leviath", b'[agent]\nname = "caf\xe9"\n', "file-not-utf8"),
        ("agent.leviath", b"[agent]\nname = 'x'\n" + b"#" * (11 * 1024 * 1024), "file-too-large"),
        ("agent.yaml", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nesting-too-deep"),
        ("agent.yaml", b"a: " + b"[" * 100 + b"]" * 100 + b"\n", "nesting-too-deep"),
        ("agent.leviath", b"a = " + b"[" * 900 + b"]" * 900 + b"\n", "nesting-too-deep"),
        ("agent.yaml", b"agent: {id: x}\nagent: {id: y}\n", "duplicate-key"),
        ("agent.yaml", b"agent:\n  id: [unclosed\n", "yaml-syntax-error"),
    ],
)
def test_bad_files_become_diagnostics_not_tracebacks(
    capsys: Any, tmp_path: Path, name: str, content: bytes, rule: str
) -> None:
    (tmp_path / name).write_bytes(content)
    code, out, err = run(capsys, "--format", "json", str(tmp_path))
    assert code == 1, err
    data = json.loads(out)
    assert rule in {f["name"] for f in data["findings"]}
    assert "Traceback" not in err


def test_warnings_fail_only_under_deny_warnings(capsys: Any, tmp_path: Path) -> None:
    (tmp_path / "agent.leviath").write_text(
        '[agent]\nname = "w"\n[tool_permissions]\nshell = "allow"\n'
        '[stages.s]\navailable_tools = ["shell"]\n'
    )
    code, out, _ = run(capsys, "--format", "concise", str(tmp_path))
    assert code == 0 and "blueprint-permission-clamped" in out
    code, _, _ = run(capsys, "--format", "concise", "--deny-warnings", str(tmp_path))
    assert code == 1


def test_unknown_format_is_a_usage_error(capsys: Any) -> None:
    assert main(["validate", "--format", "xml", "."]) == 2


def test_a_broken_stage_file_is_one_error_and_errors_come_first(
    capsys: Any, tmp_path: Path
) -> None:
    import shutil

    project = tmp_path / "coder"
    shutil.copytree(REPO / "blueprints" / "coder", project)
    review = project / "stages" / "review.toml"
    review.write_text(review.read_text() + "bogus_key = 1\n")
    code, out, _ = run(capsys, "--format", "concise", str(project))
    assert code == 1
    lines = [line for line in out.splitlines() if ": CH" in line]
    # The stage file's own error, and no follow-on "edge leads to 'review',
    # which is not a stage": the stage exists, its file is what is wrong.
    assert [line for line in lines if "CH6" in line] == []
    assert "CH201 unknown-key" in lines[0], lines  # the error before any note


@pytest.mark.parametrize("fmt", ["concise", "github"])
def test_a_user_config_error_names_the_real_file(capsys: Any, tmp_path: Path, fmt: str) -> None:
    config = tmp_path / "elsewhere" / "config.toml"
    config.parent.mkdir()
    config.write_text("bogus = 1\n")
    code = main(["validate", str(REPO / "blueprints" / "coder"), "--config", str(config),
                 "--format", fmt])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "<config>" not in out
    line = next(x for x in out.splitlines() if "CH201" in x)
    assert str(config) in line, line
