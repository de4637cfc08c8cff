"""The golden Rhai snippets: each script's value, error or refusal as Rhai
(and Leviath's registered functions) define it."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.runtime.rhai import (
    Engine,
    RhaiLimitError,
    RhaiRuntimeError,
    RhaiSyntaxError,
    debug_text,
    parse_script,
)

DATA = Path(__file__).parent / "data" / "snippets.txt"


def _cases() -> list[tuple[str, str, str]]:
    cases: list[tuple[str, str, str]] = []
    name, lines = "", []
    for line in DATA.read_text("utf-8").splitlines():
        if line.startswith("=== "):
            name, lines = line[4:], []
        elif line.startswith("--> "):
            cases.append((name, "\n".join(lines), line[4:]))
        elif name and not (line.startswith("#") and not lines):
            lines.append(line)
    return cases


CASES = _cases()


def test_the_golden_file_was_read() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("script", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_snippet(script: str, expected: str) -> None:
    kind, _, detail = expected.partition(": ")
    try:
        value = Engine().run(parse_script(script, "snippet.rhai"))
    except RhaiSyntaxError as exc:
        assert kind == "syntax", f"unexpected syntax error {exc}"
        assert f"{exc.line}:{exc.col}" == detail, str(exc)
        return
    except RhaiLimitError as exc:
        assert kind == "limit", f"unexpected limit {exc}"
        assert detail in exc.message
        return
    except RhaiRuntimeError as exc:
        assert kind == "error", f"unexpected error {exc}"
        assert detail in exc.message, exc.message
        assert exc.path == "snippet.rhai" and exc.line >= 1
        return
    assert kind not in ("syntax", "limit", "error"), f"expected {expected}, got {debug_text(value)}"
    assert debug_text(value) == expected
