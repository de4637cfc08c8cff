"""One triggering fixture and one close clean variant for every rule.

Each rule in the catalog has a folder ``tests/fixtures/rules/<CODE>/`` with:

* ``trigger/``: a minimal project that reports the rule;
* ``clean/``: the closest variant that does not;
* ``expected.txt``: the findings of that rule in ``trigger/``, one
  ``CODE path:line:col`` a line (paths relative to ``trigger/``);
* optionally ``make.toml``: files generated into a variant before it is
  checked, for input too large or too odd to commit (see tests/rules/README.md).

A variant holding ``user-config.toml`` is checked with that file as the user's
config (``--config``); otherwise with no user config at all.

Projects are checked in-process the way ``charter validate`` checks them:
load, compile, lint, policy self-tests, then suppressions. Only the rule under
test is compared; other rules may fire too. Every variant is copied to a fresh
temporary directory first, so no case can change another's input.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from charter.compiler.check import check_project
from charter.compiler.compile import CompileOptions
from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.project import load_project
from charter.compiler.lint.expectations import project_ignores
from charter.compiler.lint.suppress import apply_suppressions
from charter.compiler.rules import RULES

RULES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
USER_CONFIG = "user-config.toml"
VARIANTS = ("trigger", "clean")
# A fixed target, so fixtures do not depend on the machine running the tests.
OPTIONS = CompileOptions("posix", "/bin/bash")


@dataclass(frozen=True)
class Case:
    code: str
    expected: tuple[str, ...]  # "CODE path:line:col", sorted
    xfail: dict[str, str]  # variant -> reason it is expected to fail


def _read_case(folder: Path) -> Case:
    code = folder.name
    expected: list[str] = []
    xfail: dict[str, str] = {}
    for number, raw in enumerate((folder / "expected.txt").read_text("utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head, _, rest = line.partition(":")
        if head.startswith("xfail ") and head[len("xfail ") :] in VARIANTS:
            # "xfail trigger: why" marks a known gap in the check, strictly.
            xfail[head[len("xfail ") :]] = rest.strip()
            continue
        parts = line.split()
        if len(parts) != 2 or parts[0] != code:
            raise ValueError(f"{folder.name}/expected.txt:{number}: want '{code} path:line:col'")
        expected.append(f"{parts[0]} {parts[1]}")
    return Case(code, tuple(sorted(expected)), xfail)


def _case_dirs() -> list[Path]:
    return sorted(p for p in RULES_DIR.iterdir() if p.is_dir())


def _generate(spec_path: Path, variant: str, dest: Path) -> None:
    """Write the files ``make.toml`` declares for ``variant`` into ``dest``.

    Each ``[[file]]`` names a ``path``, the ``variants`` that get it, and its
    content: ``head`` followed by ``repeat`` over and over, cut at exactly
    ``size`` bytes. Enough to build a file of a given size without committing it.
    """
    spec = tomllib.loads(spec_path.read_text("utf-8"))
    for entry in spec.get("file", []):
        if variant not in entry["variants"]:
            continue
        head = entry.get("head", "").encode("utf-8")
        repeat = entry["repeat"].encode("utf-8")
        size = int(entry["size"])
        body = head + repeat * (max(size - len(head), 0) // len(repeat) + 1)
        target = dest / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body[:size])


def _findings(root: Path) -> list[Diagnostic]:
    """What ``charter validate`` would report for ``root``, after suppressions."""
    config = root / USER_CONFIG
    project = load_project(
        root, config=config if config.is_file() else None, use_default_config=False
    )
    diags = [*project.diagnostics, *check_project(project, OPTIONS)]
    kept, _ = apply_suppressions(diags, project.sources, project_ignores(project))
    return kept


def _prepare(folder: Path, variant: str, tmp_path: Path) -> Path:
    dest = tmp_path / variant
    source = folder / variant
    shutil.copytree(source, dest, symlinks=True)
    make = folder / "make.toml"
    if make.is_file():
        _generate(make, variant, dest)
    return dest


CASES = [_read_case(p) for p in _case_dirs() if p.name in RULES]


def _params() -> list[object]:
    out: list[object] = []
    for case in CASES:
        for variant in VARIANTS:
            marks = []
            if variant in case.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=case.xfail[variant]))
            out.append(pytest.param(case, variant, id=f"{case.code}-{variant}", marks=marks))
    return out


@pytest.mark.parametrize(("case", "variant"), _params())
def test_rule_fixture(case: Case, variant: str, tmp_path: Path) -> None:
    root = _prepare(RULES_DIR / case.code, variant, tmp_path)
    findings = _findings(root)
    got = sorted(
        f"{d.code} {d.span.path}:{d.span.line}:{d.span.col}"
        for d in findings
        if d.code == case.code
    )
    if variant == "trigger":
        assert got == list(case.expected), _explain(findings)
    else:
        assert got == [], _explain(findings)


def _explain(findings: list[Diagnostic]) -> str:
    return "all findings:\n" + "\n".join(
        f"  {d.code} {d.span.path}:{d.span.line}:{d.span.col} {d.message}" for d in findings
    )


def test_every_rule_has_a_fixture() -> None:
    have = {p.name for p in _case_dirs()}
    missing = sorted(set(RULES) - have)
    assert not missing, f"rules without a fixture in {RULES_DIR}: {missing}"


def test_every_fixture_names_a_rule_and_is_complete() -> None:
    for folder in _case_dirs():
        assert folder.name in RULES, f"{folder.name}: no such rule"
        case = _read_case(folder)
        assert case.expected, f"{folder.name}/expected.txt lists no finding"
        for variant in VARIANTS:
            assert (folder / variant).is_dir(), f"{folder.name}: no {variant}/ folder"


def test_an_unreachable_output_stage_is_reported_once(tmp_path: Path) -> None:
    # output-unreachable says more than unreachable-stage; both on one stage is noise.
    root = _prepare(RULES_DIR / "CH605", "trigger", tmp_path)
    codes = [d.code for d in _findings(root)]
    assert codes.count("CH605") == 1
    assert "CH603" not in codes


def test_read_case_parses_expectations_and_xfail_markers(tmp_path: Path) -> None:
    folder = tmp_path / "CH302"
    folder.mkdir()
    (folder / "expected.txt").write_text(
        "# a comment\n\nCH302 b.toml:2:1\nCH302 a.toml:1:5\nxfail clean: not yet\n", "utf-8"
    )
    case = _read_case(folder)
    assert case.expected == ("CH302 a.toml:1:5", "CH302 b.toml:2:1")
    assert case.xfail == {"clean": "not yet"}
    (folder / "expected.txt").write_text("CH303 a.toml:1:5\n", "utf-8")
    with pytest.raises(ValueError, match="want 'CH302 path:line:col'"):
        _read_case(folder)
