"""Model-visible names for MCP tools: ``<server>__<tool>``.

Both parts keep only ASCII letters, digits, ``_`` and ``-`` (anything else
becomes ``-``). The server part starts with a letter (``mcp-`` is prefixed
otherwise) and is cut to 30 characters; the tool part is cut so the whole
name fits in 64 characters, the limit model providers accept. Used by the
compiler for pinned tools and by the runtime for tools discovered at connect
time, so both always agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MAX_NAME", "MAX_SERVER", "mcp_safe_name", "mcp_safe_names", "sanitize"]

MAX_NAME = 64
MAX_SERVER = 30
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(text: str) -> str:
    return _UNSAFE.sub("-", text)


def _server_part(server: str) -> str:
    part = sanitize(server) or "server"
    if not part[0].isalpha():
        part = "mcp-" + part
    return part[:MAX_SERVER]


def mcp_safe_name(server: str, tool: str) -> str:
    head = _server_part(server) + "__"
    tail = sanitize(tool) or "tool"
    return head + tail[: MAX_NAME - len(head)]


def mcp_safe_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Safe names for one server's tools. Two tools whose names sanitise to
    the same text (case-insensitively) are told apart by ``-2``, ``-3``...,
    assigned in sorted order so the result never depends on listing order."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for tool in sorted(set(tools)):
        base = mcp_safe_name(server, tool)
        name, n = base, 1
        while name.lower() in taken:
            n += 1
            suffix = f"-{n}"
            name = base[: MAX_NAME - len(suffix)] + suffix
        taken.add(name.lower())
        out[tool] = name
    return out
