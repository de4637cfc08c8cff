"""Resolving one tool's permission, with the provenance of every step.

Two vocabularies meet here (docs/permissions.md has the full story):

* Seed 004's scopes. Narrowest wins among stage, agent (the blueprint's
  top-level map), the user's config (with ``[agent_tool_permissions.<agent>]``
  laid over ``[tool_permissions]``) and the built-in default, under two
  clamps: a blueprint may only tighten what the user's config set, and for a
  tool the user did not configure it may go no looser than the built-in
  default, except web_search and web_fetch, or when the user set
  ``allow_blueprint_permissions``. A stage entry replaces the agent entry.
* Seed 000's registry approval (auto, prompt, deny), which an agent core can
  only tighten through ``tools.metadata`` and its ``approval`` block, and the
  global fallback file through its own ``approval`` block. For an agent core
  without a blueprint the registry approval is also the default in place of
  seed 004's catalog default, as the agent host runs such a core.

auto/prompt/deny map onto allow/ask/deny, and where both systems speak the
stricter answer wins. Deny is terminal. Launch flags are the runtime's to
apply; the decision records whether they may lift it (only an ask may be
lifted, and only to allow).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from charter.runtime.plan import Clamp, Decision, Permission, ScopeValue, SourceRef, stricter

__all__ = ["APPROVAL_TO_PERMISSION", "CoreInputs", "Said", "ScopeInputs", "resolve_permission"]

APPROVAL_TO_PERMISSION: dict[str, Permission] = {"auto": "allow", "prompt": "ask", "deny": "deny"}


# The inputs are NamedTuples rather than frozen dataclasses: defined at every
# start-up, they cost a tenth as much to define, and hash the same way.
class Said(NamedTuple):
    """One scope's value for a tool and where it was written."""

    value: Permission
    source: SourceRef | None = None
    detail: str = ""


class ScopeInputs(NamedTuple):
    """Seed 004's scopes for one tool of one agent (None: the scope is silent)."""

    builtin_default: Permission
    # Where the default came from when it is not the catalog's: for an agent
    # core without a blueprint, the host's registry approval of the tool.
    default_from: Said | None = None
    stage: Said | None = None
    agent: Said | None = None
    agent_config: Said | None = None  # [agent_tool_permissions.<agent>]
    config: Said | None = None  # [tool_permissions]
    blueprint_loosenable: bool = False  # web_search / web_fetch
    allow_blueprint_permissions: Said | None = None


class CoreInputs(NamedTuple):
    """Seed 000's approval facts for one tool of an agent core."""

    registry: Said  # the tool's own approval (built-in registry, tool.yaml, MCP manifest)
    overrides: tuple[tuple[str, Said], ...] = ()  # (scope name, value) from agent.yaml


@functools.lru_cache(maxsize=65536)
def resolve_permission(scopes: ScopeInputs, core: CoreInputs | None = None) -> Decision:
    """The decision for one tool in one stage. Decisions are immutable, so
    identical inputs (the same tool in several stages of an agent) share
    one result."""
    return _resolve(scopes, core)


def _resolve(scopes: ScopeInputs, core: CoreInputs | None) -> Decision:
    consulted: list[ScopeValue] = []
    clamps: list[Clamp] = []

    def note(scope: str, said: Said | None) -> None:
        # Only scopes that said something are recorded (the built-in default
        # always is): the list is the provenance a reviewer reads, and large
        # projects hold many thousands of decisions.
        if said is None:
            return
        consulted.append(
            ScopeValue(
                scope=scope,
                value=said.value if said else None,
                source=said.source if said else None,
                detail=said.detail if said else "",
            )
        )

    note("stage", scopes.stage)
    note("agent", scopes.agent)
    note("agent_config", scopes.agent_config)
    note("config", scopes.config)
    if scopes.default_from is not None:
        # A core-only agent runs as the agent host runs it: each tool's
        # registry approval (auto, prompt, deny) is its default, instead of
        # seed 004's catalog default.
        consulted.append(
            ScopeValue(
                scope="registry_default",
                value=scopes.builtin_default,
                source=scopes.default_from.source,
                detail=f"core-only agent: {scopes.default_from.detail}",
            )
        )
    else:
        consulted.append(ScopeValue(scope="builtin_default", value=scopes.builtin_default))

    # The blueprint's value: the stage entry replaces the agent entry.
    blueprint = scopes.stage or scopes.agent
    blueprint_scope = "stage" if scopes.stage else "agent"
    # The user's ceiling: the per-agent overlay replaces the global entry.
    ceiling = scopes.agent_config or scopes.config
    ceiling_scope = "agent_config" if scopes.agent_config else "config"

    result: Permission
    if blueprint is not None and ceiling is not None:
        result = _tighten(
            blueprint.value,
            ceiling.value,
            clamps,
            rule="blueprint-tighten-only",
            reason=f"the user's {ceiling_scope} sets {ceiling.value}; "
            f"a blueprint may only tighten it",
            source=ceiling.source,
        )
    elif blueprint is not None:
        trusted = scopes.blueprint_loosenable or scopes.allow_blueprint_permissions is not None
        if trusted:
            result = blueprint.value
        else:
            result = _tighten(
                blueprint.value,
                scopes.builtin_default,
                clamps,
                rule="blueprint-above-default",
                reason=f"the user did not configure this tool, so the {blueprint_scope} "
                f"entry may go no looser than the built-in default "
                f"({scopes.builtin_default}); name the tool in "
                f"[agent_tool_permissions.<agent>] or set "
                f"allow_blueprint_permissions to trust it",
                source=blueprint.source,
            )
    elif ceiling is not None:
        result = ceiling.value
    else:
        result = scopes.builtin_default

    if core is not None:
        consulted.append(
            ScopeValue(
                scope="core_registry",
                value=core.registry.value,
                source=core.registry.source,
                detail=core.registry.detail,
            )
        )
        core_value = core.registry.value
        for scope_name, said in core.overrides:
            consulted.append(
                ScopeValue(
                    scope=scope_name, value=said.value, source=said.source, detail=said.detail
                )
            )
            core_value = stricter(core_value, said.value)
        result = _tighten(
            result,
            core_value,
            clamps,
            rule="core-approval-stricter",
            reason=f"the agent core's approval resolves to {core_value}; "
            f"where both systems speak the stricter wins",
            source=_strictest_source(core),
        )

    return Decision(
        permission=result,
        liftable=result == "ask",
        scopes=tuple(consulted),
        clamps=tuple(clamps),
    )


def _tighten(
    value: Permission,
    limit: Permission,
    clamps: list[Clamp],
    *,
    rule: str,
    reason: str,
    source: SourceRef | None,
) -> Permission:
    """``value`` made no looser than ``limit``. When that changes it, the change
    is recorded in ``clamps`` under ``rule``, so the plan can say why."""
    result = stricter(value, limit)
    if result != value:
        clamps.append(Clamp(rule=rule, before=value, after=result, reason=reason, source=source))
    return result


def _strictest_source(core: CoreInputs) -> SourceRef | None:
    best = core.registry
    for _, said in core.overrides:
        if stricter(best.value, said.value) != best.value:
            best = said
    return best.source
