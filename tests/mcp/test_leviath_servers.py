"""[[mcp_servers]] the Leviath way, for real over stdio: ``charter mcp lock``
starts a blueprint's own server after confirmation, pins its tools, and the
compiler then offers them through a connector, refused until the user's
config trusts the blueprint's servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "fake_server.py"


def _blueprint() -> str:
    return (
        '[agent]\nname = "a"\n\n[[mcp_servers]]\nname = "docs"\n'
        f'command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}, "normal"]\n\n'
        '[stages.s]\nmode = "autonomous"\navailable_connectors = ["docs"]\n'
    )


def _compile(root: Path, config: Path | None) -> Any:
    project = load_project(root, config=config, use_default_config=False)
    result = compile_project(project, CompileOptions("posix", "/bin/bash"))
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    return result


def test_lock_then_offer_a_blueprint_servers_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "agent.leviath").write_text(_blueprint(), encoding="utf-8")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["mcp", "lock", str(root), "--yes", "--no-user-config"]) == 0
    out = capsys.readouterr().out
    assert "docs: run" in out and "+ echo (docs__echo)" in out
    lock = json.loads((root / "charter.lock.json").read_text())
    assert lock["servers"]["docs"]["launch"]["command"] == sys.executable

    result = _compile(root, None)
    [agent] = result.plan.body.agents
    [stage] = agent.stages
    assert "docs__echo" in stage.attended and all(n.startswith("docs__") for n in stage.attended)
    echo = agent.tool("docs__echo")
    assert echo is not None and echo.mcp is not None and echo.mcp.schema_sha256
    # Not trusted yet: nothing of the server may run.
    assert {t.decision.permission for t in stage.tools} == {"deny"}
    assert agent.mcp_servers[0].connect_decision.permission == "deny"

    config = tmp_path / "config.toml"
    config.write_text("[agent_mcp_servers.a]\nallow_blueprint = true\n", encoding="utf-8")
    [agent] = _compile(root, config).plan.body.agents
    assert {t.decision.permission for t in agent.stages[0].tools} == {"ask"}
    assert agent.mcp_servers[0].connect_decision.permission == "ask"
