"""Charter's shell command guard.

``evaluate`` judges one command line (allow, ask or deny, with a rule key, a
span and a message), ``combine`` meets that verdict with the shell tool's
permission, and ``fingerprint`` names one execution shape for approvals.
See ``docs/shell-guard.md``.
"""

from __future__ import annotations

from charter.runtime.shell.guard import evaluate
from charter.runtime.shell.policy import (
    Decision,
    Finding,
    SafeShellCommand,
    ShellPolicy,
    Verdict,
    Write,
    combine,
    fingerprint,
)

__all__ = [
    "Decision",
    "Finding",
    "SafeShellCommand",
    "ShellPolicy",
    "Verdict",
    "Write",
    "combine",
    "evaluate",
    "fingerprint",
]
