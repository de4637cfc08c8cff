"""A process limit the kernel enforces for root too: a pids cgroup.

``RLIMIT_NPROC`` counts a user's processes, and the kernel exempts the host's
root user from it, even inside a user namespace. When the runtime runs as
root, a fork bomb in the sandbox is therefore bounded only by a cgroup.
:func:`find_pids_root` looks for a pids controller this process may create
cgroups under (cgroup v2 with ``pids`` enabled for children, or the v1 pids
hierarchy); :class:`PidsCgroup` is one per command: created by the parent
with its ``pids.max``, joined by the relay before it forks the command, and
removed by the parent when the command has ended.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PidsCgroup", "PidsRoot", "find_pids_root"]


@dataclass(frozen=True)
class PidsRoot:
    path: Path  # where per-command cgroups are created
    version: int  # 1 or 2


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) from /proc/self/mountinfo."""
    out: list[tuple[str, str, str]] = []
    try:
        text = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, rfields = left.split(), right.split()
        if len(fields) >= 5 and len(rfields) >= 3:
            out.append((fields[4], rfields[0], rfields[2]))
    return out


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for c in parts[1].split(",") if parts[1] else [""]:
                out[c] = parts[2]
    return out


def _usable(path: Path) -> bool:
    probe = path / f"charter-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return (probe / "pids.max").exists() and os.access(probe / "cgroup.procs", os.W_OK)
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def find_pids_root() -> PidsRoot | None:
    """Where per-command pids cgroups can be made, or None."""
    own = _own_cgroups()
    for mountpoint, fstype, opts in _mounts():
        if fstype == "cgroup2" and "" in own:
            base = Path(mountpoint) / own[""].lstrip("/")
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled and _usable(base):
                return PidsRoot(base, 2)
        elif fstype == "cgroup" and "pids" in opts.split(",") and "pids" in own:
            base = Path(mountpoint) / own["pids"].lstrip("/")
            if _usable(base):
                return PidsRoot(base, 1)
    return None


class PidsCgroup:
    """One command's cgroup: at most ``limit`` processes (plus the relay)."""

    def __init__(self, root: PidsRoot, limit: int) -> None:
        self.path = root.path / f"charter-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(str(limit + 1))  # +1: the relay itself
        except OSError:
            self.path.rmdir()
            raise
        self.procs = os.fsencode(str(self.path / "cgroup.procs"))

    def remove(self, wait_s: float = 2.0) -> None:
        """Remove the cgroup once its processes are gone."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.01)
