"""A ``conversation`` region declared as a sliding window bounds the
messages a stage sends: past ``max_items`` (or in bulk past ``max_items +
overflow``) or past its budget, the oldest turn groups go, an assistant turn
together with the tool results that answer it; the system prompt and the task
stay, and so does the newest group."""

from __future__ import annotations

from charter.runtime.models import Message, ModelToolCall
from charter.runtime.plan import ContextRegion, Stage
from charter.runtime.run.layout import trim_conversation


def _stage(**conversation: object) -> Stage:
    spec = {"kind": "sliding_window", "max_tokens": 10_000, **conversation}
    region = ContextRegion(name="conversation", **spec)  # type: ignore[arg-type]
    return Stage(
        name="s", mode="autonomous", attended=(), unattended=(), regions=(region,),
        redirect_write="ask",
    )  # fmt: skip


def _turn(n: int) -> list[Message]:
    call = ModelToolCall(id=f"c{n}", name="read_file", arguments={"path": "x"}, raw_arguments="{}")
    return [Message.assistant(f"turn {n}", (call,)), Message.tool(call, f"result {n}")]


def _conversation(turns: int) -> list[Message]:
    out = [Message.system("sys"), Message.user("the task")]
    for n in range(turns):
        out += _turn(n)
    return out


def test_past_max_items_the_oldest_groups_go_whole() -> None:
    kept, dropped = trim_conversation(_conversation(4), _stage(max_items=3))
    assert dropped == 6
    assert [m.content for m in kept] == ["sys", "the task", "turn 3", "result 3"]


def test_bulk_waits_for_the_overflow_then_drops_back_to_max_items() -> None:
    stage = _stage(max_items=4, strategy="bulk", overflow=4)
    assert trim_conversation(_conversation(4), stage)[1] == 0  # 8 entries: within 4 + 4
    kept, dropped = trim_conversation(_conversation(5), stage)
    assert dropped == 6 and [m.content for m in kept][2:] == ["turn 3", "result 3"] + [
        "turn 4",
        "result 4",
    ]


def test_the_budget_bounds_it_too() -> None:
    kept, _ = trim_conversation(_conversation(3), _stage(max_items=100, max_tokens=4))
    assert [m.content for m in kept] == ["sys", "the task", "turn 2", "result 2"]


def test_no_conversation_region_or_another_kind_keeps_everything() -> None:
    messages = _conversation(30)
    plain = Stage(name="s", mode="autonomous", attended=(), unattended=(), redirect_write="ask")
    assert trim_conversation(messages, plain) == (messages, 0)
    assert trim_conversation(messages, _stage(kind="pinned"))[1] == 0
