"""Whether a run's workspace is somewhere no agent should be let loose.

As Leviath's workdir guard does, two places are questioned: a home directory
itself, where the agent's tools reach everything its user owns, and a
filesystem root. A workspace at or under an entry of the user's ``[security]
allowed_workdirs`` (which the plan carries) is not questioned. Charter is
stricter where nobody can answer: Leviath goes on with a warning, ``charter
run`` refuses, naming the setting that would let it start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["workdir_concern"]


def workdir_concern(workspace: Path, home: Path | None, allowed: Sequence[str]) -> str | None:
    """What is alarming about ``workspace`` (resolved), or None."""
    for entry in allowed:
        place = Path(entry).expanduser()
        if place.is_absolute() and (workspace == place or place in workspace.parents):
            return None
    if workspace.parent == workspace:
        return "a filesystem root"
    if home is not None and workspace == home:
        return "your home directory"
    return None
