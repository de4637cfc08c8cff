"""A user-config setting that the policy overrides is a warning naming both
files (CH415), and the starter policy's advice on loosening it is true."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main

POLICY = Path(".charter/policy/assistant/agent.leviath")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    assert main(["init", "claude-code", str(root), "--no-user-config"]) == 0
    return root


def _user_config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        '[agent_tool_permissions.assistant]\nsearch_files = "allow"\ntodo = "allow"\n'
    )
    return config


def _decision(capsys: Any, policy_dir: Path, config: Path, tool: str) -> str:
    capsys.readouterr()
    assert main(["show", str(policy_dir), "--config", str(config), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    (row,) = [r for r in rows if r["tool"] == tool]
    decision: str = row["decision"]
    return decision


def test_the_users_allow_that_the_starter_policy_overrides_is_a_warning_naming_both(
    ws: Path, tmp_path: Path, capsys: Any
) -> None:
    config = _user_config(tmp_path)
    capsys.readouterr()
    argv = ["validate", str(ws / POLICY.parent), "--config", str(config), "--format", "json"]
    assert main(argv) == 0  # a warning, not an error
    findings = json.loads(capsys.readouterr().out)["findings"]
    found = [f for f in findings if f["code"] == "CH415"]
    assert {f["data"]["tool"] for f in found} == {"search_files", "todo"}
    policy_lines = (ws / POLICY).read_text().splitlines()
    for f in found:
        assert f["name"] == "user-permission-overridden" and f["severity"] == "warning"
        # reported at the user's setting ...
        assert Path(f["path"]).resolve() == config.resolve()
        assert f["line"] in (2, 3)
        # ... naming the policy's line that wins
        where = re.search(r"agent\.leviath:(\d+)", f["message"])
        assert where is not None, f["message"]
        assert policy_lines[int(where.group(1)) - 1].startswith(f'{f["data"]["tool"]} = "ask"')
    assert _decision(capsys, ws / POLICY.parent, config, "search_files") == "ask"


def test_the_starter_policys_advice_lets_the_users_allow_apply(
    ws: Path, tmp_path: Path, capsys: Any
) -> None:
    policy = ws / POLICY
    text = policy.read_text()
    assert "delete their" in text and "CH415" in text
    # Follow the comment: delete the tools' lines, allow them in the config.
    kept = [line for line in text.splitlines() if not line.startswith(("search_files =", "todo ="))]
    policy.write_text("\n".join(kept) + "\n")
    config = _user_config(tmp_path)
    assert _decision(capsys, policy.parent, config, "search_files") == "allow"
    assert _decision(capsys, policy.parent, config, "todo") == "allow"
    capsys.readouterr()
    assert main(["validate", str(policy.parent), "--config", str(config), "--format", "json"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "CH415"]


def test_an_agent_cores_approval_that_overrides_the_users_allow_is_named(
    tmp_path: Path, capsys: Any
) -> None:
    core = Path(__file__).resolve().parents[2] / "blueprints" / "notes-core"
    config = tmp_path / "config.toml"
    config.write_text('[agent_tool_permissions.notes-core]\nread_file = "allow"\n')
    capsys.readouterr()
    assert main(["validate", str(core), "--config", str(config), "--format", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    (found,) = [f for f in findings if f["code"] == "CH415"]
    assert Path(found["path"]).resolve() == config.resolve() and found["line"] == 2
    assert re.search(r"agent\.yaml:\d+ overrides it: the agent core's approval", found["message"])
    assert found["data"]["permission"] == "ask"
