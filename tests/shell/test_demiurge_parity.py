"""Charter's guard is never looser than Demiurge's on Demiurge's own guard
tests (``tests/fixtures/shell/demiurge_guard.tsv``: each group is named by
the answer Demiurge gives; ``test_golden`` pins Charter's exact answers)."""

from __future__ import annotations

import ast
from pathlib import Path

from charter.runtime.shell import ShellPolicy, evaluate

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "shell" / "demiurge_guard.tsv"
WS = "/ws/proj"
# Demiurge's actions on Charter's scale
RANK = {"allow": 0, "prompt": 1, "block": 2}
CHARTER = {"allow": 0, "ask": 1, "deny": 2}


def _groups() -> list[tuple[str, bool, list[str]]]:
    groups: list[tuple[str, bool, list[str]]] = []
    for line in DATA.read_text("utf-8").splitlines():
        if line.startswith("## demiurge "):
            action = line[len("## demiurge ") :].split(":")[0].split(";")[0].strip()
            groups.append((action, "on purpose" in line, []))
        elif line.strip() and not line.startswith("#"):
            command = line.split("\t")[0]
            groups[-1][2].append(
                ast.literal_eval(command[3:]) if command.startswith("py:") else command
            )
    return groups


def test_the_comparison_covers_demiurge_s_tests() -> None:
    groups = _groups()
    assert sum(len(g[2]) for g in groups) >= 155
    assert {g[0] for g in groups} == set(RANK)


def test_charter_is_never_looser_than_demiurge() -> None:
    looser = []
    for action, on_purpose, commands in _groups():
        if on_purpose:
            continue
        for command in commands:
            v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
            if CHARTER[v.decision] < RANK[action]:
                looser.append((command, action, v.decision, v.rule))
    assert not looser


def test_the_looser_answers_are_few_and_argued() -> None:
    argued = [c for _, on_purpose, cs in _groups() if on_purpose for c in cs]
    assert len(argued) <= 1, argued
