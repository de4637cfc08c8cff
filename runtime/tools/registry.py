"""Which code runs a built-in tool, and what that code may use.

:data:`IMPLEMENTATIONS` maps the catalog's ``impl`` keys to callables
``run(call_args, rt, *, tool=None, approved=False) -> ToolResult``. Several
catalog tools share one key (``read_file``/``read_files`` are ``fs.read``,
``edit_file``/``patch`` are ``fs.replace``, the five context tools are
``context``), so the dispatcher should pass ``tool=`` the canonical tool name.
File and shell tools can tell their shapes apart without it; the context
tools cannot (write and append take the same arguments) and refuse.

``approved=True`` tells the tool that the gate pipeline already obtained a
person's approval for this call, so a confinement ``ask`` (a credential file
inside the workspace) is honoured; a confinement ``deny`` is refused whatever
was approved.

Every callable here is wrapped the same way: secrets the arguments reveal are
collected first, exceptions become error results (never tracebacks), and the
result's model text (``content``) and operator text (``display``) are
redacted for their views.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from charter.runtime.redact import Redactor, redacted_views
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools import (
    catalog_tools,
    context,
    environment,
    files,
    shell,
    skills,
    tasks,
    web,
)
from charter.runtime.tools.context import RunStore
from charter.runtime.tools.paths import path_args

if TYPE_CHECKING:
    from charter.runtime.plan import OutputSpec
    from charter.runtime.sandbox.launcher import Sandbox

__all__ = [
    "IMPLEMENTATIONS",
    "calling_session",
    "current_session",
    "Implementation",
    "RunStore",
    "ToolRuntime",
    "dispatch",
    "path_args",
]


@dataclass(frozen=True, slots=True)
class ToolRuntime:
    """What built-in tools of one run work with. Frozen: a tool cannot swap
    its workspace or widen its environment; the store it shares is mutable."""

    workspace: Path
    store: RunStore = field(default_factory=RunStore)
    redactor: Redactor = field(default_factory=Redactor)
    shell: str = "/bin/sh"  # the plan's resolved shell
    timeout_s: int = 60  # the shell tool's timeout (plan limits.shell_timeout_secs)
    output_cap: int = 1_000_000  # bytes kept per stream
    cancel: threading.Event = field(default_factory=threading.Event)
    env: Mapping[str, str] = field(default_factory=dict)  # built by charter.runtime.env
    grants: frozenset[str] = frozenset()  # the agent's capabilities (secret.bind:NAME)
    # Where secret-binding sources are read from: the runtime's own environment.
    secret_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    output: OutputSpec | None = None  # the stage's declared output, for submit_output
    # Where the plan's relative paths (authored tool modules) are resolved;
    # the workspace when None.
    project_root: Path | None = None
    # The agent core's configured skills root (slots.skills); skill tools
    # refuse when it is None.
    skills_root: Path | None = None
    # The run's message history for session_search: a callable returning
    # objects with ``role`` and ``content``; None when the host keeps none.
    history: Callable[[], Sequence[Any]] | None = None
    web: web.WebConfig | None = None  # network settings for the web tools (None: defaults)
    # Fed (stream name, chunk) for every chunk of a foreground command's
    # output as it is read, so a live view can show how far a long command
    # has got. Must never raise: run_command stops a command whose sink fails.
    progress: Callable[[str, bytes], None] | None = None
    # The OS sandbox the stage's commands run in (charter.runtime.sandbox);
    # None runs them uncontained (charter check, hooks, tests, kind = "none").
    sandbox: Sandbox | None = None


class Implementation(Protocol):
    def __call__(
        self,
        call_args: Mapping[str, Any],
        rt: ToolRuntime,
        *,
        tool: str | None = None,
        approved: bool = False,
    ) -> ToolResult: ...


_Raw = Callable[[Mapping[str, Any], ToolRuntime, str | None, bool], ToolResult]

# The gate session a tool call was dispatched from. Tools that report on the
# session itself (tools_list, delegate_task's narrowing, session_search) read
# it; the implementation signature stays the same for every tool.
_SESSION: ContextVar[Any] = ContextVar("charter_calling_session", default=None)


@contextmanager
def calling_session(session: Any) -> Iterator[None]:
    token = _SESSION.set(session)
    try:
        yield
    finally:
        _SESSION.reset(token)


def current_session() -> Any:
    """The ``charter.runtime.session.Session`` of the call being dispatched,
    or None outside the gate pipeline."""
    return _SESSION.get()


def _wrap(impl: str, raw: _Raw) -> Implementation:
    def run(
        call_args: Mapping[str, Any],
        rt: ToolRuntime,
        *,
        tool: str | None = None,
        approved: bool = False,
    ) -> ToolResult:
        try:
            rt.redactor.discover_value(dict(call_args))
            result = raw(call_args, rt, tool, approved)
        except Exception as exc:  # noqa: BLE001 - a tool bug must not crash the run
            result = refusal(
                "error",
                "dispatch",
                "tool-crashed",
                f"{tool or impl} failed: {type(exc).__name__}: {exc}",
            )
        return redacted_views(result, rt.redactor)

    run.__name__ = f"run_{impl.replace('.', '_')}"
    run.__qualname__ = run.__name__
    return run


def _context(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    return context.run_context(args, rt, tool)


def _checklist(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    return context.run_checklist(args, rt, tool)


def _submit(args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, _: bool) -> ToolResult:
    return context.run_submit_output(args, rt, tool)


IMPLEMENTATIONS: Mapping[str, Implementation] = MappingProxyType(
    {
        "fs.read": _wrap("fs.read", files.run_read),
        "fs.write": _wrap("fs.write", files.run_write),
        "fs.replace": _wrap("fs.replace", files.run_replace),
        "fs.list": _wrap("fs.list", files.run_list),
        "fs.search": _wrap("fs.search", files.run_search),
        "exec.command": _wrap("exec.command", shell.run_shell),
        "context": _wrap("context", _context),
        "checklist": _wrap("checklist", _checklist),
        "output.submit": _wrap("output.submit", _submit),
        "skills.list": _wrap("skills.list", skills.run_list),
        "skills.view": _wrap("skills.view", skills.run_view),
        "skills.manage": _wrap("skills.manage", skills.run_manage),
        "tasks.list": _wrap("tasks.list", tasks.run_list),
        "tasks.status": _wrap("tasks.status", tasks.run_status),
        "tasks.wait": _wrap("tasks.wait", tasks.run_wait),
        "tasks.cancel": _wrap("tasks.cancel", tasks.run_cancel),
        "catalog.list": _wrap("catalog.list", catalog_tools.run_tools_list),
        "sessions.search": _wrap("sessions.search", catalog_tools.run_session_search),
        "schedules.manage": _wrap("schedules.manage", catalog_tools.run_schedules),
        "core.evolve": _wrap("core.evolve", catalog_tools.run_evolve),
        "core.rollback": _wrap("core.rollback", catalog_tools.run_rollback),
        "web.fetch": _wrap("web.fetch", web.run_fetch),
        "web.search": _wrap("web.search", web.run_search),
        "env.time": _wrap("env.time", environment.run_current_time),
        "env.system": _wrap("env.system", environment.run_system_info),
        "env.locale": _wrap("env.locale", environment.run_locale_info),
        "env.environment": _wrap("env.environment", environment.run_environment_info),
        "env.which": _wrap("env.which", environment.run_which_command),
        "env.runtime": _wrap("env.runtime", environment.run_runtime_info),
        "agents.fan_out": _wrap("agents.fan_out", environment.run_fan_out),
    }
)


def dispatch(
    tool: str, call_args: Mapping[str, Any], rt: ToolRuntime, *, approved: bool = False
) -> ToolResult:
    """Run the built-in ``tool`` (a canonical name or alias). Performs no
    permission checks: the gate pipeline decides before this is called."""
    from charter.runtime.catalog import resolve_builtin

    entry = resolve_builtin(tool)
    impl = None if entry is None else IMPLEMENTATIONS.get(entry.impl)
    if entry is None or impl is None:
        return refusal(
            "unavailable",
            "dispatch",
            "no-implementation",
            f"{tool!r} has no built-in implementation in this runtime",
        )
    return impl(call_args, rt, tool=entry.name, approved=approved)
