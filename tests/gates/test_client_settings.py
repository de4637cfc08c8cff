"""Writing a coding client's own settings or instructions is an ask only a
person answers, for every writer: the file tools, shell redirects and shell
writers, under --yolo and --allow too. Reading them is an ordinary read."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from charter.runtime.gates import decide
from charter.runtime.policy.session import open_session
from charter.runtime.policy.workspace import decide_path
from charter.runtime.results import ToolCall

SETTINGS = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/agents/helper.md",
    ".claude/scheduled_tasks.json",
    ".mcp.json",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "docs/CLAUDE.md",
    ".gemini/settings.json",
    "GEMINI.md",
    ".vscode/settings.json",
]


@pytest.fixture
def yolo_session(kit: SimpleNamespace, workspace: Path):  # type: ignore[no-untyped-def]
    plan = kit.make_plan(
        {
            "work": {
                "read_file": "allow",
                "write_file": "allow",
                "edit_file": "allow",
                "patch": "allow",
                "shell": "allow",
                "terminal": "allow",
            }
        }
    )
    return open_session(plan, "a", workspace=workspace, yolo=True)


@pytest.mark.parametrize("rel", SETTINGS)
def test_the_file_tools_ask_a_person(yolo_session, workspace: Path, rel: str) -> None:  # type: ignore[no-untyped-def]
    (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
    (workspace / rel).write_text("{}\n")
    calls = [
        ToolCall("write_file", {"path": rel, "content": '{"disableAllHooks": true}'}),
        ToolCall("edit_file", {"path": str(workspace / rel), "old_str": "{}", "new_str": "[]"}),
        ToolCall("patch", {"path": rel, "old": "{}", "new": "[]"}),
    ]
    for call in calls:
        out = decide(yolo_session, call)
        assert (out.decision, out.rule, out.liftable_by) == ("ask", "path-client-settings", "")
        assert "only a person can approve this" in out.reason
    read = decide(yolo_session, ToolCall("read_file", {"path": rel}))
    assert read.decision == "allow", read.reason


@pytest.mark.parametrize(
    "command",
    [
        "echo '{\"disableAllHooks\": true}' > .claude/settings.local.json",
        "tee .claude/settings.json",
        "cp notes.txt CLAUDE.md",
        "cd .gemini && echo x > settings.json",
    ],
)
def test_the_shell_asks_a_person(yolo_session, command: str) -> None:  # type: ignore[no-untyped-def]
    for tool in ("shell", "terminal"):
        out = decide(yolo_session, ToolCall(tool, {"command": command}))
        assert (out.decision, out.rule, out.liftable_by) == ("ask", "client-settings", ""), out
        assert "launch flags do not" in out.reason


def test_ordinary_files_are_unaffected(yolo_session) -> None:  # type: ignore[no-untyped-def]
    for call in (
        ToolCall("write_file", {"path": ".vscode/launch.json", "content": "{}"}),
        ToolCall("write_file", {"path": ".claude/worktrees/wt/src/app.py", "content": ""}),
        ToolCall("shell", {"command": "echo x > notes.txt"}),
        ToolCall("shell", {"command": "cat CLAUDE.md"}),
    ):
        assert decide(yolo_session, call).decision == "allow", call


def test_a_symlink_with_an_innocent_name_is_followed(yolo_session, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    (workspace / ".claude").mkdir()
    (workspace / "conf.json").symlink_to(workspace / ".claude" / "settings.json")
    out = decide(yolo_session, ToolCall("write_file", {"path": "conf.json", "content": "{}"}))
    assert (out.decision, out.rule) == ("ask", "path-client-settings")
    out = decide(yolo_session, ToolCall("shell", {"command": "echo x > conf.json"}))
    assert (out.decision, out.rule) == ("ask", "client-settings")


def test_check_path_agrees(workspace: Path) -> None:
    write = decide_path(workspace, ".claude/settings.json", "write")
    assert (write["decision"], write["rule"]) == ("ask", "path-client-settings")
    read = decide_path(workspace, ".claude/settings.json", "read")
    assert read["decision"] == "allow"
