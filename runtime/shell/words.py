"""Shell words from tokens: decoding quotes and escapes, and what expands.

Each token of a word becomes a :class:`~.tree.Part` holding its decoded
value (None for an expansion), and :func:`make_word` glues a word's parts
and decides, for the word as a whole, whether bash will glob it, brace-
expand it or expand a tilde in it (bash decides that over the whole word,
quotes and all, so no single part can).
"""

from __future__ import annotations

import re

from charter.runtime.shell.tree import Part, Tok, Word

__all__ = ["decode_ansi_c", "literal_word", "make_word", "part_from_token"]


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


def part_from_token(t: Tok, text: str, values: dict[int, str] | None = None) -> Part:
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


def literal_word(text: str, start: int, end: int) -> Word:
    """``make_word`` of the one unquoted literal run ``text[start:end]`` (a
    LIT token with no fragment glued to it): most words are one, and the
    parser's flat path builds them without the fragment bookkeeping."""
    p = _decode_lit(text[start:end], start)
    raw = p.raw
    tilde = raw.startswith("~") or (
        ("=~" in raw or ":~" in raw) and _ASSIGNMENT_WORD.match(raw) is not None
    )
    return Word((p,), start, p.end, p.value, "\\" in raw, p.glob, p.brace, tilde)


def make_word(parts: list[Part], text: str) -> Word:
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
    if not (glob and brace) and any(
        p.kind == "lit" and ("{" in p.raw or "[" in p.raw) for p in parts
    ):
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
