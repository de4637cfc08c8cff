"""Which files a shell call would execute, told before it runs.

Approval requests and audit records of a ``shell``/``terminal`` call name the
resolved shell and, best effort, the program the command starts with. What
they name must be what the call itself will resolve when it runs, so this
module starts from the same inputs the shell tool uses
(``charter.runtime.tools.shell.run_shell``):

- the runtime's configured shell turned into an argv by ``shell_argv``;
- the working directory confined to the workspace exactly as the tool does
  (``terminal`` honours ``cwd``, ``shell`` always runs at the workspace root);
- the child's environment built by :func:`charter.runtime.policy.env.call_env` from
  the runtime's allowlisted environment and the call's overlay (``terminal``
  only), whose PATH is the search path the OS will use.

Secret bindings are left out of that environment on purpose: a binding can
never target PATH (it steers execution, see ``forbidden_target``), so the
search path is the same without copying a secret value into another dict.

Nothing is executed and no plan is read; resolving costs a few ``stat``
calls, which is why the gate pipeline asks for it only when a person is asked
or an audit record is written, never on every decision. Nothing here raises:
whatever cannot be told is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["UNKNOWN", "Executables", "call_executables", "is_terminal_call", "resolved"]


@dataclass(frozen=True, slots=True)
class Executables:
    """The shell that runs a command and the command's own program; None
    where it cannot be told without running anything."""

    shell: str | None
    command: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"shell": self.shell, "command": self.command}


UNKNOWN = Executables(None, None)


def is_terminal_call(args: Mapping[str, Any], tool: str | None) -> bool:
    """Whether the call takes the terminal's shape (cwd, env overlay, ...).
    The same rule the shell tool applies, so both read the same arguments."""
    return tool == "terminal" or (tool is None and len(set(args) - {"command"}) > 0)


def call_executables(
    args: Mapping[str, Any],
    *,
    tool: str | None,
    shell: str,
    env: Mapping[str, str],
    workspace: Path,
) -> Executables:
    """What a shell call with ``args`` would execute under a runtime whose
    configured shell is ``shell``, allowlisted environment ``env`` and
    workspace ``workspace``. :data:`UNKNOWN` when the call would be refused
    before it starts (bad command, refused cwd, invalid overlay) or anything
    goes wrong: naming executables is a report, and it must never turn a
    decision into a failure."""
    try:
        # Imported here: the gate pipeline loads this module for every run, and
        # ``charter check`` should pay for the shell tool only when it resolves.
        from charter.runtime.policy.env import call_env
        from charter.runtime.policy.workspace import confine
        from charter.runtime.tools.shell import shell_argv

        command = args.get("command")
        if not isinstance(command, str) or not command.strip() or "\x00" in command:
            return UNKNOWN  # the tool refuses it before anything starts
        terminal = is_terminal_call(args, tool)
        cwd_arg = args.get("cwd", ".") if terminal else "."
        overlay = dict(args.get("env") or {}) if terminal else {}
        where = confine(workspace, str(cwd_arg), op="read")
        if where.decision != "allow" or where.resolved is None or not where.resolved.is_dir():
            return UNKNOWN  # the tool refuses this working directory: nothing runs
        cwd = where.resolved
        argv = shell_argv(shell, command)
        with call_env(env, overlay=overlay, secrets={}) as child:
            return resolved(argv, command, cwd=cwd, path=child.get("PATH"))
    except Exception:
        return UNKNOWN


def resolved(argv: list[str], command: str, *, cwd: Path, path: str | None) -> Executables:
    """The executables of ``argv`` (the shell's argv for ``command``) run in
    ``cwd`` with search path ``path``: what the shell tool records when it
    runs a call, and what :func:`call_executables` names before it does."""
    from charter.runtime.tools.shell import command_executable, resolve_executable

    # The configured name stands when the search path does not hold it,
    # since that is what the OS will be asked to run.
    shell_exe = resolve_executable(argv[0], cwd=cwd, path=path) or argv[0]
    return Executables(shell_exe, command_executable(command, argv, cwd=cwd, path=path))
