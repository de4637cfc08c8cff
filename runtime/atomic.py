"""Replacing a file whole: the text goes to a temporary file in the same
directory, which is then renamed over the target. A reader sees the old file
or the new one, never half of either, and a crash leaves no torn file.

The temporary file is created by ``tempfile.mkstemp``, so the result is
readable by its owner only (0600 on POSIX)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["fsync_dir", "write_atomic"]


def write_atomic(
    path: Path, text: str, *, prefix: str, newline: str | None = None, durable: bool = False
) -> None:
    """Replace ``path`` with ``text`` (UTF-8). ``prefix`` names the temporary
    file so a leftover from a killed process says who wrote it; ``newline`` is
    passed to ``open`` as is. The parent directory must already exist.

    With ``durable`` the new content is synced to disk before the rename and
    the directory entry after it, so once this returns the file survives a
    crash of the machine, not only of the process: what a caller announces
    after a durable write is really on disk."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Sync ``directory``'s entries (a file just created or renamed there).
    Windows cannot open a directory for syncing; there it is a no-op."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
