"""The tool SDK Demiurge's authored tools import, provided by Charter.

A Demiurge tool's ``module.py`` starts with ``from demiurge.sdk import
ToolResult``; Charter runs such tools without Demiurge installed, so this
module supplies the names a tool module uses, with Demiurge's meaning, and
:func:`install` makes ``import demiurge.sdk`` find them. It is installed only
while an authored module loads (:func:`charter.runtime.tools.authored._load`), in
the runtime's process or in the sandboxed child, and never replaces a module
of that name that is already imported.

What the names mean:

* :class:`ToolResult` is what ``execute(ctx, args)`` returns: ``content`` (the
  text), ``data`` (structured, kept as the result's data), ``is_error`` (a
  failed call), ``model_output`` (the text the model sees, when it differs
  from ``content``), ``display_output`` (the operator's text) and
  ``terminate`` (Demiurge ends the turn after the call; Charter records it in
  the result's data, since its loop is the plan's, not the tool's).
* :class:`TurnContext` and :class:`AgentInput` describe the turn, as the
  ``ctx.turn`` of Demiurge's tool context does; Charter's ``ctx.turn`` carries
  the run's own fields (agent, stage, run and call ids).
* :class:`CapabilityDenied` is what ``ctx.capability.require`` raises.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.errors import CharterError

__all__ = [
    "AgentInput",
    "CapabilityDenied",
    "JsonValue",
    "ToolResult",
    "TurnContext",
    "install",
]

JsonValue = Any


@dataclass(slots=True)
class ToolResult:
    content: str
    data: JsonValue | None = None
    is_error: bool = False
    terminate: bool = False
    model_output: str | None = None
    display_output: str | None = None


@dataclass(slots=True)
class AgentInput:
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TurnContext:
    session_id: str
    turn_id: str
    core_id: str
    core_revision: str
    user_input: AgentInput
    metadata: dict[str, Any] = field(default_factory=dict)


class CapabilityDenied(CharterError, PermissionError):
    """Raised by ``ctx.capability.require`` for a capability the tool's
    ``capabilities`` list does not grant."""


def install() -> None:
    """Make ``import demiurge.sdk`` (and ``import demiurge``) resolve to this
    module's names, unless a module of that name is already imported."""
    if "demiurge.sdk" in sys.modules:
        return
    sdk = types.ModuleType("demiurge.sdk", __doc__)
    for name in __all__:
        if name != "install":
            setattr(sdk, name, globals()[name])
    sdk.__all__ = [n for n in __all__ if n != "install"]  # type: ignore[attr-defined]
    package = sys.modules.get("demiurge")
    if package is None:
        package = types.ModuleType("demiurge", "Charter's stand-in for Demiurge's tool SDK.")
        package.__path__ = []  # a package, so `demiurge.sdk` is found by name
        sys.modules["demiurge"] = package
    package.sdk = sdk  # type: ignore[attr-defined]
    sys.modules["demiurge.sdk"] = sdk
