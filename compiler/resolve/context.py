"""The per-agent state every resolution step reads, and small lookups on it.

:class:`AgentContext` holds one agent's loaded sources, the user's config,
the compile options and the diagnostics found so far; the helpers answer
what the core's ``tools.metadata`` says about a tool.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.frontends.blueprint import Blueprint, StageTable
from charter.compiler.frontends.config_toml import UserConfig
from charter.compiler.frontends.project import AgentSources
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.mcp.naming import mcp_safe_name
from charter.runtime.plan import Limits, ScriptPermissions, SourceRef

__all__ = [
    "AgentContext",
    "FAN_OUT",
    "RISKS",
    "SUBMIT",
    "shell_timeout",
    "span_ref",
    "tool_denied",
    "tool_enabled",
    "tool_metadata",
]

if TYPE_CHECKING:
    # Agent cores, MCP manifests and lock files are read only for agents
    # that have them; a blueprint-only project never imports their models.
    from charter.compiler.compile import CompileOptions
    from charter.compiler.frontends.agent_yaml import AgentCore
    from charter.compiler.frontends.script_tools import ScriptToolSource
    from charter.compiler.resolve.leviath_mcp import LeviathServer


RISKS = ("low", "medium", "high", "critical")
SUBMIT = "submit_output"
FAN_OUT = "fan_out"


def span_ref(span: Span) -> SourceRef:
    return _source_ref(span.path, span.line, span.col)


@functools.lru_cache(maxsize=65536)
def _source_ref(path: str, line: int, col: int) -> SourceRef:
    return SourceRef(path=path, line=line, col=col)


# Mutable compile state nothing compares by value: identity equality, which
# spares a generated __eq__ at every start-up.
@dataclass(eq=False)
class AgentContext:
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
    stage_models: dict[str, StageTable] = field(default_factory=dict)
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


def shell_timeout(ctx: AgentContext) -> int:
    """When the shell tool stops a command: the user config's
    ``[limits] script_shell_timeout_secs``, else the catalog's 60 s."""
    cfg = ctx.config
    return cfg.limits.script_shell_timeout_secs if cfg is not None else Limits().shell_timeout_secs


def tool_metadata(ctx: AgentContext, name: str) -> tuple[Any, tuple[str | int, ...]] | None:
    core = ctx.core
    if core is None:
        return None
    meta = core.tools.metadata.get(name)
    return (meta, ("tools", "metadata", name)) if meta is not None else None


def tool_denied(ctx: AgentContext, name: str) -> bool:
    """The core itself refuses the tool, so a missing grant is moot."""
    found = tool_metadata(ctx, name)
    return found is not None and found[0].approval_policy == "deny"


def tool_enabled(ctx: AgentContext, name: str) -> bool:
    found = tool_metadata(ctx, name)
    return not (found is not None and found[0].enabled is False)
