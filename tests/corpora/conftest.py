"""Where the real files live: ``$CHARTER_CORPORA``, else ``../shared/corpora``
beside the repository. A clone without them skips these tests, saying why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def corpora_root() -> Path | None:
    explicit = os.environ.get("CHARTER_CORPORA")
    root = Path(explicit) if explicit else REPO.parent / "shared" / "corpora"
    return root if root.is_dir() else None


def leviath_root() -> Path | None:
    root = corpora_root()
    if root is None or not (root / "leviath").is_dir():
        return None
    return root / "leviath"


SKIP_REASON = (
    "the real-file corpora are not here: set CHARTER_CORPORA to the folder holding leviath/, or "
    "keep it at ../shared/corpora beside the repository"
)


@pytest.fixture
def leviath() -> Path:
    root = leviath_root()
    if root is None:
        pytest.skip(SKIP_REASON)
    return root
