"""Programs that run another command (wrappers), and how to find that command
among their arguments."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from charter.runtime.shell.options import Scanned, long_given, scan, short_given
from charter.runtime.shell.programs.base import Issue

__all__ = ["WRAPPERS", "Unwrapped", "unwrap"]


# A NamedTuple: a tenth of a frozen dataclass's cost to define at start-up.
class Unwrapped(NamedTuple):
    """The command a wrapper runs (argument indexes into the wrapper's
    arguments), plus anything the wrapper's own options do."""

    inner_start: int | None  # None: the wrapper runs no command
    issues: tuple[Issue, ...] = ()
    script_index: int | None = None  # shells: the index of a -c script
    split_string: str | None = None  # env -S: a string parsed as a command


# wrapper -> (short options taking a value, long options taking a value)
WRAPPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "env": (
        "uCS",
        ("unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"),
    ),
    "sudo": (
        "ugCDhprtUTc",
        (
            "user",
            "group",
            "close-from",
            "chdir",
            "host",
            "prompt",
            "role",
            "type",
            "other-user",
            "command-timeout",
            "chroot",
        ),
    ),
    "doas": ("uC", ()),
    "nice": ("n", ("adjustment",)),
    "nohup": ("", ()),
    "timeout": ("sk", ("signal", "kill-after")),
    "time": ("fo", ("format", "output")),
    "command": ("", ()),
    "exec": ("a", ()),
    "builtin": ("", ()),
    "xargs": (
        "adEIiLlnPs",
        (
            "arg-file",
            "delimiter",
            "eof",
            "replace",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ),
    ),
    "setsid": ("", ()),
    "stdbuf": ("ioe", ("input", "output", "error")),
    "ionice": ("cnpPut", ("class", "classdata", "pid", "pgid", "uid")),
    "chroot": ("", ("userspec", "groups")),
    "unbuffer": ("", ()),
    "caffeinate": ("tw", ()),
    "strace": ("eoOpPsSuEIXabv", ()),
    "ltrace": ("eoOpPsSuEIXabn", ()),
    "flock": ("wEcn", ("timeout", "conflict-exit-code", "command")),
    "su": ("cgGsw", ("command", "group", "supp-group", "shell", "whitelist-environment")),
    "runuser": ("cgGsuw", ("command", "group", "supp-group", "shell", "user")),
    # busybox runs its first argument as an applet (`busybox rm -rf /`)
    "busybox": ("", ()),
    # -x/--exec and -d/--differences take no separate value
    "watch": ("nq", ("interval", "equexit")),
}


def unwrap(wrapper: str, args: Sequence[str]) -> Unwrapped:
    """Find the command ``wrapper`` runs among ``args``."""
    short, long_ = WRAPPERS[wrapper]
    s: Scanned = scan(args, short, long_, permute=False)
    issues: list[Issue] = []
    first = s.operands[0] if s.operands else None
    if wrapper == "env":
        bad = short_given(s, "C") or long_given(s, ("chdir",))
        if bad is not None:
            issues.append(
                Issue(
                    "cwd-change",
                    bad.index,
                    "env -C runs the command in another "
                    "directory; run it from the working directory instead",
                )
            )
        split = short_given(s, "S") or long_given(s, ("split-string",))
        j = first
        while j is not None and j < len(args) and _ASSIGN.match(args[j]):
            issues.append(
                Issue(
                    "inline-assignment",
                    j,
                    "env sets environment variables for "
                    "the command; set none to let it run unprompted",
                )
            )
            j += 1
        if split is not None and split.value is not None:
            return Unwrapped(None, tuple(issues), split_string=split.value)
        return Unwrapped(j if j is not None and j < len(args) else None, tuple(issues))
    if wrapper == "sudo":
        bad = short_given(s, "D") or long_given(s, ("chdir",))
        if bad is not None:
            issues.append(Issue("cwd-change", bad.index, "sudo -D changes directory"))
        j = first
        while j is not None and j < len(args) and _ASSIGN.match(args[j]):
            issues.append(Issue("inline-assignment", j, "sudo sets environment variables"))
            j += 1
        if (
            j is not None
            and j < len(args)
            and (short_given(s, "si") or long_given(s, ("shell", "login")))
        ):
            # sudo -s/-i CMD hands CMD to the shell's -c
            return Unwrapped(None, tuple(issues), split_string=" ".join(args[j:]))
        return Unwrapped(j if j is not None and j < len(args) else None, tuple(issues))
    if wrapper == "timeout":
        # the first operand is the duration
        if first is None or first + 1 >= len(args):
            return Unwrapped(None, tuple(issues))
        return Unwrapped(first + 1, tuple(issues))
    if wrapper == "time":
        out = short_given(s, "o") or long_given(s, ("output",))
        if out is not None:
            issues.append(Issue("embedded-write", out.index, "time -o writes to a file"))
    if wrapper in ("su", "runuser", "flock"):
        # su USER -c CMD and flock FILE -c CMD: -c may follow the operand
        late = scan(args, short, long_, permute=True)
        cmd = short_given(late, "c") or long_given(late, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
    if wrapper in ("chroot", "flock"):
        # the first operand is the new root or the lock file
        if first is None or first + 1 >= len(args):
            return Unwrapped(None, tuple(issues))
        return Unwrapped(first + 1, tuple(issues))
    if wrapper in ("su", "runuser"):
        cmd = short_given(s, "c") or long_given(s, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
        if wrapper == "runuser" and (short_given(s, "u") or long_given(s, ("user",))):
            return Unwrapped(first, tuple(issues))  # runuser -u USER [--] COMMAND
        return Unwrapped(None, tuple(issues))
    if wrapper == "flock":
        cmd = short_given(s, "c") or long_given(s, ("command",))
        if cmd is not None and cmd.value is not None:
            return Unwrapped(None, tuple(issues), split_string=cmd.value)
    if wrapper == "watch" and first is not None:
        # watch joins its arguments and runs them through `sh -c`
        return Unwrapped(None, tuple(issues), split_string=" ".join(args[first:]))
    return Unwrapped(first, tuple(issues))


_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
