"""Which code runs a built-in tool, and what that code may use: the one
tool registry.

Every implementation is registered with :func:`register`: its ``impl`` key
(the plan's ``ToolEntry.impl``), a callable ``run(call_args, rt, *,
tool=None, approved=False) -> ToolResult``, and ``serves``, each tool name
it runs with the arguments of that tool that name workspace paths (``()``
for none). ``serves`` has no default, so an implementation cannot be
registered without saying which arguments are paths; the dispatch gate
refuses a call whose plan lists other path arguments than the
implementation declares, since confinement then checked the wrong ones.

A :class:`Registry` holds registrations by ``impl`` key. :data:`IMPLEMENTATIONS`
is the registry of the package's own tools; a run adds the tools bound to it
(asking a person, sub-agents) with :meth:`Registry.overlay`. Several tools
share one key (``read_file``/``read_files`` are ``fs.read``,
``edit_file``/``patch`` are ``fs.replace``, the five context tools are
``context``), so the dispatcher passes ``tool=`` the canonical tool name.
File and shell tools can tell their shapes apart without it; the context
tools cannot (write and append take the same arguments) and refuse.

``approved=True`` tells the tool that the gate pipeline already obtained a
person's approval for this call, so a confinement ``ask`` (a credential file
inside the workspace) is honoured; a confinement ``deny`` is refused whatever
was approved.

Every callable of the package's own tools is wrapped the same way: secrets
the arguments reveal are collected first, exceptions become error results
(never tracebacks), and the result's model text (``content``) and operator
text (``display``) are redacted for their views.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from charter.runtime.errors import CharterError
from charter.runtime.plan import PathArg
from charter.runtime.redact import redacted_views
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
from charter.runtime.tools.base import RunStore, ToolRuntime, calling_session, current_session

__all__ = [
    "IMPLEMENTATIONS",
    "NO_PATHS",
    "Implementation",
    "Registration",
    "Registry",
    "RegistryError",
    "RunStore",
    "ToolRuntime",
    "calling_session",
    "current_session",
    "dispatch",
    "register",
]


class Implementation(Protocol):
    def __call__(
        self,
        call_args: Mapping[str, Any],
        rt: ToolRuntime,
        /,
        *,
        tool: str | None = None,
        approved: bool = False,
    ) -> ToolResult: ...


_Raw = Callable[[Mapping[str, Any], ToolRuntime, str | None, bool], ToolResult]


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


# -- registering ------------------------------------------------------------------

NO_PATHS: tuple[PathArg, ...] = ()
_IMPL = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
_TOOL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class RegistryError(CharterError):
    """An implementation was registered wrongly: a bug in Charter itself,
    reported when the registering module is imported."""


@dataclass(frozen=True, slots=True)
class Registration:
    """One implementation: its key, its callable, and each tool it serves
    with that tool's path arguments."""

    impl: str
    run: Implementation
    serves: Mapping[str, tuple[PathArg, ...]]


def register(
    impl: str, run: Implementation, *, serves: Mapping[str, Sequence[PathArg]]
) -> Registration:
    """A registration, checked now: ``serves`` names every tool ``run``
    answers for, each with the arguments it reads or writes as workspace
    paths (:data:`NO_PATHS` when it takes none)."""
    if not _IMPL.match(impl):
        raise RegistryError(f"impl key {impl!r} must match {_IMPL.pattern}")
    if not serves:
        raise RegistryError(f"{impl}: a registration serves at least one tool")
    checked: dict[str, tuple[PathArg, ...]] = {}
    for tool, spec in serves.items():
        if not _TOOL.match(tool):
            raise RegistryError(f"{impl}: tool name {tool!r} must match {_TOOL.pattern}")
        if isinstance(spec, str | PathArg) or not all(isinstance(p, PathArg) for p in spec):
            raise RegistryError(f"{impl}: {tool}'s path arguments must be a sequence of PathArg")
        args = [p.arg for p in spec]
        if len(set(args)) != len(args):
            raise RegistryError(f"{impl}: {tool} lists a path argument twice")
        checked[tool] = tuple(spec)
    return Registration(impl, run, MappingProxyType(checked))


class Registry(Mapping[str, Implementation]):
    """Implementations by ``impl`` key; read-only."""

    __slots__ = ("_by_impl", "_by_tool")

    def __init__(self, registrations: Iterable[Registration]) -> None:
        by_impl: dict[str, Registration] = {}
        by_tool: dict[str, Registration] = {}
        for reg in registrations:
            if reg.impl in by_impl:
                raise RegistryError(f"{reg.impl} is registered twice")
            by_impl[reg.impl] = reg
            for tool in reg.serves:
                if tool in by_tool:
                    raise RegistryError(f"{tool} is served by {by_tool[tool].impl} and {reg.impl}")
                by_tool[tool] = reg
        self._by_impl: Mapping[str, Registration] = MappingProxyType(by_impl)
        self._by_tool: Mapping[str, Registration] = MappingProxyType(by_tool)

    def __getitem__(self, impl: str) -> Implementation:
        return self._by_impl[impl].run

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_impl)

    def __len__(self) -> int:
        return len(self._by_impl)

    def registration(self, impl: str) -> Registration | None:
        return self._by_impl.get(impl)

    def serving(self, tool: str) -> Registration | None:
        """The registration that runs the tool named ``tool``, if any."""
        return self._by_tool.get(tool)

    def registrations(self) -> tuple[Registration, ...]:
        return tuple(self._by_impl.values())

    def overlay(self, registrations: Iterable[Registration]) -> Registry:
        """This registry with ``registrations`` in place of those of the
        same ``impl`` key (a run's own tools over the package's)."""
        replaced = {r.impl: r for r in registrations}
        kept = [r for r in self._by_impl.values() if r.impl not in replaced]
        return Registry([*kept, *replaced.values()])


_R = PathArg(arg="path", op="read")
_W = PathArg(arg="path", op="write")
_IN = PathArg(arg="path", op="read", default=".")  # a directory, the root when omitted
_CWD = PathArg(arg="cwd", op="read", default=".")


def _builtin(impl: str, raw: _Raw, **serves: Sequence[PathArg]) -> Registration:
    return register(impl, _wrap(impl, raw), serves=serves)


IMPLEMENTATIONS = Registry(
    [
        _builtin(
            "fs.read",
            files.run_read,
            read_file=(_R,),
            read_files=(PathArg(arg="paths", op="read", many=True),),
        ),
        _builtin("fs.write", files.run_write, write_file=(_W,)),
        _builtin("fs.replace", files.run_replace, edit_file=(_W,), patch=(_W,)),
        _builtin("fs.list", files.run_list, list_dir=(_IN,)),
        _builtin("fs.search", files.run_search, search_files=(_IN,)),
        _builtin("exec.command", shell.run_shell, shell=(_CWD,), terminal=(_CWD,)),
        _builtin(
            "context",
            _context,
            context_write=NO_PATHS,
            context_append=NO_PATHS,
            context_read=NO_PATHS,
            context_delete=NO_PATHS,
            context_list=NO_PATHS,
        ),
        _builtin(
            "checklist",
            _checklist,
            todo_add=NO_PATHS,
            todo_done=NO_PATHS,
            todo_note=NO_PATHS,
            todo=NO_PATHS,
        ),
        _builtin("output.submit", _submit, submit_output=NO_PATHS),
        # The skill tools' file paths are inside the skills root, which
        # they confine themselves; none names a workspace path.
        _builtin("skills.list", skills.run_list, skills_list=NO_PATHS),
        _builtin("skills.view", skills.run_view, skill_view=NO_PATHS),
        _builtin("skills.manage", skills.run_manage, skill_manage=NO_PATHS),
        _builtin("tasks.list", tasks.run_list, task_list=NO_PATHS),
        _builtin("tasks.status", tasks.run_status, task_status=NO_PATHS, check_agent=NO_PATHS),
        _builtin("tasks.wait", tasks.run_wait, yield_until=NO_PATHS, wait_for_agent=NO_PATHS),
        _builtin("tasks.cancel", tasks.run_cancel, task_control=NO_PATHS, kill_agent=NO_PATHS),
        _builtin("catalog.list", catalog_tools.run_tools_list, tools_list=NO_PATHS),
        _builtin("sessions.search", catalog_tools.run_session_search, session_search=NO_PATHS),
        _builtin("schedules.manage", catalog_tools.run_schedules, schedule_manage=NO_PATHS),
        _builtin("core.evolve", catalog_tools.run_evolve, evolve_core=NO_PATHS),
        _builtin("core.rollback", catalog_tools.run_rollback, rollback_core=NO_PATHS),
        _builtin("web.fetch", web.run_fetch, web_fetch=NO_PATHS, web_extract=NO_PATHS),
        _builtin("web.search", web.run_search, web_search=NO_PATHS),
        _builtin("env.time", environment.run_current_time, current_time=NO_PATHS),
        _builtin("env.system", environment.run_system_info, system_info=NO_PATHS),
        _builtin("env.locale", environment.run_locale_info, locale_info=NO_PATHS),
        _builtin("env.environment", environment.run_environment_info, environment_info=NO_PATHS),
        _builtin("env.which", environment.run_which_command, which_command=NO_PATHS),
        _builtin("env.runtime", environment.run_runtime_info, runtime_info=NO_PATHS),
        _builtin("agents.fan_out", environment.run_fan_out, fan_out=NO_PATHS),
    ]
)


def dispatch(
    tool: str, call_args: Mapping[str, Any], rt: ToolRuntime, *, approved: bool = False
) -> ToolResult:
    """Run the built-in ``tool`` directly, by its canonical name. Performs no
    permission checks: this is for tests and callers outside the gates, which
    decide before dispatching. Aliases are the plan's business (the visibility
    gate maps them); the shipped catalog is not consulted here either."""
    reg = IMPLEMENTATIONS.serving(tool)
    if reg is None:
        return refusal(
            "unavailable",
            "dispatch",
            "no-implementation",
            f"{tool!r} has no built-in implementation in this runtime",
        )
    return reg.run(call_args, rt, tool=tool, approved=approved)
