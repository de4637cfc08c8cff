"""Compiling a loaded project into a plan.

One pass per agent: collect its tools (built-in, authored, MCP) and check
their names; resolve capability grants; resolve every stage's tool set and
the permission of every offered tool, with provenance; render descriptions;
compile argument schemas; and carry stages, edges, limits and the shell
policy into the plan. Every problem becomes a diagnostic; a plan is produced
only when there is no error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from charter.compiler.describe import render_description, shell_hint_block
from charter.compiler.diagnostics import Diagnostic, Severity, Span, did_you_mean, format_key_path
from charter.compiler.emit_runtime import builtin_entry, redirect_write
from charter.compiler.frontends.base import salvage, server_id_from_path
from charter.compiler.frontends.blueprint import Blueprint
from charter.compiler.frontends.blueprint import Stage as StageModel
from charter.compiler.frontends.config_toml import UserConfig
from charter.compiler.frontends.project import AgentSources, Project
from charter.compiler.frontends.stage_toml import StageEntry, combine_stages
from charter.compiler.frontends.validation import thaw
from charter.compiler.permissions import (
    APPROVAL_TO_PERMISSION,
    CoreInputs,
    Said,
    ScopeInputs,
    resolve_permission,
)
from charter.compiler.rules import diag
from charter.compiler.schemacheck import check_schema, problem_path
from charter.compiler.sources.sourcemap import SourceMap
from charter.compiler.tooltable import ToolRef, ToolTable, all_builtin_names
from charter.runtime.capabilities import SECRET_PREFIX, grant_covers, is_granted, valid_capability
from charter.runtime.catalog import (
    BLUEPRINT_LOOSENABLE,
    TOOLSETS,
    impl_siblings,
    resolve_builtin,
)
from charter.runtime.env import forbidden_target
from charter.runtime.mcp.filters import select_tools, unmatched_patterns
from charter.runtime.naming import mcp_safe_name
from charter.runtime.plan import (
    AgentPlan,
    AuthoredTool,
    Clamp,
    Decision,
    Edge,
    FanOut,
    Gate,
    Grant,
    Limits,
    McpServerPlan,
    McpToolPin,
    OutputSpec,
    Permission,
    Plan,
    PlanBody,
    ScriptPermissions,
    ScriptTool,
    SourceDigest,
    SourceRef,
    Stage,
    StageTool,
    TaintPolicy,
    ToolEntry,
    canonical_json,
    stricter,
)
from charter.runtime.shell import ShellPolicy
from charter.runtime.version import VERSION

if TYPE_CHECKING:
    # Agent cores, MCP manifests and lock files are read only for agents
    # that have them; a blueprint-only project never imports their models.
    from charter.compiler.frontends.agent_yaml import AgentCore
    from charter.compiler.frontends.mcp_manifest import McpServer
    from charter.compiler.frontends.script_tools import ScriptToolSource
    from charter.compiler.leviath_mcp import LeviathServer
    from charter.runtime.mcp.lock import ServerLock

__all__ = ["CompileOptions", "CompileResult", "compile_project", "default_shell"]

_RISKS = ("low", "medium", "high", "critical")
_SUBMIT = "submit_output"
_FAN_OUT = "fan_out"


def compiler_version() -> str:
    return VERSION


def default_shell(target: str) -> str:
    """The shell the shell tool runs on ``target`` (seed 004's resolution)."""
    if target == "windows":
        return "cmd.exe /C"
    env_shell = os.environ.get("SHELL", "")
    if env_shell and Path(env_shell).name in ("sh", "bash", "zsh") and Path(env_shell).exists():
        return env_shell
    for candidate in ("/bin/bash", "/usr/bin/bash", "/bin/zsh", "/usr/bin/zsh", "/bin/sh"):
        if Path(candidate).exists():
            return candidate
    return "/bin/sh"


@dataclass(frozen=True)
class CompileOptions:
    """What the compiler targets: platform, shell and whether to render descriptions."""

    target_platform: Literal["posix", "windows"] = "windows" if sys.platform == "win32" else "posix"
    shell: str | None = None  # None: resolve for the target platform
    # Linting needs the decisions, not the model-facing text; skipping the
    # templates keeps jinja2 out of `charter validate`'s start-up.
    render_descriptions: bool = True


@dataclass
class CompileResult:
    """A compile's plan (None when any agent has errors), its diagnostics and agents."""

    plan: Plan | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Every agent that could be compiled, even when another has errors: the
    # linter checks them all in one run.
    agents: list[AgentPlan] = field(default_factory=list)


def _ref(span: Span) -> SourceRef:
    return _source_ref(span.path, span.line, span.col)


@functools.lru_cache(maxsize=65536)
def _source_ref(path: str, line: int, col: int) -> SourceRef:
    return SourceRef(path=path, line=line, col=col)


# ---------------------------------------------------------------------------
# per-agent context


@dataclass
class _Ctx:
    """Per-agent compile state: the loaded sources, user config and collected diagnostics."""

    agent: AgentSources
    config: UserConfig | None
    config_smap: SourceMap | None
    options: CompileOptions
    shell: str
    diags: list[Diagnostic] = field(default_factory=list)
    # Leviath script tools the agent has (its own, then the user's folder's
    # that it does not shadow), and its [[mcp_servers]] (blueprint and config).
    scripts: list[ScriptToolSource] = field(default_factory=list)
    servers: list[LeviathServer] = field(default_factory=list)
    untrusted_servers: frozenset[str] = frozenset()
    script_perms: ScriptPermissions | None = None
    stage_models: dict[str, StageModel] = field(default_factory=dict)
    user_scripts: list[ScriptToolSource] = field(default_factory=list)

    def server(self, name: str) -> LeviathServer | None:
        return next((s for s in self.servers if s.name == name), None)

    def server_of_prefix(self, name: str) -> LeviathServer | None:
        """The Leviath server a ``<server>__...`` name belongs to."""
        head, sep, _ = name.partition("__")
        if not sep:
            return None
        return next((s for s in self.servers if mcp_safe_name(s.name, "x")[:-3] == head), None)

    @property
    def core(self) -> AgentCore | None:
        return self.agent.core.model if self.agent.core else None

    @property
    def core_smap(self) -> SourceMap | None:
        return self.agent.core.smap if self.agent.core else None

    @property
    def blueprint(self) -> Blueprint | None:
        return self.agent.blueprint.model if self.agent.blueprint else None

    @property
    def bp_smap(self) -> SourceMap | None:
        return self.agent.blueprint.smap if self.agent.blueprint else None

    def agent_span(self) -> Span:
        if self.bp_smap is not None:
            return self.bp_smap.value_span(("agent",))
        if self.core_smap is not None:
            return self.core_smap.value_span(())
        return Span(self.agent.directory)


# ---------------------------------------------------------------------------
# tools


def _collect_tools(ctx: _Ctx, stages: Mapping[str, StageEntry], project_root: Path) -> ToolTable:
    table = ToolTable()
    core, csm = ctx.core, ctx.core_smap
    if core is not None and csm is not None:
        from charter.compiler.mcp_lock import lock_display, read_agent_lock, server_pins

        for i, toolset in enumerate(core.tools.toolsets):
            where = csm.value_span(("tools", "toolsets", i))
            for name in TOOLSETS.get(toolset, ()):
                table.add_builtin(name, where)
        for tool in ctx.agent.tools:
            table.add_authored(tool.tool_id, Span(tool.spec.display))
        lock = read_agent_lock(project_root, ctx.agent.directory)
        if lock.error is not None:
            ctx.diags.append(
                diag(
                    "mcp-lock-invalid",
                    f"{lock_display(ctx.agent.directory)}: {lock.error}",
                    Span(lock_display(ctx.agent.directory)),
                )
            )
        for loaded in ctx.agent.mcp:
            server = server_id_from_path(Path(loaded.display))
            m = loaded.model
            if m is None or not m.enabled:
                continue
            pins = server_pins(lock, server, project_root / loaded.display)
            if pins.stale is not None:
                ctx.diags.append(diag("mcp-lock-stale", pins.stale, Span(loaded.display)))
            if pins.entry is not None:
                _add_pinned_tools(ctx, table, server, m, loaded.smap, pins.entry)
                continue
            # Exact include entries name tools statically, so their
            # collisions are caught now; everything else is discovered when
            # the server connects.
            declared = [t for t in m.tools.include if "*" not in t and t not in m.tools.exclude]
            if declared:
                table.add_mcp_tools(server, declared, loaded.smap.value_span(("tools", "include")))
            table.add_dynamic_server(server, mcp_safe_name(server, "x")[:-1])
    # Script tools first: a script is the agent's own tool, even under a
    # built-in's name, so it must hold the name before the stages' built-ins.
    for script in ctx.scripts:
        table.add_script(script.name, script.where)
    _add_leviath_servers(ctx, table, project_root)
    # A blueprint offers built-ins by naming them in a stage.
    for entry in stages.values():
        for i, name in enumerate(entry.stage.available_tools):
            if table.holds_script(name):
                continue
            table.add_builtin(name, entry.span("available_tools", i))
        if entry.stage.mode == "output" or entry.stage.require_output:
            table.add_builtin(_SUBMIT, entry.span("mode"))
        if entry.stage.mode == "fan_out":
            table.add_builtin(_FAN_OUT, entry.span("mode"))
    ctx.diags.extend(table.diagnostics)
    return table


def _leviath_pins(ctx: _Ctx, server: LeviathServer, project_root: Path) -> ServerLock | None:
    from charter.compiler.leviath_mcp import entry_digest
    from charter.compiler.mcp_lock import read_agent_lock, server_pins_for

    read = read_agent_lock(project_root, ctx.agent.directory)
    return server_pins_for(read, server.name, entry_digest(server.model)).entry


def _add_leviath_servers(ctx: _Ctx, table: ToolTable, project_root: Path) -> None:
    """A locked [[mcp_servers]] entry's tools join the table by name; an
    unlocked one is discovered when it connects."""
    for server in ctx.servers:
        entry = _leviath_pins(ctx, server, project_root)
        if entry is not None and entry.tools:
            table.add_mcp_tools(server.name, [t.name for t in entry.tools], server.span("name"))
        else:
            table.add_dynamic_server(server.name, mcp_safe_name(server.name, "x")[:-1])


def _add_pinned_tools(
    ctx: _Ctx, table: ToolTable, server: str, m: McpServer, smap: SourceMap, entry: ServerLock
) -> None:
    """A locked server's tools, filtered, join the table like any other
    tool; a filter pattern that selects none of them is reported."""
    names = [t.name for t in entry.tools]
    for key in ("include", "exclude"):
        patterns = getattr(m.tools, key)
        for pattern in unmatched_patterns(patterns, names):
            i = patterns.index(pattern)
            ctx.diags.append(
                diag(
                    "mcp-filter-matches-nothing",
                    f"tools.{key} pattern '{pattern}' matches none of the tools locked for "
                    f"MCP server '{server}'",
                    smap.value_span(("tools", key, i)),
                    key_path=format_key_path(("tools", key, i)),
                )
            )
    selected = select_tools(names, m.tools.include, m.tools.exclude)
    if selected:
        where = smap.value_span(("tools", "include")) if m.tools.include else Span(smap.path)
        table.add_mcp_tools(server, selected, where)


def _mcp_entry(ctx: _Ctx, ref: ToolRef, project_root: Path) -> ToolEntry | None:
    """A tool entry for an MCP tool the compiler knows by name: with its
    pinned description and schema when the server is locked, else a bare
    entry whose schema arrives when the server connects."""
    from charter.compiler.mcp_lock import pinned_schema, read_agent_lock, server_pins

    loaded = next(
        (x for x in ctx.agent.mcp if server_id_from_path(Path(x.display)) == ref.server), None
    )
    if loaded is None and ref.server is not None and ctx.server(ref.server) is not None:
        return _leviath_mcp_entry(ctx, ref, project_root)
    if loaded is None or loaded.model is None or ref.server is None or ref.server_tool is None:
        return None
    m = loaded.model
    meta = _metadata(ctx, ref.name)
    risk = meta[0].risk if meta is not None and meta[0].risk is not None else m.risk
    pins = server_pins(
        read_agent_lock(project_root, ctx.agent.directory),
        ref.server,
        project_root / loaded.display,
    )
    pin = pins.entry.tool(ref.server_tool) if pins.entry is not None else None
    if pin is None:
        description, schema_text = "", None
        note = "not locked: the schema is known only when the server connects"
        mcp = McpToolPin(server=ref.server, tool=ref.server_tool)
    else:
        description = pin.description
        schema_text, note, rule = pinned_schema(pin.input_schema)
        if rule is not None:
            consequence = (
                "argument validation is off for this tool"
                if schema_text is None
                else "every call to this tool is refused"
            )
            ctx.diags.append(
                diag(
                    rule,
                    f"the locked schema of MCP tool '{ref.name}': {note}; {consequence}",
                    ref.where,
                )
            )
            if schema_text is not None:
                note = ""  # the text stays in the plan: the runtime refuses every call
        mcp = McpToolPin(
            server=ref.server,
            tool=ref.server_tool,
            description_sha256=pin.description_sha256,
            schema_sha256=pin.schema_sha256,
        )
    return ToolEntry(
        name=ref.name,
        source="mcp",
        impl=ref.server,
        description=description,
        input_schema=schema_text,
        validation_note=note,
        capability=m.call_capability(ref.server),
        risk=risk,
        origin=_ref(Span(loaded.display)),
        mcp=mcp,
    )


def _leviath_mcp_entry(ctx: _Ctx, ref: ToolRef, project_root: Path) -> ToolEntry | None:
    """A pinned tool of a [[mcp_servers]] entry: its locked description and
    schema, and Leviath's defaults for MCP tools (medium risk, ask)."""
    from charter.compiler.mcp_lock import pinned_schema

    server = ctx.server(ref.server or "")
    if server is None or ref.server_tool is None:
        return None
    entry = _leviath_pins(ctx, server, project_root)
    pin = entry.tool(ref.server_tool) if entry is not None else None
    if pin is None:
        return None
    schema_text, note, rule = pinned_schema(pin.input_schema)
    if rule is not None:
        consequence = (
            "argument validation is off for this tool"
            if schema_text is None
            else "every call to this tool is refused"
        )
        ctx.diags.append(
            diag(
                rule,
                f"the locked schema of MCP tool '{ref.name}': {note}; {consequence}",
                ref.where,
            )
        )
        if schema_text is not None:
            note = ""  # the text stays in the plan: the runtime refuses every call
    return ToolEntry(
        name=ref.name,
        source="mcp",
        impl=server.name,
        description=pin.description,
        input_schema=schema_text,
        validation_note=note,
        capability=f"mcp.call:{server.name}",
        risk="medium",
        origin=_ref(server.span("name")),
        mcp=McpToolPin(
            server=server.name,
            tool=ref.server_tool,
            description_sha256=pin.description_sha256,
            schema_sha256=pin.schema_sha256,
        ),
    )


def _script_entry(ctx: _Ctx, ref: ToolRef) -> ToolEntry | None:
    """A Leviath script tool: the schema its directives declare, the file it
    came from, and the defaults of a tool that is neither built-in nor MCP
    (ask; outbound, since a script can reach the network)."""
    tool = next((t for t in ctx.scripts if t.name == ref.name), None)
    if tool is None:
        return None
    schema_text, note = _schema_at(ctx, tool.input_schema, ref.where)
    return ToolEntry(
        name=tool.name,
        source="script",
        impl=tool.name,
        description=tool.description,
        input_schema=schema_text,
        validation_note=note,
        risk="medium",
        outbound=True,
        origin=_ref(ref.where),
        script=ScriptTool(
            path=tool.display,
            sha256=tool.sha256,
            scope="user" if tool.scope == "user" else "agent",
            override=tool.override,
        ),
    )


def _schema_at(ctx: _Ctx, schema: Any, where: Span) -> tuple[str | None, str]:
    """:func:`_schema` for a schema built from a file without a source map
    (a script's directives): a problem is reported at the file."""
    text = schema_text(thaw(schema))
    problem = _checked(text)
    if problem is None:
        return text, ""
    name, message = problem
    # As for every other schema (see _schema): one that does not compile stays
    # in the plan so the runtime refuses every call; only an external $ref
    # turns validation off.
    if name == "schema-does-not-compile":
        ctx.diags.append(diag(name, message + "; every call to this tool is refused", where))
        return text, ""
    ctx.diags.append(diag(name, message + "; argument validation is off for this tool", where))
    return None, message


def _shell_timeout(ctx: _Ctx) -> int:
    """When the shell tool stops a command: the user config's
    ``[limits] script_shell_timeout_secs``, else the catalog's 60 s."""
    cfg = ctx.config
    return cfg.limits.script_shell_timeout_secs if cfg is not None else Limits().shell_timeout_secs


def _metadata(ctx: _Ctx, name: str) -> tuple[Any, tuple[str | int, ...]] | None:
    core = ctx.core
    if core is None:
        return None
    meta = core.tools.metadata.get(name)
    return (meta, ("tools", "metadata", name)) if meta is not None else None


def _check_metadata_overrides(ctx: _Ctx, table: ToolTable) -> None:
    core, csm = ctx.core, ctx.core_smap
    if core is None or csm is None:
        return
    for name, meta in core.tools.metadata.items():
        path = ("tools", "metadata", name)
        ref = table.lookup(name)
        if ref is None:
            if not table.is_dynamic_mcp(name):
                hint = did_you_mean(name, table.tools)
                ctx.diags.append(
                    diag(
                        "unknown-tool",
                        f"tools.metadata names '{name}', which this agent does not have"
                        + (f"; did you mean '{hint}'?" if hint else ""),
                        csm.key_span(path),
                        key_path=format_key_path(path),
                    )
                )
            continue
        if ref.builtin is None:
            continue
        b = ref.builtin
        if meta.risk is not None and _RISKS.index(meta.risk) < _RISKS.index(b.risk):
            ctx.diags.append(
                diag(
                    "metadata-override-loosens",
                    f"risk '{meta.risk}' is lower than the built-in's '{b.risk}'; "
                    "core metadata may only raise it",
                    csm.value_span((*path, "risk")),
                    key_path=format_key_path((*path, "risk")),
                )
            )
        if meta.approval_policy is not None:
            mine = APPROVAL_TO_PERMISSION[meta.approval_policy]
            theirs = APPROVAL_TO_PERMISSION[b.approval]
            if stricter(mine, theirs) != mine:
                ctx.diags.append(
                    diag(
                        "metadata-override-loosens",
                        f"approval_policy '{meta.approval_policy}' is laxer than the built-in's "
                        f"'{b.approval}'; core metadata may only make it stricter",
                        csm.value_span((*path, "approval_policy")),
                        key_path=format_key_path((*path, "approval_policy")),
                    )
                )
        if meta.capability is not None and meta.capability != b.capability:
            ctx.diags.append(
                diag(
                    "metadata-override-loosens",
                    f"the built-in tool '{b.name}' requires '{b.capability}'; "
                    "a core cannot rename a built-in's capability",
                    csm.value_span((*path, "capability")),
                    key_path=format_key_path((*path, "capability")),
                )
            )


def _denied(ctx: _Ctx, name: str) -> bool:
    """The core itself refuses the tool, so a missing grant is moot."""
    found = _metadata(ctx, name)
    return found is not None and found[0].approval_policy == "deny"


def _enabled(ctx: _Ctx, name: str) -> bool:
    found = _metadata(ctx, name)
    return not (found is not None and found[0].enabled is False)


# ---------------------------------------------------------------------------
# capabilities


def _grants(ctx: _Ctx) -> list[Grant]:
    core, csm = ctx.core, ctx.core_smap
    if core is None or csm is None:
        return []
    out: list[Grant] = []

    def check(cap: str, path: tuple[str | int, ...], slot: str | None) -> None:
        span = csm.key_span(path)
        if cap.startswith(SECRET_PREFIX) and cap.endswith("*"):
            ctx.diags.append(
                diag(
                    "wildcard-secret-grant",
                    f"'{cap}' would bind every secret; grant each one by name",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return
        if not valid_capability(cap):
            ctx.diags.append(
                diag(
                    "unknown-capability",
                    f"'{cap}' is not a well-formed capability; only a whole last segment may "
                    "be '*'",
                    span,
                    key_path=format_key_path(path),
                    severity=None,
                )
            )
            return
        if cap.startswith(SECRET_PREFIX) and forbidden_target(cap[len(SECRET_PREFIX) :]):
            name = cap[len(SECRET_PREFIX) :]
            ctx.diags.append(
                diag(
                    "secret-binding-target-forbidden",
                    f"'{cap}' would bind a secret into {name}, which controls what runs; a "
                    "binding's target defaults to its source name",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return
        out.append(Grant(capability=cap, slot=slot, origin=_ref(span)))

    for cap in core.capabilities.defaults:
        check(cap, ("capabilities", "defaults", cap), None)
    for slot, caps in core.capabilities.slots.items():
        for cap in caps:
            check(cap, ("capabilities", "slots", slot, cap), slot)
    return out


def _granted(cap: str, grants: list[Grant], slot: str | None) -> bool:
    usable = [g.capability for g in grants if g.slot is None or g.slot == slot]
    return is_granted(cap, usable)


# Capabilities Charter's own gates check besides the tools' ones.
_GATE_PREFIXES = ("mcp.connect:", "mcp.call:", "secret.bind:", "tool.call:")


def _mcp_caps(ctx: _Ctx) -> list[str]:
    caps: list[str] = []
    for loaded in ctx.agent.mcp:
        if loaded.model is not None and loaded.model.enabled:
            server = server_id_from_path(Path(loaded.display))
            caps += [f"mcp.connect:{server}", loaded.model.capability or f"mcp.call:{server}"]
    return caps


def _unused_grants(
    ctx: _Ctx, grants: list[Grant], entries: Mapping[str, ToolEntry], extra: list[str]
) -> None:
    """A grant that covers no capability any tool or server of this agent
    requires grants nothing; it is usually a typo of one that is needed."""
    wanted = [e.capability for e in entries.values() if e.capability] + extra
    for e in entries.values():
        if e.authored is not None:
            wanted += list(e.authored.capabilities)
    for g in grants:
        cap = g.capability
        if cap.startswith(_GATE_PREFIXES) and cap.endswith(":*"):
            continue  # a deliberate family grant (tool.call:*, mcp.call:*)
        if cap.startswith("secret.bind:"):
            continue  # consumed by terminal calls, not by a tool definition
        if cap.startswith("agents.spawn:") and "delegate_task" in entries:
            continue  # delegate_task needs agents.spawn:<core> for the core it starts
        if any(grant_covers(cap, w) for w in wanted):
            continue
        hint = did_you_mean(cap, wanted)
        src = g.origin
        ctx.diags.append(
            diag(
                "unknown-capability",
                f"grant '{cap}' covers no capability a tool or server of this agent requires"
                + (f"; did you mean '{hint}'?" if hint else ""),
                Span(src.path, src.line, src.col) if src else ctx.agent_span(),
            )
        )


def _inert_blueprint_safe_commands(ctx: _Ctx) -> None:
    bp, bsm = ctx.blueprint, ctx.bp_smap
    if bp is None or bsm is None or bp.safe_commands is None:
        return
    cfg = ctx.config
    trusted = cfg is not None and (
        cfg.security.allow_blueprint_safe_commands
        or (
            bp.agent.name in cfg.agent_safe_commands
            and cfg.agent_safe_commands[bp.agent.name].allow_blueprint
        )
    )
    if not trusted:
        ctx.diags.append(
            diag(
                "blueprint-safe-commands-inert",
                "this blueprint's [safe_commands] take no effect until your config trusts them "
                f"([agent_safe_commands.{bp.agent.name}] allow_blueprint = true, or [security] "
                "allow_blueprint_safe_commands = true)",
                bsm.key_span(("safe_commands",)),
                key_path="safe_commands",
            )
        )


# ---------------------------------------------------------------------------
# tool entries


def _authored_entry(
    ctx: _Ctx, ref: ToolRef, grants: list[Grant], project_root: Path
) -> ToolEntry | None:
    from charter.compiler.authored import inspect_entrypoint

    src = next(t for t in ctx.agent.tools if t.tool_id == ref.authored_id)
    spec = src.spec.model
    if spec is None:
        return None
    smap = src.spec.smap
    slot_path = _slot_path(ctx, src.directory)
    if spec.capability is not None and not _granted(spec.capability, grants, slot_path):
        plural = (
            " (its own capabilities list cannot satisfy the gate)"
            if (spec.capability in spec.capabilities)
            else ""
        )
        ctx.diags.append(
            diag(
                "capability-not-granted",
                f"authored tool '{ref.name}' requires '{spec.capability}', which agent.yaml "
                f"does not grant{plural}",
                smap.value_span(("capability",)),
                key_path="capability",
                help=f"grant it under capabilities.defaults or capabilities.slots.{slot_path}",
            )
        )
    module_file, function = spec.entrypoint.split(":", 1)
    module_path = project_root / src.directory / f"{module_file.replace('.', '/')}.py"
    info, problem = inspect_entrypoint(module_path, function)
    if problem is not None:
        ctx.diags.append(
            diag(
                "authored-entrypoint-invalid",
                problem,
                smap.value_span(("entrypoint",)),
                key_path="entrypoint",
            )
        )
        return None
    assert info is not None
    schema_text, note = _schema(
        ctx, spec.input_schema or {"type": "object", "properties": {}}, smap, ("input_schema",)
    )
    meta = _metadata(ctx, ref.name)
    risk = spec.risk
    if meta is not None and meta[0].risk is not None:
        risk = meta[0].risk
    return ToolEntry(
        name=ref.name,
        source="authored",
        impl=ref.name,
        description=spec.description,
        input_schema=schema_text,
        validation_note=note,
        capability=spec.capability,
        risk=risk,
        origin=_ref(Span(src.spec.display)),
        authored=AuthoredTool(
            tool_id=ref.name,
            directory=src.directory,
            module=f"{src.directory}/{module_file.replace('.', '/')}.py",
            entrypoint=spec.entrypoint,
            module_sha256=info.sha256,
            capabilities=tuple(sorted(spec.capabilities)),
            is_async=info.is_async,
        ),
    )


def _slot_path(ctx: _Ctx, tool_dir_display: str) -> str:
    """The tool's path relative to the agent directory, as slot grants name it."""
    prefix = "" if ctx.agent.directory == "." else ctx.agent.directory + "/"
    return tool_dir_display.removeprefix(prefix)


def _builtin_entry(ctx: _Ctx, ref: ToolRef, output: StageModel | None) -> ToolEntry:
    b = ref.builtin
    assert b is not None
    meta = _metadata(ctx, b.name)
    risk = b.risk
    if meta is not None and meta[0].risk is not None:
        if _RISKS.index(meta[0].risk) > _RISKS.index(risk):
            risk = meta[0].risk
    spec = output.output if output is not None else None
    description = (
        render_description(
            b,
            shell=ctx.shell,
            platform=ctx.options.target_platform,
            output=spec,
            shell_timeout_secs=_shell_timeout(ctx),
        )
        if ctx.options.render_descriptions
        else b.description_template
    )
    return builtin_entry(b, description=description, risk=cast(Any, risk), origin=_ref(ref.where))


def _schema(
    ctx: _Ctx, schema: Any, smap: SourceMap | None, path: tuple[str | int, ...]
) -> tuple[str | None, str]:
    schema = thaw(schema)
    text = schema_text(schema)
    problem = _checked(text)
    if problem is None:
        return text, ""
    name, message = problem
    # A schema that does not compile stays in the plan, where the runtime
    # refuses every call to the tool (its arguments cannot be checked); only
    # a schema needing an external $ref turns validation off, since the
    # validator never fetches anything.
    fails_closed = name == "schema-does-not-compile"
    consequence = (
        "every call to this tool is refused"
        if fails_closed
        else "argument validation is off for this tool"
    )
    if smap is not None:
        ctx.diags.append(
            diag(
                name,
                f"{message}; {consequence}",
                smap.value_span((*path, *problem_path(schema))),
                key_path=format_key_path(path),
            )
        )
    if fails_closed:
        return text, ""
    return None, message


def schema_text(schema: Any) -> str:
    """A user's schema as canonical JSON text. It is a string inside the plan,
    so a fractional number in it (``minimum: 0.5``) is text, not a float in
    the plan body; whole floats are written as integers."""
    return json.dumps(_ints_only(schema), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@functools.cache
def _checked(text: str) -> tuple[str, str] | None:
    # Agents often share tools; check each distinct schema once.
    return check_schema(json.loads(text))


def _ints_only(value: Any) -> Any:
    """Plans hold no floats: a whole float in a schema becomes an int, any
    other float is kept as its decimal text in a string-free way the
    validator still accepts (rare; schemas use integers in practice)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: _ints_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_ints_only(v) for v in value]
    return value


# ---------------------------------------------------------------------------
# permissions


def _permission_map(
    perms: Mapping[str, str],
    smap: SourceMap,
    prefix: tuple[str | int, ...],
    table: ToolTable,
    ctx: _Ctx,
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
        if check_names and not known and "__" in key and not _declared_prefix(ctx, key):
            ctx.diags.append(
                diag(
                    "mcp-server-not-declared",
                    f"{scope} permission names '{key}', an MCP tool name, but no declared MCP "
                    "server has that prefix",
                    smap.key_span(path),
                    key_path=format_key_path(path),
                )
            )
        elif check_names and not known:
            hint = did_you_mean(key, [*table.tools, *all_builtin_names()])
            ctx.diags.append(
                diag(
                    "unknown-tool",
                    f"{scope} permission names '{key}', which is not a tool of this agent"
                    + (f"; did you mean '{hint}'?" if hint else ""),
                    smap.key_span(path),
                    key_path=format_key_path(path),
                )
            )
        said = Said(cast(Permission, value), _ref(smap.value_span(path)), f"{scope}: {key}")
        if name in out:
            ctx.diags.append(
                diag(
                    "duplicate-permission-spelling",
                    f"'{key}' and another spelling of '{name}' both set a permission; "
                    "the stricter applies",
                    smap.key_span(path),
                    key_path=format_key_path(path),
                )
            )
            said = Said(stricter(out[name].value, said.value), said.source, said.detail)
        out[name] = said
    return out


@dataclass
class _UserScopes:
    """What the user's config said about each tool, per scope, and blueprint trust."""

    config: dict[str, Said]
    agent_config: dict[str, Said]
    trust_blueprint: Said | None


def _user_scopes(ctx: _Ctx, table: ToolTable, agent_name: str) -> _UserScopes:
    cfg, smap = ctx.config, ctx.config_smap
    if cfg is None or smap is None:
        return _UserScopes({}, {}, None)
    # The user's config covers every agent, so unknown names are not errors
    # here: they may belong to another agent.
    config = _permission_map(
        cfg.tool_permissions,
        smap,
        ("tool_permissions",),
        table,
        ctx,
        "config",
        check_names=False,
    )
    overlay = cfg.agent_tool_permissions.get(agent_name, {})
    agent_config = _permission_map(
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
        trust = Said("allow", _ref(span), "allow_blueprint_permissions")
    return _UserScopes(config, agent_config, trust)


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


def _core_inputs(ctx: _Ctx, entry: ToolEntry, ref: ToolRef) -> CoreInputs | None:
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
            _ref(src.spec.smap.value_span(("approval_policy",))),
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
            _ref(manifest.smap.value_span(("approval_policy",))),
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
                        _ref(csm.value_span(path)),
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
            _ref(smap.value_span(path)),
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


def _default_permission(ref: ToolRef) -> Permission:
    if ref.builtin is not None:
        return ref.builtin.default_permission
    return "ask"  # authored and MCP tools: "everything else" asks


# ---------------------------------------------------------------------------
# stages


def _implicit_stage(ctx: _Ctx, table: ToolTable) -> dict[str, StageEntry]:
    """An agent core without a blueprint runs as one interactive stage that
    offers every tool the core declares."""
    names = tuple(n for n in table.tools if _enabled(ctx, n))
    # An unlocked MCP server's tools are known only at connect time; the
    # pattern lets the runtime offer what it discovers (each with an ask).
    names += tuple(prefix + "*" for prefix in sorted(table.dynamic_servers))
    # Cores run turn by turn with a person in the conversation.
    stage = StageModel.model_validate({"mode": "interactive", "available_tools": names})
    smap = ctx.core_smap or SourceMap(ctx.agent.directory)
    return {"main": StageEntry("main", stage, smap.path, smap, ("tools",))}


def _compile_stage(
    ctx: _Ctx,
    entry: StageEntry,
    table: ToolTable,
    entries: dict[str, ToolEntry],
    user: _UserScopes,
    agent_perms: dict[str, Said],
    stage_names: list[str],
) -> Stage:
    st = entry.stage
    offered: list[str] = []
    for i, raw in enumerate(st.available_tools):
        name = table.canonical(raw)
        if name in table.tools:
            if not _enabled(ctx, name):
                ctx.diags.append(
                    diag(
                        "tool-disabled",
                        f"'{name}' is disabled by tools.metadata and is not offered",
                        entry.span("available_tools", i),
                        key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                    )
                )
                continue
            if name in entries:
                offered.append(name)
        elif table.is_dynamic_mcp(raw):
            offered.append(raw)
        elif "__" in raw and not _declared_prefix(ctx, raw):
            # Leviath's lint skips MCP names: the server may be installed on
            # another machine. Nothing can answer the name here, so it is not
            # offered, and the warning says why.
            ctx.diags.append(
                diag(
                    "mcp-server-not-declared",
                    f"stage '{entry.name}' offers '{raw}', an MCP tool name, but no declared MCP "
                    "server has that prefix; the stage does not get it",
                    entry.span("available_tools", i),
                    key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                )
            )
        else:
            hint = did_you_mean(raw, [*table.tools, *all_builtin_names()])
            ctx.diags.append(
                diag(
                    "unknown-tool",
                    f"stage '{entry.name}' offers '{raw}', which is not a built-in, authored or "
                    "MCP tool" + (f"; did you mean '{hint}'?" if hint else ""),
                    entry.span("available_tools", i),
                    key_path=format_key_path(("stages", entry.name, "available_tools", i)),
                )
            )
    offered.extend(_connector_tools(ctx, entry, table, entries))
    if st.mode == "fan_out" and _FAN_OUT not in offered:
        offered.append(_FAN_OUT)  # mode = "fan_out" grants it
    if st.mode == "output" and _SUBMIT not in offered:
        offered.append(_SUBMIT)  # mode = "output" grants it
    elif st.require_output and _SUBMIT not in offered:
        ctx.diags.append(
            diag(
                "output-missing-submit-tool",
                f"stage '{entry.name}' requires an output but does not offer submit_output",
                entry.span("require_output"),
                key_path=format_key_path(("stages", entry.name, "require_output")),
            )
        )
    offered = list(dict.fromkeys(offered))

    required: list[str] = []
    for i, raw in enumerate(st.required_tools):
        name = table.canonical(raw)
        if name not in offered:
            ctx.diags.append(
                diag(
                    "required-tool-not-available",
                    f"'{raw}' is in required_tools but not in available_tools of stage "
                    f"'{entry.name}'",
                    entry.span("required_tools", i),
                    key_path=format_key_path(("stages", entry.name, "required_tools", i)),
                )
            )
        else:
            required.append(name)

    blocking = {n for n in offered if n in entries and entries[n].blocks_on_person}
    unattended = [n for n in offered if n not in blocking or n in required]

    stage_perms = _permission_map(
        st.tool_permissions,
        entry.smap,
        (*entry.prefix, "tool_permissions"),
        table,
        ctx,
        f"stage '{entry.name}'",
    )
    for name in stage_perms:
        if name not in offered and (name in table.tools or resolve_builtin(name) is not None):
            path = (*entry.prefix, "tool_permissions")
            key = next(k for k in st.tool_permissions if table.canonical(k) == name)
            ctx.diags.append(
                diag(
                    "orphan-stage-permission",
                    f"stage '{entry.name}' sets a permission for '{key}' but never offers it",
                    entry.smap.key_span((*path, key)),
                    key_path=format_key_path(("stages", entry.name, "tool_permissions", key)),
                )
            )

    decisions: list[StageTool] = []
    for name in offered:
        tool_entry = entries.get(name)
        ref = table.tools.get(name)
        core = _core_inputs(ctx, tool_entry, ref) if tool_entry and ref else None
        registry_default = core.registry if core is not None and ctx.blueprint is None else None
        scopes = ScopeInputs(
            builtin_default=(
                registry_default.value
                if registry_default is not None
                else _default_permission(ref)
                if ref
                else "ask"
            ),
            default_from=registry_default,
            stage=stage_perms.get(name),
            agent=agent_perms.get(name),
            agent_config=user.agent_config.get(name),
            config=user.config.get(name),
            blueprint_loosenable=_loosenable(ctx, name, ref),
            allow_blueprint_permissions=user.trust_blueprint,
        )
        decision = _untrusted_server_clamp(ctx, name, ref, resolve_permission(scopes, core))
        _report_clamps(ctx, decision, name, entry.name)
        decisions.append(StageTool(name=name, decision=decision))

    edges = tuple(_edge(ctx, entry, path, e, stage_names, table) for path, e in st.all_edges())
    edges += _implied_edges(entry, stage_names)
    output = None
    if st.output is not None:
        o = st.output
        output = OutputSpec(
            format=o.format,
            instructions=o.instructions,
            example=o.example,
            answer_schema=canonical_json(_ints_only(thaw(o.schema_))) if o.schema_ else None,
        )
    hint = None
    wants_hint = st.shell_hint if st.shell_hint is not None else _agent_hint(ctx)
    if wants_hint and "shell" in offered or wants_hint and "terminal" in offered:
        hint = shell_hint_block(ctx.options.target_platform)
    return Stage(
        name=entry.name,
        mode=st.mode or "autonomous",
        attended=tuple(offered),
        unattended=tuple(unattended),
        required_tools=tuple(required),
        allow_blocking_tools=st.allow_blocking_tools,
        allow_complete=bool(st.allow_complete),
        tools=tuple(decisions),
        edges=edges,
        max_iterations=st.max_iterations,
        max_revisits=st.max_revisits,
        output=output,
        shell_hint=hint,
        system_prompt=st.system_prompt,
        fan_out=_fan_out(ctx, entry, stage_names),
        origin=_ref(entry.span()),
        redirect_write=redirect_write(),
    )


def _declared_prefix(ctx: _Ctx, name: str) -> bool:
    """Whether ``<server>__...`` names a server this agent declares (a core
    manifest or a [[mcp_servers]] entry): its unknown tools are then typos."""
    head = name.partition("__")[0]
    servers = [server_id_from_path(Path(x.display)) for x in ctx.agent.mcp]
    servers += [s.name for s in ctx.servers]
    return any(mcp_safe_name(s, "x")[:-3] == head for s in servers)


def _loosenable(ctx: _Ctx, name: str, ref: ToolRef | None) -> bool:
    """The web_search / web_fetch exception to the blueprint clamp. It rests
    on those tools neither writing nor executing, which Charter's built-ins
    guarantee; a script tool of that name keeps it only while the agent's
    script permissions leave scripts unable to run a command or write."""
    if name not in BLUEPRINT_LOOSENABLE:
        return False
    if ref is None or ref.source != "script":
        return True
    from charter.compiler.script_plan import can_exec_or_write

    return ctx.script_perms is not None and not can_exec_or_write(ctx.script_perms)


def _untrusted_server_clamp(
    ctx: _Ctx, name: str, ref: ToolRef | None, decision: Decision
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
        source=_ref(server.span("name")),
    )
    return Decision(
        permission="deny", liftable=False, scopes=decision.scopes, clamps=(*decision.clamps, clamp)
    )


def _connector_tools(
    ctx: _Ctx, entry: StageEntry, table: ToolTable, entries: Mapping[str, ToolEntry]
) -> list[str]:
    """What ``available_connectors`` offers: every pinned tool of a locked
    server, or the ``<server>__*`` pattern of one discovered at run time."""
    out: list[str] = []
    for i, server_name in enumerate(entry.stage.available_connectors):
        server = ctx.server(server_name)
        core_manifest = any(
            server_id_from_path(Path(x.display)) == server_name for x in ctx.agent.mcp
        )
        if server is None and not core_manifest:
            declared = [s.name for s in ctx.servers]
            hint = did_you_mean(server_name, declared)
            ctx.diags.append(
                diag(
                    "mcp-server-not-declared",
                    f"stage '{entry.name}' names the connector '{server_name}', but neither the "
                    "blueprint nor your config declares an MCP server of that name"
                    + (f"; did you mean '{hint}'?" if hint else ""),
                    entry.span("available_connectors", i),
                    key_path=format_key_path(("stages", entry.name, "available_connectors", i)),
                )
            )
            continue
        pinned = sorted(
            n for n, r in table.tools.items() if r.server == server_name and n in entries
        )
        if pinned:
            out.extend(pinned)
        else:
            out.append(mcp_safe_name(server_name, "x")[:-1] + "*")
    return out


def _implied_edges(entry: StageEntry, stage_names: list[str]) -> tuple[Edge, ...]:
    """Leviath runs a stage that declares no transitions on into the next
    stage declared (the last one ends the run); a fan_out stage hands over
    to its merge_stage. Written into the plan as always-edges."""
    st = entry.stage
    # A stage that may end the run (an output stage, allow_complete) keeps
    # that ending: an always-edge would be taken before it could finish.
    if st.declares_edges or st.mode == "output" or st.allow_complete:
        return ()
    if st.mode == "fan_out" and st.merge_stage in stage_names:
        target: str | None = st.merge_stage
    else:
        at = stage_names.index(entry.name) if entry.name in stage_names else -1
        target = stage_names[at + 1] if 0 <= at < len(stage_names) - 1 else None
    if target is None:
        return ()
    return (Edge(to=target, condition="always", implied=True, origin=_ref(entry.span())),)


def _fan_out(ctx: _Ctx, entry: StageEntry, stage_names: list[str]) -> FanOut | None:
    """A fan_out stage's workers, checked as Leviath checks them when it
    loads the blueprint: one worker source, an existing worker stage that
    allows being one, an existing merge stage."""
    st = entry.stage
    if st.mode != "fan_out":
        return None
    where = entry.span("mode")
    path = format_key_path(("stages", entry.name))
    sources = [k for k in ("worker_agent", "worker_stage", "worker_query") if getattr(st, k)]
    if len(sources) != 1:
        said = ", ".join(sources) if sources else "none of them"
        ctx.diags.append(
            diag(
                "fan-out-invalid",
                f"fan_out stage '{entry.name}' must set exactly one of worker_agent, worker_stage "
                f"or worker_query (it sets {said})",
                entry.span(sources[1]) if len(sources) > 1 else where,
                key_path=path,
            )
        )
    if st.worker_stage is not None:
        target = ctx.stage_models.get(st.worker_stage)
        if st.worker_stage not in stage_names:
            hint = did_you_mean(st.worker_stage, stage_names)
            ctx.diags.append(
                diag(
                    "fan-out-invalid",
                    f"worker_stage '{st.worker_stage}' of fan_out stage '{entry.name}' is not a "
                    "stage" + (f"; did you mean '{hint}'?" if hint else ""),
                    entry.span("worker_stage"),
                    key_path=f"{path}.worker_stage",
                )
            )
        elif target is not None and not target.allow_as_worker:
            ctx.diags.append(
                diag(
                    "fan-out-invalid",
                    f"worker_stage '{st.worker_stage}' of fan_out stage '{entry.name}' does not "
                    "set allow_as_worker = true",
                    entry.span("worker_stage"),
                    key_path=f"{path}.worker_stage",
                )
            )
    if st.merge_stage is not None and st.merge_stage not in stage_names:
        hint = did_you_mean(st.merge_stage, stage_names)
        ctx.diags.append(
            diag(
                "fan-out-invalid",
                f"merge_stage '{st.merge_stage}' of fan_out stage '{entry.name}' is not a stage"
                + (f"; did you mean '{hint}'?" if hint else ""),
                entry.span("merge_stage"),
                key_path=f"{path}.merge_stage",
            )
        )
    return FanOut(
        worker_stage=st.worker_stage,
        worker_agent=st.worker_agent,
        worker_query=st.worker_query,
        merge_stage=st.merge_stage,
        results_region=st.results_region,
        max_workers=st.max_workers,
        max_items=st.max_items,
        max_attempts=st.max_attempts,
        on_worker_failure=st.on_worker_failure or "continue",
    )


def _agent_hint(ctx: _Ctx) -> bool:
    bp = ctx.blueprint
    if bp is not None and bp.agent.shell_hint is not None:
        return bp.agent.shell_hint
    return ctx.config.shell_hint if ctx.config is not None else True


def _report_clamps(ctx: _Ctx, decision: Decision, tool: str, stage: str) -> None:
    for clamp in decision.clamps:
        if clamp.rule == "core-approval-stricter":
            continue
        scope = next(
            (s for s in decision.scopes if s.scope in ("stage", "agent") and s.value is not None),
            None,
        )
        if scope is None or scope.source is None:
            continue
        src = scope.source
        ctx.diags.append(
            diag(
                "blueprint-permission-clamped",
                f"stage '{stage}': '{tool}' asked for {clamp.before} and became {clamp.after}: "
                f"{clamp.reason}",
                Span(src.path, src.line, src.col),
                key_path=scope.detail,
                data={"tool": tool, "stage": stage, "before": clamp.before, "after": clamp.after},
            )
        )


def _edge(
    ctx: _Ctx,
    entry: StageEntry,
    path: tuple[str | int, ...],
    e: Any,
    stage_names: list[str],
    table: ToolTable,
) -> Edge:
    if e.to not in stage_names:
        hint = did_you_mean(e.to, stage_names)
        ctx.diags.append(
            diag(
                "edge-to-unknown-stage",
                f"edge from '{entry.name}' leads to '{e.to}', which is not a stage"
                + (f"; did you mean '{hint}'?" if hint else ""),
                entry.span(*path, "to") if path[0] == "edges" else entry.span(*path, key=True),
                key_path=format_key_path(("stages", entry.name, *path)),
            )
        )
    gate = None
    if e.gate is not None:
        g = e.gate
        gate = Gate(
            require_modifications=g.require_modifications,
            require_regions=tuple(g.require_regions),
            require_region_updated=(g.require_region_updated,) if g.require_region_updated else (),
            require_no_open_items=(g.require_no_open_items,) if g.require_no_open_items else (),
            region=g.region,
            tools=tuple(table.canonical(t) for t in g.tools),
            message=g.message,
            max_attempts=g.max_attempts or 3,
        )
    condition = e.effective_condition
    return Edge(
        to=e.to,
        condition=condition,
        hint=e.hint,
        transform=e.transform,
        gate=gate,
        stuck_after_iterations=e.stuck_after_iterations,
        stuck_after_minutes=e.stuck_after_minutes,
        stuck_after_same_file_edits=e.stuck_after_same_file_edits,
        stuck_after_tool_calls=e.stuck_after_tool_calls,
        origin=_ref(entry.span(*path, key=True)),
    )


# ---------------------------------------------------------------------------
# MCP servers


def _mcp_servers(ctx: _Ctx, grants: list[Grant], project_root: Path) -> list[McpServerPlan]:
    out: list[McpServerPlan] = []
    if not ctx.agent.mcp:
        return out
    from charter.compiler.literal_secrets import literal_secrets
    from charter.compiler.mcp_lock import read_agent_lock, server_pins

    agent_dir = (project_root / ctx.agent.directory).resolve()
    for loaded in ctx.agent.mcp:
        m: McpServer | None = loaded.model
        if m is None or not m.enabled:
            continue
        server = server_id_from_path(Path(loaded.display))
        smap = loaded.smap
        if m.cwd is not None:
            target = (agent_dir / m.cwd).resolve()
            if target != agent_dir and agent_dir not in target.parents:
                ctx.diags.append(
                    diag(
                        "mcp-cwd-outside-workspace",
                        f"cwd '{m.cwd}' resolves outside the agent's directory",
                        smap.value_span(("cwd",)),
                        key_path="cwd",
                    )
                )
        for path, what in literal_secrets(env=m.env, headers=m.headers, url=m.url, args=m.args):
            ctx.diags.append(
                diag(
                    "hardcoded-secret",
                    f"{what}; write it as a ${{VAR}} reference and set VAR in the environment",
                    smap.value_span(path),
                    key_path=format_key_path(path),
                )
            )
        connect_cap = f"mcp.connect:{server}"
        call_cap = m.call_capability(server)
        for cap, what in ((connect_cap, "connect to"), (call_cap, "call tools of")):
            if not _granted(cap, grants, None):
                ctx.diags.append(
                    diag(
                        "capability-not-granted",
                        f"agent.yaml does not grant '{cap}', so the agent can never {what} "
                        f"MCP server '{server}'",
                        smap.value_span(()),
                        severity=Severity.WARNING,
                    )
                )
        approval = stricter("ask", APPROVAL_TO_PERMISSION[m.approval_policy])
        connect = Decision(permission=approval, liftable=approval == "ask")
        # The same test _collect_tools applies: an entry counts only when it
        # is current for this manifest (a stale one leaves the server dynamic).
        entry = server_pins(
            read_agent_lock(project_root, ctx.agent.directory),
            server,
            project_root / loaded.display,
        ).entry
        kept = (
            set(select_tools([t.name for t in entry.tools], m.tools.include, m.tools.exclude))
            if entry is not None
            else set()
        )
        pins = tuple(
            McpToolPin(
                server=server,
                tool=t.name,
                description_sha256=t.description_sha256,
                schema_sha256=t.schema_sha256,
            )
            for t in (entry.tools if entry is not None else ())
            if t.name in kept
        )
        out.append(
            m.server_plan(
                server,
                connect_decision=connect,
                locked=entry is not None,
                origin=_ref(Span(loaded.display)),
                pins=pins,
            )
        )
    return out


# ---------------------------------------------------------------------------
# the agent


def _skills_root(ctx: _Ctx) -> str | None:
    core = ctx.core
    if core is None:
        return None
    # slots.skills, else <surface_root>/skills: the folder the host reads.
    prefix = "" if ctx.agent.directory == "." else ctx.agent.directory + "/"
    return prefix + str(core.skills_root).strip("/")


def _shell_policy(ctx: _Ctx, agent_name: str) -> ShellPolicy:
    """The agent's shell policy: the user's [safe_commands], their
    [agent_safe_commands.<agent>] entries, and the blueprint's own
    [safe_commands] only when the user trusts them. Only the user's config
    switches the built-in read-only table."""
    from charter.compiler.shell_policy import compile_shell_policy

    cfg, csm = ctx.config, ctx.config_smap
    parts: list[ShellPolicy] = []

    def add(safe: Any, smap: SourceMap | None, prefix: tuple[str | int, ...]) -> None:
        policy, diags = compile_shell_policy(
            safe, source=smap.path if smap else "<none>", smap=smap, key_prefix=prefix
        )
        ctx.diags.extend(diags)
        parts.append(policy)

    add(cfg.safe_commands if cfg else None, csm, ("safe_commands",))
    per_agent = cfg.agent_safe_commands.get(agent_name) if cfg else None
    if per_agent is not None:
        from charter.compiler.frontends.config_toml import SafeCommands

        extra = SafeCommands(tools=per_agent.tools, shell=per_agent.shell)
        add(extra, csm, ("agent_safe_commands", agent_name))
    bp = ctx.blueprint
    trusted = cfg is not None and (
        cfg.security.allow_blueprint_safe_commands
        or (per_agent is not None and per_agent.allow_blueprint)
    )
    if bp is not None and bp.safe_commands is not None and trusted:
        add(bp.safe_commands, ctx.bp_smap, ("safe_commands",))
    elif bp is not None and bp.safe_commands is not None:
        # Inert, but checked: an entry that cannot mean what it shows is an
        # error whether or not anyone has trusted the block yet.
        _, inert_diags = compile_shell_policy(
            bp.safe_commands,
            source=ctx.bp_smap.path if ctx.bp_smap else "<none>",
            smap=ctx.bp_smap,
            key_prefix=("safe_commands",),
        )
        ctx.diags.extend(inert_diags)
    safe = tuple(dict.fromkeys(entry for p in parts for entry in p.safe))
    return ShellPolicy(defaults=parts[0].defaults, safe=safe)


def _compile_agent(ctx: _Ctx, project_root: Path, agent_name: str) -> AgentPlan | None:
    _salvage_invalid(ctx)
    bp, bsm = ctx.blueprint, ctx.bp_smap
    stages: dict[str, StageEntry] = {}
    if ctx.agent.blueprint is not None:
        if bp is None:
            return None  # nothing of the blueprint could be read
        stages, _dups = combine_stages(ctx.agent.blueprint, list(ctx.agent.stage_files))
    if ctx.agent.core is not None and ctx.core is None:
        return None
    ctx.stage_models = {name: e.stage for name, e in stages.items()}
    if bp is not None:
        from charter.compiler.leviath_checks import blueprint_refusals

        ctx.diags.extend(blueprint_refusals(bp, stages))
    _leviath_sources(ctx, stages, agent_name)
    table = _collect_tools(ctx, stages, project_root)
    _check_metadata_overrides(ctx, table)
    grants = _grants(ctx)

    # Tool entries, in name order.
    entries: dict[str, ToolEntry] = {}
    output_stage = next((e.stage for e in stages.values() if e.stage.mode == "output"), None)
    for name in sorted(table.tools):
        ref = table.tools[name]
        if ref.source == "builtin":
            entries[name] = _builtin_entry(ctx, ref, output_stage)
            if ctx.core is not None and entries[name].capability is not None:
                cap = entries[name].capability
                assert cap is not None
                if (
                    not _granted(cap, grants, None)
                    and _enabled(ctx, name)
                    and not _denied(ctx, name)
                ):
                    ctx.diags.append(
                        diag(
                            "capability-not-granted",
                            f"built-in tool '{name}' needs '{cap}', which agent.yaml does not "
                            "grant; every call would be refused",
                            ref.where,
                            severity=Severity.WARNING,
                        )
                    )
        elif ref.source == "authored":
            authored = _authored_entry(ctx, ref, grants, project_root)
            if authored is not None:
                entries[name] = authored
        elif ref.source == "mcp":
            pinned = _mcp_entry(ctx, ref, project_root)
            if pinned is not None:
                entries[name] = pinned
        elif ref.source == "script":
            script = _script_entry(ctx, ref)
            if script is not None:
                entries[name] = script

    _unused_grants(ctx, grants, entries, _mcp_caps(ctx))
    _inert_blueprint_safe_commands(ctx)
    if not stages:
        stages = _implicit_stage(ctx, table)
    stage_names = list(stages)

    user = _user_scopes(ctx, table, agent_name)
    agent_perms: dict[str, Said] = {}
    if bp is not None and bsm is not None:
        agent_perms = _permission_map(
            bp.tool_permissions, bsm, ("tool_permissions",), table, ctx, "agent"
        )

    if ctx.scripts:
        ctx.script_perms = _script_permissions(ctx, stages, table, user, agent_perms)

    compiled = [
        _compile_stage(ctx, e, table, entries, user, agent_perms, stage_names)
        for e in stages.values()
    ]
    from charter.compiler.sandbox import plan_sandboxes

    compiled, agent_sandbox, sandbox_diags = plan_sandboxes(
        ctx.config, ctx.config_smap, bp, bsm, stages, compiled
    )
    ctx.diags.extend(sandbox_diags)

    entry_stage = stage_names[0]
    if bp is not None and bp.agent.entry_stage is not None and bsm is not None:
        entry_stage = bp.agent.entry_stage
        if entry_stage not in stages:
            hint = did_you_mean(entry_stage, stage_names)
            ctx.diags.append(
                diag(
                    "entry-stage-unknown",
                    f"entry_stage '{entry_stage}' is not a stage"
                    + (f"; did you mean '{hint}'?" if hint else ""),
                    bsm.value_span(("agent", "entry_stage")),
                    key_path="agent.entry_stage",
                )
            )

    offered_anywhere = {n for s in compiled for n in s.attended}
    tools = tuple(entries[n] for n in sorted(entries) if n in offered_anywhere)
    mcp = _mcp_servers(ctx, grants, project_root) + _leviath_server_plans(ctx, project_root)

    cfg = ctx.config
    limits = Limits()
    if cfg is not None:
        limits = Limits(
            interaction_timeout_secs=cfg.limits.interaction_timeout_secs,
            shell_timeout_secs=_shell_timeout(ctx),
            model_request_timeout_secs=cfg.request_timeout_secs,
            default_max_iterations=cfg.limits.default_max_iterations,
            max_tool_call_write_bytes=cfg.limits.max_tool_call_write_bytes,
            max_run_write_bytes=cfg.limits.max_run_write_bytes,
        )
    if bp is not None and bp.agent.max_child_depth is not None:
        limits = limits.model_copy(update={"max_child_depth": bp.agent.max_child_depth})
    taint_on = bool(cfg and cfg.taint_tracking) or bool(
        bp is not None and bp.security is not None and bp.security.taint_tracking
    )

    shell_policy = _shell_policy(ctx, agent_name)
    kind: Literal["blueprint", "core", "combined"] = (
        "combined"
        if ctx.core is not None and bp is not None
        else "core"
        if bp is None
        else "blueprint"
    )
    return AgentPlan(
        name=agent_name,
        kind=kind,
        root=ctx.agent.directory,
        entry_stage=entry_stage,
        tools=tools,
        stages=tuple(compiled),
        grants=tuple(sorted(grants, key=lambda g: (g.slot or "", g.capability))),
        mcp_servers=tuple(mcp),
        shell=shell_policy,
        limits=limits,
        taint=TaintPolicy(enabled=taint_on),
        allow_local_network=bool(cfg and cfg.security.allow_local_network),
        allow_env_vars=tuple(sorted(cfg.security.allow_env_vars)) if cfg else (),
        skills_root=_skills_root(ctx),
        script_permissions=ctx.script_perms,
        sandbox=agent_sandbox,
        origin=_ref(ctx.agent_span()),
    )


def _leviath_sources(ctx: _Ctx, stages: Mapping[str, StageEntry], agent_name: str) -> None:
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
    from charter.compiler.leviath_mcp import (
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


def _script_permissions(
    ctx: _Ctx,
    stages: Mapping[str, StageEntry],
    table: ToolTable,
    user: _UserScopes,
    agent_perms: dict[str, Said],
) -> ScriptPermissions:
    """[tool_script_permissions], with inherit resolved against the entry
    stage's decision for the matching built-in."""
    from charter.compiler.script_plan import effective_script_permissions

    bp = ctx.blueprint
    entry_name = bp.entry if bp is not None else None
    entry = stages.get(entry_name) if entry_name else None
    stage_perms: dict[str, Said] = {}
    if entry is not None:
        # A scratch context: the entry stage's map is compiled again with the
        # stage, and its findings (a doubled spelling) belong to that pass.
        scratch = _Ctx(ctx.agent, ctx.config, ctx.config_smap, ctx.options, ctx.shell)
        stage_perms = _permission_map(
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


def _leviath_server_plans(ctx: _Ctx, project_root: Path) -> list[McpServerPlan]:
    from charter.compiler.leviath_mcp import to_server_plan

    out: list[McpServerPlan] = []
    for srv in ctx.servers:
        entry = _leviath_pins(ctx, srv, project_root)
        if srv.name in ctx.untrusted_servers:
            connect = Decision(
                permission="deny",
                liftable=False,
                clamps=(
                    Clamp(
                        rule="blueprint-mcp-server-untrusted",
                        before="ask",
                        after="deny",
                        reason="declared by the blueprint; your config does not trust it",
                        source=_ref(srv.span("name")),
                    ),
                ),
            )
        else:
            connect = Decision(permission="ask", liftable=True)
        pins = tuple(
            McpToolPin(
                server=srv.name,
                tool=t.name,
                description_sha256=t.description_sha256,
                schema_sha256=t.schema_sha256,
            )
            for t in (entry.tools if entry is not None else ())
        )
        out.append(
            to_server_plan(
                srv,
                connect=connect,
                locked=entry is not None,
                pins=pins,
                origin=_ref(srv.span("name")),
            )
        )
    return out


def _salvage_invalid(ctx: _Ctx) -> None:
    """Files that failed validation keep their errors, but what is valid in
    them is still checked (see :func:`salvage`)."""
    agent = ctx.agent
    bp = agent.blueprint
    if bp is not None and bp.model is None and bp.raw is not None:
        model = salvage(Blueprint, bp.raw)
        if model is not None:
            agent = dataclasses.replace(agent, blueprint=dataclasses.replace(bp, model=model))
    core = agent.core
    if core is not None and core.model is None and core.raw is not None:
        from charter.compiler.frontends.agent_yaml import AgentCore

        cmodel = salvage(AgentCore, core.raw)
        if cmodel is not None:
            agent = dataclasses.replace(agent, core=dataclasses.replace(core, model=cmodel))
    ctx.agent = agent


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector. A compile allocates many small
    objects and frees almost none; full collections triggered along the way
    cost more than the compile itself on large projects (measured 3x)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_project(project: Project, options: CompileOptions | None = None) -> CompileResult:
    with no_gc():
        return _compile_project(project, options)


def _compile_project(project: Project, options: CompileOptions | None) -> CompileResult:
    options = options or CompileOptions()
    shell = options.shell or default_shell(options.target_platform)
    diags: list[Diagnostic] = []
    agents: list[AgentPlan] = []
    config = project.config.model if project.config else None
    config_smap = project.config.smap if project.config else None
    seen: set[str] = set()
    for agent in project.agents:
        name = agent.name
        if name in seen:
            continue  # reported by the project loader
        seen.add(name)
        ctx = _Ctx(agent, config, config_smap, options, shell)
        ctx.user_scripts = list(project.user_scripts)
        plan = _compile_agent(ctx, project.root, name)
        diags.extend(ctx.diags)
        if plan is not None:
            agents.append(plan)
    all_diags = [*project.diagnostics, *diags]
    if any(d.is_error for d in all_diags) or not agents:
        return CompileResult(None, diags, agents)
    body = PlanBody(
        compiler_version=compiler_version(),
        target_platform=options.target_platform,
        shell=shell,
        agents=tuple(sorted(agents, key=lambda a: a.name)),
        sources=tuple(SourceDigest(path=p, sha256=d) for p, d in sorted(project.digests.items())),
    )
    return CompileResult(Plan.seal(body), diags, agents)
