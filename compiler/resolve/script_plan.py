"""Script tools in the plan: their entries, and ``[tool_script_permissions]``.

A script tool's entry carries the argument schema its directives declare, the
file it was read from (path and sha256, so a decision is tied to the file it
was made about) and Leviath's defaults for a tool that is neither a built-in
nor an MCP tool: ``ask`` unless configured, data-flow outbound (a script can
reach the network), never counted as work.

``[tool_script_permissions]`` limits what a script may do through each host
function (http_get, http_post, shell, read_file, write_file, env_var): allow,
deny, or inherit (defer to the agent's own decision for the matching
built-in). The user's config sets the ceiling; a blueprint may only tighten it
(allow < inherit < deny), and a looser value is clamped and reported. For
shell, read_file and write_file, ``inherit`` is resolved once against the
entry stage, as Leviath does; the http and env functions have no built-in to
inherit from, so inherit permits them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.frontends.config_toml import ToolScriptPermissions
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.plan import Permission, ScriptPermission, ScriptPermissions, SourceRef

__all__ = ["FUNCTIONS", "can_exec_or_write", "effective_script_permissions"]

FUNCTIONS: tuple[str, ...] = (
    "http_get",
    "http_post",
    "shell",
    "read_file",
    "write_file",
    "env_var",
)
# The host functions whose "inherit" defers to a built-in tool's decision.
_INHERITS_FROM = {"shell": "shell", "read_file": "read_file", "write_file": "write_file"}
_RANK = {"allow": 0, "inherit": 1, "deny": 2}


def _ref(span: Span) -> SourceRef:
    return SourceRef(path=span.path, line=span.line, col=span.col)


def effective_script_permissions(
    config: ToolScriptPermissions | None,
    config_smap: SourceMap | None,
    blueprint: ToolScriptPermissions | None,
    blueprint_smap: SourceMap | None,
    resolve: Callable[[str], Permission],
) -> tuple[ScriptPermissions, list[Diagnostic]]:
    """The permissions script tools of one agent run under. ``resolve`` gives
    the agent's decision for a built-in tool at its entry stage."""
    diags: list[Diagnostic] = []
    out: dict[str, ScriptPermission] = {}
    for fn in FUNCTIONS:
        value: str = "inherit"
        source: SourceRef | None = None
        detail = "default"
        if config is not None and fn in config.model_fields_set and config_smap is not None:
            value = getattr(config, fn)
            source = _ref(config_smap.value_span(("tool_script_permissions", fn)))
            detail = "config"
        if blueprint is not None and fn in blueprint.model_fields_set and blueprint_smap:
            asked: str = getattr(blueprint, fn)
            where = blueprint_smap.value_span(("tool_script_permissions", fn))
            if _RANK[asked] >= _RANK[value]:
                if asked != value or detail == "default":
                    value, source, detail = asked, _ref(where), "blueprint"
            else:
                diags.append(
                    diag(
                        "script-permission-clamped",
                        f'the blueprint sets script {fn} = "{asked}", looser than the '
                        f'"{value}" of {"your config" if detail == "config" else "the default"}; '
                        f'"{value}" applies',
                        where,
                        key_path=f"tool_script_permissions.{fn}",
                    )
                )
        out[fn] = ScriptPermission(
            value=_literal(value),
            source=source,
            detail=detail,
            effective=_effective(fn, value, resolve),
        )
    return ScriptPermissions(**out), diags


def _literal(value: str) -> Literal["allow", "deny", "inherit"]:
    if value == "allow":
        return "allow"
    if value == "deny":
        return "deny"
    return "inherit"


def _effective(
    fn: str, value: str, resolve: Callable[[str], Permission]
) -> Literal["allow", "deny"]:
    if value == "allow":
        return "allow"
    if value == "deny":
        return "deny"
    builtin = _INHERITS_FROM.get(fn)
    if builtin is None:
        return "allow"
    return "allow" if resolve(builtin) == "allow" else "deny"


def can_exec_or_write(perms: ScriptPermissions) -> bool:
    """Whether a script of this agent could run a command or write a file.
    Only a script that can do neither may keep a blueprint's looser value
    under the web_search / web_fetch exception, which exists because those
    tools can neither write nor execute."""
    return perms.shell.effective != "deny" or perms.write_file.effective != "deny"
