"""Stage files and combining them with a blueprint's inline stages."""

from __future__ import annotations

from pathlib import Path

from _support.cases import check_case, expected, over_cases

from charter.compiler.frontends.blueprint import StageTable, load_blueprint
from charter.compiler.frontends.stage_toml import (
    combine_stages,
    load_stage_file,
    merge_stages,
    stage_file_name,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "toml"


@over_cases(FIXTURES / "stage", "*.toml")
def test_stage_case(case: Path) -> None:
    shown = f"stages/{case.name}"
    loaded = load_stage_file(case, shown)
    check_case(case, loaded.diagnostics)
    if not expected(case):
        assert isinstance(loaded.model, StageTable)


def test_stage_name_is_the_file_stem() -> None:
    assert stage_file_name("agents/coder/stages/review.toml") == "review"
    assert stage_file_name("stages\\plan.toml") == "plan"


def _write(tmp_path: Path, rel: str, text: str) -> Path:
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


BLUEPRINT = (
    '[agent]\nname = "x"\n'  # lines 1-2
    "\n"
    "[stages.plan]\n"  # line 4
    'mode = "interactive"\n'
    "\n"
    "[stages.review]\n"  # line 7
    'mode = "interactive"\n'
)


def test_stage_defined_inline_and_in_a_file_is_reported_at_both_places(tmp_path: Path) -> None:
    bp = load_blueprint(_write(tmp_path, "agent.leviath", BLUEPRINT), "agent.leviath")
    review = _write(tmp_path, "stages/review.toml", 'mode = "autonomous"\n')
    extra = _write(tmp_path, "stages/extra.toml", 'mode = "output"\n')
    files = [
        load_stage_file(review, "stages/review.toml"),
        load_stage_file(extra, "stages/extra.toml"),
    ]
    table, diags = combine_stages(bp, files)
    [d] = diags
    assert (d.code, d.name, d.span.path, d.span.line, d.span.col) == (
        "CH207",
        "duplicate-definition",
        "stages/review.toml",
        1,
        1,
    )
    assert "agent.leviath:7:9" in d.message and "review" in d.message
    assert dict(d.data) == {"first": "agent.leviath:7:9", "second": "stages/review.toml:1:1"}
    # The first definition wins; the other stages are all there, inline first.
    assert list(table) == ["plan", "review", "extra"]
    assert (
        table["review"].display == "agent.leviath" and table["review"].stage.mode == "interactive"
    )
    assert table["extra"].prefix == () and table["extra"].stage.mode == "output"
    assert merge_stages(bp, files) == diags


def test_collision_is_reported_even_when_the_inline_stage_is_invalid(tmp_path: Path) -> None:
    text = '[agent]\nname = "x"\n[stages.review]\nmode = "bogus"\n'
    bp = load_blueprint(_write(tmp_path, "agent.leviath", text), "agent.leviath")
    assert bp.model is None
    review = _write(tmp_path, "stages/review.toml", 'mode = "interactive"\n')
    table, diags = combine_stages(bp, [load_stage_file(review, "stages/review.toml")])
    assert [d.code for d in diags] == ["CH207"] and "agent.leviath:3:9" in diags[0].message
    assert table == {}


def test_two_stage_files_with_one_name_collide(tmp_path: Path) -> None:
    bp = load_blueprint(_write(tmp_path, "agent.leviath", '[agent]\nname = "x"\n'), "agent.leviath")
    a = _write(tmp_path, "a/stages/s.toml", "max_iterations = 3\n")
    b = _write(tmp_path, "b/stages/s.toml", "max_iterations = 4\n")
    files = [load_stage_file(b, "b/stages/s.toml"), load_stage_file(a, "a/stages/s.toml")]
    table, diags = combine_stages(bp, files)
    [d] = diags
    assert d.span.path == "b/stages/s.toml" and "a/stages/s.toml:1:1" in d.message
    assert table["s"].stage.max_iterations == 3


def test_invalid_stage_file_contributes_nothing_and_no_extra_error(tmp_path: Path) -> None:
    bp = load_blueprint(_write(tmp_path, "agent.leviath", BLUEPRINT), "agent.leviath")
    bad = _write(tmp_path, "stages/bad.toml", 'mode = "nope"\n')
    loaded = load_stage_file(bad, "stages/bad.toml")
    assert loaded.model is None and [d.code for d in loaded.diagnostics] == ["CH203"]
    table, diags = combine_stages(bp, [loaded])
    assert diags == [] and "bad" not in table


def test_stage_file_positions_are_relative_to_the_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "stages/impl.toml", '\n\n[[edges]]\nto = "review"\nhint = "go"\n')
    loaded = load_stage_file(p, "stages/impl.toml")
    bp = load_blueprint(_write(tmp_path, "agent.leviath", '[agent]\nname = "x"\n'), "agent.leviath")
    table, _ = combine_stages(bp, [loaded])
    entry = table["impl"]
    [(path, edge)] = entry.stage.all_edges()
    span = entry.span(*path, "to")
    assert (span.path, span.line, span.col, edge.to) == ("stages/impl.toml", 4, 6, "review")


def test_blueprint_that_failed_to_parse_still_combines_files(tmp_path: Path) -> None:
    bp = load_blueprint(_write(tmp_path, "agent.leviath", "[agent\n"), "agent.leviath")
    assert bp.model is None and bp.raw is None
    s = _write(tmp_path, "stages/one.toml", 'mode = "autonomous"\n')
    table, diags = combine_stages(bp, [load_stage_file(s, "stages/one.toml")])
    assert diags == [] and list(table) == ["one"]


def test_stage_key_in_model_table_is_explained() -> None:
    path = FIXTURES / "stage" / "stage_key_under_model_table.toml"
    [d] = load_stage_file(path, "stages/x.toml").diagnostics
    assert d.help is not None and "Move it up to the stage's own keys" in d.help
