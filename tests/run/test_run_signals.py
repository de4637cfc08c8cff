"""Ctrl-C during a long shell call: the run stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _support.procs import sleepers

from charter.runtime.audit import read_events

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "run"


def test_sigint_during_a_long_shell_call(tmp_path: Path) -> None:
    charter = Path(sys.executable).parent / "charter"
    argv = [
        str(charter),
        "run",
        str(FIXTURES / "solo"),
        "--agent",
        "solo",
        "--model",
        f"script:{FIXTURES / 'scripts' / 'solo-sleep.yaml'}",
        "--yolo",
        "--no-user-config",
        "--json",
        "--workdir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        events = []
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1]["kind"] == "tool_started":
                break
        deadline = time.monotonic() + 10
        while not sleepers("37") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleepers("37"), "the long command never started"
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=15)
        elapsed = time.monotonic() - started
        rest = [json.loads(x) for x in proc.stdout.read().splitlines() if x.startswith("{")]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130, proc.stderr.read() if proc.stderr else ""
    assert elapsed < 10
    assert sleepers("37") == []  # no orphan: the command's process tree was stopped
    kinds = [e["kind"] for e in rest]
    assert "interrupted" in kinds
    shell = next(e for e in rest if e["kind"] == "tool_finished")
    assert "cancelled" in shell["result"]
    finished = rest[-1]
    assert finished["kind"] == "run_finished" and finished["status"] == "interrupted"
    run_dir = Path(events[0]["run_dir"])
    read = read_events(run_dir / "audit.jsonl")
    assert read.problems == []
    assert read.events[-1]["event"] == "run_finished"
    assert read.events[-1]["status"] == "interrupted"
    assert os.path.getsize(run_dir / "events.jsonl") > 0
