"""What Charter knows about individual programs, one module per family.

* :data:`READ_ONLY`: programs that only read, each with a checker for the
  arguments that would make it write, execute or reach the network
  (``text``, ``sed``, ``find``, ``files``, ``git``; assembled in ``table``).
* :data:`ASK_PROGRAMS`: programs that are never automatic, with the rule
  key and the reason.
* :func:`destructive`: the payloads that are refused outright.
* :data:`WRAPPERS` and :func:`unwrap`: programs that run another command,
  and how to find that command among their arguments.

Checkers receive decoded argument strings (an argument that expands is the
placeholder :data:`UNKNOWN`, which matches no option and no path) and return
a :class:`Checked`: :class:`Issue` s pointing at an argument index, and which
arguments are text rather than paths.
"""

from __future__ import annotations

from charter.runtime.shell.programs.base import UNKNOWN, Checked, Checker, Issue
from charter.runtime.shell.programs.destructive import (
    block_device,
    critical_target,
    destructive,
    may_destroy,
)
from charter.runtime.shell.programs.table import (
    ASK_PROGRAMS,
    INTERPRETERS,
    READ_ONLY,
    RESERVED_OPAQUE,
    RESERVED_PREFIX,
    SHELLS,
)
from charter.runtime.shell.programs.wrappers import WRAPPERS, Unwrapped, unwrap

__all__ = [
    "ASK_PROGRAMS",
    "INTERPRETERS",
    "READ_ONLY",
    "RESERVED_OPAQUE",
    "RESERVED_PREFIX",
    "SHELLS",
    "UNKNOWN",
    "WRAPPERS",
    "Checked",
    "Checker",
    "Issue",
    "Unwrapped",
    "block_device",
    "critical_target",
    "destructive",
    "may_destroy",
    "unwrap",
]
