"""The file tools: read, write, exact replacement, listing and search.

Every path goes through :func:`charter.runtime.policy.workspace.confine` first and
the tool then works on the *resolved* real path it returns, opened component
by component relative to a descriptor of the workspace root with no symlink
followed (:mod:`charter.runtime.tools.beneath`), so a directory or file
swapped for a symlink after the check makes the call fail instead of
reaching outside. A ``deny`` from confinement is
always a refusal; an ``ask`` is a refusal unless the gate pipeline says the
call was approved.

Text is UTF-8. Reads replace undecodable bytes (the model still sees the
rest); edits refuse a file that is not valid UTF-8, because writing it back
would silently change bytes the model never saw.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime.policy.workspace import PathOp, confine, is_sensitive
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.beneath import (
    NotRegularFile,
    PathChanged,
    open_child,
    opener_for,
)

if TYPE_CHECKING:
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "READ_CAP_BYTES",
    "run_list",
    "run_read",
    "run_replace",
    "run_search",
    "run_write",
]

READ_CAP_BYTES = 256 * 1024
_SKIP_CHUNK = 1 << 20
_LIST_MAX = 1000
_DIFF_MAX_CHARS = 64_000
# edit_file and patch hold the whole file in memory (and a second, edited
# copy): a sparse file the agent made with `truncate -s 1T` must not take
# Charter's own process down with it.
_EDIT_MAX_BYTES = 16 * 1024 * 1024
# search_files bounds: it walks a tree the model chose, so each is a guard
# against a huge checkout, not a tuning knob.
_SEARCH_MAX_FILES = 20_000
_SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024
_SEARCH_MAX_TOTAL_BYTES = 64 * 1024 * 1024
_SEARCH_MAX_SECONDS = 10.0
_SEARCH_LINE_CHARS = 300
# Deeper folders are not searched (and the answer says so): a walk holds one
# descriptor per level, and a tree made 5,000 levels deep crashed os.fwalk
# (RecursionError) after holding 1,000 descriptors.
_SEARCH_MAX_DEPTH = 64
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"})


def _error(rule: str, message: str, **data: Any) -> ToolResult:
    return refusal("error", "dispatch", rule, message, **data)


def _ok(content: str, **data: Any) -> ToolResult:
    return ToolResult("ok", content, data=dict(data))


def _confined(rt: ToolRuntime, path: str, op: PathOp, approved: bool) -> Path | ToolResult:
    d = confine(rt.workspace, path, op=op)
    if d.decision == "deny" or d.resolved is None:
        return refusal("denied", "dispatch", d.rule, d.message)
    if d.decision == "ask" and not approved:
        return refusal("denied", "dispatch", d.rule, f"{d.message}; it needs a person's approval")
    return d.resolved


def _confined_file(rt: ToolRuntime, path: str, op: PathOp, approved: bool) -> Path | ToolResult:
    """:func:`_confined` for a tool that works on one file: a trailing '/'
    means a directory (the kernel refuses ``file.txt/``), so such a path is
    never read, edited or written as a file named without the slash."""
    resolved = _confined(rt, path, op, approved)
    if isinstance(resolved, Path) and path.endswith(("/", "/.")):
        return _error("is-directory", f"{path} ends with '/', which names a directory")
    return resolved


def _display(rt: ToolRuntime, resolved: Path) -> str:
    rel = resolved.relative_to(os.path.realpath(rt.workspace))
    return rel.as_posix() or "."


def _open_read(rt: ToolRuntime, resolved: Path) -> int:
    opener, rel = opener_for(rt.workspace, resolved)
    return opener.open_regular(rel)


def _changed(path: str, exc: PathChanged) -> ToolResult:
    return refusal("denied", "dispatch", "path-changed", f"{path}: {exc}")


def _linked(path: str, info: os.stat_result, approved: bool) -> ToolResult | None:
    """A refusal for a regular file that has more than one name, unless a
    person approved the call. Confinement asks about such a file before the
    call; this catches a link made between that check and the open, and is
    decided on the descriptor actually read."""
    if approved or not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return None
    return refusal(
        "denied",
        "dispatch",
        "path-hardlink",
        f"{path} has {info.st_nlink} names (hard links); another name may be outside the "
        "workspace or a credential file; it needs a person's approval",
    )


def _looks_binary(fd: int) -> bool:
    head = os.pread(fd, 8192, 0) if hasattr(os, "pread") else b""
    return b"\x00" in head


def _read_text(
    rt: ToolRuntime, resolved: Path, offset: int, limit: int | None, approved: bool
) -> tuple[str, bool, int] | ToolResult:
    """Up to READ_CAP_BYTES of text from character ``offset``; returns the
    text, whether more follows, and the file's size in bytes."""
    try:
        fd = _open_read(rt, resolved)
    except PathChanged as exc:
        return _changed(resolved.name, exc)
    except FileNotFoundError:
        return _error("file-not-found", f"{resolved.name}: no such file")
    except IsADirectoryError:
        return _error("is-directory", f"{resolved.name} is a directory; use list_dir")
    except NotRegularFile:
        return _error("not-regular", f"{resolved.name} is not a regular file")
    except OSError as exc:
        return _error("file-unreadable", f"{resolved.name}: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return _error("is-directory", f"{resolved.name} is a directory; use list_dir")
        if not stat.S_ISREG(info.st_mode):
            return _error("not-regular", f"{resolved.name} is not a regular file")
        linked = _linked(resolved.name, info, approved)
        if linked is not None:
            return linked
        if _looks_binary(fd):
            return _error(
                "binary-file", f"{resolved.name} looks binary ({info.st_size} bytes); not shown"
            )
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace", newline="") as f:
            fd = -1
            skipped = 0
            # A character takes at least one byte (an undecodable byte is one
            # U+FFFD): an offset at or past the size needs no reading, which
            # spares a walk through a huge sparse file.
            if offset >= info.st_size:
                return "", False, info.st_size
            while skipped < offset:
                if rt.cancel.is_set():
                    return _error("cancelled", f"{resolved.name}: the read was cancelled")
                got = len(f.read(min(_SKIP_CHUNK, offset - skipped)))
                if got == 0:
                    break
                skipped += got
            want = READ_CAP_BYTES if limit is None else min(limit, READ_CAP_BYTES)
            text = f.read(want)
            encoded = text.encode("utf-8")
            cut = len(encoded) > READ_CAP_BYTES
            if cut:
                text = encoded[:READ_CAP_BYTES].decode("utf-8", errors="ignore")
            more = cut or f.read(1) != ""
            return text, more, info.st_size
    finally:
        if fd >= 0:
            os.close(fd)


def _read_one(
    rt: ToolRuntime, path: str, offset: int, limit: int | None, approved: bool
) -> ToolResult:
    resolved = _confined_file(rt, path, "read", approved)
    if isinstance(resolved, ToolResult):
        return resolved
    got = _read_text(rt, resolved, offset, limit, approved)
    if isinstance(got, ToolResult):
        return got
    text, more, size = got
    end = offset + len(text)
    capped_by_limit = limit is not None and len(text) >= limit
    if more and not capped_by_limit:
        note = (
            f"\n[truncated: showed characters {offset}-{end} of {path} ({size} bytes); "
            f"read on with offset={end}]"
        )
    elif more:
        note = f"\n[more follows: continue with offset={end}]"
    else:
        note = ""
    if not text and offset > 0 and not more:
        return _ok(f"(offset {offset} is past the end of {path})", size=size)
    return _ok(text + note, size=size, truncated=bool(more), next_offset=end if more else None)


def run_read(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    if tool == "read_files" or (tool is None and "paths" in args):
        paths = list(args["paths"])
        # Confinement first, for all of them: one refused path refuses the call
        # before any file is read.
        for p in paths:
            checked = _confined(rt, p, "read", approved)
            if isinstance(checked, ToolResult):
                return checked
        parts = []
        for p in paths:
            one = _read_one(rt, p, 0, None, approved)
            parts.append(f"=== {p} ===\n{one.content}")
        return _ok("\n\n".join(parts), files=len(paths))
    offset, limit = int(args.get("offset", 0)), args.get("limit")
    # The schema gate holds the model to these; a script's host call may
    # not pass through it, and f.read(-1) would read a whole file.
    if offset < 0 or (limit is not None and int(limit) < 1):
        return _error("read-bad-range", "offset must be 0 or more and limit 1 or more")
    return _read_one(rt, args["path"], offset, None if limit is None else int(limit), approved)


def _atomic_write(
    rt: ToolRuntime,
    resolved: Path,
    text: str,
    *,
    create_parents: bool,
    expect: tuple[int, int] | None = None,
) -> bool:
    """Write through a temporary file and rename, so a reader never sees half
    a file and a crash never leaves one; every directory on the way is opened
    by descriptor (see :mod:`charter.runtime.tools.beneath`). Returns whether
    the file existed."""
    opener, rel = opener_for(rt.workspace, resolved)
    return opener.replace(rel, text.encode("utf-8"), create_parents=create_parents, expect=expect)


def run_write(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    path, content = args["path"], args["content"]
    resolved = _confined_file(rt, path, "write", approved)
    if isinstance(resolved, ToolResult):
        return resolved
    try:
        existed = _atomic_write(rt, resolved, content, create_parents=True)
    except PathChanged as exc:
        return _changed(path, exc)
    except IsADirectoryError:
        return _error("is-directory", f"{path} is a directory or special file")
    except NotADirectoryError:
        return _error("not-directory", f"a parent of {path} is a file, not a directory")
    except PermissionError as exc:
        return _error("write-not-permitted", f"could not write {path}: {exc.strerror or exc}")
    except OSError as exc:
        return _error("write-failed", f"could not write {path}: {exc.strerror or exc}")
    size = len(content.encode("utf-8"))
    verb = "replaced" if existed else "created"
    return _ok(f"{verb} {path} ({size} bytes)", bytes=size, created=not existed)


def _load_for_edit(
    rt: ToolRuntime, resolved: Path, path: str, approved: bool
) -> tuple[str, tuple[int, int]] | ToolResult:
    """The file's text and identity (device, inode): the edit is written
    back only over this same file."""
    try:
        fd = _open_read(rt, resolved)
    except PathChanged as exc:
        return _changed(path, exc)
    except FileNotFoundError:
        return _error("file-not-found", f"{path}: no such file")
    except IsADirectoryError:
        return _error("is-directory", f"{path} is a directory")
    except NotRegularFile:
        return _error("not-regular", f"{path} is not a regular file")
    except OSError as exc:
        return _error("file-unreadable", f"{path}: {exc.strerror or exc}")
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        return _error("is-directory", f"{path} is a directory")
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(info.st_mode):
            return _error("not-regular", f"{path} is not a regular file")
        linked = _linked(path, info, approved)
        if linked is not None:
            return linked
        # Read one byte past the bound rather than trusting st_size: the
        # file may grow between the fstat and the read.
        data = f.read(_EDIT_MAX_BYTES + 1)
        if len(data) > _EDIT_MAX_BYTES:
            return _error(
                "file-too-large",
                f"{path} is larger than {_EDIT_MAX_BYTES // (1024 * 1024)} MiB; it cannot be "
                "edited in place with this tool. Nothing was changed.",
            )
    try:
        return data.decode("utf-8"), (info.st_dev, info.st_ino)
    except UnicodeDecodeError as exc:
        return _error(
            "not-utf8", f"{path} is not valid UTF-8 (byte {exc.start}); it cannot be edited as text"
        )


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def run_replace(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    is_patch = tool == "patch" or (tool is None and "old" in args)
    path = args["path"]
    old = args["old"] if is_patch else args["old_str"]
    new = args["new"] if is_patch else args["new_str"]
    want = int(args.get("count", 1)) if is_patch else 1
    if old == "":
        return _error("replace-empty", "the text to replace must not be empty")
    if want == 0 or want < -1:
        return _error("replace-bad-count", "count must be a positive number or -1 (all)")
    resolved = _confined_file(rt, path, "write", approved)
    if isinstance(resolved, ToolResult):
        return resolved
    loaded = _load_for_edit(rt, resolved, path, approved)
    if isinstance(loaded, ToolResult):
        return loaded
    text, identity = loaded
    found = text.count(old)
    what = "old" if is_patch else "old_str"
    if found == 0:
        return _error("replace-no-match", f"{what} was not found in {path}; nothing was changed")
    if want == 1 and found > 1:
        lines = []
        start = 0
        for _ in range(min(found, 5)):
            at = text.index(old, start)
            lines.append(str(_line_of(text, at)))
            start = at + 1
        return _error(
            "replace-ambiguous",
            f"{what} occurs {found} times in {path} (lines {', '.join(lines)}"
            f"{', ...' if found > 5 else ''}); include more surrounding text so it matches "
            "exactly once. Nothing was changed.",
            matches=found,
        )
    if want > 1 and found != want:
        return _error(
            "replace-count-mismatch",
            f"{what} occurs {found} times in {path}, not the {want} expected; nothing was changed",
            matches=found,
        )
    first_line = _line_of(text, text.index(old))
    updated = text.replace(old, new)
    try:
        _atomic_write(rt, resolved, updated, create_parents=False, expect=identity)
    except PathChanged as exc:
        return _changed(path, exc)
    except PermissionError as exc:
        return _error("write-not-permitted", f"could not write {path}: {exc.strerror or exc}")
    except OSError as exc:
        return _error("write-failed", f"could not write {path}: {exc.strerror or exc}")
    if not is_patch:
        return _ok(f"edited {path}: replaced 1 occurrence at line {first_line}", replaced=1)
    import difflib

    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
    if len(diff) > _DIFF_MAX_CHARS:
        diff = diff[:_DIFF_MAX_CHARS] + f"\n[diff truncated at {_DIFF_MAX_CHARS} characters]"
    return _ok(f"replaced {found} occurrence(s) in {path}\n{diff}", replaced=found)


def _kind(entry: os.DirEntry[str]) -> tuple[str, int]:
    if entry.is_symlink():
        return "link", -1
    if entry.is_dir(follow_symlinks=False):
        return "dir", -1
    try:
        return "file", entry.stat(follow_symlinks=False).st_size
    except OSError:
        return "file", -1


def run_list(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    path = args.get("path", ".")
    resolved = _confined(rt, path, "read", approved)
    if isinstance(resolved, ToolResult):
        return resolved
    opener, rel = opener_for(rt.workspace, resolved)
    try:
        with opener.directory(rel) as fd, os.scandir(fd) as it:
            # Entries read through the descriptor: lstat-style answers about
            # the directory that was opened, whatever its name points to now.
            entries = sorted(it, key=lambda e: e.name)
            listed = [(e.name, _kind(e)) for e in entries[:_LIST_MAX]]
    except PathChanged as exc:
        return _changed(path, exc)
    except FileNotFoundError:
        return _error("dir-not-found", f"{path}: no such directory")
    except NotADirectoryError:
        return _error("not-directory", f"{path} is a file; use read_file")
    except OSError as exc:
        return _error("dir-unreadable", f"{path}: {exc.strerror or exc}")
    lines = []
    for name, (kind, size) in listed:
        if kind == "link":
            lines.append(f"{name}@ (symbolic link)")
        elif kind == "dir":
            lines.append(f"{name}/")
        else:
            lines.append(f"{name} ({size} bytes)" if size >= 0 else name)
    if len(entries) > _LIST_MAX:
        lines.append(f"[{len(entries) - _LIST_MAX} more entries not shown]")
    shown = _display(rt, resolved)
    return _ok(
        f"{shown}:\n" + ("\n".join(lines) if lines else "(empty directory)"), entries=len(entries)
    )


def _entries(fd: int) -> tuple[list[str], list[str]]:
    """The sub-folders (minus the skipped ones) and the other entries of the
    folder ``fd``, each sorted. A symlink is never a folder here."""
    dirs, files = [], []
    with os.scandir(fd) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIP_DIRS:
                    dirs.append(entry.name)
            else:
                files.append(entry.name)
    return sorted(dirs), sorted(files)


def _tree(
    top_fd: int, skipped: dict[str, int]
) -> Generator[tuple[str, list[str], int], None, None]:
    """Folders under ``top_fd``, top-down in name order, as (path relative to
    the top, its files, a descriptor of it). Iterative, at most
    ``_SEARCH_MAX_DEPTH`` levels, one descriptor open per level; a folder
    that became a symlink or a mount point since it was listed is skipped
    and counted in ``skipped``."""
    dirs, files = _entries(top_fd)
    yield ".", files, top_fd
    stack: list[tuple[str, int, list[str]]] = [(".", top_fd, dirs[::-1])]
    try:
        while stack:
            path, fd, pending = stack[-1]
            if not pending:
                stack.pop()
                if fd != top_fd:
                    os.close(fd)
                continue
            name = pending.pop()
            if len(stack) > _SEARCH_MAX_DEPTH:
                skipped["deep"] += 1
                continue
            try:
                child = open_child(fd, name, os.O_RDONLY | os.O_DIRECTORY, ref=top_fd)
            except PathChanged:
                skipped["moved"] += 1
                continue
            except OSError:
                continue
            try:
                subdirs, subfiles = _entries(child)
            except OSError:
                os.close(child)
                continue
            sub = name if path == "." else f"{path}/{name}"
            stack.append((sub, child, subdirs[::-1]))
            yield sub, subfiles, child
    finally:
        for _, fd, _ in stack:
            if fd != top_fd:
                os.close(fd)


def run_search(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    query = args["query"]
    path = args.get("path", ".")
    target = args.get("target", "content")
    pattern = args.get("pattern", "*")
    case = bool(args.get("case_sensitive", True))
    limit = int(args.get("max_results", 50))
    if limit < 1:
        return _error("search-bad-limit", "max_results must be 1 or more")
    if target not in ("content", "name", "both"):
        return _error("search-bad-target", f"target must be content, name or both, not {target!r}")
    resolved = _confined(rt, path, "read", approved)
    if isinstance(resolved, ToolResult):
        return resolved
    opener, rel = opener_for(rt.workspace, resolved)
    root = Path(os.path.realpath(rt.workspace))
    needle = query if case else query.casefold()
    results: list[str] = []
    scanned_files = scanned_bytes = 0
    skipped_sensitive = skipped_linked = 0
    skipped = {"moved": 0, "deep": 0}
    stopped: str | None = None
    deadline = time.monotonic() + _SEARCH_MAX_SECONDS

    def matches(s: str) -> bool:
        return needle in (s if case else s.casefold())

    tree: Generator[tuple[str, list[str], int], None, None] | None = None
    try:
        top = opener.directory(rel)
        top_fd = top.__enter__()
    except PathChanged as exc:
        return _changed(path, exc)
    except OSError:
        return _error("not-directory", f"{path} is not a directory")
    try:
        # Every folder is opened relative to its parent's descriptor, never
        # through a symlink nor onto another mount, and every file relative
        # to its folder's: a folder renamed or swapped for a link mid-walk can
        # hide files from the search, never lead it outside.
        tree = _tree(top_fd, skipped)
        for dirpath, filenames, dir_fd in tree:
            here = resolved / dirpath
            for name in filenames:
                if len(results) >= limit:
                    stopped = f"stopped at {limit} results"
                    break
                if rt.cancel.is_set():
                    stopped = "cancelled"
                    break
                if time.monotonic() > deadline:
                    stopped = f"stopped after {_SEARCH_MAX_SECONDS:.0f} s"
                    break
                if scanned_files >= _SEARCH_MAX_FILES:
                    stopped = f"stopped after {_SEARCH_MAX_FILES} files"
                    break
                full = Path(os.path.normpath(here / name))
                try:
                    shown_rel = full.relative_to(root).as_posix()
                except ValueError:
                    shown_rel = full.as_posix()
                if is_sensitive(shown_rel):
                    skipped_sensitive += 1
                    continue
                if not fnmatch.fnmatchcase(name, pattern):
                    continue
                scanned_files += 1
                if target in ("name", "both") and matches(name):
                    results.append(shown_rel)
                    if target == "name":
                        continue
                if target == "name":
                    continue
                try:
                    # lstat first: a device node is never opened (opening
                    # one can act); the descriptor is checked again below.
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    if not stat.S_ISREG(info.st_mode):
                        continue
                    fd = open_child(dir_fd, name, os.O_RDONLY, ref=top_fd)
                    with os.fdopen(fd, "rb") as f:
                        info = os.fstat(f.fileno())
                        if not stat.S_ISREG(info.st_mode) or info.st_size > _SEARCH_MAX_FILE_BYTES:
                            continue
                        if info.st_nlink > 1:
                            # another name may be outside or a credential file
                            skipped_linked += 1
                            continue
                        if scanned_bytes + info.st_size > _SEARCH_MAX_TOTAL_BYTES:
                            stopped = (
                                f"stopped after {_SEARCH_MAX_TOTAL_BYTES // (1024 * 1024)} MB read"
                            )
                            break
                        data = f.read(_SEARCH_MAX_FILE_BYTES)
                except PathChanged:
                    skipped["moved"] += 1
                    continue
                except OSError:
                    continue
                scanned_bytes += len(data)
                if b"\x00" in data[:8192]:
                    continue
                for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                    if matches(line):
                        shown = line.strip()
                        if len(shown) > _SEARCH_LINE_CHARS:
                            shown = shown[:_SEARCH_LINE_CHARS] + "..."
                        results.append(f"{shown_rel}:{n}: {shown}")
                        if len(results) >= limit:
                            break
            if stopped:
                break
    finally:
        if tree is not None:
            tree.close()
        top.__exit__(None, None, None)
    lines = results[:limit] or [f"no matches for {query!r}"]
    notes = []
    if stopped:
        notes.append(f"[search {stopped}; narrow path or pattern for more]")
    if skipped_sensitive:
        notes.append(f"[{skipped_sensitive} sensitive file(s) not searched]")
    if skipped_linked:
        notes.append(f"[{skipped_linked} file(s) with several names (hard links) not searched]")
    if skipped["moved"]:
        notes.append(f"[{skipped['moved']} mount point(s) or changed entries not searched]")
    if skipped["deep"]:
        notes.append(
            f"[{skipped['deep']} folder(s) deeper than {_SEARCH_MAX_DEPTH} levels not searched]"
        )
    return _ok(
        "\n".join(lines + notes),
        matches=len(results[:limit]),
        files_scanned=scanned_files,
        complete=stopped is None and not skipped["deep"],
    )
