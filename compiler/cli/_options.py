"""The option names and values every verb shares, defined once.

One name per concept across verbs:

- ``--format``: ``text`` (what a person reads) and ``json`` (one JSON document,
  or one JSON object a line for a stream) on every verb that prints a result;
  a verb adds only formats no other spelling covers (``show``'s and
  ``rules``'s ``table``, ``validate``'s ``concise``, ``sarif`` and ``github``,
  ``rule``'s ``markdown``).
- ``--workspace DIR``: the directory the tools are confined to.
- ``--time-limit SECONDS``: the most time one thing may take (a decision, a
  hook run); ``run``'s bound on one model request is ``--model-time-limit``.

An old spelling stays accepted for a release as a hidden alias (no help line,
no completion), so scripts that use it keep working while the help shows one
name: ``validate --format full`` is ``text``, ``run --json`` is ``--format
json``, ``--workdir`` is ``--workspace``, ``doctor --timeout`` is
``--time-limit``, ``run --model-timeout`` is ``--model-time-limit``, ``hook
--plan PLAN`` is the positional plan every other verb takes.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "JSON",
    "TEXT",
    "add_format",
    "add_hidden_alias",
    "add_workspace",
    "from_options",
    "is_hidden",
]

_Request = TypeVar("_Request", bound="DataclassInstance")

TEXT = "text"
JSON = "json"


def add_format(
    p: argparse.ArgumentParser | Any,
    *,
    extra: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
    default: str | None = TEXT,
    help: str | None = None,
) -> argparse.Action:
    """``--format`` with the shared ``text`` and ``json`` and a verb's
    ``extra`` formats; each of ``aliases`` (an old spelling) is read as the
    format it maps to and appears neither in the help nor in completion."""
    choices = (TEXT, JSON, *extra)
    old = dict(aliases or {})

    def canonical(value: str) -> str:
        # argparse converts first and checks ``choices`` after, so an alias
        # passes as its canonical name and anything else meets the choices.
        return old.get(value, value)

    if help is None:
        help = "output format" + (f" (default: {default})" if default else "")
    action: argparse.Action = p.add_argument(
        "--format", type=canonical, choices=choices, default=default, help=help
    )
    return action


def add_hidden_alias(
    p: argparse.ArgumentParser | Any, *names: str, dest: str, **kwargs: Any
) -> argparse.Action:
    """An old spelling that still works but is no longer shown: it stores into
    the same ``dest`` as the option that replaced it."""
    action: argparse.Action = p.add_argument(*names, dest=dest, help=argparse.SUPPRESS, **kwargs)
    return action


def add_workspace(
    p: argparse.ArgumentParser | Any,
    *,
    help: str,
    type: Callable[[str], Any] | None = None,
    **kwargs: Any,
) -> argparse.Action:
    """``--workspace DIR``, with ``--workdir`` as the hidden old spelling."""
    extra: dict[str, Any] = dict(kwargs)
    if type is not None:
        extra["type"] = type
    action: argparse.Action = p.add_argument(
        "--workspace", dest="workspace", metavar="DIR", help=help, **extra
    )
    alias = {k: v for k, v in extra.items() if k not in ("default", "required")}
    add_hidden_alias(p, "--workdir", dest="workspace", metavar="DIR", **alias)
    return action


def is_hidden(action: argparse.Action) -> bool:
    """Whether an option is a hidden alias (help and completion leave it out)."""
    return action.help == argparse.SUPPRESS


def from_options(cls: type[_Request], args: argparse.Namespace, **given: Any) -> _Request:
    """A runtime request (a dataclass) from a verb's options: each field
    the same-named option's value, unless ``given`` says otherwise, so a
    request and the options that fill it never drift apart field by field."""
    names = [f.name for f in dataclasses.fields(cls)]
    values = {name: getattr(args, name) for name in names if name not in given}
    return cls(**values, **given)
