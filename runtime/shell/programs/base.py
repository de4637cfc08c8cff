"""What every program rule shares: the placeholder for run-time values, the
issues a checker reports, and the result type of a checker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["OK", "UNKNOWN", "Checked", "Checker", "Issue", "one", "plain", "text"]

UNKNOWN = "\x00"  # stands for an argument whose value is only known at run time


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem a program checker found in one argument, with the decision it calls for."""

    rule: str
    index: int  # argument index (0 = first argument after the program), -1 = the program
    message: str
    decision: str = "ask"


@dataclass(frozen=True, slots=True)
class Checked:
    """A program checker's result: its issues and which arguments are text, not paths."""

    issues: tuple[Issue, ...] = ()
    # Arguments that are text (patterns, scripts, formats), not paths.
    text_args: frozenset[int] = frozenset()


OK = Checked()
Checker = Callable[[Sequence[str]], Checked]


def one(rule: str, index: int, message: str) -> Checked:
    return Checked((Issue(rule, index, message),))


def plain(args: Sequence[str]) -> Checked:
    return OK


def text(args: Sequence[str]) -> Checked:
    """Programs whose arguments are text to print, never files."""
    return Checked((), frozenset(range(len(args))))
