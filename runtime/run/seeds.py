"""Region seeds: what a stage's regions hold before its first turn, filled
the way Leviath fills them at spawn.

A region is seeded the first time a stage that declares it is entered, and
again on every stage entry when its seed says ``refresh = "each_stage"``.
Every source goes through the same doors a tool call does:

- ``caller``: the run's task (``task``) or an input given as
  ``--input KEY=VALUE``; a missing optional one leaves the region empty;
- ``files`` and ``glob``: read with the file tools' own confined reads
  (descriptors opened beneath the workspace, no symlink followed), so a path
  that leaves the workspace is refused and the run does not start; a file
  that is not there is skipped, unless the region is required; each file
  under a ``--- path ---`` heading;
- ``literal``: the text as written;
- ``command``: judged by the shell guard with nobody to ask, so only an
  allow runs, in the stage's sandbox; the plan's ``allow_seed_commands``
  (the user's ``[security]``) can refuse every command seed;
- ``tools``: each call through every gate of the stage, where an ask counts
  as a refusal (a seed runs before anyone could answer), each result under a
  ``--- tool ---`` heading.

A seed that fails leaves its region empty, and the run goes on, except for
a required region, whose seed failing stops the run before its first turn.
"""

from __future__ import annotations

import glob as globbing
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from charter.runtime.errors import CharterError
from charter.runtime.plan import ContextRegion, RegionSeed, Stage
from charter.runtime.results import ToolResult

__all__ = ["SeedDoors", "SeedFailed", "seed_stage"]

# At most this many files from one glob seed (the rest are named as left out).
MAX_GLOB_FILES = 200


class SeedFailed(CharterError):
    """A required region's seed failed, or a seed path left the workspace."""


@dataclass(frozen=True, slots=True)
class SeedDoors:
    """How seeds reach the world: the same doors a tool call uses."""

    read: Callable[[str], ToolResult]  # a confined read of a workspace path
    shell: Callable[[str], ToolResult]  # a guard-allowed command in the sandbox
    call: Callable[[str, dict[str, object]], ToolResult]  # a tool through every gate
    workspace: str
    inputs: Mapping[str, str]  # the caller's: "task" and --input values
    commands_allowed: bool = True
    warn: Callable[[str], None] = lambda _message: None


def _files(region: str, paths: list[str], doors: SeedDoors, required: bool) -> str | None:
    parts: list[str] = []
    for path in paths:
        got = doors.read(path)
        if got.status == "denied":
            raise SeedFailed(f"region '{region}': seed file {path!r} was refused: {got.content}")
        if not got.ok:
            if required:
                raise SeedFailed(f"region '{region}': cannot read seed file {path!r}")
            continue
        parts.append(f"--- {path} ---\n{got.content}")
    return "\n\n".join(parts) if parts else None


def _glob(region: str, pattern: str, doors: SeedDoors, required: bool) -> str | None:
    root = os.path.realpath(doors.workspace)
    matches = sorted(
        m
        for m in globbing.glob(pattern, root_dir=root, recursive=True)
        if not os.path.isdir(os.path.join(root, m))
    )
    if not matches:
        if required:
            raise SeedFailed(f"required region '{region}': glob {pattern!r} matched no files")
        return None
    text = _files(region, matches[:MAX_GLOB_FILES], doors, required)
    if len(matches) > MAX_GLOB_FILES and text is not None:
        text += f"\n\n[{len(matches) - MAX_GLOB_FILES} more files matched and were left out]"
    return text


def _command(region: str, command: str, doors: SeedDoors, required: bool) -> str | None:
    if not doors.commands_allowed:
        why = "command seeds are turned off ([security] allow_seed_commands = false)"
        if required:
            raise SeedFailed(f"required region '{region}': {why}")
        doors.warn(f"region '{region}': {why}; the region starts empty")
        return None
    got = doors.shell(command)
    if got.ok and got.content.strip():
        return got.content
    why = got.content.strip() if not got.ok else "it printed nothing"
    if required:
        raise SeedFailed(f"required region '{region}': command seed {command!r} failed: {why}")
    doors.warn(f"region '{region}': command seed {command!r} did not run or failed: {why}")
    return None


def _tools(region: ContextRegion, seed: RegionSeed, doors: SeedDoors) -> str | None:
    blocks: list[str] = []
    for call in seed.calls:
        args = json.loads(call.args_json)
        got = doors.call(call.name, args if isinstance(args, dict) else {})
        if got.ok and got.content.strip():
            blocks.append(f"--- {call.name} ---\n{got.content}")
            continue
        why = got.content.strip() or "it returned nothing"
        if region.required and not got.ok:
            raise SeedFailed(f"required region '{region.name}': tool seed {call.name!r}: {why}")
        doors.warn(f"region '{region.name}': tool seed {call.name!r} skipped: {why}")
    if not blocks and region.required:
        raise SeedFailed(f"required region '{region.name}': no tool seed produced anything")
    return "\n\n".join(blocks) if blocks else None


def _content(region: ContextRegion, seed: RegionSeed, doors: SeedDoors) -> str | None:
    if seed.source in ("caller", "parent"):
        value = doors.inputs.get(seed.key or region.name, "")
        return value if value.strip() else None
    if seed.source == "literal":
        return seed.text or None
    if seed.source == "files":
        return _files(region.name, list(seed.paths), doors, region.required)
    if seed.source == "glob":
        return _glob(region.name, seed.text or "", doors, region.required)
    if seed.source == "command":
        return _command(region.name, seed.text or "", doors, region.required)
    return _tools(region, seed, doors)


def seed_stage(stage: Stage, seeded: set[str], doors: SeedDoors) -> dict[str, str]:
    """What each of ``stage``'s regions is seeded with on this entry: the
    regions not seeded before in the run (``seeded``, updated) and those
    refreshed on every stage entry. Raises :class:`SeedFailed`."""
    out: dict[str, str] = {}
    for region in stage.regions:
        seed = region.seed
        if seed is None or (region.name in seeded and not seed.each_stage):
            continue
        seeded.add(region.name)
        text = _content(region, seed, doors)
        # a refresh that produced nothing keeps the earlier value: stale beats absent
        if text is not None:
            out[region.name] = text
    return out
