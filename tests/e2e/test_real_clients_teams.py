"""End to end: Charter set up by ``charter init`` as a team sets it up, in the
real Claude Code and Gemini CLI (issue 27).

* the settings init writes name no path of this machine: the workspace is
  copied to another place (a teammate's checkout) and the hook still answers;
* the team's own Claude Code rules keep working: ``Bash(npm test)`` allowed
  by the team runs, and a team deny still refuses what Charter allows;
* Gemini CLI's person sees Charter's ask in Gemini CLI's own confirmation
  dialog (an interactive session in a terminal), and a headless run gets a
  prompt deny instead of waiting forever;
* with ``--contain``, an allowed shell command (Claude Code's Bash, Gemini
  CLI's run_shell_command) runs inside the stage's sandbox: what it writes
  in the workspace lands, what it writes outside does not.

The clients run as in test_real_clients.py (pinned versions, a scripted fake
model on 127.0.0.1); skipped with the reason when they cannot be installed.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import struct
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _support.clients import (
    GEMINI_USER_SETTINGS,
    FakeModel,
    Place,
    run_claude,
    run_gemini,
)

from charter.compiler.cli import main

BIN = str(Path(sys.executable).parent)


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Charter on PATH, as a team installs it, so init writes `charter`."""
    if not (Path(BIN) / "charter").exists():
        pytest.skip("no charter console script beside this Python")
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))


def _package(ws: Path, script: str) -> None:
    (ws / "package.json").write_text(
        json.dumps({"name": "e2e", "version": "1.0.0", "scripts": {"test": script}})
    )


def _init(ws: Path, client: str) -> str:
    assert main(["init", client, str(ws), "--no-user-config", "--force"]) == 0
    folder = ".claude" if client == "claude-code" else ".gemini"
    event = "PreToolUse" if client == "claude-code" else "BeforeTool"
    data = json.loads((ws / folder / "settings.json").read_text())
    command: str = data["hooks"][event][0]["hooks"][0]["command"]
    assert command.startswith(f"charter hook {client} "), command
    assert "--plan" not in command  # the plan is the positional operand
    assert str(ws) not in command and "/tmp" not in command, command
    return command


def _teammate(place: Place, tmp: Path) -> Place:
    """The workspace as a teammate's checkout: the same files, another place."""
    other = Place(tmp)
    shutil.rmtree(other.ws)
    shutil.copytree(place.ws, other.ws, symlinks=True)
    return other


def _bash(command: str) -> dict[str, Any]:
    return {"name": "Bash", "input": {"command": command, "description": "run"}}


def test_claude_code_keeps_the_teams_rules_from_a_portable_init(
    claude: Path, on_path: None, tmp_path: Path
) -> None:
    mine = Place(tmp_path / "mine")
    _package(mine.ws, "node -e \"require('fs').writeFileSync('ran-test.txt', 'x')\"")
    (mine.ws / ".claude").mkdir()
    (mine.ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(npm test)"], "deny": ["Bash(ls:*)"]}})
    )
    _init(mine.ws, "claude-code")
    team = _teammate(mine, tmp_path / "team")
    script = {"t": [[_bash("npm test")], [_bash("ls -la")], [_bash("npm test --silent")]]}
    with FakeModel("anthropic", script) as model:
        run = run_claude(claude, model, "t", workspace=team.ws, home=team.home)
    assert run.returncode == 0, run.stderr[-2000:]
    ran, listed, other = (run.result("t", turn) for turn in range(3))
    # the team's allow holds behind Charter's hook, in the teammate's checkout
    assert (team.ws / "ran-test.txt").exists(), (ran, run.stdout[-2000:])
    assert not (mine.ws / "ran-test.txt").exists()
    # Charter allows ls, the team denies it: Claude Code keeps the deny
    assert listed is not None and listed["error"] and "README.md" not in listed["text"], listed
    # exact means exact: Charter asks about the rest, and headless nobody answers
    assert other is not None and other["error"], other


def test_claude_code_contained_bash_cannot_write_outside(
    claude: Path, on_path: None, tmp_path: Path
) -> None:
    from _support.sandbox import need_namespaces

    need_namespaces()
    place = Place(tmp_path / "p")
    evil = place.out / "evil.txt"
    _package(
        place.ws,
        "node -e \"const fs = require('fs'); fs.writeFileSync('in.txt', 'x'); "
        f"try {{ fs.writeFileSync('{evil}', 'x') }} catch (e) {{ console.log('blocked') }}\"",
    )
    (place.ws / ".claude").mkdir()
    (place.ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(npm test)"]}})
    )
    command = _init(place.ws, "claude-code")
    settings = place.ws / ".claude" / "settings.json"

    def run(hook_command: str) -> dict[str, Any] | None:
        data = json.loads(settings.read_text())
        data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = hook_command
        settings.write_text(json.dumps(data))
        with FakeModel("anthropic", {"c": [[_bash("npm test")]]}) as model:
            done = run_claude(claude, model, "c", workspace=place.ws, home=place.home)
        assert done.returncode == 0, done.stderr[-2000:]
        result: dict[str, Any] | None = done.result("c")
        return result

    # bare, the allowed command writes outside the workspace ...
    run(command)
    assert (place.ws / "in.txt").exists() and evil.exists()
    evil.unlink()
    (place.ws / "in.txt").unlink()
    # ... contained, it writes in the workspace and nowhere else
    contained = command.replace(" --agent ", " --contain --agent ", 1)
    result = run(contained)
    assert (place.ws / "in.txt").exists(), result
    assert not evil.exists(), result
    assert result is not None and "blocked" in result["text"], result


def test_gemini_cli_contained_shell_command_cannot_write_outside(
    gemini: Path, on_path: None, tmp_path: Path
) -> None:
    """Gemini CLI takes the hook's tool_input as the call's arguments: an
    allowed run_shell_command, contained, writes in the workspace only."""
    from _support.sandbox import need_namespaces

    need_namespaces()
    place = Place(tmp_path / "p")
    evil = place.out / "evil.txt"
    (place.ws / "write.sh").write_text(
        f"echo x > in.txt\n(echo x > {evil}) 2>/dev/null || echo blocked\n"
    )
    command = _init(place.ws, "gemini-cli")
    settings = place.ws / ".gemini" / "settings.json"
    call = {"name": "run_shell_command", "input": {"command": "sh write.sh"}}

    def run(hook_command: str) -> dict[str, Any] | None:
        data = json.loads(settings.read_text())
        data["hooks"]["BeforeTool"][0]["hooks"][0]["command"] = hook_command
        settings.write_text(json.dumps(data))
        with FakeModel("gemini", {"s": [[call]]}) as model:
            done = run_gemini(gemini, model, "s", workspace=place.ws, home=place.home)
        assert done.returncode != "timeout", done.stderr[-2000:]
        result: dict[str, Any] | None = done.result("s", gemini=True)
        return result

    # running a script is asked about; --allow shell lifts that ask here
    allowed = command.replace(" --agent ", " --allow shell --agent ", 1)
    # bare, the allowed command writes outside the workspace ...
    run(allowed)
    assert (place.ws / "in.txt").exists() and evil.exists()
    evil.unlink()
    (place.ws / "in.txt").unlink()
    # ... contained, it writes in the workspace and nowhere else
    result = run(allowed.replace(" --agent ", " --contain --agent ", 1))
    assert (place.ws / "in.txt").exists(), result
    assert not evil.exists(), result
    assert result is not None and "blocked" in result["text"], result


def test_gemini_cli_headless_gets_a_deny_not_a_wait(
    gemini: Path, on_path: None, tmp_path: Path
) -> None:
    place = Place(tmp_path / "p")
    command = _init(place.ws, "gemini-cli")
    assert "--ask auto" in command
    call = {"name": "run_shell_command", "input": {"command": "touch made.txt"}}
    with FakeModel("gemini", {"g": [[call]]}) as model:
        run = run_gemini(gemini, model, "g", workspace=place.ws, home=place.home)
    assert run.returncode != "timeout", run.stderr[-2000:]
    result = run.result("g", gemini=True)
    assert not (place.ws / "made.txt").exists()
    assert result is not None and "nobody can be asked" in result["text"], result


def _strip(raw: bytes) -> str:
    text = re.sub(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07", b"", raw)
    return text.decode("utf-8", "replace")


def test_gemini_cli_shows_charters_ask_to_its_person(
    gemini: Path, on_path: None, tmp_path: Path
) -> None:
    """An interactive Gemini CLI session in a terminal: the plan's ask is put
    to the person in Gemini CLI's confirmation dialog, with Charter's reason,
    and the command runs only once the person allows it."""
    import fcntl
    import pty
    import termios

    place = Place(tmp_path / "p")
    _init(place.ws, "gemini-cli")
    (place.home / ".gemini").mkdir(parents=True, exist_ok=True)
    (place.home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_USER_SETTINGS))
    call = {"name": "run_shell_command", "input": {"command": "touch made.txt"}}
    with FakeModel("gemini", {"i": [[call]]}) as model:
        env = {
            "PATH": os.environ["PATH"], "HOME": str(place.home), "SHELL": "/bin/bash",
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_API_KEY": "e2e-dummy", "NO_BROWSER": "1",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }  # fmt: skip
        argv = [str(gemini), "-m", "gemini-2.5-pro", "--approval-mode", "yolo",
                "-i", "SCENARIO=i carry out the scripted steps"]  # fmt: skip
        pid, fd = pty.fork()
        if pid == 0:  # the child: Gemini CLI in the terminal
            os.chdir(place.ws)
            os.execve(argv[0], argv, env)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        seen = b""
        approved = False
        try:
            end = time.monotonic() + 120
            while time.monotonic() < end and not (place.ws / "made.txt").exists():
                ready, _, _ = select.select([fd], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(fd, 65536)
                    except OSError:
                        break
                    seen += chunk
                text = _strip(seen)
                if not approved and "Allow once" in text:
                    # the dialog is up; nothing ran before the person's answer
                    assert not (place.ws / "made.txt").exists()
                    approved = True
                    time.sleep(0.5)
                    os.write(fd, b"\r")  # "Allow once", the first choice
        finally:
            # The child leads its own session: end Gemini CLI and the copy
            # of itself it relaunches, both in that process group.
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(fd)
    text = _strip(seen)
    assert "charter: the plan asks for approval" in text, text[-3000:]
    assert "Allow execution" in text, text[-3000:]
    assert approved and (place.ws / "made.txt").exists(), text[-3000:]
