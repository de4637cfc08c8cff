"""Rule keys are a closed, documented set, and each carries one decision."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strategies import shellish  # noqa: E402
from test_golden import CASES  # noqa: E402
from test_golden_trees import CASES as TREE_CASES  # noqa: E402
from test_golden_trees import LAYOUTS, build  # noqa: E402

from charter.runtime.shell import ShellPolicy, evaluate  # noqa: E402
from charter.runtime.shell.policy import RULE_KEYS  # noqa: E402

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "shell-guard.md"
WS = "/ws/proj"


def _check(command: str) -> set[str]:
    v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert RULE_KEYS[v.rule] == v.decision
    for f in v.findings:
        assert RULE_KEYS[f.rule] == f.decision, f.rule
    return {v.rule} | {f.rule for f in v.findings}


def test_golden_rules_are_known(tmp_path: Path) -> None:
    seen: set[str] = set()
    for case in CASES:
        seen |= _check(case.values[0])  # type: ignore[attr-defined]
    workspaces = {name: build(tmp_path / name, layout) for name, layout in LAYOUTS.items()}
    for case in TREE_CASES:
        layout, command = case.values[:2]  # type: ignore[attr-defined]
        ws = workspaces[layout]
        v = evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert RULE_KEYS[v.rule] == v.decision
        seen |= {v.rule} | {f.rule for f in v.findings}
    # the golden data exercises nearly every key
    assert len(seen) >= len(RULE_KEYS) - 3, sorted(set(RULE_KEYS) - seen)


@settings(max_examples=200, deadline=None)
@given(shellish())
def test_generated_rules_are_known(command: str) -> None:
    _check(command)


def test_every_key_is_documented() -> None:
    text = DOC.read_text("utf-8")
    missing = [k for k in RULE_KEYS if f"`{k}`" not in text]
    assert not missing
