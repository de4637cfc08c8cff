"""Packaging: one import root, the runtime never imports the compiler, and
the wheel ships the data and nothing else."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    return out.stdout


def test_runtime_never_imports_the_compiler() -> None:
    code = (
        "import sys, json\n"
        "import charter.runtime.plan, charter.runtime.plan.loader\n"
        "import charter.runtime.policy.capabilities, charter.runtime.mcp.naming\n"
        "print(sorted(m for m in sys.modules if m.startswith('charter.compiler')))\n"
    )
    assert _run(code).strip() == "[]"


def test_bare_folder_names_are_not_importable_from_elsewhere() -> None:
    out = _run("import importlib.util as u; print(u.find_spec('compiler'), u.find_spec('runtime'))")
    assert out.strip() == "None None"


def test_wheel_contains_the_packages_and_their_data(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(REPO)],
        check=True, capture_output=True,
    )
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "charter/schemas/plan.v1.json" in names
    assert "charter/blueprints/coder/agent.leviath" in names
    assert "charter/blueprints/notes-core/agent/tools/project_note/module.py" in names
    assert "charter/compiler/catalog/data/builtin_tools.json" in names
    assert any(n.startswith("charter/runtime/shell/") and n.endswith(".lark") for n in names)
    assert not any(n.startswith(("tests/", "compiler/", "runtime/", "bench/")) for n in names)
    # every package of the source tree ships (an explicit list in pyproject.toml)
    sources = (*REPO.glob("compiler/**/__init__.py"), *REPO.glob("runtime/**/__init__.py"))
    for init in sorted(sources):
        shipped = "charter/" + init.relative_to(REPO).as_posix()
        assert shipped in names, f"{shipped} is missing: list its package in pyproject.toml"
