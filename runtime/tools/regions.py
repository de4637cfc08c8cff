"""Context regions laid out as Leviath lays them out: what a write to a
declared region does, by the region's kind, budget and admission.

A stage with a layout (``Stage.regions``) sees only the regions it declares
(plus the few the runtime itself writes); a write to any other name is
refused as Leviath refuses it (``region-not-found``), naming the ones there
are. Within a region:

- ``hashmap``: every write names a key and replaces that key's entry; past
  ``max_entries`` or the budget the least recently written entry goes.
- ``checklist``: written through the todo tools only.
- every other kind: ``context_write`` replaces the region's entries,
  ``context_append`` adds one. A write that does not fit the budget rolls the
  oldest entries off where the kind allows it (temporary, clearable,
  sliding_window, compacting) under ``admission = "evict"``; under
  ``admission = "reject"`` it is refused while the region holds anything, so
  the agent chooses what to release. An entry larger than the whole budget
  is refused either way, and nothing already held is lost to it.
- ``sliding_window`` keeps at most ``max_items`` entries: per item, in bulk
  past ``max_items + overflow``, or (``compact``, for which no model summary
  is made) in bulk past ``max_items + 2 * compact_count``.

Token counts are Leviath's estimate: a quarter of the UTF-8 length, rounded
up. The entries live in the run's :class:`~charter.runtime.tools.context.RunStore`;
this module only decides what a write does to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from charter.runtime.plan import ContextRegion
    from charter.runtime.tools.context import RunStore

__all__ = [
    "RUNTIME_REGIONS",
    "ContextEntry",
    "admit",
    "cut_to_tokens",
    "estimate_tokens",
    "fill_region",
    "note_report",
    "layout_of",
    "not_found",
    "region_tokens",
    "route_result",
]


@dataclass(slots=True)
class ContextEntry:
    """One entry of a context region (or free-form section)."""

    content: str
    key: str | None = None
    stamp: int = 0  # when it was last written (a hashmap evicts the least recent)


# Regions the runtime itself writes, valid whatever the layout declares
# (Leviath carries these in every window).
RUNTIME_REGIONS = ("tool_results", "final_output", "stage_instructions")

# Kinds whose oldest entries may roll off to make room for a write.
_ROLLS_OFF = frozenset({"temporary", "clearable", "sliding_window", "compacting"})


def estimate_tokens(text: str) -> int:
    """Leviath's budget unit: a quarter of the UTF-8 length, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4


def cut_to_tokens(text: str, limit: int, note: str) -> str:
    """``text`` held to ``limit`` tokens: cut (between whole characters) and
    ended with ``note`` saying so, or cut bare when the limit is too small to
    say so; unchanged when it fits."""
    if estimate_tokens(text) <= limit:
        return text
    room = limit * 4
    if room < 2 * len(note.encode("utf-8")):
        note = ""
    keep = text.encode("utf-8")[: room - len(note.encode("utf-8"))]
    return keep.decode("utf-8", "ignore") + note


def region_tokens(entries: list[ContextEntry]) -> int:
    return sum(estimate_tokens(e.content) for e in entries)


def not_found(store: RunStore, name: str) -> ToolResult:
    """The refusal for a region the stage does not declare, naming the ones
    the agent may write."""
    layout = store.layout or {}
    names = [n for n, r in layout.items() if r.kind != "compact_history" and n != "conversation"]
    return refusal(
        "error",
        "dispatch",
        "region-not-found",
        f"section {name!r} not found. Available sections: {', '.join(names) or 'none'}",
    )


def _ok(content: str) -> ToolResult:
    return ToolResult("ok", content)


def _full(region: ContextRegion, used: int) -> ToolResult:
    return refusal(
        "error",
        "dispatch",
        "region-full",
        f"region {region.name!r} is full ({used} of {region.max_tokens} tokens); release "
        "something with context_delete before adding more",
    )


def _too_large(region: ContextRegion, tokens: int) -> ToolResult:
    return refusal(
        "error",
        "dispatch",
        "region-over-budget",
        f"an entry of {tokens} tokens does not fit region {region.name!r} "
        f"({region.max_tokens} tokens at most); write less",
    )


def admit(
    store: RunStore, region: ContextRegion, content: str, key: str | None, *, replace: bool
) -> ToolResult:
    """Apply one ``context_write`` (``replace``) or ``context_append`` to
    ``region``, whose entries are ``store.regions[region.name]``. The caller
    holds the store's lock."""
    entries = store.regions.setdefault(region.name, [])
    if region.kind == "checklist":
        return refusal(
            "error",
            "dispatch",
            "region-is-checklist",
            f"region {region.name!r} is a checklist: add to it with todo_add",
        )
    tokens = estimate_tokens(content)
    if region.kind == "hashmap":
        if key is None:
            return refusal(
                "error",
                "dispatch",
                "hashmap-needs-key",
                f"region {region.name!r} is a hashmap: every write names a key",
            )
        return _upsert(store, region, entries, key, content, append=not replace)
    if tokens > region.max_tokens:
        return _too_large(region, tokens)
    if replace:
        # Checked above that it fits an empty region, so clearing loses
        # nothing the write cannot replace.
        entries.clear()
    used = region_tokens(entries)
    if used + tokens > region.max_tokens:
        if region.admission == "reject" and entries:
            return _full(region, used)
        if region.kind not in _ROLLS_OFF:
            return _full(region, used)
        while entries and used + tokens > region.max_tokens:
            used -= estimate_tokens(entries.pop(0).content)
    if (
        region.admission == "reject"
        and region.kind == "sliding_window"
        and region.max_items is not None
        and len(entries) + 1 > region.max_items
    ):
        return _full(region, used)
    entries.append(ContextEntry(content, key, stamp=store.tick()))
    dropped = _slide(region, entries)
    verb = "wrote" if replace else "appended to"
    note = f"; the {dropped} oldest entries rolled off" if dropped else ""
    return _ok(f"{verb} section {region.name!r} ({len(entries)} entries{note})")


def _slide(region: ContextRegion, entries: list[ContextEntry]) -> int:
    """Enforce a sliding window's item cap; how many entries went."""
    if region.kind != "sliding_window" or region.max_items is None:
        return 0
    cap = region.max_items
    if region.strategy == "bulk":
        limit = cap + region.overflow
    elif region.strategy == "compact":
        limit = cap + 2 * region.compact_count
    else:
        limit = cap
    if len(entries) <= limit:
        return 0
    extra = len(entries) - cap
    del entries[:extra]
    return extra


def _upsert(
    store: RunStore,
    region: ContextRegion,
    entries: list[ContextEntry],
    key: str,
    content: str,
    *,
    append: bool,
) -> ToolResult:
    for n, entry in enumerate(entries):
        if entry.key == key:
            text = f"{entry.content}\n{content}" if append else content
            # An existing key is updated in place, as in Leviath.
            entries[n] = ContextEntry(text, key, stamp=store.tick())
            verb = "appended to" if append else "replaced"
            return _ok(f"{verb} entry {key!r} in section {region.name!r}")
    tokens = estimate_tokens(content)
    if tokens > region.max_tokens:
        return _too_large(region, tokens)
    if region.max_entries is not None:
        while len(entries) >= region.max_entries:
            _drop_least_recent(entries)
    used = region_tokens(entries)
    while entries and used + tokens > region.max_tokens:
        used -= estimate_tokens(_drop_least_recent(entries).content)
    entries.append(ContextEntry(content, key, stamp=store.tick()))
    return _ok(f"stored entry {key!r} in section {region.name!r}")


def _drop_least_recent(entries: list[ContextEntry]) -> ContextEntry:
    oldest = min(range(len(entries)), key=lambda i: entries[i].stamp)
    return entries.pop(oldest)


def layout_of(regions: tuple[ContextRegion, ...]) -> Mapping[str, ContextRegion] | None:
    """A stage's layout by name, or None for a stage without one."""
    return {r.name: r for r in regions} if regions else None


def fill_region(store: RunStore, region: ContextRegion, text: str) -> int:
    """Put a seed's ``text`` in ``region`` in place of what it held, cut to
    the region's budget (saying so) when it is larger; the tokens kept."""
    if region.kind == "checklist":
        return 0  # a checklist holds items, which only the todo tools add
    note = f"\n[seed cut to the region's budget of {region.max_tokens} tokens]"
    text = cut_to_tokens(text, region.max_tokens, note)
    key = "seed" if region.kind == "hashmap" else None
    with store.lock:
        store.regions[region.name] = [ContextEntry(text, key, stamp=store.tick())]
    return estimate_tokens(text)


def route_result(
    store: RunStore, tool: str, call_id: str, content: str, *, region: str | None, cap: int | None
) -> str:
    """What the conversation holds for a tool result under a stage's
    ``tool_routing``: the result cut to ``cap`` tokens (saying so), and, when
    it is routed to a region the stage has, a pointer to that region in its
    place. A region that cannot take the result leaves it in the conversation
    and says why; nothing is dropped unseen."""
    if cap is not None:
        note = f"\n[result cut to {cap} of its {estimate_tokens(content)} tokens]"
        content = cut_to_tokens(content, cap, note)
    layout = store.layout or {}
    declared = layout.get(region) if region is not None else None
    if declared is None or declared.name == "conversation" or declared.kind == "checklist":
        return content
    key = f"{tool}:{call_id}" if declared.kind == "hashmap" else None
    with store.lock:
        admitted = admit(store, declared, content, key, replace=False)
    if not admitted.ok:
        why = admitted.content
        return f"[region {declared.name!r} could not take this result: {why}]\n{content}"
    return (
        f"[the result of {tool} ({estimate_tokens(content)} tokens) was routed to region "
        f"{declared.name!r}: it is in your system prompt under '## {declared.name}']"
    )


def note_report(store: RunStore, region: str, text: str) -> bool:
    """Write a note of the runtime's (why a stage was stuck, what error ended
    it) to ``region`` (``stuck_report``, ``error_report``) when the layout
    declares it, as Leviath does; False when it does not, and the caller puts
    the note in the conversation instead."""
    declared = (store.layout or {}).get(region)
    if declared is None:
        return False
    with store.lock:
        return admit(store, declared, text, None, replace=False).ok
