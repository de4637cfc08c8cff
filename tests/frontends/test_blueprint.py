"""Blueprint front-end: golden cases under tests/fixtures/toml/blueprint plus
behaviour that a single file cannot show (edge normalisation, the coder
example, robustness on arbitrary input)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support.cases import check_case, expected
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from charter.compiler.frontends.blueprint import Blueprint, EdgeTable, StageTable, load_blueprint
from charter.compiler.frontends.config_toml import SafeShellEntry
from charter.compiler.frontends.stage_toml import combine_stages, load_stage_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "toml"
REPO = Path(__file__).resolve().parent.parent.parent
CASES = sorted((FIXTURES / "blueprint").glob("*.toml"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_blueprint_case(case: Path) -> None:
    loaded = load_blueprint(case, case.name)
    check_case(case, loaded.diagnostics)
    assert all(d.span.path == case.name for d in loaded.diagnostics)
    if not expected(case):
        assert isinstance(loaded.model, Blueprint)


def test_every_error_family_has_a_case() -> None:
    codes = {code for case in CASES for code, *_ in expected(case)}
    assert {"CH102", "CH104", "CH201", "CH202", "CH203", "CH204", "CH205", "CH207"} <= codes


def test_unknown_key_carries_accepted_keys_as_help() -> None:
    case = FIXTURES / "blueprint" / "unknown_gate_key_table.toml"
    [d] = load_blueprint(case, case.name).diagnostics
    assert d.key_path == "stages.a.transitions.b.gate.require_modification"
    assert d.help is not None and "require_modifications" in d.help and "max_attempts" in d.help


def _load(tmp_path: Path, text: str) -> Blueprint:
    p = tmp_path / "agent.leviath"
    p.write_text(text, encoding="utf-8")
    loaded = load_blueprint(p, "agent.leviath")
    assert loaded.diagnostics == (), loaded.diagnostics
    assert loaded.model is not None
    return loaded.model


def test_both_edge_shapes_normalise_to_edges_with_their_paths(tmp_path: Path) -> None:
    bp = _load(
        tmp_path,
        '[agent]\nname = "x"\n'
        '[stages.a.transitions.b]\nhint = "go"\ngate = { require_modifications = true }\n'
        '[stages.a.transitions.c]\ncondition = "error"\n'
        '[[stages.d.edges]]\nto = "a"\n'
        '[[stages.d.edges]]\nto = "a"\ncondition = "stuck"\nstuck_after_iterations = 3\n',
    )
    a_edges = bp.stages["a"].all_edges()
    assert [(p, e.to, e.effective_condition) for p, e in a_edges] == [
        (("transitions", "b"), "b", "llm_choice"),
        (("transitions", "c"), "c", "error"),
    ]
    gate = a_edges[0][1].gate
    assert gate is not None and gate.require_modifications and gate.max_attempts is None
    d_edges = bp.stages["d"].all_edges()
    assert [(p, e.effective_condition) for p, e in d_edges] == [
        (("edges", 0), "always"),
        (("edges", 1), "stuck"),
    ]
    # The condition stays unset on the model so lints can tell "defaulted".
    assert a_edges[0][1].condition is None and isinstance(a_edges[0][1], EdgeTable)


def test_empty_transitions_table_marks_a_terminal_stage(tmp_path: Path) -> None:
    bp = _load(
        tmp_path,
        '[agent]\nname = "x"\n[stages.end]\nmode = "output"\n'
        "[stages.end.transitions]\n[stages.other]\n",
    )
    assert bp.stages["end"].declares_edges and bp.stages["end"].all_edges() == ()
    assert not bp.stages["other"].declares_edges


def test_entry_defaults_to_first_declared_stage(tmp_path: Path) -> None:
    bp = _load(tmp_path, '[agent]\nname = "x"\n[stages.zeta]\n[stages.alpha]\n')
    assert bp.entry == "zeta"
    bp2 = _load(
        tmp_path, '[agent]\nname = "x"\nentry_stage = "alpha"\n[stages.zeta]\n[stages.alpha]\n'
    )
    assert bp2.entry == "alpha"
    assert _load(tmp_path, '[agent]\nname = "x"\n').entry is None


def test_defaults_are_distinguishable_from_declared_values(tmp_path: Path) -> None:
    bp = _load(tmp_path, '[agent]\nname = "x"\n[stages.a]\n')
    stage = bp.stages["a"]
    assert stage.mode is None and stage.max_iterations is None and stage.allow_complete is None
    assert stage.available_tools == () and stage.tool_permissions == {}
    assert bp.safe_commands is None and bp.security is None and bp.agent.max_child_depth is None


def test_models_are_frozen(tmp_path: Path) -> None:
    bp = _load(tmp_path, '[agent]\nname = "x"\n[stages.a]\navailable_tools = ["read_file"]\n')
    with pytest.raises(ValidationError):
        bp.stages["a"].mode = "output"  # type: ignore[misc]
    assert isinstance(bp.stages["a"].available_tools, tuple)


def test_output_schema_key_is_read_through_its_alias(tmp_path: Path) -> None:
    bp = _load(
        tmp_path,
        '[agent]\nname = "x"\n[stages.s]\nmode = "output"\n'
        '[stages.s.output]\nformat = "json"\nschema = { type = "object" }\nvalidator = "v.rhai"\n',
    )
    out = bp.stages["s"].output
    assert out is not None and out.schema_ == {"type": "object"} and out.validator == "v.rhai"


# --- the coder example ---------------------------------------------------------


def test_coder_example_loads_clean_with_its_stage_file() -> None:
    root = REPO / "blueprints" / "coder"
    bp = load_blueprint(root / "agent.leviath", "blueprints/coder/agent.leviath")
    review = load_stage_file(root / "stages" / "review.toml", "blueprints/coder/stages/review.toml")
    assert bp.diagnostics == () and review.diagnostics == ()
    table, diags = combine_stages(bp, [review])
    assert diags == []
    assert list(table) == ["discover", "plan", "implement", "summary", "review"]
    assert bp.model is not None and bp.model.agent.name == "coder" and bp.model.entry == "discover"
    modes = {name: entry.stage.mode for name, entry in table.items()}
    assert modes == {
        "discover": "autonomous",
        "plan": "interactive",
        "implement": "autonomous",
        "summary": "output",
        "review": "interactive",
    }
    # Every edge points at a stage that exists.
    for entry in table.values():
        for _, edge in entry.stage.all_edges():
            assert edge.to in table
    implement = table["implement"].stage
    [(_, to_review)] = [(p, e) for p, e in implement.all_edges() if e.to == "review"]
    assert to_review.gate is not None and to_review.gate.require_modifications
    assert to_review.gate.max_attempts == 3
    plan = table["plan"].stage
    assert set(plan.required_tools) <= set(plan.available_tools)
    assert table["discover"].stage.tool_permissions["shell"] == "ask"
    summary = table["summary"].stage
    assert summary.output is not None and summary.output.format and summary.output.example
    assert table["review"].display == "blueprints/coder/stages/review.toml"
    span = table["review"].span("edges", 1, "to")
    assert (span.line, span.col) == (27, 6)
    assert bp.model.tool_permissions["shell"] == "ask"
    assert bp.model.safe_commands is not None
    assert isinstance(bp.model.safe_commands.shell[1], SafeShellEntry)


def test_coder_example_files_start_with_schema_comment() -> None:
    root = REPO / "blueprints" / "coder"
    first = (root / "agent.leviath").read_text(encoding="utf-8").splitlines()[0]
    assert first == "#:schema https://charter.dev/schemas/blueprint.v1.json"
    for f in (root / "stages").glob("*.toml"):
        assert f.read_text(encoding="utf-8").splitlines()[0] == (
            "#:schema https://charter.dev/schemas/stage.v1.json"
        )


def test_blueprint_toml_name_loads_the_same(tmp_path: Path) -> None:
    shutil.copy(REPO / "blueprints" / "coder" / "agent.leviath", tmp_path / "blueprint.toml")
    loaded = load_blueprint(tmp_path / "blueprint.toml", "blueprint.toml")
    assert loaded.diagnostics == () and loaded.model is not None


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    loaded = load_blueprint(tmp_path / "nope.leviath", "nope.leviath")
    assert loaded.model is None and [d.code for d in loaded.diagnostics] == ["CH106"]


# --- robustness ---------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "[agent]\n",
        'name = "x"\n',
        "[stages.a]\n",
        "[[stages.a.edges]]\n",
        "[stages.a.transitions.b]\n",
        'to = "b"\n',
        'mode = "output"\n',
        "gate = { max_attempts = -1 }\n",
        'tool_permissions = { shell = "dney" }\n',
        "available_tools = [1, [2], {a = 3}]\n",
        "stuck_after_minutes = 0\n",
        'condition = "stuck"\n',
        "[tool_permissions]\n",
        "shell = {}\n",
        "[safe_commands]\n",
        "shell = [{}, 1, 'x']\n",
        "output = 3\n",
        "stages = []\n",
        "= =\n",
        "\x00\n",
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_FRAGMENTS, max_size=12))
def test_loading_never_raises(tmp_path: Path, parts: list[str]) -> None:
    p = tmp_path / "agent.leviath"
    p.write_text("".join(parts), encoding="utf-8")
    loaded = load_blueprint(p, "agent.leviath")
    assert loaded.model is not None or loaded.diagnostics
    for d in loaded.diagnostics:
        assert d.span.line >= 1 and d.span.col >= 1
    if loaded.model is not None:
        for stage in loaded.model.stages.values():
            assert isinstance(stage, StageTable)
            stage.all_edges()


@pytest.mark.parametrize(
    ("case", "hint"),
    [
        ("stage_key_under_model_table", "Move it up to the stage's own keys"),
        ("stage_key_at_top_level", "put it under a [stages.<name>] table"),
        ("stage_key_under_edge_table", "read as part of 'stages.a.transitions.b'"),
    ],
)
def test_misplaced_keys_say_where_they_belong(case: str, hint: str) -> None:
    path = FIXTURES / "blueprint" / f"{case}.toml"
    [d] = load_blueprint(path, path.name).diagnostics
    assert d.help is not None and hint in d.help


def test_generated_json_schemas_accept_the_coder_example() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    root = REPO / "blueprints" / "coder"
    bp = tomllib.loads((root / "agent.leviath").read_text(encoding="utf-8"))
    jsonschema.validate(bp, Blueprint.model_json_schema(mode="validation"))
    review = tomllib.loads((root / "stages" / "review.toml").read_text(encoding="utf-8"))
    jsonschema.validate(review, StageTable.model_json_schema(mode="validation"))
    review["tool_permissions"]["shell"] = "dney"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(review, StageTable.model_json_schema(mode="validation"))
