"""What the runtime returns and records about a failing MCP server carries
no secret it knows: environment values, argument values (secret-looking
ones and expanded ``${VAR}`` ones), a call's credential arguments, and a
stdio server's stderr, kept through a bounded 12,000-character window.
(Header values are covered with the HTTP server in ``test_http.py``.)"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from charter.runtime.mcp.client import McpHost, McpPool, requests_for
from charter.runtime.mcp.stderr import LOG_NAME, WINDOW_CHARS, StderrCapture
from charter.runtime.redact import Redactor

SERVER = Path(__file__).resolve().with_name("leaky_server.py")
TOKEN = "tok-env-5a4b3c2d1e"  # reaches the server as $LEAK_TOKEN
ARG = "sk-arg-9f8e7d6c"  # written after --api-key in the manifest
LABEL = "lbl-var-31337"  # an argument expanded from ${LEAK_LABEL}
GRANTS = (
    '    "mcp.connect:lister": {}\n    "mcp.call:lister": {}\n'
    '    "mcp.connect:caller": {}\n    "mcp.call:caller": {}\n'
)
# How each failure message reads once the three values are replaced.
SCRUBBED = "token=<redacted> args=--api-key <redacted> --label <redacted>"


def _manifest(mode: str) -> str:
    # The key is written as a reference because the compiler refuses a
    # literal one (hardcoded-secret); the test puts the literal back into
    # the compiled plan, since the runtime must hide it whatever made the plan.
    args = [str(SERVER), mode, "--api-key", "${LITERAL_ARG}", "--label", "${LEAK_LABEL}"]
    return (
        f"command: {json.dumps(sys.executable)}\n"
        f"args: {json.dumps(args)}\n"
        "env:\n  LEAK_TOKEN: ${SOURCE_TOKEN}\n"
    )


def _clean(text: str) -> bool:
    return not any(secret in text for secret in (TOKEN, ARG, LABEL))


def test_discovery_and_call_errors_are_redacted_with_known_values(kit: Any, tmp_path: Path) -> None:
    root: Path = kit.write(
        tmp_path / "p",
        {
            "agent.yaml": kit.core(GRANTS),
            "agent/mcp/lister.yaml": _manifest("list"),
            "agent/mcp/caller.yaml": _manifest("call"),
        },
    )
    result = kit.compiled(root)
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    agent = result.plan.body.agents[0]
    servers = tuple(
        server.model_copy(
            update={"args": tuple(ARG if a == "${LITERAL_ARG}" else a for a in server.args)}
        )
        for server in agent.mcp_servers
    )
    agent = agent.model_copy(update={"mcp_servers": servers})
    grants = [g.capability for g in agent.grants]
    (tmp_path / "home").mkdir()
    logs = tmp_path / "logs"
    host = McpHost(
        agent_dir=root,
        workspace=root,
        home=tmp_path / "home",
        log_dir=logs,
        environ={**os.environ, "SOURCE_TOKEN": TOKEN, "LEAK_LABEL": LABEL},
    )

    async def main() -> tuple[Any, ...]:
        requests, refused = requests_for(agent, grants, lambda preview: True)
        assert refused == []
        async with McpPool(host) as pool:
            reports = await pool.discover(requests)
            soft = await pool.call("caller__leak", {}, grants=grants)
            hard = await pool.call("caller__leak_hard", {}, grants=grants)
        return reports, soft, hard

    reports, soft, hard = anyio.run(main)
    by = {r.server: r for r in reports}
    assert by["caller"].status == "ok", by["caller"].message
    lister = by["lister"]
    assert (lister.status, lister.rule) == ("failed", "mcp-list-failed")
    assert "cannot list tools" in lister.message and SCRUBBED in lister.message
    assert all(_clean(line) for line in lister.lines())
    assert (soft.status, soft.rule) == ("error", "mcp-tool-error")
    assert "leak failed" in soft.content and SCRUBBED in soft.content
    assert (hard.status, hard.rule) == ("error", "mcp-call-failed")
    assert "leak_hard failed" in hard.content and SCRUBBED in hard.content
    assert _clean(soft.content + hard.content)
    # Both servers' stderr reached the log, scrubbed the same way.
    log = (logs / LOG_NAME).read_text()
    assert log.count("leaky server starting") == 2 and _clean(log)
    assert "<redacted:" in log


def test_a_credential_passed_as_a_call_argument_is_redacted(kit: Any, tmp_path: Path) -> None:
    root: Path = kit.write(
        tmp_path / "p", {"agent.yaml": kit.core(), "agent/mcp/docs.yaml": "command: docs-mcp\n"}
    )
    app = kit.docs_server()

    def login(user: str, password: str) -> str:
        raise ToolError(f"wrong password {password} for {user}")

    app.add_tool(login, description="Log in.")
    result = kit.compiled(root)
    assert result.plan is not None
    agent = result.plan.body.agents[0]
    grants = ["mcp.connect:docs", "mcp.call:docs"]
    host = McpHost(agent_dir=root, workspace=root, home=root, log_dir=root / "logs", environ={})

    async def main() -> Any:
        requests, _ = requests_for(agent, grants, lambda preview: True, targets={"docs": app})
        async with McpPool(host) as pool:
            await pool.discover(requests)
            return await pool.call(
                "docs__login", {"user": "alice", "password": "hunter2-hunter2"}, grants=grants
            )

    out = anyio.run(main)
    assert (out.status, out.rule) == ("error", "mcp-tool-error")
    assert "hunter2-hunter2" not in out.content
    assert "wrong password <redacted> for alice" in out.content


def test_stderr_is_kept_through_a_window_of_12000_characters(tmp_path: Path) -> None:
    assert WINDOW_CHARS == 12_000
    secret = "tok-in-stderr-424242"
    # Multi-byte characters: the window counts characters, not bytes.
    tail = "é" * 3000 + secret + "t" * (12_000 - 3000 - len(secret))
    capture = StderrCapture("chatty")
    capture.writer.write("~" * 8000 + tail)
    capture.writer.flush()
    window = capture.window()
    assert len(window) == 12_000 and window == tail
    redactor = Redactor()
    redactor.add(secret, "CHATTY_TOKEN", "env")
    path = capture.flush_to(tmp_path / "logs", redactor)
    assert path == tmp_path / "logs" / LOG_NAME
    text = path.read_text()
    assert "last 12000 characters of stderr (earlier output dropped)" in text
    assert "~" not in text and secret not in text
    assert "<redacted:CHATTY_TOKEN@env>" in text
