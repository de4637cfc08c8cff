"""A stop stops: cancelling a command ends every process of it before any of
them runs the next step of its script, contained or not, whatever the script
does with SIGTERM."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from _support.sandbox import facts, sandboxed_workspace

from charter.runtime.proc import run_command

SCRIPTS = {
    "plain": "sleep 20; touch after.txt; echo wrote",
    "ignores TERM": "trap '' TERM; sleep 20; touch after.txt",
    "traps TERM": "trap 'touch trapped.txt' TERM; sleep 20; touch after.txt",
    "nested shell": "bash -c 'sleep 20; touch inner.txt'; touch after.txt",
    "background job": "sleep 20 & wait; touch after.txt",
}


def _cancel_when_started(cancel: threading.Event) -> object:
    def on_output(_stream: str, _chunk: bytes) -> None:
        # started and said so: give the sleep a moment to begin, then stop
        threading.Timer(0.3, cancel.set).start()

    return on_output


def _run(ws: Path, script: str, sandbox: object | None) -> None:
    cancel = threading.Event()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws)}
    res = run_command(
        ["/bin/bash", "-c", f"echo up; {script}"],
        cwd=ws,
        env=env,
        timeout_s=60,
        cancel=cancel,
        on_output=_cancel_when_started(cancel),  # type: ignore[arg-type]
        sandbox=sandbox,  # type: ignore[arg-type]
    )
    assert res.cancelled and res.stop_error is None, res
    assert res.duration_s < 10


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_cancelled_command_never_runs_its_next_step(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(ws, SCRIPTS[name], None)
    time.sleep(0.5)  # anything left running would write now
    assert sorted(p.name for p in ws.iterdir()) == []


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_cancelled_contained_command_never_runs_its_next_step(
    tmp_path: Path, name: str
) -> None:
    host = facts()
    if not (host.namespaces and host.landlock_abi >= 1):
        pytest.skip("this host cannot build the sandbox: " + "; ".join(host.reasons))
    ws, sb, _env = sandboxed_workspace(tmp_path)
    try:
        _run(ws, SCRIPTS[name], sb)
    finally:
        sb.close()
    time.sleep(0.5)
    assert sorted(p.name for p in ws.iterdir()) == []
