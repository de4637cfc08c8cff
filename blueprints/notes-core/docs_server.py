"""A small documentation server for the notes-core example, spoken over MCP stdio.

It serves the Markdown pages under ``--root`` (read-only) with four tools:
``search_docs``, ``search_drafts``, ``get_page`` and ``list_sections``. It
uses only the standard library, so any ``python3`` can start it, and it
speaks just enough of the Model Context Protocol (JSON-RPC 2.0, one message
per line) for a client to initialise, list the tools and call them.

Run it by hand to see it answer: ``python3 docs_server.py --root docs``, then
type ``{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

_QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 200}},
    "required": ["query"],
    "additionalProperties": False,
}
TOOLS = [
    {"name": "search_docs", "description": "Find the pages that mention a word.",
     "inputSchema": _QUERY},
    {"name": "search_drafts", "description": "Find unpublished drafts that mention a word.",
     "inputSchema": _QUERY},
    {"name": "get_page", "description": "Read one page by its name, as list_sections shows it.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                     "required": ["name"], "additionalProperties": False}},
    {"name": "list_sections", "description": "List every page with its first heading.",
     "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False}},
]


def _pages(root: Path, drafts: bool) -> dict[str, Path]:
    base = root / "drafts" if drafts else root
    found = sorted(p for p in base.glob("*.md") if p.is_file())
    return {p.stem: p for p in found}


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return path.stem


def _call(root: Path, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    if name in ("search_docs", "search_drafts"):
        word = str(args.get("query", "")).lower()
        hits = [
            f"{stem}: {_title(path)}"
            for stem, path in _pages(root, name == "search_drafts").items()
            if word and word in path.read_text(encoding="utf-8").lower()
        ]
        return ("\n".join(hits) or f"no page mentions {word!r}"), False
    if name == "get_page":
        page = _pages(root, False).get(str(args.get("name", "")))
        if page is None:
            return f"no page named {args.get('name')!r}; list_sections shows them", True
        return page.read_text(encoding="utf-8"), False
    if name == "list_sections":
        listed = [f"{stem}: {_title(path)}" for stem, path in _pages(root, False).items()]
        return "\n".join(listed) or "no pages", False
    return f"unknown tool {name!r}", True


def _answer(root: Path, message: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # a notification (notifications/initialized): nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "notes-core-docs", "version": "1.0.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        text, failed = _call(root, str(params.get("name")), params.get("arguments") or {})
        result = {"content": [{"type": "text", "text": text}], "isError": failed}
    else:
        return {"jsonrpc": "2.0", "id": ident,
                "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("docs"))
    parser.add_argument("--read-only", action="store_true", help="the only mode there is")
    root = parser.parse_args().root
    if not root.is_dir():
        print(f"docs_server: {root.resolve()} is not a directory", file=sys.stderr)
        return 1
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = {
                "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}
            }
        else:
            reply = _answer(root, message) if isinstance(message, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
