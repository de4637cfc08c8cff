"""SIGINT and SIGTERM end a run within a second whatever is in flight: a model
request to an endpoint that never answers, a command that ignores SIGTERM.
The run still writes run_finished (its audit log verifies, sealed), exits
130 or 143, and a second Ctrl-C never prints a traceback.

These run `charter` as a subprocess, the way a person's terminal does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.procs import sleepers

sys.path.insert(0, str(Path(__file__).parent))
from fake_models import HANG, fake_model  # noqa: E402

from charter.runtime.audit import verify_log

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "run"
CHARTER = str(Path(sys.executable).parent / "charter")
# "Within a second", with room for a machine shared by many test runs.
PROMPT_S = 1.5


def _start(argv: list[str], workspace: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.Popen(
        [CHARTER, "run", *argv, "--no-user-config", "--json", "--workspace", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _start_chat(hung: Any, workspace: Path) -> subprocess.Popen[str]:
    """The one-stage chat agent, its model the server that never answers."""
    model = ("--model", "openai:fake", "--base-url", hung.base_url)
    return _start([str(FIXTURES / "chat"), "--agent", "chat", *model], workspace)


def _until(proc: subprocess.Popen[str], kind: str) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    events = []
    for line in proc.stdout:
        events.append(json.loads(line))
        if events[-1]["kind"] == kind:
            return events
    raise AssertionError(f"the run ended before a {kind} event: {proc.stderr.read()}")  # type: ignore[union-attr]


@pytest.fixture
def hung() -> Iterator[Any]:
    with fake_model(HANG) as model:
        yield model


def _finish(proc: subprocess.Popen[str]) -> tuple[int, float, list[dict[str, Any]], str]:
    started = time.monotonic()
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    elapsed = time.monotonic() - started
    assert proc.stdout is not None and proc.stderr is not None
    rest = [json.loads(x) for x in proc.stdout.read().splitlines() if x.startswith("{")]
    return code, elapsed, rest, proc.stderr.read()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_model_hangs_ends_the_run_at_once(
    sig: signal.Signals, hung: Any, tmp_path: Path
) -> None:
    proc = _start_chat(hung, tmp_path)
    events = _until(proc, "thinking")
    deadline = time.monotonic() + 10
    while hung.requests == 0 and time.monotonic() < deadline:
        time.sleep(0.02)  # the request is in flight, and will never be answered
    proc.send_signal(sig)
    code, elapsed, rest, err = _finish(proc)
    assert code == 128 + sig, err
    assert elapsed < PROMPT_S, f"took {elapsed:.2f} s"
    assert "Traceback" not in err
    finished = rest[-1]
    assert finished["kind"] == "run_finished" and finished["status"] == "interrupted"
    audit = Path(events[0]["run_dir"]) / "audit.jsonl"
    verified = verify_log(audit)
    assert verified.ok, verified.problem
    assert finished["audit_hash"] == verified.head


def test_a_second_ctrl_c_prints_no_traceback(hung: Any, tmp_path: Path) -> None:
    proc = _start_chat(hung, tmp_path)
    _until(proc, "thinking")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    code, elapsed, _rest, err = _finish(proc)
    assert code == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert elapsed < PROMPT_S


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the command through /proc")
def test_ctrl_c_stops_a_command_that_ignores_sigterm_and_leaves_nothing(tmp_path: Path) -> None:
    proc = _start(
        [
            str(FIXTURES / "solo"),
            "--agent",
            "solo",
            "--yolo",
            "--model",
            f"script:{FIXTURES / 'scripts' / 'solo-stubborn.yaml'}",
        ],
        tmp_path,
    )
    try:
        _until(proc, "tool_started")
        deadline = time.monotonic() + 10
        while not sleepers("38") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sleepers("38"), "the command never started"
        proc.send_signal(signal.SIGINT)
        code, elapsed, rest, err = _finish(proc)
        assert code == 130, err
        assert elapsed < PROMPT_S, f"took {elapsed:.2f} s"
        deadline = time.monotonic() + 2
        while sleepers("38") and time.monotonic() < deadline:
            time.sleep(0.02)  # SIGKILL is delivered asynchronously
        assert sleepers("38") == []
        assert rest[-1]["kind"] == "run_finished"
    finally:
        for pid in sleepers("38"):
            os.kill(pid, signal.SIGKILL)
