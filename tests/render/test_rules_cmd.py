from __future__ import annotations

import json

import pytest

from charter.compiler.cli import main
from charter.compiler.rules import RULES


def test_rules_table_lists_every_rule_in_code_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "SEVERITY", "SUMMARY"]
    rows = lines[1 : 1 + len(RULES)]
    assert [row.split()[0] for row in rows] == sorted(RULES)
    for row in rows:
        code, name, severity = row.split()[:3]
        assert (name, severity) == (RULES[code].name, RULES[code].severity.value)
        assert row.endswith(RULES[code].summary)


def test_rules_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in doc] == sorted(RULES)
    for row in doc:
        assert set(row) == {"code", "name", "severity", "summary", "why", "example", "fix"}


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_has_a_four_part_doc(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", code]) == 0
    out = capsys.readouterr().out
    r = RULES[code]
    assert out.startswith(f"{r.code} {r.name} ({r.severity.value})\n")
    headings = ["What it checks", "Why it matters", "Example", "How to fix"]
    positions = [out.index(f"\n{h}\n") for h in headings]
    assert positions == sorted(positions)
    for part in (r.summary, r.why, r.fix):
        assert part.strip() and part.split("\n")[0] in out
    assert r.example.strip()


@pytest.mark.parametrize("token", ["ch201", "CH201", "unknown-key", "Unknown-Key"])
def test_rule_by_code_or_name(token: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", token]) == 0
    assert capsys.readouterr().out.startswith("CH201 unknown-key (error)")


def test_rule_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "CH201", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "unknown-key"
    assert main(["rule", "unknown-key", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# CH201 unknown-key (error)\n") and "**How to fix.**" in md


@pytest.mark.parametrize(
    ("token", "suggestion"),
    [("CH2O1", "CH201 (unknown-key)"), ("unknwn-key", "CH201 (unknown-key)")],
)
def test_unknown_rule_is_a_usage_error_with_a_suggestion(
    token: str, suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rule", token]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"unknown rule '{token}'; did you mean {suggestion}?" in captured.err


def test_unknown_rule_without_a_close_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "zzzzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "unknown rule 'zzzzzzzz'" in err and "did you mean" not in err


def test_rule_needs_an_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule"]) == 2
    assert "CODE_OR_NAME" in capsys.readouterr().err
