"""The root of every exception Charter raises on purpose.

Callers catch :class:`CharterError` to handle anything Charter reports,
or a subclass for one concern. The tree of subclasses is drawn below and
kept true by ``tests/test_errors.py``:

    CharterError
"""

from __future__ import annotations

__all__ = ["CharterError"]


class CharterError(Exception):
    """Something Charter refuses or cannot do, with a message that says why."""
