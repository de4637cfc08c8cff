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

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from charter.runtime.results import ToolCall

__all__ = ["MAX_EVENT_BYTES", "Translation", "decide_event", "hook_output", "translate"]

MAX_EVENT_BYTES = 8 * 1024 * 1024
Permission = Literal["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}

# Claude Code tool -> Charter tools to try in order (the first the stage
# offers is used), and how arguments are renamed.
_FILE_ARGS = {"file_path": "path"}


class Translation:
    """The Charter calls one Claude Code call stands for, or why there are none."""

    def __init__(self, calls: list[ToolCall], problem: str = "") -> None:
        self.calls = calls
        self.problem = problem


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _candidates(tool: str, inp: Mapping[str, Any]) -> list[list[tuple[str, dict[str, Any]]]] | str:
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
        if _s(inp.get("path")):
            args["path"] = inp["path"]
        return [[("search_files", args)]]
    if tool == "Grep":
        args = {"query": inp.get("pattern"), "target": "content"}
        if _s(inp.get("path")):
            args["path"] = inp["path"]
        if _s(inp.get("glob")):
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


def _drop_none(args: dict[str, Any]) -> dict[str, Any]:
    # A missing Claude Code field stays missing, so the schema gate names it.
    return {k: v for k, v in args.items() if v is not None}


def _mcp_name(session: Any, tool: str) -> str | None:
    """The plan's name for ``mcp__<server>__<tool>``."""
    rest = tool[len("mcp__") :]
    server, sep, name = rest.partition("__")
    if not sep or not server or not name:
        return None
    for entry in session.agent.tools.values():
        if entry.source == "mcp" and entry.mcp is not None:
            if entry.mcp.server == server and entry.mcp.tool == name:
                return str(entry.name)
    from charter.runtime.naming import mcp_safe_name

    safe = mcp_safe_name(server, name)
    return safe if safe in session.agent.tools else None


def translate(event: Mapping[str, Any], session: Any) -> Translation:
    tool = event.get("tool_name")
    inp = event.get("tool_input")
    call_id = _s(event.get("tool_use_id")) or ""
    if not isinstance(tool, str) or not tool:
        return Translation([], "the event has no tool_name")
    if not isinstance(inp, dict):
        return Translation([], "the event's tool_input is not an object")
    if tool.startswith("mcp__"):
        name = _mcp_name(session, tool)
        if name is None:
            return Translation([], f"MCP tool '{tool}' is not in the plan")
        return Translation([ToolCall(name, dict(inp), call_id)])
    found = _candidates(tool, inp)
    if isinstance(found, str):
        return Translation([], found)
    offered = session.offered()
    calls = []
    for alts in found:
        chosen = next((a for a in alts if a[0] in offered), alts[0])
        calls.append(ToolCall(chosen[0], _drop_none(chosen[1]), call_id))
    return Translation(calls)


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
) -> dict[str, Any]:
    """The hook answer for one raw stdin payload. Never raises."""
    try:
        return _decide_event(raw, plan_path, agent, stage, workspace)
    except Exception as exc:  # fail closed on anything unforeseen
        return _ask(f"the hook could not decide ({type(exc).__name__}: {exc})")


def _decide_event(
    raw: bytes,
    plan_path: str | Path,
    agent: str | None,
    stage: str | None,
    workspace: str | Path | None,
) -> dict[str, Any]:
    if len(raw) > MAX_EVENT_BYTES:
        return _ask(f"the hook event is larger than {MAX_EVENT_BYTES} bytes")
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _ask(f"the hook event is not JSON ({exc})")
    if not isinstance(event, dict):
        return _ask("the hook event is not a JSON object")
    name = event.get("hook_event_name")
    if name is not None and name != "PreToolUse":
        return _ask(f"this hook answers PreToolUse events, not {name!r}")

    from charter.runtime.gates import decide
    from charter.runtime.loader import PlanError
    from charter.runtime.session import SessionError, load_for_agents, open_session

    try:
        # A hook runs once per tool call of another agent: load only the agent
        # it decides for, and build validators only when a call needs them.
        plan = load_for_agents(plan_path, [agent] if agent is not None else [])
        if agent is None:
            names = plan.agent_names
            if len(names) != 1:
                shown = ", ".join(names)
                return _ask(f"the plan holds {len(names)} agents ({shown}); pass --agent")
            agent = names[0]
            plan = load_for_agents(plan_path, [agent])
    except PlanError as exc:
        return _ask(f"the plan cannot be used: {exc}")
    ws = workspace if workspace is not None else _s(event.get("cwd"))
    if not ws:
        return _ask("no workspace: the event has no cwd and --workspace was not given")
    try:
        session = open_session(plan, agent, workspace=ws, stage=stage)
    except SessionError as exc:
        return _ask(str(exc))
    translation = translate(event, session)
    if not translation.calls:
        return _ask(translation.problem)
    worst: tuple[Permission, str] | None = None
    for call in translation.calls:
        out = decide(session, call)
        reason = f"charter: {out.reason} [{out.gate}/{out.rule}]"
        if worst is None or _RANK[out.decision] > _RANK[worst[0]]:
            worst = (out.decision, reason)
    assert worst is not None
    return hook_output(worst[0], worst[1])
