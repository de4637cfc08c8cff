"""Shared pieces of the sandbox tests (tests/sandbox): what this host can
build, and skips that say which kernel feature is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from charter.runtime.plan import SandboxLimits, SandboxProfile
from charter.runtime.sandbox import defaults
from charter.runtime.sandbox.launcher import Sandbox
from charter.runtime.sandbox.probe import host_facts
from charter.runtime.sandbox.spec import HostFacts


def facts() -> HostFacts:
    return host_facts()


def need_namespaces() -> None:
    f = facts()
    if not f.namespaces:
        pytest.skip("this host cannot create user namespaces: " + "; ".join(f.reasons))


def need_landlock() -> None:
    f = facts()
    if f.landlock_abi < 1:
        pytest.skip("this kernel has no Landlock: " + "; ".join(f.reasons))


def need_full_sandbox() -> None:
    need_namespaces()
    need_landlock()
    if not facts().fresh_proc:
        pytest.skip("a fresh /proc cannot be mounted on this host")


def profile(**changes: object) -> SandboxProfile:
    """The default profile (what the compiler writes with no config), changed."""
    base = SandboxProfile(
        hidden=defaults.HIDDEN,
        read_only=defaults.READ_ONLY,
        limits=SandboxLimits(),
    )
    return base.model_copy(update=changes)


def sandboxed_workspace(tmp_path: Path) -> tuple[Path, Sandbox, dict[str, str]]:
    """A fresh workspace ``tmp_path/ws``, the default sandbox over it (the
    caller closes it), and the small environment a command there runs with."""
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = Sandbox(profile(), workspace=ws, private_dir=tmp_path / "private")
    return ws, sb, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws)}
