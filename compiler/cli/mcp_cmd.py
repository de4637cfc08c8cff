"""``charter mcp lock PROJECT [--server NAME] [--yes]``: review and pin MCP tools.

Locking starts the project's MCP servers (or connects to their URLs), so it
is an explicit user action: the command first shows every command line or
URL origin it will reach and asks for confirmation. ``--yes`` answers for
the user; without ``--yes`` and without a terminal to ask on, it refuses, so
a CI job never launches a repository's servers by accident.

For each server it lists the tools and writes ``<agent dir>/charter.lock.json``
with every tool's name, safe name, description and input schema and their
sha256 digests; when a previous lock exists it shows what changed, so the
person re-locking reviews exactly that. With ``--server`` only that server's
entry is replaced; otherwise entries of servers no longer declared are
dropped.

Exit codes: 0 every server locked; 1 some server could not be reached or
listed (the others are still written); 2 usage, refusal, or a project whose
MCP manifests do not load.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from charter.compiler.diagnostics import Diagnostic
    from charter.compiler.frontends.mcp_manifest import McpServer
    from charter.runtime.plan import McpServerPlan

__all__ = ["add_arguments", "run", "server_plan"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mcp_command", metavar="COMMAND")
    lock = sub.add_parser(
        "lock",
        help="start the declared MCP servers, list their tools and pin them",
        description="Start the declared MCP servers, list their tools and write "
        "charter.lock.json next to each agent.",
    )
    lock.add_argument("project", type=Path, help="project directory")
    lock.add_argument("--server", action="append", metavar="NAME", help="lock only this server")
    lock.add_argument(
        "--yes", action="store_true", help="do not ask before starting or contacting servers"
    )
    lock.add_argument("--config", type=Path, help="the user config.toml (default: the user's own)")
    lock.add_argument("--no-user-config", action="store_true", help="ignore the user's config")


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "charter"


def server_plan(server: str, m: McpServer) -> McpServerPlan:
    """The runtime's view of a manifest, for launching during locking (the
    person running the command approves the connection)."""
    from charter.runtime.plan import Decision

    return m.server_plan(server, connect_decision=Decision(permission="ask", liftable=True))


def _confirm(out: TextIO, yes: bool) -> bool | None:
    """True to go ahead, False when declined, None when nobody can be asked."""
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    out.write("Start or contact these servers now? [y/N] ")
    out.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    if args.mcp_command != "lock":
        print("charter mcp: choose a command: lock", file=sys.stderr)
        return 2
    return _lock(args)


def _lock(args: argparse.Namespace) -> int:
    from charter.compiler.frontends.mcp_manifest import server_id_from_path
    from charter.compiler.frontends.project import load_project
    from charter.compiler.render import render
    from charter.compiler.resolve.mcp_lock import lock_display, lock_path
    from charter.runtime.mcp.launch import preview
    from charter.runtime.mcp.lock import Lock, LockError, read_lock

    if not args.project.is_dir():
        print(f"charter mcp lock: {args.project}: no such directory", file=sys.stderr)
        return 2
    project = load_project(
        args.project, config=args.config, use_default_config=not args.no_user_config
    )
    from charter.compiler.resolve.mcp_lock import manifest_sha256

    # (agent directory, server id, the digest the lock records, plan)
    targets: list[tuple[str, str, str | None, McpServerPlan]] = []
    bad: list[Diagnostic] = []
    for agent in project.agents:
        for loaded in agent.mcp:
            server = server_id_from_path(Path(loaded.display))
            if args.server and server not in args.server:
                continue
            if loaded.model is None:
                bad.extend(d for d in loaded.diagnostics if d.is_error)
                continue
            if not loaded.model.enabled:
                continue
            plan = server_plan(server, loaded.model)
            digest = manifest_sha256(project.root / loaded.display)
            targets.append((agent.directory, server, digest, plan))
        targets.extend(_leviath_targets(project, agent, args.server))
    if bad:
        sys.stderr.write(render(bad, "concise", sources=project.sources))
        print("charter mcp lock: fix the manifests above first", file=sys.stderr)
        return 2
    if args.server:
        unknown = sorted(set(args.server) - {t[1] for t in targets})
        if unknown:
            print(
                f"charter mcp lock: no enabled MCP server named {', '.join(unknown)}",
                file=sys.stderr,
            )
            return 2
    if not targets:
        print("charter mcp lock: the project declares no enabled MCP servers", file=sys.stderr)
        return 0
    out = sys.stdout
    out.write("charter mcp lock will start or contact:\n")
    for directory, _server, _path, plan in targets:
        shown = preview(plan)
        verb = "run" if plan.transport == "stdio" else "connect to"
        out.write(f"  [{lock_display(directory)}] {shown.server}: {verb} {shown.target}")
        out.write(f"  (cwd {shown.cwd})\n" if shown.cwd else "\n")
        if shown.env_keys:
            out.write(f"      with environment {', '.join(shown.env_keys)}\n")
    decision = _confirm(out, args.yes)
    if decision is None:
        print(
            "charter mcp lock: refusing to start servers without confirmation; there is no "
            "terminal to ask on, so pass --yes to confirm",
            file=sys.stderr,
        )
        return 2
    if not decision:
        print("charter mcp lock: nothing started", file=sys.stderr)
        return 2

    allow_local = bool(
        project.config is not None
        and project.config.model is not None
        and project.config.model.security.allow_local_network
    )
    import anyio

    failures = 0
    by_agent: dict[str, list[tuple[str, str | None, McpServerPlan]]] = {}
    for directory, server, digest, plan in targets:
        by_agent.setdefault(directory, []).append((server, digest, plan))
    for directory, servers in by_agent.items():
        path = lock_path(project.root, directory)
        try:
            previous = read_lock(path) or Lock()
        except LockError as exc:
            out.write(f"{lock_display(directory)}: the old lock is unreadable ({exc}); rewriting\n")
            previous = Lock()
        agent_dir = project.root / directory
        entries, failed = anyio.run(_list_servers, agent_dir, servers, allow_local)
        failures += failed
        if args.server:
            lock = previous
        else:
            # Keep what could not be re-listed now, so a flaky server does not
            # lose its reviewed pins; drop servers no longer declared.
            declared = {s for s, _p, _pl in servers}
            lock = Lock({k: v for k, v in previous.servers.items() if k in declared})
        for entry in entries:
            _show_changes(out, previous, entry)
            lock = lock.with_server(entry)
        if entries or lock.servers != previous.servers:
            from charter.runtime.mcp.lock import write_lock

            try:
                write_lock(path, lock)
            except OSError as exc:
                print(f"charter mcp lock: cannot write {path}: {exc.strerror}", file=sys.stderr)
                return 2
            out.write(f"wrote {lock_display(directory)}\n")
    return 1 if failures else 0


def _show_changes(out: TextIO, previous: Any, entry: Any) -> None:
    from charter.runtime.mcp.lock import ListedTool, compare

    old = previous.servers.get(entry.server)
    listed = [ListedTool(t.name, t.description, t.input_schema) for t in entry.tools]
    out.write(f"{entry.server}: {len(entry.tools)} tool(s)\n")
    if old is None:
        for t in entry.tools:
            out.write(f"  + {t.name} ({t.safe_name})\n")
        return
    cmp = compare({t.name: t for t in old.tools}, listed)
    for c in cmp.changed:
        out.write(f"  ~ {c.name}: {', '.join(c.what)} changed since the previous lock\n")
    for n in cmp.new:
        out.write(f"  + {n}: new since the previous lock\n")
    for n in cmp.missing:
        out.write(f"  - {n}: no longer listed\n")
    if dict(old.launch) != dict(entry.launch):
        out.write("  ! the launch command or URL changed since the previous lock\n")


def _leviath_targets(
    project: Any, agent: Any, only: list[str] | None
) -> list[tuple[str, str, str | None, McpServerPlan]]:
    """The agent's [[mcp_servers]] (its blueprint's, and the config's it
    names). Locking is the review step, so a blueprint's server is locked
    here whether or not the config trusts it yet; trusting it is separate."""
    from charter.compiler.resolve.leviath_mcp import (
        declared_servers,
        entry_digest,
        referenced,
        stage_names,
        to_server_plan,
    )
    from charter.runtime.plan import Decision, SourceRef

    bp = agent.blueprint
    config = project.config
    declared, _ = declared_servers(
        bp.model if bp is not None else None,
        bp.smap if bp is not None else None,
        config.model if config is not None else None,
        config.smap if config is not None else None,
    )
    stages = list(bp.model.stages.values()) if bp is not None and bp.model else []
    stages += [f.model for f in agent.stage_files if f.model is not None]
    out: list[tuple[str, str, str | None, McpServerPlan]] = []
    for srv in referenced(declared, stage_names(stages)):
        if only and srv.name not in only:
            continue
        plan = to_server_plan(
            srv,
            connect=Decision(permission="ask", liftable=True),
            locked=False,
            pins=(),
            origin=SourceRef(path=srv.smap.path),
        )
        out.append((agent.directory, srv.name, entry_digest(srv.model), plan))
    return out


async def _list_servers(
    agent_dir: Path, servers: list[tuple[str, str | None, McpServerPlan]], allow_local: bool
) -> tuple[list[Any], int]:
    import tempfile

    from charter.runtime.mcp.client import ConnectAuthorization, McpHost, McpPool, ServerRequest
    from charter.runtime.mcp.launch import launch_identity
    from charter.runtime.mcp.lock import LockError, ServerLock, pin_tools
    from charter.runtime.net.urlpolicy import UrlPolicy

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
