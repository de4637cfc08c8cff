"""Shared pieces of the render tests: the golden input and golden comparison.

Set ``CHARTER_UPDATE_GOLDENS=1`` to rewrite the expected files instead of
comparing against them (then review the diff before committing).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from charter.compiler.diagnostics import Diagnostic, Severity, Span
from charter.compiler.rules import diag

RENDER_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "render"
UPDATE = os.environ.get("CHARTER_UPDATE_GOLDENS") == "1"


@dataclass(frozen=True)
class GoldenInput:
    diagnostics: list[Diagnostic]
    sources: dict[str, list[str]]
    config_ignores: list[str]
    root_uri: str


def load_golden_input() -> GoldenInput:
    spec = json.loads((RENDER_FIXTURES / "diagnostics.json").read_text(encoding="utf-8"))
    diags = []
    for row in spec["diagnostics"]:
        span = Span(row["path"], row["line"], row["col"], row.get("end_line"), row.get("end_col"))
        severity = Severity(row["severity"]) if "severity" in row else None
        diags.append(
            diag(
                row["rule"],
                row["message"],
                span,
                key_path=row.get("key_path", ""),
                help=row.get("help"),
                severity=severity,
            )
        )
    src = RENDER_FIXTURES / "src"
    sources = {
        p.relative_to(src).as_posix(): p.read_text(encoding="utf-8").splitlines()
        for p in sorted(src.rglob("*"))
        if p.is_file()
    }
    return GoldenInput(diags, sources, spec["config_ignores"], spec["root_uri"])


@pytest.fixture
def golden_input() -> GoldenInput:
    return load_golden_input()


@pytest.fixture
def check_golden() -> Callable[[str, str], None]:
    def check(name: str, actual: str) -> None:
        path = RENDER_FIXTURES / name
        if UPDATE:
            path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), f"{path} is missing; run with CHARTER_UPDATE_GOLDENS=1 to create it"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{name} differs; CHARTER_UPDATE_GOLDENS=1 rewrites it"

    return check
