"""Which repository git would use, and whether its configuration is trusted.

git reads the configuration of the repository it discovers, and that
configuration names programs git runs on its own: ``diff.external``,
``core.fsmonitor`` (on ``git status``), textconv and filter drivers, pagers.
A read-only ``git diff`` is only read-only when that configuration is one
the agent could not have written without approval. Charter trusts:

* a ``.git`` directory (writes under any ``.git/`` need a person's approval);
* a ``.git`` file or link whose target lies in a ``.git`` directory (linked
  worktrees, submodules) or outside the workspace;

and never a workspace laid out as a bare repository (``HEAD``, ``objects/``,
``refs/`` and a ``config`` the agent may have written), which git would take
for a repository of its own, nor a trusted configuration that includes a
file from the workspace or names a helper program inside it. The shell
child's environment also sets ``safe.bareRepository=explicit``
(``charter.runtime.policy.env``), so a git that honours it refuses the bare layout
anyway; the guard does not rely on that alone (older gits ignore it).

The discovery follows git's order (``.git`` in a directory before the
directory itself as a bare repository, then the parent), from the real
working directory up to the root. Configuration files are read up to
:data:`CONFIG_LIMIT` bytes in all; a larger one is not trusted.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat

from charter.runtime.capped import read_regular

__all__ = ["CONFIG_LIMIT", "untrusted_repository"]

CONFIG_LIMIT = 256 * 1024

# Keys whose value is a command git runs (the first word is the program).
_HELPER_KEY = re.compile(
    r"^(?:core\.(?:fsmonitor|pager|sshcommand|editor|askpass)"
    r"|diff\.external|diff\..+\.(?:textconv|command)|filter\..+\.(?:clean|smudge|process)"
    r"|pager\..+|interactive\.difffilter|gpg\.(?:.+\.)?program|sequence\.editor"
    r"|merge\..+\.driver|credential\.helper|uploadpack\.packobjectshook)$"
)
_INCLUDE_KEY = re.compile(r"^include(?:if\..+)?\.path$")
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _in_git_dir(path: str) -> bool:
    return ".git" in path.split("/")


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def _looks_bare(path: str) -> bool:
    """What git could take for a repository directory: a HEAD with objects
    (or a commondir pointing at them). Deliberately loose: a false match
    only makes git ask."""
    return _exists(path + "/HEAD") and (_exists(path + "/objects") or _exists(path + "/commondir"))


def _gitfile_target(path: str, directory: str) -> str | None:
    try:
        head = read_regular(path, 4096)
    except OSError:
        return None
    if head is None:
        return None
    line = head.split(b"\n", 1)[0].strip()
    if not line.startswith(b"gitdir:"):
        return None
    target = line[len(b"gitdir:") :].strip().decode("utf-8", "replace")
    if not target:
        return None
    return os.path.realpath(posixpath.join(directory, target))


def untrusted_repository(cwd: str, ws_real: str, *, resolved: bool = False) -> str | None:
    """A description of the untrusted repository git would use from ``cwd``
    (already a real path when ``resolved``), or None when it would use a
    trusted one (or none at all)."""
    directory = cwd if resolved else os.path.realpath(cwd)
    while True:
        dotgit = directory.rstrip("/") + "/.git"
        try:
            info = os.lstat(dotgit)
        except (OSError, ValueError):
            info = None
        if info is not None:
            gitdir: str | None = None
            if stat.S_ISLNK(info.st_mode):
                target = os.path.realpath(dotgit)
                if os.path.isdir(target):
                    gitdir = target
                elif os.path.isfile(target):
                    gitdir = _gitfile_target(target, directory)
                    if gitdir is None:
                        return f"the unreadable git file {dotgit}"
                else:
                    gitdir = None
                if gitdir is not None and _within(gitdir, ws_real) and not _in_git_dir(gitdir):
                    return f"the repository {gitdir}, which a link in the workspace points to"
            elif stat.S_ISDIR(info.st_mode):
                gitdir = dotgit if _looks_bare(dotgit) else None
            elif stat.S_ISREG(info.st_mode):
                gitdir = _gitfile_target(dotgit, directory)
                if gitdir is None:
                    return f"the unreadable git file {dotgit}"
                if _within(gitdir, ws_real) and not _in_git_dir(gitdir):
                    return f"the repository {gitdir}, which the git file {dotgit} points to"
            if gitdir is not None:
                return _config_problem(gitdir, ws_real)
        if _looks_bare(directory):
            if _within(directory, ws_real) and not _in_git_dir(directory):
                return f"the directory {directory} as a bare repository"
            return _config_problem(directory, ws_real)
        parent = posixpath.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _config_problem(gitdir: str, ws_real: str) -> str | None:
    """Why the configuration of the repository at ``gitdir`` is not trusted."""
    files = [gitdir + "/config", gitdir + "/config.worktree"]
    try:
        common_raw = read_regular(gitdir + "/commondir", 4096)
    except OSError:
        common_raw = b""
    if common_raw is None:
        return f"a repository whose {gitdir}/commondir is not a regular file"
    common = common_raw.decode("utf-8", "replace").strip()
    if common:
        files.insert(0, os.path.realpath(posixpath.join(gitdir, common)) + "/config")
    budget = [CONFIG_LIMIT]
    for path in files:
        problem = _config_file_problem(path, ws_real, budget, depth=0)
        if problem is not None:
            return problem
    return None


def _config_file_problem(path: str, ws_real: str, budget: list[int], depth: int) -> str | None:
    try:
        data = read_regular(path, budget[0])
    except OSError:
        return None  # no such file: nothing to run
    if data is None:
        return f"a repository whose configuration ({path}) is not a regular file"
    budget[0] -= len(data)
    if budget[0] < 0:
        return f"a repository whose configuration ({path}) is too large to check"
    section = ""
    for raw_line in data.decode("utf-8", "replace").splitlines():
        line = raw_line.strip()
        m = _SECTION.match(line)
        if m is not None:
            name = m.group(1).lower()
            section = name + ("." + m.group(2) if m.group(2) is not None else "")
            line = line[m.end() :].strip()
        if not line or line[0] in "#;[":
            continue
        key, eq, value = line.partition("=")
        full = (section + "." + key.strip()).lower() if section else key.strip().lower()
        value = _unquote(value.strip()) if eq else ""
        if _INCLUDE_KEY.match(full) and value:
            target = _resolve(value, posixpath.dirname(path))
            if target is None:
                continue
            if _within(target, ws_real) and not _in_git_dir(target):
                return f"a repository whose configuration includes {target}, inside the workspace"
            if depth < 3:
                problem = _config_file_problem(target, ws_real, budget, depth + 1)
                if problem is not None:
                    return problem
        elif _HELPER_KEY.match(full) and value:
            program = _program_path(value, ws_real)
            if program is not None:
                return (
                    f"a repository whose configuration ({full}) runs {program}, "
                    "a program inside the workspace"
                )
    return None


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _resolve(value: str, base: str) -> str | None:
    if value.startswith("~"):
        return None  # the home directory: the runtime's, outside the workspace
    return os.path.realpath(posixpath.join(base, value))


def _program_path(value: str, ws_real: str) -> str | None:
    """The helper's program when it is a file inside the workspace (outside
    any ``.git``): a relative path (git runs helpers from the top of the work
    tree) or an absolute one below the workspace."""
    word = value.lstrip("!").strip().split(None, 1)[0] if value.strip("! ") else ""
    word = word.strip("'\"")
    if "/" not in word:
        return None  # looked up on PATH, or a boolean (core.fsmonitor = true)
    if not word.startswith("/"):
        return None if _in_git_dir(word) else word
    real = os.path.realpath(word)
    if _within(real, ws_real) and not _in_git_dir(real):
        return real
    return None
