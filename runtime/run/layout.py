"""The system prompt's context part for a stage with a layout, assembled
from its regions in Leviath's order.

Each non-empty region the stage declares becomes one block, headed with its
name (``## name``, with its description under it when the file asks for
``describe_in_prompt``); a hashmap lists its keys (``### [key]``); a checklist
shows its open items first. Regions the stage does not declare are held but
not shown. The blocks are ordered by what each region declares it does
between requests (``stable``, then ``grows``, then ``rewritten``, file order
within each), so the part that holds still comes first and a provider can
cache it.

The stage's own instructions go where Leviath puts them: into a region named
``stage_instructions`` when the layout declares one, shown after every other
pinned block; otherwise into the first pinned region. A layout with no pinned
region leaves them where Charter's prompt has them anyway.

The ``conversation`` region is the message list itself, so it has no block;
when it is a ``sliding_window`` its ``max_items`` and budget bound the
messages after the system prompt and the task (:func:`trim_conversation`).
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.runtime.models import Message
from charter.runtime.plan import ContextRegion, Stage
from charter.runtime.tools.context import ChecklistItem, ContextEntry, RunStore
from charter.runtime.tools.regions import RUNTIME_REGIONS, estimate_tokens

__all__ = ["Assembled", "assemble", "trim_conversation"]

_ORDER = {"stable": 0, "grows": 1, "rewritten": 2}
_INSTRUCTIONS = "stage_instructions"


@dataclass(frozen=True, slots=True)
class Assembled:
    text: str | None  # the blocks, or None when every region is empty
    holds_instructions: bool  # the stage's system_prompt is inside ``text``


def _labelled(region: ContextRegion, body: str) -> str:
    if region.describe_in_prompt and region.description:
        return f"## {region.name}\n{region.description}\n\n{body}"
    return f"## {region.name}\n{body}"


def _checklist(items: list[ChecklistItem]) -> str:
    open_items = [i for i in items if not i.done]
    done = [i for i in items if i.done]
    lines: list[str] = []
    for item in open_items + done:
        lines.append(f"[{'x' if item.done else ' '}] {item.id} {item.text}")
        lines += [f"    note: {note}" for note in item.notes]
    return f"Checklist ({len(open_items)} open, {len(done)} done):\n" + "\n".join(lines)


def _block(region: ContextRegion, entries: list[ContextEntry], lead: str | None) -> str | None:
    if region.kind == "hashmap":
        if not entries:
            return None
        body = "\n\n".join(
            f"### [{e.key}]\n{e.content}" if e.key is not None else e.content for e in entries
        )
        return f"[{region.name}]:\n{body}"
    parts = ([lead] if lead else []) + [e.content for e in entries]
    if not parts:
        return None
    return _labelled(region, "\n\n".join(parts))


def assemble(store: RunStore, stage: Stage) -> Assembled:
    """The context blocks of ``stage``'s layout as they stand now."""
    regions = [r for r in stage.regions if r.name != "conversation"]
    prompt = (stage.system_prompt or "").strip() or None
    names = {r.name for r in regions}
    host = None
    if prompt is not None and _INSTRUCTIONS not in names:
        host = next((r.name for r in regions if r.kind == "pinned"), None)
    with store.lock:
        snapshot = {
            r.name: (list(store.regions.get(r.name, ())), list(store.checklists.get(r.name, ())))
            for r in regions
        }
    blocks: list[tuple[int, int, str]] = []  # (volatility rank, file order, text)
    instructions: str | None = None
    for n, region in enumerate(regions):
        entries, items = snapshot[region.name]
        if region.name == _INSTRUCTIONS:
            # the entering stage's prompt replaces the last one's
            if prompt is not None:
                instructions = _labelled(region, prompt)
            continue
        if region.kind == "checklist":
            text = _labelled(region, _checklist(items)) if items else None
        else:
            text = _block(region, entries, prompt if region.name == host else None)
        if text is not None:
            blocks.append((_ORDER[region.volatility], n, text))
    # the regions the runtime writes whatever the layout says (a routed result
    # with no region of its own), last: they change on every call
    for extra in RUNTIME_REGIONS:
        if extra in names:
            continue
        with store.lock:
            held = list(store.regions.get(extra, ()))
        if held:
            body = "\n\n".join(e.content for e in held)
            blocks.append((len(_ORDER), len(regions), f"## {extra}\n{body}"))
    blocks.sort()
    ordered = [text for _, _, text in blocks]
    if instructions is not None:
        # after every other pinned block, so what precedes it stays the same
        # bytes from one stage to the next
        kinds = {r.name: r.kind for r in regions}
        last_pinned = -1
        for i, (_, n, _) in enumerate(blocks):
            if kinds[regions[n].name] == "pinned":
                last_pinned = i
        ordered.insert(last_pinned + 1, instructions)
    placed = instructions is not None or host is not None
    return Assembled("\n\n".join(ordered) if ordered else None, placed)


def _groups(messages: list[Message]) -> list[int]:
    """The sizes of the turn groups of ``messages``: an assistant turn with
    the tool results that answer it, or one message on its own. A group
    leaves together, so no tool result is ever left without its call."""
    sizes: list[int] = []
    for message in messages:
        if message.role == "tool" and sizes:
            sizes[-1] += 1
        else:
            sizes.append(1)
    return sizes


def trim_conversation(messages: list[Message], stage: Stage) -> tuple[list[Message], int]:
    """``messages`` with the oldest turn groups dropped as the stage's
    ``conversation`` region says (Leviath's sliding window: past
    ``max_items`` entries, per item or in bulk past ``max_items + overflow``,
    and past its token budget), and how many messages went. The system
    prompt and the task stay."""
    region = next((r for r in stage.regions if r.name == "conversation"), None)
    head = 2 if len(messages) >= 2 and messages[0].role == "system" else 0
    if region is None or region.kind != "sliding_window" or len(messages) <= head:
        return messages, 0

    body = messages[head:]
    sizes = _groups(body)
    count = len(body)
    tokens = sum(estimate_tokens(m.content or "") for m in body)
    cap = region.max_items if region.max_items is not None else count
    limit = cap + (region.overflow if region.strategy == "bulk" else 0)
    if region.strategy == "compact":
        limit = cap + 2 * region.compact_count
    drop = 0
    over_items = count > limit
    for size in sizes[:-1]:  # the newest group always stays
        if not ((over_items and count - drop > cap) or tokens > region.max_tokens):
            break
        tokens -= sum(estimate_tokens(m.content or "") for m in body[drop : drop + size])
        drop += size
    if drop == 0:
        return messages, 0
    return messages[:head] + body[drop:], drop
