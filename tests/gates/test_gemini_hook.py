"""charter hook gemini-cli: Gemini CLI BeforeTool events decided from a plan.

The cases are data (tests/fixtures/hooks/gemini_cli.jsonl): an event (or raw
stdin), the hook's options, and the answer expected with a piece of its
reason. The subprocess tests run the command as Gemini CLI does and check that
every failure still prints one JSON deny and exits 0.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.hooks import gemini_cli
from charter.runtime.hooks.gemini_cli import HookOptions, decide_event

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "fixtures" / "hooks" / "gemini_cli.jsonl"
HEAVY = ("httpx", "httpcore", "mcp", "anyio")


@pytest.fixture
def plans(kit: SimpleNamespace, tmp_path: Path) -> dict[str, Path]:
    """The test plan, and the broken forms of it the cases name."""
    plan = kit.make_plan(
        {
            "work": {
                "shell": "ask",
                "read_file": "allow",
                "read_files": "allow",
                "write_file": "ask",
                "edit_file": "ask",
                "search_files": "allow",
                "list_dir": "allow",
                "web_fetch": "allow",
                "web_search": "ask",
                "docs__lookup": "allow",
                "todo": "allow",
            },
            "review": {"read_file": "allow"},
            "ops": {"terminal": "allow", "write_file": "allow", "read_file": "allow"},
        },
        tools=[kit.mcp_tool("docs", "lookup")],
    )
    text = plan.to_json()
    good = tmp_path / "plan.json"
    good.write_text(text)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    tampered = tmp_path / "tampered.json"
    assert '"compiler_version":"test"' in text
    tampered.write_text(text.replace('"compiler_version":"test"', '"compiler_version":"tesT"'))
    return {
        "good": good,
        "missing": tmp_path / "missing.json",
        "truncated": truncated,
        "tampered": tampered,
    }


def _cases() -> list[Any]:
    out = []
    for line in CASES.read_text().splitlines():
        case = json.loads(line)
        out.append(pytest.param(case, id=case["name"]))
    return out


def _stdin(case: dict[str, Any], workspace: Path) -> bytes:
    if "raw" in case:
        return str(case["raw"]).encode("utf-8", "surrogateescape")
    if "raw_b64" in case:
        return base64.b64decode(case["raw_b64"])
    text = json.dumps(case["event"]).replace("__WORKSPACE__", str(workspace))
    data = text.encode()
    pad = case.get("pad_to_bytes")
    if pad is not None:
        data += b" " * (pad - len(data))  # still valid JSON: only its size is wrong
    return data


def _decide(case: dict[str, Any], plans: dict[str, Path], workspace: Path) -> dict[str, Any]:
    opts = dict(case.get("options", {}))
    ws = opts.get("workspace")
    options = HookOptions(
        plans[opts.get("plan", "good")],
        agent=opts.get("agent"),
        stage=opts.get("stage"),
        workspace=ws.replace("__WORKSPACE__", str(workspace)) if ws else None,
        allow=tuple(opts.get("allow", ())),
    )
    return decide_event(_stdin(case, workspace), options, ask=opts.get("ask", "deny"))


def _check(answer: dict[str, Any], expect: dict[str, str]) -> None:
    kind, needle = expect["answer"], expect["reason_has"]
    if kind == "defer":
        # No opinion: Gemini CLI's own confirmation applies; the user is told.
        assert set(answer) == {"systemMessage"}, answer
        assert needle in answer["systemMessage"], answer
        return
    # Gemini CLI shows an ask's systemMessage in its confirmation prompt.
    keys = {"decision", "reason", "systemMessage"} if kind == "ask" else {"decision", "reason"}
    assert set(answer) == keys, answer
    assert answer["decision"] == kind, answer["reason"]
    assert answer["reason"].startswith("charter: ")
    assert needle in answer["reason"], answer["reason"]


@pytest.mark.parametrize("case", _cases())
def test_gemini_hook_case(case: dict[str, Any], plans: dict[str, Path], workspace: Path) -> None:
    answer = _decide(case, plans, workspace)
    _check(answer, case["expect"])
    json.dumps(answer, ensure_ascii=True)  # what the command prints


def test_the_cases_cover_every_kind_of_answer() -> None:
    kinds = {c.values[0]["expect"]["answer"] for c in _cases()}
    assert kinds == {"allow", "deny", "ask", "defer"}
    names = [c.values[0]["name"] for c in _cases()]
    assert len(names) == len(set(names))


def test_a_read_many_files_pattern_that_reaches_too_much_is_refused(
    plans: dict[str, Path], workspace: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(gemini_cli, "MAX_WALK", 2)
    event = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "read_many_files",
        "tool_input": {"include": ["**/*.py"]},
    }
    answer = decide_event(json.dumps(event).encode(), HookOptions(plans["good"]))
    assert answer["decision"] == "deny"
    assert "reaches more than 2 files and directories" in answer["reason"]


def test_the_default_excludes_are_not_walked_unless_turned_off(
    plans: dict[str, Path], workspace: Path
) -> None:
    (workspace / "node_modules").mkdir()
    (workspace / "node_modules" / "id_rsa").write_text("key\n")
    event: dict[str, Any] = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "read_many_files",
        "tool_input": {"include": ["node*/*"]},
    }
    answer = decide_event(json.dumps(event).encode(), HookOptions(plans["good"]))
    assert answer["decision"] == "allow", answer
    event["tool_input"]["useDefaultExcludes"] = False
    answer = decide_event(json.dumps(event).encode(), HookOptions(plans["good"]))
    assert answer["decision"] == "deny" and "id_rsa" in answer["reason"], answer


@pytest.mark.parametrize(
    ("file_path", "edited", "rule"),
    [
        ("settings.json", ".gemini/settings.json", "path-client-settings"),
        ("s/config", ".aws/config", "path-sensitive"),
        ("hooks/pre-commit", ".git/hooks/pre-commit", "path-vcs-internal"),
    ],
)
def test_an_edit_of_a_missing_file_is_judged_on_every_file_gemini_cli_may_edit_instead(
    plans: dict[str, Path], workspace: Path, file_path: str, edited: str, rule: str
) -> None:
    # Gemini CLI edits a file below the workspace whose path ends with a
    # relative file_path that names no file: 'settings.json' is its own
    # settings when no settings.json lies at the root.
    target = workspace / edited
    target.parent.mkdir(parents=True)
    target.write_text("{}\n")
    event = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "replace",
        "tool_input": {
            "file_path": file_path,
            "instruction": "x",
            "old_string": "{",
            "new_string": "[",
        },
    }
    options = HookOptions(plans["good"], allow=("edit_file",))
    answer = decide_event(json.dumps(event).encode(), options)
    assert answer["decision"] == "deny", answer
    assert edited in answer["reason"] and rule in answer["reason"], answer
    # A file of that name where the path points is the one edited.
    (workspace / file_path).parent.mkdir(parents=True, exist_ok=True)
    (workspace / file_path).write_text("{}\n")
    answer = decide_event(json.dumps(event).encode(), options)
    assert answer["decision"] == "allow", answer


def test_a_search_that_may_read_a_file_link_is_judged_on_its_target(
    plans: dict[str, Path], workspace: Path
) -> None:
    # Without ripgrep, Gemini CLI's last fallback globs the directory and
    # reads each file it matches, a link to a file outside included.
    (workspace / "src" / "data.txt").symlink_to(workspace.parent / "outside" / "secret.txt")
    event = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "grep_search",
        "tool_input": {"pattern": "nope", "dir_path": "src"},
    }
    answer = decide_event(json.dumps(event).encode(), HookOptions(plans["good"]))
    assert answer["decision"] == "deny", answer
    assert "path-symlink-escape" in answer["reason"] and "src/data.txt" in answer["reason"]
    # An include pattern the link's name cannot match leaves it out.
    event["tool_input"]["include_pattern"] = "*.py"
    answer = decide_event(json.dumps(event).encode(), HookOptions(plans["good"]))
    assert answer["decision"] == "allow", answer


def test_stray_output_and_crashes_never_spoil_the_answer(
    plans: dict[str, Path], capsys: Any, monkeypatch: Any
) -> None:
    """Gemini CLI reads non-JSON stdout on exit 0 as no objection."""

    def noisy(raw: bytes, options: HookOptions, **kw: Any) -> dict[str, Any]:
        print("debug chatter")
        raise RuntimeError("boom")

    monkeypatch.setattr(gemini_cli, "decide_event", noisy)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main(["hook", "gemini-cli", "--plan", str(plans["good"])]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "decision": "deny",
        "reason": "charter: the hook could not decide (RuntimeError: boom)",
    }
    assert "debug chatter" in captured.err


def test_ask_is_refused_for_claude_code(plans: dict[str, Path], capsys: Any) -> None:
    code = main(["hook", "claude-code", "--plan", str(plans["good"]), "--ask", "defer"])
    assert code == 2
    assert "gemini-cli only" in capsys.readouterr().err


def _hook(*argv: str, stdin: bytes, importtime: bool = False) -> subprocess.CompletedProcess[bytes]:
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "charter.compiler", "hook", "gemini-cli", *argv],
        input=stdin,
        capture_output=True,
        timeout=60,
        cwd=REPO,
    )


def _one_answer(proc: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode("ascii").splitlines()
    assert len(lines) == 1, proc.stdout
    answer = json.loads(lines[0])
    assert isinstance(answer, dict)
    return answer


def test_the_command_answers_json_and_exits_0_in_every_failure_mode(
    plans: dict[str, Path], workspace: Path, tmp_path: Path
) -> None:
    """The real command as Gemini CLI runs it: event on stdin, JSON on stdout."""
    read = json.dumps(
        {
            "hook_event_name": "BeforeTool",
            "cwd": str(workspace),
            "tool_name": "read_file",
            "tool_input": {"file_path": "notes.txt"},
        }
    ).encode()
    # A lone surrogate from the event is refused at the schema gate: one ASCII line.
    odd = read.replace(b"notes.txt", b"\\udcff/../../x")
    good = str(plans["good"])
    runs: list[tuple[list[str], bytes, str, str]] = [
        (["--plan", good, "--agent", "a"], read, "allow", "plan-allow"),
        (["--plan", good], b"not json at all", "deny", "not JSON"),
        (["--plan", good], b"\xff\xfe{}", "deny", "not JSON"),
        (["--plan", good], b"", "deny", "not JSON"),
        (["--plan", good], b" " * (8 * 1024 * 1024 + 1), "deny", "larger than"),
        (["--plan", good], odd, "deny", "invalid-unicode"),
        (["--plan", str(plans["missing"])], read, "deny", "the plan cannot be used"),
        (["--plan", str(plans["truncated"])], read, "deny", "the plan cannot be used"),
        (["--plan", str(plans["tampered"])], read, "deny", "the plan cannot be used"),
        (["--plan", good, "--agent", "zz"], read, "deny", "no agent named"),
        (["--plan", good, "--stage", "nope"], read, "deny", "no stage named"),
    ]
    for argv, stdin, decision, needle in runs:
        answer = _one_answer(_hook(*argv, stdin=stdin))
        assert answer["decision"] == decision, (argv, answer)
        assert needle in answer["reason"], (argv, answer)


def test_a_hanging_decision_still_answers_deny_in_time(
    plans: dict[str, Path], workspace: Path, tmp_path: Path
) -> None:
    """A plan path that blocks on open (a FIFO nobody writes) stands in for
    any hang: the time limit answers before Gemini CLI's timeout would let the
    call through."""
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    event = json.dumps({"cwd": str(workspace), "tool_name": "read_file", "tool_input": {}})
    proc = _hook("--plan", str(fifo), "--time-limit", "1", stdin=event.encode())
    answer = _one_answer(proc)
    assert answer == {"decision": "deny", "reason": "charter: no decision within 1 s"}


def test_ask_defer_through_the_command(plans: dict[str, Path], workspace: Path) -> None:
    event = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "write_file",
        "tool_input": {"file_path": "x.txt", "content": ""},
    }
    raw = json.dumps(event).encode()
    answer = _one_answer(_hook("--plan", str(plans["good"]), "--ask", "defer", stdin=raw))
    assert set(answer) == {"systemMessage"} and "plan-ask" in answer["systemMessage"]
    answer = _one_answer(_hook("--plan", str(plans["good"]), stdin=raw))
    assert answer["decision"] == "deny" and "--allow write_file" in answer["reason"]
    lifted = _hook("--plan", str(plans["good"]), "--allow", "write_file", stdin=raw)
    assert _one_answer(lifted)["decision"] == "allow"


def test_a_usage_error_blocks_with_a_reason_on_stderr() -> None:
    """Exit 2 is Gemini CLI's other way to block: stderr becomes the reason."""
    proc = _hook(stdin=b"{}")
    assert proc.returncode == 2
    assert b"PLAN_OR_PROJECT" in proc.stderr


def test_the_hook_imports_no_http_mcp_or_async_stack(
    plans: dict[str, Path], workspace: Path
) -> None:
    event = {
        "hook_event_name": "BeforeTool",
        "cwd": str(workspace),
        "tool_name": "web_fetch",
        "tool_input": {"prompt": "read https://docs.example/a and https://docs.example/b"},
    }
    proc = _hook("--plan", str(plans["good"]), stdin=json.dumps(event).encode(), importtime=True)
    assert _one_answer(proc)["decision"] == "allow"
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "json" in imported  # the probe sees imports at all
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_claude_code_shares_allow_and_answers_in_ascii(
    plans: dict[str, Path], workspace: Path
) -> None:
    """The shared pieces serve the Claude Code hook too: --allow lifts a
    liftable ask, and a reason quoting text that is not valid UTF-8 (a lone
    surrogate in a tool name) still leaves as one JSON line."""
    base = {"hook_event_name": "PreToolUse", "cwd": str(workspace)}
    write = {**base, "tool_name": "Write", "tool_input": {"file_path": "x.txt", "content": ""}}
    odd = {**base, "tool_name": "Tool\udcff", "tool_input": {}}
    argv = [sys.executable, "-m", "charter.compiler", "hook", "claude-code"]
    argv += ["--plan", str(plans["good"])]
    for extra, event, decision in (
        ([], write, "ask"),
        (["--allow", "write_file"], write, "allow"),
        ([], odd, "ask"),
    ):
        proc = subprocess.run(
            [*argv, *extra],
            input=json.dumps(event).encode(),
            capture_output=True,
            timeout=60,
            cwd=REPO,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        answer = json.loads(proc.stdout.decode("ascii"))
        assert answer["hookSpecificOutput"]["permissionDecision"] == decision, answer


# The tools a real Gemini CLI 0.61.0 run offered the model (YOLO mode; the
# default mode offers a subset), and those its source names besides.
OFFERED_0_61 = (
    "update_topic list_directory read_file grep_search glob replace write_file web_fetch "
    "run_shell_command list_background_processes read_background_output google_web_search "
    "write_todos enter_plan_mode invoke_agent activate_skill"
)
OTHER_0_61 = (
    "ask_user exit_plan_mode complete_task get_internal_docs read_many_files "
    "tracker_create_task tracker_update_task tracker_get_task tracker_list_tasks "
    "tracker_add_dependency tracker_visualize"
)


def test_every_tool_gemini_cli_offers_is_mapped() -> None:
    from charter.runtime.hooks.gemini_cli import KNOWN_TOOLS

    known = set(OFFERED_0_61.split()) | set(OTHER_0_61.split())
    assert known <= KNOWN_TOOLS, sorted(known - KNOWN_TOOLS)
    tested = {c.values[0].get("event", {}).get("tool_name") for c in _cases()}
    assert set(OFFERED_0_61.split()) <= tested, sorted(set(OFFERED_0_61.split()) - tested)


def test_a_github_file_page_is_decided_as_the_raw_file_gemini_cli_fetches(
    plans: dict[str, Path], workspace: Path
) -> None:
    from charter.runtime.plan.prepared import load_for_agents
    from charter.runtime.policy.session import open_session

    session = open_session(load_for_agents(plans["good"], ["a"]), "a", workspace=workspace)
    page = "https://github.com/org/repo/blob/main/src/app.py"
    event = {"tool_name": "web_fetch", "tool_input": {"prompt": f"summarize {page}"}}
    urls = [c.args["url"] for c in gemini_cli.translate(event, session).calls]
    assert urls == [page, "https://raw.githubusercontent.com/org/repo/main/src/app.py"]
    event = {"tool_name": "web_fetch", "tool_input": {"prompt": "see https://example.com/a/blob/b"}}
    urls = [c.args["url"] for c in gemini_cli.translate(event, session).calls]
    assert urls == ["https://example.com/a/blob/b"]
