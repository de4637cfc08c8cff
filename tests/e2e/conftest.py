"""The real clients the end-to-end tests drive, one install per test module.

A client that cannot be installed (no node or npm, no network, a failed
install) skips the tests that need it with the reason, unless
CHARTER_E2E=require, where the install error fails them instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.clients import (
    CLAUDE_CODE_VERSION,
    GEMINI_CLI_VERSION,
    InstallError,
    install_claude,
    install_gemini,
)


def _client(install: Callable[[], str | Path], what: str) -> Path:
    try:
        return Path(install())
    except InstallError as exc:
        if os.environ.get("CHARTER_E2E") == "require":
            raise
        pytest.skip(f"{what} end-to-end tests skipped: {exc}")


@pytest.fixture(scope="module")
def claude() -> Path:
    return _client(install_claude, f"Claude Code {CLAUDE_CODE_VERSION}")


@pytest.fixture(scope="module")
def gemini() -> Path:
    return _client(install_gemini, f"Gemini CLI {GEMINI_CLI_VERSION}")
