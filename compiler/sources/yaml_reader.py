"""YAML to plain data plus a source map, built from the parser's event stream.

We never let PyYAML compose whole documents: its loader keeps the last of
two duplicate keys and expands aliases. Walking events instead gives a
position for every key and value and lets us refuse duplicates, anchors,
aliases and custom tags outright.

Each scalar, though, is typed exactly as ``yaml.safe_load`` types it, by
PyYAML's own resolver and constructors (YAML 1.1: ``yes`` is true, ``y``
stays text, ``0777`` is 511, ``1:20`` is 80, ``2024-01-01`` is a date), since
that is how the agent host reads the same file. Values YAML 1.2 readers see
differently get a warning, and ``<<`` merge keys merge as they do in PyYAML.
docs/projects.md ("How YAML is read") lists every case.
"""

from __future__ import annotations

import datetime
import functools
import re
import sys
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from charter.compiler.diagnostics import Diagnostic, Span, format_key_path
from charter.compiler.errors import ReaderStop
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.compiler.sources.text import MAX_NESTING, SourceText

__all__ = ["read_yaml"]

try:  # libyaml is an order of magnitude faster; fall back when it is absent
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

# Plain scalars are typed exactly as PyYAML's safe loader types them (the
# YAML 1.1 implicit resolvers; see docs/projects.md, "How YAML is read"):
# Demiurge loads its files with ``yaml.safe_load``, so a value must mean to
# Charter what it means to the host. The resolver and the constructors are
# PyYAML's own, applied one scalar at a time; only the parser's events are
# walked here.
_RESOLVER: Any = Resolver()
_CONSTRUCTORS: dict[Any, Any] = SafeConstructor.yaml_constructors
_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_VALUE_TAG = "tag:yaml.org,2002:value"
# Booleans a YAML 1.2 reader takes as strings (true/false mean the same to both).
_YAML11_ONLY_BOOLS = frozenset({"yes", "no", "on", "off"})
# Numbers whose YAML 1.2 reading differs: base-60 (1:20), leading-zero octal
# (0777), binary (0b101) and digit separators (1_000) are all strings there.
_YAML11_ONLY_NUMBER = re.compile(r"^[-+]?(?:0[0-7_]+|0b[01_]+|.*:.*|.*_.*)$")


_IMPLICIT: dict[Any, list[tuple[str, Any]]] = _RESOLVER.yaml_implicit_resolvers


@functools.lru_cache(maxsize=8192)
def _implicit_tag(text: str) -> str:
    """The tag PyYAML's resolver gives a plain scalar: its implicit resolvers
    for the first character are tried in order, as ``Resolver.resolve`` does
    (it has no path resolvers). Cached: configuration repeats its words."""
    for tag, pattern in [*_IMPLICIT.get(text[:1] if text else "", ()), *_IMPLICIT.get(None, ())]:
        if pattern.match(text):
            return str(tag)
    return _STR_TAG


def _plain_tag(ev: Any) -> str:
    """The tag of a scalar event whose tag is absent or non-specific ('!')."""
    if ev.implicit[0]:
        return _implicit_tag(ev.value)
    return str(_RESOLVER.resolve(yaml.ScalarNode, ev.value, ev.implicit))


class _ScalarProblem(ReaderStop):
    """PyYAML would refuse to construct this scalar (the host cannot load the file)."""


def _too_many_digits(text: str) -> bool:
    limit = sys.get_int_max_str_digits()
    return limit > 0 and sum(c.isdigit() for c in text) > limit


def _construct(tag: str, ev: Any) -> Any:
    """The value PyYAML's safe loader builds for a scalar with this tag."""
    built = _build(tag, ev.value)
    if isinstance(built, _ScalarProblem):
        raise built
    return built


@functools.lru_cache(maxsize=8192)
def _build(tag: str, text: str) -> Any:
    # Every scalar constructor of the safe loader returns an immutable value
    # (text, number, boolean, null, date), so one result serves every
    # occurrence; a failure is returned, not raised, so it is cached too.
    build = _CONSTRUCTORS.get(tag)
    if build is None:
        return _ScalarProblem(f"PyYAML has no constructor for the tag '{tag}'")
    try:
        return build(_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except (ValueError, KeyError, yaml.YAMLError) as exc:
        return _ScalarProblem(str(exc).splitlines()[0] or type(exc).__name__)


_CONSTRUCTOR = SafeConstructor()
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


def _describe(value: Any) -> str:
    """A value PyYAML built, named in YAML's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, datetime.datetime):
        return f"the timestamp {value.isoformat()}"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return type(value).__name__


class _Abort(ReaderStop):
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

    def report(self, rule: str, message: str, span: Span, path: KeyPath) -> None:
        """A finding at ``span``, about the value at key path ``path``."""
        self.diags.append(diag(rule, message, span, key_path=format_key_path(path)))

    def check_node(self, ev: Any, path: KeyPath) -> None:
        anchor = getattr(ev, "anchor", None)
        if anchor is not None:
            span = _span(self.src, ev.start_mark, ev.end_mark)
            message = f"anchor '&{anchor}' is not allowed; write the value out in full"
            self.report("yaml-alias-refused", message, span, path)
        tag = getattr(ev, "tag", None)
        if tag is not None and tag not in _STD_TAGS:
            span = _span(self.src, ev.start_mark, ev.end_mark)
            message = f"tag '{tag}' is not allowed; Charter reads plain data only"
            self.report("yaml-unsupported-tag", message, span, path)

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
            self.report(
                "yaml-alias-refused",
                f"alias '*{ev.anchor}' is not allowed; write the value out in full",
                span,
                path,
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
        # (key, value, where the mapping it came from was read) from merge
        # keys, in the order they were written.
        merged: list[tuple[str, Any, KeyPath]] = []
        start = ev.start_mark
        while True:
            kev = self.next()
            if isinstance(kev, yaml.MappingEndEvent):
                break
            if isinstance(kev, yaml.ScalarEvent):
                self.check_node(kev, path)
                key = kev.value
                kspan = _span(self.src, kev.start_mark, kev.end_mark)
                if self.is_merge_key(kev):
                    self.merge(self.next(), path, kspan, merged)
                    continue
                self.check_key(kev, path, kspan)
            else:
                # A mapping or list used as a key: read it to stay in step,
                # then report it; its content has no place in a config file.
                kspan = _span(self.src, kev.start_mark, kev.end_mark)
                self.value(kev, (*path, "<key>"), None)
                self.report(
                    "wrong-type",
                    "mapping keys must be plain strings",
                    kspan,
                    path,
                )
                key = None
            vev = self.next()
            if key is None:
                self.value(vev, (*path, "<key>"), None)
                continue
            if key in seen:
                first = seen[key]
                self.report(
                    "duplicate-key",
                    f"key '{key}' is defined twice (first at line {first.line}, "
                    f"column {first.col}); the second definition is ignored",
                    kspan,
                    (*path, key),
                )
                # Read the duplicate value to stay in step, but keep the
                # first definition and its positions.
                saved = dict(self.smap.entries)
                self.value(vev, (*path, key), kspan)
                self.smap.entries = saved
                continue
            seen[key] = kspan
            out[key] = self.value(vev, (*path, key), kspan)
        if merged:
            out = self.apply_merges(path, out, merged)
        self.smap.add(path, key_span, _span(self.src, start, kev.end_mark))
        return out

    @staticmethod
    def is_merge_key(kev: Any) -> bool:
        if kev.tag is not None and kev.tag != "!":
            return False
        return _plain_tag(kev) == _MERGE_TAG

    def check_key(self, kev: Any, path: KeyPath, kspan: Span) -> None:
        """A plain key PyYAML types as something other than text (``on``,
        ``1``, ``null``, a date) is not the key its author wrote, as far as
        the host is concerned. Charter keeps the text and warns."""
        if kev.tag is not None and kev.tag != "!":
            return  # an explicit tag: reported by check_node unless standard
        tag = _plain_tag(kev)
        if tag in (_STR_TAG, _VALUE_TAG):
            return  # PyYAML reads a key '=' as that text
        try:
            value = _construct(tag, kev)
        except _ScalarProblem as exc:
            self.unloadable(kev.value, str(exc), kspan, path)
            return
        self.report(
            "yaml-non-string-key",
            f"PyYAML reads the key '{kev.value}' as {_describe(value)}, not as the text "
            f"'{kev.value}'; quote it",
            kspan,
            (*path, kev.value),
        )

    def merge(
        self, vev: Any, path: KeyPath, kspan: Span, merged: list[tuple[str, Any, KeyPath]]
    ) -> None:
        """A ``<<`` merge key, as PyYAML's safe loader applies it: its value
        is a mapping or a list of mappings, whose keys join this mapping's."""
        where = (*path, "<<")
        value = self.value(vev, where, kspan)
        if isinstance(vev, yaml.AliasEvent):
            return  # the alias is refused already; there is nothing to merge
        sources: list[tuple[dict[str, Any], KeyPath]]
        if isinstance(value, dict):
            sources = [(value, where)]
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            sources = [(v, (*where, i)) for i, v in enumerate(value)]
        else:
            self.unloadable(
                "<<",
                "a merge key takes a mapping or a list of mappings",
                _span(self.src, vev.start_mark, vev.end_mark),
                path,
            )
            return
        for mapping, origin in sources:
            merged.extend((k, v, origin) for k, v in mapping.items())

    def apply_merges(
        self, path: KeyPath, explicit: dict[str, Any], merged: list[tuple[str, Any, KeyPath]]
    ) -> dict[str, Any]:
        """Keys written in the mapping itself win over merged ones; merged
        values keep the positions they were written at.

        When two merged mappings give the same key, which one PyYAML keeps
        depends on its version (6.0.3 keeps the last, except for one-letter
        keys), so that is a duplicate-key error; Charter keeps the first."""
        chosen: dict[str, tuple[Any, KeyPath]] = {}
        for key, value, origin in merged:
            if key in explicit:
                continue
            if key in chosen:
                if chosen[key][1] != origin:
                    self.report(
                        "duplicate-key",
                        f"key '{key}' comes from two merged mappings; PyYAML versions "
                        "disagree about which one wins, so write it once",
                        self.smap.key_span((*origin, key)),
                        (*path, key),
                    )
                continue
            chosen[key] = (value, origin)
        out: dict[str, Any] = {}
        entries = self.smap.entries
        for key, (value, origin) in chosen.items():
            out[key] = value
            src, n = (*origin, key), len(origin) + 1
            for p, loc in list(entries.items()):
                if p[:n] == src:
                    entries[(*path, key, *p[n:])] = loc
        out.update(explicit)
        m = len(path)
        for p in [p for p in entries if len(p) > m and p[:m] == path and p[m] == "<<"]:
            del entries[p]
        return out

    def unloadable(self, text: str, why: str, span: Span, path: KeyPath) -> None:
        self.report(
            "yaml-value-unloadable",
            f"PyYAML cannot load '{text}' ({why}), so the agent host cannot load this "
            "file; quote the value",
            span,
            path,
        )

    def scalar(self, ev: Any, path: KeyPath, span: Span) -> Any:
        text: str = ev.value
        tag = ev.tag
        implicit = tag is None or tag == "!"
        if implicit:
            tag = _plain_tag(ev)
            if tag == _STR_TAG:
                return text  # most values: no construction needed
        elif tag not in _STD_TAGS:
            return text  # refused by check_node; the text keeps validation going
        if tag in ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
            self.report(
                "wrong-type",
                f"'{text}' is a single value, not what its tag '{tag}' says",
                span,
                path,
            )
            return None
        if tag == _INT_TAG and _too_many_digits(text):
            # Python refuses to convert such a number (its guard against
            # quadratic-time conversion); say so instead of quoting the digits.
            digits = sum(c.isdigit() for c in text)
            self.report(
                "invalid-value",
                f"an integer of {digits} digits is out of range (at most "
                f"{sys.get_int_max_str_digits()} digits are read)",
                span,
                path,
            )
            return None
        try:
            value = _construct(tag, ev)
        except _ScalarProblem as exc:
            if implicit:
                self.unloadable(text, str(exc), span, path)
            else:
                self.report(
                    "wrong-type",
                    f"'{text}' does not match its tag '{tag}'",
                    span,
                    path,
                )
            return None
        if implicit and tag == _BOOL_TAG and text.lower() in _YAML11_ONLY_BOOLS:
            word = str(value).lower()
            self.report(
                "yaml-ambiguous-boolean",
                f"'{text}' is read as {word} (YAML 1.1); write {word} or quote it",
                span,
                path,
            )
        elif implicit and tag in (_INT_TAG, _FLOAT_TAG) and _YAML11_ONLY_NUMBER.match(text):
            self.report(
                "yaml-ambiguous-number",
                f"'{text}' is read as the number {value!r} (YAML 1.1); YAML 1.2 readers "
                f"see the text '{text}'; write {value!r} or quote it",
                span,
                path,
            )
        return value

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
