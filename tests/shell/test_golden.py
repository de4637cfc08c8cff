"""Golden data for the shell guard: every ``tests/fixtures/shell/*.tsv`` line
is one case (see the README there)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from charter.runtime.shell import ShellPolicy, combine, evaluate

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
            assert len(fields) in (3, 4), f"{path.name}:{n}: expected 3 or 4 tab-separated fields"
            command, decision, rule = fields[:3]
            yolo = fields[3] if len(fields) == 4 else ""
            if command.startswith("py:"):
                command = ast.literal_eval(command[3:])
            assert decision in ("allow", "ask", "deny"), f"{path.name}:{n}: bad decision"
            assert yolo in ("", *YOLO), f"{path.name}:{n}: the 4th field is one of {YOLO}"
            case_id = f"{path.name}:{n} {group}"
            cases.append(pytest.param(command, decision, rule, yolo, id=case_id))
    return cases


# The optional 4th field: the final decision under --yolo (combine with the
# shell tool at ask, write_file at ask, and a launch flag).
YOLO = ("yolo:allow", "yolo:ask", "yolo:deny")


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
        "confinement",
    } <= files
    assert len(CASES) >= 300


@pytest.mark.parametrize(("command", "decision", "rule", "yolo"), CASES)
def test_golden(command: str, decision: str, rule: str, yolo: str) -> None:
    v = evaluate(command, cwd=WS, workspace=WS, policy=ShellPolicy())
    assert (v.decision, v.rule) == (decision, rule), v.message
    if yolo:
        final, why = combine("ask", v, "ask", lifted_by_flag=True)
        assert f"yolo:{final}" == yolo, why
