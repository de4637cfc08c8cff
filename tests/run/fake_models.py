"""Fake chat-completions endpoints for the run tests, each misbehaving one way.

A :class:`FakeModel` answers the requests it receives with the next entry of
its ``replies`` (the last one repeats): a status with a body, a body that is
not JSON, or ``HANG``, a request that is read and never answered. It listens
on 127.0.0.1, port 0, in a thread of the test process, so a ``charter run``
in a subprocess can be pointed at it too.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["HANG", "FakeModel", "Reply", "answer", "error", "fake_model"]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


HANG = Reply(status=0)  # read the request, then say nothing, ever


def answer(text: str) -> Reply:
    """A chat completion whose message is ``text`` and calls no tool."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    return Reply(200, json.dumps(body).encode())


def error(status: int, message: str, *headers: tuple[str, str]) -> Reply:
    return Reply(status, json.dumps({"error": {"message": message}}).encode(), tuple(headers))


@dataclass
class FakeModel:
    replies: Sequence[Reply]
    port: int = 0
    requests: int = 0
    _held: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _next(self) -> Reply:
        with self._lock:
            index = min(self.requests, len(self.replies) - 1)
            self.requests += 1
        return self.replies[index]

    def serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
            reply = self._next()
            if reply is HANG:
                with self._lock:
                    self._held.append(conn.dup())
                return
            lines = [
                f"HTTP/1.1 {reply.status} Fake",
                f"Content-Length: {len(reply.body)}",
                "Content-Type: application/json",
                "Connection: close",
            ]
            lines += [f"{k}: {v}" for k, v in reply.headers]
            conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + reply.body)

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, []
        for conn in held:
            conn.close()


@contextmanager
def fake_model(*replies: Reply) -> Iterator[FakeModel]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)  # so the accept loop sees stop
    model = FakeModel(list(replies), port=listener.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=model.serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        stop.set()
        listener.close()
        model.close()
