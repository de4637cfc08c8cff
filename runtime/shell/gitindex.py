"""The paths a git repository tracks, read from its index file.

``git diff`` of the working tree prints the changes of every tracked file of
the repository, wherever it runs. Walking the workspace for credential files
would ask about every project holding an ignored ``.env``; what git prints is
only what its index lists, so the guard reads that list (``.git/index``,
versions 2 to 4). Whatever it cannot read for certain (another version, a
split index, SHA-256 object names, a truncated file, more entries than the
bound) is ``None``, and the caller falls back to walking the whole tree.
"""

from __future__ import annotations

import os
import posixpath
import re
import struct

from charter.runtime.capped import read_regular

__all__ = ["find_git_dir", "remote_url_credentials", "tracked_paths"]

# A bound on entries read: past it the caller walks instead (never an allow).
MAX_ENTRIES = 200_000
_MAX_BYTES = 64 * 1024 * 1024
_HASH = 20  # SHA-1 object names; a SHA-256 repository is not read
_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size, hash, flags


def _read_regular(path: str, limit: int) -> bytes | None:
    """The file's bytes (see :func:`charter.runtime.capped.read_regular`); None when it
    is not a regular file or cannot be read. Missing: FileNotFoundError."""
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        raise
    except OSError:
        return None


def find_git_dir(cwd: str) -> tuple[str, str] | None:
    """(work tree root, git directory) of the repository git would use from
    ``cwd`` (a real path), or None when there is none or it cannot be told."""
    directory = cwd
    while True:
        dotgit = directory.rstrip("/") + "/.git"
        if os.path.isdir(dotgit):
            return directory, dotgit
        if os.path.isfile(dotgit):
            try:
                data = _read_regular(dotgit, 4096)
                line = data.split(b"\n", 1)[0].decode("utf-8").strip() if data else ""
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            target = line[len("gitdir:") :].strip()
            return directory, posixpath.join(directory, target)
        parent = posixpath.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _object_format_is_sha1(git_dir: str) -> bool:
    try:
        text = _read_regular(posixpath.join(git_dir, "config"), 1 << 20)
    except FileNotFoundError:
        return True
    return text is not None and b"objectformat" not in text.lower()


def tracked_paths(git_dir: str) -> list[str] | None:
    """The repository-relative paths the index lists, or None when the index
    cannot be read for certain. No index at all is an empty list (nothing is
    tracked yet)."""
    if not _object_format_is_sha1(git_dir):
        return None
    try:
        data = _read_regular(posixpath.join(git_dir, "index"), _MAX_BYTES)
    except FileNotFoundError:
        return []
    if data is None or len(data) > _MAX_BYTES or len(data) < 12 + _HASH or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4) or count > MAX_ENTRIES:
        return None
    end = len(data) - _HASH
    pos = 12
    names: list[str] = []
    previous = b""
    for _ in range(count):
        if pos + _FIXED > end:
            return None
        (flags,) = struct.unpack(">H", data[pos + 60 : pos + 62])
        start = pos + _FIXED
        if version >= 3 and flags & 0x4000:
            start += 2
        if version == 4:
            # the name is the previous one less N bytes, plus a suffix
            strip, start = _varint(data, start, end)
            if strip is None or strip > len(previous):
                return None
            stop = data.find(b"\0", start, end)
            if stop < 0:
                return None
            name = previous[: len(previous) - strip] + data[start:stop]
            pos = stop + 1
        else:
            stop = data.find(b"\0", start, end)
            if stop < 0:
                return None
            name = data[start:stop]
            # entries are padded with 1 to 8 NULs to a multiple of 8 bytes
            pos += (stop - pos + 8) & ~7
        previous = name
        names.append(name.decode("utf-8", "surrogateescape"))
    # A split index keeps most entries in another file: not read here.
    while pos + 8 <= end:
        signature = data[pos : pos + 4]
        (size,) = struct.unpack(">I", data[pos + 4 : pos + 8])
        if signature == b"link":
            return None
        pos += 8 + size
    return names


def _varint(data: bytes, pos: int, end: int) -> tuple[int | None, int]:
    """git's offset encoding (varint.c): each continuation adds one."""
    if pos >= end:
        return None, pos
    c = data[pos]
    pos += 1
    value = c & 127
    while c & 128:
        if pos >= end or value > 1 << 40:
            return None, pos
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 127)
    return value, pos


# An http(s) or ftp URL with user information (`https://user:token@host`,
# `https://TOKEN@host`): git prints it as it is stored.
_URL_WITH_USERINFO = re.compile(rb"(?i)\b(?:https?|ftps?)://[^/@\s\"']+@")
_CONFIG_LIMIT = 1 << 20


def remote_url_credentials(cwd: str) -> bool | None:
    """Whether the configuration of the repository git would use from
    ``cwd`` (a real path) stores a URL with user information, which ``git
    remote -v`` and ``git remote get-url`` print; None when it cannot tell."""
    found = find_git_dir(cwd)
    if found is None:
        return False
    git_dir = found[1]
    files = [posixpath.join(git_dir, "config"), posixpath.join(git_dir, "config.worktree")]
    try:
        common_raw = _read_regular(posixpath.join(git_dir, "commondir"), 4096)
    except FileNotFoundError:
        common_raw = b""
    if common_raw is None:
        return None
    try:
        common = common_raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if common:
        files.append(posixpath.join(git_dir, common, "config"))
    for path in files:
        try:
            data = _read_regular(path, _CONFIG_LIMIT)
        except FileNotFoundError:
            continue
        if data is None or len(data) > _CONFIG_LIMIT:
            return None
        if _URL_WITH_USERINFO.search(data) is not None:
            return True
    return False
