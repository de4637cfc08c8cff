"""The compiler's branch of Charter's error tree.

Loading and compiling never raise on a user's input: every problem there is a
diagnostic (see :mod:`charter.compiler.diagnostics`). The exceptions below
are for what is not a finding about the user's files: a caller's bad
argument, a reader giving up on a document internally, or a bug in Charter
itself. Each descends from :class:`charter.runtime.errors.CharterError`::

    CharterError
    ├── CatalogError         the shipped catalog is malformed: a packaging bug
    │                        (catalog.builtin; also a RuntimeError)
    └── CompilerError
        ├── CompilerBug          an invariant of Charter's own code is broken
        ├── UnknownChoice        a caller named an option that does not exist
        │                        (also a ValueError, as it always was)
        └── ReaderStop           a source reader stops walking a document; it
                                 never leaves the reader
"""

from __future__ import annotations

from charter.runtime.errors import CharterError

__all__ = ["CompilerBug", "CompilerError", "ReaderStop", "UnknownChoice"]


class CompilerError(CharterError):
    """Something the compiler refuses or cannot do, outside of diagnostics."""


class CompilerBug(CompilerError):
    """Charter's own code broke one of its invariants (a rule code registered
    twice, say). Never caused by a user's files; always worth a bug report."""


class UnknownChoice(CompilerError, ValueError):
    """A caller named an output format, a shell or a similar choice that does
    not exist. A ValueError too, so code that caught one keeps working."""


class ReaderStop(CompilerError):
    """A source reader's internal signal that it cannot go on (a scalar the
    host would refuse, a document it cannot walk further): the reader catches
    it and reports what it has, so it never reaches a caller."""
