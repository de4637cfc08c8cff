from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def tree(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(files: dict[str, str], sub: str = "project") -> Path:
        return write_tree(tmp_path / sub, files)

    return make
