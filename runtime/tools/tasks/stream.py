"""Exact-value redaction of a stream that arrives in pieces (a background
task's output as its pipes are drained)."""

from __future__ import annotations

from charter.runtime.redact import FAILED_MARKER, Redactor, find_secrets, tail_overlap

__all__ = ["StreamRedactor"]

# Below this many held-back characters the full computation is cheap anyway.
_PREFIX_STATE_MIN = 256


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
        # Held-back text that is wholly a proper prefix of one known value:
        # kept as pieces, so a long secret arriving in small pieces is not
        # copied and scanned again for every piece (see ``_extend``).
        self._prefix_of: str | None = None
        self._prefix_snapshot: tuple[str, ...] | None = None
        self._parts: list[str] = []
        self._parts_len = 0

    def _replacement(self, value: str) -> str:
        out = self._redactor.redact(value, "stored")
        if out == FAILED_MARKER or value in out:
            # Fail closed: the caller's write fails and the task with it.
            raise ValueError("a secret could not be redacted")
        return out

    def _extend(self, text: str, ordered: tuple[str, ...]) -> bool:
        """Hold ``text`` back at the cost of the piece alone, when that is
        what the full computation would do: the held text is a proper prefix
        of a known value and stays one with ``text`` appended. Then that value
        may still start at the first held character, so the cut is there and
        nothing can be emitted, whatever the other values are."""
        value = self._prefix_of
        if value is None or ordered is not self._prefix_snapshot:
            return False  # no prefix state, or the known values changed
        if self._parts_len + len(text) >= len(value) or not value.startswith(text, self._parts_len):
            return False
        self._parts.append(text)
        self._parts_len += len(text)
        return True

    def _held(self) -> str:
        if self._parts:
            self._pending = "".join(self._parts)
            self._parts = []
        self._prefix_of = None
        self._prefix_snapshot = None
        return self._pending

    def feed(self, text: str, *, final: bool = False) -> str:
        # The known values, read as one snapshot: which of them the end of
        # the text may be the start of decides how much to hold back.
        ordered, _ = self._redactor.snapshot()
        if not final and self._extend(text, ordered):
            return ""
        buf = self._held() + text
        if not ordered:
            self._pending = ""
            return buf
        out = self._feed(buf, ordered, final)
        self._note_prefix(ordered)
        return out

    def _note_prefix(self, ordered: tuple[str, ...]) -> None:
        """Enter the prefix state when what is held back is a proper prefix
        of a known value (checked once here, linear in what is held)."""
        held = self._pending
        if len(held) < _PREFIX_STATE_MIN:
            return
        for value in ordered:
            if len(value) <= len(held):
                break  # longest first: no later value is long enough
            if value.startswith(held):
                self._prefix_of = value
                self._prefix_snapshot = ordered
                self._parts = [held]
                self._parts_len = len(held)
                return

    def _feed(self, buf: str, ordered: tuple[str, ...], final: bool) -> str:
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
        return self._parts_len if self._parts else len(self._pending)
