"""A time limit on one decision, checked where the decision's work loops.

``charter serve`` answers a hook within its time limit whatever happens: when
a decision runs past it, the client is told "deny" at once. Python cannot stop
the thread still working on it, so that thread would go on spending a core on
an answer nobody will read, slowing every other client. :func:`limit` gives
the work running in this thread (and in the context it copies) a deadline;
:func:`check`, called from the loops whose length the input decides (the shell
guard's work stack), raises :class:`Abandoned` once it has passed, so the work
ends within one step of its deadline. Nothing that runs outside such a limit
(``charter check``, ``charter run``, a command hook) is ever abandoned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from charter.runtime.errors import CharterError

__all__ = ["Abandoned", "check", "limit"]

_DEADLINE: ContextVar[float] = ContextVar("charter_deadline", default=math.inf)


class Abandoned(CharterError):
    """The decision ran past its deadline and has been answered without it:
    the work still running for it stops."""


@contextmanager
def limit(seconds: float) -> Iterator[None]:
    """Run the body with a deadline ``seconds`` from now (none when not positive)."""
    token = _DEADLINE.set(time.monotonic() + seconds if seconds > 0 else math.inf)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    """Raise :class:`Abandoned` when this decision's deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline != math.inf and time.monotonic() > deadline:
        raise Abandoned("the decision ran past its time limit and was answered without it")
