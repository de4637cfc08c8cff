"""Silencing findings on purpose: inline comments and a config list.

An inline suppression is a comment that names the rules it silences, by code
or by name, several separated by commas::

    shell = "allow"  # charter: ignore[CH401]
    # charter: ignore[unknown-tool, CH302]
    available_tools = ["grep_everything"]

A comment after content covers its own line; a comment alone on its line
covers the next line. YAML and TOML both use ``#``, so one syntax serves every
file Charter reads. Comments are found with a small scanner that knows each
format's quoting, so a ``#`` inside a string, a TOML multi-line string or a
YAML block scalar is not taken for a comment.

What is refused, fail-closed:

* a bare ``# charter: ignore`` naming no rule suppresses nothing and is itself
  a warning (``suppression-without-codes``): a blanket ignore would also hide
  errors added to the line later;
* a name that is no rule, and the file and syntax errors of CH1xx (the file
  was not read, so none of its comments can be trusted), are a warning
  (``invalid-suppression``) and suppress nothing;
* a suppression that silences nothing is a note (``unused-suppression``), so
  stale comments do not linger to hide the next, unrelated finding.

Suppressed findings are returned separately, each marked in its ``data`` with
how it was silenced (``inline`` or ``config``), so json and SARIF output can
still show them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from charter.compiler.diagnostics import Diagnostic, Severity, Span, did_you_mean, sort_diagnostics
from charter.compiler.render._common import SUPPRESSION_KEY
from charter.compiler.rules import RULES, Rule, by_name, diag

__all__ = ["Comment", "apply_suppressions", "find_comments", "resolve_rule"]

_DIRECTIVE = re.compile(r"#\s*charter:\s*ignore(?![\w-])(?P<rest>.*)$")
_TOML_SUFFIXES = (".toml", ".leviath")
_YAML_SUFFIXES = (".yaml", ".yml")
# A YAML line whose value is a block scalar: ``key: |``, ``- >-``, ``run: |2``.
_BLOCK_SCALAR = re.compile(r"(?:^|[:\-]\s)\s*[|>][-+0-9]*\s*$")
# The suppression rules report on the comments themselves; silencing them with
# another comment would be circular (the config list can still turn them off).
_SELF_RULES = frozenset({"unused-suppression", "suppression-without-codes", "invalid-suppression"})


# Defined at every start-up, so kept cheap to define: Comment is a NamedTuple
# (a tenth of a frozen dataclass's cost); _Entry and _Directive are mutable
# state nothing compares by value, so they keep identity equality.
class Comment(NamedTuple):
    """A comment in a source file: 1-based line, column of its ``#``, its text
    from the ``#`` on, and whether it is alone on its line."""

    line: int
    col: int
    text: str
    own_line: bool


def find_comments(path: str, lines: Sequence[str]) -> Iterator[Comment]:
    """The comments of a YAML or TOML file; nothing for other kinds of file."""
    lowered = path.lower()
    if lowered.endswith(_TOML_SUFFIXES):
        yield from _toml_comments(lines)
    elif lowered.endswith(_YAML_SUFFIXES):
        yield from _yaml_comments(lines)


def _toml_comments(lines: Sequence[str]) -> Iterator[Comment]:
    multi: str | None = None  # the delimiter of an open multi-line string
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        i = 0
        while i < len(line):
            if multi is not None:
                close = _find_unescaped(line, multi, i, escapes=multi == '"""')
                if close < 0:
                    break
                i, multi = close + 3, None
                continue
            ch = line[i]
            if line.startswith(('"""', "'''"), i):
                multi, i = line[i : i + 3], i + 3
            elif ch in "\"'":
                close = _find_unescaped(line, ch, i + 1, escapes=ch == '"')
                i = len(line) if close < 0 else close + 1
            elif ch == "#":
                yield Comment(number, i + 1, line[i:], not line[:i].strip())
                break
            else:
                i += 1


def _yaml_comments(lines: Sequence[str]) -> Iterator[Comment]:
    block_indent: int | None = None  # indentation of the key owning a block scalar
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                continue  # the block scalar's text, where '#' is just a character
            block_indent = None
        comment = _yaml_line_comment(line)
        content = line if comment is None else line[: comment.col - 1]
        if _BLOCK_SCALAR.search(content.rstrip()):
            block_indent = indent
        if comment is not None:
            yield Comment(number, comment.col, comment.text, comment.own_line)


def _yaml_line_comment(line: str) -> Comment | None:
    i = 0
    while i < len(line):
        ch = line[i]
        before = line[:i].rstrip()
        if ch in "\"'" and (not before or before[-1] in ":-[{,?"):
            # A quote only opens a string at the start of a scalar; in
            # ``it's`` it is an apostrophe.
            close = _find_yaml_quote(line, ch, i + 1)
            if close < 0:
                return None  # a quoted scalar continuing on the next line
            i = close + 1
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return Comment(0, i + 1, line[i:], not before)
        else:
            i += 1
    return None


def _find_yaml_quote(line: str, quote: str, start: int) -> int:
    i = start
    while i < len(line):
        if quote == '"' and line[i] == "\\":
            i += 2
            continue
        if line[i] == quote:
            if quote == "'" and line.startswith("''", i):
                i += 2  # an escaped single quote
                continue
            return i
        i += 1
    return -1


def _find_unescaped(line: str, delim: str, start: int, *, escapes: bool) -> int:
    i = start
    while i < len(line):
        if escapes and line[i] == "\\":
            i += 2
            continue
        if line.startswith(delim, i):
            return i
        i += 1
    return -1


def resolve_rule(token: str) -> Rule | None:
    """A rule by code (any case) or kebab-case name."""
    text = token.strip()
    found = RULES.get(text.upper())
    if found is not None:
        return found
    try:
        return by_name(text.lower())
    except KeyError:
        return None


def _suppressible(r: Rule) -> bool:
    # A CH1xx error means the file was not read: nothing may vouch for it.
    return not (r.code.startswith("CH1") and r.severity is Severity.ERROR)


def _invalid_reason(token: str, r: Rule | None) -> str | None:
    if r is None:
        candidates = [*RULES, *(x.name for x in RULES.values())]
        guess = did_you_mean(token, candidates)
        hint = f"; did you mean '{guess}'?" if guess else ""
        return f"'{token}' is not a Charter rule{hint}"
    if not _suppressible(r):
        return f"{r.code} {r.name} cannot be suppressed: the file was not read"
    return None


@dataclass(slots=True, eq=False)
class _Entry:
    """One code named by an ignore comment, and whether any finding used it."""

    token: str
    rule: Rule
    span: Span
    used: bool = False


@dataclass(slots=True, eq=False)
class _Directive:
    """An ignore comment: the line it silences and the codes it names."""

    covers: int  # the line whose findings it silences
    entries: list[_Entry] = field(default_factory=list)


def _parse_directives(
    path: str, lines: Sequence[str], problems: list[Diagnostic]
) -> list[_Directive]:
    out: list[_Directive] = []
    for comment in find_comments(path, lines):
        m = _DIRECTIVE.match(comment.text)
        if m is None:
            continue
        start, end = comment.col, comment.col + len(comment.text.rstrip())
        whole = Span(path, comment.line, start, comment.line, end)
        rest = m.group("rest")
        body = rest.lstrip()
        if not body.startswith("["):
            problems.append(
                diag(
                    "suppression-without-codes",
                    "'# charter: ignore' must name the rules it silences; it suppresses nothing",
                    whole,
                    help="write '# charter: ignore[CODE]', e.g. '# charter: ignore[CH201]'",
                )
            )
            continue
        close = body.find("]")
        if close < 0:
            problems.append(
                diag("invalid-suppression", "the list of rules has no closing ']'", whole)
            )
            continue
        directive = _Directive(comment.line + 1 if comment.own_line else comment.line)
        # Column of the first character inside the brackets.
        offset = start + m.start("rest") + (len(rest) - len(body)) + 1
        names = body[1:close]
        if not names.strip():
            problems.append(
                diag(
                    "suppression-without-codes",
                    "'# charter: ignore[]' names no rule; it suppresses nothing",
                    whole,
                    help="put codes or rule names between the brackets",
                )
            )
            continue
        position = 0
        for piece in names.split(","):
            token = piece.strip()
            col = offset + position + (len(piece) - len(piece.lstrip()))
            position += len(piece) + 1
            span = Span(path, comment.line, col, comment.line, col + max(len(token), 1))
            if not token:
                problems.append(diag("invalid-suppression", "an empty name in the list", span))
                continue
            r = resolve_rule(token)
            reason = _invalid_reason(token, r)
            if reason is not None or r is None:
                problems.append(diag("invalid-suppression", reason or token, span))
                continue
            directive.entries.append(_Entry(token, r, span))
        if directive.entries:
            out.append(directive)
    return out


def _mark(d: Diagnostic, kind: str) -> Diagnostic:
    data = tuple(
        sorted([*(kv for kv in d.data if kv[0] != SUPPRESSION_KEY), (SUPPRESSION_KEY, kind)])
    )
    return d._replace(data=data)


def apply_suppressions(
    diagnostics: Sequence[Diagnostic],
    sources: Mapping[str, Sequence[str]],
    config_ignores: Sequence[str],
    *,
    config_span: Span | None = None,
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split ``diagnostics`` into (kept, suppressed).

    ``sources`` maps display paths to their lines, where inline comments are
    looked for. ``config_ignores`` are codes or names silenced everywhere
    (from the config file or ``--ignore``); ``config_span`` is where problems
    with that list are reported. Problems with the suppressions themselves
    (and unused ones) are added to the kept list.
    """
    problems: list[Diagnostic] = []
    by_line: dict[tuple[str, int], list[_Directive]] = {}
    for path in sorted(sources):
        for directive in _parse_directives(path, sources[path], problems):
            by_line.setdefault((path, directive.covers), []).append(directive)

    where = config_span or Span("<config>", 1, 1)
    ignored: set[str] = set()
    for token in config_ignores:
        r = resolve_rule(token)
        reason = _invalid_reason(token, r)
        if reason is not None or r is None:
            problems.append(diag("invalid-suppression", f"ignore list: {reason or token}", where))
            continue
        ignored.add(r.code)

    kept: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    for d in sort_diagnostics(diagnostics):
        rule = RULES.get(d.code)
        if rule is not None and not _suppressible(rule):
            kept.append(d)
            continue
        hit = False
        if d.name not in _SELF_RULES:
            for directive in by_line.get((d.span.path, d.span.line), ()):
                for entry in directive.entries:
                    if entry.rule.code == d.code:
                        entry.used = hit = True
        if hit:
            suppressed.append(_mark(d, "inline"))
        elif d.code in ignored:
            suppressed.append(_mark(d, "config"))
        else:
            kept.append(d)

    for directives in by_line.values():
        for directive in directives:
            for entry in directive.entries:
                if not entry.used:
                    problems.append(
                        diag(
                            "unused-suppression",
                            f"'{entry.token}' suppresses nothing: no {entry.rule.code} "
                            f"{entry.rule.name} finding on line {directive.covers}",
                            entry.span,
                            help="remove it from the comment",
                        )
                    )
    for p in sort_diagnostics(problems):
        (suppressed if p.code in ignored else kept).append(
            _mark(p, "config") if p.code in ignored else p
        )
    return sort_diagnostics(kept), sort_diagnostics(suppressed)
