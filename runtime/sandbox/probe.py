"""What this host can build, found by trying it once per process.

Reading sysctls and kernel versions cannot tell whether user namespaces
work (AppArmor, seccomp in a container and distribution patches each
refuse them differently), so :func:`host_facts` starts one real sandboxed
``/bin/sh`` with namespaces and a fresh ``/proc``, and reports what failed.
The answer is cached for the life of the process.
"""

from __future__ import annotations

import os
import threading

from charter.runtime.sandbox import kernel
from charter.runtime.sandbox.spec import NAMESPACES, HostFacts, Layout, Mount

__all__ = ["host_facts", "reset"]

_LOCK = threading.Lock()
_FACTS: HostFacts | None = None
_SHELL = "/bin/sh"
_PROBE_PID_MAX = 4321


def reset() -> None:
    """Forget the cached answer (tests that fake a host call this)."""
    global _FACTS
    with _LOCK:
        _FACTS = None


def host_facts() -> HostFacts:
    global _FACTS
    with _LOCK:
        if _FACTS is None:
            _FACTS = _probe()
        return _FACTS


def _probe() -> HostFacts:
    if not kernel.IS_LINUX:
        return HostFacts(reasons=("not Linux",))
    abi = kernel.landlock_abi()
    reasons: list[str] = []
    if abi == 0:
        reasons.append(
            "Landlock is not enabled in this kernel (needs Linux 5.13+ with lsm=landlock)"
        )
    # Pretend the host lacks features, to see how a run behaves there (tests,
    # demonstrations): "none" (no namespaces and no Landlock), "no-namespaces".
    fake = os.environ.get("CHARTER_SANDBOX_FAKE_HOST", "")
    if fake == "none":
        return HostFacts(reasons=("CHARTER_SANDBOX_FAKE_HOST=none: no namespaces, no Landlock",))
    if fake == "no-namespaces":
        return HostFacts(landlock_abi=abi, reasons=("CHARTER_SANDBOX_FAKE_HOST=no-namespaces",))
    if not os.path.exists(_SHELL):
        reasons.append(f"{_SHELL} is missing, so namespaces could not be tried")
        return HostFacts(landlock_abi=abi, reasons=tuple(reasons))
    from charter.runtime.sandbox.launcher import SandboxError, spawn_layout

    layout = Layout(
        mode="namespace",
        namespaces=NAMESPACES,
        mounts=(Mount("/proc", "proc"),),
        pid_max=_PROBE_PID_MAX,
    )
    script = (
        "test -r /proc/self/stat && test -r /proc/1/stat || exit 3; "
        f'test "$(cat /proc/sys/kernel/pid_max)" = {_PROBE_PID_MAX} || exit 4'
    )
    try:
        code = spawn_layout(layout, [_SHELL, "-c", script])
    except SandboxError as exc:
        reasons.append(f"user namespaces cannot be used here ({exc.stage}: {exc.message})")
        return HostFacts(landlock_abi=abi, reasons=tuple(reasons))
    fresh = code in (0, 4)
    if not fresh:
        reasons.append("a fresh /proc cannot be mounted (the host masks /proc)")
    pid_max = code == 0
    if fresh and not pid_max:
        reasons.append("a pid namespace cannot have its own pid_max (needs Linux 6.14)")
    return HostFacts(
        landlock_abi=abi,
        namespaces=True,
        fresh_proc=fresh,
        pid_max=pid_max,
        reasons=tuple(reasons),
    )
