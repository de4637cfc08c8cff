"""The extra readings of a command line that catch terminal and Unicode tricks.

The shell executes the raw text, so the raw text is always judged. Two more
readings are judged beside it: the text with ANSI escape sequences removed
(what a person sees in a terminal), and that text NFKC-folded with its
invisible characters removed (what a person reads, and what catches
full-width ``ｒｍ`` or ``＄（...）``). The strictest reading wins, so
normalisation can only add findings. Any hidden character is also a finding
of its own.

A character is *hidden* when a reviewer reading the command cannot see it,
or sees something bash does not read:

* every control character but tab and newline (``Cc``: escape sequences,
  ``\\r``, NUL, C1 controls);
* every format character (``Cf``: zero-width and bidi controls, the Unicode
  tag characters U+E0000-U+E007F, the soft hyphen, ...);
* line and paragraph separators (``Zl``, ``Zp``) and every space but U+0020
  (``Zs``): they look like a word or line break, and bash reads neither;
* private-use, unassigned and surrogate code points (``Co``, ``Cn``,
  ``Cs``): no font shows them reliably, and a later Unicode version may give
  an unassigned one any meaning;
* the variation selectors, combining grapheme joiner and Mongolian free
  variation selectors, and the blank letters (Hangul fillers, U+2800).
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

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
# Invisible characters whose general category does not say so.
_BLANK_OTHERS = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp", "Zs"})
# Removed for the reading a person sees. Controls stay: escape sequences
# are removed on their own, and a `\r` is a finding as it stands.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Co", "Cn", "Cs"})


# A NamedTuple: a tenth of a frozen dataclass's cost to define at start-up.
class Reading(NamedTuple):
    """One reading of a command's text (raw, ANSI-stripped or NFKC) for the guard to judge."""

    label: str  # "raw", "ansi-stripped" or "nfkc"
    text: str


def _hidden(ch: str) -> bool:
    # only called for characters outside printable ASCII, tab and newline
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES or _BLANK_OTHERS.match(ch) is not None


class _StripTable(dict[int, int | None]):
    """A ``str.translate`` table that deletes invisible characters, filled
    on first sight of each code point (so a long text costs C-speed lookups,
    not a Python call per character)."""

    def __missing__(self, code: int) -> int | None:
        ch = chr(code)
        keep = (
            unicodedata.category(ch) not in _INVISIBLE_CATEGORIES
            and _BLANK_OTHERS.match(ch) is None
        )
        value = code if keep else None
        self[code] = value
        return value


_STRIP = _StripTable()


def _strip_invisible(text: str) -> str:
    return text.translate(_STRIP)


class _MarkTable(dict[int, int]):
    """A ``str.translate`` table that turns each hidden character into NUL
    (itself hidden) and keeps every other, filled on first sight."""

    def __missing__(self, code: int) -> int:
        value = 0 if code > 0x7E and _hidden(chr(code)) else code
        self[code] = value
        return value


_MARK = _MarkTable({c: (0 if c < 0x20 and c not in (9, 10) else c) for c in range(0x7F)})


def hidden_characters(text: str, *, first: bool = False) -> list[tuple[int, str]]:
    """Positions and names of the hidden characters in ``text`` (see above);
    with ``first``, only the first one."""
    if _UNUSUAL.search(text) is None:
        return []
    marked = text.translate(_MARK)  # one character for one: positions hold
    found: list[tuple[int, str]] = []
    pos = marked.find("\x00")
    while pos >= 0:
        found.append((pos, _name(text[pos])))
        if first:
            break
        pos = marked.find("\x00", pos + 1)
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
    folded = unicodedata.normalize("NFKC", _strip_invisible(stripped))
    # NFKC can itself produce characters worth removing (and never removes
    # them), so strip once more after folding.
    folded = _strip_invisible(folded)
    if folded not in (text, stripped):
        out.append(Reading("nfkc", folded))
    return out
