"""Leaving a stage: what one visit of a stage counts, whether an edge's gate
holds, and when a stage counts as stuck.

An edge with a gate is taken only when the gate's conditions hold. Work
means a call that succeeded and counts as work in the plan (a write, an edit,
a submitted output) or a successful call to one of the gate's own tools; a
refused, failed or malformed call never counts. A stuck edge fires when any
threshold it sets is reached; with none set, after three turns in a row
without progress (every call refused or failed, or the turn repeated the
previous one's calls exactly).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from charter.runtime.models import ModelToolCall
from charter.runtime.plan import Edge, Gate, RequiredRegion, Stage
from charter.runtime.results import ToolResult
from charter.runtime.tools.registry import RunStore

__all__ = [
    "REQUIRED_MESSAGE",
    "REQUIRED_ROUNDS",
    "StageVisit",
    "gate_reasons",
    "refused",
    "region_hash",
    "stuck_reason",
    "unwritten_required",
]

_STUCK_TURNS = 3
_REFUSED = ("[error]", "[denied]", "[unavailable]", "[blocked]")


def refused(result: ToolResult) -> bool:
    """Whether a call's result is a refusal or a failure, which never counts
    as work or progress (a tool may answer ok with a refusal's text)."""
    return (not result.ok) or result.content.startswith(_REFUSED)


def region_hash(store: RunStore, region: str) -> str:
    with store.lock:
        entries = store.regions.get(region) or []
        text = json.dumps([[e.key, e.content] for e in entries])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True)
class StageVisit:
    """What the loop counts during one visit of a stage; entering a stage
    starts a new one."""

    # each context section's hash when the stage was entered
    region_marks: dict[str, str] = field(default_factory=dict)
    iteration: int = 0
    work_done: bool = False
    ok_tools: set[str] = field(default_factory=set)
    no_progress: int = 0  # turns in a row without progress
    idle_turns: int = 0  # turns in a row with neither a call nor an edge choice
    required_rounds: int = 0  # times the stage was sent back for an empty required region
    nudges: int = 0  # times the stage was nudged to use its tools
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    file_edits: dict[str, int] = field(default_factory=dict)
    last_signature: tuple[tuple[str, str], ...] | None = None
    # one line per call, for a transform that starts the next stage afresh
    log: list[str] = field(default_factory=list)

    def note_turn(self, calls: Sequence[ModelToolCall], results: Sequence[ToolResult]) -> None:
        """Count a turn that made calls: no progress when every call was
        refused or failed, or the turn repeated the previous one's calls."""
        self.idle_turns = 0
        signature = tuple((c.name, c.raw_arguments) for c in calls)
        failed = all(refused(r) for r in results)
        if failed or signature == self.last_signature:
            self.no_progress += 1
        else:
            self.no_progress = 0
        self.last_signature = signature


def gate_reasons(gate: Gate, visit: StageVisit, store: RunStore) -> list[str]:
    """Why ``gate`` holds the way out of the stage (empty: it lets it pass)."""

    def updated(region: str) -> bool:
        return region_hash(store, region) != visit.region_marks.get(
            region, region_hash(RunStore(), region)
        )

    if gate.region is not None and updated(gate.region):
        return []  # the alternative way through: the named section changed
    reasons: list[str] = []
    worked = visit.work_done or any(t in visit.ok_tools for t in gate.tools)
    if gate.require_modifications and not worked:
        reasons.append(
            "no work was done in this stage yet (a successful write, edit or submitted "
            "output; refused, failed or malformed calls do not count)"
        )
    for region in gate.require_regions:
        with store.lock:
            present = bool(store.regions.get(region))
        if not present:
            reasons.append(f"context section '{region}' is empty")
    for region in gate.require_region_updated:
        if not updated(region):
            reasons.append(f"context section '{region}' was not updated in this stage")
    for region in gate.require_no_open_items:
        left = store.open_items(region)
        if left:
            reasons.append(f"checklist '{region}' still has {len(left)} open item(s)")
    return reasons


def stuck_reason(edge: Edge, visit: StageVisit) -> str | None:
    """Why the stage counts as stuck, by the edge's own thresholds (any
    one reached), or by the default rule when it sets none."""
    armed = False
    if edge.stuck_after_iterations is not None:
        armed = True
        # as Leviath counts it: inferences run in this stage without finishing
        # it (not turns without progress)
        if visit.iteration >= edge.stuck_after_iterations:
            return f"{visit.iteration} inferences in this stage without finishing it"
    if edge.stuck_after_tool_calls is not None:
        armed = True
        if visit.calls >= edge.stuck_after_tool_calls:
            return f"{visit.calls} tool calls in this stage"
    if edge.stuck_after_minutes is not None:
        armed = True
        minutes = (time.monotonic() - visit.started) / 60
        if minutes >= edge.stuck_after_minutes:
            return f"{minutes:.0f} minutes in this stage"
    if edge.stuck_after_same_file_edits is not None:
        armed = True
        path, count = max(visit.file_edits.items(), key=lambda kv: kv[1], default=("", 0))
        if count >= edge.stuck_after_same_file_edits:
            return f"{path} edited {count} times"
    if not armed and visit.no_progress >= _STUCK_TURNS:
        return f"no progress for {visit.no_progress} turns"
    return None


# Leviath's default cap on re-runs for an empty required region, and its words.
REQUIRED_ROUNDS = 3
REQUIRED_MESSAGE = (
    "Required context region '{region}' is still empty. You must populate it (e.g. via "
    'context_write with region="{region}") before this stage can complete.'
)


def unwritten_required(
    stage: Stage, offered: Iterable[str], store: RunStore
) -> list[RequiredRegion]:
    """The stage's required sections still empty, when the stage can write
    them (as Leviath: a stage without context_write/context_append is not
    held for a region it cannot fill)."""
    if not {"context_write", "context_append"} & set(offered):
        return []
    with store.lock:
        return [
            r
            for r in stage.required_regions
            if not store.regions.get(r.name) and not store.checklists.get(r.name)
        ]
