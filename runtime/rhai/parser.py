"""Read Rhai's grammar into :mod:`charter.runtime.rhai.syntax` nodes.

A hand-written recursive-descent parser with precedence climbing, as Rhai's
own is. A generated LALR parser (lark) was tried on paper and does not fit:
Rhai makes ``if``/``switch``/loops statements at the start of a statement
but expressions elsewhere, lets a block-like statement omit its ``;``, and
uses ``|`` both for closures and bitwise or; each of these is a conflict an
LALR table resolves silently the wrong way. Nesting is bounded (Rhai's
``max_expr_depth``), so a hostile script is an error, never a crash.
"""

from __future__ import annotations

import functools

from charter.runtime.rhai import syntax as s
from charter.runtime.rhai.errors import RhaiSyntaxError
from charter.runtime.rhai.lexer import Token, tokenize
from charter.runtime.rhai.values import Char

__all__ = ["MAX_DEPTH", "parse_cached", "parse_script"]

MAX_DEPTH = 128

# Binding power of each binary operator (Rhai's table); ``**`` binds right.
_BINARY = {
    "||": 30, "|": 30, "^": 30,
    "&&": 60, "&": 60,
    "==": 90, "!=": 90,
    "in": 110, "!in": 110,
    "<": 130, "<=": 130, ">": 130, ">=": 130,
    "??": 135,
    "..": 140, "..=": 140,
    "+": 150, "-": 150,
    "*": 180, "/": 180, "%": 180,
    "**": 190,
    "<<": 210, ">>": 210,
}  # fmt: skip
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", "&=", "|=", "^=", "??="}
_BLOCK_LIKE = {"if", "switch", "while", "loop", "do", "for", "try"}


def parse_script(text: str, path: str = "<script>") -> s.Script:
    """The script's tree, or :class:`RhaiSyntaxError` naming the place."""
    parser = _Parser(tokenize(text, path), path)
    script = s.Script(path=path, body=[])
    script.body = parser.statements(script, top=True)
    return script


@functools.lru_cache(maxsize=256)
def parse_cached(text: str, path: str) -> s.Script:
    """:func:`parse_script`, once per (text, path): a plan's scripts are
    parsed on their first use, not on every call. A parsed script is never
    changed afterwards, so sharing it is safe."""
    return parse_script(text, path)


def parse_expression(text: str, path: str, line: int, col: int, depth: int) -> s.Node:
    """One expression, for a template string's ``${...}``."""
    parser = _Parser(tokenize(text, path, line, col), path)
    parser.depth = depth
    node = parser.expr()
    parser.expect_kind("eof", "the end of the interpolation")
    return node


class _Parser:
    def __init__(self, tokens: list[Token], path: str) -> None:
        self.tokens = tokens
        self.path = path
        self.pos = 0
        self.depth = 0

    # ---- token helpers -------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        t = self.tokens[self.pos]
        if t.kind != "eof":
            self.pos += 1
        return t

    def at(self, value: str) -> bool:
        t = self.tokens[self.pos]
        return t.kind in ("op", "kw") and t.value == value

    def accept(self, value: str) -> bool:
        if self.at(value):
            self.pos += 1
            return True
        return False

    def error(self, message: str, tok: Token | None = None) -> RhaiSyntaxError:
        t = tok or self.tok
        return RhaiSyntaxError(message, self.path, t.line, t.col)

    def expect(self, value: str, what: str | None = None) -> Token:
        if not self.at(value):
            raise self.error(f"expected {what or repr(value)}, found {_describe(self.tok)}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {what}, found {_describe(self.tok)}")
        return self.next()

    def ident(self, what: str = "a name") -> str:
        return str(self.expect_kind("ident", what).value)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"the script nests deeper than {MAX_DEPTH} levels")

    # ---- statements ----------------------------------------------------

    def statements(self, script: s.Script | None, top: bool = False) -> list[s.Node]:
        out: list[s.Node] = []
        end = "eof" if top else "}"
        while not (self.tok.kind == "eof" if top else self.at("}")):
            if self.tok.kind == "eof":
                raise self.error("expected '}' to close this block, found the end of the script")
            if self.accept(";"):
                continue
            if self.at("fn") or self.at("private"):
                if script is None:
                    raise self.error("a function can only be defined at the top level of a script")
                self.function(script)
                continue
            stmt, needs_semi = self.statement()
            out.append(stmt)
            if needs_semi and not self.accept(";"):
                if not (self.tok.kind == "eof" if end == "eof" else self.at("}")):
                    raise self.error(
                        f"expected ';' after this statement, found {_describe(self.tok)}"
                    )
        return out

    def function(self, script: s.Script) -> None:
        self.accept("private")
        start = self.expect("fn")
        name = self.ident("the function's name")
        self.expect("(")
        params: list[str] = []
        while not self.at(")"):
            params.append(self.ident("a parameter name"))
            if not self.accept(","):
                break
        self.expect(")")
        body = self.block()
        key = (name, len(params))
        if key in script.functions:
            raise self.error(
                f"function '{name}' with {len(params)} parameters is defined twice", start
            )
        script.functions[key] = s.FnDef(start.line, start.col, name, params, body)

    def statement(self) -> tuple[s.Node, bool]:
        t = self.tok
        if t.kind == "kw":
            word = t.value
            if word in ("let", "const"):
                self.next()
                name = self.ident("a variable name")
                value = self.expr() if self.accept("=") else None
                return s.Let(t.line, t.col, name, value, word == "const"), True
            if word in _BLOCK_LIKE:
                return self.primary(), False
            if word in ("break", "return", "throw"):
                self.next()
                value = None if self._ends_statement() else self.expr()
                cls = {"break": s.Break, "return": s.Return, "throw": s.Throw}[str(word)]
                return cls(t.line, t.col, value), True
            if word == "continue":
                self.next()
                return s.Continue(t.line, t.col), True
            if word == "import":
                self.next()
                module = self.expr()
                if self.accept("as"):
                    self.ident("a module alias")
                return s.Import(t.line, t.col, module), True
            if word in ("export", "global"):
                raise self.error(f"'{word}' is not supported in a script run by Charter")
        if self.at("{"):
            return self.block(), False
        target = self.expr()
        if self.tok.kind == "op" and self.tok.value in _ASSIGN:
            op = str(self.next().value)
            if not isinstance(target, (s.Var, s.Prop, s.Index)):
                raise RhaiSyntaxError(
                    "this cannot be assigned to", self.path, target.line, target.col
                )
            return s.Assign(t.line, t.col, target, op, self.expr()), True
        return target, True

    def _ends_statement(self) -> bool:
        return self.at(";") or self.at("}") or self.tok.kind == "eof"

    def block(self) -> s.Block:
        t = self.expect("{", "'{'")
        self.enter()
        stmts = self.statements(None)
        self.expect("}")
        self.depth -= 1
        return s.Block(t.line, t.col, stmts)

    # ---- expressions ---------------------------------------------------

    def expr(self, min_bp: int = 0) -> s.Node:
        self.enter()
        left = self.unary()
        while True:
            t = self.tok
            if t.kind not in ("op", "kw"):
                break
            op = str(t.value)
            bp = _BINARY.get(op)
            if bp is None or bp < min_bp or (t.kind == "kw" and op != "in"):
                break
            self.next()
            right = self.expr(bp if op == "**" else bp + 1)
            left = s.Binary(t.line, t.col, op, left, right)
        self.depth -= 1
        return left

    def unary(self) -> s.Node:
        t = self.tok
        if t.kind == "op" and t.value in ("-", "+", "!"):
            self.next()
            self.enter()
            operand = self.unary()
            self.depth -= 1
            if (
                t.value == "-"
                and isinstance(operand, s.Lit)
                and type(operand.value) in (int, float)
            ):
                return s.Lit(t.line, t.col, -operand.value)  # type: ignore[operator]
            return s.Unary(t.line, t.col, str(t.value), operand)
        return self.postfix(self.primary())

    def postfix(self, node: s.Node) -> s.Node:
        while True:
            t = self.tok
            if self.at(".") or self.at("?."):
                elvis = t.value == "?."
                self.next()
                name_tok = self.tok
                if name_tok.kind not in ("ident", "kw"):
                    raise self.error(
                        f"expected a property or method name, found {_describe(name_tok)}"
                    )
                self.next()
                name = str(name_tok.value)
                if self.at("("):
                    node = s.MethodCall(t.line, t.col, node, name, self.arguments(), elvis)
                else:
                    node = s.Prop(t.line, t.col, node, name, elvis)
            elif self.at("[") or self.at("?["):
                elvis = t.value == "?["
                self.next()
                index = self.expr()
                self.expect("]")
                node = s.Index(t.line, t.col, node, index, elvis)
            else:
                return node

    def arguments(self) -> list[s.Node]:
        self.expect("(")
        args: list[s.Node] = []
        while not self.at(")"):
            args.append(self.expr())
            if not self.accept(","):
                break
        self.expect(")", "')' to close the arguments")
        return args

    def primary(self) -> s.Node:
        t = self.tok
        kind = t.kind
        if kind in ("int", "float", "str"):
            self.next()
            return s.Lit(t.line, t.col, t.value)
        if kind == "char":
            self.next()
            return s.Lit(t.line, t.col, Char(str(t.value)))
        if kind == "template":
            self.next()
            return self.template(t)
        if kind == "ident":
            self.next()
            name = str(t.value)
            if self.at("!") and self.tokens[self.pos + 1].value == "(":
                self.next()  # Rhai's `f!(...)` call form: the same call here
            if self.at("("):
                return s.Call(t.line, t.col, name, self.arguments())
            if self.at("::"):
                raise self.error("module paths ('::') are not supported in a script run by Charter")
            return s.Var(t.line, t.col, name)
        if kind == "kw":
            return self.keyword_expr(t)
        if kind == "op":
            if t.value == "(":
                self.next()
                if self.accept(")"):
                    return s.Lit(t.line, t.col, None)
                inner = self.expr()
                self.expect(")", "')'")
                return inner
            if t.value == "[":
                self.next()
                items: list[s.Node] = []
                while not self.at("]"):
                    items.append(self.expr())
                    if not self.accept(","):
                        break
                self.expect("]", "']' to close the array")
                return s.ArrayLit(t.line, t.col, items)
            if t.value == "#{":
                return self.map_literal()
            if t.value == "{":
                return self.block()
            if t.value in ("|", "||"):
                return self.closure()
        raise self.error(f"expected an expression, found {_describe(t)}")

    def keyword_expr(self, t: Token) -> s.Node:
        word = t.value
        if word in ("true", "false"):
            self.next()
            return s.Lit(t.line, t.col, word == "true")
        if word == "this":
            self.next()
            return s.Var(t.line, t.col, "this")
        if word == "if":
            self.next()
            cond = self.expr()
            then = self.block()
            orelse: s.Node | None = None
            if self.accept("else"):
                orelse = self.keyword_expr(self.tok) if self.at("if") else self.block()
            return s.If(t.line, t.col, cond, then, orelse)
        if word == "switch":
            return self.switch()
        if word == "while":
            self.next()
            return s.While(t.line, t.col, self.expr(), self.block())
        if word == "loop":
            self.next()
            return s.Loop(t.line, t.col, self.block())
        if word == "do":
            self.next()
            body = self.block()
            if self.accept("while"):
                until = False
            elif self.accept("until"):
                until = True
            else:
                raise self.error("expected 'while' or 'until' after a do block")
            return s.DoLoop(t.line, t.col, body, self.expr(), until)
        if word == "for":
            self.next()
            counter: str | None = None
            if self.accept("("):
                var = self.ident("the loop variable")
                self.expect(",")
                counter = self.ident("the counter variable")
                self.expect(")")
            else:
                var = self.ident("the loop variable")
            self.expect("in", "'in'")
            return s.For(t.line, t.col, var, counter, self.expr(), self.block())
        if word == "try":
            self.next()
            body = self.block()
            self.expect("catch", "'catch'")
            caught: str | None = None
            if self.accept("("):
                caught = self.ident("the error variable")
                self.expect(")")
            return s.Try(t.line, t.col, body, caught, self.block())
        if word == "fn":
            raise self.error("a function can only be defined at the top level of a script")
        if word == "eval":
            raise self.error("'eval' is disabled: a script may only run code that was reviewed")
        raise self.error(f"expected an expression, found {_describe(t)}")

    def switch(self) -> s.Node:
        t = self.next()
        subject = self.expr()
        self.expect("{", "'{' to open the switch")
        cases: list[tuple[list[s.Node], s.Node | None, s.Node]] = []
        while not self.at("}"):
            patterns: list[s.Node] = []
            if self.tok.kind == "ident" and self.tok.value == "_":
                self.next()
            else:
                patterns.append(self.expr(31))  # above '|', which separates patterns
                while self.accept("|"):
                    patterns.append(self.expr(31))
            guard = self.expr() if self.accept("if") else None
            self.expect("=>", "'=>'")
            body: s.Node = self.block() if self.at("{") else self.expr()
            cases.append((patterns, guard, body))
            if not self.accept(","):
                if not isinstance(body, s.Block) and not self.at("}"):
                    raise self.error("expected ',' between switch cases")
        self.expect("}")
        return s.Switch(t.line, t.col, subject, cases)

    def map_literal(self) -> s.Node:
        t = self.next()
        pairs: list[tuple[str, s.Node]] = []
        seen: set[str] = set()
        while not self.at("}"):
            k = self.tok
            if k.kind in ("ident", "str", "kw"):
                self.next()
                key = str(k.value)
            else:
                raise self.error(f"expected a property name, found {_describe(k)}")
            if key in seen:
                raise self.error(f"property '{key}' is given twice", k)
            seen.add(key)
            self.expect(":", "':'")
            pairs.append((key, self.expr()))
            if not self.accept(","):
                break
        self.expect("}", "'}' to close the object map")
        return s.MapLit(t.line, t.col, pairs)

    def closure(self) -> s.Node:
        t = self.next()
        params: list[str] = []
        if t.value == "|":
            while not self.at("|"):
                params.append(self.ident("a parameter name"))
                if not self.accept(","):
                    break
            self.expect("|", "'|' to close the parameters")
        self.enter()
        body = self.expr()
        self.depth -= 1
        return s.Closure(t.line, t.col, params, body)

    def template(self, t: Token) -> s.Node:
        parts: list[str | s.Node] = []
        for part in t.value:  # type: ignore[attr-defined]
            if isinstance(part, str):
                parts.append(part)
            else:
                text, line, col = part
                parts.append(parse_expression(text, self.path, line, col, self.depth + 1))
        return s.Template(t.line, t.col, parts)


def _describe(t: Token) -> str:
    if t.kind == "eof":
        return "the end of the script"
    if t.kind in ("op", "kw"):
        return f"'{t.value}'"
    if t.kind == "ident":
        return f"name '{t.value}'"
    return f"a {t.kind} literal"
