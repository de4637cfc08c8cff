from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.lint.suppress import apply_suppressions, find_comments
from charter.compiler.render._common import suppression_kind
from charter.compiler.rules import RULES, diag

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "render" / "suppress_cases.txt"


@dataclass
class Case:
    title: str
    sources: dict[str, list[str]] = field(default_factory=dict)
    findings: list[tuple[int, int, str]] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    expect: list[str] = field(default_factory=list)


def _load() -> list[Case]:
    cases: list[Case] = []
    section = ""
    for raw in CASES.read_text(encoding="utf-8").splitlines():
        if raw.startswith("=== "):
            cases.append(Case(raw[4:]))
            section = ""
        elif not cases:
            continue  # the header comment
        elif raw.startswith("--- "):
            section = raw[4:]
            if section not in ("findings", "ignore", "expect"):
                cases[-1].sources[section] = []
        elif section in cases[-1].sources:
            cases[-1].sources[section].append(raw)
        elif not raw.strip():
            continue
        elif section == "findings":
            where, code = raw.split()
            line, col = where.split(":")
            cases[-1].findings.append((int(line), int(col), code))
        elif section == "ignore":
            cases[-1].ignore.append(raw.strip())
        elif section == "expect":
            cases[-1].expect.append(raw.strip())
    for case in cases:  # a blank line ends a source section
        for lines in case.sources.values():
            while lines and not lines[-1].strip():
                lines.pop()
    return cases


ALL = _load()


def _describe(d: Diagnostic, kept: bool) -> str:
    where = f"{d.span.line}:{d.span.col} {d.code}"
    return f"kept {where}" if kept else f"suppressed {where} {suppression_kind(d)}"


@pytest.mark.parametrize("case", ALL, ids=[c.title for c in ALL])
def test_suppression_case(case: Case) -> None:
    (path,) = case.sources
    findings = [
        diag(RULES[code].name, f"finding {i}", Span(path, line, col))
        for i, (line, col, code) in enumerate(case.findings)
    ]
    kept, suppressed = apply_suppressions(findings, case.sources, case.ignore)
    actual = sorted([_describe(d, True) for d in kept] + [_describe(d, False) for d in suppressed])
    assert actual == sorted(case.expect)


def test_cases_were_read() -> None:
    assert len(ALL) >= 15 and all(c.expect for c in ALL)


def test_generated_findings_explain_themselves() -> None:
    src = {"a.yaml": ["a: 1  # charter: ignore[CH2O1, CH201]", "b: 1  # charter: ignore"]}
    kept, _ = apply_suppressions([], src, ["unknwn-key"])
    by_code: dict[str, list[Diagnostic]] = {}
    for d in kept:
        by_code.setdefault(d.code, []).append(d)
    (invalid_inline,) = [d for d in by_code["CH892"] if d.span.path == "a.yaml"]
    assert "did you mean 'CH201'" in invalid_inline.message
    assert invalid_inline.span.end_col == invalid_inline.span.col + len("CH2O1")
    (invalid_config,) = [d for d in by_code["CH892"] if d.span.path == "<config>"]
    assert "did you mean 'unknown-key'" in invalid_config.message
    (unused,) = by_code["CH890"]
    assert "CH201" in unused.message and unused.severity.value == "note"
    (bare,) = by_code["CH891"]
    assert bare.severity.value == "warning" and "must name" in bare.message


def test_config_span_is_used_for_config_problems() -> None:
    where = Span("charter.toml", 4, 10)
    kept, _ = apply_suppressions([], {}, ["nope"], config_span=where)
    assert [d.span for d in kept] == [where]


def test_suppressed_findings_keep_their_own_data() -> None:
    d = diag("unknown-key", "m", Span("a.yaml", 1, 1), data={"decision": "ask"})
    _, suppressed = apply_suppressions([d], {"a.yaml": ["a: 1  # charter: ignore[CH201]"]}, [])
    assert dict(suppressed[0].data) == {"decision": "ask", "suppression": "inline"}


def test_crlf_lines_and_comment_positions() -> None:
    comments = list(find_comments("x.yml", ["a: 1  # one\r\n", "# two\n"]))
    assert [(c.line, c.col, c.text, c.own_line) for c in comments] == [
        (1, 7, "# one", False),
        (2, 1, "# two", True),
    ]
