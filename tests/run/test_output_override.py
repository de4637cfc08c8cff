"""``spawn_agent``'s ``output_format`` (and ``output_instructions``) ask the
child for an answer shape that overrides the one its blueprint declares
(seed 004, sub-agents): the child is asked for the new shape, its answer is
checked against it, and its result reports it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.models.script import ScriptProvider, ScriptRequest
from charter.runtime.plan import OutputSpec
from charter.runtime.run import shape

LEAD = """
[agent]
name = "lead"
entry_stage = "work"
max_child_depth = 1

[stages.work]
mode = "autonomous"
available_tools = ["spawn_agent"]
max_iterations = 3
"""

# Declares YAML with a schema, instructions and an example of its own.
WRITER = """
[agent]
name = "writer"
entry_stage = "write"

[stages.write]
mode = "output"
available_tools = []
max_iterations = 4

[stages.write.output]
format = "yaml"
instructions = "A mapping with a title."
example = "title: Example"

[stages.write.output.schema]
type = "object"
required = ["title"]

[stages.write.transitions]
"""

# One chat stage: its answer is the reply text, and it declares no shape.
CHATTER = """
[agent]
name = "chatter"
entry_stage = "chat"

[stages.chat]
mode = "autonomous"
available_tools = []
max_iterations = 3
"""

SCRIPT = """
turns:
  - stage: work
    tool_calls:
      - name: spawn_agent
        arguments: {blueprint: writer, task: Report, wait: true}
      - name: spawn_agent
        arguments:
          blueprint: writer
          task: Report
          wait: true
          output_format: json
          output_instructions: An object with a findings array.
      - name: spawn_agent
        arguments: {blueprint: chatter, task: Say it, wait: true, output_format: json}
  - stage: work
    expect:
      tool_results_include:
        - "Sub-agent main/1 (writer) finished. Its answer (yaml)"
        - "Sub-agent main/2 (writer) finished. Its answer (json)"
        - "Sub-agent main/3 (chatter) finished. Its answer (json)"
    text: all three answered
agents:
  # Every writer plays these turns from the start; which answer is accepted
  # depends only on the shape that writer was held to.
  writer:
    - tool_calls: [{name: submit_output, arguments: {content: "- first finding"}}]
    - tool_calls: [{name: submit_output, arguments: {content: '{"findings": ["first"]}'}}]
    - tool_calls: [{name: submit_output, arguments: {content: "title: Findings"}}]
  chatter:
    - text: just some words
    - text: '{"ok": true}'
"""


@pytest.fixture
def ran(charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Any, Any]:
    """The run, and every request its (recording) scripted model received."""
    project = tmp_path / "project"
    for name, text in (("lead", LEAD), ("writer", WRITER), ("chatter", CHATTER)):
        (project / name).mkdir(parents=True)
        (project / name / "agent.leviath").write_text(text)
    script = tmp_path / "team.script.yaml"
    script.write_text(SCRIPT)
    provider = ScriptProvider.from_file(script, record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    work = tmp_path / "work"
    work.mkdir()
    result = charter_run(
        project, "--agent", "lead", "--model", "script:unused", "--yolo", workdir=work
    )
    return result, provider.requests


def _of(requests: tuple[ScriptRequest, ...], copy: int) -> list[ScriptRequest]:
    return [r for r in requests if r.copy == copy]


def test_the_child_is_asked_for_the_overriding_shape(ran: tuple[Any, Any]) -> None:
    run, requests = ran
    assert run.code == 0, run.finished["reason"]
    own, asked = _of(requests, 1)[0], _of(requests, 2)[0]
    assert own.agent == asked.agent == "writer"
    # Without a request the child is asked for what its blueprint declares...
    assert "Answer format: yaml." in own.system
    assert "A mapping with a title." in own.system and "title: Example" in own.system
    described = own.tool("submit_output")
    assert described is not None and "Format: yaml" in described.description
    # ...with one, for the parent's shape alone: the blueprint's format,
    # instructions and example are gone from the prompt and from the tool.
    assert "Answer format: json." in asked.system
    assert "Instructions for the answer: An object with a findings array." in asked.system
    overridden = asked.tool("submit_output")
    assert overridden is not None
    assert "Format: json" in overridden.description
    assert "An object with a findings array." in overridden.description
    for stale in ("yaml", "A mapping with a title.", "title: Example"):
        assert stale not in asked.system
        assert stale not in overridden.description


def test_the_answer_is_checked_against_the_overriding_shape(ran: tuple[Any, Any]) -> None:
    run, _ = ran
    assert run.code == 0, run.finished["reason"]

    def submitted(agent: str) -> list[str]:
        return [e["result"] for e in run.of("tool_finished", agent) if e["tool"] == "submit_output"]

    # The blueprint's shape: YAML holding a mapping with a title (its schema).
    own = submitted("main/1")
    assert len(own) == 3
    assert "does not match the declared schema" in own[0]
    assert "does not match the declared schema" in own[1]
    assert own[2].startswith("answer submitted")
    # The parent's shape: JSON; the blueprint's schema no longer applies.
    asked = submitted("main/2")
    assert len(asked) == 2
    assert asked[0].startswith("[error]") and "not valid JSON" in asked[0]
    assert asked[1].startswith("answer submitted")

    finished = {e["agent"]: e for e in run.of("agent_finished")}
    assert (finished["main/1"]["output"], finished["main/1"]["output_format"]) == (
        "title: Findings",
        "yaml",
    )
    assert finished["main/2"]["output_format"] == "json"
    assert json.loads(finished["main/2"]["output"]) == {"findings": ["first"]}


def test_a_chat_child_is_held_to_the_requested_shape_too(ran: tuple[Any, Any]) -> None:
    run, requests = ran
    assert run.code == 0, run.finished["reason"]
    first, second = _of(requests, 3)
    assert first.agent == "chatter"
    assert "Answer format: json." in first.system
    # Its first reply was not JSON: refused, and it was asked again.
    assert any(m.role == "user" and "not valid JSON" in (m.content or "") for m in second.messages)
    chatter = next(e for e in run.of("agent_finished") if e["agent"] == "main/3")
    assert (chatter["output"], chatter["output_format"]) == ('{"ok": true}', "json")
    assert run.finished["output_text"] == "all three answered"


DECLARED = OutputSpec(
    format="yaml", instructions="A mapping.", example="a: 1", answer_schema='{"type":"object"}'
)


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        # Another format: only what the parent said is kept.
        (OutputSpec(format="json"), OutputSpec(format="json")),
        (
            OutputSpec(format="csv", instructions="Two columns."),
            OutputSpec(format="csv", instructions="Two columns."),
        ),
        # The declared format again, nothing else: the declaration stands.
        (OutputSpec(format=" YAML "), DECLARED),
        # Other instructions for the same format: the example and schema
        # described the old instructions, so they go.
        (
            OutputSpec(instructions="A list."),
            OutputSpec(format="yaml", instructions="A list."),
        ),
    ],
)
def test_how_a_request_lays_over_the_declared_shape(
    asked: OutputSpec, expected: OutputSpec
) -> None:
    assert shape.overridden(DECLARED, asked) == expected
