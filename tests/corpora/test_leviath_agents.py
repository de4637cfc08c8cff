"""The seven agents Leviath ships, read as Leviath reads them.

Leviath's own suite pins every bundled agent at zero lint errors; Charter
must agree: each validates with no error and compiles to a plan. The config
example Leviath publishes loads as a user config with no error either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support.corpora import leviath_root

from charter.compiler.check import check_project
from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.config_toml import load_user_config
from charter.compiler.frontends.project import load_project
from charter.runtime.plan import AgentPlan

OPTIONS = CompileOptions("posix", "/bin/bash", render_descriptions=False)
_ROOT = leviath_root()
AGENTS = sorted(p.name for p in (_ROOT / "agents").iterdir()) if _ROOT else ["(absent)"]
ENVIRONMENT = {"current_time", "system_info", "locale_info", "environment_info", "which_command"}


def _errors(root: Path, config: Path | None = None) -> list[str]:
    project = load_project(root, config=config, use_default_config=False)
    found = [*project.diagnostics, *check_project(project, OPTIONS)]
    return [
        f"{d.span.path}:{d.span.line}:{d.span.col} {d.code} {d.message}"
        for d in found
        if d.is_error
    ]


def _agent_plan(leviath: Path, name: str) -> AgentPlan:
    """The plan of the bundled agent ``name``, which must compile."""
    project = load_project(leviath / "agents" / name, use_default_config=False)
    result = compile_project(project, OPTIONS)
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    [agent] = result.plan.body.agents
    return agent


@pytest.mark.parametrize("name", AGENTS)
def test_every_bundled_agent_validates_with_no_error(leviath: Path, name: str) -> None:
    assert _errors(leviath / "agents" / name) == []


@pytest.mark.parametrize("name", AGENTS)
def test_every_bundled_agent_compiles_to_a_plan(leviath: Path, name: str) -> None:
    agent = _agent_plan(leviath, name)
    assert agent.name == name
    # Every stage is planned, in the order the file declares them.
    assert [s.name for s in agent.stages] == _stage_names(leviath / "agents" / name)


def _stage_names(agent_dir: Path) -> list[str]:
    import tomllib

    data = tomllib.loads((agent_dir / "agent.leviath").read_text("utf-8"))
    return list(data.get("stages", {}))


def test_the_bundled_agents_validate_with_leviaths_example_config(leviath: Path) -> None:
    config = leviath / "schema" / "config.example.toml"
    for name in AGENTS:
        assert _errors(leviath / "agents" / name, config) == [], name


def test_the_example_config_loads(leviath: Path) -> None:
    loaded = load_user_config(leviath / "schema" / "config.example.toml", "config.example.toml")
    assert loaded.model is not None
    assert [d for d in loaded.diagnostics if d.is_error] == []


def test_script_tools_are_the_research_agents_own_web_tools(leviath: Path) -> None:
    agent = _agent_plan(leviath, "researcher")
    search = agent.tool("web_search")
    assert search is not None and search.source == "script"
    assert search.script is not None and search.script.path == "tools/web_search.rhai"
    # The script's own arguments, not Charter's built-in web_search's.
    schema = json.loads(search.input_schema or "{}")
    assert set(schema["properties"]) == {"query", "count", "freshness"}
    assert schema["required"] == ["query"]
    offered = {t.name for s in agent.stages for t in s.tools}
    assert ENVIRONMENT & offered == {"current_time"}
    assert agent.script_permissions is not None
    assert agent.script_permissions.shell.effective == "deny"


def test_fan_out_agents_plan_their_workers(leviath: Path) -> None:
    agent = _agent_plan(leviath, "data-analyst")
    split = agent.stage("split")
    assert split is not None and split.fan_out is not None
    assert (split.fan_out.worker_stage, split.fan_out.merge_stage) == ("gather_worker", "build")
    assert "fan_out" in split.attended
