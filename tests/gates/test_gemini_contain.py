"""``charter hook gemini-cli --contain``: an allowed shell command runs in the sandbox.

Gemini CLI 0.61 replaces the call's arguments with the hook's ``tool_input``
and then checks its policy engine against them, so the team's Gemini CLI
rules for the original command (policy files, ``tools.exclude``) are kept by
the hook, more broadly than Gemini CLI applies them.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from _support.hooks import assert_contained, home_and_workspace, run_hook
from _support.sandbox import need_namespaces

from charter.compiler.cli import main
from charter.runtime.hooks.contain import gemini_rule_hit

_TEAM = "team.toml"


def _policy(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _TEAM
    path.write_text(text)
    return path


def _rule(tool: str = '"run_shell_command"', decision: str = "deny", **match: str) -> str:
    lines = [f"toolName = {tool}", f'decision = "{decision}"', "priority = 100"]
    lines += [f"{k} = {v}" for k, v in match.items()]
    return "[[rule]]\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "command", "kind"),
    [
        (_rule(commandPrefix='"rm"'), "rm -rf build", "deny"),
        (_rule(commandPrefix='"rm"'), "ls && rm -rf build", "deny"),
        (_rule(commandPrefix='"rm"'), "echo $(rm x)", "deny"),
        (_rule(commandPrefix='"rm"'), "ls -la", None),
        (_rule(commandPrefix='"rm"'), "charm x", None),
        (_rule(commandPrefix='["git push", "curl"]'), "git push origin main", "deny"),
        (_rule(commandRegex='"curl\\\\s+-X"'), "curl -X POST https://x.example", "deny"),
        (_rule(argsPattern='"\\"command\\": \\"npm publish"'), "npm publish", "deny"),
        (_rule(decision="ask_user", commandPrefix='"npm install"'), "npm install x", "ask"),
        (_rule(decision="allow", commandPrefix='"rm"'), "rm x", None),
        (_rule(tool='"*"', commandPrefix='"rm"'), "rm x", "deny"),
        (_rule(tool='["read_file", "run_shell_*"]', commandPrefix='"rm"'), "rm x", "deny"),
        (_rule(tool='"read_file"', commandPrefix='"rm"'), "rm x", None),
        (_rule(), "rm x", None),  # no pattern: Gemini CLI applies it to the new call too
        (_rule(commandRegex='"(unclosed"'), "ls", "deny"),  # unreadable here: may match
        (
            _rule(commandPrefix='"rm"') + _rule(decision="ask_user", commandPrefix='"ls"'),
            "ls; rm x",
            "deny",
        ),  # fmt: skip
    ],
)
def test_gemini_clis_own_rules_are_found_in_the_original(
    text: str, command: str, kind: str | None, tmp_path: Path
) -> None:
    path = _policy(tmp_path / "policies", text)
    hit = gemini_rule_hit(command, {"command": command}, [path])
    assert (hit[0] if hit else None) == kind, hit


def test_settings_excludes_and_unreadable_files(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"tools": {"exclude": ["run_shell_command(rm -rf)", 3]}}))
    assert gemini_rule_hit("ls; rm -rf /", {}, [settings]) == (
        "deny", "settings.json tools.exclude run_shell_command(rm -rf)"
    )  # fmt: skip
    assert gemini_rule_hit("ls", {}, [settings]) is None
    legacy = tmp_path / "old.json"
    legacy.write_text(json.dumps({"excludeTools": ["ShellTool(curl)"]}))
    assert gemini_rule_hit("curl x", {}, [legacy]) is not None
    broken = _policy(tmp_path / "bad", "[[rule]\n")
    kind, why = gemini_rule_hit("ls", {}, [broken])  # type: ignore[misc]
    assert kind == "deny" and "not TOML" in why
    assert gemini_rule_hit("ls", {}, [tmp_path / "missing.toml"]) is None


# -- through the hook command ------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = home_and_workspace(tmp_path, monkeypatch)
    _policy(root / ".gemini" / "policies", _rule(commandPrefix='"curl"'))
    assert main(["init", "gemini-cli", str(root), "--no-user-config", "--force"]) == 0
    return root


def _hook(ws: Path, command: str, *flags: str) -> dict[str, Any]:
    event = {
        "hook_event_name": "BeforeTool", "cwd": str(ws), "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "d"},
    }  # fmt: skip
    plan = ws / ".charter" / "plan.json"
    return run_hook("gemini-cli", plan, event, *flags, env={"GEMINI_PROJECT_DIR": str(ws)})


def test_contain_rewrites_only_what_it_allows(ws: Path) -> None:
    plain = _hook(ws, "ls")
    assert plain["decision"] == "allow" and "hookSpecificOutput" not in plain
    out = _hook(ws, "ls", "--contain")
    assert out["decision"] == "allow" and "contained" in out["reason"]
    new = out["hookSpecificOutput"]["tool_input"]
    assert new["description"] == "d"  # Gemini CLI takes the whole input from the hook
    argv = shlex.split(new["command"])
    assert argv[-3:] == ["/bin/bash", "-c", "ls"]
    assert argv[1:4] == ["-m", "charter.compiler", "sandbox"]
    assert argv[argv.index("--workdir") + 1] == str(ws)
    denied = _hook(ws, "ls > /etc/passwd", "--contain")
    assert denied["decision"] == "deny" and "hookSpecificOutput" not in denied
    asked = _hook(ws, "npm install", "--contain")
    assert asked["decision"] != "allow" and "hookSpecificOutput" not in asked


def test_contain_keeps_the_teams_rule_that_the_rewrite_would_hide(ws: Path) -> None:
    # Charter allows the read; the team's Gemini CLI rule denies curl, which
    # it would match only against the original command
    (ws / "x").write_text("curl\n")
    assert _hook(ws, "grep curl x")["decision"] == "allow"
    out = _hook(ws, "grep curl x", "--contain")
    assert out["decision"] == "deny" and "hookSpecificOutput" not in out
    assert _TEAM in out["reason"]


def test_the_rewritten_command_runs_in_the_sandbox(ws: Path, tmp_path: Path) -> None:
    need_namespaces()
    out = _hook(ws, "ls", "--contain")
    assert_contained(out["hookSpecificOutput"]["tool_input"]["command"], ws, tmp_path)


def test_init_writes_the_contained_gemini_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = home_and_workspace(tmp_path, monkeypatch)
    assert main(["init", "gemini-cli", str(ws), "--no-user-config", "--contain"]) == 0
    data = json.loads((ws / ".gemini" / "settings.json").read_text())
    command = data["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
    assert " hook gemini-cli --contain " in command
    assert "hookSpecificOutput" in _hook(ws, "ls", "--contain")
