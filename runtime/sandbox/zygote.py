"""The launch helper: a small process that starts every contained command.

Forking the runtime itself to start a command costs milliseconds that grow
with its memory (page tables, copy-on-write faults as the child's Python
touches objects) and is only safe because the child immediately does nothing
but system calls. The helper is started once per runtime process: a fresh,
single-threaded interpreter holding only this package. For each command the
runtime sends it the prepared :class:`~charter.runtime.sandbox.child.ChildPlan`
and the command's standard descriptors over a UNIX socket; the helper
``clone``\\ s the child straight into its new namespaces with ``CLONE_PARENT``,
so the child is the *runtime's* child (it waits for it, signals its group
and reads its exit status as for any subprocess), and answers with its pid.

The helper exits when the runtime closes its end of the socket (or dies).
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

from charter.runtime.sandbox import kernel

__all__ = ["Zygote", "clone_supported", "main"]

_CLONE_PARENT = 0x00008000
_SIGCHLD = 17
# The clone system call's number; its first two arguments (flags, stack) are
# the same on every architecture listed, and the rest are passed as zero.
_SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120, "s390x": 120}
_MAX_MESSAGE = 1 << 20


def clone_supported() -> bool:
    return kernel.IS_LINUX and os.uname().machine in _SYS_CLONE and os.uname().machine != "s390x"


def _send(sock: socket.socket, obj: Any, fds: list[int] = ()) -> None:  # type: ignore[assignment]
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > _MAX_MESSAGE:
        raise ValueError("launch request too large")
    socket.send_fds(sock, [data], list(fds)) if fds else sock.sendall(data)


def _recv(sock: socket.socket) -> tuple[Any, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, 8)
    if not data:
        raise EOFError
    return pickle.loads(data), list(fds)  # noqa: S301 - our own process, our own socket


# -- the helper process ------------------------------------------------------------------


def main() -> None:
    """The helper's loop: one request, one clone, one answer."""
    import gc

    gc.disable()  # nothing here lives long; a collection in a clone is wasted work
    sock = socket.socket(fileno=int(sys.argv[1]))
    for sig in range(1, signal.NSIG):
        if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    kernel.load()
    libc = kernel._lib()
    number = _SYS_CLONE[os.uname().machine]
    while True:
        try:
            plan, fds = _recv(sock)
        except (EOFError, ConnectionError, OSError):
            os._exit(0)
        try:
            plan.status_fd, plan.proxy_fd = fds[3], fds[4] if len(fds) > 4 else -1
            plan.stdio = (fds[0], fds[1], fds[2])
            plan._libc = libc
            flags = _CLONE_PARENT | _SIGCHLD | plan.layout.namespaces
            pid = libc.syscall(
                ctypes.c_long(number), ctypes.c_ulong(flags), None, None, None, None
            )
            if pid == 0:
                sock.close()
                plan.run_cloned()  # never returns
                os._exit(126)
            if pid < 0:
                err = ctypes.get_errno()
                answer: tuple[str, Any] = ("error", f"clone: {os.strerror(err)}", err)
            else:
                answer = ("ok", pid)
        except BaseException as exc:  # noqa: BLE001 - answered, the helper goes on
            answer = ("error", f"{type(exc).__name__}: {exc}", 0)
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            _send(sock, answer)
        except OSError:
            os._exit(0)


# -- the runtime's side ------------------------------------------------------------------


class Zygote:
    """The runtime's connection to its helper; started on first use."""

    _instance: Zygote | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        boot = (
            "import sys, json; sys.path[:] = json.loads(sys.argv[2]); "
            "from charter.runtime.sandbox.zygote import main; main()"
        )
        paths = [p for p in sys.path if p]
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-I", "-c", boot, str(theirs.fileno()), json.dumps(paths)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd="/",
            )
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    @classmethod
    def shared(cls) -> Zygote:
        with cls._instance_lock:
            z = cls._instance
            if z is None or z.proc.poll() is not None:
                z = cls._instance = cls()
            return z

    def spawn(self, plan: Any, fds: list[int]) -> int:
        """Have the helper start ``plan``; returns the child's pid. Raises
        OSError when the helper is gone or refused."""
        with self.lock:
            _send(self.sock, plan, fds)
            answer, _ = _recv(self.sock)
        if answer[0] != "ok":
            raise OSError(answer[2] if len(answer) > 2 else 0, answer[1])
        return int(answer[1])

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()


if __name__ == "__main__":  # pragma: no cover - started through Zygote
    main()
