"""Rhai's values as Python holds them, and how Rhai shows and compares them.

``()`` is None, an integer is ``int`` (never ``bool``), an array ``list``, an
object map ``dict``. A character is :class:`Char` (a one-letter ``str``
subclass, told apart by its exact type) and a function pointer :class:`FnPtr`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.rhai.syntax import Node

__all__ = [
    "I64_MAX",
    "I64_MIN",
    "Char",
    "FnPtr",
    "debug_text",
    "display_text",
    "equal",
    "is_int",
    "is_number",
    "type_name",
]

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


class Char(str):
    """One character (Rhai's ``char``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FnPtr:
    """A function pointer: a script function by name, or a closure with the
    values it captured when it was made."""

    name: str
    params: tuple[str, ...] = ()
    body: Node | None = None
    captured: tuple[tuple[str, Any], ...] = field(default=())


def is_int(v: Any) -> bool:
    return type(v) is int


def is_number(v: Any) -> bool:
    return type(v) in (int, float)


def type_name(v: Any) -> str:
    t = type(v)
    if v is None:
        return "()"
    if t is bool:
        return "bool"
    if t is int:
        return "i64"
    if t is float:
        return "f64"
    if t is Char:
        return "char"
    if t is str:
        return "string"
    if t is list:
        return "array"
    if t is dict:
        return "map"
    if t is FnPtr:
        return "Fn"
    if t is range:
        return "range"
    return t.__name__


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    a = abs(x)
    if a == 0:
        return "0.0"
    if a > 1e13 or a < 1e-13:
        mant, _, exp = f"{x:e}".partition("e")
        mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
        return f"{mant}e{int(exp)}"
    text = repr(x)
    if "e" in text:  # repr switches to exponents earlier than Rust's Display
        text = f"{x:.17f}".rstrip("0")
        text = text + "0" if text.endswith(".") else text
    return text


def display_text(v: Any) -> str:
    """What ``to_string``, ``+`` and ``${}`` make of a value."""
    t = type(v)
    if v is None:
        return ""
    if t is str or t is Char:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return _float_text(v)
    return debug_text(v)


def debug_text(v: Any) -> str:
    """Rhai's debug form: strings quoted, arrays and maps spelled out."""
    out: list[str] = []
    stack: list[Any] = [v]
    # An explicit stack: a deeply nested value costs no recursion.
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
            continue
        t = type(item)
        if item is None:
            out.append("()")
        elif t is str:
            out.append(_quote(item, '"'))
        elif t is Char:
            out.append(_quote(item, "'"))
        elif t is list:
            seq: list[Any] = [_Raw("[")]
            for i, x in enumerate(item):
                if i:
                    seq.append(_Raw(", "))
                seq.append(x)
            seq.append(_Raw("]"))
            stack.extend(reversed(seq))
        elif t is dict:
            seq = [_Raw("#{")]
            for i, k in enumerate(sorted(item)):
                if i:
                    seq.append(_Raw(", "))
                seq.append(_Raw(_quote(k, '"') + ": "))
                seq.append(item[k])
            seq.append(_Raw("}"))
            stack.extend(reversed(seq))
        elif t is FnPtr:
            out.append(f"Fn({item.name})")
        elif t is range:
            r: range = item
            out.append(f"{r.start}..{r.stop}")
        else:
            out.append(display_text(item))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Raw:
    text: str


def _quote(text: str, q: str) -> str:
    body = text.replace("\\", "\\\\").replace(q, "\\" + q)
    body = body.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return q + body + q


def equal(a: Any, b: Any) -> bool:
    """Rhai's ``==``: numbers compare across int and float, other values of
    different types are never equal, arrays and maps compare item by item."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        if ta in (int, float) and tb in (int, float):
            return bool(a == b)
        if {ta, tb} == {str, Char}:
            return str(a) == str(b)
        return False
    if ta is list:
        la: list[Any] = a
        lb: list[Any] = b
        return len(la) == len(lb) and all(equal(x, y) for x, y in zip(la, lb, strict=True))
    if ta is dict:
        da: dict[str, Any] = a
        db: dict[str, Any] = b
        return da.keys() == db.keys() and all(equal(da[k], db[k]) for k in da)
    return bool(a == b)
