"""Reading a file someone else wrote (a lock, a script) with a bound.

The bound is enforced by reading one byte past it, not by asking the file's
size first: a file that grows between the two steps, or a FIFO, cannot make
the read unbounded.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_text_capped"]


def read_text_capped(path: Path, most: int) -> str:
    """The UTF-8 text of ``path``, at most ``most`` bytes of it. An
    :class:`OSError` from opening or reading propagates as it is; a larger
    file, or one that is not UTF-8, raises :class:`ValueError` whose message
    says which (``larger than N bytes``, ``not UTF-8 (byte K)``), for the
    caller to put in its own words."""
    with path.open("rb") as fh:
        data = fh.read(most + 1)
    if len(data) > most:
        raise ValueError(f"larger than {most} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
