"""What an edge's ``transform`` does to the agent's context, as Leviath does
it, and the summaries a compact edge asks the model for.

- ``direct`` carries everything over.
- ``clear`` starts the next stage from the task, and empties every region
  that is not pinned.
- ``compact`` (``summarize``) replaces the conversation, and every region that
  is neither pinned nor ``summarizable = false``, with a summary the model
  writes ([compaction]'s system prompt, else Charter's; ``max_summary_tokens``
  bounds each).
- ``custom`` follows the edge's ``transform_config``: regions under
  ``compact`` are summarized (``compact_prompt`` says how), under ``clear``
  emptied, and everything else carried; ``conversation`` is one of the names.

A pinned region is never touched by a transform. A summary the model cannot
write (it fails, or answers nothing) leaves the runtime's own record instead:
the previous stage's tool calls and its last words, and a region as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from charter.runtime.models import Message
from charter.runtime.plan import ContextRegion, Edge, SummaryPolicy
from charter.runtime.tools.context import RunStore
from charter.runtime.tools.regions import cut_to_tokens

__all__ = ["Transform", "conversation_text", "cut_summary", "plan_transform", "summary_request"]

_SYSTEM = (
    "You condense an AI agent's working context so that it can carry on with less. Keep "
    "every fact, decision, file name, figure, open question and next step; drop repetition "
    "and chatter. Answer with the summary only."
)


@dataclass
class Transform:
    """What entering a stage over an edge does to the context."""

    kind: str
    keep_conversation: bool  # carry the messages over as they are
    summarize_conversation: bool
    clear: list[str] = field(default_factory=list)  # regions emptied
    summarize: list[str] = field(default_factory=list)  # regions the model rewrites
    prompt: str | None = None  # compact_prompt


def plan_transform(
    edge: Edge | None, kind: str, layout: tuple[ContextRegion, ...], store: RunStore
) -> Transform:
    """What ``kind`` (the edge's transform) does, given the regions of the
    stage being left (``layout``) and what the store holds."""
    regions = {r.name: r for r in layout if r.name != "conversation"}
    with store.lock:
        held = {name for name, entries in store.regions.items() if entries}

    def movable(name: str) -> bool:
        r = regions.get(name)
        return r is not None and r.kind != "pinned"

    if kind == "clear":
        return Transform(kind, False, False, clear=[n for n in regions if movable(n)])
    if kind in ("compact", "summarize"):
        return Transform(
            kind,
            False,
            True,
            summarize=[n for n in regions if movable(n) and regions[n].summarizable and n in held],
        )
    if kind == "custom":
        config = edge.transform_config if edge is not None else None
        if config is None:
            return Transform(kind, True, False)
        conversation = "conversation"
        return Transform(
            kind,
            keep_conversation=conversation not in config.compact
            and conversation not in config.clear,
            summarize_conversation=conversation in config.compact,
            clear=[n for n in config.clear if movable(n)],
            summarize=[
                n for n in config.compact if movable(n) and regions[n].summarizable and n in held
            ],
            prompt=config.compact_prompt,
        )
    return Transform(kind, True, False)


def summary_request(
    what: str, text: str, prompt: str | None, compaction: SummaryPolicy | None
) -> list[Message]:
    """The messages that ask the model to summarize ``text`` (the content of
    the region or conversation ``what``)."""
    system = (compaction.system_prompt if compaction is not None else None) or _SYSTEM
    ask = prompt or (
        f"Summarize this content of the agent's '{what}' context. Keep its facts, decisions, "
        "code and open items; be brief but complete."
    )
    return [Message.system(system), Message.user(f"{ask}\n\n{text}")]


def cut_summary(text: str, compaction: SummaryPolicy | None) -> str:
    """A summary held to ``max_summary_tokens``."""
    limit = (compaction.max_summary_tokens if compaction is not None else None) or 2000
    return cut_to_tokens(text, limit, "\n[summary cut]")


def conversation_text(messages: list[Message]) -> str:
    """The messages of a stage as text for the summarizer."""
    lines: list[str] = []
    for m in messages:
        if m.content:
            lines.append(f"{m.role}: {m.content}")
        for call in m.tool_calls:
            lines.append(f"{m.role} calls {call.name}: {call.raw_arguments[:2000]}")
    return "\n".join(lines)
