"""A plain table that fits the terminal and wraps only at word boundaries.

Each column is at least as wide as its longest word, so a word is never cut
while the table fits; the room left over goes to the columns whose text is
longest. When even the longest words side by side do not fit, each row is
printed as a short block instead (its leading cells on one line, then its
other cells as ``name: value``, wrapped to the width), so no line is wider
than the terminal. Only a word longer than the whole width is cut. Colour is
applied after the layout, so its codes never count toward a width.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

__all__ = ["MIN_WIDTH", "render_table"]

GAP = "  "
# Below this no layout is readable; lines may then exceed a narrower width.
MIN_WIDTH = 20

Style = Callable[[str], str]


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _wrap(text: str, width: int, indent: str = "", later: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=later,
        break_long_words=True,  # only a word longer than the width
        break_on_hyphens=False,  # attended-only stays one word
    ) or [indent.rstrip()]


def _share(room: int, minimum: list[int], natural: list[int]) -> list[int]:
    """Column widths: each at least its minimum, the room above the minimums
    given in proportion to how much more each column's text wants."""
    want = [n - m for n, m in zip(natural, minimum, strict=True)]
    if sum(want) <= room:
        return list(natural)
    total = sum(want)
    extra = [room * w // total for w in want]
    left = room - sum(extra)
    # The rounding's remainder goes to the columns that still want the most.
    for i in sorted(range(len(want)), key=lambda i: extra[i] - want[i])[:left]:
        extra[i] += 1
    return [m + e for m, e in zip(minimum, extra, strict=True)]


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    lead: int = 1,
    styles: dict[int, Style] | None = None,
    header_style: Style | None = None,
    title: str | None = None,
) -> list[str]:
    """The table's lines, none wider than ``width`` (at least :data:`MIN_WIDTH`).

    ``lead`` is how many leading columns head a row's block when the table
    cannot fit; ``styles`` colours a column's cells after they are laid out
    (so colour codes never count toward a width); ``title`` is a line above
    it, wrapped like the cells."""
    width = max(width, MIN_WIDTH)
    styles = styles or {}
    head = _wrap(title, width) if title else []
    return head + _lay_out(headers, rows, width, lead, styles, header_style)


def _lay_out(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    lead: int,
    styles: dict[int, Style],
    header_style: Style | None,
) -> list[str]:
    cells = [list(headers), *[list(r) for r in rows]]
    columns = len(headers)
    minimum = [max(_longest_word(row[i]) for row in cells) for i in range(columns)]
    natural = [max(len(" ".join(row[i].split())) for row in cells) for i in range(columns)]
    room = width - sum(minimum) - len(GAP) * (columns - 1)
    if room < 0:
        return _blocks(headers, rows, width, lead, styles)
    widths = _share(room, minimum, natural)
    out: list[str] = []
    for index, row in enumerate(cells):
        wrapped = [_wrap(row[i], widths[i]) for i in range(columns)]
        for line_no in range(max(len(w) for w in wrapped)):
            parts = []
            for i in range(columns):
                text = wrapped[i][line_no] if line_no < len(wrapped[i]) else ""
                padded = text.ljust(widths[i]) if i < columns - 1 else text
                if index == 0 and header_style is not None and text:
                    padded = padded.replace(text, header_style(text), 1)
                elif index > 0 and i in styles and text:
                    padded = padded.replace(text, styles[i](text), 1)
                parts.append(padded)
            out.append(GAP.join(parts).rstrip())
        if index == 0:
            out.append(GAP.join("-" * w for w in widths))
    return out


def _blocks(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    lead: int,
    styles: dict[int, Style],
) -> list[str]:
    """One block a row: the leading cells, then the one-word cells together
    on one wrapped line, then each cell of several words on its own."""
    out: list[str] = []
    for row in rows:
        out += _wrap(GAP.join(row[:lead]), width, later="  ")
        short: list[str] = []
        long: list[str] = []
        for i in range(lead, len(headers)):
            value = " ".join(row[i].split())
            (long if " " in value else short).append(f"{headers[i]}: {value}")
        paragraphs = ([GAP.join(short)] if short else []) + long
        for text in paragraphs:
            out += _wrap(text, width, indent="  ", later="    ")
    return [_paint(line, headers, styles) for line in out] if styles else out


def _paint(line: str, headers: Sequence[str], styles: dict[int, Style]) -> str:
    """A block line with each styled cell's value (the word after its
    ``name: ``) coloured."""
    for i, style in styles.items():
        label = f"{headers[i]}: "
        at = line.find(label)
        if at < 0:
            continue
        start = at + len(label)
        end = line.find(" ", start)
        end = len(line) if end < 0 else end
        word = line[start:end]
        if word:
            line = line[:start] + style(word) + line[end:]
    return line
