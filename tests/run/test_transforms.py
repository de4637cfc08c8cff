"""What an edge's transform does to the next stage's context, as Leviath
does it: clear empties what is not pinned, custom follows its carry, compact
and clear lists (the model summarizing what it compacts), and a summary the
model cannot write leaves the runtime's own record."""

from __future__ import annotations

from typing import Any

BLUEPRINT = """[agent]
name = "mover"

[context.regions]
task = { kind = "pinned" }
notes = { kind = "temporary" }
keep = { kind = "temporary", summarizable = false }
scratch = { kind = "clearable" }

[stages.one]
mode = "autonomous"
available_tools = ["context_write"]
[stages.one.transitions.two]
hint = "on to two"
transform = "TRANSFORM"
CONFIG

[stages.two]
mode = "autonomous"
available_tools = ["context_write"]
"""

WRITE = (
    "  - stage: one\n    tool_calls:\n"
    "      - {name: context_write, arguments: {region: notes, content: 'long notes'}}\n"
    "      - {name: context_write, arguments: {region: keep, content: 'kept rows'}}\n"
    "      - {name: context_write, arguments: {region: scratch, content: 'scratch work'}}\n"
    "      - {name: context_write, arguments: {region: task, content: 'the pinned task'}}\n"
    "  - {stage: one, text: 'done here', edge: two}\n"
)


def _blueprint(transform: str, config: str = "") -> str:
    return BLUEPRINT.replace("TRANSFORM", transform).replace("CONFIG", config)


def test_clear_empties_what_is_not_pinned(recorded_run: Any) -> None:
    script = "turns:\n" + WRITE + "  - {stage: two, text: finished}\n"
    ran, provider = recorded_run(_blueprint("clear"), script, "mover", "--yolo", "--task", "t")
    assert ran.code == 0, ran.finished
    last = provider.requests[-1]
    assert "## task\nthe pinned task" in last.system
    for gone in ("long notes", "kept rows", "scratch work"):
        assert gone not in last.system
    assert [m.role for m in last.messages] == ["system", "user"]  # from the task again


def test_compact_has_the_model_summarize_each_region_it_may(recorded_run: Any) -> None:
    script = (
        "turns:\n"
        + WRITE
        + "  - {stage: two, text: 'we wrote notes'}\n"  # the conversation
        + "  - {stage: two, text: 'NOTES IN SHORT'}\n"  # notes (keep is not summarizable)
        + "  - {stage: two, text: 'SCRATCH IN SHORT'}\n"
        + "  - {stage: two, text: finished}\n"
    )
    ran, provider = recorded_run(_blueprint("compact"), script, "mover", "--yolo", "--task", "t")
    assert ran.code == 0, ran.finished
    assert [e["what"] for e in ran.of("context_compacted")] == ["conversation", "notes", "scratch"]
    last = provider.requests[-1]
    assert "## notes\nNOTES IN SHORT" in last.system and "long notes" not in last.system
    assert "## keep\nkept rows" in last.system  # summarizable = false
    assert "## task\nthe pinned task" in last.system  # pinned: never touched
    assert "summarized:\nwe wrote notes" in str(last.messages[-1].content)


def test_custom_follows_its_lists(recorded_run: Any) -> None:
    config = (
        "[stages.one.transitions.two.transform_config]\n"
        'carry = ["notes"]\ncompact = ["conversation"]\nclear = ["scratch"]\n'
        'compact_prompt = "Say what was tried."\n'
    )
    script = "turns:\n" + WRITE + "  - {stage: two, text: 'tried one thing'}\n"
    script += "  - {stage: two, text: finished}\n"
    ran, provider = recorded_run(
        _blueprint("custom", config), script, "mover", "--yolo", "--task", "t"
    )
    assert ran.code == 0, ran.finished
    summary, last = provider.requests[-2], provider.requests[-1]
    assert str(summary.messages[-1].content).startswith("Say what was tried.")
    assert "## notes\nlong notes" in last.system and "## keep\nkept rows" in last.system
    assert "scratch work" not in last.system
    assert "summarized:\ntried one thing" in str(last.messages[-1].content)


def test_a_summary_the_model_cannot_write_leaves_the_runtimes_record(recorded_run: Any) -> None:
    script = (
        "turns:\n"
        + WRITE
        + "  - {stage: two, fail: 'overloaded'}\n"
        + "  - {stage: two, fail: 'overloaded'}\n"
        + "  - {stage: two, fail: 'overloaded'}\n"
        + "  - {stage: two, text: finished}\n"
    )
    ran, provider = recorded_run(_blueprint("compact"), script, "mover", "--yolo", "--task", "t")
    assert ran.code == 0, ran.finished
    last = provider.requests[-1]
    assert "In stage 'one':\n- context_write: ok" in str(last.messages[-1].content)
    assert "## notes\nlong notes" in last.system  # left as it was
    assert sum("no summary" in n["message"] for n in ran.of("notice")) == 3


COMPACTING = """[agent]
name = "reader"

[context.regions]
task = { kind = "pinned" }
codebase = { kind = "compacting", max_tokens = 1000, compact_at = "50%" }
history = { kind = "compact_history", source_region = "codebase" }

[stages.read]
mode = "autonomous"
available_tools = ["context_append"]
"""


def test_a_compacting_region_past_its_mark_is_summarized_in_place(recorded_run: Any) -> None:
    big = "x" * 1200  # 300 tokens each: two are past 50% of 1,000
    script = (
        "turns:\n"
        "  - stage: read\n    tool_calls:\n"
        f"      - {{name: context_append, arguments: {{region: codebase, content: '{big}'}}}}\n"
        f"      - {{name: context_append, arguments: {{region: codebase, content: '{big}'}}}}\n"
        "  - {stage: read, text: 'CODE IN SHORT'}\n"  # the summary, asked with no tools
        "  - {stage: read, text: finished}\n"
    )
    ran, provider = recorded_run(COMPACTING, script, "reader", "--yolo", "--task", "t")
    assert ran.code == 0, ran.finished
    summary, last = provider.requests[-2], provider.requests[-1]
    assert not summary.tools and "'codebase'" in str(summary.messages[-1].content)
    assert "## codebase\nCODE IN SHORT" in last.system and big not in last.system
    assert "## history\nCODE IN SHORT" in last.system
    assert [e["what"] for e in ran.of("context_compacted")] == ["codebase"]
