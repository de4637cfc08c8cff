"""Which MCP servers ``charter mcp lock`` starts or contacts, read from a project.

Each agent's MCP manifests (``agent/mcp/*.yaml``) and the Leviath
``[[mcp_servers]]`` its blueprint and stages reference, each turned into the
runtime's view of the server (a :class:`McpServerPlan` whose connection the
person running the command approves) with the digest the lock records. The
runtime lists and pins them (:func:`charter.runtime.relock_agent`); this module
only reads the project.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.frontends.mcp_manifest import McpServer
from charter.compiler.frontends.project import AgentSources, Project
from charter.compiler.resolve.leviath_mcp import (
    declared_servers,
    entry_digest,
    referenced,
    stage_names,
    to_server_plan,
)
from charter.compiler.resolve.mcp_lock import manifest_sha256
from charter.runtime.plan import Decision, McpServerPlan, SourceRef

__all__ = ["LockTarget", "mcp_lock_targets", "server_plan"]


class LockTarget(NamedTuple):
    directory: str  # the agent's directory, as the project shows it
    server: str
    digest: str | None  # the manifest's (or entry's) digest the lock records
    plan: McpServerPlan


def server_plan(server: str, m: McpServer) -> McpServerPlan:
    """The runtime's view of a manifest, for launching during locking (the
    person running the command approves the connection)."""
    return m.server_plan(server, connect_decision=Decision(permission="ask", liftable=True))


def mcp_lock_targets(
    project: Project, only: list[str] | None
) -> tuple[list[LockTarget], list[Diagnostic]]:
    """Every enabled server of the project (only those named in ``only``,
    when given), and the errors of manifests that do not load."""
    targets: list[LockTarget] = []
    bad: list[Diagnostic] = []
    for agent in project.agents:
        for loaded in agent.mcp:
            server = server_id_from_path(Path(loaded.display))
            if only and server not in only:
                continue
            if loaded.model is None:
                bad.extend(d for d in loaded.diagnostics if d.is_error)
                continue
            if not loaded.model.enabled:
                continue
            plan = server_plan(server, loaded.model)
            digest = manifest_sha256(project.root / loaded.display)
            targets.append(LockTarget(agent.directory, server, digest, plan))
        targets.extend(_leviath_targets(project, agent, only))
    return targets, bad


def _leviath_targets(
    project: Project, agent: AgentSources, only: list[str] | None
) -> list[LockTarget]:
    """The agent's [[mcp_servers]] (its blueprint's, and the config's it
    names). Locking is the review step, so a blueprint's server is locked
    here whether or not the config trusts it yet; trusting it is separate."""
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
    out: list[LockTarget] = []
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
        out.append(LockTarget(agent.directory, srv.name, entry_digest(srv.model), plan))
    return out
