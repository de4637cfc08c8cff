"""The Leviath sources of an agent: its script tools (its own folder shadows
the user's), the [[mcp_servers]] it may use and whether the user trusts
them, and [tool_script_permissions] with ``inherit`` resolved."""

from __future__ import annotations

from collections.abc import Mapping

from charter.compiler.catalog.builtin import resolve_builtin
from charter.compiler.diagnostics import format_key_path
from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.resolve.context import AgentContext
from charter.compiler.resolve.permissions import Said, ScopeInputs, resolve_permission
from charter.compiler.resolve.scopes import UserScopes, permission_map
from charter.compiler.resolve.tooltable import ToolTable
from charter.compiler.rules import diag
from charter.runtime.plan import Permission, ScriptPermissions

__all__ = ["leviath_sources", "resolve_script_permissions"]


def leviath_sources(ctx: AgentContext, stages: Mapping[str, StageEntry], agent_name: str) -> None:
    """The agent's script tools (its own tools/ shadows the user's folder) and
    the [[mcp_servers]] it may use: the blueprint's own, and the config's
    that a stage names."""
    own = list(ctx.agent.scripts)
    names = {t.name for t in own}
    # Script tools are Leviath's: an agent core without a blueprint gets none,
    # not even the user's folder.
    if ctx.agent.blueprint is not None:
        ctx.scripts = own + [t for t in ctx.user_scripts if t.name not in names]
    for tool in ctx.scripts:
        if resolve_builtin(tool.name) is not None:
            ctx.diags.append(
                diag(
                    "script-tool-replaces-builtin",
                    f"script tool '{tool.name}' is this agent's own tool; Charter's built-in "
                    f"'{tool.name}' is not used for agent '{agent_name}'",
                    tool.where,
                )
            )
    bp, cfg = ctx.blueprint, ctx.config
    if not ((bp is not None and bp.mcp_servers) or (cfg is not None and cfg.mcp_servers)):
        return  # no [[mcp_servers]] anywhere: the MCP reader is never imported
    from charter.compiler.resolve.leviath_mcp import (
        declared_servers,
        referenced,
        server_checks,
        stage_names,
        trusted,
    )

    declared, diags = declared_servers(ctx.blueprint, ctx.bp_smap, ctx.config, ctx.config_smap)
    ctx.diags.extend(diags)
    kept = referenced(declared, stage_names(e.stage for e in stages.values()))
    ctx.servers = kept
    untrusted = set()
    for srv in kept:
        ctx.diags.extend(server_checks(srv))
        if not trusted(srv, agent_name, ctx.config):
            untrusted.add(srv.name)
            verb = "start" if srv.transport == "stdio" else "contact"
            ctx.diags.append(
                diag(
                    "blueprint-mcp-server-inert",
                    f"MCP server '{srv.name}' is declared by this blueprint; Charter will not "
                    f"{verb} it, and refuses its tools, until your config trusts it "
                    f"([agent_mcp_servers.{agent_name}] allow_blueprint = true)",
                    srv.span("name"),
                    key_path=format_key_path((*srv.path, "name")),
                )
            )
    ctx.untrusted_servers = frozenset(untrusted)


def resolve_script_permissions(
    ctx: AgentContext,
    stages: Mapping[str, StageEntry],
    table: ToolTable,
    user: UserScopes,
    agent_perms: dict[str, Said],
) -> ScriptPermissions:
    """[tool_script_permissions], with inherit resolved against the entry
    stage's decision for the matching built-in."""
    from charter.compiler.resolve.script_plan import effective_script_permissions

    bp = ctx.blueprint
    entry_name = bp.entry if bp is not None else None
    entry = stages.get(entry_name) if entry_name else None
    stage_perms: dict[str, Said] = {}
    if entry is not None:
        # A scratch context: the entry stage's map is compiled again with the
        # stage, and its findings (a doubled spelling) belong to that pass.
        scratch = AgentContext(ctx.agent, ctx.config, ctx.config_smap, ctx.options, ctx.shell)
        stage_perms = permission_map(
            entry.stage.tool_permissions,
            entry.smap,
            (*entry.prefix, "tool_permissions"),
            table,
            scratch,
            f"stage '{entry.name}'",
            check_names=False,
        )

    def resolve(builtin: str) -> Permission:
        b = resolve_builtin(builtin)
        scopes = ScopeInputs(
            builtin_default=b.default_permission if b is not None else "ask",
            stage=stage_perms.get(builtin),
            agent=agent_perms.get(builtin),
            agent_config=user.agent_config.get(builtin),
            config=user.config.get(builtin),
            allow_blueprint_permissions=user.trust_blueprint,
        )
        return resolve_permission(scopes).permission

    cfg = ctx.config
    perms, diags = effective_script_permissions(
        cfg.tool_script_permissions if cfg is not None else None,
        ctx.config_smap,
        bp.tool_script_permissions if bp is not None else None,
        ctx.bp_smap,
        resolve,
    )
    ctx.diags.extend(diags)
    return perms
