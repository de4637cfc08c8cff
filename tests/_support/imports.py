"""Charter's import statements, read from the source (nothing is imported):
which module imports which, and which imports run only inside a function.

Shared by ``tests/architecture`` (the layer and cycle rules, the list of
imports kept inside functions) and ``bench/lazy_imports.py`` (what hoisting
each of those would cost), so both read the same statements the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "HALVES",
    "MODULES",
    "REPO",
    "FunctionImport",
    "Import",
    "charter_imports",
    "function_imports",
    "module_graph",
]

REPO = Path(__file__).resolve().parents[2]
HALVES = {"compiler": "charter.compiler", "runtime": "charter.runtime"}


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the charter module imported (a submodule when one is named)
    nested: bool  # inside a function: runs only when the function does


@dataclass(frozen=True)
class FunctionImport:
    """One name an import statement inside a function binds (``import a.b``
    or ``from a import b``), with its module made absolute."""

    importer: str  # the charter module holding the statement
    line: int
    end_line: int
    target: str  # the module imported: a submodule when one is named
    module: str  # what ``from`` names (absolute), or the module ``import`` names
    name: str | None  # the imported name (``from`` form), else None
    asname: str | None
    direct: bool  # a statement of the function's own body (not under if/try/with)

    @property
    def bound(self) -> str:
        """The local name the statement binds."""
        if self.asname:
            return self.asname
        if self.name is not None:
            return self.name
        return self.module.split(".")[0]

    @property
    def statement(self) -> str:
        """The import of this one name, in absolute form."""
        alias = f" as {self.asname}" if self.asname else ""
        if self.name is None:
            return f"import {self.module}{alias}"
        return f"from {self.module} import {self.name}{alias}"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in HALVES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _package(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _walk(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement that can run (``if TYPE_CHECKING`` blocks left
    out), with whether it is inside a function and whether it is a statement
    of that function's own body."""

    def walk(
        node: ast.AST, nested: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        body = getattr(node, "body", []) if function else []
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, nested, function and any(child is s for s in body)
            else:
                inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                yield from walk(child, inner)

    yield from walk(tree, False)


def _parse(module: str) -> ast.Module:
    path = MODULES[module]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def charter_imports(module: str) -> Iterator[Import]:
    """Every charter import of ``module``, with ``from pkg import mod`` read
    as an import of ``pkg.mod``; imports under ``if TYPE_CHECKING`` are left
    out (they never run)."""
    package = _package(module)
    for node, nested, _ in _walk(_parse(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("charter."):
                    yield Import(node.lineno, alias.name, nested)
            continue
        base = _absolute(node, package)
        if not base.startswith("charter."):
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield Import(node.lineno, sub if sub in MODULES else base, nested)


def function_imports(module: str) -> Iterator[FunctionImport]:
    """Every name bound by an import inside a function of ``module``: the
    charter package's, the standard library's and third parties' alike."""
    package = _package(module)
    for node, nested, direct in _walk(_parse(module)):
        if not nested:
            continue
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield FunctionImport(
                    module, node.lineno, end, alias.name, alias.name, None, alias.asname, direct
                )
            continue
        base = _absolute(node, package)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            target = sub if sub in MODULES else base
            yield FunctionImport(
                module, node.lineno, end, target, base, alias.name, alias.asname, direct
            )


def module_graph() -> dict[str, set[str]]:
    """Module-level edges between charter modules."""
    return {
        module: {i.target for i in charter_imports(module) if not i.nested and i.target in MODULES}
        - {module}
        for module in MODULES
    }
