"""Running commands as owned process trees with bounded output.

- :mod:`.command`: :func:`run_command`, its result, and :func:`kill_running`
  for a runtime about to exit;
- :mod:`.capture`: the bounded record of each output stream, drained
  continuously;
- :mod:`.tree`: the process tree, its identity (the spawn record and start
  marker) and stopping it (TERM, a grace period, KILL).
"""

from __future__ import annotations

from charter.runtime.proc.capture import Capture, OutputSink
from charter.runtime.proc.command import DEFAULT_OUTPUT_CAP, ProcResult, kill_running, run_command
from charter.runtime.proc.tree import (
    GRACE_S,
    SpawnRecord,
    group_running,
    session_members,
    start_marker,
)

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "GRACE_S",
    "Capture",
    "OutputSink",
    "ProcResult",
    "SpawnRecord",
    "group_running",
    "kill_running",
    "run_command",
    "session_members",
    "start_marker",
]
