"""The published JSON Schemas: fresh, valid, and accepting the shipped examples."""

from __future__ import annotations

import json
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
import yaml

from charter.compiler.schemagen import BASE_URL, SCHEMAS, generate, schema_dir

REPO = Path(__file__).resolve().parents[2]


def test_committed_schemas_are_fresh() -> None:
    stale = [
        name
        for name, text in generate().items()
        if not (schema_dir() / name).is_file()
        or (schema_dir() / name).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"regenerate with `python -m charter.compiler.schemagen`: {stale}"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_valid_and_identified(name: str) -> None:
    schema = json.loads((files("charter.schemas") / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == BASE_URL + name
    assert schema["$schema"].endswith("2020-12/schema")


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((schema_dir() / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema, registry=referencing.Registry())


def _load(path: Path) -> Any:
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    return tomllib.loads(path.read_text(encoding="utf-8"))


EXAMPLES = [
    ("agent.v1.json", "blueprints/notes-core/agent.yaml"),
    ("tool.v1.json", "blueprints/notes-core/agent/tools/project_note/tool.yaml"),
    ("mcp-server.v1.json", "blueprints/notes-core/agent/mcp/docs.yaml"),
    ("blueprint.v1.json", "blueprints/coder/agent.leviath"),
    ("stage.v1.json", "blueprints/coder/stages/review.toml"),
    ("charter.v1.json", "blueprints/coder/charter.toml"),
]


@pytest.mark.parametrize(("schema", "example"), EXAMPLES)
def test_shipped_examples_validate_against_their_schema(schema: str, example: str) -> None:
    errors = list(_validator(schema).iter_errors(_load(REPO / example)))
    assert not errors, [e.message for e in errors]


@pytest.mark.parametrize(("schema", "example"), EXAMPLES)
def test_examples_point_editors_at_their_schema(schema: str, example: str) -> None:
    head = (REPO / example).read_text(encoding="utf-8").splitlines()[0]
    assert BASE_URL + schema in head
    assert head.startswith(("# yaml-language-server: $schema=", "#:schema "))


def test_schema_rejects_what_the_loader_rejects() -> None:
    bad = {"agent": {"name": "x"}, "stages": {"s": {"available_tool": ["read_file"]}}}
    assert list(_validator("blueprint.v1.json").iter_errors(bad))
    bad_perm = {"agent": {"name": "x"}, "tool_permissions": {"shell": "dney"}}
    assert list(_validator("blueprint.v1.json").iter_errors(bad_perm))


def test_blueprint_data_is_readable_through_importlib_resources() -> None:
    text = (files("charter.blueprints") / "coder" / "agent.leviath").read_text(encoding="utf-8")
    assert 'name = "coder"' in text


def test_no_plan_field_is_a_floating_point_number() -> None:
    """The plan's digest relies on it: canonical JSON has no stable float form."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "number":
                found.append(path)
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")

    walk(json.loads((schema_dir() / "plan.v1.json").read_text(encoding="utf-8")), "")
    assert found == []
