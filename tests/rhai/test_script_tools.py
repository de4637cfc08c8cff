"""Leviath's bundled web tools, unmodified, run as script tools under a
compiled plan: through the gates, the URL policy and the pinned transport,
against a fake server on loopback that the plan's own local-network setting
lets them reach."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.approval import ApprovalAnswer, ApprovalRequest
from charter.runtime.gates import execute
from charter.runtime.net.resolve import StaticResolver
from charter.runtime.results import ToolCall
from charter.runtime.session import open_session
from charter.runtime.tools.registry import ToolRuntime
from charter.runtime.tools.web import WebConfig
from tests._support.corpora import leviath_root
from tests._support.servers import serving

LEVIATH = leviath_root()
pytestmark = pytest.mark.skipif(LEVIATH is None, reason="the Leviath corpus is absent")

PAGE = (
    "<html><head><style>p{}</style><script>track()</script></head><body><p>"
    + "Charter reads this page &amp; keeps only its prose. " * 8
    + "</p></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body, ctype, status = PAGE.encode(), "text/html; charset=utf-8", 200
        if self.path == "/missing":
            body, ctype, status = b"nope", "text/plain", 404
        elif self.path == "/image":
            body, ctype = b"\x89PNG....", "image/png"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    with serving(httpd):
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


class _Yes:
    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once", source="test")


def _session(tmp_path: Path, config: str) -> tuple[Any, Path]:
    assert LEVIATH is not None
    root = tmp_path / "researcher"
    shutil.copytree(LEVIATH / "agents" / "researcher", root)
    cfg: Path | None = None
    if config:
        cfg = tmp_path / "config.toml"
        cfg.write_text(config)
    project = load_project(root, config=cfg, use_default_config=False)
    result = compile_project(project, CompileOptions("posix", "/bin/bash"))
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    ws = tmp_path / "ws"
    ws.mkdir()
    return open_session(result.plan, "researcher", workspace=ws, run_id="r"), ws


def _run(session: Any, ws: Path, tool: str, args: dict[str, Any], **web: Any) -> Any:
    rt = ToolRuntime(workspace=ws, web=WebConfig(timeout_s=5, **web), secret_env={})
    return execute(session, ToolCall(tool, args), None, _Yes(), runtime=rt)


def test_web_fetch_reads_a_loopback_page_when_the_plan_allows_local_network(
    server: str, tmp_path: Path
) -> None:
    session, ws = _session(tmp_path, "[security]\nallow_local_network = true\n")
    result = _run(session, ws, "web_fetch", {"url": f"{server}/article"})
    assert result.status == "ok", result.content
    assert result.content.startswith("Charter reads this page & keeps only its prose.")
    assert "track()" not in result.content and "<p>" not in result.content
    assert result.data["host_calls"] == [
        {"fn": "http_get", "target": f"{server}/article", "outcome": "ok"}
    ]


def test_web_fetch_is_refused_loopback_by_the_url_policy_otherwise(
    server: str, tmp_path: Path
) -> None:
    session, ws = _session(tmp_path, "")
    result = _run(session, ws, "web_fetch", {"url": f"{server}/article"})
    # The script catches the host function's refusal and says so, as in Leviath.
    assert result.status == "ok"
    assert result.content.startswith(f"[web_fetch could not retrieve {server}/article: [denied]")
    assert "Charter reads this page" not in result.content
    assert result.data["host_calls"][0]["outcome"].startswith("error: [denied]")


@pytest.mark.parametrize(
    ("path", "words"),
    [("/missing", "HTTP 404"), ("/image", "unreadable body")],
)
def test_web_fetch_reports_what_went_wrong(
    server: str, tmp_path: Path, path: str, words: str
) -> None:
    session, ws = _session(tmp_path, "[security]\nallow_local_network = true\n")
    result = _run(session, ws, "web_fetch", {"url": f"{server}{path}"})
    assert words in result.content


def test_web_search_without_a_key_treats_the_topic_as_unresearched(
    tmp_path: Path,
) -> None:
    session, ws = _session(tmp_path, '[security]\nallow_env_vars = ["BRAVE_API_KEY"]\n')
    # Allowed but unset: no engine. And none is reachable: Wikipedia resolves
    # to loopback, where nothing listens, and the URL policy refuses loopback.
    resolver = StaticResolver({"en.wikipedia.org": ["127.0.0.1"]})
    result = _run(session, ws, "web_search", {"query": "rhai"}, resolver=resolver)
    assert result.status == "ok", result.content
    assert "BRAVE_API_KEY is not set" in result.content
    assert "UNRESEARCHED" in result.content
    fns = [c["fn"] for c in result.data["host_calls"]]
    assert fns == ["env_var", "http_get"]


def test_a_credential_shaped_variable_is_withheld_unless_allowed(tmp_path: Path) -> None:
    session, ws = _session(tmp_path, "")
    rt = ToolRuntime(workspace=ws, web=WebConfig(timeout_s=5), secret_env={"BRAVE_API_KEY": "k"})
    result = execute(session, ToolCall("web_search", {"query": "q"}), None, _Yes(), runtime=rt)
    # The key exists but the user did not list it: Leviath's "[denied]" path.
    assert "refused to hand it to this script" in result.content
    assert result.data["host_calls"][0]["outcome"].startswith("error: [denied]")


def test_each_host_call_is_audited_with_the_tool_call(server: str, tmp_path: Path) -> None:
    from charter.runtime.audit import AuditLog

    session, ws = _session(tmp_path, "[security]\nallow_local_network = true\n")
    log_path = tmp_path / "audit.jsonl"
    log = AuditLog(log_path)
    rt = ToolRuntime(workspace=ws, web=WebConfig(timeout_s=5), secret_env={})
    execute(session, ToolCall("web_fetch", {"url": f"{server}/x"}), None, _Yes(), log, runtime=rt)
    log.close()
    import json

    events = [json.loads(line) for line in log_path.read_text().splitlines()]
    [ran] = [e for e in events if e.get("event") == "execution"]
    assert ran["host_calls"] == [{"fn": "http_get", "target": f"{server}/x", "outcome": "ok"}]
