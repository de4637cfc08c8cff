"""web_fetch, web_extract and web_search against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from _support.servers import serving

from charter.runtime.tools.registry import IMPLEMENTATIONS, ToolRuntime
from charter.runtime.tools.web import WebConfig, html_to_text, iter_body, web_config_for

PAGE = (
    "<html><head><title>Release notes</title><style>p{color:red}</style>"
    "<script>steal()</script></head><body><nav>Home</nav><h1>Charter 1.0</h1>"
    "<p>Plans are <b>frozen</b>&amp; content-addressed.</p><ul><li>one</li><li>two</li></ul>"
    "</body></html>"
)
SEEN: dict[str, Any] = {}
# 64 MB of zeros, gzipped twice: about 1 kB on the wire. httpx's own decoders
# would inflate it in one step; the tools must stay within their byte budget.
BOMB = gzip.compress(gzip.compress(b"\0" * 64_000_000, 9), 9)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(
        self, code: int, ctype: str, body: bytes, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        url = urlparse(self.path)
        q = parse_qs(url.query)
        SEEN["headers"] = dict(self.headers)
        if url.path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE.encode())
        elif url.path == "/big":
            self._send(200, "text/plain", b"x" * 3_000_000)
        elif url.path == "/binary":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
        elif url.path == "/gzip":
            self._send(200, "text/html", gzip.compress(PAGE.encode()), {"Content-Encoding": "gzip"})
        elif url.path == "/deflate-raw":
            raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
            body = raw.compress(b"plain words") + raw.flush()
            self._send(200, "text/plain", body, {"Content-Encoding": "deflate"})
        elif url.path == "/bomb":
            self._send(200, "text/plain", BOMB, {"Content-Encoding": "gzip, gzip"})
        elif url.path == "/brotli":
            self._send(200, "text/plain", b"\x0b\x01\x80hi\x03", {"Content-Encoding": "br"})
        elif url.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(400):  # never reaches the byte budget; ~20 s in all
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        elif url.path == "/missing":
            self._send(404, "text/plain", b"no")
        elif url.path == "/to-metadata":
            self._send(302, "text/plain", b"", {"Location": "http://169.254.169.254/latest/"})
        elif url.path == "/brave":
            SEEN["brave"] = q
            body = {
                "web": {
                    "results": [
                        {
                            "title": "Charter <strong>docs</strong>",
                            "url": "https://charter.dev",
                            "description": "Policy &amp; plans",
                        },
                        {"title": "Two", "url": "https://example.org/2", "description": "second"},
                    ]
                }
            }
            self._send(200, "application/json", json.dumps(body).encode())
        elif url.path == "/w/api.php":
            SEEN["wiki"] = q
            body = {
                "query": {
                    "search": [
                        {
                            "title": "Policy compiler",
                            "snippet": 'a <span class="m">policy</span> tool',
                        },
                    ]
                }
            }
            self._send(200, "application/json", json.dumps(body).encode())
        else:
            self._send(500, "text/plain", b"?")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    with serving(httpd):
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


def _rt(tmp_path: Path, **cfg: Any) -> ToolRuntime:
    return ToolRuntime(workspace=tmp_path, web=WebConfig(timeout_s=5, **cfg))


def fetch(rt: ToolRuntime, url: str, tool: str = "web_fetch", **args: Any) -> Any:
    return IMPLEMENTATIONS["web.fetch"]({"url": url, **args}, rt, tool=tool)


def test_readable_text_without_scripts_or_styles(server: str, tmp_path: Path) -> None:
    result = fetch(_rt(tmp_path, allow_local_network=True), server + "/page")
    assert result.ok
    assert result.content.startswith("# Release notes")
    assert "Plans are frozen& content-addressed." in result.content
    assert "- one" in result.content
    assert "steal" not in result.content and "color" not in result.content
    assert result.data["origin"] == server and result.data["address"] == "127.0.0.1"


def test_loopback_is_refused_without_allow_local_network(server: str, tmp_path: Path) -> None:
    result = fetch(_rt(tmp_path), server + "/page")
    assert result.status == "blocked" and result.content.startswith("[blocked]")
    assert "loopback" in result.content


def test_redirect_to_metadata_is_refused(server: str, tmp_path: Path) -> None:
    result = fetch(_rt(tmp_path, allow_local_network=True), server + "/to-metadata")
    assert result.status == "blocked"


def test_oversized_pages_are_cut_with_a_note(server: str, tmp_path: Path) -> None:
    result = fetch(_rt(tmp_path, allow_local_network=True, max_bytes=100_000), server + "/big")
    assert result.ok and "[truncated]" in result.content
    assert result.data["truncated"] is True


def test_compressed_pages_are_decoded(server: str, tmp_path: Path) -> None:
    rt = _rt(tmp_path, allow_local_network=True)
    result = fetch(rt, server + "/gzip")
    assert result.ok and "Plans are frozen" in result.content
    assert SEEN["headers"]["Accept-Encoding"] == "gzip, deflate"
    assert fetch(rt, server + "/deflate-raw").content == "plain words"


def test_nested_gzip_bomb_stays_within_the_byte_budget(server: str, tmp_path: Path) -> None:
    rt = _rt(tmp_path, allow_local_network=True, max_bytes=100_000)
    tracemalloc.start()
    try:
        result = fetch(rt, server + "/bomb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and "[truncated]" in result.content
    assert result.data["truncated"] is True
    assert peak < 16_000_000, f"decoding the bomb took {peak} bytes"


def test_unknown_content_coding_is_an_error(server: str, tmp_path: Path) -> None:
    result = fetch(_rt(tmp_path, allow_local_network=True), server + "/brotli")
    assert result.status == "error" and result.rule == "content-encoding"


def test_a_trickling_response_stops_at_the_deadline(server: str, tmp_path: Path) -> None:
    rt = ToolRuntime(workspace=tmp_path, web=WebConfig(timeout_s=1, allow_local_network=True))
    started = time.monotonic()
    result = fetch(rt, server + "/trickle")
    assert time.monotonic() - started < 5
    assert result.ok and "still sending after 1 s" in result.content


def test_web_extract_honours_max_chars(server: str, tmp_path: Path) -> None:
    result = fetch(
        _rt(tmp_path, allow_local_network=True), server + "/page", "web_extract", max_chars=10
    )
    assert result.ok and "showing the first 10" in result.content


@pytest.mark.parametrize(("path", "rule"), [("/binary", "not-text"), ("/missing", "http-status")])
def test_non_text_and_errors_are_results(server: str, tmp_path: Path, path: str, rule: str) -> None:
    result = fetch(_rt(tmp_path, allow_local_network=True), server + path)
    assert result.status == "error" and result.rule == rule


def test_search_uses_brave_when_the_key_was_allowed(server: str, tmp_path: Path) -> None:
    rt = _rt(tmp_path, allow_local_network=True, brave_api_key="k-123", brave_url=server + "/brave")
    result = IMPLEMENTATIONS["web.search"]({"query": "charter", "count": 1}, rt)
    assert result.ok and result.data["provider"] == "brave"
    assert json.loads(result.content) == [
        {"title": "Charter docs", "url": "https://charter.dev", "snippet": "Policy & plans"}
    ]
    assert SEEN["headers"]["X-Subscription-Token"] == "k-123"
    assert SEEN["brave"]["q"] == ["charter"]


def test_search_falls_back_to_wikipedia_and_says_so(server: str, tmp_path: Path) -> None:
    rt = _rt(tmp_path, allow_local_network=True, wikipedia_url=server + "/w/api.php")
    result = IMPLEMENTATIONS["web.search"]({"query": "policy"}, rt)
    assert result.ok and result.data["provider"] == "wikipedia"
    [hit] = json.loads(result.content)
    assert hit == {
        "title": "Policy compiler",
        "url": server + "/wiki/Policy_compiler",
        "snippet": "a policy tool",
    }


def test_brave_key_is_read_only_when_allowed() -> None:
    env = {"BRAVE_API_KEY": "secret"}
    assert web_config_for(False, (), env).brave_api_key is None
    assert web_config_for(False, ("brave_api_key",), env).brave_api_key == "secret"


def test_html_to_text_survives_broken_markup() -> None:
    title, text = html_to_text("<p>unclosed <b>bold <script>x</p></div><<>>text")
    assert "unclosed bold" in text and "x" not in text.split()


@pytest.fixture
def slow_headers() -> Iterator[str]:
    """A server that sends one header line every 0.2 s, for ever: each read
    succeeds well inside the read timeout."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not stop.wait(0.2):
                    conn.sendall(b"X-Wait: 1\r\n")
            except OSError:
                pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def test_trickled_headers_cannot_hold_a_fetch(slow_headers: str, tmp_path: Path) -> None:
    rt = ToolRuntime(workspace=tmp_path, web=WebConfig(timeout_s=1, allow_local_network=True))
    started = time.monotonic()
    result = fetch(rt, slow_headers + "/")
    assert time.monotonic() - started < 4
    assert result.status == "error" and result.rule == "timeout"


def test_iter_body_decodes_a_bomb_step_by_step(server: str) -> None:
    # Other callers of the web client (the script engine's http) read through
    # iter_body: no step of it is larger than the inflate step.
    from charter.runtime.tools.web import _client

    with (
        _client(WebConfig(allow_local_network=True), 5) as client,
        client.stream("GET", server + "/bomb") as resp,
    ):
        sizes = []
        for chunk in iter_body(resp):
            sizes.append(len(chunk))
            if sum(sizes) > 1_000_000:
                break
    assert sum(sizes) > 1_000_000 and max(sizes) <= 65_536


@pytest.mark.parametrize(
    "bad",
    [
        {"timeout_seconds": 1e9},
        {"timeout_seconds": "nan"},
        {"timeout_seconds": -1},
        {"max_chars": "lots"},
        {"max_chars": 0},
        {"timeout_seconds": [1]},
    ],
)
def test_web_extract_refuses_unbounded_arguments(
    server: str, tmp_path: Path, bad: dict[str, Any]
) -> None:
    rt = _rt(tmp_path, allow_local_network=True)
    result = fetch(rt, server + "/page", "web_extract", **bad)
    assert result.status == "error" and result.rule == "bad-arguments"
