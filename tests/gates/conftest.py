"""Small plans built directly with the plan models, and helpers to decide on them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.catalog.builtin import resolve_builtin
from charter.compiler.resolve.emit_runtime import builtin_entry, redirect_write
from charter.runtime.audit import AuditLog
from charter.runtime.gates import execute
from charter.runtime.plan import (
    AgentPlan,
    Decision,
    Grant,
    McpToolPin,
    Plan,
    PlanBody,
    ScopeValue,
    Stage,
    StageTool,
    TaintPolicy,
    ToolEntry,
)
from charter.runtime.policy.approval import ApprovalAnswer, ApprovalProvider, ApprovalRequest
from charter.runtime.policy.session import Session, open_session
from charter.runtime.results import ToolCall, ToolResult


def builtin(name: str, *, schema: str | None | bool = True) -> ToolEntry:
    """The plan entry the compiler writes for a built-in (input rules aside),
    with another schema, or validation off, when the test asks."""
    b = resolve_builtin(name)
    assert b is not None, name
    entry = builtin_entry(b, description=b.summary).model_copy(update={"input_rules": None})
    if schema is True:
        return entry
    return entry.model_copy(
        update={
            "input_schema": schema or None,
            "validation_note": "" if schema else "validation off for the test",
            "schema_trusted": False,
        }
    )


def mcp_tool(server: str, tool: str) -> ToolEntry:
    return ToolEntry(
        name=f"{server}__{tool}",
        source="mcp",
        impl=server,
        description=f"{tool} on {server}",
        input_schema='{"type":"object"}',
        capability=f"mcp.call:{server}",
        outbound=True,
        mcp=McpToolPin(server=server, tool=tool),
    )


def authored_tool(name: str, description: str, **fields: Any) -> ToolEntry:
    """An authored tool's plan entry (its ``impl`` is its name); ``fields``
    sets the rest, e.g. ``input_schema``."""
    return ToolEntry(name=name, source="authored", impl=name, description=description, **fields)


def decision(permission: str, *, liftable: bool | None = None) -> Decision:
    return Decision(
        permission=permission,  # type: ignore[arg-type]
        liftable=(permission == "ask") if liftable is None else liftable,
        scopes=(ScopeValue(scope="config", value=permission),),  # type: ignore[arg-type]
    )


def make_plan(
    stages: Mapping[str, Mapping[str, str | Decision]],
    *,
    tools: Iterable[ToolEntry] = (),
    kind: str = "blueprint",
    grants: Iterable[str | Grant] = (),
    taint: TaintPolicy | None = None,
    unattended: Mapping[str, Iterable[str]] | None = None,
    agent: str = "a",
) -> Plan:
    """One agent; ``stages`` maps stage -> {tool: permission or Decision}.
    Built-in tools are added from the catalog; ``tools`` adds the others."""
    extra = {t.name: t for t in tools}
    entries: dict[str, ToolEntry] = dict(extra)
    plan_stages = []
    for sname, perms in stages.items():
        for tname in perms:
            if tname not in entries:
                entries[tname] = builtin(tname)
        st = tuple(
            StageTool(name=t, decision=p if isinstance(p, Decision) else decision(p))
            for t, p in sorted(perms.items())
        )
        names = tuple(sorted(perms))
        un = tuple(sorted(unattended[sname])) if unattended and sname in unattended else names
        plan_stages.append(
            Stage(
                name=sname,
                mode="work",
                attended=names,
                unattended=un,
                tools=st,
                redirect_write=redirect_write(),
            )
        )
    grant_models = tuple(g if isinstance(g, Grant) else Grant(capability=g) for g in grants)
    body = PlanBody(
        compiler_version="test",
        target_platform="posix",
        shell="/bin/sh",
        agents=(
            AgentPlan(
                name=agent,
                kind=kind,  # type: ignore[arg-type]
                root=".",
                entry_stage=next(iter(stages)),
                tools=tuple(entries[n] for n in sorted(entries)),
                stages=tuple(plan_stages),
                grants=grant_models,
                taint=taint or TaintPolicy(),
            ),
        ),
        sources=(),
    )
    return Plan.seal(body)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (ws / "notes.txt").write_text("hello\n")
    (ws / ".env").write_text("API_TOKEN=s3cr3t-value-123\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("nope\n")
    os.symlink(outside, ws / "escape")
    return ws


SessionFactory = Callable[..., Session]


@pytest.fixture
def session_for(workspace: Path) -> SessionFactory:
    def make(plan: Plan, **kw: Any) -> Session:
        kw.setdefault("workspace", workspace)
        return open_session(plan, "a", **kw)

    return make


class Recorder:
    """An approval provider that records every request and answers from a list."""

    def __init__(self, *answers: str, message: str = "") -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []
        self.message = message

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(req)
        kind = self.answers.pop(0) if self.answers else "deny"
        return ApprovalAnswer(kind, self.message if kind == "deny" else "", "test")  # type: ignore[arg-type]


def runner(
    session: Session, audit: AuditLog | None = None, *, runtime: Any
) -> Callable[..., ToolResult]:
    """``execute`` bound to one session, audit log and runtime, for tests that
    run a sequence of calls: ``run(call)`` asks a Recorder that refuses,
    ``run(call, provider)`` asks ``provider``."""

    def run(call: ToolCall, provider: ApprovalProvider | None = None) -> ToolResult:
        return execute(session, call, None, provider or Recorder(), audit, runtime=runtime)

    return run


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for test modules (tests are not a package)."""
    return SimpleNamespace(
        make_plan=make_plan,
        builtin=builtin,
        decision=decision,
        mcp_tool=mcp_tool,
        authored_tool=authored_tool,
        Recorder=Recorder,
        runner=runner,
    )
