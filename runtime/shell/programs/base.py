"""What every program rule shares: the placeholder for run-time values, the
issues a checker reports, and the result type of a checker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from charter.runtime.shell.options import Read, Spec, read_args

__all__ = [
    "OK",
    "UNKNOWN",
    "Checked",
    "Checker",
    "Issue",
    "Walk",
    "checked_read",
    "one",
    "plain",
    "spec_checker",
    "text",
]

UNKNOWN = "\x00"  # stands for an argument whose value is only known at run time


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem a program checker found in one argument, with the decision it calls for."""

    rule: str
    index: int  # argument index (0 = first argument after the program), -1 = the program
    message: str
    decision: str = "ask"


# Walk and Checked are NamedTuples: they are defined at every start-up, and
# a NamedTuple costs a tenth of a frozen dataclass to define. Issue keeps the
# dataclass: a field named ``index`` would shadow tuple.index.
class Walk(NamedTuple):
    """A walk the program makes over directory trees (grep -r, find, du ...).

    The guard looks at every entry of such a tree (up to a bound) for a
    credential file and, when the walk follows symlinks, for a link that leads
    out of the workspace.
    """

    roots: tuple[tuple[int, str], ...]  # (argument index, path); empty: the working directory
    follow: bool  # follows symlinks found inside the tree
    hidden: bool = True  # visits names starting with "."
    depth: int | None = None  # how many levels below a root it looks (None: all)
    # skips directories a .gitignore in a git repository names (ripgrep)
    gitignore: bool = False
    # a `!` line in an ignore file re-includes hidden names (ripgrep)
    whitelists: bool = False
    # a root that is no file or folder is a revision (git grep/diff REV):
    # then the program reads committed content, which may hold any secret
    # ever committed
    revisions: bool = False
    # reads the whole workspace wherever it runs (git diff shows every change
    # of the repository, not only those below the working directory)
    workspace: bool = False


class Checked(NamedTuple):
    """A program checker's result: its issues, which arguments are text, not
    paths, the paths hidden inside arguments, and any tree walk."""

    issues: tuple[Issue, ...] = ()
    # Arguments that are text (patterns, scripts, formats, option words), not paths.
    text_args: frozenset[int] = frozenset()
    # Paths inside arguments (`--file=X`, `-fX`, a sed `r X` command): (index, path).
    paths: tuple[tuple[int, str], ...] = ()
    walk: Walk | None = None
    # Files the program writes that its language or options name (sed's w,
    # awk's print >, sort -o, sed -i's files): (index, path), path None when
    # only known at run time. Each meets a redirect's confinement.
    writes: tuple[tuple[int, str | None], ...] = ()


OK = Checked()
Checker = Callable[[Sequence[str]], Checked]


def one(
    rule: str, index: int, message: str, writes: tuple[tuple[int, str | None], ...] = ()
) -> Checked:
    return Checked((Issue(rule, index, message),), writes=writes)


def plain(args: Sequence[str]) -> Checked:
    return OK


def text(args: Sequence[str]) -> Checked:
    """Programs whose arguments are text to print, never files."""
    return Checked((), frozenset(range(len(args))))


def checked_read(
    r: Read,
    issues: Sequence[Issue] = (),
    *,
    text_operands: Sequence[int] = (),
    walk: Walk | None = None,
    extra_paths: Sequence[tuple[int, str]] = (),
) -> Checked:
    """A :class:`Checked` from a :func:`read_args` result: option words are
    text, the paths their values name are checked, operands are paths unless
    listed in ``text_operands``."""
    return Checked(
        tuple(issues),
        r.option_words | frozenset(text_operands),
        r.path_values() + tuple(extra_paths),
        walk,
    )


def spec_checker(spec: Spec) -> Checker:
    """The checker for a program that only reads: its operands and
    path-valued options are paths, everything else is text."""

    def check(args: Sequence[str]) -> Checked:
        return checked_read(read_args(args, spec))

    return check
