from __future__ import annotations

from typing import Any

import pytest

from charter.runtime.plan import OutputSpec
from charter.runtime.tools.registry import IMPLEMENTATIONS, ToolRuntime, dispatch


@pytest.fixture
def rt(make_rt: Any) -> ToolRuntime:
    rt: ToolRuntime = make_rt()
    return rt


def test_context_sections(rt: ToolRuntime) -> None:
    assert dispatch("context_write", {"region": "notes", "content": "first"}, rt).ok
    assert dispatch("context_append", {"region": "notes", "content": "second", "key": "k"}, rt).ok
    assert dispatch("context_read", {"region": "notes"}, rt).content == "first\n\nsecond"
    assert dispatch("context_read", {"region": "notes", "key": "k"}, rt).content == "second"
    dup = dispatch("context_append", {"region": "notes", "content": "x", "key": "k"}, rt)
    assert dup.rule == "context-key-exists"
    assert dispatch("context_write", {"region": "notes", "content": "SECOND", "key": "k"}, rt).ok
    assert dispatch("context_read", {"region": "notes"}, rt).content == "first\n\nSECOND"
    listing = dispatch("context_list", {}, rt).content
    assert listing == "notes: 2 entries, ~4 tokens"
    assert dispatch("context_list", {"region": "notes"}, rt).content == (
        "0: ~2 tokens: first\n1 [k]: ~2 tokens: SECOND"
    )
    # a write without a key replaces the whole section
    assert dispatch("context_write", {"region": "notes", "content": "only"}, rt).ok
    assert dispatch("context_read", {"region": "notes"}, rt).content == "only"


def test_context_delete(rt: ToolRuntime) -> None:
    for n in range(4):
        dispatch("context_append", {"region": "r", "content": f"e{n}", "key": f"k{n}"}, rt)
    assert dispatch("context_delete", {"region": "r", "key": "k1"}, rt).ok
    assert dispatch("context_delete", {"region": "r", "index": 0}, rt).ok
    assert dispatch("context_read", {"region": "r"}, rt).content == "e2\n\ne3"
    assert dispatch("context_delete", {"region": "r", "index": 5}, rt).rule == "context-bad-index"
    assert dispatch("context_delete", {"region": "r", "oldest": 9}, rt).ok
    assert dispatch("context_read", {"region": "r"}, rt).content == "(empty section)"
    unknown = dispatch("context_delete", {"region": "nope", "key": "x"}, rt)
    assert unknown.rule == "context-unknown-region" and "sections: r" in unknown.content


def test_context_needs_the_tool_name(rt: ToolRuntime) -> None:
    res = IMPLEMENTATIONS["context"]({"region": "r", "content": "c"}, rt)
    assert (res.status, res.rule) == ("invalid", "context-tool-unnamed")
    assert IMPLEMENTATIONS["context"]({"region": "r", "content": "c"}, rt, tool="context_write").ok


def test_checklists(rt: ToolRuntime) -> None:
    first = dispatch("todo_add", {"region": "work", "item": "write tests"}, rt)
    second = dispatch("todo_add", {"region": "work", "item": "write docs"}, rt)
    assert (first.data["id"], second.data["id"]) == (0, 1)
    assert dispatch("todo_note", {"region": "work", "id": 0, "note": "half done"}, rt).ok
    assert [i.text for _, i in rt.store.open_items()] == ["write tests", "write docs"]
    done = dispatch("todo_done", {"region": "work", "id": 0}, rt)
    assert done.content == "item 0 done; 1 open in checklist 'work'"
    assert dispatch("todo_done", {"region": "work", "id": 7}, rt).rule == "todo-unknown-id"
    assert dispatch("todo_done", {"region": "nope", "id": 0}, rt).rule == "todo-unknown-region"
    assert rt.store.checklists["work"][0].notes == ["half done"]


def test_seed_todo(rt: ToolRuntime) -> None:
    assert dispatch("todo", {}, rt).content == "(the todo list is empty)"
    dispatch("todo", {"action": "add", "text": "a"}, rt)
    dispatch("todo", {"action": "add", "text": "b"}, rt)
    assert dispatch("todo", {"action": "complete", "index": 2}, rt).content.endswith(
        "1. [ ] a\n2. [x] b"
    )
    assert dispatch("todo", {"action": "complete", "index": 3}, rt).rule == "todo-bad-index"
    assert dispatch("todo", {"action": "add"}, rt).rule == "todo-missing-text"
    assert dispatch("todo", {"action": "clear"}, rt).ok and rt.store.todo == []


def test_submit_output(rt: ToolRuntime) -> None:
    assert dispatch("submit_output", {"content": "the answer"}, rt).content == (
        "answer submitted (10 characters)"
    )
    again = dispatch("submit_output", {"content": "better"}, rt)
    assert again.data["replaced"] is True and rt.store.output == "better"


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("json", '{"a": 1}', "{a: 1}"),
        ("yaml", "a: 1\n", "a: [1\n"),
        ("toml", "a = 1\n", "a = \n"),
        ("csv", "a,b\n1,2\n", "a,b\n1,2,3\n"),
    ],
)
def test_submit_output_formats(make_rt: Any, fmt: str, good: str, bad: str) -> None:
    rt: ToolRuntime = make_rt(output=OutputSpec(format=fmt))
    refused = dispatch("submit_output", {"content": bad}, rt)
    assert refused.rule == "output-invalid" and rt.store.output is None
    assert dispatch("submit_output", {"content": good}, rt).ok and rt.store.output == good


def test_submit_output_schema(make_rt: Any) -> None:
    spec = OutputSpec(format="json", answer_schema='{"required":["n"],"type":"object"}')
    rt: ToolRuntime = make_rt(output=spec)
    bad = dispatch("submit_output", {"content": '{"m": 1}'}, rt)
    assert "does not match the declared schema: (root): 'n' is a required property" in bad.content
    assert dispatch("submit_output", {"content": '{"n": 1}'}, rt).ok
