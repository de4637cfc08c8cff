"""Fixture files that carry their own expected diagnostics.

A case file lists what loading it must report in trailing comments,
``#! CODE line:col text``: adding a case means adding a file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from charter.compiler.diagnostics import Diagnostic

__all__ = ["check_case", "expected", "over_cases"]

# Bytes: some cases are deliberately not UTF-8.
_EXPECT = re.compile(rb"^#! (CH\d{3}) (\d+):(\d+)(?: (.*))?$", re.M)


def expected(path: Path) -> list[tuple[str, int, int, str]]:
    """(code, line, col, message fragment) for every ``#!`` line of ``path``."""
    return [
        (m[1].decode(), int(m[2]), int(m[3]), (m[4] or b"").decode("utf-8", "replace").strip())
        for m in _EXPECT.finditer(path.read_bytes())
    ]


def check_case(path: Path, diags: Sequence[Diagnostic], *, display: str | None = None) -> None:
    """The diagnostics are exactly the expected (code, line, col) set, each
    message holds its fragment, and (with ``display``) each names the file."""
    want = expected(path)
    got = sorted((d.code, d.span.line, d.span.col) for d in diags)
    assert got == sorted((c, line, col) for c, line, col, _ in want), [
        (d.code, d.span.line, d.span.col, d.message) for d in diags
    ]
    for code, line, col, text in want:
        [match] = [d for d in diags if (d.code, d.span.line, d.span.col) == (code, line, col)]
        assert text in match.message, (text, match.message)
        if display is not None:
            assert match.span.path == display


def over_cases(folder: Path, pattern: str) -> pytest.MarkDecorator:
    """Parametrize a test's ``case`` over the files of ``folder`` matching
    ``pattern``: one test a file, its id the file's stem."""
    paths = sorted(folder.glob(pattern))
    return pytest.mark.parametrize("case", paths, ids=[p.stem for p in paths])
