"""Re-locking an agent's MCP servers: list their tools now and pin them in its lock.

What ``charter mcp lock`` does once the person has confirmed: for one
agent, the servers are started (or contacted) in a private temporary home,
their tools listed and pinned (:func:`charter.runtime.mcp.lock.pin_tools`),
what changed since the previous lock is shown, and the lock is written. A
server that cannot be reached or listed is reported on stderr and counted;
its earlier pins are kept, so a flaky server does not lose what was
reviewed. The servers come from the caller (the compiler reads them from
the project); the runtime never reads a project.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio

from charter.runtime.errors import CharterError
from charter.runtime.mcp.client import ConnectAuthorization, McpHost, McpPool, ServerRequest
from charter.runtime.mcp.launch import launch_identity, preview
from charter.runtime.mcp.lock import (
    ListedTool,
    Lock,
    LockError,
    ServerLock,
    compare,
    pin_tools,
    read_lock,
    write_lock,
)
from charter.runtime.net.urlpolicy import UrlPolicy
from charter.runtime.plan import McpServerPlan

__all__ = ["LockWriteError", "RelockServer", "announce_servers", "relock_agent", "show_changes"]

# (server, the manifest digest the lock records or None when unreadable, plan)
RelockServer = tuple[str, "str | None", McpServerPlan]


class LockWriteError(CharterError):
    """The new lock could not be written; the message says where and why."""


def announce_servers(out: TextIO, servers: Sequence[tuple[str, McpServerPlan]]) -> None:
    """What locking will start or contact, for the person to confirm:
    ``servers`` are (the agent directory as shown, plan)."""
    out.write("charter mcp lock will start or contact:\n")
    for shown_dir, plan in servers:
        shown = preview(plan)
        verb = "run" if plan.transport == "stdio" else "connect to"
        out.write(f"  [{shown_dir}] {shown.server}: {verb} {shown.target}")
        out.write(f"  (cwd {shown.cwd})\n" if shown.cwd else "\n")
        if shown.env_keys:
            out.write(f"      with environment {', '.join(shown.env_keys)}\n")


def relock_agent(
    path: Path,
    agent_dir: Path,
    servers: Sequence[RelockServer],
    *,
    allow_local: bool,
    only_these: bool,
    shown: str,
    out: TextIO,
) -> int:
    """List ``servers`` and write the agent's lock at ``path`` (``shown``:
    how the lock is named to the person). ``only_these``: the other entries
    of the lock are kept; otherwise entries of servers no longer declared
    are dropped. Returns how many servers failed; raises LockWriteError."""
    try:
        previous = read_lock(path) or Lock()
    except LockError as exc:
        out.write(f"{shown}: the old lock is unreadable ({exc}); rewriting\n")
        previous = Lock()
    entries, failed = anyio.run(_list_servers, agent_dir, servers, allow_local)
    if only_these:
        lock = previous
    else:
        # Keep what could not be re-listed now, so a flaky server does not
        # lose its reviewed pins; drop servers no longer declared.
        declared = {s for s, _p, _pl in servers}
        lock = Lock({k: v for k, v in previous.servers.items() if k in declared})
    for entry in entries:
        show_changes(out, previous, entry)
        lock = lock.with_server(entry)
    if entries or lock.servers != previous.servers:
        try:
            write_lock(path, lock)
        except OSError as exc:
            raise LockWriteError(f"cannot write {path}: {exc.strerror}") from exc
        out.write(f"wrote {shown}\n")
    return failed


def show_changes(out: TextIO, previous: Lock, entry: ServerLock) -> None:
    """A server's tools now, and what changed since ``previous`` pinned them."""
    old = previous.servers.get(entry.server)
    listed = [ListedTool(t.name, t.description, t.input_schema) for t in entry.tools]
    out.write(f"{entry.server}: {len(entry.tools)} tool(s)\n")
    if old is None:
        for t in entry.tools:
            out.write(f"  + {t.name} ({t.safe_name})\n")
        return
    cmp = compare({t.name: t for t in old.tools}, listed)
    said = [f"  ~ {c.name}: {', '.join(c.what)} changed since the previous lock"
            for c in cmp.changed]  # fmt: skip
    said += [f"  + {n}: new since the previous lock" for n in cmp.new]
    said += [f"  - {n}: no longer listed" for n in cmp.missing]
    out.write("".join(line + "\n" for line in said))
    if dict(old.launch) != dict(entry.launch):
        out.write("  ! the launch command or URL changed since the previous lock\n")


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "charter"


async def _list_servers(
    agent_dir: Path, servers: Sequence[RelockServer], allow_local: bool
) -> tuple[list[ServerLock], int]:
    entries: list[ServerLock] = []
    failed = 0
    with tempfile.TemporaryDirectory(prefix="charter-mcp-home-") as home:
        host = McpHost(
            agent_dir=agent_dir,
            workspace=agent_dir,
            home=Path(home),
            log_dir=_state_dir() / "logs",
            environ=dict(os.environ),
            url_policy=UrlPolicy(allow_local_network=allow_local),
        )
        async with McpPool(host) as pool:
            for server, digest, plan in servers:
                req = ServerRequest(plan, ConnectAuthorization(server, "approval"))
                report, listed = await pool.list_only(req)
                if report.status != "ok":
                    failed += 1
                    print(f"{server}: {report.status}: {report.message}", file=sys.stderr)
                    continue
                try:
                    if digest is None:
                        raise LockError(f"cannot read the manifest of MCP server '{server}'")
                    tools = pin_tools(server, listed)
                except (LockError, ValueError) as exc:
                    failed += 1
                    print(f"{server}: failed: {exc}", file=sys.stderr)
                    continue
                entries.append(
                    ServerLock(
                        server=server,
                        transport=plan.transport,
                        launch=launch_identity(plan),
                        manifest_sha256=digest,
                        tools=tools,
                    )
                )
                await pool.connections[server].aclose()
    return entries, failed
