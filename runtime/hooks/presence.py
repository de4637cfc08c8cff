"""Whether a person is at the Gemini CLI session a hook command answers.

Gemini CLI 0.61 puts a hook's ``"ask"`` to the person in its confirmation
dialog, in every approval mode; in a headless run nobody answers and the run
waits until it is stopped (the hook's ask skips the check that refuses a
confirmation in non-interactive mode). The event does not say which kind of
session it is, so the hook command looks at the Gemini CLI process that
started it (its parent's parent, through the shell that runs the hook) and
applies Gemini CLI's own test: a session is interactive with
``--prompt-interactive``/``-i``, or else when neither ``CI`` nor
``GITHUB_ACTIONS`` is ``true``, standard input and output are terminals, and
there is no ``--prompt``/``-p`` and no query word.

Anything this cannot read (no ``/proc``, no Gemini CLI process among the
ancestors, an option it does not know, so it cannot tell a query word from an
option's value) counts as "nobody is there": the caller then denies, which is
the answer that never waits and never runs the call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["gemini_session_is_attended", "interactive_argv"]

# How far up the process tree the Gemini CLI process may be: the hook
# command's shell, the `||` of the fail-closed ending, a wrapper.
_MAX_DEPTH = 6

# Gemini CLI 0.61's options (its yargs table): those that take a value, and
# the flags that take none. An option outside both makes the argv unreadable.
_VALUED = frozenset(
    {
        "-m", "--model", "-p", "--prompt", "-i", "--prompt-interactive", "-w", "--worktree",
        "--approval-mode", "--policy", "--admin-policy", "--allowed-mcp-server-names",
        "--allowed-tools", "-e", "--extensions", "-r", "--resume", "--session-file",
        "--session-id", "--delete-session", "--include-directories", "-o", "--output-format",
        "--fake-responses", "--fake-responses-non-strict", "--record-responses",
    }
)  # fmt: skip
_FLAGS = frozenset(
    {
        "--skip-trust", "-s", "--sandbox", "-y", "--yolo", "--acp", "--experimental-acp",
        "-l", "--list-extensions", "--list-sessions", "--screen-reader", "--raw-output",
        "--accept-raw-output-risk", "-d", "--debug", "--no-sandbox", "--no-yolo",
    }
)  # fmt: skip
# Options whose value yargs may leave out (then the next word is not theirs
# when it starts with a dash).
_OPTIONAL_VALUE = frozenset({"-w", "--worktree", "-r", "--resume"})


def interactive_argv(args: Sequence[str]) -> bool | None:
    """Whether Gemini CLI's arguments (after its script) start an interactive
    session: True, False, or None when they cannot be read with certainty."""
    prompt_interactive = False
    headless = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return None  # whatever follows is a query, or something unforeseen
        if word.startswith("-") and word != "-":
            name, eq, _value = word.partition("=")
            if name in ("-i", "--prompt-interactive", "--acp", "--experimental-acp"):
                prompt_interactive = True
            if name in ("-p", "--prompt"):
                headless = True
            if name in _FLAGS and not eq:
                i += 1
                continue
            if name not in _VALUED:
                return None
            if not eq:
                nxt = args[i + 1] if i + 1 < len(args) else None
                if nxt is None:
                    if name not in _OPTIONAL_VALUE:
                        return None
                elif not (name in _OPTIONAL_VALUE and nxt.startswith("-")):
                    i += 1  # the option's value
            i += 1
            continue
        headless = True  # a query word: Gemini CLI answers it and exits
        i += 1
    if prompt_interactive:
        return True
    return not headless


def _is_terminal(proc: Path, fd: int) -> bool:
    try:
        target = os.readlink(proc / "fd" / str(fd))
    except OSError:
        return False
    return target.startswith(("/dev/pts/", "/dev/tty"))


def _argv(proc: Path) -> list[str] | None:
    try:
        raw = (proc / "cmdline").read_bytes()
    except OSError:
        return None
    return [w.decode("utf-8", "surrogateescape") for w in raw.split(b"\0")[:-1]]


def _parent(proc: Path) -> int | None:
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses.
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def _gemini_script(argv: Sequence[str]) -> int | None:
    """The index of Gemini CLI's script in a process's argv, or None."""
    for k, word in enumerate(argv[:4]):
        base = word.rsplit("/", 1)[-1]
        if base in ("gemini", "gemini.js") or "/@google/gemini-cli/" in word:
            return k
    return None


def gemini_session_is_attended(
    environ: Mapping[str, str] | None = None, *, proc_root: str = "/proc", start: int | None = None
) -> tuple[bool, str]:
    """Whether a person answers Gemini CLI's confirmation in the session that
    runs this process, and why not when not (fail closed: not sure is no)."""
    env = os.environ if environ is None else environ
    if env.get("CI") == "true" or env.get("GITHUB_ACTIONS") == "true":
        return False, "Gemini CLI runs headless under CI"
    pid: int | None = start if start is not None else os.getppid()
    root = Path(proc_root)
    for _ in range(_MAX_DEPTH):
        if pid is None or pid <= 1:
            break
        proc = root / str(pid)
        argv = _argv(proc)
        if argv is None:
            break
        at = _gemini_script(argv)
        if at is not None:
            wanted = interactive_argv(argv[at + 1 :])
            if wanted is None:
                return False, "Charter cannot read Gemini CLI's command line"
            if not wanted:
                return False, "Gemini CLI runs headless (-p or a query), so nobody would answer"
            if not (_is_terminal(proc, 0) and _is_terminal(proc, 1)):
                return False, "Gemini CLI's input or output is not a terminal, so it runs headless"
            return True, ""
        pid = _parent(proc)
    return False, "Charter cannot find the Gemini CLI process that runs this hook"
