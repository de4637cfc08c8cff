"""The Linux system calls the sandbox is built from, through ctypes.

Python 3.11 has no ``os.unshare``, no mount and no Landlock, so this module
binds the few calls needed directly: ``unshare``, ``mount``,
``mount_setattr``, ``prctl``, ``capset`` and the three Landlock calls. Every
wrapper raises :class:`OSError` with the kernel's errno, never returns a
status to check.

The wrappers are called in a freshly forked child, before ``execve``, so
they allocate nothing on the way (the argument buffers are built by the
caller beforehand) and never take a lock another thread could have held
at ``fork`` time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = [
    "CLONE_NEWCGROUP",
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "CLONE_NEWUTS",
    "IS_LINUX",
    "MS_BIND",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_RDONLY",
    "MS_REC",
    "MS_REMOUNT",
    "cap_last_cap",
    "drop_capabilities",
    "landlock_abi",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "mount",
    "mount_setattr_readonly",
    "no_new_privs",
    "prctl",
    "set_parent_death_signal",
    "setns",
    "unshare",
]

IS_LINUX = sys.platform.startswith("linux")

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# securebits: root gets no capabilities on exec, and that cannot be undone.
SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_NO_SETUID_FIXUP = 1 << 2
SECBIT_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECBIT_KEEP_CAPS_LOCKED = 1 << 5
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7
SECUREBITS_SANDBOX = (
    SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED
)

# Landlock arrived after the architectures' syscall tables were unified, so
# its numbers are the same everywhere; mount_setattr likewise (442).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SYS_MOUNT_SETATTR = 442
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91, "riscv64": 91, "ppc64le": 184, "s390x": 185}

LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2

AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c") or None
        lib = ctypes.CDLL(name, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.unshare.argtypes = [ctypes.c_int]
        lib.setns.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.mount.argtypes = [
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_ulong,
            ctypes.c_void_p,
        ]
        # prctl is variadic, but the kernel reads all five arguments and some
        # options (no_new_privs) insist the unused ones are zero.
        lib.prctl.argtypes = [
            ctypes.c_int,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]
        _libc = lib
    return _libc


def load() -> None:
    """Bind libc now, in the parent: the forked child must not search for it."""
    if IS_LINUX:
        _lib()


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def unshare(flags: int) -> None:
    _check(_lib().unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_lib().setns(fd, nstype), "setns")


def mount(
    source: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    _check(
        _lib().mount(source, target, fstype, flags, data),
        f"mount {target.decode(errors='replace')}",
    )


def mount_setattr_readonly(target: bytes) -> bool:
    """Make the mount at ``target`` and every mount below it read-only
    (Linux 5.12+). False when the kernel lacks the call (the caller then
    remounts the top mount alone)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    lib = _lib()
    r = lib.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        ctypes.c_char_p(target),
        ctypes.c_uint(AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if r < 0:
        err = ctypes.get_errno()
        if err == 38:  # ENOSYS: an older kernel
            return False
        raise OSError(err, f"mount_setattr {target.decode(errors='replace')}: {os.strerror(err)}")
    return True


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0) -> int:
    return _check(_lib().prctl(option, arg2, arg3, arg4, 0), f"prctl({option})")


def no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_parent_death_signal(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def cap_last_cap() -> int:
    """The highest capability number this kernel knows (read in the parent)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 40


def drop_capabilities(last_cap: int) -> None:
    """Give up every capability for good: the bounding set is emptied (so
    no later exec can regain one), the ambient set cleared, securebits make
    uid 0 ordinary and are locked, and the current sets are emptied."""
    prctl(PR_SET_SECUREBITS, SECUREBITS_SANDBOX)
    for cap in range(last_cap + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    number = _SYS_CAPSET.get(os.uname().machine)
    if number is None:
        return  # unknown architecture: the empty bounding set still holds at exec
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(
        _lib().syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)), "capset"
    )


def landlock_abi() -> int:
    """The Landlock ABI version the running kernel offers; 0 without Landlock."""
    if not IS_LINUX:
        return 0
    r = _lib().syscall(
        ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET),
        ctypes.c_void_p(None),
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return int(r) if r > 0 else 0


def landlock_create_ruleset(attr: ctypes.Array[ctypes.c_char]) -> int:
    return _check(
        _lib().syscall(
            ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET),
            attr,
            ctypes.c_size_t(len(attr)),
            ctypes.c_uint32(0),
        ),
        "landlock_create_ruleset",
    )


def landlock_add_rule(ruleset: int, rule_type: int, attr: ctypes.Array[ctypes.c_char]) -> None:
    _check(
        _lib().syscall(
            ctypes.c_long(_SYS_LANDLOCK_ADD_RULE),
            ctypes.c_int(ruleset),
            ctypes.c_int(rule_type),
            attr,
            ctypes.c_uint32(0),
        ),
        "landlock_add_rule",
    )


def landlock_restrict_self(ruleset: int) -> None:
    _check(
        _lib().syscall(
            ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
        ),
        "landlock_restrict_self",
    )
