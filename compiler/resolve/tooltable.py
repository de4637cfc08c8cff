"""An agent's tools: every model-visible name, where it comes from, and the
collisions between sources.

Names are unique across built-in, authored and MCP sources. A collision is an
error that names both provenances; the built-in never silently wins. Aliases
(``bash`` for ``shell``) resolve to the canonical name everywhere a tool is
named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from charter.compiler.catalog.builtin import BuiltinTool, builtin_tools, resolve_builtin
from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.rules import diag
from charter.runtime.mcp.naming import mcp_safe_names

__all__ = ["ToolRef", "ToolTable", "all_builtin_names", "builtin_canonical"]

Source = Literal["builtin", "authored", "mcp", "script"]


# Defined at every start-up, so kept cheap to define: ToolRef is a NamedTuple
# (a tenth of a frozen dataclass's cost), and ToolTable, mutable state nothing
# compares by value, keeps identity equality instead of a generated __eq__.
class ToolRef(NamedTuple):
    """A tool an agent can name, with where it was declared and what provides it."""

    name: str
    source: Source
    where: Span  # where this tool was declared
    builtin: BuiltinTool | None = None
    authored_id: str | None = None
    server: str | None = None  # MCP server id
    server_tool: str | None = None  # the server's own name for the tool

    def provenance(self) -> str:
        if self.source == "builtin":
            return f"the built-in tool '{self.name}'"
        if self.source == "authored":
            return f"the authored tool '{self.authored_id}' ({self.where.path})"
        if self.source == "script":
            return f"the script tool '{self.name}' ({self.where.path})"
        return f"MCP server '{self.server}' tool '{self.server_tool}' ({self.where.path})"


@dataclass(eq=False)
class ToolTable:
    """Built while reading one agent; ``diagnostics`` collects collisions."""

    tools: dict[str, ToolRef] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # MCP servers whose tools are discovered at run time (no pin yet):
    # a stage may name ``<server>__<tool>`` for them.
    dynamic_servers: dict[str, str] = field(default_factory=dict)  # safe prefix -> server id

    def canonical(self, name: str) -> str:
        """Resolve an alias to the tool's canonical name (unknown names pass
        through unchanged). A name this agent's own tools hold wins over a
        built-in alias it does not reach."""
        if name in self.tools:
            return name
        return builtin_canonical(name)

    def lookup(self, name: str) -> ToolRef | None:
        return self.tools.get(self.canonical(name))

    def is_dynamic_mcp(self, name: str) -> bool:
        head, sep, _ = name.partition("__")
        return bool(sep) and (head + "__") in self.dynamic_servers

    def _add(self, ref: ToolRef) -> None:
        clash = self.tools.get(ref.name) or self._alias_clash(ref.name)
        if clash is None and ref.source == "builtin" and ref.builtin is not None:
            # A built-in offered under its alias while an authored or MCP tool
            # holds the alias as its own name.
            clash = next((self.tools[a] for a in ref.builtin.aliases if a in self.tools), None)
        if clash is not None and clash is not ref:
            if clash.source == "builtin" and ref.source == "builtin":
                return  # the same built-in named twice (toolset and stage)
            self.diagnostics.append(
                diag(
                    "tool-name-collision",
                    f"tool name '{ref.name}' is used by both {clash.provenance()} and "
                    f"{ref.provenance()}; rename one of them",
                    ref.where,
                    help="model-visible names must be unique; Charter never picks one silently",
                )
            )
            return
        self.tools[ref.name] = ref

    def _alias_clash(self, name: str) -> ToolRef | None:
        b = resolve_builtin(name)
        if b is not None and b.name != name and b.name in self.tools:
            return self.tools[b.name]
        for ref in self.tools.values():
            if ref.builtin is not None and name in ref.builtin.aliases:
                return ref
        return None

    def add_builtin(self, name: str, where: Span) -> bool:
        b = resolve_builtin(name)
        if b is None:
            return False
        self._add(ToolRef(b.name, "builtin", where, builtin=b))
        return True

    def add_authored(self, tool_id: str, where: Span) -> None:
        # Only built-ins this agent actually reaches can collide: seed 000
        # cores ship their own web_search, which is a built-in only for
        # blueprints. A stage that later names the built-in is caught by
        # add_builtin, because the authored tool already holds the name.
        self._add(ToolRef(tool_id, "authored", where, authored_id=tool_id))

    def add_script(self, name: str, where: Span) -> None:
        """A Leviath script tool. It is the agent's own tool even when it has a
        built-in's name (web_search, web_fetch): the built-in is then not
        offered to this agent, and a stage naming it gets the script. Add
        scripts before the stages' built-ins so the script holds the name."""
        self._add(ToolRef(name, "script", where))

    def holds_script(self, name: str) -> bool:
        ref = self.tools.get(name)
        return ref is not None and ref.source == "script"

    def add_mcp_tools(self, server: str, tools: list[str], where: Span) -> None:
        for tool, safe in sorted(mcp_safe_names(server, tools).items()):
            if resolve_builtin(safe) is not None:
                self.diagnostics.append(
                    diag(
                        "tool-name-collision",
                        f"MCP tool '{safe}' from server '{server}' has the name of a built-in tool",
                        where,
                    )
                )
                continue
            self._add(ToolRef(safe, "mcp", where, server=server, server_tool=tool))

    def add_dynamic_server(self, server: str, safe_prefix: str) -> None:
        self.dynamic_servers[safe_prefix] = server


def builtin_canonical(name: str) -> str:
    """A built-in alias as the built-in's canonical name (``bash`` is
    ``shell``); any other name unchanged."""
    b = resolve_builtin(name)
    return b.name if b is not None else name


def all_builtin_names() -> list[str]:
    names: list[str] = []
    for b in builtin_tools().values():
        names.append(b.name)
        names.extend(b.aliases)
    return names
