"""The inputs of a permission decision, with provenance: the permission maps
of the stage, the agent and the user's config, the core's approval layers,
the default, and the clamps that apply to a blueprint's own MCP servers.
The decision itself is :func:`charter.compiler.resolve.permissions.resolve_permission`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from charter.compiler.catalog.builtin import BLUEPRINT_LOOSENABLE, impl_siblings, resolve_builtin
from charter.compiler.diagnostics import format_key_path, suggestion
from charter.compiler.frontends.base import server_id_from_path
from charter.compiler.resolve.context import AgentContext, span_ref
from charter.compiler.resolve.permissions import APPROVAL_TO_PERMISSION, CoreInputs, Said
from charter.compiler.resolve.tooltable import ToolRef, ToolTable, all_builtin_names
from charter.compiler.rules import diag_at
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.mcp.naming import mcp_safe_name
from charter.runtime.plan import Clamp, Decision, Permission, ToolEntry, stricter

__all__ = [
    "UserScopes",
    "core_inputs",
    "declared_prefix",
    "default_permission",
    "loosenable",
    "permission_map",
    "untrusted_server_clamp",
    "user_scopes",
]


def permission_map(
    perms: Mapping[str, str],
    smap: SourceMap,
    prefix: tuple[str | int, ...],
    table: ToolTable,
    ctx: AgentContext,
    scope: str,
    *,
    check_names: bool = True,
) -> dict[str, Said]:
    """A permission map keyed by canonical tool name. Two spellings of one
    tool take the stricter value and get a warning."""
    out: dict[str, Said] = {}
    for key, value in perms.items():
        path = (*prefix, key)
        name = table.canonical(key)
        known = name in table.tools or resolve_builtin(key) is not None or table.is_dynamic_mcp(key)
        if check_names and not known and "__" in key and not declared_prefix(ctx, key):
            ctx.diags.append(
                diag_at(
                    "mcp-server-not-declared",
                    f"{scope} permission names '{key}', an MCP tool name, but no declared MCP "
                    "server has that prefix",
                    smap,
                    path,
                    at="key",
                )
            )
        elif check_names and not known:
            ctx.diags.append(
                diag_at(
                    "unknown-tool",
                    f"{scope} permission names '{key}', which is not a tool of this agent"
                    + suggestion(key, [*table.tools, *all_builtin_names()]),
                    smap,
                    path,
                    at="key",
                )
            )
        said = Said(cast(Permission, value), span_ref(smap.value_span(path)), f"{scope}: {key}")
        if name in out:
            ctx.diags.append(
                diag_at(
                    "duplicate-permission-spelling",
                    f"'{key}' and another spelling of '{name}' both set a permission; "
                    "the stricter applies",
                    smap,
                    path,
                    at="key",
                )
            )
            said = Said(stricter(out[name].value, said.value), said.source, said.detail)
        out[name] = said
    return out


# Nothing compares these by value: identity equality spares a generated
# __eq__ at every start-up.
@dataclass(eq=False)
class UserScopes:
    """What the user's config said about each tool, per scope, and blueprint trust."""

    config: dict[str, Said]
    agent_config: dict[str, Said]
    trust_blueprint: Said | None


def user_scopes(ctx: AgentContext, table: ToolTable, agent_name: str) -> UserScopes:
    cfg, smap = ctx.config, ctx.config_smap
    if cfg is None or smap is None:
        return UserScopes({}, {}, None)
    # The user's config covers every agent, so unknown names are not errors
    # here: they may belong to another agent.
    config = permission_map(
        cfg.tool_permissions,
        smap,
        ("tool_permissions",),
        table,
        ctx,
        "config",
        check_names=False,
    )
    overlay = cfg.agent_tool_permissions.get(agent_name, {})
    agent_config = permission_map(
        overlay,
        smap,
        ("agent_tool_permissions", agent_name),
        table,
        ctx,
        f"agent_tool_permissions.{agent_name}",
        check_names=False,
    )
    _deny_siblings(config)
    _deny_siblings(agent_config)
    trust = None
    if cfg.security.allow_blueprint_permissions:
        span = smap.value_span(("security", "allow_blueprint_permissions"))
        trust = Said("allow", span_ref(span), "allow_blueprint_permissions")
    return UserScopes(config, agent_config, trust)


def _deny_siblings(perms: dict[str, Said]) -> None:
    """A user's deny covers every tool sharing the denied tool's
    implementation (denying shell also denies terminal), unless the user
    named the sibling too: two spellings of one power must not leave a door
    open."""
    for name, said in list(perms.items()):
        if said.value != "deny":
            continue
        for sibling in impl_siblings(name):
            if sibling not in perms:
                perms[sibling] = Said("deny", said.source, f"{said.detail} (same implementation)")


def core_inputs(ctx: AgentContext, entry: ToolEntry, ref: ToolRef) -> CoreInputs | None:
    core, csm = ctx.core, ctx.core_smap
    if core is None or csm is None:
        return None
    if ref.builtin is not None:
        registry = Said(
            APPROVAL_TO_PERMISSION[ref.builtin.approval],
            None,
            f"built-in registry: {ref.builtin.approval}",
        )
    elif ref.authored_id is not None:
        src = next(t for t in ctx.agent.tools if t.tool_id == ref.authored_id)
        spec = src.spec.model
        assert spec is not None
        registry = Said(
            APPROVAL_TO_PERMISSION[spec.approval_policy],
            span_ref(src.spec.smap.value_span(("approval_policy",))),
            f"tool.yaml approval_policy: {spec.approval_policy}",
        )
    elif ref.server is not None:
        manifest = next(
            (x for x in ctx.agent.mcp if server_id_from_path(Path(x.display)) == ref.server), None
        )
        if manifest is None or manifest.model is None:
            return None
        policy = manifest.model.approval_policy
        registry = Said(
            APPROVAL_TO_PERMISSION[policy],
            span_ref(manifest.smap.value_span(("approval_policy",))),
            f"MCP manifest approval_policy: {policy}",
        )
    else:
        return None
    overrides: list[tuple[str, Said]] = []

    def add(scope: str, policy: str | None, path: tuple[str | int, ...]) -> None:
        if policy is not None:
            overrides.append(
                (
                    scope,
                    Said(
                        APPROVAL_TO_PERMISSION[policy],
                        span_ref(csm.value_span(path)),
                        f"{format_key_path(path)}: {policy}",
                    ),
                )
            )

    meta = core.tools.metadata.get(entry.name)
    if meta is not None:
        add(
            "core_metadata",
            meta.approval_policy,
            ("tools", "metadata", entry.name, "approval_policy"),
        )
    _approval_layer(add, "core", core.approval, entry)
    fallback = ctx.agent.fallback
    if fallback is not None and fallback.model is not None:
        add_global = functools.partial(_add_said, overrides, fallback.smap)
        _approval_layer(add_global, "global", fallback.model.approval, entry)
    return CoreInputs(registry=registry, overrides=tuple(overrides))


def _add_said(
    overrides: list[tuple[str, Said]],
    smap: SourceMap,
    scope: str,
    policy: str | None,
    path: tuple[str | int, ...],
) -> None:
    if policy is not None:
        said = Said(
            APPROVAL_TO_PERMISSION[policy],
            span_ref(smap.value_span(path)),
            f"{smap.path}: {format_key_path(path)}: {policy}",
        )
        overrides.append((scope, said))


def _approval_layer(add: Any, layer: str, appr: Any, entry: ToolEntry) -> None:
    """One approval block (the core's, or the global fallback file's) as the
    host reads it: for the tool's own capability and for ``tool.call:<tool>``
    alike, the ``tools``, ``capabilities``, ``risks`` and ``default`` entries
    that apply. Each may only tighten (the strictest of them is taken)."""
    add(f"{layer}_approval_tool", appr.tools.get(entry.name), ("approval", "tools", entry.name))
    caps = [c for c in (entry.capability, f"tool.call:{entry.name}") if c is not None]
    for cap in dict.fromkeys(caps):
        add(
            f"{layer}_approval_capability",
            appr.capabilities.get(cap),
            ("approval", "capabilities", cap),
        )
    add(f"{layer}_approval_risk", appr.risks.get(entry.risk), ("approval", "risks", entry.risk))
    add(f"{layer}_approval_default", appr.default, ("approval", "default"))


def default_permission(ref: ToolRef) -> Permission:
    if ref.builtin is not None:
        return ref.builtin.default_permission
    return "ask"  # authored and MCP tools: "everything else" asks


def declared_prefix(ctx: AgentContext, name: str) -> bool:
    """Whether ``<server>__...`` names a server this agent declares (a core
    manifest or a [[mcp_servers]] entry): its unknown tools are then typos."""
    head = name.partition("__")[0]
    servers = [server_id_from_path(Path(x.display)) for x in ctx.agent.mcp]
    servers += [s.name for s in ctx.servers]
    return any(mcp_safe_name(s, "x")[:-3] == head for s in servers)


def loosenable(ctx: AgentContext, name: str, ref: ToolRef | None) -> bool:
    """The web_search / web_fetch exception to the blueprint clamp. It rests
    on those tools neither writing nor executing, which Charter's built-ins
    guarantee; a script tool of that name keeps it only while the agent's
    script permissions leave scripts unable to run a command or write."""
    if name not in BLUEPRINT_LOOSENABLE:
        return False
    if ref is None or ref.source != "script":
        return True
    from charter.compiler.resolve.script_plan import can_exec_or_write

    return ctx.script_perms is not None and not can_exec_or_write(ctx.script_perms)


def untrusted_server_clamp(
    ctx: AgentContext, name: str, ref: ToolRef | None, decision: Decision
) -> Decision:
    """A tool of a blueprint's own MCP server that the user has not trusted
    is refused: the server is never started or contacted."""
    server = ctx.server(ref.server) if ref is not None and ref.server else None
    if server is None:
        server = ctx.server_of_prefix(name)
    if server is None or server.name not in ctx.untrusted_servers:
        return decision
    clamp = Clamp(
        rule="blueprint-mcp-server-untrusted",
        before=decision.permission,
        after="deny",
        reason=f"MCP server '{server.name}' is declared by the blueprint and your config does "
        "not trust the blueprint's servers",
        source=span_ref(server.span("name")),
    )
    return Decision(
        permission="deny", liftable=False, scopes=decision.scopes, clamps=(*decision.clamps, clamp)
    )
