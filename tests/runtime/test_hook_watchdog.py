"""``charter hook``'s one answer, from the runtime's watchdog: whatever the
decision does (raise, exit, print), the client reads exactly one JSON object,
and a failure is that client's deny."""

from __future__ import annotations

import json
from typing import Any

import pytest

from charter.runtime import answer_once
from charter.runtime.hooks.watchdog import deny_answer


def _one(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 1, out
    answer: dict[str, Any] = json.loads(lines[0])
    return answer


def test_the_decision_is_the_answer_and_its_prints_go_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def decide() -> dict[str, Any]:
        print("noise a library printed")
        return {"decision": "allow"}

    assert answer_once("gemini-cli", decide, 5.0) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"decision": "allow"}
    assert "noise a library printed" in err


@pytest.mark.parametrize("failure", [ImportError("no adapter"), SystemExit(3), KeyboardInterrupt()])
def test_a_failure_is_the_clients_deny(
    failure: BaseException, capsys: pytest.CaptureFixture[str]
) -> None:
    def decide() -> dict[str, Any]:
        raise failure

    assert answer_once("claude-code", decide, 5.0) == 0
    answer = _one(capsys)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"].startswith("charter: the hook could not decide (")


def test_each_client_has_its_own_deny() -> None:
    assert deny_answer("gemini-cli", "x") == {"decision": "deny", "reason": "charter: x"}
    claude = deny_answer("claude-code", "x")["hookSpecificOutput"]
    assert (claude["hookEventName"], claude["permissionDecision"]) == ("PreToolUse", "deny")
