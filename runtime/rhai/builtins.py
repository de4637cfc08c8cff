"""The functions every Charter Rhai engine has: Rhai's standard packages
(the part Leviath's scripts and docs use) and the pure functions Leviath
registers (string checks, JSON, URI encoding, HTML to text, region helpers).

Each takes ``(run, args, node)``; a method call ``x.f(a)`` arrives as
``f(x, a)``, as in Rhai. A method that changes a string answers
:class:`Mutated` so the evaluator can write the string back to its place;
arrays and maps change in place. Where Leviath registers its own version
of a standard function (``trim`` returns a new string, ``is_empty`` is true
for blank text, ``split``/``join``), Leviath's meaning is the one here.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from charter.runtime.errors import CharterError
from charter.runtime.rhai.values import (
    I64_MAX,
    I64_MIN,
    Char,
    FnPtr,
    debug_text,
    display_text,
    equal,
    type_name,
)

if TYPE_CHECKING:
    from charter.runtime.rhai.interp import _Run
    from charter.runtime.rhai.syntax import Node

__all__ = ["FUNCTIONS", "BuiltinError", "html_to_text", "to_json_text", "to_plain"]


class BuiltinError(CharterError):
    """A catchable error from a builtin (wrong types, bad argument)."""


Builtin = Callable[["_Run", list[Any], "Node"], object]
FUNCTIONS: dict[str, Builtin] = {}


def _reg(*names: str) -> Callable[[Builtin], Builtin]:
    def wrap(fn: Builtin) -> Builtin:
        for name in names:
            FUNCTIONS[name] = fn
        return fn

    return wrap


def _no_fn(name: str, args: list[Any]) -> BuiltinError:
    return BuiltinError(f"Function not found: {name} ({', '.join(type_name(a) for a in args)})")


def _sig(name: str, args: list[Any], *types: tuple[type, ...]) -> None:
    if len(args) != len(types) or not all(type(a) in t for a, t in zip(args, types, strict=True)):
        raise _no_fn(name, args)


def _work(run: _Run, node: Node, size: int) -> None:
    """Charge work on large data by its size: one operation per KiB."""
    if size >= 1024:
        run.charge(node, size // 1024)


def _mutated(run: _Run, node: Node, new: str, result: Any = None) -> Any:
    from charter.runtime.rhai.interp import Mutated

    run.check_size(new, node)
    return Mutated(new, result)


_S = (str, Char)
_I = (int,)
_F = (float,)
_N = (int, float)

# ---- the core ----------------------------------------------------------


@_reg("type_of")
def _type_of(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 1:
        raise _no_fn("type_of", a)
    return type_name(a[0])


@_reg("print", "debug")
def _print(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 1:
        raise _no_fn("print", a)
    return None  # like Leviath's engines: script output never reaches a log


@_reg("Fn")
def _fn(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("Fn", a, _S)
    name = str(a[0])
    if not name.isidentifier():
        raise BuiltinError(f"'{name}' is not a valid function name")
    return FnPtr(name)


@_reg("call")
def _call(run: _Run, a: list[Any], node: Node) -> Any:
    if not a or type(a[0]) is not FnPtr:
        raise _no_fn("call", a)
    return run.call_ptr(a[0], a[1:], node)


@_reg("to_string")
def _to_string(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 1:
        raise _no_fn("to_string", a)
    return display_text(a[0])


@_reg("to_debug")
def _to_debug(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 1:
        raise _no_fn("to_debug", a)
    return debug_text(a[0])


# ---- numbers -------------------------------------------------------------


@_reg("range")
def _range(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2:
        _sig("range", a, _I, _I)
        return range(a[0], a[1])
    _sig("range", a, _I, _I, _I)
    if a[2] == 0:
        raise BuiltinError("a range's step cannot be 0")
    return range(a[0], a[1], a[2])


@_reg("parse_int")
def _parse_int(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 1:
        _sig("parse_int", a, _S)
        radix = 10
    else:
        _sig("parse_int", a, _S, _I)
        radix = a[1]
        if not 2 <= radix <= 36:
            raise BuiltinError(f"invalid radix {radix}")
    text = str(a[0]).strip()
    try:
        value = int(text, radix)
    except ValueError:
        raise BuiltinError(
            f"Error parsing integer number '{a[0]}': invalid digit found in string"
        ) from None
    if not I64_MIN <= value <= I64_MAX:
        raise BuiltinError(f"Error parsing integer number '{a[0]}': number too large")
    return value


@_reg("parse_float")
def _parse_float(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("parse_float", a, _S)
    try:
        return float(str(a[0]).strip())
    except ValueError:
        raise BuiltinError(
            f"Error parsing floating-point number '{a[0]}': invalid float literal"
        ) from None


@_reg("to_int")
def _to_int(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("to_int", a, (int, float, Char, bool))
    v = a[0]
    if type(v) is float:
        if math.isnan(v) or not I64_MIN <= v <= I64_MAX:
            raise BuiltinError(f"Integer overflow: {display_text(v)}")
        return int(v)
    if type(v) is Char:
        return ord(v)
    return int(v)


@_reg("to_float")
def _to_float(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("to_float", a, _N)
    return float(a[0])


@_reg("abs")
def _abs(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("abs", a, _N)
    return run.int_result(abs(a[0]), node) if type(a[0]) is int else abs(a[0])


@_reg("sign")
def _sign(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("sign", a, _N)
    v = a[0]
    return (v > 0) - (v < 0)


@_reg("min", "max")
def _min_max(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("min", a, _N, _N)
    pick = min if run.called == "min" else max
    if type(a[0]) is int and type(a[1]) is int:
        return pick(a[0], a[1])
    return float(pick(a[0], a[1]))


def _float_fn(name: str, fn: Callable[[float], object]) -> None:
    def run_it(run: _Run, a: list[Any], node: Node) -> Any:
        _sig(name, a, _N)
        try:
            return fn(float(a[0]))
        except (ValueError, OverflowError):
            return math.nan

    FUNCTIONS[name] = run_it


def _as_float(f: Callable[[float], float | int]) -> Callable[[float], object]:
    return lambda x: float(f(x))


for _name, _f in {
    "floor": _as_float(math.floor), "ceiling": _as_float(math.ceil), "sqrt": math.sqrt,
    "exp": math.exp, "ln": math.log, "log": math.log10, "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "is_nan": math.isnan, "is_finite": math.isfinite, "is_infinite": math.isinf,
}.items():  # fmt: skip
    _float_fn(_name, _f)


@_reg("round")
def _round(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("round", a, _N)
    x = float(a[0])
    if math.isnan(x) or math.isinf(x):
        return x
    return float(
        math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)
    )  # away from zero, as Rust


@_reg("to_hex", "to_octal", "to_binary")
def _to_radix(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("to_hex", a, _I)
    v = a[0] & ((1 << 64) - 1)
    return {"to_hex": f"{v:x}", "to_octal": f"{v:o}", "to_binary": f"{v:b}"}[run.called]


# ---- strings -----------------------------------------------------------


@_reg("len")
def _len(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("len", a, (str, Char, list, dict))
    return len(a[0])


@_reg("is_empty")
def _is_empty(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("is_empty", a, (str, Char, list, dict))
    v = a[0]
    return not str(v).strip() if type(v) in _S else not v


@_reg("to_upper", "to_lower")
def _case(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("to_upper", a, _S)
    _work(run, node, len(a[0]))
    text = str(a[0]).upper() if run.called == "to_upper" else str(a[0]).lower()
    return Char(text) if type(a[0]) is Char and len(text) == 1 else text


@_reg("make_upper", "make_lower")
def _make_case(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("make_upper", a, (str,))
    _work(run, node, len(a[0]))
    return _mutated(
        run, node, str(a[0]).upper() if run.called == "make_upper" else str(a[0]).lower()
    )


@_reg("trim")
def _trim(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("trim", a, (str,))
    _work(run, node, len(a[0]))
    return str(a[0]).strip()


@_reg("contains")
def _contains(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is str and type(a[1]) in _S:
        _work(run, node, len(a[0]))
        return str(a[1]) in str(a[0])
    if len(a) == 2 and type(a[0]) is list:
        _work(run, node, 16 * len(a[0]))
        return any(equal(x, a[1]) for x in a[0])
    if len(a) == 2 and type(a[0]) is dict and type(a[1]) in _S:
        return str(a[1]) in a[0]
    raise _no_fn("contains", a)


@_reg("starts_with", "ends_with")
def _starts_ends(run: _Run, a: list[Any], node: Node) -> Any:
    _sig(run.called, a, (str,), _S)
    return (
        str(a[0]).startswith(str(a[1]))
        if run.called == "starts_with"
        else str(a[0]).endswith(str(a[1]))
    )


@_reg("index_of")
def _index_of(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) in (2, 3) and type(a[0]) is str and type(a[1]) in _S:
        start = 0
        if len(a) == 3:
            _sig("index_of", a, (str,), _S, _I)
            start = a[2] if a[2] >= 0 else max(0, len(a[0]) + a[2])
        _work(run, node, len(a[0]))
        return str(a[0]).find(str(a[1]), start)
    if len(a) == 2 and type(a[0]) is list:
        for i, x in enumerate(a[0]):
            if equal(x, a[1]):
                return i
        return -1
    raise _no_fn("index_of", a)


def _span(length: int, start: int, count: int | None) -> tuple[int, int]:
    if start < 0:
        start = max(0, length + start)
    start = min(start, length)
    end = length if count is None else min(length, start + max(0, count))
    return start, end


def _bounds(name: str, a: list[Any], kind: type) -> tuple[int, int]:
    """The (start, end) that ``x.name(start[, count])`` selects of a string
    or an array ``kind``: a negative start counts from the end, and both
    are clamped to what is there."""
    if len(a) == 2:
        _sig(name, a, (kind,), _I)
        return _span(len(a[0]), a[1], None)
    _sig(name, a, (kind,), _I, _I)
    return _span(len(a[0]), a[1], a[2])


@_reg("sub_string")
def _sub_string(run: _Run, a: list[Any], node: Node) -> Any:
    i, j = _bounds("sub_string", a, str)
    return str(a[0])[i:j]


@_reg("crop")
def _crop(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is list:
        return _extract(run, a, node)
    text = _sub_string(run, a, node)
    return _mutated(run, node, str(text))


@_reg("truncate")
def _truncate(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is list and type(a[1]) is int:
        del a[0][max(0, a[1]) :]
        return None
    _sig("truncate", a, (str,), _I)
    return _mutated(run, node, str(a[0])[: max(0, a[1])])


@_reg("replace")
def _replace(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("replace", a, (str,), _S, _S)
    text, find, sub = str(a[0]), str(a[1]), str(a[2])
    _work(run, node, len(text))
    if find and sub and len(sub) > len(find):
        grown = len(text) + text.count(find) * (len(sub) - len(find))
        if grown > run.limits.max_string_size:
            raise run.limit(f"a string grew past {run.limits.max_string_size} characters", node)
    if not find:
        if len(text) * len(sub) + len(text) > run.limits.max_string_size:
            raise run.limit(f"a string grew past {run.limits.max_string_size} characters", node)
    return _mutated(run, node, text.replace(find, sub))


@_reg("remove")
def _remove(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is str and type(a[1]) in _S:
        return _mutated(run, node, str(a[0]).replace(str(a[1]), ""))
    if len(a) == 2 and type(a[0]) is list and type(a[1]) is int:
        arr: list[Any] = a[0]
        i = a[1] + len(arr) if a[1] < 0 else a[1]
        return arr.pop(i) if 0 <= i < len(arr) else None
    if len(a) == 2 and type(a[0]) is dict and type(a[1]) in _S:
        return a[0].pop(str(a[1]), None)
    raise _no_fn("remove", a)


@_reg("clear")
def _clear(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 1 and type(a[0]) is str:
        return _mutated(run, node, "")
    if len(a) == 1 and type(a[0]) in (list, dict):
        a[0].clear()
        return None
    raise _no_fn("clear", a)


@_reg("append")
def _append(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is str:
        extra = display_text(a[1])
        if len(a[0]) + len(extra) > run.limits.max_string_size:
            raise run.limit(f"a string grew past {run.limits.max_string_size} characters", node)
        return _mutated(run, node, str(a[0]) + extra)
    if len(a) == 2 and type(a[0]) is list and type(a[1]) is list:
        arr: list[Any] = a[0]
        if len(arr) + len(a[1]) > run.limits.max_array_size:
            raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
        arr.extend(run.stored(a[1], node))
        return None
    raise _no_fn("append", a)


@_reg("pad")
def _pad(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 3 and type(a[0]) is list and type(a[1]) is int:
        arr: list[Any] = a[0]
        n: int = a[1]
        if n > run.limits.max_array_size:
            raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
        while len(arr) < n:
            arr.append(run.stored(a[2], node))
        return None
    _sig("pad", a, (str,), _I, _S)
    text, n, fill = str(a[0]), a[1], str(a[2])
    if n > run.limits.max_string_size:
        raise run.limit(f"a string grew past {run.limits.max_string_size} characters", node)
    if not fill:
        return _mutated(run, node, text)
    while len(text) < n:
        text += fill[: n - len(text)]
    return _mutated(run, node, text)


@_reg("split")
def _split(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) is str and type(a[1]) in _S:
        text, sep = str(a[0]), str(a[1])
        _work(run, node, len(text))
        count = len(text) + 2 if not sep else text.count(sep) + 1
        if count > run.limits.max_array_size:
            raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
        return ["", *text, ""] if not sep else text.split(sep)
    if len(a) == 2 and type(a[0]) is str and type(a[1]) is int:
        text = str(a[0])
        i, _ = _span(len(text), a[1], None)
        return [text[:i], text[i:]]
    if len(a) == 2 and type(a[0]) is list and type(a[1]) is int:
        arr: list[Any] = a[0]
        i, _ = _span(len(arr), a[1], None)
        tail = arr[i:]
        del arr[i:]
        return tail
    raise _no_fn("split", a)


@_reg("chars")
def _chars(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("chars", a, (str,))
    if len(a[0]) > run.limits.max_array_size:
        raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
    return [Char(c) for c in str(a[0])]


@_reg("get")
def _get(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 2 and type(a[0]) in (str, list) and type(a[1]) is int:
        seq = a[0]
        i = a[1] + len(seq) if a[1] < 0 else a[1]
        if not 0 <= i < len(seq):
            return None
        item = seq[i]
        return Char(item) if type(seq) is str else item
    if len(a) == 2 and type(a[0]) is dict and type(a[1]) in _S:
        return a[0].get(str(a[1]))
    raise _no_fn("get", a)


@_reg("bytes")
def _bytes(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("bytes", a, _S)
    return len(str(a[0]).encode("utf-8"))


# ---- arrays ------------------------------------------------------------


@_reg("push")
def _push(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 2 or type(a[0]) is not list:
        raise _no_fn("push", a)
    arr: list[Any] = a[0]
    if len(arr) + 1 > run.limits.max_array_size:
        raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
    arr.append(a[1])
    run.spend(16, node)
    return None


@_reg("insert")
def _insert(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 3 or type(a[0]) is not list or type(a[1]) is not int:
        raise _no_fn("insert", a)
    arr: list[Any] = a[0]
    if len(arr) + 1 > run.limits.max_array_size:
        raise run.limit(f"an array grew past {run.limits.max_array_size} items", node)
    i: int = a[1]
    arr.insert(max(0, i + len(arr)) if i < 0 else min(i, len(arr)), a[2])
    return None


@_reg("pop", "shift")
def _pop(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("pop", a, (list,))
    arr: list[Any] = a[0]
    if not arr:
        return None
    return arr.pop() if run.called == "pop" else arr.pop(0)


@_reg("reverse")
def _reverse(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 1 and type(a[0]) is list:
        a[0].reverse()
        return None
    raise _no_fn("reverse", a)


@_reg("extract")
def _extract(run: _Run, a: list[Any], node: Node) -> Any:
    i, j = _bounds("extract", a, list)
    return run.stored(a[0][i:j], node)


@_reg("dedup")
def _dedup(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("dedup", a, (list,))
    arr: list[Any] = a[0]
    kept: list[Any] = []
    for x in arr:
        if not kept or not equal(kept[-1], x):
            kept.append(x)
    arr[:] = kept
    return None


def _callback(run: _Run, fn: Any, node: Node, *args: Any) -> Any:
    if type(fn) is not FnPtr:
        raise BuiltinError(f"expected a function pointer, not {type_name(fn)}")
    ptr: FnPtr = fn
    want = len(ptr.params) if ptr.body is not None else None
    given = list(args) if want is None or want >= len(args) else list(args[:want])
    return run.call_ptr(ptr, given, node)


@_reg("map")
def _map(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("map", a, (list,), (FnPtr,))
    return [_callback(run, a[1], node, x, i) for i, x in enumerate(list(a[0]))]


@_reg("filter", "retain", "drain")
def _filter(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("filter", a, (list,), (FnPtr,))
    arr: list[Any] = a[0]
    keep: list[Any] = []
    drop: list[Any] = []
    for i, x in enumerate(list(arr)):
        verdict = _callback(run, a[1], node, x, i)
        if type(verdict) is not bool:
            raise BuiltinError("the filter function must return a bool")
        (keep if verdict else drop).append(x)
    name = run.called
    if name == "filter":
        return keep
    arr[:] = keep if name == "retain" else drop
    return drop if name == "retain" else keep


@_reg("reduce")
def _reduce(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) not in (2, 3) or type(a[0]) is not list:
        raise _no_fn("reduce", a)
    acc = a[2] if len(a) == 3 else None
    for i, x in enumerate(list(a[0])):
        acc = _callback(run, a[1], node, acc, x, i)
    return acc


@_reg("some", "all")
def _some_all(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("some", a, (list,), (FnPtr,))
    want_all = run.called == "all"
    for i, x in enumerate(list(a[0])):
        verdict = _callback(run, a[1], node, x, i)
        if type(verdict) is not bool:
            raise BuiltinError("the function must return a bool")
        if verdict != want_all:
            return not want_all
    return want_all


@_reg("find")
def _find(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("find", a, (list,), (FnPtr,))
    for i, x in enumerate(list(a[0])):
        if _callback(run, a[1], node, x, i) is True:
            return x
    return None


@_reg("for_each")
def _for_each(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("for_each", a, (list,), (FnPtr,))
    for i, x in enumerate(list(a[0])):
        _callback(run, a[1], node, x, i)
    return None


@_reg("sort")
def _sort(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 1 and type(a[0]) is list:
        arr: list[Any] = a[0]
        kinds = {type(x) for x in arr}
        if not arr:
            return None
        if kinds <= {int, float} or kinds <= {str, Char} or kinds == {bool}:
            _work(run, node, 16 * len(arr))
            arr.sort(key=lambda x: str(x) if type(x) in _S else x)
            return None
        raise BuiltinError("sort() without a function needs numbers, strings or bools of one kind")
    _sig("sort", a, (list,), (FnPtr,))
    arr = a[0]

    def cmp(x: Any, y: Any) -> int:
        r = _callback(run, a[1], node, x, y)
        if type(r) is not int:
            raise BuiltinError("the sort function must return an integer")
        return (r > 0) - (r < 0)

    arr.sort(key=functools.cmp_to_key(cmp))
    return None


@_reg("join")
def _join(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("join", a, (list,), _S)
    text = str(a[1]).join(display_text(x) for x in a[0])
    return text


# ---- object maps ---------------------------------------------------------


@_reg("keys", "values")
def _keys_values(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("keys", a, (dict,))
    m: dict[str, Any] = a[0]
    ordered = sorted(m)
    return ordered if run.called == "keys" else [run.stored(m[k], node) for k in ordered]


@_reg("mixin", "fill_with")
def _mixin(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("mixin", a, (dict,), (dict,))
    target: dict[str, Any] = a[0]
    for k, v in a[1].items():
        if run.called == "mixin" or k not in target:
            target[k] = run.stored(v, node)
    return None


@_reg("set")
def _set(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) == 3 and type(a[0]) is dict and type(a[1]) in _S:
        a[0][str(a[1])] = a[2]
        return None
    if len(a) == 3 and type(a[0]) is list and type(a[1]) is int:
        arr: list[Any] = a[0]
        i = a[1] + len(arr) if a[1] < 0 else a[1]
        if 0 <= i < len(arr):
            arr[i] = a[2]
        return None
    raise _no_fn("set", a)


# ---- Leviath's registered functions ------------------------------------


@_reg("count_tokens")
def _count_tokens(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("count_tokens", a, _S)
    return -(-len(str(a[0]).encode("utf-8")) // 4)  # bytes / 4, rounded up


@_reg("is_json")
def _is_json(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("is_json", a, _S)
    _work(run, node, len(a[0]))
    try:
        json.loads(str(a[0]))
    except (ValueError, RecursionError):
        return False
    return True


@_reg("is_mermaid")
def _is_mermaid(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("is_mermaid", a, _S)
    text = str(a[0])
    marks = ("graph", "sequenceDiagram", "classDiagram", "stateDiagram", "erDiagram", "flowchart")
    return any(m in text for m in marks)


@_reg("is_markdown")
def _is_markdown(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("is_markdown", a, _S)
    return bool(str(a[0]))  # Leviath's check accepts any non-empty text


@_reg("content_format")
def _content_format(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("content_format", a, _S)
    return str(a[0]) if str(a[0]) in ("text", "json", "mermaid", "markdown", "code") else "text"


@_reg("tokens_remaining")
def _tokens_remaining(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("tokens_remaining", a, _I, _I)
    return max(I64_MIN, min(I64_MAX, a[0] - a[1]))  # saturating


@_reg("usage_ratio")
def _usage_ratio(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("usage_ratio", a, _I, _I)
    return 1.0 if a[0] == 0 else a[1] / a[0]


@_reg("needs_eviction")
def _needs_eviction(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("needs_eviction", a, _I, _I, _F)
    return True if a[0] == 0 else a[1] / a[0] >= a[2]


@_reg("region_pinned", "region_temporary", "region_clearable")
def _region_kind(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("region_pinned", a)
    return run.called.removeprefix("region_")


@_reg("region_sliding_window")
def _region_sliding(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("region_sliding_window", a, _I)
    return {"kind": "sliding_window", "max_items": a[0]}


@_reg("region_compacting")
def _region_compacting(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("region_compacting", a, _I)
    return {"kind": "compacting", "threshold_tokens": a[0]}


@_reg("region_custom")
def _region_custom(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("region_custom", a, (str,), (bool,))
    return {"kind": "custom", "script": a[0], "persistent": a[1]}


@_reg("region_entry")
def _region_entry(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("region_entry", a, (str,), _I)
    return {"content": a[0], "tokens": a[1]}


@_reg("parse_json")
def _parse_json(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("parse_json", a, _S)
    text = str(a[0])
    _work(run, node, len(text))
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BuiltinError("parse_json: the document nests too deeply") from None
    except ValueError as exc:
        raise BuiltinError(f"parse_json: {exc}") from None
    return _from_json(run, value, node)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _from_json(run: _Run, value: Any, node: Node) -> Any:
    """JSON as Rhai values, each container within its bound; an integer
    past 64 bits becomes a float, as serde's conversion makes it."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        t = type(src)
        if t is list:
            run.check_size(src, node)
            new: Any = [None] * len(src)
            for i, item in enumerate(src):
                stack.append((item, new, i))
        elif t is dict:
            run.check_size(src, node)
            new = dict.fromkeys(src)
            for k, item in src.items():
                stack.append((item, new, k))
        elif t is int and not I64_MIN <= src <= I64_MAX:
            new = float(src)
        elif t is str:
            run.check_size(src, node)
            new = src
        else:
            new = src
        parent[key] = new
    return root[0]


def to_json_text(value: Any) -> str:
    """Compact JSON with keys in order, as serde writes Rhai's maps."""
    return json.dumps(
        to_plain(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
    )


def to_plain(value: Any) -> Any:
    """A Rhai value as plain JSON data (unit is null, a char a string)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        t = type(src)
        if t is list:
            new: Any = [None] * len(src)
            for i, item in enumerate(src):
                stack.append((item, new, i))
        elif t is dict:
            new = dict.fromkeys(src)
            for k, item in src.items():
                stack.append((item, new, k))
        elif t is Char:
            new = str(src)
        elif t is float and (math.isnan(src) or math.isinf(src)):
            new = None
        elif src is None or t in (bool, int, float, str):
            new = src
        else:
            raise BuiltinError(f"to_json: a {type_name(src)} cannot be written as JSON")
        parent[key] = new
    return root[0]


@_reg("to_json")
def _to_json_fn(run: _Run, a: list[Any], node: Node) -> Any:
    if len(a) != 1:
        raise _no_fn("to_json", a)
    try:
        return to_json_text(a[0])
    except RecursionError:
        raise BuiltinError("to_json: the value nests too deeply") from None


@_reg("encode_uri")
def _encode_uri(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("encode_uri", a, _S)
    return quote(str(a[0]), safe="-_.~")  # every byte but RFC 3986's unreserved ones


@_reg("html_to_text")
def _html_to_text(run: _Run, a: list[Any], node: Node) -> Any:
    _sig("html_to_text", a, _S)
    _work(run, node, 4 * len(a[0]))
    return html_to_text(str(a[0]))


_ENTITIES = {
    "amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "nbsp": " ",
    "mdash": "\u2014", "ndash": "\u2013", "hellip": "\u2026",
}  # fmt: skip


def html_to_text(html: str) -> str:
    """Readable text from HTML: script and style elements dropped, every tag
    a space, entities decoded, runs of white space made one space."""
    text = html
    for tag in ("script", "style"):
        text = _drop_element(text, tag)
    out: list[str] = []
    in_tag = False
    for ch in text:
        if ch == "<":
            in_tag = True
        elif ch == ">" and in_tag:
            in_tag = False
            out.append(" ")
        elif not in_tag:
            out.append(ch)
    return " ".join(_decode_entities("".join(out)).split())


def _drop_element(html: str, tag: str) -> str:
    lower = html.lower()
    opening, closing = f"<{tag}", f"</{tag}>"
    out: list[str] = []
    pos = 0
    while True:
        start = lower.find(opening, pos)
        if start < 0:
            out.append(html[pos:])
            break
        out.append(html[pos:start])
        end = lower.find(closing, start)
        if end < 0:
            break  # an element never closed takes the rest with it
        pos = end + len(closing)
    return "".join(out)


def _decode_entities(text: str) -> str:
    out: list[str] = []
    pos = 0
    while True:
        amp = text.find("&", pos)
        if amp < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:amp])
        semi = text.find(";", amp + 1, amp + 13)
        decoded = _entity(text[amp + 1 : semi]) if semi > 0 else None
        if decoded is None:
            out.append("&")
            pos = amp + 1
        else:
            out.append(decoded)
            pos = semi + 1


def _entity(name: str) -> str | None:
    if name in _ENTITIES:
        return _ENTITIES[name]
    try:
        if name[:2] in ("#x", "#X"):
            code = int(name[2:], 16)
        elif name.startswith("#"):
            code = int(name[1:], 10)
        else:
            return None
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None
    except ValueError:
        return None
