"""Line continuations, removed where bash removes them, before lexing.

Bash deletes every backslash-newline pair while it reads its input, before
it splits words or recognises operators (so ``$\\<newline>(`` is ``$(``,
``&\\<newline>&`` is ``&&`` and ``a\\<newline>#`` is the word ``a#``), except
where it reads text verbatim: inside single quotes, inside ``$'...'``, in a
comment, and in the body of a here-document whose delimiter is quoted. A
backslash that is itself escaped (``\\\\<newline>``) does not join lines.

:func:`splice` removes every unescaped pair, pairing backslashes from left
to right as bash does. The lexer then reads the spliced text, and at each of
the four verbatim places it takes the text from the original instead
(:class:`Spliced` maps positions both ways). Those places end at the same
character in both texts (a quote, or a newline), so nothing read before or
after them changes; only their contents do.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

__all__ = ["Spliced", "splice"]

# Left to right, a backslash escapes the next character; only an escaped
# backslash or a newline can change what a later backslash means.
_PAIR = re.compile(r"\\[\\\n]")


# A slots dataclass, not a NamedTuple: the guard calls its methods once per
# offset it maps back, and on Python 3.11 a slot read is quicker than a
# NamedTuple field read.
@dataclass(frozen=True, slots=True)
class Spliced:
    """A text with its line continuations removed, and the way back."""

    raw: str
    text: str
    # raw offsets of the removed backslashes (each removal is two characters)
    raw_cuts: tuple[int, ...]
    # spliced offsets at which a removal happened (before that character)
    cuts: tuple[int, ...]

    def raw_at(self, pos: int) -> int:
        """The original offset of the spliced text's character ``pos``."""
        return pos + 2 * bisect_right(self.cuts, pos)

    def spliced_at(self, raw_pos: int) -> int:
        """How many spliced characters the original ``raw[:raw_pos]`` holds."""
        k = bisect_left(self.raw_cuts, raw_pos - 1)
        straddles = k < len(self.raw_cuts) and self.raw_cuts[k] == raw_pos - 1
        return raw_pos - 2 * k - (1 if straddles else 0)

    def cut_between(self, start: int, end: int) -> int | None:
        """The first removal inside the spliced range ``(start, end]``, if any."""
        k = bisect_right(self.cuts, start)
        if k < len(self.cuts) and self.cuts[k] <= end:
            return self.cuts[k]
        return None


def splice(raw: str) -> Spliced | None:
    """``raw`` with every unescaped backslash-newline removed, or None when
    it has none (the common case costs one substring search)."""
    if "\\\n" not in raw:
        return None
    pieces: list[str] = []
    raw_cuts: list[int] = []
    cuts: list[int] = []
    last = 0
    removed = 0
    for m in _PAIR.finditer(raw):
        if raw[m.start() + 1] != "\n":
            continue
        pieces.append(raw[last : m.start()])
        raw_cuts.append(m.start())
        cuts.append(m.start() - removed)
        removed += 2
        last = m.end()
    if not raw_cuts:
        return None
    pieces.append(raw[last:])
    return Spliced(raw, "".join(pieces), tuple(raw_cuts), tuple(cuts))
