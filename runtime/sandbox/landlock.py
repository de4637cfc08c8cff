"""Landlock: which access rights the running kernel knows, and a ruleset.

Landlock is an allow-list. A ruleset *handles* a set of access rights; each
rule then grants some of them beneath one directory (or on one file, or on
one TCP port), and everything handled but not granted is refused to the
process that applies the ruleset and to everything it later runs.

Each ABI version adds rights. A ruleset may only name rights the running
kernel knows, so :func:`rights_for` keeps the ones this kernel has and
reports the ones it dropped; the launcher says so to the user.

=====  =====  ===========================================================
ABI    Linux  adds
=====  =====  ===========================================================
1      5.13   file-system rights (execute, read, write, remove, make ...)
2      5.19   ``refer``: linking or renaming across directories
3      6.2    ``truncate``
4      6.7    TCP ``bind`` and ``connect`` by port
5      6.10   ``ioctl_dev``: ioctl on device files
6      6.12   scopes: abstract UNIX sockets and signals outside the domain
=====  =====  ===========================================================
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from charter.runtime.sandbox import kernel

__all__ = [
    "FS_READ",
    "FS_WRITE",
    "Ruleset",
    "RulesetPlan",
    "fs_rights",
    "rights_for",
]

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FS_READ = EXECUTE | READ_FILE | READ_DIR
FS_WRITE = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
    | REFER
    | TRUNCATE
    | IOCTL_DEV
)

_BY_ABI: tuple[tuple[int, int, str], ...] = (
    (2, REFER, "refer (cross-directory links and renames)"),
    (3, TRUNCATE, "truncate"),
    (5, IOCTL_DEV, "ioctl on devices"),
)
# Rights a file (not a directory) can be granted.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


def fs_rights(abi: int) -> int:
    """Every file-system right the ABI knows."""
    rights = (1 << 13) - 1
    for needed, bit, _ in _BY_ABI:
        if abi >= needed:
            rights |= bit
    return rights


def rights_for(abi: int, *, net: bool, scopes: bool) -> tuple[int, int, int, list[str]]:
    """(fs, net, scoped) handled rights the ABI allows, and what was dropped."""
    dropped = [name for needed, _bit, name in _BY_ABI if abi < needed]
    net_rights = NET_BIND_TCP | NET_CONNECT_TCP if net and abi >= 4 else 0
    if net and abi < 4:
        dropped.append("TCP connect and bind (needs ABI 4, Linux 6.7)")
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scopes and abi >= 6 else 0
    if scopes and abi < 6:
        dropped.append("abstract UNIX socket and signal scoping (needs ABI 6, Linux 6.12)")
    return fs_rights(abi), net_rights, scoped, dropped


@dataclass(frozen=True)
class PathRule:
    path: str
    access: int


@dataclass(frozen=True)
class RulesetPlan:
    """What a ruleset handles and grants; built in the parent, applied in the child."""

    abi: int
    handled_fs: int
    handled_net: int = 0
    scoped: int = 0
    paths: tuple[PathRule, ...] = ()
    ports: tuple[tuple[int, int], ...] = ()  # (port, access)
    dropped: tuple[str, ...] = field(default=())


class Ruleset:
    """A :class:`RulesetPlan` with its kernel structures packed in advance,
    so the child only opens paths and calls the kernel."""

    def __init__(self, plan: RulesetPlan) -> None:
        self._pack(plan)

    # ctypes buffers do not pickle: the launch helper gets the plan and packs again.
    def __getstate__(self) -> RulesetPlan:
        return self.plan

    def __setstate__(self, plan: RulesetPlan) -> None:
        self._pack(plan)

    def _pack(self, plan: RulesetPlan) -> None:
        self.plan = plan
        if plan.abi >= 6:
            attr = struct.pack("=QQQ", plan.handled_fs, plan.handled_net, plan.scoped)
        elif plan.abi >= 4:
            attr = struct.pack("=QQ", plan.handled_fs, plan.handled_net)
        else:
            attr = struct.pack("=Q", plan.handled_fs)
        self._attr = ctypes.create_string_buffer(attr, len(attr))
        self._paths = [
            (os.fsencode(r.path), r.access & plan.handled_fs, r.access & _FILE_RIGHTS)
            for r in plan.paths
        ]
        self._ports = [
            ctypes.create_string_buffer(struct.pack("=QQ", access, port), 16)
            for port, access in plan.ports
        ]
        self._rule = ctypes.create_string_buffer(12)

    def apply(self) -> None:
        """Create the ruleset, add every rule, and restrict the calling
        process. A path that does not exist is skipped (nothing beneath it
        can be reached to be granted); any other failure raises."""
        fd = kernel.landlock_create_ruleset(self._attr)
        try:
            for path, access, file_access in self._paths:
                try:
                    target = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    if not os.path.isdir(path):
                        # A file can hold only file rights; asking for more is EINVAL.
                        access &= file_access
                    if access:
                        struct.pack_into("=Qi", self._rule, 0, access, target)
                        kernel.landlock_add_rule(fd, kernel.LANDLOCK_RULE_PATH_BENEATH, self._rule)
                finally:
                    os.close(target)
            for port in self._ports:
                kernel.landlock_add_rule(fd, kernel.LANDLOCK_RULE_NET_PORT, port)
            kernel.landlock_restrict_self(fd)
        finally:
            os.close(fd)


def merge(rules: Iterable[PathRule]) -> tuple[PathRule, ...]:
    """One rule per path, with the union of the rights asked for it."""
    out: dict[str, int] = {}
    for r in rules:
        out[r.path] = out.get(r.path, 0) | r.access
    return tuple(PathRule(p, a) for p, a in out.items())
