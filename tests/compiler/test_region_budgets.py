"""A stage's context layout in the plan: budgets resolved as Leviath
resolves them against the stage model's window, seeds said as data, and
tool routing with canonical tool names. One line per region: its TOML, then
the budget the plan must hold for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.compiler import compile_project, load_project
from charter.runtime.plan import ContextRegion

# claude-haiku-4-5-20251001 has a 200,000-token window in the catalog.
REGIONS: list[tuple[str, int]] = [
    ('{ budget = "10%" }', 20_000),
    ('{ budget = "10%", max_tokens = 500 }', 500),
    ('{ budget = "1%", min_tokens = 9000 }', 9000),
    ('{ budget = "1%", max_tokens = 100, min_tokens = 300 }', 300),  # the floor wins
    ("{ max_tokens = 1234 }", 1234),
    ("{ }", 5000),
]


def _plan_regions(tmp_path: Path, model: str) -> tuple[tuple[ContextRegion, ...], int | None]:
    lines = "\n".join(f"r{n} = {spec}" for n, (spec, _) in enumerate(REGIONS))
    (tmp_path / "agent.leviath").write_text(
        f"""[agent]
name = "b"

[context.regions]
{lines}
task = {{ kind = "pinned", seed = "task_input" }}
notes = {{ kind = "hash_map", seed = {{ tools = [
  "current_time", {{ name = "read_file", args = {{ path = "a" }} }}
] }} }}

[stages.s]
mode = "autonomous"
available_tools = ["read_file", "context_read"]
{model}
[stages.s.tool_routing]
default_region = "notes"
max_result_tokens = 700
[stages.s.tool_routing.overrides]
bash = {{ region = "r0", max_result_tokens = 50 }}
""",
        "utf-8",
    )
    result = compile_project(load_project(tmp_path, use_default_config=False))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    [stage] = result.plan.body.agents[0].stages
    routing = stage.tool_routing
    assert routing is not None and routing.default_region == "notes"
    # an alias names the tool it aliases, as in Leviath
    assert [(r.tool, r.region, r.max_result_tokens) for r in routing.rules] == [("shell", "r0", 50)]
    return stage.regions, stage.context_window


def test_budgets_resolve_against_the_stage_models_window(tmp_path: Path) -> None:
    model = '[stages.s.model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5-20251001"\n'
    regions, size = _plan_regions(tmp_path, model)
    assert size == 200_000
    got = {r.name: r.max_tokens for r in regions}
    assert [got[f"r{n}"] for n in range(len(REGIONS))] == [b for _, b in REGIONS]


def test_an_unknown_model_resolves_against_leviaths_fallback_window(tmp_path: Path) -> None:
    regions, size = _plan_regions(tmp_path, "")
    assert size == 8192
    assert {r.name: r.max_tokens for r in regions}["r0"] == 819


@pytest.mark.parametrize("name", ["task", "notes"])
def test_seeds_and_kinds_are_carried(tmp_path: Path, name: str) -> None:
    regions, _ = _plan_regions(tmp_path, "")
    region = {r.name: r for r in regions}[name]
    assert region.seed is not None
    if name == "task":
        assert (region.seed.source, region.seed.key) == ("caller", "task")
    else:
        assert region.kind == "hashmap"  # Leviath's alias, said once
        assert [(c.name, c.args_json) for c in region.seed.calls] == [
            ("current_time", "{}"),
            ("read_file", '{"path": "a"}'),
        ]
