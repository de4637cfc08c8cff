"""Charter's shell command guard.

``evaluate`` judges one command line (allow, ask or deny, with a rule key, a
span and a message), ``judge`` adds the simple commands the guard read to
reach that verdict (what the bash differential oracle checks), ``combine``
meets that verdict with the shell tool's permission, and ``fingerprint``
names one execution shape for approvals. See ``docs/shell-guard.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from charter.runtime.shell.policy import (
    Finding,
    SafeShellCommand,
    ShellPolicy,
    Verdict,
    Write,
    combine,
    fingerprint,
)
from charter.runtime.shell.report import DYNAMIC, Dynamic, JudgedCommand, Judgement

if TYPE_CHECKING:
    from charter.runtime.shell.guard import evaluate, judge

__all__ = [
    "DYNAMIC",
    "Dynamic",
    "Finding",
    "JudgedCommand",
    "Judgement",
    "SafeShellCommand",
    "ShellPolicy",
    "Verdict",
    "Write",
    "combine",
    "evaluate",
    "fingerprint",
    "judge",
]


def __getattr__(name: str) -> Any:
    # The guard itself (about 60 ms to import) loads on first use: the
    # compiler and the plan's users import this package for the policy's
    # data and the verdict types, and many of them never judge a command.
    if name in ("evaluate", "judge"):
        from charter.runtime.shell import guard

        value = getattr(guard, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
