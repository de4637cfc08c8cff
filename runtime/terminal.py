"""Whether a stream is a terminal and wants colour, decided once for every verb.

Colour follows the no-color.org conventions: ``NO_COLOR`` turns it off,
``FORCE_COLOR`` turns it on anywhere (``NO_COLOR`` winning when both are set),
and otherwise a terminal gets colour unless ``TERM=dumb``. ``charter --color``
sets one of the two variables for the length of a command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

__all__ = ["is_terminal", "wants_colour"]


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def wants_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    return is_terminal(stream) and env.get("TERM") != "dumb"
