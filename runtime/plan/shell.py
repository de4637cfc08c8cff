"""The shell policy as plan data: what the shell guard needs from a plan.

The guard (``charter.runtime.shell``) consumes these models; they live here
so that reading a plan never loads the guard itself.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SafeShellCommand", "ShellPolicy"]


class SafeShellCommand(BaseModel):
    """One compiled ``[safe_commands]`` shell entry: the literal words a
    command must start with (program first), already parsed and checked by
    the compiler so the runtime only compares words."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    words: tuple[str, ...]
    source: str  # the entry as the user wrote it, for messages
    justification: str | None = None
    # True: the command must be these words and no more (Claude Code's
    # ``Bash(npm test)``); False: these words and any arguments after them.
    exact: bool = False


class ShellPolicy(BaseModel):
    """Everything the guard needs from the plan. Frozen and plain data so it
    can be embedded in the compiled plan and round-trip through JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The built-in read-only table (``[safe_commands] defaults``).
    defaults: bool = True
    safe: tuple[SafeShellCommand, ...] = ()
