"""Leviath's lint suite, rebuilt as golden cases (tests/fixtures/leviath/).

Each case is a blueprint that ends with its expectations: ``#! CODE line:col``
for every finding of a code it names, ``#- CODE`` for a code that must not be
reported. Codes a case does not name are not compared, so a case states only
what Leviath's own test asserts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from charter.compiler.check import check_project
from charter.compiler.compile import CompileOptions
from charter.compiler.frontends.project import load_project

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "leviath" / "lint"
CASES = sorted(CASES_DIR.glob("*.leviath"))
OPTIONS = CompileOptions("posix", "/bin/bash")


def _expectations(text: str) -> tuple[dict[str, list[str]], set[str]]:
    present: dict[str, list[str]] = {}
    absent: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#! "):
            code, pos = line[3:].split()[:2]
            present.setdefault(code, []).append(pos)
        elif line.startswith("#- "):
            absent.add(line[3:].strip())
    return present, absent


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_leviath_lint_case(case: Path, tmp_path: Path) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    shutil.copy(case, root / "agent.leviath")
    config = case.with_suffix(".config.toml")
    project = load_project(
        root, config=config if config.is_file() else None, use_default_config=False
    )
    found = [*project.diagnostics, *check_project(project, OPTIONS)]
    present, absent = _expectations(case.read_text("utf-8"))
    assert present or absent, f"{case.name} states no expectation"
    shown = [f"{d.code} {d.span.line}:{d.span.col} {d.message}" for d in found]
    for code, positions in present.items():
        got = sorted(
            {
                f"{d.span.line}:{d.span.col}"
                for d in found
                if d.code == code and d.span.path == "agent.leviath"
            }
            | {
                f"{d.span.line}:{d.span.col}"
                for d in found
                if d.code == code and d.span.path != "agent.leviath"
            }
        )
        assert got == sorted(positions), f"{case.name}: {code}; all findings: {shown}"
    for code in absent:
        assert code not in {d.code for d in found}, f"{case.name}: {code} reported: {shown}"


def test_the_cases_cover_every_leviath_lint_code() -> None:
    """Every Leviath lint Charter reproduces has at least one case showing it
    reported and one showing it not reported."""
    reported: set[str] = set()
    silent: set[str] = set()
    for case in CASES:
        present, absent = _expectations(case.read_text("utf-8"))
        reported.update(present)
        silent.update(absent)
    leviath = {
        "CH250", "CH251", "CH252", "CH253", "CH254", "CH255", "CH256", "CH257", "CH258",
        "CH302", "CH305", "CH407", "CH408", "CH410", "CH411", "CH450", "CH451", "CH452",
        "CH453", "CH454", "CH455", "CH501", "CH603", "CH604", "CH605", "CH606", "CH650",
        "CH651", "CH652", "CH653", "CH654", "CH655",
    }  # fmt: skip
    assert leviath <= reported, sorted(leviath - reported)
    assert leviath - {"CH453", "CH450"} <= silent, sorted(leviath - silent)
