"""Where a client's search or glob reaches, read the way the client reads it.

A client hook has no sandbox behind it: what Charter allows, the client runs
bare. A search's ``path`` argument is only part of what it touches: a glob
pattern can carry its own directory (absolute, or climbing with ``..``), and
a content search reads every file below its directory that its filter lets
through, credential files included. The helpers here turn those into the
paths confinement must see; they only read directory listings, never a file.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Callable, Iterator
from pathlib import Path

# Every decision confines paths: the hooks load this module at their first
# call anyway, so importing it here costs nothing a decision does not pay.
from charter.runtime.policy.workspace import confine, is_sensitive

__all__ = [
    "GLOB_MAGIC",
    "JS_WHITESPACE",
    "MAX_SEARCH_WALK",
    "MAX_WALK",
    "brace_variants",
    "could_match",
    "js_decode_uri_component",
    "js_trim",
    "literal_root",
    "part_matcher",
    "pattern_roots",
    "credentials_searched",
    "files_ending_with",
    "is_sensitive",
    "sensitive_below",
    "walk",
    "working_dir",
]

# What JavaScript's String.prototype.trim() strips (WhiteSpace and
# LineTerminator); Python's str.strip() differs (no U+FEFF, but U+001C-1F).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# A path component a glob reads as a pattern rather than a name.
GLOB_MAGIC = re.compile(r"[*?\[\]{}]|[!@+*?]\(")
# Directory entries one decision may list before it stops looking and refuses
# (the walk is the only file-system work a decision does).
MAX_WALK = 20_000
# A content search covers a whole tree: more entries may be listed for it.
MAX_SEARCH_WALK = 200_000
# More include filters than this are read as "every file passes".
_MAX_FILTERS = 64
# How many credential files a search's answer names.
_MAX_REPORTED = 4
_ANY = "**"
# A brace group with no brace inside it.
_INNER_BRACES = re.compile(r"\{([^{}]*)\}")


def js_trim(value: str) -> str:
    """``value`` as JavaScript's ``trim()`` leaves it."""
    return value.strip(JS_WHITESPACE)


_HEX = frozenset("0123456789abcdefABCDEF")


def js_decode_uri_component(value: str) -> str | None:
    """``value`` as JavaScript's ``decodeURIComponent`` decodes it, or None
    where it would throw (a '%' without two hex digits, bytes that are not
    UTF-8) or there is nothing to decode."""
    if "%" not in value:
        return None
    out: list[str] = []
    i = 0
    while i < len(value):
        if value[i] != "%":
            out.append(value[i])
            i += 1
            continue
        run = bytearray()
        while i < len(value) and value[i] == "%":
            pair = value[i + 1 : i + 3]
            if len(pair) < 2 or not set(pair) <= _HEX:
                return None
            run.append(int(pair, 16))
            i += 3
        try:
            out.append(run.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    return "".join(out)


def literal_root(pattern: str) -> str:
    """The directory part of a glob ``pattern`` before its first wildcard,
    as Claude Code's Glob splits an absolute one to choose where to search:
    the text up to the last '/' before the first of ``*?[{`` (the pattern's
    own directory when it has no wildcard); "" when it names none."""
    magic = re.search(r"[*?\[{]", pattern)
    top = "/" if pattern.startswith("/") else ""
    if magic is None:
        return posixpath.dirname(pattern) or top
    cut = pattern.rfind("/", 0, magic.start())
    return (pattern[:cut] or top) if cut >= 0 else ""


def brace_variants(pattern: str, limit: int = 64) -> list[str] | None:
    """The patterns ``{a,b}`` expands to, innermost groups first; None when
    there would be more than ``limit`` or a group cannot be read safely."""
    done: list[str] = []
    todo = [pattern]
    while todo:
        current = todo.pop()
        group = _INNER_BRACES.search(current)
        if group is None:
            done.append(current)
        elif "," in group[1]:
            head, tail = current[: group.start()], current[group.end() :]
            todo.extend(head + alt + tail for alt in group[1].split(","))
        elif "/" in group[1]:
            return None  # a literal or range spanning directories: not modelled
        else:
            # A range such as {1..3}, or a literal: any name part fits.
            todo.append(current[: group.start()] + "*" + current[group.end() :])
        if len(done) + len(todo) > limit:
            return None
    return done


def pattern_roots(pattern: str) -> list[str] | str:
    """For a glob the ``glob`` package matches (Gemini CLI's), the directory
    each brace alternative starts from: its components before the first
    wildcard, absolute or relative as written (``..`` kept, for confinement to
    judge). Why it cannot be judged instead, when an alternative climbs with
    ``..`` after a wildcard (where it lands depends on what the wildcard
    matched) or its braces cannot be expanded."""
    variants = brace_variants(pattern)
    if variants is None:
        return f"the pattern {pattern!r} has braces Charter cannot expand"
    roots: list[str] = []
    for variant in variants:
        parts = variant.split("/")
        cut = next((i for i, p in enumerate(parts) if GLOB_MAGIC.search(p)), len(parts))
        if ".." in parts[cut:]:
            return (
                f"the pattern {pattern!r} climbs with '..' after a wildcard, so Charter "
                "cannot tell which directories it reaches"
            )
        head = "/".join(parts[:cut])
        roots.append(head or ("/" if variant.startswith("/") else "."))
    return list(dict.fromkeys(roots))


def part_matcher(part: str) -> re.Pattern[str] | str:
    """``**``, or a case-blind matcher for one path component. Extended globs
    and character classes it cannot read match any name."""
    if part == _ANY:
        return _ANY
    if re.search(r"[!@+*?]\(", part) or "[:" in part:
        return re.compile(r"(?s:.*)\Z")
    # minimatch reads [^...] as negation, fnmatch as a literal caret.
    return re.compile(fnmatch.translate(part.replace("[^", "[!")), re.IGNORECASE)


def could_match(
    matchers: tuple[re.Pattern[str] | str, ...],
    parts: tuple[str, ...],
    *,
    below: bool,
    lead_guard: bool = False,
) -> bool:
    """Whether ``parts`` matches the pattern or, with ``below``, whether a
    path strictly below it could. ``lead_guard``: the pattern's first part is
    ``**``, which (as in bash) never enters a linked directory, so the last
    part, a link, must be matched by another part to be entered."""

    @functools.cache
    def go(i: int, j: int) -> bool:
        if j == len(parts):
            return i < len(matchers) if below else all(m == _ANY for m in matchers[i:])
        if i == len(matchers):
            return False
        m = matchers[i]
        if m == _ANY:
            if lead_guard and i == 0 and j == len(parts) - 1:
                return go(i + 1, j)
            return go(i + 1, j) or go(i, j + 1)
        assert not isinstance(m, str)
        return m.match(parts[j]) is not None and go(i + 1, j + 1)

    return go(0, 0)


def walk(
    top: str, skip: frozenset[str], enter: Callable[[list[str]], bool]
) -> Iterator[tuple[list[str], str, bool, bool]]:
    """(parts below ``top``, full path, is a directory, is a link) for every
    entry under ``top`` in the directories ``enter`` accepts and whose name
    is not in ``skip``; links are reported, never followed."""
    stack: list[tuple[str, list[str]]] = [(top, [])]
    while stack:
        here, parts = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            rel = [*parts, e.name]
            link = e.is_symlink()
            is_dir = e.is_dir(follow_symlinks=link)
            yield rel, e.path, is_dir, link
            if is_dir and not link and e.name not in skip and enter(rel):
                stack.append((e.path, rel))


def _filter_matchers(glob: str) -> list[tuple[re.Pattern[str] | str, ...]] | None:
    """The include filters of a search's glob argument (ripgrep's ``--glob``:
    a pattern without '/' matches a name at any depth), or None when every
    file passes. A negated entry only removes files, so it is left out."""
    out: list[tuple[re.Pattern[str] | str, ...]] = []
    # Claude Code splits the argument at spaces, then at commas outside braces.
    pieces = [p for w in glob.split() for p in ([w] if "{" in w and "}" in w else w.split(","))]
    if len(pieces) > _MAX_FILTERS:
        return None  # too many to match one by one: every file counts
    for one in filter(None, pieces):
        if one.startswith("!"):
            continue
        variants = brace_variants(one)
        if variants is None:
            return None
        for v in variants:
            parts = [p for p in v.strip("/").split("/") if p]
            if not parts:
                return None
            if "/" not in v.rstrip("/"):
                parts = [_ANY, *parts]
            out.append(tuple(part_matcher(p) for p in parts))
    return out or None


def sensitive_below(
    top: str,
    root: str,
    glob: str | None,
    is_sensitive: Callable[[str], bool],
    *,
    file_links: bool = False,
) -> list[str] | str:
    """Up to a few credential files a content search of directory ``top``
    may read, its include filter ``glob`` applied loosely (a file the filter
    might pass counts); ``root`` is the real workspace root. Why not, past
    :data:`MAX_SEARCH_WALK` entries: a bound never allows.

    Ignore files (.gitignore and the like) are not modelled: they differ per
    client and version, and a file they would hide only makes the answer
    stricter here. Links below ``top`` are not followed; with
    ``file_links``, a link to something other than a directory is reported
    (a search that reads it reads its target, wherever that is)."""
    filters = _filter_matchers(glob) if glob else None
    found: list[str] = []
    seen = 0
    base = os.path.relpath(top, root).replace(os.sep, "/")
    prefix = [] if base == "." else base.split("/")
    for rel, full, is_dir, is_link in walk(top, frozenset(), lambda _rel: True):
        seen += 1
        if seen > MAX_SEARCH_WALK:
            return (
                f"it would search more than {MAX_SEARCH_WALK} files and directories, so "
                "Charter cannot tell whether it reads a credential file; search a narrower "
                "directory"
            )
        if is_dir or (is_link and not file_links):
            continue
        if not is_link and not is_sensitive("/".join([*prefix, *rel])):
            continue
        if filters is None or any(could_match(m, tuple(rel), below=False) for m in filters):
            found.append(full)
            if len(found) >= _MAX_REPORTED:
                break  # one is enough to ask; a few name what the search would read
    return found


def working_dir(workspace: Path, target: str) -> tuple[str, str]:
    """``target``, the directory a client runs a command in, relative to the
    workspace root ('.' for the root itself), or why it is refused."""
    found = confine(workspace, target, op="read")
    if found.decision == "deny" or found.resolved is None:
        why = f"{found.message} [permission/{found.rule}]"
        return "", f"the shell's working directory {target!r} is refused: {why}"
    rel = os.path.relpath(found.resolved, os.path.realpath(workspace)).replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        why = "it is outside the workspace [permission/path-outside]"
        return "", f"the shell's working directory {target!r} is refused: {why}"
    return rel, ""


def credentials_searched(
    workspace: Path, target: str, glob: str | None, *, file_links: bool = False
) -> list[str] | str:
    """The credential files a content search of ``target`` (a path as the
    tool was given it) may read, filtered by ``glob``; none when ``target``
    is not a directory inside the workspace (its own verdict decides then);
    why not, past the bound. ``file_links``: report the links to files too.
    """
    verdict = confine(workspace, target, op="read")
    if verdict.decision == "deny" or verdict.resolved is None or not verdict.resolved.is_dir():
        return []
    root = os.path.realpath(workspace)
    return sensitive_below(str(verdict.resolved), root, glob, is_sensitive, file_links=file_links)


def files_ending_with(root: str, target: str) -> list[str] | str:
    """The files below ``root`` that Gemini CLI's path correction may take a
    relative ``target`` for when no file of that name exists where it points:
    a file named as ``target``'s last part whose path ends with ``target`` (as
    text), found by walking without following links. Why not, past
    :data:`MAX_SEARCH_WALK` entries."""
    name = posixpath.basename(target)
    if not name:
        return []
    found: list[str] = []
    seen = 0
    for _rel, full, is_dir, is_link in walk(root, frozenset(), lambda _rel: True):
        seen += 1
        if seen > MAX_SEARCH_WALK:
            return (
                f"no file {target!r} exists, and Gemini CLI would look for one below the "
                f"workspace, which holds more than {MAX_SEARCH_WALK} files and directories"
            )
        if not is_dir and not is_link and _rel[-1] == name and full.endswith(target):
            found.append(full)
    return found
