"""Charter's own JSON reader: one nesting bound on every Python, and no key twice."""

from __future__ import annotations

import json

import pytest

from charter.runtime.jsonbound import MAX_DEPTH, RepeatedKey, TooDeep, loads, nesting


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_counts_lists_and_objects() -> None:
    assert nesting(1) == 0 and nesting([]) == 1 and nesting({"a": [{"b": []}]}) == 4
    assert nesting(json.loads(_nested(300))) == 300


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 950, 5_000, 100_000])
def test_past_the_bound_is_refused_whatever_the_interpreter_could_parse(depth: int) -> None:
    # 5,000 levels parse on Python 3.13 and not on 3.11: both refuse here.
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH}"):
        loads('{"a": ' + _nested(depth) + "}")


def test_up_to_the_bound_is_read() -> None:
    assert nesting(loads(_nested(MAX_DEPTH))) == MAX_DEPTH
    assert loads(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(json.JSONDecodeError):
        loads("{")


@pytest.mark.parametrize(
    "text",
    [
        '{"command": "rm -rf ~/.ssh", "command": "ls"}',
        '{"tool_input": {"command": "ls"}, "x": 1, "tool_input": {"command": "rm -rf /"}}',
        '[{"a": 1}, {"b": {"c": 1, "c": 1}}]',  # the same value twice is still two readings' worth
        '{"a": 1, "\\u0061": 2}',  # an escape that spells the same key
    ],
)
def test_an_object_with_a_key_twice_is_refused(text: str) -> None:
    with pytest.raises(RepeatedKey, match="more than once"):
        loads(text)


def test_the_same_key_in_different_objects_is_read() -> None:
    assert loads('[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]') == [{"a": 1}, {"a": 2}, {"b": {"a": 3}}]
