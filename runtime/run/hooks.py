"""A stage's Rhai hooks, run at Leviath's seven points of a stage's life.

The contract is Leviath's: the hook function ``fn <hook>(ctx)`` answers
``()`` or ``true`` (go on), ``false`` (refuse), or a map whose ``action`` is
``allow``, ``modify`` (with a ``value``), ``cancel`` (with a ``reason``) or
``retry``. A refusal stops the run with an error naming the hook, as
Leviath's does; so does a hook that throws, runs out of its bounds or
answers something malformed, because a broken gate must not be read as
permission. ``retry`` is refused as Leviath refuses it: nothing bounds
the attempts yet. Hooks run with no host functions: no files, no network.

What ``modify`` replaces depends on the hook: region contents for
``on_stage_enter``/``before_inference``/``on_stage_exit`` (a map of region
name to text), the response text for ``after_inference``, the calls for
``on_tool_call`` (a list of ``#{ name, arguments }``; they then meet every
gate, so a hook can narrow what runs but never widen it), the answer for
``on_completion`` and the message for ``on_error``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from charter.runtime.errors import CharterError
from charter.runtime.plan import Stage, StageHook

__all__ = ["HookFailed", "HookOutcome", "run_hook"]

HOOK_MAX_OPERATIONS = 100_000  # Leviath's budget for a stage hook


class HookFailed(CharterError):
    """A hook refused, threw, or answered something this runtime cannot
    honour; the run stops with this message."""


@dataclass(frozen=True, slots=True)
class HookOutcome:
    action: Literal["allow", "modify"]
    value: Any = None


def _hook(stage: Stage, name: str) -> StageHook | None:
    return next((h for h in stage.hooks if h.hook == name), None)


def run_hook(stage: Stage, name: str, ctx: dict[str, Any]) -> HookOutcome | None:
    """Run the stage's ``name`` hook on ``ctx``; None when it has none.
    Raises :class:`HookFailed` for every answer that is not allow or modify."""
    from charter.runtime.rhai import Engine, Limits, RhaiError, parse_cached
    from charter.runtime.rhai.builtins import BuiltinError, to_plain

    hook = _hook(stage, name)
    if hook is None:
        return None
    try:
        script = parse_cached(hook.source, hook.path)
        result = Engine(Limits(max_operations=HOOK_MAX_OPERATIONS)).call(script, name, [ctx])
    except RhaiError as exc:
        raise HookFailed(f"{name}: hook failed: {exc}") from None
    if result is None or result is True:
        return HookOutcome("allow")
    if result is False:
        raise HookFailed(f"{name}: refused (no reason given)")
    try:
        value = to_plain(result)
    except BuiltinError as exc:
        raise HookFailed(f"{name}: returned a value that is not plain data: {exc}") from None
    if not isinstance(value, dict):
        raise HookFailed(f"{name}: expected (), a bool, or a map with an 'action', got {value!r}")
    action = value.get("action")
    if action == "allow":
        return HookOutcome("allow")
    if action == "modify":
        if "value" not in value:
            raise HookFailed(f"{name}: action 'modify' needs a 'value' saying what to proceed with")
        return HookOutcome("modify", value["value"])
    if action == "cancel":
        reason = value.get("reason")
        raise HookFailed(
            f"{name}: refused: {reason if isinstance(reason, str) else 'no reason given'}"
        )
    if action == "retry":
        raise HookFailed(
            f"{name}: returned 'retry', which this runtime cannot honour (nothing bounds the "
            "attempts); cancel instead and let the model choose again"
        )
    if action is None:
        raise HookFailed(f"{name}: the returned map has no 'action' (allow, modify, cancel, retry)")
    raise HookFailed(f"{name}: unknown action {action!r} (expected allow, modify, cancel, retry)")
