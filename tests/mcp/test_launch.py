"""Launch decisions made before anything runs: environment, cwd, ``${VAR}``,
previews and identities."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.runtime.mcp.launch import (
    LaunchError,
    launch_identity,
    preview,
    resolve_cwd,
    resolve_launch,
)
from charter.runtime.plan import Decision, McpServerPlan

ENV = {"PATH": "/usr/bin:/bin", "DOCS_TOKEN": "tok-abcdef123", "AWS_SECRET_ACCESS_KEY": "aws-x"}


def plan(**kw: object) -> McpServerPlan:
    base: dict[str, object] = {
        "server": "docs",
        "transport": "stdio",
        "command": "docs-mcp",
        "connect_capability": "mcp.connect:docs",
        "call_capability": "mcp.call:docs",
        "connect_decision": Decision(permission="ask", liftable=True),
    }
    base.update(kw)
    return McpServerPlan.model_validate(base)


def launch(p: McpServerPlan, root: Path, environ: dict[str, str] = ENV) -> object:
    return resolve_launch(p, environ=environ, home=root / "home", agent_dir=root, workspace=root)


def test_child_env_is_the_allowlist_plus_declared_entries(tmp_path: Path) -> None:
    p = plan(env=(("DOCS_TOKEN", "${DOCS_TOKEN}"), ("MODE", "ro")), args=("--t", "${DOCS_TOKEN}"))
    got = resolve_launch(
        p, environ=ENV, home=tmp_path / "h", agent_dir=tmp_path, workspace=tmp_path
    )
    assert got.env["DOCS_TOKEN"] == "tok-abcdef123" and got.env["MODE"] == "ro"
    assert got.env["HOME"] == str(tmp_path / "h")
    assert "AWS_SECRET_ACCESS_KEY" not in got.env
    assert got.args == ("--t", "tok-abcdef123")
    assert got.redactor.redact("token tok-abcdef123", "model") == "token <redacted>"


def test_missing_variable_is_an_error_not_an_empty_value(tmp_path: Path) -> None:
    with pytest.raises(LaunchError) as info:
        launch(plan(env=(("T", "${NOPE}"),)), tmp_path)
    assert info.value.rule == "mcp-env-missing" and "NOPE" in info.value.message


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "PYTHONPATH", "NODE_OPTIONS"])
def test_declared_env_cannot_steer_execution(tmp_path: Path, name: str) -> None:
    with pytest.raises(LaunchError) as info:
        launch(plan(env=((name, "x"),)), tmp_path)
    assert info.value.rule == "mcp-env-refused"


def test_cwd_must_stay_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "out").symlink_to(tmp_path)
    assert resolve_cwd("sub", ws, ws) == (ws / "sub").resolve()
    assert resolve_cwd(None, ws, ws) == ws.resolve()
    for bad in ("..", "../ws-evil", "out", "/etc"):
        with pytest.raises(LaunchError) as info:
            resolve_cwd(bad, ws, ws)
        assert info.value.rule == "mcp-cwd-outside-workspace", bad
    with pytest.raises(LaunchError) as missing:
        resolve_cwd("nope", ws, ws)
    assert missing.value.rule == "mcp-cwd-missing"


def test_http_preview_and_identity_show_only_the_origin() -> None:
    p = plan(
        transport="streamable_http",
        command=None,
        url="https://user:pw@mcp.example.com/v1?key=${KEY}",
        headers=(("Authorization", "Bearer ${KEY}"),),
    )
    shown = preview(p)
    assert shown.target == "https://mcp.example.com:443"
    assert shown.header_keys == ("Authorization",) and "Bearer" not in str(shown)
    assert launch_identity(p) == {"origin": "https://mcp.example.com:443"}


def test_stdio_identity_keeps_the_text_as_written() -> None:
    p = plan(args=("--token", "${DOCS_TOKEN}"))
    assert launch_identity(p) == {"command": "docs-mcp", "args": ["--token", "${DOCS_TOKEN}"]}
