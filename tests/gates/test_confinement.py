"""Confinement end to end: what ``charter check --yolo`` answers for shell
calls that write outside the workspace, into protected paths, to targets only
known at run time, or read credentials; and that the runtime asks a person
(never a flag) and refuses before anyone is asked, as check says."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.gates import decide, execute
from charter.runtime.results import ToolCall
from charter.runtime.tools.registry import ToolRuntime

# (command, decision, rule) under --yolo with shell and write_file at ask.
# "person" in the last column: an ask that only a person answers (no flag).
YOLO = [
    # outside the workspace, however the target is named: refused
    ("echo x > ~/.bashrc", "deny", "redirect-outside-workspace", ""),
    ("cd ~ && echo x > .bashrc", "deny", "redirect-outside-workspace", ""),
    ('echo x > "${PWD%/*}/y"', "deny", "redirect-outside-workspace", ""),
    ("rm -rf ~/.ssh", "deny", "write-outside-workspace", ""),
    ("cp notes.txt escape/", "deny", "write-outside-workspace", ""),
    ("cd .. && rm -f y", "deny", "write-outside-workspace", ""),
    ("mv -t /tmp notes.txt", "deny", "write-outside-workspace", ""),
    ("dd if=notes.txt of=~/x", "deny", "write-outside-workspace", ""),
    ("sudo ls", "deny", "privilege", ""),
    # Charter's own records
    ("echo x > .charter/runs/r/audit.jsonl", "deny", "run-records-write", ""),
    ("mv notes.txt .charter/x", "deny", "run-records-write", ""),
    # only a person answers these
    ("cat .env", "ask", "credential-path", "person"),
    ("cp .env backup.txt", "ask", "credential-path", "person"),
    ("cp notes.txt .git/hooks/pre-commit", "ask", "vcs-internal-write", "person"),
    ('rm -rf "$BUILD_DIR"', "ask", "unnameable-write", "person"),
    ("printf '%s\\n' a.o | xargs rm", "ask", "unnameable-write", "person"),
    ("echo x > $OUT", "ask", "unnameable-redirect", "person"),
    # an ordinary write inside: the flag lifts it
    ("rm -f notes.txt", "allow", "launch-flag", ""),
    ("echo x > out.txt", "allow", "launch-flag", ""),
]


@pytest.fixture
def plan_file(kit: SimpleNamespace, tmp_path: Path) -> Path:
    plan = kit.make_plan({"work": {"shell": "ask", "write_file": "ask", "read_file": "allow"}})
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    return path


def _check_yolo(plan_file: Path, workspace: Path, capsys: Any, tool: str, args: dict) -> dict:  # type: ignore[type-arg]
    argv = ["check", str(plan_file), "--agent", "a", "--workspace", str(workspace), "--yolo"]
    code = main([*argv, "--format", "json", tool, json.dumps(args)])
    out = json.loads(capsys.readouterr().out)
    assert code == {"allow": 0, "deny": 1, "ask": 3}[out["decision"]]
    return out  # type: ignore[no-any-return]


@pytest.mark.parametrize(("command", "decision", "rule", "who"), YOLO)
def test_check_yolo_confines_the_shell(
    plan_file: Path, workspace: Path, capsys: Any, command: str, decision: str, rule: str, who: str
) -> None:
    out = _check_yolo(plan_file, workspace, capsys, "shell", {"command": command})
    assert (out["decision"], out["rule"]) == (decision, rule), out["reason"]
    if who == "person":
        assert "only a person" in out["reason"]
        assert not out.get("liftable_by")


def test_check_and_the_runtime_agree_about_charter_records(
    plan_file: Path, workspace: Path, capsys: Any
) -> None:
    # the file tools and the shell refuse the same place, whatever the flags
    out = _check_yolo(
        plan_file, workspace, capsys, "write_file", {"path": ".charter/x", "content": "y"}
    )
    assert (out["decision"], out["rule"]) == ("deny", "path-run-records")
    out = _check_yolo(plan_file, workspace, capsys, "shell", {"command": "echo y > .charter/x"})
    assert (out["decision"], out["rule"]) == ("deny", "run-records-write")
    out = _check_yolo(plan_file, workspace, capsys, "read_file", {"path": ".charter"})
    assert out["decision"] == "allow"  # reading the records is not refused


def test_under_yolo_a_person_is_asked_and_refusals_reach_nobody(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    plan = kit.make_plan({"work": {"shell": "ask", "write_file": "ask"}})
    session = session_for(plan, yolo=True)
    rt = ToolRuntime(workspace=workspace, shell="/bin/sh", timeout_s=10)

    rec = kit.Recorder("deny")
    result = execute(session, ToolCall("shell", {"command": "cat .env"}), None, rec, runtime=rt)
    assert len(rec.requests) == 1  # --yolo did not answer for the person
    assert rec.requests[0].liftable_by == ""
    assert result.status == "denied" and "s3cr3t" not in result.content

    rec = kit.Recorder("allow")
    result = execute(
        session, ToolCall("shell", {"command": "cp notes.txt escape/"}), None, rec, runtime=rt
    )
    assert rec.requests == [] and result.rule == "write-outside-workspace"
    assert not (workspace.parent / "outside" / "notes.txt").exists()

    rec = kit.Recorder()
    result = execute(
        session, ToolCall("shell", {"command": "echo hi > out.txt"}), None, rec, runtime=rt
    )
    assert rec.requests == [] and result.ok
    assert (workspace / "out.txt").read_text() == "hi\n"


def test_a_denied_write_file_denies_the_shell_writers(
    kit: SimpleNamespace, session_for: Any
) -> None:
    session = session_for(kit.make_plan({"work": {"shell": "allow", "write_file": "deny"}}))
    for command in ("cp notes.txt b.txt", "rm notes.txt", "echo x > b.txt", "touch b.txt"):
        out = decide(session, ToolCall("shell", {"command": command}))
        assert out.decision == "deny", command
    assert decide(session, ToolCall("shell", {"command": "ls"})).decision == "allow"
