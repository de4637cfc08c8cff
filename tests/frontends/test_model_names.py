"""Input models and plan models never share a class name.

The front-ends read what users write (``StageTable`` is a ``[stages.x]``
table); the plan holds what the compiler decided (``Stage``). One name for
both made code that handles both ambiguous to read and easy to get wrong.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import charter.compiler.frontends as frontends
import charter.runtime.plan as plan


def _classes(package: ModuleType) -> dict[str, str]:
    """Public class name -> the module of the package that defines it."""
    out: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                if not name.startswith("_"):
                    out[name] = module.__name__
    return out


def test_both_sides_are_found() -> None:
    # The check below is only worth something if it sees the models.
    assert {"Blueprint", "StageTable", "UserConfig"} <= set(_classes(frontends))
    assert {"Plan", "Stage", "Edge", "Gate", "Limits"} <= set(_classes(plan))


def test_input_and_plan_class_names_are_disjoint() -> None:
    inputs, plans = _classes(frontends), _classes(plan)
    shared = {name: (inputs[name], plans[name]) for name in set(inputs) & set(plans)}
    assert shared == {}, f"rename the input model (suffix Table): {shared}"
