"""Repetition detection, as Leviath does it for a blueprint that asks for it
(``[repetition_detection]``): a nudge, never a stop. The same tool called
with the same arguments ``max_repeat_calls`` times, or ``max_readonly_streak``
read-only calls in a row, adds a ``[System]`` line to the conversation telling
the model to break out of its loop. A call that changes something (a write,
an edit, a command, a context write) clears both counts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.plan import RepetitionPolicy

__all__ = ["RepetitionWatch"]

# Leviath's two lists, by tool name: what reads, and what moves the work on.
_READ_ONLY = frozenset(
    {
        "read_file",
        "list_dir",
        "list_files",
        "glob",
        "grep",
        "search",
        "context_read",
        "context_list",
        "current_time",
        "system_info",
        "locale_info",
        "environment_info",
        "which_command",
        "runtime_info",
    }
)
_PRODUCTIVE = frozenset(
    {
        "write_file",
        "edit_file",
        "bash",
        "run_command",
        "execute",
        "shell",
        "context_write",
        "context_append",
        "context_delete",
    }
)


@dataclass(slots=True, eq=False)
class RepetitionWatch:
    policy: RepetitionPolicy
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    streak: int = 0

    def record(self, tool: str, arguments: Mapping[str, Any] | None) -> str | None:
        """Count one call; the nudge to give, if a threshold is reached."""
        if not self.policy.enabled:
            return None
        if tool in _PRODUCTIVE:
            self.counts.clear()
            self.streak = 0
            return None
        if tool in _READ_ONLY:
            self.streak += 1
        key = (tool, json.dumps(arguments or {}, sort_keys=True, default=str))
        count = self.counts[key] = self.counts.get(key, 0) + 1
        if count >= self.policy.max_repeat_calls:
            return (
                f"You have called {tool} with the same arguments {count} times. This looks like "
                "a loop. Do something different: write a file, edit one, run a command, or "
                "store what you found with context_write."
            )
        if self.streak >= self.policy.max_readonly_streak:
            return (
                f"You have made {self.streak} read-only tool calls in a row without writing "
                "or running anything. Break the pattern: write a file, edit one, run a "
                "command, or store what you found with context_write."
            )
        return None
