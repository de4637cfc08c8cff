"""The tool permissions of the hook corpora's main stage (tests/fixtures/hooks).

The Claude Code and Gemini CLI hook tests and the decision-server tests decide
the same recorded events, so they compile their plans from one table.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

WORK_STAGE: dict[str, str] = {
    "shell": "ask",
    "terminal": "ask",
    "read_file": "allow",
    "write_file": "ask",
    "edit_file": "ask",
    "patch": "ask",
    "search_files": "allow",
    "list_dir": "allow",
    "web_fetch": "ask",
    "web_search": "deny",
    "docs__lookup": "allow",
    "todo": "allow",
    "delegate_task": "ask",
    "send_to_agent": "allow",
    "task_list": "allow",
    "task_status": "allow",
    "task_control": "allow",
    "yield_until": "allow",
    "skill_view": "allow",
    "schedule_manage": "deny",
    "clarify": "allow",
    "ask_user_confirm": "allow",
}

# Tools a person must be present for; an unattended stage leaves them out.
PERSON_ONLY = ("clarify", "ask_user_confirm")


def run_hook(
    client: str, plan: Path, event: dict[str, Any], *flags: str, env: dict[str, str]
) -> dict[str, Any]:
    """``charter hook CLIENT --plan PLAN [FLAGS]`` run as the client runs it,
    ``event`` on stdin; its one JSON answer (exit 0 asserted)."""
    proc = subprocess.run(
        [sys.executable, "-m", "charter.compiler", "hook", client, "--plan", str(plan), *flags],
        input=json.dumps(event).encode(), capture_output=True, timeout=60,
        env={**os.environ, **env},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def home_and_workspace(tmp_path: Path, monkeypatch: Any) -> Path:
    """A workspace ``tmp_path/ws`` with a private home (``HOME``) beside it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def assert_contained(rewritten: str, ws: Path, tmp: Path) -> None:
    """The sandbox command of ``rewritten`` (a hook's contained command) run
    as the client's shell runs it, with a command that writes inside the
    workspace and outside it: the command runs, and only the first write lands."""
    outside = tmp / "outside"
    outside.mkdir()
    original = f"echo in > made.txt; echo out > {outside}/evil.txt; echo done"
    prefix = shlex.split(rewritten)[:-3]
    text = shlex.join([*prefix, "/bin/bash", "-c", original])
    proc = subprocess.run(["/bin/bash", "-c", text], cwd=ws, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"done" in proc.stdout
    assert (ws / "made.txt").read_text() == "in\n"
    assert not (outside / "evil.txt").exists()
