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

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "UNKNOWN",
    "Executables",
    "call_executables",
    "command_executable",
    "is_terminal_call",
    "resolve_executable",
    "resolved",
    "shell_argv",
]


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
        # ``charter check`` should pay for the environment and confinement
        # engines only when it resolves.
        from charter.runtime.policy.env import call_env
        from charter.runtime.policy.workspace import confine

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


# Names the shell runs itself: no file on PATH is what runs, even when one
# exists (/usr/bin/echo), so no executable is reported for them.
_POSIX_BUILTINS = frozenset(
    {
        ".", ":", "[", "alias", "bg", "break", "builtin", "cd", "continue", "declare",
        "echo", "eval", "exit", "export", "false", "fg", "getopts", "hash", "jobs",
        "kill", "let", "local", "printf", "pwd", "read", "readonly", "return", "set",
        "shift", "source", "test", "times", "trap", "true", "type", "typeset", "ulimit",
        "umask", "unalias", "unset", "wait",
    }
)  # fmt: skip
_CMD_BUILTINS = frozenset(
    {
        "assoc", "break", "call", "cd", "chdir", "cls", "color", "copy", "date", "del",
        "dir", "echo", "endlocal", "erase", "exit", "for", "ftype", "goto", "if", "md",
        "mkdir", "mklink", "move", "path", "pause", "popd", "prompt", "pushd", "rd",
        "rem", "ren", "rename", "rmdir", "set", "setlocal", "shift", "start", "time",
        "title", "type", "ver", "verify", "vol",
    }
)  # fmt: skip
# Prefixes after which the next word is the program that runs.
_PASS_THROUGH = frozenset({"exec", "command"})


def shell_argv(shell: str, command: str) -> list[str]:
    """The argv that runs ``command`` through the plan's resolved shell."""
    lowered = shell.strip().lower()
    if "cmd.exe" in lowered or lowered in ("cmd", "cmd /c") or sys.platform == "win32":
        exe = shell.split()[0] if shell.strip() else "cmd.exe"
        return [exe, "/C", command]
    return [shell.split()[0] if " " in shell.strip() else shell, "-c", command]


def _is_cmd(argv: list[str]) -> bool:
    return len(argv) == 3 and argv[1] == "/C"


def resolve_executable(name: str, *, cwd: Path, path: str | None) -> str | None:
    """Where ``name`` would be found when run from ``cwd`` with the search
    path ``path`` (the child's PATH, which is what the OS uses); None when
    it names no executable file."""
    if not name:
        return None
    seps = {os.sep, "/"} | ({os.altsep} if os.altsep else set())
    if any(sep in name for sep in seps):
        candidate = Path(name) if os.path.isabs(name) else cwd / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        return None
    return shutil.which(name, path=path)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _is_assignment(kind: str, raw: str) -> bool:
    return kind == "lit" and _ASSIGNMENT.match(raw) is not None


def _first_posix_program(command: str) -> str | None:
    """The literal name of the first program a POSIX command line runs, per
    the shell guard's parser; None when it expands or cannot be parsed."""
    from charter.runtime.shell.syntax import Program, SimpleCommand, parse

    parsed = parse(command)
    program: Program | None = parsed.program
    while program is not None and program.commands:
        first = program.commands[0]
        if not isinstance(first, SimpleCommand):
            program = first.body  # ( ... ): the subshell's first command
            continue
        words = first.words
        i = 0
        while i < len(words) and _is_assignment(words[i].parts[0].kind, words[i].parts[0].raw):
            i += 1  # NAME=value before the program: an assignment, not the program
        while i + 1 < len(words) and words[i].value in _PASS_THROUGH:
            nxt = words[i + 1].value
            if nxt is None or nxt.startswith("-"):
                break
            i += 1
        if i >= len(words):
            return None
        return words[i].value
    return None


def _first_cmd_program(command: str) -> str | None:
    text = command.lstrip(" \t@")
    if text.startswith('"'):
        end = text.find('"', 1)
        return text[1:end] if end > 1 else None
    word = re.split(r"[\s&|<>()]", text, maxsplit=1)[0]
    return word or None


def command_executable(command: str, argv: list[str], *, cwd: Path, path: str | None) -> str | None:
    """Best effort: the file the command's first program runs from.

    The first word of the first simple command (after ``NAME=value``
    assignments and ``exec``/``command``) is resolved like the OS would, on
    the child's PATH and from its working directory. None when it cannot be
    told: a name that expands (``$CMD``), text the parser refuses, a shell
    builtin (the shell runs it itself) or a name that resolves to nothing.
    """
    if _is_cmd(argv):
        name = _first_cmd_program(command)
        builtins = _CMD_BUILTINS
    else:
        name = _first_posix_program(command)
        builtins = _POSIX_BUILTINS
    if name is None or (name.lower() if _is_cmd(argv) else name) in builtins:
        return None
    return resolve_executable(name, cwd=cwd, path=path)


def resolved(argv: list[str], command: str, *, cwd: Path, path: str | None) -> Executables:
    """The executables of ``argv`` (the shell's argv for ``command``) run in
    ``cwd`` with search path ``path``: what the shell tool records when it
    runs a call, and what :func:`call_executables` names before it does."""
    # The configured name stands when the search path does not hold it,
    # since that is what the OS will be asked to run.
    shell_exe = resolve_executable(argv[0], cwd=cwd, path=path) or argv[0]
    return Executables(shell_exe, command_executable(command, argv, cwd=cwd, path=path))
