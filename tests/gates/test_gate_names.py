"""A refusal names the gate that refused: one refusal per gate, each under
its own name, and the gates listed in the order a call meets them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.runtime.gates import GATES, decide, execute
from charter.runtime.plan import TaintPolicy
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall, ToolResult
from charter.runtime.tools.registry import Registry, ToolRuntime

PERMS = {
    "read_file": "allow",
    "write_file": "deny",
    "shell": "allow",
    "web_fetch": "allow",
    "edit_file": "ask",
}


def _rt(ws: Path) -> ToolRuntime:
    return ToolRuntime(workspace=ws, redactor=Redactor(), shell="/bin/sh", timeout_s=10)


def test_the_gates_in_the_order_a_call_meets_them() -> None:
    assert GATES == (
        "visibility",
        "schema",
        "capability",
        "permission",
        "confinement",
        "shell",
        "url",
        "dataflow",
        "approval",
        "dispatch",
    )


# gate -> (call, expected rule) for the gates decide() settles alone.
DECIDED: dict[str, tuple[ToolCall, str]] = {
    "visibility": (ToolCall("no_such_tool", {}), "unknown-tool"),
    "schema": (ToolCall("read_file", {"path": 7}), "schema-violation"),
    "permission": (ToolCall("write_file", {"path": "x", "content": ""}), "plan-deny"),
    "confinement": (ToolCall("read_file", {"path": "../outside/secret.txt"}), "path-traversal"),
    "shell": (ToolCall("shell", {"command": "rm -rf /"}), "destructive-rm"),
    "url": (
        ToolCall("web_fetch", {"url": "http://169.254.169.254/latest/"}),
        "url-metadata-address",
    ),
}


@pytest.mark.parametrize("gate", sorted(DECIDED))
def test_each_deciding_gate_refuses_under_its_own_name(
    gate: str, kit: SimpleNamespace, session_for: Any
) -> None:
    call, rule = DECIDED[gate]
    out = decide(session_for(kit.make_plan({"s": PERMS})), call)
    assert (out.decision, out.gate, out.rule) == ("deny", gate, rule)
    refused = out.refusal()
    assert (refused.gate, refused.rule) == (gate, rule)


def test_the_capability_gate_refuses_under_its_own_name(
    kit: SimpleNamespace, session_for: Any
) -> None:
    core = kit.make_plan({"s": PERMS}, kind="core", grants=["fs.read"])
    out = decide(session_for(core), ToolCall("shell", {"command": "ls"}))
    assert (out.decision, out.gate, out.rule) == ("deny", "capability", "capability-not-granted")


def test_the_dataflow_gate_refuses_under_its_own_name(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    plan = kit.make_plan({"s": PERMS}, taint=TaintPolicy(enabled=True, on_block="deny"))
    session = session_for(plan)
    read = ToolCall("read_file", {"path": ".env"}, "c1")
    assert execute(session, read, None, kit.Recorder("once"), runtime=_rt(workspace)).ok
    out = decide(session, ToolCall("web_fetch", {"url": "https://evil.example/x"}))
    assert (out.decision, out.gate, out.rule) == ("deny", "dataflow", "dataflow-blocked")


def _executed(kit: SimpleNamespace, session_for: Any, ws: Path, **kw: Any) -> ToolResult:
    session = session_for(kit.make_plan({"s": PERMS}))
    call = ToolCall("edit_file", {"path": "notes.txt", "old_str": "hello", "new_str": "bye"})
    return execute(
        session, call, kw.pop("registry", None), kit.Recorder(*kw.pop("answers")), runtime=_rt(ws)
    )


def test_the_approval_gate_refuses_under_its_own_name(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    result = _executed(kit, session_for, workspace, answers=["deny"])
    assert (result.status, result.gate, result.rule) == ("denied", "approval", "approval-denied")


def test_the_dispatch_gate_refuses_under_its_own_name(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    result = _executed(kit, session_for, workspace, answers=["once"], registry=Registry([]))
    assert (result.status, result.gate, result.rule) == (
        "unavailable",
        "dispatch",
        "no-implementation",
    )


def test_every_gate_is_exercised_above() -> None:
    named = set(DECIDED) | {"capability", "dataflow", "approval", "dispatch"}
    assert named == set(GATES)
