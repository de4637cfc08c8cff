"""MCP server manifests: ``<mcp root>/<server_id>.yaml``.

One file declares one server: how to reach it (a local process over stdio,
or an HTTP endpoint), which of its tools to expose, and the risk, approval
policy and capability that apply to every call into it. The server id is the
file's stem.

Transport spellings: exactly ``stdio`` and ``streamable_http``, the two the
agent host accepts. ``http`` is refused (with a pointer to
``streamable_http``) rather than taken as an alias, so that a manifest Charter
passes is never one the host rejects at start-up.

The host turns every ``args`` item and every ``env`` and ``headers`` value
into text, strips ``command``, ``cwd``, ``url`` and ``capability``, and strips,
de-duplicates and drops empty tool filter patterns. Charter does the same,
with a ``normalized-value`` warning each. ``risk`` and ``approval_policy`` are
exact words here, as they are to the host's manifest model (``HIGH`` is
refused there too).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, field_validator

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.frontends.base import Loaded, load_document, server_id_from_path
from charter.compiler.frontends.normalize import Normalizer
from charter.compiler.frontends.tool_yaml import ApprovalPolicy, Capability, Risk
from charter.compiler.frontends.validation import InputModel, invalid_value
from charter.compiler.rules import diag, diag_at
from charter.compiler.sources.sourcemap import SourceMap
from charter.runtime.plan import McpServerPlan

if TYPE_CHECKING:
    from charter.runtime.plan import Decision, McpToolPin, SourceRef

__all__ = [
    "MAX_CALL_TIMEOUT_SECONDS",
    "MAX_CONNECT_TIMEOUT_SECONDS",
    "McpServer",
    "McpToolFilter",
    "Transport",
    "load_mcp_manifest",
    "server_id_from_path",
]

Transport = Literal["stdio", "streamable_http"]
_TRANSPORTS: tuple[str, ...] = ("stdio", "streamable_http")
_TRANSPORT_ALIASES = {
    "http": "streamable_http",
    "https": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
}

# Upper bounds on the two timeouts. A server that needs more than five minutes
# to start, or an hour for one call, is almost certainly misconfigured, and an
# unbounded value would let one server stall a whole turn.
MAX_CONNECT_TIMEOUT_SECONDS = 300.0
MAX_CALL_TIMEOUT_SECONDS = 3600.0

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# RFC 7230 token characters: anything else cannot be sent as a header name.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _pattern(value: str) -> str:
    if not value.strip():
        raise invalid_value("a tool name pattern must not be empty")
    if value != value.strip():
        raise invalid_value(
            "pattern '{value}' has leading or trailing spaces, which no tool name has", value=value
        )
    return value


Pattern = Annotated[str, AfterValidator(_pattern)]


class McpToolFilter(InputModel):
    """Which discovered tools to expose. ``*`` is the only wildcard; a
    non-empty ``include`` must match, then ``exclude`` wins."""

    include: tuple[Pattern, ...] = ()
    exclude: tuple[Pattern, ...] = ()


def _timeout(name: str, value: float, limit: float) -> float:
    if not 0 < value <= limit:
        raise invalid_value(
            "{name} must be greater than 0 and at most {limit} seconds (got {value})",
            name=name,
            limit=f"{limit:g}",
            value=f"{value:g}",
        )
    return value


class McpServer(InputModel):
    """A validated MCP server manifest."""

    enabled: bool = True
    transport: Transport = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    # Values may hold ``${VAR}`` references; the host expands them only once
    # connecting has been authorized, so they stay as written here.
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    tools: McpToolFilter = McpToolFilter()
    risk: Risk = "medium"
    approval_policy: ApprovalPolicy = "prompt"
    # None means the per-server default, ``mcp.call:<server_id>``.
    capability: Capability | None = None
    connect_timeout_seconds: float = 30.0
    timeout_seconds: float = 60.0
    supports_parallel_tool_calls: bool = False

    @field_validator("transport", mode="before")
    @classmethod
    def _transport_alias(cls, value: object) -> object:
        # Runs before the enum check only to name the right spelling for a
        # near miss such as ``http``; the enum check reports everything else.
        if isinstance(value, str) and value not in _TRANSPORTS:
            alias = _TRANSPORT_ALIASES.get(value.strip().lower())
            if alias is not None:
                raise invalid_value(
                    "'{value}' is not one of stdio, streamable_http; write '{alias}'",
                    value=value,
                    alias=alias,
                )
        return value

    @field_validator("command", "cwd", "url")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise invalid_value("must not be blank; leave the key out")
        return value

    @field_validator("connect_timeout_seconds")
    @classmethod
    def _connect_timeout(cls, value: float) -> float:
        return _timeout("connect_timeout_seconds", value, MAX_CONNECT_TIMEOUT_SECONDS)

    @field_validator("timeout_seconds")
    @classmethod
    def _call_timeout(cls, value: float) -> float:
        return _timeout("timeout_seconds", value, MAX_CALL_TIMEOUT_SECONDS)

    def call_capability(self, server_id: str) -> str:
        """The capability every call into this server needs."""
        return self.capability or f"mcp.call:{server_id}"

    def server_plan(
        self,
        server_id: str,
        *,
        connect_decision: Decision,
        locked: bool = False,
        origin: SourceRef | None = None,
        pins: tuple[McpToolPin, ...] = (),
    ) -> McpServerPlan:
        """The runtime's view of this manifest: how to reach the server, which
        tools to expose, the capabilities it needs. Timeouts round up to whole
        seconds (at least one), the unit the runtime counts in."""
        return McpServerPlan(
            server=server_id,
            transport=self.transport,
            command=self.command,
            args=tuple(self.args),
            env=tuple(sorted(self.env.items())),
            cwd=self.cwd,
            url=self.url,
            headers=tuple(sorted(self.headers.items())),
            include=tuple(self.tools.include),
            exclude=tuple(self.tools.exclude),
            connect_capability=f"mcp.connect:{server_id}",
            call_capability=self.call_capability(server_id),
            connect_decision=connect_decision,
            connect_timeout_seconds=_whole_seconds(self.connect_timeout_seconds),
            timeout_seconds=_whole_seconds(self.timeout_seconds),
            locked=locked,
            pins=pins,
            origin=origin,
        )


def _whole_seconds(value: float) -> int:
    return max(1, int(-(-value // 1)))


def load_mcp_manifest(path: Path, display: str) -> Loaded[McpServer]:
    """Read and validate one server manifest. Never raises on file content."""

    def precheck(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
        return [*_normalize(data, smap), *_cross_checks(data, smap)]

    return load_document(path, display, McpServer, "yaml", precheck=precheck)


def _normalize(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
    """What the host's manifest model does to values before validating them."""
    n = Normalizer(smap)
    n.empty_if_null(data, "args", ("args",), [])
    n.texts_in_list(data.get("args"), ("args",))
    for key in ("env", "headers"):
        n.empty_if_null(data, key, (key,), {})
        n.texts_in_map(data.get(key), (key,))
    for key in ("command", "cwd", "url", "capability"):
        value = data.get(key)
        # A blank value is left for validation to refuse: the host would
        # drop it to null, which is never what a written key meant.
        if value is not None and str(value).strip():
            n.text(data, key, (key,), strip=True, keep_null=True)
    tools = data.get("tools")
    if isinstance(tools, dict):
        for key in ("include", "exclude"):
            _normalize_patterns(n, tools, key)
    return n.diags


def _normalize_patterns(n: Normalizer, tools: dict[str, Any], key: str) -> None:
    items = tools.get(key)
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return
    kept: list[str] = []
    origin: list[int] = []  # the written index of each kept pattern
    for i, item in enumerate(items):
        where = ("tools", key, i)
        text = item.strip()
        if not text or text in kept:
            n.diags.append(
                diag_at(
                    "normalized-value",
                    f"pattern '{item}' is "
                    + ("empty" if not text else f"a repeat of '{text}'")
                    + "; the agent host drops it",
                    n.smap,
                    where,
                )
            )
            continue
        if text != item:
            n.diags.append(
                diag_at(
                    "normalized-value",
                    f"pattern '{item}' is read as '{text}' (the agent host strips it)",
                    n.smap,
                    where,
                )
            )
        kept.append(text)
        origin.append(i)
    tools[key] = kept
    if len(kept) != len(items):
        # Later diagnostics name a pattern by its new index; keep each one
        # pointing at the line and column it was written at.
        entries = n.smap.entries
        spans = {i: entries.get(("tools", key, i)) for i in range(len(items))}
        for i in range(len(items)):
            entries.pop(("tools", key, i), None)
        for new, old in enumerate(origin):
            span = spans[old]
            if span is not None:
                entries[("tools", key, new)] = span


# The keys that only one transport reads: on a server of another, a mistake.
_TRANSPORT_ONLY_KEYS = {"stdio": ("command", "args", "cwd"), "streamable_http": ("url", "headers")}


def _cross_checks(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
    """Rules that tie fields together, each reported at the key at fault.

    They read the plain data rather than the model so they still run when
    some other field fails validation; a value of the wrong type is skipped
    here because validation reports it."""
    out: list[Diagnostic] = []

    def err(name: str, message: str, span: Span, loc: tuple[str, ...]) -> None:
        out.append(diag(name, message, span, key_path=format_key_path(loc)))

    def given(key: str) -> bool:
        return data.get(key) is not None

    transport = data.get("transport", "stdio")
    # Where to point when a required key is missing: the transport value if
    # it was written, else the top of the file.
    transport_at = smap.value_span(("transport",))
    if transport == "stdio":
        if not given("command"):
            err(
                "missing-key",
                "a stdio server needs 'command', the program to start",
                transport_at,
                ("command",),
            )
    elif transport == "streamable_http":
        url = data.get("url")
        if url is None:
            err(
                "missing-key",
                "a streamable_http server needs 'url', its http:// or https:// endpoint",
                transport_at,
                ("url",),
            )
        elif isinstance(url, str) and url.strip():
            problem = _url_problem(url)
            if problem is not None:
                err("invalid-value", problem, smap.value_span(("url",)), ("url",))
    if isinstance(transport, str) and transport in _TRANSPORT_ONLY_KEYS:
        for other, keys in _TRANSPORT_ONLY_KEYS.items():
            for key in (k for k in keys if k in data and other != transport):
                err(
                    "invalid-value",
                    f"'{key}' applies only to {other} servers; this one uses {transport}",
                    smap.key_span((key,)),
                    (key,),
                )
    env = data.get("env")
    for name in env if isinstance(env, dict) else ():
        if not _ENV_NAME.match(name):
            err(
                "invalid-value",
                f"'{name}' is not an environment variable name "
                "(letters, digits and '_', not starting with a digit)",
                smap.key_span(("env", name)),
                ("env", name),
            )
    headers = data.get("headers")
    for name in headers if isinstance(headers, dict) else ():
        if not _HEADER_NAME.match(name):
            err(
                "invalid-value",
                f"'{name}' is not a valid HTTP header name",
                smap.key_span(("headers", name)),
                ("headers", name),
            )
    return out


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a malformed port
    except ValueError as exc:
        return f"'{url}' is not a valid URL: {exc}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"'{url}' must start with http:// or https://"
    if not parts.hostname:
        return f"'{url}' has no host name"
    return None
