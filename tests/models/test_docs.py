"""The script example in docs/models.md loads and plays as the text says."""

from __future__ import annotations

import re
from pathlib import Path

from charter.runtime.models import EdgeChoice, Message, ScriptProvider, ToolSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def fenced(text: str) -> list[tuple[str, str]]:
    """The doc's fenced blocks as (info string, body)."""
    blocks: list[tuple[str, str]] = []
    info: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if info is None:
                info, body = line[3:].strip(), []
            else:
                blocks.append((info, "\n".join(body) + "\n"))
                info = None
        elif info is not None:
            body.append(line)
    return blocks


def test_the_documented_script_plays() -> None:
    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(turns:.*?)```", text, re.S)
    assert example is not None
    provider = ScriptProvider.from_text(example.group(1), "demo.yaml")
    offered = [ToolSpec(n, n, {"type": "object"}) for n in ("read_file", "write_file")]
    edges = [EdgeChoice("review", "the draft is complete")]
    history = [Message.user("Summarise notes.md")]
    for _ in range(2):
        turn = provider.complete(stage="draft", messages=history, tools=offered, edges=edges)
        history.append(turn.message())
        history += [Message.tool(call, call.error or "done") for call in turn.tool_calls]
    assert turn.tool_calls[0].error is not None
    history[-1] = Message.tool(turn.tool_calls[0], f"[error] {turn.tool_calls[0].error}")
    turn = provider.complete(stage="draft", messages=history, tools=offered, edges=edges)
    assert turn.edge == "review"
    review = [ToolSpec(n, n, {"type": "object"}) for n in ("read_file", "submit_output")]
    turn = provider.complete(stage="review", messages=history, tools=review, edges=())
    assert turn.tool_calls[0].name == "submit_output"
    assert provider.turns_left == 0
    child = provider.for_agent("checker").complete(stage="c", messages=[], tools=(), edges=())
    assert child.tool_calls[0].arguments == {"answer": "looks fine"}


def test_the_documented_messages_are_the_real_ones() -> None:
    import pytest

    from charter.runtime.models import ScriptError, ScriptExpectationError

    text = DOC.read_text(encoding="utf-8")
    blocks = [body for info, body in fenced(text) if not info]
    typo = next(b for b in blocks if "argumentz: {path" in b)
    shown = next(b for b in blocks if b.startswith("script typo.yaml is not valid"))
    with pytest.raises(ScriptError) as info:
        ScriptProvider.from_text(typo, "typo.yaml")
    assert str(info.value) == shown.strip()

    example = re.search(r"```yaml\n(turns:.*?)```", text, re.S)
    assert example is not None
    provider = ScriptProvider.from_text(example.group(1), "demo.yaml")
    wrong = [ToolSpec(n, n, {"type": "object"}) for n in ("read_file", "run_shell")]
    with pytest.raises(ScriptExpectationError) as failed:
        provider.complete(stage="draft", messages=[], tools=wrong, edges=[EdgeChoice("review")])
    assert str(failed.value) in text
