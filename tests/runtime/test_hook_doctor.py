"""``charter doctor``'s checks as the runtime runs them: a Claude Code hook
found in the workspace's settings is examined, run as the client runs it, and
the caller's own plan checks (the compiler's, which the runtime cannot make)
are run on the plan the hook names."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from charter.runtime import DoctorReport, HookExam, examine_hooks, plan_of


def test_a_hook_with_a_missing_plan_fails_and_the_callers_checks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    plan = root / "missing.plan.json"
    command = (
        f"{sys.executable} -m charter.compiler hook claude-code {plan} --agent coder "
        "|| { echo 'charter failed' >&2; exit 2; }"
    )
    settings = {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
        }
    }
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    seen: list[tuple[Path, str | None, Path]] = []

    def check(plan: Path, agent: str | None, where: Path, rep: DoctorReport) -> None:
        seen.append((plan, agent, where))
        rep.warn("the caller's check ran")

    exam = HookExam(root, 20.0, hook_flags=frozenset({"--contain"}), plan_checks=(check,))
    rep, hooks = examine_hooks("claude-code", exam)
    assert hooks == 1
    assert seen == [(plan, "coder", root)]
    assert rep.failed
    text = "\n".join(rep.lines)
    assert "FAIL  the plan does not load" in text
    assert "warn  the caller's check ran" in text
    # The hook is run as the client runs it: on a missing plan it fails
    # closed with Claude Code's ask, which is not the deny a write outside
    # the workspace must get.
    assert "FAIL  a write outside the workspace gets ask, not deny" in text


def test_no_settings_no_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    rep, hooks = examine_hooks("gemini-cli", HookExam(tmp_path, 1.0, hook_flags=frozenset()))
    assert (hooks, rep.failed) == (0, False)


def test_the_plan_of_a_command_skips_option_values_but_not_flags() -> None:
    words = ["charter", "hook", "claude-code", "--agent", "a", "--contain", "plan.json"]
    assert plan_of(words, frozenset({"--contain"})) == "plan.json"
    # Read as an option with a value, --contain would swallow the plan.
    assert plan_of(words, frozenset()) is None
