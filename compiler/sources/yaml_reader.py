"""YAML to plain data plus a source map, built from the parser's event stream.

We never let PyYAML construct objects: its constructor keeps the last of two
duplicate keys, expands aliases and reads ``no`` as a boolean without a word.
Walking events instead gives a position for every key and value and lets us
refuse duplicates, anchors, aliases and tags outright.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.compiler.sources.text import MAX_NESTING, SourceText

__all__ = ["read_yaml"]

try:  # libyaml is an order of magnitude faster; fall back when it is absent
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

_NULL = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_YAML11_BOOL = {
    "yes": True,
    "Yes": True,
    "YES": True,
    "on": True,
    "On": True,
    "ON": True,
    "y": True,
    "Y": True,
    "no": False,
    "No": False,
    "NO": False,
    "off": False,
    "Off": False,
    "OFF": False,
    "n": False,
    "N": False,
}
_INT = re.compile(r"[-+]?[0-9]+\Z")
_OCT = re.compile(r"0o[0-7]+\Z")
_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_SPECIAL_FLOATS = {
    ".inf": float("inf"),
    "+.inf": float("inf"),
    ".Inf": float("inf"),
    "+.Inf": float("inf"),
    "-.inf": float("-inf"),
    "-.Inf": float("-inf"),
    ".nan": float("nan"),
    ".NaN": float("nan"),
}
_STD_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "!",
}


class _Abort(Exception):
    """Raised inside the walker when the document cannot be read further."""


def _span(src: SourceText, start: Any, end: Any) -> Span:
    return Span(src.display, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


class _Builder:
    def __init__(self, src: SourceText) -> None:
        self.src = src
        self.smap = SourceMap(src.display, lines=tuple(src.text.splitlines()))
        self.diags: list[Diagnostic] = []
        self.events = iter(yaml.parse(src.text, Loader=_Loader))

    def next(self) -> Any:
        return next(self.events)

    def check_node(self, ev: Any, path: KeyPath) -> None:
        anchor = getattr(ev, "anchor", None)
        if anchor is not None:
            self.diags.append(
                diag(
                    "yaml-alias-refused",
                    f"anchor '&{anchor}' is not allowed; write the value out in full",
                    _span(self.src, ev.start_mark, ev.end_mark),
                    key_path=format_key_path(path),
                )
            )
        tag = getattr(ev, "tag", None)
        if tag is not None and tag not in _STD_TAGS:
            self.diags.append(
                diag(
                    "yaml-unsupported-tag",
                    f"tag '{tag}' is not allowed; Charter reads plain data only",
                    _span(self.src, ev.start_mark, ev.end_mark),
                    key_path=format_key_path(path),
                )
            )

    def value(self, ev: Any, path: KeyPath, key_span: Span | None) -> Any:
        if len(path) > MAX_NESTING:
            self.diags.append(
                diag(
                    "nesting-too-deep",
                    f"nesting deeper than {MAX_NESTING} levels",
                    _span(self.src, ev.start_mark, ev.end_mark),
                )
            )
            raise _Abort
        if isinstance(ev, yaml.AliasEvent):
            span = _span(self.src, ev.start_mark, ev.end_mark)
            self.diags.append(
                diag(
                    "yaml-alias-refused",
                    f"alias '*{ev.anchor}' is not allowed; write the value out in full",
                    span,
                    key_path=format_key_path(path),
                )
            )
            self.smap.add(path, key_span, span)
            return None
        self.check_node(ev, path)
        if isinstance(ev, yaml.ScalarEvent):
            span = _span(self.src, ev.start_mark, ev.end_mark)
            self.smap.add(path, key_span, span)
            return self.scalar(ev, path, span)
        if isinstance(ev, yaml.SequenceStartEvent):
            items: list[Any] = []
            start = ev.start_mark
            while True:
                child = self.next()
                if isinstance(child, yaml.SequenceEndEvent):
                    break
                items.append(self.value(child, (*path, len(items)), None))
            self.smap.add(path, key_span, _span(self.src, start, child.end_mark))
            return items
        if isinstance(ev, yaml.MappingStartEvent):
            return self.mapping(ev, path, key_span)
        raise _Abort  # pragma: no cover - the parser guarantees node events here

    def mapping(self, ev: Any, path: KeyPath, key_span: Span | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        seen: dict[str, Span] = {}
        start = ev.start_mark
        while True:
            kev = self.next()
            if isinstance(kev, yaml.MappingEndEvent):
                break
            if isinstance(kev, yaml.ScalarEvent):
                self.check_node(kev, path)
                key = kev.value
                kspan = _span(self.src, kev.start_mark, kev.end_mark)
            else:
                # A mapping or list used as a key: read it to stay in step,
                # then report it; its content has no place in a config file.
                kspan = _span(self.src, kev.start_mark, kev.end_mark)
                self.value(kev, (*path, "<key>"), None)
                self.diags.append(
                    diag(
                        "wrong-type",
                        "mapping keys must be plain strings",
                        kspan,
                        key_path=format_key_path(path),
                    )
                )
                key = None
            vev = self.next()
            if key is None:
                self.value(vev, (*path, "<key>"), None)
                continue
            if key in seen:
                first = seen[key]
                self.diags.append(
                    diag(
                        "duplicate-key",
                        f"key '{key}' is defined twice (first at line {first.line}, "
                        f"column {first.col}); the second definition is ignored",
                        kspan,
                        key_path=format_key_path((*path, key)),
                    )
                )
                # Read the duplicate value to stay in step, but keep the
                # first definition and its positions.
                saved = dict(self.smap.entries)
                self.value(vev, (*path, key), kspan)
                self.smap.entries = saved
                continue
            seen[key] = kspan
            out[key] = self.value(vev, (*path, key), kspan)
        self.smap.add(path, key_span, _span(self.src, start, kev.end_mark))
        return out

    def scalar(self, ev: Any, path: KeyPath, span: Span) -> Any:
        text: str = ev.value
        plain = not ev.style and ev.implicit[0]
        tag = ev.tag
        if tag == "tag:yaml.org,2002:str" or (not plain and tag in (None, "!")):
            return text
        if tag is not None and tag != "!":
            return self.tagged(text, tag, path, span)
        if text in _NULL:
            return None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        if text in _YAML11_BOOL:
            value = _YAML11_BOOL[text]
            self.diags.append(
                diag(
                    "yaml-ambiguous-boolean",
                    f"'{text}' is read as {str(value).lower()} (YAML 1.1); "
                    f"write {str(value).lower()} or quote it",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return value
        if _INT.match(text):
            return self.integer(text, path, span)
        if _OCT.match(text):
            return int(text[2:], 8)
        if _HEX.match(text):
            return int(text[2:], 16)
        if _FLOAT.match(text) and any(c.isdigit() for c in text):
            return float(text)
        if text in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text]
        return text

    def integer(self, text: str, path: KeyPath, span: Span) -> int | None:
        """A decimal integer, or None with a diagnostic when it has more digits
        than Python converts (its guard against quadratic-time conversion)."""
        digits = len(text.lstrip("+-"))
        if digits > sys.get_int_max_str_digits():
            self.diags.append(
                diag(
                    "invalid-value",
                    f"an integer of {digits} digits is out of range (at most "
                    f"{sys.get_int_max_str_digits()} digits are read)",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return None
        return int(text)

    def tagged(self, text: str, tag: str, path: KeyPath, span: Span) -> Any:
        try:
            if tag.endswith(":int"):
                if _INT.match(text.strip()):
                    return self.integer(text.strip(), path, span)
                return int(text, 0)
            if tag.endswith(":float"):
                return float(text)
            if tag.endswith(":bool"):
                if text in _TRUE:
                    return True
                if text in _FALSE:
                    return False
                raise ValueError(text)
            if tag.endswith(":null"):
                return None
        except ValueError:
            self.diags.append(
                diag(
                    "wrong-type",
                    f"'{text if len(text) <= 80 else text[:80] + '...'}' does not match its "
                    f"tag '{tag}'",
                    span,
                    key_path=format_key_path(path),
                )
            )
            return None
        return text

    def document(self) -> Any:
        ev = self.next()
        assert isinstance(ev, yaml.StreamStartEvent)
        ev = self.next()
        if isinstance(ev, yaml.StreamEndEvent):
            return None
        assert isinstance(ev, yaml.DocumentStartEvent)
        root = self.value(self.next(), (), None)
        self.next()  # DocumentEnd
        ev = self.next()
        if not isinstance(ev, yaml.StreamEndEvent):
            self.diags.append(
                diag(
                    "yaml-unsupported-tag",
                    "the file holds more than one YAML document; Charter reads exactly one",
                    _span(self.src, ev.start_mark, ev.end_mark),
                )
            )
        return root


def read_yaml(src: SourceText) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Parse ``src``. On a syntax error the data is None and the diagnostic
    names the position the parser stopped at."""
    b = _Builder(src)
    try:
        data = b.document()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        if "nesting depth" in problem:  # libyaml's own depth limit
            b.diags.append(diag("nesting-too-deep", problem, Span(src.display, line, col)))
            return None, b.smap, b.diags
        b.diags.append(
            diag("yaml-syntax-error", f"{problem}{context}", Span(src.display, line, col))
        )
        return None, b.smap, b.diags
    except yaml.YAMLError as exc:  # reader errors such as control characters
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "mark", None)
        span = Span(src.display, mark.line + 1, mark.column + 1) if mark else Span(src.display)
        b.diags.append(diag("yaml-syntax-error", str(exc).splitlines()[0], span))
        return None, b.smap, b.diags
    except (_Abort, RecursionError):
        if not b.diags:
            b.diags.append(diag("nesting-too-deep", "structure too deep", Span(src.display)))
        return None, b.smap, b.diags
    return data, b.smap, b.diags
