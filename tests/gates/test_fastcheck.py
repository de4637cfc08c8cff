"""The quick argument check never accepts what the full validator refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from charter.runtime.arguments import fast_check
from charter.runtime.catalog import builtin_tools

SCHEMAS = {name: json.loads(t.input_schema) for name, t in builtin_tools().items()}
FAST = {name: fast_check(schema) for name, schema in SCHEMAS.items()}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=600)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.sampled_from(["", "a", ".", "content", "name", "*.py", "https://x.example", "add"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def test_common_tools_have_a_quick_check() -> None:
    for name in (
        "read_file",
        "read_files",
        "write_file",
        "edit_file",
        "list_dir",
        "search_files",
        "shell",
        "web_fetch",
        "todo_add",
        "context_write",
    ):
        assert FAST[name] is not None, name
    # Shapes it does not model get none: the full validator handles them.
    assert FAST["terminal"] is None  # env mapping with propertyNames
    assert FAST["patch"] is None  # "not": {"const": 0}


@pytest.mark.parametrize("name", sorted(n for n, f in FAST.items() if f is not None))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_quick_yes_implies_valid(name: str, data: Any) -> None:
    schema = SCHEMAS[name]
    props = schema.get("properties", {})
    keys = st.sampled_from(sorted(props) + ["extra"]) if props else st.just("extra")
    args = data.draw(st.dictionaries(keys, json_values, max_size=len(props) + 1))
    if data.draw(st.booleans()):
        for req in schema.get("required", []):
            args.setdefault(req, "a")
    check = FAST[name]
    assert check is not None
    valid = Draft202012Validator(schema).is_valid(args)
    if check(args):
        assert valid, (name, args)


def test_quick_check_examples() -> None:
    check = FAST["read_file"]
    assert check is not None
    assert check({"path": "a.txt", "offset": 0, "limit": 10})
    assert not check({"path": "a.txt", "offset": True})  # bool is not an integer
    assert not check({"path": "a.txt", "offset": 1.0})  # unsure: the full validator decides
    assert not check({"path": ""})
    assert not check({"path": "a", "x": 1})
    assert not check({})
