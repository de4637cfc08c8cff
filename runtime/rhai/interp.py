"""The tree-walking evaluator, with Rhai's bounds.

Every node evaluated is one operation; the run stops with
:class:`RhaiLimitError` past ``max_operations``, past the wall-clock limit
(checked every 256 operations), past ``max_call_levels`` nested calls, or
when a string, array or map outgrows its size bound. Work on large data is
charged by size (one operation per KiB), and everything a run allocates is
counted against ``max_total_units``, so neither time nor memory grows
without bound whatever the script does. Limit errors pass through ``catch``.

Rhai has value semantics: storing an array or map (``let``, assignment,
``push``, an argument) stores a copy, while methods called on a variable
change it in place. Python's containers are references, so a value read
from a place is copied when it is stored somewhere else.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.errors import CharterError
from charter.runtime.rhai import arith, builtins
from charter.runtime.rhai import syntax as s
from charter.runtime.rhai.builtins import BuiltinError
from charter.runtime.rhai.errors import RhaiLimitError, RhaiRuntimeError
from charter.runtime.rhai.values import (
    I64_MAX,
    I64_MIN,
    Char,
    FnPtr,
    display_text,
    equal,
    type_name,
)

__all__ = ["Engine", "HostError", "HostFunction", "Limits", "Mutated"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Rhai's sandbox bounds as Leviath sets them, plus a wall clock and a
    total allocation budget (characters plus 16 per container slot)."""

    max_operations: int = 500_000
    max_call_levels: int = 64
    max_string_size: int = 1_000_000
    max_array_size: int = 10_000
    max_map_size: int = 10_000
    max_seconds: float = 30.0
    max_total_units: int = 64_000_000


class HostError(CharterError):
    """Raised by a host function: the script sees a catchable error whose
    caught value is the message, as a Rhai ``ErrorRuntime`` would be."""


@dataclass(frozen=True, slots=True)
class HostFunction:
    name: str
    arities: frozenset[int]
    fn: Callable[..., object]


@dataclass(frozen=True, slots=True)
class Mutated:
    """A builtin's answer when it changes an immutable receiver (a string):
    the new receiver, written back to the place it came from, and the
    call's result."""

    receiver: Any
    result: Any = None


class _Break(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Continue(Exception):
    pass


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


_PLACES = (s.Var, s.Prop, s.Index)
# Properties Rhai's packages define on strings and arrays (``s.len``).
_GETTERS = frozenset({"len", "is_empty"})


@dataclass(slots=True)
class _Frame:
    names: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    consts: list[bool] = field(default_factory=list)


class Engine:
    """Runs parsed scripts with the given host functions and bounds."""

    def __init__(
        self, limits: Limits | None = None, host: Mapping[str, HostFunction] | None = None
    ) -> None:
        self.limits = limits or Limits()
        self.host = dict(host or {})

    def run(self, script: s.Script, scope: Mapping[str, object] | None = None) -> Any:
        """Evaluate the script's top level with ``scope`` as its variables;
        the value of its last statement (or of a top-level ``return``)."""
        run = _Run(self, script)
        for name, value in (scope or {}).items():
            run.declare(name, run.stored(value), False)
        return run.guarded(lambda: run.top(script.body))

    def call(self, script: s.Script, name: str, args: list[Any]) -> Any:
        """Call one of the script's functions (a hook's ``on_tool_call``)."""
        run = _Run(self, script)

        def go() -> Any:
            run.top(script.body)  # top-level constants and side effects first
            fn = script.functions.get((name, len(args)))
            if fn is None:
                raise RhaiRuntimeError(
                    f"Function not found: {name} with {len(args)} arguments", script.path, 1, 1
                )
            return run.call_script(fn, [run.stored(a) for a in args], None, None, fn)

        return run.guarded(go)


class _Run:
    def __init__(self, engine: Engine, script: s.Script) -> None:
        self.engine = engine
        self.limits = engine.limits
        self.script = script
        self.path = script.path
        self.ops = 0
        self.units = 0
        self.deadline = time.monotonic() + self.limits.max_seconds
        self.levels = 0
        self.frame = _Frame()
        self.called = ""  # the name a builtin was called by (several share one body)
        self.builtins = builtins.FUNCTIONS
        self.dispatch: dict[type, Callable[[Any], object]] = {
            s.Lit: self.e_lit, s.Var: self.e_var, s.Template: self.e_template,
            s.ArrayLit: self.e_array, s.MapLit: self.e_map, s.Unary: self.e_unary,
            s.Binary: self.e_binary, s.Prop: self.e_prop, s.Index: self.e_index,
            s.MethodCall: self.e_method, s.Call: self.e_call, s.Closure: self.e_closure,
            s.Block: self.e_block, s.If: self.e_if, s.Switch: self.e_switch, s.Let: self.e_let,
            s.Assign: self.e_assign, s.While: self.e_while, s.Loop: self.e_loop,
            s.DoLoop: self.e_do, s.For: self.e_for, s.Break: self.e_break,
            s.Continue: self.e_continue, s.Return: self.e_return, s.Throw: self.e_throw,
            s.Try: self.e_try, s.Import: self.e_import,
        }  # fmt: skip

    # ---- bookkeeping ---------------------------------------------------

    def guarded(self, go: Callable[[], object]) -> Any:
        try:
            return go()
        except _Return as r:
            return r.value
        except (_Break, _Continue):
            raise RhaiRuntimeError(
                "'break' or 'continue' outside a loop", self.path, 1, 1
            ) from None
        except RecursionError:
            raise RhaiLimitError(
                "the script nests too deeply (stack overflow)", self.path, 1, 1
            ) from None
        except MemoryError:
            raise RhaiLimitError("the script ran out of memory", self.path, 1, 1) from None

    def error(
        self, message: str, node: s.Node, value: Any = None, thrown: bool = False
    ) -> RhaiRuntimeError:
        err = RhaiRuntimeError(message, self.path, node.line, node.col, value)
        err.thrown = thrown
        return err

    def limit(self, message: str, node: s.Node) -> RhaiLimitError:
        return RhaiLimitError(message, self.path, node.line, node.col)

    def charge(self, node: s.Node, ops: int) -> None:
        self.ops += ops
        if self.ops > self.limits.max_operations:
            raise self.limit(
                f"too many operations (the bound is {self.limits.max_operations})", node
            )
        if time.monotonic() > self.deadline:
            raise self.limit(
                f"the script ran longer than {self.limits.max_seconds:g} seconds", node
            )

    def check_size(self, value: Any, node: s.Node) -> Any:
        """A new string, array or map: within its bound, and counted."""
        t = type(value)
        if t is str:
            n = len(value)
            if n > self.limits.max_string_size:
                raise self.limit(
                    f"a string grew past {self.limits.max_string_size} characters", node
                )
            self.spend(n, node)
        elif t is list:
            n = len(value)
            if n > self.limits.max_array_size:
                raise self.limit(f"an array grew past {self.limits.max_array_size} items", node)
            self.spend(16 * n, node)
        elif t is dict:
            n = len(value)
            if n > self.limits.max_map_size:
                raise self.limit(
                    f"an object map grew past {self.limits.max_map_size} properties", node
                )
            self.spend(16 * n, node)
        return value

    def spend(self, units: int, node: s.Node) -> None:
        self.units += units
        if self.units > self.limits.max_total_units:
            raise self.limit("the script allocated more than its memory budget", node)
        if units >= 1024:
            self.charge(node, units // 1024)

    def stored(self, value: Any, node: s.Node | None = None) -> Any:
        """A copy of an array or map about to be stored in a second place
        (an explicit stack, so a deeply nested value costs no recursion)."""
        t = type(value)
        if t is not list and t is not dict:
            return value
        where = node or s.Lit(1, 1, None)
        root: Any = [] if t is list else {}
        stack: list[tuple[Any, Any]] = [(value, root)]
        while stack:
            src, dst = stack.pop()
            if type(src) is list:
                self.spend(16 * len(src), where)
                for item in src:
                    ti = type(item)
                    if ti is list or ti is dict:
                        new: Any = [] if ti is list else {}
                        stack.append((item, new))
                        item = new
                    dst.append(item)
            else:
                self.spend(16 * len(src), where)
                for k, item in src.items():
                    ti = type(item)
                    if ti is list or ti is dict:
                        new = [] if ti is list else {}
                        stack.append((item, new))
                        item = new
                    dst[k] = item
        return root

    def value_of(self, node: s.Node) -> Any:
        """Evaluate ``node`` for storing: a value read from a place is copied."""
        v = self.ev(node)
        return self.stored(v, node) if isinstance(node, _PLACES) else v

    def ev(self, node: s.Node) -> Any:
        self.ops += 1
        if self.ops > self.limits.max_operations or not self.ops & 255:
            self.charge(node, 0)
        return self.dispatch[type(node)](node)

    # ---- scope ---------------------------------------------------------

    def declare(self, name: str, value: Any, const: bool) -> None:
        f = self.frame
        f.names.append(name)
        f.values.append(value)
        f.consts.append(const)

    def slot(self, name: str) -> int:
        names = self.frame.names
        for i in range(len(names) - 1, -1, -1):
            if names[i] == name:
                return i
        return -1

    def truncate(self, size: int) -> None:
        f = self.frame
        del f.names[size:], f.values[size:], f.consts[size:]

    # ---- statements ----------------------------------------------------

    def top(self, body: list[s.Node]) -> Any:
        return self.statements(body)

    def statements(self, body: list[s.Node]) -> Any:
        result: Any = None
        for stmt in body:
            result = self.ev(stmt)
        return result

    def e_block(self, node: s.Block) -> Any:
        size = len(self.frame.names)
        try:
            return self.statements(node.stmts)
        finally:
            self.truncate(size)

    def e_let(self, node: s.Let) -> Any:
        value = None if node.value is None else self.value_of(node.value)
        self.declare(node.name, value, node.const)
        return None

    def e_assign(self, node: s.Assign) -> Any:
        value = self.value_of(node.value)
        if node.op != "=":
            current = self.ev(node.target)
            op = node.op[:-1]
            if op == "??":
                if current is not None:
                    return None
            elif op == "+" and type(current) is list:
                added = value if type(value) is list else [value]
                self.check_size(current + added, node)
                current.extend(added)
                return None
            else:
                value = self.binary(op, current, value, node)
        self.assign(node.target, value, node)
        return None

    def assign(self, target: s.Node, value: Any, node: s.Node) -> None:
        if isinstance(target, s.Var):
            i = self.slot(target.name)
            if i < 0:
                raise self.error(f"Variable not found: {target.name}", target)
            if self.frame.consts[i]:
                raise self.error(f"Cannot modify constant {target.name}", target)
            self.frame.values[i] = value
        elif isinstance(target, s.Prop):
            container = self.ev(target.target)
            if type(container) is not dict:
                raise self.error(
                    f"cannot set property '{target.name}' of {type_name(container)}", target
                )
            container[target.name] = value
            self.check_size(container, node)
        elif isinstance(target, s.Index):
            container = self.ev(target.target)
            key = self.ev(target.index)
            if type(container) is list:
                container[self.array_index(container, key, target)] = value
            elif type(container) is dict:
                if type(key) is not str and type(key) is not Char:
                    raise self.error(
                        f"an object map's key must be a string, not {type_name(key)}", target
                    )
                container[str(key)] = value
                self.check_size(container, node)
            elif type(container) is str:
                if type(value) is not Char and not (type(value) is str and len(value) == 1):
                    raise self.error("only a character can be assigned into a string", target)
                i = self.string_index(container, key, target)
                self.assign(target.target, container[:i] + str(value) + container[i + 1 :], node)
            else:
                raise self.error(f"cannot index into {type_name(container)}", target)
        else:
            raise self.error("this cannot be assigned to", target)

    def loop_body(self, body: s.Block) -> tuple[bool, object]:
        """Run one iteration; (stop, value of break)."""
        try:
            self.e_block(body)
        except _Break as b:
            return True, b.value
        except _Continue:
            pass
        return False, None

    def e_while(self, node: s.While) -> Any:
        while self.truth(self.ev(node.cond), node.cond):
            stop, value = self.loop_body(node.body)
            if stop:
                return value
        return None

    def e_loop(self, node: s.Loop) -> Any:
        while True:
            self.charge(node, 1)
            stop, value = self.loop_body(node.body)
            if stop:
                return value

    def e_do(self, node: s.DoLoop) -> Any:
        while True:
            stop, value = self.loop_body(node.body)
            if stop:
                return value
            if self.truth(self.ev(node.cond), node.cond) == node.until:
                return None

    def e_for(self, node: s.For) -> Any:
        iterable = self.ev(node.iterable)
        size = len(self.frame.names)
        for counter, item in enumerate(self.iterate(iterable, node.iterable)):
            self.charge(node, 1)
            self.declare(node.var, self.stored(item, node), False)
            if node.counter is not None:
                self.declare(node.counter, counter, False)
            try:
                stop, value = self.loop_body(node.body)
            finally:
                self.truncate(size)
            if stop:
                return value
        return None

    def iterate(self, value: Any, node: s.Node) -> Iterator[object]:
        t = type(value)
        if t is list:
            return iter(list(value))
        if t is range:
            return iter(value)
        if t is str:
            return (Char(c) for c in value)
        raise self.error(f"a for loop cannot iterate over {type_name(value)}", node)

    def e_break(self, node: s.Break) -> Any:
        raise _Break(None if node.value is None else self.value_of(node.value))

    def e_continue(self, node: s.Continue) -> Any:
        raise _Continue

    def e_return(self, node: s.Return) -> Any:
        raise _Return(None if node.value is None else self.value_of(node.value))

    def e_throw(self, node: s.Throw) -> Any:
        value = None if node.value is None else self.value_of(node.value)
        raise self.error(display_text(value) or "()", node, value, thrown=True)

    def e_try(self, node: s.Try) -> Any:
        try:
            return self.e_block(node.body)
        except RhaiRuntimeError as err:
            if err.thrown:
                caught = err.value
            else:
                caught = {"message": err.message, "line": err.line, "position": err.col}
            size = len(self.frame.names)
            if node.var is not None:
                self.declare(node.var, caught, False)
            try:
                return self.e_block(node.handler)
            finally:
                self.truncate(size)

    def e_import(self, node: s.Import) -> Any:
        raise self.error(
            "modules cannot be imported: a script runs only the code that was reviewed", node
        )

    # ---- expressions ---------------------------------------------------

    def e_lit(self, node: s.Lit) -> Any:
        return node.value

    def e_var(self, node: s.Var) -> Any:
        i = self.slot(node.name)
        if i < 0:
            if any(k[0] == node.name for k in self.script.functions):
                return FnPtr(node.name)
            raise self.error(f"Variable not found: {node.name}", node)
        return self.frame.values[i]

    def e_template(self, node: s.Template) -> Any:
        out = "".join(p if isinstance(p, str) else display_text(self.ev(p)) for p in node.parts)
        return self.check_size(out, node)

    def e_array(self, node: s.ArrayLit) -> Any:
        return self.check_size([self.value_of(item) for item in node.items], node)

    def e_map(self, node: s.MapLit) -> Any:
        return self.check_size({k: self.value_of(v) for k, v in node.pairs}, node)

    def e_closure(self, node: s.Closure) -> Any:
        free = _free_names(node.body, set(node.params))
        captured = []
        for name in sorted(free):
            i = self.slot(name)
            if i >= 0:
                captured.append((name, self.stored(self.frame.values[i], node)))
        return FnPtr("<closure>", tuple(node.params), node.body, tuple(captured))

    def truth(self, value: Any, node: s.Node) -> bool:
        if type(value) is not bool:
            raise self.error(f"a condition must be a bool, not {type_name(value)}", node)
        return value

    def e_if(self, node: s.If) -> Any:
        if self.truth(self.ev(node.cond), node.cond):
            return self.e_block(node.then)
        if node.orelse is not None:
            return self.ev(node.orelse)
        return None

    def e_switch(self, node: s.Switch) -> Any:
        subject = self.ev(node.subject)
        for patterns, guard, body in node.cases:
            if patterns:
                matched = False
                for p in patterns:
                    pv = self.ev(p)
                    if (type(pv) is range and type(subject) is int and subject in pv) or equal(
                        pv, subject
                    ):
                        matched = True
                        break
                if not matched:
                    continue
            if guard is not None and not self.truth(self.ev(guard), guard):
                continue
            return self.ev(body)
        return None

    def e_unary(self, node: s.Unary) -> Any:
        v = self.ev(node.operand)
        if node.op == "!":
            if type(v) is not bool:
                raise self.error(f"'!' needs a bool, not {type_name(v)}", node)
            return not v
        if type(v) is int:
            if node.op == "-":
                return self.int_result(-v, node)
            return v
        if type(v) is float:
            return -v if node.op == "-" else v
        raise self.error(f"Function not found: {node.op} ({type_name(v)})", node)

    def e_binary(self, node: s.Binary) -> Any:
        op = node.op
        if op in ("&&", "||"):
            left = self.truth(self.ev(node.left), node.left)
            if left == (op == "||"):
                return left
            return self.truth(self.ev(node.right), node.right)
        if op == "??":
            left = self.ev(node.left)
            return self.ev(node.right) if left is None else left
        return self.binary(op, self.ev(node.left), self.ev(node.right), node)

    def int_result(self, value: int, node: s.Node) -> int:
        if value > I64_MAX or value < I64_MIN:
            raise self.error("Arithmetic overflow", node)
        return value

    def binary(self, op: str, a: Any, b: Any, node: s.Node) -> Any:
        return arith.binary(self, op, a, b, node)

    def e_prop(self, node: s.Prop) -> Any:
        target = self.ev(node.target)
        if target is None and node.elvis:
            return None
        if type(target) is dict:
            return target.get(node.name)
        if node.name in _GETTERS and type(target) in (str, list, dict):
            return self.call_builtin(node.name, [target], node)
        if type(target) is FnPtr and node.name == "name":
            return target.name
        raise self.error(f"Unknown property '{node.name}' for {type_name(target)}", node)

    def e_index(self, node: s.Index) -> Any:
        target = self.ev(node.target)
        if target is None and node.elvis:
            return None
        key = self.ev(node.index)
        t = type(target)
        if t is list:
            return target[self.array_index(target, key, node)]
        if t is dict:
            if type(key) is not str and type(key) is not Char:
                raise self.error(
                    f"an object map's key must be a string, not {type_name(key)}", node
                )
            return target.get(str(key))
        if t is str:
            return Char(target[self.string_index(target, key, node)])
        if t is int:
            if type(key) is not int or not 0 <= key < 64:
                raise self.error("a bit index must be an integer from 0 to 63", node)
            return bool((target >> key) & 1)
        raise self.error(f"cannot index into {type_name(target)}", node)

    def array_index(self, arr: list[Any], key: Any, node: s.Node) -> int:
        return self._position(len(arr), key, node, "an array", "elements")

    def string_index(self, text: str, key: Any, node: s.Node) -> int:
        return self._position(len(text), key, node, "a string", "characters")

    def _position(self, n: int, key: Any, node: s.Node, what: str, items: str) -> int:
        """An index into ``n`` items, a negative one counting from the end."""
        if type(key) is not int:
            raise self.error(f"{what} index must be an integer, not {type_name(key)}", node)
        j = key + n if key < 0 else key
        if not 0 <= j < n:
            noun = what.split()[1].capitalize()
            raise self.error(f"{noun} index {key} out of bounds: only {n} {items}", node)
        return int(j)

    # ---- calls ---------------------------------------------------------

    def e_call(self, node: s.Call) -> Any:
        args = [self.value_of(a) for a in node.args]
        return self.call_named(node.name, args, node, None)

    def e_method(self, node: s.MethodCall) -> Any:
        target = self.ev(node.target)
        if target is None and node.elvis:
            return None
        args = [self.value_of(a) for a in node.args]
        place = node.target if isinstance(node.target, _PLACES) else None
        if node.name == "call" and type(target) is FnPtr:
            return self.call_ptr(target, args, node)
        if type(target) is dict and type(target.get(node.name)) is FnPtr:
            # A closure stored in a map, called as a method, sees the map as `this`.
            return self.call_ptr(target[node.name], args, node, this=(target, place))
        return self.call_named(node.name, [target, *args], node, place)

    def call_named(self, name: str, args: list[Any], node: s.Node, place: s.Node | None) -> Any:
        fn = self.script.functions.get((name, len(args) - (1 if place is not None else 0)))
        if place is not None and fn is not None:
            return self.call_script(fn, args[1:], (args[0], place), node, fn)
        fn = self.script.functions.get((name, len(args)))
        if fn is not None:
            return self.call_script(fn, args, None, node, fn)
        host = self.engine.host.get(name)
        if host is not None and len(args) in host.arities:
            return self.call_host(host, args, node)
        if name in self.builtins:
            result = self.call_builtin(name, args, node)
            if type(result) is Mutated:
                if place is not None:
                    self.assign(place, self.check_size(result.receiver, node), node)
                return result.result
            return result
        i = self.slot(name)
        if i >= 0 and type(self.frame.values[i]) is FnPtr:
            return self.call_ptr(self.frame.values[i], args, node)
        types = ", ".join(type_name(a) for a in args)
        raise self.error(f"Function not found: {name} ({types})", node)

    def call_builtin(self, name: str, args: list[Any], node: s.Node) -> Any:
        self.called = name
        try:
            result = self.builtins[name](self, args, node)
        except BuiltinError as exc:
            raise self.error(str(exc), node) from None
        if type(result) is not Mutated:
            self.check_size(result, node)
        return result

    def call_host(self, host: HostFunction, args: list[Any], node: s.Node) -> Any:
        try:
            result = host.fn(*args)
        except HostError as exc:
            raise self.error(str(exc), node, str(exc), thrown=True) from None
        self.charge(node, 1)  # a host call may have taken time: look at the clock
        return self.check_size(result, node)

    def call_ptr(
        self,
        ptr: FnPtr,
        args: list[Any],
        node: s.Node,
        this: tuple[Any, s.Node | None] | None = None,
    ) -> Any:
        body = ptr.body
        if body is None:
            return self.call_named(ptr.name, args, node, None)
        if len(args) != len(ptr.params):
            raise self.error(
                f"the closure takes {len(ptr.params)} arguments, not {len(args)}", node
            )
        return self.enter_frame(
            node,
            [*ptr.captured, *zip(ptr.params, args, strict=True)],
            this,
            lambda: self.ev(body),
        )

    def call_script(
        self,
        fn: s.FnDef,
        args: list[Any],
        this: tuple[Any, s.Node | None] | None,
        node: s.Node | None,
        at: s.Node,
    ) -> Any:
        if len(args) != len(fn.params):
            raise self.error(f"{fn.name} takes {len(fn.params)} arguments", node or at)
        return self.enter_frame(
            node or at, list(zip(fn.params, args, strict=True)), this, lambda: self.e_block(fn.body)
        )

    def enter_frame(
        self,
        node: s.Node,
        bindings: list[tuple[str, Any]],
        this: tuple[Any, s.Node | None] | None,
        body: Callable[[], object],
    ) -> Any:
        self.levels += 1
        if self.levels > self.limits.max_call_levels:
            raise self.limit(
                f"more than {self.limits.max_call_levels} nested calls (stack overflow)", node
            )
        saved = self.frame
        self.frame = _Frame()
        for name, value in bindings:
            self.declare(name, value, False)
        if this is not None:
            self.declare("this", this[0], False)
        try:
            try:
                result = body()
            except _Return as r:
                result = r.value
            except (_Break, _Continue):
                raise self.error("'break' or 'continue' outside a loop", node) from None
            new_this = self.frame.values[self.slot("this")] if this is not None else None
        finally:
            self.frame = saved
            self.levels -= 1
        if this is not None and this[1] is not None and new_this is not this[0]:
            self.assign(this[1], new_this, node)
        return result


def _free_names(body: s.Node, bound: set[str]) -> set[str]:
    """Names a closure body reads (an over-approximation is harmless: names
    not in scope are simply not captured)."""
    names: set[str] = set()
    stack: list[Any] = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, s.Var):
            if item.name not in bound:
                names.add(item.name)
        elif isinstance(item, s.Node):
            for slot in type(item).__slots__:
                stack.append(getattr(item, slot))
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return names
