"""``[read_paths]`` entries: the syntax Leviath accepts, how broad an entry
is, and whether the user's config grants it.

An entry is an exact path (granting its subtree), ``glob:<pattern>`` or
``regex:<pattern>`` (anchored at both ends). ``~/`` means the home
directory; a relative exact path or glob is relative to the run's working
directory; a regex must start at ``/``, a drive letter or ``~/``.

Nothing here touches the file system: a grant is judged on the patterns
alone, by reducing the declared entry to one representative path and asking
whether a grant matches it (what Leviath's own report does). A pattern that
admits no such path cannot be judged, and is reported as undetermined rather
than as ungranted.

Charter's runtime reads no path outside the workspace, granted or not; these
checks exist so ``charter validate`` says what a blueprint asks for and what
Leviath would do with it.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "GrantStatus",
    "entry_problem",
    "grant_status",
    "grants_problem",
    "is_broad",
]

GrantStatus = Literal["granted", "not granted", "undetermined"]

# Rust's regex engine (Leviath's) has no look-around and no back-references;
# a pattern using them is refused there, so it is refused here too.
_UNSUPPORTED_REGEX = re.compile(r"\(\?<?[=!]|\\[1-9]")
_HOME = "/home/you"  # a stand-in: judging patterns needs some home directory
_WORKDIR = "/work/dir"


def _absolute_shaped(text: str) -> bool:
    return text.startswith("/") or (len(text) >= 2 and text[0].isalpha() and text[1] == ":")


def _glob_problem(pattern: str) -> str | None:
    """What the glob syntax Leviath uses refuses: an unclosed ``[``, ``**``
    that is not a whole path component, and ``.`` or ``..`` components
    anywhere but at the start of a relative pattern."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1  # a leading ] is a literal member of the class
            while j < len(pattern) and pattern[j] != "]":
                j += 1
            if j >= len(pattern):
                return "an unclosed '[' character class"
            i = j + 1
            continue
        i += 1
    for part in pattern.split("/"):
        if "**" in part and part != "**":
            return "'**' must be a whole path component (as in 'a/**/b')"
    return None


def entry_problem(raw: str) -> str | None:
    """Why Leviath would refuse this entry at load, or None."""
    if not raw.strip():
        return "the entry is empty"
    if raw.startswith("regex:"):
        body = raw[len("regex:") :]
        if not body:
            return "the regex pattern is empty"
        if body.startswith("~") and not (body == "~" or body.startswith("~/")):
            return "only '~/' home expansion is supported"
        if not (body.startswith("~") or _absolute_shaped(body)):
            return (
                "a regex entry must start with '/', a drive letter or '~/'; use 'glob:' for a "
                "pattern relative to the working directory"
            )
        if _UNSUPPORTED_REGEX.search(body):
            return "look-around and back-references are not supported in regex entries"
        try:
            re.compile(body)
        except re.error as exc:
            return f"invalid regex: {exc}"
        return None
    if raw.startswith("glob:"):
        body = raw[len("glob:") :].replace("\\", "/")
        if not body:
            return "the glob pattern is empty"
        if body.startswith("~") and not (body == "~" or body.startswith("~/")):
            return "only '~/' home expansion is supported"
        problem = _glob_problem(body)
        if problem is not None:
            return f"invalid glob: {problem}"
        rest = body
        if not (body.startswith("~") or _absolute_shaped(body)):
            while rest.startswith(("./", "../")):
                rest = rest.split("/", 1)[1]
        if any(part in (".", "..") for part in rest.split("/")):
            return (
                "a glob cannot hold '.' or '..' components except at the start of a relative "
                "pattern"
            )
        return None
    if raw.startswith("~") and not (raw == "~" or raw.startswith(("~/", "~\\"))):
        return "only '~/' home expansion is supported"
    return None


def is_broad(raw: str) -> bool:
    """An entry that amounts to the whole home directory or any path at all."""
    pattern = raw
    for prefix in ("glob:", "regex:"):
        if pattern.startswith(prefix):
            pattern = pattern[len(prefix) :]
    pattern = pattern.replace("\\", "/")
    trimmed = pattern.rstrip("/")
    return trimmed in ("~", "", "/**", "/.+") or pattern.startswith(("**", "/.*"))


def _expand(text: str) -> str:
    if text == "~" or text.startswith("~/"):
        return _HOME + text[1:]
    if _absolute_shaped(text):
        return text
    while text.startswith("./"):
        text = text[2:]
    base = _WORKDIR
    while text.startswith("../"):
        base = base.rsplit("/", 1)[0] or "/"
        text = text[3:]
    return f"{base}/{text}" if text else base


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: Literal["exact", "glob", "regex"]
    text: str  # expanded path, glob or regex body

    def matches(self, path: str) -> bool:
        if self.kind == "exact":
            root = self.text.rstrip("/") or "/"
            return path == root or path.startswith(root.rstrip("/") + "/")
        if self.kind == "glob":
            return _glob_matches(self.text, path)
        try:
            return re.fullmatch(self.text, path) is not None
        except re.error:
            return False

    def sample(self) -> str | None:
        """One path this entry matches, or None when none can be named."""
        if self.kind == "exact":
            return self.text
        if self.kind == "glob":
            out = []
            for part in self.text.split("/"):
                if part == "**":
                    continue
                if "[" in part:
                    return None
                out.append(part.replace("*", "x").replace("?", "x"))
            return "/".join(out) or "/"
        if re.fullmatch(r"[A-Za-z0-9_/.~:-]*", self.text.replace("\\.", ".")):
            return self.text.replace("\\.", ".")
        return None


def _glob_matches(pattern: str, path: str) -> bool:
    # `*` does not cross '/', `**` (a whole component) crosses any number.
    # Memoised on (pattern part, path part): at most len(parts) * len(names)
    # states, however many `**` the pattern holds.
    parts = pattern.split("/")
    names = path.split("/")

    @functools.cache
    def walk(i: int, j: int) -> bool:
        if i == len(parts):
            return j == len(names)
        if parts[i] == "**":
            return any(walk(i + 1, k) for k in range(j, len(names) + 1))
        return j < len(names) and fnmatch.fnmatchcase(names[j], parts[i]) and walk(i + 1, j + 1)

    return walk(0, 0)


def _parse(raw: str) -> _Entry:
    if raw.startswith("regex:"):
        body = raw[len("regex:") :]
        if body.startswith("~"):
            body = re.escape(_HOME) + body[1:]
        return _Entry("regex", body)
    if raw.startswith("glob:"):
        return _Entry("glob", _expand(raw[len("glob:") :].replace("\\", "/")))
    return _Entry("exact", _expand(raw.replace("\\", "/")))


def grants_problem(grants: Iterable[str]) -> str | None:
    """Why the user's own grant list would not compile, or None."""
    for raw in grants:
        problem = entry_problem(raw)
        if problem is not None:
            return f"read_paths grant '{raw}' in your config: {problem}"
    return None


def grant_status(raw: str, grants: Sequence[str], *, allow_blueprint: bool) -> GrantStatus:
    """Whether the user's grants cover the declared entry ``raw``."""
    if allow_blueprint:
        return "granted"
    if not grants:
        return "not granted"
    sample = _parse(raw).sample()
    if sample is None:
        return "undetermined"
    compiled = [_parse(g) for g in grants]
    return "granted" if any(g.matches(sample) for g in compiled) else "not granted"
