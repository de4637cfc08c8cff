"""find: the expression that decides what find does to each file."""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.programs.base import Checked, Issue

__all__ = ["find"]


_FIND_FORBIDDEN = {
    "-exec": "runs a command for every file",
    "-execdir": "runs a command for every file",
    "-ok": "runs a command for every file",
    "-okdir": "runs a command for every file",
    "-delete": "deletes files",
    "-fprint": "writes its output to a file",
    "-fprint0": "writes its output to a file",
    "-fprintf": "writes its output to a file",
    "-fls": "writes its output to a file",
}


def find(args: Sequence[str]) -> Checked:
    issues: list[Issue] = []
    text: set[int] = set()
    in_expr = False
    # -H, -L, -P, -D DEBUG and -O LEVEL come before the starting points
    first = 0
    while first < len(args) and (
        args[first] in ("-H", "-L", "-P", "-D") or args[first].startswith(("-D", "-O"))
    ):
        first += 2 if args[first] == "-D" else 1
    for i, a in enumerate(args):
        if i < first:
            continue
        if a in _FIND_FORBIDDEN:
            rule = (
                "file-delete"
                if a == "-delete"
                else ("embedded-write" if a.startswith("-f") else "exec-option")
            )
            issues.append(
                Issue(rule, i, f"find {a} {_FIND_FORBIDDEN[a]}; drop {a} to run unprompted")
            )
        if a.startswith("-") or a in ("(", "!", ")", ","):
            in_expr = True
        elif in_expr:
            text.add(i)  # a test's argument (-name '*.py'), not a starting point
    return Checked(tuple(issues), frozenset(text))
