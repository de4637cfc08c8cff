"""Command lines carried in a program's options or in an environment
variable, which the program hands to a shell (``sh -c``) when it runs.

``tar --to-command='rm -rf ~'``, ``git -c core.pager='cp x /outside' log``,
``ssh -o ProxyCommand=...``, ``script -c ...`` and ``PAGER=... git log`` run
their text as a command line just as ``bash -c`` does. The program itself
already asks (it writes, reaches the network or runs code); what this module
adds is the text, so that the guard judges it like any nested script: a
destructive payload in it is denied and a write outside the workspace is
refused, whatever the flags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from charter.runtime.shell.programs import awk, sed

__all__ = ["COMMAND_VARIABLES", "command_strings", "variable_command"]

# Variables whose value a program runs as a command line (through a shell or
# split like one). LESSOPEN/LESSCLOSE start with `|` when they pipe.
COMMAND_VARIABLES = frozenset(
    {
        "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
        "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_PROXY_COMMAND", "BROWSER", "PROMPT_COMMAND",
        "LESSOPEN", "LESSCLOSE", "FCEDIT", "RSYNC_RSH", "TAR_RSH", "DIFF_PAGER",
    }
)  # fmt: skip
_GIT_CONFIG_VALUE = re.compile(r"^GIT_CONFIG_VALUE_[0-9]+$")
_GIT_PARAMETER = re.compile(r"'([^']*)'='([^']*)'")

# git configuration keys whose value is a command (alias.* and
# credential.helper when they start with `!`).
_GIT_COMMAND_KEY = re.compile(
    r"^(?:core\.(?:fsmonitor|pager|sshcommand|editor|askpass|gitproxy|hookspath)"
    r"|diff\.external|diff\..+\.(?:textconv|command)|filter\..+\.(?:clean|smudge|process)"
    r"|pager\..+|interactive\.difffilter|gpg\.(?:.+\.)?program|sequence\.editor"
    r"|merge\..+\.driver|credential(?:\..+)?\.helper|uploadpack\.packobjectshook"
    r"|alias\..+|difftool\..+\.cmd|mergetool\..+\.cmd|web\.browser|browser\..+\.cmd"
    r"|core\.alternaterefscommand|sendemail\.(?:smtpserver|tocmd|cccmd)|instaweb\.httpd)$",
    re.IGNORECASE,
)
_SSH_COMMAND_KEY = re.compile(
    r"^\s*(?:proxycommand|localcommand|knownhostscommand|remotecommand)\s*(?:=\s*|\s+)(.*)$",
    re.IGNORECASE | re.DOTALL,
)


def variable_command(name: str, value: str) -> str | None:
    """The command line a ``NAME=value`` assignment hands to a program, or None."""
    if name in COMMAND_VARIABLES or _GIT_CONFIG_VALUE.match(name):
        text = value.lstrip("|!")
        return text if text.strip() else None
    if name == "GIT_CONFIG_PARAMETERS":
        # 'key'='value' pairs, as git -c passes them to its children
        texts = [
            v.lstrip("!")
            for k, v in _GIT_PARAMETER.findall(value)
            if _GIT_COMMAND_KEY.match(k) and v.lstrip("!").strip()
        ]
        return "; ".join(texts) if texts else None
    return None


def command_strings(prog: str, args: Sequence[str]) -> list[tuple[int, str]]:
    """(argument index, command line) for each command the options of
    ``prog`` carry. ``args`` are the argument values (an expansion's is not
    a string the guard can read, and is skipped: the program asks anyway)."""
    if prog == "tar":
        return _tar(args)
    if prog == "git":
        return _git(args)
    if prog in ("ssh", "scp", "sftp"):
        return _ssh(args)
    if prog == "rsync":
        return _valued(args, "e", ("--rsh",))
    if prog == "man":
        # man -P PAGER / --pager=PAGER runs the pager through a shell
        return _valued(args, "P", ("--pager",))
    if prog == "script":
        return _valued(args, "c", ("--command",))
    if prog == "sed":
        return sed.exec_commands(args)
    if prog in ("awk", "gawk", "mawk", "nawk"):
        return awk.exec_commands(args)
    if prog == "zip":
        # zip -T -TT CMD tests the archive with CMD, through a shell
        return [
            (k + 1, args[k + 1]) for k, a in enumerate(args[:-1]) if a in ("-TT", "--unzip-command")
        ]
    return []


def _valued(args: Sequence[str], short: str, longs: tuple[str, ...]) -> list[tuple[int, str]]:
    """Values of ``-X VALUE``/``-XVALUE`` (X in ``short``) and ``--long=V``/
    ``--long V`` (and unambiguous abbreviations of ``--long``)."""
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(args):
        a = args[k]
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if len(name) > 3 and any(full.startswith(name) for full in longs):
                if eq:
                    out.append((k, value))
                elif k + 1 < len(args):
                    out.append((k + 1, args[k + 1]))
                    k += 1
        elif a.startswith("-") and len(a) > 1:
            # a bundle of flags may end in one that takes a value (-xvI CMD)
            for j, ch in enumerate(a[1:], 1):
                if ch in short:
                    if j + 1 < len(a):
                        out.append((k, a[j + 1 :]))
                    elif k + 1 < len(args):
                        out.append((k + 1, args[k + 1]))
                        k += 1
                    break
        k += 1
    return [(i, t.lstrip("|!")) for i, t in out if t.strip()]


def _tar(args: Sequence[str]) -> list[tuple[int, str]]:
    found = _valued(
        args,
        "IF",
        (
            "--to-command",
            "--use-compress-program",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
        ),
    )
    for k, a in enumerate(args):
        # --checkpoint-action=exec=CMD (also exec=CMD as the next word)
        name, eq, value = a.partition("=")
        if name.startswith("--checkpoint-a") and "--checkpoint-action".startswith(name):
            action = value if eq else (args[k + 1] if k + 1 < len(args) else "")
            at = k if eq else k + 1
            if action.startswith("exec="):
                found.append((at, action[len("exec=") :]))
    return found


def _git(args: Sequence[str]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(args) and args[k].startswith("-"):
        a = args[k]
        if a == "-c" and k + 1 < len(args):
            _git_pair(out, k + 1, args[k + 1])
            k += 1
        elif a.startswith("-c") and len(a) > 2:
            _git_pair(out, k, a[2:])
        k += 1
    sub, rest, at = (args[k], list(args[k + 1 :]), k + 1) if k < len(args) else ("", [], k)
    if sub in _GIT_SUB_COMMANDS:
        short, longs = _GIT_SUB_COMMANDS[sub]
        out.extend((at + i, text) for i, text in _valued(rest, short, longs))
    elif sub == "grep":
        out.extend((at + i, text) for i, text in _git_grep_pager(rest))
    elif sub == "bisect" and rest[:1] == ["run"] and len(rest) > 1:
        out.append((at + 1, " ".join(rest[1:])))  # an argv, read as a command line
    elif sub == "submodule" and rest[:1] == ["foreach"]:
        words = [a for a in rest[1:] if a not in ("--recursive", "-q", "--quiet")]
        if words:
            out.append((at + 1, " ".join(words)))
    if k < len(args) and args[k] == "config":
        # git config [options] KEY VALUE: the value runs on a later command
        pairs = [(j, v) for j, v in enumerate(args[k + 1 :], k + 1) if not v.startswith("-")]
        if len(pairs) >= 2 and _GIT_COMMAND_KEY.match(pairs[0][1]):
            _git_value(out, pairs[1][0], pairs[1][1])
    return out


# git subcommands with options whose value is a command line
_GIT_SUB_COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "difftool": ("xt", ("--extcmd", "--tool")),
    "mergetool": ("t", ("--tool",)),
    "rebase": ("x", ("--exec",)),
    "filter-branch": (
        "",
        (
            "--tree-filter",
            "--index-filter",
            "--msg-filter",
            "--env-filter",
            "--parent-filter",
            "--commit-filter",
            "--tag-name-filter",
        ),
    ),  # fmt: skip
}


def _git_grep_pager(rest: Sequence[str]) -> list[tuple[int, str]]:
    """git grep -O<pager> / --open-files-in-pager=<pager>: the value is
    optional, so only an attached one is a command line."""
    out: list[tuple[int, str]] = []
    for i, a in enumerate(rest):
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if eq and len(name) > 3 and "--open-files-in-pager".startswith(name):
                out.append((i, value))
        elif a.startswith("-"):
            for j, ch in enumerate(a[1:], 1):
                if ch in "efABCm":
                    break  # the rest of the word is that option's value
                if ch == "O":
                    if a[j + 1 :].strip():
                        out.append((i, a[j + 1 :]))
                    break
    return out


def _git_pair(out: list[tuple[int, str]], index: int, pair: str) -> None:
    key, eq, value = pair.partition("=")
    if eq and _GIT_COMMAND_KEY.match(key):
        _git_value(out, index, value)


def _git_value(out: list[tuple[int, str]], index: int, value: str) -> None:
    text = value.lstrip("!")
    if text.strip():
        out.append((index, text))


def _ssh(args: Sequence[str]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for k, a in enumerate(args):
        if a == "-o" and k + 1 < len(args):
            option, index = args[k + 1], k + 1
        elif a.startswith("-o") and len(a) > 2:
            option, index = a[2:], k
        else:
            continue
        m = _SSH_COMMAND_KEY.match(option)
        if m is not None and m.group(1).strip():
            out.append((index, m.group(1)))
    return out
