"""A chat-completions server on 127.0.0.1 that the OpenAI provider tests talk to.

Each test gives the server a ``reply`` function: it receives every request
(method, path, headers, parsed JSON body) and returns what to answer, so a test
can play a model that reads the conversation and calls tools, or an endpoint
that fails in a particular way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _support.servers import serving


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes or str
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunks: int = 1  # write the body in this many pieces ...
    chunk_delay_s: float = 0.0  # ... with this pause before each


ReplyFn = Callable[[Seen], Reply]


def completion(
    content: str | None = None,
    tool_calls: list[tuple[str, str, Any]] | None = None,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A chat-completion body. ``tool_calls`` holds ``(id, name, arguments)``;
    string arguments are sent verbatim, anything else JSON-encoded."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for call_id, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class FakeModelServer:
    port: int
    reply: ReplyFn = field(default=lambda seen: Reply(500, {"error": {"message": "no reply set"}}))
    seen: list[Seen] = field(default_factory=list)

    # Helpers for the tests (test modules cannot import this conftest).
    Reply = Reply
    completion = staticmethod(completion)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            server.seen.append(seen)
            reply = server.reply(seen)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if isinstance(reply.body, bytes):
                data = reply.body
            elif isinstance(reply.body, str):
                data = reply.body.encode()
            else:
                data = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                step = max(1, -(-len(data) // reply.chunks))
                for start in range(0, len(data), step):
                    if reply.chunk_delay_s:
                        time.sleep(reply.chunk_delay_s)
                    self.wfile.write(data[start : start + step])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = do_POST

    return Handler


def _serve() -> Iterator[FakeModelServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server = FakeModelServer(port=httpd.server_address[1])
    httpd.RequestHandlerClass = _handler(server)
    with serving(httpd):
        yield server


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    yield from _serve()


@pytest.fixture
def other_server() -> Iterator[FakeModelServer]:
    """A second origin (another port), e.g. a redirect target."""
    yield from _serve()
