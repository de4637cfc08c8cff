"""The plain data that plans and starts a sandbox.

Kept free of the plan's models (and so of pydantic) because the launch
helper (:mod:`~charter.runtime.sandbox.zygote`) imports it: that process
should start quickly and stay small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from charter.runtime.sandbox import kernel
from charter.runtime.sandbox.landlock import RulesetPlan

__all__ = ["NAMESPACES", "PID_MAX_MIN", "PROXY_PORT", "HostFacts", "Layout", "Mount", "Place"]

NAMESPACES = (
    kernel.CLONE_NEWUSER
    | kernel.CLONE_NEWNS
    | kernel.CLONE_NEWPID
    | kernel.CLONE_NEWNET
    | kernel.CLONE_NEWIPC
    | kernel.CLONE_NEWUTS
)
PROXY_PORT = 3128  # inside the sandbox's own network namespace: always free
PID_MAX_MIN = 301  # the kernel refuses a smaller pid_max


@dataclass(frozen=True)
class HostFacts:
    """What this kernel lets the runtime build (see ``probe``)."""

    landlock_abi: int = 0
    namespaces: bool = False  # user, mount, pid, network, IPC and UTS namespaces
    fresh_proc: bool = False  # a new /proc can be mounted in the pid namespace
    # The pid namespace's own pid_max can be set (Linux 6.14+): a process
    # limit that also binds root, whom RLIMIT_NPROC exempts.
    pid_max: bool = False
    reasons: tuple[str, ...] = ()  # why a feature is missing, for people


@dataclass(frozen=True)
class Place:
    """Where one sandbox's commands run, on this host."""

    workspace: Path  # resolved
    home: Path  # the user's real home, resolved
    private: Path  # the run's private directory (holds tmp/ and home/)
    env_home: Path | None = None  # HOME as the command's environment sets it
    runtime: tuple[Path, ...] = ()  # the runtime's own Python, kept readable
    proxy_port: int | None = None  # the host-side proxy port (Landlock-only mode)


@dataclass(frozen=True)
class Mount:
    target: str
    kind: Literal["tmpfs", "bind", "empty-file", "proc", "sys", "dev"]
    source: str | None = None
    writable: bool = False
    # May the target be created when the view does not have it yet (only
    # inside a tree this sandbox made: a tmpfs, the private directory)?
    create: bool = False
    # The mounted content is the sandbox's own (the private directory), so
    # mount points for what is bound back beneath it may be created there.
    owned: bool = False


@dataclass(frozen=True)
class Layout:
    mode: Literal["namespace", "landlock", "none"]
    namespaces: int = 0
    mounts: tuple[Mount, ...] = ()
    ruleset: RulesetPlan | None = None
    rlimits: tuple[tuple[int, int], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    proxy: bool = False  # a listening socket for the proxy is made inside
    pid_max: int | None = None  # written to the new pid namespace's pid_max
    contained: tuple[str, ...] = ()
    not_contained: tuple[str, ...] = ()
    writable: tuple[str, ...] = field(default=())
