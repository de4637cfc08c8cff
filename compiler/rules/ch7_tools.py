"""Rules CH7xx: tools and MCP (schemas, scripts, servers, locks)."""

from __future__ import annotations

from charter.compiler.rules.catalog import E, N, W, register

# --- CH7xx: tools and MCP ------------------------------------------------------
register(
    "CH701",
    "schema-does-not-compile",
    E,
    "A tool's argument schema is not a valid JSON Schema.",
    "Arguments that cannot be checked are never trusted: the runtime refuses every call to the "
    "tool, so an agent that relies on it cannot work.",
    "input_schema: {type: objet}\n",
    "Fix the schema.",
)
register(
    "CH702",
    "external-ref-in-schema",
    W,
    "A tool's argument schema uses a $ref to another document.",
    "Charter never fetches schemas from the network or disk, so validation is switched off for "
    "the tool.",
    "input_schema: {$ref: 'https://example.com/args.json'}\n",
    "Inline the referenced schema, or use local '#/$defs/...' references.",
)
register(
    "CH703",
    "mcp-cwd-outside-workspace",
    E,
    "An MCP server's cwd resolves outside the agent's directory.",
    "A server started elsewhere can read and write files the agent was never given.",
    "cwd: ../../\n",
    "Use a directory inside the agent's workspace.",
)
register(
    "CH704",
    "tool-disabled",
    N,
    "tools.metadata disables a tool (enabled: false); it is not offered.",
    "A stage that names a disabled tool will not get it.",
    "tools:\n  metadata:\n    web_extract: {enabled: false}\n",
    "Nothing to fix if intended.",
)
register(
    "CH705",
    "authored-entrypoint-invalid",
    E,
    "An authored tool's entrypoint module or function is missing, or its signature is wrong.",
    "Every call of the tool would fail after approval.",
    "entrypoint: module:exec   # module.py defines execute\n",
    "Point entrypoint at a function taking (ctx, args).",
)
register(
    "CH706",
    "mcp-filter-matches-nothing",
    W,
    "A tools.include or tools.exclude pattern of an MCP manifest matches none of the server's "
    "pinned tools.",
    "A pattern that matches nothing is usually a typo or a tool the server dropped; an include "
    "that selects nothing leaves the server without tools, an exclude that misses lets a tool "
    "through.",
    "tools: {include: [serch*]}   # the server has search_docs\n",
    "Correct the pattern against the tools listed in charter.lock.json, or remove it.",
)
register(
    "CH707",
    "mcp-lock-stale",
    W,
    "An MCP server has no usable entry in the agent's charter.lock.json: the manifest changed "
    "after locking, or the server was never locked.",
    "Its tools cannot be checked at compile time; at run time they are discovered unpinned and "
    "every call is asked about.",
    "command: docs-mcp-v2   # edited after charter mcp lock\n",
    "Review the server, then run 'charter mcp lock PROJECT --server NAME'.",
)
register(
    "CH708",
    "mcp-lock-invalid",
    E,
    "The agent's charter.lock.json cannot be read or is malformed (including digests that do "
    "not match the recorded text).",
    "The pins decide what the model is told about MCP tools; a lock that was edited by hand or "
    "damaged cannot be trusted.",
    '{"version": 1, "servers": {"docs": {"tools": "all"}}}\n',
    "Delete the file and run 'charter mcp lock' again.",
)
register(
    "CH750",
    "script-tool-undeclared",
    W,
    "A tools/*.rhai file does not declare itself as a tool (no '// @tool <name>', or an "
    "unreadable '// @param' line or <name>.toml override).",
    "Leviath skips such a script, so a stage that names it offers nothing.",
    "// fetches a page\nlet r = http_get(params.url);\n",
    'Start the file with "// @tool <name>" and one "// @param <name> <type> '
    '<required|optional> "<description>"" line per argument.',
)
register(
    "CH751",
    "script-tool-replaces-builtin",
    N,
    "A script tool has the name of one of Charter's built-in tools.",
    "The agent's own script is the tool its stages offer, with the script's schema and "
    "permissions; Charter's built-in of that name is not used for this agent.",
    "tools/web_search.rhai   // @tool web_search\n",
    "Nothing to fix if intended; rename the script to use Charter's built-in instead.",
)
register(
    "CH753",
    "script-tool-syntax",
    W,
    "A tools/*.rhai script tool is not valid Rhai (or nests deeper than the interpreter reads).",
    "Leviath skips a script that does not compile, and so does Charter: a stage that names the "
    "tool offers nothing under that name.",
    "// @tool broken\nlet = ;\n",
    "Fix the script at the line and column shown.",
)
register(
    "CH752",
    "mcp-server-not-declared",
    W,
    "A stage names an MCP server (a connector, or a <server>__<tool> name) that neither the "
    "agent nor the user's config declares.",
    "The stage gets nothing from it: a typo looks like a server with nothing to offer, and a "
    "server installed only on the author's machine is missing on yours.",
    '[stages.s]\navailable_connectors = ["githb"]\n',
    "Name a server declared in [[mcp_servers]] (blueprint or config.toml), or in the core's "
    "MCP manifests.",
)
