"""No accepted key is silently dropped (compiler/data/key_fates.tsv).

The walk over the input models fails on any field with no fate, so a key a
front-end starts to accept cannot reach users without one; the fates are
checked against the plan model and the models' own shapes; and on the real
Leviath agents every key said to reach the plan is shown to reach it: the
agent is compiled with the key changed, and the plan must change.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import shutil
import tomllib
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from _support.corpora import SKIP_REASON, leviath_root
from pydantic import BaseModel

import charter.compiler.frontends as frontends
from charter.compiler import compile_project, load_project
from charter.compiler.frontends.validation import InputModel
from charter.compiler.lint.fates import FATES, fate_of, fates
from charter.compiler.rules import RULES
from charter.runtime.plan import model as plan_model


def _input_models() -> list[type[InputModel]]:
    for m in pkgutil.iter_modules(frontends.__path__):
        importlib.import_module(f"{frontends.__name__}.{m.name}")
    out: list[type[InputModel]] = []
    todo = list(InputModel.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(out), key=lambda c: (c.__module__, c.__name__))


def _key(cls: type[BaseModel], field: str) -> str:
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}.{field}"


def _models_in(annotation: Any) -> set[type[BaseModel]]:
    out: set[type[BaseModel]] = set()
    todo = [annotation]
    while todo:
        a = todo.pop()
        if isinstance(a, type) and issubclass(a, BaseModel):
            out.add(a)
        todo.extend(typing.get_args(a))
    return out


def test_every_field_of_every_input_model_has_exactly_one_fate() -> None:
    fields = {_key(c, f) for c in _input_models() for f in c.model_fields}
    table = fates()
    assert sorted(fields - table.keys()) == [], "fields with no fate in key_fates.tsv"
    assert sorted(table.keys() - fields) == [], "fates for fields that do not exist"
    assert {f.fate for f in table.values()} <= set(FATES)


def test_a_table_is_a_model_and_a_model_is_a_table_or_refused_whole() -> None:
    wrong = []
    for cls in _input_models():
        for name, field in cls.model_fields.items():
            fate = fate_of(cls, name)
            assert fate is not None
            nested = _models_in(field.annotation)
            if nested and fate.fate not in ("table", "inside", "warn", "note"):
                wrong.append(f"{_key(cls, name)} holds tables but is {fate.fate}")
            if not nested and fate.fate == "table":
                wrong.append(f"{_key(cls, name)} is 'table' but holds no table")
    assert wrong == []


def test_inside_keys_are_reached_only_through_a_table_refused_whole() -> None:
    models = _input_models()
    inside = {c for c in models if any(fate_of(c, f).fate == "inside" for f in c.model_fields)}  # type: ignore[union-attr]
    for cls in inside:
        assert all(fate_of(cls, f).fate == "inside" for f in cls.model_fields), cls  # type: ignore[union-attr]
    for cls in models:
        for name, field in cls.model_fields.items():
            fate = fate_of(cls, name)
            assert fate is not None
            if _models_in(field.annotation) & inside:
                assert fate.fate in ("warn", "note", "inside"), _key(cls, name)


def test_plan_fates_name_a_field_of_the_plan() -> None:
    for key, fate in fates().items():
        if fate.fate != "plan":
            continue
        cls_name, _, attr = fate.detail.partition(".")
        cls = getattr(plan_model, cls_name, None)
        assert isinstance(cls, type) and issubclass(cls, BaseModel), (key, fate.detail)
        assert attr in cls.model_fields, (key, fate.detail)


def test_every_refusal_has_its_reason_and_its_rule() -> None:
    for key, fate in fates().items():
        if fate.fate in ("warn", "note", "check", "stricter"):
            assert fate.detail.strip(), key
    names = {r.name for r in RULES.values()}
    assert {"key-not-run", "key-for-host"} <= names


# -- the real agents ------------------------------------------------------------------


def _agents() -> list[Path]:
    root = leviath_root()
    return sorted(p for p in (root / "agents").iterdir() if p.is_dir()) if root else []


def _plan_shape(root: Path) -> str:
    """The compiled plan without where things were written (lines shift when
    a key is removed) or file digests; the diagnostics when there is none."""
    result = compile_project(load_project(root, use_default_config=False))
    if result.plan is None:
        return json.dumps(sorted(f"{d.code} {d.message}" for d in result.diagnostics))
    data = result.plan.model_dump(mode="json")["body"]
    data.pop("sources", None)
    return json.dumps(_without_places(data), sort_keys=True)


def _without_places(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_places(v)
            for k, v in value.items()
            if k not in ("origin", "source", "sha256", "line", "col")
        }
    if isinstance(value, list):
        return [_without_places(v) for v in value]
    return value


def _set_keys(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield (*path, k)
            yield from _set_keys(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _set_keys(v, (*path, i))


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, str):
        return value + " (changed)"
    if isinstance(value, list):
        return [] if value else ["read_file"]
    if isinstance(value, dict):
        return {}
    return None


@pytest.mark.parametrize("agent", [p.name for p in _agents()] or ["(no corpus)"])
def test_every_key_said_to_reach_the_plan_changes_it(agent: str, tmp_path: Path) -> None:
    root = leviath_root()
    if root is None:
        pytest.skip(SKIP_REASON)
    src = root / "agents" / agent
    work = tmp_path / agent
    shutil.copytree(src, work)
    path = work / "agent.leviath"
    text = path.read_text("utf-8")
    data = tomllib.loads(text)
    loaded = load_project(work, use_default_config=False).agents[0].blueprint
    assert loaded is not None and loaded.model is not None
    said_plan = _plan_keys(loaded.model, ())
    path.write_text(tomli_w.dumps(data), "utf-8")  # (the same file, as tomli_w writes it)
    base = _plan_shape(work)
    assert base.startswith("{"), f"the agent does not compile: {base}"
    silent = []
    for key in said_plan:
        parent: Any = data
        for k in key[:-1]:
            parent = parent[k]
        old = parent[key[-1]]
        outcomes = []
        for new in (_changed(old), None):
            if new is None:
                del parent[key[-1]]
            else:
                parent[key[-1]] = new
            path.write_text(tomli_w.dumps(data), "utf-8")
            outcomes.append(_plan_shape(work) != base)
            parent[key[-1]] = old
        if not any(outcomes):
            silent.append(".".join(map(str, key)))
    assert silent == [], f"keys said to reach the plan that change nothing: {silent}"


def _plan_keys(model: BaseModel, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The keys ``model`` sets that are said to reach the plan."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[BaseModel, tuple[Any, ...]]] = [(model, path)]
    while stack:
        m, p = stack.pop()
        for name in sorted(m.model_fields_set):
            fate = fate_of(type(m), name)
            assert fate is not None
            key = (*p, type(m).model_fields[name].alias or name)
            value = getattr(m, name)
            if fate.fate == "plan":
                out.append(key)
            elif fate.fate == "table":
                items: list[tuple[Any, Any]] = (
                    list(value.items())
                    if isinstance(value, dict)
                    else list(enumerate(value))
                    if isinstance(value, list | tuple)
                    else [(None, value)]
                )
                for k, v in items:
                    if isinstance(v, BaseModel):
                        stack.append((v, key if k is None else (*key, k)))
    return out


def test_a_key_set_to_what_charter_does_anyway_is_not_reported() -> None:
    from charter.compiler.frontends.tool_yaml import ToolSpec
    from charter.compiler.lint.fates import refusals
    from charter.compiler.sources.sourcemap import SourceMap

    smap = SourceMap("tool.yaml")
    same = ToolSpec.model_validate({"model_output_policy": "content"}, strict=False)
    other = ToolSpec.model_validate({"model_output_policy": "current_turn"}, strict=False)
    assert [d.code for d in refusals(same, smap)] == []
    assert [d.code for d in refusals(other, smap)] == ["CH234"]
