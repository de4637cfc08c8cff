"""What every built-in tool works with: the run's :class:`ToolRuntime`, and
the gate session of the call being dispatched.

Kept apart from :mod:`.registry`, which imports every tool module, so that a
tool module can import what it is given without importing the registry that
imports it (the tools import one another without a cycle).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from charter.runtime.redact import Redactor
from charter.runtime.tools import web
from charter.runtime.tools.context import RunStore

if TYPE_CHECKING:
    from charter.runtime.plan import OutputSpec
    from charter.runtime.policy.session import Session
    from charter.runtime.sandbox.container import ContainerSandbox
    from charter.runtime.sandbox.launcher import Sandbox

__all__ = ["Args", "CallFlags", "RunStore", "ToolRuntime", "calling_session", "current_session"]


class CallFlags(TypedDict, total=False):
    """The keywords a tool implementation is called with, for one that
    takes them as ``**flags: Unpack[CallFlags]``."""

    tool: str | None  # the tool name the call was made under
    approved: bool  # a person approved this call


# A tool call's arguments, as an implementation receives them.
Args = Mapping[str, Any]


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
    env: Mapping[str, str] = field(default_factory=dict)  # built by charter.runtime.policy.env
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
    # The agent's earlier stored sessions for session_search: called with
    # (query or None, limit), answers (session, index, role, text) newest
    # first; None when the run keeps no sessions.
    earlier_sessions: Callable[[str | None, int], list[tuple[str, int, str, str]]] | None = None
    web: web.WebConfig | None = None  # network settings for the web tools (None: defaults)
    # Fed (stream name, chunk) for every chunk of a foreground command's
    # output as it is read, so a live view can show how far a long command
    # has got. Must never raise: run_command stops a command whose sink fails.
    progress: Callable[[str, bytes], None] | None = None
    # The OS sandbox the stage's commands run in (charter.runtime.sandbox);
    # None runs them uncontained (charter check, hooks, tests, kind = "none").
    sandbox: Sandbox | ContainerSandbox | None = None


# The gate session a tool call was dispatched from. Tools that report on the
# session itself (tools_list, delegate_task's narrowing, session_search) read
# it; the implementation signature stays the same for every tool.
_SESSION: ContextVar[Session | None] = ContextVar("charter_calling_session", default=None)


@contextmanager
def calling_session(session: Session) -> Iterator[None]:
    token = _SESSION.set(session)
    try:
        yield
    finally:
        _SESSION.reset(token)


def current_session() -> Session | None:
    """The ``charter.runtime.policy.session.Session`` of the call being dispatched,
    or None outside the gate pipeline."""
    return _SESSION.get()
