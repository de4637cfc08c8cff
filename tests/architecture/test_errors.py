"""One error tree: every public exception of the runtime descends from
``CharterError``, and the tree drawn in ``charter.runtime.errors``'s
docstring is the real one (walked over every module of the package)."""

from __future__ import annotations

from _support.exceptions import defined_exceptions

import charter.runtime
from charter.runtime import errors
from charter.runtime.errors import CharterError

_PREFIX = "charter.runtime."


def _exceptions() -> dict[type[BaseException], str]:
    """Every public exception class defined in a module of the runtime,
    with the module that defines it. (Private ones, such as a retry signal
    that never leaves its module, are control flow, not errors.)"""
    return {
        cls: module
        for module, name, cls in defined_exceptions(charter.runtime)
        if not name.startswith("_")
    }


def _base_name(cls: type) -> str:
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def draw(found: dict[type[BaseException], str]) -> list[str]:
    """The tree as the docstring draws it: one class a line, indented under
    its nearest Charter base, with its module and any other bases."""
    children: dict[type, list[type[BaseException]]] = {}
    for cls in found:
        if cls is CharterError:
            continue
        parent = next(b for b in cls.__mro__[1:] if b in found)
        children.setdefault(parent, []).append(cls)
    lines: list[str] = []

    def walk(cls: type[BaseException], depth: int) -> None:
        also = [_base_name(b) for b in cls.__bases__ if b not in found and b is not Exception]
        where = found[cls].removeprefix(_PREFIX)
        line = f"{'    ' * depth}{cls.__name__} ({where})"
        if also:
            line += ", also " + ", ".join(also)
        lines.append(line)
        for child in sorted(children.get(cls, []), key=lambda c: c.__name__):
            walk(child, depth + 1)

    walk(CharterError, 0)
    return lines


def _drawn() -> list[str]:
    doc = errors.__doc__ or ""
    body = doc.split("::\n", 1)[1]
    return [line[4:] for line in body.splitlines() if line.strip()]


def test_every_runtime_exception_descends_from_charter_error() -> None:
    found = _exceptions()
    assert len(found) > 20  # the walk reached the whole package
    strays = sorted(c.__name__ for c in found if not issubclass(c, CharterError))
    assert not strays, f"exceptions outside the tree: {strays}"


def test_the_drawn_tree_is_the_real_one() -> None:
    real = draw(_exceptions())
    assert _drawn() == real, "redraw the tree in runtime/errors.py:\n\n    " + "\n    ".join(real)
