"""The code that runs in a new child process, between ``fork`` and ``execve``.

Two ways in, one way out:

* **From the launch helper** (:mod:`~charter.runtime.sandbox.zygote`, the
  usual way). The helper is a small single-threaded process; it creates the
  child with ``clone`` already inside the new user, mount, pid, network, IPC
  and UTS namespaces, and with ``CLONE_PARENT``, so the child is the
  runtime's own child (which waits for it like any subprocess) and pid 1 of
  its pid namespace: when it ends, the kernel ends every process left in
  that namespace. :meth:`ChildPlan.run_cloned` is its code.
* **From the runtime itself** (``subprocess.Popen`` with ``preexec_fn``,
  when no helper is available). :meth:`ChildPlan.run_first` enters the
  namespaces with ``unshare`` and forks again, because only a child of the
  process that entered a new pid namespace is pid 1 there; it stays behind as
  a relay that waits for that child and exits the same way.

Without namespaces (Landlock alone) there is no pid namespace to end the
command's descendants, so a relay always stays behind as their subreaper and
ends them when the command ends.

Either way :meth:`ChildPlan._contain_and_exec` builds the file-system view
(:mod:`~charter.runtime.sandbox.layout`), sets resource limits, gives up
every capability, applies the Landlock ruleset and executes the command. Any
failure is written to the status pipe as ``stage<TAB>errno<TAB>message`` and
the child exits: the command never runs half contained.

The code runs in a process forked from the runtime, so it calls only the
operating system (through :mod:`os`, :mod:`socket` and :mod:`charter.runtime.
sandbox.kernel`): it imports nothing, takes no lock and starts no thread. The
garbage collector is switched off first, so no finaliser of an inherited
object can close a descriptor number reused here.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import gc
import os
import resource
import select
import signal
import socket
import stat
import struct
from dataclasses import dataclass, field

from charter.runtime.sandbox import kernel
from charter.runtime.sandbox.landlock import Ruleset
from charter.runtime.sandbox.spec import PROXY_PORT, Layout, Mount

__all__ = ["EXIT_EXEC", "EXIT_SETUP", "ChildPlan", "make_shared_namespaces", "send_listener"]

EXIT_SETUP = 126  # the sandbox could not be built; the command did not run
EXIT_EXEC = 127  # the sandbox was built but the program could not be executed

_SIOCSIFFLAGS = 0x8914
_IFF_UP, _IFF_LOOPBACK, _IFF_RUNNING = 0x1, 0x8, 0x40
_PR_SET_CHILD_SUBREAPER = 36
_TMPFS = b"tmpfs"
_RO_FLAGS = kernel.MS_RDONLY | kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
_DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
)
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


class _Stop(Exception):
    def __init__(self, sig: int) -> None:
        super().__init__(sig)
        self.sig = sig


@dataclass
class ChildPlan:
    """One launch, fully prepared in the parent."""

    layout: Layout
    argv: list[bytes]
    env: list[bytes]  # b"NAME=value"
    path: list[bytes]  # the command's PATH, split, for finding argv[0]
    cwd: bytes
    uid: int
    gid: int
    last_cap: int  # -1: the process holds no capabilities to drop
    status_fd: int = -1  # write end of the status pipe
    proxy_fd: int = -1  # our end of the socketpair that carries the listener back
    ruleset: Ruleset | None = None
    cgroup_procs: bytes | None = None  # a pids cgroup's cgroup.procs, joined by the relay
    # Descriptors to become 0, 1 and 2 (the helper receives them over a socket).
    stdio: tuple[int, int, int] | None = None
    # The relay dies with the process that started it. Only safe when that
    # process forked from its main thread: the kernel sends the signal when
    # the forking *thread* ends (the MCP wrapper sets it; the runtime does not).
    die_with_parent: bool = False
    _libc: ctypes.CDLL | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, object]:
        # The libc handle does not pickle; the launch helper sets its own.
        state = dict(self.__dict__)
        state["_libc"] = None
        return state

    # -- from the launch helper ----------------------------------------------

    def run_cloned(self, *, joined: bool = False) -> None:
        """The child the helper cloned. With namespaces it is already inside
        them (and pid 1); ``joined``: its user and network namespaces are
        the sandbox's shared ones, set up once (ids mapped, loopback up).
        Without namespaces it becomes the relay. Never returns."""
        stage = "prepare"
        try:
            gc.disable()
            os.setsid()
            self._take_stdio()
            if not self.layout.namespaces:
                self.run_first(entered=True)
            _close_except({0, 1, 2, self.status_fd, self.proxy_fd} - {-1})
            # The helper's dispositions are the defaults already; only the mask.
            stage = "signals"
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            if self.cgroup_procs is not None:
                # Before the new view hides the host's cgroup file system;
                # "0" is the writer itself, whatever its pid namespace.
                stage = "cgroup"
                _join_cgroup(self.cgroup_procs, 0)
            if not joined:
                self._enter_namespaces(unshare=False)
        except BaseException as exc:  # noqa: BLE001 - reported through the pipe
            self._fail(stage if stage != "prepare" else "namespaces", exc, EXIT_SETUP)
        self._contain_and_exec()

    def _take_stdio(self) -> None:
        if self.stdio is None:
            return
        fds = list(self.stdio)
        # Move the received descriptors out of the way before dup2 onto 0-2,
        # so one of them cannot be overwritten before it is copied.
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds]
        for target, fd in enumerate(moved):
            os.dup2(fd, target)
        for fd in {*fds, *moved} - {0, 1, 2}:
            try:
                os.close(fd)
            except OSError:
                pass
        self.stdio = None

    def _enter_namespaces(self, *, unshare: bool) -> None:
        lay = self.layout
        stage = "unshare"
        try:
            if unshare:
                kernel.unshare(lay.namespaces)
            stage = "id-maps"
            _write_maps(self.uid, self.gid)
            if lay.namespaces & kernel.CLONE_NEWNET:
                stage = "loopback"
                _loopback_up()
            if lay.proxy:
                stage = "proxy-socket"
                self._send_listener()
            if self.proxy_fd >= 0:
                os.close(self.proxy_fd)
                self.proxy_fd = -1
        except BaseException as exc:  # noqa: BLE001 - reported through the pipe
            self._fail(stage, exc, EXIT_SETUP)

    # -- the relay (first child) ---------------------------------------------

    def run_first(self, *, entered: bool = False) -> None:
        """``preexec_fn`` (or the helper's child without namespaces): never
        returns; the process exits with the command."""
        stage = "prepare"
        try:
            gc.disable()
            keep = {0, 1, 2, self.status_fd}
            if self.proxy_fd >= 0:
                keep.add(self.proxy_fd)
            _close_except(keep)  # also Popen's error pipe: Popen returns now
            stage = "signals"
            _default_signals(self._libc)
            if self.die_with_parent:
                kernel.set_parent_death_signal(signal.SIGKILL)
            lay = self.layout
            if self.cgroup_procs is not None:
                stage = "cgroup"
                _join_cgroup(self.cgroup_procs, os.getpid())
            if lay.namespaces and not entered:
                self._enter_namespaces(unshare=True)
            else:
                stage = "subreaper"
                kernel.prctl(_PR_SET_CHILD_SUBREAPER, 1)
            if self.proxy_fd >= 0:
                os.close(self.proxy_fd)
                self.proxy_fd = -1
            stage = "fork"
            alive_r, alive_w = os.pipe()
            leader = os.fork()
            if leader == 0:
                self._run_leader(alive_r, alive_w)
            os.close(alive_r)
            os.close(self.status_fd)
            for fd in (0, 1, 2):
                os.close(fd)
        except BaseException as exc:  # noqa: BLE001 - reported through the pipe
            self._fail(stage, exc, EXIT_SETUP)
        self._relay(leader, alive_w)

    def _send_listener(self) -> None:
        send_listener(self.proxy_fd)

    def _relay(self, leader: int, alive_w: int) -> None:
        """Wait for the leader and exit as it did. A signal that would end
        the relay (the runtime stopping the command) ends the leader first,
        and with it every process of its pid namespace (or, without one,
        every descendant the relay collects as their subreaper)."""
        caught: int | None = None

        def stop(sig: int, _frame: object) -> None:
            raise _Stop(sig)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, stop)
        status = 0
        while True:
            try:
                _pid, status = os.waitpid(leader, 0)
                break
            except _Stop as s:
                caught = s.sig
                _kill(leader)
            except ChildProcessError:
                status = EXIT_SETUP << 8
                break
        if not self.layout.namespaces:
            _reap_descendants()
        os.close(alive_w)
        if caught is not None:
            _die_by(caught, self._libc)
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        _die_by(os.WTERMSIG(status), self._libc)

    # -- the leader (second child; pid 1 of the new pid namespace) -------------

    def _run_leader(self, alive_r: int, alive_w: int) -> None:
        try:
            os.close(alive_w)
            kernel.set_parent_death_signal(signal.SIGKILL)
            # The relay may have died before the line above: then stop here.
            ready, _, _ = select.select([alive_r], [], [], 0)
            if ready:
                os._exit(EXIT_SETUP)
            os.close(alive_r)
        except BaseException as exc:  # noqa: BLE001 - reported through the pipe
            self._fail("leader", exc, EXIT_SETUP)
        self._contain_and_exec()

    def _contain_and_exec(self) -> None:
        stage = "mounts"
        try:
            lay = self.layout
            if lay.namespaces:
                stage = "mounts"
                _build_view(lay.mounts)
                if lay.pid_max is not None:
                    _set_pid_max(lay.pid_max)
            stage = "cwd"
            os.chdir(self.cwd)
            stage = "limits"
            for res, value in lay.rlimits:
                resource.setrlimit(res, (value, value))
            stage = "privileges"
            if self.last_cap >= 0:
                kernel.drop_capabilities(self.last_cap)
            kernel.no_new_privs()
            if self.ruleset is not None:
                stage = "landlock"
                self.ruleset.apply()
            stage = "descriptors"
            _close_except({0, 1, 2, self.status_fd})
            flags = fcntl.fcntl(self.status_fd, fcntl.F_GETFD)
            fcntl.fcntl(self.status_fd, fcntl.F_SETFD, flags | fcntl.FD_CLOEXEC)
            stage = "exec"
            program = self._find(self.argv[0])
            os.execve(program, self.argv, _env_dict(self.env))
        except BaseException as exc:  # noqa: BLE001 - reported through the pipe
            self._fail(stage, exc, EXIT_EXEC if stage == "exec" else EXIT_SETUP)

    def _find(self, name: bytes) -> bytes:
        if b"/" in name:
            return name
        for d in self.path:
            candidate = os.path.join(d or b".", name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        raise FileNotFoundError(errno.ENOENT, f"{name.decode(errors='replace')}: not found")

    def _fail(self, stage: str, exc: BaseException, code: int) -> None:
        err = getattr(exc, "errno", None) or 0
        text = f"{stage}\t{err}\t{exc}".encode("utf-8", "replace")[:4000]
        try:
            os.write(self.status_fd, text)
        except OSError:
            pass
        os._exit(code)


# -- helpers (child side) ----------------------------------------------------------


def send_listener(carrier_fd: int) -> None:
    """Listen on the proxy's port in the current network namespace and hand
    the socket to whoever holds the other end of ``carrier_fd``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PROXY_PORT))
    listener.listen(64)
    carrier = socket.socket(fileno=carrier_fd)
    socket.send_fds(carrier, [b"L"], [listener.fileno()])
    carrier.detach()
    listener.close()


def make_shared_namespaces(uid: int, gid: int, carrier_fd: int) -> None:
    """In a fresh process: enter a new user and network namespace, map our
    ids, bring loopback up and (with ``carrier_fd``) hand back a proxy
    listener. The launch helper keeps both namespaces open afterwards."""
    kernel.unshare(kernel.CLONE_NEWUSER | kernel.CLONE_NEWNET)
    _write_maps(uid, gid)
    _loopback_up()
    if carrier_fd >= 0:
        send_listener(carrier_fd)


def _join_cgroup(procs: bytes, pid: int) -> None:
    fd = os.open(procs, os.O_WRONLY)
    try:
        os.write(fd, str(pid).encode())
    finally:
        os.close(fd)


def _close_except(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _default_signals(libc: ctypes.CDLL | None) -> None:
    mask: set[signal.Signals] = set()
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if libc is None:
        return
    for sig in range(1, signal.NSIG):
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        libc.signal(sig, ctypes.c_void_p(0))  # SIG_DFL, bypassing Python's handlers


def _write_maps(uid: int, gid: int) -> None:
    for name, text in (
        ("setgroups", b"deny"),
        ("uid_map", f"{uid} {uid} 1".encode()),
        ("gid_map", f"{gid} {gid} 1".encode()),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text)
        finally:
            os.close(fd)


def _loopback_up() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sh14x", b"lo", _IFF_UP | _IFF_LOOPBACK | _IFF_RUNNING)
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, ifr)
    finally:
        s.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap_descendants() -> None:
    """As subreaper, every orphan of the command is our child: end them all."""
    for _ in range(100_000):
        try:
            children = _children()
        except OSError:
            children = []
        for pid in children:
            _kill(pid)
        try:
            pid, _ = os.waitpid(-1, 0 if children else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0 and not children:
            return


def _children() -> list[int]:
    me = os.getpid()
    out: list[int] = []
    for tid in os.listdir(f"/proc/{me}/task"):
        with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
            out += [int(x) for x in f.read().split()]
    return out


def _die_by(sig: int, libc: ctypes.CDLL | None) -> None:
    if libc is not None:
        libc.signal(sig, ctypes.c_void_p(0))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.Signals(sig)})
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def _env_dict(env: list[bytes]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for item in env:
        k, _, v = item.partition(b"=")
        out[k] = v
    return out


def _exists(p: bytes) -> bool:
    try:
        os.lstat(p)
        return True
    except OSError:
        return False


def _readonly(target: bytes) -> None:
    if kernel.mount_setattr_readonly(target):
        return
    # Older kernels: remount the top mount alone, keeping the flags the
    # kernel locked on it (a user namespace may not clear them).
    flags = kernel.MS_BIND | kernel.MS_REMOUNT | kernel.MS_RDONLY
    f = os.statvfs(target).f_flag
    for st_flag, ms_flag in (
        (os.ST_NOSUID, kernel.MS_NOSUID),
        (os.ST_NODEV, kernel.MS_NODEV),
        (os.ST_NOEXEC, kernel.MS_NOEXEC),
        (os.ST_NOATIME, kernel.MS_NOATIME),
        (os.ST_NODIRATIME, kernel.MS_NODIRATIME),
        (os.ST_RELATIME, kernel.MS_RELATIME),
    ):
        if f & st_flag:
            flags |= ms_flag
    kernel.mount(None, target, None, flags, None)


def _make_target(target: bytes, directory: bool) -> None:
    if directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))


def _inside(path: bytes, roots: list[bytes]) -> bool:
    return any(path == r or path.startswith(r.rstrip(b"/") + b"/") for r in roots)


def _build_view(mounts: tuple[Mount, ...]) -> None:
    """Make the mounts, parents first (see layout). Every source is opened
    before anything is mounted, so a tree hidden early never hides what is
    bound back into it."""
    kernel.mount(None, b"/", None, kernel.MS_REC | kernel.MS_PRIVATE, None)
    sources: dict[str, int] = {}
    for m in mounts:
        if m.source is not None and m.source not in sources:
            try:
                sources[m.source] = os.open(m.source, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
    devices: dict[str, int] = {}
    for d in _DEVICES:
        try:
            devices[d] = os.open(f"/dev/{d}", os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
    created: list[bytes] = []
    for m in mounts:
        target = os.fsencode(m.target)
        if m.kind == "tmpfs":
            if not os.path.isdir(target):
                continue  # hidden by an earlier replacement already
            kernel.mount(
                _TMPFS, target, _TMPFS, kernel.MS_NOSUID | kernel.MS_NODEV, b"mode=0755,size=64m"
            )
            created.append(target)
        elif m.kind == "proc":
            _mount_proc()
        elif m.kind == "sys":
            # A fresh sysfs shows this network namespace's devices, not the host's.
            try:
                kernel.mount(b"sysfs", target, b"sysfs", _RO_FLAGS, None)
            except OSError:
                pass
        elif m.kind == "dev":
            _build_dev(devices)
            created.append(target)
        elif m.kind == "empty-file":
            fd = sources.get(m.source or "")
            if fd is None or not _exists(target) or os.path.isdir(target):
                continue
            kernel.mount(f"/proc/self/fd/{fd}".encode(), target, None, kernel.MS_BIND, None)
            _readonly(target)
        else:  # bind
            fd = sources.get(m.source or "")
            if fd is None:
                continue
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            if not _exists(target):
                if not (m.create and _inside(target, created)):
                    continue
                _make_target(target, is_dir)
            source = f"/proc/self/fd/{fd}".encode()
            kernel.mount(source, target, None, kernel.MS_BIND | kernel.MS_REC, None)
            if not m.writable:
                _readonly(target)
            if m.owned:
                created.append(target)
    for fd in (*sources.values(), *devices.values()):
        os.close(fd)


def _set_pid_max(value: int) -> None:
    # Per pid namespace since Linux 6.14; on older kernels this is the host's
    # setting and the write is refused, which the probe has already found.
    try:
        fd = os.open(b"/proc/sys/kernel/pid_max", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, str(value).encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _mount_proc() -> None:
    flags = kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
    try:
        kernel.mount(b"proc", b"/proc", b"proc", flags, None)
    except OSError:
        # The host masks parts of /proc (many containers): an empty /proc
        # is still better than one showing the runtime's processes.
        kernel.mount(_TMPFS, b"/proc", _TMPFS, flags, b"mode=0555,size=4k")


def _build_dev(devices: dict[str, int]) -> None:
    kernel.mount(_TMPFS, b"/dev", _TMPFS, kernel.MS_NOSUID, b"mode=0755,size=1m")
    for name, fd in devices.items():
        target = f"/dev/{name}".encode()
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o666))
        kernel.mount(f"/proc/self/fd/{fd}".encode(), target, None, kernel.MS_BIND, None)
    for name, to in _DEV_LINKS:
        os.symlink(to, f"/dev/{name}")
    os.mkdir(b"/dev/pts", 0o755)
    try:
        kernel.mount(
            b"devpts",
            b"/dev/pts",
            b"devpts",
            kernel.MS_NOSUID | kernel.MS_NOEXEC,
            b"newinstance,ptmxmode=0666,mode=0620",
        )
    except OSError:
        pass  # no terminals inside; commands run without one anyway
    os.mkdir(b"/dev/shm", 0o1777)
    kernel.mount(
        _TMPFS, b"/dev/shm", _TMPFS, kernel.MS_NOSUID | kernel.MS_NODEV, b"mode=1777,size=64m"
    )
