"""agent.yaml front-end.

Each file under ``tests/fixtures/yaml/agent/cases/`` lists the diagnostics it
must produce in trailing ``#! CODE line:col text`` comments (none: it must
load cleanly). Every case is loaded with ``tests/fixtures/yaml/agent/core/``
as its root, which holds the slot folders the cases point at.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _support.cases import check_case, expected, over_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.compiler.frontends.agent_yaml import (
    BUILTIN_TOOLSETS,
    AgentCore,
    load_agent_yaml,
)
from charter.compiler.frontends.mcp_manifest import load_mcp_manifest, server_id_from_path
from charter.compiler.frontends.tool_yaml import load_tool_yaml, tool_id_from_path

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = TESTS / "fixtures" / "yaml" / "agent"
CASES = FIXTURES / "cases"
CORE = FIXTURES / "core"
NOTES_CORE = TESTS.parent / "blueprints" / "notes-core"


@over_cases(CASES, "*.yaml")
def test_fixture_case(case: Path) -> None:
    loaded = load_agent_yaml(case, case.name, CORE)
    check_case(case, loaded.diagnostics)
    if not expected(case):
        assert loaded.model is not None


def test_full_example_is_read_as_written() -> None:
    core = load_agent_yaml(CASES / "valid_full.yaml", "agent.yaml", CORE).model
    assert core is not None
    assert core.agent.id == "helper" and core.runtime.max_model_steps == 40
    assert core.slots.tools == "agent/tools" and core.slots.soul == "agent/SOUL.md"
    assert core.tools.toolsets == ("coding", "schedule", "demiurge_control")
    assert core.tools.metadata["docs__delete_page"].enabled is False
    assert core.tools.metadata["web_extract"].approval_policy == "deny"
    assert core.tools.metadata["web_extract"].risk is None  # unset means "keep the tool's"
    assert core.approval.default is None and core.approval.risks == {
        "critical": "deny",
        "high": "prompt",
    }
    # A grant written with no value ("mcp.connect:docs:") is a grant with no options.
    assert core.capabilities.defaults["mcp.connect:docs"] is None
    assert core.capabilities.defaults["fs.read"] == {"scope": "workspace"}
    assert core.capabilities.slots == {"agent/tools/notes_lookup": {"fs.read": {}}}
    # model, ui and channels are kept as opaque data.
    assert core.model["model_options"] == {"temperature": 0.2}
    assert core.channels["custom-thing"] == {"anything": ("goes", {"here": 1})}


def test_minimal_core_defaults() -> None:
    core = load_agent_yaml(CASES / "valid_minimal.yaml", "agent.yaml", CORE).model
    assert core is not None
    assert core.schema_version == 1
    assert core.runtime.surface_root == "agent" and core.runtime.max_model_steps == 90
    assert core.slots.tools is None and core.tools.toolsets == ()
    assert core.approval.default is None and core.capabilities.defaults == {}
    assert core.dependencies.mode == "host_shared"
    assert core.builtin_tools == ()


def test_builtin_tools_follow_the_toolsets_once_each() -> None:
    core = AgentCore.model_validate(
        {"agent": {"id": "x"}, "tools": {"toolsets": ("schedule", "coding", "schedule")}}
    )
    assert core.builtin_tools == ("schedule_manage", *BUILTIN_TOOLSETS["coding"])


def test_slot_folders_are_resolved_against_root_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent" / "tools").mkdir(parents=True)
    f = tmp_path / "agent.yaml"
    f.write_text("agent: {id: x}\nslots: {tools: agent/tools}\n")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "agent").mkdir(parents=True)
    (elsewhere / "agent" / "tools").write_text("a file, not a folder\n")
    monkeypatch.chdir(elsewhere)
    assert load_agent_yaml(f, "agent.yaml", tmp_path).diagnostics == ()
    [d] = load_agent_yaml(f, "agent.yaml", elsewhere).diagnostics
    assert (d.name, d.span.line, d.span.col, d.key_path) == ("path-not-found", 2, 16, "slots.tools")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_slot_folder_symlinked_outside_the_core_is_refused(tmp_path: Path) -> None:
    core = tmp_path / "core"
    outside = tmp_path / "outside"
    (core / "agent").mkdir(parents=True)
    outside.mkdir()
    try:
        (core / "agent" / "mcp").symlink_to(outside, target_is_directory=True)
    except OSError:
        pytest.skip("symlinks not permitted here")
    f = core / "agent.yaml"
    f.write_text("agent: {id: x}\nslots:\n  mcp: agent/mcp\n")
    [d] = load_agent_yaml(f, "agent.yaml", core).diagnostics
    assert (d.code, d.span.line, d.span.col) == ("CH113", 3, 8)
    assert "outside the agent core" in d.message


def test_slot_paths_that_validation_rejects_are_not_also_path_not_found() -> None:
    loaded = load_agent_yaml(CASES / "slots_escape.yaml", "agent.yaml", CORE)
    assert {d.name for d in loaded.diagnostics} == {"invalid-value"}


def test_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text("- agent\n- tools\n")
    [d] = load_agent_yaml(f, "agent.yaml", tmp_path).diagnostics
    assert (d.code, d.span.line, d.span.col) == ("CH202", 1, 1)


# --- the notes-core example ---------------------------------------------------------


def test_notes_core_loads_with_zero_diagnostics() -> None:
    loaded = load_agent_yaml(NOTES_CORE / "agent.yaml", "agent.yaml", NOTES_CORE)
    assert loaded.diagnostics == ()
    core = loaded.model
    assert core is not None
    assert set(core.tools.toolsets) == {"coding", "demiurge_control"}
    assert core.slots.tools and core.slots.mcp and core.slots.soul
    assert (NOTES_CORE / core.slots.soul).is_file()
    # Grants the example promises: MCP connect and call for docs, and a
    # path-scoped grant of the authored tool's own registry capability.
    assert {"mcp.connect:docs", "mcp.call:docs"} <= set(core.capabilities.defaults)
    # A built-in made stricter by metadata.
    assert core.tools.metadata["web_extract"].approval_policy == "deny"


def test_notes_core_every_tool_and_server_loads_and_is_granted() -> None:
    core = load_agent_yaml(NOTES_CORE / "agent.yaml", "agent.yaml", NOTES_CORE).model
    assert core is not None and core.slots.tools and core.slots.mcp
    tool_dirs = sorted(p for p in (NOTES_CORE / core.slots.tools).iterdir() if p.is_dir())
    assert [tool_id_from_path(p) for p in tool_dirs] == ["project_note"]
    for tdir in tool_dirs:
        spec = load_tool_yaml(tdir / "tool.yaml", "tool.yaml")
        assert spec.diagnostics == () and spec.model is not None
        assert (tdir / "module.py").is_file()
        slot_path = f"{core.slots.tools}/{tdir.name}"
        assert spec.model.capability in core.capabilities.slots[slot_path]
        # The tool's singular gate is not granted core-wide, only to its slot.
        assert spec.model.capability not in core.capabilities.defaults
    servers = sorted((NOTES_CORE / core.slots.mcp).glob("*.yaml"))
    assert [server_id_from_path(p) for p in servers] == ["docs"]
    for spath in servers:
        server = load_mcp_manifest(spath, spath.name)
        assert server.diagnostics == () and server.model is not None
        sid = server_id_from_path(spath)
        assert f"mcp.connect:{sid}" in core.capabilities.defaults
        assert server.model.call_capability(sid) in core.capabilities.defaults


def test_notes_core_yaml_files_point_at_their_schemas() -> None:
    want = {
        "agent.yaml": "agent.v1.json",
        "agent/tools/project_note/tool.yaml": "tool.v1.json",
        "agent/mcp/docs.yaml": "mcp-server.v1.json",
    }
    for rel, schema in want.items():
        first = (NOTES_CORE / rel).read_text(encoding="utf-8").splitlines()[0]
        assert first == f"# yaml-language-server: $schema=https://charter.dev/schemas/{schema}"


# --- robustness -----------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200),
    st.sampled_from(["coding", "deny", "hgih", "agent/tools", "/abs", "../up", "fs.read", ""]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["id", "tools", "toolsets", "risks", "critical", "x", "fs.read"]),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([*AgentCore.model_fields, "extra"]), _VALUES))
def test_structured_inputs_never_raise(data: dict[str, Any]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        f = root / "agent.yaml"
        f.write_text(json.dumps(data) if data else "{}\n", encoding="utf-8")
        loaded = load_agent_yaml(f, "agent.yaml", root)
    assert loaded.model is not None or loaded.diagnostics
    for d in loaded.diagnostics:
        assert d.span.line == 1 and d.span.col >= 1


_YAML_CHARS = "agentidslo:-[]{},'\"#&*!|>\n _./"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=_YAML_CHARS, max_size=80))
def test_arbitrary_text_never_raises(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "agent.yaml"
        f.write_text(text, encoding="utf-8")
        loaded = load_agent_yaml(f, "agent.yaml", Path(tmp))
    assert loaded.model is not None or loaded.diagnostics
