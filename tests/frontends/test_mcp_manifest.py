"""MCP server manifest front-end.

Each file under ``tests/fixtures/yaml/mcp/`` lists the diagnostics it must
produce in trailing ``#! CODE line:col text`` comments; a file without them
must load cleanly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support.cases import check_case, expected, over_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.compiler.frontends.mcp_manifest import (
    McpServer,
    load_mcp_manifest,
    server_id_from_path,
)

TESTS = Path(__file__).resolve().parent.parent
CASES = TESTS / "fixtures" / "yaml" / "mcp"
NOTES_CORE = TESTS.parent / "blueprints" / "notes-core"


@over_cases(CASES, "*.yaml")
def test_fixture_case(case: Path) -> None:
    loaded = load_mcp_manifest(case, case.name)
    check_case(case, loaded.diagnostics)
    if not expected(case):
        assert loaded.model is not None


def test_defaults() -> None:
    server = load_mcp_manifest(CASES / "valid_defaults.yaml", "x.yaml").model
    assert server == McpServer(command="./bin/server")
    assert server is not None
    assert (server.enabled, server.transport, server.args, server.env, server.headers) == (
        True,
        "stdio",
        (),
        {},
        {},
    )
    assert (server.tools.include, server.tools.exclude) == ((), ())
    assert (server.risk, server.approval_policy, server.capability) == ("medium", "prompt", None)
    assert (server.connect_timeout_seconds, server.timeout_seconds) == (30, 60)
    assert server.supports_parallel_tool_calls is False


def test_values_are_kept_as_written() -> None:
    server = load_mcp_manifest(CASES / "valid_stdio.yaml", "docs.yaml").model
    assert server is not None
    assert server.args == ("docs-mcp", "--root", "./docs")
    # ${VAR} references are expanded by the host only after connect approval.
    assert server.env == {"DOCS_TOKEN": "${DOCS_TOKEN}"}
    assert server.tools.include == ("search*", "get_page")
    assert server.timeout_seconds == 12.5 and server.connect_timeout_seconds == 10
    assert server.enabled is False


def test_call_capability_defaults_to_the_server_id() -> None:
    http = load_mcp_manifest(CASES / "valid_http.yaml", "tracker.yaml").model
    stdio = load_mcp_manifest(CASES / "valid_stdio.yaml", "docs.yaml").model
    assert http is not None and stdio is not None
    assert http.call_capability("tracker") == "mcp.call:tracker"
    assert stdio.call_capability("other") == "mcp.call:docs"


@pytest.mark.parametrize(
    ("path", "server_id"),
    [(Path("agent/mcp/docs.yaml"), "docs"), (Path("agent/mcp/issue-tracker.yml"), "issue-tracker")],
)
def test_server_id_is_the_file_stem(path: Path, server_id: str) -> None:
    assert server_id_from_path(path) == server_id


def test_cross_field_rules_still_run_when_another_field_is_invalid(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("transport: stdio\nrisk: hgih\nurl: https://x.example\n")
    loaded = load_mcp_manifest(f, "s.yaml")
    assert loaded.model is None
    got = sorted((d.code, d.span.line, d.span.col) for d in loaded.diagnostics)
    assert got == [("CH203", 2, 7), ("CH203", 3, 1), ("CH204", 1, 12)]


def test_bad_transport_skips_transport_rules(tmp_path: Path) -> None:
    # With an unknown transport nothing can be said about command or url.
    f = tmp_path / "s.yaml"
    f.write_text("transport: carrier-pigeon\nurl: https://x.example\n")
    [d] = load_mcp_manifest(f, "s.yaml").diagnostics
    assert (d.code, d.span.line, d.span.col) == ("CH203", 1, 12)


def test_notes_core_docs_server_loads_cleanly() -> None:
    path = NOTES_CORE / "agent" / "mcp" / "docs.yaml"
    loaded = load_mcp_manifest(path, "agent/mcp/docs.yaml")
    assert loaded.diagnostics == ()
    assert loaded.model is not None and loaded.model.transport == "stdio"
    assert loaded.model.tools.include and loaded.model.tools.exclude
    assert server_id_from_path(path) == "docs"
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=https://charter.dev/schemas/mcp-server.v1.json"


_FIELDS = [*McpServer.model_fields, "extra"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(_FIELDS),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-5, 100_000),
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from(["stdio", "streamable_http", "http", "https://a.example", "ftp://"]),
            st.lists(st.sampled_from(["a", "", "search*"]), max_size=3),
            st.dictionaries(st.sampled_from(["A", "1B", "include", "x y"]), st.just("v")),
        ),
    )
)
def test_structured_inputs_never_raise(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    f = tmp_path_factory.mktemp("fuzz") / "s.yaml"
    # JSON is YAML; non-finite floats are written the YAML way.
    text = json.dumps(data).replace("NaN", ".nan").replace("-Infinity", "-.inf")
    f.write_text(text.replace("Infinity", ".inf"), encoding="utf-8")
    loaded = load_mcp_manifest(f, "s.yaml")
    assert loaded.model is not None or loaded.diagnostics
    for d in loaded.diagnostics:
        assert d.span.line == 1 and d.span.col >= 1
