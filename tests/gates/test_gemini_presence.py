"""Whether a person answers Gemini CLI's confirmation: the hook's ``--ask auto``.

The process tree is laid out as a fake ``/proc``: the hook, the shell that
runs it, and Gemini CLI's node process with its arguments and terminals.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from charter.runtime.hooks.presence import gemini_session_is_attended, interactive_argv

GEMINI = "/opt/node_modules/.bin/gemini"


def _proc(root: Path, pid: int, ppid: int, argv: list[str], tty: bool = True) -> None:
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "cmdline").write_bytes(b"".join(w.encode() + b"\0" for w in argv))
    (d / "stat").write_text(f"{pid} (odd) name) S {ppid} 1 1 0\n")
    for fd in (0, 1):
        os.symlink("/dev/pts/4" if tty else "pipe:[1234]", d / "fd" / str(fd))


def _tree(tmp_path: Path, gemini_args: list[str], *, tty: bool = True) -> Path:
    root = tmp_path / "proc"
    _proc(root, 300, 200, ["/bin/sh", "-c", "charter hook gemini-cli || exit 2"])
    _proc(root, 200, 100, ["node", "--max-old-space-size=4096", GEMINI, *gemini_args], tty)
    _proc(root, 100, 1, ["-bash"])
    return root


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ([], True),
        (["--approval-mode", "yolo", "-m", "gemini-2.5-pro"], True),
        (["-i", "fix the tests"], True),
        (["--prompt-interactive=fix it"], True),
        (["-p", "fix the tests"], False),
        (["--prompt=fix"], False),
        (["fix the tests"], False),  # a query word: answered, then Gemini CLI exits
        (["-y", "fix the tests"], False),
        (["-r"], True),
        (["-r", "-y"], True),
        (["--frobnicate"], None),  # an option it does not know: cannot tell
        (["--", "x"], None),
        (["-m"], None),
    ],
)
def test_gemini_cli_arguments_are_read_as_gemini_cli_reads_them(
    args: list[str], want: bool | None
) -> None:
    assert interactive_argv(args) is want


def test_an_interactive_session_at_a_terminal_is_attended(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["--approval-mode", "yolo"])
    assert gemini_session_is_attended({}, proc_root=str(root), start=300) == (True, "")


@pytest.mark.parametrize(
    ("args", "tty", "env", "why"),
    [
        (["-p", "go"], True, {}, "headless"),
        (["--approval-mode", "yolo"], False, {}, "not a terminal"),
        ([], True, {"CI": "true"}, "CI"),
        ([], True, {"GITHUB_ACTIONS": "true"}, "CI"),
        (["--unknown-flag"], True, {}, "cannot read"),
    ],
)
def test_anything_short_of_a_person_at_a_terminal_is_unattended(
    tmp_path: Path, args: list[str], tty: bool, env: dict[str, str], why: str
) -> None:
    root = _tree(tmp_path, args, tty=tty)
    attended, said = gemini_session_is_attended(env, proc_root=str(root), start=300)
    assert not attended and why in said, said


def test_no_gemini_cli_process_above_the_hook_is_unattended(tmp_path: Path) -> None:
    root = tmp_path / "proc"
    _proc(root, 300, 200, ["/bin/sh", "-c", "x"])
    _proc(root, 200, 1, ["python3", "driver.py"])
    attended, said = gemini_session_is_attended({}, proc_root=str(root), start=300)
    assert not attended and "cannot find" in said
    attended, said = gemini_session_is_attended({}, proc_root=str(tmp_path / "none"), start=300)
    assert not attended


def test_ask_auto_denies_where_nobody_can_be_asked(tmp_path: Path) -> None:
    """Run from the test (no Gemini CLI above it), the plan's ask is a deny
    that says why, never Gemini CLI's ask (which would wait forever)."""
    import subprocess
    import sys

    from charter.compiler.cli import main

    policy = tmp_path / "p"
    policy.mkdir()
    assert main(["init", "gemini-cli", str(policy), "--no-user-config"]) == 0
    settings = json.loads((policy / ".gemini" / "settings.json").read_text())
    command = settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
    assert "--ask auto" in command  # what init writes for Gemini CLI
    event = {"hook_event_name": "BeforeTool", "cwd": str(policy), "tool_name": "write_file",
             "tool_input": {"file_path": "x.txt", "content": ""}}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "charter.compiler", "hook", "gemini-cli", "--plan",
         str(policy / ".charter" / "plan.json"), "--ask", "auto"],
        input=json.dumps(event).encode(), capture_output=True, timeout=60,
        env={**os.environ, "CI": "true"},
    )  # fmt: skip
    answer = json.loads(proc.stdout)
    assert answer["decision"] == "deny", answer
    assert "nobody can be asked (Gemini CLI runs headless under CI)" in answer["reason"]
