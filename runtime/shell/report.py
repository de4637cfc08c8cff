"""What the guard read: the simple commands it judged, word by word.

:func:`charter.runtime.shell.judge` returns a :class:`Judgement`: the
verdict :func:`~charter.runtime.shell.evaluate` gives, plus every simple
command the guard judged on the way (in the raw reading of the text, inside
substitutions, nested ``bash -c``/``eval`` scripts and behind wrappers),
each as the argv the guard believes bash will build: a literal word's value,
or :data:`DYNAMIC` for a word whose value is only known when the shell runs
(an expansion, a glob, brace expansion or a tilde). ``opaque`` says that
some of the text was only searched, not read (it did not parse, or it is
code the shell runs later, such as a script file or a sourced file), so the
list may be incomplete; the guard never allows such a command.

This is what the bash differential oracle (``tests/shell/bash_oracle.py``)
compares with the programs real bash starts. It is computed only on request:
:func:`~charter.runtime.shell.evaluate` does not pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, NamedTuple

from charter.runtime.shell.policy import Verdict

__all__ = ["DYNAMIC", "Dynamic", "JudgedCommand", "Judgement"]


class Dynamic:
    """The marker for a word whose value the guard cannot know (a singleton)."""

    _instance: Dynamic | None = None

    def __new__(cls) -> Dynamic:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DYNAMIC"

    def __reduce__(self) -> str:
        return "DYNAMIC"


DYNAMIC: Final = Dynamic()

Word = str | Dynamic


# The records are NamedTuples (a tenth of a frozen dataclass's cost to
# define at start-up); the collector is mutable state, compared by identity.
class JudgedCommand(NamedTuple):
    """One simple command the guard judged: its argv and its span in the text
    (a nested script's commands carry the span of the word that holds it)."""

    argv: tuple[Word, ...]
    span: tuple[int, int]


class Judgement(NamedTuple):
    """A verdict with the commands behind it."""

    verdict: Verdict
    commands: tuple[JudgedCommand, ...]
    opaque: bool


@dataclass(slots=True, eq=False)
class Collector:
    """Gathers a :class:`Judgement`'s commands while the guard walks the text."""

    commands: list[JudgedCommand] = field(default_factory=list)
    opaque: bool = False
