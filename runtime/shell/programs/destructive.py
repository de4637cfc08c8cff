"""The destructive payloads that are refused outright, whatever the flags."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from charter.runtime.shell.options import long_given, scan, short_given
from charter.runtime.shell.programs.base import UNKNOWN, Issue
from charter.runtime.shell.programs.wrappers import WRAPPERS, unwrap

__all__ = ["SYSTEM_DIRS", "block_device", "critical_target", "destructive", "may_destroy"]

SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/var",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var/lib",
        "/System",
        "/Library",
        "/Applications",
        "/Users",
        "/private",
        "/Volumes",
        "/nix",
        "/snap",
        "/tmp",
    }
)
_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:sd[a-z]+|hd[a-z]+|vd[a-z]+|xvd[a-z]+|nvme\d+n\d+(?:p\d+)?|nvme\d+|mmcblk\d+"
    r"(?:p\d+)?|disk\d+(?:s\d+)?|rdisk\d+(?:s\d+)?|dm-\d+|md\d+|sr\d+|loop\d+|mapper/.+"
    r"|root|sd[a-z]+\d+|nbd\d+|disk/by-[a-z-]+/.+)\d*$"
)


def block_device(path: str) -> bool:
    return bool(_BLOCK_DEVICE.match(posixpath.normpath("/" + path.lstrip("/"))))


def critical_target(target: str, cwd: str | None, workspace: str) -> str | None:
    """Why deleting ``target`` recursively would be catastrophic, or None.
    ``target`` is a decoded argument in which ``$HOME``/``${HOME}`` has been
    written as ``~``."""
    if target == UNKNOWN or not target:
        return None
    if target.startswith("~+") and target[2:3] in ("", "/") and cwd is not None:
        target = cwd + target[2:]  # ~+ is the working directory
    if cwd is not None and cwd.startswith("~") and not target.startswith(("/", "~")):
        target = posixpath.join(cwd, target)  # after `cd ~`: relative to home
    if target.startswith("~"):
        rest = target[1:]
        if "/" in rest and not rest.startswith("/"):
            return None  # ~user/something
        norm = posixpath.normpath("/" + rest.lstrip("/")) if rest not in ("", "/") else "/"
        if norm in ("/", "/*", "/.*") or rest in ("", "/", "/*", "/.", "/..") or rest.isalnum():
            return "the home directory"
        return None
    if target.startswith("/"):
        path = "/" + target.lstrip("/")
    elif cwd is not None:
        path = posixpath.join(cwd, target)
    else:
        return None
    norm = posixpath.normpath(path)
    if norm.endswith("/*"):
        norm = posixpath.dirname(norm) or "/"
    elif norm.endswith("/.*"):
        norm = posixpath.dirname(norm) or "/"
    norm = "/" + norm.lstrip("/")
    if norm in SYSTEM_DIRS:
        return "the root directory" if norm == "/" else f"the system directory {norm}"
    ws = posixpath.normpath(workspace)
    if norm == ws:
        return "the workspace itself"
    if ws.startswith(norm.rstrip("/") + "/"):
        return "a directory that contains the workspace"
    return None


_RECURSIVE_RM = ("recursive",)
# sudo's options that take a value, as the wrapper table reads them
_SUDO_SHORT, _SUDO_VALUED = WRAPPERS["sudo"]
# find expression words that do not narrow which files -delete removes
_FIND_UNFILTERED = frozenset(
    {
        "-delete",
        "-depth",
        "-xdev",
        "-mount",
        "-mindepth",
        "-maxdepth",
        "-ignore_readdir_race",
        "-noleaf",
        "-daystart",
        "-follow",
        "-true",
        "-print",
        "-print0",
        "-ls",
        "-nowarn",
        "-warn",
    }
)


# Every program a branch of destructive() below speaks about (and mkfs.*):
# for any other it is None whatever the arguments, so the guard need not
# spell the arguments out for it. destructive() returns early on the same
# test, which keeps this list the one that counts.
_NAMED = frozenset(
    {
        "rm",
        "chmod",
        "chown",
        "chgrp",
        "sudo",
        "mke2fs",
        "mkswap",
        "wipefs",
        "mkdosfs",
        "newfs",
        "shutdown",
        "reboot",
        "halt",
        "poweroff",
        "init",
        "telinit",
        "systemctl",
        "kill",
        "dd",
        "cp",
        "mv",
        "tee",
        "shred",
        "install",
        "ln",
        "cat",
        "pv",
        "truncate",
        "find",
    }
)


def may_destroy(prog: str) -> bool:
    """Whether :func:`destructive` can refuse anything ``prog`` runs."""
    return prog in _NAMED or prog.startswith("mkfs")


def destructive(prog: str, args: Sequence[str], cwd: str | None, workspace: str) -> Issue | None:
    """The refusal for a known destructive payload, or None."""
    if not may_destroy(prog):
        return None
    if prog == "rm":
        s = scan(args, "")
        recursive = short_given(s, "rR") or long_given(s, _RECURSIVE_RM)
        if recursive is None:
            return None
        for i in s.operands:
            why = critical_target(args[i], cwd, workspace)
            if why is not None:
                return Issue("destructive-rm", i, f"recursive rm of {why} is never run", "deny")
        return None
    if prog in ("chmod", "chown", "chgrp"):
        s = scan(args, "", ("reference", "from"))
        if (short_given(s, "R") or long_given(s, ("recursive",))) is None:
            return None
        # the first operand is the mode or owner, unless --reference gives it
        # or the mode is written like an option (chmod -R -w /)
        no_mode = long_given(s, ("reference",)) is not None or (
            prog == "chmod" and any(re.fullmatch(r"-[rwxXst]+", a) for a in args)
        )
        for i in s.operands if no_mode else s.operands[1:]:
            why = critical_target(args[i], cwd, workspace)
            if why is not None:
                return Issue(
                    "destructive-chmod", i, f"recursive {prog} of {why} is never run", "deny"
                )
        return None
    if prog == "sudo":
        # sudo -S takes the password from standard input: a command that
        # pipes a password into sudo is an agent typing one, never run
        s = scan(args, _SUDO_SHORT, _SUDO_VALUED, permute=False)
        bad = short_given(s, "S") or long_given(s, ("stdin",))
        if bad is not None:
            # a destructive command behind it is the more telling refusal
            # (not a sudo behind it: the guard judges that level on its own,
            # so a chain of them costs no depth here)
            u = unwrap("sudo", args)
            inner_prog = None if u.inner_start is None else posixpath.basename(args[u.inner_start])
            if u.inner_start is not None and inner_prog != "sudo":
                assert inner_prog is not None
                inner = args[u.inner_start + 1 :]
                issue = destructive(inner_prog, inner, cwd, workspace)
                if issue is not None:
                    return Issue(
                        issue.rule, issue.index + u.inner_start + 1, issue.message, issue.decision
                    )
            return Issue(
                "sudo-stdin",
                bad.index,
                "sudo -S reads a password from standard input and is never run",
                "deny",
            )
        return None
    if prog.startswith("mkfs") or prog in ("mke2fs", "mkswap", "wipefs", "mkdosfs", "newfs"):
        return Issue("mkfs", -1, f"{prog} erases a file system and is never run", "deny")
    if prog in ("shutdown", "reboot", "halt", "poweroff"):
        return Issue("power-control", -1, f"{prog} stops the machine and is never run", "deny")
    if prog in ("init", "telinit") and any(a in ("0", "6") for a in args):
        return Issue("power-control", -1, f"{prog} 0/6 stops the machine and is never run", "deny")
    if prog == "systemctl" and any(
        a.removesuffix(".target") in ("poweroff", "reboot", "halt", "kexec", "emergency", "rescue")
        for a in args
    ):
        return Issue("power-control", -1, "systemctl power actions are never run", "deny")
    if prog == "kill":
        for i, a in enumerate(args):
            if re.fullmatch(r"-0*1", a) and (i > 0 or len(args) == 1):
                return Issue(
                    "kill-all", i, "kill -1 signals every process and is never run", "deny"
                )
        return None
    if prog == "dd":
        for i, a in enumerate(args):
            if a.startswith("of=") and block_device(a[3:]):
                return Issue(
                    "block-device-write",
                    i,
                    "dd onto a block device destroys its data and is never run",
                    "deny",
                )
        return None
    if prog in ("cp", "mv", "tee", "shred", "install", "ln", "cat", "pv", "truncate"):
        for i, a in enumerate(args):
            if a.startswith("/dev/") and block_device(a) and (prog != "cat"):
                return Issue(
                    "block-device-write",
                    i,
                    f"{prog} onto a block device destroys its data and is never run",
                    "deny",
                )
        return None
    if prog == "find":
        # `find / -delete` and `find / -exec rm {} +` are `rm -rf /` by other
        # names; with a test in the expression (-name, -type, ...) they
        # remove only some files
        lead = 0  # -H/-L/-P/-D X/-OLEVEL come before the starting points
        while lead < len(args) and (
            args[lead] in ("-H", "-L", "-P", "-D") or args[lead].startswith(("-D", "-O"))
        ):
            lead += 2 if args[lead] == "-D" else 1
        starts = lead
        while starts < len(args) and not (
            args[starts].startswith("-") or args[starts] in ("(", "!")
        ):
            starts += 1
        expr: list[str] = []
        removes = "-delete" in args
        i = starts
        while i < len(args):
            a = args[i]
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                # (-ok and -okdir ask before each file: not a blind removal)
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                inner = args[i + 1 : j]
                if (
                    a in ("-exec", "-execdir")
                    and inner
                    and posixpath.basename(inner[0]) in ("rm", "shred", "unlink", "rmdir")
                ):
                    removes = True
                else:
                    expr.append(a)  # some other command: not a plain removal
                i = j + 1
                continue
            if not a.isdigit():
                expr.append(a)
            i += 1
        if not removes or not set(expr) <= _FIND_UNFILTERED:
            return None
        # without a starting point find searches `.`
        points = list(enumerate(args[lead:starts], lead)) or [(-1, ".")]
        for i, a in points:
            why = critical_target(a, cwd, workspace)
            if why is not None:
                return Issue(
                    "destructive-rm", i, f"removing every file under {why} is never run", "deny"
                )
        return None
    return None
