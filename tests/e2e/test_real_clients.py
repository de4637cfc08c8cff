"""End to end: Charter's hooks inside the real Claude Code and Gemini CLI.

The clients are installed from npm into a cache folder on first use (pinned
versions, see _support/clients.py; skipped with the reason when node or npm
is missing or the install fails, unless CHARTER_E2E=require) and run
headless, unmodified, against a scripted fake model on 127.0.0.1. Each test
asserts on what actually happened: the files on disk and the tool results
the client sent back to the model.

Every scenario runs with the command hook (``charter hook ...``) and through
``charter serve`` (Claude Code's ``"type": "http"`` hook, and a ``curl``
command hook for both clients): the outcomes must be the same.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.clients import (
    FakeModel,
    Place,
    compile_policy,
    run_claude,
    run_gemini,
)

from charter.compiler.cli.init_cmd import FAIL_CLOSED

CHARTER = [sys.executable, "-m", "charter.compiler"]
SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "clients"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_policy(tmp_path_factory.mktemp("policy"), CHARTER)


@pytest.fixture(scope="module")
def server(plan: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``charter serve`` on a free loopback port; yields its base URL."""
    work = tmp_path_factory.mktemp("serve")
    port_file = work / "port"
    proc = subprocess.Popen(
        [*CHARTER, "serve", str(plan), "--agent", "e2e", "--listen", "127.0.0.1:0",
         "--port-file", str(port_file), "--log", str(work / "decisions.jsonl")],
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(600):
            if port_file.exists() and port_file.read_text().strip():
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.05)
        yield f"http://127.0.0.1:{int(port_file.read_text())}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(15) == 0
        except subprocess.TimeoutExpired:
            proc.kill()


def _hook_command(kind: str, plan: Path) -> str:
    # FAIL_CLOSED: a hook that cannot start (charter missing, a broken
    # environment) blocks the call instead of letting it run.
    return shlex.join([*CHARTER, "hook", kind, "--plan", str(plan), "--agent", "e2e"]) + FAIL_CLOSED


def _curl_command(url: str) -> str:
    return (
        "curl -sS --fail --max-time 8 -H 'Content-Type: application/json' --data-binary @- "
        + shlex.quote(url)
        + FAIL_CLOSED
    )


# -- Claude Code ----------------------------------------------------------------------


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"name": tool, "input": args}


def _scenarios(file: str) -> list[dict[str, Any]]:
    """The scenarios of ``tests/fixtures/clients/<file>`` (see the README there)."""
    lines = (SCENARIOS / file).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# scenario -> (permission mode, the call, how to tell it ran, Charter's answer)
CLAUDE: dict[str, tuple[str, dict[str, Any], tuple[str, str], str]] = {
    r["name"]: (r["mode"], r["call"], tuple(r["check"]), r["expect"])
    for r in _scenarios("claude_code.jsonl")
}


def _claude_settings(hook: dict[str, Any]) -> str:
    return json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}})


def _run_claude_scenario(
    binary: Path, tmp: Path, name: str, hook: dict[str, Any], mode: str | None = None
) -> tuple[bool, dict[str, Any] | None, Any]:
    """Claude Code, with `hook` as its only PreToolUse hook, asked by the model
    to make scenario `name`'s call (in the scenario's permission mode unless
    `mode` is given)."""
    own_mode, call, check, _ = CLAUDE[name]
    place = Place(tmp)
    (place.ws / ".claude").mkdir()
    (place.ws / ".claude" / "settings.json").write_text(_claude_settings(hook))
    script = {name: [[place.sub(call)]]}
    with FakeModel("anthropic", script) as model:
        run = run_claude(
            binary, model, name, workspace=place.ws, home=place.home, mode=mode or own_mode
        )
    result = run.result(name)
    return place.ran(check, result), result, run


@pytest.mark.parametrize("name", sorted(CLAUDE))
def test_claude_code_runs_what_charter_allows_and_nothing_else(
    claude: Path, plan: Path, server: str, tmp_path: Path, name: str
) -> None:
    expect = CLAUDE[name][3]
    url = f"{server}/v1/hooks/claude-code"
    hooks = {
        "command": {"type": "command", "command": _hook_command("claude-code", plan)},
        "http": {"type": "http", "url": url},
        "curl": {"type": "command", "command": _curl_command(url)},
    }
    seen: dict[str, tuple[bool, str]] = {}
    for how, hook in hooks.items():
        hook["timeout"] = 30
        ran, result, run = _run_claude_scenario(claude, tmp_path / how, name, hook)
        assert run.returncode == 0, (how, run.stderr[-2000:])
        # deny is blocked, allow runs, and an ask is not run headless
        assert ran is (expect == "allow"), (how, result, run.stdout[-2000:])
        if expect == "deny":
            assert result is not None and result["error"], (how, result)
            assert "charter:" in result["text"], (how, result)
        text = result["text"] if result else ""
        seen[how] = (ran, text.replace(str(tmp_path / how), "<tmp>"))
    # the server gives the same results as the command hook
    assert seen["http"] == seen["command"] and seen["curl"] == seen["command"], seen


def test_claude_code_blocks_the_call_when_the_hook_cannot_start(
    claude: Path, tmp_path: Path, server: str
) -> None:
    """Without FAIL_CLOSED Claude Code runs the call when the hook command is
    missing (bypassPermissions mode); with it, the call is blocked. The curl
    hook blocks too when the server is down."""
    missing = (
        shlex.join(["/nonexistent/charter", "hook", "claude-code", "--plan", "x"]) + FAIL_CLOSED
    )
    down = _curl_command("http://127.0.0.1:9/v1/hooks/claude-code")  # the discard port: refused
    for how, command in (("missing", missing), ("down", down)):
        hook = {"type": "command", "command": command, "timeout": 30}
        ran, _result, _run = _run_claude_scenario(
            claude, tmp_path / how, "c_write_inside", hook, mode="bypassPermissions"
        )
        assert not ran, how


# -- Gemini CLI --------------------------------------------------------------------------

GEMINI: dict[str, tuple[dict[str, Any], tuple[str, str], str]] = {
    r["name"]: (r["call"], tuple(r["check"]), r["expect"]) for r in _scenarios("gemini_cli.jsonl")
}


def _gemini_place(tmp: Path, command: str) -> Place:
    """A workspace whose Gemini CLI settings run `command` as the only BeforeTool hook."""
    place = Place(tmp)
    (place.ws / ".gemini").mkdir()
    hook = {"name": "charter", "type": "command", "command": command, "timeout": 30000}
    settings = {"hooks": {"BeforeTool": [{"matcher": ".*", "hooks": [hook]}]}}
    (place.ws / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return place


@pytest.mark.parametrize("name", sorted(GEMINI))
def test_gemini_cli_runs_what_charter_allows_and_nothing_else(
    gemini: Path, plan: Path, server: str, tmp_path: Path, name: str
) -> None:
    call, check, expect = GEMINI[name]
    hooks = {
        "command": _hook_command("gemini-cli", plan),
        "curl": _curl_command(f"{server}/v1/hooks/gemini-cli"),
    }
    seen: dict[str, tuple[bool, str]] = {}
    for how, command in hooks.items():
        place = _gemini_place(tmp_path / how, command)
        script = {name: [[place.sub(call)]]}
        with FakeModel("gemini", script) as model:
            run = run_gemini(gemini, model, name, workspace=place.ws, home=place.home)
        result = run.result(name, gemini=True)
        ran = place.ran(check, result)
        assert run.returncode != "timeout", (how, run.stderr[-2000:])
        assert ran is (expect == "allow"), (how, result, run.stderr[-2000:])
        if expect == "deny":
            assert result is not None and "charter:" in result["text"], (how, result)
        text = result["text"] if result else ""
        seen[how] = (ran, text.replace(str(tmp_path / how), "<tmp>"))
    assert seen["curl"] == seen["command"], seen


def test_the_adapters_know_every_tool_the_clients_offer(
    claude: Path, gemini: Path, plan: Path, tmp_path: Path
) -> None:
    """The tool lists of a real run (Claude Code's deferred tools included)
    are all in the adapters' tables, so no tool falls to "no counterpart"."""
    from charter.runtime.hooks import claude_code, gemini_cli

    place = Place(tmp_path / "claude")
    (place.ws / ".claude").mkdir()
    with FakeModel("anthropic", {"t": []}) as model:
        run_claude(claude, model, "t", workspace=place.ws, home=place.home)
        offered = set(model.offered_tools()) | set(model.deferred_tools())
    assert {"Bash", "Read", "Write", "Edit", "Agent", "NotebookEdit", "TaskCreate"} <= offered
    assert offered <= claude_code.KNOWN_TOOLS, sorted(offered - claude_code.KNOWN_TOOLS)

    place = Place(tmp_path / "gemini")
    (place.ws / ".gemini").mkdir()
    (place.ws / ".gemini" / "settings.json").write_text("{}")
    with FakeModel("gemini", {"t": []}) as model:
        run_gemini(gemini, model, "t", workspace=place.ws, home=place.home)
        offered = set(model.offered_tools())
    assert {"run_shell_command", "read_file", "write_file"} <= offered, offered
    assert offered <= gemini_cli.KNOWN_TOOLS, sorted(offered - gemini_cli.KNOWN_TOOLS)


def test_gemini_cli_blocks_the_call_when_the_hook_cannot_start(
    gemini: Path, tmp_path: Path
) -> None:
    """Gemini CLI 0.61 blocks on exit 2 only when the hook printed something
    (a silent exit 2, or an exit 1, lets the call run): FAIL_CLOSED prints."""
    commands = {
        "missing": "/nonexistent/charter hook gemini-cli" + FAIL_CLOSED,
        "crash": "sh -c 'cat >/dev/null; exit 1'" + FAIL_CLOSED,
    }
    for how, command in commands.items():
        place = _gemini_place(tmp_path / how, command)
        call = place.sub(_call("write_file", file_path="{WS}/new.txt", content="x\n"))
        with FakeModel("gemini", {"g_fail": [[call]]}) as model:
            run = run_gemini(gemini, model, "g_fail", workspace=place.ws, home=place.home)
        assert not (place.ws / "new.txt").exists(), (how, run.stderr[-1000:])
        result = run.result("g_fail", gemini=True)
        assert result is not None and "the hook could not run" in result["text"], (how, result)
