"""Gemini CLI BeforeTool hook: a compiled plan decides Gemini CLI's tool calls.

Gemini CLI runs the hook command before each tool call and passes the event as
JSON on stdin (``session_id``, ``cwd``, ``hook_event_name`` = ``BeforeTool``,
``tool_name``, ``tool_input``, optional ``mcp_context``). This module maps the
call onto the Charter calls it stands for, runs the gates on each without
executing anything, and answers with the hook's decision object::

    {"decision": "allow" | "deny" | "ask", "reason": "..."}

Gemini CLI 0.61 reads ``"ask"`` as "confirm with the person first", in every
approval mode, YOLO included; in a headless run (``-p``) nobody answers and
the run waits until it is stopped. The event does not say whether a person is
present, so the plan's ask is answered as the hook is told: ``deny`` (the
default, ``ask="deny"``), the reason naming the launch flag that would lift
it; ``ask`` (``ask="ask"``, for a session a person watches); or ``{}`` (no
opinion) with a ``systemMessage`` for the user (``ask="defer"``), so Gemini
CLI's own confirmation settings decide.

Gemini CLI lets a call through when a hook fails, times out or prints
anything but JSON, so every problem here is an answer, never an exception:
input it cannot read, a plan it cannot load, a tool with no Charter
counterpart, arguments that name a file ambiguously. Each answers ``deny``
with the reason. A call that stands for several Charter calls (every URL of a
``web_fetch`` prompt, every file of ``read_many_files``) answers with the
strictest.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from charter.runtime.hooks import common, reach
from charter.runtime.hooks.common import (
    MAX_EVENT_BYTES,
    Alternatives,
    Fixed,
    HookOptions,
    Translation,
)
from charter.runtime.hooks.contain import (
    GEMINI_CONTAINED_TOOLS,
    contained_command,
    gemini_policy_files,
    gemini_rule_hit,
    home_of,
)
from charter.runtime.hooks.reach import (
    GLOB_MAGIC,
    MAX_WALK,
    brace_variants,
    could_match,
    is_sensitive,
    part_matcher,
    walk,
    working_dir,
)
from charter.runtime.results import ToolCall

if TYPE_CHECKING:
    from charter.runtime.gates import Outcome
    from charter.runtime.plan.prepared import PreparedPlan
    from charter.runtime.policy.session import Session

__all__ = [
    "ASK_MODES",
    "KNOWN_TOOLS",
    "MAX_EVENT_BYTES",
    "AskMode",
    "HookOptions",
    "decide_event",
    "decide_gemini_cli_stdin",
    "deny",
    "translate",
]

# What the plan's ask becomes: a deny naming the flag that lifts it, Gemini
# CLI's own "ask" (a person confirms), or no opinion, leaving it to Gemini
# CLI's own confirmation settings.
AskMode = Literal["deny", "ask", "defer", "auto"]
ASK_MODES: tuple[AskMode, ...] = ("deny", "ask", "defer", "auto")

# Gemini CLI renamed some tools; a hook sees whichever name the running
# version uses.
_RENAMED = {"search_file_content": "grep_search"}
# More URLs than Gemini CLI fetches for one call (20); past this the prompt is
# refused rather than decided piecemeal.
_MAX_URLS = 64
# Everything Gemini CLI's URL parsing may fetch: a run of non-space text after
# an http(s) scheme, in any letter case, wherever it starts in a word.
_URL = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://[^\s]+")
# Gemini CLI cuts the prompt into words at JavaScript's whitespace, which
# Python's \s does not all match (U+FEFF): each word is searched on its own.
_JS_SPACE = re.compile(f"[{re.escape(reach.JS_WHITESPACE)}]+")
# read_files takes at most this many paths per call.
_READ_FILES_MAX = 64
# Directories Gemini CLI leaves out of read_many_files unless the call turns
# its default excludes off.
_DEFAULT_EXCLUDED_DIRS = frozenset({"node_modules", ".git", "bower_components", ".svn", ".hg"})


def deny(reason: str, event: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The deny answer, ``reason`` shown to the model as the tool's error
    (also the adapter's fail-closed answer, whatever the event)."""
    return {"decision": "deny", "reason": f"charter: {reason}"}


@dataclass
class _Ctx:
    """What translating one call needs besides its arguments."""

    session: Session
    # The directory Gemini CLI resolves relative paths against (the event's
    # cwd); differs from the workspace only when --workspace names another.
    base: str
    notes: list[str] = field(default_factory=list)

    @functools.cached_property
    def root(self) -> str:
        return os.path.realpath(self.session.workspace)

    @property
    def same_root(self) -> bool:
        return os.path.normpath(self.base) == os.path.normpath(str(self.session.workspace))

    def path(self, value: Any) -> Any:
        """A path as Charter must read it to mean the file Gemini CLI means."""
        if not isinstance(value, str) or self.same_root:
            return value  # a wrong type is the schema gate's to name
        if value.startswith("~") or posixpath.isabs(value):
            return value  # absolute, or refused by confinement as written
        return posixpath.join(self.base, value)

    def readings(self, value: Any) -> list[Any]:
        """Every path Gemini CLI may take ``value`` for, each as :meth:`path`
        gives it (see :meth:`spellings`)."""
        return [self.path(v) for v in self.spellings(value)]

    def spellings(self, value: Any) -> list[Any]:
        """``value`` as written; without a leading '@' (Gemini CLI drops it
        when no file of that name exists, so '@../x' is '../x'); and with its
        percent escapes decoded (Gemini CLI decodes the resolved path of a
        file it reads or searches, so '.%65nv' is '.env')."""
        if not isinstance(value, str):
            return [value]
        found = [value]
        if value.startswith("@") and len(value) > 1:
            found.append(value[1:].lstrip("/\\") or value)
        for one in list(found):
            decoded = reach.js_decode_uri_component(one)
            if decoded is not None:
                found.append(decoded)
        return list(dict.fromkeys(found))

    def offers(self, tool: str) -> bool:
        return tool in self.session.offered()


def _one_of(inp: Mapping[str, Any], *names: str) -> tuple[Any, str]:
    """The value of whichever of ``names`` the call gives (Gemini CLI versions
    name the same argument differently), or a problem when it gives two that
    differ: Charter cannot tell which one Gemini CLI would act on."""
    given = [(n, inp[n]) for n in names if inp.get(n) is not None]
    for n, v in given[1:]:
        if v != given[0][1]:
            return None, f"the call gives both '{given[0][0]}' and '{n}', with different values"
    return (given[0][1] if given else None), ""


# -- one handler per Gemini CLI tool ------------------------------------------

Found = list[Alternatives] | str


def _read_file(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    path, problem = _one_of(inp, "file_path", "absolute_path", "path")
    return problem or [[("read_file", {"path": p})] for p in ctx.readings(path)]


def _write_file(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    content = inp.get("content")
    paths = ctx.readings(inp.get("file_path"))
    return [[("write_file", {"path": p, "content": content})] for p in paths]


def _corrected(ctx: _Ctx, value: Any) -> list[Any] | str:
    """The readings of an edit's path, and, for a relative one that names no
    file, every file Gemini CLI's path correction may edit instead (it looks
    below the workspace for a file whose path ends with it: 'settings.json'
    may be .gemini/settings.json)."""
    out = ctx.readings(value)
    for one in ctx.spellings(value):
        if not isinstance(one, str) or not one or posixpath.isabs(one):
            continue
        if os.path.lexists(os.path.join(ctx.base, one)) or ".." in one.split("/"):
            continue  # it names a file, or confinement judges it as written
        found = reach.files_ending_with(ctx.root, one)
        if isinstance(found, str):
            return f"replace: {found}"
        out.extend(found)
    return list(dict.fromkeys(out))


def _replace(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    old, new = inp.get("old_string"), inp.get("new_string")
    out: list[Alternatives] = []
    paths = _corrected(ctx, inp.get("file_path"))
    if isinstance(paths, str):
        return paths
    for path in paths:
        if old == "":
            # An empty old_string makes Gemini CLI create the file with new_string.
            out.append([("write_file", {"path": path, "content": new})])
            continue
        out.append(
            [
                ("edit_file", {"path": path, "old_str": old, "new_str": new}),
                ("patch", {"path": path, "old": old, "new": new}),
            ]
        )
    return out


def _list_directory(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    path, problem = _one_of(inp, "dir_path", "path")
    return problem or [[("list_dir", {"path": p})] for p in ctx.readings(path)]


def _glob(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    path, problem = _one_of(inp, "dir_path", "path")
    if problem:
        return problem
    pattern = inp.get("pattern")
    out: list[Alternatives] = []
    for where in ctx.readings(path):
        out.append([("search_files", {"query": pattern, "target": "name", "path": where})])
    if isinstance(pattern, str) and (path is None or isinstance(path, str)):
        # The glob package starts where the pattern's own directory says:
        # an absolute one anywhere, a '..' above the search directory.
        roots = reach.pattern_roots(pattern)
        if isinstance(roots, str):
            return f"glob: {roots}"
        for root in roots:
            if root == ".":
                continue
            for where in ctx.readings(posixpath.join(path or ".", root)):
                out.append([("search_files", {"query": pattern, "target": "name", "path": where})])
    return out


def _grep(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    path, problem = _one_of(inp, "dir_path", "path")
    include, problem2 = _one_of(inp, "include_pattern", "include")
    if problem or problem2:
        return problem or problem2
    query = inp.get("pattern")
    out: list[Alternatives] = []
    for where in ctx.readings(path):
        args = {"query": query, "target": "content", "path": where, "pattern": include}
        out.append([("search_files", args)])
        # A search of a directory reads the credential files below it that
        # its include pattern lets through (a glob names even hidden ones),
        # and, in the fallback that globs, the files its links point to.
        target = where if isinstance(where, str) else ctx.base
        glob = include if isinstance(include, str) else None
        found = reach.credentials_searched(ctx.session.workspace, target, glob, file_links=True)
        if isinstance(found, str):
            return f"grep_search: {found}"
        for f in found:
            out.append([("search_files", {"query": query, "target": "content", "path": f})])
        if found:
            shown = ", ".join(os.path.relpath(f, ctx.root) for f in found)
            ctx.notes.append(f"the search reads {shown}")
    if isinstance(include, str) and (path is None or isinstance(path, str)):
        # Without ripgrep, Gemini CLI's last fallback globs the include
        # pattern from the search directory: an absolute or climbing pattern,
        # or a link it passes through, reads outside it.
        # That fallback always leaves Gemini CLI's default excludes out.
        reached = _pattern_reach(ctx, posixpath.join(path or ".", include), skip_defaults=True)
        if isinstance(reached, str):
            return f"grep_search: {reached}"
        for p in reached:
            out.append([("search_files", {"query": query, "target": "content", "path": p})])
    return out


def _shell(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    command = inp.get("command")
    background = inp.get("is_background") is True
    if inp.get("additional_permissions") not in (None, {}):
        # With tool sandboxing on, Gemini CLI widens its sandbox for the
        # command (network, paths to read or write) as the call asks.
        return (
            "run_shell_command asks for additional_permissions, which widen Gemini CLI's own "
            "sandbox beyond what the stage grants; Charter cannot judge them"
        )
    where, problem = _one_of(inp, "dir_path", "directory")
    if problem:
        return problem
    rel = "."
    if where is not None or not ctx.same_root:
        # Gemini CLI runs the command in dir_path, resolved against its root.
        target = ctx.path(where) if where is not None else ctx.base
        if not isinstance(target, str):
            return "run_shell_command's dir_path is not a string"
        rel, problem = working_dir(ctx.session.workspace, target)
        if problem:
            return problem
    terminal: dict[str, Any] = {"command": command}
    if rel != ".":
        terminal["cwd"] = rel
    if background:
        terminal["background"] = True
    # terminal takes a working directory and background mode; shell runs in
    # the workspace root, in the foreground.
    if ctx.offers("terminal") and (rel != "." or background or not ctx.offers("shell")):
        return [[("terminal", terminal)]]
    if rel != "." and isinstance(command, str):
        # Judged as Charter's own shell would have to run it: cd first, so the
        # guard resolves every relative path from that directory.
        ctx.notes.append(
            f"judged as `cd -- {shlex.quote(rel)}` followed by the command, since the stage's "
            "shell runs in the workspace root"
        )
        return [[("shell", {"command": f"cd -- {shlex.quote(rel)}\n{command}"})]]
    return [[("shell", {"command": command})]]


def _read_many_files(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    entries: list[str] = []
    # Older versions take `paths` and add `include`; newer ones take `include`
    # alone. Gemini CLI reads the union.
    for key in ("paths", "include"):
        given = inp.get(key)
        if given is None:
            continue
        if not isinstance(given, list) or not all(isinstance(e, str) and e for e in given):
            return f"read_many_files' {key!r} is not a list of non-empty strings"
        entries.extend(given)
    if not entries:
        return "read_many_files names no files"
    defaults = inp.get("useDefaultExcludes") is not False
    paths: list[str] = []
    for entry in entries:
        # Gemini CLI turns backslashes into '/' before it globs.
        pattern = entry.replace("\\", "/")
        paths.append(ctx.path(pattern))
        if not GLOB_MAGIC.search(pattern):
            if not os.path.isdir(os.path.join(ctx.base, pattern)):
                continue
            pattern = pattern.rstrip("/") + "/**"  # a directory: whatever lies below
        reached = _pattern_reach(ctx, pattern, skip_defaults=defaults)
        if isinstance(reached, str):
            return reached
        paths.extend(reached)
    unique = list(dict.fromkeys(paths))
    if ctx.offers("read_files") or not ctx.offers("read_file"):
        chunks = [unique[i : i + _READ_FILES_MAX] for i in range(0, len(unique), _READ_FILES_MAX)]
        return [[("read_files", {"paths": chunk})] for chunk in chunks]
    return [[("read_file", {"path": p})] for p in unique]


def _web_fetch(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    urls: list[str] = []
    direct = inp.get("url")
    if direct is not None:
        if not isinstance(direct, str):
            return "web_fetch's url is not a string"
        urls.append(direct)
    prompt = inp.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str):
            return "web_fetch's prompt is not a string"
        urls.extend(u for word in _JS_SPACE.split(prompt) for u in _URL.findall(word))
    # Gemini CLI fetches a GitHub file page from raw.githubusercontent.com.
    urls.extend(raw for raw in map(_github_raw, urls) if raw is not None)
    unique = list(dict.fromkeys(urls))
    if not unique:
        return "web_fetch's prompt holds no http(s) URL, so Charter cannot tell what it fetches"
    if len(unique) > _MAX_URLS:
        return f"web_fetch's prompt holds {len(unique)} URLs; more than {_MAX_URLS} are refused"
    return [[("web_fetch", {"url": u}), ("web_extract", {"url": u})] for u in unique]


def _github_raw(url: str) -> str | None:
    """The raw.githubusercontent.com URL Gemini CLI fetches instead of a
    github.com '/blob/' page, or None for any other URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if host != "github.com" or "/blob/" not in parts.path:
        return None
    netloc = parts.netloc.rpartition("@")[2]
    port = netloc.rpartition(":")[2] if netloc.count(":") == 1 else ""
    where = "raw.githubusercontent.com" + (f":{port}" if port else "")
    path = re.sub(r"^/([^/]+/[^/]+)/blob/", r"/\1/", parts.path)
    return urlunsplit((parts.scheme, where, path, parts.query, parts.fragment))


def _web_search(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    return [[("web_search", {"query": inp.get("query")})]]


def _write_todos(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    todos = inp.get("todos")
    if not isinstance(todos, list):
        return "write_todos without a list of todos"
    if not todos:
        return [[("todo", {"action": "clear"})]]
    out: list[Alternatives] = []
    for item in todos:
        if not isinstance(item, dict):
            return "write_todos holds a todo that is not an object"
        out.append([("todo", {"action": "add", "text": item.get("description")})])
    return out


def _ask_user(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    questions = inp.get("questions")
    if not isinstance(questions, list) or not questions:
        return "ask_user without a list of questions"
    out: list[Alternatives] = []
    for q in questions:
        asked = q.get("question") if isinstance(q, dict) else None
        out.append([("ask_user_text", {"prompt": asked}), ("clarify", {"question": asked})])
    return out


def _save_memory(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    return (
        "Gemini CLI tool 'save_memory' writes to Gemini CLI's memory file, outside the "
        "workspace and kept for later sessions; it has no Charter counterpart"
    )


def _invoke_agent(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    # A sub-agent: the plan's sub-agent tools decide whether one may start;
    # the sub-agent's own tool calls come to this hook one by one.
    goal, name = inp.get("prompt"), inp.get("agent_name")
    blueprint = name if isinstance(name, str) and name else "generalist"
    return [
        [("delegate_task", {"goal": goal}), ("spawn_agent", {"blueprint": blueprint, "task": goal})]
    ]


def _activate_skill(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    # Activating a skill loads its instructions; what they then have the model
    # do comes to this hook call by call.
    return [[("skill_view", {"name": inp.get("name")})]]


def _list_background(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    return [[("task_list", {"kind": "terminal.exec"})]]


def _read_background(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    pid = inp.get("pid")
    task = str(pid) if isinstance(pid, int) and not isinstance(pid, bool) else pid
    return [[("task_status", {"task_id": task})]]


def _tracker_create(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    # The task tracker is the session's todo list, as write_todos is.
    return [[("todo", {"action": "add", "text": inp.get("title")})]]


def _tracker_other(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    return [[("todo", {"action": "list"})]]


def _exit_plan_mode(inp: Mapping[str, Any], ctx: _Ctx) -> Found:
    # Gemini CLI asks the person to approve the plan: the plan's say on
    # putting a question to the person decides whether it may.
    prompt = "approve the plan"
    return [[("ask_user_confirm", {"prompt": prompt}), ("clarify", {"question": prompt})]]


# Gemini CLI's own bookkeeping: no file, process or network is touched, so
# the adapter decides them itself (Gemini CLI's own settings still apply).
_CLIENT_ONLY: dict[str, Fixed] = {
    "update_topic": Fixed(
        "allow",
        "client-only",
        "update_topic only records the model's account of its work in Gemini CLI's interface",
    ),
    "enter_plan_mode": Fixed(
        "allow",
        "client-only",
        "enter_plan_mode only switches Gemini CLI to planning, where it makes no changes",
    ),
    "complete_task": Fixed(
        "allow", "client-only", "complete_task only hands a sub-agent's answer back to its parent"
    ),
    "get_internal_docs": Fixed(
        "allow",
        "client-only",
        "get_internal_docs only reads the documentation that ships with Gemini CLI",
    ),
}


def _docs_problem(inp: Mapping[str, Any]) -> str:
    """Why a get_internal_docs path may leave Gemini CLI's documentation
    folder, or "". Gemini CLI checks only that the resolved path starts with
    the folder's path as text, so '../docs-x/y' passes its check."""
    path = inp.get("path")
    if path is None or path == "":
        return ""
    if not isinstance(path, str):
        return "get_internal_docs' path is not a string"
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "~")) or ".." in parts or "\x00" in path:
        return (
            f"get_internal_docs path {path[:200]!r} may lead out of Gemini CLI's documentation "
            "folder; give a path the documentation list names"
        )
    return ""


_HANDLERS: dict[str, Callable[[Mapping[str, Any], _Ctx], Found]] = {
    "read_file": _read_file,
    "write_file": _write_file,
    "replace": _replace,
    "list_directory": _list_directory,
    "glob": _glob,
    "grep_search": _grep,
    "run_shell_command": _shell,
    "read_many_files": _read_many_files,
    "web_fetch": _web_fetch,
    "google_web_search": _web_search,
    "write_todos": _write_todos,
    "ask_user": _ask_user,
    "save_memory": _save_memory,
    "invoke_agent": _invoke_agent,
    "activate_skill": _activate_skill,
    "list_background_processes": _list_background,
    "read_background_output": _read_background,
    "exit_plan_mode": _exit_plan_mode,
    "tracker_create_task": _tracker_create,
    "tracker_update_task": _tracker_other,
    "tracker_get_task": _tracker_other,
    "tracker_list_tasks": _tracker_other,
    "tracker_add_dependency": _tracker_other,
    "tracker_visualize": _tracker_other,
}

# Every Gemini CLI tool name the adapter knows.
KNOWN_TOOLS: frozenset[str] = frozenset(_HANDLERS) | frozenset(_CLIENT_ONLY) | frozenset(_RENAMED)


# -- what a read_many_files pattern can reach ---------------------------------


def _pattern_reach(ctx: _Ctx, pattern: str, *, skip_defaults: bool) -> list[str] | str:
    """The paths confinement must see for ``pattern`` besides the pattern as
    written: each brace alternative as written (one may lead outside), and the
    credential files and symbolic links the pattern may reach.

    Gemini CLI matches letter case loosely and includes dot files; the match
    here is looser still (a part it cannot read matches any name), so it never
    misses a file Gemini CLI would read; it may name one Gemini CLI would not,
    which only makes the answer stricter."""
    variants = brace_variants(pattern)
    if variants is None:
        return f"the pattern {pattern!r} has braces Charter cannot expand"
    out: list[str] = []
    seen = 0
    for variant in variants:
        out.append(ctx.path(variant))
        norm = posixpath.normpath(variant)
        parts = [p for p in norm.split("/") if p]
        cut = next((i for i, p in enumerate(parts) if GLOB_MAGIC.search(p)), len(parts))
        start = "/" if norm.startswith("/") else ctx.base
        top = os.path.realpath(os.path.join(start, *parts[:cut]))
        if top != ctx.root and not top.startswith(ctx.root + os.sep):
            continue  # confinement refuses the variant as written
        matchers = tuple(part_matcher(p) for p in parts[cut:])
        if not matchers or not os.path.isdir(top):
            continue

        def enter(rel: list[str], m: tuple[re.Pattern[str] | str, ...] = matchers) -> bool:
            return could_match(m, tuple(rel), below=True)

        skip = _DEFAULT_EXCLUDED_DIRS if skip_defaults else frozenset()
        for rel, full, is_dir, is_link in walk(top, skip, enter):
            seen += 1
            if seen > MAX_WALK:
                return (
                    f"the pattern {pattern!r} reaches more than {MAX_WALK} "
                    "files and directories; name the files, or a narrower pattern"
                )
            if is_dir and not is_link:
                continue  # Gemini CLI reads files; what lies below is walked
            if is_dir:  # a link to a directory: does the pattern go through it?
                hit = could_match(matchers, tuple(rel), below=True, lead_guard=cut == 0)
            else:
                hit = could_match(matchers, tuple(rel), below=False)
            ws_rel = os.path.relpath(full, ctx.root).replace(os.sep, "/")
            if hit and (is_link or is_sensitive(ws_rel)):
                out.append(full)
    return out


# -- the event ------------------------------------------------------------------


def translate(
    event: Mapping[str, Any], session: Session, *, base: str | None = None
) -> Translation:
    """The Charter calls a Gemini CLI event stands for; ``base`` is the
    directory its relative paths start from (default: the workspace)."""
    tool = event.get("tool_name")
    inp = event.get("tool_input")
    if not isinstance(tool, str) or not tool:
        return Translation([], "the event has no tool_name")
    if not isinstance(inp, dict):
        return Translation([], "the event's tool_input is not an object")
    ctx = _Ctx(session, base if base is not None else str(session.workspace))
    mcp = _mcp_identity(tool, event.get("mcp_context"))
    if isinstance(mcp, str):
        return Translation([], mcp)
    if mcp is not None:
        name = common.mcp_plan_name(session, *mcp)
        if name is None:
            return Translation([], f"MCP tool '{mcp[1]}' of server '{mcp[0]}' is not in the plan")
        return Translation([ToolCall(name, dict(inp))])
    fixed = _CLIENT_ONLY.get(tool)
    if fixed is not None:
        problem = _docs_problem(inp) if tool == "get_internal_docs" else ""
        return Translation([], problem) if problem else Translation([], fixed=[fixed])
    handler = _HANDLERS.get(_RENAMED.get(tool, tool))
    if handler is None:
        return Translation([], f"Gemini CLI tool '{tool}' has no Charter counterpart")
    found = handler(inp, ctx)
    if isinstance(found, str):
        return Translation([], found)
    return Translation(common.choose_calls(session, found), note="; ".join(ctx.notes))


def _mcp_identity(tool: str, context: Any) -> tuple[str, str] | str | None:
    """(server, tool) for an MCP call, None for a built-in one, or why the two
    ways Gemini CLI names an MCP tool disagree."""
    named = common.split_mcp_name(tool)
    given: tuple[str, str] | None = None
    if isinstance(context, dict):
        server = common.text(context.get("server_name"))
        name = common.text(context.get("tool_name"))
        if server and name:
            given = (server, name)
    if given is not None and named is not None and given != named:
        return (
            f"the tool is named '{tool}' but its mcp_context names tool '{given[1]}' "
            f"of server '{given[0]}'"
        )
    if given is None and named is None and tool.startswith("mcp__"):
        return f"MCP tool name '{tool}' is not of the form mcp__<server>__<tool>"
    return given or named


def decide_gemini_cli_stdin(
    options: HookOptions, *, ask: AskMode = "deny", contain: Sequence[str] | None = None
) -> dict[str, Any]:
    """``charter hook gemini-cli``'s answer to the event on stdin, read with
    one byte over the bound, so an oversized event is denied, not cut short
    and decided."""
    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    return decide_event(raw, options, ask=ask, contain=contain)


def decide_event(
    raw: bytes,
    options: HookOptions,
    *,
    ask: AskMode = "deny",
    prepared: PreparedPlan | None = None,
    contain: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The hook answer for one raw stdin payload. ``prepared``: a plan already
    loaded (the decision server), used instead of reading the plan file.
    ``contain``: the ``charter sandbox`` argv (up to the plan) an allowed
    shell command is rewritten to run under (see
    :mod:`charter.runtime.hooks.contain`). Never raises."""

    def decide(event: Mapping[str, Any], session: Session) -> dict[str, Any]:
        cwd = common.text(event.get("cwd"))
        base = cwd if cwd and posixpath.isabs(cwd) else str(session.workspace)
        translation = translate(event, session, base=base)
        if translation.empty:
            return deny(translation.problem)
        tool = str(event.get("tool_name"))
        outcomes = common.decide_translation(session, translation, tool)
        answer = _answer(outcomes, ask, translation.note)
        if contain is None:
            return answer
        return _contained(answer, event, session, contain, ask)

    return common.answer_event(
        raw, "BeforeTool", options, refuse=deny, decide=decide, prepared=prepared
    )


def _contained(
    answer: dict[str, Any],
    event: Mapping[str, Any],
    session: Session,
    prefix: Sequence[str],
    ask: AskMode,
) -> dict[str, Any]:
    """``answer`` with an allowed shell command rewritten (``tool_input``) to
    run inside the stage's sandbox, or, when that cannot be done exactly or
    a Gemini CLI policy rule of the team's covers the command, not allowed."""
    tool = event.get("tool_name")
    if answer.get("decision") != "allow" or tool not in GEMINI_CONTAINED_TOOLS:
        return answer
    inp = event.get("tool_input")
    command = inp.get("command") if isinstance(inp, dict) else None
    if not isinstance(inp, dict) or not isinstance(command, str):
        return deny("the shell command cannot be read, so it cannot be contained")
    project = Path(common.text(os.environ.get("GEMINI_PROJECT_DIR")) or str(session.workspace))
    # Gemini CLI checks its policies against the rewritten command, where the
    # team's rule for this one would no longer match: apply it here.
    hit = gemini_rule_hit(command, inp, gemini_policy_files(project, home_of()))
    if hit is not None:
        kind, rule = hit
        said = f"Gemini CLI's {kind} rule ({rule}) covers this command, and --contain rewrites "
        said += "it where Gemini CLI would not see the rule"
        mode = _ask_mode(ask)[0] if kind == "ask" else ask
        if kind == "ask" and mode == "ask":
            why = f"charter: {said}"
            return {"decision": "ask", "reason": why, "systemMessage": why}
        if kind == "ask" and mode == "defer":  # Gemini CLI's own rule decides, uncontained
            return {"systemMessage": f"charter: {said}; Gemini CLI's own confirmation decides"}
        return deny(said)
    rewritten = contained_command(
        [*prefix, "--agent", session.agent.agent.name, "--stage", session.stage_name],
        session.workspace,
        command,
    )
    if rewritten is None:
        return deny("the command cannot be passed to the sandbox exactly")
    where = f" (contained: it runs inside stage {session.stage_name!r}'s sandbox)"
    # Gemini CLI takes tool_input as the call's whole arguments
    return {
        "decision": "allow",
        "reason": str(answer.get("reason", "charter: allowed")) + where,
        "hookSpecificOutput": {"tool_input": {**inp, "command": rewritten}},
    }


def _ask_mode(ask: AskMode) -> tuple[AskMode, str]:
    """``ask`` with ``auto`` settled, and why nobody can be asked. Gemini
    CLI's "ask" waits forever where nobody answers: auto asks only when the
    session is known to have a person at its terminal, else denies."""
    if ask != "auto":
        return ask, ""
    from charter.runtime.hooks.presence import gemini_session_is_attended

    attended, absent = gemini_session_is_attended()
    return ("ask" if attended else "deny"), absent


def _answer(outcomes: list[Outcome], ask: AskMode, note: str) -> dict[str, Any]:
    out = common.worst(outcomes)
    said = common.said(out, note)
    if out.decision == "allow":
        return {"decision": "allow", "reason": f"charter: {said}"}
    if out.decision == "deny":
        return deny(said)
    ask, absent = _ask_mode(ask)
    if ask == "defer":
        return {
            "systemMessage": f"charter: the plan asks for approval: {said}; "
            "Gemini CLI's own confirmation decides"
        }
    if ask == "ask":
        # Gemini CLI shows the systemMessage in its confirmation prompt.
        why = f"charter: the plan asks for approval: {said}"
        return {"decision": "ask", "reason": why, "systemMessage": why}
    flags = {o.liftable_by for o in outcomes if o.decision == "ask"}
    defer = "pass --ask defer to the hook to let Gemini CLI's own confirmation decide"
    if "" in flags:
        how = f"No launch flag lifts this ask; {defer}"
    else:
        how = f"To allow it, add {' '.join(sorted(flags))} to the hook command, or {defer}"
    if absent:
        why = f"nobody can be asked ({absent})"
        return deny(f"the plan asks for approval, and {why}: {said}. {how}.")
    return deny(f"the plan asks for approval, and a Gemini CLI hook cannot ask: {said}. {how}.")
