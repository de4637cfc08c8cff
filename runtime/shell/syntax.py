"""Parsing a shell command line into Charter's syntax tree.

The grammar lives in ``bash.lark`` (LALR); the tokens come from the
hand-written lexer in :mod:`.lexer` (after :mod:`.splice` has removed line
continuations as bash does), words are decoded by :mod:`.words`, and the
tree's types are in :mod:`.tree` (re-exported here). This module walks the
LALR table and builds the tree.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from charter.runtime.datafiles import read_text
from charter.runtime.shell.lexer import REDIRECT_OPERATOR, lex, tokenize
from charter.runtime.shell.splice import Spliced, splice
from charter.runtime.shell.tree import (
    EXPANSION_KINDS,
    Command,
    HereDoc,
    Part,
    Program,
    Redirect,
    ShellSyntaxError,
    ShellTooLong,
    SimpleCommand,
    Subshell,
    Tok,
    Word,
)
from charter.runtime.shell.words import decode_ansi_c, literal_word, make_word, part_from_token

__all__ = [
    "EXPANSION_KINDS",
    "HereDoc",
    "ParseResult",
    "Part",
    "Program",
    "Redirect",
    "ShellSyntaxError",
    "ShellTooLong",
    "SimpleCommand",
    "Subshell",
    "Word",
    "build_parser",
    "decode_ansi_c",
    "parse",
    "tokenize",
]


# --- the tree builder -------------------------------------------------------------------------
#
# Charter drives lark's LALR table with its own loop rather than calling
# ``Lark.parse``: the table, and therefore the language accepted, is exactly
# the one lark computes from ``bash.lark``, but skipping lark's per-token
# objects and generic tree-building callbacks makes a parse several times
# faster, which is what keeps a decision inside the guard's time budget.


class _Splice(list[Any]):
    """The children of a rule lark inlines (``_sep``, the ``+``/``*`` helper
    rules): spliced into the parent's children."""


class _Chain:
    """Commands and operators collected by ``and_or`` and ``pipeline``."""

    __slots__ = ("commands", "ops")

    def __init__(self, commands: list[Command], ops: list[str]) -> None:
        self.commands = commands
        self.ops = ops


def _flatten(children: list[Any]) -> list[Any]:
    out: list[Any] = []
    for c in children:
        if type(c) is _Splice:
            out.extend(c)
        else:
            out.append(c)
    return out


def _build_chain(children: list[Any], text: str) -> _Chain:
    if len(children) == 1:
        # one command, or one pipeline: the usual case, and nothing to merge
        # (chains are never changed once built, so one can be shared)
        only = children[0]
        if type(only) is _Chain:
            return only
        if type(only) is not _Splice and type(only) is not tuple:
            return _Chain([only], [])
    commands: list[Command] = []
    ops: list[str] = []
    for c in _flatten(children):
        if type(c) is tuple:
            ops.append(text[c[1] : c[2]])
        elif type(c) is _Chain:
            commands.extend(c.commands)
            ops.extend(c.ops)
        else:
            commands.append(c)
    return _Chain(commands, ops)


def _build_start(children: list[Any], text: str, ctx: _Ctx) -> Program:
    chain = _build_chain(children, text)
    commands = chain.commands
    if commands:
        return Program(tuple(commands), commands[0].start, commands[-1].end, tuple(chain.ops))
    return Program((), 0, 0, tuple(chain.ops))


def _build_simple(children: list[Any], text: str, ctx: _Ctx) -> SimpleCommand:
    words, redirects = _group(_flatten(children), text, ctx)
    if not redirects:
        # words come in text order
        return SimpleCommand(tuple(words), (), words[0].start, words[-1].end)
    starts = [w.start for w in words] + [r.start for r in redirects]
    ends = [w.end for w in words] + [r.end for r in redirects]
    return SimpleCommand(tuple(words), tuple(redirects), min(starts), max(ends))


def _build_subshell(children: list[Any], text: str, ctx: _Ctx) -> Subshell:
    flat = _flatten(children)
    lparen, body, rparen = flat[0], flat[1], flat[2]
    words, redirects = _group(flat[3:], text, ctx)
    if words:
        raise ShellSyntaxError(words[0].start, "a word after a subshell's closing parenthesis")
    end = max([rparen[2]] + [r.end for r in redirects])
    return Subshell(body, tuple(redirects), lparen[1], end)


def _build_dq(children: list[Any], text: str, ctx: _Ctx) -> Part:
    flat = _flatten(children)
    start, end = flat[0][1], flat[-1][2]
    inner = tuple(c if type(c) is Part else part_from_token(c, text) for c in flat[1:-1])
    literal = all(p.value is not None for p in inner)
    value = "".join(p.value or "" for p in inner) if literal else None
    return Part("dq", text[start:end], start, end, value, inner=inner)


def _build_cmd_sub(children: list[Any], text: str, ctx: _Ctx) -> Part:
    open_t, body, close_t = children
    start, end = open_t[1], close_t[2]
    return Part("cmdsub", text[start:end], start, end, None, body=body)


def _build_proc_sub(children: list[Any], text: str, ctx: _Ctx) -> Part:
    open_t, body, close_t = children
    start, end = open_t[1], close_t[2]
    return Part("procsub", text[start:end], start, end, None, body=body)


# `{name}` right before a redirect operator names the descriptor bash opens
_FD_VAR = re.compile(r"^\{[A-Za-z_][A-Za-z0-9_]*\}$")


def _group(children: list[Any], text: str, ctx: _Ctx) -> tuple[list[Word], list[Redirect]]:
    """Glue adjacent fragments into words and attach each redirect operator
    to the word that follows it."""
    words: list[Word] = []
    redirects: list[Redirect] = []
    current: list[Part] = []
    pending: Tok | None = None
    fd_var: str | None = None
    for c in children:
        if type(c) is tuple and c[0] == "REDIR":
            if (
                len(current) == 1
                and current[0].end == c[1]
                and current[0].kind == "lit"
                and _FD_VAR.match(current[0].raw)
                and pending is None
                and text[c[1]] in "<>&"
            ):
                # `{name}>file`: bash opens a new descriptor and stores its
                # number in $name; the braces are part of the redirect
                fd_var = current[0].raw
                current = []
                pending = c
                continue
            if current:
                _flush(current, pending, words, redirects, text, ctx, fd_var)
                current = []
                pending = fd_var = None
            if pending is not None:
                raise ShellSyntaxError(c[1], "a redirect without a target")
            pending = c
            continue
        p = c if type(c) is Part else part_from_token(c, text, ctx.values)
        if current and current[-1].end != p.start:
            _flush(current, pending, words, redirects, text, ctx, fd_var)
            current = []
            pending = fd_var = None
        current.append(p)
    if current:
        _flush(current, pending, words, redirects, text, ctx, fd_var)
    elif pending is not None:
        raise ShellSyntaxError(pending[1], "a redirect without a target")
    return words, redirects


def _flush(
    parts: list[Part],
    pending: Tok | None,
    words: list[Word],
    redirects: list[Redirect],
    text: str,
    ctx: _Ctx,
    fd_var: str | None = None,
) -> None:
    w = make_word(parts, text)
    if pending is None:
        words.append(w)
        return
    m = REDIRECT_OPERATOR.match(text, pending[1], pending[2])
    assert m is not None
    start = pending[1]
    fd = fd_var if fd_var is not None else m.group(1)
    redirects.append(Redirect(m.group(2), fd, w, start, w.end, ctx.heredocs.get(start)))


# The parser's mutable holders compare by identity (nothing compares them by
# value); _Table is a NamedTuple, a tenth of a frozen dataclass's cost to
# define at start-up.
@dataclass(slots=True, eq=False)
class _Ctx:
    """Tree-building context: what the lexer found beside the tokens."""

    heredocs: dict[int, HereDoc]
    values: dict[int, str]


_BUILDERS: dict[str, Any] = {
    "start": _build_start,
    "simple": _build_simple,
    "subshell": _build_subshell,
    "dq": _build_dq,
    "cmd_sub": _build_cmd_sub,
    "proc_sub": _build_proc_sub,
}


def _build_and_or(children: list[Any], text: str, ctx: _Ctx) -> _Chain:
    return _build_chain(children, text)


_BUILDERS["and_or"] = _build_and_or
_BUILDERS["pipeline"] = _build_and_or


class _Table(NamedTuple):
    """lark's LALR table, re-keyed for a tight loop: ``actions[state][terminal]``
    is ``(True, next_state)`` for a shift or ``(False, rule)`` for a reduce,
    where ``rule`` is ``(origin, length, builder)``; ``gotos[state][origin]``
    is the state after a reduction.

    A state whose only action is one reduction (other than to ``start``)
    reduces on every terminal: the standard LALR "default reduction", which
    saves a round trip per word. It is folded into the row (the reduction
    under every terminal the lexer can produce), so the loop does one lookup
    per step; an error is still found, on the next shift, exactly where the
    table without defaults would not reach it either."""

    actions: dict[int, dict[str, tuple[bool, Any]]]
    gotos: dict[int, dict[str, int]]
    start: int
    end: int


@functools.cache
def build_parser() -> _Table:
    """The LALR table for ``bash.lark``, once per process: loaded from the
    table shipped beside the grammar when it was computed from this exact
    grammar text, else computed with lark (see :mod:`.tablegen`). No grammar
    cache file is written, and nothing is unpickled: lark's own cache is a
    pickle in a shared temp directory, which a security tool must not load."""
    from charter.runtime.shell import tablegen

    grammar = tablegen.grammar_text()
    data: Any = None
    try:
        shipped = read_text("charter.runtime.shell", __file__, "data", tablegen.TABLE_FILE)
        data = json.loads(shipped)
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("grammar_sha256") != tablegen.grammar_digest(grammar):
        data = tablegen.export_table(grammar)
    rules: list[tuple[str, int, Any]] = []
    for name, length, kind in data["rules"]:
        builder: Any = (
            None if kind == "splice" else "expand1" if kind == "expand1" else _BUILDERS[name]
        )
        rules.append((name, length, builder))
    actions: dict[int, dict[str, tuple[bool, Any]]] = {}
    for state, acts in data["actions"].items():
        actions[int(state)] = {
            sym: (True, arg) if shift else (False, rules[arg]) for sym, (shift, arg) in acts.items()
        }
    gotos = {int(state): dict(goto) for state, goto in data["gotos"].items()}
    terminals = {sym for acts in actions.values() for sym in acts} | {"$END"}
    for state_id, acts in actions.items():
        kinds = set(acts.values())
        if len(kinds) == 1:
            ((is_shift, rule),) = kinds
            if not is_shift and rule[0] != "start":
                actions[state_id] = dict.fromkeys(terminals, (False, rule))
    return _Table(actions, gotos, data["start"], data["end"])


def _drive(tokens: list[Tok], text: str, ctx: _Ctx) -> Program:
    table = build_parser()
    actions = table.actions
    gotos = table.gotos
    state = table.start  # always states[-1]
    states = [state]
    values: list[Any] = []
    n = len(tokens)
    end_tok: Tok = ("$END", len(text), len(text))
    k = 0
    while k <= n:
        t = tokens[k] if k < n else end_tok
        k += 1
        kind = t[0]
        while True:
            act = actions[state].get(kind)
            if act is None:
                raise ShellSyntaxError(t[1], _unexpected(t, text))
            if act[0]:
                state = act[1]
                states.append(state)
                values.append(t)
                break
            name, size, builder = act[1]
            if builder is None and size == 2 and type(values[-2]) is _Splice:
                # the hot path: a `+`/`*` helper rule growing by one element
                last = values.pop()
                del states[-2:]
                value: Any = values[-1]
                if type(last) is _Splice:
                    value.extend(last)
                else:
                    value.append(last)
                state = gotos[states[-1]][name]
                states.append(state)
                continue
            if size:
                children = values[-size:]
                del values[-size:]
                del states[-size:]
            else:
                children = []
            if builder is None:
                if children and type(children[0]) is _Splice:
                    # grow the helper rule's list in place: copying it
                    # would make long lists (`ls; ls; ...`) quadratic
                    value = children[0]
                    for c in children[1:]:
                        if type(c) is _Splice:
                            value.extend(c)
                        else:
                            value.append(c)
                else:
                    value = _Splice(_flatten(children))
            elif builder == "expand1":
                value = children[0]
            else:
                value = builder(children, text, ctx)
            if name == "start" and len(states) == 1 and kind == "$END":
                assert isinstance(value, Program)
                return value
            state = gotos[states[-1]][name]
            states.append(state)
            values.append(value)
    raise ShellSyntaxError(len(text), "the command ends too early")


# --- the flat fast path ----------------------------------------------------------------------
#
# Most command lines are simple commands joined by `|`, `&&`, `||`, `;`,
# `&` and newlines, with no parentheses anywhere (no subshell, `$(...)` or
# `<(...)`). For those the grammar's tree is known without the table: a
# list of simple commands and the separators between them in text order.
# _flat builds exactly the tree _drive would, with the same builders, in one
# pass and no parser stack. It only answers when the tokens are in that
# shape and every builder succeeds; anything else (a nesting token, an
# operator where a command must start, a builder's error) returns None and
# the text goes through _drive, so the language accepted and every error
# and its position stay the table's. tests/shell/test_flat_parse.py checks
# the two agree on every golden command and a generated sample.

# tokens that are, on their own, one element of a simple command
_ELEMENT = frozenset(
    {"LIT", "SQ", "ANSIC", "PARAM", "PARAM_BRACE", "ARITH", "LEGACY_ARITH", "BACKTICK", "DOLLAR"}
    | {"REDIR"}
)
# tokens a double-quoted string holds when it holds no `$(...)`
_DQ_INNER = frozenset({"DQ_TEXT", "PARAM", "PARAM_BRACE", "ARITH", "LEGACY_ARITH", "BACKTICK"})
# separators after which another command must follow (`a |`, `a &&` end too early)
_JOINS = frozenset({"PIPE", "ANDIF", "ORIF"})
# separators that may end the list (`a;`, `a &`, a newline)
_ENDS = frozenset({"SEMI", "AMP", "NEWLINE"})


def _flat(tokens: list[Tok], text: str, ctx: _Ctx) -> Program | None:
    """The tree of a flat command list (see above), or None."""
    commands: list[Command] = []
    ops: list[str] = []
    n = len(tokens)
    k = 0
    while k < n and tokens[k][0] == "NEWLINE":  # `start: NEWLINE* ...`
        t = tokens[k]
        ops.append(text[t[1] : t[2]])
        k += 1
    while k < n:
        children: list[Any] = []
        # every element a LIT token of its own (no redirect, nothing glued):
        # each is one literal word, built directly (what _group would make)
        plain = True
        while k < n:
            t = tokens[k]
            kind = t[0]
            if kind in _ELEMENT:
                if plain and (kind != "LIT" or (children and children[-1][2] == t[1])):
                    plain = False
                children.append(t)
                k += 1
            elif kind == "DQ_OPEN":
                plain = False
                j = k + 1
                while j < n and tokens[j][0] in _DQ_INNER:
                    j += 1
                if j == n or tokens[j][0] != "DQ_CLOSE":
                    return None  # a `$(` inside, or unclosed: the table decides
                children.append(_build_dq(tokens[k : j + 1], text, ctx))
                k = j + 1
            else:
                break
        if not children:
            return None  # an operator or a parenthesis where a command starts
        if plain:
            words = tuple([literal_word(text, t[1], t[2]) for t in children])
            commands.append(SimpleCommand(words, (), words[0].start, words[-1].end))
        else:
            commands.append(_build_simple(children, text, ctx))
        if k == n:
            break
        t = tokens[k]
        kind = t[0]
        if kind in _JOINS:
            ops.append(text[t[1] : t[2]])
            k += 1
        elif kind in _ENDS:
            ops.append(text[t[1] : t[2]])
            k += 1
        else:
            return None  # a parenthesis or `$(`: the table builds nested trees
        while k < n and tokens[k][0] == "NEWLINE":  # `NEWLINE*` after any separator
            t = tokens[k]
            ops.append(text[t[1] : t[2]])
            k += 1
        if k == n and kind in _JOINS:
            return None  # `a |` ends too early: the table reports it
    if not commands:
        return Program((), 0, 0, tuple(ops))
    return Program(tuple(commands), commands[0].start, commands[-1].end, tuple(ops))


def _tree(tokens: list[Tok], text: str, ctx: _Ctx) -> Program:
    """The tree of ``tokens``: the flat path's when it answers, else the table's."""
    try:
        flat = _flat(tokens, text, ctx)
    except ShellSyntaxError:
        flat = None  # the table finds the first error, where it finds it
    return flat if flat is not None else _drive(tokens, text, ctx)


def _unexpected(t: Tok, text: str) -> str:
    if t[0] == "$END":
        return "the command ends too early"
    return f"unexpected {text[t[1] : t[2]]!r}"


@dataclass(slots=True, eq=False)
class ParseResult:
    """A parse's program, or the syntax error that stopped it, and its comments."""

    program: Program | None
    error: ShellSyntaxError | None
    comments: tuple[tuple[int, int], ...] = ()
    # The text every offset above indexes: the input with its line
    # continuations removed (the input itself when it has none).
    text: str = ""
    spliced: Spliced | None = None
    tokens: int = 0  # how many tokens the text had

    def raw_offset(self, pos: int) -> int:
        """The input's offset for an offset into :attr:`text`."""
        return pos if self.spliced is None else self.spliced.raw_at(pos)


def parse(raw: str, *, max_tokens: int = -1) -> ParseResult:
    """Parse ``raw``; never raises on any input. With ``max_tokens`` >= 0, a
    text of more tokens is not parsed (the error is a :class:`ShellTooLong`)."""
    sp = splice(raw)
    text = raw if sp is None else sp.text
    try:
        lexed = lex(text, sp, max_tokens)
        program = _tree(lexed.tokens, text, _Ctx(lexed.heredocs, lexed.values))
    except ShellSyntaxError as exc:
        return ParseResult(None, exc, (), text, sp)
    except RecursionError:
        return ParseResult(None, ShellSyntaxError(0, "nesting too deep"), (), text, sp)
    return ParseResult(program, None, tuple(lexed.comments), text, sp, len(lexed.tokens))
