"""Exact-value redaction of a stream that arrives in pieces (a background
task's output as its pipes are drained)."""

from __future__ import annotations

from charter.runtime.redact import FAILED_MARKER, Redactor, find_secrets, tail_overlap

__all__ = ["StreamRedactor"]


class StreamRedactor:
    """Exact-value redaction of one stream fed a piece at a time.

    A secret may be split between two pieces; redacting each piece alone
    would write both halves in clear. So each call emits only text that no
    later text can change: everything before the earliest point from which
    the rest of the text could still be the start of a known secret, extended
    to the end of a secret that straddles that point. The rest is held back
    and emitted with the next piece, or by ``final=True``. What is emitted
    over the stream equals the redaction of the whole stream, while never
    holding more than the longest secret less one character (and, in
    ordinary output, nothing at all).

    Each piece costs time linear in the piece plus what is held back (see
    :func:`charter.runtime.redact.find_secrets`): a megabyte arriving in
    small pieces is not scanned again for every piece.

    Secrets are those the run's :class:`Redactor` knows when the text is
    emitted; one learned later cannot reach back into text already written.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def _replacement(self, value: str) -> str:
        out = self._redactor.redact(value, "stored")
        if out == FAILED_MARKER or value in out:
            # Fail closed: the caller's write fails and the task with it.
            raise ValueError("a secret could not be redacted")
        return out

    def feed(self, text: str, *, final: bool = False) -> str:
        buf = self._pending + text
        # The known values, read as one snapshot: which of them the end of
        # the text may be the start of decides how much to hold back.
        ordered, _ = self._redactor.snapshot()
        if not ordered:
            self._pending = ""
            return buf
        cut = len(buf)
        if not final:
            for value in ordered:
                cut = min(cut, len(buf) - tail_overlap(buf, value))
        present = [v for v in ordered if v in buf]
        if len(present) == 1 and tail_overlap(present[0], present[0]) == 0:
            # One value whose occurrences cannot overlap (no end of it is also
            # its start): every occurrence is a match, replaced at string speed.
            value = present[0]
            end = cut
            last = buf.rfind(value, 0, cut + len(value) - 1)  # the last to start before the cut
            if last != -1:
                end = max(end, last + len(value))
            self._pending = buf[end:]
            return buf[:end].replace(value, self._replacement(value))
        parts: list[str] = []
        pos = 0
        markers: dict[str, str] = {}
        for start, end, value in find_secrets(buf, present):
            if start >= cut:
                break
            # A match starting before the cut is final: no secret starting
            # at or before it reaches past the end of ``buf``.
            parts.append(buf[pos:start])
            marker = markers.get(value)
            if marker is None:
                marker = markers[value] = self._replacement(value)
            parts.append(marker)
            pos = end
            cut = max(cut, pos)
        parts.append(buf[pos:cut])
        self._pending = buf[cut:]
        return "".join(parts)

    @property
    def pending(self) -> int:
        """How many characters are held back."""
        return len(self._pending)
