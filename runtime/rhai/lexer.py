"""Rhai's tokens, each with the line and column where it starts.

Hand-written rather than a lark lexer because two of Rhai's literals are not
regular: back-tick strings carry ``${...}`` interpolations that may hold
braces and strings of their own, and block comments nest. The lexer is one
left-to-right pass with no backtracking, so its cost is linear in the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from charter.runtime.rhai.errors import RhaiSyntaxError

__all__ = ["KEYWORDS", "Token", "tokenize"]

KEYWORDS = frozenset(
    {
        "let", "const", "if", "else", "switch", "while", "loop", "do", "until", "for", "in",
        "break", "continue", "return", "throw", "try", "catch", "fn", "true", "false",
        "private", "import", "export", "as", "global", "this", "eval",
    }
)  # fmt: skip

# Longest first, so "**=" is never read as "**" then "=".
_PUNCT = sorted(
    [
        "**=", "<<=", ">>=", "??=", "..=",
        "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
        "<<", ">>", "**", "..", "=>", "::", "?.", "?[", "??", "#{",
        "+", "-", "*", "/", "%", "=", "<", ">", "!", "&", "|", "^",
        "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "?",
    ],
    key=len,
    reverse=True,
)  # fmt: skip

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "$": "$"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # int, float, str, char, template, ident, kw, op, eof
    value: object
    line: int
    col: int


class _Reader:
    def __init__(self, text: str, path: str, line: int, col: int) -> None:
        self.text = text
        self.path = path
        self.i = 0
        self.line = line
        self.col = col

    def error(
        self, message: str, line: int | None = None, col: int | None = None
    ) -> RhaiSyntaxError:
        return RhaiSyntaxError(message, self.path, line or self.line, col or self.col)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def advance(self, n: int = 1) -> str:
        chunk = self.text[self.i : self.i + n]
        for ch in chunk:
            if ch == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
        self.i += n
        return chunk


def tokenize(text: str, path: str = "<script>", line: int = 1, col: int = 1) -> list[Token]:
    """Every token of ``text``, ending with an ``eof`` token."""
    r = _Reader(text, path, line, col)
    out: list[Token] = []
    n = len(text)
    while True:
        _skip_space(r)
        if r.i >= n:
            out.append(Token("eof", None, r.line, r.col))
            return out
        ch = text[r.i]
        line0, col0 = r.line, r.col
        if ch.isdigit():
            out.append(_number(r))
        elif ch.isalpha() or ch == "_":
            j = r.i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = r.advance(j - r.i)
            out.append(Token("kw" if word in KEYWORDS else "ident", word, line0, col0))
        elif ch == '"':
            out.append(Token("str", _string(r), line0, col0))
        elif ch == "#" and r.peek(1) in ('"', "#"):
            out.append(Token("str", _raw_string(r), line0, col0))
        elif ch == "'":
            out.append(_char(r))
        elif ch == "`":
            out.append(Token("template", _template(r), line0, col0))
        elif ch == "!" and text.startswith("in", r.i + 1) and not _ident_char(r.peek(3)):
            r.advance(3)
            out.append(Token("op", "!in", line0, col0))
        else:
            for p in _PUNCT:
                if text.startswith(p, r.i):
                    r.advance(len(p))
                    out.append(Token("op", p, line0, col0))
                    break
            else:
                raise r.error(f"unexpected character {ch!r}")


def _ident_char(ch: str) -> bool:
    return bool(ch) and (ch.isalnum() or ch == "_")


def _skip_space(r: _Reader) -> None:
    text = r.text
    while r.i < len(text):
        ch = text[r.i]
        if ch in " \t\r\n\f\v\ufeff":
            r.advance()
        elif text.startswith("//", r.i):
            end = text.find("\n", r.i)
            r.advance((len(text) if end < 0 else end) - r.i)
        elif text.startswith("/*", r.i):
            line0, col0 = r.line, r.col
            depth = 0
            while True:
                if r.i >= len(text):
                    raise r.error("this block comment is never closed", line0, col0)
                if text.startswith("/*", r.i):
                    depth += 1
                    r.advance(2)
                elif text.startswith("*/", r.i):
                    depth -= 1
                    r.advance(2)
                    if depth == 0:
                        break
                else:
                    r.advance()
        else:
            return


def _number(r: _Reader) -> Token:
    text, line0, col0 = r.text, r.line, r.col
    j = r.i
    if text.startswith(("0x", "0X", "0o", "0O", "0b", "0B"), j):
        base = {"x": 16, "o": 8, "b": 2}[text[j + 1].lower()]
        k = j + 2
        while k < len(text) and (text[k].isalnum() or text[k] == "_"):
            k += 1
        digits = r.advance(k - j)[2:].replace("_", "")
        try:
            value = int(digits, base)
        except ValueError:
            raise r.error(f"invalid number {text[j:k]!r}", line0, col0) from None
        return _int_token(r, value, text[j:k], line0, col0)
    k = j
    while k < len(text) and (text[k].isdigit() or text[k] == "_"):
        k += 1
    is_float = False
    # "1..5" is a range and "1.max(2)" a method call: only a digit after the
    # dot makes a float.
    if k < len(text) and text[k] == "." and k + 1 < len(text) and text[k + 1].isdigit():
        is_float = True
        k += 1
        while k < len(text) and (text[k].isdigit() or text[k] == "_"):
            k += 1
    if k < len(text) and text[k] in "eE":
        m = k + 1
        if m < len(text) and text[m] in "+-":
            m += 1
        if m < len(text) and text[m].isdigit():
            is_float = True
            k = m
            while k < len(text) and text[k].isdigit():
                k += 1
    lexeme = r.advance(k - j)
    if _ident_char(r.peek()):
        raise r.error(f"invalid number {lexeme + r.peek()!r}", line0, col0)
    if is_float:
        return Token("float", float(lexeme.replace("_", "")), line0, col0)
    return _int_token(r, int(lexeme.replace("_", "")), lexeme, line0, col0)


def _int_token(r: _Reader, value: int, lexeme: str, line: int, col: int) -> Token:
    if value > 2**63 - 1:
        raise r.error(f"the number {lexeme} does not fit a 64-bit integer", line, col)
    return Token("int", value, line, col)


def _escape(r: _Reader) -> str:
    line0, col0 = r.line, r.col
    r.advance()  # the backslash
    ch = r.advance()
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    width = {"x": 2, "u": 4, "U": 8}.get(ch)
    if width is None:
        raise r.error(f"invalid escape sequence '\\{ch}'", line0, col0)
    digits = r.advance(width)
    try:
        return chr(int(digits, 16))
    except ValueError:
        raise r.error(f"invalid escape sequence '\\{ch}{digits}'", line0, col0) from None


def _string(r: _Reader) -> str:
    line0, col0 = r.line, r.col
    r.advance()
    parts: list[str] = []
    while True:
        ch = r.peek()
        if not ch:
            raise r.error("this string is never closed", line0, col0)
        if ch == '"':
            r.advance()
            return "".join(parts)
        if ch == "\\":
            if r.peek(1) == "\n":
                # A line continuation: the newline and the next line's
                # leading blanks are not part of the string.
                r.advance(2)
                while r.peek() in (" ", "\t"):
                    r.advance()
                continue
            parts.append(_escape(r))
        elif ch == "\n":
            raise r.error("a string in double quotes cannot span lines (use a back-tick string)")
        else:
            parts.append(r.advance())


def _raw_string(r: _Reader) -> str:
    line0, col0 = r.line, r.col
    hashes = 0
    while r.peek() == "#":
        r.advance()
        hashes += 1
    if r.peek() != '"':
        raise r.error('a raw string starts with #"', line0, col0)
    r.advance()
    close = '"' + "#" * hashes
    end = r.text.find(close, r.i)
    if end < 0:
        raise r.error("this raw string is never closed", line0, col0)
    body = r.advance(end - r.i)
    r.advance(len(close))
    return body


def _char(r: _Reader) -> Token:
    line0, col0 = r.line, r.col
    r.advance()
    ch = _escape(r) if r.peek() == "\\" else r.advance()
    if not ch or r.peek() != "'":
        raise r.error("a character literal holds exactly one character", line0, col0)
    r.advance()
    return Token("char", ch, line0, col0)


def _template(r: _Reader) -> list[object]:
    """A back-tick string: literal text (no escapes; a doubled back-tick is
    one) and ``${expr}`` parts, kept as (source, line, col) to be parsed."""
    line0, col0 = r.line, r.col
    r.advance()
    parts: list[object] = []
    buf: list[str] = []
    while True:
        ch = r.peek()
        if not ch:
            raise r.error("this back-tick string is never closed", line0, col0)
        if ch == "`":
            if r.peek(1) == "`":
                r.advance(2)
                buf.append("`")
                continue
            r.advance()
            break
        if ch == "$" and r.peek(1) == "{":
            if buf:
                parts.append("".join(buf))
                buf = []
            r.advance(2)
            start, sline, scol = r.i, r.line, r.col
            _skip_interpolation(r, sline, scol)
            parts.append((r.text[start : r.i - 1], sline, scol))
            continue
        buf.append(r.advance())
    if buf or not parts:
        parts.append("".join(buf))
    return parts


def _skip_interpolation(r: _Reader, line0: int, col0: int) -> None:
    """Move past ``...}`` of an interpolation, minding nested braces and
    strings, with an explicit stack so nesting depth costs no recursion."""
    stack = ["{"]
    while stack:
        ch = r.peek()
        if not ch:
            raise r.error("this ${ interpolation is never closed", line0, col0)
        top = stack[-1]
        if top == "`":
            if ch == "`":
                stack.pop()
            elif ch == "$" and r.peek(1) == "{":
                stack.append("{")
                r.advance()
            r.advance()
            continue
        if ch == '"':
            _string(r)
            continue
        if ch == "'":
            _char(r)
            continue
        if ch == "`":
            stack.append("`")
        elif ch == "{":
            stack.append("{")
        elif ch == "}":
            stack.pop()
        r.advance()
