"""S000-40: approval requests and audit records of a shell call name the
resolved shell and, best effort, the command's own executable."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.runtime.audit import AuditLog, read_events
from charter.runtime.gates import decide, execute
from charter.runtime.policy.approval import TerminalProvider
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall
from charter.runtime.tools import executables as executables_mod
from charter.runtime.tools.registry import ToolRuntime


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """A directory that is on the runtime's PATH only, never on the test
    process's: finding ``mytool`` proves the child's PATH was searched."""
    d = tmp_path / "bin"
    d.mkdir()
    tool = d / "mytool"
    tool.write_text("#!/bin/sh\necho ran-mytool\n")
    tool.chmod(0o755)
    return d


def _rt(ws: Path, bindir: Path, **kw: Any) -> ToolRuntime:
    # A bare shell name: it has to be resolved on the child's PATH as well.
    fields: dict[str, Any] = {
        "workspace": ws,
        "redactor": Redactor(),
        "shell": "sh",
        "timeout_s": 10,
        "env": {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(ws)},
    }
    fields.update(kw)
    return ToolRuntime(**fields)


def _plan(kit: SimpleNamespace) -> Any:
    return kit.make_plan(
        {"s": {"shell": "ask", "terminal": "ask", "write_file": "ask", "read_file": "allow"}}
    )


def _sh(bindir: Path) -> str:
    found = shutil.which("sh", path=f"{bindir}:/usr/bin:/bin")
    assert found is not None
    return found


def test_approval_request_names_the_shell_and_the_command_executable(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path
) -> None:
    assert shutil.which("mytool") is None  # only the child's PATH holds it
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny", "deny")
    rt = _rt(workspace, bindir)
    (workspace / "src" / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "src" / "run.sh").chmod(0o755)
    execute(session, ToolCall("shell", {"command": "mytool --x"}), None, rec, runtime=rt)
    execute(
        session,
        ToolCall("terminal", {"command": "./run.sh a", "cwd": "src"}),
        None,
        rec,
        runtime=rt,
    )
    first, second = rec.requests
    assert (first.shell_executable, first.command_executable) == (
        _sh(bindir),
        str(bindir / "mytool"),
    )
    assert second.shell_executable == _sh(bindir)
    assert second.command_executable == str(workspace / "src" / "run.sh")  # from its cwd


def test_an_expanding_command_has_no_command_executable(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny")
    rt = _rt(workspace, bindir)
    call = ToolCall("terminal", {"command": "$X --flag", "env": {"X": "mytool"}})
    execute(session, call, None, rec, runtime=rt)
    (req,) = rec.requests
    assert req.shell_executable == _sh(bindir)
    assert req.command_executable is None  # only the shell knows what $X becomes


def test_terminal_prompt_shows_both(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path
) -> None:
    session = session_for(_plan(kit))
    rt = _rt(workspace, bindir)
    out = io.StringIO()
    provider = TerminalProvider(io.StringIO("d\nd\n"), out)
    execute(session, ToolCall("shell", {"command": "mytool --x"}), None, provider, runtime=rt)
    shown = out.getvalue()
    assert f"   shell: {_sh(bindir)}\n" in shown
    assert f"   program: {bindir / 'mytool'}\n" in shown
    out.seek(0)
    out.truncate()
    execute(session, ToolCall("shell", {"command": "$X"}), None, provider, runtime=rt)
    shown = out.getvalue()
    assert f"   shell: {_sh(bindir)}\n" in shown and "   program: unknown" in shown


def test_non_shell_requests_name_no_executables(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny")
    out = io.StringIO()
    call = ToolCall("write_file", {"path": "a.txt", "content": "x"})
    execute(session, call, None, rec, runtime=_rt(workspace, bindir))
    (req,) = rec.requests
    assert (req.shell_executable, req.command_executable) == (None, None)
    TerminalProvider(io.StringIO("d\n"), out).request(req)
    assert "shell:" not in out.getvalue() and "program:" not in out.getvalue()


def test_audit_records_of_a_shell_call_name_both(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path, tmp_path: Path
) -> None:
    session = session_for(_plan(kit))
    rt = _rt(workspace, bindir)
    log = tmp_path / "audit.jsonl"
    with AuditLog(log) as audit:
        run = kit.runner(session, audit, runtime=rt)
        ran = run(ToolCall("shell", {"command": "mytool --x"}, "c1"), kit.Recorder("once"))
        expanding = run(
            ToolCall("terminal", {"command": "$X", "env": {"X": "mytool"}}, "c2"),
            kit.Recorder("once"),
        )
        run(ToolCall("shell", {"command": "rm -rf /"}, "c3"))
        run(ToolCall("write_file", {"path": "a.txt", "content": "x"}, "c4"), kit.Recorder("once"))
    assert ran.ok and "ran-mytool" in ran.content
    assert expanding.ok and "ran-mytool" in expanding.content  # $X did run mytool
    events = read_events(log).events
    by = {(e["call_id"], e["event"], e["decision"]): e for e in events}
    mytool = {"shell": _sh(bindir), "command": str(bindir / "mytool")}
    assert by[("c1", "decision", "allow")]["executables"] == mytool
    assert by[("c1", "execution", "allow")]["executables"] == mytool
    unknown = {"shell": _sh(bindir), "command": None}
    assert by[("c2", "decision", "allow")]["executables"] == unknown
    assert by[("c2", "execution", "allow")]["executables"] == unknown
    # A refused call's record says what it would have run.
    denied = by[("c3", "decision", "deny")]
    assert denied["rule"] == "destructive-rm"
    rm = shutil.which("rm", path=f"{bindir}:/usr/bin:/bin")
    assert rm is not None and denied["executables"] == {"shell": _sh(bindir), "command": rm}
    assert all("executables" not in e for e in events if e["call_id"] == "c4")


def test_a_refused_approval_is_audited_with_both(
    kit: SimpleNamespace, session_for: Any, workspace: Path, bindir: Path, tmp_path: Path
) -> None:
    session = session_for(_plan(kit))
    log = tmp_path / "audit.jsonl"
    with AuditLog(log) as audit:
        execute(
            session,
            ToolCall("shell", {"command": "mytool"}, "c1"),
            None,
            kit.Recorder("deny"),
            audit,
            runtime=_rt(workspace, bindir),
        )
    (event,) = read_events(log).events
    assert (event["decision"], event["rule"]) == ("deny", "approval-denied")
    assert event["executables"] == {"shell": _sh(bindir), "command": str(bindir / "mytool")}


def test_resolution_never_fails_the_call(
    kit: SimpleNamespace,
    session_for: Any,
    workspace: Path,
    bindir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any, **kw: Any) -> str | None:
        raise OSError("stat failed")

    monkeypatch.setattr(executables_mod, "resolve_executable", broken)
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny")
    log = tmp_path / "audit.jsonl"
    with AuditLog(log) as audit:
        result = execute(
            session, ToolCall("shell", {"command": "mytool"}, "c1"), None, rec, audit,
            runtime=_rt(workspace, bindir),
        )  # fmt: skip
    # Still asked, still refused by the person's answer, with nothing named.
    assert result.rule == "approval-denied" and len(rec.requests) == 1
    assert (rec.requests[0].shell_executable, rec.requests[0].command_executable) == (None, None)
    (event,) = read_events(log).events
    assert event["executables"] == {"shell": None, "command": None}


def test_resolution_happens_only_when_asked_or_audited(
    kit: SimpleNamespace,
    session_for: Any,
    workspace: Path,
    bindir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = executables_mod.call_executables

    def counting(args: Any, **kw: Any) -> Any:
        calls.append(str(args.get("command")))
        return real(args, **kw)

    monkeypatch.setattr(executables_mod, "call_executables", counting)
    session = session_for(_plan(kit))
    rt = _rt(workspace, bindir)
    decide(session, ToolCall("shell", {"command": "mytool"}))
    # Allowed by the guard, no person asked, no audit log: nothing resolved.
    assert execute(
        session, ToolCall("shell", {"command": "cat notes.txt"}), None, kit.Recorder(), runtime=rt
    ).ok
    assert calls == []
    # A "run" answer is remembered; the cached second call asks nobody.
    rec = kit.Recorder("run")
    call = ToolCall("shell", {"command": "mytool"})
    assert execute(session, call, None, rec, runtime=rt).ok
    assert execute(session, call, None, rec, runtime=rt).ok
    assert calls == ["mytool"] and len(rec.requests) == 1
    # Audited: once per call, shared by its decision and execution events.
    with AuditLog(tmp_path / "audit.jsonl") as audit:
        execute(session, call, None, rec, audit, runtime=rt)
    assert calls == ["mytool", "mytool"]
