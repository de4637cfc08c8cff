"""Replacing a file whole: the text goes to a temporary file in the same
directory, which is then renamed over the target. A reader sees the old file
or the new one, never half of either, and a crash leaves no torn file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, prefix: str, newline: str | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8). ``prefix`` names the temporary
    file so a leftover from a killed process says who wrote it; ``newline`` is
    passed to ``open`` as is. The parent directory must already exist."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
