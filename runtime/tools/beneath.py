"""Open exactly the path confinement checked, never a path swapped in since.

The file tools run in Charter's own, unsandboxed process, while commands the
agent started earlier (a background task, say) keep running in the sandbox
and can rename and symlink inside the workspace at any moment. Confinement
(:func:`charter.runtime.policy.workspace.confine`) decides on a *resolved* path, the
real path with every symlink already followed. Re-walking that path by name
later would follow whatever a racing process put there: a directory swapped
for a symlink to an outside folder turns a checked read into an outside read.

So every component is opened relative to a descriptor of the one before, and
**no symlink is followed at all**: the checked path is a real path, so any
symlink met on the way is new since the check, and the call fails with
:class:`PathChanged` instead of going where the link points.

- Where the kernel has ``openat2(2)`` (Linux 5.6+), one call opens the whole
  path with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``
  relative to a descriptor of the anchor (the workspace root, or ``/`` for
  a path outside it that a person approved).
- Elsewhere, the same guarantee comes from a walk: each directory is opened
  with ``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's descriptor.

Beneath the workspace, **no mount point is crossed** either
(``RESOLVE_NO_XDEV``; in the walk, each descriptor's mount is compared with
the anchor's). A bind mount of an outside folder (or of one outside file)
placed inside the workspace is as much a way out as a symlink, and nothing
in a path's text or real path shows it: ``realpath`` goes straight through a
mount. A person-approved path outside the workspace is anchored at ``/`` and
may cross mounts (``/home``, ``/tmp`` are often mounts of their own).

Running the file tools inside the stage's sandbox instead was rejected: a
read or write would then cost a sandbox start (milliseconds) instead of a few
system calls, and a person-approved path outside the workspace would need a
sandbox profile of its own. Descriptor-relative opening gives the property by
construction at no cost.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from charter.runtime.errors import CharterError
from charter.runtime.policy.workspace import mount_id

__all__ = [
    "NotRegularFile",
    "PathChanged",
    "Opener",
    "open_child",
    "opener_for",
    "same_mount",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

# <linux/openat2.h>
_RESOLVE_NO_XDEV = 0x01
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}


class PathChanged(CharterError):
    """A component of a checked path is no longer what confinement saw."""


class NotRegularFile(CharterError, OSError):
    """The path names a FIFO, a device, a socket: nothing a file tool reads."""


def _require_regular(info: os.stat_result, parts: tuple[str, ...]) -> None:
    where = "/".join(parts)
    if stat.S_ISLNK(info.st_mode):
        # O_PATH | O_NOFOLLOW opens a symlink itself (the walk's last step)
        raise _changed(where)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", where)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", where)


def _same_file(fd: int, seen: os.stat_result, parts: tuple[str, ...]) -> int:
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _changed("/".join(parts))
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return fd


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_Openat2 = Callable[[int, bytes, _OpenHow], int]


def _load_openat2() -> _Openat2 | None:
    number = _SYS_OPENAT2.get(os.uname().machine)
    if number is None or not hasattr(os, "O_PATH"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.POINTER(_OpenHow),
        ctypes.c_size_t,
    ]
    # Probe once: ENOSYS (old kernel) or EPERM (a seccomp filter) means the
    # walk is used instead. Opening "." beneath "/" must succeed otherwise.
    how = _OpenHow(os.O_PATH | _CLOEXEC, 0, _RESOLVE_BENEATH)
    root = os.open("/", os.O_PATH | _CLOEXEC)
    try:
        fd = syscall(number, root, b".", ctypes.byref(how), ctypes.sizeof(how))
    finally:
        os.close(root)
    if fd < 0:
        return None
    os.close(fd)

    def call(dirfd: int, path: bytes, how: _OpenHow) -> int:
        return int(syscall(number, dirfd, path, ctypes.byref(how), ctypes.sizeof(how)))

    return call


# None: not probed yet; False: unavailable (tests set it to force the walk).
_OPENAT2: _Openat2 | bool | None = None


def _openat2() -> _Openat2 | None:
    global _OPENAT2
    if _OPENAT2 is None:
        _OPENAT2 = _load_openat2() or False
    return _OPENAT2 if callable(_OPENAT2) else None


def _parts(rel: PurePosixPath) -> tuple[str, ...]:
    parts = rel.parts
    for part in parts:
        # A resolved path has none of these; one here is a caller's bug, and
        # never a reason to walk upwards.
        if part in ("", ".", "..") or "/" in part:
            raise PathChanged(f"{rel}: not a resolved path")
    return parts


def _changed(where: str, exc: OSError | None = None) -> PathChanged:
    detail = f" ({exc.strerror})" if exc is not None and exc.strerror else ""
    return PathChanged(
        f"{where} changed while the tool was using it (a symbolic link, a mount point or a "
        f"different kind of file is there now){detail}; nothing outside the checked path "
        "was touched"
    )


def _mounted(where: str) -> PathChanged:
    return PathChanged(
        f"{where} is on another mount than the workspace (a bind or file-system mount "
        "inside it); the file tools do not cross mount points, nothing was touched"
    )


def same_mount(fd: int, ref: int) -> bool:
    """Whether ``fd`` lies on the same mount as the directory ``ref``.

    The mount ids decide where ``/proc`` can tell them (a bind mount of a
    folder from the same file system has the same device number); without
    them a directory on another device is taken as a mount. The device is
    compared for directories only: overlayfs may report a regular file's
    lower-layer device."""
    mine, theirs = mount_id(fd=fd), mount_id(fd=ref)
    if mine is not None and theirs is not None:
        return mine == theirs
    info = os.fstat(fd)
    return not stat.S_ISDIR(info.st_mode) or info.st_dev == os.fstat(ref).st_dev


def _openat2_beneath(
    call: _Openat2, dirfd: int, path: bytes, flags: int, mode: int, *, xdev: bool
) -> int:
    """``openat2`` of ``path`` beneath ``dirfd``: no symlink, no magic link,
    no ``..`` above it and (``xdev``) no mount point crossed."""
    resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
    how = _OpenHow(flags | _CLOEXEC, mode, resolve | (_RESOLVE_NO_XDEV if xdev else 0))
    where = os.fsdecode(path)
    while True:
        fd = call(dirfd, path, how)
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err == errno.EINTR or err == errno.EAGAIN:
            continue
        if err in (errno.ELOOP, errno.EXDEV):
            raise _changed(where, OSError(err, os.strerror(err)))
        # OSError(errno, ...) builds the matching subclass
        # (FileNotFoundError, NotADirectoryError...), as os.open would.
        raise OSError(err, os.strerror(err), where)


def open_child(dir_fd: int, name: str, flags: int, *, ref: int) -> int:
    """Open the entry ``name`` of the directory ``dir_fd`` (a walk's own
    descriptor) with ``flags``: never through a symlink, never blocking on a
    FIFO, never onto another mount than the directory ``ref``'s (a file or
    folder bind-mounted over an entry). Raises :class:`PathChanged` for a
    symlink or a mount, ``OSError`` otherwise."""
    if "/" in name or name in ("", ".", ".."):
        raise PathChanged(f"{name!r}: not a directory entry")
    flags |= _NOFOLLOW | _NONBLOCK | _CLOEXEC
    call = _openat2()
    if call is not None:
        fd = _openat2_beneath(call, dir_fd, os.fsencode(name), flags, 0, xdev=True)
    else:
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _changed(name, exc) from None
            raise
        if not same_mount(fd, ref):
            os.close(fd)
            raise _mounted(name)
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return fd


class Opener:
    """Descriptor-relative file operations under one anchor directory.

    Every method takes a path *relative to the anchor* (the anchor itself is
    ``PurePosixPath()``). Raises :class:`PathChanged` when a component turned
    into a symlink or a non-directory, and ``OSError`` for ordinary failures
    (``FileNotFoundError``, ``IsADirectoryError``...).
    """

    def __init__(
        self, anchor: Path, *, use_openat2: bool | None = None, cross_mounts: bool = False
    ) -> None:
        self.anchor = anchor
        self.cross_mounts = cross_mounts
        self._openat2 = _openat2() if use_openat2 in (None, True) else None
        if use_openat2 and self._openat2 is None:
            raise OSError(errno.ENOSYS, "openat2 is not available on this kernel")

    # -- directories ------------------------------------------------------

    @contextlib.contextmanager
    def directory(self, rel: PurePosixPath, *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory ``rel`` (made, with its missing
        parents, when ``create``), closed on exit."""
        fd = self._open_dir(_parts(rel), create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    def _open_dir(self, parts: tuple[str, ...], *, create: bool) -> int:
        anchor = os.open(self.anchor, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        if not parts:
            return anchor
        if self._openat2 is not None and not create:
            try:
                return self._resolve(anchor, parts, os.O_RDONLY | _DIRECTORY)
            finally:
                os.close(anchor)
        fd = os.dup(anchor)
        try:
            for i, part in enumerate(parts):
                nxt = self._step(fd, part, create=create, where=parts[: i + 1])
                os.close(fd)
                fd = nxt
                if self._openat2 is None:
                    self._check_mount(fd, anchor, parts[: i + 1])
            return fd
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.close(anchor)

    def _check_mount(self, fd: int, anchor: int, where: tuple[str, ...]) -> None:
        if not self.cross_mounts and not same_mount(fd, anchor):
            raise _mounted("/".join(where))

    def _step(self, fd: int, part: str, *, create: bool, where: tuple[str, ...]) -> int:
        try:
            return self._open_child_dir(fd, part, where)
        except FileNotFoundError:
            if not create:
                raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o777, dir_fd=fd)
        return self._open_child_dir(fd, part, where)

    def _open_child_dir(self, fd: int, part: str, where: tuple[str, ...]) -> int:
        if self._openat2 is not None:
            # One component by openat2: the kernel refuses the symlink and
            # the mount crossing, with no /proc look-up per step.
            flags = os.O_RDONLY | _DIRECTORY
            try:
                return _openat2_beneath(
                    self._openat2, fd, os.fsencode(part), flags, 0, xdev=not self.cross_mounts
                )
            except PathChanged:
                raise _changed("/".join(where)) from None
        try:
            return os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            # O_DIRECTORY | O_NOFOLLOW refuses a symlink with ENOTDIR, like a
            # file: tell them apart so a swap is reported as one.
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise _changed("/".join(where), exc) from None
            raise

    def _resolve(self, anchor: int, parts: tuple[str, ...], flags: int, mode: int = 0) -> int:
        call = self._openat2
        assert call is not None
        path = os.fsencode("/".join(parts))
        return _openat2_beneath(call, anchor, path, flags, mode, xdev=not self.cross_mounts)

    # -- files ------------------------------------------------------------

    def open_file(self, rel: PurePosixPath, flags: int, mode: int = 0o666) -> int:
        """Open the file ``rel`` with ``flags`` (never following a symlink,
        never blocking on a FIFO). Raises ``IsADirectoryError`` for a
        directory and :class:`PathChanged` for a symlink anywhere on the way."""
        parts = _parts(rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(self.anchor))
        fd = self._open_raw(parts, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
        # O_NONBLOCK kept a FIFO from hanging the open; regular files ignore
        # it, and reads below want ordinary blocking semantics anyway.
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd

    def open_regular(self, rel: PurePosixPath) -> int:
        """Open the regular file ``rel`` for reading. Its kind is decided on a
        path-only descriptor (``O_PATH``) first, so a device node, FIFO or
        socket is never opened for reading at all (opening a device can act:
        a tape rewinds, a watchdog arms, a terminal becomes the controlling
        one); the file is then reopened through that very descriptor.
        Raises ``IsADirectoryError``, :class:`NotRegularFile` or
        :class:`PathChanged`."""
        parts = _parts(rel)
        o_path = getattr(os, "O_PATH", 0)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(self.anchor))
        if not o_path:
            return self._checked_read(parts, None)
        pfd = self._open_raw(parts, o_path | _NOFOLLOW | _CLOEXEC, 0)
        try:
            info = os.fstat(pfd)
            _require_regular(info, parts)
            try:
                fd = os.open(f"/proc/self/fd/{pfd}", os.O_RDONLY | _NONBLOCK | _CLOEXEC)
            except FileNotFoundError:
                # no /proc: open by name again; the identity check below
                # catches a file swapped in between
                return self._checked_read(parts, info)
        finally:
            os.close(pfd)
        return _same_file(fd, info, parts)

    def _checked_read(self, parts: tuple[str, ...], seen: os.stat_result | None) -> int:
        fd = self._open_raw(parts, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0)
        info = os.fstat(fd)
        try:
            _require_regular(info, parts)
        except BaseException:
            os.close(fd)
            raise
        return _same_file(fd, seen or info, parts)

    def _open_raw(self, parts: tuple[str, ...], flags: int, mode: int) -> int:
        if self._openat2 is not None:
            anchor = os.open(self.anchor, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
            try:
                # openat2 refuses a mode without O_CREAT (EINVAL).
                return self._resolve(anchor, parts, flags, mode if flags & os.O_CREAT else 0)
            finally:
                os.close(anchor)
        with self.directory(PurePosixPath(*parts[:-1])) as parent:
            try:
                fd = os.open(parts[-1], flags, mode, dir_fd=parent)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _changed("/".join(parts), exc) from None
                raise
            if not self.cross_mounts and not same_mount(fd, parent):
                # the parent is on the anchor's mount (checked on the way)
                os.close(fd)
                raise _mounted("/".join(parts))
            return fd

    def lstat(self, rel: PurePosixPath) -> os.stat_result:
        parts = _parts(rel)
        if not parts:
            return os.stat(self.anchor)
        with self.directory(PurePosixPath(*parts[:-1])) as parent:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)

    def replace(
        self,
        rel: PurePosixPath,
        data: bytes,
        *,
        create_parents: bool,
        expect: tuple[int, int] | None = None,
    ) -> bool:
        """Write ``data`` to ``rel`` through a temporary file in the same
        directory and an atomic rename, both relative to one descriptor of
        that directory. Returns whether the file existed before.

        A new file is created with mode 0600 (as ``tempfile`` would); an
        existing one keeps its owner (where this process may set it) and its
        permission bits, but never its set-user-ID or set-group-ID bit (new
        content under a kept setuid bit is how a write becomes a privilege).
        A file without any write permission is refused with
        ``PermissionError``: the rename needs only the folder's permission,
        and would otherwise overwrite a file its owner made read-only.
        ``expect`` (device, inode) is the file an edit read: when another
        file has taken its name since, nothing is written. The data is
        flushed to disk before the rename, so a crash leaves the old file
        or the new one, never an empty one."""
        parts = _parts(rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(self.anchor))
        name = parts[-1]
        where = "/".join(parts)
        with self.directory(PurePosixPath(*parts[:-1]), create=create_parents) as parent:
            mode: int | None = None
            info: os.stat_result | None = None
            try:
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if expect is not None:
                    raise _changed(where) from None
            else:
                if stat.S_ISLNK(info.st_mode):
                    raise _changed(where)
                if not stat.S_ISREG(info.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "not a regular file", name)
                if expect is not None and (info.st_dev, info.st_ino) != expect:
                    raise _changed(where)
                self._check_writable(parent, name, info)
                mode = stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
            tmp, fd = self._temp(parent, name)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    if info is not None:
                        # Keep the owner (Charter running as root would
                        # otherwise hand a user's file to root); only root
                        # may, and anyone else keeps the file as their own.
                        with contextlib.suppress(PermissionError):
                            os.fchown(f.fileno(), info.st_uid, info.st_gid)
                    if mode is not None:
                        os.fchmod(f.fileno(), mode)
                    f.flush()
                    os.fsync(f.fileno())
                os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=parent)
                raise
            return mode is not None

    @staticmethod
    def _check_writable(parent: int, name: str, info: os.stat_result) -> None:
        # os.access answers for this process's user; root passes it for any
        # file, so a file with no write bit at all is refused for root too.
        writable = os.access(name, os.W_OK, dir_fd=parent, follow_symlinks=False)
        if not writable or not stat.S_IMODE(info.st_mode) & 0o222:
            raise PermissionError(errno.EACCES, "the file is read-only", name)

    @staticmethod
    def _temp(parent: int, name: str) -> tuple[str, int]:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        for _ in range(100):
            # Cut by bytes, not characters: a name of 80 three-byte
            # characters is a valid name whose 200-character prefix is not.
            tmp = f".{os.fsdecode(os.fsencode(name)[:200])}.{secrets.token_hex(6)}.tmp"
            try:
                return tmp, os.open(tmp, flags, 0o600, dir_fd=parent)
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "could not create a temporary file", name)


def opener_for(workspace: str | Path, resolved: Path) -> tuple[Opener, PurePosixPath]:
    """The opener and relative path for a path confinement resolved: anchored
    at the workspace's real path when ``resolved`` lies under it, else at
    ``/`` (an outside path a person approved)."""
    root = Path(os.path.realpath(workspace))
    try:
        return Opener(root), PurePosixPath(resolved.relative_to(root).as_posix())
    except ValueError:
        return Opener(Path("/"), cross_mounts=True), PurePosixPath(resolved.as_posix().lstrip("/"))
