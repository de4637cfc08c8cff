"""The terminal prompts: approvals and the human-in-the-loop tools."""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from charter.runtime.policy.approval import ApprovalRequest
from charter.runtime.run.people import LineSource, PromptApprovals, Prompter, people_tools


def prompter(
    text: str | Any, *, timeout_s: float = 5, environ: dict[str, str] | None = None
) -> Prompter:
    stream = io.StringIO(text) if isinstance(text, str) else text
    return Prompter(
        LineSource(stream),
        console=Console(file=io.StringIO(), width=100),
        timeout_s=timeout_s,
        cancel=threading.Event(),
        environ=environ or {},
    )


def call(p: Prompter, tool: str, tmp_path: Path, **args: Any) -> Any:
    impls = people_tools(p, tmp_path / "scratch")
    key = "human.ask" if tool.startswith(("ask_", "clarify")) else "human.review"
    return impls[key](args, None, tool=tool)


def request(cache_key: str | None = "call:x:1", liftable_by: str = "--allow write_file") -> Any:
    return ApprovalRequest(
        request_id="r1",
        agent="a",
        stage="s",
        tool="write_file",
        args_preview='{"path": "x"}',
        reason="asks",
        rule="plan-ask",
        cache_key=cache_key,
        liftable_by=liftable_by,
    )


# One row per case: tool, arguments, the lines typed, the start of the result.
CASES = [
    ("ask_user_text", {"prompt": "Name?"}, "Ada\n", "The user answered: Ada"),
    (
        "ask_user_choice",
        {"prompt": "Pick", "options": ["red", "blue"]},
        "2\n",
        "The user chose: blue",
    ),
    (
        "ask_user_choice",
        {"prompt": "Pick", "options": ["red", "blue"]},
        "RED\n",
        "The user chose: red",
    ),
    ("ask_user_choice", {"prompt": "Pick", "options": ["a", "b"]}, "9\nb\n", "The user chose: b"),
    ("ask_user_choice", {"prompt": "Pick", "options": ["a", "b"]}, "x\ny\nz\n", "[denied]"),
    ("ask_user_confirm", {"prompt": "Go?"}, "maybe\nyes\n", "The user answered: yes"),
    ("ask_user_confirm", {"prompt": "Go?"}, "n\n", "The user answered: no"),
    ("clarify", {"question": "Which?", "choices": ["x", "y"]}, "1\n", "The user chose: x"),
    ("clarify", {"question": "Which?"}, "this one\n", "The user answered: this one"),
    ("present_for_review", {"title": "Plan", "markdown": "# P"}, "\n", "The user approved 'Plan'"),
    (
        "present_for_review",
        {"title": "Plan", "markdown": "# P"},
        "add tests\n",
        "The user did not approve 'Plan' and asked for changes: add tests",
    ),
    ("edit_document", {"content": "old"}, "\n", "The user kept the document unchanged"),
    (
        "edit_document",
        {"content": "old"},
        "new one\nline two\n.\n",
        "The user's version of the document:\n\nnew one\nline two",
    ),
    ("ask_user_text", {"prompt": "Name?"}, "", "[denied] the question was not answered: nobody"),
]


@pytest.mark.parametrize(("tool", "args", "typed", "expected"), CASES)
def test_people_tools(
    tool: str, args: dict[str, Any], typed: str, expected: str, tmp_path: Path
) -> None:
    result = call(prompter(typed), tool, tmp_path, **args)
    assert result.content.startswith(expected), result.content


def test_edit_document_opens_the_editor(tmp_path: Path) -> None:
    editor = f"{sys.executable} -c \"import sys; p = sys.argv[1]; open(p, 'a').write(' edited')\""
    p = prompter("", environ={"EDITOR": editor})
    result = call(p, "edit_document", tmp_path, content="draft")
    assert result.content == "The user's version of the document:\n\ndraft edited"
    assert list((tmp_path / "scratch").iterdir()) == []  # the scratch file is removed


def test_an_editor_that_outlives_the_timeout_is_stopped(tmp_path: Path) -> None:
    editor = f'{sys.executable} -c "import time; time.sleep(30)"'
    p = prompter("", timeout_s=0.5, environ={"EDITOR": editor})
    started = time.monotonic()
    result = call(p, "edit_document", tmp_path, content="draft")
    assert time.monotonic() - started < 5
    assert (
        result.content.startswith("[denied]") and "nobody answered within 0.5 s" in result.content
    )


def test_a_silent_person_expires() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as never, os.fdopen(write_fd, "w"):
        p = prompter(never, timeout_s=0.3)
        answer = PromptApprovals(p).request(request())
    assert (answer.kind, answer.source) == ("deny", "expiry")
    assert "nobody answered within 0.3 s" in answer.message


@pytest.mark.parametrize(
    ("typed", "cache_key", "kind", "message"),
    [
        ("o\n", "k", "once", ""),
        ("s\n", "k", "stage", ""),
        ("r\n", "k", "run", ""),
        ("d\n", "k", "deny", ""),
        ("m\nplease not now\n", "k", "deny", "please not now"),
        ("s\no\n", None, "once", ""),  # a call that cannot be remembered: "stage" is refused
        ("what\nhuh\nno idea\n", "k", "deny", "no usable answer was given"),
    ],
)
def test_approval_answers(typed: str, cache_key: str | None, kind: str, message: str) -> None:
    answer = PromptApprovals(prompter(typed)).request(request(cache_key))
    assert (answer.kind, answer.message) == (kind, message)


def test_a_question_mark_shows_what_each_answer_does_and_costs_no_try() -> None:
    out = io.StringIO()
    p = prompter("?\nx\n?\nzz\nhelp\nr\n")
    p.console = Console(file=out, width=100)
    answer = PromptApprovals(p).request(request("k"))
    assert answer.kind == "run"  # two wrong answers and three helps, then "r"
    shown = out.getvalue()
    assert "allow it, and the same call again, for the rest of this run" in shown
    assert "deny it with a message the agent reads" in shown
    assert "? shows what each answer does" in shown


def test_end_of_input_denies_and_names_the_flag() -> None:
    answer = PromptApprovals(prompter("")).request(request())
    assert answer.kind == "deny" and "--allow write_file" in answer.message


def test_cancel_stops_a_wait() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as never, os.fdopen(write_fd, "w"):
        p = prompter(never, timeout_s=0)  # 0: no time limit
        threading.Timer(0.2, p.cancel.set).start()
        started = time.monotonic()
        answer = PromptApprovals(p).request(request())
    assert time.monotonic() - started < 3
    assert (answer.kind, answer.source) == ("deny", "cancelled")


def test_a_shell_approval_shows_what_would_run() -> None:
    p = prompter("o\n")
    req = request()._replace(
        tool="shell",
        command="rg TODO src",
        cwd="src",
        shell_executable="/bin/bash",
        command_executable="/usr/bin/rg",
    )
    assert PromptApprovals(p).request(req).kind == "once"
    shown = p.console.file.getvalue()  # type: ignore[attr-defined]
    assert "shell: /bin/bash" in shown and "program: /usr/bin/rg" in shown
    p = prompter("o\n")
    PromptApprovals(p).request(req._replace(command="$CMD", command_executable=None))
    assert "program: unknown" in p.console.file.getvalue()  # type: ignore[attr-defined]
