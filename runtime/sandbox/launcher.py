"""Starting a command inside the sandbox a profile describes.

A :class:`Sandbox` is built once per profile and place (a stage of a run, a
``charter sandbox`` call); it knows what the host offers, has planned the
layout, and starts any number of commands with :meth:`Sandbox.popen`, which
returns an ordinary :class:`subprocess.Popen` (wrapped in :class:`Launched`
with what must be released afterwards). Starting is synchronous: ``popen``
returns once the command is executing inside the finished sandbox, or raises
:class:`SandboxError` naming the step that failed; a command never runs in a
half-built sandbox.

The cost of one start is two forks of the runtime, the namespaces, a dozen
mounts and a Landlock ruleset, a few milliseconds in all
(``bench/sandbox_cost.py``); there is no interpreter start.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from charter.runtime.errors import CharterError
from charter.runtime.plan import SandboxProfile
from charter.runtime.sandbox import kernel
from charter.runtime.sandbox.child import ChildPlan
from charter.runtime.sandbox.landlock import Ruleset
from charter.runtime.sandbox.layout import describe as describe_layout
from charter.runtime.sandbox.layout import plan_layout, runtime_paths
from charter.runtime.sandbox.spec import HostFacts, Layout, Place

__all__ = [
    "Launched",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "spawn_layout",
]

_SETUP_TIMEOUT_S = 15.0


class SandboxError(CharterError):
    """A command could not be started in its sandbox."""

    def __init__(self, stage: str, message: str, errno: int = 0) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message
        self.errno = errno


class _Retry(Exception):
    pass


class SandboxUnavailable(CharterError):
    """The profile cannot be met on this host; the message says what is missing."""


@dataclass
class Launched:
    """A started command and what to release once it has ended."""

    proc: subprocess.Popen[bytes]
    _release: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        while self._release:
            try:
                self._release.pop()()
            except Exception:  # noqa: BLE001 - releasing is best effort
                pass


def _read_status(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SandboxError("setup", "the sandbox took too long to start")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _parse_status(raw: bytes) -> SandboxError:
    stage, _, rest = raw.decode("utf-8", "replace").partition("\t")
    err, _, message = rest.partition("\t")
    return SandboxError(stage or "setup", message or "failed", int(err) if err.isdigit() else 0)


def _launch(
    plan: ChildPlan,
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: Any,
    stdout: Any,
    stderr: Any,
    want_listener: bool,
) -> tuple[subprocess.Popen[bytes], socket.socket | None]:
    status_r, status_w = os.pipe()
    carrier: tuple[socket.socket, socket.socket] | None = None
    if want_listener:
        carrier = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        plan.proxy_fd = carrier[1].fileno()
    plan.status_fd = status_w
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv was decided by the gates
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=plan.run_first,  # noqa: PLW1509 - see charter.runtime.sandbox.child
        )
    except BaseException:
        os.close(status_r)
        os.close(status_w)
        if carrier is not None:
            carrier[0].close()
            carrier[1].close()
        raise
    os.close(status_w)
    if carrier is not None:
        carrier[1].close()
    return proc, _await_setup(proc, status_r, carrier)


def _await_setup(
    proc: Any, status_r: int, carrier: tuple[socket.socket, socket.socket] | None
) -> socket.socket | None:
    """Wait for the child to report its sandbox built (both ways of starting
    one end here): raise what it reported, or the timeout, after killing it;
    else hand back the proxy listener it sent, if one was asked for. Closes
    the parent's ends of the status pipe and the carrier either way."""
    try:
        raw = _read_status(status_r, time.monotonic() + _SETUP_TIMEOUT_S)
        if raw:
            raise _parse_status(raw)
        return _receive_listener(carrier[0]) if carrier is not None else None
    except BaseException:
        _abandon(proc)
        raise
    finally:
        os.close(status_r)
        if carrier is not None:
            carrier[0].close()


def _stdio_fd(value: Any, index: int, opened: list[int]) -> tuple[int, int | None]:
    """(descriptor for the child, the parent's end of a new pipe or None)."""
    if value is None:
        return index, None
    if value == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        opened.append(fd)
        return fd, None
    if value == subprocess.PIPE:
        r, w = os.pipe()
        child, parent = (r, w) if index == 0 else (w, r)
        opened.append(child)
        return child, parent
    if isinstance(value, int):
        return value, None
    return value.fileno(), None


def _launch_helper(
    plan: ChildPlan,
    argv: Sequence[str],
    *,
    key: str,
    spaces: str | None,
    stdin: Any,
    stdout: Any,
    stderr: Any,
    want_listener: bool,
) -> tuple[Any, socket.socket | None]:
    """Start through the launch helper; see :mod:`charter.runtime.sandbox.zygote`."""
    from charter.runtime.sandbox.process import ContainedProcess
    from charter.runtime.sandbox.zygote import Zygote

    opened: list[int] = []
    parents: list[int | None] = []
    child_fds: list[int] = []
    status_r = -1
    carrier: tuple[socket.socket, socket.socket] | None = None
    try:
        for i, value in enumerate((stdin, stdout, stderr)):
            child, parent = _stdio_fd(value, i, opened)
            child_fds.append(child)
            parents.append(parent)
        status_r, status_w = os.pipe()
        opened.append(status_w)
        fds = [*child_fds, status_w]
        if want_listener:
            carrier = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            fds.append(carrier[1].fileno())
        pid = Zygote.shared().spawn(plan, fds, key, spaces)
    except BaseException:
        for fd in (*opened, *(p for p in parents if p is not None)):
            os.close(fd)
        if status_r >= 0:
            os.close(status_r)
        if carrier is not None:
            carrier[0].close()
            carrier[1].close()
        raise
    for fd in opened:
        os.close(fd)
    if carrier is not None:
        carrier[1].close()
    streams = [
        None if fd is None else os.fdopen(fd, "wb" if i == 0 else "rb")
        for i, fd in enumerate(parents)
    ]
    proc = ContainedProcess(argv, pid, stdin=streams[0], stdout=streams[1], stderr=streams[2])
    return proc, _await_setup(proc, status_r, carrier)


def _receive_listener(sock: socket.socket) -> socket.socket:
    sock.settimeout(_SETUP_TIMEOUT_S)
    _msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 1)
    if not fds:
        raise SandboxError("proxy-socket", "the sandbox sent no listening socket")
    return socket.socket(fileno=fds[0])


def _abandon(proc: Any) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def spawn_layout(layout: Layout, argv: Sequence[str]) -> int:
    """Run ``argv`` under ``layout`` with no input or output and return its
    exit code (the probe's way in); raises :class:`SandboxError`."""
    kernel.load()
    env = {"PATH": "/usr/bin:/bin"}
    plan = ChildPlan(
        layout=layout,
        argv=[os.fsencode(a) for a in argv],
        env=[f"{k}={v}".encode() for k, v in env.items()],
        path=[b"/usr/bin", b"/bin"],
        cwd=b"/",
        uid=os.getuid(),
        gid=os.getgid(),
        last_cap=kernel.cap_last_cap(),
        _libc=kernel._lib(),
    )
    proc, _ = _launch(
        plan,
        argv,
        cwd="/",
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        want_listener=False,
    )
    return proc.wait(timeout=_SETUP_TIMEOUT_S)


class Sandbox:
    """One resolved profile, planned for this host and place."""

    def __init__(
        self,
        profile: SandboxProfile,
        *,
        workspace: Path,
        private_dir: Path | None = None,
        env_home: Path | None = None,
        host: HostFacts | None = None,
        url_check: Callable[[str, int], tuple[bool, str]] | None = None,
        home: Path | None = None,
        launch: str | None = None,
        allow_local_network: bool = False,
        die_with_parent: bool = False,
    ) -> None:
        from charter.runtime.sandbox.probe import host_facts

        kernel.load()
        self.profile = profile
        self.host = host if host is not None else host_facts()
        self.workspace = workspace.resolve()
        self._own_private = private_dir is None
        if private_dir is None:
            private_dir = Path(tempfile.mkdtemp(prefix="charter-sandbox-"))
        self.private = private_dir
        for sub in ("tmp", "home"):
            (private_dir / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        empty = private_dir / "empty"
        if not empty.exists():
            empty.write_bytes(b"")
            empty.chmod(0o400)
        self._url_check = url_check
        self.allow_local_network = allow_local_network
        self.die_with_parent = die_with_parent
        self._lock = threading.Lock()
        self._host_proxy: Any = None
        proxy_port: int | None = None
        if profile.network == "proxy" and not self.host.namespaces and self.host.landlock_abi >= 4:
            # Without a network namespace the proxy listens on the host's
            # loopback, and Landlock lets TCP reach only its port.
            from charter.runtime.sandbox.proxy import ProxyServer

            self._host_proxy = ProxyServer.on_loopback(self._hosts_check())
            proxy_port = self._host_proxy.port
        self.place = Place(
            workspace=self.workspace,
            home=(home or Path.home()).resolve(),
            private=private_dir,
            env_home=env_home,
            runtime=runtime_paths(),
            proxy_port=proxy_port,
        )
        self.layout = plan_layout(profile, self.host, self.place)
        self._layouts: dict[Path | None, Layout] = {env_home: self.layout}
        self._ruleset_cache: dict[int, Ruleset] = {}
        self._keys: dict[int, str] = {}  # layouts (kept alive in _layouts) -> helper keys
        self._spaces: str | None = None
        self._space_proxy: Any = None
        from charter.runtime.sandbox.zygote import clone_supported

        # The launch helper, unless this machine's clone call is unknown or
        # the caller asked for the runtime to fork itself.
        wanted = launch or os.environ.get("CHARTER_SANDBOX_LAUNCH") or "helper"
        self.use_helper = clone_supported() and wanted != "fork"
        if self.use_helper and self.layout.namespaces:
            self._share_namespaces()
        self._last_cap = kernel.cap_last_cap()
        self._drop_caps = self.layout.namespaces != 0 or os.geteuid() == 0
        # The kernel exempts root from RLIMIT_NPROC, even in a user namespace.
        # A pid namespace with its own pid_max binds root too (Linux 6.14+);
        # elsewhere root needs a pids cgroup, whose migration costs tens of
        # milliseconds per command on cgroup v1, so it is the last resort.
        self._pids_root: Any = None
        self.process_limit = "rlimit"
        if profile.limits.processes is not None and self.in_force:
            if self.layout.pid_max is not None:
                self.process_limit = "pid-namespace"
            elif os.geteuid() == 0:
                from charter.runtime.sandbox.cgroup import find_pids_root

                self._pids_root = find_pids_root()
                self.process_limit = "cgroup" if self._pids_root is not None else "none"

    # -- what it is ---------------------------------------------------------------

    @property
    def in_force(self) -> bool:
        """Whether commands started here are contained at all."""
        return self.layout.mode != "none"

    @property
    def mode(self) -> str:
        """What contains the commands: the layout's mode (``namespace``,
        ``landlock`` or ``none``)."""
        return self.layout.mode

    @property
    def complete(self) -> bool:
        """Whether everything the profile asks for is in place (namespaces,
        Landlock, a fresh /proc)."""
        return (
            self.layout.mode == "namespace" and self.host.landlock_abi >= 1 and self.host.fresh_proc
        )

    def describe(self) -> str:
        text = describe_layout(self.layout)
        limit = self.profile.limits.processes
        if self.in_force and limit is not None:
            if self.process_limit == "pid-namespace":
                bound = max(limit, (self.layout.pid_max or 1) - 1)
                text += f"\n  contained: at most {bound} processes (the pid namespace's pid_max)"
            elif self.process_limit == "cgroup":
                text += f"\n  contained: at most {limit} processes (a pids cgroup)"
            elif self.process_limit == "none":
                text += (
                    "\n  NOT contained: the process limit: the runtime runs as root, which the "
                    "kernel exempts from RLIMIT_NPROC, and no pids cgroup is writable here"
                )
            else:
                text += f"\n  contained: at most {limit} processes (RLIMIT_NPROC)"
        return text

    def _share_namespaces(self) -> None:
        """One user and one network namespace for all of this sandbox's
        commands (made once by the launch helper): creating and tearing down
        a network namespace per command is most of what containment costs.
        The commands still get their own mount, pid, IPC and UTS namespaces.
        With the proxy, its listener lives in that network namespace for the
        sandbox's life. On any failure commands make their own, as before."""
        from charter.runtime.sandbox.proxy import ProxyServer
        from charter.runtime.sandbox.zygote import Zygote

        key = uuid.uuid4().hex
        carrier = socket.socketpair() if self.layout.proxy else None
        try:
            Zygote.shared().make_spaces(key, carrier[1].fileno() if carrier else None)
            if carrier is not None:
                self._space_proxy = ProxyServer(_receive_listener(carrier[0]), self._hosts_check())
            self._spaces = key
        except (OSError, EOFError, SandboxError):
            self._spaces = None
        finally:
            if carrier is not None:
                carrier[0].close()
                carrier[1].close()

    def close(self) -> None:
        if self._spaces is not None:
            from charter.runtime.sandbox.zygote import Zygote

            Zygote.shared().drop_spaces(self._spaces)
            self._spaces = None
        if self._space_proxy is not None:
            self._space_proxy.close()
            self._space_proxy = None
        if self._host_proxy is not None:
            self._host_proxy.close()
            self._host_proxy = None
        if self._own_private:
            shutil.rmtree(self.private, ignore_errors=True)

    # -- starting commands --------------------------------------------------------

    def _layout_for(self, env_home: Path | None) -> Layout:
        with self._lock:
            found = self._layouts.get(env_home)
            if found is None:
                place = Place(
                    workspace=self.place.workspace,
                    home=self.place.home,
                    private=self.place.private,
                    env_home=env_home,
                    runtime=self.place.runtime,
                    proxy_port=self.place.proxy_port,
                )
                found = plan_layout(self.profile, self.host, place)
                self._layouts[env_home] = found
            return found

    def _key(self, layout: Layout) -> str:
        with self._lock:
            key = self._keys.get(id(layout))
            if key is None:
                key = self._keys[id(layout)] = uuid.uuid4().hex
            return key

    def _ruleset(self, layout: Layout) -> Ruleset | None:
        if layout.ruleset is None:
            return None
        key = id(layout)
        with self._lock:
            rs = self._ruleset_cache.get(key)
            if rs is None:
                rs = Ruleset(layout.ruleset)
                self._ruleset_cache[key] = rs
            return rs

    def _hosts_check(self) -> Any:
        from charter.runtime.sandbox.proxy import host_checker

        return host_checker(
            self.profile.allow_hosts,
            self._url_check,
            allow_local_network=self.allow_local_network,
        )

    @property
    def private_tmp(self) -> Path:
        """The private temporary directory, on the host."""
        return self.private / "tmp"

    @property
    def inside_tmp(self) -> str:
        """The same directory as the command sees it."""
        return dict(self.layout.env).get("TMPDIR", str(self.private_tmp))

    def command_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment a command sees inside: ``env`` with the sandbox's
        temporary directory and, with the proxy, the proxy variables."""
        home = env.get("HOME")
        layout = self._layout_for(Path(home) if home else None)
        out = dict(env)
        out.update(dict(layout.env))
        return out

    def popen(
        self,
        argv: Sequence[str],
        *,
        cwd: str | Path,
        env: Mapping[str, str],
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        stderr: int | IO[Any] | None = subprocess.PIPE,
    ) -> Launched:
        """Start ``argv`` inside the sandbox (in a new session, like the
        runtime's uncontained commands) and return once it runs."""
        if not self.in_force:
            raise SandboxUnavailable("this sandbox contains nothing; refusing to start through it")
        if not argv:
            raise SandboxError("exec", "no command")
        home = env.get("HOME")
        layout = self._layout_for(Path(home) if home else None)
        full_env = dict(env)
        full_env.update(dict(layout.env))
        cwd_path = Path(cwd).resolve()
        path = full_env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        plan = ChildPlan(
            layout=layout,
            argv=[os.fsencode(a) for a in argv],
            env=[f"{k}={v}".encode("utf-8", "surrogateescape") for k, v in full_env.items()],
            path=[os.fsencode(p) for p in path.split(os.pathsep)],
            cwd=os.fsencode(str(cwd_path)),
            uid=os.getuid(),
            gid=os.getgid(),
            last_cap=self._last_cap if self._drop_caps else -1,
            ruleset=self._ruleset(layout),
            die_with_parent=self.die_with_parent,
            _libc=kernel._lib(),
        )
        if not self._drop_caps:
            plan.last_cap = -1
        cgroup: Any = None
        if self._pids_root is not None and self.profile.limits.processes is not None:
            from charter.runtime.sandbox.cgroup import PidsCgroup

            try:
                cgroup = PidsCgroup(self._pids_root, self.profile.limits.processes)
            except OSError as exc:
                raise SandboxError("cgroup", f"the pids cgroup could not be made: {exc}") from exc
            plan.cgroup_procs = cgroup.procs
        if not cwd_path.is_dir():
            raise SandboxError("cwd", f"{cwd_path} is not a directory")
        try:
            if self.use_helper:
                try:
                    proc, listener = _launch_helper(
                        plan,
                        argv,
                        key=self._key(layout),
                        spaces=self._spaces,
                        stdin=stdin,
                        stdout=stdout,
                        stderr=stderr,
                        want_listener=layout.proxy and self._spaces is None,
                    )
                except (OSError, EOFError) as exc:
                    # The helper could not be reached: fork the runtime instead.
                    self.use_helper = False
                    self._spaces = None
                    raise _Retry from exc
            else:
                proc, listener = _launch(
                    plan,
                    argv,
                    cwd=str(cwd_path),
                    env=full_env,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    want_listener=layout.proxy,
                )
        except _Retry:
            if cgroup is not None:
                cgroup.remove()
            return self.popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        launched = Launched(proc)
        if cgroup is not None:
            launched._release.append(cgroup.remove)
        if listener is not None:
            from charter.runtime.sandbox.proxy import ProxyServer

            server = ProxyServer(listener, self._hosts_check())
            launched._release.append(server.close)
        return launched
