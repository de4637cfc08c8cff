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
import gc
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
_CACHE = 64


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


def _clone(libc: Any, number: int, flags: int) -> int:
    return int(libc.syscall(ctypes.c_long(number), ctypes.c_ulong(flags), None, None, None, None))


def _make_namespaces(uid: int, gid: int, carrier_fd: int) -> tuple[int, int]:
    """A user and a network namespace that outlive the process that made
    them: a child enters them and sets them up, the helper opens them
    (``/proc/PID/ns/*``), then the child exits. Returns (user fd, net fd)."""
    from charter.runtime.sandbox.child import make_shared_namespaces

    ready_r, ready_w = os.pipe()
    gate_r, gate_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(gate_w)
        try:
            make_shared_namespaces(uid, gid, carrier_fd)
            os.write(ready_w, b"ok")
        except BaseException as exc:  # noqa: BLE001 - reported to the helper
            os.write(ready_w, f"{type(exc).__name__}: {exc}".encode()[:1000])
        os.close(ready_w)
        os.read(gate_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(gate_r)
    try:
        said = os.read(ready_r, 4096)
        if said != b"ok":
            raise OSError(0, said.decode("utf-8", "replace") or "the namespace child died")
        user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        return user, net
    finally:
        os.close(ready_r)
        os.close(gate_w)
        os.waitpid(pid, 0)


def _run_joined(
    libc: Any, number: int, plan: Any, spaces: tuple[int, int], sock: socket.socket
) -> tuple[int, int]:
    """Start ``plan`` in the sandbox's shared user and network namespaces:
    a short-lived intermediate (the runtime's child, like the command) joins
    them and clones the command into fresh mount, pid, IPC and UTS
    namespaces. Returns (command pid, intermediate pid, which the runtime
    reaps)."""
    r, w = os.pipe()
    mid = _clone(libc, number, _CLONE_PARENT | _SIGCHLD)
    if mid == 0:
        os.close(r)
        sock.close()
        try:
            kernel.setns(spaces[0], kernel.CLONE_NEWUSER)
            kernel.setns(spaces[1], kernel.CLONE_NEWNET)
            flags = (
                _CLONE_PARENT
                | _SIGCHLD
                | kernel.CLONE_NEWNS
                | kernel.CLONE_NEWPID
                | kernel.CLONE_NEWIPC
                | kernel.CLONE_NEWUTS
            )
            pid = _clone(libc, number, flags)
            if pid == 0:
                os.close(w)
                plan.run_cloned(joined=True)  # never returns
                os._exit(126)
            os.write(w, str(pid).encode() if pid > 0 else f"E{ctypes.get_errno()}".encode())
        except BaseException as exc:  # noqa: BLE001 - reported to the helper
            os.write(w, f"E0 {type(exc).__name__}: {exc}".encode()[:1000])
        os._exit(0)
    os.close(w)
    try:
        said = os.read(r, 1024).decode("utf-8", "replace")
    finally:
        os.close(r)
    if mid < 0:
        raise OSError(ctypes.get_errno(), "clone")
    if not said or said.startswith("E"):
        raise OSError(
            0, f"the sandbox's namespaces could not be joined ({said[1:] or 'no answer'})"
        )
    return int(said), mid


def main() -> None:
    """The helper's loop: one request, one answer."""
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
    # Layouts and rulesets already sent, by key: each command then carries
    # only what is its own (argv, environment, directory).
    cache: dict[str, tuple[Any, Any]] = {}
    spaces: dict[str, tuple[int, int]] = {}  # a sandbox's shared user and net namespaces
    while True:
        try:
            request, fds = _recv(sock)
        except (EOFError, ConnectionError, OSError):
            os._exit(0)
        answer: tuple[Any, ...]
        try:
            kind = request[0]
            if kind == "spaces":
                _, key, uid, gid = request
                spaces[key] = _make_namespaces(uid, gid, fds[0] if fds else -1)
                answer = ("ok",)
            elif kind == "drop":
                for fd in spaces.pop(request[1], ()):
                    os.close(fd)
                answer = ("ok",)
            else:
                _, key, plan, space_key = request
                if plan.layout is None:
                    plan.layout, plan.ruleset = cache[key]
                else:
                    if len(cache) >= _CACHE:
                        cache.pop(next(iter(cache)))
                    cache[key] = (plan.layout, plan.ruleset)
                plan.status_fd, plan.proxy_fd = fds[3], fds[4] if len(fds) > 4 else -1
                plan.stdio = (fds[0], fds[1], fds[2])
                plan._libc = libc
                if space_key is not None:
                    pid, mid = _run_joined(libc, number, plan, spaces[space_key], sock)
                    answer = ("ok", pid, mid)
                else:
                    pid = _clone(libc, number, _CLONE_PARENT | _SIGCHLD | plan.layout.namespaces)
                    if pid == 0:
                        sock.close()
                        plan.run_cloned()  # never returns
                        os._exit(126)
                    if pid < 0:
                        err = ctypes.get_errno()
                        answer = ("error", f"clone: {os.strerror(err)}", err)
                    else:
                        answer = ("ok", pid, 0)
        except BaseException as exc:  # noqa: BLE001 - answered, the helper goes on
            answer = ("error", f"{type(exc).__name__}: {exc}", getattr(exc, "errno", 0) or 0)
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
        self._known: list[str] = []  # layout keys the helper holds, oldest first

    @classmethod
    def shared(cls) -> Zygote:
        with cls._instance_lock:
            z = cls._instance
            if z is None or z.proc.poll() is not None:
                z = cls._instance = cls()
            return z

    def _ask(self, request: tuple[Any, ...], fds: list[int]) -> tuple[Any, ...]:
        _send(self.sock, request, fds)
        answer, _ = _recv(self.sock)
        if answer[0] != "ok":
            raise OSError(answer[2] if len(answer) > 2 else 0, answer[1])
        return tuple(answer)

    def spawn(self, plan: Any, fds: list[int], key: str, spaces: str | None = None) -> int:
        """Have the helper start ``plan``; returns the child's pid. ``key``
        names the plan's layout, sent only the first time; ``spaces`` the
        sandbox's shared namespaces (see :meth:`make_spaces`), if any.
        Raises OSError when the helper is gone or refused."""
        import copy

        with self.lock:
            if key in self._known:
                plan = copy.copy(plan)
                plan.layout = plan.ruleset = None
            else:
                self._known.append(key)
                if len(self._known) > _CACHE:
                    self._known.pop(0)
            answer = self._ask(("run", key, plan, spaces), fds)
        pid, mid = int(answer[1]), int(answer[2])
        if mid:
            os.waitpid(mid, 0)  # the intermediate, our child too; it has exited
        return pid

    def make_spaces(self, key: str, carrier_fd: int | None) -> None:
        """A user and a network namespace (loopback up) kept by the helper
        for one sandbox, so its commands do not each create and destroy
        them; with ``carrier_fd`` the proxy's listener comes back on it."""
        with self.lock:
            self._ask(
                ("spaces", key, os.getuid(), os.getgid()),
                [carrier_fd] if carrier_fd is not None else [],
            )

    def drop_spaces(self, key: str) -> None:
        with self.lock:
            try:
                self._ask(("drop", key), [])
            except (OSError, EOFError):
                pass

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
