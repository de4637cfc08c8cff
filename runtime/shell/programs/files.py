"""File and system inspection tools with options that write or change state."""

from __future__ import annotations

from collections.abc import Sequence

from charter.runtime.shell.options import long_given, scan, short_given
from charter.runtime.shell.programs.base import OK, Checked, one

__all__ = ["date", "file", "hostname", "tree", "xxd"]


# the rest is its long spelling (`-cols 8`), in which case it takes the next.
_XXD_VALUED = {
    "c": "ols",
    "g": "roupsize",
    "l": "en",
    "n": "ame",
    "o": "ffset",
    "s": "eek",
    "R": "",
}


def xxd(args: Sequence[str]) -> Checked:
    operands: list[int] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(range(i + 1, len(args)))
            break
        if a.startswith("-") and len(a) > 1:
            long_rest = _XXD_VALUED.get(a[1])
            if long_rest is not None and (len(a) == 2 or (long_rest and a[2:] == long_rest)):
                i += 1  # the value is the next argument
        else:
            operands.append(i)
        i += 1
    if len(operands) > 1:
        return one(
            "embedded-write",
            operands[1],
            "xxd with a second file name writes its output there; "
            "drop the output file to run unprompted",
        )
    return OK


def tree(args: Sequence[str]) -> Checked:
    # tree's valued short options take the *next* argument even inside a
    # bundle (`-Po PAT FILE`), so any -o in a short-option word is an output
    # file; -R writes a 00Tree.html into every directory it visits.
    for i, a in enumerate(args):
        if a == "--":
            break
        if a.startswith("-") and not a.startswith("--") and ("o" in a or "R" in a):
            flag = "-o" if "o" in a else "-R"
            return one(
                "embedded-write",
                i,
                f"tree {flag} writes its output to files; drop {flag} to run unprompted",
            )
    return OK


def file(args: Sequence[str]) -> Checked:
    s = scan(args, "emfFP", ("exclude", "magic-file", "files-from", "separator", "parameter"))
    bad = short_given(s, "C") or long_given(s, ("compile",))
    if bad is not None:
        return one(
            "embedded-write",
            bad.index,
            "file -C writes a compiled magic file; drop -C to run unprompted",
        )
    return OK


def date(args: Sequence[str]) -> Checked:
    # -I/--iso-8601 take a value only when attached; --resolution takes none
    s = scan(args, "dfrs", ("date", "file", "reference", "set", "rfc-3339"))
    bad = short_given(s, "s") or long_given(s, ("set",))
    if bad is not None:
        return one("system-time", bad.index, "date --set changes the system clock")
    for i in s.operands:
        if not args[i].startswith("+"):
            return one(
                "system-time",
                i,
                "date with an operand that is not a +FORMAT sets the "
                "system clock; use +FORMAT to only print the date",
            )
    return Checked((), frozenset(i for i in s.operands))


def hostname(args: Sequence[str]) -> Checked:
    s = scan(args, "F", ("file",))
    if s.operands or short_given(s, "F") or long_given(s, ("file",)):
        return one(
            "system-change",
            s.operands[0] if s.operands else 0,
            "hostname with a name sets the machine's name; run it without one to print it",
        )
    return OK
