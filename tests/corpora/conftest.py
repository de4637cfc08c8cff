"""The ``leviath`` fixture: the Leviath corpus, or a skip that says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.corpora import SKIP_REASON, leviath_root


@pytest.fixture
def leviath() -> Path:
    root = leviath_root()
    if root is None:
        pytest.skip(SKIP_REASON)
    return root
