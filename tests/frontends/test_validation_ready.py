"""`ready` builds a deferred input model's validator, sub-models first."""

from __future__ import annotations

from typing import Annotated, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from charter.compiler.frontends.validation import InputModel, ready


def _models() -> dict[str, type[BaseModel]]:
    # Defined per test: a model, once built, stays built.
    class Leaf(InputModel):
        name: str

    class Middle(InputModel):
        leaves: tuple[Leaf, ...] = ()
        by_name: dict[str, Leaf | None] = {}

    class Top(InputModel):
        middle: Annotated[Middle, Field(description="held through Annotated")]
        maybe: Optional[Leaf] = None  # noqa: UP045 - the Optional spelling on purpose

    return {"Leaf": Leaf, "Middle": Middle, "Top": Top}


def test_every_model_a_model_holds_is_built_with_it() -> None:
    m = _models()
    assert not any(cls.__pydantic_complete__ for cls in m.values())
    assert ready(m["Top"]) is m["Top"]
    assert all(cls.__pydantic_complete__ for cls in m.values())


def test_a_model_that_is_not_held_is_left_deferred() -> None:
    m = _models()
    ready(m["Middle"])
    assert (m["Leaf"].__pydantic_complete__, m["Middle"].__pydantic_complete__) == (True, True)
    assert not m["Top"].__pydantic_complete__


def test_validation_is_the_same_as_building_on_first_use() -> None:
    data = {"middle": {"leaves": ({"name": "a"},), "by_name": {"b": None}}}
    built = _models()["Top"]
    ready(built)
    lazy = _models()["Top"]
    assert ready(built).model_validate(data).model_dump() == lazy.model_validate(data).model_dump()
    bad = {"middle": {"leaves": ({"name": 1},)}, "extra": 1}
    with pytest.raises(ValidationError) as first:
        built.model_validate(bad)
    with pytest.raises(ValidationError) as second:
        lazy.model_validate(bad)
    assert first.value.errors(include_url=False) == second.value.errors(include_url=False)


class Pair(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, defer_build=True)
    other: Node | None = None  # a name defined only below


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, defer_build=True)
    children: tuple[Node, ...] = ()
    partner: Pair | None = None


def test_models_that_hold_each_other_are_built_once_each() -> None:
    ready(Node)
    assert Node.__pydantic_complete__ and Pair.__pydantic_complete__
    tree = Node.model_validate({"children": ({"partner": {"other": {}}},)})
    assert tree.children[0].partner is not None
    assert tree.children[0].partner.other == Node()
