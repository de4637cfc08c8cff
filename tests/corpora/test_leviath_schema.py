"""Every key Leviath's published schemas define is a key Charter's front-ends
know. The test walks ``blueprint.schema.json`` and ``config.schema.json``
property by property (through ``$ref``, ``oneOf``, maps and lists) and looks
each path up in the pydantic models, so a key Leviath adds to its schema
fails here until Charter reads it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from charter.compiler.frontends.blueprint import Blueprint
from charter.compiler.frontends.config_toml import UserConfig
from charter.compiler.frontends.validation import _step

Path_ = tuple[str, ...]
MAP, ITEM = "<*>", "[]"


def schema_paths(schema: dict[str, Any]) -> Iterator[Path_]:
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        return node

    def walk(node: Any, path: Path_, seen: frozenset[str]) -> Iterator[Path_]:
        if isinstance(node, dict) and "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:
                return
            seen = seen | {name}
        node = resolve(node)
        if not isinstance(node, dict):
            return
        for branch in node.get("oneOf", []) + node.get("anyOf", []):
            yield from walk(branch, path, seen)
        for key, sub in node.get("properties", {}).items():
            yield (*path, key)
            yield from walk(sub, (*path, key), seen)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            yield from walk(extra, (*path, MAP), seen)
        items = node.get("items")
        if isinstance(items, dict):
            yield from walk(items, (*path, ITEM), seen)

    yield from walk(schema, (), frozenset())


def known(model: type, path: Path_) -> bool:
    """Whether the models accept ``path``. A table Charter keeps opaque
    (``Any``: provider settings, webhooks, ...) accepts every key below it."""
    tp: Any = model
    for part in path:
        if tp is Any:
            return True
        tp = _step(tp, 0 if part == ITEM else part)
        if tp is None:
            return False
    return True


def _unknown(model: type, schema_file: Path) -> list[str]:
    schema = json.loads(schema_file.read_text("utf-8"))
    paths = list(schema_paths(schema))
    assert len(paths) > 50, "the walk found too few keys to be the real schema"
    return [".".join(p) for p in paths if not known(model, p)]


def test_every_blueprint_schema_key_is_known(leviath: Path) -> None:
    assert _unknown(Blueprint, leviath / "schema" / "blueprint.schema.json") == []


def test_every_config_schema_key_is_known(leviath: Path) -> None:
    assert _unknown(UserConfig, leviath / "schema" / "config.schema.json") == []


def test_the_walk_notices_a_key_charter_lacks() -> None:
    schema = {
        "type": "object",
        "properties": {
            "agent": {"$ref": "#/$defs/agent"},
            "stages": {"additionalProperties": {"properties": {"mode": {}, "colour": {}}}},
        },
        "$defs": {"agent": {"properties": {"name": {}, "favourite": {}}}},
    }
    paths = list(schema_paths(schema))
    missing = sorted(".".join(p) for p in paths if not known(Blueprint, p))
    assert missing == ["agent.favourite", "stages.<*>.colour"]
