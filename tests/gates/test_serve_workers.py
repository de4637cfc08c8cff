"""charter serve --workers N: N processes on one socket, one decision log.

The real command, as a person runs it: every worker answers, every worker
reloads a changed plan by its digest, the one log verifies after a stop, and
a decision is on disk before its answer even when the log's owner is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

CHARTER = [sys.executable, "-m", "charter.compiler"]


def _start(plan: Path, log: Path, tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port_file = tmp / "port"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [*CHARTER, "serve", str(plan), "--listen", "127.0.0.1:0", "--port-file", str(port_file),
         "--log", str(log), *extra],
        stderr=subprocess.PIPE, cwd=tmp,
    )  # fmt: skip
    for _ in range(600):
        if port_file.exists() and port_file.read_text().strip():
            return proc, f"http://127.0.0.1:{int(port_file.read_text())}"
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("charter serve did not start")


def _stopped(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server as a person does (SIGTERM); it must end cleanly."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0


def _verifies(log: Path) -> None:
    checked = subprocess.run([*CHARTER, "audit", "--verify", str(log)], capture_output=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _health(base: str) -> dict[str, Any]:
    # a new connection each time, so the kernel may hand it to any worker
    with urllib.request.urlopen(base + "/v1/health", timeout=10) as resp:
        out: dict[str, Any] = json.loads(resp.read())
    return out


def _decide(base: str, ws: Path, command: str) -> str:
    event = {"cwd": str(ws), "permission_mode": "default", "tool_name": "Bash",
             "tool_input": {"command": command}}  # fmt: skip
    req = urllib.request.Request(base + "/v1/hooks/claude-code", data=json.dumps(event).encode())
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(json.loads(resp.read())["hookSpecificOutput"]["permissionDecision"])


def _every_worker(base: str, want: int, check: Any = None) -> dict[int, dict[str, Any]]:
    """/v1/health of each worker (told apart by pid), asking until ``want``
    pids answered (and ``check`` holds for each), for at most 30 s."""
    seen: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        h = _health(base)
        if check is None or check(h):
            seen[h["pid"]] = h
        if len(seen) >= want:
            break
    return seen


@pytest.fixture
def plans(kit: SimpleNamespace, tmp_path: Path) -> SimpleNamespace:
    first = kit.make_plan({"work": {"shell": "allow", "read_file": "allow"}})
    second = kit.make_plan({"work": {"shell": "deny", "read_file": "allow"}})
    path = tmp_path / "plan.json"
    path.write_text(first.to_json())
    ws = tmp_path / "ws"
    ws.mkdir()
    return SimpleNamespace(path=path, first=first, second=second, ws=ws)


def test_every_worker_answers_and_reloads_the_plan_and_the_log_is_one(
    plans: SimpleNamespace, tmp_path: Path
) -> None:
    log = tmp_path / "decisions.jsonl"
    proc, base = _start(plans.path, log, tmp_path, "--workers", "2")
    try:
        workers = _every_worker(base, 2)
        assert len(workers) == 2 and os.getpid() not in workers
        assert {h["plan"]["digest"] for h in workers.values()} == {plans.first.digest}
        answered = [_decide(base, plans.ws, f"echo {n}") for n in range(20)]
        assert set(answered) == {"allow"}

        tmp = plans.path.with_name("next.json")
        tmp.write_text(plans.second.to_json())
        os.replace(tmp, plans.path)
        # each worker reloads on its next request: every one of them now
        # answers with the new plan
        assert _decide(base, plans.ws, "echo after") == "deny"
        reloaded = _every_worker(base, 2, lambda h: h["plan"]["digest"] == plans.second.digest)
        assert set(reloaded) == set(workers)
    finally:
        _stopped(proc)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    decisions = [x for x in lines if x["event"] == "decision"]
    assert len(decisions) == 21
    assert {x["worker"] for x in decisions} <= {0, 1}
    assert lines[0]["event"] == "serve_started" and lines[-1]["event"] == "serve_stopped"
    _verifies(log)


def test_killing_the_log_owner_loses_no_answered_decision_and_stops_the_workers(
    plans: SimpleNamespace, tmp_path: Path
) -> None:
    log = tmp_path / "decisions.jsonl"
    proc, base = _start(plans.path, log, tmp_path, "--workers", "2")
    pids = set(_every_worker(base, 2))
    answered = [_decide(base, plans.ws, f"echo kill{n}") for n in range(30)]
    assert set(answered) == {"allow"}
    proc.kill()  # kill -9 of the process that owns the log
    proc.wait(10)
    text = log.read_text()
    for n in range(30):
        assert f'"input": "echo kill{n}"' in text, n
    # the workers cannot log any more, so they stop rather than answer
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (its parent killed, not yet reaped by init) counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_a_worker_killed_leaves_the_others_serving(plans: SimpleNamespace, tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    proc, base = _start(plans.path, log, tmp_path, "--workers", "2")
    try:
        victim, survivor = sorted(_every_worker(base, 2))
        os.kill(victim, signal.SIGKILL)
        time.sleep(0.5)
        answered = [_decide(base, plans.ws, f"echo left{n}") for n in range(10)]
        assert set(answered) == {"allow"}
        assert {_health(base)["pid"] for _ in range(10)} == {survivor}
    finally:
        _stopped(proc)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    (exited,) = [x for x in lines if x["event"] == "worker_exited"]
    assert exited["pid"] == victim and exited["code"] == -signal.SIGKILL
    _verifies(log)


def test_a_large_event_is_logged_redacted_by_a_worker(
    plans: SimpleNamespace, tmp_path: Path
) -> None:
    # A line whose event is larger than the link prepares on its event loop
    # is read and redacted off the loop, and reaches the log as a small one.
    log = tmp_path / "decisions.jsonl"
    proc, base = _start(plans.path, log, tmp_path, "--workers", "2")
    secret = "sk-live-0123456789abcdef"
    command = f"echo 'Authorization: Bearer {secret}' # " + "x" * 300_000
    try:
        big_decision = _decide(base, plans.ws, command)  # (a long command is asked about)
        assert _decide(base, plans.ws, "echo small") == "allow"
    finally:
        _stopped(proc)
    text = log.read_text()
    assert secret not in text
    decisions = [json.loads(x) for x in text.splitlines() if '"decision"' in x]
    big = [d for d in decisions if d.get("input", "").startswith("echo 'Authorization")]
    assert len(big) == 1 and big[0]["decision"] == big_decision
    assert "<redacted:" in big[0]["input"] and len(big[0]["input"]) < 400
    assert len(text) < 20_000  # the event itself is never written
    _verifies(log)


def test_new_connections_go_to_the_worker_holding_fewest(
    plans: SimpleNamespace, tmp_path: Path
) -> None:
    # Clients connecting at once are shared out between the workers, not
    # taken by whichever woke first (which left one worker deciding for
    # most of them).
    import http.client

    proc, base = _start(plans.path, tmp_path / "decisions.jsonl", tmp_path, "--workers", "2")
    port = int(base.rsplit(":", 1)[1])
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(60)]
    try:
        _every_worker(base, 2)  # both are serving
        for conn in conns:
            conn.connect()
        pids: dict[int, int] = {}
        for conn in conns:  # each connection asks on its own worker
            conn.request("GET", "/v1/health")
            pid = json.loads(conn.getresponse().read())["pid"]
            pids[pid] = pids.get(pid, 0) + 1
    finally:
        for conn in conns:
            conn.close()
        _stopped(proc)
    # (taken by whichever woke first, one worker often held 44 to 56 of 60)
    assert len(pids) == 2 and max(pids.values()) <= 40, pids
