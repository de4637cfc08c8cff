"""The file tools against a contained process that swaps a workspace folder
for a symlink to an outside folder while they run: nothing outside is ever
read, written, listed or searched, in either opening mode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.race import layout, race, swapper
from _support.sandbox import facts, profile

from charter.runtime.sandbox.launcher import Sandbox
from charter.runtime.tools import beneath

CALLS = 200  # per tool and mode; bench/file_tool_race.py runs 10,000


@pytest.fixture(params=["openat2", "walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "openat2" and beneath._openat2() is None:
        pytest.skip("this kernel has no openat2 (Linux 5.6+)")
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_OPENAT2", False)
    yield request.param


def test_a_racing_swapper_never_gets_a_file_tool_outside(
    tmp_path: Path, mode: str, make_rt: Any
) -> None:
    ws, out = layout(Path(os.path.realpath(tmp_path)))
    host = facts()
    # Contained as a background task would be, where this host can contain it.
    sandbox = None
    if host.namespaces and host.landlock_abi >= 1:
        sandbox = Sandbox(profile(), workspace=ws, private_dir=tmp_path / "private")
    try:
        with swapper(ws, out, sandbox):
            tallies = race(make_rt(ws), out, CALLS)
    finally:
        if sandbox is not None:
            sandbox.close()
    escapes = [e for t in tallies.values() for e in t.escapes]
    assert escapes == []
    # The race was real: the swapper was seen mid-swap by some calls.
    assert sum(t.refused for t in tallies.values()) > 0, tallies
