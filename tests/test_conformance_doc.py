"""docs/conformance.md stays true: every line has an id, a statement and a
status; every test it names exists; every data file it names exists; the
totals in its opening paragraph match its lines.

The counts of covered / not yet / n/a lines are printed (run this file with
``python tests/test_conformance_doc.py`` or pytest with ``-s``); no minimum is
asserted, so upgrading a line is the only way the numbers change.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "conformance.md"
SEEDS = REPO.parent / "shared" / "seeds"
SEED_FILES = {"000": "000_ad692b4699f3dcfe.txt", "004": "004_2bd33cdb0d3ff65a.txt"}

HEADER = "| Id | Statement | Status |"
# S000-nn / S004-nn: a seed's statements; RL-nn / RD-nn: what the real files of
# Leviath / Demiurge (../shared/corpora) exercise beyond the seeds.
ID = re.compile(r"^(S(000|004)|R[LD])-\d{2,3}$")
TEST_REF = re.compile(r"`(tests/[\w./-]+\.py)::(\w+)`")
FIXTURE_REF = re.compile(r"`(tests/fixtures/[^`]+)`")
TOTALS = re.compile(
    r"\*\*(\d+) statements\*\*: \*\*(\d+) covered\*\*, \*\*(\d+) not yet\*\*, \*\*(\d+) n/a\*\*"
)
# A statement must not share this many consecutive prose words with a seed.
SHINGLE = 9


@dataclass(frozen=True)
class Row:
    line: int
    id: str
    statement: str
    status: str

    @property
    def kind(self) -> str:
        low = self.status.lower()
        if low.startswith("not yet"):
            return "not yet"
        if low.startswith("n/a"):
            return "n/a"
        return "covered"


def _cells(line: str) -> list[str]:
    # Statements never contain a pipe character, so a plain split is exact.
    return [c.strip() for c in line.strip().strip("|").split("|")]


@cache
def rows() -> tuple[Row, ...]:
    """Every statement row: each row of each table whose header is HEADER."""
    out: list[Row] = []
    in_table = False
    for n, line in enumerate(DOC.read_text("utf-8").splitlines(), 1):
        if line.strip() == HEADER:
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if not in_table or set(line) <= set("|-: "):
            continue
        cells = _cells(line)
        assert len(cells) == 3, f"conformance.md:{n}: expected 3 cells, got {len(cells)}"
        out.append(Row(n, *cells))
    return tuple(out)


@cache
def defined_tests(path: str) -> frozenset[str]:
    """Test functions defined at module level or directly in a class."""
    tree = ast.parse((REPO / path).read_text("utf-8"), filename=path)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return frozenset(n for n in names if n.startswith("test"))


def counts() -> Counter[str]:
    return Counter(r.kind for r in rows())


def test_the_doc_has_statements_for_both_seeds() -> None:
    seeds = {r.id[1:4] for r in rows() if r.id.startswith("S")}
    assert seeds == {"000", "004"}


def test_every_line_has_an_id_a_statement_and_a_status() -> None:
    for r in rows():
        where = f"conformance.md:{r.line}"
        assert ID.match(r.id), f"{where}: bad id {r.id!r}"
        assert len(r.statement.split()) >= 4, f"{where}: statement too short"
        assert r.status, f"{where}: no status"
        if r.kind == "covered":
            assert TEST_REF.search(r.status), f"{where}: status names no test and is not 'not yet'"
        else:
            # "not yet" and "n/a" must say why, in a few words.
            reason = r.status.split(":", 1)[1] if ":" in r.status else ""
            assert len(reason.split()) >= 3, f"{where}: {r.kind} needs a reason after a colon"


def test_ids_are_unique_and_ordered_within_each_seed() -> None:
    ids = [r.id for r in rows()]
    dupes = [i for i, c in Counter(ids).items() if c > 1]
    assert not dupes, f"duplicate ids: {dupes}"
    for prefix in [f"S{seed}-" for seed in SEED_FILES] + ["RL-", "RD-"]:
        numbers = [int(i.split("-")[1]) for i in ids if i.startswith(prefix)]
        assert numbers == sorted(numbers), f"{prefix} ids are out of order"


def _refs() -> list[tuple[int, str, str]]:
    return [(r.line, m[1], m[2]) for r in rows() for m in TEST_REF.finditer(r.status)]


def test_referenced_tests_exist() -> None:
    missing = []
    for line, path, name in _refs():
        if not (REPO / path).is_file():
            missing.append(f"conformance.md:{line}: no file {path}")
        elif name not in defined_tests(path):
            missing.append(f"conformance.md:{line}: {path} defines no {name}")
    assert not missing, "\n".join(missing)


def test_referenced_data_files_exist() -> None:
    text = DOC.read_text("utf-8")
    missing = sorted({p for p in FIXTURE_REF.findall(text) if not (REPO / p).exists()})
    assert not missing, f"data files named in the doc but absent: {missing}"


def test_totals_in_the_opening_paragraph_match_the_lines() -> None:
    found = TOTALS.search(DOC.read_text("utf-8"))
    assert found, "the opening paragraph must state the totals"
    total, covered, not_yet, na = (int(g) for g in found.groups())
    c = counts()
    assert (total, covered, not_yet, na) == (
        len(rows()),
        c["covered"],
        c["not yet"],
        c["n/a"],
    ), f"totals say {found.group(0)}; the lines say {dict(c)} of {len(rows())}"


def _prose_words(text: str) -> list[str]:
    # Code spans (names, commands, values) are shared vocabulary, not prose.
    text = re.sub(r"`[^`]*`", " ", text)
    return re.findall(r"[a-z]+", text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seed documents are not next to the repo")
def test_statements_are_paraphrased_not_pasted() -> None:
    seed_shingles: set[tuple[str, ...]] = set()
    for name in SEED_FILES.values():
        seed_shingles |= _shingles(_prose_words((SEEDS / name).read_text("utf-8")))
    copied = [
        f"conformance.md:{r.line} ({r.id})"
        for r in rows()
        if _shingles(_prose_words(r.statement)) & seed_shingles
    ]
    assert not copied, f"statements sharing {SHINGLE}+ words in a row with a seed: {copied}"


def test_report_counts() -> None:
    c = counts()
    print(
        f"\nconformance: {len(rows())} statements, {c['covered']} covered, "
        f"{c['not yet']} not yet, {c['n/a']} n/a, {len(_refs())} test references"
    )
    assert sum(c.values()) == len(rows())


if __name__ == "__main__":
    c = counts()
    per_seed = Counter((r.id[1:4], r.kind) for r in rows())
    print(f"{len(rows())} statements: {dict(c)}")
    for seed in SEED_FILES:
        print(f"  seed {seed}: " + ", ".join(f"{k} {per_seed[(seed, k)]}" for k in c))
    sys.exit(0)
