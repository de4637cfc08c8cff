"""charter check, check-path and hook claude-code: decisions, exit codes, round trips."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.hooks.claude_code import decide_event

HOOKS = Path(__file__).parent.parent / "fixtures" / "hooks"


@pytest.fixture
def plan_file(kit: SimpleNamespace, tmp_path: Path) -> Path:
    plan = kit.make_plan(
        {
            "work": {
                "shell": "ask",
                "read_file": "allow",
                "write_file": "ask",
                "edit_file": "ask",
                "search_files": "allow",
                "list_dir": "allow",
                "web_fetch": "deny",
                "web_search": "ask",
                "docs__lookup": "allow",
            },
            "review": {"read_file": "allow"},
        },
        tools=[kit.mcp_tool("docs", "lookup")],
    )
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    return path


def _check(capsys: Any, *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().out


def test_check_exit_codes(plan_file: Path, workspace: Path, capsys: Any) -> None:
    common = [str(plan_file), "--agent", "a", "--workspace", str(workspace)]
    code, out = _check(capsys, *common, "read_file", '{"path":"notes.txt"}')
    assert code == 0 and out.startswith("decision: allow")
    code, out = _check(capsys, *common, "write_file", '{"path":"x","content":""}')
    assert code == 3 and "rule:     plan-ask" in out and "config" in out
    code, out = _check(
        capsys, *common, "--allow", "write_file", "write_file", '{"path":"x","content":""}'
    )
    assert code == 0 and "launch-flag" in out
    code, out = _check(capsys, *common, "--yolo", "web_fetch", '{"url":"https://a.example"}')
    assert code == 1 and "plan-deny" in out
    code, out = _check(capsys, *common, "--stage", "review", "shell", '{"command":"ls"}')
    assert code == 1 and "not-offered-in-stage" in out


def test_check_json_format(plan_file: Path, workspace: Path, capsys: Any) -> None:
    code, out = _check(
        capsys,
        str(plan_file),
        "--agent",
        "a",
        "--workspace",
        str(workspace),
        "--format",
        "json",
        "bash",
        '{"command":"rm -rf src"}',
    )
    data = json.loads(out)
    assert code == 3
    assert {"decision", "gate", "rule", "reason", "provenance"} <= set(data)
    assert data["resolved_tool"] == "shell" and data["fingerprint"]
    assert data["provenance"]["scopes"][0]["scope"] == "config"
    assert data["shell_guard"]["rule"] == "file-delete"


def test_check_usage_and_plan_errors(plan_file: Path, tmp_path: Path, capsys: Any) -> None:
    assert main(["check", str(plan_file), "--agent", "nobody", "read_file", "{}"]) == 2
    assert "no agent named 'nobody'" in capsys.readouterr().err
    assert main(["check", str(plan_file), "--agent", "a", "--stage", "x", "read_file"]) == 2
    assert main(["check", str(plan_file), "--agent", "a", "read_file", "[1]"]) == 2
    assert main(["check", str(plan_file), "--agent", "a", "read_file", "{oops"]) == 2
    assert main(["check", str(plan_file), "--agent", "a"]) == 2
    tampered = tmp_path / "tampered.json"
    tampered.write_text(plan_file.read_text().replace('"permission":"ask"', '"permission":"allow"'))
    assert main(["check", str(tampered), "--agent", "a", "read_file", "{}"]) == 2
    assert "digest mismatch" in capsys.readouterr().err
    truncated = tmp_path / "truncated.json"
    truncated.write_text(plan_file.read_text()[:200])
    assert main(["check", str(truncated), "--agent", "a", "read_file", "{}"]) == 2
    assert "truncated" in capsys.readouterr().err


def test_check_jsonl(plan_file: Path, workspace: Path, capsys: Any, monkeypatch: Any) -> None:
    lines = [
        {"id": 1, "tool": "read_file", "args": {"path": "notes.txt"}},
        {"id": "two", "tool": "read_file", "args": {"path": "/etc/passwd"}},
        {"id": 3, "tool": "shell", "args": {"command": "ls"}, "stage": "review"},
        {"id": 4, "tool": "shell", "args": {"command": "ls"}, "stage": "nope"},
        {"id": 5, "args": {}},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out = _check(
        capsys, str(plan_file), "--agent", "a", "--workspace", str(workspace), "--jsonl"
    )
    got = [json.loads(line) for line in out.splitlines()]
    assert code == 2  # some lines could not be read (they are still answered)
    assert [(g["id"], g["decision"], g["rule"]) for g in got] == [
        (1, "allow", "plan-allow"),
        ("two", "deny", "path-outside"),
        (3, "deny", "not-offered-in-stage"),
        (4, "deny", "malformed-request"),
        (5, "deny", "malformed-request"),
        (None, "deny", "malformed-request"),
    ]
    assert all(g["gate"] == "input" for g in got[3:])
    # Well-formed lines only: the exit code is the most restrictive answer's.
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(json.dumps(x) for x in lines[:2])))
    assert _check(capsys, str(plan_file), "--agent", "a", "--jsonl")[0] == 1


def test_check_path(workspace: Path, capsys: Any, monkeypatch: Any) -> None:
    ws = str(workspace)
    assert main(["check-path", "--workspace", ws, "src/main.py"]) == 0
    assert main(["check-path", "--workspace", ws, "--op", "write", "../x"]) == 1
    assert main(["check-path", "--workspace", ws, ".env"]) == 3
    capsys.readouterr()
    assert main(["check-path", "--workspace", ws, "--format", "json", "escape/secret.txt"]) == 1
    assert json.loads(capsys.readouterr().out)["rule"] == "path-symlink-escape"
    text = (
        json.dumps({"id": 1, "path": "notes.txt", "op": "write"})
        + "\n"
        + json.dumps({"id": 2, "path": "%2e%2e/x"})
        + "\n"
        + json.dumps({"id": 3, "path": 5})
        + "\n"
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["check-path", "--workspace", ws, "--jsonl"]) == 2  # line 3 is malformed
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(g["id"], g["decision"], g["rule"]) for g in got] == [
        (1, "allow", "path-inside"),
        (2, "deny", "path-encoded"),
        (3, "deny", "malformed-request"),
    ]
    assert set(got[0]) == {"id", "decision", "rule", "reason"}


def _hook_cases() -> list[Any]:
    out = []
    for line in (HOOKS / "expected.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, decision, needle = line.split("\t")
            out.append(pytest.param(name, decision, needle, id=name))
    return out


def _event(name: str, workspace: Path) -> bytes:
    return (HOOKS / name).read_bytes().replace(b"__WORKSPACE__", str(workspace).encode())


@pytest.mark.parametrize("name,decision,needle", _hook_cases())
def test_hook_fixture(
    plan_file: Path, workspace: Path, name: str, decision: str, needle: str
) -> None:
    answer = decide_event(_event(name, workspace), plan_path=plan_file)
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert (out["permissionDecision"], needle in out["permissionDecisionReason"]) == (
        decision,
        True,
    ), out["permissionDecisionReason"]


def test_every_hook_fixture_has_an_expectation() -> None:
    listed = {p.values[0] for p in _hook_cases()}
    assert listed == {p.name for p in HOOKS.glob("*.json")}


def test_hook_fails_closed_on_plan_problems(
    workspace: Path, tmp_path: Path, plan_file: Path
) -> None:
    event = _event("read_inside.json", workspace)
    missing = decide_event(event, plan_path=tmp_path / "none.json")
    assert missing["hookSpecificOutput"]["permissionDecision"] == "ask"
    wrong_agent = decide_event(event, plan_path=plan_file, agent="zz")
    assert wrong_agent["hookSpecificOutput"]["permissionDecision"] == "ask"
    no_cwd = json.loads(event)
    del no_cwd["cwd"]
    answer = decide_event(json.dumps(no_cwd).encode(), plan_path=plan_file)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_hook_round_trip_subprocess(plan_file: Path, workspace: Path) -> None:
    """The real command as Claude Code runs it: event on stdin, JSON on stdout, exit 0."""
    for name, expected in (
        ("read_inside.json", "allow"),
        ("read_outside.json", "deny"),
        ("malformed_not_json.json", "deny"),
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "charter.compiler",
                "hook",
                "claude-code",
                "--plan",
                str(plan_file),
                "--agent",
                "a",
            ],
            input=_event(name, workspace),
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)
        assert answer["hookSpecificOutput"]["permissionDecision"] == expected
