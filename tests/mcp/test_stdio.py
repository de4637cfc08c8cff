"""The real thing over stdio: ``charter mcp lock`` launching a server script,
then discovery and calls with a hanging server next to it. Few round trips:
each start of the test server costs most of a second."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from charter.compiler.cli import main
from charter.runtime.mcp.client import McpHost, McpPool, requests_for
from charter.runtime.mcp.stderr import LOG_NAME

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "fake_server.py"
GRANTS = (
    '    "mcp.connect:docs": {}\n    "mcp.call:docs": {}\n'
    '    "mcp.connect:slow": {}\n    "mcp.call:slow": {}\n'
)
TOKEN = "tok-9f8e7d6c5b4a"


def _manifest(mode: str, extra: str = "") -> str:
    return (
        f"command: {json.dumps(sys.executable)}\n"
        f"args: [{json.dumps(str(SERVER))}, {mode}]\n"
        "approval_policy: auto\n" + extra
    )


def _project(kit: Any, tmp_path: Path) -> Path:
    root: Path = kit.write(
        tmp_path / "p",
        {
            "agent.yaml": kit.core(GRANTS),
            "agent/mcp/docs.yaml": _manifest(
                "normal", "env:\n  FAKE_TOKEN: ${H11_TOKEN}\ncwd: work\n"
            ),
            "agent/mcp/slow.yaml": _manifest("hang", "connect_timeout_seconds: 1\n"),
            "work/.keep": "",
        },
    )
    return root


def test_lock_refuses_without_yes_when_nobody_can_be_asked(
    kit: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "started"
    code = f"open({str(marker)!r}, 'w').close()"
    root = kit.write(
        tmp_path / "p",
        {
            "agent.yaml": kit.core(),
            "agent/mcp/docs.yaml": f"command: {json.dumps(sys.executable)}\n"
            f"args: [-c, {json.dumps(code)}]\n",
        },
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal
    assert main(["mcp", "lock", str(root)]) == 2
    out, err = capsys.readouterr()
    assert sys.executable in out  # the command it would have run is shown
    assert "--yes" in err and "refusing" in err
    assert not marker.exists() and not (root / "charter.lock.json").exists()


def test_lock_usage_errors_start_nothing(kit: Any, tmp_path: Path) -> None:
    root = _project(kit, tmp_path)
    assert main(["mcp", "lock", str(root), "--server", "nope", "--yes"]) == 2
    assert main(["mcp"]) == 2
    assert main(["mcp", "lock", str(tmp_path / "missing"), "--yes"]) == 2
    (root / "agent/mcp/broken.yaml").write_text("transport: http\nurl: https://x.example/\n")
    assert main(["mcp", "lock", str(root), "--yes"]) == 2
    assert not (root / "charter.lock.json").exists()


def test_lock_then_discover_and_call_over_stdio(
    kit: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(kit, tmp_path)
    monkeypatch.setenv("H11_TOKEN", TOKEN)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # slow never answers: exit 1, but docs is still locked.
    assert main(["mcp", "lock", str(root), "--yes"]) == 1
    out, err = capsys.readouterr()
    assert "+ echo (docs__echo)" in out and TOKEN not in out
    assert "slow: timeout" in err
    lock = json.loads((root / "charter.lock.json").read_text())
    assert sorted(lock["servers"]) == ["docs"]
    assert sorted(t["name"] for t in lock["servers"]["docs"]["tools"]) == [
        "crash",
        "echo",
        "env_names",
        "whereami",
    ]
    assert lock["servers"]["docs"]["launch"]["command"] == sys.executable
    assert TOKEN not in (root / "charter.lock.json").read_text()

    result = kit.compiled(root)
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    assert "mcp-lock-stale" in [d.name for d in result.diagnostics]  # slow was never locked
    agent = result.plan.body.agents[0]
    grants = [g.capability for g in agent.grants]
    environ = {**os.environ, "H11_TOKEN": TOKEN, "SECRET_API_KEY": "should-not-leak"}
    logs = tmp_path / "logs"
    host = McpHost(
        agent_dir=root, workspace=root, home=tmp_path / "home", log_dir=logs, environ=environ
    )
    (tmp_path / "home").mkdir()

    async def session() -> tuple[Any, ...]:
        # Connecting is always at least asked about; the person says yes.
        requests, refused = requests_for(agent, grants, lambda preview: True)
        assert refused == []
        async with McpPool(host) as pool:
            reports = await pool.discover(requests)
            echo = await pool.call("docs__echo", {"text": "hello"}, grants=grants)
            env = await pool.call("docs__env_names", {}, grants=grants)
            where = await pool.call("docs__whereami", {}, grants=grants)
            crash = await pool.call("docs__crash", {}, grants=grants)
            after = await pool.call("docs__echo", {"text": "again"}, grants=grants)
        return reports, echo, env, where, crash, after

    reports, echo, env, where, crash, after = anyio.run(session)
    by = {r.server: r for r in reports}
    assert by["slow"].status == "timeout" and by["slow"].rule == "mcp-connect-timeout"
    assert by["docs"].status == "ok" and by["docs"].pinned
    assert sorted(t.name for t in by["docs"].offered) == [
        "docs__crash",
        "docs__echo",
        "docs__env_names",
        "docs__whereami",
    ]
    assert (echo.status, echo.content) == ("ok", "hello")
    names = set(env.content.split())
    assert "FAKE_TOKEN" in names and "SECRET_API_KEY" not in names and "H11_TOKEN" not in names
    assert Path(where.content) == (root / "work").resolve()
    assert (crash.status, crash.rule) == ("error", "mcp-server-died")
    assert (after.status, after.rule) == ("unavailable", "mcp-server-unavailable")

    log = logs / LOG_NAME
    text = log.read_text()
    assert "fake server starting" in text and TOKEN not in text and "<redacted:" in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
