"""Every import inside a function is listed, with what hoisting it would cost.

An import inside a function hides a dependency from the module's head and
from the cycle check, so it has to pay for itself: ``lazy_imports.txt``
holds one line per (importing module, imported module) pair, with the
figure ``bench/lazy_imports.py`` measured and the reason it stays. A new
one needs its line (adding a case is adding a line); a hoisted one loses it.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from _support.imports import MODULES, FunctionImport, function_imports, module_graph

LISTING = Path(__file__).with_name("lazy_imports.txt")
KINDS = {"cost", "cycle", "block", "name", "failed", "cli"}
CLI = "charter.compiler.cli"


@dataclass(frozen=True)
class Line:
    number: int
    importer: str
    target: str
    figure: float | None  # ms; None when it could not be measured
    kind: str
    why: str


def _read(text: str) -> list[Line]:
    found = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        fields = raw.split(None, 3)
        if len(fields) != 4 or ":" not in fields[3]:
            raise ValueError(f"lazy_imports.txt:{number}: want 'importer target ms kind: why'")
        importer, target, figure, reason = fields
        kind, _, why = reason.partition(":")
        value = None if figure == "-" else float(figure)
        found.append(Line(number, importer, target, value, kind, why.strip()))
    return found


LINES = _read(LISTING.read_text(encoding="utf-8"))


def _in_functions() -> set[tuple[str, str]]:
    return {(i.importer, i.target) for m in MODULES for i in function_imports(m)}


def test_the_reader_reads_a_line_and_refuses_a_bad_one() -> None:
    (line,) = _read("# a comment\n\na.b  c.d   1.25  cost: loads 2 modules (c, c.d)\n")
    assert (line.importer, line.target, line.figure, line.kind) == ("a.b", "c.d", 1.25, "cost")
    assert line.why == "loads 2 modules (c, c.d)"
    with pytest.raises(ValueError, match="lazy_imports.txt:1"):
        _read("a.b  c.d  1.25\n")


def test_every_import_inside_a_function_is_listed() -> None:
    listed = {(line.importer, line.target) for line in LINES}
    missing = sorted(_in_functions() - listed)
    assert not missing, (
        "imports inside functions without a line in tests/architecture/lazy_imports.txt "
        "(import them at module level, or add the line `python bench/lazy_imports.py` "
        "prints for them):\n" + "\n".join(f"{i} -> {t}" for i, t in missing)
    )


def test_every_listed_import_still_exists() -> None:
    stale = sorted({(line.importer, line.target) for line in LINES} - _in_functions())
    assert not stale, "lines for imports no longer inside a function (delete them):\n" + "\n".join(
        f"{i} -> {t}" for i, t in stale
    )


def test_a_pair_is_listed_once() -> None:
    seen: dict[tuple[str, str], int] = {}
    twice = []
    for line in LINES:
        key = (line.importer, line.target)
        if key in seen:
            twice.append(f"lines {seen[key]} and {line.number}: {key[0]} -> {key[1]}")
        seen.setdefault(key, line.number)
    assert not twice, "\n".join(twice)


@pytest.mark.parametrize("line", LINES, ids=lambda line: f"{line.importer}->{line.target}")
def test_each_line_gives_its_figure_and_a_known_reason(line: Line) -> None:
    assert line.kind in KINDS, f"line {line.number}: unknown kind {line.kind!r}"
    assert line.why, f"line {line.number}: say why it stays"
    if line.kind != "failed":
        assert line.figure is not None and math.isfinite(line.figure) and line.figure >= 0
    if line.kind == "cli":
        assert line.importer == CLI or line.importer.startswith(CLI + ".")


def test_a_cycle_reason_names_a_real_cycle() -> None:
    # The path after the importer is a chain of module-level imports from
    # the target back to the importer: hoisting would close it.
    graph = module_graph()
    for line in (line for line in LINES if line.kind == "cycle"):
        path = [m.strip() for m in line.why.split("->")]
        assert path[0] == line.importer and path[1] == line.target and path[-1] == line.importer
        for a, b in zip(path[1:], path[2:], strict=False):
            assert b in graph[a], f"line {line.number}: {a} does not import {b} at module level"


# ------------------------------------------------------------- the hoister


def _bench() -> ModuleType:
    path = MODULES["charter.runtime"].parents[1] / "bench" / "lazy_imports.py"
    spec = importlib.util.spec_from_file_location("lazy_imports_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_SOURCE = '''"""A module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from charter.runtime.results import ToolCall


def made() -> ToolCall:
    """One call."""
    from charter.runtime.results import ToolCall, refusal

    return ToolCall(os.sep, {}) if refusal else ToolCall("x", {})


def joined() -> str:
    """A path."""
    import posixpath

    return posixpath.join("a", "b")
'''


def test_the_bench_hoists_a_free_import_to_the_module_head() -> None:
    bench = _bench()
    importer = "charter.runtime.run.agents"  # any real module: it only places relative imports
    moved = [
        FunctionImport(
            importer,
            14,
            14,
            "charter.runtime.results",
            "charter.runtime.results",
            "ToolCall",
            None,
            True,
        ),
        FunctionImport(importer, 21, 21, "posixpath", "posixpath", None, None, True),
    ]
    out = bench._hoisted(_SOURCE, importer, moved)
    ast.parse(out)
    lines = out.splitlines()
    head = lines[: lines.index("def made() -> ToolCall:")]
    assert "from charter.runtime.results import ToolCall" in head
    assert "import posixpath" in head
    # Under TYPE_CHECKING it is now redundant: the emptied block goes.
    assert "if TYPE_CHECKING:" not in out
    # The name not moved stays in the function; the emptied import's blank
    # line goes with it.
    assert "    from charter.runtime.results import refusal" in lines
    assert '    """A path."""\n    return posixpath.join("a", "b")' in out
    assert out.count("import posixpath") == 1
