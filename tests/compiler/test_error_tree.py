"""Every exception the compiler defines belongs to Charter's one error tree.

A caller that wants "anything Charter refused" catches ``CharterError``; an
exception class outside the tree would slip past it.
"""

from __future__ import annotations

import pytest
from _support.exceptions import defined_exceptions

import charter.compiler as compiler
from charter.compiler.errors import CompilerBug, CompilerError, ReaderStop, UnknownChoice
from charter.runtime.errors import CharterError

# Outside the tree on purpose, each with its reason.
_EXEMPT = {
    # The check verbs' line parser: arch-periphery's module, being merged
    # with the other check helpers (issue 17); it joins the tree there.
    "charter.compiler.cli._jsonl.BadLine",
}


def _compiler_exceptions() -> dict[str, type[BaseException]]:
    return {f"{module}.{name}": cls for module, name, cls in defined_exceptions(compiler)}


def test_the_walk_finds_the_compiler_exceptions() -> None:
    found = _compiler_exceptions()
    assert "charter.compiler.errors.CompilerBug" in found
    assert "charter.compiler.sources.yaml_reader._Abort" in found


def test_every_compiler_exception_descends_from_charter_error() -> None:
    outside = sorted(
        name
        for name, cls in _compiler_exceptions().items()
        if not issubclass(cls, CharterError) and name not in _EXEMPT
    )
    assert outside == []


@pytest.mark.parametrize("cls", [CompilerBug, UnknownChoice, ReaderStop])
def test_the_compiler_branch(cls: type[Exception]) -> None:
    assert issubclass(cls, CompilerError) and issubclass(cls, CharterError)


def test_an_unknown_choice_is_still_a_value_error() -> None:
    # Callers written before the tree caught ValueError; they keep working.
    from charter.compiler.render import render

    with pytest.raises(ValueError, match="unknown output format"):
        render([], "no-such-format", sources={})
