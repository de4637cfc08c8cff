"""Local servers on 127.0.0.1 for the tests that talk HTTP, each on a port the kernel picks."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

__all__ = ["serving", "serving_asgi"]


@contextmanager
def serving(httpd: ThreadingHTTPServer) -> Iterator[None]:
    """Serve ``httpd`` from a daemon thread for the length of the block, then close it.
    Handler threads are daemons too, so a client that hangs up mid-reply (a timeout
    test) cannot keep the test process alive."""
    httpd.daemon_threads = True
    # A short poll so the shutdown at the end of each test takes milliseconds.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def serving_asgi(app: Any, **config: Any) -> Iterator[int]:
    """Serve the ASGI ``app`` with uvicorn for the length of the block; yields its port.
    ``config`` goes to ``uvicorn.Config`` (e.g. ``lifespan="on"``)."""
    import uvicorn  # callers importorskip it; the module imports without it

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start within 10 s"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(5)
