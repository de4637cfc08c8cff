"""Reading a file someone else wrote (a lock, a script, a repository's
configuration, an ignore file) with a bound, and only when it is a file.

The bound is enforced by reading one byte past it, not by asking the file's
size first: a file that grows between the two steps cannot make the read
unbounded. The file is opened without waiting and read only once ``fstat``
says it is a regular file: opening a FIFO for reading waits for a writer,
so one planted where Charter reads a file would hold the decision forever,
and a device (``/dev/zero``) never ends.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_regular", "read_text_capped"]


def read_regular(path: str | Path, most: int) -> bytes | None:
    """Up to ``most`` + 1 bytes of ``path`` when it is a regular file (more
    than ``most`` tells the caller it is larger); None when it is something
    else. An :class:`OSError` from opening or reading propagates as it is
    (FileNotFoundError when there is no such file, IsADirectoryError for a
    folder)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # as open() says of a folder
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            return None
        chunks: list[bytes] = []
        left = most + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_capped(path: Path, most: int) -> str:
    """The UTF-8 text of ``path``, at most ``most`` bytes of it. An
    :class:`OSError` from opening or reading propagates as it is; a larger
    file, one that is not a regular file, or one that is not UTF-8, raises
    :class:`ValueError` whose message says which (``larger than N bytes``,
    ``not a regular file``, ``not UTF-8 (byte K)``), for the caller to put
    in its own words."""
    data = read_regular(path, most)
    if data is None:
        raise ValueError("not a regular file")
    if len(data) > most:
        raise ValueError(f"larger than {most} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
