"""The command line behaves the same way across verbs: a plan or a project
wherever a plan is taken, one spelling for the workspace, a verb's own usage
for an option it does not know; show's provenance, validate's colour and its
handling of a single file."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import VERBS, main

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "blueprints" / "coder"
NOTES = REPO / "blueprints" / "notes-core"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _plan(capsys: Any, tmp_path: Path) -> Path:
    out = tmp_path / "coder.json"
    assert main(["compile", "--no-user-config", str(CODER), "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def _line_of(path: Path, text: str) -> int:
    return path.read_text().splitlines().index(text) + 1


# -- a plan or a project --------------------------------------------------------------


def test_show_takes_a_project_and_names_file_and_line(capsys: Any) -> None:
    assert main(["show", str(CODER), "--no-user-config", "--format", "json"]) == 0
    rows = {(r["stage"], r["tool"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    shell = rows[("discover", "shell")]
    agent_line = _line_of(CODER / "agent.leviath", 'shell = "ask"')
    assert {"scope": "agent", "value": "ask", "source": f"agent.leviath:{agent_line}"}.items() <= (
        next(p for p in shell["provenance"] if p.get("scope") == "agent").items()
    )
    assert f"agent=ask (agent.leviath:{agent_line})" in shell["why"]
    assert main(["show", str(CODER), "--no-user-config", "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"coder/discover\tshell\t.*stage=ask \(agent\.leviath:\d+\)", text)


def test_diff_takes_a_project_on_either_side(capsys: Any, tmp_path: Path) -> None:
    plan = _plan(capsys, tmp_path)
    assert main(["diff", str(plan), str(CODER), "--no-user-config"]) == 0
    assert capsys.readouterr().out.strip() == "no decision changed"
    looser = tmp_path / "looser"
    shutil.copytree(CODER, looser)
    bp = looser / "agent.leviath"
    text = bp.read_text().replace(
        '[stages.discover.tool_permissions]\nshell = "ask"',
        '[stages.discover.tool_permissions]\nshell = "deny"',
    )
    bp.write_text(text)
    assert main(["diff", str(looser), str(CODER), "--no-user-config", "--fail-on-loosen"]) == 1
    assert "coder/discover shell: LOOSER deny -> ask" in capsys.readouterr().out


def test_check_and_hook_take_a_project(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["check", str(CODER), "--no-user-config", "--agent", "coder", "--workspace"]
    assert main([*argv, str(tmp_path), "read_file", '{"path": "README.md"}']) == 0
    assert "decision: allow" in capsys.readouterr().out
    event = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "cwd": str(tmp_path),
        "tool_input": {"file_path": str(tmp_path / "README.md")},
    }
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(event).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    argv = ["hook", "claude-code", "--plan", str(CODER), "--no-user-config", "--agent", "coder"]
    assert main(argv) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_project_that_does_not_compile_is_refused_with_its_errors(
    capsys: Any, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "agent.leviath").write_text(
        '[agent]\nname = "b"\nentry_stage = "s"\n[stages.s]\nx = 1\n'
    )
    for argv in (["show", str(broken)], ["check", str(broken), "--agent", "b", "read_file"]):
        assert main([*argv, "--no-user-config"]) == 2
        err = capsys.readouterr().err
        assert "CH201" in err and "does not compile" in err


# -- one spelling for the workspace, a verb's own usage ----------------------------------


def test_run_takes_workspace_and_still_workdir(charter_run_cli: Any, tmp_path: Path) -> None:
    for flag in ("--workspace", "--workdir"):
        ws = tmp_path / flag.strip("-")
        ws.mkdir()
        code = charter_run_cli(flag, ws)
        assert code == 0
        assert (ws / "greet.py").is_file() and (ws / ".charter" / "runs").is_dir()


@pytest.fixture
def charter_run_cli(capsys: Any) -> Any:
    def run(flag: str, ws: Path) -> int:
        argv = ["run", str(CODER), "--agent", "coder", "--yolo", "--no-user-config", "--quiet"]
        code = main([*argv, flag, str(ws)])
        capsys.readouterr()
        return code

    return run


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_unknown_option_prints_the_verbs_own_usage(verb: str, capsys: Any) -> None:
    assert main([verb, "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: charter {verb}"), err
    assert f"charter {verb}: error:" in err


# -- validate ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        CODER / "stages" / "review.toml",
        NOTES / "agent" / "mcp" / "docs.yaml",
        NOTES / "agent" / "tools" / "project_note" / "tool.yaml",
        CODER / "agent.leviath",
    ],
    ids=["stage", "mcp-server", "tool", "blueprint"],
)
def test_validating_one_file_validates_its_project(path: Path, capsys: Any) -> None:
    assert main(["validate", "--no-user-config", "--format", "json", str(path)]) == 0
    found = json.loads(capsys.readouterr().out)["findings"]
    assert "no-agent-files" not in {f["name"] for f in found}


@pytest.mark.parametrize(
    ("env", "coloured"),
    [({"FORCE_COLOR": "1"}, True), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, False), ({}, False)],
    ids=["force", "no-color-wins", "not-a-terminal"],
)
def test_validate_full_uses_colour_as_documented(
    env: dict[str, str], coloured: bool, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    main(["validate", "--no-user-config", "--format", "full", str(NOTES)])
    out = capsys.readouterr().out
    assert "CH414" in out
    assert bool(ANSI.search(out)) is coloured


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("valdate", "did you mean 'validate'?"),
        ("chek", "did you mean 'check'"),
        ("seve", "did you mean 'serve'?"),
        ("frobnicate", "the verbs are validate, compile"),
    ],
)
def test_a_mistyped_verb_names_the_verb_meant(capsys: Any, typed: str, hint: str) -> None:
    assert main([typed, "blueprints/"]) == 2
    err = capsys.readouterr().err
    assert f"{typed!r} is not a verb" in err and hint in err
