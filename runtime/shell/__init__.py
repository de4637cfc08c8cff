"""Charter's shell command guard.

``evaluate`` judges one command line (allow, ask or deny, with a rule key, a
span and a message), ``judge`` adds the simple commands the guard read to
reach that verdict (what the bash differential oracle checks), ``combine``
meets that verdict with the shell tool's permission, and ``fingerprint``
names one execution shape for approvals. See ``docs/shell-guard.md``.
"""

from __future__ import annotations

from charter.runtime.shell.guard import evaluate, judge
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
