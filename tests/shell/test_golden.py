"""Golden data for the shell guard: every ``tests/fixtures/shell/*.tsv`` line
is one case (see the README there)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from charter.runtime.shell import ShellPolicy, evaluate

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "shell"
WS = "/ws/proj"


def _cases() -> list[object]:
    cases: list[object] = []
    for path in sorted(DATA.glob("*.tsv")):
        group = ""
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if line.startswith("## "):
                group = line[3:]
                continue
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            assert len(fields) == 3, f"{path.name}:{n}: expected 3 tab-separated fields"
            command, decision, rule = fields
            if command.startswith("py:"):
                command = ast.literal_eval(command[3:])
            assert decision in ("allow", "ask", "deny"), f"{path.name}:{n}: bad decision"
            case_id = f"{path.name}:{n} {group}"
            cases.append(pytest.param(command, decision, rule, id=case_id))
    return cases


CASES = _cases()


def test_every_family_has_cases() -> None:
    files = {p.stem for p in DATA.glob("*.tsv")}
    assert {
        "read_only",
        "destructive",
        "expansions",
        "redirects",
        "exec_options",
        "git",
        "wrappers",
        "unicode",
        "credentials",
        "peer_bypasses",
        "structure",
    } <= files
    assert len(CASES) >= 300


@pytest.mark.parametrize(("command", "decision", "rule"), CASES)
def test_golden(command: str, decision: str, rule: str) -> None:
    v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert (v.decision, v.rule) == (decision, rule), v.message
