"""Charter's own JSON nesting bound: the same answer on every Python."""

from __future__ import annotations

import json

import pytest

from charter.runtime.jsonbound import MAX_DEPTH, TooDeep, loads, nesting


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
