"""Capability grants and how a required capability is matched against them.

A grant may end in ``:*`` to cover every capability below that prefix
(``mcp.call:*`` covers ``mcp.call:docs``); prefixes split only on ``:``.
There is no bare ``*``. ``secret.bind:`` grants must be exact: a wildcard
would hand every credential in the environment to any command.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SECRET_PREFIX", "grant_covers", "is_granted", "valid_capability"]

SECRET_PREFIX = "secret.bind:"


def valid_capability(name: str) -> bool:
    if not name or name != name.strip() or any(c.isspace() for c in name):
        return False
    if name == "*" or name.startswith(":") or "::" in name:
        return False
    parts = name.split(":")
    # Only the last segment may be a wildcard, and only as a whole segment.
    return all("*" not in p for p in parts[:-1]) and (parts[-1] == "*" or "*" not in parts[-1])


def grant_covers(grant: str, required: str) -> bool:
    if grant == required:
        return True
    if required.startswith(SECRET_PREFIX):
        return False  # secret bindings are never covered by a wildcard
    if grant.endswith(":*"):
        prefix = grant[:-1]  # keep the colon: "mcp.call:" covers "mcp.call:docs"
        return required.startswith(prefix) and len(required) > len(prefix)
    return False


def is_granted(required: str, grants: Iterable[str]) -> bool:
    return any(grant_covers(g, required) for g in grants)
