"""The layers, read from the source: a package root holds its bottom layer
(and, in the compiler, the pipeline), only ``compiler/catalog/`` reads the
shipped catalog, and charter's modules import one another without a cycle.

Module-level imports are what these tests read; an import inside a function
runs only when the function does, so it is counted and reported, not refused.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.imports import HALVES, MODULES, REPO, Import, charter_imports, module_graph

# The compiler's root modules that may reach into its subpackages: the
# pipeline (resolve -> lint -> emit, and everything `validate` runs) and the
# two programs started with `python -m`. Every other root module is the
# bottom layer, which the subpackages build on.
COMPILER_PIPELINE = {"compile.py", "check.py", "emit.py", "__main__.py", "schemagen.py"}

CATALOG_DATA = "builtin_tools.json"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan,
    iterative so a deep chain cannot exhaust the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


# ---------------------------------------------------------------- the walker


def test_the_walk_sees_both_halves() -> None:
    assert "charter.compiler.resolve.agent" in MODULES
    assert "charter.runtime.gates.pipeline" in MODULES
    assert len(MODULES) > 250


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_tells_module_level_from_nested() -> None:
    found = list(charter_imports("charter.compiler.check"))
    assert Import(found[0].line, found[0].target, False) == found[0]
    assert any(i.nested for i in found) and any(not i.nested for i in found)
    assert all(i.target.startswith("charter.") for i in found)


# ------------------------------------------------------------ the root layer


def _root_modules(folder: str) -> list[str]:
    package = HALVES[folder]
    return sorted(
        m
        for m, p in MODULES.items()
        if p.parent == REPO / folder
        and p.name != "__init__.py"
        and not (folder == "compiler" and p.name in COMPILER_PIPELINE)
        and m.startswith(package)
    )


@pytest.mark.parametrize(
    "module", [*_root_modules("compiler"), *_root_modules("runtime")], ids=lambda m: m
)
def test_a_root_module_imports_nothing_from_its_own_subpackages(module: str) -> None:
    package = ".".join(module.split(".")[:2])
    roots = {m for m in MODULES if m.rpartition(".")[0] == package}
    bad = [
        f"{MODULES[module].relative_to(REPO)}:{i.line}: imports {i.target}"
        for i in charter_imports(module)
        if i.target.startswith(package + ".") and i.target not in roots
    ]
    assert not bad, "a root module is the bottom layer; move it down or this up:\n" + "\n".join(bad)


def test_the_roots_hold_few_modules() -> None:
    # The rule above could be met by moving everything to the root; it is
    # the bottom layer, so it stays small.
    assert len(_root_modules("compiler")) <= 2
    assert len(_root_modules("runtime")) <= 13  # jsonbound and terminal joined the bottom layer


# ------------------------------------------------------- the shipped catalog


def _code_strings(path: Path) -> Iterator[str]:
    """The string constants of a module's code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_only_the_catalog_package_names_the_catalog_data() -> None:
    named = sorted(
        str(p.relative_to(REPO))
        for p in MODULES.values()
        if any(CATALOG_DATA in text for text in _code_strings(p))
        and not p.is_relative_to(REPO / "compiler" / "catalog")
    )
    assert named == []
    copies = sorted(
        str(p.relative_to(REPO)) for half in HALVES for p in (REPO / half).rglob(CATALOG_DATA)
    )
    assert copies == ["compiler/catalog/data/" + CATALOG_DATA]


_OPENS = """
import json, sys, traceback
opened = []
def hook(event, args):
    if event == "open" and str(args[0]).endswith({data!r}):
        stack = [f.filename for f in traceback.extract_stack()[:-1]]
        opened.append([f for f in stack if "/charter" in f or {repo!r} in f])
sys.addaudithook(hook)
{body}
print(json.dumps(opened))
"""


def _opened_by(body: str) -> list[list[str]]:
    code = _OPENS.format(data=CATALOG_DATA, repo=str(REPO), body=body)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compiling_reads_the_catalog_only_through_its_package(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    opened = _opened_by(
        "from charter.compiler.cli import main\n"
        f"main(['compile', '--no-user-config', '-o', {str(plan)!r}, 'blueprints/coder'])\n"
    )
    assert opened, "compiling must read the catalog (else this test proves nothing)"
    catalog = str(REPO / "compiler" / "catalog")
    datafiles = str(REPO / "runtime" / "datafiles.py")
    for stack in opened:
        callers = [f for f in stack if f != datafiles]
        assert callers[-1].startswith(catalog), stack


def test_deciding_never_reads_the_catalog(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    _opened_by(
        "from charter.compiler.cli import main\n"
        f"main(['compile', '--no-user-config', '-o', {str(plan)!r}, 'blueprints/coder'])\n"
    )
    assert plan.exists()
    opened = _opened_by(
        "from charter.runtime import ToolCall, decide, load_plan, open_session, prepare\n"
        f"prepared = prepare(load_plan({str(plan)!r}))\n"
        f"session = open_session(prepared, 'coder', workspace={str(tmp_path)!r})\n"
        "print(decide(session, ToolCall('bash', {'command': 'ls'})).decision)\n"
        "print(decide(session, ToolCall('read_file', {'path': 'x'})).decision)\n"
    )
    assert opened == []


# ------------------------------------------------------------------- cycles


def test_no_import_cycle_among_charter_modules() -> None:
    cycles = _cycles(module_graph())
    assert cycles == [], "module-level import cycles:\n" + "\n".join(map(" -> ".join, cycles))


def test_imports_inside_functions_are_counted() -> None:
    # The count is reported in ARCHITECTURE.md; each one is listed with what
    # it saves in lazy_imports.txt (test_lazy_imports.py). It may only go down.
    nested = sum(1 for m in MODULES for i in charter_imports(m) if i.nested)
    assert nested <= NESTED_IMPORTS_TODAY


NESTED_IMPORTS_TODAY = 269
