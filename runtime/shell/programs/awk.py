"""awk: a program is allowed only when a tokenizer proves it free of I/O and
execution.

awk is a full language: ``system()`` and ``|`` run commands, ``print >
FILE`` writes files, ``getline < FILE`` reads them, ``ENVIRON`` holds the
environment's secrets, ``ARGV``/``ARGC`` change which files are read, and
gawk adds ``@include``, ``@load`` (shared libraries), indirect calls
``@f()``, ``PROCINFO`` and ``SYMTAB``. The awk installed may be gawk, mawk
or the one true awk, so the rules hold for all of them:

* the program text is tokenized the way awk's own lexer does it, with the
  one context rule that matters: ``/`` starts a regular expression where an
  operand is expected (after an operator, ``(``, ``,``, ``;``, a newline,
  ``print``..., or the ``)`` that closes an ``if``/``while``/``for``
  header) and is division after an operand;
* anything the tokenizer cannot read (an unterminated string or regex, a
  ``/`` inside a bracket expression of a regex literal, which awks end
  differently, an unknown character) asks;
* the names above ask wherever they appear, even inside a string: a false
  ask costs a prompt, a missed one an escape;
* ``|`` (not ``||``) asks, and so does ``>``/``>>`` inside a ``print`` or
  ``printf`` statement unless it sends the output to ``"/dev/stdout"`` or
  ``"/dev/stderr"``.

Only a few options are known: ``-F``, ``-v``, ``--`` and gawk's ``-e``
(program text); ``-f`` (a program in a file the guard cannot see) and every
other option ask.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from charter.runtime.errors import CharterError
from charter.runtime.shell.programs.base import Checked, Issue

__all__ = ["AwkError", "awk", "awk_problem", "awk_writes", "exec_commands", "tokenize_awk"]


# A NamedTuple: a tenth of a frozen dataclass's cost to define at start-up.
class _Tok(NamedTuple):
    kind: str  # name, number, string, regex, op, newline
    text: str


class AwkError(CharterError):
    """The program is not something the tokenizer can read."""


# Where an operand is expected after these, a `/` starts a regex.
_REGEX_AFTER_NAMES = frozenset(
    {"print", "printf", "return", "case", "in", "else", "do", "delete", "exit", "getline"}
)
_CONTROL = frozenset({"if", "while", "for", "switch"})
_OPS = (
    "**=",
    "&&",
    "||",
    "|&",
    "++",
    "--",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "^=",
    "==",
    "<=",
    ">=",
    "!=",
    ">>",
    "!~",
    "**",
)
_SINGLE = "+-*/%^!><|?:~$=(){}[],;"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(
    r"(?:0[xX][0-9a-fA-F]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
)
_BLANK = " \t\r\f\v"

# Names that reach outside the program's input and output. They are judged on
# awk's own tokens: awk reads `1system(...)` as a number and a call, which no
# word-boundary search over the raw text sees. Inside strings and regular
# expressions they still ask (a false ask costs a prompt, a missed one an escape).
_DANGER_NAMES = frozenset(
    {"system", "getline", "ENVIRON", "PROCINFO", "SYMTAB", "FUNCTAB", "ARGV", "ARGC"}
)
_DANGER_IN_TEXT = re.compile(r"(system|getline|ENVIRON|PROCINFO|SYMTAB|FUNCTAB|ARGV|ARGC)|@")


def tokenize_awk(program: str) -> list[_Tok]:
    """awk's tokens, with comments and line continuations removed."""
    out: list[_Tok] = []
    parens: list[bool] = []  # for each open `(`: does it open a control header?
    i, n = 0, len(program)
    operand_done = False  # the last token ends an operand (so `/` divides)
    while i < n:
        c = program[i]
        if c in _BLANK:
            i += 1
            continue
        if c == "\\" and program.startswith("\n", i + 1):
            i += 2
            continue
        if c == "\\" and program.startswith("\r\n", i + 1):
            i += 3
            continue
        if c == "#":
            while i < n and program[i] != "\n":
                i += 1
            continue
        if c == "\n":
            out.append(_Tok("newline", c))
            operand_done = False
            i += 1
            continue
        if c == '"':
            j = i + 1
            while j < n and program[j] != '"':
                if program[j] == "\n":
                    raise AwkError("a string is not closed on its line")
                j += 2 if program[j] == "\\" else 1
            if j >= n:
                raise AwkError("a string is not closed")
            out.append(_Tok("string", program[i + 1 : j]))
            operand_done = True
            i = j + 1
            continue
        if c == "/" and not operand_done:
            j = i + 1
            in_bracket = False
            while j < n:
                d = program[j]
                if d == "\n":
                    raise AwkError("a regular expression is not closed on its line")
                if d == "\\":
                    j += 2
                    continue
                if in_bracket:
                    if d == "]":
                        in_bracket = False
                    elif d == "/":
                        raise AwkError(
                            "a / inside [...] in a regular expression is read differently "
                            "by different awks"
                        )
                elif d == "[":
                    in_bracket = True
                    if program.startswith("]", j + 1):
                        j += 1
                    elif program.startswith("^]", j + 1):
                        j += 2
                elif d == "/":
                    break
                j += 1
            if j >= n:
                raise AwkError("a regular expression is not closed")
            out.append(_Tok("regex", program[i + 1 : j]))
            operand_done = True
            i = j + 1
            continue
        m = _NAME.match(program, i)
        if m is not None:
            name = m.group()
            out.append(_Tok("name", name))
            operand_done = name not in _REGEX_AFTER_NAMES and name not in _CONTROL
            if name == "getline" and program[m.end() :].lstrip(_BLANK).startswith("/"):
                raise AwkError("a / after getline is read differently by different awks")
            i = m.end()
            continue
        m = _NUMBER.match(program, i)
        if m is not None and m.group():
            out.append(_Tok("number", m.group()))
            operand_done = True
            i = m.end()
            continue
        op = next((o for o in _OPS if program.startswith(o, i)), None)
        if op is None and c in _SINGLE:
            op = c
        if op is None:
            raise AwkError(f"awk has no token {c!r}")
        if op == "(":
            prev = out[-1] if out else None
            parens.append(prev is not None and prev.kind == "name" and prev.text in _CONTROL)
            operand_done = False
        elif op == ")":
            control = parens.pop() if parens else False
            # after `if (...)` a statement starts (a regex may follow); after
            # any other `)` an operator does
            operand_done = not control
        elif op in ("]",):
            operand_done = True
        elif op in ("++", "--"):
            pass  # postfix after an operand, prefix before one: the state stays
        else:
            operand_done = False
        out.append(_Tok("op", op))
        i += len(op)
    return out


_STATEMENT_END = frozenset({";", "}"})
_CONTINUES = frozenset({",", "{", "&&", "||", "do", "else"})
_STD_STREAMS = frozenset({"/dev/stdout", "/dev/stderr"})


def _danger(word: str) -> tuple[str, str]:
    if word in ("ENVIRON", "PROCINFO", "SYMTAB", "FUNCTAB"):
        return "credential-path", f"{word} reads the environment the runtime's secrets live in"
    if word == "system":
        return "exec-option", "system() runs a shell command"
    if word == "@":
        return "awk-program", "gawk's @include, @load and @-calls run code Charter cannot see"
    if word == "getline":
        return "awk-program", "getline reads from files or commands named at run time"
    return "awk-program", f"{word} changes which files awk reads"


def awk_problem(program: str) -> tuple[str, str] | None:
    """(rule, reason) when ``program`` may do more than read its input and
    print, else None."""
    if "@" in program:
        # Before tokenizing: the tokenizer has no `@` token, and this reason
        # says more than "cannot read".
        return _danger("@")
    try:
        tokens = tokenize_awk(program)
    except AwkError as err:
        return "awk-program", f"Charter cannot read this awk program ({err})"
    for tok in tokens:
        if tok.kind == "name" and tok.text in _DANGER_NAMES:
            return _danger(tok.text)
        if tok.kind in ("string", "regex"):
            m = _DANGER_IN_TEXT.search(tok.text)
            if m is not None:
                return _danger(m.group())
    if any(tok.kind == "op" and tok.text in ("|", "|&") for tok in tokens):
        return "exec-option", "| sends output to, or reads it from, a shell command"
    for op, target in _print_redirects(tokens):
        if target not in _STD_STREAMS:
            return "embedded-write", f"print {op} writes to a file"
    return None


def _print_redirects(tokens: list[_Tok]) -> Iterator[tuple[str, str | None]]:
    """Each ``>``/``>>`` of a print or printf statement, with the file it
    names: a string constant's text, or None for an expression (a field, a
    variable, a concatenation) known only at run time."""
    in_print = False
    depth = 0
    prev: _Tok | None = None
    for k, tok in enumerate(tokens):
        if tok.kind == "name" and tok.text in ("print", "printf"):
            in_print, depth = True, 0
        elif in_print:
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                depth -= 1
            elif tok.kind == "op" and tok.text in (">", ">>"):
                target = tokens[k + 1] if k + 1 < len(tokens) else None
                after = tokens[k + 2] if k + 2 < len(tokens) else None
                literal = (
                    target is not None
                    and target.kind == "string"
                    and (after is None or after.kind == "newline" or after.text in _STATEMENT_END)
                )
                yield tok.text, target.text if literal and target is not None else None
            elif depth <= 0 and (
                (tok.kind == "op" and tok.text in _STATEMENT_END)
                or (tok.kind == "newline" and (prev is None or prev.text not in _CONTINUES))
            ):
                in_print = False
        if tok.kind != "newline":
            prev = tok


def awk_writes(program: str) -> list[str | None]:
    """The files ``program``'s print and printf statements write with ``>``
    or ``>>``: a string constant's text, or None where the name is an
    expression known only at run time. Empty when the program cannot be
    tokenized (that already asks on its own)."""
    try:
        tokens = tokenize_awk(program)
    except AwkError:
        return []
    return [t for _, t in _print_redirects(tokens) if t not in _STD_STREAMS]


# --- the command line --------------------------------------------------------------------------

_FLAGS = frozenset("bcPrSnNs")
_LONG_FLAGS = frozenset(
    {
        "--posix",
        "--traditional",
        "--characters-as-bytes",
        "--re-interval",
        "--use-lc-numeric",
        "--no-optimize",
        "--sandbox",
        "--version",
    }
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def awk(args: Sequence[str]) -> Checked:
    """awk [-F fs] [-v var=val] [-e prog | prog] [file | var=val ...]."""
    text: set[int] = set()
    programs: list[tuple[int, str]] = []
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "--":
            text.add(i)
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        text.add(i)
        if a in _LONG_FLAGS:
            i += 1
            continue
        if a.startswith("--source="):
            programs.append((i, a.split("=", 1)[1]))
            i += 1
            continue
        if a.startswith("--"):
            return _ask(i, "awk-program", f"awk {a} is not an option Charter knows to be safe")
        j = 1
        while j < len(a):
            ch = a[j]
            if ch in "Fvef":
                value = a[j + 1 :]
                at = i
                if not value:
                    if i + 1 >= n:
                        return _ask(i, "awk-program", f"awk -{ch} needs a value")
                    i += 1
                    value, at = args[i], i
                    text.add(i)
                if ch == "f":
                    return _ask(
                        i,
                        "exec-option",
                        "awk -f runs a program from a file Charter cannot see; give the "
                        "program on the command line to run unprompted",
                    )
                if ch == "e":
                    programs.append((at, value))
                break
            if ch not in _FLAGS:
                return _ask(
                    i, "awk-program", f"awk -{ch} is not an option Charter knows to be safe"
                )
            j += 1
        i += 1
    if not programs:
        if i >= n:
            return _ask(-1, "awk-program", "awk without a program")
        programs.append((i, args[i]))
        text.add(i)
        i += 1
    for k in range(i, n):
        if _ASSIGNMENT.match(args[k]):
            text.add(k)  # a variable assignment between files, not a file
    writes = tuple((index, target) for index, program in programs for target in awk_writes(program))
    for index, program in programs:
        problem = awk_problem(program)
        if problem is not None:
            rule, why = problem
            return Checked(
                (
                    Issue(
                        rule,
                        index,
                        f"awk: {why}; use a program that only reads and prints to run unprompted",
                    ),
                ),
                writes=writes,
            )
    return Checked((), frozenset(text), writes=writes)


def exec_commands(args: Sequence[str]) -> list[tuple[int, str]]:
    """(argument index, command line) of each command a program runs with a
    string constant: ``system("...")``, ``print | "..."`` and ``"..." |
    getline`` (awk hands it to ``sh -c``). A program the tokenizer cannot
    read yields none: the checker already asks about it."""
    if not any("system" in a or "|" in a for a in args):
        return []
    programs: list[tuple[int, str]] = []
    i, n = 0, len(args)
    while i < n and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "--":
            i += 1
            break
        if a.startswith("--source="):
            programs.append((i, a.split("=", 1)[1]))
        elif not a.startswith("--") and len(a) > 1 and a[1] in "Fvef":
            if len(a) == 2 and i + 1 < n:
                i += 1
                if a[1] == "e":
                    programs.append((i, args[i]))
            elif a[1] == "e":
                programs.append((i, a[2:]))
        i += 1
    if not programs and i < n:
        programs.append((i, args[i]))
    out: list[tuple[int, str]] = []
    for index, program in programs:
        try:
            toks = tokenize_awk(program)
        except AwkError:
            continue
        for k, t in enumerate(toks):
            if t.kind != "string":
                continue
            before = toks[k - 1].text if k else ""
            after = toks[k + 1].text if k + 1 < len(toks) else ""
            call = before == "(" and k >= 2 and toks[k - 2].text == "system"
            if call or before in ("|", "|&") or after in ("|", "|&"):
                out.append((index, _unescape(t.text)))
    return out


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), raw)


def _ask(index: int, rule: str, message: str) -> Checked:
    return Checked((Issue(rule, index, message),))
