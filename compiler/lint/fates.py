"""No accepted key is silently dropped.

Every field of every input model has a fate, written once in
``compiler/data/key_fates.tsv``: it reaches the plan and is carried out, it is
a table whose own keys have fates, it only informs the compiler, Charter is at
least as strict whatever it says, or Charter's runtime does not carry it out.
The last kind is reported wherever a file sets such a key, at the key:

* ``warn`` (CH234 key-not-run): it shapes what the model sees or does; the
  message says what happens instead;
* ``note`` (CH235 key-for-host): it configures the host's own process.

``tests/compiler/test_key_fates.py`` walks the input models and fails on a
field with no fate, so a key added to a front-end cannot reach users without
one.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from importlib.resources import files
from typing import NamedTuple

from pydantic import BaseModel

from charter.compiler.diagnostics import Diagnostic, format_key_path
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap

__all__ = ["FATES", "Fate", "fate_of", "fates", "refusals"]

# The fates, and the rule each kind of refusal reports.
# (There is no "error" fate: every key whose loss would skip a check, a limit
# or a person is carried out, or its table is refused as a whole by an
# error of its own, such as a custom region's script, CH661.)
FATES = ("plan", "table", "check", "stricter", "warn", "note", "inside")
_RULE = {"warn": "key-not-run", "note": "key-for-host"}


class Fate(NamedTuple):
    fate: str
    detail: str
    # a value that means what Charter does anyway: set to it, the key is not reported
    same: str | None = None


@functools.cache
def fates() -> dict[str, Fate]:
    """``"<module>.<Model>.<field>"`` -> its fate, as the table writes it."""
    text = (files("charter.compiler") / "data" / "key_fates.tsv").read_text("utf-8")
    out: dict[str, Fate] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, fate, detail, same = (line.split("\t") + ["", "", ""])[:4]
        out[key] = Fate(fate, detail, same.removeprefix("same=") or None)
    return out


def fate_of(model: type[BaseModel], field: str) -> Fate | None:
    return fates().get(f"{model.__module__.rsplit('.', 1)[-1]}.{model.__name__}.{field}")


def refusals(
    model: BaseModel, smap: SourceMap, prefix: KeyPath = (), *, skip: frozenset[str] = frozenset()
) -> list[Diagnostic]:
    """A diagnostic for each key ``model`` (loaded from the file ``smap``
    maps, at ``prefix``) sets whose fate is a refusal, at the key; tables are
    walked into (with an explicit stack: a file's nesting is its author's).
    ``skip`` names top-level fields walked on their own (a blueprint's
    stages, each with its own file and place)."""
    out: list[Diagnostic] = []
    stack: list[tuple[BaseModel, KeyPath]] = [(model, prefix)]
    while stack:
        m, path = stack.pop()
        cls = type(m)
        for name in sorted(m.model_fields_set):
            if m is model and name in skip:
                continue
            fate = fate_of(cls, name)
            if fate is None:
                continue  # (the fates test fails for such a field)
            key = (*path, cls.model_fields[name].alias or name)
            if fate.fate in _RULE and (fate.same is None or str(getattr(m, name)) != fate.same):
                shown = format_key_path(key)
                out.append(
                    diag(
                        _RULE[fate.fate],
                        f"{shown}: Charter's runtime does not carry this out: {fate.detail}",
                        smap.key_span(key),
                        key_path=shown,
                    )
                )
            elif fate.fate == "table":
                stack.extend(_tables(getattr(m, name), key))
    return out


def _tables(value: object, path: KeyPath) -> Iterator[tuple[BaseModel, KeyPath]]:
    if isinstance(value, BaseModel):
        yield value, path
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, BaseModel):
                yield v, (*path, str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            if isinstance(v, BaseModel):
                yield v, (*path, i)
