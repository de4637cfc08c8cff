from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.files import write_tree
from hypothesis import settings

# The suite's property tests draw the same examples on every run, so a CI
# run is red only for a change, never for a new draw of an old bug. To
# explore (new examples each run, as the benches do at scale), run with
# CHARTER_HYPOTHESIS=explore; a failure found that way becomes a golden case.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("CHARTER_HYPOTHESIS", "ci"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def tree(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(files: dict[str, str], sub: str = "project") -> Path:
        return write_tree(tmp_path / sub, files)

    return make
