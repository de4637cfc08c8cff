"""Decisions that know about containment: what a complete sandbox answers,
and that nothing which contains nothing (charter check, hooks) applies it."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.gates import decide
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall
from charter.runtime.sandbox.contained import GROUPS, NEVER, allow_contained, rules_for_groups
from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.policy import PERSON_ONLY_RULES, RULE_KEYS

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "contained.tsv"
REPO = Path(__file__).resolve().parents[2]
WS = Path("/ws/proj")
DEFAULT = frozenset(rules_for_groups(("outside", "network"), network_none=True))
WITH_CODE = frozenset(rules_for_groups(("outside", "network", "code"), network_none=True))


def _cases() -> list[Any]:
    out = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        command, *decisions = line.split("\t")
        if command.startswith("py:"):
            command = ast.literal_eval(command[3:])
        out.append(pytest.param(command, *decisions, id=command[:40]))
    return out


@pytest.mark.parametrize(("command", "uncontained", "contained", "with_code"), _cases())
def test_contained_verdicts(command: str, uncontained: str, contained: str, with_code: str) -> None:
    verdict = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert verdict.decision == uncontained
    assert allow_contained(verdict, DEFAULT).decision == contained
    assert allow_contained(verdict, WITH_CODE).decision == with_code


def test_groups_name_real_guard_rules_and_never_the_forbidden_ones() -> None:
    for group, rules in GROUPS.items():
        assert set(rules) <= set(RULE_KEYS), group
        assert not set(rules) & NEVER, group
        assert all(RULE_KEYS[r] == "ask" for r in rules), group


def test_every_ask_of_the_guard_is_either_answered_by_a_group_or_never() -> None:
    # A new guard rule must be placed on purpose: unplaced, nobody decided
    # whether a sandbox answers it.
    grouped = set().union(*GROUPS.values())
    asks = {r for r, d in RULE_KEYS.items() if d == "ask"}
    assert asks <= grouped | NEVER, sorted(asks - grouped - NEVER)
    assert PERSON_ONLY_RULES <= NEVER


def test_a_plan_that_marks_a_never_rule_still_asks() -> None:
    # contained_allow comes from the plan; a plan written by hand that marks
    # what only a person may answer (a credential read) gets no lift for it.
    verdict = evaluate("cat .env", cwd=WS, workspace=WS, policy=ShellPolicy())
    assert verdict.decision == "ask"
    marked = frozenset({f.rule for f in verdict.findings}) | WITH_CODE
    assert allow_contained(verdict, marked).decision == "ask"
    verdict = evaluate("find . -files0-from list.txt", cwd=WS, workspace=WS, policy=ShellPolicy())
    assert allow_contained(verdict, marked | {"hidden-file-list"}).decision == "ask"


def test_the_network_group_needs_a_sandbox_without_network() -> None:
    assert "network" not in rules_for_groups(("network",), network_none=False)
    assert "network" in rules_for_groups(("network",), network_none=True)


def test_a_lifted_verdict_keeps_its_redirects_for_the_write_permission() -> None:
    verdict = evaluate("cd src && echo x > out.txt", cwd=WS, workspace=WS, policy=ShellPolicy())
    lifted = allow_contained(verdict, DEFAULT)
    assert lifted.decision == "allow" and lifted.writes == verdict.writes and lifted.writes


@pytest.fixture
def coder_plan(tmp_path: Path, capsys: Any) -> Path:
    src = tmp_path / "coder"
    shutil.copytree(REPO / "blueprints" / "coder", src)
    plan = tmp_path / "plan.json"
    assert main(["compile", "--no-user-config", str(src), "-o", str(plan)]) == 0
    capsys.readouterr()
    return plan


def test_only_a_session_with_the_sandbox_in_force_lifts_the_ask(
    coder_plan: Path, tmp_path: Path
) -> None:
    from charter.runtime.plan.loader import load_plan

    plan = load_plan(coder_plan)
    call = ToolCall("shell", {"command": "curl -sS https://example.com"}, "c1")
    session = open_session(plan, "coder", workspace=tmp_path, stage="implement")
    assert decide(session, call).decision == "ask"
    stage = plan.body.agent("coder").stage("implement")  # type: ignore[union-attr]
    session.contained = frozenset(stage.sandbox.contained_allow)
    outcome = decide(session, call)
    assert outcome.decision == "allow" and outcome.rule == "sandbox-contained"
    # A deny is never lifted, contained or not.
    rm = ToolCall("shell", {"command": "rm -rf /"}, "c2")
    assert decide(session, rm).decision == "deny"


def test_charter_check_contains_nothing_and_keeps_asking(coder_plan: Path, capsys: Any) -> None:
    code = main(
        [
            "check",
            str(coder_plan),
            "--agent",
            "coder",
            "--stage",
            "implement",
            "shell",
            '{"command": "curl -sS https://example.com"}',
        ]
    )
    out = capsys.readouterr()
    assert code == 3, out  # ask
    assert "sandbox-contained" not in out.out + out.err


def test_the_claude_code_hook_contains_nothing_and_keeps_asking(
    coder_plan: Path, tmp_path: Path
) -> None:
    import json

    from charter.runtime.hooks.claude_code import decide_event

    event = {
        "session_id": "s",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "curl -sS https://example.com"},
        "tool_use_id": "t1",
    }
    answer = decide_event(
        json.dumps(event).encode(), plan_path=coder_plan, agent="coder", stage="implement"
    )
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask", out
    assert "sandbox-contained" not in out["permissionDecisionReason"]
