"""The quick argument check never accepts what the full validator refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from charter.compiler.catalog.builtin import builtin_tools
from charter.runtime.policy.arguments import SchemaCheck, check_arguments, fast_check

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


# -- the differential test: random schemas of the subset the quick check
# models, random instances, the same verdict as jsonschema ----------------------

_bounds = st.one_of(st.none(), st.integers(min_value=0, max_value=4))


def _with(base: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {**base, **{k: v for k, v in optional.items() if v is not None}}


_strings = st.builds(
    lambda lo, hi, pattern, enum, doc: _with(
        {"type": "string"}, minLength=lo, maxLength=hi, pattern=pattern, enum=enum, description=doc
    ),
    _bounds,
    _bounds,
    st.one_of(st.none(), st.sampled_from(["^a", "b$", "[0-9]", "^[a-z]+$", "x|y"])),
    st.one_of(st.none(), st.lists(st.sampled_from(["", "a", "ab", "b1", "x"]), max_size=3)),
    st.one_of(st.none(), st.just("shown to the model")),
)
_integers = st.builds(
    lambda lo, hi, enum: _with({"type": "integer"}, minimum=lo, maximum=hi, enum=enum),
    st.one_of(st.none(), st.integers(min_value=-2, max_value=3)),
    st.one_of(st.none(), st.integers(min_value=-2, max_value=3)),
    st.one_of(st.none(), st.lists(st.integers(min_value=-2, max_value=3), max_size=3)),
)
_scalars = st.one_of(_strings, _integers, st.just({"type": "boolean"}))
_arrays = st.builds(
    lambda items, lo, hi, unique: _with(
        {"type": "array"}, items=items, minItems=lo, maxItems=hi, uniqueItems=unique
    ),
    st.one_of(st.none(), _scalars),
    _bounds,
    _bounds,
    st.one_of(st.none(), st.booleans()),
)
_names = st.sampled_from(["a", "b", "c", "path"])


@st.composite
def _object_schemas(draw: Any) -> dict[str, Any]:
    props = draw(st.dictionaries(_names, st.one_of(_scalars, _arrays), max_size=4))
    required = draw(st.lists(st.sampled_from([*props, "z"]), max_size=3, unique=True))
    extra = draw(st.one_of(st.none(), st.booleans()))
    schema = _with({"type": "object", "properties": props}, additionalProperties=extra)
    if required:
        schema["required"] = required
    return schema


_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=5)
    | st.sampled_from([1.0, 2.5, -0.0])
    | st.sampled_from(["", "a", "ab", "b1", "x", "aa", "9"]),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=500, deadline=None)
@given(schema=_object_schemas(), data=st.data())
def test_quick_check_agrees_with_jsonschema_on_random_schemas(schema: Any, data: Any) -> None:
    # None only where the subset draws the line itself (uniqueItems over
    # anything but strings); the entry point must agree either way.
    check = fast_check(schema)
    keys = st.sampled_from([*schema["properties"], *schema.get("required", []), "extra"])
    args = data.draw(st.dictionaries(keys, _values, max_size=5))
    valid = Draft202012Validator(schema).is_valid(args)
    if check is not None and check(args):
        assert valid, (schema, args)
    # The one entry point (quick check, then the full validator) gives
    # jsonschema's verdict exactly.
    refused = check_arguments("t", args, SchemaCheck(json.dumps(schema)))
    assert (refused is None) == valid, (schema, args, refused)


def test_schemas_outside_the_subset_get_no_quick_check() -> None:
    for schema in (
        {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}},
        {"type": "object", "properties": {"a": {"type": "number"}}},
        {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "patternProperties": {"^x": {}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1.5}}},
        {"type": "array"},
    ):
        assert fast_check(schema) is None, schema
