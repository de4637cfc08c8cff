"""Host patterns of ``allow_hosts``: an exact name, ``*.suffix`` for the
names below a domain (not the domain itself), or ``*`` for any host. Kept
apart from the proxy so the compiler can compare patterns without loading
the network stack."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["host_matches"]


def host_matches(host: str, patterns: Sequence[str]) -> bool:
    host = host.lower().rstrip(".")
    for raw in patterns:
        p = raw.lower().rstrip(".")
        if p == "*":
            return True
        if p.startswith("*."):
            if host.endswith(p[1:]) and host != p[2:]:
                return True
        elif host == p:
            return True
    return False
