"""Resolving sandbox profiles: golden cases in
``tests/fixtures/sandbox/resolution.toml``, compiled as real projects."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "resolution.toml"
CASES = tomllib.loads(DATA.read_text(encoding="utf-8"))["case"]


def _compile(tmp_path: Path, case: dict[str, Any]) -> tuple[Any, list[str]]:
    blueprint: dict[str, Any] = {
        "agent": {"name": "a"},
        "stages": {"s": {"mode": "autonomous", "available_tools": ["shell"]}},
    }
    if "agent" in case:
        blueprint["sandbox"] = case["agent"]
    if "stage" in case:
        blueprint["stages"]["s"]["sandbox"] = case["stage"]
    project = tmp_path / "p"
    project.mkdir()
    (project / "agent.leviath").write_text(tomli_w.dumps(blueprint), encoding="utf-8")
    config = None
    if "config" in case:
        config = tmp_path / "config.toml"
        config.write_text(tomli_w.dumps({"sandbox": case["config"]}), encoding="utf-8")
    loaded = load_project(project, config=config, use_default_config=False)
    result = compile_project(loaded, CompileOptions(render_descriptions=False))
    codes = [
        d.code for d in (*loaded.diagnostics, *result.diagnostics) if d.code.startswith("CH47")
    ]
    agents = {a.name: a for a in result.agents}
    stage = agents["a"].stage("s") if "a" in agents else None
    return stage, codes


def _field(profile: Any, key: str) -> Any:
    if key.startswith("limits."):
        return getattr(profile.limits, key.split(".", 1)[1])
    if key == "contained":
        return sorted(profile.contained_allow)
    if key == "mounts":
        return [[m.path, m.writable] for m in profile.mounts]
    value = getattr(profile, key)
    if isinstance(value, tuple):
        return list(value)
    return "" if value is None else value


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES])
def test_resolution(tmp_path: Path, case: dict[str, Any]) -> None:
    stage, codes = _compile(tmp_path, case)
    assert sorted(codes) == sorted(case.get("codes", [])), codes
    assert stage is not None and stage.sandbox is not None
    profile = stage.sandbox
    for key, want in case.get("expect", {}).items():
        if key.endswith("+"):
            have = _field(profile, "contained" if key == "contained+" else key[:-1])
            missing = [w for w in want if w not in have]
            assert not missing, f"{key}: {missing} not in {have}"
        else:
            assert _field(profile, key) == want, f"{key}: {_field(profile, key)!r} != {want!r}"


def test_every_setting_a_scope_made_is_recorded_with_its_source(tmp_path: Path) -> None:
    stage, _ = _compile(
        tmp_path,
        {"config": {"network": "proxy", "allow_hosts": ["*"]}, "agent": {"network": False}},
    )
    settings = {(s.key, s.scope): s for s in stage.sandbox.settings}
    assert settings[("network", "config")].value == "proxy"
    assert settings[("network", "blueprint")].value == "none"
    assert settings[("network", "blueprint")].source.path.endswith("agent.leviath")


def test_every_stage_and_the_agent_carry_a_profile(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    loaded = load_project(repo / "blueprints" / "coder", use_default_config=False)
    result = compile_project(loaded, CompileOptions(render_descriptions=False))
    assert result.plan is not None
    agent = result.plan.body.agent("coder")
    assert agent is not None and agent.sandbox is not None
    assert all(s.sandbox is not None and s.sandbox.kind == "namespace" for s in agent.stages)
