"""Capability grants: what the core's ``capabilities`` grant (each one
checked to be well formed and safe to bind), and whether a grant covers a
capability for a tool's slot."""

from __future__ import annotations

from charter.compiler.diagnostics import format_key_path
from charter.compiler.resolve.context import AgentContext, span_ref
from charter.compiler.rules import diag
from charter.runtime.plan import Grant
from charter.runtime.policy.capabilities import SECRET_PREFIX, is_granted, valid_capability
from charter.runtime.policy.env import forbidden_target

__all__ = ["granted", "resolve_grants"]


def resolve_grants(ctx: AgentContext) -> list[Grant]:
    core, csm = ctx.core, ctx.core_smap
    if core is None or csm is None:
        return []
    out: list[Grant] = []

    def check(cap: str, path: tuple[str | int, ...], slot: str | None) -> None:
        span = csm.key_span(path)
        if cap.startswith(SECRET_PREFIX) and cap.endswith("*"):
            ctx.diags.append(
                diag(
                    "wildcard-secret-grant",
                    f"'{cap}' would bind every secret; grant each one by name",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return
        if not valid_capability(cap):
            ctx.diags.append(
                diag(
                    "unknown-capability",
                    f"'{cap}' is not a well-formed capability; only a whole last segment may "
                    "be '*'",
                    span,
                    key_path=format_key_path(path),
                    severity=None,
                )
            )
            return
        if cap.startswith(SECRET_PREFIX) and forbidden_target(cap[len(SECRET_PREFIX) :]):
            name = cap[len(SECRET_PREFIX) :]
            ctx.diags.append(
                diag(
                    "secret-binding-target-forbidden",
                    f"'{cap}' would bind a secret into {name}, which controls what runs; a "
                    "binding's target defaults to its source name",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return
        out.append(Grant(capability=cap, slot=slot, origin=span_ref(span)))

    for cap in core.capabilities.defaults:
        check(cap, ("capabilities", "defaults", cap), None)
    for slot, caps in core.capabilities.slots.items():
        for cap in caps:
            check(cap, ("capabilities", "slots", slot, cap), slot)
    return out


def granted(cap: str, grants: list[Grant], slot: str | None) -> bool:
    usable = [g.capability for g in grants if g.slot is None or g.slot == slot]
    return is_granted(cap, usable)
