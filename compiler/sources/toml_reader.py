"""TOML to plain data plus a source map.

``tomllib`` is the authority on values and syntax, but it reports no
positions. Once it has accepted a document, a small scanner walks the same
text and records where each key and value sits. The scanner may assume the
text is valid TOML, which keeps it short.
"""

from __future__ import annotations

import bisect
import re
import sys
import tomllib
from typing import Any

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.errors import ReaderStop
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.compiler.sources.text import MAX_NESTING, SourceText

__all__ = ["read_toml", "scan_positions"]

_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "f": "\f",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "e": "\x1b",
}


def read_toml(src: SourceText) -> tuple[Any, SourceMap, list[Diagnostic]]:
    smap = SourceMap(src.display, lines=tuple(src.text.splitlines()))
    try:
        data = tomllib.loads(src.text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        if m is None and msg.endswith("(at end of document)"):
            # tomllib names no position here; the end of the text is where
            # the parser ran out, so point there rather than at line 1.
            body = src.text.rstrip()
            line = body.count("\n") + 1
            col = len(body) - (body.rfind("\n") + 1) + 1
            msg = msg.removesuffix("(at end of document)").strip() + " at the end of the file"
        msg = _AT.sub("", msg).strip()
        if msg.startswith(("Cannot overwrite a value", "Cannot declare")):
            # tomllib's words for a key or table written twice: report it as
            # the same rule YAML uses, so one suppression or doc covers both.
            # tomllib points past the value; the key starts the line.
            lines = src.text.splitlines()
            if 0 < line <= len(lines):
                text = lines[line - 1]
                col = len(text) - len(text.lstrip()) + 1
            return (
                None,
                smap,
                [
                    diag(
                        "duplicate-key",
                        "a key or table is defined twice; TOML forbids redefinition "
                        f"({msg.rstrip('.')})",
                        Span(src.display, line, col),
                    )
                ],
            )
        return None, smap, [diag("toml-syntax-error", msg, Span(src.display, line, col))]
    except RecursionError:
        return None, smap, [diag("nesting-too-deep", "structure too deep", Span(src.display))]
    except ValueError:
        # Not a TOMLDecodeError: tomllib let int() refuse a decimal integer of
        # more digits than Python converts. It names no position, so find the
        # first such run of digits.
        return None, smap, [_long_integer(src)]
    if _depth(data) > MAX_NESTING:
        return (
            None,
            smap,
            [
                diag(
                    "nesting-too-deep",
                    f"nesting deeper than {MAX_NESTING} levels",
                    Span(src.display),
                )
            ],
        )
    scan_positions(src.text, smap)
    return data, smap, []


def _long_integer(src: SourceText) -> Diagnostic:
    limit = sys.get_int_max_str_digits()
    # Maximal runs only, so the search stays linear in the text.
    found = next(
        (
            m
            for m in re.finditer(r"[0-9_]+", src.text)
            if len(m.group()) - m.group().count("_") > limit
        ),
        None,
    )
    line = col = 1
    digits = limit + 1
    if found is not None:
        before = src.text[: found.start()]
        line = before.count("\n") + 1
        col = found.start() - (before.rfind("\n") + 1) + 1
        digits = len(found.group().replace("_", ""))
    return diag(
        "invalid-value",
        f"an integer of {digits} digits is out of range (at most {limit} digits are read)",
        Span(src.display, line, col),
    )


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_NESTING:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


class _Scanner:
    def __init__(self, text: str, smap: SourceMap) -> None:
        self.t = text
        self.n = len(text)
        self.i = 0
        self.smap = smap
        self.starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        # Arrays of tables seen so far, with how many elements each has.
        self.aot: dict[KeyPath, int] = {}

    # -- positions ---------------------------------------------------------
    def pos(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def span(self, a: int, b: int) -> Span:
        l1, c1 = self.pos(a)
        l2, c2 = self.pos(b)
        return Span(self.smap.path, l1, c1, l2, c2)

    # -- lexing helpers ----------------------------------------------------
    def ws(self) -> None:
        while self.i < self.n and self.t[self.i] in " \t":
            self.i += 1

    def ws_nl(self) -> None:
        """Whitespace, newlines and comments (inside arrays)."""
        while self.i < self.n:
            c = self.t[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif c == "#":
                self.skip_comment()
            else:
                break

    def skip_comment(self) -> None:
        while self.i < self.n and self.t[self.i] != "\n":
            self.i += 1

    def string(self) -> str:
        t, i = self.t, self.i
        if t.startswith('"""', i) or t.startswith("'''", i):
            q = t[i : i + 3]
            j = i + 3
            while True:
                if q == '"""' and t[j] == "\\":
                    j += 2
                    continue
                if t.startswith(q, j):
                    # up to two extra quotes may close the string
                    end = j + 3
                    while end < self.n and t[end] == q[0] and end - j < 5:
                        end += 1
                    self.i = end
                    return ""
                j += 1
        q = t[i]
        j = i + 1
        out = []
        while t[j] != q:
            if q == '"' and t[j] == "\\":
                nxt = t[j + 1]
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                    j += 2
                elif nxt in "uU":
                    width = 4 if nxt == "u" else 8
                    out.append(chr(int(t[j + 2 : j + 2 + width], 16)))
                    j += 2 + width
                elif nxt == "x":
                    out.append(chr(int(t[j + 2 : j + 4], 16)))
                    j += 4
                else:
                    out.append(nxt)
                    j += 2
                continue
            out.append(t[j])
            j += 1
        self.i = j + 1
        return "".join(out)

    def key(self) -> list[tuple[str, int, int]]:
        """A dotted key: each part with its start and end offsets."""
        parts: list[tuple[str, int, int]] = []
        while True:
            self.ws()
            a = self.i
            if self.t[a] in "\"'":
                name = self.string()
            else:
                m = _BARE.match(self.t, a)
                if not m:
                    raise ReaderStop(f"unexpected character at {a}")
                name = m.group(0)
                self.i = m.end()
            parts.append((name, a, self.i))
            self.ws()
            if self.i < self.n and self.t[self.i] == ".":
                self.i += 1
                continue
            return parts

    # -- values --------------------------------------------------------------
    def value(self, path: KeyPath, key_span: Span | None) -> None:
        a = self.i
        c = self.t[a]
        if c in "\"'":
            self.string()
        elif c == "[":
            self.i += 1
            idx = 0
            while True:
                self.ws_nl()
                if self.t[self.i] == "]":
                    self.i += 1
                    break
                self.value((*path, idx), None)
                idx += 1
                self.ws_nl()
                if self.t[self.i] == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self.ws_nl()
                if self.t[self.i] == "}":
                    self.i += 1
                    break
                self.keyval(path)
                self.ws_nl()
                if self.t[self.i] == ",":
                    self.i += 1
        else:
            j = a
            while j < self.n and self.t[j] not in ",]}#\r\n":
                j += 1
            # A datetime may contain one inner space ("1979-05-27 07:32:00").
            while j > a and self.t[j - 1] in " \t":
                j -= 1
            self.i = j
        self.smap.add(path, key_span, self.span(a, self.i))

    def keyval(self, table: KeyPath) -> None:
        parts = self.key()
        path = table
        for name, a, b in parts[:-1]:
            path = (*path, name)
            if self.smap.get(path) is None:
                self.smap.add(path, self.span(a, b), self.span(a, b))
        name, a, b = parts[-1]
        self.ws()
        self.i += 1  # the '='
        self.ws()
        self.value((*path, name), self.span(a, b))

    # -- tables ----------------------------------------------------------------
    def resolve(self, names: list[str], last_is_new_aot: bool) -> KeyPath:
        path: KeyPath = ()
        for k, name in enumerate(names):
            path = (*path, name)
            final = k == len(names) - 1
            if path in self.aot and not (final and last_is_new_aot):
                path = (*path, self.aot[path] - 1)
        return path

    def header(self) -> KeyPath:
        a = self.i
        is_aot = self.t.startswith("[[", a)
        self.i += 2 if is_aot else 1
        parts = self.key()
        self.i += 2 if is_aot else 1
        names = [p[0] for p in parts]
        hspan = self.span(a, self.i)
        path = self.resolve(names, is_aot)
        # Parents named only through this header ([stages.review]) still
        # get a position: the part of the header that names them.
        for k, (_, pa, pb) in enumerate(parts[:-1]):
            parent = self.resolve(names[: k + 1], False)
            if self.smap.get(parent) is None:
                self.smap.add(parent, self.span(pa, pb), self.span(pa, pb))
        if is_aot:
            if self.smap.get(path) is None:
                self.smap.add(path, hspan, hspan)
            index = self.aot.get(path, 0)
            self.aot[path] = index + 1
            path = (*path, index)
            self.smap.add(path, None, hspan)
        else:
            self.smap.add(path, self.span(parts[-1][1], parts[-1][2]), hspan)
        return path

    def run(self) -> None:
        table: KeyPath = ()
        while self.i < self.n:
            self.ws()
            if self.i >= self.n:
                break
            c = self.t[self.i]
            if c in "\r\n":
                self.i += 1
            elif c == "#":
                self.skip_comment()
            elif c == "[":
                table = self.header()
            else:
                self.keyval(table)


def scan_positions(text: str, smap: SourceMap) -> None:
    """Fill ``smap`` with the spans of every key and value in ``text``, which
    must already have been accepted by tomllib. If the scanner meets
    something it does not expect, the positions it has are kept and the rest
    fall back to the nearest enclosing entry."""
    scanner = _Scanner(text, smap)
    smap.add((), None, Span(smap.path, 1, 1))
    try:
        scanner.run()
    except (ReaderStop, ValueError, IndexError):
        pass
