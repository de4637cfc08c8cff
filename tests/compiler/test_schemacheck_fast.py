"""The compiler's quick schema check never calls a schema valid that
jsonschema refuses: when it says "certainly valid", the full check (the
meta-schema with format checks, then a validator built with no registry)
passes too. Differential, over generated schemas."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import referencing
from hypothesis import given, settings
from hypothesis import strategies as st

from charter.compiler.catalog.builtin import builtin_tools
from charter.compiler.resolve.schemacheck import certainly_valid, check_schema


def _full_check_passes(schema: Any) -> bool:
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        cls(schema, registry=referencing.Registry()).is_valid({})
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable, TypeError, AttributeError):
        return False
    return True


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.floats(min_value=-2, max_value=3, allow_nan=False),
    st.sampled_from(
        ["", "string", "object", "integer", "nope", "a(", "^[a-z]+$", "[", "#/x", "uri"]
    ),
    st.lists(st.sampled_from(["string", "null", "a", "a", "b"]), max_size=3),
    st.just({}),
)
keywords = st.sampled_from(
    [
        "type", "properties", "required", "items", "additionalProperties", "enum", "const",
        "minimum", "maximum", "minLength", "maxLength", "pattern", "format", "description",
        "anyOf", "oneOf", "allOf", "not", "prefixItems", "patternProperties", "multipleOf",
        "uniqueItems", "dependentRequired", "$ref", "$defs", "$schema", "examples", "title",
        "minItems", "unknownKeyword", "$id", "if", "then", "contains", "propertyNames",
    ]
)  # fmt: skip
schemas = st.recursive(
    st.dictionaries(keywords, values, max_size=4) | st.booleans(),
    lambda inner: st.dictionaries(
        keywords,
        inner | values | st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_size=4,
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(schemas)
def test_certainly_valid_implies_valid(schema: Any) -> None:
    if certainly_valid(schema):
        assert _full_check_passes(schema), schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
        {"type": ["string", "null"], "pattern": "^[a-z]+$", "maxLength": 10},
        {"anyOf": [{"type": "string"}, {"type": "array", "items": {"enum": [1, "a"]}}]},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
        {"type": "object", "dependentRequired": {"a": ["b"]}, "patternProperties": {"^x": True}},
    ],
)
def test_common_schemas_need_no_jsonschema(schema: dict[str, Any]) -> None:
    assert certainly_valid(schema) and _full_check_passes(schema)


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "strin"}, "schema-does-not-compile"),
        ({"required": "name"}, "schema-does-not-compile"),
        ({"pattern": "a("}, "schema-does-not-compile"),
        ({"minLength": -1}, "schema-does-not-compile"),
        ({"$ref": "#/$defs/missing"}, "schema-does-not-compile"),
        ({"$ref": "https://example.com/s.json"}, "external-ref-in-schema"),
        (True, "schema-does-not-compile"),
        # jsonschema raises TypeError on these rather than SchemaError
        ({"$schema": []}, "schema-does-not-compile"),
        ({"$schema": 1.0, "type": "object"}, "schema-does-not-compile"),
    ],
)
def test_what_the_quick_check_leaves_is_still_judged(schema: Any, reason: str) -> None:
    assert not certainly_valid(schema) or isinstance(schema, bool)
    found = check_schema(schema)
    assert found is not None and found[0] == reason


def test_every_catalog_schema_is_judged_quickly() -> None:
    for tool in builtin_tools().values():
        assert certainly_valid(json.loads(tool.input_schema)), tool.name
