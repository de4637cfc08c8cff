"""Looking through a directory tree the way a recursive program will.

``grep -r``, ``rg``, ``find``, ``du``, ``ls -R``, ``tree`` and ``diff -r``
read or list every entry below the paths they are given, so what the command
line shows is not what they touch. Before such a command is allowed the
guard walks the same tree: a credential file anywhere in it makes the
command at least the ask that naming the file would be, and when the program
follows symlinks (``grep -R``, ``find -L``, ``rg -L``, ``du -L``, ``ls -LR``,
``tree -l``, ``diff -r``) a link that leads out of the workspace makes it
the ask that naming the target would be.

The walk is bounded by a number of entries. Past the bound the answer is
"too large", which the guard turns into an ask: a bound is never a way to
allow. The cost is one ``scandir`` per directory plus a ``realpath`` per
symlink that is followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from charter.runtime.capped import read_regular

__all__ = [
    "IGNORE_FILES",
    "WALK_LIMIT",
    "Budget",
    "Found",
    "gitignored_dirs",
    "negates",
    "walk_tree",
    "whitelisted_above",
]

# Entries looked at per simple command: a checkout of a few thousand files
# is walked in a few milliseconds; a tree with node_modules usually is not.
WALK_LIMIT = 20_000


# Budget is mutable state, compared by identity; Found is a NamedTuple (a
# tenth of a frozen dataclass's cost to define at start-up).
@dataclass(slots=True, eq=False)
class Budget:
    """Entries left to look at, shared by every root of one command."""

    left: int = WALK_LIMIT


class Found(NamedTuple):
    """The first reason the tree is not plainly readable."""

    kind: Literal["credential", "outside", "too-large"]
    path: str  # the entry, relative to the workspace
    target: str = ""  # for "outside": where the link leads


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def walk_tree(
    root: str,
    ws_real: str,
    *,
    follow: bool,
    hidden: bool,
    depth: int | None,
    secret: Callable[[str], bool],
    budget: Budget,
    skip_dirs: frozenset[str] = frozenset(),
    whitelists: bool = False,
) -> Found | None:
    """Walk the tree below ``root`` (a real path inside ``ws_real``).

    ``secret`` tells whether a workspace-relative path names a credential.
    Entries whose name starts with "." are skipped unless ``hidden``, and
    directories named in ``skip_dirs`` are not entered (see
    :func:`gitignored_dirs`); a symlink is only looked through when
    ``follow``, and then a directory it leads to (inside the workspace) is
    walked too, once.

    ``whitelists`` is ripgrep's reading: a `!` line in an ignore file (in the
    tree, above it, or git's global and repository excludes) re-includes
    names, hidden ones too, so below such a file hidden entries are walked.
    """
    base = ws_real.rstrip("/") + "/"
    if whitelists and not hidden and (negates(root) or whitelisted_above(root)):
        hidden = True
    stack: list[tuple[str, int, frozenset[str], bool]] = [(root, 0, skip_dirs, hidden)]
    seen: set[str] = {root}
    # The parent directories were judged when they were entered, so an
    # entry's own name decides (.config/gcloud is the one two-part name).
    names: dict[str, bool] = {}
    while stack:
        directory, level, skip, hidden = stack.pop()
        if depth is not None and level >= depth:
            continue
        if (skip or (whitelists and not hidden)) and level > 0 and negates(directory):
            # a deeper ignore file may re-include a skipped or hidden name
            skip = frozenset()
            hidden = hidden or whitelists
        try:
            entries = os.scandir(directory)
        except OSError:
            continue  # what the guard cannot open, the program cannot read either
        with entries:
            for entry in entries:
                budget.left -= 1
                if budget.left < 0:
                    return Found("too-large", _rel(directory, base))
                if not hidden and entry.name.startswith("."):
                    continue
                name = entry.name
                path = directory.rstrip("/") + "/" + name
                known = names.get(name)
                if known is None:
                    known = names[name] = secret(name)
                if known or (name.casefold() == "gcloud" and secret(_rel(path, base))):
                    return Found("credential", _rel(path, base))
                try:
                    is_link = entry.is_symlink()
                    is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_link:
                    if not follow:
                        continue
                    real = os.path.realpath(path)
                    if not _within(real, ws_real):
                        return Found("outside", _rel(path, base), real)
                    if real != ws_real and secret(_rel(real, base)):
                        return Found("credential", _rel(path, base), real)
                    if os.path.isdir(real) and real not in seen:
                        seen.add(real)
                        stack.append((real, level + 1, skip, hidden))
                elif is_dir and name not in skip:
                    stack.append((path, level + 1, skip, hidden))
    return None


def _rel(path: str, base: str) -> str:
    return path[len(base) :] if path.startswith(base) else "."


_PLAIN_NAME = re.compile(r"^(?:\*\*/)?([A-Za-z0-9._-]+)/?$")
# ripgrep's ignore files, in which a `!` line can re-include what a
# .gitignore excludes
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")


_IGNORE_FILE_MAX = 1 << 20


class _TooLarge(Exception):
    """An ignore file larger than the guard reads: it may hold anything."""


def _read_lines(path: str) -> list[str] | None:
    """The lines of an ignore file, None when there is none. Raises
    :class:`_TooLarge` past the bound: a part left unread could hold a
    negation, so callers read that as the stricter answer."""
    try:
        data = read_regular(path, _IGNORE_FILE_MAX)
    except OSError:
        return None
    if data is None or len(data) > _IGNORE_FILE_MAX:
        raise _TooLarge(path)  # (a FIFO or a device: unreadable, so the same)
    # Lines end at a newline only, as git reads them: str.splitlines would
    # also cut at \v, \f, \x1c..., making a different pattern of one line.
    return data.decode("utf-8", "replace").split("\n")


def _negating(path: str) -> bool:
    try:
        lines = _read_lines(path)
    except _TooLarge:
        return True
    # git reads `!` only in the first column; ` !x` is a pattern. Treating it
    # as a negation too only walks more.
    return lines is not None and any(line.lstrip().startswith("!") for line in lines)


def negates(directory: str) -> bool:
    """Whether an ignore file in ``directory`` re-includes anything (or is
    too large to read whole)."""
    return any(_negating(directory.rstrip("/") + "/" + name) for name in IGNORE_FILES)


def _global_excludes() -> list[str]:
    """git's per-user exclude files, where a `!` also re-includes (ripgrep
    reads them): the XDG default, and any core.excludesFile a user git config
    names (read as "may negate", since the guard does not parse git config)."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (home + "/.config" if home else "")
    files = [xdg + "/git/ignore"] if xdg else []
    for config in (home + "/.gitconfig", xdg + "/git/config"):
        try:
            data = read_regular(config, _IGNORE_FILE_MAX)
        except OSError:
            continue
        if data is None or b"excludesfile" in data.lower():
            files.append("")  # unknown file: counts as negating
    return files


def whitelisted_above(root: str) -> bool:
    """Whether an ignore file ripgrep reads for ``root`` (in its parents, in
    the repository's info/exclude, or git's global excludes) re-includes
    anything, so hidden names below ``root`` may be searched."""
    directory = os.path.dirname(root.rstrip("/")) or "/"
    for _ in range(256):
        if negates(directory) or _negating(directory.rstrip("/") + "/.git/info/exclude"):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    else:
        return True  # deeper than the guard looks: the stricter answer
    return any(path == "" or _negating(path) for path in _global_excludes())


def gitignored_dirs(root: str) -> frozenset[str]:
    """Directory names ripgrep is certain to skip below ``root``: plain
    names (``node_modules``, ``target/``, ``**/dist``) listed in a
    ``.gitignore`` at ``root`` or above it, up to the top of the git
    repository ``root`` is in. Nothing outside a git repository (ripgrep
    then ignores .gitignore), and nothing at all when an ignore file on the
    way holds a negation (``!``), which could re-include a directory. The
    walk stops skipping below a directory whose own ignore files negate.
    Missing a name only means walking more; a name here is one ripgrep
    skips, because git cannot re-include a file below an excluded
    directory."""
    names: set[str] = set()
    directory = root
    dirs: list[str] = []
    in_repo = False
    for _ in range(64):
        dirs.append(directory)
        if os.path.lexists(directory.rstrip("/") + "/.git"):
            in_repo = True
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if not in_repo:
        return frozenset()
    for d in dirs:
        if negates(d):
            return frozenset()
        try:
            lines = _read_lines(d.rstrip("/") + "/.gitignore") or []
        except _TooLarge:
            return frozenset()
        for line in lines:
            # As git reads a line: leading blanks belong to the pattern (so
            # ` build/` names no directory called build), trailing spaces are
            # dropped unless a backslash escapes one (then it is no plain name).
            pattern = line.rstrip(" ")
            if pattern.endswith("\\"):
                continue
            m = _PLAIN_NAME.match(pattern)
            if m is not None and m.group(1) not in (".", ".."):
                names.add(m.group(1))
    return frozenset(names)
