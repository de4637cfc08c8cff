"""The interpreter's exceptions: a script that cannot be read, an error a
script may catch, and a bound it ran into, which no ``catch`` stops."""

from __future__ import annotations

from charter.runtime.errors import CharterError

__all__ = ["RhaiError", "RhaiLimitError", "RhaiRuntimeError", "RhaiSyntaxError"]


class RhaiError(CharterError):
    """A Rhai script failed; the message names the file, line and column."""

    def __init__(self, message: str, path: str, line: int, col: int) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.col = col
        super().__init__(f"{path}:{line}:{col}: {message}")


class RhaiSyntaxError(RhaiError):
    """The text is not a Rhai script (reported before anything runs)."""


class RhaiRuntimeError(RhaiError):
    """An error while running: ``throw``, a host function's refusal, a type
    mismatch. ``value`` is what a ``catch (e)`` binds."""

    def __init__(self, message: str, path: str, line: int, col: int, value: object = None) -> None:
        super().__init__(message, path, line, col)
        self.value = value
        self.thrown = value is not None


class RhaiLimitError(RhaiError):
    """A bound was reached (operations, time, call depth, sizes). Like Rhai's
    resource errors it passes through ``try``/``catch``: a script cannot
    trade a bound for more work."""
