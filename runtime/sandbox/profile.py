"""Reading profiles for people: a one-line summary, and what changed.

:func:`summary` says what a profile contains in one line (``charter show``);
:func:`compare` lists every setting that differs between two profiles and
whether the change loosens containment (``charter diff --fail-on-loosen``).
Looser means the command can reach more: a weaker kind, network, a
writable workspace, fewer hidden or read-only paths, more or writable
mounts, more hosts, higher (or no) limits, a fallback instead of a refusal,
more asks answered by the sandbox.
"""

from __future__ import annotations

from typing import Any

from charter.runtime.plan import SandboxProfile
from charter.runtime.sandbox.contained import GROUPS

__all__ = ["compare", "summary"]

_KIND = {"none": 0, "namespace": 1, "container": 2}
_NET = {"none": 0, "proxy": 1}
_WS = {"read": 0, "write": 1}
_LIMITS = ("processes", "memory_mb", "cpu_seconds", "open_files", "file_size_mb")


def summary(p: SandboxProfile) -> str:
    if p.kind == "none":
        return "none: commands are not contained (the user's config chose it)"
    parts = [p.kind + (f" ({p.image})" if p.image else "")]
    parts.append(f"workspace {'writable' if p.workspace == 'write' else 'read-only'}")
    net = "no network" if p.network == "none" else "network through the proxy"
    if p.network == "proxy":
        net += f" to {', '.join(p.allow_hosts) or 'no host'}"
    parts.append(net)
    parts.append(f"{len(p.hidden)} hidden paths")
    if p.workspace == "write" and p.read_only:
        parts.append("read-only " + " ".join(p.read_only))
    if p.mounts:
        parts.append(
            "mounts " + " ".join(f"{m.path}:{'rw' if m.writable else 'ro'}" for m in p.mounts)
        )
    lim = p.limits
    parts.append(
        "limits "
        + ", ".join(
            f"{k}={getattr(lim, k) if getattr(lim, k) is not None else 'none'}" for k in _LIMITS
        )
    )
    parts.append(f"on_unavailable {p.on_unavailable}")
    if p.contained_allow:
        parts.append(f"{len(p.contained_allow)} asks answered when contained")
    return "; ".join(parts)


def _change(key: str, before: Any, after: Any, loosened: bool) -> dict[str, Any]:
    return {"key": key, "before": before, "after": after, "loosened": loosened}


def compare(old: SandboxProfile | None, new: SandboxProfile | None) -> list[dict[str, Any]]:
    """The settings that differ, each with whether it loosens."""
    if old is None and new is None:
        return []
    if old is None or new is None:
        return [
            _change(
                "profile",
                None if old is None else old.kind,
                None if new is None else new.kind,
                new is None,
            )
        ]
    out: list[dict[str, Any]] = []
    if old.kind != new.kind:
        out.append(_change("kind", old.kind, new.kind, _KIND[new.kind] < _KIND[old.kind]))
    if old.network != new.network:
        out.append(
            _change("network", old.network, new.network, _NET[new.network] > _NET[old.network])
        )
    if old.workspace != new.workspace:
        out.append(
            _change(
                "workspace", old.workspace, new.workspace, _WS[new.workspace] > _WS[old.workspace]
            )
        )
    for key in ("allow_hosts", "contained_allow"):
        a, b = set(getattr(old, key)), set(getattr(new, key))
        if a != b:
            added = b - a
            if key == "contained_allow" and new.network == "none":
                # Network asks are answered because there is no network: taking
                # the network away is what added them, and that tightens.
                added -= set(GROUPS["network"])
            out.append(_change(key, sorted(a), sorted(b), bool(added)))
    for key in ("hidden", "read_only"):
        a, b = set(getattr(old, key)), set(getattr(new, key))
        if a != b:
            out.append(_change(key, sorted(a), sorted(b), bool(a - b)))
    a_m = {m.path: m.writable for m in old.mounts}
    b_m = {m.path: m.writable for m in new.mounts}
    if a_m != b_m:
        looser = any(p not in a_m or (w and not a_m[p]) for p, w in b_m.items())
        out.append(_change("mounts", a_m, b_m, looser))
    for key in _LIMITS:
        a_l, b_l = getattr(old.limits, key), getattr(new.limits, key)
        if a_l != b_l:
            looser = b_l is None or (a_l is not None and b_l > a_l)
            out.append(_change(f"limits.{key}", a_l, b_l, looser))
    if old.on_unavailable != new.on_unavailable:
        out.append(
            _change(
                "on_unavailable",
                old.on_unavailable,
                new.on_unavailable,
                new.on_unavailable == "warn",
            )
        )
    for key in ("image", "engine", "persist"):
        if getattr(old, key) != getattr(new, key):
            out.append(_change(key, getattr(old, key), getattr(new, key), False))
    return out
