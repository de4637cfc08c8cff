"""find: the expression that decides what find does to each file.

GNU find 4.9's grammar: options before the starting points (``-H``, ``-L``,
``-P``, ``-D LIST``, ``-OLEVEL``), the starting points, then an expression
of tests, actions and operators, each with a fixed number of arguments.
Every primary is known with its arity and what its arguments are:

* text (``-name PATTERN``, ``-printf FORMAT``, ``-newermt DATE``);
* a reference file whose metadata find reads (``-newer``, ``-anewer``,
  ``-cnewer``, ``-samefile``, ``-newerXY`` unless Y is ``t``): a path the
  guard checks like any other;
* a file find writes (``-fprint``, ``-fprint0``, ``-fls``, ``-fprintf``);
* a list of starting points read from a file or stdin (``-files0-from``),
  which the guard cannot see;
* a command (``-exec``, ``-execdir``, ``-ok``, ``-okdir``, to ``;`` or
  ``+``), judged on its own by the guard.

A primary find does not know makes find refuse the command, and one Charter
does not know asks. find walks every starting point, following symlinks
with ``-L`` or ``-follow`` and going at most ``-maxdepth`` levels down:
that walk is reported so the guard can look through the same tree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from charter.runtime.shell.programs.base import Checked, Issue, Walk

__all__ = ["find", "find_start"]

_NO_ARG = frozenset(
    {
        "-daystart",
        "-depth",
        "-d",
        "-follow",
        "-ignore_readdir_race",
        "-mount",
        "-noignore_readdir_race",
        "-noleaf",
        "-nowarn",
        "-warn",
        "-xdev",
        "-help",
        "--help",
        "-version",
        "--version",
        "-empty",
        "-executable",
        "-false",
        "-nogroup",
        "-nouser",
        "-readable",
        "-true",
        "-writable",
        "-ls",
        "-print",
        "-print0",
        "-prune",
        "-quit",
        "-not",
        "-a",
        "-and",
        "-o",
        "-or",
        "(",
        ")",
        "!",
        ",",
    }
)
_TEXT_ARG = frozenset(
    {
        "-maxdepth",
        "-mindepth",
        "-regextype",
        "-amin",
        "-atime",
        "-cmin",
        "-ctime",
        "-mmin",
        "-mtime",
        "-fstype",
        "-gid",
        "-group",
        "-ilname",
        "-iname",
        "-inum",
        "-ipath",
        "-iregex",
        "-iwholename",
        "-links",
        "-lname",
        "-name",
        "-path",
        "-perm",
        "-regex",
        "-size",
        "-type",
        "-uid",
        "-used",
        "-user",
        "-wholename",
        "-xtype",
        "-context",
        "-printf",
    }
)
_PATH_ARG = frozenset({"-anewer", "-cnewer", "-newer", "-samefile"})
_NEWER_XY = re.compile(r"^-newer([aBcm])([aBcmt])$")
_WRITES = {"-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_start(args: Sequence[str]) -> int:
    """The index of the first starting point: after -H/-L/-P/-D X/-OLEVEL."""
    i = 0
    while i < len(args) and (
        args[i] in ("-H", "-L", "-P", "-D") or args[i].startswith(("-D", "-O"))
    ):
        i += 2 if args[i] == "-D" else 1
    return i


def find(args: Sequence[str]) -> Checked:
    issues: list[Issue] = []
    writes: list[tuple[int, str | None]] = []
    text: set[int] = set()
    paths: list[tuple[int, str]] = []
    lead = find_start(args)
    text.update(range(min(lead, len(args))))
    follow = "-L" in args[:lead]
    i = lead
    roots: list[tuple[int, str]] = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!")):
        roots.append((i, args[i]))
        i += 1
    depth: int | None = None
    while i < len(args):
        a = args[i]
        text.add(i)
        if a in _NO_ARG:
            follow = follow or a == "-follow"
            i += 1
            continue
        if a in _EXEC:
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            issues.append(
                Issue(
                    "exec-option",
                    i,
                    f"find {a} runs a command for every file; drop {a} to run unprompted",
                )
            )
            # the command's own words are judged as a command of their own
            text.update(range(i + 1, min(j + 1, len(args))))
            i = j + 1
            continue
        if a == "-delete":
            issues.append(
                Issue("file-delete", i, "find -delete deletes files; drop it to run unprompted")
            )
            i += 1
            continue
        if a in _WRITES:
            issues.append(
                Issue(
                    "embedded-write",
                    i,
                    f"find {a} writes its output to a file; drop {a} to run unprompted",
                )
            )
            if i + 1 < len(args):
                writes.append((i + 1, args[i + 1]))  # -fprint FILE, -fprintf FILE FORMAT
            text.update(range(i + 1, min(i + 1 + _WRITES[a], len(args))))
            i += 1 + _WRITES[a]
            continue
        if a == "-files0-from":
            issues.append(
                Issue(
                    "hidden-file-list",
                    i,
                    "find -files0-from reads its starting points from a file or stdin the "
                    "guard cannot see; name the directories on the command line to run unprompted",
                )
            )
            if i + 1 < len(args):
                paths.append((i + 1, args[i + 1]))
                text.add(i + 1)
            i += 2
            continue
        m = _NEWER_XY.match(a)
        if a in _PATH_ARG or (m is not None and m.group(2) != "t"):
            if i + 1 < len(args):
                paths.append((i + 1, args[i + 1]))
                text.add(i + 1)
            i += 2
            continue
        if a in _TEXT_ARG or m is not None:
            if a == "-maxdepth" and i + 1 < len(args) and args[i + 1].isdigit():
                depth = int(args[i + 1])
            if i + 1 < len(args):
                text.add(i + 1)
            i += 2
            continue
        issues.append(
            Issue(
                "malformed-command",
                i,
                f"find {a} is not a primary Charter knows; it needs approval",
            )
        )
        i += 1
    walk = Walk(tuple(roots), follow=follow, hidden=True, depth=depth)
    return Checked(tuple(issues), frozenset(text), tuple(paths), walk, writes=tuple(writes))
