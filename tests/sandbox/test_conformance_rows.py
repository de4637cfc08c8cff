"""docs/conformance.md's table of Leviath's [sandbox] keys stays true: ids
unique, every test and data file it names exists; and one behaviour it cites."""

from __future__ import annotations

import re
from pathlib import Path

from charter.compiler.frontends.blueprint import Sandbox

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "conformance.md"
HEADER = "| Id | Leviath key or behaviour | Charter | Status |"
TEST_REF = re.compile(r"`(tests/[\w./-]+\.py)::(\w+)`")
DATA_REF = re.compile(r"`(tests/fixtures/[^`]+)`")


def _rows() -> list[list[str]]:
    rows, inside = [], False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.strip() == HEADER:
            inside = True
            continue
        if not line.startswith("|"):
            inside = False
            continue
        if inside and not set(line) <= set("|-: "):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_every_row_has_an_id_and_a_status_that_names_a_test_or_says_why_not() -> None:
    rows = _rows()
    assert len(rows) >= 10
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"LSB-\d{2}", i) for i in ids)
    for r in rows:
        assert len(r) == 4, r
        status = r[3]
        assert TEST_REF.search(status) or status.startswith("not yet:"), r[0]


def test_referenced_tests_and_data_exist() -> None:
    import ast

    missing = []
    for r in _rows():
        for path, name in TEST_REF.findall(r[3]):
            tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
            names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            if name not in names:
                missing.append(f"{r[0]}: {path}::{name}")
        for data in DATA_REF.findall(r[3]):
            if not (REPO / data).exists():
                missing.append(f"{r[0]}: {data}")
    assert not missing, missing


def test_kind_values_are_read_strictly() -> None:
    from pydantic import ValidationError

    for kind in ("none", "namespace", "container"):
        assert Sandbox.model_validate({"kind": kind}).kind == kind
    for bad in ("host", "docker", ""):
        try:
            Sandbox.model_validate({"kind": bad})
        except ValidationError:
            continue
        raise AssertionError(f"kind = {bad!r} was accepted")
