"""The whole pipeline with execution: approvals, caching, work accounting, fingerprints."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.runtime.gates import decide, execute
from charter.runtime.policy.approval import (
    ApprovalAnswer,
    ApprovalCache,
    HeadlessProvider,
    NonInteractiveProvider,
    TerminalProvider,
    call_key,
)
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall
from charter.runtime.tools.registry import Registry, ToolRuntime


def _plan(kit: SimpleNamespace, **kw: Any) -> Any:
    return kit.make_plan(
        {
            "one": {
                "read_file": "allow",
                "write_file": "ask",
                "shell": "ask",
                "terminal": "ask",
                "submit_output": "allow",
            },
            "two": {"read_file": "allow", "write_file": "ask"},
        },
        **kw,
    )


def _rt(ws: Path) -> ToolRuntime:
    return ToolRuntime(workspace=ws, redactor=Redactor(), shell="/bin/sh", timeout_s=10)


def test_refused_calls_never_reach_the_provider(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("once")
    for call in (
        ToolCall("nope", {}),
        ToolCall("write_file", {"path": "x"}),  # schema
        ToolCall("write_file", {"path": "../x", "content": ""}),  # confinement
    ):
        result = execute(session, call, None, rec, runtime=_rt(workspace))
        assert not result.executed and result.gate is not None
        assert not result.data.get("counts_as_work")
    assert rec.requests == []


def test_ask_goes_to_the_provider_and_runs_when_approved(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("once")
    result = execute(
        session,
        ToolCall("write_file", {"path": "new/out.txt", "content": "x"}),
        None,
        rec,
        runtime=_rt(workspace),
    )
    assert result.ok, result.content
    assert (workspace / "new" / "out.txt").read_text() == "x"
    assert result.data["counts_as_work"] is True
    assert len(rec.requests) == 1 and rec.requests[0].tool == "write_file"


def test_denial_with_a_message_reaches_the_model(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny", message="write it under docs/ instead")
    result = execute(
        session,
        ToolCall("write_file", {"path": "out.txt", "content": "x"}),
        None,
        rec,
        runtime=_rt(workspace),
    )
    assert (result.status, result.gate, result.rule) == ("denied", "approval", "approval-denied")
    assert "docs/ instead" in result.content
    assert not (workspace / "out.txt").exists()


def test_run_approval_is_reused_only_for_the_same_shape(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("run", "deny")
    rt = _rt(workspace)
    call = ToolCall("write_file", {"path": "a.txt", "content": "1"})
    assert execute(session, call, None, rec, runtime=rt).ok
    assert execute(session, call, None, rec, runtime=rt).ok  # from the cache
    assert len(rec.requests) == 1
    other = ToolCall("write_file", {"path": "a.txt", "content": "2"})
    assert not execute(session, other, None, rec, runtime=rt).ok
    assert len(rec.requests) == 2


def test_stage_approval_lapses_when_the_stage_changes(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("stage", "deny")
    rt = _rt(workspace)
    call = ToolCall("write_file", {"path": "a.txt", "content": "1"})
    assert execute(session, call, None, rec, runtime=rt).ok
    assert execute(session, call, None, rec, runtime=rt).ok
    session.enter_stage("two")
    assert not execute(session, call, None, rec, runtime=rt).ok
    assert len(rec.requests) == 2


def test_once_is_never_remembered(kit: SimpleNamespace, session_for: Any, workspace: Path) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("once", "once")
    rt = _rt(workspace)
    call = ToolCall("write_file", {"path": "a.txt", "content": "1"})
    assert execute(session, call, None, rec, runtime=rt).ok
    assert execute(session, call, None, rec, runtime=rt).ok
    assert len(rec.requests) == 2


def test_ungrantable_shell_commands_are_never_cached(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    out = decide(session, ToolCall("shell", {"command": 'echo hi > "$OUT"'}))
    assert out.decision == "ask"
    assert out.shell is not None and out.shell.ungrantable
    assert out.cache_key is None
    rec = kit.Recorder("run", "run")
    rt = _rt(workspace)
    call = ToolCall("shell", {"command": 'echo hi > "$OUT"'})
    assert execute(session, call, None, rec, runtime=rt).executed
    assert execute(session, call, None, rec, runtime=rt).executed
    assert len(rec.requests) == 2
    assert len(session.approvals) == 0


def test_secret_bindings_are_never_cached(kit: SimpleNamespace, session_for: Any) -> None:
    plan = _plan(
        kit, kind="core", grants=["terminal.exec", "fs.read", "fs.write", "secret.bind:GH_TOKEN"]
    )
    session = session_for(plan)
    call = ToolCall("terminal", {"command": "ls", "secret_bindings": [{"source": "env:GH_TOKEN"}]})
    out = decide(session, call)
    assert out.decision == "ask" and out.cache_key is None
    assert out.secret_targets == ("GH_TOKEN",)


def test_fingerprints_differ_by_cwd_env_and_options(kit: SimpleNamespace, session_for: Any) -> None:
    session = session_for(_plan(kit))
    base = {"command": "make test"}
    shapes = [
        base,
        {**base, "cwd": "src"},
        {**base, "env": {"MODE": "ci"}},
        {**base, "env": {"MODE": "dev"}},
        {**base, "timeout_seconds": 90},
        {**base, "background": True},
    ]
    prints = [decide(session, ToolCall("terminal", s)).fingerprint for s in shapes]
    assert None not in prints
    assert len(set(prints)) == len(prints)
    again = decide(session, ToolCall("terminal", dict(base))).fingerprint
    assert again == prints[0]
    keys = {decide(session, ToolCall("terminal", s)).cache_key for s in shapes}
    assert len(keys) == len(shapes)


def test_non_shell_cache_key_is_tool_and_canonical_args() -> None:
    assert call_key("t", {"a": 1, "b": 2}) == call_key("t", {"b": 2, "a": 1})
    assert call_key("t", {"a": 1}) != call_key("u", {"a": 1})
    assert call_key("t", {"a": 1}) != call_key("t", {"a": "1"})


def test_cache_scopes() -> None:
    cache = ApprovalCache("s1")
    assert cache.remember("k1", "stage") and cache.remember("k2", "run")
    assert not cache.remember("k3", "once") and not cache.remember(None, "run")
    assert cache.lookup("k1") == "stage" and cache.lookup("k2") == "run"
    cache.stage_changed("s2")
    assert cache.lookup("k1") is None and cache.lookup("k2") == "run"


def test_headless_expiry_denies() -> None:
    provider = HeadlessProvider(0.2)
    req = _req("r1")
    t0 = time.monotonic()
    ans = provider.request(req)
    assert time.monotonic() - t0 >= 0.2
    assert (ans.kind, ans.source) == ("deny", "expiry")


def test_headless_expiry_is_a_refusal_in_the_pipeline(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    result = execute(
        session,
        ToolCall("write_file", {"path": "a.txt", "content": "1"}),
        None,
        HeadlessProvider(0.05),
        runtime=_rt(workspace),
    )
    assert (result.status, result.rule) == ("denied", "approval-expired")
    assert not (workspace / "a.txt").exists()


def test_headless_answer_for_the_right_request_only() -> None:
    published: list[Any] = []
    provider = HeadlessProvider(5, published.append)

    def answer() -> None:
        while not published:
            time.sleep(0.005)
        provider.answer("someone-else", ApprovalAnswer("run", "", "api"))
        provider.answer(published[0].request_id, ApprovalAnswer("once", "", "api"))

    threading.Thread(target=answer).start()
    ans = provider.request(_req("r2"))
    assert (ans.kind, ans.source) == ("once", "api")


def test_non_interactive_names_the_flag() -> None:
    ans = NonInteractiveProvider().request(_req("r3", liftable_by="--allow write_file"))
    assert ans.kind == "deny" and "--allow write_file" in ans.message
    ans = NonInteractiveProvider().request(_req("r4"))
    assert ans.kind == "deny" and "only a person" in ans.message


@pytest.mark.parametrize(
    "typed,kind,message",
    [
        ("o\n", "once", ""),
        ("s\n", "stage", ""),
        ("r\n", "run", ""),
        ("d\n", "deny", ""),
        ("m\nuse the staging bucket\n", "deny", "use the staging bucket"),
        ("", "deny", "no answer was given"),
        ("what\nwhat\nwhat\n", "deny", "no usable answer was given"),
    ],
)
def test_terminal_provider_answers(typed: str, kind: str, message: str) -> None:
    out = io.StringIO()
    ans = TerminalProvider(io.StringIO(typed), out).request(_req("r5", command="rm -rf build"))
    assert (ans.kind, ans.message) == (kind, message)
    shown = out.getvalue()
    assert "command: rm -rf build" in shown and "cwd: src" in shown
    assert "API_KEY" in shown and "hunter2" not in shown


def test_terminal_provider_refuses_to_remember_an_uncacheable_call() -> None:
    out = io.StringIO()
    req = _req("r6", cache_key=None)
    ans = TerminalProvider(io.StringIO("r\no\n"), out).request(req)
    assert ans.kind == "once"
    assert "only be approved once" in out.getvalue()


def test_approval_preview_is_redacted(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder("deny")
    rt = _rt(workspace)
    rt.redactor.add("tok-abcdef-123456", "GH_TOKEN", "env")
    execute(
        session,
        ToolCall("shell", {"command": "curl -H 'Authorization: Bearer tok-abcdef-123456' x.io"}),
        None,
        rec,
        runtime=rt,
    )
    req = rec.requests[0]
    assert "tok-abcdef-123456" not in req.args_preview
    assert "<redacted:GH_TOKEN>" in req.args_preview
    assert req.command is not None and "tok-abcdef-123456" not in req.command


def test_shell_runs_after_approval(kit: SimpleNamespace, session_for: Any, workspace: Path) -> None:
    session = session_for(_plan(kit))
    rec = kit.Recorder()
    result = execute(
        session, ToolCall("bash", {"command": "cat notes.txt"}), None, rec, runtime=_rt(workspace)
    )
    assert result.ok and "hello" in result.content
    assert rec.requests == []  # the guard's allow lifted the shell's ask
    assert result.data["counts_as_work"] is False


def test_a_broken_provider_is_a_denial(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    class Broken:
        def request(self, req: Any) -> ApprovalAnswer:
            raise RuntimeError("socket closed")

    session = session_for(_plan(kit))
    result = execute(
        session,
        ToolCall("write_file", {"path": "a", "content": ""}),
        None,
        Broken(),
        runtime=_rt(workspace),
    )
    assert result.status == "denied" and "socket closed" in result.content


def _req(rid: str, **kw: Any) -> Any:
    from charter.runtime.policy.approval import ApprovalRequest

    fields: dict[str, Any] = {
        "request_id": rid,
        "agent": "a",
        "stage": "s",
        "tool": "shell",
        "args_preview": '{"env":{"API_KEY":"<hidden>"}}',
        "reason": "needs approval",
        "rule": "plan-ask",
        "cache_key": "k",
        "cwd": "src",
        "env_keys": ("API_KEY",),
    }
    fields.update(kw)
    return ApprovalRequest(**fields)


def test_dispatch_refusal_without_an_implementation(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    plan = kit.make_plan({"s": {"read_file": "allow"}})
    session = session_for(plan)
    result = execute(
        session,
        ToolCall("read_file", {"path": "notes.txt"}),
        Registry([]),
        kit.Recorder(),
        runtime=_rt(workspace),
    )
    assert (result.status, result.gate, result.rule) == (
        "unavailable",
        "dispatch",
        "no-implementation",
    )
    assert not result.data.get("counts_as_work")
