"""Charter's syntax tree for a shell command line, and the parse errors.

The tree is deliberately small: a :class:`Program` is the flat list of the
commands it runs (pipelines and ``&&``/``||``/``;`` lists only ever combine
decisions by "strictest wins", so their shape does not matter), each
:class:`SimpleCommand` holds :class:`Word` s and :class:`Redirect` s, and each
word keeps its :class:`Part` s so that nothing expanded can pass for a literal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from charter.runtime.errors import CharterError

__all__ = [
    "EXPANSION_KINDS",
    "Command",
    "HereDoc",
    "Part",
    "Program",
    "Redirect",
    "ShellSyntaxError",
    "ShellTooLong",
    "SimpleCommand",
    "Subshell",
    "Tok",
    "Word",
]

Tok = tuple[str, int, int]  # a token: (terminal, start, end)


class ShellSyntaxError(CharterError):
    """The text is not shell Charter understands; ``pos`` is a 0-based offset."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class ShellTooLong(ShellSyntaxError):
    """The text has more tokens than the caller's budget allows."""


# --- the syntax tree ------------------------------------------------------------------------

# Part kinds whose value is only known when the shell runs.
EXPANSION_KINDS = frozenset(
    {
        "param",
        "param_brace",
        "arith",
        "legacy_arith",
        "backtick",
        "dollar",
        "cmdsub",
        "procsub",
    }
)


@dataclass(slots=True)
class Part:
    """One fragment of a word. ``value`` is the decoded text of a literal
    fragment and None for an expansion; ``inner`` holds a double-quoted
    string's own parts; ``body`` a substitution's parsed commands."""

    kind: str
    raw: str
    start: int
    end: int
    value: str | None = None
    inner: tuple[Part, ...] = ()
    body: Program | None = None
    # Unquoted glob characters, brace expansion and a leading tilde; only
    # meaningful on unquoted literal fragments.
    glob: bool = False
    brace: bool = False


@dataclass(slots=True)
class Word:
    """One shell word: its parts, span, and literal value when nothing in it expands."""

    parts: tuple[Part, ...]
    start: int
    end: int
    # The word after quote removal, or None when any part expands.
    value: str | None
    quoted: bool  # some part was quoted or escaped
    glob: bool
    brace: bool
    tilde: bool

    @property
    def raw(self) -> str:
        return "".join(p.raw for p in self.parts)

    def expansions(self) -> Iterator[Part]:
        """Every expanding part, including those inside double quotes."""
        for p in self.parts:
            if p.kind in EXPANSION_KINDS:
                yield p
            for q in p.inner:
                if q.kind in EXPANSION_KINDS:
                    yield q


# HereDoc is a NamedTuple (a tenth of a frozen dataclass's cost to define at
# start-up). The other nodes stay slots dataclasses: the parser builds many
# per command, and a slots dataclass is quicker to build than a NamedTuple.
class HereDoc(NamedTuple):
    """A here-document's delimiter, body and whether expansion applies inside it."""

    delimiter: str
    quoted: bool  # a quoted delimiter turns expansion in the body off
    body: str
    terminated: bool


@dataclass(slots=True)
class Redirect:
    """A redirection: operator, file descriptor, target word and any here-document."""

    op: str  # the operator without its fd number: ">", ">>", ">|", "&>", "<", "<<", ">&", ...
    fd: str | None
    target: Word
    start: int
    end: int
    heredoc: HereDoc | None = None


@dataclass(slots=True)
class SimpleCommand:
    """A command's words and redirections, with its span in the text."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    start: int
    end: int


@dataclass(slots=True)
class Subshell:
    """A parenthesised group of commands and the redirections applied to it."""

    body: Program
    redirects: tuple[Redirect, ...]
    start: int
    end: int


Command = SimpleCommand | Subshell


@dataclass(slots=True)
class Program:
    """A command list: its commands in order and the separators between them."""

    commands: tuple[Command, ...]
    start: int
    end: int
    # Separators that were seen (";", "&", "&&", "||", "|", "|&", "\n").
    operators: tuple[str, ...] = field(default=())
