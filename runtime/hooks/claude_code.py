"""Claude Code PreToolUse hook: a compiled plan decides Claude Code's tool calls.

Claude Code runs the hook before each tool call and passes the event as JSON
(``session_id``, ``cwd``, ``permission_mode``, ``hook_event_name``,
``tool_name``, ``tool_input``, ``tool_use_id``, and ``agent_id`` for a call a
sub-agent makes). This module maps the call onto the Charter calls it stands
for, runs the gates without executing anything, and answers with the hook's
decision object::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                            "permissionDecision": "allow" | "deny" | "ask",
                            "permissionDecisionReason": "..."}}

The table covers every tool Claude Code 2.1 offers (2.1.197 and 2.1.332 were
read from real runs), older names included. Claude Code's own bookkeeping
tools (``ToolSearch``, ``ReportFindings``, ...) get a decision of the
adapter's own with its reason; a call several Charter calls stand for (a
MultiEdit, an AskUserQuestion with several questions) answers with the
strictest.

Claude Code asks a person only in some permission modes. Where nobody is
asked (``bypassPermissions``, ``dontAsk``, the classifier's ``auto``, or a mode
this adapter does not know), an ``ask`` is answered ``deny``: Claude Code runs a
write under ``.claude/`` or ``.git/`` in ``bypassPermissions`` mode although the
hook said ask. The reason names the launch flag that lifts a liftable ask.

It fails closed: input it cannot read, a plan it cannot load, a tool with no
Charter counterpart: each answers ``ask`` with the reason where a person is
asked and ``deny`` otherwise, never ``allow``.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.hooks import common, reach
from charter.runtime.hooks.common import (
    MAX_EVENT_BYTES,
    Alternatives,
    Fixed,
    Permission,
    Translation,
)
from charter.runtime.results import ToolCall

if TYPE_CHECKING:
    from charter.runtime.gates import Outcome
    from charter.runtime.plan.prepared import PreparedPlan
    from charter.runtime.policy.session import Session

__all__ = [
    "ATTENDED_MODES",
    "KNOWN_TOOLS",
    "MAX_EVENT_BYTES",
    "Translation",
    "decide_claude_code_stdin",
    "decide_event",
    "hook_output",
    "translate",
]

# Permission modes in which Claude Code puts a hook's ask to a person.
# "plan" only plans (Claude Code refuses changes on its own); a missing mode
# is an older Claude Code, which had no mode that asked nobody silently.
ATTENDED_MODES = frozenset({"default", "acceptEdits", "plan"})

Found = list[Alternatives] | str
# A handler's answer: the Charter calls (or why there are none), and the
# adapter's own decisions that apply as well.
Mapped = tuple[Found, list[Fixed]]


def _calls(found: Found, *fixed: Fixed) -> Mapped:
    return found, list(fixed)


def _only(decision: Permission, rule: str, reason: str) -> Mapped:
    return [], [Fixed(decision, rule, reason)]


# -- one handler per Claude Code tool -------------------------------------------


def _bash(inp: Mapping[str, Any]) -> Mapped:
    command = inp.get("command")
    background = inp.get("run_in_background") is True
    shell_args: dict[str, Any] = {"command": command}
    terminal_args: dict[str, Any] = {"command": command}
    if background:
        terminal_args["background"] = True
        # Only `terminal` can express background mode, so a background call
        # prefers it; where the stage offers `shell` alone, the command itself
        # is what the guard judges either way.
        return _calls([[("terminal", terminal_args), ("shell", shell_args)]])
    return _calls([[("shell", shell_args), ("terminal", terminal_args)]])


def _monitor(inp: Mapping[str, Any]) -> Mapped:
    command = inp.get("command")
    if command is None:
        if inp.get("ws") is not None:
            return _calls(
                "Monitor with `ws` opens a WebSocket and streams what it receives; "
                "Charter has no tool for a network stream"
            )
        return _calls("Monitor without a command")
    # A monitor is a long-running command whose output streams back: the
    # guard judges it as a background command.
    return _calls(
        [[("terminal", {"command": command, "background": True}), ("shell", {"command": command})]]
    )


def _read(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("read_file", {"path": inp.get("file_path")})]])


def _write(inp: Mapping[str, Any]) -> Mapped:
    path = inp.get("file_path")
    return _calls([[("write_file", {"path": path, "content": inp.get("content")})]])


def _edit_alternatives(path: Any, old: Any, new: Any, every: bool) -> Alternatives:
    patch: dict[str, Any] = {"path": path, "old": old, "new": new}
    if every:
        # `patch` can say "every match"; edit_file needs exactly one.
        patch["count"] = -1
        return [("patch", patch), ("edit_file", {"path": path, "old_str": old, "new_str": new})]
    return [("edit_file", {"path": path, "old_str": old, "new_str": new}), ("patch", patch)]


def _edit(inp: Mapping[str, Any]) -> Mapped:
    alts = _edit_alternatives(
        inp.get("file_path"),
        inp.get("old_string"),
        inp.get("new_string"),
        inp.get("replace_all") is True,
    )
    return _calls([alts])


def _multi_edit(inp: Mapping[str, Any]) -> Mapped:
    edits = inp.get("edits")
    if not isinstance(edits, list) or not edits:
        return _calls("MultiEdit without a list of edits")
    out = []
    for e in edits:
        if not isinstance(e, dict):
            return _calls("MultiEdit holds an edit that is not an object")
        every = e.get("replace_all") is True
        out.append(
            _edit_alternatives(
                inp.get("file_path"), e.get("old_string"), e.get("new_string"), every
            )
        )
    return _calls(out)


def _notebook_edit(inp: Mapping[str, Any]) -> Mapped:
    # Replacing, inserting or deleting a cell rewrites the notebook file: a
    # file write, decided (and confined) as write_file is.
    source = inp.get("new_source")
    content = source if isinstance(source, str) else ""
    return _calls([[("write_file", {"path": inp.get("notebook_path"), "content": content})]])


def _glob(inp: Mapping[str, Any]) -> Mapped:
    args: dict[str, Any] = {"query": inp.get("pattern"), "target": "name"}
    if common.text(inp.get("path")):
        args["path"] = inp["path"]
    return _calls([[("search_files", args)]])


def _grep(inp: Mapping[str, Any]) -> Mapped:
    args: dict[str, Any] = {"query": inp.get("pattern"), "target": "content"}
    if common.text(inp.get("path")):
        args["path"] = inp["path"]
    if common.text(inp.get("glob")):
        args["pattern"] = inp["glob"]
    return _calls([[("search_files", args)]])


def _ls(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("list_dir", {"path": inp.get("path")})]])


def _web_fetch(inp: Mapping[str, Any]) -> Mapped:
    url = inp.get("url")
    return _calls([[("web_fetch", {"url": url}), ("web_extract", {"url": url})]])


def _web_search(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("web_search", {"query": inp.get("query")})]])


def _subagent(goal: Any, kind: Any) -> Alternatives:
    blueprint = kind if isinstance(kind, str) and kind else "general-purpose"
    return [
        ("delegate_task", {"goal": goal}),
        ("spawn_agent", {"blueprint": blueprint, "task": goal}),
    ]


def _agent(inp: Mapping[str, Any]) -> Mapped:
    isolation = inp.get("isolation")
    if isolation == "remote":
        return _only(
            "deny",
            "remote-agent",
            "an agent with isolation 'remote' runs in the cloud, where no hook of this "
            "machine decides its tool calls",
        )
    found: list[Alternatives] = [_subagent(inp.get("prompt"), inp.get("subagent_type"))]
    if isolation == "worktree":
        # The agent works in a new git worktree that Claude Code creates under
        # .claude/worktrees/: the same decision as EnterWorktree.
        found.append([("write_file", {"path": ".claude/worktrees/agent", "content": ""})])
    return _calls(found)


def _workflow(inp: Mapping[str, Any]) -> Mapped:
    goal = inp.get("name") or inp.get("scriptPath") or "workflow script"
    return _calls(
        [_subagent(goal, "workflow")],
        Fixed(
            "ask",
            "workflow-script",
            "a workflow is a JavaScript program that Claude Code runs to start sub-agents; "
            "Charter cannot judge a program, so a person decides (each sub-agent's own calls "
            "come to this hook too)",
        ),
    )


def _send_message(inp: Mapping[str, Any]) -> Mapped:
    args = {"agent_id": inp.get("to"), "message": inp.get("message")}
    return _calls([[("send_to_agent", args)]])


def _list_agents(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("task_list", {"kind": "agent.spawn"})]])


def _task_id(inp: Mapping[str, Any]) -> Any:
    for key in ("task_id", "shell_id", "bash_id", "taskId"):
        if inp.get(key) is not None:
            return inp[key]
    return None


def _task_output(inp: Mapping[str, Any]) -> Mapped:
    task = _task_id(inp)
    if inp.get("block") is True:
        return _calls([[("yield_until", {"task_id": task}), ("task_status", {"task_id": task})]])
    return _calls([[("task_status", {"task_id": task}), ("yield_until", {"task_id": task})]])


def _task_stop(inp: Mapping[str, Any]) -> Mapped:
    task = _task_id(inp)
    return _calls(
        [
            [
                ("task_control", {"task_id": task, "command": "cancel"}),
                ("kill_agent", {"agent_id": task}),
            ]
        ]
    )


# The todo list: Claude Code's task tools (TaskCreate and the rest) and the
# older TodoWrite keep a list of work for the session, as Charter's `todo`
# (or seed 004's todo_add/todo_done) does.
_REGION = "tasks"


def _task_create(inp: Mapping[str, Any]) -> Mapped:
    item = inp.get("subject")
    return _calls(
        [
            [
                ("todo", {"action": "add", "text": item}),
                ("todo_add", {"region": _REGION, "item": item}),
            ]
        ]
    )


def _task_read(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("todo", {"action": "list"})]])


def _task_update(inp: Mapping[str, Any]) -> Mapped:
    task = inp.get("taskId")
    number = int(task) if isinstance(task, str) and task.isascii() and task.isdigit() else None
    if inp.get("status") == "completed" and number is not None and number > 0:
        return _calls(
            [
                [
                    ("todo", {"action": "complete", "index": number}),
                    ("todo_done", {"region": _REGION, "id": number}),
                ]
            ]
        )
    # Any other change (subject, owner, dependencies) edits the same list.
    return _calls([[("todo", {"action": "list"})]])


def _todo_write(inp: Mapping[str, Any]) -> Mapped:
    todos = inp.get("todos")
    if not isinstance(todos, list):
        return _calls("TodoWrite without a list of todos")
    if not todos:
        return _calls([[("todo", {"action": "clear"})]])
    out: list[Alternatives] = []
    for item in todos:
        if not isinstance(item, dict):
            return _calls("TodoWrite holds a todo that is not an object")
        text = item.get("content")
        out.append(
            [
                ("todo", {"action": "add", "text": text}),
                ("todo_add", {"region": _REGION, "item": text}),
            ]
        )
    return _calls(out)


def _skill(inp: Mapping[str, Any]) -> Mapped:
    # Invoking a skill loads its instructions into the conversation; whatever
    # the skill then has the model do comes to this hook call by call.
    return _calls([[("skill_view", {"name": inp.get("skill")})]])


# Scheduling: work that runs later, in this session or (durable cron jobs,
# kept in .claude/scheduled_tasks.json) in later ones. Charter's
# schedule_manage is the plan's say on it.
_SCHEDULED = " schedules work for later; the plan's schedule_manage decides it"


def _cron_create(inp: Mapping[str, Any]) -> Mapped:
    args = {"action": "create", "schedule": inp.get("cron"), "prompt": inp.get("prompt")}
    return _calls([[("schedule_manage", args)]])


def _cron_delete(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("schedule_manage", {"action": "delete", "schedule_id": inp.get("id")})]])


def _cron_list(inp: Mapping[str, Any]) -> Mapped:
    return _calls([[("schedule_manage", {"action": "list"})]])


def _schedule_wakeup(inp: Mapping[str, Any]) -> Mapped:
    if inp.get("stop") is True:
        return _calls([[("schedule_manage", {"action": "delete", "schedule_id": "wakeup"})]])
    delay = inp.get("delaySeconds")
    when = f"once, {delay} s from now" if isinstance(delay, int | float) else "once, later"
    prompt = inp.get("prompt")
    args = {"action": "create", "schedule": when, "prompt": prompt if prompt else "wake up"}
    return _calls([[("schedule_manage", args)]])


def _enter_worktree(inp: Mapping[str, Any]) -> Mapped:
    path = inp.get("path")
    if path is not None:
        # Switching into an existing worktree moves the session there: it
        # must lie inside the workspace.
        return _calls([[("list_dir", {"path": path})]])
    name = inp.get("name")
    where = posixpath.join(".claude/worktrees", name if isinstance(name, str) and name else "new")
    return _calls([[("write_file", {"path": where, "content": ""})]])


def _exit_worktree(inp: Mapping[str, Any]) -> Mapped:
    if inp.get("action") == "keep":
        return _only(
            "allow",
            "client-session",
            "ExitWorktree with 'keep' only returns the session to the directory it started in",
        )
    # "remove" deletes the worktree Claude Code made under .claude/worktrees/.
    return _calls([[("write_file", {"path": ".claude/worktrees", "content": ""})]])


def _ask_user_question(inp: Mapping[str, Any]) -> Mapped:
    questions = inp.get("questions")
    if not isinstance(questions, list) or not questions:
        return _calls("AskUserQuestion without a list of questions")
    out: list[Alternatives] = []
    for q in questions:
        asked = q.get("question") if isinstance(q, dict) else None
        out.append([("clarify", {"question": asked}), ("ask_user_text", {"prompt": asked})])
    return _calls(out, _PERSON_ANSWERS)


def _exit_plan_mode(inp: Mapping[str, Any]) -> Mapped:
    plan = inp.get("plan")
    prompt = plan if isinstance(plan, str) and plan else "approve the plan"
    return _calls(
        [[("ask_user_confirm", {"prompt": prompt}), ("clarify", {"question": prompt})]],
        _PERSON_ANSWERS,
    )


# The question or approval is put to the person by Claude Code's own prompt:
# the hook asks, so that the prompt is shown (an allow would skip it).
_PERSON_ANSWERS = Fixed(
    "ask", "person-answers", "the person answers this in Claude Code's own prompt"
)


def _client_only(reason: str) -> Callable[[Mapping[str, Any]], Mapped]:
    def handler(inp: Mapping[str, Any]) -> Mapped:
        return _only("allow", "client-only", reason)

    return handler


_HANDLERS: dict[str, Callable[[Mapping[str, Any]], Mapped]] = {
    "Bash": _bash,
    "Monitor": _monitor,
    "Read": _read,
    "Write": _write,
    "Edit": _edit,
    "MultiEdit": _multi_edit,
    "NotebookEdit": _notebook_edit,
    "Glob": _glob,
    "Grep": _grep,
    "LS": _ls,
    "WebFetch": _web_fetch,
    "WebSearch": _web_search,
    "Agent": _agent,
    "Task": _agent,  # the name of Agent before 2.1
    "Workflow": _workflow,
    "SendMessage": _send_message,
    "ListAgents": _list_agents,
    "TaskOutput": _task_output,
    "BashOutput": _task_output,
    "TaskStop": _task_stop,
    "KillShell": _task_stop,
    "TaskCreate": _task_create,
    "TaskGet": _task_read,
    "TaskList": _task_read,
    "TaskUpdate": _task_update,
    "TodoWrite": _todo_write,
    "Skill": _skill,
    "CronCreate": _cron_create,
    "CronDelete": _cron_delete,
    "CronList": _cron_list,
    "ScheduleWakeup": _schedule_wakeup,
    "EnterWorktree": _enter_worktree,
    "ExitWorktree": _exit_worktree,
    "AskUserQuestion": _ask_user_question,
    "ExitPlanMode": _exit_plan_mode,
    "EnterPlanMode": _client_only(
        "EnterPlanMode only switches Claude Code to planning, where it makes no changes"
    ),
    "ToolSearch": _client_only(
        "ToolSearch only loads the schemas of Claude Code's deferred tools; each of them is "
        "decided when it is called"
    ),
    "ReportFindings": _client_only(
        "ReportFindings only shows review findings in Claude Code's interface"
    ),
    "DeferredToolPlaceholder": lambda inp: _only(
        "deny", "client-placeholder", "Claude Code's placeholder tool is never meant to be called"
    ),
}
_SCHEDULING = frozenset({"CronCreate", "CronDelete", "CronList", "ScheduleWakeup"})

# Every Claude Code tool name the adapter knows.
KNOWN_TOOLS: frozenset[str] = frozenset(_HANDLERS)


# -- how Claude Code reads a call's arguments --------------------------------

# The arguments each tool that touches files, commands or the network takes
# in Claude Code 2.1.332 (its sdk-tools.d.ts), with the older spellings its
# input repair still accepts (Read's `length`, Bash's `timeout_ms`, Grep's
# `-l`/`-c`/`-r` and `file_path`). Any other argument is refused, never
# ignored: Claude Code may act on an argument Charter does not read.
_FIELDS: dict[str, frozenset[str]] = {
    "Bash": frozenset(
        {
            "command",
            "timeout",
            "description",
            "run_in_background",
            "dangerouslyDisableSandbox",
            "timeout_ms",
            "command_description",
            "view_images",
        }
    ),
    "Monitor": frozenset({"description", "timeout_ms", "command", "ws"}),
    "Read": frozenset(
        {"file_path", "offset", "limit", "pages", "allow_large", "length", "description"}
    ),
    "Write": frozenset({"file_path", "content", "path"}),
    "Edit": frozenset(
        {"file_path", "old_string", "new_string", "replace_all", "old_str", "new_str"}
    ),
    "MultiEdit": frozenset({"file_path", "edits"}),
    "NotebookEdit": frozenset({"notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"}),
    "Glob": frozenset({"pattern", "path"}),
    "Grep": frozenset(
        {
            "pattern",
            "path",
            "glob",
            "output_mode",
            "-B",
            "-A",
            "-C",
            "context",
            "-n",
            "-i",
            "-o",
            "type",
            "head_limit",
            "offset",
            "multiline",
            "-l",
            "-c",
            "-r",
            "file_path",
        }
    ),
    "LS": frozenset({"path", "ignore"}),
    "WebFetch": frozenset({"url", "prompt", "offset"}),
    "WebSearch": frozenset({"query", "allowed_domains", "blocked_domains"}),
}
_FIELDS["Task"] = _FIELDS["Agent"] = frozenset(
    {
        "description",
        "prompt",
        "subagent_type",
        "model",
        "effort",
        "run_in_background",
        "name",
        "team_name",
        "mode",
        "isolation",
    }
)
# Arguments Claude Code's input repair reads as another one when that one is
# absent: (alias, name).
_ALIASES: dict[str, tuple[tuple[str, str], ...]] = {
    "Grep": (("file_path", "path"),),
    "Write": (("path", "file_path"),),
    "Edit": (("old_str", "old_string"), ("new_str", "new_string")),
}
# The argument that sends a call to another machine Claude Code is attached to.
_HOST_FIELD = "_host"
# The arguments Claude Code reads as a file or directory path.
_PATH_FIELDS: dict[str, tuple[str, ...]] = {
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "Glob": ("path",),
    "Grep": ("path",),
    "LS": ("path",),
    "EnterWorktree": ("path",),
}
# More images than one Bash call asks to view are refused, not decided piecemeal.
_MAX_IMAGES = 64
# Tools that search Claude Code's current directory when given no path.
_SEARCHES = frozenset({"Glob", "Grep"})


@dataclass
class _Where:
    """Where Claude Code acts for one call: the session, and its current
    directory (the event's cwd), which differs from the workspace only when
    the hook was given --workspace."""

    session: Session
    base: str
    notes: list[str] = field(default_factory=list)

    @property
    def same_root(self) -> bool:
        return posixpath.normpath(self.base) == posixpath.normpath(str(self.session.workspace))

    def path(self, value: Any) -> Any:
        """A path as Charter must read it to mean the file Claude Code means:
        trimmed as JavaScript trims (Claude Code reads " /etc/passwd" as
        "/etc/passwd"), and relative to Claude Code's current directory."""
        if not isinstance(value, str) or value == "":
            return value  # a wrong type or an empty path is the schema gate's to name
        trimmed = reach.js_trim(value)
        if not trimmed:
            return self.base  # Claude Code reads a blank path as its current directory
        if trimmed.startswith("~") or posixpath.isabs(trimmed) or self.same_root:
            return trimmed  # absolute, or refused by confinement as written
        return posixpath.join(self.base, trimmed)


def _as_claude_code_reads(tool: str, inp: Mapping[str, Any], where: _Where) -> dict[str, Any] | str:
    """``inp`` with every path as Claude Code would resolve it, or why the
    call cannot be decided (an argument Charter does not read)."""
    fields = _FIELDS.get(tool)
    if fields is not None:
        if _HOST_FIELD in inp:
            return (
                f"{tool} names an attached machine to run on ({_HOST_FIELD!r}); Charter "
                "decides for this machine's workspace only"
            )
        odd = sorted(k for k in inp if k not in fields)
        if odd:
            shown = ", ".join(repr(k[:40]) for k in odd[:4])
            return (
                f"{tool} gives {shown}, which Charter does not read; Claude Code may act on "
                "it, so the call cannot be decided"
            )
    out = dict(inp)
    for alias, name in _ALIASES.get(tool, ()):
        if alias not in out:
            continue
        given = out.pop(alias)
        if out.get(name) is not None and out[name] != given and name in _PATH_FIELDS[tool]:
            # Two places to act on: Charter cannot tell which one Claude Code takes.
            return f"{tool} gives both {name!r} and {alias!r}, with different values"
        out.setdefault(name, given)
    for key in _PATH_FIELDS.get(tool, ()):
        if key in out:
            out[key] = where.path(out[key])
    if tool in _SEARCHES and not common.text(out.get("path")) and not where.same_root:
        out["path"] = where.base
    if tool == "Glob" and isinstance(out.get("pattern"), str):
        # A pattern with a directory in it searches there: an absolute one
        # instead of `path`, a relative one below it.
        root = reach.literal_root(out["pattern"])
        if root:
            given = common.text(out.get("path"))
            out["path"] = where.path(root if given is None else posixpath.join(given, root))
    return out


def _images_viewed(paths: Any, where: _Where) -> list[Alternatives] | str:
    """Bash's view_images: files Claude Code reads after the command and
    returns to the model, each decided as a read of that file."""
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        return "Bash's view_images is not a list of paths"
    if len(paths) > _MAX_IMAGES:
        return f"Bash's view_images names more than {_MAX_IMAGES} files"
    return [[("read_file", {"path": where.path(p)})] for p in paths]


def _in_directory(found: Found, where: _Where) -> Found:
    """A command's calls judged in Claude Code's current directory when it is
    not the workspace root: `terminal` runs there; `shell` is judged as
    `cd` there followed by the command."""
    rel, problem = reach.working_dir(where.session.workspace, where.base)
    if problem:
        return problem
    if rel == "." or isinstance(found, str):
        return found
    out: list[Alternatives] = []
    for alts in found:
        moved: Alternatives = []
        for tool, args in alts:
            command = args.get("command")
            if tool == "terminal":
                moved.append((tool, {**args, "cwd": rel}))
            elif isinstance(command, str):
                moved.append((tool, {**args, "command": f"cd -- {shlex.quote(rel)}\n{command}"}))
            else:
                moved.append((tool, args))
        out.append(moved)
    where.notes.append(f"judged in {rel!r}, Claude Code's current directory")
    return out


def _credentials_searched(read: Mapping[str, Any], where: _Where) -> list[Alternatives] | str:
    """A Grep of a directory reads every file below it that its glob lets
    through, hidden ones included: one search of each credential file it may
    read, so confinement asks as it asks for that file."""
    given = common.text(read.get("path"))
    target = given if given else str(where.session.workspace)
    workspace = where.session.workspace
    found = reach.credentials_searched(workspace, target, common.text(read.get("glob")))
    if isinstance(found, str):
        return found
    if found:
        root = os.path.realpath(workspace)
        shown = ", ".join(os.path.relpath(f, root) for f in found)
        where.notes.append(f"the search reads {shown}")
    query = read.get("pattern")
    return [[("search_files", {"query": query, "target": "content", "path": f})] for f in found]


def translate(
    event: Mapping[str, Any], session: Session, *, base: str | None = None
) -> Translation:
    """The Charter calls a Claude Code event stands for; ``base`` is the
    directory Claude Code resolves relative paths against and runs commands
    in, its current directory (default: the workspace)."""
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
    handler = _HANDLERS.get(tool)
    if handler is None:
        return Translation([], f"Claude Code tool '{tool}' has no Charter counterpart")
    where = _Where(session, base if base is not None else str(session.workspace))
    read = _as_claude_code_reads(tool, inp, where)
    if isinstance(read, str):
        return Translation([], read)
    found, fixed = handler(read)
    if isinstance(found, str):
        return Translation([], found)
    if tool in ("Bash", "Monitor") and not where.same_root:
        found = _in_directory(found, where)
        if isinstance(found, str):
            return Translation([], found)
    if tool == "Grep":
        more = _credentials_searched(read, where)
        if isinstance(more, str):
            return Translation([], f"Grep: {more}")
        found = [*found, *more]
    if tool == "Bash" and read.get("view_images") is not None:
        shown = _images_viewed(read["view_images"], where)
        if isinstance(shown, str):
            return Translation([], shown)
        found = [*found, *shown]
    note = f"{tool}{_SCHEDULED}" if tool in _SCHEDULING else "; ".join(where.notes)
    return Translation(common.choose_calls(session, found, call_id), note=note, fixed=fixed)


def hook_output(decision: Permission, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def _mode(event: Mapping[str, Any]) -> str | None:
    """The event's permission mode; None when the event gives none."""
    mode = event.get("permission_mode")
    if mode is None:
        return None
    return mode if isinstance(mode, str) else "unknown"


def _attended(mode: str | None) -> bool:
    return mode is None or mode in ATTENDED_MODES


def _unasked(mode: str | None) -> str:
    return (
        f"Claude Code's permission mode is {mode!r}, in which nobody is asked, so an ask is "
        "answered deny"
    )


def _refuse(reason: str, event: Mapping[str, Any] | None) -> dict[str, Any]:
    if event is None:
        # An event that cannot be read says nothing about who would be asked.
        return hook_output("deny", f"charter: {reason}")
    mode = _mode(event)
    if _attended(mode):
        return hook_output("ask", f"charter: {reason}")
    return hook_output("deny", f"charter: {reason}; {_unasked(mode)}")


def _is_subagent(event: Mapping[str, Any]) -> bool:
    # A call a sub-agent makes names the agent; Charter runs sub-agents with
    # the stage's unattended tool set (nobody watches them).
    return bool(common.text(event.get("agent_id")))


def decide_claude_code_stdin(
    options: common.HookOptions, *, contain: Sequence[str] | None = None
) -> dict[str, Any]:
    """``charter hook claude-code``'s answer to the event on stdin, read with
    one byte over the bound, so an oversized event is denied, not cut short
    and decided."""
    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    return decide_event(
        raw,
        plan_path=options.plan_path,
        agent=options.agent,
        stage=options.stage,
        workspace=options.workspace,
        allow=options.allow,
        contain=contain,
    )


def decide_event(
    raw: bytes,
    *,
    plan_path: str | Path,
    agent: str | None = None,
    stage: str | None = None,
    workspace: str | Path | None = None,
    allow: Iterable[str] = (),
    prepared: PreparedPlan | None = None,
    contain: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The hook answer for one raw event. ``prepared``: a plan already loaded
    (the decision server), used instead of reading ``plan_path``.
    ``contain``: the ``charter sandbox`` argv (up to the plan) an allowed
    shell command is rewritten to run under (see
    :mod:`charter.runtime.hooks.contain`). Never raises."""
    options = common.HookOptions(plan_path, agent, stage, workspace, tuple(allow))

    def decide(event: Mapping[str, Any], session: Session) -> dict[str, Any]:
        answer = _decide(event, session)
        if contain is None:
            return answer
        return _contained(answer, event, session, contain)

    return common.answer_event(
        raw,
        "PreToolUse",
        options,
        refuse=_refuse,
        decide=decide,
        prepared=prepared,
        unattended=_is_subagent,
    )


def _decide(event: Mapping[str, Any], session: Session) -> dict[str, Any]:
    cwd = common.text(event.get("cwd"))
    base = cwd if cwd and posixpath.isabs(cwd) else str(session.workspace)
    translation = translate(event, session, base=base)
    if translation.empty:
        return _refuse(translation.problem, event)
    tool = str(event.get("tool_name"))
    outcomes = common.decide_translation(session, translation, tool)
    return _answer(outcomes, _mode(event), translation.note)


def _contained(
    answer: dict[str, Any], event: Mapping[str, Any], session: Session, prefix: Sequence[str]
) -> dict[str, Any]:
    """``answer`` with an allowed shell command rewritten to run inside the
    stage's sandbox, or, when that cannot be done exactly, refused."""
    from charter.runtime.hooks.contain import (
        CONTAINED_TOOLS,
        client_rule_hit,
        contained_command,
        home_of,
        settings_files,
    )

    out = answer["hookSpecificOutput"]
    tool = event.get("tool_name")
    if out["permissionDecision"] != "allow" or tool not in CONTAINED_TOOLS:
        return answer
    inp = event.get("tool_input")
    command = inp.get("command") if isinstance(inp, dict) else None
    if not isinstance(inp, dict) or not isinstance(command, str):
        return answer  # a Monitor of a WebSocket runs no command
    reason = str(out["permissionDecisionReason"])
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or str(session.workspace))
    # Claude Code matches its own rules against the rewritten command, where
    # the team's deny of this one would no longer match: apply it here.
    hit = client_rule_hit(command, settings_files(project, home_of()))
    if hit is not None:
        kind, rule = hit
        said = f"charter: Claude Code's {kind} rule {rule} covers this command, and --contain "
        said += "rewrites it where Claude Code would not see the rule"
        if kind == "ask" and _attended(_mode(event)):
            return hook_output("ask", said)
        return hook_output("deny", said)
    rewritten = contained_command(
        [*prefix, "--agent", session.agent.agent.name, "--stage", session.stage_name],
        session.workspace,
        command,
    )
    if rewritten is None:
        return hook_output("deny", "charter: the command cannot be passed to the sandbox exactly")
    where = f"{reason} (contained: it runs inside stage {session.stage_name!r}'s sandbox)"
    result = hook_output("allow", where)
    result["hookSpecificOutput"]["updatedInput"] = {**inp, "command": rewritten}
    return result


def _answer(outcomes: list[Outcome], mode: str | None, note: str) -> dict[str, Any]:
    out = common.worst(outcomes)
    said = common.said(out, note)
    if out.decision != "ask" or _attended(mode):
        return hook_output(out.decision, f"charter: {said}")
    flags = {o.liftable_by for o in outcomes if o.decision == "ask"}
    if "" in flags:
        how = "only a person can approve it"
    else:
        how = f"to allow it, add {' '.join(sorted(flags))} to the hook command"
    return hook_output("deny", f"charter: {said}; {_unasked(mode)} ({how})")
