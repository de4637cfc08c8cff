from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from charter.compiler.diagnostics import Diagnostic, Severity, Span
from charter.compiler.lint.suppress import apply_suppressions
from charter.compiler.render import FORMATS, _common, default_format, exit_code, render, want_color
from charter.compiler.render.github import escape_data, escape_property
from charter.compiler.rules import diag


@pytest.fixture(autouse=True)
def _fixed_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # Golden files must not change with every release.
    monkeypatch.setattr(_common, "tool_version", lambda: "0.0.0+golden")


def _split(golden_input: Any) -> tuple[list[Diagnostic], list[Diagnostic]]:
    return apply_suppressions(
        golden_input.diagnostics, golden_input.sources, golden_input.config_ignores
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden(fmt: str, golden_input: Any, check_golden: Callable[[str, str], None]) -> None:
    kept, suppressed = _split(golden_input)
    out = render(
        kept,
        fmt,
        sources=golden_input.sources,
        root_uri=golden_input.root_uri,
        suppressed=suppressed,
    )
    check_golden(f"expected.{fmt}", out)


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_does_not_depend_on_input_order(fmt: str, golden_input: Any) -> None:
    kept, suppressed = _split(golden_input)
    kw: dict[str, Any] = {"sources": golden_input.sources, "root_uri": golden_input.root_uri}
    forward = render(kept, fmt, suppressed=suppressed, **kw)
    backward = render(kept[::-1] + kept[:1], fmt, suppressed=suppressed[::-1], **kw)
    assert forward == backward


def test_json_marks_suppressed_findings_and_counts(golden_input: Any) -> None:
    kept, suppressed = _split(golden_input)
    doc = json.loads(render(kept, "json", sources={}, suppressed=suppressed))
    assert doc["valid"] is False
    assert doc["suppressed"] == len(suppressed) == 3
    marked = {(f["code"], f["line"], f["suppression"]) for f in doc["findings"] if f["suppressed"]}
    assert marked == {("CH201", 2, "inline"), ("CH205", 5, "inline"), ("CH109", 6, "config")}
    counted = [f for f in doc["findings"] if not f["suppressed"]]
    assert doc["errors"] == sum(f["severity"] == "error" for f in counted)
    assert doc["notes"] == sum(f["severity"] == "note" for f in counted) >= 2


def test_json_valid_follows_deny_warnings() -> None:
    warning = diag("yaml-ambiguous-boolean", "w", Span("a.yaml", 1, 1))
    assert json.loads(render([warning], "json", sources={}))["valid"] is True
    denied = render([warning], "json", sources={}, deny_warnings=True)
    assert json.loads(denied)["valid"] is False


def test_empty_run() -> None:
    assert render([], "concise", sources={}) == "All checks passed.\n"
    assert render([], "github", sources={}) == ""
    doc = json.loads(render([], "json", sources={}))
    assert doc["valid"] is True and doc["findings"] == [] and doc["errors"] == 0


def test_full_colour_is_the_plain_text_plus_ansi_styles(golden_input: Any) -> None:
    kept, suppressed = _split(golden_input)
    plain = render(kept, "full", sources=golden_input.sources, suppressed=suppressed)
    coloured = render(kept, "full", sources=golden_input.sources, suppressed=suppressed, color=True)
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_full_caret_alignment_with_tabs_and_wide_characters(golden_input: Any) -> None:
    kept, _ = _split(golden_input)
    out = render(kept, "full", sources=golden_input.sources)
    lines = out.splitlines()
    wide = next(i for i, line in enumerate(lines) if "設定 wide" in line and "|" in line)
    # Two cells per CJK character: the carets sit under 設定 exactly.
    source, carets = lines[wide], lines[wide + 1]
    assert carets.index("^") == source.index("設") + source[: source.index("設")].count("設")
    assert carets.count("^") == 4
    tab = next(i for i, line in enumerate(lines) if "write_file" in line and "|" in line)
    assert "\t" not in lines[tab]
    assert lines[tab + 1].index("^") == lines[tab].index('"alow"')


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render([], "xml", sources={})


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("100%", "100%25", "100%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("a: b, c", "a: b, c", "a%3A b%2C c"),
        ("%0A", "%250A", "%250A"),
    ],
)
def test_github_escaping(text: str, data: str, prop: str) -> None:
    assert escape_data(text) == data
    assert escape_property(text) == prop


def test_github_annotation_shape() -> None:
    d = diag(
        "unknown-key",
        "bad: key, really\nsecond",
        Span("dir, x/a:b.toml", 3, 2, 3, 9),
        help="50% sure",
    )
    (line,) = render([d], "github", sources={}).splitlines()
    assert line == (
        "::error file=dir%2C x/a%3Ab.toml,line=3,col=2,endLine=3,endColumn=9,"
        "title=CH201 unknown-key::bad: key, really%0Asecond%0Ahelp: 50%25 sure"
    )
    note = diag("unused-suppression", "n", Span("a.yaml", 1, 1))
    warn = diag("yaml-ambiguous-boolean", "w", Span("a.yaml", 2, 1))
    out = render([note, warn], "github", sources={})
    # Severity first: the warning on line 2 before the note on line 1.
    assert out.startswith("::warning file=a.yaml,line=2,col=1,endLine=2,endColumn=1,")
    assert "\n::notice file=a.yaml,line=1," in out


def _d(severity: str, kind: str | None = None) -> Diagnostic:
    d = diag("invalid-value", "m", Span("a.yaml"), severity=Severity(severity))
    return d if kind is None else d._replace(data=(("suppression", kind),))


# (severities present, deny_warnings, expected exit code)
EXIT_CASES = [
    ([], False, 0),
    ([], True, 0),
    (["note"], True, 0),
    (["warning"], False, 0),
    (["warning"], True, 1),
    (["warning", "note"], True, 1),
    (["error"], False, 1),
    (["note", "error"], False, 1),
]


@pytest.mark.parametrize(("severities", "deny", "code"), EXIT_CASES)
def test_exit_code(severities: list[str], deny: bool, code: int) -> None:
    assert exit_code([_d(s) for s in severities], deny_warnings=deny) == code


def test_suppressed_findings_never_fail() -> None:
    assert exit_code([_d("error", "inline"), _d("warning", "config")], deny_warnings=True) == 0


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        (True, {}, "full"),
        (False, {}, "concise"),
        (False, {"GITHUB_ACTIONS": "true"}, "github"),
        (True, {"GITHUB_ACTIONS": "true"}, "github"),
        (False, {"GITHUB_ACTIONS": "false"}, "concise"),
    ],
)
def test_default_format(tty: bool, env: dict[str, str], expected: str) -> None:
    assert default_format(_Stream(tty), env) == expected


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (False, {"FORCE_COLOR": "1"}, True),
        (True, {"TERM": "dumb"}, False),
    ],
)
def test_want_color(tty: bool, env: dict[str, str], expected: bool) -> None:
    assert want_color(_Stream(tty), env) is expected


def test_plain_formats_do_not_import_rich() -> None:
    code = (
        "import sys\n"
        "from charter.compiler.diagnostics import Span\n"
        "from charter.compiler.render import render\n"
        "from charter.compiler.rules import diag\n"
        "d = diag('unknown-key', 'm', Span('a.yaml', 1, 1))\n"
        "for fmt in ('concise', 'json', 'sarif', 'github'):\n"
        "    render([d], fmt, sources={'a.yaml': ['x: 1']})\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(roots & {'rich', 'pydantic', 'httpx'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("span", "expected_marks"),
    [
        # A span running past the end of the file is underlined to the end.
        (Span("a.toml", 2, 3, 9, 2), ["2 | yyyyy", "  |   ^^^", "3 | zzzz", "  | ^^^^"]),
        # A point just after the last character still gets a caret.
        (Span("a.toml", 3, 5), ["3 | zzzz", "  |     ^"]),
        # A line the file does not have: no excerpt, but the location.
        (Span("a.toml", 7, 5), [" --> a.toml:7:5"]),
    ],
)
def test_full_excerpt_edges(span: Span, expected_marks: list[str]) -> None:
    out = render(
        [diag("unknown-key", "m", span)], "full", sources={"a.toml": ["x", "yyyyy", "zzzz"]}
    )
    lines = out.splitlines()
    start = lines.index(expected_marks[0])
    assert lines[start : start + len(expected_marks)] == expected_marks
