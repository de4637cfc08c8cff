"""The two halves stay apart, read from the source (no import needed): no
module under ``runtime/`` imports the compiler, and the plan package imports
only the standard library and pydantic."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "runtime"
PLAN = RUNTIME / "plan"


def _module_name(path: Path) -> str:
    """``runtime/plan/model.py`` -> ``charter.runtime.plan.model``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["charter", *parts])


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) for every import the file can make:
    import statements anywhere (also inside functions and TYPE_CHECKING
    blocks), relative imports resolved, and literal ``import_module`` /
    ``__import__`` calls."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                yield node.lineno, ".".join([*base, *([node.module] if node.module else [])])
            elif node.module is not None:
                yield node.lineno, node.module
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield node.lineno, first.value


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if ".venv" not in p.parts)


def test_the_walk_sees_every_runtime_module() -> None:
    # Guards the test itself: a glob that found nothing would prove nothing.
    files = _files(RUNTIME)
    assert len(files) > 100
    assert RUNTIME / "gates" / "pipeline.py" in files
    assert RUNTIME / "plan" / "model.py" in files


def test_the_import_reader_finds_every_kind_of_import() -> None:
    probe = RUNTIME / "plan" / "model.py"
    found = {name for _, name in _imports(probe)}
    assert "pydantic" in found and "charter.runtime.plan.shell" in found


@pytest.mark.parametrize("path", _files(RUNTIME), ids=lambda p: str(p.relative_to(REPO)))
def test_no_runtime_module_imports_the_compiler(path: Path) -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line}: imports {name}"
        for line, name in _imports(path)
        if name == "charter.compiler" or name.startswith("charter.compiler.")
    ]
    assert not bad, "the runtime must never import the compiler:\n" + "\n".join(bad)


def _allowed_in_plan(name: str) -> bool:
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        return True
    if top == "pydantic":
        return True
    return name == "charter.runtime.plan" or name.startswith("charter.runtime.plan.")


# The loaders live beside the contract they load; the contract is every
# other module of the package.
LOADERS = ("loader.py", "prepared.py")


@pytest.mark.parametrize(
    "path", [p for p in _files(PLAN) if p.name not in LOADERS], ids=lambda p: p.name
)
def test_the_plan_package_imports_only_the_standard_library_and_pydantic(path: Path) -> None:
    bad = [
        f"{path.relative_to(REPO)}:{line}: imports {name}"
        for line, name in _imports(path)
        if not _allowed_in_plan(name)
    ]
    assert not bad, "runtime/plan may import only the standard library and pydantic:\n" + (
        "\n".join(bad)
    )


def test_importing_the_plan_loads_no_other_charter_module() -> None:
    # What the AST test proves statically, checked once for real: reading a
    # plan never loads the shell guard or anything else of the runtime.
    code = (
        "import json, sys, charter.runtime.plan\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('charter'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if not m.startswith("charter.runtime.plan")] == [
        "charter",
        "charter.runtime",
    ]
