"""Bounded capture of a command's output streams.

Each of the two pipes is read continuously by a thread (:class:`Drain`)
into a :class:`Capture`, which keeps a bounded head (bytes), a bounded tail
(characters) or both, and counts the rest: a command that prints gigabytes
neither fills the runtime's memory nor blocks on a full pipe (which would
turn a truncated answer into a timeout).
"""

from __future__ import annotations

import codecs
import os
import re
import threading
from collections.abc import Callable

from charter.runtime.redact import FAILED_MARKER

__all__ = ["Capture", "Drain", "OutputSink"]

_CHUNK = 65536
_SPACE = re.compile(r"\s")


class Capture:
    """A bounded record of one output stream.

    Keeps at most ``head_bytes`` bytes of the stream's start and at most
    ``tail_chars`` characters of its end (after the head, so the two never
    overlap), and counts every byte and character. Nothing else is held: the
    stream is decoded incrementally, a chunk at a time, and text that falls
    out of the tail window is dropped at once. At least one limit is
    required, since a capture without one would hold everything.
    """

    def __init__(self, *, head_bytes: int | None = None, tail_chars: int | None = None) -> None:
        if head_bytes is None and tail_chars is None:
            raise ValueError("a capture needs a head or a tail limit")
        if (head_bytes is not None and head_bytes < 0) or (
            tail_chars is not None and tail_chars < 0
        ):
            raise ValueError("capture limits cannot be negative")
        self.head_bytes = head_bytes
        self.tail_chars = tail_chars
        self.head = bytearray()
        self.tail = ""
        self.total_bytes = 0
        self.total_chars = 0
        self.after_head_chars = 0  # characters that came after the head
        # Whether the tail starts a word (nothing dropped, or whitespace was
        # the last character dropped before it).
        self.tail_at_boundary = True
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.total_bytes += len(chunk)
            rest = chunk
            if self.head_bytes is not None:
                room = self.head_bytes - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    # Decoded only to count: the head is kept as bytes.
                    self.total_chars += len(self._decoder.decode(chunk[:room]))
                    rest = chunk[room:]
            if rest:
                self._after_head(self._decoder.decode(rest))

    def finish(self) -> None:
        """The stream ended: count what the decoder still held back."""
        with self._lock:
            self._after_head(self._decoder.decode(b"", final=True))

    def _after_head(self, text: str) -> None:
        self.total_chars += len(text)
        self.after_head_chars += len(text)
        cap = self.tail_chars
        if cap is None or not text:
            return
        joined = self.tail + text
        if len(joined) > cap:
            cut = len(joined) - cap
            self.tail_at_boundary = joined[cut - 1].isspace()
            joined = joined[cut:] if cap else ""
        self.tail = joined

    @property
    def truncated(self) -> bool:
        """Whether any of the stream is missing from what is kept."""
        with self._lock:
            if self.tail_chars is None:
                return self.head_bytes is not None and self.total_bytes > self.head_bytes
            return self.after_head_chars > len(self.tail)

    def render(
        self, name: str, redact: Callable[[str], str] | None = None, error: str | None = None
    ) -> str:
        """The kept text for a reader, with a line saying what was dropped.

        Head and tail are redacted separately, because the cut between them
        could split a secret. Where the tail was cut inside a word, that
        partial first word is dropped as well (up to the first whitespace):
        a secret split by the cut would leave its end there, which exact-value
        redaction cannot recognise. (A tail that is all one word is dropped
        whole; the truncation line still gives the totals.)
        """
        with self._lock:
            head = self.head.decode("utf-8", errors="replace")
            tail = self.tail
            at_boundary = self.tail_at_boundary
            omitted = self.after_head_chars - len(self.tail)
            total_b, total_c = self.total_bytes, self.total_chars
        parts: list[str] = []
        if self.tail_chars is None:
            # Head only: everything after the head is counted, not kept.
            text = _redacted(head, redact)
            if text == FAILED_MARKER:
                return FAILED_MARKER
            if self.head_bytes is not None and total_b > self.head_bytes:
                if text and not text.endswith("\n"):
                    text += "\n"
                text += (
                    f"[truncated] {name}: kept the first {self.head_bytes} bytes; "
                    f"the command wrote {total_b} bytes"
                )
            parts.append(text)
        else:
            if omitted > 0 and not at_boundary:
                space = _SPACE.search(tail)
                tail = "" if space is None else tail[space.end() :]
            shown_tail = _redacted(tail, redact)
            if self.head_bytes is not None and head:
                shown_head = _redacted(head, redact)
                if FAILED_MARKER in (shown_head, shown_tail):
                    return FAILED_MARKER
                parts.append(shown_head)
                if omitted > 0:
                    if not shown_head.endswith("\n"):
                        parts.append("\n")
                    parts.append(
                        f"[truncated] {name}: the command wrote {total_c} characters "
                        f"({total_b} bytes); kept the first {self.head_bytes} bytes and "
                        f"the last {len(tail)} characters\n"
                    )
            else:
                if shown_tail == FAILED_MARKER:
                    return FAILED_MARKER
                if omitted > 0:
                    parts.append(
                        f"[truncated] {name}: the command wrote {total_c} characters "
                        f"({total_b} bytes); kept the last {len(tail)} characters\n"
                    )
            parts.append(shown_tail)
        text = "".join(parts)
        if error:
            text += f"\n[{name} read error: {error}]"
        return text


def _redacted(text: str, redact: Callable[[str], str] | None) -> str:
    if redact is None or not text:
        return text
    try:
        return redact(text)
    except Exception:  # noqa: BLE001 - unredacted text must never come back
        return FAILED_MARKER


OutputSink = Callable[[str, bytes], None]
"""Called with the stream's name (``stdout``/``stderr``) and each chunk read."""


class Drain:
    """Read one pipe to its end into a :class:`Capture` (and ``sink``, if any)."""

    def __init__(
        self,
        stream: object,
        capture: Capture,
        *,
        name: str = "",
        sink: OutputSink | None = None,
        failed: threading.Event | None = None,
    ) -> None:
        self._fd = stream.fileno()  # type: ignore[attr-defined]
        self._stream = stream
        self.capture = capture
        self.name = name
        self.error: str | None = None
        # The sink's first failure; it is not called again after one.
        self.sink_error: str | None = None
        self._sink = sink
        self._failed = failed  # set on a read or sink failure, for run_command
        self.thread = threading.Thread(
            target=self._run, name=f"proc-drain-{name or 'pipe'}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, _CHUNK)
                if not chunk:
                    break
                self.capture.feed(chunk)
                if self._sink is not None and self.sink_error is None:
                    try:
                        self._sink(self.name, chunk)
                    except Exception as exc:  # noqa: BLE001 - reported in the result
                        # Keep reading: the child must not block on a full pipe
                        # while its tree is being stopped.
                        self.sink_error = f"{type(exc).__name__}: {exc}"
                        if self._failed is not None:
                            self._failed.set()
        except OSError as exc:
            self.error = str(exc)
            if self._failed is not None:
                self._failed.set()
        finally:
            self.capture.finish()
            try:
                self._stream.close()  # type: ignore[attr-defined]
            except OSError:
                pass
