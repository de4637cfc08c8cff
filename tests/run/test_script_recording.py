"""The scripted model can record what a run sends it (the run tests read
the prompts of later turns through this)."""

from __future__ import annotations

import pytest

from charter.runtime.models import EdgeChoice, Message, ScriptExhaustedError, ToolSpec
from charter.runtime.models.script import ScriptProvider

SCRIPT = """
turns:
  - text: one
agents:
  helper:
    - text: two
"""


def test_requests_are_recorded_for_the_provider_and_its_copies() -> None:
    root = ScriptProvider.from_text(SCRIPT, record=True)
    tool = ToolSpec("read_file", "Read a file.", {"type": "object"})
    root.complete(
        stage="s",
        messages=(Message.system("be brief"), Message.user("go")),
        tools=(tool,),
        edges=(EdgeChoice("next", "when done"),),
    )
    helper = root.for_agent("helper")
    helper.complete(stage="h", messages=(Message.user("help"),), tools=(), edges=())
    # A request the script cannot answer is still what the run sent.
    with pytest.raises(ScriptExhaustedError):
        helper.complete(stage="h", messages=(), tools=(), edges=())
    first, second, third = root.requests
    assert helper.requests == root.requests
    assert (first.agent, first.copy, first.stage) == (None, 0, "s")
    assert first.system == "be brief" and first.tool("read_file") == tool
    assert first.tool("shell") is None and first.edges == (EdgeChoice("next", "when done"),)
    assert (second.agent, second.copy, second.system) == ("helper", 1, "")
    assert third.messages == ()


def test_a_provider_made_without_record_says_so() -> None:
    plain = ScriptProvider.from_text(SCRIPT)
    plain.complete(stage="s", messages=(), tools=(), edges=())
    with pytest.raises(RuntimeError, match="record=True"):
        _ = plain.requests
