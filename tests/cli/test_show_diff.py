"""charter compile, show and diff: the reviewer's view of a change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from charter.compiler.cli import main

REPO = Path(__file__).resolve().parents[2]


def _compile(capsys: Any, src: Path, out: Path) -> None:
    assert main(["compile", "--no-user-config", str(src), "-o", str(out)]) == 0
    capsys.readouterr()


def _coder(tmp_path: Path, name: str = "coder") -> Path:
    dst = tmp_path / name
    shutil.copytree(REPO / "blueprints" / "coder", dst)
    return dst


def test_compile_refuses_to_write_a_plan_with_errors(capsys: Any, tmp_path: Path) -> None:
    src = _coder(tmp_path)
    text = (src / "agent.leviath").read_text().replace('shell = "ask"', 'shell = "dney"', 1)
    (src / "agent.leviath").write_text(text)
    out = tmp_path / "plan.json"
    assert main(["compile", "--no-user-config", str(src), "-o", str(out)]) == 1
    assert not out.exists()
    assert "CH205" in capsys.readouterr().err


def test_show_lists_every_stage_tool_with_its_decision(capsys: Any, tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    _compile(capsys, _coder(tmp_path), plan)
    assert main(["show", str(plan), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {(r["stage"], r["tool"]): r for r in data["rows"]}
    assert rows[("discover", "shell")]["decision"] == "ask"
    assert rows[("discover", "shell")]["liftable"] is True
    assert rows[("plan", "ask_user_text")]["unattended"] is False
    assert "stage=ask" in rows[("discover", "shell")]["why"]


def test_show_refuses_a_tampered_plan(capsys: Any, tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    _compile(capsys, _coder(tmp_path), plan)
    data = json.loads(plan.read_text())
    data["body"]["agents"][0]["entry_stage"] = "summary"
    plan.write_text(json.dumps(data))
    assert main(["show", str(plan)]) == 2
    assert "digest mismatch" in capsys.readouterr().err


def test_diff_reports_loosened_and_added_decisions(capsys: Any, tmp_path: Path) -> None:
    old_src = _coder(tmp_path, "old")
    new_src = _coder(tmp_path, "new")
    text = (new_src / "agent.leviath").read_text()
    text = text.replace(
        'available_tools = ["read_file", "read_files", "list_dir", "shell", "context_write"]',
        'available_tools = ["read_file", "read_files", "list_dir", "shell", "context_write", '
        '"web_fetch"]',
    ).replace(
        "[stages.discover.tool_permissions]\n",
        '[stages.discover.tool_permissions]\nweb_fetch = "allow"\n',
    )
    (new_src / "agent.leviath").write_text(text)
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _compile(capsys, old_src, old)
    _compile(capsys, new_src, new)
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [change] = [c for c in data["changes"] if c["tool"] == "web_fetch"]
    assert change["change"] == "added" and change["after"] == "allow" and change["loosened"]
    assert main(["diff", str(old), str(new), "--fail-on-loosen"]) == 1
    assert "LOOSER" in capsys.readouterr().out
    assert main(["diff", str(old), str(old), "--fail-on-loosen"]) == 0
    assert "no decision changed" in capsys.readouterr().out


def test_diff_reports_a_tightened_decision_without_failing(capsys: Any, tmp_path: Path) -> None:
    old_src, new_src = _coder(tmp_path, "old"), _coder(tmp_path, "new")
    text = (new_src / "agent.leviath").read_text()
    (new_src / "agent.leviath").write_text(
        text.replace(
            '[stages.discover.tool_permissions]\nshell = "ask"',
            '[stages.discover.tool_permissions]\nshell = "deny"',
        )
    )
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _compile(capsys, old_src, old)
    _compile(capsys, new_src, new)
    assert main(["diff", str(old), str(new), "--fail-on-loosen", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [change] = [c for c in data["changes"] if c["stage"] == "discover" and c["tool"] == "shell"]
    assert (change["before"], change["after"], change["loosened"]) == ("ask", "deny", False)
