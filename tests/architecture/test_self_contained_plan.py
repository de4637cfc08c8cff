"""Issue 17's acceptance test: a compiled plan decides alone.

The coder plan is compiled, then the built-in catalog the runtime ships is
changed under it (every default permission rotated, every alias, path
argument and argument guard removed). Every decision the existing plan makes
stays what it was, through the gates and through a hook, including
``echo x > out.txt`` in stage ``discover`` under ``--yolo``: the stage does
not offer write_file, so the file the redirect writes answers to the
write_file default pinned when compiling, not to today's catalog.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.catalog import builtin as catalog
from charter.compiler.cli import main
from charter.runtime.gates import decide
from charter.runtime.hooks.claude_code import decide_event
from charter.runtime.plan.loader import load_plan
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall

REPO = Path(__file__).resolve().parents[2]

# Every kind of call the coder agent can make, well-formed or not: plain
# tools, paths inside, outside, omitted and sensitive, an alias, shell
# commands that read, write, reach the network and leave the workspace.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "notes.txt"}),
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": ".env"}),
    ("read_file", {"path": 7}),
    ("read_files", {"paths": ["notes.txt", "../x"]}),
    ("list_dir", {}),
    ("list_dir", {"path": "escape"}),
    ("write_file", {"path": "out.txt", "content": "x"}),
    ("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
    ("edit_file", {"path": "notes.txt", "old_str": "hello", "new_str": "bye"}),
    ("shell", {"command": "echo x > out.txt"}),
    ("shell", {"command": "ls -la src"}),
    ("shell", {"command": "rm -rf src"}),
    ("shell", {"command": "curl -sS https://example.com"}),
    ("shell", {"command": "echo x > /tmp/charter-outside.txt"}),
    ("shell", {"command": "ls", "cwd": "../outside"}),
    ("bash", {"command": "echo x > out.txt"}),
    ("bash", {"command": "ls"}),
    ("context_write", {"region": "notes", "content": "x"}),
    ("context_append", {"region": "notes", "content": "x"}),
    ("ask_user_text", {"prompt": "which file?"}),
    ("ask_user_choice", {"prompt": "which?", "options": ["a", "b"]}),
    ("present_for_review", {"title": "t", "markdown": "m"}),
    ("submit_output", {}),
    ("web_fetch", {"url": "https://example.com"}),
]
FLAGS: list[dict[str, Any]] = [
    {},
    {"yolo": True},
    {"allow": ["shell", "write_file"]},
    {"unattended": True},
    {"unattended": True, "yolo": True},
]
HOOK_EVENTS: list[dict[str, Any]] = [
    {"tool_name": "Bash", "tool_input": {"command": "echo x > out.txt"}},
    {"tool_name": "Bash", "tool_input": {"command": "ls"}},
    {"tool_name": "Read", "tool_input": {"file_path": "notes.txt"}},
    {"tool_name": "Write", "tool_input": {"file_path": "out.txt", "content": "x"}},
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (ws / "notes.txt").write_text("hello\n")
    (ws / ".env").write_text("API_TOKEN=s3cr3t-value-123\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("nope\n")
    (ws / "escape").symlink_to(tmp_path / "outside")
    return ws


def _compile(tmp_path: Path, name: str) -> Path:
    src = tmp_path / f"src-{name}"
    shutil.copytree(REPO / "blueprints" / "coder", src)
    plan = tmp_path / f"{name}.json"
    assert main(["compile", "--no-user-config", str(src), "-o", str(plan)]) == 0
    return plan


def _decisions(plan_path: Path, workspace: Path) -> list[dict[str, Any]]:
    """Every decision of the plan at ``plan_path``, loaded afresh: each stage
    of the agent, each launch-flag set, each call, and each hook event."""
    plan = load_plan(plan_path)
    agent = plan.body.agent("coder")
    assert agent is not None
    out: list[dict[str, Any]] = []
    for stage in agent.stages:
        for flags in FLAGS:
            session = open_session(plan, "coder", workspace=workspace, stage=stage.name, **flags)
            for tool, args in CALLS:
                outcome = decide(session, ToolCall(tool, args, "c1")).to_json()
                out.append({"stage": stage.name, "flags": flags, "call": tool, **outcome})
        for event in HOOK_EVENTS:
            raw = {"hook_event_name": "PreToolUse", "cwd": str(workspace), **event}
            answer = decide_event(
                json.dumps(raw).encode(), plan_path=plan_path, agent="coder", stage=stage.name
            )
            out.append({"stage": stage.name, "hook": event, "answer": answer})
    return out


def _changed_catalog(shipped: str) -> str:
    """The shipped catalog with every default a decision could borrow changed."""
    raw = json.loads(shipped)
    rotate = {"allow": "ask", "ask": "deny", "deny": "allow"}
    for tool in raw["tools"]:
        tool["default_permission"] = rotate[tool["default_permission"]]
        tool["aliases"] = []
        tool["path_args"] = []
        tool["guard"] = None
    return json.dumps(raw)


@pytest.fixture
def change_the_catalog(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Calling it swaps the runtime's catalog for the changed one (the
    shipped one, still cached, is back after the test)."""
    changed = catalog._build(_changed_catalog(catalog._read_data()))

    def change() -> None:
        monkeypatch.setattr(catalog, "_catalog", lambda: changed)

    return change


def _echo_in_discover_under_yolo(plan_path: Path, workspace: Path) -> str:
    plan = load_plan(plan_path)
    session = open_session(plan, "coder", workspace=workspace, stage="discover", yolo=True)
    return decide(session, ToolCall("shell", {"command": "echo x > out.txt"})).decision


def test_changing_the_catalog_after_compiling_changes_no_decision(
    tmp_path: Path, workspace: Path, change_the_catalog: Any, capsys: Any
) -> None:
    plan = _compile(tmp_path, "before")
    before = _decisions(plan, workspace)
    assert _echo_in_discover_under_yolo(plan, workspace) == "allow"

    change_the_catalog()
    assert catalog.default_permission("write_file") == "deny"  # the change is in force
    assert catalog.resolve_builtin("bash") is None
    after = _decisions(plan, workspace)

    assert _echo_in_discover_under_yolo(plan, workspace) == "allow"
    assert len(after) == len(before) > 500
    for was, now in zip(before, after, strict=True):
        assert now == was
    # The test can fail: the same project compiled against the changed
    # catalog does decide the redirect differently.
    recompiled = _compile(tmp_path, "after")
    capsys.readouterr()
    assert _echo_in_discover_under_yolo(recompiled, workspace) == "deny"


def test_an_overridden_answer_shape_is_described_from_the_plan_not_the_catalog(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent that overrides a child's answer shape has submit_output's
    description rendered again at run time: from the template the plan
    pinned, so a newer catalog's wording never reaches an existing plan."""
    from charter.runtime.plan import OutputSpec
    from charter.runtime.run.prompt import offered_specs

    plan_path = _compile(tmp_path, "shape")
    raw = json.loads(catalog._read_data())
    for tool in raw["tools"]:
        tool["description_template"] = "A newer Charter's wording for {{ tool }}."
    monkeypatch.setattr(catalog, "_catalog", lambda: catalog._build(json.dumps(raw)))

    plan = load_plan(plan_path)
    session = open_session(plan, "coder", workspace=workspace, stage="summary")
    shape = OutputSpec(format="json", instructions="An object with a findings array.")
    [described] = [s for s in offered_specs(session, shape) if s.name == "submit_output"]
    assert "Format: json" in described.description
    assert "An object with a findings array." in described.description
    assert "newer Charter" not in described.description
    # Only a description that shows the shape is pinned as a template.
    agent = plan.body.agent("coder")
    assert agent is not None
    pinned = {e.name for e in agent.tools if e.description_template is not None}
    assert pinned == {"submit_output"}
