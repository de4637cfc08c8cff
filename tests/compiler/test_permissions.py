"""Every precedence and clamp rule, one line of data per case."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from charter.compiler.resolve.permissions import CoreInputs, Said, ScopeInputs, resolve_permission
from charter.runtime.plan import Permission, SourceRef

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "permissions" / "resolution.txt"


def _cases() -> list[Any]:
    cases = []
    for n, line in enumerate(DATA.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        left, right = line.split("=>")
        cols = left.split()
        expected, liftable, clamp = right.split()
        cases.append(pytest.param(cols, expected, liftable == "yes", clamp, id=f"line{n}"))
    return cases


def _said(value: str, scope: str) -> Said | None:
    if value == "-":
        return None
    return Said(cast(Permission, value), SourceRef(path=f"{scope}.toml", line=1, col=1))


@pytest.mark.parametrize(("cols", "expected", "liftable", "clamp"), _cases())
def test_resolution_table(cols: list[str], expected: str, liftable: bool, clamp: str) -> None:
    default, stage, agent, agent_cfg, cfg, loosenable, trust, registry, override = cols
    scopes = ScopeInputs(
        builtin_default=cast(Permission, default),
        stage=_said(stage, "stage"),
        agent=_said(agent, "agent"),
        agent_config=_said(agent_cfg, "agent_config"),
        config=_said(cfg, "config"),
        blueprint_loosenable=loosenable == "yes",
        allow_blueprint_permissions=Said("allow") if trust == "yes" else None,
    )
    core = None
    if registry != "-":
        reg = _said(registry, "registry")
        assert reg is not None
        ov = _said(override, "agent.yaml")
        core = CoreInputs(registry=reg, overrides=(("core_metadata", ov),) if ov else ())
    decision = resolve_permission(scopes, core)
    assert decision.permission == expected
    assert decision.liftable == liftable
    rules = [c.rule for c in decision.clamps]
    assert rules == ([] if clamp == "-" else [clamp])


def test_provenance_lists_every_scope_in_order_with_sources() -> None:
    d = resolve_permission(
        ScopeInputs(
            builtin_default="ask",
            agent=Said("allow", SourceRef(path="agent.leviath", line=7, col=9)),
            config=Said("ask", SourceRef(path="config.toml", line=2, col=9)),
        )
    )
    assert [s.scope for s in d.scopes] == ["agent", "config", "builtin_default"]
    assert d.scopes[0].source == SourceRef(path="agent.leviath", line=7, col=9)
    [clamp] = d.clamps
    assert (clamp.before, clamp.after) == ("allow", "ask")
    assert clamp.source == SourceRef(path="config.toml", line=2, col=9)
    assert "config" in d.explain()


def test_deny_is_never_liftable() -> None:
    d = resolve_permission(ScopeInputs(builtin_default="allow", stage=Said("deny")))
    assert d.permission == "deny" and not d.liftable
    core = CoreInputs(registry=Said("allow"))
    assert not resolve_permission(ScopeInputs(builtin_default="deny"), core).liftable
