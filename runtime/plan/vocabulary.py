"""Charter's decision vocabulary, defined once: the three answers, their
order, and the exit code each gives a command-line check.

Everything that decides (the compiler's resolution, the gates, the shell
guard, the hooks, the CLI) uses these; nothing else spells the order out.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

__all__ = ["EXIT_CODES", "PERMISSIONS", "RANK", "Permission", "stricter"]

Permission = Literal["allow", "ask", "deny"]

# From the least to the most restrictive.
PERMISSIONS: tuple[Permission, ...] = ("allow", "ask", "deny")

RANK: Mapping[str, int] = MappingProxyType({p: n for n, p in enumerate(PERMISSIONS)})

# What `charter check` and its siblings exit with for each answer: 0 lets a
# script go on, 1 is the usual failure, and 3 (not 2, which is a usage
# error) says a person must decide.
EXIT_CODES: Mapping[str, int] = MappingProxyType({"allow": 0, "deny": 1, "ask": 3})


def stricter(*values: Permission) -> Permission:
    """The strictest of the given permissions (deny > ask > allow)."""
    best: Permission = "allow"
    for v in values:
        if RANK[v] > RANK[best]:
            best = v
    return best
