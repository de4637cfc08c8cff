"""A contained command the launch helper started: the runtime's child all
the same (``CLONE_PARENT``), so it is waited for like a ``Popen``.

:class:`ContainedProcess` offers the part of :class:`subprocess.Popen` the
runtime uses (``pid``, ``returncode``, ``poll``, ``wait``, ``send_signal``
and the pipes), reaping with ``waitpid`` on the pid it was given.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO

__all__ = ["ContainedProcess"]


class ContainedProcess:
    def __init__(
        self,
        args: Sequence[str],
        pid: int,
        *,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
        stderr: IO[bytes] | None = None,
    ) -> None:
        self.args = list(args)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._lock = threading.Lock()

    def _status(self, status: int) -> int:
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        return os.WEXITSTATUS(status)

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -signal.SIGKILL if self.returncode is None else self.returncode
                return self.returncode
            if pid == self.pid:
                self.returncode = self._status(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            with self._lock:
                if self.returncode is None:
                    try:
                        _, status = os.waitpid(self.pid, 0)
                        self.returncode = self._status(status)
                    except ChildProcessError:
                        self.returncode = -signal.SIGKILL
            assert self.returncode is not None
            return self.returncode
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            code = self.poll()
            if code is not None:
                return code
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
        """Read both pipes to their end and wait (for tools and tests)."""
        out: list[bytes] = []
        err: list[bytes] = []

        def drain(stream: IO[bytes] | None, into: list[bytes]) -> None:
            if stream is not None:
                into.append(stream.read())
                stream.close()

        threads = [
            threading.Thread(target=drain, args=(self.stdout, out), daemon=True),
            threading.Thread(target=drain, args=(self.stderr, err), daemon=True),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout)
        self.wait(timeout)
        return b"".join(out), b"".join(err)
