"""Rhai's binary operators over its value types.

Integers are 64-bit and checked: a result outside the range is the error
"Arithmetic overflow", never a wrapped or unbounded number, and a power or
shift whose result could not fit is refused before Python computes it.
Floats follow IEEE (division by zero gives an infinity). Operators between
values of different non-numeric types compare false (``!=`` true), as in
Rhai; anything else without a meaning is "Function not found".
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

from charter.runtime.rhai.values import Char, FnPtr, display_text, equal, type_name

if TYPE_CHECKING:
    from charter.runtime.rhai.interp import _Run
    from charter.runtime.rhai.syntax import Node

__all__ = ["binary"]

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_NUM = (int, float)


def binary(run: _Run, op: str, a: Any, b: Any, node: Node) -> Any:
    ta, tb = type(a), type(b)
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if op in ("in", "!in"):
        found = _contains(run, b, a, node)
        return found if op == "in" else not found
    if op in _COMPARE:
        if ta in _NUM and tb in _NUM:
            return _COMPARE[op](a, b)
        if ta in (str, Char) and tb in (str, Char) and (ta is tb or ta is Char or tb is Char):
            return _COMPARE[op](str(a), str(b))
        if ta is tb and ta is bool:
            return _COMPARE[op](a, b)
        if ta is not tb:
            return False
        raise run.error(f"Function not found: {op} ({type_name(a)}, {type_name(b)})", node)
    if op == "+":
        return _plus(run, a, b, node)
    if ta is int and tb is int:
        return _int_op(run, op, a, b, node)
    if ta in _NUM and tb in _NUM and op in ("-", "*", "/", "%", "**"):
        return _float_op(op, float(a), float(b))
    if ta is bool and tb is bool and op in ("&", "|", "^"):
        return {"&": a and b, "|": a or b, "^": a != b}[op]
    if op in ("..", "..="):
        if ta is int and tb is int:
            return range(a, b + (1 if op == "..=" else 0))
    if op == "-" and ta is str and tb in (str, Char):
        return a.replace(str(b), "")
    raise run.error(f"Function not found: {op} ({type_name(a)}, {type_name(b)})", node)


def _plus(run: _Run, a: Any, b: Any, node: Node) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return run.int_result(a + b, node)
    if ta in _NUM and tb in _NUM:
        return float(a) + float(b)
    if ta in (str, Char) or tb in (str, Char):
        if ta is FnPtr or tb is FnPtr:
            raise run.error(f"Function not found: + ({type_name(a)}, {type_name(b)})", node)
        left = display_text(a)
        right = display_text(b)
        if len(left) + len(right) > run.limits.max_string_size:
            raise run.limit(f"a string grew past {run.limits.max_string_size} characters", node)
        return run.check_size(left + right, node)
    if ta is list and tb is list:
        return run.check_size(run.stored(a, node) + run.stored(b, node), node)
    if ta is dict and tb is dict:
        merged = dict(run.stored(a, node))
        merged.update(run.stored(b, node))
        return run.check_size(merged, node)
    raise run.error(f"Function not found: + ({type_name(a)}, {type_name(b)})", node)


def _int_op(run: _Run, op: str, a: int, b: int, node: Node) -> Any:
    if op == "-":
        return run.int_result(a - b, node)
    if op == "*":
        return run.int_result(a * b, node)
    if op in ("/", "%"):
        if b == 0:
            raise run.error("Division by zero", node)
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b > 0) else -q  # truncation toward zero, as Rust
        if op == "/":
            return run.int_result(q, node)
        return a - b * q  # the remainder takes the dividend's sign
    if op == "**":
        if b < 0:
            raise run.error(f"Integer raised to a negative power: {b}", node)
        if abs(a) > 1 and b > 63:
            raise run.error("Arithmetic overflow", node)
        return run.int_result(a**b, node)
    if op in ("<<", ">>"):
        if op == ">>":
            b = -b
        if b >= 64:
            raise run.error("Left-shift by too many bits", node)
        if b <= -64:
            return -1 if a < 0 else 0
        return run.int_result(_wrap(a << b) if b >= 0 else a >> -b, node)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op in ("..", "..="):
        return range(a, b + (1 if op == "..=" else 0))
    raise run.error(f"Function not found: {op} (i64, i64)", node)


def _wrap(v: int) -> int:
    """A left shift drops bits past the 64th, as a machine shift does."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _float_op(op: str, a: float, b: float) -> float:
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            if a == 0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if op == "%":
        return math.fmod(a, b) if b != 0 else math.nan
    try:
        r = a**b
    except OverflowError:
        return math.inf
    except ZeroDivisionError:
        return math.inf
    return math.nan if isinstance(r, complex) else float(r)


def _contains(run: _Run, container: Any, item: Any, node: Node) -> bool:
    t = type(container)
    if t is list:
        return any(equal(x, item) for x in container)
    if t is dict:
        if type(item) not in (str, Char):
            raise run.error(f"an object map's key must be a string, not {type_name(item)}", node)
        return str(item) in container
    if t is str:
        if type(item) not in (str, Char):
            raise run.error(f"Function not found: in ({type_name(item)}, string)", node)
        return str(item) in container
    if t is range:
        return type(item) is int and item in container
    raise run.error(f"Function not found: in ({type_name(item)}, {type_name(container)})", node)
