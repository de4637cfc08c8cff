"""Shipped data files are read by path, and through importlib.resources when
the package does not live in ordinary files."""

from __future__ import annotations

import json
from pathlib import Path

import charter.compiler.catalog
from charter.runtime.datafiles import read_text


def test_reads_beside_the_module() -> None:
    text = read_text(
        "charter.compiler.catalog", charter.compiler.catalog.__file__, "data", "builtin_tools.json"
    )
    assert json.loads(text)["catalog_version"] == 1


def test_falls_back_to_importlib_resources(tmp_path: Path) -> None:
    # A module file whose folder has no data (as inside a zip archive).
    elsewhere = str(tmp_path / "not-here" / "__init__.py")
    text = read_text("charter.compiler.catalog", elsewhere, "data", "builtin_tools.json")
    direct = read_text(
        "charter.compiler.catalog", charter.compiler.catalog.__file__, "data", "builtin_tools.json"
    )
    assert text == direct
