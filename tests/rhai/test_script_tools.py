"""Leviath's bundled web tools, unmodified, run as script tools under a
compiled plan: through the gates, the URL policy and the pinned transport,
against a fake server on loopback that the plan's own local-network setting
lets them reach."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.gates import execute
from charter.runtime.net.resolve import StaticResolver
from charter.runtime.policy.approval import ApprovalAnswer, ApprovalRequest
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall
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


_BOMB = gzip.compress(gzip.compress(b"a" * 64_000_000, 9), 9)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        body, ctype, status = PAGE.encode(), "text/html; charset=utf-8", 200
        if self.path == "/missing":
            body, ctype, status = b"nope", "text/plain", 404
        elif self.path == "/image":
            body, ctype = b"\x89PNG....", "image/png"
        coding = None
        if self.path == "/bomb":
            # 64 MB of text inside about 1 kB, gzipped twice
            body, ctype, coding = _BOMB, "text/plain", "gzip, gzip"
        self.send_response(status)
        if coding:
            self.send_header("Content-Encoding", coding)
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


def test_a_compressed_bomb_is_refused_past_the_limit_without_inflating_it_whole(
    server: str, tmp_path: Path
) -> None:
    # resp.iter_bytes() inflated each network chunk in one go: gigabytes for
    # a nested gzip; the script's http() now decodes in bounded steps
    session, ws = _session(tmp_path, "[security]\nallow_local_network = true\n")
    tracemalloc.start()
    try:
        result = _run(session, ws, "web_fetch", {"url": f"{server}/bomb"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "larger than the engine's 1MB string limit" in result.content
    assert peak < 48_000_000, f"decoding took {peak} bytes"


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


def _tls_pair(tmp_path: Path, host: str) -> tuple[Path, Path] | None:
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    made = subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
            "-out", str(cert), "-days", "1", "-subj", f"/CN={host}",
            "-addext", f"subjectAltName=DNS:{host}",
        ],
        capture_output=True,
        check=False,
    )  # fmt: skip
    return (key, cert) if made.returncode == 0 else None


def test_web_search_returns_brave_results_from_a_fake_engine(tmp_path: Path) -> None:
    # The unmodified script calls https://api.search.brave.com; a test
    # resolver sends that name to a TLS server on loopback port 443, and the
    # user's config allows both the key and the local network.
    import ssl
    import threading

    host = "api.search.brave.com"
    pair = _tls_pair(tmp_path, host)
    if pair is None:
        pytest.skip("openssl cannot make a test certificate here")
    key, cert = pair
    seen: dict[str, str] = {}

    class Brave(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            seen["path"] = self.path
            seen["token"] = self.headers.get("X-Subscription-Token", "")
            results = [
                {"title": "Rhai book", "url": "https://rhai.rs/book", "description": "The book",
                 "page_age": "2026-11-01T00:00:00"},
                {"title": "Rhai repo", "url": "https://github.com/rhaiscript/rhai",
                 "description": "Source", "age": "2 days ago"},
            ]  # fmt: skip
            body = json.dumps({"web": {"results": results}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", 443), Brave)
    except OSError as exc:
        pytest.skip(f"cannot listen on loopback port 443 here: {exc}")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    httpd.socket = served.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        config = '[security]\nallow_local_network = true\nallow_env_vars = ["BRAVE_API_KEY"]\n'
        session, ws = _session(tmp_path, config)
        trusted = ssl.create_default_context(cafile=str(cert))
        rt = ToolRuntime(
            workspace=ws,
            web=WebConfig(
                timeout_s=5, resolver=StaticResolver({host: ["127.0.0.1"]}), verify=trusted
            ),
            secret_env={"BRAVE_API_KEY": "test-key"},
        )
        result = execute(
            session, ToolCall("web_search", {"query": "rhai lang", "count": 2}), None, _Yes(),
            runtime=rt,
        )  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.status == "ok", result.content
    assert json.loads(result.content) == [
        {"date": "2026-11-01T00:00:00", "snippet": "The book", "title": "Rhai book",
         "url": "https://rhai.rs/book"},
        {"date": "2 days ago", "snippet": "Source", "title": "Rhai repo",
         "url": "https://github.com/rhaiscript/rhai"},
    ]  # fmt: skip
    assert seen["path"] == "/res/v1/web/search?q=rhai%20lang&count=2"
    assert seen["token"] == "test-key"
