"""The provider interface: data types, argument parsing, edge choice, exports."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import charter.runtime.models as models
from charter.runtime.models import (
    CHOOSE_EDGE_TOOL,
    EdgeChoice,
    Message,
    ModelToolCall,
    ModelTurn,
    ToolSpec,
    edge_tool_spec,
    parse_arguments,
    split_edge_calls,
)
from charter.runtime.plan import ToolEntry


@pytest.mark.parametrize(
    ("raw", "arguments", "error"),
    [
        ('{"path": "a.md"}', {"path": "a.md"}, None),
        ("", {}, None),
        ("   \n", {}, None),
        ('{"path": "a.md"', None, "not valid JSON (Expecting ',' delimiter at character 15)"),
        ("{'path': 'a.md'}", None, "not valid JSON (Expecting property name enclosed"),
        ('["a.md"]', None, "must be a JSON object, not an array"),
        ('"a.md"', None, "not a string"),
        ("3", None, "not a number"),
        ("true", None, "not a boolean"),
        ("null", None, "not null"),
        ("[" * 100_000, None, "not valid JSON (nested too deeply)"),
        ('{"n": ' + "9" * 5000 + "}", None, "not valid JSON (a number too long to read)"),
    ],
)
def test_parse_arguments(raw: str, arguments: dict[str, Any] | None, error: str | None) -> None:
    got_arguments, got_error = parse_arguments(raw)
    assert got_arguments == arguments
    if error is None:
        assert got_error is None
    else:
        assert got_error is not None and error in got_error


def entry(schema: str | None) -> ToolEntry:
    return ToolEntry(
        name="read_file",
        source="builtin",
        impl="read_file",
        description="Read a file.",
        input_schema=schema,
    )


def test_tool_spec_from_a_plan_entry() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    spec = ToolSpec.from_entry(entry(json.dumps(schema, sort_keys=True)))
    assert spec == ToolSpec("read_file", "Read a file.", schema)
    # No schema in the plan still means "an arguments object".
    assert ToolSpec.from_entry(entry(None)).parameters == {"type": "object"}
    with pytest.raises(ValueError, match="not a JSON object"):
        ToolSpec.from_entry(entry("[]"))


def test_messages_check_their_shape() -> None:
    call = ModelToolCall.parse("c1", "read_file", "{}")
    assert Message.tool(call, "ok") == Message("tool", "ok", tool_call_id="c1", name="read_file")
    assert ModelTurn("hi", (call,)).message() == Message("assistant", "hi", (call,))
    with pytest.raises(ValueError, match="only assistant"):
        Message("user", "x", tool_calls=(call,))
    with pytest.raises(ValueError, match="needs the tool_call_id"):
        Message("tool", "x")
    with pytest.raises(ValueError, match="only tool messages"):
        Message("user", "x", tool_call_id="c1")
    with pytest.raises(ValueError, match="unknown message role"):
        Message("developer", "x")  # type: ignore[arg-type]


def test_the_edge_tool_lists_targets_and_hints() -> None:
    spec = edge_tool_spec([EdgeChoice("review", "the draft is complete"), EdgeChoice("research")])
    assert spec.name == CHOOSE_EDGE_TOOL
    assert "- review: the draft is complete" in spec.description
    assert "- research" in spec.description
    assert spec.parameters["properties"]["edge"]["enum"] == ["review", "research"]
    assert spec.parameters["required"] == ["edge"]


def test_edge_calls_are_split_out_only_when_edges_are_offered() -> None:
    choose = ModelToolCall.parse("e", CHOOSE_EDGE_TOOL, '{"edge": "review", "reason": "done"}')
    other = ModelToolCall.parse("r", "read_file", "{}")
    assert split_edge_calls([other, choose], [EdgeChoice("review")]) == ((other,), "review")
    # Without hinted edges it is just a call to a tool the stage does not offer.
    assert split_edge_calls([choose], []) == ((choose,), None)
    # Broken JSON or a missing argument stays a call, with an error the model reads.
    broken = ModelToolCall.parse("b", CHOOSE_EDGE_TOOL, '{"edge": ')
    empty = ModelToolCall.parse("m", CHOOSE_EDGE_TOOL, "{}")
    kept, edge = split_edge_calls([broken, empty], [EdgeChoice("review")])
    assert edge is None and [c.id for c in kept] == ["b", "m"]
    assert kept[0].error == broken.error
    assert kept[1].error == "choose_edge needs an 'edge' argument naming one of: review"


def test_exports_are_curated() -> None:
    public = {name for name in vars(models) if not name.startswith("_")}
    modules = {
        "base",
        "script",
        "openai",
        "annotations",
        "os",
        "re",
        "Mapping",
        "TYPE_CHECKING",
        "Any",
    }
    assert set(models.__all__) == public - modules
    assert models.__all__ == sorted(models.__all__, key=lambda n: (not n.isupper(), n))


def test_importing_the_models_package_does_not_import_httpx() -> None:
    code = (
        "import sys, charter.runtime.models as m\n"
        "m.load_provider('script:' + sys.argv[1])\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
        "m.load_provider('openai:x')\n"
        "assert 'httpx' in sys.modules\n"
    )
    script = str(
        __import__("pathlib").Path(__file__).parent.parent / "fixtures/scripts/good/bare_list.yaml"
    )
    subprocess.run([sys.executable, "-c", code, script], check=True, timeout=30)
