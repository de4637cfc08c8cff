"""The extra readings of a command line that catch terminal and Unicode tricks.

The shell executes the raw text, so the raw text is always judged. Two more
readings are judged beside it: the text with ANSI escape sequences removed
(what a person sees in a terminal), and that text NFKC-folded with zero-width
and bidirectional control characters removed (what a person reads, and what
catches full-width ``ｒｍ`` or ``＄（...）``). The strictest reading wins, so
normalisation can only add findings. Any hidden character is also a finding
of its own.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Reading", "hidden_characters", "readings"]

# Everything outside printable ASCII, tab and newline.
_UNUSUAL = re.compile(r"[^\t\n\x20-\x7e]")
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]"  # two-byte sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
# Zero-width and bidirectional controls: invisible, or they reorder what is shown.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Reading:
    """One reading of a command's text (raw, ANSI-stripped or NFKC) for the guard to judge."""

    label: str  # "raw", "ansi-stripped" or "nfkc"
    text: str


def hidden_characters(text: str) -> list[tuple[int, str]]:
    """Positions and names of control, escape, zero-width and bidi characters."""
    if _UNUSUAL.search(text) is None:
        return []
    found: list[tuple[int, str]] = []
    for m in _CONTROL.finditer(text):
        found.append((m.start(), _name(m.group())))
    for m in _INVISIBLE.finditer(text):
        found.append((m.start(), _name(m.group())))
    found.sort()
    return found


def _name(ch: str) -> str:
    return unicodedata.name(ch, f"U+{ord(ch):04X}")


def readings(text: str) -> list[Reading]:
    """The distinct readings of ``text``, raw first."""
    out = [Reading("raw", text)]
    if _UNUSUAL.search(text) is None:
        return out
    stripped = _ANSI.sub("", text)
    if stripped != text:
        out.append(Reading("ansi-stripped", stripped))
    folded = unicodedata.normalize("NFKC", _INVISIBLE.sub("", stripped))
    # NFKC can itself produce characters worth removing (and never removes
    # them), so strip once more after folding.
    folded = _INVISIBLE.sub("", folded)
    if folded not in (text, stripped):
        out.append(Reading("nfkc", folded))
    return out
