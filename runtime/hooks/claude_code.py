"""Claude Code PreToolUse hook: a compiled plan decides Claude Code's tool calls.

Claude Code runs the hook command before each tool call and passes the event
as JSON on stdin (``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``,
``tool_input``, ...). This module maps the call onto the Charter tool it
corresponds to, runs the gates without executing anything, and answers with
the hook's decision object::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                            "permissionDecision": "allow" | "deny" | "ask",
                            "permissionDecisionReason": "..."}}

It fails closed: input it cannot read, a plan it cannot load, a tool with no
Charter counterpart: each answers ``ask`` with the reason, never ``allow``.
A MultiEdit is decided edit by edit and answers with the strictest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.hooks import common
from charter.runtime.hooks.common import MAX_EVENT_BYTES, Alternatives, Permission, Translation
from charter.runtime.results import ToolCall

if TYPE_CHECKING:
    from charter.runtime.session import Session

__all__ = ["MAX_EVENT_BYTES", "Translation", "decide_event", "hook_output", "translate"]


def _candidates(tool: str, inp: Mapping[str, Any]) -> list[Alternatives] | str:
    """For each Charter call, the (tool, args) alternatives in preference order."""
    if tool == "Bash":
        command = inp.get("command")
        background = inp.get("run_in_background") is True
        shell_args: dict[str, Any] = {"command": command}
        terminal_args: dict[str, Any] = {"command": command}
        if background:
            terminal_args["background"] = True
        # Only `terminal` can express background mode, so a background call
        # prefers it; where the stage offers `shell` alone, the command itself
        # is what the guard judges either way.
        if background:
            return [[("terminal", terminal_args), ("shell", shell_args)]]
        return [[("shell", shell_args), ("terminal", terminal_args)]]
    if tool == "Read":
        return [[("read_file", {"path": inp.get("file_path")})]]
    if tool == "Write":
        return [[("write_file", {"path": inp.get("file_path"), "content": inp.get("content")})]]
    if tool == "Edit":
        path, old, new = inp.get("file_path"), inp.get("old_string"), inp.get("new_string")
        return [
            [
                ("edit_file", {"path": path, "old_str": old, "new_str": new}),
                ("patch", {"path": path, "old": old, "new": new}),
            ]
        ]
    if tool == "MultiEdit":
        edits = inp.get("edits")
        if not isinstance(edits, list) or not edits:
            return "MultiEdit without a list of edits"
        out = []
        for e in edits:
            if not isinstance(e, dict):
                return "MultiEdit holds an edit that is not an object"
            path, old, new = inp.get("file_path"), e.get("old_string"), e.get("new_string")
            out.append(
                [
                    ("edit_file", {"path": path, "old_str": old, "new_str": new}),
                    ("patch", {"path": path, "old": old, "new": new}),
                ]
            )
        return out
    if tool == "Glob":
        args: dict[str, Any] = {"query": inp.get("pattern"), "target": "name"}
        if common.text(inp.get("path")):
            args["path"] = inp["path"]
        return [[("search_files", args)]]
    if tool == "Grep":
        args = {"query": inp.get("pattern"), "target": "content"}
        if common.text(inp.get("path")):
            args["path"] = inp["path"]
        if common.text(inp.get("glob")):
            args["pattern"] = inp["glob"]
        return [[("search_files", args)]]
    if tool == "LS":
        return [[("list_dir", {"path": inp.get("path")})]]
    if tool == "WebFetch":
        url = inp.get("url")
        return [[("web_fetch", {"url": url}), ("web_extract", {"url": url})]]
    if tool == "WebSearch":
        return [[("web_search", {"query": inp.get("query")})]]
    return f"Claude Code tool '{tool}' has no Charter counterpart"


def translate(event: Mapping[str, Any], session: Session) -> Translation:
    tool = event.get("tool_name")
    inp = event.get("tool_input")
    call_id = common.text(event.get("tool_use_id")) or ""
    if not isinstance(tool, str) or not tool:
        return Translation([], "the event has no tool_name")
    if not isinstance(inp, dict):
        return Translation([], "the event's tool_input is not an object")
    if tool.startswith("mcp__"):
        parts = common.split_mcp_name(tool)
        name = common.mcp_plan_name(session, *parts) if parts is not None else None
        if name is None:
            return Translation([], f"MCP tool '{tool}' is not in the plan")
        return Translation([ToolCall(name, dict(inp), call_id)])
    found = _candidates(tool, inp)
    if isinstance(found, str):
        return Translation([], found)
    return Translation(common.choose_calls(session, found, call_id))


def hook_output(decision: Permission, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def _ask(reason: str) -> dict[str, Any]:
    return hook_output("ask", f"charter: {reason}")


def decide_event(
    raw: bytes,
    *,
    plan_path: str | Path,
    agent: str | None = None,
    stage: str | None = None,
    workspace: str | Path | None = None,
    allow: Iterable[str] = (),
) -> dict[str, Any]:
    """The hook answer for one raw stdin payload. Never raises."""
    options = common.HookOptions(plan_path, agent, stage, workspace, tuple(allow))
    return common.answer_event(raw, "PreToolUse", options, refuse=_ask, decide=_decide)


def _decide(event: Mapping[str, Any], session: Session) -> dict[str, Any]:
    translation = translate(event, session)
    if not translation.calls:
        return _ask(translation.problem)
    out = common.worst(common.decide_all(session, translation.calls))
    return hook_output(out.decision, f"charter: {out.reason} [{out.gate}/{out.rule}]")
