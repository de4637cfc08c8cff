"""The MCP connections of a run over several turns: the run-wide bound on
discovery, the negative cache of failed discoveries, refused connects asked
again, and declarations that change or go away under live connections.

A "turn" here is one call of ``McpRuntime.attach``; the servers are
in-process, and time is a fake clock, so nothing waits for real."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from charter.runtime.audit import AuditLog, read_events
from charter.runtime.mcp.client import McpHost
from charter.runtime.mcp.session import NEGATIVE_CACHE_SECONDS, McpRuntime
from charter.runtime.plan import Plan
from charter.runtime.policy.approval import ApprovalAnswer, ApprovalRequest
from charter.runtime.policy.session import Session, open_session


class Approver:
    """Answers connect requests from a script per server (then ``once``),
    and remembers every request."""

    def __init__(self, script: dict[str, list[str]] | None = None) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.asked: list[str] = []

    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(req.tool)
        answers = self.script.get(req.tool.removeprefix("mcp.connect:"), [])
        kind = answers.pop(0) if answers else "once"
        return ApprovalAnswer(kind, "", "test")  # type: ignore[arg-type]

    def count(self, server: str) -> int:
        return self.asked.count(f"mcp.connect:{server}")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counted(MCPServer):
    """A server that counts its listings and can be made to fail them."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.lists = 0
        self.broken = False

        @self.tool(name=f"{name}_ping", description=f"Ping {name}.")
        def ping() -> str:
            return f"pong from {name}"

    async def list_tools(self) -> Any:
        self.lists += 1
        if self.broken:
            raise MCPError(-32603, "the backend is down")
        return await super().list_tools()


class Gauge:
    """How many listings are in progress at once, across every server."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0


class Slow(MCPServer):
    """A listing that stays in progress until a fifth one joins it or half a
    second passes: with a bound of four it always waits the half second, and
    without a bound the peak passes four at once."""

    def __init__(self, name: str, gauge: Gauge) -> None:
        super().__init__(name)
        self.gauge = gauge

        @self.tool(name=f"{name}_ping", description=f"Ping {name}.")
        def ping() -> str:
            return "pong"

    async def list_tools(self) -> Any:
        g = self.gauge
        g.now += 1
        g.peak = max(g.peak, g.now)
        deadline = time.monotonic() + 0.5
        try:
            while g.peak <= 4 and time.monotonic() < deadline:
                await anyio.sleep(0.01)
        finally:
            g.now -= 1
        return await super().list_tools()


def _grants(servers: list[str]) -> str:
    return "".join(f'    "mcp.connect:{s}": {{}}\n    "mcp.call:{s}": {{}}\n' for s in servers)


def _project(kit: Any, root: Path, servers: list[str], agent: str = "core") -> Path:
    files = {"agent.yaml": kit.core(_grants(servers)).replace("id: core", f"id: {agent}")}
    for s in servers:
        files[f"agent/mcp/{s}.yaml"] = f"command: {s}-mcp\n"
    written: Path = kit.write(root, files)
    return written


def _plan(kit: Any, root: Path) -> Plan:
    result = kit.compiled(root)
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    plan: Plan = result.plan
    return plan


def _session(plan: Plan, root: Path) -> Session:
    return open_session(plan, plan.body.agents[0].name, workspace=root)


def _host(root: Path) -> McpHost:
    return McpHost(agent_dir=root, workspace=root, home=root, log_dir=root / ".logs", environ={})


def _status(reports: Any) -> dict[str, str]:
    return {r.server: r.status for r in reports}


# --------------------------------------------------------------------------- S000-78


def test_discovery_runs_at_most_four_servers_at_once(kit: Any, tmp_path: Path) -> None:
    servers = [f"s{i}" for i in range(6)]
    root = _project(kit, tmp_path / "p", servers)
    gauge = Gauge()
    targets = {s: Slow(s, gauge) for s in servers}
    with McpRuntime(_host(root), targets=targets) as rt:
        reports = rt.attach(_session(_plan(kit, root), root), Approver())
    assert set(_status(reports).values()) == {"ok"}
    assert gauge.peak == 4


def test_the_bound_of_four_covers_every_agent_of_the_run(kit: Any, tmp_path: Path) -> None:
    # Two agents with three servers each attach at the same time: one shared
    # bound keeps the run at four; a bound per agent would reach six.
    first, second = ["a1", "a2", "a3"], ["b1", "b2", "b3"]
    roots = [
        _project(kit, tmp_path / "a", first, agent="alpha"),
        _project(kit, tmp_path / "b", second, agent="beta"),
    ]
    gauge = Gauge()
    targets = {s: Slow(s, gauge) for s in first + second}
    sessions = [_session(_plan(kit, root), root) for root in roots]
    with McpRuntime(_host(tmp_path), targets=targets) as rt, ThreadPoolExecutor(2) as threads:
        futures = [threads.submit(rt.attach, s, Approver()) for s in sessions]
        results = [f.result(timeout=30) for f in futures]
    assert [set(_status(r).values()) for r in results] == [{"ok"}, {"ok"}]
    assert gauge.peak == 4


# --------------------------------------------------------------------------- S000-79


def test_a_failed_discovery_is_retried_only_after_the_negative_cache_expires(
    kit: Any, tmp_path: Path
) -> None:
    assert NEGATIVE_CACHE_SECONDS == 30
    root = _project(kit, tmp_path / "p", ["docs", "flaky"])
    docs, flaky = Counted("docs"), Counted("flaky")
    flaky.broken = True
    clock = Clock()
    approver = Approver()
    audit = AuditLog(tmp_path / "audit.jsonl")
    session = _session(_plan(kit, root), root)
    with McpRuntime(
        _host(root), targets={"docs": docs, "flaky": flaky}, audit=audit, clock=clock
    ) as rt:
        first = rt.attach(session, approver)
        assert _status(first) == {"docs": "ok", "flaky": "failed"}
        [failed] = [r for r in first if r.server == "flaky"]
        assert failed.rule == "mcp-list-failed" and "the backend is down" in failed.message
        pool = session.mcp.pool if session.mcp is not None else None
        assert pool is not None
        healthy = pool.connections["docs"]
        flaky.broken = False  # it would answer now, but it is not asked yet

        clock.now += NEGATIVE_CACHE_SECONDS - 0.5
        second = rt.attach(session, approver)
        assert _status(second) == {"docs": "ok", "flaky": "failed"}
        assert flaky.lists == 1  # remembered, not retried
        assert session.mcp is not None and session.mcp.decided == ()

        clock.now += 0.5
        third = rt.attach(session, approver)
        assert _status(third) == {"docs": "ok", "flaky": "ok"}
        assert flaky.lists == 2
        # Only the failed server was retried: the healthy one kept its
        # connection and was neither listed nor asked about again.
        assert docs.lists == 1 and pool.connections["docs"] is healthy and healthy.alive
        assert [r.server for r in session.mcp.decided] == ["flaky"]
        assert approver.count("docs") == 1 and approver.count("flaky") == 1
        assert "flaky__flaky_ping" in session.offered()
        result = session.mcp.call("flaky__flaky_ping", {}, grants=["mcp.call:flaky"])
        assert (result.status, result.content) == ("ok", "pong from flaky")
    audit.close()
    records = [
        (e["server"], e["status"])
        for e in read_events(tmp_path / "audit.jsonl").events
        if e["event"] == "mcp_server"
    ]
    assert records == [("docs", "ok"), ("flaky", "failed"), ("flaky", "ok")]


def test_a_server_failing_again_starts_a_new_negative_cache_period(
    kit: Any, tmp_path: Path
) -> None:
    root = _project(kit, tmp_path / "p", ["flaky"])
    flaky = Counted("flaky")
    flaky.broken = True
    clock = Clock()
    session = _session(_plan(kit, root), root)
    with McpRuntime(_host(root), targets={"flaky": flaky}, clock=clock) as rt:
        rt.attach(session, Approver())
        clock.now += NEGATIVE_CACHE_SECONDS
        assert _status(rt.attach(session, Approver())) == {"flaky": "failed"}
        assert flaky.lists == 2
        clock.now += NEGATIVE_CACHE_SECONDS - 1
        rt.attach(session, Approver())
        assert flaky.lists == 2


# --------------------------------------------------------------------------- S000-80


def test_a_refused_connect_is_asked_again_on_the_next_turn(kit: Any, tmp_path: Path) -> None:
    root = _project(kit, tmp_path / "p", ["docs", "wiki"])
    approver = Approver({"docs": ["deny", "once"]})
    session = _session(_plan(kit, root), root)
    targets = {"docs": Counted("docs"), "wiki": Counted("wiki")}
    with McpRuntime(_host(root), targets=targets) as rt:
        first = rt.attach(session, approver)
        assert _status(first) == {"docs": "refused", "wiki": "ok"}
        assert "docs__docs_ping" not in session.offered()
        assert session.mcp is not None and session.mcp.pool is not None
        wiki = session.mcp.pool.connections["wiki"]

        second = rt.attach(session, approver)  # the next turn
        assert _status(second) == {"docs": "ok", "wiki": "ok"}
        # Asked again for the refused server only; the approved one is kept.
        assert approver.count("docs") == 2 and approver.count("wiki") == 1
        assert session.mcp.pool.connections["wiki"] is wiki
        assert "docs__docs_ping" in session.offered()
        result = session.mcp.call("docs__docs_ping", {}, grants=["mcp.call:docs"])
        assert (result.status, result.content) == ("ok", "pong from docs")

        rt.attach(session, approver)  # nothing is due: nobody is asked
        assert len(approver.asked) == 3


def test_a_refusal_without_the_grant_is_rechecked_without_asking(kit: Any, tmp_path: Path) -> None:
    root = _project(kit, tmp_path / "p", ["docs"])
    (root / "agent.yaml").write_text(kit.core('    "mcp.call:docs": {}\n'))
    approver = Approver()
    session = _session(_plan(kit, root), root)
    with McpRuntime(_host(root), targets={"docs": Counted("docs")}) as rt:
        for _ in range(2):
            [report] = rt.attach(session, approver)
            assert (report.status, report.rule) == ("refused", "capability-not-granted")
        assert approver.asked == [] and rt._portal is None


# --------------------------------------------------------------------------- S000-83


def test_a_changed_declaration_closes_the_connection_and_asks_again(
    kit: Any, tmp_path: Path
) -> None:
    root = _project(kit, tmp_path / "p", ["docs", "wiki"])
    approver = Approver({"docs": ["once", "deny", "once"]})
    audit = AuditLog(tmp_path / "audit.jsonl")
    targets = {"docs": Counted("docs"), "wiki": Counted("wiki")}
    with McpRuntime(_host(root), targets=targets, audit=audit) as rt:
        before = _session(_plan(kit, root), root)
        rt.attach(before, approver)
        assert before.mcp is not None and before.mcp.pool is not None
        pool = before.mcp.pool
        old_docs, wiki = pool.connections["docs"], pool.connections["wiki"]

        (root / "agent/mcp/docs.yaml").write_text("command: docs-mcp\nargs: [--v2]\n")
        after = _session(_plan(kit, root), root)
        reports = rt.attach(after, approver)
        # The old connection is gone before anyone is asked about the new
        # declaration, and the refusal leaves no docs connection at all.
        assert not old_docs.alive and "docs" not in pool.connections
        assert _status(reports) == {"docs": "refused", "wiki": "ok"}
        assert approver.count("docs") == 2 and approver.count("wiki") == 1
        assert pool.connections["wiki"] is wiki and wiki.alive
        assert "docs__docs_ping" not in after.offered()

        reports = rt.attach(after, approver)  # approved on the next turn
        assert _status(reports) == {"docs": "ok", "wiki": "ok"}
        assert pool.connections["docs"] is not old_docs
    audit.close()
    closed = [
        (e["server"], e["reason"])
        for e in read_events(tmp_path / "audit.jsonl").events
        if e["event"] == "mcp_server" and e["status"] == "closed"
    ]
    assert closed == [("docs", "its declaration changed")]


def test_removing_every_declaration_closes_the_remaining_connections(
    kit: Any, tmp_path: Path
) -> None:
    root = _project(kit, tmp_path / "p", ["docs", "wiki"])
    targets = {"docs": Counted("docs"), "wiki": Counted("wiki")}
    with McpRuntime(_host(root), targets=targets) as rt:
        first = _session(_plan(kit, root), root)
        rt.attach(first, Approver())
        assert first.mcp is not None and first.mcp.pool is not None
        pool = first.mcp.pool
        live = list(pool.connections.values())
        assert len(live) == 2 and all(c.alive for c in live)

        (root / "agent/mcp/wiki.yaml").unlink()
        one_left = _session(_plan(kit, root), root)
        assert _status(rt.attach(one_left, Approver())) == {"docs": "ok"}
        assert list(pool.connections) == ["docs"]

        (root / "agent/mcp/docs.yaml").unlink()
        plan = _plan(kit, root)
        assert plan.body.agents[0].mcp_servers == ()
        none_left = _session(plan, root)
        assert rt.attach(none_left, Approver()) == ()
        assert pool.connections == {}
        assert not any(c.alive for c in live)
        result = first.mcp.call("docs__docs_ping", {}, grants=["mcp.call:docs"])
        assert result.status == "unavailable"
