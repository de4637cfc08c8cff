"""Hostile input: every worst case of ``hostile.py`` is decided, and never
allowed unless it is a plain read-only command; past the size cap nothing
is read. (Their timings are printed by ``bench/shell_worst_case.py``; a test
asserts decisions, not times.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile import BENIGN, MAKERS  # noqa: E402

from charter.runtime.shell import ShellPolicy, evaluate, judge  # noqa: E402
from charter.runtime.shell.guard import MAX_COMMAND_CHARS, MAX_TOKENS  # noqa: E402

WS = "/ws/proj"


@pytest.mark.parametrize("size", [1_000, MAX_COMMAND_CHARS])
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_worst_cases_are_decided(name: str, size: int) -> None:
    command = MAKERS[name](size)[:size]
    v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    if name not in BENIGN:
        assert v.decision != "allow", (name, v.rule)
    assert v.rule != "internal-error", v.message


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_past_the_cap_nothing_is_read(name: str) -> None:
    command = MAKERS[name](100_000)
    command += "x" * (MAX_COMMAND_CHARS + 1 - len(command))
    j = judge(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert (j.verdict.decision, j.verdict.rule) == ("ask", "too-long")
    assert j.verdict.ungrantable and j.opaque and not j.commands


def test_the_token_budget_covers_nested_texts() -> None:
    # each `eval` re-reads the rest of the line: without one budget for all
    # nested readings this would be quadratic
    command = "eval " * min(MAX_TOKENS * 2 // 3, MAX_COMMAND_CHARS // 6) + "ls"
    v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    # the reading stopped at the budget: that names the verdict, since no
    # launch flag may run text the guard did not read
    assert (v.decision, v.rule) == ("ask", "too-long")
    assert any(f.rule == "shell-eval" for f in v.findings)
    # a long plain list under the cap is still read to its end
    v = evaluate("ls; " * 500 + "rm -rf /", cwd=WS, workspace=WS, policy=ShellPolicy())
    assert (v.decision, v.rule) == ("deny", "destructive-rm")


def test_lone_surrogates_are_hidden() -> None:
    v = evaluate("ls \ud800", cwd=WS, workspace=WS, policy=ShellPolicy())
    assert (v.decision, v.rule) == ("ask", "hidden-characters")


def test_no_launch_flag_runs_a_command_the_guard_did_not_read() -> None:
    # Past the cap the guard reads nothing: --yolo / --allow shell must not
    # turn that into a run (a bound is never a way to allow).
    from charter.runtime.shell import combine

    v = evaluate("ls " + "x" * MAX_COMMAND_CHARS, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert v.rule == "too-long" and v.person_only is not None
    decision, _ = combine("ask", v, "ask", lifted_by_flag=True)
    assert decision == "ask"
