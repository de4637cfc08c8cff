"""Capability grants and how a required capability is matched against them.

A grant may end in ``:*`` to cover every capability below that prefix
(``mcp.call:*`` covers ``mcp.call:docs``); prefixes split only on ``:``.
There is no bare ``*``. ``secret.bind:`` grants must be exact: a wildcard
would hand every credential in the environment to any command.

Some capabilities depend on a call's arguments: ``delegate_task`` starts a
child of the core named by ``core_id`` (the calling core by default) and
needs ``agents.spawn:<that core>`` from the core's own grants (not a slot's),
as the agent host's handler requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "DELEGATE_TOOL",
    "SECRET_PREFIX",
    "SPAWN_PREFIX",
    "grant_covers",
    "is_granted",
    "spawn_capability",
    "valid_capability",
]

SECRET_PREFIX = "secret.bind:"
SPAWN_PREFIX = "agents.spawn:"
DELEGATE_TOOL = "delegate_task"


def spawn_capability(args: Mapping[str, Any], own_core: str) -> str:
    """The capability a delegate_task call needs: ``agents.spawn:`` and the
    core it would start (its ``core_id`` argument, else the calling core).
    The id is stripped as the host strips it; a blank one names no core, so
    no grant covers it."""
    # ``str(core_id or own).strip()``, exactly: a blank id names no core.
    return SPAWN_PREFIX + str(args.get("core_id") or own_core).strip()


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
