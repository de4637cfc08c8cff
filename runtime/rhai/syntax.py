"""The tree a Rhai script is read into: one small class per construct.

Every node keeps the line and column where it starts, so an error at run
time names the place in the script, as Rhai's own errors do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ArrayLit", "Assign", "Binary", "Block", "Break", "Call", "Closure", "Continue", "DoLoop",
    "FnDef", "For", "If", "Import", "Index", "Let", "Lit", "Loop", "MapLit", "MethodCall", "Node",
    "Prop", "Return", "Script", "Switch", "Template", "Throw", "Try", "Unary", "Var", "While",
]  # fmt: skip


@dataclass(slots=True)
class Node:
    line: int
    col: int


@dataclass(slots=True)
class Lit(Node):
    value: object


@dataclass(slots=True)
class Var(Node):
    name: str


@dataclass(slots=True)
class Template(Node):
    parts: list[str | Node]


@dataclass(slots=True)
class ArrayLit(Node):
    items: list[Node]


@dataclass(slots=True)
class MapLit(Node):
    pairs: list[tuple[str, Node]]


@dataclass(slots=True)
class Unary(Node):
    op: str
    operand: Node


@dataclass(slots=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


@dataclass(slots=True)
class Prop(Node):
    target: Node
    name: str
    elvis: bool = False


@dataclass(slots=True)
class Index(Node):
    target: Node
    index: Node
    elvis: bool = False


@dataclass(slots=True)
class MethodCall(Node):
    target: Node
    name: str
    args: list[Node]
    elvis: bool = False


@dataclass(slots=True)
class Call(Node):
    name: str
    args: list[Node]


@dataclass(slots=True)
class Closure(Node):
    params: list[str]
    body: Node


@dataclass(slots=True)
class Block(Node):
    stmts: list[Node]


@dataclass(slots=True)
class If(Node):
    cond: Node
    then: Block
    orelse: Node | None


@dataclass(slots=True)
class Switch(Node):
    subject: Node
    # (patterns, guard, body); an empty pattern list is the default case.
    cases: list[tuple[list[Node], Node | None, Node]]


@dataclass(slots=True)
class Let(Node):
    name: str
    value: Node | None
    const: bool = False


@dataclass(slots=True)
class Assign(Node):
    target: Node
    op: str  # "=" or a compound operator such as "+="
    value: Node


@dataclass(slots=True)
class While(Node):
    cond: Node
    body: Block


@dataclass(slots=True)
class Loop(Node):
    body: Block


@dataclass(slots=True)
class DoLoop(Node):
    body: Block
    cond: Node
    until: bool


@dataclass(slots=True)
class For(Node):
    var: str
    counter: str | None
    iterable: Node
    body: Block


@dataclass(slots=True)
class Break(Node):
    value: Node | None


@dataclass(slots=True)
class Continue(Node):
    pass


@dataclass(slots=True)
class Return(Node):
    value: Node | None


@dataclass(slots=True)
class Throw(Node):
    value: Node | None


@dataclass(slots=True)
class Try(Node):
    body: Block
    var: str | None
    handler: Block


@dataclass(slots=True)
class Import(Node):
    module: Node


@dataclass(slots=True)
class FnDef(Node):
    name: str
    params: list[str]
    body: Block


@dataclass(slots=True)
class Script:
    path: str
    body: list[Node]
    functions: dict[tuple[str, int], FnDef] = field(default_factory=dict)
