"""``charter hook claude-code --contain``: an allowed command runs in the sandbox.

The rewrite must hand the contained bash exactly the original text, whatever
it holds, and nothing of it may run outside; Claude Code's own deny and ask
rules, which it would match against the rewritten text, are kept by the hook.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support.hooks import assert_contained, home_and_workspace, run_hook
from _support.sandbox import need_namespaces

from charter.compiler.cli import main
from charter.runtime.hooks.contain import client_rule_hit, contained_command

HOSTILE = [
    "ls",
    "echo 'single' \"double\" `echo tick` $(echo sub) ${HOME} $((1+2))",
    "echo a'b\"c'\\'d",
    "printf '%s\\n' \"it's\"; touch {MARK}",
    "echo one\necho two\n\n# comment\n",
    'echo "$(touch {MARK})"',
    "x=1; echo $x; echo \\$x",
    "echo '\\' ; echo \\\\",
    "echo 'unbalanced",
    "cat <<'EOF'\n$(touch {MARK})\nEOF",
    "echo 日本語 café \t tab",
    "-n",
    "",
    "' ; touch {MARK} ; '",
    '" ; touch {MARK} ; "',
]


@pytest.mark.parametrize("original", HOSTILE)
def test_the_rewrite_passes_the_command_as_one_exact_word(original: str, tmp_path: Path) -> None:
    """The shell Claude Code starts reads the rewritten text; the program it
    starts must receive the original text as bash -c's one argument, and no
    part of the original may run on the way (a marker file would appear)."""
    mark = tmp_path / "ran-outside"
    original = original.replace("{MARK}", str(mark))
    recorder = [sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))"]
    text = contained_command(recorder, tmp_path / "ws", original)
    assert text is not None
    proc = subprocess.run(["/bin/bash", "-c", text], capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    argv = json.loads(proc.stdout)
    assert argv == ["--workdir", str(tmp_path / "ws"), "--", "/bin/bash", "-c", original]
    assert not mark.exists()
    assert shlex.split(text)[-1] == original


def test_a_command_with_a_nul_byte_is_not_rewritten() -> None:
    assert contained_command(["charter"], "/ws", "ls\0rm -rf ~") is None


def _settings(path: Path, **lists: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": lists}))
    return path


@pytest.mark.parametrize(
    ("rules", "command", "hit"),
    [
        ({"deny": ["Bash(curl:*)"]}, "curl https://x.example", ("deny", "Bash(curl:*)")),
        ({"deny": ["Bash(curl:*)"]}, "ls && curl x", ("deny", "Bash(curl:*)")),
        ({"deny": ["Bash(curl:*)"]}, "echo $(curl x)", ("deny", "Bash(curl:*)")),
        ({"deny": ["Bash(curl:*)"]}, "ls -la", None),
        ({"deny": ["Bash(git push)"]}, "git push", ("deny", "Bash(git push)")),
        ({"ask": ["Bash(git * main)"]}, "git push origin main", ("ask", "Bash(git * main)")),
        (
            {"ask": ["Bash(npm run *)"], "deny": ["Bash(npm:*)"]},
            "npm run x",
            ("deny", "Bash(npm:*)"),
        ),
        ({"deny": ["Bash"]}, "ls", ("deny", "Bash")),
        ({"allow": ["Bash(curl:*)"]}, "curl x", None),  # an allow never counts here
        ({"deny": ["Read(./.env)"]}, "cat .env", None),  # not a Bash rule
    ],
)
def test_claude_codes_own_rules_are_found_in_the_original(
    tmp_path: Path, rules: dict[str, list[str]], command: str, hit: Any
) -> None:
    settings = _settings(tmp_path / ".claude" / "settings.json", **rules)
    assert client_rule_hit(command, [settings, tmp_path / "absent.json"]) == hit


def test_settings_that_cannot_be_read_refuse(tmp_path: Path) -> None:
    bad = tmp_path / "settings.json"
    bad.write_text("{not json")
    kind, why = client_rule_hit("ls", [bad])  # type: ignore[misc]
    assert kind == "deny" and "not JSON" in why


# -- through the hook command ------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = home_and_workspace(tmp_path, monkeypatch)
    _settings(root / ".claude" / "settings.json", allow=["Bash(npm test)"], deny=["Bash(curl:*)"])
    assert main(["init", "claude-code", str(root), "--no-user-config", "--force"]) == 0
    return root


def _hook(ws: Path, command: str, *flags: str) -> dict[str, Any]:
    event = {
        "hook_event_name": "PreToolUse", "cwd": str(ws), "permission_mode": "default",
        "tool_name": "Bash", "tool_input": {"command": command, "description": "d"},
    }  # fmt: skip
    plan = ws / ".charter" / "plan.json"
    out = run_hook("claude-code", plan, event, *flags, env={"CLAUDE_PROJECT_DIR": str(ws)})
    answer: dict[str, Any] = out["hookSpecificOutput"]
    return answer


def test_contain_rewrites_only_what_it_allows(ws: Path) -> None:
    plain = _hook(ws, "ls")
    assert plain["permissionDecision"] == "allow" and "updatedInput" not in plain
    out = _hook(ws, "ls", "--contain")
    assert out["permissionDecision"] == "allow"
    assert "contained" in out["permissionDecisionReason"]
    new = out["updatedInput"]
    assert new["description"] == "d"  # the rest of the input is kept
    argv = shlex.split(new["command"])
    assert argv[-3:] == ["/bin/bash", "-c", "ls"]
    assert argv[1:4] == ["-m", "charter.compiler", "sandbox"]
    assert argv[argv.index("--agent") + 1] == "assistant"
    assert argv[argv.index("--stage") + 1] == "work"
    assert argv[argv.index("--workdir") + 1] == str(ws)
    # an ask or a deny is left as it is: nothing to run
    assert "updatedInput" not in _hook(ws, "npm install", "--contain")
    denied = _hook(ws, "ls > /etc/passwd", "--contain")
    assert denied["permissionDecision"] == "deny" and "updatedInput" not in denied


def test_contain_keeps_the_teams_deny_that_the_rewrite_would_hide(ws: Path) -> None:
    """The team denies curl; Claude Code would match that rule against the
    rewritten text, where it no longer matches, so the hook keeps it, more
    broadly than Claude Code (the word anywhere in the command)."""
    out = _hook(ws, "npm test && curl https://x.example", "--contain")
    assert out["permissionDecision"] in ("ask", "deny")
    assert "updatedInput" not in out
    (ws / "x").write_text("curl\n")
    out = _hook(ws, "grep curl x", "--contain")
    assert out["permissionDecision"] == "deny" and "Bash(curl:*)" in out["permissionDecisionReason"]


def test_the_rewritten_command_runs_in_the_sandbox(ws: Path, tmp_path: Path) -> None:
    """The rewritten text, run as Claude Code's shell runs it: the command
    runs, writes in the workspace, and cannot write outside it."""
    need_namespaces()
    out = _hook(ws, "npm test", "--contain")  # an allowed call, to take its prefix
    assert_contained(out["updatedInput"]["command"], ws, tmp_path)


def test_init_writes_the_contained_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    ws.mkdir()
    assert main(["init", "claude-code", str(ws), "--no-user-config", "--contain"]) == 0
    data = json.loads((ws / ".claude" / "settings.json").read_text())
    command = data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert " hook claude-code --contain " in command and "/.charter/plan.json" in command
    out = _hook(ws, "ls", "--contain")
    assert "updatedInput" in out
    url = "http://127.0.0.1:1"
    assert main(["init", "claude-code", str(ws), "--force", "--serve", url, "--contain"]) == 2
