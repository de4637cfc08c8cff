"""tool.yaml front-end.

Most cases are data: each file under ``tests/fixtures/yaml/tool/`` lists the
diagnostics it must produce in trailing ``#! CODE line:col text`` comments
(no such line: the file must load cleanly). Adding a case is adding a file.
"""

from __future__ import annotations

import importlib.util
import string
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _support.cases import check_case, expected, over_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.compiler.frontends.tool_yaml import (
    SLOT_ONLY_FIELDS,
    TOOL_FIELDS,
    ToolSpec,
    load_tool_yaml,
    tool_id_from_path,
)

TESTS = Path(__file__).resolve().parent.parent
CASES = TESTS / "fixtures" / "yaml" / "tool"
NOTES_CORE = TESTS.parent / "blueprints" / "notes-core"


@over_cases(CASES, "*.yaml")
def test_fixture_case(case: Path) -> None:
    loaded = load_tool_yaml(case, case.name)
    check_case(case, loaded.diagnostics, display=case.name)
    if not expected(case):
        assert loaded.model is not None


def test_the_nine_fields_and_their_defaults() -> None:
    assert TOOL_FIELDS == (
        "entrypoint",
        "description",
        "input_schema",
        "risk",
        "capability",
        "approval_policy",
        "display_policy",
        "model_output_policy",
        "capabilities",
    )
    spec = load_tool_yaml(CASES / "valid_minimal.yaml", "t").model
    assert spec == ToolSpec(description="A tool that keeps every default.")
    assert (spec.entrypoint, spec.input_schema, spec.risk, spec.capability) == (
        "module:execute",
        {},
        "medium",
        None,
    )
    assert (spec.approval_policy, spec.display_policy, spec.model_output_policy) == (
        "prompt",
        "summary",
        "content",
    )
    assert spec.capabilities == ()


def test_full_example_values_are_kept_and_frozen() -> None:
    spec = load_tool_yaml(CASES / "valid_full.yaml", "t").model
    assert spec is not None
    assert spec.capability == "tool.call:notes"
    assert spec.capabilities == ("fs.read", "secret.bind:GH_TOKEN")
    assert spec.input_schema["required"] == ("topic",)
    assert spec.input_schema_json()["required"] == ["topic"]
    with pytest.raises(ValueError):
        spec.risk = "critical"  # type: ignore[misc]


def test_slot_only_fields_are_not_also_reported_as_unknown() -> None:
    loaded = load_tool_yaml(CASES / "slot_only.yaml", "t")
    assert {d.name for d in loaded.diagnostics} == {"slot-only-field-in-tool-yaml"}
    assert {d.key_path for d in loaded.diagnostics} == set(SLOT_ONLY_FIELDS)
    # The rest of the file is still read, so later stages can see it.
    assert loaded.model is not None and loaded.model.risk == "low"
    assert all(d.help and "slot" in d.help for d in loaded.diagnostics)


def test_strict_types_refuse_strings_for_booleans_and_numbers(tmp_path: Path) -> None:
    f = tmp_path / "tool.yaml"
    f.write_text('risk: "low"\ncapabilities: ["fs.read"]\ndescription: "true"\n')
    assert load_tool_yaml(f, "tool.yaml").diagnostics == ()
    f.write_text("description: true\n")
    [d] = load_tool_yaml(f, "tool.yaml").diagnostics
    assert (d.name, d.span.line, d.span.col) == ("wrong-type", 1, 14)


def test_bytes_that_are_not_utf8_are_reported_with_position(tmp_path: Path) -> None:
    f = tmp_path / "tool.yaml"
    f.write_bytes(b"description: caf\xe9\n")
    [d] = load_tool_yaml(f, "tool.yaml").diagnostics
    assert (d.code, d.span.line, d.span.col) == ("CH103", 1, 17)


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    [d] = load_tool_yaml(tmp_path / "nope" / "tool.yaml", "nope/tool.yaml").diagnostics
    assert d.name == "file-unreadable"


@pytest.mark.parametrize(
    ("path", "tool_id"),
    [
        (Path("agent/tools/project_note/tool.yaml"), "project_note"),
        (Path("agent/tools/project_note/tool.yml"), "project_note"),
        (Path("agent/tools/project_note"), "project_note"),
    ],
)
def test_tool_id_is_the_directory_name(path: Path, tool_id: str) -> None:
    assert tool_id_from_path(path) == tool_id


_YAML_CHARS = string.ascii_letters[:8] + string.digits[:3] + " :-[]{},'\"#&*!|>\n\t_."


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=_YAML_CHARS, max_size=80))
def test_loading_never_raises(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    f = tmp_path_factory.mktemp("fuzz") / "tool.yaml"
    f.write_text(text, encoding="utf-8")
    loaded = load_tool_yaml(f, "tool.yaml")
    assert loaded.model is not None or loaded.diagnostics


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from([*TOOL_FIELDS, *SLOT_ONLY_FIELDS, "extra"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-5, 5),
            st.sampled_from(["low", "prompt", "fs.read", "module:execute", "x y"]),
            st.lists(st.sampled_from(["fs.read", "", "a"]), max_size=3),
        ),
    )
)
def test_structured_inputs_never_raise(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    import json

    f = tmp_path_factory.mktemp("fuzz") / "tool.yaml"
    f.write_text(json.dumps(data) if data else "{}\n", encoding="utf-8")
    loaded = load_tool_yaml(f, "tool.yaml")
    for d in loaded.diagnostics:
        assert d.span.line >= 1 and d.span.col >= 1
    slot_keys = {k for k in data if k in SLOT_ONLY_FIELDS}
    assert {d.key_path for d in loaded.diagnostics if d.code == "CH206"} == slot_keys
    assert not any(d.code == "CH201" and d.key_path in SLOT_ONLY_FIELDS for d in loaded.diagnostics)


# --- the notes-core example tool ---------------------------------------------------


def test_notes_core_tool_loads_cleanly() -> None:
    path = NOTES_CORE / "agent" / "tools" / "project_note" / "tool.yaml"
    loaded = load_tool_yaml(path, "tool.yaml")
    assert loaded.diagnostics == ()
    assert loaded.model is not None
    assert loaded.model.capability == "tool.call:project_note"
    assert tool_id_from_path(path) == "project_note"
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=https://charter.dev/schemas/tool.v1.json"


class _Capabilities:
    def __init__(self, granted: set[str]) -> None:
        self.granted = granted
        self.asked: list[str] = []

    def require(self, name: str) -> None:
        self.asked.append(name)
        if name not in self.granted:
            raise PermissionError(name)


def _project_note() -> Any:
    path = NOTES_CORE / "agent" / "tools" / "project_note" / "module.py"
    spec = importlib.util.spec_from_file_location("notes_core_project_note", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notes_core_tool_appends_and_looks_up(tmp_path: Path) -> None:
    tool = _project_note()
    caps = _Capabilities({"fs.read", "fs.write"})
    ctx = SimpleNamespace(workspace=str(tmp_path), capability=caps)
    assert tool.execute(ctx, {"action": "lookup", "topic": "naming"})["found"] is False
    made = tool.execute(ctx, {"action": "append", "topic": "naming", "line": "use snake_case"})
    assert made["created"] is True
    tool.execute(ctx, {"action": "append", "topic": "naming", "line": "no abbreviations"})
    text = (tmp_path / "notes" / "naming.md").read_text(encoding="utf-8")
    assert text.startswith("# naming\n") and text.count("\n- ") == 2
    got = tool.execute(ctx, {"action": "lookup", "topic": "naming"})
    assert got["found"] is True and "no abbreviations" in got["content"]
    assert caps.asked == ["fs.read", "fs.write", "fs.write", "fs.read"]


@pytest.mark.parametrize(
    "args",
    [
        {"action": "lookup", "topic": "../secrets"},
        {"action": "lookup", "topic": "Notes"},
        {"action": "append", "topic": "x", "line": "two\nlines"},
        {"action": "append", "topic": "x", "line": "   "},
        {"action": "delete", "topic": "x"},
    ],
)
def test_notes_core_tool_refuses_bad_arguments(tmp_path: Path, args: dict[str, Any]) -> None:
    caps = _Capabilities({"fs.read", "fs.write"})
    ctx = SimpleNamespace(workspace=str(tmp_path), capability=caps)
    result = _project_note().execute(ctx, args)
    assert result["is_error"] is True
    assert caps.asked == []
    assert not (tmp_path / "notes").exists()


def test_notes_core_tool_needs_its_capability(tmp_path: Path) -> None:
    ctx = SimpleNamespace(workspace=str(tmp_path), capability=_Capabilities({"fs.read"}))
    with pytest.raises(PermissionError):
        _project_note().execute(ctx, {"action": "append", "topic": "x", "line": "y"})
    assert not (tmp_path / "notes").exists()
