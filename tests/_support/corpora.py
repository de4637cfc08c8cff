"""Where the real-file corpora live: ``$CHARTER_CORPORA``, else
``../shared/corpora`` beside the repository. A clone without them skips the
tests that read them, saying why (tests/corpora/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SKIP_REASON", "corpora_root", "leviath_root"]

REPO = Path(__file__).resolve().parents[2]

SKIP_REASON = (
    "the real-file corpora are not here: set CHARTER_CORPORA to the folder holding leviath/, or "
    "keep it at ../shared/corpora beside the repository"
)


def corpora_root() -> Path | None:
    explicit = os.environ.get("CHARTER_CORPORA")
    root = Path(explicit) if explicit else REPO.parent / "shared" / "corpora"
    return root if root.is_dir() else None


def leviath_root() -> Path | None:
    root = corpora_root()
    if root is None or not (root / "leviath").is_dir():
        return None
    return root / "leviath"
