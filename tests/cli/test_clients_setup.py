"""charter init, charter doctor and charter serve as a person runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.compiler.cli.init_cmd import FAIL_CLOSED

CHARTER = [sys.executable, "-m", "charter.compiler"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the user's settings, for --user and doctor
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE", raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    return root


def _init(*argv: str) -> int:
    return main(["init", *argv, "--no-user-config"])


def _hook_of(settings: Path, event: str) -> dict[str, Any]:
    data = json.loads(settings.read_text())
    (group,) = [g for g in data["hooks"][event] if any("charter" in json.dumps(h) or
                                                        "/v1/hooks/" in json.dumps(h)
                                                        for h in g["hooks"])]  # fmt: skip
    hook: dict[str, Any] = group["hooks"][0]
    return hook


def _run_hook(command: str, event: dict[str, Any], cwd: Path) -> dict[str, Any]:
    # As the clients run a hook: in the project, with its folder in the
    # variable each client sets.
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(cwd), "GEMINI_PROJECT_DIR": str(cwd)}
    proc = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(event).encode(), cwd=cwd,
        capture_output=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def test_init_writes_a_policy_a_plan_and_a_hook_that_answers(ws: Path, capsys: Any) -> None:
    assert _init("claude-code", str(ws)) == 0
    said = capsys.readouterr().out
    policy = ws / ".charter" / "policy" / "assistant" / "agent.leviath"
    plan = ws / ".charter" / "plan.json"
    settings = ws / ".claude" / "settings.json"
    for path in (policy, plan, settings):
        assert f"wrote {path}" in said
    ignore = ws / ".charter" / ".gitignore"
    assert f"wrote {ignore}" in said
    assert {"runs/", "serve/"} <= set(ignore.read_text().split())
    # The pre-commit hook validates the project: it must find init's policy.
    assert main(["validate", str(ws), "--no-user-config"]) == 0
    capsys.readouterr()
    hook = _hook_of(settings, "PreToolUse")
    assert hook["type"] == "command" and hook["timeout"] == 10
    command = hook["command"]
    assert command.endswith(FAIL_CLOSED)
    assert ' claude-code "$CLAUDE_PROJECT_DIR"/.charter/plan.json --agent' in command
    assert str(ws) not in command  # the file teams commit names no path of this machine
    event = {
        "cwd": str(ws),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Write",
        "tool_input": {"file_path": "/etc/passwd", "content": ""},
    }
    out = _run_hook(command, event, ws)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    read = {**event, "tool_name": "Read", "tool_input": {"file_path": str(ws / "README.md")}}
    assert _run_hook(command, read, ws)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_init_names_charter_from_path_when_it_is_there(
    ws: Path, capsys: Any, monkeypatch: Any
) -> None:
    # The charter this test runs is the one a teammate's PATH finds too.
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "charter").exists():
        pytest.skip("no charter script beside this interpreter")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    monkeypatch.setattr(sys, "argv", [str(bin_dir / "charter")])
    assert _init("gemini-cli", str(ws)) == 0
    command = _hook_of(ws / ".gemini" / "settings.json", "BeforeTool")["command"]
    assert command.startswith("charter hook gemini-cli ")
    assert '"$GEMINI_PROJECT_DIR"/.charter/plan.json' in command
    assert str(ws) not in command and str(bin_dir) not in command
    assert "note: charter is not on PATH" not in capsys.readouterr().out


def test_init_refuses_to_overwrite_and_force_keeps_the_rest(ws: Path, capsys: Any) -> None:
    settings = ws / ".claude" / "settings.json"
    settings.parent.mkdir()
    linter = {"type": "command", "command": "my-linter"}
    mine = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [linter]}]},
    }
    settings.write_text(json.dumps(mine))
    assert _init("claude-code", str(ws)) == 1
    assert "pass --force" in capsys.readouterr().err
    assert json.loads(settings.read_text()) == mine
    assert not (ws / ".charter").exists()
    for _ in range(2):  # a second --force replaces Charter's hook, never adds another
        assert _init("claude-code", str(ws), "--force") == 0
    data = json.loads(settings.read_text())
    assert data["permissions"] == mine["permissions"]
    commands = [h["command"] for g in data["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert commands[1:] == ["my-linter"] and "hook claude-code" in commands[0]


def test_a_second_client_shares_the_policy(ws: Path, capsys: Any) -> None:
    assert _init("claude-code", str(ws)) == 0
    policy = ws / ".charter" / "policy" / "assistant" / "agent.leviath"
    policy.write_text(policy.read_text().replace('web_search = "ask"', 'web_search = "deny"'))
    capsys.readouterr()
    assert _init("gemini-cli", str(ws), "--serve", "http://127.0.0.1:8787") == 0
    assert f"kept {policy}" in capsys.readouterr().out
    assert 'web_search = "deny"' in policy.read_text()
    hook = _hook_of(ws / ".gemini" / "settings.json", "BeforeTool")
    assert hook["timeout"] == 30000 and hook["name"] == "charter"
    assert hook["command"].startswith("curl ") and hook["command"].endswith(FAIL_CLOSED)
    assert "http://127.0.0.1:8787/v1/hooks/gemini-cli" in hook["command"]


def test_init_user_settings_and_the_http_hook(ws: Path) -> None:
    assert _init("gemini-cli", str(ws), "--user") == 0
    user = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    assert "hook gemini-cli" in _hook_of(user, "BeforeTool")["command"]
    assert not (ws / ".gemini").exists()
    assert _init("gemini-cli", str(ws), "--http", "--serve", "http://x") == 2
    url = "http://127.0.0.1:8787"
    assert _init("claude-code", str(ws), "--serve", url, "--http") == 0
    hook = _hook_of(ws / ".claude" / "settings.json", "PreToolUse")
    assert hook == {
        "type": "http",
        "url": f"{url}/v1/hooks/claude-code",
        # above the server's time limit (5 s) and log wait (2 s): the client
        # has Charter's deny, never a timeout that lets the call run
        "timeout": 15,
        # Claude Code blocks the call when the server cannot answer
        "onFailure": "block",
        # the token, from the variable settings.local.json sets; the
        # committed settings hold none
        "headers": {"Authorization": "Bearer $CHARTER_SERVE_TOKEN"},
        "allowedEnvVars": ["CHARTER_SERVE_TOKEN"],
    }
    token = (ws / ".charter" / "serve" / "token").read_text().split()[-1]
    local = ws / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"env": {"CHARTER_SERVE_TOKEN": token}}
    assert local.stat().st_mode & 0o777 == 0o600
    assert token not in (ws / ".claude" / "settings.json").read_text()


def test_doctor_finds_the_hook_and_what_breaks_it(ws: Path, capsys: Any) -> None:
    assert main(["doctor", str(ws)]) == 1
    assert "no Charter hook found" in capsys.readouterr().out
    assert _init("claude-code", str(ws)) == 0
    capsys.readouterr()
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 0
    out = capsys.readouterr().out
    assert "ok    answers a write outside the workspace with deny" in out
    assert "ok    the plan loads" in out

    local = ws / ".claude" / "settings.local.json"
    local.write_text('{"disableAllHooks": true}')
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 1
    assert "FAIL  " in capsys.readouterr().out
    local.unlink()

    plan = ws / ".charter" / "plan.json"
    plan.write_text(plan.read_text()[:100])
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  the plan does not load" in out

    settings = ws / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = "/nonexistent/charter hook claude-code"
    settings.write_text(json.dumps(data))
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 1
    out = capsys.readouterr().out
    assert "exit 2; }`: if it cannot" in out and "is not an executable program" in out


def test_init_force_never_loses_an_edited_policy(ws: Path, capsys: Any) -> None:
    assert _init("claude-code", str(ws)) == 0
    policy = ws / ".charter" / "policy" / "assistant" / "agent.leviath"
    starter = policy.read_text()
    edited = starter + "\n# our team's own rule\n"
    policy.write_text(edited)
    capsys.readouterr()
    assert main(["init", "claude-code", str(ws), "--force", "--no-user-config"]) == 0
    said = capsys.readouterr().out
    backup = policy.with_name("agent.leviath.1.bak")
    assert backup.read_text() == edited and f"kept your edited policy as {backup}" in said
    assert policy.read_text() == starter
    # A second --force keeps the first copy and makes no copy of the starter.
    assert main(["init", "claude-code", str(ws), "--force", "--no-user-config"]) == 0
    assert backup.read_text() == edited
    assert not policy.with_name("agent.leviath.2.bak").exists()


def test_doctor_fails_a_plan_older_than_its_policy(ws: Path, capsys: Any) -> None:
    assert _init("claude-code", str(ws)) == 0
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 0
    assert "newer than every file of its policy" in capsys.readouterr().out
    policy = ws / ".charter" / "policy" / "assistant" / "agent.leviath"
    later = (ws / ".charter" / "plan.json").stat().st_mtime + 5
    os.utime(policy, (later, later))
    assert main(["doctor", str(ws), "--client", "claude-code"]) == 1
    assert "the plan is older than its policy" in capsys.readouterr().out


def test_doctor_warns_about_an_untrusted_gemini_folder(ws: Path, capsys: Any) -> None:
    assert _init("gemini-cli", str(ws)) == 0
    capsys.readouterr()
    assert main(["doctor", str(ws), "--client", "gemini-cli"]) == 0
    assert "warn  the folder is not trusted yet" in capsys.readouterr().out
    trusted = Path(os.environ["HOME"]) / ".gemini" / "trustedFolders.json"
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({str(ws): "TRUST_FOLDER"}))
    assert main(["doctor", str(ws), "--client", "gemini-cli"]) == 0
    assert "trusts" in capsys.readouterr().out


def _serve(*argv: str, port_file: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([*CHARTER, "serve", *argv, "--listen", "127.0.0.1:0",
                             "--port-file", str(port_file), "--no-user-config"],
                            stderr=subprocess.PIPE)  # fmt: skip
    for _ in range(600):
        if port_file.exists() and port_file.read_text().strip():
            return proc, f"http://127.0.0.1:{int(port_file.read_text())}"
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "")
        time.sleep(0.05)
    raise AssertionError("charter serve did not start")


def _post(url: str, event: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(event).encode(), headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out: dict[str, Any] = json.loads(resp.read())
    return out


def test_serve_compiles_a_project_and_recompiles_it_on_change(ws: Path, tmp_path: Path) -> None:
    assert _init("claude-code", str(ws), "--serve", "http://127.0.0.1:8787") == 0
    policy_dir = ws / ".charter" / "policy" / "assistant"
    port_file = tmp_path / "port"
    proc, base = _serve(str(policy_dir), "--agent", "assistant", "--reload-interval", "0.2",
                        "--log", str(tmp_path / "log.jsonl"), port_file=port_file)  # fmt: skip
    token = (ws / ".charter" / "serve" / "token").read_text().split()[-1]
    auth = {"Authorization": f"Bearer {token}"}
    try:
        health = urllib.request.Request(base + "/v1/health", headers=auth)
        with urllib.request.urlopen(health, timeout=10) as resp:
            first = json.loads(resp.read())["plan"]["digest"]
        event = {
            "cwd": str(ws),
            "hook_event_name": "PreToolUse",
            "permission_mode": "default",
            "tool_name": "Read",
            "tool_input": {"file_path": str(ws / "README.md")},
        }
        url = base + "/v1/hooks/claude-code"
        assert _post(url, event, auth)["hookSpecificOutput"]["permissionDecision"] == "allow"
        # the doctor checks the server the settings point at
        settings = ws / ".claude" / "settings.json"
        settings.write_text(settings.read_text().replace("http://127.0.0.1:8787", base))
        assert main(["doctor", str(ws), "--client", "claude-code"]) == 0

        policy = policy_dir / "agent.leviath"
        policy.write_text(policy.read_text().replace('read_file = "allow"', 'read_file = "deny"'))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = _post(url, event, auth)["hookSpecificOutput"]["permissionDecision"]
            if got == "deny":
                break
            time.sleep(0.2)
        assert got == "deny"
        with urllib.request.urlopen(health, timeout=10) as resp:
            assert json.loads(resp.read())["plan"]["digest"] != first
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    assert not port_file.exists()


def test_serve_refuses_what_it_cannot_use(ws: Path, tmp_path: Path) -> None:
    assert _init("claude-code", str(ws)) == 0
    plan = str(tmp_path / "plan.json")  # outside .charter/: no token there
    Path(plan).write_bytes((ws / ".charter" / "plan.json").read_bytes())
    for argv, needle in (
        ([plan, "--listen", "0.0.0.0:0"], "needs a bearer token"),
        ([plan, "--listen", "nowhere"], "expected HOST:PORT"),
        ([plan, "--agent", "zz", "--listen", "127.0.0.1:0"], "no agent named 'zz'"),
        ([str(tmp_path / "none.json")], "no such plan file"),
    ):
        proc = subprocess.run([*CHARTER, "serve", *argv], capture_output=True, timeout=60)
        assert proc.returncode == 2, argv
        assert needle in proc.stderr.decode(), (argv, proc.stderr)


def test_init_writes_a_private_token_that_serve_requires_and_the_hooks_send(
    ws: Path, tmp_path: Path
) -> None:
    """Only the hooks init configured can ask the server: the token is the
    user's alone, the server asks every request for it (loopback too), and
    the curl hook sends it; without it the hook blocks or is denied."""
    assert _init("gemini-cli", str(ws), "--serve", "http://127.0.0.1:8787") == 0
    token_file = ws / ".charter" / "serve" / "token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.parent.stat().st_mode & 0o077 == 0
    line = token_file.read_text()
    assert line.startswith("Authorization: Bearer ") and len(line.split()[-1]) >= 40
    # a second init keeps the token (running servers and hooks use it)
    assert _init("claude-code", str(ws), "--serve", "http://127.0.0.1:8787") == 0
    assert token_file.read_text() == line
    hook = _hook_of(ws / ".gemini" / "settings.json", "BeforeTool")
    assert '-H @"$GEMINI_PROJECT_DIR"/.charter/serve/token' in hook["command"]
    assert str(ws) not in hook["command"]  # portable: no path of this machine

    plan = ws / ".charter" / "plan.json"
    proc, base = _serve(str(plan), "--agent", "assistant", "--log", str(tmp_path / "l.jsonl"),
                        port_file=tmp_path / "port")  # fmt: skip
    try:
        event = {"cwd": str(ws), "hook_event_name": "BeforeTool", "tool_name": "read_file",
                 "tool_input": {"file_path": str(ws / "README.md")}}  # fmt: skip
        url = base + "/v1/hooks/gemini-cli"
        command = hook["command"].replace("http://127.0.0.1:8787", base)
        assert _run_hook(command, event, ws)["decision"] == "allow"
        # a local process without the token is denied, on loopback too
        refused = _post(url, event)
        assert refused["decision"] == "deny" and "bearer token" in refused["reason"]
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/v1/health", timeout=10)
        assert err.value.code == 401
        # without its token file the call is denied (curl sends no token), never run
        token_file.rename(tmp_path / "moved")
        env = {**os.environ, "GEMINI_PROJECT_DIR": str(ws)}
        blocked = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event).encode(),
                                 cwd=ws, capture_output=True, timeout=60, env=env)  # fmt: skip
        assert blocked.returncode == 2 or json.loads(blocked.stdout)["decision"] == "deny"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_serve_refuses_a_token_file_others_can_read(ws: Path, tmp_path: Path) -> None:
    assert _init("claude-code", str(ws)) == 0
    token_file = ws / ".charter" / "serve" / "token"
    token_file.chmod(0o644)
    proc = subprocess.run([*CHARTER, "serve", str(ws / ".charter" / "plan.json"), "--listen",
                           "127.0.0.1:0"], capture_output=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert "chmod 600" in proc.stderr.decode()
