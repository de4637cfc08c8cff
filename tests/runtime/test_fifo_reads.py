"""Files Charter reads while deciding, planted as FIFOs.

Opening a FIFO for reading waits until something opens it for writing. A
workspace that holds one where Charter reads a file (a repository's config,
an ignore file, a client's settings) held the decision forever: each reader
here must answer at once, and answer as for a file it cannot read (the
stricter way), never as for no file at all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.capped import read_regular, read_text_capped
from charter.runtime.hooks.contain import client_rule_hit, gemini_rule_hit
from charter.runtime.policy.taint import shell_targets
from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.walk import negates


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _promptly(fn: Callable[[], Any]) -> Any:
    """``fn()``, failing the test (not hanging it) when it waits."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        # let the reader go (it waits for a writer) before failing
        pytest.fail("the read waited on the FIFO")
    if errors:
        raise errors[0]
    return out[0]


def test_read_regular_refuses_a_fifo_and_reads_a_file(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "f")
    assert _promptly(lambda: read_regular(fifo, 10)) is None
    with pytest.raises(ValueError, match="not a regular file"):
        _promptly(lambda: read_text_capped(fifo, 10))
    (tmp_path / "a").write_bytes(b"x" * 20)
    assert read_regular(tmp_path / "a", 10) == b"x" * 11  # one past the bound
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing", 10)


def test_an_ignore_file_that_is_a_fifo_counts_as_negating(tmp_path: Path) -> None:
    _fifo(tmp_path / ".gitignore")
    assert _promptly(lambda: negates(str(tmp_path))) is True


def test_a_search_beside_a_fifo_ignore_file_is_decided(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _fifo(ws / ".gitignore")
    (ws / ".env").write_text("KEY=1\n")
    v = _promptly(
        lambda: evaluate("rg --hidden KEY", cwd=str(ws), workspace=str(ws), policy=ShellPolicy())
    )
    assert v.decision != "allow", v.rule


def test_a_git_config_fifo_leaves_the_push_target_unknown(tmp_path: Path) -> None:
    _fifo(tmp_path / ".git" / "config")
    targets = _promptly(lambda: shell_targets("git push origin main", workspace=tmp_path))
    assert targets is not None and targets != ()


def test_a_client_settings_fifo_is_a_deny(tmp_path: Path) -> None:
    settings = _fifo(tmp_path / ".claude" / "settings.json")
    hit = _promptly(lambda: client_rule_hit("ls", [settings]))
    assert hit is not None and hit[0] == "deny" and "not a regular file" in hit[1]
    gemini = _fifo(tmp_path / ".gemini" / "settings.json")
    hit = _promptly(lambda: gemini_rule_hit("ls", {"command": "ls"}, [gemini]))
    assert hit is not None and hit[0] == "deny" and "not a regular file" in hit[1]
