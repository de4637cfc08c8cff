"""One answer on stdout, whatever happens: how ``charter hook`` replies to its client.

Both clients read a crash, a timeout or output that is not JSON as no
objection, so the hook command prints exactly one JSON object and exits 0 in
every case: the decision, or a deny when deciding failed or took longer than
the time limit (a watchdog thread answers then and ends the process at once).

This module imports only the standard library, and the denies are built here
rather than by the adapters, so that a failure to import an adapter (or any
of the runtime) while deciding is still answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HOOK_TIME_LIMITS", "answer_once", "deny_answer"]

# Seconds to the watchdog's deny, well below the client's own hook timeout
# (Gemini CLI: 60 s by default; Claude Code: what settings.json says, 10 s in
# what `charter init` writes). A decision takes a fraction of a second.
HOOK_TIME_LIMITS = {"claude-code": 8.0, "gemini-cli": 20.0}


def deny_answer(kind: str, reason: str) -> dict[str, Any]:
    """The deny of client ``kind`` (``claude-code`` or ``gemini-cli``)."""
    if kind == "gemini-cli":
        return {"decision": "deny", "reason": f"charter: {reason}"}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"charter: {reason}",
        }
    }


def answer_once(kind: str, decide: Callable[[], dict[str, Any]], limit: float) -> int:
    """Print ``decide()``'s answer, or ``kind``'s deny when it raises
    (anything, SystemExit and Ctrl-C included) or has not answered within
    ``limit`` seconds; exactly one JSON object either way. Returns 0."""
    out = sys.stdout
    lock = threading.Lock()

    def answer(obj: dict[str, Any]) -> bool:
        # The first answer wins; the lock is never released, so no second one
        # (the watchdog's, or the decision's after it) can follow. ASCII only:
        # a reason may quote text from the event that is not valid UTF-8 (a
        # lone surrogate), and a failed write would leave no answer.
        if not lock.acquire(blocking=False):
            return False
        out.write(json.dumps(obj) + "\n")
        out.flush()
        return True

    def too_slow() -> None:
        if answer(deny_answer(kind, f"no decision within {limit:g} s")):
            os._exit(0)

    seconds = limit if limit > 0 else 0.01  # NaN too
    timer = threading.Timer(min(seconds, 3600.0), too_slow)
    timer.daemon = True
    timer.start()
    try:
        # Anything else printed on stdout would spoil the one JSON answer.
        with contextlib.redirect_stdout(sys.stderr):
            decided = decide()
    except BaseException as exc:  # fail closed, even on SystemExit or Ctrl-C
        decided = deny_answer(kind, f"the hook could not decide ({type(exc).__name__}: {exc})")
    finally:
        timer.cancel()
    answer(decided)
    return 0
