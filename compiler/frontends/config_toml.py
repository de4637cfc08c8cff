"""The user's own ``config.toml``: the machine-wide ceiling every blueprint is
clamped against.

This file is the one place a person says what agents may do on their machine,
so it is read strictly: an unknown key is an error (with a suggestion), and
every permission must be exactly ``allow``, ``ask`` or ``deny``. A lax reader
would let ``[tool_permision]`` or ``shel = "deny"`` vanish without a word, and
the refusal the person wrote would never happen.

Keys that Leviath's config accepts but Charter has no use for (provider keys,
webhooks, observability, ...) are accepted and kept opaque, so a real
Leviath config loads without noise.

The safe-command models here are shared with the blueprint front-end.
"""

import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.base import Loaded, load_document
from charter.compiler.frontends.validation import InputModel
from charter.runtime.plan.vocabulary import Permission

__all__ = [
    "AgentMcpServers",
    "AgentSafeCommands",
    "LimitsTable",
    "McpServer",
    "Permission",
    "PermissionMap",
    "ReadPaths",
    "SafeCommands",
    "SafeShellEntry",
    "SandboxLimitsTable",
    "SandboxTable",
    "ScriptPermission",
    "SecurityConfig",
    "ShellItem",
    "ToolScriptPermissions",
    "UserConfig",
    "default_config_path",
    "explain_misplaced_keys",
    "load_default_user_config",
    "load_user_config",
]

PermissionMap = dict[str, Permission]
ScriptPermission = Literal["allow", "deny", "inherit"]


class SafeShellEntry(InputModel):
    """A shell prefix with its own self-test: commands it must cover and
    commands it must not, checked when the policy is compiled."""

    command: str
    match: tuple[str, ...] = ()  # example commands the entry must cover (checked at compile time)
    not_match: tuple[str, ...] = ()  # example commands it must not cover
    justification: str | None = None
    # Charter's own keys: ``exact`` covers the command with no further
    # arguments; ``client_rule`` names the coding client's permission rule the
    # entry carries (``charter init`` writes it), which lets a blueprint's
    # entry take effect while that rule stays in the client's settings.
    exact: bool = False
    client_rule: str | None = None


def _shell_item_kind(value: Any) -> str:
    # Choosing the branch by the value's shape keeps pydantic from reporting
    # one error per union member ("not a string" *and* "missing 'command'").
    # The tag names are ones the diagnostic mapper already strips from paths.
    if isinstance(value, dict | SafeShellEntry):
        return "dict"
    return "str"


ShellItem = Annotated[
    Annotated[str, Tag("str")] | Annotated[SafeShellEntry, Tag("dict")],
    Discriminator(_shell_item_kind),
]


class SafeCommands(InputModel):
    defaults: bool = True  # the built-in read-only table on/off
    tools: tuple[str, ...] = ()
    # ShellItem is ``str | SafeShellEntry`` to a type checker.
    shell: tuple[ShellItem, ...] = ()


class AgentSafeCommands(InputModel):
    """``[agent_safe_commands.<agent>]``: additions for one agent, and whether
    that agent's own ``[safe_commands]`` block is honoured."""

    tools: tuple[str, ...] = ()
    shell: tuple[ShellItem, ...] = ()
    allow_blueprint: bool = False


class AgentMcpServers(InputModel):
    """``[agent_mcp_servers.<agent>]``: whether that agent's own
    ``[[mcp_servers]]`` may be started or contacted (Charter's opt-in)."""

    allow_blueprint: bool = False


class ToolScriptPermissions(InputModel):
    """What a script tool may do through its host functions. ``inherit``
    defers to the policy of the matching built-in tool."""

    http_get: ScriptPermission = "inherit"
    http_post: ScriptPermission = "inherit"
    shell: ScriptPermission = "inherit"
    read_file: ScriptPermission = "inherit"
    write_file: ScriptPermission = "inherit"
    env_var: ScriptPermission = "inherit"


class ReadPaths(InputModel):
    """Paths outside the workdir: exact paths, ``glob:`` or ``regex:``."""

    allow: tuple[str, ...] = ()


class SecurityConfig(InputModel):
    allowed_workdirs: tuple[str, ...] = ()
    allow_seed_commands: bool = True
    allow_local_network: bool = False
    allow_env_vars: tuple[str, ...] = ()
    allow_blueprint_read_paths: bool = False
    allow_blueprint_safe_commands: bool = False
    allow_blueprint_permissions: bool = False
    lock_permission_files: bool = True
    shell_env: Literal["filtered", "strict", "custom", "inherit"] = "filtered"
    shell_env_withhold: tuple[str, ...] = ()
    read_paths: tuple[str, ...] = ()
    credential_store: Literal["file", "keychain"] = "file"
    # Charter's own switch (Leviath has none): a blueprint's [[mcp_servers]]
    # are started or contacted only when the user trusts them.
    allow_blueprint_mcp_servers: bool = False


class LimitsTable(InputModel):
    # 0 means "wait forever"; an expired prompt is a refusal, never consent.
    interaction_timeout_secs: Annotated[int, Field(ge=0)] = 3600
    # The shell tool's time limit (plan limits.shell_timeout_secs). Unlike the
    # prompt wait, a command is always bounded: 0 is not "no limit".
    script_shell_timeout_secs: Annotated[int, Field(ge=1)] = 60
    default_max_iterations: Annotated[int, Field(ge=1)] = 50
    # Unset means no budget; Leviath's setup writes values, its code has none.
    max_tool_call_write_bytes: Annotated[int, Field(ge=0)] | None = None
    max_run_write_bytes: Annotated[int, Field(ge=0)] | None = None
    mcp_idle_disconnect_secs: Annotated[int, Field(ge=0)] | None = None
    # Scheduler knobs Leviath reads; accepted so real configs load, unused here.
    max_concurrent_inferences: Annotated[int, Field(ge=1)] | None = None
    max_concurrent_tools: Annotated[int, Field(ge=1)] | None = None
    exact_token_counting: bool | None = None
    stall_timeout_secs: Annotated[int, Field(ge=0)] | None = None
    dead_cycles_before_relief: Annotated[int, Field(ge=0)] | None = None
    finished_retention_secs: Annotated[int, Field(ge=0)] | None = None
    wedge_timeout_secs: Annotated[int, Field(ge=0)] | None = None
    provider_failures_before_open: Annotated[int, Field(ge=1)] | None = None
    provider_circuit_cooldown_secs: Annotated[int, Field(ge=0)] | None = None
    inference_retry_attempts: Annotated[int, Field(ge=0)] | None = None
    inference_retry_base_ms: Annotated[int, Field(ge=0)] | None = None
    # Per model / per provider caps on concurrent inferences.
    max_concurrent_inferences_by_model: dict[str, Annotated[int, Field(ge=1)]] = {}
    max_concurrent_inferences_by_provider: dict[str, Annotated[int, Field(ge=1)]] = {}


def _network_kind(value: Any) -> str:
    # One branch per shape, so a bad value gets one error, not one per member.
    return "bool" if isinstance(value, bool) else "str"


SandboxNetwork = Annotated[
    Annotated[bool, Tag("bool")] | Annotated[Literal["none", "proxy"], Tag("str")],
    Discriminator(_network_kind),
]
_PositiveInt = Annotated[int, Field(ge=1)]


class SandboxLimitsTable(InputModel):
    """``[sandbox.limits]``: bounds for each contained command."""

    processes: _PositiveInt | None = None
    memory_mb: _PositiveInt | None = None
    cpu_seconds: _PositiveInt | None = None
    open_files: _PositiveInt | None = None
    file_size_mb: _PositiveInt | None = None


class SandboxTable(InputModel):
    """``[sandbox]``: where commands run (the user's config, a blueprint, or
    one stage). Leviath's keys (``kind``, ``image``, ``engine``, ``network``,
    ``mount``/``mounts``, ``persist``, ``on_unavailable``) plus Charter's own.
    Read strictly: a misspelled ``network`` must not quietly leave a sandbox
    online. A blueprint's table may only tighten the user's (see
    ``charter.compiler.resolve.sandbox``)."""

    kind: Literal["none", "namespace", "container"] | None = None
    image: str | None = None
    engine: Literal["docker", "podman", "nerdctl", "finch"] | None = None
    # false or "none": no network; true or "proxy": only through Charter's
    # proxy, which applies the URL policy and allow_hosts.
    network: SandboxNetwork | None = None
    allow_hosts: tuple[str, ...] | None = None
    # Leviath reads ``mount`` in a blueprint and ``mounts`` in the config;
    # both are accepted everywhere. Entries: "PATH", "PATH:ro" or "PATH:rw".
    mount: tuple[str, ...] = ()
    mounts: tuple[str, ...] = ()
    persist: bool | None = None
    on_unavailable: Literal["error", "warn"] | None = None
    # Charter: the workspace writable (default) or read-only; more paths to
    # hide or keep read-only; which asks the sandbox answers (auto_allow
    # groups: outside, network, code); resource limits.
    workspace: Literal["write", "read"] | None = None
    hide: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    auto_allow: tuple[Literal["outside", "network", "code"], ...] | None = None
    limits: SandboxLimitsTable | None = None


class McpServer(InputModel):
    """One ``[[mcp_servers]]`` entry. ``${VAR}`` in ``env`` and ``headers`` is
    expanded at connect time, not here."""

    name: Annotated[str, Field(min_length=1)]
    transport: Literal["stdio", "http"] | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}


class UserConfig(InputModel):
    # Prompt hints and the global taint switch.
    shell_hint: bool = True
    batch_tool_hint: bool = True
    taint_tracking: bool = False
    # Tools allowed outright: the file form of a repeated --allow flag.
    allow: tuple[str, ...] = ()

    tool_permissions: PermissionMap = {}
    agent_tool_permissions: dict[str, PermissionMap] = {}
    security: SecurityConfig = SecurityConfig()
    safe_commands: SafeCommands = SafeCommands()
    agent_safe_commands: dict[str, AgentSafeCommands] = {}
    tool_script_permissions: ToolScriptPermissions = ToolScriptPermissions()
    agent_read_paths: dict[str, ReadPaths] = {}
    limits: LimitsTable = LimitsTable()
    mcp_servers: tuple[McpServer, ...] = ()
    agent_mcp_servers: dict[str, AgentMcpServers] = {}

    # Leviath settings with no bearing on tool policy: accepted, kept opaque.
    default_provider: str | None = None
    default_model: str | None = None
    agent_paths: tuple[str, ...] = ()
    openrouter_api_key: str | None = None
    ollama_base_url: str | None = None
    request_timeout_secs: Annotated[int, Field(ge=1)] | None = None
    providers: dict[str, Any] | None = None
    webhook: dict[str, Any] | None = None
    observability: dict[str, Any] | None = None
    nudge: dict[str, Any] | None = None
    title: dict[str, Any] | None = None
    sandbox: SandboxTable | None = None
    rate_limits: dict[str, Any] | None = None
    model_capabilities: dict[str, Any] | None = None
    model_providers: dict[str, Any] | None = None


def default_config_path() -> Path:
    """Where the user's config lives when no path is given:
    ``$CHARTER_CONFIG``, else ``$XDG_CONFIG_HOME/charter/config.toml``, else
    ``~/.config/charter/config.toml``. The file may not exist; callers treat a
    missing default file as "no user config"."""
    explicit = os.environ.get("CHARTER_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    # The XDG spec says a relative value is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "charter" / "config.toml"
    return Path.home() / ".config" / "charter" / "config.toml"


_UNKNOWN = re.compile(r"unknown key '([^']*)'")


def explain_misplaced_keys(
    diags: Sequence[Diagnostic], *, keys: Collection[str], depth: int, what: str, home: str
) -> list[Diagnostic]:
    """Explain unknown-key errors for keys that are valid ``depth`` levels
    down the key path but were found deeper.

    TOML puts every key written after a ``[table]`` header into that table,
    so a key meant for the enclosing level but written below a sub-table
    (``[stages.x.model]``, ``[limits]``) surfaces as unknown there, and a
    suggestion drawn from the sub-table's own keys would mislead. ``what``
    names the level ("stage", "top-level") and ``home`` where the key
    belongs."""
    out: list[Diagnostic] = []
    for d in diags:
        m = _UNKNOWN.match(d.message) if d.name == "unknown-key" else None
        key = m.group(1) if m else ""
        parent = d.key_path[: -len(key)].rstrip(".") if m else ""
        if m is None or key not in keys or len(parent.split(".")) <= depth or not parent:
            out.append(d)
            continue
        hint = (
            f"'{key}' is a {what} key, but it was read as part of '{parent}': in TOML every key "
            f"after a [table] header belongs to that table. Move it up to {home}."
        )
        # A suggestion drawn from the sub-table's keys points the wrong way.
        message = f"unknown key '{key}'"
        out.append(d._replace(message=message, help=hint))
    return out


def load_user_config(path: Path, display: str) -> Loaded[UserConfig]:
    loaded = load_document(path, display, UserConfig, "toml")
    fixed = explain_misplaced_keys(
        loaded.diagnostics,
        keys=UserConfig.model_fields,
        depth=0,
        what="top-level",
        home="the top of the file, before the first [table] header",
    )
    return loaded._replace(diagnostics=tuple(fixed))


def load_default_user_config() -> Loaded[UserConfig] | None:
    """Load the config at :func:`default_config_path`, or None when there is
    no file there: having no user config is normal, not an error. A path that
    exists but is not a readable file is still reported."""
    path = default_config_path()
    if not path.exists():
        return None
    # No absolute path in diagnostics or plans: they may be shared.
    return load_user_config(path, f"<config>/{path.name}")
