"""The compiler's view of an agent's MCP lock, ``<agent dir>/charter.lock.json``.

``charter mcp lock`` writes the file; here it is only read, as plain JSON
(no MCP SDK, no HTTP stack), so ``charter validate`` stays fast and never
starts anything. A server's pins are used only while its manifest is exactly
the one that was locked: the lock records the manifest's sha256, and a
manifest edited since (a new command, another URL) makes the pins stale. A
stale or missing entry leaves the server unpinned, its tools discovered and
asked about at run time.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from charter.runtime.mcp.lock import LOCK_FILE, Lock, LockError, ServerLock, canonical, read_lock

__all__ = [
    "LockRead",
    "ServerPins",
    "lock_display",
    "lock_path",
    "manifest_sha256",
    "pinned_schema",
    "read_agent_lock",
    "server_pins",
    "server_pins_for",
]


def lock_path(project_root: Path, agent_directory: str) -> Path:
    """Where an agent's lock lives (``agent_directory`` as the project shows it)."""
    return project_root / agent_directory / LOCK_FILE


def lock_display(agent_directory: str) -> str:
    return LOCK_FILE if agent_directory == "." else f"{agent_directory}/{LOCK_FILE}"


@dataclass(frozen=True, slots=True)
class LockRead:
    lock: Lock | None  # None: no lock file, or it could not be read
    error: str | None = None


@lru_cache(maxsize=64)
def _read(path: str, _stamp: tuple[int, int]) -> LockRead:
    try:
        return LockRead(read_lock(Path(path)))
    except LockError as exc:
        return LockRead(None, str(exc))


def read_agent_lock(project_root: Path, agent_directory: str) -> LockRead:
    """The agent's lock, read once per file version (the compiler asks for
    it from several places and must see one answer)."""
    path = lock_path(project_root, agent_directory)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return LockRead(None)
    except OSError as exc:
        return LockRead(None, f"cannot read: {exc.strerror or exc}")
    return _read(str(path), (st.st_mtime_ns, st.st_size))


def manifest_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class ServerPins:
    """The outcome for one server: its pins, or why there are none."""

    entry: ServerLock | None
    stale: str | None = None  # why an existing lock's entry is not used


def server_pins(read: LockRead, server: str, manifest: Path) -> ServerPins:
    return server_pins_for(read, server, manifest_sha256(manifest))


def server_pins_for(read: LockRead, server: str, digest: str | None) -> ServerPins:
    """:func:`server_pins` for a server whose "manifest" is not a file of its
    own (a ``[[mcp_servers]]`` entry): ``digest`` is what the lock must hold."""
    if read.lock is None:
        return ServerPins(None)
    entry = read.lock.servers.get(server)
    if entry is None:
        return ServerPins(None, f"the lock has no entry for MCP server '{server}'")
    if digest != entry.manifest_sha256:
        return ServerPins(
            None,
            f"the manifest of MCP server '{server}' changed after it was locked; its tools are "
            "unpinned until 'charter mcp lock' is run again",
        )
    return ServerPins(entry)


def pinned_schema(schema: Any) -> tuple[str | None, str, str | None]:
    """The plan text of a pinned input schema, why it is unusable ("" when it
    compiles) and the rule that says so. Canonical JSON; floats are kept as
    the server wrote them. A schema that does not compile is still pinned as
    written, so the runtime refuses every call to the tool rather than letting
    unchecked arguments through; one that needs an external ``$ref`` (never
    fetched) has no text, and validation is off for it."""
    from charter.compiler.resolve.schemacheck import check_schema

    problem = check_schema(schema)
    if problem is None:
        return canonical(schema), "", None
    rule, message = problem
    if rule == "external-ref-in-schema":
        return None, message, rule
    return canonical(schema), message, rule
