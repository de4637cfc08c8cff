"""Parsing a shell command line into Charter's syntax tree.

The grammar lives in ``bash.lark`` (LALR). The lexer is hand-written because
shell lexing is contextual: inside ``"..."`` a ``$(`` re-enters command
syntax, ``#`` opens a comment only at the start of a word, ``$((`` is
arithmetic only if its parentheses balance, and a heredoc's body is the text
after the next newline. Each rule below says what bash does; where bash is
subtler than this lexer, the lexer refuses (a :class:`ShellSyntaxError`), and
the classifier turns every refusal into "ask".

The tree is deliberately small: a :class:`Program` is the flat list of the
commands it runs (pipelines and ``&&``/``||``/``;`` lists only ever combine
decisions by "strictest wins", so their shape does not matter), each
:class:`SimpleCommand` holds :class:`Word` s and :class:`Redirect` s, and each
word keeps its :class:`Part` s so that nothing expanded can pass for a literal.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from charter.runtime.datafiles import read_text
from charter.runtime.shell.splice import Spliced, splice

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


Tok = tuple[str, int, int]  # (terminal, start, end)


class ShellSyntaxError(Exception):
    """The text is not shell Charter understands; ``pos`` is a 0-based offset."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class ShellTooLong(ShellSyntaxError):
    """The text has more tokens than the caller's budget allows."""


# --- the syntax tree ------------------------------------------------------------------------

# Part kinds whose value is only known when the shell runs.
EXPANSION_KINDS = frozenset(
    {
        "param",
        "param_brace",
        "arith",
        "legacy_arith",
        "backtick",
        "dollar",
        "cmdsub",
        "procsub",
    }
)


@dataclass(slots=True)
class Part:
    """One fragment of a word. ``value`` is the decoded text of a literal
    fragment and None for an expansion; ``inner`` holds a double-quoted
    string's own parts; ``body`` a substitution's parsed commands."""

    kind: str
    raw: str
    start: int
    end: int
    value: str | None = None
    inner: tuple[Part, ...] = ()
    body: Program | None = None
    # Unquoted glob characters, brace expansion and a leading tilde; only
    # meaningful on unquoted literal fragments.
    glob: bool = False
    brace: bool = False


@dataclass(slots=True)
class Word:
    """One shell word: its parts, span, and literal value when nothing in it expands."""

    parts: tuple[Part, ...]
    start: int
    end: int
    # The word after quote removal, or None when any part expands.
    value: str | None
    quoted: bool  # some part was quoted or escaped
    glob: bool
    brace: bool
    tilde: bool

    @property
    def raw(self) -> str:
        return "".join(p.raw for p in self.parts)

    def expansions(self) -> Iterator[Part]:
        """Every expanding part, including those inside double quotes."""
        for p in self.parts:
            if p.kind in EXPANSION_KINDS:
                yield p
            for q in p.inner:
                if q.kind in EXPANSION_KINDS:
                    yield q


@dataclass(frozen=True, slots=True)
class HereDoc:
    """A here-document's delimiter, body and whether expansion applies inside it."""

    delimiter: str
    quoted: bool  # a quoted delimiter turns expansion in the body off
    body: str
    terminated: bool


@dataclass(slots=True)
class Redirect:
    """A redirection: operator, file descriptor, target word and any here-document."""

    op: str  # the operator without its fd number: ">", ">>", ">|", "&>", "<", "<<", ">&", ...
    fd: str | None
    target: Word
    start: int
    end: int
    heredoc: HereDoc | None = None


@dataclass(slots=True)
class SimpleCommand:
    """A command's words and redirections, with its span in the text."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    start: int
    end: int


@dataclass(slots=True)
class Subshell:
    """A parenthesised group of commands and the redirections applied to it."""

    body: Program
    redirects: tuple[Redirect, ...]
    start: int
    end: int


Command = SimpleCommand | Subshell


@dataclass(slots=True)
class Program:
    """A command list: its commands in order and the separators between them."""

    commands: tuple[Command, ...]
    start: int
    end: int
    # Separators that were seen (";", "&", "&&", "||", "|", "|&", "\n").
    operators: tuple[str, ...] = field(default=())


# --- the lexer ------------------------------------------------------------------------------

# An unquoted literal run: anything but blanks, quotes, `\`, `$`, backtick and
# the metacharacters | & ; ( ) < >. A backslash escapes any one character.
# Only space, tab and newline are blanks to bash; `\r` and Unicode spaces are
# ordinary word characters, so they are word characters here too.
_LIT = re.compile(r"(?:[^ \t\n'\"\\$`|&;()<>]|\\[\s\S])+")
_BLANKS = re.compile(r"(?:[ \t]|\\\n)+")
_SQ = re.compile(r"'[^']*'")
_ANSIC = re.compile(r"\$'(?:[^'\\]|\\[\s\S])*'")
_DQ_TEXT = re.compile(r"(?:[^\"\\$`]|\\[\s\S]|\$(?![A-Za-z_0-9@*#?$!{(\[-]))+")
_PARAM = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
_REDIR = re.compile(r"([0-9]+)?(&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)")
_OPERATOR_KIND = {"&&": "ANDIF", "||": "ORIF", "|&": "PIPE", "|": "PIPE", ";": "SEMI", "&": "AMP"}
# One match per token in command syntax. Alternatives are tried in order:
# blanks; process substitution; a redirect with its optional fd number (so
# `2>x` is fd 2, while `22abc>x` fails here and becomes the word `22abc`);
# control operators (`;;` and `;&` only occur in `case`, which is refused);
# and a literal run. Quotes, `$`, backticks, parentheses, newlines and `#`
# are handled by hand because their meaning depends on context.
_NORMAL = re.compile(
    r"(?P<B>(?:[ \t]|\\\n)+)"
    r"|(?P<P>[<>]\()"
    r"|(?P<R>[0-9]*(?P<rop>&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<>|<&|<))"
    r"|(?P<O>;;|;&|&&|\|\||\|&|\||;|&)"
    r"|(?P<L>(?:[^ \t\n'\"\\$`|&;()<>]|\\[\s\S])+)"
)
# Where `#` may start a comment: at the start, or after a blank or operator.
_COMMENT_AFTER = frozenset(" \t\n;&|()<>")


@dataclass(slots=True)
class _Lexed:
    """The lexer's output: tokens, here-document bodies and comment spans."""

    tokens: list[Tok]
    heredocs: dict[int, HereDoc]  # keyed by the redirect token's start
    comments: list[tuple[int, int]]
    # the text the tokens index: the input with its line continuations removed
    text: str = ""
    spliced: Spliced | None = None
    # literal values taken from the original text (a quote that held a
    # backslash-newline, which is not a continuation there), by token start
    values: dict[int, str] = field(default_factory=dict)


def _skip_quoted_dq(text: str, i: int) -> int:
    """``text[i]`` is the ``"`` opening a string; return the index after its
    closing quote, stepping over substitutions that hold their own quotes."""
    n = len(text)
    i += 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "`":
            i = _skip_backtick(text, i)
        elif c == "$" and text.startswith("$(", i):
            i = _skip_parens(text, i + 1)
        elif c == "$" and text.startswith("${", i):
            i = _skip_braces(text, i + 1)
        else:
            i += 1
    raise ShellSyntaxError(n, "unterminated double quote")


def _skip_backtick(text: str, i: int) -> int:
    n = len(text)
    j = i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
        elif c == "`":
            return j + 1
        else:
            j += 1
    raise ShellSyntaxError(i, "unterminated backtick substitution")


def _skip_balanced(text: str, i: int, opener: str, closer: str, unclosed: str) -> int:
    """``text[i]`` is ``opener``; return the index after its matching ``closer``.

    Quotes, backticks and escapes are stepped over so a bracket inside them
    does not count. Inside ``${...}`` a nested ``$(`` is skipped whole, so a
    ``}`` inside a command substitution does not close the expansion; inside
    parentheses the depth count already covers ``$(`` without recursing.

    Every opener the scan passes is matched by the same scan, so the result
    for each is remembered (for the text being lexed): the lexer asks again
    at each nested ``$((`` or ``${``, and without the memo a long run of
    unclosed ones would cost quadratic time.
    """
    memo = _memo(text)
    known = memo.get((opener, i))
    if known is not None:
        if isinstance(known, ShellSyntaxError):
            raise known
        return known
    n = len(text)
    opened: list[int] = []  # positions of the openers not yet closed
    try:
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == opener:
                if opened:
                    seen = memo.get((opener, i))
                    if isinstance(seen, int):
                        i = seen  # matched before: step over it whole
                        continue
                    if seen is not None:
                        raise seen
                opened.append(i)
            elif c == closer:
                memo[(opener, opened.pop())] = i + 1
                if not opened:
                    return i + 1
            elif c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise ShellSyntaxError(i, "unterminated single quote")
                i = end
            elif c == '"':
                i = _skip_quoted_dq(text, i)
                continue
            elif c == "`":
                i = _skip_backtick(text, i)
                continue
            elif opener != "(" and c == "$" and text.startswith("$(", i):
                i = _skip_parens(text, i + 1)
                continue
            i += 1
        raise ShellSyntaxError(i, unclosed)
    except ShellSyntaxError as exc:
        # every opener still open fails the same way from where it stands
        for k in opened:
            memo[(opener, k)] = exc
        raise


# The memo of _skip_balanced for the text being lexed (one per thread).
_MEMO = threading.local()


def _memo(text: str) -> dict[tuple[str, int], int | ShellSyntaxError]:
    if getattr(_MEMO, "text", None) is not text:
        _MEMO.text = text
        _MEMO.table = {}
    table: dict[tuple[str, int], int | ShellSyntaxError] = _MEMO.table
    return table


def _skip_parens(text: str, i: int) -> int:
    """``text[i]`` is ``(``; return the index after the matching ``)``."""
    return _skip_balanced(text, i, "(", ")", "unbalanced parenthesis")


def _skip_braces(text: str, i: int) -> int:
    """``text[i]`` is ``{`` of ``${``; return the index after its ``}``."""
    return _skip_balanced(text, i, "{", "}", "unterminated ${...} expansion")


def _arith_end(text: str, i: int) -> int | None:
    """``text[i:]`` starts with ``$((``. Bash reads arithmetic only when the
    parentheses close as ``))``; otherwise it is a command substitution whose
    body starts with a subshell. Return the end of the arithmetic or None."""
    try:
        end = _skip_parens(text, i + 1)
    except ShellSyntaxError:
        return None
    return end if text[end - 2 : end] == "))" else None


def tokenize(raw: str) -> _Lexed:
    """Split ``raw`` into grammar tokens (see ``bash.lark``), after removing
    its line continuations as bash does (see :mod:`.splice`); the tokens
    index the result's ``text``."""
    sp = splice(raw)
    return _tokenize(raw if sp is None else sp.text, sp)


def _tokenize(text: str, sp: Spliced | None, max_tokens: int = -1) -> _Lexed:
    if max_tokens < 0:
        max_tokens = len(text) + 1  # a token holds at least one character
    values: dict[int, str] = {}
    tokens: list[Tok] = []
    heredocs: dict[int, HereDoc] = {}
    comments: list[tuple[int, int]] = []
    pending: list[tuple[int, str, bool, bool]] = []  # (redirect start, delimiter, quoted, strip)
    # A stack of modes: "n" (command syntax) or "d" (inside double quotes).
    # Each "n" frame opened by `$(`, `<(` or `>(` counts its own parentheses so
    # the `)` that closes it returns to the enclosing mode.
    modes: list[str] = ["n"]
    depths: list[int] = [0]
    n = len(text)
    i = 0
    expect_delim: tuple[int, bool] | None = None  # (redirect start, strip tabs)
    sub_close = -1  # the offset just after the `)` that closed a substitution
    append = tokens.append

    def tok(kind: str, start: int, end: int) -> None:
        append((kind, start, end))

    while i < n:
        if len(tokens) > max_tokens:
            raise ShellTooLong(i, f"more than {max_tokens} tokens")
        mode = modes[-1]
        c = text[i]
        if mode == "d":
            if c == '"':
                tok("DQ_CLOSE", i, i + 1)
                modes.pop()
                depths.pop()
                i += 1
                continue
            if c == "$":
                j = _dollar(text, i, tok, modes, depths, in_dq=True)
                if j:
                    i = j
                    continue
            elif c == "`":
                j = _skip_backtick(text, i)
                tok("BACKTICK", i, j)
                i = j
                continue
            m = _DQ_TEXT.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated double quote")
            tok("DQ_TEXT", i, m.end())
            i = m.end()
            continue

        # command syntax
        if c == "#" and (i == 0 or (text[i - 1] in _COMMENT_AFTER and i != sub_close)):
            end = text.find("\n", i)
            end = n if end < 0 else end
            cut = None if sp is None else sp.cut_between(i, end)
            if cut is not None:
                # a comment ends at the first newline of the original, even
                # one that follows a backslash: bash reads comments verbatim
                comments.append((i, cut))
                tok("NEWLINE", cut, cut)
                i = cut
                if pending:
                    i = _read_heredocs(text, i, pending, heredocs, sp)
                    pending.clear()
                continue
            comments.append((i, end))
            i = end
            continue
        if expect_delim is not None and c not in " \t\n|&;()<>":
            start, strip = expect_delim
            expect_delim = None
            raw = text[i : _word_end(text, i)]
            quoted = any(q in raw for q in "'\"\\")
            pending.append((start, _unquote_delimiter(raw), quoted, strip))
            # the delimiter is still lexed below as an ordinary word
        m = _NORMAL.match(text, i)
        if m is not None:
            group = m.lastgroup
            j = m.end()
            if group == "B":
                i = j
            elif group == "L":
                append(("LIT", i, j))
                i = j
            elif group == "R":
                append(("REDIR", i, j))
                if m.group("rop") in ("<<", "<<-"):
                    expect_delim = (i, m.group("rop") == "<<-")
                i = j
            elif group == "O":
                kind = _OPERATOR_KIND.get(m.group())
                if kind is None:
                    raise ShellSyntaxError(i, "case-statement separators are not supported")
                append((kind, i, j))
                i = j
            else:  # "P": `<(` or `>(`
                append(("PROCSUB_OPEN", i, j))
                modes.append("n")
                depths.append(0)
                i = j
            continue
        if c == "\n":
            tok("NEWLINE", i, i + 1)
            i += 1
            if pending:
                i = _read_heredocs(text, i, pending, heredocs, sp)
                pending.clear()
            continue
        if c == "$":
            j = _dollar(text, i, tok, modes, depths, in_dq=False)
            if j:
                if sp is not None and tokens[-1][0] == "ANSIC" and sp.cut_between(i + 1, j - 1):
                    # inside $'...' a backslash-newline is kept (and decoded)
                    body = sp.raw[sp.raw_at(i + 1) + 1 : sp.raw_at(j - 1)]
                    values[i] = decode_ansi_c(body)
                i = j
                continue
            tok("DOLLAR", i, i + 1)
            i += 1
            continue
        if c == "'":
            m = _SQ.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated single quote")
            tok("SQ", i, m.end())
            if sp is not None and sp.cut_between(i, m.end() - 1) is not None:
                # inside single quotes a backslash-newline is two characters
                values[i] = sp.raw[sp.raw_at(i) + 1 : sp.raw_at(m.end() - 1)]
            i = m.end()
            continue
        if c == '"':
            tok("DQ_OPEN", i, i + 1)
            modes.append("d")
            depths.append(0)
            i += 1
            continue
        if c == "`":
            j = _skip_backtick(text, i)
            tok("BACKTICK", i, j)
            i = j
            continue
        if c == "(":
            depths[-1] += 1
            tok("LPAREN", i, i + 1)
            i += 1
            continue
        if c == ")":
            tok("RPAREN", i, i + 1)
            i += 1
            if depths[-1] == 0:
                if len(modes) > 1:
                    modes.pop()
                    depths.pop()
                    # `$(...)` and `<(...)` are inside a word, which goes on:
                    # a `#` right after them is a character, not a comment
                    sub_close = i
                # else a stray `)`: the parser reports it
            else:
                depths[-1] -= 1
            continue
        raise ShellSyntaxError(i, "a lone backslash at the end of the command")
    if len(modes) > 1:
        what = "double quote" if modes[-1] == "d" else "parenthesis"
        raise ShellSyntaxError(n, f"unterminated {what}")
    if expect_delim is not None:
        raise ShellSyntaxError(n, "a heredoc without a delimiter")
    if pending:
        # bash accepts a heredoc whose body never arrives; so does Charter, as
        # an empty body (the command is never allowed automatically anyway).
        for start, delim, quoted, _strip in pending:
            heredocs[start] = HereDoc(delim, quoted, "", False)
    return _Lexed(tokens, heredocs, comments, text, sp, values)


def _word_end(text: str, i: int) -> int:
    """The end of the raw shell word starting at ``i`` (quotes included)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\n|&;()<>":
            return i
        if c == "\\":
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError(i, "unterminated single quote")
            i = end + 1
        elif c == '"':
            i = _skip_quoted_dq(text, i)
        else:
            i += 1
    return n


def _unquote_delimiter(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
        elif c in "'\"":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _read_heredocs(
    text: str,
    i: int,
    pending: list[tuple[int, str, bool, bool]],
    heredocs: dict[int, HereDoc],
    sp: Spliced | None,
) -> int:
    """Read the bodies of the pending here-documents from ``i``, the start
    of the line after their command; return where the command text resumes.
    An unquoted body is read like the rest of the text, continuations
    removed (so a delimiter can be joined from two lines, as bash joins
    it); a quoted one verbatim from the original text."""
    for start, delim, quoted, strip in pending:
        if quoted and sp is not None:
            raw_end = _read_heredoc(sp.raw, sp.raw_at(i), start, delim, quoted, strip, heredocs)
            i = sp.spliced_at(raw_end)
        else:
            i = _read_heredoc(text, i, start, delim, quoted, strip, heredocs)
    return i


def _read_heredoc(
    text: str,
    i: int,
    start: int,
    delim: str,
    quoted: bool,
    strip: bool,
    heredocs: dict[int, HereDoc],
) -> int:
    n = len(text)
    body: list[str] = []
    terminated = False
    while i < n:
        end = text.find("\n", i)
        line_end = n if end < 0 else end
        line = text[i:line_end]
        i = n if end < 0 else end + 1
        check = line.lstrip("\t") if strip else line
        if check == delim:
            terminated = True
            break
        body.append(line)
    heredocs[start] = HereDoc(delim, quoted, "\n".join(body), terminated)
    return i


def _dollar(
    text: str,
    i: int,
    tok: Any,
    modes: list[str],
    depths: list[int],
    *,
    in_dq: bool,
) -> int:
    """Lex the ``$`` construct at ``i``; return the index after it, or 0 when
    the ``$`` is literal there."""
    nxt = text[i + 1 : i + 2]
    if nxt == "(":
        if text.startswith("$((", i):
            end = _arith_end(text, i)
            if end is not None:
                tok("ARITH", i, end)
                return end
        tok("CMDSUB_OPEN", i, i + 2)
        modes.append("n")
        depths.append(0)
        return i + 2
    if nxt == "{":
        end = _skip_braces(text, i + 1)
        tok("PARAM_BRACE", i, end)
        return end
    if nxt == "[":
        end = text.find("]", i)
        if end < 0:
            raise ShellSyntaxError(i, "unterminated $[...] expansion")
        tok("LEGACY_ARITH", i, end + 1)
        return end + 1
    if not in_dq:
        if nxt == "'":
            m = _ANSIC.match(text, i)
            if m is None:
                raise ShellSyntaxError(i, "unterminated $'...' string")
            tok("ANSIC", i, m.end())
            return m.end()
        if nxt == '"':
            # $"..." (locale translation) is a double-quoted string to Charter.
            tok("DQ_OPEN", i, i + 2)
            modes.append("d")
            depths.append(0)
            return i + 2
    m = _PARAM.match(text, i)
    if m is not None:
        tok("PARAM", i, m.end())
        return m.end()
    return 0


# --- decoding -------------------------------------------------------------------------------

_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_ESC = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.)|(.))",
    re.S,
)


def decode_ansi_c(body: str) -> str:
    """Decode the inside of ``$'...'`` as bash does (so ``$'\\x72m'`` is ``rm``)."""

    def one(m: re.Match[str]) -> str:
        simple, octal, hx, u4, u8, ctrl, other = m.groups()
        if simple is not None:
            return _ANSI_SIMPLE[simple]
        if octal is not None:
            return chr(int(octal, 8) & 0xFF)
        for h in (hx, u4, u8):
            if h is not None:
                code = int(h, 16)
                return chr(code) if code < 0x110000 else "\ufffd"
        if ctrl is not None:
            return chr(ord(ctrl) & 0x1F)
        return "\\" + other

    out = _ANSI_ESC.sub(one, body)
    # bash builds the string in C: an escaped NUL (\0, \x00, \u0000, \c@)
    # ends it, and the rest of the quote is dropped
    nul = out.find("\x00")
    return out if nul < 0 else out[:nul]


_GLOB_CHARS = frozenset("*?[")
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_ESCAPED = re.compile(r"\\[\s\S]")


def _brace_shape(plain: str) -> bool:
    """An unquoted `{` before an unquoted `}` with a `,` or `..` between
    (over-approximating bash's brace expansion, in linear time)."""
    a = plain.find("{")
    b = plain.rfind("}")
    return 0 <= a < b and ("," in plain[a:b] or ".." in plain[a:b])


def _decode_lit(raw: str, start: int) -> Part:
    """An unquoted fragment: drop escapes and note unescaped glob and brace
    characters (which the shell would expand)."""
    if "\\" not in raw:
        glob = "*" in raw or "?" in raw or ("[" in raw and "]" in raw[raw.index("[") :])
        brace = "{" in raw and "}" in raw and ("," in raw or ".." in raw)
        return Part("lit", raw, start, start + len(raw), raw, glob=glob, brace=brace)
    out: list[str] = []
    plain: list[str] = []  # unescaped characters only, to look for glob syntax
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
                plain.append("\x00")
            i += 2
            continue
        out.append(c)
        plain.append(c)
        i += 1
    p = "".join(plain)
    glob = "*" in p or "?" in p or ("[" in p and "]" in p[p.index("[") :])
    brace = "{" in p and "}" in p and ("," in p or ".." in p)
    return Part("lit", raw, start, start + n, "".join(out), glob=glob, brace=brace)


def _decode_dq_text(raw: str) -> str:
    if "\\" not in raw:
        return raw
    # Inside double quotes a backslash only escapes $ ` " \ and newline.
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _part_from_token(t: Tok, text: str, values: dict[int, str] | None = None) -> Part:
    kind, start, end = t
    raw = text[start:end]
    if kind == "LIT":
        return _decode_lit(raw, start)
    if kind == "SQ":
        v = values.get(start) if values else None
        return Part("sq", raw, start, end, raw[1:-1] if v is None else v)
    if kind == "ANSIC":
        v = values.get(start) if values else None
        return Part("ansic", raw, start, end, decode_ansi_c(raw[2:-1]) if v is None else v)
    if kind == "DQ_TEXT":
        return Part("dqtext", raw, start, end, _decode_dq_text(raw))
    return Part(_KIND_OF_TOKEN[kind], raw, start, end)


_KIND_OF_TOKEN = {
    "PARAM": "param",
    "PARAM_BRACE": "param_brace",
    "ARITH": "arith",
    "LEGACY_ARITH": "legacy_arith",
    "BACKTICK": "backtick",
    "DOLLAR": "dollar",
}


def _make_word(parts: list[Part], text: str) -> Word:
    if len(parts) == 1 and parts[0].kind == "lit":
        # the common case: one unquoted literal run
        p = parts[0]
        raw = p.raw
        tilde = raw.startswith("~") or (
            ("=~" in raw or ":~" in raw) and _ASSIGNMENT_WORD.match(raw) is not None
        )
        return Word((p,), p.start, p.end, p.value, "\\" in raw, p.glob, p.brace, tilde)
    value_parts: list[str] = []
    literal = True
    quoted = False
    glob = brace = False
    for p in parts:
        if p.value is None:
            literal = False
        else:
            value_parts.append(p.value)
        if p.kind == "lit":
            glob = glob or p.glob
            brace = brace or p.brace
            if "\\" in p.raw:
                quoted = True
        else:
            quoted = True
    first = parts[0]
    tilde = first.kind == "lit" and first.raw.startswith("~")
    if first.kind == "lit" and _ASSIGNMENT_WORD.match(first.raw):
        # bash expands a tilde after `=` or `:` in a word that looks like an
        # assignment, even as a command's argument (`a=~/x`)
        tilde = tilde or any(p.kind == "lit" and "~" in p.raw for p in parts)
    if not (glob and brace):
        # Brace expansion and globbing apply to the whole word, quotes and
        # all: `{"a",b}` is two words and `x["y"]` a pattern, although no
        # one fragment holds both brackets. Judge the word's unquoted
        # characters together (a quoted or escaped one becomes NUL).
        plain = "".join(
            _ESCAPED.sub("\x00\x00", p.raw) if p.kind == "lit" else "\x00" * len(p.raw)
            for p in parts
        )
        brace = brace or _brace_shape(plain)
        if not glob:
            k = plain.find("[")
            glob = k >= 0 and "]" in "".join(p.raw for p in parts)[k:]
    return Word(
        tuple(parts),
        first.start,
        parts[-1].end,
        "".join(value_parts) if literal else None,
        quoted,
        glob,
        brace,
        tilde,
    )


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
    inner = tuple(c if type(c) is Part else _part_from_token(c, text) for c in flat[1:-1])
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
        p = c if type(c) is Part else _part_from_token(c, text, ctx.values)
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
    w = _make_word(parts, text)
    if pending is None:
        words.append(w)
        return
    m = _REDIR.match(text, pending[1], pending[2])
    assert m is not None
    start = pending[1]
    fd = fd_var if fd_var is not None else m.group(1)
    redirects.append(Redirect(m.group(2), fd, w, start, w.end, ctx.heredocs.get(start)))


@dataclass(slots=True)
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


@dataclass(frozen=True, slots=True)
class _Table:
    """lark's LALR table, re-keyed for a tight loop: ``actions[state][terminal]``
    is ``(True, next_state)`` for a shift or ``(False, rule)`` for a reduce,
    where ``rule`` is ``(origin, length, builder)``; ``gotos[state][origin]``
    is the state after a reduction."""

    actions: dict[int, dict[str, tuple[bool, Any]]]
    gotos: dict[int, dict[str, int]]
    start: int
    end: int
    # States whose only action is one reduction (other than to `start`): the
    # loop reduces there at once instead of first looking at the next token,
    # which is the standard LALR "default reduction" and saves a round trip
    # per word.
    defaults: dict[int, tuple[str, int, Any]]


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
    defaults: dict[int, tuple[str, int, Any]] = {}
    for state_id, acts in actions.items():
        kinds = set(acts.values())
        if len(kinds) == 1:
            ((is_shift, rule),) = kinds
            if not is_shift and rule[0] != "start":
                defaults[state_id] = rule
    return _Table(actions, gotos, data["start"], data["end"], defaults)


def _drive(tokens: list[Tok], text: str, ctx: _Ctx) -> Program:
    table = build_parser()
    actions = table.actions
    gotos = table.gotos
    defaults = table.defaults
    states = [table.start]
    values: list[Any] = []
    end_tok: Tok = ("$END", len(text), len(text))
    for t in [*tokens, end_tok]:
        kind = t[0]
        while True:
            rule = defaults.get(states[-1])
            if rule is None:
                act = actions[states[-1]].get(kind)
                if act is None:
                    raise ShellSyntaxError(t[1], _unexpected(t, text))
                if act[0]:
                    states.append(act[1])
                    values.append(t)
                    break
                rule = act[1]
            name, size, builder = rule
            if builder is None and size == 2 and type(values[-2]) is _Splice:
                # the hot path: a `+`/`*` helper rule growing by one element
                last = values.pop()
                states.pop()
                states.pop()
                value: Any = values.pop()
                if type(last) is _Splice:
                    value.extend(last)
                else:
                    value.append(last)
            else:
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
            states.append(gotos[states[-1]][name])
            values.append(value)
    raise ShellSyntaxError(len(text), "the command ends too early")


def _unexpected(t: Tok, text: str) -> str:
    if t[0] == "$END":
        return "the command ends too early"
    return f"unexpected {text[t[1] : t[2]]!r}"


@dataclass(slots=True)
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
        lexed = _tokenize(text, sp, max_tokens)
        program = _drive(lexed.tokens, text, _Ctx(lexed.heredocs, lexed.values))
    except ShellSyntaxError as exc:
        return ParseResult(None, exc, (), text, sp)
    except RecursionError:
        return ParseResult(None, ShellSyntaxError(0, "nesting too deep"), (), text, sp)
    return ParseResult(program, None, tuple(lexed.comments), text, sp, len(lexed.tokens))
