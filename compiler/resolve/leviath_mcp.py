"""MCP servers the Leviath way: ``[[mcp_servers]]`` in a blueprint or in the
user's config.toml, tools named ``<server>__<tool>``, and a stage's
``available_connectors`` offering everything a server has.

Where a server is declared decides how far it is trusted:

* a server in the **user's config** is the user's own; connecting to it is
  asked about once per run, like an agent core's manifest;
* a server in a **blueprint** was written by whoever wrote the agent. A stdio
  entry is a program to start on the user's machine and an HTTP entry a place
  data goes, so Charter neither starts nor contacts it until the user says
  so: ``[agent_mcp_servers.<agent>] allow_blueprint = true`` or ``[security]
  allow_blueprint_mcp_servers = true``. Until then the server's connect
  decision and every tool of it are ``deny`` (``blueprint-mcp-server-inert``).
  Leviath starts such servers without asking; this is the opt-in it lacks.

A config server is part of an agent's plan only when the agent names it (a
``<server>__<tool>`` name or a connector). Pins come from the agent's
``charter.lock.json`` like any other server's; what the lock records as the
"manifest" digest is the sha256 of the entry's canonical JSON, so editing the
entry (another command, URL or argument) makes the pins stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.frontends.config_toml import McpServer as LeviathServerModel
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.plan import McpServerPlan

if TYPE_CHECKING:
    from charter.compiler.frontends.blueprint import Blueprint
    from charter.compiler.frontends.config_toml import UserConfig
    from charter.runtime.plan import Decision, McpToolPin, SourceRef

__all__ = [
    "LeviathServer",
    "declared_servers",
    "entry_digest",
    "referenced",
    "stage_names",
    "server_checks",
    "to_server_plan",
    "trusted",
]


@dataclass(frozen=True)
class LeviathServer:
    """One ``[[mcp_servers]]`` entry and where it was written."""

    name: str
    model: LeviathServerModel
    declared_in: Literal["blueprint", "config"]
    smap: SourceMap
    index: int  # position in its file's [[mcp_servers]] list

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("mcp_servers", self.index)

    def span(self, *key: str | int) -> Span:
        return self.smap.value_span((*self.path, *key))

    @property
    def transport(self) -> Literal["stdio", "streamable_http"]:
        if self.model.transport == "http":
            return "streamable_http"
        if self.model.transport == "stdio":
            return "stdio"
        return (
            "stdio"
            if self.model.command is not None or self.model.url is None
            else ("streamable_http")
        )


def entry_digest(model: LeviathServerModel) -> str:
    """What the lock records as this server's manifest digest."""
    text = json.dumps(model.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def declared_servers(
    bp: Blueprint | None,
    bp_smap: SourceMap | None,
    config: UserConfig | None,
    config_smap: SourceMap | None,
) -> tuple[list[LeviathServer], list[Diagnostic]]:
    """The blueprint's servers, then the config's. A name declared in both is
    an error: the user's entry is kept, so a blueprint cannot take over a
    server the user configured by reusing its name."""
    out: list[LeviathServer] = []
    diags: list[Diagnostic] = []
    mine: dict[str, LeviathServer] = {}
    if config is not None and config_smap is not None:
        for i, m in enumerate(config.mcp_servers):
            if m.name not in mine:
                mine[m.name] = LeviathServer(m.name, m, "config", config_smap, i)
    seen: set[str] = set()
    if bp is not None and bp_smap is not None:
        for i, m in enumerate(bp.mcp_servers):
            here = LeviathServer(m.name, m, "blueprint", bp_smap, i)
            if m.name in mine:
                there = mine[m.name].span("name")
                diags.append(
                    diag(
                        "duplicate-definition",
                        f"MCP server '{m.name}' is declared here and in your config "
                        f"({there.path}:{there.line}); your config's entry is used",
                        here.span("name"),
                        key_path=format_key_path((*here.path, "name")),
                    )
                )
                continue
            if m.name in seen:
                diags.append(
                    diag(
                        "duplicate-definition",
                        f"MCP server '{m.name}' is declared twice in this blueprint",
                        here.span("name"),
                        key_path=format_key_path((*here.path, "name")),
                    )
                )
                continue
            seen.add(m.name)
            out.append(here)
    out.extend(mine.values())
    return out, diags


def referenced(servers: list[LeviathServer], named: Iterable[str]) -> list[LeviathServer]:
    """The servers an agent uses: every one its blueprint declares, and each
    config server a stage names (a connector, or the prefix of a
    ``<server>__<tool>`` name)."""
    from charter.runtime.mcp.naming import mcp_safe_name

    wanted = set(named)
    return [
        s
        for s in servers
        if s.declared_in == "blueprint"
        or s.name in wanted
        or mcp_safe_name(s.name, "x")[:-3] in wanted
    ]


def stage_names(stages: Iterable[Any]) -> set[str]:
    """Server names (or name prefixes) the given stage models refer to."""
    out: set[str] = set()
    for st in stages:
        out.update(st.available_connectors)
        out.update(n.partition("__")[0] for n in st.available_tools if "__" in n)
    return out


def trusted(server: LeviathServer, agent: str, config: UserConfig | None) -> bool:
    """Whether Charter may start or contact the server (see the module docs)."""
    if server.declared_in == "config":
        return True
    if config is None:
        return False
    per_agent = config.agent_mcp_servers.get(agent)
    return config.security.allow_blueprint_mcp_servers or bool(
        per_agent is not None and per_agent.allow_blueprint
    )


def server_checks(server: LeviathServer) -> list[Diagnostic]:
    """What the entry must say to be usable, and literal credentials in it."""
    from charter.compiler.support.literal_secrets import literal_secrets

    out: list[Diagnostic] = []
    m = server.model
    where = server.span()
    if server.transport == "stdio" and m.command is None:
        out.append(
            diag(
                "missing-key",
                f"MCP server '{m.name}' runs over stdio and needs 'command', the program to start",
                where,
                key_path=format_key_path(server.path),
            )
        )
    if server.transport == "streamable_http" and m.url is None:
        out.append(
            diag(
                "missing-key",
                f"MCP server '{m.name}' is reached over HTTP and needs 'url'",
                where,
                key_path=format_key_path(server.path),
            )
        )
    for path, what in literal_secrets(env=m.env, headers=m.headers, url=m.url, args=m.args):
        out.append(
            diag(
                "hardcoded-secret",
                f"MCP server '{m.name}': {what}; write it as a ${{VAR}} reference and set VAR in "
                "the environment",
                server.span(*path),
                key_path=format_key_path((*server.path, *path)),
            )
        )
    return out


def to_server_plan(
    server: LeviathServer,
    *,
    connect: Decision,
    locked: bool,
    pins: tuple[McpToolPin, ...],
    origin: SourceRef,
) -> McpServerPlan:
    m = server.model
    return McpServerPlan(
        server=server.name,
        transport=server.transport,
        command=m.command,
        args=tuple(m.args),
        env=tuple(sorted(m.env.items())),
        url=m.url,
        headers=tuple(sorted(m.headers.items())),
        connect_capability=f"mcp.connect:{server.name}",
        call_capability=f"mcp.call:{server.name}",
        connect_decision=connect,
        locked=locked,
        pins=pins,
        declared_in=server.declared_in,
        origin=origin,
    )
