"""Streamable HTTP through the pinned transport: allowed only where the URL
policy allows, with ``${VAR}`` expanded into headers after approval, every
URL decision recorded without secrets, and errors redacted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _support.servers import serving_asgi
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from charter.runtime.mcp.client import (
    ConnectAuthorization,
    McpHost,
    McpPool,
    Recorder,
    ServerReport,
    ServerRequest,
)
from charter.runtime.net.urlpolicy import UrlPolicy
from charter.runtime.plan import Decision, McpServerPlan
from charter.runtime.results import ToolResult

SEEN: list[str] = []  # the X-Docs-Key header of each request
PATHS: list[str] = []  # the path of each request
KEY = "k-123456789"


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    app = MCPServer("web")

    @app.tool(description="Add two numbers.")
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool(description="Check the key the client sent.")
    def check_key(protocol: bool) -> str:
        # Both ways a server reports a failure: a protocol error (the call
        # raises in the client) or an error result (is_error).
        text = f"the key {SEEN[-1]} was rejected"
        raise MCPError(-32603, text) if protocol else ToolError(text)

    inner = app.streamable_http_app()

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            SEEN.append(headers.get(b"x-docs-key", b"").decode())
            PATHS.append(scope["path"])
            if scope["path"] == "/moved":
                # A same-origin redirect the SDK follows: a second hop.
                await send(
                    {
                        "type": "http.response.start",
                        "status": 307,
                        "headers": [(b"location", b"/mcp")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await inner(scope, receive, send)

    with serving_asgi(recording, lifespan="on") as port:
        yield port


def _plan(port: int, url: str | None = None) -> McpServerPlan:
    return McpServerPlan(
        server="web",
        transport="streamable_http",
        url=url or f"http://127.0.0.1:{port}/mcp",
        headers=(("X-Docs-Key", "${WEB_KEY}"),),
        connect_capability="mcp.connect:web",
        call_capability="mcp.call:web",
        connect_decision=Decision(permission="ask", liftable=True),
        connect_timeout_seconds=10,
    )


def _host(root: Path, policy: UrlPolicy) -> McpHost:
    """A host whose agent, workspace and home are all ``root``, with the key in its environment."""
    return McpHost(
        agent_dir=root,
        workspace=root,
        home=root,
        log_dir=root / "logs",
        environ={"WEB_KEY": KEY},
        url_policy=policy,
    )


def _run(
    tmp_path: Path,
    port: int,
    policy: UrlPolicy,
    *,
    plan: McpServerPlan | None = None,
    record: Recorder | None = None,
    tool: str = "web__add",
    args: dict[str, Any] | None = None,
) -> tuple[ServerReport, ToolResult]:
    host = _host(tmp_path, policy)

    async def main() -> tuple[ServerReport, ToolResult]:
        req = ServerRequest(plan or _plan(port), ConnectAuthorization("web", "approval"))
        async with McpPool(host, record=record) as pool:
            [report] = await pool.discover([req])
            call_args = {"a": 2, "b": 3} if args is None else args
            result = await pool.call(tool, call_args, grants=["mcp.call:web"])
        return report, result

    return anyio.run(main)


def _run_recorded(
    tmp_path: Path, port: int, policy: UrlPolicy, url: str
) -> tuple[ServerReport, ToolResult, list[tuple[str, dict[str, Any]]]]:
    """``_run`` against the server declared at ``url``, with the events it recorded."""
    events: list[tuple[str, dict[str, Any]]] = []

    def record(event: str, fields: dict[str, Any]) -> None:
        events.append((event, fields))

    report, result = _run(tmp_path, port, policy, plan=_plan(port, url), record=record)
    return report, result, events


def test_http_server_on_loopback_with_local_network_allowed(tmp_path: Path, port: int) -> None:
    SEEN.clear()
    report, result = _run(tmp_path, port, UrlPolicy(allow_local_network=True))
    assert report.status == "ok", report.message
    assert [t.name for t in report.offered] == ["web__add", "web__check_key"]
    assert (result.status, result.content) == ("ok", "5")
    assert SEEN and set(SEEN) == {"k-123456789"}


def test_http_server_on_loopback_refused_by_default(tmp_path: Path, port: int) -> None:
    SEEN.clear()
    report, result = _run(tmp_path, port, UrlPolicy())
    assert (report.status, report.rule) == ("failed", "mcp-url-refused")
    assert "http://127.0.0.1:" in report.message and "k-123456789" not in report.message
    assert result.status == "unavailable"
    assert SEEN == []  # nothing was sent


def test_each_request_and_redirect_hop_records_a_secret_free_url_decision(
    tmp_path: Path, port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="httpx2")
    SEEN.clear()
    PATHS.clear()
    # Userinfo, path and query all carry the key; none may reach an event.
    url = f"http://bob:${{WEB_KEY}}@127.0.0.1:{port}/moved?session=${{WEB_KEY}}"
    report, result, events = _run_recorded(tmp_path, port, UrlPolicy(allow_local_network=True), url)
    assert report.status == "ok", report.message
    assert (result.status, result.content) == ("ok", "5")
    assert {e for e, _ in events} == {"mcp_url_decision"}
    phases = [f["phase"] for _, f in events]
    assert phases[0] == "launch"  # the declared URL, judged before anything is sent
    requests = [f for _, f in events if f["phase"] == "request"]
    # The server saw both hops of each request; each was decided and recorded first.
    assert "/moved" in PATHS and "/mcp" in PATHS
    assert len(requests) >= len(PATHS) > PATHS.count("/moved")
    for fields in requests:
        assert fields["server"] == "web"
        assert fields["origin"] == f"http://127.0.0.1:{port}"
        assert (fields["host"], fields["port"]) == ("127.0.0.1", port)
        assert fields["decision"] == "allow" and fields["method"] in {"POST", "GET", "DELETE"}
    connects = [f for _, f in events if f["phase"] == "connect"]
    assert connects and all(f["addresses"] == ["127.0.0.1"] for f in connects)
    text = json.dumps(events)
    assert KEY not in text and "bob" not in text
    assert "/moved" not in text and "session" not in text and "x-docs-key" not in text.lower()
    # The HTTP library's own request log shows only the origin, too.
    assert f"HTTP Request: POST http://127.0.0.1:{port} " in caplog.text
    assert KEY not in caplog.text and "bob" not in caplog.text


def test_a_refused_url_records_its_decision_and_sends_nothing(tmp_path: Path, port: int) -> None:
    SEEN.clear()
    url = f"http://127.0.0.1:{port}/mcp?token=${{WEB_KEY}}"
    report, _, events = _run_recorded(tmp_path, port, UrlPolicy(), url)
    assert (report.status, report.rule) == ("failed", "mcp-url-refused")
    [(_, fields)] = events
    assert (fields["phase"], fields["decision"], fields["reason"]) == (
        "launch",
        "deny",
        "loopback-address",
    )
    assert KEY not in json.dumps(events) and KEY not in report.message
    assert SEEN == []


@pytest.mark.parametrize(
    ("protocol", "rule"), [(True, "mcp-call-failed"), (False, "mcp-tool-error")]
)
def test_an_error_echoing_a_header_value_is_redacted(
    tmp_path: Path, port: int, protocol: bool, rule: str
) -> None:
    SEEN.clear()
    report, result = _run(
        tmp_path,
        port,
        UrlPolicy(allow_local_network=True),
        tool="web__check_key",
        args={"protocol": protocol},
    )
    assert report.status == "ok", report.message
    assert SEEN[-1] == KEY  # the server did receive it, and echoed it
    assert (result.status, result.rule) == ("error", rule)
    assert "was rejected" in result.content
    assert KEY not in result.content and "<redacted>" in result.content


def test_a_run_writes_url_decisions_to_its_audit_log(kit: Any, tmp_path: Path, port: int) -> None:
    from charter.runtime.audit import AuditLog, read_events
    from charter.runtime.mcp.session import McpRuntime
    from charter.runtime.policy.approval import ApprovalAnswer, ApprovalRequest
    from charter.runtime.policy.session import open_session

    class Yes:
        def request(self, req: ApprovalRequest) -> ApprovalAnswer:
            return ApprovalAnswer("once", "", "test")

    manifest = (
        "transport: streamable_http\n"
        f"url: http://127.0.0.1:{port}/mcp?token=${{WEB_KEY}}\n"
        "headers:\n  X-Docs-Key: ${WEB_KEY}\n"
    )
    grants = '    "mcp.connect:web": {}\n    "mcp.call:web": {}\n'
    root: Path = kit.write(
        tmp_path / "p", {"agent.yaml": kit.core(grants), "agent/mcp/web.yaml": manifest}
    )
    result = kit.compiled(root)
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    session = open_session(result.plan, "core", workspace=root)
    host = _host(root, UrlPolicy(allow_local_network=True))
    audit = AuditLog(tmp_path / "audit.jsonl")
    with McpRuntime(host, audit=audit) as rt:
        [report] = rt.attach(session, Yes())
    audit.close()
    assert report.status == "ok", report.message
    events = read_events(tmp_path / "audit.jsonl").events
    decisions = [e for e in events if e["event"] == "mcp_url_decision"]
    assert {(e["agent"], e["server"]) for e in decisions} == {("core", "web")}
    assert "request" in {e["phase"] for e in decisions}
    assert KEY not in (tmp_path / "audit.jsonl").read_text()
