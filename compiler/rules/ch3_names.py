"""Rules CH3xx: names (tools, toolsets, stages, servers)."""

from __future__ import annotations

from charter.compiler.rules.catalog import E, W, register

# --- CH3xx: names --------------------------------------------------------------
register(
    "CH301",
    "unknown-toolset",
    E,
    "agent.yaml names a toolset that does not exist.",
    "The agent would silently lack the tools its author expected.",
    "tools:\n  toolsets: [codeing]\n",
    "Use coding, demiurge_control or schedule.",
)
register(
    "CH302",
    "unknown-tool",
    E,
    "A stage or permission names a tool that is not a built-in, an alias, an authored tool or "
    "a tool of a declared MCP server.",
    "A typo in available_tools silently removes a tool the agent needs; a typo in a permission "
    "map silently drops a restriction.",
    '[stages.implement]\navailable_tools = ["edit_fiel"]\n',
    "Use the suggested name, declare the tool, or remove the entry.",
)
register(
    "CH303",
    "tool-name-collision",
    E,
    "Two sources (built-in, authored, MCP) offer a tool under the same model-visible name.",
    "The model could not tell them apart, and silently preferring one hides the other's "
    "behaviour and permissions.",
    "agent/tools/read_file/tool.yaml next to the built-in read_file.",
    "Rename the authored tool's folder, or exclude the MCP tool with tools.exclude.",
)
register(
    "CH304",
    "required-tool-not-available",
    E,
    "A stage lists a tool in required_tools that is not in its available_tools.",
    "required_tools keeps tools through unattended runs; a tool that is never offered cannot "
    "be kept, so the author's intent is unclear.",
    '[stages.plan]\navailable_tools = ["read_file"]\nrequired_tools = ["ask_user_text"]\n',
    "Add the tool to available_tools, or remove it from required_tools.",
)
register(
    "CH305",
    "orphan-stage-permission",
    E,
    "A stage sets a permission for a tool the stage never offers.",
    "The permission has no effect; usually the tool was meant to be offered, or the entry is "
    "left over from an edit.",
    '[stages.review]\navailable_tools = ["read_file"]\n[stages.review.tool_permissions]\n'
    'shell = "allow"\n',
    "Offer the tool in available_tools, or remove the permission.",
)
register(
    "CH306",
    "duplicate-permission-spelling",
    W,
    "One permission map names the same tool twice under different spellings (bash and shell).",
    "Only one value can apply; Charter takes the stricter, which may not be what was meant.",
    '[tool_permissions]\nshell = "ask"\nbash = "allow"\n',
    "Keep one entry per tool.",
)
register(
    "CH350",
    "unknown-region",
    E,
    "A gate or a stage's tool routing names a context region that no layout declares, or one "
    "the stage's own layout leaves out.",
    "A gate on a region that does not exist never holds anything back, and results routed where "
    "the stage cannot see them are lost to it; Leviath refuses to load such a blueprint.",
    '[stages.s.tool_routing]\ndefault_region = "scrach"\n',
    "Name a region declared under [context.regions] (or the stage's own context.regions).",
)
