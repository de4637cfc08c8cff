"""The audit log: durable per event, readable after SIGKILL, secrets never logged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.cli import main
from charter.runtime.audit import AUDIT_VERSION, AuditLog, read_events
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall
from charter.runtime.tools.registry import ToolRuntime

WRITER = textwrap.dedent(
    """
    import sys
    from charter.runtime.audit import AuditLog
    log = AuditLog(sys.argv[1])
    n = 0
    while True:
        n += 1
        log.write("decision", tool="read_file", decision="allow", gate="permission",
                  rule="plan-allow", reason="x" * 200, seq=n)
        print(n, flush=True)
    """
)


def test_sigkill_leaves_a_readable_log(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acknowledged = 0
    while acknowledged < 50:
        acknowledged = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    found = read_events(log)
    # Every event the writer reported as written (fsynced) is there, in order.
    seqs = [e["seq"] for e in found.events]
    assert seqs[:acknowledged] == list(range(1, acknowledged + 1))
    assert len(found.problems) <= 1
    assert all(e["event"] == "decision" and e["v"] == AUDIT_VERSION for e in found.events)


def test_torn_last_line_is_reported_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with AuditLog(log) as a:
        a.write("decision", tool="t", decision="deny")
    with log.open("ab") as f:
        f.write(b'{"v":1,"event":"exec')
    found = read_events(log)
    assert len(found.events) == 1
    assert found.problems == [
        "line 2: incomplete last event (the run was stopped while writing it)"
    ]


def test_pipeline_events_carry_gate_rule_and_no_secret(
    kit: SimpleNamespace, session_for: Any, workspace: Path, tmp_path: Path
) -> None:
    plan = kit.make_plan({"s": {"read_file": "allow", "shell": "ask", "write_file": "deny"}})
    session = session_for(plan)
    redactor = Redactor()
    redactor.add("hunter2-very-secret", "DB_PASSWORD", "env")
    rt = ToolRuntime(workspace=workspace, redactor=redactor, shell="/bin/sh", timeout_s=10)
    log = tmp_path / "audit.jsonl"
    with AuditLog(log, redact=lambda t: redactor.redact(t, "event")) as audit:
        run = kit.runner(session, audit, runtime=rt)
        run(ToolCall("read_file", {"path": "notes.txt"}, "c1"))
        run(ToolCall("write_file", {"path": "x", "content": "y"}, "c2"))
        # (not a writer: with write_file denied, one would be refused before asking)
        run(ToolCall("shell", {"command": "make hunter2-very-secret"}, "c3"), kit.Recorder("deny"))
    text = log.read_text()
    assert "hunter2-very-secret" not in text
    events = read_events(log).events
    assert [(e["event"], e["call_id"], e["decision"], e["gate"]) for e in events] == [
        ("decision", "c1", "allow", "permission"),
        ("execution", "c1", "allow", "permission"),
        ("decision", "c2", "deny", "permission"),
        ("decision", "c3", "deny", "approval"),
    ]
    first = events[0]
    assert first["args_digest"].startswith("sha256:") and first["agent"] == "a"
    assert first["timings"]["decide_us"] >= 0
    assert events[1]["status"] == "ok" and "run_ms" in events[1]["timings"]
    assert events[3]["fingerprint"] and events[3]["approved_by"] == "test"


def test_audit_cli_text_and_json(tmp_path: Path, capsys: Any) -> None:
    log = tmp_path / "audit.jsonl"
    # One allowed read_file call: its decision, then its execution.
    call = {
        "agent": "a",
        "stage": "s",
        "tool": "read_file",
        "decision": "allow",
        "gate": "permission",
        "rule": "plan-allow",
    }
    with AuditLog(log) as a:
        a.write("decision", **call, timings={"decide_us": 31})
        a.write("execution", **call, status="ok", timings={"run_ms": 4})
    assert main(["audit", str(log)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "time",
        "event",
        "agent",
        "stage",
        "tool",
        "decision",
        "gate",
        "rule",
        "status",
        "ms",
    ]
    assert out[1].split()[1:] == [
        "decision",
        "a",
        "s",
        "read_file",
        "allow",
        "permission",
        "plan-allow",
        "0.03",
    ]
    assert out[2].split()[-2:] == ["ok", "4"]
    assert main(["audit", str(log), "--format", "json"]) == 0
    events = json.loads(capsys.readouterr().out)
    assert [e["event"] for e in events] == ["decision", "execution"]
    assert main(["audit", str(tmp_path / "missing.jsonl")]) == 2


@pytest.mark.parametrize("width", [60, 80, 110, 200])
def test_audit_on_a_terminal_fits_its_width_and_keeps_words_whole(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    log = tmp_path / "audit.jsonl"
    call = {
        "agent": "researcher-with-a-long-name",
        "stage": "gather_sources_from_the_web",
        "tool": "mcp_github__create_pull_request",
        "decision": "ask",
        "gate": "approval",
        "rule": "approval-required-for-network-write",
    }
    with AuditLog(log) as a:
        for _ in range(3):
            a.write("decision", **call, timings={"decide_us": 31})
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["audit", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= width for line in lines), lines
    words = set(" ".join(lines).split())
    for value in call.values():
        assert value in words, (value, lines)
